"""The base layer (hierbench._base): rng, argument checks, intervals, results, counts, clusters.

Expected values are independent of the code under test: hand counts with
numpy on the raw arrays, fixed literals worked out by hand, and numpy's own
Generator for the rng rule.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench._base import CI_KINDS
from hierbench._base import DEFAULT_PROB
from hierbench._base import HierbenchError
from hierbench._base import HierbenchWarning
from hierbench._base import PartialCreditError
from hierbench._base import Result
from hierbench._base import ZeroWidthIntervalWarning
from hierbench._base import as_rng
from hierbench._base import check_choice
from hierbench._base import check_dim
from hierbench._base import check_int
from hierbench._base import check_interval
from hierbench._base import check_prob
from hierbench._base import cluster_codes
from hierbench._base import counts
from hierbench._base import interval_label
from hierbench._base import is_binary
from hierbench._base import make_interval

# --------------------------------------------------------------------------- rng


def test_as_rng_seeds_passes_generators_and_refuses_the_rest():
    assert as_rng(7).random() == np.random.default_rng(7).random()
    g = np.random.default_rng(1)
    assert as_rng(g) is g
    assert isinstance(as_rng(None), np.random.Generator)
    with pytest.raises(TypeError, match=r"`rng` must be None, an int seed or a numpy Generator; got a bool"):
        as_rng(True)
    with pytest.raises(ValueError, match=r"`rng` seed must be a non-negative int; got -1"):
        as_rng(-1)
    with pytest.raises(TypeError, match=r"got str"):
        as_rng("0")


# --------------------------------------------------------------------------- checks


def test_argument_checks_name_the_argument_rule_and_value():
    assert DEFAULT_PROB == 0.95
    assert check_prob(0.5) == 0.5 and isinstance(check_prob(np.float32(0.5)), float)
    for bad in (0, 1, 1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"`prob` must satisfy 0 < prob < 1; got prob="):
            check_prob(bad)
    with pytest.raises(TypeError, match=r"`level` must be a number"):
        check_prob(True, "level")
    assert check_int(4.0, "k") == 4
    with pytest.raises(TypeError, match=r"`k` must be an integer; got 2.5"):
        check_int(2.5, "k")
    with pytest.raises(ValueError, match=r"`k` must be >= 1; got k=0"):
        check_int(0, "k", min=1)
    with pytest.raises(ValueError, match=r"`k` must be <= 3; got k=4"):
        check_int(4, "k", max=3)
    assert check_choice("a", "x", ["a", "b"]) == "a"
    with pytest.raises(ValueError, match=r"`x` must be one of \['a', 'b'\]; got 'c'"):
        check_choice("c", "x", ["a", "b"])
    da = xr.DataArray(np.zeros((2, 3)), dims=("task", "run"))
    assert check_dim(da, "run") == "run"
    with pytest.raises(ValueError, match=r"`dim` must be a dimension of the data \('task', 'run'\); got 'epoch'"):
        check_dim(da, "epoch")


def test_error_and_warning_classes_share_bases():
    assert issubclass(PartialCreditError, HierbenchError) and issubclass(HierbenchError, ValueError)
    assert issubclass(ZeroWidthIntervalWarning, HierbenchWarning)
    assert issubclass(HierbenchWarning, UserWarning)


# --------------------------------------------------------------------------- intervals


def test_make_interval_house_convention_and_vocabulary():
    t = xr.DataArray([0.0, 0.0], dims="agent", coords={"agent": ["a", "b"]})
    iv = make_interval([0.1, 0.2], [0.3, 0.5], prob=0.9, kind="wilson", detail="x", template=t)
    assert iv.dims == ("agent", "ci_bound") and iv["ci_bound"].values.tolist() == ["lower", "upper"]
    assert iv.sel(agent="b").values.tolist() == [0.2, 0.5]
    assert iv.attrs == {"ci_prob": 0.9, "ci_kind": "wilson", "ci_detail": "x"}
    assert check_interval(iv) is iv
    assert interval_label(iv) == "90% wilson"
    # DataArray bounds keep their dims and coords; the vocabulary is closed
    lo = xr.DataArray([0.1], dims="k", coords={"k": [3]})
    assert make_interval(lo, lo + 0.1, prob=0.95, kind="t").sel(k=3).values.tolist() == pytest.approx([0.1, 0.2])
    with pytest.raises(ValueError, match=r"`kind` must be one of .*detail goes in `detail`.*'Wilson score'"):
        make_interval(0.1, 0.2, prob=0.95, kind="Wilson score")
    assert {"eti", "hdi", "percentile", "bca", "t", "wilson", "exact", "profile", "feasible"} <= set(CI_KINDS)
    # level 1 only for a deterministic range
    assert make_interval(0.0, 1.0, prob=1.0, kind="feasible").attrs["ci_prob"] == 1.0
    with pytest.raises(ValueError, match=r"0 < prob < 1"):
        make_interval(0.0, 1.0, prob=1.0, kind="exact")


def test_make_interval_warns_on_zero_width_only_when_every_finite_interval_is_a_point():
    with pytest.warns(ZeroWidthIntervalWarning, match=r"95% percentile interval here has zero width"):
        make_interval([0.5, np.nan], [0.5, np.nan], prob=0.95, kind="percentile")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_interval([0.5, 0.2], [0.5, 0.4], prob=0.95, kind="percentile")  # one has width
        make_interval([np.nan], [np.nan], prob=0.95, kind="percentile")  # undefined, not a point
        make_interval(0.5, 0.5, prob=1.0, kind="feasible")  # level 1: a point is fine
        make_interval(0.5, 0.5, prob=0.95, kind="t", warn_zero_width=False)


def test_check_interval_says_what_is_missing():
    base = xr.DataArray([0.1, 0.2], dims="ci_bound", coords={"ci_bound": ["lower", "upper"]})
    with pytest.raises(ValueError, match=r"attr 'ci_prob' is missing"):
        check_interval(base.assign_attrs(ci_kind="t"))
    with pytest.raises(ValueError, match=r"`ci_kind` must be one of .*got 'bootstrap-percentile"):
        check_interval(base.assign_attrs(ci_prob=0.95, ci_kind="bootstrap-percentile (tasks)"))
    flipped = base.assign_coords(ci_bound=["upper", "lower"]).assign_attrs(ci_prob=0.9, ci_kind="t")
    with pytest.raises(ValueError, match=r"`ci_bound` must be \['lower', 'upper'\]"):
        check_interval(flipped)
    with pytest.raises(ValueError, match=r"must have a `ci_bound` dim"):
        check_interval(xr.DataArray([0.1, 0.2], dims="x", attrs={"ci_prob": 0.9, "ci_kind": "t"}))
    with pytest.raises(TypeError, match=r"got list"):
        check_interval([0.1, 0.2])


# --------------------------------------------------------------------------- results


@dataclasses.dataclass(frozen=True, repr=False)
class _Toy(Result):
    estimate: xr.DataArray
    ci: xr.DataArray
    n: xr.DataArray
    draws: xr.DataArray
    _dataset_exclude = ("draws",)


def _toy(m: int) -> _Toy:
    agents = [f"a{i:03d}" for i in range(m)]
    est = xr.DataArray(np.linspace(0.1, 0.9, m), dims="agent", coords={"agent": agents})
    ci = make_interval(est - 0.05, est + 0.05, prob=0.95, kind="t")
    n = xr.full_like(est, 10, dtype=np.int64)
    draws = xr.DataArray(np.zeros((3, m)), dims=("resample", "agent"), coords={"agent": agents})
    return _Toy(est, ci, n, draws)


def test_result_repr_is_short_and_frames_are_tidy():
    r = _toy(400)
    lines = repr(r).splitlines()
    assert len(lines) <= 10  # a header, a few agents, an ellipsis: not 400 lines
    assert lines[0] == "_Toy: estimate with 95% t interval"
    assert "(393 more)" in repr(r)
    df = r.to_frame()
    assert len(df) == 400 and list(df.columns) == ["estimate", "lower", "upper", "n", "ci_prob", "ci_kind"]
    row = df.loc["a001"]
    assert row["lower"] == pytest.approx(row["estimate"] - 0.05) and row["ci_kind"] == "t"
    ds = r.to_dataset()
    assert set(ds.data_vars) == {"estimate", "ci", "n"}  # raw draws excluded
    assert r["estimate"] is r.estimate
    with pytest.raises(KeyError, match=r"_Toy has no field 'mean'"):
        r["mean"]
    small = _toy(3)
    assert len(repr(small).splitlines()) == 4
    scalar = _Toy(
        xr.DataArray(0.5),
        make_interval(0.4, 0.6, prob=0.95, kind="t"),
        xr.DataArray(3),
        xr.DataArray(np.zeros(2), dims="resample"),
    )
    assert repr(scalar).splitlines()[1].strip() == "0.5 [0.4, 0.6]"
    assert len(scalar.to_frame()) == 1


# --------------------------------------------------------------------------- counts


def _scores(rng: np.random.Generator, shape=(3, 5, 4)) -> xr.DataArray:
    y = (rng.random(shape) < 0.6).astype(float)
    y[rng.random(shape) < 0.25] = np.nan  # ragged: not run
    return xr.DataArray(
        y,
        dims=("agent", "task", "run"),
        coords={"agent": ["x", "y", "z"], "task": [f"t{i}" for i in range(shape[1])], "run": np.arange(shape[2])},
    )


def test_counts_equal_an_independent_count():
    y = _scores(np.random.default_rng(0))
    err = xr.DataArray(np.random.default_rng(1).random(y.shape) < 0.1, dims=y.dims, coords=y.coords)
    c = counts(xr.Dataset({"score": y, "error": err}))
    v = y.values
    np.testing.assert_array_equal(c["n_runs"].values, np.isfinite(v).sum(-1))
    np.testing.assert_array_equal(c["n_success"].values, np.nansum(v, -1))
    np.testing.assert_array_equal(c["n_error"].values, err.values.sum(-1))
    assert c["n_runs"].dtype == np.int64 and c.attrs["binary"] == 1
    assert "run" not in c.dims and c["task"].values.tolist() == [f"t{i}" for i in range(5)]
    # a counts dataset passes through after checks
    again = counts(c)
    xr.testing.assert_identical(again["n_runs"], c["n_runs"])


def test_counts_refuse_partial_credit_even_when_sums_are_whole():
    y = xr.DataArray([[0.5, 0.5, 0.5, 0.5]], dims=("task", "run"), coords={"task": ["t1"]})
    with pytest.raises(PartialCreditError, match=r"4 scores are partial credit, e.g. \(task, run, score\) \[\('t1', 0, 0.5\)"):
        counts(y, purpose="pass@k")
    with pytest.raises(PartialCreditError, match=r"1 score is partial credit, e.g. \(task, run, score\) \[\('t1', 1, 0.5\)"):
        counts(y.copy(data=[[1.0, 0.5, 0.0, 1.0]]), purpose="pass@k")  # one: singular
    c = counts(y, binary=False)
    assert float(c["n_success"][0]) == 2.0 and c.attrs["binary"] == 0
    with pytest.raises(PartialCreditError, match=r"made from partial-credit scores"):
        counts(c)  # the attrs remember it
    bad = xr.Dataset({"n_runs": ("task", [3, 2]), "n_success": ("task", [4, 1])})
    with pytest.raises(HierbenchError, match=r"0 <= n_success <= n_runs with whole numbers of successes; 1 cells do not, e.g. \(n_success, n_runs\) \[\(4.0, 3.0\)\]"):
        counts(bad)
    with pytest.raises(HierbenchError, match=r"scores must be finite or NaN"):
        counts(xr.DataArray([[np.inf]], dims=("task", "run")))
    with pytest.raises(HierbenchError, match=r"got variables \['x'\]"):
        counts(xr.Dataset({"x": ("task", [1.0])}))
    assert is_binary([0, 1, np.nan]) and not is_binary([0, 0.5])


# --------------------------------------------------------------------------- clusters


def test_cluster_codes_missing_labels_are_singletons_never_pooled():
    y = xr.DataArray(
        np.zeros(5),
        dims="task",
        coords={"task": ["t0", "t1", "t2", "t3", "t4"], "cluster": ("task", ["r1", "", "r1", "", "r2"])},
    )
    with pytest.warns(HierbenchWarning, match=r"2 of 5 tasks have no 'cluster' label \(e.g. \['t1', 't3'\]\)"):
        codes, labels = cluster_codes(y)
    # t1 and t3 are two clusters of their own, not one "" cluster
    assert len(set(codes.tolist())) == 4
    assert codes[0] == codes[2] and codes[1] != codes[3]
    assert set(labels.tolist()) == {"r1", "r2", "t1 (no cluster)", "t3 (no cluster)"}
    with pytest.raises(HierbenchError, match=r"2 tasks have no cluster label"):
        cluster_codes(y, missing="refuse")
    assert cluster_codes(y.drop_vars("cluster")) is None  # "auto" without the coord
    assert cluster_codes(y, None) is None
    with pytest.raises(ValueError, match=r"must name a coord along 'task'; got 'family'"):
        cluster_codes(y, "family")
    obj = y.assign_coords(cluster=("task", np.array(["a", None, "a", np.nan, "b"], dtype=object)))
    with pytest.warns(HierbenchWarning):
        codes2, _ = cluster_codes(obj)
    assert len(set(codes2.tolist())) == 4


def test_fit_record_reads_absent_as_a_fit_made_elsewhere_and_refuses_an_unreadable_one():
    """The one reader of a fit's JSON records: absent is {}, unreadable or not an object is refused by name."""
    import xarray as xr

    from hierbench._base import HierbenchError
    from hierbench._base import fit_record

    fit = xr.DataTree()
    assert fit_record(fit, "hierbench_spec") == {}
    fit.attrs["hierbench_spec"] = '{"model": "crossed", "options": {"clusters": true}}'
    assert fit_record(fit, "hierbench_spec") == {"model": "crossed", "options": {"clusters": True}}
    fit.attrs["hierbench_structure"] = "{not json"
    with pytest.raises(HierbenchError, match="'hierbench_structure' is not JSON"):
        fit_record(fit, "hierbench_structure")
    fit.attrs["hierbench_structure"] = "[1, 2]"
    with pytest.raises(HierbenchError, match="'hierbench_structure' holds a JSON list"):
        fit_record(fit, "hierbench_structure")
