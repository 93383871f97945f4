"""The LogGPS cost semantics of docs/model.md §Cost semantics on hand-computed graphs (graph engine).

Each test derives its expected numbers in the docstring; all times in ns.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hand_graphs import PAPER_MODEL, build, paper_example

from llamp.errors import GraphError
from llamp.lp import critical_latencies, critical_path, evaluate, max_parameter_within, predict
from llamp.params import LogGPS

BIG_S = 1 << 30


def test_paper_running_example_runtime_and_sensitivity():
    """LLAMP Eq. 5: T(0.5 µs) = max(1.1, max(0.615, 0.5) + 1) = 1.615 µs; λ_L = 1 (message S→R)."""
    p = predict(
        paper_example(), LogGPS(L=500.0, o=0.0, G=5.0, S=BIG_S, nic="overlap"), engine="graph"
    )
    assert p.runtime_ns == pytest.approx(1615.0, abs=1e-9)
    assert p.lambda_L == 1.0
    assert p.lambda_G == 3.0  # (s − 1) = 3 bytes on the path
    assert p.rho_L == pytest.approx(500.0 / 1615.0)


def test_paper_running_example_below_critical_latency():
    """For L < 0.385 µs the message is overlapped: T = 1.5 µs and λ_L = 0 (LLAMP Fig. 4c)."""
    p = predict(paper_example(), LogGPS(L=200.0, o=0.0, G=5.0, S=BIG_S, nic="overlap"))
    assert p.runtime_ns == pytest.approx(1500.0)
    assert p.lambda_L == 0.0


def test_paper_running_example_critical_latency():
    """L + 0.115 = 0.5 at L_c = 0.385 µs; one breakpoint in [0, 1 µs], λ_L 0 then 1."""
    result = critical_latencies(
        paper_example(), LogGPS(L=0.0, o=0.0, G=5.0, S=BIG_S, nic="overlap"), 0.0, 1000.0
    )
    assert result.critical == [pytest.approx(385.0, abs=1e-9)]
    assert [s.slope for s in result.segments] == [0.0, 1.0]
    # both ends only: λ_L rises by one message, so the tangent intersection is the breakpoint
    assert result.evaluations == 2


def test_paper_running_example_tolerance_for_two_microseconds():
    """max L with T ≤ 2 µs: L + 1.115 = 2 → L = 0.885 µs (LLAMP Fig. 6)."""
    params = LogGPS(L=500.0, o=0.0, G=5.0, S=BIG_S, nic="overlap")
    assert max_parameter_within(paper_example(), params, 2000.0) == pytest.approx(885.0)


def _pair(size: int):
    return build(
        2,
        {"s": (0, "send", size, 1), "r": (1, "recv", size, 0)},
        [("s", "message", "r")],
    )[0]


def test_eager_message():
    """Eager, o = 100, L = 1000, G = 1, 1000 B: finish_r = 0 + o + L + 999·G + o = 2199."""
    p = predict(_pair(1000), LogGPS(L=1000.0, o=100.0, G=1.0, S=1000))
    assert p.runtime_ns == pytest.approx(2199.0)
    assert (p.lambda_L, p.lambda_G, p.lambda_o) == (1.0, 999.0, 2.0)


def test_rendezvous_message():
    """Rendezvous (1000 B > S = 999): h = max(0 + o + L, 0) = 1100;
    finish_r = h + o + L + o + L + 999·G + o = 1100 + 3·100 + 2·1000 + 999 = 4399, so the path
    start_s → h → finish_r holds 3 L's and 4 o's;
    finish_s = h + o + L + o = 2300."""
    graph = _pair(1000)
    params = LogGPS(L=1000.0, o=100.0, G=1.0, S=999, **PAPER_MODEL)  # the handshake's formulas
    p = predict(graph, params)
    assert p.runtime_ns == pytest.approx(4399.0)
    assert (p.lambda_L, p.lambda_G, p.lambda_o) == (3.0, 999.0, 4.0)
    ev = evaluate(graph, params)
    np.testing.assert_allclose(ev.finish_ns, [2300.0, 4399.0])


def test_rendezvous_late_receiver_holds_the_sender():
    """Rendezvous with the receive posted at 5000 (after a calc): h = max(o + L, 5000) = 5000;
    finish_s = 5000 + o + L + o = 6200 — the sender waits for the late receiver;
    finish_r = 5000 + 3o + 2L + 999G = 8299; λ_L = 2 (RTS latency is hidden)."""
    graph, ids = build(
        2,
        {"s": (0, "send", 1000, 1), "c": (1, "calc", 5000.0), "r": (1, "recv", 1000, 0)},
        [("c", "requires", "r"), ("s", "message", "r")],
    )
    params = LogGPS(L=1000.0, o=100.0, G=1.0, S=999, **PAPER_MODEL)  # the handshake's formulas
    ev = evaluate(graph, params)
    assert ev.finish_ns[ids["s"]] == pytest.approx(6200.0)
    assert ev.runtime_ns == pytest.approx(8299.0)
    assert ev.lambda_L == 2.0


def test_late_receiver_hides_latency():
    """Eager send at 0 arrives at o + L = 1100; the receiver computes 5000 first:
    finish_r = max(5000, 1100) + o = 5100, and λ_L = 0 until L > 4900 − o."""
    graph, _ = build(
        2,
        {"s": (0, "send", 1, 1), "c": (1, "calc", 5000.0), "r": (1, "recv", 1, 0)},
        [("c", "requires", "r"), ("s", "message", "r")],
    )
    params = LogGPS(L=1000.0, o=100.0, G=0.0, S=BIG_S)
    p = predict(graph, params)
    assert (p.runtime_ns, p.lambda_L) == (pytest.approx(5100.0), 0.0)
    crit = critical_latencies(graph, params, 0.0, 10_000.0)
    assert crit.critical == [pytest.approx(4900.0)]  # 0 + 2o + L = 5000 + o  →  L = 4900


def _isend_overlap():
    """rank 0: c0 → Isend s; calc c (irequires s) 5000; wait: w requires s and c.
    rank 1: blocking recv r then w1."""
    return build(
        2,
        {
            "c0": (0, "calc", 0.0),
            "s": (0, "send", 1, 1),
            "c": (0, "calc", 5000.0),
            "w": (0, "calc", 0.0),
            "r": (1, "recv", 1, 0),
            "w1": (1, "calc", 0.0),
        },
        [
            ("c0", "requires", "s"),
            ("c0", "requires", "c"),
            ("s", "irequires", "c"),
            ("s", "requires", "w"),
            ("c", "requires", "w"),
            ("r", "requires", "w1"),
            ("s", "message", "r"),
        ],
    )


def test_irequires_overlaps_communication_with_computation():
    """The calc after an Isend starts once the send is posted (start + o = 100) and overlaps it:
    rank 0 ends at 100 + 5000 = 5100; the message lands at 0 + 2o + L = 1200 (λ_L = 0).
    With L = 10 µs rank 1 ends at 10200 > 5100 and λ_L = 1; critical latency L = 4900."""
    graph, ids = _isend_overlap()
    params = LogGPS(L=1000.0, o=100.0, G=0.0, S=BIG_S)
    ev = evaluate(graph, params)
    assert ev.start_ns[ids["c"]] == pytest.approx(100.0)
    assert ev.runtime_ns == pytest.approx(5100.0)
    assert ev.lambda_L == 0.0
    far = predict(graph, params.with_(L=10_000.0))
    assert (far.runtime_ns, far.lambda_L) == (pytest.approx(10_200.0), 1.0)
    assert critical_latencies(graph, params, 0.0, 20_000.0).critical == [pytest.approx(4900.0)]


def test_send_posts_are_serialised():
    """Three sends posted by one rank at once (all require c0) start at 0, o, 2o; each reaches a
    waiting receiver at start + 2o + L: 1200, 1300, 1400 → T = 1400 and λ_o = 4 (two posts
    ahead of the last send, plus its own o and the receiver's o)."""
    vertices = {"c0": (0, "calc", 0.0)}
    edges = []
    for k in (1, 2, 3):
        vertices[f"s{k}"] = (0, "send", 1, k)
        edges.append(("c0", "requires", f"s{k}"))
    for k in (1, 2, 3):
        vertices[f"r{k}"] = (k, "recv", 1, 0)
        edges.append((f"s{k}", "message", f"r{k}"))
    graph, ids = build(4, vertices, edges)
    ev = evaluate(graph, LogGPS(L=1000.0, o=100.0, G=0.0, S=BIG_S))
    np.testing.assert_allclose(ev.start_ns[[ids["s1"], ids["s2"], ids["s3"]]], [0.0, 100.0, 200.0])
    np.testing.assert_allclose(
        ev.finish_ns[[ids["r1"], ids["r2"], ids["r3"]]], [1200.0, 1300.0, 1400.0]
    )
    assert ev.runtime_ns == pytest.approx(1400.0)
    assert ev.lambda_o == 4.0


def test_receives_of_one_waitall_are_processed_one_after_another():
    """Three Irecvs posted at 0 and joined by one Waitall (w requires all three); the three
    messages all arrive at o + L = 1100. Each receive costs o of CPU, one after another:
    finishes 1200, 1300, 1400, so w starts at 1400 (not 1200)."""
    vertices = {"c0": (0, "calc", 0.0)}
    edges = []
    for k in (1, 2, 3):
        vertices[f"r{k}"] = (0, "recv", 8, k)
        edges.append(("c0", "requires", f"r{k}"))
    vertices["w"] = (0, "calc", 0.0)
    edges += [(f"r{k}", "requires", "w") for k in (1, 2, 3)]
    for k in (1, 2, 3):
        vertices[f"s{k}"] = (k, "send", 8, 0)
        edges.append((f"s{k}", "message", f"r{k}"))
    graph, ids = build(4, vertices, edges)
    ev = evaluate(graph, LogGPS(L=1000.0, o=100.0, G=0.0, S=BIG_S))
    np.testing.assert_allclose(
        ev.finish_ns[[ids["r1"], ids["r2"], ids["r3"]]], [1200.0, 1300.0, 1400.0]
    )
    assert ev.start_ns[ids["w"]] == pytest.approx(1400.0)


def _lulesh_exchange():
    """Each rank: Irecv r; calc c (irequires r) 1000; Isend s (requires c); wait w requires r, s.
    The vertex graph has the cycle r0 → c0 → s0 → r1 → c1 → s1 → r0 (irequires + messages)."""
    vertices, edges = {}, []
    for me, other in ((0, 1), (1, 0)):
        vertices |= {
            f"r{me}": (me, "recv", 8, other),
            f"c{me}": (me, "calc", 1000.0),
            f"s{me}": (me, "send", 8, other),
            f"w{me}": (me, "calc", 0.0),
        }
        edges += [
            (f"r{me}", "irequires", f"c{me}"),
            (f"c{me}", "requires", f"s{me}"),
            (f"r{me}", "requires", f"w{me}"),
            (f"s{me}", "requires", f"w{me}"),
        ]
    edges += [("s0", "message", "r1"), ("s1", "message", "r0")]
    return build(2, vertices, edges)


def test_cyclic_vertex_graph_evaluates_on_events():
    """r posted at 0, c runs 0..1000, s starts 1000 (f = 1100); the peer's message lands at
    1000 + o + L = 2100 and is received at 2200; w = max(2200, 1100) → T = 2200, λ_L = 1."""
    graph, ids = _lulesh_exchange()
    vg = nx.DiGraph(list(zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), strict=True)))
    assert not nx.is_directed_acyclic_graph(vg)
    ev = evaluate(graph, LogGPS(L=1000.0, o=100.0, G=0.0, S=BIG_S))
    assert ev.runtime_ns == pytest.approx(2200.0)
    assert ev.finish_ns[ids["r0"]] == pytest.approx(2200.0)
    assert ev.lambda_L == 1.0


