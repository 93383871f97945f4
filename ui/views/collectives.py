"""Collectives what-if: the run's trace re-expanded with other collective algorithms and the
variants compared side by side (LLAMP §IV, Fig. 10): T(L) with the x% L tolerances, λ_L and ρ_L,
a summary table, and the analytic Dimemas / Thakur–Gropp costs of the trace's collectives.

Before anything is expanded the page shows what the variants cost (exact vertex counts, time
and memory from :func:`llamp.lp.collectives_whatif.estimate_whatif`); a what-if over the
interactive target asks first and offers the analytic models, which expand nothing. The
what-if runs in the background (:func:`llamp.ui.controls.background`: progress, Cancel, the
result stored with the run); the exact curves have a time budget
(:func:`llamp.lp.collectives_whatif.variant_curves`)."""

from __future__ import annotations

import dataclasses
import math
import time

import pandas as pd
import streamlit as st

from llamp.config import DEFAULT_TOLERANCES, parse_duration_ns
from llamp.errors import InputError
from llamp.ingest import FORMATS
from llamp.ingest.collective_models import analytic_choices
from llamp.ingest.collectives import ALGORITHMS, DEFAULTS
from llamp.lp import collectives_whatif as whatif
from llamp.ui import controls, display, page_work, plots

st.title("Collectives what-if")
sel = controls.selection("collectives")
st.caption(
    f"Run **{sel.name}** · {controls.describe(sel.params)} · the trace is read once and "
    "rebuilt with each variant's collective algorithms, as Schedgen does (LLAMP Fig. 10)."
)

#: Most variants compared at once.
MAX_VARIANTS = 6

graph = None
with controls.readable_errors("Loading the run"):
    graph = sel.graph()
if graph is None:
    st.stop()


def _missing_trace(meta: dict) -> str:
    """Why the run's trace cannot be re-read, for the user."""
    fmt = str(meta.get("format", "")) or "unknown"
    spec = FORMATS.get(fmt)
    if spec is not None and spec.kind != "trace":
        return (
            f"Run **{sel.name}** was ingested from a {fmt} file: its collectives are already "
            "expanded into point-to-point messages, so they cannot be re-expanded with other "
            "algorithms. Enter the trace directory it was made from."
        )
    files = list(meta.get("files") or [])
    where = f" (e.g. `{files[0]}`)" if files else ""
    return (
        f"The trace run **{sel.name}** was ingested from is not on disk here{where}: it was "
        "uploaded (uploads are not kept) or ingested on another machine or from another "
        "directory. The what-if needs the trace itself, because the stored graph has its "
        "collectives expanded already. Enter the trace directory on the server."
    )


found = page_work.trace_directory(graph.meta)
if found is None:
    st.warning(_missing_trace(graph.meta))
with st.expander("Trace", expanded=found is None):
    path_text = st.text_input(
        "Trace directory on the server",
        value="",
        key="coll_trace",
        placeholder=str(found) if found else "/data/traces/app-64 (a trace directory)",
        help="Leave empty to use the trace the run was ingested from.",
    ).strip()
    lenient = st.checkbox(
        "Lenient: turn per-line trace problems into warnings",
        key="coll_lenient",
        help="Needed if the run was ingested leniently.",
    )
trace_path = path_text or (str(found) if found else "")
if not trace_path:
    st.stop()
st.caption(f"Trace: `{trace_path}`")

# ---------------------------------------------------------------------- variants
trace = None
with (
    controls.readable_errors("Reading the trace"),
    st.spinner(f"Reading the trace {trace_path}…"),
):
    trace = page_work.trace_at(trace_path, lenient)
if trace is None:
    st.stop()
instances = page_work.collective_instances(trace_path, lenient)
ingested = {**DEFAULTS, **(graph.meta.get("collectives") or {})}
ops = sorted(set(instances["op"]) & set(ALGORITHMS))
if not ops:
    st.info(
        "The trace makes no collective call on a communicator of two or more ranks: there is "
        "nothing to re-expand. Use the Latency page for its T(L)."
    )
    st.stop()
options = {op: [*ALGORITHMS[op], *analytic_choices(op)] for op in ops}
choosable = [op for op in ops if len(options[op]) > 1]
focus = "allreduce" if "allreduce" in choosable else (choosable[0] if choosable else ops[0])

st.subheader("Variants")
st.caption(
    "Each variant picks an algorithm for every collective the trace calls "
    f"({', '.join(ops)}); the first one is the baseline of the differences. The analytic "
    "choices (dimemas, thakur_gropp:…) do not expand the collective: each instance costs its "
    "model's latency and byte terms once all members have entered it."
)
count = st.number_input(
    "Variants to compare", 1, MAX_VARIANTS, 2 if choosable else 1, key="coll_count"
)


