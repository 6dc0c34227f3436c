"""What ``hierbench fit`` and ``report`` tell a command-line user to do (audit C: C11, C14).

- A fit that did not converge was warned with no way out (C11). SWE-bench with clusters at
  ``--draws 300``: min ESS 48 at ``sd_cluster``; the same fit without ``--draws`` (drawing to its
  ESS target) converged. The warning and the report's Convergence section now say so; here a
  30-draw fit of a small log is refitted as the warning says, and converges.
- A fit/data cluster mismatch said "the cluster column, `--cluster` or --cluster COL" (C14).
- The partial-credit refusal named hierbench's within-cell run number ('0'), not the file's run
  label, so the row could not be found (C14).

The logs are built here: which cell holds which run label and score is known by construction.
"""

import contextlib
import io
import warnings

import numpy as np
import pandas as pd
import pytest

from hierbench.cli import main
from hierbench.io import load_fit


@pytest.fixture(scope="module")
def short_fit(tmp_path_factory):
    """A 3 agents x 12 tasks log (3 families, runs labelled run-x / run-y) and a 30-draw fit of it."""
    root = tmp_path_factory.mktemp("short_fit")
    gen = np.random.default_rng(0)
    rows = []
    for t in range(12):
        d = gen.normal()
        for a, th in (("a", 1.0), ("b", 0.0), ("c", -1.0)):
            for r in ("run-x", "run-y"):
                rows.append((a, f"t{t:02d}", f"c{t % 3}", r, float(gen.random() < 1 / (1 + np.exp(d - th)))))
    log = root / "log.csv"
    pd.DataFrame(rows, columns=["agent", "task", "family", "run", "score"]).to_csv(log, index=False)
    fit = root / "f30.nc"
    args = ["fit", str(log), "--cluster", "family", "--run", "run", "--tune", "30", "--chains", "2", "--quiet"]
    err = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        assert main([*args, "--draws", "30", "-o", str(fit)]) == 0
    return root, log, fit, args, err.getvalue()


@pytest.mark.slow  # a small fit (module fixture) and a refit or report: the full suite, not the fast lane
def test_the_warning_says_to_leave_draws_out_and_that_converges(short_fit, capsys):
    root, _, fit, args, err = short_fit
    assert not int(load_fit(fit).attrs["diag_converged"])  # the premise: 60 draws cannot reach ESS 200
    said = [x for x in err.splitlines() if x.startswith("warning: the fit did not converge: ")]
    assert len(said) == 1
    assert "What to do: it drew a fixed 30 draws per chain (--draws 30): leave --draws out" in said[0], said
    # the remedy, followed to the letter: the same command without --draws
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([*args, "-o", str(root / "fd.nc")]) == 0
    assert int(load_fit(root / "fd.nc").attrs["diag_converged"])
    assert "did not converge" not in capsys.readouterr().err


@pytest.mark.slow  # a small fit (module fixture) and a refit or report: the full suite, not the fast lane
def test_the_report_says_what_to_do_about_a_fit_that_did_not_converge(short_fit, capsys):
    """What is read is said before any section, and points to the Convergence section: the report's
    sections are cut to that one (``--sections``), which the report says after the verdict.
    """
    root, _, fit, _, _ = short_fit
    assert main(["report", str(fit), "--quiet", "-o", str(root / "r.md"), "--sections", "convergence"]) == 0
    assert "What to do: it drew a fixed 30 draws per chain" in capsys.readouterr().err
    md = " ".join((root / "r.md").read_text().split())
    assert "Do not trust its summaries. What to do: it drew a fixed 30 draws per chain (--draws 30, or draws=30)" in md
    assert "the Convergence section gives each check and what to do." in md
    assert ("the Convergence section gives each check and what to do. A partial report: only the sections asked "
            "for (sections=['convergence']); left out: Data summary, Agent abilities,") in md  # fmt: skip


@pytest.mark.slow  # a small fit (module fixture) and a refit or report: the full suite, not the fast lane
def test_a_cluster_mismatch_names_the_flag_once(short_fit, capsys):
    root, log, fit, _, _ = short_fit
    # the log without --cluster: the fit's model has clusters, the data none
    assert main(["report", str(fit), "--data", str(log), "--run", "run", "-o", str(root / "x.md")]) == 2
    err = capsys.readouterr().err
    assert "the cluster column, --cluster COL, gives each task its cluster" in err, err
    assert "`--cluster` or" not in err


def test_the_partial_credit_refusal_names_the_files_run_labels(tmp_path, capsys):
    df = pd.DataFrame({
        "agent": ["a", "a", "b", "b"], "task": ["t1", "t1", "t1", "t1"],
        "run": ["mp4-1", "mp4-2", "mp4-3", "mp4-4"], "score": [1.0, 0.25, 0.0, 1.0],
    })  # fmt: skip
    path = tmp_path / "frac.csv"
    df.to_csv(path, index=False)
    assert main(["fit", str(path), "--run", "run", "-o", str(tmp_path / "f.nc")]) == 2
    err = capsys.readouterr().err
    # the one partial score is row 1: agent a, task t1, the file's run 'mp4-2' (hierbench's number 1)
    assert "(agent, task, run as the --run column labels it, score) [('a', 't1', 'mp4-2', 0.25)]" in err, err
    # without --run there is no file label: the run is hierbench's number within the cell, in file order
    assert main(["fit", str(path), "-o", str(tmp_path / "f.nc")]) == 2
    assert "(agent, task, run, score) [('a', 't1', '1', 0.25)]" in capsys.readouterr().err
