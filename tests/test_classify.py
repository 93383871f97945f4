"""Classification for a target network (Tong et al. 2016): per-rank counters as in the paper's
Fig. 2, the configuration sets of its Table III, and rules C1–C5 on graphs built to be compute-,
latency-, bandwidth- and load-imbalance-bound."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hand_graphs import PAPER_MODEL, build
from random_graphs import random_graph

from llamp.errors import InputError
from llamp.graph import CALC
from llamp.ingest import read
from llamp.ingest.synthetic import stencil_graph
from llamp.lp import engine_for, evaluate, rank_time_split
from llamp.lp.classify import (
    NETWORKS,
    Network,
    Thresholds,
    classify,
    configurations,
    network,
    rank_counters,
)
from llamp.params import LogGPS

COUNTERS = ["compute_ns", "overhead_ns", "wait_ns", "latency_ns", "bandwidth_ns"]


# ------------------------------------------------------------------------------ counters
def fig2(receiver_enters: float, sender_enters: float):
    """Tong et al. Fig. 2: P1 computes until it enters MPI_Recv, P2 until it enters MPI_Send.
    With o = 2 (the copy into the system buffer), L = 2 and an 11-byte message at G = 1 ns/B
    (10 units of bandwidth time)."""
    graph, _ = build(
        2,
        {
            "c1": (0, "calc", receiver_enters),
            "R": (0, "recv", 11, 1),
            "after1": (0, "calc", 0.0),
            "c2": (1, "calc", sender_enters),
            "S": (1, "send", 11, 0),
            "after2": (1, "calc", 0.0),
        },
        [
            ("c1", "requires", "R"),
            ("R", "requires", "after1"),
            ("c2", "requires", "S"),
            ("S", "requires", "after2"),
            ("S", "message", "R"),
        ],
    )
    return graph


FIG2 = LogGPS(L=2.0, o=2.0, G=1.0, S=1 << 20, **PAPER_MODEL)  # Tong et al. on the paper's model


def test_fig2b_early_receiver():
    """P1 enters at 12, P2 at 18; the message starts at 20 and is delivered at 32: P1 waits 8,
    then sees 2 units of latency and 10 of bandwidth."""
    c = rank_counters(fig2(12.0, 18.0), FIG2).iloc[0]
    assert (c.compute_ns, c.wait_ns, c.latency_ns, c.bandwidth_ns) == (12.0, 8.0, 2.0, 10.0)
    assert c.overhead_ns == 2.0  # LogGPS charges the receive's o after the delivery
    assert c.end_ns == 34.0


def test_fig2c_concurrent_sender_and_receiver():
    """P2 sends at 5 while P1 computes until 10; delivery at 19: the computation overlaps the
    latency first, so P1 has no wait, no latency and 9 units of bandwidth time."""
    c = rank_counters(fig2(10.0, 5.0), FIG2).iloc[0]
    assert (c.compute_ns, c.wait_ns, c.latency_ns, c.bandwidth_ns) == (10.0, 0.0, 0.0, 9.0)


def test_fig2a_early_sender():
    """P2 sends at 8, the message is delivered at 22, P1 enters at 25: nothing to wait for."""
    counters = rank_counters(fig2(25.0, 8.0), FIG2)
    c = counters.iloc[0]
    assert (c.wait_ns, c.latency_ns, c.bandwidth_ns) == (0.0, 0.0, 0.0)
    # P2 finishes at 10 and waits for P1 (T = 27) at the end of the run
    assert counters.iloc[1].tolist()[2:] == [8.0, 2.0, 17.0, 0.0, 0.0]


@pytest.mark.parametrize("seed", range(8))
def test_counters_split_the_runtime_of_every_rank(seed):
    """Random programs (blocking and non-blocking, eager and rendezvous): each rank's five
    counters are ≥ 0 and add up to T; compute is exactly its calc costs."""
    graph = random_graph(seed, ranks=4, steps=80)
    params = LogGPS(L=700.0, o=150.0, G=0.4, S=1024)
    counters = rank_counters(graph, params)
    T = engine_for(graph).runtime(params)
    assert (counters[COUNTERS].to_numpy() >= -1e-9).all()
    np.testing.assert_allclose(counters[COUNTERS].sum(axis=1), T, rtol=1e-9)
    calc = graph.kind == CALC
    per_rank = np.bincount(graph.rank[calc], weights=graph.cost_ns[calc], minlength=4)
    np.testing.assert_allclose(counters["compute_ns"], per_rank, rtol=1e-12, atol=1e-9)
    ops = np.bincount(graph.rank[~calc], minlength=4)
    assert (counters["overhead_ns"] <= params.o * ops + 1e-9).all()


def test_sweep3d_counters_and_class():
    """The real Sweep3D trace (4 ranks, 41.9 s): the counters keep rank_time_split's compute and
    at most its overhead (overheads of one collective round that overlap count once); Sweep3D
    computes 95 % of the time and is computation-bound on every built-in network."""
    graph = read(Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2")
    params = LogGPS(nic="overlap", **PAPER_MODEL)  # the paper's model, as Tong et al.'s counters
    counters = rank_counters(graph, params)
    split = rank_time_split(graph, evaluate(graph, params))
    np.testing.assert_array_equal(counters["compute_ns"], split["compute_ns"])
    assert (counters["overhead_ns"] <= split["overhead_ns"]).all()
    assert (counters["overhead_ns"] >= 0.98 * split["overhead_ns"]).all()
    for name in NETWORKS:
        result = classify(graph, name, params=params)
        assert (result.label, result.rule) == ("computation-bound", "C1"), name
        assert result.reason.startswith(f"compute is {_target(result)['compute_share']:.1%} of T")
        assert 0.949 < _target(result)["compute_share"] < 0.951


# ------------------------------------------------------------------------------ configurations
def test_configuration_sets_are_table_iii():
    """Tong et al. Table III, QDR (32 Gb/s, 1.3 µs) and 1G Ethernet (1 Gb/s, 50 µs)."""
    qdr = configurations(network("QDR")).set_index(["set", "speedup"])
    speed = [1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8]
    assert [qdr.loc[("latency", s), "L_ns"] / 1e3 for s in speed] == [
        10.4,
        5.2,
        2.6,
        1.3,
        0.65,
        0.325,
        0.1625,
    ]
    assert [qdr.loc[("bandwidth", s), "bandwidth_gbps"] for s in speed] == [
        4,
        8,
        16,
        32,
        64,
        128,
        256,
    ]
    assert [
        (qdr.loc[("combined", s), "bandwidth_gbps"], qdr.loc[("combined", s), "L_ns"] / 1e3)
        for s in speed
    ] == [(4, 10.4), (8, 5.2), (16, 2.6), (32, 1.3), (64, 0.65), (128, 0.325), (256, 0.1625)]
    enet = configurations(network("1gbe")).set_index(["set", "speedup"])
    assert [
        (enet.loc[("combined", s), "bandwidth_gbps"], enet.loc[("combined", s), "L_ns"] / 1e3)
        for s in speed
    ] == [(0.125, 400), (0.25, 200), (0.5, 100), (1, 50), (2, 25), (4, 12.5), (8, 6.25)]
    assert qdr.loc[("bandwidth", 1.0), "G_ns_per_byte"] == 0.25  # 32 Gb/s = 4 B/ns


def test_networks():
    assert {
        n: (v.bandwidth_gbps, v.latency_ns)
        for n, v in NETWORKS.items()
        if n in ("1GbE", "10GbE", "QDR")
    } == {
        "1GbE": (1.0, 50_000.0),
        "10GbE": (10.0, 5_000.0),
        "QDR": (32.0, 1_300.0),
    }
    assert all(v.source for v in NETWORKS.values())
    assert set(NETWORKS) == {"1GbE", "10GbE", "QDR", "HDR", "NDR", "100GbE", "400GbE"}
    with pytest.raises(InputError, match="unknown network 'EDR'; built in: 1GbE, 10GbE, QDR"):
        network("EDR")
    with pytest.raises(InputError, match="bandwidth must be > 0"):
        Network("x", 0.0, 1.0)
    with pytest.raises(InputError, match="power of two"):
        Thresholds(span=6)


# ------------------------------------------------------------------------------ rules
NO_O = LogGPS(
    o=0.0, nic="overlap", **PAPER_MODEL
)  # the paper's Hockney model: no CPU overhead, no NIC queue


def _target(result):
    c = result.configs
    return c[(c["set"] == "latency") & (c["speedup"] == 1.0)].iloc[0]


def test_compute_bound():
    """2 ms of compute per iteration, 8-byte halos and an 8-byte allreduce: 99.9 % compute and
    T changes by 0.9 % across all three sets (< 5 %) → C1."""
    graph = stencil_graph(
        ranks=4, iterations=20, dims=1, compute_ns=2e6, halo_bytes=8, imbalance=0.0, noise=0.0
    )
    result = classify(graph, "QDR", params=NO_O)
    assert (result.label, result.rule) == ("computation-bound", "C1")
    assert (
        result.reason
        == "compute is 99.9% of T (≥ 90%); T over all three sets (×1/8…×8) changes by 0.9% (< 5%)"
    )
    assert _target(result)["compute_share"] == pytest.approx(0.9987, abs=1e-4)


def test_latency_bound():
    """Four ranks swap 8-byte halos after 0.5 µs of compute: on QDR the 1.3 µs latency is
    65.6 % of T, bandwidth changes do nothing (1.3 %), and 2L → L/2 cuts communication by 7.5×
    → C4 (C5 holds too, but C4 comes first)."""
    graph = stencil_graph(
        ranks=4,
        iterations=20,
        dims=1,
        compute_ns=500.0,
        halo_bytes=8,
        allreduce_every=0,
        imbalance=0.0,
        noise=0.0,
    )
    result = classify(graph, "QDR", params=NO_O)
    assert (result.label, result.rule) == ("latency-bound", "C4")
    assert result.reason.startswith(
        "communication is 65.6% of T (≥ 25%); communication time over "
        "the bandwidth set (×1/8…×8 BW) changes by 1.3% (< 5%)"
    )
    t = _target(result)
    assert t["latency_share"] == pytest.approx(0.654, abs=1e-3) and t["wait_share"] == 0.0
    rules = result.rules.set_index("rule")
    assert rules.loc["C4", "ratio"] == pytest.approx(7.46, abs=0.01)
    assert bool(rules.loc["C5", "holds"]) and not bool(rules.loc["C3", "holds"])


def test_bandwidth_bound():
    """4 MiB halos (rendezvous) after 10 µs of compute: transfers take 99 % of T; 8× latency
    changes communication by 2.6 % and BW/2 → 2·BW cuts it 4× → C3."""
    graph = stencil_graph(
        ranks=4,
        iterations=20,
        dims=1,
        compute_ns=10_000.0,
        halo_bytes=4 << 20,
        allreduce_every=0,
        imbalance=0.0,
        noise=0.0,
    )
    result = classify(graph, "QDR", params=NO_O)
    assert (result.label, result.rule) == ("bandwidth-bound", "C3")
    assert (
        "changes by 2.6% (< 5%); communication time falls from BW/2 to 2·BW by a factor 4.02"
        in result.reason
    )
    assert _target(result)["bandwidth_share"] == pytest.approx(0.9905, abs=1e-4)


def test_load_imbalance_bound():
    """8 ranks with 30 % load imbalance (fixed per rank) and an allreduce every iteration: the
    fast ranks wait 46 % of the time for the slowest, whatever the network (0.4 %) → C2."""
    graph = stencil_graph(
        ranks=8,
        iterations=20,
        dims=1,
        compute_ns=5e6,
        halo_bytes=8,
        imbalance=0.3,
        noise=0.0,
        seed=3,
    )
    result = classify(graph, "QDR", params=NO_O)
    assert (result.label, result.rule) == ("load-imbalance-bound", "C2")
    assert (
        result.reason
        == "wait is 46.3% of T (≥ 25%); the wait time over all three sets (×1/8…×8) changes by 0.4% (< 5%)"
    )
    per_rank = result.per_rank
    slowest = int(np.argmax(per_rank["compute_ns"]))
    assert per_rank.loc[slowest, "wait_ns"] < 1e-3 * per_rank.loc[slowest, "compute_ns"]
    # the thresholds are the user's: with C2 at 50 % the same graph is only imbalance-sensitive
    stricter = classify(graph, "QDR", params=NO_O, thresholds=Thresholds(bound_share=0.5))
    assert (stricter.label, stricter.rule) == ("load-imbalance-sensitive", "C2s")


def test_nothing_holds_is_unclassified():
    """With C1 asking for 99.99 % compute and C2–C5 for 99 %, the compute-bound graph fits no rule."""
    graph = stencil_graph(
        ranks=4, iterations=5, dims=1, compute_ns=2e6, halo_bytes=8, imbalance=0.0, noise=0.0
    )
    th = Thresholds(compute_share=0.9999, bound_share=0.99, sensitive_share=0.99)
    result = classify(graph, "QDR", params=NO_O, thresholds=th)
    assert (result.label, result.rule) == ("unclassified", "")
    assert result.reason.startswith("no rule holds: C1: compute is 99.9% of T (< 100%)")
    assert not result.rules["holds"].any()


def test_cli_classify(capsys, tmp_path):
    from llamp.cli import main

    graph = stencil_graph(
        ranks=8,
        iterations=20,
        dims=1,
        compute_ns=5e6,
        halo_bytes=8,
        imbalance=0.3,
        noise=0.0,
        seed=3,
    )
    path = graph.save(tmp_path / "imbalanced.npz")

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as info:
            main([str(a) for a in args])
        out = capsys.readouterr()
        return info.value.code, out.out, out.err

    code, out, err = run("classify", path, "--target", "QDR", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert (payload["label"], payload["rule"]) == ("load-imbalance-bound", "C2")
    assert len(payload["configs"]) == 21 and len(payload["per_rank"]) == 8
    code, out, err = run(
        "classify", path, "--bandwidth", "32", "--latency", "1.3us", "--bound-share", "50"
    )
    assert code == 0, err
    assert "LOAD-IMBALANCE-SENSITIVE (C2s)" in out and "because wait is 46.3% of T" in out
    code, _, err = run("classify", path)
    assert code == 2 and "choose a target network" in err
