"""The common trace model every reader produces: columnar per-rank MPI event streams (docs/architecture.md §Ingest).

A reader (liballprof, and later SimGrid TI, OTF2, DUMPI) turns its files into one :class:`Trace`;
:func:`llamp.ingest.build.build_graph` turns any :class:`Trace` into an ``ExecutionGraph``. Keeping
the two apart means the trace→graph rules (calc gaps, request completion, message matching,
wildcard resolution, collective expansion) exist once, whatever the format.

:class:`Events` holds one row per *modelled* MPI call (calls that only cost time, such as
``MPI_Comm_rank``, are not rows: the reader counts them in :class:`Diagnostics` and their time
falls into the surrounding calc). Rows are sorted by rank, then program order; all columns are
numpy arrays (about 80 bytes per event), never a Python object per event.

Conventions, shared by every reader:

- times: ``t_start_ns``/``t_end_ns`` are nanoseconds since the rank's first timestamp (the end of
  ``MPI_Init``); ranks' clocks are not synchronised, so :attr:`Trace.clock_offset_ns` and
  :attr:`Trace.clock_scale` map a rank's time onto one common clock
  (``aligned = offset + scale · t``), used only to resolve wildcards;
- ``peer`` is a rank *within the communicator* ``comm`` (as MPI sees it), or the sentinels
  :data:`ANY_SOURCE`/:data:`PROC_NULL`; ``tag`` may be :data:`ANY_TAG` on receives;
- ``size`` is bytes (``count × type size``); for a collective it is the bytes significant at this
  member (see :data:`COLL_OPS`), ``root`` is a rank within ``comm``; a non-blocking collective
  (:data:`ICOLL`) has the columns of its blocking version plus the request it creates;
- ``comm`` indexes :attr:`Trace.comms`, whose entry 0 is ``MPI_COMM_WORLD``; a communicator's
  ``members`` lists the world ranks in communicator-rank order, or is ``None`` when the trace
  does not say (then its point-to-point and collective calls cannot be placed and are absorbed
  with a warning);
- request lists (``Wait``/``Waitall``/``Start``/``Startall``, and the request an ``Isend``/
  ``Irecv``/``*_init`` or a non-blocking collective creates) are CSR: ``req_ids[req_ptr[e]:req_ptr[e+1]]``, each id a
  rank-local request handle (liballprof: the address of the caller's ``MPI_Request``);
- a :data:`WAIT` row lists the requests a call *completed*: all of them for ``Wait``/``Waitall``,
  the completed entries for ``Waitany``/``Waitsome``, and for ``Test``/``Testall``/``Testany``/
  ``Testsome`` only when the trace says that something completed (a test that completed nothing
  is no row: it costs time only); a :data:`CANCEL` row names the request ``MPI_Cancel`` was
  called on (the request still has to be completed by a wait or test, or freed);
- per-member byte counts (alltoallv column, reduce_scatter vector) are CSR in
  ``cnt_values[cnt_ptr[e]:cnt_ptr[e+1]]``;
- ``MPI_Sendrecv`` is two adjacent rows, :data:`SR_SEND` then :data:`SR_RECV`, with the same
  times and line: one call, two operations.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from llamp.errors import TraceError

# --------------------------------------------------------------------------- event kinds
INIT, FINALIZE = 0, 1
SEND, RECV = 2, 3  # blocking (also Ssend, Rsend, Bsend)
ISEND, IRECV = 4, 5  # non-blocking; the request id is the row's single req entry
SEND_INIT, RECV_INIT = 6, 7  # persistent request templates
START = 8  # MPI_Start / MPI_Startall: req entries are the started requests
REQUEST_FREE = 9
WAIT = 10  # a completion (Wait*, a successful Test*): req entries are the completed requests
SR_SEND, SR_RECV = 11, 12  # the two halves of MPI_Sendrecv(_replace)
COLL = 13  # a collective: coll, root, size, comm (and counts for v-variants)
CANCEL = 14  # MPI_Cancel: the req entry is the request it was called on
ICOLL = 15  # a non-blocking collective (MPI_Iallreduce, …): a COLL whose req entry is its request

EVENT_KIND_NAMES = (
    "init",
    "finalize",
    "send",
    "recv",
    "isend",
    "irecv",
    "send_init",
    "recv_init",
    "start",
    "request_free",
    "wait",
    "sendrecv_send",
    "sendrecv_recv",
    "collective",
    "cancel",
    "icollective",
)

SEND_LIKE = (SEND, ISEND, SEND_INIT, SR_SEND)
RECV_LIKE = (RECV, IRECV, RECV_INIT, SR_RECV)


def kind_in(kind: np.ndarray, kinds: tuple[int, ...]) -> np.ndarray:
    """``kind ∈ kinds`` elementwise for small non-negative codes (a table lookup, no sort)."""
    table = np.zeros(256, dtype=bool)
    table[list(kinds)] = True
    return table[np.asarray(kind).astype(np.uint8, copy=False)]


#: The model's own sentinels (readers translate their library's values; they equal Open MPI's).
ANY_SOURCE = -1
PROC_NULL = -2
ANY_TAG = -1

#: Collective operations, in the order of the ``coll`` column's codes. The names are those of
#: :mod:`llamp.ingest.collectives`. ``size`` means: the message (bcast, reduce, allreduce, scan),
#: the per-rank block (allgather, alltoall, gather, scatter), or this member's block (allgatherv,
#: gatherv, scatterv); alltoallv carries its matrix column and reduce_scatter its byte vector in
#: the counts CSR.
COLL_OPS = (
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "allgather",
    "allgatherv",
    "alltoall",
    "alltoallv",
    "gather",
    "gatherv",
    "scatter",
    "scatterv",
    "reduce_scatter",
    "scan",
)
COLL_CODE = {name: code for code, name in enumerate(COLL_OPS)}
ROOTED_OPS = frozenset({"bcast", "reduce", "gather", "gatherv", "scatter", "scatterv"})

_COLUMNS: dict[str, type] = {
    "rank": np.int32,
    "line": np.int32,
    "kind": np.int8,
    "call": np.int16,
    "t_start_ns": np.float64,
    "t_end_ns": np.float64,
    "peer": np.int32,
    "tag": np.int32,
    "size": np.int64,
    "comm": np.int32,
    "root": np.int32,
    "coll": np.int8,
}


class IngestWarning(UserWarning):
    """Something in a trace was absorbed, dropped or guessed; the message says what and where."""


@dataclass(frozen=True, eq=False)
class Events:
    """Columnar MPI events of all ranks, sorted by (rank, program order); see the module doc."""

    rank: np.ndarray
    line: np.ndarray
    kind: np.ndarray
    call: np.ndarray
    t_start_ns: np.ndarray
    t_end_ns: np.ndarray
    peer: np.ndarray
    tag: np.ndarray
    size: np.ndarray
    comm: np.ndarray
    root: np.ndarray
    coll: np.ndarray
    req_ptr: np.ndarray
    req_ids: np.ndarray
    cnt_ptr: np.ndarray
    cnt_values: np.ndarray

    @classmethod
    def from_columns(
        cls,
        *,
        req_ptr: Any = None,
        req_ids: Any = None,
        cnt_ptr: Any = None,
        cnt_values: Any = None,
        **columns: Any,
    ) -> Events:
        """Cast array-likes to the canonical dtypes; missing optional columns become zeros/-1."""
        n = len(columns["rank"])
        out: dict[str, np.ndarray] = {}
        for name, dtype in _COLUMNS.items():
            if name in columns and columns[name] is not None:
                out[name] = np.ascontiguousarray(columns[name], dtype=dtype)
            else:
                fill = -1 if name in ("root", "coll") else 0
                out[name] = np.full(n, fill, dtype=dtype)
        unknown = set(columns) - set(_COLUMNS)
        if unknown:
            raise TypeError(f"unknown event columns: {sorted(unknown)}")
        zeros = np.zeros(n + 1, dtype=np.int64)
        events = cls(
            **out,
            req_ptr=zeros if req_ptr is None else np.ascontiguousarray(req_ptr, dtype=np.int64),
            req_ids=np.zeros(0, np.int64)
            if req_ids is None
            else np.ascontiguousarray(req_ids, np.int64),
            cnt_ptr=zeros if cnt_ptr is None else np.ascontiguousarray(cnt_ptr, dtype=np.int64),
            cnt_values=np.zeros(0, np.int64)
            if cnt_values is None
            else np.ascontiguousarray(cnt_values, np.int64),
        )
        events.check()
        return events

    def __len__(self) -> int:
        return int(self.rank.shape[0])

    def check(self) -> None:
        """Shapes and CSR pointers are consistent (a reader bug otherwise, hence ValueError)."""
        n = len(self)
        for name in _COLUMNS:
            if getattr(self, name).shape != (n,):
                raise ValueError(
                    f"event column {name} has shape {getattr(self, name).shape}, expected ({n},)"
                )
        for ptr, values in (("req_ptr", "req_ids"), ("cnt_ptr", "cnt_values")):
            p = getattr(self, ptr)
            if p.shape != (n + 1,) or p[0] != 0 or p[-1] != getattr(self, values).shape[0]:
                raise ValueError(f"{ptr} is not a CSR pointer over {values}")
            if n and np.any(np.diff(p) < 0):
                raise ValueError(f"{ptr} decreases")
        if n and np.any(np.diff(self.rank) < 0):
            raise ValueError("events are not sorted by rank")

    def requests(self, e: int) -> np.ndarray:
        """Request ids of event ``e``."""
        return self.req_ids[self.req_ptr[e] : self.req_ptr[e + 1]]

    def counts(self, e: int) -> np.ndarray:
        """Per-member byte counts of event ``e`` (alltoallv, reduce_scatter)."""
        return self.cnt_values[self.cnt_ptr[e] : self.cnt_ptr[e + 1]]

    def rank_bounds(self, num_ranks: int) -> np.ndarray:
        """``bounds[r]:bounds[r+1]`` are the rows of rank ``r``."""
        counts = np.bincount(self.rank, minlength=num_ranks)
        return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)

    @staticmethod
    def from_parts(parts: Sequence[dict[str, np.ndarray]]) -> Events:
        """Events from per-rank column dicts (in rank order), the way readers build them.

        Each part holds the event columns plus ``req_count``/``req_ids`` (requests per row and
        their ids, concatenated) and ``cnt_count``/``cnt_values`` (likewise for byte counts).
        """
        if not parts:
            return Events.from_columns(rank=np.zeros(0, np.int32))
        cols = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
        req_ptr = np.concatenate(([0], np.cumsum(cols.pop("req_count")))).astype(np.int64)
        cnt_ptr = np.concatenate(([0], np.cumsum(cols.pop("cnt_count")))).astype(np.int64)
        return Events.from_columns(req_ptr=req_ptr, cnt_ptr=cnt_ptr, **cols)


@dataclass(frozen=True)
class Communicator:
    """A communicator of the trace: ``members[i]`` is the world rank of communicator rank ``i``."""

    name: str
    members: tuple[int, ...] | None

    @property
    def size(self) -> int | None:
        return None if self.members is None else len(self.members)


class Diagnostics:
    """What a reader or the builder absorbed, dropped or guessed, aggregated for a summary.

    ``absorb(call, where)`` counts a call whose time goes into the surrounding calc;
    ``note(reason, where)`` counts a problem that is never an error (e.g. a sub-communicator
    without membership); ``problem(reason, where)`` is an error in strict mode and a counted
    note in lenient mode; ``expect(calls)`` declares more calls pure computation for this trace
    (e.g. communicator constructors whose membership the trace records). Summary lines name the
    count and the first place seen.
    """

    #: Calls that are modelled as computation by design: absorbed without a warning.
    EXPECTED = frozenset(
        {
            "MPI_Comm_rank",
            "MPI_Comm_size",
            "MPI_Test",
            "MPI_Testall",
            "MPI_Testany",
            "MPI_Testsome",
            "MPI_Waitany",
            "MPI_Waitsome",
            "MPI_Iprobe",
            "MPI_Wtime",
            "MPI_Wtick",
            "MPI_Initialized",
            "MPI_Finalized",
            "MPI_Get_count",
            "MPI_Get_processor_name",
            "MPI_Type_size",
            "MPI_Type_extent",
            "MPI_Comm_group",
            "MPI_Group_size",
            "MPI_Group_rank",
        }
    )

    def __init__(self, lenient: bool = False):
        self.lenient = lenient
        self.absorbed: dict[str, list[Any]] = {}
        self.notes: dict[str, list[Any]] = {}
        self.problems: dict[str, list[Any]] = {}
        self.expected: set[str] = set(self.EXPECTED)

    def expect(self, calls: Iterable[str]) -> None:
        """Absorb ``calls`` without a warning from now on (they are accounted for otherwise)."""
        self.expected.update(calls)

    def absorb(self, call: str, where: str, count: int = 1) -> None:
        entry = self.absorbed.setdefault(call, [0, where])
        entry[0] += count

    def note(self, reason: str, where: str | None, count: int = 1) -> None:
        entry = self.notes.setdefault(reason, [0, where])
        entry[0] += count

    def problem(self, reason: str, path: str | None, line: int | None, count: int = 1) -> None:
        """Raise :class:`TraceError` (strict) or record ``reason`` (lenient)."""
        if not self.lenient:
            raise TraceError(reason, path=path, line=line)
        where = None if path is None else (f"{path}:{line}" if line is not None else path)
        entry = self.problems.setdefault(reason, [0, where])
        entry[0] += count

    def summary(self) -> list[str]:
        """Human lines: absorbed calls not expected, notes, lenient problems."""
        lines = []
        unexpected = {k: v for k, v in self.absorbed.items() if k not in self.expected}
        if unexpected:
            parts = ", ".join(f"{name} ×{c}" for name, (c, _) in sorted(unexpected.items()))
            first = min((w for _, w in unexpected.values()), key=str)
            lines.append(f"calls not modelled, absorbed into calc: {parts} (e.g. {first})")
        for reason, (count, where) in self.notes.items():
            lines.append(f"{reason}: {count}×" + (f" (first at {where})" if where else ""))
        for reason, (count, where) in self.problems.items():
            lines.append(f"lenient: {reason}: {count}×" + (f" (first at {where})" if where else ""))
        return lines

    def merge(self, other: Diagnostics) -> None:
        self.expected.update(other.expected)
        for mine, theirs in (
            (self.absorbed, other.absorbed),
            (self.notes, other.notes),
            (self.problems, other.problems),
        ):
            for key, (count, where) in theirs.items():
                entry = mine.setdefault(key, [0, where])
                entry[0] += count

    def emit(self) -> list[str]:
        """The summary, also issued as one :class:`IngestWarning` when not empty."""
        lines = self.summary()
        if lines:
            warnings.warn(IngestWarning("; ".join(lines)), stacklevel=3)
        return lines


@dataclass(frozen=True, eq=False)
class Trace:
    """One traced run: events of all ranks plus what is needed to interpret them."""

    num_ranks: int
    events: Events
    calls: tuple[str, ...]
    comms: tuple[Communicator, ...]
    files: tuple[str, ...]
    format: str
    clock_offset_ns: np.ndarray
    clock_scale: np.ndarray
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    meta: dict[str, Any] = field(default_factory=dict)

    def where(self, e: int) -> tuple[str, int]:
        """(file, line) of event ``e`` for error messages."""
        return self.files[int(self.events.rank[e])], int(self.events.line[e])

    def describe(self, e: int) -> str:
        """``pmpi-trace-rank-1.txt:17: MPI_Send`` for messages."""
        path, line = self.where(e)
        return f"{path}:{line}: {self.calls[int(self.events.call[e])]}"

    def aligned_ns(self, e: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Times ``t`` (rank-local ns) of events ``e`` on the common clock."""
        r = self.events.rank[e]
        return self.clock_offset_ns[r] + self.clock_scale[r] * t


