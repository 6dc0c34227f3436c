"""The cached nutpie build computes what nutpie's own build computes, and falls back when it cannot.

The reference is ``nutpie.compile_pymc_model`` of the same model (fast-math
off, as :func:`hierbench.bayes._sampler._sampling.compile_model` builds): its log
density, gradient, expansion and seeded draws must be the same to the bit.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor
import pytest
from conftest import ROOT

from hierbench.bayes._sampler import _compiled
from hierbench.bayes._sampler import _nutpie_build
from hierbench.bayes._sampler import _sampling

_PTR = ctypes.POINTER(ctypes.c_double)


def _model(y, x):
    with pm.Model(coords={"obs": np.arange(len(y))}) as m:
        yd = pm.Data("y", np.asarray(y, dtype=float), dims="obs")
        xd = pm.Data("x", np.asarray(x, dtype=float), dims="obs")
        b = pm.Normal("b", 0.0, 1.0)
        s = pm.HalfNormal("s", 1.0)
        pm.Deterministic("b2", 2.0 * b)
        pm.Normal("obs_y", b * xd, s, observed=yd, dims="obs")
    return m


def _data(seed, n=12):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    return rng.normal(0.7 * x, 0.5), x


def _nutpie(model):
    import nutpie

    with pytensor.config.change_flags(numba__fastmath=False):
        return nutpie.compile_pymc_model(model, backend="numba")


def _ours(model):
    with pytensor.config.change_flags(numba__fastmath=False):
        compiled, reason = _nutpie_build.build(model)
    assert reason is None
    return compiled


def _logp(c, x):
    grad, logp = np.empty(c.n_dim), np.empty(())
    ptrs = (x.ctypes.data_as(_PTR), grad.ctypes.data_as(_PTR), logp.ctypes.data_as(_PTR))
    rc = c.compiled_logp_func.ctypes(c.n_dim, *ptrs, c.user_data.ctypes.data)
    return rc, float(logp), grad


def _expand(c, x):
    out = np.empty(c.n_expanded)
    ptrs = (x.ctypes.data_as(_PTR), out.ctypes.data_as(_PTR))
    rc = c.compiled_expand_func.ctypes(c.n_dim, c.n_expanded, *ptrs, c.user_data.ctypes.data)
    return rc, out


def _same(ours, theirs, points):
    for x in points:
        rc, lp, g = _logp(ours, x)
        rc0, lp0, g0 = _logp(theirs, x)
        assert (rc, lp) == (rc0, lp0)
        np.testing.assert_array_equal(g, g0)
        np.testing.assert_array_equal(_expand(ours, x)[1], _expand(theirs, x)[1])


@pytest.fixture(scope="module")
def both_builds():
    """Our cached build and nutpie's own of one small model, built once for the two tests that compare them."""
    model = _model(*_data(1))
    return _ours(model), _nutpie(model)


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_cached_build_computes_what_nutpies_build_computes(both_builds):
    ours, theirs = both_builds
    assert (ours.n_dim, ours.n_expanded, ours.shapes) == (theirs.n_dim, theirs.n_expanded, theirs.shapes)
    assert ours.dims == theirs.dims
    assert {k: list(v) for k, v in ours.coords.items()} == {k: list(v) for k, v in theirs.coords.items()}
    points = [np.random.default_rng(i).normal(size=ours.n_dim) for i in range(5)]
    _same(ours, theirs, points)
    # out of the support: the same return code (a non-finite log density is 4 or 3)
    _same(ours, theirs, [np.array([0.0, 800.0])])
    # the data swapped in (what a stored build is given for another model of the design)
    y2, x2 = _data(2)
    _same(_compiled.with_values(ours, {"y": y2, "x": x2}), _compiled.with_values(theirs, {"y": y2, "x": x2}),
          points)  # fmt: skip
    assert _logp(_compiled.with_values(ours, {"y": y2, "x": x2}), points[0])[1] != _logp(ours, points[0])[1]


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_a_model_at_another_size_loads_the_same_kernel_and_computes_what_nutpie_does():
    # the sizes are data (hierbench.bayes._sampler._nutpie_build._layout), so the second size's wrappers
    # are the first's, loaded from the disk cache (numba counts a hit), and still compute what
    # nutpie's own build (sizes written into its graph) computes at that size
    _ours(_model(*_data(4, n=12)))
    model = _model(*_data(5, n=17))
    ours, theirs = _ours(model), _nutpie(model)
    assert (ours.compiled_logp_func.cache_hits, ours.compiled_expand_func.cache_hits) == (1, 1)
    assert (ours.n_dim, ours.n_expanded, ours.shapes) == (theirs.n_dim, theirs.n_expanded, theirs.shapes)
    _same(ours, theirs, [np.random.default_rng(i).normal(size=ours.n_dim) for i in range(3)])


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_crossed_kernel_holds_no_size():
    # the crossed model's sizes (tasks, agents, clusters, cells) reach its graph as data only:
    # PyTensor's cache key of the log density and of the expansion is the same at two sizes
    from hierbench.bayes import build_crossed
    from hierbench.testing import simulate_eval

    keys = []
    for m, t in ((4, 30), (5, 33)):
        data = simulate_eval(n_agents=m, n_tasks=t, n_runs=3, n_clusters=5, sd_cluster=0.5, rng=1)[0]
        with pytensor.config.change_flags(numba__fastmath=False):
            fns = _nutpie_build._functions(build_crossed(data))
        keys.append((_nutpie_build._kernel_key(fns[2]), _nutpie_build._kernel_key(fns[3])))
    assert None not in keys[0] and keys[0] == keys[1]


