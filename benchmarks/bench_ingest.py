"""Ingest throughput (docs/architecture.md §Performance targets: ≥ 10^6 trace events/s per core into an ExecutionGraph).

Cases: the shipped Sweep3D trace (4 ranks, 11.7k lines) and a synthetic liballprof trace of a
halo exchange generated in a temporary directory: per iteration every rank posts Irecv/Isend to
its two ring neighbours, waits with one Waitall (Open MPI request stride) and calls an Allreduce.
"Events" are trace lines (MPI calls); the time covers reading the files and building the
validated graph (``llamp.ingest.read``), after one warm-up run (numba's compiled tokenizer is
loaded once per process). Besides wall-clock throughput, the CPU-time throughput (this process's
user + system time) is reported: on a shared machine it is the per-core figure.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path

from benchmarks.timing import median_time, peak_rss_mb, row

SWEEP3D = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "data"
    / "traces"
    / "liballprof"
    / "sweep3d-2x2"
)


def write_halo_trace(directory: Path, ranks: int, iterations: int) -> int:
    """Write a ``ranks``-rank halo-exchange liballprof trace; return its number of MPI lines."""
    directory.mkdir(parents=True, exist_ok=True)
    lines_total = 0
    comm = "140737354006016,{r},{P}"
    for r in range(ranks):
        left, right = (r - 1) % ranks, (r + 1) % ranks
        cm = comm.format(r=r, P=ranks)
        base = 140737488339000
        t = 1_000_000 + 3 * r
        out = [
            "# htor's PMPI Tracer 1.0 Output File",
            "# clockdiff: 0.000000 s (relative to rank 0)",
            "",
            f"MPI_Init:-:140737488343500:140737488344604:{t}",
        ]
        for it in range(iterations):
            t += 20
            out.append(f"MPI_Irecv:{t}:94000000:512:1,8,8:{left}:{it % 100}:{cm}:{base}:{t + 1}")
            out.append(
                f"MPI_Irecv:{t + 2}:94004096:512:1,8,8:{right}:{it % 100}:{cm}:{base + 8}:{t + 3}"
            )
            out.append(
                f"MPI_Isend:{t + 4}:94008192:512:1,8,8:{right}:{it % 100}:{cm}:{base + 16}:{t + 5}"
            )
            out.append(
                f"MPI_Isend:{t + 6}:94012288:512:1,8,8:{left}:{it % 100}:{cm}:{base + 24}:{t + 7}"
            )
            out.append(f"MPI_Waitall:{t + 8}:4:{base}:1:{t + 12}")
            out.append(f"MPI_Allreduce:{t + 14}:94016384:94016392:1:10,8,8:3:{cm}:{t + 18}")
            t += 20
        out.append("# Finalize clockdiff: 0.000000")
        out.append(f"MPI_Finalize:{t + 5}:-")
        (directory / f"pmpi-trace-rank-{r}.txt").write_text("\n".join(out) + "\n")
        lines_total += 2 + 6 * iterations
    return lines_total


def _ingest(path: Path):
    from llamp.ingest import read

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read(path)


def _cpu_seconds(func, repeat: int) -> float:
    """Median process CPU time of ``func`` over ``repeat`` runs."""
    runs = []
    for _ in range(max(1, repeat)):
        start = time.process_time()
        func()
        runs.append(time.process_time() - start)
    return sorted(runs)[len(runs) // 2]


def run(quick: bool, repeat: int) -> list[dict]:
    rows = []
    _ingest(SWEEP3D)  # warm-up: load the compiled tokenizer
    lines = sum(
        1
        for f in SWEEP3D.iterdir()
        for line in f.read_text().splitlines()
        if line.startswith("MPI_")
    )
    sec, runs, graph = median_time(lambda: _ingest(SWEEP3D), repeat)
    rows.append(
        row(
            "ingest",
            "sweep3d-2x2 (4 ranks)",
            "throughput",
            lines / sec,
            "events/s",
            runs,
            events=lines,
            vertices=graph.num_vertices,
            seconds=sec,
        )
    )
    ranks, iterations = (8, 2_000) if quick else (8, 21_000)
    with tempfile.TemporaryDirectory(prefix="llamp-bench-ingest-") as tmp:
        path = Path(tmp) / "halo"
        events = write_halo_trace(path, ranks, iterations)
        sec, runs, graph = median_time(lambda: _ingest(path), repeat)
        case = f"halo {ranks} ranks × {iterations} it ({events / 1e6:.2g}M events)"
        rows.append(
            row(
                "ingest",
                case,
                "throughput",
                events / sec,
                "events/s",
                runs,
                events=events,
                vertices=graph.num_vertices,
                seconds=sec,
            )
        )
        rows.append(row("ingest", case, "time", sec, "s", runs))
        cpu = _cpu_seconds(lambda: _ingest(path), repeat)
        rows.append(
            row("ingest", case, "throughput (CPU time)", events / cpu, "events/s", cpu_seconds=cpu)
        )
        rows.append(row("ingest", case, "peak RSS", peak_rss_mb(), "MB"))
    return rows
