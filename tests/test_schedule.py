"""The schedule order (docs/model.md §Serialisation, ``--order schedule``): one event-driven pass
at the baseline fixes the order in which every CPU stream and NIC serves its operations; the
event graph chains them, so T at the baseline is the pass's T and stays a longest path around it.

The LogGOPSim figures are spcl/LogGOPSim 76451de's output for the same GOAL text
(``txt2bin -i g.goal -o g.bin && LogGOPSim -f g.bin -L … -o 1500 -g 0 -G … -S 65535``),
measured on this machine; they are facts here, LogGOPSim is not needed to run the tests.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from random_graphs import random_graph

from llamp.errors import GraphError
from llamp.graph import CALC
from llamp.ingest.goal import parse_goal_text
from llamp.lp.engine import GraphEngine
from llamp.lp.model import LinearProgram
from llamp.lp.schedule import _gnu_sort, schedule
from llamp.lp.tolerance import tolerance
from llamp.params import LogGPS

LOGGOPSIM = LogGPS(o=1500.0, g=0.0, S=65535, nic="serial", order="schedule", rendezvous="loggopsim")

TWO_CALCS = """num_ranks 1
rank 0 {
a: calc 10000
b: calc 10000
}
"""
CALC_AND_SEND = """num_ranks 2
rank 0 {
c: calc 10000
s: send 8b to 1 tag 0
}
rank 1 {
r: recv 8b from 0 tag 0
}
"""
#: Rank 0 receives, then sends s1 (after the receive) and s2 (after nothing), listed in that
#: order: the program order posts s1 first, the network s2.
TWO_SENDS = """num_ranks 3
rank 0 {
r: recv 8b from 1 tag 0
s1: send 8b to 2 tag 1
s1 requires r
s2: send 8b to 1 tag 1
}
rank 1 {
a: send 8b to 0 tag 0
b: recv 8b from 0 tag 1
b requires a
}
rank 2 {
c: recv 8b from 0 tag 1
}
"""
LATE_RECEIVE = """num_ranks 2
rank 0 {
s: send 1000b to 1 tag 1
}
rank 1 {
c: calc 20000
r: recv 1000b from 0 tag 1
r requires c
}
"""
#: Valid, but rejected as a deadlock under the program order with --progress wait.
NOT_A_DEADLOCK = """num_ranks 2
rank 0 {
s: send 8b to 1 tag 1
}
rank 1 {
r: recv 8b from 0 tag 1
a: calc 1000
a requires r
b: calc 1000
b requires a
b requires r
}
"""
#: Schedgen's double ring (``schedgen -p doublering -s 4 -d 8``).
DOUBLE_RING = """num_ranks 4
rank 0 {
l1: send 8b to 1 tag 0
l2: recv 8b from 3 tag 0
l3: send 8b to 3 tag 0
l4: recv 8b from 1 tag 0
}
rank 1 {
l1: send 8b to 2 tag 0
l2: recv 8b from 0 tag 0
l1 requires l2
l3: send 8b to 0 tag 0
l4: recv 8b from 2 tag 0
l3 requires l4
}
rank 2 {
l1: send 8b to 3 tag 0
l2: recv 8b from 1 tag 0
l1 requires l2
l3: send 8b to 1 tag 0
l4: recv 8b from 3 tag 0
l3 requires l4
}
rank 3 {
l1: send 8b to 0 tag 0
l2: recv 8b from 2 tag 0
l1 requires l2
l3: send 8b to 2 tag 0
l4: recv 8b from 0 tag 0
l3 requires l4
}
"""
#: A rendezvous message (100 kB > S) whose receive is posted late; the sender's Isend lets a
#: calc run meanwhile.
RENDEZVOUS_ISEND = """num_ranks 2
rank 0 {
s: send 100000b to 1 tag 0
a: calc 1000
a irequires s
b: calc 1000
b requires a
}
rank 1 {
w: calc 20000
r: recv 100000b from 0 tag 0
r requires w
}
"""
# LogGOPSim's defects (docs/model.md §Differences from LogGOPSim): the graphs and both values.
ZERO_BYTES = """num_ranks 2
rank 0 {
s: send 0b to 1 tag 0
}
rank 1 {
r: recv 0b from 0 tag 0
}
"""
OTHER_CPU = """num_ranks 2
rank 0 {
c: calc 10000 cpu 0
s: send 8b to 1 tag 0 cpu 1
s requires c
}
rank 1 {
r: recv 8b from 0 tag 0
}
"""
SENDER_CPU = """num_ranks 2
rank 0 {
s: send 8b to 1 tag 0 cpu 1
}
rank 1 {
c: calc 10000 cpu 0
r: recv 8b from 0 tag 0 cpu 0
}
"""

#: (graph, L ns, G ns/B, LogGOPSim 76451de's T in ns).
LOGGOPSIM_FACTS = [
    (TWO_CALCS, 3000.0, 0.0, 20000),
    (CALC_AND_SEND, 3000.0, 0.0, 11500),
    (CALC_AND_SEND, 100000.0, 0.0, 103000),
    (TWO_SENDS, 3000.0, 0.0, 12000),
    (TWO_SENDS, 3000.0, 6.0, 12084),
    (TWO_SENDS, 100000.0, 0.0, 206000),
    (LATE_RECEIVE, 3000.0, 0.0, 21500),
    (LATE_RECEIVE, 3000.0, 6.0, 27494),
    (LATE_RECEIVE, 100000.0, 0.0, 103000),
    (NOT_A_DEADLOCK, 3000.0, 0.0, 8000),
    (NOT_A_DEADLOCK, 3000.0, 6.0, 8042),
    (DOUBLE_RING, 3000.0, 0.0, 27000),
    (DOUBLE_RING, 3000.0, 6.0, 27252),
    (DOUBLE_RING, 100000.0, 0.0, 415000),
    (RENDEZVOUS_ISEND, 3000.0, 0.0, 21500),
    (RENDEZVOUS_ISEND, 3000.0, 6.0, 621494),
    (RENDEZVOUS_ISEND, 100000.0, 0.0, 103000),
]


def _graph(text: str):
    return parse_goal_text(text, name="test.goal")


def _check_engines(graph, params: LogGPS) -> float:
    """T of the graph engine at ``params``, equal to GLOP's and HiGHS's on its event graph."""
    engine = GraphEngine(graph)
    T = engine.runtime(params)
    events = engine.events(params)
    for solver in ("glop", "highs"):
        lp = LinearProgram(events, params, solver=solver)
        assert lp.solve(params).runtime_ns == pytest.approx(T, rel=1e-9, abs=1e-6), solver
    return T


@pytest.mark.parametrize(("text", "L", "G", "expected"), LOGGOPSIM_FACTS)
def test_the_schedule_order_gives_loggopsims_runtime(text, L, G, expected):
    graph = _graph(text)
    params = LOGGOPSIM.with_(L=L, G=G).rescheduled()
    assert schedule(graph, params).runtime == expected
    assert _check_engines(graph, params) == expected


def test_two_independent_calcs_share_their_cpu():
    """One CPU stream per rank: the second calc waits for the first (LogGOPSim: 20,000 ns)."""
    graph = _graph(TWO_CALCS)
    plan = schedule(graph, LOGGOPSIM)
    assert sorted(plan.start.tolist()) == [0.0, 10000.0]
    assert plan.cpu_prev.tolist()[:2] in ([-1, 0], [1, -1])


def test_a_late_receive_pays_o_and_its_bytes_when_the_cpu_is_free():
    """The 1000 B message arrives at o + L = 4500 while the CPU computes until 20,000; it is
    processed then: 20,000 + o + 999·G = 27,494 (the receive completes at once when posted)."""
    graph = _graph(LATE_RECEIVE)
    params = LOGGOPSIM.with_(L=3000.0, G=6.0).rescheduled()
    plan = schedule(graph, params)
    assert plan.processed.tolist() == [20000.0]
    assert GraphEngine(graph).runtime(params) == 27494.0


def test_the_order_is_fixed_away_from_the_baseline():
    """Evaluated at another L, the baseline's order stays (T is a longest path: convex and
    piecewise linear in L); re-scheduled there, the order is that point's own."""
    graph = _graph(TWO_SENDS)
    base = LOGGOPSIM.with_(L=3000.0, G=0.0).rescheduled()
    engine = GraphEngine(graph)
    Ls = np.linspace(0.0, 100000.0, 11)
    fixed = np.array([engine.runtime(base.with_(L=x)) for x in Ls])
    assert np.all(np.diff(fixed, 2) >= -1e-9)  # convex
    own = [schedule(graph, base.with_(L=x).rescheduled()).runtime for x in Ls]
    for x, T in zip(Ls, own, strict=True):
        assert engine.runtime(base.with_(L=x).rescheduled()) == T
    assert own[-1] == 206000.0  # LogGOPSim's at 100 µs (the sends swap nothing here)


