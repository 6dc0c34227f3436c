"""The rootogram's panels, and the agents it leaves out, follow the caller's agent order (audit B s71, finding 3).

The report's data summary promises one order of agents for every table and figure; the panels ran
in the fit's cell order (METR: Claude 3 Opus first, o1 seventh). The expected orders are written
out by hand from the cells below.
"""

import numpy as np
import xarray as xr

from hierbench.report._figures import PPC_MIN_CELLS
from hierbench.report._figures import ppc_rootogram


def _titles(pc) -> list[str]:
    fig = pc.viz["figure"]
    fig = fig.item() if hasattr(fig, "item") else fig
    return [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.has_data()]


def test_panels_and_left_out_agents_take_the_callers_order():
    g = np.random.default_rng(1)
    # cells in the fit's order c, a, b (6 cells each: a panel), d (2) and e (3): no panel
    agents = np.repeat(["c", "a", "b", "d", "e"], [6, 6, 6, 2, 3])
    assert 2 < 3 < PPC_MIN_CELLS <= 6
    m = len(agents)
    fit = xr.DataTree.from_dict({
        "observed_data": xr.Dataset({"y": ("cell", g.integers(0, 4, m))}, coords={"cell_agent": ("cell", agents)}),
        "posterior_predictive": xr.Dataset({"y": (("chain", "draw", "cell"), g.integers(0, 4, (2, 20, m)))}),
        "constant_data": xr.Dataset({"cell_n_runs": ("cell", np.full(m, 3))}),
    })  # fmt: skip
    pc, n_main, left_out = ppc_rootogram(fit, order=["b", "e", "d", "c", "a"])
    assert n_main == 3 and _titles(pc) == ["b", "c", "a"] and left_out == ["e", "d"]
    # agents the order lacks go last, in the fit's order (no order at all: the fit's order, as before)
    pc, _, left_out = ppc_rootogram(fit, order=["a", "d"])
    assert _titles(pc) == ["a", "c", "b"] and left_out == ["d", "e"]
