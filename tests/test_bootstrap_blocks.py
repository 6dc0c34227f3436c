"""The bootstrap in blocks of outputs (compare_agents' many pairs): the same numbers as the whole
distribution, bit for bit where the sums are exact, in memory bounded by the block budget.

The reference is :func:`bootstrap_ci`, which holds the whole distribution; the blocks are forced
by shrinking the budget, so every path (patterns, gathered indices, weights; tasks, runs and
two-stage schemes; clusters; percentile and BCa) is replayed block by block.
"""

import tracemalloc
import warnings

import numpy as np
import pytest

from hierbench.freq import bootstrap_ci
from hierbench.freq import compare_agents
from hierbench.freq._resampling import _bootstrap_engine as engine
from hierbench.freq._resampling._bootstrap import _bootstrap_summary
from hierbench.freq._resampling._bootstrap import _plan
from hierbench.testing import simulate_eval

B = 199


def _exact_sets():
    """Data whose per-task means are multiples of 1/4: every resampled sum is exact in any order."""
    return {
        "binary-1-run": simulate_eval(n_agents=9, n_tasks=30, n_runs=1, rng=1)[0],  # gathered / weights
        "binary-4-runs": simulate_eval(n_agents=8, n_tasks=40, n_runs=4, rng=2)[0],
        "clusters": simulate_eval(n_agents=7, n_tasks=48, n_runs=2, n_clusters=6, sd_cluster=0.5, rng=4)[0],
        "ragged": simulate_eval(n_agents=8, n_tasks=36, n_runs=4, p_missing_task=0.2, rng=5)[0],
        "patterns": simulate_eval(n_agents=3, n_tasks=500, n_runs=1, rng=8)[0],  # multinomial shortcut
    }


_CONFIGS = [
    {},
    {"method": "bca"},
    {"scheme": "two-stage"},
    {"scheme": "runs"},
    {"scheme": "two-stage", "method": "bca"},
    {"cluster": None},
    {"statistic": "pass_hat_k", "k": 1},
]


def _percentile_p_by_definition(dist):
    """Per column: 2 min(P*(d <= 0), P*(d >= 0)) over the finite resamples, shares (1 + count) / (B + 1)."""
    p, se = [], []
    for col in dist.T:
        d = col[np.isfinite(col)]
        lo, hi = (1 + np.sum(d <= 0)) / (d.size + 1), (1 + np.sum(d >= 0)) / (d.size + 1)
        p.append(min(1.0, 2 * min(lo, hi)))
        se.append(np.sqrt(p[-1] * (2 - p[-1]) / d.size))
    return np.array(p), np.array(se)


