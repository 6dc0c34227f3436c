"""A saved fit of every zoo model is the fit in memory: same tree, and ArviZ 1.x gives the same answers.

For each registered model (and the horizon model built on the formula
model) a small fit is saved with every group (netCDF and zarr) and loaded
back. The reference is always the fit in memory: the loaded tree must hold
the same groups, variables, coords, dtypes, values and attrs, in the same
order, its whole-tree summary must be the fresh fit's, and every ArviZ call a
user makes (arviz-stats' summary, ess, rhat, mcse, loo, compare; arviz-plots'
trace, forest, dist, rank, ess, energy and predictive plots) must run on it and
give what it gives on the fresh fit, down to the coordinates of every line
drawn (on one of the two formats per model, alternated across the models).
"""

from __future__ import annotations

import math
import warnings

import matplotlib as mpl
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.io import load_fit
from hierbench.io import save_fit
from hierbench.testing import simulate_eval

mpl.use("Agg")

#: every model of the registry, and the horizon model (the formula model with its own formula)
MODELS = ("beta_binomial", "bradley_terry", "crossed", "irt_1pl", "irt_2pl", "mixed", "horizon")
#: the saved format whose loaded fit also runs the whole ArviZ battery (every model is saved and
#: compared in both): alternated, so that each format is plotted, and both the cell models
#: (crossed, IRT) and the formula models (mixed, horizon) meet each format
BATTERY_FORMAT = {"beta_binomial": "nc", "bradley_terry": "zarr", "crossed": "zarr", "irt_1pl": "nc",
                  "irt_2pl": "zarr", "mixed": "zarr", "horizon": "nc"}  # fmt: skip


def _model(name: str):
    import hierbench.bayes as hb
    from hierbench.data import to_pairwise

    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, n_clusters=3, sd_cluster=0.5, rng=0)
    if name == "bradley_terry":
        return hb.build_bradley_terry(to_pairwise(ds))
    if name == "horizon":
        minutes = 2.0 ** np.linspace(0, 6, ds.sizes["task"])
        return hb.build_horizon(ds.assign_coords(human_minutes=("task", minutes)))
    if name == "crossed":
        return hb.build_crossed(ds, clusters=True)
    return hb.get_model(name).builder(ds)


def _fresh(name: str) -> xr.DataTree:
    from hierbench.bayes import ConvergenceWarning
    from hierbench.bayes import fit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 100 draws: the checks may fail
        return fit(_model(name), draws=100, tune=100, chains=2, rng=1, log_likelihood=True, progress=False)


# ---------------------------------------------------------------- the tree


