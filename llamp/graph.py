"""The execution graph (LLAMP §II-A, docs/model.md §Execution graph): columnar, one numpy row per vertex / edge.

Vertices are ``calc`` (local computation of ``cost_ns``), ``send`` and ``recv`` (point-to-point
operations of ``size`` bytes with ``peer`` and ``tag``). Edges are ``requires`` (dst starts after
src finishes), ``irequires`` (dst starts after src starts) and ``message`` (send → matched recv).

A collective charged with an analytic model instead of being expanded into messages
(Dimemas, Thakur–Gropp: :mod:`llamp.ingest.collective_models`) is one ``coll`` vertex per member.
Its members share ``tag`` (the instance); ``peer`` is the root's rank (member 0's for unrooted
ops), ``size`` the bytes the member contributes, and ``cost_ns`` a constant part of the cost
(0 unless a reduction cost is charged). The instance finishes, at every member, its cost
``latency_terms · L + byte_terms · G + cost_ns`` after the last member entered it. The terms
of every instance are in ``meta["collective_costs"]`` (:meth:`ExecutionGraph.collective_terms`)
so they survive ``.npz`` files, the store and subgraphs unchanged.

Vertex ids are positions in the columns. The vertices of one rank are stored contiguously
(ranks in ascending order); within a rank, the order is the source's order (program order for
traces, file order for GOAL). Nothing here is a Python object per vertex: 10^7 vertices fit in
a few hundred MB.
"""

from __future__ import annotations

import hmac
import io
import json
import mmap
import os
import weakref
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from llamp import checks
from llamp.errors import GraphError, InputError
from llamp.seal import SEAL_MEMBER, Digest, Sealer, key

CALC, SEND, RECV, COLL = 0, 1, 2, 3
KIND_NAMES = ("calc", "send", "recv", "coll")

#: ``meta`` key of the per-instance cost terms of ``coll`` vertices.
COLLECTIVE_COSTS = "collective_costs"

REQUIRES, IREQUIRES, MESSAGE = 0, 1, 2
EDGE_KIND_NAMES = ("requires", "irequires", "message")

#: Vertex columns and their types. ``size`` and ``tag`` are int32 when every value fits and
#: int64 otherwise (:func:`narrow_integers`): never a changed number.
_VERTEX_COLUMNS = {
    "rank": np.int32,
    "kind": np.int8,
    "cost_ns": np.float64,
    "size": np.int64,
    "peer": np.int32,
    "tag": np.int64,
}
_EDGE_COLUMNS = {"src": np.int64, "dst": np.int64, "kind": np.int8}
#: The array fields of :class:`ExecutionGraph` but ``label`` (an object column in memory):
#: the columns a saved graph maps back and a pass over the graph may release after use.
ARRAY_FIELDS = (
    "rank",
    "kind",
    "cost_ns",
    "size",
    "peer",
    "tag",
    "edge_src",
    "edge_dst",
    "edge_kind",
    "t_trace_ns",
    "cpu",
    "nic",
)

#: Vertex ids (``edge_src``, ``edge_dst``) are int32 below this many vertices, int64 above:
#: with the headroom, event ids ``2v + 1`` and the lowering's counts fit in int32 too.
INDEX32_VERTICES = 1 << 30

#: Version of the graph file layout (:meth:`ExecutionGraph.save`), in its ``llamp_file`` member.
#: 3: edge ends int32 below :data:`INDEX32_VERTICES`, ``size``/``tag`` int32 when they fit (2:
#: all int64; still read, and its validation stamp still trusted: the checks are the same).
GRAPH_FILE_VERSION = 3
_TRUSTED_VERSIONS = (2, 3)
_STAMP = "llamp_file"
#: Ranks a graph file may declare beyond one per vertex (per-rank arrays are allocated from it).
_MAX_EMPTY_RANKS = 1 << 20
_I32 = np.iinfo(np.int32)


def index_dtype(num_vertices: int) -> type:
    """The type of vertex ids in a graph of ``num_vertices`` vertices."""
    return np.int32 if num_vertices < INDEX32_VERTICES else np.int64


def narrow_integers(values: Any) -> np.ndarray:
    """An integer column as int32 when every value fits, else int64 (contiguous).

    An int32 input is kept as it is (a memory-mapped column is not copied); anything else is
    first read as int64, as before, so the numbers are those of the wide column.
    """
    column = np.asarray(values)
    if column.dtype == np.int32:
        return np.ascontiguousarray(column)
    column = np.ascontiguousarray(column, dtype=np.int64)
    if column.size == 0 or (column.min() >= _I32.min and column.max() <= _I32.max):
        return column.astype(np.int32)
    return column


def _index_column(values: Any, num_vertices: int) -> np.ndarray:
    """Edge ends as :func:`index_dtype`; an id outside ``0..num_vertices-1`` keeps int64 so
    that validation reports it as it is (a narrowing cast would wrap it silently)."""
    dtype = index_dtype(num_vertices)
    column = np.asarray(values)
    if column.dtype == dtype:
        return np.ascontiguousarray(column)
    column = np.ascontiguousarray(column, dtype=np.int64)
    if dtype is np.int64 or (column.size and (column.min() < 0 or column.max() >= num_vertices)):
        return column
    return column.astype(dtype)


