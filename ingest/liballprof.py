"""Reader for liballprof text traces (LogGOPSim's / LLAMP's PMPI tracer) → :class:`Trace`.

Files: one per rank, ``pmpi-trace-rank-<N>.txt`` (``N`` zero-padded or not) or
``<prefix>-<N>.dat`` (LogGOPSim's older samples). Ranks ``0..P−1`` must all be present.

Lines (``docs/formats.md``): ``<MPI_Name>:<t_start>:<arg>:…:<arg>:<t_end>``, µs
timestamps, C-prototype argument order, a datatype as ``id,size,extent``, a communicator as
``handle,rank,size``, pointers as addresses, ``sendcounts``-like arrays as ``<ptr>:<c0>,<c1>,…``.
Every call in :data:`CALLS` is checked field by field (count and ``:``/``,`` separators); other
MPI calls (:data:`llamp.ingest.events.MPI_FUNCTIONS`) cost time only and are absorbed into the
surrounding calc, with a warning unless they are expected to be pure computation (``Comm_rank``,
``Test``, ``Iprobe``, …). A name that is not an MPI function is an error (lenient: absorbed).
Modelled: Send/Ssend/Rsend/Bsend, Recv, their I-variants, persistent ``*_init``/``Start``/
``Startall``/``Request_free``, ``Cancel``, ``Wait``/``Waitall``, the completions that
``Waitany``/``Waitsome``/``Test``/``Testall``/``Testany``/``Testsome`` report (grammar below),
``Sendrecv(_replace)``, and the collectives of :data:`~llamp.ingest.events.COLL_OPS` (``Exscan``
is expanded as ``scan``; ``Reduce_scatter_block`` as ``reduce_scatter`` with equal blocks). The
v-collectives' counts are taken from the arrays the tracer prints (an MPICH-prototype
``recvcounts[]`` printed as a bare pointer makes ``Alltoallv``/``Reduce_scatter`` unmodellable:
absorbed with a warning).

Completion calls: liballprof prints every pointer once, so its ``Waitany``/``Waitsome``/
``Testany``/``Testsome`` records do not say which request completed (absorbed with a warning) and
its ``Test``/``Testall`` records not whether anything did (absorbed as computation). llamp's
tracer prints each out-value after its address, one field more per value; the reader tells the
layouts apart by their number of fields (:attr:`CallSpec.alt`) and accepts both. Positions count
every ``:`` and ``,`` as a separator, 1 = ``t_start`` (as in docs/formats.md; ``…*`` is an address)::

    MPI_Test     2 request*, 3 flag*, 4 <flag>, 5 status*, 6 t_end
    MPI_Testall  2 count, 3 requests*, 4 flag*, 5 <flag>, 6 statuses*, 7 t_end
    MPI_Waitany  2 count, 3 requests*, 4 index*, 5 <index>, 6 status*, 7 t_end
    MPI_Testany  2 count, 3 requests*, 4 index*, 5 <index>, 6 flag*, 7 <flag>, 8 status*, 9 t_end
    MPI_Waitsome 2 incount, 3 requests*, 4 outcount*, 5 <n>, 6 indices*[, 7 <i_0>,…,<i_{n−1}>],
                 then statuses*, t_end   (MPI_Testsome alike)
    MPI_Cancel   2 request*, 3 t_end

Indices are 0-based (also from Fortran); the completed request is ``requests + i·stride``. Index
or outcount ``MPI_UNDEFINED`` (−32766: no active request), a false flag, or outcount 0 complete
nothing: such a call costs time only (absorbed, no warning). Anything else becomes a ``WAIT``
row listing the completed requests, in the printed order; ``MPI_Cancel`` becomes a ``CANCEL``
row (:mod:`llamp.ingest.build` decides what a cancel removed).

Header lines (``#``): ``# collprof 0.9 output file``, ``# htor's PMPI Tracer … Output File`` or
``# llamp-tracer <version> output file (liballprof format)`` (the tracer, ``meta["tracer"]``),
``# Init clockdiff: <µs>`` / ``# clockdiff: <v> s (relative to rank 0)`` (liballprof prints the
µs value returned by ``sync_tree`` behind an ``s``; it is read as µs), ``# Finalize clockdiff:
<µs>``, ``# world size: <P>`` (llamp's tracer: fewer rank files is an error naming the missing
ones), and two more lines of llamp's own tracer:

- ``# llamp comm <handle> <size> <r0>,<r1>,…,<r_{size−1}>``: from this line on, the rank-local
  handle ``<handle>`` denotes a communicator whose communicator rank ``i`` is world rank ``r_i``.
  The k-th definition of a given member list at each of its members denotes the same
  communicator (communicators are created collectively, so members create them in one order).
  A handle may be redefined (after ``MPI_Comm_free``). When every rank file has these lines,
  the calls that make and free communicators (``Comm_split``, ``Comm_dup``, ``Comm_free``,
  ``Cart_create``, …) are absorbed without a warning: their effect is recorded.
- ``# llamp mpi mpich|openmpi``: the MPI library, which fixes the wildcard constants and the
  ``MPI_Request`` size.

Communicators without a ``# llamp comm`` line: one whose size is the number of ranks is taken as
``MPI_COMM_WORLD`` (or a congruent duplicate, which then shares its matching space), with
communicator rank = world rank; size 1 is ``MPI_COMM_SELF``; any other size is a
sub-communicator of unknown membership: its calls are absorbed with a warning naming file/line.

MPI library (decides ``MPI_ANY_SOURCE`` −2 vs −1 and ``MPI_PROC_NULL`` −1 vs −2; ``MPI_ANY_TAG``
is −1 under both): ``# llamp mpi`` if present; else a send to a negative destination (which can
only be ``MPI_PROC_NULL``); else, when receives name source −1 or −2, the reading under which
the whole trace's sends and receives balance: per destination, the sends that no receive naming
their source takes must be exactly the receives from the reading's ``MPI_ANY_SOURCE`` (a −1
receive answered by such sends is a wildcard; one with none to take is ``MPI_PROC_NULL``). When
both readings balance, or neither does, that is an error naming the first such receive and the
``# llamp mpi openmpi|mpich`` header that settles it (lenient: a warning, then the hints below).
The request stride is no evidence for this: Fortran handles are 4-byte integers under Open MPI
too (LogGOPSim's ``sphot`` trace: stride 4, Open MPI's −1 wildcards). Only when no receive
names a negative source, so that the choice changes nothing in the graph, is the library
guessed from the stride under which request-array entries (``Waitall``, ``Startall``, a
completed index > 0) hit requests created earlier (tried 4 and 8), else an MPICH
``MPI_COMM_WORLD`` handle (0x44000000), else MPICH. The stride itself is always taken from the
data when such entries allow it (else 4 under MPICH, 8 under Open MPI).

Clocks (used only to resolve ``MPI_ANY_SOURCE``/``MPI_ANY_TAG``): when any rank's Init clockdiff
is non-zero, rank ``r``'s time ``t`` is mapped onto rank 0's clock as ``t + d(t)``, ``d``
interpolated linearly from the Init to the Finalize clockdiff (liballprof's ``sync_tree``
measures ``clock_0 − clock_r``); when all clockdiffs are zero the ranks share one clock; without
clockdiff headers the ends of ``MPI_Init`` are taken as simultaneous.

Speed: each file is scanned once by a compiled tokenizer (numba) into integer columns; calls are
then decoded per call name with numpy, never per line in Python.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from llamp.errors import InputError, TraceError
from llamp.ingest.events import (
    ANY_SOURCE,
    ANY_TAG,
    CANCEL,
    COLL,
    COLL_CODE,
    FINALIZE,
    ICOLL,
    INIT,
    IRECV,
    ISEND,
    MPI_FUNCTIONS,
    PERSISTENT_COLLECTIVES,
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
    kind_in,
)
from llamp.kernel import kernel

__all__ = ["CALLS", "find_rank_files", "is_liballprof", "read_liballprof"]

# --------------------------------------------------------------------------- file discovery
_RANK_FILE_RES = (
    re.compile(r"^(pmpi-trace-rank-)(\d+)(\.txt)$"),
    re.compile(r"^(.+-)(\d+)(\.dat)$"),
)


def find_rank_files(path: str | Path) -> list[Path]:
    """The rank files of a liballprof trace directory, index = rank.

    Raises :class:`TraceError` naming the missing rank file when ranks ``0..P−1`` are not all
    there, or when two files claim one rank or two naming schemes are mixed.
    """
    path = Path(path)
    if path.is_file():
        path = path.parent
    if not path.is_dir():
        raise InputError(f"{path}: no such trace directory")
    found: dict[tuple[str, str], dict[int, Path]] = {}
    for entry in path.iterdir():
        for pattern in _RANK_FILE_RES:
            match = pattern.match(entry.name)
            if match and entry.is_file():
                key = (match.group(1), match.group(3))
                ranks = found.setdefault(key, {})
                rank = int(match.group(2))
                if rank in ranks:
                    raise TraceError(
                        f"two files for rank {rank}: {ranks[rank].name} and {entry.name}",
                        path=str(path),
                    )
                ranks[rank] = entry
                break
    if not found:
        raise InputError(
            f"{path}: no liballprof trace files (pmpi-trace-rank-<N>.txt or <prefix>-<N>.dat)"
        )
    if len(found) > 1:
        names = ", ".join(f"{p}<N>{s}" for p, s in sorted(found))
        raise TraceError(f"several traces in one directory ({names}); keep one", path=str(path))
    (prefix, suffix), ranks = next(iter(found.items()))
    count = max(ranks) + 1
    missing = [r for r in range(count) if r not in ranks]
    if missing:
        width = len(ranks[max(ranks)].name) - len(prefix) - len(suffix)
        padded = str(missing[0]).zfill(width) if width > len(str(missing[0])) else str(missing[0])
        raise TraceError(
            f"missing rank file {prefix}{padded}{suffix} (have {len(ranks)} files for ranks "
            f"0..{count - 1}; missing ranks {_ranges(missing)})",
            path=str(path),
        )
    return [ranks[r] for r in range(count)]


def is_liballprof(path: str | Path) -> bool:
    """True if ``path`` is a directory (or a file in one) holding liballprof rank files."""
    path = Path(path)
    if path.is_file():
        return any(p.match(path.name) for p in _RANK_FILE_RES)
    if not path.is_dir():
        return False
    return any(p.match(e.name) for e in path.iterdir() for p in _RANK_FILE_RES)


def _ranges(values: list[int]) -> str:
    out, start = [], values[0]
    for a, b in zip(values, values[1:] + [None], strict=True):
        if b != a + 1:
            out.append(str(start) if start == a else f"{start}-{a}")
            start = b
    return ", ".join(out)


# --------------------------------------------------------------------------- tokenizer
F_FRAC, F_DASH, F_BAD, F_COMMA = 1, 2, 4, 8
_NAME_TABLE_BITS = 11


@kernel(nogil=True)
def _scan(buf, max_records, max_tokens):  # pragma: no cover - compiled
    """One pass over a trace file: records (non-comment lines), tokens and interned call names.

    Returns (status, nrec, ntok, ncom, nnames, rec_line, rec_start, rec_name, rec_tok, rec_frac,
    rec_comma, rec_flags, tok_val, tok_flag, com_line, com_start, com_end, name_start,
    name_end). A token is the text
    between ``:``/``,`` after the call name; ``tok_val`` is its integer part (wrapping like C's
    unsigned long, so ``MPI_IN_PLACE`` = 2^64−1 reads as −1); ``tok_flag`` bits: fraction
    present, lone ``-``, not a number, preceded by ``,``; ``rec_frac`` the decimal fractions of
    a record's first and last token (the timestamps); ``rec_comma`` bit k is token k's comma
    bit (k < 64) and ``rec_flags`` the other flag bits of the first token, the last token and
    the OR over the tokens between, so that a record is checked without touching its tokens.
    Names are interned exactly (hash, then a byte comparison): ``rec_name`` indexes
    ``name_start``/``name_end``.
    """
    n = buf.shape[0]
    rec_line = np.empty(max_records, np.int32)
    rec_start = np.empty(max_records, np.int64)
    rec_name = np.empty(max_records, np.int32)
    rec_tok = np.empty(max_records + 1, np.int64)
    rec_frac = np.zeros((max_records, 2), np.float64)
    rec_comma = np.zeros(max_records, np.uint64)
    rec_flags = np.zeros((max_records, 3), np.uint8)
    tok_val = np.empty(max_tokens, np.int64)
    tok_flag = np.empty(max_tokens, np.uint8)
    com_line = np.empty(max_records, np.int32)
    com_start = np.empty(max_records, np.int64)
    com_end = np.empty(max_records, np.int64)
    cap = 1 << 11
    max_names = cap // 2
    slot_hash = np.zeros(cap, np.uint64)
    slot_id = np.full(cap, -1, np.int32)
    name_start = np.empty(max_names, np.int64)
    name_end = np.empty(max_names, np.int64)
    nrec = 0
    ntok = 0
    ncom = 0
    nnames = 0
    line = 0
    i = 0
    rec_tok[0] = 0
    while i < n:
        line += 1
        while i < n and (buf[i] == 32 or buf[i] == 9 or buf[i] == 13):
            i += 1
        if i >= n:
            break
        c = buf[i]
        if c == 10:
            i += 1
            continue
        if c == 35:  # '#': a header line, kept for the Python side
            com_start[ncom] = i
            while i < n and buf[i] != 10:
                i += 1
            end = i
            while end > com_start[ncom] and (buf[end - 1] == 13 or buf[end - 1] == 32):
                end -= 1
            com_line[ncom] = line
            com_end[ncom] = end
            ncom += 1
            i += 1
            continue
        # call name, hashed (FNV-1a) and interned with an exact byte comparison
        start = i
        h = np.uint64(14695981039346656037)
        while i < n and buf[i] != 58 and buf[i] != 10:
            h = (h ^ np.uint64(buf[i])) * np.uint64(1099511628211)
            i += 1
        stop = i
        slot = np.int64(h & np.uint64(cap - 1))
        nid = -1
        while True:
            sid = slot_id[slot]
            if sid < 0:
                if nnames >= max_names:
                    return (
                        -1,
                        nrec,
                        ntok,
                        ncom,
                        nnames,
                        rec_line,
                        rec_start,
                        rec_name,
                        rec_tok,
                        rec_frac,
                        rec_comma,
                        rec_flags,
                        tok_val,
                        tok_flag,
                        com_line,
                        com_start,
                        com_end,
                        name_start,
                        name_end,
                    )
                slot_id[slot] = nnames
                slot_hash[slot] = h
                name_start[nnames] = start
                name_end[nnames] = stop
                nid = nnames
                nnames += 1
                break
            if slot_hash[slot] == h and name_end[sid] - name_start[sid] == stop - start:
                same = True
                for q in range(stop - start):
                    if buf[name_start[sid] + q] != buf[start + q]:
                        same = False
                        break
                if same:
                    nid = sid
                    break
            slot = (slot + 1) & (cap - 1)
        rec_line[nrec] = line
        rec_start[nrec] = start
        rec_name[nrec] = nid
        first = ntok
        frac = 0.0
        commas = np.uint64(0)
        inner = np.uint8(0)
        last = np.uint8(0)
        if i < n and buf[i] == 58:  # tokens follow the ':' after the name
            i += 1
            comma = False
            while True:
                neg = False
                val = np.uint64(0)
                frac = 0.0
                scale = 0.1
                digits = 0
                dot = False
                bad = False
                trail = False
                if i < n and buf[i] == 45:
                    neg = True
                    i += 1
                while i < n:  # integer part
                    d = np.int64(buf[i]) - 48
                    if d < 0 or d > 9:
                        break
                    if val > np.uint64(1844674407370955161) or (
                        val == np.uint64(1844674407370955161) and d > 5
                    ):
                        bad = True  # beyond 64 bits: never wrap to a small count (2^64 → 0)
                    val = val * np.uint64(10) + np.uint64(d)
                    digits += 1
                    i += 1
                if i < n and buf[i] == 46:  # fraction
                    dot = True
                    i += 1
                    while i < n:
                        d = np.int64(buf[i]) - 48
                        if d < 0 or d > 9:
                            break
                        frac += d * scale
                        scale *= 0.1
                        digits += 1
                        i += 1
                while i < n:  # up to the separator: only trailing blanks may remain
                    c = buf[i]
                    if c == 58 or c == 44 or c == 10:
                        break
                    if c == 13 or c == 32 or c == 9:
                        trail = True
                    else:
                        bad = True
                    i += 1
                at_end = i >= n or buf[i] == 10
                flag = np.uint8(F_COMMA) if comma else np.uint8(0)
                if digits == 0:
                    if neg and not dot and not bad:
                        flag |= np.uint8(F_DASH)
                    else:
                        flag |= np.uint8(F_BAD)
                elif bad or (trail and not at_end):
                    flag |= np.uint8(F_BAD)
                if dot:
                    flag |= np.uint8(F_FRAC)
                v = np.int64(val)
                tok_val[ntok] = -v if neg else v
                tok_flag[ntok] = flag
                if neg:
                    frac = -frac
                k = ntok - first
                if k == 0:
                    rec_frac[nrec, 0] = frac
                    rec_flags[nrec, 0] = flag & np.uint8(~F_COMMA & 0xFF)
                else:
                    if k >= 2:
                        inner |= last
                    if comma and k < 64:
                        commas |= np.uint64(1) << np.uint64(k)
                last = flag & np.uint8(~F_COMMA & 0xFF)
                ntok += 1
                if at_end:
                    break
                comma = buf[i] == 44
                i += 1
        rec_frac[nrec, 1] = frac
        rec_comma[nrec] = commas
        rec_flags[nrec, 1] = last
        rec_flags[nrec, 2] = inner
        nrec += 1
        rec_tok[nrec] = ntok
        i += 1  # past the newline
    return (
        0,
        nrec,
        ntok,
        ncom,
        nnames,
        rec_line,
        rec_start,
        rec_name,
        rec_tok,
        rec_frac,
        rec_comma,
        rec_flags,
        tok_val,
        tok_flag,
        com_line,
        com_start,
        com_end,
        name_start,
        name_end,
    )


@dataclass
class _Scan:
    """The tokenizer's output for one file, trimmed to size."""

    buf: np.ndarray
    rec_line: np.ndarray
    rec_start: np.ndarray
    rec_name: np.ndarray
    rec_tok: np.ndarray
    rec_frac: np.ndarray
    rec_comma: np.ndarray
    rec_flags: np.ndarray
    tok_val: np.ndarray
    tok_flag: np.ndarray
    comments: list[tuple[int, str]]
    names: list[str]

    def line_text(self, rec: int) -> str:
        start = int(self.rec_start[rec])
        stop = start
        while stop < self.buf.shape[0] and self.buf[stop] != 10:
            stop += 1
        return bytes(self.buf[start:stop]).decode("latin-1").rstrip("\r")


