"""GOAL read and write throughput (lines/s), and ingest side by side with LogGOPSim's txt2bin.

Throughput: a generated ring-exchange schedule.
The schedule has, per rank and iteration, a calc (a quarter of them with fractional costs, which
the writer rounds to integral ns), an isend to the right neighbour and an irecv from the left one
that ``irequires`` the calc, both ``required`` by the next calc: ~6 lines per rank and iteration,
about 10^6 lines in the full run (10^5 with ``quick``). Every run checks the round trip (equal
to the graph with its costs rounded).

Versus txt2bin (ingest of the 10^6-vertex stencil GOAL within 2× of txt2bin): the
noisy 16-rank stencil of :func:`llamp.ingest.synthetic.write_stencil_goal` at 10^5 and 10^6
vertices (``quick``: 10^5), each a whole process as a user runs it (interpreter start-up
included; ``llamp ingest X.goal -o X.npz`` also lowers and saves the event graph), wall time
and peak RSS, median of ``repeat``, the two tools alternating. Needs ``txt2bin``:
``python -m benchmarks --only goal --txt2bin PATH`` (or ``$TXT2BIN``, or next to
``--loggopsim``/``$LOGGOPSIM``); without one those rows are skipped with a note.
"""

from __future__ import annotations

import copy
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.timing import median_time, row
from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.ingest.goal import read_goal, write_goal
from llamp.ingest.synthetic import StencilPattern, iterations_for, write_stencil_goal


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


def run(quick: bool, repeat: int, loggopsim: str | None = None) -> list[dict[str, Any]]:
    ranks, iterations = (32, 520) if quick else (64, 2600)
    graph = ring_schedule(ranks, iterations)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ring.goal"
        write_goal(ring_schedule(2, 2), path)
        read_goal(path)  # warm-up: load the compiled tokenizer once per process
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
        txt2bin = find_txt2bin(loggopsim)
        if txt2bin is None:
            print(
                "#   goal: no txt2bin (--txt2bin, $TXT2BIN or $LOGGOPSIM): versus-txt2bin rows "
                "skipped",
                file=sys.stderr,
            )
        else:
            sizes = [100_000] if quick else [100_000, 1_000_000]
            rows += versus_txt2bin(txt2bin, sizes, repeat, Path(tmp))
    return rows


# --------------------------------------------------------------------------- versus txt2bin


def find_txt2bin(loggopsim: str | None = None) -> Path | None:
    """LogGOPSim's ``txt2bin``: ``$TXT2BIN`` (``--txt2bin``), else next to ``--loggopsim`` /
    ``$LOGGOPSIM``; ``None`` when neither is set."""
    given = os.environ.get("TXT2BIN")
    if given:
        path = Path(given)
    else:
        sim = loggopsim or os.environ.get("LOGGOPSIM")
        if not sim:
            return None
        path = Path(sim).with_name("txt2bin")
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise SystemExit(f"txt2bin {path}: not an executable file")
    return path


def versus_txt2bin(
    txt2bin: Path, sizes: list[int], repeat: int, workdir: Path
) -> list[dict[str, Any]]:
    """Whole processes on the same stencil GOAL file: ``llamp ingest X.goal -o X.npz`` (read,
    validate, lower, save) against ``txt2bin -i X.goal -o X.bin``, run back to back in
    alternating order (median of ``repeat``), and ``read_goal`` alone in this process."""
    from benchmarks.bench_peers import run_process

    rows: list[dict[str, Any]] = []
    pattern = StencilPattern(ranks=16, alltoall_every=10)
    for target in sizes:
        goal = workdir / f"stencil-{target}.goal"
        written = write_stencil_goal(goal, pattern, iterations=iterations_for(target, pattern))
        case = f"stencil {written.vertices:.3g} vertices, {written.bytes / 1e6:.0f} MB GOAL"
        ours = [sys.executable, "-m", "llamp", "ingest", goal, "-o", workdir / "x.npz"]
        ours.append("--no-progress")
        theirs = [txt2bin, "-i", goal, "-o", workdir / "x.bin"]
        t_ours, t_theirs, m_ours, m_theirs = [], [], [], []
        for k in range(max(1, repeat)):
            for side in (0, 1) if k % 2 == 0 else (1, 0):
                seconds, peak, _ = run_process(ours if side == 0 else theirs)
                (t_ours if side == 0 else t_theirs).append(seconds)
                (m_ours if side == 0 else m_theirs).append(peak)
        read_s, runs, _ = median_time(lambda goal=goal: read_goal(goal), repeat)
        a, b = statistics.median(t_ours), statistics.median(t_theirs)
        rows += [
            row("goal", case, "ingest to .npz (whole process)", a, "s", t_ours),
            row("goal", case, "txt2bin (whole process)", b, "s", t_theirs),
            row("goal", case, "ingest / txt2bin time", a / b, "×"),
            row("goal", case, "read_goal alone (in process)", read_s, "s", runs),
            row("goal", case, "read_goal / txt2bin time", read_s / b, "×"),
            row("goal", case, "ingest peak RSS", max(m_ours), "MB"),
            row("goal", case, "txt2bin peak RSS", max(m_theirs), "MB"),
        ]
        goal.unlink()
    return rows
