"""benchmarks/sbc.py on a process pool: the serial study's records, written in replicate order.

Reference: the serial run of the same study (same seed): every record but its wall
time must match it, in the file as in the returned list. That serial study is run once
per module (``serial_study``) and read by the pool test and by the stale test.
"""

from __future__ import annotations

import copy
import json
import multiprocessing
import warnings
from concurrent.futures import ProcessPoolExecutor

import pytest


@pytest.fixture(scope="module")
def serial_study(tmp_path_factory):
    """``sbc.run`` of beta_binomial/small, 4 replicates, seed 5, 2 chains, here: (records, its file)."""
    import sbc

    path = tmp_path_factory.mktemp("sbc") / "serial.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recs = sbc.run(["beta_binomial"], ["small"], 4, str(path), seed=5, chains=2)
    return recs, path


@pytest.mark.slow
def test_sbc_run_on_a_spawned_pool_with_warm_workers_writes_the_serial_records(serial_study, tmp_path):
    import sbc

    def strip(recs):
        return [{k: v for k, v in r.items() if k != "wall"} for r in recs]

    kw = {"seed": 5, "chains": 2}
    serial = serial_study[0]  # the same study run here: sbc.run(..., 4, seed=5, chains=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
            pooled = sbc.run(["beta_binomial"], ["small"], 4, str(tmp_path / "pool.jsonl"), executor=pool, warm=2, **kw)
    written = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert [r["rep"] for r in written] == [0, 1, 2, 3]
    assert strip(pooled) == strip(serial)
    assert strip(written) == strip(serial)
    assert {r["study"]["seed"] for r in written} == {5} and {r["study"]["reps"] for r in written} == {4}


@pytest.mark.slow
def test_stale_replays_a_study_and_names_what_changed_in_one_that_other_code_made(serial_study, tmp_path):
    """Reference: a study just written by this code replays (every replayed record the same);
    the same study with one rank moved and its ``study`` removed (as in the records of older
    code: seed, count and settings then read off the file and its records) is stale at that
    replicate and field.
    """
    import sbc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a study just written by this code: the module's, seed 5, 4 replicates (copied: changed below)
        recs, now = copy.deepcopy(serial_study[0]), serial_study[1]
        rows = sbc.stale([str(now)], first=2)
        assert [(r["replayed"], r["same"], r["first_difference"]) for r in rows] == [(2, 2, None)]
        # a resumed study's file (--start-rep 2) replays its own first records, not replicates 0-1
        resumed = tmp_path / "resumed.jsonl"
        resumed.write_text("".join(json.dumps(r) + "\n" for r in recs[2:]))
        assert [(r["replayed"], r["same"]) for r in sbc.stale([str(resumed)], first=2)] == [(2, 2)]
        param = next(iter(recs[1]["ranks"]))
        recs[1]["ranks"][param] += 1
        old = tmp_path / "old_seed5.jsonl"
        old.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "study"}) + "\n" for r in recs))
        (row,) = sbc.stale([str(old)], first=2)
    assert (row["seed"], row["reps"], row["replayed"], row["same"]) == (5, 4, 2, 1)
    assert row["first_difference"].startswith("ranks: stored")


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_the_study_functions_reach_a_worker_that_cannot_import_the_script(tmp_path):
    """A worker started on its own (``dask worker``) has neither benchmarks/ on its path nor
    the study as ``__main__``: what the study ships it must load and run there.
    Reference: the same calls in this process.
    """
    import os
    import subprocess
    import sys
    from pathlib import Path

    import cloudpickle
    import sbc

    cloudpickle.register_pickle_by_value(sbc)  # as the study's executor does
    try:
        (tmp_path / "shipped.pkl").write_bytes(cloudpickle.dumps((sbc.template, sbc._template_cells)))
    finally:
        cloudpickle.unregister_pickle_by_value(sbc)
    worker = (
        "import json, pickle, sys\n"
        "template, cells = pickle.load(open(sys.argv[1], 'rb'))\n"
        "first = cells('crossed', 'small', 'null')\n"
        "print(json.dumps({'same': cells('crossed', 'small', 'null') is first,\n"
        "                  'n': int(first[0]['n_success'].sum()), 'cells': len(first[1]),\n"
        "                  'agents': int(template('crossed', 'small').sizes['agent'])}))\n"
    )
    root = str(Path(__file__).resolve().parents[1])  # hierbench importable, benchmarks/ not
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run(
        [sys.executable, "-c", worker, str(tmp_path / "shipped.pkl")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    cnt, ai, _ = sbc._template_cells("crossed", "small", "null")
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"same": True, "n": int(cnt["n_success"].sum()), "cells": len(ai),
                   "agents": int(sbc.template("crossed", "small").sizes["agent"])}  # fmt: skip
