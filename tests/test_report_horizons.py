"""The report's Time horizons section (hierbench.report._horizons) and its Bayes / METR halves.

The Bayesian half is checked against horizons computed by hand from posterior draws set here (the
model's rule written out with scipy's quad and brentq); the METR half against
hierbench.freq.time_horizon called directly with the report's settings.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import optimize
from scipy.special import expit

from hierbench import bayes
from hierbench import freq
from hierbench.report import SECTIONS
from hierbench.report import Report
from hierbench.report._context import _Context
from hierbench.report._context import _Skip
from hierbench.report._horizons import _sec_horizons
from hierbench.report._horizons import with_horizons

PROB, RNG, N_RES = 0.95, 3, 40


def _log(clusters: bool = True) -> xr.Dataset:
    """3 agents x 16 tasks x 3 runs, every cell run (so ``center`` is the tasks' mean log2 minutes)."""
    rng = np.random.default_rng(12)
    T = 16
    mins = np.geomspace(1, 480, T)
    eta = np.array([2.0, 3.0, 4.0])[:, None] - 0.5 * np.log2(mins) + rng.normal(0, 0.5, T)
    y = (rng.random((3, T, 3)) < expit(eta[..., None])) * 1.0
    coords = {"agent": ["a", "b", "c"], "task": [f"t{i}" for i in range(T)], "human_minutes": ("task", mins)}
    if clusters:
        coords["cluster"] = ("task", [f"f{i // 2}" for i in range(T)])
    return xr.Dataset({"score": (("agent", "task", "run"), y)}, coords=coords)


def _fake_fit(ds: xr.Dataset) -> tuple[xr.DataTree, dict]:
    """A horizon fit's posterior with draws set here: 2 chains x 40 draws of ``beta`` and ``sd``.

    Agent c's slope sits near 0, so some of its draws are not negative (the limit rule).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = bayes.build_horizon(ds, clusters=False)
    design = m.hierbench["design"]
    assert design.coef == ["agent[a]", "agent[b]", "agent[c]", "agent[a]:center(log2_minutes)",
                           "agent[b]:center(log2_minutes)", "agent[c]:center(log2_minutes)"]  # fmt: skip
    assert [t.name for t in design.random] == ["1|task", "1|agent:task"]
    rng = np.random.default_rng(5)
    C, D = 2, 40
    level = rng.normal([0.5, 1.0, -1.0], 0.3, (C, D, 3))
    slope = rng.normal([-0.6, -0.4, -0.12], [0.1, 0.1, 0.08], (C, D, 3))
    sd = np.abs(rng.normal([1.0, 0.5], 0.2, (C, D, 2)))
    post = xr.Dataset(
        {"beta": (("chain", "draw", "coef"), np.concatenate([level, slope], axis=-1)),
         "sd": (("chain", "draw", "component"), sd)},
        coords={"chain": np.arange(C), "draw": np.arange(D), "coef": design.coef, "component": ["1|task", "1|agent:task"]},
    )  # fmt: skip
    fit = xr.DataTree.from_dict({"posterior": post})
    fit.attrs = {"hierbench_model": "mixed", "hierbench_spec": json.dumps({"options": m.hierbench["options"]})}
    return fit, {"level": level, "slope": slope, "sd": sd}


def _section(fit, ds, freq_arg="auto"):
    ctx = _Context(fit=fit, data=ds, prob=PROB, bootstrap_method="bca", truth=None, subset=[],
                   say=lambda *a: None, freq=freq_arg, rng=RNG, n_resamples=N_RES)  # fmt: skip
    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _sec_horizons(ctx, rep, "horizons")
    return rep.blocks[-1], rep


#: Gauss-Hermite (probabilists') nodes and weights from numpy: E[f(Z)] = sum(w f(z)) / sqrt(2 pi)
_Z, _W = np.polynomial.hermite_e.hermegauss(120)


def _eta_p(tau: float, p: float) -> float:
    """The eta with E[expit(eta + tau Z)] = p: numpy's Gauss-Hermite rule and scipy's root finder."""
    return optimize.brentq(lambda e: (_W * expit(e + tau * _Z)).sum() / np.sqrt(2 * np.pi) - p, -60, 60, xtol=1e-13)


def _quantile(v: np.ndarray, q: float) -> float:
    """Linear quantile; an interpolation with weight on an infinite neighbour is infinite."""
    s = np.sort(v)
    h = q * (s.size - 1)
    j, t = int(np.floor(h)), h - np.floor(h)
    lo, hi = s[j], s[min(j + 1, s.size - 1)]
    return float(lo) if t == 0 else float(np.inf) if np.isinf(hi) else float(lo + (hi - lo) * t)


def test_bayes_half_equals_horizons_by_hand_from_the_draws():
    """Logit p = level + slope (x - mean x) + task terms (sd sqrt(sd_task^2 + sd_cell^2) integrated out):
    the p horizon is 2 ** (mean x + (eta_p - level) / slope); a draw with slope >= 0 is infinite where
    success at the shortest task is at least p, else 0.
    """
    ds = _log()
    fit, dr = _fake_fit(ds)
    block, _ = _section(fit, ds, freq_arg=None)
    table = block["table"]
    x = np.log2(ds["human_minutes"].values)
    level = dr["level"].reshape(-1, 3)
    slope = dr["slope"].reshape(-1, 3)
    tau = np.sqrt((dr["sd"].reshape(-1, 2) ** 2).sum(1))
    n = tau.size
    for p in (0.5, 0.8):
        eta = np.array([_eta_p(t, p) for t in tau])
        for i, a in enumerate(["a", "b", "c"]):
            b, lv = slope[:, i], level[:, i]
            with np.errstate(divide="ignore", over="ignore"):
                h = 2.0 ** (x.mean() + (eta - lv) / b)
            top = lv + b * (x.min() - x.mean()) >= eta
            h = np.where(b >= 0, np.where(top, np.inf, 0.0), h)
            row = table.loc[(a, f"{p:.0%}")]
            want = [_quantile(h, q) for q in (0.5, 0.025, 0.975)]
            got = [row["Bayes median"], row["Bayes 95% eti lower"], row["Bayes 95% eti upper"]]
            np.testing.assert_allclose(got, want, rtol=1e-5)
            assert row["Bayes limit draws"] == f"{int((b >= 0).sum())} of {n}"
    assert table.loc[("c", "50%"), "Bayes limit draws"] != f"0 of {n}"  # the limit rule is exercised
    assert "METR" not in " ".join(table.columns) and "frequentist half was not asked for (freq=None)" in block["text"]
    # a mapping that leaves the horizon out (None) is not freq=None, and the reason says which
    other, _ = _section(fit, ds, freq_arg={"horizon": None})
    assert "was not asked for (`freq['horizon']` is None)" in other["text"]


def test_metr_half_equals_freq_time_horizon_called_directly():
    ds = _log()
    fit, _ = _fake_fit(ds)
    block, rep = _section(fit, ds)
    table = block["table"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = freq.time_horizon(ds, success=(0.5, 0.8), n_resamples=N_RES, prob=PROB, rng=RNG)
    for (a, p), v in ref.estimate.to_series().items():
        row = table.loc[(a, f"{p:.0%}")]
        lo, hi = (float(ref.ci.sel(agent=a, success=p, ci_bound=k)) for k in ("lower", "upper"))
        np.testing.assert_allclose([row["METR estimate"], row["METR 95% percentile lower"],
                                    row["METR 95% percentile upper"]], [v, lo, hi], rtol=1e-12)  # fmt: skip
        assert row["METR limit resamples"] == f"{int(ref.n_undefined.sel(agent=a))} of {N_RES}"
        assert ("METR: extrapolated" in row["flag"]) == bool(ref.extrapolated.sel(agent=a, success=p))
    assert list(rep.figures) == ["time_horizons"] and "log axis" in block["figures"][0][1]
    assert "Bayes 95% eti lower" in table.columns  # both halves in one table, each interval's level and kind


def test_a_log_alone_gets_metr_horizons_and_the_section_says_what_is_missing():
    ds = _log()
    block, _ = _section(None, ds)
    assert [c for c in block["table"].columns if c.startswith("Bayes")] == []
    assert "Bayesian half: no fit given" in block["text"]
    assert "METR 95% percentile lower" in block["table"].columns
    # without task families METR's method is not run: a log alone then has nothing to show, and says why
    with pytest.raises(_Skip, match="no `cluster` coord of task families"):
        _section(None, _log(clusters=False))


def test_the_section_is_listed_only_where_there_are_horizons_and_a_fit_alone_says_why_it_is_skipped():
    ds = _log()
    fit, _ = _fake_fit(ds)
    listed = with_horizons(SECTIONS, fit, None)
    assert listed[listed.index("abilities") + 1] == "horizons" and len(listed) == len(SECTIONS) + 1
    assert with_horizons(SECTIONS, None, ds)[SECTIONS.index("abilities") + 1] == "horizons"
    other = xr.DataTree.from_dict({"posterior": xr.Dataset()})
    other.attrs = {"hierbench_model": "beta_binomial", "hierbench_spec": json.dumps({"options": {}})}
    # a fit that is not a horizon fit beside a log with minutes: METR's half from the log (audit S 2)
    assert with_horizons(SECTIONS, other, ds)[SECTIONS.index("abilities") + 1] == "horizons"
    assert with_horizons(SECTIONS, None, ds.drop_vars("human_minutes")) == SECTIONS
    with pytest.raises(_Skip, match="a saved fit does not keep"):
        _section(fit, None)


@pytest.mark.slow
def test_a_horizon_fit_report_gives_the_horizons_of_metrics_time_horizon(tmp_path):
    """End to end: a real (tiny) horizon fit, the report's table equals metrics.time_horizon on its model.

    The report is ``build``'s own, its sections cut to the horizons and the two they must fall
    between (``sections=``, listed out of order: the report writes them in its own).
    """
    from hierbench.metrics import time_horizon
    from hierbench.report import build

    ds = _log()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = bayes.build_horizon(ds, clusters=False)
        fit = bayes.fit(m, rng=13, draws=100, tune=100, chains=2, progress=False)
        ref = time_horizon(fit, m, success=(0.5, 0.8), prob=PROB)
        # the horizons section and the sections' order are read: the other frequentist results are left out
        out = build(fit, ds, path=tmp_path / "r.md", n_resamples=N_RES, rng=RNG, progress=False,
                    freq={"bootstrap": None, "compare": None, "person_fit": None, "variance": None},
                    sections=["pass-k", "horizons", "abilities"])
    md = out.read_text()
    assert "## Time horizons" in md and (tmp_path / "r_figures" / "time_horizons.png").exists()
    sec = md.split("## Time horizons")[1].split("\n## ")[0]
    rows = [line for line in sec.splitlines() if line.startswith("| a ")]
    assert len(rows) == 2
    cells = [c.strip() for c in rows[0].split("|")[1:-1]]
    assert cells[1] == "50%" and float(cells[2]) == pytest.approx(float(ref.estimate.sel(agent="a", success=0.5)), abs=6e-4)
    assert md.index("## Agent abilities") < md.index("## Time horizons") < md.index("## Reliability: pass^k")
    assert pd.notna(ref.estimate.values).all()


def test_the_horizon_figure_has_no_overlapping_text_and_draws_limits_at_the_axis_edge():
    from figure_overlap import overlaps

    from hierbench.metrics import time_horizon
    from hierbench.report._horizons import horizon_figure

    ds = _log()
    fit, _ = _fake_fit(ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        design = bayes.build_horizon(ds, clusters=False).hierbench["design"]
        b = time_horizon(fit, design, prob=PROB)
        m = freq.time_horizon(ds, n_resamples=N_RES, prob=PROB, rng=RNG)
    fig, caption = horizon_figure({"Bayes": b, "METR": m}, ds)
    assert overlaps(fig) == []
    lo, hi = fig.axes[0].get_xlim()
    assert fig.axes[0].get_xscale() == "log" and lo > 0 and np.isfinite(hi)
    assert "95% eti" in caption and "95% percentile" in caption and "arrow at its edge" in caption


def test_a_log_whose_minutes_are_not_valid_is_said_in_the_section_not_raised():
    ds = _log()
    bad = ds.assign_coords(human_minutes=("task", np.r_[np.nan, ds["human_minutes"].values[1:]]))
    with pytest.raises(_Skip, match=r"METR's method: `human_minutes` must be positive and finite; tasks \['t0'\]"):
        _section(None, bad)


def test_the_horizons_text_says_what_the_curve_check_found():
    """METR's paragraph names the agents whose logistic curve the fit check flags, or says none was and
    that no flag is not proof of fit; a result without a check adds nothing.
    """
    from types import SimpleNamespace

    import xarray as xr

    from hierbench.report._horizons import _fit_check_text

    def check(misfit):
        return xr.Dataset({"p_holm": ("agent", [0.01, 0.9]), "misfit": ("agent", misfit)},
                          coords={"agent": ["a", "b"]}, attrs={"n_bins": 4, "alpha": 0.05})  # fmt: skip

    assert _fit_check_text(SimpleNamespace(fit_check=None)) == ""
    flagged = _fit_check_text(SimpleNamespace(fit_check=check([True, False])))
    assert "4 bins of task length" in flagged and "Holm over the agents at 0.05" in flagged
    assert "the curve misfits a (Holm p 0.01): read their horizons" in flagged and "b (" not in flagged
    clean = _fit_check_text(SimpleNamespace(fit_check=check([False, False])))
    assert "no agent's curve departs detectably" in clean and "not proof of fit" in clean
