"""LP engine benchmarks (docs/architecture.md §Performance targets): vectorised LP build, GLOP vs HiGHS solves, tolerance LP.

Graphs are synthetic but shaped like real traces: ``P`` ranks in a 1-D periodic halo exchange
(per iteration: a calc with random cost, Irecv left/right, Isend right/left, one Waitall) with
a recursive-doubling allreduce (Irecv/Isend/Wait and a small reduction calc per round) every
few iterations. Halo messages alternate between eager and rendezvous sizes.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from benchmarks.timing import peak_rss_mb, row
from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.lp.engine import engine_for
from llamp.lp.event_graph import build_event_graph
from llamp.lp.model import LinearProgram, build_arrays
from llamp.lp.tolerance import max_parameter_within
from llamp.params import LogGPS

BENCH = "lp"
#: LogGPS configuration of the benchmark (the paper's test-bed values, llamp/config.py).
PARAMS = LogGPS(L=3000.0, o=1500.0, G=0.018, S=256 * 1024)

_NONE, _LEFT, _RIGHT = 0, 1, 2  # peer kinds; 3 + d is the recursive-doubling partner r ^ 2^d


def _halo_template(iterations: int, allreduce_every: int, log2p: int):
    """One rank's program: ops (kind, peer kind, tag, size, cost code) and local edges."""
    ops: list[tuple[int, int, int, int, int]] = []
    edges: list[tuple[int, int, int]] = []
    tag = 0

    def add(kind: int, peer: int = _NONE, tg: int = 0, size: int = 0, cost: int = 0) -> int:
        ops.append((kind, peer, tg, size, cost))
        return len(ops) - 1

    prev = -1
    for it in range(iterations):
        calc = add(CALC, cost=1)  # cost code 1: random compute time
        if prev >= 0:
            edges.append((prev, calc, REQUIRES))
        halo = 512 * 1024 if it % 4 == 3 else 16 * 1024  # every 4th exchange is rendezvous
        reqs = [
            add(RECV, _LEFT, tag, halo),
            add(RECV, _RIGHT, tag + 1, halo),
            add(SEND, _RIGHT, tag, halo),
            add(SEND, _LEFT, tag + 1, halo),
        ]
        tag += 2
        edges.append((calc, reqs[0], REQUIRES))
        edges.extend((a, b, IREQUIRES) for a, b in zip(reqs[:-1], reqs[1:], strict=True))
        wait = add(CALC)
        edges.extend((r, wait, REQUIRES) for r in reqs)
        prev = wait
        if allreduce_every and it % allreduce_every == allreduce_every - 1:
            for d in range(log2p):
                recv = add(RECV, 3 + d, tag, 8)
                send = add(SEND, 3 + d, tag, 8)
                tag += 1
                wait = add(CALC)
                op = add(CALC, cost=2)  # cost code 2: the reduction (100 ns)
                edges += [
                    (prev, recv, REQUIRES),
                    (recv, send, IREQUIRES),
                    (recv, wait, REQUIRES),
                    (send, wait, REQUIRES),
                    (wait, op, REQUIRES),
                ]
                prev = op
    return np.array(ops, dtype=np.int64), np.array(edges, dtype=np.int64)


def halo_graph(
    num_vertices: int, ranks: int = 64, allreduce_every: int = 8, seed: int = 0
) -> ExecutionGraph:
    """A ``ranks``-rank halo-exchange graph with about ``num_vertices`` vertices (vectorised)."""
    log2p = int(np.log2(ranks))
    if 2**log2p != ranks:
        raise ValueError("ranks must be a power of two (recursive doubling)")
    per_iteration = 6 + 4 * log2p / allreduce_every
    iterations = max(1, round(num_vertices / ranks / per_iteration))
    ops, edges = _halo_template(iterations, allreduce_every, log2p)
    V_r = ops.shape[0]
    kind, peer_kind, tag, size, cost_code = ops.T
    r = np.arange(ranks, dtype=np.int64)

    def peer_of(kinds: np.ndarray) -> np.ndarray:  # (ranks, ops) peer rank
        out = np.zeros((ranks, kinds.size), dtype=np.int64)
        rr = r[:, None]
        out = np.where(kinds == _LEFT, (rr - 1) % ranks, out)
        out = np.where(kinds == _RIGHT, (rr + 1) % ranks, out)
        xor = kinds >= 3
        out = np.where(xor, rr ^ (1 << np.maximum(kinds - 3, 0)), out)
        return out

    rng = np.random.default_rng(seed)
    cost = np.where(cost_code == 1, 1.0, 0.0)[None, :] * rng.lognormal(
        np.log(20_000.0), 0.3, (ranks, V_r)
    )
    cost += np.where(cost_code == 2, 100.0, 0.0)[None, :]
    offsets = r[:, None] * V_r
    e_src = (edges[:, 0][None, :] + offsets).ravel()
    e_dst = (edges[:, 1][None, :] + offsets).ravel()
    e_kind = np.tile(edges[:, 2], ranks)
    # Messages: a send with peer kind k and tag t matches the peer's recv with the inverse
    # peer kind (left ↔ right, xor ↔ xor) and the same tag.
    sends = np.flatnonzero(kind == SEND)
    recvs = np.flatnonzero(kind == RECV)
    inverse = np.where(peer_kind == _LEFT, _RIGHT, np.where(peer_kind == _RIGHT, _LEFT, peer_kind))
    recv_of = {(int(peer_kind[j]), int(tag[j])): int(j) for j in recvs}
    match = np.array([recv_of[(int(inverse[i]), int(tag[i]))] for i in sends], dtype=np.int64)
    peers = peer_of(peer_kind)
    m_src = (sends[None, :] + offsets).ravel()
    m_dst = (match[None, :] + peers[:, sends] * V_r).ravel()
    return ExecutionGraph.from_arrays(
        ranks,
        rank=np.repeat(r, V_r),
        kind=np.tile(kind, ranks),
        cost_ns=cost.ravel(),
        size=np.tile(size, ranks),
        peer=peers.ravel(),
        tag=np.tile(tag, ranks),
        edge_src=np.concatenate((e_src, m_src)),
        edge_dst=np.concatenate((e_dst, m_dst)),
        edge_kind=np.concatenate((e_kind, np.full(m_src.size, MESSAGE, dtype=np.int64))),
        meta={"name": f"halo-{ranks}x{iterations}"},
    )


