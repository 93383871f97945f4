"""Placement (LLAMP App. J, Algorithm 3): sensitivity-driven rank swaps against block,
round-robin and communication-volume mappings; the mapping as a rankfile, machinefile or
Slurm hostfile."""

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
from llamp.lp.placement import format_mapping
from llamp.lp.topology import LinkLatencies
from llamp.ui import controls, display, page_work, plots

st.title("Rank placement")
sel = controls.selection("placement")
st.caption(
    f"Run **{sel.name}** · {controls.describe(sel.params)} · o, G (between nodes of a "
    "topology) and S from the sidebar."
)

MACHINES = {"Two-level (intra/inter-node)": "two-level", "Topology": "topology"}
STARTS = ("best", "block", "round-robin", "volume", "random")
#: (tab title, format, file suffix, how to use the file)
FILES = (
    ("Open MPI rankfile", "openmpi", "rankfile", "mpirun --rankfile {file} …"),
    ("MPICH machinefile", "mpich", "machinefile", "mpiexec -f {file} …"),
    (
        "Slurm hostfile",
        "slurm",
        "hostfile",
        "SLURM_HOSTFILE={file} srun --distribution=arbitrary …",
    ),
)


def _level(L_text: str, G_text: str, what: str) -> page_work.Level:
    L, G = parse_duration_ns(L_text, default_unit=None), parse_gap_ns_per_byte(G_text)
    if not (math.isfinite(L) and L >= 0 and math.isfinite(G) and G >= 0):
        raise InputError(f"{what}: L and G must be finite and ≥ 0")
    return L, G


# ---------------------------------------------------------------------- inputs
st.subheader("Machine")
label = st.radio("Machine", list(MACHINES), horizontal=True, key="place_machine")
kind = MACHINES[label]
c1, c2, c3 = st.columns([1, 1, 2])
nodes_in = c1.number_input(
    "Nodes", 0, 1_000_000, 0, key="place_nodes", help="0: just enough, ranks / ranks per node."
)
rpn = c2.number_input("Ranks per node", 1, 65536, 2, key="place_rpn")
hosts_text = c3.text_area(
    "Host names (optional)",
    key="place_hosts",
    height=68,
    placeholder="one per line; default node0, node1, …",
)
if kind == "two-level":
    l1, l2, l3, l4 = st.columns(4)
    intra_L = l1.text_input("Intra-node L", "300ns", key="place_intra_L")
    intra_G = l2.text_input("Intra-node G", "0.05ns/B", key="place_intra_G")
    inter_L = l3.text_input("Inter-node L", "3us", key="place_inter_L")
    inter_G = l4.text_input("Inter-node G", "0.018ns/B", key="place_inter_G")
else:
    t1, t2, t3, t4 = st.columns([2, 1, 1, 1])
    spec = t1.text_input(
        "Topology",
        "fattree:k=4,tiers=2",
        key="place_topology",
        help="fattree:k=16[,tiers=2], dragonfly:g=8,a=4,p=8, torus:dims=4x4x4[,p=1], or the "
        "path of a graph file on the server; the machine is its first nodes.",
    )
    wire = t2.text_input("l_wire", display.duration(DEFAULT_WIRE_NS), key="place_wire")
    switch = t3.text_input("d_switch", display.duration(DEFAULT_SWITCH_NS), key="place_switch")
    intra = t4.text_input(
        "l_intra_node", display.duration(DEFAULT_INTRA_NODE_NS), key="place_intra"
    )

st.subheader("Heuristic")
b1, b2, b3, b4, b5 = st.columns(5)
budget_text = b1.text_input("Time budget", "30s", key="place_budget")
max_swaps = b2.number_input("Most swaps", 0, 1_000_000, 1000, key="place_max_swaps")
candidates = b3.number_input(
    "Candidates per iteration",
    1,
    10_000,
    16,
    key="place_candidates",
    help="Best-ranked swaps whose T is evaluated exactly in each iteration.",
)
start = b4.selectbox(
    "Start mapping",
    STARTS,
    key="place_start",
    help="best: the best of block, round-robin and volume; random: a seeded shuffle of block.",
)
seed = b5.number_input("Seed", 0, 2**31 - 1, 0, key="place_seed")