def test_rendezvous_per_hop_formulas():
    """A 1 MiB binary-tree broadcast over 64 ranks (G = 0, L = 100 µs, o = 1.5 µs): each hop
    costs L + 2o under LogGOPSim's protocol (LogGOPSim: 618,000 ns over 6 hops with the
    sibling's send o), 3L + 4o under the RTS/CTS handshake."""
    ranks = 64
    lines = [f"num_ranks {ranks}"]
    for r in range(ranks):
        body = []
        if r:
            body.append(f"r: recv 1048576b from {(r - 1) // 2} tag 0")
        for i, child in enumerate((2 * r + 1, 2 * r + 2)):
            if child < ranks:
                body.append(f"s{i}: send 1048576b to {child} tag 0")
                if r:
                    body.append(f"s{i} requires r")
        lines += [f"rank {r} {{", *body, "}"]
    graph = _graph("\n".join(lines) + "\n")
    at = LOGGOPSIM.with_(L=100000.0, G=0.0).rescheduled()
    assert GraphEngine(graph).runtime(at) == 618000.0
    for order in ("program", "schedule"):
        assert GraphEngine(graph).runtime(at.with_(order=order).rescheduled()) == 618000.0
        handshake = at.with_(order=order, rendezvous="handshake").rescheduled()
        assert GraphEngine(graph).runtime(handshake) == 1836000.0


