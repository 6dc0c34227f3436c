"""What every command shares: its error, its JSON, its progress and its output checks.

A ``CliError`` is printed as one line naming the file or the flag, with exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


class CliError(Exception):
    """An error in the user's words (file or flag names), printed as one line."""


def _jsonable(obj):
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return None if not np.isfinite(obj) else float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def _progress_wanted(args: argparse.Namespace) -> bool:
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


#: What each output flag can write, by suffix.
_SUFFIXES = {
    "fit": ((".nc", ".zarr"), "a fit is saved as netCDF (.nc) or zarr (.zarr)"),
    "report": ((".html", ".htm", ".md"), "a report is written as HTML (.html) or Markdown (.md)"),
}


def _check_out(path: str, overwrite: bool, flag: str = "-o", kind: str | None = None) -> Path:
    out = Path(path)
    if kind is not None:
        suffixes, what = _SUFFIXES[kind]
        if out.suffix.lower() not in suffixes:
            raise CliError(
                f"{flag} {path!r}: {what}; give a path ending in {' or '.join(suffixes)}"
            )
    if kind == "fit" and out.exists():
        # io's rules, before the fit is sampled: the format from the suffix (.zarr in any case is
        # zarr), and never a file replaced by a zarr store (a folder) nor a folder by a file
        from ..io import _engine_for
        from ..io import _format_reason
        from ..io import _target_conflict

        fmt = _engine_for(out, None)
        conflict = _target_conflict(out, fmt, why=_format_reason(fmt, None), python=False)
        if conflict:
            raise CliError(f"{flag} {conflict}")
    if out.exists() and not overwrite:
        raise CliError(f"{flag} {path!r} already exists; pass --overwrite to replace it")
    if not out.parent.exists():
        raise CliError(f"{flag} {path!r}: folder {str(out.parent)!r} does not exist")
    return out
