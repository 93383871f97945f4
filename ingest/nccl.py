"""NCCL collectives as point-to-point messages: ring, double binary tree, all-to-all, send/recv.

NCCL (NVIDIA Collective Communications Library) runs a collective as a set of *channels*, each
an independent ring or tree over the GPUs carrying its share of the bytes, and cuts a channel's
data into pieces that pipeline along it. A *protocol* sets how the bytes travel: Simple (plain
stores, a fence per step), LL (8 bytes of data and an 8-byte flag per 16-byte line) and LL128
(120 bytes of data per 128-byte line). :func:`plan` turns one collective instance into, per
member, *lanes* (a channel's ring, one tree of a channel) of *rounds* of sends and receives
(the round contract of :mod:`llamp.ingest.collectives` within a lane: round ``k`` starts once
round ``k−1`` has finished; lanes progress independently), each step tagged with its channel
(the GPU readers put channel ``c`` on NIC ``c mod nics``).

Algorithms (``P`` members, ``n`` the collective's bytes as NCCL counts them: the buffer of an
all-reduce, broadcast or reduce, the gathered output of an all-gather, the reduced input of a
reduce-scatter, the whole send buffer of an all-to-all; ``C`` pieces per block, rounds of
a pipeline laid out as a wavefront: round ``r`` holds piece ``j`` of step ``k`` for every
``j + k = r``):

==============  =========  ====================================================  ===========
op              algorithm  schedule                                              rounds
==============  =========  ====================================================  ===========
allreduce       ring       reduce-scatter then all-gather around the ring:        2(P−1)+C−1
                           step k, member i sends block (i−k) mod P to i+1
allreduce       tree       NCCL's double binary tree (``ncclGetDtree``): half of  ≤ 2(C+1)
                           the bytes up then down each tree, both trees at once
allgather       ring       step k, member i forwards block (i−k) mod P            P−1+C−1
reduce_scatter  ring       step k, member i sends its partial block (i−k−1)       P−1+C−1
bcast           ring       a chain from the root along the ring                   P−1+C−1
reduce          ring       a chain along the ring ending at the root              P−1+C−1
alltoall        p2p        every member sends n/P² to every other, one round      1
gather          p2p        every member sends its n/P to the root, one round      1
scatter         p2p        the root sends each member its n/P, one round          1
sendrecv        p2p        one message                                            1
==============  =========  ====================================================  ===========

Costs in LogGPS (o = 0, eager, per-hop latency 0, one channel, C = 1): every step is one
message per member on its own link, so ``T`` is the textbook's (tests/test_nccl.py checks each
to 1e-9): ring all-reduce ``2(P−1)·(L + (n/P − 1)·G)`` — Patarasuk & Yuan's
``2(P−1)·α + 2(P−1)/P·n·β`` with LogGP's ``s − 1`` bytes per message — ring all-gather and
reduce-scatter ``(P−1)·(L + (n/P − 1)·G)``, broadcast and reduce ``(P−1)·(L + (n − 1)·G)``
(pipelined: ``(P−1)·L + (P−1 + C−1)·(n/C − 1)·G``). Where a member moves several messages at
once the textbook assumes full-duplex links, LogGPS's ``overlap`` NIC model: the tree
all-reduce (two channels on two NICs) is ``2·d·(L + (n/2 − 1)·G)`` with ``d`` the deeper
tree's depth (``⌈log2 P⌉`` or one less), the pipelined ring ``(S + C − 1)·(L + (n/(P·C) − 1)·G)``
for ``S`` steps; the ``serial`` NIC model serialises a node's two children and pieces in flight.

Protocols (:data:`PROTOCOLS`): a piece of ``b`` payload bytes is a message of
``⌈b · wire⌉`` bytes (LL 2, LL128 128/120, Simple 1: the ``G`` term) and every round's
join carries the protocol's per-hop latency (a calc, GPU-side, outside ``L``): NCCL's
tuning table ``hwLat`` for NVLink rings (src/graph/tuning.cc): LL 0.6 µs, LL128 1.9 µs, Simple
3.4 µs. The pipeline piece is one NCCL step of the default buffers (``NCCL_BUFFSIZE`` 4 MiB /
8 steps = 512 KiB for Simple; LL 64 KiB of lines = 32 KiB of data; LL128 614,400 bytes of
lines = 576,000 of data); a block is cut into at most :data:`MAX_PIECES` pieces.

Choice (:func:`choose`): NCCL's own cost model (``ncclTopoTuneModel``): for each enabled
algorithm and protocol ``time = baseLat + steps·hwLat + n / busBw`` with NCCL's latency and
bandwidth tables and corrections (LL: half the bus bandwidth, LL128: 0.92, tree all-reduce:
0.92 and half the algorithm bandwidth), and the fastest wins. The machine it assumes is
:class:`NcclMachine` (GPUs per node, per-channel bandwidths); the size-class correction
factors of newer NCCL versions are left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

from llamp.errors import InputError
from llamp.graph import RECV, SEND

#: Point-to-point transfers of at most this many bytes per peer use LL, larger ones Simple
#: (``NCCL_P2P_LL_THRESHOLD``).
P2P_LL_THRESHOLD = 16384

#: At most this many pipeline pieces per block (bounds the graph at 2(P−1)·P·C messages).
MAX_PIECES = 64


@dataclass(frozen=True)
class Protocol:
    """An NCCL protocol: bytes on the wire per payload byte, per-hop latency, pipeline piece."""

    name: str
    wire: float
    hop_ns: float
    piece_bytes: int

    def wire_bytes(self, payload: int) -> int:
        """Bytes a piece of ``payload`` bytes puts on the wire (flags and line padding)."""
        if self.name == "LL128":
            return -(-payload * 16 // 15)
        return int(payload * self.wire)


PROTOCOLS: dict[str, Protocol] = {
    "simple": Protocol("Simple", 1.0, 3400.0, 512 * 1024),
    "ll": Protocol("LL", 2.0, 600.0, 32 * 1024),
    "ll128": Protocol("LL128", 128 / 120, 1900.0, 576_000),
}
"""NCCL's protocols (lower-case keys, as in algorithm names such as ``nccl_ring_ll128``)."""

