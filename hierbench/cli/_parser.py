"""The ``hierbench`` argument parser: every command, its flags and their help.

Only the standard library: building the parser imports nothing heavy.
"""

from __future__ import annotations

import argparse

from ._battles import add_battle_flags
from ._commands import _cmd_compare
from ._commands import _cmd_demo
from ._commands import _cmd_report
from ._commands import _cmd_summary
from ._commands import _cmd_validate
from ._fit import _cmd_fit
from ._reading import _add_columns


def _add_file_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        metavar="LOG",
        nargs="+",
        help="run records: .csv, .tsv, .jsonl, .parquet, .nc, or Inspect .eval or .json logs (several "
        "Inspect logs, one per model, are read together)",
    )
    _add_columns(p)


def _add_stats_options(p: argparse.ArgumentParser, resamples: int | None = 1999) -> None:
    p.add_argument(
        "--prob", type=float, default=0.95, help="level of every interval (default 0.95)"
    )
    if resamples is not None:
        p.add_argument(
            "--resamples",
            type=int,
            default=resamples,
            help=f"bootstrap resamples of the agents' intervals (default {resamples})",
        )
    p.add_argument("--seed", type=int, default=0, help="seed of every random part: resamples, Monte Carlo p-values, simulations (default 0)")


def _add_bootstrap_method(p: argparse.ArgumentParser) -> None:
    """``--bootstrap-method``: the agents' bootstrap interval of a command that bootstraps them."""
    p.add_argument(
        "--bootstrap-method", choices=["bca", "percentile"], default=None,
        help="the agents' bootstrap interval: bca (default) or percentile, which is defined where "
        "BCa is not (every resample on one side of the estimate). Where an agent scores 0 on every "
        "task (or 1 on every one) no resampling interval has width (percentile gives [0, 0] for 0 of "
        "120): hierbench.freq.pass_hat_k(data, 1) gives a distribution-free bound instead",
    )  # fmt: skip


def _add_person_fit(p: argparse.ArgumentParser) -> None:
    """``--no-person-fit``: skip the check whose flag summary and compare print as a warning."""
    p.add_argument(
        "--no-person-fit", action="store_true",
        help="skip the person-fit check (binary scores, 3 or more agents), which warns, as the report "
        "does, of an agent whose record does not follow the tasks' difficulty as the others' do (a "
        "broken log, or an agent unlike the others); it takes about 0.2 s on SWE-bench's 25 agents x 500 tasks",
    )  # fmt: skip


