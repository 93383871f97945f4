"""Validation: measured runtime under injected latency against the prediction (LLAMP §III-B,
Fig. 9): mean ± sd of the runs per ΔL with the predicted T(L0 + ΔL), the table, RRMSE and the
load the runs were measured under. Results come from ``llamp validate``, stored as analyses of
kind ``validation``."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from llamp.injector.validate import KIND, Validation
from llamp.ui import controls, display, plots, store_access

st.title("Validation: predicted vs measured")
st.caption(
    f"Store: {store_access.shown()} · results of `llamp validate --deltas 0,10,20,50,100us "
    "--network NAME -- mpirun …`"
)


def _stored() -> list[tuple[str, str, Validation]]:
    """(analysis id, created, result) of every stored validation, newest first."""
    with store_access.connect() as db:
        infos = [a for a in db.list_analyses() if a.kind == KIND]
    out = [(a.id, a.created, Validation.from_dict(a.scalars)) for a in infos]
    return sorted(out, key=lambda item: item[1], reverse=True)


def figure(result: Validation, *, show_runs: bool) -> go.Figure:
    """Measured mean ± sd per ΔL (error bars), each run (optional) and the prediction."""
    frame = result.table()
    peak = float(max(frame["measured_mean_ns"].max(), frame["predicted_ns"].max()))
    unit, scale = plots.time_unit(peak)
    x = (frame["delta_L_ns"] / 1e3).tolist()
    fig = go.Figure()
    if show_runs:
        xs = [p.delta_ns / 1e3 for p in result.points for _ in p.runs_ns]
        ys = [t / scale for p in result.points for t in p.runs_ns]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="markers",
                name="single runs",
                marker={"size": 6, "color": "rgba(31,119,180,0.35)"},
            )
        )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=(frame["measured_mean_ns"] / scale).tolist(),
            mode="markers+lines",
            name="measured (mean ± sd)",
            line={"color": "#1f77b4", "dash": "dot"},
            marker={"size": 9},
            error_y={
                "type": "data",
                "array": (frame["measured_sd_ns"] / scale).tolist(),
                "visible": True,
            },
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=(frame["predicted_ns"] / scale).tolist(),
            mode="markers+lines",
            name="predicted T(L0 + ΔL)",
            line={"color": "#d62728"},
            marker={"symbol": "diamond", "size": 9},
        )
    )
    fig.update_layout(
        xaxis_title="injected latency ΔL (µs)",
        yaxis_title=f"runtime ({unit})",
        legend={"orientation": "h", "y": -0.2},
        margin={"t": 30},
        title=f"{result.run}: RRMSE {result.rrmse * 100:.2f}%",
    )
    return fig


results = None
with controls.readable_errors("Reading validations from the graph store"):
    results = _stored()
if results is None:
    st.stop()
if not results:
    st.info(
        "No validation stored yet. Calibrate this machine and validate an application:\n\n"
        "```\nllamp calibrate --save node -- mpirun -n 2\n"
        "llamp validate --network node --deltas 0,10,20,50,100us --repeat 5 -- "
        "mpirun -n 2 lmp -in in.melt\n```"
    )
    st.stop()

labels = [f"{res.run} · {created} · RRMSE {res.rrmse * 100:.2f}%" for _, created, res in results]
choice = st.selectbox(
    "Validation", range(len(results)), format_func=labels.__getitem__, key="validation_choice"
)
analysis_id, created, result = results[choice]
frame = result.table()
zero = frame.loc[frame["delta_L_ns"] == 0]

cols = st.columns(4)
with cols[0].container(key="validation-rrmse"):
    st.metric(
        "RRMSE", f"{result.rrmse * 100:.2f}%", help="sqrt(mean((T_pred − T_meas)²)) / mean(T_meas)"
    )
with cols[1].container(key="validation-predicted-0"):
    st.metric("T(L0) predicted", display.duration(float(frame["predicted_ns"].iloc[0])))
with cols[2].container(key="validation-measured-0"):
    st.metric(
        "T measured at ΔL = 0"
        if not zero.empty
        else f"T measured at ΔL = {display.duration(frame['delta_L_ns'].iloc[0])}",
        display.duration(float((zero if not zero.empty else frame)["measured_mean_ns"].iloc[0])),
    )
with cols[3].container(key="validation-load"):
    load = result.load.get("other_load_cores_mean", math.nan)
    st.metric(
        "Other processes",
        f"{load:.2f} cores" if math.isfinite(load) else "n/a",
        help="CPU other processes used while the measured runs ran (mean over runs)",
    )

show_runs = st.toggle("Show every run", value=True, key="validation_show_runs")
st.plotly_chart(figure(result, show_runs=show_runs), key="plot_validation", width="stretch")

st.subheader("Measured vs predicted")
st.dataframe(
    frame,
    hide_index=True,
    key="table_validation",
    column_config={
        "delta_L_ns": st.column_config.NumberColumn("ΔL (ns)", format="%.0f"),
        "L_ns": st.column_config.NumberColumn("L = L0 + ΔL (ns)", format="%.1f"),
        "predicted_ns": st.column_config.NumberColumn("predicted T (ns)", format="%.0f"),
        "measured_mean_ns": st.column_config.NumberColumn("measured mean (ns)", format="%.0f"),
        "measured_sd_ns": st.column_config.NumberColumn("measured sd (ns)", format="%.0f"),
        "runs": st.column_config.NumberColumn("runs"),
        "error_pct": st.column_config.NumberColumn("error (%)", format="%+.2f"),
        "lambda_L": st.column_config.NumberColumn("λ_L", format="%g"),
    },
)
controls.csv_download(frame, f"{controls.slug(result.run)}-validation.csv", key="csv_validation")

with st.expander("How it was measured", expanded=False):
    st.markdown(
        f"- **Run** `{result.run}` ({result.mpi}), analysis `{analysis_id}`, {created}\n"
        f"- **Command** `{' '.join(result.command)}`\n"
        f"- **Base network** {controls.describe(result.params)}; engine {result.engine}\n"
        f"- **Repetitions** {result.repeat} per ΔL, shuffled order per repetition\n"
        f"- **Traced run** (ΔL = 0, tracer): {display.duration(result.traced_runtime_ns)}"
    )
    if result.load:
        st.dataframe(pd.DataFrame([result.load]), hide_index=True, key="table_load")
    for note in result.notes:
        st.warning(note)
