"""The query catalogue on Sweep3D, on every backend, each answer checked against numpy on the
in-memory graph: selections equal ``graph.subgraph(mask)``, traffic and per-rank sums equal
``graph.summary()`` and bincounts, critical-path candidates at ε = 0 equal the graph engine's
critical path. Plus the read-only check of ad hoc Cypher."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from store_graphs import BACKENDS, tiny_graph, wipe

from llamp.errors import InputError, QueryError
from llamp.graph import MESSAGE, RECV, SEND, ExecutionGraph
from llamp.graphdb import GraphStore, open_store, write_clauses
from llamp.graphdb.queries import CATALOGUE, SELECTIONS
from llamp.ingest.build import COLL_TAG_BASE
from llamp.lp import evaluate
from llamp.params import LogGPS


# ---------------------------------------------------------------------------- read-only check
@pytest.mark.parametrize(
    "cypher, found",
    [
        ("MATCH (o:Op) RETURN o.vid", []),
        ("create (n:X)", ["CREATE"]),
        ("MERGE (r:Run {id: 1}) ON CREATE SET r.name = 'a'", ["MERGE", "CREATE", "SET"]),
        ("MATCH (o:Op) DETACH DELETE o", ["DETACH", "DELETE"]),
        ("MATCH (o:Op) REMOVE o.label", ["REMOVE"]),
        ("DROP TABLE Op", ["DROP"]),
        ("COPY Op FROM 'ops.csv'", ["COPY"]),
        ("LOAD CSV FROM 'file:///x' AS row RETURN row", ["LOAD"]),
        ("MATCH (n) RETURN n; CREATE (m)", ["several statements", "CREATE"]),
        ("MATCH (n) RETURN n /* harmless */ // SET\nSET n.x = 1", ["SET"]),
        # keywords that are not clauses
        ("MATCH (o:Op) WHERE o.label = 'CREATE (x)' RETURN o", []),
        (
            "RETURN \"DELETE everything\" AS s, 'it\\'s SET' AS t",
            ["SET"],
        ),  # quotes read with and without escapes
        ("RETURN \"DELETE everything\" AS s, 'its SET' AS t", []),
        ("MATCH (o:Op) RETURN o.set, o.delete AS merge", ["MERGE"]),  # aliases are quoted
        ("MATCH (o:Op) RETURN o.set, o.delete AS `merge`", []),
        ("MATCH (c:Create)-[:SET]->(d) RETURN {remove: 1, drop: 2} AS m", []),
        ("MATCH (o:Op) WHERE o.kind = $delete RETURN `create`", []),
        ("// CREATE in a comment\nMATCH (n) RETURN n", []),
    ],
)
def test_write_clauses_are_found_by_tokens_not_substrings(cypher, found):
    assert write_clauses(cypher) == found


# ---------------------------------------------------------------------------- catalogue shape
def test_catalogue_texts_use_only_declared_parameters():
    for query in CATALOGUE.values():
        for backend in ("ladybug", "neo4j"):
            used = set(re.findall(r"\$([A-Za-z_]\w*)", query.text(backend)))
            assert used <= set(query.params) | {"run"}, query.name
            assert "CALL {" not in query.text(backend) and "apoc." not in query.text(backend)
    differing = sorted(q.name for q in CATALOGUE.values() if not q.portable)
    assert differing == ["edges_in_seq_ranges", "ops_in_seq_ranges"]  # list indexing base
    assert set(SELECTIONS) == {
        "in_ranks",
        "in_trace_window",
        "in_start_window",
        "near_critical",
        "in_seq_ranges",
    }


# ---------------------------------------------------------------------------- loaded store
@dataclass(frozen=True)
class Loaded:
    store: GraphStore
    graph: ExecutionGraph
    start_ns: np.ndarray
    slack_ns: np.ndarray
    critical: np.ndarray
    analysis: str
    backend: str

    def assert_floats(self, actual, expected) -> None:
        """Exact: Neo4j and LadybugDB keep every bit of a double."""
        np.testing.assert_array_equal(actual, expected)


@pytest.fixture(scope="module", params=BACKENDS)
def loaded(request, tmp_path_factory, sweep3d) -> Iterator[Loaded]:
    """Sweep3D stored once per backend, with a critical-path analysis written back."""
    if request.param == "ladybug":
        uri = str(tmp_path_factory.mktemp("queries") / "store")
    else:
        uri = request.getfixturevalue("neo4j_server")
        wipe(uri)
    ev = evaluate(sweep3d, LogGPS())
    with open_store(uri) as store:
        store.put_run(sweep3d, "sweep3d")
        per_vertex = pd.DataFrame(
            {
                "vid": np.arange(sweep3d.num_vertices),
                "start_ns": ev.start_ns,
                "slack_ns": ev.slack_ns,
                "critical": ev.critical,
            }
        )
        analysis = store.write_analysis(
            "sweep3d",
            "critical",
            {"L_ns": 3000.0},
            {"runtime_ns": ev.runtime_ns},
            per_vertex=per_vertex,
        )
        yield Loaded(store, sweep3d, ev.start_ns, ev.slack_ns, ev.critical, analysis, request.param)


def _same(selected: ExecutionGraph, expected: ExecutionGraph) -> None:
    assert selected.num_vertices == expected.num_vertices
    assert selected.equals(expected)
    np.testing.assert_array_equal(selected.t_trace_ns, expected.t_trace_ns)


def test_rank_pair_traffic_equals_numpy(loaded):
    g = loaded.graph
    sends, recvs = g.messages()
    pair = g.rank[sends].astype(np.int64) * g.num_ranks + g.rank[recvs]
    count = np.bincount(pair, minlength=g.num_ranks**2)
    volume = np.bincount(pair, weights=g.size[sends], minlength=g.num_ranks**2).astype(np.int64)
    nz = np.flatnonzero(count)
    frame = loaded.store.run_query("rank_pair_traffic", "sweep3d")
    assert frame["src"].tolist() == (nz // g.num_ranks).tolist()
    assert frame["dst"].tolist() == (nz % g.num_ranks).tolist()
    assert frame["messages"].tolist() == count[nz].tolist()
    assert frame["bytes"].tolist() == volume[nz].tolist()
    assert frame["bytes"].dtype == np.int64 and frame["bytes"].sum() == g.summary().bytes


def test_rank_summary_equals_graph_summary(loaded):
    g = loaded.graph
    summary = g.summary()
    frame = loaded.store.run_query("rank_summary", "sweep3d")
    assert frame["rank"].tolist() == list(range(g.num_ranks))
    # Sweep3D costs are whole nanoseconds: the sums are exact in any order
    assert frame["calc_ns"].tolist() == summary.calc_ns_per_rank
    for column, kind in (("sends", SEND), ("recvs", RECV)):
        assert (
            frame[column].tolist()
            == np.bincount(g.rank[g.kind == kind], minlength=g.num_ranks).tolist()
        )
    sent = np.bincount(
        g.rank[g.kind == SEND], weights=g.size[g.kind == SEND], minlength=g.num_ranks
    )
    got = np.bincount(g.rank[g.kind == RECV], weights=g.size[g.kind == RECV], minlength=g.num_ranks)
    assert frame["bytes_sent"].tolist() == sent.astype(np.int64).tolist()
    assert frame["bytes_received"].tolist() == got.astype(np.int64).tolist()
    assert frame["ops"].tolist() == np.bincount(g.rank).tolist()
    assert frame["sends"].sum() == summary.sends and frame["bytes_sent"].sum() == summary.bytes


def test_heaviest_messages_equal_numpy(loaded):
    g = loaded.graph
    sends, recvs = g.messages()
    order = np.lexsort((sends, -g.size[sends]))[:25]
    frame = loaded.store.run_query("heaviest_messages", "sweep3d", limit=25)
    assert frame["send_vid"].tolist() == sends[order].tolist()
    assert frame["recv_vid"].tolist() == recvs[order].tolist()
    assert frame["size"].tolist() == g.size[sends[order]].tolist()
    assert frame["src"].tolist() == g.rank[sends[order]].tolist()


@pytest.mark.parametrize("ranks", [[0], [1, 2], [3, 0, 3], [0, 1, 2, 3]])
def test_rank_subset_equals_subgraph(loaded, ranks):
    g = loaded.graph
    selected = loaded.store.select("sweep3d", ranks=ranks)
    _same(selected, g.subgraph(np.isin(g.rank, ranks)))
    assert selected.meta["parent"] == "sweep3d"


def test_trace_window_equals_subgraph(loaded):
    g = loaded.graph
    t0, t1 = 5.0e9, 9.0e9
    _same(
        loaded.store.select("sweep3d", trace_window_ns=(t0, t1)),
        g.subgraph((g.t_trace_ns >= t0) & (g.t_trace_ns < t1)),
    )


def test_start_window_of_an_analysis_equals_subgraph(loaded):
    g = loaded.graph
    t0, t1 = 1.0e10, 1.2e10
    selected = loaded.store.select("sweep3d", analysis=loaded.analysis, start_window_ns=(t0, t1))
    _same(selected, g.subgraph((loaded.start_ns >= t0) & (loaded.start_ns < t1)))


def test_ranks_and_window_combine(loaded):
    g = loaded.graph
    t0, t1 = 2.0e9, 4.0e9
    selected = loaded.store.select("sweep3d", ranks=[1, 3], trace_window_ns=(t0, t1))
    mask = np.isin(g.rank, [1, 3]) & (g.t_trace_ns >= t0) & (g.t_trace_ns < t1)
    _same(selected, g.subgraph(mask))


def test_critical_candidates_at_zero_slack_are_the_engine_critical_path(loaded):
    frame = loaded.store.run_query(
        "critical_candidates", "sweep3d", analysis=loaded.analysis, eps_ns=0.0
    )
    assert sorted(frame["vid"]) == np.flatnonzero(loaded.critical).tolist()
    assert frame["critical"].all()
    assert frame["start_ns"].is_monotonic_increasing
    np.testing.assert_array_equal(frame["slack_ns"], 0.0)
    vid = frame["vid"].to_numpy()
    loaded.assert_floats(frame["start_ns"], loaded.start_ns[vid])


def test_near_critical_candidates_and_their_messages(loaded):
    g = loaded.graph
    eps = 50_000.0
    near = loaded.slack_ns <= eps
    frame = loaded.store.run_query(
        "critical_candidates", "sweep3d", analysis=loaded.analysis, eps_ns=eps
    )
    assert sorted(frame["vid"]) == np.flatnonzero(near).tolist()
    assert frame["critical"].tolist() == loaded.critical[frame["vid"]].tolist()
    sends, recvs = g.messages()
    joined = near[sends] & near[recvs]
    messages = loaded.store.run_query(
        "critical_messages", "sweep3d", analysis=loaded.analysis, eps_ns=eps
    )
    assert sorted(zip(messages["send_vid"], messages["recv_vid"], strict=True)) == sorted(
        zip(sends[joined].tolist(), recvs[joined].tolist(), strict=True)
    )
    assert messages["size"].tolist() == g.size[messages["send_vid"]].tolist()
    _same(
        loaded.store.select("sweep3d", analysis=loaded.analysis, slack_le_ns=eps), g.subgraph(near)
    )


def _first_seq(g: ExecutionGraph, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(seq of every vertex, per rank the seq of its first op of collective call #k)."""
    seq = np.arange(g.num_vertices) - g.rank_bounds()[g.rank]
    first = [seq[(g.rank == r) & (g.tag == COLL_TAG_BASE + k)].min() for r in range(g.num_ranks)]
    return seq, np.array(first)