def _default(op: str, i: int) -> int:
    """Variant 1 as ingested; the others step through the other algorithms of ``focus``."""
    opts = options[op]
    base = opts.index(ingested[op]) if ingested.get(op) in opts else 0
    if op != focus:
        return base
    n = len(ALGORITHMS[op])  # step through the expansions; analytic models are picked by hand
    return (base + i) % n if base < n else (base if i == 0 else (i - 1) % n)


choices: list[dict[str, str]] = []
for i, col in enumerate(st.columns(int(count))):
    with col, st.container(border=True):
        st.markdown(f"**Variant {i + 1}**")
        choices.append(
            {
                # set by the analytic button (session state) or defaulted here, not both
                op: st.selectbox(
                    op,
                    options[op],
                    index=None if f"coll_v{i}_{op}" in st.session_state else _default(op, i),
                    key=f"coll_v{i}_{op}",
                )
                for op in ops
            }
        )
differing = [op for op in ops if len({c[op] for c in choices}) > 1]


def _label(choice: dict[str, str]) -> str:
    if differing:
        return ",".join(f"{op}={choice[op]}" for op in differing)
    changed = [f"{op}={alg}" for op, alg in choice.items() if alg != ingested.get(op)]
    return ",".join(changed) or "as ingested"


variants = tuple((_label(c), tuple(sorted(c.items()))) for c in choices)
labels = [label for label, _ in variants]

with st.expander("Sweep range and tolerance levels", expanded=False):
    c1, c2, c3, c4 = st.columns(4)
    auto = c1.checkbox(
        "Automatic range",
        value=True,
        key="coll_auto",
        help="From 0 to 1.25 × the largest L tolerance of any variant.",
    )
    lo_text = c2.text_input("From L", "0us", key="coll_from", disabled=auto)
    hi_text = c3.text_input("To L", "100us", key="coll_to", disabled=auto)
    points = c4.number_input("Sweep points", 10, 5000, 200, step=10, key="coll_points")
    levels_text = st.text_input(
        "Tolerance levels (% slowdown over each variant's T(L0))",
        ", ".join(f"{x * 100:g}" for x in DEFAULT_TOLERANCES),
        key="coll_levels",
    )
o1, o2, o3, o4 = st.columns([2, 1, 1, 1])
layout = o1.radio(
    "Layout",
    ["Overlaid", "One row per variant (Fig. 10)"],
    key="coll_layout",
    horizontal=True,
)
log_x = o2.toggle("Logarithmic L axis", key="coll_log")
slowdown = o3.toggle(
    "Slowdown T(L)/T(L0) − 1",
    key="coll_slowdown",
    help="Each variant relative to its own T(L0): the tolerances sit on the x% lines.",
)
show_critical = o4.toggle(
    "Mark critical latencies",
    value=True,
    key="coll_show_critical",
    disabled=layout == "Overlaid",
    help="In the one-row-per-variant layout.",
)


def _analytic_costs() -> None:
    """The analytic Dimemas / Thakur–Gropp costs of the trace's collectives: nothing is
    expanded, so this section answers at any trace size."""
    st.subheader("Analytic collective costs")
    st.caption(
        "Each collective instance charged one closed-form cost instead of its expanded "
        "messages: Dimemas fan-in/fan-out with Girona et al.'s Table 3 parameters (independent "
        "of the algorithm) and the Thakur–Gropp formula of the variant's algorithm, at the "
        "sidebar's L and G (no reduction cost γ, no overhead o). A cross-check of the expanded "
        "schedules: the formulas count synchronous steps, λ_L above counts the latencies that "
        "end up on the critical path."
    )
    costs = None
    with controls.readable_errors("Analytic collective costs"):
        costs = page_work.collective_costs(trace_path, lenient, variants, sel.key)
    if costs is None or not len(costs):
        return
    totals = costs.groupby("variant", sort=False)[
        ["instances", "total_dimemas_ns", "total_thakur_gropp_ns"]
    ].sum(min_count=1)
    missing = costs.groupby("variant", sort=False)["thakur_gropp_ns"].apply(
        lambda s: bool(s.isna().any())
    )
    totals["total_thakur_gropp_ns"] = totals["total_thakur_gropp_ns"].where(~missing)
    controls.table(
        totals.reset_index(),
        key="table_model_totals",
    )
    controls.table(
        costs,
        key="table_model_costs",
    )
    controls.csv_download(
        costs, f"{controls.slug(sel.name)}-collective-costs.csv", key="csv_model_costs"
    )


