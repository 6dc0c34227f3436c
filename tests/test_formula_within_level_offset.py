"""A formula fit absorbs a random term's means within a factor constant in its levels (audit F, F3).

``score ~ tier + (1|agent) + (1|task)`` with ``tier`` constant within tasks: the data inform the
coefficient ``tier[b]`` plus the difference of the task effects' means in tiers b and a, not each. The
builder used to absorb only each term's overall mean into the fixed effects the likelihood sees, so the
sampler moved ``tier[b]`` itself and walked that ridge (METR, 6 models x 83 tasks by tier: bulk ESS 60-190
of the coefficients at 8,000 draws). Now the task effects are split along ``[1, tier[b]]`` as well: the
fixed effects the likelihood sees (``beta_qr`` rotated back) carry the tiers' means, and the deviations
sampled sum to zero within each tier. The split is a reparameterisation: the checks below are that the
prior is the same (effects iid ``N(0, sd)``, coefficients their own normal priors, independent), and
that the coordinate the sampler now moves no longer rides the within-tier means while the posterior's
own ridge (``tier[b]`` against those means, the same under any parameterisation) is there to ride.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr

from hierbench import bayes

FORMULA = "score ~ tier + (1|agent) + (1|task)"


def _log(seed: int = 1) -> xr.Dataset:
    """8 agents x 12 tasks (6 per tier) x 3 runs; logit p = -0.5 + 1.0 [b] + agent (sd 0.5) + task (sd 1.5)."""
    rng = np.random.default_rng(seed)
    tier = np.array(["a", "b"] * 6)
    eta = -0.5 + 1.0 * (tier == "b")[None, :] + rng.normal(0, 0.5, (8, 1)) + rng.normal(0, 1.5, (1, 12))
    y = (rng.random((8, 12, 3)) < 1 / (1 + np.exp(-eta[..., None]))).astype(float)
    return xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": [f"m{i}" for i in range(8)], "task": [f"t{j:02d}" for j in range(12)],
                              "tier": ("task", tier)})  # fmt: skip


def _model(data: xr.Dataset) -> pm.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 8 agents: the hint that (1|agent)'s sd is weakly identified
        return bayes.build_mixed(data, FORMULA)


def test_the_split_keeps_the_prior_task_effects_iid_and_the_coefficients_own_priors():
    """
    Prior draws (ancestral, numpy checks): ``re/sd`` over the 12 tasks has identity covariance and
    the coefficients their prior sds (Intercept 10, tier[b] 2.5), uncorrelated with the effects.
    4,000 draws: a sample covariance entry of standard normals has sd 1/sqrt(4000) = 0.016 off the
    diagonal and 0.022 on it; 0.09 is 4 sd over the 78 entries. A prior sd's relative error has sd
    1/sqrt(2 x 4000) = 0.011: 5% is 4.5 sd.
    """
    model = _model(_log())
    assert "tier[b]" in model.hierbench["structure"]["decisions"]["offsets"]["reason"]
    assert model.coords["task (offsets)"] == ("(mean)", "tier[b]")  # z_offset[1|task]: the mean and tier b's
    re, sd, beta = pm.draw([model["re[1|task]"], model["sd(1|task)"], model["beta"]], draws=4000, random_seed=3)
    z = re / sd[:, None]
    assert np.max(np.abs(np.cov(z, rowvar=False) - np.eye(12))) < 0.09
    np.testing.assert_allclose(beta.std(0), [10.0, 2.5], rtol=0.05)
    cross = np.corrcoef(np.column_stack([beta, z]), rowvar=False)[:2, 2:]
    assert np.max(np.abs(cross)) < 0.07  # 4.4 sd of a null correlation's 0.016


@pytest.mark.slow  # a NUTS fit: 3 s with nutpie's compile cached, 18 s cold
def test_the_sampled_coefficient_no_longer_rides_the_within_tier_means():
    """
    ``m`` = mean task effect in tier b minus in tier a. In the posterior, ``tier[b]`` and ``m`` trade
    off (the data inform their sum: correlation -0.76 to -0.82 at seeds 4-6); the old builder sampled
    ``tier[b]`` itself (there ``r(beta_seen, m)`` was that same -0.76 to -0.80, and its bulk ESS 280-330
    against 1,100-1,400 now, at 2 x 500 draws). The coordinate sampled now is ``beta_seen = R^-1 beta_qr`` (``R`` from the
    run-weighted QR of ``X``, rebuilt here): ``tier[b] + m``, which the data inform, while ``m`` is left
    to its prior (sd about 1.5 x sqrt(2/6) = 0.9 against ``beta``'s 2.5: a correlation near
    0.9^2 / (0.9^2 + 2.5^2) x sd(beta_seen) / sd(m) < 0.05; 0.03 to 0.12 at seeds 4-6). Monte Carlo: a
    sample correlation's sd is about (1 - rho^2) / sqrt(ESS) <= 0.06 at the fit's ESS (checked >= 300),
    so |r| < 0.25 holds the new coordinate with 3 sd to spare, and r < -0.7 the ridge (4 sd of its
    0.02).
    """
    data = _log()
    model = _model(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 8 agents: sd(1|agent)'s ESS falls short of 400 at these few draws
        fit = bayes.fit(model, draws=500, tune=300, chains=2, rng=4, progress=False)
    post = fit.posterior
    design = model.hierbench["design"]
    Xw = design.X * np.sqrt(np.asarray(design.n, float))[:, None]
    R = np.linalg.qr(Xw, mode="r")
    R = R * np.sign(np.diag(R))[:, None]
    seen = np.linalg.solve(R, post["beta_qr"].values.reshape(-1, 2).T)[1]
    re = post["re[1|task]"].values.reshape(seen.size, 12)
    tier = np.asarray(data["tier"].values)
    m = re[:, tier == "b"].mean(1) - re[:, tier == "a"].mean(1)
    beta = post["beta"].sel(coef="tier[b]").values.ravel()
    draws = xr.Dataset({k: (("chain", "draw"), v.reshape(2, -1)) for k, v in {"seen": seen, "m": m, "beta": beta}.items()})
    assert min(float(v) for v in az.ess(draws, method="bulk").data_vars.values()) >= 300
    np.testing.assert_allclose(seen, beta + m, atol=1e-8)  # what the likelihood sees: the coefficient and the means
    assert np.corrcoef(beta, m)[0, 1] < -0.7
    assert abs(np.corrcoef(seen, m)[0, 1]) < 0.25
