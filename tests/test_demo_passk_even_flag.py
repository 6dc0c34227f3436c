"""The demo's pass^k preamble says what the even-clusters note marks (audit U, finding 2).

The preamble put the note inside the all-0 / all-1 case, where its rule is the cluster sums':
``n_eff >= 0.75 G``. The expected rows are computed here by hand from the log (per-task
C(c, k) / C(n, k), their cluster sums, n_eff), apart from the estimator's code.
"""

import re
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


def _n_eff_share(ds, agent: str, k: int) -> float:
    """By hand: n_eff / G over the clusters' sums of the per-task C(c,k)/C(n,k), the smaller of them and of 1 - them."""
    score = ds["score"].sel(agent=agent).values
    n, c = np.isfinite(score).sum(1), np.nansum(score, 1)
    ok = n >= k
    v = comb(c[ok], k) / comb(n[ok], k)
    frame = pd.DataFrame({"v": v, "u": 1 - v, "g": ds["cluster"].values[ok]})
    sums = frame.groupby("g")[["v", "u"]].sum()
    n_eff = min(sums[s].sum() ** 2 / (sums[s] ** 2).sum() for s in ("v", "u"))
    return n_eff / len(sums)


def test_the_preamble_gives_the_even_clusters_letter_its_rule_not_the_all_zero_case(default_passk):
    ds, text = default_passk
    flat = " ".join(text.split())
    # the note is not said to be part of the no-success (all 0 or all 1) bound any more
    assert "where the clusters carry the mean evenly it keeps the t interval" not in flat
    said = re.search(r"Letter (\w) is neither a bound nor the all-0 / all-1 case: .*? n_eff >= 0\.75 G", flat)
    assert said, flat[:2000]
    letter = said.group(1)
    lines = text.splitlines()
    start = next(i for i, r in enumerate(lines) if r.lstrip().startswith("k "))
    end = lines.index("", start)  # the table ends at the first blank line
    rows = [r.split() for r in lines[start + 2:end]]
    assert len(rows) == 30
    # every unbounded row carries the letter exactly where the hand n_eff / G is at least 0.75
    # (rows with a bound, letter b, are the other rung: few tasks carry the mean)
    marked = {(r[0], int(r[1])): r[-1] == letter for r in rows if r[-1] != "b"}
    want = {key: _n_eff_share(ds, *key) >= 0.75 for key in marked}
    assert marked == want
    assert sum(want.values()) == 17  # the default: 6 at k = 1, 6 at k = 2, 3 at k = 3, 1 at k = 4 and 1 at k = 5
