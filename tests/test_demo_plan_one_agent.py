"""The demo's plan for a log of one agent: its own interval's half-width by tasks and runs (audit D, F4).

tau-bench's airline log (one agent, 50 tasks x 4 trials) said "not applicable". Expected values: the
balanced one-facet G-study by hand (numpy): s_e the mean within-task variance, s_t the variance of
the task means less s_e / R, and the half-width 1.96 sqrt(s_t / T + s_e / (T R)).
"""

import numpy as np
from scipy import stats

from hierbench.demo._context import DemoContext
from hierbench.demo._plan import _plan_section


def test_one_agent_plan_is_the_g_study_by_hand(shared_data):
    from hierbench.data import load_tau_bench_airline

    data = load_tau_bench_airline(shared_data)
    y = data["score"].values[0]  # task x run, balanced
    T, R = y.shape
    s_e = float(y.var(axis=1, ddof=1).mean())
    s_t = float(y.mean(axis=1).var(ddof=1) - s_e / R)
    ctx = DemoContext(data=data, truth=None)
    text = " ".join(_plan_section(ctx).split())  # the section is wrapped at 88 columns
    table = ctx.extra["plan_table"]
    z = stats.norm.ppf(0.975)
    for t in (T, 2 * T, 4 * T):
        for r, col in ((1, "R=1"), (R, f"R={R} (as run)"), (2 * R, f"R={2 * R}")):
            assert abs(table.loc[t, col] - z * np.sqrt(s_t / t + s_e / (t * r))) < 1e-9, (t, r)
    assert "not applicable" not in text and f"s_t = {s_t:.4f}" in text and f"s_e = {s_e:.4f}" in text
    assert f"R* = sqrt(s_e c_task / (s_t c_run)) = {np.sqrt(10 * s_e / s_t):.1f}" in text
    assert f"never below {z * np.sqrt(s_t / T):.3f} with {T} tasks" in text
