"""The start/finish event graph of an execution graph under LogGPS (docs/model.md).

Both engines evaluate this graph, so they implement one semantics. Every vertex ``v`` has a
start event ``2v`` and a finish event ``2v+1``; the ``j``-th rendezvous message adds a
handshake event ``2V + j`` (the RTS has arrived and the receive is posted), and the ``i``-th
analytic collective instance (``coll`` vertices, see :mod:`llamp.graph`) a sync event
``2V + H + i`` (every member has entered it; ``H`` handshakes). An event edge ``a → b``
carries a weight that is affine in the parameters::

    w = const + cL·L + cG·G + co·o + cg·g

and ``time(b) = max over in-edges (time(a) + w)`` (0 for an event without in-edges). The
runtime ``T`` is the largest event time. Edges of the program order (``order="program"``,
``rendezvous="handshake"``; ``n`` = message size, ``B = max(n−1, 0)``):

==========================  ==========================  =================================
rule                        edge                        weight
==========================  ==========================  =================================
calc                        start → finish              cost
eager send                  start → finish              o
eager recv                  start → finish              o
eager message s → r         start(s) → finish(r)        2o + L + B·G  (o + L + B·G to
                                                        arrive, o to receive)
rendezvous s → r (RTS)      start(s) → h                o + L
receive posted              start(r) → h                0
CTS, data, receive          h → finish(r)               3o + 2L + B·G
CTS received, data sent     h → finish(s)               2o + L
requires u → v              finish(u) → start(v)        0
irequires u → v             start(u) → start(v)         o if u is a send, else 0
member c enters instance    start(c) → sync             0
instance done at member c   sync → finish(c)            lat·L + bytes·G + cost
CPU: calcs, sends of a      finish(c) → start(next)     0
(rank, cpu), program order  start(s) → start(next)      o
CPU: recvs of one wait      finish(r_i) → finish(r_i+1) o  (+ B_i+1·G under nic serial)
progress wait               finish(c) → finish(r_1)     o  (+ B_1·G under nic serial)
NIC: sends of a (rank, nic) start(s_i) → start(s_i+1)   g + B_i·G      (nic serial only)
NIC: recvs of a (rank, nic) finish(r_i) → finish(r_i+1) g + B_i+1·G    (nic serial only)
==========================  ==========================  =================================

(``lat``, ``bytes``: the instance's latency and byte terms, :meth:`ExecutionGraph.collective_terms`.)

The last five rows are the serialisation rules (docs/model.md §Serialisation):

- **Program order.** A rank runs its vertices in program order: their order in the graph
  (trace order; file order for GOAL). A GOAL file may list a vertex before one it depends on;
  then the rank's program order is its vertex order made consistent with its own dependencies
  (the stable topological order of the rank's requires/irequires edges, ties by vertex id).
- **CPU.** The calcs and send overheads of one (rank, cpu) take turns in program order (a
  pair that a dependency already orders as strongly adds no edge: in a trace, none does).
  Members are the operations that hold the CPU and that the program issues in that order: a
  zero-cost calc (a join) is none, and neither is a send that waits for a message the next
  member does not wait for — progress the MPI library makes when the message arrives (a
  later round of a non-blocking collective), not a step of the program
  (:func:`_program_line`). The receives completed by one wait — the receives a ``calc``
  requires: the calc after a ``Wait``/``Waitall``; a receive belongs to the first calc that
  requires it, a join of such progress rounds aside — are processed one after another in
  program (posting) order. Receives joined by another kind of vertex are not a wait and are
  not chained.
- **Receive progress** (``params.progress``). ``async``: a receive's ``o`` is charged at
  ``max(post, arrival)``, overlapping what the rank computes meanwhile. ``wait``: no
  asynchronous progress: the receives of a wait are processed no earlier than the wait starts,
  i.e. after the calc(s) the wait's calc requires besides them (the computation the receiver
  was in); the chain above then processes them one after another.
- **NIC** (``params.nic``). ``overlap``: concurrent transfers overlap completely (the paper's
  model). ``serial``: G is LogGP's gap: the NIC of a (rank, nic) injects one message after
  another, a send starting no earlier than the previous send's start + g + B·G (LogGOPSim
  books the NIC when the send starts, for eager and rendezvous messages alike; the sends of
  the CPU chain, in program order: a send that is progress is injected when it is made), and
  accepts
  one after another: a receive finishes no earlier than the previous one's finish + g + its
  own B·G. The receiving CPU is charged B·G too (LogGOPSim: "message is only received after
  G is charged"): the receives of one wait are ``o + B·G`` apart. The NIC accepts messages
  in the order their receives can first finish — the depth of ``finish(r)`` in the event
  graph without this chain, ties by id — a static stand-in for LogGOPSim's arrival order
  that follows program order within a wait, puts a reduction's leaf messages before its
  subtrees' and can never close a cycle (posting order would, on ``Irecv A; Irecv B;
  Wait B; Send; Wait A`` when A's message answers the send).

- **Rendezvous** (``rendezvous="loggopsim"``): the handshake event is the match; the data
  went with the request, so ``h → finish(r)`` weighs ``o + B·G`` and ``h → finish(s)`` 0.
  ``rendezvous="polled"``: the handshake's edges, and the request is answered no earlier than
  the wait that completes its receive starts (``finish(c) → h``, 0, or ``start(s) → h``,
  ``o``, from the CPU's last activity before that wait, as ``progress wait``'s rule finds it).

Under ``order="schedule"`` the chains are instead the serving orders of one schedule pass at
``schedule_at`` (:mod:`llamp.lp.schedule`, LogGOPSim's semantics): every message gets a
processing event ``2V + m`` and every rendezvous message a match event ``2V + M + j``
(``num_handshakes`` counts both kinds; :func:`_build_scheduled` lists the edges, docs/model.md
§Schedule order the table); ``progress`` does not apply.

Every chain follows the program, so in a graph built from a trace none can close a cycle.
The event graph is acyclic even when the vertex graph is not (an ``irequires`` links a start
to a start: LULESH's Irecv → … → Isend → message → Irecv on the peer is fine). A cycle in the
event graph is a real deadlock of the modelled program (e.g. two blocking rendezvous sends
facing each other, or a GOAL file whose program order contradicts its messages); it is
reported with the vertices on it. Events are numbered by depth (longest edge count from a
source) of the full event graph, ties by event id: a topological order for both engines. Under
``order="schedule"`` they are numbered instead in the order the schedule pass fixed their times
(:attr:`llamp.lp.schedule.Schedule.sequence`): the pass computes a time only from times it
fixed before, so every edge goes forward, equal times included, and no depth pass is needed
(the lowering checks it). Times, slopes and every analysis are the same under either
numbering; where several critical paths tie, the one
:meth:`llamp.lp.engine.GraphEngine.critical_events` follows may differ.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from llamp import config
from llamp.checks import cores
from llamp.errors import GraphError
from llamp.graph import (
    ARRAY_FIELDS,
    CALC,
    COLL,
    IREQUIRES,
    MESSAGE,
    RECV,
    REQUIRES,
    SEND,
    ExecutionGraph,
)
from llamp.kernel import kernel
from llamp.params import LogGPS

#: Columns of :attr:`EventGraph.coef` (and of the pattern tables).
CONST, COEF_L, COEF_G, COEF_O, COEF_GAP = 0, 1, 2, 3, 4
NUM_COEFS = 5

#: Version of the lowered form written into graph files (:mod:`llamp.lp.lowered`); a file of
#: another version is lowered again, never misread.
LOWERING_VERSION = 4

#: The steps of :func:`build_event_graph`, in order (for its ``on_step`` callback).
LOWERING_STEPS = ("serialisation chains", "event edges", "event depths", "sort", "reorder")


@dataclass(frozen=True, eq=False)
class EventGraph:
    """Event DAG with affine edge weights, in compact CSR form for both engines.

    Events are numbered by topological position ("positions"): ``event_of_pos[p]`` is the
    event id (``2v``, ``2v+1``, a handshake or a collective sync) at position ``p``,
    ``pos_of_event`` the inverse. ``extra_owner[e − 2V]`` is the vertex an extra event belongs
    to: the receive of a handshake's message, the lowest member vertex of a sync.
    ``src`` are positions, edges sorted by destination so ``in_ptr[p]:in_ptr[p+1]`` are the
    in-edges of position ``p`` (``dst`` is derived from it); ``out_edge[out_ptr[p]:out_ptr[p+1]]``
    its out-edges. ``msg[e]`` is the index (into ``graph.messages()``) of the message whose
    latency or bandwidth the edge pays, or −1. ``progress`` and ``nic`` are the models it was
    lowered for.

    Weights, compactly (17 B per edge instead of five float64 coefficients, 13 B when every
    value is exactly a float32, as in every graph read from GOAL: ``value`` is then float32,
    which loses nothing): every edge has a
    ``pattern`` (a small integer) and a ``value`` (a calc's cost, a message's bytes − 1, …);
    its coefficients of ``(1, L, G, o, g)`` are ``fixed[pattern] + value · scaled[pattern]``.
    The pattern tables have a few dozen rows (the rules of the module table; one per distinct
    analytic-collective cost), so a sweep reads one byte, one float and one index per edge.
    Indices are int32 while the graph has fewer than 2^31 events and edges.
    """

    num_vertices: int
    num_events: int
    src: np.ndarray
    pattern: np.ndarray
    value: np.ndarray
    fixed: np.ndarray  # (patterns × 5): coefficients of (1, L, G, o, g) independent of value
    scaled: np.ndarray  # (patterns × 5): coefficients multiplied by the edge's value
    msg: np.ndarray
    event_of_pos: np.ndarray
    pos_of_event: np.ndarray
    in_ptr: np.ndarray
    out_ptr: np.ndarray
    out_edge: np.ndarray
    rendezvous: np.ndarray  # bool per message: size > S
    S: int
    num_handshakes: int
    extra_owner: np.ndarray  # vertex of every extra event (handshake, then sync)
    progress: str = config.DEFAULT_PROGRESS
    nic: str = config.DEFAULT_NIC
    order: str = config.DEFAULT_ORDER
    rendezvous_model: str = config.DEFAULT_RENDEZVOUS
    schedule_at: tuple = ()  # (L, o, G, g) of the schedule under order "schedule"

    @property
    def lowering(self) -> tuple:
        """The model choices it was lowered for, as :attr:`LogGPS.lowering` gives them."""
        return (self.progress, self.nic, self.order, self.rendezvous_model, self.schedule_at)

    @property
    def num_edges(self) -> int:
        return int(self.src.shape[0])

    @cached_property
    def dst(self) -> np.ndarray:
        """Destination position of every edge (from ``in_ptr``; built on first use)."""
        counts = np.diff(self.in_ptr)
        return np.repeat(np.arange(self.num_events, dtype=self.src.dtype), counts)

    @cached_property
    def coef(self) -> np.ndarray:
        """Per-edge coefficients ``(const, cL, cG, co, cg)`` (E × 5 float64, built on first use:
        for the what-if analyses; the engines read the compact form)."""
        return self.coefficients(np.arange(self.num_edges))

    def dst_of(self, edges: np.ndarray) -> np.ndarray:
        """Destination position of the given edges (binary search in ``in_ptr``: for a few
        edges this avoids building :attr:`dst`, 4 B per edge)."""
        edges = np.asarray(edges, dtype=np.int64)
        return (np.searchsorted(self.in_ptr, edges, side="right") - 1).astype(self.src.dtype)

    def coefficients(self, edges: np.ndarray) -> np.ndarray:
        """Coefficients ``(const, cL, cG, co, cg)`` of the given edges (rows of :attr:`coef`)."""
        q = self.pattern[edges]
        return self.fixed[q] + self.value[edges, None] * self.scaled[q]

    def pattern_weights(self, L: float, G: float, o: float, g: float = 0.0):
        """(fixed, scaled) weight of every pattern at θ: an edge weighs
        ``fixed[pattern] + value · scaled[pattern]``."""
        theta = np.array([1.0, L, G, o, g])
        return self.fixed @ theta, self.scaled @ theta

    def weights(self, L: float, G: float, o: float, g: float = 0.0) -> np.ndarray:
        """Edge weights at one configuration (vectorised, in blocks: the temporaries stay a
        few MB where one expression would hold three E-long float64 arrays)."""
        wa, wb = self.pattern_weights(L, G, o, g)
        out = np.empty(self.num_edges)
        block = 1 << 22
        for lo in range(0, self.num_edges, block):
            q = self.pattern[lo : lo + block]
            out[lo : lo + block] = wa[q] + self.value[lo : lo + block] * wb[q]
        return out

    def weights_at(self, params: LogGPS) -> np.ndarray:
        """Edge weights at ``params``."""
        return self.weights(params.L, params.G, params.o, params.g)

    def vertex_of_pos(self, positions: np.ndarray) -> np.ndarray:
        """Vertex id of the events at ``positions`` (−1 for handshake and sync events)."""
        events = self.event_of_pos[np.asarray(positions, dtype=np.int64)].astype(np.int64)
        return np.where(events < 2 * self.num_vertices, events // 2, -1)

    def owner_of_pos(self, positions: np.ndarray) -> np.ndarray:
        """Vertex the events at ``positions`` belong to (extra events: see ``extra_owner``)."""
        events = self.event_of_pos[np.asarray(positions, dtype=np.int64)].astype(np.int64)
        V2 = 2 * self.num_vertices
        owner = events // 2
        extra = events >= V2
        if extra.any():
            owner[extra] = self.extra_owner[events[extra] - V2]
        return owner

    def is_sync_pos(self, positions: np.ndarray) -> np.ndarray:
        """True for the sync events of analytic collectives."""
        events = self.event_of_pos[np.asarray(positions, dtype=np.int64)]
        return events >= 2 * self.num_vertices + self.num_handshakes

    def collective_edges(self) -> np.ndarray:
        """Mask of the edges that charge an analytic collective's cost (sync → finish)."""
        return self.is_sync_pos(self.src)

    def start_pos(self) -> np.ndarray:
        """Position of every vertex's start event."""
        return self.pos_of_event[0 : 2 * self.num_vertices : 2]

    def finish_pos(self) -> np.ndarray:
        """Position of every vertex's finish event."""
        return self.pos_of_event[1 : 2 * self.num_vertices : 2]