@pytest.mark.slow
def test_cached_build_draws_what_nutpies_build_draws(both_builds):
    import nutpie

    ours, theirs = both_builds  # the builds the test above compares point by point
    kw = dict(chains=2, draws=60, tune=60, seed=11, progress_bar=False)
    a = nutpie.sample(ours, **kw)
    b = nutpie.sample(theirs, **kw)
    for name in ("b", "s", "b2"):
        np.testing.assert_array_equal(a.posterior[name].values, b.posterior[name].values, err_msg=name)


@pytest.mark.slow
def test_compile_model_falls_back_to_nutpie_and_says_why_when_the_wrapper_fails(monkeypatch):
    model = _model(*_data(4))

    def broken(*args, **kwargs):
        raise OSError("disk on fire")

    monkeypatch.setattr(_nutpie_build, "_cached_cfunc", broken)
    with pytest.warns(RuntimeWarning, match="cached nutpie build failed.*disk on fire"):
        compiled = _sampling.compile_model(model)
    assert type(compiled.compiled_logp_func).__name__ == "CFunc"
    assert all(len(k) == 32 for k in compiled.shared_var_keys.values())  # nutpie's own (uuid) keys
    assert _logp(compiled, np.zeros(compiled.n_dim))[0] == 0


def test_compile_model_falls_back_quietly_where_the_cache_is_off(monkeypatch):
    # the routing only: nutpie's own build is stood in for by a marker (that build itself is
    # checked against ours above, and compiled for real where the wrapper fails)
    import nutpie

    model, marker, calls = _model(*_data(5)), object(), []
    monkeypatch.setattr(nutpie, "compile_pymc_model", lambda m, **kw: calls.append((m, kw)) or marker)
    with pytensor.config.change_flags(numba__cache=False):
        assert "numba__cache=False" in _nutpie_build.unusable()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compiled, how = _sampling.compile_and_say(model)
    assert compiled is marker and calls == [(model, {"backend": "numba"})]
    assert how == "nutpie's own path (PyTensor's numba cache is off (numba__cache=False))"  # the fit's record


