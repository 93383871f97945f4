"""The start/finish event graph of an execution graph under LogGPS (DESIGN §3.1).

Both engines evaluate this graph, so they implement one semantics. Every vertex ``v`` has a
start event ``2v`` and a finish event ``2v+1``; the ``j``-th rendezvous message adds a
handshake event ``2V + j`` (the RTS has arrived and the receive is posted), and the ``i``-th
analytic collective instance (``coll`` vertices, see :mod:`llamp.graph`) a sync event
``2V + H + i`` (every member has entered it; ``H`` handshakes). An event edge ``a → b``
carries a weight that is affine in the parameters::

    w = const + cL·L + cG·G + co·o

and ``time(b) = max over in-edges (time(a) + w)`` (0 for an event without in-edges). The
runtime ``T`` is the largest event time. Edges (``n`` = message size, ``B = max(n−1, 0)``):

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
send posts of a rank        start(s_i) → start(s_i+1)   o
recvs joined by one wait    finish(r_i) → finish(r_i+1) o
==========================  ==========================  =================================

(``lat``, ``bytes``: the instance's latency and byte terms, :meth:`ExecutionGraph.collective_terms`.)

The last two rows are the CPU serialisation of DESIGN §3.1: a rank's sends are posted one
after another, and receives completed by the same wait (the requires-predecessors of one
vertex) are processed one after another. Their order is "program order" made safe: events
are ranked by their depth (longest edge count from a source) in the graph without these
edges, ties broken by vertex id, so the added edges can never close a cycle — and the same
(depth, id) key is a topological order of the full event graph.

The event graph is acyclic even when the vertex graph is not (an ``irequires`` links a start
to a start: LULESH's Irecv → … → Isend → message → Irecv on the peer is fine). A cycle in the
event graph is a real deadlock of the modelled program (e.g. two blocking rendezvous sends
facing each other); it is reported with the vertices on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from llamp.errors import GraphError
from llamp.graph import CALC, COLL, IREQUIRES, RECV, REQUIRES, SEND, ExecutionGraph

#: Columns of :attr:`EventGraph.coef`.
CONST, COEF_L, COEF_G, COEF_O = 0, 1, 2, 3


@dataclass(frozen=True, eq=False)
class EventGraph:
    """Event DAG with affine edge weights, in CSR form for both engines.

    Events are numbered by topological position ("positions"): ``event_of_pos[p]`` is the
    event id (``2v``, ``2v+1``, a handshake or a collective sync) at position ``p``,
    ``pos_of_event`` the inverse. ``extra_owner[e − 2V]`` is the vertex an extra event belongs
    to: the receive of a handshake's message, the lowest member vertex of a sync.
    ``src/dst`` are positions, edges sorted by ``dst`` so ``in_ptr[p]:in_ptr[p+1]`` are the
    in-edges of position ``p``; ``out_edge[out_ptr[p]:out_ptr[p+1]]`` its out-edges.
    ``coef[e] = (const, cL, cG, co)`` for edge ``e``; ``msg[e]`` is the index (into
    ``graph.messages()``) of the message whose latency/bandwidth the edge pays, or −1.
    """

    num_vertices: int
    num_events: int
    src: np.ndarray
    dst: np.ndarray
    coef: np.ndarray
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

    @property
    def num_edges(self) -> int:
        return int(self.src.shape[0])

    def weights(self, L: float, G: float, o: float) -> np.ndarray:
        """Edge weights at one configuration (vectorised)."""
        c = self.coef
        return c[:, CONST] + c[:, COEF_L] * L + c[:, COEF_G] * G + c[:, COEF_O] * o

    def vertex_of_pos(self, positions: np.ndarray) -> np.ndarray:
        """Vertex id of the events at ``positions`` (−1 for handshake and sync events)."""
        events = self.event_of_pos[np.asarray(positions, dtype=np.int64)]
        return np.where(events < 2 * self.num_vertices, events // 2, -1)

    def owner_of_pos(self, positions: np.ndarray) -> np.ndarray:
        """Vertex the events at ``positions`` belong to (extra events: see ``extra_owner``)."""
        events = self.event_of_pos[np.asarray(positions, dtype=np.int64)]
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


class _EdgeColumns:
    """Preallocated edge columns filled block by block (no list of parts to concatenate:
    at 10^7 vertices the parts and their concatenation would double the peak memory)."""

    def __init__(self, capacity: int):
        self.src = np.empty(capacity, dtype=np.int64)
        self.dst = np.empty(capacity, dtype=np.int64)
        self.coef = np.zeros((capacity, 4), dtype=np.float64)
        self.msg = np.full(capacity, -1, dtype=np.int64)
        self.size = 0

    def add(self, s, d, const=0.0, cL=0.0, cG=0.0, co=0.0, m=None) -> None:
        n = np.size(s)
        if n == 0:
            return
        a, b = self.size, self.size + n
        if b > self.src.size:
            raise RuntimeError(f"event graph: {b} edges exceed the {self.src.size} planned")
        self.src[a:b] = s
        self.dst[a:b] = d
        block = self.coef[a:b]
        for column, value in ((CONST, const), (COEF_L, cL), (COEF_G, cG), (COEF_O, co)):
            if np.ndim(value) or value != 0.0:
                block[:, column] = value
        if m is not None:
            self.msg[a:b] = m
        self.size = b


def build_event_graph(graph: ExecutionGraph, S: int) -> EventGraph:
    """Lower ``graph`` to its event graph for rendezvous threshold ``S`` (eager iff size ≤ S).

    Memory: the edge columns are allocated once at their final size and sorted in place, so
    the peak is the event graph plus one permutation (≈ 80 B per edge and 50 B per event).
    """
    V = graph.num_vertices
    kind = graph.kind
    sends, recvs = graph.messages()
    nbytes = graph.size[sends]
    rdv = nbytes > S
    B = np.maximum(nbytes - 1, 0).astype(np.float64)
    del nbytes
    msg_ids = np.arange(sends.size, dtype=np.int64)
    rdv_ids = np.flatnonzero(rdv)
    handshake = np.full(sends.size, -1, dtype=np.int64)
    handshake[rdv_ids] = 2 * V + np.arange(rdv_ids.size)
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
    extra_owner = np.empty(num_events - 2 * V, dtype=np.int64)
    extra_owner[: rdv_ids.size] = recvs[rdv_ids]
    if num_syncs:
        first_member = np.full(num_syncs, V, dtype=np.int64)
        np.minimum.at(first_member, instance, colls)
        extra_owner[rdv_ids.size :] = first_member

    ek = graph.edge_kind
    req = ek == REQUIRES
    ireq = ek == IREQUIRES
    calc = np.flatnonzero(kind == CALC)
    send_v = np.flatnonzero(kind == SEND)
    recv_pred = req & (kind[graph.edge_src] == RECV)
    n_recv_pred = int(recv_pred.sum())
    # Serialisation edges: one fewer than the sends of each rank, than the receives of each wait.
    ranks_sending = np.count_nonzero(np.bincount(graph.rank[send_v], minlength=graph.num_ranks))
    waits = np.count_nonzero(np.bincount(graph.edge_dst[recv_pred], minlength=V))
    n_send_chain = send_v.size - ranks_sending
    n_wait_chain = n_recv_pred - waits
    n_rdv = rdv_ids.size
    n_eager = sends.size - n_rdv
    capacity = (
        calc.size
        + 3 * n_eager
        + 4 * n_rdv
        + 2 * colls.size
        + int(req.sum())
        + int(ireq.sum())
        + n_send_chain
        + n_wait_chain
    )
    cols = _EdgeColumns(capacity)
    add = cols.add

    # Vertex-internal edges.
    add(2 * calc, 2 * calc + 1, const=graph.cost_ns[calc])
    del calc
    eager_ops = np.concatenate((sends[~rdv], recvs[~rdv]))
    add(2 * eager_ops, 2 * eager_ops + 1, co=1.0)
    del eager_ops
    # Messages.
    e = ~rdv
    add(2 * sends[e], 2 * recvs[e] + 1, cL=1.0, cG=B[e], co=2.0, m=msg_ids[e])
    h = handshake[rdv]
    add(2 * sends[rdv], h, cL=1.0, co=1.0, m=msg_ids[rdv])
    add(2 * recvs[rdv], h)
    add(h, 2 * recvs[rdv] + 1, cL=2.0, cG=B[rdv], co=3.0, m=msg_ids[rdv])
    add(h, 2 * sends[rdv] + 1, cL=1.0, co=2.0, m=msg_ids[rdv])
    # Analytic collectives: every member enters the instance's sync, which releases them all.
    if colls.size:
        sync = sync_base + instance
        inst = present[instance]
        add(2 * colls, sync)
        add(sync, 2 * colls + 1, const=graph.cost_ns[colls], cL=lat[inst], cG=byt[inst])
    del B, msg_ids, handshake, h, e
    # Dependencies.
    add(2 * graph.edge_src[req] + 1, 2 * graph.edge_dst[req])
    isrc = graph.edge_src[ireq]
    add(2 * isrc, 2 * graph.edge_dst[ireq], co=np.where(kind[isrc] == SEND, 1.0, 0.0))
    del isrc, ireq

    base = cols.size
    depth = _depths(num_events, cols.src[:base], cols.dst[:base], graph)

    # CPU serialisation of send posts, per rank, in (depth, id) order.
    if send_v.size > 1:
        d = depth[2 * send_v]
        by_depth = _group_by(d, int(d.max()) + 1)
        key = by_depth[_group_by(graph.rank[send_v][by_depth], graph.num_ranks)]
        ordered = send_v[key]
        same_rank = graph.rank[ordered[1:]] == graph.rank[ordered[:-1]]
        add(2 * ordered[:-1][same_rank], 2 * ordered[1:][same_rank], co=1.0)
    # Receives completed by the same wait: requires-predecessors of one vertex.
    r = graph.edge_src[recv_pred]
    w = graph.edge_dst[recv_pred]
    if r.size > 1:
        by_id = _group_by(r, V)  # ties in (wait, depth) by vertex id, whatever the edge order
        r, w = r[by_id], w[by_id]
        d = depth[2 * r + 1]
        by_depth = _group_by(d, int(d.max()) + 1)
        key = by_depth[_group_by(w[by_depth], V)]
        r, w = r[key], w[key]
        same_wait = w[1:] == w[:-1]
        add(2 * r[:-1][same_wait] + 1, 2 * r[1:][same_wait] + 1, co=1.0)
    if cols.size != capacity:
        raise RuntimeError(f"event graph: {cols.size} edges, {capacity} planned")

    # Renumber events by topological position so both engines sweep arrays front to back,
    # and sort edges by destination so the in-edges of an event are one contiguous run
    # (stable: in-edges keep the order above). Both in place.
    event_of_pos = _group_by(depth, int(depth.max()) + 1 if num_events else 0)  # ties: by id
    del depth
    pos_of_event = np.empty(num_events, dtype=np.int64)
    pos_of_event[event_of_pos] = np.arange(num_events, dtype=np.int64)
    p_src, p_dst, coef, msg = cols.src, cols.dst, cols.coef, cols.msg
    _renumber(p_src, pos_of_event)
    _renumber(p_dst, pos_of_event)
    by_dst = _group_by(p_dst, num_events)
    _permute(by_dst, p_src, p_dst, msg, coef)
    del by_dst
    in_ptr = _ptr(p_dst, num_events)
    out_edge = _group_by(p_src, num_events)
    out_ptr = _ptr(p_src, num_events)
    return EventGraph(
        num_vertices=V,
        num_events=num_events,
        src=p_src,
        dst=p_dst,
        coef=np.ascontiguousarray(coef),
        msg=msg,
        event_of_pos=event_of_pos,
        pos_of_event=pos_of_event,
        in_ptr=in_ptr,
        out_ptr=out_ptr,
        out_edge=out_edge,
        rendezvous=rdv,
        S=int(S),
        num_handshakes=int(rdv_ids.size),
        extra_owner=extra_owner,
    )


@numba.njit(cache=True)
def _group_by(keys, n):  # pragma: no cover - compiled
    """Stable counting sort: the permutation that groups ``keys`` (in [0, n)) in ascending order.

    O(len + n), where ``np.argsort`` on int64 costs ~100 ns per element on this machine.
    """
    count = np.zeros(n + 1, dtype=np.int64)
    for k in keys:
        count[k + 1] += 1
    for i in range(n):
        count[i + 1] += count[i]
    perm = np.empty(keys.shape[0], dtype=np.int64)
    for i in range(keys.shape[0]):
        k = keys[i]
        perm[count[k]] = i
        count[k] += 1
    return perm


@numba.njit(cache=True)
def _renumber(ids, new_id):  # pragma: no cover - compiled
    """``ids[i] = new_id[ids[i]]`` in place."""
    for i in range(ids.shape[0]):
        ids[i] = new_id[ids[i]]


@numba.njit(cache=True)
def _permute(perm, a, b, c, rows):  # pragma: no cover - compiled
    """Reorder ``a``, ``b``, ``c`` and the rows of ``rows`` in place: element ``i`` becomes
    element ``perm[i]`` (``x[:] = x[perm]`` without a copy). Consumes ``perm`` (a moved
    element is marked by ``perm[j] = j``)."""
    n = perm.shape[0]
    k_dim = rows.shape[1]
    keep = np.empty(k_dim)
    for start in range(n):
        if perm[start] == start:
            continue
        ta, tb, tc = a[start], b[start], c[start]
        for k in range(k_dim):
            keep[k] = rows[start, k]
        j = start
        while True:
            nxt = perm[j]
            perm[j] = j
            if nxt == start:
                a[j], b[j], c[j] = ta, tb, tc
                for k in range(k_dim):
                    rows[j, k] = keep[k]
                break
            a[j], b[j], c[j] = a[nxt], b[nxt], c[nxt]
            for k in range(k_dim):
                rows[j, k] = rows[nxt, k]
            j = nxt


def _ptr(keys: np.ndarray, n: int) -> np.ndarray:
    """Row pointer of a CSR whose rows are ``keys`` (their counts: order does not matter)."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr


@numba.njit(cache=True)
def _kahn_depth(n, out_ptr, out_edge, dst, indeg):  # pragma: no cover - compiled
    depth = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=np.bool_)
    queue = np.empty(n, dtype=np.int64)
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
            u = dst[out_edge[k]]
            if depth[v] + 1 > depth[u]:
                depth[u] = depth[v] + 1
            indeg[u] -= 1
            if indeg[u] == 0:
                queue[tail] = u
                tail += 1
    return depth, done


def _depths(n: int, src: np.ndarray, dst: np.ndarray, graph: ExecutionGraph) -> np.ndarray:
    """Longest edge count from a source for every event; raise on a cycle (a deadlock)."""
    out_edge = _group_by(src, n)
    out_ptr = _ptr(src[out_edge], n)
    indeg = np.bincount(dst, minlength=n).astype(np.int64)
    depth, done = _kahn_depth(n, out_ptr, out_edge, dst, indeg)
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
    in_ptr = _ptr(dst[in_edge], n)
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
        f"rendezvous sends facing each other — try a larger S): {shown}{more}"
    )
