"""Reader for OTF2 traces (Score-P and other OTF2 writers) → :class:`~llamp.ingest.events.Trace`.

An OTF2 archive is an anchor file ``<name>.otf2`` with global definitions ``<name>.def`` and one
event stream per location in ``<name>/<location>.evt`` (``docs/formats.md``).
``read_otf2`` takes the anchor or its folder and reads it with the ``otf2`` package (PyPI
``otf2`` ≥ 3.0): definitions through ``otf2.reader.open``, events through the package's
binding of OTF2's global event reader (``_otf2``, one function per C function) with callbacks
that append plain tuples — the package's own event iterator builds a Python object per event
(≈ 24 µs each on the shared sample; this path ≈ 3 µs). Local definition files are read first, as
the package does, so OTF2 applies the recorded clock offsets.

Ranks are the locations of the MPI paradigm's ``COMM_LOCATIONS`` group (``members[i]`` is rank
``i``); other locations (threads, devices) are not read. Timestamps are ticks of
``ClockProperties.timer_resolution`` per second: ``ns = ticks · 10⁹ / resolution``; a rank's
time origin is the end of its ``MPI_Init`` (Leave), and :attr:`Trace.clock_offset_ns` keeps the
ranks on OTF2's common clock.

An MPI call is an outermost ``Enter``/``Leave`` pair of a region whose paradigm is MPI (or whose
name starts with ``MPI_``); its times are the call's times and the MPI events recorded inside it
make its rows, in event order:

- ``MpiSend`` → SEND, ``MpiIsend`` → ISEND (request id), ``MpiRecv`` → RECV, ``MpiIrecvRequest``
  → IRECV whose peer, tag, communicator and size come from the ``MpiIrecv`` that completes the
  same request later (an Irecv never completed, e.g. cancelled, is absorbed with a warning); a
  call with one ``MpiSend`` and one ``MpiRecv`` (``MPI_Sendrecv``) gives SR_SEND + SR_RECV.
  Persistent requests appear as ``MpiIsend``/``MpiIrecvRequest`` in ``MPI_Start``. Peers are
  ranks in the event's communicator; OTF2 records the actual source and tag, so there are no
  wildcards.
- ``MpiIsendComplete``/``MpiIrecv``/``NonBlockingCollectiveComplete`` → one WAIT row per call
  with the completed request ids (``MPI_Wait*`` and successful ``MPI_Test*`` alike; a failed
  test, ``MpiRequestTest``, is computation).
- ``NonBlockingCollectiveRequest`` (in ``MPI_Iallreduce`` and the other non-blocking
  collectives) → ICOLL with the request id, whose operation, communicator, root and sizes come
  from the ``NonBlockingCollectiveComplete`` of the same request (sizes as for
  ``MpiCollectiveEnd``); a request never completed is absorbed with a warning.
- ``MpiCollectiveEnd`` → COLL with the operation, communicator, root and a size derived from
  OTF2's byte totals with Score-P's conventions (``scorep_mpi_coll``): bcast the received bytes;
  gather/reduce the sent bytes (at an ``MPI_IN_PLACE`` root ``received/(P−1)``); scatter the
  received bytes (in place: ``sent/(P−1)``); allgather, alltoall, allreduce,
  reduce_scatter_block, allgatherv ``sent/P`` (``sent/(P−1)`` when only that divides: in place);
  gatherv the sent and scatterv the received bytes; scan/exscan from the ``(me+1)``/``me``
  multiples. OTF2 keeps only totals for alltoallv/alltoallw and reduce_scatter: their per-peer
  counts are the totals split evenly, with a warning (message counts exact, sizes averaged).
- ``MPI_Init``/``MPI_Init_thread`` → INIT, ``MPI_Finalize`` → FINALIZE. Calls without modelled
  events (``MPI_Comm_rank``, communicator creation, RMA, matched probes, and non-blocking
  collectives that a writer recorded without their request events, as SST/macro does) are
  absorbed into the calc, with a warning unless they are expected to be pure computation.

Communicators come from the definitions: a ``COMM_GROUP`` lists ranks of ``COMM_LOCATIONS``
(world ranks), a ``COMM_SELF`` group makes one self communicator per rank. ``Trace.where`` gives
``(<name>/<location>.evt, event number)``.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from llamp.errors import InputError, TraceError
from llamp.ingest.events import (
    COLL,
    COLL_CODE,
    FINALIZE,
    ICOLL,
    INIT,
    IRECV,
    ISEND,
    RECV,
    SEND,
    SR_RECV,
    SR_SEND,
    WAIT,
    Communicator,
    Diagnostics,
    Events,
    Trace,
)

__all__ = ["find_anchor", "is_otf2", "read_otf2"]

# record kinds collected by the callbacks
_ENTER, _LEAVE, _SEND, _ISEND, _RECV, _IRECV_DONE, _IRECV_POST, _ISEND_DONE = range(8)
_COLL_END, _NBC_POST, _NBC_DONE = 8, 9, 10
_UNDEF32 = 0xFFFFFFFF

#: OTF2 ``CollectiveOp`` codes → llamp collective names (``None``: not a data collective).
_COLL_OPS: dict[int, str | None] = {
    0: "barrier", 1: "bcast", 2: "gather", 3: "gatherv", 4: "scatter", 5: "scatterv",
    6: "allgather", 7: "allgatherv", 8: "alltoall", 9: "alltoallv", 10: "alltoallv",
    11: "allreduce", 12: "reduce", 13: "reduce_scatter", 14: "scan", 15: "scan",
    16: "reduce_scatter", 17: None, 18: None, 19: None, 20: None, 21: None, 22: None,
}  # fmt: skip
_NBC_RE = re.compile(
    r"^mpi_i(barrier|bcast|gather|gatherv|scatter|scatterv|allgather|allgatherv|alltoall"
    r"|alltoallv|alltoallw|allreduce|reduce|reduce_scatter|reduce_scatter_block|scan|exscan)_?$",
    re.I,
)
_WAIT_RE = re.compile(r"^mpi_(wait|test)(all|any|some)?_?$", re.I)


# --------------------------------------------------------------------------- files
def find_anchor(path: str | Path) -> Path | None:
    """The ``*.otf2`` anchor file of ``path`` (the file itself or the only one in a folder)."""
    path = Path(path)
    if path.is_file():
        return path if path.suffix == ".otf2" else None
    if path.is_dir():
        anchors = sorted(p for p in path.glob("*.otf2") if p.is_file())
        return anchors[0] if len(anchors) == 1 else None
    return None


def is_otf2(path: str | Path) -> bool:
    """True if ``path`` is an OTF2 anchor file (or a folder holding exactly one)."""
    anchor = find_anchor(path)
    if anchor is None:
        return False
    try:
        with open(anchor, "rb") as handle:
            return b"OTF2" in handle.read(16)
    except OSError:
        return False


# --------------------------------------------------------------------------- definitions
@dataclass
class _Defs:
    """What the reader needs from the global definitions."""

    resolution: int
    loc_rank: dict[int, int]  # location ref → world rank
    loc_name: list[int]  # rank → location ref
    region_names: dict[int, str]
    region_mpi: np.ndarray  # region ref → is an MPI call region
    comm_members: dict[int, tuple[int, ...] | None]  # comm ref → world ranks; None: unknown
    comm_self: set[int]  # comm refs whose group is COMM_SELF
    comm_names: dict[int, str]
    world_ref: int | None


def _definitions(tr: Any, where: str) -> _Defs:
    import otf2

    defs = tr.definitions
    clock = defs.clock_properties
    resolution = int(clock.timer_resolution)
    if resolution <= 0:
        raise TraceError(
            f"timer resolution {resolution} ticks/s in the clock properties", path=where
        )
    groups = [
        g
        for g in defs.groups
        if g.group_type == otf2.GroupType.COMM_LOCATIONS and g.paradigm == otf2.Paradigm.MPI
    ]
    if not groups:
        raise TraceError(
            "no MPI COMM_LOCATIONS group in the definitions (not an MPI trace?)", path=where
        )
    locations = list(groups[0].members)
    loc_rank = {loc._ref: r for r, loc in enumerate(locations)}
    region_names = {}
    max_ref = max((r._ref for r in defs.regions), default=-1)
    region_mpi = np.zeros(max_ref + 2, bool)
    for region in defs.regions:
        name = region.name or ""
        region_names[region._ref] = name
        region_mpi[region._ref] = (
            region.paradigm == otf2.Paradigm.MPI or name.lower().startswith("mpi_")
        ) and region.region_role != otf2.RegionRole.ARTIFICIAL
    comm_members: dict[int, tuple[int, ...] | None] = {}
    comm_self: set[int] = set()
    comm_names: dict[int, str] = {}
    world_ref = None
    P = len(locations)
    for comm in defs.comms:
        group = comm.group
        comm_names[comm._ref] = comm.name or f"communicator {comm._ref}"
        if group is None:
            comm_members[comm._ref] = None
        elif group.group_type == otf2.GroupType.COMM_SELF:
            comm_self.add(comm._ref)
            comm_members[comm._ref] = None
        elif group.group_type in (otf2.GroupType.COMM_GROUP, otf2.GroupType.COMM_LOCATIONS):
            try:
                comm_members[comm._ref] = tuple(loc_rank[m._ref] for m in group.members)
            except KeyError:
                comm_members[comm._ref] = None
        else:
            comm_members[comm._ref] = None
        if comm_members.get(comm._ref) == tuple(range(P)) and comm.parent is None:
            if world_ref is None or comm.name == "MPI_COMM_WORLD":
                world_ref = comm._ref
    return _Defs(
        resolution,
        loc_rank,
        [loc._ref for loc in locations],
        region_names,
        region_mpi,
        comm_members,
        comm_self,
        comm_names,
        world_ref,
    )


# --------------------------------------------------------------------------- events
def _read_records(tr: Any, loc_refs: list[int]) -> np.ndarray:
    """All events of the given locations as rows ``(kind, loc, time, a, b, c, d, e, f)``
    (uint64), in each location's order; ``e`` is the request id of the request events."""
    import _otf2

    rows: list[tuple[int, ...]] = []
    add = rows.append
    handle = tr.handle
    for ref in loc_refs:
        _otf2.Reader_SelectLocation(handle, ref)
    try:
        _otf2.Reader_OpenDefFiles(handle)
        def_files = True
    except _otf2.Error:
        def_files = False
    try:
        _otf2.Reader_OpenEvtFiles(handle)
    except _otf2.Error:
        pass
    for ref in loc_refs:
        if def_files:
            reader = _otf2.Reader_GetDefReader(handle, ref)
            if reader:
                _otf2.Reader_ReadAllLocalDefinitions(handle, reader)
                _otf2.Reader_CloseDefReader(handle, reader)
        _otf2.Reader_GetEvtReader(handle, ref)
    if def_files:
        _otf2.Reader_CloseDefFiles(handle)
    global_reader = _otf2.Reader_GetGlobalEvtReader(handle)

    def enter(loc, t, _u, _a, region):
        add((_ENTER, loc, t, region, 0, 0, 0, 0, 0))

    def leave(loc, t, _u, _a, region):
        add((_LEAVE, loc, t, region, 0, 0, 0, 0, 0))

    def send(loc, t, _u, _a, peer, comm, tag, length):
        add((_SEND, loc, t, peer, comm, tag, length, 0, 0))

    def isend(loc, t, _u, _a, peer, comm, tag, length, req):
        add((_ISEND, loc, t, peer, comm, tag, length, req, 0))

    def recv(loc, t, _u, _a, peer, comm, tag, length):
        add((_RECV, loc, t, peer, comm, tag, length, 0, 0))

    def irecv(loc, t, _u, _a, peer, comm, tag, length, req):
        add((_IRECV_DONE, loc, t, peer, comm, tag, length, req, 0))

    def irecv_request(loc, t, _u, _a, req):
        add((_IRECV_POST, loc, t, 0, 0, 0, 0, req, 0))

    def isend_complete(loc, t, _u, _a, req):
        add((_ISEND_DONE, loc, t, 0, 0, 0, 0, req, 0))

    def coll_end(loc, t, _u, _a, op, comm, root, sent, received):
        add((_COLL_END, loc, t, op.value, comm, root, sent, received, 0))

    def nbc_request(loc, t, _u, _a, req):
        add((_NBC_POST, loc, t, 0, 0, 0, 0, req, 0))

    def nbc_complete(loc, t, _u, _a, op, comm, root, sent, received, req):
        add((_NBC_DONE, loc, t, op.value, comm, root, sent, req, received))

    callbacks = _otf2.GlobalEvtReaderCallbacks_New()
    for name, fn in (
        ("Enter", enter),
        ("Leave", leave),
        ("MpiSend", send),
        ("MpiIsend", isend),
        ("MpiRecv", recv),
        ("MpiIrecv", irecv),
        ("MpiIrecvRequest", irecv_request),
        ("MpiIsendComplete", isend_complete),
        ("MpiCollectiveEnd", coll_end),
        ("NonBlockingCollectiveRequest", nbc_request),
        ("NonBlockingCollectiveComplete", nbc_complete),
    ):
        getattr(_otf2, f"GlobalEvtReaderCallbacks_Set{name}Callback")(callbacks, fn)
    _otf2.GlobalEvtReader_SetCallbacks(global_reader, callbacks, None)
    _otf2.GlobalEvtReaderCallbacks_Delete(callbacks)
    try:
        _otf2.GlobalEvtReader_ReadEvents(global_reader, 1 << 62)
    finally:
        _otf2.Reader_CloseGlobalEvtReader(handle, global_reader)
        _otf2.Reader_CloseEvtFiles(handle)
    if not rows:
        return np.zeros((0, 9), np.uint64)
    return np.array(rows, dtype=np.uint64)


