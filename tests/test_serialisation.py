"""Serialisation rules of the model (docs/model.md §Serialisation): program-order CPU chains,
the receive-progress models and the NIC model, each checked against numbers worked by hand —
and, for the NIC and multi-CPU examples, against LogGOPSim's figures for the same GOAL graph
(measured on this machine with spcl/LogGOPSim, `-L … -o 1500 -G … -S 100000`)."""

from __future__ import annotations

import numpy as np
import pytest
from hand_graphs import PAPER_MODEL, build

from llamp.graph import CALC, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.lp import evaluate, predict
from llamp.lp.engine import engine_for
from llamp.lp.event_graph import build_event_graph, program_position
from llamp.lp.model import LinearProgram
from llamp.params import LogGPS

BIG_S = 1 << 30
#: The program order's rules are the subject here (the schedule order's are in test_schedule.py).
BASE = LogGPS(L=1000.0, o=100.0, G=0.0, S=BIG_S, **PAPER_MODEL)


def _runtime_both_engines(graph: ExecutionGraph, params: LogGPS) -> float:
    """T from the graph engine, checked against GLOP on the same event graph."""
    T = predict(graph, params, engine="graph").runtime_ns
    lp = LinearProgram(engine_for(graph).events(params), params)
    assert lp.solve().runtime_ns == pytest.approx(T, rel=1e-9, abs=1e-6)
    return T


# ------------------------------------------------------------------------------ program order
def _collective_round_listed_out_of_depth_order():
    """A GOAL-style round like Schedgen's collectives: rank 0 lists s1 (after a 1000 ns calc)
    before s2, which depends on nothing, so s2 has the smaller depth. Program order posts s1
    first: s2 starts at 1000 + o."""
    vertices = {
        "c": (0, "calc", 1000.0),
        "s1": (0, "send", 8, 1),
        "s2": (0, "send", 8, 2),
        "r1": (1, "recv", 8, 0),
        "r2": (2, "recv", 8, 0),
    }
    edges = [("c", "requires", "s1"), ("s1", "message", "r1"), ("s2", "message", "r2")]
    return build(3, vertices, edges)


def test_send_posts_are_chained_in_program_order_not_depth_order():
    """Program order: s1 at 1000, s2 at 1000 + o = 1100; r2 finishes 1100 + 2o + L = 2300.
    (Depth order would post s2 first, at 0, and give T = 1000 + 2o + L = 2200.)"""
    graph, ids = _collective_round_listed_out_of_depth_order()
    ev = evaluate(graph, BASE)
    assert ev.start_ns[ids["s2"]] == pytest.approx(1100.0)
    assert ev.finish_ns[ids["r2"]] == pytest.approx(2300.0)
    assert _runtime_both_engines(graph, BASE) == pytest.approx(2300.0)


def test_a_vertex_listed_before_its_dependency_keeps_dependency_order():
    """GOAL may list s1 before the calc it requires: program order is then the rank's stable
    topological order (c, s1, s2), so the chain s1 → s2 never closes a cycle."""
    vertices = {
        "s1": (0, "send", 8, 1),
        "c": (0, "calc", 1000.0),
        "s2": (0, "send", 8, 2),
        "r1": (1, "recv", 8, 0),
        "r2": (2, "recv", 8, 0),
    }
    edges = [("c", "requires", "s1"), ("s1", "message", "r1"), ("s2", "message", "r2")]
    graph, ids = build(3, vertices, edges)
    position = program_position(graph)
    assert list(np.argsort(position)[:3]) == [ids["c"], ids["s1"], ids["s2"]]
    assert evaluate(graph, BASE).start_ns[ids["s2"]] == pytest.approx(1100.0)


def test_trace_order_is_the_program_order():
    graph, _ = _collective_round_listed_out_of_depth_order()
    np.testing.assert_array_equal(program_position(graph), np.arange(graph.num_vertices))


