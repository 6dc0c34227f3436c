"""Model zoo: spec.toml round trips; reference fits reproduce within MCSE."""

from __future__ import annotations

import json
import tomllib

import pytest
from conftest import ROOT

from hierbench.bayes import HOOK_KINDS
from hierbench.bayes import get_model
from hierbench.bayes import model_hook
from hierbench.bayes import read_spec
from hierbench.bayes import spec_to_toml
from hierbench.bayes._zoo import ZOO_CASES
from hierbench.bayes._zoo import compare_to_reference
from hierbench.bayes._zoo import reference_record
from hierbench.bayes._zoo import run_case

#: every model folder with a spec.toml, not a hand-kept list: a new folder is checked too
MODELS = sorted(p.parent.name for p in (ROOT / "models").glob("*/spec.toml"))

#: build_mixed's families on small simulated data: formula, levels, and the default-prior class each
#: random term takes (models/mixed/card.md, "Default priors"), besides the family's own prior
MIXED_FAMILIES = {
    "binomial": (None, None, {"sd[1|task]": "sd_task", "sd[1|agent:task]": "sd_agent_task"}, ()),
    "ordinal": ("score ~ (1|agent) + (1|task)", [1, 2, 3, 4], {"sd[1|agent]": "sd_agent_level", "sd[1|task]": "sd_task"},
                ("thresholds",)),
    "fractional": (None, None, {"sd[1|task]": "sd_task", "sd[1|agent:task]": "sd_agent_task"}, ("interior",)),
}  # fmt: skip


def _small_data(name, family="binomial"):
    """A small design each builder takes: simulated counts, their battles (Bradley-Terry), grades or [0, 1] scores."""
    import numpy as np
    import xarray as xr

    from hierbench.data import to_pairwise
    from hierbench.testing import simulate_eval

    data, _ = simulate_eval(n_agents=3, n_tasks=6, n_runs=2, n_clusters=2, sd_cluster=0.5, rng=0)
    if name == "bradley_terry":
        return to_pairwise(data)
    gen = np.random.default_rng(0)
    if family == "ordinal":
        return xr.Dataset({"score": (("agent", "task", "run"), gen.integers(1, 5, (4, 6, 2)).astype(float))})
    if family == "fractional":  # exact 0s and 1s and partial credit
        return xr.Dataset({"score": (("agent", "task", "run"), np.clip(gen.random((4, 6, 2)) * 1.4 - 0.2, 0, 1))})
    return data


def _check_mixed_priors(spec):
    """Each family's model holds the spec's figures: its own prior, ``beta``, and each term's class's sd."""
    for family, (formula, levels, classes, own) in MIXED_FAMILIES.items():
        keys = ("beta", "beta_level", *sorted(set(classes.values())), *own)
        data = _small_data("mixed", family)
        model = get_model("mixed").builder(data, formula, levels=levels, priors={k: spec["priors"][k] for k in keys})
        want = {k: spec["priors"][k] for k in ("beta", "beta_level", *own)}
        want.update({term: spec["priors"][cls] for term, cls in classes.items()})
        assert model.hierbench["options"]["family"] == family
        assert json.loads(json.dumps(model.hierbench["priors"])) == want, family


@pytest.mark.parametrize("name", MODELS)
def test_spec_round_trip(name):
    assert {"beta_binomial", "bradley_terry", "crossed", "irt_1pl", "irt_2pl", "mixed"} <= set(MODELS)
    path = ROOT / "models" / name / "spec.toml"
    spec = read_spec(path)
    assert spec["model"] == name
    # the file holds the registry's spec (options, priors) and what fit() does by default
    # (what fit() takes from a model is its target_accept)
    from hierbench.bayes._sampler._fit import FIT_DEFAULTS

    entry = get_model(name).spec()
    for key in ("builder", "options", "priors", "hooks"):
        assert spec[key] == entry[key], key
    own = {k: v for k, v in entry["sampler"].items() if k == "target_accept"}
    assert spec["sampler"] == {**FIT_DEFAULTS, **own}
    # ... and writing it back loses nothing
    assert tomllib.loads(spec_to_toml(spec)) == spec
    # the priors are data the builder accepts back: a model built with them holds them
    if name == "mixed":  # one model per family: each takes the priors its terms and likelihood use
        _check_mixed_priors(spec)
    else:
        model = get_model(name).builder(_small_data(name), priors=spec["priors"])
        assert json.loads(json.dumps(model.hierbench["priors"])) == spec["priors"]
    for f in ("card.md", "reference.json"):
        assert (ROOT / "models" / name / f).is_file()
    # the spec lists the reference cases reference.json holds, with their seed and draws
    ref = json.loads((ROOT / "models" / name / "reference.json").read_text())
    stored = ref["cases"] if "cases" in ref else {key: ref for key in spec["reference_cases"]}
    assert set(spec["reference_cases"]) == set(stored)
    for key, rc in spec["reference_cases"].items():
        run = stored[key].get("sampler") or stored[key]["settings"]
        assert (rc["seed"], rc["draws"], rc["chains"]) == (stored[key].get("seed", run.get("seed")), run["draws"], run["chains"])