#: Rank 1 posts its receive, computes 10 µs, then waits: the halo exchange's pattern.
POSTED_THEN_COMPUTE = """num_ranks 2
rank 0 {
s: send 8192b to 1 tag 0
}
rank 1 {
r: recv 8192b from 0 tag 0
c: calc 10000
w: calc 0
w requires r
w requires c
}
"""


def test_a_polled_request_is_answered_when_the_receiver_stops_computing():
    """L = 3 µs, o = 1.5 µs, S = 4 KiB: the 8 KiB message's RTS arrives at o + L = 4500 while
    rank 1 computes. ``handshake`` answers at once: data at 4500 + 2o + 2L = 13,500, processed
    (o) by 15,000. ``polled`` answers when the calc ends at 10,000: data at 19,000, T =
    20,500, and T(L) = 14,500 + 2L while the RTS arrives before the calc ends (L ≤ 8.5 µs),
    then 3L + 4o (66,000 at L = 20 µs), in the fixed order too: the edge from the calc only
    bounds the match from below. The program order's rule (the request waits for the start
    of the wait that completes its receive) gives the same here."""
    graph = _graph(POSTED_THEN_COMPUTE)
    at = LogGPS(L=3000.0, o=1500.0, G=0.0, S=4096, order="schedule", rendezvous="handshake")
    assert schedule(graph, at).runtime == _check_engines(graph, at) == 15000.0
    polled = at.with_(rendezvous="polled").rescheduled()
    plan = schedule(graph, polled)
    assert plan.match.tolist() == [10000.0]
    assert plan.match_prev.tolist() == [2]  # the calc c (vertex 2) before the answer
    assert plan.runtime == _check_engines(graph, polled) == 20500.0
    engine = GraphEngine(graph)
    Ls = [0.0, 8500.0, 20000.0]
    assert [engine.runtime(polled.with_(L=x)) for x in Ls] == [14500.0, 31500.0, 66000.0]
    assert [schedule(graph, polled.with_(L=x).rescheduled()).runtime for x in Ls] == [
        14500.0,
        31500.0,
        66000.0,
    ]
    # the program order's static rule: the request waits for the wait's start (the calc's end)
    for progress in ("async", "wait"):
        program = polled.with_(order="program", progress=progress)
        assert _check_engines(graph, program) == 20500.0
        assert [engine.runtime(program.with_(L=x)) for x in Ls] == [14500.0, 31500.0, 66000.0]
        assert _check_engines(graph, program.with_(rendezvous="handshake")) == 15000.0


