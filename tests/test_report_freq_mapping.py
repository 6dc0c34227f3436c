"""``build(freq={...})``: results given to the report are checked against its log, level and keys.

The expected values do not come from the checker: the log a result was computed from is known
here (another simulated log, the same log with one agent or some tasks dropped), the agent
dropped is read off the data, the fingerprints are ``counts_fingerprint`` of the two logs, and
a given variance-components result is compared with the section the report writes when it
computes one itself.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy.special import expit

from hierbench import freq
from hierbench._base import COUNTS_HASH
from hierbench._base import counts_fingerprint
from hierbench.report import build
from hierbench.report._match import FitDataMismatchError
from hierbench.testing import simulate_eval

#: the other results left out, so each report computes only what a test reads (about 0.5 s a report)
QUIET = {"bootstrap": None, "compare": None, "person_fit": None}


def _log(rng: int = 0) -> xr.Dataset:
    return simulate_eval(n_agents=3, n_tasks=20, n_runs=2, rng=rng)[0]


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _build(tmp_path, data, freq_arg, name="r.md", **kw):
    return _quiet(build, data=data, path=tmp_path / name, freq=freq_arg, n_resamples=99, progress=False, **kw)


def _section(md: str, title: str) -> str:
    """The Markdown of one section, from its heading to the next."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", md, flags=re.M | re.S)
    assert m is not None, title
    return m.group(1)


def test_result_from_another_log_is_refused_naming_the_key_and_both_fingerprints(tmp_path):
    ds, other = _log(0), _log(1)  # the same agents, tasks and runs: only the scores differ
    want, got = counts_fingerprint(other), counts_fingerprint(ds)
    assert want != got
    boot = _quiet(freq.bootstrap_ci, other, n_resamples=99, rng=0)
    with pytest.raises(FitDataMismatchError, match=r"`freq\['bootstrap'\]` and `data` are not the same") as e:
        _build(tmp_path, ds, {"bootstrap": boot})
    assert want[:12] in str(e.value) and got[:12] in str(e.value)
    assert "the same agents, other tasks, runs or scores" in str(e.value)
    cmp = _quiet(freq.compare_agents, other, n_resamples=99, n_permutations=99, n_draws=999, rng=0)
    with pytest.raises(FitDataMismatchError, match=r"`freq\['compare'\]`"):
        _build(tmp_path, ds, {"compare": cmp})
    # this log's own paired tests are taken, and the section says they were given
    own = _quiet(freq.compare_agents, ds, n_resamples=99, n_permutations=99, n_draws=999, rng=0)
    md = _build(tmp_path, ds, {"compare": own, "bootstrap": None, "person_fit": None, "variance": None}).read_text()
    assert "the result given in `freq['compare']`" in _section(md, "Does A beat B? Paired tests")


def test_result_of_the_same_log_with_one_agent_dropped_is_refused_naming_it(tmp_path):
    ds = _log(0)
    dropped = str(ds["agent"].values[2])
    cmp = _quiet(freq.compare_agents, ds.isel(agent=[0, 1]), n_resamples=99, n_permutations=99, n_draws=999, rng=0)
    with pytest.raises(FitDataMismatchError, match=r"`freq\['compare'\]`") as e:
        _build(tmp_path, ds, {"compare": cmp})
    assert f"1 agent only in the data (['{dropped}'])" in str(e.value)
    # some tasks dropped: the agents agree, the fingerprint does not
    boot = _quiet(freq.bootstrap_ci, ds.isel(task=slice(0, 15)), n_resamples=99, rng=0)
    with pytest.raises(FitDataMismatchError, match="other tasks, runs or scores"):
        _build(tmp_path, ds, {"bootstrap": boot})


def test_result_without_a_fingerprint_is_refused(tmp_path):
    ds = _log(0)
    boot = _quiet(freq.bootstrap_ci, ds, n_resamples=99, rng=0)
    del boot.estimate.attrs[COUNTS_HASH]
    with pytest.raises(FitDataMismatchError, match=r"`freq\['bootstrap'\]` carries no fingerprint"):
        _build(tmp_path, ds, {"bootstrap": boot})