#: Longest line a rank file may have (an Alltoallv's count arrays of 10^5 ranks take ~3 MB);
#: a longer one is damage, and scanning it would need ~13 bytes of memory per byte.
MAX_LINE_BYTES = 16 << 20


def _scan_file(path: Path) -> _Scan:
    try:
        buf = np.fromfile(path, dtype=np.uint8)
    except OSError as err:
        raise TraceError(f"cannot read ({err.strerror or err})", path=str(path)) from err
    newlines = np.flatnonzero(buf == 10)
    max_records = int(newlines.size) + 1
    ends = np.concatenate([[-1], newlines, [buf.size]])
    longest = int(np.argmax(np.diff(ends))) if buf.size else 0
    if buf.size and int(ends[longest + 1] - ends[longest] - 1) > MAX_LINE_BYTES:
        raise TraceError(
            f"line is {int(ends[longest + 1] - ends[longest] - 1)} bytes long, more than "
            f"{MAX_LINE_BYTES >> 20} MiB: not a liballprof trace, or damaged",
            path=str(path),
            line=longest + 1,
        )
    max_tokens = int(np.count_nonzero(buf == 58) + np.count_nonzero(buf == 44)) + 1
    (
        status,
        nrec,
        ntok,
        ncom,
        nnames,
        rec_line,
        rec_start,
        rec_name,
        rec_tok,
        rec_frac,
        rec_comma,
        rec_flags,
        tok_val,
        tok_flag,
        com_line,
        com_start,
        com_end,
        name_start,
        name_end,
    ) = _scan(buf, max_records, max_tokens)
    if status < 0:
        raise TraceError(
            f"more than {1 << (_NAME_TABLE_BITS - 1)} distinct call names: not a liballprof trace?",
            path=str(path),
        )
    comments = [
        (int(com_line[c]), bytes(buf[com_start[c] : com_end[c]]).decode("latin-1"))
        for c in range(ncom)
    ]
    names = [bytes(buf[name_start[k] : name_end[k]]).decode("latin-1") for k in range(nnames)]
    return _Scan(
        buf,
        rec_line[:nrec],
        rec_start[:nrec],
        rec_name[:nrec],
        rec_tok[: nrec + 1],
        rec_frac[:nrec],
        rec_comma[:nrec],
        rec_flags[:nrec],
        tok_val[:ntok],
        tok_flag[:ntok],
        comments,
        names,
    )


# --------------------------------------------------------------------------- call layouts
#: ``MPI_UNDEFINED`` (the same in MPICH and Open MPI): Waitany's index / Waitsome's outcount
#: when no request was active.
MPI_UNDEFINED = -32766


@dataclass(frozen=True)
class CallSpec:
    """How one MPI call is printed (its C signature) and what it becomes.

    ``alt`` are other layouts of the same call, told apart by their number of fields (older
    writers print less); ``lengths`` names the field that gives the length of the ``v`` arrays.
    """

    sig: str  # "name:type ..." with types p(ointer) i(nt) o(p) d(atatype) c(omm) v(counts array)
    role: str
    alt: tuple[CallSpec, ...] = ()
    lengths: str = "comm.size"