@pytest.mark.parametrize(
    ("text", "G", "ours", "loggopsim"),
    [
        # A 0-byte message: LogGOPSim charges (size − 1)·G in unsigned arithmetic, i.e. −G.
        (ZERO_BYTES, 6.0, 6000.0, 5994),
        # A send released by a calc on another CPU stream starts at its own stream's clock (0),
        # before the calc it requires has finished.
        (OTHER_CPU, 0.0, 16000.0, 10000),
        # The message is processed by the stream with the sender's CPU index (idle) instead of
        # the receive's (busy until 10,000).
        (SENDER_CPU, 0.0, 11500.0, 10000),
    ],
)
def test_loggopsim_defects_are_not_reproduced(text, G, ours, loggopsim):
    graph = _graph(text)
    params = LOGGOPSIM.with_(L=3000.0, G=G).rescheduled()
    assert schedule(graph, params).runtime == ours != loggopsim
    assert _check_engines(graph, params) == ours


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rendezvous", ["loggopsim", "handshake", "polled"])
@pytest.mark.parametrize("nic", ["serial", "overlap"])
def test_random_graphs_equal_the_pass_at_the_baseline_and_engines_agree(seed, rendezvous, nic):
    """At the baseline the fixed-order longest path is the schedule pass's T; around it the
    graph engine, GLOP and HiGHS agree (to 1e-9) on the same chains."""
    graph = random_graph(seed, ranks=4, steps=60, max_size=4096)
    rng = np.random.default_rng(seed)
    base = LogGPS(
        L=float(rng.integers(0, 20000)),
        o=float(rng.integers(0, 2000)),
        G=float(rng.choice([0.0, 0.5, 6.0])),
        g=float(rng.choice([0.0, 700.0])),
        S=int(rng.choice([256, 2048, 1 << 20])),
        nic=nic,
        order="schedule",
        rendezvous=rendezvous,
    )
    assert GraphEngine(graph).runtime(base) == pytest.approx(
        schedule(graph, base).runtime, rel=1e-12, abs=1e-6
    )
    for other in (base, base.with_(L=base.L * 2.0 + 500.0, G=base.G + 0.25, o=base.o / 2)):
        _check_engines(graph, other)


def _edges_listed(graph, permutation):
    """``graph`` with its edges listed in another order (as a store may return them)."""
    return dataclasses.replace(
        graph,
        edge_src=graph.edge_src[permutation],
        edge_dst=graph.edge_dst[permutation],
        edge_kind=graph.edge_kind[permutation],
    )


@pytest.mark.parametrize("seed", range(4))
def test_the_order_does_not_depend_on_how_the_edges_are_listed(seed, sweep3d):
    """The pass releases each vertex's dependents by vertex id, so its ties, and with them
    the fixed order away from the baseline, are the graph's: Sweep3D (whose pass has ties
    that bind at other latencies) and random graphs with their edges shuffled give the same
    schedule, the same T at 30× the baseline's L and the same 1 % latency tolerance."""
    graph = sweep3d if seed == 0 else random_graph(seed, ranks=4, steps=60, max_size=4096)
    params = LogGPS()
    shuffled = _edges_listed(graph, np.random.default_rng(seed).permutation(graph.edge_src.size))
    ours, theirs = schedule(graph, params), schedule(shuffled, params)
    np.testing.assert_array_equal(ours.start, theirs.start)
    np.testing.assert_array_equal(ours.finish, theirs.finish)
    far = params.with_(L=30 * params.L)
    assert GraphEngine(shuffled).runtime(far) == GraphEngine(graph).runtime(far)
    if seed == 0:
        assert tolerance(shuffled, params).latency[0].value == (
            tolerance(graph, params).latency[0].value
        )


def test_analytic_collectives_are_refused_with_a_reason():
    from test_analytic_collectives import two_ranks

    with pytest.raises(GraphError, match=r"the schedule order \(the default\) needs point-to") as e:
        schedule(two_ranks(), LOGGOPSIM)
    assert "--order program" in str(e.value) and "collectives expanded" in str(e.value)


