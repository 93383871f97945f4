"""Trace → execution graph: the rules of docs/architecture.md §Ingest (Schedgen's, minus its known bugs), vectorised.

Per rank, in program order, the graph is a chain ``calc → op(s) → calc → …``:

- The time between two consecutive *modelled* calls of a rank becomes a ``calc`` (µs in the trace,
  ns in the graph): from the end of ``MPI_Init`` to the first call, between calls, and from the
  last call to the start of ``MPI_Finalize``. Calls that are not modelled (``MPI_Comm_rank``,
  ``MPI_Test``, a send to ``MPI_PROC_NULL``, …) lie inside a calc and so count as computation.
- A blocking send/recv is an op that ``requires`` the calc before it; the calc after it
  ``requires`` the op. ``MPI_Sendrecv`` is a send and a recv that both require the calc before;
  the calc after requires both.
- ``Isend``/``Irecv``/``Start`` create an op that ``requires`` the calc before it and that the calc
  after it ``irequires`` (it starts, the rank goes on). The ``Wait``/``Waitall`` that completes the
  request makes the calc after the wait ``require`` the op (edges in request order, so receives
  joined by one wait are serialised in that order) and the calc before the wait. Requests are
  rank-local ids: an id names the most recent request created under it that is still pending;
  a wait on an id without one (``MPI_REQUEST_NULL``, a request completed by a test the trace
  does not detail) does nothing. Waits are whatever the reader reports as completing requests:
  ``Wait*`` and the ``Test*`` calls that succeeded. Persistent requests: ``*_init`` stores a
  template under the id, each ``Start`` creates an op from it, ``Request_free`` drops it.
- ``MPI_Cancel`` marks the op pending under its id as cancelled (it is still completed by its
  wait, test or ``Request_free``). Cancelled ops stay out of matching; afterwards a cancelled
  receive takes a send that no other receive took (and a cancelled send a receive left over),
  in which case the cancel came too late and the op is kept; otherwise it is dropped: no
  message, its time stays in the calc, and its wait does nothing (both counted in the summary).
- Messages match per (communicator, source, destination, tag) in FIFO order, the k-th send with
  the k-th receive (MPI's non-overtaking rule), by sorting, not by walking a dict per message. The
  receive takes the size of the message it matched (a trace records the receive *buffer*).
- Wildcards (``MPI_ANY_SOURCE``/``MPI_ANY_TAG``) are resolved first, per receiving rank and
  communicator, in posting order: a wildcard receive takes, among the sends MPI's matching rules
  allow it (per source the oldest unmatched send with a fitting tag), the one posted earliest on
  the aligned clock (:attr:`Trace.clock_offset_ns`), ties to the lower rank. A send posted after
  the receive completed (the end of its blocking call or of the wait that completed it) cannot
  have been its message: a cancelled receive never takes one; any other receive takes one only
  when no other send is left (clocks out of sync), with a note. The graph is then static and
  matching is FIFO again, so the result never depends on evaluation order.
- Collectives: the k-th collective call on a communicator at each member forms one instance (all
  members must agree on the operation and root). It is expanded with
  :func:`llamp.ingest.collectives.expand` on the communicator's group; each member's ops go where
  its call was. Round ``k``'s ops ``require`` the join of round ``k−1`` (or the calc before the
  call); a zero-cost join calc ``requires`` all ops of its round; the calc after the call requires
  the last join (no k×k edges). Messages inside an instance pair FIFO per ordered member pair.
  Instead of an algorithm, an op may be given an analytic model (``dimemas``, ``thakur_gropp``
  or ``thakur_gropp:ALGORITHM``, :mod:`llamp.ingest.collective_models`): each member's call is
  then one ``coll`` vertex between the calcs around it, and the instance's cost terms go to
  ``meta["collective_costs"]`` (see :mod:`llamp.graph`).
- Non-blocking collectives (``MPI_Iallreduce``, …) take part in their communicator's sequence
  like the blocking ones (MPI orders both alike; a blocking and a non-blocking call never form
  one instance) and are expanded with the same algorithms, every round at the call. A
  member's first round is posted there: its ops ``require`` the calc before the call and the
  calc after it ``irequires`` them (the rank goes on). Its later rounds follow from their
  joins as above (the MPI library makes them as their messages arrive: no later place in
  program order is theirs); the calc after the wait (or successful test) completing the
  request ``requires`` the last join. A *progress join* (a zero-cost calc nothing
  waits for), placed after the rank's first blocking call after the start (a blocking op or
  collective, or a wait: the completing one at the latest), ``requires`` the calc before that
  call and the member's first receive. So under progress ``async`` the rounds advance as their
  messages arrive, and under ``wait`` the first receive is a receive of that call, processed no
  earlier than the call, and every later round follows it
  (docs/model.md §Non-blocking collectives). Without a completing wait in the trace nothing
  waits for the rounds (counted in the summary). An analytic model's
  ``coll`` vertex is placed like a first round and required by the wait.

Tags in the graph: a point-to-point message keeps its MPI tag on ``MPI_COMM_WORLD`` and gets
``tag + c·2^32`` on communicator ``c`` (MPI tags are < 2^31), so messages of different
communicators never share a tag; a collective message gets ``2^62 + c·2^32 + k`` (instance ``k``
on communicator ``c``), above any user tag. Graph messages are therefore FIFO per (source,
destination, tag), which GOAL export needs.

Errors name file, line and reason (an unmatched send, a collective whose members disagree, calls
that overlap in time); ``lenient=True`` makes them counted warnings and drops the offending op
(its time stays in the calc).
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import numba
import numpy as np
from numba import types
from numba.typed import Dict

from llamp.config import COLL_TAG_BASE, COMM_TAG_STRIDE
from llamp.errors import InputError, TraceError
from llamp.graph import (
    CALC,
    COLLECTIVE_COSTS,
    IREQUIRES,
    MESSAGE,
    RECV,
    REQUIRES,
    SEND,
    ExecutionGraph,
)
from llamp.graph import COLL as COLL_VERTEX
from llamp.ingest import collectives as coll_mod
from llamp.ingest.collective_models import (
    ANALYTIC_MODELS,
    AffineCost,
    AnalyticChoice,
    analytic_cost,
    instance_bytes,
    parse_analytic,
)
from llamp.ingest.events import (
    ANY_TAG,
    CANCEL,
    COLL,
    COLL_OPS,
    FINALIZE,
    ICOLL,
    INIT,
    IRECV,
    ISEND,
    PROC_NULL,
    RECV_INIT,
    REQUEST_FREE,
    ROOTED_OPS,
    SEND_INIT,
    SEND_LIKE,
    SR_RECV,
    SR_SEND,
    START,
    WAIT,
    Diagnostics,
    Trace,
    kind_in,
)
from llamp.ingest.events import RECV as EV_RECV
from llamp.ingest.events import SEND as EV_SEND

__all__ = ["COLL_TAG_BASE", "COMM_TAG_STRIDE", "build_graph", "check_algorithms"]


_NONBLOCKING = (ISEND, IRECV, START)


def check_algorithms(collectives: dict[str, str] | None) -> dict[str, str]:
    """Validate a user's ``{op: algorithm}`` choices against :mod:`collectives`; all ops filled.

    A choice is an expansion algorithm of :mod:`collectives` or an analytic model
    (:data:`~llamp.ingest.collective_models.ANALYTIC_MODELS`, Thakur–Gropp optionally with
    ``:ALGORITHM``).
    """
    chosen = dict(coll_mod.DEFAULTS)
    for op, alg in (collectives or {}).items():
        if op not in coll_mod.ALGORITHMS:
            raise InputError(
                f"unknown collective {op!r} in the algorithm choices; known: "
                f"{', '.join(coll_mod.ALGORITHMS)}"
            )
        if alg not in coll_mod.ALGORITHMS[op] and parse_analytic(op, alg) is None:
            raise InputError(
                f"unknown {op} algorithm {alg!r}; known for {op}: "
                f"{', '.join(coll_mod.ALGORITHMS[op])}, or an analytic model: "
                f"{', '.join(ANALYTIC_MODELS)} (thakur_gropp:ALGORITHM picks a formula)"
            )
        chosen[op] = alg
    return chosen


def build_graph(
    trace: Trace,
    *,
    collectives: dict[str, str] | None = None,
    lenient: bool = False,
    name: str | None = None,
    progress: bool = False,
) -> ExecutionGraph:
    """Turn a :class:`Trace` into a validated :class:`ExecutionGraph` (rules: module docstring).

    ``collectives`` maps op → algorithm (defaults: :data:`collectives.DEFAULTS`). The graph's
    ``meta`` records name, format, files, ingest time, algorithms used and a warnings summary;
    ``t_trace_ns`` holds each vertex's start in its rank's trace time.
    """
    started = time.perf_counter()
    algorithms = check_algorithms(collectives)
    diag = Diagnostics(lenient=lenient)
    stages = _Stages(progress)
    b = _Builder(trace, algorithms, diag)
    stages.step("requests")
    b.requests()
    stages.step("matching")
    b.match()
    stages.step("collectives")
    b.plan_collectives()
    stages.step("graph")
    graph_cols = b.assemble()
    stages.close()
    combined = Diagnostics()
    combined.merge(trace.diagnostics)
    combined.merge(diag)
    summary = combined.emit()
    meta: dict[str, Any] = {
        "name": name or trace.meta.get("name") or "trace",
        "format": trace.format,
        "files": list(trace.files),
        "ingested": datetime.now(UTC).isoformat(timespec="seconds"),
        "build_seconds": round(time.perf_counter() - started, 3),
        "collectives": {op: algorithms[op] for op in sorted(b.ops_used)},
        "collective_algorithms": algorithms,
        **b.collective_costs_meta(),
        "warnings": summary,
        "absorbed_calls": {k: v[0] for k, v in sorted(combined.absorbed.items())},
        "wildcards_resolved": b.wildcards,
        "trace_events": len(trace.events),
    }
    meta.update({k: v for k, v in trace.meta.items() if k != "name"})
    return ExecutionGraph.from_arrays(trace.num_ranks, meta=meta, **graph_cols)


class _Stages:
    def __init__(self, progress: bool):
        self.bar = None
        if progress:
            from tqdm import tqdm

            self.bar = tqdm(total=4, desc="building graph", leave=False)

    def step(self, what: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(what)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# --------------------------------------------------------------------------- helpers
def _run_index(sorted_keys: np.ndarray) -> np.ndarray:
    """Position of each element within its run of equal keys (``sorted_keys`` sorted)."""
    n = sorted_keys.size
    idx = np.arange(n)
    if n == 0:
        return idx
    start = np.ones(n, bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return idx - np.maximum.accumulate(np.where(start, idx, 0))


def _match_keys(
    s_key: np.ndarray, s_tag: np.ndarray, r_key: np.ndarray, r_tag: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One int64 key per (key, tag) pair, equal across sides exactly when both parts are."""
    kmax = int(max(s_key.max(initial=0), r_key.max(initial=0)))
    if kmax < (1 << 31):  # tags are < 2^31 (MPI int), so key·2^32 + tag fits in int64
        return (s_key << 32) + s_tag, (r_key << 32) + r_tag
    both = np.stack((np.concatenate((s_key, r_key)), np.concatenate((s_tag, r_tag))), axis=1)
    _, dense = np.unique(both, axis=0, return_inverse=True)
    dense = dense.reshape(-1).astype(np.int64)
    return dense[: s_key.size], dense[s_key.size :]


