"""NCCL collectives expanded into messages: T against the textbook cost formulas.

Parameters chosen so that the LogGPS model and the textbook's α–β model coincide: o = 0 (the
textbook has no CPU overhead), S above every message (eager: one L per message), the per-hop
protocol latency 0, one channel and one piece per block (no pipelining). LogGP charges
(s − 1)·G for an s-byte message, so the textbook's n/P·β reads (n/P − 1)·G here. Where a
member sends and receives several messages at once (a tree node's two children, a pipeline's
pieces in flight), the textbook assumes full-duplex links that carry them side by side: that is
the ``overlap`` NIC model; the default ``serial`` NIC model serialises them (and gives more).
"""

from __future__ import annotations

import math

import pytest

from llamp.errors import InputError
from llamp.ingest import collectives, nccl
from llamp.ingest.gpu_graph import GpuGraphBuilder
from llamp.lp import evaluate
from llamp.params import LogGPS

L, G = 1000.0, 0.5
#: The textbook formulas assume each member forwards a piece as soon as it has received it, in
#: the order NCCL posts them: the program order. The default schedule order processes every
#: arriving piece on the receiving CPU first, as LogGOPSim does
#: (``test_pipelined_bcast_under_the_schedule_order_is_loggopsims``).
TEXTBOOK = LogGPS(L=L, o=0.0, G=G, S=1 << 40, nic="serial", order="program")
DUPLEX = LogGPS(L=L, o=0.0, G=G, S=1 << 40, nic="overlap", order="program")


def runtime(op, P, n, params=TEXTBOOK, *, nics=1, **kw):
    kw.setdefault("pieces", 1)
    kw.setdefault("hop_ns", 0.0)
    kw.setdefault("protocol", "simple")
    p = nccl.plan(op, P, n, **kw)
    b = GpuGraphBuilder(P, nics=nics)
    for r in range(P):
        b.collective(r, p, r, tuple(range(P)), comm=0, instance=0, cpu=0)
    return evaluate(b.finish({"name": op}, where=op), params).runtime_ns


@pytest.mark.parametrize("P", [2, 3, 4, 5, 8, 16])
def test_ring_allreduce_is_patarasuk_yuan(P):
    """2(p−1)·α + 2(p−1)/p·n·β: 2(P−1) steps of one n/P block each."""
    n = 1200 * P
    assert runtime("allreduce", P, n) == pytest.approx(2 * (P - 1) * (L + (n / P - 1) * G), 1e-9)


@pytest.mark.parametrize("op", ["allgather", "reduce_scatter"])
@pytest.mark.parametrize("P", [2, 3, 4, 7, 8])
def test_ring_allgather_and_reduce_scatter(op, P):
    """(p−1)·α + (p−1)/p·n·β, n the gathered (scattered) total."""
    n = 640 * P
    assert runtime(op, P, n) == pytest.approx((P - 1) * (L + (n / P - 1) * G), 1e-9)


@pytest.mark.parametrize("op", ["bcast", "reduce"])
@pytest.mark.parametrize(("P", "root"), [(2, 0), (4, 0), (5, 3), (8, 7)])
def test_ring_bcast_and_reduce_are_a_chain(op, P, root):
    """(p−1)·(α + n·β) unpipelined; pipelined in C pieces (p−1)·α + (p−1 + C−1)·(n/C)·β:
    pieces are in flight together, one after another on each link."""
    n, C = 4096 * 3, 3
    assert runtime(op, P, n, root=root) == pytest.approx((P - 1) * (L + (n - 1) * G), 1e-9)
    assert runtime(op, P, n, root=root, pieces=C) == pytest.approx(
        (P - 1) * L + (P - 1 + C - 1) * (n / C - 1) * G, 1e-9
    )


