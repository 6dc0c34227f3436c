"""The ground floor: rules every part of hierbench shares, each with one owner.

This module plays the role arviz-base plays for ArviZ. It depends on numpy
and xarray only (and pandas through xarray, for ``to_frame``), and every
other module imports its shared rules from here:

- randomness: :func:`as_rng`, the one ``rng`` keyword;
- argument checks: :func:`check_prob`, :func:`check_int`, :func:`check_choice`,
  :func:`check_dim`; the one default level :data:`DEFAULT_PROB`;
- intervals: :func:`make_interval` with the fixed ``ci_kind`` vocabulary
  :data:`CI_KINDS` (detail in the ``ci_detail`` attr), :func:`check_interval`,
  :func:`interval_label`;
- results: :class:`Result`, the base of every result object (``estimate``,
  ``ci``, a short repr, ``to_frame()``, ``to_dataset()``);
- data rules: :func:`counts` (the one eval-dataset -> per-cell counts routine,
  which refuses partial credit where binary counts are needed) and
  :func:`cluster_codes` (the one task -> cluster code routine) and
  :func:`cluster_label` (the one name clusters are called by in messages and text);
- the base warning and error classes :class:`HierbenchWarning` and
  :class:`HierbenchError`;
- deprecations: :func:`renamed_kwargs` (an old keyword) and
  :func:`moved_names` (an old importable name), each warning for one release.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import operator
import os
import warnings
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import TypeVar

import numpy as np
import xarray as xr

#: the package's own files: a warning names the first frame outside them (the user's line,
#: whatever the depth of the call inside hierbench); :func:`warn_user` applies the rule
OUTSIDE_PACKAGE = (os.path.dirname(__file__) + os.sep,)

#: what a reader is told where ``_numerics.few_carry`` flags a resampling interval (the report's
#: flag and the demo's note). Not a figure of the reader's data: in simulation a 95% percentile
#: interval covered 88% for a mean of 0.01 over 76 tasks (``bench_passk_coverage.py --bootstrap``)
_BOUND_INSTEAD = "for independent tasks hierbench.freq.pass_hat_k(data, 1) gives a bound that holds"
FEW_CARRY_ADVICE = f"a resampling interval covers less than its level there; {_BOUND_INSTEAD}"

#: the same, where every task scored one value (a bootstrap ``ci_flag`` "every task scored 0"):
#: no resample can differ from the data, so the interval has no width at all
ZERO_WIDTH_ADVICE = (
    "no resample can differ from the data, so a resampling interval has no width (BCa: none at all); "
    f"{_BOUND_INSTEAD}"
)


def flag_advice(flag: str) -> str:
    """What to tell a reader about a bootstrap ``ci_flag``: :data:`ZERO_WIDTH_ADVICE` or :data:`FEW_CARRY_ADVICE`."""
    return ZERO_WIDTH_ADVICE if str(flag).startswith("every ") else FEW_CARRY_ADVICE

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CI_KINDS",
    "DEFAULT_PROB",
    "SOURCE_COLUMN",
    "DrawsResult",
    "HierbenchError",
    "HierbenchWarning",
    "PartialCreditError",
    "Progress",
    "ResampledResult",
    "Result",
    "ZeroWidthIntervalWarning",
    "as_rng",
    "check_choice",
    "check_dim",
    "check_int",
    "check_interval",
    "check_number",
    "check_prob",
    "cluster_codes",
    "cluster_label",
    "counts",
    "field_alias",
    "interval_label",
    "is_binary",
    "make_interval",
    "moved_names",
    "renamed_kwargs",
    "settle_trend",
    "warn_user",
    "watched",
]

#: The one default level of every interval in hierbench (frequentist and Bayesian).
DEFAULT_PROB: float = 0.95

#: The fixed ``ci_kind`` vocabulary: short key -> what it means. Detail (the
#: resampling scheme, the number of resamples, the model) goes in ``ci_detail``.
CI_KINDS: dict[str, str] = {
    "eti": "equal-tailed posterior (credible) interval",
    "hdi": "highest-density posterior (credible) interval",
    "percentile": "bootstrap percentile interval",
    "bca": "bootstrap bias-corrected and accelerated interval",
    "basic": "bootstrap basic (reverse percentile) interval",
    "t": "Student t interval",
    "normal": "normal-approximation interval (estimate +- z * standard error)",
    "log-normal": "normal-approximation interval on the log scale, mapped back (estimate x exp(+- z * se / estimate))",
    "logit-normal": "normal-approximation interval on the logit scale, mapped back (delta method)",
    "wald": "Wald interval for a proportion",
    "wilson": "Wilson score interval for a proportion",
    "exact": "exact interval (Clopper-Pearson, or by enumeration)",
    "profile": "profile-likelihood interval",
    "betting": "anytime-valid confidence sequence (hedged betting)",
    "order-statistic": "distribution-free order-statistic interval",
    "feasible": "deterministic feasible range (probability one)",
}

CI_BOUNDS = ("lower", "upper")


class HierbenchWarning(UserWarning):
    """Base class of every warning hierbench issues (filter them all with this class)."""


class HierbenchError(ValueError):
    """Base class of hierbench's own input errors (a ``ValueError``)."""


class PartialCreditError(HierbenchError):
    """Binary scores were required, but some scores are strictly between 0 and 1."""


# Every warning hierbench issues sits under one of a few meanings, so a user can filter
# by meaning (``warnings.simplefilter("error", NotConvergedWarning)``) across both halves.


class UndefinedWarning(HierbenchWarning):
    """Something asked for is undefined on these data: it is NaN there, never a silent 0."""


class UnidentifiedWarning(UndefinedWarning):
    """A quantity is asked for that the data cannot identify (it rests on an assumption)."""


