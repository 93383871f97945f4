"""Heterogeneous LogGP (LLAMP App. I): per-pair costs, λ^{ij} matrices, the per-pair LP."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hand_graphs import PAPER_MODEL, paper_example
from random_graphs import random_graph

from llamp.cli import main
from llamp.errors import InputError
from llamp.lp.matrix import (
    PairCosts,
    from_topology,
    pair_lp,
    pair_sensitivity,
    pair_variables_model,
    parse_level,
    read_pair_costs,
    two_level,
)
from llamp.lp.topology import Dragonfly, dense_mapping, topology_model
from llamp.lp.weighted import evaluate_model
from llamp.params import LogGPS


def test_two_level_costs():
    """Ranks 0, 1 on node 0 and rank 2 on node 1: intra (100, 0.01) inside node 0."""
    costs = two_level(np.array([0, 0, 1]), (100.0, 0.01), (2000.0, 0.1))
    assert costs.latency_ns.tolist() == [[100, 100, 2000], [100, 100, 2000], [2000, 2000, 100]]
    assert costs.gap_ns_per_byte[0, 2] == 0.1 and costs.gap_ns_per_byte[1, 0] == 0.01


def test_parse_level():
    assert parse_level("300ns,0.05ns/B", "--intra") == (300.0, 0.05)
    assert parse_level("3us, 100Gb/s", "--inter") == (3000.0, 0.08)
    with pytest.raises(InputError, match="expected L,G"):
        parse_level("300ns", "--intra")


def test_pair_matrices_of_the_paper_example_under_two_levels():
    """Paper example (c0 = 100 → S(4 B) → c1 = 1000; c2 = 500 → R → c3 = 1000), o = 0.
    Ranks on two nodes, inter L = 500, G = 5: T = max(1100, 100 + 500 + 15 + 1000) = 1615,
    λ_L^{01} = 1, λ_G^{01} = 3. On one node, intra L = 50: T = max(1100, max(165, 500) + 1000)
    = 1500 and the message is off the critical path (all zero)."""
    graph = paper_example()
    params = LogGPS(o=0.0, S=1 << 20, nic="overlap")  # the paper's model
    apart = pair_sensitivity(graph, params, two_level(np.array([0, 1]), (50.0, 5.0), (500.0, 5.0)))
    assert apart.runtime_ns == pytest.approx(1615.0)
    assert apart.lambda_L.tolist() == [[0, 1], [0, 0]]
    assert apart.lambda_G.tolist() == [[0, 3], [0, 0]]
    frame = apart.frame()
    assert frame[["src", "dst", "messages", "bytes"]].values.tolist() == [[0, 1, 1, 4]]
    assert frame.latency_share[0] == pytest.approx(500.0 / 1615.0)
    together = pair_sensitivity(
        graph, params, two_level(np.array([0, 0]), (50.0, 5.0), (500.0, 5.0))
    )
    assert together.runtime_ns == pytest.approx(1500.0)
    assert not together.lambda_L.any() and not together.lambda_G.any()


def test_rendezvous_counts_three_latencies():
    """A rendezvous message (size > S) on the path pays L three times under the paper's
    handshake (RTS, CTS, data; the default's protocol), once under LogGOPSim's rendezvous."""
    graph = paper_example()
    params = LogGPS(L=5000.0, o=0.0, G=5.0, S=0, **PAPER_MODEL)
    costs = two_level(np.array([0, 1]), (0.0, 5.0), (5000.0, 5.0))
    result = pair_sensitivity(graph, params, costs)
    assert result.lambda_L[0, 1] == 3 and result.lambda_G[0, 1] == 3
    default = pair_sensitivity(graph, LogGPS(L=5000.0, o=0.0, G=5.0, S=0), costs)
    assert default.lambda_L[0, 1] == 3 and default.lambda_G[0, 1] == 3
    ours = LogGPS(L=5000.0, o=0.0, G=5.0, S=0, rendezvous="loggopsim")
    loggopsim = pair_sensitivity(graph, ours, costs)
    assert loggopsim.lambda_L[0, 1] == 1 and loggopsim.lambda_G[0, 1] == 3


def rand_costs(rng, P, tie=False):
    if tie:  # two-level: many pairs share a value, ties between paths are likely
        return two_level(np.arange(P) // 2, (200.0, 0.01), (2000.0, 0.1))
    return PairCosts(rng.uniform(500.0, 3000.0, (P, P)), rng.uniform(0.01, 0.5, (P, P)), "random")


def one_sided(graph, params, costs):
    """Right and left derivatives along every pair variable (P × P each, for L and G)."""
    model = pair_variables_model(graph, costs)
    right = evaluate_model(graph, params, model, sign=1.0).slopes
    left = evaluate_model(graph, params, model, sign=-1.0).slopes
    P = graph.num_ranks
    out = {}
    for side, slopes in (("right", right), ("left", left)):
        for kind in ("L", "G"):
            m = np.zeros((P, P))
            for name, value in slopes.items():
                if name.startswith(kind + "["):
                    i, j = (int(x) for x in name[2:-1].split(","))
                    m[i, j] = value
            out[side, kind] = m
    return out


@pytest.mark.parametrize("seed", range(12))
def test_matrices_equal_lp_reduced_costs_where_unique(seed):
    """Random graphs and random per-pair L_ij, G_ij: where T is differentiable in every pair
    variable (left = right derivative along each), the critical-path matrices equal the
    per-pair LP's reduced costs exactly, and T agrees."""
    rng = np.random.default_rng(seed)
    P = int(rng.integers(2, 6))
    graph = random_graph(seed, ranks=P, steps=60)
    params = LogGPS(
        L=1000.0, o=float(rng.uniform(0, 500)), G=0.1, S=int(rng.choice([256, 2048, 1 << 20]))
    )
    costs = rand_costs(rng, P)
    sides = one_sided(graph, params, costs)
    unique = all(np.array_equal(sides["right", k], sides["left", k]) for k in ("L", "G"))
    paths = pair_sensitivity(graph, params, costs)
    lp = pair_lp(graph, params, costs)
    assert lp.runtime_ns == pytest.approx(paths.runtime_ns, rel=1e-9)
    if unique:
        np.testing.assert_array_equal(paths.lambda_L, lp.lambda_L)
        np.testing.assert_array_equal(paths.lambda_G, lp.lambda_G)
        np.testing.assert_array_equal(paths.lambda_L, sides["right", "L"])
    else:  # a breakpoint: the LP may return any subgradient
        for kind, rc in (("L", lp.lambda_L), ("G", lp.lambda_G)):
            assert (sides["left", kind] - 1e-9 <= rc).all() and (
                rc <= sides["right", kind] + 1e-9
            ).all()


@pytest.mark.parametrize("seed", range(8))
def test_lp_reduced_costs_are_subgradients_under_ties(seed):
    """Two-level costs (ties between paths are common): every LP reduced cost lies between
    the left and right derivative along its pair variable, and so does the critical path's
    count (it is one path's slope)."""
    rng = np.random.default_rng(100 + seed)
    P = 4
    graph = random_graph(100 + seed, ranks=P, steps=50, max_size=64)
    params = LogGPS(o=100.0, S=1 << 20)
    costs = rand_costs(rng, P, tie=True)
    sides = one_sided(graph, params, costs)
    lp = pair_lp(graph, params, costs)
    paths = pair_sensitivity(graph, params, costs)
    for kind, rc, path in (("L", lp.lambda_L, paths.lambda_L), ("G", lp.lambda_G, paths.lambda_G)):
        assert (sides["left", kind] - 1e-9 <= rc).all() and (
            rc <= sides["right", kind] + 1e-9
        ).all()
        assert (sides["left", kind] <= path).all() and (path <= sides["right", kind]).all()


def test_at_least_half_of_the_random_draws_are_unique():
    """The equality test above must not skip its way to green."""
    unique = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        P = int(rng.integers(2, 6))
        graph = random_graph(seed, ranks=P, steps=60)
        params = LogGPS(
            L=1000.0, o=float(rng.uniform(0, 500)), G=0.1, S=int(rng.choice([256, 2048, 1 << 20]))
        )
        sides = one_sided(graph, params, rand_costs(rng, P))
        unique += all(np.array_equal(sides["right", k], sides["left", k]) for k in ("L", "G"))
    assert unique >= 6


def test_topology_costs_equal_the_topology_model():
    """L_ij from a topology give the same T as the per-message topology model."""
    graph = random_graph(9, ranks=6, steps=70)
    params = LogGPS(o=150.0, G=0.02)
    topo, mapping = Dragonfly(3, 2, 1), dense_mapping(6)
    costs = from_topology(topo, mapping, params)
    # node = router (p = 1): 0 → 1 same group, h = 2: 3·274 + 2·108; 0 → 2 (r0 → r3 → r2): h = 3
    assert costs.latency_ns[0, 1] == 1038.0 and costs.latency_ns[0, 2] == 1420.0
    by_pairs = pair_sensitivity(graph, params, costs).runtime_ns
    by_messages = evaluate_model(
        graph, params, topology_model(graph, topo, mapping, params)
    ).runtime_ns
    assert by_pairs == pytest.approx(by_messages, rel=1e-12)


# ---------------------------------------------------------------------- CSV
def test_csv_rows_mirror_and_default(tmp_path):
    """Rows set L_ij and, unless listed, L_ji; unlisted pairs keep the configuration."""
    path = tmp_path / "pairs.csv"
    path.write_text("i,j,L_ns,G_ns_per_byte\n0,1,500,0.5\n1,0,700,0.7\n0,2,900,0.9\n")
    costs = read_pair_costs(path, 3, LogGPS(L=3000.0, G=0.018))
    assert costs.latency_ns.tolist() == [[3000, 500, 900], [700, 3000, 3000], [900, 3000, 3000]]
    assert costs.gap_ns_per_byte[2, 0] == 0.9 and costs.gap_ns_per_byte[1, 2] == 0.018


def test_csv_square_matrices(tmp_path):
    (tmp_path / "L.csv").write_text("0,100\n200,0\n")
    (tmp_path / "G.csv").write_text("0,0.1\n0.2,0\n")
    costs = read_pair_costs(tmp_path / "L.csv", 2, LogGPS(), gap_path=tmp_path / "G.csv")
    assert costs.latency_ns.tolist() == [[0, 100], [200, 0]]
    assert costs.gap_ns_per_byte.tolist() == [[0, 0.1], [0.2, 0]]
    with pytest.raises(InputError, match="is 2 × 2, the graph has 3 ranks"):
        read_pair_costs(tmp_path / "L.csv", 3, LogGPS())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("i,j,L_ns\n0,5,1\n", r"pairs.csv:2: rank pair \(0, 5\) is outside 0..2"),
        ("i,j,L_ns\n0,1,1\n0,1,2\n", r"pair \(0, 1\) is listed twice"),
        ("a,b,c\n0,1,1\n", "missing L_ns, i, j"),
        ("i,j,L_ns\n0,1,-5\n", r"L\[0,1\] = -5 is not finite and ≥ 0"),
    ],
)
def test_csv_errors(tmp_path, text, message):
    path = tmp_path / "pairs.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_pair_costs(path, 3, LogGPS())