#: Roles of the collectives; each has a non-blocking version ``"i" + role``.
_COLL_ROLES = (
    "barrier bcast reduce allreduce scan allgather alltoall gather scatter gatherv scatterv "
    "allgatherv alltoallv reduce_scatter reduce_scatter_block"
).split()


def _spec_table() -> dict[str, CallSpec]:
    p2p = "buf:p count:i dtype:d peer:i tag:i comm:c"
    table = {
        "MPI_Init": CallSpec("argc:p argv:p", "init"),
        "MPI_Init_thread": CallSpec("argc:p argv:p required:i provided:p", "init"),
        "MPI_Finalize": CallSpec("", "finalize"),
        "MPI_Recv": CallSpec(p2p + " status:p", "recv"),
        "MPI_Irecv": CallSpec(p2p + " request:p", "irecv"),
        "MPI_Recv_init": CallSpec(p2p + " request:p", "recv_init"),
        "MPI_Start": CallSpec("request:p", "start"),
        "MPI_Startall": CallSpec("count:i requests:p", "startall"),
        "MPI_Request_free": CallSpec("request:p", "request_free"),
        "MPI_Cancel": CallSpec("request:p", "cancel"),
        "MPI_Wait": CallSpec("request:p status:p", "wait"),
        "MPI_Waitall": CallSpec("count:i requests:p statuses:p", "waitall"),
        # llamp's tracer prints the out-values after their addresses; liballprof only addresses
        "MPI_Waitany": CallSpec(
            "count:i requests:p index_ptr:p index:i status:p",
            "waitany",
            alt=(CallSpec("count:i requests:p index:p status:p", "completion_unknown"),),
        ),
        "MPI_Testany": CallSpec(
            "count:i requests:p index_ptr:p index:i flag_ptr:p flag:i status:p",
            "testany",
            alt=(CallSpec("count:i requests:p index:p flag:p status:p", "completion_unknown"),),
        ),
        "MPI_Test": CallSpec(
            "request:p flag_ptr:p flag:i status:p",
            "test",
            alt=(CallSpec("request:p flag:p status:p", "calc"),),
        ),
        "MPI_Testall": CallSpec(
            "count:i requests:p flag_ptr:p flag:i statuses:p",
            "testall",
            alt=(CallSpec("count:i requests:p flag:p statuses:p", "calc"),),
        ),
        "MPI_Sendrecv": CallSpec(
            "sbuf:p scount:i stype:d dest:i stag:i rbuf:p rcount:i rtype:d src:i rtag:i "
            "comm:c status:p",
            "sendrecv",
        ),
        "MPI_Sendrecv_replace": CallSpec(
            "buf:p count:i dtype:d dest:i stag:i src:i rtag:i comm:c status:p", "sendrecv_replace"
        ),
        "MPI_Barrier": CallSpec("comm:c", "barrier"),
        "MPI_Bcast": CallSpec("buf:p count:i dtype:d root:i comm:c", "bcast"),
        "MPI_Reduce": CallSpec("sbuf:p rbuf:p count:i dtype:d op:o root:i comm:c", "reduce"),
        "MPI_Allreduce": CallSpec("sbuf:p rbuf:p count:i dtype:d op:o comm:c", "allreduce"),
        "MPI_Scan": CallSpec("sbuf:p rbuf:p count:i dtype:d op:o comm:c", "scan"),
        "MPI_Exscan": CallSpec("sbuf:p rbuf:p count:i dtype:d op:o comm:c", "scan"),
        "MPI_Allgather": CallSpec(
            "sbuf:p scount:i stype:d rbuf:p rcount:i rtype:d comm:c", "allgather"
        ),
        "MPI_Alltoall": CallSpec(
            "sbuf:p scount:i stype:d rbuf:p rcount:i rtype:d comm:c", "alltoall"
        ),
        "MPI_Gather": CallSpec(
            "sbuf:p scount:i stype:d rbuf:p rcount:i rtype:d root:i comm:c", "gather"
        ),
        "MPI_Scatter": CallSpec(
            "sbuf:p scount:i stype:d rbuf:p rcount:i rtype:d root:i comm:c", "scatter"
        ),
        "MPI_Allgatherv": CallSpec(
            "sbuf:p scount:i stype:d rbuf:p recvcounts:v displs:v rtype:d comm:c", "allgatherv"
        ),
        "MPI_Gatherv": CallSpec(
            "sbuf:p scount:i stype:d rbuf:p recvcounts:v displs:v rtype:d root:i comm:c", "gatherv"
        ),
        "MPI_Scatterv": CallSpec(
            "sbuf:p sendcounts:v displs:v stype:d rbuf:p rcount:i rtype:d root:i comm:c", "scatterv"
        ),
        "MPI_Alltoallv": CallSpec(
            "sbuf:p sendcounts:v sdispls:v stype:d rbuf:p recvcounts:v rdispls:v rtype:d comm:c",
            "alltoallv",
        ),
        "MPI_Reduce_scatter": CallSpec(
            "sbuf:p rbuf:p recvcounts:v dtype:d op:o comm:c", "reduce_scatter"
        ),
        "MPI_Reduce_scatter_block": CallSpec(
            "sbuf:p rbuf:p count:i dtype:d op:o comm:c", "reduce_scatter_block"
        ),
        # pure computation by design: checked, then absorbed into the calc
        "MPI_Comm_rank": CallSpec("comm:c rank:p", "calc"),
        "MPI_Comm_size": CallSpec("comm:c size:p", "calc"),
        "MPI_Iprobe": CallSpec("src:i tag:i comm:c flag:p status:p", "calc"),
        "MPI_Wtime": CallSpec("", "calc"),
    }
    for name in ("MPI_Waitsome", "MPI_Testsome"):
        table[name] = CallSpec(
            "incount:i requests:p outcount_ptr:p outcount:i indices:v statuses:p",
            "some",
            lengths="outcount",
            alt=(
                CallSpec(
                    "incount:i requests:p outcount:p indices:p statuses:p", "completion_unknown"
                ),
            ),
        )
    # non-blocking collectives: the blocking prototype plus the request (MPI-3 §5.12)
    for name, spec in list(table.items()):
        if spec.role in _COLL_ROLES:
            table[f"MPI_I{name[4].lower()}{name[5:]}"] = CallSpec(
                spec.sig + " request:p", "i" + spec.role, lengths=spec.lengths
            )
    for name in ("MPI_Send", "MPI_Ssend", "MPI_Rsend", "MPI_Bsend"):
        table[name] = CallSpec(p2p, "send")
    for name in ("MPI_Isend", "MPI_Issend", "MPI_Irsend", "MPI_Ibsend"):
        table[name] = CallSpec(p2p + " request:p", "isend")
    for name in ("MPI_Send_init", "MPI_Ssend_init", "MPI_Rsend_init", "MPI_Bsend_init"):
        table[name] = CallSpec(p2p + " request:p", "send_init")
    return table


#: Every call the reader checks field by field, with its C signature and role.
CALLS: dict[str, CallSpec] = _spec_table()


@dataclass(frozen=True)
class _Layout:
    """Token positions of one call for one counts-array length (t_start = 0, t_end = last)."""

    index: dict[str, Any]
    comma: np.ndarray  # expected F_COMMA bit per token
    ntok: int
    fields: str  # human description for errors
    token_names: tuple[str, ...]


def _layout(sig: str, n_counts: int | None) -> _Layout:
    index: dict[str, Any] = {"t_start": 0}
    comma = [False]
    described = ["t_start"]
    tokens = ["t_start"]
    pos = 1
    for item in sig.split():
        name, typ = item.split(":")
        if typ in "pio":
            index[name] = pos
            comma.append(False)
            described.append(name)
            tokens.append(name)
            pos += 1
        elif typ in "dc":
            parts = ("id", "size", "extent") if typ == "d" else ("handle", "rank", "size")
            for k, part in enumerate(parts):
                index[f"{name}.{part}"] = pos + k
                tokens.append(f"{name} {part}")
            comma += [False, True, True]
            described.append(f"{name}({','.join(parts)})")
            pos += 3
        elif typ == "v":
            index[name] = pos
            comma.append(False)
            tokens.append(f"{name} pointer")
            pos += 1
            if n_counts:
                index[name + "[]"] = (pos, pos + n_counts)
                comma += [False] + [True] * (n_counts - 1)
                tokens += [f"{name}[{k}]" for k in range(n_counts)]
                pos += n_counts
                described.append(f"{name}(ptr:{n_counts} values)")
            else:
                described.append(f"{name}(ptr)")
    index["t_end"] = pos
    comma.append(False)
    described.append("t_end")
    tokens.append("t_end")
    return _Layout(index, np.array(comma, dtype=bool), pos + 1, ", ".join(described), tuple(tokens))


def _base_tokens(sig: str) -> tuple[int, int]:
    """(tokens without counts arrays, number of counts arrays) of a signature."""
    lay = _layout(sig, None)
    return lay.ntok, sum(1 for item in sig.split() if item.endswith(":v"))


# --------------------------------------------------------------------------- per-rank decoding
class _Fields:
    """The tokens of ``m`` records of one call with one layout: ``f["count"]`` → int64[m].

    Columns are gathered from the token array when first asked for (a role reads only the
    fields it needs)."""

    def __init__(self, scan: _Scan, recs: np.ndarray, layout: _Layout, path: str):
        self.scan = scan
        self.recs = recs
        self.tok_val = scan.tok_val
        self.first_tok = scan.rec_tok[recs]
        self.frac = scan.rec_frac[recs]  # (m, 2): fractions of t_start and t_end
        self.layout = layout
        self.path = path
        self._cache: dict[str, np.ndarray] = {}
        self.m = self.first_tok.shape[0]

    def __getitem__(self, name: str) -> np.ndarray:
        column = self._cache.get(name)
        if column is None:
            column = self.tok_val[self.first_tok + self.layout.index[name]]
            self._cache[name] = column
        return column

    def counts(self, name: str) -> np.ndarray | None:
        span = self.layout.index.get(name + "[]")
        if span is None:
            return None
        return self.tok_val[self.first_tok[:, None] + np.arange(span[0], span[1])]

    def has(self, name: str) -> bool:
        return name in self.layout.index or name + "[]" in self.layout.index

    def nbytes(self, count: np.ndarray, type_size: str, used: Any = True) -> np.ndarray:
        """``count`` elements of the datatype in field ``type_size`` as bytes (int64), each
        product the record ``used`` checked: one that does not fit in 64 bits is an error at
        its line, never a wrapped size (2^61 + 4,500 doubles are not 36,000 bytes)."""
        size = self[type_size]
        if count.ndim == 2:
            size = size[:, None]
        product = count * size
        rough = np.abs(count.astype(np.float64) * size.astype(np.float64)) >= 2.0**62
        used = np.broadcast_to(np.asarray(used, dtype=bool), (self.m,))
        suspect = np.flatnonzero((rough & (used[:, None] if rough.ndim == 2 else used)).ravel())
        for flat in suspect:  # exact, in Python integers, for the few near or past the edge
            i, j = np.unravel_index(flat, product.shape) if product.ndim == 2 else (flat, None)
            c = int(count[i] if j is None else count[i, j])
            t = int(size[i] if size.ndim == 1 else size[i, 0])
            if not -(2**63) <= c * t < 2**63:
                raise self.error(
                    int(i), f"{c} elements of {t} bytes is {c * t} bytes: more than 64 bits hold"
                )
        return product

    def first(self, bad: np.ndarray) -> int | None:
        """Index of the first record flagged in ``bad`` (a row of a 2-D mask counts), or None."""
        hit = np.flatnonzero(bad if bad.ndim == 1 else bad.any(axis=1))
        return int(hit[0]) if hit.size else None

    def error(self, i: int, reason: str) -> TraceError:
        """A :class:`TraceError` naming record ``i``'s file, line and text."""
        r = int(self.recs[i])
        return TraceError(
            f"{reason}: {self.scan.line_text(r)!r}", path=self.path, line=int(self.scan.rec_line[r])
        )