class UnidentifiedTermWarning(HierbenchWarning):
    """A term was requested explicitly that the data's design cannot identify.

    One meaning across the builders: a term asked for by name (a builder
    option such as ``agent_task="marginal"``, or a ``(1|agent:task)`` term
    written in a formula) that the design cannot separate from the others
    (one run per cell, one agent); it is fitted as asked and rests on its
    prior. A formula's own identification rules belong to
    :func:`hierbench.data.model_design`, shared with the maximum-likelihood
    half: a random term whose every level holds one run warns with this class
    (its sd cannot be told apart from run-to-run noise), a term no design could
    identify is refused
    (:class:`hierbench.data.FormulaError`), and factor levels seen in one
    combination only are reported by
    :class:`hierbench.data.ConfoundedTermWarning` (identified by the others'
    levels, estimated from that one combination).
    """


class NotConvergedWarning(HierbenchWarning):
    """A fit or an iteration stopped short of its convergence criterion: its numbers may be off."""


class SmallSampleWarning(HierbenchWarning):
    """Too few observations (tasks, clusters, items) for a method's guarantee to be trusted."""


class BoundaryWarning(HierbenchWarning):
    """An estimate sits on the edge of its parameter space (a variance at 0, an infinite MLE)."""


class UndefinedMetricWarning(UndefinedWarning):
    """A metric is 0/0 or undefined for some entries: NaN there, here or in some resamples.

    For example precision with no positive prediction, or a posterior quantity that does not
    exist for a model.
    """


class ZeroWidthIntervalWarning(SmallSampleWarning):
    """An interval has zero width although its level is below one: it carries no uncertainty."""


class ExtrapolatedHorizonWarning(BoundaryWarning):
    """A time horizon on a trend lies beyond the task lengths measured: an extrapolation along a slope."""


# --------------------------------------------------------------------------- randomness


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


# --------------------------------------------------------------------------- argument checks


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


# --------------------------------------------------------------------------- intervals


_CI_BOUND_COORDS = xr.Coordinates({"ci_bound": list(CI_BOUNDS)})


def make_interval(
    lower: Any,
    upper: Any,
    *,
    prob: float,
    kind: str,
    detail: str | None = None,
    template: xr.DataArray | None = None,
    name: str = "ci",
    warn_zero_width: bool = True,
    zero_width_why: Any = None,
) -> xr.DataArray:
    """Build an interval in the house convention.

    Parameters
    ----------
    lower, upper : array-like or DataArray
        The bounds, broadcast against each other (and shaped like ``template``
        when given).
    prob : float
        The level, 0 < prob <= 1 (1 only for ``kind="feasible"``).
    kind : str
        A key of :data:`CI_KINDS`; anything else is refused.
    detail : str, optional
        Free text on how it was made (scheme, resamples, model), in ``ci_detail``.
    template : DataArray, optional
        Dims and coords for array bounds.
    warn_zero_width : bool
        Warn with :class:`ZeroWidthIntervalWarning` when every finite interval
        has zero width although ``prob < 1`` (no uncertainty was measured).
    zero_width_why : array-like of str or DataArray, optional
        Per entry (shaped like the bounds), why a zero-width interval there
        carries no uncertainty (e.g. ``"every task scored 0: no resample can
        differ"``). Given, the warning fires for *each* zero-width entry, not
        only when all are, and names the entries with their reasons (``""``:
        named without one). For estimators whose zero width is a degeneracy
        wherever it occurs; a rank interval ``[1, 1]`` is not one.

    Returns
    -------
    xarray.DataArray
        The bounds' dims plus a trailing ``ci_bound = ["lower", "upper"]``;
        attrs ``ci_prob``, ``ci_kind`` (and ``ci_detail``).

    Examples
    --------
    >>> iv = make_interval(0.1, 0.3, prob=0.95, kind="wilson")
    >>> iv.values.tolist(), iv.attrs["ci_kind"]
    ([0.1, 0.3], 'wilson')
    """
    if kind not in CI_KINDS:
        raise ValueError(
            f"`kind` must be one of {sorted(CI_KINDS)} (detail goes in `detail`); got {kind!r}"
        )
    if kind == "feasible":
        p = float(prob)
        if not 0.0 < p <= 1.0:
            raise ValueError(f"`prob` must satisfy 0 < prob <= 1; got prob={prob!r}")
    else:
        p = check_prob(prob)

    def _as(x: Any) -> xr.DataArray:
        if isinstance(x, xr.DataArray):
            return x if x.dtype == np.float64 else x.astype(float)
        arr = np.asarray(x, dtype=float)
        if template is not None:
            return template.copy(data=np.broadcast_to(arr, template.shape).astype(float))
        return xr.DataArray(arr, dims=[f"dim_{i}" for i in range(arr.ndim)])

    lo, hi = _as(lower), _as(upper)
    if lo.dims != hi.dims or lo.shape != hi.shape:
        lo, hi = xr.broadcast(lo, hi)
    # Stack with numpy rather than xr.concat: this is called once per result and
    # concat's alignment machinery cost ~10x the rest of a small estimator.
    lo = lo.transpose(*hi.dims)
    data = np.stack(
        [np.asarray(lo.values, dtype=float), np.asarray(hi.values, dtype=float)], axis=-1
    )
    # reuse the bounds' coordinate variables and indexes as they are (building
    # them again from values, and the ci_bound index from a list, was about half
    # the cost of a small estimator's result)
    coords = xr.Coordinates(
        coords={**{k: hi.coords.variables[k] for k in hi.coords}, **_CI_BOUND_COORDS.variables},
        indexes={**hi.xindexes, **_CI_BOUND_COORDS.xindexes},
    )
    out = xr.DataArray(data, dims=(*hi.dims, "ci_bound"), coords=coords)
    out.attrs = {"ci_prob": p, "ci_kind": kind}
    if detail:
        out.attrs["ci_detail"] = str(detail)
    out.name = name
    if warn_zero_width and p < 1.0:
        _warn_zero_width(out, np.asarray(lo.values, float), np.asarray(hi.values, float), zero_width_why)
    return out


#: zero-width entries a :class:`ZeroWidthIntervalWarning` names before "and N more"
_ZERO_WIDTH_NAMED = 10


