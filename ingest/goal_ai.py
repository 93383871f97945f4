"""The AI dialect of GOAL (ATLAHS, LLAMP's NCCL traces): collective marker lines, expanded.

ATLAHS turns an NVTX-annotated NCCL run (nsys) into GOAL: one rank per GPU process, each CUDA
stream or communicator a ``cpu``, operations with ``cpu``/``nic`` as LogGOPSim reads them
(:mod:`llamp.ingest.goal`). Collectives may be left as *marker* lines instead of their
messages::

    l2: AllGather 1024 bytes comm 0 gpu 0 stream 0 seq 7 end

``<label>: <Collective> <bytes> bytes comm <c> gpu <g> stream <s> seq <k> [root <r>]
[cpu <c>] end``, where ``<Collective>`` is one of NCCL's functions (:data:`MARKER_OPS`,
case-insensitive), ``<bytes>`` the call's ``count × type size`` (per rank for AllGather,
ReduceScatter and AllToAll, as NCCL counts), ``comm`` the communicator and ``seq`` the call's
number on it. A marker is an operation like any other: it has a label, dependencies name it,
and it names dependencies.

Expansion: the members of communicator ``c`` are the ranks with a marker of ``comm c``, in rank
order; the markers with the same ``(comm, seq)`` on every member form one instance (they must
agree on the collective, its bytes and root), expanded by :mod:`llamp.ingest.nccl` (NCCL's
algorithm and protocol choice unless ``collectives`` picks one); ``meta["process_groups"]``
lists the communicators (``"<c>"`` → members). At each member the marker
becomes the instance's entry; what ``requires`` the marker waits for its exit, what
``irequires`` it starts with its entry (:class:`~llamp.ingest.gpu_graph.GpuGraphBuilder`). The
collective runs on cpu ``stream`` (or the marker's ``cpu``), its lanes on the cpus after it.
A communicator with two members on one GOAL rank (two GPUs of one process) is refused: one
GOAL rank per GPU is what the expansion supports.

Markers are recognised by their full line (outside ``/* */`` block comments a marker line is
always one line); a line that starts like a marker but does not parse is an error naming the
file, the line and what is wrong, as any GOAL line.
"""

from __future__ import annotations

import mmap
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llamp.errors import TraceError
from llamp.graph import RECV, REQUIRES, SEND, ExecutionGraph
from llamp.ingest import nccl
from llamp.ingest.goal import parse_goal_text
from llamp.ingest.gpu_graph import GpuGraphBuilder

__all__ = ["MARKER_OPS", "has_markers", "read_goal_ai"]

#: Marker name (lower case) → (collective, NCCL bytes = marker bytes × this power of P).
MARKER_OPS = {
    "allreduce": ("allreduce", 0),
    "allgather": ("allgather", 1),
    "reducescatter": ("reduce_scatter", 1),
    "broadcast": ("bcast", 0),
    "reduce": ("reduce", 0),
    "alltoall": ("alltoall", 1),
}
_PROBE = b" bytes comm "
_START = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*:\s*([A-Za-z]+)\s+(.*)$")
_BODY = re.compile(
    r"(?P<bytes>[0-9]+)\s+bytes\s+comm\s+(?P<comm>[0-9]+)\s+gpu\s+(?P<gpu>[0-9]+)\s+"
    r"stream\s+(?P<stream>[0-9]+)\s+seq\s+(?P<seq>[0-9]+)(?:\s+root\s+(?P<root>[0-9]+))?"
    r"(?:\s+cpu\s+(?P<cpu>[0-9]+))?\s+end\s*(?://.*)?$"
)
_RANK = re.compile(r"^\s*rank\s+([0-9]+)\s*\{")
_MAX_CPU = 255


def has_markers(path: Path) -> bool:
    """Whether the GOAL file at ``path`` holds marker lines (a byte search, no parsing)."""
    with open(path, "rb") as f:
        if f.seek(0, 2) == 0:
            return False
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return m.find(_PROBE) >= 0


