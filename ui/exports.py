"""Download buttons for the exports other tools read: the schedule with its critical path as a
Perfetto/Chrome trace (:mod:`llamp.lp.timeline`) and the report as one self-contained HTML file
(:mod:`llamp.lp.html_report`). The files are built only when a button is pressed (Streamlit's
deferred ``data``), so showing the buttons costs nothing.
"""

from __future__ import annotations

import streamlit as st

from llamp.graph import ExecutionGraph
from llamp.lp.html_report import QUICK_EVALUATIONS
from llamp.lp.timeline import MAX_SLICES
from llamp.params import LogGPS
from llamp.ui import controls

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
        from llamp.lp.html_report import build_report, render_report

        data = build_report(
            graph,
            params,
            lo=0.0,
            hi=max(100_000.0, 2.0 * params.L),
            max_evaluations=min(evaluation_budget(graph, params), QUICK_EVALUATIONS),
            engine="graph",
        )
        return render_report(data)

    return build


def export_buttons(graph: ExecutionGraph, params: LogGPS, name: str, *, key: str) -> None:
    """A Perfetto trace and an HTML report of ``graph`` at ``params`` as downloads."""
    slug = controls.slug(name)
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
            file_name=f"{slug}-timeline.json",
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
            file_name=f"{slug}-report.html",
            mime="text/html",
            key=f"{key}-report",
            icon=":material/download:",
            on_click="ignore",
            help="llamp report as one self-contained HTML file: prediction, sweep, critical "
            "latencies, tolerances and the critical path, with inline plots.",
        )


__all__ = ["export_buttons"]
