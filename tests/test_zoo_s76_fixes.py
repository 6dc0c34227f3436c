"""Audit s76 Z 2-5: what the zoo's records keep, the centring reasons, the advice after a short run.

No test here samples: the fit is replaced by a hand-built tree, the diagnostics run on hand-made
chains, and the builders only build.
"""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pytest
import xarray as xr

from hierbench.bayes import _zoo
from hierbench.bayes import build_crossed
from hierbench.bayes import build_mixed
from hierbench.bayes import compute_diagnostics
from hierbench.bayes._checks._diagnostics import ConvergenceWarning

FLAGGED = {"Agent X (2025)": 500}
AS_RUN = {"chains": 4, "draws": 200, "draws_rule": "fixed", "init": "support_point", "init_requested": "map",
          "target_accept": 0.9, "tune": 400}  # fmt: skip


def _fake_fit(calls):
    """A stand-in for ``fit``: records its call and returns a tree with the attrs ``fit`` sets."""

    def fit(model, *, rng, **settings):
        calls.append((model, rng, settings))
        post = xr.Dataset({"mu": (("chain", "draw"), np.random.default_rng(0).normal(size=(4, 200)))})
        dt = xr.DataTree.from_dict({"posterior": post})
        dt.attrs.update(
            hierbench_data_hash="hash", hierbench_spec=json.dumps({"options": {"pooling": "none"}}),
            sampler="nutpie", sampler_settings=json.dumps(AS_RUN), diag_max_r_hat=1.02,
            diag_min_ess_bulk=350.0, diag_min_ess_tail=310.0, diag_n_divergent=0, diag_min_bfmi=0.8,
            diag_converged=0, diag_failures=json.dumps(["min ESS_bulk 350 < 400 (at `mu`)"]),
            hierbench_version="x",
        )  # fmt: skip
        return dt

    return fit


@pytest.fixture
def no_sampling(monkeypatch):
    """``run_case`` with the model's builder and ``fit`` replaced: returns the calls ``fit`` got."""
    import hierbench.bayes._sampler._fit as fit_module

    calls: list = []
    monkeypatch.setattr(fit_module, "fit", _fake_fit(calls))

    class Entry:
        @staticmethod
        def builder(data, **options):
            return ("model of", data.attrs.get("flagged_agents"), tuple(options))

    monkeypatch.setattr(_zoo, "get_model", lambda name: Entry)
    return calls


def _case(attrs):
    data = xr.Dataset({"score": (("agent", "task"), np.ones((2, 3)))}, attrs=attrs)
    return _zoo.ZooCase(name="t", model="beta_binomial", dataset="d", data_file="f.csv", loader=lambda: data,
                        options={"pooling": "none"}, var_names=("mu",), seed=7)  # fmt: skip


def test_run_case_records_the_loaders_flagged_agents_and_the_settings_as_run(no_sampling):
    """The SWE-bench references kept Claude 3.7 Sonnet's record, which the loader flags as corrupt,
    and the record said nothing of it; nor of the acceptance target or the start the fit ran at.
    """
    _, rec = _zoo.run_case(_case({"flagged_agents": json.dumps(FLAGGED)}), draws=200, tune=400)
    assert rec["flagged_agents"] == {"Agent X (2025)": 500}
    assert rec["sampler_settings"] == AS_RUN  # the fit's own record, not the settings asked for
    assert rec["sampler"] == {"sampler": "nutpie", "draws": 200, "tune": 400, "chains": 4}  # as asked
    assert rec["diagnostics"]["min_ess_tail"] == 310.0
    ((_, rng, settings),) = no_sampling
    assert rng == 7 and settings == {"draws": 200, "tune": 400, "chains": 4}


def test_run_case_says_when_the_loader_checks_no_flag(no_sampling):
    _, rec = _zoo.run_case(_case({}))
    assert rec["flagged_agents"] is None  # not {}: no loader said there were none
    _, rec = _zoo.run_case(_case({"flagged_agents": "{}"}))
    assert rec["flagged_agents"] == {}


def test_the_written_spec_names_the_acceptance_target_the_reference_ran_at(no_sampling, tmp_path, monkeypatch):
    _, rec = _zoo.run_case(_case({}))
    monkeypatch.undo()  # the registry's real entry writes the spec
    monkeypatch.setattr(_zoo, "ROOT", tmp_path)
    _zoo._write("beta_binomial", [rec])
    spec = tomllib.loads((tmp_path / "models" / "beta_binomial" / "spec.toml").read_text())
    assert spec["reference_cases"]["t"]["target_accept"] == 0.9
    stored = json.loads((tmp_path / "models" / "beta_binomial" / "reference.json").read_text())
    assert stored["cases"]["t"]["flagged_agents"] is None


