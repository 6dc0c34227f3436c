"""A model carries data only; ``fit`` finds the steps it runs after sampling by name."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from hierbench.bayes import HOOK_KINDS
from hierbench.bayes import build_beta_binomial
from hierbench.bayes import build_bradley_terry
from hierbench.bayes import build_crossed
from hierbench.bayes import build_irt_1pl
from hierbench.bayes import build_irt_2pl
from hierbench.bayes import describe
from hierbench.bayes import get_model
from hierbench.bayes import model_hook
from hierbench.data import read_battles
from hierbench.testing import simulate_eval

DATA, _ = simulate_eval(n_agents=3, n_tasks=8, n_runs=3, p_missing_task=0.2, rng=4)
BATTLES = read_battles(
    pd.DataFrame(
        {"left": ["x", "y", "z", "x"] * 5, "right": ["y", "z", "x", "z"] * 5, "winner": ["left", "tie", "right", "left"] * 5}
    )
)
MODELS = {
    "crossed": lambda: build_crossed(DATA),
    "beta_binomial": lambda: build_beta_binomial(DATA),
    "irt_2pl": lambda: build_irt_2pl(DATA),
    "irt_1pl": lambda: build_irt_1pl(DATA),
    "bradley_terry": lambda: build_bradley_terry(BATTLES),
}


def _callables(obj, path="info"):
    if callable(obj) and not isinstance(obj, type):
        yield path
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _callables(v, f"{path}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _callables(v, f"{path}[{i}]")


@pytest.mark.parametrize("name", list(MODELS))
def test_a_model_carries_data_and_names_its_hooks(name):
    info = MODELS[name]().hierbench
    assert list(_callables(info)) == []  # no closure travels with the model
    hooks = info.get("hooks", {})
    assert set(hooks) <= set(HOOK_KINDS)
    # the registry's spec (what spec.toml holds) names the same hooks
    assert get_model(info["model"]).spec()["hooks"] == hooks
    for kind in HOOK_KINDS:
        fn = model_hook(info, kind)
        assert (fn is None) == (kind not in hooks)
    # the structure is recorded and printable in one call
    text = describe(MODELS[name]())
    assert text.splitlines()[0] == f"model as fitted: {info['model']}"
    assert "centred" in text


def test_model_hook_lookup_rules():
    assert model_hook(None, "predictive") is None
    assert model_hook({"model": "custom"}, "postprocess") is None
    with pytest.raises(ValueError, match=r"`kind` must be one of \['data_updates', 'log_likelihood', "):
        model_hook({}, "plot")
    with pytest.raises(KeyError, match=r"names the predictive hook 'nowhere.predict', which is not registered"):
        model_hook({"hooks": {"predictive": "nowhere.predict"}}, "predictive")


def _posterior(**arrays):
    return xr.DataTree.from_dict(
        {"posterior": xr.Dataset({k: (("chain", "draw", *d), v) for k, (d, v) in arrays.items()})}
    )


def test_beta_binomial_log_likelihood_hook_reads_the_cells_it_carries():
    # the hook's pointwise log-likelihood against scipy on the cells recomputed from the scores
    info = build_beta_binomial(DATA).hierbench
    g = np.random.default_rng(0)
    mu, kappa = g.uniform(0.2, 0.8, (2, 5, 3)), g.uniform(1.0, 9.0, (2, 5, 3))
    ll = model_hook(info, "log_likelihood")(_posterior(mu=(("agent",), mu), kappa=(("agent",), kappa)))
    n = DATA.score.notnull().sum("run").values
    y = DATA.score.fillna(0).sum("run").values
    ai, ti = np.nonzero(n > 0)
    want = stats.betabinom.logpmf(y[ai, ti], n[ai, ti], mu[..., ai] * kappa[..., ai], (1 - mu[..., ai]) * kappa[..., ai])
    np.testing.assert_allclose(ll["y"].values, want, rtol=1e-12)


def test_crossed_predictive_hook_draws_each_cell_from_its_own_logit():
    # with sd_agent_task near 0 and extreme logits, each cell's draws are all-or-nothing:
    # the hook pairs each cell with its own agent, task and run count
    info = build_crossed(DATA, agent_task="marginal").hierbench
    ability = np.array([-30.0, 30.0, 30.0])
    task = np.where(np.arange(8) % 2 == 0, 0.0, -60.0)  # even tasks leave ability's sign
    dt = _posterior(
        ability=(("agent",), np.broadcast_to(ability, (1, 4, 3)).copy()),
        task_effect=(("task",), np.broadcast_to(task, (1, 4, 8)).copy()),
        sd_agent_task=((), np.full((1, 4), 1e-9)),
    )
    y = model_hook(info, "predictive")(dt, np.random.default_rng(1))["posterior_predictive"]["y"]
    n = DATA.score.notnull().sum("run").values
    ai, ti = np.nonzero(n > 0)
    want = np.where((ability[ai] + task[ti]) > 0, n[ai, ti], 0)
    assert (y.values == want).all()


def test_bradley_terry_old_spelling_of_centring_warns_and_still_works():
    with pytest.warns(DeprecationWarning, match=r"`centered` of build_bradley_terry\(\) is deprecated .* use `centred`"):
        old = build_bradley_terry(BATTLES, centered=True)
    new = build_bradley_terry(BATTLES, centred=True)
    assert sorted(v.name for v in old.free_RVs) == sorted(v.name for v in new.free_RVs)
    assert old.hierbench["options"]["centred"] is True
    assert old.hierbench["structure"]["decisions"]["centred"]["source"] == "user"
    with pytest.raises(TypeError, match="give `centred` only"):
        build_bradley_terry(BATTLES, centred=False, centered=True)
    with pytest.raises(ValueError, match=r"`centred` must be one of \['auto', True, False\]; got 'yes'"):
        build_bradley_terry(BATTLES, centred="yes")


def test_irt_records_its_structure():
    m = build_irt_2pl(DATA)
    dec = m.hierbench["structure"]["decisions"]
    # 3 agents x 3 runs = 9 runs per task (fewer where a cell was never run) < 10
    runs = float(DATA.score.notnull().sum(("agent", "run")).mean())
    assert runs < 10 and dec["centred"]["choice"] is False and dec["centred"]["source"] == "auto"
    assert dec["clusters"]["choice"] is False
    assert dec["discrimination"]["choice"] == "per task"
    assert "z_intercept" in [v.name for v in m.free_RVs]
    user = build_irt_2pl(DATA, centred=True).hierbench["structure"]["decisions"]["centred"]
    assert user["choice"] is True and user["source"] == "user"
