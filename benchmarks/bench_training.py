"""A 3D-parallel training step from its Chakra trace to T, λ and the critical latencies.

The case the AI workloads need at scale: one step of a GPT-style model on 1,024 GPUs
(``llamp synth-training``: data 16 × tensor 8 × pipeline 8, 16 layers, 8 micro-batches of one
2,048-token sequence, hidden size 4,096; :mod:`llamp.ingest.training`), whose tensor- and
data-parallel all-reduces NCCL's rules expand into rings of pipelined chunks: 1.07·10^7
LogGOPS operations (the graph's vertices; every send, receive and calc is one event of the
schedule) from 1.6·10^5 Chakra nodes. Target: trace → report in ≤ 60 s and ≤ 8 GB peak RSS.

The stages run in one fresh process (:class:`benchmarks.memprofile.Stages`: wall time and the
kernel's exact high-water mark per stage, and the process's CPU time, all threads), as
``llamp critical``/``report`` run them: read the trace into the execution graph (NCCL
expansion, message pairing, validation), ``predict`` (the lowering to the event graph and one
pass: ``T``, ``λ_L``, ``λ_G``, ``λ_o``), the critical latencies of L in [0, 100 µs] within
``report``'s default budget (``--max-evaluations auto``). Writing the trace
(``write_training``) is timed on its own row and not counted. The process first reads and
analyses the 8-GPU ring all-reduce of ``tests/data/chakra`` to load numba's compiled kernels
(not counted). The machine's load average (``os.getloadavg``, what ``uptime`` prints) before
and after is part of the table: on a shared machine the wall times are upper bounds and the
CPU times say what the work itself costs.

``python -m benchmarks --only training`` (``--quick``: 64 GPUs, 1.25·10^6 vertices; the
1,024-GPU case runs once unless ``--full``);
``python -m benchmarks.bench_training --gpus 1024`` prints one case's table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.memprofile import run_stages
from benchmarks.timing import row

BENCH = "training"
#: GPUs → (dp, tp, pp); layers, micro-batches and sizes are :data:`MODEL`'s.
LAYOUTS = {64: (2, 8, 4), 1024: (16, 8, 8)}
MODEL = {"layers": 16, "micro_batches": 8, "seq_len": 2048, "hidden": 4096}
LIMIT_S, LIMIT_MB = 60.0, 8192.0
STAGES = ("read Chakra → graph", "predict (T, λ; incl. lowering)", "critical latencies")

_CHILD = r"""
import json, sys, time
from pathlib import Path
from benchmarks.memprofile import Stages
from llamp.ingest import read
from llamp.lp import critical_latencies, predict
from llamp.lp.critical import evaluation_budget
from llamp.params import LogGPS
trace = Path(sys.argv[1])
warm = Path("tests/data/chakra/custom_ring_allreduce_8npus_1MB")
stages, params = Stages(), LogGPS()
def timed(name, fn, **kw):
    cpu = time.process_time()
    out = stages.run(name, fn, **kw)
    stages.rows[-1]["cpu_seconds"] = time.process_time() - cpu
    return out
def warm_up():
    g = read(warm)
    predict(g, params)
    critical_latencies(g, params, 0.0, 1e5)
timed("warm-up: numba kernels from cache", warm_up, warmup=True)
graph = timed("read Chakra → graph", lambda: read(trace))
stages.info.update(vertices=graph.num_vertices, edges=graph.num_edges,
                   messages=int(graph.messages()[0].size))
pred = timed("predict (T, λ; incl. lowering)", lambda: predict(graph, params))
stages.info.update(T_ns=pred.runtime_ns, lambda_L=pred.lambda_L, lambda_G=pred.lambda_G)
budget = evaluation_budget(graph, params)
crit = timed("critical latencies", lambda: critical_latencies(
    graph, params, 0.0, 1e5, max_evaluations=budget))
