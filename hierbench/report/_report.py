"""A small report builder: sections of prose, tables and figures, written as HTML or Markdown.

The HTML file is self-contained (figures embedded as base64 PNG, styles
inline, no scripts, no external assets): it can be mailed or attached as
it is. The Markdown twin links its figures from a folder beside it.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import re
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["Report", "as_table", "markdown_table"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _fmt(v: object, digits: int) -> str:
    if v is pd.NA:  # a nullable column's missing value (a pair table's `differ` without a p-value)
        return "undefined"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):  # a value at its limit (a horizon every run beat), flagged in its row: not missing
            return "∞" if v > 0 else "−∞"
        if float(v).is_integer() and abs(v) >= 1000:
            return f"{v:,.0f}"
        if v != 0 and abs(v) < 0.5 * 10.0**-digits:
            # a nonzero value that rounds to 0.000 is written with its digits (the rat tumours' pass^8:
            # unbiased 1.1e-6 and Bayes [3.4e-6, 4.5e-5] read "0.000 [0.000, 0.000]", flagged as apart)
            return f"{v:.2g}".replace("e-0", "e-")
        return f"{v:.{digits}f}"
    if v is None:
        return ""
    return str(v)


def judged(verdict, defined) -> pd.Series:
    """A yes/no column judged only where ``defined``: pandas' nullable boolean, NA elsewhere.

    The tables write NA as "undefined" (``_fmt``), so a row that was not
    judged (an interval missing, a value at a boundary no interval reaches,
    two rows that are not one quantity) never reads "no". Every ``disagree``
    column of the report goes through here.
    """
    index = next((x.index for x in (verdict, defined) if isinstance(x, pd.Series)), None)
    v = pd.Series(np.asarray(pd.Series(verdict).fillna(False), dtype=bool), index=index, dtype="boolean")
    return v.mask(~np.asarray(defined, dtype=bool))


def _bounds_to_columns(df: pd.DataFrame, prefix: str = "") -> pd.DataFrame:
    """Move a ``ci_bound`` index level into ``lower`` / ``upper`` columns."""
    if "ci_bound" not in (df.index.names or []):
        return df
    wide = df.unstack("ci_bound")
    wide.columns = [f"{prefix}{b}" if len(df.columns) == 1 else f"{c} {b}" for c, b in wide.columns]
    return wide


def as_table(obj: object) -> pd.DataFrame:
    """Turn any hierbench result into a tidy table: one row per item, interval ends as columns.

    Accepts a DataFrame (returned as it is); a result object with
    ``to_frame()`` (every hierbench ``Result``); a :func:`hierbench.compare.side_by_side`
    table (one row per item and estimator); a Dataset holding ``estimate`` and
    ``ci`` (or ``interval``); any other Dataset or DataArray (a ``ci_bound``
    dim becomes ``lower`` / ``upper`` columns); or an object with
    ``to_dataset()``.

    Parameters
    ----------
    obj : DataFrame, result object, Dataset or DataArray

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> import xarray as xr
    >>> ci = xr.DataArray([[0.1, 0.3], [0.4, 0.8]], dims=("agent", "ci_bound"),
    ...                   coords={"agent": ["a", "b"], "ci_bound": ["lower", "upper"]},
    ...                   attrs={"ci_prob": 0.95, "ci_kind": "wilson"})
    >>> est = xr.DataArray([0.2, 0.6], dims="agent", coords={"agent": ["a", "b"]})
    >>> as_table(xr.Dataset({"estimate": est, "ci": ci}))  # doctest: +NORMALIZE_WHITESPACE
           estimate  lower  upper  ci_prob ci_kind
    agent
    a           0.2    0.1    0.3     0.95  wilson
    b           0.6    0.4    0.8     0.95  wilson
    """
    if isinstance(obj, pd.DataFrame):
        return obj
    if isinstance(obj, pd.Series):
        return obj.to_frame()
    if not isinstance(obj, (xr.Dataset, xr.DataArray)):
        if hasattr(obj, "to_frame"):
            return obj.to_frame()
        if hasattr(obj, "to_dataset"):
            obj = obj.to_dataset()
        else:
            raise TypeError(
                f"a report table must be a DataFrame, an xarray Dataset/DataArray or a hierbench "
                f"result (with to_frame() or to_dataset()); got {type(obj).__name__}"
            )
    if isinstance(obj, xr.DataArray):
        if "ci_bound" in obj.dims:
            obj = xr.Dataset({"ci": obj})
        else:
            name = obj.name if obj.name is not None else "value"
            s = obj.to_series() if obj.ndim else pd.Series([obj.item()], name=name)
            return s.rename(name).to_frame()
    key = "ci" if "ci" in obj else "interval" if "interval" in obj else None
    if key is not None and "ci_bound" in obj[key].dims:
        ci = obj[key]
        cols: dict[str, xr.DataArray] = {}
        if "estimate" in obj:
            cols["estimate"] = obj["estimate"]
        cols["lower"] = ci.sel(ci_bound="lower", drop=True)
        cols["upper"] = ci.sel(ci_bound="upper", drop=True)
        for name, var in obj.data_vars.items():
            if name in (key, "estimate") or "ci_bound" in var.dims:
                continue
            if set(var.dims) <= set(cols["lower"].dims):
                cols[str(name)] = var
        ds = xr.Dataset(cols)
        if ds["lower"].ndim == 0:
            df = pd.DataFrame({k: [ds[k].item()] for k in ds.data_vars})
        else:
            df = ds.to_dataframe()[list(cols)]
        if "ci_prob" not in df.columns and "ci_prob" in ci.attrs:
            df["ci_prob"] = float(ci.attrs["ci_prob"])
        if "ci_kind" not in df.columns and "ci_kind" in ci.attrs:
            df["ci_kind"] = ci.attrs["ci_kind"]
        return df
    if not obj.dims:
        return pd.DataFrame({k: [v.item()] for k, v in obj.data_vars.items()})
    return _bounds_to_columns(obj.to_dataframe())


def _display_frame(df: pd.DataFrame, digits: int, index: bool) -> pd.DataFrame:
    """The table as text cells (index levels as leading columns), formatted by :func:`_fmt`."""
    frame = df.reset_index() if index else df.copy()
    if index and df.index.names == [None]:
        frame = frame.rename(columns={"index": ""})
    frame.columns = [str(c) for c in frame.columns]
    return frame.map(lambda v: _fmt(v, digits))


def markdown_table(df: pd.DataFrame, *, digits: int = 3, index: bool = True) -> str:
    """Render a DataFrame as a GitHub-flavoured Markdown table (pandas ``to_markdown``).

    Parameters
    ----------
    df : pandas.DataFrame
    digits : int
        Decimals for floats (NaN is written out, never blanked).
    index : bool
        Include the index (each level a column).

    Examples
    --------
    >>> import pandas as pd
    >>> print(markdown_table(pd.DataFrame({"x": [0.5]}, index=["a"])))
    |    |     x |
    |:---|------:|
    | a  | 0.500 |
    """
    frame = _display_frame(df, digits, index).map(lambda v: v.replace("|", "\\|"))
    frame.columns = [c.replace("|", "\\|") for c in frame.columns]
    align = ("left",) + ("right",) * (frame.shape[1] - 1)
    return frame.to_markdown(index=False, disable_numparse=True, colalign=align)


def html_table(
    df: pd.DataFrame,
    *,
    digits: int = 3,
    index: bool = True,
    flag: str | None = None,
    uuid: str = "t",
) -> str:
    """Render a DataFrame as an HTML table with pandas' Styler (escaped; ``flag`` marks rows).

    A cell's inline code and bold render as the Markdown table shows them
    (``_inline``, which escapes the rest). A boolean ``flag`` column's
    true rows get the ``flag`` class on every cell; ``uuid`` keeps the
    table's ids distinct within one page.
    """
    from pandas.io.formats.style import Styler

    frame = _display_frame(df, digits, index)
    styler = Styler(frame, uuid=uuid, cell_ids=False).hide(axis="index")
    styler = styler.format(_inline).format_index(escape="html", axis=1)
    source = df.reset_index() if index else df
    # prose columns read left-aligned and wrap; numbers stay right-aligned on one line
    text = [
        "txt"
        if not pd.api.types.is_numeric_dtype(source[c])
        and not pd.api.types.is_bool_dtype(source[c])
        and source[c].astype(str).str.len().max() > 24
        else ""
        for c in source.columns
    ]
    if frame.columns.is_unique:  # a prose column's heading sits over its left-aligned text
        heads = {c: [{"selector": "th", "props": "text-align:left"}] for c, t in zip(frame.columns, text, strict=True) if t}
        styler = styler.set_table_styles(heads, overwrite=False) if heads else styler
    marked = (
        df[flag].fillna(False).astype(bool).to_numpy()
        if flag and flag in df.columns
        else np.zeros(len(frame), bool)
    )
    classes = pd.DataFrame(
        [[" ".join(filter(None, (t, "flag" if m else ""))) for t in text] for m in marked],
        index=frame.index,
        columns=frame.columns,
    )
    return styler.set_td_classes(classes).to_html(table_attributes='class="hb-table"')


def _slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s or "section"


def figure_of(obj: object):
    """The matplotlib Figure of a Figure or of an arviz-plots PlotCollection (None if neither)."""
    viz = getattr(obj, "viz", None)  # an arviz-plots PlotCollection
    if viz is None:
        return obj if hasattr(obj, "savefig") else None
    try:
        cand = viz["figure"]
    except (KeyError, TypeError):
        cand = getattr(viz, "figure", None)
    cand = cand.item() if hasattr(cand, "item") else cand
    return cand if hasattr(cand, "savefig") else None


def _png_bytes(obj: object, name: str) -> bytes:
    """Render a matplotlib Figure or an arviz-plots PlotCollection to PNG bytes (and close it)."""
    fig = figure_of(obj)
    if fig is None:
        raise TypeError(f"figure {name!r}: cannot find a matplotlib figure in {type(obj).__name__}")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    try:
        import matplotlib.pyplot as plt

        plt.close(fig)
    except Exception:  # pragma: no cover - closing is housekeeping only
        pass
    return buf.getvalue()


#: Wide tables: a text cell wraps (long words too) at a narrower minimum (14em, was 16), and a table's
#: frame may run into the page's right margin (to 1em from the window's edge) before it
#: scrolls: at 1400 px the side-by-side table's `flag` column was behind a scrollbar.
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #444}h2{border-bottom:1px solid #ccc;margin-top:2em}
table{border-collapse:collapse;margin:0.8em 0;font-size:0.88em}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f2f2f2}
td{white-space:nowrap}td.txt{white-space:normal;overflow-wrap:anywhere;text-align:left;min-width:14em}
td:first-child,th:first-child{text-align:left}td.flag{background:#fff0e0}
details{margin:0.6em 0}summary{cursor:pointer;color:#245}
.hb-wide{overflow-x:auto;margin-right:min(0px,calc(566px - 50vw))}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:0.9em;color:#444}pre{background:#f7f7f7;padding:0.6em;overflow-x:auto;font-size:0.85em}
.note{background:#fff8dc;border-left:4px solid #e0b000;padding:0.4em 0.8em}
nav ol,nav ul{columns:2}nav p{margin:0.6em 0 0.2em;font-weight:bold}
"""