def _same_attr(a: object, b: object) -> bool:
    """Equal attrs; a NaN equals a NaN, and a file's numpy scalar its Python number."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, dict, str)) or isinstance(b, (list, dict, str)):
        return type(a) is type(b) and a == b
    return bool(np.asarray(a == b).all())


def _same_values(a: xr.Variable, b: xr.Variable) -> bool:
    """Equal values; in text, None and NaN are different values (xarray counts both as missing)."""
    if a.dtype.kind in "biufc":
        return np.array_equal(a.values, b.values, equal_nan=True)
    key = [(type(v).__name__ if v is None or isinstance(v, float) else "", str(v)) for v in a.values.ravel()]
    return key == [(type(v).__name__ if v is None or isinstance(v, float) else "", str(v)) for v in b.values.ravel()]


def assert_same_tree(back: xr.DataTree, fresh: xr.DataTree) -> None:
    """``back`` holds ``fresh``'s groups, variables, coords, dims, dtypes, values and attrs, in order.

    Every node of the tree: the root, the groups and the groups within them (``diagnostics/r_hat``).
    """
    assert list(back.children) == list(fresh.children)
    assert [node.path for node in back.subtree] == [node.path for node in fresh.subtree]
    assert list(back.attrs) == list(fresh.attrs)
    for k, v in fresh.attrs.items():
        assert _same_attr(back.attrs[k], v), (k, back.attrs[k], v)
    root_back, root_fresh = back.to_dataset(inherit=False), fresh.to_dataset(inherit=False)
    xr.testing.assert_identical(root_back.drop_attrs(), root_fresh.drop_attrs())
    for node in fresh.subtree:
        if node is not fresh:
            assert_same_group(back, fresh, node.relative_to(fresh))


def assert_same_group(back: xr.DataTree, fresh: xr.DataTree, group: str) -> None:
    """One group of ``back`` is ``fresh``'s: variables, coords, dims, dtypes, values, attrs, in order."""
    a, b = fresh[group].to_dataset(inherit=False), back[group].to_dataset(inherit=False)
    assert list(b.variables) == list(a.variables), group
    assert list(b.coords) == list(a.coords), group
    assert dict(b.sizes) == dict(a.sizes) and list(b.dims) == list(a.dims), group
    assert b.attrs.keys() == a.attrs.keys(), group
    for k, v in a.attrs.items():
        assert _same_attr(b.attrs[k], v), (group, k, b.attrs[k], v)
    for name, var in a.variables.items():
        got = b.variables[name]
        where = f"{group}/{name}"
        assert got.dims == var.dims, where
        assert got.dtype == var.dtype, (where, got.dtype, var.dtype)
        assert _same_values(got, var), where
        assert got.attrs.keys() == var.attrs.keys(), where
        assert all(_same_attr(got.attrs[k], v) for k, v in var.attrs.items()), where
    xr.testing.assert_identical(b, a)


def test_a_saved_tree_keeps_order_text_kinds_and_missing_labels(tmp_path):
    """No sampler: the pieces of a fit that files lose (zarr's order, object text, None) come back."""
    rng = np.random.default_rng(0)
    agents = np.array(["b_agent", "a_agent"], dtype=object)  # PyMC keeps labels as Python objects
    post = xr.Dataset(
        {"z_theta": (("chain", "draw", "agent"), rng.normal(size=(2, 5, 2))),
         "a_sigma": (("chain", "draw"), rng.gamma(2.0, size=(2, 5)))},
        coords={"chain": [0, 1], "draw": np.arange(5), "agent": agents},
    )  # fmt: skip
    msg = np.full((2, 5), None, dtype=object)  # nutpie's, when no draw diverged
    stats = xr.Dataset({"energy": (("chain", "draw"), rng.normal(size=(2, 5))),
                        "divergence_message": (("chain", "draw"), msg)})  # fmt: skip
    # cell labels as the fit writes them: astype(str), which makes integer task labels <U21
    obs = xr.Dataset({"y": ("cell", [1, 0, 2])},
                     coords={"cell": [0, 1, 2], "cell_agent": ("cell", np.array(["b", "a", "b"])),
                             "cell_task": ("cell", np.array([3, 1, 2]).astype(str))})  # fmt: skip
    tree = xr.DataTree.from_dict({"sample_stats": stats, "posterior": post, "observed_data": obs})
    for ext in ("nc", "zarr"):
        back = load_fit(save_fit(tree, tmp_path / f"t.{ext}", groups="all"))
        assert_same_tree(back, tree)
        assert back["sample_stats"]["divergence_message"].values[0, 0] is None
        assert back["posterior"]["agent"].dtype == object
        assert back["observed_data"]["cell_task"].dtype == np.dtype("<U21")
        # what hierbench's own code does with the cell labels (zarr reads numpy's StringDType)
        assert np.asarray(back["observed_data"]["cell_agent"].values).astype(str).tolist() == ["b", "a", "b"]
        # a loaded fit saved again is still the fit
        assert_same_tree(load_fit(save_fit(back, tmp_path / f"again.{ext}", groups="all")), tree)
    # a store xarray wrote alone (no layout recorded): its text still reads back as numpy text
    tree.to_zarr(tmp_path / "plain.zarr", consolidated=False)
    plain = load_fit(tmp_path / "plain.zarr")
    assert plain["observed_data"]["cell_agent"].dtype.kind == "U"
    assert plain["observed_data"]["cell_agent"].values.tolist() == ["b", "a", "b"]