@dataclass
class _RankData:
    """Events of one rank before communicators, requests and wildcards are resolved."""

    rank: int
    path: str
    cols: dict[str, np.ndarray]  # event columns incl. raw comm fields, times as abs µs
    req_count: np.ndarray  # per event: number of requests (array base in req_base)
    req_base: np.ndarray
    req_offset: np.ndarray  # per request entry (CSR by req_count): index into the array
    counts: list[tuple[int, np.ndarray]]  # (event row, byte counts) for alltoallv/reduce_scatter
    header: str | None
    clockdiff_init: float | None
    clockdiff_final: float | None
    comm_defs: list[tuple[int, int, tuple[int, ...]]]  # (line, handle, members)
    mpi: str | None
    mpi_line: int | None
    origin_us: tuple[int, float]  # absolute µs (int part, fraction) of the rank's time 0
    t_init_rel_ns: float | None
    t_final_rel_ns: float | None
    world_size: int | None = None  # "# world size: <P>" of llamp's tracer


_EMPTY_I64 = np.zeros(0, np.int64)


def _decode_rank(rank: int, path: Path, diag: Diagnostics, calls: dict[str, int]) -> _RankData:
    """Scan one rank file and decode its records call by call (``calls``: global name ids)."""
    scan = _scan_file(path)
    where = str(path)
    header, cd_init, cd_final, comm_defs, mpi, mpi_line, world_size = _parse_comments(
        scan.comments, where
    )
    nrec = scan.rec_line.shape[0]
    ntok = np.diff(scan.rec_tok)
    # every record: a name, then t_start ... t_end
    if nrec:
        short = np.flatnonzero(ntok < 2)
        if short.size:
            r = int(short[0])
            raise TraceError(
                f"{scan.names[scan.rec_name[r]]} has {ntok[r]} fields, expected at least "
                f"t_start and t_end (truncated line?): {scan.line_text(r)!r}",
                path=where,
                line=int(scan.rec_line[r]),
            )
    pieces: list[tuple[np.ndarray, int, dict[str, np.ndarray], list[np.ndarray] | None]] = []
    # names < 2^10, so a 16-bit stable argsort (radix sort) groups the records by call
    order = np.argsort(scan.rec_name.astype(np.int16), kind="stable")
    bounds = np.searchsorted(scan.rec_name[order], np.arange(len(scan.names) + 1))
    for nid, name in enumerate(scan.names):
        recs = order[bounds[nid] : bounds[nid + 1]]
        if recs.size == 0:
            continue
        spec = CALLS.get(name)
        if spec is None:
            first = int(recs[0])
            if name not in MPI_FUNCTIONS:
                diag.problem(
                    f"unknown call {name!r} (not an MPI function): {scan.line_text(first)!r}",
                    where,
                    int(scan.rec_line[first]),
                )
            elif name in PERSISTENT_COLLECTIVES:
                diag.problem(
                    f"{name}: persistent collectives (MPI-4) are not modelled (--lenient "
                    "absorbs them and drops their MPI_Start)",
                    where,
                    int(scan.rec_line[first]),
                )
            _check_times(scan, recs, name, where, dash_start=False, dash_end=False)
            diag.absorb(name, f"{where}:{int(scan.rec_line[first])}", int(recs.size))
            continue
        call_id = calls.setdefault(name, len(calls))
        for fields, sub, spec_used in _fields_by_layout(scan, recs, name, spec, where):
            out = _ROLES[spec_used.role](
                fields, name, call_id, diag, f"{where}:{int(scan.rec_line[sub[0]])}"
            )
            if out is None:
                diag.absorb(name, f"{where}:{int(scan.rec_line[sub[0]])}", int(sub.size))
                continue
            for part, cols in enumerate(out):
                cnt = cols.pop("_counts", None)
                keep = cols.pop("_keep", None)
                rows = sub
                if keep is not None:  # records that make no row (a test that completed nothing)
                    rows = sub[keep]
                    if rows.size < sub.size:
                        first = int(sub[np.flatnonzero(~keep)[0]])
                        diag.absorb(
                            name, f"{where}:{int(scan.rec_line[first])}", sub.size - rows.size
                        )
                    cols = {
                        k: v[keep] if isinstance(v, np.ndarray) and v.ndim else v
                        for k, v in cols.items()
                    }
                    if rows.size == 0:
                        continue
                cols["line"] = scan.rec_line[rows]
                pieces.append((rows, part, cols, cnt))
    # rows in program order without sorting: a record gives 0 (absorbed), 1 or 2 rows
    rows_per_rec = np.zeros(nrec, np.int64)
    for sub, part, _, _ in pieces:
        rows_per_rec[sub] = np.maximum(rows_per_rec[sub], part + 1)
    first_row = np.cumsum(rows_per_rec) - rows_per_rec
    total = int(rows_per_rec.sum())
    always = ("ts_i", "ts_f", "te_i", "te_f", "kind", "call", "line")  # set by every role
    cols = {
        name: np.empty(total, dtype)
        if name in always
        else np.full(total, -1 if name in ("root", "coll") else 0, dtype)
        for name, dtype in _ROW_COLUMNS.items()
    }
    counts: list[tuple[int, np.ndarray]] = []
    picks: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, request array offsets per row)
    for sub, part, piece, cnt in pieces:
        at = first_row[sub] + part
        index = piece.pop("_req_index", None)
        for name, values in piece.items():
            cols[name][at] = values
        if cnt is not None:
            counts.extend(zip(at.tolist(), cnt, strict=True))
        if index is not None:
            picks.append((at, index))
    counts.sort(key=lambda item: item[0])
    kind = cols["kind"]
    # time origin: the end of MPI_Init (else the first timestamp)
    init_rows = np.flatnonzero(kind == INIT)
    fin_rows = np.flatnonzero(kind == FINALIZE)
    if init_rows.size == 0:
        diag.problem(
            "no MPI_Init in this rank's trace (truncated or not a complete trace?)", where, None
        )
        o_i, o_f = (int(cols["ts_i"][0]), float(cols["ts_f"][0])) if kind.size else (0, 0.0)
    else:
        if init_rows[0] != 0:
            diag.problem("MPI call before MPI_Init", where, int(cols["line"][0]))
        o_i, o_f = int(cols["te_i"][init_rows[0]]), float(cols["te_f"][init_rows[0]])
    if fin_rows.size == 0:
        last = int(scan.rec_line[-1]) if nrec else None
        diag.problem("no MPI_Finalize in this rank's trace (truncated?)", where, last)
    elif fin_rows[0] != kind.size - 1:
        e = int(fin_rows[0]) + 1
        diag.problem("MPI call after MPI_Finalize", where, int(cols["line"][e]))
    cols["t_start_ns"] = ((cols.pop("ts_i") - o_i) + (cols.pop("ts_f") - o_f)) * 1000.0
    cols["t_end_ns"] = ((cols.pop("te_i") - o_i) + (cols.pop("te_f") - o_f)) * 1000.0
    t_init = float(cols["t_end_ns"][init_rows[0]]) if init_rows.size else None
    t_fin = float(cols["t_start_ns"][fin_rows[0]]) if fin_rows.size else None
    back = np.flatnonzero(cols["t_end_ns"] < cols["t_start_ns"])
    if back.size:
        e = int(back[0])
        diag.problem("call ends before it starts (t_end < t_start)", where, int(cols["line"][e]))
    req_count = cols.pop("req_count")
    req_base = cols.pop("req_base")
    bad = np.flatnonzero(req_count < 0)
    if bad.size:
        e = int(bad[0])
        raise TraceError(
            f"negative request count {req_count[e]}", path=where, line=int(cols["line"][e])
        )
    # request i of a row is the array entry base + offset·stride: offsets 0, 1, … for
    # Waitall/Startall, the completed indices for Waitany/Waitsome/Testany/Testsome
    req_first = np.cumsum(req_count) - req_count
    req_offset = np.arange(int(req_count.sum()), dtype=np.int64) - np.repeat(req_first, req_count)
    for at, index in picks:
        pos = req_first[at][:, None] + np.arange(index.shape[1])
        req_offset[pos.reshape(-1)] = index.reshape(-1)
    return _RankData(
        rank,
        where,
        cols,
        req_count,
        req_base,
        req_offset,
        counts,
        header,
        cd_init,
        cd_final,
        comm_defs,
        mpi,
        mpi_line,
        (o_i, o_f),
        t_init,
        t_fin,
        world_size,
    )


def _check_times(
    scan: _Scan, recs: np.ndarray, name: str, where: str, *, dash_start: bool, dash_end: bool
) -> None:
    first = scan.rec_tok[recs]
    last = scan.rec_tok[recs + 1] - 1
    for pos, allow_dash, what in ((first, dash_start, "t_start"), (last, dash_end, "t_end")):
        flag = scan.tok_flag[pos]
        bad = (flag & F_BAD) != 0
        if not allow_dash:
            bad |= (flag & F_DASH) != 0
        if bad.any():
            r = int(recs[np.flatnonzero(bad)[0]])
            raise TraceError(
                f"{name}: {what} is not a timestamp (truncated line?): {scan.line_text(r)!r}",
                path=where,
                line=int(scan.rec_line[r]),
            )


def _pick_layout(spec: CallSpec, count: int) -> tuple[CallSpec, _Layout, int | None] | None:
    """The first of the call's layouts (``spec``, then ``spec.alt``) with ``count`` tokens, and
    the length of its counts arrays."""
    for candidate in (spec, *spec.alt):
        base, n_arrays = _base_tokens(candidate.sig)
        n_counts: int | None = None
        if n_arrays and count > base and (count - base) % n_arrays == 0:
            n_counts = (count - base) // n_arrays
        layout = _layout(candidate.sig, n_counts)
        if layout.ntok == count:
            return candidate, layout, n_counts
    return None


