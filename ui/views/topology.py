"""Topology what-if (LLAMP §IV-2 Fig. 11, App. H): T, λ and x% tolerance per link class on
fat trees, dragonflies, tori or any topology graph, and T over the per-wire latency l_wire."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from llamp.config import (
    DEFAULT_INTRA_NODE_NS,
    DEFAULT_SWITCH_NS,
    DEFAULT_TOLERANCES,
    DEFAULT_WIRE_NS,
    parse_class_latencies,
    parse_duration_ns,
)
from llamp.errors import InputError
from llamp.lp.topology import INTRA_NODE, SWITCH, WIRE, LinkLatencies, variable_names
from llamp.ui import controls, display, page_work, plots

st.title("Topology what-if")
sel = controls.selection("topology")
st.caption(
    f"Run **{sel.name}** · o, G and S from the sidebar ({controls.describe(sel.params)}); "
    "a message between two nodes costs Σ wires·l_class + h·d_switch (h switches on its "
    "route), one between ranks on the same node l_intra_node: the sidebar's L is not used."
)


def _pct(x: float) -> str:
    return f"{x * 100:g}pct".replace(".", "_")


# ---------------------------------------------------------------------- inputs
st.subheader("Topologies")
c1, c2, c3 = st.columns(3)
with c1.container(border=True):
    use_fattree = st.checkbox("Fat tree", value=True, key="topo_fattree")
    ft_k = st.number_input(
        "k (switch radix, even)", 2, 512, 16, step=2, key="topo_ft_k", disabled=not use_fattree
    )
    ft_tiers = st.radio(
        "Tiers", [2, 3], index=1, horizontal=True, key="topo_ft_tiers", disabled=not use_fattree
    )
with c2.container(border=True):
    use_dragonfly = st.checkbox("Dragonfly", value=True, key="topo_dragonfly")
    d1, d2, d3 = st.columns(3)
    df_g = d1.number_input("g groups", 1, 4096, 8, key="topo_df_g", disabled=not use_dragonfly)
    df_a = d2.number_input("a routers", 1, 1024, 4, key="topo_df_a", disabled=not use_dragonfly)
    df_p = d3.number_input("p nodes", 1, 1024, 8, key="topo_df_p", disabled=not use_dragonfly)
with c3.container(border=True):
    use_torus = st.checkbox("Torus", value=False, key="topo_torus")
    t1, t2 = st.columns(2)
    torus_dims = t1.text_input("Dimensions", "4x4x4", key="topo_torus_dims", disabled=not use_torus)
    torus_p = t2.number_input(
        "p nodes/router", 1, 1024, 1, key="topo_torus_p", disabled=not use_torus
    )
with st.expander("More topologies: specs and graph files"):
    extra_specs = st.text_area(
        "Topology specs, one per line",
        key="topo_specs",
        placeholder="fattree:k=8,tiers=2\ntorus:dims=8x8,p=2\n/path/on/the/server/topology.graphml",
    )
    graph_files = (
        st.file_uploader(
            "Topology graph files",
            accept_multiple_files=True,
            key="topo_files",
            help="GraphML or GML (compute nodes with kind=compute, an optional 'class' per "
            "edge), or an edge list: one 'u v' or 'u v CLASS' per line, compute nodes = leaves.",
        )
        or []
    )

st.subheader("Rank mapping and latencies")
m1, m2, m3 = st.columns([1, 2, 2])
ranks_per_node = m1.number_input(
    "Ranks per node",
    1,
    65536,
    1,
    key="topo_rpn",
    help="Dense mapping: consecutive ranks fill a node, and consecutive nodes share the "
    "lowest switch (paper §IV-2).",
)
mapping_file = m2.file_uploader(
    "Mapping file (optional)",
    key="topo_mapping",
    help="One node index or node name per line, rank 0 first; replaces the dense mapping.",
)
levels_text = m3.text_input(
    "Tolerance levels (% slowdown)",
    ", ".join(f"{x * 100:g}" for x in DEFAULT_TOLERANCES),
    key="topo_levels",
)
l1, l2, l3, l4 = st.columns(4)
wire_text = l1.text_input(
    "l_wire — every wire",
    display.duration(DEFAULT_WIRE_NS),
    key="topo_wire",
    help="Latency of every wire (the paper's 274 ns, Zambre et al.).",
)
switch_text = l2.text_input(
    "d_switch — per switch", display.duration(DEFAULT_SWITCH_NS), key="topo_switch"
)
intra_text = l3.text_input(
    "l_intra_node — same node", display.duration(DEFAULT_INTRA_NODE_NS), key="topo_intra"
)
classes_text = l4.text_input(
    "Per-class wire latencies",
    key="topo_classes",
    placeholder="core=500ns, inter=1us",
    help="Latency of the wires of one link class (fat tree: edge, aggregation, core; "
    "dragonfly: terminal, intra, inter; torus: link); the others keep l_wire.",
)

sources: list[page_work.TopologySource] = []
topologies = []
latencies = levels = None
with controls.readable_errors("Topology inputs"):
    if use_fattree:
        sources.append(f"fattree:k={int(ft_k)},tiers={int(ft_tiers)}")
    if use_dragonfly:
        sources.append(f"dragonfly:g={int(df_g)},a={int(df_a)},p={int(df_p)}")
    if use_torus:
        sources.append(f"torus:dims={torus_dims.strip()},p={int(torus_p)}")
    sources += [line.strip() for line in extra_specs.splitlines() if line.strip()]
    sources += [(f.name, f.getvalue()) for f in graph_files]
    sources = list(dict.fromkeys(sources))
    if not sources:
        raise InputError("choose at least one topology")
    with st.spinner("Reading the topologies…"):
        topologies = [page_work.topology_of(s) for s in sources]
    latencies = page_work.latency_key(
        LinkLatencies(
            wire_ns=parse_duration_ns(wire_text, default_unit=None),
            switch_ns=parse_duration_ns(switch_text, default_unit=None),
            intra_node_ns=parse_duration_ns(intra_text, default_unit=None),
            per_class_ns=parse_class_latencies(
                classes_text.split(","), what="link class latencies"
            ),
        )
    )
    page_work.check_link_classes(topologies, latencies)
    levels = controls.levels(levels_text)
if latencies is None or levels is None or not topologies:
    st.stop()
mapping = (mapping_file.name, mapping_file.getvalue()) if mapping_file is not None else None


# ---------------------------------------------------------------------- analyses
def _analyse(graph, item):
    """One topology's T, λ and tolerances per link class (stored per topology)."""
    source, rpn, mapping_, latencies_, levels_ = item
    return page_work.topology_analysis(graph, sel.key, source, rpn, mapping_, latencies_, levels_)


