"""Audit S18, findings 2, 3 and 7: checks that could not be made are never passed, recorded
diagnostics state the draws they are of (and are recomputed or called stale when the draws were
cut), and ``sampler_settings`` records the acceptance target the sampler ran at.

Hand-built DataTrees (no sampling). Expected values come from arviz-stats on the same draws, from
chains built to disagree (means 0 and 50), and from the samplers' own documentation.
"""

from __future__ import annotations

import json
import re
import warnings

import arviz_stats as azs
import numpy as np
import pytest
import xarray as xr

from hierbench.bayes import ConvergenceWarning
from hierbench.bayes import compute_diagnostics


def _tree(x: np.ndarray, stats: tuple[str, ...] = ("diverging", "energy"), attrs: dict | None = None) -> xr.DataTree:
    """A posterior ``ability`` of draws ``x`` (chain, draw) and the sampler stats named in ``stats``."""
    c, d = x.shape
    rng = np.random.default_rng(5)
    made = {"diverging": np.zeros((c, d), bool), "energy": rng.normal(size=(c, d)),
            "psis_log_weight": np.full((c, d), -np.log(c * d))}  # fmt: skip
    groups = {"posterior": xr.Dataset({"ability": (("chain", "draw"), x)})}
    if stats:
        groups["sample_stats"] = xr.Dataset({k: (("chain", "draw"), made[k]) for k in stats})
    dt = xr.DataTree.from_dict(groups)
    dt.attrs.update(attrs or {})
    return dt


def _apart(draws: int) -> np.ndarray:
    """Two chains far apart: means 0 and 50, sd 1."""
    rng = np.random.default_rng(0)
    return np.stack([rng.normal(0, 1, draws), rng.normal(50, 1, draws)])


# ---------------------------------------------------------------- finding 3


