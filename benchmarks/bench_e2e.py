"""End to end (DESIGN §10): trace → ExecutionGraph → embedded store → read back → full report.

The trace is a liballprof halo exchange with an Allreduce per iteration (``bench_ingest``'s
generator), 8 ranks. The report is what ``llamp report`` computes: prediction, an 11-point
sweep of L over [0, 100 µs], all critical latencies in that interval, and the 1/2/5 % L and G
tolerances. Each size runs in a fresh subprocess so its peak RSS is its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import row

_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
import numpy as np
from benchmarks.bench_ingest import write_halo_trace
from llamp.graphdb import open_store
from llamp.ingest import read
from llamp.lp import critical_latencies, predict, sweep, tolerance
from llamp.params import LogGPS

work, iterations = Path(sys.argv[1]), int(sys.argv[2])
lines = write_halo_trace(work / "trace", ranks=8, iterations=iterations)
out = {"lines": lines}
def stage(name, fn):
    t = time.perf_counter(); value = fn(); out[name] = time.perf_counter() - t; return value
graph = stage("ingest", lambda: read(work / "trace"))
out["vertices"] = graph.num_vertices
with open_store(str(work / "store")) as store:
    stage("store load", lambda: store.put_run(graph, "bench"))
    graph = stage("store read-back", lambda: store.load_run("bench"))
params = LogGPS()
stage("predict", lambda: predict(graph, params))
stage("sweep (11 points)", lambda: sweep(graph, params, np.linspace(0, 1e5, 11)))
crit = stage("critical latencies", lambda: critical_latencies(graph, params, 0.0, 1e5))
out["breakpoints"] = len(crit.critical)
stage("tolerance 1/2/5%", lambda: tolerance(graph, params))
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def _run(iterations: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="llamp-e2e-") as tmp:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, tmp, str(iterations)],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
            check=False,
        )
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"end-to-end child failed:\n{proc.stderr[-4000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    data["wall"] = wall
    return data


def run(quick: bool, repeat: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    sizes = [2_000, 20_000] if quick else [2_000, 20_000, 60_000]
    for iterations in sizes:
        data = _run(iterations)
        case = f"halo trace {data['lines']:.2g} lines, {data['vertices']:.2g} vertices"
        pipeline = 0.0
        for stage in (
            "ingest",
            "store load",
            "store read-back",
            "predict",
            "sweep (11 points)",
            "critical latencies",
            "tolerance 1/2/5%",
        ):
            rows.append(row("e2e", case, stage, data[stage], "s"))
            pipeline += data[stage]
        rows.append(row("e2e", case, "whole pipeline", pipeline, "s"))
        rows.append(row("e2e", case, "  breakpoints in [0, 100 µs]", data["breakpoints"], "count"))
        rows.append(row("e2e", case, "peak RSS", data["peak_rss_mb"], "MB"))
    return rows
