"""Packaging contracts: the light import, the README's two commands, CI running the same one."""

import re
import subprocess
import sys

from conftest import ROOT


def test_import_does_not_pull_pymc_or_matplotlib():
    code = (
        "import sys, hierbench, hierbench.data, hierbench.freq, hierbench.metrics, hierbench.design, hierbench.compare, hierbench.testing;"
        "bad = [m for m in ('pymc', 'pytensor', 'matplotlib', 'arviz_plots') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import hierbench imported {out.stdout.strip()}"


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set-up")[1].split("\n## ")[0]
    return re.findall(r"```bash\n(.+?)\n```", setup)


def test_readme_has_exactly_two_setup_commands():
    cmds = _readme_commands()
    assert len(cmds) == 2, cmds
    assert cmds[0].endswith("hierbench demo")
    assert "pytest" in cmds[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _readme_commands()[1] in ci
