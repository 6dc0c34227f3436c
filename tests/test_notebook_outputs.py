"""Static checks of the committed research notebooks (no kernel, a fraction of a second).

Each notebook is committed executed: every code cell ran once, top to bottom,
without an error output, and the last code cell writes the notebook's report
with the one call ``hierbench.report.build`` and prints where it went and its
sections. ``test_notebooks.py`` re-executes them; this file checks what a
reader of the repository sees.
"""

import ast
import json
import re

import pytest
from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: Notebooks that do not end with their report yet (owned elsewhere); remove a
#: name once its notebook has the closing ``report.build`` cell.
NOT_YET: set[str] = set()

CHECKED = [p for p in NOTEBOOKS if p.stem not in NOT_YET]


def _code_cells(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]


def _source(cell) -> str:
    src = "".join(cell["source"])
    # IPython magics and shell escapes are not Python: blank them before parsing
    return "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines()
    )


def _calls_report_build(tree: ast.AST) -> bool:
    """True if the code calls ``report.build(...)`` or ``hierbench.report.build(...)``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr != "build":
                continue
            if isinstance(f.value, ast.Name) and f.value.id == "report":
                return True
            if (
                isinstance(f.value, ast.Attribute)
                and f.value.attr == "report"
                and isinstance(f.value.value, ast.Name)
                and f.value.value.id in ("hierbench", "hb")
            ):
                return True
    return False


def _imports_hierbench_report(path) -> bool:
    text = "\n".join(_source(c) for c in _code_cells(path))
    return bool(
        re.search(r"^\s*from hierbench import .*\breport\b", text, re.M)
        or re.search(r"^\s*import hierbench\.report\b", text, re.M)
    )


def test_every_notebook_is_checked_or_listed():
    assert CHECKED, "notebooks/ holds no notebook to check"
    stems = {p.stem for p in NOTEBOOKS}
    assert NOT_YET <= stems, f"NOT_YET names notebooks that do not exist: {sorted(NOT_YET - stems)}"


@pytest.mark.parametrize("path", CHECKED, ids=[p.stem for p in CHECKED])
def test_notebook_ends_with_report_build(path):
    cells = _code_cells(path)
    assert cells, f"{path.name}: no code cell"
    last = cells[-1]
    tree = ast.parse(_source(last), filename=f"{path.name} (last code cell)")
    assert _calls_report_build(tree), (
        f"{path.name}: the last code cell must write the report with hierbench.report.build(...); "
        f"it reads:\n{''.join(last['source'])[:400]}"
    )
    assert _imports_hierbench_report(path), f"{path.name}: `report` is not imported from hierbench"
    # the closing cell printed where the report went and its sections
    out = "".join(
        "".join(o.get("text", ""))
        for o in last.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == "stdout"
    )
    assert re.search(r"\S+\.(html|md)\b", out), (
        f"{path.name}: the last cell does not print the report's path"
    )
    assert "Reporting checklist" in out, (
        f"{path.name}: the last cell does not list the report's sections"
    )


@pytest.mark.parametrize("path", CHECKED, ids=[p.stem for p in CHECKED])
def test_notebook_executed_in_order_without_errors(path):
    cells = _code_cells(path)
    counts = [c.get("execution_count") for c in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name}: code cells must be executed once, top to bottom, in a fresh kernel; "
        f"execution counts are {counts}"
    )
    errors = [
        (i, o.get("ename"), o.get("evalue", "")[:200])
        for i, c in enumerate(cells)
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors, f"{path.name}: error outputs in code cells {errors}"
    stderr_tracebacks = [
        i
        for i, c in enumerate(cells)
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
        and o.get("name") == "stderr"
        and "Traceback (most recent call last)" in "".join(o.get("text", ""))
    ]
    assert not stderr_tracebacks, (
        f"{path.name}: tracebacks printed to stderr in code cells {stderr_tracebacks}"
    )


#: absolute paths of a machine (a user's home, a work or temporary folder, a Windows drive)
_MACHINE_PATH = re.compile(r"(?<![\w.])(/(home|Users|work|tmp|root|var/folders|opt)/[^\s'\"]+|[A-Z]:\\\\[^\s'\"]+)")


def _outputs_text(cell) -> list[tuple[str, str]]:
    """(kind, text) of every output of a cell: streams, and the text of rich outputs."""
    out = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            out.append((o.get("name", "stream"), "".join(o.get("text", ""))))
        for mime, data in (o.get("data") or {}).items():
            if mime.startswith("text/") or mime.endswith("json"):
                out.append((mime, data if isinstance(data, str) else json.dumps(data)))
    return out


@pytest.mark.parametrize("path", CHECKED, ids=[p.stem for p in CHECKED])
def test_committed_outputs_hold_no_machine_paths_or_progress_bars(path):
    """Issue 24: what a reader of the repository sees is results, not a machine's traces."""
    cells = _code_cells(path)
    paths = [
        (i, m.group(0)[:80])
        for i, c in enumerate(cells)
        for _, text in _outputs_text(c)
        for m in _MACHINE_PATH.finditer(text)
    ]
    assert not paths, f"{path.name}: machine paths in outputs (cell, path): {paths[:5]}"
    bars = [
        i
        for i, c in enumerate(cells)
        for kind, text in _outputs_text(c)
        if "\r" in text or re.search(r"\d+%\|", text) or "it/s]" in text
        or ("progress" in text.lower() and kind == "text/html")
    ]
    assert not bars, f"{path.name}: progress-bar output in code cells {sorted(set(bars))}"
    stderr = [i for i, c in enumerate(cells) for kind, _ in _outputs_text(c) if kind == "stderr"]
    assert len(stderr) <= 3, f"{path.name}: {len(stderr)} stderr outputs (cells {stderr})"
