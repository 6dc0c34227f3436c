"""The demo's pair table prints each pair's own p-value, which its Bayes note sends the reader to (audit U, finding 3).

The expected p-value is an exact sign-flip test enumerated here over all 2^9 sign patterns of
the per-task differences, apart from the package's test code.
"""

import itertools
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench.demo import DemoContext
from hierbench.demo._pairs import _compare_section


def _t(x: np.ndarray) -> float:
    return float(x.mean() / (x.std(ddof=1) / np.sqrt(x.size)))


def test_the_pair_table_prints_each_pairs_own_sign_flip_p_value():
    rng = np.random.default_rng(3)
    s = rng.uniform(0, 1, (3, 9, 1))
    s[0] = np.clip(s[0] + 0.25, 0, 1)
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)},
                    coords={"agent": ["a", "b", "c"], "task": [f"t{i}" for i in range(9)]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = _compare_section(DemoContext(ds, None, extra={"seed": 0, "out": None}))
    lines = text.splitlines()
    header = next(r for r in lines if "p (permutation)" in r)
    # the own p-value sits after the simultaneous verdict, as the report's table has it
    assert header.index("differ (") < header.index("p (permutation)")
    end = header.index("p (permutation)") + len("p (permutation)")  # pandas right-aligns a column under its name
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=9)))
    for a, b in (("a", "b"), ("a", "c"), ("b", "c")):
        i, j = "abc".index(a), "abc".index(b)
        d = s[i, :, 0] - s[j, :, 0]
        # studentized sign-flip p-value, exact: the share of the 512 patterns at least as extreme
        p = float(np.mean([abs(_t(d * sg)) >= abs(_t(d)) - 1e-12 for sg in signs]))
        row = next(r for r in lines if r.startswith(f"{a} - {b} "))
        assert float(row[:end].split()[-1]) == pytest.approx(p, abs=5.01e-4), (a, b)
    assert float(next(r for r in lines if r.startswith("a - b "))[:end].split()[-1]) == pytest.approx(96 / 512, abs=5.01e-4)