class NpzMembers:
    """Read-only access to the arrays of an uncompressed ``.npz`` (``np.savez``): each member is
    memory-mapped, and its CRC-32 is checked over that mapping before the array is handed out,
    so a damaged file is an error, never a changed number.

    A member listed in the file's seal (:mod:`llamp.seal`) is checked against its keyed digest
    instead: a match proves it is what this installation wrote (:meth:`sealed`); a mismatch
    falls back to the CRC (damage is an error; a member changed with a fresh CRC is read, but
    not sealed).

    The check reads the member once, in place: no copy into the process (``zlib.crc32`` runs over
    the mapped pages, with the GIL released for the whole member, so a thread setting up numba
    meanwhile runs on the other core: :mod:`llamp.lp.jit`). Afterwards the member's pages are
    dropped from the process's resident set (``MADV_DONTNEED``; they stay in the page cache), so
    a process pays memory only for the pages it then touches."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            with zipfile.ZipFile(self.path) as archive:
                infos = archive.infolist()
        except (OSError, zipfile.BadZipFile, ValueError) as err:
            raise InputError(f"{self.path}: not a llamp graph file ({err})") from err
        self._infos = {i.filename[:-4]: i for i in infos if i.filename.endswith(".npy")}
        self._maps: dict[str, weakref.ref] = {}
        self._secret = key()
        self._digests: dict[str, str] = {}
        self._sealed: set[str] = set()
        self.file_id: str | None = None
        if self._secret is not None and SEAL_MEMBER in self._infos:
            seal = self.json(SEAL_MEMBER)
            members = seal.get("members") if isinstance(seal, dict) else None
            file_id = seal.get("file") if isinstance(seal, dict) else None
            if isinstance(members, dict) and _is_file_id(file_id):
                self.file_id = file_id
                self._digests = {str(k): str(v) for k, v in members.items()}

    def sealed(self, names: Any) -> bool:
        """Whether every member in ``names`` was read and matched its keyed digest."""
        return self.file_id is not None and all(name in self._sealed for name in names)

    def __contains__(self, name: str) -> bool:
        return name in self._infos

    def names(self) -> list[str]:
        return list(self._infos)

    def array(self, name: str) -> np.ndarray:
        """Member ``name`` as a read-only array (memory-mapped when stored uncompressed)."""
        info = self._infos.get(name)
        if info is None:
            raise InputError(f"{self.path}: not a llamp graph file (missing {name})")
        try:
            with open(self.path, "rb") as f:
                if info.compress_type != zipfile.ZIP_STORED:
                    with zipfile.ZipFile(f) as archive, archive.open(info) as member:
                        return np.lib.format.read_array(member, allow_pickle=False)
                return self._mapped(f, name, info)
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as err:
            raise InputError(f"{self.path}: damaged llamp graph file ({err})") from err

    def _mapped(self, f, name: str, info: zipfile.ZipInfo) -> np.ndarray:
        """Map the stored member ``info``, check its CRC-32 on the mapping, parse its ``.npy``
        header from the mapping and return the array viewing it."""
        f.seek(info.header_offset)
        local = f.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise ValueError("bad local header")
        start = info.header_offset + 30 + int.from_bytes(local[26:28], "little")
        start += int.from_bytes(local[28:30], "little")
        end = start + info.file_size
        if info.file_size == 0 or end > os.fstat(f.fileno()).st_size:
            raise ValueError(f"{info.filename} is truncated")
        base = start - start % mmap.ALLOCATIONGRANULARITY
        region = mmap.mmap(f.fileno(), end - base, offset=base, access=mmap.ACCESS_READ)
        member = memoryview(region)[start - base : end - base]
        try:
            if self._matches_seal(name, member):
                self._sealed.add(name)
            elif zlib.crc32(member) != info.CRC:
                raise ValueError(f"{info.filename}: CRC mismatch")
            header = io.BytesIO(member[: min(len(member), _NPY_HEADER_MAX)])
            version = np.lib.format.read_magic(header)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = read_header(header)
            offset = header.tell()
        finally:
            member.release()
            _drop_pages(region)
        if dtype.hasobject:
            raise ValueError("object arrays are not allowed")
        count = int(np.prod(shape, dtype=np.int64))
        if count * dtype.itemsize > info.file_size - offset:
            raise ValueError(f"{name}: array larger than its member")
        if count == 0:
            empty = np.zeros(shape, dtype=dtype, order="F" if fortran else "C")
            empty.flags.writeable = False
            return empty
        flat = np.frombuffer(region, dtype=dtype, count=count, offset=start - base + offset)
        self._maps[name] = weakref.ref(region)
        return flat.reshape(shape, order="F" if fortran else "C")

    def _matches_seal(self, name: str, member: memoryview) -> bool:
        expected = self._digests.get(name)
        if expected is None or self._secret is None or self.file_id is None:
            return False
        digest = Digest(self._secret, self.file_id, name)
        digest.update(member)
        return hmac.compare_digest(digest.hexdigest(), expected)

    def release(self, names: Any = None) -> None:
        """Drop the pages of the mapped members ``names`` (all by default) from this process's
        resident set (``MADV_DONTNEED``): they stay in the page cache, and the next access
        maps them again without reading the disk. After a full pass that only checks an
        array (the lowering's consistency checks), the process does not keep it resident."""
        for name in self._maps if names is None else names:
            ref = self._maps.get(name)
            region = None if ref is None else ref()
            if region is not None and not region.closed:
                _drop_pages(region)

    def json(self, name: str) -> Any:
        """A member holding UTF-8 JSON as bytes."""
        try:
            return json.loads(bytes(self.array(name)).decode())
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
            raise InputError(f"{self.path}: damaged llamp graph file ({name}: {err})") from err


def _is_file_id(value: Any) -> bool:
    return (
        isinstance(value, str) and len(value) == 32 and all(c in "0123456789abcdef" for c in value)
    )


#: Bytes of a member that hold its ``.npy`` header at most (format 2/3: 4-byte length; numpy
#: writes a few hundred bytes; this bound only limits what the parser is shown).
_NPY_HEADER_MAX = 1 << 16


def _drop_pages(region: mmap.mmap) -> None:
    """``MADV_DONTNEED`` on a read-only file mapping: its pages leave the resident set and come
    back from the page cache on the next access (best effort where the call is missing)."""
    if hasattr(mmap, "MADV_DONTNEED"):
        try:
            region.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):  # pragma: no cover - best effort
            pass


