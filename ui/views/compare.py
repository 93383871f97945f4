"""Compare runs: two or more stored runs side by side at one configuration — each run's T(L)
(or slowdown) and λ_L from its own exact critical-latency segments over its own L range (one
panel per run, or one axis, linear or log) with its critical latencies marked, tolerances,
critical-path composition, and what changed against the first run
(:mod:`llamp.lp.compare`, computed per run in the background by
:mod:`llamp.ui.run_comparison`: progress, Cancel, and adding a run computes only that run). The
controls under the curves (runtime axis, L axis) only redraw."""

from __future__ import annotations

import math
import re

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llamp.lp.compare import PARTS
from llamp.ui import controls, display, plots, run_comparison, store_access, tasks


def markdown_text(text: str) -> str:
    """``text`` shown literally by ``st.markdown`` (run names and λ_L hold ``_``, ``*``…)."""
    return re.sub(r"([\\`*_{}\[\]()<>#+!|~$-])", r"\\\1", text)


st.title("Compare runs")
sel = controls.selection("compare")
st.caption(controls.describe(sel.params))


runs = None
with controls.readable_errors("Cannot read the graph store"):
    runs = store_access.list_runs()
if runs is None or len(runs) < 2:
    st.info("Comparing needs at least two stored runs: ingest another trace on the Runs page.")
    st.stop()

names = list(runs["name"])
default = [sel.name] + [n for n in names if n != sel.name][:1]
chosen = st.multiselect(
    "Runs (the first is the baseline)",
    names,
    default=default,
    key="cmp_runs",
    help="e.g. two versions of an application, or the same application on 8 and 64 ranks.",
)
c1, c2 = st.columns(2)
levels_text = c1.text_input("Tolerance levels (%)", "1,2,5", key="cmp_levels")
hi_text = c2.text_input(
    "Largest L of the curves",
    "",
    key="cmp_hi",
    placeholder="auto: each run to 1.25 × its largest tolerance",
    help="Empty: each run's curve covers its own range, as on the Latency page. A duration "
    "(e.g. 50us): every run over [0, that L].",
)
if len(chosen) < 2:
    st.info("Choose at least two runs.")
    st.stop()

found = None
with controls.readable_errors("Comparison"):
    settings = run_comparison.settings(levels_text, hi_text)
    levels, top = settings.levels, settings.hi
    pairs = [(name, store_access.run_token(runs, name)) for name in chosen]
    found = run_comparison.ready(pairs, sel.params, levels, top) or tasks.result(
        f"compare|{[(n, store_access.cache_key(t)) for n, t in pairs]!r}|{sel.key!r}|{levels!r}|{top!r}",
        f"Comparing {len(chosen)} runs",
        run_comparison.work(pairs, sel.params, levels, top),
        slot="compare",
        job=True,  # each run's figures and curve are stored as they are done
    )
if found is None:
    st.stop()
comparison = found
searches = comparison.critical


def _change(c) -> str:
    """A change with its direction: ``↓ 7,500× faster`` for a runtime, ``↑ +30%`` for a
    small increase of another quantity, ``=`` when it is not significant."""
    relative = c.relative()
    if relative == "=" or c.unit == "share" or c.value == c.baseline:
        return relative
    sign, words = (
        display.change(c.value, c.baseline)
        if c.quantity == "runtime T"
        else display.change(c.value, c.baseline, "less", "more")
    )
    ratio = c.value / c.baseline if c.baseline else math.inf
    if relative.startswith(("+", "-")) and 0.1 < ratio < 10:
        return f"{sign} {relative}"
    return f"{sign} {words}"


# ---------------------------------------------------------------------- what changed
st.subheader("What changed")
with st.container(key="cmp-summary"):
    for line in comparison.summary():
        st.markdown(f"- {markdown_text(line)}")

