"""ASTRA-sim's analytical backend and llamp on the same Chakra traces: T of one collective.

The traces are ASTRA-sim's own microbenchmarks (``tests/data/chakra/microbenchmarks``: one
``COMM_COLL_NODE`` of 1 MiB per NPU; all-reduce, all-gather, reduce-scatter, all-to-all at 4, 8
and 16 NPUs). Both tools get the same network: a ring of NPUs, each link ``LATENCY_NS`` and
``BANDWIDTH_GBPS`` (ASTRA-sim's ``examples/network/analytical/Ring_<N>npus.yml``). ASTRA-sim's
"GB/s" is 2^30 B/s (``bw_GBps_to_Bpns``), so llamp gets L = 500 ns, G = 10^9 / (50 · 2^30) =
0.018626 ns/B, o = 0 and no rendezvous (S above every message).

- ASTRA-sim: ``AstraSim_Analytical_Congestion_Unaware`` with its ring implementation for every
  collective, the whole collective as one chunk (``preferred-dataset-splits`` 1, one active
  chunk, its example's 10-cycle endpoint delay; it asserts with 0), cycles = ns; T is the
  largest ``sys[i] finished, N cycles``.
- llamp: the trace read with NCCL's ring (``nccl_ring_simple``; all-to-all: NCCL's
  point-to-point) on one channel and evaluated by the graph engine. NCCL's model charges each
  ring step the protocol's per-hop latency (Simple: 3.4 µs) on top of L; the row "llamp T
  without NCCL's per-hop latency" removes it (the graph with the hop vertices at cost 0), which
  is the like-for-like figure.

ASTRA-sim is built outside the repository (github:astra-sim/astra-sim with its submodules,
``build/astra_analytical``); without its binary the module prints one "skipped" row:

    python -m benchmarks.bench_astra --astra-sim PATH/AstraSim_Analytical_Congestion_Unaware

(or ``ASTRA_SIM=PATH python -m benchmarks --only astra``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.timing import row

BENCH = "astra"
MICRO = Path(__file__).resolve().parent.parent / "tests" / "data" / "chakra" / "microbenchmarks"
LATENCY_NS, BANDWIDTH_GBPS = 500.0, 50.0
OPS = {  # trace directory → (llamp collective name, llamp's choice)
    "all_reduce": ("allreduce", "nccl_ring_simple"),
    "all_gather": ("allgather", "nccl_ring_simple"),
    "reduce_scatter": ("reduce_scatter", "nccl_ring_simple"),
    "all_to_all": ("alltoall", "nccl"),
}
_FINISHED = re.compile(rb"sys\[(\d+)\] finished, (\d+) cycles")


def astra_sim_t(binary: Path, trace: Path, npus: int, tmp: Path) -> float:
    """T (ns) ASTRA-sim's analytical backend gives the microbenchmark ``trace`` (a directory of
    ``<op>.<npu>.et``) on a ring of ``npus``."""
    network = tmp / f"ring{npus}.yml"
    network.write_text(
        f"topology: [ Ring ]\nnpus_count: [ {npus} ]\n"
        f"bandwidth: [ {BANDWIDTH_GBPS} ]\nlatency: [ {LATENCY_NS} ]\n"
    )
    system = tmp / "system.json"
    ring = ["ring"]
    system.write_text(
        json.dumps(
            {
                "scheduling-policy": "LIFO",
                "endpoint-delay": 10,
                "active-chunks-per-dimension": 1,
                "preferred-dataset-splits": 1,
                "all-reduce-implementation": ring,
                "all-gather-implementation": ring,
                "reduce-scatter-implementation": ring,
                "all-to-all-implementation": ring,
                "collective-optimization": "localBWAware",
                "local-mem-bw": 1600,
                "boost-mode": 0,
            }
        )
    )
    memory = tmp / "memory.json"
    memory.write_text(json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}))
    prefix = trace / next(iter(sorted(trace.glob("*.0.et")))).name.removesuffix(".0.et")
    out = subprocess.run(
        [
            str(binary),
            f"--workload-configuration={prefix}",
            f"--system-configuration={system}",
            f"--remote-memory-configuration={memory}",
            f"--network-configuration={network}",
        ],
        capture_output=True,
        check=True,
        timeout=300,
        cwd=tmp,  # it writes log/log.log into its working directory
    ).stdout
    ends = {int(r): float(c) for r, c in _FINISHED.findall(out)}
    if len(ends) != npus:
        raise RuntimeError(f"ASTRA-sim finished {len(ends)} of {npus} NPUs on {trace}")
    return max(ends.values())


def llamp_t(trace: Path, op: str, choice: str, *, hops: bool) -> float:
    """T (ns) of the trace read with NCCL's ``choice`` on one channel, at the ring's L and G;
    ``hops=False`` evaluates it with the protocol's per-hop latency vertices at cost 0."""
    import numpy as np

    from llamp.graph import CALC
    from llamp.ingest import read
    from llamp.ingest.nccl import NcclMachine
    from llamp.lp import evaluate
    from llamp.params import LogGPS

    graph = read(trace, collectives={op: choice}, nccl_machine=NcclMachine(channels=1))
    if not hops:
        cost = np.asarray(graph.cost_ns).copy()
        cost[np.asarray(graph.kind) == CALC] = 0.0  # the microbenchmarks have no compute
        graph = dataclasses.replace(graph, cost_ns=cost)
    params = LogGPS(L=LATENCY_NS, o=0.0, G=1e9 / (BANDWIDTH_GBPS * 2**30), S=1 << 40, g=0.0)
    return float(evaluate(graph, params).runtime_ns)