def _warn_zero_width(out: xr.DataArray, lv: np.ndarray, hv: np.ndarray, why: Any) -> None:
    """:func:`make_interval`'s zero-width warning: all entries, or each one with ``why``."""
    finite = np.isfinite(lv) & np.isfinite(hv)
    flat = finite & (hv - lv == 0.0)
    if not flat.any():
        return
    if why is None:
        if flat.sum() < finite.sum():
            return
        msg = (
            f"every {interval_label(out)} interval here has zero width: the data carry no "
            "measurable uncertainty for it (e.g. one task, one run per cell, or a constant "
            "statistic). It is not a statement of certainty."
        )
    else:
        reasons = np.broadcast_to(np.asarray(getattr(why, "values", why), dtype=object), flat.shape)
        items = [
            f"{name} ({reasons[ix]})" if name and reasons[ix] else (name or str(reasons[ix]) or "its one entry")
            for name, ix in _entry_names(out, flat)
        ]
        more = len(items) - _ZERO_WIDTH_NAMED
        shown = "; ".join(items[:_ZERO_WIDTH_NAMED]) + (f"; and {more} more" if more > 0 else "")
        what = f"{out.dims[0]}s" if flat.ndim == 1 else "entries"
        head = (
            f"every {interval_label(out)} interval here has zero width" if flat.sum() == finite.sum()
            else f"the {interval_label(out)} interval has zero width for {len(items)} of {flat.size} {what}"
        )
        msg = (
            f"{head}: {shown}. Zero width at a level below one measures no uncertainty; it is not "
            "a statement of certainty."
        )
    warnings.warn(msg, ZeroWidthIntervalWarning, stacklevel=2, skip_file_prefixes=OUTSIDE_PACKAGE)


def _entry_names(out: xr.DataArray, mask: np.ndarray) -> list[tuple[str, tuple]]:
    """``(label, index)`` of each entry of ``mask`` (over ``out``'s dims but ``ci_bound``): coord values."""
    dims = [d for d in out.dims if d != "ci_bound"]
    named = []
    for ix in zip(*np.nonzero(mask), strict=True) if mask.ndim else [()]:
        parts = [str(out[d].values[i]) if d in out.coords else f"{d} {i}" for d, i in zip(dims, ix, strict=True)]
        named.append((", ".join(parts), tuple(ix)))
    return named


def check_interval(da: Any, name: str = "ci") -> xr.DataArray:
    """``da`` if it is an interval in the house convention, else a ValueError saying what is missing.

    Examples
    --------
    >>> check_interval(make_interval(0.2, 0.4, prob=0.9, kind="t")).attrs["ci_kind"]
    't'
    """
    if not isinstance(da, xr.DataArray):
        raise TypeError(f"`{name}` must be an interval DataArray; got {type(da).__name__}")
    if "ci_bound" not in da.dims:
        raise ValueError(
            f"`{name}`: an interval must have a `ci_bound` dim {list(CI_BOUNDS)}; got dims {da.dims}"
        )
    for key in ("ci_prob", "ci_kind"):
        if key not in da.attrs:
            raise ValueError(
                f"`{name}`: an interval must state its level and kind; attr {key!r} is missing"
            )
    bounds = [str(b) for b in da["ci_bound"].values]
    if bounds != list(CI_BOUNDS):
        raise ValueError(f"`{name}`: `ci_bound` must be {list(CI_BOUNDS)}; got {bounds}")
    if da.attrs["ci_kind"] not in CI_KINDS:
        raise ValueError(
            f"`{name}`: `ci_kind` must be one of {sorted(CI_KINDS)} (detail goes in `ci_detail`); "
            f"got {da.attrs['ci_kind']!r}"
        )
    return da


def interval_label(da: xr.DataArray) -> str:
    """Return a short label such as ``"95% wilson"`` for an interval's level and kind.

    Examples
    --------
    >>> interval_label(make_interval(0.2, 0.4, prob=0.95, kind="wilson"))
    '95% wilson'
    """
    p = float(da.attrs.get("ci_prob", np.nan))
    pct = f"{100 * p:.4g}%"
    return f"{pct} {da.attrs.get('ci_kind', '?')}"


# --------------------------------------------------------------------------- results


def _fmt(x: float) -> str:
    return "nan" if not np.isfinite(x) else f"{x:.4g}"


def _shown_cells(n: int) -> list[int]:
    """The cells a result's repr lists: all up to 8, else the first 5 and the last 2."""
    return list(range(n)) if n <= 8 else [*range(5), *range(n - 2, n)]


