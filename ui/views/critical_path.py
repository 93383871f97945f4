"""Critical path: per-rank schedule with the path highlighted, where the path's time goes per
rank, each rank's compute/overhead/blocked split, and the critical messages."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from llamp.config import COLL_TAG_BASE, COMM_TAG_STRIDE, parse_duration_ns
from llamp.errors import InputError
from llamp.lp import evaluate, rank_time_split
from llamp.lp.registry import ANALYSES, Inputs
from llamp.ui import controls, display, exports, plots

st.title("Critical path")
sel = controls.selection("critical_path")
st.caption(f"Run **{sel.name}** · {controls.describe(sel.params)}")

#: Ops drawn by default in the automatic window.
AUTO_OPS = 3000


def _work(graph, task):
    task.report(0.1, "evaluating the schedule")
    ev = evaluate(graph, sel.params)
    task.report(0.4, "tracing the critical path")
    cp = ANALYSES["path"].compute(graph, Inputs(sel.params))
    task.report(0.9, "splitting each rank's time")
    return graph, ev, cp, rank_time_split(graph, ev), np.sort(ev.start_ns)


found = None
with controls.readable_errors("Critical-path analysis"):
    found = controls.background(
        sel, "critical-path", "Evaluating the schedule and the critical path", _work
    )
if found is None:
    st.stop()
graph, ev, cp, split, starts = found


def _linked() -> list[int]:
    """The ops a link points at: ``?focus=<op>`` or ``?pair=<rank>,<rank>`` (the first
    critical message between the two ranks, either way)."""
    focus = st.query_params.get("focus")
    pair = st.query_params.get("pair")
    for name, value in (("focus", focus), ("pair", pair)):
        if value is not None:
            st.query_params[name] = value  # kept in the address bar: the view is a bookmark
    if focus is not None:
        try:
            vid = int(focus)
        except ValueError:
            st.warning(f"The link's focus={focus!r} is not an op number.")
            return []
        if not 0 <= vid < graph.num_vertices:
            st.warning(f"Run {sel.name!r} has no op {vid} (it has {graph.num_vertices:,}).")
            return []
        return [vid]
    if pair is not None and len(cp.messages):
        try:
            a, b = (int(x) for x in pair.split(","))
        except ValueError:
            st.warning(f"The link's pair={pair!r} is not two ranks (e.g. 3,4).")
            return []
        s, r = cp.messages[:, 0], cp.messages[:, 1]
        src, dst = graph.rank[s], graph.rank[r]
        hit = np.flatnonzero(((src == a) & (dst == b)) | ((src == b) & (dst == a)))
        if not hit.size:
            st.info(f"No critical message between ranks {a} and {b} at these parameters.")
            return []
        return [int(s[hit[0]]), int(r[hit[0]])]
    return []


linked = _linked()


def _mpi_tags(tags: np.ndarray) -> list[str]:
    """The MPI tags of graph tags as a user wrote them: a point-to-point message's tag without
    its communicator (``tag + c · 2^32``), ``collective`` for a collective's messages."""
    tags = np.asarray(tags, dtype=np.int64)
    user = tags % COMM_TAG_STRIDE
    return ["collective" if t >= COLL_TAG_BASE else str(u) for t, u in zip(tags, user, strict=True)]


# ---------------------------------------------------------------------- headline numbers
totals = cp.totals
cols = st.columns(6)
with cols[0].container(key="path-runtime"):
    st.metric("T predicted", display.duration(ev.runtime_ns))
    st.caption(f"exact: {display.exact_duration(ev.runtime_ns)}")
cols[1].metric("Ops on the path", f"{len(cp.vertices):,}")
cols[2].metric(
    "Messages on the path", f"{len(cp.messages):,}", help="λ_L counts a rendezvous message 3 times"
)
for col, part in zip(cols[3:], ("latency", "bandwidth", "overhead"), strict=True):
    value = totals[f"{part}_ns"]
    col.metric(
        f"{part.capitalize()} on the path",
        plots.short_ns(value),
        delta=f"{100 * value / cp.runtime_ns:.3g}% of T" if cp.runtime_ns else None,
        delta_color="off",
    )