@dataclass(frozen=True)
class _Marker:
    rank: int
    label: str
    line: int
    op: str
    nbytes: int
    comm: int
    gpu: int
    seq: int
    root: int
    cpu: int


def read_goal_ai(
    path: str | Path,
    *,
    collectives: dict[str, str] | None = None,
    machine: nccl.NcclMachine | None = None,
    lenient: bool = False,
    progress: bool = False,
) -> ExecutionGraph:
    """Read a GOAL file with collective markers into a graph (module docstring)."""
    path = Path(path)
    machine = machine or nccl.NcclMachine()
    choices = nccl.check_choices(collectives, what="a GOAL file's collective markers")
    text = path.read_bytes().decode("latin-1")
    lines = text.split("\n")
    markers: list[_Marker] = []
    rank = -1
    for i, line in enumerate(lines):
        head = _RANK.match(line)
        if head:
            rank = int(head[1])
            continue
        start = _START.match(line)
        if not start or start[2].lower() not in MARKER_OPS:
            continue
        body = _BODY.match(start[3])
        if body is None:
            raise TraceError(
                f"collective marker {start[2]!r} is not '<bytes> bytes comm <c> gpu <g> stream "
                "<s> seq <k> [root <r>] [cpu <c>] end'",
                path=str(path),
                line=i + 1,
            )
        cpu = int(body["cpu"] if body["cpu"] is not None else body["stream"])
        if cpu > _MAX_CPU:
            raise TraceError(f"cpu {cpu} is above {_MAX_CPU}", path=str(path), line=i + 1)
        markers.append(
            _Marker(
                rank,
                start[1],
                i + 1,
                MARKER_OPS[start[2].lower()][0],
                int(body["bytes"]),
                int(body["comm"]),
                int(body["gpu"]),
                int(body["seq"]),
                int(body["root"] or 0),
                cpu,
            )
        )
        lines[i] = f"{start[1]}: calc 0 cpu {cpu}"
    base = parse_goal_text("\n".join(lines), name=str(path), lenient=lenient)
    if markers and base.label is None:
        raise TraceError(
            "collective markers need the GOAL labels, which are not kept above 2^22 operations",
            path=str(path),
        )
    plans = _plan_instances(path, markers, choices, machine)
    return _splice(path, base, markers, plans, machine)


def _plan_instances(path, markers, choices, machine):
    """(comm, seq) → (members, plan); the members agree on each instance."""
    by_comm: dict[int, dict[int, list[_Marker]]] = {}
    for m in markers:
        by_comm.setdefault(m.comm, {}).setdefault(m.seq, []).append(m)
    plans = {}
    for comm, instances in by_comm.items():
        members = sorted({m.rank for ms in instances.values() for m in ms})
        for seq, ms in instances.items():
            ranks = [m.rank for m in ms]
            if len(set(ranks)) != len(ranks):
                twice = next(r for r in ranks if ranks.count(r) > 1)
                gpus = sorted(m.gpu for m in ms if m.rank == twice)
                raise TraceError(
                    f"comm {comm} seq {seq} has {len(gpus)} members on rank {twice} (gpus "
                    f"{', '.join(map(str, gpus))}): one GOAL rank per GPU is needed",
                    path=str(path),
                    line=next(m.line for m in ms if m.rank == twice),
                )
            absent = sorted(set(members) - set(ranks))
            if absent:
                raise TraceError(
                    f"comm {comm} seq {seq}: rank {absent[0]} uses comm {comm} but has no "
                    f"marker with seq {seq}",
                    path=str(path),
                    line=ms[0].line,
                )
            first = ms[0]
            for m in ms[1:]:
                if (m.op, m.nbytes, m.root) != (first.op, first.nbytes, first.root):
                    raise TraceError(
                        f"comm {comm} seq {seq} is {m.op} of {m.nbytes} bytes (root {m.root}) "
                        f"here, {first.op} of {first.nbytes} bytes (root {first.root}) on rank "
                        f"{first.rank} (line {first.line})",
                        path=str(path),
                        line=m.line,
                    )
            P = len(members)
            nbytes = first.nbytes * P ** dict(MARKER_OPS.values())[first.op]
            if first.root >= P:
                raise TraceError(
                    f"root {first.root} is not a member of comm {comm} ({P} members)",
                    path=str(path),
                    line=first.line,
                )
            alg, proto = nccl.resolve(first.op, P, nbytes, choices[first.op], machine)
            plan = nccl.plan(
                first.op,
                P,
                nbytes,
                algorithm=alg,
                protocol=proto,
                channels=machine.channels,
                root=first.root,
            )
            plans[(comm, seq)] = (tuple(members), plan)
    return plans


