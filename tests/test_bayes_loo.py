"""``loo_compare``: leave-one-task-out log-likelihoods, the Pareto k check, and the advice after a compact save.

Expected values come from scipy's ``binom`` and ``norm`` integrated by a fine trapezoid rule, and from
exact leave-one-out by quadrature on a grid, never from the code under test.
"""

import json
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy.special import comb
from scipy.special import expit
from scipy.special import logsumexp
from scipy.stats import binom
from scipy.stats import halfnorm
from scipy.stats import norm

from hierbench.bayes import loo_compare
from hierbench.bayes import predictive_check
from hierbench.bayes._checks import UnreliableLOOWarning
from hierbench.bayes._checks import task_log_likelihood


def _count_fit(model, cells, post, *, cluster_idx=None, log_lik=None):
    """A fit of counts by hand: ``cells`` as (agent, task, n, y); ``post`` maps names to (dims, draws (1, S, ...))."""
    agents = list(dict.fromkeys(c[0] for c in cells))
    tasks = list(dict.fromkeys(c[1] for c in cells))
    coords = {"cell": np.arange(len(cells)), "cell_agent": ("cell", [c[0] for c in cells]),
              "cell_task": ("cell", [c[1] for c in cells])}  # fmt: skip
    obs = xr.Dataset({"y": ("cell", [c[3] for c in cells])}, coords=coords)
    const = xr.Dataset({"cell_n_runs": ("cell", [c[2] for c in cells])}, coords=coords)
    if cluster_idx is not None:
        const["task_cluster_idx"] = xr.DataArray(np.asarray(cluster_idx), dims="task", coords={"task": tasks})
    s = np.shape(next(iter(post.values()))[1])[1]
    sizes = {"agent": agents, "task": tasks, "cluster": np.arange(1 + max(cluster_idx or [0]))}
    p = xr.Dataset(
        {k: (("chain", "draw", *dims), np.asarray(v, float)) for k, (dims, v) in post.items()},
        coords={"chain": [0], "draw": np.arange(s), **{d: v for d, v in sizes.items()
                                                        if any(d in dims for dims, _ in post.values())}},
    )  # fmt: skip
    tree = {"posterior": p, "observed_data": obs, "constant_data": const}
    if log_lik is not None:
        tree["log_likelihood"] = xr.Dataset({"y": (("chain", "draw", "cell"), log_lik)}, coords=coords)
    dt = xr.DataTree.from_dict(tree)
    dt.attrs["hierbench_model"] = model
    return dt


def _trapezoid_log_integral(log_f, sd, size=801):
    """The log of int exp(log_f(x)) N(x; 0, sd) dx by the trapezoid rule on [-10 sd, 10 sd] (``log_f`` vectorised)."""
    x = np.linspace(-10 * sd, 10 * sd, size)
    lf = log_f(x)
    v = lf + norm.logpdf(x, 0, sd).reshape((-1,) + (1,) * (np.ndim(lf) - 1))
    return logsumexp(v, axis=0) + np.log(x[1] - x[0])  # the end points carry exp(-50): the trapezoid's halves do not matter


def _task_integral(cells, sd_b, sd_cell):
    """The log of int prod_c p(y_c | eta_c + b) N(b; 0, sd_b) db, each cell's own spread ``sd_cell`` integrated too."""

    def cell(y, n, eta):  # over the grid of b (and of the cell's own effect when it has one)
        if sd_cell == 0:
            return binom.logpmf(y, n, expit(eta))
        return _trapezoid_log_integral(lambda a: binom.logpmf(y, n, expit(eta[:, None] + a[None, :])).T, sd_cell, 401)

    return _trapezoid_log_integral(lambda b: sum(cell(y, n, e + b) for y, n, e in cells), sd_b)


