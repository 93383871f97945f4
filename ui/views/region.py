"""Network design space: the exact joint tolerance regions T(u, v) ≤ (1+x)·T0 over two of L,
G, o, drawn as nested polygons over a heat map of T, with the baseline and named network
designs (built-in networks, calibrated profiles, the user's own points) marked inside or
outside; hovering shows T and the slack to each bound."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from llamp.config import DEFAULT_TOLERANCES
from llamp.injector.profiles import list_profiles
from llamp.lp.region import level_key, network_designs, parameter_axis, parse_design
from llamp.ui import controls, display, page_work, plots

#: The variable pairs offered, as the CLI's ``--axes``.
AXES = {"L and G": ("L", "G"), "L and o": ("L", "o"), "G and o": ("G", "o")}

#: Estimated seconds above which the page asks before computing the exact regions.
ASK_ABOVE_S = 60.0
ALL, COARSE = "all levels", "largest level only"


def _estimate(preview, levels: tuple[float, ...]) -> bool | None:
    """Whether to start the exact regions now: at once when they are expected to take under
    :data:`ASK_ABOVE_S` (``True``); otherwise the estimate (expected evaluations × the seconds
    per evaluation measured on this run's grid), the coarser exact level and a button: its
    click (``True``), else ``None`` (started before, or not yet)."""
    full = preview.expected_s()
    if not full > ASK_ABOVE_S:  # NaN (no estimate) starts at once, as a short one does
        return True
    one = preview.expected_s(1)
    per = display.duration(preview.seconds_per_evaluation * 1e9)
    with st.container(key="region-estimate"):
        st.info(
            f"The exact regions of the {len(levels)} levels are expected to take about "
            f"{display.duration(full * 1e9)} (estimate: about "
            f"{preview.expected_evaluations:,} evaluations × {per} per evaluation measured on "
            f"this run). The largest level alone takes about {display.duration(one * 1e9)}: "
            "its polygon is as exact (every vertex verified), the smaller levels are then not drawn."
        )
        st.radio(
            "Exact polygons for",
            [ALL, COARSE] if len(levels) > 1 else [ALL],
            key="region_exact",
            horizontal=True,
        )
        return True if st.button("Compute the exact regions", key="region_start") else None


st.title("Network design space")
sel = controls.selection("region")
st.caption(
    f"Run **{sel.name}** · {controls.describe(sel.params)} · every (u, v) where the runtime "
    "stays within x % of T at the configured values; exact polygons (each vertex verified, "
    "each edge one critical path's T = bound)"
)


c1, c2, c3 = st.columns(3)
choice = c1.selectbox("Variables", list(AXES), key="region_axes")
levels_text = c2.text_input(
    "Tolerance levels (% slowdown over T0)",
    ", ".join(f"{x * 100:g}" for x in DEFAULT_TOLERANCES),
    key="region_levels",
)
cells = c3.number_input("Heat-map cells per axis", 10, 200, 40, step=10, key="region_cells")
names = AXES[choice]
axes = (parameter_axis(names[0], sel.params), parameter_axis(names[1], sel.params))
with st.expander("Box and designs", expanded=False):
    b1, b2 = st.columns(2)
    box_text = (
        b1.text_input(f"Largest {names[0]} (blank: automatic)", "", key=f"region_max_{names[0]}"),
        b2.text_input(f"Largest {names[1]} (blank: automatic)", "", key=f"region_max_{names[1]}"),
    )
    d1, d2, d3 = st.columns(3)
    show_networks = d1.checkbox("Built-in networks (1GbE … NDR)", value=True, key="region_nets")
    show_profiles = d2.checkbox("Calibrated network profiles", value=True, key="region_profiles")
    fit = d3.checkbox(
        "Box around the designs",
        value=False,
        key="region_fit",
        help="1.25 × the largest design (and baseline) value on each axis not given above: "
        "zooms in when the regions are much larger than the designs.",
    )
    designs_text = st.text_area(
        f"Your designs, one per line: NAME = {names[0]}, {names[1]}",
        "",
        key="region_designs",
        placeholder=f"cheaper switch = {'3.4us' if names[0] != 'G' else '0.01ns/B'}, "
        f"{'0.009ns/B' if names[1] == 'G' else '1.5us'}",
    )

rmap = frame = None
with controls.readable_errors("Design space"):
    levels = controls.levels(levels_text)
    profiles = [(p.name, p.params) for p in list_profiles()] if show_profiles else []
    designs = network_designs(sel.params, names, profiles, builtin=show_networks)
    for line in designs_text.splitlines():
        if line.strip():
            name, point = parse_design(line, axes)
            designs[name] = point
    sides = {}
    if fit and designs:
        for k, a in enumerate(axes):
            top = max([a.value, *(point[k] for point in designs.values())])
            if top > 0:
                sides[a.name] = 1.25 * top
    for a, text in zip(axes, box_text, strict=True):
        if text.strip():
            sides[a.name] = a.parse(text, f"largest {a.name}")
    box = tuple(sorted(sides.items()))
    preview_inputs = (names, levels, box, int(cells))
    # the levels whose polygons are computed: all, or the largest alone when chosen below
    # (kept per input once started: the choice's radio is gone while the job runs)
    chosen = st.session_state.setdefault("region_chosen", {})
    coarse = st.session_state.get("region_exact") == COARSE and len(levels) > 1
    exact_levels = chosen.get(preview_inputs, levels[-1:] if coarse else levels)
    inputs = (names, exact_levels, box, int(cells))
    label = "Computing the exact regions"

    def exact(graph, task, preview=None):
        return page_work.region_map(graph, sel.key, names, exact_levels, box, preview, task.report)

    # T over the box first (its heat map, shown at once); then the polygons over it, as a job.
    # A stored result or a job already running needs no preview (``start=False``).
    rmap = controls.background(
        sel, "region", label, exact, inputs, stored_as="ui_region", start=False
    )
    if rmap is None:
        preview = controls.background(
            sel,
            "region-preview",
            "Computing T over the box",
            lambda graph, task: page_work.region_preview_map(
                graph, sel.key, names, levels, box, int(cells), task.report
            ),
            preview_inputs,
            stored_as="ui_region_preview",
        )
        if preview is not None and not controls.started(sel, "region", inputs):
            go_ahead = _estimate(preview, levels)
            if go_ahead is None:
                go_ahead = preview_inputs in chosen
            elif go_ahead:
                chosen[preview_inputs] = exact_levels
        else:
            go_ahead = False
        if preview is not None:
            if go_ahead:
                rmap = controls.background(
                    sel,
                    "region",
                    label,
                    lambda graph, task: exact(graph, task, preview),
                    inputs,
                    stored_as="ui_region",
                )
            if rmap is None:
                with st.container(key="region-preview"):
                    st.metric("T0 (baseline)", display.duration(preview.baseline_ns))
                    st.caption(
                        "T on the grid (exact at each grid point) and, dotted, where it crosses "
                        "each level; the exact polygons follow when the computation above "
                        "finishes. Its % is the share of the regions' boundaries already final."
                    )
                    st.plotly_chart(
                        plots.region_preview_figure(preview),
                        key="plot_region_preview",
                        width="stretch",
                    )
    if designs and rmap is not None and rmap.region.plane is None:
        # a stored region: T at the designs needs the graph (its plane), loaded once
        plane = controls.background(
            sel,
            "region-plane",
            "Evaluating the designs",
            lambda graph, task: page_work.region_plane(sel.run, graph, sel.key, names),
            (names,),
        )
        rmap = page_work.with_plane(rmap, plane) if plane is not None else rmap
    frame = (
        rmap.region.designs(designs)
        if designs and rmap is not None and rmap.region.plane is not None
        else None
    )

if rmap is None:
    st.stop()

region = rmap.region
cols = st.columns(2 + len(region.levels))
with cols[0].container(key="region-T0"):
    st.metric("T0 (baseline)", display.duration(region.baseline_ns))
    st.caption(f"exact: {display.exact_duration(region.baseline_ns)}")
with cols[1].container(key="region-evaluations"):
    st.metric("Evaluations", f"{region.evaluations}")
    st.caption(f"{region.pieces} critical paths found")
for col, level in zip(cols[2:], region.levels, strict=True):
    with col.container(key=f"region-{level_key(level.x)}"):
        st.metric(f"{level.x * 100:g} % region", f"{level.u.size} vertices")
        beyond = (
            f", goes on beyond the box in {', '.join(level.unbounded)}" if level.unbounded else ""
        )
        st.caption(f"T ≤ {display.duration(level.bound_ns)}{beyond}")

st.plotly_chart(
    plots.region_figure(region, rmap.us, rmap.vs, rmap.runtime_ns, frame),
    key="plot_region",
    width="stretch",
)

au, av = region.axes
rows = []
for level in region.levels:
    for i, edge in enumerate(level.edges):
        rows.append(
            {
                "x_percent": level.x * 100,
                "vertex": i,
                au.key: level.u[i],
                av.key: level.v[i],
                "runtime_ns": level.runtime_ns[i],
                "on_bound": bool(level.on_bound[i]),
                "next_edge": "T = bound" if edge.kind == "bound" else f"box ({edge.side})",
                f"lambda_{au.name}": edge.lambda_u,
                f"lambda_{av.name}": edge.lambda_v,
            }
        )
vertices = pd.DataFrame(rows)
st.subheader("Region vertices")
st.caption(
    f"Counter-clockwise from the origin. λ_{au.name}, λ_{av.name}: the critical path along the "
    "edge to the next vertex (messages and bytes on it for L and G)."
)
controls.table(vertices, key="table_region")
controls.csv_download(vertices, f"{controls.slug(sel.name)}-region.csv", key="csv_region")
if frame is not None:
    st.subheader("Designs")
    controls.table(frame, key="table_designs")
    controls.csv_download(frame, f"{controls.slug(sel.name)}-designs.csv", key="csv_designs")
