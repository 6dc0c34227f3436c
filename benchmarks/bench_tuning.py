r"""How much warm-up does the default fit need? Tuning steps against total gradient cost (issue 27).

For each design and seed one simulated data set is fitted by the default call
``fit(build_crossed(data), rng=seed, tune=t, **setting)`` for every tuning
length ``t`` and nutpie adaptation setting asked for, one after the other in
this process (the build is compiled once per design and reused). Each row
records the load-independent cost, gradient evaluations (leapfrog steps):

warmup_grads   the tuning steps' leapfrog steps, all chains (see below);
draw_grads     the kept draws' leapfrog steps (``sample_stats.n_steps``);
map_grads      the mode search and its Hessian (``fit_run``'s map_evaluations);
total_grads    their sum: what a run that stops at its checkpoint costs;
first_pass_*   the first checkpoint at which the kept draws already met the
               targets (the rule may jump past it) and the total at that point;

and the draws per chain the target rule reached, min bulk and tail ESS and
max R-hat over every posterior element with the R-hat limit applied (the
fit's ``diag_*`` attrs), divergences, whether the package's checks passed,
the sampling wall time (mode search + nutpie, from ``fit_timings``), the
whole call's wall time, and the 1-minute load average before and after.

Warm-up leapfrog steps are not stored by the default fit (it drops the
warm-up), so they are read from nutpie's progress callback (passed through
``fit``): at a moment when a chain has finished ``k`` draws past its ``tune``
tuning steps, its cumulative ``total_num_steps`` minus the leapfrog steps of
its first ``k`` kept draws is its warm-up cost. Every such snapshot of a chain
must give the same number (``warmup_spread`` is their range: 0 when exact).
The callback fires every 100 ms (``fit``'s progress rate), so a fit whose
draws take less than that has no such snapshot: its warm-up cost is None
(``-1`` in the table; e.g. tau_bb and citations_bt).

Usage::

    python benchmarks/bench_tuning.py --sizes 12x500x10 --seeds 1 2 3 \\
        --tunes 100 150 200 300 --settings default switch40 --out benchmarks/results/tuning_crossed.jsonl
    python benchmarks/bench_tuning.py --report benchmarks/results/tuning_crossed.jsonl   # the table
    python benchmarks/bench_tuning.py --rows tau_bb rats_bb citations_bt --tunes 300 150 \\
        --out benchmarks/results/tuning_defaults.jsonl    # bench_defaults.py's real-data rows

Wall times are only comparable within one run (the machine is shared); the
gradient counts are not affected by load.

Measured 2026-12-02 (``results/tuning_crossed.jsonl``; 2 shared cores, load 7-18,
so the wall times mean little; a rerun of three rows gave the same counts):
every fit passed (0 divergences, R-hat within its limit, ESS >= 400). Mean total
gradient evaluations, 12x500x10 seeds 1-3: tune 100 40,037, tune 150 38,909,
tune 300 43,765 (per seed 150 against 300: +0.6%, -26%, -6%); 13x880x10 seeds
1-2: tune 150 45,418, tune 300 47,690 (+5.6%, -13%). The rule's jump past a
failing first checkpoint decides most of it: the kept draws met the targets
at 250-350 draws per chain whatever the tuning (100 to 300 steps), where
the rule kept 300-700; stopped there, tune 100 would cost 24,640-26,835 and
tune 300 35,153-40,575. nutpie's ``mass_matrix_switch_freq=40`` at tune 150
gained nothing over its default (41,027 against 38,909, 3 seeds).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import warnings
from typing import Any

from _harness import Bench
from _harness import parser

#: nutpie adaptation settings tried beside its defaults (passed through ``fit``)
SETTINGS: dict[str, dict[str, Any]] = {
    "default": {},
    # main-phase mass-matrix windows of 40 draws instead of 80: a short warm-up still switches
    "switch40": {"mass_matrix_switch_freq": 40},
    # nutpie's low-rank modified diagonal mass matrix (experimental in nutpie 0.16)
    "low_rank": {"adaptation": "low_rank"},
}


class StepLog:
    """Snapshots of each chain's progress from nutpie's callback: (finished draws, leapfrog steps)."""

    def __init__(self) -> None:
        self.snaps: dict[int, list[tuple[int, int, bool]]] = {}
        self.lock = threading.Lock()

    def __call__(self, chains: list[Any]) -> None:
        """Record every chain's draws and leapfrog steps so far."""
        with self.lock:
            for i, c in enumerate(chains):
                snap = (int(c.finished_draws), int(c.total_num_steps), bool(c.tuning))
                self.snaps.setdefault(i, []).append(snap)

    def warmup(self, tune: int, n_steps: Any) -> tuple[int | None, int | None, int]:
        """Warm-up leapfrog steps summed over chains, the spread of the estimates, the steps seen.

        ``n_steps`` holds the kept draws' leapfrog steps (chain x draw). None when a
        chain had no snapshot between the end of its warm-up and its last kept draw.
        """
        import numpy as np

        cum = np.concatenate([np.zeros((n_steps.shape[0], 1)), np.cumsum(n_steps, axis=1)], axis=1)
        total, spread, seen = 0, 0, 0
        for c in range(n_steps.shape[0]):
            snaps = self.snaps.get(c, [])
            seen += max((s[1] for s in snaps), default=0)
            est = {
                s[1] - int(cum[c, s[0] - tune])
                for s in snaps
                if tune <= s[0] <= tune + n_steps.shape[1]
            }
            if not est:
                return None, None, seen
            total += min(est)
            spread = max(spread, max(est) - min(est))
        return total, spread, seen