def test_receives_joined_by_a_send_are_not_a_wait():
    """A GOAL send that requires two receives (a reduction step) is not a Wait: both messages
    arrive at o + L and finish at 2o + L = 1200 each; s starts at 1200 and r3 finishes at
    1200 + 2o + L = 2400 (chaining them as one wait would give 2500)."""
    vertices = {
        "r1": (0, "recv", 8, 1),
        "r2": (0, "recv", 8, 2),
        "s": (0, "send", 8, 3),
        "s1": (1, "send", 8, 0),
        "s2": (2, "send", 8, 0),
        "r3": (3, "recv", 8, 0),
    }
    edges = [
        ("r1", "requires", "s"),
        ("r2", "requires", "s"),
        ("s1", "message", "r1"),
        ("s2", "message", "r2"),
        ("s", "message", "r3"),
    ]
    graph, ids = build(4, vertices, edges)
    ev = evaluate(graph, BASE)
    np.testing.assert_allclose(ev.finish_ns[[ids["r1"], ids["r2"]]], [1200.0, 1200.0])
    assert _runtime_both_engines(graph, BASE) == pytest.approx(2400.0)


# ------------------------------------------------------------------------------ receive progress
def _irecv_calc_wait(calc_ns: float = 5000.0):
    """Rank 1: Irecv r; calc c (irequires r); Wait (w requires c and r). Rank 0 sends at 0."""
    vertices = {
        "s": (0, "send", 8, 1),
        "c0": (1, "calc", 0.0),
        "r": (1, "recv", 8, 0),
        "c": (1, "calc", calc_ns),
        "w": (1, "calc", 0.0),
    }
    edges = [
        ("c0", "requires", "r"),
        ("r", "irequires", "c"),
        ("c", "requires", "w"),
        ("r", "requires", "w"),
        ("s", "message", "r"),
    ]
    return build(2, vertices, edges)


def test_async_progress_overlaps_the_receive_overhead_with_computation():
    """The message arrives at o + L = 1100 and is received at 1200, during c: T = 5000."""
    graph, ids = _irecv_calc_wait()
    ev = evaluate(graph, BASE)
    assert ev.finish_ns[ids["r"]] == pytest.approx(1200.0)
    assert _runtime_both_engines(graph, BASE) == pytest.approx(5000.0)


def test_wait_progress_charges_the_receive_inside_the_wait():
    """No asynchronous progress: the receive's o starts when the Wait starts, after c: 5100."""
    graph, ids = _irecv_calc_wait()
    params = BASE.with_(progress="wait")
    ev = evaluate(graph, params)
    assert ev.finish_ns[ids["r"]] == pytest.approx(5100.0)
    assert _runtime_both_engines(graph, params) == pytest.approx(5100.0)
    assert ev.lambda_o == 1.0 and ev.lambda_L == 0.0


def test_wait_progress_changes_nothing_when_the_message_arrives_after_the_wait_started():
    """A 500 ns calc: the Wait starts at 500, the message arrives at 1100: T = 1200 in both."""
    graph, _ = _irecv_calc_wait(500.0)
    for progress in ("async", "wait"):
        assert _runtime_both_engines(graph, BASE.with_(progress=progress)) == pytest.approx(1200.0)


# ------------------------------------------------------------------------------ NIC model
def _four_messages(nics: tuple[int, ...] = (0, 0, 0, 0)):
    """Rank 0 sends four 64 KiB messages back to back (no dependencies between them), rank 1
    posts the four receives; then each rank computes 1 µs (a calc requiring its four ops)."""
    vertices, edges = {}, []
    for k in range(4):
        vertices[f"s{k}"] = (0, "send", 65536, 1, k)
    vertices["c0"] = (0, "calc", 1000.0)
    for k in range(4):
        vertices[f"r{k}"] = (1, "recv", 65536, 0, k)
    vertices["c1"] = (1, "calc", 1000.0)
    for k in range(4):
        edges += [
            (f"s{k}", "requires", "c0"),
            (f"r{k}", "requires", "c1"),
            (f"s{k}", "message", f"r{k}"),
        ]
    graph, ids = build(2, vertices, edges)
    nic = np.zeros(graph.num_vertices, np.int16)
    for k, n in enumerate(nics):
        nic[ids[f"s{k}"]] = nic[ids[f"r{k}"]] = n
    graph = ExecutionGraph.from_arrays(
        2, **_columns(graph), nic=nic, meta=graph.meta, label=graph.label
    )
    return graph, ids


