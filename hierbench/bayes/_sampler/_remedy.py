"""What to do about a fit that failed its convergence checks, read from what the fit records.

The one owner of that advice: ``hierbench fit`` and ``hierbench report`` print it in the
command line's words, the report's Convergence section in both the command's and the
Python call's.
"""

from __future__ import annotations

from ..._base import fit_checks
from ..._base import fit_record
from ._sampling import MAX_DRAWS

__all__ = ["convergence_remedy"]

#: a fit's root attr naming the command that made it, where the fit's own settings do not say how to change them
MADE_BY = "hierbench_made_by"
#: its value for the demo's smoke run (a fixed number of draws the demo has no flag for)
DEMO_FAST = "hierbench demo --fast"


def convergence_remedy(dt, cli: bool = True) -> str:
    """What to do about a fit that failed its convergence checks, from what the fit records ("" if passed).

    A fit of a fixed number of draws whose ESS or R-hat failed: draw to the ESS target instead
    (SWE-bench bash-only with clusters, 300 draws per chain: min ESS 48 at ``sd_cluster``; the
    default run converged in 7 s). A run to the target that stopped at its cap: more draws
    than the cap. Then the fit's own notes (``diag_advice``: the likely cause and its fix, in
    the Python builders' arguments), after a short fixed run as a second step only: its notes
    may blame the structure for what too few draws did. ``cli``: in the command line's words (``hierbench fit``'s
    flags); else in both the command's and the Python call's.

    The records it reads (``sampler_settings``, ``fit_run``) are read by
    ``hierbench._base.fit_record``, the checks (``diag_checks``) by its list twin ``fit_checks``; one
    that is unreadable (an edited or truncated file) does not stop the advice: it is named
    in a :class:`hierbench.HierbenchWarning` and read as absent, so the advice drawn from
    it is left out and the rest given.
    """
    a = dt.attrs
    conv = a.get("diag_converged")
    if conv is None or int(conv):
        return ""
    checks = fit_checks(dt, unreadable="warn")
    mixing = any(not c.get("passed", True) for c in checks if c.get("check") in ("r_hat", "ess_bulk", "ess_tail"))
    settings = fit_record(dt, "sampler_settings", unreadable="warn")
    run = fit_record(dt, "fit_run", unreadable="warn")
    parts = []
    fixed = mixing and settings.get("draws_rule") == "fixed" and bool(settings.get("draws"))
    if fixed:
        n = int(settings["draws"])
        given, how = (f"--draws {n}", "leave --draws out") if cli else (
            f"--draws {n}, or draws={n}", "refit without --draws (`hierbench fit`) or with draws=None, the default "
            "of hierbench.bayes.fit")  # fmt: skip
        if a.get(MADE_BY) == DEMO_FAST:  # the demo has no --draws: its smoke run is what --fast asks for
            given, how = DEMO_FAST, "run the demo without --fast"
        parts.append(
            f"it drew a fixed {n} draws per chain ({given}): {how}, so that the fit draws until every "
            "element's bulk and tail ESS reach their target and R-hat its limit (at most "
            f"{MAX_DRAWS} draws per chain)"
        )
    elif mixing and run.get("rule") == "target_ess" and run.get("reached") is False:
        cap = int(run.get("max_draws", 0) or 0)
        how = f"--draws {2 * cap} --tune 1000" + ("" if cli else f" (hierbench.bayes.fit: max_draws={2 * cap}, tune=1000)")
        parts.append(f"the run stopped at its cap of {cap} draws per chain short of its ESS target: refit with {how}")
    advice = str(a.get("diag_advice", "") or "").strip()
    if advice:
        # after a short fixed run its notes may blame the structure for what the draws did (METR, 300
        # draws: "centred form for tasks"; the default draw rule converged with it): said as conditional
        lead = ("only if a run to the target fails too, read the notes this short run left" if fixed else
                "if that does not do it, the fit's notes say" if parts else "the fit's notes say")
        python = ("; these fixes are arguments of the Python model builders (hierbench.bayes.build_crossed and "
                  "the others) and of hierbench.bayes.fit" if cli else "")
        clusters = "; from the command line clusters=False is leaving out --cluster" if "clusters=False" in advice else ""
        parts.append(f"{lead}: {advice.rstrip('.')}{python}{clusters}")
    return "; ".join(parts)

