"""Loaders for the public real-data sets that hierbench is validated on.

The files are not shipped with hierbench (several licences forbid copying);
the loaders read them where they lie. The folder is taken from the
``HIERBENCH_SHARED_DATA`` environment variable, defaulting to
``../shared/data`` relative to the current directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import xarray as xr

from .._base import HierbenchWarning
from .._base import warn_user
from ._records import from_records
from ._schema import check_option

__all__ = [
    "load_metr",
    "load_swebench_bash_only",
    "load_tau_bench_airline",
    "shared_data_dir",
]

ENV_VAR = "HIERBENCH_SHARED_DATA"


def _note_agents_without(ds: xr.Dataset, extra: dict[str, str]) -> xr.Dataset:
    """Say which agents have no value of a kept per-run variable in any run; change nothing.

    ``attrs["agents_without"]`` (JSON) maps each ``extra`` variable to those agents (``{}``:
    none), and such a variable's own ``attrs["note"]`` counts them and names the file's
    column, so an all-NaN variable is never kept without a word.
    """
    out = {}
    for var, col in extra.items():
        has = ds[var].notnull().any([d for d in ds[var].dims if d != "agent"]).values
        if not has.all():
            out[var] = [str(a) for a in ds["agent"].values[~has]]
            ds[var].attrs["note"] = (
                f"no value in any run of {len(out[var])} of {has.size} agents: the file's column {col!r} "
                "is empty in all their records (attrs['agents_without'] names them)"
            )
    ds.attrs["agents_without"] = json.dumps(out)
    return ds


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
    extra = {"steps": "n_messages"}
    ds = from_records(
        df,
        agent="agent",
        task="task_id",
        run="trial",
        score="reward",
        extra=extra,
        attrs={"source": str(path), "dataset": "tau-bench airline (gpt-4o, tool-calling)"},
    )
    return _note_agents_without(ds, extra)


def load_swebench_bash_only(root: str | os.PathLike | None = None) -> xr.Dataset:
    """SWE-bench Verified bash-only (mini-swe-agent): 25 models x 500 tasks, one run each.

    The task's repository (the instance id before ``__``) is the cluster;
    ``cost`` (USD) and ``steps`` (API calls) are kept per run (an agent with
    no value of one in any run is named in ``attrs["agents_without"]``). The file's
    own column ``flag_per_instance_disagrees_with_reported`` (the record
    disagrees with the leaderboard's reported rate; all of Claude 3.7
    Sonnet's 500 runs in the published file) is kept as the per-run
    ``flag_disagrees_with_reported``; the agents it flags are named in a
    :class:`~hierbench.HierbenchWarning` and in ``attrs["flagged_agents"]``
    (JSON, agent: flagged runs). Nothing is dropped or changed.
    """
    path = shared_data_dir(root) / "swebench_bash_only" / "swebench_verified_bash_only_per_instance.csv.gz"
    df = pd.read_csv(path, dtype={"model_name": str, "task_id": str, "folder": str})
    df["repo"] = df["task_id"].str.split("__").str[0]
    ds = from_records(
        df,
        agent="model_name",
        task="task_id",
        score="resolved",
        cluster="repo",
        extra=(extra := {"cost": "cost", "steps": "api_calls"}),
        annotations={"flag_disagrees_with_reported": _SWEBENCH_FLAG},
        agent_coords=["folder"],
        attrs={"source": str(path), "dataset": "SWE-bench Verified bash-only"},
    )
    _note_agents_without(ds, extra)
    _flag_disputed_agents(ds, path.with_name("swebench_leaderboard_reported_resolved.csv"))
    return ds


#: the SWE-bench file's own column marking records that disagree with the leaderboard's reported rate
_SWEBENCH_FLAG = "flag_per_instance_disagrees_with_reported"


def _flag_disputed_agents(ds: xr.Dataset, leaderboard: Path) -> None:
    """Warn about (and record in attrs) the agents whose records the file itself flags; change nothing.

    ``attrs["flagged_agents"]`` (JSON) maps each flagged agent to its number of
    flagged runs; ``attrs["flag_column"]`` names the file's column.
    """
    flag = ds["flag_disagrees_with_reported"]
    n_flagged = flag.sum([d for d in flag.dims if d != "agent"])
    flagged = {str(a): int(n) for a, n in zip(ds["agent"].values, n_flagged.values, strict=True) if n > 0}
    ds.attrs["flag_column"] = _SWEBENCH_FLAG
    ds.attrs["flagged_agents"] = json.dumps(flagged)
    if not flagged:
        return
    reported = {}
    if leaderboard.is_file():
        lb = pd.read_csv(leaderboard, dtype={"folder": str, "leaderboard": str})
        lb = lb[lb["leaderboard"] == "bash-only"]
        reported = dict(zip(lb["folder"], lb["reported_resolved_pct"], strict=True))
    rate = ds["score"].mean([d for d in ds["score"].dims if d != "agent"])
    said = []
    for a, n in flagged.items():
        folder = str(ds["folder"].sel(agent=a).item())
        lb_pct = f", the leaderboard reports {reported[folder]:.1f}%" if folder in reported else ""
        said.append(f"{a!r} on {n} of {int(ds['score'].sel(agent=a).notnull().sum())} runs "
                    f"(resolved {100 * float(rate.sel(agent=a)):.1f}% here{lb_pct})")
    warn_user(
        f"SWE-bench bash-only: the file itself flags the records of {len(flagged)} agent(s) in its column "
        f"{_SWEBENCH_FLAG!r} (the per-instance record disagrees with the reported result): " + "; ".join(said)
        + ". Kept as read; the flag is the per-run variable 'flag_disagrees_with_reported' and "
        "attrs['flagged_agents'] (JSON: agent -> flagged runs); leave such agents out of rankings "
        "(ds.drop_sel(agent=list(json.loads(ds.attrs['flagged_agents'])))) or read their scores as suspect",
        HierbenchWarning,
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
    are the clusters; ``human_minutes`` is a task coord; ``cost``
    (``dollar_equivalent``) and ``tokens`` (``total_tokens``) are kept per
    run, but in the published file only the human-baseline rows fill them:
    for every model they are NaN in every run (each variable's
    ``attrs["note"]`` says so, ``attrs["agents_without"]`` names the agents),
    so a cost or token analysis there concerns the human baselines alone
    (``include_human=True``).

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
        extra=(extra := {"cost": "dollar_equivalent", "tokens": "total_tokens"}),
        annotations=["usage_limit"],
        errors=errors,  # type: ignore[arg-type]
        attrs={"source": str(path), "dataset": "METR task runs (Feb 2025)"},
    )
    _note_agents_without(ds, extra)
    ds.attrs["n_records_read"] = n_all
    if not include_human:
        import json

        not_kept = json.loads(ds.attrs["not_kept"])
        not_kept["human baseline rows (include_human=False)"] = n_human
        ds.attrs["not_kept"] = json.dumps(not_kept)
    return ds
