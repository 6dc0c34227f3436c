"""The demo's plan reads each pair's own SD only from pairs that share enough of the tasks (audit D3).

On METR's full log the least pair SD came from davinci-002 against gpt-3.5-turbo-instruct on 16 of
the plan's 76 tasks, both near 0, and the plan printed "14 tasks" to detect 0.03. The reference is
numpy over the pairs that share at least half the median pair's tasks.
"""

from __future__ import annotations

import itertools

import numpy as np
import xarray as xr

from hierbench.demo._context import DemoContext
from hierbench.demo._plan import _observed_paired_sd


def test_a_pair_on_few_shared_tasks_does_not_set_the_least_sd():
    g = np.random.default_rng(4)
    rate = g.uniform(0.2, 0.8, (4, 40))
    y = (g.random((4, 40, 3)) < rate[:, :, None]).astype(float)
    y[3, 8:] = np.nan  # "few" ran 8 of the 40 tasks ...
    y[3, :8] = 0.0  # ... and failed them, as did "low" on those tasks
    y[2, :8] = 0.0
    ds = xr.Dataset({"score": (("agent", "task", "run"), y)},
                    coords={"agent": ["a", "b", "low", "few"], "task": [f"t{i}" for i in range(40)]})  # fmt: skip
    sd, n_pairs, spread = _observed_paired_sd(DemoContext(ds, None))
    cell = np.nanmean(y, axis=2)
    var = [np.var(cell[i] - cell[j], ddof=1) for i, j in itertools.combinations(range(3), 2)]  # the 40-task pairs
    assert n_pairs == 3
    np.testing.assert_allclose([sd, *spread], [np.sqrt(np.mean(var)), *np.sqrt([min(var), np.median(var), max(var)])])
    # the pair "low" - "few" differs by 0 on its 8 shared tasks: with it the least SD was 0 (and no spread was given)
    assert spread[0] > 0.3