def test_crossed_task_log_likelihood_integrates_the_task_and_agent_task_effects_as_a_fine_trapezoid_does():
    """Ragged cells (a1 never ran t1), two draws: each task's effect and each cell's agent x task effect integrated.

    The cells' agent x task effect by the model's own 7-node adaptive rule: within 1e-6 of the exact integral here.
    """
    cells = [("a0", "t0", 3, 1), ("a1", "t0", 5, 4), ("a0", "t1", 2, 2)]
    ability = np.array([[[0.3, -0.5], [1.2, 0.4]]])
    sd_task, sd_at = np.array([[1.3, 0.6]]), np.array([[0.7, 0.2]])
    fit = _count_fit("crossed", cells, {
        "ability": (("agent",), ability), "task_effect": (("task",), np.full((1, 2, 2), 9.0)),  # never used
        "sd_task": ((), sd_task), "sd_agent_task": ((), sd_at)})  # fmt: skip
    got = task_log_likelihood(fit)
    assert got.dims == ("chain", "draw", "task") and list(got["task"].values) == ["t0", "t1"]
    for s in range(2):
        ab = dict(zip(["a0", "a1"], ability[0, s], strict=True))
        for t in ("t0", "t1"):
            mine = [(y, n, ab[a]) for a, tt, n, y in cells if tt == t]
            want = _task_integral(mine, sd_task[0, s], sd_at[0, s])
            assert float(got.sel(task=t)[0, s]) == pytest.approx(want, abs=1e-6)


def test_a_task_alone_in_its_cluster_takes_its_cluster_effects_with_it():
    """Cluster 0 (t0, t1) is shared: its effects are conditioned on; t2 alone: its cluster's effects are integrated."""
    cells = [("a0", "t0", 4, 1), ("a1", "t0", 4, 3), ("a0", "t1", 4, 4), ("a1", "t2", 6, 2), ("a0", "t2", 3, 0)]
    post = {"ability": (("agent",), [[[0.2, -0.4]]]), "task_effect": (("task",), np.zeros((1, 1, 3))),
            "sd_task": ((), [[0.9]]), "sd_cluster": ((), [[0.8]]), "sd_agent_cluster": ((), [[0.5]]),
            "cluster_effect": (("cluster",), [[[0.6, -2.0]]]),
            "agent_cluster_effect": (("agent", "cluster"), [[[[0.1, 3.0], [-0.3, -3.0]]]])}  # fmt: skip
    got = task_log_likelihood(_count_fit("crossed", cells, post, cluster_idx=[0, 0, 1]))
    shared = {"a0": 0.2 + 0.6 + 0.1, "a1": -0.4 + 0.6 - 0.3}
    for t in ("t0", "t1"):
        want = _task_integral([(y, n, shared[a]) for a, tt, n, y in cells if tt == t], 0.9, 0.0)
        assert float(got.sel(task=t)[0, 0]) == pytest.approx(want, abs=1e-8)
    alone = {"a0": 0.2, "a1": -0.4}
    want = _task_integral([(y, n, alone[a]) for a, tt, n, y in cells if tt == "t2"], np.hypot(0.9, 0.8), 0.5)
    assert float(got.sel(task="t2")[0, 0]) == pytest.approx(want, abs=1e-6)


def _grid_posterior_draws(c, n, size, rng):
    """Draws of (ability, sd_task) from the exact posterior of the one-agent crossed model, and its exact LOO.

    Grid over ability ~ N(0, 2.5) and sd_task ~ HalfNormal(2), each task's effect integrated by
    40-node Gauss-Hermite (the audit's check, ``exp/s61/auditJ/t15_loo_exact.py``, on fewer tasks).
    """
    x, wq = np.polynomial.hermite_e.hermegauss(40)
    wq = wq / wq.sum()
    ab, sd = np.linspace(-6, 6, 161), np.linspace(0.01, 8, 160)
    a, s = np.meshgrid(ab, sd, indexing="ij")
    prior = norm.logpdf(a, 0, 2.5) + halfnorm.logpdf(s, scale=2.0)
    p = expit(a[..., None] + s[..., None] * x)
    # the binomial pmf written out (scipy's binom.pmf takes seconds on this grid), one row per count 0..n
    by_count = [np.log((comb(n, k) * p**k * (1 - p) ** (n - k) * wq).sum(-1)) for k in range(n + 1)]
    cell = np.stack([by_count[ci] for ci in c])
    tot = prior + cell.sum(0)
    exact = sum(logsumexp(tot) - logsumexp(tot - cell[i]) for i in range(len(c)))
    w = np.exp(tot - tot.max()).ravel()
    pick = rng.choice(w.size, size=size, p=w / w.sum())
    return a.ravel()[pick], s.ravel()[pick], exact