def test_iteration_window_between_collectives_equals_subgraph(loaded):
    g = loaded.graph
    seq, lo = _first_seq(g, 10)
    _, hi = _first_seq(g, 20)
    mask = (seq >= lo[g.rank]) & (seq < hi[g.rank])
    selected = loaded.store.select("sweep3d", collectives=(10, 20))
    _same(selected, g.subgraph(mask))
    assert 0 < selected.num_vertices < g.num_vertices
    _, lo = _first_seq(g, 30)
    _same(loaded.store.select("sweep3d", collectives=(30, None)), g.subgraph(seq >= lo[g.rank]))
    with pytest.raises(InputError, match="no collective call #99"):
        loaded.store.select("sweep3d", collectives=(10, 99))


def test_every_catalogue_table_returns_its_declared_columns(loaded):
    params = {
        "collective_first_ops": {"tags": [COLL_TAG_BASE + 1]},
        "critical_candidates": {"analysis": loaded.analysis, "eps_ns": 0.0},
        "critical_messages": {"analysis": loaded.analysis, "eps_ns": 0.0},
        "heaviest_messages": {"limit": 3},
        "rank_pair_traffic": {},
        "rank_summary": {},
    }
    for name, values in params.items():
        frame = loaded.store.run_query(name, "sweep3d", **values)
        assert list(frame.columns) == list(CATALOGUE[name].columns), name
        assert len(frame) > 0, name