def _add_fit(sub) -> None:
    """The `fit` command's parser."""
    f = sub.add_parser("fit", help="fit a hierarchical Bayesian model to a run log and save it")
    _add_file_options(f)
    f.add_argument(
        "--model",
        choices=["crossed", "beta_binomial"],
        default=None,
        help="crossed agent x task logit model (default) or per-agent beta-binomial",
    )
    f.add_argument(
        "--formula", default=None, metavar="FORMULA",
        help="fit a formula model instead (lme4 / Bambi syntax, hierbench.bayes.build_mixed), e.g. "
        "'score ~ scaffold + (1|model) + (1|task)'; its agent and task variables are the log's "
        "--agent-coord and --task-coord columns",
    )  # fmt: skip
    f.add_argument(
        "--family", choices=["auto", "binomial", "fractional", "ordinal"], default="auto",
        help="the formula model's likelihood (default auto: ordinal with --levels, binomial when every "
        "score is 0 or 1, else fractional for scores in [0, 1]); ordinal needs the grade scale, "
        "--levels (refused without it, unless a saved log was read with one)",
    )  # fmt: skip
    f.add_argument(
        "-o", "--out", required=True, metavar="FIT", help="where to save the fit (.nc or .zarr)"
    )
    f.add_argument(
        "--draws", type=int, default=None,
        help="draws per chain (default: the package's rule, until every element's bulk and tail ESS "
        "reach 400 and R-hat its limit, at most 2000)",
    )  # fmt: skip
    f.add_argument(
        "--tune", type=int, default=None,
        help="tuning steps per chain (default: 300, from the posterior mode)",
    )  # fmt: skip
    f.add_argument("--chains", type=int, default=4, help="chains (default 4)")
    f.add_argument("--seed", type=int, default=0, help="sampler seed (default 0)")
    f.add_argument(
        "--keep-predictive",
        action="store_true",
        help="also save the posterior_predictive group (for the report's predictive check)",
    )
    f.add_argument(
        "--log-likelihood",
        action="store_true",
        help="also compute and save the pointwise log_likelihood group (for LOO: "
        "arviz_stats.loo, hierbench.bayes.loo_compare)",
    )
    f.add_argument(
        "--keep-all",
        action="store_true",
        help="save every group the fit has (the per-observation groups are left out by default)",
    )
    add_battle_flags(f, model=True)
    f.add_argument("--overwrite", action="store_true", help="replace FIT if it exists")
    f.add_argument("--quiet", action="store_true", help="no sampler progress")
    f.add_argument(
        "--strict", action="store_true",
        help="exit status 1 when the fit did not pass its convergence checks (R-hat, ESS, divergences, "
        "E-BFMI; the fit is saved all the same). Without it a fit that did not converge exits 0, "
        "its verdict printed ('NOT converged') and warned on stderr",
    )  # fmt: skip
    f.set_defaults(func=_cmd_fit)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``hierbench`` command."""
    parser = argparse.ArgumentParser(
        prog="hierbench", description="Honest statistics for AI and agent evaluations."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    v = sub.add_parser(
        "validate", help="check a run log against the eval-dataset schema and report it"
    )
    _add_file_options(v)
    v.add_argument("--json", action="store_true", help="machine-readable output")
    add_battle_flags(v, model=False)
    v.set_defaults(func=_cmd_validate)
    s = sub.add_parser(
        "summary", help="per agent: tasks, runs, mean score, error rate, missing cells"
    )
    _add_file_options(s)
    s.add_argument("--json", action="store_true", help="machine-readable output")
    _add_person_fit(s)
    add_battle_flags(s, model=False)
    s.set_defaults(func=_cmd_summary)

    _add_fit(sub)

    r = sub.add_parser(
        "report", help="write the HTML (or Markdown) report of a saved fit and/or a log"
    )
    r.add_argument("fit", nargs="?", metavar="FIT", help="a fit saved by `hierbench fit`")
    r.add_argument(
        "--data", metavar="LOG", help="the run log (data summary and the frequentist half)"
    )
    r.add_argument("-o", "--out", required=True, metavar="REPORT", help="report.html or report.md")
    _add_columns(r)
    _add_stats_options(r)
    _add_bootstrap_method(r)
    add_battle_flags(r, model=False)
    r.add_argument("--overwrite", action="store_true", help="replace REPORT if it exists")
    r.add_argument("--quiet", action="store_true", help="no progress lines")
    r.add_argument(
        "--sections",
        metavar="ID[,ID...]",
        help="only these sections, e.g. data-summary,pairwise (default: all; the report says what it left out)",
    )
    r.set_defaults(func=_cmd_report)

    c = sub.add_parser(
        "compare",
        help="every pair of agents: paired differences, simultaneous intervals where max-T applies "
        "(Holm-adjusted t where the clusters are few), max-T (and Holm/BH) adjusted tests",
    )
    _add_file_options(c)
    _add_stats_options(c, resamples=None)  # compare_agents' own resampling defaults
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.add_argument(
        "--all-pairs",
        action="store_true",
        help="one row per pair even with many agents (default: a matrix above 8 agents)",
    )
    c.add_argument("--quiet", action="store_true", help="no progress line")
    # a battle log has no paired scores per task: refused by name, saying where its pairs are
    c.add_argument("--battles", action="store_true", help="refused: compare reads a run log (see the error)")
    _add_person_fit(c)
    c.set_defaults(func=_cmd_compare)

    d = sub.add_parser(
        "demo", help="the main job, on the embedded default evaluation or on --data LOG"
    )
    d.add_argument(
        "--data", metavar="LOG", help="run the analysis on this log instead (no truth then)"
    )
    _add_columns(d)
    d.add_argument(
        "--out",
        default="hierbench-demo-report",
        help="folder for the report (HTML and Markdown), the fit and the data ('' for none)",
    )
    d.add_argument("--seed", type=int, default=20261130, help="seed of the samplers and resamples")
    d.add_argument("--fast", action="store_true", help="fewer draws and resamples (a smoke run)")
    _add_bootstrap_method(d)
    d.add_argument(
        "--overwrite", action="store_true", help="replace an earlier demo's files in --out"
    )
    d.add_argument("--quiet", action="store_true", help="no sampler progress")
    d.set_defaults(func=_cmd_demo)
    return parser
