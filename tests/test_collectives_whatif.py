"""Collective what-ifs (LLAMP §IV, Fig. 10) and the analytic collective models (Dimemas,
Thakur–Gropp): one trace re-expanded per algorithm, side by side; formulas against the papers
and against the expanded schedules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from liballprof_writer import CALLS, SWEEP3D, allreduce_call, write_trace

from llamp.errors import InputError
from llamp.ingest import read
from llamp.ingest.collective_models import (
    DIMEMAS_TABLE3,
    AffineCost,
    DimemasModel,
    dimemas,
    dimemas_costs,
    instance_costs,
    model_factor,
    nsteps,
    size_rule,
    thakur_gropp,
)
from llamp.lp import predict, tolerance
from llamp.lp.collectives_whatif import Variant, compare_collectives
from llamp.params import LogGPS


@pytest.fixture(scope="module")
def allreduce_heavy(tmp_path_factory) -> Path:
    """8 ranks, 50 iterations of 20 µs compute + an 8-byte MPI_Allreduce: no imbalance."""
    return write_trace(tmp_path_factory.mktemp("ar") / "allreduce-8x50", 8, allreduce_call, 50, 20)


# ------------------------------------------------------------------------------ what-ifs
def test_sweep3d_ring_vs_recursive_doubling_side_by_side():
    """Sweep3D (4 ranks, 32 MPI_Allreduce per rank): recursive doubling sends 4·log2 4 = 8
    messages per allreduce, the ring 2·4·3 = 24, so the ring graph has 32·16 = 512 more."""
    params = LogGPS()
    Ls = np.linspace(0.0, 100_000.0, 11)
    result = compare_collectives(
        SWEEP3D, ["allreduce=recursive_doubling", "allreduce=ring"], params, Ls
    )
    s = result.summary.set_index("variant")
    rd, ring = s.loc["allreduce=recursive_doubling"], s.loc["allreduce=ring"]
    assert (int(rd["messages"]), int(ring["messages"])) == (6052, 6564)
    assert int(ring["messages_vs_first"]) == 512
    assert rd["algorithms"] == "allreduce=recursive_doubling,barrier=dissemination,bcast=binomial"
    # the ring puts more messages on the critical path and tolerates less latency (ICON, Fig. 10)
    assert (rd["lambda_L"], ring["lambda_L"]) == (99.0, 222.0)
    assert ring["lambda_L_vs_first"] == 123.0
    for x in (1, 2, 5):
        assert ring[f"tolerance_{x}pct_L_ns"] < 0.6 * rd[f"tolerance_{x}pct_L_ns"]
    # every number equals the ordinary analyses of the graph read with that algorithm
    for alg in ("recursive_doubling", "ring"):
        graph = read(SWEEP3D, collectives={"allreduce": alg})
        label = f"allreduce={alg}"
        assert result.graphs[label].equals(graph)
        ref = predict(graph, params)
        assert s.loc[label, "runtime_ns"] == pytest.approx(ref.runtime_ns, rel=1e-12)
        assert s.loc[label, "rho_L"] == pytest.approx(ref.rho_L, rel=1e-12)
        tol = tolerance(graph, params, bandwidth=False)
        for level in tol.latency:
            assert s.loc[label, f"tolerance_{level.x * 100:g}pct_L_ns"] == pytest.approx(
                level.value, rel=1e-12
            )
        rows = result.sweep[result.sweep["variant"] == label]
        assert rows["L_ns"].tolist() == Ls.tolist()
        for L, T, lam in zip(rows["L_ns"], rows["runtime_ns"], rows["lambda_L"], strict=True):
            p = predict(graph, params.with_(L=L))
            assert (T, lam) == (pytest.approx(p.runtime_ns, rel=1e-12), p.lambda_L)
    assert result.notes == ()


def test_ring_allreduce_has_the_larger_latency_sensitivity(allreduce_heavy):
    """50 allreduces on 8 ranks with o = 0: recursive doubling puts log2 8 = 3 messages per
    allreduce on the critical path (λ_L = 150), the ring 2·(8−1) = 14 (λ_L = 700)."""
    params = LogGPS(L=3000.0, o=0.0, G=0.0)
    result = compare_collectives(
        allreduce_heavy, ["allreduce=recursive_doubling", "allreduce=ring"], params, [0.0, 3000.0]
    )
    s = result.summary.set_index("variant")
    assert s["lambda_L"].tolist() == [150.0, 700.0]
    # T(L) = 51 computes of 20 µs + λ_L·L: 1.02 ms + 150·3 µs vs 1.02 ms + 700·3 µs
    assert s["runtime_ns"].tolist() == pytest.approx([1_470_000.0, 3_120_000.0], rel=1e-12)
    sweep = result.sweep.pivot(index="L_ns", columns="variant", values="runtime_ns")
    assert sweep.loc[0.0].tolist() == pytest.approx([1_020_000.0, 1_020_000.0])
    # 1 % of T = 14.7 µs (rd) / 31.2 µs (ring) of slack spread over 150 / 700 messages
    assert s.loc["allreduce=recursive_doubling", "tolerance_1pct_L_ns"] == pytest.approx(3098.0)
    assert s.loc["allreduce=ring", "tolerance_1pct_L_ns"] == pytest.approx(3000.0 + 31_200.0 / 700)
    assert s.loc["allreduce=ring", "messages_vs_first"] == 50 * (112 - 24)


def test_variants_that_change_nothing_are_reported(allreduce_heavy):
    result = compare_collectives(
        allreduce_heavy, ["default", "bcast=linear"], LogGPS(), [3000.0], tolerances=()
    )
    assert result.notes == (
        "bcast=linear: the trace makes no bcast call, so this choice changes nothing",
        "bcast=linear expands to the same graph as default",
    )
    assert result.summary["runtime_vs_first"].tolist() == [0.0, 0.0]


def test_graph_files_cannot_be_re_expanded(tmp_path):
    graph_file = read(SWEEP3D).save(tmp_path / "sweep3d.npz")
    with pytest.raises(
        InputError,
        match=r"already expanded into point-to-point messages.*"
        r"pass its trace directory \(.*sweep3d-2x2\) instead",
    ):
        compare_collectives(graph_file, ["allreduce=ring"], LogGPS(), [0.0])
    goal = Path(__file__).parent / "data" / "traces" / "goal" / "blocking.goal"
    with pytest.raises(InputError, match="this goal file is an execution graph"):
        compare_collectives(goal, ["allreduce=ring"], LogGPS(), [0.0])
    with pytest.raises(InputError, match="no such file or directory"):
        compare_collectives(tmp_path / "missing", ["allreduce=ring"], LogGPS(), [0.0])


def test_variant_parsing():
    assert Variant.parse("allreduce=ring, bcast=linear").choices == {
        "allreduce": "ring",
        "bcast": "linear",
    }
    assert Variant.parse("default") == Variant("default", ())
    with pytest.raises(InputError, match="'ring' is not OP=ALGORITHM"):
        Variant.parse("ring")
    with pytest.raises(InputError, match="unknown allreduce algorithm 'tree'"):
        Variant.parse("allreduce=tree")
    with pytest.raises(InputError, match="given twice"):
        compare_collectives(SWEEP3D, ["allreduce=ring", "allreduce=ring"], LogGPS(), [0.0])


def test_cli_collectives(capsys, allreduce_heavy, tmp_path):
    from llamp.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as info:
            main([str(a) for a in args])
        out = capsys.readouterr()
        return info.value.code, out.out, out.err

    code, out, err = run(
        "collectives",
        allreduce_heavy,
        "--compare",
        "allreduce=recursive_doubling",
        "allreduce=ring",
        "--o",
        "0",
        "--G",
        "0",
        "--to",
        "10us",
        "--points",
        "3",
        "--json",
    )
    assert code == 0, err
    payload = json.loads(out)
    assert [r["lambda_L"] for r in payload["summary"]] == [150.0, 700.0]
    assert [r["L_ns"] for r in payload["sweep"]] == [0.0, 5000.0, 10000.0] * 2
    code, out, err = run("collectives", allreduce_heavy, "allreduce=ring", "--o", "0")
    assert code == 0, err
    assert "allreduce=ring" in out and "λ_L" in out and "1% tol. L" in out
    graph_file = read(allreduce_heavy).save(tmp_path / "g.npz")
    code, _, err = run("collectives", graph_file, "allreduce=ring")
    assert code == 2 and "cannot be re-expanded" in err
    code, _, err = run("collectives", allreduce_heavy)
    assert code == 2 and "give at least one variant" in err


# ------------------------------------------------------------------------------ Dimemas
def test_dimemas_model_factors_table1():
    """MODEL_IN_FACTOR: 0 → 0, CT → 1, LIN → P, LOG → Nsteps = ⌈log2 P⌉ (unlimited buses)."""
    P = np.array([1, 2, 5, 8, 16, 100])
    assert model_factor("0", P).tolist() == [0] * 6
    assert model_factor("CT", P).tolist() == [1] * 6
    assert model_factor("LIN", P).tolist() == P.tolist()
    assert model_factor("LOG", P).tolist() == [0, 1, 3, 3, 4, 7]


def test_dimemas_nsteps_with_buses_eq4():
    """Eq. 4: a phase with 8 transfers and 5 buses takes ⌈8/5⌉ = 2 steps. P = 16 has phases of
    1, 2, 4, 8 transfers: with 5 buses 1 + 1 + 1 + 2 = 5 steps; with 1 bus 15 = P − 1."""
    assert nsteps(16, buses=5).tolist() == 5
    assert nsteps(16, buses=1).tolist() == 15
    assert nsteps(5, buses=1).tolist() == 4  # phases of 1, 2, 1 transfers
    assert nsteps(16).tolist() == 4
    with pytest.raises(InputError, match="buses"):
        nsteps(16, buses=0)


def test_dimemas_sizes_table2():
    """Root sends 100 B and receives 40 B."""
    got = {rule: float(size_rule(rule, 100, 40)) for rule in ("MAX", "MIN", "MEAN", "2MAX", "S+R")}
    assert got == {"MAX": 100.0, "MIN": 40.0, "MEAN": 70.0, "2MAX": 200.0, "S+R": 140.0}


def test_dimemas_costs_eq2_eq3_with_table3():
    """T = (L + SIZE_IN·G)·F_in + (L + SIZE_OUT·G)·F_out (Eq. 2–3) with Table 3's models."""
    s = 8.0
    # allreduce: LOG 2MAX / LOG MAX on 16 members: 4·(L + 16·G) + 4·(L + 8·G)
    assert dimemas("allreduce", 16, s, s) == AffineCost(8.0, 4 * 16.0 + 4 * 8.0)
    # bcast: LOG MAX / 0: ⌈log2 6⌉ = 3 steps of (L + s·G)
    assert dimemas("bcast", 6, s, s) == AffineCost(3.0, 24.0)
    # barrier: LIN / LIN, no bytes: 2·P·L
    assert dimemas("barrier", 12, 0, 0) == AffineCost(24.0, 0.0)
    # gather of 10 B blocks on 8 members, root receives 80: LOG MEAN = (10 + 80)/2 / 0
    assert dimemas("gather", 8, 10, 80) == AffineCost(3.0, 3 * 45.0)
    # scatter: 0 / LOG MEAN
    assert dimemas("scatter", 8, 80, 10) == AffineCost(3.0, 3 * 45.0)
    cost = dimemas(DimemasModel.parse("CTE", "S+R", "LIN", "2*max"), 4, 10, 30)
    assert cost == AffineCost(1.0 + 4.0, 40.0 + 4 * 60.0)
    assert cost.at(L=1000.0, G=0.5) == pytest.approx(5000.0 + 140.0)
    assert set(DIMEMAS_TABLE3) >= {"barrier", "bcast", "allreduce", "alltoall", "scan"}
    with pytest.raises(InputError, match="MODEL_IN 'TREE'"):
        DimemasModel("TREE", "MAX", "0", "MAX")
    with pytest.raises(InputError, match="no Dimemas parameters for collective 'foo'"):
        dimemas("foo", 4, 1, 1)