def _columns(graph: ExecutionGraph) -> dict:
    names = ("rank", "kind", "cost_ns", "size", "peer", "tag", "edge_src", "edge_dst", "edge_kind")
    return {name: getattr(graph, name) for name in names}


FOUR = LogGPS(o=1500.0, G=6.0, S=100_000, nic="overlap")


@pytest.mark.parametrize(
    ("L", "loggopsim_ns"), [(0.0, 1_581_340.0), (3000.0, 1_584_340.0), (30_000.0, 1_611_340.0)]
)
def test_serial_nic_serialises_back_to_back_transfers_as_loggopsim(L, loggopsim_ns):
    """Sends start B·G = 65535·6 = 393,210 ns apart; the receiver's CPU takes o + B·G per
    message (LogGOPSim's rule): r4 finishes at r1 + 3·(o + B·G) = (2o + L + B·G) + 3·394,710."""
    graph, _ = _four_messages()
    params = FOUR.with_(L=L, nic="serial")
    T = _runtime_both_engines(graph, params)
    assert T == pytest.approx(loggopsim_ns, abs=1e-6)
    assert T == pytest.approx(5 * 1500 + L + 4 * 65535 * 6 + 1000)


def test_serial_nic_over_two_nics_is_still_bound_by_the_receiving_cpu():
    """Spread over nic 0 / nic 1 the sends overlap, but the receiving CPU still processes one
    message after another: LogGOPSim gives the same 1,584,340 ns."""
    graph, _ = _four_messages((0, 1, 0, 1))
    assert _runtime_both_engines(graph, FOUR.with_(L=3000.0, nic="serial")) == pytest.approx(
        1_584_340.0
    )


def test_overlapping_nic_is_todays_model_and_gap_free_when_G_is_zero():
    graph, _ = _four_messages()
    # G = 0: 11,500 ns in both models and in LogGOPSim.
    for nic in ("overlap", "serial"):
        T = _runtime_both_engines(graph, LogGPS(L=3000.0, o=1500.0, G=0.0, S=100_000, nic=nic))
        assert T == pytest.approx(11_500.0)
    # G = 6 ns/B: the transfers overlap completely (one B·G counted): 404,710 ns.
    assert _runtime_both_engines(graph, FOUR.with_(L=3000.0)) == pytest.approx(404_710.0)


def test_lambda_G_counts_the_bytes_serialised_on_the_critical_path():
    """Under serial the critical path runs through all four transfers: T = 5o + L + 4·B·G +
    1000, so λ_G = 4·65535 (λ_G = 65535 under overlap), λ_L = 1, λ_o = 5."""
    graph, _ = _four_messages()
    point = engine_for(graph).point(FOUR.with_(L=3000.0, nic="serial"))
    assert point.right == {"L": 1.0, "G": 4 * 65535, "o": 5.0}
    assert engine_for(graph).point(FOUR.with_(L=3000.0)).right["G"] == 65535


