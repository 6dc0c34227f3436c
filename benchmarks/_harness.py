"""The one benchmark harness: machine facts, interleaved timings, same-run ratios, a results file.

Every script in ``benchmarks/`` runs through :class:`Bench`, so each printed
figure says what machine and load it was taken under, and a ratio is only ever
between timings taken in the same run, interleaved so that load hits both
sides alike::

    with Bench("confseq", argv) as b:
        b.compare("betting CS", {"confseq": lambda: theirs(x), "hierbench": lambda: ours(x)},
                  repeats=7, baseline="confseq")
        b.record("max |bound difference|", d)

The results go to ``benchmarks/out/<name>-<UTC time>.json`` (ignored by git)
with the load average at the start and the end; the scripts import only
hierbench's public API.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pathlib
import platform
import statistics
import sys
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

__all__ = ["Bench", "machine", "parser"]

OUT = pathlib.Path(__file__).resolve().parent / "out"


def machine() -> dict[str, Any]:
    """Return what the figures were measured on: cores, load, Python and the key libraries."""
    import numpy as np

    facts: dict[str, Any] = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cores": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "platform": platform.platform(terse=True),
    }
    try:
        from importlib.metadata import version

        facts["hierbench"] = version("hierbench")
    except Exception:  # pragma: no cover - a source tree without metadata
        facts["hierbench"] = "unknown"
    return facts


class Bench:
    """A benchmark run; use as a context manager (the results file is written on exit).

    Parameters
    ----------
    name : str
        The benchmark's name (the results file's stem).
    argv : sequence of str, optional
        Recorded with the results so a figure can be reproduced.
    out : path, optional
        Folder for the results file (default ``benchmarks/out``); ``False``: no file.
    """

    def __init__(self, name: str, argv: Sequence[str] | None = None, *, out: Any = None) -> None:
        self.name = name
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self.out = OUT if out is None else out
        self.rows: list[dict[str, Any]] = []
        self.figures: dict[str, Any] = {}
        self.start = machine()
        self.last: dict[str, Any] = {}
        self._clock = time.perf_counter

    def __enter__(self) -> Bench:
        print(
            f"[{self.name}] {self.start['cores']} cores, load average {self.start['load_average']}"
        )
        return self

    def __exit__(self, *exc: Any) -> None:
        end = list(os.getloadavg())
        print(f"[{self.name}] load average at the end {end}")
        if self.out is False or exc[0] is not None:
            return
        out = pathlib.Path(self.out)
        out.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        path = out / f"{self.name}-{stamp}.json"
        doc = {
            "name": self.name,
            "argv": self.argv,
            "machine": self.start,
            "load_average_end": end,
            "timings": self.rows,
            "figures": self.figures,
        }
        path.write_text(json.dumps(doc, indent=1, default=float))
        print(f"[{self.name}] results: {path.relative_to(out.parent)}")

    def time(
        self,
        label: str,
        fn: Callable[[], Any],
        *,
        repeats: int = 5,
        warmup: int = 1,
        number: int = 1,
    ) -> float:
        """Time ``fn()`` alone: its median wall seconds per call (see :meth:`compare`)."""
        return self.compare(label, {"": fn}, repeats=repeats, warmup=warmup, number=number)[""]

    def compare(
        self,
        label: str,
        fns: Mapping[str, Callable[[], Any]],
        *,
        repeats: int = 5,
        warmup: int = 1,
        baseline: str | None = None,
        number: int | Mapping[str, int] = 1,
    ) -> dict[str, float]:
        """Time each function in turn within each repeat (interleaved); return median seconds.

        Parameters
        ----------
        label : str
            What is timed (the row label of the results file).
        fns : mapping of str to callable
            The contenders, each called with no argument.
        repeats : int
            Timed rounds; in each round every function runs once (or ``number`` times).
        warmup : int
            Untimed rounds first (compilation, caches).
        baseline : str, optional
            With it, each other function's speed-up over it (baseline median / its
            median) is printed and recorded, all from this one run.
        number : int or mapping of str to int
            Calls per timed round (for calls too quick to time singly); the time
            reported is per call.

        Returns
        -------
        dict of str to float
            Median wall seconds per call of each function. The last value each
            returned is kept in :attr:`last` (by name) for checks after the timing.
        """
        calls = {k: number if isinstance(number, int) else number.get(k, 1) for k in fns}
        for _ in range(warmup):
            for k, fn in fns.items():
                self.last[k] = fn()
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(repeats):
            for k, fn in fns.items():
                t0 = self._clock()
                for _ in range(calls[k]):
                    out = fn()
                times[k].append((self._clock() - t0) / calls[k])
                self.last[k] = out
        med = {k: statistics.median(v) for k, v in times.items()}
        for k, v in times.items():
            row = {
                "label": label,
                "what": k,
                "median_s": med[k],
                "min_s": min(v),
                "repeats": repeats,
                "calls_per_repeat": calls[k],
            }
            if baseline is not None and k != baseline:
                row["speedup_vs_" + baseline] = med[baseline] / med[k]
            self.rows.append(row)
            extra = (
                f"  {row['speedup_vs_' + baseline]:.2f}x {baseline}"
                if "speedup_vs_" + str(baseline) in row
                else ""
            )
            name = f"{label} {k}".rstrip()
            print(f"  {name}: median {med[k]:.4g} s (min {min(v):.4g}){extra}")
        return med

    def record(self, key: str, value: Any, *, show: bool = True) -> None:
        """Keep a figure (an error, a coverage, a count) with the run's results; print it if ``show``."""
        self.figures[key] = value
        if show:
            print(f"  {key}: {value}")


def parser(description: str | None) -> argparse.ArgumentParser:
    """Return an argument parser whose description is the script's docstring."""
    return argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
