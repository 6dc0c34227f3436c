"""pass@k / pass^k with tasks short of k runs: small_n="clip" counts and says the cells it cut (audit K finding 3),
and the NaN-interval warning names runs, not tasks, as the remedy when no task has k runs (finding 6).

Expected values are by hand (which tasks have fewer than k runs, the smallest run count among them) and by
``math.comb`` for the clipped per-task values.
"""

import warnings
from math import comb

import numpy as np
import pytest
import xarray as xr

from hierbench import UndefinedWarning
from hierbench.freq import InsufficientRunsWarning
from hierbench.freq import pass_at_k
from hierbench.freq import pass_hat_k


def _counts(n, c, agents=None):
    dims = ("task",) if agents is None else ("agent", "task")
    coords = {} if agents is None else {"agent": agents}
    return xr.Dataset({"n_runs": (dims, np.asarray(n)), "n_success": (dims, np.asarray(c))}, coords=coords)


# three tasks run 2, 3 and 5 times: at k = 3 one task is short (n = 2), at k = 4 two (n = 2, 3)
N, C = [2, 3, 5], [1, 2, 3]


def test_clip_counts_each_cut_cell_and_the_smallest_k_it_used():
    with pytest.warns(
        InsufficientRunsWarning,
        match=r"pass_hat_k: small_n='clip' cut k to the task's n_runs in 3 \(agent, task, k\) cells "
        r"\(k=3: 1 \(down to k_eff=2\), k=4: 2 \(down to k_eff=2\)\).* the 2 of 3 rows .* are not pass\^k at "
        r"the k shown but a mix with pass\^k_eff, another estimand",
    ):
        res = pass_hat_k(_counts(N, C), [1, 3, 4], small_n="clip")
    assert res.n_clipped.values.tolist() == [0, 1, 2]
    assert res.k_eff_min.values.tolist() == [1, 2, 2]
    assert res.n_insufficient.values.tolist() == [0, 0, 0]  # nothing excluded: they are in the mean
    assert res.estimate.attrs["n_clipped_cells"] == 2
    # k = 3: the n = 2 task at k_eff 2, the others at 3 (math.comb)
    by_hand = np.mean([comb(1, 2) / comb(2, 2), comb(2, 3) / comb(3, 3), comb(3, 3) / comb(5, 3)])
    assert float(res.estimate.sel(k=3)) == pytest.approx(by_hand)
    df = res.to_frame()
    assert df["n_clipped"].tolist() == [0, 1, 2] and df["k_eff_min"].tolist() == [1, 2, 2]
    text = repr(res)
    rows = {ln.split(":")[0].strip(): ln for ln in text.splitlines()[1:4]}
    assert "k_eff" not in rows["1"]
    assert rows["3"].endswith("; 1 at k_eff = n_runs < k (min k_eff 2))")
    assert rows["4"].endswith("; 2 at k_eff = n_runs < k (min k_eff 2))")
    assert "small_n='clip': 2 of 3 cells hold tasks with fewer runs than k" in text
    assert "not pass^k at the k shown" in text


def test_one_run_per_task_never_prints_pass1_as_pass5_without_a_word():
    """SWE-bench's shape: every task run once, so every clipped row is pass@1 (k_eff 1)."""
    data = _counts([[1] * 4, [1] * 4], [[1, 0, 1, 1], [0, 0, 1, 0]], agents=["a", "b"])
    with pytest.warns(InsufficientRunsWarning, match=r"in 8 \(agent, task, k\) cells \(k=5: 8 \(down to k_eff=1\)\)"):
        res = pass_at_k(data, [1, 5], small_n="clip")
    assert res.estimate.sel(k=5).values.tolist() == [0.75, 0.25]  # the pass rates: pass@1
    assert res.n_clipped.sel(k=5).values.tolist() == [4, 4] and res.n_clipped.sel(k=1).values.tolist() == [0, 0]
    assert res.k_eff_min.sel(k=5).values.tolist() == [1, 1]
    lines = repr(res).splitlines()
    assert next(ln for ln in lines if ln.startswith("  a, 5:")).endswith("; all at k_eff = n_runs < k (min k_eff 1))")
    assert "k_eff" not in next(ln for ln in lines if ln.startswith("  a, 1:"))
    assert "not pass@k at the k shown but a mix with pass@k_eff" in lines[-1]


