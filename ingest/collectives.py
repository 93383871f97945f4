"""MPI collective operations as point-to-point schedules (docs/architecture.md §Ingest).

Schedgen (the LLAMP/LogGOPSim trace converter) replaces every collective by the point-to-point
messages of a concrete algorithm; :func:`expand` does the same for a group of ``P`` members and
returns a :class:`Schedule`: for each member, a list of *rounds*, each a tuple of
:class:`Step` (a send or receive with a group-relative peer and a size in bytes).

Round semantics (the contract with the trace→graph builder): all ops of a member's round ``k``
start together once all of its round ``k−1`` ops have finished (round 0 starts when the member
enters the collective); the member leaves when its last round has finished. A member may have no
rounds at all (nothing to do, e.g. every member when ``P = 1``); empty rounds are never emitted.
Messages match FIFO per ordered pair: the i-th send from ``a`` to ``b`` (in round order, then in
order within a round) is received by the i-th receive at ``b`` from ``a``, with the same size.
Every schedule is deadlock-free even when every message is a rendezvous (a send completes only
once its receive is posted).

Algorithms (``P`` members, ``p' = 2^⌊log2 P⌋``, ``r = P − p'``, ``s`` = ``size``; "messages"
counts sends). Sources: Thakur, Rabenseifner & Gropp, "Optimization of collective communication
operations in MPICH" (IJHPCA 2005; "MPICH" below), Schedgen/LogGOPSim (Hoefler et al.), Bruck
et al. 1997 and Hensgen, Finkel & Manber 1988 (dissemination).

==============  ====================  =====================================================
op              algorithm             messages (bytes)
==============  ====================  =====================================================
barrier         dissemination *       P·⌈log2 P⌉ of 0 B
bcast           binomial *            P−1 of s
bcast           pipelined             (P−1)·⌈s/seg⌉ segments along a chain
bcast           linear                P−1 of s
reduce          binomial *            P−1 of s
reduce          linear                P−1 of s
allreduce       recursive_doubling *  2r + p'·log2 p' of s
allreduce       ring                  2P(P−1) of ≈ s/P (2(P−1)·s bytes in all)
allreduce       rabenseifner          2r + 2p'·log2 p' (halving sizes)
allreduce       reduce_bcast          2(P−1) of s
allreduce       dissemination         P·⌈log2 P⌉ of s (Schedgen's C++ process_trace choice)
allgather       dissemination *       P·⌈log2 P⌉; round k carries min(2^k, P−2^k) blocks
allgather       ring                  P(P−1) of one block
allgather       recursive_doubling    P·log2 P; round k carries 2^k blocks (P = 2^m only)
allgatherv      ring *                P(P−1), the block of the member it originated from
allgatherv      dissemination         as allgather, with the held blocks' sizes
alltoall        linear *              P(P−1) of one block, all in one round
alltoall        pairwise              P(P−1), P−1 rounds
alltoallv       linear *              one per non-zero matrix entry off the diagonal
alltoallv       pairwise              P(P−1), P−1 rounds (zero entries still exchanged)
gather/scatter  binomial *            P−1, each carrying its subtree's blocks
gather/scatter  linear                P−1 of one block
gatherv         linear *              one per non-root member with counts[i] > 0
scatterv        linear *              one per non-root member with counts[i] > 0
reduce_scatter  recursive_halving *   2r + p'·log2 p'
reduce_scatter  ring                  P(P−1)
reduce_scatter  pairwise              P(P−1)
scan            recursive_doubling *  Σ_k #{i : i XOR 2^k < P} of s
scan            linear                P−1 of s
==============  ====================  =====================================================

(* = default, :data:`DEFAULTS`.) The defaults follow Schedgen where Schedgen has an algorithm
(dissemination barrier, binomial bcast and reduce, linear alltoall, dissemination allgather) and
LLAMP's ICON study for allreduce (recursive doubling); the others follow MPICH. Differences from
Schedgen's GOAL output: barrier messages are 0 B (Schedgen: 1 B); the dissemination allgather
carries Bruck's growing blocks (Schedgen sends one block per round, which does not deliver all
the data); a dissemination round's receive waits for the previous round (Schedgen posts it at
once); and a root ≠ 0 rotates the ranks, where Schedgen swaps the root with rank 0.

Rooted algorithms work on relative ranks ``v = (i − root) mod P`` (MPICH's convention). The
binomial tree is Schedgen's: ``v ≥ 1`` is a child of ``v − 2^⌊log2 v⌋``, so a member's
children are ``v + 2^j`` for every ``2^j > v`` (nearest, i.e. largest subtree, first) and the
subtree of ``v ≥ 1`` is ``{v + m·2^(⌊log2 v⌋+1)}``. As in Schedgen's GOAL output, a tree member
posts all its sends to (or receives from) its children in one round; the builder's CPU
serialisation orders them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass
from functools import lru_cache

from llamp.errors import InputError
from llamp.graph import RECV, SEND
from llamp.ingest.nccl import mpi_algorithms

PIPELINE_SEGMENT_BYTES = 65536
"""Default segment of the pipelined bcast: 64 KiB, small enough to pipeline multi-megabyte
broadcasts along the chain, large enough that a 1 GiB broadcast stays at 16384 segments."""


@dataclass(frozen=True, slots=True)
class Step:
    """One point-to-point operation of one group member."""

    kind: int  # SEND or RECV
    peer: int  # peer as an index into the group (0..P-1), not a world rank
    size: int  # bytes


@dataclass(frozen=True)
class Schedule:
    """A collective as point-to-point rounds: ``rounds[member][k]`` = the ops of its round k."""

    op: str
    algorithm: str
    rounds: tuple[tuple[tuple[Step, ...], ...], ...]

    @property
    def members(self) -> int:
        """Group size ``P``."""
        return len(self.rounds)

    @property
    def messages(self) -> int:
        """Number of point-to-point messages (sends)."""
        return sum(1 for member in self.rounds for rnd in member for s in rnd if s.kind == SEND)

    @property
    def bytes(self) -> int:
        """Bytes sent over all messages."""
        return sum(
            s.size for member in self.rounds for rnd in member for s in rnd if s.kind == SEND
        )


_Plan = list[list[Sequence[Step]]]  # member -> rounds -> steps (lists or tuples), while building


@dataclass(frozen=True)
class _Args:
    P: int
    root: int
    size: int
    counts: tuple[int, ...]  # empty unless the op takes counts
    segment: int


# Steps are immutable, so equal ones are shared: a ring allreduce on 1024 members has 4·10^6
# steps but only a few thousand distinct ones.
@lru_cache(maxsize=1 << 15)
def _send(peer: int, size: int) -> Step:
    return Step(SEND, peer, size)


@lru_cache(maxsize=1 << 15)
def _recv(peer: int, size: int) -> Step:
    return Step(RECV, peer, size)


def _split(total: int, parts: int) -> list[int]:
    """``total`` bytes in ``parts`` blocks, the first ``total mod parts`` one byte larger (MPICH)."""
    q, rem = divmod(total, parts)
    return [q + 1 if j < rem else q for j in range(parts)]


def _pof2(P: int) -> int:
    """Largest power of two ≤ P."""
    return 1 << (P.bit_length() - 1)


# --- binomial tree (Schedgen's doubling tree, on relative ranks) ---------------------------------


def _parent(v: int) -> int:
    return v - (1 << (v.bit_length() - 1))


def _children(v: int, P: int) -> list[int]:
    out, j = [], v.bit_length()
    while v + (1 << j) < P:
        out.append(v + (1 << j))
        j += 1
    return out


def _subtree(v: int, P: int) -> int:
    if v == 0:
        return P
    stride = 1 << v.bit_length()
    return (P - v + stride - 1) // stride


def _tree(a: _Args, *, down: bool, block: Callable[[int], int]) -> _Plan:
    """Binomial tree: ``down`` = root to leaves (bcast, scatter), else leaves to root.

    ``block(v)`` is the size of the message between relative rank ``v`` and its parent.
    """
    P, root = a.P, a.root
    plan: _Plan = []
    for i in range(P):
        v = (i - root) % P
        kids = [((c + root) % P, block(c)) for c in _children(v, P)]
        up = [((_parent(v) + root) % P, block(v))] if v else []
        if down:
            rounds = [[_recv(p, n) for p, n in up], [_send(p, n) for p, n in kids]]
        else:
            rounds = [[_recv(p, n) for p, n in kids], [_send(p, n) for p, n in up]]
        plan.append(rounds)
    return plan


def _linear_rooted(
    a: _Args, *, down: bool, block: Callable[[int], int], skip_zero: bool = False
) -> _Plan:
    """Root exchanges with every member directly in one round; ``block(i)`` bytes with member i.

    With ``skip_zero`` (the v-variants) members with an empty block exchange nothing, as MPICH
    and Open MPI skip zero counts.
    """
    P, root = a.P, a.root
    plan: _Plan = [[] for _ in range(P)]
    ops = []
    for v in range(1, P):
        i = (v + root) % P
        n = block(i)
        if skip_zero and n == 0:
            continue
        ops.append(_send(i, n) if down else _recv(i, n))
        plan[i].append([_recv(root, n) if down else _send(root, n)])
    plan[root].append(ops)
    return plan


# --- barrier ---------------------------------------------------------------------------------------


def _dissemination(a: _Args, size: int) -> _Plan:
    """Dissemination (Hensgen, Finkel & Manber 1988; Schedgen): ⌈log2 P⌉ rounds; in round k
    member i sends to (i+2^k) mod P and receives from (i−2^k) mod P."""
    P = a.P
    plan: _Plan = []
    for i in range(P):
        rounds, dist = [], 1
        while dist < P:
            rounds.append((_send((i + dist) % P, size), _recv((i - dist) % P, size)))
            dist <<= 1
        plan.append(rounds)
    return plan


def _barrier_dissemination(a: _Args) -> _Plan:
    """Dissemination barrier with 0-byte messages: P·⌈log2 P⌉ messages."""
    return _dissemination(a, 0)


# --- bcast -----------------------------------------------------------------------------------------


def _bcast_binomial(a: _Args) -> _Plan:
    """Binomial-tree bcast (Schedgen): receive from the parent, then send to all children."""
    return _tree(a, down=True, block=lambda v: a.size)


def _bcast_linear(a: _Args) -> _Plan:
    """Linear bcast: the root sends the whole message to every member in one round."""
    return _linear_rooted(a, down=True, block=lambda i: a.size)


def _bcast_pipelined(a: _Args) -> _Plan:
    """Pipelined chain bcast (Schedgen's ``pipelined_ring``; Open MPI's chain/pipeline).

    The message is cut into ``n = max(1, ⌈size/segment⌉)`` segments (all ``segment`` bytes but
    the last, which holds the remainder) that flow along the chain of relative ranks
    ``0 → 1 → … → P−1``. The root sends segment k in its round k (one segment in flight from
    the root at a time); a middle member receives segment 0 in round 0 and, in round k,
    forwards segment k−1 while receiving segment k; the last member receives segment k in
    round k.
    """
    P, root = a.P, a.root
    n = max(1, -(-a.size // a.segment))
    segs = [a.segment] * (n - 1) + [a.size - a.segment * (n - 1)]
    plan: _Plan = []
    for i in range(P):
        v = (i - root) % P
        prev, nxt = (i - 1) % P, (i + 1) % P
        if v == 0:
            rounds = [(_send(nxt, s),) for s in segs]
        elif v == P - 1:
            rounds = [(_recv(prev, s),) for s in segs]
        else:
            rounds = [[_recv(prev, segs[0])]]
            rounds += [(_send(nxt, segs[k - 1]), _recv(prev, segs[k])) for k in range(1, n)]
            rounds.append([_send(nxt, segs[-1])])
        plan.append(rounds)
    return plan


# --- reduce ----------------------------------------------------------------------------------------


def _reduce_binomial(a: _Args) -> _Plan:
    """Binomial-tree reduce (Schedgen): receive from all children, then send to the parent."""
    return _tree(a, down=False, block=lambda v: a.size)


def _reduce_linear(a: _Args) -> _Plan:
    """Linear reduce: every member sends its whole vector to the root in one round."""
    return _linear_rooted(a, down=False, block=lambda i: a.size)


# --- allreduce -------------------------------------------------------------------------------------


def _old_rank(newrank: int, rem: int) -> int:
    """Group index of a member of the power-of-two subgroup (MPICH's non-power-of-two step)."""
    return newrank * 2 + 1 if newrank < rem else newrank + rem


def _fold(
    i: int, P: int, pre: int, back: Callable[[int], int], body: Callable[[int], list]
) -> list:
    """MPICH's non-power-of-two wrapper around a power-of-two algorithm ``body(newrank)``.

    With ``r = P − p'``: among the first ``2r`` members, even i sends ``pre`` bytes to i+1 and
    drops out, odd i receives them and takes part as ``newrank = (i−1)/2``; the others are
    ``newrank = i − r``. Afterwards odd i sends ``back(i−1)`` bytes (the dropped member's
    result) to i−1.
    """
    rem = P - _pof2(P)
    if i < 2 * rem:
        if i % 2 == 0:
            return [[_send(i + 1, pre)], [_recv(i + 1, back(i))]]
        return [[_recv(i - 1, pre)], *body(i // 2), [_send(i - 1, back(i - 1))]]
    return body(i - rem)


def _allreduce_recursive_doubling(a: _Args) -> _Plan:
    """Recursive doubling (MPICH): p' members exchange the whole vector with ``newrank XOR 2^k``
    for k = 0..log2 p'−1; non-power-of-two P folds in the first 2r members (see :func:`_fold`).

    Messages: ``2r + p'·log2 p'``, all of ``size`` bytes.
    """
    P, s = a.P, a.size
    pof2, rem = _pof2(P), P - _pof2(P)

    def body(newrank: int) -> list:
        rounds, mask = [], 1
        while mask < pof2:
            dst = _old_rank(newrank ^ mask, rem)
            rounds.append((_send(dst, s), _recv(dst, s)))
            mask <<= 1
        return rounds

    return [_fold(i, P, s, lambda even: s, body) for i in range(P)]


def _allreduce_rabenseifner(a: _Args) -> _Plan:
    """Rabenseifner's allreduce (MPICH ``reduce_scatter_allgather``): recursive-halving
    reduce-scatter then recursive-doubling allgather over p' members, with :func:`_fold`.

    The vector is cut into p' blocks (:func:`_split`). In reduce-scatter step k (mask 2^k) a
    member exchanges with ``newrank XOR 2^k``: it keeps the lower half of its current block
    range if its newrank is the smaller one, else the upper half, sends the other half and
    receives the partner's copy of the kept half; the allgather repeats the steps in reverse,
    sending the kept range and receiving the other. When p' divides ``size``, reduce-scatter
    step k sends ``size/2^(k+1)``. Messages: ``2r + 2p'·log2 p'``.
    """
    P, s = a.P, a.size
    pof2, rem = _pof2(P), P - _pof2(P)
    blocks = _split(s, pof2)

    def body(newrank: int) -> list:
        lo, hi, mask = 0, pof2, 1
        exchanges = []  # (peer, bytes sent, bytes kept) of each reduce-scatter step
        while mask < pof2:
            nd = newrank ^ mask
            mid = (lo + hi) // 2
            lower, upper = sum(blocks[lo:mid]), sum(blocks[mid:hi])
            if newrank < nd:
                exchanges.append((_old_rank(nd, rem), upper, lower))
                hi = mid
            else:
                exchanges.append((_old_rank(nd, rem), lower, upper))
                lo = mid
            mask <<= 1
        rs = [[_send(p, sent), _recv(p, kept)] for p, sent, kept in exchanges]
        ag = [[_send(p, kept), _recv(p, sent)] for p, sent, kept in reversed(exchanges)]
        return rs + ag

    return [_fold(i, P, s, lambda even: s, body) for i in range(P)]


def _allreduce_ring(a: _Args) -> _Plan:
    """Ring allreduce (Patarasuk & Yuan; MPICH ``ring``): a ring reduce-scatter then a ring
    allgather, 2(P−1) rounds per member.

    The vector is cut into P chunks (:func:`_split`). Reduce-scatter step t: member i sends
    chunk (i−t) mod P to i+1 and receives chunk (i−t−1) mod P from i−1, ending with chunk i+1
    fully reduced; allgather step t: sends chunk (i+1−t), receives chunk (i−t). Messages
    ``2P(P−1)``, ``2(P−1)·size`` bytes in all.
    """
    P = a.P
    chunk = _split(a.size, P)
    plan: _Plan = []
    for i in range(P):
        nxt, prev = (i + 1) % P, (i - 1) % P
        rs = [
            (_send(nxt, chunk[(i - t) % P]), _recv(prev, chunk[(i - t - 1) % P]))
            for t in range(P - 1)
        ]
        ag = [
            (_send(nxt, chunk[(i + 1 - t) % P]), _recv(prev, chunk[(i - t) % P]))
            for t in range(P - 1)
        ]
        plan.append(rs + ag)
    return plan


def _allreduce_reduce_bcast(a: _Args) -> _Plan:
    """Binomial reduce to member 0 followed by binomial bcast from member 0: 2(P−1) messages."""
    a0 = _Args(a.P, 0, a.size, (), a.segment)
    reduce, bcast = _reduce_binomial(a0), _bcast_binomial(a0)
    return [r + b for r, b in zip(reduce, bcast, strict=True)]


def _allreduce_dissemination(a: _Args) -> _Plan:
    """Dissemination with the whole vector per message, as Schedgen's C++ ``process_trace``
    expands ``MPI_Allreduce``: P·⌈log2 P⌉ messages of ``size`` bytes."""
    return _dissemination(a, a.size)


# --- allgather / allgatherv --------------------------------------------------------------------------


def _bruck(a: _Args, block: Sequence[int]) -> _Plan:
    """Bruck-style dissemination allgather (Bruck et al. 1997), partners as Schedgen's
    dissemination: in round k member i sends to (i+2^k) mod P the ``m = min(2^k, P−2^k)``
    blocks it holds that the receiver lacks (its own and those of i−1, …, i−m+1) and receives
    the blocks of (i−2^k), …, (i−2^k−m+1) from (i−2^k) mod P. ⌈log2 P⌉ rounds; every member
    receives each other block exactly once.
    """
    P = a.P
    prefix = [0]
    for n in list(block) * 2:
        prefix.append(prefix[-1] + n)

    def held(j: int, m: int) -> int:  # bytes of blocks j, j−1, …, j−m+1 (cyclic)
        end = j % P + P + 1
        return prefix[end] - prefix[end - m]

    plan: _Plan = []
    for i in range(P):
        rounds, dist = [], 1
        while dist < P:
            m = min(dist, P - dist)
            out, inc = held(i, m), held(i - dist, m)
            rounds.append((_send((i + dist) % P, out), _recv((i - dist) % P, inc)))
            dist <<= 1
        plan.append(rounds)
    return plan


def _ring_gather(a: _Args, block: Sequence[int]) -> _Plan:
    """Ring allgather (MPICH): P−1 rounds; in round t member i sends block (i−t) mod P to i+1
    and receives block (i−t−1) mod P from i−1."""
    P = a.P
    return [
        [
            (_send((i + 1) % P, block[(i - t) % P]), _recv((i - 1) % P, block[(i - t - 1) % P]))
            for t in range(P - 1)
        ]
        for i in range(P)
    ]


def _allgather_dissemination(a: _Args) -> _Plan:
    """Bruck dissemination allgather (:func:`_bruck`): round k carries min(2^k, P−2^k)·size."""
    return _bruck(a, [a.size] * a.P)


def _allgather_ring(a: _Args) -> _Plan:
    """Ring allgather: P(P−1) messages of one block (:func:`_ring_gather`)."""
    return _ring_gather(a, [a.size] * a.P)


def _allgather_recursive_doubling(a: _Args) -> _Plan:
    """Recursive-doubling allgather (MPICH, P = 2^m): in round k member i exchanges its 2^k
    blocks with i XOR 2^k. Non-power-of-two P is expanded as ``dissemination`` instead (the
    choice MPICH itself makes for such P at small sizes), see :func:`expand`."""
    P, s = a.P, a.size
    plan: _Plan = []
    for i in range(P):
        rounds, mask = [], 1
        while mask < P:
            rounds.append((_send(i ^ mask, mask * s), _recv(i ^ mask, mask * s)))
            mask <<= 1
        plan.append(rounds)
    return plan


def _allgatherv_ring(a: _Args) -> _Plan:
    """Ring allgatherv (MPICH): as the ring allgather, each message the size of its block."""
    return _ring_gather(a, a.counts)


def _allgatherv_dissemination(a: _Args) -> _Plan:
    """Bruck dissemination allgatherv: as allgather, each message the sum of its blocks."""
    return _bruck(a, a.counts)


# --- alltoall / alltoallv --------------------------------------------------------------------------


def _alltoall_linear_sizes(a: _Args, size: Callable[[int, int], int], skip_zero: bool) -> _Plan:
    """All sends and receives posted in one round, in Schedgen's order: for t = 1..P−1, send to
    (i+t) mod P and receive from (i−t) mod P. ``size(src, dst)`` gives the bytes."""
    P = a.P
    plan: _Plan = []
    for i in range(P):
        ops = []
        for t in range(1, P):
            dst, src = (i + t) % P, (i - t) % P
            if not (skip_zero and size(i, dst) == 0):
                ops.append(_send(dst, size(i, dst)))
            if not (skip_zero and size(src, i) == 0):
                ops.append(_recv(src, size(src, i)))
        plan.append([tuple(ops)])
    return plan


def _pairwise_sizes(a: _Args, size: Callable[[int, int], int]) -> _Plan:
    """Pairwise exchange (MPICH): P−1 rounds; in round t member i exchanges with i XOR t when P
    is a power of two, else sends to (i+t) mod P and receives from (i−t) mod P."""
    P = a.P
    pow2 = P & (P - 1) == 0
    plan: _Plan = []
    for i in range(P):
        rounds = []
        for t in range(1, P):
            dst, src = (i ^ t, i ^ t) if pow2 else ((i + t) % P, (i - t) % P)
            rounds.append((_send(dst, size(i, dst)), _recv(src, size(src, i))))
        plan.append(rounds)
    return plan


def _alltoall_linear(a: _Args) -> _Plan:
    """Linear alltoall (Schedgen): every send and receive in one round; P(P−1) messages."""
    return _alltoall_linear_sizes(a, lambda src, dst: a.size, skip_zero=False)


def _alltoall_pairwise(a: _Args) -> _Plan:
    """Pairwise-exchange alltoall: P−1 rounds, P(P−1) messages of one block."""
    return _pairwise_sizes(a, lambda src, dst: a.size)


def _alltoallv_linear(a: _Args) -> _Plan:
    """Linear alltoallv: one round; a message per non-zero off-diagonal entry of the byte matrix
    (zero entries are skipped, as MPICH and Open MPI do)."""
    m, P = a.counts, a.P
    return _alltoall_linear_sizes(a, lambda src, dst: m[src * P + dst], skip_zero=True)


def _alltoallv_pairwise(a: _Args) -> _Plan:
    """Pairwise-exchange alltoallv: P−1 rounds; every pair exchanges, zero entries as 0-byte
    messages (a sendrecv with count 0 still sends an empty message)."""
    m, P = a.counts, a.P
    return _pairwise_sizes(a, lambda src, dst: m[src * P + dst])


# --- gather / scatter ------------------------------------------------------------------------------


def _gather_binomial(a: _Args) -> _Plan:
    """Binomial gather: a member receives its children's subtrees, then sends its whole subtree
    (``subtree(v)·size`` bytes) to its parent. P−1 messages."""
    return _tree(a, down=False, block=lambda v: _subtree(v, a.P) * a.size)


def _scatter_binomial(a: _Args) -> _Plan:
    """Binomial scatter: a member receives its subtree's blocks from its parent, then sends each
    child its subtree's blocks. P−1 messages."""
    return _tree(a, down=True, block=lambda v: _subtree(v, a.P) * a.size)


def _gather_linear(a: _Args) -> _Plan:
    """Linear gather: every member sends its block to the root in one round."""
    return _linear_rooted(a, down=False, block=lambda i: a.size)


def _scatter_linear(a: _Args) -> _Plan:
    """Linear scatter: the root sends every member its block in one round."""
    return _linear_rooted(a, down=True, block=lambda i: a.size)


def _gatherv_linear(a: _Args) -> _Plan:
    """Linear gatherv (MPICH): member i sends counts[i] bytes to the root; zero blocks skipped."""
    c = a.counts
    return _linear_rooted(a, down=False, block=lambda i: c[i], skip_zero=True)


def _scatterv_linear(a: _Args) -> _Plan:
    """Linear scatterv (MPICH): the root sends counts[i] bytes to member i; zero blocks skipped."""
    c = a.counts
    return _linear_rooted(a, down=True, block=lambda i: c[i], skip_zero=True)


# --- reduce_scatter --------------------------------------------------------------------------------


def _reduce_scatter_recursive_halving(a: _Args) -> _Plan:
    """Recursive halving (MPICH, commutative ops): p' members, mask from p'/2 down to 1; a member
    exchanges with ``newrank XOR mask``, keeps the lower half of its block range if its newrank
    is the smaller one (else the upper), sends the other half and receives the partner's copy
    of the kept half. Member ``newrank`` of the subgroup owns the blocks of the members it
    stands for (2·newrank and 2·newrank+1 if newrank < r, else newrank+r). Non-power-of-two P:
    :func:`_fold` with the whole vector (Σcounts) in, counts[i−1] back. Messages
    ``2r + p'·log2 p'``.
    """
    P, c = a.P, a.counts
    pof2, rem = _pof2(P), P - _pof2(P)
    total = sum(c)
    newcnt = []
    for j in range(pof2):
        old = _old_rank(j, rem)
        newcnt.append(c[old] + c[old - 1] if old < 2 * rem else c[old])

    def body(newrank: int) -> list:
        rounds, lo, mask = [], 0, pof2 >> 1
        while mask > 0:
            nd = newrank ^ mask
            lower, upper = sum(newcnt[lo : lo + mask]), sum(newcnt[lo + mask : lo + 2 * mask])
            dst = _old_rank(nd, rem)
            if newrank < nd:
                rounds.append((_send(dst, upper), _recv(dst, lower)))
            else:
                rounds.append((_send(dst, lower), _recv(dst, upper)))
                lo += mask
            mask >>= 1
        return rounds

    return [_fold(i, P, total, lambda even: c[even], body) for i in range(P)]


def _reduce_scatter_ring(a: _Args) -> _Plan:
    """Ring reduce-scatter: P−1 rounds; in round t member i sends block (i−t−1) mod P to i+1 and
    receives block (i−t−2) mod P from i−1, ending with block i reduced. P(P−1) messages."""
    P, c = a.P, a.counts
    return [
        [
            (_send((i + 1) % P, c[(i - t - 1) % P]), _recv((i - 1) % P, c[(i - t - 2) % P]))
            for t in range(P - 1)
        ]
        for i in range(P)
    ]


def _reduce_scatter_pairwise(a: _Args) -> _Plan:
    """Pairwise reduce-scatter (MPICH, long messages): P−1 rounds; in round t member i sends
    block (i+t) mod P to its owner and receives its own block from (i−t) mod P."""
    P, c = a.P, a.counts
    return [
        [(_send((i + t) % P, c[(i + t) % P]), _recv((i - t) % P, c[i])) for t in range(1, P)]
        for i in range(P)
    ]


# --- scan ------------------------------------------------------------------------------------------


def _scan_recursive_doubling(a: _Args) -> _Plan:
    """MPICH's recursive-doubling inclusive scan: for mask = 1, 2, 4, … < P, member i exchanges
    its partial result (the whole vector) with i XOR mask when that member exists."""
    P, s = a.P, a.size
    plan: _Plan = []
    for i in range(P):
        rounds, mask = [], 1
        while mask < P:
            if i ^ mask < P:
                rounds.append((_send(i ^ mask, s), _recv(i ^ mask, s)))
            mask <<= 1
        plan.append(rounds)
    return plan


def _scan_linear(a: _Args) -> _Plan:
    """Linear scan: member i receives the prefix from i−1, then sends its prefix to i+1."""
    P, s = a.P, a.size
    return [
        [[_recv(i - 1, s)] if i > 0 else [], [_send(i + 1, s)] if i < P - 1 else []]
        for i in range(P)
    ]


# --- registry --------------------------------------------------------------------------------------

_REGISTRY: dict[str, dict[str, Callable[[_Args], _Plan]]] = {
    "barrier": {"dissemination": _barrier_dissemination},
    "bcast": {"binomial": _bcast_binomial, "pipelined": _bcast_pipelined, "linear": _bcast_linear},
    "reduce": {"binomial": _reduce_binomial, "linear": _reduce_linear},
    "allreduce": {
        "recursive_doubling": _allreduce_recursive_doubling,
        "ring": _allreduce_ring,
        "rabenseifner": _allreduce_rabenseifner,
        "reduce_bcast": _allreduce_reduce_bcast,
        "dissemination": _allreduce_dissemination,
    },
    "allgather": {
        "dissemination": _allgather_dissemination,
        "ring": _allgather_ring,
        "recursive_doubling": _allgather_recursive_doubling,
    },
    "allgatherv": {"ring": _allgatherv_ring, "dissemination": _allgatherv_dissemination},
    "alltoall": {"linear": _alltoall_linear, "pairwise": _alltoall_pairwise},
    "alltoallv": {"linear": _alltoallv_linear, "pairwise": _alltoallv_pairwise},
    "gather": {"binomial": _gather_binomial, "linear": _gather_linear},
    "gatherv": {"linear": _gatherv_linear},
    "scatter": {"binomial": _scatter_binomial, "linear": _scatter_linear},
    "scatterv": {"linear": _scatterv_linear},
    "reduce_scatter": {
        "recursive_halving": _reduce_scatter_recursive_halving,
        "ring": _reduce_scatter_ring,
        "pairwise": _reduce_scatter_pairwise,
    },
    "scan": {"recursive_doubling": _scan_recursive_doubling, "linear": _scan_linear},
}

# NCCL's algorithms (ring, double binary tree, point-to-point; every protocol), by name
# ``nccl[_ALGORITHM][_PROTOCOL]``: :mod:`llamp.ingest.nccl`.
for _op, _algs in mpi_algorithms().items():
    _REGISTRY[_op].update(_algs)  # type: ignore[arg-type]

ALGORITHMS: dict[str, tuple[str, ...]] = {op: tuple(algs) for op, algs in _REGISTRY.items()}
"""Collective name → the algorithms :func:`expand` supports for it."""

DEFAULTS: dict[str, str] = {
    "barrier": "dissemination",
    "bcast": "binomial",
    "reduce": "binomial",
    "allreduce": "recursive_doubling",
    "allgather": "dissemination",
    "allgatherv": "ring",
    "alltoall": "linear",
    "alltoallv": "linear",
    "gather": "binomial",
    "gatherv": "linear",
    "scatter": "binomial",
    "scatterv": "linear",
    "reduce_scatter": "recursive_halving",
    "scan": "recursive_doubling",
}
"""Collective name → default algorithm (Schedgen's where it has one, else MPICH's)."""

_PER_MEMBER_COUNTS = {"allgatherv", "gatherv", "scatterv", "reduce_scatter"}
_MATRIX_COUNTS = {"alltoallv"}
_COUNTS_MEANING = {
    "allgatherv": "counts[i] = bytes contributed by member i",
    "gatherv": "counts[i] = bytes of member i's block",
    "scatterv": "counts[i] = bytes of member i's block",
    "reduce_scatter": "counts[i] = bytes of member i's result block (recvcounts × type size)",
    "alltoallv": "a flattened P×P byte matrix, row = sender, column = receiver",
}


def _as_int(value: object, what: str, op: str) -> int:
    if isinstance(value, bool):
        raise InputError(f"{op}: {what} must be an integer, got {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InputError(f"{op}: {what} must be an integer, got {value!r}") from None


def expand(
    op: str,
    P: int,
    *,
    algorithm: str | None = None,
    root: int = 0,
    size: int = 0,
    counts: Sequence[int] | None = None,
    segment: int = PIPELINE_SEGMENT_BYTES,
) -> Schedule:
    """The point-to-point schedule of collective ``op`` on a group of ``P`` members.

    ``algorithm`` defaults to :data:`DEFAULTS` ``[op]``; ``root`` is a group index; ``size`` is
    the message in bytes (bcast, reduce, allreduce, scan) or one member's block (allgather,
    alltoall, gather, scatter); ``counts`` holds per-member bytes for allgatherv, gatherv,
    scatterv and reduce_scatter, and the flattened P×P byte matrix (row = sender) for
    alltoallv; ``segment`` is the pipelined bcast's segment in bytes. ``allgather`` with
    ``recursive_doubling`` on a non-power-of-two group is expanded as ``dissemination``, and
    the returned schedule says so. Results are cached: equal arguments return the same object.

    Raises :class:`InputError` for an unknown op or algorithm (naming the known ones), ``P < 1``,
    a root outside the group, negative sizes, or counts of the wrong shape.
    """
    if op not in _REGISTRY:
        raise InputError(f"unknown collective {op!r}; known: {', '.join(_REGISTRY)}")
    algs = _REGISTRY[op]
    name = DEFAULTS[op] if algorithm is None else algorithm
    if name not in algs:
        raise InputError(f"unknown {op} algorithm {name!r}; known for {op}: {', '.join(algs)}")
    P = _as_int(P, "group size P", op)
    if P < 1:
        raise InputError(f"{op}: group size P must be at least 1, got {P}")
    root = _as_int(root, "root", op)
    if not 0 <= root < P:
        raise InputError(f"{op}: root {root} is not a member of a group of {P} (0..{P - 1})")
    size = _as_int(size, "size", op)
    if size < 0:
        raise InputError(f"{op}: size must be ≥ 0 bytes, got {size}")
    segment = _as_int(segment, "segment", op)
    if segment < 1:
        raise InputError(f"{op}: pipeline segment must be ≥ 1 byte, got {segment}")
    frozen = _check_counts(op, P, size, counts)
    if op == "allgather" and name == "recursive_doubling" and P & (P - 1):
        name = "dissemination"
    return _expand_cached(op, name, P, root, size, frozen, segment)


def _check_counts(op: str, P: int, size: int, counts: Sequence[int] | None) -> tuple[int, ...]:
    needs = op in _PER_MEMBER_COUNTS or op in _MATRIX_COUNTS
    if not needs:
        if counts is not None:
            raise InputError(
                f"{op} takes size (bytes), not counts; counts are for {', '.join(_COUNTS_MEANING)}"
            )
        return ()
    if counts is None:
        raise InputError(f"{op} needs counts: {_COUNTS_MEANING[op]}")
    if size:
        raise InputError(
            f"{op} takes its bytes from counts ({_COUNTS_MEANING[op]}), not size={size}"
        )
    if isinstance(counts, str | bytes) or not isinstance(counts, Sequence | Sized):
        raise InputError(f"{op}: counts must be a sequence of byte counts, got {counts!r}")
    expected = P * P if op in _MATRIX_COUNTS else P
    if len(counts) != expected:
        shape = f"P·P = {expected}" if op in _MATRIX_COUNTS else f"P = {expected}"
        raise InputError(
            f"{op}: counts has {len(counts)} entries, expected {shape} ({_COUNTS_MEANING[op]})"
        )
    out = tuple(_as_int(c, f"counts[{k}]", op) for k, c in enumerate(counts))
    for k, c in enumerate(out):
        if c < 0:
            where = f"[{k // P}][{k % P}]" if op in _MATRIX_COUNTS else f"[{k}]"
            raise InputError(f"{op}: counts{where} is negative ({c} bytes)")
    return out


@lru_cache(maxsize=128)
def _expand_cached(
    op: str, name: str, P: int, root: int, size: int, counts: tuple[int, ...], segment: int
) -> Schedule:
    if P == 1:
        return Schedule(op, name, ((),))
    plan = _REGISTRY[op][name](_Args(P, root, size, counts, segment))
    rounds = tuple(tuple(tuple(rnd) for rnd in member if rnd) for member in plan)
    return Schedule(op, name, rounds)