_ZERO = (0.0, 0.0, 0.0, 0.0, 0.0)

#: The graph columns a lowering reads (released from the resident set after use when mapped).
_LOWERED_FROM = tuple(name for name in ARRAY_FIELDS if name != "t_trace_ns")

#: Event and edge counts below this use int32 indices (a module constant so that tests can
#: lower small graphs with int64 indices too).
_INDEX32_LIMIT = int(np.iinfo(np.int32).max)
#: The kind the schedule order's edges give the processing of a message (an operation of the
#: schedule pass besides the vertices, whose kinds are CALC, SEND, RECV and COLL).
_PROCESSING = 4


class _Columns:
    """Where the lowering's large columns live: in memory (``scratch=None``), or in files
    under ``scratch``, memory-mapped and unlinked at once (the kernel frees them with the last
    mapping, even after a crash).

    Scratch columns let a 10^8-vertex lowering stay far below the machine's memory: a column
    that is filled now and read much later is dropped from the resident set
    (:meth:`release`, ``MADV_DONTNEED``: its pages stay in the page cache, written back to the
    file when the kernel needs the memory), so the peak is the columns one step uses, not all
    of them. The numbers are the same either way (tests compare both paths).
    """

    def __init__(self, scratch: str | Path | None = None):
        self.scratch = None if scratch is None else Path(scratch)

    def empty(self, n: int, dtype: type) -> np.ndarray:
        if self.scratch is None or n == 0:
            return np.empty(n, dtype=dtype)
        fd, name = tempfile.mkstemp(prefix="lowering-", suffix=".col", dir=self.scratch)
        try:
            os.ftruncate(fd, n * np.dtype(dtype).itemsize)
            column = np.memmap(name, dtype=dtype, mode="r+", shape=(n,))
        finally:
            os.close(fd)
            os.unlink(name)
        return np.asarray(column)  # a plain view for the kernels; its base is the mapping

    def release(self, *columns: np.ndarray | None) -> None:
        if self.scratch is not None:
            release(*columns)


def release(*columns: np.ndarray | None) -> None:
    """Drop the pages of memory-mapped ``columns`` (scratch columns, columns of a mapped graph
    file) from this process's resident set; a column in memory is left alone. The data stay
    (in the page cache or the file): the next access maps them again."""
    for column in columns:
        base = column
        while base is not None and not isinstance(base, (np.memmap, mmap.mmap)):
            # a column of a graph file views its member's mapping through a memoryview
            base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
        region = getattr(base, "_mmap", base)
        if isinstance(region, mmap.mmap) and not region.closed and hasattr(mmap, "MADV_DONTNEED"):
            try:
                region.madvise(mmap.MADV_DONTNEED)
            except (OSError, ValueError):  # pragma: no cover - best effort
                pass


class _EdgeColumns:
    """Preallocated edge columns filled block by block (no list of parts to concatenate:
    at 10^7 vertices the parts and their concatenation would double the peak memory)."""

    CHUNK = 1 << 23  # edges per released chunk of a scratch block

    def __init__(self, capacity: int, index: type, store: _Columns):
        self.store = store
        self.src = store.empty(capacity, index)
        self.dst = store.empty(capacity, index)
        self.pattern = store.empty(capacity, np.uint16)
        self.value = store.empty(capacity, np.float64)
        self.msg = store.empty(capacity, np.int32)
        self.patterns: dict[tuple, int] = {}
        self.size = 0

    def trim(self, capacity: int) -> None:
        """Shorten the columns to ``capacity`` edges (allocated at a bound before the count
        was known; views, nothing copied)."""
        if not self.size <= capacity <= self.src.shape[0]:
            raise RuntimeError(f"event graph: {capacity} edges do not fit {self.src.shape[0]}")
        for name in ("src", "dst", "pattern", "value", "msg"):
            setattr(self, name, getattr(self, name)[:capacity])

    def pattern_of(self, fixed=_ZERO, scaled=_ZERO) -> int:
        key = (tuple(float(x) for x in fixed), tuple(float(x) for x in scaled))
        if key not in self.patterns:
            if len(self.patterns) >= np.iinfo(np.uint16).max:
                raise GraphError("more than 65535 distinct analytic-collective costs")
            self.patterns[key] = len(self.patterns)
        return self.patterns[key]

    def add(self, s, d, fixed=_ZERO, scaled=_ZERO, value=None, m=None, pattern=None) -> None:
        """Edges ``s → d`` weighing ``fixed + value · scaled`` (coefficients of (1, L, G, o,
        g)); ``pattern`` (an id array) instead of ``fixed``/``scaled`` for mixed blocks."""
        n = np.size(s)
        if n == 0:
            return
        a, b = self.size, self.size + n
        if b > self.src.size:
            raise RuntimeError(f"event graph: {b} edges exceed the {self.src.size} planned")
        self.src[a:b] = s
        self.dst[a:b] = d
        q = self.pattern_of(fixed, scaled) if pattern is None else pattern
        v = 0.0 if value is None else value
        k = -1 if m is None else m
        # In chunks, each released once written: these three are read again only by the final
        # gathers, and a block may be a third of all edges (14 B per edge resident otherwise).
        step = self.CHUNK if self.store.scratch is not None else n
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            self.pattern[a + lo : a + hi] = q if np.ndim(q) == 0 else q[lo:hi]
            self.value[a + lo : a + hi] = v if np.ndim(v) == 0 else v[lo:hi]
            self.msg[a + lo : a + hi] = k if np.ndim(k) == 0 else k[lo:hi]
            self.store.release(self.pattern, self.value, self.msg)
        self.size = b

    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        """(fixed, scaled) pattern tables, rows in pattern-id order."""
        fixed = np.zeros((max(len(self.patterns), 1), NUM_COEFS))
        scaled = np.zeros_like(fixed)
        for (f, sc), i in self.patterns.items():
            fixed[i], scaled[i] = f, sc
        return fixed, scaled