def _splice(path, base: ExecutionGraph, markers, plans, machine) -> ExecutionGraph:
    """``base`` with each marker's placeholder calc replaced by its member's expansion."""
    label = base.label
    bounds = base.rank_bounds()
    where: dict[tuple[int, str], int] = {}
    for r in {m.rank for m in markers}:
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        for v in range(lo, hi):
            where.setdefault((r, str(label[v])), v)
    at = sorted(((where[(m.rank, m.label)], m) for m in markers), key=lambda pair: pair[0])
    for (v, m), (w, _) in zip(at, at[1:], strict=False):
        if v == w:
            raise TraceError(
                f"two collective markers share the label {m.label!r} on rank {m.rank}",
                path=str(path),
                line=m.line,
            )
    n = base.num_vertices
    entry = np.arange(n, dtype=np.int64)  # old vertex → its new id (a marker: its entry)
    exit_ = entry.copy()  # … and the id its `requires` dependents wait for
    builder = GpuGraphBuilder(base.num_ranks, nics=machine.nics)
    columns = {
        "rank": base.rank,
        "kind": base.kind,
        "cost_ns": base.cost_ns,
        "size": base.size,
        "peer": base.peer,
        "tag": base.tag,
        "cpu": base.streams("cpu"),
        "nic": base.streams("nic"),
    }
    comm_op = (base.kind == SEND) | (base.kind == RECV)
    done = 0
    for v, m in at + [(n, None)]:
        first = builder.copy_vertices(
            {k: c[done:v] for k, c in columns.items()}, matched=comm_op[done:v]
        )
        entry[done:v] = np.arange(first, first + v - done)
        exit_[done:v] = entry[done:v]
        if m is None:
            break
        members, plan = plans[(m.comm, m.seq)]
        entry[v], exit_[v] = builder.collective(
            m.rank, plan, members.index(m.rank), members, comm=m.comm, instance=m.seq, cpu=m.cpu
        )
        done = v + 1
    src, dst, kind = base.edge_src, base.edge_dst, base.edge_kind
    new_src = np.where(kind == REQUIRES, exit_[src], entry[src])
    builder.edges(new_src, entry[dst], kind)  # irequires and message edges: the entries
    meta = dict(base.meta)
    meta.update(
        {
            "format": "goal",
            "collective_markers": len(markers),
            "collectives": _used(plan for _, plan in plans.values()),
            # communicators as Chakra's process groups (named by number), members in rank order
            "process_groups": {
                str(comm): list(members) for (comm, _), (members, _) in sorted(plans.items())
            },
        }
    )
    return builder.finish(meta, where=str(path))


def _used(plans) -> dict[str, str]:
    """op → the algorithm/protocol pairs its instances got, comma-separated."""
    used: dict[str, set[str]] = {}
    for p in plans:
        used.setdefault(p.op, set()).add(f"{p.algorithm}/{p.protocol.name}")
    return {op: ", ".join(sorted(algs)) for op, algs in sorted(used.items())}
