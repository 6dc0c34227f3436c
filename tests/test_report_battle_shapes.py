"""A report of battles says who was compared: agents in no battle, groups that never meet, pairs that never met.

Audit P (2026-12-07): with an agent registered but never judged (``read_battles(agents=[...])``)
the data summary read "3 of the 3 pairs of agents met ... No agent is in fewer than 10 battles"
while the abilities ranked that agent 2nd from its prior; a comparison graph in two groups was
reported as one ranking; the P(a > b) of pairs that never met was shown like any other; the
checklist said the frequentist results were "given as None in `freq`" when nobody passed None;
the fitted tie parameter and first-position advantage were never shown.

The battle table is tiny and counted by hand: agents A..F; A-B 10 battles (A won 6, B 2, 2
ties), B-C 8 (B won 5, C 3), D-E 5 (D won 4, 1 tie); F in none. So 23 battles, 3 ties, 3 of
the 15 pairs met, groups [A, B, C] and [D, E], F alone; 12 pairs never met, of which A-C alone
lies inside a group. The fit is made by hand from those counts (a seeded posterior, no sampler),
as a Bradley-Terry fit records them; one slow test checks a real fit records the same groups.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.report._context import _Context
from hierbench.report._report import Report

AGENTS = ["A", "B", "C", "D", "E", "F"]
ROWS = ([("A", "B", "left")] * 6 + [("A", "B", "right")] * 2 + [("B", "A", "tie")] * 2
        + [("B", "C", "left")] * 5 + [("C", "B", "left")] * 3 + [("D", "E", "left")] * 4 + [("E", "D", "tie")])  # fmt: skip


def _battles(rows=ROWS, agents=AGENTS):
    from hierbench.data import read_battles

    return read_battles(pd.DataFrame(rows, columns=["left", "right", "winner"]), agents=agents)


def _hand_fit(battles, *, home: bool = True, structure: dict | None = None) -> xr.DataTree:
    """A Bradley-Terry fit's record of ``battles``: its pair counts as constant data, a seeded posterior."""
    from hierbench.data import to_pair_counts

    c = to_pair_counts(battles)
    agents = [str(a) for a in c["agent"].values]
    at = {a: i for i, a in enumerate(agents)}
    outcome = np.stack([c[k].values for k in ("n_win_a", "n_tie", "n_win_b")], axis=1)
    const = xr.Dataset({"agent_a_idx": ("pair", [at[str(a)] for a in c["agent_a"].values]),
                        "agent_b_idx": ("pair", [at[str(b)] for b in c["agent_b"].values]),
                        "n_comparisons": ("pair", outcome.sum(1)), "outcome_obs": (("pair", "result"), outcome)},
                       coords={"result": ["win_a", "tie", "win_b"]})  # fmt: skip
    g = np.random.default_rng(3)
    post = {"ability": (("chain", "draw", "agent"), g.normal(size=(2, 50, len(agents)))),
            "nu": (("chain", "draw"), g.lognormal(0.0, 0.5, size=(2, 50)))}  # fmt: skip
    if home:
        post["home"] = (("chain", "draw"), g.normal(0.3, 0.1, size=(2, 50)))
    fit = xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords={"agent": agents}), "constant_data": const})
    fit.attrs = {"hierbench_model": "bradley_terry",
                 "hierbench_spec": json.dumps({"model": "bradley_terry", "options": {"ties": "davidson"}}),
                 "hierbench_structure": json.dumps(structure or {"design": {"n_components": 3}})}  # fmt: skip
    return fit


def _ctx(fit, battles) -> _Context:
    return _Context(fit=fit, data=None, battles=battles, prob=0.95, rng=0, n_resamples=99, truth=None, freq="auto",
                    subset=[], say=lambda *_: None)  # fmt: skip


