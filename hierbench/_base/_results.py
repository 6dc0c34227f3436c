"""The base of every result object, and the rules results share.

:class:`Result` (``estimate``, ``ci``, a short repr, ``to_frame()``, ``to_dataset()``),
:class:`ResampledResult` and :class:`DrawsResult` (which keep their resamples or draws),
:func:`field_alias`, :func:`fit_record` (the one reader of a fit's JSON attrs) and
:func:`settle_trend` (a doubling time's warnings and refusal).
"""

from __future__ import annotations

import dataclasses
import json
import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

import numpy as np
import xarray as xr

from ._intervals import interval_label
from ._warnings import ExtrapolatedHorizonWarning
from ._warnings import HierbenchError
from ._warnings import UndefinedWarning
from ._warnings import warn_user

if TYPE_CHECKING:
    import pandas as pd


#: the scale of a Bayesian [0, 1]-score (fractional) fit's linear predictor: its coefficients, random-term
#: sds and agents' variance. Not the maximum-likelihood half's quasi-binomial logit: the family's slope
#: matches the logit's at mean 1/2 only (``hierbench.bayes._models._unit_interval``), so the two halves
#: (``hierbench.compare.side_by_side``) compare on the points scale, not on this one
FRACTIONAL_LINEAR = "linear predictor of the [0, 1] family (the logit only at mean 1/2 and on pass/fail tasks)"


def _fmt(x: float, floor: float | None = None) -> str:
    """``x`` to 4 significant digits; below a positive ``floor`` (and above 0) as ``<floor``."""
    if not np.isfinite(x):
        return "nan"
    return f"<{floor:g}" if floor is not None and 0 < x < floor else f"{x:.4g}"


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
    #: what the repr's first line calls the estimate when no title field names it (e.g. its unit)
    _estimate_label: ClassVar[str] = "estimate"
    #: the repr prints a positive value below it as ``<floor`` (None: every value as it is)
    _repr_floor: ClassVar[float | None] = None

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
        """Every DataArray field as one :class:`xarray.Dataset` (``estimate`` and ``ci`` first).

        The plain fields (a stop reason, flags, a p-value, a count) go into its
        attrs (``_plain_attrs``), so a saved result keeps them.
        """
        out: dict[str, xr.DataArray] = {}
        for f in self._fields():
            if f in self._dataset_exclude:
                continue
            v = getattr(self, f)
            if isinstance(v, xr.DataArray):
                out[f] = v
        return xr.Dataset(out, attrs=self._plain_attrs())

    def _plain_attrs(self) -> dict[str, Any]:
        """The fields that are a str, a number, a bool (as 0 / 1) or a tuple of str, as attrs.

        Those are the types a netCDF attribute holds; a tuple of str becomes one
        string, an item per line (netCDF reads a one-item list back as its item);
        dicts, arrays and objects stay out.
        """
        out: dict[str, Any] = {}
        for f in self._fields():
            v = getattr(self, f)
            if isinstance(v, bool | np.bool_):
                out[f] = int(v)
            elif isinstance(v, str | int | float | np.integer | np.floating):
                out[f] = v
            elif isinstance(v, tuple) and all(isinstance(x, str) for x in v):
                out[f] = "\n".join(v)
        return out

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
        lines = [f"{type(self).__name__}: {head} ({label})" if head else f"{type(self).__name__}: {self._estimate_label} with {label}"]
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
            f = self._repr_floor
            return [f"  {_fmt(float(est), f)} [{_fmt(lo, f)}, {_fmt(hi, f)}]" + (f"  ({note})" if note else "")]
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
                f"  {lab}: {_fmt(float(flat[0].isel(_cell=i)), self._repr_floor)} [{_fmt(lo, self._repr_floor)}, "
                f"{_fmt(hi, self._repr_floor)}]" + (f"  ({note})" if note else "")
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