machine = budget = None
with controls.readable_errors("Placement inputs"):
    P = sel.ranks or sel.graph().num_ranks
    nodes = int(nodes_in) or -(-P // int(rpn))
    hosts = tuple(h.strip() for h in hosts_text.splitlines() if h.strip())
    if hosts and len(hosts) < nodes:
        raise InputError(f"{len(hosts)} host names for {nodes} nodes")
    hosts = hosts[:nodes]
    if kind == "two-level":
        machine = (
            "two-level",
            nodes,
            int(rpn),
            _level(intra_L, intra_G, "intra-node"),
            _level(inter_L, inter_G, "inter-node"),
            hosts,
        )
    else:
        if not spec.strip():
            raise InputError("enter a topology, e.g. fattree:k=16")
        latencies = LinkLatencies(
            wire_ns=parse_duration_ns(wire, default_unit=None),
            switch_ns=parse_duration_ns(switch, default_unit=None),
            intra_node_ns=parse_duration_ns(intra, default_unit=None),
        )
        machine = (
            "topology",
            spec.strip(),
            nodes,
            int(rpn),
            page_work.latency_key(latencies),
            hosts,
        )
    built = page_work.machine_of(sel.key, machine)
    built.check(P)
    budget_s = parse_duration_ns(budget_text, default_unit="s") / 1e9
    if not budget_s > 0:
        raise InputError(f"the time budget must be positive, got {budget_text!r}")
    budget = (budget_s, int(max_swaps), int(candidates), str(start), int(seed))
    st.caption(
        f"{built.description}: {built.slots} slots for {P} ranks; the heuristic stops after "
        f"{budget_s:g} s or {int(max_swaps)} swaps, or when no swap improves T."
    )
if machine is None or budget is None:
    st.stop()

run_clicked = st.button(
    "Run placement", type="primary", key="place_run", icon=":material/play_arrow:"
)
inputs = (sel.run, sel.key, machine, budget)
if run_clicked:
    st.session_state["_place_requested"] = inputs
result = None
with controls.readable_errors("Placement"):
    place_inputs, settings = page_work.placement_of(sel.key, machine, budget)
    result = controls.analysis(
        sel,
        "place",
        "Searching for a better mapping",
        settings,
        place_inputs,
        slot="placement",
        identity=machine,
        start=st.session_state.get("_place_requested") == inputs,
    )
if result is None:
    if st.session_state.get("_place_requested") != inputs:
        st.info("Press **Run placement** to run the heuristic and compare it with the baselines.")
    st.stop()

# ---------------------------------------------------------------------- comparison
st.subheader("Predicted runtime per mapping")
mappings = result.mappings
block_T = float(mappings.loc[mappings["mapping"] == "block", "runtime_ns"].iloc[0])
llamp_T = float(mappings.loc[mappings["mapping"] == "llamp", "runtime_ns"].iloc[0])
cols = st.columns(4)
with cols[0].container(key="place-runtime-llamp"):
    st.metric(
        "Heuristic (llamp) T",
        display.duration(llamp_T),
        delta=f"{(llamp_T / block_T - 1) * 100:+.4g}% vs block" if block_T > 0 else None,
        delta_color="inverse",
    )
    st.caption(f"exact: {display.exact_duration(llamp_T)}")
cols[1].metric("Best mapping", result.best)
cols[2].metric("Swaps applied", f"{len(result.history) - 1:,}")
cols[3].metric("Heuristic time", f"{result.elapsed_s:.3g} s")
st.caption(f"Stopped: {result.stop_reason}.")
controls.table(
    mappings,
    key="table_mappings",
    column_config={
        "vs block": st.column_config.NumberColumn("T / T_block − 1", format="%.3e"),
        "inter node messages": st.column_config.NumberColumn("inter-node messages"),
        "inter node bytes": st.column_config.NumberColumn("inter-node bytes"),
        "nodes used": st.column_config.NumberColumn("nodes used"),
    },
)
controls.csv_download(mappings, f"{controls.slug(sel.name)}-mappings.csv", key="csv_mappings")

show_baselines = st.toggle("Show the baselines in the history", value=True, key="place_baselines")
st.plotly_chart(
    plots.placement_history_figure(result.history, mappings, show_baselines=show_baselines),
    key="plot_placement_history",
    width="stretch",
)
swaps = result.history[result.history["rank_a"] >= 0]
if len(swaps):
    row = st.selectbox(
        "Open an accepted swap's ranks on the critical-path timeline",
        range(len(swaps)),
        format_func=lambda i: (
            f"swap {int(swaps['iteration'].iloc[i])}: ranks "
            f"{int(swaps['rank_a'].iloc[i])} ⇄ {int(swaps['rank_b'].iloc[i])}"
        ),
        key="place_open_swap",
    )
    a, b = int(swaps["rank_a"].iloc[row]), int(swaps["rank_b"].iloc[row])
    st.page_link(
        "views/critical_path.py",
        label=f"Critical messages between ranks {a} and {b} (at the sidebar's L and G)",
        icon=":material/route:",
        query_params=controls.link_params("critical_path", pair=f"{a},{b}"),
    )
with st.expander(f"Accepted swaps ({len(result.history) - 1})"):
    controls.table(result.history, key="table_history")
    controls.csv_download(
        result.history, f"{controls.slug(sel.name)}-placement-history.csv", key="csv_history"
    )

# ---------------------------------------------------------------------- mapping files
st.subheader("Mapping files")
names = list(mappings["mapping"])
which = st.selectbox("Mapping", names, index=names.index(result.best), key="place_which")
hostnames = result.machine.hostnames
node_of_rank = result.node_of_rank[which]
per_rank = pd.DataFrame(
    {
        "rank": np.arange(node_of_rank.size),
        "node": node_of_rank,
        "host": [hostnames[n] for n in node_of_rank],
    }
)
tabs = st.tabs([title for title, *_ in FILES])
for tab, (title, fmt, suffix, usage) in zip(tabs, FILES, strict=True):
    with tab:
        text = format_mapping(node_of_rank, hostnames, fmt)
        file_name = f"{controls.slug(sel.name)}-{which}.{suffix}"
        st.caption(f"Use: `{usage.format(file=file_name)}`")
        st.code(text, language=None)
        st.download_button(
            f"Download {title}",
            data=text.encode(),
            file_name=file_name,
            mime="text/plain",
            key=f"place_download_{fmt}",
            icon=":material/download:",
        )
with st.expander("Node of every rank"):
    st.dataframe(per_rank, hide_index=True, key="table_per_rank")
    controls.csv_download(
        per_rank, f"{controls.slug(sel.name)}-{which}-nodes.csv", key="csv_per_rank"
    )