def test_unknown_key_and_wrong_type_are_refused_naming_what_is_accepted(tmp_path):
    ds = _log(0)
    boot = _quiet(freq.bootstrap_ci, ds, n_resamples=99, rng=0)
    accepted = ["bootstrap", "compare", "variance", "horizon", "person_fit"]
    for typo in ("bootsrap", "gtheory"):
        with pytest.raises(ValueError, match=rf"keys \['{typo}'\] the report does not read") as e:
            _build(tmp_path, ds, {typo: boot})
        assert all(f"'{k}'" in str(e.value) for k in accepted)
    with pytest.raises(TypeError, match=r"`freq\['compare'\]` must be a PairwiseComparisonResult") as e:
        _build(tmp_path, ds, {"compare": boot.to_frame()})
    assert "got DataFrame" in str(e.value) and "'variance': VarianceComponentsResult" in str(e.value)
    with pytest.raises(TypeError, match="`freq` must be 'auto', None or a mapping"):
        _build(tmp_path, ds, "bootstrap")


def test_bootstrap_at_another_level_is_refused_naming_both(tmp_path):
    ds = _log(0)
    boot90 = _quiet(freq.bootstrap_ci, ds, n_resamples=99, prob=0.9, rng=0)
    with pytest.raises(ValueError, match=r"`freq\['bootstrap'\]` has its intervals at 0\.9 and the report is "
                                         r"at prob=0\.95"):  # fmt: skip
        _build(tmp_path, ds, {"bootstrap": boot90})


def test_the_checklist_says_which_results_were_given_and_which_computed(tmp_path):
    ds = _log(0)
    boot90 = _quiet(freq.bootstrap_ci, ds, n_resamples=99, prob=0.9, rng=0)
    md = _build(tmp_path, ds, {"bootstrap": boot90, "compare": None}, prob=0.9).read_text()
    row = _section(md, "Reporting checklist")  # the report at the result's own level takes it
    assert "given in `freq`: bootstrap" in row and "90%" in row
    assert "computed from the data: person_fit" in row and "left out (given as None in `freq`): compare" in row


def test_given_variance_components_give_the_section_the_report_computes(tmp_path, monkeypatch):
    ds = _log(0)
    vc = _quiet(freq.variance_components, ds)
    own = _section(_build(tmp_path, ds, QUIET, "own.md").read_text(), "Variance components")

    def not_again(*a, **k):  # the given result is used, not computed a second time
        raise AssertionError("variance_components called though freq['variance'] was given")

    monkeypatch.setattr(freq, "variance_components", not_again)
    given = _section(_build(tmp_path, ds, QUIET | {"variance": vc}, "given.md").read_text(), "Variance components")
    said = " (given in `freq['variance']`, with the design it was computed with)"
    assert said in given and said not in own
    assert given.replace(said, "") == own
    assert f"design {vc.formula}" in own and f"{float(vc.estimate.sel(component='task')):.4f}" in own


def test_variance_from_another_log_or_at_another_level_is_refused(tmp_path):
    vc = _quiet(freq.variance_components, _log(1))
    with pytest.raises(FitDataMismatchError, match=r"`freq\['variance'\]`"):
        _build(tmp_path, _log(0), QUIET | {"variance": vc})
    vc90 = _quiet(freq.variance_components, _log(0), prob=0.9)
    with pytest.raises(ValueError, match=r"`freq\['variance'\]` has its intervals at 0\.9 and the report is at "
                                         r"prob=0\.95"):  # fmt: skip
        _build(tmp_path, _log(0), QUIET | {"variance": vc90})


def _horizon_log(rng: int) -> xr.Dataset:
    """3 agents x 12 tasks x 2 runs with human minutes and task families (METR's method needs both)."""
    gen = np.random.default_rng(rng)
    mins = np.geomspace(1, 240, 12)
    eta = np.array([2.0, 3.0, 4.0])[:, None] - 0.5 * np.log2(mins)
    y = (gen.random((3, 12, 2)) < expit(eta[..., None])) * 1.0
    coords = {"agent": ["a", "b", "c"], "task": [f"t{i}" for i in range(12)], "human_minutes": ("task", mins),
              "cluster": ("task", [f"f{i // 2}" for i in range(12)])}  # fmt: skip
    return xr.Dataset({"score": (("agent", "task", "run"), y)}, coords=coords)


