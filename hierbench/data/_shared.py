"""Loaders for the public real-data sets that hierbench is validated on.

The files are not shipped with hierbench (several licences forbid copying);
the loaders read them where they lie. The folder is taken from the
``HIERBENCH_SHARED_DATA`` environment variable, defaulting to
``../shared/data`` relative to the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import xarray as xr

from ._records import from_records
from ._schema import check_option

__all__ = [
    "load_metr",
    "load_swebench_bash_only",
    "load_tau_bench_airline",
    "shared_data_dir",
]

ENV_VAR = "HIERBENCH_SHARED_DATA"


def shared_data_dir(root: str | os.PathLike | None = None) -> Path:
    """Return the folder holding the shared real data.

    In order: ``root`` if given; else ``$HIERBENCH_SHARED_DATA``; else
    ``../shared/data`` relative to the current directory, then relative to a
    source checkout of hierbench (so notebooks and scripts run from any
    folder of the checkout find it).
    """
    if root is not None:
        candidates = [Path(root)]
    elif os.environ.get(ENV_VAR):
        candidates = [Path(os.environ[ENV_VAR])]
    else:
        candidates = [Path("../shared/data"), Path(__file__).resolve().parents[3] / "shared" / "data"]
    for path in candidates:
        if path.is_dir():
            return path
    raise FileNotFoundError(
        f"shared data folder not found (looked in {[str(c) for c in candidates]}): set ${ENV_VAR} "
        "to the folder that holds tau_bench/, metr/, swebench_bash_only/ (see its PROVENANCE.md)"
    )


def load_tau_bench_airline(root: str | os.PathLike | None = None) -> xr.Dataset:
    """tau-bench, gpt-4o tool-calling agent, airline domain: 50 tasks x 4 trials, reward 0/1."""
    path = shared_data_dir(root) / "tau_bench" / "tau_bench_gpt-4o_airline_trials.csv"
    df = pd.read_csv(path, dtype={"model": str, "agent_strategy": str, "task_id": str, "trial": str})
    df["agent"] = df["model"] + "/" + df["agent_strategy"]
    return from_records(
        df,
        agent="agent",
        task="task_id",
        run="trial",
        score="reward",
        extra={"steps": "n_messages"},
        attrs={"source": str(path), "dataset": "tau-bench airline (gpt-4o, tool-calling)"},
    )


def load_swebench_bash_only(root: str | os.PathLike | None = None) -> xr.Dataset:
    """SWE-bench Verified bash-only (mini-swe-agent): 25 models x 500 tasks, one run each.

    The task's repository (the instance id before ``__``) is the cluster;
    ``cost`` (USD) and ``steps`` (API calls) are kept per run.
    """
    path = shared_data_dir(root) / "swebench_bash_only" / "swebench_verified_bash_only_per_instance.csv.gz"
    df = pd.read_csv(path, dtype={"model_name": str, "task_id": str, "folder": str})
    df["repo"] = df["task_id"].str.split("__").str[0]
    return from_records(
        df,
        agent="model_name",
        task="task_id",
        score="resolved",
        cluster="repo",
        extra={"cost": "cost", "steps": "api_calls"},
        annotations={"flag_disagrees_with_reported": "flag_per_instance_disagrees_with_reported"},
        agent_coords=["folder"],
        attrs={"source": str(path), "dataset": "SWE-bench Verified bash-only"},
    )


def load_metr(
    root: str | os.PathLike | None = None,
    *,
    score: str = "score_binarized",
    include_human: bool = False,
    errors: str = "fail",
) -> xr.Dataset:
    """METR task runs (Feb 2025): 10 models (+ human baselines) x 83 tasks in 36 families.

    ``fatal_error_from == "usageLimits"`` marks a run that exhausted its token
    budget: the agent's own failure, so its recorded score stands and the
    flag is kept as the per-run annotation ``usage_limit``. Any other
    non-empty ``fatal_error_from`` is an infrastructure error. Task families
    are the clusters; ``human_minutes`` is a task coord; ``cost`` and
    ``tokens`` are kept per run.

    Parameters
    ----------
    score : {"score_binarized", "score"}
        The binarised success or the continuous score.
    include_human : bool
        Keep the human-baseline rows (alias ``human``) as an agent.
    """
    check_option(score, "score", ("score_binarized", "score"))
    path = shared_data_dir(root) / "metr" / "metr_all_runs_2025-02-27_19b0311.csv.gz"
    df = pd.read_csv(path, dtype={"alias": str, "task_id": str, "run_id": str, "task_family": str})
    n_all = len(df)
    n_human = int((df["alias"] == "human").sum())
    if not include_human:
        df = df[df["alias"] != "human"]
    fe = df["fatal_error_from"].fillna("").astype(str)
    df = df.assign(
        usage_limit=fe.eq("usageLimits"),
        infra_error=fe.ne("") & fe.ne("usageLimits"),
    )
    # the continuous score is used as recorded: from_records rejects values outside [0, 1]
    ds = from_records(
        df,
        agent="alias",
        task="task_id",
        run="run_id",
        score=score,
        error="infra_error",
        cluster="task_family",
        task_coords=["human_minutes"],
        extra={"cost": "dollar_equivalent", "tokens": "total_tokens"},
        annotations=["usage_limit"],
        errors=errors,  # type: ignore[arg-type]
        attrs={"source": str(path), "dataset": "METR task runs (Feb 2025)"},
    )
    ds.attrs["n_records_read"] = n_all
    if not include_human:
        import json

        not_kept = json.loads(ds.attrs["not_kept"])
        not_kept["human baseline rows (include_human=False)"] = n_human
        ds.attrs["not_kept"] = json.dumps(not_kept)
    return ds
