"""An agent whose tasks all sit in one cluster has no cluster-bootstrap interval, and is told so (audit C4).

SWE-bench's o3 at 0.680 on django's 100 tasks alone: every cluster resample that draws django repeats
its mean, so BCa is undefined. The warning blamed "an agent at 0, or 1, on every task" and sent the
reader to pass_hat_k(data, 1), whose interval over the clusters is NaN there too; the report's flag
said only "every resample gives the same value" beside a caption promising "what holds instead".
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench import freq
from hierbench.freq import DegenerateBootstrapWarning

#: agent "one": 6 tasks of cluster C only, 4 of them solved (mean 2/3); "zero": every task failed, over
#: clusters A, B and C; "mixed": tasks of A and B. Tasks: A a1-a6, B b1-b6, C c1-c6; one run per cell
TASKS = [f"{c}{i}" for c in "abc" for i in range(1, 7)]


def _data() -> xr.Dataset:
    s = np.full((3, 18), np.nan)
    s[0, 12:] = [1, 1, 0, 1, 0, 1]  # one: cluster C only
    s[1, :] = 0.0  # zero: all clusters, all failed
    s[2, :12] = [1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 1]  # mixed: A and B
    return xr.Dataset({"score": (("agent", "task", "run"), s[:, :, None])},
                      coords={"agent": ["one", "zero", "mixed"], "task": TASKS,
                              "cluster": ("task", [t[0].upper() for t in TASKS])})  # fmt: skip


def _bootstrap(data, **kw):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        res = freq.bootstrap_ci(data, method="bca", n_resamples=299, rng=0, **kw)
    return res, [str(w.message) for w in got if issubclass(w.category, DegenerateBootstrapWarning)]


def test_the_warning_tells_one_cluster_from_one_value_on_every_task():
    """Two undefined: "zero" (0 on all 18 tasks, by hand) and "one" (6 tasks, 4 solved, one cluster)."""
    res, said = _bootstrap(_data())
    ci = res.ci.to_series().unstack()
    assert ci.loc[["one", "zero"]].isna().all().all() and ci.loc["mixed"].notna().all()
    assert len(said) == 1
    assert "BCa is undefined for 2 of 3 statistics" in said[0]
    assert "1 of them: every resample equals the estimate (an agent at 0, or 1, on every task)" in said[0]
    assert "1 of them: all its tasks lie in one resampled unit" in said[0]
    assert "hierbench.freq.bootstrap_ci(data, cluster=None)" in said[0]


def test_the_remedy_it_names_gives_an_interval():
    """Without the clusters the task bootstrap of "one" has an interval around its mean 4/6 (by hand)."""
    data = _data()
    res, said = _bootstrap(data, cluster=None)
    lo, hi = res.ci.sel(agent="one").values
    assert lo < 4 / 6 < hi and float(res.estimate.sel(agent="one")) == pytest.approx(4 / 6)
    assert not any("one resampled unit" in s for s in said)


def test_the_reports_flag_names_the_cluster_and_what_holds_instead():
    """The side-by-side flag of "one": its 6 tasks (pandas) in cluster C, and the remedy; "zero" keeps
    the all-0 flag with pass_hat_k's bound.
    """
    from hierbench.report import Report
    from hierbench.report._context import _Context
    from hierbench.report._sec_side import _sec_side

    data = _data()
    rows = data["score"].to_series().dropna().reset_index()
    n_one = int((rows["agent"] == "one").sum())
    clusters_one = {t[0].upper() for t in rows.loc[rows["agent"] == "one", "task"]}
    assert n_one == 6 and clusters_one == {"C"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boot = freq.bootstrap_ci(data, method="bca", n_resamples=299, rng=0)
        post = xr.Dataset({"mean_new_task": (("chain", "draw", "agent"), np.full((1, 40, 3), 0.5))},
                          coords={"agent": ["one", "zero", "mixed"]})  # fmt: skip
        ctx = _Context(fit=xr.DataTree.from_dict({"posterior": post}), data=data, prob=0.95, rng=0,
                       n_resamples=299, truth=None, freq={"bootstrap": boot})  # fmt: skip
        rep = Report("t")
        _sec_side(ctx, rep, "side-by-side")
    flag = pd.Series(rep.blocks[0]["table"]["flag"])
    assert f"its {n_one} tasks all sit in one cluster of `cluster` (C)" in flag["one"]
    assert "hierbench.freq.bootstrap_ci(data, cluster=None)" in flag["one"]
    assert "every resample gives the same value" not in flag["one"]
    assert "every task scored 0" in flag["zero"] and "pass_hat_k(data, 1) gives a bound" in flag["zero"]