def _use_analytic() -> None:
    """Charge every expanded collective of every variant with the analytic model of its
    algorithm (Thakur–Gropp where it has a formula, Dimemas otherwise). An analytic collective
    has no messages to schedule: the sidebar's resource order becomes ``program``."""
    if sel.params.order != "program":
        controls.set_model_choice("collectives", "param_order", "program")
        st.session_state["coll_order_switched"] = True
    for i in range(int(count)):
        for op in ops:
            key = f"coll_v{i}_{op}"
            alg = st.session_state.get(key, "")
            if alg in ALGORITHMS.get(op, ()):
                tg = f"thakur_gropp:{alg}"
                st.session_state[key] = tg if tg in options[op] else "dimemas"


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.1f} min"


if st.session_state.pop("coll_order_switched", False):
    st.info(
        "The analytic models charge a collective without its messages, and the schedule order "
        "(the default) needs the messages: the resource order is now program (sidebar)."
    )

# ---------------------------------------------------------------------- estimate
estimate = levels = None
with controls.readable_errors("Collective what-if"):
    levels = controls.levels(levels_text)
    throughput = page_work.engine_throughput(sel.run, graph, sel.key)
    estimate = page_work.whatif_estimate(trace_path, lenient, variants, len(levels), throughput)
    curve_budget = whatif.curve_budget(estimate.summary_seconds)
if estimate is None or levels is None:
    _analytic_costs()
    st.stop()
plan = estimate.variants
st.caption(
    "Expands to "
    + ", ".join(f"{v:,}" for v in plan["vertices"])
    + f" vertices · summary about {_seconds(estimate.summary_seconds)}, exact curves within "
    f"{_seconds(curve_budget)} · peak memory about {estimate.memory_mb:,.0f} MB (estimated "
    f"before expanding, at {estimate.eval_ns_per_vertex:.0f} ns per vertex and pass)"
)
job_key = repr(
    ("collectives", trace_path, lenient, variants, sel.key, levels, auto, lo_text, hi_text)
)
#: The what-if's inputs: the trace by its path, the variants, the levels and the range as asked.
whatif_inputs = (str(trace_path), bool(lenient), variants, levels, bool(auto), lo_text, hi_text)


def _range(result: whatif.CollectiveComparison) -> tuple[float, float]:
    if auto:
        return whatif.comparison_range(result.summary, levels, sel.params.L)
    a, b = (
        parse_duration_ns(lo_text, default_unit=None),
        parse_duration_ns(hi_text, default_unit=None),
    )
    if not 0 <= a < b:
        raise InputError(f"the sweep range needs 0 ≤ From < To (got {lo_text!r}, {hi_text!r})")
    return a, b


def _work(graph, task):
    """The what-if, reporting to ``task``: the comparison (its expanded graphs kept in the
    process, :func:`page_work.collective_comparison`), its range and the exact curves."""
    share = estimate.summary_seconds / (estimate.summary_seconds + curve_budget)
    started = time.monotonic()
    result = page_work.collective_comparison(
        trace_path,
        lenient,
        variants,
        sel.key,
        levels,
        progress=lambda f, text: task.report(share * f, text),
    )
    span = _range(result)
    curves = whatif.variant_curves(
        result,
        *span,
        seconds=whatif.curve_budget(time.monotonic() - started),
        progress=lambda f, text: task.report(share + (1 - share) * f, text),
    )
    return result, curves, span


def _kept(done):
    """What is stored of the what-if: not its expanded graphs (they stay in the process)."""
    result, curves, span = done
    return dataclasses.replace(result, graphs={}), curves, span


confirmed = st.session_state.get("coll_confirmed") == job_key
done = None
with controls.readable_errors("Collective what-if"):
    done = controls.background(
        sel,
        "collectives",
        "Collective what-if",
        _work,
        whatif_inputs,
        stored_as="ui_collectives",
        shape=(_kept, lambda kept: kept),
        start=estimate.within_target or confirmed,
    )
if done is None and not estimate.within_target and not confirmed:
    st.warning(
        f"Expanding these variants takes about {_seconds(estimate.summary_seconds)} before "
        "any T(L) curve is drawn "
        f"(the largest has {int(plan['vertices'].max()):,} vertices, about "
        f"{estimate.memory_mb:,.0f} MB): more than the {whatif.TARGET_SECONDS:.0f} s this page "
        "aims for. The analytic models below answer at once; or charge the collectives with "
        "them in the variants (a graph without the expanded messages)."
    )
    c1, c2 = st.columns(2)
    if c1.button("Expand anyway", key="coll_run_anyway", icon=":material/play_arrow:"):
        st.session_state["coll_confirmed"] = job_key
        st.rerun()
    c2.button(
        "Use the analytic models in the variants",
        key="coll_use_analytic",
        on_click=_use_analytic,
        icon=":material/functions:",
    )
    _analytic_costs()
    st.stop()