# ---------------------------------------------------------------------- CLI
def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def test_cli_matrix_two_level_json_and_csv(tmp_path, capsys):
    """The paper example apart (ranks per node 1): T = 1615, λ_L^{01} = 1, λ_G^{01} = 3; the
    CSV written with -o reads back as the same L_ij."""
    graph_path = paper_example().save(tmp_path / "paper.npz")
    out_csv = tmp_path / "m.csv"
    code, out, _ = run(
        capsys,
        "matrix",
        graph_path,
        "--intra",
        "50ns,5ns/B",
        "--inter",
        "500ns,5ns/B",
        "--o",
        "0",
        "--S",
        "1MiB",
        "--check-lp",
        "-o",
        out_csv,
        "--json",
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["runtime_ns"] == pytest.approx(1615.0)
    assert payload["lambda_L"] == [[0, 1], [0, 0]] and payload["lambda_G"] == [[0, 3], [0, 0]]
    assert payload["lp_check"]["lambda_L_equal"] and payload["lp_check"]["lambda_G_equal"]
    costs = read_pair_costs(out_csv, 2, LogGPS())
    assert costs.latency_ns[0, 1] == 500.0 and costs.gap_ns_per_byte[0, 1] == 5.0


def test_cli_matrix_table_topology_and_conflicts(tmp_path, capsys):
    graph_path = random_graph(2, ranks=4, steps=40).save(tmp_path / "r.npz")
    code, out, _ = run(capsys, "matrix", graph_path, "--topology", "torus:dims=4", "--top", "3")
    assert (
        code == 0 and "torus:dims=4,p=1 (dense, 1 rank per node): T = " in out and "λ_L^ij" in out
    )
    code, _, err = run(
        capsys,
        "matrix",
        graph_path,
        "--topology",
        "torus:dims=4",
        "--intra",
        "1ns,0",
        "--inter",
        "2ns,0",
    )
    assert code == 2 and "choose one source" in err
    code, _, err = run(capsys, "matrix", graph_path, "--intra", "1ns,0")
    assert code == 2 and "--intra and --inter go together" in err