class Result:
    """Base of every hierbench result: a point ``estimate`` and its interval ``ci``.

    Subclasses are frozen dataclasses (``@dataclass(frozen=True, repr=False)``,
    so the short repr here is kept) whose fields are DataArrays or plain
    values, and which define ``estimate`` and ``ci`` (as fields or
    properties). The base gives them one accessor style: ``result.estimate``,
    ``result.ci``, ``result["estimate"]`` (the same), a short repr,
    :meth:`to_dataset` and :meth:`to_frame`.
    """

    estimate: xr.DataArray
    ci: xr.DataArray

    #: fields left out of :meth:`to_dataset` and :meth:`to_frame` (raw resamples and the like)
    _dataset_exclude: ClassVar[tuple[str, ...]] = ()
    #: plain fields the repr's first line names (e.g. an effect's variable and scale)
    _title_fields: ClassVar[tuple[str, ...]] = ()

    def __getitem__(self, key: str) -> Any:
        if key in self._fields() or key in ("estimate", "ci"):
            return getattr(self, key)
        raise KeyError(f"{type(self).__name__} has no field {key!r}; fields {self._fields()}")

    def _fields(self) -> list[str]:
        names = [f.name for f in dataclasses.fields(self)] if dataclasses.is_dataclass(self) else []
        for extra in ("ci", "estimate"):
            if extra not in names:
                names.insert(0, extra)
        return [n for n in names if not n.startswith("_")]

    def to_dataset(self) -> xr.Dataset:
        """Every DataArray field as one :class:`xarray.Dataset` (``estimate`` and ``ci`` first)."""
        out: dict[str, xr.DataArray] = {}
        for f in self._fields():
            if f in self._dataset_exclude:
                continue
            v = getattr(self, f)
            if isinstance(v, xr.DataArray):
                out[f] = v
        return xr.Dataset(out)

    def to_frame(self) -> pd.DataFrame:
        """Return a tidy pandas table: one row per cell of ``estimate`` (agent, pair, ...).

        The interval ends are the ``lower`` / ``upper`` columns, level and kind columns too.
        """
        import pandas as pd

        est = self.estimate
        ci = self.ci
        cols = {
            "estimate": est,
            "lower": ci.sel(ci_bound="lower", drop=True),
            "upper": ci.sel(ci_bound="upper", drop=True),
        }
        for f in self._fields():
            v = getattr(self, f)
            if (
                f in ("estimate", "ci")
                or not isinstance(v, xr.DataArray)
                or f in self._dataset_exclude
            ):
                continue
            if set(v.dims) <= set(est.dims) and "ci_bound" not in v.dims:
                cols[f] = v
        ds = xr.Dataset(cols)
        if ds["estimate"].ndim == 0:
            df = pd.DataFrame({k: [ds[k].item()] for k in ds.data_vars})
        else:
            df = ds.to_dataframe()
            df = df[[c for c in cols if c in df.columns]]
        df["ci_prob"] = float(ci.attrs.get("ci_prob", np.nan))
        df["ci_kind"] = ci.attrs.get("ci_kind")
        return df

    def _repr_lines(self) -> list[str]:
        ci = self.ci
        head = ", ".join(str(getattr(self, f)) for f in self._title_fields)
        label = f"{interval_label(ci)} interval"
        lines = [f"{type(self).__name__}: {head} ({label})" if head else f"{type(self).__name__}: estimate with {label}"]
        return lines + self._cell_lines()

    def _cell_notes(self) -> xr.DataArray | None:
        """Text to put after each cell's line (broadcast to ``estimate``; ``""`` adds nothing), or None."""
        return None

    def _cell_lines(self) -> list[str]:
        """``label: estimate [lower, upper]`` per cell (and its note), the middle elided past 8 cells."""
        est, ci, notes = self.estimate, self.ci, self._cell_notes()
        if notes is not None:
            notes = notes.broadcast_like(est).transpose(*est.dims)
        if est.ndim == 0:
            lo, hi = ci.values.tolist()
            note = "" if notes is None else str(notes.item())
            return [f"  {_fmt(float(est))} [{_fmt(lo)}, {_fmt(hi)}]" + (f"  ({note})" if note else "")]
        flat = [x.stack(_cell=est.dims) if est.ndim > 1 else x.rename({est.dims[0]: "_cell"})
                for x in (est, ci, notes if notes is not None else est)]  # fmt: skip
        n = flat[0].sizes["_cell"]
        lines = []
        for i in _shown_cells(n):
            if n > 8 and i == n - 2:
                lines.append(f"  ... ({n - 7} more)")
            lab = flat[0]["_cell"].values[i]
            lab = ", ".join(map(str, lab)) if isinstance(lab, tuple) else str(lab)
            lo = float(flat[1].isel(_cell=i).sel(ci_bound="lower"))
            hi = float(flat[1].isel(_cell=i).sel(ci_bound="upper"))
            note = str(flat[2].isel(_cell=i).item()) if notes is not None else ""
            lines.append(
                f"  {lab}: {_fmt(float(flat[0].isel(_cell=i)))} [{_fmt(lo)}, {_fmt(hi)}]" + (f"  ({note})" if note else "")
            )
        return lines

    def __repr__(self) -> str:
        try:
            return "\n".join(self._repr_lines())
        except Exception:  # pragma: no cover - a repr must never raise
            return f"<{type(self).__name__}>"


@dataclasses.dataclass(frozen=True, repr=False)
class ResampledResult(Result):
    """A :class:`Result` that keeps the resamples its interval came from.

    The field ``distribution`` (keyword-only, listed after the subclass's own
    fields in the constructor) holds the statistic in every resample; like any
    raw resample it stays out of :meth:`to_dataset` and :meth:`to_frame`.
    """

    distribution: xr.DataArray = dataclasses.field(kw_only=True)

    _dataset_exclude: ClassVar[tuple[str, ...]] = ("distribution",)


@dataclasses.dataclass(frozen=True, repr=False)
class DrawsResult(Result):
    """A :class:`Result` that keeps the posterior draws its summaries came from.

    The field ``draws`` (keyword-only, listed after the subclass's own fields
    in the constructor) holds the quantity per ``(chain, draw, ...)``; like any
    raw sample it stays out of :meth:`to_dataset` and :meth:`to_frame`.
    """

    draws: xr.DataArray = dataclasses.field(kw_only=True)

    _dataset_exclude: ClassVar[tuple[str, ...]] = ("draws",)


def fit_record(fit: Any, name: str) -> dict[str, Any]:
    """A JSON record in a fit's root attrs (``hierbench_spec``, ``hierbench_structure``); ``{}`` if absent.

    The one reader of those attrs; a fit made elsewhere has none. A record that
    is not a JSON object is refused with a :class:`HierbenchError` naming the
    attr, rather than read as absent: a report or a metric built on it would
    otherwise describe another model.
    """
    attrs = getattr(fit, "attrs", None)
    raw = attrs.get(name) if isinstance(attrs, Mapping) else None
    if raw is None:
        return {}
    try:
        out = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise HierbenchError(
            f"the fit's attr {name!r} is not JSON ({exc}): it was not written by hierbench's fit "
            "or was edited; refit, or drop the attr to read the fit as one made elsewhere"
        ) from None
    if not isinstance(out, dict):
        raise HierbenchError(
            f"the fit's attr {name!r} holds a JSON {type(out).__name__}, not the object hierbench "
            "writes; refit, or drop the attr"
        )
    return out


def warn_user(message: str, category: type[Warning]) -> None:
    """Issue a hierbench warning at the user's line: the first frame outside the package.

    Whatever the depth of the call inside hierbench, the warning names the line
    that called into it (``skip_file_prefixes``), so a filter or a ``-W error``
    on that module sees it.

    Parameters
    ----------
    message : str
    category : type of Warning

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     warn_user("a notice", UserWarning)
    >>> str(seen[0].message)
    'a notice'
    """
    warnings.warn(message, category, stacklevel=2, skip_file_prefixes=OUTSIDE_PACKAGE)


