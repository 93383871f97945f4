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
from dataclasses import dataclass, field

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
    """Append vertices rank by rank (ascending), then :meth:`finish` into a validated graph.

    Single operations go to compact typed buffers (8 bytes or less per value: 10^7 vertices
    stay in the GB range); a collective call only reserves its ids and notes (first id, rank,
    tag base, cpu) under its template, and :meth:`finish` writes every call of one template at
    once (one vectorised scatter per column instead of a dozen array calls per collective)."""

    def __init__(self, num_ranks: int, *, nics: int = 1):
        self.num_ranks = num_ranks
        self.nics = max(1, nics)
        self._count = 0  # vertices so far (single operations and reserved collective blocks)
        self._at = array("q")  # the id of each single operation
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
        self._blocks: dict[tuple, _Blocks] = {}
        self._templates: dict[tuple[int, int], _Template] = {}  # one per plan and member

    def _ascending(self, rank: int) -> None:
        if rank < self._last_rank:
            raise RuntimeError("GpuGraphBuilder takes ranks in ascending order")
        self._last_rank = rank

    def _vertex(self, rank: int, kind: int, cost: float, size: int, peer: int, tag: int,
                cpu: int, nic: int) -> int:  # fmt: skip
        self._ascending(rank)
        v = self._count
        self._count += 1
        self._at.append(v)
        self._rank.append(rank)
        self._kind.append(kind)
        self._cost.append(cost)
        self._size.append(size)
        self._peer.append(peer)
        self._tag.append(tag)
        self._cpu.append(cpu)
        self._nic.append(nic)
        self._matched.append(0)
        return v

    def copy_vertices(self, columns: dict[str, np.ndarray], *, matched: np.ndarray) -> int:
        """Append vertices given as numpy columns (``rank``, ``kind``, ``cost_ns``, ``size``,
        ``peer``, ``tag``, ``cpu``, ``nic``, all of one length, ranks not below the last one);
        ``matched`` marks sends/recvs whose messages the caller adds with :meth:`edges`.
        Returns the id of the first."""
        first = self._count
        n = len(columns["rank"])
        if n == 0:
            return first
        self._ascending(int(columns["rank"][0]))
        self._last_rank = int(columns["rank"][-1])
        self._count += n
        self._at.frombytes(np.arange(first, first + n, dtype=np.int64).tobytes())
        for name, buf, dtype in self._buffers():
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
        plan and member (:func:`_template`); the call reserves their ids, shifted by its first."""
        if instance >= _MAX_INSTANCES:
            raise TraceError(
                f"more than {_MAX_INSTANCES} collectives on one communicator are not supported"
            )
        self._ascending(rank)
        key = (id(plan), member, world)
        blocks = self._blocks.get(key)
        if blocks is None:
            t = self._templates.get((id(plan), member))
            if t is None:
                t = self._templates[(id(plan), member)] = _template(plan, member, self.nics)
            peers = np.where(t.kind != CALC, np.asarray(world, np.int32)[t.peer], 0)
            blocks = self._blocks[key] = _Blocks(plan, t, peers.astype(np.int32))
        first = self._count
        self._count += blocks.template.kind.size
        blocks.first.append(first)
        blocks.rank.append(rank)
        blocks.tag.append(COLL_TAG_BASE + comm * COMM_TAG_STRIDE + (instance << 10))
        blocks.cpu.append(cpu)
        return first, self._count - 1

    def _buffers(self) -> tuple[tuple[str, array, type], ...]:
        """The vertex columns a block appends to: (name, buffer, dtype)."""
        return (
            ("rank", self._rank, np.int32),
            ("kind", self._kind, np.int8),
            ("cost_ns", self._cost, np.float64),
            ("size", self._size, np.int64),
            ("peer", self._peer, np.int32),
            ("tag", self._tag, np.int64),
            ("cpu", self._cpu, np.int16),
            ("nic", self._nic, np.int16),
        )

    def _columns(self) -> dict[str, np.ndarray]:
        """Every vertex column, single operations and collective blocks in place."""
        N = self._count
        at = np.frombuffer(self._at, np.int64)
        cols = {}
        for name, buf, dtype in (*self._buffers(), ("matched", self._matched, np.int8)):
            col = np.zeros(N, dtype) if name == "matched" else np.empty(N, dtype)
            col[at] = np.frombuffer(buf, dtype)
            cols[name] = col
        for b in self._blocks.values():
            t = b.template
            first = np.frombuffer(b.first, np.int64)
            ids = first[:, None] + np.arange(t.kind.size)
            comm_op = t.kind != CALC
            cols["rank"][ids] = np.frombuffer(b.rank, np.int32)[:, None]
            cols["kind"][ids] = t.kind
            cols["cost_ns"][ids] = t.cost
            cols["size"][ids] = t.size
            cols["peer"][ids] = b.peers
            cols["tag"][ids] = np.where(
                comm_op, np.frombuffer(b.tag, np.int64)[:, None] + t.lane, 0
            )
            cols["cpu"][ids] = np.frombuffer(b.cpu, np.int16)[:, None] + t.lane.astype(np.int16)
            cols["nic"][ids] = t.nic
        return cols

    def _edge_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        src = [np.frombuffer(self._src, np.int64)]
        dst = [np.frombuffer(self._dst, np.int64)]
        kind = [np.frombuffer(self._ekind, np.int8)]
        for b in self._blocks.values():
            t = b.template
            first = np.frombuffer(b.first, np.int64)[:, None]
            src.append((first + t.src).reshape(-1))
            dst.append((first + t.dst).reshape(-1))
            kind.append(np.full(src[-1].size, REQUIRES, np.int8))
        return np.concatenate(src), np.concatenate(dst), np.concatenate(kind)

    def _instance_messages(self, matched: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The messages inside collective instances, paired from the plan instead of by FIFO
        over every vertex: within one plan the k-th send ``a → b`` on a lane meets the k-th
        receive at ``b`` from ``a`` on that lane (:func:`_plan_pairs`, once per plan), and an
        instance's members are its calls with the same tag base (one per member). Marks the
        paired vertices in ``matched``; calls of a plan whose members do not all show the same
        instances are left to FIFO matching (which then names what is unmatched)."""
        groups: dict[tuple, dict[int, _Blocks]] = {}
        for (plan_id, member, world), b in self._blocks.items():
            groups.setdefault((plan_id, world), {})[member] = b
        sends, recvs = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for by_member in groups.values():
            plan = next(iter(by_member.values())).plan
            if len(by_member) != plan.members:
                continue
            firsts, tags = [], None
            for m in range(plan.members):
                b = by_member[m]
                tag = np.frombuffer(b.tag, np.int64)
                order = np.argsort(tag, kind="stable")
                if tags is None:
                    tags = tag[order]
                elif not np.array_equal(tag[order], tags):
                    break
                firsts.append(np.frombuffer(b.first, np.int64)[order])
            if len(firsts) != plan.members or (tags[1:] == tags[:-1]).any():
                continue
            pairs = _plan_pairs([by_member[m].template for m in range(plan.members)])
            if pairs is None:
                continue
            send_member, send_local, recv_member, recv_local = pairs
            first = np.stack(firsts)  # member × instance
            s = (first[send_member] + send_local[:, None]).reshape(-1)
            r = (first[recv_member] + recv_local[:, None]).reshape(-1)
            matched[s] = 1
            matched[r] = 1
            sends.append(s)
            recvs.append(r)
        return np.concatenate(sends), np.concatenate(recvs)

    def finish(self, meta: dict, *, where: str) -> ExecutionGraph:
        """Match messages FIFO and build the validated graph; an unmatched send or receive is a
        :class:`TraceError` naming ``where`` and the operation."""
        cols = self._columns()
        rank, kind, peer, tag, size = (cols[k] for k in ("rank", "kind", "peer", "tag", "size"))
        matched = cols.pop("matched")
        inner_sends, inner_recvs = self._instance_messages(matched)
        open_ = np.flatnonzero(matched == 0)
        # tags numbered densely: the (source, destination, tag) keys then pack into one int64
        dense = np.unique(tag[open_], return_inverse=True)[1].reshape(-1)
        sends, recvs = fifo_match(rank[open_], kind[open_], peer[open_], dense)
        sends, recvs = open_[sends], open_[recvs]
        del open_, dense
        comm_ops = int(np.count_nonzero(((kind == SEND) | (kind == RECV)) & (matched == 0)))
        if 2 * sends.size != comm_ops:
            paired = matched.astype(bool)
            paired[sends] = paired[recvs] = True
            v = int(np.flatnonzero(((kind == SEND) | (kind == RECV)) & ~paired)[0])
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
        sends = np.concatenate((sends, inner_sends))
        recvs = np.concatenate((recvs, inner_recvs))
        order = np.argsort(sends, kind="stable")  # messages in send order, as fifo_match gives
        sends, recvs = sends[order], recvs[order]
        del order, inner_sends, inner_recvs
        src, dst, ekind = self._edge_columns()
        src = np.concatenate((src, sends))
        dst = np.concatenate((dst, recvs))
        ekind = np.concatenate((ekind, np.full(sends.size, MESSAGE, np.int8)))
        del sends, recvs
        meta = {**meta, "gpu_streams": True}  # the path is split per stream (llamp.lp.path)
        return ExecutionGraph.from_arrays(
            self.num_ranks,
            rank=rank,
            kind=kind,
            cost_ns=cols["cost_ns"],
            size=size,
            peer=peer,
            tag=tag,
            edge_src=src,
            edge_dst=dst,
            edge_kind=ekind,
            cpu=cols["cpu"],
            nic=cols["nic"],
            meta=meta,
        )