class _Tee:
    """A writable member that also feeds a :class:`llamp.seal.Digest` what is written."""

    def __init__(self, member, digest) -> None:
        self._member, self._digest = member, digest

    def write(self, data) -> int:
        self._digest.update(data)
        return self._member.write(data)


def write_npy(
    archive: zipfile.ZipFile,
    name: str,
    array: Any,
    *,
    force_zip64: bool = True,
    sealer: Sealer | None = None,
) -> None:
    """Add ``array`` to ``archive`` as the member ``<name>.npy``, byte for byte as ``np.savez``
    writes it, but from the array's own memory.

    ``np.lib.format.write_array`` hands a zip member the data in 16 MiB ``tobytes`` copies, and
    each copy is a fresh allocation whose pages the kernel faults in and zeroes (saving the
    10^6-vertex stencil with its event graph, 178 MB: a copy of every byte and ~45,000 page
    faults). Here a C-contiguous array is written in one call, whose CRC and write release the
    GIL; any other array goes through numpy's writer (an object array is refused, as by
    :class:`NpzMembers`)."""
    array = np.asanyarray(array)
    header = _npy_header(array)
    digest = None if sealer is None else sealer.digest(name)
    with archive.open(f"{name}.npy", "w", force_zip64=force_zip64) as member:
        out = member if digest is None else _Tee(member, digest)
        if header is None:
            np.lib.format.write_array(out, array, allow_pickle=False)
        else:
            out.write(header)
            out.write(memoryview(array.reshape(-1).view(np.uint8)))
    if sealer is not None:
        sealer.add(name, digest)


def write_seal(archive: zipfile.ZipFile, sealer: Sealer) -> None:
    """The ``llamp_seal`` member: the digests of the members ``sealer`` saw (none without a
    key)."""
    document = sealer.document()
    if document is not None:
        data = np.frombuffer(json.dumps(document).encode(), dtype=np.uint8)
        write_npy(archive, SEAL_MEMBER, data, force_zip64=False)


def _npy_header(array: np.ndarray) -> bytes | None:
    """The ``.npy`` header ``np.lib.format.write_array`` writes for ``array`` (format 1.0), or
    None where its data cannot be written as the bytes of its memory."""
    if not array.flags.c_contiguous or array.dtype.hasobject:
        return None
    if array.dtype.kind not in "biufcmMSUV":  # e.g. numpy's variable-width StringDType
        return None
    out = io.BytesIO()
    try:
        header = np.lib.format.header_data_from_array_1_0(array)
        np.lib.format.write_array_header_1_0(out, header)
    except ValueError:  # too long for format 1.0: numpy picks the version
        return None
    return out.getvalue()


def _label_column(values: Any) -> np.ndarray | None:
    """Labels as an object array, or kept as read (a fixed-width string array, e.g. mapped from
    a graph file: converting 10^7 labels to Python strings would cost seconds and memory)."""
    if values is None:
        return None
    if isinstance(values, np.ndarray) and values.dtype.kind == "U":
        return values
    return np.asarray(values, dtype=object)


def _stream_column(values: Any) -> np.ndarray | None:
    """A ``cpu``/``nic`` column as int16, or ``None`` when absent or all zero (one per rank)."""
    if values is None:
        return None
    column = np.asarray(values)
    if column.size and not np.issubdtype(column.dtype, np.integer):
        raise GraphError(f"cpu/nic numbers must be integers, got {column.dtype}")
    if column.size and (column.max() > np.iinfo(np.int16).max):
        raise GraphError(f"cpu/nic number {column.max()} is too large (at most 32767)")
    column = np.ascontiguousarray(column, dtype=np.int16)
    return column if column.size and column.any() else None


