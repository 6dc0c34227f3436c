"""The pass^k text says which column is model-free, which way the model leans, and names its table's columns.

Audit B (s71), finding 2: a crossed fit's section said only "The flag does not say which is
right" while its pass^k lay below the unbiased estimate at large k for most agents. Audit U (s71),
findings 2 and 5: the even-clusters note was explained as "few clusters but not few tasks carry the
mean" (its rule is ``n_eff >= 0.75 G``: many clusters, evenly), and the text named a `note` column
the table headed `flag`. Expected values are by hand (binomial tails with math.comb, n_eff with
fractions, tau-bench's published pass^4).
"""

from __future__ import annotations

import re
from fractions import Fraction
from math import comb

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from report_section import section_alone

from hierbench.freq._rates._logit_t import EVEN_CLUSTERS_FLAG
from hierbench.report._context import _Context
from hierbench.report._passk import MODEL_FREE
from hierbench.report._passk import _all_pass_text
from hierbench.report._passk import _crossed_all_pass_text
from hierbench.report._passk import _disagree_text


def _table(unbiased: list[float], bayes: list[float]) -> pd.DataFrame:
    """Agents a0.. at k = 1 (both 0.5: no side) and k = 4 (the values given), as the pass^k table holds them."""
    n = len(unbiased)
    index = pd.MultiIndex.from_tuples([(f"a{i}", k) for i in range(n) for k in (1, 4)], names=["agent", "k"])
    u = [v for x in unbiased for v in (0.5, x)]
    b = [v for x in bayes for v in (0.5, x)]
    return pd.DataFrame({"unbiased": u, "Bayes (same tasks)": b, "disagree": [False] * (2 * n)}, index=index)


def _two_sided_sign_p(count: int, n: int) -> float:
    """By hand: twice the upper binomial(n, 1/2) tail at ``count`` (count above n / 2), capped at 1."""
    return min(1.0, 2 * sum(comb(n, j) for j in range(count, n + 1)) / 2**n)


def test_the_side_most_agents_share_at_the_largest_k_is_counted_and_called_the_models():
    # 8 of 9 agents below at k = 4, one above, one with an unbiased 0 left out (never judged for side)
    unb = [0.30, 0.25, 0.20, 0.40, 0.35, 0.10, 0.22, 0.18, 0.27, 0.0]
    bay = [0.27, 0.22, 0.18, 0.36, 0.37, 0.08, 0.20, 0.15, 0.25, 0.01]
    assert _two_sided_sign_p(8, 9) == pytest.approx(20 / 512) and 20 / 512 < 0.05 and 8 >= 0.75 * 9
    text = _disagree_text(_table(unb, bay), "crossed")
    assert "At k = 4, the largest shown, the posterior mean lies below the unbiased estimate for 8 of 9 agents" in text
    assert "8 of 9 agents (the 1 other left out: an unbiased 0 or 1, which the model's pass^k never reaches" in text
    assert f"it is the model's, and there {MODEL_FREE}." in text
    # METR binarised at k = 8 (audit B): 6 of 7 below; 2 x P(X >= 6) = 16 / 128 = 0.125: counted, no claim
    assert _two_sided_sign_p(6, 7) == pytest.approx(0.125)
    text = _disagree_text(_table(unb[:7], bay[:7]), "crossed")
    assert "lies below the unbiased estimate for 6 of 7 agents." in text and "it is the model's" not in text


def test_every_model_names_the_model_free_column_and_what_its_own_number_rests_on():
    table = _table([0.20], [0.172])  # tau-bench airline at k = 4 (audit B): one agent, its values named
    crossed = _disagree_text(table, "crossed")
    assert "The flag does not say which is right, but the two rest on different things: " + MODEL_FREE in crossed
    assert "the crossed model's number rests on its population of task rates (normal on the logit scale)" in crossed
    assert "At k = 4, the largest shown, the posterior mean against the unbiased estimate: a0: 0.172 against 0.200." in crossed
    assert "its population of task rates (a beta)" in _disagree_text(table, "beta_binomial")
    # audit U, finding 5: the parenthetical says how such a row is judged, not what the counted rows are
    assert "(a row with an unbiased 0 or 1, which no posterior interval holds, is judged by the intervals alone)" in crossed


def test_tau_bench_crossed_text_says_the_model_leans_low_where_many_cells_pass_every_run(shared_data):
    """tau-bench airline: 4 runs per task and a published pass^4 of 0.200 (README line 18); with n = k = 4
    each task's C(c, 4) / C(4, 4) is 1 exactly when all 4 runs passed, so 20% of the cells passed every run.
    """
    from hierbench.data import load_tau_bench_airline

    data = load_tau_bench_airline(shared_data)

    def ctx(model):
        fit = xr.DataTree()
        fit.attrs = {"hierbench_model": model}
        return _Context(fit=fit, data=data, battles=None, prob=0.95)

    text = _crossed_all_pass_text(ctx("crossed"))
    assert text.startswith(" Here 20% of the agent x task cells with two or more runs passed every run.")
    assert "below the unbiased estimate" in text and "-0.014 +- 0.001 at k = 4" in text
    assert _crossed_all_pass_text(ctx("beta_binomial")) == ""  # the beta's own text says it
    assert _all_pass_text(ctx("beta_binomial")).endswith(f"where the two part that way, {MODEL_FREE}.")