@pytest.mark.parametrize("func", ["compare_agents", "variance_components", "time_horizon", "person_fit"])
def test_freq_functions_stamp_the_logs_fingerprint(func):
    ds, other = _horizon_log(0), _horizon_log(1)
    kw = {"compare_agents": {"n_resamples": 99, "n_permutations": 99, "n_draws": 999, "rng": 0},
          "time_horizon": {"n_resamples": 20, "rng": 0}, "person_fit": {"n_sim": 200, "rng": 0}}.get(func, {})  # fmt: skip
    res = _quiet(getattr(freq, func), ds, **kw)
    assert res.estimate.attrs[COUNTS_HASH] == counts_fingerprint(ds) != counts_fingerprint(other)
    assert _quiet(getattr(freq, func), other, **kw).estimate.attrs[COUNTS_HASH] == counts_fingerprint(other)
    if "rng" in kw:  # the call's int seed is recorded, for the report's seed row; a Generator's is not
        assert res.estimate.attrs["rng_seed"] == 0
        gen = _quiet(getattr(freq, func), ds, **{**kw, "rng": np.random.default_rng(0)})
        assert "rng_seed" not in gen.estimate.attrs


def test_horizon_from_another_log_is_refused_and_its_own_is_shown_as_given(tmp_path):
    ds = _horizon_log(0)
    th = _quiet(freq.time_horizon, _horizon_log(1), n_resamples=20, rng=0)
    with pytest.raises(FitDataMismatchError, match=r"`freq\['horizon'\]`"):
        _build(tmp_path, ds, QUIET | {"horizon": th})
    own = _quiet(freq.time_horizon, ds, n_resamples=20, rng=0)
    md = _build(tmp_path, ds, QUIET | {"horizon": own, "variance": None}).read_text()
    assert "its hierarchical bootstrap (given in `freq['horizon']`)" in _section(md, "Time horizons")


@pytest.mark.parametrize(
    ("rng", "error", "words"),
    [("x", TypeError, "`rng` must be an integer"), (-1, ValueError, "`rng`"), (1.5, TypeError, "`rng` must be an integer"),
     (np.random.default_rng(0), TypeError, "cannot be stated")],
    ids=["text", "negative", "fraction", "generator"],
)
def test_a_seed_the_checklist_cannot_state_is_refused_before_anything_is_written(tmp_path, rng, error, words):
    """Audit U, findings 2 and 3: a bad ``rng`` reached every section, which said "not computed", and a
    report was written; a Generator was stated in the checklist as its memory address.
    """
    path = tmp_path / "r.md"
    with pytest.raises(error, match=words):
        build(data=_log(), path=path, rng=rng, freq=QUIET)
    assert not path.exists()
    with pytest.raises(ValueError, match="n_resamples"):
        build(data=_log(), path=path, n_resamples=-5, freq=QUIET)


def test_no_seed_is_said_to_be_fresh_entropy(tmp_path):
    text = _quiet(build, data=_log(), path=tmp_path / "r.md", rng=None, freq=QUIET).read_text()
    row = next(line for line in text.splitlines() if line.startswith("| seed"))
    assert "rng=None (fresh entropy: not reproducible)" in row


@pytest.mark.parametrize("kw", [{"statistic": "pass_hat_k", "k": 2}, {"scheme": "runs"}], ids=["pass^2", "runs"])
def test_a_bootstrap_of_another_quantity_is_refused(tmp_path, kw):
    """The abilities section shows a given bootstrap as each agent's mean score for a new draw of
    tasks: a pass^2 bootstrap, or one over runs (the observed tasks), of the same log passed every
    other check and was shown under that name.
    """
    log = _log()
    boot = _quiet(freq.bootstrap_ci, log, n_resamples=99, rng=0, **kw)
    with pytest.raises(ValueError, match=r"freq\['bootstrap'\]` is a bootstrap of"):
        build(data=log, path=tmp_path / "r.md", freq={**QUIET, "bootstrap": boot})
