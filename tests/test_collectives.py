"""Collective algorithms as point-to-point schedules (``llamp.ingest.collectives``).

Every schedule is run through an independent checker: FIFO message matching per ordered pair
with equal sizes, a round-by-round execution that must not deadlock even if every message is a
rendezvous, and a data-flow simulation ("whose contribution does each member hold") that must
end in the collective's postcondition. Counts, sizes and message depths are compared with the
algorithms' formulas (Thakur, Rabenseifner & Gropp 2005; Schedgen; Bruck et al. 1997), computed
here from scratch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from llamp.errors import InputError
from llamp.graph import RECV, SEND
from llamp.ingest.collectives import (
    ALGORITHMS,
    DEFAULTS,
    PIPELINE_SEGMENT_BYTES,
    Schedule,
    Step,
    expand,
)

SIZES_P = [1, 2, 3, 4, 5, 8, 13]
OPS = (
    "barrier bcast reduce allreduce allgather allgatherv alltoall alltoallv gather gatherv "
    "scatter scatterv reduce_scatter scan"
).split()


# --- the independent checker --------------------------------------------------------------------


@dataclass
class Run:
    """Outcome of executing a schedule round by round."""

    messages: list[tuple[int, int, int]]  # (sender, receiver, bytes), in matching order
    holds: list[set[int]]  # contributions each member holds at the end
    received: list[list[tuple[int, frozenset[int]]]]  # per member: (sender, contributions)
    depth: int  # longest chain of dependent messages (LogGPS time with L=1, o=G=0, eager)
    sent_bytes: list[int]
    recv_bytes: list[int]


def run(s: Schedule, P: int) -> Run:
    """Check the schedule's structure, match its messages and execute it."""
    assert len(s.rounds) == P
    for i, member in enumerate(s.rounds):
        for rnd in member:
            assert len(rnd) > 0, f"member {i} has an empty round"
            for st in rnd:
                assert isinstance(st, Step)
                assert st.kind in (SEND, RECV)
                assert 0 <= st.peer < P and st.peer != i
                assert isinstance(st.size, int) and st.size >= 0

    # FIFO matching per ordered pair: n-th send a→b ↔ n-th recv at b from a.
    sends: dict[tuple[int, int], list[tuple[int, int]]] = {}
    recvs: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for i, member in enumerate(s.rounds):
        for k, rnd in enumerate(member):
            for st in rnd:
                if st.kind == SEND:
                    sends.setdefault((i, st.peer), []).append((k, st.size))
                else:
                    recvs.setdefault((st.peer, i), []).append((k, st.size))
    assert sends.keys() == recvs.keys(), "a pair has sends without receives or vice versa"
    # (member, round, index in round) -> (peer, the peer's round holding the matching op)
    partner: dict[tuple[int, int, int], tuple[int, int]] = {}
    messages = []
    cursor: dict[tuple[int, int, str], int] = {}
    for pair in sends:
        assert len(sends[pair]) == len(recvs[pair]), f"pair {pair}: unequal send/recv counts"
        for (_ks, ns), (_kr, nr) in zip(sends[pair], recvs[pair], strict=True):
            assert ns == nr, f"pair {pair}: send of {ns} B matched with recv of {nr} B"
            messages.append((pair[0], pair[1], ns))
    for i, member in enumerate(s.rounds):
        for k, rnd in enumerate(member):
            for j, st in enumerate(rnd):
                pair = (i, st.peer) if st.kind == SEND else (st.peer, i)
                side = "s" if st.kind == SEND else "r"
                n = cursor.get((*pair, side), 0)
                cursor[(*pair, side)] = n + 1
                other = recvs[pair][n][0] if st.kind == SEND else sends[pair][n][0]
                partner[(i, k, j)] = (st.peer, other)

    # Round-by-round execution; rendezvous-strict: every op needs its partner's round started.
    pos = [0] * P
    holds = [{i} for i in range(P)]
    snap = {(i, 0): frozenset(holds[i]) for i in range(P)}
    start = {(i, 0): 0 for i in range(P)}
    finish_time = [0] * P
    received: list[list[tuple[int, frozenset[int]]]] = [[] for _ in range(P)]
    progress = True
    while progress:
        progress = False
        for i in range(P):
            k = pos[i]
            if k == len(s.rounds[i]):
                continue
            ops = s.rounds[i][k]
            if not all(
                pos[partner[(i, k, j)][0]] >= partner[(i, k, j)][1] for j in range(len(ops))
            ):
                continue
            t = start[(i, k)]
            for j, st in enumerate(ops):
                if st.kind == RECV:
                    peer, pk = partner[(i, k, j)]
                    holds[i] |= snap[(peer, pk)]
                    received[i].append((peer, snap[(peer, pk)]))
                    t = max(t, start[(peer, pk)] + 1)
            pos[i] = k + 1
            finish_time[i] = t
            snap[(i, k + 1)] = frozenset(holds[i])
            start[(i, k + 1)] = t
            progress = True
    assert pos == [len(m) for m in s.rounds], f"deadlock: members stuck at rounds {pos}"

    sent_bytes = [0] * P
    recv_bytes = [0] * P
    for a, b, n in messages:
        sent_bytes[a] += n
        recv_bytes[b] += n
    return Run(messages, holds, received, max(finish_time), sent_bytes, recv_bytes)


