"""Analytic collectives (Dimemas, Thakur–Gropp) as an alternative to expansion: ``coll``
vertices that synchronise their members and charge one affine cost, through every engine,
the store and the what-ifs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_process import llamp
from click.testing import CliRunner
from hand_graphs import build
from liballprof_writer import SWEEP3D, allreduce_call, write_trace

from llamp.cli import cli
from llamp.errors import GraphError, InputError
from llamp.graph import COLL, COLLECTIVE_COSTS, ExecutionGraph
from llamp.ingest import read
from llamp.ingest.build import check_algorithms
from llamp.ingest.collective_models import analytic_choices, dimemas, parse_analytic, thakur_gropp
from llamp.ingest.goal import write_goal
from llamp.lp import critical_latencies, predict, tolerance
from llamp.lp.classify import rank_counters
from llamp.lp.collectives_whatif import compare_collectives
from llamp.lp.matrix import pair_lp, two_level
from llamp.lp.path import critical_path
from llamp.lp.topology import analyze_topology, parse_topology
from llamp.lp.variability import VariabilitySpec, monte_carlo
from llamp.params import LogGPS

#: One instance of 2 latencies and 100 bytes, entered at 10 ns by rank 0, at 30 ns by rank 1.
TERMS = {
    COLLECTIVE_COSTS: {
        "tag": [7],
        "op": ["allreduce"],
        "latency_terms": [2.0],
        "byte_terms": [100.0],
        "model": ["hand"],
    }
}


def two_ranks() -> ExecutionGraph:
    graph, _ = build(
        2,
        {
            "c0": (0, "calc", 10.0),
            "A0": (0, "coll", 8, 0, 7),
            "c1": (0, "calc", 5.0),
            "c2": (1, "calc", 30.0),
            "A1": (1, "coll", 8, 0, 7),
            "c3": (1, "calc", 5.0),
        },
        [
            ("c0", "requires", "A0"),
            ("A0", "requires", "c1"),
            ("c2", "requires", "A1"),
            ("A1", "requires", "c3"),
        ],
        meta=TERMS,
    )
    return graph


#: Analytic collectives have no sender/receiver to schedule: they need the program order (the
#: default schedule order refuses them, ``test_the_default_order_refuses_with_both_fixes``).
PROGRAM = {"order": "program"}
P = LogGPS(L=1000.0, o=700.0, G=0.5, **PROGRAM)  # o must not matter: a modelled collective has no o


# ------------------------------------------------------------------------------ semantics
def test_instance_finishes_its_cost_after_the_last_member_enters():
    """T = max(10, 30) + 2L + 100G + 5 = 30 + 2000 + 50 + 5 ns; λ_L = 2, λ_G = 100, λ_o = 0."""
    graph = two_ranks()
    for engine in ("graph", "glop", "highs"):
        p = predict(graph, P, engine=engine)
        assert p.runtime_ns == pytest.approx(2085.0, abs=1e-9)
        assert (p.lambda_L, p.lambda_G, p.lambda_o) == (2.0, 100.0, 0.0)


def test_tolerance_and_critical_latencies_of_the_hand_graph():
    """T(L) = 30 + 2L + 50 + 5 is linear: no critical latency; 1 % over T(1 µs) = 2085 ns
    allows L = (1.01 · 2085 − 85) / 2 = 1010.425 ns."""
    graph = two_ranks()
    assert len(critical_latencies(graph, P, 0.0, 1e5).critical) == 0
    tol = tolerance(graph, P, (0.01,))
    assert tol.latency[0].value == pytest.approx((1.01 * 2085.0 - 85.0) / 2.0, rel=1e-12)


def test_critical_path_charges_the_collective_as_latency_and_bandwidth():
    path = critical_path(two_ranks(), P)
    assert path.runtime_ns == pytest.approx(2085.0)
    assert path.totals == pytest.approx(
        {"compute_ns": 35.0, "overhead_ns": 0.0, "latency_ns": 2000.0, "bandwidth_ns": 50.0}
    )
    assert len(path.messages) == 0


def test_counters_split_the_collective_like_a_message():
    """Rank 0 enters at 10 and waits until 2080: the last 2000 + 50 ns are the collective's
    latency and bandwidth, the first 20 its wait for rank 1 (Tong et al.'s counters)."""
    c = rank_counters(two_ranks(), LogGPS(L=1000.0, o=0.0, G=0.5, **PROGRAM)).set_index("rank")
    assert c.loc[0].to_dict() == pytest.approx(
        {
            "end_ns": 2080.0 + 5.0,
            "compute_ns": 15.0,
            "overhead_ns": 0.0,
            "wait_ns": 20.0,
            "latency_ns": 2000.0,
            "bandwidth_ns": 50.0,
        }
    )
    assert c.loc[1, "wait_ns"] == pytest.approx(0.0)
    assert c.loc[1, "latency_ns"] == pytest.approx(2000.0)


def test_monte_carlo_collapses_to_the_deterministic_value():
    result = monte_carlo(two_ranks(), P, VariabilitySpec(samples=20, seed=1))
    assert np.allclose(result.samples["runtime_ns"], 2085.0)


# ------------------------------------------------------------------------------ invariants
def _with_meta(graph: ExecutionGraph, meta: dict) -> ExecutionGraph:
    columns = ("rank", "kind", "cost_ns", "size", "peer", "tag", "edge_src", "edge_dst")
    return ExecutionGraph.from_arrays(
        graph.num_ranks,
        **{k: getattr(graph, k) for k in columns},
        edge_kind=graph.edge_kind,
        meta=meta,
    )


def test_graph_checks_name_the_vertex():
    graph = two_ranks()
    with pytest.raises(
        GraphError, match="without cost terms.*rank 0 vertex 1 .coll collective instance 7"
    ):
        _with_meta(graph, {COLLECTIVE_COSTS: {**TERMS[COLLECTIVE_COSTS], "tag": [8]}})
    with pytest.raises(GraphError, match="without cost terms.*rank 0 vertex 1 .coll collective"):
        _with_meta(graph, {})
    meta = json.loads(json.dumps(graph.meta))
    meta[COLLECTIVE_COSTS]["latency_terms"] = [-1.0]
    with pytest.raises(GraphError, match="finite and ≥ 0"):
        _with_meta(graph, meta)
    with pytest.raises(GraphError, match="enters one collective instance twice.*label b"):
        build(
            1,
            {"a": (0, "coll", 8, 0, 7), "c": (0, "calc", 1.0), "b": (0, "coll", 8, 0, 7)},
            [("a", "requires", "c"), ("c", "requires", "b")],
            meta=TERMS,
        )


def test_npz_subgraph_and_describe(tmp_path):
    graph = two_ranks()
    back = ExecutionGraph.load(graph.save(tmp_path / "g.npz"))
    assert back.equals(graph) and back.meta[COLLECTIVE_COSTS] == graph.meta[COLLECTIVE_COSTS]
    assert "coll allreduce instance 7" in graph.describe_vertex(1)
    assert graph.summary().colls == 2
    # keeping rank 0 only: the instance waits for the member that is left
    alone = graph.subgraph(graph.rank == 0)
    assert predict(alone, P).runtime_ns == pytest.approx(10.0 + 2050.0 + 5.0)


def test_store_round_trip(store):
    graph = two_ranks()
    store.put_run(graph, "analytic")
    back = store.load_run("analytic")
    assert back.equals(graph)
    assert predict(back, P).runtime_ns == pytest.approx(2085.0)


def test_goal_and_pairwise_analyses_refuse_with_a_reason(tmp_path):
    graph = two_ranks()
    with pytest.raises(GraphError, match="GOAL has no analytic collectives"):
        write_goal(graph, tmp_path / "g.goal")
    assert not (tmp_path / "g.goal").exists()
    with pytest.raises(InputError, match="no sender/receiver pair"):
        analyze_topology(graph, P, parse_topology("torus:dims=2x1x1"))
    with pytest.raises(InputError, match="no sender/receiver pair"):
        pair_lp(graph, P, two_level(np.array([0, 1]), (P.L, P.G), (P.L, P.G)))


# ------------------------------------------------------------------------------ from traces
def test_dimemas_lowering_of_a_traced_allreduce(tmp_path):
    """4 ranks, one 8-byte allreduce, no compute: Dimemas' LOG/2MAX + LOG/MAX gives
    (2 + 2)·L + (2·16 + 2·8)·G, and the graph has one coll vertex per member, no message."""
    trace = write_trace(tmp_path / "ar4", 4, allreduce_call, 1, 0)
    graph = read(trace, collectives={"allreduce": "dimemas"})
    s = graph.summary()
    assert (s.colls, s.messages) == (4, 0)
    assert graph.meta["collectives"] == {"allreduce": "dimemas"}
    cost = dimemas("allreduce", 4, 8, 8)
    assert (cost.latency_terms, cost.byte_terms) == (4.0, 48.0)
    p = predict(graph, LogGPS(L=1000.0, o=0.0, G=0.25, **PROGRAM))
    assert p.runtime_ns == pytest.approx(4 * 1000.0 + 48 * 0.25)
    assert (p.lambda_L, p.lambda_G) == (4.0, 48.0)


@pytest.mark.parametrize("algorithm", ["ring", "recursive_doubling"])
def test_thakur_gropp_matches_the_expanded_schedule_on_one_allreduce(tmp_path, algorithm):
    """P = 8, no compute, o = G = 0: the formula's latency count equals the latencies on the
    critical path of the expansion, so both lowerings give the same λ_L and T."""
    trace = write_trace(tmp_path / "ar8", 8, allreduce_call, 1, 0)
    params = LogGPS(L=1000.0, o=0.0, G=0.0, **PROGRAM)
    analytic = read(trace, collectives={"allreduce": f"thakur_gropp:{algorithm}"})
    expanded = read(trace, collectives={"allreduce": algorithm})
    a, e = predict(analytic, params), predict(expanded, params)
    assert a.lambda_L == e.lambda_L == thakur_gropp("allreduce", algorithm, 8, 8).latency_terms
    assert a.runtime_ns == pytest.approx(e.runtime_ns)


def test_sweep3d_expansion_and_models_side_by_side():
    """The what-if compares expansions and closed forms on one trace: the ring formula
    (2(p−1) = 6 latencies per allreduce on 4 ranks) is more latency-sensitive than recursive
    doubling's (lg p = 2), and every modelled variant replaces the allreduce messages."""
    result = compare_collectives(
        SWEEP3D,
        [
            "default",
            "allreduce=dimemas",
            "allreduce=thakur_gropp:recursive_doubling",
            "allreduce=thakur_gropp:ring",
        ],
        LogGPS(**PROGRAM),
        [0.0, 5e4],
    )
    s = result.summary.set_index("variant")
    assert s.loc["default", "analytic_collectives"] == 0
    for v in ("allreduce=dimemas", "allreduce=thakur_gropp:ring"):
        assert s.loc[v, "analytic_collectives"] > 0
        assert s.loc[v, "messages"] < s.loc["default", "messages"]
    assert (
        s.loc["allreduce=thakur_gropp:ring", "lambda_L"]
        > s.loc["allreduce=thakur_gropp:recursive_doubling", "lambda_L"]
    )
    g = result.graphs["allreduce=dimemas"]
    glop = predict(g, LogGPS(**PROGRAM), engine="glop")
    graph = predict(g, LogGPS(**PROGRAM))
    assert glop.runtime_ns == pytest.approx(graph.runtime_ns, rel=1e-12)
    assert glop.lambda_L == graph.lambda_L


def test_choices_are_checked_with_the_known_ones_listed():
    assert check_algorithms({"allreduce": "thakur_gropp"})["allreduce"] == "thakur_gropp"
    assert parse_analytic("allreduce", "thakur_gropp").algorithm == "recursive_doubling"
    assert parse_analytic("allgatherv", "thakur_gropp:ring").formula_op == "allgather"
    assert parse_analytic("allreduce", "ring") is None
    assert "dimemas" in analytic_choices("bcast")
    with pytest.raises(InputError, match="known: thakur_gropp:rabenseifner"):
        check_algorithms({"allreduce": "thakur_gropp:tree"})
    with pytest.raises(InputError, match="no formula for scan"):
        check_algorithms({"scan": "thakur_gropp"})
    with pytest.raises(InputError, match="analytic model: dimemas, thakur_gropp"):
        check_algorithms({"allreduce": "tree"})


def test_cli_ingest_info_and_collectives(tmp_path):
    runner = CliRunner()
    graph_file = tmp_path / "g.npz"
    out = runner.invoke(
        cli,
        ["info", str(SWEEP3D), "--collectives", "allreduce=dimemas", "--json"],
        catch_exceptions=False,
    )
    info = json.loads(out.output)
    assert info["colls"] == 128 and info["collectives"]["allreduce"] == "dimemas"
    read(SWEEP3D, collectives={"allreduce": "dimemas"}).save(graph_file)
    out = runner.invoke(
        cli,
        [
            "collectives",
            str(SWEEP3D),
            "allreduce=ring",
            "allreduce=thakur_gropp:ring",
            "--points",
            "2",
            "--order",
            "program",
            "--json",
        ],
        catch_exceptions=False,
    )
    summary = json.loads(out.output)["summary"]
    assert [r["analytic_collectives"] for r in summary] == [0, 128]
    out = runner.invoke(
        cli, ["predict", str(graph_file), "--order", "program", "--json"], catch_exceptions=False
    )
    assert (
        json.loads(out.output)["lambda_L"] == predict(read(graph_file), LogGPS(**PROGRAM)).lambda_L
    )


def test_the_default_order_refuses_with_both_fixes(tmp_path):
    """The default (schedule) order needs point-to-point messages: an analytic graph is refused
    in one line that says the order is the default and names both ways out."""
    graph_file = two_ranks().save(tmp_path / "g.npz")
    proc = llamp("predict", str(graph_file), home=tmp_path, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("llamp: error: ")
    assert "the schedule order (the default) needs point-to-point messages" in proc.stderr
    assert "--order program" in proc.stderr and "collectives expanded" in proc.stderr
    proc = llamp("predict", str(graph_file), "--order", "program", "--json", home=tmp_path)
    expected = predict(two_ranks(), LogGPS(**PROGRAM)).runtime_ns
    assert json.loads(proc.stdout)["runtime_ns"] == pytest.approx(expected, rel=1e-12)
    with pytest.raises(GraphError, match="--order program"):
        predict(two_ranks(), LogGPS(L=1000.0, o=700.0, G=0.5))


def test_every_trace_collective_has_a_model_or_says_why():
    """Each op of the traces has at least one analytic choice (Dimemas' Table 3 covers all)."""
    from llamp.ingest.collectives import ALGORITHMS

    for op in ALGORITHMS:
        assert analytic_choices(op), op


def test_analytic_graph_keeps_the_kind_in_npz_files(tmp_path):
    graph = read(SWEEP3D, collectives={"allreduce": "thakur_gropp"})
    path: Path = graph.save(tmp_path / "s.npz")
    back = ExecutionGraph.load(path)
    assert int((back.kind == COLL).sum()) == 128


def test_timeline_draws_the_collective_as_a_wait_plus_its_cost():
    from llamp.lp.engine import engine_for
    from llamp.ui.plots import timeline_figure

    graph = two_ranks()
    ev = engine_for(graph).evaluate(P)
    # rank 0's collective runs from its entry (10 ns) to the end of the cost (2080 ns)
    assert (ev.start_ns[1], ev.finish_ns[1]) == pytest.approx((10.0, 2080.0))
    fig, shown, drawn = timeline_figure(graph, ev, 0.0, 2085.0)
    names = {trace.name for trace in fig.data}
    assert (shown, drawn) == (6, 6)
    assert any(name.startswith("coll") for name in names)
