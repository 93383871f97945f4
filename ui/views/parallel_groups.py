"""Parallel groups: where a training run's tensor-, pipeline- and data-parallel groups land on
a GPU machine's nodes, each placement evaluated exactly (``llamp place-groups``): T, λ and the
x% tolerance per link class (NVLink, network) of the trace's own rank order and of each order
of the parallel dimensions."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from llamp.errors import InputError
from llamp.lp.gpu_machine import GpuMachine
from llamp.lp.registry import ANALYSES, Inputs
from llamp.ui import controls, display

st.title("Parallel groups")
sel = controls.selection("parallel_groups")
st.caption(
    f"Run **{sel.name}** · o and S from the sidebar ({controls.describe(sel.params)}); L and G "
    "are the machine's: NVLink within a node, the NIC's network between nodes. The parallel "
    "dimensions are the run's process groups (Chakra pg_name, GOAL communicators)."
)

# ---------------------------------------------------------------------- inputs
st.subheader("GPU machine")
c1, c2, c3, c4, c5, c6 = st.columns(6)
gpus = c1.number_input("GPUs per node", 1, 1024, 8, key="pg_gpus")
nics = c2.number_input("NICs per node", 1, 1024, 8, key="pg_nics")
nvlink_L = c3.text_input("NVLink L", "500ns", key="pg_nvlink_L")
nvlink_G = c4.text_input(
    "NVLink G", "450GB/s", key="pg_nvlink_G", help="ns/B, or a bandwidth (GB/s, Gb/s)."
)
net_L = c5.text_input("Network L", "3us", key="pg_net_L", help="End to end between two nodes.")
net_G = c6.text_input("Network G", "400Gb/s", key="pg_net_G", help="Per NIC: ns/B or Gb/s.")
a1, a2, a3 = st.columns([2, 2, 1])
affinity_text = a1.text_input(
    "NIC of each GPU (optional)",
    "",
    key="pg_affinity",
    placeholder="0:0:1:1:2:2:3:3",
    help="One NIC per local GPU; default: the GPUs spread evenly over the NICs.",
)
layouts_text = a2.text_area(
    "Layouts, one per line (optional)",
    "",
    key="pg_layouts",
    height=68,
    placeholder="tp,dp,pp\ndp,tp,pp",
    help="Parallel dimensions innermost first: the first one's groups fill a node's GPUs "
    "first. Default: every order of the run's dimensions.",
)
levels_text = a3.text_input("Tolerance levels (%)", "1, 2, 5", key="pg_levels")
run_clicked = st.button(
    "Evaluate the placements", type="primary", key="pg_run", icon=":material/grid_view:"
)

# ---------------------------------------------------------------------- analysis
result = machine = None
with controls.readable_errors("Placement of the parallel groups"):
    parts = [
        f"gpus={int(gpus)}",
        f"nics={int(nics)}",
        f"nvlink={nvlink_L.strip()}:{nvlink_G.strip()}",
        f"net={net_L.strip()}:{net_G.strip()}",
    ]
    if affinity_text.strip():
        parts.append(f"affinity={affinity_text.strip()}")
    if any("," in p.split("=", 1)[1] for p in parts):
        raise InputError("GPU machine: a value holds a comma (write 0:0:1:1 for the NICs)")
    machine = GpuMachine.parse(",".join(parts))
    entry = ANALYSES["place-groups"]
    settings = entry.parse(
        {
            "layouts": tuple(line.strip() for line in layouts_text.splitlines() if line.strip()),
            "levels": levels_text,
        },
        labels={"layouts": "layouts", "levels": "tolerance levels"},
    )
    inputs = Inputs(sel.params, gpu_machine=machine.spec())
    asked = (sel.run, sel.key, settings, machine.spec())
    if run_clicked:
        st.session_state["_pg_requested"] = asked
    result = controls.analysis(
        sel,
        "place-groups",
        "Placing the parallel groups",
        settings,
        inputs,
        start=st.session_state.get("_pg_requested") == asked,
    )
if result is None:
    if machine is not None and st.session_state.get("_pg_requested") != asked:
        st.info("Describe the machine above and press **Evaluate the placements**.")
    st.stop()

# ---------------------------------------------------------------------- dimensions
st.caption(f"{result.machine} · {result.elapsed_s:.2f} s")
st.subheader("Parallel dimensions")
if result.dimensions.empty:
    st.info(
        "This run has no parallel dimensions (no process groups that partition its ranks): "
        "only its own rank order is evaluated."
    )
else:
    controls.table(
        result.dimensions,
        key="table_pg_dimensions",
        labels={"size": "GPUs per group"},
        kinds={"size": "plain"},
    )
if result.traced_layout:
    st.caption(f"The trace's rank order is the layout {' = '.join(result.traced_layout)}.")
for family, reason in result.skipped.items():
    st.caption(f"Not a dimension: {family}: {reason}")

# ---------------------------------------------------------------------- placements
st.subheader("Placements")
mappings = result.mappings.set_index("mapping")
m1, m2 = st.columns(2)
with m1.container(key="pg-best", border=True):
    T_best = float(mappings.loc[result.best, "runtime_ns"])
    st.metric(f"Fastest: {result.best}", display.duration(T_best))
    st.caption(f"exact: {display.exact_duration(T_best)}")
with m2.container(key="pg-traced", border=True):
    T_traced = float(result.mappings["runtime_ns"].iloc[0])
    st.metric("As traced", display.duration(T_traced))
    st.caption(f"exact: {display.exact_duration(T_traced)}")
controls.table(result.mappings, key="table_pg_mappings", kinds={"vs_traced": "share"})
controls.csv_download(
    result.mappings, f"{controls.slug(sel.name)}-placements.csv", key="csv_pg_mappings"
)

# ---------------------------------------------------------------------- per link class
st.subheader("Sensitivity and tolerance per link class")
st.caption(
    "λ: ∂T/∂variable (ns per ns for the latencies, ns per ns/B for the gaps); x% tolerance: the "
    "largest value of that variable, all others fixed, with T ≤ (1 + x)·T of the placement; "
    "unbounded when no critical path pays it."
)


def _per_class(result, unit: str) -> pd.DataFrame:
    """The latency (``unit`` ns) or gap (ns/B) variables of every placement of ``result``,
    units in the column names: λ of a gap is bytes on the critical path."""
    suffix, slope = ("_ns", "lambda") if unit == "ns" else ("_ns_per_byte", "lambda_bytes")
    rows = []
    for var in result.variables.to_dict(orient="records"):
        if var["unit"] != unit:
            continue
        row = {
            "mapping": var["mapping"],
            "variable": var["variable"],
            f"value{suffix}": var["value"],
            slope: var["lambda"],
            "lambda_share": var["lambda_share"],
        }
        mine = result.tolerances[
            (result.tolerances["mapping"] == var["mapping"])
            & (result.tolerances["variable"] == var["variable"])
        ]
        for level in mine.itertuples(index=False):
            row[f"tolerance_{level.x * 100:g}pct{suffix}".replace(".", "_")] = level.tolerance
        rows.append(row)
    return pd.DataFrame(rows)


latencies, gaps = _per_class(result, "ns"), _per_class(result, "ns_per_byte")
labels = {"lambda_bytes": "λ: critical-path bytes", "lambda": "λ"}
st.markdown("**Latencies** (L_intra: NVLink, L_inter: network)")
controls.table(latencies, key="table_pg_latencies", labels=labels)
st.markdown("**Gaps** (G_intra: NVLink, G_inter: network, per NIC)")
controls.table(gaps, key="table_pg_gaps", labels=labels)
controls.csv_download(
    pd.concat([latencies, gaps], ignore_index=True),
    f"{controls.slug(sel.name)}-placement-tolerance.csv",
    key="csv_pg_classes",
)