@pytest.mark.parametrize("n", [5, 17, 40, 200])
def test_release_order_is_libstdcxx_sort(n):
    """Equal kinds keep their order up to 16 (insertion sort), beyond that they are permuted
    as GCC's introsort permutes them; the kinds end up sorted either way."""
    rng = np.random.default_rng(n)
    keys = rng.integers(1, 4, size=n)
    items = np.arange(n, dtype=np.int64)
    k = keys.copy()
    _gnu_sort(k, items, 0, n)
    assert np.all(np.diff(k) >= 0)
    assert np.array_equal(keys[items], k)
    if n <= 16:
        assert np.array_equal(items, np.argsort(keys, kind="stable"))


# ---------------------------------------------------------------------- the program order
PROGRAM = LogGPS(L=3000.0, o=1500.0, G=0.0, g=0.0, S=65535, order="program")


def test_program_order_serialises_calcs_of_one_cpu_stream():
    """Two independent calcs of one rank run one after the other (LogGOPSim: 20,000 ns)."""
    assert _check_engines(_graph(TWO_CALCS), PROGRAM) == 20000.0


@pytest.mark.parametrize("progress", ["async", "wait"])
def test_program_order_has_no_false_deadlock(progress):
    """``b`` requires ``r`` after ``a`` already did: ``r`` belongs to ``a``'s wait, so ``b``'s
    wait holds no receive and no chain closes a cycle (LogGOPSim: 8,000 ns)."""
    assert _check_engines(_graph(NOT_A_DEADLOCK), PROGRAM.with_(progress=progress)) == 8000.0


@pytest.mark.parametrize("progress", ["async", "wait"])
def test_program_order_does_not_hold_a_send_back_for_a_message_it_waits_for(progress):
    """``s1`` waits for ``r``'s message, ``s2``, listed after it, for nothing: ``s1`` is no
    step of the program to chain ``s2`` behind (it is sent when the message has arrived), so
    ``s2`` goes at 0 and ``s1`` at 4,500 + o, as LogGOPSim's readiness order: 12,000 ns."""
    assert _check_engines(_graph(TWO_SENDS), PROGRAM.with_(progress=progress)) == 12000.0


def test_a_late_receive_pays_its_bytes_on_the_cpu_only_in_the_schedule_order_nic_serial():
    """Posted at 20,000 after its 1000 B message arrived: the program order charges o at the
    post (21,500 ns; the bytes were paid on the wire), the schedule order under nic serial
    processes the message when the CPU is free, o + 999·G (27,494 ns, LogGOPSim's); under
    the default overlap NIC the bytes were paid on the wire there too (21,500 ns)."""
    graph = _graph(LATE_RECEIVE)
    assert _check_engines(graph, PROGRAM.with_(G=6.0, nic="serial")) == 21500.0
    schedule = PROGRAM.with_(G=6.0, order="schedule")
    assert _check_engines(graph, schedule.with_(nic="serial")) == 27494.0
    assert _check_engines(graph, schedule.with_(nic="overlap")) == 21500.0


# ---------------------------------------------------------------------- away from the baseline
#: Rank 0 computes 5 µs on CPU 1, then 10 µs on CPU 0; a message from rank 1 arrives at
#: o + L for CPU 0. Below L = 3.5 µs it is processed before the 10 µs calc, above after it.
ORDER_FLIPS = """num_ranks 2
rank 0 {
x: calc 5000 cpu 1
c: calc 10000 cpu 0
c requires x
r: recv 8b from 1 tag 0 cpu 0
}
rank 1 {
s: send 8b to 0 tag 0
}
"""


def test_sweep_reschedules_per_point_and_says_where_the_order_changes():
    """Baseline L = 3 µs: the message first (processed 4500–6000, the calc 6000–16,000). At
    L = 10 µs that order gives 11,500 + o = 13,000, the calc 13,000–23,000; the point's own
    schedule runs the calc first (5000–15,000) and the message after it: T = 16,500."""
    from llamp.lp.predict import sweep_rows

    graph = _graph(ORDER_FLIPS)
    base = LOGGOPSIM.with_(L=3000.0, G=0.0).rescheduled()
    fixed = sweep_rows(graph, base, [0.0, 3000.0, 10000.0], engine="graph")
    own = sweep_rows(graph, base, [0.0, 3000.0, 10000.0], engine="graph", reschedule=True)
    assert [r["runtime_ns"] for r in fixed] == [15000.0, 16000.0, 23000.0]
    assert [r["runtime_ns"] for r in own] == [15000.0, 16000.0, 16500.0]
    assert [r["order_changed"] for r in own] == [False, False, True]
    assert "order_changed" not in fixed[0]
    assert schedule(graph, base.with_(L=10000.0).rescheduled()).runtime == 16500.0
    lp_rows = sweep_rows(graph, base, [0.0, 10000.0], engine="glop", reschedule=True)
    assert [r["runtime_ns"] for r in lp_rows] == [15000.0, 16500.0]


