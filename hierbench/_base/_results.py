"""The base of every result object, and the rules results share.

:class:`Result` (``estimate``, ``ci``, a short repr, ``to_frame()``, ``to_dataset()``),
:class:`ResampledResult` and :class:`DrawsResult` (which keep their resamples or draws),
:func:`field_alias`, :func:`fit_record` (the one reader of a fit's JSON attrs) and
:func:`settle_trend` (a doubling time's warnings and refusal).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import Literal

import numpy as np
import xarray as xr

from ._intervals import interval_label
from ._warnings import ExtrapolatedHorizonWarning
from ._warnings import HierbenchError
from ._warnings import HierbenchWarning
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
    """``x`` to 4 significant digits; below a positive ``floor`` (and above 0) as ``<floor``.

    An infinity reads ``inf`` / ``-inf`` (a horizon of an agent that succeeded on every run is
    longer than any task, not missing); ``nan`` is kept for NaN alone.
    """
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"<{floor:g}" if floor is not None and 0 < x < floor else f"{x:.4g}"


def _shown_cells(n: int) -> list[int]:
    """The cells a result's repr lists: all up to 8, else the first 5 and the last 2."""
    return list(range(n)) if n <= 8 else [*range(5), *range(n - 2, n)]


#: the column a result's repr lines are wrapped at (:func:`wrap_repr`)
REPR_WIDTH = 100


def wrap_repr(lines: list[str], width: int = REPR_WIDTH) -> list[str]:
    """``lines`` with each one longer than ``width`` broken at spaces, its continuations indented 2 more.

    The one rule for a repr's long sentences (a table's lines, shorter, pass as they are).

    Examples
    --------
    >>> wrap_repr(["  head: " + "word " * 12], width=30)
    ['  head: word word word word', '    word word word word word', '    word word word']
    """
    import textwrap

    out = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip(" "))]
        out += textwrap.wrap(line.strip(), width=width, initial_indent=lead, subsequent_indent=lead + "  ",
                             break_long_words=False, break_on_hyphens=False)  # fmt: skip
    return out