def _fifo_pairs(s_key: np.ndarray, r_key: np.ndarray):
    """FIFO matching: the k-th send and the k-th receive with equal key pair up. Both sides
    come in program order; returns (send idx, recv idx, send matched?, recv matched?).
    Two stable sorts and a binary search, no per-message Python."""
    so = np.argsort(s_key, kind="stable")
    ro = np.argsort(r_key, kind="stable")
    ks, kr = s_key[so], r_key[ro]
    occ_r = _run_index(kr)
    left = np.searchsorted(ks, kr, side="left")
    right = np.searchsorted(ks, kr, side="right")
    ok = occ_r < right - left
    pairs_s = so[left[ok] + occ_r[ok]]
    pairs_r = ro[ok]
    s_matched = np.zeros(s_key.size, bool)
    r_matched = np.zeros(r_key.size, bool)
    s_matched[pairs_s] = True
    r_matched[pairs_r] = True
    return pairs_s, pairs_r, s_matched, r_matched


def _simulate_wildcards(r_src, r_tag, r_done, r_strict, s_src, s_tag, s_time):
    """MPI matching at one (communicator, receiver): see the module docstring. Sends are sorted
    by (source, program order), receives in posting order; returns the (source, tag) each
    receive resolves to (−1, −1 if no send is left for it) and how many wildcard receives took
    a send posted after they completed (``r_done``), which a ``r_strict`` receive never does."""
    m = len(s_src)
    matched = bytearray(m)
    by_src: dict[int, list[int]] = {}
    by_st: dict[tuple[int, int], list[int]] = {}
    for i in range(m):
        by_src.setdefault(s_src[i], []).append(i)
        by_st.setdefault((s_src[i], s_tag[i]), []).append(i)
    ptr_src = dict.fromkeys(by_src, 0)
    ptr_st = dict.fromkeys(by_st, 0)

    def head(queues, ptrs, key):
        queue = queues.get(key)
        if queue is None:
            return None
        p = ptrs[key]
        while p < len(queue) and matched[queue[p]]:
            p += 1
        ptrs[key] = p
        return queue[p] if p < len(queue) else None

    heaps: dict[int | None, list[tuple[float, int, int]]] = {}

    def best(tag):
        heap = heaps.get(tag)
        if heap is None:
            heap = []
            for s in by_src:
                h = head(by_src, ptr_src, s) if tag is None else head(by_st, ptr_st, (s, tag))
                if h is not None:
                    heap.append((s_time[h], s, h))
            heapq.heapify(heap)
            heaps[tag] = heap
        while heap:
            _, s, i = heap[0]
            h = head(by_src, ptr_src, s) if tag is None else head(by_st, ptr_st, (s, tag))
            if h is None:
                heapq.heappop(heap)
            elif h != i:
                heapq.heapreplace(heap, (s_time[h], s, h))
            else:
                return i
        return None

    out_src = [-1] * len(r_src)
    out_tag = [-1] * len(r_src)
    late = 0
    for j in range(len(r_src)):
        s, t = r_src[j], r_tag[j]
        if s >= 0 and t >= 0:
            i = head(by_st, ptr_st, (s, t))
        else:
            # the earliest-posted send MPI allows (per source, sends are in time order)
            i = head(by_src, ptr_src, s) if s >= 0 else best(t if t >= 0 else None)
            if i is not None and s_time[i] > r_done[j]:
                if r_strict[j]:
                    continue
                late += 1
        if i is None:
            continue
        matched[i] = 1
        out_src[j] = s_src[i]
        out_tag[j] = s_tag[i]
    return out_src, out_tag, late


@numba.njit(cache=True)
def _templates_of_starts(ent_rank, ent_addr, ent_kind, ent_event):  # pragma: no cover - compiled
    """Request entries in program order → for each ``Start`` entry, the ``*_init`` event most
    recently creating a persistent request under its id on its rank, not freed since (−1)."""
    n = ent_rank.shape[0]
    out = np.full(n, -1, np.int64)
    table = Dict.empty(key_type=types.int64, value_type=types.int64)
    current = -1
    for i in range(n):
        if ent_rank[i] != current:
            table = Dict.empty(key_type=types.int64, value_type=types.int64)
            current = ent_rank[i]
        k = ent_kind[i]
        if k == SEND_INIT or k == RECV_INIT:
            table[ent_addr[i]] = ent_event[i]
        elif k == REQUEST_FREE:
            table[ent_addr[i]] = -1
        elif k == START:
            out[i] = table.get(ent_addr[i], -1)
    return out


