"""An ordinal fit's likelihood sees its covariate columns centred: a reparameterisation, not a new model (audit L, 7).

The thresholds hold the location outside the fixed effects' QR rotation, so an uncentred covariate (VerbAgg's
Anger, mean about 20) trades off with them. The check is exact: for random parameter values, the log density
of the centred model at the matching point (``gamma = R beta``, thresholds seen moved by ``m . beta``) differs
from the uncentred model's by one constant (the log-determinant of the changed rotation), whatever the values.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest
import xarray as xr

import hierbench.bayes._models._formula_model as formula_model
from hierbench.bayes import build_mixed

FORMULA = "score ~ anger + tier + (1|agent)"


def _graded() -> xr.Dataset:
    rng = np.random.default_rng(7)
    grade = rng.integers(1, 5, (8, 6, 2)).astype(float)
    return xr.Dataset({"score": (("agent", "task", "run"), grade)},
                      coords={"agent": [f"a{i}" for i in range(8)], "task": [f"t{j}" for j in range(6)],
                              "anger": ("agent", 20 + rng.normal(0, 4, 8)), "tier": ("task", ["x", "y"] * 3)})  # fmt: skip


def _values(model, point: dict) -> dict:
    """The model's unconstrained values from values of its free variables on their own scale."""
    out = {}
    for rv in model.free_RVs:
        value = point[rv.name]
        transform = model.rvs_to_transforms.get(rv)
        key = model.rvs_to_values[rv].name
        out[key] = value if transform is None else transform.forward(pt.as_tensor_variable(value), *rv.owner.inputs).eval()
    return out


@pytest.mark.slow
def test_centring_the_covariates_changes_the_parameterisation_only(monkeypatch):
    data = _graded()
    new = build_mixed(data, FORMULA, levels=[1, 2, 3, 4])
    choice = new.hierbench["structure"]["decisions"]["centred_covariates"]["choice"]
    assert choice == ["anger", "tier[y]"]
    monkeypatch.setattr(formula_model, "centred_columns", lambda st, design: None)
    old = build_mixed(data, FORMULA, levels=[1, 2, 3, 4])
    assert "centred_covariates" not in old.hierbench["structure"]["decisions"]
    design = new.hierbench["design"]
    w = np.asarray(design.n, float)
    means = w @ design.X / w.sum()  # both columns are slopes or contrasts: each centred
    rng = np.random.default_rng(11)
    fns = [m.compile_fn([m.logp(), *m.replace_rvs_by_values([m["thresholds"], m["beta"]])], inputs=m.value_vars,
                        on_unused_input="ignore") for m in (old, new)]  # fmt: skip
    diffs = []
    for _ in range(5):
        beta, sd = rng.normal(0, 1, 2), np.exp(rng.normal(0, 0.3))
        z_offset, z = rng.normal(), rng.normal(0, 1, 8)
        z -= z.mean()
        theta = np.sort(rng.normal(0, 2, 3))
        offset = z_offset * sd / np.sqrt(8)
        common = {"sd(1|agent)": sd, "z_offset[1|agent]": z_offset}
        dev = next(rv.name for rv in old.free_RVs if rv.name.endswith("[1|agent]") and "offset" not in rv.name)
        common[dev] = z if dev.startswith("z[") else sd * z
        points = []
        for model, X, shift in ((old, design.X, 0.0), (new, design.X - means, means @ beta)):
            R = np.linalg.qr(X * np.sqrt(w)[:, None], mode="r")
            R = R * np.sign(np.diag(R))[:, None]
            points.append(_values(model, {**common, "beta_qr": R @ beta, "thresholds_seen": theta - offset - shift}))
        (lp_old, th_old, b_old), (lp_new, th_new, b_new) = (f(p) for f, p in zip(fns, points, strict=True))
        for got in (th_old, th_new):  # both points are the same thresholds and coefficients
            np.testing.assert_allclose(got, theta, atol=1e-10)
        for got in (b_old, b_new):
            np.testing.assert_allclose(got, beta, atol=1e-10)
        diffs.append(float(lp_new - lp_old))
    assert np.ptp(diffs) == pytest.approx(0.0, abs=1e-8)


def test_an_ordinal_fits_runs_carry_their_agent_and_task():
    """Audit L finding 11: the laid-out ``y(obs)`` names each run's agent and task, as the raw log has them."""
    from collections import Counter

    from hierbench.bayes._registry import model_hook

    data = _graded()
    info = build_mixed(data, FORMULA, levels=[1, 2, 3, 4]).hierbench
    design = info["design"]
    observed = xr.Dataset({"y": (("cell", "grade"), design.grade_counts)})
    dt = model_hook(info, "postprocess")(xr.DataTree.from_dict({"observed_data": observed}), None)
    y = dt["observed_data"]["y"]
    got = Counter(zip(y.obs_agent.values.tolist(), y.obs_task.values.tolist(), y.values.tolist(), strict=True))
    raw = data["score"].to_dataframe().dropna().reset_index()
    want = Counter(zip(raw.agent, raw.task, raw.score.astype(int), strict=True))
    assert got == want and sum(got.values()) == 8 * 6 * 2
