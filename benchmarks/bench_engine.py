"""Graph engine (docs/architecture.md §Two engines, §Performance targets): one evaluation, full evaluation, critical latencies, tolerance.

Graphs are synthetic stencil codes (``llamp.ingest.synthetic``: 2-D halo exchange with
Isend/Irecv/Waitall, a recursive-doubling allreduce every iteration, an alltoall every 10th)
on 16 ranks. Two flavours for the critical-latency search, whose cost is 2k+1 sweeps for k
breakpoints: ``uniform`` (identical iterations: few distinct breakpoints) and ``noisy`` (10 %
load imbalance and 5 % per-iteration noise: every iteration brings its own breakpoints).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from benchmarks.timing import median_time, peak_rss_mb, row
from llamp.ingest.synthetic import stencil_with_vertices
from llamp.lp import critical_latencies, engine_for, kernels, tolerance
from llamp.lp import engine as graph_engine
from llamp.lp.event_graph import COEF_L
from llamp.params import LogGPS

PARAMS = LogGPS()


def _graph(n: int, noisy: bool):
    extra = {} if noisy else {"imbalance": 0.0, "noise": 0.0}
    return stencil_with_vertices(n, ranks=16, alltoall_every=10, **extra)


def _evaluations(n: int, repeat: int) -> list[dict[str, Any]]:
    graph = _graph(n, noisy=True)
    case = f"stencil {graph.num_vertices:.2g} vertices"
    eng = engine_for(graph)
    rows = []
    lower, runs, _ = median_time(lambda: eng.events(PARAMS), 1)
    rows.append(row("engine", case, "lowering to events", lower, "s", runs))
    eng.runtime(PARAMS)  # compile/warm
    t, runs, _ = median_time(lambda: eng.runtime(PARAMS), max(repeat, 5))
    rows.append(row("engine", case, "evaluate T", t * 1e3, "ms", runs))
    per = t * 1e3 * 1e6 / graph.num_vertices
    rows.append(row("engine", case, "evaluate T per 1e6 vertices", per, "ms"))
    t, runs, _ = median_time(lambda: eng.probe_many(PARAMS, "L", [PARAMS.L]), repeat)
    rows.append(row("engine", case, "T with left+right λ_L", t * 1e3, "ms", runs))
    t, runs, _ = median_time(lambda: eng.evaluate(PARAMS), repeat)
    rows.append(row("engine", case, "full evaluation (λ_L,G,o, slack)", t * 1e3, "ms", runs))
    t, runs, _ = median_time(lambda: tolerance(graph, PARAMS), repeat)
    rows.append(row("engine", case, "tolerance 1/2/5% of L and G", t, "s", runs))
    return rows


def _critical(n: int, noisy: bool) -> list[dict[str, Any]]:
    graph = _graph(n, noisy)
    label = "noisy" if noisy else "uniform"
    t, runs, result = median_time(lambda: critical_latencies(graph, PARAMS, 0.0, 100_000.0), 1)
    case = f"stencil {graph.num_vertices:.2g} vertices, {label}"
    return [
        row("engine", case, "critical latencies in [0, 100 µs]", t, "s", runs),
        row("engine", case, "  breakpoints found", len(result.critical), "count"),
        row("engine", case, "  sweeps (2k+1)", result.evaluations, "count"),
    ]


LANE_WIDTHS = (1, 2, 4, 8, 16, 32, 64, 128)


def _cpu_time(func, repeat: int) -> float:
    """Least CPU time of this thread over ``repeat`` runs (seconds): on a shared machine the
    wall clock counts other processes' turns, this does not."""
    best = float("inf")
    for _ in range(max(1, repeat)):
        start = time.thread_time()
        func()
        best = min(best, time.thread_time() - start)
    return best