#: MPI function names (MPI-3.1 C bindings plus common MPI-4 additions): a traced call that is
#: neither modelled nor in this set is an *unknown call* (an error unless lenient).
MPI_FUNCTIONS = frozenset(
    """
MPI_Abort MPI_Accumulate MPI_Add_error_class MPI_Add_error_code MPI_Add_error_string MPI_Address
MPI_Aint_add MPI_Aint_diff MPI_Allgather MPI_Allgatherv MPI_Alloc_mem MPI_Allreduce MPI_Alltoall
MPI_Alltoallv MPI_Alltoallw MPI_Attr_delete MPI_Attr_get MPI_Attr_put MPI_Barrier MPI_Bcast
MPI_Bsend MPI_Bsend_init MPI_Buffer_attach MPI_Buffer_detach MPI_Cancel MPI_Cart_coords
MPI_Cart_create MPI_Cart_get MPI_Cart_map MPI_Cart_rank MPI_Cart_shift MPI_Cart_sub MPI_Cartdim_get
MPI_Close_port MPI_Comm_accept MPI_Comm_call_errhandler MPI_Comm_compare MPI_Comm_connect
MPI_Comm_create MPI_Comm_create_errhandler MPI_Comm_create_group MPI_Comm_create_keyval
MPI_Comm_delete_attr MPI_Comm_disconnect MPI_Comm_dup MPI_Comm_dup_with_info MPI_Comm_free
MPI_Comm_free_keyval MPI_Comm_get_attr MPI_Comm_get_errhandler MPI_Comm_get_info MPI_Comm_get_name
MPI_Comm_get_parent MPI_Comm_group MPI_Comm_idup MPI_Comm_join MPI_Comm_rank MPI_Comm_remote_group
MPI_Comm_remote_size MPI_Comm_set_attr MPI_Comm_set_errhandler MPI_Comm_set_info MPI_Comm_set_name
MPI_Comm_size MPI_Comm_spawn MPI_Comm_spawn_multiple MPI_Comm_split MPI_Comm_split_type
MPI_Comm_test_inter MPI_Compare_and_swap MPI_Dims_create MPI_Dist_graph_create
MPI_Dist_graph_create_adjacent MPI_Dist_graph_neighbors MPI_Dist_graph_neighbors_count
MPI_Errhandler_create MPI_Errhandler_free MPI_Errhandler_get MPI_Errhandler_set MPI_Error_class
MPI_Error_string MPI_Exscan MPI_Fetch_and_op MPI_File_c2f MPI_File_call_errhandler MPI_File_close
MPI_File_create_errhandler MPI_File_delete MPI_File_f2c MPI_File_get_amode MPI_File_get_atomicity
MPI_File_get_byte_offset MPI_File_get_errhandler MPI_File_get_group MPI_File_get_info
MPI_File_get_position MPI_File_get_position_shared MPI_File_get_size MPI_File_get_type_extent
MPI_File_get_view MPI_File_iread MPI_File_iread_all MPI_File_iread_at MPI_File_iread_at_all
MPI_File_iread_shared MPI_File_iwrite MPI_File_iwrite_all MPI_File_iwrite_at MPI_File_iwrite_at_all
MPI_File_iwrite_shared MPI_File_open MPI_File_preallocate MPI_File_read MPI_File_read_all
MPI_File_read_all_begin MPI_File_read_all_end MPI_File_read_at MPI_File_read_at_all
MPI_File_read_at_all_begin MPI_File_read_at_all_end MPI_File_read_ordered MPI_File_read_ordered_begin
MPI_File_read_ordered_end MPI_File_read_shared MPI_File_seek MPI_File_seek_shared
MPI_File_set_atomicity MPI_File_set_errhandler MPI_File_set_info MPI_File_set_size MPI_File_set_view
MPI_File_sync MPI_File_write MPI_File_write_all MPI_File_write_all_begin MPI_File_write_all_end
MPI_File_write_at MPI_File_write_at_all MPI_File_write_at_all_begin MPI_File_write_at_all_end
MPI_File_write_ordered MPI_File_write_ordered_begin MPI_File_write_ordered_end MPI_File_write_shared
MPI_Finalize MPI_Finalized MPI_Free_mem MPI_Gather MPI_Gatherv MPI_Get MPI_Get_accumulate
MPI_Get_address MPI_Get_count MPI_Get_elements MPI_Get_elements_x MPI_Get_library_version
MPI_Get_processor_name MPI_Get_version MPI_Graph_create MPI_Graph_get MPI_Graph_map
MPI_Graph_neighbors MPI_Graph_neighbors_count MPI_Graphdims_get MPI_Grequest_complete
MPI_Grequest_start MPI_Group_compare MPI_Group_difference MPI_Group_excl MPI_Group_free
MPI_Group_incl MPI_Group_intersection MPI_Group_range_excl MPI_Group_range_incl MPI_Group_rank
MPI_Group_size MPI_Group_translate_ranks MPI_Group_union MPI_Iallgather MPI_Iallgatherv
MPI_Iallreduce MPI_Ialltoall MPI_Ialltoallv MPI_Ialltoallw MPI_Ibarrier MPI_Ibcast MPI_Ibsend
MPI_Iexscan MPI_Igather MPI_Igatherv MPI_Improbe MPI_Imrecv MPI_Ineighbor_allgather
MPI_Ineighbor_allgatherv MPI_Ineighbor_alltoall MPI_Ineighbor_alltoallv MPI_Ineighbor_alltoallw
MPI_Info_create MPI_Info_delete MPI_Info_dup MPI_Info_free MPI_Info_get MPI_Info_get_nkeys
MPI_Info_get_nthkey MPI_Info_get_valuelen MPI_Info_set MPI_Init MPI_Init_thread MPI_Initialized
MPI_Intercomm_create MPI_Intercomm_merge MPI_Iprobe MPI_Irecv MPI_Ireduce MPI_Ireduce_scatter
MPI_Ireduce_scatter_block MPI_Irsend MPI_Is_thread_main MPI_Iscan MPI_Iscatter MPI_Iscatterv
MPI_Isend MPI_Issend MPI_Keyval_create MPI_Keyval_free MPI_Lookup_name MPI_Mprobe MPI_Mrecv
MPI_Neighbor_allgather MPI_Neighbor_allgatherv MPI_Neighbor_alltoall MPI_Neighbor_alltoallv
MPI_Neighbor_alltoallw MPI_Op_commutative MPI_Op_create MPI_Op_free MPI_Open_port MPI_Pack
MPI_Pack_external MPI_Pack_external_size MPI_Pack_size MPI_Pcontrol MPI_Probe MPI_Publish_name
MPI_Put MPI_Query_thread MPI_Raccumulate MPI_Recv MPI_Recv_init MPI_Reduce MPI_Reduce_local
MPI_Reduce_scatter MPI_Reduce_scatter_block MPI_Register_datarep MPI_Request_free
MPI_Request_get_status MPI_Rget MPI_Rget_accumulate MPI_Rput MPI_Rsend MPI_Rsend_init MPI_Scan
MPI_Scatter MPI_Scatterv MPI_Send MPI_Send_init MPI_Sendrecv MPI_Sendrecv_replace MPI_Ssend
MPI_Ssend_init MPI_Start MPI_Startall MPI_Status_set_cancelled MPI_Status_set_elements
MPI_Status_set_elements_x MPI_Test MPI_Test_cancelled MPI_Testall MPI_Testany MPI_Testsome
MPI_Topo_test MPI_Type_commit MPI_Type_contiguous MPI_Type_create_darray MPI_Type_create_f90_complex
MPI_Type_create_f90_integer MPI_Type_create_f90_real MPI_Type_create_hindexed
MPI_Type_create_hindexed_block MPI_Type_create_hvector MPI_Type_create_indexed_block
MPI_Type_create_keyval MPI_Type_create_resized MPI_Type_create_struct MPI_Type_create_subarray
MPI_Type_delete_attr MPI_Type_dup MPI_Type_extent MPI_Type_free MPI_Type_free_keyval
MPI_Type_get_attr MPI_Type_get_contents MPI_Type_get_envelope MPI_Type_get_extent
MPI_Type_get_extent_x MPI_Type_get_name MPI_Type_get_true_extent MPI_Type_get_true_extent_x
MPI_Type_hindexed MPI_Type_hvector MPI_Type_indexed MPI_Type_lb MPI_Type_match_size
MPI_Type_set_attr MPI_Type_set_name MPI_Type_size MPI_Type_size_x MPI_Type_struct MPI_Type_ub
MPI_Type_vector MPI_Unpack MPI_Unpack_external MPI_Unpublish_name MPI_Wait MPI_Waitall
MPI_Waitany MPI_Waitsome MPI_Win_allocate MPI_Win_allocate_shared MPI_Win_attach
MPI_Win_call_errhandler MPI_Win_complete MPI_Win_create MPI_Win_create_dynamic
MPI_Win_create_errhandler MPI_Win_create_keyval MPI_Win_delete_attr MPI_Win_detach MPI_Win_fence
MPI_Win_flush MPI_Win_flush_all MPI_Win_flush_local MPI_Win_flush_local_all MPI_Win_free
MPI_Win_free_keyval MPI_Win_get_attr MPI_Win_get_errhandler MPI_Win_get_group MPI_Win_get_info
MPI_Win_get_name MPI_Win_lock MPI_Win_lock_all MPI_Win_post MPI_Win_set_attr
MPI_Win_set_errhandler MPI_Win_set_info MPI_Win_set_name MPI_Win_shared_query MPI_Win_start
MPI_Win_sync MPI_Win_test MPI_Win_unlock MPI_Win_unlock_all MPI_Win_wait MPI_Wtick MPI_Wtime
MPI_Comm_c2f MPI_Comm_f2c MPI_Type_c2f MPI_Type_f2c MPI_Op_c2f MPI_Op_f2c MPI_Request_c2f
MPI_Request_f2c MPI_Group_c2f MPI_Group_f2c MPI_Info_c2f MPI_Info_f2c MPI_Win_c2f MPI_Win_f2c
MPI_Errhandler_c2f MPI_Errhandler_f2c MPI_Status_c2f MPI_Status_f2c MPI_Session_init
MPI_Session_finalize MPI_Comm_create_from_group MPI_Group_from_session_pset MPI_Psend_init
MPI_Precv_init MPI_Pready MPI_Parrived MPI_Isendrecv MPI_Isendrecv_replace
""".split()
)

#: MPI-4 persistent collectives: known MPI functions that no reader models yet.
PERSISTENT_COLLECTIVES = frozenset(
    f"MPI_{name}_init"
    for name in """Barrier Bcast Reduce Allreduce Allgather Allgatherv Alltoall Alltoallv
    Alltoallw Gather Gatherv Scatter Scatterv Reduce_scatter Reduce_scatter_block Scan Exscan
    Neighbor_allgather Neighbor_allgatherv Neighbor_alltoall Neighbor_alltoallv
    Neighbor_alltoallw""".split()
)
MPI_FUNCTIONS = MPI_FUNCTIONS | PERSISTENT_COLLECTIVES
