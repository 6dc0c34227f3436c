"""benchmarks/sbc.py on a process pool: the serial study's records, written in replicate order.

Reference: the serial run of the same study in the same test (same seed): every
record but its wall time must match it, in the file as in the returned list.
"""

from __future__ import annotations

import json
import multiprocessing
import warnings
from concurrent.futures import ProcessPoolExecutor

import pytest


@pytest.mark.slow
def test_sbc_run_on_a_spawned_pool_with_warm_workers_writes_the_serial_records(tmp_path):
    import sbc

    def strip(recs):
        return [{k: v for k, v in r.items() if k != "wall"} for r in recs]

    kw = {"seed": 5, "chains": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        serial = sbc.run(["beta_binomial"], ["small"], 4, str(tmp_path / "serial.jsonl"), **kw)
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
            pooled = sbc.run(["beta_binomial"], ["small"], 4, str(tmp_path / "pool.jsonl"), executor=pool, warm=2, **kw)
    written = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert [r["rep"] for r in written] == [0, 1, 2, 3]
    assert strip(pooled) == strip(serial)
    assert strip(written) == strip(serial)
