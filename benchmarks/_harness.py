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
import datetime as _dt
import json
import os
import pathlib
import platform
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["Bench", "machine", "parser"]

OUT = pathlib.Path(__file__).resolve().parent / "out"


def machine() -> dict[str, Any]:
    """What the figures were measured on: cores, load, Python and the key libraries."""
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

    def __init__(self, name: str, argv: Sequence[str] | None = None, *, out: Any = None):
        self.name = name
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self.out = OUT if out is None else out
        self.rows: list[dict[str, Any]] = []
        self.figures: dict[str, Any] = {}
        self.start = machine()
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
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
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
        self, label: str, fn: Callable[[], Any], *, repeats: int = 5, warmup: int = 1
    ) -> float:
        """Median wall seconds of ``fn()`` over ``repeats`` calls after ``warmup`` untimed ones."""
        return self.compare(label, {"": fn}, repeats=repeats, warmup=warmup)[""]

    def compare(
        self,
        label: str,
        fns: Mapping[str, Callable[[], Any]],
        *,
        repeats: int = 5,
        warmup: int = 1,
        baseline: str | None = None,
    ) -> dict[str, float]:
        """Median seconds of each function, timed in turn within each repeat (interleaved).

        With ``baseline``, prints and records each other function's speed-up over it
        (baseline median / its median), all from this one run.
        """
        for _ in range(warmup):
            for fn in fns.values():
                fn()
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(repeats):
            for k, fn in fns.items():
                t0 = self._clock()
                fn()
                times[k].append(self._clock() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        for k, v in times.items():
            row = {
                "label": label,
                "what": k,
                "median_s": med[k],
                "min_s": min(v),
                "repeats": repeats,
            }
            if baseline is not None and k != baseline:
                row["speedup_vs_" + baseline] = med[baseline] / med[k]
            self.rows.append(row)
            extra = (
                f"  {row['speedup_vs_' + baseline]:.2f}x {baseline}"
                if "speedup_vs_" + str(baseline) in row
                else ""
            )
            print(f"  {label} {k}: median {med[k]:.4g} s (min {min(v):.4g}){extra}")
        return med

    def record(self, key: str, value: Any) -> None:
        """Keep a figure (an error, a coverage, a count) with the run's results, and print it."""
        self.figures[key] = value
        print(f"  {key}: {value}")


def parser(description: str | None) -> argparse.ArgumentParser:
    """An argument parser whose description is the script's docstring."""
    return argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
