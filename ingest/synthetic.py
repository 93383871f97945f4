"""Synthetic execution graphs of realistic MPI patterns, generated vectorised (benchmarks, demos).

The pattern is an iterative stencil code, as LULESH/MILC-like applications are:

* every iteration, each rank computes (cost drawn around ``compute_ns`` with per-rank load
  imbalance and per-iteration noise), posts an ``Irecv`` and an ``Isend`` of ``halo_bytes``
  to each neighbour on a periodic 1-D or 2-D grid, computes its interior while the messages
  fly (``irequires``), and waits for all of them before the boundary compute;
* every ``allreduce_every`` iterations, a recursive-doubling allreduce of ``allreduce_bytes``
  (log2 P rounds of send/recv with the XOR partner);
* every ``alltoall_every`` iterations, a linear alltoall of ``alltoall_bytes`` per pair.

The graph is built with numpy from a per-iteration template: no Python loop per vertex, so
10^7 vertices take a few seconds. Same seed, same graph.

:func:`write_liballprof` writes the same program as the liballprof trace it would leave
(``Irecv``/``Isend``/``Waitall``, ``MPI_Allreduce``, ``MPI_Alltoall``, compute as the gaps
between calls), so the benchmarks can time ingest and the whole pipeline on it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numba
import numpy as np

from llamp.errors import InputError
from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph


@dataclass(frozen=True)
class StencilPattern:
    """Parameters of :func:`stencil_graph` (sizes in bytes, costs in ns)."""

    ranks: int = 16
    iterations: int = 100
    dims: int = 2
    compute_ns: float = 20_000.0
    interior_fraction: float = 0.7
    imbalance: float = 0.1
    noise: float = 0.05
    halo_bytes: int = 8192
    allreduce_every: int = 1
    allreduce_bytes: int = 8
    alltoall_every: int = 0
    alltoall_bytes: int = 1024
    seed: int = 0


def _neighbours(ranks: int, dims: int) -> np.ndarray:
    """``nb[r, k]``: the k-th neighbour of rank r on a periodic grid; ``k ^ 1`` is its opposite."""
    r = np.arange(ranks)
    if dims == 1:
        return np.stack([(r - 1) % ranks, (r + 1) % ranks], axis=1)
    px = int(np.sqrt(ranks))
    while ranks % px:
        px -= 1
    py = ranks // px
    x, y = r % px, r // px
    return np.stack(
        [
            ((x - 1) % px) + y * px,
            ((x + 1) % px) + y * px,
            x + ((y - 1) % py) * px,
            x + ((y + 1) % py) * px,
        ],
        axis=1,
    )


def vertices_per_iteration(pattern: StencilPattern) -> float:
    """Average vertices per rank and iteration (to size a graph for a target vertex count)."""
    K = 2 * pattern.dims
    base = 3 + 2 * K
    rounds = int(np.log2(pattern.ranks)) if pattern.ranks > 1 else 0
    extra = 0.0
    if pattern.allreduce_every:
        extra += 3 * rounds / pattern.allreduce_every
    if pattern.alltoall_every:
        extra += (2 * (pattern.ranks - 1) + 1) / pattern.alltoall_every
    return base + extra


def _stencil_draws(p: StencilPattern):
    """What :func:`stencil_graph` and the streamed GOAL writer share: the checks, neighbours,
    allreduce/alltoall iteration flags and the per-(rank, iteration) compute draws (seeded,
    drawn in one order, so both give the same numbers)."""
    P, n_iter = p.ranks, p.iterations
    if P < 2 or n_iter < 1:
        raise InputError("a stencil graph needs at least 2 ranks and 1 iteration")
    if p.dims not in (1, 2):
        raise InputError("dims must be 1 or 2")
    rounds = int(np.log2(P))
    if p.allreduce_every and 2**rounds != P:
        raise InputError(f"recursive-doubling allreduce needs a power-of-two rank count, got {P}")
    rng = np.random.default_rng(p.seed)
    nb = _neighbours(P, p.dims)
    it = np.arange(n_iter)
    every = (p.allreduce_every, p.alltoall_every)
    has_ar, has_a2a = ((it % e == e - 1) if e else np.zeros(n_iter, bool) for e in every)
    load = 1.0 + p.imbalance * rng.standard_normal(P)[:, None]
    jitter = 1.0 + p.noise * rng.standard_normal((P, n_iter))
    work = np.maximum(p.compute_ns * load * jitter, 0.0)
    return nb, nb.shape[1], rounds, has_ar, has_a2a, work


def stencil_graph(pattern: StencilPattern | None = None, **overrides) -> ExecutionGraph:
    """Build the graph of :class:`StencilPattern` (fields may be overridden by keyword)."""
    p = pattern or StencilPattern()
    if overrides:
        p = StencilPattern(**(asdict(p) | overrides))
    P, n_iter = p.ranks, p.iterations
    nb, K, rounds, has_ar, has_a2a, work = _stencil_draws(p)
    # Local layout of one iteration: [compute, K recvs, K sends, interior, boundary,
    #   (allreduce: per round send, recv, join), (alltoall: P−1 recvs, P−1 sends, join)]
    halo_block = 3 + 2 * K
    ar_block = 3 * rounds
    a2a_block = 2 * (P - 1) + 1
    block = halo_block + has_ar * ar_block + has_a2a * a2a_block
    it_off = np.concatenate(([0], np.cumsum(block)))  # local offset of each iteration
    n_local = int(it_off[-1]) + 1  # + final calc
    V = P * n_local
    rank_off = np.arange(P, dtype=np.int64) * n_local

    rank = np.repeat(np.arange(P, dtype=np.int32), n_local)
    kind = np.full(V, CALC, dtype=np.int8)
    cost = np.zeros(V)
    size = np.zeros(V, dtype=np.int64)
    peer = np.zeros(V, dtype=np.int32)
    tag = np.zeros(V, dtype=np.int64)
    e_src: list[np.ndarray] = []
    e_dst: list[np.ndarray] = []
    e_kind: list[np.ndarray] = []

    def edges(src: np.ndarray, dst: np.ndarray, k: int) -> None:
        src, dst = np.broadcast_arrays(np.asarray(src, np.int64), np.asarray(dst, np.int64))
        e_src.append(src.ravel())
        e_dst.append(dst.ravel())
        e_kind.append(np.full(src.size, k, dtype=np.int8))

    R = np.arange(P)[:, None]  # ranks × iterations grids
    base = rank_off[:, None] + it_off[None, :-1]  # vertex id of each (rank, iteration) compute
    comp, interior, boundary = base, base + 1 + 2 * K, base + 2 + 2 * K
    cost[comp] = work * (1 - p.interior_fraction) / 2
    cost[interior] = work * p.interior_fraction
    cost[boundary] = work * (1 - p.interior_fraction) / 2
    for k in range(K):
        rv, sv = base + 1 + k, base + 1 + K + k
        kind[rv], kind[sv] = RECV, SEND
        size[rv] = size[sv] = p.halo_bytes
        peer[rv] = np.broadcast_to(nb[:, k][:, None], rv.shape)
        peer[sv] = np.broadcast_to(nb[:, k][:, None], sv.shape)
        tag[rv] = k ^ 1  # receiving from neighbour k, which sent toward its neighbour k^1 = me
        tag[sv] = k
        edges(comp, rv, REQUIRES)
        edges(comp, sv, REQUIRES)
        edges(rv, interior, IREQUIRES)
        edges(sv, interior, IREQUIRES)
        edges(rv, boundary, REQUIRES)
        edges(sv, boundary, REQUIRES)
        # message: my send toward neighbour k is that neighbour's recv slot k^1
        dst_rank = nb[:, k][:, None]
        dst_recv = rank_off[dst_rank] + it_off[None, :-1] + 1 + (k ^ 1)
        edges(sv, dst_recv, MESSAGE)
    edges(comp, interior, REQUIRES)
    edges(interior, boundary, REQUIRES)
    # Chain: boundary (or the last collective join) → next iteration's compute.
    last = boundary.copy()
    ar_it = np.flatnonzero(has_ar)
    if ar_it.size and rounds:
        first = rank_off[:, None] + it_off[None, ar_it] + halo_block
        prev = boundary[:, ar_it]
        for rd in range(rounds):
            s_v, r_v, j_v = first + 3 * rd, first + 3 * rd + 1, first + 3 * rd + 2
            partner = (R ^ (1 << rd)) + np.zeros_like(s_v)
            kind[s_v], kind[r_v] = SEND, RECV
            size[s_v] = size[r_v] = p.allreduce_bytes
            peer[s_v] = peer[r_v] = partner
            tag[s_v] = tag[r_v] = 100 + rd
            edges(prev, s_v, REQUIRES)
            edges(prev, r_v, REQUIRES)
            edges(s_v, j_v, REQUIRES)
            edges(r_v, j_v, REQUIRES)
            edges(s_v, rank_off[partner] + (r_v - rank_off[:, None]), MESSAGE)
            prev = j_v
        last[:, ar_it] = prev
    a2a_it = np.flatnonzero(has_a2a)
    if a2a_it.size:
        start = rank_off[:, None] + it_off[None, a2a_it] + halo_block + has_ar[a2a_it] * ar_block
        prev = last[:, a2a_it]
        join = start + 2 * (P - 1)
        for j in range(1, P):
            r_v, s_v = start + (j - 1), start + (P - 1) + (j - 1)
            to = (R + j) % P + np.zeros_like(s_v)
            frm = (R - j) % P + np.zeros_like(r_v)
            kind[r_v], kind[s_v] = RECV, SEND
            size[r_v] = size[s_v] = p.alltoall_bytes
            peer[r_v], peer[s_v] = frm, to
            tag[r_v] = tag[s_v] = 200
            edges(prev, r_v, REQUIRES)
            edges(prev, s_v, REQUIRES)
            edges(r_v, join, REQUIRES)
            edges(s_v, join, REQUIRES)
            # my send to (r + j) is that rank's recv from (its − j) = slot j
            edges(s_v, rank_off[to] + (r_v - rank_off[:, None]), MESSAGE)
        last[:, a2a_it] = join
    nxt = rank_off[:, None] + it_off[None, 1:]
    edges(last, nxt, REQUIRES)
    return ExecutionGraph.from_arrays(
        P,
        rank=rank,
        kind=kind,
        cost_ns=cost,
        size=size,
        peer=peer,
        tag=tag,
        edge_src=np.concatenate(e_src),
        edge_dst=np.concatenate(e_dst),
        edge_kind=np.concatenate(e_kind),
        meta={"name": f"stencil-{P}x{n_iter}", "format": "synthetic", "pattern": asdict(p)},
    )


def stencil_with_vertices(target: int, *, ranks: int = 16, **overrides) -> ExecutionGraph:
    """A stencil graph of about ``target`` vertices (iterations chosen to match)."""
    pattern = StencilPattern(ranks=ranks, **overrides)
    return stencil_graph(pattern, iterations=iterations_for(target, pattern))


def _pattern(pattern: StencilPattern | None, overrides: dict) -> StencilPattern:
    p = pattern or StencilPattern()
    return StencilPattern(**(asdict(p) | overrides)) if overrides else p


def _us(t_us: float, ns: float) -> str:
    """A liballprof timestamp: µs with ns resolution."""
    return f"{t_us + ns / 1000.0:.3f}"


#: Duration of a nonblocking call and of a blocking one (Waitall, collectives) in the trace.
_POST_NS, _BLOCK_NS = 300.0, 1_000.0
_DOUBLE = "1,8,8"  # liballprof datatype: id, size, extent
_SUM = 3


def write_liballprof(
    directory: str | Path, pattern: StencilPattern | None = None, **overrides
) -> int:
    """Write :class:`StencilPattern` as a liballprof trace in ``directory`` (one
    ``pmpi-trace-rank-<r>.txt`` per rank); return its number of MPI call lines.

    Per iteration and rank: the first part of the compute, an ``MPI_Irecv`` and an
    ``MPI_Isend`` per neighbour (tags as in :func:`stencil_graph`), the interior compute, one
    ``MPI_Waitall``, the boundary compute; then ``MPI_Allreduce`` and ``MPI_Alltoall`` as the
    pattern says. The compute gaps carry the same imbalance and noise draws as
    :func:`stencil_graph` (same seed, same trace). Ingest expands the collectives with its
    algorithms, so the graph has the stencil's shape, not exactly its vertex count.
    """
    p = _pattern(pattern, overrides)
    P, n_iter = p.ranks, p.iterations
    if P < 2 or n_iter < 1:
        raise InputError("a stencil trace needs at least 2 ranks and 1 iteration")
    if p.dims not in (1, 2):
        raise InputError("dims must be 1 or 2")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(p.seed)  # the draws of stencil_graph, in its order
    load = 1.0 + p.imbalance * rng.standard_normal(P)[:, None]
    jitter = 1.0 + p.noise * rng.standard_normal((P, n_iter))
    work = np.maximum(p.compute_ns * load * jitter, 0.0)
    edge = work * (1 - p.interior_fraction) / 2
    inner = work * p.interior_fraction
    nb = _neighbours(P, p.dims)
    K = nb.shape[1]
    it = np.arange(n_iter)
    has_ar = (it % p.allreduce_every == p.allreduce_every - 1) if p.allreduce_every else it < 0
    has_a2a = (it % p.alltoall_every == p.alltoall_every - 1) if p.alltoall_every else it < 0
    halo_count = max(p.halo_bytes // 8, 1)
    a2a_count = max(p.alltoall_bytes // 8, 1)
    requests = 140737488339000  # base of the request array (Open MPI stride: 8 bytes)
    lines_total = 0
    for r in range(P):
        comm = f"140737354006016,{r},{P}"
        t = 1_000_000.0 + r  # µs

        lines = [
            "# htor's PMPI Tracer 1.0 Output File",
            "# clockdiff: 0.000000 s (relative to rank 0)",
            "",
            f"MPI_Init:-:140737488343500:140737488344604:{t:.3f}",
        ]
        for i in range(n_iter):
            ns = float(edge[r, i])
            for k in range(K):
                lines.append(
                    f"MPI_Irecv:{_us(t, ns)}:94000000:{halo_count}:{_DOUBLE}:{nb[r, k]}:{k ^ 1}:"
                    f"{comm}:{requests + 8 * k}:{_us(t, ns + _POST_NS)}"
                )
                ns += _POST_NS
            for k in range(K):
                lines.append(
                    f"MPI_Isend:{_us(t, ns)}:94100000:{halo_count}:{_DOUBLE}:{nb[r, k]}:{k}:"
                    f"{comm}:{requests + 8 * (K + k)}:{_us(t, ns + _POST_NS)}"
                )
                ns += _POST_NS
            ns += float(inner[r, i])
            lines.append(f"MPI_Waitall:{_us(t, ns)}:{2 * K}:{requests}:1:{_us(t, ns + _BLOCK_NS)}")
            ns += _BLOCK_NS + float(edge[r, i])
            if has_ar[i]:
                lines.append(
                    f"MPI_Allreduce:{_us(t, ns)}:94200000:94300000:{max(p.allreduce_bytes // 8, 1)}:"
                    f"{_DOUBLE}:{_SUM}:{comm}:{_us(t, ns + _BLOCK_NS)}"
                )
                ns += _BLOCK_NS
            if has_a2a[i]:
                lines.append(
                    f"MPI_Alltoall:{_us(t, ns)}:94400000:{a2a_count}:{_DOUBLE}:94500000:{a2a_count}:"
                    f"{_DOUBLE}:{comm}:{_us(t, ns + _BLOCK_NS)}"
                )
                ns += _BLOCK_NS
            t += ns / 1000.0
        lines.append("# Finalize clockdiff: 0.000000")
        lines.append(f"MPI_Finalize:{t + 1:.3f}:-")
        (out / f"pmpi-trace-rank-{r}.txt").write_text("\n".join(lines) + "\n")
        lines_total += sum(1 for line in lines if line.startswith("MPI_"))
    return lines_total


# --------------------------------------------------------------------------- GOAL, streamed


@dataclass(frozen=True)
class StencilGoal:
    """What :func:`write_stencil_goal` wrote."""

    path: Path
    ranks: int
    iterations: int
    vertices: int
    lines: int
    bytes: int


def _stencil_layout(p: StencilPattern):
    """The per-iteration layout and compute draws of :func:`stencil_graph` (same seed, same
    numbers): local iteration offsets, allreduce/alltoall flags, and the three calc costs per
    (rank, iteration) rounded to integral ns as :func:`write_goal` writes them."""
    P = p.ranks
    nb, K, rounds, has_ar, has_a2a, work = _stencil_draws(p)
    if not rounds:
        has_ar = np.zeros(p.iterations, bool)
    block = 3 + 2 * K + has_ar * (3 * rounds) + has_a2a * (2 * (P - 1) + 1)
    it_off = np.concatenate(([0], np.cumsum(block))).astype(np.int64)
    edge = np.rint(work * (1 - p.interior_fraction) / 2).astype(np.int64)
    inner = np.rint(work * p.interior_fraction).astype(np.int64)
    return nb.astype(np.int64), K, rounds, it_off, has_ar, has_a2a, edge, inner


@numba.njit(cache=True, nogil=True)
def _put_int(out, at, v):  # pragma: no cover - compiled
    if v < 0:
        out[at] = 45
        at += 1
        v = -v
    n = 1
    t = v
    while t >= 10:
        t //= 10
        n += 1
    q = at + n - 1
    while q >= at:
        out[q] = 48 + v % 10
        v //= 10
        q -= 1
    return at + n


@numba.njit(cache=True, nogil=True)
def _put(out, at, text):  # pragma: no cover - compiled
    for q in range(text.shape[0]):
        out[at + q] = text[q]
    return at + text.shape[0]


@numba.njit(cache=True, nogil=True)
def _op_line(out, at, words, op, label, a, b, c):  # pragma: no cover - compiled
    """``l<label>: calc <a>`` (op 0), ``… send <a>b to <b> tag <c>`` (1), ``… recv … from`` (2)."""
    out[at] = 108
    at = _put_int(out, at + 1, label)
    if op == 0:
        at = _put(out, at, words[0])
        at = _put_int(out, at, a)
    else:
        at = _put(out, at, words[1] if op == 1 else words[2])
        at = _put_int(out, at, a)
        at = _put(out, at, words[3] if op == 1 else words[4])
        at = _put_int(out, at, b)
        at = _put(out, at, words[5])
        at = _put_int(out, at, c)
    out[at] = 10
    return at + 1


@numba.njit(cache=True, nogil=True)
def _dep_line(out, at, words, later, earlier, irequires):  # pragma: no cover - compiled
    out[at] = 108
    at = _put_int(out, at + 1, later)
    at = _put(out, at, words[7] if irequires else words[6])
    at = _put_int(out, at, earlier)
    out[at] = 10
    return at + 1


@numba.njit(cache=True, nogil=True)
def _stencil_goal_text(
    out, words, r, i0, i1, n_iter, it_off, has_ar, has_a2a, edge, inner, nb, P, K, rounds, sizes
):  # pragma: no cover - compiled
    """The GOAL lines of iterations [i0, i1) of rank ``r`` (and its final calc when i1 is the
    last), in :func:`write_goal`'s order: ops by vertex, each dependency after its later op, in
    the edge order of :func:`stencil_graph`. Labels are 1-based local ids. Returns (bytes, lines)."""
    halo, ar_bytes, a2a_bytes = sizes[0], sizes[1], sizes[2]
    at = 0
    lines = 0
    last = -1
    if i0 > 0:  # the previous iteration's last op, for the chain into this one
        j = i0 - 1
        last = it_off[j] + 2 + 2 * K
        if has_ar[j]:
            last = it_off[j] + 3 + 2 * K + 3 * rounds - 1
        if has_a2a[j]:
            last = it_off[j + 1] - 1
    for i in range(i0, i1):
        o = it_off[i]
        comp = o
        at = _op_line(out, at, words, 0, comp + 1, edge[r, i], 0, 0)
        lines += 1
        if last >= 0:
            at = _dep_line(out, at, words, comp + 1, last + 1, False)
            lines += 1
        for k in range(K):
            at = _op_line(out, at, words, 2, o + 2 + k, halo, nb[r, k], k ^ 1)
            at = _dep_line(out, at, words, o + 2 + k, comp + 1, False)
            lines += 2
        for k in range(K):
            at = _op_line(out, at, words, 1, o + 2 + K + k, halo, nb[r, k], k)
            at = _dep_line(out, at, words, o + 2 + K + k, comp + 1, False)
            lines += 2
        interior = o + 1 + 2 * K
        at = _op_line(out, at, words, 0, interior + 1, inner[r, i], 0, 0)
        lines += 1
        for k in range(K):
            at = _dep_line(out, at, words, interior + 1, o + 2 + k, True)
            at = _dep_line(out, at, words, interior + 1, o + 2 + K + k, True)
            lines += 2
        at = _dep_line(out, at, words, interior + 1, comp + 1, False)
        boundary = interior + 1
        at = _op_line(out, at, words, 0, boundary + 1, edge[r, i], 0, 0)
        lines += 2
        for k in range(K):
            at = _dep_line(out, at, words, boundary + 1, o + 2 + k, False)
            at = _dep_line(out, at, words, boundary + 1, o + 2 + K + k, False)
            lines += 2
        at = _dep_line(out, at, words, boundary + 1, interior + 1, False)
        lines += 1
        last = boundary
        nxt = boundary + 1
        if has_ar[i]:
            for rd in range(rounds):
                s, rv, jn = nxt + 3 * rd, nxt + 3 * rd + 1, nxt + 3 * rd + 2
                partner = r ^ (1 << rd)
                at = _op_line(out, at, words, 1, s + 1, ar_bytes, partner, 100 + rd)
                at = _dep_line(out, at, words, s + 1, last + 1, False)
                at = _op_line(out, at, words, 2, rv + 1, ar_bytes, partner, 100 + rd)
                at = _dep_line(out, at, words, rv + 1, last + 1, False)
                at = _op_line(out, at, words, 0, jn + 1, 0, 0, 0)
                at = _dep_line(out, at, words, jn + 1, s + 1, False)
                at = _dep_line(out, at, words, jn + 1, rv + 1, False)
                lines += 7
                last = jn
            nxt += 3 * rounds
        if has_a2a[i]:
            start = nxt
            for j in range(1, P):
                rv = start + j - 1
                at = _op_line(out, at, words, 2, rv + 1, a2a_bytes, (r - j) % P, 200)
                at = _dep_line(out, at, words, rv + 1, last + 1, False)
                lines += 2
            for j in range(1, P):
                s = start + P - 1 + j - 1
                at = _op_line(out, at, words, 1, s + 1, a2a_bytes, (r + j) % P, 200)
                at = _dep_line(out, at, words, s + 1, last + 1, False)
                lines += 2
            join = start + 2 * (P - 1)
            at = _op_line(out, at, words, 0, join + 1, 0, 0, 0)
            lines += 1
            for j in range(1, P):
                at = _dep_line(out, at, words, join + 1, start + j, False)
                at = _dep_line(out, at, words, join + 1, start + P - 1 + j, False)
                lines += 2
            last = join
    if i1 == n_iter:
        final = it_off[n_iter]
        at = _op_line(out, at, words, 0, final + 1, 0, 0, 0)
        at = _dep_line(out, at, words, final + 1, last + 1, False)
        lines += 2
    return at, lines


def _goal_words() -> numba.typed.List:
    words = numba.typed.List()
    for w in (
        ": calc ",
        ": send ",
        ": recv ",
        "b to ",
        "b from ",
        " tag ",
        " requires l",
        " irequires l",
    ):
        words.append(np.frombuffer(w.encode(), np.uint8).copy())
    return words


#: Text generated per batch of iterations (at most ~64 bytes a line).
_BATCH_BYTES = 16 << 20


def write_stencil_goal(
    path: str | Path,
    pattern: StencilPattern | None = None,
    *,
    progress: bool = False,
    **overrides,
) -> StencilGoal:
    """Write the graph of :class:`StencilPattern` as GOAL without building it (streamed).

    The file is byte for byte what ``write_goal(stencil_graph(pattern), path)`` writes (costs
    rounded to integral ns), generated per rank in batches of iterations by a compiled
    formatter, so memory stays at a few tens of MB whatever the size (10^8 vertices: ~7 GB of
    text). ``progress`` shows vertices written on stderr. Written atomically (temp + rename).
    """
    p = _pattern(pattern, overrides)
    nb, K, rounds, it_off, has_ar, has_a2a, edge, inner = _stencil_layout(p)
    P, n_iter = p.ranks, p.iterations
    n_local = int(it_off[-1]) + 1
    sizes = np.array([p.halo_bytes, p.allreduce_bytes, p.alltoall_bytes], np.int64)
    words = _goal_words()
    per_iter_lines = 1 + 4 * K + 4 * K + 3 + 7 * rounds + 6 * (P - 1) + 4
    batch = max(1, _BATCH_BYTES // (per_iter_lines * 64))
    out = np.empty(per_iter_lines * 64 * batch + 256, np.uint8)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=P * n_local, unit=" vertices", unit_scale=True, desc="writing GOAL", leave=False
        )
    lines_total, nbytes = 1, 0
    try:
        with open(tmp, "wb") as f:
            header = f"num_ranks {P}\n".encode()
            f.write(header)
            nbytes += len(header)
            for r in range(P):
                head = f"\nrank {r} {{\n".encode()
                f.write(head)
                nbytes += len(head)
                lines_total += 2
                for i0 in range(0, n_iter, batch):
                    i1 = min(n_iter, i0 + batch)
                    used, lines = _stencil_goal_text(
                        out, words, r, i0, i1, n_iter, it_off, has_ar, has_a2a, edge, inner, nb,
                        P, K, rounds, sizes,
                    )  # fmt: skip
                    f.write(memoryview(out)[:used])
                    nbytes += int(used)
                    lines_total += int(lines)
                    if bar is not None:
                        bar.update(int(it_off[i1] - it_off[i0]) + (1 if i1 == n_iter else 0))
                f.write(b"}\n")
                nbytes += 2
                lines_total += 1
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
        if bar is not None:
            bar.close()
    return StencilGoal(path, P, n_iter, P * n_local, lines_total, nbytes)


def iterations_for(target: int, pattern: StencilPattern) -> int:
    """Iterations that give a stencil graph of about ``target`` vertices."""
    per_iter = vertices_per_iteration(pattern) * pattern.ranks
    return max(1, int(round(target / per_iter)))
