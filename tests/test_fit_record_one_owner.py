"""A fit's JSON records have one reader, ``fit_record``; the convergence remedy reads through it.

The remedy (``hierbench.bayes.convergence_remedy``) kept a twin reader of its own that read an
unreadable record as absent without a word, where ``fit_record`` refuses it. The remedy now
asks ``fit_record`` to warn instead (advice must not fail on the fit it advises about): the
record is named in a HierbenchWarning, read as absent, and the advice that does not depend on
it is still given. The expected texts are written here from the remedy's rules, by hand.
"""

from __future__ import annotations

import json

import pytest
import xarray as xr

from hierbench._base import HierbenchError
from hierbench._base import HierbenchWarning
from hierbench._base import fit_record
from hierbench.bayes import convergence_remedy


def _failed(**records) -> xr.DataTree:
    """A fit whose ESS failed, with the fit's own note and the given records among its attrs."""
    dt = xr.DataTree()
    dt.attrs = {
        "diag_converged": 0,
        "diag_checks": json.dumps([{"check": "ess_bulk", "passed": False}]),
        "diag_advice": "raise target_accept to 0.95.",
        **records,
    }
    return dt


def test_the_remedy_reads_a_well_formed_record_through_fit_record():
    """The reference case: 300 fixed draws give the advice to draw to the target, then the fit's note."""
    text = convergence_remedy(_failed(sampler_settings=json.dumps({"draws_rule": "fixed", "draws": 300})))
    assert text.startswith("it drew a fixed 300 draws per chain (--draws 300): leave --draws out")
    assert "; only if a run to the target fails too, read the notes this short run left: raise target_accept to 0.95;" in text


@pytest.mark.parametrize("key", ["sampler_settings", "fit_run"])
@pytest.mark.parametrize("bad", ['{"draws_rule": "fixed", "draws": 3', "[300]", "7"])
def test_an_unreadable_record_warns_by_name_and_the_rest_of_the_advice_is_given(key, bad):
    """Text that is not JSON, a JSON list, a number: named in a warning, read as absent; no crash."""
    with pytest.warns(HierbenchWarning, match=rf"the fit's attr '{key}' (is not JSON|holds a JSON)") as seen:
        text = convergence_remedy(_failed(**{key: bad}))
    assert "read as absent" in str(seen[0].message) and "refit, or drop the attr" in str(seen[0].message)
    # by hand: with no record to say how it drew, only the fit's note is left, led as the only advice
    assert text.startswith("the fit's notes say: raise target_accept to 0.95; these fixes are arguments")
    assert "--draws" not in text


def test_fit_record_raises_by_default_warns_when_asked_and_reads_a_dict_as_it_is():
    fit = xr.DataTree()
    fit.attrs["hierbench_spec"] = "{not json"
    with pytest.raises(HierbenchError, match="'hierbench_spec' is not JSON"):
        fit_record(fit, "hierbench_spec")
    with pytest.warns(HierbenchWarning, match="'hierbench_spec' is not JSON"):
        assert fit_record(fit, "hierbench_spec", unreadable="warn") == {}
    fit.attrs["hierbench_spec"] = {"model": "crossed"}  # set in memory, not read from a file
    assert fit_record(fit, "hierbench_spec") == {"model": "crossed"}
    with pytest.raises(ValueError, match=r"`unreadable` must be 'raise' or 'warn'; got 'ignore'"):
        fit_record(fit, "hierbench_spec", unreadable="ignore")