def _fields_by_layout(
    scan: _Scan, recs: np.ndarray, name: str, spec: CallSpec, where: str
) -> list[tuple[_Fields, np.ndarray, CallSpec]]:
    """Check every record of one call against its layout; yield (fields, records, spec) per
    layout (a call may be printed in more than one, see :class:`CallSpec`)."""
    ntok = np.diff(scan.rec_tok)[recs]
    out = []
    lo, hi = int(ntok.min()), int(ntok.max())
    for count in [lo] if lo == hi else np.unique(ntok).tolist():
        sub = recs if lo == hi else recs[ntok == count]
        picked = _pick_layout(spec, count)
        if picked is None:
            r = int(sub[0])
            expected = []
            for candidate in (spec, *spec.alt):
                base, n_arrays = _base_tokens(candidate.sig)
                per = "communicator size" if candidate.lengths == "comm.size" else candidate.lengths
                expected.append(
                    f"{base}"
                    + (f" + {n_arrays}×({per})" if n_arrays else "")
                    + f" ({_layout(candidate.sig, None).fields})"
                )
            base = _base_tokens(spec.sig)[0]
            raise TraceError(
                f"{name} has {count} fields, expected {' or '.join(expected)}"
                f"{' (truncated line?)' if count < base else ''}: {scan.line_text(r)!r}",
                path=where,
                line=int(scan.rec_line[r]),
            )
        spec_used, layout, n_counts = picked
        first_tok = scan.rec_tok[sub]
        # the separator must be as expected, no token unreadable, a lone '-' only for Init's
        # t_start / Finalize's t_end, fractions only on the timestamps
        mask = np.full(count, F_BAD | F_DASH | F_FRAC, np.uint8)
        mask[[0, -1]] &= ~np.uint8(F_FRAC)
        if spec_used.role == "init":
            mask[0] &= ~np.uint8(F_DASH)
        if spec_used.role == "finalize":
            mask[-1] &= ~np.uint8(F_DASH)
        if count <= 64:
            expected = np.uint64(sum(1 << k for k in range(count) if layout.comma[k]))
            flags = scan.rec_flags[sub]
            problem = (
                (scan.rec_comma[sub] != expected)
                | ((flags[:, 0] & mask[0]) != 0)
                | ((flags[:, 1] & mask[-1]) != 0)
                | ((flags[:, 2] & mask[1]) != 0)
            )
            bad_rows = np.flatnonzero(problem)
        else:
            idx = first_tok[:, None] + np.arange(count)
            flag = scan.tok_flag[idx]
            comma = np.where(layout.comma, F_COMMA, 0).astype(np.uint8)
            bad_rows = np.flatnonzero(np.any((flag & (mask | F_COMMA)) != comma, axis=1))
        if bad_rows.size:
            r = int(sub[bad_rows[0]])
            flag = scan.tok_flag[scan.rec_tok[r] : scan.rec_tok[r] + count]
            comma = np.where(layout.comma, F_COMMA, 0).astype(np.uint8)
            col = int(np.flatnonzero((flag & (mask | F_COMMA)) != comma)[0])
            what = (
                "not a number"
                if flag[col] & (F_BAD | F_DASH)
                else "not an integer"
                if flag[col] & F_FRAC
                else "after the wrong separator"
            )
            raise TraceError(
                f"{name}: field {col + 1} ({layout.token_names[col]}) is {what} (fields: "
                f"{layout.fields}): {scan.line_text(r)!r}",
                path=where,
                line=int(scan.rec_line[r]),
            )
        fields = _Fields(scan, sub, layout, where)
        if n_counts and spec_used.lengths == "comm.size":
            size_col = fields["comm.size"]
            i = fields.first(size_col != n_counts)
            if i is not None:
                raise fields.error(
                    i,
                    f"{name}: counts arrays have {n_counts} entries but the communicator "
                    f"has {size_col[i]} ranks",
                )
        elif spec_used.lengths != "comm.size" and _base_tokens(spec_used.sig)[1]:
            # an index list printed after its length (Waitsome): MPI_UNDEFINED means none
            length = fields[spec_used.lengths]
            i = fields.first(np.where(length == MPI_UNDEFINED, 0, length) != (n_counts or 0))
            if i is not None:
                raise fields.error(
                    i,
                    f"{name}: {spec_used.lengths} is {length[i]} but {n_counts or 0} "
                    "indices are printed",
                )
        for what in ("count", "scount", "rcount"):
            if fields.has(what):
                neg = np.flatnonzero(fields[what] < 0)
                if neg.size:  # the line as written: 2^63 and more read as negative (C's wrap)
                    raise fields.error(
                        int(neg[0]),
                        f"{name}: {what} is negative or above 2^63 − 1 (the largest signed "
                        "64-bit integer)",
                    )
        out.append((fields, sub, spec_used))
    return out


def _times(f: _Fields) -> dict[str, np.ndarray]:
    ts_i, ts_f = f["t_start"], f.frac[:, 0]
    te_i, te_f = f["t_end"], f.frac[:, 1]
    return {"ts_i": ts_i, "ts_f": ts_f, "te_i": te_i, "te_f": te_f}


def _base(f: _Fields, kind: int, nid: int, **cols: Any) -> dict[str, Any]:
    """Columns of one row per record: arrays, or scalars for constants (defaults elsewhere)."""
    out: dict[str, Any] = _times(f)
    out["kind"] = kind
    out["call"] = nid
    out.update(cols)
    return out


def _comm(f: _Fields, name: str = "comm") -> dict[str, np.ndarray]:
    return {
        "comm_handle": f[f"{name}.handle"],
        "comm_rank": f[f"{name}.rank"],
        "comm_size": f[f"{name}.size"],
    }


def _role_init(f, name, nid, diag, where):
    cols = _base(f, INIT, nid)
    cols["ts_i"], cols["ts_f"] = cols["te_i"], cols["te_f"]  # t_start is '-'
    return [cols]


def _role_finalize(f, name, nid, diag, where):
    cols = _base(f, FINALIZE, nid)
    cols["te_i"], cols["te_f"] = cols["ts_i"], cols["ts_f"]  # t_end is '-'
    return [cols]


def _p2p(kind: int, with_request: bool):
    def role(f, name, nid, diag, where):
        req = {"req_count": 1, "req_base": f["request"]} if with_request else {}
        return [
            _base(
                f,
                kind,
                nid,
                peer=f["peer"],
                tag=f["tag"],
                size=f.nbytes(f["count"], "dtype.size"),
                **_comm(f),
                **req,
            )
        ]

    return role


def _role_start(f, name, nid, diag, where):
    return [_base(f, START, nid, req_count=1, req_base=f["request"])]


def _role_startall(f, name, nid, diag, where):
    return [_base(f, START, nid, req_count=f["count"], req_base=f["requests"])]


def _role_request_free(f, name, nid, diag, where):
    return [_base(f, REQUEST_FREE, nid, req_count=1, req_base=f["request"])]


def _role_wait(f, name, nid, diag, where):
    return [_base(f, WAIT, nid, req_count=1, req_base=f["request"])]


def _role_waitall(f, name, nid, diag, where):
    return [_base(f, WAIT, nid, req_count=f["count"], req_base=f["requests"])]


def _role_cancel(f, name, nid, diag, where):
    return [_base(f, CANCEL, nid, req_count=1, req_base=f["request"])]


def _completed(f: _Fields, nid: int, done: np.ndarray, **cols: Any) -> list[dict[str, Any]]:
    """WAIT rows for the records that completed something (``done``); the others cost time."""
    out = _base(f, WAIT, nid, **cols)
    out["_keep"] = done
    return [out]


def _role_test(f, name, nid, diag, where):
    return _completed(f, nid, f["flag"] != 0, req_count=1, req_base=f["request"])


def _role_testall(f, name, nid, diag, where):
    return _completed(f, nid, f["flag"] != 0, req_count=f["count"], req_base=f["requests"])


def _role_any(f, name, nid, diag, where):
    """Waitany/Testany: the request at ``index`` completed, unless the index is MPI_UNDEFINED
    (no active request) or, for Testany, the flag is false."""
    index, count = f["index"], f["count"]
    done = index != MPI_UNDEFINED
    if f.has("flag"):
        done &= f["flag"] != 0
    i = f.first(done & ((index < 0) | (index >= count)))
    if i is not None:
        raise f.error(
            i,
            f"{name}: completed index {index[i]} is not one of the {count[i]} requests "
            f"(0-based; MPI_UNDEFINED is {MPI_UNDEFINED})",
        )
    return _completed(f, nid, done, req_count=1, req_base=f["requests"], _req_index=index[:, None])


def _role_some(f, name, nid, diag, where):
    """Waitsome/Testsome: ``outcount`` requests completed, at the printed indices."""
    outcount, incount = f["outcount"], f["incount"]
    i = f.first((outcount != MPI_UNDEFINED) & ((outcount < 0) | (outcount > incount)))
    if i is not None:
        raise f.error(i, f"{name}: outcount {outcount[i]} for {incount[i]} requests")
    index = f.counts("indices")
    if index is None:  # nothing completed (outcount 0 or MPI_UNDEFINED)
        return None
    i = f.first((index < 0) | (index >= incount[:, None]))
    if i is not None:
        raise f.error(
            i,
            f"{name}: completed indices {index[i].tolist()} are not all among the "
            f"{incount[i]} requests (0-based)",
        )
    i = f.first(np.diff(np.sort(index, axis=1), axis=1) == 0)
    if i is not None:
        raise f.error(i, f"{name}: completed indices {index[i].tolist()} name a request twice")
    return _completed(
        f, nid, outcount > 0, req_count=outcount, req_base=f["requests"], _req_index=index
    )


def _role_completion_unknown(f, name, nid, diag, where):
    diag.note(
        f"{name} without the completed index/flag (liballprof's layout): which request "
        "completed is unknown, absorbed into calc",
        where,
        f.m,
    )
    return None


def _role_sendrecv(f, name, nid, diag, where):
    comm = _comm(f)
    send = _base(
        f,
        SR_SEND,
        nid,
        peer=f["dest"],
        tag=f["stag"],
        size=f.nbytes(f["scount"], "stype.size"),
        **comm,
    )
    recv = _base(
        f,
        SR_RECV,
        nid,
        peer=f["src"],
        tag=f["rtag"],
        size=f.nbytes(f["rcount"], "rtype.size"),
        **comm,
    )
    return [send, recv]


def _role_sendrecv_replace(f, name, nid, diag, where):
    comm = _comm(f)
    size = f.nbytes(f["count"], "dtype.size")
    return [
        _base(f, SR_SEND, nid, peer=f["dest"], tag=f["stag"], size=size, **comm),
        _base(f, SR_RECV, nid, peer=f["src"], tag=f["rtag"], size=size, **comm),
    ]


def _coll(op: str, size: Callable[[_Fields], np.ndarray] | None, rooted: bool = False):
    def role(f, name, nid, diag, where):
        m = f.m
        nbytes = np.zeros(m, np.int64) if size is None else size(f)
        return [
            _base(
                f,
                COLL,
                nid,
                coll=COLL_CODE[op],
                root=f["root"] if rooted else 0,
                size=nbytes,
                **_comm(f),
            )
        ]

    return role