def test_message_gap_g_spaces_small_messages():
    """g = 2 µs, 8-byte messages, G = 0: sends start g apart (more than o), so r4 finishes at
    3g + 2o + L and T = 3·2000 + 3000 + 3000 + 1000 = 13,000; λ_g = 3."""
    vertices, edges = {}, []
    for k in range(4):
        vertices[f"s{k}"] = (0, "send", 8, 1, k)
    for k in range(4):
        vertices[f"r{k}"] = (1, "recv", 8, 0, k)
    vertices["c1"] = (1, "calc", 1000.0)
    for k in range(4):
        edges += [(f"r{k}", "requires", "c1"), (f"s{k}", "message", f"r{k}")]
    graph, _ = build(2, vertices, edges)
    params = LogGPS(L=3000.0, o=1500.0, G=0.0, S=100_000, g=2000.0, nic="serial")
    assert _runtime_both_engines(graph, params) == pytest.approx(13_000.0)
    assert engine_for(graph).point(params, ("L", "g")).right == {"L": 1.0, "g": 3.0}
    # Under overlap, g has no effect.
    assert predict(graph, params.with_(nic="overlap")).runtime_ns == pytest.approx(
        3 * 1500 + 3000 + 3000 + 1000
    )


def test_receives_are_accepted_in_completion_order_not_posting_order():
    """Irecv A; Irecv B; Wait B; Send X; Wait A — A's message answers X. Chaining the NIC in
    posting order (A before B) would be a cycle; in completion order (B, then A) it is not."""
    vertices = {
        "c0": (0, "calc", 0.0),
        "rA": (0, "recv", 8, 1, 1),
        "rB": (0, "recv", 8, 1, 2),
        "c1": (0, "calc", 0.0),
        "x": (0, "send", 8, 1, 3),
        "c2": (0, "calc", 0.0),
        "c3": (0, "calc", 0.0),
        "sB": (1, "send", 8, 0, 2),
        "rX": (1, "recv", 8, 0, 3),
        "sA": (1, "send", 8, 0, 1),
    }
    edges = [
        ("c0", "requires", "rA"),
        ("c0", "requires", "rB"),
        ("rA", "irequires", "c1"),
        ("rB", "irequires", "c1"),
        ("rB", "requires", "c2"),
        ("c1", "requires", "c2"),
        ("c2", "requires", "x"),
        ("x", "requires", "c3"),
        ("rA", "requires", "c3"),
        ("sB", "requires", "rX"),
        ("rX", "requires", "sA"),
        ("sB", "message", "rB"),
        ("x", "message", "rX"),
        ("sA", "message", "rA"),
    ]
    graph, ids = build(2, vertices, edges)
    params = BASE.with_(G=1.0, nic="serial", progress="wait")
    # Each message takes 2o + L + B·G = 1207 ns from its send's start: sB at 0 → rB at 1207,
    # x at 1207 → rX at 2414, sA at 2414 → rA at 3621 = T.
    ev = evaluate(graph, params)
    np.testing.assert_allclose(ev.finish_ns[[ids["rB"], ids["rX"], ids["rA"]]], [1207, 2414, 3621])
    assert _runtime_both_engines(graph, params) == pytest.approx(3 * 1207.0)


def test_a_reduction_accepts_the_leaf_message_before_the_subtree_message():
    """Schedgen's binomial reduce lists the root's receives deepest subtree first. Messages of
    1001 B at G = 1 take 2o + L + B·G = 2200 ns: the leaf's (rank 3) reaches the root at 2200,
    the subtree's (2 → 1 → 0) at 4400. The NIC takes them in the order they can finish (event
    depth): r3 then r1, so T = 4400 (LogGOPSim's arrival order); in listing order r1 would go
    first and r3 finish at 4400 + B·G = 5400."""
    vertices = {
        "r1": (0, "recv", 1001, 1),
        "r3": (0, "recv", 1001, 3),
        "s1": (1, "send", 1001, 0),
        "r2": (1, "recv", 1001, 2),
        "s2": (2, "send", 1001, 1),
        "s3": (3, "send", 1001, 0),
    }
    edges = [
        ("r2", "requires", "s1"),
        ("s1", "message", "r1"),
        ("s2", "message", "r2"),
        ("s3", "message", "r3"),
    ]
    graph, ids = build(4, vertices, edges)
    params = BASE.with_(G=1.0, nic="serial")
    ev = evaluate(graph, params)
    np.testing.assert_allclose(ev.finish_ns[[ids["r3"], ids["r1"]]], [2200.0, 4400.0])
    assert _runtime_both_engines(graph, params) == pytest.approx(4400.0)


