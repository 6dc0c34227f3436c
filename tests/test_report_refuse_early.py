"""report.build refuses an existing report file, a bad suffix and a bad format before any section is computed.

On a real fit the sections take minutes; the refusal used to come from ``Report.write`` after them.
Its text is ``write``'s own, and ``write`` still refuses at write time the figures and attached
files only the computed report names.
"""

import warnings

import pytest

import hierbench.report._build as build_module
from hierbench.report import Report
from hierbench.report import build
from hierbench.report import build_all
from hierbench.testing import simulate_eval


@pytest.fixture(scope="module")
def ds():
    return simulate_eval(n_agents=2, n_tasks=6, n_runs=2, rng=0)[0]


@pytest.fixture
def no_sections(monkeypatch):
    """``_assemble`` (every section's one caller) replaced by a spy that fails the test if it is called."""
    calls = []

    def spy(*args, **kw):
        calls.append(args)
        raise AssertionError("a section was computed before the refusal")

    monkeypatch.setattr(build_module, "_assemble", spy)
    return calls


def _write_error(path, exc_type, **kw) -> str:
    """The error ``Report.write`` gives for ``path`` (an empty report: nothing computed)."""
    with pytest.raises(exc_type) as info:
        Report("t").write(path, **kw)
    return str(info.value)


@pytest.mark.parametrize("where", ["r.html", "r.md", "folder"])
def test_an_existing_report_is_refused_before_any_section(ds, tmp_path, no_sections, where):
    path = tmp_path / where
    target = path / "report.md" if where == "folder" else path
    target.parent.mkdir(exist_ok=True)
    target.write_text("mine")
    expected = _write_error(path, FileExistsError)
    assert str(target) in expected and "overwrite=True" in expected
    with pytest.raises(FileExistsError) as info:
        build(data=ds, path=path, freq=None, progress=False)
    assert str(info.value) == expected
    assert no_sections == [] and target.read_text() == "mine"


def test_a_bad_suffix_or_format_is_refused_before_any_section(ds, tmp_path, no_sections):
    path = tmp_path / "r.txt"
    with pytest.raises(ValueError, match=r"the suffix must be \.html or \.md") as info:
        build(data=ds, path=path, freq=None, progress=False)
    assert str(info.value) == _write_error(path, ValueError)
    with pytest.raises(ValueError, match=r"`format` must be 'html' or 'md'; got 'pdf'") as info:
        build(data=ds, path=tmp_path / "r.html", format="pdf", freq=None, progress=False)
    assert str(info.value) == _write_error(tmp_path / "r.html", ValueError, format="pdf")
    assert no_sections == [] and not list(tmp_path.iterdir())


def test_overwrite_replaces_the_report_and_a_folder_holds_report_md(ds, tmp_path):
    html, folder = tmp_path / "r.html", tmp_path / "out"
    html.write_text("mine")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paths, _ = build_all(None, ds, paths=[html, folder], overwrite=True, freq=None, progress=False)
    assert paths == [html, folder / "report.md"]
    assert 'id="data-summary"' in html.read_text()
    assert "## Data summary" in (folder / "report.md").read_text()


def test_write_still_refuses_an_existing_figure_when_it_writes(tmp_path):
    """The early check sees the report file alone: a figure left there by an earlier report is ``write``'s."""
    import matplotlib.pyplot as plt

    (tmp_path / "r_figures").mkdir()
    old = tmp_path / "r_figures" / "a.png"
    old.write_bytes(b"an earlier report's figure")
    r = Report("t")
    r.section("A", "text")
    fig = plt.figure()
    r.figure("a", fig)
    plt.close(fig)
    with pytest.raises(FileExistsError, match=r"would replace existing files") as info:
        r.write(tmp_path / "r.md")
    assert str(old) in str(info.value) and not (tmp_path / "r.md").exists()
