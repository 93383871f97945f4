"""Collective what-ifs (LLAMP §IV, Fig. 10) and the analytic collective models (Dimemas,
Thakur–Gropp): one trace re-expanded per algorithm, side by side; formulas against the papers
and against the expanded schedules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hand_graphs import PAPER_MODEL
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
    messages per allreduce, the ring 2·4·3 = 24, so the ring graph has 32·16 = 512 more.
    λ_L as on the paper's model (program order, handshake)."""
    params = LogGPS(**PAPER_MODEL)
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
        allreduce_heavy, ["default", "bcast=linear"], LogGPS(), [3000.0], levels=()
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


# ------------------------------------------------------------------ at scale: estimate, progress
#: A 16-rank noisy stencil trace (ingest/synthetic.py): halo exchange, an allreduce every
#: iteration, an alltoall every 10th: the benchmark's trace (benchmarks/bench_whatif.py), small.
STENCIL = {"ranks": 16, "iterations": 12, "alltoall_every": 10}
SCALE_VARIANTS = [
    "default",
    "allreduce=ring",
    "allreduce=rabenseifner,alltoall=pairwise",
    "allreduce=ring,barrier=dissemination,bcast=pipelined",
    "allreduce=thakur_gropp:ring",
    "allreduce=dimemas,alltoall=dimemas",
]


@pytest.fixture(scope="module")
def stencil_trace(tmp_path_factory):
    from llamp.ingest import read_trace
    from llamp.ingest.synthetic import write_liballprof

    path = tmp_path_factory.mktemp("stencil") / "stencil-16"
    write_liballprof(path, **STENCIL)
    return read_trace(path)


@pytest.mark.parametrize("source", ["sweep3d", "stencil"])
def test_expanded_vertices_are_counted_exactly_before_expanding(source, stencil_trace):
    """The estimate's vertex counts are the expanded graphs' (not an approximation): the ring
    allreduce of P = 16 has 2(P−1) = 30 rounds of a send, a receive and a join per member."""
    from llamp.ingest import read_trace
    from llamp.ingest.build import build_graph
    from llamp.lp.collectives_whatif import expanded_vertices

    trace = read_trace(SWEEP3D) if source == "sweep3d" else stencil_trace
    counts = expanded_vertices(trace, SCALE_VARIANTS)
    for text in SCALE_VARIANTS:
        variant = Variant.parse(text)
        built = build_graph(trace, collectives=variant.choices)
        assert counts[variant.label] == built.num_vertices, text
    if source == "stencil":
        # 12 allreduces: recursive doubling has log2 16 = 4 rounds of 3 vertices, ring 30 rounds
        assert counts["allreduce=ring"] - counts["default"] == 12 * 16 * 3 * (30 - 4)


def test_estimate_scales_with_vertices_and_measured_throughput(stencil_trace):
    from llamp.lp.collectives_whatif import (
        BYTES_PER_VERTEX,
        EVAL_NS_PER_VERTEX,
        estimate_whatif,
    )

    est = estimate_whatif(stencil_trace, ["default", "allreduce=ring"], curve_seconds=20.0)
    plan = est.variants.set_index("variant")
    ring, rd = plan.loc["allreduce=ring"], plan.loc["default"]
    ratio = ring["vertices"] / rd["vertices"]
    assert ratio > 2.5
    for column in ("expand_s", "summary_s", "memory_mb"):
        assert ring[column] / rd[column] == pytest.approx(ratio, rel=1e-12), column
    assert (ring["curve_s"], rd["curve_s"]) == (10.0, 10.0), "the curve budget is shared"
    assert est.seconds == pytest.approx(est.summary_seconds + 20.0)
    assert est.memory_mb == pytest.approx(plan["vertices"].sum() * BYTES_PER_VERTEX / 2**20)
    assert est.within_target  # 10^4 vertices
    # a machine twice as slow as the benchmark's: everything takes twice as long
    slow = estimate_whatif(
        stencil_trace, ["default", "allreduce=ring"], eval_ns_per_vertex=2 * EVAL_NS_PER_VERTEX
    )
    assert slow.summary_seconds == pytest.approx(2 * est.summary_seconds, rel=1e-12)
    # a faster one: its passes are credited, expansion and lowering are not
    fast = estimate_whatif(
        stencil_trace, ["default", "allreduce=ring"], eval_ns_per_vertex=EVAL_NS_PER_VERTEX / 2
    )
    assert fast.variants["expand_s"].tolist() == est.variants["expand_s"].tolist()
    assert fast.variants["summary_s"].sum() == pytest.approx(est.variants["summary_s"].sum() / 2)
    with pytest.raises(InputError, match="throughput"):
        estimate_whatif(stencil_trace, ["default"], eval_ns_per_vertex=0.0)


