"""What the schedule order costs, in CPU seconds: the schedule pass, its lowering, one point
and an 11-point sweep on the noisy 16-rank stencil — docs/model.md §Serialisation

Graph: :func:`llamp.ingest.synthetic.stencil_with_vertices` (16 ranks, a linear alltoall every
10th iteration, as ``bench_peers``) at o = 1.5 µs, G = 0, S = 65535 B, g = 0, ``--nic serial
--rendezvous loggopsim``. Every figure is the CPU time of this process (``time.process_time``:
user + system, all threads), which a loaded machine inflates far less than wall time; each
step after numba's one-time set-up (:func:`llamp.lp.jit.prepare`) and one untimed pass (the
kernels loaded or compiled):

- the schedule pass alone (:func:`llamp.lp.schedule.schedule` at L = 3 µs);
- lowering: the event graph under ``order="schedule"`` (pass included);
- one point: T and λ at L = 3 µs on a fresh engine (pass, lowering, evaluation: what
  ``llamp predict --order schedule`` computes after loading the graph);
- 11-point sweep of L over [0, 100 µs], the order fixed at L = 3 µs (one pass) and
  re-scheduled at every point (``sweep --reschedule``), each on a fresh engine;
- the checks of answers against the network's own order (wall and CPU): the x % tolerances
  fixed and under the network's own order, and a range re-scheduled at 64 values.

With ``--loggopsim PATH`` (or ``$LOGGOPSIM``; ``txt2bin`` next to it) the graph is also written
as GOAL and one LogGOPSim run at L = 3 µs is timed beside it (CPU of its process, GNU time).

``python -m benchmarks.bench_schedule [--vertices 1e6 3e6] [--loggopsim PATH]``; in the runner
(``python -m benchmarks --only schedule``) 10^6 vertices (``--quick``: 10^5).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import peak_rss_mb, row

L_NS, O_NS, S_BYTES = 3000.0, 1500.0, 65535
SWEEP_L_NS = [10_000.0 * i for i in range(11)]


def _cpu(step) -> tuple[float, Any]:
    start = time.process_time()
    result = step()
    return time.process_time() - start, result


def measure(vertices: int, loggopsim: str | None = None) -> list[dict[str, Any]]:
    from llamp.ingest.synthetic import stencil_with_vertices
    from llamp.lp import engine as engine_module
    from llamp.lp.engine import GraphEngine
    from llamp.lp.event_graph import build_event_graph
    from llamp.lp.jit import prepare
    from llamp.lp.predict import sweep_rows
    from llamp.lp.schedule import schedule
    from llamp.params import LogGPS

    prepare()
    params = LogGPS(
        L=L_NS,
        o=O_NS,
        G=0.0,
        S=S_BYTES,
        g=0.0,
        nic="serial",
        order="schedule",
        rendezvous="loggopsim",
    )
    # Every kernel loaded (or compiled) on a small stencil before timing.
    small = stencil_with_vertices(10**4, ranks=16, alltoall_every=10)
    sweep_rows(small, params, SWEEP_L_NS[:2], engine="graph", reschedule=True)
    graph = stencil_with_vertices(vertices, ranks=16, alltoall_every=10)
    case = f"stencil {graph.num_vertices:.3g} vertices"
    rows: list[dict[str, Any]] = []

    def add(what: str, seconds: float) -> None:
        rows.append(row("schedule", case, f"{what}: CPU", seconds, "s"))

    add("schedule pass alone", _cpu(lambda: schedule(graph, params))[0])
    add(
        "lowering (pass + event graph)",
        _cpu(
            lambda: build_event_graph(
                graph,
                S_BYTES,
                nic="serial",
                order="schedule",
                rendezvous="loggopsim",
                schedule_at=params.schedule_at,
            )
        )[0],
    )
    seconds, point = _cpu(lambda: GraphEngine(graph).point(params, left=False))
    add("one point (pass + lowering + T, λ)", seconds)
    for name, reschedule in (("order fixed at L = 3 µs", False), ("re-scheduled", True)):
        engine_module._ENGINES.pop(graph, None)  # a fresh engine: nothing lowered yet
        seconds, _ = _cpu(
            lambda r=reschedule: sweep_rows(graph, params, SWEEP_L_NS, engine="graph", reschedule=r)
        )
        add(f"11-point sweep, {name}", seconds)
    rows.append(row("schedule", case, "T at L = 3 µs", point.runtime_ns, "ns"))
    rows += _order_checks(graph, params, case)
    if loggopsim:
        rows.append(_loggopsim_row(graph, case, loggopsim))
    rows.append(row("schedule", case, "peak RSS", peak_rss_mb(), "MB"))
    return rows


def _order_checks(graph, params, case: str) -> list[dict[str, Any]]:
    """What the answers' checks against the network's own order cost (:mod:`llamp.lp.order_check`),
    wall and CPU seconds on the engine the sweeps left: the 1/2/5 % tolerances of L and G in the
    fixed order, the same under the network's own order (the walks), and the check of the
    range [0, 100 µs] at 64 evenly spaced values (what ``critical`` and ``report`` re-schedule at
    most)."""
    from llamp.lp.order_check import check_order, check_tolerance
    from llamp.lp.tolerance import tolerance

    out: list[dict[str, Any]] = []

    def timed(what: str, step) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        result = step()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        out.append(row("schedule", case, f"{what}: wall", wall, "s"))
        out.append(row("schedule", case, f"{what}: CPU", cpu, "s"))
        return result

    tol = timed("tolerances 1/2/5 % of L and G, order fixed", lambda: tolerance(graph, params))
    walks = timed(
        "the same under the network's own order (walks)",
        lambda: check_tolerance(graph, params, tol),
    )
    passes = sum(len(w.walk) for ws in walks.values() for w in ws)
    out.append(row("schedule", case, "passes of the walks", passes, "passes"))
    values = [100_000.0 * i / 63 for i in range(64)]
    timed(
        "order check of [0, 100 µs] at 64 values", lambda: check_order(graph, params, "L", values)
    )
    return out


def _loggopsim_row(graph, case: str, loggopsim: str) -> dict[str, Any]:
    """CPU seconds of one LogGOPSim run at L = 3 µs on the same graph written as GOAL."""
    from benchmarks.bench_peers import _loggopsim_argv, find_tools, run_process
    from llamp.ingest.goal import write_goal

    sim, t2b = find_tools(loggopsim)  # type: ignore[misc]
    with tempfile.TemporaryDirectory(prefix="llamp-bench-schedule-") as tmp:
        goal = write_goal(graph, Path(tmp) / "stencil.goal").path
        binfile = goal.with_suffix(".bin")
        run_process([t2b, "-i", goal, "-o", binfile])
        cpu: list[float] = []
        run_process(_loggopsim_argv(sim, binfile, int(L_NS)), cpu)
    return row("schedule", case, "one LogGOPSim run at L = 3 µs: CPU", cpu[0], "s")


def run(quick: bool = False, repeat: int = 1, loggopsim: str | None = None) -> list[dict[str, Any]]:
    return measure(10**5 if quick else 10**6, loggopsim or os.environ.get("LOGGOPSIM"))


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_schedule", description=__doc__
    )
    parser.add_argument("--vertices", nargs="+", default=["1e6"], help="stencil sizes")
    parser.add_argument("--loggopsim", default=os.environ.get("LOGGOPSIM"), help="binary")
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
    for vertices in args.vertices:
        for r in measure(int(float(vertices)), args.loggopsim):
            value = f"{r['value']:.3f}" if isinstance(r["value"], float) else str(r["value"])
            print(f"| {r['case']} | {r['metric']} | {value} | {r['unit']} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
