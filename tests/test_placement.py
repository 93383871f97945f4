"""Rank placement (LLAMP App. J, Algorithm 3): swap deltas, baselines, a planted structure,
and output files that re-evaluate to the reported runtime."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hand_graphs import PAPER_MODEL, build
from random_graphs import random_graph

from llamp.cli import main
from llamp.errors import InputError
from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.lp.placement import (
    block_mapping,
    format_mapping,
    mapping_runtime,
    place,
    read_mapping_file,
    round_robin_mapping,
    swap_deltas,
    topology_machine,
    two_level_machine,
    volume_mapping,
    write_mapping,
)
from llamp.lp.topology import FatTree
from llamp.lp.weighted import MessageModel, evaluate_model
from llamp.params import LogGPS

CHAIN_PAIRS = ((0, 3), (1, 6), (2, 5), (4, 7))
VOLUME_PAIRS = ((0, 1), (2, 3), (4, 5), (6, 7))


def planted_graph(
    rounds: int = 20, big: int = 1_000_000, overlap_ns: float = 500_000.0
) -> ExecutionGraph:
    """8 ranks. Phase 1: the VOLUME_PAIRS exchange ``big`` bytes each way (Isend/Irecv),
    hidden behind ``overlap_ns`` of compute, then Waitall. Phase 2: the CHAIN_PAIRS ping-pong
    ``rounds`` times with 8-byte blocking messages — a latency-bound chain on the critical
    path. Block (nodes {0,1},{2,3},…) and round-robin ({0,4},{1,5},…) split every chain pair;
    the volume partitioner keeps the heavy pairs together, i.e. block again."""
    rows: list[tuple] = []  # rank, kind, cost, size, peer, tag
    edges: list[tuple[int, int, int]] = []
    sends: dict[tuple, int] = {}
    recvs: dict[tuple, int] = {}

    def vertex(rank, kind, cost=0.0, size=0, peer=0, tag=0) -> int:
        rows.append((rank, kind, cost, size, peer, tag))
        return len(rows) - 1

    partner = {a: b for p in VOLUME_PAIRS for a, b in (p, p[::-1])}
    chain = {a: (b, first) for a, b in CHAIN_PAIRS for a, b, first in ((a, b, True), (b, a, False))}
    for r in range(8):
        c0 = vertex(r, CALC, 10_000.0)
        q = partner[r]
        rv, sv = vertex(r, RECV, size=big, peer=q, tag=1), vertex(r, SEND, size=big, peer=q, tag=1)
        c1 = vertex(r, CALC, overlap_ns)
        wait = vertex(r, CALC, 0.0)
        edges += [
            (c0, rv, REQUIRES),
            (c0, sv, REQUIRES),
            (c0, c1, REQUIRES),
            (rv, c1, IREQUIRES),
            (sv, c1, IREQUIRES),
            (c1, wait, REQUIRES),
            (rv, wait, REQUIRES),
            (sv, wait, REQUIRES),
        ]
        sends[r, q, 1, 0], recvs[q, r, 1, 0] = sv, rv
        prev = wait
        peer, first = chain[r]
        for k in range(rounds):
            for kind in (SEND, RECV) if first else (RECV, SEND):
                op = vertex(r, kind, size=8, peer=peer, tag=2)
                edges.append((prev, op, REQUIRES))
                prev = op
                if kind == SEND:
                    sends[r, peer, 2, k] = op
                else:
                    recvs[peer, r, 2, k] = op
        edges.append((prev, vertex(r, CALC, 1000.0), REQUIRES))
    edges += [(s, recvs[key], MESSAGE) for key, s in sends.items()]
    cols = np.array(rows, dtype=np.float64)
    e = np.array(edges, dtype=np.int64)
    return ExecutionGraph.from_arrays(
        8,
        rank=cols[:, 0],
        kind=cols[:, 1],
        cost_ns=cols[:, 2],
        size=cols[:, 3],
        peer=cols[:, 4],
        tag=cols[:, 5],
        edge_src=e[:, 0],
        edge_dst=e[:, 1],
        edge_kind=e[:, 2],
        meta={"name": "planted"},
    )


#: Algorithm 3 as the paper runs it, on the paper's model (program order).
PARAMS = LogGPS(o=500.0, S=1 << 30, **PAPER_MODEL)
INTRA, INTER = (100.0, 0.01), (2000.0, 0.1)


def machine():
    return two_level_machine(4, 2, INTRA, INTER)


# ---------------------------------------------------------------------- swap deltas
@pytest.mark.parametrize("P", [2, 3, 5, 8])
def test_swap_deltas_equal_brute_force(P):
    """Δ[r, s] = Σ F·X[σ, σ] − Σ F·X for every transposition σ = (r s), non-symmetric F, X."""
    rng = np.random.default_rng(P)
    F = rng.random((P, P)) * (rng.random((P, P)) < 0.5)
    X = rng.random((P, P))
    brute = np.zeros((P, P))
    for r in range(P):
        for s in range(P):
            sigma = np.arange(P)
            sigma[[r, s]] = sigma[[s, r]]
            brute[r, s] = (F * X[np.ix_(sigma, sigma)]).sum() - (F * X).sum()
    np.testing.assert_allclose(swap_deltas(F, X), brute, atol=1e-12)


# ---------------------------------------------------------------------- baselines
def test_block_and_round_robin():
    m = machine()
    assert block_mapping(8, m).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert round_robin_mapping(8, m).tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert round_robin_mapping(5, m).tolist() == [0, 1, 2, 3, 0]
    with pytest.raises(InputError, match="9 ranks do not fit on 4 nodes × 2"):
        block_mapping(9, m)


def test_volume_partitioner_keeps_heavy_pairs_together():
    """The planted graph's heaviest pairs are VOLUME_PAIRS (10^6 B each way): Kernighan–Lin
    puts each of them on one node."""
    node = volume_mapping(planted_graph(), machine())
    assert all(node[a] == node[b] for a, b in VOLUME_PAIRS)
    assert np.bincount(node).tolist() == [2, 2, 2, 2]
    # uneven splits (3 nodes: 1 + 2) keep every node within its slots
    odd = volume_mapping(random_graph(4, ranks=6, steps=80), two_level_machine(3, 2, INTRA, INTER))
    assert np.bincount(odd).tolist() == [2, 2, 2]


# ---------------------------------------------------------------------- Algorithm 3
def test_heuristic_finds_the_planted_chains():
    """Every baseline splits the four ping-pong chains; the heuristic co-locates them. Each
    chain carries 40 messages of 8 B; moving it on-node saves 40·(2000 − 100) +
    40·7·(0.1 − 0.01) = 76025.2 ns on its ranks. The chains are equally critical, so T drops
    by 76025.2 ns only when the last one is fixed (the first swaps are plateau moves that lower
    the mean completion time)."""
    result = place(planted_graph(), PARAMS, machine(), budget_s=60.0)
    T = result.mappings.set_index("mapping").runtime_ns
    assert T["llamp"] < min(T["block"], T["round-robin"], T["volume"])
    assert T["block"] - T["llamp"] == pytest.approx(76025.2, abs=1e-6)
    node = result.node_of_rank["llamp"]
    assert all(node[a] == node[b] for a, b in CHAIN_PAIRS)
    assert result.best == "llamp"
    swaps = result.history.iloc[1:]
    assert len(swaps) == 3  # three swaps fix four pairs (the last swap fixes two)
    assert (swaps.estimated_gain_ns > 0).all()
    assert swaps.mean_rank_finish_ns.is_monotonic_decreasing
    assert result.history.runtime_ns.iloc[-1] == T["llamp"]


@pytest.mark.parametrize("fmt", ["openmpi", "mpich", "slurm"])
def test_written_mapping_reevaluates_to_the_reported_runtime(tmp_path, fmt):
    """Write the heuristic's mapping, read it back, rebuild the per-message model by hand
    from the machine's node matrices and evaluate it: the same T as reported."""
    graph = planted_graph()
    m = machine()
    result = place(graph, PARAMS, m)
    path = write_mapping(result.node_of_rank["llamp"], m.hostnames, tmp_path / f"map.{fmt}", fmt)
    node = read_mapping_file(path, m.hostnames, fmt, graph.num_ranks)
    np.testing.assert_array_equal(node, result.node_of_rank["llamp"])
    sends, recvs = graph.messages()
    a, b = node[graph.rank[sends]], node[graph.rank[recvs]]
    model = MessageModel(latency_ns=m.latency_ns[a, b], gap_ns_per_byte=m.gap_ns_per_byte[a, b])
    T = evaluate_model(graph, PARAMS, model).runtime_ns
    reported = result.mappings.set_index("mapping").loc["llamp", "runtime_ns"]
    assert T == pytest.approx(reported, rel=1e-12)