def test_chains_50_sd_apart_with_3_draws_fail_r_hat_as_not_computable():
    """ArviZ's R-hat is NaN under 4 draws per chain; the same chains at 4 draws have R-hat ~2.

    Before: every element was skipped, so 0 elements were checked and the fit was "converged".
    """
    x = _apart(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        post3 = xr.Dataset({"ability": (("chain", "draw"), x[:, :3])})
        assert np.isnan(float(azs.rhat(post3)["ability"]))  # independent: nothing to compute
        assert float(azs.rhat(xr.Dataset({"ability": (("chain", "draw"), x)}))["ability"]) > 1.5
    with pytest.warns(ConvergenceWarning, match="R-hat not computable"):
        out = compute_diagnostics(_tree(x[:, :3]))
    a = out.attrs
    assert a["diag_converged"] == 0 and a["diag_verdict"] == "not converged"
    fails = json.loads(a["diag_failures"])
    assert fails[0].startswith("R-hat not computable") and "at least 4 draws per chain" in fails[0]
    assert "3 per chain in 2 chains" in fails[0] and "refit with more draws" in fails[0]
    assert [f.split(":")[0] for f in fails[1:]] == ["ESS_bulk not computable", "ESS_tail not computable"]
    checks = {c["check"]: c for c in json.loads(a["diag_checks"])}
    assert not checks["r_hat"]["passed"] and checks["r_hat"]["n_elements"] == 0
    assert not checks["ess_bulk"]["passed"] and not checks["ess_tail"]["passed"]


def test_one_chain_fails_r_hat_saying_it_compares_chains():
    """arviz-stats gives no R-hat for one chain; a one-chain NUTS fit is not shown to have converged."""
    x = np.random.default_rng(1).normal(size=(1, 400))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(float(azs.rhat(xr.Dataset({"ability": (("chain", "draw"), x)}))["ability"]))
        out = compute_diagnostics(_tree(x), warn=False)
    fails = json.loads(out.attrs["diag_failures"])
    assert out.attrs["diag_converged"] == 0
    assert fails == [
        "R-hat not computable: no element has a finite R-hat (R-hat compares chains and this fit has 1 "
        "chain: refit with 2 or more chains (hierbench.bayes.fit runs 4 by default))"
    ]


def test_no_sample_stats_is_not_fully_checked_never_zero_divergences_passed():
    """Before: "divergences 0.0 passed; bfmi nan passed; diag_converged 1" with nothing counted."""
    x = np.random.default_rng(2).normal(size=(4, 500))
    assert float(azs.rhat(xr.Dataset({"ability": (("chain", "draw"), x)}))["ability"]) < 1.01  # mixed
    with pytest.warns(ConvergenceWarning, match="fit not fully checked: divergent transitions not checked"):
        out = compute_diagnostics(_tree(x, stats=()))
    a = out.attrs
    assert a["diag_converged"] == 0 and a["diag_verdict"] == "not fully checked"
    assert np.isnan(a["diag_n_divergent"]) and np.isnan(a["diag_min_bfmi"])
    checks = {c["check"]: c for c in json.loads(a["diag_checks"])}
    for name in ("divergences", "bfmi"):
        assert checks[name]["not_checked"] and not checks[name]["passed"] and np.isnan(checks[name]["value"])
    assert checks["r_hat"]["passed"] and checks["ess_bulk"]["passed"]
    assert "no sample_stats group" in json.loads(a["diag_failures"])[0]


def test_sample_stats_without_energy_leave_e_bfmi_not_checked():
    x = np.random.default_rng(3).normal(size=(4, 500))
    out = compute_diagnostics(_tree(x, stats=("diverging",)), warn=False)
    assert out.attrs["diag_verdict"] == "not fully checked" and out.attrs["diag_n_divergent"] == 0
    assert json.loads(out.attrs["diag_failures"]) == [
        "E-BFMI not checked: its sample_stats hold no `energy`: keep it with the posterior, or refit "
        "with hierbench.bayes.fit"
    ]


def test_an_approximate_fit_is_not_fully_checked_and_named_its_own_check():
    """One chain of independent draws from q: R-hat, divergences and E-BFMI do not apply (not "refit with
    more chains"); its ESS is checked as for any draws, against arviz-stats.
    """
    x = np.random.default_rng(4).normal(size=(1, 1000))
    dt = _tree(x, stats=("psis_log_weight",),
               attrs={"approximate": 1, "method": "advi", "psis_khat": 0.4, "psis_khat_threshold": 0.7})
    out = compute_diagnostics(dt, warn=False)
    a = out.attrs
    assert a["diag_verdict"] == "not fully checked" and a["diag_converged"] == 0
    fails = json.loads(a["diag_failures"])
    assert len(fails) == 3 and all(" not checked: an approximate (advi) fit" in f for f in fails)
    assert "its own check is the PSIS k-hat (Yao et al. 2018): 0.40 against the threshold 0.70" in fails[0]
    assert "refit" not in " ".join(fails)
    ess = float(azs.ess(dt["posterior"].to_dataset(), method="bulk")["ability"])
    assert a["diag_min_ess_bulk"] == pytest.approx(ess, rel=1e-9)


def test_report_verdict_and_rows_never_say_every_check_passes_for_unmade_checks():
    from hierbench.report._convergence import _check_rows
    from hierbench.report._convergence import _verdict

    x = np.random.default_rng(2).normal(size=(4, 500))
    out = compute_diagnostics(_tree(x, stats=()), warn=False)
    table = _check_rows(json.loads(out.attrs["diag_checks"]), {}, 0.01)
    assert table.loc["divergent transitions", "value"] == "not recorded"
    assert table.loc["divergent transitions", "passes"] == "not checked"
    verdict, note = _verdict(json.loads(out.attrs["diag_failures"]), table, {}, 0.01,
                             unchecked=out.attrs["diag_verdict"] == "not fully checked")  # fmt: skip
    assert verdict == "not fully checked" and "every check passes" not in verdict
    assert note.startswith("Not every convergence check could be made: divergent transitions not checked")
    # 3 draws: the R-hat row reads "not computed" and fails
    short = compute_diagnostics(_tree(_apart(3)), warn=False)
    rows = _check_rows(json.loads(short.attrs["diag_checks"]), {}, 0.01)
    assert rows.loc["R-hat (rank-normalised split), largest", "value"] == "not computed"
    assert rows.loc["R-hat (rank-normalised split), largest", "passes"] == False  # noqa: E712 (numpy bool)


def test_console_lines_say_not_computed_and_not_recorded():
    from hierbench._console import convergence_line
    from hierbench._console import diagnostics_line

    short = compute_diagnostics(_tree(_apart(3)), warn=False)
    line = diagnostics_line(short)
    assert line.startswith("NOT converged: R-hat not computed (no element has a finite R-hat), min ESS bulk "
                           "not computed / tail not computed, 0 divergences")  # fmt: skip
    bare = compute_diagnostics(_tree(np.random.default_rng(2).normal(size=(4, 500)), stats=()), warn=False)
    assert diagnostics_line(bare).startswith("NOT fully checked: max R-hat")
    assert diagnostics_line(bare).endswith("divergences not recorded, E-BFMI not recorded")
    assert convergence_line(bare).startswith("the fit was not fully checked: divergent transitions not checked")


# ---------------------------------------------------------------- finding 2


def _cut_fit() -> tuple[xr.DataTree, xr.DataTree]:
    """A fit diagnosed on 2 chains x 400 well-mixed draws, then cut to its first 10 draws per chain."""
    x = np.random.default_rng(6).normal(size=(2, 400))
    full = compute_diagnostics(_tree(x), warn=False)
    return full, full.isel(draw=slice(0, 10))


def test_diagnostics_record_the_chains_and_draws_they_were_computed_on():
    full, _ = _cut_fit()
    assert (full.attrs["diag_n_chains"], full.attrs["diag_n_draws"]) == (2, 400)
    assert dict(full["diagnostics"].attrs) == {"n_chains": 2, "n_draws": 400}


def test_report_recomputes_checks_of_cut_draws_and_says_so():
    """Before: the report showed the 400 draws' ESS (about 800) for a posterior of 10 draws per chain."""
    from hierbench.report._convergence import _diag_checks

    full, cut = _cut_fit()
    assert full.attrs["diag_converged"] == 1 and cut.attrs["diag_converged"] == 1  # the recorded verdict
    checks, failures = _diag_checks(cut)  # the rows and failures the section shows
    ess = {c["check"]: c["value"] for c in checks}
    post = cut["posterior"].to_dataset()
    assert ess["ess_bulk"] == pytest.approx(float(azs.ess(post, method="bulk")["ability"]), rel=1e-9)
    assert ess["ess_tail"] == pytest.approx(float(azs.ess(post, method="tail")["ability"]), rel=1e-9)
    assert ess["ess_bulk"] < 200 and failures == [f"min ESS_bulk {ess['ess_bulk']:.0f} < 200 (at `ability`)",
                                                  f"min ESS_tail {ess['ess_tail']:.0f} < 200 (at `ability`)"]
    from hierbench.report._convergence import _diagnosed

    fit, said = _diagnosed(cut)
    assert fit.attrs["diag_converged"] == 0 and fit.attrs["diag_n_draws"] == 10
    assert said == ("The convergence checks saved with this fit were computed on 2 chains x 400 draws, but its "
                    "posterior holds 2 x 10 (draws cut after fitting): every check below is recomputed here "
                    "on the draws there are.")  # fmt: skip
    # an uncut fit, and a fit recording no counts (an older file), are read as they are
    assert _diagnosed(full) == (full, "")
    old = cut.copy()
    del old.attrs["diag_n_chains"], old.attrs["diag_n_draws"]
    assert _diagnosed(old) == (old, "")


def test_console_calls_recorded_checks_of_cut_draws_stale():
    """Before: the recorded "converged" was repeated (convergence_line gave None)."""
    from hierbench._console import convergence_line
    from hierbench._console import diagnostics_line

    full, cut = _cut_fit()
    assert convergence_line(full) is None
    line = convergence_line(cut)
    assert line is not None and line.startswith(
        "the convergence checks saved with this fit are stale: they were computed on 2 chains x 400 draws, "
        "but its posterior holds 2 x 10"
    )
    assert diagnostics_line(cut) == line
    old = cut.copy()
    del old.attrs["diag_n_chains"]
    assert convergence_line(old) is None  # no record: as before


# ---------------------------------------------------------------- finding 7


def _documented_default(doc: str, pattern: str) -> float:
    return float(re.search(pattern, doc).group(1))


def test_sampler_settings_record_the_samplers_own_target_accept():
    """Independent: the default each sampler documents (nutpie.sample, pymc.NUTS)."""
    import nutpie
    import pymc as pm

    from hierbench.bayes._sampler._fit import _settings

    def settings(sampler, target_accept=None, info=None, kw=None):
        return _settings(info or {}, sampler, 100, 100, 2, target_accept, "map", 400, 2000, kw or {})

    nut = _documented_default(nutpie.sample.__doc__, r"target_accept: float between 0 and 1, default ([0-9.]+)")
    hmc = _documented_default(pm.NUTS.__init__.__doc__, r"target_accept: float, default ([0-9.]+)")
    assert settings("nutpie")["target_accept"] == nut == 0.8
    assert settings("pymc")["target_accept"] == hmc
    assert settings("nutpie", info={"sampler_defaults": {"target_accept": 0.9}})["target_accept"] == 0.9
    assert settings("nutpie", 0.95, info={"sampler_defaults": {"target_accept": 0.9}})["target_accept"] == 0.95
    assert settings("pymc", kw={"nuts": {"target_accept": 0.93}})["target_accept"] == 0.93
    with pytest.raises(ValueError, match=r"`target_accept` must be given once: got target_accept=0\.9 and nuts="):
        settings("pymc", 0.9, kw={"nuts": {"target_accept": 0.93}})


def test_pymc_gets_target_accept_once_when_nuts_holds_it(monkeypatch):
    import pymc as pm

    from hierbench.bayes._sampler import _fit

    seen = {}

    def fake_sample(**kw):
        seen.update(kw)
        return xr.DataTree.from_dict({"posterior": xr.Dataset({"a": (("chain", "draw"), np.zeros((1, 2)))})})

    monkeypatch.setattr(pm, "sample", fake_sample)
    kw = {"nuts": {"target_accept": 0.93}}
    settings = _fit._settings({}, "pymc", 2, 2, 1, None, "map", 400, 2000, kw)
    _fit._run_pymc(None, "pymc", settings, 0, False, kw)
    assert "target_accept" not in seen and seen["nuts"] == {"target_accept": 0.93}
    seen.clear()
    _fit._run_pymc(None, "pymc", _fit._settings({}, "pymc", 2, 2, 1, None, "map", 400, 2000, {}), 0, False, {})
    assert seen["target_accept"] == 0.8


def test_every_report_section_reads_the_recomputed_verdict_of_cut_draws(tmp_path):
    # the checklist's "converged" row read the recorded verdict (yes) beside a Convergence section
    # that recomputed it (not converged); the report now recomputes once, for every section
    from hierbench.report import build

    _, cut = _cut_fit()
    path = tmp_path / "r.md"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build(cut, path=path, sections=["convergence", "checklist"], n_resamples=9)
    text = path.read_text()
    assert "**Verdict: not converged.** The convergence checks saved with this fit were computed on 2 chains" in text
    row = next(line for line in text.splitlines() if line.startswith("| converged"))
    assert "NO: " in row and "min ESS_bulk" in row
