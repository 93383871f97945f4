"""The schedule pass: the order in which every CPU stream and NIC serves its operations, from
one event-driven run of the graph at one configuration (docs/model.md §Serialisation).

The semantics are LogGOPSim's (Hoefler, Schneider & Lumsdaine, HPDC 2010; spcl/LogGOPSim
``LogGOPSim.cpp``):

- each (rank, cpu) stream is one resource: a calc holds it ``cost``, a send ``o``, the
  processing of an arriving message ``o`` (+ ``B·G`` under ``nic serial``: "a message is only
  received after G is charged"); an operation waits for it first come first served;
- each (rank, nic) injects one message after another (a send books it ``g + B·G`` from its
  start) and accepts one after another (``g + B·G`` from the start of a message's
  processing), under ``nic serial``;
- an eager message arrives ``o + L`` after its send started and is processed as soon as the
  receiver's CPU and NIC are free, whether or not its receive is posted (arrival order); the
  receive completes when both happened: ``finish(r) = max(start(r), processed)``;
- rendezvous (``size > S``), ``loggopsim``: the data travels at once like an eager message; the
  sender is released at the match (``h = max(processing start, start(r))``, no latency back),
  and its CPU stream and NIC are not used before ``h`` again (LogGOPSim moves their clocks to
  ``h``); ``handshake``: the RTS arrives ``o + L`` after the send started, the match is
  ``h = max(arrival, start(r))``, the data arrives ``2o + 2L`` later and is processed as
  above, and the sender finishes at ``h + 2o + L``; ``polled``: the same, but a request that
  arrives after its receive was posted is answered only when the receiver's CPU stream is
  free (the receiver is inside MPI, not computing), first come first served with the
  stream's other operations, without holding it;
- a receive posts at ``max(ready, its CPU stream's clock)`` without holding the CPU; an
  operation is released when its last ``requires``/``irequires`` is satisfied (a calc's
  ``irequires`` at its start, a send's at its start + ``o``);
- the pending operations form one priority queue ordered by (time, insertion), operations
  released together entering it sends first, then receives, then calcs (LogGOPSim's order).

Where LogGOPSim is defective the pass keeps the evident semantics (docs/model.md
§Differences from LogGOPSim): an operation released by another CPU stream's operation starts no
earlier than that release (LogGOPSim starts it at its own stream's clock), a message is
processed by its receive's CPU stream and NIC (LogGOPSim: the sender's indices), and a late
receive's match moves the clock of the sender's own CPU stream.

The result (:class:`Schedule`) holds, per operation, its predecessor on its CPU stream and NIC
in serving order; :func:`llamp.lp.event_graph.build_event_graph` turns them into chains. Operations
are numbered: vertex ``v`` (calcs and sends on the CPU; sends on the injecting NIC), ``V + m``
the processing of message ``m`` (CPU and receiving NIC). One numba kernel over the CSR arrays
with an array-based binary heap: no Python object per vertex.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llamp.errors import GraphError
from llamp.graph import CALC, COLL, IREQUIRES, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.kernel import kernel
from llamp.params import LogGPS


@dataclass(frozen=True, eq=False)
class Schedule:
    """Serving orders and times of one schedule pass (``V`` vertices, ``M`` messages).

    ``cpu_prev[op]`` is the operation served just before ``op`` on its CPU stream (−1: none),
    ``nic_prev[op]`` just before it on its NIC (sends: the injecting NIC; ``V + m``: the
    receiving NIC), ``bump[op]`` the rendezvous message whose match last moved ``op``'s CPU
    stream / NIC clock since the previous operation there (−1: none; ``loggopsim`` only).
    ``post_prev[r]`` / ``post_bump[r]`` the same for the CPU clock a receive ``r`` posts at,
    ``match_prev[m]`` for the CPU clock a ``polled`` rendezvous message ``m`` is answered at
    (its request arrived after its receive was posted; −1 otherwise).
    These seven are int32 while ``V + 2M`` fits, else int64.
    ``start`` (per vertex), ``processed`` (per message) and ``match`` (per message, rendezvous
    only, else NaN) are the times of the pass; ``runtime`` its T.

    ``sequence`` numbers the times in the order the pass fixed them (``fixed`` of them, from
    0): the start of vertex ``v`` at ``2v``, its finish at ``2v + 1``, the processing of
    message ``m`` at ``2V + m``, its match at ``2V + M + m`` (−1: none). The pass fixes a
    time only from times it fixed before (a predecessor on a stream or NIC was served
    before, an operation is released after its dependencies finished, a message is processed
    after its send started), so the event graph lowered from these orders has every edge
    going forward in this numbering, equal times included: it is a topological order
    (:func:`llamp.lp.event_graph.build_event_graph` numbers the events by it).
    """

    params: LogGPS
    start: np.ndarray
    finish: np.ndarray
    processed: np.ndarray
    match: np.ndarray
    cpu_prev: np.ndarray
    cpu_bump: np.ndarray
    nic_prev: np.ndarray
    nic_bump: np.ndarray
    post_prev: np.ndarray
    post_bump: np.ndarray
    match_prev: np.ndarray
    runtime: float
    sequence: np.ndarray
    fixed: int

    def same_order(self, other: Schedule) -> bool:
        """Both passes served every CPU stream and NIC in the same order (then both lower to
        the same event graph)."""
        names = ("cpu_prev", "cpu_bump", "nic_prev", "nic_bump", "post_prev", "post_bump")
        names += ("match_prev",)
        return all(np.array_equal(getattr(self, n), getattr(other, n)) for n in names)


#: Kinds in the order LogGOPSim queues operations released together (send, recv, calc).
_QUEUE_RANK = np.array([3, 1, 2, 4], dtype=np.int8)  # indexed by CALC, SEND, RECV, COLL


def schedule(graph: ExecutionGraph, params: LogGPS) -> Schedule:
    """Run the schedule pass of ``graph`` at ``params`` (its L, o, G, g, S, nic and rendezvous).

    Raises :class:`GraphError` for analytic collectives (they have no sender/receiver to
    schedule) and when the run stops with operations left (a deadlock of the program).
    """
    V = graph.num_vertices
    kind = graph.kind
    if np.any(kind == COLL):
        raise GraphError(
            "the schedule order (the default) needs point-to-point messages and this graph has "
            "analytic collectives: use --order program (order='program'), or ingest with the "
            "collectives expanded (e.g. --collectives allreduce=ring)"
        )
    sends, recvs = graph.messages()
    M = sends.size
    # Vertex, message and stream indices as int32 while they fit (half the memory traffic of
    # int64 in the event loop), and so are the serving orders the pass returns.
    idx = np.int32 if V + 2 * M + 1 < np.iinfo(np.int32).max else np.int64
    sends = sends.astype(idx, copy=False)
    recvs = recvs.astype(idx, copy=False)
    msg_of = np.full(V, -1, dtype=idx)
    msg_of[sends] = np.arange(M, dtype=idx)
    msg_of[recvs] = np.arange(M, dtype=idx)
    nbytes = graph.size[sends].astype(np.int64)
    rdv = nbytes > params.S
    B = np.maximum(nbytes - 1, 0).astype(np.float64)

    cpu = _stream_ids(graph, "cpu", idx)
    nic = _stream_ids(graph, "nic", idx)
    ek = graph.edge_kind
    local = (ek == REQUIRES) | (ek == IREQUIRES)
    src = graph.edge_src[local]
    # Edges grouped by source (:func:`_out_edges` then orders each group by destination): a
    # stable sort. Edge lists come in a few ascending runs (one per pass of the reader or
    # generator), which numpy's timsort merges sequentially; a counting sort scatters every
    # edge at random into arrays of V entries (2.4 s against 0.4 s at 10^7 vertices, where
    # they no longer fit any cache).
    order = np.argsort(src, kind="stable")
    out_ptr = np.empty(V + 1, dtype=np.int64)
    out_dst = np.empty(src.shape[0], dtype=idx)
    out_irq = np.empty(src.shape[0], dtype=np.bool_)
    indeg = np.zeros(V, dtype=idx)
    _out_edges(
        src, graph.edge_dst[local], ek[local] == IREQUIRES, order, out_ptr, out_dst, out_irq, indeg
    )
    del order, src, local
    # Ranks of the times the pass fixes (a topological order of the lowered event graph):
    # int32 while they fit, as the lowering's indices.
    events = 2 * V + 2 * M
    sequence = np.full(events, -1, dtype=np.int32 if events < np.iinfo(np.int32).max else np.int64)

    result = _run(
        kind.astype(np.int8),
        _QUEUE_RANK[kind],
        graph.rank.astype(idx, copy=False),
        cpu,
        nic,
        graph.cost_ns.astype(np.float64),
        out_ptr,
        out_dst,
        out_irq,
        indeg,
        msg_of,
        sends,
        recvs,
        rdv,
        B,
        float(params.L),
        float(params.o),
        float(params.G),
        float(params.g),
        params.nic == "serial",
        params.rendezvous == "loggopsim",
        params.rendezvous == "polled",
        sequence,
    )
    (start, finish, processed, match, cpu_prev, cpu_bump, nic_prev, nic_bump) = result[:8]
    post_prev, post_bump, match_prev, done, runtime, fixed = result[8:]
    if done < V:
        left = np.flatnonzero(np.isnan(start))[:8]
        shown = ", ".join(graph.describe_vertex(v) for v in left)
        raise GraphError(
            f"the schedule pass stops with {V - done} of {V} operations never started (a "
            f"deadlock of the modelled program, e.g. blocking rendezvous sends facing each "
            f"other: try a larger S): {shown}"
        )
    return Schedule(
        params=params,
        start=start,
        finish=finish,
        processed=processed,
        match=match,
        cpu_prev=cpu_prev,
        cpu_bump=cpu_bump,
        nic_prev=nic_prev,
        nic_bump=nic_bump,
        post_prev=post_prev,
        post_bump=post_bump,
        match_prev=match_prev,
        runtime=float(runtime),
        sequence=sequence,
        fixed=int(fixed),
    )


def schedule_at(
    graph: ExecutionGraph, S: int, nic: str, rendezvous: str, at: tuple[float, float, float, float]
) -> Schedule:
    """The pass an event graph under ``order="schedule"`` takes its orders from: at
    ``at`` = (L, o, G, g) with threshold ``S`` and the NIC and rendezvous models (the pass reads
    nothing else of a configuration)."""
    L, o, G, g = (float(x) for x in at)
    return schedule(graph, LogGPS(L=L, o=o, G=G, g=g, S=int(S), nic=nic, rendezvous=rendezvous))


def _stream_ids(graph: ExecutionGraph, column: str, dtype: type = np.int64) -> np.ndarray:
    """A global id per (rank, ``cpu``/``nic``) stream of every vertex (the rank itself when
    the graph has one such stream per rank)."""
    if getattr(graph, column) is None:
        return graph.rank.astype(dtype, copy=False)
    stream = graph.streams(column).astype(np.int64)
    width = int(stream.max()) + 1 if stream.size else 1
    return (graph.rank.astype(np.int64) * width + stream).astype(dtype)


#: Argument types of the pass's kernels, ahead of time: the graph's index columns (``e``)
#: and the pass's own indices (``i``), int32 below their limits and int64 above.
_OUT_EDGES = "{e}[::1], {e}[::1], b1[::1], i8[::1], i8[::1], {i}[::1], b1[::1], {i}[::1]"
_RUN = (
    "i1[::1], i1[::1], {i}[::1], {i}[::1], {i}[::1], f8[::1], i8[::1], {i}[::1], b1[::1], "
    "{i}[::1], {i}[::1], {i}[::1], {i}[::1], b1[::1], f8[::1], f8, f8, f8, f8, b1, b1, b1, "
    "{s}[::1]"
)


@kernel(
    *(_OUT_EDGES.format(e=e, i=i) for e, i in (("i4", "i4"), ("i8", "i4"), ("i8", "i8"))),
    nogil=True,
)
def _out_edges(src, dst, irq, order, out_ptr, out_dst, out_irq, indeg):  # pragma: no cover
    """The out-edges of every vertex (CSR ``out_ptr``, ``out_dst``, ``out_irq``: the edges
    ``order`` lists, grouped by ``src`` ascending, each group by ``dst``) and the in-degrees,
    in one sequential pass over ``order``."""
    V = indeg.shape[0]
    v = 0
    out_ptr[0] = 0
    for k in range(order.shape[0]):
        e = order[k]
        s = src[e]
        while v < s:
            v += 1
            out_ptr[v] = k
        d = dst[e]
        out_dst[k] = d
        out_irq[k] = irq[e]
        indeg[d] += 1
    while v < V:
        v += 1
        out_ptr[v] = order.shape[0]
    # Each vertex's dependents by vertex id (a requires edge before an irequires one to the
    # same vertex): the order the pass releases them in, and so its ties, are the graph's and
    # not the order its edges were listed or stored in (a store may return them in any order).
    for v in range(V):
        for k in range(out_ptr[v] + 1, out_ptr[v + 1]):
            d = out_dst[k]
            q = out_irq[k]
            j = k
            while j > out_ptr[v] and (
                out_dst[j - 1] > d or (out_dst[j - 1] == d and out_irq[j - 1] and not q)
            ):
                out_dst[j] = out_dst[j - 1]
                out_irq[j] = out_irq[j - 1]
                j -= 1
            out_dst[j] = d
            out_irq[j] = q


@kernel(*(_RUN.format(i=i, s=q) for i, q in (("i4", "i4"), ("i4", "i8"), ("i8", "i8"))), nogil=True)
def _run(  # noqa: C901 - one event loop  # pragma: no cover - compiled
    kind,
    qrank,
    rank,
    cpu,
    nic,
    cost,
    out_ptr,
    out_dst,
    out_irq,
    indeg,
    msg_of,
    sends,
    recvs,
    rdv,
    B,
    L,
    o,
    G,
    g,
    serial,
    loggopsim,
    polled,
    sequence,
):
    V = kind.shape[0]
    M = sends.shape[0]
    nan = np.nan
    n_cpu = 1
    n_nic = 1
    for v in range(V):
        n_cpu = max(n_cpu, cpu[v] + 1)
        n_nic = max(n_nic, nic[v] + 1)
    clock = np.zeros(n_cpu)  # LogGOPSim's nexto
    last_cpu = np.full(n_cpu, -1, np.int64)  # last operation booked on the stream
    pend_cpu = np.full(n_cpu, -1, np.int64)  # rendezvous match since that booking
    nic_s = np.zeros(n_nic)  # nextgs
    last_nics = np.full(n_nic, -1, np.int64)
    pend_nics = np.full(n_nic, -1, np.int64)
    nic_r = np.zeros(n_nic)  # nextgr
    last_nicr = np.full(n_nic, -1, np.int64)

    start = np.full(V, nan)
    finish = np.full(V, nan)
    ready = np.zeros(V)  # latest satisfied dependency
    left = indeg.copy()
    processed = np.full(M, nan)
    proc_end = np.full(M, nan)
    match = np.full(M, nan)
    rts = np.full(M, nan)  # handshake: request arrived
    ops = V + M
    # Serving orders in the pass's index type (int32 while V + 2M fits: these six arrays are
    # most of the memory the pass writes).
    cpu_prev = np.full(ops, -1, msg_of.dtype)
    cpu_bump = np.full(ops, -1, msg_of.dtype)
    nic_prev = np.full(ops, -1, msg_of.dtype)
    nic_bump = np.full(ops, -1, msg_of.dtype)
    post_prev = np.full(V, -1, msg_of.dtype)
    post_bump = np.full(V, -1, msg_of.dtype)
    match_prev = np.full(M if polled else 0, -1, msg_of.dtype)

    # Heap items: a vertex operation ``v``, the arrival of message ``m`` for processing
    # (``V + m``), or the arrival of a handshake's request (``V + M + m``).
    cap = V + 2 * M + 1
    heap_t = np.empty(cap)
    heap_s = np.empty(cap, np.int64)
    heap_i = np.empty(cap, np.int64)
    size = 0
    st_t = np.empty(cap)  # items to push before the next pop
    st_s = np.empty(cap, np.int64)
    st_i = np.empty(cap, np.int64)
    n_st = 0
    served = False  # the root is the item being served
    seq = 0
    freed = np.empty(V + 1, np.int64)  # operations released by the current event
    n_freed = 0
    keys = np.empty(V + 1, np.int64)
    order = np.empty(V + 1, np.int64)
    runtime = 0.0
    done = 0
    n_fixed = 0  # times fixed so far (``sequence``)

    # Roots: rank by rank, each rank's in LogGOPSim's queue order (stable within a kind).
    for v in range(V):
        if indeg[v] == 0:
            freed[n_freed] = v
            n_freed += 1
    while True:
        if n_freed > 0:
            # Queue the released operations rank by rank (in release order within a rank),
            # each rank's sorted by kind (send, recv, calc) as LogGOPSim's std::sort does.
            if n_freed > 32:
                for k in range(n_freed):
                    keys[k] = rank[freed[k]] * (V + 1) + k
                idx = np.argsort(keys[:n_freed])
                for k in range(n_freed):
                    order[k] = freed[idx[k]]
            else:  # stable insertion sort by rank (one or two ranks, a few operations)
                for k in range(n_freed):
                    v = freed[k]
                    j = k
                    while j > 0 and rank[order[j - 1]] > rank[v]:
                        order[j] = order[j - 1]
                        j -= 1
                    order[j] = v
            for k in range(n_freed):
                keys[k] = qrank[order[k]]
            lo = 0
            for k in range(1, n_freed + 1):
                if k == n_freed or rank[order[k]] != rank[order[lo]]:
                    if k - lo > 16:
                        _gnu_sort(keys, order, lo, k)
                    else:  # std::sort of at most 16 is its insertion sort: stable, inline
                        for i in range(lo + 1, k):
                            kk = keys[i]
                            v = order[i]
                            j = i
                            while j > lo and keys[j - 1] > kk:
                                keys[j] = keys[j - 1]
                                order[j] = order[j - 1]
                                j -= 1
                            keys[j] = kk
                            order[j] = v
                    lo = k
            for k in range(n_freed):
                v = order[k]
                c = cpu[v]
                t = max(ready[v], clock[c])
                if kind[v] == SEND and serial:  # its NIC too
                    t = max(t, nic_s[nic[v]])
                if kind[v] == RECV:  # posts at the CPU clock without holding the CPU
                    post_prev[v] = last_cpu[c]
                    post_bump[v] = pend_cpu[c]
                st_t[n_st] = t
                st_s[n_st] = seq
                st_i[n_st] = v
                n_st += 1
                seq += 1
            n_freed = 0
        # The binary heap ordered by (time, insertion), both unique together, so any heap
        # serves the same sequence. The item being served stays at the root while it is
        # served: the first item it stages then takes its place (one sift down, where a pop
        # and a push would cost a sift each), the others go in (sift up). Written out here,
        # not as functions: every array passed to a call costs an atomic reference-count
        # update in and out.
        q0 = 0
        if served:
            if n_st > 0:
                lt = st_t[0]
                ls = st_s[0]
                li = st_i[0]
                q0 = 1
            else:
                size -= 1
                lt = heap_t[size]
                ls = heap_s[size]
                li = heap_i[size]
            # Floyd's: the hole goes down to a leaf along the lesser children (chosen without
            # a branch), then the item comes up from there (it belongs near the bottom).
            i = 0
            while True:
                c = 2 * i + 1
                if c + 1 < size:
                    t1 = heap_t[c]
                    t2 = heap_t[c + 1]
                    c += (t2 < t1) | ((t2 == t1) & (heap_s[c + 1] < heap_s[c]))
                elif c >= size:
                    break
                heap_t[i] = heap_t[c]
                heap_s[i] = heap_s[c]
                heap_i[i] = heap_i[c]
                i = c
            while i > 0:
                p = (i - 1) // 2
                if heap_t[p] < lt or (heap_t[p] == lt and heap_s[p] < ls):
                    break
                heap_t[i] = heap_t[p]
                heap_s[i] = heap_s[p]
                heap_i[i] = heap_i[p]
                i = p
            heap_t[i] = lt
            heap_s[i] = ls
            heap_i[i] = li
        # (The same sift up as above, written again: one loop over both, the root's
        # replacement first, made the pass 1-2 % slower; benchmarks/RESULTS.md, "Lanes in
        # multiples of 4, and the schedule order's edges in one kernel".)
        for q in range(q0, n_st):
            t = st_t[q]
            s = st_s[q]
            i = size
            while i > 0:
                p = (i - 1) // 2
                if heap_t[p] < t or (heap_t[p] == t and heap_s[p] < s):
                    break
                heap_t[i] = heap_t[p]
                heap_s[i] = heap_s[p]
                heap_i[i] = heap_i[p]
                i = p
            heap_t[i] = t
            heap_s[i] = s
            heap_i[i] = st_i[q]
            size += 1
        n_st = 0
        if size == 0:
            break
        t = heap_t[0]
        s = heap_s[0]
        item = heap_i[0]
        served = True
        if item < V:
            v = item
            c = cpu[v]
            k = kind[v]
            if k == CALC:
                if clock[c] > t:
                    st_t[n_st] = clock[c]
                    st_s[n_st] = s
                    st_i[n_st] = v
                    n_st += 1
                    continue
                start[v] = t
                finish[v] = t + cost[v]
                sequence[2 * v] = n_fixed
                sequence[2 * v + 1] = n_fixed + 1
                n_fixed += 2
                clock[c] = finish[v]
                cpu_prev[v] = last_cpu[c]
                cpu_bump[v] = pend_cpu[c]
                last_cpu[c] = v
                pend_cpu[c] = -1
                runtime = max(runtime, finish[v])
                done += 1
                for e in range(out_ptr[v], out_ptr[v + 1]):  # started, then done
                    if out_irq[e]:
                        u = out_dst[e]
                        ready[u] = max(ready[u], t)
                        left[u] -= 1
                        if left[u] == 0:
                            freed[n_freed] = u
                            n_freed += 1
                for e in range(out_ptr[v], out_ptr[v + 1]):
                    if not out_irq[e]:
                        u = out_dst[e]
                        ready[u] = max(ready[u], finish[v])
                        left[u] -= 1
                        if left[u] == 0:
                            freed[n_freed] = u
                            n_freed += 1
            elif k == SEND:
                n = nic[v]
                busy = clock[c]
                if serial:
                    busy = max(busy, nic_s[n])
                if busy > t:
                    st_t[n_st] = busy
                    st_s[n_st] = s
                    st_i[n_st] = v
                    n_st += 1
                    continue
                m = msg_of[v]
                start[v] = t
                sequence[2 * v] = n_fixed
                n_fixed += 1
                clock[c] = t + o
                cpu_prev[v] = last_cpu[c]
                cpu_bump[v] = pend_cpu[c]
                last_cpu[c] = v
                pend_cpu[c] = -1
                if serial:
                    nic_s[n] = t + g + B[m] * G
                    nic_prev[v] = last_nics[n]
                    nic_bump[v] = pend_nics[n]
                    last_nics[n] = v
                    pend_nics[n] = -1
                runtime = max(runtime, t + o)
                done += 1
                for e in range(out_ptr[v], out_ptr[v + 1]):
                    if out_irq[e]:
                        u = out_dst[e]
                        ready[u] = max(ready[u], t + o)
                        left[u] -= 1
                        if left[u] == 0:
                            freed[n_freed] = u
                            n_freed += 1
                if rdv[m] and not loggopsim:
                    st_t[n_st] = t + o + L
                    st_s[n_st] = seq
                    st_i[n_st] = V + M + m
                    n_st += 1
                else:
                    arrive = t + o + L + (0.0 if serial else B[m] * G)
                    st_t[n_st] = arrive
                    st_s[n_st] = seq
                    st_i[n_st] = V + m
                    n_st += 1
                seq += 1
                if not rdv[m]:
                    finish[v] = t + o
                    sequence[2 * v + 1] = n_fixed
                    n_fixed += 1
                    for e in range(out_ptr[v], out_ptr[v + 1]):
                        if not out_irq[e]:
                            u = out_dst[e]
                            ready[u] = max(ready[u], t + o)
                            left[u] -= 1
                            if left[u] == 0:
                                freed[n_freed] = u
                                n_freed += 1
            else:  # RECV: posted (takes no CPU time)
                m = msg_of[v]
                start[v] = t
                sequence[2 * v] = n_fixed
                n_fixed += 1
                done += 1
                for e in range(out_ptr[v], out_ptr[v + 1]):
                    if out_irq[e]:
                        u = out_dst[e]
                        ready[u] = max(ready[u], t)
                        left[u] -= 1
                        if left[u] == 0:
                            freed[n_freed] = u
                            n_freed += 1
                h = nan
                if rdv[m] and not loggopsim:
                    if not np.isnan(rts[m]):  # the request is here: match now
                        h = t
                        data = h + 2 * o + 2 * L + (0.0 if serial else B[m] * G)
                        st_t[n_st] = data
                        st_s[n_st] = seq
                        st_i[n_st] = V + m
                        n_st += 1
                        seq += 1
                elif not np.isnan(processed[m]):  # the message is here: complete now
                    finish[v] = max(t, proc_end[m])
                    sequence[2 * v + 1] = n_fixed
                    n_fixed += 1
                    if rdv[m]:
                        h = t
                if not np.isnan(h):
                    match[m] = h
                    sequence[2 * V + M + m] = n_fixed
                    n_fixed += 1
                    sequence[2 * sends[m] + 1] = n_fixed  # the sender's finish, set below
                    n_fixed += 1
                    n_freed = _release_sender(
                        sends[m],
                        h,
                        h + (0.0 if loggopsim else 2 * o + L),
                        loggopsim,
                        serial,
                        m,
                        cpu,
                        nic,
                        clock,
                        pend_cpu,
                        nic_s,
                        pend_nics,
                        finish,
                        ready,
                        left,
                        out_ptr,
                        out_dst,
                        out_irq,
                        freed,
                        n_freed,
                    )
                    runtime = max(runtime, finish[sends[m]])
                if not np.isnan(finish[v]):
                    runtime = max(runtime, finish[v])
                    for e in range(out_ptr[v], out_ptr[v + 1]):
                        if not out_irq[e]:
                            u = out_dst[e]
                            ready[u] = max(ready[u], finish[v])
                            left[u] -= 1
                            if left[u] == 0:
                                freed[n_freed] = u
                                n_freed += 1
        elif item < V + M:  # a message to process
            m = item - V
            r = recvs[m]
            c = cpu[r]
            n = nic[r]
            busy = clock[c]
            if serial:
                busy = max(busy, nic_r[n])
            if busy > t:
                st_t[n_st] = busy
                st_s[n_st] = s
                st_i[n_st] = item
                n_st += 1
                continue
            op = V + m
            processed[m] = t
            sequence[2 * V + m] = n_fixed
            n_fixed += 1
            proc_end[m] = t + o + (B[m] * G if serial else 0.0)
            clock[c] = proc_end[m]
            cpu_prev[op] = last_cpu[c]
            cpu_bump[op] = pend_cpu[c]
            last_cpu[c] = op
            pend_cpu[c] = -1
            if serial:
                nic_r[n] = t + g + B[m] * G
                nic_prev[op] = last_nicr[n]
                last_nicr[n] = op
            runtime = max(runtime, proc_end[m])
            if not np.isnan(start[r]):  # posted: the receive completes
                finish[r] = max(start[r], proc_end[m])
                sequence[2 * r + 1] = n_fixed
                n_fixed += 1
                if rdv[m] and loggopsim:
                    match[m] = t
                    sequence[2 * V + M + m] = n_fixed
                    n_fixed += 1
                    sequence[2 * sends[m] + 1] = n_fixed  # the sender's finish, set below
                    n_fixed += 1
                    n_freed = _release_sender(
                        sends[m],
                        t,
                        t,
                        loggopsim,
                        serial,
                        m,
                        cpu,
                        nic,
                        clock,
                        pend_cpu,
                        nic_s,
                        pend_nics,
                        finish,
                        ready,
                        left,
                        out_ptr,
                        out_dst,
                        out_irq,
                        freed,
                        n_freed,
                    )
                for e in range(out_ptr[r], out_ptr[r + 1]):
                    if not out_irq[e]:
                        u = out_dst[e]
                        ready[u] = max(ready[u], finish[r])
                        left[u] -= 1
                        if left[u] == 0:
                            freed[n_freed] = u
                            n_freed += 1
        else:  # a handshake's request arrives
            m = item - V - M
            r = recvs[m]
            if polled and not np.isnan(start[r]):  # answered when the receiver is in MPI
                c = cpu[r]
                if clock[c] > t:
                    st_t[n_st] = clock[c]
                    st_s[n_st] = s
                    st_i[n_st] = item
                    n_st += 1
                    continue
                match_prev[m] = last_cpu[c]
            rts[m] = t
            if not np.isnan(start[r]):
                match[m] = t
                sequence[2 * V + M + m] = n_fixed
                n_fixed += 1
                data = t + 2 * o + 2 * L + (0.0 if serial else B[m] * G)
                st_t[n_st] = data
                st_s[n_st] = seq
                st_i[n_st] = V + m
                n_st += 1
                seq += 1
                sequence[2 * sends[m] + 1] = n_fixed  # the sender's finish, set below
                n_fixed += 1
                n_freed = _release_sender(
                    sends[m],
                    t,
                    t + 2 * o + L,
                    loggopsim,
                    serial,
                    m,
                    cpu,
                    nic,
                    clock,
                    pend_cpu,
                    nic_s,
                    pend_nics,
                    finish,
                    ready,
                    left,
                    out_ptr,
                    out_dst,
                    out_irq,
                    freed,
                    n_freed,
                )
                runtime = max(runtime, t + 2 * o + L)
    return (
        start,
        finish,
        processed,
        match,
        cpu_prev,
        cpu_bump,
        nic_prev,
        nic_bump,
        post_prev,
        post_bump,
        match_prev,
        done,
        runtime,
        n_fixed,
    )


@kernel(inline="always")
def _release_sender(  # pragma: no cover - compiled
    s,
    h,
    fin,
    loggopsim,
    serial,
    m,
    cpu,
    nic,
    clock,
    pend_cpu,
    nic_s,
    pend_nics,
    finish,
    ready,
    left,
    out_ptr,
    out_dst,
    out_irq,
    freed,
    n_freed,
):
    """The rendezvous send ``s`` finishes at ``fin`` (matched at ``h``); under ``loggopsim``
    its CPU stream and NIC are not used before ``h`` (LogGOPSim moves their clocks)."""
    finish[s] = fin
    if loggopsim:
        c = cpu[s]
        if clock[c] < h:
            clock[c] = h
            pend_cpu[c] = m
        if serial:
            n = nic[s]
            if nic_s[n] < h:
                nic_s[n] = h
                pend_nics[n] = m
    for e in range(out_ptr[s], out_ptr[s + 1]):
        if not out_irq[e]:
            u = out_dst[e]
            ready[u] = max(ready[u], fin)
            left[u] -= 1
            if left[u] == 0:
                freed[n_freed] = u
                n_freed += 1
    return n_freed


# LogGOPSim queues the operations one event releases after ``std::sort`` by kind, which is
# not stable: with more than 16 of them (a linear alltoall's root posts all its sends and
# receives at once) equal kinds change places. The functions below are GCC libstdc++'s
# introsort step for step (``bits/stl_algo.h``, ``bits/stl_heap.h``: threshold 16, median of
# three, unguarded partition, heap sort at the depth limit, final insertion sort), on keys
# ``k`` moving items ``x`` alongside, so ties fall as in LogGOPSim's runs.


@kernel()
def _swap(k, x, i, j):  # pragma: no cover - compiled
    k[i], k[j] = k[j], k[i]
    x[i], x[j] = x[j], x[i]


@kernel()
def _linear_insert(k, x, last):  # pragma: no cover - compiled
    vk = k[last]
    vx = x[last]
    nxt = last - 1
    while vk < k[nxt]:
        k[last] = k[nxt]
        x[last] = x[nxt]
        last = nxt
        nxt -= 1
    k[last] = vk
    x[last] = vx


@kernel()
def _insertion_sort(k, x, first, last):  # pragma: no cover - compiled
    if first == last:
        return
    for i in range(first + 1, last):
        if k[i] < k[first]:
            vk = k[i]
            vx = x[i]
            for j in range(i, first, -1):
                k[j] = k[j - 1]
                x[j] = x[j - 1]
            k[first] = vk
            x[first] = vx
        else:
            _linear_insert(k, x, i)


@kernel()
def _adjust_heap(k, x, first, hole, n, vk, vx):  # pragma: no cover - compiled
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if k[first + child] < k[first + child - 1]:
            child -= 1
        k[first + hole] = k[first + child]
        x[first + hole] = x[first + child]
        hole = child
    if (n & 1) == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        k[first + hole] = k[first + child - 1]
        x[first + hole] = x[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and k[first + parent] < vk:
        k[first + hole] = k[first + parent]
        x[first + hole] = x[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    k[first + hole] = vk
    x[first + hole] = vx


@kernel()
def _heap_sort(k, x, first, last):  # pragma: no cover - compiled
    n = last - first
    if n >= 2:
        parent = (n - 2) // 2
        while True:
            _adjust_heap(k, x, first, parent, n, k[first + parent], x[first + parent])
            if parent == 0:
                break
            parent -= 1
    while last - first > 1:
        last -= 1
        vk = k[last]
        vx = x[last]
        k[last] = k[first]
        x[last] = x[first]
        _adjust_heap(k, x, first, 0, last - first, vk, vx)


@kernel()
def _introsort_loop(k, x, first, last, depth):  # pragma: no cover - compiled
    """GCC's ``__introsort_loop``: partition around the median of three until the ranges left
    hold at most 16 items, heap sort a range whose depth runs out. Iterative: the range right
    of each cut goes on a stack where GCC recurses (numba's on-disk cache cannot reload a
    recursive kernel compiled for two index types). The ranges are disjoint, so the order in
    which they are done leaves the same permutation. The stack's depths fall from bottom to
    top, so it never holds more than ``depth + 1`` ranges."""
    stack = np.empty((depth + 1, 3), np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2] = first, last, depth
    top = 1
    while top > 0:
        top -= 1
        lo_end, hi_end, d = stack[top, 0], stack[top, 1], stack[top, 2]
        while hi_end - lo_end > 16:
            if d == 0:
                _heap_sort(k, x, lo_end, hi_end)
                break
            d -= 1
            a, b, c = lo_end + 1, lo_end + (hi_end - lo_end) // 2, hi_end - 1
            if k[a] < k[b]:
                if k[b] < k[c]:
                    _swap(k, x, lo_end, b)
                elif k[a] < k[c]:
                    _swap(k, x, lo_end, c)
                else:
                    _swap(k, x, lo_end, a)
            elif k[a] < k[c]:
                _swap(k, x, lo_end, a)
            elif k[b] < k[c]:
                _swap(k, x, lo_end, c)
            else:
                _swap(k, x, lo_end, b)
            lo, hi = lo_end + 1, hi_end
            while True:
                while k[lo] < k[lo_end]:
                    lo += 1
                hi -= 1
                while k[lo_end] < k[hi]:
                    hi -= 1
                if not lo < hi:
                    break
                _swap(k, x, lo, hi)
                lo += 1
            stack[top, 0], stack[top, 1], stack[top, 2] = lo, hi_end, d
            top += 1
            hi_end = lo


@kernel()
def _gnu_sort(k, x, first, last):  # pragma: no cover - compiled
    """``std::sort(first, last)`` of GCC's libstdc++ on ``k``, permuting ``x`` alike."""
    n = last - first
    if n < 2:
        return
    lg = 0
    while (n >> (lg + 1)) > 0:
        lg += 1
    _introsort_loop(k, x, first, last, 2 * lg)
    if n > 16:
        _insertion_sort(k, x, first, first + 16)
        for i in range(first + 16, last):
            _linear_insert(k, x, i)
    else:
        _insertion_sort(k, x, first, last)