def _timed(func):
    """(wall seconds, CPU seconds of this process, result): the machine may be shared."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = func()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def _median_row(case: str, metric: str, func, repeat: int, **extra) -> tuple[dict, object]:
    runs = [_timed(func) for _ in range(max(1, repeat))]
    walls = [r[0] for r in runs]
    cpu = statistics.median(r[1] for r in runs)
    return row(BENCH, case, metric, statistics.median(walls), "s", walls, cpu_s=cpu, **extra), runs[
        -1
    ][2]


def _build_rows(n: int, repeat: int) -> list[dict]:
    graph = halo_graph(n)
    events = build_event_graph(graph, PARAMS.S)
    V = graph.num_vertices
    case = f"{V} vertices"
    build_arrays(events)  # compile the numba kernels outside the timings
    rows = []
    r, _ = _median_row(case, "LP arrays (Algorithm 1 sweep)", lambda: build_arrays(events), repeat)
    rows.append(_progress(r))
    # highs: arrays + the MathOpt model proto; glop: + loading it into the incremental GLOP.
    for solver in ("highs", "glop"):
        r, lp = _median_row(
            case,
            f"build {solver}",
            lambda s=solver: LinearProgram(events, PARAMS, solver=s),
            repeat,
        )
        r["per_million_vertices_s"] = r["value"] * 1e6 / V
        r["variables"], r["constraints"], r["nonzeros"] = (
            lp.num_variables,
            lp.num_constraints,
            int(lp.matrix.nnz),
        )
        rows.append(_progress(r))
        del lp
    rows.append(_progress(row(BENCH, case, "peak rss", peak_rss_mb(), "MB")))
    return rows


def _solve_rows(
    n: int, repeat: int, solvers: tuple[str, ...], tolerances: bool = True
) -> list[dict]:
    """Solve, warm re-solve at three new L, 1% L and G tolerance; checked against the graph
    engine. ``glop-cold`` is GLOP without the crash basis (timed once: minutes at 10^5)."""
    graph = halo_graph(n)
    events = build_event_graph(graph, PARAMS.S)
    case = f"{graph.num_vertices} vertices"
    engine = engine_for(graph)
    T0 = engine.runtime(PARAMS)
    rows = []
    for solver in solvers:
        name, _, kind = solver.partition("-")
        lp = LinearProgram(events, PARAMS, solver=name, crash_basis=kind != "cold")
        reps = 1 if kind == "cold" else repeat
        r, sol = _median_row(case, f"solve {solver}", lambda lp=lp: lp.solve(PARAMS), reps)
        r["rel_err_vs_graph"] = abs(sol.runtime_ns - T0) / T0
        rows.append(_progress(r))
        if kind == "cold":
            continue
        walls = []
        for L in (3500.0, 4000.0, 5000.0)[: max(1, repeat)]:
            wall, _, sol = _timed(lambda lp=lp, L=L: lp.solve(PARAMS.with_(L=L)))
            walls.append(wall)
            exact = engine.runtime(PARAMS.with_(L=L))
            if abs(sol.runtime_ns - exact) > 1e-9 * exact:
                raise AssertionError(f"{solver} at L={L}: T = {sol.runtime_ns} ≠ {exact}")
        rows.append(
            _progress(
                row(BENCH, case, f"re-solve {solver} (new L)", statistics.median(walls), "s", walls)
            )
        )
        if not tolerances:
            continue
        lp.solve(PARAMS)
        for parameter in ("L", "G"):
            expected = max_parameter_within(graph, PARAMS, 1.01 * T0, parameter=parameter)
            r, value = _median_row(
                case,
                f"tolerance {solver} (1% {parameter})",
                lambda lp=lp, p=parameter: lp.tolerance(1.01 * T0, parameter=p),
                1,
            )
            r["rel_err_vs_graph"] = abs(value - expected) / expected
            rows.append(_progress(r))
        del lp
    graph_wall, _, _ = _timed(lambda: engine.point(PARAMS))
    rows.append(_progress(row(BENCH, case, "graph engine point (reference)", graph_wall, "s")))
    return rows


def _progress(r: dict) -> dict:
    print(
        f"#   {r['case']}: {r['metric']} = {r['value']:.4g} {r['unit']}",
        file=sys.stderr,
        flush=True,
    )
    return r


def run(quick: bool = False, repeat: int = 3) -> list[dict]:
    """Build at 10^4–10^6 vertices; GLOP vs HiGHS at 10^4 and 10^5 (solve, re-solve, 1%
    tolerance; GLOP without its crash basis once); GLOP and one HiGHS solve at 10^6."""
    rows: list[dict] = []
    for n in [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]:
        rows += _build_rows(n, repeat)
    rows += _solve_rows(10_000, repeat, ("glop", "highs", "glop-cold"))
    if not quick:
        rows += _solve_rows(100_000, repeat, ("glop", "highs", "glop-cold"))
        rows += _solve_rows(1_000_000, 1, ("glop",))
        rows += _solve_rows(1_000_000, 1, ("highs",), tolerances=False)
    return rows
