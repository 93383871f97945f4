"""Classification: computation-, load-imbalance-, bandwidth-, latency- or communication-bound on
a target network (Tong, Pakin, Lang & Yuan, IPDPS 2016, rules C1–C5), with the per-rank
counters, the three seven-point configuration sets and every rule's verdict."""

from __future__ import annotations

import dataclasses

import streamlit as st

from llamp.config import parse_duration_ns, parse_gap_ns_per_byte
from llamp.errors import InputError
from llamp.lp.classify import NETWORKS, SETS, Network, Thresholds
from llamp.lp.registry import ClassifySettings, Inputs
from llamp.ui import controls, display, plots

st.title("Classification")
sel = controls.selection("classification")
st.caption(
    f"Run **{sel.name}** · Tong et al. 2016: every configuration is an exact evaluation with "
    "the network's L and G = 8 / BW; o and S as chosen below."
)

CUSTOM = "custom…"
HOCKNEY = "0 (Tong et al.'s Hockney model)"
SIDEBAR = f"the sidebar's o ({display.duration(sel.params.o)})"
defaults = Thresholds()

# ---------------------------------------------------------------------- inputs
names = [*NETWORKS, CUSTOM]
c1, c2, c3 = st.columns([1, 1, 2])
choice = c1.selectbox(
    "Target network",
    names,
    index=names.index("HDR"),
    key="cls_network",
    help="Built in, or custom.",
)
if choice == CUSTOM:
    bw_text = c2.text_input("Bandwidth", "100Gb/s", key="cls_bandwidth", help="e.g. 25Gb/s")
    lat_text = c2.text_input("Latency", "2us", key="cls_latency", help="e.g. 1.5us, 800ns")
o_mode = c3.radio(
    "CPU overhead o",
    [HOCKNEY, SIDEBAR],
    key="cls_o",
    help="The paper's Hockney model has no o: the network latency is the whole small-message "
    "cost. With the sidebar's o, sends and receives also cost o (counted as overhead).",
)
with st.expander("Rule thresholds (Tong et al. §IV-C)", expanded=False):
    t1, t2, t3 = st.columns(3)
    compute_share = t1.number_input(
        "C1: computation ≥ (% of T)", 0.0, 100.0, defaults.compute_share * 100, key="cls_compute"
    )
    bound_share = t2.number_input(
        "C2–C5: wait / communication ≥ (% of T)",
        0.0,
        100.0,
        defaults.bound_share * 100,
        key="cls_bound",
    )
    sensitive_share = t3.number_input(
        "'-sensitive' variants: ≥ (% of T)",
        0.0,
        100.0,
        defaults.sensitive_share * 100,
        key="cls_sensitive",
    )
    insensitive = t1.number_input(
        "Insensitive: changes by < (%) over a set",
        0.0,
        100.0,
        defaults.insensitive * 100,
        key="cls_insensitive",
    )
    decrease = t2.number_input(
        "Sensitive: falls by a factor ≥ from ×1/2 to ×2",
        1.01,
        100.0,
        defaults.decrease,
        key="cls_decrease",
    )
    span = t3.selectbox(
        "Sets reach ×1/span … ×span",
        [2, 4, 8, 16, 32],
        index=[2, 4, 8, 16, 32].index(defaults.span),
        key="cls_span",
    )
o1, o2 = st.columns(2)
with_compute = o1.toggle(
    "Include compute in the per-rank chart", value=True, key="cls_with_compute"
)
shares = o2.toggle("Configuration sets in % of T", value=True, key="cls_shares")

# ---------------------------------------------------------------------- analysis
result = None
with controls.readable_errors("Classification"):
    if choice == CUSTOM:
        gap = parse_gap_ns_per_byte(bw_text if "/" in bw_text else f"{bw_text}Gb/s")
        if gap <= 0:
            raise InputError(f"bandwidth {bw_text!r} must be positive")
        network = ("custom", 8.0 / gap, parse_duration_ns(lat_text, default_unit="us"), "")
    else:
        net = NETWORKS[choice]
        network = (net.name, net.bandwidth_gbps, net.latency_ns, net.source)
    # Hockney's model (o = 0) is another model, not a variation around the sidebar's: its
    # schedule order is taken with o = 0, as the API's default LogGPS(o=0) takes it
    params = sel.params.with_(o=0.0).rescheduled() if o_mode == HOCKNEY else sel.params
    settings = ClassifySettings(
        compute_share=compute_share / 100.0,
        bound_share=bound_share / 100.0,
        sensitive_share=sensitive_share / 100.0,
        insensitive=insensitive / 100.0,
        decrease=float(decrease),
        span=int(span),
    )
    Thresholds(*dataclasses.astuple(settings))  # a readable error for impossible thresholds
    result = controls.analysis(
        sel,
        "classify",
        f"Evaluating the {3 * (2 * span.bit_length() - 1)} configurations",
        settings,
        Inputs(params, network=Network(*network)),
        slot="classification",
    )