# --------------------------------------------------------------------------- per rank
@dataclass
class _RankRows:
    cols: dict[str, np.ndarray]
    req_count: np.ndarray
    req_ids: np.ndarray
    counts: list[tuple[int, np.ndarray]]
    origin: int


def _bytes(
    lengths: np.ndarray, names: list[str], calls: np.ndarray, lines: np.ndarray, where: str
) -> np.ndarray:
    """OTF2's unsigned 64-bit byte counts as int64, each checked: one of 2^63 or more is an
    error at its event, never a wrapped (negative) size."""
    big = np.flatnonzero(lengths >= np.uint64(1 << 63))
    if big.size:
        j = int(big[0])
        raise TraceError(
            f"{names[int(calls[j])]}: {int(lengths[j])} bytes is above 2^63 − 1, the largest "
            "signed 64-bit integer",
            path=where,
            line=int(lines[j]),
        )
    return lengths.astype(np.int64)


def _per_member(total: np.ndarray, P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-member bytes from a Score-P total of ``P`` (or ``P−1`` in place) blocks, and a flag
    where neither divides (``total // P`` taken)."""
    P = np.maximum(P, 1)
    by_p = total % P == 0
    by_p1 = (P > 1) & (total % np.maximum(P - 1, 1) == 0)
    out = np.where(by_p, total // P, np.where(by_p1, total // np.maximum(P - 1, 1), total // P))
    return out, ~by_p & ~by_p1


def _collective_sizes(
    op: np.ndarray, sent: np.ndarray, recv: np.ndarray, P: np.ndarray, me: np.ndarray,
    root: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Bytes significant at each member (``COLL_OPS`` convention) from OTF2 byte totals."""
    size = np.zeros(op.size, np.int64)
    odd = np.zeros(op.size, bool)
    Pm1 = np.maximum(P - 1, 1)
    at_root = me == root
    for code in np.unique(op).tolist():
        sel = op == code
        s, r = sent[sel], recv[sel]
        if code == 1:  # bcast
            size[sel] = r
        elif code in (2, 12):  # gather, reduce
            size[sel] = np.where(at_root[sel] & (s == 0), r // Pm1[sel], s)
        elif code == 4:  # scatter
            size[sel] = np.where(at_root[sel] & (r == 0), s // Pm1[sel], r)
        elif code in (6, 7, 8, 11, 16):  # allgather(v), alltoall, allreduce, rs_block
            size[sel], odd[sel] = _per_member(s, P[sel])
        elif code == 3:  # gatherv: this member's block
            size[sel] = s
        elif code == 5:  # scatterv
            size[sel] = r
        elif code in (14, 15):  # scan, exscan
            m = me[sel]
            n1 = r // (m + 1)
            inclusive = (code == 14) & (r % (m + 1) == 0) & (s == (P[sel] - m) * n1)
            size[sel] = np.where(inclusive, n1, (s + r) // Pm1[sel])
        elif code in (9, 10, 13):  # alltoallv/w, reduce_scatter: counts, not a size
            size[sel] = 0
    return size, odd


def _rank_rows(
    rank: int,
    rec: np.ndarray,
    defs: _Defs,
    comm_index: dict[tuple[int, int], int],
    comm_size: dict[int, int],
    comm_pos: dict[tuple[int, int], int],
    calls: dict[str, int],
    where: str,
    diag: Diagnostics,
) -> _RankRows:
    """Rows of one rank from its records (vectorised; see the module docstring)."""
    n = rec.shape[0]
    kind = rec[:, 0].astype(np.int64)
    time = rec[:, 2]
    a = rec[:, 3].astype(np.int64)
    region_mpi = defs.region_mpi
    ref = np.where((kind == _ENTER) | (kind == _LEAVE), a, region_mpi.size - 1)
    ref = np.clip(ref, 0, region_mpi.size - 1)
    is_mpi = region_mpi[ref]
    m_enter = (kind == _ENTER) & is_mpi
    m_leave = (kind == _LEAVE) & is_mpi
    depth = np.cumsum(m_enter.astype(np.int64) - m_leave.astype(np.int64))
    if n and (depth.min() < 0):
        e = int(np.flatnonzero(depth < 0)[0])
        raise TraceError(
            f"Leave of {defs.region_names.get(int(a[e]), '?')} without its Enter", path=where,
            line=e + 1,
        )  # fmt: skip
    outer_enter = np.flatnonzero(m_enter & (depth == 1))
    outer_leave = np.flatnonzero(m_leave & (depth == 0))
    if outer_leave.size != outer_enter.size:
        e = int(outer_enter[-1])
        diag.problem(
            f"{defs.region_names.get(int(a[e]), '?')} entered but never left (truncated trace?)",
            where,
            e + 1,
        )
        outer_enter = outer_enter[: outer_leave.size]
    ncall = outer_enter.size
    call_of = np.cumsum(m_enter & (depth == 1)) - 1  # call index of records inside a call
    inside = depth > 0
    call_region = a[outer_enter]
    names = [defs.region_names.get(int(x), f"region {x}") for x in call_region.tolist()]
    t_enter = time[outer_enter]
    t_leave = time[outer_leave]

    mpi_ev = np.flatnonzero(kind >= _SEND)
    outside = mpi_ev[~inside[mpi_ev]]
    if outside.size:
        diag.problem(
            "MPI event outside any MPI call region (no enclosing Enter/Leave)",
            where,
            int(outside[0]) + 1,
            count=int(outside.size),
        )
        mpi_ev = mpi_ev[inside[mpi_ev]]
    ev_kind = kind[mpi_ev]

    # Irecv and non-blocking collective posts take their parameters from the completion of
    # the same request
    completion_of = np.full(n, -1, np.int64)
    for post_kind, done_kind, what in (
        (_IRECV_POST, _IRECV_DONE, "MPI_Irecv requests"),
        (_NBC_POST, _NBC_DONE, "non-blocking collective requests"),
    ):
        post = mpi_ev[ev_kind == post_kind]
        done = mpi_ev[ev_kind == done_kind]
        both = np.concatenate((post, done))
        order = np.lexsort((both, rec[both, 7]))
        seq = both[order]
        is_done = kind[seq] == done_kind
        prev_is_post = np.zeros(seq.size, bool)
        if seq.size > 1:
            prev_is_post[1:] = (kind[seq[:-1]] == post_kind) & (rec[seq[:-1], 7] == rec[seq[1:], 7])
        pair_post = seq[np.flatnonzero(is_done & prev_is_post) - 1]
        completion_of[pair_post] = seq[is_done & prev_is_post]
        lost = np.setdiff1d(post, pair_post)
        if lost.size:
            diag.note(
                f"{what} whose completion is not in the trace (cancelled or never completed): "
                "absorbed",
                f"{where}:{int(lost[0]) + 1}",
                int(lost.size),
            )

    # primary rows, in event order: p2p posts and blocking calls, collectives
    primary_kinds = (_SEND, _ISEND, _RECV, _IRECV_POST, _COLL_END, _NBC_POST)
    prim = mpi_ev[np.isin(ev_kind, primary_kinds)]
    posts = (kind[prim] == _IRECV_POST) | (kind[prim] == _NBC_POST)
    prim = prim[~posts | (completion_of[prim] >= 0)]
    coll_src = np.where(kind[prim] == _NBC_POST, completion_of[prim], prim)
    is_coll_ev = (kind[prim] == _COLL_END) | (kind[prim] == _NBC_POST)
    coll_op = np.where(is_coll_ev, rec[coll_src, 3].astype(np.int64), -1)
    data_coll = np.array([_COLL_OPS.get(int(o)) is not None for o in coll_op.tolist()], bool)
    handles = prim[is_coll_ev & ~data_coll]
    if handles.size:
        diag.note(
            "collective events creating/destroying handles (communicator/window management): "
            "computation",
            f"{where}:{int(handles[0]) + 1}",
            int(handles.size),
        )
    prim = prim[~is_coll_ev | data_coll]
    posts = (kind[prim] == _IRECV_POST) | (kind[prim] == _NBC_POST)
    src = np.where(posts, completion_of[prim], prim)
    p_call = call_of[prim]
    p_kind = kind[prim]
    row_kind = np.select(
        [p_kind == _SEND, p_kind == _ISEND, p_kind == _RECV, p_kind == _IRECV_POST],
        [SEND, ISEND, RECV, IRECV],
        np.where(p_kind == _NBC_POST, ICOLL, COLL),
    ).astype(np.int64)
    # Sendrecv: one blocking send and one blocking receive in the same call
    n_send = np.bincount(p_call[p_kind == _SEND], minlength=ncall)
    n_recv = np.bincount(p_call[p_kind == _RECV], minlength=ncall)
    sr_call = (n_send == 1) & (n_recv == 1)
    sr = sr_call[p_call] & ((p_kind == _SEND) | (p_kind == _RECV))
    row_kind = np.where(sr & (p_kind == _SEND), SR_SEND, row_kind)
    row_kind = np.where(sr & (p_kind == _RECV), SR_RECV, row_kind)
    sub = np.where(row_kind == SR_SEND, -2, np.where(row_kind == SR_RECV, -1, prim))

    # completions: one WAIT row per call, after its other rows
    comp = mpi_ev[(ev_kind == _ISEND_DONE) | (ev_kind == _IRECV_DONE) | (ev_kind == _NBC_DONE)]
    c_call = call_of[comp]
    wait_calls = np.unique(c_call)

    # Init/Finalize rows at call level
    lower = [x.lower().rstrip("_") for x in names]
    init_calls = np.array([i for i, x in enumerate(lower) if x in ("mpi_init", "mpi_init_thread")],
                          np.int64)  # fmt: skip
    fin_calls = np.array([i for i, x in enumerate(lower) if x == "mpi_finalize"], np.int64)

    r_call = np.concatenate((p_call, wait_calls, init_calls, fin_calls))
    r_sub = np.concatenate((sub, np.full(wait_calls.size, n + 1), np.full(init_calls.size, -3),
                            np.full(fin_calls.size, -3)))  # fmt: skip
    r_kind = np.concatenate((row_kind, np.full(wait_calls.size, WAIT),
                             np.full(init_calls.size, INIT), np.full(fin_calls.size, FINALIZE)))  # fmt: skip
    r_src = np.concatenate((src, np.full(wait_calls.size, -1), np.full(init_calls.size, -1),
                            np.full(fin_calls.size, -1)))  # fmt: skip
    r_line = np.concatenate((prim, outer_enter[wait_calls], outer_enter[init_calls],
                             outer_enter[fin_calls])) + 1  # fmt: skip
    order = np.lexsort((r_sub, r_call))
    r_call, r_kind, r_src, r_line = r_call[order], r_kind[order], r_src[order], r_line[order]
    m = r_call.size

    # absorbed calls: MPI calls that produced no row
    has_row = np.zeros(ncall, bool)
    has_row[r_call] = True
    quiet = [i for i in np.flatnonzero(~has_row).tolist()]
    waits_empty = 0
    first_wait = None
    for i in quiet:
        name = names[i]
        if _WAIT_RE.match(name):
            waits_empty += 1
            first_wait = first_wait if first_wait is not None else i
        else:
            diag.absorb(name, f"{where}:{int(outer_enter[i]) + 1}")
            if _NBC_RE.match(name):
                diag.note(
                    "non-blocking collectives recorded without NonBlockingCollectiveRequest/"
                    "Complete events (no communicator, size or request to model them)",
                    f"{where}:{int(outer_enter[i]) + 1}",
                )
    if waits_empty:
        diag.note(
            "MPI_Wait*/MPI_Test* calls that completed no traced request (non-blocking "
            "collectives recorded without their events, MPI_REQUEST_NULL, failed tests): "
            "computation",
            f"{where}:{int(outer_enter[first_wait]) + 1}",
            waits_empty,
        )

    # origin: the end of MPI_Init (else the first MPI call)
    if init_calls.size:
        origin = int(t_leave[init_calls[0]])
    else:
        diag.problem("no MPI_Init region in this rank's events", where, None)
        origin = int(t_enter[0]) if ncall else 0
    if not fin_calls.size:
        diag.problem("no MPI_Finalize region (truncated trace?)", where, None)
    scale = 1e9 / defs.resolution
    t0 = ((t_enter[r_call].astype(np.int64) - origin) * scale) if m else np.zeros(0)
    t1 = ((t_leave[r_call].astype(np.int64) - origin) * scale) if m else np.zeros(0)

    # p2p and collective columns from the source events
    s_ok = r_src >= 0
    srcs = r_src[s_ok]
    peer = np.zeros(m, np.int64)
    tag = np.zeros(m, np.int64)
    size = np.zeros(m, np.int64)
    comm_ref = np.zeros(m, np.int64)
    root = np.full(m, -1, np.int64)
    coll = np.full(m, -1, np.int64)
    is_coll = (r_kind == COLL) | (r_kind == ICOLL)
    p2p = s_ok & ~is_coll
    p2p_src = r_src[p2p]
    peer[p2p] = rec[p2p_src, 3].astype(np.int64)
    comm_ref[s_ok] = rec[srcs, 4].astype(np.int64)
    tag[p2p] = rec[p2p_src, 5].astype(np.int64)
    size[p2p] = _bytes(rec[p2p_src, 6], names, r_call[p2p], r_line[p2p], where)
    comm = np.zeros(m, np.int64)
    refs, inverse = np.unique(comm_ref[s_ok], return_inverse=True)
    mapped = np.array(
        [comm_index.get((int(c), rank), comm_index.get((int(c), -1), -1)) for c in refs],
        np.int64,
    )
    comm[s_ok] = mapped[inverse.reshape(-1)] if refs.size else comm[s_ok]
    unknown = np.flatnonzero(s_ok & (comm < 0))
    if unknown.size:
        j = int(unknown[0])
        raise TraceError(
            f"{names[int(r_call[j])]}: communicator {int(comm_ref[j])} is not defined",
            path=where,
            line=int(r_line[j]),
        )
    counts: list[tuple[int, np.ndarray]] = []
    if is_coll.any():
        cj = np.flatnonzero(is_coll)
        ce = r_src[cj]
        op = rec[ce, 3].astype(np.int64)
        P = np.array([comm_size[int(c)] for c in comm[cj].tolist()], np.int64)
        me = np.array([comm_pos[(int(c), rank)] for c in comm[cj].tolist()], np.int64)
        rt = rec[ce, 5].astype(np.int64)
        rt = np.where(rt == _UNDEF32, 0, rt)
        sent = _bytes(rec[ce, 6], names, r_call[cj], r_line[cj], where)
        got = _bytes(
            np.where(kind[ce] == _NBC_DONE, rec[ce, 8], rec[ce, 7]),
            names,
            r_call[cj],
            r_line[cj],
            where,
        )
        csize, odd = _collective_sizes(op, sent, got, P, me, rt)
        if odd.any():
            diag.note(
                "collective byte totals not divisible by the communicator size: per-member "
                "size rounded down",
                f"{where}:{int(r_line[cj[np.flatnonzero(odd)[0]]])}",
                int(odd.sum()),
            )
        size[cj] = csize
        root[cj] = rt
        coll[cj] = np.array([COLL_CODE[_COLL_OPS[int(o)]] for o in op.tolist()], np.int64)
        for k in np.flatnonzero(op == 16).tolist():  # reduce_scatter_block: equal blocks
            counts.append((int(cj[k]), np.full(int(P[k]), int(csize[k]), np.int64)))
        vec = np.flatnonzero(np.isin(op, (9, 10, 13)))
        for k in vec.tolist():
            total = int(got[k]) if op[k] in (9, 10) else int(sent[k])
            q, rem = divmod(total, int(P[k]))
            counts.append((int(cj[k]), q + (np.arange(int(P[k])) < rem).astype(np.int64)))
        counts.sort(key=lambda item: item[0])
        if vec.size:
            diag.note(
                "MPI_Alltoallv/Alltoallw/Reduce_scatter: OTF2 records byte totals only; "
                "per-peer counts taken as even shares (sizes approximate)",
                f"{where}:{int(r_line[cj[vec[0]]])}",
                int(vec.size),
            )
    # requests: ISEND/IRECV carry their id; WAIT rows the ids completed in their call
    req_count = np.zeros(m, np.int64)
    nb = (r_kind == ISEND) | (r_kind == IRECV) | (r_kind == ICOLL)
    req_count[nb] = 1
    comp_order = np.lexsort((comp, c_call))
    comp_sorted_call = c_call[comp_order]
    per_wait = np.bincount(comp_sorted_call, minlength=ncall)
    wait_rows = np.flatnonzero(r_kind == WAIT)
    req_count[wait_rows] = per_wait[r_call[wait_rows]]
    ids_row = np.zeros(m, np.int64)
    ids_row[nb] = rec[r_src[nb], 7].astype(np.int64)
    # concatenate in row order: one id per nb row, the completed ids per wait row
    pieces_at = np.cumsum(req_count) - req_count
    req_ids = np.zeros(int(req_count.sum()), np.int64)
    req_ids[pieces_at[nb]] = ids_row[nb]
    if wait_rows.size:
        start_of_call = np.concatenate(([0], np.cumsum(per_wait)[:-1]))
        comp_ids = rec[comp[comp_order], 7].astype(np.int64)
        for w in wait_rows.tolist():
            c = int(r_call[w])
            k = int(per_wait[c])
            s0 = int(start_of_call[c])
            req_ids[pieces_at[w] : pieces_at[w] + k] = comp_ids[s0 : s0 + k]
    call_ids = np.array([calls.setdefault(names[int(c)], len(calls)) for c in r_call.tolist()],
                        np.int16)  # fmt: skip
    cols = {
        "rank": np.full(m, rank, np.int32),
        "line": r_line.astype(np.int32),
        "kind": r_kind.astype(np.int8),
        "call": call_ids,
        "t_start_ns": np.asarray(t0, np.float64),
        "t_end_ns": np.asarray(t1, np.float64),
        "peer": peer.astype(np.int32),
        "tag": tag.astype(np.int32),
        "size": size,
        "comm": comm.astype(np.int32),
        "root": root.astype(np.int32),
        "coll": coll.astype(np.int8),
    }
    return _RankRows(cols, req_count, req_ids, counts, origin)


@contextmanager
def _c_stderr() -> Iterator[list[str]]:
    """Hold back what the OTF2 C library prints on stderr while it reads (a screenful of
    ``[OTF2] src/…: error: …`` lines for a damaged archive); the first error line is kept
    for the one-line message."""
    said: list[str] = []
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield said
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text = sink.read(1 << 16).decode(errors="replace")
            said.extend(
                line.split("error: ", 1)[-1].strip()
                for line in text.splitlines()
                if line.startswith("[OTF2]")
            )


# --------------------------------------------------------------------------- whole trace
def read_otf2(path: str | Path, *, lenient: bool = False, progress: bool = False) -> Trace:
    """Read an OTF2 archive (anchor ``*.otf2`` or its folder) into a :class:`Trace`.

    Raises :class:`TraceError` naming the event stream and event number for inconsistent
    events; ``lenient`` turns per-event problems into counted warnings.
    """
    try:
        import otf2
    except ImportError as err:  # pragma: no cover - the package is a dependency
        raise InputError("reading OTF2 needs the 'otf2' package (pip install otf2)") from err
    anchor = find_anchor(path)
    if anchor is None:
        raise InputError(f"{path}: no OTF2 anchor file (*.otf2)")
    where = str(anchor)
    diag = Diagnostics(lenient=lenient)
    try:
        with _c_stderr() as said, otf2.reader.open(where) as tr:
            defs = _definitions(tr, where)
            records = _read_records(tr, defs.loc_name)
    except Exception as err:  # the C library reports damaged archives as its own errors
        if type(err).__module__.startswith(("_otf2", "otf2")):
            detail = said[0] if said else str(err)
            raise TraceError(f"OTF2 reader: {detail}", path=where) from None
        raise
    P = len(defs.loc_name)
    stream_dir = anchor.parent / anchor.stem
    files = tuple(str(stream_dir / f"{ref}.evt") for ref in defs.loc_name)

    # communicators: world first, then the others in definition order, self comms per rank
    comms = [Communicator("MPI_COMM_WORLD", tuple(range(P)))]
    comm_index: dict[tuple[int, int], int] = {}
    if defs.world_ref is not None:
        comm_index[(defs.world_ref, -1)] = 0
    for ref, members in defs.comm_members.items():
        if ref == defs.world_ref or ref in defs.comm_self:
            continue
        comm_index[(ref, -1)] = len(comms)
        comms.append(Communicator(defs.comm_names[ref], members))
    for ref in sorted(defs.comm_self):
        for r in range(P):
            comm_index[(ref, r)] = len(comms)
            comms.append(Communicator(f"{defs.comm_names[ref]} (self of rank {r})", (r,)))
    comm_size = {i: (len(c.members) if c.members else 0) for i, c in enumerate(comms)}
    comm_pos = {
        (i, w): k for i, c in enumerate(comms) if c.members for k, w in enumerate(c.members)
    }

    loc = records[:, 1].astype(np.int64)
    lookup = np.full(int(loc.max(initial=0)) + 1, -1, np.int64)
    for ref, r in defs.loc_rank.items():
        if ref < lookup.size:
            lookup[ref] = r
    rank_of = lookup[loc] if loc.size else loc
    order = np.argsort(rank_of, kind="stable")
    bounds = np.searchsorted(rank_of[order], np.arange(P + 1))
    calls: dict[str, int] = {}
    parts = []
    origins = np.zeros(P, np.int64)
    for r in range(P):
        rec = records[order[bounds[r] : bounds[r + 1]]]
        rows = _rank_rows(r, rec, defs, comm_index, comm_size, comm_pos, calls, files[r], diag)
        origins[r] = rows.origin
        n = rows.cols["rank"].size
        cnt_count = np.zeros(n, np.int64)
        for row, values in rows.counts:
            cnt_count[row] = values.size
        parts.append(
            {
                **rows.cols,
                "req_count": rows.req_count,
                "req_ids": rows.req_ids,
                "cnt_count": cnt_count,
                "cnt_values": np.concatenate([v for _, v in rows.counts]).astype(np.int64)
                if rows.counts
                else np.zeros(0, np.int64),
            }
        )
    events = Events.from_parts(parts)
    offset = (origins - origins.min()) * (1e9 / defs.resolution) if P else np.zeros(0)
    meta = {
        "tracer": "OTF2",
        "timer_resolution_per_s": defs.resolution,
        "clock_alignment": "OTF2 global clock (offsets corrected by the writer)",
    }
    return Trace(
        num_ranks=P,
        events=events,
        calls=tuple(calls) if calls else ("MPI_Init",),
        comms=tuple(comms),
        files=files,
        format="otf2",
        clock_offset_ns=offset.astype(np.float64),
        clock_scale=np.ones(P),
        diagnostics=diag,
        meta=meta,
    )
