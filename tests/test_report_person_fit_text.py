"""Person fit's text names its interval's level and kind (Wald) and what its spread ``tau`` is (audit W, finding 3).

The interval is checked against statsmodels' ``Logit`` on the leave-agent-out task logit built by
hand with pandas from the raw scores: the ML fit's Wald interval at the result's own level.
"""

import re
import warnings

import numpy as np
import pytest

from hierbench.freq import person_fit
from hierbench.report import misfit_agents
from hierbench.testing import simulate_eval

sm = pytest.importorskip("statsmodels.api")


def _by_hand(ds, agent: str, prob: float) -> tuple[float, float, float]:
    """The agent's slope and Wald interval: statsmodels Logit on log((s + 1/2) / (k + 1/2 - s)) of the others."""
    df = ds["score"].to_dataframe().reset_index()
    rate = df.groupby(["agent", "task"])["score"].mean().unstack("task")  # one run per cell here
    others = rate.drop(index=agent)
    s, k = others.sum(), others.notna().sum()
    x = np.log((s + 0.5) / (k + 0.5 - s))
    y = rate.loc[agent]
    fit = sm.Logit(y.to_numpy(), sm.add_constant(x.to_numpy())).fit(disp=0)
    lo, hi = fit.conf_int(alpha=1 - prob)[1]
    return float(fit.params[1]), float(lo), float(hi)


@pytest.mark.parametrize("prob", [0.9, 0.95])
def test_slope_interval_says_level_and_wald(prob):
    ds, _ = simulate_eval(n_agents=5, n_tasks=300, n_runs=1, rng=2)
    res = person_fit(ds, prob=prob, rng=0)
    text = str(res)
    m = re.search(r"(agent_\d+): slope (-?[\d.]+) \((\d+)% Wald \[(-?[\d.]+), (-?[\d.]+)\]\)", text)
    assert m, text
    agent, est, level, lo, hi = m.group(1), *map(float, m.group(2, 3, 4, 5))
    assert level == round(100 * prob)  # the result's own level, not a fixed 95
    b, slo, shi = _by_hand(ds, agent, prob)
    # Firth's estimate is ML's shrunk by O(1/n): within 0.03 of it on 300 tasks (2-decimal printing adds 0.005)
    assert est == pytest.approx(b, abs=0.03)
    assert lo == pytest.approx(slo, abs=0.03) and hi == pytest.approx(shi, abs=0.03)
    flat = " ".join(text.split())  # the repr wraps its long lines near 100 columns
    assert "log sd" not in flat and "the sd of their log slopes beyond their standard errors, tau" in flat


def test_report_flag_names_wald_interval():
    ds, _ = simulate_eval(n_agents=6, n_tasks=200, n_runs=1, sd_task=2.0, rng=4)
    rng = np.random.default_rng(0)
    bad = str(ds["agent"].values[2])
    vals = ds["score"].sel(agent=bad).values
    ds["score"].loc[{"agent": bad}] = vals[rng.permutation(vals.shape[0])]  # a shuffled record: slope near 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flags = misfit_agents(person_fit(ds, rng=0))
    assert len(flags) == 1 and f"{bad}: slope" in flags[0]
    assert "with its 95% Wald interval" in flags[0] and "(95% Wald [" in flags[0]
    assert "log sd" not in flags[0]
