"""Exact-posterior check of the Bradley-Terry SBC (small design), without MCMC.

``sbc.py`` fits each replicate with NUTS. This script takes the same prior and
prior-predictive draws (``pm.sample_prior_predictive`` on the template model of
``sbc.py``, same seed) and computes each replicate's posterior by importance
sampling, written from the model's maths in NumPy: non-centred coordinates
``(log sd_ability, z (sum-zero, orthonormal basis), log nu)``, a two-component
Student-t mixture proposal around the Laplace approximation. It then reports
the 50% / 90% equal-tailed coverage (Wilson 95% bands) for every parameter,
all agents' abilities included, and stores per replicate the truth, the exact
posterior CDF of the truth and the interval verdicts of the parameters
``sbc.py`` checks.

If these coverages match the NUTS study, the sampler is not the cause; if they
are nominal while NUTS is not, it is. With ``--compare sbc.jsonl`` it also
lines up that NUTS study with the exact posterior, replicate by replicate
(rank vs CDF, 50% / 90% coverage of each on the same replicates, the replicates
whose 90% verdicts differ); ``--pool`` pools result files of this script.

Findings (issue 27, 2026-12-02; the card's SBC section has the table): on the
ten stored NUTS studies (seeds 2026, 2027, 3031-3034, 4041-4043, 5001; 2,000
replicates) the exact posterior gives sd_ability 90% coverage 0.887 against
NUTS's 0.884; the 90% verdicts agree in 1,968 of 2,000 replicates, the others
within 0.015 of an interval's end, either way; the misses of seeds 4041 (0.840
both) and 4042 (exact 0.865, NUTS 0.845) are in those seeds' prior draws, not
the sampler. The model's log density equals this NumPy maths up to a constant
and ``sbc.py``'s forward draws follow the same maths (``--check-model``): no
mismatch between the simulation and the fitted model. On 6,500 further
replicates (seeds 5001-5013) the exact coverage is 0.891 [0.883, 0.899]; all
8,300: 0.891 [0.884, 0.897] (p about 0.004), the excess mostly truths below
the 5% point; ``nu`` and ``ability[0]`` 0.898 and 0.900. Open: the importance
proposal (built at the mode) and NUTS (non-centred) may share a blind spot at
small sd_ability, where z spreads out to its prior; see the card.

Usage::

    python benchmarks/bt_sbc_exact.py --reps 200 --seed 2026 --out exact.jsonl [--compare sbc_small.jsonl]
    python benchmarks/bt_sbc_exact.py --pool exact_seed1.jsonl exact_seed2.jsonl ...
    python benchmarks/bt_sbc_exact.py --check-model --seed 777
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import numpy as np


def _basis(m: int) -> np.ndarray:
    q, _ = np.linalg.qr(np.eye(m) - 1.0 / m)
    return q[:, : m - 1]


def _logpost(th, ia, ib, wa, tt, wb, V):
    m = V.shape[0]
    lsd, z, lnu = th[:, 0], th[:, 1:m], th[:, m]
    sd = np.exp(lsd)
    ab = (sd[:, None] * z) @ V.T
    # HalfNormal(1) on sd with the log-Jacobian, ZeroSumNormal(1) z, Normal(0, 1) log nu
    lp = -0.5 * sd**2 + lsd - 0.5 * (z**2).sum(1) - 0.5 * lnu**2
    d = ab[:, ia] - ab[:, ib]
    lz = np.logaddexp(np.logaddexp(d / 2, lnu[:, None]), -d / 2)
    return lp + (wa * (d / 2 - lz) + tt * (lnu[:, None] - lz) + wb * (-d / 2 - lz)).sum(1)


def exact_posterior(ia, ib, wa, tt, wb, m, rng, n=60000):
    """Importance draws (theta, abilities, normalised weights, ESS) for one replicate."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp
    from scipy.stats import multivariate_t

    V = _basis(m)

    def f(x):
        return -_logpost(x[None], ia, ib, wa, tt, wb, V)[0]

    best = min(
        (minimize(f, np.r_[s, np.zeros(m - 1), 0.0], method="BFGS") for s in (-1.0, 0.0, 0.7)),
        key=lambda r: r.fun,
    )
    mu, k, h = best.x, best.x.size, 1e-3
    E = np.eye(k) * h
    H = np.array(
        [
            [(f(mu + E[i] + E[j]) - f(mu + E[i] - E[j]) - f(mu - E[i] + E[j]) + f(mu - E[i] - E[j])) / (4 * h * h) for j in range(k)]
            for i in range(k)
        ]
    )
    ev, vec = np.linalg.eigh((H + H.T) / 2)
    cov = (vec / np.maximum(ev, 1e-2)) @ vec.T
    cov = (cov + cov.T) / 2
    props = [multivariate_t(loc=mu, shape=2.0 * cov, df=4), multivariate_t(loc=mu, shape=6.0 * cov, df=3)]
    th = np.concatenate([p.rvs(n, random_state=rng) for p in props])
    lq = logsumexp(np.stack([p.logpdf(th) for p in props]), axis=0) - np.log(2)
    lw = _logpost(th, ia, ib, wa, tt, wb, V) - lq
    w = np.exp(lw - logsumexp(lw))
    ab = (np.exp(th[:, 0])[:, None] * th[:, 1:m]) @ V.T
    return th, ab, w, float(1.0 / (w**2).sum())