#: op → the NCCL algorithms :func:`plan` expands.
NCCL_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "allreduce": ("ring", "tree"),
    "allgather": ("ring",),
    "reduce_scatter": ("ring",),
    "bcast": ("ring",),
    "reduce": ("ring",),
    "alltoall": ("p2p",),
    "gather": ("p2p",),
    "scatter": ("p2p",),
    "sendrecv": ("p2p",),
}


@dataclass(frozen=True, slots=True)
class NcclStep:
    """One send or receive of one member: group-relative peer, wire bytes, channel."""

    kind: int
    peer: int
    size: int
    channel: int


@dataclass(frozen=True)
class NcclPlan:
    """One NCCL collective instance: ``lanes[member][lane][k]`` = the steps of round ``k`` of
    one of the member's lanes. Lanes progress independently (a channel's ring, one tree of a
    channel): each lane of a member starts when the member enters the collective, and the member
    leaves when all its lanes have finished."""

    op: str
    algorithm: str
    protocol: Protocol
    channels: int
    pieces: int
    lanes: tuple[tuple[tuple[tuple[NcclStep, ...], ...], ...], ...]

    @property
    def members(self) -> int:
        return len(self.lanes)

    @property
    def messages(self) -> int:
        return sum(1 for m in self.lanes for lane in m for r in lane for s in r if s.kind == SEND)

    def merged_rounds(self) -> tuple[tuple[tuple[NcclStep, ...], ...], ...]:
        """Each member's lanes as one chain of rounds (the form of
        :mod:`llamp.ingest.collectives`): channels of a ring, chain or point-to-point plan side
        by side (round ``k`` = round ``k`` of every lane: they have the same shape), the two
        trees one after the other (merging trees of different shapes round by round could
        deadlock when every message is a rendezvous)."""
        if self.algorithm == "tree":
            return tuple(tuple(r for lane in member for r in lane) for member in self.lanes)
        return tuple(
            tuple(
                tuple(s for lane in member if k < len(lane) for s in lane[k])
                for k in range(max((len(lane) for lane in member), default=0))
            )
            for member in self.lanes
        )