def log2c(P: int) -> int:
    return math.ceil(math.log2(P)) if P > 1 else 0


def pof2(P: int) -> int:
    return 2 ** int(math.floor(math.log2(P)))


def rounds_of(s: Schedule) -> list[int]:
    return [len(m) for m in s.rounds]


def kwargs_for(op: str, P: int, size: int = 1000) -> dict:
    """Arguments for ``op``: a size, or positive uneven per-member counts / matrix."""
    if op in ("allgatherv", "gatherv", "scatterv", "reduce_scatter"):
        return {"counts": [17 * i + 3 for i in range(P)]}
    if op == "alltoallv":
        return {"counts": [(7 * a + 3 * b) % 11 + 1 for a in range(P) for b in range(P)]}
    if op == "barrier":
        return {}
    return {"size": size}


ALL = [(op, alg) for op in OPS for alg in ALGORITHMS[op]]


# --- registry, defaults, errors -------------------------------------------------------------------


def test_every_op_has_algorithms_and_a_schedgen_default():
    assert set(ALGORITHMS) == set(OPS) == set(DEFAULTS)
    for op in OPS:
        assert DEFAULTS[op] in ALGORITHMS[op]
    assert DEFAULTS["barrier"] == "dissemination"
    assert DEFAULTS["bcast"] == "binomial"
    assert DEFAULTS["reduce"] == "binomial"
    assert DEFAULTS["allreduce"] == "recursive_doubling"
    assert DEFAULTS["allgather"] == "dissemination"
    assert DEFAULTS["alltoall"] == "linear"
    assert DEFAULTS["gather"] == DEFAULTS["scatter"] == "binomial"
    assert expand("allreduce", 8, size=8).algorithm == "recursive_doubling"


def test_unknown_op_and_algorithm_name_the_known_ones():
    with pytest.raises(InputError, match=r"unknown collective 'allreduse'.*allreduce.*scan"):
        expand("allreduse", 4)
    with pytest.raises(
        InputError,
        match=r"unknown allreduce algorithm 'tree'.*recursive_doubling, ring, rabenseifner",
    ):
        expand("allreduce", 4, algorithm="tree", size=8)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: expand("bcast", 0, size=8), r"group size P must be at least 1, got 0"),
        (lambda: expand("bcast", 4, root=4, size=8), r"root 4 is not a member of a group of 4"),
        (lambda: expand("bcast", 4, root=-1, size=8), r"root -1"),
        (lambda: expand("bcast", 4, size=-8), r"size must be ≥ 0 bytes, got -8"),
        (lambda: expand("bcast", 4, size=2.5), r"size must be an integer"),
        (lambda: expand("bcast", 4, size=10, segment=0), r"segment must be ≥ 1"),
        (lambda: expand("gatherv", 4), r"gatherv needs counts"),
        (lambda: expand("gatherv", 4, counts=[1, 2, 3]), r"counts has 3 entries, expected P = 4"),
        (lambda: expand("alltoallv", 2, counts=[1, 2]), r"expected P·P = 4"),
        (lambda: expand("alltoallv", 2, counts=[1, 2, -3, 4]), r"counts\[1\]\[0\] is negative"),
        (lambda: expand("gatherv", 2, counts=iter([1, 2])), r"counts must be a sequence"),
        (lambda: expand("allreduce", 2, counts=[1, 2]), r"allreduce takes size"),
        (lambda: expand("scatterv", 2, size=4, counts=[1, 2]), r"takes its bytes from counts"),
    ],
)
def test_bad_input_is_an_input_error(call, message):
    with pytest.raises(InputError, match=message):
        call()


