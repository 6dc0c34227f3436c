"""What a Bayesian model and its fit record must not contradict (audit J, findings 3, 6, 7, 8, 10).

* separated agents (every run failed, or every run passed) are named by the crossed builder,
  noted in ``describe`` and in the ability's attrs: their ability is the prior's;
* a builder's signature default is tagged ``[default]``, not ``[user]``;
* ``sampler_settings`` says where the chains started (as ``fit_run`` does);
* ``fit_notes`` states the largest R-hat against the limit it was held to;
* agents that share no task are warned of, once, with their task counts.

Expected values come from the data's own outcomes, ``inspect.signature`` and exact counts.
"""

from __future__ import annotations

import inspect
import json
import warnings

import numpy as np
import pytest
import xarray as xr

import hierbench.bayes as hbb
from hierbench._base import BoundaryWarning
from hierbench._base import UnidentifiedWarning
from hierbench.bayes._sampler import _fit as fit_module
from hierbench.bayes._sampler._sampling import Start
from hierbench.bayes._sampler._sampling import describe_r_hat


def _eval(scores: np.ndarray, agents: list[str]) -> xr.Dataset:
    """An eval dataset from a (agent, task, run) array of 0 / 1 / NaN (not run)."""
    return xr.Dataset(
        {"score": (("agent", "task", "run"), scores.astype(float))},
        coords={"agent": agents, "task": [f"t{i}" for i in range(scores.shape[1])]},
    )


def _separated_data() -> xr.Dataset:
    """A fails every run, B passes every run, C both passes and fails (3 agents x 6 tasks x 2 runs)."""
    rng = np.random.default_rng(3)
    c = rng.integers(0, 2, size=(6, 2))
    c[0], c[1] = (0, 1), (1, 0)  # C has both outcomes
    return _eval(np.stack([np.zeros((6, 2)), np.ones((6, 2)), c]), ["A", "B", "C"])


