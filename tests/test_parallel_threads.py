"""Thread pools and the pieces that set process-wide state (warning filters, BLAS limits)."""

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import xarray as xr

from hierbench._parallel import map_seeded
from hierbench.design import assisted_adaptive


def _draw(scale, gen):
    return float(scale * gen.standard_normal())


def test_map_seeded_warns_on_a_thread_pool_only_for_pieces_that_are_not_thread_safe():
    with ThreadPoolExecutor(2) as pool:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a thread-safe map on a thread pool says nothing
            quiet = map_seeded(_draw, [1.0, 2.0], rng=4, executor=pool)
        with pytest.warns(UserWarning, match=r"thread pool.*\(fits\).*once per process.*process pool"):
            loud = map_seeded(_draw, [1.0, 2.0], rng=4, executor=pool, desc="fits", thread_safe=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # run here, in order: no thread pool, no warning
        serial = map_seeded(_draw, [1.0, 2.0], rng=4, desc="fits", thread_safe=False)
    assert quiet == loud == serial  # the warning is about warnings: the numbers are a serial run's


def test_a_study_whose_pieces_limit_blas_threads_warns_on_a_thread_pool_and_matches_the_serial_run():
    # assisted_adaptive's pieces run under threadpool_limits, which is process-wide
    g = np.random.default_rng(0)
    m = xr.DataArray(g.uniform(0.2, 0.8, 60), dims="task", coords={"task": [f"t{i}" for i in range(60)]})
    y = (g.random((2, 60)) < m.values).astype(float)
    logs = xr.DataArray(y[:, :, None], dims=("agent", "task", "run"),
                        coords={"agent": ["a", "b"], "task": m.task})  # fmt: skip
    serial = assisted_adaptive(m, logs, n_tasks=20, rng=1)
    with ThreadPoolExecutor(2) as pool, pytest.warns(UserWarning, match=r"thread pool.*\(agents\)"):
        pooled = assisted_adaptive(m, logs, n_tasks=20, rng=1, executor=pool)
    xr.testing.assert_identical(serial.estimate, pooled.estimate)
    xr.testing.assert_identical(serial.ci, pooled.ci)
