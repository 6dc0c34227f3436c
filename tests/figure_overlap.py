"""Find text that overlaps other text in a rendered matplotlib figure (test helper).

Every piece of text a reader must read is collected after drawing: tick
labels (major and minor) of ticks inside the view, axis labels, titles, the suptitle, free
text and annotations, and each legend as one box. Two pieces overlap when
their rectangles, rotated as drawn, intersect by more than ``tol`` pixels
(separating-axis test on the rotated rectangles, so 45-degree tick labels
are judged by their glyph boxes, not by their much larger upright bounding
boxes).
"""

from __future__ import annotations

import numpy as np


def _corners(text, renderer) -> np.ndarray:
    """The four corners (pixels) of a text's rotated glyph box (an annotation's arrow left out)."""
    from matplotlib.text import Text

    box = Text.get_window_extent(text, renderer)
    angle = np.deg2rad(text.get_rotation())
    if abs(np.sin(angle)) < 1e-6 or abs(np.cos(angle)) < 1e-6:
        return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
    w, h, _ = renderer.get_text_width_height_descent(
        text.get_text(), text.get_fontproperties(), ismath=False
    )
    c = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    half = np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) / 2
    return c + half @ rot.T


def _box(bbox) -> np.ndarray:
    return np.array([[bbox.x0, bbox.y0], [bbox.x1, bbox.y0], [bbox.x1, bbox.y1], [bbox.x0, bbox.y1]])


def _penetration(a: np.ndarray, b: np.ndarray) -> float:
    """How deep two convex quadrilaterals intersect (0 when apart), separating-axis test."""
    depth = np.inf
    for poly in (a, b):
        for i in range(4):
            edge = poly[(i + 1) % 4] - poly[i]
            n = np.array([-edge[1], edge[0]])
            norm = np.hypot(*n)
            if norm == 0:
                continue
            n = n / norm
            pa, pb = a @ n, b @ n
            depth = min(depth, min(pa.max(), pb.max()) - max(pa.min(), pb.min()))
            if depth <= 0:
                return 0.0
    return float(depth)


def _in_view(ax, axis, loc: float) -> bool:
    lo, hi = sorted(ax.get_xlim() if axis is ax.xaxis else ax.get_ylim())
    span = hi - lo
    return lo - 1e-9 * span <= loc <= hi + 1e-9 * span


def text_pieces(fig, renderer=None) -> list[tuple[str, np.ndarray]]:
    """(label, corners) of every piece of text drawn in ``fig``.

    ``renderer``: the figure has just been drawn with it (``saved_overlaps``); without one the
    figure is drawn here.
    """
    if renderer is None:
        fig.canvas.draw()
    r = renderer if renderer is not None else fig.canvas.get_renderer()
    out, seen = [], set()

    def add(kind, t):
        if t is not None and id(t) not in seen and t.get_visible() and t.get_text().strip():
            seen.add(id(t))  # a suptitle is also one of the figure's texts: count it once
            out.append((f"{kind} {t.get_text()[:40]!r}", _corners(t, r)))

    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            if not axis.get_visible():
                continue
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                if _in_view(ax, axis, tick.get_loc()):
                    add("tick label", tick.label1)
                    add("tick label", tick.label2)
            add("axis label", axis.label)
        for t in (ax.title, ax._left_title, ax._right_title):
            add("title", t)
        for t in ax.texts:
            add("text", t)
        leg = ax.get_legend()
        if leg is not None and leg.get_visible():
            out.append(("legend", _box(leg.get_window_extent(r))))
    for leg in fig.legends:
        out.append(("figure legend", _box(leg.get_window_extent(r))))
    if getattr(fig, "_suptitle", None) is not None:
        add("suptitle", fig._suptitle)
    for t in fig.texts:
        add("figure text", t)
    return out


