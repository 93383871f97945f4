"""End to end (docs/architecture.md §Performance targets, issue 9): trace → ExecutionGraph → embedded store → full report.

Every case runs the two processes a user runs (:mod:`benchmarks.memprofile`), each in a fresh
subprocess so its peak RSS is its own: ``ingest`` (read the trace, ``put_run`` into an empty
LadybugDB store) and ``report`` (``load_run``, then what ``llamp report`` computes with the
graph engine: prediction, an 11-point sweep of L over [0, 100 µs], the critical latencies in
that interval within the report's default budget of evaluations (``--max-evaluations auto``,
one to two minutes), the 1/2/5 % L and G tolerances, the critical path). Stage times are medians over
the repeats; peak RSS is the largest over the repeats (exact: the kernel's high-water mark,
reset per stage). Each process first loads numba's compiled kernels from its cache on a tiny
trace (about 1 s, reported on its own row, not counted); interpreter start-up and imports are
not included either.

Cases: the synthetic stencil trace (``llamp.ingest.synthetic.write_liballprof``: 16 ranks,
2-D halo exchange with Isend/Irecv/Waitall, an Allreduce every iteration, an Alltoall every
10th, 10 % load imbalance, 5 % noise, seed 0) at 10^4, 10^5 and 10^6 vertices (``--full``:
also 10^7, with at most :data:`FULL_REPEAT` repeats), and the shared real traces.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.memprofile import PARTS, profile, write_trace
from benchmarks.timing import row

TRACES = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"
#: The shared real traces (tests/data/traces/PROVENANCE.md) with more than a handful of ops.
REAL = {
    "sweep3d-2x2 (liballprof, 4 ranks)": TRACES / "liballprof" / "sweep3d-2x2",
    "sstmacro-10ranks (OTF2)": TRACES / "otf2" / "sstmacro-10ranks",
    "ti-32ranks (SimGrid TI)": TRACES / "simgrid-ti" / "ti-32ranks",
    "sst-dumpi-4ranks (DUMPI)": TRACES / "dumpi" / "sst-dumpi-4ranks",
}
#: Repeats at 10^7 vertices (a repeat takes about two minutes on the 2-core machine).
FULL_REPEAT = 3
BENCH = "e2e"

_REPORT_STAGES = (
    "predict (incl. lowering)",
    "sweep (11 points)",
    "critical latencies",
    "tolerance 1/2/5%",
    "critical path",
)


def _stage(result: dict[str, Any], part: str, name: str) -> dict[str, Any]:
    return next(s for s in result[part]["stages"] if s["stage"] == name)


def _case_rows(case: str, runs: list[dict[str, Any]], events: int | None) -> list[dict]:
    """Medians over ``runs`` (results of :func:`profile`) as table rows."""
    first = runs[0]
    vertices = first["ingest"]["vertices"]
    events = events or first["ingest"].get("events") or None
    extra = {"vertices": vertices, "edges": first["ingest"]["edges"], "repeats": len(runs)}

    def times(part: str, name: str) -> list[float]:
        return [_stage(r, part, name)["seconds"] for r in runs]

    def med(values: list[float]) -> float:
        return statistics.median(values)

    rows = []
    read = times("ingest", "read trace → graph")
    if events:
        rows.append(
            row(
                BENCH,
                case,
                "ingest",
                events / med(read),
                "events/s",
                read,
                events=events,
                seconds=med(read),
                **extra,
            )
        )
    else:
        rows.append(row(BENCH, case, "ingest", med(read), "s", read, **extra))
    load = times("ingest", "store load (put_run)")
    rows.append(
        row(
            BENCH,
            case,
            "store load (embedded)",
            vertices / med(load),
            "vertices/s",
            load,
            seconds=med(load),
        )
    )
    back = times("report", "store read-back (load_run)")
    rows.append(
        row(
            BENCH,
            case,
            "store read-back",
            vertices / med(back),
            "vertices/s",
            back,
            seconds=med(back),
        )
    )
    for name in _REPORT_STAGES:
        rows.append(row(BENCH, case, name, med(times("report", name)), "s", times("report", name)))
    report = [sum(s["seconds"] for s in r["report"]["stages"] if not s["warmup"]) for r in runs]
    rows.append(row(BENCH, case, "report from the store (all stages)", med(report), "s", report))
    whole = [
        sum(s["seconds"] for part in PARTS for s in r[part]["stages"] if not s["warmup"])
        for r in runs
    ]
    rows.append(row(BENCH, case, "whole pipeline (trace → report)", med(whole), "s", whole))
    rep = first["report"]
    rows.append(
        row(
            BENCH,
            case,
            "  critical latencies found",
            rep["breakpoints"],
            "count",
            budget=rep["budget"],
            complete=rep["complete"],
            unresolved=rep["unresolved"],
        )
    )
    if not rep["complete"]:
        rows.append(
            row(
                BENCH,
                case,
                "  intervals left unresolved (budget spent)",
                rep["unresolved"],
                "count",
                budget=rep["budget"],
            )
        )
    for part in PARTS:
        peaks = [(s["peak_mb"], s["stage"]) for r in runs for s in r[part]["stages"]]
        peak, stage = max(peaks)
        rows.append(row(BENCH, case, f"peak RSS, {part} process", peak, "MB", at_stage=stage))
    warm = [s["seconds"] for r in runs for part in PARTS for s in r[part]["stages"] if s["warmup"]]
    rows.append(
        row(BENCH, case, "  one-off numba warm-up per process (not counted)", med(warm), "s", warm)
    )
    return rows


def _progress(case: str, rows: list[dict]) -> None:
    for r in rows:
        print(
            f"#   {case}: {r['metric']} = {r['value']:.4g} {r['unit']}", file=sys.stderr, flush=True
        )


def run(quick: bool, repeat: int, full: bool = False) -> list[dict[str, Any]]:
    sizes = [10**4, 10**5] if quick else [10**4, 10**5, 10**6]
    if full:
        sizes.append(10**7)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="llamp-e2e-") as tmp:
        work = Path(tmp)
        for size in sizes:
            trace, lines = write_trace(work, size)
            reps = min(repeat, FULL_REPEAT) if size >= 10**7 else repeat
            runs = [profile(trace, work, lines=lines) for _ in range(max(1, reps))]
            case = f"stencil {runs[0]['ingest']['vertices']:.2g} vertices"
            case_rows = _case_rows(case, runs, lines)
            _progress(case, case_rows)
            rows += case_rows
        for case, trace in REAL.items():
            if quick and "sweep3d" not in case:
                continue
            runs = [profile(trace, work) for _ in range(max(1, repeat))]
            case_rows = _case_rows(case, runs, None)
            _progress(case, case_rows)
            rows += case_rows
    return rows