@dataclass(frozen=True)
class GraphSummary:
    """Summary statistics of an execution graph (``llamp info``)."""

    name: str
    ranks: int
    vertices: int
    calcs: int
    sends: int
    recvs: int
    colls: int
    messages: int
    bytes: int
    edges: int
    calc_ns_total: float
    calc_ns_per_rank: list[float]
    cpus: int = 1  # CPU streams (GOAL's cpu) of the rank that has the most
    nics: int = 1  # NICs (GOAL's nic) of the rank that has the most

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ranks": self.ranks,
            "vertices": self.vertices,
            "calcs": self.calcs,
            "sends": self.sends,
            "recvs": self.recvs,
            "colls": self.colls,
            "messages": self.messages,
            "bytes": self.bytes,
            "edges": self.edges,
            "calc_ns_total": self.calc_ns_total,
            "calc_ns_per_rank": self.calc_ns_per_rank,
            "cpus": self.cpus,
            "nics": self.nics,
        }


@dataclass(eq=False)
class ExecutionGraph:
    """A columnar MPI execution graph; see the module docstring for the model.

    Construct through :meth:`from_arrays` (which validates) or a reader. ``meta`` holds the
    name, source format and files, ingest time and collective algorithm choices.
    """

    num_ranks: int
    rank: np.ndarray
    kind: np.ndarray
    cost_ns: np.ndarray
    size: np.ndarray
    peer: np.ndarray
    tag: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_kind: np.ndarray
    t_trace_ns: np.ndarray | None = None
    label: np.ndarray | None = None
    cpu: np.ndarray | None = None
    nic: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    #: The graph file this graph was loaded from (its lowered event graphs live there too).
    source: Path | None = field(default=None, compare=False, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_arrays(
        cls,
        num_ranks: int,
        *,
        rank: Any,
        kind: Any,
        cost_ns: Any,
        size: Any,
        peer: Any,
        tag: Any,
        edge_src: Any,
        edge_dst: Any,
        edge_kind: Any,
        t_trace_ns: Any = None,
        label: Any = None,
        cpu: Any = None,
        nic: Any = None,
        meta: dict[str, Any] | None = None,
        validate: bool = True,
        source: Path | None = None,
    ) -> ExecutionGraph:
        """Build a graph from array-likes, casting to the canonical dtypes, and validate it.

        Compact columns: edge ends are int32 below :data:`INDEX32_VERTICES` vertices, ``size``
        and ``tag`` int32 when every value fits (else int64); arrays already of their type
        (memory-mapped from a graph file) are used as they are, not copied.

        ``cpu`` / ``nic`` (optional, one small integer per vertex) name the CPU stream and the
        NIC of a rank that a vertex runs on (GOAL's ``cpu``/``nic``); ``None`` — or a column of
        zeros, which is stored as ``None`` — is one CPU and one NIC per rank.
        """
        rank = np.ascontiguousarray(rank, dtype=np.int32)
        n = int(rank.shape[0]) if rank.ndim == 1 else 0
        graph = cls(
            num_ranks=int(num_ranks),
            rank=rank,
            kind=np.ascontiguousarray(kind, dtype=np.int8),
            cost_ns=np.ascontiguousarray(cost_ns, dtype=np.float64),
            size=narrow_integers(size),
            peer=np.ascontiguousarray(peer, dtype=np.int32),
            tag=narrow_integers(tag),
            edge_src=_index_column(edge_src, n),
            edge_dst=_index_column(edge_dst, n),
            edge_kind=np.ascontiguousarray(edge_kind, dtype=np.int8),
            t_trace_ns=None if t_trace_ns is None else np.ascontiguousarray(t_trace_ns, np.float64),
            label=_label_column(label),
            cpu=_stream_column(cpu),
            nic=_stream_column(nic),
            meta=dict(meta or {}),
            source=source,
        )
        if validate:
            graph.validate()
        return graph

    # ------------------------------------------------------------------ basic views
    @property
    def num_vertices(self) -> int:
        return int(self.rank.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edge_src.shape[0])

    @property
    def name(self) -> str:
        return str(self.meta.get("name", "graph"))

    def messages(self) -> tuple[np.ndarray, np.ndarray]:
        """(send vertex ids, recv vertex ids) of every message edge, in edge order."""
        mask = self.edge_kind == MESSAGE
        return self.edge_src[mask], self.edge_dst[mask]

    def streams(self, name: str) -> np.ndarray:
        """The ``cpu`` or ``nic`` column, zeros when the graph has one CPU / NIC per rank."""
        column = getattr(self, name)
        return np.zeros(self.num_vertices, np.int16) if column is None else column

    def rank_bounds(self) -> np.ndarray:
        """``bounds[r]:bounds[r+1]`` is the vertex-id range of rank ``r``."""
        counts = np.bincount(self.rank, minlength=self.num_ranks)
        return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)

    def describe_vertex(self, v: int) -> str:
        """``rank 3 vertex 17 (send 8b to 2, label l5)`` for error messages."""
        v = int(v)
        k = int(self.kind[v])
        what = KIND_NAMES[k] if 0 <= k < len(KIND_NAMES) else f"kind {k}"
        if k == CALC:
            what += f" {self.cost_ns[v]:g}ns"
        elif k == SEND:
            what += f" {self.size[v]}b to {self.peer[v]} tag {self.tag[v]}"
        elif k == RECV:
            what += f" {self.size[v]}b from {self.peer[v]} tag {self.tag[v]}"
        elif k == COLL:
            op = self._collective_ops().get(int(self.tag[v]), "collective")
            what += f" {op} instance {self.tag[v]}, {self.size[v]}b"
        text = f"rank {self.rank[v]} vertex {v} ({what}"
        if self.label is not None:
            text += f", label {self.label[v]}"
        return text + ")"

    # ------------------------------------------------------------------ invariants
    def check_shapes(self) -> None:
        """Every column has one row per vertex / edge (cheap: no data is read)."""
        n = self.num_vertices
        for name in _VERTEX_COLUMNS:
            column = getattr(self, name)
            if column.shape != (n,):
                raise GraphError(f"vertex column {name} has shape {column.shape}, expected ({n},)")
        for name in ("t_trace_ns", "label", "cpu", "nic"):
            column = getattr(self, name)
            if column is not None and column.shape != (n,):
                raise GraphError(f"vertex column {name} has shape {column.shape}, expected ({n},)")
        m = self.num_edges
        for name in ("edge_src", "edge_dst", "edge_kind"):
            if getattr(self, name).shape != (m,):
                raise GraphError(f"edge column {name} does not have {m} rows")
        if self.num_ranks < 1:
            raise GraphError(f"a graph needs at least one rank, got {self.num_ranks}")

    def check_ranges(self) -> None:
        """What a kernel indexes or adds up without looking (one pass per column,
        :mod:`llamp.checks`): shapes, ranks in ``0..num_ranks-1`` and contiguous, known vertex
        and edge kinds, edge ends in ``0..n-1``, costs finite and ≥ 0, sizes ≥ 0, peers in
        range. A graph that passes cannot crash a kernel or feed it a NaN; :meth:`validate`
        adds the rest. A defect found is then located by a masked search (the error path)."""
        self.check_shapes()
        n = self.num_vertices
        m = self.num_edges
        for name in ("cpu", "nic"):
            column = getattr(self, name)
            if column is not None and n and checks.bounds(column)[0] < 0:
                v = int(np.argmin(column))
                raise GraphError(f"negative {name} number {column[v]}: {self.describe_vertex(v)}")
        if n == 0:
            return
        rank, cost, size, peer = self.rank, self.cost_ns, self.size, self.peer
        ends = (self.edge_src, self.edge_dst) if m else ()
        jobs = [
            lambda: checks.first_descent(rank),
            lambda: checks.bounds(self.kind),
            lambda: checks.first_not_finite_nonnegative(cost),
            lambda: checks.bounds(size),
            lambda: checks.bounds(peer),
            *(lambda end=end: checks.bounds(end) for end in ends),
            *([lambda: checks.bounds(self.edge_kind)] if m else []),
        ]
        descent, kinds, not_finite, sizes, peers, *edges = checks.together(jobs, 5 * n + 3 * m)
        # nondecreasing: the first and last rank are its bounds
        if descent != -1 or rank[0] < 0 or rank[-1] >= self.num_ranks:
            bad = np.flatnonzero((rank < 0) | (rank >= self.num_ranks))
            if bad.size:
                raise GraphError(
                    f"vertex {bad[0]} belongs to rank {rank[bad[0]]}, "
                    f"outside 0..{self.num_ranks - 1}"
                )
            raise GraphError(
                f"vertices of each rank must be contiguous: {self.describe_vertex(descent)}"
            )
        low, high = kinds
        if low < CALC or high > COLL:
            bad = np.flatnonzero((self.kind < CALC) | (self.kind > COLL))
            raise GraphError(f"vertex {bad[0]} has unknown kind {self.kind[bad[0]]}")
        if not_finite != -1:
            costly = (self.kind == CALC) | (self.kind == COLL)
            bad = np.flatnonzero(costly & ~((cost >= 0.0) & (cost < np.inf)))
            if bad.size:
                raise GraphError(f"negative, infinite or NaN cost: {self.describe_vertex(bad[0])}")
        if sizes[0] < 0:
            bad = np.flatnonzero((self.kind != CALC) & (size < 0))
            if bad.size:
                raise GraphError(f"negative message size: {self.describe_vertex(bad[0])}")
        low, high = peers
        if low < 0 or high >= self.num_ranks:
            bad = np.flatnonzero((self.kind != CALC) & ((peer < 0) | (peer >= self.num_ranks)))
            if bad.size:
                raise GraphError(
                    f"peer outside 0..{self.num_ranks - 1} (unresolved wildcard?): "
                    f"{self.describe_vertex(bad[0])}"
                )
        if m:
            for end, (low, high) in zip(ends, edges, strict=False):
                if low < 0 or high >= n:
                    bad = np.flatnonzero((end < 0) | (end >= n))
                    raise GraphError(f"edge {bad[0]} refers to vertex {end[bad[0]]} of {n}")
            low, high = edges[-1]
            if low < REQUIRES or high > MESSAGE:
                bad = np.flatnonzero((self.edge_kind < REQUIRES) | (self.edge_kind > MESSAGE))
                raise GraphError(f"edge {bad[0]} has unknown kind {self.edge_kind[bad[0]]}")

    def validate(self) -> None:
        """Check the invariants of docs/model.md §Execution graph; raise :class:`GraphError` naming rank and vertex.

        Acyclicity is checked on the start/finish event graph (``llamp.lp.event_graph``), which the
        engines build anyway; here: :meth:`check_ranges`, self loops, edges within a rank,
        message matching, collective instances.
        """
        self.check_ranges()
        if self.num_vertices == 0 or self.num_edges == 0:
            self._validate_messages()
            self._validate_collectives()
            self.__dict__["_valid"] = True
            return
        bad = np.flatnonzero(self.edge_src == self.edge_dst)
        if bad.size:
            raise GraphError(f"self loop on {self.describe_vertex(self.edge_src[bad[0]])}")
        local = self.edge_kind != MESSAGE
        cross = local & (self.rank[self.edge_src] != self.rank[self.edge_dst])
        bad = np.flatnonzero(cross)
        if bad.size:
            e = bad[0]
            raise GraphError(
                f"{EDGE_KIND_NAMES[self.edge_kind[e]]} edge joins two ranks: "
                f"{self.describe_vertex(self.edge_src[e])} → {self.describe_vertex(self.edge_dst[e])}"
            )
        self._validate_messages()
        self._validate_collectives()
        self.__dict__["_valid"] = True

    def _validate_messages(self) -> None:
        sends, recvs = self.messages()
        comm = (self.kind == SEND) | (self.kind == RECV)
        if sends.size:
            wrong = (self.kind[sends] != SEND) | (self.kind[recvs] != RECV)
            if wrong.any():
                e = int(np.flatnonzero(wrong)[0])
                raise GraphError(
                    f"message edge must join a send to a recv: "
                    f"{self.describe_vertex(sends[e])} → {self.describe_vertex(recvs[e])}"
                )
            mismatch = (
                (self.size[sends] != self.size[recvs])
                | (self.peer[sends] != self.rank[recvs])
                | (self.peer[recvs] != self.rank[sends])
                | (self.tag[sends] != self.tag[recvs])
            )
            if mismatch.any():
                e = int(np.flatnonzero(mismatch)[0])
                raise GraphError(
                    "message joins a send and a recv whose size, peer or tag differ: "
                    f"{self.describe_vertex(sends[e])} → {self.describe_vertex(recvs[e])}"
                )
        degree = np.zeros(self.num_vertices, dtype=np.int64)
        np.add.at(degree, sends, 1)
        np.add.at(degree, recvs, 1)
        bad = np.flatnonzero(comm & (degree != 1))
        if bad.size:
            v = int(bad[0])
            state = "unmatched" if degree[v] == 0 else f"matched {degree[v]} times"
            raise GraphError(f"{state}: {self.describe_vertex(v)}")

    def _validate_collectives(self) -> None:
        colls = np.flatnonzero(self.kind == COLL)
        if colls.size == 0:
            return
        tags, lat, byt = self.collective_terms()
        where = np.searchsorted(tags, self.tag[colls])
        known = where < tags.size
        known[known] &= tags[where[known]] == self.tag[colls[known]]
        if not known.all():
            v = colls[np.flatnonzero(~known)[0]]
            raise GraphError(
                f"collective vertex without cost terms in meta[{COLLECTIVE_COSTS!r}]: "
                f"{self.describe_vertex(v)}"
            )
        keys = np.stack([self.tag[colls], self.rank[colls].astype(np.int64)], axis=1)
        order = np.lexsort(keys.T[::-1])
        twice = np.flatnonzero(np.all(keys[order][1:] == keys[order][:-1], axis=1))
        if twice.size:
            v = colls[order[twice[0] + 1]]
            raise GraphError(
                "a rank enters one collective instance twice (it would wait for itself): "
                f"{self.describe_vertex(v)}"
            )

    def collective_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(instance tags ascending, latency terms, byte terms) of the analytic collectives.

        Empty arrays for a graph without ``coll`` vertices. Raises :class:`GraphError` when
        ``meta["collective_costs"]`` is malformed.
        """
        table = self.meta.get(COLLECTIVE_COSTS)
        if not table:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
        try:
            tags = np.asarray(table["tag"], dtype=np.int64)
            lat = np.asarray(table["latency_terms"], dtype=np.float64)
            byt = np.asarray(table["byte_terms"], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as err:
            raise GraphError(f"meta[{COLLECTIVE_COSTS!r}] is malformed: {err}") from err
        if not (tags.shape == lat.shape == byt.shape) or tags.ndim != 1:
            raise GraphError(f"meta[{COLLECTIVE_COSTS!r}]: tag and term lists differ in length")
        if not (
            np.all(np.isfinite(lat))
            and np.all(lat >= 0)
            and np.all(np.isfinite(byt))
            and np.all(byt >= 0)
        ):
            raise GraphError(f"meta[{COLLECTIVE_COSTS!r}]: cost terms must be finite and ≥ 0")
        order = np.argsort(tags, kind="stable")
        tags, lat, byt = tags[order], lat[order], byt[order]
        if tags.size > 1 and np.any(tags[1:] == tags[:-1]):
            raise GraphError(f"meta[{COLLECTIVE_COSTS!r}] lists an instance twice")
        return tags, lat, byt

    def _collective_ops(self) -> dict[int, str]:
        table = self.meta.get(COLLECTIVE_COSTS) or {}
        return dict(zip(table.get("tag", []), table.get("op", []), strict=False))

    # ------------------------------------------------------------------ statistics
    def summary(self) -> GraphSummary:
        """Ranks, vertices by kind, messages, bytes and calc time (total and per rank)."""
        calc = self.kind == CALC
        per_rank = np.bincount(
            self.rank[calc], weights=self.cost_ns[calc], minlength=self.num_ranks
        )
        sends, _ = self.messages()
        return GraphSummary(
            name=self.name,
            ranks=self.num_ranks,
            vertices=self.num_vertices,
            calcs=int(calc.sum()),
            sends=int((self.kind == SEND).sum()),
            recvs=int((self.kind == RECV).sum()),
            colls=int((self.kind == COLL).sum()),
            messages=int(sends.size),
            bytes=int(self.size[sends].sum()),
            edges=self.num_edges,
            calc_ns_total=float(per_rank.sum()),
            calc_ns_per_rank=[float(x) for x in per_rank],
            cpus=self._streams_per_rank("cpu"),
            nics=self._streams_per_rank("nic"),
        )

    def _streams_per_rank(self, name: str) -> int:
        """The most distinct ``cpu``/``nic`` numbers any rank uses (1 without the column)."""
        column = getattr(self, name)
        if column is None or self.num_vertices == 0:
            return 1
        pairs = np.unique(self.rank.astype(np.int64) * 65536 + column)
        return int(np.bincount(pairs // 65536).max())

    # ------------------------------------------------------------------ subgraphs
    def subgraph(self, keep: np.ndarray, *, name: str | None = None) -> ExecutionGraph:
        """The graph induced by the vertex mask ``keep``.

        A message whose partner is dropped cannot be evaluated, so its send/recv is turned into
        a zero-cost calc (the dependency structure of the kept rank stays intact). Ranks are
        kept with their ids so results stay comparable.
        """
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (self.num_vertices,):
            raise InputError("subgraph mask must have one entry per vertex")
        sends, recvs = self.messages()
        new_id = np.full(self.num_vertices, -1, dtype=np.int64)
        new_id[keep] = np.arange(int(keep.sum()))
        kind = self.kind.copy()
        cost = self.cost_ns.copy()
        orphan_send = keep[sends] & ~keep[recvs]
        orphan_recv = keep[recvs] & ~keep[sends]
        for orphans in (sends[orphan_send], recvs[orphan_recv]):
            kind[orphans] = CALC
            cost[orphans] = 0.0
        edge_keep = keep[self.edge_src] & keep[self.edge_dst]
        meta = dict(self.meta)
        meta["name"] = name or f"{self.name}[subgraph]"
        meta["parent"] = self.name
        return ExecutionGraph.from_arrays(
            self.num_ranks,
            rank=self.rank[keep],
            kind=kind[keep],
            cost_ns=cost[keep],
            size=np.where(kind == CALC, 0, self.size)[keep],
            peer=np.where(kind == CALC, 0, self.peer)[keep],
            tag=np.where(kind == CALC, 0, self.tag)[keep],
            edge_src=new_id[self.edge_src[edge_keep]],
            edge_dst=new_id[self.edge_dst[edge_keep]],
            edge_kind=self.edge_kind[edge_keep],
            t_trace_ns=None if self.t_trace_ns is None else self.t_trace_ns[keep],
            label=None if self.label is None else self.label[keep],
            cpu=None if self.cpu is None else self.cpu[keep],
            nic=None if self.nic is None else self.nic[keep],
            meta=meta,
        )

    # ------------------------------------------------------------------ persistence
    def save(
        self,
        path: str | Path,
        *,
        extra: dict[str, np.ndarray] | None = None,
        sealer: Sealer | None = None,
    ) -> Path:
        """Write an uncompressed ``.npz`` (fast: ~1 GB/s); metadata as JSON inside it.

        ``extra`` arrays are stored beside the columns (the lowered event graphs of
        :mod:`llamp.lp.lowered`). Every member is sealed (:mod:`llamp.seal`); a caller that
        passes its ``sealer`` appends more members and writes the seal itself.
        """
        path = Path(path)
        arrays: dict[str, np.ndarray] = {name: getattr(self, name) for name in _VERTEX_COLUMNS}
        arrays.update(
            edge_src=self.edge_src,
            edge_dst=self.edge_dst,
            edge_kind=self.edge_kind,
            num_ranks=np.array(self.num_ranks),
            meta=np.frombuffer(json.dumps(self.meta, default=str).encode(), dtype=np.uint8),
        )
        if self.t_trace_ns is not None:
            arrays["t_trace_ns"] = self.t_trace_ns
        if self.label is not None:  # an object column as text; a text column as it is
            arrays["label"] = self.label.astype(str, copy=False)
        for name in ("cpu", "nic"):
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        # A lazy load skips the invariant checks only for a graph that passed them, in a file
        # this installation sealed: the stamp alone is the file vouching for itself.
        stamp = {"version": GRAPH_FILE_VERSION, "validated": self.__dict__.get("_valid", False)}
        arrays[_STAMP] = np.frombuffer(json.dumps(stamp).encode(), dtype=np.uint8)
        arrays.update(extra or {})
        own_seal = sealer is None
        sealer = Sealer() if sealer is None else sealer
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")  # writers may race
        try:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
                for name, array in arrays.items():
                    write_npy(archive, name, array, sealer=sealer)
                if own_seal:
                    write_seal(archive, sealer)
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)
        return path

    @classmethod
    def load(cls, path: str | Path, *, validate: bool = True, lazy: bool = False) -> ExecutionGraph:
        """Read a graph written by :meth:`save`.

        ``lazy``: memory-map the columns instead of reading them. Either way, the invariant
        checks are skipped (but for :meth:`check_ranges`) only for a file this installation
        sealed after validating its graph (:mod:`llamp.seal`): a process that only needs the
        stored event graph then reads each column once, for its digest.
        """
        path = Path(path)
        graph = cls._load_mapped(path, validate=validate)
        if lazy:
            return graph
        for name in ARRAY_FIELDS:  # read into memory: the file may change after this
            column = getattr(graph, name)
            if column is not None:
                setattr(graph, name, np.array(column))
        if graph.label is not None:
            graph.label = graph.label.astype(object)
        return graph

    @classmethod
    def _load_mapped(cls, path: Path, *, validate: bool) -> ExecutionGraph:
        members = NpzMembers(path)
        stamp = members.json(_STAMP) if _STAMP in members else {}
        if not isinstance(stamp, dict):
            stamp = {}
        missing = [k for k in (*_VERTEX_COLUMNS, "edge_src", "num_ranks") if k not in members]
        if missing:
            raise InputError(f"{path}: not a llamp graph file (missing {', '.join(missing)})")
        columns = {
            name: members.array(name)
            for name in (*_VERTEX_COLUMNS, *("edge_" + c for c in _EDGE_COLUMNS))
        }
        optional = {
            name: members.array(name) if name in members else None
            for name in ("t_trace_ns", "label", "cpu", "nic")
        }
        num_ranks = members.array("num_ranks")
        meta = members.json("meta") if "meta" in members else {}
        if num_ranks.shape != () or num_ranks.dtype.kind not in "iu" or not isinstance(meta, dict):
            raise InputError(f"{path}: not a llamp graph file (num_ranks or meta malformed)")
        vertices = columns["rank"].shape[0] if columns["rank"].ndim == 1 else 0
        if not 1 <= int(num_ranks) <= max(vertices, _MAX_EMPTY_RANKS):
            raise InputError(
                f"{path}: damaged llamp graph file ({int(num_ranks)} ranks for {vertices} vertices)"
            )
        read = [_STAMP, "num_ranks", "meta", *columns, *(k for k in optional if k in members)]
        sealed = members.sealed(read)
        # Only this installation's seal vouches for the stamp; any other file is checked.
        trusted = (
            sealed and stamp.get("version") in _TRUSTED_VERSIONS and stamp.get("validated") is True
        )
        graph = cls.from_arrays(
            int(num_ranks),
            **columns,
            **optional,
            meta=meta,
            validate=validate and not trusted,
            source=path,
        )
        if validate and trusted:
            graph.check_ranges()
            graph.__dict__["_valid"] = True  # validated when it was saved
        if validate:  # the checks read every column: a process keeps only what it then uses
            members.release()
        if sealed:
            graph.__dict__["_seal"] = members.file_id
        return graph

    def equals(self, other: ExecutionGraph, *, labels: bool = False) -> bool:
        """Structural identity: same columns and the same edge multiset."""
        if self.num_ranks != other.num_ranks or self.num_vertices != other.num_vertices:
            return False
        for name in _VERTEX_COLUMNS:
            if not np.array_equal(getattr(self, name), getattr(other, name)):
                return False
        if labels and not np.array_equal(self.label, other.label):
            return False
        for name in ("cpu", "nic"):
            if not np.array_equal(self.streams(name), other.streams(name)):
                return False

        def edge_keys(g: ExecutionGraph) -> np.ndarray:
            keys = np.stack([g.edge_src, g.edge_dst, g.edge_kind.astype(np.int64)], axis=1)
            return keys[np.lexsort(keys.T[::-1])]

        return np.array_equal(edge_keys(self), edge_keys(other))
