"""The pointwise log-likelihood of a graded (ordinal) formula fit, for LOO and model comparison.

PyMC's ``compute_log_likelihood`` refuses the ordinal model (its ordered thresholds carry an explicit
initial value), so the model names its own ``log_likelihood`` hook. Independent reference: PyMC's own
``compute_log_likelihood`` on the same model rebuilt with its initial values cleared (they change the
sampler's start only, never a log density). Data: the wine judges (shared folder) and a small seeded
graded log.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.special import gammaln

bayes = pytest.importorskip("hierbench.bayes")
pm = pytest.importorskip("pymc")
azs = pytest.importorskip("arviz_stats")

#: 150 draws of 2 chains: a log-likelihood check, not an estimate (the sds' ESS falls short of 200)
pytestmark = pytest.mark.filterwarnings("ignore::hierbench.bayes.ConvergenceWarning")

_SMALL = {"draws": 150, "tune": 150, "chains": 2, "progress": False, "posterior_predictive": False}
_WINE = "rating ~ temp + contact + (1|judge)"


def _wine(shared_data, binary: bool = False) -> xr.Dataset:
    from hierbench.data import from_records

    df = pd.read_csv(shared_data / "ordinal" / "wine.csv")
    df["grade"], df["treatment"] = (df["rating"] - 1) / 4.0, df["temp"] + "/" + df["contact"]
    if binary:  # the same log with a pass mark: grade 4 or 5 passes
        df["grade"] = (df["rating"] >= 4).astype(float)
    return from_records(df, agent="treatment", task="bottle", score="grade", extra={"rating": "rating", "judge": "judge"},
                        agent_coords=["temp", "contact"])  # fmt: skip


def _graded_cells() -> xr.Dataset:
    """4 agents x 8 tasks x 3 runs of grades 1..5: design rows are cells, each with 3 runs' grade counts."""
    rng = np.random.default_rng(7)
    grades = np.clip(np.round(3 + rng.normal(0, 1.2, (4, 8, 3)) + np.array([-1, 0, 0, 1])[:, None, None]), 1, 5)
    return xr.Dataset({"rating": (("agent", "task", "run"), grades)},
                      coords={"agent": list("abcd"), "temp": ("agent", ["cold", "warm"] * 2)})  # fmt: skip


@pytest.fixture(scope="module")
def wine_fit(shared_data):
    ds = _wine(shared_data)
    return ds, bayes.fit(bayes.build_mixed(ds, _WINE, family="ordinal"), rng=3, log_likelihood=True, **_SMALL)


def _pymc_log_likelihood(data: xr.Dataset, formula: str, fit: xr.DataTree) -> xr.Dataset:
    """PyMC's own pointwise log-likelihood of the observed ``y`` at the fit's draws."""
    model = bayes.build_mixed(data, formula, family="ordinal")
    for rv in list(model.rvs_to_initial_values):  # a start value only: no log density reads it
        model.rvs_to_initial_values[rv] = None
    return pm.compute_log_likelihood(fit, model=model, var_names=["y"], extend_inferencedata=False, progressbar=False)