overview = pd.DataFrame(
    {
        "run": [r.name for r in comparison.runs],
        "ranks": [r.ranks for r in comparison.runs],
        "messages": [display.count(r.messages) for r in comparison.runs],
        "sent": [display.size(r.bytes) for r in comparison.runs],
        "collectives": [r.collective_instances for r in comparison.runs],
        "T": [plots.short_ns(r.runtime_ns, 6) for r in comparison.runs],
        "λ_L": [display.number(r.prediction.lambda_L, 6) for r in comparison.runs],
        "λ_G (bytes on the path)": [display.size(r.prediction.lambda_G) for r in comparison.runs],
        "ρ_L": [f"{r.prediction.rho_L:.3%}" for r in comparison.runs],
    }
)
with st.container(key="cmp-overview"):
    st.dataframe(overview, hide_index=True, width="stretch")
cols = st.columns(len(comparison.runs))
for i, (col, r) in enumerate(zip(cols, comparison.runs, strict=True)):
    with col.container(key=f"cmp-runtime-{i}"):
        delta, arrow = None, "off"
        if i:
            first = comparison.runs[0]
            sign, words = display.change(r.runtime_ns, first.runtime_ns)
            delta = (
                f"{words} than {first.name}" if sign in ("↓", "↑") else f"{words} as {first.name}"
            )
            arrow = {"↓": "down", "↑": "up"}.get(sign, "off")
        st.metric(
            f"T of {r.name}",
            plots.short_ns(r.runtime_ns),
            delta=delta,
            delta_color="off",
            delta_arrow=arrow,
        )
        st.caption(f"exact: {display.exact_duration(r.runtime_ns)}")

# ---------------------------------------------------------------------- curves
st.subheader("T(L) and λ_L")
mode = st.radio(
    "Runtime axis",
    ["Slowdown T(L)/T(L0) − 1", "T(L)"],
    horizontal=True,
    key="cmp_mode",
    help="Runs of different sizes have runtimes far apart: the slowdown puts them on one scale "
    "(each run's x% L tolerance is where its curve crosses x%).",
)
drawn = [
    plots.RunCurve(r.name, frame, crit, r.runtime_ns)
    for (_, frame), r, crit in zip(
        comparison.curves.groupby("run", sort=False), comparison.runs, searches, strict=True
    )
]
log_x = st.toggle(
    "Log L axis",
    value=plots.squeezed(drawn),
    key="cmp_log_x",
    help="Runs whose tolerances lie decades apart (µs against ms), or whose critical latencies "
    "lie far below their tolerances, keep their shape on a logarithmic L axis (L = 0 is left "
    "out). On at first when a run's critical latencies all lie in the first tenth of its range.",
)
own_range = st.radio(
    "L axis",
    ["each run on its own range", "one axis for all runs"],
    horizontal=True,
    key="cmp_axis",
    help="Each run's curve covers 0 to 1.25 × its largest tolerance; runs whose tolerances lie "
    "decades apart keep their shape each on its own axis, or together on a log axis.",
).startswith("each")
slowdown = mode.startswith("Slowdown")
fig_T, fig_l = plots.comparison_figures(
    drawn,
    sel.params.L,
    comparison.levels,
    slowdown=slowdown,
    log_x=log_x,
    own_range=own_range,
)
st.plotly_chart(fig_T, width="stretch", key="cmp-fig-T")
st.plotly_chart(fig_l, width="stretch", key="cmp-fig-lambda")
st.caption(
    "Each curve is the run's exact T(L) from its critical-latency search (T linear and λ_L "
    "constant between two breakpoints): "
    + "; ".join(
        f"{c.name}: {len(s.critical):,} critical latencies in [{display.duration(s.lo)}, "
        f"{display.duration(s.hi)}]"
        for c, s in zip(comparison.runs, searches, strict=True)
    )
    + ". Marked: the breakpoints where λ_L jumps by at least 1% (all of them on the Latency "
    "page)."
)
incomplete = [(c.name, s) for c, s in zip(comparison.runs, searches, strict=True) if not s.complete]
for name, s in incomplete:
    st.warning(
        f"{name}: the search used its budget of {s.max_evaluations:,} evaluations and left "
        f"{len(s.unresolved):,} intervals unresolved (each holds at least one more critical "
        "latency; the curve is a straight line across them, an upper bound)."
    )