def _lanes(n: int, repeat: int) -> list[dict[str, Any]]:
    """The lanes table: one pass of :func:`llamp.lp.kernels.lanes` (T, right and left λ_L) with
    K values of L, single thread — ms per pass (wall median and least CPU time), ns per lane
    and edge, passes/s and values/s (CPU) against K — then ``probe_many`` of 128 values (both
    cores) at several :data:`~llamp.lp.engine.LANES` and one value per pass."""
    graph = _graph(n, noisy=True)
    case = f"stencil {graph.num_vertices:.2g} vertices, lanes"
    eng = engine_for(graph)
    ev = eng.events(PARAMS)
    mask = eng.mask(PARAMS)
    edges = ev.src.size
    rows = [
        row("engine", case, "events", ev.num_events, "count"),
        row("engine", case, "edges", edges, "count"),
        row("engine", case, "ring of events (mask + 1)", mask + 1, "events"),
    ]
    sa = np.ascontiguousarray(ev.fixed[:, [COEF_L, COEF_L]])
    sb = np.ascontiguousarray(ev.scaled[:, [COEF_L, COEF_L]])
    sgn = np.array([1.0, -1.0])
    for K in LANE_WIDTHS:
        configs = [PARAMS.with_(L=float(x)) for x in np.linspace(0.0, 1e5, K)]
        WA, WB = graph_engine._lane_weights(ev, configs)

        def one_pass(WA=WA, WB=WB) -> None:
            kernels.lanes(ev.in_ptr, ev.src, ev.pattern, ev.value, WA, WB, sa, sb, sgn, mask)

        one_pass()  # compile/warm
        t, runs, _ = median_time(one_pass, max(repeat, 3))
        cpu = _cpu_time(one_pass, max(repeat, 3))
        rows.append(row("engine", case, f"K={K:>2}: one pass (wall)", t * 1e3, "ms", runs))
        rows.append(row("engine", case, f"K={K:>2}: one pass (CPU)", cpu * 1e3, "ms"))
        rows.append(
            row("engine", case, f"K={K:>2}: per lane and edge (CPU)", cpu / K / edges * 1e9, "ns")
        )
        rows.append(row("engine", case, f"K={K:>2}: passes/s (CPU)", 1.0 / cpu, "1/s"))
        rows.append(row("engine", case, f"K={K:>2}: values/s (CPU)", K / cpu, "1/s"))
    wa, wb = ev.pattern_weights(PARAMS.L, PARAMS.G, PARAMS.o, PARAMS.g)
    single = (ev.in_ptr, ev.src, ev.pattern, ev.value, wa, wb, sa[:, 0].copy(), sb[:, 0].copy())

    def scalar() -> None:
        kernels.pair(*single, kernels.REL_TOL, kernels.ABS_TOL_NS)

    scalar()
    cpu = _cpu_time(scalar, 3)
    rows.append(row("engine", case, "scalar kernel (one value): values/s (CPU)", 1.0 / cpu, "1/s"))
    rows.append(row("engine", case, "scalar kernel: per edge (CPU)", cpu / edges * 1e9, "ns"))
    values = np.linspace(0.0, 1e5, 128)
    default = graph_engine.LANES
    try:
        for K in (1, 16, 32, 64):
            graph_engine.LANES = K
            start = time.perf_counter()
            eng.probe_many(PARAMS, "L", values)
            t = time.perf_counter() - start
            how = f"LANES={K}" if K > 1 else "scalar kernel, one value per pass"
            rows.append(row("engine", case, f"probe_many 128 values, {how}", t, "s"))
    finally:
        graph_engine.LANES = default
    configs = [PARAMS.with_(L=float(x)) for x in np.linspace(0.0, 1e5, 11)]
    t, runs, _ = median_time(lambda: eng.points(configs, left=False), repeat)
    rows.append(row("engine", case, "points: 11 values of L (sweep)", t, "s", runs))
    return rows


def run(quick: bool, repeat: int, full: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    sizes = [10**4, 10**5] if quick else [10**4, 10**5, 10**6]
    if full:
        sizes.append(10**7)
    for n in sizes:
        rows.extend(_evaluations(n, repeat))
    rows.extend(_lanes(10**5 if quick else 10**6, repeat))
    for noisy in (False, True):
        rows.extend(_critical(10**5 if quick else 10**6, noisy))
    rows.append(row("engine", "all", "peak RSS", peak_rss_mb(), "MB"))
    return rows
