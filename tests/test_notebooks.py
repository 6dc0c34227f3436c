"""Execute every research notebook in fast mode (HIERBENCH_FAST=1).

Each notebook must open with a markdown cell naming its Question, Data, Model
and Findings, must run top to bottom without error on the shared data, and
no figure it draws may have text overlapping other text (tick labels,
titles, axis labels, legends, annotations: checked after every cell).
"""

import json

import nbformat
import pytest
from conftest import ROOT
from figure_overlap import KERNEL_HOOK
from figure_overlap import KERNEL_REPORT
from nbclient import NotebookClient

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: notebooks whose figures and report are checked (overlapping text, the report in a browser);
#: add a notebook here once its figures pass
FIGURES_CHECKED = {f"0{i}" for i in range(1, 9)}


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


@pytest.mark.slow  # executes the notebook: fits, bootstraps, its report
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_fast_mode(path, shared_data, monkeypatch, tmp_path):
    nb = nbformat.read(path, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "markdown")
    for heading in ("Question", "Data", "Model", "Findings"):
        assert heading in first.source, f"{path.name}: first markdown cell lacks {heading!r}"
    monkeypatch.setenv("HIERBENCH_FAST", "1")
    monkeypatch.setenv("HIERBENCH_SHARED_DATA", str(shared_data))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # each notebook ends by writing its report: into the test's folder, not notebooks/reports/
    monkeypatch.setenv("HIERBENCH_REPORT_DIR", str(tmp_path))
    monkeypatch.setenv("HIERBENCH_PROGRESS", "0")
    checked = path.stem[:2] in FIGURES_CHECKED
    if checked:
        nb.cells.insert(0, nbformat.v4.new_code_cell(KERNEL_HOOK.format(tests=str(ROOT / "tests"))))
        nb.cells.append(nbformat.v4.new_code_cell(KERNEL_REPORT))
    client = NotebookClient(
        nb,
        timeout=900,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        # every output and the report are in hand when the last cell returns: stop the kernel at
        # once rather than wait for its exit handlers and interpreter teardown (1-2 s a notebook)
        shutdown_kernel="immediate",
    )
    client.execute()
    if not checked:
        return
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    found = json.loads(out.split("HB_OVERLAPS", 1)[1])
    assert not found, f"{path.name}: overlapping text in figures:\n" + "\n".join(found)
    # the report the notebook ends with, opened in a headless browser
    reports = sorted(tmp_path.glob("*.html"))
    assert reports, f"{path.name}: wrote no HTML report into HIERBENCH_REPORT_DIR"
    from test_report_browser import CHROMIUM
    from test_report_browser import check_notebook_report

    if CHROMIUM is not None:
        for report in reports:
            check_notebook_report(report, tmp_path)
