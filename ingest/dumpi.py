"""Reader for DUMPI binary traces (SST's MPI tracer) → :class:`~llamp.ingest.events.Trace`.

A DUMPI trace is ``<prefix>.meta`` (``key=value`` lines, ``numprocs``, ``fileprefix``) plus one
``<prefix>-NNNN.bin`` per rank (``NNNN`` zero-padded to 4 digits). ``read_dumpi`` accepts the
``.meta`` file, any ``.bin`` of the set, or their folder.

Binary layout (sst-dumpi ``common/io.c``, ``iodefs.h``, ``dumpiio.c``; all integers big-endian):
the file starts with the magic ``ff aa dd 'D' 'U' 'M' 'P' 'I'``, then the body: two ``u32`` time
offsets (CPU, wall seconds), then one record per call until the label ``DUMPI_END_OF_STREAM``
(293). A record is ``u16`` function id (:data:`FUNCTIONS`), ``u8`` mask, ``u16`` thread (mask bit
6), CPU times (bit 2) and wall times (bit 3) each as start/stop ``u16`` seconds (+ the offset)
and ``u32`` ns, PAPI counters (bit 7: ``u8`` n, n × 16 bytes), then the call's arguments in
:data:`LAYOUTS` order; statuses are present when mask bits 0–1 are set (``u32`` n, n × 10 bytes,
14 from DUMPI 0.6.3 on, when the tag was added). The file ends with an index of ``u64`` offsets
(magic, datatype sizes, addresses, PAPI labels, header, body, footer, keyvals); the datatype size
table gives the bytes of each predefined datatype id.

Records are walked by a compiled scanner (numba) driven by :data:`LAYOUTS`, one argument code
per field (see ``_CODES``); a function whose layout is not in the table cannot be skipped safely
(records carry no length), so it is an error naming the record's byte offset and function id.
Every decoded call that the model does not use (``Comm_rank``, ``Type_commit``, ``Wtime``, …)
is absorbed into the surrounding calc; unknown-to-MPI ones (PAPI or I/O wrappers) with a warning.

Mapping: ``Send/Bsend/Ssend/Rsend`` SEND, ``Recv`` RECV, the I-variants ISEND/IRECV, ``*_init``
/``Start``/``Startall``/``Request_free`` persistent requests, ``Sendrecv(_replace)`` SR pairs,
``Wait``/``Waitall`` WAIT; unlike a PMPI text trace DUMPI records what completed, so a successful
``Test``/``Testall`` (flag) and the completed entries of ``Waitany``/``Testany`` (index) and
``Waitsome``/``Testsome`` (indices) are WAIT rows too. Collectives: ``Barrier Bcast Reduce
Allreduce Scan Exscan`` (as scan) ``Gather(v) Scatter(v) Allgather(v) Alltoall(v)
Reduce_scatter``; sizes are ``count × datatype size`` in bytes (user datatypes from
``Type_contiguous/vector/hvector/indexed/hindexed/struct/dup``). ``Alltoallw`` is absorbed with a
warning. Sources ``-1`` are ``MPI_ANY_SOURCE``, tags ``-1`` ``MPI_ANY_TAG`` (DUMPI's constants);
other negative peers are ``MPI_PROC_NULL``.

Communicators: handle 2 is ``MPI_COMM_WORLD``, 3 ``MPI_COMM_SELF``; ``Comm_dup`` and
``Cart_create`` (rank order kept) copy their parent's members, ``Comm_split`` groups the parent's
members by color and orders them by (key, parent rank), matched across ranks as the k-th
communicator created from the same parent; other constructors (``Comm_create``, ``Cart_sub``,
intercommunicators) give communicators of unknown membership, whose calls the builder absorbs
with a warning. Handles are rank-local and may be reused after ``Comm_free``.

Times are the wall clock in ns (CPU time when a trace has no wall time); rank ``r``'s origin is
the end of ``MPI_Init``, and :attr:`Trace.clock_offset_ns` places the ranks on the common wall
clock (per-node clocks are not corrected). ``Trace.where`` gives ``(file, record number)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from llamp.errors import InputError, TraceError
from llamp.ingest import confine
from llamp.ingest.events import (
    ANY_SOURCE,
    ANY_TAG,
    COLL,
    COLL_CODE,
    FINALIZE,
    INIT,
    IRECV,
    ISEND,
    PROC_NULL,
    RECV,
    RECV_INIT,
    REQUEST_FREE,
    SEND,
    SEND_INIT,
    SR_RECV,
    SR_SEND,
    START,
    WAIT,
    Communicator,
    Diagnostics,
    Events,
    Trace,
)
from llamp.kernel import kernel

__all__ = ["FUNCTIONS", "LAYOUTS", "MAGIC", "find_rank_files", "is_dumpi", "read_dumpi"]

MAGIC = b"\xff\xaa\xddDUMPI"

#: DUMPI function ids (``dumpi_function`` enum): ``FUNCTIONS[id]`` is the MPI name.
FUNCTIONS: tuple[str, ...] = tuple(
    ("MPI_" + n if not n.startswith("IO_") else "MPIO_" + n[3:])
    for n in """Send Recv Get_count Bsend Ssend Rsend Buffer_attach Buffer_detach Isend Ibsend
    Issend Irsend Irecv Wait Test Request_free Waitany Testany Waitall Testall Waitsome Testsome
    Iprobe Probe Cancel Test_cancelled Send_init Bsend_init Ssend_init Rsend_init Recv_init Start
    Startall Sendrecv Sendrecv_replace Type_contiguous Type_vector Type_hvector Type_indexed
    Type_hindexed Type_struct Address Type_extent Type_size Type_lb Type_ub Type_commit Type_free
    Get_elements Pack Unpack Pack_size Barrier Bcast Gather Gatherv Scatter Scatterv Allgather
    Allgatherv Alltoall Alltoallv Reduce Op_create Op_free Allreduce Reduce_scatter Scan Group_size
    Group_rank Group_translate_ranks Group_compare Comm_group Group_union Group_intersection
    Group_difference Group_incl Group_excl Group_range_incl Group_range_excl Group_free Comm_size
    Comm_rank Comm_compare Comm_dup Comm_create Comm_split Comm_free Comm_test_inter
    Comm_remote_size Comm_remote_group Intercomm_create Intercomm_merge Keyval_create Keyval_free
    Attr_put Attr_get Attr_delete Topo_test Cart_create Dims_create Graph_create Graphdims_get
    Graph_get Cartdim_get Cart_get Cart_rank Cart_coords Graph_neighbors_count Graph_neighbors
    Cart_shift Cart_sub Cart_map Graph_map Get_processor_name Get_version Errhandler_create
    Errhandler_set Errhandler_get Errhandler_free Error_string Error_class Wtime Wtick Init
    Finalize Initialized Abort Pcontrol Close_port Comm_accept Comm_connect Comm_disconnect
    Comm_get_parent Comm_join Comm_spawn Comm_spawn_multiple Lookup_name Open_port Publish_name
    Unpublish_name Accumulate Get Put Win_complete Win_create Win_fence Win_free Win_get_group
    Win_lock Win_post Win_start Win_test Win_unlock Win_wait Alltoallw Exscan Add_error_class
    Add_error_code Add_error_string Comm_call_errhandler Comm_create_keyval Comm_delete_attr
    Comm_free_keyval Comm_get_attr Comm_get_name Comm_set_attr Comm_set_name File_call_errhandler
    Grequest_complete Grequest_start Init_thread Is_thread_main Query_thread Status_set_cancelled
    Status_set_elements Type_create_keyval Type_delete_attr Type_dup Type_free_keyval
    Type_get_attr Type_get_contents Type_get_envelope Type_get_name Type_set_attr Type_set_name
    Type_match_size Win_call_errhandler Win_create_keyval Win_delete_attr Win_free_keyval
    Win_get_attr Win_get_name Win_set_attr Win_set_name Alloc_mem Comm_create_errhandler
    Comm_get_errhandler Comm_set_errhandler File_create_errhandler File_get_errhandler
    File_set_errhandler Finalized Free_mem Get_address Info_create Info_delete Info_dup Info_free
    Info_get Info_get_nkeys Info_get_nthkey Info_get_valuelen Info_set Pack_external
    Pack_external_size Request_get_status Type_create_darray Type_create_hindexed
    Type_create_hvector Type_create_indexed_block Type_create_resized Type_create_struct
    Type_create_subarray Type_get_extent Type_get_true_extent Unpack_external
    Win_create_errhandler Win_get_errhandler Win_set_errhandler File_open File_close File_delete
    File_set_size File_preallocate File_get_size File_get_group File_get_amode File_set_info
    File_get_info File_set_view File_get_view File_read_at File_read_at_all File_write_at
    File_write_at_all File_iread_at File_iwrite_at File_read File_read_all File_write
    File_write_all File_iread File_iwrite File_seek File_get_position File_get_byte_offset
    File_read_shared File_write_shared File_iread_shared File_iwrite_shared File_read_ordered
    File_write_ordered File_seek_shared File_get_position_shared File_read_at_all_begin
    File_read_at_all_end File_write_at_all_begin File_write_at_all_end File_read_all_begin
    File_read_all_end File_write_all_begin File_write_all_end File_read_ordered_begin
    File_read_ordered_end File_write_ordered_begin File_write_ordered_end File_get_type_extent
    Register_datarep File_set_atomicity File_get_atomicity File_sync IO_Test IO_Wait IO_Testall
    IO_Waitall IO_Testany IO_Waitany IO_Waitsome IO_Testsome""".split()
) + ("DUMPI_ALL_FUNCTIONS", "DUMPI_Function_enter", "DUMPI_Function_exit")
_FID = {name: i for i, name in enumerate(FUNCTIONS)}
_END_OF_STREAM = len(FUNCTIONS)  # 293

#: Argument layout of each decodable function (``dumpiio.c`` read order), one code per field:
#: ``I`` int32, ``H`` 16-bit handle (comm, datatype, group, …), ``B`` 8-bit (op, …), ``Q`` int64,
#: ``A`` int32 array, ``D`` 16-bit array, ``S`` status(es), ``C`` string, ``X`` string array,
#: ``Y`` array of int32 arrays, ``V`` Init's argv (an extra ``u32`` before DUMPI 0.6.2),
#: ``T``/``U`` an array from 0.6.9/0.6.8 on and a single int32 before (Type_struct, Cart_get),
#: ``[…]`` fields present only at the root (the first and the root field are equal).
LAYOUTS: dict[str, str] = {
    "MPI_Send": "IHIIH", "MPI_Recv": "IHIIHS", "MPI_Get_count": "SHI", "MPI_Bsend": "IHIIH",
    "MPI_Ssend": "IHIIH", "MPI_Rsend": "IHIIH", "MPI_Buffer_attach": "I",
    "MPI_Buffer_detach": "I", "MPI_Isend": "IHIIHI", "MPI_Ibsend": "IHIIHI",
    "MPI_Issend": "IHIIHI", "MPI_Irsend": "IHIIHI", "MPI_Irecv": "IHIIHI", "MPI_Wait": "IS",
    "MPI_Test": "IIS", "MPI_Request_free": "I", "MPI_Waitany": "IAIS", "MPI_Testany": "IAIIS",
    "MPI_Waitall": "IAS", "MPI_Testall": "IAIS", "MPI_Waitsome": "IAIAS",
    "MPI_Testsome": "IAIAS", "MPI_Iprobe": "IIHIS", "MPI_Probe": "IIHS", "MPI_Cancel": "I",
    "MPI_Test_cancelled": "SI", "MPI_Send_init": "IHIIHI", "MPI_Bsend_init": "IHIIHI",
    "MPI_Ssend_init": "IHIIHI", "MPI_Rsend_init": "IHIIHI", "MPI_Recv_init": "IHIIHI",
    "MPI_Start": "I", "MPI_Startall": "IA", "MPI_Sendrecv": "IHIIIHIIHS",
    "MPI_Sendrecv_replace": "IHIIIIHS", "MPI_Type_contiguous": "IHH",
    "MPI_Type_vector": "IIIHH", "MPI_Type_hvector": "IIIHH", "MPI_Type_indexed": "IAAHH",
    "MPI_Type_hindexed": "IAAHH", "MPI_Type_struct": "IATDH", "MPI_Address": "I",
    "MPI_Type_extent": "HI", "MPI_Type_size": "HI", "MPI_Type_lb": "HI", "MPI_Type_ub": "HI",
    "MPI_Type_commit": "H", "MPI_Type_free": "H", "MPI_Get_elements": "SHI",
    "MPI_Pack": "IHIIIH", "MPI_Unpack": "IIIIHH", "MPI_Pack_size": "IHHI", "MPI_Barrier": "H",
    "MPI_Bcast": "IHIH", "MPI_Gather": "IIHIH[IH]", "MPI_Gatherv": "IIIHIH[AA]H",
    "MPI_Scatter": "IIHIH[IH]", "MPI_Scatterv": "IIHIHIH[AA]", "MPI_Allgather": "IHIHH",
    "MPI_Allgatherv": "IIHAAHH", "MPI_Alltoall": "IHIHH", "MPI_Alltoallv": "IAAHAAHH",
    "MPI_Reduce": "IHBIH", "MPI_Op_create": "IB", "MPI_Op_free": "B", "MPI_Allreduce": "IHBH",
    "MPI_Reduce_scatter": "IAHBH", "MPI_Scan": "IHBH", "MPI_Group_size": "HI",
    "MPI_Group_rank": "HI", "MPI_Group_translate_ranks": "HIAHA", "MPI_Group_compare": "HHB",
    "MPI_Comm_group": "HH", "MPI_Group_union": "HHH", "MPI_Group_intersection": "HHH",
    "MPI_Group_difference": "HHH", "MPI_Group_incl": "HIAH", "MPI_Group_excl": "HIAH",
    "MPI_Group_range_incl": "HIYH", "MPI_Group_range_excl": "HIYH", "MPI_Group_free": "H",
    "MPI_Comm_size": "HI", "MPI_Comm_rank": "HI", "MPI_Comm_compare": "HHB",
    "MPI_Comm_dup": "HH", "MPI_Comm_create": "HHH", "MPI_Comm_split": "HIIH",
    "MPI_Comm_free": "H", "MPI_Comm_test_inter": "HI", "MPI_Comm_remote_size": "HI",
    "MPI_Comm_remote_group": "HH", "MPI_Intercomm_create": "HIHIIH",
    "MPI_Intercomm_merge": "HIH", "MPI_Keyval_create": "H", "MPI_Keyval_free": "H",
    "MPI_Attr_put": "HI", "MPI_Attr_get": "HII", "MPI_Attr_delete": "HI", "MPI_Topo_test": "HB",
    "MPI_Cart_create": "HIAAIH", "MPI_Dims_create": "IIAA", "MPI_Graph_create": "IHIAAIH",
    "MPI_Graphdims_get": "HII", "MPI_Graph_get": "IIHIIAA", "MPI_Cartdim_get": "HI",
    "MPI_Cart_get": "IHIAAU", "MPI_Cart_rank": "IHAI", "MPI_Cart_coords": "IHIIA",
    "MPI_Graph_neighbors_count": "HII", "MPI_Graph_neighbors": "IHIIA",
    "MPI_Cart_shift": "HIIII", "MPI_Cart_sub": "IHAH", "MPI_Cart_map": "HIAAI",
    "MPI_Graph_map": "IHIAAI", "MPI_Get_processor_name": "CI", "MPI_Get_version": "II",
    "MPI_Errhandler_create": "H", "MPI_Errhandler_set": "HH", "MPI_Errhandler_get": "HH",
    "MPI_Errhandler_free": "H", "MPI_Error_string": "ICI", "MPI_Error_class": "II",
    "MPI_Wtime": "", "MPI_Wtick": "", "MPI_Init": "V", "MPI_Finalize": "",
    "MPI_Initialized": "I", "MPI_Abort": "HI", "MPI_Close_port": "C",
    "MPI_Comm_accept": "CHIHH", "MPI_Comm_connect": "CHIHH", "MPI_Comm_disconnect": "H",
    "MPI_Comm_get_parent": "H", "MPI_Comm_join": "IH", "MPI_Lookup_name": "CHC",
    "MPI_Open_port": "HC", "MPI_Publish_name": "CHC", "MPI_Unpublish_name": "CHC",
    "MPI_Accumulate": "IHIIIHBH", "MPI_Get": "IHIIIHH", "MPI_Put": "IHIIIHH",
    "MPI_Win_complete": "H", "MPI_Win_create": "IIHHH", "MPI_Win_fence": "BH",
    "MPI_Win_free": "H", "MPI_Win_get_group": "HH", "MPI_Win_lock": "BIBH",
    "MPI_Win_post": "HBH", "MPI_Win_start": "HBH", "MPI_Win_test": "HI", "MPI_Win_unlock": "IH",
    "MPI_Win_wait": "H", "MPI_Alltoallw": "IAADAADH", "MPI_Exscan": "IHBH",
    "MPI_Add_error_class": "I", "MPI_Add_error_code": "II", "MPI_Add_error_string": "IC",
    "MPI_Comm_call_errhandler": "HI", "MPI_Comm_create_keyval": "H",
    "MPI_Comm_delete_attr": "HH", "MPI_Comm_free_keyval": "H", "MPI_Comm_get_attr": "HHI",
    "MPI_Comm_get_name": "HCI", "MPI_Comm_set_attr": "HH", "MPI_Comm_set_name": "HC",
    "MPI_File_call_errhandler": "HI", "MPI_Grequest_complete": "I",
    "MPI_Grequest_start": "I", "MPI_Init_thread": "XBB", "MPI_Is_thread_main": "I",
    "MPI_Query_thread": "B", "MPI_Status_set_cancelled": "SI",
    "MPI_Status_set_elements": "SHI", "MPI_Type_create_keyval": "H",
    "MPI_Type_delete_attr": "HH", "MPI_Type_dup": "HH", "MPI_Type_free_keyval": "H",
    "MPI_Type_get_attr": "HHI", "MPI_Type_get_contents": "IIIHIIIAAD",
    "DUMPI_Function_enter": "Q", "DUMPI_Function_exit": "Q",
}  # fmt: skip

#: Fields compared to decide a ``[…]`` block: the caller's comm rank and the root.
_ROOT_FIELDS = {
    "MPI_Gather": (0, 3), "MPI_Gatherv": (0, 4), "MPI_Scatter": (0, 3), "MPI_Scatterv": (0, 5),
}  # fmt: skip

_CODES = "IHBQADSCXYVTU[]"
_MAX_OPS = 12
_MAX_SCALARS = 12
_MAX_ARRAYS = 6


def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(FUNCTIONS)
    ops = np.zeros((n, _MAX_OPS), np.uint8)
    nops = np.full(n, -1, np.int64)
    cond = np.zeros((n, 2), np.int64)
    for name, layout in LAYOUTS.items():
        fid = _FID[name]
        nops[fid] = len(layout)
        for k, code in enumerate(layout):
            ops[fid, k] = _CODES.index(code) + 1
        cond[fid] = _ROOT_FIELDS.get(name, (0, 0))
    return ops, nops, cond


_OPS, _NOPS, _COND = _tables()


# --------------------------------------------------------------------------- scanner
@kernel(nogil=True)
def _scan(buf, pos, end, ops, nops, cond, flags, cap, pool_cap):  # pragma: no cover - compiled
    """Walk the records in ``buf[pos:end]``.

    ``flags``: (extra argc word, status tag, Type_struct array, Cart_get array, end label).
    Returns (status, nrec, where, fid_bad, rec_off, rec_fid, rec_mask, times, scal, arr, pool,
    npool): status 0 = end label reached, 1 = unknown layout at ``where``, 2 = record cut off at
    the end (starting at ``where``), 3 = records fill ``cap`` (caller retries larger), 4 = end of
    data without the end label, 5 = pool full.
    """
    rec_off = np.empty(cap, np.int64)
    rec_fid = np.empty(cap, np.int32)
    rec_mask = np.empty(cap, np.uint8)
    times = np.full((cap, 4), -1, np.int64)  # cpu start, cpu stop, wall start, wall stop (ns)
    scal = np.zeros((cap, 12), np.int64)
    arr = np.full((cap, 6, 2), -1, np.int64)  # (start in pool, length)
    pool = np.empty(pool_cap, np.int64)
    npool = 0
    nrec = 0
    end_label = flags[4]
    while True:
        if pos + 2 > end:
            return 4, nrec, pos, -1, rec_off, rec_fid, rec_mask, times, scal, arr, pool, npool
        fid = (np.int64(buf[pos]) << 8) | np.int64(buf[pos + 1])
        if fid == end_label:
            return 0, nrec, pos, -1, rec_off, rec_fid, rec_mask, times, scal, arr, pool, npool
        if fid > end_label or nops[fid] < 0:
            return 1, nrec, pos, fid, rec_off, rec_fid, rec_mask, times, scal, arr, pool, npool
        if nrec >= cap:
            return 3, nrec, pos, -1, rec_off, rec_fid, rec_mask, times, scal, arr, pool, npool
        start = pos
        pos += 2
        if pos + 1 > end:
            return 2, nrec, start, fid, rec_off, rec_fid, rec_mask, times, scal, arr, pool, npool
        mask = buf[pos]
        pos += 1
        if mask & 64:
            pos += 2
        for slot in range(2):
            if mask & (4 << slot):
                if pos + 12 > end:
                    return (
                        2,
                        nrec,
                        start,
                        fid,
                        rec_off,
                        rec_fid,
                        rec_mask,
                        times,
                        scal,
                        arr,
                        pool,
                        npool,
                    )
                for half in range(2):
                    p = pos + 6 * half
                    sec = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
                    nsec = (
                        (np.int64(buf[p + 2]) << 24)
                        | (np.int64(buf[p + 3]) << 16)
                        | (np.int64(buf[p + 4]) << 8)
                        | np.int64(buf[p + 5])
                    )
                    times[nrec, 2 * slot + half] = sec * 1000000000 + nsec
                pos += 12
        if mask & 128:
            if pos + 1 > end:
                return (
                    2,
                    nrec,
                    start,
                    fid,
                    rec_off,
                    rec_fid,
                    rec_mask,
                    times,
                    scal,
                    arr,
                    pool,
                    npool,
                )
            pos += 1 + 16 * np.int64(buf[pos])
        ns = 0
        na = 0
        skipping = False
        ok = True
        for k in range(nops[fid]):
            op = ops[fid, k]
            if op == 14:  # '['
                skipping = scal[nrec, cond[fid, 0]] != scal[nrec, cond[fid, 1]]
                continue
            if op == 15:  # ']'
                skipping = False
                continue
            if skipping:
                if op <= 4:
                    ns += 1
                elif op <= 6:
                    na += 1
                continue
            if op == 1 or op == 2 or op == 3 or op == 4:  # I H B Q
                width = 4 if op == 1 else (2 if op == 2 else (1 if op == 3 else 8))
                if pos + width > end:
                    ok = False
                    break
                v = np.int64(0)
                for b in range(width):
                    v = (v << 8) | np.int64(buf[pos + b])
                if op == 1 and v >= 2147483648:
                    v -= 4294967296
                scal[nrec, ns] = v
                ns += 1
                pos += width
            elif op == 5 or op == 6 or op == 12 or op == 13:  # A D T U
                if (op == 12 and flags[2] == 0) or (op == 13 and flags[3] == 0):
                    if pos + 4 > end:  # old layout: a single int32
                        ok = False
                        break
                    pos += 4
                    continue
                width = 2 if op == 6 else 4
                if pos + 4 > end:
                    ok = False
                    break
                n = (
                    (np.int64(buf[pos]) << 24)
                    | (np.int64(buf[pos + 1]) << 16)
                    | (np.int64(buf[pos + 2]) << 8)
                    | np.int64(buf[pos + 3])
                )
                pos += 4
                if pos + n * width > end:
                    ok = False
                    break
                if op == 5 or op == 6:
                    if npool + n > pool_cap:
                        return (
                            5,
                            nrec,
                            start,
                            fid,
                            rec_off,
                            rec_fid,
                            rec_mask,
                            times,
                            scal,
                            arr,
                            pool,
                            npool,
                        )
                    arr[nrec, na, 0] = npool
                    arr[nrec, na, 1] = n
                    for j in range(n):
                        v = np.int64(0)
                        for b in range(width):
                            v = (v << 8) | np.int64(buf[pos + j * width + b])
                        if width == 4 and v >= 2147483648:
                            v -= 4294967296
                        pool[npool + j] = v
                    npool += n
                    na += 1
                pos += n * width
            elif op == 7:  # S: statuses, present when mask & 3
                if mask & 3:
                    if pos + 4 > end:
                        ok = False
                        break
                    n = (
                        (np.int64(buf[pos]) << 24)
                        | (np.int64(buf[pos + 1]) << 16)
                        | (np.int64(buf[pos + 2]) << 8)
                        | np.int64(buf[pos + 3])
                    )
                    pos += 4 + n * (14 if flags[1] else 10)
            elif op == 8 or op == 9 or op == 10 or op == 11:  # C X Y V
                if pos + 4 > end:
                    ok = False
                    break
                n = (
                    (np.int64(buf[pos]) << 24)
                    | (np.int64(buf[pos + 1]) << 16)
                    | (np.int64(buf[pos + 2]) << 8)
                    | np.int64(buf[pos + 3])
                )
                pos += 4
                if op == 8:
                    pos += n
                    continue
                if op == 11 and flags[0]:
                    pos += 4  # DUMPI < 0.6.2 wrote argc twice
                for _ in range(n):
                    if pos + 4 > end:
                        ok = False
                        break
                    m = (
                        (np.int64(buf[pos]) << 24)
                        | (np.int64(buf[pos + 1]) << 16)
                        | (np.int64(buf[pos + 2]) << 8)
                        | np.int64(buf[pos + 3])
                    )
                    pos += 4 + (m * 4 if op == 10 else m)
                if not ok:
                    break
            if pos > end:
                ok = False
                break
        if not ok or pos > end:
            return 2, nrec, start, fid, rec_off, rec_fid, rec_mask, times, scal, arr, pool, npool
        rec_off[nrec] = start
        rec_fid[nrec] = fid
        rec_mask[nrec] = mask
        nrec += 1


@dataclass
class _Records:
    """The decoded records of one rank file (arrays trimmed to ``n``)."""

    path: str
    fid: np.ndarray
    offset: np.ndarray
    mask: np.ndarray
    times: np.ndarray
    scal: np.ndarray
    arr: np.ndarray
    pool: np.ndarray
    version: tuple[int, int, int]
    dtype_sizes: np.ndarray

    def array(self, e: int, k: int) -> np.ndarray:
        start, length = self.arr[e, k]
        if start < 0:
            return np.zeros(0, np.int64)
        return self.pool[start : start + length]


def _u64(buf: np.ndarray, at: int) -> int:
    return int.from_bytes(bytes(buf[at : at + 8]), "big")


def _u32(buf: np.ndarray, at: int) -> int:
    return int.from_bytes(bytes(buf[at : at + 4]), "big")


def _index(buf: np.ndarray) -> dict[str, int] | None:
    """The trailing index (``None`` if absent: truncated file). It is 8 ``u64`` (magic, sizes,
    addresses, PAPI labels, header, body, footer, keyvals); files older than DUMPI 0.6.6 lack
    the leading entries, so the magic is searched among the first four words."""
    magic = int.from_bytes(MAGIC, "big")
    n = buf.shape[0]
    if n < 16 + 64:
        return None
    words = [_u64(buf, n - 64 + 8 * k) for k in range(8)]
    fields = ("sizes", "addresses", "perf", "header", "body", "footer", "keyval")
    for k in range(4):
        if words[k] == magic:
            return dict(zip(fields[k:], words[k + 1 :], strict=True))
    return None


def _decode_file(path: Path, fallback_version: tuple[int, int, int] = (1, 0, 0)) -> _Records:
    """Decode one rank file; ``fallback_version`` (from the ``.meta``) applies when the file's
    header is lost (truncated file), so that the record layouts of that version are used."""
    try:
        buf = np.fromfile(path, dtype=np.uint8)
    except OSError as err:
        raise TraceError(f"cannot read ({err.strerror or err})", path=str(path)) from err
    where = str(path)
    if buf.shape[0] < 16 or bytes(buf[:8]) != MAGIC:
        raise TraceError("not a DUMPI file (no ff aa dd 'DUMPI' magic at offset 0)", path=where)
    index = _index(buf)
    version = fallback_version
    if index is not None and 0 < index["header"] < buf.shape[0] - 3:
        h = index["header"]
        version = (int(buf[h]), int(buf[h + 1]), int(buf[h + 2]))
    body = index["body"] if index is not None else 8
    end = index["footer"] if index is not None and index["footer"] > body else buf.shape[0]
    flags = np.array(
        [
            version < (0, 6, 2),
            version >= (0, 6, 3),
            version >= (0, 6, 9),
            version >= (0, 6, 8),
            _END_OF_STREAM,
        ],
        np.int64,
    )
    wall_offset = _u32(buf, body + 4)
    cpu_offset = _u32(buf, body)
    cap = max(64, (end - body) // 24)
    pool_cap = max(64, (end - body) // 8)
    while True:
        status, n, at, fid, off, fids, masks, times, scal, arr, pool, npool = _scan(
            buf, body + 8, end, _OPS, _NOPS, _COND, flags, cap, pool_cap
        )
        if status == 3:
            cap *= 2
        elif status == 5:
            pool_cap *= 2
        else:
            break
    if status == 1:
        name = FUNCTIONS[fid] if 0 <= fid < len(FUNCTIONS) else f"id {fid}"
        raise TraceError(
            f"record #{n + 1} at byte offset {at} (0x{at:x}): function id {fid} ({name}) has "
            "an argument layout this reader does not know; records have no length field, so "
            "it cannot be skipped",
            path=where,
        )
    if status in (2, 4) or index is None:
        if status == 2:
            name = FUNCTIONS[fid] if 0 <= fid < len(FUNCTIONS) else f"id {fid}"
            raise TraceError(
                f"record #{n + 1} ({name}) at byte offset {at} (0x{at:x}) is cut off by the end "
                f"of the file ({buf.shape[0]} bytes): truncated trace",
                path=where,
            )
        raise TraceError(
            f"the trace ends after record #{n} (byte offset {at}) without DUMPI's end-of-stream "
            "label and index: truncated trace",
            path=where,
        )
    t = times[:n].copy()
    for slot, base in ((0, cpu_offset), (2, wall_offset)):
        valid = t[:, slot] >= 0
        t[valid, slot] += base * 1_000_000_000
        t[valid, slot + 1] += base * 1_000_000_000
    sizes = _datatype_sizes(buf, index if index is not None else {})
    return _Records(
        where,
        fids[:n].astype(np.int64),
        off[:n],
        masks[:n],
        t,
        scal[:n],
        arr[:n],
        pool[:npool],
        version,
        sizes,
    )


#: Predefined datatype sizes (LP64) by DUMPI id, for traces without a size table (< 0.6.6).
_DEFAULT_SIZES = np.array(
    [0, 0, 1, 1, 1, 1, 4, 2, 2, 4, 4, 8, 8, 4, 8, 16, 8, 8, 8, 1, 0, 0, 8, 16, 16, 8, 8, 32],
    np.int64,
)


def _datatype_sizes(buf: np.ndarray, index: dict[str, int]) -> np.ndarray:
    at = index.get("sizes", 0)
    if 0 < at < buf.shape[0] - 4:
        count = _u32(buf, at)
        if at + 4 + 4 * count <= buf.shape[0]:
            raw = buf[at + 4 : at + 4 + 4 * count].view(">u4").astype(np.int64)
            return raw
    return _DEFAULT_SIZES.copy()


# --------------------------------------------------------------------------- files
#: Most ranks a trace may declare (a damaged count must not start a billion-file search).
_MAX_RANKS = 1 << 22
_BIN_RE = re.compile(r"^(.*)-(\d+)\.bin$")


def _read_meta(meta: Path) -> dict[str, str]:
    out = {}
    for line in meta.read_text(errors="replace").splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def find_rank_files(path: str | Path) -> tuple[list[Path], dict[str, str]]:
    """The per-rank ``.bin`` files (index = rank) and the ``.meta`` keys of a DUMPI trace."""
    path = Path(path)
    meta: Path | None = None
    if path.is_dir():
        metas = sorted(path.glob("*.meta"))
        if len(metas) > 1:
            names = ", ".join(m.name for m in metas)
            raise TraceError(
                f"several DUMPI traces in one folder ({names}); name one", path=str(path)
            )
        meta = metas[0] if metas else None
        folder = path
    elif path.suffix == ".meta":
        meta, folder = path, path.parent
    elif path.is_file():
        match = _BIN_RE.match(path.name)
        folder = path.parent
        if match and (folder / f"{match.group(1)}.meta").is_file():
            meta = folder / f"{match.group(1)}.meta"
        elif match:
            prefix = match.group(1)
            bins = sorted(folder.glob(f"{prefix}-*.bin"))
            return [b for b in bins if _BIN_RE.match(b.name)], {"fileprefix": prefix}
        else:
            raise InputError(f"{path}: not a DUMPI .meta or <prefix>-NNNN.bin file")
    else:
        raise InputError(f"{path}: no such file or directory")
    if meta is None:
        raise InputError(f"{path}: no DUMPI .meta file")
    keys = _read_meta(meta)
    prefix = keys.get("fileprefix", meta.stem)
    try:
        count = int(keys["numprocs"])
    except (KeyError, ValueError):
        raise TraceError("no numprocs=<P> line", path=str(meta)) from None
    if not 1 <= count <= _MAX_RANKS:
        raise TraceError(f"numprocs={count}: a trace has 1 to {_MAX_RANKS} ranks", path=str(meta))
    files = []
    for r in range(count):
        candidates = [folder / f"{prefix}-{r:04d}.bin", folder / f"{prefix}-{r}.bin"]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise TraceError(
                f"missing rank file {candidates[0].name[:100]} (numprocs={count})",
                path=str(meta),
            )
        files.append(confine.check(found, named_in=meta))
    return files, keys


def is_dumpi(path: str | Path) -> bool:
    """True for a DUMPI ``.meta`` file, a DUMPI ``.bin`` or a folder holding one ``.meta``."""
    path = Path(path)
    if path.is_dir():
        metas = list(path.glob("*.meta"))
        return len(metas) == 1 and "numprocs" in _read_meta(metas[0])
    if path.suffix == ".meta":
        return path.is_file() and "numprocs" in _read_meta(path)
    try:
        with open(path, "rb") as handle:
            return handle.read(8) == MAGIC
    except OSError:
        return False


# --------------------------------------------------------------------------- decoding
_WORLD, _SELF, _COMM_NULL = 2, 3, 1
_REQUEST_NULL = 1
_SEND_FIDS = {_FID[f"MPI_{n}"]: SEND for n in ("Send", "Bsend", "Ssend", "Rsend")}
_ISEND_FIDS = {_FID[f"MPI_{n}"]: ISEND for n in ("Isend", "Ibsend", "Issend", "Irsend")}
_INIT_FIDS = {_FID[f"MPI_{n}"]: SEND_INIT for n in ("Send_init", "Bsend_init", "Ssend_init")}
_INIT_FIDS[_FID["MPI_Rsend_init"]] = SEND_INIT
_P2P = {
    **_SEND_FIDS,
    **_ISEND_FIDS,
    **_INIT_FIDS,
    _FID["MPI_Recv"]: RECV,
    _FID["MPI_Irecv"]: IRECV,
    _FID["MPI_Recv_init"]: RECV_INIT,
}
_COLLECTIVES = {
    "MPI_Barrier": "barrier", "MPI_Bcast": "bcast", "MPI_Reduce": "reduce",
    "MPI_Allreduce": "allreduce", "MPI_Scan": "scan", "MPI_Exscan": "scan",
    "MPI_Gather": "gather", "MPI_Gatherv": "gatherv", "MPI_Scatter": "scatter",
    "MPI_Scatterv": "scatterv", "MPI_Allgather": "allgather", "MPI_Allgatherv": "allgatherv",
    "MPI_Alltoall": "alltoall", "MPI_Alltoallv": "alltoallv",
    "MPI_Reduce_scatter": "reduce_scatter",
}  # fmt: skip
_COMM_FIELD = {  # scalar field holding the communicator, per modelled function
    **{fid: 4 for fid in _P2P},
    _FID["MPI_Sendrecv"]: 8, _FID["MPI_Sendrecv_replace"]: 6, _FID["MPI_Barrier"]: 0,
    _FID["MPI_Bcast"]: 3, _FID["MPI_Reduce"]: 4, _FID["MPI_Allreduce"]: 3, _FID["MPI_Scan"]: 3,
    _FID["MPI_Exscan"]: 3, _FID["MPI_Gather"]: 4, _FID["MPI_Gatherv"]: 5,
    _FID["MPI_Scatter"]: 4, _FID["MPI_Scatterv"]: 6, _FID["MPI_Allgather"]: 4,
    _FID["MPI_Allgatherv"]: 4, _FID["MPI_Alltoall"]: 4, _FID["MPI_Alltoallv"]: 3,
    _FID["MPI_Reduce_scatter"]: 3,
}  # fmt: skip
_TYPE_CTORS = {
    _FID[f"MPI_{n}"]
    for n in (
        "Type_contiguous Type_vector Type_hvector Type_indexed Type_hindexed Type_struct Type_dup"
    ).split()
}
_COMM_CTORS = {_FID[f"MPI_{n}"] for n in ("Comm_dup Comm_split Comm_create Cart_create "
                                          "Cart_sub Graph_create Intercomm_create "
                                          "Intercomm_merge Comm_free").split()}  # fmt: skip
_WAIT_FAMILY = {_FID[f"MPI_{n}"] for n in "Wait Waitall Waitany Waitsome Test Testall Testany Testsome".split()}  # fmt: skip
_PURE_ABSORB = {_FID["DUMPI_Function_enter"], _FID["DUMPI_Function_exit"]}


class _Types:
    """Datatype sizes of one rank: the predefined table plus user types from constructors."""

    def __init__(self, recs: _Records, diag: Diagnostics):
        self.sizes: dict[int, int] = {i: int(s) for i, s in enumerate(recs.dtype_sizes)}
        self.recs = recs
        self.diag = diag

    def apply(self, e: int) -> None:
        r, s = self.recs, self.recs.scal[e]
        name = FUNCTIONS[int(r.fid[e])]
        get = self.sizes.get
        if name == "MPI_Type_contiguous":
            self._set(int(s[2]), int(s[0]), get(int(s[1])))
        elif name in ("MPI_Type_vector", "MPI_Type_hvector"):
            self._set(int(s[4]), int(s[0]) * int(s[1]), get(int(s[3])))
        elif name in ("MPI_Type_indexed", "MPI_Type_hindexed"):
            self._set(int(s[2]), int(r.array(e, 0).sum()), get(int(s[1])))
        elif name == "MPI_Type_struct":
            lengths, types = r.array(e, 0), r.array(e, 1)
            parts = [get(int(t)) for t in types.tolist()]
            if any(p is None for p in parts):
                self.sizes.pop(int(s[1]), None)
            else:
                total = sum(int(n) * p for n, p in zip(lengths.tolist(), parts, strict=False))
                if abs(total) < 2**63:
                    self.sizes[int(s[1])] = total
                else:
                    self.sizes.pop(int(s[1]), None)
        elif name == "MPI_Type_dup":
            self._set(int(s[1]), 1, get(int(s[0])))

    def _set(self, new: int, count: int, old: int | None) -> None:
        if old is None or abs(count * old) >= 2**63:  # beyond 64 bits: no usable size
            self.sizes.pop(new, None)
        else:
            self.sizes[new] = count * old

    def bytes(self, count, dtype: int, e: int, rank: int):
        """``count`` elements (an int or an array of counts) of ``dtype`` in bytes, exact: a
        product beyond 64 bits is an error at record ``e``, never a wrapped size."""
        size = self.size(dtype, e, rank)
        counts = np.asarray(count, dtype=np.int64)
        largest = int(np.abs(counts).max()) if counts.size else 0
        if largest * abs(size) >= 2**63:
            raise TraceError(
                f"{FUNCTIONS[int(self.recs.fid[e])]}: {largest} elements of datatype {dtype} "
                f"({size} bytes each) is more than 64 bits hold",
                path=self.recs.path,
                line=e + 1,
            )
        return counts * size if counts.ndim else int(count) * size

    def size(self, dtype: int, e: int, rank: int) -> int:
        value = self.sizes.get(int(dtype))
        if value is None:
            self.diag.problem(
                f"{FUNCTIONS[int(self.recs.fid[e])]}: datatype {dtype} has no known size (not "
                "predefined, not built by a decoded Type_* constructor); counted as 0 bytes",
                self.recs.path,
                e + 1,
            )
            return 0
        return value


@dataclass
class _Rank:
    """Event columns of one rank before communicators are numbered globally."""

    rows: dict[str, list[Any]]
    req: list[list[int]]
    counts: dict[int, np.ndarray]
    comm_handle: list[int]
    origin_ns: int


def _decode_rank(rank: int, recs: _Records, calls: dict[str, int], diag: Diagnostics) -> _Rank:
    """Turn one rank's records into rows (one Python step per *modelled* call; absorbed calls
    are counted per function id with numpy)."""
    fid = recs.fid
    ts, te = _times(recs, diag)
    modelled = np.zeros(len(FUNCTIONS) + 1, bool)
    for f in (
        list(_P2P)
        + [_FID[n] for n in _COLLECTIVES]
        + list(_WAIT_FAMILY)
        + list(_TYPE_CTORS)
        + list(_COMM_CTORS)
        + [_FID[n] for n in ("MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Sendrecv")]
        + [_FID[n] for n in ("MPI_Sendrecv_replace", "MPI_Start", "MPI_Startall")]
        + [_FID["MPI_Request_free"], _FID["MPI_Alltoallw"]]
    ):
        modelled[f] = True
    absorbed = np.flatnonzero(~modelled[fid])
    if absorbed.size:
        ids, first, counts = np.unique(fid[absorbed], return_index=True, return_counts=True)
        for f, i, c in zip(ids.tolist(), first.tolist(), counts.tolist(), strict=True):
            if f in _PURE_ABSORB:
                continue
            diag.absorb(FUNCTIONS[f], f"{recs.path}:{int(absorbed[i]) + 1}", c)
    rows: dict[str, list[Any]] = {k: [] for k in _ROW_KEYS}
    req: list[list[int]] = []
    counts: dict[int, np.ndarray] = {}
    types = _Types(recs, diag)
    s_all = recs.scal

    def add(e: int, name: str, kind: int, **cols: Any) -> None:
        rows["line"].append(e + 1)
        rows["kind"].append(kind)
        rows["call"].append(calls.setdefault(name, len(calls)))
        rows["t_start_ns"].append(ts[e])
        rows["t_end_ns"].append(te[e])
        for key in ("peer", "tag", "size", "root", "coll", "comm"):
            rows[key].append(cols.get(key, -1 if key in ("root", "coll") else 0))
        req.append(cols.get("req", []))

    for e in np.flatnonzero(modelled[fid]).tolist():
        f = int(fid[e])
        name = FUNCTIONS[f]
        s = s_all[e]
        if f in _TYPE_CTORS or f in _COMM_CTORS:
            if f in _TYPE_CTORS:
                types.apply(e)
            diag.absorb(name, f"{recs.path}:{e + 1}")
        elif name in ("MPI_Init", "MPI_Init_thread"):
            add(e, name, INIT)
        elif name == "MPI_Finalize":
            add(e, name, FINALIZE)
        elif f in _P2P:
            kind = _P2P[f]
            recv = kind in (RECV, IRECV, RECV_INIT)
            size = types.bytes(int(s[0]), int(s[1]), e, rank)
            add(
                e,
                name,
                kind,
                peer=_peer(int(s[2]), recv),
                tag=_tag(int(s[3]), recv),
                size=size,
                comm=int(s[4]),
                req=[int(s[5])] if kind not in (SEND, RECV) else [],
            )
        elif name == "MPI_Sendrecv":
            add(e, name, SR_SEND, peer=_peer(int(s[2]), False), tag=int(s[3]),
                size=types.bytes(int(s[0]), int(s[1]), e, rank), comm=int(s[8]))  # fmt: skip
            add(e, name, SR_RECV, peer=_peer(int(s[6]), True), tag=_tag(int(s[7]), True),
                size=types.bytes(int(s[4]), int(s[5]), e, rank), comm=int(s[8]))  # fmt: skip
        elif name == "MPI_Sendrecv_replace":
            size = types.bytes(int(s[0]), int(s[1]), e, rank)
            add(
                e,
                name,
                SR_SEND,
                peer=_peer(int(s[2]), False),
                tag=int(s[3]),
                size=size,
                comm=int(s[6]),
            )
            add(e, name, SR_RECV, peer=_peer(int(s[4]), True), tag=_tag(int(s[5]), True), size=size,
                comm=int(s[6]))  # fmt: skip
        elif name == "MPI_Start":
            add(e, name, START, req=[int(s[0])])
        elif name == "MPI_Startall":
            add(e, name, START, req=recs.array(e, 0).tolist())
        elif name == "MPI_Request_free":
            add(e, name, REQUEST_FREE, req=[int(s[0])])
        elif f in _WAIT_FAMILY:
            done = _completed(name, recs, e)
            done = [d for d in done if d > _REQUEST_NULL]
            if done:
                add(e, name, WAIT, req=done)
        elif name == "MPI_Alltoallw":
            diag.absorb(name, f"{recs.path}:{e + 1}")
        else:
            op = _COLLECTIVES[name]
            comm = int(s[_COMM_FIELD[f]])
            size, root, cnt = _collective(name, s, recs, e, types, rank)
            add(e, name, COLL, coll=COLL_CODE[op], size=size, root=root, comm=comm)
            if cnt is not None:
                counts[len(rows["line"]) - 1] = cnt
    init = np.flatnonzero(np.isin(fid, [_FID["MPI_Init"], _FID["MPI_Init_thread"]]))
    if init.size == 0:
        diag.problem("no MPI_Init record in this rank's trace", recs.path, None)
        origin = int(ts[0]) if ts.size else 0
    else:
        origin = int(te[init[0]])
    if not np.any(fid == _FID["MPI_Finalize"]):
        diag.problem("no MPI_Finalize record (truncated trace?)", recs.path, len(fid) or None)
    for key in ("t_start_ns", "t_end_ns"):
        rows[key] = (np.array(rows[key], np.int64) - origin).astype(np.float64).tolist()
    return _Rank(rows, req, counts, rows["comm"], origin)


_ROW_KEYS = ("line", "kind", "call", "t_start_ns", "t_end_ns", "peer", "tag", "size", "root",
             "coll", "comm")  # fmt: skip


def _times(recs: _Records, diag: Diagnostics) -> tuple[np.ndarray, np.ndarray]:
    """Start/stop ns of every record: wall clock, else CPU time (with a note)."""
    wall = recs.times[:, 2:4]
    cpu = recs.times[:, 0:2]
    have_wall = wall[:, 0] >= 0
    if have_wall.all():
        return wall[:, 0], wall[:, 1]
    if (cpu[:, 0] >= 0).all():
        diag.note("DUMPI trace without wall-clock times: CPU times used", recs.path)
        return cpu[:, 0], cpu[:, 1]
    e = int(np.flatnonzero(~have_wall)[0])
    raise TraceError(
        f"record #{e + 1} ({FUNCTIONS[int(recs.fid[e])]}) has no timestamps (DUMPI was run with "
        "timestamps disabled): no computation times to model",
        path=recs.path,
    )


def _peer(value: int, recv: bool) -> int:
    if value >= 0:
        return value
    if recv and value == -1:
        return ANY_SOURCE
    return PROC_NULL


def _tag(value: int, recv: bool) -> int:
    return ANY_TAG if recv and value == -1 else value


def _completed(name: str, recs: _Records, e: int) -> list[int]:
    """The requests a wait/test call completed (DUMPI records flags and indices)."""
    s = recs.scal[e]
    if name == "MPI_Wait":
        return [int(s[0])]
    if name == "MPI_Test":
        return [int(s[0])] if s[1] else []
    reqs = recs.array(e, 0)
    if name == "MPI_Waitall":
        return reqs.tolist()
    if name == "MPI_Testall":
        return reqs.tolist() if s[1] else []
    if name in ("MPI_Waitany", "MPI_Testany"):
        index = int(s[1])
        flag = True if name == "MPI_Waitany" else bool(s[2])
        return [int(reqs[index])] if flag and 0 <= index < reqs.size else []
    idx = recs.array(e, 1)  # Waitsome / Testsome: indices of the completed entries
    idx = idx[(idx >= 0) & (idx < reqs.size)]
    return reqs[idx].tolist()


def _collective(
    name: str, s: np.ndarray, recs: _Records, e: int, types: _Types, rank: int
) -> tuple[int, int, np.ndarray | None]:
    """(bytes significant at this member, root, per-member byte counts) of one collective."""
    nbytes = types.bytes
    if name == "MPI_Barrier":
        return 0, 0, None
    if name == "MPI_Bcast":
        return nbytes(int(s[0]), int(s[1]), e, rank), int(s[2]), None
    if name == "MPI_Reduce":
        return nbytes(int(s[0]), int(s[1]), e, rank), int(s[3]), None
    if name in ("MPI_Allreduce", "MPI_Scan", "MPI_Exscan"):
        return nbytes(int(s[0]), int(s[1]), e, rank), 0, None
    if name == "MPI_Allgather":
        return nbytes(int(s[2]), int(s[3]), e, rank), 0, None
    if name == "MPI_Alltoall":
        return nbytes(int(s[0]), int(s[1]), e, rank), 0, None
    if name in ("MPI_Gather", "MPI_Scatter"):
        me, root = int(s[0]), int(s[3])
        if me == root:
            return nbytes(int(s[5]), int(s[6]), e, rank), root, None
        return nbytes(int(s[1]), int(s[2]), e, rank), root, None
    if name == "MPI_Gatherv":
        me, root = int(s[0]), int(s[4])
        if me == root:
            counts = recs.array(e, 0)
            own = int(counts[root]) if root < counts.size else 0
            return nbytes(own, int(s[6]), e, rank), root, None
        return nbytes(int(s[2]), int(s[3]), e, rank), root, None
    if name == "MPI_Scatterv":
        me, root = int(s[0]), int(s[5])
        if me == root:
            counts = recs.array(e, 0)
            own = int(counts[root]) if root < counts.size else 0
            return nbytes(own, int(s[2]), e, rank), root, None
        return nbytes(int(s[3]), int(s[4]), e, rank), root, None
    if name == "MPI_Allgatherv":
        return nbytes(int(s[1]), int(s[2]), e, rank), 0, None
    if name == "MPI_Alltoallv":
        return 0, 0, nbytes(recs.array(e, 2), int(s[2]), e, rank)
    # MPI_Reduce_scatter
    return 0, 0, nbytes(recs.array(e, 0), int(s[1]), e, rank)


# --------------------------------------------------------------------------- communicators
def _communicators(
    all_recs: list[_Records], ranks: list[_Rank], P: int, diag: Diagnostics
) -> tuple[list[Communicator], list[np.ndarray]]:
    """Global communicator table and each rank's event → comm index (see module docstring)."""
    comm_create = {_FID[n] for n in ("MPI_Comm_dup", "MPI_Comm_split", "MPI_Comm_create",
                                     "MPI_Cart_create", "MPI_Cart_sub", "MPI_Graph_create",
                                     "MPI_Intercomm_create", "MPI_Intercomm_merge")}  # fmt: skip
    # identities are nested tuples: ("world",), (parent, "dup", k), (parent, "split", k, color)
    world: tuple = ("world",)
    splits: dict[tuple, list[tuple[int, int, int]]] = {}  # (parent, k) → [(color, key, rank)]
    per_rank_defs: list[list[tuple[int, int, tuple | None]]] = []  # (record, handle, identity)
    for r, recs in enumerate(all_recs):
        handles: dict[int, tuple | None] = {_WORLD: world, _SELF: ("self", r)}
        created: dict[tuple | None, int] = {}
        defs: list[tuple[int, int, tuple | None]] = []
        for e in np.flatnonzero(
            np.isin(recs.fid, list(comm_create | {_FID["MPI_Comm_free"]}))
        ).tolist():
            name = FUNCTIONS[int(recs.fid[e])]
            s = recs.scal[e]
            if name == "MPI_Comm_free":
                handles.pop(int(s[0]), None)
                defs.append((e, int(s[0]), None))
                continue
            parent_handle = {"MPI_Cart_sub": 1, "MPI_Graph_create": 1}.get(name, 0)
            parent = handles.get(int(s[parent_handle]))
            k = created.get(parent, 0)
            created[parent] = k + 1
            new_field = {"MPI_Comm_dup": 1, "MPI_Comm_split": 3, "MPI_Comm_create": 2,
                         "MPI_Cart_create": 5, "MPI_Cart_sub": 3, "MPI_Graph_create": 6,
                         "MPI_Intercomm_create": 5, "MPI_Intercomm_merge": 2}[name]  # fmt: skip
            new = int(s[new_field])
            if new == _COMM_NULL:
                continue
            ident: tuple | None
            if parent is None or parent[0] == "self":
                ident = None
            elif name in ("MPI_Comm_dup", "MPI_Cart_create"):
                ident = (parent, "dup", k)
            elif name == "MPI_Comm_split":
                ident = (parent, "split", k, int(s[1]))
                splits.setdefault((parent, k), []).append((int(s[1]), int(s[2]), r))
            else:
                ident = None
            handles[new] = ident
            defs.append((e, new, ident))
        per_rank_defs.append(defs)

    members_memo: dict[tuple, tuple[int, ...] | None] = {world: tuple(range(P))}

    def members(ident: tuple | None) -> tuple[int, ...] | None:
        if ident is None:
            return None
        if ident in members_memo:
            return members_memo[ident]
        parent = members(ident[0])
        if parent is None:
            out = None
        elif ident[1] == "dup":
            out = parent
        else:
            _, _, k, color = ident
            pos = {w: i for i, w in enumerate(parent)}
            group = [
                (key, pos.get(rr, P), rr) for c, key, rr in splits[(ident[0], k)] if c == color
            ]
            out = tuple(rr for _, _, rr in sorted(group))
        members_memo[ident] = out
        return out

    comms = [Communicator("MPI_COMM_WORLD", tuple(range(P)))]
    index: dict[tuple, int] = {world: 0}
    unknown_index: int | None = None
    per_rank_out = []
    for r, (recs, data) in enumerate(zip(all_recs, ranks, strict=True)):
        handle = np.array(data.comm_handle, np.int64)
        line = np.array(data.rows["line"], np.int64) - 1  # record index
        out = np.zeros(handle.size, np.int64)
        kinds = np.array(data.rows["kind"], np.int64)
        resolved = ~np.isin(
            kinds, [SEND, RECV, ISEND, IRECV, SEND_INIT, RECV_INIT, SR_SEND, SR_RECV, COLL]
        )  # rows without a communicator
        # the predefined handles, unless redefined (they are not, but a freed user handle
        # numbering can never reach 2 or 3)
        for h, ident in ((_WORLD, world), (_SELF, ("self", r))):
            sel = handle == h
            if not sel.any():
                continue
            if ident not in index:
                index[ident] = len(comms)
                comms.append(Communicator(f"MPI_COMM_SELF of rank {r}", (r,)))
            out[sel] = index[ident]
            resolved |= sel
        defs = per_rank_defs[r]
        for h in sorted({d[1] for d in defs}):
            mine = [(e, ident) for e, hh, ident in defs if hh == h]
            starts = np.array([e for e, _ in mine], np.int64)
            sel = np.flatnonzero((handle == h) & ~resolved)
            pos = np.searchsorted(starts, line[sel], side="right") - 1
            for j, p in zip(sel.tolist(), pos.tolist(), strict=True):
                ident = mine[p][1] if p >= 0 else None
                mem = members(ident) if ident is not None else None
                if mem is None:
                    if unknown_index is None:
                        unknown_index = len(comms)
                        comms.append(Communicator("communicator of unknown membership", None))
                    out[j] = unknown_index
                else:
                    if ident not in index:
                        index[ident] = len(comms)
                        comms.append(Communicator(f"comm {len(comms)} (size {len(mem)})", mem))
                    out[j] = index[ident]
                resolved[j] = True
        missing = np.flatnonzero(~resolved)
        if missing.size:
            e = int(line[missing[0]])
            diag.note(
                "calls on a communicator handle no decoded call created: membership unknown, "
                "absorbed by the builder",
                f"{recs.path}:{e + 1}",
                int(missing.size),
            )
            if unknown_index is None:
                unknown_index = len(comms)
                comms.append(Communicator("communicator of unknown membership", None))
            out[missing] = unknown_index
        per_rank_out.append(out)
    return comms, per_rank_out