def test_dimemas_costs_are_vectorised():
    frame = dimemas_costs(
        "allreduce", np.array([2, 4, 8]), np.array([8, 8, 16]), np.array([8, 8, 16])
    )
    assert frame["latency_terms"].tolist() == [2.0, 4.0, 6.0]
    assert frame["byte_terms"].tolist() == [1 * 16 + 1 * 8, 2 * 16 + 2 * 8, 3 * 32 + 3 * 16]


# ------------------------------------------------------------------------------ Thakur–Gropp
def test_thakur_gropp_formulas():
    """Thakur, Rabenseifner & Gropp 2005 (§4) for p = 8, n = 1024 B."""
    n, p = 1024.0, 8
    assert thakur_gropp("bcast", "binomial", p, n) == AffineCost(3, 3 * n)
    assert thakur_gropp("bcast", "scatter_allgather", p, n) == AffineCost(3 + 7, 2 * 7 / 8 * n)
    assert thakur_gropp("allreduce", "recursive_doubling", p, n) == AffineCost(3, 3 * n, 3 * n)
    assert thakur_gropp("allreduce", "rabenseifner", p, n) == AffineCost(
        6, 2 * 7 / 8 * n, 7 / 8 * n
    )
    assert thakur_gropp("allreduce", "ring", p, n) == AffineCost(14, 2 * 7 / 8 * n, 7 / 8 * n)
    assert thakur_gropp("allgather", "ring", p, n) == AffineCost(7, 7 / 8 * n)
    assert thakur_gropp("allgather", "recursive_doubling", p, n) == AffineCost(3, 7 / 8 * n)
    assert thakur_gropp("alltoall", "bruck", p, n) == AffineCost(3, n / 2 * 3)
    assert thakur_gropp("alltoall", "pairwise", p, n) == AffineCost(7, 7 / 8 * n)
    assert thakur_gropp("reduce", "binomial", p, n) == AffineCost(3, 3 * n, 3 * n)
    assert thakur_gropp("reduce_scatter", "recursive_halving", p, n) == AffineCost(
        3, 7 / 8 * n, 7 / 8 * n
    )
    assert thakur_gropp("barrier", "dissemination", 5, 0) == AffineCost(3, 0)
    # non-power-of-two: MPICH's fold adds a step before and after (p = 6: p' = 4)
    assert thakur_gropp("allreduce", "recursive_doubling", 6, n) == AffineCost(4, 4 * n, 3 * n)
    assert thakur_gropp("allreduce", "ring", 1, n) == AffineCost(0, 0)
    with pytest.raises(InputError, match="no Thakur–Gropp formula for allreduce/tree"):
        thakur_gropp("allreduce", "tree", 8, n)