@dataclass(frozen=True)
class _Chain:
    """Consecutive pairs of one serialisation chain: ``a[i] → b[i]`` (vertex ids)."""

    a: np.ndarray
    b: np.ndarray

    @property
    def size(self) -> int:
        return int(self.a.size)


def _chain(ordered: np.ndarray, group: np.ndarray) -> _Chain:
    """Pairs of consecutive ``ordered`` vertices within the same ``group`` value."""
    same = group[1:] == group[:-1]
    return _Chain(ordered[:-1][same], ordered[1:][same])


def _stream_chain(graph: ExecutionGraph, ordered: np.ndarray, column: str) -> _Chain:
    """Consecutive pairs of ``ordered`` within each (rank, ``cpu``/``nic`` stream), keeping
    the order within a stream."""
    stream = graph.streams(column)[ordered].astype(np.int64)
    width = int(stream.max()) + 1 if stream.size else 1
    key = graph.rank[ordered].astype(np.int64) * width + stream
    regroup = _group_by(key, graph.num_ranks * width)
    return _chain(ordered[regroup], key[regroup])


def program_position(graph: ExecutionGraph) -> np.ndarray:
    """Position of every vertex in its rank's program order (a global order, ranks contiguous).

    The vertex order itself when every requires/irequires edge goes forward (every trace);
    otherwise the stable topological order of the rank-local edges, ties by vertex id.
    """
    V = graph.num_vertices
    index = graph.edge_src.dtype
    local = graph.edge_kind != MESSAGE  # requires and irequires (messages join ranks)
    src, dst = graph.edge_src[local], graph.edge_dst[local]
    if not np.any(src > dst):
        return np.arange(V, dtype=index)
    order = _stable_topological(V, src, dst)
    position = np.empty(V, dtype=index)
    position[order] = np.arange(V, dtype=index)
    return position


