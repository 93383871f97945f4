"""Text labels on a plot that never overlap: each label's box in pixels from its position on
the axis and its text, placed in the first free lane (a row of labels) or hidden when no lane
is free, and the font a heat map's cells can hold.

Plotly draws annotations where it is told and lets them overlap; the UI knows the axis range
and a width the plot is at least drawn at, so it places the labels itself. A label's width is
estimated from its characters (:data:`CHAR_EM`: the widest digits and letters of Plotly's
default sans-serif font are about 0.6 em), which errs on the wide side: two labels placed apart
here are apart on the screen at that width or wider.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Width of one character in em (of the font size), rounded up for digits and capitals.
CHAR_EM = 0.62
#: Height of one lane in em (a line of text and its spacing).
LANE_EM = 1.5
#: Pixels kept free between two labels of one lane.
GAP_PX = 6.0
#: The narrowest plot area a page draws a full-width figure at (the default centred layout,
#: less the axis titles and margins): labels placed for it stay apart when it is wider.
PLOT_WIDTH_PX = 560.0
#: The narrowest a full-width figure is drawn (its whole width: plot area, axis titles,
#: colour bar); a figure in one of two columns is half as wide.
FIGURE_WIDTH_PX = 660.0
#: Narrowest figure a placement is made for (a phone held upright, less the page's padding).
NARROWEST_FIGURE_PX = 320.0


def plot_area_px(figure_px: float) -> float:
    """The plot area of a full-width figure drawn ``figure_px`` wide (no narrower than
    :data:`NARROWEST_FIGURE_PX`): its width less the axis titles and margins that
    :data:`FIGURE_WIDTH_PX` and :data:`PLOT_WIDTH_PX` measure."""
    if not (math.isfinite(figure_px) and figure_px > 0):
        raise ValueError(f"a figure width must be a positive number of pixels, got {figure_px!r}")
    return max(figure_px, NARROWEST_FIGURE_PX) - (FIGURE_WIDTH_PX - PLOT_WIDTH_PX)


#: Font sizes a label or a cell's text may take, largest first.
FONT_PX = 12.0
MIN_FONT_PX = 8.0


@dataclass(frozen=True)
class Box:
    """A label's box in pixels from the plot area's left edge and its lane (0: the first)."""

    left: float
    right: float
    lane: int

    def overlaps(self, other: Box) -> bool:
        return self.lane == other.lane and self.left < other.right and other.left < self.right


def text_px(text: str, font_px: float = FONT_PX) -> float:
    """The estimated width of ``text`` in pixels (the longest line of a ``<br>`` label)."""
    longest = max((len(line) for line in text.split("<br>")), default=0)
    return longest * CHAR_EM * font_px


def to_px(value: float, lo: float, hi: float, width_px: float, *, log: bool = False) -> float:
    """Where ``value`` of an axis over [lo, hi] lies, in pixels from its left end (a log axis:
    ``lo``, ``hi`` and ``value`` in data units, all > 0)."""
    if log:
        if value <= 0 or lo <= 0 or hi <= 0:
            return -math.inf
        value, lo, hi = math.log10(value), math.log10(lo), math.log10(hi)
    if hi <= lo:
        return 0.0
    return (value - lo) / (hi - lo) * width_px


def box(
    value: float,
    text: str,
    lane: int,
    lo: float,
    hi: float,
    width_px: float,
    *,
    anchor: str = "left",
    log: bool = False,
    font_px: float = FONT_PX,
) -> Box:
    """The box of ``text`` anchored at ``value`` (``anchor``: its ``left`` or ``right`` end or
    its ``center`` there, as Plotly's ``xanchor``)."""
    x = to_px(value, lo, hi, width_px, log=log)
    w = text_px(text, font_px)
    left = {"left": x, "right": x - w, "center": x - w / 2}[anchor]
    return Box(left, left + w, lane)


def place(
    values: Sequence[float],
    texts: Sequence[str],
    lo: float,
    hi: float,
    width_px: float = PLOT_WIDTH_PX,
    *,
    anchor: str = "left",
    log: bool = False,
    lanes: int = 3,
    font_px: float = FONT_PX,
    order: Sequence[int] | None = None,
) -> list[int | None]:
    """The lane of each label (``None``: hidden, no lane has room), so that no two shown boxes
    overlap and none leaves the plot area [0, ``width_px``].

    Labels are placed in ``order`` (indices, most important first; default: as given), each in
    the first of ``lanes`` lanes where it overlaps no label placed before it. A label that would
    leave the plot on its anchored side is shown on the other side of its position (a
    ``left``-anchored label at the right edge ends there instead): see :func:`anchors`."""
    if len(values) != len(texts):
        raise ValueError(f"{len(values)} positions for {len(texts)} labels")
    chosen: list[int | None] = [None] * len(values)
    taken: list[Box] = []
    sides = anchors(values, texts, lo, hi, width_px, anchor=anchor, log=log, font_px=font_px)
    for i in order if order is not None else range(len(values)):
        for lane in range(lanes):
            b = box(
                values[i],
                texts[i],
                lane,
                lo,
                hi,
                width_px,
                anchor=sides[i],
                log=log,
                font_px=font_px,
            )
            if b.left < -0.5 or b.right > width_px + 0.5:
                break  # does not fit the plot on either side
            if not any(b.overlaps(t) for t in taken):
                chosen[i] = lane
                taken.append(Box(b.left, b.right + GAP_PX, lane))
                break
    return chosen


def anchors(
    values: Sequence[float],
    texts: Sequence[str],
    lo: float,
    hi: float,
    width_px: float = PLOT_WIDTH_PX,
    *,
    anchor: str = "left",
    log: bool = False,
    font_px: float = FONT_PX,
) -> list[str]:
    """Each label's ``xanchor``: ``anchor``, or the other side where the label would leave the
    plot area (a label near the right edge ends at its position instead of starting there)."""
    other = {"left": "right", "right": "left", "center": "center"}[anchor]
    out = []
    for value, text in zip(values, texts, strict=True):
        b = box(value, text, 0, lo, hi, width_px, anchor=anchor, log=log, font_px=font_px)
        out.append(anchor if -0.5 <= b.left and b.right <= width_px + 0.5 else other)
    return out


def visible_boxes(
    values: Sequence[float],
    texts: Sequence[str],
    lanes: Sequence[int | None],
    sides: Sequence[str],
    lo: float,
    hi: float,
    width_px: float = PLOT_WIDTH_PX,
    *,
    log: bool = False,
    font_px: float = FONT_PX,
) -> list[Box]:
    """The boxes of the labels shown (lane not ``None``)."""
    return [
        box(v, t, lane, lo, hi, width_px, anchor=side, log=log, font_px=font_px)
        for v, t, lane, side in zip(values, texts, lanes, sides, strict=True)
        if lane is not None
    ]


#: Where a point's label may go, in the order tried (Plotly's ``textposition``).
POINT_POSITIONS = ("top center", "bottom center", "middle right", "middle left")
#: Pixels between a point and its label (half a marker and a little air).
POINT_GAP_PX = 7.0
#: The narrowest plot area height of a full-size figure (560 px high, less title and margins).
PLOT_HEIGHT_PX = 470.0


def point_box(
    x_px: float, y_px: float, text: str, position: str, font_px: float = FONT_PX
) -> tuple[float, float, float, float]:
    """The box (left, bottom, right, top) in pixels, y upwards, of a point's label at
    ``position`` (one of :data:`POINT_POSITIONS`)."""
    w, h, g = text_px(text, font_px), 1.2 * font_px, POINT_GAP_PX
    vertical, horizontal = position.split()
    if horizontal == "center":
        left = x_px - w / 2
    else:
        left = x_px + g if horizontal == "right" else x_px - g - w
    above = max(g, h / 2 + 1.0)  # clear of a label beside the point
    if vertical == "top":
        bottom = y_px + above
    else:
        bottom = y_px - h / 2 if vertical == "middle" else y_px - above - h
    return left, bottom, left + w, bottom + h


def place_points(
    xs: Sequence[float],
    ys: Sequence[float],
    texts: Sequence[str],
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    width_px: float = PLOT_WIDTH_PX,
    height_px: float = PLOT_HEIGHT_PX,
    *,
    font_px: float = FONT_PX,
) -> list[str | None]:
    """Each point's label position (a Plotly ``textposition``), the first of
    :data:`POINT_POSITIONS` where its box stays in the plot and overlaps no label placed
    before it; ``None``: no room (the hover still names the point)."""
    placed: list[tuple[float, float, float, float]] = []
    out: list[str | None] = []
    for x, y, text in zip(xs, ys, texts, strict=True):
        px = to_px(x, *x_range, width_px)
        py = to_px(y, *y_range, height_px)
        chosen = None
        for position in POINT_POSITIONS:
            b = point_box(px, py, text, position, font_px)
            inside = b[0] >= 0 and b[2] <= width_px and b[1] >= 0 and b[3] <= height_px
            free = all(b[2] <= o[0] or o[2] <= b[0] or b[3] <= o[1] or o[3] <= b[1] for o in placed)
            if inside and free:
                chosen = position
                placed.append(b)
                break
        out.append(chosen)
    return out


def cell_font(texts: Sequence[str], cell_px: float) -> float | None:
    """The largest font (from :data:`FONT_PX` down to :data:`MIN_FONT_PX`) at which every text
    fits its cell ``cell_px`` wide and high, or ``None``: the cells are too small for text (the
    values stay in the hover)."""
    widest = max((len(t) for t in texts), default=0)
    if widest == 0:
        return FONT_PX
    for font in range(int(FONT_PX), int(MIN_FONT_PX) - 1, -1):
        if widest * CHAR_EM * font + 4.0 <= cell_px and font * 1.2 <= cell_px:
            return float(font)
    return None


def lane_shift(lane: int, font_px: float = FONT_PX) -> float:
    """The vertical shift of lane ``lane`` in pixels (its distance from the first lane)."""
    return lane * LANE_EM * font_px


__all__ = [
    "Box",
    "FIGURE_WIDTH_PX",
    "PLOT_WIDTH_PX",
    "anchors",
    "box",
    "cell_font",
    "lane_shift",
    "place",
    "place_points",
    "point_box",
    "plot_area_px",
    "text_px",
    "to_px",
    "visible_boxes",
]
