"""The first default crossed fit of a process, against empty and warm caches (issue 27).

A fit's one-time costs are compiles that numba and PyTensor keep on disk: the
first fit after installing pays them, a later session loads them. For each
source tree (``--src LABEL=PATH``, default this checkout) and one simulated
design (``simulate_eval(..., rng=seed)``), fresh processes run

cold  with numba's and PyTensor's caches empty (a temporary ``NUMBA_CACHE_DIR``
      and PyTensor ``base_compiledir``): the first fit after installing, then a
      second fit in the same process;
warm  a new process on the caches the cold one filled: a later session's
      first fit (then its second);
demo  (``--after-demo``) empty caches, then ``hierbench demo`` in a process of its
      own, as the README's install command runs it, then a new process's fits:
      the first fit after following the README.

Each fit is ``fit(build_crossed(data), rng=seed)``, the default call; each line
gives its wall time and the stage times the fit records (``fit_timings``:
compile, the start's search for the mode, sampling, the predictive groups,
post-processing, diagnostics), and for each fit the time per
a leapfrog step (sampling time x threads / steps taken; it includes the
sampler's own work). ``first_extra_s`` is the first fit's wall less the
second's, in the same process; the second fit reuses the process's build of
the model (``hierbench.bayes.fit`` keeps it), so the extra includes the
nutpie compile. The trees run interleaved (cold A, cold B,
warm A, warm B) so the load hits them alike; on a shared machine only ratios
from one run compare. Usage::

    python benchmarks/bench_first_fit.py --src before=/path/to/old/tree after=.
    python benchmarks/bench_first_fit.py --size 3x20x5 --fits 2   # a quick check

Measured 2026-12-02 on the shared 2-core machine at load average 7-9 (inflated, and
the "before" cold process shared the cores with a test run, so only indicative), the
tree before issue 27's kernel change against after it, cold caches: the first fit's
post-processing 25.3 s against 11.4 s (second fit 1.5 s and 3.1 s), the first fit's
extra over the second 166 s against 58 s. Rerun on a quiet machine for the table.

Measured 2026-12-02 at 12 x 500 x 10, seed 1, the tree before the cached nutpie build
(``bayes/_sampler/_nutpie_build.py``) against after it, at load average 13-19 (other sessions
running, so every figure is inflated; compare within the run only): the first fit's
``compile_s`` on warm caches 33.7 s before, 6.4 s after (wall 141.2 s and 106.8 s; the
first fit's extra over the second 13.0 s and 8.8 s); on cold caches 133.5 s and 124.3 s
(the wrappers are compiled once either way, then stored). The second fit of a process
reuses its build (0.01-0.03 s) in both trees.

Measured 2026-12-03 on a quiet 2-core machine (AMD EPYC, load 0.7-3.3: the fits of one
process run back to back, so the second fit shares no cores with another job), 12 x 500 x 10,
seed 1, ``--after-demo`` (``results/first_fit_stop43.jsonl``):

=====  =====  ======  =========  ==========  =====================================
cache  fit    wall s  compile s  sampling s  first fit's extra over the second, s
=====  =====  ======  =========  ==========  =====================================
cold   1      98.8    46.4       44.3        55.9
cold   2      42.9    0.01       40.6
warm   1      41.9    3.6        36.0        2.7
warm   2      39.2    0.01       37.0
demo   1      73.7    29.7       41.7        34.0
demo   2      39.8    0.01       37.5
=====  =====  ======  =========  ==========  =====================================

The demo (103.6 s on empty caches) fits the crossed model to a log with task clusters; a
log without them builds another model, whose kernels the demo did not compile, so the first
fit after following the README still pays 30 s of compiling (against 46 s on empty caches
and 3.6 s on warm ones). Each variant a builder may choose (clusters, the agent x task term
left out for one run per cell, centred or not) is a graph of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

_WORKER = r"""
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import numpy as np
from hierbench.bayes import build_crossed, fit
from hierbench.testing import simulate_eval
import hierbench
# the tree by its folder's name: no machine's absolute path in the results
here = os.path.dirname(hierbench.__file__)
out = {"import_s": round(time.perf_counter() - t0, 2), "hierbench": os.path.basename(os.path.dirname(here)) + "/hierbench"}
size, seed, n_fits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
M, T, R = (int(v) for v in size.split("x"))
data, _ = simulate_eval(n_agents=M, n_tasks=T, n_runs=R, rng=seed)
fits = []
for i in range(n_fits):
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    idata = fit(build_crossed(data), rng=seed)
    row = {k: round(v, 2) for k, v in json.loads(idata.attrs["fit_timings"]).items()}
    row.update(wall_s=round(time.perf_counter() - t0, 2), draws=int(idata["posterior"].sizes["draw"]),
               load=round(load, 2))
    # the cost of one leapfrog step (a log density and gradient): the sampling time spread over
    # the steps the chains took, the chains running on min(chains, cores) threads
    steps = float(idata["sample_stats"]["n_steps"].sum())
    threads = min(idata["posterior"].sizes["chain"], os.cpu_count() or 1)
    row["ms_per_gradient"] = round(1e3 * row["sampling_s"] * threads / steps, 3)
    fits.append(row)
