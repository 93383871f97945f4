"""Latency: predicted T(L) with the 1/2/5% tolerance zones (LLAMP Fig. 1), the critical
latencies that matter, λ_L and ρ_L (Fig. 9), and the L and G tolerances.

T(L) and λ_L come from the exact segments of the critical-latency search, never from a sweep.
The work runs in the background (progress, Cancel) and is stored with the run, so a second
visit — from any session, after a restart — shows it at once. The controls under "Display"
(markers, their threshold, the axes) only redraw.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from llamp.config import DEFAULT_TOLERANCES, parse_duration_ns
from llamp.errors import InputError
from llamp.lp.critical import exact_curve
from llamp.lp.registry import CriticalSettings, ToleranceSettings
from llamp.lp.tolerance import latency_range
from llamp.ui import controls, display, exports, page_work, plots

st.title("Latency sensitivity and tolerance")
sel = controls.selection("latency")
st.caption(f"Run **{sel.name}** · {controls.describe(sel.params)}")


def _pct(x: float) -> str:
    return f"{x * 100:g}%"


def tolerance_key(x: float) -> str:
    """Stable element key of the x% L tolerance (``tolerance-L-1pct`` for 1%)."""
    return f"tolerance-L-{x * 100:g}pct".replace(".", "_")


with st.expander("Range, tolerance levels and search", expanded=False):
    c1, c2, c3 = st.columns(3)
    auto = c1.checkbox(
        "Automatic range",
        value=True,
        key="lat_auto",
        help="From 0 to 1.25 × the largest L tolerance, so every zone is visible.",
    )
    lo_text = c2.text_input("From L", "0us", key="lat_from", disabled=auto)
    hi_text = c3.text_input("To L", "100us", key="lat_to", disabled=auto)
    levels_text = st.text_input(
        "Tolerance levels (% slowdown over T(L0))",
        ", ".join(f"{x * 100:g}" for x in DEFAULT_TOLERANCES),
        key="lat_levels",
    )
    exhaustive = st.checkbox(
        "Find every critical latency (no evaluation budget)",
        value=False,
        key="lat_exhaustive",
        help="By default the search stops after the automatic budget (one to two minutes of "
        "graph passes) and says which intervals it left unresolved; T(L) is exact everywhere "
        "else.",
    )
with st.expander("Display", expanded=False):
    d1, d2, d3 = st.columns(3)
    log_x = d1.toggle("Logarithmic L axis", key="lat_log")
    show_critical = d2.toggle("Mark critical latencies", value=True, key="lat_show_critical")
    min_jump_pct = d3.number_input(
        "Mark breakpoints where λ_L jumps by at least (%)",
        min_value=0.0,
        max_value=1000.0,
        value=1.0,
        step=0.5,
        key="lat_min_jump",
        help="Neighbouring breakpoints whose λ_L steps are smaller are merged; 0 marks every "
        "exact breakpoint.",
    )
    points = st.number_input(
        "Plotted points",
        100,
        20_000,
        600,
        step=100,
        key="lat_points",
        help="Points drawn between the exact breakpoints (display only: nothing is recomputed).",
    )


pred = tol = crit = None
with controls.readable_errors("Latency analysis"):
    levels = controls.levels(levels_text)
    pred = controls.analysis(sel, "predict", "Predicting T(L0)", slot="latency-predict")
    tol = controls.analysis(
        sel,
        "tolerance",
        "Finding the x% tolerances",
        ToleranceSettings(levels),
        slot="latency-tolerance",
    )
if pred is None or tol is None:
    st.stop()
L0 = sel.params.L

# ---------------------------------------------------------------------- headline numbers
cols = st.columns(2 + len(tol.latency))
with cols[0].container(key="runtime-L0"):
    st.metric("T(L0) predicted", display.duration(tol.baseline_ns))
    st.caption(f"exact: {display.exact_duration(tol.baseline_ns)}")
with cols[1].container(key="lambda-L0"):
    st.metric("λ_L at L0", f"{pred.lambda_L:g}")
    st.caption(f"ρ_L = {pred.rho_L:.4%} of T")
for col, level in zip(cols[2:], tol.latency, strict=True):
    with col.container(key=tolerance_key(level.x)):
        st.metric(
            f"{_pct(level.x)} L tolerance",
            display.duration(level.value),
            delta=f"L0 + {display.duration(level.value - L0)}"
            if math.isfinite(level.value)
            else None,
            delta_color="off",
            help=f"Largest L with T ≤ (1 + {_pct(level.x)})·T(L0) = {display.duration(level.bound_ns)}",
        )
        st.caption(f"exact: {display.exact_duration(level.value)}")

st.subheader("Tolerances")
tol_rows = [
    {
        "x_percent": lat.x * 100,
        "T_bound_ns": lat.bound_ns,
        "max_L_ns": lat.value,
        "max_delta_L_ns": lat.value - L0,
        "max_G_ns_per_byte": bw.value,
        "min_bandwidth_Gb_per_s": 8.0 / bw.value if bw.value > 0 else math.inf,
    }
    for lat, bw in zip(tol.latency, tol.bandwidth, strict=True)
]
tol_table = pd.DataFrame(tol_rows)
st.dataframe(
    pd.DataFrame(
        {
            "x": [_pct(r["x_percent"] / 100) for r in tol_rows],
            "T bound": [display.duration(r["T_bound_ns"]) for r in tol_rows],
            "max L": [display.duration(r["max_L_ns"]) for r in tol_rows],
            "max ΔL = L − L0": [display.duration(r["max_delta_L_ns"]) for r in tol_rows],
            "max G (ns/B)": [f"{r['max_G_ns_per_byte']:.6g}" for r in tol_rows],
            "min bandwidth 8/G": [f"{r['min_bandwidth_Gb_per_s']:.4g} Gb/s" for r in tol_rows],
        }
    ),
    hide_index=True,
    key="table_tolerance",
)
controls.csv_download(tol_table, f"{controls.slug(sel.name)}-tolerance.csv", key="csv_tolerance")


def _value(parameter: str, value: float) -> str:
    return display.gap(value, 6) if parameter == "G" else display.duration(value)


def _own(walk) -> str:
    """A tolerance under the network's own order (:class:`~llamp.lp.order_check.OwnTolerance`)."""
    return walk.text(lambda v: _value(walk.parameter, v))


