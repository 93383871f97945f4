"""Plotly figures of the UI: T(L) with tolerance zones (LLAMP Fig. 1), λ_L and ρ_L curves
(Fig. 9), the per-rank timeline with the critical path, and per-rank time splits.

Functions take analysis results and return figures; they compute nothing expensive, so a plot
option never reruns an analysis. Every axis names its unit; times are shown in the unit that
suits their magnitude (:func:`time_unit`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from llamp.config import format_ns
from llamp.graph import CALC, KIND_NAMES, RECV, SEND, ExecutionGraph
from llamp.lp import CriticalLatencies, Evaluation, Tolerance

#: Tolerance zones, as in the LLAMP paper's Fig. 1: ≤1% green, 1–2% orange, 2–5% red.
ZONE_COLORS = ("#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b")
KIND_COLORS = {CALC: "#6baed6", SEND: "#31a354", RECV: "#fd8d3c"}
SPLIT_COLORS = {
    "compute": "#6baed6",
    "overhead": "#9e9ac8",
    "latency": "#e6550d",
    "bandwidth": "#31a354",
    "blocked": "#bdbdbd",
}
_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))


def time_unit(max_ns: float) -> tuple[str, float]:
    """The display unit for durations up to ``max_ns``: (``"ms"``, 1e6) for 2.5e6 ns."""
    magnitude = abs(max_ns) if math.isfinite(max_ns) else 0.0
    for unit, scale in _UNITS:
        if magnitude >= scale:
            return unit, scale
    return "ns", 1.0


def short_ns(value_ns: float, digits: int = 4) -> str:
    """A duration in ``digits`` significant digits and a fitting unit: ``46.66 µs``."""
    if not math.isfinite(value_ns):
        return "∞" if value_ns > 0 else str(value_ns)
    unit, scale = time_unit(value_ns)
    return f"{value_ns / scale:.{digits}g} {unit}"


def dense_curve(sweep: pd.DataFrame, *, log_x: bool = False, points: int = 600) -> pd.DataFrame:
    """``T``, ``λ_L`` and ``ρ_L`` at many more values of L than the sweep, exactly.

    The sweep contains every critical latency of its range, so ``T`` is linear between two
    consecutive sweep values and ``λ_L`` (a right derivative) is constant there: interpolating
    adds no error. Points are spaced evenly, or logarithmically for a log axis.
    """
    L = sweep["L_ns"].to_numpy(float)
    T = sweep["runtime_ns"].to_numpy(float)
    lam = sweep["lambda_L"].to_numpy(float)
    positive = L[L > 0]
    if log_x and positive.size:
        extra = np.geomspace(positive.min(), L.max(), points)
    else:
        extra = np.linspace(L.min(), L.max(), points)
    x = np.union1d(L, extra)
    if log_x:
        x = x[x > 0]
    runtime = np.interp(x, L, T)
    slope = lam[np.clip(np.searchsorted(L, x, side="right") - 1, 0, len(L) - 1)]
    rho = np.divide(x * slope, runtime, out=np.zeros_like(x), where=runtime > 0)
    return pd.DataFrame({"L_ns": x, "runtime_ns": runtime, "lambda_L": slope, "rho_L": rho})


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
) -> go.Figure:
    """Predicted ``T(L)`` with the x% tolerance zones shaded and the critical latencies marked."""
    lo, hi = float(critical.lo), float(critical.hi)
    xu, xs = time_unit(hi)
    yu, ys = time_unit(float(sweep["runtime_ns"].max()))
    data = dense_curve(sweep, log_x=log_x)
    fig = go.Figure()
    for i, (x_lo, x, a, b) in enumerate(zone_bounds(tol, L0, hi)):
        label = f"≤ {_percent(x)}" if x_lo == 0 else f"{_percent(x_lo)}–{_percent(x)}"
        color = ZONE_COLORS[i % len(ZONE_COLORS)]
        fig.add_vrect(
            x0=a / xs, x1=b / xs, fillcolor=color, opacity=0.18, line_width=0, layer="below"
        )
        fig.add_annotation(
            x=_axis_x(a / xs, log_x),
            y=1.0,
            yref="paper",
            text=label,
            showarrow=False,
            xanchor="left",
            yanchor="top",
            font={"color": color},
        )
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
            name=f"L0 = {format_ns(L0)}",
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
                mode="markers+text",
                name="x% L tolerance",
                text=[f"{_percent(t.x)}: {t.value / xs:.4g} {xu}" for t in levels],
                textposition="middle left",
                marker={"color": "black", "size": 9, "symbol": "x"},
                hovertemplate=f"max L = %{{x:.6g}} {xu}<br>T bound = %{{y:.7g}} {yu}<extra></extra>",
            )
        )
    crit = [c for c in critical.critical if c > 0 or not log_x]
    if show_critical and crit:
        before, after = _slopes_around(critical, crit)
        T_at = np.interp(crit, sweep["L_ns"], sweep["runtime_ns"])
        fig.add_trace(
            go.Scatter(
                x=np.asarray(crit) / xs,
                y=T_at / ys,
                mode="markers",
                name=f"critical latencies ({len(critical.critical)})",
                marker={
                    "color": "#7f3b08",
                    "size": 8,
                    "symbol": "diamond-open",
                    "line": {"width": 2},
                },
                customdata=np.stack([before, after], axis=1),
                hovertemplate=f"critical latency %{{x:.6g}} {xu}"
                "<br>λ_L: %{customdata[0]:g} → %{customdata[1]:g}<extra></extra>",
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
        fig.update_xaxes(type="log")
    else:
        fig.update_xaxes(range=[lo / xs, hi / xs])
    return fig


def sensitivity_figure(sweep: pd.DataFrame, L0: float, *, log_x: bool = False) -> go.Figure:
    """λ_L (messages on the critical path, a step function) and ρ_L = L·λ_L/T (in %) over L."""
    data = dense_curve(sweep, log_x=log_x)
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
) -> tuple[go.Figure, int, int]:
    """Per-rank Gantt chart of the ops in [lo, hi]; critical ops opaque with a dark outline.

    A receive's bar runs from its start to its finish, so it shows the time the rank waits.
    Critical-path messages in the window are drawn as lines from send finish to receive finish.
    Returns the figure, the number of ops in the window and the number drawn (the first
    ``max_bars`` by start time).
    """
    sel = np.flatnonzero(window_mask(ev, lo, hi))
    total = int(sel.size)
    if sel.size > max_bars:
        sel = sel[np.argsort(ev.start_ns[sel], kind="stable")[:max_bars]]
    tu, ts = time_unit(max(hi - lo, 1.0))
    fig = go.Figure()
    crit = ev.critical
    for kind in (CALC, SEND, RECV):
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