if result is None:
    st.stop()

net = result.network
st.caption(
    f"**{net.name}**: {net.bandwidth_gbps:g} Gb/s (G = {net.gap_ns_per_byte:.6g} ns/B), "
    f"L = {display.duration(net.latency_ns)}; o = {display.duration(result.params.o)}, S = {result.params.S} B"
    + (f" · source: {net.source}" if net.source else "")
)

# ---------------------------------------------------------------------- verdict
configs = result.configs
target = configs[(configs["set"] == "latency") & (configs["speedup"] == 1.0)].iloc[0]
top = st.columns([3, 1])
with top[0].container(key="class-label"):
    st.metric("Class", result.label, help="The first rule that holds, in the order C1–C5, C2s–C5s")
    st.caption(f"rule {result.rule}" if result.rule else "no rule holds")
with top[1].container(key="class-runtime"):
    st.metric(f"T on {net.name}", display.duration(float(target["runtime_ns"])))
    st.caption(f"exact: {display.exact_duration(float(target['runtime_ns']))}")
for col, part in zip(st.columns(4), ("compute", "wait", "latency", "bandwidth"), strict=True):
    with col.container(key=f"class-share-{part}"):
        st.metric(f"{part.capitalize()} share of T", f"{float(target[f'{part}_share']):.2%}")
        st.caption(f"mean {display.duration(float(target[f'{part}_ns']))} per rank")
if result.rule:
    st.success(f"**{result.rule} · {result.label}** because {result.reason}.")
else:
    st.warning(f"**Unclassified**: {result.reason}")

# ---------------------------------------------------------------------- per-rank counters
st.subheader("Per-rank counters on the target network")
st.caption(
    "Each rank's time [0, T] split into computation, CPU overhead, and idle time spent waiting "
    "for the latency or the bandwidth of messages arriving at it, or for anything else (wait: "
    "peers still computing, their own waits, the final wait for the slowest rank)."
)
parts = plots.COUNTER_PARTS if with_compute else plots.COUNTER_PARTS[1:]
st.plotly_chart(
    plots.counters_figure(result.per_rank, parts, f"Counters per rank on {net.name}"),
    key="plot_counters",
    width="stretch",
)
controls.table(result.per_rank, key="table_counters")
controls.csv_download(
    result.per_rank, f"{controls.slug(sel.name)}-counters-{net.name}.csv", key="csv_counters"
)

# ---------------------------------------------------------------------- configuration sets
st.subheader("Configuration sets")
st.caption(
    f"Seven points per set from ×1/{span} to ×{span}: the bandwidth set scales BW, the latency "
    "set divides L, the combined set does both; the counters are means over the ranks."
)
st.plotly_chart(
    plots.configurations_figure(configs, shares=shares), key="plot_configs", width="stretch"
)
for tab, name in zip(st.tabs([f"{s} set" for s in SETS]), SETS, strict=True):
    with tab:
        frame = configs[configs["set"] == name].drop(columns="set")
        controls.table(
            frame,
            key=f"table_configs_{name}",
            labels={"speedup": "speed-up", "L_ns": "L", "runtime_ns": "T"},
            column_config={"speed-up": st.column_config.NumberColumn("speed-up", format="%g")},
        )
controls.csv_download(
    configs, f"{controls.slug(sel.name)}-configurations-{net.name}.csv", key="csv_configs"
)

# ---------------------------------------------------------------------- rules
st.subheader("Rules")
st.caption(
    "Applied in order; the '-sensitive' variants (C2s–C5s) use the lower share. "
    "change: largest relative deviation over the set; ratio: how much the communication time "
    "falls from the ×1/2 to the ×2 configuration."
)
controls.table(
    result.rules,
    key="table_rules",
    kinds={c: "share" for c in ("share", "share_needed", "change", "change_limit")},
    column_config={
        "holds": st.column_config.CheckboxColumn("holds"),
        "reason": st.column_config.TextColumn("reason", width="large"),
    },
)
controls.csv_download(result.rules, f"{controls.slug(sel.name)}-rules.csv", key="csv_rules")