def test_a_scalar_k_keeps_the_counts_and_nothing_is_cut_when_every_task_has_k_runs():
    with pytest.warns(InsufficientRunsWarning, match=r"\(k=4: 2 \(down to k_eff=2\)\)"):
        res = pass_at_k(_counts(N, C), 4, small_n="clip")
    assert int(res.n_clipped) == 2 and int(res.k_eff_min) == 2 and res.n_clipped.dims == ()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        full = pass_at_k(_counts(N, C), 2, small_n="clip")
    assert int(full.n_clipped) == 0 and int(full.k_eff_min) == 2 and full.estimate.attrs["n_clipped_cells"] == 0
    assert "small_n='clip'" not in repr(full)


def test_the_plugin_is_never_cut_so_clip_counts_nothing():
    """The plug-in ``p^k`` takes any k: with clip it is (c / n)^k at the k asked, no k_eff."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = pass_hat_k(_counts(N, C), 4, plugin=True, small_n="clip")
    assert float(res.estimate) == pytest.approx(np.mean([(1 / 2) ** 4, (2 / 3) ** 4, (3 / 5) ** 4]))
    assert int(res.n_clipped) == 0 and int(res.k_eff_min) == 4


def test_the_default_warning_says_clip_changes_the_estimand():
    with pytest.warns(InsufficientRunsWarning) as rec:
        res = pass_hat_k(_counts(N, C), 4)
    msg = str(rec[0].message)
    assert "Pass small_n='clip' for" not in msg
    assert "small_n='clip' would not: it takes each such task at k_eff = min(k, n_runs), which changes the " \
           "estimand" in msg
    assert "give those tasks at least k runs (or ask for a smaller k)" in msg
    assert int(res.n_clipped) == 0 and int(res.k_eff_min) == 4 and int(res.n_insufficient) == 2


def test_no_task_with_k_runs_asks_for_runs_not_tasks():
    """500 tasks run once at k = 2 in the audit: here 5 tasks run once, 2 agents."""
    data = _counts([[1] * 5, [1] * 5], [[1, 0, 1, 1, 0], [0, 0, 1, 0, 1]], agents=["a", "b"])
    with pytest.warns(InsufficientRunsWarning):
        with pytest.warns(UndefinedWarning, match="the interval is NaN") as rec:
            pass_at_k(data, [1, 2])
    msg = [str(w.message) for w in rec if "the interval is NaN" in str(w.message)]
    assert len(msg) == 1, msg
    assert "the interval is NaN for 2 of 4 cells: a, k=2 (0 tasks with k runs, 5 with fewer), " \
           "b, k=2 (0 tasks with k runs, 5 with fewer)." in msg[0]
    assert "In those cells no task has k runs" in msg[0]
    assert "the remedy is more runs per task (at least k) or a smaller k, not more tasks" in msg[0]
    assert "give 2 or more tasks" not in msg[0]


def test_short_of_tasks_and_short_of_runs_each_get_their_own_remedy():
    """Agent a: 3 tasks run once (short of runs at k = 2); agent b: 1 task run 3 times, the rest not run."""
    data = _counts([[1, 1, 1], [3, 0, 0]], [[1, 0, 1], [2, 0, 0]], agents=["a", "b"])
    with pytest.warns(InsufficientRunsWarning):
        with pytest.warns(UndefinedWarning, match="the interval is NaN") as rec:
            res = pass_hat_k(data, 2)
    msg = next(str(w.message) for w in rec if "the interval is NaN" in str(w.message))
    assert "a (0 tasks with k runs, 3 with fewer), b (1 task)." in msg
    assert "In 1 of them no task has k runs" in msg
    assert "In the other cells, an interval for a new draw of tasks needs the spread of at least 2 tasks" in msg
    assert msg.endswith("give 2 or more tasks.")
    assert "(1 task; too few tasks)" in repr(res) and "(0 tasks; too few tasks; 3 with fewer than k runs)" in repr(res)