# ---------------------------------------------------------------- what ArviZ gives


def _drawn(before: set[int]) -> list:
    """What the figures opened since ``before`` show: every line's points, collection, text.

    Only those: another test in the same worker may have left figures open.
    """
    import matplotlib.pyplot as plt

    out = []
    new = [num for num in plt.get_fignums() if num not in before]
    for num in new:
        for ax in plt.figure(num).axes:
            out.append(("axis", ax.get_title(), ax.get_xlabel(), ax.get_ylabel()))
            out += [("line", np.asarray(ln.get_xydata(), float)) for ln in ax.get_lines()]
            out += [("coll", np.asarray(c.get_offsets(), float)) for c in ax.collections]
            out += [("path", np.asarray(p.vertices, float)) for c in ax.collections for p in c.get_paths()]
            out += [("text", t.get_text()) for t in ax.texts]
            out += [("tick", t.get_text()) for t in ax.get_xticklabels() + ax.get_yticklabels()]
    for num in new:
        plt.close(num)
    return out


def _assert_same_drawing(got: list, want: list, what: str) -> None:
    assert len(got) == len(want), what
    for g, w in zip(got, want, strict=True):
        assert g[0] == w[0], what
        if isinstance(w[1], np.ndarray):
            np.testing.assert_allclose(g[1], w[1], rtol=1e-12, equal_nan=True, err_msg=what)
        else:
            assert g == w, what


def _arviz(dt: xr.DataTree, var_names: list[str]) -> dict:
    """The ArviZ calls a user makes on a fit, and what each gives (plots: what they drew)."""
    import arviz_plots as azp
    import arviz_stats as azs

    out = {
        "summary": azs.summary(dt, var_names=var_names),
        "ess": azs.ess(dt, var_names=var_names),
        "rhat": azs.rhat(dt, var_names=var_names),
        "mcse": azs.mcse(dt, var_names=var_names),
        "loo": azs.loo(dt, pointwise=True),
        "compare": azs.compare({"all": dt, "half": dt.isel(draw=slice(0, 50))}),
    }
    # the plots draw the first two labels of each dimension: one panel draws what another does,
    # and 12 tasks' panels took most of the time; selecting labels reads the saved coords too
    post = dt["posterior"].to_dataset()[var_names]
    sel = {d: post[d].values[:2].tolist() for d in post.dims if d not in ("chain", "draw")}
    picked = {"var_names": var_names[:2], "coords": {d: v for d, v in sel.items() if d in post[var_names[:2]].dims}}
    plots = {"plot_trace_dist": picked, "plot_forest": {"var_names": var_names, "coords": sel},
             "plot_dist": picked, "plot_rank": picked, "plot_ess": picked, "plot_energy": {},
             "plot_ppc_dist": {}}  # fmt: skip
    import matplotlib.pyplot as plt

    for name, kw in plots.items():
        before = set(plt.get_fignums())
        getattr(azp, name)(dt, backend="matplotlib", **kw)
        out[name] = _drawn(before)
        assert any(item[0] in ("line", "coll", "path") for item in out[name]), name  # it drew something
    return out


def _assert_same_arviz(got: dict, want: dict, what: str) -> None:
    import arviz_stats as azs

    assert got.keys() == want.keys()
    for name, w in want.items():
        g = got[name]
        where = f"{what}: {name}"
        if isinstance(w, pd.DataFrame):
            pd.testing.assert_frame_equal(g, w, check_exact=True, obj=where)
        elif isinstance(w, xr.Dataset):
            xr.testing.assert_identical(g, w)
        elif isinstance(w, azs.ELPDData):
            assert (g.elpd, g.se, g.p, g.n_data_points) == (w.elpd, w.se, w.p, w.n_data_points), where
            xr.testing.assert_identical(g.pareto_k, w.pareto_k)
            xr.testing.assert_identical(g.elpd_i, w.elpd_i)
        else:
            _assert_same_drawing(g, w, where)


