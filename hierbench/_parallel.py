"""Independent work spread over an executor, with the same answer whatever runs it.

Every function that repeats independent work (simulation-based calibration,
replicate fits, leave-one-agent-out folds, coverage and power simulations,
the replay) takes ``executor=`` and ``rng=`` and calls :func:`map_seeded`.
Each piece of work gets its own seed, spawned from the user's ``rng`` before
anything runs, so the results are bit-identical serially, on a process pool
or on a Dask cluster, and whatever the number of workers.

``executor`` is anything with the :class:`concurrent.futures.Executor`
interface: ``None`` runs in this process, one piece after another; a
``concurrent.futures.ProcessPoolExecutor``; a Dask ``Client.get_executor()``;
Ray's ``ray.util.multiprocessing`` pool wrapped as an executor. The function
and its arguments must then be picklable (a module-level function).

The documented route is Dask (``pip install "dask[distributed]"``): a
``LocalCluster`` on one machine, a scheduler's address beyond it. Give each
worker one thread when the work runs threads of its own (a Bayesian fit runs
its chains on threads)::

    from dask.distributed import Client, LocalCluster
    from hierbench.bayes import build_crossed, fit_replicates

    with LocalCluster(n_workers=8, threads_per_worker=1) as cluster, Client(cluster) as client:
        fits = fit_replicates(build_crossed(data), replicates, rng=0,
                              executor=client.get_executor())
    # or Client("tcp://scheduler:8786") for a cluster already running

Dask starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (freed memory
handed back to the system at once); fits allocate and free much, and SBC
replicates of a small crossed model spent a fifth of their CPU in the kernel
with it. Work that holds little memory does better with malloc's default, set
before the cluster starts::

    import dask
    dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None})

A thread pool runs the pieces in this process: the package's studies and
fits warn when given one (``warn_threads``), since Python keeps warning
filters once per process. A process pool works the same way; start it with
``mp_context=multiprocessing.get_context("spawn")`` (a forked child inherits
the parent's running threads, such as a sampler's).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from collections.abc import Iterable
from typing import Any

import numpy as np

from ._base import Progress
from ._base import warn_user

__all__ = ["available_cores", "check_executor", "map_seeded", "spawn_generators", "warn_threads"]


def available_cores() -> int:
    """The cores this process may run on: its CPU affinity (a ``taskset`` or a container's CPU set).

    ``os.cpu_count()`` counts the machine's; a process confined to fewer that starts
    a thread per machine core runs them crowded. Every thread count in the package
    is taken from here.
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def state_seed(gen: np.random.Generator) -> np.random.SeedSequence:
    """A :class:`numpy.random.SeedSequence` from four draws of ``gen``: its state decides it, and ``gen`` moves on."""
    return np.random.SeedSequence([int(v) for v in gen.integers(0, 2**63, size=4, dtype=np.uint64)])


def spawn_generators(rng: None | int | np.random.Generator, n: int) -> list[np.random.Generator]:
    """``n`` independent Generators spawned from the user's ``rng``.

    An int (or ``None``) seeds a :class:`numpy.random.SeedSequence` whose
    children seed the Generators. A Generator gives four draws that seed the
    sequence: the children follow the Generator's state (a saved and restored
    state, or a ``jumped()`` stream, gives the same children) and its stream
    moves on, as with any use. (:meth:`numpy.random.Generator.spawn` would
    read the sequence the Generator was built from and ignore its state.)
    Child ``i`` is the same whatever happens to the others.

    Examples
    --------
    >>> a = [g.integers(100) for g in spawn_generators(7, 3)]
    >>> b = [g.integers(100) for g in spawn_generators(7, 3)]
    >>> a == b
    True
    """
    n = int(n)
    if isinstance(rng, np.random.Generator):
        return [np.random.default_rng(s) for s in state_seed(rng).spawn(n)]
    if isinstance(rng, (bool, np.bool_)) or not (rng is None or isinstance(rng, (int, np.integer))):
        raise TypeError(
            f"`rng` must be None, an int seed or a numpy Generator; got {type(rng).__name__}"
        )
    if rng is not None and int(rng) < 0:
        raise ValueError(f"`rng` seed must be a non-negative int; got {rng!r}")
    return [np.random.default_rng(s) for s in np.random.SeedSequence(rng).spawn(n)]


def check_executor(executor: Any, name: str = "executor") -> Any:
    """``executor`` if it is None or has ``submit`` (the Executor interface), else a TypeError."""
    if executor is None or callable(getattr(executor, "submit", None)):
        return executor
    raise TypeError(
        f"`{name}` must be None (run here) or a concurrent.futures.Executor (a process pool, "
        f"a Dask Client.get_executor(), ...); got {type(executor).__name__}"
    )


def warn_threads(executor: Any, desc: str) -> None:
    """Warn when ``executor`` runs its pieces on threads of this process (a thread pool).

    Warning filters (``warnings.catch_warnings``, before Python 3.14) and BLAS
    thread limits are one per process, not per thread: pieces that set them
    while others run can lose a warning, report it from another piece, or run
    with another's BLAS threads. Every result keeps its own seed, so the numbers
    are those of a serial run; the warnings are what a thread pool can get
    wrong. Dask workers with one thread each and process pools run each piece
    in a process of its own.
    """
    from concurrent.futures import ThreadPoolExecutor

    if isinstance(executor, ThreadPoolExecutor):
        warn_user(
            f"`executor` is a thread pool, and the pieces of this work ({desc}) set warning filters "
            "or BLAS thread limits, which Python keeps once per process: a piece's warnings can be "
            "lost or reported by another (the results are those of a serial run). Use a process pool "
            "(ProcessPoolExecutor(mp_context=multiprocessing.get_context('spawn'))) or a Dask "
            "cluster with threads_per_worker=1",
            UserWarning,
        )


def map_seeded(
    fn: Callable[..., Any],
    items: Iterable[Any],
    *,
    rng: None | int | np.random.Generator = None,
    executor: Any = None,
    progress: bool | None = None,
    desc: str = "work",
    kwargs: dict[str, Any] | None = None,
    on_result: Callable[[int, Any], None] | None = None,
    thread_safe: bool = True,
) -> list[Any]:
    """``[fn(item, gen_i, **kwargs) for item in items]``, each with its own spawned Generator.

    Parameters
    ----------
    fn : callable
        ``fn(item, gen, **kwargs)``; must be picklable when ``executor`` is a
        process pool or a cluster.
    items : iterable
        The pieces of work, in the order the results come back.
    rng : None, int or numpy.random.Generator
        The user's seed; piece ``i`` gets the ``i``-th spawned Generator.
    executor : None or concurrent.futures.Executor
        Where to run; ``None`` runs here, in order. Every piece is submitted at
        once; if one fails (or the wait is interrupted), those not yet started
        are cancelled and the error is raised.
    progress : bool or None
        A progress bar over the pieces (``None``: when a person is watching).
    desc : str
        The progress bar's label.
    kwargs : dict, optional
        Keyword arguments passed to every call.
    on_result : callable, optional
        ``on_result(i, result)`` for every piece, in the order of ``items``, as
        soon as piece ``i`` and every piece before it are done, while later
        pieces still run: to save results as they come (a run stopped early
        keeps them) without waiting for the slowest piece of a batch.
    thread_safe : bool
        False where a piece changes what Python keeps for the whole process
        (warning filters: a fit, a study that counts its folds' warnings;
        BLAS thread limits): on a thread pool the pieces then warn
        (``warn_threads``).

    Returns
    -------
    list
        The results, in the order of ``items``, identical for every executor.

    Examples
    --------
    >>> def draw(scale, gen):
    ...     return float(scale * gen.standard_normal())
    >>> serial = map_seeded(draw, [1.0, 10.0], rng=3)
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> seen = []
    >>> with ThreadPoolExecutor(2) as pool:
    ...     pooled = map_seeded(draw, [1.0, 10.0], rng=3, executor=pool,
    ...                         on_result=lambda i, r: seen.append(i))
    >>> serial == pooled, seen
    (True, [0, 1])
    """
    executor = check_executor(executor)
    if not thread_safe:
        warn_threads(executor, desc)
    items = list(items)
    gens = spawn_generators(rng, len(items))
    kw = dict(kwargs or {})
    emit = on_result if on_result is not None else (lambda i, r: None)
    out: list[Any] = [None] * len(items)
    with Progress(len(items), desc, enabled=progress) as bar:
        if executor is None:
            for i, (item, gen) in enumerate(zip(items, gens, strict=True)):
                out[i] = fn(item, gen, **kw)
                bar.update(1)
                emit(i, out[i])
            return out
        futures = {
            executor.submit(fn, item, gen, **kw): i
            for i, (item, gen) in enumerate(zip(items, gens, strict=True))
        }
        _gather(futures, out, bar, emit)
    return out


def _gather(futures: dict[Any, int], out: list[Any], bar: Progress, emit: Callable[[int, Any], None]) -> None:
    """Fill ``out`` from ``futures`` as they finish; ``emit`` each done prefix in order; cancel on failure."""
    from concurrent.futures import as_completed

    done = [False] * len(out)
    upto = 0  # every piece before it has been emitted
    try:
        for fut in as_completed(futures):
            i = futures[fut]
            out[i], done[i] = fut.result(), True
            bar.update(1)
            while upto < len(out) and done[upto]:
                emit(upto, out[upto])
                upto += 1
    except BaseException:
        # a failed piece, an interrupted wait: the pieces not yet started do not run
        for fut in futures:
            fut.cancel()
        raise
