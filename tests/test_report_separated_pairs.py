"""The pair table flags P(a > b) of a pair with a separated agent; the heatmap says its order (audit W, 1-2).

The log: ``simulate_eval`` with one agent's scores set to 0 on every run, so by construction
the data separate that agent and no other: exactly the pairs holding it are flagged.
"""

import warnings

import pytest

from hierbench import bayes
from hierbench.report import build
from hierbench.testing import simulate_eval


@pytest.mark.slow  # one small fit (2 chains x 100 draws), then a Markdown report
def test_pairs_with_the_separated_agent_are_flagged(tmp_path):
    """The report is ``build``'s own, its sections cut to the one read here (``sections=``): the
    pair section is computed and written as in the whole report.
    """
    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=2, rng=1)
    zero = str(ds["agent"].values[1])
    ds["score"].loc[{"agent": zero}] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # no posterior predictive: the predictive check is not read here (the posterior is the same to the bit)
        fit = bayes.fit(bayes.build_crossed(ds), draws=100, tune=100, chains=2, rng=0, progress=False,
                        posterior_predictive=False)
        md = build(fit, ds, path=tmp_path / "r.md", n_resamples=99, progress=False, sections=["pairwise"]).read_text()
    body = md.split("## Does A beat B?", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("| agent_")]
    assert len(rows) == 3
    for line in rows:
        pair = line.split("|")[1].strip()
        assert ("separated by the data" in line) == (zero in pair.split(" - ")), pair
    caption = md.split("![Pairwise posterior probabilities", 1)[1].split("](", 1)[0]
    assert "rows and columns in the report's order, agents by mean score per task" in caption
    assert f"{zero}: separated by the data" in caption
