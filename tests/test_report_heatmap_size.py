"""The P(a > b) heatmap is readable with a few agents with long names (audit C, C7).

Two to four SWE-bench agents ("Claude 4.5 Opus medium (20251101)") left a matrix
10 pixels high whose names printed over each other, under a title that ran into
the colour bar. The checks are made on what matplotlib's renderer draws, not on
the sizing code: no two pieces of text overlap (``figure_overlap``, rotated glyph
boxes), the title meets neither the matrix nor the colour bar, nothing is drawn
outside the figure, each cell is at least half an inch, and the figure is wider
for longer names while the cells keep their size.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from figure_overlap import overlaps

pytest.importorskip("matplotlib")

#: names as SWE-bench's bash-only leaderboard writes them
SWE = ["Claude 4.5 Opus medium (20251101)", "Gemini 3 Pro Preview (2025-11-18)", "o3 (2025-04-16)",
       "GPT-5 mini (2025-08-07) (medium reasoning)"]  # fmt: skip
TITLE = "P(row agent > column agent) by expected score on a new task from the task population"


def _matrix(names: list[str]) -> pd.DataFrame:
    n = len(names)
    p = np.triu(np.linspace(0.1, 0.9, n * n).reshape(n, n), 1)
    p = p + np.tril(1 - p.T, -1)
    return pd.DataFrame(p, index=names, columns=names).where(~np.eye(n, dtype=bool))


def _draw(names: list[str]):
    from hierbench.report import heatmap

    return heatmap(_matrix(names), title=TITLE, xlabel="opponent", ylabel="agent",
                   cbar_label="posterior probability (0-1)")  # fmt: skip


def _inches(fig, artist) -> np.ndarray:
    """(width, height) in inches of what ``artist`` covers on the drawn figure."""
    fig.canvas.draw()
    box = artist.get_window_extent(fig.canvas.get_renderer())
    return np.array([box.width, box.height]) / fig.dpi


@pytest.mark.parametrize("n", [2, 3, 4])
def test_few_agents_with_long_names_draw_without_overlaps(n):
    """No text over other text, the title clear of the matrix and the colour bar, all inside the figure."""
    import matplotlib.pyplot as plt

    fig = _draw(SWE[:n])
    try:
        assert overlaps(fig) == []
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        title = fig._suptitle.get_window_extent(r)
        for ax in fig.axes:  # the matrix and the colour bar, with their tick labels
            assert not title.overlaps(ax.get_tightbbox(r)), ax
        whole = fig.bbox
        for t in [*fig.axes[0].get_xticklabels(), *fig.axes[0].get_yticklabels(), fig._suptitle,
                  fig.axes[1].yaxis.label]:  # fmt: skip
            b = t.get_window_extent(r)
            assert whole.x0 <= b.x0 and b.x1 <= whole.x1 and whole.y0 <= b.y0 and b.y1 <= whole.y1, t.get_text()
        side = _inches(fig, fig.axes[0]) / np.array([n, n])
        assert side.min() >= 0.5  # a cell holds its two-decimal number (7 points wide, about 0.2 inch)
    finally:
        plt.close(fig)


def test_longer_names_widen_the_figure_not_shrink_the_cells():
    """The same 3 x 3 matrix with one-letter names and with SWE-bench's: same cells, a wider figure."""
    import matplotlib.pyplot as plt

    short, long = _draw(["a", "b", "c"]), _draw(SWE[:3])
    try:
        cells_short, cells_long = _inches(short, short.axes[0]), _inches(long, long.axes[0])
        assert np.allclose(cells_short, cells_long, atol=0.05)
        # the longest y name alone is about 2.3 inches at 10 points: the figure grows by more than 1.5
        assert long.get_figwidth() > short.get_figwidth() + 1.5
    finally:
        plt.close(short)
        plt.close(long)
