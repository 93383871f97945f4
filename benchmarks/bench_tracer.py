"""Tracer overhead per MPI call (docs/architecture.md §Ingest, ``ingest/tracer``): a microbenchmark with and
without the tracer preloaded.

Two ranks (one per core; ``--oversubscribe`` only on a 1-core machine, since it makes waiting
ranks yield their core) run, after a warm-up, ``n`` iterations of each
loop and time it with ``MPI_Wtime``: ``isend-irecv-waitall`` (``MPI_Irecv`` + ``MPI_Isend`` to the
partner + ``MPI_Waitall(2)``: 3 calls), ``allreduce`` (one double, 1 call) and ``comm-rank``
(``MPI_Comm_rank``, 1 call, the cheapest MPI call there is: the tracer's own cost). Each loop
runs in 100 chunks; per launch the program reports the median chunk (steady state, robust to
preemption on a shared machine) and the mean (everything, including buffer flushes). The
overhead per call is ``(traced − untraced) / calls``, each the median over ``repeat`` launches;
``bytes/call`` is the trace volume. ``n`` = 10^5 (10^4 with ``quick``). Open MPI when its
``mpicc`` is on PATH (else MPICH), with the tracer built and cached as ``llamp trace`` does.
Returns no rows when no MPI is installed.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from benchmarks.timing import median_time, row

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CHUNKS 100

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* per-iteration time: the median over CHUNKS chunks (robust to preemption) and the mean */
static void report(const char *name, int calls, double *chunk, int per_chunk, int rank)
{
    double total = 0.0;
    for (int c = 0; c < CHUNKS; c++)
        total += chunk[c];
    qsort(chunk, CHUNKS, sizeof(double), cmp);
    if (rank == 0)
        printf("%s %d %.9e %.9e\n", name, calls, chunk[CHUNKS / 2] / per_chunk,
               total / (CHUNKS * (double)per_chunk));
}

int main(int argc, char **argv)
{
    int rank, r = 0, n = atoi(argv[1]), per_chunk = n / CHUNKS;
    double x = 1.0, y = 0.0, buf = 0.0, in = 0.0, chunk[CHUNKS];
    MPI_Request req[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = rank ^ 1;
    for (int pass = 0; pass < 2; pass++) { /* pass 0 warms up */
        MPI_Barrier(MPI_COMM_WORLD);
        for (int c = 0; c < CHUNKS; c++) {
            double t0 = MPI_Wtime();
            for (int i = 0; i < per_chunk; i++) {
                MPI_Irecv(&in, 1, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, &req[0]);
                MPI_Isend(&buf, 1, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, &req[1]);
                MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            }
            chunk[c] = MPI_Wtime() - t0;
        }
        if (pass)
            report("isend-irecv-waitall", 3, chunk, per_chunk, rank);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int c = 0; c < CHUNKS; c++) {
            double t0 = MPI_Wtime();
            for (int i = 0; i < per_chunk; i++)
                MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            chunk[c] = MPI_Wtime() - t0;
        }
        if (pass)
            report("allreduce", 1, chunk, per_chunk, rank);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int c = 0; c < CHUNKS; c++) {
            double t0 = MPI_Wtime();
            for (int i = 0; i < per_chunk; i++)
                MPI_Comm_rank(MPI_COMM_WORLD, &r);
            chunk[c] = MPI_Wtime() - t0;
        }
        if (pass)
            report("comm-rank", 1, chunk, per_chunk, rank);
    }
    MPI_Finalize();
    return 0;
}
"""
RANKS = 2
ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _mpi() -> tuple[str, list[str]] | None:
    """(mpicc, launcher argv) of Open MPI, else MPICH, else None."""
    from llamp.ingest.tracing import TracerError, detect_mpi

    for mpicc in (
        shutil.which("mpicc.openmpi") or shutil.which("mpicc"),
        shutil.which("mpicc.mpich"),
    ):
        if mpicc is None:
            continue
        try:
            flavour = detect_mpi(mpicc).flavour
        except TracerError:
            continue
        if flavour == "openmpi":
            mpirun = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
            # no --oversubscribe on 2+ cores: it makes waiting ranks yield their core
            spare = [] if len(os.sched_getaffinity(0)) >= RANKS else ["--oversubscribe"]
            return mpicc, [mpirun, *spare, "-np", str(RANKS)]
        hydra = shutil.which("mpiexec.hydra")
        if hydra:
            return mpicc, [hydra, "-n", str(RANKS)]
    return None


def _parse(stdout: str) -> dict[str, tuple[int, float, float]]:
    """{loop: (calls per iteration, median-chunk s/iteration, mean s/iteration)}."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 4:
            out[parts[0]] = (int(parts[1]), float(parts[2]), float(parts[3]))
    return out


def run(quick: bool, repeat: int) -> list[dict]:
    from llamp.ingest.tracing import build_tracer, launch_command

    found = _mpi()
    if found is None:
        return []
    mpicc, launch = found
    n = 10_000 if quick else 100_000
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="llamp-bench-tracer-") as tmp:
        tmpdir = Path(tmp)
        source, exe = tmpdir / "bench.c", tmpdir / "bench"
        source.write_text(PROGRAM)
        subprocess.run([mpicc, "-O2", "-o", str(exe), str(source)], check=True)
        library, mpi = build_tracer(mpicc)
        env = {**os.environ, **ENV}
        plain = [*launch, str(exe), str(n)]
        trace_dir = tmpdir / "trace"
        traced, traced_env = launch_command(plain, library, trace_dir, mpi)
        traced_env.update(ENV)

        def once(argv, environment):
            done = subprocess.run(argv, env=environment, capture_output=True, text=True, check=True)
            return _parse(done.stdout)

        results: dict[str, list[dict]] = {"untraced": [], "traced": []}

        def pair() -> None:  # interleaved, so background load hits both alike
            results["untraced"].append(once(plain, env))
            results["traced"].append(once(traced, traced_env))

        seconds, runs, _ = median_time(pair, repeat)
        trace_bytes = sum(f.stat().st_size for f in trace_dir.glob("pmpi-trace-rank-*.txt"))
        calls = 2 * n * sum(c for c, _, _ in results["traced"][0].values())  # warm-up + timed
        for case in results["untraced"][0]:
            label = f"{case} n={n} {mpi.label}"
            for k, stat in ((1, "median chunk"), (2, "mean")):
                per_call = {
                    mode: [r[case][k] / r[case][0] * 1e9 for r in results[mode]] for mode in results
                }
                base = statistics.median(per_call["untraced"])
                traced_ns = statistics.median(per_call["traced"])
                rows.append(row("tracer", label, f"untraced ({stat})", base, "ns/call"))
                rows.append(row("tracer", label, f"traced ({stat})", traced_ns, "ns/call"))
                rows.append(
                    row(
                        "tracer",
                        label,
                        f"overhead ({stat})",
                        traced_ns - base,
                        "ns/call",
                        per_call["traced"],
                    )
                )
        rows.append(
            row(
                "tracer",
                f"all loops n={n}",
                "trace volume",
                trace_bytes / (RANKS * calls),
                "B/call",
            )
        )
        rows.append(row("tracer", f"all loops n={n}", "launch pair", seconds, "s", runs))
    return rows
