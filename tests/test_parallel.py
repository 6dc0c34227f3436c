"""map_seeded's results as they come: in order, without a barrier, and no work left running after a failure.

References: the serial run of the same pieces (the results and the order of the
callbacks must match it on a pool whatever order the pieces finish in), and
counts of the pieces that ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from hierbench import map_seeded


def _slow_first(delay, gen):
    # piece i sleeps `delay`: the earlier pieces finish last on a pool
    time.sleep(delay)
    return float(gen.standard_normal())


def test_on_result_sees_every_piece_in_order_with_the_serial_results():
    delays = [0.3, 0.2, 0.1, 0.0, 0.0]
    seen_serial: list = []
    serial = map_seeded(_slow_first, delays, rng=5, on_result=lambda i, r: seen_serial.append((i, r)))
    seen_pool: list = []
    finished: list = []

    def logged(d, g):
        out = _slow_first(d, g)
        finished.append(d)
        return out

    with ThreadPoolExecutor(5) as pool:
        pooled = map_seeded(logged, delays, rng=5, executor=pool, on_result=lambda i, r: seen_pool.append((i, r)))
    assert finished[0] == 0.0 and finished[-1] == 0.3  # the pieces finished out of order
    assert seen_serial == list(enumerate(serial))
    assert seen_pool == list(enumerate(serial))
    assert pooled == serial


def test_on_result_runs_while_later_pieces_still_run():
    # piece 1 waits for the callback of piece 0: a map that held the results back until
    # every piece was done (a barrier) would leave it waiting until its timeout (False)
    emitted = threading.Event()

    def piece(i, gen):
        return True if i == 0 else emitted.wait(timeout=20)

    with ThreadPoolExecutor(2) as pool:
        out = map_seeded(piece, [0, 1], rng=0, executor=pool, on_result=lambda i, r: emitted.set())
    assert out == [True, True]


def test_a_failed_piece_cancels_the_pieces_not_started():
    # one worker: piece 0 fails at once, the other 9 take 0.5 s each; without the
    # cancellation all 9 would run before the pool closed; with it at most the one
    # the worker had already picked up
    ran = []

    def piece(i, gen):
        if i == 0:
            raise ValueError("piece 0 fails")
        time.sleep(0.5)
        ran.append(i)

    with ThreadPoolExecutor(1) as pool, pytest.raises(ValueError, match="piece 0 fails"):
        map_seeded(piece, range(10), rng=0, executor=pool)
    assert len(ran) <= 1, ran


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux CPU affinity and two cores")  # fmt: skip
@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_thread_counts_follow_the_process_cpu_set_not_the_machine():
    # a child confined to one core (as under `taskset -c 0` or a one-CPU container) must
    # size its thread pools for that core, although the machine has more
    code = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))});"
        "from hierbench._parallel import available_cores;"
        "from hierbench.freq._glmm import _quadrature as q;"
        "print(available_cores(), q._pool()._max_workers, os.cpu_count())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    cores, pool, machine = map(int, out.stdout.split())
    assert (cores, pool) == (1, 1)
    assert machine >= 2  # the machine count the old code used would have said otherwise


def test_a_generators_children_follow_its_state_and_its_stream_moves_on():
    """Audit U, finding 1: the children of a Generator were its SeedSequence's (``Generator.spawn``), so two
    Generators in the same state (numpy's jumped() streams, a restored state) gave different children, and
    1,000 earlier draws changed nothing. Reference: numpy's own contract, a stream is fixed by its state.
    """
    import numpy as np

    from hierbench import spawn_generators

    def first(gen):
        return [float(c.random()) for c in spawn_generators(gen, 3)]

    jumped = [np.random.Generator(np.random.PCG64(0).jumped()) for _ in range(2)]
    assert jumped[0].bit_generator.state == jumped[1].bit_generator.state
    assert first(jumped[0]) == first(jumped[1])  # the same state: the same children
    restored = np.random.default_rng()
    restored.bit_generator.state = np.random.default_rng(0).bit_generator.state
    assert first(restored) == first(np.random.default_rng(0))
    used = np.random.default_rng(0)
    used.random(1000)
    assert first(used) != first(np.random.default_rng(0))  # another state, other children
    g, ref = np.random.default_rng(0), np.random.default_rng(0)
    spawn_generators(g, 3)
    ref.integers(0, 2**63, size=4, dtype=np.uint64)  # the four draws the split takes
    assert g.random() == ref.random()  # the user's stream moved on by exactly those
    kids = first(np.random.default_rng(0))
    assert len(set(kids)) == 3  # independent children
