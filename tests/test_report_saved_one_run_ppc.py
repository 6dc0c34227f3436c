"""A compact-saved fit of one run per cell: the predictive-check section gives the design's reason first.

Audit S, S22: the in-memory fit's report said the check "reduces to each agent's success rate ...
cannot show misfit here"; the same fit saved compact (no posterior_predictive group) said only
"save with groups='all' ... to check it", advice that cannot help on a design of one run per cell.
"""

from __future__ import annotations

import warnings

import pytest

DESIGN_NOTE = "every agent x task cell holds one run"
#: the rest of the predictive check's note (the pass^k section's skip note opens with DESIGN_NOTE too)
PPC_REASON = "the predictive check of success counts per cell reduces to each agent's success rate"


def _ppc_section(md: str) -> str:
    """The predictive-check section of a Markdown report, found by its heading (to the next heading)."""
    from hierbench.report._context import _TITLES

    head = f"\n## {_TITLES['ppc']}\n"
    assert md.count(head) == 1, head
    return md.split(head, 1)[1].split("\n## ", 1)[0]


@pytest.mark.slow  # one small fit and two reports of the one section read
def test_saved_and_fresh_fit_give_the_same_design_note(tmp_path):
    """Each report is ``build``'s own, its sections cut to the predictive check (``sections=``; the
    generic skip below is that section's alone): it is computed and written as in the whole report.
    """
    from hierbench import bayes
    from hierbench.io import load_fit
    from hierbench.io import save_fit
    from hierbench.report import build
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=3, n_tasks=15, n_runs=1, rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 100 draws
        fit = bayes.fit(bayes.build_crossed(ds), draws=100, tune=100, chains=2, rng=0, progress=False)
        saved = load_fit(save_fit(fit, tmp_path / "fit.nc"))  # compact: no posterior_predictive
        # the predictive check's note is read, not the frequentist half: left out of both (freq=None)
        fresh_md = build(fit, ds, path=tmp_path / "fresh.md", freq=None, progress=False, sections=["ppc"]).read_text()
        saved_md = build(saved, ds, path=tmp_path / "saved.md", freq=None, progress=False, sections=["ppc"]).read_text()
    assert "posterior_predictive" not in saved.children
    # the in-memory fit: the design's reason first, then the task side of the check, which it can make
    fresh = " ".join(_ppc_section(fresh_md).split())
    assert fresh.startswith(f"Per agent, {DESIGN_NOTE}: {PPC_REASON}"), fresh[:300]
    assert "Across the 15 tasks, all agents pooled" in fresh
    # saved compact: the design's reason first, and the group the task side needs (not the generic advice)
    saved_ppc = _ppc_section(saved_md)
    assert saved_ppc.lstrip().startswith(f"> **Note:** {DESIGN_NOTE}: {PPC_REASON}"), saved_ppc[:300]
    assert "the task side needs the fit's posterior_predictive group" in " ".join(saved_ppc.split())
    assert "the fit has no posterior_predictive group" not in saved_md  # the generic skip, nowhere