@numba.njit(cache=True)
def _completed_ops(ent_rank, ent_addr, ent_kind, ent_op):  # pragma: no cover - compiled
    """Request entries in program order → for each ``Wait`` (and ``Cancel``) entry, the op
    pending under its id (posted by ``Isend``/``Irecv``/``Start`` or a non-blocking collective,
    not completed or freed since), else −1. A wait completes the op; a cancel leaves it
    pending."""
    n = ent_rank.shape[0]
    out = np.full(n, -1, np.int64)
    table = Dict.empty(key_type=types.int64, value_type=types.int64)
    current = -1
    for i in range(n):
        if ent_rank[i] != current:
            table = Dict.empty(key_type=types.int64, value_type=types.int64)
            current = ent_rank[i]
        k = ent_kind[i]
        if k == ISEND or k == IRECV or k == START or k == ICOLL:
            table[ent_addr[i]] = ent_op[i]
        elif k == REQUEST_FREE:
            table[ent_addr[i]] = -1
        elif k == WAIT:
            v = table.get(ent_addr[i], -1)
            out[i] = v
            if v >= 0:
                table[ent_addr[i]] = -1
        elif k == CANCEL:
            out[i] = table.get(ent_addr[i], -1)
    return out


# --------------------------------------------------------------------------- collective templates
@dataclass(frozen=True, eq=False)
class _Template:
    """A collective schedule as per-member vertex/edge arrays with local vertex ids.

    Local edges use −1 for "the calc before the call" and −2 for "the calc after it". For a
    non-blocking call, member ``j``'s first ``n_first[j]`` vertices are the ops it starts at
    the call, its last vertex is what the completing wait requires, and ``first_recv[j]`` is
    its first receive (−1: none).
    """

    algorithm: str
    nv: np.ndarray  # vertices per member
    v_kind: tuple[np.ndarray, ...]
    v_peer: tuple[np.ndarray, ...]  # group index (0 for join calcs)
    v_size: tuple[np.ndarray, ...]
    e_src: tuple[np.ndarray, ...]
    e_dst: tuple[np.ndarray, ...]
    m_a: np.ndarray  # message: member a's local vertex ta → member b's local vertex tb
    m_ta: np.ndarray
    m_b: np.ndarray
    m_tb: np.ndarray
    n_first: np.ndarray
    first_recv: np.ndarray


PREV, NEXT = -1, -2


@lru_cache(maxsize=4096)
def _template(
    op: str, n: int, algorithm: str, root: int, size: int, counts: tuple[int, ...] | None
) -> _Template:
    sched = coll_mod.expand(
        op,
        n,
        algorithm=algorithm,
        root=root,
        size=size,
        counts=None if counts is None else list(counts),
    )
    nv, kinds, peers, sizes, srcs, dsts = [], [], [], [], [], []
    n_first, first_recv = [], []
    sends: dict[tuple[int, int], list[tuple[int, int]]] = {}
    recvs: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for j, rounds in enumerate(sched.rounds):
        k_, p_, s_, es, ed = [], [], [], [], []
        prev = PREV
        for rnd in rounds:
            ops = []
            for step in rnd:
                v = len(k_)
                k_.append(step.kind)
                p_.append(step.peer)
                s_.append(step.size)
                es.append(prev)
                ed.append(v)
                ops.append(v)
                if step.kind == SEND:
                    sends.setdefault((j, step.peer), []).append((v, step.size))
                else:
                    recvs.setdefault((step.peer, j), []).append((v, step.size))
            join = len(k_)
            k_.append(CALC)
            p_.append(0)
            s_.append(0)
            for v in ops:
                es.append(v)
                ed.append(join)
            prev = join
        if rounds:
            es.append(prev)
            ed.append(NEXT)
        n_first.append(len(rounds[0]) if rounds else 0)
        first_recv.append(k_.index(RECV) if RECV in k_ else -1)
        nv.append(len(k_))
        kinds.append(np.array(k_, np.int8))
        peers.append(np.array(p_, np.int64))
        sizes.append(np.array(s_, np.int64))
        srcs.append(np.array(es, np.int64))
        dsts.append(np.array(ed, np.int64))
    ma, mta, mb, mtb = [], [], [], []
    for (a, bb), out in sends.items():
        inbox = recvs.get((a, bb), [])
        if len(inbox) != len(out) or any(x[1] != y[1] for x, y in zip(out, inbox, strict=False)):
            raise RuntimeError(
                f"collective schedule {op}/{sched.algorithm} P={n}: sends {a}→{bb} "
                "do not pair with receives"
            )
        for (va, _), (vb, _) in zip(out, inbox, strict=True):
            ma.append(a)
            mta.append(va)
            mb.append(bb)
            mtb.append(vb)
    if sum(len(v) for v in recvs.values()) != len(ma):
        raise RuntimeError(f"collective schedule {op}/{sched.algorithm} P={n}: unpaired receives")
    return _Template(
        sched.algorithm,
        np.array(nv, np.int64),
        tuple(kinds),
        tuple(peers),
        tuple(sizes),
        tuple(srcs),
        tuple(dsts),
        np.array(ma, np.int64),
        np.array(mta, np.int64),
        np.array(mb, np.int64),
        np.array(mtb, np.int64),
        np.array(n_first, np.int64),
        np.array(first_recv, np.int64),
    )


@lru_cache(maxsize=256)
def _analytic_template(choice: str, n: int, root: int) -> _Template:
    """One ``coll`` vertex per member between the calcs around its call; no messages."""
    one = np.array([0], np.int64)
    return _Template(
        choice,
        np.ones(n, np.int64),
        tuple(np.array([COLL_VERTEX], np.int8) for _ in range(n)),
        tuple(np.array([root], np.int64) for _ in range(n)),
        tuple(np.zeros(1, np.int64) for _ in range(n)),  # sizes: set per member by the builder
        tuple(np.array([PREV, 0], np.int64) for _ in range(n)),
        tuple(np.array([0, NEXT], np.int64) for _ in range(n)),
        one[:0],
        one[:0],
        one[:0],
        one[:0],
        np.ones(n, np.int64),
        np.full(n, -1, np.int64),
    )


def _member_bytes(op: str, n: int, size: int, counts: tuple[int, ...] | None) -> np.ndarray:
    """Bytes each member contributes to one instance (the ``size`` of its ``coll`` vertex)."""
    if counts is None:
        return np.full(n, size, np.int64)
    c = np.asarray(counts, np.int64)
    if op == "alltoallv":
        return c.reshape(n, n).sum(axis=1)  # row i: what member i sends
    return c


def _instance_cost(
    choice: AnalyticChoice, n: int, root: int, size: int, counts: tuple[int, ...] | None
) -> AffineCost:
    """Cost terms of one instance from the call's size or (v-variants) the members' counts."""
    op = choice.op
    s, total, first = float(size), 0.0, 0.0
    if counts is not None:
        c = np.asarray(counts, np.int64)
        total = float(c.sum())
        first = float(c.reshape(n, n)[:, 0].sum()) if op == "alltoallv" else total
        if op in ("gatherv", "scatterv"):
            s = float(c[root])
        elif op == "allgatherv":
            s = float(c[0])
    sent, received, nbytes = (float(np.ravel(x)[0]) for x in instance_bytes(op, n, s, total, first))
    return analytic_cost(choice, n, sent, received, nbytes)