#: the default fit's first checkpoints (draws per chain at which its targets are checked)
CHECKPOINTS = (100, 150, 200, 250, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000)


def first_pass(dt: Any, model: Any, target: float = 400.0) -> int | None:
    """The first checkpoint whose draws (a head of the kept draws) meet the fit's targets.

    The fit jumps from a failing checkpoint to the one its draws predict, so it
    may keep more draws than needed; this checks every checkpoint up to the
    draws kept, with :func:`hierbench.bayes.compute_diagnostics` on the model's
    own variables: converged and every bulk and tail ESS >= ``target``.
    """
    import xarray as xr

    from hierbench.bayes import compute_diagnostics

    post, stats = dt["posterior"].to_dataset(), dt["sample_stats"].to_dataset()
    names = [v.name for v in [*model.free_RVs, *model.deterministics] if v.name in post]
    for n in (k for k in CHECKPOINTS if k <= post.sizes["draw"]):
        head = xr.DataTree.from_dict(
            {
                "posterior": post[names].isel(draw=slice(0, n)),
                "sample_stats": stats.isel(draw=slice(0, n)),
            }
        )
        a = compute_diagnostics(head, warn=False).attrs
        ok = a["diag_converged"] and min(a["diag_min_ess_bulk"], a["diag_min_ess_tail"]) >= target
        if ok:
            return n
    return None


def fit_row(model: Any, seed: int, tune: int, setting: str) -> dict[str, Any]:
    """One default fit with ``tune`` tuning steps and a named nutpie setting; its cost and checks."""
    import numpy as np

    from hierbench.bayes import fit

    log = StepLog()
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(model, rng=seed, tune=tune, progress=False, posterior_predictive=False,
                 progress_callback=log, **SETTINGS[setting])  # fmt: skip
    wall = time.perf_counter() - t0
    a = dt.attrs
    run, timings = json.loads(a["fit_run"]), json.loads(a["fit_timings"])
    n_steps = np.asarray(dt["sample_stats"]["n_steps"].values, dtype=np.int64)
    warm, spread, seen = log.warmup(tune, n_steps)
    draw_grads = int(n_steps.sum())
    map_grads = int(run.get("map_evaluations", 0))
    first = first_pass(dt, model)
    first_grads = None if first is None else int(n_steps[:, :first].sum())
    return {
        "tune": tune,
        "setting": setting,
        "draws_per_chain": int(run["draws"]),
        "reached": bool(run["reached"]),
        "checkpoints": int(run["checkpoints"]),
        "warmup_grads": warm,
        "warmup_spread": spread,
        "draw_grads": draw_grads,
        "map_grads": map_grads,
        "total_grads": None if warm is None else warm + draw_grads + map_grads,
        "grads_seen": seen,
        "first_pass_draws": first,
        "first_pass_total_grads": None
        if warm is None or first is None
        else warm + first_grads + map_grads,
        "min_ess_bulk": round(float(a["diag_min_ess_bulk"]), 1),
        "min_ess_tail": round(float(a["diag_min_ess_tail"]), 1),
        "max_r_hat": round(float(a["diag_max_r_hat"]), 4),
        "r_hat_limit": round(float(a.get("diag_r_hat_limit", np.nan)), 4),
        "divergences": int(a["diag_n_divergent"]),
        "passed": bool(a["diag_converged"]),
        "init": run.get("init"),
        "compile": run.get("compile"),
        "sampling_s": round(float(timings["sampling_s"]), 2),
        "wall_s": round(wall, 2),
        "load1_before": round(load0, 2),
        "load1_after": round(os.getloadavg()[0], 2),
    }


