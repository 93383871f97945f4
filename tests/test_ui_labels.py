"""Labels on the UI's plots never overlap: the placement of :mod:`llamp.ui.labels` on its own
(lanes, thinning, the plot's edges, a heat map's cells) and the Latency figure of a 10^5-vertex
stencil (16 ranks), whose 1/2/5 % tolerances lie close together, on linear and log L axes."""

from __future__ import annotations

import math

import pytest

from llamp.lp.tolerance import Tolerance, ToleranceLevel
from llamp.params import LogGPS
from llamp.ui import labels, plots


def _no_overlap(boxes: list[labels.Box]) -> bool:
    return not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_labels_far_apart_share_the_first_lane():
    lanes = labels.place([0.0, 50.0], ["≤ 1%", "1%–2%"], 0.0, 100.0, 560.0)
    assert lanes == [0, 0]


def test_labels_on_one_spot_go_to_further_lanes_then_are_hidden():
    texts = ["≤ 1%", "1%–2%", "2%–5%", "5%–10%"]
    lanes = labels.place([10.0, 10.1, 10.2, 10.3], texts, 0.0, 100.0, 560.0, lanes=3)
    assert lanes == [0, 1, 2, None]
    sides = labels.anchors([10.0, 10.1, 10.2, 10.3], texts, 0.0, 100.0, 560.0)
    boxes = labels.visible_boxes([10.0, 10.1, 10.2, 10.3], texts, lanes, sides, 0.0, 100.0, 560.0)
    assert len(boxes) == 3 and _no_overlap(boxes)


def test_order_decides_which_label_keeps_the_first_lane():
    lanes = labels.place([10.0, 10.1], ["a label", "another"], 0.0, 100.0, 560.0, order=[1, 0])
    assert lanes == [1, 0]


def test_a_label_at_the_right_edge_ends_there():
    sides = labels.anchors([99.0], ["1%: 12.3 µs"], 0.0, 100.0, 560.0)
    assert sides == ["right"]
    (b,) = labels.visible_boxes([99.0], ["1%: 12.3 µs"], [0], sides, 0.0, 100.0, 560.0)
    assert 0.0 <= b.left and b.right <= 560.0


def test_log_axis_positions_are_decades():
    assert labels.to_px(10.0, 1.0, 100.0, 200.0, log=True) == pytest.approx(100.0)
    lanes = labels.place([1.0, 1.001], ["≤ 1%", "1%–2%"], 0.1, 1000.0, 560.0, log=True)
    assert lanes == [0, 1]  # apart on a linear axis of this range, together on a log one


def test_cell_font_shrinks_then_gives_up():
    assert labels.cell_font(["12"], 40.0) == labels.FONT_PX
    small = labels.cell_font(["1.234e+05"], 50.0)
    assert small is not None and small < labels.FONT_PX
    assert 9 * labels.CHAR_EM * small + 4 <= 50.0
    assert labels.cell_font(["1.234e+05"], 20.0) is None


def _placed(fig) -> list[dict]:
    return [a for a in fig.layout.annotations if a.name == "placed label"]


def _boxes(fig, log: bool) -> list[labels.Box]:
    """The boxes of the figure's placed labels as drawn (position, anchor, lane from the
    shift), each band (top, bottom) on lanes of its own."""
    lo, hi = fig.layout.xaxis.range
    if log:
        lo, hi = 10**lo, 10**hi
    area = fig.layout.meta["label_area_px"]
    out = []
    for a in _placed(fig):
        x = 10**a.x if log else a.x
        lane = round(abs(a.yshift) / labels.lane_shift(1))
        band = 0 if a.yanchor == "top" else 100
        b = labels.box(x, a.text, lane + band, lo, hi, area, anchor=a.xanchor, log=log)
        assert -0.5 <= b.left and b.right <= area + 0.5, a.text
        out.append(b)
    return out


def _tolerance(values: list[float], T0: float = 1e6) -> Tolerance:
    levels = [
        ToleranceLevel(x, (1 + x) * T0, v) for x, v in zip((0.01, 0.02, 0.05), values, strict=True)
    ]
    return Tolerance(T0, levels, levels, "graph", LogGPS())


@pytest.mark.parametrize("log_x", [False, True])
def test_close_tolerances_are_labelled_apart(sweep3d, log_x):
    """Tolerances 0.1 % of the range apart: the zone and tolerance labels take lanes."""
    from llamp.lp import critical_latencies
    from llamp.lp.critical import exact_curve

    params = LogGPS.parse(L="3us")
    crit = critical_latencies(sweep3d, params, 0.0, 200_000.0)
    tol = _tolerance([150_000.0, 150_200.0, 150_400.0], crit.runtime_at([3000.0])[0])
    fig = plots.latency_figure(exact_curve(crit), crit, tol, 3000.0, log_x=log_x)
    placed = _placed(fig)
    assert len(placed) == 6  # three zones, three tolerances: each on its own lane
    assert _no_overlap(_boxes(fig, log_x))