by_source = dict(zip(sources, topologies, strict=True))
analysed = None
with controls.readable_errors("Topology analysis"):
    analysed = controls.background_each(
        sel,
        "topology",
        f"Analysing {len(sources)} topologies",
        _analyse,
        [(s, int(ranks_per_node), mapping, latencies, levels) for s in sources],
        stored_as="ui_topology",
        describe=lambda item: by_source[item[0]].spec,
    )
if analysed is None:
    st.stop()
results = []  # (source, topology, analysis) of each topology analysed without error
for source, topo, res in zip(sources, topologies, analysed, strict=True):
    if isinstance(res, BaseException):
        with controls.readable_errors(f"Topology {topo.spec}"):
            raise res
    else:
        results.append((source, topo, res))
if not results:
    st.stop()

# ---------------------------------------------------------------------- headline numbers
st.subheader("Predicted runtime at the base latencies")
cols = st.columns(min(len(results), 4))
for i, (_, _, res) in enumerate(results):
    with cols[i % len(cols)].container(key=f"topo-runtime-{i}", border=True):
        st.metric(res.topology, display.duration(res.runtime_ns))
        st.caption(f"exact: {display.exact_duration(res.runtime_ns)}")
summary = pd.DataFrame(
    [
        {
            "topology": res.topology,
            "mapping": res.mapping,
            "runtime_ns": res.runtime_ns,
            "runtime": display.duration(res.runtime_ns),
            "nodes_used": res.nodes_used,
            "num_nodes": res.num_nodes,
            "mean_switches": res.mean_switches,
            "intra_node_fraction": res.intra_node_fraction,
        }
        for _, _, res in results
    ]
)
controls.table(
    summary.drop(columns=["runtime"]),
    key="table_topo_summary",
    column_config={
        "nodes used": st.column_config.NumberColumn("nodes used"),
        "num nodes": st.column_config.NumberColumn("nodes in topology"),
        "mean switches": st.column_config.NumberColumn(
            "mean switches per inter-node message", format="%.3g"
        ),
        "intra node fraction": st.column_config.NumberColumn(
            "same-node messages (fraction)", format="%.3g"
        ),
    },
)
controls.csv_download(summary, f"{controls.slug(sel.name)}-topologies.csv", key="csv_topo_summary")

# ---------------------------------------------------------------------- per link class
st.subheader("Sensitivity and tolerance per link class")
st.caption(
    "λ: wires of the class (all wires for l_wire, switches for d_switch, same-node messages "
    "for l_intra_node) on the critical path, i.e. ∂T/∂l in ns per ns. x% tolerance: the "
    "largest latency of that variable, all others fixed, with T ≤ (1 + x)·T(base); ∞ when no "
    "critical path pays it. l_wire moves every class at once."
)
rows = []
for _, _, res in results:
    tol = res.tolerances
    for var in res.variables.to_dict(orient="records"):
        row = {
            "topology": res.topology,
            "variable": var["variable"],
            "kind": var["kind"],
            "value_ns": var["value_ns"],
            "lambda": var["lambda"],
            "lambda_share": var["lambda_share"],
        }
        mine = tol[tol["variable"] == var["variable"]]
        for level in mine.itertuples(index=False):
            row[f"tolerance_{_pct(level.x)}_ns"] = level.tolerance_ns
            row[f"headroom_{_pct(level.x)}_ns"] = level.headroom_ns
        rows.append(row)
