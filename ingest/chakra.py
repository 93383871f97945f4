"""Chakra execution traces (MLCommons; ASTRA-sim's and SimAI's input) → ExecutionGraph.

A trace is one file per rank, ``<prefix>.<rank>.et``: a stream of protobuf messages of the
``ChakraProtoMsg`` schema (``et_def.proto``; compiled into :mod:`llamp.ingest.et_def_pb2`),
each preceded by its length as a varint (at most 5 bytes), first one ``GlobalMetadata``, then
``Node`` records; a file may be gzip-compressed. A node has an ``id`` unique in its file, a
``type``, ``data_deps`` and ``ctrl_deps`` (ids of nodes of the same file it waits for),
``duration_micros`` and typed attributes.

How nodes become the graph (:class:`~llamp.ingest.gpu_graph.GpuGraphBuilder`):

- ``COMP_NODE``: a calc of ``duration_micros`` on the GPU compute stream (cpu 0), or on the
  host thread (cpu 1) when ``is_cpu_op`` is true; ``MEM_LOAD_NODE``/``MEM_STORE_NODE``: a calc
  of its duration on the memory stream (cpu 2); ``METADATA_NODE``: a zero-cost calc (it may
  still order others).
- ``COMM_SEND_NODE``/``COMM_RECV_NODE``: a send to ``comm_dst`` / receive from ``comm_src``
  (world ranks, i.e. file numbers) of ``comm_size`` bytes with tag ``comm_tag`` (0 if absent);
  messages match FIFO per (source, destination, tag, process group).
- ``COMM_COLL_NODE``: collective ``comm_type`` (``CollectiveCommType``: ALL_REDUCE, REDUCE,
  ALL_GATHER, GATHER, SCATTER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER(_BLOCK), BARRIER) of
  ``comm_size`` bytes — the size as ASTRA-sim reads it: the all-reduce buffer, the scattered
  input, and one member's share where each member has its own (an all-gather's input, an
  all-to-all's send buffer: the collective moves ``P · comm_size``) — on the process
  group ``pg_name``, expanded by :mod:`llamp.ingest.nccl` (NCCL's own algorithm and protocol
  choice unless ``collectives`` picks one per operation, e.g. ``{"allreduce":
  "nccl_tree_ll128"}``). BARRIER is an all-reduce of its size (PyTorch's NCCL barrier); GATHER
  and SCATTER are the point-to-point messages to or from group member 0.
- Process groups are communicators: the members of ``pg_name`` are the ranks whose files use it
  (a node without ``pg_name`` is on the world group of all ranks), in rank order; the ``k``-th
  collective on a group at each member is one instance, and the members must agree on its
  type and size. Each group a rank uses is its own stream: the ``j``-th group of a rank (in
  name order) owns cpus ``3 + j·lanes`` onwards, one per lane of its collectives.
- ``data_deps`` and ``ctrl_deps`` both become ``requires`` edges: a node starts once those it
  names have finished; nodes on one stream are ordered by these edges only (the per-stream
  order of issue is the model's serialisation, docs/model.md). A ``ctrl_deps`` id the file
  does not hold is an error, except on a node without ``data_deps``: PyTorch's converter
  writes a node's parent operation as its control dependency and drops the profiler's
  process node, so the root of every converted trace names a parent that is not there.
- A host-only (gloo) PyTorch run: ``chakra_converter PyTorch`` makes communication nodes of
  NCCL kernels only, so the collectives of a gloo run arrive as host ``COMP_NODE`` records
  named for the backend's operation (``gloo:all_reduce`` …, the operation that moves the data;
  its ``c10d::`` parent only enqueues it). These are read as the ``COMM_COLL_NODE`` they are:
  the size is the bytes of the tensors in the node's ``inputs.values`` (the execution trace's
  ``[id, storage, offset, numel, itemsize, device]``: one member's share for an all-gather or
  an all-to-all, as ``comm_size`` is), on the world group (gloo's operations name no process
  group), the measured duration replaced by the model's cost as for any collective. gloo's
  point-to-point, gather, scatter and sparse operations are refused: the trace does not carry
  their peer or layout.

Errors name the file, the record (its index and byte offset) and the reason: a length prefix
that runs past 5 bytes or past the end of the file, a record that does not parse as its
message, a node type or collective type outside the schema, a duplicate id, a dependency on an
id the file does not hold, a send without its receive, members that disagree on a collective.
"""

