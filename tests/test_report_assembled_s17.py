"""Audit A (s17) of the assembled report: what its prose and flags say of the fit and the log they are built from.

1. An agent the data summary flags (the loader's ``attrs["flagged_agents"]``, an annotation on at least
   half its runs, a person-fit misfit) is marked in the abilities, ranks, pairs and side-by-side tables
   and in the figures' captions, as a separated agent is.
2. Max-T separating a pair that Holm does not is put down, pair by pair, to its own reason: a Monte Carlo
   per-pair p at (or near) its floor 1 / (B + 1), which more patterns would lower, or an exact p over K
   units, at least 2 / 2^K, which no more patterns lower.
3. The abilities figure names each series' own target beside a clustered crossed fit.
4. The pairs section says what the fit's record holds of the agent x task term.
5. pass^k quotes tau-bench's simulation as that design's, not this log's, where the designs differ.

One small crossed fit (2 chains x 100 draws, a few seconds) is shared by the module.
"""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench import bayes
from hierbench.report import build
from hierbench.report._context import _Context
from hierbench.report._flags import flagged_agents
from hierbench.report._pairs import bayes_pair_note
from hierbench.report._pairs import marks_holm_note
from hierbench.report._passk import _crossed_all_pass_text
from hierbench.testing import simulate_eval

FLAGGED = "agent_02"
MARK = "flagged by the data summary (the data's own source flags its 16 records)"


@pytest.fixture(scope="module")
def log():
    """4 agents x 16 tasks in 4 clusters, one run per cell; the loader's flag on one agent (set here)."""
    ds, _ = simulate_eval(n_agents=4, n_tasks=16, n_runs=1, n_clusters=4, sd_cluster=0.5, rng=3)
    ds.attrs["flagged_agents"] = json.dumps({FLAGGED: 16})
    return ds


@pytest.fixture(scope="module")
def fitted(log):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = bayes.build_crossed(log, clusters=True)
        return bayes.fit(model, draws=100, tune=100, chains=2, rng=0, progress=False)


@pytest.fixture(scope="module")
def report(log, fitted, tmp_path_factory):
    path = tmp_path_factory.mktemp("s17") / "r.md"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build(fitted, log, path=path, n_resamples=99, progress=False, rng=0,
                     sections=["abilities", "ranks", "pairwise", "side-by-side"]).read_text()  # fmt: skip


def _section(md: str, heading: str) -> str:
    return md.split(f"\n## {heading}", 1)[1].split("\n## ", 1)[0]


def _rows(body: str) -> list[str]:
    return [line for line in body.splitlines() if line.startswith("| ") and "agent_0" in line]


@pytest.mark.slow  # the module's one small fit
def test_flagged_agent_marked_in_every_table_that_reads_it(report):
    """By construction only ``agent_02`` carries the loader's flag: its rows, and only its rows, are marked."""
    for heading in ("Agent abilities", "Rank probabilities", "Does A beat B?", "Bayesian and frequentist side by side"):
        rows = _rows(_section(report, heading))
        named = [r for r in rows if FLAGGED in r.split("|")[1]]
        assert named and all(MARK in r for r in named), heading
        assert not any(MARK in r for r in rows if FLAGGED not in r.split("|")[1]), heading
    # every pair with it, 3 of the 6, in the full table (the matrix's folded copy), and no other pair
    pairs = [r for r in _rows(_section(report, "Does A beat B?")) if " - " in r.split("|")[1]]
    assert sum(MARK.replace("flagged by", f"{FLAGGED}: flagged by").split(":", 2)[0] in r for r in pairs) == 3
    assert sum("flagged by the data summary" in r for r in pairs) == 3
    for caption in ("*Agent abilities:", "*Rank probabilities", "*Pairwise posterior probabilities"):
        cap = next(line for line in report.splitlines() if line.startswith(caption))
        assert f"Flagged by the data summary: {FLAGGED}" in cap, caption


def test_flagged_agents_one_set_annotation_and_loader(log):
    """An annotation on half an agent's runs or more names it; on fewer, not (by hand: 8 of 16 and 7 of 16)."""
    ds = log.copy()
    ann = xr.zeros_like(ds["score"], dtype=bool)
    ann.loc[{"agent": "agent_00", "task": ds["task"].values[:8]}] = True  # 8 of its 16 runs: marked
    ann.loc[{"agent": "agent_01", "task": ds["task"].values[:7]}] = True  # 7 of 16: not
    ann.loc[{"agent": FLAGGED}] = True  # the loader flags it already: said once, by the loader's words
    ds["limit"] = ann
    ds.attrs["annotations"] = json.dumps(["limit"])
    ctx = _Context(fit=None, data=ds, battles=None, prob=0.95, rng=0, freq=None)
    marked = flagged_agents(ctx)
    assert marked == {FLAGGED: ["the data's own source flags its 16 records"],
                      "agent_00": ["the annotation `limit` marks 8 of its 16 runs"]}  # fmt: skip