if sel.params.order == "schedule":
    from llamp.lp.order_check import check_tolerance

    with controls.readable_errors("Tolerances under the network's own order"):
        own = controls.background(
            sel,
            "latency-own-order",
            "Tolerances under the network's own order",
            lambda graph, task: check_tolerance(graph, sel.params, tol, progress=task.report),
            ("own-order", levels),
            stored_as="ui_own_tolerance",
        )
        if own:
            st.markdown("**Under the network's own order**")
            st.caption(
                f"The tolerances above keep the order of the schedule at L0 = "
                f"{display.duration(L0)}. Here the schedule pass runs again at each value (the "
                "network's own order, LogGOPSim's under rendezvous loggopsim and NIC serial) "
                "until its T reaches the bound: ↑ its T crosses the bound within 10⁻⁵ above, "
                "jumping over it (an order change); ≥ a, < b, a … b: the pass budget ran out "
                "first, its T was below the bound at a and above it at b."
            )
            st.dataframe(
                pd.DataFrame(
                    {
                        "x": [_pct(w.x) for w in own["L"]],
                        "max L (order fixed)": [display.duration(w.fixed) for w in own["L"]],
                        "max L (own order)": [_own(w) for w in own["L"]],
                        "max G (order fixed)": [_value("G", w.fixed) for w in own.get("G", [])],
                        "max G (own order)": [_own(w) for w in own.get("G", [])],
                    }
                ),
                hide_index=True,
                key="table_own_tolerance",
            )

# ---------------------------------------------------------------------- critical latencies
with controls.readable_errors("Critical-latency search"):
    if auto:
        lo, hi = latency_range((t.value for t in tol.latency), L0)
    else:
        lo, hi = (
            parse_duration_ns(lo_text, default_unit=None),
            parse_duration_ns(hi_text, default_unit=None),
        )
        if not 0 <= lo < hi:
            raise InputError(f"the L range needs 0 ≤ From < To (got {lo_text!r}, {hi_text!r})")
    st.subheader(f"T(L) over [{display.duration(lo)}, {display.duration(hi)}]")
    search = CriticalSettings.over(lo, hi, None if exhaustive else "auto")
    crit = controls.analysis(
        sel, "critical", "Finding the critical latencies", search, slot="latency-critical"
    )
if crit is None:
    st.stop()