@pytest.mark.parametrize(("op", "alg"), ALL)
def test_one_member_has_nothing_to_do(op, alg):
    s = expand(op, 1, algorithm=alg, **kwargs_for(op, 1))
    assert s.rounds == ((),)
    assert s.messages == 0


# --- the generic properties of every algorithm -----------------------------------------------------


@pytest.mark.parametrize("P", SIZES_P)
@pytest.mark.parametrize(("op", "alg"), ALL)
def test_schedule_matches_terminates_and_moves_the_data(op, alg, P):
    """FIFO matching, deadlock freedom, and the collective's data-flow postcondition."""
    root = 2 % P
    s = expand(op, P, algorithm=alg, root=root, **kwargs_for(op, P))
    assert s.op == op
    r = run(s, P)
    everyone = set(range(P))
    if op in (
        "barrier",
        "allreduce",
        "allgather",
        "allgatherv",
        "alltoall",
        "alltoallv",
        "reduce_scatter",
    ):
        assert all(h == everyone for h in r.holds)
    elif op in ("reduce", "gather", "gatherv"):
        assert r.holds[root] == everyone
    elif op in ("bcast", "scatter", "scatterv"):
        assert all(root in h for h in r.holds)
    else:  # scan: prefix = own plus what came from lower members, must be exactly 0..i
        for i in range(P):
            prefix = {i}.union(*[c for sender, c in r.received[i] if sender < i])
            assert prefix == set(range(i + 1)), f"member {i}: prefix {sorted(prefix)}"
    assert s.messages == len(r.messages)
    assert s.bytes == sum(n for _, _, n in r.messages)


@pytest.mark.parametrize("P", SIZES_P)
def test_root_relabels_the_root_zero_schedule(P):
    """A rooted schedule with root r is the root-0 schedule with every member shifted by r."""
    for op in ("bcast", "reduce", "gather", "scatter"):
        for alg in ALGORITHMS[op]:
            base = expand(op, P, algorithm=alg, size=100, segment=30)
            for root in range(P):
                moved = expand(op, P, algorithm=alg, root=root, size=100, segment=30)
                for i in range(P):
                    want = [
                        [(st.kind, (st.peer + root) % P, st.size) for st in rnd]
                        for rnd in base.rounds[i]
                    ]
                    got = [
                        [(st.kind, st.peer, st.size) for st in rnd]
                        for rnd in moved.rounds[(i + root) % P]
                    ]
                    assert got == want


# --- formulas, algorithm by algorithm --------------------------------------------------------------


@pytest.mark.parametrize("P", SIZES_P)
def test_dissemination_barrier(P):
    s = expand("barrier", P)
    r = run(s, P)
    assert len(r.messages) == P * log2c(P)
    assert all(n == 0 for _, _, n in r.messages)
    assert rounds_of(s) == [log2c(P)] * P
    assert r.depth == log2c(P)
    for i in range(P):
        for k, rnd in enumerate(s.rounds[i]):
            assert rnd == (Step(SEND, (i + 2**k) % P, 0), Step(RECV, (i - 2**k) % P, 0))


@pytest.mark.parametrize("P", SIZES_P)
def test_binomial_bcast_and_reduce(P):
    """P−1 messages of ``size``; depth = the largest number of one bits of a rank below P
    (Schedgen's tree: the path to v adds v's powers of two one by one)."""
    popcount_depth = max(bin(v).count("1") for v in range(P))
    for op in ("bcast", "reduce"):
        s = expand(op, P, algorithm="binomial", size=1000)
        r = run(s, P)
        assert len(r.messages) == P - 1
        assert sum(n for _, _, n in r.messages) == (P - 1) * 1000
        assert {n for _, _, n in r.messages} <= {1000}
        assert r.depth == popcount_depth
        # inner members (children and a parent) take 2 rounds, root and leaves 1
        inner = sum(1 for v in range(1, P) if v + 2 ** v.bit_length() < P)
        assert sorted(rounds_of(s)) == sorted(
            [1 if P > 1 else 0] + [2] * inner + [1] * (P - 1 - inner)
        )
    assert expand("bcast", 8, size=5).rounds[0] == (
        (Step(SEND, 1, 5), Step(SEND, 2, 5), Step(SEND, 4, 5)),
    )
    assert expand("bcast", 8, size=5).rounds[1] == (
        (Step(RECV, 0, 5),),
        (Step(SEND, 3, 5), Step(SEND, 5, 5)),
    )