def _is_root(f: _Fields) -> np.ndarray:
    return f["comm.rank"] == f["root"]


def _pick(f: _Fields, array: str, index: np.ndarray) -> np.ndarray:
    """``array[index]`` per record (index clipped into the array)."""
    values = f.counts(array)
    assert values is not None
    index = np.clip(index, 0, values.shape[1] - 1)
    return values[np.arange(values.shape[0]), index]


def _role_gatherv(f, name, nid, diag, where):
    root = _is_root(f)
    mine = f.nbytes(f["scount"], "stype.size")
    if f.has("recvcounts") and f.counts("recvcounts") is not None:
        at_root = f.nbytes(_pick(f, "recvcounts", f["root"]), "rtype.size", root)
        mine = np.where(root, at_root, mine)
    return [_base(f, COLL, nid, coll=COLL_CODE["gatherv"], root=f["root"], size=mine, **_comm(f))]


def _role_scatterv(f, name, nid, diag, where):
    root = _is_root(f)
    mine = f.nbytes(f["rcount"], "rtype.size")
    if f.counts("sendcounts") is not None:
        at_root = f.nbytes(_pick(f, "sendcounts", f["root"]), "stype.size", root)
        mine = np.where(root, at_root, mine)
    return [_base(f, COLL, nid, coll=COLL_CODE["scatterv"], root=f["root"], size=mine, **_comm(f))]


def _role_allgatherv(f, name, nid, diag, where):
    if f.counts("recvcounts") is not None:
        mine = f.nbytes(_pick(f, "recvcounts", f["comm.rank"]), "rtype.size")
    else:
        mine = f.nbytes(f["scount"], "stype.size")
    return [_base(f, COLL, nid, coll=COLL_CODE["allgatherv"], size=mine, **_comm(f))]


def _role_alltoallv(f, name, nid, diag, where):
    recv = f.counts("recvcounts")
    if recv is None:
        diag.note(
            "MPI_Alltoallv without recvcounts in the trace (pointer only): absorbed", where, f.m
        )
        return None
    cols = _base(f, COLL, nid, coll=COLL_CODE["alltoallv"], **_comm(f))
    cols["_counts"] = list(f.nbytes(recv, "rtype.size"))
    return [cols]


def _role_reduce_scatter(f, name, nid, diag, where):
    recv = f.counts("recvcounts")
    if recv is None:
        diag.note(
            "MPI_Reduce_scatter without recvcounts in the trace (pointer only): absorbed",
            where,
            f.m,
        )
        return None
    cols = _base(f, COLL, nid, coll=COLL_CODE["reduce_scatter"], **_comm(f))
    cols["_counts"] = list(f.nbytes(recv, "dtype.size"))
    return [cols]


def _role_reduce_scatter_block(f, name, nid, diag, where):
    cols = _base(f, COLL, nid, coll=COLL_CODE["reduce_scatter"], **_comm(f))
    block = f.nbytes(f["count"], "dtype.size")
    cols["_counts"] = [
        np.full(int(n), b, np.int64) for n, b in zip(f["comm.size"], block, strict=True)
    ]
    return [cols]


def _role_calc(f, name, nid, diag, where):
    return None


def _nonblocking(role: Callable[..., list[dict[str, Any]] | None]):
    """The role of a non-blocking collective: its blocking version's row as an ICOLL row
    with the request it creates."""

    def nb_role(f, name, nid, diag, where):
        out = role(f, name, nid, diag, where)
        if out is None:
            return None
        return [{**cols, "kind": ICOLL, "req_count": 1, "req_base": f["request"]} for cols in out]

    return nb_role


def _gather_size(f: _Fields) -> np.ndarray:
    root = _is_root(f)
    return np.where(
        root, f.nbytes(f["rcount"], "rtype.size", root), f.nbytes(f["scount"], "stype.size", ~root)
    )


def _scatter_size(f: _Fields) -> np.ndarray:
    root = _is_root(f)
    return np.where(
        root, f.nbytes(f["scount"], "stype.size", root), f.nbytes(f["rcount"], "rtype.size", ~root)
    )


def _msg(f: _Fields) -> np.ndarray:
    return f.nbytes(f["count"], "dtype.size")


def _block(f: _Fields) -> np.ndarray:
    return f.nbytes(f["rcount"], "rtype.size")


_ROLES: dict[str, Callable[..., list[dict[str, Any]] | None]] = {
    "init": _role_init,
    "finalize": _role_finalize,
    "send": _p2p(SEND, False),
    "recv": _p2p(RECV, False),
    "isend": _p2p(ISEND, True),
    "irecv": _p2p(IRECV, True),
    "send_init": _p2p(SEND_INIT, True),
    "recv_init": _p2p(RECV_INIT, True),
    "start": _role_start,
    "startall": _role_startall,
    "request_free": _role_request_free,
    "wait": _role_wait,
    "waitall": _role_waitall,
    "cancel": _role_cancel,
    "test": _role_test,
    "testall": _role_testall,
    "waitany": _role_any,
    "testany": _role_any,
    "some": _role_some,
    "completion_unknown": _role_completion_unknown,
    "sendrecv": _role_sendrecv,
    "sendrecv_replace": _role_sendrecv_replace,
    "barrier": _coll("barrier", None),
    "bcast": _coll("bcast", _msg, rooted=True),
    "reduce": _coll("reduce", _msg, rooted=True),
    "allreduce": _coll("allreduce", _msg),
    "scan": _coll("scan", _msg),
    "allgather": _coll("allgather", _block),
    "alltoall": _coll("alltoall", _block),
    "gather": _coll("gather", _gather_size, rooted=True),
    "scatter": _coll("scatter", _scatter_size, rooted=True),
    "gatherv": _role_gatherv,
    "scatterv": _role_scatterv,
    "allgatherv": _role_allgatherv,
    "alltoallv": _role_alltoallv,
    "reduce_scatter": _role_reduce_scatter,
    "reduce_scatter_block": _role_reduce_scatter_block,
    "calc": _role_calc,
}
_ROLES.update({"i" + role: _nonblocking(_ROLES[role]) for role in _COLL_ROLES})


_ROW_COLUMNS = {
    "ts_i": np.int64,
    "ts_f": np.float64,
    "te_i": np.int64,
    "te_f": np.float64,
    "kind": np.int8,
    "call": np.int16,
    "peer": np.int64,
    "tag": np.int64,
    "size": np.int64,
    "root": np.int64,
    "coll": np.int64,
    "comm_handle": np.int64,
    "comm_rank": np.int64,
    "comm_size": np.int64,
    "req_count": np.int64,
    "req_base": np.int64,
    "line": np.int32,
}


_HEADER_RES = {
    "collprof": re.compile(r"^#\s*collprof\s+\S+\s+output file", re.I),
    "htor": re.compile(r"^#\s*htor's PMPI Tracer.*Output File", re.I),
    "llamp-tracer": re.compile(r"^#\s*llamp-tracer\s+\S+\s+output file", re.I),
}
_WORLD_SIZE_RE = re.compile(r"^#\s*world size:\s*(\S+)\s*$")
_CLOCK_INIT_RE = re.compile(r"^#\s*(?:Init\s+)?clockdiff:\s*(\S+)")
_CLOCK_FINAL_RE = re.compile(r"^#\s*Finalize clockdiff:\s*(\S+)")
_LLAMP_RE = re.compile(r"^#\s*llamp\s+(\S+)\s*(.*)$")


def _parse_comments(comments: list[tuple[int, str]], where: str):
    header = None
    cd_init = cd_final = None
    comm_defs: list[tuple[int, int, tuple[int, ...]]] = []
    mpi = mpi_line = world_size = None
    for line, text in comments:
        for kind, pattern in _HEADER_RES.items():
            if pattern.match(text) and header is None:
                header = kind
        size = _WORLD_SIZE_RE.match(text)
        if size:
            try:
                world_size = int(size.group(1))
            except ValueError:
                raise TraceError(
                    f"world size {size.group(1)!r} is not a number", path=where, line=line
                ) from None
        final = _CLOCK_FINAL_RE.match(text)
        init = None if final else _CLOCK_INIT_RE.match(text)
        for match, is_final in ((final, True), (init, False)):
            if match:
                try:
                    value = float(match.group(1))
                except ValueError:
                    raise TraceError(
                        f"clockdiff {match.group(1)!r} is not a number", path=where, line=line
                    ) from None
                if is_final:
                    cd_final = value
                else:
                    cd_init = value
        llamp = _LLAMP_RE.match(text)
        if not llamp:
            continue
        what, rest = llamp.group(1), llamp.group(2).split()
        if what == "comm":
            try:
                handle, size = int(rest[0]), int(rest[1])
                members = tuple(int(x) for x in rest[2].split(",")) if len(rest) > 2 else ()
            except (IndexError, ValueError):
                raise TraceError(
                    f"bad communicator line {text!r}: expected "
                    "'# llamp comm <handle> <size> <r0>,<r1>,…'",
                    path=where,
                    line=line,
                ) from None
            if len(members) != size or len(rest) != 3:
                raise TraceError(
                    f"communicator line lists {len(members)} ranks, says size {size}: {text!r}",
                    path=where,
                    line=line,
                )
            if len(set(members)) != size or min(members) < 0:
                raise TraceError(
                    f"communicator line lists a rank twice or a negative rank: {text!r}",
                    path=where,
                    line=line,
                )
            comm_defs.append((line, handle, members))
        elif what == "mpi":
            flavour = (rest[0].lower() if rest else "").replace("-", "").replace(" ", "")
            if flavour not in ("mpich", "openmpi"):
                raise TraceError(
                    f"unknown MPI library {' '.join(rest)!r} (mpich or openmpi)",
                    path=where,
                    line=line,
                )
            mpi, mpi_line = flavour, line
        else:
            raise TraceError(
                f"unknown llamp header {what!r} (known: comm, mpi)", path=where, line=line
            )
    return header, cd_init, cd_final, comm_defs, mpi, mpi_line, world_size


# --------------------------------------------------------------------------- whole trace
_MPICH_WORLD = 0x44000000
#: Calls that make or free communicators: accounted for by '# llamp comm' lines.
_COMM_CALLS = frozenset(
    """MPI_Comm_split MPI_Comm_split_type MPI_Comm_dup MPI_Comm_dup_with_info MPI_Comm_idup
    MPI_Comm_create MPI_Comm_create_group MPI_Comm_free MPI_Cart_create MPI_Cart_sub
    MPI_Graph_create MPI_Dist_graph_create MPI_Dist_graph_create_adjacent
    MPI_Intercomm_merge""".split()
)