@pytest.mark.slow  # one small fit (compiled once, then cached on disk) and the ArviZ calls on two trees
@pytest.mark.parametrize("name", MODELS)
# ArviZ's notes on a 2 x 100-draw fit of 0/1/2/3 counts, the same on every tree
@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
@pytest.mark.filterwarnings("ignore:Variables .* look discrete:UserWarning")
def test_saved_fit_is_the_fresh_fit_for_arviz(name, tmp_path):
    import arviz_stats as azs

    fresh = _fresh(name)
    var_names = list(fresh["posterior"].data_vars)[:4]
    want = _arviz(fresh, var_names)
    # every variable, as a user's first summary takes them (the formula models too: their term sds
    # alone are `sd(1|task)`, apart from `sd`'s element labelled `sd[1|task]`)
    whole = azs.summary(fresh)
    assert whole.index.is_unique
    for ext in ("nc", "zarr"):
        back = load_fit(save_fit(fresh, tmp_path / f"fit.{ext}", groups="all"))
        assert_same_tree(back, fresh)
        pd.testing.assert_frame_equal(azs.summary(back), whole, check_exact=True)
        # the tree above is the fresh one (every value, dtype, attr and order: all ArviZ reads), so
        # the battery on one loaded copy per model checks what it did on both; the formats alternate
        if ext == BATTERY_FORMAT[name]:
            _assert_same_arviz(_arviz(back, var_names), want, f"{name} {ext}")
    # saved compact (the default): the groups it keeps are the fresh fit's
    compact = load_fit(save_fit(fresh, tmp_path / "compact.nc"))
    assert "log_likelihood" not in compact.children and "posterior" in compact.children
    for group in compact.children:
        assert_same_group(compact, fresh, group)


# ---------------------------------------------------------------- the report of a saved fit


