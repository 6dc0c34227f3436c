"""Agents no common task links: the fit notes a disconnected design, the report flags their Bayes P(a > b).

Audit C, C8: Opus and Gemini on tasks 0-99 and o3 on tasks 100-199 gave "Bayes P(a > b) 0.762"
for Gemini - o3 with an empty flag column, and the fit's design notes said nothing; the
comparison rests on the two task sets being exchangeable draws, which the data cannot check.
Expected values are hand counts of the designs built here: which agent ran which task, so which
agents are linked by a task, directly or through another agent.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench._base import UnidentifiedWarning

MODEL_ONLY = "model only: no task in common, not even through other agents"


def _eval(ran: np.ndarray, agents: list[str], seed: int = 0) -> xr.Dataset:
    """An eval log of 2 runs per cell where ``ran`` (agent, task) is True, random 0/1 scores."""
    s = np.random.default_rng(seed).integers(0, 2, size=(*ran.shape, 2)).astype(float)
    s[~ran] = np.nan
    return xr.Dataset({"score": (("agent", "task", "run"), s)},
                      coords={"agent": agents, "task": [f"t{i:02d}" for i in range(ran.shape[1])]})  # fmt: skip


def _split(n: int = 10) -> np.ndarray:
    """Two groups: alpha and beta on tasks 0..n-1, gamma on tasks n..2n-1."""
    ran = np.zeros((3, 2 * n), dtype=bool)
    ran[:2, :n] = True
    ran[2, n:] = True
    return ran


def _chain() -> np.ndarray:
    """Linked through beta: alpha and beta share tasks 0-3, beta and gamma 4-7, alpha and gamma none."""
    ran = np.zeros((3, 8), dtype=bool)
    ran[0, :4] = ran[1, :] = ran[2, 4:] = True
    return ran


AGENTS = ["alpha", "beta", "gamma"]


def test_a_disconnected_design_is_noted_and_warned_with_its_groups():
    from hierbench import bayes

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        model = bayes.build_crossed(_eval(_split(), AGENTS))
    said = [str(w.message) for w in seen if issubclass(w.category, UnidentifiedWarning)]
    assert len(said) == 1
    # the groups by hand: alpha and beta ran the 10 tasks t00-t09, gamma the other 10
    assert "disconnected design: the agents fall into 2 groups" in said[0]
    assert "([alpha, beta]: 10 tasks; [gamma]: 10 tasks)" in said[0]
    assert "exchangeable" in said[0] and "Run some tasks with agents of each group" in said[0]
    assert "note: disconnected design: the agents fall into 2 groups" in bayes.describe(model)


def test_agents_linked_through_a_third_are_not_a_disconnected_design():
    from hierbench import bayes

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        model = bayes.build_crossed(_eval(_chain(), AGENTS))
    assert not [w for w in seen if issubclass(w.category, UnidentifiedWarning)]
    assert "disconnected" not in bayes.describe(model)


def test_pair_and_rank_flags_follow_the_hand_count():
    from hierbench.report._pair_rows import INDIRECT_FLAG
    from hierbench.report._pair_rows import pair_link_flags
    from hierbench.report._pair_rows import rank_link_flags

    pairs = (["alpha", "alpha", "beta"], ["beta", "gamma", "gamma"])
    split = pd.DataFrame(_split(), index=AGENTS)
    flags = pair_link_flags(split, *pairs)
    assert flags[0] == "" and flags[1].startswith(MODEL_ONLY) and flags[2].startswith(MODEL_ONLY)
    chain = pd.DataFrame(_chain(), index=AGENTS)
    assert pair_link_flags(chain, *pairs) == ["", INDIRECT_FLAG, ""]
    ranks = rank_link_flags(split, pd.Index(AGENTS))
    assert ranks["alpha"].startswith("partly model only: no task in common with gamma,")
    assert ranks["gamma"].startswith("partly model only: no task in common with 2 agents,")
    assert (rank_link_flags(chain, pd.Index(AGENTS)) == "").all()


@pytest.mark.slow  # a fit and a report of two sections
def test_report_flags_bayes_p_of_pairs_that_share_no_task(tmp_path):
    """The pair table's Bayes flag and the heatmap caption name the pairs across the two groups.

    The report is ``build``'s own, its sections cut to the two read here (``sections=``): the rank
    and pair sections are computed and written as in the whole report.
    """
    from hierbench import bayes
    from hierbench.report import build

    ds = _eval(_split(), AGENTS, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 100 draws; the disconnected design's own warning is tested above
        # no posterior predictive: the predictive check is not read here (the posterior is the same to the bit)
        fit = bayes.fit(bayes.build_crossed(ds), draws=100, tune=100, chains=2, rng=0, progress=False,
                        posterior_predictive=False)
        # the pair and rank tables and their captions are read: the bootstrap, person fit and G-study are left out
        md = build(fit, ds, path=tmp_path / "r.md", n_resamples=99, progress=False,
                   freq={"bootstrap": None, "person_fit": None, "variance": None}, sections=["ranks", "pairwise"]).read_text()
    rows = {}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if " - " in cells[0] and {a for a in AGENTS if a in cells[0]} and len(cells) > 5:
            rows[frozenset(a for a in AGENTS if a in cells[0])] = cells
    assert set(rows) == {frozenset(p) for p in (("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma"))}
    for pair, cells in rows.items():
        assert (cells[-1].startswith(MODEL_ONLY)) == ("gamma" in pair), cells[0]
    assert "The agents fall into 2 groups with no task in common" in md
    assert "([alpha, beta]; [gamma])" in md
    # the rank table: every agent's order against the other group is the model's
    assert md.count("partly model only: no task in common with") == 3
    assert "a rank order across groups is the model's alone" in md