def test_pipelined_bcast_under_the_schedule_order_is_loggopsims():
    """Ring bcast over 4 GPUs, 3 pieces of 4 KiB, L = 1 µs, o = 0, G = 6 ns/B, S = 65535, the
    serial NIC: the schedule order gives LogGOPSim's T (76451de on this graph written as GOAL,
    tag 1: 174,990 ns); the program order the textbook's pipeline 3L + (3 + 2)·4095·G =
    125,850 ns. Under the default overlap NIC the pieces do not queue on a link:
    3·(L + 4095·G)."""
    params = LogGPS(L=L, o=0.0, G=6.0, S=65535, nic="serial")
    assert params.order == "schedule"
    assert runtime("bcast", 4, 4096 * 3, params, root=0, pieces=3) == 174_990.0
    program = params.with_(order="program")
    assert runtime("bcast", 4, 4096 * 3, program, root=0, pieces=3) == 3 * L + 5 * 4095 * 6.0
    duplex = params.with_(nic="overlap")
    assert runtime("bcast", 4, 4096 * 3, duplex, root=0, pieces=3) == 3 * (L + 4095 * 6.0)


@pytest.mark.parametrize("P", [2, 3, 4, 5, 8, 13, 16])
def test_double_binary_tree_allreduce_is_twice_the_depth(P):
    """2·d·(α + n/2·β), d the deeper tree's depth (⌈log2 P⌉ or one less): each tree carries
    half the bytes up and down, the two trees side by side (two channels on two NICs)."""
    d = nccl.tree_depth(P)
    assert d <= math.ceil(math.log2(P))
    n = 8192
    assert runtime("allreduce", P, n, DUPLEX, algorithm="tree", channels=2, nics=2) == (
        pytest.approx(2 * d * (L + (n / 2 - 1) * G), 1e-9)
    )


def test_double_binary_tree_matches_ncclGetDtree_for_8():
    """The trees NCCL builds for 8 ranks (trees.cc): tree 0 rooted at 0 → 4 → {2, 6} …, tree 1
    its mirror, so every rank is a leaf in at most one tree."""
    t0 = {r: nccl.dtree(8, r)[0] for r in range(8)}
    t1 = {r: nccl.dtree(8, r)[1] for r in range(8)}
    assert t0[0] == (-1, -1, 4)
    assert t0[4] == (0, 2, 6)
    assert t0[2] == (4, 1, 3)
    assert t0[6] == (4, 5, 7)
    assert t1[7] == (-1, -1, 3)
    assert t1[3] == (7, 5, 1)
    leaves0 = {r for r, (_, a, b) in t0.items() if a == b == -1}
    leaves1 = {r for r, (_, a, b) in t1.items() if a == b == -1}
    assert leaves0 == {1, 3, 5, 7} and leaves1 == {0, 2, 4, 6}


@pytest.mark.parametrize(("P", "C"), [(2, 4), (4, 4), (5, 3)])
def test_pipelined_ring_allreduce_takes_steps_plus_pieces_minus_one_rounds(P, C):
    """(S + C − 1)·(α + n/(P·C)·β) with S = 2(P−1) steps and C pieces per block."""
    n = 4096 * 12 * P
    assert runtime("allreduce", P, n, DUPLEX, pieces=C) == pytest.approx(
        (2 * (P - 1) + C - 1) * (L + (n / P / C - 1) * G), 1e-9
    )


def test_protocols_cost_wire_bytes_and_a_hop_latency_per_round():
    """LL moves 2 bytes per payload byte, LL128 128/120; every round adds the per-hop latency."""
    P, n = 4, 1200 * 4
    ring = 2 * (P - 1)
    assert runtime("allreduce", P, n, protocol="ll") == pytest.approx(
        ring * (L + (2 * n / P - 1) * G), 1e-9
    )
    assert runtime("allreduce", P, n, protocol="ll128") == pytest.approx(
        ring * (L + (n / P * 16 / 15 - 1) * G), 1e-9
    )
    hop = nccl.PROTOCOLS["ll"].hop_ns
    assert runtime("allreduce", P, n, protocol="ll", hop_ns=None) == pytest.approx(
        ring * (L + (2 * n / P - 1) * G + hop), 1e-9
    )


