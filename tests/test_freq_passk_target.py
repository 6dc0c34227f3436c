"""pass^k / pass@k: what the interval is for (a new draw of tasks), what each value rests on.

The target is checked by a seeded simulation: tasks drawn afresh from Beta(2, 2)
per replication, so the population pass^2 is E[p^2] = 2 * 3 / (4 * 5) = 0.3
(the Beta moment by hand), while "these tasks'" pass^2 is the replication's own
mean of p_t^2. The repr and warning are checked on counts whose task sets are
counted by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import InsufficientRunsWarning
from hierbench.freq import pass_at_k
from hierbench.freq import pass_hat_k


def _counts(n, c, agents=("a", "b")):
    return xr.Dataset(
        {"n_runs": (("agent", "task"), np.asarray(n)), "n_success": (("agent", "task"), np.asarray(c, float))},
        coords={"agent": list(agents)},
    )


def test_the_t_interval_is_for_a_new_draw_of_tasks_not_these_tasks():
    # 2,000 replications as agents, each with its own 30 tasks p ~ Beta(2, 2), 8 runs each
    g = np.random.default_rng(0)
    A, T, n = 2000, 30, 8
    p = g.beta(2, 2, (A, T))
    ds = xr.Dataset({"n_runs": (("agent", "task"), np.full((A, T), n)),
                     "n_success": (("agent", "task"), g.binomial(n, p))})  # fmt: skip
    res = pass_hat_k(ds, 2)
    assert res.estimate.attrs["tasks"] == "population"
    assert res.estimate.attrs["over"].startswith("a new draw of tasks from the same population")
    lo, hi = res.ci.sel(ci_bound="lower").values, res.ci.sel(ci_bound="upper").values
    pop = 0.3  # E[p^2] for Beta(2, 2)
    these = (p**2).mean(1)
    cover_pop = ((lo <= pop) & (pop <= hi)).mean()
    cover_these = ((lo <= these) & (these <= hi)).mean()
    # the nominal 95% for the population, within 3 Monte Carlo SEs (0.015)
    assert abs(cover_pop - 0.95) < 3 * np.sqrt(0.95 * 0.05 / A)
    # for these tasks alone it over-covers: the task spread is in its width (0.9995 seen at this seed)
    assert cover_these > 0.99


def test_repr_shows_the_tasks_and_flag_of_each_value_and_says_when_k_changes_the_tasks():
    # agent a: runs (4, 4, 1), successes (4, 2, 1): pass^1 over 3 tasks = (1 + 1/2 + 1) / 3,
    # pass^2 over the 2 tasks with >= 2 runs = (C(4,2)/C(4,2) + C(2,2)/C(4,2)) / 2 = (1 + 1/6) / 2.
    # pass^1 of a rests on few tasks: n_eff of 1 - y = (0, 1/2, 0) is 1 < min(10, 3 / 2), so its
    # flag is the few-tasks bound, on the failures' side (audit F 8.2); pass^2's 1 - y = (0, 5/6) has n_eff 1, not < min(10, 1): no flag.
    # agent b: no success: every per-task value 0, the exact bound 1 - 0.025^(1/n_tasks)
    cnt = _counts([[4, 4, 1], [4, 4, 1]], [[4, 2, 1], [0, 0, 0]])
    with pytest.warns(InsufficientRunsWarning, match=r"k=2: 2\); .*different task sets"):
        res = pass_hat_k(cnt, [1, 2])
    lines = repr(res).splitlines()
    assert "interval for a new draw of tasks from the same population" in lines[0]
    assert lines[1] == f"  a, 1: {2.5 / 3:.4g} [{res.ci.values[0, 0, 0]:.4g}, {res.ci.values[0, 0, 1]:.4g}]  (3 tasks; bound: few tasks carry the failures (1 - mean))"
    assert lines[2].startswith(f"  a, 2: {7 / 12:.4g} [") and lines[2].endswith("(2 tasks)")
    assert lines[3].endswith(f", {1 - 0.025 ** (1 / 3):.4g}]  (3 tasks; exact bound)")
    assert lines[4].endswith(f", {1 - 0.025 ** (1 / 2):.4g}]  (2 tasks; exact bound)")
    assert lines[5].startswith("  n_tasks differs across k") and "not form one curve" in lines[5]
    # every task run at least max(k) times: one task set, no such sentence
    same = pass_at_k(_counts([[4, 4, 2]] * 2, [[4, 2, 1], [0, 1, 0]]), [1, 2])
    assert "n_tasks differs" not in repr(same) and repr(same).count("  (3 tasks") == 4
    # one agent, scalar k: a 0-d estimate still names its tasks
    one = pass_hat_k(xr.Dataset({"n_runs": ("task", [10, 10, 10, 10]), "n_success": ("task", [3, 10, 0, 7])}), 3)
    assert repr(one).splitlines()[1].startswith("  0.325 [") and "]  (4 tasks" in repr(one)
