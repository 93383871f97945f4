"""Reader for SimGrid time-independent (TI) traces → :class:`~llamp.ingest.events.Trace`.

A TI trace is what SMPI writes with ``-trace-ti`` and what ``smpi_replay`` replays: one action per
line, ``<rank> <action> <args…>`` (``docs/formats.md``). It has no timestamps: the
computation between two MPI calls is the ``compute <flops>`` (and ``sleep <s>``) actions, which
this reader turns into time with the host speed ``flops_per_s`` (``--host-speed``, SimGrid's
notation ``1Gf``; :data:`DEFAULT_FLOPS_PER_S` = 1 Gf/s, the host speed of SimGrid's example
clusters, e.g. ``cluster_backbone.xml``). ``smpi_replay`` runs a compute action for
``flops / speed`` of the platform host it replays on, so that speed is what to give; to get the
measured time of the traced run back instead, give the ``smpi/host-speed`` it was traced with
(SMPI records ``flops = measured seconds × smpi/host-speed``; SimGrid's default there, 20 kf/s,
is a placeholder it warns about, and would make the shared 32-rank trace compute for 42 days
instead of 73 s). The speed is recorded in ``meta["flops_per_s"]`` and ``meta["host_speed"]``.
MPI calls take 0 ns in the trace time; their cost comes from the LogGPS model. The flops of
``reduce``/``allreduce``/``reducescatter`` are executed after the collective, as
``smpi_replay`` does.

Layouts (how SimGrid's replay maps ranks to files, ``smpirun -replay``):

- one file holding all ranks (lines of a rank in program order, ranks interleaved or in blocks);
- a *list file*: one trace path per line, line ``i`` holding rank ``i`` (what ``-trace-ti``
  writes as ``smpi_simgrid.txt``; paths are tried as written, relative to the list file's folder,
  then by file name in that folder); a single entry names a one-file trace;
- a folder of per-rank files ``<prefix><N>.<ext>`` (``ti_trace7.txt``, ``…_rank-7.txt``), file
  ``N`` holding rank ``N``; a file of such a folder stands for the folder.

In per-rank files the first column must be the file's rank (SimGrid ignores other lines with a
warning; here it is an error, lenient: dropped).

Actions (names are matched case-insensitively, so SimGrid 3.1x's ``Isend``, ``waitAll``,
``allReduce``, ``reduceScatter``, ``allToAllV``, ``sendRecv`` … work), with optional arguments
in brackets; sizes are element counts of the datatype ``dt`` (SimGrid datatype ids,
:data:`DATATYPE_SIZES`), which defaults to ``MPI_DOUBLE`` (8 B) when the rank's ``init`` has an
argument and to ``MPI_BYTE`` when it has none (SimGrid's MPE/TAU rule); ``P`` is the number of
ranks, collectives run on ``MPI_COMM_WORLD`` and roots are world ranks:

=============================================  ==============================================
``init [x]`` / ``finalize``                    INIT / FINALIZE
``compute <flops>``, ``sleep <s>``             computation (no event)
``send|isend <dst> <tag> <n> [dt]``            SEND / ISEND
``recv|irecv <src> <tag> <n> [dt]``            RECV / IRECV (``n ≤ 0``: size from the send)
``wait <src> <dst> <tag>``                     WAIT on the oldest pending request of that key
``waitall``                                    WAIT on all pending requests of the rank
``test <src> <dst> <tag>``                     absorbed (``MPI_Test`` is computation here)
``sendrecv <sn> <dst> <rn> <src> [sdt rdt]``   SR_SEND + SR_RECV, tag 0
``barrier``                                    barrier
``bcast <n> [root [dt]]``                      bcast
``reduce <n> <flops> [root [dt]]``             reduce
``allreduce <n> <flops> [dt]``                 allreduce
``alltoall <sn> <rn> [sdt [rdt]]``             alltoall (block ``sn·sdt``)
``alltoallv <sbuf> <sc×P> <rbuf> <rc×P> …``    alltoallv (column ``rc·rdt``)
``gather|scatter <sn> <rn> [root [sdt [rdt]]]`` gather / scatter
``allgather <sn> <rn> [sdt [rdt]]``            allgather (block ``rn·rdt``)
``gatherv <sn> <rc×P> [root [sdt [rdt]]]``     gatherv
``allgatherv <sn> <rc×P> [dt [displs…]]``      allgatherv (own block ``rc[me]·dt``)
``scatterv <sc×P> <rn> [root [sdt [rdt]]]``    scatterv
``reducescatter <rc×P> <flops> [dt]``          reduce_scatter
``comm_size``, ``comm_split``, ``comm_dup``,   absorbed (SimGrid's replay ignores them too; a
``location``                                   ``comm_size`` other than ``P`` is noted)
=============================================  ==============================================

Older files (SimGrid ≤ 3.19) have no tags and argument-less waits: ``send <dst> <n> [dt]``,
``wait`` (completes the most recent pending request, as that replay did). The variant is decided
per trace from the unambiguous lines (a 4-argument send or a 3-argument wait ⇒ tags; a
2-argument send or a bare wait ⇒ no tags); a trace with neither is read with tags. Wildcards are
SMPI's constants (``MPI_ANY_SOURCE`` −555, ``MPI_ANY_TAG`` −444, ``MPI_PROC_NULL`` −666).

Errors name file, line and reason: an unknown action, a missing or non-numeric argument, a rank
without lines. ``lenient=True`` turns them into counted warnings and drops the line.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from llamp.config import DEFAULT_HOST_SPEED_FLOPS, format_flop_rate
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
    SEND,
    SR_RECV,
    SR_SEND,
    WAIT,
    Communicator,
    Diagnostics,
    Events,
    Trace,
)

__all__ = [
    "ACTIONS",
    "DATATYPE_SIZES",
    "DEFAULT_FLOPS_PER_S",
    "find_trace_files",
    "is_simgrid",
    "read_simgrid",
    "trace_name",
]

#: Default host speed (flop/s) turning ``compute <flops>`` into time (see the module docstring).
DEFAULT_FLOPS_PER_S = DEFAULT_HOST_SPEED_FLOPS

#: Bytes of SimGrid's predefined datatypes by TI id (``Datatype::encode``, ids 0…59, LP64):
#: 0 DOUBLE, 1 INT, 2 CHAR, 3 SHORT, 4 LONG, 5 FLOAT, 6 BYTE, 7 LONG_LONG, … 59 COUNT.
DATATYPE_SIZES = np.array(
    [8, 4, 1, 2, 8, 4, 1, 8, 1, 1, 2, 4, 8, 8, 16, 4, 1, 1, 2, 4, 8, 1, 2, 4, 8, 8, 16, 32, 8, 8]
    + [8, 16, 16, 8, 8, 8, 16, 16, 4, 4, 8, 16, 8, 16, 16, 4, 2, 4, 8, 16, 32, 1, 8, 16, 32]
    + [0, 0, 1, 8, 8],
    dtype=np.int64,
)
_DOUBLE, _BYTE = 8, 1

# SMPI's MPI constants, as they appear in TI traces
_SMPI_ANY_SOURCE, _SMPI_ANY_TAG, _SMPI_PROC_NULL = -555, -444, -666

#: Placeholder size of a receive whose size the trace leaves to the matching send (``n ≤ 0``).
_SIZE_FROM_SEND = np.int64(1) << 60


#: Known actions, lower-case (see the module docstring for their arguments).
ACTIONS = frozenset(
    """init finalize compute sleep location comm_size comm_split comm_dup send isend recv irecv
    wait waitall test sendrecv barrier bcast reduce allreduce alltoall alltoallv gather scatter
    allgather gatherv allgatherv scatterv reducescatter""".split()
)

#: Largest count or flop value a line may give (beyond it int64 sizes would wrap).
_MAX_COUNT = float(1 << 53)
_NO_EVENT = frozenset({"compute", "sleep", "location", "comm_size", "comm_split", "comm_dup"})
_ACTION_LIST = tuple(sorted(ACTIONS))
_ACTION_CODE = {name: k for k, name in enumerate(_ACTION_LIST)}


# --------------------------------------------------------------------------- file discovery
_RANK_FILE_RE = re.compile(r"^(.*?)(\d+)(\.[A-Za-z0-9]+)?$")
_ACTION_LINE_RE = re.compile(rb"^\s*(\d+)\s+([A-Za-z_]+)\b")


def _first_line(path: Path, limit: int = 4096) -> bytes:
    try:
        with open(path, "rb") as handle:
            head = handle.read(limit)
    except OSError:
        return b""
    for line in head.splitlines():
        if line.strip() and not line.lstrip().startswith(b"#"):
            return line
    return b""


def _looks_like_actions(path: Path) -> bool:
    match = _ACTION_LINE_RE.match(_first_line(path))
    return bool(match) and match.group(2).decode().lower() in ACTIONS


def _list_entries(path: Path) -> list[Path] | None:
    """The trace files a list file names (``None`` if ``path`` is not a list file)."""
    try:
        if path.stat().st_size > 1 << 22:
            return None
        text = path.read_text(errors="replace")
    except OSError:
        return None
    names = [line.strip() for line in text.splitlines() if line.strip()]
    if not names or any("\x00" in name for name in names):
        return None
    out = []
    for i, name in enumerate(names):
        found = _resolve_entry(path.parent, name)
        if found is None:
            return None
        out.append(confine.check(found, named_in=path, line=i + 1))
    return out


def _resolve_entry(folder: Path, name: str) -> Path | None:
    for candidate in (Path(name), folder / name, folder / Path(name).name):
        try:
            if candidate.is_file():
                return candidate
        except OSError:  # a junk line too long to be a file name: not a list file
            return None
    return None


def _rank_files(folder: Path) -> dict[tuple[str, str], dict[int, Path]]:
    groups: dict[tuple[str, str], dict[int, Path]] = {}
    for entry in folder.iterdir():
        match = _RANK_FILE_RE.match(entry.name)
        if match and entry.is_file():
            key = (match.group(1), match.group(3) or "")
            groups.setdefault(key, {})[int(match.group(2))] = entry
    return groups


def find_trace_files(path: str | Path) -> list[tuple[Path, int | None]]:
    """The files of a TI trace with the rank each holds (``None``: the file holds all ranks).

    Raises :class:`~llamp.errors.InputError` when ``path`` is none of the layouts in the module
    docstring and :class:`TraceError` naming the missing file when per-rank files have gaps.
    """
    path = Path(path)
    if path.is_file():
        if _looks_like_actions(path):
            match = _RANK_FILE_RE.match(path.name)
            if match and _is_rank_set_member(path, match):
                return find_trace_files(path.parent)
            return [(path, None)]
        entries = _list_entries(path)
        if entries is None:
            raise InputError(
                f"{path}: neither SimGrid TI actions ('<rank> <action> …') nor a list of trace "
                "files"
            )
        if len(entries) == 1:
            return [(entries[0], None)]
        return [(entry, rank) for rank, entry in enumerate(entries)]
    if not path.is_dir():
        raise InputError(f"{path}: no such file or directory")
    groups = {
        key: ranks
        for key, ranks in _rank_files(path).items()
        if 0 in ranks and _looks_like_actions(ranks[0])
    }
    if len(groups) > 1:
        names = ", ".join(f"{p}<N>{s}" for p, s in sorted(groups))
        raise TraceError(
            f"several SimGrid traces in one folder ({names}); name one", path=str(path)
        )
    if groups:
        (prefix, suffix), ranks = next(iter(groups.items()))
        count = max(ranks) + 1
        missing = [r for r in range(count) if r not in ranks]
        if missing:
            raise TraceError(
                f"missing rank file {prefix}{missing[0]}{suffix} (have {len(ranks)} files for "
                f"ranks 0..{count - 1})",
                path=str(path),
            )
        return [(ranks[r], r) for r in range(count)]
    lists = [e for e in sorted(path.iterdir()) if e.is_file() and _list_entries(e)]
    singles = [e for e in sorted(path.iterdir()) if e.is_file() and _looks_like_actions(e)]
    if len(lists) == 1:
        return find_trace_files(lists[0])
    if len(singles) == 1 and not lists:
        return [(singles[0], None)]
    raise InputError(
        f"{path}: no single SimGrid TI trace here (found {len(singles)} action files and "
        f"{len(lists)} list files); name the trace file or list file"
    )


def _is_rank_set_member(path: Path, match: re.Match[str]) -> bool:
    """True if ``path`` is one of several ``<prefix><N><ext>`` files that start with rank N."""
    head = _ACTION_LINE_RE.match(_first_line(path))
    if head is None or int(head.group(1)) != int(match.group(2)):
        return False
    siblings = _rank_files(path.parent).get((match.group(1), match.group(3) or ""), {})
    return len(siblings) > 1 and 0 in siblings


def is_simgrid(path: str | Path) -> bool:
    """True if ``path`` is a TI trace file, a list of TI trace files, or a folder of rank files."""
    path = Path(path)
    try:
        if path.is_file():
            if _looks_like_actions(path):
                return True
            entries = _list_entries(path)
            return bool(entries) and _looks_like_actions(entries[0])
        if path.is_dir():
            find_trace_files(path)
            return True
    except (InputError, OSError):
        return False
    return False


# --------------------------------------------------------------------------- lines
@dataclass
class _Lines:
    """All action lines of the trace, in (rank, program) order, as parallel arrays/lists."""

    rank: np.ndarray
    line: np.ndarray
    file: np.ndarray
    action: list[str]
    args: list[list[str]]
    files: list[str]
    code: np.ndarray  # index into _ACTION_LIST, −1 for an unknown action
    nargs: np.ndarray


def _tokenize(files: list[tuple[Path, int | None]], diag: Diagnostics) -> tuple[_Lines, int]:
    ranks: list[int] = []
    lines: list[int] = []
    file_idx: list[int] = []
    actions: list[str] = []
    args: list[list[str]] = []
    names = [str(f) for f, _ in files]
    for k, (path, expected) in enumerate(files):
        try:
            text = path.read_bytes().decode("latin-1")
        except OSError as err:
            raise TraceError(f"cannot read ({err.strerror or err})", path=str(path)) from err
        for number, raw in enumerate(text.split("\n"), start=1):
            tokens = raw.split()
            if not tokens or tokens[0].startswith("#"):
                continue
            if len(tokens) < 2 or not tokens[0].isdigit():
                diag.problem(
                    f"expected '<rank> <action> <args…>', got {raw.strip()!r}", str(path), number
                )
                continue
            rank = int(tokens[0])
            if expected is not None and rank != expected:
                diag.problem(
                    f"line for rank {rank} in the file of rank {expected}: {raw.strip()!r}",
                    str(path),
                    number,
                )
                continue
            ranks.append(rank)
            lines.append(number)
            file_idx.append(k)
            actions.append(tokens[1].lower())
            args.append(tokens[2:])
    rank_arr = np.array(ranks, dtype=np.int64)
    if files[0][1] is not None:
        P = len(files)
    else:
        P = int(rank_arr.max()) + 1 if rank_arr.size else 0
        present = np.zeros(P, bool)
        present[rank_arr] = True
        if P and not present.all():
            missing = int(np.flatnonzero(~present)[0])
            raise TraceError(
                f"rank {missing} has no lines, but ranks up to {P - 1} do (a trace needs ranks "
                f"0..P-1)",
                path=names[0],
            )
    if P == 0:
        raise TraceError("no action lines", path=names[0])
    order = np.argsort(rank_arr, kind="stable")
    actions = [actions[i] for i in order.tolist()]
    args = [args[i] for i in order.tolist()]
    code = np.array([_ACTION_CODE.get(a, -1) for a in actions], dtype=np.int64)
    nargs = np.array([len(a) for a in args], dtype=np.int64)
    return (
        _Lines(
            rank_arr[order],
            np.array(lines, dtype=np.int32)[order],
            np.array(file_idx, dtype=np.int32)[order],
            actions,
            args,
            names,
            code,
            nargs,
        ),
        P,
    )


# --------------------------------------------------------------------------- argument parsing
class _Group:
    """The lines of one action with one argument count: numbers parsed into a float matrix."""

    def __init__(self, lines: _Lines, idx: np.ndarray, nargs: int, diag: Diagnostics):
        self.idx = idx
        self.nargs = nargs
        self.lines = lines
        rows = [lines.args[i] for i in idx.tolist()]
        try:
            self.values = np.array(rows, dtype=np.float64).reshape(idx.size, nargs)
        except ValueError:
            self.values = np.full((idx.size, nargs), np.nan)
            for j, row in enumerate(rows):
                for k, token in enumerate(row):
                    try:
                        self.values[j, k] = float(token)
                    except ValueError:
                        self.values[j, k] = np.nan
        bad = np.flatnonzero(~np.isfinite(self.values).all(axis=1)) if nargs else np.zeros(0, int)
        self.ok = np.ones(idx.size, bool)
        if bad.size:
            j = int(bad[0])
            k = int(np.flatnonzero(~np.isfinite(self.values[j]))[0])
            e = int(idx[j])
            diag.problem(
                f"{lines.action[e]}: argument {k + 1} ({rows[j][k]!r}) is not a number",
                lines.files[lines.file[e]],
                int(lines.line[e]),
                count=int(bad.size),
            )
            self.ok[bad] = False

    def int_col(self, k: int, what: str, diag: Diagnostics, minimum: int | None = 0) -> np.ndarray:
        col = self.values[:, k]
        huge = np.abs(col) > _MAX_COUNT  # would wrap in int64: never a silent small count
        out = np.rint(np.where(np.isfinite(col) & ~huge, col, 0)).astype(np.int64)
        self.nonnegative(col, what, diag, minimum=None)
        if minimum is not None:
            bad = np.flatnonzero(self.ok & (col < minimum))
            if bad.size:
                e = int(self.idx[bad[0]])
                diag.problem(
                    f"{self.lines.action[e]}: {what} {col[bad[0]]:g} is negative",
                    self.lines.files[self.lines.file[e]],
                    int(self.lines.line[e]),
                    count=int(bad.size),
                )
                self.ok[bad] = False
        return out

    def nonnegative(
        self, col: np.ndarray, what: str, diag: Diagnostics, minimum: float | None = 0.0
    ) -> None:
        """Report values of ``col`` below ``minimum`` or too large for a count as problems."""
        bad = (
            (np.abs(col) > _MAX_COUNT) if minimum is None else (col < minimum) | (col > _MAX_COUNT)
        )
        bad = np.flatnonzero(self.ok & bad)
        if bad.size:
            e = int(self.idx[bad[0]])
            diag.problem(
                f"{self.lines.action[e]}: {what} {col[bad[0]]:g} is out of range "
                f"(0..{_MAX_COUNT:g})",
                self.lines.files[self.lines.file[e]],
                int(self.lines.line[e]),
                count=int(bad.size),
            )
            self.ok[bad] = False

    def dtype(self, k: int, default: np.ndarray, diag: Diagnostics) -> np.ndarray:
        """Bytes per element of the datatype id in argument ``k`` (default where absent)."""
        if k >= self.nargs:
            return default
        ids = self.int_col(k, "datatype id", diag, minimum=None)
        bad = np.flatnonzero(self.ok & ((ids < 0) | (ids >= DATATYPE_SIZES.size)))
        if bad.size:
            e = int(self.idx[bad[0]])
            diag.problem(
                f"{self.lines.action[e]}: unknown SimGrid datatype id {ids[bad[0]]} "
                f"(known: 0..{DATATYPE_SIZES.size - 1})",
                self.lines.files[self.lines.file[e]],
                int(self.lines.line[e]),
                count=int(bad.size),
            )
            self.ok[bad] = False
        return DATATYPE_SIZES[np.clip(ids, 0, DATATYPE_SIZES.size - 1)]


@dataclass
class _Columns:
    """Per-line outputs, filled action by action (rows only for lines with ``kind ≥ 0``)."""

    n: int
    kind: np.ndarray = field(init=False)
    peer: np.ndarray = field(init=False)
    tag: np.ndarray = field(init=False)
    size: np.ndarray = field(init=False)
    root: np.ndarray = field(init=False)
    coll: np.ndarray = field(init=False)
    pre_ns: np.ndarray = field(init=False)
    post_ns: np.ndarray = field(init=False)
    wait_key: np.ndarray = field(init=False)  # (src, dst, tag) of wait lines, -1 = waitall/none
    counts: dict[int, np.ndarray] = field(default_factory=dict)  # line → byte counts (v-colls)
    sendrecv: list[np.ndarray] = field(default_factory=list)  # (line, src, bytes) receive halves

    def __post_init__(self) -> None:
        n = self.n
        self.kind = np.full(n, -1, np.int8)
        self.peer = np.zeros(n, np.int64)
        self.tag = np.zeros(n, np.int64)
        self.size = np.zeros(n, np.int64)
        self.root = np.full(n, -1, np.int64)
        self.coll = np.full(n, -1, np.int64)
        self.pre_ns = np.zeros(n)
        self.post_ns = np.zeros(n)
        self.wait_key = np.full((n, 3), -1, np.int64)


_USAGE = {
    "init": "init [datatype flag]",
    "finalize": "finalize",
    "compute": "compute <flops>",
    "sleep": "sleep <seconds>",
    "location": "location <file> <line>",
    "comm_size": "comm_size <P>",
    "comm_split": "comm_split …",
    "comm_dup": "comm_dup …",
    "send": "send <dst> <tag> <count> [datatype]",
    "isend": "isend <dst> <tag> <count> [datatype]",
    "recv": "recv <src> <tag> <count> [datatype]",
    "irecv": "irecv <src> <tag> <count> [datatype]",
    "wait": "wait <src> <dst> <tag>",
    "waitall": "waitall",
    "test": "test <src> <dst> <tag>",
    "sendrecv": "sendrecv <scount> <dst> <rcount> <src> [sdt rdt]",
    "barrier": "barrier",
    "bcast": "bcast <count> [root [datatype]]",
    "reduce": "reduce <count> <flops> [root [datatype]]",
    "allreduce": "allreduce <count> <flops> [datatype]",
    "alltoall": "alltoall <scount> <rcount> [sdt [rdt]]",
    "alltoallv": "alltoallv <sbuf> <scounts×P> <rbuf> <rcounts×P> [sdt rdt]",
    "gather": "gather <scount> <rcount> [root [sdt [rdt]]]",
    "scatter": "scatter <scount> <rcount> [root [sdt [rdt]]]",
    "allgather": "allgather <scount> <rcount> [sdt [rdt]]",
    "gatherv": "gatherv <scount> <rcounts×P> [root [sdt [rdt]]]",
    "allgatherv": "allgatherv <scount> <rcounts×P> [datatype [displs×P]]",
    "scatterv": "scatterv <scounts×P> <rcount> [root [sdt [rdt]]]",
    "reducescatter": "reducescatter <rcounts×P> <flops> [datatype]",
}


def _arity(action: str, P: int, tagged: bool) -> tuple[int, int]:
    """(mandatory, maximum) number of arguments of ``action`` for ``P`` ranks."""
    table = {
        "init": (0, 1),
        "finalize": (0, 0),
        "compute": (1, 1),
        "sleep": (1, 1),
        "location": (2, 2),
        "comm_size": (1, 1),
        "comm_split": (0, 1 << 30),
        "comm_dup": (0, 1 << 30),
        "send": (3, 4) if tagged else (2, 3),
        "isend": (3, 4) if tagged else (2, 3),
        "recv": (3, 4) if tagged else (2, 3),
        "irecv": (3, 4) if tagged else (2, 3),
        "wait": (3, 3) if tagged else (0, 0),
        "waitall": (0, 0),
        "test": (3, 3) if tagged else (0, 0),
        "sendrecv": (4, 6),
        "barrier": (0, 0),
        "bcast": (1, 3),
        "reduce": (2, 4),
        "allreduce": (2, 3),
        "alltoall": (2, 4),
        "alltoallv": (2 * P + 2, 2 * P + 4),
        "gather": (2, 5),
        "scatter": (2, 5),
        "allgather": (2, 4),
        "gatherv": (P + 1, P + 4),
        "allgatherv": (P + 1, 2 * P + 2),
        "scatterv": (P + 1, P + 4),
        "reducescatter": (P + 1, P + 2),
    }
    return table[action]


def _detect_tags(lines: _Lines) -> tuple[bool, str]:
    """Whether point-to-point actions carry tags (SimGrid ≥ 3.20) — see the module docstring."""
    code, nargs = lines.code, lines.nargs
    p2p = np.isin(code, [_ACTION_CODE[a] for a in ("send", "isend", "recv", "irecv")])
    waits = np.isin(code, [_ACTION_CODE["wait"], _ACTION_CODE["test"]])
    new = int(np.count_nonzero((p2p & (nargs == 4)) | (waits & (nargs == 3))))
    old = int(np.count_nonzero((p2p & (nargs == 2)) | (waits & (nargs == 0))))
    if new and old:
        return True, "mixed"
    if old:
        return False, "no tags (SimGrid ≤ 3.19)"
    return True, "tags" if new else "tags (assumed: no unambiguous line)"


def _p2p_peer(values: np.ndarray, recv_side: bool) -> np.ndarray:
    out = np.where(values == _SMPI_PROC_NULL, PROC_NULL, values)
    if recv_side:
        out = np.where(values == _SMPI_ANY_SOURCE, ANY_SOURCE, out)
    return out


def _parse(
    lines: _Lines, P: int, tagged: bool, flops_per_s: float, diag: Diagnostics
) -> tuple[_Columns, np.ndarray]:
    """Decode every line action by action (vectorised per action and argument count)."""
    n = len(lines.action)
    cols = _Columns(n)
    ns_per_flop = 1e9 / flops_per_s
    code = lines.code
    nargs = lines.nargs
    keep = np.ones(n, bool)

    # default datatype per rank: init with an argument → MPI_DOUBLE, without → MPI_BYTE
    default_dt = np.full(P, _DOUBLE, np.int64)
    init_idx = np.flatnonzero(code == _ACTION_CODE["init"])
    has_init = np.zeros(P, bool)
    first_init = {}
    for e in init_idx.tolist():
        first_init.setdefault(int(lines.rank[e]), e)
    for r, e in first_init.items():
        has_init[r] = True
        default_dt[r] = _DOUBLE if nargs[e] > 0 else _BYTE
    for r in np.flatnonzero(~has_init).tolist():
        first = int(np.searchsorted(lines.rank, r))
        diag.problem(
            f"rank {r} has no 'init' action (datatype default assumed MPI_DOUBLE)",
            lines.files[lines.file[first]] if first < n else lines.files[0],
            int(lines.line[first]) if first < n else None,
        )
    dflt = default_dt[lines.rank]

    unknown = np.flatnonzero(code < 0)
    if unknown.size:
        e = int(unknown[0])
        diag.problem(
            f"unknown SimGrid action {lines.action[e]!r} (known: {', '.join(sorted(ACTIONS))})",
            lines.files[lines.file[e]],
            int(lines.line[e]),
            count=int(unknown.size),
        )
        keep[unknown] = False

    by_code = np.argsort(code, kind="stable")
    bounds = np.searchsorted(code[by_code], np.arange(len(_ACTION_LIST) + 1))
    for k_action, action in enumerate(_ACTION_LIST):
        sel = by_code[bounds[k_action] : bounds[k_action + 1]]
        if sel.size == 0:
            continue
        lo, hi = _arity(action, P, tagged)
        bad = sel[(nargs[sel] < lo) | (nargs[sel] > hi)]
        if bad.size:
            e = int(bad[0])
            got = int(nargs[e])
            expect = f"{lo}" if lo == hi else f"{lo} to {hi}"
            diag.problem(
                f"{action} has {got} argument{'s' if got != 1 else ''}, expected {expect} "
                f"({_USAGE[action]}{', P = ' + str(P) if 'P' in _USAGE[action] else ''})"
                f"{' (missing argument?)' if got < lo else ''}: "
                f"{' '.join([str(lines.rank[e]), action, *lines.args[e]])!r}",
                lines.files[lines.file[e]],
                int(lines.line[e]),
                count=int(bad.size),
            )
            keep[bad] = False
            sel = sel[(nargs[sel] >= lo) & (nargs[sel] <= hi)]
        if action in ("comm_split", "comm_dup", "location"):
            continue
        for k in np.unique(nargs[sel]).tolist():
            idx = sel[nargs[sel] == k]
            group = _Group(lines, idx, k, diag)
            _decode(action, group, cols, dflt[idx], P, tagged, ns_per_flop, lines, diag)
            keep[idx[~group.ok]] = False
    cols.kind[~keep] = -1
    cols.pre_ns[~keep] = 0.0
    cols.post_ns[~keep] = 0.0
    return cols, keep


def _decode(
    action: str,
    g: _Group,
    c: _Columns,
    dflt: np.ndarray,
    P: int,
    tagged: bool,
    ns_per_flop: float,
    lines: _Lines,
    diag: Diagnostics,
) -> None:
    idx = g.idx
    v = g.values
    if action == "init":
        c.kind[idx] = INIT
    elif action == "finalize":
        c.kind[idx] = FINALIZE
    elif action == "compute":
        g.nonnegative(v[:, 0], "flops", diag)
        c.pre_ns[idx] = np.maximum(v[:, 0], 0.0) * ns_per_flop
    elif action == "sleep":
        g.nonnegative(v[:, 0], "seconds", diag)
        c.pre_ns[idx] = np.maximum(v[:, 0], 0.0) * 1e9
    elif action == "comm_size":
        size = g.int_col(0, "communicator size", diag)
        odd = np.flatnonzero(g.ok & (size != P))
        if odd.size:
            e = int(idx[odd[0]])
            diag.note(
                f"comm_size differs from the number of ranks ({P}); collectives are replayed "
                "on MPI_COMM_WORLD, as SimGrid does",
                f"{lines.files[lines.file[e]]}:{int(lines.line[e])}",
                int(odd.size),
            )
    elif action in ("send", "isend", "recv", "irecv"):
        recv = action in ("recv", "irecv")
        peer = g.int_col(0, "peer", diag, minimum=None)
        if tagged:
            tag = g.int_col(1, "tag", diag, minimum=None)
            count_at, dt_at = 2, 3
        else:
            tag = np.zeros(idx.size, np.int64)
            count_at, dt_at = 1, 2
        g.nonnegative(v[:, count_at], "count", diag, minimum=None)  # no wrap-around
        count = np.rint(np.where(np.abs(v[:, count_at]) > _MAX_COUNT, 0, v[:, count_at]))
        count = count.astype(np.int64)
        size = count * g.dtype(dt_at, dflt, diag)
        if recv:
            size = np.where(count <= 0, _SIZE_FROM_SEND, size)
        else:
            neg = np.flatnonzero(g.ok & (v[:, count_at] < 0))
            if neg.size:
                e = int(idx[neg[0]])
                diag.problem(
                    f"{action}: negative count {v[neg[0], count_at]:g}",
                    lines.files[lines.file[e]],
                    int(lines.line[e]),
                    count=int(neg.size),
                )
                g.ok[neg] = False
        bad_peer = (peer < 0) & (peer != _SMPI_PROC_NULL)
        if recv:
            bad_peer &= peer != _SMPI_ANY_SOURCE
        bad_peer |= peer >= P
        bad_tag = (tag < 0) & ~(recv & (tag == _SMPI_ANY_TAG))
        for mask, what in ((bad_peer, "peer"), (bad_tag, "tag")):
            bad = np.flatnonzero(g.ok & mask)
            if bad.size:
                e = int(idx[bad[0]])
                value = peer[bad[0]] if what == "peer" else tag[bad[0]]
                diag.problem(
                    f"{action}: {what} {value} is not a rank of 0..{P - 1}"
                    if what == "peer"
                    else f"{action}: negative tag {value}",
                    lines.files[lines.file[e]],
                    int(lines.line[e]),
                    count=int(bad.size),
                )
                g.ok[bad] = False
        c.kind[idx] = {"send": SEND, "isend": ISEND, "recv": RECV, "irecv": IRECV}[action]
        c.peer[idx] = _p2p_peer(peer, recv)
        c.tag[idx] = np.where(recv & (tag == _SMPI_ANY_TAG), ANY_TAG, tag)
        c.size[idx] = size
    elif action in ("wait", "test"):
        if action == "wait":
            c.kind[idx] = WAIT
            if tagged:
                key = np.stack([g.int_col(k, "argument", diag, minimum=None) for k in range(3)], 1)
                c.wait_key[idx] = key
            else:
                c.wait_key[idx] = -2  # the most recent pending request
    elif action == "waitall":
        c.kind[idx] = WAIT
    elif action == "sendrecv":
        scount = g.int_col(0, "send count", diag)
        dst = g.int_col(1, "destination", diag, minimum=None)
        rcount = g.int_col(2, "receive count", diag, minimum=None)
        src = g.int_col(3, "source", diag, minimum=None)
        sdt = g.dtype(4, dflt, diag)
        rdt = g.dtype(5, sdt if g.nargs > 4 else dflt, diag)
        bad = np.flatnonzero(g.ok & ((dst >= P) | (src >= P)))
        if bad.size:
            e = int(idx[bad[0]])
            diag.problem(
                f"sendrecv: peer outside 0..{P - 1}",
                lines.files[lines.file[e]],
                int(lines.line[e]),
                count=int(bad.size),
            )
            g.ok[bad] = False
        # two rows per line: the receive half is stored in the "sendrecv" side table
        c.kind[idx] = SR_SEND
        c.peer[idx] = _p2p_peer(dst, False)
        c.size[idx] = scount * sdt
        c.sendrecv.append(
            np.stack(
                [idx, _p2p_peer(src, True), np.where(rcount <= 0, _SIZE_FROM_SEND, rcount * rdt)],
                axis=1,
            )
        )
    else:
        _decode_collective(action, g, c, dflt, P, ns_per_flop, lines, diag)


def _decode_collective(
    action: str,
    g: _Group,
    c: _Columns,
    dflt: np.ndarray,
    P: int,
    ns_per_flop: float,
    lines: _Lines,
    diag: Diagnostics,
) -> None:
    idx = g.idx
    v = g.values
    me = lines.rank[idx]
    root = np.zeros(idx.size, np.int64)
    size = np.zeros(idx.size, np.int64)
    counts: np.ndarray | None = None

    def root_at(k: int) -> np.ndarray:
        if k >= g.nargs:
            return np.zeros(idx.size, np.int64)
        r = g.int_col(k, "root", diag)
        bad = np.flatnonzero(g.ok & (r >= P))
        if bad.size:
            e = int(idx[bad[0]])
            diag.problem(
                f"{action}: root {r[bad[0]]} is not a rank of 0..{P - 1}",
                lines.files[lines.file[e]],
                int(lines.line[e]),
                count=int(bad.size),
            )
            g.ok[bad] = False
        return np.clip(r, 0, P - 1)

    def counts_at(k: int) -> np.ndarray:
        block = np.rint(v[:, k : k + P]).astype(np.int64)
        bad = np.flatnonzero(g.ok & np.any(block < 0, axis=1))
        if bad.size:
            e = int(idx[bad[0]])
            diag.problem(
                f"{action}: negative count in the per-rank counts",
                lines.files[lines.file[e]],
                int(lines.line[e]),
                count=int(bad.size),
            )
            g.ok[bad] = False
        return block

    if action == "barrier":
        pass
    elif action == "bcast":
        root = root_at(1)
        size = g.int_col(0, "count", diag) * g.dtype(2, dflt, diag)
    elif action in ("reduce", "allreduce"):
        size = g.int_col(0, "count", diag) * g.dtype(3 if action == "reduce" else 2, dflt, diag)
        if action == "reduce":
            root = root_at(2)
        g.nonnegative(v[:, 1], "flops", diag)
        c.post_ns[idx] = np.maximum(v[:, 1], 0.0) * ns_per_flop
    elif action in ("alltoall", "allgather"):
        sdt = g.dtype(2, dflt, diag)
        rdt = g.dtype(3, sdt if g.nargs > 2 else dflt, diag)
        if action == "alltoall":
            size = g.int_col(0, "send count", diag) * sdt
        else:
            size = g.int_col(1, "receive count", diag) * rdt
    elif action in ("gather", "scatter"):
        root = root_at(2)
        sdt = g.dtype(3, dflt, diag)
        rdt = g.dtype(4, sdt if g.nargs > 3 else dflt, diag)
        s_bytes = g.int_col(0, "send count", diag) * sdt
        r_bytes = g.int_col(1, "receive count", diag) * rdt
        at_root = me == root
        if action == "gather":
            size = np.where(at_root, r_bytes, s_bytes)
        else:
            size = np.where(at_root, s_bytes, r_bytes)
    elif action == "alltoallv":
        rc = counts_at(P + 2)
        sdt = g.dtype(2 * P + 2, dflt, diag)
        rdt = g.dtype(2 * P + 3, sdt if g.nargs > 2 * P + 2 else dflt, diag)
        counts = rc * rdt[:, None]
    elif action == "gatherv":
        rc = counts_at(1)
        root = root_at(P + 1)
        sdt = g.dtype(P + 2, dflt, diag)
        rdt = g.dtype(P + 3, sdt if g.nargs > P + 2 else dflt, diag)
        own = g.int_col(0, "send count", diag) * sdt
        size = np.where(me == root, rc[np.arange(idx.size), root] * rdt, own)
    elif action == "allgatherv":
        rc = counts_at(1)
        dt = g.dtype(P + 1, dflt, diag)
        size = rc[np.arange(idx.size), me] * dt
    elif action == "scatterv":
        sc = counts_at(0)
        root = root_at(P + 1)
        sdt = g.dtype(P + 2, dflt, diag)
        rdt = g.dtype(P + 3, sdt if g.nargs > P + 2 else dflt, diag)
        own = g.int_col(P, "receive count", diag) * rdt
        size = np.where(me == root, sc[np.arange(idx.size), root] * sdt, own)
    elif action == "reducescatter":
        rc = counts_at(0)
        dt = g.dtype(P + 1, dflt, diag)
        counts = rc * dt[:, None]
        g.nonnegative(v[:, P], "flops", diag)
        c.post_ns[idx] = np.maximum(v[:, P], 0.0) * ns_per_flop
    op = {"reducescatter": "reduce_scatter"}.get(action, action)
    c.kind[idx] = COLL
    c.coll[idx] = COLL_CODE[op]
    c.root[idx] = root
    c.size[idx] = size
    if counts is not None:
        for j, e in enumerate(idx.tolist()):
            c.counts[e] = counts[j]


# --------------------------------------------------------------------------- requests
def _requests(
    lines: _Lines, cols: _Columns, keep: np.ndarray, diag: Diagnostics
) -> tuple[np.ndarray, np.ndarray]:
    """Request ids per line (count per line, ids in line order): Isend/Irecv get a fresh id
    (their line index); a wait takes the oldest pending request with its (src, dst, tag), an
    old-style bare wait the newest, ``waitall`` all pending ones (in posting order). Only
    request lines are walked, on Python lists (no numpy scalar per line)."""
    kind = cols.kind
    relevant = np.flatnonzero(keep & ((kind == ISEND) | (kind == IRECV) | (kind == WAIT)))
    rank_l = lines.rank[relevant].tolist()
    kind_l = kind[relevant].tolist()
    peer_l = cols.peer[relevant].tolist()
    tag_l = cols.tag[relevant].tolist()
    wk = cols.wait_key[relevant]
    key_l = list(zip(wk[:, 0].tolist(), wk[:, 1].tolist(), wk[:, 2].tolist(), strict=True))
    key_of: dict[int, tuple[int, int, int]] = {}
    pending: dict[tuple[int, int, int], deque[int]] = {}
    order: dict[int, None] = {}  # pending ids in posting order (insertion-ordered dict)
    count = [0] * relevant.size
    ids: list[int] = []
    current = -1
    unmatched_first = -1
    unmatched = 0
    for j, e in enumerate(relevant.tolist()):
        r = rank_l[j]
        if r != current:
            pending.clear()
            order.clear()
            current = r
        k = kind_l[j]
        if k == ISEND or k == IRECV:
            key = (r, peer_l[j], tag_l[j]) if k == ISEND else (peer_l[j], r, tag_l[j])
            key_of[e] = key
            pending.setdefault(key, deque()).append(e)
            order[e] = None
            ids.append(e)
            count[j] = 1
            continue
        src, dst, tag = key_l[j]
        if src == -1 and dst == -1 and tag == -1:  # waitall
            done = list(order)
            pending.clear()
            order.clear()
        else:
            if src == -2:  # bare wait: the newest pending request
                done = [next(reversed(order))] if order else []
            else:
                src = ANY_SOURCE if src == _SMPI_ANY_SOURCE else src
                tag = ANY_TAG if tag == _SMPI_ANY_TAG else tag
                queue = pending.get((src, dst, tag))
                done = [queue[0]] if queue else []
            for d in done:
                order.pop(d, None)
                pending[key_of[d]].remove(d)
        if not done:
            unmatched += 1
            if unmatched_first < 0:
                unmatched_first = e
        ids.extend(done)
        count[j] = len(done)
    if unmatched:
        e = unmatched_first
        diag.note(
            "wait actions without a pending request (completed by an earlier test, or no "
            "matching isend/irecv): kept as computation",
            f"{lines.files[lines.file[e]]}:{int(lines.line[e])}",
            unmatched,
        )
    req_count = np.zeros(len(lines.action), np.int64)
    req_count[relevant] = count
    return req_count, np.array(ids, np.int64)


# --------------------------------------------------------------------------- whole trace
def read_simgrid(
    path: str | Path,
    *,
    flops_per_s: float = DEFAULT_FLOPS_PER_S,
    lenient: bool = False,
    progress: bool = False,
) -> Trace:
    """Read a SimGrid TI trace (file, list file or folder) into a :class:`Trace`.

    ``flops_per_s`` is the host speed (flop/s): compute actions become ``flops / flops_per_s``
    of calc (module docstring). Raises :class:`TraceError` naming file,
    line and reason for malformed input; ``lenient`` drops bad lines with a counted warning.
    """
    if not flops_per_s > 0 or not np.isfinite(flops_per_s):
        raise InputError(f"flops_per_s must be a positive number, got {flops_per_s!r}")
    files = find_trace_files(path)
    diag = Diagnostics(lenient=lenient)
    lines, P = _tokenize(files, diag)
    tagged, variant = _detect_tags(lines)
    if variant == "mixed":
        diag.note("point-to-point actions with and without tags in one trace; read with tags", None)
    cols, keep = _parse(lines, P, tagged, flops_per_s, diag)
    req_count, req_ids = _requests(lines, cols, keep, diag)

    # trace time: per rank, the running sum of computation before each line (MPI calls take
    # 0 ns); summed per rank so that a rank's clock keeps full precision
    advance = cols.pre_ns + cols.post_ns
    clock = np.empty(advance.size)
    bounds = np.searchsorted(lines.rank, np.arange(P + 1))
    for r in range(P):
        a, b = int(bounds[r]), int(bounds[r + 1])
        run = np.cumsum(advance[a:b])
        clock[a:b] = run - cols.post_ns[a:b]  # after the line's own compute, before its flops

    # rows: one per event line, two for sendrecv (SR_SEND then SR_RECV)
    is_row = keep & (cols.kind >= 0)
    sr = np.concatenate(cols.sendrecv) if cols.sendrecv else np.zeros((0, 3), np.int64)
    sr = sr[is_row[sr[:, 0]]]
    reps = is_row.astype(np.int64)
    reps[sr[:, 0]] = 2
    row_line = np.repeat(np.arange(len(lines.action)), reps)
    second = np.zeros(row_line.size, bool)
    if sr.size:
        first_row = np.cumsum(reps) - reps
        second[first_row[sr[:, 0]] + 1] = True
    kind = cols.kind[row_line].copy()
    peer = cols.peer[row_line].copy()
    size = cols.size[row_line].copy()
    if sr.size:
        pos = np.flatnonzero(second)
        lookup = dict(zip(sr[:, 0].tolist(), range(sr.shape[0]), strict=True))
        k = np.array([lookup[int(x)] for x in row_line[pos]], np.int64)
        kind[pos] = SR_RECV
        peer[pos] = sr[k, 1]
        size[pos] = sr[k, 2]
    present = np.unique(lines.code[row_line]) if row_line.size else np.zeros(0, np.int64)
    call_names = [_ACTION_LIST[k] for k in present.tolist()]
    remap = np.zeros(len(_ACTION_LIST) + 1, np.int16)
    remap[present] = np.arange(present.size)
    call = remap[lines.code[row_line]]
    rq = req_count[row_line] * ~second
    cnt_count = np.zeros(row_line.size, np.int64)
    cnt_values: list[np.ndarray] = []
    if cols.counts:
        row_of_line = np.full(len(lines.action), -1, np.int64)
        row_of_line[row_line[~second]] = np.flatnonzero(~second)
        for e in sorted(cols.counts):
            if row_of_line[e] >= 0:
                cnt_count[row_of_line[e]] = cols.counts[e].size
                cnt_values.append(cols.counts[e])
    events = Events.from_columns(
        rank=lines.rank[row_line],
        line=lines.line[row_line],
        kind=kind,
        call=call,
        t_start_ns=clock[row_line],
        t_end_ns=clock[row_line],
        peer=peer,
        tag=cols.tag[row_line] * ~second,
        size=size,
        comm=np.zeros(row_line.size, np.int32),
        root=cols.root[row_line],
        coll=cols.coll[row_line],
        req_ptr=np.concatenate(([0], np.cumsum(rq))),
        req_ids=req_ids,
        cnt_ptr=np.concatenate(([0], np.cumsum(cnt_count))),
        cnt_values=np.concatenate(cnt_values) if cnt_values else None,
    )
    _check_finalize(lines, events, P, diag)
    rank_files = (
        tuple(lines.files[0] for _ in range(P))
        if files[0][1] is None
        else tuple(str(f) for f, _ in files)
    )
    meta: dict[str, Any] = {
        "tracer": "SimGrid time-independent trace",
        "flops_per_s": float(flops_per_s),
        "host_speed": format_flop_rate(float(flops_per_s)),
        "ti_variant": variant,
        "time_model": "calc = compute flops / flops_per_s (+ sleep seconds); MPI calls 0 ns",
        "clock_alignment": "all ranks start at 0 at 'init' (no timestamps in TI traces)",
    }
    return Trace(
        num_ranks=P,
        events=events,
        calls=tuple(call_names) if call_names else ("init",),
        comms=(Communicator("MPI_COMM_WORLD", tuple(range(P))),),
        files=rank_files,
        format="simgrid",
        clock_offset_ns=np.zeros(P),
        clock_scale=np.ones(P),
        diagnostics=diag,
        meta=meta,
    )


def trace_name(path: str | Path) -> str:
    """The trace's default run name: a list file or a one-file trace is named by its stem
    (several list files may share one folder), a folder or a rank file standing for its folder
    by the folder."""
    path = Path(path).resolve()
    if path.is_file():
        match = _RANK_FILE_RE.match(path.name)
        if not (_looks_like_actions(path) and match and _is_rank_set_member(path, match)):
            return path.stem
        path = path.parent
    return path.name


def _check_finalize(lines: _Lines, events: Events, P: int, diag: Diagnostics) -> None:
    bounds = events.rank_bounds(P)
    for r in range(P):
        a, b = int(bounds[r]), int(bounds[r + 1])
        fin = np.flatnonzero(events.kind[a:b] == FINALIZE)
        if fin.size == 0:
            last = np.flatnonzero(lines.rank == r)
            e = int(last[-1]) if last.size else 0
            diag.problem(
                f"rank {r} has no 'finalize' action (truncated trace?)",
                lines.files[lines.file[e]],
                int(lines.line[e]),
            )