@dataclass
class Report:
    """Collects sections, tables and figures; writes one self-contained HTML file or Markdown.

    Parameters
    ----------
    title : str

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> r = Report("Demo")
    >>> r.section("Data", "Six agents.", table=pd.DataFrame({"n": [1]}))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> r.write(folder / "report.html").name
    'report.html'
    >>> r.write(folder / "report.md").name
    'report.md'
    """

    title: str
    blocks: list[dict] = field(default_factory=list)
    figures: dict[str, bytes] = field(default_factory=dict)
    #: files written beside the report (a table too long to show in full), by plain file name
    files: dict[str, bytes] = field(default_factory=dict)
    #: what a reader must know before any section (a fit that did not converge), under the title
    lead: str = ""

    # ------------------------------------------------------------ building

    def section(
        self,
        heading: str,
        text: str = "",
        *,
        table: object | None = None,
        digits: int = 3,
        index: bool = True,
        flag: str | None = None,
        id: str | None = None,
        note: str | None = None,
        more: tuple | None = None,
        appendix: bool = False,
    ) -> None:
        """Add a section (or, with the heading of an existing one, more of it).

        Parameters
        ----------
        heading : str
        text : str
            Prose (paragraphs separated by blank lines; a block fenced with
            triple backticks stays preformatted).
        table : DataFrame, Dataset, DataArray or result object, optional
            Anything :func:`as_table` takes.
        digits : int
            Decimals shown for floats.
        index : bool
            Show the index as columns.
        flag : str, optional
            Name of a boolean column whose true rows are highlighted.
        id : str, optional
            Anchor of the section (default from the heading).
        note : str, optional
            A highlighted remark (a caveat, something not available).
        more : (summary, table) or (summary, table, flag), optional
            A longer table one click away: folded under ``summary`` in HTML,
            after the main table in Markdown (``flag`` as above).
        appendix : bool
            Material after the report proper (the HTML contents list it apart,
            unnumbered, so that numbered headings of its own stay readable).
        """
        block = {
            "heading": heading,
            "id": id or _slug(heading),
            "text": text.strip(),
            "table": None if table is None else as_table(table),
            "digits": digits,
            "index": index,
            "flag": flag,
            "note": note,
            "more": None if more is None else (str(more[0]), as_table(more[1]), *more[2:3]),
            "figures": [],
            "appendix": bool(appendix),
        }
        self.blocks.append(block)

    def figure(self, name: str, plot_collection_or_figure: object, caption: str = "") -> None:
        """Add a figure (a matplotlib Figure or an arviz-plots PlotCollection) to the last section.

        ``name`` is a plain file name (letters, digits, ``_``, ``-``, ``.``;
        no folder part): the Markdown twin writes ``<name>.png`` inside its
        figure folder and nowhere else.
        """
        _check_plain_name(name, "figure name")
        if name in self.figures:
            raise ValueError(f"figure name {name!r} is used twice in this report")
        self.figures[name] = _png_bytes(plot_collection_or_figure, name)
        if not self.blocks:
            self.section(self.title)
        self.blocks[-1]["figures"].append((name, caption))

    def attach(self, name: str, data: bytes | str) -> None:
        """Add a file written beside the report, in either format (the complete table a section shortens).

        ``name`` is a plain file name, as for :meth:`figure`; the section's text names it.
        """
        _check_plain_name(name, "attached file name")
        if name in self.files:
            raise ValueError(f"file name {name!r} is attached twice to this report")
        self.files[name] = data.encode("utf-8") if isinstance(data, str) else bytes(data)

    def forest(
        self,
        fit: xr.DataTree,
        var_names: list[str],
        name: str,
        caption: str = "",
        *,
        ci_probs: tuple[float, float] = (0.5, 0.95),
    ) -> None:
        """Add an arviz-plots forest plot of posterior variables of a fit.

        ``ci_probs`` are the inner and outer equal-tailed interval levels drawn
        (stated here so a caption can name them; arviz's own default differs).
        """
        import arviz_plots as azp

        pc = azp.plot_forest(
            fit,
            var_names=var_names,
            combined=True,
            ci_kind="eti",
            ci_probs=ci_probs,
            backend="matplotlib",
            sample_dims=["chain", "draw"],
        )
        self.figure(name, pc, caption)

    # ------------------------------------------------------------ rendering

    def to_markdown(self, *, figure_dir: str = "", metadata: dict | None = None) -> str:
        """The report as Markdown; figures linked as ``<figure_dir>/<name>.png``."""
        out = [f"# {self.title}", ""]
        if self.lead:
            out += [f"> **{self.lead}**", ""]
        if metadata:
            out += ["```json", json.dumps(metadata, indent=2, default=str), "```", ""]
        for b in self.blocks:
            out += [f"## {b['heading']}", ""]
            if b["note"]:
                out += [f"> **Note:** {b['note']}", ""]
            if b["text"]:
                out += [b["text"], ""]
            if b["table"] is not None:
                out += [markdown_table(b["table"], digits=b["digits"], index=b["index"]), ""]
            if b.get("more") is not None:
                summary, extra = b["more"][:2]
                out += [f"**{summary}**", "", markdown_table(extra, digits=b["digits"]), ""]
            for name, caption in b["figures"]:
                link = f"{figure_dir}/{name}.png" if figure_dir else f"{name}.png"
                out += [f"![{caption or name}]({link})", ""]
                if caption:
                    out += [f"*{caption}*", ""]
        return "\n".join(out)

    def _contents_html(self) -> str:
        """The contents: the report's sections numbered, then any appendix unnumbered."""
        esc = html.escape

        def items(blocks: list[dict]) -> str:
            return "".join(f'<li><a href="#{esc(b["id"])}">{esc(b["heading"])}</a></li>' for b in blocks)

        main = [b for b in self.blocks if not b.get("appendix")]
        extra = [b for b in self.blocks if b.get("appendix")]
        tail = f"<p>Appendix</p><ul>{items(extra)}</ul>" if extra else ""
        return f"<nav><ol>{items(main)}</ol>{tail}</nav>"

    def to_html(self, *, metadata: dict | None = None) -> str:
        """The report as one self-contained HTML page (figures as base64 PNG, no external assets)."""
        esc = html.escape
        body = [f"<h1>{esc(self.title)}</h1>"]
        if self.lead:
            body.append(f'<p class="note"><b>{_inline(self.lead)}</b></p>')
        body.append(self._contents_html())
        for b in self.blocks:
            part = [
                f'<section id="{esc(b["id"])}" class="hb-section">',
                f"<h2>{esc(b['heading'])}</h2>",
            ]
            if b["note"]:
                part.append(f'<p class="note">{_inline(b["note"])}</p>')
            if b["text"]:
                part.append(_text_html(b["text"]))
            if b["table"] is not None:
                table = html_table(
                    b["table"], digits=b["digits"], index=b["index"], flag=b["flag"], uuid=b["id"]
                )
                part.append(f'<div class="hb-wide">{table}</div>')
            if b.get("more") is not None:
                summary, extra, *flag = b["more"]
                table = html_table(
                    extra, digits=b["digits"], flag=flag[0] if flag else None, uuid=f"{b['id']}-more"
                )
                part.append(
                    f"<details><summary>{_inline(summary)}</summary>"
                    f'<div class="hb-wide">{table}</div></details>'
                )
            for name, caption in b["figures"]:
                data = base64.b64encode(self.figures[name]).decode("ascii")
                part.append(
                    f'<figure><img alt="{esc(caption or name)}" data-name="{esc(name)}" '
                    f'src="data:image/png;base64,{data}"><figcaption>{_inline(caption)}</figcaption></figure>'
                )
            part.append("</section>")
            body.append("\n".join(part))
        if metadata:
            body.append(
                '<section id="metadata" class="hb-section"><h2>Metadata</h2><pre>'
                + esc(json.dumps(metadata, indent=2, default=str))
                + "</pre></section>"
            )
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{esc(self.title)}</title><style>{_CSS}</style></head>\n<body>\n"
            + "\n".join(body)
            + "\n</body></html>\n"
        )

    def write(
        self,
        path: str | Path,
        *,
        format: str | None = None,
        overwrite: bool = False,
        metadata: dict | None = None,
    ) -> Path:
        """Write the report; return its path.

        Parameters
        ----------
        path : str or path-like
            ``*.html`` (one self-contained file), ``*.md`` (Markdown plus a
            ``<stem>_figures/`` folder of PNGs beside it), or an existing or new
            folder (``report.md`` and the PNGs inside it). Files attached with
            :meth:`attach` are written beside it, in either format.
        format : {"html", "md"}, optional
            Overrides the choice made from the suffix.
        overwrite : bool
            Replace existing report, figure and attached files (default: refuse with
            :class:`FileExistsError`, naming them; an attached file there already
            with the same bytes is not replaced). For ``*.md`` it also removes
            the PNGs in ``<stem>_figures/`` that this report does not draw (an
            earlier report's), so the folder holds this report's figures only.
        metadata : dict, optional
            Shown as JSON at the top (Markdown) or the bottom (HTML).
        """
        p, format, folder_mode = report_target(path, format)
        p.parent.mkdir(parents=True, exist_ok=True)
        # an attached file already there with the same bytes (the HTML's, beside its Markdown twin) replaces nothing
        files = [p.parent / n for n, b in self.files.items() if not _same_bytes(p.parent / n, b)]
        if format == "html":
            _refuse_existing([p, *files], overwrite)
            self._write_files(p.parent)
            p.write_text(self.to_html(metadata=metadata), encoding="utf-8")
            return p
        fig_dir, rel = (
            (p.parent, "") if folder_mode else (p.parent / f"{p.stem}_figures", f"{p.stem}_figures")
        )
        targets = [p, *files] + [fig_dir / f"{n}.png" for n in self.figures]
        root = p.parent.resolve()
        for t in targets:
            if not t.resolve().is_relative_to(root):  # pragma: no cover - names are checked
                raise ValueError(
                    f"figure path {str(t)!r} falls outside the report folder {str(root)!r}"
                )
        _refuse_existing(targets, overwrite)
        if overwrite and not folder_mode and fig_dir.is_dir():
            # the folder is this report's own: an earlier report's figures that this one does
            # not draw (another log's trace or PPC) would sit there as if they were its own
            for old in fig_dir.glob("*.png"):
                if old.stem not in self.figures:
                    old.unlink()
        if self.figures:
            fig_dir.mkdir(parents=True, exist_ok=True)
        for n, data in self.figures.items():
            (fig_dir / f"{n}.png").write_bytes(data)
        self._write_files(p.parent)
        p.write_text(self.to_markdown(figure_dir=rel, metadata=metadata), encoding="utf-8")
        return p


    def _write_files(self, folder: Path) -> None:
        for n, data in self.files.items():
            (folder / n).write_bytes(data)