out["fits"] = fits
print(json.dumps(out))
"""


def _env(src: str, caches: str) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": os.path.abspath(src),
        "NUMBA_CACHE_DIR": os.path.join(caches, "numba"),
        "PYTENSOR_FLAGS": f"base_compiledir={os.path.join(caches, 'pytensor')}",
    }


def run_demo(src: str, caches: str) -> float:
    """``hierbench demo`` (the README's install command's job) on ``src`` with the caches under ``caches``; its wall."""
    with tempfile.TemporaryDirectory() as cwd:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "hierbench", "demo", "--out", os.path.join(cwd, "report")],
                       env=_env(src, caches), cwd=cwd, check=True, capture_output=True)  # fmt: skip
    return round(time.perf_counter() - t0, 1)


def run_process(src: str, size: str, seed: int, n_fits: int, caches: str) -> dict:
    """One fresh process on ``src``'s hierbench with the caches under ``caches``."""
    env = _env(src, caches)
    with tempfile.TemporaryDirectory() as cwd:  # so that the cwd shadows no tree
        proc = subprocess.run([sys.executable, "-c", _WORKER, size, str(seed), str(n_fits)], env=env,
                              cwd=cwd, capture_output=True, text=True)  # fmt: skip
    if proc.returncode:
        return {"error": proc.stderr[-3000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    """One line per fit: wall and stage times; the first fit's extra over the second."""
    cols = ["wall_s", "compile_s", "start_s", "sampling_s", "groups_s", "postprocess_s", "diagnostics_s"]
    head = f"{'src':<10} {'cache':<5} {'fit':>3} " + " ".join(f"{c[:-2]:>11}" for c in cols)
    lines = [head + f" {'draws':>5} {'ms/grad':>8} {'load':>5}"]
    for r in rows:
        if "demo_s" in r:
            lines.append(f"{r['src']:<10} {r['cache']:<5} the demo before these fits, on empty caches: {r['demo_s']:.1f} s")
        for i, f in enumerate(r.get("fits", [])):
            vals = " ".join(f"{f.get(c, float('nan')):>11.2f}" for c in cols)
            lines.append(f"{r['src']:<10} {r['cache']:<5} {i + 1:>3} {vals} {f['draws']:>5} "
                         f"{f['ms_per_gradient']:>8.3f} {f['load']:>5.1f}")  # fmt: skip
        if len(r.get("fits", [])) > 1:
            lines.append(f"{'':<10} {'':<5} first fit's extra over the second: {r['first_extra_s']:.2f} s")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", nargs="*", default=[f"this={os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}"])
    ap.add_argument("--size", default="12x500x10")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fits", type=int, default=2, help="fits per process")
    ap.add_argument("--out", default=None)
    ap.add_argument("--after-demo", action="store_true", help="also: empty caches, the demo, then the fits")
    args = ap.parse_args()
    srcs = [s.split("=", 1) for s in args.src]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for cache in ("cold", "warm") + (("demo",) if args.after_demo else ()):
            for label, path in srcs:
                caches = os.path.join(tmp, label if cache != "demo" else label + "_demo")
                pre = {"demo_s": run_demo(path, caches)} if cache == "demo" else {}
                row = {"src": label, "cache": cache, "size": args.size, **pre,
                       **run_process(path, args.size, args.seed, args.fits, caches)}  # fmt: skip
                fits = row.get("fits", [])
                if len(fits) > 1:
                    row["first_extra_s"] = round(fits[0]["wall_s"] - fits[1]["wall_s"], 2)
                print(json.dumps(row), flush=True)
                rows.append(row)
                if args.out:
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
    print(table(rows))


if __name__ == "__main__":
    main()