def _holm_table(n: int) -> pd.DataFrame:
    """A pair table as ``pair_frame`` gives it: four pairs max-T separates at 0.001 and Holm does not, one the other way.

    The per-pair p of ``mc floor`` is 1 / (n + 1), the floor of n random patterns; ``mc near`` 3 / (n + 1);
    ``exact`` is exact over K = 12 units, 2 / 2^12; ``plain`` is below every floor (so no reason is its).
    """
    idx = pd.Index(["mc floor", "mc near", "exact", "holm only"], name="pair")
    floor = 1 / (n + 1)
    t = pd.DataFrame({"p max-T": [2e-4, 3e-4, 4e-4, 0.03], "p (permutation)": [floor, 3 * floor, 2 / 2**12, 1e-6],
                      "p Holm": [0.0066, 0.005, 0.003, 1e-5]}, index=idx)  # fmt: skip
    t.attrs["p floor"] = pd.Series([floor, floor, 2 / 2**12, floor], index=idx)
    t.attrs["p exact"] = pd.Series([0.0, 0.0, 1.0, 0.0], index=idx)
    t.attrs["per-pair draws"] = ("n_permutations", "sign patterns", n, "clusters")
    return t


def test_holm_reason_pair_by_pair():
    text = marks_holm_note(_holm_table(19_999), 0.05)
    tail = text.split("max-T separates at 0.001 and Holm does not", 1)[1]
    assert "mc floor: the per-pair p is at the Monte Carlo floor 5e-05 of its 19,999 random sign patterns" in tail
    assert "mc near (p 0.00015): a Monte Carlo per-pair p from 19,999 random sign patterns" in tail
    assert "exact (K = 12, 2 / 2^K = 0.00049): too few clusters with a difference" in tail
    assert "holm only" not in tail  # Holm separates it, max-T does not: the other half of the note
    assert "cannot be small (a sign-flip p over K units" not in tail


def test_pair_frame_keeps_each_pair_floor():
    """Two agents over 6 tasks, exact enumeration: the floor is 2^(1 - K), K the tasks where they differ (4)."""
    from hierbench import freq
    from hierbench.report import pair_frame

    score = np.array([[1, 1, 1, 1, 0, 1], [0, 0, 0, 1, 1, 1]], float)[:, :, None]
    ds = xr.Dataset({"score": (("agent", "task", "run"), score)},
                    coords={"agent": ["a", "b"], "task": [f"t{i}" for i in range(6)], "run": [0]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = pair_frame(freq.compare_agents(ds, test="permutation", rng=0))
    assert table.attrs["p exact"].iloc[0] == 1.0
    assert table.attrs["p floor"].iloc[0] == pytest.approx(2.0 ** (1 - 4))


@pytest.mark.slow  # the module's one small fit
def test_abilities_figure_names_each_series_target(report):
    cap = next(line for line in _section(report, "Agent abilities").splitlines() if "Agent abilities:" in line)
    assert "Agent abilities: success probability (0-1); 95% intervals." in cap
    assert "Bayes crossed (95% ETI): a new task from a new task cluster" in cap
    assert "cluster bootstrap (bca, 95%): the mean over these tasks, each cluster weighing by its tasks" in cap


@pytest.mark.slow  # the module's one small fit
def test_pairs_note_reads_the_agent_task_term_from_the_fit(fitted, report):
    assert json.loads(fitted.attrs["hierbench_spec"])["options"]["agent_task"] == "none"  # one run per cell
    body = _section(report, "Does A beat B?")
    assert "task by task within a cluster" not in body
    assert "with no agent x task term (`agent_task='none'` in the fit's record)" in body


def test_pairs_note_by_the_recorded_agent_task_term():
    def note(agent_task, agent_cluster=True):
        fit = xr.DataTree()
        fit.attrs["hierbench_model"] = "crossed"
        fit.attrs["hierbench_spec"] = json.dumps({"model": "crossed", "options": {
            "clusters": True, "agent_cluster": agent_cluster, "agent_task": agent_task}})  # fmt: skip
        return bayes_pair_note(fit, 3)

    assert "and task by task within a cluster" in note("marginal")
    assert "task by task" not in note("none") and "differ only in difficulty" in note("none")
    assert "neither an agent x task nor an agent x cluster term" in note("none", agent_cluster=False)
    assert "lets an agent's advantage vary task by task but" in note("latent", agent_cluster=False)


def _passk_ctx(data: xr.Dataset) -> _Context:
    fit = xr.DataTree()
    fit.attrs = {"hierbench_model": "crossed"}
    return _Context(fit=fit, data=data, battles=None, prob=0.95)


def test_passk_simulation_said_as_another_design():
    """Runs per cell from 2 to 6 (counted by hand below): the tau-bench figures (4 equal runs) do not apply."""
    score = np.full((2, 10, 6), np.nan)
    score[:, :5, :6] = 1.0  # 10 cells, 6 runs each, every run passed
    score[:, 5:, :2] = [1.0, 0.0]  # 10 cells, 2 runs
    ds = xr.Dataset({"score": (("agent", "task", "run"), score)},
                    coords={"agent": ["a", "b"], "task": [f"t{i}" for i in range(10)], "run": np.arange(6)})  # fmt: skip
    text = _crossed_all_pass_text(_passk_ctx(ds))
    assert text.startswith(" Here 50% of the agent x task cells")
    assert "0.95 to 0.98" not in text and "-0.014 +- 0.001" not in text
    assert "the bias at k = 4 was -0.014 (6%); this log's k up to 6 on 2 to 6 runs per cell is not covered" in text
    # 4 equal runs in every cell: the simulation's own design, its numbers in full
    four = ds.isel(run=slice(0, 4)).copy()
    four["score"][:] = np.where(np.arange(10)[None, :, None] < 5, 1.0, [1.0, 0.0, 1.0, 0.0])
    assert "-0.014 +- 0.001 at k = 4" in _crossed_all_pass_text(_passk_ctx(four))