#: audit U (s71) finding 2's clusters: 8 clusters of 5 tasks; in cluster g the first a_g tasks pass every run
_PATTERNS = [
    [1, 2, 2, 2, 3, 3, 2, 2],
    [1, 1, 4, 4, 1, 1, 4, 4],
    [1, 1, 1, 4, 4, 4, 2, 3],
    [1, 1, 1, 1, 4, 4, 4, 4],
    [2, 2, 2, 2, 2, 2, 2, 3],
    [1, 1, 1, 1, 1, 4, 4, 4],
]


def _even_by_hand(a: list[int]) -> bool:
    """Whether ``deff < 1/2``: the CR2 variance of the mean over the independent-task one (audit T, finding 1).

    8 clusters of 5 tasks, each task 0 or 1: CR2 ``sum_g (a_g - 5 m)^2 / (1 - 5 / N) / N^2``,
    ``s^2 = N m (1 - m) / (N - 1)``.
    """
    n = 5 * len(a)
    m = Fraction(sum(a), n)
    cr2 = sum((x - 5 * m) ** 2 for x in a) / (1 - Fraction(5, n)) / n**2
    return cr2 / (n * m * (1 - m) / (n - 1) / n) < Fraction(1, 2)


@pytest.fixture(scope="module")
def clustered_section() -> dict:
    """The pass^k section of the patterns' log alone (4 runs per cell, tasks all-pass or all-fail)."""
    score = np.array([[[1.0] * 4 if t < x else [0.0] * 4 for x in a for t in range(5)] for a in _PATTERNS])
    data = xr.Dataset(
        {"score": (("agent", "task", "run"), score)},
        coords={"agent": [f"p{i}" for i in range(len(_PATTERNS))], "task": [f"t{i:02d}" for i in range(40)],
                "run": np.arange(4), "cluster": ("task", np.repeat([f"g{g}" for g in range(8)], 5))},
    )  # fmt: skip
    return _passk_block(data)


def _passk_block(data: xr.Dataset) -> dict:
    """The pass^k section of ``data`` alone (no fit), as the report builds it."""
    return section_alone("pass-k", data)


def test_the_even_clusters_note_is_the_estimators_one_definition_with_its_rule_and_coverage(clustered_section):
    text, table = clustered_section["text"], clustered_section["table"]
    want = [_even_by_hand(a) for a in _PATTERNS]
    assert want == [True, False, False, False, True, False]  # the n_eff rule flagged pattern 3 too
    legend = text.split("`note` marks a row's interval notes by letter: ")[1]
    said = re.search(r"(\w) \(the unbiased estimator's interval\): " + re.escape(EVEN_CLUSTERS_FLAG), legend)
    assert said, legend
    marked = table["note"].str.split(",").apply(lambda x: said.group(1) in x)
    for (agent, _k), m in marked.items():  # every k: each task's per-k value is 0 or 1 alike
        assert m == want[int(agent[1:])], agent
    # the rule and the calibration's coverage, in the flag's own words, with their source
    # (benchmarks/bench_even_clusters_flag.py: 0.825 +- 0.006 in the rows this rule flags)
    assert "cluster-robust variance below 0.5 times the independent-task variance" in EVEN_CLUSTERS_FLAG
    assert "95% intervals covered about 0.82" in EVEN_CLUSTERS_FLAG
    assert "benchmarks/bench_even_clusters_flag.py" in EVEN_CLUSTERS_FLAG
    assert "; " not in EVEN_CLUSTERS_FLAG  # the table joins a row's flags with "; "
    assert "few clusters but not few tasks" not in text  # the opposite explanation is gone
    assert "`note` quotes the estimator's own flag where that interval is at risk" in text


def test_the_column_the_text_calls_note_is_headed_note_when_no_row_has_one():
    """One agent, 12 tasks of 2 runs, half passing both and half one: per-task pass^1 0.5 or 1 (mean 0.75) and
    pass^2 0 or 1 (mean 0.5), no task count below 10, six tasks on each side: a t interval in both cells, no flag.
    """
    score = np.array([[[1.0, float(t % 2)] for t in range(12)]])
    data = xr.Dataset({"score": (("agent", "task", "run"), score)},
                      coords={"agent": ["x"], "task": [f"t{i}" for i in range(12)], "run": np.arange(2)})  # fmt: skip
    block = _passk_block(data)
    assert "note" in block["table"] and "flag" not in block["table"]
    assert (block["table"]["note"] == "").all() and "`note` repeats that per-cell note" in block["text"]