def overlaps(fig, tol: float = 1.0, renderer=None) -> list[str]:
    """Every pair of text pieces of ``fig`` that overlap by more than ``tol`` pixels (``renderer``: as ``text_pieces``)."""
    pieces = text_pieces(fig, renderer)
    if len(pieces) < 2:
        return []
    # Pieces whose upright bounding boxes do not meet cannot intersect (a convex polygon lies in
    # its box), so only the pairs whose boxes meet go to the exact test: a figure with hundreds
    # of tick labels has few such pairs.
    c = np.stack([corners for _, corners in pieces])
    lo, hi = c.min(axis=1), c.max(axis=1)
    meet = np.all((np.minimum(hi[:, None], hi[None]) - np.maximum(lo[:, None], lo[None])) > 0, axis=2)
    found = []
    for i, j in zip(*np.nonzero(np.triu(meet, k=1)), strict=True):
        d = _penetration(pieces[i][1], pieces[j][1])
        if d > tol:
            found.append(f"{pieces[i][0]} overlaps {pieces[j][0]} by {d:.1f} px")
    return found


def saved_overlaps(fig, save, tol: float = 1.0) -> tuple[object, list[str]]:
    """``save()``'s result and ``overlaps(fig)`` as the ``savefig`` inside ``save`` laid ``fig`` out.

    ``savefig(bbox_inches="tight")`` first draws the figure without painting it, to run its layout
    and find the tight box, then paints it. The text is read in that first drawing (at its
    ``draw_event``, before the box moves anything): the layout pass and the positions a draw of
    the figure here would give (one pass from the same state), without that draw's cost.
    """
    found = []

    def on_draw(event):
        fig.canvas.mpl_disconnect(cid)  # the first drawing only: the painted one is moved to the box
        try:
            found.append(overlaps(fig, tol, renderer=event.renderer))
        except Exception as exc:  # said after savefig, not swallowed by matplotlib's callbacks
            found.append(exc)

    cid = fig.canvas.mpl_connect("draw_event", on_draw)
    try:
        out = save()
    finally:
        fig.canvas.mpl_disconnect(cid)
    if not found:
        raise RuntimeError("savefig did not draw the figure before painting it: nothing was checked")
    if isinstance(found[0], Exception):
        raise found[0]
    return out, found[0]


#: Code run first in a notebook's kernel: after every cell, check each new figure (Agg backend).
KERNEL_HOOK = """
import sys as _hb_sys
_hb_sys.path.insert(0, {tests!r})
from figure_overlap import overlaps as _hb_overlaps_of
from figure_overlap import saved_overlaps as _hb_saved_overlaps
_hb_overlaps, _hb_seen = [], set()


def _hb_check(*_):
    import matplotlib.pyplot as _plt
    for _n in _plt.get_fignums():
        _fig = _plt.figure(_n)
        if id(_fig) not in _hb_seen:
            _hb_seen.add(id(_fig))
            _title = _fig._suptitle.get_text() if _fig._suptitle else (_fig.axes[0].get_title() if _fig.axes else "")
            _hb_overlaps.extend(f"figure {{_n}} ({{_title[:50]!r}}): {{o}}" for o in _hb_overlaps_of(_fig))


get_ipython().events.register("post_execute", _hb_check)

# figures a report renders are closed inside build(): check each as its savefig lays it out
import hierbench.report._report as _hb_R

_hb_png = _hb_R._png_bytes


def _hb_checked_png(obj, name):
    _fig = _hb_R.figure_of(obj)
    if _fig is None:
        return _hb_png(obj, name)  # refused there
    _png, _found = _hb_saved_overlaps(_fig, lambda: _hb_png(obj, name))
    _hb_overlaps.extend(f"report figure {{name}}: {{o}}" for o in _found)
    return _png


_hb_R._png_bytes = _hb_checked_png
"""

#: Code run last: the figures' overlaps, printed as JSON.
KERNEL_REPORT = "import json as _hb_json; print('HB_OVERLAPS', _hb_json.dumps(_hb_overlaps))"


class ReportOverlaps:
    """Check every figure a report renders for overlapping text while the block runs (``saved_overlaps``)."""

    def __enter__(self):
        import hierbench.report._report as R

        self.found, self._R, self._orig = {}, R, R._png_bytes

        def checked(obj, name):
            fig = R.figure_of(obj)
            if fig is None:
                return self._orig(obj, name)  # refused there
            png, self.found[name] = saved_overlaps(fig, lambda: self._orig(obj, name))
            return png

        R._png_bytes = checked
        return self

    def __exit__(self, *exc):
        self._R._png_bytes = self._orig
