"""Randomness and argument checks: the one ``rng`` keyword (:func:`as_rng`) and the ``check_*`` rules.

Each check returns the value it accepts (normalised) or raises an error naming the
argument, the rule and the offending value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import xarray as xr


def as_rng(rng: None | int | np.random.Generator, *, name: str = "rng") -> np.random.Generator:
    """Normalise the one randomness keyword: ``None``, a non-negative int seed, or a Generator.

    A Generator is returned as given (its state advances with use); an int
    seeds a new PCG64 Generator; ``None`` draws fresh entropy.

    Examples
    --------
    >>> as_rng(0).integers(10, size=3).tolist() == as_rng(0).integers(10, size=3).tolist()
    True
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (bool, np.bool_)):
        raise TypeError(
            f"`{name}` must be None, an int seed or a numpy Generator; got a bool ({rng!r})"
        )
    if rng is None or isinstance(rng, (int, np.integer)):
        if rng is not None and int(rng) < 0:
            raise ValueError(f"`{name}` seed must be a non-negative int; got {rng!r}")
        return np.random.default_rng(rng)
    raise TypeError(
        f"`{name}` must be None, an int seed or a numpy Generator; got {type(rng).__name__}"
    )


def check_prob(prob: Any, name: str = "prob") -> float:
    """``prob`` as a float in the open interval (0, 1), or a ValueError naming it.

    Examples
    --------
    >>> check_prob(0.9)
    0.9
    """
    if isinstance(prob, (bool, np.bool_)) or not isinstance(
        prob, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"`{name}` must be a number with 0 < {name} < 1; got {prob!r}")
    p = float(prob)
    if not 0.0 < p < 1.0:
        raise ValueError(f"`{name}` must satisfy 0 < {name} < 1; got {name}={prob!r}")
    return p


def check_int(value: Any, name: str, *, min: int | None = None, max: int | None = None) -> int:
    """``value`` as an int within [min, max], refusing bools, floats with a fraction and NaN.

    Examples
    --------
    >>> check_int(3.0, "k", min=1)
    3
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be an integer; got a bool ({value!r})")
    if isinstance(value, (int, np.integer)):
        v = int(value)
    elif (
        isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer()
    ):
        v = int(value)
    else:
        raise TypeError(f"`{name}` must be an integer; got {value!r}")
    if min is not None and v < min:
        raise ValueError(f"`{name}` must be >= {min}; got {name}={v}")
    if max is not None and v > max:
        raise ValueError(f"`{name}` must be <= {max}; got {name}={v}")
    return v


def check_number(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> float:
    """Return ``value`` as a float, or raise an error naming the argument.

    It must be a real, finite number (not a bool, not text) within the bounds (``low``
    excluded when ``low_open``).

    Examples
    --------
    >>> check_number(0.5, "tie_weight", low=0, high=1)
    0.5
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"`{name}` must be a number; got {value!r}")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"`{name}` must be a finite number; got {name}={value!r}")
    if low is not None and (v <= low if low_open else v < low):
        raise ValueError(
            f"`{name}` must be {'>' if low_open else '>='} {low:g}; got {name}={value!r}"
        )
    if high is not None and v > high:
        raise ValueError(f"`{name}` must be <= {high:g}; got {name}={value!r}")
    return v


def check_choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """``value`` if it is one of ``choices``, else a ValueError listing them.

    Examples
    --------
    >>> check_choice("bca", "method", ["percentile", "bca"])
    'bca'
    """
    options = list(choices)
    if value not in options:
        raise ValueError(f"`{name}` must be one of {options}; got {value!r}")
    return value


def check_dim(da: xr.DataArray | xr.Dataset, dim: str, name: str = "dim") -> str:
    """``dim`` if it is a dimension of ``da``, else a ValueError listing the dims.

    Examples
    --------
    >>> check_dim(xr.DataArray([[1.0]], dims=("task", "run")), "run")
    'run'
    """
    if dim not in da.dims:
        raise ValueError(f"`{name}` must be a dimension of the data {tuple(da.dims)}; got {dim!r}")
    return dim