# ---------------------------------------------------------------------- tolerances
st.subheader("Tolerances")
tol = comparison.tolerances()
table = pd.DataFrame(
    {
        "run": tol["run"],
        "x": [f"{100 * x:g}%" for x in tol["x"]],
        "T bound": [plots.short_ns(v, 6) for v in tol["bound_ns"]],
        "L tolerance": [plots.short_ns(v, 6) for v in tol["latency_ns"]],
        "G tolerance": [display.gap(g, 6) for g in tol["G_ns_per_byte"]],
        "as bandwidth": [display.bandwidth(g) for g in tol["G_ns_per_byte"]],
    }
)
with st.container(key="cmp-tolerances"):
    st.dataframe(table, hide_index=True, width="stretch")

# ---------------------------------------------------------------------- composition
st.subheader("Critical-path composition")
comp = comparison.composition()
fig_c = go.Figure()
for part in PARTS:
    rows = comp[comp["part"] == part]
    fig_c.add_trace(
        go.Bar(
            y=rows["run"],
            x=rows["share"] * 100.0,
            name=part,
            orientation="h",
            marker_color=plots.SPLIT_COLORS.get(part),
            customdata=rows["time_ns"] / 1e3,
            hovertemplate=f"%{{y}}<br>{part}: %{{x:.3g}}% of T (%{{customdata:.6g}} µs)"
            "<extra></extra>",
        )
    )
fig_c.update_layout(
    barmode="stack",
    title="Share of T on the critical path",
    xaxis_title="% of T",
    yaxis={"autorange": "reversed", "type": "category"},
    legend={"orientation": "h", "yanchor": "top", "y": -0.25, "x": 0},
    margin={"t": 50, "r": 20, "b": 20, "l": 20},
    height=160 + 40 * len(comparison.runs),
    template="plotly_white",
)
st.plotly_chart(fig_c, width="stretch", key="cmp-fig-composition")
parts_table = pd.DataFrame(
    {
        "run": [r.name for r in comparison.runs],
        **{
            part: [
                f"{plots.short_ns(r.path_ns[part])} ({display.percent(r.path_share(part), 3)})"
                for r in comparison.runs
            ]
            for part in PARTS
        },
        "messages on the path": [display.count(r.path_messages) for r in comparison.runs],
    }
)
st.dataframe(parts_table, hide_index=True, width="stretch")

# ---------------------------------------------------------------------- every change
with st.expander("Every quantity against the baseline"):
    for run, changes in zip(comparison.runs[1:], comparison.changes, strict=True):
        st.markdown(f"**{run.name}** vs **{comparison.runs[0].name}**")
        st.dataframe(
            pd.DataFrame(
                {
                    "quantity": [c.quantity for c in changes],
                    comparison.runs[0].name: [c.shown(c.baseline) for c in changes],
                    run.name: [c.shown(c.value) for c in changes],
                    "change": [_change(c) for c in changes],
                }
            ),
            hide_index=True,
            width="stretch",
        )

# ---------------------------------------------------------------------- downloads
slug = controls.slug("-vs-".join(comparison.names))


def _html() -> str:
    from llamp.lp.html_report import render_comparison

    return render_comparison(comparison)


d1, d2 = st.columns(2)
with d1:
    st.download_button(
        "Download the comparison (HTML)",
        data=_html,
        file_name=f"{slug}.html",
        mime="text/html",
        key="cmp-download-html",
        icon=":material/download:",
        on_click="ignore",
    )
with d2:
    controls.csv_download(comparison.curves, f"{slug}-curves.csv", key="cmp-download-csv")