def find_binary(path: str | None) -> Path | None:
    """The ASTRA-sim binary given (``--astra-sim`` or ``ASTRA_SIM``), ``None`` if none is; a
    given path that is not an executable file is refused."""
    path = path or os.environ.get("ASTRA_SIM")
    if not path:
        return None
    if not (Path(path).is_file() and os.access(path, os.X_OK)):
        raise SystemExit(f"ASTRA-sim: {path} is not an executable file")
    return Path(path)


def run(quick: bool, repeat: int, astra_sim: str | None = None) -> list[dict[str, Any]]:
    binary = find_binary(astra_sim)
    if binary is None:
        note = "skipped: no ASTRA-sim binary (--astra-sim PATH or ASTRA_SIM)"
        print(f"[astra] {note}", file=sys.stderr)
        return [row(BENCH, note, "—", "—", "")]
    rows: list[dict[str, Any]] = []
    sizes = (4,) if quick else (4, 8, 16)
    with tempfile.TemporaryDirectory(prefix="llamp-astra-") as tmp:
        for op, (name, choice) in OPS.items():
            for npus in sizes:
                trace = MICRO / op / f"{npus}npus_1MB"
                case = f"{op} {npus} NPUs 1 MiB"
                astra = astra_sim_t(binary, trace, npus, Path(tmp))
                mine = llamp_t(trace, name, choice, hops=True)
                bare = llamp_t(trace, name, choice, hops=False)
                rows.append(row(BENCH, case, "ASTRA-sim T", astra, "ns"))
                rows.append(row(BENCH, case, f"llamp T ({choice}, 1 channel)", mine, "ns"))
                rows.append(row(BENCH, case, "llamp T without NCCL's per-hop latency", bare, "ns"))
                rows.append(
                    row(BENCH, case, "ASTRA-sim vs llamp − hops", 100 * (astra / bare - 1), "%")
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_astra", description=__doc__)
    parser.add_argument("--astra-sim", help="AstraSim_Analytical_Congestion_Unaware binary")
    parser.add_argument("--quick", action="store_true", help="4 NPUs only")
    args = parser.parse_args(argv)
    for r in run(args.quick, 1, args.astra_sim):
        print(f"| {r['case']} | {r['metric']} | {r['value']} | {r['unit']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
