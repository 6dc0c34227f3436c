"""The demo's pass^k table marks the even-clusters flag exactly where its rule holds (audit U, finding 2).

The preamble put the note inside the all-0 / all-1 case. Since audit T (finding 1) the rule is
the design effect ``deff < 0.5`` (the cluster-robust variance of the mean over the
independent-task one); the rule before, ``n_eff >= 0.75 G`` over the raw cluster sums, marked 17
of the default's 30 rows, whose 12 clusters are all of 10 tasks. The expected rows are
computed here by hand from the log (per-task C(c, k) / C(n, k), their cluster sums, the CR2
variance), apart from the estimator's code.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import comb

from hierbench.demo import DemoContext
from hierbench.demo._passk import _passk_section


@pytest.fixture(scope="module")
def default_passk():
    """The embedded default's log and its pass^k section without a fit or a truth (the estimator's words alone)."""
    from hierbench.testing import default_dataset

    ds = default_dataset()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ds, _passk_section(DemoContext(ds, None))


def _deff(ds, agent: str, k: int) -> float:
    """By hand: CR2 variance of the mean of the per-task C(c,k)/C(n,k) over their variance s^2 / N as independent tasks."""
    score = ds["score"].sel(agent=agent).values
    n, c = np.isfinite(score).sum(1), np.nansum(score, 1)
    ok = n >= k
    v = comb(c[ok], k) / comb(n[ok], k)
    frame = pd.DataFrame({"r": v - v.mean(), "g": ds["cluster"].values[ok]})
    by = frame.groupby("g")["r"].agg(["sum", "size"])
    N = len(v)
    cr2 = (by["sum"] ** 2 / (1 - by["size"] / N)).sum() / N**2
    return float(cr2 / (v.var(ddof=1) / N))


def test_the_default_log_of_equal_clusters_carries_the_even_clusters_letter_only_where_its_rule_holds(default_passk):
    from hierbench.freq import EVEN_CLUSTERS_FLAG

    ds, text = default_passk
    flat = " ".join(text.split())
    # the note is not said to be part of the no-success (all 0 or all 1) bound any more
    assert "where the clusters carry the mean evenly it keeps the t interval" not in flat
    lines = text.splitlines()
    start = next(i for i, r in enumerate(lines) if r.lstrip().startswith("k "))
    end = lines.index("", start)  # the table ends at the first blank line
    rows = [r.split() for r in lines[start + 2:end]]
    assert len(rows) == 30
    # rows with a bound, letter b, are the other rung: few tasks carry the mean
    keys = [(r[0], int(r[1])) for r in rows if r[-1] != "b"]
    want = {key: _deff(ds, *key) < 0.5 for key in keys}
    # the default's 12 clusters of 10 tasks: every row's clusters differ more than independent tasks would
    assert not any(want.values()) and min(_deff(ds, *key) for key in keys) > 0.5
    # so no row carries the flag, and the preamble has no sentence on its letter (the n_eff rule marked 17 rows)
    assert EVEN_CLUSTERS_FLAG not in text
    assert "is neither a bound nor the all-0 / all-1 case" not in flat