def test_estimate_is_over_the_target_for_a_large_expansion(stencil_trace):
    """The same trace on a machine 10^4× slower than the benchmark's stands in for a trace
    10^4× larger: the estimate says it will not fit the interactive target."""
    from llamp.lp.collectives_whatif import EVAL_NS_PER_VERTEX, TARGET_SECONDS, estimate_whatif

    est = estimate_whatif(
        stencil_trace, ["allreduce=ring"], eval_ns_per_vertex=1e4 * EVAL_NS_PER_VERTEX
    )
    assert est.seconds > TARGET_SECONDS and not est.within_target


def test_measured_throughput_is_a_positive_rate(stencil_trace):
    from llamp.ingest.build import build_graph
    from llamp.lp.collectives_whatif import measure_throughput

    rate = measure_throughput(build_graph(stencil_trace), LogGPS())
    assert 0.0 < rate < 1e5  # ns per vertex and pass


def test_progress_reports_every_step_up_to_done(stencil_trace):
    from llamp.lp.collectives_whatif import comparison_range, variant_curves

    seen: list[tuple[float, str]] = []
    result = compare_collectives(
        stencil_trace,
        ["default", "allreduce=ring"],
        LogGPS(),
        [3000.0],
        progress=lambda f, text: seen.append((f, text)),
    )
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    texts = " | ".join(t for _, t in seen)
    for step in ("expanded to", "lowered", "T and λ at L0", "5% L tolerance"):
        assert f"allreduce=ring: {step}" in texts
    quiet = compare_collectives(stencil_trace, ["default", "allreduce=ring"], LogGPS(), [3000.0])
    pd.testing.assert_frame_equal(quiet.summary, result.summary)  # the hook changes nothing

    seen.clear()
    lo, hi = comparison_range(result.summary, (0.01, 0.02, 0.05), 3000.0)
    variant_curves(result, lo, hi, progress=lambda f, text: seen.append((f, text)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    done = [t for _, t in seen if t.endswith("found)")]
    assert len(done) == 2, "a report per variant when its search ends"
    waves = [t for _, t in seen if "passes" in t]
    assert len(waves) >= 2, "and one after each wave of the search"


def test_cancel_stops_between_steps_with_a_clear_error(stencil_trace):
    from llamp.lp.collectives_whatif import Cancelled, comparison_range, variant_curves

    calls = []

    def cancel_after(n):
        def cancel() -> bool:
            calls.append(1)
            return len(calls) > n

        return cancel

    with pytest.raises(Cancelled, match="cancelled"):
        compare_collectives(
            stencil_trace, ["default", "allreduce=ring"], LogGPS(), [3000.0], cancel=cancel_after(3)
        )
    assert len(calls) == 4, "stopped at the first check after the cancel"

    result = compare_collectives(stencil_trace, ["default"], LogGPS(), [3000.0])
    lo, hi = comparison_range(result.summary, (0.01,), 3000.0)
    calls.clear()
    with pytest.raises(Cancelled):
        variant_curves(result, lo, hi, cancel=cancel_after(2))

    class Stop(BaseException):
        """What a UI task raises from its progress hook once cancelled."""

    def hook(fraction: float, text: str) -> None:
        if "lowered" in text:
            raise Stop

    with pytest.raises(Stop):
        compare_collectives(stencil_trace, ["default"], LogGPS(), [3000.0], progress=hook)


@pytest.mark.parametrize("source", ["sweep3d", "stencil"])
def test_curves_are_the_exact_pieces_of_one_search(source, stencil_trace):
    """The curve has the breakpoints of one search over the whole range (to the float
    rounding of a tangent intersection) and the same pieces; T between its points is linear
    and equals the engine's T at any L."""
    from llamp.ingest import read_trace
    from llamp.lp import critical_latencies, sweep
    from llamp.lp.collectives_whatif import comparison_range, variant_curves

    trace = read_trace(SWEEP3D) if source == "sweep3d" else stencil_trace
    params = LogGPS()
    result = compare_collectives(trace, ["default", "allreduce=ring"], params, [params.L])
    lo, hi = comparison_range(result.summary, (0.01, 0.02, 0.05), params.L)
    curves = variant_curves(result, lo, hi)
    for label, curve in curves.items():
        graph = result.graphs[label]
        one = critical_latencies(graph, params, lo, hi)
        assert curve.complete and len(curve.critical.critical) == len(one.critical) > 3
        T_scale = float(curve.curve["runtime_ns"].max())
        np.testing.assert_allclose(
            curve.critical.critical, one.critical, rtol=0, atol=1e-12 * T_scale
        )
        assert [s.slope for s in curve.critical.segments] == [s.slope for s in one.segments]
        probes = np.linspace(lo, hi, 37)
        exact = sweep(graph, params, probes)
        frame = curve.curve
        first = frame.drop_duplicates("L_ns", keep="first")
        T = np.interp(probes, first["L_ns"], first["runtime_ns"])
        np.testing.assert_allclose(T, exact["runtime_ns"], rtol=1e-12)
        at_L0 = result.summary.set_index("variant").loc[label]
        # The piece right of L0; a breakpoint at L0 itself (the stencil's ring allreduce under
        # the default has one: 318 left, 319 right) is found to a tangent intersection's
        # rounding (3000.00000003), so it starts that piece.
        right = frame[frame["L_ns"] <= params.L * (1 + 1e-9)].iloc[-1]
        assert right["lambda_L"] == at_L0["lambda_L"]
        assert frame["exact"].all()


def test_a_spent_curve_budget_leaves_exact_unresolved_intervals(stencil_trace):
    from llamp.lp import critical_latencies, sweep
    from llamp.lp.collectives_whatif import comparison_range, variant_curves

    params = LogGPS()
    result = compare_collectives(stencil_trace, ["allreduce=ring"], params, [params.L])
    lo, hi = comparison_range(result.summary, (0.01,), params.L)
    curve = variant_curves(result, lo, hi, seconds=1e-6)["allreduce=ring"]
    assert not curve.complete
    full = critical_latencies(result.graphs["allreduce=ring"], params, lo, hi)
    T_scale = float(curve.curve["runtime_ns"].max())
    for x in curve.critical.critical:  # what was found is a true breakpoint
        assert np.min(np.abs(np.asarray(full.critical) - x)) <= 1e-12 * T_scale
    frame = curve.curve
    assert not frame["exact"].all()
    exact = sweep(result.graphs["allreduce=ring"], params, frame["L_ns"].to_numpy())
    np.testing.assert_allclose(frame["runtime_ns"], exact["runtime_ns"], rtol=1e-12)
    # T is convex: the straight line across an unresolved interval is above it
    mid = [(u.start + u.end) / 2 for u in curve.critical.unresolved]
    chord = np.interp(mid, frame["L_ns"], frame["runtime_ns"])
    assert np.all(chord >= sweep(result.graphs["allreduce=ring"], params, mid)["runtime_ns"] - 1e-6)


def test_analytic_costs_of_the_trace_instances():
    """Sweep3D: 20 allreduces of 8 B, 12 of 4 B, 3 barriers and 4 bcasts on 4 ranks; the
    ring's Thakur–Gropp cost has 2(P−1) = 6 latency terms."""
    from llamp.ingest import read_trace
    from llamp.lp.collectives_whatif import collective_costs, collective_instances

    instances = collective_instances(read_trace(SWEEP3D))
    assert int(instances["instances"].sum()) == 39
    allreduce = instances[instances["op"] == "allreduce"].set_index("n_bytes")["instances"]
    assert allreduce.to_dict() == {4: 12, 8: 20}
    params = LogGPS()
    costs = collective_costs(instances, ["allreduce=ring"], params)
    ring = costs[(costs["op"] == "allreduce") & (costs["n_bytes"] == 8)].iloc[0]
    tg = thakur_gropp("allreduce", "ring", 4, 8)
    assert ring["thakur_gropp_latency_terms"] == tg.latency_terms == 6
    assert ring["total_thakur_gropp_ns"] == pytest.approx(20 * tg.at(params.L, params.G))
    assert ring["dimemas_ns"] == pytest.approx(dimemas("allreduce", 4, 8, 8).at(params.L, params.G))


# ------------------------------------------------------------------ the page's estimate gate
def test_collectives_page_announces_a_long_what_if_and_offers_the_analytic_models(
    store_env, monkeypatch
):
    """On a machine (made) 10^3× slower than the benchmark's, the page computes nothing,
    says how long the what-if would take, shows the analytic costs, switches the variants to
    the analytic models on request and runs them when asked to."""
    from apptest_pages import SettledAppTest

    from llamp.ui import APP_PATH, page_work
    from llamp.ui.display import header

    monkeypatch.setattr(page_work, "engine_throughput", lambda run, graph, params: 6e4)
    at = SettledAppTest(APP_PATH, default_timeout=180)
    at.run()
    at.switch_page("views/collectives.py")
    at.run()
    at.selectbox(key="run::collectives").set_value("sweep3d").run()
    assert not at.exception, [e.value for e in at.exception]
    gate = [w.value for w in at.warning if "aims for" in w.value]
    assert gate and "min" in gate[0], [w.value for w in at.warning]
    assert not at.metric, "nothing is expanded before the user agrees"
    assert any(c.value.startswith("Expands to 24,084, 25,620 vertices") for c in at.caption)
    costs = next(d.value for d in at.dataframe if "Thakur–Gropp formula" in d.value.columns)
    assert set(costs[header("variant")]) == {"allreduce=recursive_doubling", "allreduce=ring"}

    assert at.selectbox(key="param_order::collectives").value == "schedule"  # the default
    at.button(key="coll_use_analytic").click().run()
    # analytic collectives have no messages to schedule: the page switches to the program order
    assert at.selectbox(key="param_order::collectives").value == "program"
    assert any("resource order is now program" in i.value for i in at.info)
    assert at.selectbox(key="coll_v0_allreduce").value == "thakur_gropp:recursive_doubling"
    assert at.selectbox(key="coll_v1_allreduce").value == "thakur_gropp:ring"
    # every collective charged analytically: one coll vertex per member and instance
    assert any(c.value.startswith("Expands to 23,356, 23,356 vertices") for c in at.caption)

    at.button(key="coll_run_anyway").click().run()
    assert not at.exception, [e.value for e in at.exception]
    labels = ["allreduce=thakur_gropp:recursive_doubling", "allreduce=thakur_gropp:ring"]
    choices = [
        {
            "allreduce": alg,
            "barrier": at.selectbox(key="coll_v0_barrier").value,
            "bcast": at.selectbox(key=f"coll_v{i}_bcast").value,
        }
        for i, alg in enumerate(["thakur_gropp:recursive_doubling", "thakur_gropp:ring"])
    ]
    api = compare_collectives(
        SWEEP3D,
        [
            Variant(label, tuple(sorted(c.items())))
            for label, c in zip(labels, choices, strict=True)
        ],
        LogGPS(order="program"),
        [LogGPS().L],
    ).summary
    shown = [m.value for m in at.metric if m.label == "T(L0) predicted"]
    from llamp.config import format_ns

    assert shown == [format_ns(t) for t in api["runtime_ns"]]


def test_the_paper_example_curve_has_its_one_breakpoint():
    """The paper's running example (LLAMP Eq. 5): ``T(L) = max(1.1, max(L + 0.115, 0.5) + 1)``
    µs has its critical latency at 0.385 µs, the middle of [0, 0.77 µs]: found once, with
    both pieces and the two slopes at it (the curve's row there holds the right one)."""
    from hand_graphs import paper_example

    from llamp.lp.collectives_whatif import CollectiveComparison, variant_curves

    params = LogGPS(L=500.0, o=0.0, G=5.0, nic="overlap")  # the paper's model
    comparison = CollectiveComparison(
        params, (Variant("paper"),), pd.DataFrame(), pd.DataFrame(), (), {"paper": paper_example()}
    )
    curve = variant_curves(comparison, 0.0, 770.0)["paper"]
    assert curve.critical.critical == [385.0]
    pieces = [(s.start, s.end, s.slope) for s in curve.critical.segments]
    assert pieces == [(0.0, 385.0, 0.0), (385.0, 770.0, 1.0)]
    rows = curve.curve[["L_ns", "runtime_ns", "lambda_L"]].to_numpy().tolist()
    # the exact curve as the Latency page reads it: one row per breakpoint, right derivatives
    assert rows == [[0.0, 1500.0, 0.0], [385.0, 1500.0, 1.0], [770.0, 1885.0, 1.0]]
