"""What a G-study says beside its numbers: the one-run note, the scale, and a one-agent D-study's words.

With one run per agent x task cell the residual is the agent x task interaction plus the
run-to-run noise; expected values are the two-way ANOVA written out here (the residual is
the interaction mean square, ``sum (y - row - col + grand)^2 / ((A - 1)(T - 1))``). With one
agent and ``r`` runs per task, the absolute error variance of the mean of ``n`` tasks is
``s_task / n + s_res / (n r)`` with the one-way ANOVA components
``s_res = MS_within`` and ``s_task = (MS_between - MS_within) / r``.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.freq import variance_components


@pytest.fixture(scope="module")
def one_run():
    """0/1 scores, 5 agents x 12 tasks x 1 run."""
    y = (np.random.default_rng(7).random((5, 12, 1)) < 0.5).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return y[..., 0], variance_components(xr.DataArray(y, dims=("agent", "task", "run")))


def test_one_run_residual_is_the_interaction_mean_square_and_the_repr_says_so(one_run):
    y, vc = one_run
    a, t = y.shape
    inter = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + y.mean()
    ms_at = (inter**2).sum() / ((a - 1) * (t - 1))
    assert float(vc.estimate.sel(component="residual")) == pytest.approx(ms_at, rel=1e-10)
    words = "one run per cell: the residual holds the agent:task interaction and run-to-run noise"
    assert vc.note.startswith(words)
    lines = repr(vc).splitlines()
    assert any(line.startswith("  note: " + words) for line in lines)
    assert lines[0].endswith("variances on the probability scale")


def test_one_run_frame_carries_the_scale_and_the_residuals_note(one_run):
    _, vc = one_run
    df = vc.to_frame()
    assert (df["scale"] == "probability").all()
    assert df.loc["residual", "note"].startswith("one run per cell: the residual holds the agent:task")
    assert (df.drop(index="residual")["note"] == "").all()
    # a printed or concatenated frame keeps both (attrs would not)
    assert "probability" in pd.concat([df, df]).to_string()


def test_a_continuous_score_is_on_the_score_scale_and_nested_tasks_name_the_full_interaction():
    rng = np.random.default_rng(3)
    df = pd.DataFrame(
        [(a, f"c{c}t{t}", f"c{c}", 0) for a in range(4) for c in range(3) for t in range(3)],
        columns=["agent", "task", "cluster", "run"],
    ).assign(y=lambda d: rng.normal(size=len(d)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(df, design="run:(agent*(task:cluster))", var="y")
    assert vc.confounded == ("run",)
    assert "the residual holds the agent:task:cluster interaction" in vc.note
    assert (vc.to_frame()["scale"] == "score").all()


def test_one_agent_d_study_speaks_of_runs_per_task_not_clusters():
    rng = np.random.default_rng(11)
    n, r = 8, 3
    y = rng.normal(size=(n, 1)) + rng.normal(size=(n, r))
    msb = r * ((y.mean(1) - y.mean()) ** 2).sum() / (n - 1)
    msw = ((y - y.mean(1, keepdims=True)) ** 2).sum() / (n * (r - 1))
    s_task, s_res = (msb - msw) / r, msw
    assert s_task > 0  # this seed: no truncation at 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(xr.DataArray(y[None], dims=("agent", "task", "run")))
        d = vc.d_study(n_tasks=[20, 40], n_runs=[1, 4])
    for nt in (20, 40):
        for nr in (1, 4):
            got = float(d.sigma2_Delta.sel(n_tasks=nt, n_runs=nr))
            assert got == pytest.approx(s_task / nt + s_res / (nt * nr), rel=1e-10)
    assert "new clusters" not in d.attrs["universe"] and "n_clusters" not in d.attrs["universe"]
    assert "'run' per 'task'" in d.attrs["spread"] and "effective clusters" not in d.attrs["spread"]
    assert d.attrs["universe"].startswith("new 'task' drawn independently")


def test_tasks_in_clusters_keep_the_cluster_words():
    rng = np.random.default_rng(5)
    df = pd.DataFrame(
        [(a, f"c{c}t{t}", f"c{c}", k) for a in range(3) for c in range(4) for t in range(2) for k in range(2)],
        columns=["agent", "task", "cluster", "run"],
    ).assign(y=lambda d: rng.normal(size=len(d)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(df, design="run:(agent*(task:cluster))", var="y")
        d = vc.d_study({"task": [2, 4]})
    assert d.attrs["universe"].startswith("new clusters (universe='new_clusters')")
    assert "effective clusters = clusters x" in d.attrs["spread"]


def test_repr_prints_each_note_whole_even_one_holding_a_semicolon_in_brackets():
    from hierbench.freq._variance._result import note_parts

    note = "one run per cell: x; Wald intervals (slower; better coverage); 2 rows left out"
    assert note_parts(note) == ["one run per cell: x", "Wald intervals (slower; better coverage)", "2 rows left out"]
    assert note_parts("") == []
