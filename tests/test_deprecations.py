"""Old names and keywords keep working for one release, with a DeprecationWarning.

Issue 23, step 4 ("names that predict"). For every renamed keyword and every renamed
public name, the old spelling must (a) warn, naming the new one, and (b) give exactly
what the new spelling gives. The expected value of (b) is the result of the call with
the NEW keyword or name on the same inputs and seed: the rename is a pure relabelling,
so there is no other reference. To keep such a test able to fail, every renamed
dimension is given a NON-default name in the data ("epoch", "problem", "model",
"example"), so a wrapper that dropped the old keyword's value would fall back to the
default name and fail; where the data contract forces the default name (an eval
dataset's ``run``, a 1-D judge input), the value passed through the old keyword must
show in the error it provokes.
"""

from __future__ import annotations

import importlib
import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import hierbench.data as hd
import hierbench.freq as hf
import hierbench.metrics as hm
from hierbench._base import moved_names
from hierbench._base import renamed_kwargs
from hierbench.testing import simulate_eval

DS, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=0)
#: the same scores with every dimension renamed: the renamed keyword must carry the name
S = DS.score.rename(run="epoch", task="problem", agent="model")
RNG = np.random.default_rng(5)
#: judge inputs, clustered by a coord; a 1-D input takes the item dim's name whatever it is
#: (see test_old_item_keyword_reaches_one_dimensional_judges), the 2-D ratings do not
GRP = {"grp": ("example", np.arange(40) // 4)}
Y_TRUE = xr.DataArray(RNG.integers(0, 2, 40), dims="example", coords=GRP)
Y_PRED = xr.DataArray(RNG.integers(0, 2, 40), dims="example", coords=GRP)
SCORE = xr.DataArray(RNG.uniform(size=40), dims="example", coords=GRP)
RATINGS = xr.DataArray(RNG.integers(0, 3, (40, 3)), dims=("example", "rater"), coords=GRP)
J = {"cluster": "grp", "n_resamples": 199, "rng": 1}
X = xr.DataArray(RNG.uniform(size=60), dims="problem")
DRAWS = xr.DataArray(RNG.normal(size=(2, 50, 3)), dims=("chain", "draw", "model"),
                     coords={"model": ["a", "b", "c"]})  # fmt: skip
RUBRIC = xr.DataArray(RNG.integers(1, 6, (2, 10, 2)).astype(float), dims=("agent", "task", "epoch"))
PARETO = xr.Dataset({"score": S.transpose("model", "problem", "epoch"),
                     "cost": S.transpose("model", "problem", "epoch") * 0 + RNG.uniform(1, 2, (3, 12, 3))})  # fmt: skip
B = {"n_resamples": 199, "rng": 1}
DIMS = {"agent_dim": "model", "task_dim": "problem"}

#: (function, args, other keywords, old keyword, new keyword, value)
KEYWORD_CASES = [
    (hf.bootstrap_ci, (S,), {**DIMS, **B}, "dim", "run_dim", "epoch"),
    (hf.pass_at_k, (S, 2), {"task_dim": "problem"}, "dim", "run_dim", "epoch"),
    (hf.pass_hat_k, (S, 2), {"task_dim": "problem"}, "dim", "run_dim", "epoch"),
    (hf.fit_beta_binomial_ml, (S.isel(model=0),), {"task_dim": "problem"}, "dim", "run_dim", "epoch"),
    (hf.beta_binomial_profile_ci, (S.isel(model=0),), {"task_dim": "problem"}, "dim", "run_dim", "epoch"),
    (hf.success_rate, (S,), {"task_dim": "problem", "tag": None, "cluster": None}, "dim", "run_dim", "epoch"),
    (hf.mean_ci, (S,), {"var": None, **DIMS, **B}, "dim", "run_dim", "epoch"),
    (hf.rubric_summary, (RUBRIC,), B, "dim", "run_dim", "epoch"),
    (hf.pareto_frontier, (PARETO,), {**DIMS, **B}, "dim", "run_dim", "epoch"),
    (hf.classification_metrics, (Y_TRUE, Y_PRED), J, "dim", "item_dim", "example"),
    (hf.pr_curve, (Y_TRUE, SCORE), J, "dim", "item_dim", "example"),
    (hf.threshold_for_recall, (Y_TRUE, SCORE), {"target": 0.5, **J}, "dim", "item_dim", "example"),
    (hf.cohen_kappa, (Y_TRUE, Y_PRED), J, "dim", "item_dim", "example"),
    (hf.fleiss_kappa, (RATINGS,), J, "dim", "item_dim", "example"),
    (hf.confidence_sequence, (X,), {"breaks": 200}, "dim", "task_dim", "problem"),
    (hf.clustered_se, (X, np.arange(60) // 6), {}, "dim", "task_dim", "problem"),
    (hf.stratified_mean, (X, np.arange(60) % 2), {}, "dim", "task_dim", "problem"),
    (hf.compare_agents, (S,), {"run_dim": "epoch", "agent_dim": "model", **B}, "dim", "task_dim", "problem"),
    (hf.paired_test, (S.isel(model=0), S.isel(model=1)), {"run_dim": "epoch", **B}, "dim", "task_dim", "problem"),
    (hf.rank_uncertainty, (S,), {"run_dim": "epoch", "agent_dim": "model", **B}, "dim", "task_dim", "problem"),
    (hf.rank_uncertainty, (S,), {"run_dim": "epoch", **DIMS, **B}, "level", "alpha", 0.2),
    (hm.prob_superiority, (DRAWS,), {}, "dim", "agent_dim", "model"),
    (hm.rank_probabilities, (DRAWS,), {}, "dim", "agent_dim", "model"),
]


def _assert_same(got, want) -> None:
    """Identical results: xarray objects, or a result's dataset (its frame if it has none)."""
    if isinstance(got, (xr.Dataset, xr.DataArray)):
        xr.testing.assert_identical(got, want)
    elif hasattr(got, "to_dataset"):
        xr.testing.assert_identical(got.to_dataset(), want.to_dataset())
    else:
        pd.testing.assert_frame_equal(got.to_frame(), want.to_frame())


def _quiet(fn, *args, **kwargs):
    """The new spelling: it must not warn about deprecation."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)  # estimator notices are not the point here
        return fn(*args, **kwargs)


@pytest.mark.parametrize(("fn", "args", "kw", "old", "new", "value"), KEYWORD_CASES,
                         ids=[f"{c[0].__name__}-{c[3]}" for c in KEYWORD_CASES])  # fmt: skip
def test_old_keyword_warns_and_gives_the_new_keywords_result(fn, args, kw, old, new, value):
    want = _quiet(fn, *args, **kw, **{new: value})  # expected: the new keyword's result
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.warns(DeprecationWarning, match=rf"`{old}` of {fn.__name__}\(\) is deprecated .* use `{new}`"):
            got = fn(*args, **kw, **{old: value})
    _assert_same(got, want)


@pytest.mark.parametrize(("fn", "args"), [
    (hd.to_counts, (DS,)),
    (hd.to_pairwise, (DS,)),
])  # fmt: skip
def test_old_keyword_passes_its_value_where_the_name_is_fixed(fn, args):
    """An eval dataset's run dim is always ``run``: the old keyword's value still reaches the check."""
    with pytest.warns(DeprecationWarning, match=r"`dim` .* use `run_dim`"):
        got = fn(*args, dim="run")
    _assert_same(got, _quiet(fn, *args, run_dim="run"))
    with pytest.warns(DeprecationWarning), pytest.raises(hd.EvalDataError, match=r"`run_dim` must be a dimension"):
        fn(*args, dim="epoch")


@pytest.mark.parametrize("fn", [hf.classification_metrics, hf.pr_curve, hf.threshold_for_recall, hf.cohen_kappa])
def test_old_item_keyword_reaches_one_dimensional_judges(fn):
    """A 1-D input takes the item dim's name whatever it is, so the name shows only in the
    message refusing a 2-D input: the old keyword's value must be the one named there.
    """
    flat = Y_TRUE.values
    with pytest.warns(DeprecationWarning, match="use `item_dim`"), pytest.raises(ValueError, match=r"\(dim 'example'\)"):
        fn(xr.DataArray(np.stack([flat, flat]), dims=("a", "b")), Y_PRED, dim="example")


def test_the_old_and_the_new_keyword_together_are_refused():
    with pytest.raises(TypeError, match=r"success_rate\(\) got `dim` \(the deprecated name of `run_dim`\) and `run_dim`"):
        hf.success_rate(DS, dim="run", run_dim="run")


def test_positional_arguments_pass_through_unchanged():
    """Decorated functions take their positional arguments as before (Beta-binomial counts
    by hand: the all-keyword call is the reference).
    """
    succ, n = [0, 1, 3, 2, 9, 5], [10] * 6
    _assert_same(_quiet(hf.fit_beta_binomial_ml, succ, n), _quiet(hf.fit_beta_binomial_ml, data=succ, n=n))
    _assert_same(_quiet(hf.pass_at_k, S, 2, task_dim="problem", run_dim="epoch"),
                 _quiet(hf.pass_at_k, data=S, k=2, task_dim="problem", run_dim="epoch"))  # fmt: skip
    _assert_same(_quiet(hm.prob_superiority, DRAWS, "ability", agent_dim="model"),
                 _quiet(hm.prob_superiority, fit=DRAWS.rename("ability"), agent_dim="model"))  # fmt: skip


def test_the_decorated_signature_and_docstring_show_only_the_new_names():
    for fn, *_, old, new, _ in KEYWORD_CASES:
        params = inspect.signature(fn).parameters
        assert new in params and old not in params, fn.__name__
        assert f"{new}" in fn.__doc__, fn.__name__


#: (module, old name, new name)
MOVED = [
    ("hierbench.freq", "bradley_terry_ml", "fit_bradley_terry_ml"),
    ("hierbench.freq", "beta_binomial_mle", "fit_beta_binomial_ml"),
    ("hierbench.freq", "calibrate_irt", "fit_irt_ml"),
    ("hierbench.data", "describe", "read_report"),
]


@pytest.mark.parametrize(("module", "old", "new"), MOVED)
def test_old_names_warn_and_are_the_new_objects(module, old, new):
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{old} moved to {module}\.{new} "):
        obj = getattr(mod, old)
    assert obj is getattr(mod, new)
    assert old in mod.__all__ and new in mod.__all__  # both import for one release


def test_an_old_name_called_positionally_gives_the_new_result():
    with pytest.warns(DeprecationWarning, match="fit_beta_binomial_ml"):
        from hierbench.freq import beta_binomial_mle
    _assert_same(beta_binomial_mle([0, 1, 3, 2, 9, 5], [10] * 6),
                 hf.fit_beta_binomial_ml([0, 1, 3, 2, 9, 5], [10] * 6))  # fmt: skip
    with pytest.warns(DeprecationWarning, match="read_report"):
        from hierbench.data import describe
    assert describe(DS) == hd.read_report(DS)


def test_the_helpers_refuse_what_they_do_not_know():
    get = moved_names("m", {"a": ("math", "sqrt", "why")})
    with pytest.raises(AttributeError, match=r"module 'm' has no attribute 'b'"):
        get("b")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        hf.nope  # noqa: B018

    @renamed_kwargs(dim="run_dim")
    def f(x, *, run_dim="run"):
        """Doc."""
        return x, run_dim

    assert (f.__name__, f.__doc__, f(1, run_dim="r")) == ("f", "Doc.", (1, "r"))
