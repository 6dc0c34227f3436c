"""The crossed model at leaderboard scale: the ML fit, its accuracy, and where the Bayesian fit spends time.

Sections (pick with ``--sections``; each prints JSON lines with the load average):

ml-time      ``fit_crossed_ml(data)`` at 12x500x10, 25x1000x8, 50x2000x8 (the
             default call: profile intervals; and with ``intervals="wald"``),
             cold (first call in the process, numba compile or cache load
             included) and warm.
nagq         accuracy of the task-level quadrature: the summed log-likelihood
             at the estimate and the estimates for n_agq = 1 (Laplace), 5, 9,
             15 against 41 nodes, on one 12x500x10 data set.
bias         consistency: mean error of the ML estimates of sd_task,
             sd_agent_task and the abilities over replicated simulations at
             T = 50, 200, 800 tasks (5 agents x 4 runs), with Monte Carlo
             standard errors, and Wald coverage of the abilities.
bayes-fit    the default Bayesian fit as a user calls it (``fit(build_crossed(data))``):
             wall by stage, max R-hat, min ESS, steps per draw; and the ML fit
             of the same data as the approximate path (abilities' shift in
             posterior sds, Wald SE over posterior sd).
bayes-cost   where the Bayesian default fit spends its time before sampling:
             build, nutpie compile, and the cost of one logp + gradient
             evaluation per cell (numba backend), at the three sizes.

Measured 2026-11-30 (load average 18-28 on 2 cores; ``cpu_s`` is the
process's CPU time over both numba threads, which does not grow with load):

* ml-time, default call (profile intervals): 12x500x10 wall 36 s before the
  Newton start (L-BFGS, 101 passes), 25x1000x8 wall 123 s (118 passes);
  after: 50x2000x8 wall 125 s, cpu 17.6 s, 53 passes; Wald only: 25x1000x8
  cpu 1.8 s, 50x2000x8 wall 43 s, cpu 7.0 s, 21 passes. Rerun at load 4.8:
  50x2000x8 default 27.6 s wall (first call in the process), cpu 17.9 s;
  Wald 10.6 s.
* nagq (12x500x10, vs 41 nodes): log-likelihood error 1 node -0.70, 5 nodes
  -7.8e-3, 9 nodes -7.5e-5, 15 nodes -4e-7; (5x300x1) 5 nodes -3.5e-2, 9 -6.5e-5;
  ability changes at 9 nodes below 1e-4 SE.
* bias (5 agents x 4 runs, 30 reps; mean error +- MC SE): sd_agent_task
  -0.085 +- 0.038 (T=50), -0.023 +- 0.014 (T=200), +0.004 +- 0.009 (T=800);
  sd_task -0.020 +- 0.040, -0.006 +- 0.017, -0.005 +- 0.010; RMSE of the
  abilities 0.27, 0.15, 0.071; Wald coverage of the abilities 0.96, 0.92, 0.98.
* bayes-cost: nutpie compile 73 / 71 / 86 s; one logp + gradient 10.9 / 42 /
  196 ms, i.e. 1.82 / 1.69 / 1.96 us per cell (12x500x10 / 25x1000x8 /
  50x2000x8): the gradient cost is linear in the cells.

Measured 2026-12-01 (quiet except a niced background study; stop 11 code):

* bayes-fit 25x1000x8, default fit (4 x 1000 after 1000 tuning): wall 450 s
  (compile 8.6, sampling 383, predictive 17.9, derived 30.4 before the fused
  task-average kernel, diagnostics 9.7), min ESS_bulk 4614, max R-hat 1.009,
  15 steps per draw, 0 divergences. ``--draws 500 --tune 500``: 249 s, ESS
  2535, R-hat 1.020 (fails the check). The ML fit of the same data: abilities
  within 0.026 posterior sds of the posterior means, Wald SE / posterior sd
  0.988-1.030, sds 1.4925 / 0.7026 vs posterior means 1.4957 / 0.7039.
* ml-time 50x2000x8: default (profile) 10.7 s wall, 18.1 s cpu, 53 passes;
  Wald 4.1 s wall.
* bayes-fit 25x1000x8 again after the likelihood kernel was vectorised
  (f566c0d, nothing else running): wall 281 s (compile 10.1, sampling 219,
  predictive 17.4, derived 24.1, diagnostics 9.5), min ESS_bulk 5134,
  R-hat 1.009, 0 divergences, 15 steps per draw.
  With the staged task-average kernel and the chunked predictive,
  ``bench_crossed.py`` measured 265 s on the same data.

Usage::

    python benchmarks/bench_scale.py [--sections ml-time nagq bias bayes-cost] [--reps 40]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import warnings

import numpy as np

SIZES = [(12, 500, 10), (25, 1000, 8), (50, 2000, 8)]


def _emit(**row) -> None:
    row["load"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(row), flush=True)


def ml_time(seed: int, sizes: list[tuple[int, int, int]]) -> None:
    from hierbench.freq import fit_crossed_ml
    from hierbench.testing import simulate_eval

    first = True
    for M, T, R in sizes:
        data, truth = simulate_eval(n_agents=M, n_tasks=T, n_runs=R, rng=seed)
        for intervals in ("profile", "wald"):
            t0, c0 = time.perf_counter(), time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = fit_crossed_ml(data, intervals=intervals)
            wall = time.perf_counter() - t0
            cpu = time.process_time() - c0  # CPU seconds of all threads: load-independent
            _emit(
                section="ml-time", size=f"{M}x{T}x{R}", intervals=intervals, wall_s=round(wall, 2),
                cpu_s=round(cpu, 2), threads=int(os.environ.get("NUMBA_NUM_THREADS", os.cpu_count() or 1)),
                first_call_in_process=first, n_evaluations=res.n_evaluations, converged=bool(res.converged),
                sd=[round(float(v), 4) for v in res.sd.values],
                sd_ci=np.round(res.sd_ci.values, 4).tolist(),
                truth_sd=[float(truth["sd_task"]), float(truth["sd_agent_task"])],
            )
            first = False


def nagq(seed: int) -> None:
    from hierbench.freq import fit_crossed_ml
    from hierbench.testing import simulate_eval

    for M, T, R in ((12, 500, 10), (5, 300, 1)):
        data, _ = simulate_eval(n_agents=M, n_tasks=T, n_runs=R, rng=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = fit_crossed_ml(data, n_agq=41, intervals="wald")
            for q in (1, 3, 5, 9, 15):
                t0 = time.perf_counter()
                r = fit_crossed_ml(data, n_agq=q, intervals="wald")
                _emit(
                    section="nagq", size=f"{M}x{T}x{R}", n_agq=q, wall_s=round(time.perf_counter() - t0, 2),
                    loglik_minus_41=float(r.loglik - ref.loglik),
                    max_abs_ability_diff=float(np.abs(r.estimate - ref.estimate).max()),
                    max_ability_diff_in_se=float((np.abs(r.estimate - ref.estimate) / ref.standard_error).max()),
                    sd_diff=[float(v) for v in (r.sd.values - ref.sd.values)],
                )


def bias(seed: int, reps: int) -> None:
    from hierbench.freq import fit_crossed_ml
    from hierbench.testing import simulate_eval

    gen = np.random.default_rng(seed)
    for T in (50, 200, 800):
        errs, cover, ok = [], [], 0
        t0 = time.perf_counter()
        for _ in range(reps):
            data, truth = simulate_eval(n_agents=5, n_tasks=T, n_runs=4, sd_task=1.5, sd_agent_task=0.7, rng=gen)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = fit_crossed_ml(data, intervals="wald")
            ok += bool(r.converged)
            alpha = truth["agent_effect"].values + float(truth["mu"])
            errs.append(np.r_[r.sd.values - [1.5, 0.7], r.estimate.values - alpha])
            lo, hi = r.ci.values[:, 0], r.ci.values[:, 1]
            cover.append((lo <= alpha) & (alpha <= hi))
        e = np.asarray(errs)
        cov = np.asarray(cover).mean()
        _emit(
            section="bias", n_tasks=T, reps=reps, converged=ok,
            bias_sd_task=round(float(e[:, 0].mean()), 4), mcse_sd_task=round(float(e[:, 0].std(ddof=1) / math.sqrt(reps)), 4),
            bias_sd_agent_task=round(float(e[:, 1].mean()), 4),
            mcse_sd_agent_task=round(float(e[:, 1].std(ddof=1) / math.sqrt(reps)), 4),
            bias_ability_mean=round(float(e[:, 2:].mean()), 4),
            mcse_ability_mean=round(float(e[:, 2:].mean(1).std(ddof=1) / math.sqrt(reps)), 4),
            rmse_sd_task=round(float(np.sqrt((e[:, 0] ** 2).mean())), 4),
            rmse_ability=round(float(np.sqrt((e[:, 2:] ** 2).mean())), 4),
            wald_coverage_ability_95=round(float(cov), 4),
            wall_s=round(time.perf_counter() - t0, 1),
        )


def bayes_cost(seed: int, sizes: list[tuple[int, int, int]]) -> None:
    import pytensor

    from hierbench.bayes import build_crossed
    from hierbench.testing import simulate_eval

    for M, T, R in sizes:
        data, _ = simulate_eval(n_agents=M, n_tasks=T, n_runs=R, rng=seed)
        t0 = time.perf_counter()
        model = build_crossed(data)
        build = time.perf_counter() - t0
        import nutpie

        t0 = time.perf_counter()
        nutpie.compile_pymc_model(model, backend="numba")
        compile_s = time.perf_counter() - t0
        f = model.logp_dlogp_function(ravel_inputs=True, mode=pytensor.compile.mode.get_mode("NUMBA"))
        f.set_extra_values({})
        x0 = np.concatenate([np.ravel(v) for v in model.initial_point().values()])
        f(x0)
        n = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 3.0:
            f(x0 + 0.01 * n)
            n += 1
        per = (time.perf_counter() - t0) / n
        _emit(
            section="bayes-cost", size=f"{M}x{T}x{R}", build_s=round(build, 2), nutpie_compile_s=round(compile_s, 2),
            s_per_logp_grad=round(per, 6), us_per_logp_grad_per_cell=round(1e6 * per / (M * T), 4),
        )


def bayes_fit(seed: int, sizes: list[tuple[int, int, int]], draws: int | None, tune: int | None) -> None:
    """The default Bayesian fit as a user calls it, timed by stage, with its diagnostics.

    Also the maximum-likelihood fit of the same data as the approximate path:
    its estimates and Wald standard errors against the posterior means and sds
    (the Laplace-at-the-mode reading of item 1 of issue 16).
    """
    import hierbench.bayes as hbb
    from hierbench.freq import fit_crossed_ml
    from hierbench.testing import simulate_eval

    for M, T, R in sizes:
        data, truth = simulate_eval(n_agents=M, n_tasks=T, n_runs=R, rng=seed)
        t0 = time.perf_counter()
        model = hbb.build_crossed(data)
        build = time.perf_counter() - t0
        t0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = hbb.fit(model, rng=seed, draws=draws, tune=tune)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        # the fit's own stage times (start, compile, sampling, groups, postprocess, diagnostics)
        stages = {k.removesuffix("_s"): v for k, v in json.loads(fit.attrs["fit_timings"]).items()
                  if k not in ("compile_s", "sampling_s")}  # fmt: skip
        ss = fit["sample_stats"]
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ml = fit_crossed_ml(data, intervals="wald")
        ml_wall = time.perf_counter() - t0
        post = fit["posterior"]
        ab = post["ability"]
        pm_, psd = ab.mean(("chain", "draw")).values, ab.std(("chain", "draw")).values
        shift = np.abs(ml.estimate.values - pm_) / psd
        se_ratio = ml.standard_error.values / psd
        sd_post = {k: float(post[k].mean()) for k in ("sd_task", "sd_agent_task") if k in post}
        _emit(
            section="bayes-fit", size=f"{M}x{T}x{R}", draws=int(post.sizes["draw"]),
            tune=json.loads(fit.attrs["sampler_settings"])["tune"], chains=4,
            wall_s=round(wall, 1), cpu_s=round(cpu, 1), build_s=round(build, 2),
            compile_s=round(float(fit.attrs["compile_time"]), 1),
            sampling_s=round(float(fit.attrs["sampling_time"]), 1), **{f"{k}_s": v for k, v in stages.items()},
            max_r_hat=round(float(fit.attrs["diag_max_r_hat"]), 4),
            min_ess_bulk=round(float(fit.attrs["diag_min_ess_bulk"])),
            min_ess_tail=round(float(fit.attrs["diag_min_ess_tail"])),
            divergences=int(fit.attrs["diag_n_divergent"]), converged=bool(fit.attrs["diag_converged"]),
            mean_steps=round(float(ss["n_steps"].mean()), 1),
            ml_wall_s=round(ml_wall, 1),
            ml_ability_max_shift_in_post_sd=round(float(shift.max()), 3),
            ml_ability_se_over_post_sd=[round(float(se_ratio.min()), 3), round(float(se_ratio.max()), 3)],
            ml_sd=[round(float(v), 4) for v in ml.sd.values], post_mean_sd=sd_post,
            truth_sd=[float(truth["sd_task"]), float(truth["sd_agent_task"])],
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sections", nargs="*", default=["ml-time", "nagq", "bias", "bayes-cost", "bayes-fit"])
    ap.add_argument("--draws", type=int, default=None, help="bayes-fit: draws per chain (default: the fit's target-ESS rule)")
    ap.add_argument("--tune", type=int, default=None, help="bayes-fit: tuning steps per chain (default: the fit's)")
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sizes", nargs="*", default=[f"{M}x{T}x{R}" for M, T, R in SIZES])
    args = ap.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes]
    if "ml-time" in args.sections:
        ml_time(args.seed, sizes)
    if "nagq" in args.sections:
        nagq(args.seed)
    if "bias" in args.sections:
        bias(args.seed, args.reps)
    if "bayes-cost" in args.sections:
        bayes_cost(args.seed, sizes)
    if "bayes-fit" in args.sections:
        bayes_fit(args.seed, sizes, args.draws, args.tune)


if __name__ == "__main__":
    main()
