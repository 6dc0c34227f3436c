"""report: Markdown tables and a forest figure from a DataTree."""

import numpy as np
import pandas as pd
from arviz_base import from_dict

from hierbench.report import Report, markdown_table


def test_markdown_table_writes_every_cell_and_nan():
    df = pd.DataFrame({"mean": [0.5, np.nan], "n": [3, 4], "ok": [True, False]}, index=["a", "b|c"])
    text = markdown_table(df, digits=2).splitlines()
    assert text[0] == "|   | mean | n | ok |"
    assert text[2] == "| a | 0.50 | 3 | yes |"
    assert text[3] == "| b\\|c | NaN | 4 | no |"


def test_report_writes_markdown_and_a_forest_png(tmp_path):
    rng = np.random.default_rng(0)
    dt = from_dict(
        {"posterior": {"ability": rng.normal(size=(2, 50, 3))}},
        dims={"ability": ["agent"]},
        coords={"agent": ["a", "b", "c"]},
    )
    r = Report("Test report")
    r.section("Agents", "Three agents.", table=pd.DataFrame({"x": [1.0]}, index=["a"]))
    r.forest(dt, ["ability"], "forest", "Posterior abilities")
    path = r.write(tmp_path, metadata={"seed": 0})
    body = path.read_text()
    assert body.startswith("# Test report")
    assert "## Agents" in body and "![Posterior abilities](forest.png)" in body
    png = (tmp_path / "forest.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
