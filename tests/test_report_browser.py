"""Acceptance: the HTML reports of the demo, of a METR fit and of the notebooks render in Chromium.

Each report is opened in Debian's ``chromium`` (``.ci/run`` installs it): no
console errors, every embedded figure decoded (natural width > 0), every
section present, no table cell that reads NaN (a value a section could not
compute is said in words and flagged). A small script injected into a copy
of the report records errors, image sizes and such cells into the DOM,
which ``--dump-dom`` returns. Every figure of these reports is checked for
overlapping text as it is rendered (``figure_overlap``). With
``HIERBENCH_SCREENSHOT_DIR`` set, a screenshot of each report is written
there for a person to look at (a second Chromium run, 1-2 s a report, that
no assertion reads beyond its size). The notebooks' reports are opened by
``test_notebooks.py``, which runs them.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
from figure_overlap import ReportOverlaps

from hierbench.report import SECTIONS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)"),
]

_PROBE = r"""<script>
window.__hbErrors = [];
(function () {
  var orig = console.error;
  console.error = function () { window.__hbErrors.push("console.error: " + Array.from(arguments).join(" ")); orig.apply(console, arguments); };
  window.addEventListener("error", function (e) {
    window.__hbErrors.push("error: " + (e.message || (e.target && (e.target.src || e.target.href)) || "resource"));
  }, true);
  window.addEventListener("load", function () {
    var imgs = Array.from(document.images).map(function (i) {
      return {name: i.getAttribute("data-name"), width: i.naturalWidth, height: i.naturalHeight, complete: i.complete};
    });
    var secs = Array.from(document.querySelectorAll("section.hb-section")).map(function (s) { return s.id; });
    var empty = Array.from(document.querySelectorAll("td")).filter(function (td) {
      return /^\s*(nan|NaN|None|inf|-inf)\s*$/.test(td.textContent);
    }).map(function (td) {
      var sec = td.closest("section"); var row = td.parentElement.firstElementChild;
      return (sec ? sec.id : "?") + " / " + (row ? row.textContent.trim() : "?") + ": " + td.textContent.trim();
    });
    var out = document.createElement("pre");
    out.id = "hb-probe";
    out.textContent = JSON.stringify({errors: window.__hbErrors, images: imgs, sections: secs, nan_cells: empty});
    document.body.appendChild(out);
  });
})();
</script>"""

_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, *_FLAGS, f"--user-data-dir={tmp / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def render(report: Path, tmp: Path, screenshot: Path | None) -> dict:
    """Open ``report`` in headless Chromium; return the probe's findings and the console lines.

    ``screenshot``: also write a screenshot there (None: no second run).
    """
    text = report.read_text(encoding="utf-8")
    probed = tmp / f"probe_{report.name}"
    probed.write_text(text.replace("<head>", "<head>" + _PROBE, 1), encoding="utf-8")
    res = _chromium(
        [
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=15000",
            "--dump-dom",
            probed.as_uri(),
        ],
        tmp,
    )
    m = re.search(r'<pre id="hb-probe">(.*?)</pre>', res.stdout, re.S)
    assert m, f"the page did not finish loading: {res.stderr[-2000:]}"
    found = json.loads(html.unescape(m.group(1)))
    found["console"] = [ln for ln in res.stderr.splitlines() if ":CONSOLE" in ln]
    if screenshot is None:
        return found
    shot = _chromium(
        [
            "--hide-scrollbars",
            "--window-size=1280,2400",
            f"--screenshot={screenshot}",
            report.as_uri(),
        ],
        tmp,
    )
    assert screenshot.exists() and screenshot.stat().st_size > 10_000, shot.stderr[-2000:]
    return found


def _shot(name: str) -> Path | None:
    """Where the screenshot ``name`` goes: ``HIERBENCH_SCREENSHOT_DIR`` when set, else none is taken."""
    if not os.environ.get("HIERBENCH_SCREENSHOT_DIR"):
        return None
    d = Path(os.environ["HIERBENCH_SCREENSHOT_DIR"])
    d.mkdir(parents=True, exist_ok=True)
    return d / name


def _check(found: dict, expect_figures: set[str]) -> None:
    assert found["errors"] == [] and found["console"] == [], (found["errors"], found["console"])
    # a missing value is said in words (and flagged), never left as NaN in a table
    assert found["nan_cells"] == [], f"NaN cells (section / row: value): {found['nan_cells'][:10]}"
    assert found["images"], "no figures"
    bad = [i for i in found["images"] if not (i["complete"] and i["width"] > 0 and i["height"] > 0)]
    assert not bad, f"figures that did not load: {bad}"
    names = {i["name"] for i in found["images"]}
    assert expect_figures <= names, expect_figures - names
    missing = [s for s in SECTIONS if s not in found["sections"]]
    assert not missing, f"sections missing: {missing}"


@pytest.fixture(scope="session")
def demo_html(demo_fast):
    """The report `hierbench demo --fast` writes (conftest's run), its figures checked as they were drawn."""
    assert demo_fast.code == 0, demo_fast.out[-3000:]
    assert demo_fast.overlaps and not {k: v for k, v in demo_fast.overlaps.items() if v}, demo_fast.overlaps
    return demo_fast.folder / "report.html"


METR_COLS = [
    "--agent",
    "alias",
    "--task",
    "task_id",
    "--score",
    "score_binarized",
    "--cluster",
    "task_family",
]


@pytest.fixture(scope="session")
def metr_html(tmp_path_factory, shared_data):
    """`hierbench fit` + `hierbench report` on the METR log, from the command line's main()."""
    from hierbench.cli import main

    log = shared_data / "metr" / "metr_all_runs_2025-02-27_19b0311.csv.gz"
    folder = tmp_path_factory.mktemp("metr")
    fit_path, out = folder / "metr_fit.nc", folder / "metr_report.html"
    with warnings.catch_warnings(), ReportOverlaps() as ov:
        warnings.simplefilter("ignore")
        assert (
            main(
                [
                    "fit",
                    str(log),
                    *METR_COLS,
                    "-o",
                    str(fit_path),
                    "--draws",
                    "200",
                    "--tune",
                    "200",
                    "--chains",
                    "2",
                    "--keep-predictive",
                    "--quiet",
                ]
            )
            == 0
        )
        assert (
            main(
                [
                    "report",
                    str(fit_path),
                    "--data",
                    str(log),
                    *METR_COLS,
                    "-o",
                    str(out),
                    "--resamples",
                    "499",
                    "--quiet",
                ]
            )
            == 0
        )
    assert ov.found and not {k: v for k, v in ov.found.items() if v}, ov.found
    return out


ALL_FIGURES = {
    "rank_worst",
    "trace_worst",
    "energy",
    "abilities_forest",
    "passk_curves",
    "rank_probabilities",
    "prob_superiority",
    "variance_components",
    "ppc",
}


def test_demo_report_renders_in_chromium(demo_html, tmp_path):
    found = render(demo_html, tmp_path, _shot("demo_report.png"))
    _check(found, ALL_FIGURES)
    text = demo_html.read_text()
    # the truth is marked and both methods are in the abilities table
    abil = text.split('id="abilities"')[1].split("</section>")[0]
    assert ">truth</th>" in abil and "cluster bootstrap" in abil and "Bayes crossed" in abil
    assert '<p class="note">not computed' not in text  # no section failed
    assert 'id="appendix-1"' in text  # the demo's printed sections


def test_metr_report_renders_in_chromium(metr_html, tmp_path):
    found = render(metr_html, tmp_path, _shot("metr_report.png"))
    _check(found, ALL_FIGURES)
    text = metr_html.read_text()
    assert '<p class="note">not computed' not in text
    assert "o1-preview" in text and "davinci-002" in text
    # davinci-002 ran few of METR's tasks: the data summary flags it
    summary = text.split('id="data-summary"')[1].split("</section>")[0]
    assert (
        "fewer than half of the 83 tasks" in summary
        and "davinci-002" in summary.split("fewer than half")[1]
    )


def check_notebook_report(report: Path, tmp: Path) -> None:
    """What test_notebooks.py asks of each notebook's report (it runs the notebooks)."""
    found = render(report, tmp, _shot(f"{report.stem}.png"))
    _check(found, set())