def test_channels_on_their_own_nics_halve_the_bandwidth_term():
    """Two channels, each its own ring on its own NIC with half the bytes."""
    P, n = 4, 4800 * 2
    two = runtime("allreduce", P, n, channels=2, nics=2)
    assert two == pytest.approx(2 * (P - 1) * (L + (n / P / 2 - 1) * G), 1e-9)


def test_alltoall_and_sendrecv():
    """All-to-all: every pair at once (α with G = 0); send/recv: α + (n − 1)·β."""
    latency_only = LogGPS(L=L, o=0.0, G=0.0, S=1 << 40)
    assert runtime("alltoall", 6, 36 * 100, latency_only, algorithm="p2p") == pytest.approx(L)
    plan = nccl.plan("alltoall", 6, 36 * 100, algorithm="p2p")
    assert plan.messages == 30
    assert {s.size for m in plan.lanes for lane in m for r in lane for s in r} == {100}
    assert runtime("sendrecv", 2, 5000, algorithm="p2p") == pytest.approx(L + 4999 * G, 1e-9)


def test_message_counts():
    """Ring all-reduce: 2(P−1)·P messages per channel and piece; tree: 2(P−1) per tree."""
    assert nccl.plan("allreduce", 8, 1 << 20, pieces=1).messages == 2 * 7 * 8
    assert nccl.plan("allreduce", 8, 1 << 20, pieces=3, channels=2).messages == 2 * 7 * 8 * 6
    assert nccl.plan("allreduce", 8, 1 << 20, algorithm="tree", pieces=1).messages == 4 * 7


def test_nccls_choice_moves_from_ll_to_simple_with_size():
    """NCCL's tuning model: the low-latency protocol for small messages, Simple for large."""
    small = nccl.choose("allreduce", 16, 1024)
    large = nccl.choose("allreduce", 16, 1 << 30)
    assert small[1] == "ll"
    assert large[1] == "simple"
    assert nccl.choose("alltoall", 8, 8 * 8 * 1024) == ("p2p", "ll")
    assert nccl.choose("alltoall", 8, 8 * 8 * (1 << 20)) == ("p2p", "simple")
    # a named algorithm keeps NCCL's protocol rule for it; a full name fixes both
    assert nccl.resolve("allreduce", 16, 1 << 30, "nccl_ring")[0] == "ring"
    assert nccl.resolve("allreduce", 16, 1024, "nccl_tree_ll128") == ("tree", "ll128")


def test_nccl_choices_are_mpi_collective_algorithms():
    """Registered like the MPI algorithms: ``--collectives allreduce=nccl_ring`` works on any
    trace, as the message pattern (payload bytes, lanes in one chain, no per-hop latency)."""
    assert {"nccl", "nccl_ring", "nccl_tree"} <= set(collectives.ALGORITHMS["allreduce"])
    sched = collectives.expand("allreduce", 4, algorithm="nccl_ring", size=4000)
    assert (sched.messages, sched.bytes) == (24, 2 * 3 * 4000)
    gathered = collectives.expand("allgather", 4, algorithm="nccl_ring", size=100)
    assert (gathered.messages, gathered.bytes) == (12, 1200)
    with pytest.raises(InputError, match="unknown allreduce algorithm 'nccl_ring_ll'"):
        collectives.expand("allreduce", 4, algorithm="nccl_ring_ll", size=1)


def test_bad_plans_are_input_errors():
    with pytest.raises(InputError, match="unknown NCCL allgather algorithm 'tree'"):
        nccl.plan("allgather", 4, 100, algorithm="tree")
    with pytest.raises(InputError, match="unknown NCCL protocol"):
        nccl.plan("allreduce", 4, 100, protocol="ll256")
    with pytest.raises(InputError, match="root"):
        nccl.plan("bcast", 4, 100, root=4)