def test_reported_runtimes_of_the_baselines_are_exact():
    graph = random_graph(4, ranks=6, steps=80)
    params = LogGPS(o=200.0, G=0.05)
    m = topology_machine(FatTree(4, tiers=2), 3, 2, params)
    result = place(graph, params, m, max_iterations=5)
    for row in result.mappings.itertuples(index=False):
        assert row.runtime_ns == pytest.approx(
            mapping_runtime(graph, params, m, result.node_of_rank[row.mapping]), rel=1e-12
        )
    assert result.mappings.runtime_ns.is_monotonic_increasing


def test_budgets_stop_the_heuristic():
    graph = planted_graph()
    one = place(graph, PARAMS, machine(), max_iterations=1)
    assert len(one.history) == 2 and one.stop_reason == "iteration budget reached"
    none = place(graph, PARAMS, machine(), budget_s=0.0)
    assert len(none.history) == 1 and none.stop_reason == "time budget reached"
    start = place(graph, PARAMS, machine(), start="round-robin", max_iterations=0)
    np.testing.assert_array_equal(start.node_of_rank["llamp"], start.node_of_rank["round-robin"])


def ping_pong(rounds: int):
    """Ranks 0 and 1 exchange ``rounds`` round trips of 8-byte blocking messages."""
    vertices, edges = {}, []
    for k in range(rounds):
        vertices[f"s{k}"] = (0, "send", 8, 1)
        vertices[f"r{k}"] = (0, "recv", 8, 1)
    for k in range(rounds):
        vertices[f"R{k}"] = (1, "recv", 8, 0)
        vertices[f"S{k}"] = (1, "send", 8, 0)
    order0 = [n for k in range(rounds) for n in (f"s{k}", f"r{k}")]
    order1 = [n for k in range(rounds) for n in (f"R{k}", f"S{k}")]
    for order in (order0, order1):
        edges += [(a, "requires", b) for a, b in zip(order, order[1:], strict=False)]
    edges += [(f"s{k}", "message", f"R{k}") for k in range(rounds)]
    edges += [(f"S{k}", "message", f"r{k}") for k in range(rounds)]
    return build(2, vertices, edges)[0]