def read_liballprof(path: str | Path, *, lenient: bool = False, progress: bool = False) -> Trace:
    """Read a liballprof trace directory into a :class:`Trace` (see the module docstring).

    Raises :class:`TraceError` naming file, line and reason for malformed input; ``lenient``
    turns per-line problems (unknown call, missing Init/Finalize, …) into counted warnings.
    """
    files = find_rank_files(path)
    P = len(files)
    diag = Diagnostics(lenient=lenient)
    bar = None
    if progress:
        from tqdm import tqdm

        total = sum(f.stat().st_size for f in files)
        bar = tqdm(total=total, unit="B", unit_scale=True, desc="reading trace", leave=False)
    ranks: list[_RankData] = []
    call_ids: dict[str, int] = {}
    try:
        for rank, file in enumerate(files):
            ranks.append(_decode_rank(rank, file, diag, call_ids))
            if bar is not None:
                bar.update(file.stat().st_size)
    finally:
        if bar is not None:
            bar.close()
    other_size = [(d, d.world_size) for d in ranks if d.world_size not in (None, P)]
    if other_size:
        d, size = other_size[0]
        detail = (
            f"missing {_missing_names(files, int(size))}"
            if int(size) > P
            else "files of another run in the directory?"
        )
        raise TraceError(
            f"the tracer ran {size} ranks ('# world size' header) but there are {P} "
            f"rank files ({detail})",
            path=d.path,
        )
    if ranks and all(d.comm_defs for d in ranks):
        # the '# llamp comm' lines say what these calls made: nothing is lost by absorbing them
        diag.expect(_COMM_CALLS)
    too_big = [
        (d, int(np.flatnonzero(d.cols["comm_size"] > P)[0]))
        for d in ranks
        if np.any(d.cols["comm_size"] > P)
    ]
    if too_big:
        d, e = too_big[0]
        size = int(d.cols["comm_size"][e])
        missing = _missing_names(files, size)
        raise TraceError(
            f"communicator of size {size} but only {P} rank files (missing {missing})",
            path=d.path,
            line=int(d.cols["line"][e]),
        )
    stride, stride_evidence = _detect_stride(ranks)
    comms, comm_index = _communicators(ranks, P, diag)
    mpi, mpi_reason = _detect_mpi(
        ranks, stride_evidence, stride, comms, comm_index, tuple(call_ids), diag
    )
    if stride_evidence is None:
        stride = 4 if mpi == "mpich" else 8
    events = Events.from_parts(
        [_finish_rank(d, cidx, mpi, stride) for d, cidx in zip(ranks, comm_index, strict=True)]
    )
    offset, scale, alignment = _clocks(ranks)
    headers = sorted({d.header or "none" for d in ranks})
    meta = {
        "tracer": headers[0] if len(headers) == 1 else headers,
        "mpi": mpi,
        "mpi_detected_from": mpi_reason,
        "request_stride": stride,
        "clock_alignment": alignment,
    }
    return Trace(
        num_ranks=P,
        events=events,
        calls=tuple(call_ids),
        comms=tuple(comms),
        files=tuple(str(f) for f in files),
        format="liballprof",
        clock_offset_ns=offset,
        clock_scale=scale,
        diagnostics=diag,
        meta=meta,
    )


def _missing_names(files: list[Path], size: int) -> str:
    name = files[0].name
    match = next(p.match(name) for p in _RANK_FILE_RES if p.match(name))
    first = f"{match.group(1)}{len(files)}{match.group(3)}"
    last = f"{match.group(1)}{size - 1}{match.group(3)}"
    return first if size - 1 == len(files) else f"{first} … {last}"


_STRIDE_SAMPLE = 16384  # request-array entries per rank


def _detect_stride(ranks: list[_RankData]) -> tuple[int, str | None]:
    """The MPI_Request size from request arrays (Waitall, Startall, Waitany, …) whose entries
    hit known requests (the first few thousand entries of each rank decide)."""
    hits = {4: 0, 8: 0}
    for d in ranks:
        kind, count, base = d.cols["kind"], d.req_count, d.req_base
        single = (count == 1) & kind_in(kind, (ISEND, IRECV, SEND_INIT, RECV_INIT, ICOLL))
        known = np.sort(base[single], kind="stable")
        if known.size == 0:
            continue
        # entries of request arrays beyond the first (Waitall, Startall, Waitany's index, …)
        of_array = np.repeat(kind_in(kind, (WAIT, START)), count) & (d.req_offset > 0)
        entries = np.flatnonzero(of_array)[:_STRIDE_SAMPLE]
        if entries.size == 0:
            continue
        bases = np.repeat(base, count)[entries]
        offsets = d.req_offset[entries]
        for stride in (4, 8):
            addr = bases + offsets * stride
            at = np.minimum(np.searchsorted(known, addr), known.size - 1)
            hits[stride] += int(np.count_nonzero(known[at] == addr))
    if hits[4] == hits[8]:
        return 8, None
    best = 4 if hits[4] > hits[8] else 8
    return best, f"{hits[best]} request-array entries hit requests at stride {best}"


def _detect_mpi(
    ranks: list[_RankData],
    stride_evidence: str | None,
    stride: int,
    comms: list[Communicator],
    comm_index: list[np.ndarray],
    call_names: tuple[str, ...],
    diag: Diagnostics,
) -> tuple[str, str]:
    """(flavour, reason): the header, else a send to a negative rank, else the reading of the
    receives from −1/−2 under which the whole trace's sends and receives balance
    (:func:`_wildcard_reading`), else the weaker hints (request stride, MPICH's world handle)."""
    explicit = {d.mpi for d in ranks if d.mpi}
    if len(explicit) > 1:
        d = next(d for d in ranks if d.mpi)
        raise TraceError(
            "ranks name different MPI libraries in '# llamp mpi'", path=d.path, line=d.mpi_line
        )
    if explicit:
        return explicit.pop(), "llamp mpi header"
    neg = set()
    for d in ranks:
        send = kind_in(d.cols["kind"], (SEND, ISEND, SEND_INIT, SR_SEND))
        neg |= set(np.unique(d.cols["peer"][send & (d.cols["peer"] < 0)]).tolist())
    if neg == {-1}:
        return "mpich", "send to MPI_PROC_NULL = -1"
    if neg == {-2}:
        return "openmpi", "send to MPI_PROC_NULL = -2"
    reading = _wildcard_reading(ranks, comms, comm_index, stride, call_names, diag)
    if reading is not None:
        return reading
    if stride_evidence is not None:
        return ("mpich" if stride == 4 else "openmpi"), "request stride"
    for d in ranks:
        world = d.cols["comm_handle"][d.cols["comm_size"] == len(ranks)]
        if world.size and np.any(world == _MPICH_WORLD):
            return "mpich", "MPICH MPI_COMM_WORLD handle"
    return "mpich", "default"


_HEADER_HINT = "add the line '# llamp mpi openmpi' or '# llamp mpi mpich' to a rank file's header"


def _send_rows(d: _RankData) -> np.ndarray:
    return kind_in(d.cols["kind"], (SEND, ISEND, SEND_INIT, SR_SEND))


