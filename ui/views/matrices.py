"""Sensitivity matrices (LLAMP App. I): λ_L^{ij} = ∂T/∂L_ij and λ_G^{ij} = ∂T/∂G_ij under
per-pair latencies and gaps from a two-level node model, a topology or uniform L, G."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from llamp.config import (
    DEFAULT_INTRA_NODE_NS,
    DEFAULT_SWITCH_NS,
    DEFAULT_WIRE_NS,
    parse_duration_ns,
    parse_gap_ns_per_byte,
)
from llamp.errors import InputError
from llamp.lp.topology import LinkLatencies
from llamp.ui import controls, display, labels, page_work, plots

st.title("Sensitivity matrices")
sel = controls.selection("matrices")
st.caption(f"Run **{sel.name}** · {controls.describe(sel.params)}")

SOURCES = {
    "Two-level node model": "two-level",
    "Topology": "topology",
    "Uniform L, G (sidebar)": "uniform",
}


def _level(L_text: str, G_text: str, what: str) -> page_work.Level:
    L, G = parse_duration_ns(L_text, default_unit=None), parse_gap_ns_per_byte(G_text)
    if not (math.isfinite(L) and L >= 0 and math.isfinite(G) and G >= 0):
        raise InputError(f"{what}: L and G must be finite and ≥ 0")
    return L, G


def _matrix_frame(matrix: np.ndarray) -> pd.DataFrame:
    """A P × P matrix as a table: column ``src`` then one column per destination rank."""
    frame = pd.DataFrame(matrix, columns=[str(j) for j in range(matrix.shape[1])])
    frame.insert(0, "src", np.arange(matrix.shape[0]))
    return frame


# ---------------------------------------------------------------------- inputs
label = st.radio(
    "Per-pair latency L_ij and gap G_ij from",
    list(SOURCES),
    horizontal=True,
    key="mx_source",
)
kind = SOURCES[label]
source = None
with controls.readable_errors("Matrix inputs"):
    if kind == "two-level":
        st.caption(
            "Ranks on one node (consecutive ranks fill a node) pay the intra-node L and G, "
            "others the inter-node ones (App. I)."
        )
        c0, c1, c2, c3, c4 = st.columns(5)
        rpn = c0.number_input("Ranks per node", 1, 65536, 2, key="mx_rpn")
        intra_L = c1.text_input("Intra-node L", "300ns", key="mx_intra_L")
        intra_G = c2.text_input("Intra-node G", "0.05ns/B", key="mx_intra_G")
        inter_L = c3.text_input("Inter-node L", "3us", key="mx_inter_L")
        inter_G = c4.text_input("Inter-node G", "0.018ns/B", key="mx_inter_G")
        source = (
            "two-level",
            int(rpn),
            _level(intra_L, intra_G, "intra-node"),
            _level(inter_L, inter_G, "inter-node"),
        )
    elif kind == "topology":
        st.caption(
            "L_ij = Σ wires·l_class + h·d_switch on the route between the nodes of ranks i "
            "and j (dense mapping), l_intra_node on one node; G_ij = the sidebar's G (App. H)."
        )
        c0, c1 = st.columns([3, 1])
        spec = c0.text_input(
            "Topology",
            "fattree:k=4,tiers=2",
            key="mx_topology",
            help="fattree:k=16[,tiers=2], dragonfly:g=8,a=4,p=8, torus:dims=4x4x4[,p=1], "
            "or the path of a graph file on the server.",
        )
        rpn = c1.number_input("Ranks per node", 1, 65536, 1, key="mx_topo_rpn")
        c2, c3, c4 = st.columns(3)
        wire = c2.text_input("l_wire", display.duration(DEFAULT_WIRE_NS), key="mx_wire")
        switch = c3.text_input("d_switch", display.duration(DEFAULT_SWITCH_NS), key="mx_switch")
        intra = c4.text_input(
            "l_intra_node", display.duration(DEFAULT_INTRA_NODE_NS), key="mx_intra"
        )
        if not spec.strip():
            raise InputError("enter a topology, e.g. fattree:k=16")
        source = (
            "topology",
            spec.strip(),
            int(rpn),
            page_work.latency_key(
                LinkLatencies(
                    wire_ns=parse_duration_ns(wire, default_unit=None),
                    switch_ns=parse_duration_ns(switch, default_unit=None),
                    intra_node_ns=parse_duration_ns(intra, default_unit=None),
                )
            ),
        )
    else:
        st.caption("Every pair pays the sidebar's L and G: the matrices show where λ_L lives.")
        source = ("uniform",)

o1, o2, o3 = st.columns(3)
symmetric = o1.toggle(
    "Symmetric: λ^ij + λ^ji",
    key="mx_symmetric",
    help="The paper's symmetric variables l_ij = l_ji; off: directed, sender i → receiver j.",
)
log_colour = o2.toggle("Logarithmic colour scale", key="mx_log")
annotate = o3.toggle("Write values in the cells", value=True, key="mx_annotate")


result = None
if source is not None:
    with controls.readable_errors("Sensitivity matrices"):
        inputs, settings = page_work.matrix_of(sel.params, source)
        result = controls.analysis(
            sel,
            "matrix",
            "Computing the sensitivity matrices",
            settings,
            inputs,
            slot="matrices",
            identity=source,
        )
if result is None:
    st.stop()

# ---------------------------------------------------------------------- headline numbers
st.caption(f"L_ij, G_ij: {result.costs.source}")
cols = st.columns(4)
with cols[0].container(key="mx-runtime"):
    st.metric("T predicted", display.duration(result.runtime_ns))
    st.caption(f"exact: {display.exact_duration(result.runtime_ns)}")
cols[1].metric("λ_L = Σ λ_L^ij", f"{result.lambda_L.sum():g}")
cols[2].metric("λ_G = Σ λ_G^ij (bytes)", f"{result.lambda_G.sum():g}")
cols[3].metric(
    "Rank pairs on the critical path",
    f"{int(((result.lambda_L > 0) | (result.lambda_G > 0)).sum()):,}",
    help="Ordered pairs (i, j) with a message i → j on the critical path.",
)

# ---------------------------------------------------------------------- heatmaps
lam_L, lam_G = result.lambda_L, result.lambda_G
if symmetric:
    lam_L, lam_G = lam_L + lam_L.T, lam_G + lam_G.T
P = lam_L.shape[0]
cells = annotate and P <= 16
if annotate and not cells:
    st.caption(f"{P} ranks: values are written in the cells up to 16 ranks; hover for values.")
pair = "i ↔ j" if symmetric else "i → j"
# values in the cells: one heat map per row, so the cells are as large as the page allows
left, right = (st.container(), st.container()) if cells else st.columns(2)
width = labels.FIGURE_WIDTH_PX if cells else labels.FIGURE_WIDTH_PX / 2
height = max(420, min(800, 200 + 14 * P))
unwritten = [
    name
    for name, M, fmt in (("λ_L", lam_L, "g"), ("λ_G", lam_G, ".4g"))
    if cells and plots.cell_texts(M, fmt, plots.heatmap_cell_px(P, height, width)) is None
]
if unwritten:
    st.caption(
        f"The cells of {' and '.join(unwritten)} are too small for their values at {P} ranks: "
        "hover a cell to read it."
    )
with left:
    clicked = st.plotly_chart(
        plots.pair_heatmap(
            lam_L,
            f"λ<sub>L</sub><sup>ij</sup> = ∂T/∂L<sub>ij</sub> ({pair})",
            "latency terms on the critical path (ns/ns)",
            log=log_colour,
            annotate=cells,
            colorscale="Reds",
            value_format="g",
            clickable=True,
            width_px=width,
        ),
        key="plot_lambda_L",
        width="stretch",
        on_select="rerun",
        selection_mode="points",
    )
with right:
    st.plotly_chart(
        plots.pair_heatmap(
            lam_G,
            f"λ<sub>G</sub><sup>ij</sup> = ∂T/∂G<sub>ij</sub> ({pair})",
            "bytes on the critical path (ns per ns/B)",
            log=log_colour,
            annotate=cells,
            colorscale="Blues",
            value_format=".4g",
            width_px=width,
        ),
        key="plot_lambda_G",
        width="stretch",
    )
d1, d2 = st.columns(2)
with d1:
    controls.csv_download(
        _matrix_frame(lam_L),
        f"{controls.slug(sel.name)}-lambda-L.csv",
        key="csv_lambda_L",
        label="Download λ_L matrix (CSV)",
    )
with d2:
    controls.csv_download(
        _matrix_frame(lam_G),
        f"{controls.slug(sel.name)}-lambda-G.csv",
        key="csv_lambda_G",
        label="Download λ_G matrix (CSV)",
    )

with st.expander("The per-pair costs L_ij and G_ij"):
    c1, c2 = st.columns(2)
    c1.plotly_chart(
        plots.pair_heatmap(
            result.costs.latency_ns,
            "L<sub>ij</sub>",
            "latency (ns)",
            annotate=P <= 16,
            colorscale="Greys",
            value_format="g",
            width_px=labels.FIGURE_WIDTH_PX / 2,
        ),
        key="plot_costs_L",
        width="stretch",
    )
    c2.plotly_chart(
        plots.pair_heatmap(
            result.costs.gap_ns_per_byte,
            "G<sub>ij</sub>",
            "gap (ns/B)",
            annotate=P <= 16,
            colorscale="Greys",
            value_format="g",
            width_px=labels.FIGURE_WIDTH_PX / 2,
        ),
        key="plot_costs_G",
        width="stretch",
    )


# ---------------------------------------------------------------------- links to the path
def _cell(selection) -> tuple[int, int] | None:
    points = (selection or {}).get("selection", {}).get("points", []) if selection else []
    if not points:
        return None
    return int(points[0]["y"]), int(points[0]["x"])


on_path = np.argwhere((lam_L > 0) | (lam_G > 0))
cell = _cell(clicked)
if cell is None and len(on_path):
    order = np.argsort(-lam_L[on_path[:, 0], on_path[:, 1]], kind="stable")
    choices = [tuple(int(v) for v in on_path[k]) for k in order[:200]]
    cell = st.selectbox(
        "Open a rank pair's critical messages on the timeline (or click a cell of λ_L^ij)",
        choices,
        format_func=lambda c: f"{c[0]} {'↔' if symmetric else '→'} {c[1]}: λ_L^ij = {lam_L[c]:g}",
        key="mx_open_pair",
    )
if cell is not None:
    st.page_link(
        "views/critical_path.py",
        label=f"Critical messages between ranks {cell[0]} and {cell[1]} on the timeline",
        icon=":material/route:",
        query_params=controls.link_params("critical_path", pair=f"{cell[0]},{cell[1]}"),
    )

# ---------------------------------------------------------------------- top pairs
st.subheader("Rank pairs by latency share")
top = st.number_input("Pairs to list", 1, 1_000_000, 10, key="mx_top")
pairs = result.frame()
st.caption(
    f"{len(pairs):,} ordered pairs exchange messages or lie on the critical path; sorted by "
    "L_ij·λ_L^ij / T, the share of T spent in that pair's latency."
)
controls.table(pairs.head(int(top)), key="table_pairs")
controls.csv_download(pairs, f"{controls.slug(sel.name)}-pairs.csv", key="csv_pairs")
