"""A small report builder: sections of prose, tables and ArviZ figures, written as Markdown."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["Report", "markdown_table"]


def _fmt(v: object, digits: int) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return "NaN"
        return f"{v:.{digits}f}"
    return str(v).replace("|", "\\|")


def markdown_table(df: pd.DataFrame, *, digits: int = 3, index: bool = True) -> str:
    """Render a DataFrame as a GitHub-flavoured Markdown table.

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
    |   | x |
    |---|---|
    | a | 0.500 |
    """
    frame = df.reset_index() if index else df
    if index and df.index.names == [None]:
        frame = frame.rename(columns={"index": ""})
    cols = [str(c) for c in frame.columns]
    lines = [
        "| " + " | ".join(c if c else " " for c in cols) + " |",
        "|" + "|".join("---" for _ in cols) + "|",
    ]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v, digits) for v in row) + " |")
    return "\n".join(lines)


@dataclass
class Report:
    """Collects sections and writes ``report.md`` plus figures into a folder.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> r = Report("Demo")
    >>> r.section("Data", "Six agents.", table=pd.DataFrame({"n": [1]}))
    >>> path = r.write(tempfile.mkdtemp())
    >>> path.name
    'report.md'
    """

    title: str
    parts: list[str] = field(default_factory=list)
    figures: list[tuple[str, object]] = field(default_factory=list)

    def section(
        self,
        heading: str,
        text: str = "",
        *,
        table: pd.DataFrame | xr.Dataset | None = None,
        digits: int = 3,
        index: bool = True,
    ) -> None:
        """Add a section with optional prose and a table."""
        block = [f"## {heading}", ""]
        if text:
            block += [text.strip(), ""]
        if table is not None:
            if isinstance(table, xr.Dataset):
                table = table.to_dataframe()
            block += [markdown_table(table, digits=digits, index=index), ""]
        self.parts.append("\n".join(block))

    def figure(self, name: str, plot_collection_or_figure: object, caption: str = "") -> None:
        """Add a figure (an arviz-plots PlotCollection or a matplotlib Figure)."""
        self.figures.append((name, plot_collection_or_figure))
        self.parts.append(f"![{caption or name}]({name}.png)\n\n{caption}\n")

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
        )
        self.figure(name, pc, caption)

    def write(self, folder: str | Path, *, metadata: dict | None = None) -> Path:
        """Write ``report.md`` and one PNG per figure into ``folder``; return the report path."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        for name, obj in self.figures:
            target = out / f"{name}.png"
            if hasattr(obj, "savefig"):
                obj.savefig(target)
            else:
                fig = getattr(getattr(obj, "viz", None), "figure", None)
                fig = fig.item() if hasattr(fig, "item") else fig
                if fig is None or not hasattr(fig, "savefig"):
                    raise TypeError(
                        f"figure {name!r}: cannot find a matplotlib figure to save in {type(obj).__name__}"
                    )
                fig.savefig(target, dpi=110, bbox_inches="tight")
        head = [f"# {self.title}", ""]
        if metadata:
            head += ["```json", json.dumps(metadata, indent=2, default=str), "```", ""]
        path = out / "report.md"
        path.write_text("\n".join(head + self.parts))
        return path