def test_loo_compare_on_tasks_matches_exact_leave_one_task_out_and_the_fit_needs_no_log_likelihood():
    """One agent, 12 tasks of 4 runs: PSIS on the integrated task log-likelihood vs exact LOO on a grid.

    The fake fits hold no log_likelihood group (a compact save): the crossed one is computed from its posterior.
    """
    rng = np.random.default_rng(3)
    c = np.array([0, 0, 1, 4, 4, 2, 0, 3, 4, 1, 0, 4])
    a, s, exact = _grid_posterior_draws(c, 4, 2000, rng)
    cells = [("a0", f"t{i}", 4, int(ci)) for i, ci in enumerate(c)]
    post = {"ability": (("agent",), a.reshape(1, -1, 1)), "sd_task": ((), s.reshape(1, -1)),
            "task_effect": (("task",), np.zeros((1, a.size, c.size)))}  # fmt: skip
    fit = _count_fit("crossed", cells, post)
    fit.attrs["hierbench_groups_dropped"] = json.dumps(["log_likelihood", "posterior_predictive"])
    table = loo_compare({"x": fit, "y": fit.copy()})
    assert table.attrs["unit"] == "task" and table["elpd_reliable"].all()
    assert table.loc["x", "elpd"] == pytest.approx(exact, abs=0.1)


def test_cells_of_a_model_independent_given_its_parameters_are_summed_per_task():
    """A beta-binomial's stored cell log-likelihoods, two agents: each task's is the sum of its cells'."""
    cells = [("a0", "t0", 2, 1), ("a1", "t0", 2, 0), ("a0", "t1", 2, 2), ("a1", "t1", 2, 1), ("a1", "t2", 2, 2)]
    ll = np.random.default_rng(0).normal(-1.0, 0.2, (1, 30, 5))
    fit = _count_fit("beta_binomial", cells, {"mu": ((), np.full((1, 30), 0.5))}, log_lik=ll)
    got = task_log_likelihood(fit)
    want = np.stack([ll[..., 0] + ll[..., 1], ll[..., 2] + ll[..., 3], ll[..., 4]], axis=-1)
    np.testing.assert_allclose(got.values, want, rtol=1e-14)


def _pair_fit(ll, wins=(3, 5, 2)):
    """A fit over a `pair` dim, as Bradley-Terry's: pointwise log-likelihood, observed wins, a posterior."""
    pairs = ["A-B", "A-C", "B-C"]
    c = {"chain": [0, 1], "draw": np.arange(ll.shape[1]), "pair": pairs}
    mu = np.random.default_rng(1).normal(size=ll.shape[:2])
    return xr.DataTree.from_dict({
        "log_likelihood": xr.Dataset({"wins": (("chain", "draw", "pair"), ll)}, coords=c),
        "observed_data": xr.Dataset({"wins": ("pair", np.asarray(wins))}, coords={"pair": pairs}),
        "posterior": xr.Dataset({"mu": (("chain", "draw"), mu)}, coords={k: c[k] for k in ("chain", "draw")}),
    })  # fmt: skip


def test_a_failed_psis_is_warned_named_and_no_weight_is_given():
    """One observation whose log-likelihood is heavy-tailed over draws: its Pareto k is far above 0.7."""
    rng = np.random.default_rng(2)
    ll = rng.normal(-1.0, 0.05, (2, 200, 3))
    ll[..., 1] = -np.exp(2.5 * rng.normal(size=(2, 200)))  # importance ratios exp(-ll): no finite moments
    good = _pair_fit(rng.normal(-1.2, 0.05, (2, 200, 3)))
    with pytest.warns(UnreliableLOOWarning, match=r"`fits\['shaky'\]` is unreliable: 1 of its 3 observations \(pairs\)"):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Estimated shape parameter")  # arviz-stats' own
            table = loo_compare({"shaky": _pair_fit(ll), "steady": good})
    assert table.loc["shaky", "n_high_k"] == 1 and not table.loc["shaky", "elpd_reliable"]
    assert table.loc["steady", "elpd_reliable"] and table["weight"].isna().all() and table["p_worse"].isna().all()
    assert table.attrs["unreliable"] == ["shaky"]


