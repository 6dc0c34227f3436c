"""A fit's recorded checks (``diag_checks``) that cannot be read are said, not read as "no failed checks".

``convergence_remedy`` read a malformed ``diag_checks`` (hand-edited attrs, a truncated file) as
``[]`` without a word, i.e. as a fit whose R-hat and ESS passed, and so left out the advice to draw
to the ESS target. It now reads them through ``fit_checks`` (the list twin of ``fit_record``, one
rule in ``hierbench._base``) and warns; ``describe_r_hat`` and the report's convergence table, which
state a verdict, refuse a malformed ``diag_checks`` (and ``describe_r_hat`` a malformed ``diag_thresholds``). The expected texts are written here from the functions' rules, by hand.
"""

from __future__ import annotations

import json

import pytest
import xarray as xr

from hierbench._base import HierbenchError
from hierbench._base import HierbenchWarning
from hierbench._base import fit_checks
from hierbench.bayes import convergence_remedy
from hierbench.bayes._sampler._sampling import describe_r_hat

#: not JSON (truncated), a JSON object, a JSON number, a JSON list of numbers
MALFORMED = ['[{"check": "ess_bulk", "passed": false', '{"check": "ess_bulk", "passed": false}', "7", "[1, 2]"]
WHY = r"the fit's attr 'diag_checks' (is not JSON|holds a JSON (dict|int|list with an item of type int))"

FIXED = "it drew a fixed 300 draws per chain (--draws 300): leave --draws out"
NOTE_ONLY = "the fit's notes say: raise target_accept to 0.95; these fixes are arguments"


def _failed(checks) -> xr.DataTree:
    """A fit that failed, drew a fixed 300 draws, with the fit's own note and ``checks`` as its diag_checks."""
    dt = xr.DataTree()
    dt.attrs = {"diag_converged": 0, "diag_checks": checks, "diag_advice": "raise target_accept to 0.95.",
                "sampler_settings": json.dumps({"draws_rule": "fixed", "draws": 300})}  # fmt: skip
    return dt


def test_well_formed_checks_give_the_advice_as_before():
    """A failed ESS check (as text, or as a list in memory) gives the draws advice, then the note."""
    for checks in (json.dumps([{"check": "ess_bulk", "passed": False}]), [{"check": "ess_bulk", "passed": False}]):
        text = convergence_remedy(_failed(checks))
        assert text.startswith(FIXED) and "; only if a run to the target fails too, read the notes this short run left: raise target_accept" in text
    # passed mixing checks (only a divergence failed): no draws advice, the note alone, as before
    text = convergence_remedy(_failed(json.dumps([{"check": "ess_bulk", "passed": True},
                                                  {"check": "divergences", "passed": False}])))  # fmt: skip
    assert text.startswith(NOTE_ONLY)


@pytest.mark.parametrize("bad", MALFORMED)
def test_malformed_checks_warn_by_name_and_the_rest_of_the_advice_is_given(bad):
    with pytest.warns(HierbenchWarning, match=WHY) as seen:
        text = convergence_remedy(_failed(bad))
    said = str(seen[0].message)
    assert "read as absent" in said and "compute_diagnostics(fit) writes it again" in said
    assert text.startswith(NOTE_ONLY) and "--draws" not in text  # by hand: only the note is left


R_HAT = {"check": "r_hat", "value": 1.0327, "at": "ability[x]", "limit": 1.0461, "n_elements": 121, "passed": True}


def _attrs(**kw) -> dict:
    return {"diag_thresholds": json.dumps({"r_hat": 1.01}), "diag_checks": json.dumps([R_HAT]),
            "draws": 200, "chains": 4, **kw}  # fmt: skip


def test_describe_r_hat_reads_well_formed_records_as_before():
    text = describe_r_hat(_attrs())
    assert text.startswith("R-hat 1.033 (at ability[x]) <= 1.046, the limit at 200 draws per chain and 121 elements")
    assert describe_r_hat(_attrs(diag_checks=[R_HAT])) == text  # a list held in memory
    assert describe_r_hat(_attrs(diag_checks="[]")) == "R-hat not computed (no element varies over draws)"
    # no R-hat for want of draws or chains is said as such (a 3-draw fit read "no element varies")
    nan = json.dumps([{**R_HAT, "value": float("nan"), "passed": False}])
    assert describe_r_hat(_attrs(diag_checks=nan, draws=3)) == (
        "R-hat not computed (3 draws per chain: ArviZ computes R-hat from at least 4)")
    assert describe_r_hat(_attrs(diag_checks=nan, chains=1)) == "R-hat not computed (1 chain: R-hat compares chains)"
    # a floor of 1.05 read from the thresholds: the limit 1.046 is then the conventional one
    assert describe_r_hat(_attrs(diag_thresholds=json.dumps({"r_hat": 1.05}))).endswith("<= 1.046, the conventional limit")


@pytest.mark.parametrize("bad", MALFORMED)
def test_describe_r_hat_refuses_malformed_checks(bad):
    with pytest.raises(HierbenchError, match=WHY + r".*compute_diagnostics\(fit\) writes it again"):
        describe_r_hat(_attrs(diag_checks=bad))


@pytest.mark.parametrize("bad", ['{"r_hat": 1.0', "[1.01]"])
def test_describe_r_hat_refuses_malformed_thresholds(bad):
    with pytest.raises(HierbenchError, match=r"the fit's attr 'diag_thresholds' (is not JSON|holds a JSON list)"):
        describe_r_hat(_attrs(diag_thresholds=bad))


def test_fit_checks_absent_is_empty_and_the_mode_is_checked():
    assert fit_checks(xr.DataTree()) == []
    with pytest.raises(ValueError, match=r"`unreadable` must be 'raise' or 'warn'; got 'ignore'"):
        fit_checks(xr.DataTree(), unreadable="ignore")


@pytest.mark.parametrize("bad", MALFORMED)
def test_report_convergence_table_refuses_malformed_checks(bad):
    """The report's table read them with a bare json.loads: a raw JSONDecodeError, or a later failure."""
    from hierbench.report._convergence import _diag_checks

    dt = xr.DataTree()
    dt.attrs = {"diag_checks": bad, "diag_failures": "[]"}
    with pytest.raises(HierbenchError, match=WHY):
        _diag_checks(dt)
    dt.attrs["diag_checks"] = json.dumps([R_HAT])
    assert _diag_checks(dt) == ([R_HAT], [])
