"""Placing a training step's parallel groups on a GPU machine (``llamp place-groups``).

The 64-GPU Llama-style step of the README (``llamp synth-training --dp 4 --tp 8 --pp 2
--layers 32 --micro-batches 4``: 2.7·10^6 vertices, 1.24·10^7 event edges) on an H100-like
machine (``gpus=8``: NVLink, one 400 Gb/s NIC per GPU), every order of its three parallel
dimensions plus the trace's own (seven layouts; those with the same per-message model are
evaluated once). Rows: the per-message edge weights of one layout (``message_weights``, one
numba pass), the whole comparison (T, λ and the 1/2/5 % tolerances of four link classes per
layout evaluated), the layouts evaluated, and the load average before and after: on a shared
machine the wall times are upper bounds.

``python -m benchmarks --only place_groups`` (``--quick``: 8 layers instead of 32);
``python -m benchmarks.bench_place_groups`` prints the table.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import row

BENCH = "place_groups"
MACHINE = "gpus=8"


def run(quick: bool, repeat: int) -> list[dict[str, Any]]:
    from llamp.ingest import read
    from llamp.ingest.training import TrainingStep, write_training
    from llamp.lp.engine import engine_for
    from llamp.lp.gpu_machine import GpuMachine, gpu_variables
    from llamp.lp.group_placement import compare_group_placements
    from llamp.lp.weighted import edge_weights
    from llamp.params import LogGPS

    layers = 8 if quick else 32
    step = TrainingStep(dp=4, tp=8, pp=2, layers=layers, micro_batches=4)
    params, machine = LogGPS(), GpuMachine.parse(MACHINE)
    with tempfile.TemporaryDirectory(prefix="llamp-place-groups-") as tmp:
        write_training(Path(tmp) / "step", step)
        graph = read(Path(tmp) / "step")
    case = f"64 GPUs (dp 4 × tp 8 × pp 2, {layers} layers), {graph.num_vertices:.3g} vertices"
    before = os.getloadavg()[0]
    ev = engine_for(graph).events(params)
    model = gpu_variables(graph, machine).model
    edge_weights(ev, params, model)  # compiles or loads the kernel: not counted
    times = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        edge_weights(ev, params, model)
        times.append(time.perf_counter() - start)
    rows = [
        row(BENCH, case, "edge weights of one layout (message_weights)", statistics.median(times),
            "s", times, edges=ev.num_edges, variables=len(model.names)),
    ]  # fmt: skip
    start = time.perf_counter()
    result = compare_group_placements(graph, params, machine)
    whole = time.perf_counter() - start
    rows += [
        row(BENCH, case, "place-groups, every order (T, λ, 1/2/5 % tolerances)", whole, "s",
            layouts=len(result.mappings), best=result.best),
        row(BENCH, case, "  T of the fastest layout", float(result.mappings["runtime_ns"].min())
            / 1e6, "ms"),
        row(BENCH, case, "  load average before / after (1 min)", before, "",
            after=os.getloadavg()[0], cores=os.cpu_count()),
    ]  # fmt: skip
    return rows


def main() -> int:
    rows = run(quick="--quick" in sys.argv, repeat=3)
    print("| case | metric | value | unit | details |")
    print("|---|---|---:|---|---|")
    plain = {"benchmark", "case", "metric", "value", "unit", "runs"}
    for r in rows:
        value = f"{r['value']:.4g}" if isinstance(r["value"], float) else str(r["value"])
        details = ", ".join(f"{k} {v}" for k, v in r.items() if k not in plain)
        print(f"| {r['case']} | {r['metric']} | {value} | {r['unit']} | {details} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