def test_after_a_compact_save_the_errors_say_the_group_was_dropped_and_how_to_keep_it():
    ll = np.random.default_rng(0).normal(-1.0, 0.1, (2, 20, 3))
    saved = _pair_fit(ll)
    del saved["log_likelihood"]
    saved.attrs["hierbench_groups_dropped"] = json.dumps(["log_likelihood", "posterior_predictive"])
    with pytest.raises(ValueError, match="no log_likelihood group: it was left out when the fit was saved") as err:
        loo_compare({"a": _pair_fit(ll), "b": saved})
    assert "groups='all'" in str(err.value) and "add_log_likelihood" in str(err.value)
    bb = _count_fit("beta_binomial", [("a0", "t0", 2, 1)], {"mu": ((), np.full((1, 5), 0.5))})
    bb.attrs["hierbench_groups_dropped"] = saved.attrs["hierbench_groups_dropped"]
    with pytest.raises(ValueError, match="groups='all'"):
        loo_compare({"a": bb, "b": bb})
    with pytest.raises(ValueError, match=r"'posterior_predictive' not in .*groups='all'.*posterior_predictive=True"):
        predictive_check(bb)
    del bb.attrs["hierbench_groups_dropped"]  # not dropped by a save: no such advice
    with pytest.raises(ValueError) as err:
        predictive_check(bb)
    assert "save_fit" not in str(err.value)


def test_a_fit_made_without_its_log_likelihood_is_named_and_told_how_to_get_it():
    # audit N 1: a beta-binomial fit at fit()'s defaults beside a crossed one gave a bare "`fit` has no ..."
    cells = [("a0", "t0", 2, 1), ("a1", "t0", 2, 0)]
    bb = _count_fit("beta_binomial", cells, {"mu": ((), np.full((1, 5), 0.5))})
    post = {"ability": (("agent",), np.zeros((1, 5, 2))), "sd_task": ((), np.ones((1, 5))),
            "task_effect": (("task",), np.zeros((1, 5, 1)))}  # fmt: skip
    crossed = _count_fit("crossed", cells, post)
    with pytest.raises(ValueError, match=r"`fits\['beta_binomial'\]` has no log_likelihood group \(hierbench.bayes.fit "
                       r"leaves it out unless log_likelihood=True\): refit with .*add_log_likelihood\(fit, model\)"):
        loo_compare({"crossed": crossed, "beta_binomial": bb})
    with pytest.raises(ValueError, match=r"^`fit` has no log_likelihood group .*log_likelihood=True"):
        task_log_likelihood(bb)


def test_auto_leaves_out_tasks_only_where_every_model_integrates_its_task_parameters():
    """A beta-binomial beside a crossed fit: tasks; beside an IRT fit, whose tasks keep parameters of their
    own (a difficulty and a slope only their cells inform), cells, the stored log-likelihoods as they are.
    """
    cells = [("a0", "t0", 2, 1), ("a1", "t0", 2, 0), ("a0", "t1", 2, 2), ("a1", "t1", 2, 1)]
    ll = np.random.default_rng(1).normal(-1.0, 0.05, (1, 200, 4))
    bb = _count_fit("beta_binomial", cells, {"mu": ((), np.full((1, 200), 0.5))}, log_lik=ll)
    irt = _count_fit("irt_2pl", cells, {"mu": ((), np.full((1, 200), 0.5))}, log_lik=ll + 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2-4 observations: arviz-stats says so
        assert loo_compare({"bb": bb, "bb2": bb.copy()}).attrs["unit"] == "task"
        by_cell = loo_compare({"bb": bb, "irt": irt})
        assert by_cell.attrs["unit"] == "cell"
        # the cells' own log-likelihoods: elpd_loo of cells with near-constant log-likelihood is their sum
        assert by_cell.loc["irt", "elpd"] == pytest.approx(ll.mean(axis=(0, 1)).sum() + 0.04, abs=0.02)
        assert loo_compare({"bb": bb, "irt": irt}, unit="task").attrs["unit"] == "task"