@kernel()
def _stable_topological(n, src, dst):  # pragma: no cover - compiled
    """Kahn's algorithm popping the smallest ready id (a binary heap). Vertices on a cycle
    keep their id order at the end (the event graph's cycle check reports them)."""
    indeg = np.zeros(n, dtype=np.int64)
    for k in range(dst.shape[0]):
        indeg[dst[k]] += 1
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    for k in range(src.shape[0]):
        out_ptr[src[k] + 1] += 1
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    fill = out_ptr[:-1].copy()
    out = np.empty(src.shape[0], dtype=np.int64)
    for k in range(src.shape[0]):
        out[fill[src[k]]] = dst[k]
        fill[src[k]] += 1
    heap = np.empty(n, dtype=np.int64)
    size = 0
    for v in range(n):
        if indeg[v] == 0:
            heap[size] = v  # ascending: already a heap
            size += 1
    order = np.empty(n, dtype=np.int64)
    placed = np.zeros(n, dtype=np.bool_)
    count = 0
    while size > 0:
        v = heap[0]
        size -= 1
        last = heap[size]
        i = 0
        while True:  # sift down
            c = 2 * i + 1
            if c >= size:
                break
            if c + 1 < size and heap[c + 1] < heap[c]:
                c += 1
            if heap[c] < last:
                heap[i] = heap[c]
                i = c
            else:
                break
        if size > 0:
            heap[i] = last
        order[count] = v
        placed[v] = True
        count += 1
        for k in range(out_ptr[v], out_ptr[v + 1]):
            u = out[k]
            indeg[u] -= 1
            if indeg[u] == 0:
                i = size  # sift up
                size += 1
                while i > 0 and heap[(i - 1) // 2] > u:
                    heap[i] = heap[(i - 1) // 2]
                    i = (i - 1) // 2
                heap[i] = u
    for v in range(n):
        if not placed[v]:
            order[count] = v
            count += 1
    return order


def _serialisation_chains(
    graph: ExecutionGraph, progress: str, nic: str, polled: bool = False
) -> tuple[_Chain, _Chain, _Chain, _Chain, _Chain, _Chain]:
    """(send CPU chain, wait chain, wait-start edges, send NIC chain, receive NIC chain,
    answer edges).

    The wait-start "chain" pairs the CPU's last activity before a wait (a calc or a send) with
    the wait's first receive (``progress="wait"``); the answer edges (``polled``) pair it with
    every receive of the wait. The receive NIC chain is ordered later (it needs event depths,
    :func:`_receive_nic_chain`); here its pairs in vertex order give the edge count.
    """
    V = graph.num_vertices
    kind = graph.kind
    position = program_position(graph)
    empty = _Chain(np.zeros(0, np.int64), np.zeros(0, np.int64))

    out = _OutEdges.of(graph)
    cpu_ops, progress_calc = _program_line(graph, position, out)
    send_cpu = _without_direct_edges(graph, _stream_chain(graph, cpu_ops, "cpu"), out)
    del out
    # the NIC injects the sends the program issues in program order; a send that is progress
    # (not a member of the CPU chain) is injected when it is made
    sends = cpu_ops[kind[cpu_ops] == SEND]  # program order
    send_nic = _stream_chain(graph, sends, "nic") if nic == "serial" else empty

    # Waits: the receives a calc requires (the calc after a Wait/Waitall), in program order.
    ek = graph.edge_kind
    req = ek == REQUIRES
    into_calc = req & (kind[graph.edge_dst] == CALC) & ~progress_calc[graph.edge_dst]
    r = graph.edge_src[into_calc & (kind[graph.edge_src] == RECV)]
    w = graph.edge_dst[into_calc & (kind[graph.edge_src] == RECV)]
    if r.size:
        # A receive is completed by the first calc that requires it; a later calc that
        # requires it too does not wait for it again.
        first = _group_by(position[w], V)
        r, w = r[first], w[first]
        by_recv = _group_by(r, V)
        r, w = r[by_recv], w[by_recv]
        keep = np.concatenate(([True], r[1:] != r[:-1]))
        r, w = r[keep], w[keep]
        first = _group_by(position[r], V)
        r, w = r[first], w[first]
        by_wait = _group_by(w, V)
        r, w = r[by_wait], w[by_wait]
    wait_chain = _chain(r, w)
    wait_start = answer = empty
    if (progress == "wait" or polled) and r.size:
        # The wait starts after the CPU's last activity before it in program order: the latest
        # calc or send the wait's calc requires besides its receives.
        head = np.concatenate(([True], w[1:] != w[:-1]))
        first_recv = np.full(V, -1, dtype=np.int64)
        first_recv[w[head]] = r[head]
        src = graph.edge_src
        cpu_pred = into_calc & ((kind[src] == CALC) | (kind[src] == SEND))
        c, cw = src[cpu_pred], graph.edge_dst[cpu_pred]
        has = first_recv[cw] >= 0
        c, cw = c[has], cw[has]
        if c.size:
            order = _group_by(position[c], V)
            c, cw = c[order], cw[order]
            order = _group_by(cw, V)
            c, cw = c[order], cw[order]
            last = np.concatenate((cw[1:] != cw[:-1], [True]))
            if progress == "wait":
                wait_start = _Chain(c[last], first_recv[cw[last]])
            if polled:  # every receive of a wait, after the wait's start
                start_of = np.full(V, -1, dtype=np.int64)
                start_of[cw[last]] = c[last]
                a = start_of[w]
                answer = _Chain(a[a >= 0], r[a >= 0])

    recv_nic = (
        _stream_chain(graph, np.flatnonzero(kind == RECV), "nic") if nic == "serial" else empty
    )
    return send_cpu, wait_chain, wait_start, send_nic, recv_nic, answer


@dataclass(frozen=True)
class _OutEdges:
    """The graph's edges grouped by source: ``edge[ptr[v]:ptr[v+1]]`` are ``v``'s edge ids
    (the graph's index type)."""

    ptr: np.ndarray
    edge: np.ndarray

    @classmethod
    def of(cls, graph: ExecutionGraph) -> _OutEdges:
        V = graph.num_vertices
        index = graph.edge_src.dtype
        edge, ptr = _group_by_rows(graph.edge_src, V, index)
        return cls(ptr, edge)


def _program_line(
    graph: ExecutionGraph, position: np.ndarray, out: _OutEdges
) -> tuple[np.ndarray, np.ndarray]:
    """(the CPU ops chained in program order, in that order; a mask of the calcs that are
    progress, not waits).

    The chain holds the calcs that take CPU time and the sends the program issues in program
    order. A zero-cost calc holds no CPU and is no member. A send that waits for a message the
    next op of its stream's chain does not wait for is no step of the program but progress
    the MPI library makes when the message arrives (a later round of a non-blocking
    collective): the program went on past it, and chaining it would hold the program back for
    a message it does not wait for, or close a cycle where the program only waits for the
    round in a later call. A zero-cost calc in that position that something requires (the
    join of such a round) is progress too, not a wait: its receives are processed as they
    arrive. "Waits for" is taken through the rank's ``requires`` edges (an ``irequires``
    waits for a start, not a message); of the receives an op waits for, the one latest in
    program order stands for the set (an op that waits for a later-posted receive than the
    next op waits for one the next op does not)."""
    V = graph.num_vertices
    kind = graph.kind
    ops = np.flatnonzero((kind == SEND) | (kind == CALC))
    ops = ops[_group_by(position[ops], V)]
    progress = np.zeros(V, dtype=bool)
    if ops.size == 0:
        return ops, progress
    in_program_order = np.empty(V, dtype=position.dtype)
    in_program_order[position] = np.arange(V, dtype=position.dtype)
    awaited = _awaited_receive(
        in_program_order, out.ptr, out.edge, graph.edge_dst, graph.edge_kind, kind, position
    )
    del in_program_order
    stream = graph.streams("cpu")[ops].astype(np.int64)
    key = graph.rank[ops].astype(np.int64) * (int(stream.max()) + 1) + stream
    regroup = np.argsort(key, kind="stable")  # each stream's ops together, in program order
    chained, ahead = _in_order(ops[regroup], key[regroup], awaited, kind, graph.cost_ns)
    keep = np.empty(ops.size, dtype=bool)
    keep[regroup] = chained
    progress[ops[regroup][ahead]] = True
    progress &= out.ptr[1:] > out.ptr[:-1]  # a join something requires (or a message leaves)
    return ops[keep], progress


@kernel("i4[::1], i4[::1], i4[::1], i4[::1], i1[::1], i1[::1], i4[::1]")
def _awaited_receive(order, out_ptr, out_edge, dst, ek, kind, position):  # pragma: no cover
    """Per vertex, the program position of the latest receive it waits for through its
    rank's ``requires`` edges (−1: none): ``order`` lists the vertices in program order (a
    topological order of the rank-local edges), each passing its value on along its
    out-edges."""
    awaited = np.full(order.shape[0], -1, dtype=position.dtype)
    for i in range(order.shape[0]):
        v = order[i]
        d = awaited[v]
        if kind[v] == RECV:
            mine = max(d, position[v])  # what a ``requires`` successor waits for
        else:
            mine = d
        for k in range(out_ptr[v], out_ptr[v + 1]):
            e = out_edge[k]
            if ek[e] == MESSAGE:
                continue
            u = dst[e]
            awaited[u] = max(awaited[u], mine if ek[e] == REQUIRES else d)
    return awaited


@kernel("i8[::1], i8[::1], i4[::1], i1[::1], f8[::1]")
def _in_order(ops, key, awaited, kind, cost):  # pragma: no cover - compiled
    """Each stream's ``ops`` walked backwards: (chained, waits ahead of the chain). A calc
    with a cost is chained; a send when it waits for no later receive than the next op
    chained; a zero-cost calc never. "Ahead": a zero-cost calc that waits for a later
    receive than the next op chained."""
    chained = np.zeros(ops.shape[0], dtype=np.bool_)
    ahead = np.zeros(ops.shape[0], dtype=np.bool_)
    limit = np.int64(-1)
    for i in range(ops.shape[0] - 1, -1, -1):
        if i == ops.shape[0] - 1 or key[i] != key[i + 1]:
            limit = np.iinfo(np.int64).max
        v = ops[i]
        if kind[v] == CALC and cost[v] == 0.0:
            ahead[i] = awaited[v] > limit
        elif kind[v] == CALC or awaited[v] <= limit:
            chained[i] = True
            limit = awaited[v]
    return chained, ahead


def _without_direct_edges(graph: ExecutionGraph, chain: _Chain, out: _OutEdges) -> _Chain:
    """``chain`` without the pairs the dependencies already order as strongly: ``a requires
    b`` or ``b irequires a`` from a send, directly or through receives and zero-cost calcs
    (``a → r → b``: the calc, Irecv/Recv, calc of a trace; ``a → join → b``: the rounds of
    a collective; at most :data:`_THROUGH` such vertices). In a trace every pair is such a
    dependency: the chain then adds no edge (and no LP row). A walk over the out-edges of
    each pair's ``a`` (bounded: :data:`_BUDGET`): the graph's index type, no per-edge key
    table."""
    if chain.size == 0:
        return chain
    keep = _not_ordered(
        chain.a,
        chain.b,
        out.ptr,
        out.edge,
        graph.edge_dst,
        graph.edge_kind,
        graph.kind,
        graph.cost_ns,
    )
    return _Chain(chain.a[keep], chain.b[keep])


#: Receives and zero-cost calcs a dependency may pass through and still order a chain's pair,
#: and the out-edges looked at per pair (past them the pair stays: an edge too many, never one
#: too few).
_THROUGH = 3
_BUDGET = 4096


@kernel("i8[::1], i8[::1], i4[::1], i4[::1], i4[::1], i1[::1], i1[::1], f8[::1]")
def _not_ordered(a, b, out_ptr, order, dst, ek, kind, cost):  # pragma: no cover - compiled
    keep = np.ones(a.shape[0], dtype=np.bool_)
    stack = np.empty((_THROUGH + 1, 2), dtype=np.int64)  # (vertex, next out-edge slot)
    for i in range(a.shape[0]):
        u, w = a[i], b[i]
        stack[0, 0], stack[0, 1] = u, out_ptr[u]
        top = 0
        budget = _BUDGET
        while top >= 0 and keep[i] and budget > 0:
            budget -= 1
            x = stack[top, 0]
            k = stack[top, 1]
            if k == out_ptr[x + 1]:
                top -= 1
                continue
            stack[top, 1] = k + 1
            e = order[k]
            y = dst[e]
            if ek[e] == MESSAGE:
                continue
            if top == 0 and not (ek[e] == REQUIRES or (ek[e] == IREQUIRES and kind[u] == SEND)):
                continue  # the first step waits for a's finish (a send's o at least)
            if y == w:
                keep[i] = False
            elif top < _THROUGH and (kind[y] == RECV or (kind[y] == CALC and cost[y] == 0.0)):
                top += 1
                stack[top, 0], stack[top, 1] = y, out_ptr[y]
    return keep


def _receive_nic_chain(graph: ExecutionGraph, depth: np.ndarray) -> _Chain:
    """Receives of each (rank, nic) in the order their finish events can first happen: by
    the depth of ``finish(r)`` in the event graph without this chain, ties by vertex id.

    Depth is a static stand-in for arrival order (a leaf's message before a subtree's in a
    reduction) and can never close a cycle: an edge between two events of equal depth cannot
    lie on a path between them, and a deeper event cannot precede a shallower one.
    """
    recvs = np.flatnonzero(graph.kind == RECV)
    d = depth[2 * recvs + 1]
    recvs = recvs[_group_by(d, int(d.max()) + 1)] if recvs.size else recvs
    return _stream_chain(graph, recvs, "nic")


def build_event_graph(
    graph: ExecutionGraph,
    S: int,
    *,
    progress: str = config.DEFAULT_PROGRESS,
    nic: str = config.DEFAULT_NIC,
    order: str = config.DEFAULT_ORDER,
    rendezvous: str = config.DEFAULT_RENDEZVOUS,
    schedule_at: tuple | None = None,
    scratch: str | Path | None = None,
    on_step: Callable[[str], None] | None = None,
    plan=None,
) -> EventGraph:
    """Lower ``graph`` to its event graph for rendezvous threshold ``S`` (eager iff size ≤ S)
    under the receive-progress model ``progress`` and the NIC model ``nic``.

    Memory: the edge columns are allocated once at their final size and sorted in place, so
    the peak is the event graph plus one permutation (≈ 90 B per edge and 50 B per event).
    With ``scratch`` (a directory) the per-edge columns — those being built and those of the
    result — are memory-mapped files there, each dropped from the resident set once filled or
    read (:class:`_Columns`), and so are the graph's columns when they are mapped from its
    file: then the peak is the depth pass (≈ 22 B per edge and 30 B per event; 10^8 vertices
    within ~10 GB). The result's per-edge arrays are then those mapped files.
    ``on_step(name)`` is called as each of the :data:`LOWERING_STEPS` begins (progress bars).
    ``plan``: under ``order="schedule"``, the schedule pass at ``schedule_at`` when the caller
    already ran it (:func:`llamp.lp.schedule.schedule_at`; not run again).
    """
    step = on_step or (lambda name: None)
    if order == "schedule":
        return _build_scheduled(
            graph, S, nic, rendezvous, progress, schedule_at, _Columns(scratch), step, plan
        )
    step(LOWERING_STEPS[0])
    V = graph.num_vertices
    kind = graph.kind
    sends, recvs = graph.messages()
    # Events (≤ 3V) and event edges (≤ 3.5V + E) fit in int32 below this bound: then every
    # index array and temporary here is int32.
    wide = 4 * V + graph.num_edges >= _INDEX32_LIMIT
    vid = np.int64 if wide else np.int32
    if wide:
        sends, recvs = sends.astype(np.int64), recvs.astype(np.int64)
    nbytes = graph.size[sends]
    rdv = nbytes > S
    B = np.maximum(nbytes - 1, 0).astype(np.float64)
    del nbytes
    msg_ids = np.arange(sends.size, dtype=np.int32)
    msg_of = np.full(V, -1, dtype=np.int32)
    msg_of[sends] = msg_ids
    msg_of[recvs] = msg_ids
    rdv_ids = np.flatnonzero(rdv).astype(vid)
    handshake = np.full(sends.size, -1, dtype=vid)
    handshake[rdv_ids] = 2 * V + np.arange(rdv_ids.size, dtype=vid)
    colls = np.flatnonzero(kind == COLL)
    instance = np.zeros(0, np.int64)
    if colls.size:
        tags, lat, byt = graph.collective_terms()
        which = np.searchsorted(tags, graph.tag[colls])  # validated: every tag is listed
        present, instance = np.unique(which, return_inverse=True)
        instance = instance.reshape(-1)
    sync_base = 2 * V + rdv_ids.size
    num_syncs = int(instance.max()) + 1 if instance.size else 0
    num_events = sync_base + num_syncs
    extra_owner = np.empty(num_events - 2 * V, dtype=vid)
    extra_owner[: rdv_ids.size] = recvs[rdv_ids]
    if num_syncs:
        first_member = np.full(num_syncs, V, dtype=np.int64)
        np.minimum.at(first_member, instance, colls)
        extra_owner[rdv_ids.size :] = first_member

    ek = graph.edge_kind
    req = ek == REQUIRES
    ireq = ek == IREQUIRES
    calc = np.flatnonzero(kind == CALC).astype(vid)
    chains = _serialisation_chains(graph, progress, nic, polled=rendezvous == "polled")
    step(LOWERING_STEPS[1])
    _Columns(scratch).release(*(getattr(graph, name) for name in _LOWERED_FROM))
    send_cpu, wait_chain, wait_start, send_nic, recv_nic, answer = chains
    if answer.size:  # polled: the rendezvous receives' requests wait for their wait
        keep = rdv[msg_of[answer.b]]
        answer = _Chain(answer.a[keep], answer.b[keep])
    chains = (send_cpu, wait_chain, wait_start, send_nic, recv_nic, answer)
    n_rdv = rdv_ids.size
    n_eager = sends.size - n_rdv
    capacity = (
        calc.size
        + 3 * n_eager
        + 4 * n_rdv
        + 2 * colls.size
        + int(req.sum())
        + int(ireq.sum())
        + sum(chain.size for chain in chains)
    )
    index = np.int32 if max(num_events, capacity) < _INDEX32_LIMIT else np.int64
    if index is np.int64 and not wide:
        raise RuntimeError(f"event graph: {num_events} events, {capacity} edges exceed int32")
    store = _Columns(scratch)
    cols = _EdgeColumns(capacity, index, store)
    add = cols.add
    O1, O2 = (0.0, 0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 2.0, 0.0)
    CONST1, BYTES = (1.0, 0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0, 0.0)

    # Vertex-internal edges.
    add(2 * calc, 2 * calc + 1, scaled=CONST1, value=graph.cost_ns[calc])
    del calc
    eager_ops = np.concatenate((sends[~rdv], recvs[~rdv]))
    add(2 * eager_ops, 2 * eager_ops + 1, fixed=O1)
    del eager_ops
    # Messages.
    e = ~rdv
    add(2 * sends[e], 2 * recvs[e] + 1, (0, 1, 0, 2, 0), BYTES, B[e], m=msg_ids[e])
    h = handshake[rdv]
    add(2 * sends[rdv], h, (0, 1, 0, 1, 0), m=msg_ids[rdv])
    add(2 * recvs[rdv], h)
    if rendezvous == "loggopsim":  # the data went with the request; the match frees the sender
        add(h, 2 * recvs[rdv] + 1, O1, BYTES, B[rdv], m=msg_ids[rdv])
        add(h, 2 * sends[rdv] + 1, m=msg_ids[rdv])
    else:
        add(h, 2 * recvs[rdv] + 1, (0, 2, 0, 3, 0), BYTES, B[rdv], m=msg_ids[rdv])
        add(h, 2 * sends[rdv] + 1, (0, 1, 0, 2, 0), m=msg_ids[rdv])
    # polled: a request is answered no earlier than the wait that completes its receive
    # starts, i.e. the end of the CPU's last activity before it (a calc's finish, a send's
    # start + o): the program order's static stand-in for "inside MPI"
    for after_send in (False, True):
        k = (kind[answer.a] == SEND) == after_send
        a, b = answer.a[k], answer.b[k]
        add(2 * a + (0 if after_send else 1), handshake[msg_of[b]], O1 if after_send else _ZERO)
    # Analytic collectives: every member enters the instance's sync, which releases them all.
    if colls.size:
        colls = colls.astype(vid)
        sync = (sync_base + instance).astype(vid)
        inst = present[instance]
        add(2 * colls, sync)
        terms, which = np.unique(
            np.stack([lat[inst], byt[inst]], axis=1), axis=0, return_inverse=True
        )
        ids = np.array([cols.pattern_of((0, cl, cg, 0, 0), CONST1) for cl, cg in terms])
        add(sync, 2 * colls + 1, value=graph.cost_ns[colls], pattern=ids[which.reshape(-1)])
    del msg_ids, handshake, h, e
    store.release(*(getattr(graph, name) for name in _LOWERED_FROM if not name.startswith("e")))
    # Dependencies.
    edge_src = graph.edge_src.astype(vid, copy=False)
    edge_dst = graph.edge_dst.astype(vid, copy=False)
    add(2 * edge_src[req] + 1, 2 * edge_dst[req])
    isrc, idst = edge_src[ireq], edge_dst[ireq]
    del edge_src, edge_dst
    from_send = kind[isrc] == SEND
    add(2 * isrc[from_send], 2 * idst[from_send], O1)
    add(2 * isrc[~from_send], 2 * idst[~from_send])
    del isrc, idst, ireq, from_send
    store.release(graph.edge_src, graph.edge_dst, graph.edge_kind)

    # Serialisation (module docstring). Under nic serial the receiving CPU pays B·G as well.
    serial = nic == "serial"
    after_send = kind[send_cpu.a] == SEND  # a send holds its CPU o from its start, a calc
    add(2 * send_cpu.a[after_send], 2 * send_cpu.b[after_send], O1)  # until its finish
    add(2 * send_cpu.a[~after_send] + 1, 2 * send_cpu.b[~after_send])
    m = msg_of[wait_chain.b]
    if serial:
        add(2 * wait_chain.a + 1, 2 * wait_chain.b + 1, O1, BYTES, B[m], m=m)
    else:
        add(2 * wait_chain.a + 1, 2 * wait_chain.b + 1, O1)
    # The wait starts at the end of the CPU's previous activity: a calc's finish, a send's
    # start + o; then the first receive's o (+ B·G).
    for after_send in (False, True):
        k = (kind[wait_start.a] == SEND) == after_send
        a, b = wait_start.a[k], wait_start.b[k]
        m = msg_of[b]
        add(
            2 * a + (0 if after_send else 1),
            2 * b + 1,
            O2 if after_send else O1,
            BYTES if serial else _ZERO,
            B[m] if serial else None,
            m=m if serial else None,
        )
    m = msg_of[send_nic.a]
    add(2 * send_nic.a, 2 * send_nic.b, (0, 0, 0, 0, 1), BYTES, B[m], m=m)
    if recv_nic.size:
        base = cols.size
        depth = _depths(num_events, cols.src[:base], cols.dst[:base], graph)
        recv_nic = _receive_nic_chain(graph, depth)
        del depth
        m = msg_of[recv_nic.b]
        add(2 * recv_nic.a + 1, 2 * recv_nic.b + 1, (0, 0, 0, 0, 1), BYTES, B[m], m=m)
    del B, msg_of, chains, send_cpu, wait_chain, wait_start, send_nic, recv_nic
    if cols.size != capacity:
        raise RuntimeError(f"event graph: {cols.size} edges, {capacity} planned")
    store.release(*(getattr(graph, name) for name in _LOWERED_FROM))
    return _assemble(
        graph,
        cols,
        store,
        num_events,
        index,
        step,
        rendezvous=rdv,
        S=int(S),
        num_handshakes=int(rdv_ids.size),
        extra_owner=extra_owner,
        progress=progress,
        nic=nic,
        order=order,
        rendezvous_model=rendezvous,
    )


def _assemble(
    graph: ExecutionGraph,
    cols: _EdgeColumns,
    store: _Columns,
    num_events: int,
    index: type,
    step: Callable[[str], None],
    position: np.ndarray | None = None,
    **fields,
) -> EventGraph:
    """The event graph of the edges in ``cols``: depths (raising on a cycle), events renumbered
    by topological position, edges grouped by destination (the lowering's last three steps).

    ``position``: a topological position of every event known already (the order in which a
    schedule pass fixed their times): the events are numbered by it instead of by depth, and
    every edge is checked to go forward in it."""
    V = graph.num_vertices
    # Steps that do not depend on each other share the machine's cores when the columns are
    # in memory (scratch columns stay one at a time: that path is about memory).
    parallel = store.scratch is None and cores() > 1
    inverse = None
    step(LOWERING_STEPS[2])
    if position is None:
        depth = _depths(num_events, cols.src, cols.dst, graph)

    # Renumber events by topological position so both engines sweep arrays front to back,
    # and sort edges by destination so the in-edges of an event are one contiguous run
    # (stable: in-edges keep the order above). Every index array and temporary is of the
    # index type; the columns are reordered one at a time (a gather: far fewer cache misses
    # than following the permutation's cycles), so the extra memory is one column.
    step(LOWERING_STEPS[3])
    if position is None:
        event_of_pos = _group_by(depth, int(depth.max()) + 1 if num_events else 0, index)
        del depth
        pos_of_event = np.empty(num_events, dtype=index)
        pos_of_event[event_of_pos] = np.arange(num_events, dtype=index)
    else:
        pos_of_event = position
        event_of_pos = np.empty(num_events, dtype=index)
        # on a second core while the edges are sorted (it reads only the positions)
        inverse = _Background(_invert, pos_of_event, event_of_pos) if parallel else None
        if inverse is None:
            _invert(pos_of_event, event_of_pos)
    by_dst = store.empty(cols.src.shape[0], index)
    in_ptr = np.empty(num_events + 1, dtype=index)
    if position is None:
        # Edges by destination position, stably: grouped by destination event first (the
        # columns come in runs of ascending events, so this pass streams through memory),
        # then the events' runs laid out in position order. One counting sort by position
        # would scatter every edge at random (3·10^6 vertices: 1.7 s against 0.4 s).
        by_event, event_ptr = _group_by_rows(
            cols.dst, num_events, index, out=store.empty(cols.dst.shape[0], index)
        )
        store.release(cols.dst)
        _runs_in_order(by_event, event_ptr, event_of_pos, by_dst, in_ptr)
        store.release(by_event)
        del by_event, event_ptr
    else:
        _by_position(cols.dst, position, by_dst, in_ptr, store)
        store.release(cols.dst)
        if inverse is not None:
            inverse.result()
    del cols.dst
    fixed, scaled = cols.tables()
    narrow = fixed.shape[0] <= 256
    step(LOWERING_STEPS[4])

    def sources() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The sources by destination, renumbered, checked, and grouped by source."""
        p_src = _gather(store, cols.src, by_dst, renumber=pos_of_event)
        if position is not None and not _forward(in_ptr, p_src):
            raise RuntimeError("event graph: an edge goes backward in the schedule pass's order")
        out_edge, out_ptr = _group_by_rows(
            p_src, num_events, index, out=store.empty(p_src.shape[0], index)
        )
        store.release(p_src, out_edge)
        return p_src, out_edge, out_ptr

    # In memory, the sources on a second core while this one gathers the other columns.
    from_sources = _Background(sources) if parallel else None
    msg = _gather(store, cols.msg, by_dst)
    cols.msg = None
    pattern = _gather(store, cols.pattern, by_dst, np.uint8 if narrow else np.uint16)
    cols.pattern = None
    fits = _fits_float32(cols.value)  # then float32 loses nothing (see EventGraph)
    store.release(cols.value)
    value = _gather(store, cols.value, by_dst, np.float32 if fits else np.float64)
    cols.value = None
    p_src, out_edge, out_ptr = sources() if from_sources is None else from_sources.result()
    cols.src = by_dst = None
    return EventGraph(
        num_vertices=V,
        num_events=num_events,
        src=p_src,
        pattern=pattern,
        value=value,
        fixed=fixed,
        scaled=scaled,
        msg=msg,
        event_of_pos=event_of_pos,
        pos_of_event=pos_of_event,
        in_ptr=in_ptr,
        out_ptr=out_ptr,
        out_edge=out_edge,
        **fields,
    )


def _group_by(
    keys: np.ndarray, n: int, dtype: type = np.int32, out: np.ndarray | None = None
) -> np.ndarray:
    """Stable counting sort: the permutation (of ``dtype``; int32 unless ``keys`` has 2^31
    elements or more) that groups ``keys`` (in [0, n)) in ascending order; written into
    ``out`` when given (of that type and length).

    O(len + n), where ``np.argsort`` on int64 costs ~100 ns per element on this machine.
    """
    return _group_by_rows(keys, n, dtype, out)[0]


def _group_by_rows(
    keys: np.ndarray, n: int, dtype: type = np.int32, out: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_group_by` and the row pointer of the groups (of ``dtype``: what :func:`_ptr`
    gives), from the one counting pass the sort makes anyway."""
    if keys.shape[0] >= np.iinfo(np.int32).max:
        dtype = np.int64
    perm = np.empty(keys.shape[0], dtype=dtype) if out is None else out
    if perm.dtype != dtype or perm.shape != keys.shape:
        raise ValueError(f"_group_by: out is {perm.dtype}[{perm.shape[0]}], not {dtype}")
    ptr = np.zeros(n + 1, dtype=dtype)
    _counting_sort(keys, ptr, perm)
    # after the scatter, count[k] is the end of group k
    ptr[1:] = ptr[:-1].copy()
    ptr[0] = 0
    return perm, ptr


def _gather(
    store: _Columns,
    column: np.ndarray,
    order: np.ndarray,
    dtype: type | None = None,
    renumber: np.ndarray | None = None,
) -> np.ndarray:
    """``column[order]`` (cast to ``dtype``; ``renumber[column[order]]`` when given) as a new
    column of ``store``, in blocks so the temporaries stay small; the source and the result
    leave the resident set afterwards."""
    out = store.empty(order.shape[0], column.dtype if dtype is None else dtype)
    block = 1 << 24
    source, target = np.asarray(column), np.asarray(out)
    for lo in range(0, order.shape[0], block):
        if renumber is None:
            _take(source, order[lo : lo + block], target[lo : lo + block])
        else:
            _take_renumbered(source, order[lo : lo + block], renumber, target[lo : lo + block])
        store.release(column, out)  # a block reads a few runs of the source: cheap to map again
    return out


@kernel(
    *(
        f"{column}[::1], {index}[::1], {out}[::1]"
        for index in ("i4", "i8")
        for column, out in (
            ("i4", "i4"),
            ("i8", "i8"),
            ("u2", "u1"),
            ("u2", "u2"),
            ("f8", "f8"),
            ("f8", "f4"),
        )
    ),
    nogil=True,
)
def _take(column, order, out):  # pragma: no cover - compiled
    """``out[:] = column[order]`` (cast to ``out``'s type) without numpy's temporaries."""
    for k in range(order.shape[0]):
        out[k] = column[order[k]]


@kernel(
    *(
        f"{ids}[::1], {index}[::1], {ids}[::1], {ids}[::1]"
        for index in ("i4", "i8")
        for ids in ("i4", "i8")
    ),
    nogil=True,
)
def _take_renumbered(column, order, new_id, out):  # pragma: no cover - compiled
    """``out[:] = new_id[column[order]]``: a gather of ids and their renumbering in one pass."""
    for k in range(order.shape[0]):
        out[k] = new_id[column[order[k]]]


@kernel(
    "i4[::1], i4[::1], i4[::1]",
    "i8[::1], i4[::1], i4[::1]",
    "i8[::1], i8[::1], i8[::1]",
    nogil=True,
)
def _counting_sort(keys, count, perm):  # pragma: no cover - compiled
    for k in keys:
        count[k + 1] += 1
    for i in range(count.shape[0] - 2):
        count[i + 1] += count[i]
    for i in range(keys.shape[0]):
        k = keys[i]
        perm[count[k]] = i
        count[k] += 1


@kernel("i4[::1], i4[::1]", "i8[::1], i8[::1]", nogil=True)
def _invert(perm, out):  # pragma: no cover - compiled
    """``out[perm[i]] = i``: the inverse of the permutation ``perm``."""
    for i in range(perm.shape[0]):
        out[perm[i]] = i


@kernel("f8[::1]", nogil=True)
def _fits_float32(values):  # pragma: no cover - compiled
    """Every value is exactly a float32 (integral costs and byte counts below 2^24: every
    graph read from GOAL): then ``value`` is stored as float32, 4 B per edge less, and the
    kernels widen each value back to the same float64."""
    for v in values:
        if np.float64(np.float32(v)) != v:
            return False
    return True


@kernel(
    "i4[::1], i4[::1], i4[::1], i4[::1], i4[::1]", "i8[::1], i8[::1], i8[::1], i8[::1], i8[::1]"
)
def _runs_in_order(by_event, event_ptr, event_of_pos, out, out_ptr):  # pragma: no cover
    """``out``: the runs ``by_event[event_ptr[e]:event_ptr[e + 1]]`` of the events
    ``event_of_pos`` in that order; ``out_ptr`` their row pointer."""
    k = 0
    out_ptr[0] = 0
    for p in range(event_of_pos.shape[0]):
        e = event_of_pos[p]
        for j in range(event_ptr[e], event_ptr[e + 1]):
            out[k] = by_event[j]
            k += 1
        out_ptr[p + 1] = k


#: Positions per bucket of :func:`_by_position` (2^15: a bucket's edges, ~80,000 on the
#: stencil, and its counters stay in the core's cache).
_BUCKET_BITS = 15


def _by_position(
    dst: np.ndarray, position: np.ndarray, order: np.ndarray, ptr: np.ndarray, store: _Columns
) -> None:
    """``order``: the edges grouped by the position of their destination event ``dst``,
    stably; ``ptr`` its row pointer. What :func:`_group_by_rows` of ``position[dst]`` gives,
    in two passes that each write a few hundred sequential streams (buckets of
    2^:data:`_BUCKET_BITS` positions, then the positions within a bucket, whose counters and
    edges stay in cache) where one counting sort would write every edge to a line of its own
    (3·10^6 vertices: 0.3 s against 1.1 s)."""
    index = order.dtype
    spare_edge = store.empty(dst.shape[0], index)
    spare_key = store.empty(dst.shape[0], index)
    buckets = ((ptr.shape[0] - 2) >> _BUCKET_BITS) + 1
    _bucket_sort(dst, position, _BUCKET_BITS, buckets, spare_edge, spare_key, order, ptr)
    store.release(spare_edge, spare_key)


@kernel(
    *(f"{i}[::1], {i}[::1], i8, i8, {i}[::1], {i}[::1], {i}[::1], {i}[::1]" for i in ("i4", "i8"))
)
def _bucket_sort(dst, position, bits, buckets, edge, key, order, ptr):  # pragma: no cover
    """Two stable passes: the edges by bucket of ``position[dst] >> bits`` into
    ``edge``/``key``, then each bucket's edges by position into ``order`` (row pointer
    ``ptr``)."""
    start = np.zeros(buckets + 1, dtype=np.int64)
    for i in range(dst.shape[0]):  # the keys, once (order holds them until the last pass)
        k = position[dst[i]]
        order[i] = k
        start[(k >> bits) + 1] += 1
    for b in range(buckets):
        start[b + 1] += start[b]
    fill = start[:-1].copy()
    for i in range(dst.shape[0]):
        k = order[i]
        b = k >> bits
        edge[fill[b]] = i
        key[fill[b]] = k
        fill[b] += 1
    n = ptr.shape[0] - 1
    ptr[:] = 0
    for b in range(buckets):
        lo = b << bits
        for j in range(start[b], start[b + 1]):
            ptr[key[j] + 1] += 1
        ptr[lo] = start[b]
        for k in range(lo, min(lo + (1 << bits), n)):
            ptr[k + 1] += ptr[k]
        for j in range(start[b], start[b + 1]):
            k = key[j]
            order[ptr[k]] = edge[j]
            ptr[k] += 1
        # ptr[k] now ends row k: shift the bucket's row pointers back by one row
        for k in range(min(lo + (1 << bits), n) - 1, lo - 1, -1):
            ptr[k + 1] = ptr[k]
        ptr[lo] = start[b]
    ptr[n] = dst.shape[0]


@kernel("i4[::1], i4[::1]", "i8[::1], i8[::1]", nogil=True)
def _forward(in_ptr, src):  # pragma: no cover - compiled
    """Every edge goes from a lower position to a higher one (``src`` grouped by destination
    position, row pointer ``in_ptr``)."""
    for p in range(in_ptr.shape[0] - 1):
        for k in range(in_ptr[p], in_ptr[p + 1]):
            if src[k] >= p:
                return False
    return True


def _ptr(keys: np.ndarray, n: int, dtype: type = np.int64) -> np.ndarray:
    """Row pointer (of ``dtype``) of a CSR whose rows are ``keys`` (their counts: order does
    not matter)."""
    ptr = np.zeros(n + 1, dtype=dtype)
    _count_rows(keys, ptr)
    return ptr


@kernel("i4[::1], i4[::1]", "i8[::1], i8[::1]")
def _count_rows(keys, ptr):  # pragma: no cover - compiled
    for k in keys:
        ptr[k + 1] += 1
    for i in range(ptr.shape[0] - 1):
        ptr[i + 1] += ptr[i]


@kernel(
    "i8, i4[::1], i4[::1], i4[::1], i4[::1], i4[::1]",
    "i8, i8[::1], i8[::1], i8[::1], i8[::1], i8[::1]",
)
def _adjacency(n, src, dst, out_ptr, out_dst, indeg):  # pragma: no cover - compiled
    """Out-neighbours of every event, grouped by source in edge order (``out_dst``, row
    pointer ``out_ptr``), and in-degrees: one counting pass over both columns, one scatter."""
    for i in range(src.shape[0]):
        out_ptr[src[i] + 1] += 1
        indeg[dst[i]] += 1
    for v in range(n):
        out_ptr[v + 1] += out_ptr[v]
    fill = out_ptr[:-1].copy()
    for i in range(src.shape[0]):
        s = src[i]
        out_dst[fill[s]] = dst[i]
        fill[s] += 1


@kernel("i8, i4[::1], i4[::1], i4[::1]", "i8, i8[::1], i8[::1], i8[::1]")
def _kahn_depth(n, out_ptr, out_dst, indeg):  # pragma: no cover - compiled
    depth = np.zeros(n, dtype=indeg.dtype)
    done = np.zeros(n, dtype=np.bool_)
    queue = np.empty(n, dtype=indeg.dtype)
    head = 0
    tail = 0
    for v in range(n):
        if indeg[v] == 0:
            queue[tail] = v
            tail += 1
    while head < tail:
        v = queue[head]
        head += 1
        done[v] = True
        for k in range(out_ptr[v], out_ptr[v + 1]):
            u = out_dst[k]
            if depth[v] + 1 > depth[u]:
                depth[u] = depth[v] + 1
            indeg[u] -= 1
            if indeg[u] == 0:
                queue[tail] = u
                tail += 1
    return depth, done


def _depths(n: int, src: np.ndarray, dst: np.ndarray, graph: ExecutionGraph) -> np.ndarray:
    """Longest edge count from a source for every event; raise on a cycle (a deadlock).

    Temporaries of the index type: 4 B per edge and 17 B per event besides the result."""
    index = src.dtype
    out_ptr = np.zeros(n + 1, dtype=index)
    out_dst = np.empty(src.shape[0], dtype=index)
    indeg = np.zeros(n, dtype=index)
    _adjacency(n, src, dst, out_ptr, out_dst, indeg)
    depth, done = _kahn_depth(n, out_ptr, out_dst, indeg)
    del out_dst, out_ptr, indeg
    if not done.all():
        raise GraphError(_describe_cycle(n, src, dst, ~done, graph))
    return depth


def _describe_cycle(
    n: int, src: np.ndarray, dst: np.ndarray, remaining: np.ndarray, graph: ExecutionGraph
) -> str:
    """Name the vertices of one cycle among the events Kahn's algorithm could not order.

    Every unordered event has an unordered predecessor, so walking predecessors from one of
    them must revisit an event: the walk's tail is a cycle.
    """
    in_edge = _group_by(dst, n)
    in_ptr = _ptr(dst, n)
    seen: dict[int, int] = {}
    path: list[int] = []
    event = int(np.flatnonzero(remaining)[0])
    while event not in seen:
        seen[event] = len(path)
        path.append(event)
        preds = src[in_edge[in_ptr[event] : in_ptr[event + 1]]]
        event = int(preds[remaining[preds]][0])
    cycle = path[seen[event] :][::-1]
    V = graph.num_vertices
    vertices: list[int] = []
    for ev in cycle:
        v = ev // 2 if ev < 2 * V else -1
        if v >= 0 and (not vertices or vertices[-1] != v):
            vertices.append(v)
    shown = " → ".join(graph.describe_vertex(v) for v in vertices[:8])
    more = f" … ({len(vertices)} vertices)" if len(vertices) > 8 else ""
    return (
        "the execution graph deadlocks (its start/finish event graph has a cycle, e.g. blocking "
        "rendezvous sends facing each other — try a larger S — or a rank's program order, the "
        f"order of its vertices, that contradicts its messages): {shown}{more}"
    )


def _build_scheduled(
    graph: ExecutionGraph,
    S: int,
    nic: str,
    rendezvous: str,
    progress: str,
    schedule_at: tuple | None,
    store: _Columns,
    step: Callable[[str], None],
    plan=None,
) -> EventGraph:
    """The event graph under ``order="schedule"``: every CPU stream and NIC chained in the
    order the schedule pass at ``schedule_at`` served its operations (:mod:`llamp.lp.schedule`).

    Events: ``2v``/``2v+1`` as always; ``2V + m`` the processing of message ``m`` by its
    receiver (its CPU stream and NIC); ``2V + M + j`` the match of the ``j``-th rendezvous
    message. At ``schedule_at`` every event's time is the pass's, so T is the pass's T; around
    it the chains keep that order and T stays a longest path.
    """
    from llamp.lp.schedule import schedule_at as run_schedule

    step(LOWERING_STEPS[0])
    at = tuple(float(x) for x in (schedule_at or (0.0, 0.0, 0.0, 0.0)))
    # The pass runs on a second thread while this one writes the edges that do not depend on
    # its orders (its kernels release the GIL): on two cores the lowering then costs about
    # the pass, not the pass plus those edges (benchmarks/RESULTS.md, "the lowering beside
    # the schedule pass"). In memory only: the columns are then allocated at a bound on the
    # edge count (pages never written are never backed), which scratch files would hold.
    pending = None
    if plan is None and store.scratch is None:
        pending = _Background(run_schedule, graph, S, nic, rendezvous, at)
    elif plan is None:
        plan = run_schedule(graph, S, nic, rendezvous, at)
    V = graph.num_vertices
    kind = graph.kind
    sends, recvs = graph.messages()
    sends, recvs = sends.astype(np.int64), recvs.astype(np.int64)
    M = sends.size
    nbytes = graph.size[sends]
    rdv = nbytes > S
    r_all = np.flatnonzero(kind == RECV)
    # Edges that do not depend on the pass's orders, and a bound on those that do (each
    # operation has at most one predecessor and one bump per chain).
    ek = graph.edge_kind
    req, ireq = ek == REQUIRES, ek == IREQUIRES
    fixed_edges = (
        int((kind == CALC).sum())
        + int((~rdv).sum())  # eager sends
        + r_all.size
        + 2 * M
        + 3 * int(rdv.sum())
        + int(req.sum())
        + int(ireq.sum())
    )
    ordered_bound = 4 * (V + M) + 2 * r_all.size + (M if rendezvous == "polled" else 0)
    num_events = 2 * V + M + int(rdv.sum())
    if pending is not None and num_events < _INDEX32_LIMIT <= fixed_edges + ordered_bound:
        plan, pending = pending.result(), None  # the bound would widen the indices: wait
    B = np.maximum(nbytes - 1, 0).astype(np.float64)
    msg_ids = np.arange(M, dtype=np.int32)
    rdv_ids = np.flatnonzero(rdv)
    match_ev = np.full(M, -1, dtype=np.int64)
    match_ev[rdv_ids] = 2 * V + M + np.arange(rdv_ids.size)
    proc_ev = 2 * V + np.arange(M, dtype=np.int64)
    extra_owner = np.concatenate((recvs, recvs[rdv_ids]))
    serial = nic == "serial"
    handshake = rendezvous != "loggopsim"  # handshake or polled: RTS, CTS, data

    calc = np.flatnonzero(kind == CALC)
    hs = rdv if handshake else np.zeros_like(rdv)
    lg = np.zeros_like(rdv) if handshake else rdv
    if pending is None:
        capacity = fixed_edges + _ordered_edges(plan, r_all)
        index = np.int32 if max(num_events, capacity) < _INDEX32_LIMIT else np.int64
    else:
        capacity = fixed_edges + ordered_bound
        index = np.int32 if num_events < _INDEX32_LIMIT else np.int64
    cols = _EdgeColumns(capacity, index, store)
    add = cols.add
    O1 = (0.0, 0.0, 0.0, 1.0, 0.0)
    CONST1, BYTES = (1.0, 0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0, 0.0)
    GAP = (0.0, 0.0, 0.0, 0.0, 1.0)

    # Vertices: a calc holds its CPU for its cost, an eager send for o; a receive completes
    # no earlier than it is posted (its o is paid when its message is processed).
    add(2 * calc, 2 * calc + 1, scaled=CONST1, value=graph.cost_ns[calc])
    add(2 * sends[~rdv], 2 * sends[~rdv] + 1, O1)
    add(2 * r_all, 2 * r_all + 1)
    # Messages: arrival (o + L, + B·G on the wire when NICs overlap), processing (o, + B·G on
    # the receiving CPU under nic serial), the match of a rendezvous message.
    wire = _ZERO if serial else BYTES
    at_cpu = BYTES if serial else _ZERO
    direct = ~hs
    add(2 * sends[direct], proc_ev[direct], (0, 1, 0, 1, 0), wire, B[direct], m=msg_ids[direct])
    add(proc_ev, 2 * recvs + 1, O1, at_cpu, B, m=msg_ids)
    add(2 * sends[hs], match_ev[hs], (0, 1, 0, 1, 0), m=msg_ids[hs])
    add(2 * recvs[hs], match_ev[hs])
    add(match_ev[hs], proc_ev[hs], (0, 2, 0, 2, 0), wire, B[hs], m=msg_ids[hs])
    add(match_ev[hs], 2 * sends[hs] + 1, (0, 1, 0, 2, 0), m=msg_ids[hs])
    add(proc_ev[lg], match_ev[lg])
    add(2 * recvs[lg], match_ev[lg])
    add(match_ev[lg], 2 * sends[lg] + 1)
    # Dependencies.
    src, dst = graph.edge_src.astype(np.int64), graph.edge_dst.astype(np.int64)
    add(2 * src[req] + 1, 2 * dst[req])
    isrc, idst = src[ireq], dst[ireq]
    from_send = kind[isrc] == SEND
    add(2 * isrc[from_send], 2 * idst[from_send], O1)
    add(2 * isrc[~from_send], 2 * idst[~from_send])
    del src, dst, isrc, idst, from_send, req, ireq
    if pending is not None:
        plan = pending.result()
    # The schedule's orders. An operation ``a`` served before ``b`` holds the resource from
    # its start for its duration: a calc until its finish, a send o, a processing o (+ B·G).
    # Operations are vertices ``v`` and the processing of message ``m`` (``V + m``).
    holds = np.concatenate((kind, np.full(M, _PROCESSING, dtype=kind.dtype)))
    nic_chains = plan.params.nic == "serial"  # the pass chains NICs only then
    send_msg = np.zeros(V if nic_chains else 0, dtype=np.int64)  # a send's message
    if nic_chains:
        send_msg[sends] = np.arange(M)
    chains = (plan.cpu_prev, plan.cpu_bump, plan.post_prev, plan.post_bump)
    chains += (plan.nic_prev, plan.nic_bump, plan.match_prev)
    # The patterns of the edge groups _order_edges writes, in its order: after a calc, a send
    # and a processing on a CPU stream, a rendezvous match bumping it; the same before a
    # receive is posted or a polled request answered; the NIC chains (g, + B·G) and their
    # bumps.
    cpu_groups = ((_ZERO, _ZERO), (O1, _ZERO), (O1, at_cpu), (_ZERO, _ZERO))
    groups = (*cpu_groups, *cpu_groups, (GAP, BYTES), (_ZERO, _ZERO))
    count = np.zeros(len(groups), dtype=np.int64)
    ids = np.zeros(len(groups), dtype=np.int64)
    ops = V + M

    def order_edges(lo: int, hi: int, columns: tuple, at: int) -> int:
        r = r_all[np.searchsorted(r_all, lo) : np.searchsorted(r_all, hi)]
        return _order_edges(
            V, lo, hi, holds, *chains, r, match_ev, B, send_msg, ids, *columns, at, count
        )

    nothing = np.zeros(0, dtype=index)
    types = (index, index, np.uint16, np.float64, np.int32)
    order_edges(0, ops, tuple(nothing.astype(t) for t in types), 0)  # counts only
    for g, (fixed_c, scaled_c) in enumerate(groups):
        if count[g]:  # registered in the order the groups come, as add() would
            ids[g] = cols.pattern_of(fixed_c, scaled_c)
    if pending is not None:
        capacity = cols.size + int(count.sum())
        cols.trim(capacity)
    elif cols.size + int(count.sum()) != capacity:
        raise RuntimeError(f"event graph: {cols.size + count.sum()} edges, {capacity} planned")
    # In chunks of operations on scratch columns, each chunk's columns released once written
    # (an event's in-edges all come from the chunk of its operation, in the same order).
    chunk = cols.CHUNK if store.scratch is not None else max(ops, 1)
    columns = (cols.src, cols.dst, cols.pattern, cols.value, cols.msg)
    for lo in range(0, ops, chunk):
        cols.size = order_edges(lo, min(lo + chunk, ops), columns, cols.size)
        store.release(cols.pattern, cols.value, cols.msg)
    if cols.size != capacity:
        raise RuntimeError(f"event graph: {cols.size} edges, {capacity} planned")
    # The events numbered in the order the pass fixed their times: a topological order.
    sequence = plan.sequence
    position = np.concatenate((sequence[: 2 * V + M], sequence[2 * V + M :][rdv_ids]))
    if plan.fixed != num_events or (num_events and position.min() < 0):
        raise RuntimeError(f"event graph: the pass fixed {plan.fixed} of {num_events} events")
    return _assemble(
        graph,
        cols,
        store,
        num_events,
        index,
        step,
        position.astype(index, copy=False),
        rendezvous=rdv,
        S=int(S),
        num_handshakes=int(M + rdv_ids.size),
        extra_owner=extra_owner.astype(index),
        progress=progress,
        nic=nic,
        order="schedule",
        rendezvous_model=rendezvous,
        schedule_at=at,
    )


def _ordered_edges(plan, r_all: np.ndarray) -> int:
    """The edges that fix the schedule pass's orders (predecessors and bumps of every CPU
    stream, NIC and receive post, and the CPU stream before each polled answer)."""
    chains = (plan.cpu_prev, plan.cpu_bump, plan.nic_prev, plan.nic_bump, plan.match_prev)
    posts = (plan.post_prev[r_all], plan.post_bump[r_all])
    return sum(int(np.count_nonzero(x >= 0)) for x in (*chains, *posts))


@kernel(inline="always")
def _after(held):  # pragma: no cover - compiled
    """The group (0 a calc, 1 a send, 2 a processing; −1 none) of an edge after an operation
    that holds its resource as ``held``."""
    return 0 if held == CALC else 1 if held == SEND else 2 if held == _PROCESSING else -1


@kernel(inline="always")
def _after_source(a, group, V):  # pragma: no cover - compiled
    """(source event, message) of the edge after operation ``a`` of ``group``: its finish
    (a calc), its start + o (a send), its processing + o (+ B·G) (message ``a − V``)."""
    if group == 0:
        return 2 * a + 1, -1
    if group == 1:
        return 2 * a, -1
    return a + V, a - V


@kernel(
    *(
        f"i8, i8, i8, i1[::1], {p}[::1], {p}[::1], {p}[::1], {p}[::1], {p}[::1], {p}[::1], "
        f"{p}[::1], "
        f"i8[::1], i8[::1], f8[::1], i8[::1], i8[::1], {e}[::1], {e}[::1], u2[::1], f8[::1], "
        "i4[::1], i8, i8[::1]"
        for p, e in (("i4", "i4"), ("i4", "i8"), ("i8", "i8"))
    ),
    nogil=True,
)
def _order_edges(
    V, lo, hi, holds, cpu_prev, cpu_bump, post_prev, post_bump, nic_prev, nic_bump,
    match_prev, r_all, match_ev, B, send_msg, ids, src, dst, pattern, value, msg, at, count,
):  # fmt: skip  # pragma: no cover - compiled
    """The edges that fix the schedule pass's orders into operations ``lo`` … ``hi − 1``
    (the receives ``r_all`` among them), written from edge ``at`` on in ten groups, group
    ``g`` with pattern ``ids[g]``, each in operation order: into each operation's start
    from the one before it on its CPU stream if that is a calc (0), a send (1), a processing
    (2); from a rendezvous match bumping it (3); the same four into each receive's post
    (4–7), the first three also into the match of each polled rendezvous message answered
    at its CPU stream's clock (``match_prev``, written with the processing of that message);
    from the one before it on its NIC (8); from a match bumping that (9). Returns
    the end. With no columns given (``src`` empty) it only adds each group's count to
    ``count``.

    An operation is a vertex ``v`` (start event ``2v``) or the processing of message ``m``
    (``V + m``, event ``2V + m``); ``a`` served before ``b`` holds the resource from its
    start, so its edge leaves ``a``'s finish (a calc), its start + o (a send) or its
    processing + o (+ B·G)."""
    n = np.zeros(10, dtype=np.int64)  # this range's edges per group (phase 0)
    cur = np.zeros(10, dtype=np.int64)  # where each group's next edge goes (phase 1)
    k = at
    for phase in range(1 if src.shape[0] == 0 else 2):
        if phase == 1:
            for g in range(10):
                cur[g] = k
                k += n[g]
        for b in range(lo, hi):
            d = b + min(b, V)
            a = cpu_prev[b]
            g = _after(holds[a]) if a >= 0 else -1
            if g >= 0 and phase == 0:
                n[g] += 1
            elif g >= 0:
                s, m = _after_source(a, g, V)
                _put(src, dst, pattern, msg, cur[g], s, d, ids[g], m)
                cur[g] += 1
            a = nic_prev[b]
            if a >= 0 and phase == 0:
                n[8] += 1
            elif a >= 0:
                m = send_msg[a] if a < V else a - V
                _put(src, dst, pattern, msg, cur[8], a + min(a, V), d, ids[8], m)
                cur[8] += 1
            for g in (3, 9):  # a rendezvous match bumping the CPU stream, the NIC
                a = cpu_bump[b] if g == 3 else nic_bump[b]
                if a >= 0 and phase == 0:
                    n[g] += 1
                elif a >= 0:
                    _put(src, dst, pattern, msg, cur[g], match_ev[a], d, ids[g], -1)
                    cur[g] += 1
            if b >= V and match_prev.shape[0] > 0:  # a polled request answered after a
                a = match_prev[b - V]
                g = _after(holds[a]) if a >= 0 else -1
                if g >= 0 and phase == 0:
                    n[4 + g] += 1
                elif g >= 0:
                    s, m = _after_source(a, g, V)
                    _put(src, dst, pattern, msg, cur[4 + g], s, match_ev[b - V], ids[4 + g], m)
                    cur[4 + g] += 1
        for i in range(r_all.shape[0]):
            r = r_all[i]
            a = post_prev[r]
            g = _after(holds[a]) if a >= 0 else -1
            if g >= 0 and phase == 0:
                n[4 + g] += 1
            elif g >= 0:
                s, m = _after_source(a, g, V)
                _put(src, dst, pattern, msg, cur[4 + g], s, 2 * r, ids[4 + g], m)
                cur[4 + g] += 1
            a = post_bump[r]
            if a >= 0 and phase == 0:
                n[7] += 1
            elif a >= 0:
                _put(src, dst, pattern, msg, cur[7], match_ev[a], 2 * r, ids[7], -1)
                cur[7] += 1
    if src.shape[0] == 0:
        for g in range(10):
            count[g] += n[g]
        return k
    # the values after the branches: these loads are independent, so they overlap
    for j in range(at, k):
        m = msg[j]
        value[j] = B[m] if m >= 0 else 0.0
    return k


@kernel(inline="always")
def _put(src, dst, pattern, msg, j, s, d, q, m):  # pragma: no cover - compiled
    """Edge ``j``: ``s → d``, pattern ``q``, message ``m`` (its value: its bytes − 1 if it
    has a message, else 0)."""
    src[j] = s
    dst[j] = d
    pattern[j] = q
    msg[j] = m


class _Background:
    """``func(*args)`` on a daemon thread (its kernels release the GIL); :meth:`result`
    waits for it and returns its value or raises its exception. A daemon: Ctrl-C ends the
    process without waiting for a pass under way."""

    def __init__(self, func: Callable, *args: Any):
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._target, args=(func, args), daemon=True)
        self._thread.start()

    def _target(self, func: Callable, args: tuple) -> None:
        try:
            self._value = func(*args)
        except BaseException as err:  # handed to the caller of result()
            self._error = err

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
