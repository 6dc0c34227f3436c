"""Models sent to another process: a pool's or a Dask worker's (``fit_replicates(executor=...)``).

A worker unpickles the model in a fresh process, where PyMC has not registered
the log densities of the model's ``pm.CustomDist`` classes (the crossed model's
likelihood and task effects, the ordinal and fractional likelihoods). Reference:
the model's log density at its initial point in this process, evaluated by
PyTensor's Python linker in both processes (no compile on either side).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from hierbench import bayes
from hierbench.bayes._sampler._shipping import ship
from hierbench.testing import simulate_eval

_RECEIVER = """
import json, sys
from hierbench.bayes._sampler._shipping import unship
out = []
for path in sys.argv[1:]:
    model = unship(open(path, "rb").read())
    f = model.compile_logp(mode="FAST_COMPILE")
    out.append(float(f(model.initial_point())))
print(json.dumps(out))
"""


def _graded(fractional: bool) -> xr.Dataset:
    rng = np.random.default_rng(0)
    u = rng.random((4, 10, 2))
    score = np.where(u < 0.3, 0.0, np.where(u > 0.8, 1.0, u)) if fractional else rng.integers(1, 5, u.shape) * 1.0
    return xr.Dataset({"score": (("agent", "task", "run"), score)},
                      coords={"agent": list("abcd"), "task": [f"t{i}" for i in range(10)]})  # fmt: skip


@pytest.mark.slow  # a compile or a fresh process: the fast lane stays under 2 minutes
def test_a_fresh_process_gets_the_models_log_density(tmp_path):
    data, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=1)
    models = [
        bayes.build_crossed(data),
        bayes.build_mixed(_graded(False), "score ~ (1|agent) + (1|task)", family="ordinal"),
        bayes.build_mixed(_graded(True), "score ~ 0 + agent + (1|task)", family="fractional"),
    ]
    paths = []
    for i, model in enumerate(models):
        paths.append(tmp_path / f"m{i}.pkl")
        paths[-1].write_bytes(ship(model))
    here = [float(m.compile_logp(mode="FAST_COMPILE")(m.initial_point())) for m in models]
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", _RECEIVER, *map(str, paths)], cwd=tmp_path,
                         env={"PYTHONPATH": root, "PATH": ""}, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    there = json.loads(out.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(there, here, rtol=1e-12)
    assert all(np.isfinite(here))
