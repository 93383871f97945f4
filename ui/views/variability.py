"""Variability: Monte Carlo over compute costs with spatial (per-rank) and temporal (per-op)
variability and optional slow ranks (Cornebize & Legrand, JPDC 2022): distributions of T, λ_L,
ρ_L and the x% latency tolerance."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from llamp import config
from llamp.lp.registry import MonteCarloSettings
from llamp.lp.variability import DISTRIBUTIONS, VariabilitySpec
from llamp.ui import controls, display, plots

st.title("Compute variability")
sel = controls.selection("variability")
st.caption(
    f"Run **{sel.name}** · {controls.describe(sel.params)} · every calc of rank r costs "
    "cost · spatial[r] · temporal[calc] · slowdown[r] in a sample (factors of mean 1)."
)


# ---------------------------------------------------------------------- inputs
c1, c2, c3, c4 = st.columns(4)
spatial = c1.number_input(
    "Spatial CV (%)",
    0.0,
    500.0,
    5.0,
    step=1.0,
    key="mc_spatial",
    help="Coefficient of variation of a rank's speed (drawn once per rank and sample).",
)
temporal = c2.number_input(
    "Temporal CV (%)",
    0.0,
    500.0,
    5.0,
    step=1.0,
    key="mc_temporal",
    help="Coefficient of variation of every calc (drawn per calc and sample).",
)
distribution = c3.selectbox(
    "Distribution",
    DISTRIBUTIONS,
    key="mc_distribution",
    help="lognormal: skewed toward slow runs; normal: truncated at 0; halfnormal: the paper's "
    "H(μ, σ), CV ≤ 75.5 %.",
)
samples = c4.number_input("Samples", 1, 1_000_000, 200, step=100, key="mc_samples")
c1, c2, c3, c4 = st.columns(4)
slow_text = c1.text_input(
    "Slow ranks", "", key="mc_slow_ranks", placeholder="none (e.g. 3,7)", help="Comma-separated."
)
slowdown = c2.number_input(
    "Slowdown of the slow ranks", 0.01, 1000.0, 1.5, step=0.1, key="mc_slowdown"
)
seed = c3.number_input("Seed", 0, 2**32 - 1, 0, key="mc_seed", help="Same seed, same samples.")
levels_text = c4.text_input(
    "Tolerance levels (%)", "1", key="mc_levels", help="x% L tolerance of each sample, e.g. 1,5"
)
sensitivity = st.toggle(
    "Also λ_L, ρ_L and the L tolerance of every sample",
    value=True,
    key="mc_sensitivity",
    help="Off: T only, one evaluation per sample (faster).",
)
run_clicked = st.button("Run Monte Carlo", type="primary", key="mc_run", icon=":material/casino:")

# ---------------------------------------------------------------------- analysis
result = None
with controls.readable_errors("Monte Carlo"):
    slow = config.parse_ranks(slow_text, what="slow ranks")
    VariabilitySpec(  # a readable error for impossible settings before anything runs
        spatial_cv=spatial / 100.0,
        temporal_cv=temporal / 100.0,
        distribution=distribution,
        samples=int(samples),
    )
    settings = MonteCarloSettings(
        samples=int(samples),
        spatial_cv=spatial / 100.0,
        temporal_cv=temporal / 100.0,
        distribution=distribution,
        slow_ranks=slow,
        slowdown=float(slowdown) if slow else 1.0,
        seed=int(seed),
        levels=controls.levels(levels_text) if sensitivity else (),
        runtime_only=not sensitivity,
    )
    inputs = (sel.run, sel.key, settings)
    if run_clicked:
        st.session_state["_mc_requested"] = inputs
    result = controls.analysis(
        sel,
        "mc",
        "Monte Carlo",
        settings,
        slot="variability",
        start=st.session_state.get("_mc_requested") == inputs,
    )
if result is None:
    if st.session_state.get("_mc_requested") != inputs:
        st.info("Set the variability above and press **Run Monte Carlo**.")
    st.stop()

# ---------------------------------------------------------------------- headline numbers
stats = result.summary.set_index("quantity")
T = stats.loc["runtime_ns"]
spec = result.spec
st.caption(
    f"{spec.samples:,} samples · spatial CV {spec.spatial_cv:.3g}, temporal CV "
    f"{spec.temporal_cv:.3g} ({spec.distribution})"
    + (
        f" · ranks {', '.join(map(str, spec.slow_ranks))} slowed ×{spec.slowdown:g}"
        if spec.slow_ranks
        else ""
    )
    + f" · seed {spec.seed} · {result.seconds['total']:.2f} s"
)
cols = st.columns(5)
for col, (key, label, value) in zip(
    cols,
    (
        ("mc-T-baseline", "T without noise", T["baseline"]),
        ("mc-T-p5", "T P5", T["p5"]),
        ("mc-T-p50", "T P50 (median)", T["p50"]),
        ("mc-T-p95", "T P95", T["p95"]),
        ("mc-T-mean", "T mean", T["mean"]),
    ),
    strict=True,
):
    with col.container(key=key):
        delta = value / T["baseline"] - 1.0 if key != "mc-T-baseline" and T["baseline"] else None
        st.metric(
            label,
            display.duration(value),
            delta=f"{delta:+.3%} vs no noise" if delta is not None else None,
            delta_color="inverse",
        )
        st.caption(f"exact: {display.exact_duration(value)}")
if sensitivity:
    cols = st.columns(1 + len(result.tolerances))
    lam = stats.loc["lambda_L"]
    with cols[0].container(key="mc-lambda-p50"):
        st.metric("λ_L P50", f"{lam['p50']:g}", help="Latency terms on the critical path")
        st.caption(f"P5 {lam['p5']:g} · P95 {lam['p95']:g} · no noise {lam['baseline']:g}")
    for col, x in zip(cols[1:], result.tolerances, strict=True):
        row = stats.loc[f"tolerance_{x * 100:g}pct_L_ns"]
        with col.container(key=f"mc-tolerance-{x * 100:g}pct".replace(".", "_")):
            st.metric(f"{x * 100:g}% L tolerance P50", display.duration(row["p50"]))
            st.caption(
                f"P5 {display.duration(row['p5'])} · P95 {display.duration(row['p95'])} · "
                f"no noise {display.duration(row['baseline'])}"
            )

# ---------------------------------------------------------------------- histograms
st.subheader("Distributions")
o1, o2 = st.columns(2)
bins = o1.slider("Histogram bins", 5, 200, 40, key="mc_bins")
show_rho = o2.toggle("Also ρ_L", key="mc_show_rho", disabled=not sensitivity)
frame = result.samples
plotted = [("runtime_ns", "Predicted runtime T", "T", "time")]
if sensitivity:
    plotted.append(("lambda_L", "Latency sensitivity λ_L", "λ_L", "count"))
    if show_rho:
        plotted.append(("rho_L", "Latency ratio ρ_L = L·λ_L/T", "ρ_L", "ratio"))
    for x in result.tolerances:
        column = f"tolerance_{x * 100:g}pct_L_ns"
        plotted.append((column, f"{x * 100:g}% L tolerance", f"{x * 100:g}% L tolerance", "time"))
grid = st.columns(2)
for i, (column, title, axis, kind) in enumerate(plotted):
    grid[i % 2].plotly_chart(
        plots.distribution_figure(
            frame[column].to_numpy(),
            stats.loc[column].to_dict(),
            title=title,
            axis=axis,
            kind=kind,
            bins=bins,
        ),
        key=f"plot_mc_{column}",
        width="stretch",
    )

# ---------------------------------------------------------------------- tables
st.subheader("Summary")
st.caption("Percentiles over the samples; 'baseline' is the graph as traced (no noise).")
STATS = ("mean", "sd", "p5", "p50", "p95", "min", "max", "baseline")


def _quantity(name: str) -> str:
    """``runtime_ns`` → ``T``, ``tolerance_1pct_L_ns`` → ``1% L tolerance``."""
    if name.startswith("tolerance_") and name.endswith("pct_L_ns"):
        return f"{name.removeprefix('tolerance_').removesuffix('pct_L_ns')}% L tolerance"
    return {"runtime_ns": "T", "lambda_L": "λ_L", "rho_L": "ρ_L"}.get(name, name)


def _shown(name: str, value: float) -> str:
    if name == "rho_L":
        return f"{value:.4%}"
    return display.duration(value) if name.endswith("_ns") else f"{value:.6g}"


st.dataframe(
    pd.DataFrame(
        {"quantity": [_quantity(q) for q in result.summary["quantity"]]}
        | {
            c: [
                _shown(q, v)
                for q, v in zip(result.summary["quantity"], result.summary[c], strict=True)
            ]
            for c in STATS
            if c in result.summary.columns
        }
    ),
    hide_index=True,
    key="table_mc_summary",
)
controls.csv_download(
    result.summary, f"{controls.slug(sel.name)}-variability.csv", key="csv_mc_summary"
)
with st.expander(f"Samples ({len(frame):,})"):
    controls.table(frame, key="table_mc_samples")
    controls.csv_download(
        frame, f"{controls.slug(sel.name)}-variability-samples.csv", key="csv_mc_samples"
    )