def _wq(x, w, qs):
    o = np.argsort(x)
    return np.interp(qs, np.cumsum(w[o]), x[o])


def compare(recs: list[dict], path: str) -> dict:
    """Line up an sbc.py study of the same seed with the exact posterior, replicate by replicate.

    Per parameter: the correlation of the NUTS rank / 99 with the exact posterior CDF of the truth,
    the 50% / 90% coverage of each on the common replicates, and the replicates whose 90%
    verdicts differ (NUTS's rank and the exact CDF there: near an interval's end, a Monte Carlo
    coin toss; far from it, a sampler that misses the posterior).
    """
    sb = {
        r["rep"]: r
        for r in map(json.loads, open(path))
        if r["model"] == "bradley_terry" and r["design"] == "small"
    }
    common = [r for r in recs if r["rep"] in sb]
    out = {}
    for k in sb[common[0]["rep"]]["ranks"]:
        x = np.array([sb[r["rep"]]["ranks"][k] / 99 for r in common])
        y = np.array([r["cdf"][k] for r in common])
        row = {"reps": len(common), "corr": float(np.corrcoef(x, y)[0, 1])}
        for lev in ("in50", "in90"):
            row[f"nuts_{lev}"] = float(np.mean([sb[r["rep"]][lev][k] for r in common]))
            row[f"exact_{lev}"] = float(np.mean([r[lev][k] for r in common]))
            row[f"agree_{lev}"] = float(np.mean([sb[r["rep"]][lev][k] == r[lev][k] for r in common]))
        row["differ90"] = [(r["rep"], sb[r["rep"]]["ranks"][k], round(r["cdf"][k], 3))
                           for r in common if sb[r["rep"]]["in90"][k] != r["in90"][k]]  # fmt: skip
        out[k] = row
        print(f"NUTS vs exact {k:<12} {json.dumps(row)}")
    return out


def pool(paths: list[str], params=("sd_ability", "nu", "ability[0]")) -> list[dict]:
    """Pool exact-posterior result files (independent seeds): coverage with Wilson bands, CDF uniformity.

    The exact posterior CDF of the truth is uniform on (0, 1) if the simulation and the model agree:
    the chi-square p of its 10-bin histogram, and the replicates below 5% / above 95% (10% expected).
    """
    from scipy.stats import chisquare

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from sbc import wilson

    recs = [json.loads(line) for p in paths for line in open(p)]
    out = []
    for k in params:
        u = np.array([r["cdf"][k] for r in recs])
        n, c50, c90 = u.size, sum(r["in50"][k] for r in recs), sum(r["in90"][k] for r in recs)
        row = {"param": k, "reps": n, "cov50": c50 / n, "band50": wilson(c50, n), "cov90": c90 / n,
               "band90": wilson(c90, n), "below5": int((u < 0.05).sum()), "above95": int((u > 0.95).sum()),
               "chi2_p": float(chisquare(np.bincount(np.minimum((u * 10).astype(int), 9), minlength=10)).pvalue)}  # fmt: skip
        out.append(row)
        print(json.dumps(row))
    return out