@pytest.mark.parametrize("seed", range(4))
def test_a_rescheduled_sweep_shares_a_lowering_only_between_equal_orders(seed, monkeypatch):
    """Points whose passes served every resource in the same order share one lowering; every
    row equals the point evaluated alone on its own lowering; the sweep holds one re-scheduled
    lowering at a time and none when it is done (11 at once took 1.49 GB at Sweep3D ×32)."""
    from llamp.lp.engine import engine_for
    from llamp.lp.predict import sweep_rows

    graph = random_graph(seed, ranks=4, steps=40, max_size=4096) if seed else _graph(ORDER_FLIPS)
    base = LOGGOPSIM.with_(L=3000.0, G=0.5 if seed else 0.0, S=2048).rescheduled()
    Ls = [0.0, 1000.0, 3000.0, 3001.0, 10000.0, 30000.0, 100000.0]
    configs = [base.with_(L=L).rescheduled() for L in Ls]
    engine = engine_for(graph)
    arrays: dict[float, np.ndarray] = {}  # L → the edge array its row was evaluated on
    held: list[int] = []  # points of the sweep with a lowering cached, at each evaluation
    evaluate = engine.points

    def recording(group, *args, **kwargs):
        held.append(sum(engine.holds(c) for c in configs))
        arrays.update((c.L, engine.events(c).src) for c in group)
        return evaluate(group, *args, **kwargs)

    monkeypatch.setattr(engine, "points", recording)
    rows = sweep_rows(graph, base, Ls, engine="graph", reschedule=True)
    for L, r in zip(Ls, rows, strict=True):
        alone = GraphEngine(graph).point(base.with_(L=L).rescheduled(), left=False)
        assert r["runtime_ns"] == alone.runtime_ns
        assert [r["lambda_L"], r["lambda_G"], r["lambda_o"]] == list(alone.right.values())
    for i in range(1, len(Ls)):
        same = schedule(graph, configs[i]).same_order(schedule(graph, configs[i - 1]))
        assert (arrays[Ls[i]] is arrays[Ls[i - 1]]) == same
    # one evaluation per run of equal orders, with that run's points (and no other) in the cache
    runs = [len(list(run)) for _, run in itertools.groupby(id(arrays[L]) for L in Ls)]
    assert held == runs
    assert not any(engine.holds(c) for c in configs)
    if not seed:
        assert arrays[0.0] is arrays[1000.0]  # the order of L = 0 holds up to 3 µs


def test_critical_latencies_say_where_the_schedule_order_changes(tmp_path):
    """Exact for the baseline's order (L = 3 µs) over [0, 20 µs]; re-scheduled at the ends, the
    critical value and the baseline, the network's own order differs at 20 µs (the calc goes
    first): T 23 µs there, 33 µs in the baseline's order."""
    import json

    from cli_process import llamp

    path = tmp_path / "flip.goal"
    path.write_text(ORDER_FLIPS)
    options = ("--o", "1.5us", "--G", "0", "--L", "3us", "--order", "schedule")
    out = llamp(
        "critical",
        str(path),
        *options,
        "--rendezvous",
        "loggopsim",
        "--to",
        "20us",
        "--json",
        home=tmp_path,
    )
    data = json.loads(out.stdout)
    assert data["critical_latencies_ns"] == [pytest.approx(2000.0)]
    order = data["schedule_order"]
    assert order["checked"] == [0.0, 2000.0, 3000.0, 20000.0]  # the ends, 2 µs, the baseline
    assert order["differs_at"] == order["runtime_differs_at"] == [20000.0]
    assert (order["agrees_from_ns"], order["agrees_to_ns"]) == (0.0, 3000.0)
    assert [p["own_runtime_ns"] for p in order["points"]] == [15000.0, 15000.0, 16000.0, 23000.0]
    assert order["points"][-1]["runtime_ns"] == 33000.0