class _Unknown(dict):
    """Format keys a label names but the result does not hold read ``?``."""

    def __missing__(self, key: str) -> str:
        return "?"


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
    #: the other fields :meth:`to_dataset` does not hold under their own name, each with the reason
    #: (an object it cannot store, or a field it holds in another form); every other field is saved
    _not_saved: ClassVar[Mapping[str, str]] = {}
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
        """The whole result as one :class:`xarray.Dataset`, so that a saved result keeps what it holds.

        Every DataArray field is a variable (``estimate`` and ``ci`` first); a
        Dataset field, or an object with a ``to_dataset`` of its own (an item
        bank, a score), adds its variables as ``<field>_<variable>``
        (``_with_dataset_fields``); the plain fields (a stop reason, flags, a
        p-value, a count, the settings) go into the attrs (``_plain_attrs``).
        The fields left out are named by the class: ``_dataset_exclude`` (raw
        resamples and draws) and ``_not_saved`` (each with the reason); any
        other field it cannot store is named in a :class:`hierbench.HierbenchWarning`.

        The attrs are Python values to read in memory (``ds.attrs["options"]["n_resamples"]``):
        a dict stays a dict, a list a list, and a flag from a result's own attrs
        a bool. netCDF holds none of a dict, a bool, or a list of mixed or nested
        values, so a plain ``ds.to_netcdf(path)`` of such a Dataset fails with
        xarray's ``TypeError: Invalid value for attr ...`` (netCDF4's ``illegal
        data type for attribute`` for a bool). Write it with
        :func:`hierbench.io.save_dataset`, which stores those attrs as JSON text
        (named in its ``hierbench_json_attrs`` attr) and a bool as 0 / 1;
        :func:`hierbench.io.load_dataset` gives the dicts and lists back, and
        plain ``xr.open_dataset`` reads the file too (``json.loads`` of those
        attrs gives them back).
        """
        values = {f: getattr(self, f) for f in self._saved_fields()}
        subs = {f: _as_dataset(v) for f, v in values.items()}  # once a field: an object's to_dataset may be costly
        lost = [f"{f} ({type(v).__name__})" for f, v in values.items() if not _storable(v, subs[f])]
        if lost:
            warn_user(
                f"{type(self).__name__}.to_dataset() cannot store the field(s) {', '.join(lost)}: they are "
                "not in the Dataset, so a saved result lacks them; read them from the result itself",
                HierbenchWarning,
            )
        out = {f: v for f, v in values.items() if isinstance(v, xr.DataArray)}
        return self._with_dataset_fields(xr.Dataset(out, attrs=self._plain_attrs()), subs)

    def _saved_fields(self) -> list[str]:
        """The fields :meth:`to_dataset` holds: all but those ``_dataset_exclude`` and ``_not_saved`` name."""
        return [f for f in self._fields() if f not in self._dataset_exclude and f not in self._not_saved]

    def _plain_attrs(self) -> dict[str, Any]:
        """The plain fields as attrs, in the forms a file written by ``hierbench.io.save_dataset`` holds.

        A str or a number as it is (a numpy one as Python's), a bool as 0 / 1,
        a tuple of str as one string, an item per line; any other list or
        tuple as a list and a dict as a dict under the field's name, made
        JSON-ready (``save_dataset`` writes them as JSON, ``load_dataset``
        restores them); the keys of a dict field named ``attrs`` are merged in
        instead (one a field's name holds with another value as ``attrs_<key>``).
        DataArrays, Datasets and objects are not attrs (:meth:`to_dataset`).
        """
        out: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        for f in self._saved_fields():
            v = getattr(self, f)
            if isinstance(v, bool | np.bool_):
                out[f] = int(v)
            elif isinstance(v, tuple) and all(isinstance(x, str) for x in v):
                out[f] = "\n".join(v)
            elif _plain(v):
                if f == "attrs" and isinstance(v, Mapping):
                    merged = json_ready(v)
                else:
                    out[f] = json_ready(v)
        clash = {f"attrs_{k}": x for k, x in merged.items() if k in out and json.dumps(x) != json.dumps(out[k])}
        return {**{k: x for k, x in merged.items() if k not in out}, **out, **clash}

    def _with_dataset_fields(self, ds: xr.Dataset, subs: Mapping[str, xr.Dataset | None]) -> xr.Dataset:
        """``ds`` with each Dataset field's variables and attrs as ``<field>_<variable>``, ``<field>_<attr>``.

        ``subs``: each saved field's Dataset (``_as_dataset``: a field holding
        an object with its own ``to_dataset``, an item bank or a score, counts
        as that Dataset), None for the others, in the fields' order. A dim it
        shares with ``ds`` stays one dim where its size and labels are the
        same, else is renamed ``<field>_<dim>``; so is a coordinate whose values differ.
        """
        for f, sub in subs.items():
            if sub is not None:
                ds = merge_prefixed(ds, sub, f)
        return ds

    def to_frame(self) -> pd.DataFrame:
        """Return a tidy pandas table: one row per cell of ``estimate`` (agent, pair, ...).

        The interval ends are the ``lower`` / ``upper`` columns, level and kind columns too.
        Every other field over (some of) the estimate's dims is a column: a
        DataArray under its name, another interval (a ``ci_bound`` dim) as
        ``<name>_lower`` / ``<name>_upper`` (``<name>`` the field's, less a
        trailing ``_ci``), a Dataset field's variable as ``<field>_<variable>``.
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
            if f in ("estimate", "ci") or f in self._dataset_exclude or v is est or v is ci or v is None:
                continue
            sub = {f: v} if isinstance(v, xr.DataArray) else _as_dataset(v)
            if isinstance(sub, xr.Dataset):  # its variables as to_dataset names them (a dim of other labels renamed)
                sub = merge_prefixed(xr.Dataset(coords=est.coords), sub, f)
            for name, da in ({} if sub is None else sub.items()):
                cols.update(frame_columns(da, name, est))
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
        lines = [f"{type(self).__name__}: {head} ({label})" if head else f"{type(self).__name__}: {self._label()} with {label}"]
        return lines + self._cell_lines()

    def _label(self) -> str:
        """``_estimate_label`` with each ``{key}`` in it filled in (``?`` where the result holds none).

        A key is one of the result's plain fields (a str or a number), a key of its
        ``attrs`` dict field or of ``estimate.attrs``, or ``name`` (the estimate's name),
        so a label can name what varies by call: a scale, a target, a k.
        """
        label = self._estimate_label
        if "{" not in label:
            return label
        names = [f for f in self._fields() if f not in ("estimate", "ci")]
        plain = {f: getattr(self, f) for f in names if isinstance(getattr(self, f), str | int | float)}
        own = getattr(self, "attrs", None) if "attrs" in names else None
        keys = _Unknown({**self.estimate.attrs, **(own if isinstance(own, Mapping) else {}), **plain})
        keys.setdefault("name", self.estimate.name if self.estimate.name is not None else "?")
        return label.format_map(keys)

    def _elided_flags(self, flag: xr.DataArray | None, name: str = "ci_flag") -> list[str]:
        """The repr line counting the flagged cells among those the repr elides (``_shown_cells``); none: no line.

        The one rule of the results that flag cells (``ci_flag``): a flag in the elided
        middle is not lost from the repr without a word.
        """
        if flag is None:
            return []
        est = self.estimate
        vals = np.asarray(flag.broadcast_like(est).transpose(*est.dims).values, dtype=object).ravel()
        flagged = np.array([isinstance(v, str) and v != "" for v in vals], dtype=bool)
        hidden = int(np.delete(flagged, _shown_cells(vals.size)).sum())
        return [f"  ({hidden} more flagged: see .{name})"] if hidden else []

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


def json_ready(v: Any) -> Any:
    """``v`` as plain Python that JSON writes: numpy numbers as Python's, arrays and tuples as lists.

    Dict keys become text, dates ISO text; a 0-d DataArray is its value. Raises
    :class:`TypeError` naming the type of a value JSON cannot hold.

    Examples
    --------
    >>> json_ready({"k": np.int64(4), "bins": (0.0, np.float32(0.5)), "ok": np.bool_(True)})
    {'k': 4, 'bins': [0.0, 0.5], 'ok': True}
    """
    if v is None or isinstance(v, str | bool | int | float):
        return v
    if isinstance(v, np.generic):
        return json_ready(v.item())
    if isinstance(v, np.ndarray | list | tuple):
        return [json_ready(x) for x in (v.tolist() if isinstance(v, np.ndarray) else v)]
    if isinstance(v, Mapping):
        return {str(k): json_ready(x) for k, x in v.items()}
    if isinstance(v, xr.DataArray) and v.ndim == 0:
        return json_ready(v.values.item())
    if isinstance(v, dt.date):  # a datetime too
        return v.isoformat()
    raise TypeError(f"a {type(v).__name__} cannot be written as JSON")


def _storable(v: Any, sub: xr.Dataset | None) -> bool:
    """Whether :meth:`Result.to_dataset` can hold ``v``: None (nothing to hold), a DataArray, a Dataset, plain values.

    ``sub`` is ``_as_dataset(v)``, which the caller has (an object's ``to_dataset`` is built once).
    """
    return v is None or isinstance(v, xr.DataArray | np.bool_) or sub is not None or _plain(v)


def _plain(v: Any) -> bool:
    """Whether ``v`` is an attr of :meth:`Result.to_dataset`: text, a number, or a list, tuple or dict JSON holds."""
    if not isinstance(v, str | int | float | np.number | list | tuple | Mapping) or isinstance(v, xr.Dataset):
        return False
    try:
        json_ready(v)
    except TypeError:
        return False
    return True


def _as_dataset(v: Any) -> xr.Dataset | None:
    """``v`` if a Dataset, its ``to_dataset()`` if an object with one (not a DataArray), else None."""
    if isinstance(v, xr.Dataset):
        return v
    if v is not None and not isinstance(v, xr.DataArray) and callable(getattr(type(v), "to_dataset", None)):
        return v.to_dataset()
    return None


def merge_prefixed(ds: xr.Dataset, sub: xr.Dataset, name: str) -> xr.Dataset:
    """``ds`` with ``sub``'s variables as ``<name>_<variable>`` and its attrs as ``<name>_<attr>``.

    A dim of ``sub`` that ``ds`` has too stays one dim where its size and
    labels are the same, else is renamed ``<name>_<dim>`` (its labels with
    it); a coordinate of ``sub`` that ``ds`` holds with other values is
    renamed ``<name>_<coord>``; an attr whose name ``ds`` holds with another
    value is ``<name>_attrs_<attr>``. Nothing of either is dropped.

    Examples
    --------
    >>> ds = xr.Dataset({"estimate": ("agent", [0.5, 0.7])}, coords={"agent": ["a", "b"]})
    >>> check = xr.Dataset({"p": ("agent", [0.2, 0.9]), "n": ("bin", [3, 4])}, coords={"agent": ["a", "b"]})
    >>> sorted(merge_prefixed(ds, check, "fit_check").data_vars)
    ['estimate', 'fit_check_n', 'fit_check_p']
    >>> other = xr.Dataset({"x": ("agent", [1, 2, 3])}, coords={"agent": ["a", "b", "c"]})
    >>> merge_prefixed(ds, other, "trace")["trace_x"].dims
    ('trace_agent',)
    """
    rename = {}
    for d in sub.dims:
        same = d not in ds.dims or (
            ds.sizes[d] == sub.sizes[d]
            and (d in ds.indexes) == (d in sub.indexes)
            and (d not in ds.indexes or ds.indexes[d].equals(sub.indexes[d]))
        )
        if not same:
            rename[d] = f"{name}_{d}"
    sub = sub.rename(rename)
    clash = [c for c in sub.coords if c not in sub.dims and c in ds.variables and not ds[c].equals(sub[c])]
    sub = sub.rename({c: f"{name}_{c}" for c in clash} | {v: f"{name}_{v}" for v in sub.data_vars})
    out = xr.merge([ds, sub], join="exact", compat="equals", combine_attrs="override")
    out.attrs = dict(ds.attrs)
    for k, v in json_ready(dict(sub.attrs)).items():
        key = f"{name}_{k}"
        same = key not in out.attrs or json.dumps(out.attrs[key], default=str) == json.dumps(v, default=str)
        out.attrs[key if same else f"{name}_attrs_{k}"] = v
    return out


def frame_columns(da: xr.DataArray, name: str, est: xr.DataArray) -> dict[str, xr.DataArray]:
    """The ``to_frame`` columns of a field ``da`` over (some of) the dims of ``est``, with its labels; else none.

    ``{name: da}``; an interval (a ``ci_bound`` dim) as ``<name>_lower`` /
    ``<name>_upper``, ``<name>`` less a trailing ``_ci`` (``precision_ci`` gives
    ``precision_lower``): the one rule for a result's second intervals.
    """
    dims = set(da.dims) - {"ci_bound"}
    if not dims <= set(est.dims) or any(
        da.sizes[d] != est.sizes[d] or (d in da.indexes and d in est.indexes and not da.indexes[d].equals(est.indexes[d]))
        for d in dims
    ):
        return {}
    if "ci_bound" not in da.dims:
        return {name: da}
    stem = name.removesuffix("_ci")
    return {f"{stem}_{end}": da.sel(ci_bound=end, drop=True) for end in ("lower", "upper")}


def input_label(x: Any, other: Any, fallback: str) -> str:
    """What a paired result calls its input ``x`` (``other`` the second): the agent it is, as far as ``x`` says.

    Its scalar ``agent`` coordinate (``ds.score.sel(agent="A")`` keeps one);
    else its name, where it names ``x`` apart from ``other`` (not two arrays
    both named ``score``); else ``fallback`` (``"a"``, ``"b"``).

    Examples
    --------
    >>> s = xr.DataArray([[1.0, 0.0]], dims=("agent", "task"), coords={"agent": ["A"]}, name="score")
    >>> input_label(s.isel(agent=0), s, "a"), input_label(s.isel(agent=0, drop=True), s, "a")
    ('A', 'a')
    """
    coord = getattr(x, "coords", {}).get("agent")
    if coord is not None and coord.ndim == 0:
        return str(coord.item())
    name = getattr(x, "name", None)
    if name is not None and name != getattr(other, "name", None):
        return str(name)
    return fallback


def fit_record(fit: Any, name: str, *, unreadable: Literal["raise", "warn"] = "raise") -> dict[str, Any]:
    """A JSON record in a fit's root attrs (``hierbench_spec``, ``fit_run``, ...); ``{}`` if absent.

    The one reader of those attrs; a fit made elsewhere has none. A record
    held as a dict already (set in memory, not read from a file) is that dict.
    A record that is not a JSON object (text that is not JSON, a JSON list, a
    number) is unreadable: with ``unreadable="raise"`` (the default) it is
    refused with a :class:`HierbenchError` naming the attr, rather than read as
    absent, since a report or a metric built on it would otherwise describe
    another model; with ``unreadable="warn"`` (advice, such as
    ``hierbench.bayes.convergence_remedy``, which must not fail on the fit it
    advises about) the same words are a :class:`HierbenchWarning` and the
    record reads as absent, ``{}``: what would be read from it is left out.
    """
    out = _json_attr(fit, name, unreadable, listed=False)
    return dict(out) if out is not None else {}


def fit_checks(fit: Any, *, unreadable: Literal["raise", "warn"] = "raise") -> list[dict[str, Any]]:
    """A fit's recorded checks (its ``diag_checks`` attr: a JSON list, an object per check); ``[]`` if absent.

    Read by :func:`fit_record`'s rule, in its words: a list held in memory is that list;
    text that is not JSON, a JSON object or number, or a list of other things than objects
    is refused (``unreadable="raise"``: what states a verdict from the checks, such as the
    report's convergence table), or named in a warning and read as ``[]``
    (``unreadable="warn"``: advice), never read as "no failed checks" without a word.
    """
    out = _json_attr(fit, "diag_checks", unreadable, listed=True,
                     remedy="hierbench.bayes.compute_diagnostics(fit) writes it again from the draws, or refit")  # fmt: skip
    return [dict(c) for c in out] if out is not None else []


def _json_attr(fit: Any, name: str, unreadable: str, *, listed: bool,
               remedy: str = "refit, or drop the attr to read the fit as one made elsewhere") -> Any:  # fmt: skip
    """The parsed JSON attr ``name`` (an object, or with ``listed`` a list of objects), None if absent or unreadable."""
    if unreadable not in ("raise", "warn"):
        raise ValueError(f"`unreadable` must be 'raise' or 'warn'; got {unreadable!r}")
    attrs = getattr(fit, "attrs", None)
    raw = attrs.get(name) if isinstance(attrs, Mapping) else None
    if raw is None:
        return None
    held = isinstance(raw, (list, tuple) if listed else Mapping)
    try:
        out = raw if held else json.loads(raw)
    except (TypeError, ValueError) as exc:
        why = f"the fit's attr {name!r} is not JSON ({exc}): it was not written by hierbench or was edited"
    else:
        why = _json_shape_problem(name, out, listed, "" if held else "JSON ")
    if not why:
        return out
    if unreadable == "raise":
        raise HierbenchError(f"{why}; {remedy}")
    warn_user(f"{why}; it is read as absent, so what would be read from it is left out: {remedy}", HierbenchWarning)
    return None


def _json_shape_problem(name: str, out: Any, listed: bool, kind: str) -> str:
    """Why ``out`` is not the shape hierbench writes for ``name`` ("" when it is)."""
    if not listed:
        return "" if isinstance(out, Mapping) else f"the fit's attr {name!r} holds a {kind}{type(out).__name__}, not the object hierbench writes"
    if not isinstance(out, list | tuple):
        return f"the fit's attr {name!r} holds a {kind}{type(out).__name__}, not the list of one object per check hierbench writes"
    odd = [type(c).__name__ for c in out if not isinstance(c, Mapping)]
    return (f"the fit's attr {name!r} holds a {kind}list with an item of type {odd[0]}, not the list of one object per "
            "check hierbench writes") if odd else ""  # fmt: skip


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


def stale_counts(dt) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The chains and draws the recorded checks were computed on, and those the posterior holds, where they differ.

    ``((chains, draws) recorded, (chains, draws) held)`` when draws were cut after fitting;
    None where they agree or nothing is recorded. The one test of stale checks: the console says so (``stale_diagnostics``), the report recomputes them.
    """
    a = getattr(dt, "attrs", {})
    if a.get("diag_n_chains") is None or a.get("diag_n_draws") is None or "posterior" not in getattr(dt, "children", {}):
        return None
    sizes = dt["posterior"].sizes
    was = (int(a["diag_n_chains"]), int(a["diag_n_draws"]))
    now = (int(sizes.get("chain", 0)), int(sizes.get("draw", 0)))
    return None if was == now else (was, now)


#: ``diag_verdict`` of a fit whose only failed checks are checks that could not be made
NOT_FULLY_CHECKED = "not fully checked"


def fit_verdict(attrs) -> str | None:
    """A fit's convergence verdict: ``"converged"``, ``"not converged"`` or :data:`NOT_FULLY_CHECKED`.

    Read from ``diag_verdict``; a fit saved before it was recorded has only ``diag_converged``
    (1 or 0), read as the first two. None where the fit was not checked.
    """
    if attrs.get("diag_verdict"):
        return str(attrs["diag_verdict"])
    if attrs.get("diag_converged") is None:
        return None
    return "converged" if int(attrs["diag_converged"]) else "not converged"