def report_target(path: str | Path, format: str | None = None) -> tuple[Path, str, bool]:
    """Where :meth:`Report.write` puts a report given ``path`` and ``format``: ``(file, format, folder_mode)``.

    The format comes from the suffix (``.html``, ``.htm``, ``.md``) unless ``format`` is given; a
    folder (one that exists, or a path without a suffix) holds ``report.md``. Refused with
    ValueError: another suffix, another format. Nothing is created or read but whether the path is
    a folder.
    """
    p = Path(path)
    folder_mode = False
    if format is None:
        format = {".html": "html", ".htm": "html", ".md": "md"}.get(p.suffix.lower())
        if format is None:
            if p.suffix and not p.is_dir():
                raise ValueError(
                    f"report path {str(p)!r}: the suffix must be .html or .md (or give a "
                    "folder, or pass format='html'/'md')"
                )
            p, format, folder_mode = p / "report.md", "md", True
    if format not in ("html", "md"):
        raise ValueError(f"`format` must be 'html' or 'md'; got {format!r}")
    return p, format, folder_mode


def refuse_targets(paths: list, format: str | None = None, *, overwrite: bool = False) -> None:
    """Refuse, before a report is computed, the report files :meth:`Report.write` would refuse.

    Each of ``paths`` is resolved by ``report_target`` (a bad suffix or format: ValueError) and,
    without ``overwrite``, an existing report file is refused with the FileExistsError ``write``
    gives. The figures and attached files are named only by the computed report: ``write``
    checks them (and the report files again) when it writes.
    """
    _refuse_existing([report_target(p, format)[0] for p in paths], overwrite)


