"""How the readers turn raw columns into identifiers, error flags and numbers.

One place for the rules every reader shares (:func:`from_records`,
:func:`read_battles`, :func:`counts_from_parquet`, :func:`counts_from_dask`):

Identifiers (agent, task, run, cluster, battle agents)
    strings exactly as written. A text value is kept as it is (``"001"``
    stays ``"001"``, ``" a"`` keeps its space); a number that a file or a
    DataFrame already holds as a number is written as its decimal text
    (int ``7`` -> ``"7"``, float ``1.5`` -> ``"1.5"``, bool -> ``"True"`` /
    ``"False"``). Two different values that would read the same (the number
    ``7`` and the text ``"7"`` in one JSONL column or one mixed DataFrame
    column, or across the files of a Parquet folder) are refused, never
    merged. A value with no single written form (a list, a dict, bytes, a
    date) is refused. Missing (``None``, NaN, ``""``) is refused for agents
    and tasks. Labels that differ only by spaces (around them or a run of
    them), Unicode normalisation, case or invisible (format) characters are
    kept apart with a :class:`SimilarLabelsWarning`. An int and a float that
    are equal (``1`` and ``1.0``) are refused too (they would be two labels).

Error flags (the ``error`` column and boolean annotations)
    booleans, the numbers 0 and 1, or text from :data:`ERROR_TRUE` /
    :data:`ERROR_FALSE` (case-insensitive, stripped; numeric text equal to 0
    or 1 as well). Missing values (None, NaN, ``""``, ``none``, ``null``,
    ``nan``, ``na``, ``n/a``) mean "no error flagged". Any other value is
    refused with the distinct values listed, never counted as an error: map
    it with ``error_values={"timeout": True, "success": False}``, or pass
    ``error_values="nonempty"`` to count every non-empty value outside
    :data:`ERROR_FALSE` as an error (a free-text error-message column).

Numbers (scores, extra per-run columns, counts)
    real numbers (booleans as 0/1), or text that parses as a number; the
    usual missing-value spellings (``""``, ``NA``, ``NaN``, ``null``,
    ``None``, ...) are NaN. Complex numbers, dates, durations and other
    objects are flagged as not numeric, never cast.
"""

from __future__ import annotations

import decimal
import json
import re
import unicodedata
from collections.abc import Iterable
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .._base import HierbenchWarning
from .._base import warn_user
from ._schema import EvalDataError
from ._schema import _fmt_list

__all__ = ["ERROR_FALSE", "ERROR_MISSING", "ERROR_TRUE", "NA_TEXT", "SimilarLabelsWarning"]


class SimilarLabelsWarning(HierbenchWarning):
    """Distinct labels that differ only by spaces, Unicode normalisation, case or invisible characters (kept apart)."""

#: Text (lower-cased, stripped) read as "an infrastructure error happened".
ERROR_TRUE = frozenset({"true", "t", "yes", "y", "1", "error"})
#: Text (lower-cased, stripped) read as "no infrastructure error".
ERROR_FALSE = frozenset({"false", "f", "no", "n", "0", "ok"})
#: Text (lower-cased, stripped) read as a missing flag, i.e. no error flagged.
ERROR_MISSING = frozenset({"", "none", "null", "nan", "na", "n/a", "<na>"})
#: Text read as a missing number (the usual spellings, as pandas' defaults).
NA_TEXT = frozenset(
    {
        "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
        "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
    }
)  # fmt: skip

_CANONICAL_INT = re.compile(r"-?(0|[1-9][0-9]*)")


def _where(source: str | None) -> str:
    return f" in {source}" if source else ""


#: the kinds of an identifier's value (``label_kinds``); ``int`` and ``float`` are both numbers
LABEL_KINDS = ("text", "int", "float", "bool")


def _kind(v: object) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    if isinstance(v, str):
        return "text"
    return type(v).__name__


def _family(kind: str) -> str:
    """A label's kind as the messages say it: ``int`` and ``float`` are both a number."""
    return "number" if kind in ("int", "float") else kind