from __future__ import annotations

import ast
import gzip
import re
from collections.abc import Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError

from llamp.errors import InputError, TraceError
from llamp.graph import ExecutionGraph
from llamp.ingest import et_def_pb2 as pb
from llamp.ingest import nccl

__all__ = [
    "COLL_OPS",
    "PER_MEMBER_SIZE",
    "is_chakra",
    "nccl_bytes",
    "rank_files",
    "read_chakra",
    "stream_name",
    "write_chakra",
]

_FILE_RE = re.compile(r"^(?P<prefix>.*)\.(?P<rank>[0-9]+)\.et$")
#: ``CollectiveCommType`` → the collective it is (names of :mod:`llamp.ingest.collectives`).
COLL_OPS = {
    pb.ALL_REDUCE: "allreduce",
    pb.REDUCE: "reduce",
    pb.ALL_GATHER: "allgather",
    pb.GATHER: "gather",
    pb.SCATTER: "scatter",
    pb.BROADCAST: "bcast",
    pb.ALL_TO_ALL: "alltoall",
    pb.REDUCE_SCATTER: "reduce_scatter",
    pb.REDUCE_SCATTER_BLOCK: "reduce_scatter",
    pb.BARRIER: "allreduce",
}
_GPU, _HOST, _MEMORY, _FIRST_GROUP = 0, 1, 2, 3
_MAX_PREFIX_BYTES = 5  # a varint32 length
_GZIP_MAGIC = b"\x1f\x8b"
_NODE_TYPES = frozenset(pb.NodeType.values())
_COMM_TYPES = frozenset(pb.CollectiveCommType.values())
#: gloo's host operations (``gloo:<op>`` record functions of ProcessGroupGloo) that are
#: collectives, and what each is; its others (send, recv, gather, scatter,
#: sparse_all_reduce) are refused (module docstring).
_GLOO_OPS = {
    "gloo:all_reduce": pb.ALL_REDUCE,
    "gloo:all_gather": pb.ALL_GATHER,
    "gloo:broadcast": pb.BROADCAST,
    "gloo:reduce": pb.REDUCE,
    "gloo:all_to_all": pb.ALL_TO_ALL,
    "gloo:barrier": pb.BARRIER,
}
_GLOO_PREFIX = "gloo:"
_MAX_INPUTS_CHARS = 1 << 16  # a gloo operation's inputs: a few tensors, well under this


# --------------------------------------------------------------------------- files
def rank_files(path: Path) -> list[Path]:
    """The rank files of the trace at ``path`` (a directory, or one ``<prefix>.<r>.et``),
    ordered by rank; ranks must be 0..P−1 without a gap."""
    path = Path(path)
    if path.is_dir():
        found = [p for p in path.iterdir() if _FILE_RE.match(p.name)]
        prefixes = {_FILE_RE.match(p.name)["prefix"] for p in found}
        if len(prefixes) > 1:
            raise InputError(
                f"{path}: Chakra traces of several prefixes here ({', '.join(sorted(prefixes))}); "
                "name one file of the trace instead"
            )
    else:
        m = _FILE_RE.match(path.name)
        if m is None:
            raise InputError(f"{path}: not a Chakra trace file (<prefix>.<rank>.et)")
        found = [
            p
            for p in path.parent.iterdir()
            if (q := _FILE_RE.match(p.name)) and q["prefix"] == m["prefix"]
        ]
    by_rank = {int(_FILE_RE.match(p.name)["rank"]): p for p in found}
    if not by_rank:
        raise InputError(f"{path}: no Chakra trace files (<prefix>.<rank>.et)")
    missing = sorted(set(range(len(by_rank))) - set(by_rank))
    if missing:
        raise InputError(
            f"{path}: Chakra ranks must be 0..{len(by_rank) - 1}; rank {missing[0]} is missing"
        )
    return [by_rank[r] for r in range(len(by_rank))]


