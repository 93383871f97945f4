"""The embedded store's fast paths (``benchmarks/RESULTS.md``) keep the store's
promises: auto-committed ``COPY`` statements still never leave a partial run visible, and the
native Arrow read-back returns exactly the stored graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from store_graphs import chain_graph, tiny_graph

from llamp.errors import StoreError
from llamp.graph import CALC, ExecutionGraph
from llamp.graphdb import open_store
from llamp.graphdb.ladybug import LadybugStore


def _count(store, cypher: str) -> int:
    return int(store.query(cypher).iloc[0, 0])


def _failing_at(monkeypatch: pytest.MonkeyPatch, marker: str) -> None:
    """Make the embedded store's statement containing ``marker`` fail."""
    original = LadybugStore._execute

    def execute(self, cypher, params):
        if marker in cypher:
            raise StoreError(f"injected failure at {marker}")
        return original(self, cypher, params)

    monkeypatch.setattr(LadybugStore, "_execute", execute)


@pytest.mark.parametrize("marker", ["COPY NEXT", "COPY MSG", "SET r.complete = true"])
def test_a_load_failing_after_its_ops_are_in_leaves_nothing(tmp_path: Path, monkeypatch, marker):
    tiny = tiny_graph()
    graph = chain_graph(4, 500)
    with open_store(str(tmp_path / "store")) as store:
        store.put_run(tiny, "tiny")
        _failing_at(monkeypatch, marker)
        with pytest.raises(StoreError, match="injected failure"):
            store.put_run(graph, "big")
        monkeypatch.undo()
        assert [r.name for r in store.list_runs()] == ["tiny"]
        assert _count(store, "MATCH (r:Run) RETURN count(r)") == 1
        assert _count(store, "MATCH (o:Op) RETURN count(o)") == tiny.num_vertices
        assert _count(store, "MATCH ()-[e:NEXT]->() RETURN count(e)") == int(
            np.count_nonzero(tiny.edge_kind == 0)
        )
        store.put_run(graph, "big")
        assert store.load_run("big").equals(graph)


def test_a_replacement_failing_half_way_keeps_the_old_run(tmp_path: Path, monkeypatch):
    old, new = chain_graph(2, 50), chain_graph(4, 300)
    with open_store(str(tmp_path / "store")) as store:
        store.put_run(old, "run")
        _failing_at(monkeypatch, "COPY MSG")
        with pytest.raises(StoreError, match="injected failure"):
            store.put_run(new, "run", replace=True)
        monkeypatch.undo()
        assert store.load_run("run").equals(old)
        store.put_run(new, "run", replace=True)
        assert store.load_run("run").equals(new)
        assert _count(store, "MATCH (o:Op) RETURN count(o)") == new.num_vertices


def test_an_incomplete_run_left_by_a_dead_writer_is_removed_on_open(tmp_path: Path):
    graph = chain_graph(3, 200)
    with open_store(str(tmp_path / "store")) as store:
        store.put_run(graph, "big")
        store._write("MATCH (r:Run) SET r.complete = false")  # as if killed before the flip
        assert store.list_runs() == []
    with open_store(str(tmp_path / "store"), read_only=True) as reader:
        assert reader.list_runs() == []  # readers never see it
    with open_store(str(tmp_path / "store")) as store:
        assert _count(store, "MATCH (o:Op) RETURN count(o)") == 0
        assert _count(store, "MATCH ()-[e:MSG]->() RETURN count(e)") == 0


def _calc_only(ranks: int, per_rank: int) -> ExecutionGraph:
    """No messages and no irequires: two of the three relationship tables stay empty."""
    n = ranks * per_rank
    vid = np.arange(n)
    chain = vid[(vid % per_rank) < per_rank - 1]
    return ExecutionGraph.from_arrays(
        ranks,
        rank=vid // per_rank,
        kind=np.full(n, CALC),
        cost_ns=vid * 0.5,
        size=np.zeros(n),
        peer=np.zeros(n),
        tag=np.zeros(n),
        edge_src=chain,
        edge_dst=chain + 1,
        edge_kind=np.zeros(chain.size),
        meta={"name": "calcs"},
    )


@pytest.mark.parametrize(
    "graph",
    [tiny_graph(), chain_graph(5, 400), _calc_only(3, 4), _calc_only(1, 1)],
    ids=["labels and trace times", "chain", "calcs only", "one vertex"],
)
def test_native_read_back_is_exact(tmp_path: Path, graph: ExecutionGraph):
    with open_store(str(tmp_path / "store")) as store:
        store.put_run(chain_graph(2, 10), "other")  # keys of another run must not leak in
        store.put_run(graph, "g")
    with open_store(str(tmp_path / "store"), read_only=True) as store:
        back = store.load_run("g")
    assert back.equals(graph, labels=graph.label is not None)
    assert (back.label is None) == (graph.label is None)
    assert (back.t_trace_ns is None) == (graph.t_trace_ns is None)
    if graph.t_trace_ns is not None:
        assert np.array_equal(back.t_trace_ns, graph.t_trace_ns)
    assert np.array_equal(back.cost_ns, graph.cost_ns)