def _same_bytes(path: Path, data: bytes) -> bool:
    """Whether ``path`` is a file holding exactly ``data``."""
    return path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data


def _refuse_existing(paths: list[Path], overwrite: bool) -> None:
    if overwrite:
        return
    there = [str(t) for t in paths if t.exists()]
    if there:
        raise FileExistsError(
            f"the report would replace existing files {there[:5]}"
            + (f" and {len(there) - 5} more" if len(there) > 5 else "")
            + "; pass overwrite=True (CLI: --overwrite) or write elsewhere"
        )


def _text_html(text: str) -> str:
    out = []
    for chunk in re.split(r"(```[a-z]*\n.*?\n```)", text, flags=re.S):
        if chunk.startswith("```"):
            inner = chunk.split("\n", 1)[1].rsplit("\n```", 1)[0]
            out.append(f"<pre>{html.escape(inner)}</pre>")
            continue
        for para in re.split(r"\n\s*\n", chunk.strip()):
            if not para.strip():
                continue
            lines = para.strip().splitlines()
            if all(ln.lstrip().startswith(("- ", "* ")) for ln in lines):
                items = "".join(f"<li>{_inline(ln.lstrip()[2:])}</li>" for ln in lines)
                out.append(f"<ul>{items}</ul>")
            else:
                out.append(f"<p>{_inline(' '.join(lines))}</p>")
    return "\n".join(out)


def _inline(s: str) -> str:
    """Inline Markdown: `code` and **bold**; nothing inside a code span is read as markup."""
    out = []
    for i, part in enumerate(re.split(r"`([^`]+)`", s)):
        if i % 2:
            out.append(f"<code>{html.escape(part)}</code>")
        else:
            out.append(re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", html.escape(part)))
    return "".join(out)


def _check_plain_name(name: object, what: str) -> None:
    """Refuse a file name that is not plain (letters, digits, ``_``, ``-``, ``.``; no folder part or ``..``)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise ValueError(
            f"{what} must be a plain file name inside the report folder "
            f"(letters, digits, '_', '-', '.'; no '/' or '..'); got {name!r}"
        )