def _recorded(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, seen


def test_crossed_names_the_agents_the_data_separate():
    ds = _separated_data()
    runs = ds["score"].count(("task", "run")).values
    wins = ds["score"].sum(("task", "run")).values
    expect = [str(a) for a, w, n in zip(ds.agent.values, wins, runs, strict=True) if w in (0, n)]
    model, seen = _recorded(hbb.build_crossed, ds)
    assert expect == ["A", "B"]
    assert model.hierbench["structure"]["design"]["separated_agents"] == expect
    said = [str(w.message) for w in seen if issubclass(w.category, BoundaryWarning)]
    assert len(said) == 1
    assert "agent[A] (0 of 12 runs succeeded)" in said[0] and "agent[B] (12 of 12 runs succeeded)" in said[0]
    assert "agent[C]" not in said[0]
    text = hbb.describe(model)
    assert "note: the binary data separate agent[A]" in text and "sigma=2.5" in text
    assert "A, B" in model.hierbench["var_attrs"]["ability"]["meaning"]


def test_crossed_says_nothing_of_separation_when_every_agent_both_passes_and_fails():
    ds = _separated_data()
    s = ds["score"].values.copy()
    s[0, 0, 0], s[1, 0, 0] = 1.0, 0.0  # A now passes a run, B fails one
    model, seen = _recorded(hbb.build_crossed, _eval(s, ["A", "B", "C"]))
    assert not [w for w in seen if issubclass(w.category, BoundaryWarning)]
    assert "separated_agents" not in model.hierbench["structure"]["design"]
    assert "separate" not in hbb.describe(model)


def test_a_builder_default_is_tagged_default_and_a_request_user():
    default = inspect.signature(hbb.build_irt_2pl).parameters["agent_task"].default
    assert default == "none"
    for n_runs in (1, 3):
        ds = _eval(np.random.default_rng(n_runs).integers(0, 2, size=(3, 8, n_runs)), ["a", "b", "c"])
        line = next(x for x in hbb.describe(hbb.build_irt_2pl(ds)).splitlines() if "agent_task" in x)
        assert f"agent_task: {default!r} [default] - the builder's default" in line
        line = next(x for x in hbb.describe(hbb.build_irt_2pl(ds, agent_task="none")).splitlines()
                    if "agent_task" in x)  # fmt: skip
        assert "[user]" in line and "default" not in line.split(" - ")[1].split(":")[0]


def test_agents_that_share_no_task_are_warned_of_once_with_their_task_counts():
    rng = np.random.default_rng(5)
    s = np.full((2, 7, 2), np.nan)
    s[0, :3] = rng.integers(0, 2, size=(3, 2))  # A ran t0-t2
    s[1, 3:] = rng.integers(0, 2, size=(4, 2))  # B ran t3-t6
    s[0, 0], s[1, 3] = (0, 1), (0, 1)
    ds = _eval(s, ["A", "B"])
    ran = ds["score"].notnull().any("run")
    assert int(ran.sum("agent").max()) == 1
    per = {str(a): int(ran.sel(agent=a).sum()) for a in ds.agent.values}
    for build in (hbb.build_crossed, hbb.build_beta_binomial, hbb.build_irt_2pl):
        model, seen = _recorded(build, ds)
        said = [str(w.message) for w in seen if issubclass(w.category, UnidentifiedWarning)]
        assert len(said) == 1, build.__name__
        assert f"the 2 agents share no task (A: {per['A']} tasks, B: {per['B']} tasks)" in said[0]
        assert "exchangeable" in said[0] and "no task of the 7 run" in said[0]
        assert "note: the 2 agents share no task" in hbb.describe(model)


def test_agents_sharing_a_task_are_not_warned_of():
    s = np.random.default_rng(6).integers(0, 2, size=(2, 5, 2)).astype(float)
    s[:, 0] = (0, 1)
    _, seen = _recorded(hbb.build_crossed, _eval(s, ["A", "B"]))
    assert not [w for w in seen if issubclass(w.category, UnidentifiedWarning)]


def test_r_hat_note_states_the_limit_used_and_why():
    checks = [{"check": "r_hat", "value": 1.0327, "at": "ability[x]", "limit": 1.0461,
               "n_elements": 121, "passed": True}]  # fmt: skip
    attrs = {"diag_thresholds": json.dumps({"r_hat": 1.01}), "diag_checks": json.dumps(checks),
             "draws": 200, "chains": 4}  # fmt: skip
    text = describe_r_hat(attrs)
    assert text.startswith("R-hat 1.033 (at ability[x]) <= 1.046, the limit at 200 draws per chain")
    assert "121 elements" in text and "1.01" in text and "1.05" in text
    checks[0] |= {"value": 1.004, "limit": 1.01}
    assert describe_r_hat(attrs | {"diag_checks": json.dumps(checks)}).endswith("<= 1.010, the conventional limit")


def test_a_fallen_back_start_is_what_sampler_settings_and_fit_notes_record(monkeypatch):
    said = "forced for the test"
    monkeypatch.setattr(
        fit_module, "find_start", lambda compiled, seed: Start(None, None, {"init": "support_point", "init_fallback": said})
    )
    ds = _eval(np.random.default_rng(7).integers(0, 2, size=(2, 6, 3)), ["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hbb.ConvergenceWarning)  # 60 draws: the notes are the point
        f = hbb.fit(hbb.build_beta_binomial(ds, pooling="none"), draws=60, tune=60, chains=2, rng=1,
                    posterior_predictive=False)  # fmt: skip
    settings, run = json.loads(f.attrs["sampler_settings"]), json.loads(f.attrs["fit_run"])
    assert run["init"] == settings["init"] == "support_point"
    assert settings["init_requested"] == inspect.signature(hbb.fit).parameters["init"].default == "map"
    assert said in f.attrs["fit_notes"]
    r_hat = json.loads(f.attrs["diag_checks"])[0]
    if r_hat["passed"]:
        said = f"R-hat {f.attrs['diag_max_r_hat']:.3f} (at {r_hat['at']}) <= {r_hat['limit']:.3f}"
    else:
        said = f"R-hat {r_hat['over_limit_value']:.3f} (at {r_hat['over_limit_at']}) > {r_hat['over_limit_limit']:.3f}"
    assert said in f.attrs["fit_notes"]


@pytest.mark.parametrize("init", ["map", "support_point"])
def test_settings_as_run_keep_the_request_only_when_it_differs(init):
    asked = {"init": init, "chains": 2}
    same = fit_module._as_run(asked, {"init": init})
    assert same == asked
    other = "support_point" if init == "map" else "map"
    assert fit_module._as_run(asked, {"init": other}) == {"init": other, "chains": 2, "init_requested": init}