curve = exact_curve(crit)
ranked = page_work.breakpoints(crit, min_jump_pct / 100.0)
st.plotly_chart(
    plots.latency_figure(
        curve,
        crit,
        tol,
        L0,
        log_x=log_x,
        show_critical=show_critical,
        groups=ranked,
        points=int(points),
    ),
    key="plot_T_L",
    width="stretch",
)
st.plotly_chart(
    plots.sensitivity_figure(curve, L0, log_x=log_x, points=int(points)),
    key="plot_lambda",
    width="stretch",
)
if not crit.complete:
    st.warning(
        f"The search used its budget of {crit.max_evaluations:,} evaluations and left "
        f"{len(crit.unresolved):,} intervals unresolved (each holds at least one more critical "
        "latency; T(L) is drawn as a straight line across them, an upper bound). Tick 'Find "
        "every critical latency' above to resolve them."
    )

st.subheader("Critical latencies that matter")
st.caption(
    f"{len(crit.critical):,} exact critical latencies in [{display.duration(crit.lo)}, "
    f"{display.duration(crit.hi)}] ({crit.evaluations:,} evaluations); {len(ranked):,} where λ_L "
    f"jumps by at least {min_jump_pct:g}%, largest jump first."
)
shown = pd.DataFrame(
    {
        "#": ranked["rank"],
        "critical L": [display.duration(v) for v in ranked["at_ns"]],
        "merged from": [
            display.duration(a) if m > 1 else ""
            for a, m in zip(ranked["lo_ns"], ranked["merged"], strict=True)
        ],
        "merged to": [
            display.duration(b) if m > 1 else ""
            for b, m in zip(ranked["hi_ns"], ranked["merged"], strict=True)
        ],
        "λ_L before": ranked["slope_before"],
        "λ_L after": ranked["slope_after"],
        "jump of λ_L": ranked["jump"],
        "relative jump": [f"{v:.3%}" for v in ranked["relative_jump"]],
        "breakpoints": ranked["merged"],
    }
)
st.dataframe(shown, hide_index=True, key="table_breakpoints")
merged = ranked[ranked["merged"] > 1]
if len(merged):
    st.caption(
        f"{len(merged):,} rows stand for runs of neighbouring small steps merged into one "
        f"({int(merged['merged'].sum()):,} breakpoints): 'merged from' and 'merged to' say "
        "where, 'breakpoints' how many; every one is listed below."
    )
with st.expander(f"All {len(crit.critical):,} exact critical latencies"):
    before, after = crit.slopes()
    every = pd.DataFrame(
        {
            "critical L": [display.duration(v, 9) for v in crit.critical],
            "λ_L before": before,
            "λ_L after": after,
            "T there": [display.duration(v, 9) for v in crit.runtime_at(crit.critical)]
            if crit.critical
            else [],
        }
    )
    st.dataframe(every, hide_index=True, key="table_every_critical")
if len(ranked):
    choice = st.selectbox(
        "Open a critical latency on the critical-path page",
        range(len(ranked)),
        format_func=lambda i: f"#{i + 1}: L = {display.duration(ranked['at_ns'].iloc[i])}",
        key="lat_open",
    )
    at = float(ranked["at_ns"].iloc[choice])
    st.page_link(
        "views/critical_path.py",
        label=f"Critical path at L = {display.duration(at)}",
        icon=":material/route:",
        query_params=controls.link_params("critical_path", L=f"{at!r}ns"),
    )
segments = pd.DataFrame(
    {
        "from_L_ns": [s.start for s in crit.segments],
        "to_L_ns": [s.end for s in crit.segments],
        "lambda_L": [s.slope for s in crit.segments],
        "T_from_ns": [s.runtime_start_ns for s in crit.segments],
        "T_to_ns": [s.runtime_end_ns for s in crit.segments],
    }
)
c1, c2 = st.columns(2)
with c1:
    controls.csv_download(
        ranked,
        f"{controls.slug(sel.name)}-breakpoints.csv",
        key="csv_breakpoints",
        label="Download the ranked breakpoints",
    )
with c2:
    controls.csv_download(
        segments,
        f"{controls.slug(sel.name)}-critical-latencies.csv",
        key="csv_critical",
        label=f"Download all {len(segments):,} exact segments",
    )

st.subheader("Export")
exports.latency_report_button(
    sel.name, sel.token, sel.params, pred, tol, crit, curve, key="lat-export-report"
)