@pytest.mark.slow  # one small crossed fit and two reports
@pytest.mark.filterwarnings("ignore::hierbench.bayes.ConvergenceWarning")
def test_report_of_a_saved_zarr_fit_is_the_report_of_the_fit_in_memory(tmp_path, capsys):
    """The report from a saved fit equals the report from the fit in memory, section for section.

    On a zarr fit its predictive check failed ("cannot cast dtype StringDType()"); with another
    log than the fit's the command refuses, naming both. The saved fit's report is written by the
    command line (which loads it with ``load_fit``, as ``build`` given its path does): one report
    checks both that it is the fresh fit's and that the command takes the fit's own log.
    """
    from hierbench.bayes import build_crossed
    from hierbench.bayes import fit
    from hierbench.cli import main
    from hierbench.data import to_records
    from hierbench.report import build

    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=0)
    log = tmp_path / "runs.csv"
    to_records(ds).to_csv(log, index=False)
    fresh = fit(build_crossed(ds), draws=100, tune=100, chains=2, rng=1, progress=False)
    saved = save_fit(fresh, tmp_path / "fit.zarr", groups="all")
    (tmp_path / "fresh").mkdir()
    (tmp_path / "saved").mkdir()
    want = build(fresh, log, path=tmp_path / "fresh" / "report.md", n_resamples=199, rng=0, progress=False).read_text()
    # through the command line, with build's seed and the log's run and error columns named (build
    # reads them by their names; unnamed, the reader flags them in the report)
    got = tmp_path / "saved" / "report.md"
    assert main(["report", str(saved), "--data", str(log), "-o", str(got), "--resamples", "199", "--seed", "0",
                 "--quiet", "--run", "run", "--error", "error"]) == 0  # fmt: skip
    assert got.read_text() == want
    ppc = want.split("## Posterior predictive checks", 1)[1].split("\n## ", 1)[0]
    assert "not computed" not in ppc and "rootogram" in ppc
    # the fit's own log works (above); another log is refused naming both
    other_ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=1)
    other = tmp_path / "other.csv"
    to_records(other_ds).to_csv(other, index=False)
    capsys.readouterr()
    assert main(["report", str(saved), "--data", str(other), "-o", str(tmp_path / "r2.html"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "not the same evaluation" in err and "'" + str(saved) + "'" in err and "'" + str(other) + "'" in err
    assert not (tmp_path / "r2.html").exists()


@pytest.mark.parametrize("ext", ["nc", "zarr"])
def test_plain_open_datatree_gives_arviz_a_bool_diverging(tmp_path, ext):
    """A saved fit opened as the README says, ``xr.open_datatree`` alone: ``diverging`` came back int8
    (hierbench's own bool marker, undone only by load_fit), and arviz-plots' plot_trace_dist, which
    masks the draws with it, raised IndexError on any fit with a divergence.
    """
    import arviz_plots as azp

    g = np.random.default_rng(0)
    div = np.zeros((2, 60), dtype=bool)
    div[0, [5, 17]] = True
    dt = xr.DataTree.from_dict({
        "/posterior": xr.Dataset({"mu": (("chain", "draw"), g.normal(size=(2, 60)))},
                                 coords={"chain": [0, 1], "draw": np.arange(60)}),
        "/sample_stats": xr.Dataset({"diverging": (("chain", "draw"), div)},
                                    coords={"chain": [0, 1], "draw": np.arange(60)}),
    })  # fmt: skip
    path = save_fit(dt, tmp_path / f"fit.{ext}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on consolidated metadata
        plain = xr.open_datatree(path, engine="zarr" if ext == "zarr" else None)
    assert plain["sample_stats"]["diverging"].dtype == bool
    np.testing.assert_array_equal(plain["sample_stats"]["diverging"].values, div)
    assert load_fit(path)["sample_stats"]["diverging"].dtype == bool
    with mpl.rc_context({"backend": "Agg"}):
        azp.plot_trace_dist(plain, backend="matplotlib")
    import matplotlib.pyplot as plt

    plt.close("all")


def test_a_formula_fit_names_each_observations_agent_task_and_run():
    """An audit: a formula fit's observed_data and log_likelihood had only obs = 0..179 and its
    posterior_predictive an obs dim without labels, so loo's Pareto k or a PPC by agent could not be
    traced to runs without the data. Each observation now carries obs_agent, obs_task and obs_run,
    checked here against the data: the score at those labels is the observation's own.
    """
    from hierbench.bayes import build_mixed
    from hierbench.bayes._models._formula_model import _run_scores
    from hierbench.bayes._sampler._fit import _decorate

    g = np.random.default_rng(2)
    s = g.choice([0.0, 0.3, 0.7, 1.0], size=(3, 6, 3))
    s[0, 0, 1] = np.nan  # a gap inside a cell: its runs are 0 and 2
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)},
                    coords={"agent": ["a", "b", "c"], "task": [f"t{i}" for i in range(6)], "run": [0, 1, 2]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build_mixed(ds, "score ~ (1|agent) + (1|task)")
    info = model.hierbench
    obs = info["obs_coords"]
    scores = _run_scores(info["design"], ds)[0]
    assert len(scores) == int(np.isfinite(s).sum()) == len(obs["obs_agent"])
    for i in range(len(scores)):
        at = {"agent": obs["obs_agent"][i], "task": obs["obs_task"][i], "run": int(obs["obs_run"][i])}
        assert float(ds["score"].sel(at)) == scores[i], at
    assert "1" not in obs["obs_run"][(obs["obs_agent"] == "a") & (obs["obs_task"] == "t0")]
    tree = xr.DataTree.from_dict({"log_likelihood": xr.Dataset({"y": (("chain", "draw", "obs"), np.zeros((1, 2, len(scores))))})})
    got = _decorate(tree, info)["log_likelihood"].to_dataset()
    assert list(got["obs_task"].values) == list(obs["obs_task"])