if done is None:
    _analytic_costs()
    st.stop()
result, curves, (lo, hi) = done

summary = result.summary
tolerances = {
    label: whatif.variant_tolerance(row, levels, sel.params)
    for label, row in summary.set_index("variant").iterrows()
}
for note in result.notes:
    st.info(note)

# ---------------------------------------------------------------------- headline numbers
L0 = sel.params.L
#: Variant cards per row.
PER_ROW = 3
records = summary.to_dict(orient="records")
for first in range(0, len(records), PER_ROW):
    row_cols = st.columns(min(PER_ROW, len(records)))
    for i, (col, row) in enumerate(
        zip(row_cols, records[first : first + PER_ROW], strict=False), start=first
    ):
        with col.container(key=f"variant-{i}", border=True):
            st.markdown(f"**{i + 1}. {row['variant']}**")
            a, b = st.columns(2)
            with a:
                st.metric("T(L0) predicted", display.duration(row["runtime_ns"]))
                st.caption(f"exact: {display.exact_duration(row['runtime_ns'])}")
            with b:
                st.metric(
                    "λ_L at L0",
                    f"{row['lambda_L']:g}",
                    delta=f"{row['lambda_L_vs_first']:+g} vs variant 1" if i else None,
                    delta_color="inverse",
                )
                st.caption(f"ρ_L = {row['rho_L']:.4%} of T · {row['messages']:,} messages")
            lines = []
            for x in levels:
                value = row[f"tolerance_{x * 100:g}pct_L_ns"]
                extra = f" (L0 + {display.duration(value - L0)})" if math.isfinite(value) else ""
                lines.append(f"- {x * 100:g}% L tolerance: **{display.duration(value)}**{extra}")
            st.markdown("\n".join(lines))

# ---------------------------------------------------------------------- plots
sweeps = {label: curve.curve for label, curve in curves.items()}
if layout == "Overlaid":
    st.plotly_chart(
        plots.variant_runtime_figure(
            sweeps, tolerances, L0, lo, hi, log_x=log_x, slowdown=slowdown
        ),
        key="plot_variants_T",
        width="stretch",
    )
    st.plotly_chart(
        plots.variant_sensitivity_figure(sweeps, L0, log_x=log_x),
        key="plot_variants_lambda",
        width="stretch",
    )
else:
    for i, label in enumerate(labels):
        st.markdown(f"**Variant {i + 1}: {label}**")
        left, right = st.columns(2)
        left.plotly_chart(
            plots.latency_figure(
                curves[label].curve,
                curves[label].critical,
                tolerances[label],
                L0,
                log_x=log_x,
                show_critical=show_critical,
            ),
            key=f"plot_variant_{i}_T",
            width="stretch",
        )
        right.plotly_chart(
            plots.sensitivity_figure(curves[label].curve, L0, log_x=log_x),
            key=f"plot_variant_{i}_lambda",
            width="stretch",
        )

# ---------------------------------------------------------------------- tables
st.subheader("Summary")
st.caption(
    f"At L0 = {display.duration(L0)}; differences to variant 1 ({labels[0]}). A tolerance is the "
    "largest L whose runtime stays within x% of that variant's own T(L0)."
)
controls.table(
    summary,
    key="table_variants",
)
controls.csv_download(summary, f"{controls.slug(sel.name)}-collectives.csv", key="csv_variants")

unresolved = {label: len(c.critical.unresolved) for label, c in curves.items()}
for label, n in unresolved.items():
    if n:
        st.info(
            f"{label}: the curve's time budget (what the comparison left of "
            f"{whatif.TARGET_SECONDS:.0f} s) left {n} intervals of L "
            "unresolved; T is exact at their ends (rows with exact = false) and, T being convex, "
            "at most the straight line between them. Narrow the range to resolve them."
        )
sweep_table = pd.concat(
    [curve.curve.assign(variant=label) for label, curve in curves.items()], ignore_index=True
)
sweep_table = sweep_table[["variant", *[c for c in sweep_table.columns if c != "variant"]]]
with st.expander(
    f"Curve table ({len(sweep_table)} rows: the ends of T's linear pieces, every critical "
    "latency with λ_L on its left and right)"
):
    controls.table(sweep_table, key="table_variant_sweep")
    controls.csv_download(
        sweep_table, f"{controls.slug(sel.name)}-collectives-sweep.csv", key="csv_variant_sweep"
    )

# ---------------------------------------------------------------------- analytic models
_analytic_costs()