def settle_trend(points: Any, *, by: str = "") -> None:
    """Give a doubling time's trend points their warnings and refusal, the one way both halves do.

    ``points`` is a :class:`hierbench._numerics.TrendPoints`: its ``unusable``
    agents warn (:class:`UndefinedWarning`, the notice ending in ``by`` when
    given), its ``refusal`` raises :class:`HierbenchError`, and its ``note`` of
    horizons beyond the task lengths warns (:class:`ExtrapolatedHorizonWarning`).
    """
    if points.unusable:
        warn_user(points.unusable_note + by, UndefinedWarning)
    if points.refusal:
        raise HierbenchError(points.refusal)
    if points.note:
        warn_user(points.note, ExtrapolatedHorizonWarning)


def field_alias(field: str, doc: str) -> property:
    """A read-only property returning the result's field ``field`` under a second name.

    A result whose own quantity has a telling name (``coverage``, ``rank_ci``) gives it
    the house name with ``estimate = field_alias("coverage", "...")``; a familiar name is
    kept the same way (``mean = field_alias("estimate", ...)``).

    Parameters
    ----------
    field : str
        The attribute returned.
    doc : str
        The property's docstring (what the value is, under which name).

    Returns
    -------
    property

    Examples
    --------
    >>> class Rank:
    ...     rank_ci = (1, 3)
    ...     ci = field_alias("rank_ci", "The interval of the rank.")
    >>> Rank().ci
    (1, 3)
    """
    return property(operator.attrgetter(field), doc=doc)


# --------------------------------------------------------------------------- data rules


