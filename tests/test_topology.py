"""Topologies (LLAMP §IV-2, App. H): hop counts by hand, per-class λ and tolerance by hand.

Convention under test: a message between two nodes crosses ``h`` switches and ``h + 1`` wires
and costs ``Σ wires·l_class + h·d_switch``; defaults ``l = 274 ns``, ``d = 108 ns`` (paper
§IV-2); same-node messages cost ``l_intra_node`` (default 100 ns).
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from hand_graphs import PAPER_MODEL, build
from random_graphs import random_graph

from llamp.cli import main
from llamp.errors import InputError
from llamp.lp import max_parameter_within
from llamp.lp.topology import (
    Dragonfly,
    FatTree,
    GraphTopology,
    LinkLatencies,
    RankMapping,
    Torus,
    analyze_topology,
    compare_topologies,
    dense_mapping,
    max_shift_within,
    parse_topology,
    read_mapping,
    read_topology,
    sweep_topologies,
    topology_model,
)
from llamp.lp.weighted import MessageModel, evaluate_model, pair_matrices
from llamp.params import LogGPS


def routes_of(topo, pairs):
    a, b = np.array(pairs).T
    r = topo.routes(a, b)
    return r.switches.tolist(), r.links.tolist()


# ---------------------------------------------------------------------- hop counts
def test_fat_tree_k4_two_tiers():
    """k = 4, leaf–spine: 4 leaves × 2 nodes = 8 nodes. Nodes 0, 1 share leaf 0: h = 1 (2 edge
    wires); 0 → 2 and 0 → 7 go leaf–spine–leaf: h = 3 (2 edge + 2 aggregation wires);
    a node to itself: no switch."""
    topo = FatTree(4, tiers=2)
    assert topo.num_nodes == 8
    assert topo.classes == ("edge", "aggregation")
    switches, links = routes_of(topo, [(0, 1), (0, 2), (0, 7), (3, 3)])
    assert switches == [1, 3, 3, 0]
    assert links == [[2, 0], [2, 2], [2, 2], [0, 0]]


def test_fat_tree_k4_three_tiers():
    """k = 4, Al-Fares: 4 pods × 2 edge switches × 2 nodes = 16 nodes. 0 → 1: same edge
    switch, h = 1; 0 → 2: same pod (nodes 0–3), h = 3 (edge–aggregation–edge); 0 → 4 and
    5 → 15: different pods, h = 5 (2 wires of each class)."""
    topo = FatTree(4)
    assert topo.num_nodes == 16
    switches, links = routes_of(topo, [(0, 1), (0, 2), (0, 4), (5, 15)])
    assert switches == [1, 3, 5, 5]
    assert links == [[2, 0, 0], [2, 2, 0], [2, 2, 2], [2, 2, 2]]


def test_fat_tree_latency_formula():
    """(h+1)·l_wire + h·d_switch: h = 5 → 6·274 + 5·108 = 2184 ns; h = 1 → 656 ns."""
    graph, _ = build(
        2,
        {"s": (0, "send", 8, 1), "r": (1, "recv", 8, 0)},
        [("s", "message", "r")],
    )
    params = LogGPS(o=0.0, G=0.0)
    far = topology_model(graph, FatTree(4), RankMapping(np.array([0, 4]), "hand"), params)
    near = topology_model(graph, FatTree(4), RankMapping(np.array([0, 1]), "hand"), params)
    assert far.latency_ns.tolist() == [2184.0]
    assert near.latency_ns.tolist() == [656.0]
    assert far.names == ("edge", "aggregation", "core", "l_wire", "d_switch", "l_intra_node")
    assert far.dlatency.tolist() == [[2, 2, 2, 6, 5, 0]]


def test_dragonfly_g3_a2_p2():
    """g = 3 groups × a = 2 routers × p = 2 nodes; one global port per router (⌈2/2⌉).
    Group G's k-th global link goes to group G+k+1 on router k: G0 r0–G1 r3, G0 r1–G2 r4,
    G1 r2–G2 r5 (routers numbered 0–5, node n on router n // 2).

    0 → 1: same router, h = 1. 0 → 2 (r0 → r1): same group, h = 2, one intra wire.
    0 → 6 (r0 → r3): the global link joins them directly, h = 2.
    0 → 4 (r0 → r3 → r2): h = 3, one global + one intra.
    2 → 4 (r1 → r0 → r3 → r2): h = 4, two intra wires.
    2 → 8 (r1 → r4): h = 2.
    """
    topo = Dragonfly(3, 2, 2)
    assert topo.num_nodes == 12 and topo.global_ports == 1
    switches, links = routes_of(topo, [(0, 1), (0, 2), (0, 6), (0, 4), (2, 4), (2, 8)])
    assert switches == [1, 2, 2, 3, 4, 2]
    assert links == [[2, 0, 0], [2, 1, 0], [2, 0, 1], [2, 1, 1], [2, 2, 1], [2, 0, 1]]
    # symmetric: the route back has the same length and classes
    assert routes_of(topo, [(4, 2), (6, 0)]) == ([4, 2], [[2, 2, 1], [2, 0, 1]])


def test_torus_2x2x2():
    """Node n at (x, y, z) = (n mod 2, n//2 mod 2, n//4). 0 → 1: 1 torus hop, h = 2 routers,
    3 wires; 0 → 3: 2 hops, h = 3; 0 → 7 (opposite corner): 3 hops, h = 4, 5 wires, so
    5·274 + 4·108 = 1802 ns."""
    topo = Torus((2, 2, 2))
    switches, links = routes_of(topo, [(0, 1), (0, 3), (0, 7)])
    assert switches == [2, 3, 4]
    assert links == [[3], [4], [5]]
    lat = LinkLatencies().values(topo)
    assert 5 * lat[0] + 4 * lat[2] == 1802.0


def test_torus_wraparound_and_nodes_per_router():
    """A ring of 5: 0 → 3 is 2 hops backwards (not 3), h = 3; with p = 2 nodes per router,
    nodes 0 and 1 share router 0 (h = 1) and node 2 is on router 1 (h = 2)."""
    assert routes_of(Torus((5,)), [(0, 3), (0, 4)])[0] == [3, 2]
    assert routes_of(Torus((5,), p=2), [(0, 1), (0, 2)])[0] == [1, 2]


@pytest.mark.parametrize(
    "topo",
    [FatTree(4, 2), FatTree(4), FatTree(6), Torus((2, 2, 2)), Torus((4, 3), p=2)],
    ids=lambda t: t.spec,
)
def test_closed_forms_equal_shortest_paths_of_their_graphs(topo):
    """Up-down fat-tree routing and minimal torus routing are shortest paths: the closed
    forms equal the graph-file machinery on the same topology built with networkx."""
    graph_topo = GraphTopology(topo.to_networkx(), name=topo.spec)
    N = topo.num_nodes
    a, b = (x.ravel() for x in np.meshgrid(np.arange(N), np.arange(N), indexing="ij"))
    mine, theirs = topo.routes(a, b), graph_topo.routes(a, b)
    order = [graph_topo.classes.index(c) for c in topo.classes]
    np.testing.assert_array_equal(mine.switches, theirs.switches)
    np.testing.assert_array_equal(mine.links, theirs.links[:, order])


def test_dragonfly_minimal_routes_use_one_global_link_and_no_shorter_than_shortest_paths():
    """Local–global–local: never shorter than a shortest path in the graph, exactly one
    global wire between groups, none within a group, and h + 1 wires in total."""
    topo = Dragonfly(8, 4, 2)
    graph_topo = GraphTopology(topo.to_networkx(), name=topo.spec)
    N = topo.num_nodes
    a, b = (x.ravel() for x in np.meshgrid(np.arange(N), np.arange(N), indexing="ij"))
    mine, shortest = topo.routes(a, b), graph_topo.routes(a, b)
    assert (mine.switches >= shortest.switches).all()
    other_group = a // 8 != b // 8
    np.testing.assert_array_equal(mine.links[:, 2], other_group.astype(int))
    np.testing.assert_array_equal(mine.links.sum(axis=1), np.where(a == b, 0, mine.switches + 1))
    assert mine.switches.max() == 4


# ---------------------------------------------------------------------- graph files
def test_edge_list_file_with_classes(tmp_path):
    """Hosts a, b on switch s1 and c on s2; s1–s2 is an 'uplink', host wires are 'down'.
    a → b: h = 1 (2 down wires); a → c: h = 2 (2 down + 1 uplink)."""
    path = tmp_path / "net.txt"
    path.write_text("# tiny\na s1 down\nb s1 down\nc s2 down\ns1 s2 uplink\n")
    topo = read_topology(path)
    assert topo.node_names() == ["a", "b", "c"]
    assert topo.classes == ("down", "uplink")
    assert routes_of(topo, [(0, 1), (0, 2)]) == ([1, 2], [[2, 0], [2, 1]])


def test_graphml_file_marks_compute_nodes(tmp_path):
    """kind=compute marks hosts even when they have two wires (dual-homed h1 on s1 and s2):
    h1 → h2 (h2 on s2 only) takes the direct wire to s2: h = 1."""
    g = nx.Graph()
    for host in ("h1", "h2", "h3"):
        g.add_node(host, kind="compute")
    g.add_node("s1", kind="switch")
    g.add_node("s2", kind="switch")
    g.add_edges_from([("h1", "s1"), ("h1", "s2"), ("h2", "s2"), ("h3", "s1"), ("s1", "s2")])
    path = tmp_path / "net.graphml"
    nx.write_graphml(g, path)
    topo = parse_topology(str(path))
    assert topo.num_nodes == 3 and topo.classes == ("link",)
    assert routes_of(topo, [(0, 1), (1, 2), (0, 2)])[0] == [1, 2, 1]


def test_gml_round_trip_of_a_built_in_topology(tmp_path):
    """A dragonfly written as GML (kind per node, class per edge) and read back keeps the
    node order, the classes and every hop count of its shortest paths (g = 3, a = 2, p = 2:
    node 0 → 6 crosses r0 and r3, h = 2, one terminal pair and one global wire)."""
    path = tmp_path / "dragonfly.gml"
    nx.write_gml(Dragonfly(3, 2, 2).to_networkx(), path)
    topo = read_topology(path)
    assert topo.node_names()[:2] == ["node0", "node1"] and topo.num_nodes == 12
    assert topo.classes == ("inter", "intra", "terminal")
    assert routes_of(topo, [(0, 6)]) == ([2], [[1, 0, 2]])


def test_compute_nodes_never_forward(tmp_path):
    """a – s1 – b – s2 – c with b a compute node: a and c are not connected through switches."""
    g = nx.Graph()
    g.add_nodes_from(["a", "b", "c"], kind="compute")
    g.add_nodes_from(["s1", "s2"], kind="switch")
    g.add_edges_from([("a", "s1"), ("s1", "b"), ("b", "s2"), ("s2", "c")])
    with pytest.raises(InputError, match="not connected through switches"):
        GraphTopology(g, name="chain")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("fattree:k=5", "must be even"),
        ("fattree:k=4,tiers=4", "tiers must be 2 or 3"),
        ("dragonfly:g=2,a=2", "needs p"),
        ("torus:dims=4xa", "is not e.g. 4x4x4"),
        ("mesh:n=3", "unknown kind"),
        ("fattree:k=4,radix=3", "unknown option 'radix'"),
        ("nonsense", "expected fattree"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(InputError, match=message):
        parse_topology(spec)


def test_parse_specs():
    assert parse_topology("fattree:k=16") == FatTree(16, 3)
    assert parse_topology("dragonfly:g=8,a=4,p=8").num_nodes == 256
    assert parse_topology("torus:dims=4x4x4").spec == "torus:dims=4x4x4,p=1"


# ---------------------------------------------------------------------- mappings
def test_dense_and_file_mappings(tmp_path):
    assert dense_mapping(5, 2).node_of_rank.tolist() == [0, 0, 1, 1, 2]
    path = tmp_path / "map.txt"
    path.write_text("3\n# comment\nb\n0\n")
    mapping = read_mapping(path, 3, ["a", "b", "c", "d"])
    assert mapping.node_of_rank.tolist() == [3, 1, 0]
    with pytest.raises(InputError, match="2 nodes listed, the graph has 3 ranks"):
        path.write_text("0\n1\n")
        read_mapping(path, 3, ["a", "b"])
    with pytest.raises(InputError, match=r"map.txt:1: 'zz' is neither"):
        path.write_text("zz\n")
        read_mapping(path, 1, ["a"])


def test_mapping_must_fit_the_topology():
    graph = random_graph(1, ranks=4, steps=10)
    with pytest.raises(InputError, match="needs 4 nodes, torus:dims=3,p=1 has 3"):
        topology_model(graph, Torus((3,)), dense_mapping(4), LogGPS())


# ---------------------------------------------------------------------- λ and tolerance
def two_rank(c2: float):
    """Rank 0: c0 = 100 → send 4 B → c1 = 1000; rank 1: c2 → recv → c3 = 1000 (ns).

    With o = 0, G = 5 ns/B: T = max(1100, max(100 + L_m + 15, c2) + 1000).
    """
    graph, _ = build(
        2,
        {
            "c0": (0, "calc", 100.0),
            "S": (0, "send", 4, 1),
            "c1": (0, "calc", 1000.0),
            "c2": (1, "calc", c2),
            "R": (1, "recv", 4, 0),
            "c3": (1, "calc", 1000.0),
        },
        [
            ("c0", "requires", "S"),
            ("S", "requires", "c1"),
            ("c2", "requires", "R"),
            ("R", "requires", "c3"),
            ("S", "message", "R"),
        ],
    )
    return graph


#: The hand computations below follow the paper's model (a receive posted after its message
#: arrived pays o at the post); the default schedule order is checked in
#: ``test_sweep_of_the_wire_latency_under_the_default_order``.
PARAMS = LogGPS(o=0.0, G=5.0, S=1 << 20, **PAPER_MODEL)
SAME_POD = RankMapping(np.array([0, 2]), "ranks on nodes 0 and 2")


def test_per_class_lambda_and_tolerance_by_hand():
    """Fat tree k = 4, ranks on nodes 0 and 2 (same pod, h = 3: 2 edge + 2 aggregation wires):
    L_m = 4·274 + 3·108 = 1420, T0 = 100 + 1420 + 15 + 1000 = 2535 ns.
    λ: edge 2, aggregation 2, core 0, l_wire 4, d_switch 3, l_intra_node 0.
    1% (bound 2560.35): edge = aggregation = 274 + 25.35/2 = 286.675, l_wire = 274 + 25.35/4
    = 280.3375, d_switch = 108 + 25.35/3 = 116.45; core and intra-node: ∞.
    5% (bound 2661.75): edge = 274 + 126.75/2 = 337.375, d_switch = 108 + 126.75/3 = 150.25."""
    result = analyze_topology(two_rank(500.0), PARAMS, FatTree(4), SAME_POD, levels=(0.01, 0.05))
    assert result.runtime_ns == pytest.approx(2535.0)
    lam = dict(zip(result.variables.variable, result.variables["lambda"], strict=True))
    assert lam == {
        "edge": 2,
        "aggregation": 2,
        "core": 0,
        "l_wire": 4,
        "d_switch": 3,
        "l_intra_node": 0,
    }
    tol = result.tolerances.set_index(["variable", "x"])["tolerance_ns"]
    assert tol["edge", 0.01] == pytest.approx(286.675)
    assert tol["aggregation", 0.01] == pytest.approx(286.675)
    assert tol["l_wire", 0.01] == pytest.approx(280.3375)
    assert tol["d_switch", 0.01] == pytest.approx(116.45)
    assert tol["core", 0.01] == float("inf")
    assert tol["l_intra_node", 0.05] == float("inf")
    assert tol["edge", 0.05] == pytest.approx(337.375)
    assert tol["d_switch", 0.05] == pytest.approx(150.25)
    assert result.mean_switches == 3.0 and result.intra_node_fraction == 0.0


def test_tolerance_past_a_breakpoint_by_hand():
    """c2 = 2000: the message is off the critical path at first (T0 = 3000, every λ = 0).
    It becomes critical when 100 + L_m + 15 > 2000. 5% (bound 3150): L_m = 2035, so
    2·l_edge + 2·274 + 3·108 = 2035 → l_edge = 581.5; for l_wire 4·l + 324 = 2035 → 427.75.
    1% (bound 3030): L_m = 1915 → l_edge = 521.5, l_wire = 397.75."""
    result = analyze_topology(two_rank(2000.0), PARAMS, FatTree(4), SAME_POD, levels=(0.01, 0.05))
    assert result.runtime_ns == pytest.approx(3000.0)
    assert (result.variables["lambda"] == 0).all()
    tol = result.tolerances.set_index(["variable", "x"])["tolerance_ns"]
    assert tol["edge", 0.05] == pytest.approx(581.5)
    assert tol["l_wire", 0.05] == pytest.approx(427.75)
    assert tol["edge", 0.01] == pytest.approx(521.5)
    assert tol["l_wire", 0.01] == pytest.approx(397.75)


def test_same_node_messages_pay_the_intra_node_latency():
    """Both ranks on node 0, c2 = 0: T0 = 100 + 100 + 15 + 1000 = 1215, λ_intra_node = 1,
    no wire on the path; 1% (bound 1227.15): l_intra_node = 100 + 12.15 = 112.15."""
    mapping = RankMapping(np.array([0, 0]), "one node")
    result = analyze_topology(two_rank(0.0), PARAMS, Dragonfly(3, 2, 2), mapping, levels=(0.01,))
    assert result.runtime_ns == pytest.approx(1215.0)
    lam = dict(zip(result.variables.variable, result.variables["lambda"], strict=True))
    assert lam["l_intra_node"] == 1 and lam["terminal"] == 0 and lam["l_wire"] == 0
    tol = result.tolerances.set_index(["variable", "x"])["tolerance_ns"]
    assert tol["l_intra_node", 0.01] == pytest.approx(112.15)
    assert result.intra_node_fraction == 1.0


@pytest.mark.parametrize("seed", [3, 7, 11, 19])
def test_shift_walk_equals_the_homogeneous_tolerance(seed):
    """Along the uniform model's ``L`` the generalised walk gives the homogeneous
    tolerance of :mod:`llamp.lp.tolerance` (both exact)."""
    graph = random_graph(seed, ranks=4, steps=50)
    params = LogGPS(L=1500.0, o=200.0, G=0.2, S=2048)
    model = MessageModel.uniform(graph, params)
    T0 = evaluate_model(graph, params, model).runtime_ns
    for x in (0.01, 0.05, 0.2):
        expected = max_parameter_within(graph, params, (1 + x) * T0, parameter="L")
        shift = max_shift_within(graph, params, model, "L", (1 + x) * T0)
        assert params.L + shift == pytest.approx(expected, rel=1e-9, abs=1e-6)


def test_per_class_slopes_add_up_to_the_wire_slope():
    """One rank per node: every latency term on the critical path crosses 2 terminal wires
    and h + 1 wires in all, so λ_terminal = 2·n and λ_l_wire − λ_d_switch = n, where n =
    Σ λ_L^{ij} (latency terms on the path); and λ_l_wire = Σ_class λ_class."""
    graph = random_graph(5, ranks=6, steps=80)
    params = LogGPS(o=100.0, G=0.05)
    model = topology_model(graph, Dragonfly(3, 2, 1), dense_mapping(6), params)
    slopes = evaluate_model(graph, params, model).slopes
    n = pair_matrices(graph, params, model)[0].sum()
    assert n > 0
    assert slopes["terminal"] + slopes["intra"] + slopes["inter"] == slopes["l_wire"]
    assert slopes["terminal"] == 2 * n
    assert slopes["l_wire"] - slopes["d_switch"] == n


def test_compare_topologies_frames():
    """Dense, one rank per node: ranks 0, 1 on nodes 0, 1. Fat tree k = 4: same edge switch,
    L_m = 2·274 + 108 = 656, T = 100 + 656 + 15 + 1000 = 1771. Torus 2×2×2: one hop, h = 2,
    L_m = 3·274 + 2·108 = 1038, T = 2153. The per-class latency 'core' applies to the fat tree
    only."""
    graph = two_rank(500.0)
    result = compare_topologies(
        graph,
        PARAMS,
        ["fattree:k=4", Torus((2, 2, 2))],
        latencies=LinkLatencies(per_class_ns={"core": 500.0}),
        levels=(0.01,),
    )
    assert result.summary.topology.tolist() == ["fattree:k=4,tiers=3", "torus:dims=2x2x2,p=1"]
    assert result.summary.runtime_ns.tolist() == pytest.approx([1771.0, 2153.0])
    assert result.summary.mean_switches.tolist() == [1.0, 2.0]
    v = result.variables.set_index(["topology", "variable"])
    assert v.loc[("fattree:k=4,tiers=3", "core"), "value_ns"] == 500.0
    assert np.isnan(v.loc[("fattree:k=4,tiers=3", "l_wire"), "value_ns"])
    assert v.loc[("torus:dims=2x2x2,p=1", "link"), "lambda"] == 3
    assert set(result.tolerances.columns) == {
        "topology",
        "variable",
        "x",
        "bound_ns",
        "tolerance_ns",
        "headroom_ns",
    }
    with pytest.raises(InputError, match="no topology has a link class 'spine'"):
        compare_topologies(
            graph, PARAMS, ["torus:dims=2"], latencies=LinkLatencies(per_class_ns={"spine": 1.0})
        )


def test_sweep_of_the_wire_latency_by_hand():
    """Fat tree k = 4, dense (nodes 0, 1: h = 1, 2 wires): T(l) = 100 + 2l + 108 + 15 + 1000
    once the message is critical (c2 = 500 < 100 + 2l + 123 for l > 138.5): at l = 274 T =
    1771, at 424 T = 2071, slope 2 throughout; below 138.5 T = 1500 with slope 0."""
    frame = sweep_topologies(two_rank(500.0), PARAMS, ["fattree:k=4"], [100.0, 274.0, 424.0])
    assert frame.runtime_ns.tolist() == pytest.approx([1500.0, 1771.0, 2071.0])
    assert frame["lambda"].tolist() == [0.0, 2.0, 2.0]
    assert frame.slowdown.tolist() == pytest.approx([1500 / 1771 - 1, 0.0, 300 / 1771])
    with pytest.raises(InputError, match="different latencies"):
        sweep_topologies(
            two_rank(500.0),
            PARAMS,
            ["fattree:k=4"],
            [300.0],
            latencies=LinkLatencies(per_class_ns={"core": 1.0}),
        )


@pytest.mark.parametrize(("nic", "first"), [("overlap", 1500.0), ("serial", 1515.0)])
def test_wire_latency_breakpoints_are_found_exactly_under_the_default_order(nic, first):
    """The default schedule order, its order taken at the uniform parameters (L = 3 µs: c2,
    then the message, on rank 1's CPU). At l = 100 the message (L_m = 2·100 + 108) arrives
    during c2: under the default overlap NIC its B·G = 15 was paid on the wire and T = 1500
    (the paper's model); under nic serial the CPU processes it at 500 for B·G, as LogGOPSim
    does, so T = 1515. From l = 274 it arrives after c2: 1771 and 2071."""
    default = LogGPS(o=0.0, G=5.0, S=1 << 20)
    assert (default.order, default.nic) == ("schedule", "overlap")
    params = default.with_(nic=nic)
    frame = sweep_topologies(two_rank(500.0), params, ["fattree:k=4"], [100.0, 274.0, 424.0])
    assert frame.runtime_ns.tolist() == pytest.approx([first, 1771.0, 2071.0])
    assert frame["lambda"].tolist() == [0.0, 2.0, 2.0]


def test_wire_latency_breakpoints_are_found_exactly():
    """The same fat tree: T(l_wire) bends once, at l = 138.5 ns (slope 0 → 2); a topology
    sweep through its values and that breakpoint is T itself (the UI draws it so)."""
    from llamp.lp.topology import WIRE, ShiftWalk

    graph = two_rank(500.0)
    topo = parse_topology("fattree:k=4")
    lat = LinkLatencies()
    model = topology_model(graph, topo, dense_mapping(graph.num_ranks, 1), PARAMS, lat)
    current = float(lat.values(topo)[model.names.index(WIRE)])
    walk = ShiftWalk(graph, PARAMS, model)
    found, complete = walk.breakpoints(WIRE, 100.0 - current, 424.0 - current)
    assert complete and [current + b for b in found] == pytest.approx([138.5])
    assert walk.at(WIRE, found[0], -1.0)[1] == 0.0 and walk.at(WIRE, found[0])[1] == 2.0
    assert walk.breakpoints(WIRE, 200.0 - current, 424.0 - current) == ([], True)


# ---------------------------------------------------------------------- CLI
def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def test_cli_topology_compare_json(tmp_path, capsys):
    """The same numbers as test_compare_topologies_frames, through ``llamp topology``."""
    path = two_rank(500.0).save(tmp_path / "two.npz")
    code, out, _ = run(
        capsys,
        "topology",
        path,
        "--compare",
        "fattree:k=4",
        "torus:dims=2x2x2",
        "--o",
        "0",
        "--G",
        "5ns/B",
        "--x",
        "1",
        "--json",
    )
    assert code == 0
    payload = json.loads(out)
    runtimes = [t["runtime_ns"] for t in payload["topologies"]]
    assert runtimes == pytest.approx([1771.0, 2153.0])
    fat = {v["variable"]: v for v in payload["topologies"][0]["variables"]}
    assert fat["edge"]["lambda"] == 2 and fat["d_switch"]["lambda"] == 1
    # 1% of 1771 = 17.71 ns over 2 edge wires: 274 + 8.855
    tol = {t["variable"]: t["tolerance_ns"] for t in payload["topologies"][0]["tolerances"]}
    assert tol["edge"] == pytest.approx(282.855)
    assert tol["core"] == "inf"


def test_cli_topology_table_and_errors(tmp_path, capsys):
    path = two_rank(500.0).save(tmp_path / "two.npz")
    code, out, _ = run(capsys, "topology", path, "dragonfly:g=3,a=2,p=2", "--o", "0")
    assert code == 0
    assert "dragonfly:g=3,a=2,p=2: T = " in out and "terminal" in out and "1% tolerance" in out
    code, _, err = run(capsys, "topology", path, "fattree:k=3")
    assert code == 2 and "must be even" in err
    code, _, err = run(capsys, "topology", path)
    assert code == 2 and "at least one topology" in err
