"""The model zoo: reference fits on shipped real data, their summaries and the regression check.

Each case names a model, a real dataset (read where it lies, see
:func:`hierbench.data.shared_data_dir`), builder options, sampler settings, a
seed and the summarised variables. ``python -m hierbench.bayes._zoo`` refits
every case and writes ``models/<model>/reference.json`` and
``models/<model>/spec.toml``; the tests refit with the same settings and
compare each posterior mean with the reference within an MCSE-based
tolerance.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ._registry import get_model
from ._registry import spec_to_toml

__all__ = ["ZOO_CASES", "ZooCase", "compare_to_reference", "run_case", "summarise"]

ROOT = Path(__file__).resolve().parents[2]


def _rats() -> xr.Dataset:
    from ..data import shared_data_dir

    df = pd.read_csv(shared_data_dir() / "beta_binomial" / "rats_bda_tarone1982_71.csv")
    return xr.Dataset(
        {
            "n_runs": (("agent", "task"), df["n"].to_numpy()[None, :]),
            "n_success": (("agent", "task"), df["y"].to_numpy()[None, :]),
        },
        coords={"agent": ["rats"], "task": [f"exp_{i:02d}" for i in df["experiment"]]},
    )


def _metr() -> xr.Dataset:
    from ..data import load_metr

    return load_metr()


def _swebench() -> xr.Dataset:
    from ..data import load_swebench_bash_only

    return load_swebench_bash_only()


#: every reference fit's sampler settings and seed unless its case says otherwise
ZOO_SAMPLER: dict[str, Any] = {"draws": 1000, "tune": 1000, "chains": 4}
ZOO_SEED = 20261130


@dataclass(frozen=True)
class ZooCase:
    """One reference fit: model, dataset, options, sampler settings, seed, summarised variables."""

    name: str
    model: str
    dataset: str
    data_file: str
    loader: Callable[[], xr.Dataset]
    var_names: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)
    sampler: dict[str, Any] = field(default_factory=lambda: dict(ZOO_SAMPLER))
    seed: int = ZOO_SEED
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


_CASES = (
    ZooCase(
        name="rats",
        model="beta_binomial",
        dataset="rat tumours, 71 experiments (Tarone 1982; BDA3 table 5.1)",
        data_file="beta_binomial/rats_bda_tarone1982_71.csv",
        loader=_rats,
        options={"pooling": "none"},
        var_names=("mu", "kappa", "mean_observed"),
    ),
    ZooCase(
        name="metr",
        model="crossed",
        dataset="METR task runs (Feb 2025), binarised, 10 models x 83 tasks, task families as clusters",
        data_file="metr/metr_all_runs_2025-02-27_19b0311.csv.gz",
        loader=_metr,
        var_names=(
            "sd_task", "sd_agent_task", "sd_cluster", "sd_agent_cluster", "ability", "mean_observed", "mean_new_task"
        ),
    ),
    ZooCase(
        name="swebench_bash_only",
        model="crossed",
        dataset="SWE-bench Verified bash-only, 25 models x 500 tasks, R = 1, repositories as clusters",
        data_file="swebench_bash_only/swebench_verified_bash_only_per_instance.csv.gz",
        loader=_swebench,
        var_names=("sd_task", "sd_cluster", "sd_agent_cluster", "ability", "mean_observed"),
        # at 1,000 draws per chain sd_agent_cluster (near its boundary at 0) had bulk ESS 331 < 400
        sampler={**ZOO_SAMPLER, "draws": 2000},
        notes=(
            "R = 1: agent_task='auto' leaves the agent x task effect out (a single "
            "Bernoulli run per cell cannot separate it from run noise). The 12 "
            "repositories (1 to 231 tasks) are clusters, integrated out of the "
            "centred task effects (cluster_form='integrated'), with an agent x "
            "repository effect (agent_cluster='auto'); see models/crossed/card.md."
        ),
    ),
)
ZOO_CASES: dict[str, ZooCase] = {case.name: case for case in _CASES}


def summarise(fit: xr.DataTree, var_names: tuple[str, ...]) -> dict[str, Any]:
    """Per-element posterior mean, sd and MCSE of the mean (arviz-stats), as plain JSON."""
    import arviz_stats as azs

    post = fit["posterior"].to_dataset()[list(var_names)]
    mcse = azs.mcse(post, method="mean")
    out: dict[str, Any] = {}
    for v in var_names:
        da = post[v]
        extra_dims = [d for d in da.dims if d not in ("chain", "draw")]
        mean = da.mean(("chain", "draw"))
        sd = da.std(("chain", "draw"))
        if not extra_dims:
            out[v] = {"mean": float(mean), "sd": float(sd), "mcse": float(mcse[v])}
        else:
            (dim,) = extra_dims
            out[v] = {
                str(lbl): {"mean": float(mean.sel({dim: lbl})), "sd": float(sd.sel({dim: lbl})), "mcse": float(mcse[v].sel({dim: lbl}))}
                for lbl in da[dim].values
            }
    return out


def run_case(case: ZooCase, **overrides: Any) -> tuple[xr.DataTree, dict[str, Any]]:
    """Fit one zoo case with its settings and return the fit and its reference record."""
    from ._sampler._fit import fit

    entry = get_model(case.model)
    data = case.loader()
    model = entry.builder(data, **case.options)
    settings = {**case.sampler, **overrides}
    from ._checks._diagnostics import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("always", ConvergenceWarning)  # a reference that fails its checks says so
        idata = fit(model, rng=case.seed, **settings)
    record = {
        "case": case.name,
        "model": case.model,
        "dataset": case.dataset,
        "data_file": case.data_file,
        "data_hash": idata.attrs["hierbench_data_hash"],
        "options": json.loads(idata.attrs["hierbench_spec"])["options"],
        "sampler": {"sampler": idata.attrs["sampler"], **settings},
        "seed": case.seed,
        "diagnostics": {
            "max_r_hat": idata.attrs["diag_max_r_hat"],
            "min_ess_bulk": idata.attrs["diag_min_ess_bulk"],
            "n_divergent": idata.attrs["diag_n_divergent"],
            "min_bfmi": idata.attrs["diag_min_bfmi"],
            "converged": int(idata.attrs["diag_converged"]),
            "failures": json.loads(idata.attrs.get("diag_failures", "[]")),
        },
        "hierbench_version": idata.attrs["hierbench_version"],
        "summary": summarise(idata, case.var_names),
        "notes": case.notes,
    }
    return idata, record


def compare_to_reference(new: dict[str, Any], ref: dict[str, Any], *, z: float = 5.0) -> list[str]:
    """Elements whose posterior means differ by more than ``z * sqrt(mcse_new^2 + mcse_ref^2)``.

    Returns human-readable mismatch messages (empty when all agree). The two
    runs are independent Monte Carlo estimates of the same posterior mean, so
    their difference has standard deviation ``sqrt(mcse_new^2 + mcse_ref^2)``;
    ``z = 5`` keeps false alarms below 1e-6 per element.
    """

    def leaves(d: dict[str, Any], prefix: str = "") -> dict[str, dict[str, float]]:
        out = {}
        for k, v in d.items():
            if isinstance(v, dict) and "mean" in v and "mcse" in v:
                out[prefix + k] = v
            elif isinstance(v, dict):
                out.update(leaves(v, prefix + k + "/"))
        return out

    a, b = leaves(new["summary"]), leaves(ref["summary"])
    bad = []
    missing = sorted(set(b) - set(a))
    if missing:
        bad.append(f"missing from the refit: {missing}")
    for key in sorted(set(a) & set(b)):
        tol = z * float(np.hypot(a[key]["mcse"], b[key]["mcse"]))
        diff = abs(a[key]["mean"] - b[key]["mean"])
        if not diff <= tol:
            bad.append(f"{key}: refit mean {a[key]['mean']:.5g} vs reference {b[key]['mean']:.5g} (|diff| {diff:.3g} > {tol:.3g})")
    return bad


def _write(model: str, records: list[dict[str, Any]]) -> None:
    folder = ROOT / "models" / model
    folder.mkdir(parents=True, exist_ok=True)
    entry = get_model(model)
    (folder / "reference.json").write_text(
        json.dumps({"model": model, "cases": {r["case"]: r for r in records}}, indent=1, sort_keys=True) + "\n"
    )
    spec = entry.spec()
    spec["reference_cases"] = {
        r["case"]: {
            "data_file": r["data_file"],
            "seed": r["seed"],
            **r["sampler"],
            **{f"option_{k}": v for k, v in r["options"].items() if isinstance(v, (str, int, float, bool))},
        }
        for r in records
    }
    (folder / "spec.toml").write_text(spec_to_toml(spec))


def main(names: list[str] | None = None) -> None:
    """Refit the zoo cases and write their reference files."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    for name, case in ZOO_CASES.items():
        if names and name not in names:
            continue
        _, rec = run_case(case)
        print(json.dumps({"case": name, **rec["diagnostics"]}), flush=True)
        by_model.setdefault(case.model, []).append(rec)
    for model, recs in by_model.items():
        path = ROOT / "models" / model / "reference.json"
        if path.exists():  # keep the cases not refitted this time
            old = json.loads(path.read_text())["cases"]
            recs = [*[r for k, r in old.items() if k not in {x["case"] for x in recs}], *recs]
        _write(model, recs)


if __name__ == "__main__":
    import sys

    os.environ.setdefault("HIERBENCH_SHARED_DATA", str(ROOT.parent / "shared" / "data"))
    main(sys.argv[1:] or None)