def test_a_rank_moves_to_a_free_slot():
    """Two nodes × 2 slots, two ranks, and (artificially) slow shared memory: intra L = 5000,
    inter L = 100. From block (both ranks on node 0) no swap of two ranks helps; moving rank 0
    or 1 to a free slot of node 1 does, saving 2·rounds·(5000 − 100) = 98000 ns for 10 rounds."""
    m = two_level_machine(2, 2, (5000.0, 0.0), (100.0, 0.0))
    result = place(ping_pong(10), LogGPS(o=0.0, G=0.0), m, start="block")
    swaps = result.history.iloc[1:]
    assert len(swaps) == 1 and swaps.rank_b.tolist() == [-1] and swaps.node_b.tolist() == [1]
    T = result.mappings.set_index("mapping").runtime_ns
    assert T["block"] - T["llamp"] == pytest.approx(98000.0)
    assert sorted(result.node_of_rank["llamp"].tolist()) == [0, 1]


def test_random_and_given_starts():
    """From a random mapping the heuristic only improves it (lexicographically); a given
    mapping equal to block behaves exactly as starting from block."""
    graph = planted_graph()
    rnd = place(graph, PARAMS, machine(), start="random", seed=3)
    T = rnd.mappings.set_index("mapping").runtime_ns
    assert T["llamp"] <= T["random"]
    assert rnd.history.runtime_ns.is_monotonic_decreasing
    assert np.bincount(rnd.node_of_rank["random"]).tolist() == [2, 2, 2, 2]
    given = place(graph, PARAMS, machine(), start=block_mapping(8, machine()))
    block = place(graph, PARAMS, machine(), start="block")
    np.testing.assert_array_equal(given.node_of_rank["llamp"], block.node_of_rank["llamp"])
    with pytest.raises(InputError, match="more than 2 ranks on a node"):
        place(graph, PARAMS, machine(), start=np.zeros(8, dtype=np.int64))