@pytest.mark.parametrize(("G", "expected"), [(0.0, 76000), (6.0, 88276)])
def test_two_cpu_streams_and_their_nic_as_loggopsim(G, expected):
    """GOAL ``cpu``/``nic`` annotations (tests/test_goal.py: two sends on two CPU streams of
    one rank sharing NIC 0, S = 100,000): LogGOPSim 76451de gives 76,000 ns at G = 0 and
    88,276 ns at G = 6 ns/B (the second 1 KiB message waits for the NIC)."""
    from test_goal import TWO_CPUS

    graph = _graph(TWO_CPUS)
    params = LOGGOPSIM.with_(L=3000.0, G=G, S=100_000).rescheduled()
    assert schedule(graph, params).runtime == expected
    assert _check_engines(graph, params) == expected


def test_release_order_matches_gcc_std_sort_on_forty_operations():
    """The permutation GCC's libstdc++ ``std::sort`` (g++ on this machine, a comparator on the
    kind only) makes of 40 operations of kinds 1–3 (a fact: that program's output)."""
    keys = [2, 1, 3, 2, 1, 1, 3, 2, 2, 1, 3, 3, 1, 2, 1, 2, 3, 1, 2, 2]
    keys += [1, 3, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 3, 3, 3, 1, 1, 2]
    gcc = [1, 38, 37, 32, 30, 28, 26, 24, 22, 20, 17, 14, 12, 4, 9, 5, 13, 39, 0, 33]
    gcc += [3, 31, 29, 27, 25, 7, 23, 8, 19, 18, 15, 6, 21, 10, 16, 34, 35, 36, 2, 11]
    k = np.array(keys, dtype=np.int64)
    items = np.arange(40, dtype=np.int64)
    _gnu_sort(k, items, 0, 40)
    assert items.tolist() == gcc


#: Two blocking sends of 1000 B facing each other: a deadlock under rendezvous (S < 1000).
FACING_SENDS = "num_ranks 2\n" + "".join(
    f"rank {r} {{\ns: send 1000b to {1 - r} tag 0\nr: recv 1000b from {1 - r} tag 0\n"
    "r requires s\n}\n"
    for r in (0, 1)
)


def test_a_real_deadlock_names_the_operations_never_started():
    """Two blocking rendezvous sends facing each other never get their receives posted."""
    text = FACING_SENDS
    with pytest.raises(GraphError, match=r"2 of 4 operations never started .* label r"):
        schedule(_graph(text), LOGGOPSIM.with_(S=10))
    assert schedule(_graph(text), LOGGOPSIM).runtime == pytest.approx(6000.0 + 999 * 0.018)


@pytest.mark.parametrize("seed", range(4))
def test_the_pass_beside_the_fixed_edges_lowers_what_the_pass_before_them_does(seed):
    """In memory the lowering runs the schedule pass on a second thread while it writes the
    edges that do not depend on its orders, into columns allocated at a bound; the event
    graph is the one lowered from a pass run first, array for array."""
    from dataclasses import fields

    from llamp.lp.event_graph import build_event_graph
    from llamp.lp.schedule import schedule_at

    graph = random_graph(seed, ranks=4, steps=60, max_size=8192)
    at = (3000.0, 1500.0, 0.5, 100.0)
    for S, nic, rendezvous in itertools.product(
        (0, 2048), ("overlap", "serial"), ("handshake", "loggopsim")
    ):
        options = dict(order="schedule", nic=nic, rendezvous=rendezvous, schedule_at=at)
        beside = build_event_graph(graph, S, **options)
        before = build_event_graph(
            graph, S, plan=schedule_at(graph, S, nic, rendezvous, at), **options
        )
        for f in fields(beside):
            x, y = getattr(beside, f.name), getattr(before, f.name)
            if isinstance(x, np.ndarray):
                assert x.dtype == y.dtype and np.array_equal(x, y), f.name
            else:
                assert x == y, f.name