def check_model(seed: int, n: int = 20000) -> dict:
    """Check that sbc.py's simulation follows the maths this script fits, and so does the model's density.

    On the template's prior (``n`` forward draws): KS p of sd_ability against HalfNormal(1) and of
    log nu against N(0, 1), the largest |sum| of the zero-sum z and the largest gap of their covariance
    to I - 1/m, the standardised residuals of the counts against their Davidson probabilities (mean 0,
    variance 1). On one replicate's model (``sbc.py``'s ``_replicate_model``): the spread of PyMC's
    log density minus :func:`_logpost` at five random points (0 when they differ by a constant).
    """
    import pymc as pm
    from scipy import stats

    import hierbench.bayes as hbb

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from sbc import _replicate_model
    from sbc import template

    tm = hbb.build_bradley_terry(template("bradley_terry", "small"))
    pr = pm.sample_prior_predictive(draws=n, model=tm, random_seed=seed)
    pri, y = pr["prior"].isel(chain=0), pr["prior_predictive"]["outcome_counts"].isel(chain=0).values
    sd, lnu, z = (pri[k].values for k in ("sd_ability", "log_nu", "ability_z"))
    ia, ib = tm["agent_a_idx"].get_value(), tm["agent_b_idx"].get_value()
    m, cnt = z.shape[1], tm["n_comparisons"].get_value()
    d = sd[:, None] * (z[:, ia] - z[:, ib])
    P = np.exp(np.stack([d / 2, np.broadcast_to(lnu[:, None], d.shape), -d / 2], -1))
    P /= P.sum(-1, keepdims=True)
    res = (y - cnt[None, :, None] * P) / np.sqrt(cnt[None, :, None] * P * (1 - P))
    model, _ = _replicate_model("bradley_terry", "small", y[0])
    logp = model.compile_logp(jacobian=True)
    # z = ability / sd_ability in either centring the builder chose for this replicate
    z_of = model.replace_rvs_by_values([model["ability"] / model["sd_ability"]])
    zf = model.compile_fn(z_of, inputs=model.value_vars, on_unused_input="ignore")
    V, gen, gaps = _basis(m), np.random.default_rng(seed), []
    for _ in range(5):
        pt = {k: gen.normal(size=np.shape(v)) * 0.7 for k, v in model.initial_point().items()}
        th = np.r_[pt["sd_ability_log__"], V.T @ np.ravel(zf(pt)), pt["log_nu"]]
        # centred, the density is over the abilities: (m - 1) log sd_ability less than over z
        jac = (m - 1) * th[0] * model.hierbench["options"]["centred"]
        gaps.append(float(logp(pt)) - _logpost(th[None], ia, ib, *y[0].T, V)[0] + jac)
    out = {"ks_p_sd": stats.kstest(sd, stats.halfnorm.cdf).pvalue, "ks_p_log_nu": stats.kstest(lnu, "norm").pvalue,
           "max_abs_sum_z": np.abs(z.sum(1)).max(), "cov_z_gap": np.abs(np.cov(z.T) - (np.eye(m) - 1 / m)).max(),
           "resid_mean": res.mean((0, 1)).round(4).tolist(), "resid_var": res.var((0, 1)).round(4).tolist(),
           "logp_gap_spread": float(np.ptp(gaps))}  # fmt: skip
    print(json.dumps({k: v if isinstance(v, list) else float(v) for k, v in out.items()}))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--out")
    p.add_argument("--pool", nargs="+", help="pool these result files of this script (no fitting)")
    p.add_argument("--compare", help="an sbc.py result file of the same seed")
    p.add_argument("--draws", type=int, default=60000, help="importance draws per proposal component")
    p.add_argument("--check-model", action="store_true", help="check the simulation and the density (check_model)")
    a = p.parse_args(argv)
    if a.check_model:
        warnings.simplefilter("ignore")
        check_model(a.seed)
        return 0
    if a.pool:
        pool(a.pool)
        return 0
    warnings.simplefilter("ignore")
    import pymc as pm

    import hierbench.bayes as hbb
    from hierbench.data import to_pair_counts

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from sbc import PARAMS
    from sbc import template
    from sbc import wilson

    data = template("bradley_terry", "small")
    prior = pm.sample_prior_predictive(draws=a.reps, model=hbb.build_bradley_terry(data), random_seed=a.seed)
    pri, pp = prior["prior"].to_dataset(), prior["prior_predictive"].to_dataset()
    cnt = to_pair_counts(data)
    agents = [str(x) for x in cnt["agent"].values]
    idx = {x: i for i, x in enumerate(agents)}
    ia = np.array([idx[str(x)] for x in cnt["agent_a"].values])
    ib = np.array([idx[str(x)] for x in cnt["agent_b"].values])
    m = len(agents)
    Y = pp["outcome_counts"].isel(chain=0).values.astype(float)
    AB = pri["ability"].isel(chain=0).values
    SD = pri["sd_ability"].isel(chain=0).values
    NU = pri["nu"].isel(chain=0).values
    gen = np.random.default_rng(a.seed + 3)
    recs = []
    with open(a.out, "w") as fh:
        for r in range(a.reps):
            th, ab, w, ess = exact_posterior(ia, ib, Y[r, :, 0], Y[r, :, 1], Y[r, :, 2], m, gen, n=a.draws)
            truth = {"sd_ability": SD[r], "nu": NU[r], **{f"ability[{i}]": AB[r, i] for i in range(m)}}
            vals = {"sd_ability": np.exp(th[:, 0]), "nu": np.exp(th[:, m]), **{f"ability[{i}]": ab[:, i] for i in range(m)}}
            rec = {"rep": r, "ess": round(ess), "truth": {k: round(float(v), 6) for k, v in truth.items()},
                   "cdf": {}, "in50": {}, "in90": {}}  # fmt: skip
            for k, t in truth.items():
                q = _wq(vals[k], w, [0.25, 0.75, 0.05, 0.95])
                rec["cdf"][k] = round(float(w[vals[k] < t].sum()), 5)
                rec["in50"][k] = bool(q[0] <= t <= q[1])
                rec["in90"][k] = bool(q[2] <= t <= q[3])
            # stored: the parameters sbc.py checks (every agent's coverage is printed below)
            keep = {g: {k: rec[g][k] for k in PARAMS["bradley_terry"]} for g in ("truth", "cdf", "in50", "in90")}
            fh.write(json.dumps({**rec, **keep}, separators=(",", ":")) + "\n")
            fh.flush()
            recs.append(rec)
    n = len(recs)
    print(f"{n} replicates, importance ESS min {min(r['ess'] for r in recs):.0f}")
    for k in recs[0]["cdf"]:
        c50, c90 = sum(r["in50"][k] for r in recs), sum(r["in90"][k] for r in recs)
        b50, b90 = wilson(c50, n), wilson(c90, n)
        u = np.array([r["cdf"][k] for r in recs])
        print(
            f"{k:<12} cov50 {c50 / n:.3f} [{b50[0]:.3f},{b50[1]:.3f}]  cov90 {c90 / n:.3f} "
            f"[{b90[0]:.3f},{b90[1]:.3f}]  outer 20% {int(((u < 0.1) | (u >= 0.9)).sum())}/{n}"
        )
    if a.compare:
        compare(recs, a.compare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
