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
the 5% point; ``nu`` and ``ability[0]`` 0.898 and 0.900.

``--quadrature`` redoes sd_ability's posterior CDF with no proposal to miss
small sd_ability (:func:`sd_marginal`: a grid over log sd_ability, the
log-concave conditional over (z, log nu) integrated by Newton + Gauss-Hermite
at each point; numerical error under 1e-4 in the CDF). On the 1,224 stored
replicates in the tails (importance CDF below 0.07 or above 0.93) and 322
others: quadrature minus importance CDF +0.0012 +- 0.0002 in the lower tail,
0.0000 in the upper; all 8,300 with the quadrature's verdicts cover 0.892
[0.885, 0.898]. So the importance CDFs were slightly low in the lower tail, far
too little to matter. ``--sbc-quadrature numpy`` repeats the SBC with the same quadrature on
draws made in NumPy (calibrated by construction): 0.906 [0.899, 0.913] over
7,500 replicates; ``--sbc-quadrature pymc`` on 15,000 fresh PyMC replicates
(seeds 7001-7030): 0.902 [0.898, 0.907]. So sd_ability is calibrated and the
stored studies' shortfall was chance; all 30,800: 0.900 [0.897, 0.904]. The
card's SBC section has the details and the direct checks of the draws.

Usage::

    python benchmarks/bt_sbc_exact.py --reps 200 --seed 2026 --out exact.jsonl [--compare sbc_small.jsonl]
    python benchmarks/bt_sbc_exact.py --pool exact_seed1.jsonl exact_seed2.jsonl ...
    python benchmarks/bt_sbc_exact.py --check-model --seed 777
    python benchmarks/bt_sbc_exact.py --quadrature exact_seed2026.jsonl --seed 2026 --reps 200 --out exact_quad_seed2026.jsonl
    python benchmarks/bt_sbc_exact.py --pool-quadrature exact_quad_seed2026.jsonl ...
    python benchmarks/bt_sbc_exact.py --sbc-quadrature numpy --seed 6001 --reps 500 --out exact_quad_numpy_seed6001.jsonl
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