@dataclass(frozen=True)
class NcclMachine:
    """What NCCL's tuning model needs to know of the machine (``ncclTopoTuneModel``).

    ``gpus_per_node`` places members on nodes (consecutive members share a node);
    ``bw_intra_gbps``/``bw_inter_gbps`` are one channel's bandwidth (GB/s) inside a node and
    between nodes; ``channels`` the channels a collective uses; ``nics`` the NICs of a node
    (channel ``c`` uses NIC ``c mod nics``). Defaults: an H100 node's NVLink channel (20 GB/s)
    and one 400 Gb/s NIC shared by two channels (25 GB/s each).
    """

    gpus_per_node: int = 1
    channels: int = 2
    nics: int = 1
    bw_intra_gbps: float = 20.0
    bw_inter_gbps: float = 25.0


# NCCL tuning tables (src/graph/tuning.cc), µs; index [algorithm][protocol] with protocols
# ordered LL, LL128, Simple.
_PROTO_ORDER = ("ll", "ll128", "simple")
_BASE_LAT = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4)}
_HW_LAT = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0)},
}
_LL_MAX_BW = (141.0, 45.0, 35.0)  # Hopper, by nodes 1 / 2 / more (GB/s)
_PER_CH_RING_LL128_BW = 36.7
_PER_CH_TREE_BW = (38.7, 41.4, 36.0)


def _split(total: int, parts: int) -> list[int]:
    q, rem = divmod(total, parts)
    return [q + 1 if j < rem else q for j in range(parts)]