# ------------------------------------------------------------------------------ CPU streams
def test_sends_on_two_cpus_of_one_rank_are_not_serialised():
    """GOAL `cpu 0`/`cpu 1`: rank 0 computes 50 µs on each CPU, then sends 1 KiB from each;
    rank 1 receives on two CPUs and computes 20 µs after each receive. The two sends both start
    at 50 µs: 50,000 + 2o + L + 20,000 = 76,000 ns (LogGOPSim: 76,000). On one CPU the calcs
    are serialised too: a1 ends at 100 µs, s1 starts at 100 µs + o, r1 is received at
    101,500 + 2o + L = 107,500 and b1 waits for b0 (until 126,000): 146,000; LogGOPSim 147,500
    (its CPU processes r1's message only after b0, as ``--order schedule`` does)."""
    vertices = {
        "a0": (0, "calc", 50_000.0),
        "a1": (0, "calc", 50_000.0),
        "s0": (0, "send", 1024, 1),
        "s1": (0, "send", 1024, 1),
        "r0": (1, "recv", 1024, 0),
        "r1": (1, "recv", 1024, 0),
        "b0": (1, "calc", 20_000.0),
        "b1": (1, "calc", 20_000.0),
    }
    edges = [
        ("a0", "requires", "s0"),
        ("a1", "requires", "s1"),
        ("r0", "requires", "b0"),
        ("r1", "requires", "b1"),
        ("s0", "message", "r0"),
        ("s1", "message", "r1"),
    ]
    graph, ids = build(2, vertices, edges)
    params = LogGPS(L=3000.0, o=1500.0, G=0.0, S=100_000, **PAPER_MODEL)
    assert _runtime_both_engines(graph, params) == pytest.approx(146_000.0)
    assert _runtime_both_engines(graph, params.with_(order="schedule")) == 147_500.0
    cpu = np.zeros(graph.num_vertices, np.int16)
    for name in ("a1", "s1", "r1", "b1"):
        cpu[ids[name]] = 1
    two = ExecutionGraph.from_arrays(2, **_columns(graph), cpu=cpu, meta=graph.meta)
    assert _runtime_both_engines(two, params) == pytest.approx(76_000.0)


def test_models_change_the_event_graph_and_are_cached_separately():
    graph, _ = _four_messages()
    eng = engine_for(graph)
    overlap, serial = eng.events(FOUR), eng.events(FOUR.with_(nic="serial"))
    assert serial.num_edges > overlap.num_edges
    assert eng.events(FOUR.with_(L=1.0)) is overlap  # weights only: same lowering
    assert (serial.progress, serial.nic) == ("async", "serial")
    direct = build_event_graph(graph, FOUR.S, nic="serial")
    assert direct.num_edges == serial.num_edges


def test_lp_refuses_a_configuration_of_another_lowering():
    graph, _ = _four_messages()
    lp = LinearProgram(engine_for(graph).events(FOUR), FOUR)
    with pytest.raises(Exception, match="nic=serial"):
        lp.solve(FOUR.with_(nic="serial"))


def test_parameter_parsing_and_validation():
    params = LogGPS.parse(g="50ns", progress="wait", nic="serial")
    assert (params.g, params.progress, params.nic) == (50.0, "wait", "serial")
    assert params.as_dict()["g_ns"] == 50.0
    with pytest.raises(Exception, match="unknown progress model"):
        LogGPS(progress="eager")
    with pytest.raises(Exception, match="unknown NIC model"):
        LogGPS(nic="fast")


def test_kinds_used_by_the_examples():  # keep the constants the examples rely on honest
    assert (CALC, SEND, RECV, REQUIRES) == (0, 1, 2, 0)