def test_selection_errors_are_clear(loaded):
    store = loaded.store
    with pytest.raises(InputError, match=r"ranks \[7\] not in run 'sweep3d' \(0..3\)"):
        store.select("sweep3d", ranks=[0, 7])
    with pytest.raises(InputError, match="need analysis=<analysis id>"):
        store.select("sweep3d", slack_le_ns=0.0)
    with pytest.raises(InputError, match="is empty"):
        store.select("sweep3d", trace_window_ns=(5.0, 5.0))
    with pytest.raises(InputError, match="at least one of"):
        store.select("sweep3d")
    with pytest.raises(InputError, match="no analysis 'nope'"):
        store.run_query("critical_candidates", "sweep3d", analysis="nope", eps_ns=0.0)
    with pytest.raises(QueryError):
        store.query("MATCH (o:Op) RETURN o.no_such_property AS x, nosuchfunction(1) AS y")


def test_an_analysis_of_another_run_is_refused(loaded):
    loaded.store.put_run(tiny_graph(), "tiny")
    try:
        with pytest.raises(InputError, match="belongs to run 'sweep3d', not 'tiny'"):
            loaded.store.select("tiny", analysis=loaded.analysis, slack_le_ns=0.0)
    finally:
        loaded.store.delete_run("tiny")


def test_subgraph_of_a_selection_is_evaluable(loaded):
    selected = loaded.store.select("sweep3d", ranks=[0, 1])
    runtime = evaluate(selected, LogGPS()).runtime_ns
    expected = evaluate(
        loaded.graph.subgraph(np.isin(loaded.graph.rank, [0, 1])), LogGPS()
    ).runtime_ns
    assert runtime == expected and MESSAGE in selected.edge_kind