stages.info.update(budget=budget, breakpoints=len(crit.critical), complete=crit.complete)
print(json.dumps(stages.as_dict()))
"""


def write_step(directory: Path, gpus: int) -> dict[str, Any]:
    """Write the ``gpus``-GPU step as Chakra into ``directory``; what was written and how long."""
    from llamp.ingest.training import TrainingStep, write_training

    dp, tp, pp = LAYOUTS[gpus]
    start = time.perf_counter()
    written = write_training(directory, TrainingStep(dp=dp, tp=tp, pp=pp, **MODEL))
    return {"seconds": time.perf_counter() - start, "nodes": written.nodes, "bytes": written.bytes}


def profile_step(trace: Path) -> dict[str, Any]:
    """The stages of one fresh process on ``trace`` (module docstring)."""
    return run_stages(_CHILD, [str(trace)], "training step")


def case_rows(gpus: int, written: dict[str, Any], runs: list[dict[str, Any]], load) -> list[dict]:
    """Table rows of one case: medians over ``runs``, the largest peak, the load averages."""
    first = runs[0]
    dp, tp, pp = LAYOUTS[gpus]
    case = f"{gpus} GPUs (dp {dp} × tp {tp} × pp {pp}), {first['vertices']:.3g} vertices"
    rows = [
        row(
            BENCH,
            case,
            "write the trace (synth-training; not counted)",
            written["seconds"],
            "s",
            nodes=written["nodes"],
            bytes=written["bytes"],
        ),  # fmt: skip
    ]
    whole = []
    for r in runs:
        whole.append(sum(s["seconds"] for s in r["stages"] if not s["warmup"]))
    cpu = [sum(s["cpu_seconds"] for s in r["stages"] if not s["warmup"]) for r in runs]
    for name in STAGES:
        stage = [next(s for s in r["stages"] if s["stage"] == name) for r in runs]
        times = [s["seconds"] for s in stage]
        rows.append(row(BENCH, case, name, statistics.median(times), "s", times,
                        cpu_seconds=statistics.median(s["cpu_seconds"] for s in stage)))  # fmt: skip
    rows.append(row(BENCH, case, "trace → report (the three stages)", statistics.median(whole),
                    "s", whole, limit=LIMIT_S, cpu_seconds=statistics.median(cpu)))  # fmt: skip
    peaks = [(s["peak_mb"], s["stage"]) for r in runs for s in r["stages"]]
    peak, at = max(peaks)
    rows.append(row(BENCH, case, "peak RSS (one process)", peak, "MB", at_stage=at,
                    limit=LIMIT_MB))  # fmt: skip
    rows.append(row(BENCH, case, "  Chakra nodes", written["nodes"], "count"))
    rows.append(row(BENCH, case, "  vertices (LogGOPS operations)", first["vertices"], "count",
                    edges=first["edges"], messages=first["messages"]))  # fmt: skip
    rows.append(row(BENCH, case, "  T", first["T_ns"] / 1e6, "ms", lambda_L=first["lambda_L"],
                    lambda_G=first["lambda_G"]))  # fmt: skip
    rows.append(row(BENCH, case, "  critical latencies in [0, 100 µs]", first["breakpoints"],
                    "count", budget=first["budget"], complete=first["complete"]))  # fmt: skip
    warm = [s["seconds"] for r in runs for s in r["stages"] if s["warmup"]]
    rows.append(row(BENCH, case, "  numba warm-up (not counted)", statistics.median(warm), "s"))
    rows.append(row(BENCH, case, "  load average before / after (1 min)", load[0], "",
                    after=load[1], cores=os.cpu_count()))  # fmt: skip
    return rows


def run(quick: bool, repeat: int, full: bool = False) -> list[dict[str, Any]]:
    """64 GPUs (``quick``: only these) and 1,024 GPUs, the latter once unless ``full``."""
    sizes = [64] if quick else [64, 1024]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="llamp-training-") as tmp:
        for gpus in sizes:
            trace = Path(tmp) / f"step-{gpus}"
            written = write_step(trace, gpus)
            before = os.getloadavg()[0]
            reps = repeat if gpus < 1024 or full else 1
            runs = [profile_step(trace) for _ in range(max(1, reps))]
            after = os.getloadavg()[0]
            rows += case_rows(gpus, written, runs, (before, after))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_training", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--gpus", type=int, default=1024, choices=sorted(LAYOUTS))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--trace", type=Path, help="reuse (or write once) the trace here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="llamp-training-") as tmp:
        trace = args.trace or Path(tmp) / "step"
        if trace.exists():
            written = {"seconds": float("nan"), "nodes": -1, "bytes": -1}
        else:
            written = write_step(trace, args.gpus)
        before = os.getloadavg()[0]
        runs = [profile_step(trace) for _ in range(max(1, args.repeat))]
        rows = case_rows(args.gpus, written, runs, (before, os.getloadavg()[0]))
    print("| case | metric | value | unit | CPU s | details |")
    print("|---|---|---:|---|---:|---|")
    plain = {"benchmark", "case", "metric", "value", "unit", "runs", "cpu_seconds"}
    for r in rows:
        value = f"{r['value']:.4g}" if isinstance(r["value"], float) else str(r["value"])
        cpu = f"{r['cpu_seconds']:.4g}" if "cpu_seconds" in r else ""
        details = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                            for k, v in r.items() if k not in plain)  # fmt: skip
        print(f"| {r['case']} | {r['metric']} | {value} | {r['unit']} | {cpu} | {details} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