def test_swebench_cases_name_the_agent_the_loader_flags(shared_data):
    from hierbench.data import load_swebench_bash_only

    with pytest.warns(UserWarning, match="flags the records"):
        flagged = json.loads(load_swebench_bash_only().attrs["flagged_agents"])
    assert flagged  # the published file flags Claude 3.7 Sonnet's 500 runs
    written_here = [c for c in _zoo.ZOO_CASES.values() if "swebench" in c.data_file and not c.maker]
    assert len(written_here) == 2
    for case in written_here:
        assert all(agent in case.notes for agent in flagged), case.name


def _equal_rates(n_agents=10, n_tasks=60, n_runs=4):
    """Every agent and task at p = 0.5: the levels are well informed, their true spread 0."""
    score = np.random.default_rng(0).binomial(1, 0.5, size=(n_agents, n_tasks, n_runs)).astype(float)
    coords = {"agent": [f"a{i}" for i in range(n_agents)], "task": [f"t{j}" for j in range(n_tasks)]}
    return xr.Dataset({"score": (("agent", "task", "run"), score)}, coords=coords)


def test_the_formula_models_centring_reason_says_the_data_estimate_is_not_used():
    """build_mixed measures a term's information at the nominal 1 logit only, yet recorded the
    crossed model's "nominal 1 logit, or the data's estimate when smaller". On tasks that all
    succeed at 0.5 (true spread 0) the data's estimate would have left (1|task) non-centred.
    """
    data = _equal_rates()
    mixed = build_mixed(data, "score ~ 0 + agent + (1|task)").hierbench["structure"]["decisions"]["centred"]
    assert mixed["choice"] == ["1|task"]
    assert "(spread: nominal 1 logit, the data's estimate not used)" in mixed["reason"]
    assert "when smaller" not in mixed["reason"]
    crossed = build_crossed(data).hierbench["structure"]["decisions"]["centred"]
    assert crossed["choice"] == []  # the data's spread, 0, is used there
    assert "(spread: nominal 1 logit, or the data's estimate when smaller)" in crossed["reason"]
    assert "task 0.0 (spread 0)" in crossed["reason"]


def _slow_chains(settings, divergent=False):
    """``intercept_task`` as an AR(1) at rho 0.99 (ESS far below 400), with a builder's hint."""
    rng = np.random.default_rng(4)
    x = np.zeros((4, 200))
    for t in range(1, 200):
        x[:, t] = 0.99 * x[:, t - 1] + np.sqrt(1 - 0.99**2) * rng.normal(size=4)
    stats = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((4, 200), bool))})
    stats["diverging"][1, 10] = divergent
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset({"intercept_task": (("chain", "draw"), x)}),
                                "sample_stats": stats})  # fmt: skip
    dt.attrs["hierbench_structure"] = json.dumps(
        {"hints": {"intercept_task": ["the centred form does not suit this design", "centred=False"]}}
    )
    dt.attrs["sampler_settings"] = json.dumps(settings)
    with pytest.warns(ConvergenceWarning):
        return compute_diagnostics(dt).attrs["diag_advice"]


HINT = "`intercept_task`: likely cause: the centred form does not suit this design; fix: centred=False."


def test_a_short_fixed_run_is_told_to_draw_more_before_changing_the_structure():
    """The SWE-bench 1PL refit at 200 draws per chain failed on ESS and was told centred=False,
    the form its card measured as worse; the cause was the 200 draws.
    """
    advice = _slow_chains({"draws": 200, "draws_rule": "fixed", "chains": 4})
    assert advice.startswith("The run kept a fixed 200 draws per chain, fewer than the default (nutpie) fit may "
                             "draw (2000): refit with more draws first")  # fmt: skip
    assert advice.endswith("If it still fails: " + HINT)
    # a run to the target ESS, or fixed at the cap or beyond, drew what more draws would: the hint alone
    assert _slow_chains({"draws": 200, "draws_rule": "target_ess", "max_draws": 2000}) == HINT
    assert _slow_chains({"draws": 2000, "draws_rule": "fixed"}) == HINT
    # a divergence is no matter of length
    diverged = _slow_chains({"draws": 200, "draws_rule": "fixed"}, divergent=True)
    assert diverged.startswith(HINT) and "more draws first" not in diverged


def test_the_diagnostics_cap_is_the_samplers():
    from hierbench.bayes._checks._diagnostics import DEFAULT_MAX_DRAWS
    from hierbench.bayes._sampler._sampling import MAX_DRAWS

    assert DEFAULT_MAX_DRAWS == MAX_DRAWS
