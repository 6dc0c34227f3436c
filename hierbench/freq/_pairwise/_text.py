"""Short text of the pairwise results: agents best first, the top and the bottom of a long list.

Private to the pairwise wing: the reprs of :class:`BradleyTerryMLResult`,
:class:`WinRateResult` and :class:`EloResult` list their agents through
:func:`_ranked_lines`, so a 59-agent table reads as a leaderboard, not as an
alphabetical (or agent x opponent) dump; ``to_frame()`` keeps every row.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence

import numpy as np
import xarray as xr

__all__: list[str] = []

#: agents shown at the top and at the bottom of a long list
N_TOP, N_BOTTOM = 8, 3


def _number(digits: int) -> Callable[[float], str]:
    """A formatter with ``digits`` decimals that writes NaN as "nan" and an infinite bound as "inf" / "-inf"."""
    return lambda x: f"{x:.{digits}f}" if np.isfinite(x) else "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")


def _rows_best_first(est: np.ndarray) -> list[int | None]:
    """Indices of ``est`` from the largest down (NaN last); None where rows are left out."""
    order = np.argsort(-np.where(np.isnan(est), -np.inf, est), kind="stable").tolist()
    if len(order) <= N_TOP + N_BOTTOM + 1:
        return order
    return [*order[:N_TOP], None, *order[len(order) - N_BOTTOM :]]


def _ranked_lines(
    estimate: xr.DataArray,
    ci: xr.DataArray,
    fmt: Callable[[float], str],
    extra: Sequence[str] | None = None,
) -> list[str]:
    """One line per agent, best first: rank (1 = largest, ties share it), name, estimate [lower, upper].

    ``estimate`` is over ``agent`` and ``ci`` its interval (``ci_bound``). ``extra``
    is text put at the end of each agent's line. With many agents the top
    :data:`N_TOP` and the bottom :data:`N_BOTTOM` are shown and the rest counted.
    """
    agents = [str(a) for a in estimate["agent"].values]
    est = np.asarray(estimate.values, dtype=float)
    lo, hi = (ci.sel(ci_bound=b).values for b in ("lower", "upper"))
    rows = _rows_best_first(est)
    shown = [i for i in rows if i is not None]
    cells = {i: (fmt(est[i]), f"[{fmt(lo[i])}, {fmt(hi[i])}]") for i in shown}
    w = max(len(str(agents[i])) for i in shown)
    we = max(len("estimate"), *(len(e) for e, _ in cells.values()))
    wi = max(len("[lower, upper]"), *(len(c) for _, c in cells.values()))
    lines = [f"  {'rank':>4}  {'agent':<{w}}  {'estimate':>{we}}  {'[lower, upper]':<{wi}}"]
    for i in rows:
        if i is None:
            lines.append(f"  {'...':>4}  ({len(est) - len(shown)} more agents)")
            continue
        rank = str(int((est > est[i]).sum()) + 1) if np.isfinite(est[i]) else "-"
        tail = extra[i] if extra is not None else ""
        e, c = cells[i]
        lines.append(f"  {rank:>4}  {agents[i]!s:<{w}}  {e:>{we}}  {c:<{wi}}{tail}".rstrip())
    return lines
