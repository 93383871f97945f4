"""Random, deadlock-free execution graphs for property tests.

A random MPI program is drawn as one global sequence of steps (calc on a rank, a blocking
send/recv pair, an isend/irecv pair, a wait of a pending request); every rank executes its
steps in that global order, so the program cannot deadlock even under rendezvous, and the
graph follows the trace→graph rules of docs/architecture.md §Ingest (calc → op → calc chains, ``irequires``
from a nonblocking op to the next calc, the calc after a wait ``requires`` the op).
"""

from __future__ import annotations

import numpy as np

from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph


class _Rank:
    def __init__(self) -> None:
        self.vertices: list[tuple[int, float, int, int, int]] = []  # kind, cost, size, peer, tag
        self.edges: list[tuple[int, int, int]] = []  # local src, local dst, kind
        self.last_calc = self.add(CALC, 0.0)
        self.pending_irequires: list[int] = []  # ops the next calc irequires
        self.pending_requires: list[int] = []  # ops the next calc requires (blocking, waits)
        self.requests: list[int] = []

    def add(self, kind: int, cost: float = 0.0, size: int = 0, peer: int = 0, tag: int = 0) -> int:
        self.vertices.append((kind, cost, size, peer, tag))
        return len(self.vertices) - 1

    def op(self, kind: int, size: int, peer: int, tag: int, blocking: bool) -> int:
        v = self.add(kind, 0.0, size, peer, tag)
        self.edges.append((self.last_calc, v, REQUIRES))
        if blocking:
            self.pending_requires.append(v)
        else:
            self.pending_irequires.append(v)
            self.requests.append(v)
        return v

    def calc(self, cost: float) -> None:
        v = self.add(CALC, cost)
        self.edges.append((self.last_calc, v, REQUIRES))
        for u in self.pending_requires:
            self.edges.append((u, v, REQUIRES))
        for u in self.pending_irequires:
            self.edges.append((u, v, IREQUIRES))
        self.pending_requires, self.pending_irequires = [], []
        self.last_calc = v


def random_graph(
    seed: int,
    *,
    ranks: int = 3,
    steps: int = 30,
    max_size: int = 4096,
    nonblocking: float = 0.4,
) -> ExecutionGraph:
    """A random deadlock-free graph of ``ranks`` ranks and about ``steps`` global steps."""
    rng = np.random.default_rng(seed)
    progs = [_Rank() for _ in range(ranks)]
    messages: list[tuple[int, int, int, int]] = []  # src rank, src local, dst rank, dst local
    for _ in range(steps):
        what = rng.random()
        if what < 0.35 or ranks == 1:
            r = int(rng.integers(ranks))
            progs[r].calc(float(rng.integers(0, 5000)))
        elif what < 0.85:
            a, b = (int(x) for x in rng.choice(ranks, size=2, replace=False))
            size = int(rng.integers(0, max_size + 1))
            tag = int(rng.integers(0, 3))
            blocking = rng.random() >= nonblocking
            s = progs[a].op(SEND, size, b, tag, blocking)
            r_ = progs[b].op(RECV, size, a, tag, rng.random() >= nonblocking)
            messages.append((a, s, b, r_))
            progs[a].calc(float(rng.integers(0, 300)))
            progs[b].calc(float(rng.integers(0, 300)))
        else:
            r = int(rng.integers(ranks))
            prog = progs[r]
            if prog.requests:
                k = int(rng.integers(1, len(prog.requests) + 1))
                done, prog.requests = prog.requests[:k], prog.requests[k:]
                prog.pending_requires.extend(done)
                prog.calc(float(rng.integers(0, 200)))
    for prog in progs:  # final Waitall
        prog.pending_requires.extend(prog.requests)
        prog.requests = []
        prog.calc(float(rng.integers(0, 100)))
    offsets = np.cumsum([0] + [len(p.vertices) for p in progs])
    rank, kind, cost, size, peer, tag = [], [], [], [], [], []
    esrc, edst, ekind = [], [], []
    for r, prog in enumerate(progs):
        for k, c, s, p, t in prog.vertices:
            rank.append(r)
            kind.append(k)
            cost.append(c)
            size.append(s)
            peer.append(p)
            tag.append(t)
        for u, v, k in prog.edges:
            esrc.append(offsets[r] + u)
            edst.append(offsets[r] + v)
            ekind.append(k)
    for a, s, b, r_ in messages:
        esrc.append(offsets[a] + s)
        edst.append(offsets[b] + r_)
        ekind.append(MESSAGE)
    return ExecutionGraph.from_arrays(
        ranks,
        rank=rank,
        kind=kind,
        cost_ns=cost,
        size=size,
        peer=peer,
        tag=tag,
        edge_src=esrc,
        edge_dst=edst,
        edge_kind=ekind,
        meta={"name": f"random-{seed}"},
    )
