"""The documentation site builds with warnings as errors and lists every public name.

The build is the check: Sphinx in nitpicky mode with ``-W`` fails on a broken
cross-reference, a malformed numpydoc section or a notebook it cannot render.
The list of names comes from the snapshot ``tests/public_api.json`` plus each
module's ``__all__`` today, not from the site's own generator.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import subprocess
import sys
import types
import warnings
import zlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")
pytest.importorskip("myst_nb")


def _inventory(path: pathlib.Path) -> set[str]:
    """The object names in a Sphinx ``objects.inv`` (a 4-line header, then zlib)."""
    raw = path.read_bytes()
    body = zlib.decompress(raw.split(b"\n", 4)[4]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines() if line}


@pytest.mark.slow
def test_site_builds_with_warnings_as_errors_and_lists_every_public_name(tmp_path):
    out = tmp_path / "html"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(ROOT / "docs"), str(out)],
        capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    names = _inventory(out / "objects.inv")
    snapshot = json.loads((ROOT / "tests" / "public_api.json").read_text())
    missing = []
    for module in snapshot:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            mod = importlib.import_module(module)
            public = {
                n for n in set(mod.__all__) | set(snapshot[module])
                if n != "__version__" and not isinstance(getattr(mod, n), types.ModuleType)
            }
        missing += [f"{module}.{n}" for n in sorted(public) if f"{module}.{n}" not in names]
    assert not missing, f"public names without a page: {missing}"
    for page in ("getting_started.html", "gallery/index.html", "models/index.html", "architecture.html"):
        assert (out / page).exists(), page
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert all((out / "gallery" / f"{n}.html").exists() for n in notebooks), notebooks
