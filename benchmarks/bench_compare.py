"""Runs side by side and the exports: ``compare_runs`` of two stencil
versions, the Perfetto trace and the HTML report.

Graphs: the noisy stencil of :func:`llamp.ingest.synthetic.stencil_with_vertices` (2-D
Isend/Irecv/Waitall halo exchange, recursive-doubling allreduce every iteration, alltoall
every 10th) with 16 ranks and with 64 ranks ("8 vs 64 ranks" of the issue, scaled to what the
synthetic grid holds), each of ``n`` vertices (``quick``: 10^5; default also 10^6). Lowering
(measured by ``bench_engine``) is done before timing. Measured, median of ``repeat``:

- compare: :func:`~llamp.lp.compare.compare_runs` of the two graphs at the default LogGPS (per
  run: prediction, 1/2/5 % L and G tolerances, critical path; then its exact T(L): the
  critical-latency search over its automatic range with the automatic budget);
- Perfetto: :func:`~llamp.lp.timeline.timeline_json` of the 16-rank graph, whole and critical
  path only (with its size in MB);
- HTML report: :func:`~llamp.lp.report.build_report` (11 points over [0, 100 µs], the
  critical latencies with the budget of the UI's download button) plus rendering.
"""

from __future__ import annotations

from typing import Any

from benchmarks.timing import median_time, peak_rss_mb, row
from llamp.ingest.synthetic import stencil_with_vertices
from llamp.lp.compare import compare_runs
from llamp.lp.engine import engine_for
from llamp.lp.html_report import QUICK_EVALUATIONS, render_report
from llamp.lp.report import build_report
from llamp.lp.timeline import timeline_json
from llamp.params import LogGPS

PARAMS = LogGPS()


def _case(n: int, repeat: int) -> list[dict[str, Any]]:
    small = stencil_with_vertices(n, ranks=16, alltoall_every=10)
    large = stencil_with_vertices(n, ranks=64, alltoall_every=10)
    for g in (small, large):
        engine_for(g).events(PARAMS)
    case = f"stencil 16 vs 64 ranks, {small.num_vertices:.2g} + {large.num_vertices:.2g} vertices"
    rows = []
    t, runs, result = median_time(
        lambda: compare_runs([small, large], PARAMS, names=["16 ranks", "64 ranks"]), repeat
    )
    rows.append(row("compare", case, "compare_runs (2 runs, exact curves)", t, "s", runs))
    rows.append(row("compare", case, "  runtime T 64 / 16 ranks", result.changes[0][0].ratio, "×"))
    case = f"stencil 16 ranks, {small.num_vertices:.2g} vertices"
    for critical_only in (False, True):
        what = "critical path only" if critical_only else "whole schedule"
        t, runs, text = median_time(
            lambda c=critical_only: timeline_json(small, PARAMS, critical_only=c), repeat
        )
        rows.append(row("compare", case, f"Perfetto trace, {what}", t, "s", runs))
        rows.append(row("compare", case, f"  size, {what}", len(text) / 1e6, "MB"))
    t, runs, page = median_time(
        lambda: render_report(
            build_report(small, PARAMS, max_evaluations=QUICK_EVALUATIONS, engine="graph")
        ),
        repeat,
    )
    rows.append(
        row("compare", case, f"HTML report ({QUICK_EVALUATIONS} evaluations)", t, "s", runs)
    )
    rows.append(row("compare", case, "  size of the HTML report", len(page) / 1e3, "kB"))
    return rows


def run(quick: bool = False, repeat: int = 3) -> list[dict[str, Any]]:
    sizes = [100_000] if quick else [100_000, 1_000_000]
    rows: list[dict[str, Any]] = []
    for n in sizes:
        rows += _case(n, repeat)
    rows.append(row("compare", "process", "peak RSS", peak_rss_mb(), "MB"))
    return rows