def _pieces(block: int, protocol: Protocol) -> int:
    return max(1, min(MAX_PIECES, -(-block // protocol.piece_bytes)))


_Op = tuple[int, int, int]  # (kind, peer, payload bytes)


def _wavefront(steps: list[list[list[_Op]]], pieces: int) -> list[list[_Op]]:
    """Lay ``steps[k][j]`` (the ops of step ``k`` on piece ``j``) out as rounds: round ``r``
    holds piece ``j`` of step ``r − j``, so piece ``j + 1`` follows piece ``j`` one round later."""
    rounds = []
    for r in range(len(steps) + pieces - 1):
        ops: list[_Op] = []
        for j in range(max(0, r - len(steps) + 1), min(pieces, r + 1)):
            ops.extend(steps[r - j][j])
        rounds.append(ops)
    return rounds


def _ring(P: int, i: int, blocks: list[int], nsteps: int, shift: int, pieces: int):
    """Ring steps of member ``i`` on one channel: in step ``k`` it sends block
    ``(i − k − shift) mod P`` to ``i+1`` and receives ``(i − 1 − k − shift) mod P`` from ``i−1``."""
    nxt, prv = (i + 1) % P, (i - 1) % P
    steps = []
    for k in range(nsteps):
        sb, rb = blocks[(i - k - shift) % P], blocks[(prv - k - shift) % P]
        steps.append(
            [
                [(SEND, nxt, sp), (RECV, prv, rp)]
                for sp, rp in zip(_split(sb, pieces), _split(rb, pieces), strict=True)
            ]
        )
    return _wavefront(steps, pieces)


def _chain(P: int, i: int, w: int, n: int, pieces: int):
    """A chain along the ring direction: position ``w`` receives each piece from ``i−1`` and
    forwards it to ``i+1`` one round later (position 0 starts it, ``P−1`` ends it)."""
    steps = []
    parts = _split(n, pieces)
    if w > 0:
        steps.append([[(RECV, (i - 1) % P, b)] for b in parts])
    if w < P - 1:
        steps.append([[(SEND, (i + 1) % P, b)] for b in parts])
    return _wavefront(steps, pieces)


def _btree(P: int, r: int) -> tuple[int, int, int]:
    """NCCL's binary tree (``ncclGetBtree``): (parent, child0, child1) of ``r``, −1 if none."""
    bit = 1
    while bit < P:
        if bit & r:
            break
        bit <<= 1
    if r == 0:
        return -1, -1, (bit >> 1) if P > 1 else -1
    up = (r ^ bit) | (bit << 1)
    if up >= P:
        up = r ^ bit
    low = bit >> 1
    d0 = -1 if low == 0 else r - low
    d1 = -1 if low == 0 else r + low
    while d1 >= P:
        low >>= 1
        d1 = -1 if low == 0 else r + low
    return up, d0, d1


def dtree(P: int, r: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """NCCL's double binary tree (``ncclGetDtree``): the second tree is the first shifted by one
    (odd ``P``) or mirrored (even ``P``), so a leaf of one tree is inner in the other."""
    t0 = _btree(P, r)
    if P % 2:
        u, a, b = _btree(P, (r - 1 + P) % P)
        t1 = tuple(-1 if x == -1 else (x + 1) % P for x in (u, a, b))
    else:
        u, a, b = _btree(P, P - 1 - r)
        t1 = tuple(-1 if x == -1 else P - 1 - x for x in (u, a, b))
    return t0, t1  # type: ignore[return-value]


def tree_depth(P: int) -> int:
    """Edges on the longest root-to-leaf path over both trees of :func:`dtree`."""
    deepest = 0
    for t in (0, 1):
        parent = [dtree(P, r)[t][0] for r in range(P)]
        for r in range(P):
            d, x = 0, r
            while parent[x] != -1:
                x, d = parent[x], d + 1
            deepest = max(deepest, d)
    return deepest


def _tree(P: int, i: int, t: int, n: int, pieces: int):
    """One tree of the all-reduce at member ``i``: reduce each piece up (receive it from the
    children, then send it to the parent), then broadcast it down."""
    parent, c0, c1 = dtree(P, i)[t]
    kids = [c for c in (c0, c1) if c != -1]
    parts = _split(n, pieces)
    up, down = [], []
    if kids:
        up.append([[(RECV, k, b) for k in kids] for b in parts])
    if parent != -1:
        up.append([[(SEND, parent, b)] for b in parts])
        down.append([[(RECV, parent, b)] for b in parts])
    if kids:
        down.append([[(SEND, k, b) for k in kids] for b in parts])
    return _wavefront(up, pieces) + _wavefront(down, pieces)


@lru_cache(maxsize=512)
def plan(
    op: str,
    P: int,
    nbytes: int,
    *,
    algorithm: str = "ring",
    protocol: str = "simple",
    channels: int = 1,
    pieces: int | None = None,
    root: int = 0,
    blocks: tuple[int, ...] | None = None,
    hop_ns: float | None = None,
) -> NcclPlan:
    """The NCCL schedule of ``op`` on ``P`` members moving ``nbytes`` (module docstring).

    ``pieces`` per block defaults to the protocol's pipeline piece (at most
    :data:`MAX_PIECES`); ``blocks`` gives unequal per-member blocks of a ring all-gather or
    reduce-scatter (their sum is ``nbytes``); ``hop_ns`` replaces the protocol's per-hop
    latency. Sizes in the plan are wire bytes.
    """
    if op not in NCCL_ALGORITHMS:
        raise InputError(f"no NCCL algorithm for {op!r}; NCCL has: {', '.join(NCCL_ALGORITHMS)}")
    if algorithm not in NCCL_ALGORITHMS[op]:
        raise InputError(
            f"unknown NCCL {op} algorithm {algorithm!r}; known: {', '.join(NCCL_ALGORITHMS[op])}"
        )
    if protocol not in PROTOCOLS:
        raise InputError(f"unknown NCCL protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    if P < 1 or nbytes < 0 or channels < 1 or not 0 <= root < P or (op == "sendrecv" and P != 2):
        raise InputError(
            f"NCCL {op}: need P ≥ 1 (2 for sendrecv), bytes ≥ 0, channels ≥ 1 and a root in "
            f"0..P−1 (got P={P}, bytes={nbytes}, channels={channels}, root={root})"
        )
    proto = PROTOCOLS[protocol]
    if hop_ns is not None:
        proto = replace(proto, hop_ns=float(hop_ns))
    if blocks is None:
        blocks = tuple(_split(nbytes, P))
    elif len(blocks) != P or sum(blocks) != nbytes or min(blocks) < 0:
        raise InputError(f"NCCL {op}: {len(blocks)} blocks summing to {sum(blocks)}, need P={P}")
    tree = op == "allreduce" and algorithm == "tree"
    lanes = max(channels, 2) if tree else channels
    chunk = {"bcast": nbytes, "reduce": nbytes, "allreduce": nbytes if tree else max(blocks)}
    C = pieces if pieces is not None else _pieces(chunk.get(op, max(blocks)) // lanes, proto)
    if C < 1:
        raise InputError(f"NCCL {op}: pieces must be ≥ 1, got {C}")
    shares = [tuple(_split(b, lanes)) for b in blocks]  # member block → its part per lane
    members = []
    for i in range(P):
        per_lane = []
        for lane in range(lanes if P > 1 else 0):
            lane_blocks = [s[lane] for s in shares]
            part = _split(nbytes, lanes)[lane]
            if op == "allreduce" and not tree:
                rounds = _ring(P, i, lane_blocks, 2 * (P - 1), 0, C)
            elif tree:
                rounds = _tree(P, i, lane % 2, part, C)
            elif op == "allgather":
                rounds = _ring(P, i, lane_blocks, P - 1, 0, C)
            elif op == "reduce_scatter":
                rounds = _ring(P, i, lane_blocks, P - 1, 1, C)
            elif op in ("bcast", "reduce"):
                w = (i - root) % P if op == "bcast" else (i - root - 1) % P
                rounds = _chain(P, i, w, part, C)
            elif op == "alltoall":
                each = _split(part // P, P) if P else []
                rounds = [
                    [(SEND, (i + d) % P, each[(i + d) % P]) for d in range(1, P)]
                    + [(RECV, (i - d) % P, each[i]) for d in range(1, P)]
                ]
            elif op in ("gather", "scatter"):
                block = _split(part, P)
                to_root = op == "gather"
                if i == root:
                    kind = RECV if to_root else SEND
                    order = [(root + d) % P for d in range(1, P)]
                    rounds = [[(kind, m, block[m]) for m in order]]
                else:
                    rounds = [[(SEND if to_root else RECV, root, block[i])]]
            else:  # sendrecv: member 0 sends to member 1
                rounds = [[(SEND, 1, part)]] if i == 0 else [[(RECV, 0, part)]]
            per_lane.append(
                tuple(
                    tuple(NcclStep(k, p, proto.wire_bytes(s), lane % channels) for k, p, s in r)
                    for r in rounds
                    if r
                )
            )
        members.append(tuple(per_lane))
    return NcclPlan(op, algorithm, proto, channels, C, tuple(members))


# --------------------------------------------------------------------------- NCCL's choice
def model_time_us(
    op: str, algorithm: str, protocol: str, P: int, nbytes: int, machine: NcclMachine
) -> float:
    """NCCL's estimate of one collective (µs): ``baseLat + steps·hwLat + n / busBw``
    (``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime``), ∞ where NCCL has no such variant."""
    if algorithm not in NCCL_ALGORITHMS.get(op, ()):
        return math.inf
    if op in ("alltoall", "gather", "scatter", "sendrecv") or P < 2:
        return 0.0  # NCCL's model has no time for these (nothing to send when P = 1)
    p = _PROTO_ORDER.index(protocol)
    nodes = max(1, -(-P // machine.gpus_per_node))
    ppn = P / nodes
    steps = (
        2 * (P - 1) if op == "allreduce" else P - 1 if op in ("allgather", "reduce_scatter") else P
    )
    idx2 = min(nodes, 3) - 1
    bw = machine.bw_intra_gbps if nodes <= 2 else machine.bw_inter_gbps
    bus = machine.channels * bw
    if algorithm == "ring" and protocol == "ll":
        bus = min(_LL_MAX_BW[idx2], bus * 0.5)
    if algorithm == "ring" and protocol == "ll128":
        bus = min(bus * 0.92, machine.channels * _PER_CH_RING_LL128_BW)
    if algorithm == "tree":
        bus = min(bus * 0.92, machine.channels * _PER_CH_TREE_BW[idx2])
        if protocol == "ll":
            bus = min(bus / 3.8, _LL_MAX_BW[idx2])
        if protocol == "ll128":
            bus = min(bus * (7 / 9 if nodes == 1 else 120 / 128), machine.channels * 36.7)
    bus *= P / steps if algorithm == "ring" else 0.5
    lat = _BASE_LAT[algorithm][p]
    intra = _HW_LAT["nvlink"][algorithm][p]
    inter = _HW_LAT["net"]["tree" if ppn == 1 else algorithm][p]
    if algorithm == "ring":
        if op in ("bcast", "reduce"):
            lat += steps * (_HW_LAT["nvlink" if nodes == 1 else "net"][algorithm][p])
        else:
            inter_steps = 0 if nodes == 1 else 2 * (nodes - 1) if op == "allreduce" else nodes - 1
            lat += (steps - inter_steps) * intra + inter_steps * inter
    else:
        lat += 2 * ((P // nodes - 1) * intra + int(math.log2(nodes)) * inter)
    return lat + nbytes / (1000.0 * bus)


def choose(op: str, P: int, nbytes: int, machine: NcclMachine | None = None) -> tuple[str, str]:
    """NCCL's (algorithm, protocol) for ``op`` of ``nbytes`` on ``P`` GPUs: the fastest by
    :func:`model_time_us`, ties to the first in NCCL's order (LL first); point-to-point
    operations use LL up to :data:`P2P_LL_THRESHOLD` bytes per peer, else Simple."""
    machine = machine or NcclMachine()
    if op in ("alltoall", "gather", "scatter", "sendrecv"):
        per_peer = nbytes // max(1, P * P if op == "alltoall" else P)
        return "p2p", "ll" if per_peer <= P2P_LL_THRESHOLD else "simple"
    best = (math.inf, "", "")
    for alg in NCCL_ALGORITHMS[op]:
        for proto in _PROTO_ORDER:
            t = model_time_us(op, alg, proto, P, nbytes, machine)
            if t < best[0]:
                best = (t, alg, proto)
    if not best[1]:
        return NCCL_ALGORITHMS[op][0], "simple"
    return best[1], best[2]


def parse_choice(op: str, name: str) -> tuple[str | None, str | None] | None:
    """``nccl``, ``nccl_ALG``, ``nccl_PROTO`` or ``nccl_ALG_PROTO`` → (algorithm, protocol),
    ``None`` for a part NCCL's rule picks; ``None`` if ``name`` is no NCCL choice for ``op``."""
    if op not in NCCL_ALGORITHMS or not (name == "nccl" or name.startswith("nccl_")):
        return None
    parts = name.split("_")[1:]
    alg = proto = None
    if parts and parts[0] in NCCL_ALGORITHMS[op]:
        alg = parts.pop(0)
    if parts and parts[0] in PROTOCOLS:
        proto = parts.pop(0)
    return None if parts else (alg, proto)


def choice_names(op: str) -> tuple[str, ...]:
    """Every NCCL choice name of ``op`` (``nccl``, ``nccl_ring``, ``nccl_ring_ll128``, …)."""
    names = ["nccl"]
    for alg in NCCL_ALGORITHMS.get(op, ()):
        names.append(f"nccl_{alg}")
        names.extend(f"nccl_{alg}_{p}" for p in PROTOCOLS)
    return tuple(names)


def check_choices(collectives: dict[str, str] | None, *, what: str) -> dict[str, str]:
    """Every NCCL operation's choice (default ``nccl``) from a user's ``{op: choice}``;
    choices for operations NCCL does not run (an MPI-only ``scan``) are ignored."""
    chosen = dict.fromkeys(NCCL_ALGORITHMS, "nccl")
    for op, name in (collectives or {}).items():
        if op not in NCCL_ALGORITHMS:
            continue
        if parse_choice(op, name) is None:
            raise InputError(
                f"{op}={name}: {what} runs NCCL collectives; choose one of "
                f"{', '.join(choice_names(op))}"
            )
        chosen[op] = name
    return chosen


def resolve(
    op: str, P: int, nbytes: int, name: str = "nccl", machine: NcclMachine | None = None
) -> tuple[str, str]:
    """The (algorithm, protocol) of choice ``name``, NCCL's rule filling what it leaves open."""
    parsed = parse_choice(op, name)
    if parsed is None:
        raise InputError(
            f"unknown NCCL choice {name!r} for {op}; known: {', '.join(choice_names(op))}"
        )
    alg, proto = parsed
    if alg is None or proto is None:
        auto_alg, auto_proto = choose(op, P, nbytes, machine)
        if alg is None:
            alg = auto_alg
        if proto is None:
            proto = auto_proto if alg == auto_alg else _best_protocol(op, alg, P, nbytes, machine)
    return alg, proto


def _best_protocol(op: str, alg: str, P: int, nbytes: int, machine: NcclMachine | None) -> str:
    machine = machine or NcclMachine()
    if alg == "p2p":
        return choose(op, P, nbytes, machine)[1]
    times = [(model_time_us(op, alg, p, P, nbytes, machine), k) for k, p in enumerate(_PROTO_ORDER)]
    return _PROTO_ORDER[min(times)[1]]


# --------------------------------------------------------------------------- MPI traces
def _mpi_bytes(op: str, P: int, size: int, counts: tuple[int, ...]) -> tuple[int, tuple | None]:
    """An MPI call's size (:data:`llamp.ingest.events.COLL_OPS` meaning) as NCCL's bytes."""
    if op in ("allgather", "gather", "scatter"):
        return P * size, None
    if op == "alltoall":
        return P * P * size, None
    if op == "reduce_scatter":
        return sum(counts), counts
    return size, None


def mpi_algorithms() -> dict[str, dict[str, object]]:
    """NCCL's algorithms as algorithms of :mod:`llamp.ingest.collectives` (op → name → plan
    function) for MPI traces: ``nccl`` (NCCL's rule picks the algorithm), ``nccl_ring``,
    ``nccl_tree``, ``nccl_p2p``. The MPI builder's rounds hold messages only, so there a plan is
    its message pattern: payload bytes (Simple), no per-hop latency, one channel, each member's
    lanes as one chain (:meth:`NcclPlan.merged_rounds`). The protocols are for the GPU readers,
    whose graphs carry them."""

    def make(op: str, name: str):
        def expand(a) -> list:
            from llamp.ingest.collectives import _recv, _send

            nbytes, blocks = _mpi_bytes(op, a.P, a.size, a.counts)
            alg = resolve(op, a.P, nbytes, name)[0]
            p = plan(op, a.P, nbytes, algorithm=alg, protocol="simple", root=a.root, blocks=blocks)
            return [
                [[(_send if s.kind == SEND else _recv)(s.peer, s.size) for s in rnd] for rnd in m]
                for m in p.merged_rounds()
            ]

        return expand

    mpi_ops = ("allreduce", "allgather", "reduce_scatter", "bcast", "reduce", "alltoall",
               "gather", "scatter")  # fmt: skip
    return {
        op: {name: make(op, name) for name in ("nccl", *(f"nccl_{a}" for a in NCCL_ALGORITHMS[op]))}
        for op in mpi_ops
    }