@dataclass
class _Blocks:
    """Every call of one template (plan, member, group): their first ids, ranks, tag bases and
    cpus; ``peers`` are the template's peers as world ranks (0 for calcs)."""

    plan: NcclPlan  # keeps the plan alive: its id is part of the key
    template: _Template
    peers: np.ndarray
    first: array = field(default_factory=lambda: array("q"))
    rank: array = field(default_factory=lambda: array("i"))
    tag: array = field(default_factory=lambda: array("q"))
    cpu: array = field(default_factory=lambda: array("h"))


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


def _plan_pairs(templates: list[_Template]) -> tuple[np.ndarray, ...] | None:
    """(send member, send local id, recv member, recv local id) of every message of one
    instance of a plan whose members' parts are ``templates`` (FIFO per pair and lane);
    ``None`` if some send or receive has no partner (then FIFO matching reports it)."""
    member = np.concatenate([np.full(t.kind.size, m, np.int64) for m, t in enumerate(templates)])
    local = np.concatenate([np.arange(t.kind.size) for t in templates])
    kind = np.concatenate([t.kind for t in templates])
    peer = np.concatenate([t.peer for t in templates])
    lane = np.concatenate([t.lane for t in templates])
    comm = np.flatnonzero(kind != CALC)
    s, r = fifo_match(member[comm], kind[comm], peer[comm], lane[comm])
    if 2 * s.size != comm.size:
        return None
    s, r = comm[s], comm[r]
    return member[s], local[s], member[r], local[r]


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
