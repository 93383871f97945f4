"""Per-stage time and peak memory of the full pipeline (docs/architecture.md §Performance targets; 10^7 vertices).

``python -m benchmarks.memprofile --vertices 1e7`` writes a synthetic liballprof trace, then
runs the two processes a user runs, each in a fresh subprocess:

* ``ingest``: read the trace into an ExecutionGraph, ``put_run`` it into an empty embedded
  store (what ``llamp ingest TRACE --name RUN`` does);
* ``report``: ``load_run`` and what ``llamp report RUN`` computes — prediction, an 11-point
  sweep of L over [0, 100 µs], critical latencies in that interval (its default budget,
  ``--max-evaluations auto``), 1/2/5 % L and G tolerance, the critical path (graph engine,
  ``--engine auto``).

Traces: ``stencil`` (default; :func:`llamp.ingest.synthetic.write_liballprof`: 16 ranks, 2-D
halo exchange with Isend/Irecv/Waitall, an Allreduce every iteration, an Alltoall every 10th,
10 % load imbalance, 5 % noise, seed 0), ``halo`` (``bench_ingest``'s 8-rank ring) or
``--trace DIR`` for an existing trace. For every stage it prints the wall time, the resident
set size before and after the stage and the peak RSS during it. The peak is exact, not
sampled: the kernel's high-water mark (VmHWM) is reset before each stage through
``/proc/self/clear_refs`` (Linux ≥ 4.0). Each process first runs a warm-up stage on a
79-vertex trace, which loads numba's compiled kernels from its cache (about 1 s): reported on
its own line, not counted in the pipeline's time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PARTS = ("ingest", "report")
#: The synthetic stencil of the benchmarks (``StencilPattern`` fields besides iterations).
STENCIL = {"ranks": 16, "alltoall_every": 10}
#: Ranks of ``bench_ingest``'s halo trace.
HALO_RANKS = 8

_CHILD = r"""
import json, sys, warnings
from pathlib import Path
from benchmarks.memprofile import Stages
stages = Stages()
trace, store_dir, part = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
warm = Path("tests/data/traces/liballprof/bcast-synthetic")  # 79 vertices
if part == "ingest":
    from llamp.graphdb import open_store
    from llamp.ingest import read
    stages.run("warm-up: numba kernels from cache", lambda: read(warm), warmup=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = stages.run("read trace → graph", lambda: read(trace))
    stages.info.update(vertices=graph.num_vertices, edges=graph.num_edges,
                       events=int(graph.meta.get("trace_events") or 0))
    with open_store(store_dir) as store:
        stages.run("store load (put_run)", lambda: store.put_run(graph, "bench"))
else:
    import numpy as np
    from llamp.graphdb import open_store
    from llamp.lp import critical_latencies, critical_path, predict, sweep, tolerance
    from llamp.ingest import read
    from llamp.params import LogGPS
    def warm_up():
        g, p = read(warm), LogGPS()
        predict(g, p); sweep(g, p, [0.0, 1.0]); critical_latencies(g, p, 0.0, 1e5)
        tolerance(g, p); critical_path(g, p)
    stages.run("warm-up: numba kernels from cache", warm_up, warmup=True)
    with open_store(store_dir, read_only=True) as store:
        graph = stages.run("store read-back (load_run)", lambda: store.load_run("bench"))
    params = LogGPS()
    stages.run("predict (incl. lowering)", lambda: predict(graph, params))
    stages.run("sweep (11 points)", lambda: sweep(graph, params, np.linspace(0, 1e5, 11)))
    from llamp.lp.critical import evaluation_budget
    budget = evaluation_budget(graph, params)  # llamp report's default: --max-evaluations auto
    crit = stages.run("critical latencies", lambda: critical_latencies(
        graph, params, 0.0, 1e5, max_evaluations=budget))
    stages.info.update(breakpoints=None if crit is None else len(crit.critical), budget=budget,
                       complete=None if crit is None else crit.complete,
                       unresolved=None if crit is None else len(crit.unresolved))
    stages.run("tolerance 1/2/5%", lambda: tolerance(graph, params))
    stages.run("critical path", lambda: critical_path(graph, params))
print(json.dumps(stages.as_dict()))
"""


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


class Stages:
    """Time and exact peak RSS of successive stages of one process."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.info: dict[str, Any] = {}

    def run(self, name: str, func, *, warmup: bool = False):
        """Time ``func``; a ``warmup`` stage is reported but not part of the pipeline."""
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # reset the high-water mark to the current RSS
        except OSError:  # pragma: no cover - old kernel or restricted /proc: cumulative peak
            pass
        before = _status_kb("VmRSS")
        start = time.perf_counter()
        error = None
        try:
            value = func()
        except Exception as err:  # noqa: BLE001 - recorded; later stages still run
            value, error = None, f"{type(err).__name__}: {err}"
        seconds = time.perf_counter() - start
        self.rows.append(
            {
                "stage": name,
                "seconds": seconds,
                "rss_before_mb": before / 1024,
                "rss_after_mb": _status_kb("VmRSS") / 1024,
                "peak_mb": _status_kb("VmHWM") / 1024,
                "warmup": warmup,
                **({"error": error[:300]} if error else {}),
            }
        )
        return value

    def as_dict(self) -> dict[str, Any]:
        return {"stages": self.rows, **self.info}


def run_part(trace: Path, store: Path, part: str) -> dict[str, Any]:
    """Run the ``ingest`` (into an empty ``store``) or ``report`` process; its stage rows.

    Ingest starts from an empty store: replacing a run would time LadybugDB's slow deletes.
    """
    if part == "ingest":
        shutil.rmtree(store, ignore_errors=True)
    return run_stages(_CHILD, [str(trace), str(store), part], part)


def run_stages(child: str, args: list[str], what: str) -> dict[str, Any]:
    """Run ``child`` (Python source printing :meth:`Stages.as_dict` as its last line) in a fresh
    interpreter from the repository root with ``args``; its stage rows, or RuntimeError naming
    ``what`` and the stage that failed."""
    proc = subprocess.run(
        [sys.executable, "-c", child, *args],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{what} child failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    failed = [s for s in data["stages"] if "error" in s]
    if failed:
        raise RuntimeError(f"{what}: stage {failed[0]['stage']!r} failed: {failed[0]['error']}")
    return data


def _vertices_per_iteration(kind: str) -> float:
    """Vertices per iteration of a trace kind, from a 20-iteration sample (collective
    expansions depend on the rank count, so measure instead of counting)."""
    from llamp.ingest import read

    with tempfile.TemporaryDirectory(prefix="llamp-sample-") as tmp:
        _write(Path(tmp) / "trace", kind, 20)
        return read(Path(tmp) / "trace").num_vertices / 20


def _write(path: Path, kind: str, iterations: int) -> int:
    if kind == "stencil":
        from llamp.ingest.synthetic import write_liballprof

        return write_liballprof(path, iterations=iterations, **STENCIL)
    if kind == "halo":
        from benchmarks.bench_ingest import write_halo_trace

        return write_halo_trace(path, ranks=HALO_RANKS, iterations=iterations)
    raise ValueError(f"unknown trace kind {kind!r}: stencil or halo")


def write_trace(work: Path, vertices: int, kind: str = "stencil") -> tuple[Path, int]:
    """A ``kind`` trace of about ``vertices`` vertices in ``work/trace-<kind>`` (reused when it
    is already there for this size); its path and number of MPI lines."""
    iterations = max(1, round(vertices / _vertices_per_iteration(kind)))
    path = work / f"trace-{kind}"
    marker = path / ".lines"
    if marker.exists() and marker.read_text().split()[0] == str(iterations):
        return path, int(marker.read_text().split()[1])
    shutil.rmtree(path, ignore_errors=True)
    lines = _write(path, kind, iterations)
    marker.write_text(f"{iterations} {lines}\n")
    return path, lines


def profile(
    trace: Path, work: Path, parts: tuple[str, ...] = PARTS, lines: int | None = None
) -> dict[str, Any]:
    """Run the processes in ``parts`` on ``trace`` with the store in ``work/store``."""
    result: dict[str, Any] = {"trace": str(trace), "lines": lines}
    for part in parts:
        result[part] = run_part(trace, work / "store", part)
    return result


def format_profile(result: dict[str, Any]) -> str:
    ingest, report = result.get("ingest", {}), result.get("report", {})
    out = [
        f"{result['trace']}: {result.get('lines') or ingest.get('events', '?')} MPI calls → "
        f"{ingest.get('vertices', '?')} vertices, {ingest.get('edges', '?')} edges; "
        f"{report.get('breakpoints', '?')} critical latencies found in [0, 100 µs] "
        f"(budget {report.get('budget', '?')} evaluations, complete: {report.get('complete')}, "
        f"{report.get('unresolved', '?')} intervals unresolved)",
        "| process | stage | time (s) | RSS before (MB) | RSS after (MB) | peak RSS (MB) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for part in PARTS:
        if part not in result:
            continue
        for s in result[part]["stages"]:
            out.append(
                f"| {part} | {s['stage']} | {s['seconds']:.2f} | {s['rss_before_mb']:.0f} | "
                f"{s['rss_after_mb']:.0f} | {s['peak_mb']:.0f} |"
            )
        peak = max(s["peak_mb"] for s in result[part]["stages"])
        total = sum(s["seconds"] for s in result[part]["stages"] if not s.get("warmup"))
        out.append(
            f"| {part} | **whole process** (without warm-up) | {total:.2f} | | | **{peak:.0f}** |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.memprofile",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--vertices", type=float, default=1e6, help="target size (e.g. 1e7)")
    parser.add_argument("--kind", default="stencil", choices=("stencil", "halo"))
    parser.add_argument("--trace", type=Path, default=None, help="profile this trace instead")
    parser.add_argument(
        "--work", type=Path, default=None, help="keep trace and store here (reused when rerun)"
    )
    parser.add_argument(
        "--parts", default="ingest,report", help="processes: ingest, report or both (default)"
    )
    parser.add_argument("--json", dest="json_out", help="also write the result to this file")
    args = parser.parse_args(argv)
    parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}: choose from {', '.join(PARTS)}")
    with tempfile.TemporaryDirectory(prefix="llamp-memprofile-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if args.trace is not None:
            trace, lines = args.trace, None
        else:
            trace, lines = write_trace(work, int(args.vertices), args.kind)
        result = profile(trace, work, parts, lines)
    print(format_profile(result))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