def crossed_models(size: str, seeds: list[int]):
    """(label, seed, model) for ``simulate_eval`` data of one design, one per seed."""
    from hierbench.bayes import build_crossed
    from hierbench.testing import simulate_eval

    M, T, R = (int(v) for v in size.split("x"))
    for seed in seeds:
        data, _ = simulate_eval(n_agents=M, n_tasks=T, n_runs=R, rng=seed)
        yield size, seed, build_crossed(data)


def real_models(rows: list[str]):
    """(row, 0, model) for bench_defaults.py's real-data rows (its data and builders, seed 0)."""
    from bench_defaults import ROWS

    import hierbench.bayes as hbb

    for name in rows:
        _, loader, model_name, kw = ROWS[name]
        yield name, 0, getattr(hbb, f"build_{model_name}")(loader(), **kw)


HEADER = (
    f"{'data':<14} {'seed':>4} {'tune':>4} {'setting':<9} {'draws':>5} {'warm gr':>8} "
    f"{'draw gr':>8} {'total gr':>8} {'1st':>4} {'1st gr':>8} {'ESS b':>7} {'ESS t':>7} {'R-hat/limit':>13} {'div':>4} "
    f"{'ok':>3} {'samp s':>7} {'wall s':>7} {'load1':>11}"
)


def show(row: dict[str, Any]) -> None:
    """Print one fit's row under :data:`HEADER`."""
    print(
        f"{row['data']:<14} {row['seed']:>4} {row['tune']:>4} {row['setting']:<9} "
        f"{row['draws_per_chain']:>5} {row['warmup_grads'] or -1:>8} {row['draw_grads']:>8} "
        f"{row['total_grads'] or -1:>8} {row.get('first_pass_draws') or -1:>4} "
        f"{row.get('first_pass_total_grads') or -1:>8} {row['min_ess_bulk']:>7.0f} {row['min_ess_tail']:>7.0f} "
        f"{row['max_r_hat']:>6.3f}/{row['r_hat_limit']:<6.3f} {row['divergences']:>4} "
        f"{'yes' if row['passed'] else 'NO':>3} {row['sampling_s']:>7.1f} {row['wall_s']:>7.1f} "
        f"{row['load1_before']:>5.1f}/{row['load1_after']:<5.1f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--sizes", nargs="*", default=[], help="crossed designs MxTxR")
    p.add_argument("--seeds", nargs="*", type=int, default=[1, 2, 3])
    p.add_argument(
        "--rows", nargs="*", default=[], help="bench_defaults.py rows (real data, seed 0)"
    )
    p.add_argument("--tunes", nargs="*", type=int, default=[100, 150, 200, 300])
    p.add_argument("--settings", nargs="*", default=["default"], choices=list(SETTINGS))
    p.add_argument(
        "--extra", nargs="*", default=[], help="extra runs as TUNE:SETTING (e.g. 150:switch40)"
    )
    p.add_argument("--out", help="append one JSON line per fit to this file")
    p.add_argument("--report", nargs="*", default=[], help="print the rows of these files; no fit")
    args = p.parse_args(argv)
    runs = [(t, s) for s in args.settings for t in args.tunes]
    runs += [(int(t), s) for t, s in (x.split(":") for x in args.extra)]
    print(HEADER, flush=True)
    if args.report:
        for path in args.report:
            with open(path) as fh:
                for line in fh:
                    show(json.loads(line))
        return 0
    with Bench("tuning", argv) as bench:
        rows = []
        models = [
            *(m for s in args.sizes for m in crossed_models(s, args.seeds)),
            *real_models(args.rows),
        ]
        for i, (label, seed, model) in enumerate(models):
            k = i % len(runs)  # rotate the order, so no configuration always runs first
            for tune, setting in runs[k:] + runs[:k]:
                row = {"data": label, "seed": seed, **fit_row(model, seed, tune, setting)}
                show(row)
                rows.append(row)
                if args.out:
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps({**row, "machine_cores": bench.start["cores"]}) + "\n")
        bench.record("fits", len(rows), show=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