def _place(local: np.ndarray, base: np.ndarray, prev: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """Template-local vertex ids → global ids for every instance (rows)."""
    out = base[:, None] + local[None, :]
    out = np.where(local[None, :] == PREV, prev[:, None], out)
    return np.where(local[None, :] == NEXT, nxt[:, None], out)


def _coll_edge_count(grp: _CollGroup) -> int:
    """Edges :meth:`_Builder.assemble` adds for a group's instances (preallocation)."""
    tpl = grp.template
    per_instance = sum(e.size for e in tpl.e_src) + tpl.m_a.size
    if grp.waits is None:
        return grp.events.shape[0] * per_instance
    to_next = sum(int(np.count_nonzero(d == NEXT)) for d in tpl.e_dst)
    waited = np.count_nonzero(grp.completed, axis=0)  # per member
    completion = int(np.sum(waited * (1 + 2 * (tpl.first_recv >= 0))))
    return grp.events.shape[0] * (per_instance - to_next + int(tpl.n_first.sum())) + completion


@dataclass
class _CollGroup:
    """Instances of one communicator sharing one template: ``events[i, j]`` = member j's call."""

    comm: int
    template: _Template
    events: np.ndarray  # (I, n) event ids
    instance: np.ndarray  # (I,) instance number on the communicator
    members: np.ndarray  # world ranks of the group
    member_bytes: np.ndarray | None = None  # analytic: size of each member's coll vertex
    waits: np.ndarray | None = None  # non-blocking: (I, n) completing wait event, or −1
    completed: np.ndarray | None = None  # (I, n) a wait in the trace completes the call
    pin: np.ndarray | None = None  # (I, n) slot whose call the first receive waits for, or −1
    pin_at: np.ndarray | None = None  # (I, n) position among that slot's progress joins

    @property
    def tags(self) -> np.ndarray:
        """Graph tag of every instance (shared by its messages or its coll vertices)."""
        return COLL_TAG_BASE + self.comm * COMM_TAG_STRIDE + (self.instance % COMM_TAG_STRIDE)


# --------------------------------------------------------------------------- the builder
class _Builder:
    def __init__(self, trace: Trace, algorithms: dict[str, str], diag: Diagnostics):
        self.t = trace
        self.ev = trace.events
        self.alg = algorithms
        self.diag = diag
        self.P = trace.num_ranks
        self.ops_used: set[str] = set()
        self.wildcards = 0
        ev = self.ev
        n = len(ev)
        self.n = n
        kind = ev.kind
        self.group = np.arange(n, dtype=np.int64)
        sr = np.flatnonzero(kind == SR_RECV)
        if sr.size and (np.any(sr == 0) or np.any(kind[sr - 1] != SR_SEND)):
            raise ValueError("an SR_RECV event must follow its SR_SEND")
        self.group[sr] -= 1
        # communicator tables
        comms = trace.comms
        self.comm_known = np.array([c.members is not None for c in comms], bool)
        sizes = np.array([len(c.members) if c.members is not None else 0 for c in comms], np.int64)
        self.comm_size = sizes
        self.comm_ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        flat = [np.asarray(c.members, np.int64) for c in comms if c.members is not None]
        self.comm_flat = np.concatenate(flat) if flat else np.zeros(0, np.int64)

    # ----------------------------------------------------------------- helpers
    def where(self, e: int) -> tuple[str, int]:
        return self.t.where(int(e))

    def error(self, e: int, reason: str) -> None:
        path, line = self.where(e)
        self.diag.problem(reason, path, line)

    def call(self, e: int) -> str:
        return self.t.calls[int(self.ev.call[e])]

    def comm_name(self, c: int) -> str:
        return self.t.comms[int(c)].name

    # ----------------------------------------------------------------- point-to-point ops
    def requests(self) -> None:
        """Persistent templates → started ops; the op table; request completion by waits."""
        ev = self.ev
        kind = ev.kind
        nreq = np.diff(ev.req_ptr)
        ent_event = np.repeat(np.arange(self.n, dtype=np.int64), nreq)  # program order
        ent_addr = ev.req_ids
        ent_kind = kind[ent_event]
        ent_rank = ev.rank[ent_event].astype(np.int64)

        # persistent requests: each Start entry takes the template created under its id
        tpl_of_ent = _templates_of_starts(ent_rank, ent_addr, ent_kind, ent_event)
        start_ent = np.flatnonzero(ent_kind == START)
        tpl_event = tpl_of_ent[start_ent]
        bad = np.flatnonzero(tpl_event < 0)
        if bad.size:
            i = int(start_ent[bad[0]])
            e = int(ent_event[i])
            self.error(
                e,
                f"{self.call(e)} of request {ent_addr[i]} that no MPI_Send_init/"
                "MPI_Recv_init created (or that was freed)",
            )
        start_ent, tpl_event = start_ent[tpl_event >= 0], tpl_event[tpl_event >= 0]

        # the op table: direct p2p calls and started persistent requests, in program order
        direct = np.flatnonzero(kind_in(kind, (EV_SEND, EV_RECV, ISEND, IRECV, SR_SEND, SR_RECV)))
        direct_ent = np.full(direct.size, -1, np.int64)
        has_req = kind_in(kind[direct], (ISEND, IRECV)) & (nreq[direct] > 0)
        direct_ent[has_req] = ev.req_ptr[direct[has_req]]
        op_event = np.concatenate((direct, ent_event[start_ent]))
        op_src = np.concatenate((direct, tpl_event))
        op_ent = np.concatenate((direct_ent, start_ent))
        order = np.argsort(op_event, kind="stable")  # two sorted runs: linear
        self.op_event = op_event[order]
        self.op_src = op_src[order]
        op_ent = op_ent[order]
        self.op_group = self.group[self.op_event]
        self.op_rank = ev.rank[self.op_event].astype(np.int64)
        self.op_send = kind_in(kind[self.op_src], SEND_LIKE)
        self.op_blocking = ~kind_in(kind[self.op_event], _NONBLOCKING)
        self.op_size = ev.size[self.op_src].copy()
        self.op_comm = ev.comm[self.op_src].astype(np.int64)
        self.op_tag = ev.tag[self.op_src].astype(np.int64)
        local = ev.peer[self.op_src].astype(np.int64)
        nops = self.op_event.size
        self.op_valid = np.ones(nops, bool)
        self.op_peer = np.full(nops, -1, np.int64)
        null = local == PROC_NULL
        self.op_valid[null] = False
        unknown = ~self.comm_known[self.op_comm] & ~null
        if unknown.any():
            e = int(self.op_event[np.flatnonzero(unknown)[0]])
            path, line = self.where(e)
            self.diag.note(
                "point-to-point calls on a sub-communicator without membership "
                "(no '# llamp comm' line), absorbed into calc",
                f"{path}:{line}",
                int(unknown.sum()),
            )
            self.op_valid[unknown] = False
        placed = self.op_valid & (local >= 0)
        outside = placed & (local >= self.comm_size[self.op_comm])
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            e = int(self.op_event[i])
            path, line = self.where(e)
            raise TraceError(
                f"{self.call(e)}: peer {local[i]} outside "
                f"{self.comm_name(self.op_comm[i])} of size "
                f"{self.comm_size[self.op_comm[i]]}",
                path=path,
                line=line,
            )
        self.op_peer[placed] = self.comm_flat[self.comm_ptr[self.op_comm[placed]] + local[placed]]

        # completion: a wait entry completes the request most recently posted under its id;
        # a non-blocking collective's request stands for its call (ids nops + event)
        ent_op = np.full(ent_addr.size, -1, np.int64)
        posted = op_ent >= 0
        ent_op[op_ent[posted]] = np.flatnonzero(posted)
        icoll_ent = np.flatnonzero(ent_kind == ICOLL)
        ent_op[icoll_ent] = nops + ent_event[icoll_ent]
        done = _completed_ops(ent_rank, ent_addr, ent_kind, ent_op)
        w_ent = np.flatnonzero(ent_kind == WAIT)
        resolved = done[w_ent] >= 0
        is_coll = done[w_ent] >= nops
        #: the wait event completing each non-blocking collective call (−1: none in the trace)
        self.icoll_wait = np.full(self.n, -1, np.int64)
        self.icoll_wait[done[w_ent[is_coll]] - nops] = ent_event[w_ent[is_coll]]
        resolved &= ~is_coll
        self.wait_event = ent_event[w_ent[resolved]]  # program order, request order within
        self.wait_op = done[w_ent[resolved]]
        missing = int(w_ent.size - resolved.sum() - is_coll.sum())
        if missing:
            path, line = self.where(int(ent_event[w_ent[~resolved & ~is_coll][0]]))
            self.diag.note(
                "wait entries without a pending request (MPI_REQUEST_NULL, an inactive "
                "request, completed by a test the trace does not detail, or a copied handle)",
                f"{path}:{line}",
                missing,
            )
        # cancellation: MPI_Cancel names the op pending under its id
        c_ent = np.flatnonzero(ent_kind == CANCEL)
        c_op = done[c_ent]
        on_coll = c_op >= nops
        if on_coll.any():
            path, line = self.where(int(ent_event[c_ent[on_coll][0]]))
            self.diag.note(
                "MPI_Cancel of a non-blocking collective's request (erroneous in MPI): no effect",
                f"{path}:{line}",
                int(on_coll.sum()),
            )
            c_ent, c_op = c_ent[~on_coll], c_op[~on_coll]
        self.op_cancelled = np.zeros(nops, bool)
        self.op_cancelled[c_op[c_op >= 0]] = True
        if np.any(c_op < 0):
            path, line = self.where(int(ent_event[c_ent[c_op < 0][0]]))
            self.diag.note(
                "MPI_Cancel of a request with no pending operation (already completed, "
                "inactive or MPI_REQUEST_NULL): no effect",
                f"{path}:{line}",
                int(np.count_nonzero(c_op < 0)),
            )
        # when each op completed, on the common clock (+inf: never, as far as the trace says)
        t_done = np.full(nops, np.inf)
        t_done[self.op_blocking] = ev.t_end_ns[self.op_event[self.op_blocking]]
        t_done[self.wait_op] = ev.t_end_ns[self.wait_event]
        self.op_done_ns = self.t.aligned_ns(self.op_event, t_done)

    def match(self) -> None:
        """Resolve wildcards, then FIFO-match sends and receives; unmatched ops are errors.

        Cancelled ops (``MPI_Cancel``) stay out of the first pass: a cancel succeeds unless a
        message could only have gone to (or come from) the cancelled op, so they are matched
        afterwards against what is left, and dropped (no message; their time is calc) when
        nothing is."""
        send = self.op_send
        live = self.op_valid & ~self.op_cancelled
        s = np.flatnonzero(live & send)
        r = np.flatnonzero(live & ~send)
        self._resolve_wildcards(s, r)
        ps, pr, s_ok, r_ok = self._pairs(s, r)
        if np.any(self.op_valid & self.op_cancelled):
            s, r, ps, pr, s_ok, r_ok = self._match_cancelled(s[~s_ok], r[~r_ok], s, r)
        bad_s, bad_r = s[~s_ok], r[~r_ok]
        if bad_s.size or bad_r.size:
            self._unmatched(bad_s, bad_r, s, r)
            self.op_valid[bad_s] = False
            self.op_valid[bad_r] = False
        self.msg_send = s[ps]
        self.msg_recv = r[pr]
        ssize, rsize = self.op_size[self.msg_send], self.op_size[self.msg_recv]
        over = np.flatnonzero(ssize > rsize)
        if over.size:
            i = int(self.msg_recv[over[0]])
            e = int(self.op_event[i])
            self.error(
                e,
                f"{self.call(e)}: message of {ssize[over[0]]} bytes from rank "
                f"{self.op_rank[self.msg_send[over[0]]]} is larger than the receive "
                f"buffer of {rsize[over[0]]} bytes (MPI_ERR_TRUNCATE)",
            )
        self.op_size[self.msg_recv] = ssize

    def _pairs(self, s: np.ndarray, r: np.ndarray):
        """FIFO pairs of sends ``s`` and receives ``r`` (op indices in program order)."""
        P = self.P
        s_key = (self.op_comm[s] * P + self.op_rank[s]) * P + self.op_peer[s]
        r_key = (self.op_comm[r] * P + self.op_peer[r]) * P + self.op_rank[r]
        ks, kr = _match_keys(s_key, self.op_tag[s], r_key, self.op_tag[r])
        kr = np.where(self.op_peer[r] < 0, -1, kr)  # a wildcard left unresolved matches nothing
        return _fifo_pairs(ks, kr)

    def _match_cancelled(
        self, left_s: np.ndarray, left_r: np.ndarray, s: np.ndarray, r: np.ndarray
    ):
        """Second pass: cancelled receives against the sends left unmatched, cancelled sends
        against the receives left; the cancelled ops that get a partner are kept (the cancel
        came too late), the others dropped. Returns the final (s, r) and their FIFO pairs."""
        send = self.op_send
        cancelled = self.op_valid & self.op_cancelled
        cs, cr = np.flatnonzero(cancelled & send), np.flatnonzero(cancelled & ~send)
        kept = [np.zeros(0, np.int64)]
        if cr.size and left_s.size:
            self._resolve_wildcards(left_s, cr)
            _, _, s_ok, r_ok = self._pairs(left_s, cr)
            kept.append(cr[r_ok])
            left_s = left_s[~s_ok]
        if cs.size and left_r.size:
            self._resolve_wildcards(cs, left_r)
            _, _, s_ok, _ = self._pairs(cs, left_r)
            kept.append(cs[s_ok])
        keep = np.zeros(self.op_valid.size, bool)
        keep[np.concatenate(kept)] = True
        for is_send, what in ((False, "receives"), (True, "sends")):
            dropped = np.flatnonzero(cancelled & ~keep & (send == is_send))
            if dropped.size:
                path, line = self.where(int(self.op_event[dropped[0]]))
                self.diag.note(
                    f"cancelled {what} (MPI_Cancel) that no message needed: dropped, their "
                    "time is calc",
                    f"{path}:{line}",
                    int(dropped.size),
                )
                self.op_valid[dropped] = False
        late = np.flatnonzero(keep)
        if late.size:
            path, line = self.where(int(self.op_event[late[0]]))
            self.diag.note(
                "cancelled operations kept: a message was left only for them (the "
                "MPI_Cancel came too late)",
                f"{path}:{line}",
                int(late.size),
            )
            s = np.union1d(s, late[send[late]])
            r = np.union1d(r, late[~send[late]])
        ps, pr, s_ok, r_ok = self._pairs(s, r)
        return s, r, ps, pr, s_ok, r_ok

    def _resolve_wildcards(self, s: np.ndarray, r: np.ndarray) -> None:
        """Give each wildcard receive among ``r`` the (source, tag) of the send among ``s`` it
        matches (module docstring); a send posted after the receive completed is taken only
        by a receive that must match (not a cancelled one) and has no other send left."""
        wild = (self.op_peer[r] < 0) | (self.op_tag[r] == ANY_TAG)
        if not wild.any():
            return
        P = self.P
        stream_s = self.op_comm[s] * P + self.op_peer[s]
        stream_r = self.op_comm[r] * P + self.op_rank[r]
        streams = np.unique(stream_r[wild])
        s_time = self.t.aligned_ns(self.op_event[s], self.ev.t_start_ns[self.op_event[s]])
        s_in = np.isin(stream_s, streams)
        r_in = np.isin(stream_r, streams)
        si = np.flatnonzero(s_in)
        si = si[np.lexsort((s[si], self.op_rank[s[si]], stream_s[si]))]
        ri = np.flatnonzero(r_in)
        ri = ri[np.lexsort((r[ri], stream_r[ri]))]
        s_bounds = (
            np.searchsorted(stream_s[si], streams, side="left"),
            np.searchsorted(stream_s[si], streams, side="right"),
        )
        r_bounds = (
            np.searchsorted(stream_r[ri], streams, side="left"),
            np.searchsorted(stream_r[ri], streams, side="right"),
        )
        late = 0
        for k in range(streams.size):
            ss = si[s_bounds[0][k] : s_bounds[1][k]]
            rr = ri[r_bounds[0][k] : r_bounds[1][k]]
            src, tag, n_late = _simulate_wildcards(
                self.op_peer[r[rr]].tolist(),
                self.op_tag[r[rr]].tolist(),
                self.op_done_ns[r[rr]].tolist(),
                self.op_cancelled[r[rr]].tolist(),
                self.op_rank[s[ss]].tolist(),
                self.op_tag[s[ss]].tolist(),
                s_time[ss].tolist(),
            )
            late += n_late
            src_a, tag_a = np.array(src, np.int64), np.array(tag, np.int64)
            was_wild = (self.op_peer[r[rr]] < 0) | (self.op_tag[r[rr]] == ANY_TAG)
            got = src_a >= 0
            self.wildcards += int((was_wild & got).sum())
            upd = r[rr][got]
            self.op_peer[upd] = src_a[got]
            self.op_tag[upd] = tag_a[got]
        if late:
            self.diag.note(
                "wildcard receives matched to a send posted after they completed on the "
                "aligned clock, for want of any other (clocks out of sync?)",
                None,
                late,
            )

    def _unmatched(
        self, bad_s: np.ndarray, bad_r: np.ndarray, s: np.ndarray, r: np.ndarray
    ) -> None:
        first = min(
            [(int(self.op_event[i]), int(i), True) for i in bad_s[:1]]
            + [(int(self.op_event[i]), int(i), False) for i in bad_r[:1]]
        )
        e, i, is_send = first
        comm = int(self.op_comm[i])
        tag = int(self.op_tag[i])
        me, peer = int(self.op_rank[i]), int(self.op_peer[i])

        def count(ops: np.ndarray, rank: int, other: int) -> int:
            """Ops among ``ops`` on ``rank`` toward ``other`` with this message's comm and tag."""
            return int(
                np.sum(
                    (self.op_rank[ops] == rank)
                    & (self.op_peer[ops] == other)
                    & (self.op_comm[ops] == comm)
                    & (self.op_tag[ops] == tag)
                )
            )

        if is_send:
            n_s, n_r = count(s, me, peer), count(r, peer, me)
            reason = (
                f"{self.call(e)} to rank {peer} (tag {tag}, {self.op_size[i]} bytes, "
                f"{self.comm_name(comm)}) has no matching receive: rank {me} sends {n_s} "
                f"such messages, rank {peer} posts {n_r} matching receives"
            )
        elif peer < 0:
            reason = (
                f"{self.call(e)} from any source (tag {tag}, {self.comm_name(comm)}) has no "
                f"send left to match"
            )
        else:
            n_s, n_r = count(s, peer, me), count(r, me, peer)
            reason = (
                f"{self.call(e)} from rank {peer} (tag {tag}, {self.comm_name(comm)}) has no "
                f"matching send: rank {peer} sends {n_s} such messages, rank {me} posts "
                f"{n_r} matching receives"
            )
        total = int(bad_s.size + bad_r.size)
        if total > 1:
            reason += f" ({total} unmatched operations in all)"
        path, line = self.where(e)
        self.diag.problem(reason, path, line, count=total)

    # ----------------------------------------------------------------- collectives
    def plan_collectives(self) -> None:
        ev = self.ev
        ce = np.flatnonzero(kind_in(ev.kind, (COLL, ICOLL)))
        self.coll_groups: list[_CollGroup] = []
        self.coll_costs: list[tuple[np.ndarray, str, float, float, str]] = []
        self.coll_nv = np.zeros(self.n, np.int64)
        self.coll_waited: list[np.ndarray] = []  # non-blocking calls completed by a wait
        if ce.size == 0:
            return
        comm = ev.comm[ce].astype(np.int64)
        unknown = ~self.comm_known[comm]
        if unknown.any():
            e = int(ce[np.flatnonzero(unknown)[0]])
            path, line = self.where(e)
            self.diag.note(
                "collectives on a sub-communicator without membership (no "
                "'# llamp comm' line), absorbed into calc",
                f"{path}:{line}",
                int(unknown.sum()),
            )
        ce, comm = ce[~unknown], comm[~unknown]
        for c in np.unique(comm).tolist():
            self._plan_comm(c, ce[comm == c])
        unwaited = [
            grp.events[~grp.completed & (grp.template.nv > 0)[None, :]]
            for grp in self.coll_groups
            if grp.waits is not None
        ]
        unwaited_a = np.concatenate(unwaited) if unwaited else np.zeros(0, np.int64)
        if unwaited_a.size:
            path, line = self.where(int(unwaited_a.min()))
            self.diag.note(
                "non-blocking collectives that no wait or test in the trace completes "
                "(freed, or completed by a test it does not detail): expanded, nothing waits "
                "for them",
                f"{path}:{line}",
                int(unwaited_a.size),
            )

    def _plan_comm(self, c: int, events: np.ndarray) -> None:
        ev = self.ev
        members = self.comm_flat[self.comm_ptr[c] : self.comm_ptr[c + 1]]
        n = members.size
        if n == 1:
            return  # nothing to communicate
        inv = np.full(self.P, -1, np.int64)
        inv[members] = np.arange(n)
        mi = inv[ev.rank[events]]
        order = np.argsort(mi, kind="stable")  # events come in event order
        events, mi = events[order], mi[order]
        per = np.bincount(mi, minlength=n)
        K = int(per.min())
        if per.max() != K:
            j_more = int(np.argmax(per))
            j_less = int(np.argmin(per))
            extra = events[mi == j_more][K]
            path, line = self.where(int(extra))
            self.diag.problem(
                f"{self.call(extra)} is collective call #{K + 1} of rank {members[j_more]} on "
                f"{self.comm_name(c)}, but rank {members[j_less]} makes only {K} collective calls "
                "on it (members must make the same collective calls)",
                path,
                line,
            )
            keep = np.concatenate([events[mi == j][:K] for j in range(n)])
            events = keep
            mi = np.repeat(np.arange(n), K)
        if K == 0:
            return
        E = events.reshape(n, K).T  # (K, n): instance k, member j
        op = ev.coll[E].astype(np.int64)
        root = ev.root[E].astype(np.int64)
        nb = ev.kind[E] == ICOLL  # blocking and non-blocking calls never match (MPI-3 §5.12)
        bad = np.argwhere((op != op[:, :1]) | (nb != nb[:, :1]))
        if bad.size:
            k, j = bad[0]
            path, line = self.where(int(E[k, j]))
            p0, l0 = self.where(int(E[k, 0]))
            raise TraceError(
                f"collective call #{k + 1} on {self.comm_name(c)}: rank {members[j]} calls "
                f"{self.call(E[k, j])}, but rank {members[0]} calls {self.call(E[k, 0])} "
                f"({p0}:{l0})",
                path=path,
                line=line,
            )
        op0 = op[:, 0]
        nb0 = nb[:, 0].astype(np.int64)
        rooted = np.isin(op0, [COLL_OPS.index(o) for o in ROOTED_OPS])
        bad = np.argwhere(rooted[:, None] & (root != root[:, :1]))
        if bad.size:
            k, j = bad[0]
            path, line = self.where(int(E[k, j]))
            p0, l0 = self.where(int(E[k, 0]))
            raise TraceError(
                f"{self.call(E[k, j])} (collective call #{k + 1} on {self.comm_name(c)}): rank "
                f"{members[j]} gives root {root[k, j]}, rank {members[0]} gives root {root[k, 0]} "
                f"({p0}:{l0})",
                path=path,
                line=line,
            )
        root0 = np.where(rooted, root[:, 0], 0)
        bad = np.flatnonzero((root0 < 0) | (root0 >= n))
        if bad.size:
            path, line = self.where(int(E[bad[0], 0]))
            raise TraceError(
                f"{self.call(E[bad[0], 0])}: root {root0[bad[0]]} outside "
                f"{self.comm_name(c)} of size {n}",
                path=path,
                line=line,
            )
        sizes = ev.size[E]
        size = np.where(rooted, sizes[np.arange(K), root0], sizes[:, 0])
        v_ops = np.isin(
            op0,
            [
                COLL_OPS.index(o)
                for o in ("allgatherv", "gatherv", "scatterv", "alltoallv", "reduce_scatter")
            ],
        )
        plain_ops = ~v_ops & ~rooted & (op0 != COLL_OPS.index("barrier"))
        disagree = np.flatnonzero(plain_ops & np.any(sizes != sizes[:, :1], axis=1))
        if disagree.size:
            k = int(disagree[0])
            path, line = self.where(int(E[k, 0]))
            self.diag.note(
                "collective calls whose members give different sizes (member 0's size used)",
                f"{path}:{line}",
                int(disagree.size),
            )
        size = np.where(v_ops | (op0 == COLL_OPS.index("barrier")), 0, size)
        instance = np.arange(K, dtype=np.int64)
        # instances with plain sizes: group by (op, root, size, non-blocking)
        plain = np.flatnonzero(~v_ops)
        if plain.size:
            keys = np.stack((op0[plain], root0[plain], size[plain], nb0[plain]), axis=1)
            uniq, inv_k = np.unique(keys, axis=0, return_inverse=True)
            inv_k = inv_k.reshape(-1)
            for u in range(uniq.shape[0]):
                rows = plain[inv_k == u]
                o, rt, sz, nbk = (int(x) for x in uniq[u])
                self._add_group(
                    c, COLL_OPS[o], n, rt, sz, None, E[rows], instance[rows], members, bool(nbk)
                )
        # v-variants: counts assembled from the members' calls
        by_counts: dict[tuple[str, int, tuple[int, ...], int], list[int]] = {}
        for k in np.flatnonzero(v_ops).tolist():
            name = COLL_OPS[int(op0[k])]
            counts = self._counts(name, E[k], n, c)
            if counts is None:
                continue
            by_counts.setdefault((name, int(root0[k]), counts, int(nb0[k])), []).append(k)
        for (name, rt, counts, nbk), rows in by_counts.items():
            rows_a = np.array(rows, np.int64)
            self._add_group(
                c, name, n, rt, 0, counts, E[rows_a], instance[rows_a], members, bool(nbk)
            )

    def _counts(self, name: str, row: np.ndarray, n: int, c: int) -> tuple[int, ...] | None:
        ev = self.ev
        if name in ("allgatherv", "gatherv", "scatterv"):
            return tuple(int(x) for x in ev.size[row])
        if name == "alltoallv":
            cols = [ev.counts(int(e)) for e in row]
            if any(col.size != n for col in cols):
                e = int(row[0])
                path, line = self.where(e)
                raise TraceError(
                    f"{self.call(e)}: counts do not have {n} entries", path=path, line=line
                )
            matrix = np.stack(cols, axis=1)  # column j = what member j receives from each i
            return tuple(int(x) for x in matrix.reshape(-1))
        counts = ev.counts(int(row[0]))  # reduce_scatter: the same vector at every member
        if counts.size != n:
            path, line = self.where(int(row[0]))
            raise TraceError(
                f"{self.call(row[0])}: recvcounts has {counts.size} entries, communicator has {n}",
                path=path,
                line=line,
            )
        return tuple(int(x) for x in counts)

    def _add_group(
        self,
        c: int,
        op: str,
        n: int,
        root: int,
        size: int,
        counts: tuple[int, ...] | None,
        E: np.ndarray,
        instance: np.ndarray,
        members: np.ndarray,
        nonblocking: bool = False,
    ) -> None:
        choice = parse_analytic(op, self.alg[op])
        self.ops_used.add(op)
        waits = self.icoll_wait[E] if nonblocking else None
        if choice is None:
            tpl = _template(op, n, self.alg[op], root, size, counts)
            grp = _CollGroup(c, tpl, E, instance, members, waits=waits)
        else:
            tpl = _analytic_template(choice.label, n, root)
            bytes_ = _member_bytes(op, n, size, counts)
            grp = _CollGroup(c, tpl, E, instance, members, bytes_, waits)
            cost = _instance_cost(choice, n, root, size, counts)
            self.coll_costs.append(
                (grp.tags, op, cost.latency_terms, cost.byte_terms, choice.label)
            )
        self.coll_groups.append(grp)
        if waits is None:
            self.coll_nv[E] = tpl.nv[None, :]
            return
        # non-blocking: every round sits at the call, right after the first (the MPI library
        # makes the later ones as their messages arrive: no later place in program order is
        # theirs); the wait that completes the request requires the last join
        grp.completed = (waits >= 0) & (tpl.nv > 0)[None, :]
        self.coll_nv[E] = tpl.nv[None, :]
        self.coll_waited.append(waits[grp.completed])

    def collective_costs_meta(self) -> dict[str, Any]:
        """``meta["collective_costs"]`` for the analytic instances (nothing when all expand)."""
        if not self.coll_costs:
            return {}
        tags = np.concatenate([t for t, *_ in self.coll_costs])
        reps = [t.size for t, *_ in self.coll_costs]
        order = np.argsort(tags, kind="stable")

        def column(i: int) -> list:
            values = np.repeat(np.array([row[i] for row in self.coll_costs], dtype=object), reps)
            return values[order].tolist()

        return {
            COLLECTIVE_COSTS: {
                "tag": tags[order].tolist(),
                "op": column(1),
                "latency_terms": [float(x) for x in column(2)],
                "byte_terms": [float(x) for x in column(3)],
                "model": column(4),
            }
        }

    # ----------------------------------------------------------------- layout and arrays
    def assemble(self) -> dict[str, np.ndarray]:
        ev = self.ev
        n, P = self.n, self.P
        valid_ops = np.flatnonzero(self.op_valid)
        n_ops = np.bincount(self.op_group[valid_ops], minlength=n).astype(np.int64)
        n_ops += self.coll_nv
        wait_ok = self.op_valid[self.wait_op]
        self.wait_event, self.wait_op = self.wait_event[wait_ok], self.wait_op[wait_ok]
        has_wait = np.zeros(n, bool)
        has_wait[self.wait_event] = True
        coll_waits = (
            np.unique(np.concatenate(self.coll_waited))
            if self.coll_waited
            else np.zeros(0, np.int64)
        )
        has_wait[coll_waits] = True
        boundary = np.flatnonzero((n_ops > 0) | has_wait)
        # slots: one per boundary group (calc + its ops), then a final calc per rank
        b_rank = ev.rank[boundary].astype(np.int64)
        n_slots = boundary.size + P
        at_b = np.arange(boundary.size) + b_rank  # the finals of lower ranks come first
        at_final = np.cumsum(np.bincount(b_rank, minlength=P)) + np.arange(P)
        slot_rank = np.empty(n_slots, np.int64)
        slot_rank[at_b] = b_rank
        slot_rank[at_final] = np.arange(P)
        slot_group = np.full(n_slots, -1, np.int64)
        slot_group[at_b] = boundary
        is_final = slot_group < 0
        slot_key = np.where(is_final, 0, slot_group)
        slot_of_group = np.full(n, -1, np.int64)
        slot_of_group[boundary] = at_b
        # a slot: calc [ops] [progress joins of non-blocking collectives whose first receive
        # waits for this call]
        slot_post = self._plan_progress(slot_of_group, slot_key, is_final)
        slot_size = np.where(is_final, 1, 1 + n_ops[slot_key]) + slot_post
        slot_off = np.concatenate(([0], np.cumsum(slot_size)[:-1])).astype(np.int64)
        V = int(slot_size.sum())
        calc_of = slot_off  # calc vertex of each slot
        post_of = slot_off + slot_size - slot_post  # first progress join of each slot
        next_calc = np.empty_like(slot_off)
        next_calc[:-1] = calc_of[1:]
        if next_calc.size:
            next_calc[-1] = -1  # the last slot is a final calc: no successor

        # rank time bounds and calc costs
        t0, t_final = self._rank_bounds()
        first_of_rank = np.ones(slot_rank.size, bool)
        first_of_rank[1:] = slot_rank[1:] != slot_rank[:-1]
        g_start = np.where(is_final, t_final[slot_rank], ev.t_start_ns[np.maximum(slot_group, 0)])
        g_end = np.where(is_final, np.nan, ev.t_end_ns[np.maximum(slot_group, 0)])
        prev_end = np.empty(slot_rank.size)
        prev_end[1:] = g_end[:-1]
        prev_end[first_of_rank] = t0[slot_rank[first_of_rank]]
        cost = g_start - prev_end
        neg = np.flatnonzero(cost < 0)
        if neg.size:
            k = int(neg[0])
            if is_final[k]:
                fin = np.flatnonzero((ev.kind == FINALIZE) & (ev.rank == slot_rank[k]))
                e = int(fin[0]) if fin.size else int(slot_group[k - 1])
            else:
                e = int(slot_group[k])
            path, line = self.where(e)
            self.diag.problem(
                f"{self.call(e)} starts {-cost[k]:g} ns before the previous call "
                "of its rank ended (timestamps go backwards)",
                path,
                line,
                count=int(neg.size),
            )
            cost = np.maximum(cost, 0.0)

        rank = np.repeat(slot_rank.astype(np.int32), slot_size)
        kind = np.full(V, CALC, np.int8)
        cost_ns = np.zeros(V)
        size = np.zeros(V, np.int64)
        peer = np.zeros(V, np.int32)
        tag = np.zeros(V, np.int64)
        t_trace = np.repeat(g_start, slot_size)
        cost_ns[calc_of] = cost
        t_trace[calc_of] = prev_end

        # edges go straight into preallocated columns (no list of parts to concatenate)
        ops = valid_ops  # already in (event, sub) order
        w_groups = np.union1d(self.wait_event, coll_waits)  # sorted, one per wait call
        both = self.op_valid[self.msg_send] & self.op_valid[self.msg_recv]
        ms, mr = self.msg_send[both], self.msg_recv[both]
        n_edges = (
            2 * ops.size
            + w_groups.size
            + self.wait_op.size
            + ms.size
            + sum(_coll_edge_count(grp) for grp in self.coll_groups)
        )
        edge_src = np.empty(n_edges, np.int64)
        edge_dst = np.empty(n_edges, np.int64)
        edge_kind = np.empty(n_edges, np.int8)
        filled = 0

        def add(src: np.ndarray, dst: np.ndarray, k: int | np.ndarray) -> None:
            nonlocal filled
            m = np.size(src)
            edge_src[filled : filled + m] = np.reshape(src, -1)
            edge_dst[filled : filled + m] = np.reshape(dst, -1)
            edge_kind[filled : filled + m] = np.reshape(k, -1) if np.ndim(k) else k
            filled += m

        # point-to-point ops
        og = self.op_group[ops]
        first = np.ones(ops.size, bool)
        first[1:] = og[1:] != og[:-1]
        starts = np.flatnonzero(first)
        within = np.arange(ops.size) - np.repeat(starts, np.diff(np.append(starts, ops.size)))
        s_of = slot_of_group[og]
        vid = calc_of[s_of] + 1 + within
        op_vertex = np.full(self.op_event.size, -1, np.int64)
        op_vertex[ops] = vid
        kind[vid] = np.where(self.op_send[ops], SEND, RECV)
        size[vid] = self.op_size[ops]
        peer[vid] = self.op_peer[ops]
        tag[vid] = self.op_tag[ops] + self.op_comm[ops] * COMM_TAG_STRIDE
        add(calc_of[s_of], vid, REQUIRES)
        add(vid, next_calc[s_of], np.where(self.op_blocking[ops], REQUIRES, IREQUIRES))
        # waits: calc before → calc after, and each completed op → calc after (request order)
        ws = slot_of_group[w_groups]
        add(calc_of[ws], next_calc[ws], REQUIRES)
        add(op_vertex[self.wait_op], next_calc[slot_of_group[self.wait_event]], REQUIRES)
        # point-to-point messages
        add(op_vertex[ms], op_vertex[mr], MESSAGE)

        # collectives: every call's vertices sit at the call; a non-blocking call's rounds
        # after the first follow from the joins, and the wait that completes it waits for them
        for grp in self.coll_groups:
            tpl = grp.template
            S = slot_of_group[grp.events]  # (I, n)
            B = calc_of[S] + 1
            prev_c = calc_of[S]
            next_c = next_calc[S]
            ctag = grp.tags
            if grp.waits is not None:
                w_slot = slot_of_group[np.maximum(grp.waits, 0)]
            for j in range(grp.members.size):
                nvj = int(tpl.nv[j])
                if nvj == 0:
                    continue
                v = B[:, j, None] + np.arange(nvj)[None, :]
                kind[v] = tpl.v_kind[j][None, :]
                comm_v = tpl.v_kind[j] != CALC
                sizes = tpl.v_size[j] if grp.member_bytes is None else grp.member_bytes[j : j + 1]
                size[v] = np.where(comm_v, sizes, 0)[None, :]
                peer[v] = np.where(comm_v, grp.members[tpl.v_peer[j]], 0)[None, :]
                tag[v] = np.where(comm_v[None, :], ctag[:, None], 0)
                e_src, e_dst = tpl.e_src[j], tpl.e_dst[j]
                if grp.waits is not None:  # the rank goes on after starting the first round
                    keep = e_dst != NEXT
                    e_src, e_dst = e_src[keep], e_dst[keep]
                    first = B[:, j, None] + np.arange(int(tpl.n_first[j]))[None, :]
                    add(first, np.broadcast_to(next_c[:, j, None], first.shape), IREQUIRES)
                    # the completing wait requires the last join
                    rows = np.flatnonzero(grp.completed[:, j])
                    add(B[rows, j] + nvj - 1, next_calc[w_slot[rows, j]], REQUIRES)
                    # a progress join (a zero-cost calc nothing waits for) requires the first
                    # receive and the calc before the first blocking call after the start:
                    # under progress "wait" that receive, and every later round after it, is
                    # processed no earlier than that call
                    rows = np.flatnonzero(grp.pin[:, j] >= 0)
                    if rows.size:
                        pin = grp.pin[rows, j]
                        z = post_of[pin] + grp.pin_at[rows, j]
                        first_recv = B[rows, j] + int(tpl.first_recv[j])
                        add(first_recv, z, REQUIRES)
                        add(calc_of[pin], z, REQUIRES)
                ends = (B[:, j], prev_c[:, j], next_c[:, j])
                add(_place(e_src, *ends), _place(e_dst, *ends), REQUIRES)
            if tpl.m_a.size:
                add(B[:, tpl.m_a] + tpl.m_ta[None, :], B[:, tpl.m_b] + tpl.m_tb[None, :], MESSAGE)

        if filled != n_edges:
            raise RuntimeError(f"edge count {filled} differs from the {n_edges} planned")
        return {
            "rank": rank,
            "kind": kind,
            "cost_ns": cost_ns,
            "size": size,
            "peer": peer,
            "tag": tag,
            "edge_src": edge_src,
            "edge_dst": edge_dst,
            "edge_kind": edge_kind,
            "t_trace_ns": t_trace,
        }

    def _plan_progress(
        self, slot_of_group: np.ndarray, slot_key: np.ndarray, is_final: np.ndarray
    ) -> np.ndarray:
        """Where each waited non-blocking collective's first receive is pinned: the rank's first
        blocking call after the start (a blocking op or collective, or a wait: the completing
        one at the latest), where an MPI library without a progress thread spins its progress
        engine. Sets ``grp.pin`` (slot, −1: none) and ``grp.pin_at`` (position among the
        slot's progress joins); returns the number of progress joins per slot."""
        n_slots = slot_key.size
        slot_post = np.zeros(n_slots, np.int64)
        blocking = ~is_final & ~kind_in(self.ev.kind[slot_key], (*_NONBLOCKING, ICOLL))
        first = np.where(blocking, np.arange(n_slots), n_slots)
        first = np.minimum.accumulate(first[::-1])[::-1]  # first blocking slot ≥ s
        after = np.append(first[1:], n_slots)  # first blocking slot > s (a later rank's too)
        for grp in self.coll_groups:
            if grp.waits is None:
                continue
            S = slot_of_group[grp.events]
            has = grp.completed & (grp.template.first_recv >= 0)[None, :]
            grp.pin = np.where(has, after[S], -1)
            pins = grp.pin[has]
            order = np.argsort(pins, kind="stable")
            rank_in = np.empty(pins.size, np.int64)
            rank_in[order] = _run_index(pins[order])
            grp.pin_at = np.zeros(S.shape, np.int64)
            grp.pin_at[has] = slot_post[pins] + rank_in
            np.add.at(slot_post, pins, 1)
        return slot_post

    def _rank_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per rank: trace time of the end of MPI_Init and of the start of MPI_Finalize."""
        ev = self.ev
        P = self.P
        t0 = np.zeros(P)
        t1 = np.zeros(P)
        bounds = ev.rank_bounds(P)
        has = bounds[1:] > bounds[:-1]
        first = np.minimum(bounds[:-1], max(len(ev) - 1, 0))
        last = np.maximum(bounds[1:] - 1, 0)
        if len(ev):
            t0[has] = ev.t_start_ns[first[has]]
            t1[has] = ev.t_end_ns[last[has]]
        init = np.flatnonzero(ev.kind == INIT)
        t0[ev.rank[init[::-1]]] = ev.t_end_ns[init[::-1]]  # the first Init of each rank wins
        fin = np.flatnonzero(ev.kind == FINALIZE)
        t1[ev.rank[fin[::-1]]] = ev.t_start_ns[fin[::-1]]
        return t0, t1
