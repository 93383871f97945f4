"""GOAL read and write throughput (lines/s) on a generated ring-exchange schedule.

The schedule has, per rank and iteration, a calc (a quarter of them with fractional costs, which
the writer rounds to integral ns), an isend to the right neighbour and an irecv from the left one
that ``irequires`` the calc, both ``required`` by the next calc: ~6 lines per rank and iteration,
about 10^6 lines in the full run (10^5 with ``quick``). Every run checks the round trip (equal
to the graph with its costs rounded).
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.timing import median_time, row
from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.ingest.goal import read_goal, write_goal


def ring_schedule(ranks: int, iterations: int, seed: int = 0) -> ExecutionGraph:
    """Ranks exchange with both ring neighbours every iteration (tag = iteration), vectorised."""
    rng = np.random.default_rng(seed)
    per_rank = 3 * iterations
    n = ranks * per_rank
    r = np.repeat(np.arange(ranks), per_rank)
    slot = np.tile(np.arange(3), ranks * iterations)
    it = np.tile(np.repeat(np.arange(iterations), 3), ranks)
    kind = np.array([CALC, SEND, RECV], dtype=np.int8)[slot]
    cost = rng.integers(100, 10_000, n).astype(np.float64)
    frac = rng.random(n) < 0.25
    cost[frac] += rng.random(int(frac.sum()))
    cost[kind != CALC] = 0.0
    size = np.where(kind == CALC, 0, 8 << (it % 10))
    peer = np.select([kind == SEND, kind == RECV], [(r + 1) % ranks, (r - 1) % ranks], 0)
    tag = np.where(kind == CALC, 0, it)

    vid = np.arange(n).reshape(ranks, iterations, 3)
    calc, send, recv = vid[..., 0].ravel(), vid[..., 1].ravel(), vid[..., 2].ravel()
    nxt = vid[:, 1:, 0].ravel()
    prev_send, prev_recv = vid[:, :-1, 1].ravel(), vid[:, :-1, 2].ravel()
    right = (np.arange(ranks) + 1) % ranks
    msg_recv = vid[right, :, 2].ravel()
    src = np.concatenate((calc, calc, prev_send, prev_recv, send))
    dst = np.concatenate((send, recv, nxt, nxt, msg_recv))
    ek = np.concatenate(
        (
            np.full(calc.size, REQUIRES),
            np.full(calc.size, IREQUIRES),
            np.full(nxt.size, REQUIRES),
            np.full(nxt.size, REQUIRES),
            np.full(send.size, MESSAGE),
        )
    )
    return ExecutionGraph.from_arrays(
        ranks,
        rank=r,
        kind=kind,
        cost_ns=cost,
        size=size,
        peer=peer,
        tag=tag,
        edge_src=src,
        edge_dst=dst,
        edge_kind=ek,
        meta={"name": f"ring{ranks}x{iterations}"},
    )


def run(quick: bool, repeat: int) -> list[dict[str, Any]]:
    ranks, iterations = (32, 520) if quick else (64, 2600)
    graph = ring_schedule(ranks, iterations)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ring.goal"
        t_write, runs_w, _ = median_time(lambda: write_goal(graph, path), repeat)
        lines = path.read_bytes().count(b"\n")
        t_read, runs_r, back = median_time(lambda: read_goal(path), repeat)
        rounded = copy.copy(graph)
        rounded.cost_ns = np.rint(graph.cost_ns)
        if not back.equals(rounded):
            raise RuntimeError("GOAL round trip changed the graph")
        case = f"{lines:.3g} lines, {graph.num_vertices} vertices, {ranks} ranks"
        rows.append(row("goal", case, "read", lines / t_read, "lines/s", runs_r))
        rows.append(row("goal", case, "write", lines / t_write, "lines/s", runs_w))
        rows.append(row("goal", case, "read", t_read, "s", runs_r))
        rows.append(row("goal", case, "write", t_write, "s", runs_w))
    return rows