def _messages_per_row(d: _RankData, stride: int) -> np.ndarray:
    """Messages each row sends or receives: 1, except a persistent ``*_init``, which counts
    the ``Start``/``Startall`` entries that start it (up to the next init at its address)."""
    kind = d.cols["kind"]
    out = np.ones(kind.size, np.int64)
    init = np.flatnonzero(kind_in(kind, (SEND_INIT, RECV_INIT)))
    if init.size == 0:
        return out
    out[init] = 0
    count = d.req_count.astype(np.int64)
    rows = np.repeat(np.arange(kind.size), count)
    addr = np.repeat(d.req_base, count) + d.req_offset * stride
    started = kind[rows] == START
    s_rows, s_addr = rows[started], addr[started]
    if s_rows.size == 0:
        return out
    # (address id, row) as one sortable key: the init a start refers to is the last one at the
    # same address before it
    _, ids = np.unique(np.concatenate((d.req_base[init], s_addr)), return_inverse=True)
    span = np.int64(kind.size + 1)
    init_key = ids[: init.size].astype(np.int64) * span + init
    start_key = ids[init.size :].astype(np.int64) * span + s_rows
    order = np.argsort(init_key, kind="stable")
    pos = np.searchsorted(init_key[order], start_key) - 1
    hit = pos >= 0
    hit[hit] = (init_key[order][pos[hit]] // span) == (start_key[hit] // span)
    np.add.at(out, init[order][pos[hit]], 1)
    return out


def _wildcard_reading(
    ranks: list[_RankData],
    comms: list[Communicator],
    comm_index: list[np.ndarray],
    stride: int,
    call_names: tuple[str, ...],
    diag: Diagnostics,
) -> tuple[str, str] | None:
    """The MPI library under which the trace's receives from −1/−2 make sends and receives
    balance, or ``None`` when no receive names a negative source (nothing to decide).

    −1 is ``MPI_ANY_SOURCE`` under Open MPI and ``MPI_PROC_NULL`` under MPICH, −2 the reverse
    (``MPI_ANY_TAG`` is −1 under both). A wildcard receive takes a message that no receive
    naming its source takes; a ``PROC_NULL`` receive takes none. So for every destination
    (communicator, rank in it), a reading is consistent when the sends to it minus the
    receives there that name a source (≥ 0) equal its receives from the reading's wildcard
    value, over the whole trace (persistent requests count once per start; sub-communicators
    of unknown membership are left out). Exactly one consistent reading decides; both or
    neither is ambiguous: an error naming the first such receive and the header that settles
    it (lenient: a warning, then the weaker hints).
    """
    recv_kinds = (RECV, IRECV, RECV_INIT, SR_RECV)
    if not any(
        np.any(
            kind_in(d.cols["kind"], recv_kinds) & ((d.cols["peer"] == -1) | (d.cols["peer"] == -2))
        )
        for d in ranks
    ):
        return None
    P = len(ranks)
    known = np.array([c.members is not None for c in comms], bool)
    slots = len(comms) * P
    # per destination slot (communicator, rank in it): what arrives, what is received
    keys: dict[str, list[np.ndarray]] = {"sent": [], "named": [], "m1": [], "m2": []}
    weights: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    first = None  # (rank data, row) of the first receive from a negative source
    for d, cidx in zip(ranks, comm_index, strict=True):
        kind, peer = d.cols["kind"], d.cols["peer"]
        csize, crank = d.cols["comm_size"], d.cols["comm_rank"]
        valid = (cidx >= 0) & known[np.maximum(cidx, 0)] & (crank >= 0) & (crank < csize)
        recv = valid & kind_in(kind, recv_kinds)
        negative = np.flatnonzero(recv & ((peer == -1) | (peer == -2)))
        if negative.size and first is None:
            first = (d, int(negative[0]))
        many = _messages_per_row(d, stride)
        base = cidx.astype(np.int64) * P
        send = valid & _send_rows(d) & (peer >= 0) & (peer < csize)
        for name, mask, slot in (
            ("sent", send, base + peer),
            ("named", recv & (peer >= 0), base + crank),
            ("m1", recv & (peer == -1), base + crank),
            ("m2", recv & (peer == -2), base + crank),
        ):
            keys[name].append(slot[mask])
            weights[name].append(many[mask])
    if first is None:  # the only ones are on communicators of unknown membership (absorbed)
        return None
    sent, named, from_m1, from_m2 = (
        np.bincount(np.concatenate(keys[k]), np.concatenate(weights[k]), minlength=slots).astype(
            np.int64
        )
        for k in ("sent", "named", "m1", "m2")
    )
    excess = sent - named
    openmpi = bool(np.array_equal(excess, from_m1))
    mpich = bool(np.array_equal(excess, from_m2))
    wild = {"openmpi": int(from_m1.sum()), "mpich": int(from_m2.sum())}
    null = {"openmpi": int(from_m2.sum()), "mpich": int(from_m1.sum())}
    if openmpi != mpich:
        flavour = "openmpi" if openmpi else "mpich"
        w, n = (-1, -2) if openmpi else (-2, -1)
        reason = (
            f"sends and receives balance only with MPI_ANY_SOURCE = {w}: {wild[flavour]} "
            f"receives from {w} are wildcards"
            + (f", {null[flavour]} from {n} are MPI_PROC_NULL" if null[flavour] else "")
        )
        return flavour, reason
    d, e = first
    call = call_names[int(d.cols["call"][e])] if len(call_names) else "receive"
    value = int(d.cols["peer"][e])
    if openmpi:
        why = "the trace's sends and receives balance under either reading"
    else:
        both_fail = np.flatnonzero((excess != from_m1) & (excess != from_m2))
        bad = int(both_fail[0]) if both_fail.size else int(np.flatnonzero(excess != from_m1)[0])
        comm, rank = divmod(bad, P)
        members = comms[comm].members or ()
        where = f"rank {members[rank] if rank < len(members) else rank}"
        if comm:
            where += f" of {comms[comm].name}"
        why = (
            f"the sends and receives balance under neither reading ({where}: "
            f"{int(sent[bad])} messages sent to it, {int(named[bad])} receives naming a "
            f"source, {int(from_m1[bad])} from -1, {int(from_m2[bad])} from -2)"
        )
    diag.problem(
        f"{call} from {value}: MPI_ANY_SOURCE or MPI_PROC_NULL? (-1 is MPI_ANY_SOURCE under "
        f"Open MPI and MPI_PROC_NULL under MPICH, -2 the reverse): {why}; {_HEADER_HINT}",
        d.path,
        int(d.cols["line"][e]),
    )
    return None


def _communicators(ranks: list[_RankData], P: int, diag: Diagnostics):
    """The communicator table and, per rank, each event's index into it."""
    comms = [Communicator("MPI_COMM_WORLD", tuple(range(P)))]
    unknown_index = None
    self_index: dict[int, int] = {}
    key_index: dict[tuple[tuple[int, ...], int], int] = {}
    per_rank = []
    world_members = tuple(range(P))
    for d in ranks:
        handle, crank, csize = d.cols["comm_handle"], d.cols["comm_rank"], d.cols["comm_size"]
        line = d.cols["line"]
        has_comm = kind_in(
            d.cols["kind"],
            (SEND, RECV, ISEND, IRECV, SEND_INIT, RECV_INIT, SR_SEND, SR_RECV, COLL, ICOLL),
        )
        out = np.full(handle.shape[0], -1, np.int32)
        # definitions: the k-th definition of a member list at this rank
        seen: dict[tuple[int, ...], int] = {}
        defs = []  # (line, handle, comm index)
        for def_line, h, members in d.comm_defs:
            if d.rank not in members:
                raise TraceError(
                    f"communicator line for handle {h} does not list this rank ({d.rank})",
                    path=d.path,
                    line=def_line,
                )
            if max(members) >= P:
                raise TraceError(
                    f"communicator line lists rank {max(members)} but the trace has {P} rank files",
                    path=d.path,
                    line=def_line,
                )
            k = seen.get(members, 0)
            seen[members] = k + 1
            key = (members, k)
            if key not in key_index:
                if members == world_members and k == 0:
                    key_index[key] = 0
                else:
                    key_index[key] = len(comms)
                    comms.append(Communicator(f"comm {len(comms)} (size {len(members)})", members))
            defs.append((def_line, h, key_index[key]))
        defined = np.zeros(handle.shape[0], bool)
        if defs:
            def_line_arr = np.array([x[0] for x in defs], np.int64)
            def_handle = np.array([x[1] for x in defs], np.int64)
            def_comm = np.array([x[2] for x in defs], np.int64)
            for h in np.unique(def_handle).tolist():
                sel = np.flatnonzero(def_handle == h)
                lines_h = def_line_arr[sel]
                ev = np.flatnonzero(has_comm & (handle == h))
                pos = np.searchsorted(lines_h, line[ev]) - 1
                ok = pos >= 0
                out[ev[ok]] = def_comm[sel][pos[ok]]
                defined[ev[ok]] = True
            idx = np.flatnonzero(defined)
            if idx.size:
                sizes = np.array([len(c.members) for c in comms], np.int64)[out[idx]]
                bad = np.flatnonzero(sizes != csize[idx])
                if bad.size:
                    e = int(idx[bad[0]])
                    raise TraceError(
                        f"communicator {handle[e]} has size {csize[e]} here but "
                        f"{sizes[bad[0]]} in its '# llamp comm' line",
                        path=d.path,
                        line=int(line[e]),
                    )
                my_pos = np.full(len(comms), -1, np.int64)
                for cid in np.unique(out[idx]).tolist():
                    my_pos[cid] = comms[cid].members.index(d.rank)
                pos_in = my_pos[out[idx]]
                bad = np.flatnonzero(pos_in != crank[idx])
                if bad.size:
                    e = int(idx[bad[0]])
                    raise TraceError(
                        f"this rank is rank {pos_in[bad[0]]} of communicator "
                        f"{handle[e]} per its '# llamp comm' line, but the call "
                        f"says {crank[e]}",
                        path=d.path,
                        line=int(line[e]),
                    )
        rest = has_comm & ~defined
        world = rest & (csize == P)
        out[world] = 0
        mismatch = np.flatnonzero(world & (crank != d.rank))
        if mismatch.size:
            e = int(mismatch[0])
            diag.note(
                "a world-sized communicator reports a rank that is not the world rank "
                "(taken as MPI_COMM_WORLD anyway; add '# llamp comm' lines if it is a "
                "reordered communicator)",
                f"{d.path}:{int(line[e])}",
                int(mismatch.size),
            )
        selfc = rest & (csize == 1)
        if np.any(selfc):
            if d.rank not in self_index:
                self_index[d.rank] = len(comms)
                comms.append(Communicator(f"MPI_COMM_SELF of rank {d.rank}", (d.rank,)))
            out[selfc] = self_index[d.rank]
        sub = rest & (csize != P) & (csize != 1)
        if np.any(sub):
            if unknown_index is None:
                unknown_index = len(comms)
                comms.append(Communicator("sub-communicator without membership", None))
            out[sub] = unknown_index
        per_rank.append(out)
    return comms, per_rank


def _finish_rank(d: _RankData, comm: np.ndarray, mpi: str, stride: int) -> dict[str, np.ndarray]:
    """Wildcards and PROC_NULL in the model's constants, request lists, final columns."""
    cols = d.cols
    kind = cols["kind"]
    peer = cols["peer"]
    tag = cols["tag"]
    any_source, proc_null = (-2, -1) if mpi == "mpich" else (-1, -2)
    recv_like = kind_in(kind, (RECV, IRECV, RECV_INIT, SR_RECV))
    send_like = kind_in(kind, (SEND, ISEND, SEND_INIT, SR_SEND))
    neg = peer < 0
    bad = np.flatnonzero(send_like & neg & (peer != proc_null))
    if bad.size:
        e = int(bad[0])
        raise TraceError(
            f"send to rank {peer[e]}, which is neither a rank nor MPI_PROC_NULL "
            f"({proc_null} under {mpi})",
            path=d.path,
            line=int(cols["line"][e]),
        )
    bad = np.flatnonzero(recv_like & neg & (peer != proc_null) & (peer != any_source))
    if bad.size:
        e = int(bad[0])
        raise TraceError(
            f"receive from rank {peer[e]}, which is neither a rank nor a wildcard",
            path=d.path,
            line=int(cols["line"][e]),
        )
    p2p = recv_like | send_like
    peer_out = np.where(p2p & (peer == proc_null), PROC_NULL, peer)
    peer_out = np.where(recv_like & (peer == any_source), ANY_SOURCE, peer_out)
    bad = np.flatnonzero(p2p & (tag < 0) & ~(recv_like & (tag == -1)))
    if bad.size:
        e = int(bad[0])
        raise TraceError(f"negative tag {tag[e]}", path=d.path, line=int(cols["line"][e]))
    tag_out = np.where(recv_like & (tag == -1), ANY_TAG, tag)
    # request lists: array base + offset·stride
    count = d.req_count.astype(np.int64)
    req_ids = np.repeat(d.req_base, count) + d.req_offset * stride
    lengths = np.zeros(kind.size, np.int64)
    for row, values in d.counts:
        lengths[row] = values.shape[0]
    cnt_values = (
        np.concatenate([values for _, values in d.counts]).astype(np.int64)
        if d.counts
        else _EMPTY_I64
    )
    return {
        "rank": np.full(kind.size, d.rank, np.int32),
        "line": cols["line"],
        "kind": kind,
        "call": cols["call"],
        "t_start_ns": cols["t_start_ns"],
        "t_end_ns": cols["t_end_ns"],
        "peer": peer_out.astype(np.int32),
        "tag": tag_out.astype(np.int32),
        "size": cols["size"],
        "comm": np.where(comm < 0, 0, comm).astype(np.int32),
        "root": cols["root"].astype(np.int32),
        "coll": cols["coll"].astype(np.int8),
        "req_count": count,
        "req_ids": req_ids,
        "cnt_count": lengths,
        "cnt_values": cnt_values,
    }


def _clocks(ranks: list[_RankData]) -> tuple[np.ndarray, np.ndarray, str]:
    P = len(ranks)
    offset = np.zeros(P)
    scale = np.ones(P)
    diffs = [d.clockdiff_init for d in ranks]
    if all(v is None for v in diffs):
        return offset, scale, "ends of MPI_Init taken as simultaneous (no clockdiff headers)"
    o0_i, o0_f = ranks[0].origin_us
    for r, d in enumerate(ranks):
        o_i, o_f = d.origin_us
        base_us = (o_i - o0_i) + (o_f - o0_f)
        init = d.clockdiff_init or 0.0
        final = d.clockdiff_final if d.clockdiff_final is not None else init
        offset[r] = (base_us + init) * 1000.0
        t0, t1 = d.t_init_rel_ns or 0.0, d.t_final_rel_ns
        if t1 is not None and t1 > t0 and final != init:
            slope = (final - init) * 1000.0 / (t1 - t0)
            scale[r] = 1.0 + slope
            offset[r] -= slope * t0
    if all((v or 0.0) == 0.0 for v in diffs):
        return offset, scale, "shared clock (all clockdiffs zero)"
    return offset, scale, "Init/Finalize clockdiff, linear drift"
