"""Latency: predicted T(L) with the 1/2/5% tolerance zones (LLAMP Fig. 1), the critical
latencies, λ_L and ρ_L (Fig. 9), and the L and G tolerances."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from llamp.config import DEFAULT_TOLERANCES, format_ns, parse_duration_ns
from llamp.errors import InputError
from llamp.ui import analyses, controls, plots

st.title("Latency sensitivity and tolerance")
sel = controls.selection("latency")
st.caption(f"Run **{sel.name}** · {controls.describe(sel.params)}")


def _levels(text: str) -> tuple[float, ...]:
    try:
        values = sorted({float(v) / 100.0 for v in text.replace("%", "").split(",") if v.strip()})
    except ValueError as err:
        raise InputError(f"tolerance levels: cannot read {text!r} (percents, e.g. 1,2,5)") from err
    if not values or values[0] <= 0:
        raise InputError("tolerance levels must be positive percents, e.g. 1,2,5")
    return tuple(values)


def _pct(x: float) -> str:
    return f"{x * 100:g}%"


def tolerance_key(x: float) -> str:
    """Stable element key of the x% L tolerance (``tolerance-L-1pct`` for 1%)."""
    return f"tolerance-L-{x * 100:g}pct".replace(".", "_")


with st.expander("Sweep range and tolerance levels", expanded=False):
    c1, c2, c3, c4 = st.columns(4)
    auto = c1.checkbox(
        "Automatic range",
        value=True,
        key="lat_auto",
        help="From 0 to 1.25 × the largest L tolerance, so every zone is visible.",
    )
    lo_text = c2.text_input("From L", "0us", key="lat_from", disabled=auto)
    hi_text = c3.text_input("To L", "100us", key="lat_to", disabled=auto)
    points = c4.number_input("Sweep points", 10, 5000, 200, step=10, key="lat_points")
    levels_text = st.text_input(
        "Tolerance levels (% slowdown over T(L0))",
        ", ".join(f"{x * 100:g}" for x in DEFAULT_TOLERANCES),
        key="lat_levels",
    )
o1, o2 = st.columns(2)
log_x = o1.toggle("Logarithmic L axis", key="lat_log")
show_critical = o2.toggle("Mark critical latencies", value=True, key="lat_show_critical")

tol = curve = pred = None
with controls.readable_errors("Latency analysis"):
    levels = _levels(levels_text)
    graph = sel.graph()
    with st.spinner("Computing tolerances…"):
        pred = analyses.predict_at(sel.run, graph, sel.key)
        tol = analyses.tolerance_at(sel.run, graph, sel.key, levels)
    L0 = sel.params.L
    if auto:
        lo, hi = analyses.auto_range(tol, L0)
    else:
        lo, hi = parse_duration_ns(lo_text), parse_duration_ns(hi_text)
        if not 0 <= lo < hi:
            raise InputError(f"the sweep range needs 0 ≤ From < To (got {lo_text!r}, {hi_text!r})")
    extra = tuple(t.value for t in tol.latency if math.isfinite(t.value)) + (L0,)
    with st.spinner(f"Finding the critical latencies in [{format_ns(lo)}, {format_ns(hi)}]…"):
        curve = analyses.latency_curve(sel.run, graph, sel.key, lo, hi, int(points), extra)

if tol is None or curve is None or pred is None:
    st.stop()

# ---------------------------------------------------------------------- headline numbers
cols = st.columns(2 + len(tol.latency))
with cols[0].container(key="runtime-L0"):
    st.metric("T(L0) predicted", format_ns(tol.baseline_ns))
    st.caption(f"{tol.baseline_ns:.6f} ns")
with cols[1].container(key="lambda-L0"):
    st.metric("λ_L at L0", f"{pred.lambda_L:g}")
    st.caption(f"ρ_L = {pred.rho_L:.4%} of T")
for col, level in zip(cols[2:], tol.latency, strict=True):
    with col.container(key=tolerance_key(level.x)):
        st.metric(
            f"{_pct(level.x)} L tolerance",
            format_ns(level.value),
            delta=f"L0 + {format_ns(level.value - L0)}" if math.isfinite(level.value) else None,
            delta_color="off",
            help=f"Largest L with T ≤ (1 + {_pct(level.x)})·T(L0) = {format_ns(level.bound_ns)}",
        )
        st.caption(f"{level.value:.6f} ns")

# ---------------------------------------------------------------------- plots
st.plotly_chart(
    plots.latency_figure(
        curve.sweep, curve.critical, tol, L0, log_x=log_x, show_critical=show_critical
    ),
    key="plot_T_L",
    width="stretch",
)
st.plotly_chart(
    plots.sensitivity_figure(curve.sweep, L0, log_x=log_x), key="plot_lambda", width="stretch"
)

# ---------------------------------------------------------------------- tables
st.subheader("Tolerances")
rows = []
for lat, bw in zip(tol.latency, tol.bandwidth, strict=True):
    rows.append(
        {
            "x_percent": lat.x * 100,
            "T_bound_ns": lat.bound_ns,
            "max_L_ns": lat.value,
            "max_L": format_ns(lat.value),
            "max_delta_L_ns": lat.value - L0,
            "max_G_ns_per_byte": bw.value,
            "min_bandwidth_Gb_per_s": 8.0 / bw.value if bw.value > 0 else math.inf,
        }
    )
tol_table = pd.DataFrame(rows)
st.dataframe(
    tol_table,
    hide_index=True,
    key="table_tolerance",
    column_config={
        "x_percent": st.column_config.NumberColumn("x (%)", format="%g"),
        "T_bound_ns": st.column_config.NumberColumn("T bound (ns)", format="%.3f"),
        "max_L_ns": st.column_config.NumberColumn("max L (ns)", format="%.3f"),
        "max_L": "max L",
        "max_delta_L_ns": st.column_config.NumberColumn("max ΔL = L − L0 (ns)", format="%.3f"),
        "max_G_ns_per_byte": st.column_config.NumberColumn("max G (ns/B)", format="%.6g"),
        "min_bandwidth_Gb_per_s": st.column_config.NumberColumn(
            "min bandwidth 8/G (Gb/s)", format="%.4g"
        ),
    },
)
controls.csv_download(tol_table, f"{controls.slug(sel.name)}-tolerance.csv", key="csv_tolerance")
st.subheader("Critical latencies")
crit = curve.critical
seg_table = pd.DataFrame(
    {
        "from_L_ns": [s.start for s in crit.segments],
        "to_L_ns": [s.end for s in crit.segments],
        "lambda_L": [s.slope for s in crit.segments],
        "T_from_ns": [s.runtime_start_ns for s in crit.segments],
        "T_to_ns": [s.runtime_end_ns for s in crit.segments],
    }
)
st.caption(
    f"{len(crit.critical)} critical latencies in [{format_ns(crit.lo)}, {format_ns(crit.hi)}]: "
    "λ_L is constant on each segment and changes at its ends."
)
st.dataframe(
    seg_table,
    hide_index=True,
    key="table_critical",
    column_config={
        "from_L_ns": st.column_config.NumberColumn("from L (ns)", format="%.3f"),
        "to_L_ns": st.column_config.NumberColumn("to L (ns)", format="%.3f"),
        "lambda_L": st.column_config.NumberColumn("λ_L", format="%g"),
        "T_from_ns": st.column_config.NumberColumn("T at from (ns)", format="%.3f"),
        "T_to_ns": st.column_config.NumberColumn("T at to (ns)", format="%.3f"),
    },
)
controls.csv_download(
    seg_table, f"{controls.slug(sel.name)}-critical-latencies.csv", key="csv_critical"
)

with st.expander(f"Sweep table ({len(curve.sweep)} values of L)"):
    st.dataframe(curve.sweep, hide_index=True, key="table_sweep")
    controls.csv_download(curve.sweep, f"{controls.slug(sel.name)}-sweep.csv", key="csv_sweep")
