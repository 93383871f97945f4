"""Plotly figures of the UI: T(L) with tolerance zones (LLAMP Fig. 1), λ_L and ρ_L curves
(Fig. 9), the per-rank timeline with the critical path, and per-rank time splits.

Functions take analysis results and return figures; they compute nothing expensive, so a plot
option never reruns an analysis. Every axis names its unit; times are shown in the unit that
suits their magnitude (:func:`time_unit`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from llamp.graph import CALC, COLL, KIND_NAMES, RECV, SEND, ExecutionGraph
from llamp.lp import CriticalLatencies, Evaluation, Tolerance
from llamp.lp.region import Region, RegionPreview, level_key
from llamp.ui import display, labels

#: Tolerance zones, as in the LLAMP paper's Fig. 1: ≤1% green, 1–2% orange, 2–5% red.
ZONE_COLORS = ("#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b")
KIND_COLORS = {CALC: "#6baed6", SEND: "#31a354", RECV: "#fd8d3c", COLL: "#de2d26"}
SPLIT_COLORS = {
    "compute": "#6baed6",
    "overhead": "#9e9ac8",
    "latency": "#e6550d",
    "bandwidth": "#31a354",
    "blocked": "#bdbdbd",
}


def time_unit(max_ns: float) -> tuple[str, float]:
    """The display unit for durations up to ``max_ns``: (``"ms"``, 1e6) for 2.5e6 ns."""
    return display.time_unit(max_ns)


def short_ns(value_ns: float, digits: int = 4) -> str:
    """A duration in ``digits`` significant digits and a fitting unit: ``46.66 µs``."""
    return display.duration(value_ns, digits)


def log_floor(L: np.ndarray) -> float:
    """The left end of a log L axis over the latencies ``L`` (ns): the smallest positive one,
    at most a thousandth of the largest, so a curve with no breakpoint below its end (T linear
    from L = 0) still shows its shape."""
    positive = L[L > 0]
    if not positive.size:
        return 1.0
    return float(min(positive.min(), positive.max() / 1000.0))


def dense_curve(
    sweep: pd.DataFrame,
    *,
    log_x: bool = False,
    points: int = 600,
    extra: Sequence[float] = (),
) -> pd.DataFrame:
    """``T``, ``λ_L`` and ``ρ_L`` at many more values of L than the sweep, exactly.

    The sweep contains every critical latency of its range (an exact curve,
    :func:`llamp.lp.critical.exact_curve`), so ``T`` is linear between two consecutive sweep
    values and ``λ_L`` (a right derivative) is constant there: interpolating adds no error, and
    every row of the sweep (every breakpoint) is a point of the result. Points are spaced
    evenly, or logarithmically from :func:`log_floor` for a log axis; ``extra`` latencies in
    the sweep's range (L0, the tolerances) are added.
    """
    L = sweep["L_ns"].to_numpy(float)
    T = sweep["runtime_ns"].to_numpy(float)
    lam = sweep["lambda_L"].to_numpy(float)
    if log_x and (L > 0).any():
        spread = np.geomspace(log_floor(L), L.max(), points)
    else:
        spread = np.linspace(L.min(), L.max(), points)
    wanted = np.asarray([v for v in extra if L.min() <= v <= L.max()], dtype=float)
    x = np.union1d(np.union1d(L, spread), wanted)
    if log_x:
        x = x[x > 0]
    runtime = np.interp(x, L, T)
    slope = lam[np.clip(np.searchsorted(L, x, side="right") - 1, 0, len(L) - 1)]
    rho = np.divide(x * slope, runtime, out=np.zeros_like(x), where=runtime > 0)
    return pd.DataFrame({"L_ns": x, "runtime_ns": runtime, "lambda_L": slope, "rho_L": rho})


def axis_labels(
    fig: go.Figure,
    values: Sequence[float],
    texts: Sequence[str],
    colors: Sequence[str],
    x_range: tuple[float, float],
    *,
    log: bool = False,
    top: bool = True,
    anchor: str = "left",
    xref: str = "x",
    yref: str = "paper",
    width_px: float = labels.PLOT_WIDTH_PX,
    lanes: int = 3,
) -> list[int | None]:
    """Annotations ``texts`` at the x positions ``values`` (axis units, over ``x_range``) in
    lanes along the top (or bottom) of the plot, placed by :func:`llamp.ui.labels.place` so no
    two overlap; a label with no room is not drawn (its value stays in the hover and tables).
    Returns each label's lane (``None``: not drawn)."""
    lo, hi = x_range
    placed = labels.place(values, texts, lo, hi, width_px, anchor=anchor, log=log, lanes=lanes)
    sides = labels.anchors(values, texts, lo, hi, width_px, anchor=anchor, log=log)
    y0 = 1.0 if top else 0.0
    for value, text, color, lane, side in zip(values, texts, colors, placed, sides, strict=True):
        if lane is None:
            continue
        shift = labels.lane_shift(lane)
        fig.add_annotation(
            x=_axis_x(value, log),
            y=y0,
            xref=xref,
            yref=yref,
            text=text,
            showarrow=False,
            xanchor=side,
            yanchor="top" if top else "bottom",
            yshift=-shift if top else shift,
            font={"color": color, "size": labels.FONT_PX},
            bgcolor="rgba(255,255,255,0.75)",
            name="placed label",
        )
    return placed


def _axis_x(value: float, log: bool) -> float:
    # Annotations on a log axis are placed in log10 units (shapes are not).
    return math.log10(value) if log and value > 0 else value


def _percent(x: float) -> str:
    return f"{x * 100:g}%"


def zone_bounds(tol: Tolerance, L0: float, hi: float) -> list[tuple[float, float, float, float]]:
    """(x_lo, x, L_lo, L_hi) per tolerance level: the L interval whose runtime degrades by
    more than the previous level and at most x (the first starts at L0; ∞ is cut at ``hi``)."""
    zones = []
    start, prev_x = L0, 0.0
    for level in sorted(tol.latency, key=lambda t: t.x):
        end = min(level.value, hi)
        if end > start:
            zones.append((prev_x, level.x, start, end))
        start, prev_x = max(start, end), level.x
    return zones


def _slopes_around(
    critical: CriticalLatencies, points: list[float]
) -> tuple[list[float], list[float]]:
    """λ left and right of each of ``points`` (critical latencies) from the segments."""
    starts = np.array([seg.start for seg in critical.segments])
    slopes = np.array([seg.slope for seg in critical.segments], dtype=float)
    right = np.clip(np.searchsorted(starts, points, side="right") - 1, 0, len(starts) - 1)
    left = np.clip(right - 1, 0, len(starts) - 1)
    return list(slopes[left]), list(slopes[right])


