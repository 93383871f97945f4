"""Joint tolerance regions: exact 1/2/5 % polygons over (L, G) and (L, o) against one
11-point sweep of L on the same graph (target: a region in under 10× the sweep).

Graphs are the synthetic 16-rank stencils of ``bench_engine`` (``uniform``: identical
iterations; ``noisy``: 10 % load imbalance and 5 % per-iteration noise). A region costs one
evaluation per vertex to verify plus one per cut (about twice its vertices): the number of
vertices is the graph's, and a noisy stencil's regions have many (paths that differ by one
message of one iteration), so its rows say how many.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from benchmarks.timing import median_time, peak_rss_mb, row
from llamp.ingest.synthetic import stencil_with_vertices
from llamp.lp import engine_for, sweep
from llamp.lp.region import region_preview, tolerance_region
from llamp.params import LogGPS

PARAMS = LogGPS()
LEVELS = (0.01, 0.02, 0.05)


def _case(n: int, noisy: bool, repeat: int) -> list[dict[str, Any]]:
    extra = {} if noisy else {"imbalance": 0.0, "noise": 0.0}
    graph = stencil_with_vertices(n, ranks=16, alltoall_every=10, **extra)
    case = f"stencil {graph.num_vertices:.2g} vertices, {'noisy' if noisy else 'uniform'}"
    engine_for(graph).runtime(PARAMS)  # lower and compile outside the timings
    values = np.linspace(0.0, 100_000.0, 11)
    sweep(graph, PARAMS, values)
    t_sweep, runs, _ = median_time(lambda: sweep(graph, PARAMS, values), max(repeat, 3))
    rows = [row("region", case, "11-point sweep of L", t_sweep, "s", runs)]
    small = stencil_with_vertices(10**3, ranks=4)
    tolerance_region(small, PARAMS, levels=[0.01])  # compile outside the timings
    for axes in (("L", "G"), ("L", "o")):
        t, runs, result = median_time(
            lambda axes=axes: tolerance_region(graph, PARAMS, levels=LEVELS, axes=axes), repeat
        )
        name = f"{axes[0]}–{axes[1]} regions 1/2/5%"
        rows += [
            row("region", case, name, t, "s", runs),
            row("region", case, f"  {name} vs 11-point sweep", t / t_sweep, "×"),
            row("region", case, f"  {name} evaluations", result.evaluations, "count"),
            row("region", case, f"  {name} critical paths found", result.pieces, "count"),
        ]
        rows += [
            row("region", case, f"  {name}: {level.x:.0%} region vertices", level.u.size, "count")
            for level in result.levels
        ]
    return rows


def _page_case(n: int) -> list[dict[str, Any]]:
    """The Design space page's work on the noisy stencil, as its two jobs run it: ``T`` on the
    40 × 40 grid of the box, then the exact L–G regions 1/2/5 % with their progress (the share
    of the boundaries final) — wall time, evaluations, the load average around it."""
    graph = stencil_with_vertices(n, ranks=16, alltoall_every=10)
    case = f"Design space page, stencil {graph.num_vertices:.2g} vertices, noisy"
    engine_for(graph).runtime(PARAMS)
    tolerance_region(stencil_with_vertices(10**3, ranks=4), PARAMS, levels=[0.01])
    load = os.getloadavg()[0]
    start = time.perf_counter()
    preview = region_preview(graph, PARAMS, levels=LEVELS, cells=40)
    t_grid = time.perf_counter() - start
    shares: list[tuple[float, float]] = []  # (seconds, share of the boundaries final)
    start = time.perf_counter()

    def progress(share: float | None, _: int) -> None:
        if share is not None:
            shares.append((time.perf_counter() - start, share))

    region = tolerance_region(graph, PARAMS, levels=LEVELS, progress=progress)
    t_region = time.perf_counter() - start
    reached = [
        row(
            "region",
            case,
            f"  {q:.0%} shown after",
            next((t for t, f in shares if f >= q), t_region),
            "s",
        )
        for q in (0.25, 0.5, 0.75)
    ]
    return [
        row("region", case, "load average (1 min) before", load, ""),
        row("region", case, "T on the 40×40 grid of the box", t_grid, "s"),
        row("region", case, "  estimated before starting", preview.expected_s(), "s"),
        row("region", case, "  expected evaluations", preview.expected_evaluations, "count"),
        row("region", case, "exact L–G regions 1/2/5%", t_region, "s"),
        row("region", case, "  evaluations", region.evaluations, "count"),
        row("region", case, "  ms per evaluation", 1e3 * t_region / region.evaluations, "ms"),
        *reached,
        row("region", case, "load average (1 min) after", os.getloadavg()[0], ""),
    ]


def run(quick: bool, repeat: int, full: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    n = 10**5 if quick else 10**6
    rows.extend(_page_case(n))
    for noisy in (False, True):
        rows.extend(_case(n, noisy, repeat))
    rows.append(row("region", "all", "peak RSS", peak_rss_mb(), "MB"))
    return rows