@pytest.mark.parametrize("log_x", [False, True])
def test_labels_are_placed_for_the_width_the_figure_is_drawn_at(sweep3d, log_x):
    """The same close tolerances on a phone-wide figure: placed for its own plot area (fewer
    fit), still apart and inside it; a width below the narrowest counts as the narrowest."""
    from llamp.lp import critical_latencies
    from llamp.lp.critical import exact_curve

    params = LogGPS.parse(L="3us")
    crit = critical_latencies(sweep3d, params, 0.0, 200_000.0)
    tol = _tolerance([150_000.0, 150_200.0, 150_400.0], crit.runtime_at([3000.0])[0])
    wide = plots.latency_figure(exact_curve(crit), crit, tol, 3000.0, log_x=log_x)
    narrow = plots.latency_figure(
        exact_curve(crit), crit, tol, 3000.0, log_x=log_x, width_px=labels.NARROWEST_FIGURE_PX
    )
    assert narrow.layout.meta["label_area_px"] == labels.NARROWEST_FIGURE_PX - (
        labels.FIGURE_WIDTH_PX - labels.PLOT_WIDTH_PX
    )
    assert wide.layout.meta["label_area_px"] == labels.PLOT_WIDTH_PX
    assert _no_overlap(_boxes(narrow, log_x))
    assert 0 < len(_placed(narrow)) <= len(_placed(wide))
    assert labels.plot_area_px(100.0) == labels.plot_area_px(labels.NARROWEST_FIGURE_PX)
    with pytest.raises(ValueError, match="positive number of pixels"):
        labels.plot_area_px(0.0)


@pytest.fixture(scope="module")
def stencil_latency():
    """The Latency page's analyses of a 10^5-vertex noisy stencil (16 ranks), automatic
    range."""
    from llamp.ingest.synthetic import stencil_with_vertices
    from llamp.lp import critical_latencies, tolerance
    from llamp.lp.critical import exact_curve
    from llamp.lp.tolerance import latency_range

    graph = stencil_with_vertices(100_000, ranks=16)
    params = LogGPS.parse(L="3us")
    tol = tolerance(graph, params, [0.01, 0.02, 0.05], engine="graph")
    lo, hi = latency_range((t.value for t in tol.latency), params.L)
    crit = critical_latencies(graph, params, lo, hi)
    return exact_curve(crit), crit, tol, params.L


@pytest.mark.slow
@pytest.mark.parametrize("log_x", [False, True])
def test_latency_figure_labels_do_not_overlap_on_a_large_run(stencil_latency, log_x):
    curve, crit, tol, L0 = stencil_latency
    fig = plots.latency_figure(curve, crit, tol, L0, log_x=log_x)
    boxes = _boxes(fig, log_x)
    assert len(boxes) >= len([t for t in tol.latency if math.isfinite(t.value)])
    assert _no_overlap(boxes)
    # the curve passes through every breakpoint at its exact T
    line = next(t for t in fig.data if t.name == "predicted T(L)")
    unit = fig.layout.xaxis.title.text.rsplit("(", 1)[1].rstrip(")")
    xs = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}[unit]
    yunit = fig.layout.yaxis.title.text.rsplit("(", 1)[1].rstrip(")")
    ys = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}[yunit]
    x = list(line.x)
    for c, T in zip(crit.critical, crit.runtime_at(crit.critical), strict=True):
        if log_x and c <= 0:
            continue
        i = x.index(c / xs)
        assert line.y[i] == pytest.approx(T / ys, rel=1e-12)


def test_heatmap_cells_at_16_ranks_hold_their_text_or_none():
    """λ_G at 16 ranks (bytes on the path, six digits): no text overlaps its cell — written
    smaller or in fewer digits where it fits, else left to the hover."""
    import numpy as np

    rng = np.random.default_rng(0)
    lam_G = np.round(rng.uniform(0, 2e5, (16, 16)))
    for width in (labels.FIGURE_WIDTH_PX, labels.FIGURE_WIDTH_PX / 2):
        fig = plots.pair_heatmap(
            lam_G, "λ_G", "bytes", annotate=True, value_format=".4g", width_px=width
        )
        cell = plots.heatmap_cell_px(16, fig.layout.height, width)
        trace = fig.data[0]
        if trace.text is None:
            assert plots.cell_texts(lam_G, ".4g", cell) is None
            assert "%{customdata" in trace.hovertemplate
            continue
        font = trace.textfont.size
        widest = max(len(t) for row in trace.text for t in row)
        assert widest * labels.CHAR_EM * font <= cell
    small = plots.pair_heatmap(np.arange(16.0).reshape(4, 4), "λ_L", "terms", annotate=True)
    assert small.data[0].text[1][2] == "6" and small.data[0].textfont.size == labels.FONT_PX


def test_point_labels_close_together_take_different_sides():
    """HDR (1 µs, 0.04 ns/B) and NDR (1 µs, 0.02 ns/B) on a design-space plot 10 µs by
    1 ns/B: a few pixels apart, their names must not print over each other."""
    xs, ys, texts = [1.0, 1.0, 5.0], [0.04, 0.02, 0.5], ["HDR", "NDR", "1GbE"]
    positions = labels.place_points(xs, ys, texts, (0.0, 10.0), (0.0, 1.0))
    assert positions[0] == "top center" and positions[1] not in (None, "top center")
    boxes = [
        labels.point_box(
            labels.to_px(x, 0.0, 10.0, labels.PLOT_WIDTH_PX),
            labels.to_px(y, 0.0, 1.0, labels.PLOT_HEIGHT_PX),
            t,
            p,
        )
        for x, y, t, p in zip(xs, ys, texts, positions, strict=True)
        if p is not None
    ]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    crowded = labels.place_points([1.0] * 6, [0.5] * 6, ["name"] * 6, (0.0, 10.0), (0.0, 1.0))
    assert crowded[:4] == list(labels.POINT_POSITIONS) and crowded[4:] == [None, None]