def latency_figure(
    sweep: pd.DataFrame,
    critical: CriticalLatencies,
    tol: Tolerance,
    L0: float,
    *,
    log_x: bool = False,
    show_critical: bool = True,
    markers: Sequence[float] | None = None,
    groups: pd.DataFrame | None = None,
    points: int = 600,
    width_px: float = labels.FIGURE_WIDTH_PX,
) -> go.Figure:
    """Predicted ``T(L)`` with the x% tolerance zones shaded and the critical latencies marked
    (``markers``: only these, e.g. the ones where λ_L jumps most; default: all). ``groups``:
    the breakpoints that matter instead (:func:`llamp.ui.page_work.breakpoints`), a merged one
    saying in its hover how many breakpoints it stands for and where."""
    lo, hi = float(critical.lo), float(critical.hi)
    xu, xs = time_unit(hi)
    yu, ys = time_unit(float(sweep["runtime_ns"].max()))
    finite = [t.value for t in tol.latency if math.isfinite(t.value) and lo <= t.value <= hi]
    data = dense_curve(sweep, log_x=log_x, points=points, extra=[L0, *finite])
    x_range = (
        (log_floor(sweep["L_ns"].to_numpy(float)) / xs, hi / xs) if log_x else (lo / xs, hi / xs)
    )
    fig = go.Figure()
    zone_x, zone_text, zone_color = [], [], []
    for i, (x_lo, x, a, b) in enumerate(zone_bounds(tol, L0, hi)):
        color = ZONE_COLORS[i % len(ZONE_COLORS)]
        fig.add_vrect(
            x0=a / xs, x1=b / xs, fillcolor=color, opacity=0.18, line_width=0, layer="below"
        )
        zone_x.append(max(a / xs, x_range[0]))
        zone_text.append(f"≤ {_percent(x)}" if x_lo == 0 else f"{_percent(x_lo)}–{_percent(x)}")
        zone_color.append(color)
    area = labels.plot_area_px(width_px)
    fig.update_layout(meta={"label_area_px": area})
    axis_labels(fig, zone_x, zone_text, zone_color, x_range, log=log_x, top=True, width_px=area)
    fig.add_trace(
        go.Scatter(
            x=data["L_ns"] / xs,
            y=data["runtime_ns"] / ys,
            mode="lines",
            name="predicted T(L)",
            line={"color": "#1f77b4", "width": 2},
            customdata=np.stack([data["lambda_L"], data["rho_L"] * 100], axis=1),
            hovertemplate=f"L = %{{x:.6g}} {xu}<br>T = %{{y:.7g}} {yu}"
            "<br>λ_L = %{customdata[0]:g}<br>ρ_L = %{customdata[1]:.3g}%<extra></extra>",
        )
    )
    base = tol.baseline_ns
    fig.add_trace(
        go.Scatter(
            x=[L0 / xs],
            y=[base / ys],
            mode="markers",
            name=f"L0 = {display.duration(L0)}",
            marker={"color": "black", "size": 9, "symbol": "circle"},
            hovertemplate=f"L0 = %{{x:.6g}} {xu}<br>T(L0) = %{{y:.7g}} {yu}<extra></extra>",
        )
    )
    levels = [
        t
        for t in sorted(tol.latency, key=lambda t: t.x)
        if math.isfinite(t.value) and t.value <= hi
    ]
    if levels:
        fig.add_trace(
            go.Scatter(
                x=[t.value / xs for t in levels],
                y=[t.bound_ns / ys for t in levels],
                mode="markers",
                name="x% L tolerance",
                text=[_percent(t.x) for t in levels],
                marker={"color": "black", "size": 9, "symbol": "x"},
                hovertemplate=f"%{{text}} L tolerance = %{{x:.6g}} {xu}<br>T bound = %{{y:.7g}} "
                f"{yu}<extra></extra>",
            )
        )
        axis_labels(
            fig,
            [t.value / xs for t in levels],
            [f"{_percent(t.x)}: {t.value / xs:.4g} {xu}" for t in levels],
            ["black"] * len(levels),
            x_range,
            log=log_x,
            top=False,
            anchor="right",
            width_px=area,
        )
    if groups is not None:
        groups = groups.sort_values("at_ns")
        groups = groups[(groups["at_ns"] > 0) | (not log_x)]
        crit = list(groups["at_ns"])
        before, after = list(groups["slope_before"]), list(groups["slope_after"])
        spans = [
            f"<br>stands for {m:,} breakpoints from {display.duration(a)} to "
            f"{display.duration(b)} (all in the table of exact critical latencies)"
            if m > 1
            else ""
            for a, b, m in zip(groups["lo_ns"], groups["hi_ns"], groups["merged"], strict=True)
        ]
    else:
        chosen = critical.critical if markers is None else sorted(markers)
        crit = [c for c in chosen if c > 0 or not log_x]
        before, after = _slopes_around(critical, crit) if crit else ([], [])
        spans = [""] * len(crit)
    if show_critical and crit:
        T_at = critical.runtime_at(crit)
        shown = len(crit) if groups is not None or markers is not None else None
        fig.add_trace(
            go.Scatter(
                x=np.asarray(crit) / xs,
                y=T_at / ys,
                mode="markers",
                name=f"critical latencies ({shown:,} of {len(critical.critical):,})"
                if shown is not None
                else f"critical latencies ({len(critical.critical):,})",
                marker={
                    "color": "#7f3b08",
                    "size": 8,
                    "symbol": "diamond-open",
                    "line": {"width": 2},
                },
                customdata=np.stack([before, after], axis=1),
                hovertext=spans,
                hovertemplate=f"critical latency %{{x:.6g}} {xu}"
                "<br>λ_L: %{customdata[0]:g} → %{customdata[1]:g}%{hovertext}<extra></extra>",
            )
        )
    fig.update_layout(
        title="Predicted runtime T(L) and latency tolerance",
        xaxis_title=f"network latency L ({xu})",
        yaxis_title=f"predicted runtime T ({yu})",
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0},
        margin={"t": 60, "r": 20, "b": 20, "l": 20},
        hovermode="closest",
        template="plotly_white",
    )
    fig.update_yaxes(tickformat=".6~g")
    if log_x:
        fig.update_xaxes(type="log", range=[math.log10(v) for v in x_range])
    else:
        fig.update_xaxes(range=list(x_range))
    return fig


def sensitivity_figure(
    sweep: pd.DataFrame, L0: float, *, log_x: bool = False, points: int = 600
) -> go.Figure:
    """λ_L (messages on the critical path, a step function) and ρ_L = L·λ_L/T (in %) over L."""
    data = dense_curve(sweep, log_x=log_x, points=points)
    xu, xs = time_unit(float(sweep["L_ns"].max()))
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(
        go.Scatter(
            x=data["L_ns"] / xs,
            y=data["lambda_L"],
            mode="lines",
            line_shape="hv",
            name="λ_L = ∂T/∂L",
            line={"color": "#d62728", "width": 2},
            hovertemplate=f"L = %{{x:.6g}} {xu}<br>λ_L = %{{y:g}}<extra></extra>",
        ),
        secondary_y=False,
    )
    fig.add_trace(
        go.Scatter(
            x=data["L_ns"] / xs,
            y=data["rho_L"] * 100.0,
            mode="lines",
            name="ρ_L = L·λ_L / T",
            line={"color": "#1f77b4", "width": 2, "dash": "dash"},
            hovertemplate=f"L = %{{x:.6g}} {xu}<br>ρ_L = %{{y:.4g}}%<extra></extra>",
        ),
        secondary_y=True,
    )
    fig.add_vline(x=L0 / xs, line_dash="dot", line_color="black")
    fig.add_annotation(
        x=_axis_x(L0 / xs, log_x),
        y=1.0,
        yref="paper",
        text="L0",
        showarrow=False,
        xanchor="left",
        yanchor="bottom",
    )
    fig.update_layout(
        title="Latency sensitivity λ_L and latency ratio ρ_L",
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0},
        margin={"t": 60, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
    )
    fig.update_xaxes(title_text=f"network latency L ({xu})", type="log" if log_x else "linear")
    fig.update_yaxes(
        title_text="λ_L (latency terms on the critical path)", secondary_y=False, rangemode="tozero"
    )
    fig.update_yaxes(
        title_text="ρ_L (% of T)",
        secondary_y=True,
        rangemode="tozero",
        showgrid=False,
        tickmode="auto",
        tickformat=".3~g",
    )
    return fig


def window_mask(ev: Evaluation, lo: float, hi: float) -> np.ndarray:
    """Vertices whose [start, finish] meets the window [lo, hi]."""
    return (ev.start_ns <= hi) & (ev.finish_ns >= lo)