per_class = pd.DataFrame(rows)
controls.table(
    per_class,
    key="table_topo_classes",
    kinds={"lambda_share": "share"},
)
controls.csv_download(
    per_class, f"{controls.slug(sel.name)}-topology-tolerance.csv", key="csv_topo_classes"
)
share = st.toggle("Show λ as a share of T (value·λ/T)", key="topo_share")
variables = pd.concat(
    [res.variables.assign(topology=res.topology) for _, _, res in results], ignore_index=True
)
st.plotly_chart(
    plots.topology_lambda_figure(variables, share=share), key="plot_topo_lambda", width="stretch"
)

# ---------------------------------------------------------------------- sweep (Fig. 11)
st.subheader("Runtime over a latency variable")
choices = list(dict.fromkeys([WIRE, *(v for _, t, _ in results for v in variable_names(t))]))
s1, s2, s3, s4 = st.columns(4)
variable = s1.selectbox("Variable", choices, key="topo_sweep_variable")
wire, switch, intra, per_class_ns = latencies
base = {WIRE: wire, SWITCH: switch, INTRA_NODE: intra}.get(
    variable, dict(per_class_ns).get(variable, wire)
)
from_text = s2.text_input(
    "From", "", key="topo_sweep_from", placeholder=f"base: {display.duration(base)}"
)
to_text = s3.text_input(
    "To",
    "",
    key="topo_sweep_to",
    placeholder=f"base + 150 ns: {display.duration(base + 150.0)}",
    help="The paper's Fig. 11 window: 274 ns to 424 ns, i.e. 150 ns more per wire (FEC).",
)
points = s4.number_input("Sweep points", 2, 2000, 61, key="topo_sweep_points")
slowdown = st.toggle("Show the slowdown T / T(base) − 1 instead of T", key="topo_slowdown")

sweeps, marks, skipped = [], [], []
with controls.readable_errors("Sweep"):
    lo = parse_duration_ns(from_text, default_unit=None) if from_text.strip() else base
    hi = parse_duration_ns(to_text, default_unit=None) if to_text.strip() else base + 150.0
    if not 0 <= lo < hi:
        raise InputError(
            f"the sweep needs 0 ≤ From < To (got {display.duration(lo)} to {display.duration(hi)})"
        )
    grid = np.union1d(np.linspace(lo, hi, int(points)), [base])
    values = tuple(float(v) for v in grid[(grid >= lo) & (grid <= hi)])
    swept = [
        (source, topo, res) for source, topo, res in results if variable in variable_names(topo)
    ]
    skipped = [res.topology for _, topo, res in results if variable not in variable_names(topo)]

    def _sweep(graph, item):
        source, rpn, mapping_, latencies_, variable_, values_ = item
        return page_work.topology_sweep(
            graph, sel.key, source, rpn, mapping_, latencies_, variable_, values_
        )

    frames = controls.background_each(
        sel,
        "topology-sweep",
        f"Sweeping {variable} from {display.duration(lo)} to {display.duration(hi)}",
        _sweep,
        [(s, int(ranks_per_node), mapping, latencies, variable, values) for s, _, _ in swept],
        stored_as="ui_topology_sweep",
        describe=lambda item: by_source[item[0]].spec,
    )
    for (_source, _topo, res), frame in zip(swept, frames or [], strict=False):
        with controls.readable_errors(f"Sweep on {res.topology}"):
            if isinstance(frame, BaseException):
                raise frame
            sweeps.append(frame)
            T0 = res.runtime_ns
            row = res.variables.loc[res.variables["variable"] == variable].iloc[0]
            marks.append((res.topology, "base", float(row["value_ns"]), T0, 0.0))
            tol = res.tolerances[res.tolerances["variable"] == variable]
            for level in tol.itertuples(index=False):
                if math.isfinite(level.tolerance_ns):
                    marks.append(
                        (
                            res.topology,
                            f"{level.x * 100:g}%",
                            level.tolerance_ns,
                            level.bound_ns,
                            level.x,
                        )
                    )
if sweeps:
    sweep = pd.concat(sweeps, ignore_index=True)
    marks_frame = pd.DataFrame(
        marks, columns=["topology", "label", "value_ns", "runtime_ns", "slowdown"]
    )
    st.plotly_chart(
        plots.topology_sweep_figure(sweep, marks_frame, slowdown=slowdown),
        key="plot_topo_sweep",
        width="stretch",
    )
    if skipped:
        st.caption(f"Not swept (no variable {variable}): {', '.join(skipped)}.")
    with st.expander(f"Sweep table ({len(sweep)} rows)"):
        controls.table(sweep, key="table_topo_sweep")
        controls.csv_download(
            sweep, f"{controls.slug(sel.name)}-topology-sweep.csv", key="csv_topo_sweep"
        )