@pytest.mark.parametrize("P", SIZES_P)
def test_linear_bcast_reduce_gather_scatter(P):
    for op in ("bcast", "reduce", "gather", "scatter"):
        s = expand(op, P, algorithm="linear", root=P - 1, size=64)
        r = run(s, P)
        assert len(r.messages) == P - 1
        assert all(n == 64 for _, _, n in r.messages)
        assert rounds_of(s) == ([1] * P if P > 1 else [0])
        assert r.depth == (1 if P > 1 else 0)


@pytest.mark.parametrize("P", SIZES_P)
@pytest.mark.parametrize(("size", "segment"), [(1000, 300), (900, 300), (10, 65536), (0, 8)])
def test_pipelined_bcast(P, size, segment):
    n = max(1, math.ceil(size / segment))
    s = expand("bcast", P, algorithm="pipelined", root=P // 2, size=size, segment=segment)
    r = run(s, P)
    assert len(r.messages) == (P - 1) * n
    for i in range(P):
        got = sorted(st.size for rnd in s.rounds[i] for st in rnd if st.kind == RECV)
        if i == P // 2:
            assert got == []
        else:
            assert got == sorted([segment] * (n - 1) + [size - segment * (n - 1)])
            assert sum(got) == size
    tail = (P // 2 - 1) % P
    expected = {P // 2: n, tail: n}
    assert rounds_of(s) == [expected.get(i, n + 1) if P > 1 else 0 for i in range(P)]
    assert r.depth == P - 1
    assert expand("bcast", 4, algorithm="pipelined", size=10).messages == 3
    # a middle member forwards segment k−1 while it receives segment k
    S, R = SEND, RECV
    assert expand("bcast", 3, algorithm="pipelined", size=10, segment=4).rounds[1] == (
        (Step(R, 0, 4),),
        (Step(S, 2, 4), Step(R, 0, 4)),
        (Step(S, 2, 4), Step(R, 0, 2)),
        (Step(S, 2, 2),),
    )
    assert PIPELINE_SEGMENT_BYTES == 65536


@pytest.mark.parametrize("P", SIZES_P)
def test_recursive_doubling_allreduce(P):
    """MPICH: r = P − p' pairs fold in and out, p'·log2 p' messages in the doubling."""
    p, r_ = pof2(P), P - pof2(P)
    m = int(math.log2(p))
    s = expand("allreduce", P, size=4096)
    r = run(s, P)
    assert len(r.messages) == 2 * r_ + p * m
    assert all(n == 4096 for _, _, n in r.messages)
    want = [2 if i < 2 * r_ and i % 2 == 0 else m + 2 if i < 2 * r_ else m for i in range(P)]
    assert rounds_of(s) == want
    # folding costs one hop in and one out, unless the fold-in delay is absorbed by the doubling
    assert (r.depth == m) if r_ == 0 else (m + 1 <= r.depth <= m + 2)


def test_recursive_doubling_allreduce_paper_cases():
    assert expand("allreduce", 8, size=8).messages == 24
    assert rounds_of(expand("allreduce", 8, size=8)) == [3] * 8
    assert expand("allreduce", 5, size=8).messages == 2 + 4 * 2
    S, R = SEND, RECV
    five = expand("allreduce", 5, size=8).rounds
    assert five == (
        ((Step(S, 1, 8),), (Step(R, 1, 8),)),
        (
            (Step(R, 0, 8),),
            (Step(S, 2, 8), Step(R, 2, 8)),
            (Step(S, 3, 8), Step(R, 3, 8)),
            (Step(S, 0, 8),),
        ),
        ((Step(S, 1, 8), Step(R, 1, 8)), (Step(S, 4, 8), Step(R, 4, 8))),
        ((Step(S, 4, 8), Step(R, 4, 8)), (Step(S, 1, 8), Step(R, 1, 8))),
        ((Step(S, 3, 8), Step(R, 3, 8)), (Step(S, 2, 8), Step(R, 2, 8))),
    )


@pytest.mark.parametrize("P", SIZES_P)
@pytest.mark.parametrize("size", [1000, 7, 0])
def test_ring_allreduce(P, size):
    s = expand("allreduce", P, algorithm="ring", size=size)
    r = run(s, P)
    assert len(r.messages) == 2 * P * (P - 1)
    assert rounds_of(s) == [2 * (P - 1)] * P
    assert sum(n for _, _, n in r.messages) == 2 * (P - 1) * size
    chunks = {size // P, -(-size // P)}
    assert {n for _, _, n in r.messages} <= chunks
    assert r.depth == 2 * (P - 1)


def test_ring_allreduce_chunks_carry_the_remainder():
    """10 B on 4 members: chunks 3,3,2,2; member 0 sends chunks 0,3,2 then 1,0,3."""
    rounds = expand("allreduce", 4, algorithm="ring", size=10).rounds[0]
    assert [tuple(st.size for st in rnd) for rnd in rounds] == [
        (3, 2),
        (2, 2),
        (2, 3),
        (3, 3),
        (3, 2),
        (2, 2),
    ]


@pytest.mark.parametrize("P", SIZES_P)
@pytest.mark.parametrize("size", [1024, 1000, 5])
def test_rabenseifner_allreduce(P, size):
    p, r_ = pof2(P), P - pof2(P)
    m = int(math.log2(p))
    s = expand("allreduce", P, algorithm="rabenseifner", size=size)
    r = run(s, P)
    assert len(r.messages) == 2 * r_ + 2 * p * m
    assert r.depth == 2 * m + (2 if r_ else 0)
    own = []
    for i in range(P):
        rounds = s.rounds[i]
        if i < 2 * r_ and i % 2 == 0:
            assert rounds == ((Step(SEND, i + 1, size),), (Step(RECV, i + 1, size),))
            continue
        if i < 2 * r_:
            assert rounds[0] == (Step(RECV, i - 1, size),) and rounds[-1] == (
                Step(SEND, i - 1, size),
            )
            rounds = rounds[1:-1]
        assert len(rounds) == 2 * m
        rs, ag = rounds[:m], rounds[m:]
        sent = [rnd[0].size for rnd in rs]
        if size % p == 0:  # step k sends size/2^(k+1)
            assert sent == [size // 2 ** (k + 1) for k in range(m)]
        # the allgather mirrors the reduce-scatter: same partners reversed, sizes swapped
        assert [(x.peer, x.size, y.size) for x, y in ag] == [
            (y.peer, y.size, x.size) for x, y in reversed(rs)
        ]
        own.append(size - sum(sent))
    # each subgroup member ends the reduce-scatter with one of p' blocks of ⌊size/p'⌋ or ⌈size/p'⌉
    assert sorted(own) == sorted([size // p + 1] * (size % p) + [size // p] * (p - size % p))


@pytest.mark.parametrize("P", SIZES_P)
def test_reduce_bcast_and_dissemination_allreduce(P):
    s = expand("allreduce", P, algorithm="reduce_bcast", size=8)
    r = run(s, P)
    assert len(r.messages) == 2 * (P - 1)
    assert r.depth == 2 * max(bin(v).count("1") for v in range(P))
    s = expand("allreduce", P, algorithm="dissemination", size=8)
    r = run(s, P)
    assert len(r.messages) == P * log2c(P) and all(n == 8 for _, _, n in r.messages)


@pytest.mark.parametrize("P", SIZES_P)
def test_allgather(P):
    """Every member receives each other block exactly once: (P−1)·size bytes."""
    b = 100
    s = expand("allgather", P, size=b)
    r = run(s, P)
    assert s.algorithm == "dissemination"
    assert len(r.messages) == P * log2c(P)
    assert rounds_of(s) == [log2c(P)] * P
    for i in range(P):
        assert [rnd[0].size for rnd in s.rounds[i]] == [
            min(2**k, P - 2**k) * b for k in range(log2c(P))
        ]
    assert r.recv_bytes == [(P - 1) * b] * P
    assert r.depth == log2c(P)

    s = expand("allgather", P, algorithm="ring", size=b)
    r = run(s, P)
    assert len(r.messages) == P * (P - 1) and r.recv_bytes == [(P - 1) * b] * P
    assert rounds_of(s) == [P - 1] * P and r.depth == P - 1

    s = expand("allgather", P, algorithm="recursive_doubling", size=b)
    if P & (P - 1) == 0:
        r = run(s, P)
        assert s.algorithm == "recursive_doubling"
        m = int(math.log2(P))
        assert len(r.messages) == P * m and r.recv_bytes == [(P - 1) * b] * P
        assert [rnd[0] for rnd in s.rounds[0]] == [Step(SEND, 2**k, 2**k * b) for k in range(m)]
    else:  # non-power-of-two: expanded as Bruck, and the schedule says so
        assert s.algorithm == "dissemination"
        assert s == expand("allgather", P, algorithm="dissemination", size=b)


@pytest.mark.parametrize("P", SIZES_P)
def test_allgatherv(P):
    counts = [17 * i + 3 for i in range(P)]
    for alg in ALGORITHMS["allgatherv"]:
        r = run(expand("allgatherv", P, algorithm=alg, counts=counts), P)
        assert r.recv_bytes == [sum(counts) - counts[i] for i in range(P)]
        assert len(r.messages) == (P * (P - 1) if alg == "ring" else P * log2c(P))


@pytest.mark.parametrize("P", SIZES_P)
def test_alltoall(P):
    s = expand("alltoall", P, size=32)
    r = run(s, P)
    assert sorted((a, b) for a, b, _ in r.messages) == [
        (a, b) for a in range(P) for b in range(P) if a != b
    ]
    assert all(n == 32 for _, _, n in r.messages)
    assert rounds_of(s) == ([1] * P if P > 1 else [0])
    assert r.depth == (1 if P > 1 else 0)
    s = expand("alltoall", P, algorithm="pairwise", size=32)
    r = run(s, P)
    assert sorted((a, b) for a, b, _ in r.messages) == [
        (a, b) for a in range(P) for b in range(P) if a != b
    ]
    assert rounds_of(s) == [P - 1] * P
    if P & (P - 1) == 0:
        assert [rnd[0].peer for rnd in s.rounds[P - 1]] == [(P - 1) ^ t for t in range(1, P)]
    else:
        assert [(rnd[0].peer, rnd[1].peer) for rnd in s.rounds[0]] == [
            (t, P - t) for t in range(1, P)
        ]


@pytest.mark.parametrize("P", SIZES_P)
def test_alltoallv_sizes_come_from_the_matrix(P):
    matrix = [(a * P + b) % 4 for a in range(P) for b in range(P)]  # zeros included
    r = run(expand("alltoallv", P, counts=matrix), P)
    want = sorted(
        (a, b, matrix[a * P + b])
        for a in range(P)
        for b in range(P)
        if a != b and matrix[a * P + b]
    )
    assert sorted(r.messages) == want
    r = run(expand("alltoallv", P, algorithm="pairwise", counts=matrix), P)
    assert sorted(r.messages) == sorted(
        (a, b, matrix[a * P + b]) for a in range(P) for b in range(P) if a != b
    )


@pytest.mark.parametrize("P", SIZES_P)
def test_gather_scatter_conserve_blocks(P):
    """The root keeps its own block; every other member ends with (scatter) or gives up (gather)
    exactly one block, whatever the tree: received − sent = ±block."""
    b, root = 10, P - 1
    for alg in ALGORITHMS["scatter"]:
        r = run(expand("scatter", P, algorithm=alg, root=root, size=b), P)
        assert len(r.messages) == P - 1
        for i in range(P):
            assert r.recv_bytes[i] - r.sent_bytes[i] == (-(P - 1) * b if i == root else b)
    for alg in ALGORITHMS["gather"]:
        r = run(expand("gather", P, algorithm=alg, root=root, size=b), P)
        assert len(r.messages) == P - 1
        for i in range(P):
            assert r.sent_bytes[i] - r.recv_bytes[i] == (-(P - 1) * b if i == root else b)


def test_binomial_gather_sizes_grow_with_the_subtree():
    """P = 8, root 0: 1 carries {1,3,5,7}, 2 {2,6}, 3 {3,7}, the others themselves;
    P = 5 scatter: 1 gets {1,3}, 2 and 4 only their own."""
    r = run(expand("gather", 8, size=10), 8)
    assert dict(((a, b), n) for a, b, n in r.messages) == {
        (1, 0): 40,
        (2, 0): 20,
        (4, 0): 10,
        (3, 1): 20,
        (5, 1): 10,
        (6, 2): 10,
        (7, 3): 10,
    }
    r = run(expand("scatter", 5, size=10), 5)
    assert sorted(r.messages) == [(0, 1, 20), (0, 2, 10), (0, 4, 10), (1, 3, 10)]


@pytest.mark.parametrize("P", SIZES_P)
def test_gatherv_scatterv_skip_empty_blocks(P):
    counts = [0 if i % 3 == 1 else 5 * i + 1 for i in range(P)]
    root = 0
    r = run(expand("gatherv", P, root=root, counts=counts), P)
    assert sorted(r.messages) == [(i, root, counts[i]) for i in range(1, P) if counts[i]]
    r = run(expand("scatterv", P, root=root, counts=counts), P)
    assert sorted(r.messages) == [(root, i, counts[i]) for i in range(1, P) if counts[i]]


@pytest.mark.parametrize("P", SIZES_P)
def test_reduce_scatter(P):
    counts = [17 * i + 3 for i in range(P)]
    total = sum(counts)
    p, r_ = pof2(P), P - pof2(P)
    m = int(math.log2(p))
    s = expand("reduce_scatter", P, counts=counts)
    r = run(s, P)
    assert s.algorithm == "recursive_halving"
    assert len(r.messages) == 2 * r_ + p * m
    assert (r.depth == m) if r_ == 0 else (m + 1 <= r.depth <= m + 2)
    for i in range(P):
        if i < 2 * r_ and i % 2 == 0:  # fold-in carries everything, fold-out the member's block
            assert s.rounds[i] == ((Step(SEND, i + 1, total),), (Step(RECV, i + 1, counts[i]),))
            continue
        halving = s.rounds[i][1:-1] if i < 2 * r_ else s.rounds[i]
        # a subgroup member sends away everything but the blocks it stands for
        kept = counts[i] + (counts[i - 1] if i < 2 * r_ else 0)
        assert total - sum(rnd[0].size for rnd in halving) == kept

    s = expand("reduce_scatter", P, algorithm="ring", counts=counts)
    r = run(s, P)
    assert len(r.messages) == P * (P - 1) and r.depth == P - 1
    # every block but the last holder's travels P−1 hops: Σ bytes = (P−1)·Σcounts
    assert sum(n for _, _, n in r.messages) == (P - 1) * total
    assert r.sent_bytes == [total - counts[i] for i in range(P)]

    s = expand("reduce_scatter", P, algorithm="pairwise", counts=counts)
    r = run(s, P)
    assert sorted(r.messages) == sorted(
        (a, b, counts[b]) for a in range(P) for b in range(P) if a != b
    )


def test_recursive_halving_reduce_scatter_power_of_two_sizes():
    """P = 4, 10 B per member: halve 40 → send 20, then 10; members end with their own block.
    Uneven counts 1,2,3,4: member 3 sends blocks 0–1 (3 B) to 1, then block 2 (3 B) to 2."""
    assert [
        [(st.peer, st.size) for st in rnd]
        for rnd in expand("reduce_scatter", 4, counts=[1, 2, 3, 4]).rounds[3]
    ] == [
        [(1, 3), (1, 7)],
        [(2, 3), (2, 4)],
    ]
    s = expand("reduce_scatter", 4, counts=[10] * 4)
    assert [[(st.peer, st.size) for st in rnd] for rnd in s.rounds[0]] == [
        [(2, 20), (2, 20)],
        [(1, 10), (1, 10)],
    ]
    assert [[(st.peer, st.size) for st in rnd] for rnd in s.rounds[3]] == [
        [(1, 20), (1, 20)],
        [(2, 10), (2, 10)],
    ]


@pytest.mark.parametrize("P", SIZES_P)
def test_scan(P):
    s = expand("scan", P, size=8)
    r = run(s, P)
    steps = [2**k for k in range(log2c(P))]
    assert len(r.messages) == sum(1 for i in range(P) for d in steps if i ^ d < P)
    assert rounds_of(s) == [sum(1 for d in steps if i ^ d < P) for i in range(P)]
    s = expand("scan", P, algorithm="linear", size=8)
    r = run(s, P)
    assert sorted(r.messages) == [(i, i + 1, 8) for i in range(P - 1)]
    assert r.depth == P - 1


def test_schedules_are_cached_and_immutable():
    a = expand("allreduce", 13, algorithm="ring", size=4096)
    assert expand("allreduce", 13, algorithm="ring", size=4096) is a
    assert expand("gatherv", 3, counts=[1, 2, 3]) is expand("gatherv", 3, counts=(1, 2, 3))
    with pytest.raises(AttributeError):
        a.rounds[0][0][0].size = 1  # type: ignore[misc]
