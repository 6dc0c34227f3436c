"""Every Bayesian model that applies, with every default, on every real data set.

A researcher's first call is ``hbb.fit(hbb.build_<model>(data), rng=0)``. This
script makes exactly that call on each real data set in the shared data
folder (``$HIERBENCH_SHARED_DATA``, default ``../shared/data``) and prints, per
row: the data, the model, the structure the builder chose (from
:func:`hierbench.bayes.describe`), divergences, max R-hat (and the limit the
check applied), min ESS bulk and tail, min E-BFMI, whether the package's own
checks passed, the wall time (build + compile + sample + post-processing),
the CPU time of the process (all its threads: on a loaded machine the wall
time mostly measures waiting) and the 1-minute load average when the row finished (``uptime``: the machine
is shared, so a wall time means little without it).

Usage::

    python benchmarks/bench_defaults.py            # every row
    python benchmarks/bench_defaults.py --quick    # the quick rows (the CI test runs these)
    python benchmarks/bench_defaults.py tau_bb rats_bb   # named rows
    python benchmarks/bench_defaults.py --json out.jsonl

Rows (name: data, model):

====================  ===========================================================
tau_bb / tau_crossed  tau-bench airline, gpt-4o: 1 agent x 50 tasks x 4 runs
swe_bb / swe_crossed  SWE-bench Verified bash-only: 25 x 500 x 1 (clusters dropped)
swe_crossed_repo      the same with the repository of each task as its cluster
metr_bb / metr_crossed  METR binarised: 10 agents x 83 tasks, 1-96 runs, 36 families
rats_bb               rat tumours (BDA 5.1): 71 experiments as tasks of one agent
llmfao_bt             LLMFAO crowd pairwise judgments, 59 models, Davidson ties
epl_bt                EPL football 2008-13, Davidson ties (draws)
citations_bt          Stigler's journal citations, no ties (``ties=None``)
====================  ===========================================================
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections.abc import Callable

QUICK = ("tau_bb", "rats_bb", "citations_bt")


def _shared():
    from hierbench.data import shared_data_dir

    return shared_data_dir()


def _tau():
    import hierbench as hb

    return hb.data.load_tau_bench_airline()


def _swe(clusters: bool):
    import hierbench as hb

    ds = hb.data.load_swebench_bash_only()
    return ds if clusters else ds.drop_vars("cluster")


def _metr():
    import hierbench as hb

    return hb.data.load_metr()


def _rats():
    import pandas as pd
    import xarray as xr

    df = pd.read_csv(_shared() / "beta_binomial" / "rats_bda_tarone1982_71.csv")
    return xr.Dataset(
        {
            "n_runs": (("agent", "task"), df["n"].to_numpy()[None, :]),
            "n_success": (("agent", "task"), df["y"].to_numpy()[None, :]),
        },
        coords={"agent": ["rats"], "task": [f"exp_{i:02d}" for i in df["experiment"]]},
    )


def _llmfao():
    from hierbench.data import read_battles

    return read_battles(_shared() / "evalica" / "llmfao_pairwise.csv", task="prompt")


def _epl():
    import pandas as pd

    from hierbench.data import read_battles

    df = pd.read_csv(_shared() / "bradley_terry" / "football_epl_2008_2013.csv")
    return read_battles(
        pd.DataFrame(
            {
                "left": df.home,
                "right": df.away,
                "winner": df.result.map({1.0: "left", 0.0: "tie", -1.0: "right"}),
            }
        )
    )


def _citations():
    from hierbench.data import from_pair_counts

    return from_pair_counts(
        _shared() / "bradley_terry" / "citations_binomial_pairs.csv",
        agent_a="journal1",
        agent_b="journal2",
        wins_a="win1",
        wins_b="win2",
    )


# name: (data label, loader, builder name, builder kwargs that are part of the data's nature)
ROWS: dict[str, tuple[str, Callable, str, dict]] = {
    "tau_bb": ("tau-bench (1 x 50 x 4)", _tau, "beta_binomial", {}),
    "tau_crossed": ("tau-bench (1 x 50 x 4)", _tau, "crossed", {}),
    "swe_bb": ("SWE-bench bash-only (25 x 500 x 1)", lambda: _swe(False), "beta_binomial", {}),
    "swe_crossed": ("SWE-bench bash-only (25 x 500 x 1)", lambda: _swe(False), "crossed", {}),
    "swe_crossed_repo": (
        "SWE-bench bash-only, repo clusters",
        lambda: _swe(True),
        "crossed",
        {},
    ),
    "metr_bb": ("METR binarised (10 x 83, 1-96 runs)", _metr, "beta_binomial", {}),
    "metr_crossed": ("METR binarised, families", _metr, "crossed", {}),
    "rats_bb": ("rats (71 groups, one agent)", _rats, "beta_binomial", {}),
    "llmfao_bt": ("LLMFAO (59 models)", _llmfao, "bradley_terry", {}),
    "epl_bt": ("EPL football 2008-13", _epl, "bradley_terry", {}),
    # the citation counts hold no ties: the logistic model is the data's own
    "citations_bt": ("citations (no ties)", _citations, "bradley_terry", {"ties": None}),
}


def load1() -> float:
    return os.getloadavg()[0]


def run_row(name: str) -> dict:
    import hierbench.bayes as hbb

    label, loader, model_name, kw = ROWS[name]
    data = loader()
    builder = getattr(hbb, f"build_{model_name}")
    t0 = time.perf_counter()
    c0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dt = hbb.fit(builder(data, **kw), rng=0, progress=False)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    a = dt.attrs
    text = str(hbb.describe(dt))
    structure = json.loads(a.get("hierbench_structure", "{}")).get("decisions", {})
    return {
        "row": name,
        "data": label,
        "model": model_name,
        "structure": {k: v["choice"] for k, v in structure.items()},
        "divergences": int(a["diag_n_divergent"]),
        "max_r_hat": round(float(a["diag_max_r_hat"]), 4),
        "r_hat_limit": round(float(a.get("diag_r_hat_limit", 1.01)), 4),
        "min_ess_bulk": round(float(a["diag_min_ess_bulk"])),
        "min_ess_tail": round(float(a["diag_min_ess_tail"])),
        "min_bfmi": round(float(a["diag_min_bfmi"]), 3),
        "passed": bool(a["diag_converged"]),
        "failures": json.loads(a["diag_failures"]),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "load1": round(load1(), 2),
        "warnings": sorted({type(w.message).__name__ for w in caught}),
        "describe": text,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("rows", nargs="*", help=f"rows to run (default all): {list(ROWS)}")
    p.add_argument("--quick", action="store_true", help=f"only the quick rows {QUICK}")
    p.add_argument("--json", help="append one JSON line per row to this file")
    args = p.parse_args(argv)
    rows = list(QUICK) if args.quick else (args.rows or list(ROWS))
    bad = [r for r in rows if r not in ROWS]
    if bad:
        p.error(f"unknown rows {bad}; choose from {list(ROWS)}")
    head = (
        f"{'row':<17} {'model':<14} {'div':>4} {'R-hat':>6} {'limit':>6} {'ESS b':>6} "
        f"{'ESS t':>6} {'BFMI':>5} {'ok':>3} {'wall s':>7} {'cpu s':>6} {'load1':>6}  structure"
    )
    print(head, flush=True)
    all_ok = True
    for r in rows:
        res = run_row(r)
        all_ok &= res["passed"]
        st = "; ".join(f"{k}={v}" for k, v in res["structure"].items())
        print(
            f"{r:<17} {res['model']:<14} {res['divergences']:>4} {res['max_r_hat']:>6.3f} "
            f"{res['r_hat_limit']:>6.3f} {res['min_ess_bulk']:>6} {res['min_ess_tail']:>6} "
            f"{res['min_bfmi']:>5.2f} {'yes' if res['passed'] else 'NO':>3} {res['wall_s']:>7.1f} "
            f"{res['cpu_s']:>6.1f} "
            f"{res['load1']:>6.2f}  {st}",
            flush=True,
        )
        if res["failures"]:
            print(f"{'':<17} failures: {res['failures']}", flush=True)
        if args.json:
            with open(args.json, "a") as fh:
                fh.write(json.dumps(res) + "\n")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