def test_a_deadlock_found_by_the_pass_beside_the_edges_is_raised_by_the_lowering():
    from llamp.lp.event_graph import build_event_graph

    with pytest.raises(GraphError, match=r"2 of 4 operations never started"):
        build_event_graph(_graph(FACING_SENDS), 10, order="schedule")


def _numbered_by_depth(graph, ev):
    """The same edges (in-edges in the same order) numbered by event depth, as the program
    order numbers its events."""
    from llamp.lp.event_graph import _assemble, _Columns, _EdgeColumns

    store, index = _Columns(), ev.src.dtype.type
    cols = _EdgeColumns(ev.num_edges, index, store)
    cols.patterns = {
        (tuple(ev.fixed[q].tolist()), tuple(ev.scaled[q].tolist())): q
        for q in range(ev.fixed.shape[0])
    }
    cols.add(
        ev.event_of_pos[ev.src],
        ev.event_of_pos[ev.dst],
        value=ev.value.astype(np.float64),
        m=ev.msg,
        pattern=ev.pattern.astype(np.uint16),
    )
    names = ("rendezvous", "S", "num_handshakes", "extra_owner", "progress", "nic", "order")
    fields = {name: getattr(ev, name) for name in names}
    return _assemble(
        graph,
        cols,
        store,
        ev.num_events,
        index,
        lambda step: None,
        rendezvous_model=ev.rendezvous_model,
        schedule_at=ev.schedule_at,
        **fields,
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rendezvous", ["loggopsim", "handshake"])
@pytest.mark.parametrize("nic", ["serial", "overlap"])
def test_events_are_numbered_in_the_order_the_pass_fixed_their_times(seed, rendezvous, nic):
    """The schedule order's events are numbered by the pass's ``sequence`` (no depth pass):
    every edge goes forward, zero-weight edges between equal times included, and every event's
    time and slopes are bit-identical to those of the same graph numbered by depth."""
    from llamp.lp.engine import slopes_at
    from llamp.lp.event_graph import build_event_graph

    graph = random_graph(seed, ranks=4, steps=60, max_size=4096)
    base = LogGPS(
        L=3000.0, o=1500.0, G=6.0, g=700.0 * (seed % 2), S=2048, nic=nic, order="schedule",
        rendezvous=rendezvous,
    )  # fmt: skip
    plan = schedule(graph, base)
    ev = build_event_graph(
        graph, base.S, nic=nic, order="schedule", rendezvous=rendezvous,
        schedule_at=base.schedule_at, plan=plan,
    )  # fmt: skip
    V, M = graph.num_vertices, ev.rendezvous.size
    fixed = np.concatenate(
        (plan.sequence[: 2 * V + M], plan.sequence[2 * V + M :][np.flatnonzero(ev.rendezvous)])
    )
    assert np.array_equal(ev.pos_of_event, fixed)
    assert np.all(ev.src < ev.dst)
    by_depth = _numbered_by_depth(graph, ev)
    assert not np.array_equal(by_depth.event_of_pos, ev.event_of_pos)
    for params in (base, base.with_(L=20000.0, G=0.5, o=700.0)):
        for sign in (1.0, -1.0):
            t, d, _ = slopes_at(ev, params, sign=sign)
            t_depth, d_depth, _ = slopes_at(by_depth, params, sign=sign)
            assert np.array_equal(t[ev.pos_of_event], t_depth[by_depth.pos_of_event])
            assert np.array_equal(d[ev.pos_of_event], d_depth[by_depth.pos_of_event])


def test_a_pass_order_with_an_edge_going_backward_is_refused():
    """The lowering checks the pass's numbering: a calc numbered finish before start fails
    loudly instead of sweeping the graph out of order."""
    from llamp.lp.event_graph import build_event_graph

    graph = random_graph(0, ranks=2, steps=10, max_size=64)
    params = LogGPS(L=3000.0, o=1500.0, G=0.0, S=65535, order="schedule")
    plan = schedule(graph, params)
    calc = int(np.flatnonzero(graph.kind == CALC)[0])
    s = plan.sequence
    s[2 * calc], s[2 * calc + 1] = s[2 * calc + 1], s[2 * calc]
    with pytest.raises(RuntimeError, match="goes backward"):
        build_event_graph(
            graph, params.S, nic=params.nic, order="schedule", rendezvous=params.rendezvous,
            plan=plan,
        )  # fmt: skip