def timeline_figure(
    graph: ExecutionGraph,
    ev: Evaluation,
    lo: float,
    hi: float,
    *,
    path_messages: np.ndarray | None = None,
    max_bars: int = 5000,
    focus: Sequence[int] = (),
) -> tuple[go.Figure, int, int]:
    """Per-rank Gantt chart of the ops in [lo, hi]; critical ops opaque with a dark outline.

    A receive's bar runs from its start to its finish, so it shows the time the rank waits
    (an analytic collective's bar too: its wait for the last member plus the modelled cost).
    Critical-path messages in the window are drawn as lines from send finish to receive finish.
    Returns the figure, the number of ops in the window and the number drawn (the first
    ``max_bars`` by start time). The ops in ``focus`` (a link's target) are marked with a star.
    """
    sel = np.flatnonzero(window_mask(ev, lo, hi))
    total = int(sel.size)
    if sel.size > max_bars:
        sel = sel[np.argsort(ev.start_ns[sel], kind="stable")[:max_bars]]
    tu, ts = time_unit(max(hi - lo, 1.0))
    fig = go.Figure()
    crit = ev.critical
    for kind in (CALC, SEND, RECV, COLL):
        for on_path in (False, True):
            v = sel[(graph.kind[sel] == kind) & (crit[sel] == on_path)]
            if not v.size:
                continue
            name = KIND_NAMES[kind] + (" · critical" if on_path else "")
            custom = np.stack(
                [
                    v,
                    ev.start_ns[v] / ts,
                    ev.finish_ns[v] / ts,
                    ev.slack_ns[v] / ts,
                    graph.size[v],
                    graph.peer[v],
                ],
                axis=1,
            )
            detail = "" if kind == CALC else "<br>%{customdata[4]:d} B, peer %{customdata[5]:d}"
            fig.add_trace(
                go.Bar(
                    orientation="h",
                    y=graph.rank[v],
                    base=ev.start_ns[v] / ts,
                    x=(ev.finish_ns[v] - ev.start_ns[v]) / ts,
                    name=name,
                    marker={
                        "color": KIND_COLORS[kind],
                        "opacity": 1.0 if on_path else 0.35,
                        "line": {
                            "color": "#252525" if on_path else KIND_COLORS[kind],
                            "width": 1.5 if on_path else 0,
                        },
                    },
                    width=0.7,
                    customdata=custom,
                    hovertemplate=f"rank %{{y}} · {name} · vertex %{{customdata[0]:d}}"
                    f"<br>start %{{customdata[1]:.6g}} {tu} · finish %{{customdata[2]:.6g}} {tu}"
                    f"<br>slack %{{customdata[3]:.4g}} {tu}{detail}<extra></extra>",
                )
            )
    if path_messages is not None and len(path_messages):
        s, r = path_messages[:, 0], path_messages[:, 1]
        inside = (ev.finish_ns[r] >= lo) & (ev.finish_ns[s] <= hi)
        s, r = s[inside], r[inside]
        if s.size:
            xs = np.full(3 * s.size, np.nan)
            ys = np.full(3 * s.size, np.nan)
            xs[0::3], xs[1::3] = ev.finish_ns[s] / ts, ev.finish_ns[r] / ts
            ys[0::3], ys[1::3] = graph.rank[s], graph.rank[r]
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines",
                    name="critical message",
                    line={"color": "#b2182b", "width": 1.5},
                    hoverinfo="skip",
                    connectgaps=False,
                )
            )
    focus_v = np.asarray([v for v in focus if 0 <= v < graph.num_vertices], dtype=np.int64)
    if focus_v.size:
        fig.add_trace(
            go.Scatter(
                x=ev.start_ns[focus_v] / ts,
                y=graph.rank[focus_v],
                mode="markers",
                name="linked op",
                marker={"symbol": "star", "size": 16, "color": "#ffd92f", "line": {"width": 1.5}},
                customdata=focus_v,
                hovertemplate=f"linked op %{{customdata:d}} · rank %{{y}}"
                f"<br>start %{{x:.6g}} {tu}<extra></extra>",
            )
        )
    ranks = graph.num_ranks
    fig.update_layout(
        barmode="overlay",
        title=f"Per-rank schedule, {lo / ts:.6g}–{hi / ts:.6g} {tu}",
        xaxis_title=f"time since start ({tu})",
        yaxis_title="rank",
        height=max(360, min(1200, 110 + 28 * ranks)),
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1},
        margin={"t": 60, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
        bargap=0.2,
    )
    tick_step = max(1, ranks // 32)
    fig.update_yaxes(
        autorange="reversed",
        tickmode="array",
        tickvals=list(range(0, ranks, tick_step)),
        range=[ranks - 0.5, -0.5],
    )
    fig.update_xaxes(range=[lo / ts, hi / ts])
    return fig, total, int(sel.size)


def split_figure(frame: pd.DataFrame, parts: tuple[str, ...], title: str) -> go.Figure:
    """Stacked bars per rank of the ``<part>_ns`` columns of ``frame``."""
    top = float(frame[[f"{p}_ns" for p in parts]].sum(axis=1).max()) if len(frame) else 0.0
    unit, scale = time_unit(top)
    fig = go.Figure()
    for part in parts:
        fig.add_trace(
            go.Bar(
                x=frame["rank"],
                y=frame[f"{part}_ns"] / scale,
                name=part,
                marker_color=SPLIT_COLORS.get(part),
                hovertemplate=f"rank %{{x}}<br>{part}: %{{y:.6g}} {unit}<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="stack",
        title=title,
        xaxis_title="rank",
        yaxis_title=f"time ({unit})",
        legend={"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0},
        margin={"t": 60, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
    )
    fig.update_xaxes(type="category" if len(frame) <= 64 else "linear")
    return fig


# ---------------------------------------------------------------------- network what-ifs
#: Line styles per topology, so curves that coincide stay visible.
LINE_DASHES = ("solid", "dash", "dot", "dashdot", "longdash")
#: One colour per topology or mapping, in order.
SERIES_COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
)


def topology_lambda_figure(variables: pd.DataFrame, *, share: bool = False) -> go.Figure:
    """λ of every latency variable (wires of each link class, all wires, switches, same-node
    messages on the critical path), one bar per topology: the link classes of each topology
    first, then ``l_wire``, ``d_switch`` and ``l_intra_node`` side by side for all of them;
    ``share``: value·λ/T in %."""
    fig = go.Figure()
    column, label = ("lambda_share", "value·λ / T (%)") if share else ("lambda", "λ")
    link = variables["kind"] == "link"
    order = [*dict.fromkeys(variables.loc[link, "variable"])]
    order += [*dict.fromkeys(variables.loc[~link, "variable"])]
    for i, (topo, rows) in enumerate(variables.groupby("topology", sort=False)):
        y = rows[column].to_numpy(float) * (100.0 if share else 1.0)
        fig.add_trace(
            go.Bar(
                x=list(rows["variable"]),
                y=y,
                name=topo,
                marker_color=SERIES_COLORS[i % len(SERIES_COLORS)],
                customdata=np.stack(
                    [rows["lambda"], rows["value_ns"], rows["lambda_share"] * 100], axis=1
                ),
                hovertemplate=f"{topo} · %{{x}}<br>λ = %{{customdata[0]:g}}"
                "<br>value = %{customdata[1]:g} ns<br>value·λ/T = %{customdata[2]:.3g}%"
                "<extra></extra>",
            )
        )
    fig.update_layout(
        title="Latency sensitivity per link class"
        + (" (share of T)" if share else " (wires on the critical path)"),
        barmode="group",
        xaxis_title="latency variable",
        yaxis_title=label,
        legend={"orientation": "h", "yanchor": "top", "y": -0.25, "x": 0},
        margin={"t": 60, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
    )
    fig.update_xaxes(categoryorder="array", categoryarray=order)
    return fig


def topology_sweep_figure(
    sweep: pd.DataFrame, marks: pd.DataFrame, *, slowdown: bool = False
) -> go.Figure:
    """Predicted ``T`` over one latency variable, one curve per topology (LLAMP Fig. 11).

    ``sweep``: rows of :func:`llamp.lp.topology.sweep_topologies`; ``marks``: points to mark
    (``topology``, ``label``, ``value_ns``, ``runtime_ns``, ``slowdown``): the base latency and
    the x% tolerances. ``slowdown``: ``T / T(base) − 1`` in % instead of ``T``. The variable is
    in ns on the x axis.
    """
    variable = str(sweep["variable"].iloc[0]) if len(sweep) else "l_wire"
    yu, ys = time_unit(float(sweep["runtime_ns"].max()) if len(sweep) else 0.0)
    fig = go.Figure()
    topologies = list(dict.fromkeys(sweep["topology"]))
    lo = float(sweep["value_ns"].min()) if len(sweep) else 0.0
    hi = float(sweep["value_ns"].max()) if len(sweep) else 0.0
    label_x: list[float] = []
    label_text: list[str] = []
    label_color: list[str] = []
    for i, topo in enumerate(topologies):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        rows = sweep[sweep["topology"] == topo]
        y = rows["slowdown"] * 100.0 if slowdown else rows["runtime_ns"] / ys
        fig.add_trace(
            go.Scatter(
                x=rows["value_ns"],
                y=y,
                mode="lines",
                name=topo,
                line={"color": color, "width": 2, "dash": LINE_DASHES[i % len(LINE_DASHES)]},
                customdata=np.stack(
                    [rows["runtime_ns"] / ys, rows["lambda"], rows["slowdown"] * 100], axis=1
                ),
                hovertemplate=f"{topo}<br>{variable} = %{{x:.6g}} ns<br>T = %{{customdata[0]:.9g}} "
                f"{yu}<br>λ = %{{customdata[1]:g}}<br>slowdown = %{{customdata[2]:.3g}}%"
                "<extra></extra>",
            )
        )
        mine = marks[
            (marks["topology"] == topo) & (marks["value_ns"] >= lo) & (marks["value_ns"] <= hi)
        ]
        if len(mine):
            for value, text in zip(mine["value_ns"], mine["label"], strict=True):
                label_x.append(float(value))
                label_text.append(f"{topo} {text}")
                label_color.append(color)
            fig.add_trace(
                go.Scatter(
                    x=mine["value_ns"],
                    y=mine["slowdown"] * 100.0 if slowdown else mine["runtime_ns"] / ys,
                    mode="markers",
                    text=mine["label"],
                    marker={"color": color, "size": 9, "symbol": "x"},
                    showlegend=False,
                    name=f"{topo} marks",
                    hovertemplate=f"{topo} · %{{text}}<br>{variable} = %{{x:.6g}} ns<extra></extra>",
                )
            )
    fig.update_layout(
        title=f"Predicted runtime over {variable}",
        xaxis_title=f"{variable} (ns)",
        yaxis_title="slowdown T / T(base) − 1 (%)" if slowdown else f"predicted runtime T ({yu})",
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0},
        margin={"t": 60, "r": 20, "b": 20, "l": 20},
        hovermode="closest",
        template="plotly_white",
    )
    if hi > lo:
        order = sorted(range(len(label_x)), key=lambda k: label_x[k])
        axis_labels(
            fig,
            [label_x[k] for k in order],
            [label_text[k] for k in order],
            [label_color[k] for k in order],
            (lo, hi),
            top=False,
            anchor="right",
            lanes=4,
        )
    fig.update_xaxes(range=[lo, hi] if hi > lo else None)
    return fig


#: Largest matrix whose cells are clickable (:func:`pair_heatmap`): P² points in the page.
CLICKABLE_RANKS = 128


def trace_hover(value_format: str) -> str:
    """The hover text of a matrix cell: ``i = 2 → j = 0`` and its value."""
    return f"i = %{{y}} → j = %{{x}}<br>%{{customdata:{value_format}}}<extra></extra>"


def heatmap_cell_px(P: int, height: float, width_px: float = labels.FIGURE_WIDTH_PX) -> float:
    """A square cell's side in pixels of a P × P heat map ``height`` high and at least
    ``width_px`` wide (less the title, margins, axis titles and the colour bar)."""
    return max(min(height - 110.0, width_px - 130.0), 0.0) / max(P, 1)


#: Formats a cell's value is written in, the full one first: the first whose texts fit wins.
CELL_FORMATS = (".3g", ".2g")


def cell_texts(
    matrix: np.ndarray, value_format: str, cell_px: float
) -> tuple[list[list[str]], float] | None:
    """The text of every cell and its font size: the values in ``value_format``, else in
    fewer digits, at the largest font that fits a cell (:func:`llamp.ui.labels.cell_font`);
    ``None`` if the cells are too small for any (the values stay in the hover)."""
    M = np.asarray(matrix, dtype=np.float64)
    for fmt in (value_format, *CELL_FORMATS):
        text = [[format(v, fmt) for v in row] for row in M]
        font = labels.cell_font([t for row in text for t in row], cell_px)
        if font is not None:
            return text, font
    return None


def pair_heatmap(
    matrix: np.ndarray,
    title: str,
    colorbar_title: str,
    *,
    log: bool = False,
    annotate: bool = False,
    colorscale: str = "Reds",
    value_format: str = ".6g",
    clickable: bool = False,
    width_px: float = labels.FIGURE_WIDTH_PX,
) -> go.Figure:
    """A rank × rank matrix (sender ``i`` down, receiver ``j`` across, rank 0 top left).

    ``log``: colours by log10 of the value (zeros blank), hover still shows the value.
    ``annotate``: every cell's value written in it where the cells hold it at the figure's
    narrowest width ``width_px`` (:func:`cell_texts`; the hover always shows it).
    ``clickable``: a click on a cell selects it (``st.plotly_chart(on_select=…)`` reports the
    point's ``x`` = j and ``y`` = i). Plotly selects points of scatter traces only, never of a
    heatmap, so the cells' centres are an invisible scatter trace that takes the hover and the
    click (the nearest centre, at any distance); up to :data:`CLICKABLE_RANKS` ranks.
    """
    M = np.asarray(matrix, dtype=np.float64)
    P = M.shape[0]
    if log:
        z = np.full_like(M, np.nan)
        np.log10(M, out=z, where=M > 0)
        bar_title = f"log10 {colorbar_title}"
    else:
        z, bar_title = M, colorbar_title
    trace = go.Heatmap(
        z=z,
        x=np.arange(P),
        y=np.arange(P),
        customdata=M,
        colorscale=colorscale,
        colorbar={"title": {"text": bar_title, "side": "right"}},
        hovertemplate=trace_hover(value_format),
        xgap=1 if P <= 64 else 0,
        ygap=1 if P <= 64 else 0,
    )
    height = max(420, min(800, 200 + 14 * P))
    written = (
        cell_texts(M, value_format, heatmap_cell_px(P, height, width_px)) if annotate else None
    )
    if written is not None:
        text, font = written
        trace.update(text=text, texttemplate="%{text}", textfont={"size": font})
    fig = go.Figure(trace)
    if clickable and P <= CLICKABLE_RANKS:
        i, j = np.divmod(np.arange(P * P), P)
        trace.update(hoverinfo="skip", hovertemplate=None)
        fig.add_trace(
            go.Scatter(
                x=j,
                y=i,
                customdata=M.ravel(),
                mode="markers",
                marker={"size": 12, "opacity": 0.0},
                hovertemplate=trace_hover(value_format),
                showlegend=False,
                name="cells",
            )
        )
        fig.update_layout(hoverdistance=-1, hovermode="closest")
    fig.update_layout(
        title=title,
        xaxis_title="receiver rank j",
        yaxis_title="sender rank i",
        height=height,
        margin={"t": 60, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
    )
    dtick = max(1, P // 16)
    fig.update_xaxes(dtick=dtick, showgrid=False, constrain="domain")
    fig.update_yaxes(
        autorange="reversed", dtick=dtick, showgrid=False, scaleanchor="x", constrain="domain"
    )
    return fig


def placement_history_figure(
    history: pd.DataFrame, mappings: pd.DataFrame, *, show_baselines: bool = True
) -> go.Figure:
    """Predicted ``T`` after every accepted swap of the placement heuristic (iteration 0: the
    start mapping), with the baselines' ``T`` as horizontal lines."""
    values = [*history["runtime_ns"]]
    if show_baselines:
        values += [*mappings["runtime_ns"]]
    unit, scale = time_unit(max(values) if values else 0.0)
    swaps = history["iteration"] > 0
    moved = np.where(
        history["rank_b"] >= 0,
        "swap ranks " + history["rank_a"].astype(str) + " ↔ " + history["rank_b"].astype(str),
        "move rank " + history["rank_a"].astype(str) + " to node " + history["node_b"].astype(str),
    )
    label = np.where(swaps, moved, "start mapping")
    fig = go.Figure(
        go.Scatter(
            x=history["iteration"],
            y=history["runtime_ns"] / scale,
            mode="lines+markers",
            name="heuristic (llamp)",
            line={"color": "#1f77b4", "width": 2},
            customdata=np.stack([label, history["estimated_gain_ns"]], axis=1),
            hovertemplate=f"after swap %{{x}}: T = %{{y:.9g}} {unit}<br>%{{customdata[0]}}"
            "<br>estimated gain %{customdata[1]:.4g} ns<extra></extra>",
        )
    )
    if show_baselines:
        baselines = mappings[mappings["mapping"] != "llamp"]
        # Baselines with the same T share one line (and one label).
        for i, (runtime, rows) in enumerate(baselines.groupby("runtime_ns", sort=True)):
            fig.add_hline(
                y=runtime / scale,
                line_dash="dash",
                line_color=SERIES_COLORS[(i + 1) % len(SERIES_COLORS)],
                annotation_text=" = ".join(rows["mapping"]),
                annotation_position="top right",
            )
    fig.update_layout(
        title="Predicted runtime per accepted swap",
        xaxis_title="accepted swaps",
        yaxis_title=f"predicted runtime T ({unit})",
        margin={"t": 60, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
    )
    fig.update_xaxes(dtick=max(1, len(history) // 20), rangemode="tozero")
    return fig


# ---------------------------------------------------------------------- application what-ifs
#: Tong et al.'s per-rank counters (LogGPS adds the overhead), in stacking order.
COUNTER_PARTS = ("compute", "overhead", "wait", "latency", "bandwidth")
COUNTER_COLORS = {**SPLIT_COLORS, "wait": "#bdbdbd"}


@dataclass(frozen=True)
class RunCurve:
    """One run of a comparison as its curves are drawn: its exact ``T(L)`` (the rows of
    :func:`llamp.lp.critical.exact_curve`), the search it comes from and ``T(L0)``."""

    name: str
    curve: pd.DataFrame
    critical: CriticalLatencies
    baseline_ns: float


def squeezed(runs: Sequence[RunCurve], share: float = 0.1) -> bool:
    """True if some run's critical latencies all lie in the first ``share`` of its L range
    (µs-scale breakpoints on an axis to several ms): a log L axis shows them."""
    return any(
        r.critical.critical and max(r.critical.critical) < share * r.critical.hi for r in runs
    )


def _panels(count: int, own_range: bool) -> tuple[int, int]:
    """Rows and columns of a comparison figure: one panel, or one per run (three across)."""
    if not own_range or count <= 1:
        return 1, 1
    cols = min(count, 3)
    return -(-count // cols), cols


def comparison_figures(
    runs: Sequence[RunCurve],
    L0: float,
    levels: Sequence[float] = (),
    *,
    slowdown: bool = True,
    log_x: bool = False,
    own_range: bool = True,
    points: int = 400,
) -> tuple[go.Figure, go.Figure]:
    """``T(L)`` (or the slowdown ``T(L)/T(L0) − 1`` in %) and ``λ_L`` of every run, each from
    its own exact segments over its own L range: one panel per run with its own L axis
    (``own_range``), or all on one L axis (best logarithmic when the ranges lie decades apart).
    Every breakpoint is a point of the curve; the ones where λ_L jumps by at least 1 % are
    marked. ``levels``: the tolerance levels, dotted lines of the slowdown."""
    from llamp.lp.critical import MIN_JUMP

    rows, cols = _panels(len(runs), own_range)
    titles = [r.name for r in runs] if rows * cols > 1 else None
    figs = [
        make_subplots(
            rows=rows,
            cols=cols,
            subplot_titles=titles,
            horizontal_spacing=0.07,
            vertical_spacing=0.18 / rows,
        )
        for _ in range(2)
    ]
    fig_T, fig_l = figs
    shared_hi = max((float(r.curve["L_ns"].max()) for r in runs), default=0.0)
    shared_floor = min((log_floor(r.curve["L_ns"].to_numpy(float)) for r in runs), default=1.0)
    top = max((float(r.curve["runtime_ns"].max()) for r in runs), default=0.0)
    yu, ys = time_unit(top)
    for i, r in enumerate(runs):
        row, col = (i // cols + 1, i % cols + 1) if rows * cols > 1 else (1, 1)
        hi = float(r.curve["L_ns"].max()) if rows * cols > 1 else shared_hi
        floor = log_floor(r.curve["L_ns"].to_numpy(float)) if rows * cols > 1 else shared_floor
        xu, xs = time_unit(hi)
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        dash = LINE_DASHES[i % len(LINE_DASHES)]
        data = dense_curve(r.curve, log_x=log_x, points=points, extra=[L0])
        base = r.baseline_ns

        def y_of(T, base=base):
            T = np.asarray(T, dtype=float)
            return (T / base - 1.0) * 100.0 if slowdown and base > 0 else T / ys

        fig_T.add_trace(
            go.Scatter(
                x=data["L_ns"] / xs,
                y=y_of(data["runtime_ns"]),
                mode="lines",
                name=r.name,
                legendgroup=r.name,
                line={"color": color, "width": 2, "dash": dash},
                customdata=np.stack([data["runtime_ns"] / ys, data["lambda_L"]], axis=1),
                hovertemplate=f"{r.name}<br>L = %{{x:.6g}} {xu}<br>T = %{{customdata[0]:.9g}} "
                f"{yu}<br>λ_L = %{{customdata[1]:g}}<extra></extra>",
            ),
            row=row,
            col=col,
        )
        fig_l.add_trace(
            go.Scatter(
                x=data["L_ns"] / xs,
                y=data["lambda_L"],
                mode="lines",
                line_shape="hv",
                name=r.name,
                legendgroup=r.name,
                line={"color": color, "width": 2, "dash": dash},
                hovertemplate=f"{r.name}<br>L = %{{x:.6g}} {xu}<br>λ_L = %{{y:g}}<extra></extra>",
            ),
            row=row,
            col=col,
        )
        marked = sorted(b.at for b in r.critical.significant(MIN_JUMP) if b.at > 0 or not log_x)
        if marked:
            before, after = _slopes_around(r.critical, marked)
            at = np.asarray(marked)
            name = (
                f"{r.name}: critical latencies ({len(marked):,} of {len(r.critical.critical):,}"
                " with a λ_L jump ≥ 1%)"
            )
            custom = np.stack([before, after], axis=1)
            hover = (
                f"{r.name}: critical latency %{{x:.6g}} {xu}"
                "<br>λ_L: %{customdata[0]:g} → %{customdata[1]:g}<extra></extra>"
            )
            marker = {"color": color, "size": 7, "symbol": "diamond-open", "line": {"width": 2}}
            fig_T.add_trace(
                go.Scatter(
                    x=at / xs,
                    y=y_of(r.critical.runtime_at(at)),
                    mode="markers",
                    name=name,
                    legendgroup=r.name,
                    marker=marker,
                    customdata=custom,
                    hovertemplate=hover,
                ),
                row=row,
                col=col,
            )
            fig_l.add_trace(
                go.Scatter(
                    x=at / xs,
                    y=after,
                    mode="markers",
                    name=name,
                    legendgroup=r.name,
                    showlegend=False,
                    marker=marker,
                    customdata=custom,
                    hovertemplate=hover,
                ),
                row=row,
                col=col,
            )
        for fig in figs:
            fig.add_vline(
                x=L0 / xs, line_dash="dash", line_color="#7f7f7f", line_width=1, row=row, col=col
            )
            if log_x:
                fig.update_xaxes(
                    type="log",
                    range=[math.log10(floor / xs), math.log10(hi / xs)],
                    row=row,
                    col=col,
                )
            else:
                fig.update_xaxes(range=[0.0, hi / xs], row=row, col=col)
            fig.update_xaxes(title_text=f"network latency L ({xu})", row=row, col=col)
        if rows * cols > 1 or i == 0:
            fig_T.update_yaxes(
                title_text="T(L) / T(L0) − 1 (%)" if slowdown else f"T ({yu})",
                tickformat=".4~g" if slowdown else ".6~g",
                row=row,
                col=col,
            )
            fig_l.update_yaxes(title_text="λ_L (messages)", rangemode="tozero", row=row, col=col)
    if slowdown:
        for x in levels:
            fig_T.add_hline(
                y=100 * x, line_dash="dot", line_color="#7f7f7f", line_width=1, row="all", col="all"
            )
    height = 120 + 340 * rows
    fig_T.update_layout(
        title="Slowdown over L (dotted: the tolerance levels; dashed: L0)"
        if slowdown
        else "Predicted runtime T(L) (dashed: L0)"
    )
    fig_l.update_layout(title="Latency sensitivity λ_L = ∂T/∂L (dashed: L0)")
    for fig in figs:
        fig.update_layout(
            height=height,
            legend={"orientation": "h", "yanchor": "top", "y": -0.26 / rows, "x": 0},
            margin={"t": 80, "r": 20, "b": 40, "l": 20},
            hovermode="closest",
            template="plotly_white",
        )
    return fig_T, fig_l


def variant_runtime_figure(
    curves: dict[str, pd.DataFrame],
    tolerances: dict[str, Tolerance],
    L0: float,
    lo: float,
    hi: float,
    *,
    log_x: bool = False,
    slowdown: bool = False,
) -> go.Figure:
    """``T(L)`` of every collective variant on one plot, each with its x% L tolerances marked
    (LLAMP Fig. 10, overlaid). ``curves``: exact sweeps (every critical latency included) per
    variant; ``slowdown``: ``T(L)/T(L0) − 1`` of each variant in % instead of ``T``, so the
    tolerances sit on the x% lines."""
    xu, xs = time_unit(hi)
    top = max((float(c["runtime_ns"].max()) for c in curves.values()), default=0.0)
    yu, ys = time_unit(top)
    fig = go.Figure()
    levels = sorted({t.x for tol in tolerances.values() for t in tol.latency})
    if slowdown:
        for x in levels:
            fig.add_hline(y=x * 100, line_dash="dot", line_color="#7f7f7f", line_width=1)
    floor = min(
        (log_floor(c["L_ns"].to_numpy(float)) for c in curves.values()), default=max(lo, 1.0)
    )
    x_range = (floor / xs, hi / xs) if log_x else (lo / xs, hi / xs)
    label_x: list[float] = []
    label_text: list[str] = []
    label_color: list[str] = []
    for i, (label, sweep) in enumerate(curves.items()):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        tol = tolerances[label]
        base = tol.baseline_ns
        data = dense_curve(sweep, log_x=log_x)

        def y_of(T, base=base):
            T = np.asarray(T, dtype=float)
            return (T / base - 1.0) * 100.0 if slowdown else T / ys

        fig.add_trace(
            go.Scatter(
                x=data["L_ns"] / xs,
                y=y_of(data["runtime_ns"]),
                mode="lines",
                name=label,
                legendgroup=label,
                line={"color": color, "width": 2},
                customdata=np.stack(
                    [data["runtime_ns"] / ys, data["lambda_L"], data["rho_L"] * 100], axis=1
                ),
                hovertemplate=f"{label}<br>L = %{{x:.6g}} {xu}<br>T = %{{customdata[0]:.9g}} {yu}"
                "<br>λ_L = %{customdata[1]:g}<br>ρ_L = %{customdata[2]:.3g}%<extra></extra>",
            )
        )
        marks = [t for t in tol.latency if math.isfinite(t.value) and lo <= t.value <= hi]
        for t in marks:
            label_x.append(t.value / xs)
            label_text.append(f"{label} {_percent(t.x)}: {t.value / xs:.4g} {xu}")
            label_color.append(color)
        fig.add_trace(
            go.Scatter(
                x=[L0 / xs] + [t.value / xs for t in marks],
                y=y_of([base] + [t.bound_ns for t in marks]),
                mode="markers",
                text=["L0"] + [f"{_percent(t.x)} L tolerance" for t in marks],
                marker={
                    "color": color,
                    "size": [8] + [10] * len(marks),
                    "symbol": ["circle"] + ["x"] * len(marks),
                },
                name=f"{label}: L0 and x% L tolerance",
                legendgroup=label,
                showlegend=False,
                hovertemplate=f"{label}<br>%{{text}}<br>L = %{{x:.6g}} {xu}<extra></extra>",
            )
        )
    fig.update_layout(
        title="Predicted runtime T(L) per collective variant, with the x% L tolerances",
        xaxis_title=f"network latency L ({xu})",
        yaxis_title="slowdown T(L) / T(L0) − 1 (%)" if slowdown else f"predicted runtime T ({yu})",
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0},
        margin={"t": 60, "r": 20, "b": 20, "l": 20},
        hovermode="closest",
        template="plotly_white",
    )
    order = sorted(range(len(label_x)), key=lambda k: label_x[k])
    axis_labels(
        fig,
        [label_x[k] for k in order],
        [label_text[k] for k in order],
        [label_color[k] for k in order],
        x_range,
        log=log_x,
        top=False,
        anchor="right",
        lanes=4,
    )
    fig.update_yaxes(tickformat=".6~g")
    if log_x:
        fig.update_xaxes(type="log", range=[math.log10(v) for v in x_range])
    else:
        fig.update_xaxes(range=list(x_range))
    return fig


def variant_sensitivity_figure(
    curves: dict[str, pd.DataFrame], L0: float, *, log_x: bool = False
) -> go.Figure:
    """λ_L (left) and ρ_L = L·λ_L/T in % (right) over L for every collective variant."""
    hi = max((float(c["L_ns"].max()) for c in curves.values()), default=0.0)
    xu, xs = time_unit(hi)
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("λ_L = ∂T/∂L (latency terms on the critical path)", "ρ_L = L·λ_L / T"),
        horizontal_spacing=0.08,
    )
    for i, (label, sweep) in enumerate(curves.items()):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        data = dense_curve(sweep, log_x=log_x)
        fig.add_trace(
            go.Scatter(
                x=data["L_ns"] / xs,
                y=data["lambda_L"],
                mode="lines",
                line_shape="hv",
                name=label,
                legendgroup=label,
                line={"color": color, "width": 2},
                hovertemplate=f"{label}<br>L = %{{x:.6g}} {xu}<br>λ_L = %{{y:g}}<extra></extra>",
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=data["L_ns"] / xs,
                y=data["rho_L"] * 100.0,
                mode="lines",
                name=label,
                legendgroup=label,
                showlegend=False,
                line={"color": color, "width": 2, "dash": "dash"},
                hovertemplate=f"{label}<br>L = %{{x:.6g}} {xu}<br>ρ_L = %{{y:.4g}}%<extra></extra>",
            ),
            row=1,
            col=2,
        )
    for col in (1, 2):
        fig.add_vline(x=L0 / xs, line_dash="dot", line_color="black", row=1, col=col)
        fig.update_xaxes(
            title_text=f"network latency L ({xu})",
            type="log" if log_x else "linear",
            row=1,
            col=col,
        )
    fig.update_yaxes(title_text="λ_L", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="ρ_L (% of T)", rangemode="tozero", tickformat=".3~g", row=1, col=2)
    fig.update_layout(
        title="Latency sensitivity λ_L and latency ratio ρ_L per collective variant",
        legend={"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0},
        margin={"t": 80, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
    )
    return fig


def counters_figure(frame: pd.DataFrame, parts: tuple[str, ...], title: str) -> go.Figure:
    """Tong et al.'s per-rank counters (``<part>_ns`` columns) as stacked bars per rank."""
    fig = split_figure(frame, parts, title)
    fig.for_each_trace(lambda t: t.update(marker_color=COUNTER_COLORS.get(t.name)))
    return fig


def _speedup_label(s: float) -> str:
    return f"×{s:g}" if s >= 1 else f"×1/{1 / s:g}"


def configurations_figure(configs: pd.DataFrame, *, shares: bool = False) -> go.Figure:
    """The bandwidth, latency and combined seven-point sets (Tong et al. §III-G): the mean
    counters of every configuration as stacked bars (in ns, or in % of that configuration's T),
    one panel per set, the network getting faster to the right."""
    sets = list(dict.fromkeys(configs["set"]))
    top = (
        float(configs[[f"{p}_ns" for p in COUNTER_PARTS]].sum(axis=1).max()) if len(configs) else 0
    )
    unit, scale = time_unit(top)
    titles = {
        "bandwidth": "bandwidth set (BW × speed-up)",
        "latency": "latency set (L ÷ speed-up)",
        "combined": "combined set (both)",
    }
    fig = make_subplots(
        rows=1, cols=len(sets), shared_yaxes=True, subplot_titles=[titles.get(s, s) for s in sets]
    )
    for col, name in enumerate(sets, start=1):
        rows = configs[configs["set"] == name].sort_values("speedup")
        x = [_speedup_label(s) for s in rows["speedup"]]
        for part in COUNTER_PARTS:
            y = rows[f"{part}_share"] * 100.0 if shares else rows[f"{part}_ns"] / scale
            fig.add_trace(
                go.Bar(
                    x=x,
                    y=y,
                    name=part,
                    legendgroup=part,
                    showlegend=col == 1,
                    marker_color=COUNTER_COLORS.get(part),
                    customdata=np.stack(
                        [rows["bandwidth_gbps"], rows["L_ns"], rows["runtime_ns"] / scale], axis=1
                    ),
                    hovertemplate=f"{name} %{{x}}: %{{customdata[0]:g}} Gb/s, "
                    f"L = %{{customdata[1]:.6g}} ns<br>T = %{{customdata[2]:.7g}} {unit}"
                    f"<br>{part}: %{{y:.6g}} {'%' if shares else unit}<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="network speed-up", row=1, col=col)
    fig.update_yaxes(
        title_text="share of T (%)" if shares else f"mean time per rank ({unit})", row=1, col=1
    )
    fig.update_layout(
        barmode="stack",
        title="Mean counters over the three seven-point configuration sets",
        legend={"orientation": "h", "yanchor": "top", "y": -0.22, "x": 0},
        margin={"t": 80, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
    )
    return fig


def distribution_figure(
    values: np.ndarray,
    stats: dict[str, float],
    *,
    title: str,
    axis: str,
    kind: str = "time",
    bins: int = 40,
) -> go.Figure:
    """Histogram of one Monte Carlo quantity with its P5, P50 and P95 (and the no-noise value,
    ``stats["baseline"]``) as vertical lines. ``kind``: ``"time"`` (ns, shown in a fitting
    unit), ``"count"`` (λ_L) or ``"ratio"`` (shown in %)."""
    v = np.asarray(values, dtype=float)
    finite = v[np.isfinite(v)]
    if kind == "time":
        unit, scale = time_unit(float(np.abs(finite).max()) if finite.size else 0.0)
        label = f"{axis} ({unit})"
    elif kind == "ratio":
        unit, scale = "%", 0.01
        label = f"{axis} (%)"
    else:
        unit, scale = "", 1.0
        label = axis
    fig = go.Figure(
        go.Histogram(
            x=finite / scale,
            nbinsx=int(bins),
            marker_color="#6baed6",
            name="samples",
            hovertemplate=f"{axis} %{{x}}<br>%{{y}} samples<extra></extra>",
        )
    )
    marks = (
        ("P5", stats.get("p5"), "#2ca02c", "dash"),
        ("P50", stats.get("p50"), "#d62728", "solid"),
        ("P95", stats.get("p95"), "#2ca02c", "dash"),
        ("no noise", stats.get("baseline"), "black", "dot"),
    )
    for i, (name, value, color, dash) in enumerate(marks):
        if value is None or not math.isfinite(value):
            continue
        fig.add_vline(x=value / scale, line_color=color, line_dash=dash, line_width=2)
        fig.add_annotation(
            x=value / scale,
            y=1.0 - 0.07 * i,
            yref="paper",
            text=f"{name} {value / scale:.6g}{' ' + unit if unit and unit != '%' else unit}",
            showarrow=False,
            xanchor="left",
            font={"color": color},
            bgcolor="rgba(255,255,255,0.7)",
        )
    if finite.size < v.size:
        title += f" ({v.size - finite.size} unbounded samples not drawn)"
    fig.update_layout(
        title=title,
        xaxis_title=label,
        yaxis_title="samples",
        bargap=0.05,
        showlegend=False,
        margin={"t": 60, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
    )
    return fig


def region_figure(
    region: Region,
    us: np.ndarray,
    vs: np.ndarray,
    runtime_ns: np.ndarray,
    designs: pd.DataFrame | None = None,
) -> go.Figure:
    """Joint tolerance regions as nested polygons over a heat map of ``T`` (slowdown over
    ``T0``), the baseline and named designs marked inside (●) or outside (✕) the largest
    region; hovering shows ``T`` and the slack to each bound."""
    au, av = region.axes
    T0 = region.baseline_ns
    unit, scale = time_unit(max(float(np.nanmax(runtime_ns)) if runtime_ns.size else T0, T0))
    su = 1e3 if au.unit == "ns" else 1.0
    sv = 1e3 if av.unit == "ns" else 1.0
    lu = f"{au.name} ({'µs' if su == 1e3 else 'ns/B'})"
    lv = f"{av.name} ({'µs' if sv == 1e3 else 'ns/B'})"
    slow = (runtime_ns / T0 - 1.0) * 100.0 if T0 > 0 else np.zeros_like(runtime_ns)
    slack = np.stack([level.bound_ns - runtime_ns for level in region.levels], axis=-1) / scale
    top = max(level.x for level in region.levels) * 100.0
    lines = "<br>".join(
        f"slack to {_percent(level.x)}: %{{customdata[{k + 1}]:.4g}} {unit}"
        for k, level in enumerate(region.levels)
    )
    custom = np.concatenate([(runtime_ns / scale)[..., None], slack], axis=-1)
    fig = go.Figure(
        go.Heatmap(
            x=us / su,
            y=vs / sv,
            z=slow,
            zmin=0.0,
            zmax=max(2.0 * top, 1e-9),
            colorscale="Greys",
            customdata=custom,
            colorbar={"title": {"text": "T / T0 − 1 (%)", "side": "right"}},
            hovertemplate=f"{au.name} = %{{x:.6g}}<br>{av.name} = %{{y:.6g}}<br>"
            f"T = %{{customdata[0]:.6g}} {unit} (%{{z:+.3g}} %)<br>{lines}<extra></extra>",
            name="T",
        )
    )
    for k, level in sorted(enumerate(region.levels), key=lambda kl: -kl[1].x):
        color = ZONE_COLORS[k % len(ZONE_COLORS)]
        fig.add_trace(
            go.Scatter(
                x=np.append(level.u, level.u[:1]) / su,
                y=np.append(level.v, level.v[:1]) / sv,
                mode="lines+markers",
                fill="toself",
                fillcolor=_rgba(color, 0.12),
                line={"color": color, "width": 2},
                marker={"size": 4},
                name=f"T ≤ (1 + {_percent(level.x)})·T0",
                hovertemplate=f"{_percent(level.x)} vertex<br>{au.name} = %{{x:.6g}}<br>"
                f"{av.name} = %{{y:.6g}}<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[au.value / su],
            y=[av.value / sv],
            mode="markers",
            marker={"symbol": "star", "size": 14, "color": "black"},
            name="baseline",
            hovertemplate=f"baseline<br>T0 = {short_ns(T0, 7)}<extra></extra>",
        )
    )
    if designs is not None and len(designs):
        largest = f"inside_{level_key(max(lv.x for lv in region.levels))}"
        positions = labels.place_points(
            list(designs[au.key] / su),
            list(designs[av.key] / sv),
            [str(d) for d in designs["design"]],
            (0.0, region.box[0] / su),
            (0.0, region.box[1] / sv),
        )
        designs = designs.assign(
            _position=[p or "top center" for p in positions],
            _label=[str(d) if p else "" for d, p in zip(designs["design"], positions, strict=True)],
        )
        for inside, symbol in ((True, "circle"), (False, "x")):
            part = designs[designs[largest] == inside]
            if part.empty:
                continue
            text = [
                f"{r['design']}<br>T = {short_ns(r['runtime_ns'], 7)} ({r['slowdown']:+.3%})<br>"
                + "<br>".join(
                    f"slack to {_percent(lv.x)}: {short_ns(r[f'slack_{level_key(lv.x)}_ns'], 4)}"
                    for lv in region.levels
                )
                for r in part.to_dict(orient="records")
            ]
            fig.add_trace(
                go.Scatter(
                    x=part[au.key] / su,
                    y=part[av.key] / sv,
                    mode="markers+text",
                    text=part["_label"],
                    textposition=list(part["_position"]),
                    marker={
                        "symbol": symbol,
                        "size": 10,
                        "color": "#1f77b4" if inside else "#d62728",
                    },
                    name="designs inside" if inside else "designs outside",
                    hovertext=text,
                    hovertemplate="%{hovertext}<extra></extra>",
                )
            )
    fig.update_layout(
        xaxis_title=lu,
        yaxis_title=lv,
        height=560,
        margin={"t": 30, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
        legend={"orientation": "h", "y": -0.15},
    )
    fig.update_xaxes(range=[0, region.box[0] / su])
    fig.update_yaxes(range=[0, region.box[1] / sv])
    return fig


def region_preview_figure(preview: RegionPreview) -> go.Figure:
    """The heat map of ``T`` over the region's box (slowdown over ``T0``) with the grid's
    contour at each tolerance level — shown while the exact polygons are computed."""
    au, av = preview.axes
    T0 = preview.baseline_ns
    su = 1e3 if au.unit == "ns" else 1.0
    sv = 1e3 if av.unit == "ns" else 1.0
    slow = (preview.runtime_ns / T0 - 1.0) * 100.0 if T0 > 0 else np.zeros_like(preview.runtime_ns)
    top = max(preview.levels) * 100.0
    fig = go.Figure(
        go.Heatmap(
            x=preview.us / su,
            y=preview.vs / sv,
            z=slow,
            zmin=0.0,
            zmax=max(2.0 * top, 1e-9),
            colorscale="Greys",
            colorbar={"title": {"text": "T / T0 − 1 (%)", "side": "right"}},
            hovertemplate=f"{au.name} = %{{x:.6g}}<br>{av.name} = %{{y:.6g}}<br>"
            "T / T0 − 1 = %{z:+.3g} %<extra></extra>",
            name="T",
        )
    )
    for k, x in enumerate(preview.levels):
        color = ZONE_COLORS[k % len(ZONE_COLORS)]
        fig.add_trace(
            go.Contour(
                x=preview.us / su,
                y=preview.vs / sv,
                z=slow,
                contours={"start": x * 100.0, "end": x * 100.0, "size": 1.0, "coloring": "none"},
                line={"color": color, "width": 2, "dash": "dot"},
                showscale=False,
                name=f"T = (1 + {_percent(x)})·T0 on the grid",
                showlegend=True,
                hoverinfo="skip",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[au.value / su],
            y=[av.value / sv],
            mode="markers",
            marker={"symbol": "star", "size": 14, "color": "black"},
            name="baseline",
        )
    )
    fig.update_layout(
        xaxis_title=f"{au.name} ({'µs' if su == 1e3 else 'ns/B'})",
        yaxis_title=f"{av.name} ({'µs' if sv == 1e3 else 'ns/B'})",
        height=560,
        margin={"t": 30, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
        legend={"orientation": "h", "y": -0.15},
    )
    fig.update_xaxes(range=[0, preview.box[0] / su])
    fig.update_yaxes(range=[0, preview.box[1] / sv])
    return fig


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def study_heatmap(
    matrix: pd.DataFrame, metric: str, *, log: bool = False, relative: bool = False
) -> go.Figure:
    """A study's runs (down) × networks (across) coloured by ``metric``, values written in.

    ``relative``: colours by value / the row's smallest value (which network suits each run
    best, whatever the runs' scales); the cells still show the values."""
    M = matrix.to_numpy(dtype=np.float64)
    finite = np.where(np.isfinite(M), M, np.nan)
    if relative:
        with np.errstate(all="ignore"):
            finite = finite / np.nanmin(np.where(finite > 0, finite, np.nan), axis=1)[:, None]
        metric = f"{metric} / row minimum"
    z = finite
    if log:
        z = np.full_like(finite, np.nan)
        np.log10(finite, out=z, where=finite > 0)
    text = [
        ["∞" if np.isinf(v) else ("—" if np.isnan(v) else f"{v:.4g}") for v in row] for row in M
    ]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[str(c) for c in matrix.columns],
            y=[str(i) for i in matrix.index],
            customdata=M,
            text=text,
            texttemplate="%{text}",
            colorscale="Viridis",
            colorbar={"title": {"text": f"log10 {metric}" if log else metric, "side": "right"}},
            hovertemplate="%{y} on %{x}<br>" + metric + " = %{customdata:.6g}<extra></extra>",
            xgap=2,
            ygap=2,
        )
    )
    fig.update_layout(
        height=max(320, 120 + 48 * len(matrix.index)),
        margin={"t": 30, "r": 20, "b": 20, "l": 20},
        template="plotly_white",
    )
    fig.update_yaxes(autorange="reversed")
    return fig