# ---------------------------------------------------------------------- timeline
st.subheader("Per-rank timeline")
T = float(ev.runtime_ns)
auto_hi = T if starts.size <= AUTO_OPS else float(starts[AUTO_OPS])
link_seen = st.session_state.setdefault("_cp_link_seen", None)
link_id = (sel.run, sel.key, tuple(linked))
if linked and link_seen != link_id:
    # A link opens the window of AUTO_OPS ops around its op (once: the inputs stay editable).
    st.session_state["_cp_link_seen"] = link_id
    at = int(np.searchsorted(starts, ev.start_ns[linked[0]]))
    first = starts[max(at - AUTO_OPS // 2, 0)]
    last = starts[min(at + AUTO_OPS // 2, starts.size - 1)]
    st.session_state["cp_from"] = display.duration(float(first))
    st.session_state["cp_to"] = display.duration(max(float(last), float(first) + 1.0))
if linked:
    st.info(
        f"Linked op {linked[0]:,}: rank {int(graph.rank[linked[0]])}, starts at "
        f"{display.duration(float(ev.start_ns[linked[0]]))} (marked ★ on the timeline)."
    )
c1, c2, c3 = st.columns(3)
lo_text = c1.text_input("Window from", "", key="cp_from", placeholder="0 (e.g. 10ms)")
hi_text = c2.text_input(
    "Window to", "", key="cp_to", placeholder=f"auto: {display.duration(auto_hi)}"
)
max_bars = c3.number_input("Most ops drawn", 100, 50_000, 5000, step=500, key="cp_max_bars")
show_messages = st.toggle("Draw critical messages", value=True, key="cp_messages")
with controls.readable_errors("Timeline"):
    lo = parse_duration_ns(lo_text, default_unit=None) if lo_text.strip() else 0.0
    hi = (
        parse_duration_ns(hi_text, default_unit=None) if hi_text.strip() else max(auto_hi, lo + 1.0)
    )
    if hi <= lo:
        raise InputError(
            f"the window end ({display.duration(hi)}) must be after its start ({display.duration(lo)})"
        )
    if not hi_text.strip() and starts.size > AUTO_OPS:
        st.caption(
            f"Automatic window: the first {AUTO_OPS:,} of {starts.size:,} ops "
            f"(T = {display.duration(T)}); set the window to look elsewhere."
        )
    fig, in_window, drawn = plots.timeline_figure(
        graph,
        ev,
        lo,
        hi,
        path_messages=cp.messages if show_messages else None,
        max_bars=int(max_bars),
        focus=linked,
    )
    if drawn < in_window:
        st.warning(
            f"The window holds {in_window:,} ops; drawing the {drawn:,} that start first. "
            "Narrow the window or raise 'Most ops drawn' to see all."
        )
    st.plotly_chart(fig, key="plot_timeline", width="stretch")

# ---------------------------------------------------------------------- splits
st.subheader("Where the time goes, per rank")
with_compute = st.toggle(
    "Include compute in the charts",
    value=True,
    key="cp_with_compute",
    help="Hide compute to compare the communication parts when compute dominates.",
)
compute = ("compute",) if with_compute else ()
st.caption(
    "Left: the critical path's compute, overhead, latency and bandwidth time, each charged to the "
    "rank it happens on (a message to its receiver). Right: each rank's compute, its o per send "
    "and receive, and the time it is blocked waiting for messages or peers."
)
left, right = st.columns(2)
with left:
    st.plotly_chart(
        plots.split_figure(
            cp.split,
            (*compute, "overhead", "latency", "bandwidth"),
            "Critical-path time",
        ),
        key="plot_path_split",
        width="stretch",
    )
    controls.table(cp.split, key="table_path_split")
    controls.csv_download(
        cp.split, f"{controls.slug(sel.name)}-path-split.csv", key="csv_path_split"
    )
with right:
    st.plotly_chart(
        plots.split_figure(split, (*compute, "overhead", "blocked"), "Each rank's own time"),
        key="plot_rank_split",
        width="stretch",
    )
    controls.table(split, key="table_rank_split")
    controls.csv_download(split, f"{controls.slug(sel.name)}-rank-split.csv", key="csv_rank_split")

# ---------------------------------------------------------------------- messages
st.subheader("Critical messages")
top = st.number_input("Messages to list", 1, 100_000, 20, key="cp_top")
if len(cp.messages):
    s, r = cp.messages[:, 0], cp.messages[:, 1]
    size = graph.size[s]
    p = sel.params
    rendezvous = size > p.S
    latency_terms = np.where(rendezvous, 3, 1)
    messages = pd.DataFrame(
        {
            "send_vid": s,
            "recv_vid": r,
            "src": graph.rank[s],
            "dst": graph.rank[r],
            "bytes": size,
            "tag": _mpi_tags(graph.tag[s]),
            "protocol": np.where(rendezvous, "rendezvous", "eager"),
            "wire_ns": latency_terms * p.L + np.maximum(size - 1, 0) * p.G,
            "send_start_ns": ev.start_ns[s],
            "recv_finish_ns": ev.finish_ns[r],
        }
    )
    messages = messages.sort_values(["wire_ns", "send_start_ns"], ascending=[False, True])
    st.caption(
        f"{len(messages):,} messages on the critical path, by network time "
        "(wire = L, or 3·L for rendezvous, + (bytes − 1)·G)."
    )
    shown = messages.head(int(top))
    controls.table(
        shown,
        key="table_messages",
        labels={
            "send_vid": "send op",
            "recv_vid": "receive op",
            "src": "from rank",
            "dst": "to rank",
            "tag": "MPI tag",  # the user's tag, not the graph's (communicator folded in)
            "wire_ns": "wire time",
            "send_start_ns": "send starts",
            "recv_finish_ns": "receive ends",
        },
    )
    pick = st.selectbox(
        "Open a critical message on the timeline",
        range(len(shown)),
        format_func=lambda i: (
            f"#{i + 1}: rank {shown['src'].iloc[i]} → {shown['dst'].iloc[i]}, "
            f"{shown['bytes'].iloc[i]:,} B, sent at {display.duration(shown['send_start_ns'].iloc[i])}"
        ),
        key="cp_open_message",
    )
    st.page_link(
        "views/critical_path.py",
        label="Show this message on the timeline",
        icon=":material/my_location:",
        query_params=controls.link_params("critical_path", focus=int(shown["send_vid"].iloc[pick])),
    )
    controls.csv_download(
        messages, f"{controls.slug(sel.name)}-critical-messages.csv", key="csv_messages"
    )
else:
    st.info("No message lies on the critical path: the runtime does not depend on L or G here.")

st.subheader("Export")
exports.export_buttons(graph, sel.params, sel.name, key="cp-export")