def is_chakra(path: Path) -> bool:
    """A ``<prefix>.<rank>.et`` file, or a directory holding such files."""
    path = Path(path)
    if path.is_file():
        return _FILE_RE.match(path.name) is not None
    return path.is_dir() and any(_FILE_RE.match(p.name) for p in path.iterdir())


def _records(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(record index, byte offset, message bytes) of every length-prefixed record."""
    data = path.read_bytes()
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as err:
            raise TraceError(f"damaged gzip stream ({err})", path=str(path)) from None
    pos, index, end = 0, 0, len(data)
    while pos < end:
        length, shift, at = 0, 0, pos
        while True:
            if at >= end:
                raise TraceError(
                    f"record {index} at byte {pos}: truncated length prefix", path=str(path)
                )
            byte = data[at]
            at += 1
            length |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
            if at - pos >= _MAX_PREFIX_BYTES:
                raise TraceError(
                    f"record {index} at byte {pos}: bad length prefix (a varint longer than "
                    f"{_MAX_PREFIX_BYTES} bytes)",
                    path=str(path),
                )
        if at + length > end:
            raise TraceError(
                f"record {index} at byte {pos}: truncated: {length} bytes announced, "
                f"{end - at} left in the file",
                path=str(path),
            )
        yield index, pos, data[at : at + length]
        pos = at + length
        index += 1


def _attrs(node: Any) -> dict[str, Any]:
    out = {}
    for a in node.attr:
        which = a.WhichOneof("value")
        if which is not None and not which.endswith("_list"):
            out[a.name] = getattr(a, which)
    return out


class _Node:
    """The fields of one node the graph needs; ``where`` (for errors) is formatted on use."""

    __slots__ = ("id", "name", "type", "deps", "rooted", "duration_ns", "attrs", "index", "pos")

    def __init__(self, node: Any, attrs: dict[str, Any], index: int, pos: int) -> None:
        self.id = node.id
        self.name = node.name
        self.type = node.type
        self.deps = (*node.data_deps, *node.ctrl_deps)
        # a root (no data dependency) whose control parent is not in the file: PyTorch's
        # converter drops the profiler's process node and keeps its thread node's link to it
        self.rooted = not node.data_deps
        self.duration_ns = node.duration_micros * 1000.0
        self.attrs = attrs
        self.index = index
        self.pos = pos

    @property
    def where(self) -> str:
        return f"record {self.index} at byte {self.pos}: node {self.id} {self.name!r}"


def _tensor_bytes(values: Any) -> int:
    """Bytes of the tensors in an execution trace's ``inputs.values``: each tensor is
    ``[id, storage id, offset, numel, itemsize, device]``, alone or in (nested) lists."""
    if (
        isinstance(values, list)
        and len(values) == 6
        and all(isinstance(v, int) and not isinstance(v, bool) for v in values[:5])
        and isinstance(values[5], str)
    ):
        return values[3] * values[4]
    if isinstance(values, list):
        return sum(_tensor_bytes(v) for v in values)
    return 0


def _gloo_collective(node: Any, index: int, pos: int, path: Path) -> dict[str, int]:
    """``comm_type`` and ``comm_size`` of a gloo host operation (module docstring)."""
    where = f"record {index} at byte {pos}: node {node.id} {node.name!r}"
    kind = _GLOO_OPS.get(node.name)
    if kind is None:
        raise TraceError(
            f"{where}: gloo operation {node.name[len(_GLOO_PREFIX) :]!r} is not read: the "
            f"trace does not carry its peer or layout (read: "
            f"{', '.join(n[len(_GLOO_PREFIX) :] for n in _GLOO_OPS)})",
            path=str(path),
        )
    text = node.inputs.values
    try:
        if len(text) > _MAX_INPUTS_CHARS:
            raise ValueError
        values = ast.literal_eval(text) if text else []
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise TraceError(
            f"{where}: inputs.values is not a list of tensors: {text[:60]!r}",
            path=str(path),
        ) from None
    size = _tensor_bytes(values)
    if size == 0 and kind != pb.BARRIER:
        raise TraceError(f"{where}: no input tensor gives its size", path=str(path))
    return {"comm_type": kind, "comm_size": size}  # per member, as a Chakra COMM_COLL_NODE


def _nodes(path: Path) -> Iterator[_Node]:
    """The nodes of one rank file, checked against the schema (module docstring); gloo host
    collectives become the collective nodes they are."""
    records = _records(path)
    for index, pos, raw in records:
        try:
            pb.GlobalMetadata().ParseFromString(raw)
        except DecodeError as err:
            raise TraceError(
                f"record {index} at byte {pos}: not a Chakra GlobalMetadata ({err})",
                path=str(path),
            ) from None
        break
    node = pb.Node()
    for index, pos, raw in records:
        try:
            node.ParseFromString(raw)
        except DecodeError as err:
            raise TraceError(
                f"record {index} at byte {pos}: not a Chakra Node ({err})", path=str(path)
            ) from None
        if node.type not in _NODE_TYPES or node.type == pb.INVALID_NODE:
            raise TraceError(
                f"record {index} at byte {pos}: node {node.id} {node.name!r}: unknown node "
                f"type {node.type} (known: "
                f"{', '.join(n for n in pb.NodeType.keys() if n != 'INVALID_NODE')})",
                path=str(path),
            )
        attrs = _attrs(node) if node.attr else {}
        if node.type == pb.COMP_NODE and node.name.startswith(_GLOO_PREFIX):
            attrs.update(_gloo_collective(node, index, pos, path))
            attrs.pop("pg_name", None)
            out = _Node(node, attrs, index, pos)
            out.type = pb.COMM_COLL_NODE
            yield out
        else:
            yield _Node(node, attrs, index, pos)


def _int_attr(node: _Node, name: str, path: Path, default: int | None = None) -> int:
    value = node.attrs.get(name, default)
    if value is None:
        raise TraceError(f"{node.where}: {name} is missing", path=str(path))
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TraceError(
            f"{node.where}: {name} must be a non-negative integer, got {value!r}", path=str(path)
        )
    return value


def _collective(node: _Node, path: Path) -> tuple[str, int]:
    kind = _int_attr(node, "comm_type", path)
    if kind not in _COMM_TYPES:
        raise TraceError(
            f"{node.where}: unknown comm_type {kind} (known: "
            f"{', '.join(pb.CollectiveCommType.keys())})",
            path=str(path),
        )
    return COLL_OPS[kind], _int_attr(node, "comm_size", path)


# --------------------------------------------------------------------------- reading
def read_chakra(
    path: str | Path,
    *,
    collectives: dict[str, str] | None = None,
    machine: nccl.NcclMachine | None = None,
    lenient: bool = False,
    progress: bool = False,
) -> ExecutionGraph:
    """Read the Chakra trace at ``path`` (a directory or one of its rank files) into a graph.

    ``collectives`` maps an operation to an NCCL choice (``nccl``, ``nccl_ring``,
    ``nccl_tree_ll``, …; default ``nccl``: NCCL's own rule); ``machine`` is what that rule and
    the channels assume (:class:`~llamp.ingest.nccl.NcclMachine`). ``lenient`` changes
    nothing: every problem a Chakra trace can have makes its graph wrong. ``progress`` shows
    the ranks built on stderr.
    """
    files = rank_files(Path(path))
    machine = machine or nccl.NcclMachine()
    choices = nccl.check_choices(collectives, what="a Chakra trace")
    P = len(files)
    # pass 1: which groups each rank uses, and its collectives per group, in order
    # (the nodes are kept: one parse per file, a few hundred bytes per node)
    groups_of: list[set[str]] = []
    nodes_of: list[list[_Node]] = []
    calls: dict[str, dict[int, list[tuple[str, int, _Node]]]] = {}
    comm_types = (pb.COMM_SEND_NODE, pb.COMM_RECV_NODE, pb.COMM_COLL_NODE)
    for r, f in enumerate(files):
        used: set[str] = set()
        nodes = list(_nodes(f))
        for node in nodes:
            if node.type in comm_types:
                pg = str(node.attrs.get("pg_name", ""))
                used.add(pg)
                if node.type == pb.COMM_COLL_NODE:
                    op, size = _collective(node, f)
                    calls.setdefault(pg, {}).setdefault(r, []).append((op, size, node))
        groups_of.append(used)
        nodes_of.append(nodes)
    names = sorted(set().union(*groups_of))
    group_id = {g: k for k, g in enumerate(names)}
    members = {g: tuple(range(P)) if g == "" else tuple(r for r in range(P) if g in groups_of[r])
               for g in names}  # fmt: skip
    plans = _plan_instances(files, calls, members, choices, machine)
    lanes = max(machine.channels, 2)
    # Imported here: its kernels (numba) are not needed to tell a Chakra file (is_chakra).
    from llamp.ingest.gpu_graph import GpuGraphBuilder

    builder = GpuGraphBuilder(P, nics=machine.nics)
    ranks = enumerate(files)
    if progress:
        from tqdm import tqdm

        ranks = tqdm(ranks, total=P, unit=" ranks", desc="building the graph", leave=False)
    for r, f in ranks:
        stream = {g: _FIRST_GROUP + j * lanes for j, g in enumerate(sorted(groups_of[r]))}
        _build_rank(builder, r, f, nodes_of[r], stream, group_id, members, plans)
        nodes_of[r] = []
    used: dict[str, set[str]] = {}
    for op, p in plans.values():
        used.setdefault(op, set()).add(f"{p.algorithm}/{p.protocol.name}")
    meta = {
        "name": Path(path).name if Path(path).is_dir() else Path(path).parent.name,
        "format": "chakra",
        "files": [str(f) for f in files],
        "ingested": datetime.now(UTC).isoformat(timespec="seconds"),
        "collectives": {op: ", ".join(sorted(algs)) for op, algs in sorted(used.items())},
        "collective_algorithms": choices,
        "process_groups": {g or "world": list(members[g]) for g in names},
        # what each cpu of a rank is (stream_name): its groups' ids in cpu order, lanes each
        "group_names": [g or "world" for g in names],
        "rank_groups": [[group_id[g] for g in sorted(used)] for used in groups_of],
        "stream_lanes": lanes,
        "nccl_machine": asdict(machine),
    }
    return builder.finish(meta, where=str(path))


def _plan_instances(files, calls, members, choices, machine):
    """The NCCL plan of every instance: (group, k) → (op, plan); members must agree."""
    plans: dict[tuple[str, int], tuple[str, nccl.NcclPlan]] = {}
    for g, per_rank in calls.items():
        group = members[g]
        counts = {r: len(per_rank.get(r, [])) for r in group}
        first = group[0]
        for r in group:
            if counts[r] != counts[first]:
                raise TraceError(
                    f"rank {r} has {counts[r]} collectives on process group {g or 'world'!r}, "
                    f"rank {first} has {counts[first]}",
                    path=str(files[r]),
                )
        for k in range(counts[first]):
            op, size, node = per_rank[first][k]
            for r in group[1:]:
                op_r, size_r, node_r = per_rank[r][k]
                if (op_r, size_r) != (op, size):
                    raise TraceError(
                        f"{node_r.where}: collective {k} on process group {g or 'world'!r} is "
                        f"{op_r} of {size_r} bytes here, {op} of {size} bytes on rank {first} "
                        f"({files[first].name}, {node.where})",
                        path=str(files[r]),
                    )
            plans[(g, k)] = (op, _plan(op, len(group), nccl_bytes(op, size, len(group)),
                                       choices, machine))  # fmt: skip
    return plans


#: Collectives whose ``comm_size`` is one member's buffer, not the collective's total: an
#: all-gather's input (each member contributes ``comm_size``) and an all-to-all's send buffer
#: (``comm_size / P`` to each member). ASTRA-sim's ring reads them so (``Ring.cc``: all-gather
#: messages of ``comm_size``, all-to-all of ``comm_size / P``); Chakra's PyTorch converter
#: writes the sum of the operation's input tensors.
PER_MEMBER_SIZE = frozenset({"allgather", "alltoall"})


def nccl_bytes(op: str, comm_size: int, P: int) -> int:
    """The bytes NCCL's plan moves for a Chakra collective ``op`` of ``comm_size`` on ``P``
    members: the all-gather's output and the all-to-all's send buffers together are
    ``P · comm_size``; every other collective's ``comm_size`` is its buffer."""
    return comm_size * P if op in PER_MEMBER_SIZE else comm_size


def _plan(op: str, P: int, size: int, choices: dict[str, str], machine) -> nccl.NcclPlan:
    alg, proto = nccl.resolve(op, P, size, choices.get(op, "nccl"), machine)
    return nccl.plan(op, P, size, algorithm=alg, protocol=proto, channels=machine.channels)


def _build_rank(builder, r, f, nodes, stream, group_id, members, plans) -> None:
    ends: dict[int, tuple[int, int]] = {}
    deps: list[tuple[_Node, int]] = []
    instance = dict.fromkeys(stream, 0)
    for node in nodes:
        if node.id in ends:
            raise TraceError(f"{node.where}: duplicate node id {node.id}", path=str(f))
        t = node.type
        if t == pb.COMP_NODE:
            cpu = _HOST if node.attrs.get("is_cpu_op") else _GPU
            v = builder.calc(r, node.duration_ns, cpu)
            ends[node.id] = (v, v)
        elif t in (pb.MEM_LOAD_NODE, pb.MEM_STORE_NODE):
            v = builder.calc(r, node.duration_ns, _MEMORY)
            ends[node.id] = (v, v)
        elif t == pb.METADATA_NODE:
            v = builder.calc(r, 0.0, _GPU)
            ends[node.id] = (v, v)
        else:
            g = str(node.attrs.get("pg_name", ""))
            cpu = stream[g]
            if t == pb.COMM_COLL_NODE:
                k = instance[g]
                instance[g] += 1
                _, plan = plans[(g, k)]
                world = members[g]
                ends[node.id] = builder.collective(
                    r, plan, world.index(r), world, comm=group_id[g], instance=k, cpu=cpu
                )
            else:
                size = _int_attr(node, "comm_size", f)
                tag = _int_attr(node, "comm_tag", f, 0) + group_id[g] * (1 << 32)
                if t == pb.COMM_SEND_NODE:
                    peer = _int_attr(node, "comm_dst", f)
                    make = builder.send
                else:
                    peer = _int_attr(node, "comm_src", f)
                    make = builder.recv
                if peer >= builder.num_ranks or peer == r:
                    raise TraceError(
                        f"{node.where}: peer rank {peer} is not another rank of this "
                        f"{builder.num_ranks}-rank trace",
                        path=str(f),
                    )
                v = make(r, peer, size, tag, cpu)
                ends[node.id] = (v, v)
        for d in node.deps:
            deps.append((node, d))
    for node, d in deps:
        if d not in ends:
            if node.rooted:
                continue
            raise TraceError(
                f"{node.where}: depends on node {d}, which this file does not hold", path=str(f)
            )
        builder.require(ends[d][1], ends[node.id][0])


def stream_name(meta: dict[str, Any], rank: int, cpu: int) -> str:
    """What ``cpu`` of ``rank`` is in a graph read from Chakra (module docstring): ``gpu``,
    ``host``, ``memory`` or ``<process group> lane <l>``; ``cpu <c>`` if the graph does not say."""
    if cpu < _FIRST_GROUP:
        return ("gpu", "host", "memory")[cpu]
    try:
        j, lane = divmod(cpu - _FIRST_GROUP, int(meta["stream_lanes"]))
        return f"{meta['group_names'][meta['rank_groups'][rank][j]]} lane {lane}"
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError):
        return f"cpu {cpu}"


# --------------------------------------------------------------------------- writing
def write_chakra(path: str | Path, nodes: Iterator[Any], *, version: str = "0.0.4") -> int:
    """Write one rank file: a ``GlobalMetadata`` then the ``pb.Node`` messages of ``nodes``,
    each length-prefixed (the layout :func:`read_chakra` reads and Chakra's ``protolib``
    writes); returns the number of nodes written. Streams: one node in memory at a time."""
    count = 0
    with open(path, "wb") as out:
        _write_record(out, pb.GlobalMetadata(version=version))
        for node in nodes:
            _write_record(out, node)
            count += 1
    return count


def _write_record(out: Any, message: Any) -> None:
    raw = message.SerializeToString()
    n = len(raw)
    prefix = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            prefix.append(byte | 0x80)
        else:
            prefix.append(byte)
            break
    out.write(bytes(prefix))
    out.write(raw)