# --------------------------------------------------------------------------- whole trace
def read_dumpi(path: str | Path, *, lenient: bool = False, progress: bool = False) -> Trace:
    """Read a DUMPI trace (``.meta``, a ``.bin`` of the set, or the folder) into a :class:`Trace`.

    Raises :class:`TraceError` naming the file and the record (number and byte offset) for
    truncated files, records of unknown layout and missing ranks; ``lenient`` turns per-record
    problems (unknown datatype size, missing Init/Finalize) into counted warnings.
    """
    files, keys = find_rank_files(path)
    P = len(files)
    diag = Diagnostics(lenient=lenient)
    bar: Callable[[], None] | None = None
    tq = None
    if progress:
        from tqdm import tqdm

        tq = tqdm(total=P, unit="rank", desc="reading DUMPI", leave=False)
        bar = lambda: tq.update(1)  # noqa: E731
    try:
        all_recs = []
        ranks = []
        calls: dict[str, int] = {}
        try:
            meta_version = tuple(int(keys[k]) for k in ("version", "subversion", "subsubversion"))
        except (KeyError, ValueError):
            meta_version = (1, 0, 0)
        for r, file in enumerate(files):
            recs = _decode_file(file, meta_version)  # type: ignore[arg-type]
            all_recs.append(recs)
            ranks.append(_decode_rank(r, recs, calls, diag))
            if bar is not None:
                bar()
    finally:
        if tq is not None:
            tq.close()
    comms, comm_index = _communicators(all_recs, ranks, P, diag)
    parts = []
    for r, (data, cidx) in enumerate(zip(ranks, comm_index, strict=True)):
        rows = data.rows
        n = len(rows["line"])
        cnt_count = np.zeros(n, np.int64)
        cnt_values = []
        for row in sorted(data.counts):
            cnt_count[row] = data.counts[row].size
            cnt_values.append(data.counts[row])
        req_ids = [x for lst in data.req for x in lst]
        parts.append(
            {
                "rank": np.full(n, r, np.int32),
                "line": np.array(rows["line"], np.int32),
                "kind": np.array(rows["kind"], np.int8),
                "call": np.array(rows["call"], np.int16),
                "t_start_ns": np.array(rows["t_start_ns"], np.float64),
                "t_end_ns": np.array(rows["t_end_ns"], np.float64),
                "peer": np.array(rows["peer"], np.int32),
                "tag": np.array(rows["tag"], np.int32),
                "size": np.array(rows["size"], np.int64),
                "comm": cidx.astype(np.int32),
                "root": np.array(rows["root"], np.int32),
                "coll": np.array(rows["coll"], np.int8),
                "req_count": np.array([len(x) for x in data.req], np.int64),
                "req_ids": np.array(req_ids, np.int64),
                "cnt_count": cnt_count,
                "cnt_values": np.concatenate(cnt_values) if cnt_values else np.zeros(0, np.int64),
            }
        )
    events = Events.from_parts(parts)
    origins = np.array([d.origin_ns for d in ranks], np.int64)
    offset = (origins - origins.min()).astype(np.float64)
    versions = sorted({".".join(map(str, rec.version)) for rec in all_recs})
    meta = {
        "tracer": "DUMPI " + (versions[0] if len(versions) == 1 else "/".join(versions)),
        "hostname": keys.get("hostname"),
        "clock_alignment": "wall clocks of the ranks (not synchronised across nodes)",
    }
    return Trace(
        num_ranks=P,
        events=events,
        calls=tuple(calls) if calls else ("MPI_Init",),
        comms=tuple(comms),
        files=tuple(str(f) for f in files),
        format="dumpi",
        clock_offset_ns=offset,
        clock_scale=np.ones(P),
        diagnostics=diag,
        meta=meta,
    )
