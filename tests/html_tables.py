"""Read the tables of a hierbench HTML report back into DataFrames (standard library parser only)."""

from __future__ import annotations

from html.parser import HTMLParser

import pandas as pd


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _number(text: str):
    t = text.replace(",", "")
    try:
        return float(t)
    except ValueError:
        return text


def read_tables(html: str) -> list[pd.DataFrame]:
    """Every ``<table>`` in ``html``: the first row is the header, cells as numbers where they are."""
    p = _Tables()
    p.feed(html)
    out = []
    for rows in p.tables:
        if not rows:
            continue
        head, body = rows[0], rows[1:]
        out.append(pd.DataFrame([[_number(c) for c in r] for r in body], columns=head))
    return out
