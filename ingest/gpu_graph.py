"""GPU execution DAGs → ExecutionGraph: streams as CPUs, dependencies as edges, NCCL expanded.

The GPU readers (Chakra execution traces, the AI dialect of GOAL) describe each rank as a DAG
of operations on streams (a GPU's compute stream, its host thread, one stream per
communicator), not as one program-order chain. :class:`GpuGraphBuilder` collects such a DAG
rank by rank, in ascending rank order (so each rank's vertices are contiguous), and turns it
into an :class:`~llamp.graph.ExecutionGraph`:

- an operation is a vertex on a ``cpu`` (its stream) and ``nic``; a dependency "B after A" is
  a ``requires`` edge A → B;
- a collective call of a member is an *entry* calc (zero cost) that takes the call's
  dependencies, the member's part of the :class:`~llamp.ingest.nccl.NcclPlan` and an *exit*
  calc its dependents wait for. Each lane (a channel's ring, one tree) is a chain of rounds
  hanging off the entry: round ``k``'s sends and receives ``require`` the join of round
  ``k−1`` (the entry for round 0), and the round's join calc, which costs the protocol's
  per-hop latency, ``requires`` all of them; the exit requires every lane's last join. Lane
  ``l`` runs on cpu ``base + l`` (a channel is its own GPU thread block) and NIC
  ``channel mod nics``;
- messages match FIFO per (source, destination, tag) (:func:`llamp.ingest.goal.fifo_match`);
  a collective's messages carry the tag ``COLL_TAG_BASE + c·2^32 + k·2^10 + lane`` (instance
  ``k`` on communicator ``c``), so they never pair with another instance's or lane's.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from llamp.config import COLL_TAG_BASE, COMM_TAG_STRIDE
from llamp.errors import TraceError
from llamp.graph import CALC, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.ingest.goal import fifo_match
from llamp.ingest.nccl import NcclPlan

#: Lanes (channels × trees) one collective may use: the lane is the low 10 bits of its tags.
MAX_LANES = 1 << 10
_MAX_INSTANCES = 1 << 22  # instances per communicator that fit between two communicator tags


class GpuGraphBuilder:
    """Append vertices rank by rank (ascending), then :meth:`finish` into a validated graph."""

    def __init__(self, num_ranks: int, *, nics: int = 1):
        self.num_ranks = num_ranks
        self.nics = max(1, nics)
        # compact typed buffers (8 bytes or less per value): 10^7 vertices stay in the GB range
        self._rank = array("i")
        self._kind = array("b")
        self._cost = array("d")
        self._size = array("q")
        self._peer = array("i")
        self._tag = array("q")
        self._cpu = array("h")
        self._nic = array("h")
        self._src = array("q")
        self._dst = array("q")
        self._ekind = array("b")
        self._matched = array("b")  # 1: a send/recv already paired by the source format
        self._last_rank = -1
        self._templates: dict[tuple[int, int, int], tuple[NcclPlan, _Template]] = {}

    def _vertex(self, rank: int, kind: int, cost: float, size: int, peer: int, tag: int,
                cpu: int, nic: int) -> int:  # fmt: skip
        if rank < self._last_rank:
            raise RuntimeError("GpuGraphBuilder takes ranks in ascending order")
        self._last_rank = rank
        self._rank.append(rank)
        self._kind.append(kind)
        self._cost.append(cost)
        self._size.append(size)
        self._peer.append(peer)
        self._tag.append(tag)
        self._cpu.append(cpu)
        self._nic.append(nic)
        self._matched.append(0)
        return len(self._rank) - 1

    def copy_vertices(self, columns: dict[str, np.ndarray], *, matched: np.ndarray) -> int:
        """Append vertices given as numpy columns (``rank``, ``kind``, ``cost_ns``, ``size``,
        ``peer``, ``tag``, ``cpu``, ``nic``, all of one length, ranks not below the last one);
        ``matched`` marks sends/recvs whose messages the caller adds with :meth:`message`.
        Returns the id of the first."""
        first = len(self._rank)
        n = len(columns["rank"])
        if n == 0:
            return first
        if int(columns["rank"][0]) < self._last_rank:
            raise RuntimeError("GpuGraphBuilder takes ranks in ascending order")
        self._last_rank = int(columns["rank"][-1])
        for name, buf, dtype in (
            ("rank", self._rank, np.int32),
            ("kind", self._kind, np.int8),
            ("cost_ns", self._cost, np.float64),
            ("size", self._size, np.int64),
            ("peer", self._peer, np.int32),
            ("tag", self._tag, np.int64),
            ("cpu", self._cpu, np.int16),
            ("nic", self._nic, np.int16),
        ):
            buf.frombytes(np.ascontiguousarray(columns[name], dtype=dtype).tobytes())
        self._matched.frombytes(np.ascontiguousarray(matched, dtype=np.int8).tobytes())
        return first

    def edges(self, src: np.ndarray, dst: np.ndarray, kind: np.ndarray) -> None:
        """Append edges of any kind (``message`` edges join sends/recvs marked ``matched``)."""
        self._src.frombytes(np.ascontiguousarray(src, dtype=np.int64).tobytes())
        self._dst.frombytes(np.ascontiguousarray(dst, dtype=np.int64).tobytes())
        self._ekind.frombytes(np.ascontiguousarray(kind, dtype=np.int8).tobytes())

    def calc(self, rank: int, cost_ns: float, cpu: int = 0) -> int:
        return self._vertex(rank, CALC, float(cost_ns), 0, 0, 0, cpu, 0)

    def send(self, rank: int, peer: int, size: int, tag: int, cpu: int = 0, nic: int = 0) -> int:
        return self._vertex(rank, SEND, 0.0, size, peer, tag, cpu, nic)

    def recv(self, rank: int, peer: int, size: int, tag: int, cpu: int = 0, nic: int = 0) -> int:
        return self._vertex(rank, RECV, 0.0, size, peer, tag, cpu, nic)

    def require(self, before: int, after: int) -> None:
        """``after`` starts once ``before`` has finished."""
        self._src.append(before)
        self._dst.append(after)
        self._ekind.append(REQUIRES)

    def collective(
        self,
        rank: int,
        plan: NcclPlan,
        member: int,
        world: tuple[int, ...],
        *,
        comm: int,
        instance: int,
        cpu: int,
    ) -> tuple[int, int]:
        """Member ``member``'s part of ``plan`` (group members are the world ranks ``world``);
        returns its (entry, exit) calcs. The member's vertices and edges are laid out once per
        plan and member (:func:`_template`) and appended as arrays, shifted to their ids."""
        if instance >= _MAX_INSTANCES:
            raise TraceError(
                f"more than {_MAX_INSTANCES} collectives on one communicator are not supported"
            )
        if rank < self._last_rank:
            raise RuntimeError("GpuGraphBuilder takes ranks in ascending order")
        self._last_rank = rank
        key = (id(plan), member, self.nics)
        t = self._templates.get(key)
        if t is None:
            t = self._templates[key] = (plan, _template(plan, member, self.nics))
        t = t[1]
        first = len(self._rank)
        n = t.kind.size
        comm_op = t.kind != CALC
        base_tag = COLL_TAG_BASE + comm * COMM_TAG_STRIDE + (instance << 10)
        self._rank.frombytes(np.full(n, rank, np.int32).tobytes())
        self._kind.frombytes(t.kind.tobytes())
        self._cost.frombytes(t.cost.tobytes())
        self._size.frombytes(t.size.tobytes())
        self._peer.frombytes(
            np.where(comm_op, np.asarray(world, np.int32)[t.peer], 0).astype(np.int32).tobytes()
        )
        self._tag.frombytes(np.where(comm_op, base_tag + t.lane, 0).astype(np.int64).tobytes())
        self._cpu.frombytes((cpu + t.lane).astype(np.int16).tobytes())
        self._nic.frombytes(t.nic.tobytes())
        self._matched.frombytes(bytes(n))
        self._src.frombytes((t.src + first).tobytes())
        self._dst.frombytes((t.dst + first).tobytes())
        self._ekind.frombytes(bytes(t.src.size))  # REQUIRES = 0
        return first, first + n - 1

    def finish(self, meta: dict, *, where: str) -> ExecutionGraph:
        """Match messages FIFO and build the validated graph; an unmatched send or receive is a
        :class:`TraceError` naming ``where`` and the operation."""
        rank = np.frombuffer(self._rank, np.int32)
        kind = np.frombuffer(self._kind, np.int8)
        peer = np.frombuffer(self._peer, np.int32)
        tag = np.frombuffer(self._tag, np.int64)
        size = np.frombuffer(self._size, np.int64)
        open_ = np.flatnonzero(np.frombuffer(self._matched, np.int8) == 0)
        # tags numbered densely: the (source, destination, tag) keys then pack into one int64
        dense = np.unique(tag[open_], return_inverse=True)[1].reshape(-1)
        sends, recvs = fifo_match(rank[open_], kind[open_], peer[open_], dense)
        sends, recvs = open_[sends], open_[recvs]
        comm_ops = int(np.count_nonzero((kind[open_] == SEND) | (kind[open_] == RECV)))
        if 2 * sends.size != comm_ops:
            matched = np.frombuffer(self._matched, np.int8).astype(bool)
            matched[sends] = matched[recvs] = True
            v = int(np.flatnonzero(((kind == SEND) | (kind == RECV)) & ~matched)[0])
            what = "send to" if kind[v] == SEND else "receive from"
            raise TraceError(
                f"rank {rank[v]}'s {what} rank {peer[v]} ({size[v]} bytes, {_tag_text(tag[v])}) "
                "has no matching operation on the other side",
                path=where,
            )
        bad = np.flatnonzero(size[sends] != size[recvs])
        if bad.size:
            s, r = int(sends[bad[0]]), int(recvs[bad[0]])
            raise TraceError(
                f"rank {rank[s]} sends {size[s]} bytes to rank {rank[r]} ({_tag_text(tag[s])}), "
                f"which receives {size[r]} bytes",
                path=where,
            )
        src = np.concatenate((np.frombuffer(self._src, np.int64), sends))
        dst = np.concatenate((np.frombuffer(self._dst, np.int64), recvs))
        ekind = np.concatenate(
            (np.frombuffer(self._ekind, np.int8), np.full(sends.size, MESSAGE, np.int8))
        )
        return ExecutionGraph.from_arrays(
            self.num_ranks,
            rank=rank,
            kind=kind,
            cost_ns=np.frombuffer(self._cost, np.float64),
            size=size,
            peer=peer,
            tag=tag,
            edge_src=src,
            edge_dst=dst,
            edge_kind=ekind,
            cpu=np.frombuffer(self._cpu, np.int16),
            nic=np.frombuffer(self._nic, np.int16),
            meta=meta,
        )


def _tag_text(tag: int) -> str:
    if tag >= COLL_TAG_BASE:
        rest = int(tag) - COLL_TAG_BASE
        comm, low = divmod(rest, COMM_TAG_STRIDE)
        return f"collective {low >> 10} on communicator {comm}, lane {low & (MAX_LANES - 1)}"
    return f"tag {tag}"


@dataclass(frozen=True)
class _Template:
    """One member's part of a plan as arrays: vertex 0 is the entry, the last the exit; edge
    ends are local ids; ``peer`` is group-relative; ``lane`` numbers tags and cpus."""

    kind: np.ndarray
    cost: np.ndarray
    size: np.ndarray
    peer: np.ndarray
    lane: np.ndarray
    nic: np.ndarray
    src: np.ndarray
    dst: np.ndarray


def _template(plan: NcclPlan, member: int, nics: int) -> _Template:
    kind, cost, size, peer, lane_of, nic = [CALC], [0.0], [0], [0], [0], [0]
    src: list[int] = []
    dst: list[int] = []
    lasts = []
    hop = plan.protocol.hop_ns
    for lane, rounds in enumerate(plan.lanes[member]):
        prev = 0
        for rnd in rounds:
            ops = []
            for step in rnd:
                v = len(kind)
                kind.append(step.kind)
                cost.append(0.0)
                size.append(step.size)
                peer.append(step.peer)
                lane_of.append(lane)
                nic.append(step.channel % nics)
                src.append(prev)
                dst.append(v)
                ops.append(v)
            join = len(kind)
            kind.append(CALC)
            cost.append(hop)
            size.append(0)
            peer.append(0)
            lane_of.append(lane)
            nic.append(0)
            src.extend(ops)
            dst.extend([join] * len(ops))
            prev = join
        lasts.append(prev)
    lasts = lasts or [0]  # a one-member group: the exit follows the entry
    exit_ = len(kind)
    kind.append(CALC)
    cost.append(0.0)
    size.append(0)
    peer.append(0)
    lane_of.append(0)
    nic.append(0)
    src.extend(lasts)
    dst.extend([exit_] * len(lasts))
    return _Template(
        np.asarray(kind, np.int8),
        np.asarray(cost, np.float64),
        np.asarray(size, np.int64),
        np.asarray(peer, np.int64),
        np.asarray(lane_of, np.int64),
        np.asarray(nic, np.int16),
        np.asarray(src, np.int64),
        np.asarray(dst, np.int64),
    )