def _label(v: object) -> str:
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return str(v) if type(v) is not np.float32 else str(float(v))
    return str(v)


def is_missing(col: pd.Series) -> np.ndarray:
    """Missing entries of a raw column: None, NaN, pd.NA or the empty string."""
    miss = col.isna().to_numpy(dtype=bool)
    if col.dtype == object or pd.api.types.is_string_dtype(col.dtype):
        empty = col.eq("")
        miss = miss | empty.fillna(False).to_numpy(dtype=bool)
    return miss


def _labels_to_text(values) -> np.ndarray:
    """Labels as text for a file: a missing label (:func:`is_missing`) becomes ``""``, never ``"nan"``.

    The storage convention of :mod:`hierbench.data._schema` ("Missing labels").
    """
    values = pd.Series(list(values), dtype=object)
    miss = is_missing(values)
    return np.array(["" if m else str(v) for v, m in zip(values, miss, strict=True)], dtype=object)


def _labels_from_text(values) -> np.ndarray:
    """Labels read back from a file: ``""`` is a missing label (NaN), any other text a label."""
    return np.array([np.nan if v == "" else v for v in values], dtype=object)


def label_kinds(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(labels, kinds) of a raw identifier column; missing entries are None in both."""
    miss = is_missing(col)
    dt = col.dtype
    n = len(col)
    if pd.api.types.is_bool_dtype(dt) and not miss.any():
        return np.where(col.to_numpy(dtype=bool), "True", "False").astype(object), np.full(n, "bool", object)
    if pd.api.types.is_integer_dtype(dt) and not miss.any():  # via text: uint64 stays exact
        return col.astype(str).to_numpy(dtype=object), np.full(n, "int", object)
    if pd.api.types.is_string_dtype(dt) and dt is not np.dtype(object):
        labels = col.to_numpy(dtype=object, na_value=None)
        kinds = np.full(n, "text", object)
    else:
        vals = col.to_numpy(dtype=object)
        if pd.api.types.infer_dtype(vals, skipna=True) == "string":
            labels, kinds = vals.copy(), np.full(n, "text", object)
        else:
            labels = np.array([_label(v) for v in vals], dtype=object)
            kinds = np.array([_kind(v) for v in vals], dtype=object)
    labels = np.asarray(labels, dtype=object)
    if miss.any():
        labels[miss] = None
        kinds[miss] = None
    return labels, kinds


def id_labels(
    col: pd.Series,
    *,
    what: str,
    column: str,
    source: str | None = None,
    allow_missing: bool = False,
) -> np.ndarray:
    """Return the identifiers of a raw column as strings exactly as written (object array).

    Missing entries are refused (``allow_missing=False``) or returned as None.
    Values of different kinds that read the same (``7`` and ``"7"``) are
    refused.
    """
    miss = is_missing(col)
    if miss.any() and not allow_missing:
        rows = np.flatnonzero(miss)
        raise EvalDataError(
            f"`{what}` column {column!r}{_where(source)} must not be empty; {rows.size} rows are, "
            f"rows {_fmt_list(rows.tolist())}"
        )
    labels, kinds = label_kinds(col)
    keep = ~miss
    _refuse_odd_kinds(col, kinds, keep, what=what, column=column, source=source)
    if len(set(kinds[keep].tolist())) > 1:
        ex, clash = label_clashes(labels[keep], kinds[keep])
        if ex:
            rows = np.flatnonzero(keep)[np.isin(labels[keep].astype(str), list(clash))]
            raise EvalDataError(clash_message(what, column, _where(source), ex, len(ex), rows))
    return labels


def label_clashes(labels, kinds) -> tuple[list[str], set[str]]:
    """The one rule for identifiers whose values are of different kinds: (examples, labels involved).

    Refused, never merged or split: a number and a text that read the same (``7`` and ``"7"``:
    two identifiers would merge into one label), and an int and a float that compare equal
    (``1`` and ``1.0``: one identifier would become the two labels ``"1"`` and ``"1.0"``).
    ``labels`` and ``kinds`` (``LABEL_KINDS``) are per value, or the distinct pairs of a
    large log; every reader passes what it has here (``clash_message`` says it).
    """
    frame = pd.DataFrame({"label": np.asarray(labels, dtype=object), "kind": np.asarray(kinds, dtype=object)})
    frame = frame.dropna().drop_duplicates()
    frame["family"] = frame["kind"].map(_family)
    nf = frame.groupby("label", sort=False)["family"].nunique()
    same = nf[nf > 1].index.tolist()
    # one pass over the clashing rows (a scan per label took seconds on 20,000 clashing ids)
    families = frame[frame.label.isin(same)].groupby("label", sort=False)["family"].agg(lambda f: sorted(set(f)))
    ex = [f"{lab!r} as " + " and ".join(families[lab]) for lab in same]
    clash = set(map(str, same))
    ints: dict[int, str] = {}
    for lab in frame.loc[frame.kind == "int", "label"]:
        try:
            ints[int(lab)] = str(lab)
        except ValueError:
            continue
    for lab in frame.loc[frame.kind == "float", "label"]:
        try:
            x = float(lab)
        except ValueError:
            continue
        if np.isfinite(x) and x.is_integer() and int(x) in ints:
            ex.append(f"{ints[int(x)]!r} (int) and {str(lab)!r} (float)")
            clash |= {ints[int(x)], str(lab)}
    return ex, clash


def clash_message(what: str, column: str, where: str, ex: list[str], n_labels: int, rows=None) -> str:
    """The refusal of ``label_clashes``' examples ``ex``; ``where``: " in <file>" (or "")."""
    kinds = []
    if any(" as " in e for e in ex):
        kinds.append("numbers and text that read the same, so two different identifiers would merge")
    if any("(float)" in e for e in ex):
        kinds.append(
            "ints and floats that are equal, so one identifier would read as two labels "
            "(an int's text has no '.0')"
        )
    shown = _fmt_list(ex, 5) + (f" ({n_labels} labels in all)" if n_labels > 5 else "")
    return (
        f"`{what}` column {column!r}{where} mixes {'; and '.join(kinds)}: {shown}"
        + (f", rows {_fmt_list(np.asarray(rows).tolist())}" if rows is not None else "")
        + ". Identifiers are kept exactly as written, never rewritten; write them all as text "
        "(quoted) or all as numbers of one type (all int, or all float)"
    )


def _refuse_odd_kinds(col, kinds, keep, *, what: str, column: str, source: str | None) -> None:
    """Refuse identifiers that are not one text, number or bool (lists, dicts, bytes, dates, ...) by row."""
    odd = keep & ~np.isin(kinds.astype(str), list(LABEL_KINDS))
    if odd.any():
        rows = np.flatnonzero(odd)
        ex = [f"{v!r} ({kinds[i]})" for i, v in zip(rows[:3], col.to_numpy(dtype=object)[rows[:3]], strict=True)]
        raise odd_kind_error(what, column, _where(source),
                             f"{rows.size} rows hold other values, e.g. {', '.join(ex)}, rows {_fmt_list(rows.tolist())}")


def odd_kind_error(what: str, column: str, where: str, how: str) -> EvalDataError:
    """The refusal of identifiers that are no text, number or bool (every reader's words); ``how``: which values."""
    return EvalDataError(
        f"`{what}` column {column!r}{where} must hold text, numbers or booleans; {how}. An identifier "
        "is kept exactly as written, and these have no one written form: write them as text first"
    )


def _print_key(lab: str) -> str:
    """What a reader sees of a label: spaces collapsed, Unicode-normalised (NFC)."""
    return " ".join(unicodedata.normalize("NFC", lab).split())


def _loose_key(lab: str) -> str:
    """A label with everything a reader could miss removed.

    Format characters (Unicode Cf, e.g. a zero-width space), compatibility forms (NFKC: a
    non-breaking hyphen), case and spaces. ASCII text has neither format characters nor
    compatibility forms (NFKC leaves it as it is), so only its case and spaces are folded.
    """
    if lab.isascii():
        return " ".join(lab.lower().split())
    text = "".join(ch for ch in unicodedata.normalize("NFKC", lab) if unicodedata.category(ch) != "Cf")
    text = text.replace("\u2011", "-").replace("\u2010", "-")  # NFKC keeps the hyphens U+2010, U+2011
    return " ".join(text.casefold().split())


def _how_they_differ(group: list[str]) -> list[str]:
    """How the labels of one group differ: spaces or Unicode normalisation, case, invisible characters."""
    printed = {_print_key(v) for v in group}
    folded = {v.casefold() for v in printed}
    ways = ["spaces or Unicode normalisation"] if len(printed) < len(group) else []
    if len(folded) < len(printed):
        ways.append("case")
    if len(folded) > 1:
        ways.append("invisible (format) or look-alike characters")
    return ways


def warn_similar_labels(labels: np.ndarray, *, what: str, column: str, source: str | None) -> None:
    """Warn when distinct labels differ only by spaces, Unicode normalisation, case or invisible characters.

    They are kept apart (labels are kept as written, never merged), but they print the same or
    nearly so (an HTML page shows 'gpt  4o' as 'gpt 4o'; a zero-width space does not print;
    'GPT-4o' and 'gpt-4o' are one model name in two exports), so a reader of the results could
    not tell them apart. The groups are named; the message says how each kind differs.
    """
    uniq = pd.unique(pd.Series(labels, dtype=object).dropna())
    keys: dict[str, list[str]] = {}
    for lab in uniq:
        keys.setdefault(_loose_key(str(lab)), []).append(str(lab))
    groups = [g for g in keys.values() if len(g) > 1]
    if groups:
        ways = list(dict.fromkeys(w for g in groups for w in _how_they_differ(g)))
        warn_user(
            f"`{what}` column {column!r}{_where(source)}: {len(groups)} groups of labels differ only "
            f"by {', or by '.join(ways)}, e.g. {_fmt_list(groups, 3)}; they are "
            "kept as different labels (labels are kept as written): normalise them before reading "
            "if they name the same thing",
            SimilarLabelsWarning,
        )


def canonical_ints(labels: np.ndarray) -> np.ndarray | None:
    """``labels`` as int64 if every one is an integer written canonically (no ``+``, no leading 0)."""
    if all(isinstance(v, str) and _CANONICAL_INT.fullmatch(v) for v in labels):
        try:
            return np.array([int(v) for v in labels], dtype=np.int64)
        except OverflowError:
            return None
    return None


def _norm_key(k: object) -> str:
    return _label(k).strip().lower()


def error_mapping(error_values: Mapping[object, bool] | str | None) -> tuple[dict[str, bool], bool]:
    """Check ``error_values``; return (text -> flag mapping, nonempty)."""
    if error_values is None:
        return {}, False
    if isinstance(error_values, str):
        if error_values != "nonempty":
            raise EvalDataError(
                f"`error_values` must be a mapping {{value: bool}} or 'nonempty'; got {error_values!r}"
            )
        return {}, True
    if not isinstance(error_values, Mapping):
        raise EvalDataError(
            f"`error_values` must be a mapping {{value: bool}} or 'nonempty'; "
            f"got {type(error_values).__name__}"
        )
    mapping = {}
    for k, v in error_values.items():
        if not isinstance(v, (bool, np.bool_)):
            raise EvalDataError(
                f"`error_values` must map each value to True (error) or False (no error); "
                f"got {k!r}: {v!r}"
            )
        mapping[_norm_key(k)] = bool(v)
    return mapping, False


def error_codes(
    col: pd.Series, mapping: dict[str, bool] | None = None, nonempty: bool = False
) -> np.ndarray:
    """Per row: 1 error, 0 no error, -1 a value outside the vocabulary (int8)."""
    mapping = mapping or {}
    if pd.api.types.is_bool_dtype(col.dtype) and not mapping:
        return col.fillna(False).to_numpy(dtype=bool).astype(np.int8)
    vals = col.to_numpy(dtype=object)
    out = np.zeros(len(vals), dtype=np.int8)
    miss = pd.isna(vals)
    cache: dict[tuple[str, str], int] = {}
    for i in np.flatnonzero(~miss):
        v = vals[i]
        key = (_kind(v), _label(v))
        code = cache.get(key)
        if code is None:
            code = _error_code(v, key[1].strip().lower(), mapping, nonempty)
            cache[key] = code
        out[i] = code
    return out


def bad_error_message(
    values: pd.Series, rows: np.ndarray | None, *, what: str, column: str, source: str | None
) -> str:
    """Return the message for error values outside the vocabulary (``values``: the offending raw values)."""
    distinct = values.astype(str).value_counts(sort=True)
    shown = ", ".join(
        f"{v!r} ({c} row{'s' if c > 1 else ''})" for v, c in distinct.head(10).items()
    )
    if len(distinct) > 10:
        shown += f", ... ({len(distinct) - 10} more values)"
    where = f", rows {_fmt_list(rows.tolist())}" if rows is not None else ""
    return (
        f"`{what}` column {column!r}{_where(source)} must hold booleans, 0/1 or one of "
        f"{sorted(ERROR_TRUE)} (error) / {sorted(ERROR_FALSE)} (no error), missing = no error; "
        f"{int(distinct.sum())} rows hold other values [{shown}]{where}. Unknown text is never "
        "counted as an error: say what each value means with `error_values={value: True/False, "
        "...}`, pass error_values='nonempty' to count every non-empty value as an error, or map "
        "the column before reading"
    )


def error_flags(
    col: pd.Series,
    *,
    what: str,
    column: str,
    source: str | None = None,
    error_values: Mapping[object, bool] | str | None = None,
) -> np.ndarray:
    """Map a raw error / annotation column to bool with the documented vocabulary."""
    mapping, nonempty = error_mapping(error_values)
    codes = error_codes(col, mapping, nonempty)
    bad = codes == -1
    if bad.any():
        rows = np.flatnonzero(bad)
        raise EvalDataError(
            bad_error_message(
                pd.Series(col.to_numpy(dtype=object)[bad]), rows, what=what, column=column,
                source=source,
            )
        )
    return codes == 1


def _error_code(v: object, low: str, mapping: dict[str, bool], nonempty: bool) -> int:
    """1 error, 0 no error, -1 unknown."""
    if low in mapping:
        return int(mapping[low])
    if isinstance(v, (bool, np.bool_)):
        return int(bool(v))
    if isinstance(v, (int, float, np.integer, np.floating)):
        x = float(v)
        if np.isnan(x):
            return 0
        return int(x) if x in (0.0, 1.0) else -1
    if low in ERROR_MISSING or low in ERROR_FALSE:
        return 0
    if low in ERROR_TRUE:
        return 1
    try:
        x = float(low)
    except ValueError:
        x = None
    if x is not None and x in (0.0, 1.0):
        return int(x)
    if nonempty:
        return 1
    return -1


#: What pandas infers for a column of plain numbers and text (``infer_dtype``).
_PLAIN = frozenset({"string", "floating", "integer", "mixed-integer-float", "boolean", "decimal", "empty"})


def _not_a_number(v: object) -> bool:
    """Tell whether a value is no real number and no text: complex, a date, a duration, bytes, a list."""
    if v is None or v is pd.NA or v is pd.NaT:
        return False
    if isinstance(v, (str, bool, np.bool_, int, float, decimal.Decimal)):
        return False
    if isinstance(v, np.number):
        return isinstance(v, np.complexfloating)
    return True


def numbers(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(float values, not-numeric mask): NA spellings are NaN; text that is no number is flagged.

    Complex numbers, dates, durations and other objects are flagged, never cast.
    """
    if col.dtype.kind in "cmM":
        return np.full(len(col), np.nan), col.notna().to_numpy(dtype=bool)
    if pd.api.types.is_bool_dtype(col.dtype):
        return col.to_numpy(dtype=float, na_value=np.nan), np.zeros(len(col), bool)
    if pd.api.types.is_numeric_dtype(col.dtype):
        return col.to_numpy(dtype=float, na_value=np.nan), np.zeros(len(col), bool)
    obj = col.astype(object)
    plain = pd.api.types.infer_dtype(obj, skipna=True) in _PLAIN  # no complex, date or object
    odd = pd.Series(False, index=obj.index) if plain else obj.map(_not_a_number).astype(bool)
    na_text = obj.map(lambda v: isinstance(v, str) and v.strip() in NA_TEXT).astype(bool)
    obj = obj.where(~(na_text | odd), None)
    obj = obj.map(lambda v: float(v) if isinstance(v, (bool, np.bool_)) else v)
    num = pd.to_numeric(obj, errors="coerce")
    nonnum = (num.isna() & obj.notna()).to_numpy(dtype=bool) | odd.to_numpy(dtype=bool)
    return num.to_numpy(dtype=float, na_value=np.nan), nonnum


# --------------------------------------------------------------------------- grades


def grade_scale(levels, argname: str, error: type[Exception] = EvalDataError) -> np.ndarray:
    """An ordinal grade scale as floats: at least 2 finite values, strictly increasing (the one rule).

    ``error``: the class the caller raises (a reader's :class:`EvalDataError`, a formula's
    ``FormulaError``).
    """
    try:
        scale = np.asarray(levels, dtype=float).ravel()
    except (TypeError, ValueError):
        raise error(
            f"`{argname}` must list the grade values in order (numbers); got {levels!r}"
        ) from None
    if scale.size < 2 or not np.isfinite(scale).all() or np.any(np.diff(scale) <= 0):
        raise error(
            f"`{argname}` must list at least 2 increasing, finite grade values; got {scale.tolist()}"
        )
    return scale


def _is_number(v) -> bool:
    """A grade given as a number: a real number, or a text that parses as one (``"2"``, ``"2.5"``)."""
    if isinstance(v, str):
        try:
            float(v)
        except ValueError:
            return False
        return True
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def grade_levels(
    levels, argname: str, error: type[Exception] = EvalDataError
) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """A grade scale given as numbers or as words: ``(scale, labels)``.

    Numbers (or texts that all parse as numbers, ``"1,2,4"`` from a command line): the scale
    itself (:func:`grade_scale`, its spacing kept), ``labels`` None. Words (no item a number):
    the labels in order, lowest first, each read as its place ``k`` on the scale
    ``0, 1, ..., L - 1`` (so as ``k / (L - 1)`` in [0, 1], the places of equally spaced grades).
    Refused: a list mixing numbers and words, a repeated or empty label, and a label with
    surrounding spaces (labels are matched as written, never stripped or case-folded).
    """
    if isinstance(levels, str) or not isinstance(levels, Iterable):
        split = f": write {levels.split(',')!r}" if isinstance(levels, str) else ""
        raise error(f"`{argname}` must be a list of the grades in order, lowest first; got {levels!r}{split}")
    items = list(levels)
    words = [v for v in items if not _is_number(v)]
    if not words:
        return grade_scale([float(v) for v in items], argname, error), None
    other = [v for v in words if not isinstance(v, str)]
    if other:
        raise error(f"`{argname}` holds {other!r}: each grade must be a number or a label (a text)")
    if len(words) < len(items):
        raise error(
            f"`{argname}` mixes numbers and words: {items!r}. Give every grade as a number (a numeric "
            "scale, its spacing kept) or every grade as a label (words in order, lowest first)"
        )
    spaced = [v for v in items if v != v.strip() or not v]
    if spaced:
        raise error(
            f"`{argname}` labels {spaced!r} are empty or have surrounding spaces: a label is matched "
            "exactly as the score column writes it, never stripped; write the list without spaces "
            f"around the commas, e.g. {','.join(v.strip() for v in items if v.strip())}"
        )
    repeated = sorted({v for v in items if items.count(v) > 1})
    if repeated or len(items) < 2:
        raise error(
            f"`{argname}` must list at least 2 distinct labels in order, lowest first; got {items!r}"
            + (f" (repeated: {repeated!r})" if repeated else "")
        )
    return np.arange(len(items), dtype=float), tuple(items)


def grade_names(scale: np.ndarray, labels: tuple[str, ...] | list[str] | None = None) -> list[str]:
    """How an output names each grade of ``scale``: its label, or the number (``1``, ``2.5``)."""
    if labels is not None and len(labels) == len(scale):
        return [str(v) for v in labels]
    return [f"{v:g}" for v in np.asarray(scale, dtype=float)]


def grade_key(scale, labels: tuple[str, ...] | list[str] | None = None) -> str:
    """A grade scale as outputs write it: ``0 = no, 1 = perhaps, 2 = yes`` for labels, else ``1, 2, 3, 4, 5``.

    Grades written as words are fitted as their places 0..L-1 (the numbers a mean grade
    is on); without labels (or with labels that do not match the scale), the numbers alone.
    """
    nums = [f"{float(c):g}" for c in scale]
    if labels is None or len(labels) != len(nums):
        return ", ".join(nums)
    return ", ".join(f"{n} = {lab}" for n, lab in zip(nums, labels, strict=True))


def grade_reading(scale: np.ndarray, labels: tuple[str, ...] | list[str] | None = None) -> str:
    """The grades and how each became a score in [0, 1], in words.

    ``grades 1, 2, 3, 4, 5 read as (grade - 1) / 4``, or for labels ``grades no, perhaps, yes
    read as 0, 0.5, 1 respectively``.
    """
    return f"grades {', '.join(grade_names(scale, labels))} read as {grade_rule(scale, labels)}"


def levels_attr(attrs: Mapping) -> list[float] | None:
    """The grade scale a score was read on (``attrs["score_levels"]``, JSON text or a list), None if none."""
    levels = attrs.get("score_levels")
    return json.loads(levels) if isinstance(levels, str) else levels


def labels_attr(attrs: Mapping) -> list[str] | None:
    """The labels a score was read from (``attrs["score_labels"]``, JSON text), None for numeric grades."""
    labels = attrs.get("score_labels")
    labels = json.loads(labels) if isinstance(labels, str) else labels
    return [str(v) for v in labels] if labels else None


def grade_rule(scale: np.ndarray, labels: tuple[str, ...] | list[str] | None = None) -> str:
    """How a grade becomes a score in [0, 1], in words: ``(grade - 1) / 4`` for the scale 1..5.

    Labels (grades written as words): ``0, 0.5, 1 respectively``.
    """
    scale = np.asarray(scale, dtype=float)
    if labels is not None:
        return f"{', '.join(f'{v:g}' for v in grade_positions(scale, scale))} respectively"
    return f"(grade - {scale[0]:g}) / {scale[-1] - scale[0]:g}"


def grade_positions(grades: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Grades of ``scale`` (NaN: none) as scores in [0, 1]: their place between its ends (:func:`grade_rule`)."""
    return (np.asarray(grades, dtype=float) - scale[0]) / (scale[-1] - scale[0])


def grades_at(
    positions: np.ndarray, scale: np.ndarray, error: type[Exception] = EvalDataError
) -> np.ndarray:
    """The grades that :func:`grade_positions` made these scores of (NaN stays NaN), exactly the scale's values.

    A score that is no grade's position (edited after reading) is refused, never rounded to one.
    """
    p = np.asarray(positions, dtype=float)
    g = scale[0] + p * (scale[-1] - scale[0])
    fin = np.isfinite(g)
    nearest = scale[np.abs(g[fin][:, None] - scale[None, :]).argmin(1)]
    off = np.abs(nearest - g[fin]) > 1e-9 * (scale[-1] - scale[0])
    if off.any():
        raise error(
            f"`score` was read as grades of {scale.tolist()} ({grade_rule(scale)}), but "
            f"{int(off.sum())} scores are no grade's place, e.g. {np.unique(p[fin][off])[:5].tolist()}: "
            "the scores were changed after reading; read the grades again"
        )
    out = np.full(g.shape, np.nan)
    out[fin] = nearest
    return out