@pytest.mark.parametrize(
    ("op", "algorithm", "P"),
    [
        ("allreduce", "recursive_doubling", 8),
        ("allreduce", "ring", 8),
        ("allreduce", "rabenseifner", 8),
        ("bcast", "binomial", 8),
        ("reduce", "binomial", 8),
        ("barrier", "dissemination", 8),
        ("allgather", "ring", 8),
        ("allgather", "recursive_doubling", 8),
        ("allgather", "dissemination", 8),
    ],
)
def test_latency_terms_equal_the_expanded_schedule(tmp_path, op, algorithm, P):
    """One collective, no compute, o = G = 0: the critical path of the expanded schedule carries
    exactly the formula's number of latencies (λ_L = latency_terms)."""
    trace = write_trace(tmp_path / op, P, CALLS[op], 1, 0)
    graph = read(trace, collectives={op: algorithm})
    lam = predict(graph, LogGPS(L=1000.0, o=0.0, G=0.0)).lambda_L
    assert lam == thakur_gropp(op, algorithm, P, 8.0).latency_terms


def test_formula_counts_steps_the_graph_overlaps(tmp_path):
    """P = 6 recursive doubling: MPICH's fold makes 1 + 2 + 1 = 4 synchronous steps (the
    formula), but members 4 and 5 start their exchanges while 1 and 3 still wait for the fold,
    so their messages are already there and the critical path carries only 3 latencies."""
    trace = write_trace(tmp_path / "ar6", 6, allreduce_call, 1, 0)
    graph = read(trace, collectives={"allreduce": "recursive_doubling"})
    assert predict(graph, LogGPS(L=1000.0, o=0.0, G=0.0)).lambda_L == 3.0
    assert thakur_gropp("allreduce", "recursive_doubling", 6, 8.0).latency_terms == 4


def test_instance_costs_of_a_trace_table():
    instances = pd.DataFrame(
        {
            "op": ["allreduce", "bcast", "allreduce"],
            "P": [8, 8, 16],
            "sent_bytes": [8, 64, 8],
            "received_bytes": [8, 64, 8],
            "n_bytes": [8, 64, 8],
        }
    )
    dim = instance_costs(instances)
    assert dim["latency_terms"].tolist() == [6.0, 3.0, 8.0]
    assert dim["byte_terms"].tolist() == [3 * 16 + 3 * 8, 3 * 64, 4 * 16 + 4 * 8]
    tg = instance_costs(instances, model="thakur_gropp", algorithms={"allreduce": "ring"})
    assert tg["latency_terms"].tolist() == [14.0, 3.0, 30.0]
    assert tg["byte_terms"].tolist() == pytest.approx([2 * 7 / 8 * 8, 3 * 64, 2 * 15 / 16 * 8])
    with pytest.raises(InputError, match="lack column"):
        instance_costs(instances.drop(columns="P"))