def test_facing_blocking_rendezvous_sends_deadlock_is_reported():
    """Rank 0: Send(→1) then Recv; rank 1 the same. Under rendezvous neither send can finish
    before the other's receive is posted: a real deadlock, named with its vertices."""
    vertices, edges = {}, []
    for me, other in ((0, 1), (1, 0)):
        vertices |= {f"s{me}": (me, "send", 1000, other), f"r{me}": (me, "recv", 1000, other)}
        edges.append((f"s{me}", "requires", f"r{me}"))
    edges += [("s0", "message", "r1"), ("s1", "message", "r0")]
    graph, _ = build(2, vertices, edges)
    assert predict(graph, LogGPS(S=BIG_S)).runtime_ns > 0  # eager: fine
    with pytest.raises(GraphError, match="deadlock.*rank 0 vertex"):
        predict(graph, LogGPS(S=100))


def test_critical_path_splits_runtime_exactly():
    """Paper example at L = 0.5 µs: path c0 → S → R → c3 = 100 + 500 + 15 + 1000 = 1615 ns."""
    cp = critical_path(paper_example(), LogGPS(L=500.0, o=0.0, G=5.0, S=BIG_S, nic="overlap"))
    assert cp.vertices.tolist() == [0, 1, 4, 5]
    assert cp.messages.tolist() == [[1, 4]]
    assert cp.totals == {
        "compute_ns": 1100.0,
        "overhead_ns": 0.0,
        "latency_ns": 500.0,
        "bandwidth_ns": 15.0,
    }
    assert sum(cp.totals.values()) == pytest.approx(cp.runtime_ns)


def test_slack_and_critical_flags():
    """Paper example at L = 0.5 µs: c1 can finish 515 ns later (1615 − 1100), c2 115 ns later
    (R waits for the message until 615); the path c0, S, R, c3 has zero slack."""
    ev = evaluate(paper_example(), LogGPS(L=500.0, o=0.0, G=5.0, S=BIG_S, nic="overlap"))
    np.testing.assert_allclose(ev.slack_ns, [0.0, 0.0, 515.0, 115.0, 0.0, 0.0])
    assert ev.critical.tolist() == [True, True, False, False, True, True]