class _Captions(Report):
    """A report that keeps each figure's name and caption, and the figure itself unrendered (no PNG is read here)."""

    def figure(self, name: str, plot_collection_or_figure: object, caption: str = "") -> None:
        self.kept[name] = plot_collection_or_figure
        self.blocks[-1]["figures"].append((name, caption))


def _sections(ctx: _Context, *sids: str, keep: dict | None = None) -> dict[str, dict]:
    """The sections ``sids`` of a report of ``ctx``, by id; their figures go to ``keep`` (else they are closed)."""
    import matplotlib.pyplot as plt

    from hierbench.report._build import _run_section

    rep = _Captions("t")
    rep.kept = {} if keep is None else keep
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sid in sids:
            _run_section(ctx, rep, sid)
    if keep is None:
        for fig in rep.kept.values():
            plt.close(fig)
    return {b["id"]: b for b in rep.blocks}


@pytest.fixture(scope="module")
def shapes():
    import matplotlib.pyplot as plt

    battles = _battles()
    fit = _hand_fit(battles)
    ctx = _ctx(fit, battles)
    figs: dict = {}
    secs = _sections(ctx, "data-summary", "abilities", "ranks", "pairwise", "ppc", "checklist", keep=figs)
    yield battles, fit, figs, secs
    for fig in figs.values():
        plt.close(fig)


def test_data_summary_counts_every_agent_and_names_who_never_met(shapes):
    text, table = shapes[3]["data-summary"]["text"], shapes[3]["data-summary"]["table"]
    assert "23 battles between 6 agents; 3 of the 15 pairs of agents met; 3 ties (13.0%)" in text
    assert "battles per agent min 0, median 6.5, max 18" in text  # 18, 10, 8, 5, 5, 0
    assert table.loc["F"].tolist() == [0, 0, 0, 0, 0]
    assert table["battles"].to_dict() == {"B": 18, "A": 10, "C": 8, "D": 5, "E": 5, "F": 0}
    assert "F is in no battle: its ability, rank and pairwise probabilities are the prior's alone." in text
    assert "2 groups that never meet, not even through other agents ([A, B and C]; [D and E])" in text
    assert "agents in fewer than 10 battles: ['C', 'D', 'E']" in text
    assert "No agent is in fewer" not in text


def test_the_fits_constant_data_count_the_agent_in_no_battle_too():
    battles = _battles()
    sec = _sections(_ctx(_hand_fit(battles), None), "data-summary")["data-summary"]
    assert "23 battles between 6 agents; 3 of the 15 pairs of agents met" in sec["text"]
    assert "F is in no battle" in sec["text"]


def test_a_linked_table_says_so_and_no_pair_is_flagged():
    rows = [r for r in ROWS if "D" not in r[:2]] + [("C", "D", "left")]  # A-B-C-D in one chain
    sec = _sections(_ctx(None, _battles(rows, ["A", "B", "C", "D"])), "data-summary")["data-summary"]
    assert "19 battles between 4 agents; 3 of the 6 pairs of agents met" in sec["text"]
    assert "battles link every agent with every other, directly or through others" in sec["text"]
    assert "Flags" in sec["text"] and "in no battle" not in sec["text"]  # D (1 battle) is in fewer than 10


def test_ranks_and_pairs_say_which_comparisons_rest_on_the_prior(shapes):
    ranks, pairs = shapes[3]["ranks"], shapes[3]["pairwise"]
    assert ("12 of the 15 pairs never met: for 1 of them the order comes from the model's transitivity alone"
            in ranks["text"]) and "for 11 it is the prior's alone" in ranks["text"]  # fmt: skip
    flag = ranks["table"]["flag"]
    assert flag["F"] == "in no battle: its rank is the prior's alone"
    assert "no chain of battles links it with D, E and F" in flag["A"]
    assert "no chain of battles links it with 4 agents" in flag["D"]  # A, B, C and F
    assert "a P(a > b) across groups rests on the prior alone" in pairs["text"]
    caption = pairs["figures"][0][1]
    assert "12 of the 15 pairs never met (hatched cells, both triangles): for 1 of them P(a > b)" in caption
    assert "(no data given)" not in caption and "ties by name (so the upper" in caption