@pytest.mark.parametrize(
    "case", ["wine judges (run rows)", pytest.param("graded cells (3 runs a row)", marks=pytest.mark.slow)]
)
@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_hook_equals_pymc_logp_at_posterior_draws(case, wine_fit, shared_data):
    if case.startswith("wine"):
        data, formula, fit = wine_fit[0], _WINE, wine_fit[1]
    else:
        data, formula = _graded_cells(), "rating ~ temp + (1|task)"
        fit = bayes.fit(bayes.build_mixed(data, formula, family="ordinal"), rng=5, log_likelihood=True, **_SMALL)
    few = fit.isel(draw=[0, 37, 149])
    want = _pymc_log_likelihood(data, formula, few)["y"]
    got = few["log_likelihood"]["y"]  # one run at a time, y(obs), as observed_data
    assert got.dims == ("chain", "draw", "obs") and got.shape[2] == few["observed_data"]["y"].size
    if case.startswith("graded"):  # a cell's 3 runs sum to its multinomial log-likelihood less the coefficient
        model = bayes.build_mixed(data, formula, family="ordinal")
        counts = np.asarray(model.hierbench["design"].grade_counts)
        assert want.dims[-1] == "cell" and (counts.sum(1) == 3).all()
        assert {"obs_agent", "obs_task"} <= set(got.coords)  # each run traced to its cell (audit L, finding 11)
        got = got.reset_coords(drop=True).coarsen(obs=3).sum().rename(obs="cell").assign_coords(cell=want["cell"].values)
        got = got + gammaln(counts.sum(1) + 1.0) - gammaln(counts + 1.0).sum(1)  # log(3! / prod c_k!)
    row_dim = got.dims[-1]
    assert got.dims == want.dims and got.shape == want.shape
    np.testing.assert_array_equal(got[row_dim].values, want[row_dim].values)
    np.testing.assert_allclose(got.values, want.values, rtol=0, atol=1e-10)


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_loo_runs_on_an_ordinal_fit(wine_fit):
    """ArviZ's PSIS-LOO on the hook's group: a finite elpd over the 72 ratings, below the in-sample lppd."""
    fit = wine_fit[1]
    res = azs.loo(fit, var_name="y")
    assert np.isfinite(res.elpd) and res.n_data_points == 72
    ll = fit["log_likelihood"]["y"].values.reshape(-1, 72)
    lppd = float(np.sum(np.log(np.mean(np.exp(ll), axis=0))))
    assert res.elpd < lppd  # the leave-one-out estimate pays for the fit's effective parameters
    assert 0 < res.p < 30


@pytest.mark.slow
def test_compare_takes_ordinal_fits_of_the_same_ratings_and_refuses_a_binomial_of_pass_marks(wine_fit, shared_data):
    """Two ordinal fits of the wine ratings compare; a binomial fit of the same log made pass/fail
    predicts other observations (pass marks, not grades), so comparing its elpd would be meaningless:
    ``loo_compare`` refuses and says the observed values differ.
    """
    ds, full = wine_fit
    fewer = bayes.fit(bayes.build_mixed(ds, "rating ~ temp + (1|judge)", family="ordinal"), rng=4,
                      log_likelihood=True, **_SMALL)  # fmt: skip
    table = bayes.loo_compare({"temp + contact": full, "temp": fewer})
    assert set(table.index) == {"temp + contact", "temp"} and np.isfinite(table["elpd"]).all()
    passed = _wine(shared_data, binary=True)
    binom = bayes.fit(bayes.build_mixed(passed, "score ~ temp + contact + (1|judge)", family="binomial"), rng=4,
                      log_likelihood=True, **_SMALL)  # fmt: skip
    assert binom["log_likelihood"]["y"].shape == full["log_likelihood"]["y"].shape  # same 72 rows: shape alone passes
    with pytest.raises(ValueError, match="observed values") as err:
        bayes.loo_compare({"ordinal": full, "binomial": binom})
    assert "['binomial'] differ" in str(err.value) and "{'binomial': ['observed values']}" in str(err.value)


@pytest.mark.filterwarnings("ignore::hierbench.bayes.ApproximationWarning")
@pytest.mark.slow  # a compile or a fresh process: the fast lane stays under 2 minutes
def test_add_log_likelihood_and_fit_approx_use_the_hook_too(wine_fit):
    """The log-likelihood added later to a fit without one, and that of a variational fit, are PyMC's logp too."""
    ds, fit = wine_fit
    model = bayes.build_mixed(ds, _WINE, family="ordinal")
    bare = fit.copy()
    del bare["log_likelihood"]
    later = bayes.add_log_likelihood(bare, model)
    np.testing.assert_array_equal(later["log_likelihood"]["y"].values, fit["log_likelihood"]["y"].values)
    approx = bayes.fit_approx(model, n=500, draws=20, rng=2, log_likelihood=True)
    want = _pymc_log_likelihood(ds, _WINE, approx)["y"]
    np.testing.assert_allclose(approx["log_likelihood"]["y"].values, want.values, rtol=0, atol=1e-10)
