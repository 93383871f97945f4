"""Small liballprof traces written by tests: every rank computes, then makes one collective call,
repeatedly (the collective what-if and analytic-collective suites)."""

from __future__ import annotations

from pathlib import Path

SWEEP3D = Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2"
WORLD = 1140850688  # MPICH's MPI_COMM_WORLD handle


def _comm(r: int, P: int) -> str:
    return f"{WORLD},{r},{P}"


def allreduce_call(t0: int, t1: int, r: int, P: int) -> str:
    """MPI_Allreduce of one double (8 bytes), MPI_SUM."""
    return f"MPI_Allreduce:{t0}:1:2:1:10,8,8:3:{_comm(r, P)}:{t1}"


CALLS = {
    "allreduce": allreduce_call,
    "bcast": lambda t0, t1, r, P: f"MPI_Bcast:{t0}:3:1:10,8,8:0:{_comm(r, P)}:{t1}",
    "reduce": lambda t0, t1, r, P: f"MPI_Reduce:{t0}:1:2:1:10,8,8:3:0:{_comm(r, P)}:{t1}",
    "barrier": lambda t0, t1, r, P: f"MPI_Barrier:{t0}:{_comm(r, P)}:{t1}",
    "allgather": lambda t0, t1, r, P: (
        f"MPI_Allgather:{t0}:1:1:10,8,8:2:1:10,8,8:{_comm(r, P)}:{t1}"
    ),
}


def write_trace(directory: Path, P: int, call, iterations: int, compute_us: int) -> Path:
    """A liballprof trace: every rank computes ``compute_us`` µs, then makes ``call``; repeat."""
    directory.mkdir(parents=True, exist_ok=True)
    for r in range(P):
        t = 100
        lines = [
            "# collprof 0.9 output file",
            "# Init clockdiff: 0.000000",
            "# llamp mpi mpich",
            "",
            f"MPI_Init:-:1:2:{t}",
        ]
        for _ in range(iterations):
            t0 = t + compute_us
            lines.append(call(t0, t0 + 5, r, P))
            t = t0 + 5
        lines.append(f"MPI_Finalize:{t + compute_us}:-")
        (directory / f"pmpi-trace-rank-{r}.txt").write_text("\n".join(lines) + "\n")
    return directory