def _cond_grad_hess(x, sd, DV, wa, tt, wb):
    """Gradient and Hessian of the log density of (z, log nu) given sd_ability, batched over sd's grid."""
    z, lnu = x[:, :-1], x[:, -1]
    d = sd[:, None] * (z @ DV.T)
    eta = np.stack([d / 2, np.broadcast_to(lnu[:, None], d.shape), -d / 2], -1)
    p = np.exp(eta - eta.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    pa, pt, pb = p[..., 0], p[..., 1], p[..., 2]
    n = wa + tt + wb
    gd = (wa - wb) / 2 - n * (pa - pb) / 2
    # the Davidson outcome's information in (d, log nu): A'(diag p - p p')A with eta = (d/2, log nu, -d/2)
    hdd = n * (pa + pb - (pa - pb) ** 2) / 4
    hdl = -n * pt * (pa - pb) / 2
    hll = n * pt * (1 - pt)
    k = x.shape[1]
    grad = np.concatenate([-z + sd[:, None] * (gd @ DV), (-lnu + (tt - n * pt).sum(1))[:, None]], 1)
    H = np.zeros((x.shape[0], k, k))
    H[:, :-1, :-1] = -np.eye(k - 1) - sd[:, None, None] ** 2 * np.einsum("gp,pi,pj->gij", hdd, DV, DV)
    H[:, :-1, -1] = H[:, -1, :-1] = -sd[:, None] * (hdl @ DV)
    H[:, -1, -1] = -1 - hll.sum(1)
    return grad, H


def _cond_log_integral(lsd, ia, ib, wa, tt, wb, m, nodes=8):
    """The log of the integral over (z, log nu) of the joint density at each log sd_ability of a grid.

    The conditional density given sd is log-concave (a multinomial logit in a linear predictor, Gaussian
    priors): Newton finds its mode, and a product Gauss-Hermite rule of ``nodes`` points per dimension,
    scaled by the Hessian there, integrates it.
    """
    from numpy.polynomial.hermite_e import hermegauss
    from scipy.special import logsumexp

    V = _basis(m)
    DV = V[ia] - V[ib]
    sd, k = np.exp(lsd), m
    x = np.zeros((lsd.size, k))

    def h(xx, ls):
        return _logpost(np.concatenate([ls[:, None], xx], 1), ia, ib, wa, tt, wb, V)

    for _ in range(100):
        g, H = _cond_grad_hess(x, sd, DV, wa, tt, wb)
        step = np.linalg.solve(-H, g[..., None])[..., 0]
        t, f0 = np.ones(lsd.size), h(x, lsd)
        for _ in range(30):  # halve the steps that do not climb
            bad = h(x + t[:, None] * step, lsd) < f0 - 1e-12
            if not bad.any():
                break
            t[bad] /= 2
        x = x + t[:, None] * step
        if np.abs(t[:, None] * step).max() < 1e-10:
            break
    _, H = _cond_grad_hess(x, sd, DV, wa, tt, wb)
    L = np.linalg.cholesky(np.linalg.inv(-H))
    u1, w1 = hermegauss(nodes)
    U = np.stack(np.meshgrid(*[u1] * k, indexing="ij"), -1).reshape(-1, k)
    lw = np.log(w1)[np.stack(np.meshgrid(*[np.arange(nodes)] * k, indexing="ij"), -1).reshape(-1, k)].sum(1)
    lw += 0.5 * (U**2).sum(1)
    out = np.empty(lsd.size)
    for i in range(lsd.size):
        xs = x[i] + U @ L[i].T
        out[i] = logsumexp(h(xs, np.full(len(xs), lsd[i])) + lw) + np.log(np.diag(L[i])).sum()
    return out


def sd_marginal(ia, ib, wa, tt, wb, m, lo=-10.0, hi=2.5, step=0.1, nodes=8):
    """The marginal posterior of log sd_ability by quadrature: its grid, CDF and the grid's log density.

    The log joint density integrated over (z, log nu) at each point of a grid of log sd_ability
    (:func:`_cond_log_integral`), a cubic spline of it on a ten times finer grid, and the trapezoid
    rule there; below ``lo`` the likelihood no longer depends on sd and the density of log sd is
    proportional to sd, so the mass below is the density at ``lo``. Unlike the importance sampler
    this has no proposal: small sd_ability, where z spread out to their prior, is integrated like any
    other value.
    """
    from scipy.interpolate import CubicSpline

    grid = np.arange(lo, hi + step / 2, step)
    g = _cond_log_integral(grid, ia, ib, wa, tt, wb, m, nodes)
    fine = np.linspace(lo, grid[-1], 10 * (grid.size - 1) + 1)
    dens = np.exp(CubicSpline(grid, g)(fine) - g.max())
    cdf = np.r_[0.0, np.cumsum((dens[1:] + dens[:-1]) / 2 * np.diff(fine))] + dens[0]
    return fine, cdf / cdf[-1], g


def replicates(seed: int, reps: int):
    """The small design's pairs and ``reps`` prior-predictive replicates of its model, as ``sbc.py`` draws them.

    Returns the agent indices of each pair's two sides, the number of agents, the outcome counts
    (replicate x pair x (a wins, tie, b wins)) and the prior draws of ``sd_ability``, ``nu`` and
    ``ability`` (replicate first).
    """
    import pymc as pm

    import hierbench.bayes as hbb
    from hierbench.data import to_pair_counts

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from sbc import template

    data = template("bradley_terry", "small")
    prior = pm.sample_prior_predictive(draws=reps, model=hbb.build_bradley_terry(data), random_seed=seed)
    pri, pp = prior["prior"].to_dataset(), prior["prior_predictive"].to_dataset()
    cnt = to_pair_counts(data)
    agents = [str(x) for x in cnt["agent"].values]
    idx = {x: i for i, x in enumerate(agents)}
    ia = np.array([idx[str(x)] for x in cnt["agent_a"].values])
    ib = np.array([idx[str(x)] for x in cnt["agent_b"].values])
    Y = pp["outcome_counts"].isel(chain=0).values.astype(float)
    return ia, ib, len(agents), Y, {k: pri[k].isel(chain=0).values for k in ("sd_ability", "nu", "ability")}


def quadrature_study(seed, reps, stored, out, tail=0.07, others=0.05, check_every=10) -> list[dict]:
    """Redo the sd_ability CDF of the truth by quadrature (:func:`sd_marginal`) on a stored study's replicates.

    The replicates whose stored importance CDF is below ``tail`` or above ``1 - tail``, and a random
    ``others`` fraction of the rest. Each record holds the truth, both CDFs, the quadrature's 50% / 90%
    verdicts and, every ``check_every``-th, the CDF again on a grid half as wide with 10 nodes a
    dimension (the numerical error).
    """
    ia, ib, m, Y, pri = replicates(seed, reps)
    old = {r["rep"]: r for r in map(json.loads, open(stored))}
    gen = np.random.default_rng(seed + 5)
    pick = [r for r in range(reps) if abs(old[r]["cdf"]["sd_ability"] - 0.5) > 0.5 - tail or gen.random() < others]
    recs = []
    with open(out, "w") as fh:
        for j, r in enumerate(pick):
            t = float(pri["sd_ability"][r])
            assert abs(t - old[r]["truth"]["sd_ability"]) < 1e-5, "not the stored study's replicates"
            fine, cdf, _ = sd_marginal(ia, ib, *Y[r].T, m)
            q = np.interp([0.25, 0.75, 0.05, 0.95], cdf, fine)
            rec = {"rep": r, "truth": round(t, 6), "cdf_is": old[r]["cdf"]["sd_ability"],
                   "cdf_quad": round(float(np.interp(np.log(t), fine, cdf)), 6),
                   "in50": bool(q[0] <= np.log(t) <= q[1]), "in90": bool(q[2] <= np.log(t) <= q[3]),
                   "in90_is": old[r]["in90"]["sd_ability"]}  # fmt: skip
            if j % check_every == 0:
                f2, c2, _ = sd_marginal(ia, ib, *Y[r].T, m, step=0.05, nodes=10)
                rec["cdf_check"] = round(float(np.interp(np.log(t), f2, c2)), 6)
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
            fh.flush()
            recs.append(rec)
    d = np.array([x["cdf_quad"] - x["cdf_is"] for x in recs])
    print(f"{len(recs)} of {reps} replicates; quadrature - importance CDF: mean {d.mean():.4f}, sd {d.std():.4f}; "
          f"90% verdicts differ in {sum(x['in90'] != x['in90_is'] for x in recs)}")  # fmt: skip
    return recs


def quadrature_sbc(seed: int, reps: int, out: str, numpy_draws: bool = True) -> list[dict]:
    """SBC of sd_ability with the posterior by quadrature, on draws made here in NumPy or by PyMC.

    NumPy: the truth from the priors of :func:`_logpost` (HalfNormal(1), z standard normal in the
    sum-zero basis, log nu standard normal), the counts from the Davidson probabilities on the design's
    pairs and comparison counts: no PyMC at all, calibrated by construction. PyMC: the replicates of
    :func:`replicates` (those of the stored studies at the same seed and reps). The CDF of the truth
    comes from :func:`sd_marginal` at a cheaper setting (step 0.2, 6 nodes; within 1e-4 of the default
    on the stored replicates), the same for both, so the two coverages differ only by their draws.
    """
    ia, ib, m, Y, pri = replicates(seed, 1 if numpy_draws else reps)
    n, DV, gen = Y[0].sum(1).astype(int), _basis(m)[ia] - _basis(m)[ib], np.random.default_rng(seed)
    recs = []
    with open(out, "w") as fh:
        for r in range(reps):
            if numpy_draws:
                sd, z, lnu = abs(gen.normal()), gen.normal(size=m - 1), gen.normal()
                d = sd * (DV @ z)
                P = np.exp(np.stack([d / 2, np.full_like(d, lnu), -d / 2], 1))
                y = gen.multinomial(n, P / P.sum(1, keepdims=True)).astype(float)
            else:
                sd, y = float(pri["sd_ability"][r]), Y[r]
            fine, cdf, _ = sd_marginal(ia, ib, *y.T, m, lo=-8.0, hi=2.2, step=0.2, nodes=6)
            q = np.interp([0.25, 0.75, 0.05, 0.95], cdf, fine)
            rec = {"rep": r, "truth": round(sd, 6), "cdf_quad": round(float(np.interp(np.log(sd), fine, cdf)), 6),
                   "in50": bool(q[0] <= np.log(sd) <= q[1]), "in90": bool(q[2] <= np.log(sd) <= q[3])}  # fmt: skip
            fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
            fh.flush()
            recs.append(rec)
    kind = "NumPy" if numpy_draws else "PyMC"
    print(f"{reps} {kind} replicates: sd_ability 90% coverage {np.mean([x['in90'] for x in recs]):.3f}")
    return recs


def pool_quadrature(paths: list[str], tail: float = 0.07) -> dict:
    """Pool :func:`quadrature_study` files with their stored studies (``exact_quad_X`` beside ``exact_X``).

    The quadrature CDF minus the importance CDF on the lower-tail, upper-tail and random other
    replicates (count, mean, sd; a tail replicate is one whose importance CDF lies below ``tail`` or
    above ``1 - tail``, the split the study's ``--tail`` made), the largest gap of the numerical check, and the 90% coverage and tail counts of sd_ability
    over all the stored replicates with the quadrature's verdicts where it was run (every verdict that
    could change: the tail replicates) and the importance sampler's elsewhere.
    """
    import pathlib

    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from sbc import wilson

    cov = low = high = n = 0
    diffs, checks = {"lower": [], "upper": [], "others": []}, []
    for path in paths:
        p = pathlib.Path(path)
        quad = {r["rep"]: r for r in map(json.loads, open(p))}
        for old in map(json.loads, open(p.with_name(p.name.replace("exact_quad_", "exact_")))):
            q = quad.get(old["rep"])
            u = q["cdf_quad"] if q else old["cdf"]["sd_ability"]
            n, cov = n + 1, cov + (q["in90"] if q else old["in90"]["sd_ability"])
            low, high = low + (u < 0.05), high + (u > 0.95)
            if q:
                side = "others" if abs(q["cdf_is"] - 0.5) <= 0.5 - tail else "lower" if q["cdf_is"] < 0.5 else "upper"
                diffs[side].append(q["cdf_quad"] - q["cdf_is"])
                if "cdf_check" in q:
                    checks.append(abs(q["cdf_check"] - q["cdf_quad"]))
    out = {f"{k}_diff": [len(v), float(np.mean(v)), float(np.std(v))] for k, v in diffs.items()}
    out.update(max_check_gap=max(checks), n_checks=len(checks), reps=n, cov90=cov / n, band90=wilson(cov, n),
               below5=int(low), above95=int(high))  # fmt: skip
    print(json.dumps(out))
    return out


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
    p.add_argument("--pool-quadrature", nargs="+", help="pool --quadrature result files with their studies")
    p.add_argument("--compare", help="an sbc.py result file of the same seed")
    p.add_argument("--draws", type=int, default=60000, help="importance draws per proposal component")
    p.add_argument("--check-model", action="store_true", help="check the simulation and the density (check_model)")
    p.add_argument("--quadrature", help="this script's result file of the same seed and reps: redo sd_ability by quadrature")
    p.add_argument("--sbc-quadrature", choices=["numpy", "pymc"], help="SBC of sd_ability by quadrature on these draws")
    p.add_argument("--tail", type=float, default=0.07, help="with --quadrature: redo the CDFs below this or above 1 - it (and --pool-quadrature: split there)")
    p.add_argument("--others", type=float, default=0.05, help="with --quadrature: and this fraction of the rest")
    a = p.parse_args(argv)
    if a.check_model:
        warnings.simplefilter("ignore")
        check_model(a.seed)
        return 0
    if a.pool:
        pool(a.pool)
        return 0
    if a.pool_quadrature:
        pool_quadrature(a.pool_quadrature, tail=a.tail)
        return 0
    warnings.simplefilter("ignore")
    if a.sbc_quadrature:
        quadrature_sbc(a.seed, a.reps, a.out, numpy_draws=a.sbc_quadrature == "numpy")
        return 0
    if a.quadrature:
        quadrature_study(a.seed, a.reps, a.quadrature, a.out, tail=a.tail, others=a.others)
        return 0
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from sbc import PARAMS
    from sbc import wilson

    ia, ib, m, Y, pri = replicates(a.seed, a.reps)
    AB, SD, NU = pri["ability"], pri["sd_ability"], pri["nu"]
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
