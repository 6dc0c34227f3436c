"""Packaging contracts: the light import, the README's two commands, CI running the same one."""

import re
import subprocess
import sys

import pytest
from conftest import ROOT


@pytest.mark.slow
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


@pytest.mark.slow
def test_readme_example_runs(tmp_path, monkeypatch):
    """The README's Python example runs as written on a small log written to runs.jsonl."""
    from hierbench.data import to_records
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(
        n_agents=3, n_tasks=24, n_runs=3, n_clusters=4, sd_cluster=0.3, p_error=0.05, rng=5
    )
    df = to_records(ds).rename(
        columns={
            "agent": "model",
            "task": "task_id",
            "score": "reward",
            "error": "crashed",
            "cluster": "repo",
        }
    )
    df.to_json(tmp_path / "runs.jsonl", orient="records", lines=True)
    text = (ROOT / "README.md").read_text()
    code = re.search(r"## Example\n\n```python\n(.+?)\n```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    import numpy as np

    boot, bayes, fit = scope["boot"], scope["bayes"], scope["fit"]
    table = scope["hb"].compare.side_by_side({"bootstrap": boot, "Bayes": bayes})
    assert list(table.estimator.values) == ["bootstrap", "Bayes"]
    assert fit.attrs["hierbench_model"] == "crossed"
    iv = table["ci"] if "ci" in table else table["interval"]
    # the bootstrap row is the bootstrap result, value for value
    np.testing.assert_array_equal(
        table["estimate"].sel(estimator="bootstrap").values, boot.estimate.values
    )
    np.testing.assert_array_equal(
        iv.sel(estimator="bootstrap").values, boot.ci.transpose(..., "ci_bound").values
    )
    # the Bayes row: independent numpy summaries of the posterior draws of mean_new_task
    draws = (
        fit["posterior"]["mean_new_task"].transpose("chain", "draw", "agent").values.reshape(-1, 3)
    )
    np.testing.assert_allclose(
        iv.sel(estimator="Bayes").values, np.quantile(draws, [0.025, 0.975], axis=0).T, rtol=1e-10
    )
    assert not np.isnan(table["estimate"].values).any() and not np.isnan(iv.values).any()
    np.testing.assert_allclose(
        table["estimate"].sel(estimator="Bayes").values, draws.mean(0), rtol=1e-10
    )
