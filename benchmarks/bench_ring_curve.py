"""The Collectives what-if's exact T(L) curve of the ring-allreduce variant: how
much of it the page's time budget resolves, and how long the whole curve takes.

Trace: the 16-rank noisy stencil as a liballprof trace (``bench_whatif``'s collective trace,
:func:`benchmarks.memprofile.write_trace`) of about 10^5 or 10^6 vertices, re-expanded with
``allreduce=ring`` (3.3× the vertices). As the page does: the comparison at L0 with the 1/2/5 %
L tolerances (:func:`~llamp.lp.collectives_whatif.compare_collectives`), its automatic range,
then :func:`~llamp.lp.collectives_whatif.variant_curves` within what the comparison left of
60 s (:func:`~llamp.lp.collectives_whatif.curve_budget`). Rows: the budget, the time the curve
took, breakpoints found, intervals left unresolved, engine evaluations and passes over the
graph (waves); with ``--full`` also the whole curve without a budget.

``python -m benchmarks.bench_ring_curve [--vertices 1e6] [--full]``; in the runner
(``python -m benchmarks --only ring_curve``) 10^5 (``--quick``: 10^4) and 10^6 vertices.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import peak_rss_mb, row

LEVELS = (0.01, 0.02, 0.05)


def measure(vertices: int, full: bool = False) -> list[dict[str, Any]]:
    from benchmarks.memprofile import write_trace
    from llamp.ingest import read_trace
    from llamp.lp import collectives_whatif as w
    from llamp.params import LogGPS

    params = LogGPS()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="llamp-ring-curve-") as tmp:
        path, _ = write_trace(Path(tmp), vertices)
        trace = read_trace(path)
        started = time.perf_counter()
        comp = w.compare_collectives(trace, ["allreduce=ring"], params, [params.L], levels=LEVELS)
        comparison_s = time.perf_counter() - started
        graph = comp.graphs["allreduce=ring"]
        case = f"stencil {vertices:.0e} → ring {graph.num_vertices:,} vertices"
        lo, hi = w.comparison_range(comp.summary, LEVELS, params.L)
        budget = w.curve_budget(comparison_s)
        rows.append(row("ring_curve", case, "comparison at L0 (T, λ, 1/2/5 %)", comparison_s, "s"))
        rows.append(
            row("ring_curve", case, f"curve range [{lo:.0f}, {hi:.0f}] ns: budget", budget, "s")
        )
        runs = [("within the budget", budget)] + ([("whole curve", None)] if full else [])
        for name, seconds in runs:
            t0 = time.perf_counter()
            curve = w.variant_curves(comp, lo, hi, seconds=seconds)["allreduce=ring"]
            took = time.perf_counter() - t0
            crit = curve.critical
            rows += [
                row("ring_curve", case, f"{name}: took", took, "s"),
                row("ring_curve", case, f"{name}: breakpoints found", len(crit.critical), "count"),
                row(
                    "ring_curve",
                    case,
                    f"{name}: intervals unresolved",
                    len(crit.unresolved),
                    "count",
                ),
                row("ring_curve", case, f"{name}: evaluations", crit.evaluations, "count"),
                row("ring_curve", case, f"{name}: passes (waves)", crit.waves, "count"),
            ]
    rows.append(row("ring_curve", "all", "peak RSS", peak_rss_mb(), "MB"))
    return rows


def run(quick: bool = False, repeat: int = 1) -> list[dict[str, Any]]:
    return measure(10**4 if quick else 10**5) + ([] if quick else measure(10**6))


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_ring_curve", description=__doc__
    )
    parser.add_argument("--vertices", default="1e6", help="trace size in vertices")
    parser.add_argument("--full", action="store_true", help="also the whole curve, no budget")
    args = parser.parse_args(argv)
    rows = measure(int(float(args.vertices)), full=args.full)
    width = max(len(r["case"]) for r in rows)
    print(f"| {'case':<{width}} | {'metric':<48} | {'value':>10} | unit |")
    for r in rows:
        value = f"{r['value']:.3f}" if isinstance(r["value"], float) else str(r["value"])
        print(f"| {r['case']:<{width}} | {r['metric']:<48} | {value:>10} | {r['unit']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
