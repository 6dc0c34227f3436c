"""The Bayesian [0, 1]-score family's linear predictor is not the logit away from mean 1/2 (audit L, finding 1).

Its coefficients, sds and agents' variance are labelled with the family's own scale, so
``side_by_side`` refuses them beside the maximum-likelihood quasi-binomial logits and names
what to compare instead; the points-scale mean scores still line up. The expected values:
the family's mean inverted by scipy (brentq over scipy quadrature of the density, written here
from its definition), and refusals that follow from how the pair was built.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import integrate
from scipy import optimize
from scipy.special import logit

from hierbench import freq
from hierbench.compare import MismatchedEstimatesError
from hierbench.compare import side_by_side
from hierbench.data import model_design
from hierbench.metrics import agent_variance
from hierbench.metrics import mean_response

FORMULA = "score ~ 0 + agent + (1|task)"


def _family_mean(eta: float, w: float) -> float:
    """E[y] of p(y) ~ exp(theta y) on delta_0 + delta_1 + w dy, theta = eta (3 + 1.5 w) / (3 + 0.5 w)."""
    theta = eta * (3 + 1.5 * w) / (3 + 0.5 * w)
    inner = integrate.quad(lambda y: np.exp(theta * y), 0, 1)[0]
    first = integrate.quad(lambda y: y * np.exp(theta * y), 0, 1)[0]
    return (np.exp(theta) + w * first) / (1 + np.exp(theta) + w * inner)


@pytest.mark.parametrize(("w", "expected"), [(0.0, -4.595), (1.0, -7.42), (3.0, -9.53)])
def test_the_linear_predictor_at_mean_one_percent_is_the_logit_only_on_pass_fail_tasks(w, expected):
    eta = optimize.brentq(lambda e: _family_mean(e, w) - 0.01, -40, 0)
    assert eta == pytest.approx(expected, abs=0.01)
    assert (abs(eta - logit(0.01)) < 1e-3) == (w == 0.0)


def _graded_log() -> xr.Dataset:
    rng = np.random.default_rng(20261206)
    ability = np.array([-3.0, -1.0, 0.5, 1.5])
    task = rng.normal(0, 2.0, 12)
    p = 1 / (1 + np.exp(-(ability[:, None, None] + task[None, :, None])))
    y = np.clip(p + 0.15 * rng.standard_normal((4, 12, 3)), 0, 1).round(2)
    return xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": list("abcd"), "task": [f"t{i}" for i in range(12)]})  # fmt: skip


def _posterior(design, n_draws=4) -> xr.DataTree:
    """A fractional posterior whose every draw holds the ML-like values (beta, sd, interior weights)."""
    rng = np.random.default_rng(1)
    post = {
        "beta": (("chain", "draw", "coef"), np.tile([-3.0, -1.0, 0.5, 1.5], (1, n_draws, 1)) + 0.01 * rng.standard_normal((1, n_draws, 4))),
        "sd": (("chain", "draw", "component"), np.full((1, n_draws, 1), 2.0)),
        "interior": (("chain", "draw", "task"), np.full((1, n_draws, 12), 1.0)),
    }  # fmt: skip
    coords = {"coef": list(design.coef), "component": ["1|task"], "task": [f"t{i}" for i in range(12)]}
    return xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords=coords)})


def test_the_fractional_agent_variance_is_refused_beside_the_quasi_binomial_one_and_the_points_compare():
    ds = _graded_log()
    design = model_design(FORMULA, ds, family="fractional")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml = freq.fit_crossed_ml(ds, FORMULA, family="fractional", intervals="wald")
    post = _posterior(design)
    bayes_var, ml_var = agent_variance(post, design), freq.agent_variance(ml)
    assert "logit" in ml_var.estimate.attrs["scale"]
    assert "linear predictor of the [0, 1] family" in bayes_var.estimate.attrs["scale"]
    with pytest.raises(MismatchedEstimatesError, match="different scales") as refused:
        side_by_side({"ML": ml_var, "Bayes": bayes_var})
    for words in ("'ML': 'logit (variance among agents)'", "'Bayes': 'linear predictor of the [0, 1] family",
                  "hierbench.metrics.mean_response(fit, design) beside hierbench.freq.mean_response"):  # fmt: skip
        assert words in str(refused.value)
    table = side_by_side({"ML": freq.mean_response(ml), "Bayes": mean_response(post, design)})
    assert set(table["scale"].values.tolist()) == {"points of mean score"}


def test_the_builder_labels_beta_and_the_sds_with_the_family_scale():
    """A fractional model's beta and sds carry the [0, 1] family's scale; a binary one's stay logits."""
    from hierbench.bayes import build_mixed

    ds = _graded_log()
    frac = build_mixed(ds, FORMULA).hierbench["var_attrs"]
    binary = build_mixed(ds.assign(score=(ds.score > 0.5) * 1.0), FORMULA).hierbench["var_attrs"]
    for var in ("beta", "sd", "sd(1|task)"):
        assert frac[var]["scale"].startswith("linear predictor of the [0, 1] family")
        assert binary[var]["scale"] == "logit"


