"""How the design room shows a long list in one line: a few values and how many more (reprs, errors)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def few(values: Any, limit: int = 4, show: Callable[[Any], str] = repr) -> str:
    """The first ``limit`` values (each through ``show``, Python literals by default) and the count of the rest.

    Examples
    --------
    >>> few(np.arange(50))
    '[0, 1, 2, 3, ... (46 more)]'
    >>> few(np.array(["a", "b"]))
    "['a', 'b']"
    """
    vals = np.asarray(values).ravel()
    shown = ", ".join(show(v) for v in vals[:limit].tolist())
    more = f", ... ({vals.size - limit} more)" if vals.size > limit else ""
    return f"[{shown}{more}]"


def typed_few(values: Any, limit: int = 4) -> str:
    """:func:`few` with the values' type (the array's dtype, or the Python types of an object array).

    Examples
    --------
    >>> typed_few(np.arange(3))
    '[0, 1, 2] (int64)'
    >>> typed_few(np.array(["0", "1"], dtype=object))
    "['0', '1'] (str)"
    """
    vals = np.asarray(values).ravel()
    if vals.dtype == object:
        kind = "/".join(sorted({type(v).__name__ for v in vals.tolist()})) or "object"
    elif vals.dtype.kind == "U":
        kind = "str"
    else:
        kind = str(vals.dtype)
    return f"{few(vals, limit)} ({kind})"