def test_the_heatmap_hatches_the_pairs_that_never_met_and_its_labels_do_not_overlap(shapes):
    from figure_overlap import overlaps
    from matplotlib.collections import PatchCollection

    fig = shapes[2]["prob_superiority"]
    hatched = [c for c in fig.axes[0].collections if isinstance(c, PatchCollection)]
    assert len(hatched) == 1 and len(hatched[0].get_paths()) == 2 * 12 and hatched[0].get_hatch() == "//"
    assert overlaps(fig) == []


def test_abilities_flag_the_agent_in_no_battle_and_show_home_and_nu(shapes):
    _, fit, _, secs = shapes
    text, table = secs["abilities"]["text"], secs["abilities"]["table"]
    assert table.loc["F", "flag"] == "in no battle: its ability is the prior's alone"
    assert "(no data given)" not in text and "Rows: agents by posterior mean ability" in text
    post = fit["posterior"]
    for name in ("home", "nu"):
        v = post[name].values.ravel()
        lo, hi = np.quantile(v, [0.025, 0.975])
        assert f"posterior mean {v.mean():.3f}, 95% equal-tailed interval [{lo:.3f}, {hi:.3f}]" in text
    assert "hold no tie" not in text


def test_nu_fitted_to_battles_without_a_tie_is_said_to_be_the_priors():
    rows = [r for r in ROWS if r[2] != "tie"]
    battles = _battles(rows, ["A", "B", "C", "D", "E"])
    text = _sections(_ctx(_hand_fit(battles, home=False), battles), "abilities")["abilities"]["text"]
    assert "The battles hold no tie" in text and "First-position advantage" not in text


def test_checklist_and_ppc_say_what_is_true_of_battles(shapes):
    rows = shapes[3]["checklist"]["table"]["value"]
    assert rows["n (agents, battles)"] == ("6 agents (1 in no battle, the others in 2 groups that never meet), "
                                           "23 battles, 3 ties (13.0%)")  # fmt: skip
    assert "given as None" not in rows["frequentist results"]
    assert "do not apply to battles" in rows["frequentist results"]
    assert "`hierbench.freq.fit_bradley_terry_ml`" in rows["frequentist results"]
    text = shapes[3]["ppc"]["text"]
    assert "makes no check of the Bradley-Terry fit" not in text and "is no `cell`" not in text
    assert "The posterior predictive p-value is P(D(replicated) >= D(observed))" in text
    assert "ordered pairs of agents that met" in text and "No prompt-level check: the battle log has no prompt" in text


def test_a_fit_recording_other_components_than_its_battles_is_warned_of():
    battles = _battles()
    ctx = _ctx(_hand_fit(battles, structure={"design": {"n_components": 2}}), battles)
    _sections(ctx, "data-summary")
    assert any("the fit records 2 components" in w and "hold 3" in w for w in ctx.warnings)


@pytest.mark.slow  # a real Bradley-Terry fit (about 6 s)
def test_a_real_fit_records_the_groups_the_report_counts():
    import hierbench.bayes as hbb
    from hierbench._base import fit_record

    battles = _battles()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = hbb.fit(hbb.build_bradley_terry(battles, home_advantage=True), draws=200, tune=200, chains=2,
                      rng=0, progress=False)  # fmt: skip
    design = fit_record(fit, "hierbench_structure")["design"]
    assert (design["n_components"], design["min_comparisons_per_agent"]) == (3, 0)  # [A, B, C], [D, E], [F]
    ctx = _ctx(fit, battles)
    secs = _sections(ctx, "data-summary", "abilities")
    assert not ctx.warnings
    assert "First-position advantage `home`" in secs["abilities"]["text"]
    assert "Tie parameter `nu`" in secs["abilities"]["text"]