def test_the_default_formula_on_a_single_agent_log_drops_the_agent_x_task_effect_before_the_design():
    """Audit L finding 5: with one agent the task and agent x task terms group the runs identically.

    The default is then the documented reduced formula, recorded; the model is the one the user gets by
    writing that formula (same variables, same design rows, counts and task codes).
    """
    from hierbench.bayes import build_mixed
    from hierbench.bayes import describe

    rng = np.random.default_rng(3)
    ds = xr.Dataset({"score": (("agent", "task", "run"), (rng.random((1, 10, 4)) < 0.5) * 1.0)},
                    coords={"agent": ["solo"], "task": [f"t{i}" for i in range(10)]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn of: the user wrote no agent x task term
        m = build_mixed(ds)
    written = build_mixed(ds, "score ~ 0 + agent + (1|task)")
    decisions = m.hierbench["structure"]["decisions"]
    assert m.hierbench["options"]["formula"] == "score ~ 0 + agent + (1|task)"
    assert decisions["agent_task"]["choice"] == "none" and "one agent" in decisions["agent_task"]["reason"]
    assert "without its agent x task effect" in decisions["formula"]["reason"] and "one agent" in describe(m)
    a, b = m.hierbench["design"], written.hierbench["design"]
    assert sorted(v.name for v in m.free_RVs) == sorted(v.name for v in written.free_RVs)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.random[0].codes, b.random[0].codes)
    assert (a.y.tolist(), a.n.tolist()) == (b.y.tolist(), b.n.tolist())
    two = xr.concat([ds, ds.assign_coords(agent=["other"])], "agent")  # two agents, 4 runs per cell: identified
    assert build_mixed(two).hierbench["options"]["formula"] == "score ~ 0 + agent + (1|task) + (1|agent:task)"


def test_a_fractional_fit_states_its_own_likelihood_not_the_quasi_binomial():
    """Audit L finding 8: the family reason names the Bayesian likelihood (atoms at 0 and 1) and the ML half's apart."""
    from hierbench.bayes import build_mixed

    for family in ("auto", "fractional"):
        why = build_mixed(_graded_log(), FORMULA, family=family).hierbench["structure"]["decisions"]["family"]["reason"]
        assert "atoms at 0 and 1" in why
        head, _, tail = why.partition("likelihood:")
        assert "quasi-binomial" not in head and "maximum-likelihood half fits the quasi-binomial" in tail


def test_posterior_mean_response_and_agent_variance_say_their_scale_and_tasks_in_repr_and_frame():
    """Audit L finding 9: the population and observed-task means no longer print alike, nor a variance as points."""
    ds = _graded_log()
    design = model_design(FORMULA, ds, family="fractional")
    post = _posterior(design)
    for tasks, words in (("population", "a new task like the group's own"), ("observed", "own tasks, held fixed")):
        res = mean_response(post, design, tasks=tasks)
        head = repr(res).splitlines()[0]
        assert "points of mean score" in head and f"tasks='{tasks}'" in head and words in head
        frame = res.to_frame()
        assert set(frame["tasks"]) == {tasks} and set(frame["scale"]) == {"points of mean score"}
        assert len(frame) == 4
    var = agent_variance(post, design)
    assert "linear predictor of the [0, 1] family" in repr(var).splitlines()[0]
    assert set(var.to_frame()["scale"]) == {var.estimate.attrs["scale"]}
