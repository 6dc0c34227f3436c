"""fit(): samplers, stamped attrs, groups, no mutation, round trip through netCDF."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import warnings

import numpy as np
import pytest
import xarray as xr

import hierbench
from hierbench.bayes import ConvergenceWarning
from hierbench.bayes import build_beta_binomial
from hierbench.bayes import build_bradley_terry
from hierbench.bayes import build_crossed
from hierbench.bayes import data_hash
from hierbench.bayes import fit
from hierbench.bayes import fit_replicates
from hierbench.data import to_counts
from hierbench.testing import simulate_eval

GROUPS = {"posterior", "posterior_predictive", "observed_data", "constant_data", "log_likelihood", "sample_stats"}


@pytest.fixture(scope="module")
def tiny():
    data, _ = simulate_eval(n_agents=2, n_tasks=12, n_runs=3, p_missing_task=0.1, rng=4)
    return data


@pytest.fixture(scope="module")
def nutpie_fit(tiny):
    model = build_beta_binomial(tiny, pooling="none")
    before = {v.name: np.array(v.get_value()) for v in model.data_vars}
    names_before = sorted(model.named_vars)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        idata = fit(model, draws=300, tune=300, chains=2, rng=11, log_likelihood=True)
    return model, before, names_before, idata


@pytest.mark.slow
def test_groups_and_stamps(tiny, nutpie_fit):
    _, _, _, idata = nutpie_fit
    assert GROUPS <= set(idata.children)
    a = idata.attrs
    assert a["hierbench_model"] == "beta_binomial"
    assert a["sampler"] == "nutpie"
    assert a["hierbench_version"] == hierbench.__version__
    spec = json.loads(a["hierbench_spec"])
    assert spec["options"]["pooling"] == "none" and "mu" in spec["priors"]
    # data hash: sha256 of the count grids and labels, independent of the run layout
    assert a["hierbench_data_hash"] == data_hash(to_counts(tiny))
    assert len(a["hierbench_data_hash"]) == len(hashlib.sha256(b"").hexdigest())
    settings = json.loads(a["sampler_settings"])
    # every default resolved: target_accept is nutpie's own (no registered one for pooling="none"; audit S18, 7)
    assert settings == {"chains": 2, "draws": 300, "tune": 300, "init": "map", "draws_rule": "fixed",
                        "target_accept": 0.8}
    run = json.loads(a["fit_run"])
    assert run["rule"] == "fixed" and run["init"] in ("map", "support_point")
    assert "300 draws per chain (fixed)" in a["fit_notes"]
    # the rng that re-runs the fit, beside the sampler's seed drawn from it (the report once gave
    # only the latter as "fit seed": `hierbench fit --seed` with it draws another fit)
    assert a["rng_seed"] == 11
    assert a["seed"] == int(np.random.default_rng(11).integers(2**31 - 1))
    for key in ("diag_max_r_hat", "diag_min_ess_bulk", "diag_n_divergent", "diag_min_bfmi", "diag_converged"):
        assert key in a
    # observed cells only, labelled; the cells never run are counted, not dropped silently
    n = to_counts(tiny).n_runs.values
    ll = idata["log_likelihood"]["y"]
    assert ll.sizes["cell"] == int((n > 0).sum())
    assert a["n_cells_not_run"] == int((n == 0).sum())
    assert set(ll.coords["cell_agent"].values) == set(tiny.agent.values)
    post = idata["posterior"]
    assert post["ability"].attrs["scale"] == "probability"
    assert post.sizes["chain"] == 2 and post.sizes["draw"] == 300
    assert "diagnostics" in idata.children and "r_hat" in idata["diagnostics"].children
    assert not any(k.startswith("warmup") for k in idata.children)


@pytest.mark.slow
def test_fit_does_not_mutate_model(nutpie_fit):
    model, before, names_before, _ = nutpie_fit
    assert sorted(model.named_vars) == names_before
    for k, v in before.items():
        np.testing.assert_array_equal(model[k].get_value(), v)


@pytest.mark.slow
def test_netcdf_round_trip(tmp_path, nutpie_fit):
    _, _, _, idata = nutpie_fit
    path = tmp_path / "fit.nc"
    idata.to_netcdf(path)
    back = xr.open_datatree(path)
    assert back.attrs["hierbench_data_hash"] == idata.attrs["hierbench_data_hash"]
    xr.testing.assert_allclose(back["posterior"].to_dataset(), idata["posterior"].to_dataset())


@pytest.mark.slow
def test_same_rng_same_draws(tiny):
    model = build_beta_binomial(tiny, pooling="none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = fit(model, draws=50, tune=50, chains=1, rng=3, posterior_predictive=False, log_likelihood=False)
        b = fit(model, draws=50, tune=50, chains=1, rng=3, posterior_predictive=False, log_likelihood=False,
                prior_predictive=True)
    np.testing.assert_array_equal(a["posterior"]["mu"].values, b["posterior"]["mu"].values)
    assert "posterior_predictive" not in a.children and "log_likelihood" not in a.children
    # prior predictive check: the prior's histogram of per-cell successes covers every count
    from hierbench.bayes import predictive_check

    pc = predictive_check(b, group="prior_predictive")
    assert int(pc["observed"].sum()) == int(b["observed_data"]["y"].size)
    assert float(pc["predicted_mean"].sum()) == pytest.approx(float(pc["observed"].sum()))


@pytest.mark.slow
def test_pymc_sampler(tiny, monkeypatch):
    data, truth = simulate_eval(n_agents=3, n_tasks=20, n_runs=4, rng=8)
    # PyMC's NUTS compiles with fast-math off, as nutpie's log density does (fails before stop 44)
    seen = _fastmath_when_called(monkeypatch, ("sample",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        idata = fit(
            build_crossed(data), draws=200, tune=200, chains=2, rng=1, sampler="pymc", cores=1,
            log_likelihood=True,
        )
    assert seen == {"sample": False}
    assert idata.attrs["sampler"] == "pymc"
    assert GROUPS <= set(idata.children)
    assert "mean_observed" in idata["posterior"]
    # the crossed fit recovers the abilities roughly even from this little data
    est = idata["posterior"]["ability"].mean(("chain", "draw")).values
    assert np.corrcoef(est, (truth.mu + truth.agent_effect).values)[0, 1] > 0.5


def test_fit_argument_errors(tiny, monkeypatch):
    model = build_beta_binomial(tiny, pooling="none")
    with pytest.raises(TypeError, match=r"`model` must be a pymc\.Model from a hierbench builder; got dict"):
        fit({})
    bad = [
        ({"draws": 0}, r"`draws` must be an integer >= 1; got 0"),
        ({"chains": 1.5}, r"`chains` must be an integer >= 1; got 1\.5"),
        ({"sampler": "stan"}, r"`sampler` must be one of \('nutpie', 'pymc', 'numpyro'\); got 'stan'"),
        ({"target_accept": 1.2}, r"`target_accept` must satisfy 0 < target_accept < 1; got 1\.2"),
        ({"target_ess": -1}, r"`target_ess` must be a positive number; got -1"),
        ({"max_draws": 50}, r"`max_draws` must be an integer >= 100; got 50"),
        ({"init": "zero"}, r"`init` must be one of \('map', 'support_point'\); got 'zero'"),
        ({"cores": 1}, r"`cores` applies to a fixed number of draws only"),
    ]
    for kwargs, message in bad:
        with pytest.raises(ValueError, match=message):
            fit(model, **kwargs)
    # fit_replicates makes the same checks with the same words (it has no `sampler`: nutpie only)
    with pytest.raises(TypeError, match=r"`model` must be a pymc\.Model from a hierbench builder; got dict"):
        fit_replicates({}, [tiny])
    for kwargs, message in bad:
        if "sampler" not in kwargs:
            with pytest.raises(ValueError, match=message):
                fit_replicates(model, [tiny], **kwargs)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n in ("jax", "numpyro") else real(n, *a))
    with pytest.raises(ImportError, match=r"`sampler='numpyro'` needs the package\(s\) \['jax', 'numpyro'\]"):
        fit(model, sampler="numpyro")


@pytest.mark.slow
def test_import_hierbench_stays_light():
    import subprocess
    import sys

    code = "import sys, hierbench, hierbench.data, hierbench.freq; print('pymc' in sys.modules, 'pytensor' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"


@pytest.mark.slow
def test_fit_approx_carries_its_error(tiny, nutpie_fit, monkeypatch):
    from hierbench.bayes import ApproximationWarning
    from hierbench.bayes import fit_approx

    model = build_beta_binomial(tiny, pooling="none")
    _, _, _, nuts = nutpie_fit
    with pytest.warns(ApproximationWarning, match=r"approximate posterior \(advi\).*measured error"):
        ap = fit_approx(model, method="advi", n=3000, draws=500, rng=0, reference=nuts)
    assert ap.attrs["approximate"] == 1 and ap.attrs["method"] == "advi"
    err = ap["approximation_error"].to_dataset()
    # mean-field ADVI on this small model: sd within a factor 2 of NUTS, means within 1 sd
    assert 0.5 < float(err["mu_sd_ratio"]) < 2.0
    assert float(err["mu_mean_shift"]) < 1.0
    assert json.loads(ap.attrs["approx_error"])["source"].startswith("measured on this data")
    # without a reference the stored (or missing) measurement is quoted, never nothing
    with pytest.warns(ApproximationWarning):
        ap2 = fit_approx(model, n=500, draws=100, rng=0)
    assert "source" in json.loads(ap2.attrs["approx_error"])
    with pytest.raises(ValueError, match=r"`method` must be one of \('advi', 'fullrank_advi', 'pathfinder'\); got 'map'"):
        fit_approx(model, method="map")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "pymc_extras" else real(n, *a))
    with pytest.raises(ImportError, match="`method='pathfinder'` needs the package pymc-extras"):
        fit_approx(model, method="pathfinder")
    other = build_beta_binomial(simulate_eval(n_agents=2, n_tasks=5, n_runs=2, rng=0)[0], pooling="none")
    with pytest.raises(ValueError, match="`reference` must be a NUTS fit of the same data"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_approx(other, n=200, draws=50, rng=0, reference=nuts)


def test_the_default_tune_is_the_package_one_and_the_zoo_spec_says_so():
    # nutpie fits tune DEFAULT_TUNE steps whatever the model (no builder sets its own: the crossed
    # model's 150 did not pass SBC, models/crossed/card.md); an explicit tune wins; the other
    # samplers keep their 1,000; the zoo spec of the crossed model writes the same number
    import tomllib

    from conftest import ROOT

    from hierbench.bayes._sampler._fit import _settings
    from hierbench.bayes._sampler._sampling import DEFAULT_TUNE

    def tune(info, given=None, sampler="nutpie"):
        return _settings(info, sampler, None, given, 4, None, "map", 400, 2000, {})["tune"]

    assert tune({}, given=77) == 77
    assert tune({}, sampler="pymc") == 1000
    data = simulate_eval(n_agents=3, n_tasks=12, n_runs=2, rng=1)[0]
    spec = tomllib.loads((ROOT / "models" / "crossed" / "spec.toml").read_text())["sampler"]
    assert tune(build_crossed(data).hierbench) == spec["tune"] == DEFAULT_TUNE == 300


def _fastmath_when_called(monkeypatch, names) -> dict:
    """Wrap PyMC's entry points ``names`` to record PyTensor's numba fast-math flag when each runs."""
    import pymc as pm
    import pytensor

    seen = {}

    def recording(name):
        original = getattr(pm, name)

        def run(*args, **kwargs):
            seen[name] = bool(pytensor.config.numba__fastmath)
            return original(*args, **kwargs)

        return run

    for name in names:
        monkeypatch.setattr(pm, name, recording(name))
    assert pytensor.config.numba__fastmath  # PyTensor's default, which the fits must not use
    return seen


def test_the_groups_after_sampling_compile_as_the_model_does(citations_counts, monkeypatch):
    # the model's log density is compiled with PyTensor's numba fast-math off (bit-identical on
    # cold and warm caches); the log-likelihood and predictive groups must be compiled with the
    # same setting, so the kernels they share with the model are built and cached once. PyMC's
    # three entry points are wrapped to record the flag at the moment each one compiles.
    names = ("compute_log_likelihood", "sample_posterior_predictive", "sample_prior_predictive")
    seen = _fastmath_when_called(monkeypatch, names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # Bradley-Terry without ties has no hooks of its own for these groups: PyMC computes all three
        fit(build_bradley_terry(citations_counts, ties=None), draws=50, tune=50, chains=1, rng=3,
            log_likelihood=True, posterior_predictive=True, prior_predictive=True)  # fmt: skip
    assert seen == dict.fromkeys(names, False)


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_the_variational_fit_compiles_as_the_model_does(tiny, monkeypatch):
    # fit_approx's ADVI and its draws are compiled with fast-math off, as nutpie's log density
    # and the groups after sampling are (the same bits on cold and warm caches); the flag is
    # recorded at the moment PyMC's entry point runs
    import pytensor

    from hierbench.bayes import fit_approx

    seen = _fastmath_when_called(monkeypatch, ("fit",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_approx(build_beta_binomial(tiny, pooling="none"), n=200, draws=50, rng=0)
    assert seen == {"fit": False}
    assert pytensor.config.numba__fastmath  # restored after


@pytest.mark.slow  # two small crossed fits
def test_asking_for_the_prior_predictive_leaves_the_random_derived_quantities_as_they_were(tiny):
    """Audit U, finding 4: the prior predictive took its seed from the fit's stream before the crossed
    model's ``mean_observed`` (drawn after sampling from the same stream), so the same ``rng`` gave
    another ``mean_observed`` with ``prior_predictive=True``. Reference: the fit without it.
    """
    model = build_crossed(tiny)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {"draws": 50, "tune": 50, "chains": 2, "rng": 3, "posterior_predictive": False}
        a, b = fit(model, **kw), fit(model, prior_predictive=True, **kw)
    assert "prior_predictive" in b.children and "prior_predictive" not in a.children
    for name in a["posterior"].data_vars:
        np.testing.assert_array_equal(a["posterior"][name].values, b["posterior"][name].values, err_msg=name)