_BUILD = """
import glob, json, os, sys, warnings, numpy as np, pytensor
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[2])
from test_bayes_build_cache import _model, _data, _logp, _expand
from hierbench.bayes._sampler import _nutpie_build


def small_build():
    with pytensor.config.change_flags(numba__fastmath=False):
        c, reason = _nutpie_build.build(_model(*_data(6)))
    x = np.linspace(-0.5, 0.5, c.n_dim)
    rc, lp, g = _logp(c, x)
    return {"hits": [c.compiled_logp_func.cache_hits, c.compiled_expand_func.cache_hits],
            "reason": str(reason), "logp": lp, "grad": g, "expand": _expand(c, x)[1]}


out = small_build()
# the small model's cache entries (before the crossed fit adds its own)
small = sorted(glob.glob(os.path.join(pytensor.config.base_compiledir, "numba", "*hierbench_*")))
# a seeded crossed fit: its kernels compiled here or loaded from the cache
from hierbench.testing import simulate_eval
from hierbench.bayes import build_crossed, fit
data, _ = simulate_eval(4, 40, 3, rng=0)
# the crossed model without task clusters: the cluster terms (until this stop the clustered
# kernels without the agent x cluster term; before stop 55 with it) add 10-15 s each of cold
# compiling and nothing to what is checked (the cache, not the model; the likelihood and task
# effects, pm.CustomDists, are here as in every crossed fit)
model = build_crossed(data)
dt = fit(model, draws=100, tune=100, chains=2, rng=3, progress=False, posterior_predictive=False)
draws = {f"draw_{v}": dt["posterior"][v].values for v in dt["posterior"].data_vars}
draws["fit_build"] = np.array(json.loads(dt.attrs["fit_run"])["build"])
if sys.argv[3] == "garbage":  # the small model's entries overwritten, then the small model built anew
    for path in small:
        with open(path, "wb") as f:
            f.write(b"not a cache entry")
    draws.update({f"again_{k}": v for k, v in small_build().items()})
np.savez(sys.argv[1], small=np.array(small), **out, **draws)
"""


@pytest.mark.slow
def test_fresh_processes_load_what_they_stored_draw_the_same_and_rebuild_an_unreadable_entry(tmp_path):
    # fresh processes on caches that start empty (numba's and PyTensor's base compile directory):
    # 0 compiles and stores the two C wrappers of a small model, then compiles a seeded crossed
    # fit's kernels into the cache; 1 loads both (numba counts a cache hit) and must draw what 0
    # drew (issue 24 item 6: a crossed fit once drew chains about 1e-11 apart when its kernels
    # were compiled rather than loaded); then 1 overwrites the small model's entries with garbage
    # and builds the model again: its wrappers compiled again (no hit), the same to the bit, and
    # stored again. Every build's log density and gradient must be nutpie's own build's, made
    # here. (Until stop 43 the cold fit ran in a process of its own and the warm one beside the
    # garbage; until this stop nutpie's build was made in the cold process 0 and the garbage
    # was rebuilt in a third process, started only for it: the same checks, one process and one
    # cold compile more.)
    model = _model(*_data(6))
    theirs = _nutpie(model)
    x = np.linspace(-0.5, 0.5, theirs.n_dim)  # the point the script evaluates
    _, ref_logp, ref_grad = _logp(theirs, x)
    script = tmp_path / "build.py"
    script.write_text(_BUILD)
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"),
               PYTENSOR_FLAGS=f"base_compiledir={tmp_path / 'pytensor_base'}")  # fmt: skip

    def run(i, what):
        path = tmp_path / f"out{i}.npz"
        subprocess.run([sys.executable, str(script), str(path), str(ROOT / "tests"), what],
                       env=env, check=True, timeout=900)  # fmt: skip
        out = np.load(path)
        assert str(out["reason"]) == "None"
        assert out["logp"] == ref_logp
        np.testing.assert_array_equal(out["grad"], ref_grad)
        return out

    cold = run(0, "cold")
    assert list(cold["hits"]) == [0, 0]
    small = [Path(p) for p in cold["small"]]
    assert len(small) == 4  # an index and a data file per wrapper
    warm = run(1, "garbage")
    assert list(warm["hits"]) == [1, 1]
    # the crossed fit's wrappers: compiled by 0, loaded by 1, and the same draws
    assert str(cold["fit_build"]).endswith("compiled and stored in the disk cache"), cold["fit_build"]
    assert str(warm["fit_build"]).endswith("loaded from the disk cache"), warm["fit_build"]
    drawn = [k for k in cold.files if k.startswith("draw_")]
    assert drawn and drawn == [k for k in warm.files if k.startswith("draw_")]
    for k in drawn:
        np.testing.assert_array_equal(cold[k], warm[k], err_msg=k)
    # 1 then overwrote the small model's entries with garbage and built the model again
    assert str(warm["again_reason"]) == "None"
    assert list(warm["again_hits"]) == [0, 0]  # the garbage was not loaded: compiled again ...
    assert warm["again_logp"] == ref_logp
    np.testing.assert_array_equal(warm["again_grad"], ref_grad)
    np.testing.assert_array_equal(warm["again_expand"], cold["expand"])
    assert all(path.read_bytes() != b"not a cache entry" for path in small)  # ... and stored again
