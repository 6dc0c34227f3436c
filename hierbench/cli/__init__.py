"""The ``hierbench`` command line: validate, summary, fit, report, compare, demo.

A thin layer over the library: every number it prints comes from
:mod:`hierbench.data`, :mod:`hierbench.freq`, :mod:`hierbench.bayes` or
:mod:`hierbench.report`. Only the standard library is imported at start-up
(``hierbench --help`` is instant); each command imports what it needs.

Results go to standard output; every warning of a command goes to standard
error, one ``warning: ...`` line each (:func:`hierbench._console.print_warnings`),
so that piping the results never carries a warning along. Errors (bad input, a
missing or unreadable file, a refused overwrite) are printed as one line naming
the file or the flag, and the exit status is 2; no Python traceback (set
``HIERBENCH_DEBUG=1`` to see it). ``fit --strict`` exits 1 when the fit did not
converge (saved all the same); without it, 0.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .._console import convergence_line
from .._console import fit_kwargs
from ._common import CliError
from ._parser import build_parser
from ._reading import _user_words
from ._reading import load_any

__all__ = ["CliError", "build_parser", "convergence_line", "fit_kwargs", "load_any", "main"]


def __getattr__(name: str):
    # the demo's section list and context live in hierbench.demo (numpy, pandas, scipy):
    # imported only when asked for, so `hierbench --help` stays fast
    if name in ("DEMO_SECTIONS", "DemoContext"):
        from .. import demo

        return getattr(demo, name)
    raise AttributeError(f"module 'hierbench.cli' has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hierbench`` command; returns the exit status (0 ok, 2 bad input or an error, 1 ``fit --strict`` not converged).

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "runs.csv"
    >>> pd.DataFrame({"agent": ["a", "a"], "task": ["t1", "t2"], "score": [1, 0]}).to_csv(f)
    >>> main(["summary", str(f)])  # doctest: +NORMALIZE_WHITESPACE
    1 agent x 2 tasks, 2 runs (0 infrastructure errors, errors='fail'); 0 agent x task cells never run
    rows: agents by mean (per task), highest first, ties by name (the order of compare's matrix and the report)
           tasks  missing  runs  errors error rate mean (per task) mean (per run)
    agent
    a          2        0     2       0      0.000           0.500          0.500
    0
    """
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    import os

    os.environ.setdefault("MPLBACKEND", "Agg")  # figures go into files, never to a window
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print(f"hierbench {args.command}: interrupted", file=sys.stderr)
        return 130
    except CliError as exc:
        print(f"hierbench {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, TypeError, KeyError, EOFError, UnicodeError, Warning) as exc:
        # HierbenchError derives from ValueError; a HierbenchWarning raised as an error under
        # -W error is a Warning; unreadable or refused files are OSError
        if os.environ.get("HIERBENCH_DEBUG"):  # the full traceback, for bug reports
            raise
        kind = "invalid input" if isinstance(exc, (ValueError, Warning)) else "error"
        text = str(exc) if str(exc) else type(exc).__name__
        if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in text:
            text = f"{exc.filename}: {text}"
        print(f"hierbench {args.command}: {kind}: {_user_words(text, args)}", file=sys.stderr)
        return 2