def _run(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    return out, [(w.category, str(w.message)) for w in rec]


def _whole(ds, pairs, cfg):
    """bootstrap_ci (the whole distribution, default blocks), its warnings, and where it leaves its generator."""
    ref_gen = np.random.default_rng(11)
    ref, ref_warn = _run(bootstrap_ci, ds, pairs=pairs, n_resamples=B, rng=ref_gen, **cfg)
    return ref, ref_warn, ref_gen.bit_generator.state


def _both(ds, pairs, cfg, monkeypatch, width, align=1, whole=None):
    """bootstrap_ci (the whole distribution) and _bootstrap_summary in blocks of ``width`` outputs.

    ``whole``: ``_whole(ds, pairs, cfg)`` when the caller has it (computed before the blocks are set).
    """
    ref, ref_warn, ref_state = _whole(ds, pairs, cfg) if whole is None else whole
    monkeypatch.setattr(engine, "_BLOCK_BYTES", 8 * B * width)
    monkeypatch.setattr(engine, "_BLOCK_ALIGN", align)
    gen = np.random.default_rng(11)
    got, got_warn = _run(_bootstrap_summary, ds, pairs=pairs, n_resamples=B, rng=gen, **cfg)
    plan = _plan(ds, cfg.get("statistic", "mean"), True, cfg.get("k"), pairs, cfg.get("scheme", "tasks"),
                 True, cfg.get("cluster", "auto"), ("run", "task", "agent"))[0]
    n_blocks = len(engine._blocks(plan, plan.U, B))
    # after the blocks the generator is where one pass of bootstrap_ci leaves it (that pass is
    # the reference's own: its generator's state is kept, rather than a second identical pass)
    assert gen.bit_generator.state == ref_state
    # blocks were used, unless the outputs fit in one (a last block of one output joins the one before)
    assert n_blocks > 1 or plan.U <= width + 1
    return ref, ref_warn, got, got_warn, n_blocks


#: the sets, simulated once (read only: every test resamples them, none writes to them)
_SETS = _exact_sets()

# every set with every configuration, but the runs scheme only where a cell has runs to resample
_CASES = [
    pytest.param(name, cfg, id=f"{name}-" + ("-".join(f"{k}={v}" for k, v in cfg.items()) or "default"))
    for name, ds in _SETS.items()
    for cfg in _CONFIGS
    if not (cfg.get("scheme") == "runs" and ds.sizes["run"] < 2)
]


@pytest.fixture(scope="module")
def whole_memo():
    """``_whole`` of a (set, configuration, pairs), computed once for the three block widths.

    Deterministic (seeded generator, default blocks): the three widths compared their blocks
    with three identical copies of it.
    """
    memo = {}

    def get(name, cfg, pairs):
        key = (name, repr(sorted(cfg.items())), repr(pairs))
        if key not in memo:
            memo[key] = _whole(_SETS[name], pairs, cfg)
        return memo[key]

    return get


@pytest.mark.parametrize(("name", "cfg"), _CASES)
@pytest.mark.parametrize("width", [1, 2, 5])
def test_blocks_give_the_whole_distributions_numbers_bit_for_bit(name, cfg, width, monkeypatch, whole_memo):
    ds = _SETS[name]
    agents = [str(a) for a in ds.agent.values]
    for pairs in ("all", [(agents[0], agents[1]), (agents[1], agents[2]), (agents[2], agents[0])], None):
        whole = whole_memo(name, cfg, pairs)
        ref, ref_warn, got, got_warn, _ = _both(ds, pairs, cfg, monkeypatch, width, whole=whole)
        dist = ref.distribution.values.reshape(B, -1)
        p, se = _percentile_p_by_definition(dist)
        np.testing.assert_array_equal(got.ci.values, ref.ci.values)
        assert got.ci.dims == ref.ci.dims and got.ci.attrs == ref.ci.attrs
        np.testing.assert_array_equal(got.estimate.reshape(-1), ref.estimate.values.reshape(-1))
        np.testing.assert_array_equal(got.p_value.reshape(-1), p)
        np.testing.assert_array_equal(got.p_value_mcse.reshape(-1), se)
        np.testing.assert_array_equal(got.n_undefined, (~np.isfinite(dist)).sum(0))
        # the few-clusters warning is bootstrap_ci's own (compare_agents, the summary's caller, takes the CR2 t)
        assert got_warn == [w for w in ref_warn if "equal ones by their sizes" not in str(w[1])]


@pytest.mark.parametrize("cfg", [{"scheme": "two-stage"}, {"scheme": "runs"}, {}, {"method": "bca"}], ids=str)
def test_blocks_on_values_whose_sums_round(cfg, monkeypatch):
    # means of 3 runs and partial credit: the runs and two-stage schemes sum each output's
    # tasks on their own (bit for bit); the tasks scheme's BLAS product may group a narrower
    # product's columns differently and round a sum in its last bit
    for ds in (
        simulate_eval(n_agents=8, n_tasks=25, n_runs=3, score_kind="continuous", sd_run=0.3, rng=3)[0],
        simulate_eval(n_agents=8, n_tasks=36, n_runs=3, p_missing_task=0.15, p_missing_run=0.1, rng=5)[0],
    ):
        ref, ref_warn, got, got_warn, n_blocks = _both(ds, "all", cfg, monkeypatch, 3)
        assert n_blocks > 1
        if cfg.get("scheme") in ("two-stage", "runs"):
            np.testing.assert_array_equal(got.ci.values, ref.ci.values)
            assert got_warn == ref_warn
        elif cfg.get("method") != "bca":  # BCa's z0 counts resamples below the estimate: ties can flip
            np.testing.assert_allclose(got.ci.values, ref.ci.values, rtol=0, atol=1e-12)


def test_block_bounds_cover_the_outputs_on_aligned_starts(monkeypatch):
    ds = simulate_eval(n_agents=20, n_tasks=10, n_runs=1, rng=0)[0]
    plan = _plan(ds, "mean", True, None, "all", "tasks", True, "auto", ("run", "task", "agent"))[0]
    assert plan.U == 190
    monkeypatch.setattr(engine, "_BLOCK_ALIGN", 64)
    monkeypatch.setattr(engine, "_BLOCK_BYTES", 8 * 1000 * 100)  # 100 outputs of 1,000 resamples fit
    assert [(s.start, s.stop) for s in engine._blocks(plan, 190, 1000)] == [(0, 64), (64, 128), (128, 190)]
    monkeypatch.setattr(engine, "_BLOCK_ALIGN", 1)
    monkeypatch.setattr(engine, "_BLOCK_BYTES", 8 * 1000 * 63)  # 190 = 3 x 63 + 1: no block of one
    assert [(s.start, s.stop) for s in engine._blocks(plan, 190, 1000)] == [(0, 63), (63, 126), (126, 190)]
    monkeypatch.setattr(engine, "_BLOCK_BYTES", 8 * 1000 * 190)
    assert engine._blocks(plan, 190, 1000) == [slice(0, 190)]


def test_blocks_bound_the_memory(monkeypatch):
    # 1,770 pairs x 999 resamples: 14 MB of distribution held whole, blocks of at most 1 MB
    ds = simulate_eval(n_agents=60, n_tasks=30, n_runs=1, rng=2)[0]
    whole = 1770 * 999 * 8

    def peak(**kw):
        tracemalloc.start()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _bootstrap_summary(ds, pairs="all", n_resamples=999, rng=1, **kw)
        out = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return out

    assert peak() > 2 * whole  # one block: the whole distribution and its temporaries (37 MB measured)
    monkeypatch.setattr(engine, "_BLOCK_BYTES", 2**20)
    # a block's distribution, its few temporaries and the plan (5.2 MB measured)
    assert peak() < 8 * 2**20


def test_compare_agents_in_blocks_equals_one_block(monkeypatch):
    # every matrix, interval and attr of the result, with the bootstrap in blocks of 7 pairs
    for ds in (
        simulate_eval(n_agents=9, n_tasks=30, n_runs=2, rng=6)[0],
        simulate_eval(n_agents=7, n_tasks=48, n_runs=1, n_clusters=6, sd_cluster=0.5, rng=7)[0],
    ):
        for method in ("percentile", "bca"):
            ref, ref_warn = _run(compare_agents, ds, n_resamples=B, method=method, rng=3)
            with monkeypatch.context() as m:
                m.setattr(engine, "_BLOCK_BYTES", 8 * B * 7)
                m.setattr(engine, "_BLOCK_ALIGN", 1)
                got, got_warn = _run(compare_agents, ds, n_resamples=B, method=method, rng=3)
            assert list(got.table.data_vars) == list(ref.table.data_vars)
            for v in ref.table.data_vars:
                np.testing.assert_array_equal(got.table[v].values, ref.table[v].values, err_msg=v)
            assert got.table.attrs == ref.table.attrs and got_warn == ref_warn
