"""Download buttons for the exports other tools read: the schedule with its critical path as a
Perfetto/Chrome trace (:mod:`llamp.lp.timeline`) and the report as one self-contained HTML file
(:mod:`llamp.lp.html_report`). The files are built only when a button is pressed (Streamlit's
deferred ``data``), so showing the buttons costs nothing. The Latency page's report reuses the
prediction, tolerances and exact critical latencies the page already has: only the critical
path is computed on the click.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from llamp.graph import ExecutionGraph
from llamp.lp import CriticalLatencies, Prediction, Tolerance
from llamp.lp.html_report import QUICK_EVALUATIONS
from llamp.lp.timeline import MAX_SLICES
from llamp.params import LogGPS
from llamp.ui import display, store_access

#: Above this many vertices the trace is offered for the critical path only by default: a
#: browser download of a whole 10^6-vertex schedule is ~200 MB of JSON.
WHOLE_TRACE_VERTICES = 200_000


def _timeline(graph: ExecutionGraph, params: LogGPS, critical_only: bool):
    def build() -> str:
        from llamp.lp.timeline import timeline_json

        return timeline_json(graph, params, critical_only=critical_only)

    return build


def _report(graph: ExecutionGraph, params: LogGPS):
    def build() -> str:
        from llamp.lp.critical import evaluation_budget
        from llamp.lp.html_report import render_report
        from llamp.lp.registry import ANALYSES, Inputs, ReportSettings

        settings = ReportSettings(
            hi=f"{max(100_000.0, 2.0 * params.L)!r}ns",
            max_evaluations=min(evaluation_budget(graph, params), QUICK_EVALUATIONS),
        )
        data = ANALYSES["report"].run(graph, Inputs(params, engine="graph"), settings)
        return render_report(data)

    return build


def export_buttons(
    graph: ExecutionGraph, params: LogGPS, name: str, *, key: str, page: str = "critical-path"
) -> None:
    """A Perfetto trace and an HTML report of ``graph`` at ``params`` as downloads, named
    ``<run>-<page>-<parameters>`` (:func:`llamp.ui.display.download_name`)."""
    whole_allowed = graph.num_vertices <= MAX_SLICES
    c1, c2, c3 = st.columns([2, 2, 3])
    with c3:
        critical_only = st.checkbox(
            "Trace of the critical path only",
            value=graph.num_vertices > WHOLE_TRACE_VERTICES or not whole_allowed,
            disabled=not whole_allowed,
            key=f"{key}-critical-only",
            help="The whole schedule has one slice per vertex "
            f"({graph.num_vertices:,} here); viewers slow down past a few million.",
        )
    with c1:
        st.download_button(
            "Perfetto trace (JSON)",
            data=_timeline(graph, params, critical_only),
            file_name=display.download_name(name, page, params, "json", "timeline"),
            mime="application/json",
            key=f"{key}-perfetto",
            icon=":material/download:",
            on_click="ignore",
            help="One track per rank, calc/send/recv slices, the critical path in category "
            "'critical' with its messages as arrows: open it in ui.perfetto.dev or "
            "chrome://tracing.",
        )
    with c2:
        st.download_button(
            "Report (HTML)",
            data=_report(graph, params),
            file_name=display.download_name(name, page, params, "html"),
            mime="text/html",
            key=f"{key}-report",
            icon=":material/download:",
            on_click="ignore",
            help="llamp report as one self-contained HTML file: prediction, sweep, critical "
            "latencies, tolerances and the critical path, with inline plots.",
        )


#: Rows of the report's T(L) table taken from the exact curve.
REPORT_POINTS = 11


def sampled(curve: pd.DataFrame, lo: float, hi: float, points: int = REPORT_POINTS) -> pd.DataFrame:
    """``T``, λ_L and ρ_L at ``points`` latencies over [lo, hi] read off the exact curve of
    :func:`llamp.lp.critical.exact_curve` (``T`` linear and λ_L constant between two of its
    rows), without evaluating the graph."""
    L = np.linspace(lo, hi, points)
    xs = curve["L_ns"].to_numpy(float)
    T = np.interp(L, xs, curve["runtime_ns"].to_numpy(float))
    at = np.clip(np.searchsorted(xs, L, side="right") - 1, 0, len(xs) - 1)
    lam = curve["lambda_L"].to_numpy(float)[at]
    rho = np.divide(L * lam, T, out=np.zeros(points), where=T > 0)
    return pd.DataFrame({"L_ns": L, "runtime_ns": T, "lambda_L": lam, "rho_L": rho})


def _latency_report(
    name: str,
    token: str,
    params: LogGPS,
    prediction: Prediction,
    tol: Tolerance,
    crit: CriticalLatencies,
    curve: pd.DataFrame,
):
    def build() -> str:
        from llamp.lp import critical_path
        from llamp.lp.html_report import render_report
        from llamp.lp.report import ReportData, report_curve

        graph = store_access.load_graph(name, token)
        table = sampled(curve, crit.lo, crit.hi)
        data = ReportData(
            summary=graph.summary(),
            params=params,
            prediction=prediction,
            sweep=table,
            curve=report_curve(crit, table),
            critical=crit,
            tolerance=tol,
            path=critical_path(graph, params),
        )
        return render_report(data)

    return build


def latency_report_button(
    name: str,
    token: str,
    params: LogGPS,
    prediction: Prediction,
    tol: Tolerance,
    crit: CriticalLatencies,
    curve: pd.DataFrame,
    *,
    key: str,
) -> None:
    """The HTML report of run ``name`` from the Latency page's results (the critical path is
    computed when the button is pressed)."""
    st.download_button(
        "Report (HTML)",
        data=_latency_report(name, token, params, prediction, tol, crit, curve),
        file_name=display.download_name(name, "latency", params, "html"),
        mime="text/html",
        key=key,
        icon=":material/download:",
        on_click="ignore",
        help="llamp report as one self-contained HTML file: prediction, T(L) and λ_L from the "
        "exact critical latencies on this page, the tolerances and the critical path, with "
        "inline plots.",
    )


__all__ = ["export_buttons", "latency_report_button", "sampled"]
