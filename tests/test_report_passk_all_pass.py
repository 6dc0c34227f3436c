"""The pass^k section says which way a beta-binomial fit leans where many cells passed every run (audit K, F5)."""

import xarray as xr

from hierbench.report._context import _Context
from hierbench.report._passk import _all_pass_text


def _ctx(model: str, data) -> _Context:
    fit = xr.DataTree()
    fit.attrs = {"hierbench_model": model}
    return _Context(fit=fit, data=data, battles=None, prob=0.95)


def test_tau_bench_beta_binomial_rows_say_the_model_leans_low_at_large_k(shared_data):
    """tau-bench airline: every task has 4 runs and pass^4 = 0.200 (the published table, README line 18),
    so 20% of the cells passed every run, by that table alone.
    """
    from hierbench.data import load_tau_bench_airline

    data = load_tau_bench_airline(shared_data)
    text = _all_pass_text(_ctx("beta_binomial", data))
    assert text.startswith(" Here 20% of the agent x task cells with two or more runs passed every run.")
    assert "below the unbiased estimate" in text and "the unbiased column is the model-free one" in text
    assert _all_pass_text(_ctx("crossed", data)) == ""  # said of the beta population only
    one_run = data.isel(run=[0])  # no cell with two runs: nothing to say
    assert _all_pass_text(_ctx("beta_binomial", one_run)) == ""