def test_every_zoo_spec_names_the_registry_hooks_and_they_resolve():
    # every model folder with a spec.toml, not a hand-kept list: a new folder is checked too
    paths = sorted((ROOT / "models").glob("*/spec.toml"))
    assert {p.parent.name for p in paths} >= {"beta_binomial", "bradley_terry", "crossed", "irt_1pl", "irt_2pl", "mixed"}
    for path in paths:
        spec = read_spec(path)
        name = path.parent.name
        assert spec["model"] == name
        # the [hooks] section the writer (spec_to_toml of the registry's spec) emits; an empty
        # table for a model that names none, so a missing section is a stale file
        assert "hooks" in spec, f"{name}: spec.toml has no [hooks] section"
        assert spec["hooks"] == get_model(name).spec()["hooks"], name
        assert set(spec["hooks"]) <= set(HOOK_KINDS), name
        # each named hook is one the registry can run (what a saved fit looks up)
        for kind in spec["hooks"]:
            assert callable(model_hook(spec, kind)), (name, kind)


def test_spec_to_toml_rejects_unsupported():
    with pytest.raises(TypeError, match="cannot write dict to TOML"):
        spec_to_toml({"a": {"b": {"c": {"d": 1}}}})


def test_compare_to_reference_flags_a_mean_beyond_five_combined_mcses():
    # MCSEs 0.03 and 0.04 combine to 0.05 (a 3-4-5 triangle): the tolerance is 0.25
    ref = {"summary": {"mu": {"mean": 1.0, "sd": 1.0, "mcse": 0.03}, "ability": {"a": {"mean": 0.0, "sd": 1.0, "mcse": 0.03}}}}

    def new(mu, a):
        return {"summary": {"mu": {"mean": mu, "sd": 1.0, "mcse": 0.04}, "ability": {"a": {"mean": a, "sd": 1.0, "mcse": 0.04}}}}

    assert compare_to_reference(new(1.24, -0.24), ref) == []
    bad = compare_to_reference(new(1.26, 0.0), ref)
    assert len(bad) == 1 and bad[0].startswith("mu: refit mean 1.26 vs reference 1")
    assert compare_to_reference(new(1.0, -0.26), ref)[0].startswith("ability/a:")
    missing = {"summary": {"mu": ref["summary"]["mu"]}}
    assert compare_to_reference(missing, ref) == ["missing from the refit: ['ability/a']"]


def test_reference_record_reads_the_zoo_layout_and_a_model_scripts_layout():
    wine = reference_record(ZOO_CASES["wine"])  # models/mixed/reference.json: {"model", "cases": {...}}
    assert wine["case"] == "wine" and set(wine["summary"]) == set(ZOO_CASES["wine"].var_names)
    irt = reference_record(ZOO_CASES["swebench_bash_only_2pl"])  # written by models/irt_2pl/make_reference.py
    assert irt["model"] == "irt_2pl" and set(irt["summary"]) == set(ZOO_CASES["swebench_bash_only_2pl"].var_names)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(ZOO_CASES))
def test_reference_refit_within_mcse(case, shared_data):
    c = ZOO_CASES[case]
    ref = reference_record(c)
    # the case describes its reference: the same chains and seed (a model's own script
    # records its settings under "settings")
    recorded = ref.get("sampler") or ref["settings"]
    assert recorded["chains"] == c.sampler["chains"] and ref.get("seed", recorded.get("seed")) == c.seed
    # the reference's chains and seed with a shorter run (``c.refit``'s draws: 300 per chain
    # unless the case says otherwise); the means are compared within both MCSEs, so fewer
    # draws only widen the tolerance
    # and no posterior predictive: nothing here reads it (1.1-1.4 s of each SWE-bench refit's
    # 25 x 500 cells), and the posterior is the same to the bit without it (its draws take their
    # own seed, drawn from the fit's rng before sampling)
    # Tuning here is half the case's (200 steps for the IRT cases, 250 for the others): nutpie
    # starts at the posterior mode, and tuning changes the draws' efficiency, not their law; the
    # MCSE follows the ESS, so the tolerance stays honest. Measured at half tuning (min bulk ESS;
    # largest |diff| / combined MCSE; elements beyond 3): 2pl 232, 3.38, 8 of 1529; 1pl 386,
    # 3.79, 4 of 1029 (a normal law expects 4.1 and 2.8 there); crossed SWE-bench 114, 2.11;
    # METR 246, 1.97; wine 323, 2.44; rats 1044, 1.49; no divergence. The bound is 5.
    tune = c.refit["tune"] // 2
    settings = {**c.sampler, **c.refit, "tune": tune, "posterior_predictive": False}
    idata, rec = run_case(c, **settings)
    assert rec["data_hash"] == ref["data_hash"], "the shared data file changed"
    # the shortened run may fall short of the package's own ESS and R-hat checks (audit s76 Z 5:
    # ESS_bulk 126-371 at the case's settings; 114-1044 at half its tuning), which only widen the
    # MCSE tolerance; a divergence, a low E-BFMI or a non-finite draw is no matter of length,
    # and fails the refit
    failures = json.loads(idata.attrs["diag_failures"])
    failed = {c["check"] for c in json.loads(idata.attrs["diag_checks"]) if not c["passed"]}
    assert idata.attrs["diag_n_divergent"] == 0, failures
    assert failed <= {"r_hat", "ess_bulk", "ess_tail"}, failures
    assert len(failures) == len(failed), failures  # a failure no check names: non-finite draws
    bad = compare_to_reference(rec, ref)
    assert not bad, bad
