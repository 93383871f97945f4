"""The critical-latency search in waves: all critical latencies of the noisy 16-rank
stencil in [0, 100 µs], exact, against an 11-point sweep of L on the same graph.

Graphs are the synthetic stencils of ``bench_engine`` (10 % load imbalance, 5 % per-iteration
noise, an alltoall every 10th iteration: about one breakpoint per iteration). The search hands
each wave's probes to ``GraphEngine.probe_many`` in one call, so its cost is set by the number
of waves and of evaluations; rows give both, for one probe per interval (``wave width 1``: the
classic ``≤ 2k+1`` evaluations) and for the default (:data:`llamp.lp.critical.WAVE_WIDTH`
probes per wave while few intervals are open). ``passes of LANES lanes`` counts the passes the
engine makes at ``llamp.lp.engine.LANES`` values per pass: ``Σ ceil(probes of a wave /
LANES)``. ``significant at 1 %`` is the length of ``CriticalLatencies.significant(0.01)``. The
last rows time ``llamp report``'s L-sweep read from the exact segments
(``runtime_at``/``slope_at``) against evaluating it.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from benchmarks.timing import median_time, peak_rss_mb, row
from llamp.ingest.synthetic import stencil_with_vertices
from llamp.lp import critical_latencies, engine_for, sweep
from llamp.lp.critical import WAVE_WIDTH
from llamp.lp.engine import LANES
from llamp.params import LogGPS

PARAMS = LogGPS()


def _search(graph, wave_width: int) -> tuple[float, Any, list[int]]:
    done: list[int] = []
    start = time.perf_counter()
    result = critical_latencies(
        graph,
        PARAMS,
        0.0,
        100_000.0,
        wave_width=wave_width,
        progress=lambda _share, _waves, evaluations, _open: done.append(evaluations),
    )
    seconds = time.perf_counter() - start
    sizes = [b - a for a, b in zip([2, *done], done, strict=False)]
    return seconds, result, sizes


def _case(n: int, repeat: int) -> list[dict[str, Any]]:
    graph = stencil_with_vertices(n, ranks=16, alltoall_every=10)
    case = f"noisy stencil {graph.num_vertices:.3g} vertices"
    engine_for(graph).runtime(PARAMS)  # lower and compile outside the timings
    values = np.linspace(0.0, 100_000.0, 11)
    sweep(graph, PARAMS, values)
    t_sweep, runs, _ = median_time(lambda: sweep(graph, PARAMS, values), max(repeat, 3))
    rows = [row("critical", case, "11-point sweep of L", t_sweep, "s", runs)]
    for width in (1, WAVE_WIDTH):
        seconds, result, sizes = _search(graph, width)
        name = f"all critical latencies, wave width {width}"
        passes = 1 + sum(math.ceil(s / LANES) for s in sizes)
        rows += [
            row("critical", case, name, seconds, "s", [seconds]),
            row("critical", case, f"  {name}: vs 11-point sweep", seconds / t_sweep, "×"),
            row("critical", case, f"  {name}: breakpoints", len(result.critical), "count"),
            row("critical", case, f"  {name}: evaluations", result.evaluations, "count"),
            row("critical", case, f"  {name}: waves", result.waves, "count"),
            row("critical", case, f"  {name}: passes of {LANES} lanes", passes, "count"),
            row("critical", case, f"  {name}: widest wave", max(sizes, default=0), "count"),
        ]
    exact = result  # the default search's
    rows.append(
        row("critical", case, "  significant at 1 %", len(exact.significant(0.01)), "count")
    )
    grid = np.linspace(0.0, 100_000.0, 1_001)
    t_read, runs, _ = median_time(
        lambda: (exact.runtime_at(grid), exact.slope_at(grid)), max(repeat, 3)
    )
    rows.append(
        row("critical", case, "1001-point T, λ_L from the segments", t_read * 1e3, "ms", runs)
    )
    return rows


def run(quick: bool, repeat: int, full: bool = False) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for n in [10**5] if quick else [10**5, 10**6]:
        rows.extend(_case(n, repeat))
    rows.append(row("critical", "all", "peak RSS", peak_rss_mb(), "MB"))
    return rows