# ---------------------------------------------------------------------- files
def test_formats_by_hand():
    """Ranks 0..3 on hosts b, a, b, b."""
    node, hosts = np.array([1, 0, 1, 1]), ("a", "b")
    assert format_mapping(node, hosts, "openmpi") == (
        "rank 0=b slot=0\nrank 1=a slot=0\nrank 2=b slot=1\nrank 3=b slot=2\n"
    )
    assert format_mapping(node, hosts, "mpich") == "b:1\na:1\nb:2\n"
    assert format_mapping(node, hosts, "slurm") == "b\na\nb\nb\n"


def test_reading_bad_mapping_files(tmp_path):
    path = tmp_path / "rf"
    path.write_text("rank 0=zz slot=0\n")
    with pytest.raises(InputError, match="rf:1: unknown host 'zz'"):
        read_mapping_file(path, ("a",), "openmpi", 1)
    path.write_text("a:1\n")
    with pytest.raises(InputError, match="rank 1 has no host"):
        read_mapping_file(path, ("a",), "mpich", 2)


# ---------------------------------------------------------------------- CLI
def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def test_cli_place_writes_a_rankfile(tmp_path, capsys):
    graph_path = planted_graph().save(tmp_path / "planted.npz")
    hosts = tmp_path / "hosts"
    hosts.write_text("h0\nh1\nh2\nh3\n")
    out_file = tmp_path / "rankfile"
    code, out, _ = run(
        capsys,
        "place",
        graph_path,
        "--intra",
        "100ns,0.01ns/B",
        "--inter",
        "2us,0.1ns/B",
        "--ranks-per-node",
        "2",
        "--o",
        "500ns",
        "--S",
        "1GiB",
        "--order",
        "program",
        "--rendezvous",
        "handshake",
        "--hosts",
        hosts,
        "-o",
        out_file,
        "--json",
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["best"] == "llamp" and payload["written"] == "llamp"
    runtimes = {r["mapping"]: r["runtime_ns"] for r in payload["mappings"]}
    assert runtimes["block"] - runtimes["llamp"] == pytest.approx(76025.2, abs=1e-6)
    node = read_mapping_file(out_file, ("h0", "h1", "h2", "h3"), "openmpi", 8)
    assert all(node[a] == node[b] for a, b in CHAIN_PAIRS)


def test_cli_place_table_and_errors(tmp_path, capsys):
    graph_path = planted_graph().save(tmp_path / "planted.npz")
    code, out, _ = run(
        capsys,
        "place",
        graph_path,
        "--topology",
        "fattree:k=4,tiers=2",
        "--ranks-per-node",
        "2",
        "--format",
        "slurm",
        "--budget",
        "10s",
    )
    assert code == 0 and "predicted T" in out and "round-robin" in out and "mapping (slurm):" in out
    code, _, err = run(capsys, "place", graph_path, "--ranks-per-node", "2")
    assert code == 2 and "describe the machine" in err
    initial = tmp_path / "start.slurm"
    initial.write_text("node0\nnode1\nnode2\nnode3\nnode0\nnode1\nnode2\nnode3\n")
    code, out, _ = run(
        capsys,
        "place",
        graph_path,
        "--intra",
        "100ns,0.01ns/B",
        "--inter",
        "2us,0.1ns/B",
        "--ranks-per-node",
        "2",
        "--o",
        "500ns",
        "--S",
        "1GiB",
        "--initial",
        initial,
        "--format",
        "slurm",
        "--mapping",
        "given",
        "--json",
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["node_of_rank"]["given"] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert payload["written"] == "given"
    code, _, err = run(capsys, "place", graph_path, "--topology", "torus:dims=2", "--nodes", "3")
    assert code == 2 and "has 2 nodes, asked for 3" in err