def is_binary(values: Any) -> bool:
    """Whether every finite value is exactly 0 or 1.

    Examples
    --------
    >>> is_binary([0.0, 1.0, float("nan")]), is_binary([0.5, 0.5])
    (True, False)
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return bool(np.all((v == 0.0) | (v == 1.0)))


def counts(
    data: xr.Dataset | xr.DataArray,
    *,
    dim: str = "run",
    binary: bool = True,
    name: str = "data",
    purpose: str = "this estimator",
) -> xr.Dataset:
    """Turn scores into per-cell counts (the one routine that does).

    Accepts an eval dataset (``score``), a score DataArray, or a counts dataset
    (``n_runs``, ``n_success``) that is passed through after checking.

    Parameters
    ----------
    data : Dataset or DataArray
    dim : str
        The run dimension reduced over.
    binary : bool
        When True (pass@k, pass^k, binomial models), every score must be 0 or 1:
        partial credit is refused with :class:`PartialCreditError` naming the
        cells, even when a cell's scores sum to a whole number.
    name, purpose : str
        Used in error messages.

    Returns
    -------
    xarray.Dataset
        ``n_runs`` (int64) and ``n_success`` (float64; the success count when
        binary), plus ``n_error`` when ``data`` has ``error``; other dims and
        coords as in ``data``; ``attrs["binary"]`` (0/1).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> s = xr.DataArray([[1.0, 0.0, np.nan]], dims=("task", "run"))
    >>> c = counts(s)
    >>> int(c.n_runs[0]), float(c.n_success[0])
    (2, 1.0)
    """
    if isinstance(data, xr.Dataset) and "n_runs" in data and "n_success" in data and "score" not in data:
        return _checked_counts(data, binary, name, purpose)
    if isinstance(data, xr.Dataset):
        if "score" not in data:
            raise HierbenchError(
                f"`{name}` must be an eval dataset (with `score`), a counts dataset (with `n_runs` and "
                f"`n_success`) or a score DataArray; got variables {list(data.data_vars)}"
            )
        score = data["score"]
        error = data.get("error")
    elif isinstance(data, xr.DataArray):
        score = data
        error = None
    else:
        raise TypeError(
            f"`{name}` must be an xarray Dataset or DataArray; got {type(data).__name__}"
        )
    check_dim(score, dim)
    vals = np.asarray(score.values, dtype=float)
    if np.isinf(vals).any():
        raise HierbenchError(
            f"`{name}`: scores must be finite or NaN (not run); found infinite values"
        )
    binary_data = is_binary(vals)
    if binary and not binary_data:
        raise _partial_credit_error(score, vals, name, purpose)
    ran = score.notnull()
    out = xr.Dataset(
        {"n_runs": ran.sum(dim).astype(np.int64), "n_success": score.fillna(0.0).sum(dim)}
    )
    if error is not None:
        out["n_error"] = error.sum(dim).astype(np.int64)
    if isinstance(data, xr.Dataset):
        out.attrs = {k: v for k, v in data.attrs.items() if isinstance(v, (str, int, float))}
    out.attrs["binary"] = int(binary_data)
    drop = [c for c in out.coords if dim in out.coords[c].dims]
    return out.drop_vars(drop)


def _checked_counts(data: xr.Dataset, binary: bool, name: str, purpose: str) -> xr.Dataset:
    """A counts dataset (``n_runs``, ``n_success``) checked and passed through (see :func:`counts`)."""
    n = data["n_runs"]
    c = data["n_success"]
    nv = np.asarray(n.values, dtype=float)
    cv = np.asarray(c.values, dtype=float)
    bad = (nv < 0) | (nv != np.round(nv)) | (cv < 0) | (cv > nv) | ~np.isfinite(cv)
    if binary:
        bad |= cv != np.round(cv)
    if bad.any():
        raise HierbenchError(
            f"`{name}`: counts must satisfy 0 <= n_success <= n_runs"
            + (" with whole numbers of successes" if binary else "")
            + f"; {int(bad.sum())} cells do not, e.g. (n_success, n_runs) "
            f"{list(zip(cv[bad][:5].tolist(), nv[bad][:5].tolist(), strict=True))}"
        )
    if binary and not int(data.attrs.get("binary", 1)):
        raise PartialCreditError(
            f"`{name}`: {purpose} needs binary scores, and these counts were made from partial-credit "
            "scores (attrs['binary'] = 0). Binarise the scores first (e.g. score >= threshold)."
        )
    out = data.copy()
    out.attrs = dict(data.attrs)
    out.attrs.setdefault("binary", 1 if is_binary(cv[nv == 1]) else int(binary))
    return out


def _partial_credit_error(score: xr.DataArray, vals: np.ndarray, name: str, purpose: str) -> PartialCreditError:
    """The error naming the first partial-credit scores (``vals`` is ``score``'s values)."""
    finite = np.isfinite(vals)
    partial = finite & (vals != 0.0) & (vals != 1.0)
    idx = np.argwhere(partial)[:5]
    where = []
    for ix in idx:
        cell = [
            str(score[d].values[i]) if d in score.coords else int(i)
            for d, i in zip(score.dims, ix, strict=True)
        ]
        where.append((*cell, float(vals[tuple(ix)])))
    return PartialCreditError(
        f"`{name}`: {purpose} needs binary scores (every score 0 or 1); {int(partial.sum())} scores "
        f"are partial credit, e.g. ({', '.join(map(str, score.dims))}, score) {where}. "
        "Binarise them first (e.g. `ds['score'] = (ds.score >= 1).where(ds.score.notnull())`) or use "
        "an estimator for continuous scores (bootstrap_ci, scorecard)."
    )


#: attr of a per-task label coord (``cluster``, ``tag``): the column of the records it was read from
SOURCE_COLUMN = "source_column"


def counted(n: int, noun: str) -> str:
    """``n`` with its noun, singular for one: ``counted(1, "agent")`` is "1 agent", else "n agents".

    Examples
    --------
    >>> counted(1, "agent"), counted(25, "agent"), counted(0, "task")
    ('1 agent', '25 agents', '0 tasks')
    """
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def refuse_agents_without_runs(n_runs: Any, agents: Any, name: str = "data", what: str = "this model") -> None:
    """Refuse an (agent, task) design in which some agent has no runs at all.

    Such an agent (every run of it excluded as an error, or a label left over
    from a selection) would sit in a model on its prior alone: a fixed
    agent's prior-only ability moves the agents' mean and spread, a pooled
    one is reported as if it had been evaluated. The one rule of the
    Bayesian count models and the crossed maximum-likelihood fit.

    Examples
    --------
    >>> refuse_agents_without_runs([[1, 0], [0, 0]], ["a", "b"])
    Traceback (most recent call last):
    ...
    hierbench._base.HierbenchError: `data`: agent(s) ['b'] have no runs at all (1 of 2 agents), and this model has no data to estimate them from; drop them first: data.drop_sel(agent=['b'])
    """
    n = np.asarray(n_runs)
    idle = np.asarray(agents).astype(str)[n.reshape(n.shape[0], -1).sum(axis=1) == 0]
    if idle.size:
        shown = idle[:10].tolist()
        more = f" and {idle.size - 10} more" if idle.size > 10 else ""
        raise HierbenchError(
            f"`{name}`: agent(s) {shown}{more} have no runs at all ({idle.size} of {n.shape[0]} agents), "
            f"and {what} has no data to estimate them from; drop them first: "
            f"{name}.drop_sel(agent={idle.tolist()!r})"
        )


#: why a component of a crossed decomposition cannot be estimated on its own from the design;
#: each rule said once, here (the builder's structure and the report quote them)
NO_AGENT_SPREAD = "one agent, so there is no spread between agents to estimate"
AGENT_TASK_IN_TASK = "one agent, so the agent x task interaction cannot be told apart from the task effect"
ONE_RUN = (
    "one run per agent x task cell, so the agent x task interaction cannot be told apart from "
    "run-to-run noise"
)
TASK_IN_RUNS = (
    "one agent with one run per task, so nothing repeats within a task and the task spread "
    "cannot be told apart from run-to-run noise"
)


def ability_meaning(task_effect: bool, clusters: bool = False) -> str:
    """What a crossed model's ability is: the house text for the ML fit and the Bayesian model.

    ``task_effect`` False is the one-agent, one-run design (:data:`TASK_IN_RUNS`),
    where the task effect is left out and the ability pools the tasks (those
    of a cluster of average difficulty when ``clusters``).

    Examples
    --------
    >>> ability_meaning(True)
    'log-odds of success on a task of average difficulty'
    """
    if task_effect:
        return "log-odds of success on a task of average difficulty"
    where = "the tasks of a cluster of average difficulty" if clusters else "the benchmark's tasks"
    return (
        f"log-odds of success pooled over {where}; one agent with one run per task leaves the "
        "task spread unidentified, so this is not the log-odds on a task of average difficulty "
        "(that is further from 0 when tasks differ)"
    )


def unidentified_by_design(n_agents: int, max_runs_per_cell: int) -> dict[str, tuple[str, str | None]]:
    """The rule of :func:`unidentified_components`, from the two figures that decide it.

    ``n_agents`` counts the agents with at least one run, ``max_runs_per_cell``
    the most runs of any agent x task cell. For a consumer that holds these
    figures rather than the run counts (a builder's design figures); the
    folding and the reason texts are decided here and nowhere else.

    Examples
    --------
    >>> unidentified_by_design(1, 1)["agent:task"]
    ('one agent, so the agent x task interaction cannot be told apart from the task effect', 'task')
    >>> unidentified_by_design(3, 1)["agent:task"][1]
    'residual'
    """
    if n_agents >= 2:
        return {"agent:task": (ONE_RUN, "residual")} if max_runs_per_cell < 2 else {}
    out: dict[str, tuple[str, str | None]] = {
        "agent": (NO_AGENT_SPREAD, None),
        "agent:task": (AGENT_TASK_IN_TASK, "task"),
    }
    if max_runs_per_cell < 2:
        out["task"] = (TASK_IN_RUNS, "residual")
    return out


def agents_with_runs(n_runs: np.ndarray) -> np.ndarray:
    """Indices of the agents (rows of ``n_runs``) with at least one run: the agents the rule counts."""
    return np.flatnonzero((np.asarray(n_runs) > 0).any(axis=1))


def unidentified_components(n_runs: np.ndarray) -> dict[str, tuple[str, str | None]]:
    """The components an (agent, task) design of run counts cannot identify on their own.

    ``{component: (reason, partner)}``, by the generic names ``agent``,
    ``task``, ``agent:task``, ``residual``: the component is undefined, and
    what the data do identify is its sum with ``partner`` (None: nothing).
    The one owner of these decisions and their reasons: every consumer
    (the crossed model's builder and structure, its variance components,
    the G-study adapter, the report, the crossed maximum-likelihood fit) asks here (or
    :func:`unidentified_by_design`, the same rule from the design figures).

    Examples
    --------
    >>> import numpy as np
    >>> sorted(unidentified_components(np.full((1, 5), 3)))
    ['agent', 'agent:task']
    >>> unidentified_components(np.full((1, 5), 1))["task"][1]
    'residual'
    >>> unidentified_components(np.full((2, 5), 1))["agent:task"][1]
    'residual'
    >>> unidentified_components(np.full((2, 5), 2))
    {}
    """
    n = np.asarray(n_runs)
    return unidentified_by_design(int(agents_with_runs(n).size), int(n.max()))


def cluster_label(data: xr.Dataset | xr.DataArray, cluster: str | None = "auto") -> str:
    """The name the clusters of ``data`` are called by: the column the user named (the one owner).

    A reader stores ``--cluster task_family`` as the coord ``cluster``, recording the column in
    the coord's ``source_column`` attr; every message and text that names the clusters says
    this name, never the internal ``cluster``. A coord without that attr (a dataset built by
    hand, or ``cluster="difficulty"`` naming a coord of its own) is called by its own name.

    Examples
    --------
    >>> import xarray as xr
    >>> s = xr.DataArray([0, 1], dims="task", coords={"cluster": ("task", ["a", "b"], {"source_column": "repo"})})
    >>> cluster_label(s), cluster_label(s.drop_vars("cluster").assign_coords(family=("task", ["a", "b"])), "family")
    ('repo', 'family')
    """
    key = "cluster" if cluster in ("auto", None) else str(cluster)
    coord = data.coords.get(key)
    return str(coord.attrs.get(SOURCE_COLUMN, key)) if coord is not None else key


def cluster_codes(
    data: xr.Dataset | xr.DataArray,
    cluster: str | None = "auto",
    *,
    dim: str = "task",
    missing: str = "singleton",
    name: str = "cluster",
) -> tuple[np.ndarray, np.ndarray] | None:
    """Map tasks to cluster codes (the one routine that does).

    Parameters
    ----------
    data : Dataset or DataArray
        Holds a coord along ``dim`` that names each task's cluster.
    cluster : str or None
        ``None``: no clusters (returns None). ``"auto"``: the coord ``cluster``
        when present, else None. Any other string: that coord, which must exist.
    missing : {"singleton", "refuse"}
        A task with no cluster label (``""``, None or NaN) is its own cluster
        (``"singleton"``, counted in a :class:`HierbenchWarning`) or an error.
        Missing labels are never pooled into one shared cluster.

    Returns
    -------
    (codes, labels) or None
        ``codes[t]`` in ``0..K-1`` for each task; ``labels[k]`` the cluster
        label as a string (a singleton's label is ``"<task label> (no cluster)"``).

    Examples
    --------
    >>> import xarray as xr
    >>> s = xr.DataArray([0, 1, 1], dims="task", coords={"cluster": ("task", ["a", "b", "a"])})
    >>> cluster_codes(s)[0].tolist()
    [0, 1, 0]
    """
    if cluster is None:
        return None
    check_choice(missing, "missing", ["singleton", "refuse"])
    key = "cluster" if cluster == "auto" else cluster
    if key not in data.coords:
        if cluster == "auto":
            return None
        raise ValueError(
            f"`{name}` must name a coord along {dim!r}; got {cluster!r} (coords {list(data.coords)})"
        )
    coord = data.coords[key]
    if coord.dims != (dim,):
        raise ValueError(
            f"`{name}`: coord {key!r} must lie along {dim!r}; it has dims {coord.dims}"
        )
    raw = np.asarray(coord.values, dtype=object)
    is_missing = np.array(
        [
            v is None or (isinstance(v, float) and np.isnan(v)) or (isinstance(v, str) and v == "")
            for v in raw
        ],
        dtype=bool,
    )
    labels = np.array([str(v) for v in raw], dtype=object)
    if is_missing.any():
        label = cluster_label(data, key)
        tasks = (
            np.asarray(data[dim].values).astype(str)
            if dim in data.coords
            else np.arange(raw.size).astype(str)
        )
        if missing == "refuse":
            column = f" (column {label!r})" if label != key else ""
            raise HierbenchError(
                f"`{name}`: {int(is_missing.sum())} tasks have no cluster label in coord {key!r}"
                f"{column}, e.g. {tasks[is_missing][:5].tolist()}; label them, or pass "
                "missing='singleton'"
            )
        warnings.warn(
            f"{int(is_missing.sum())} of {raw.size} tasks have no {label!r} label (e.g. "
            f"{tasks[is_missing][:5].tolist()}); each is treated as a cluster of its own",
            HierbenchWarning,
            stacklevel=2, skip_file_prefixes=OUTSIDE_PACKAGE,
        )
        labels = labels.copy()
        labels[is_missing] = [f"{t} (no cluster)" for t in tasks[is_missing]]
    uniq, codes = np.unique(labels.astype(str), return_inverse=True)
    return codes.astype(np.intp), uniq.astype(object)


# --------------------------------------------------------------------------- deprecations

_F = TypeVar("_F", bound=Callable[..., Any])


def renamed_kwargs(**renames: str) -> Callable[[_F], _F]:
    """Keep old keyword names working for one release, with a DeprecationWarning.

    The one mechanism for a renamed argument: decorate the function (whose
    signature holds only the new names) with ``old="new"`` pairs. A call with
    an old keyword warns, naming the new one, and passes its value on under the
    new name; giving both is a TypeError. Positional calls are untouched.

    Parameters
    ----------
    **renames : str
        Old keyword -> new keyword.

    Returns
    -------
    callable
        A decorator; the decorated function keeps its name, docstring and
        signature (``inspect.signature`` shows the new names).

    Examples
    --------
    >>> import warnings
    >>> @renamed_kwargs(dim="run_dim")
    ... def f(x, run_dim="run"):
    ...     return run_dim
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     f(1, dim="epoch"), str(w[0].message)
    ('epoch', '`dim` of f() is deprecated and will be removed in the next release; use `run_dim`')
    """

    def decorate(fn: _F) -> _F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(f"{fn.__name__}() got `{old}` (the deprecated name of `{new}`) "
                                    f"and `{new}`; give `{new}` only")  # fmt: skip
                warnings.warn(
                    f"`{old}` of {fn.__name__}() is deprecated and will be removed in the next "
                    f"release; use `{new}`",
                    DeprecationWarning,
                    stacklevel=2, skip_file_prefixes=OUTSIDE_PACKAGE,
                )
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def moved_names(module: str, moved: Mapping[str, tuple[str, str, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` under which old names still import, with a DeprecationWarning.

    The one mechanism for a public name that moved or was renamed: the module
    assigns ``__getattr__ = moved_names(__name__, {old: (new_module, new_name,
    why)})`` and keeps the old names in its ``__all__`` for one release.

    Parameters
    ----------
    module : str
        The module the old names are imported from (its ``__name__``).
    moved : mapping
        Old name -> (the module that owns it now, its name there, why it moved).

    Returns
    -------
    callable
        The module-level ``__getattr__``: it warns and returns the new object
        for an old name, and raises AttributeError for any other name.

    Examples
    --------
    >>> import warnings
    >>> get = moved_names("mymod", {"old_sqrt": ("math", "sqrt", "a clearer name")})
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     get("old_sqrt")(4.0), str(w[0].message)  # doctest: +ELLIPSIS
    (2.0, 'mymod.old_sqrt moved to math.sqrt (a clearer name); the old name will be removed in the next release')
    """

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        where, new, why = moved[name]
        warnings.warn(
            f"{module}.{name} moved to {where}.{new} ({why}); the old name will be removed in the next release",
            DeprecationWarning,
            stacklevel=2, skip_file_prefixes=OUTSIDE_PACKAGE,
        )
        return getattr(importlib.import_module(where), new)

    return __getattr__


# --------------------------------------------------------------------------- progress


def watched(stream: Any = None) -> bool:
    """Whether someone watches this process: ``stream`` (default stderr) is a terminal, or a Jupyter kernel runs it.

    The one rule for progress output (bars, stage lines, the sampler's own
    bar). A kernel is detected from a running ``ZMQInteractiveShell``, never
    from ``ipykernel`` merely being imported (any library may import it), and
    IPython is never imported here. ``HIERBENCH_PROGRESS=0`` in the
    environment says nobody watches (batch jobs; notebooks executed for
    publication, whose saved outputs should hold results, not progress bars).

    Examples
    --------
    >>> import io
    >>> watched(io.StringIO())
    False
    """
    import os
    import sys

    if os.environ.get("HIERBENCH_PROGRESS", "").strip().lower() in ("0", "false", "no", "off"):
        return False

    ip = sys.modules.get("IPython")
    if ip is not None:
        try:
            shell = ip.get_ipython()
        except Exception:  # pragma: no cover - a broken IPython install
            shell = None
        if shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell":
            return True
    stream = sys.stderr if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)())


def _bar_class(stream: Any):
    """Tqdm's notebook widget in a Jupyter kernel with ipywidgets, else its text bar.

    What ``tqdm.auto`` picks, minus its warning when ipywidgets is missing (the
    text bar is used then). A bar given an explicit ``stream`` is always text.
    """
    import importlib.util

    from tqdm import std

    if stream is None and watched() and importlib.util.find_spec("ipywidgets") is not None:
        import sys

        ip = sys.modules.get("IPython")
        shell = ip.get_ipython() if ip is not None else None
        if shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell":
            from tqdm import auto

            return auto.tqdm
    return std.tqdm


class Progress:
    """A progress bar for long loops: tqdm's widget in a notebook, its text bar in a terminal.

    ``enabled=None`` (the default everywhere) shows it only when a person is
    watching: standard error is a terminal, or the code runs in a Jupyter
    kernel. Nothing is drawn until ``delay`` seconds have passed, so quick
    work stays silent; ``enabled=False`` never draws, ``True`` always does.
    ``total=None`` is a bar without an end (elapsed time and a count);
    :meth:`stage` names the step under way beside the bar.

    Examples
    --------
    >>> with Progress(3, "resamples", enabled=False) as bar:
    ...     for _ in range(3):
    ...         bar.update(1)
    >>> bar.done
    3
    """

    def __init__(
        self,
        total: int | None,
        desc: str,
        *,
        enabled: bool | None = None,
        delay: float = 0.5,
        stream: Any = None,
        unit: str = "it",
    ):
        self.total = None if total is None else max(int(total), 1)
        self.desc = desc
        self.done = 0
        if enabled is None:
            enabled = watched(stream)
        self.enabled = bool(enabled)
        self._bar = None
        import time

        self._shown_after = time.monotonic() + float(delay)
        if self.enabled:
            import shutil
            import sys

            cls = _bar_class(stream)
            # a terminal reporting no size (some pseudo-terminals) would hide the bar
            size = shutil.get_terminal_size((100, 20))
            self._bar = cls(
                total=self.total,
                desc=desc,
                delay=float(delay),
                file=stream if stream is not None else sys.stderr,
                unit=unit,
                leave=True,
                ncols=size.columns,
                nrows=size.lines,
            )

    def update(self, n: int = 1) -> None:
        """Advance by ``n`` steps (redrawn when visible)."""
        self.done += int(n)
        if self._bar is not None:
            self._bar.update(int(n))

    def stage(self, text: str) -> None:
        """Name the step under way (shown after the bar; nothing when not visible)."""
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)
            self.refresh()

    def refresh(self) -> None:
        """Redraw once ``delay`` has passed (the elapsed time moves on without a step done)."""
        import time

        if self._bar is not None and time.monotonic() >= self._shown_after:
            self._bar.refresh()

    def close(self) -> None:
        """Finish the bar (a text bar ends its line; nothing was drawn if it never showed)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
