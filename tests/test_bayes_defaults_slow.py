"""Slow checks of the defaults: the quick real-data rows and a small SBC.

The same draws on cold and warm compile caches: tests/test_bayes_build_cache.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats


@pytest.mark.slow
@pytest.mark.parametrize("row", ["tau_bb", "rats_bb", "citations_bt"])
def test_quick_real_data_rows_pass_the_package_checks(row, shared_data):
    import bench_defaults

    res = bench_defaults.run_row(row)
    assert res["passed"], res["failures"]
    assert res["divergences"] == 0


@pytest.mark.slow
def test_sbc_small_beta_binomial(tmp_path):
    # 20 replicates of the 4 x 30 x 5 design at the fit's defaults; with so few, the check is loose:
    # 4 rank bins, chi-square p > 0.001, 90% coverage inside its Wilson band
    import sbc

    out = tmp_path / "sbc.jsonl"
    sbc.run(["beta_binomial"], ["small"], 20, str(out), seed=7)  # at the fit's defaults
    rows = sbc.summarise(str(out), bins=4)
    for r in rows:
        assert r["chi2_p"] > 0.001, r
        assert r["cov90_band"][0] <= 0.9 <= r["cov90_band"][1], r
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    # Divergences, against the 200-replicate study at the same defaults (committed beside the
    # SBC script): there a replicate had a divergent transition with probability 26/200, and one
    # replicate held 53 of them. The pooled rate over 20 replicates (a bound of 0.1% of draws
    # until now) fails whenever such a replicate is drawn, which on another CPU's draws happened
    # (50 of 49,600: one replicate held 39). The share of replicates with any divergence does not
    # hinge on one: it must stay within the binomial's upper 0.1% tail of the study's rate. (The
    # same 200 replicates rerun on the CPU where the old bound failed, seed 2026,
    # results/sbc_defaults_beta_binomial_small_stop41.jsonl: 22 of 200 with a divergence, at most 15.)
    ref = [json.loads(line) for line in (Path(sbc.__file__).parent / "results" / "sbc_defaults_beta_binomial_small.jsonl").open()]
    p_ref = np.mean([r["n_div"] > 0 for r in ref if r["design"] == "small"])
    bound = stats.binom.isf(0.001, len(recs), p_ref)
    assert sum(r["n_div"] > 0 for r in recs) <= bound, ([r["n_div"] for r in recs], p_ref, bound)
    assert np.median([r["n_div"] for r in recs]) == 0


@pytest.mark.slow
def test_sbc_horizon_replicate_carries_its_outcome():
    # a horizon replicate is rebuilt from its own outcome (the builder chooses its centring on it):
    # the rebuilt model's successes are the predictive draw's, and its log binomial coefficients
    # are scipy's log C(n, y); no sampling
    import sbc
    from scipy.special import comb

    tmpl = sbc.template_mixed("horizon", "small")
    model = sbc._build_formula("horizon", tmpl)
    _, pp = sbc._mixed_prior(model, 3, 11)
    for r in range(3):
        y = pp.isel(chain=0, draw=r).values
        fm, form = sbc._replicate_form("horizon", tmpl, model, y)
        assert isinstance(form, list)
        n = np.asarray(fm["cell_n_runs"].get_value())
        np.testing.assert_array_equal(fm["cell_n_success"].get_value(), y)
        np.testing.assert_allclose(fm["cell_log_binom"].get_value(), np.log(comb(n, y)), rtol=1e-10)
        upd = sbc._mixed_updates(fm, y)
        np.testing.assert_allclose(upd["cell_log_binom"], np.log(comb(n, y)), rtol=1e-10)


def test_sbc_familywise_is_holm_over_every_check():
    # the report's family-wise view: every check's p-value (rank chi-square, exact binomial tests of the
    # 50% and 90% coverage) Holm-adjusted together; expected values from scipy and statsmodels
    import glob

    import sbc
    from statsmodels.stats.multitest import multipletests

    files = sorted(glob.glob(str(Path(sbc.__file__).parent / "results" / "sbc_defaults_irt_2pl_small_seed*.jsonl")))
    files = [f for f in files if "agent_task" not in f]
    rows = sbc.summarise(files)
    recs = [json.loads(line) for f in files for line in open(f)]
    spec = "sd_log_discrimination"
    row = next(r for r in rows if r["param"] == spec)
    hits = sum(r["in50"][spec] for r in recs)
    assert row["p50"] == pytest.approx(stats.binomtest(hits, len(recs), 0.5).pvalue, rel=1e-12)
    ps = np.array([[r["chi2_p"], r["p50"], r["p90"]] for r in rows]).ravel()
    n_fail = sbc.familywise(rows)
    reject, adj, _, _ = multipletests(ps, alpha=0.05, method="holm")
    assert n_fail == int(reject.sum())
    np.testing.assert_allclose([r["holm"] for r in rows], adj.reshape(-1, 3).min(axis=1), rtol=1e-12)
    assert [r["fw_ok"] for r in rows] == list(~reject.reshape(-1, 3).any(axis=1))
