"""A separated agent's Bayes numbers are flagged where they are read (audit W, findings 1 and 5).

The log: ``simulate_eval`` with one agent's scores set to 0 on every run, so by construction the
binary data separate that agent and no other. The fit is made by ``hierbench fit`` (its
BoundaryWarning must come as one ``warning: ...`` line), saved and loaded back, and the report
must flag that agent, and only it, in each Bayesian table and carry the fit's note.
"""

import warnings

import pytest

from hierbench.cli import main
from hierbench.data import from_records
from hierbench.io import load_fit
from hierbench.report import build
from hierbench.testing import simulate_eval

COLS = ["--agent", "agent", "--task", "task", "--run", "run", "--score", "score"]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sep")
    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=2, rng=1)
    zero = str(ds["agent"].values[1])
    ds["score"].loc[{"agent": zero}] = 0.0
    ds["score"].to_dataframe().reset_index().to_csv(tmp / "log.csv", index=False)
    return tmp, zero


@pytest.mark.slow  # one small fit (2 chains x 100 draws), then a Markdown report
def test_fit_warns_in_one_line_and_report_flags_the_agent(fitted, capsys):
    """The report is ``build``'s own, its sections cut to the three read here (``sections=``): they
    and the warnings they add are computed and written as in the whole report.
    """
    tmp, zero = fitted
    args = ["fit", str(tmp / "log.csv"), *COLS, "-o", str(tmp / "fit.nc"), "--draws", "100", "--tune", "100",
            "--chains", "2", "--quiet"]  # fmt: skip
    assert main(args) == 0
    err = capsys.readouterr().err
    bound = [line for line in err.splitlines() if "BoundaryWarning" in line]
    assert len(bound) == 1 and bound[0].startswith("warning: BoundaryWarning: the binary data separate")
    assert "sys.exit" not in err and f"agent[{zero}]" in bound[0]

    fit = load_fit(tmp / "fit.nc")  # a saved and re-loaded fit keeps what the report reads
    data = from_records(str(tmp / "log.csv"), agent="agent", task="task", run="run", score="score")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        md = build(fit, data, path=tmp / "r.md", n_resamples=99, progress=False,
                   sections=["abilities", "ranks", "side-by-side"]).read_text()
    flagged = "separated by the data (every run failed, or every run succeeded)"
    for heading in ("Agent abilities", "Rank probabilities", "Bayesian and frequentist side by side"):
        body = md.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
        rows = {line.split("|")[1].strip(): line for line in body.splitlines() if line.startswith("| agent_")}
        assert flagged in rows[zero], heading
        assert not any(flagged in line for a, line in rows.items() if a != zero), heading
    warned = md.split("## Warnings raised while computing the report", 1)[1]
    assert f"the fit's note: the binary data separate agent[{zero}] (0 of 24 runs succeeded)" in warned
