"""The wine reference against R's ``ordinal::clmm``: where the posterior means differ, and why.

Run from the project root (the shared data folder must be reachable, see
``hierbench.data.shared_data_dir``)::

    .venv/bin/python models/mixed/clmm_check.py

Prints, for ``rating ~ temp + contact + (1|judge)`` on the wine ratings:

1. the marginal likelihood's maximum and the marginal posterior mode under
   ``build_mixed``'s default priors, by scipy alone (judge effects integrated
   by 60-node Gauss-Hermite quadrature; pandas on the raw CSV): the first
   reproduces clmm's published estimates, the second shows the priors' pull
   at the mode;
2. beside clmm, the reference's posterior means (``reference.json``) and those
   of the same model with wide priors (same data, seed and sampler settings),
   which separate the priors' pull from the gap between a skewed posterior's
   mean and its mode. ``card.md`` quotes the output.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize
from scipy import special
from scipy import stats

from hierbench.bayes import build_mixed
from hierbench.bayes import fit
from hierbench.bayes import read_spec
from hierbench.data import from_records
from hierbench.data import shared_data_dir

HERE = Path(__file__).resolve().parent
WIDE = {"beta": {"dist": "Normal", "mu": 0.0, "sigma": 100.0},
        "thresholds": {"dist": "Normal", "mu": 0.0, "sigma": 100.0},
        "sd_agent_level": {"dist": "HalfNormal", "sigma": 100.0}}  # fmt: skip


def _log_lik(th, b, s, y, X, judge, nodes, weights):
    """The marginal log-likelihood: each judge's effect integrated by Gauss-Hermite quadrature."""
    a = th[None, :, None] - (X @ b)[:, None, None] - s * nodes[None, None, :]
    zeros, ones = np.zeros((len(y), 1, len(nodes))), np.ones((len(y), 1, len(nodes)))
    cdf = np.concatenate([zeros, special.expit(a), ones], axis=1)
    p = cdf[np.arange(len(y)), y + 1] - cdf[np.arange(len(y)), y]
    per_judge = np.zeros((judge.max() + 1, len(nodes)))
    np.add.at(per_judge, judge, np.log(p))
    return special.logsumexp(per_judge + np.log(weights), axis=1).sum()


def scipy_modes(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """The maximum-likelihood fit (clmm's) and the mode in (thresholds, beta, sd) under the default priors."""
    y = df["rating"].to_numpy() - 1
    X = np.column_stack([df["temp"] == "warm", df["contact"] == "yes"]).astype(float)
    judge = pd.factorize(df["judge"])[0]
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()

    def unpack(p):
        return np.cumsum(np.r_[p[0], np.exp(p[1:4])]), p[4:6], np.exp(p[6])

    def neg(p, prior):
        th, b, s = unpack(p)
        v = _log_lik(th, b, s, y, X, judge, nodes, weights)
        if prior:  # no Jacobian: the optimum is the mode in (thresholds, beta, sd) coordinates
            v += stats.norm.logpdf(th, 0, 5).sum() + stats.norm.logpdf(b, 0, 2.5).sum()
            v += stats.halfnorm.logpdf(s, scale=1.5)
        return -v

    out = {}
    for prior in (False, True):
        p0 = np.r_[-1.5, np.log([3.0, 2.7, 1.9]), 3.0, 1.8, np.log(1.1)]
        r = optimize.minimize(neg, p0, args=(prior,), method="BFGS", options={"gtol": 1e-6})
        r = optimize.minimize(neg, r.x, args=(prior,), method="Nelder-Mead",
                              options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 20000})  # fmt: skip
        th, b, s = unpack(r.x)
        out["prior mode" if prior else "ML"] = np.r_[th, b, s]
    return out


def main() -> None:
    """Print the scipy modes and the table of ``card.md``."""
    path = shared_data_dir() / "ordinal" / "wine.csv"
    df = pd.read_csv(path)
    clmm = pd.read_csv(path.parent / "reference_values.csv")["value"].to_numpy()
    clmm = np.r_[clmm[:6], np.sqrt(clmm[6])]
    names = ["threshold 1|2", "threshold 2|3", "threshold 3|4", "threshold 4|5", "beta temp=warm",
             "beta contact=yes", "sd of judges"]  # fmt: skip
    for what, v in scipy_modes(df).items():
        print(f"{what}: " + ", ".join(f"{n} {x:.3f}" for n, x in zip(names, v, strict=True)))
    case = read_spec(HERE / "spec.toml")["reference_cases"]["wine"]
    data = from_records(df, agent="judge", task="bottle", score="rating", score_levels=case["option_levels"],
                        task_coords=["temp", "contact"])  # fmt: skip
    model = build_mixed(data, case["option_formula"], levels=case["option_levels"], priors=WIDE)
    dt = fit(model, rng=case["seed"], draws=case["draws"], tune=case["tune"], chains=case["chains"])
    post = dt["posterior"].to_dataset()
    wide = [post["thresholds"].isel(threshold=k) for k in range(4)]
    wide += [post["beta"].sel(coef=c) for c in ("temp[warm]", "contact[yes]")] + [post["sd(1|agent)"]]
    ref = json.loads((HERE / "reference.json").read_text())["cases"]["wine"]["summary"]
    default = [*ref["thresholds"].values(), ref["beta"]["temp[warm]"], ref["beta"]["contact[yes]"], ref["sd(1|agent)"]]
    print(f"wide priors: max R-hat {dt.attrs['diag_max_r_hat']:.3f}, min ESS bulk {dt.attrs['diag_min_ess_bulk']:.0f}, "
          f"{dt.attrs['diag_n_divergent']} divergences")  # fmt: skip
    print("quantity | clmm | posterior mean (sd) | (mean - clmm) / sd | wide priors: mean (sd)")
    for n, c, d, w in zip(names, clmm, default, wide, strict=True):
        print(f"{n} | {c:.3f} | {d['mean']:.3f} ({d['sd']:.3f}) | {(d['mean'] - c) / d['sd']:+.2f} | "
              f"{float(w.mean()):.3f} ({float(w.std()):.3f})")  # fmt: skip


if __name__ == "__main__":
    main()
