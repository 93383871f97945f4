"""The graph store on every backend: exact round trips, run management, analyses write-back,
read-only Cypher, and failures that leave nothing corrupted (docs/architecture.md §Graph store)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from store_graphs import SWEEP3D, chain_graph, closed_port

from llamp.errors import InputError, QueryError, StoreError
from llamp.graph import ExecutionGraph
from llamp.graphdb import open_store

TESTS = Path(__file__).parent


def _count(store, cypher: str, **params) -> int:
    return int(store.query(cypher, params).iloc[0, 0])


# ---------------------------------------------------------------------------- round trips
def test_tiny_graph_round_trip_keeps_every_column(store, tiny):
    info = store.put_run(tiny, "tiny")
    assert (info.name, info.ranks, info.vertices, info.edges, info.messages, info.bytes) == (
        "tiny",
        3,
        10,
        11,
        3,
        28,
    )
    assert info.has_t_trace and info.has_label and info.format == "hand"
    back = store.load_run("tiny")
    assert back.equals(tiny, labels=True)
    np.testing.assert_array_equal(back.t_trace_ns, tiny.t_trace_ns)
    assert back.meta["collectives"] == {"bcast": "binomial"} and back.name == "tiny"


def test_sweep3d_round_trip_is_exact(store, sweep3d):
    info = store.put_run(sweep3d, "sweep3d")
    assert info.vertices == 24084 and info.edges == sweep3d.num_edges
    back = store.load_run("sweep3d")
    assert back.equals(sweep3d)
    np.testing.assert_array_equal(back.t_trace_ns, sweep3d.t_trace_ns)
    assert back.name == "sweep3d" and back.meta["format"] == "liballprof"
    assert {**back.summary().as_dict(), "name": None} == {
        **sweep3d.summary().as_dict(),
        "name": None,
    }


def test_read_back_columns_are_compact_and_wide_values_exact(store, tiny):
    """The read-back gives 32-bit edge ends, sizes and tags where they fit, and keeps a 5 GiB
    message and a 2^40 tag exact in 64 bits (from the database, then from its mapped file)."""
    store.put_run(tiny, "tiny")
    back = store.load_run("tiny")
    assert back.edge_src.dtype == back.size.dtype == back.tag.dtype == np.int32
    wide = ExecutionGraph.from_arrays(
        2,
        rank=[0, 0, 1, 1],
        kind=[0, 1, 2, 0],
        cost_ns=[100.0, 0.0, 0.0, 50.0],
        size=[0, 5 << 30, 5 << 30, 0],
        peer=[0, 1, 0, 0],
        tag=[0, 1 << 40, 1 << 40, 0],
        edge_src=[0, 1, 2],
        edge_dst=[1, 2, 3],
        edge_kind=[0, 2, 0],
    )
    store.put_run(wide, "wide")
    for _ in range(2):  # the database, then the graph file kept for the run
        back = store.load_run("wide")
        assert back.equals(wide)
        assert back.size.dtype == back.tag.dtype == np.int64
        assert int(back.size[1]) == 5 << 30 and int(back.tag[2]) == 1 << 40


def test_arbitrary_doubles_round_trip_bit_for_bit(store, backend, tiny):
    rng = np.random.default_rng(7)
    graph = type(tiny).from_arrays(
        tiny.num_ranks,
        rank=tiny.rank,
        kind=tiny.kind,
        cost_ns=np.where(tiny.kind == 0, rng.random(10) * 1e9, 0.0),
        size=tiny.size,
        peer=tiny.peer,
        tag=tiny.tag,
        edge_src=tiny.edge_src,
        edge_dst=tiny.edge_dst,
        edge_kind=tiny.edge_kind,
        t_trace_ns=rng.random(10) * 1e12,
        meta={"name": "doubles"},
    )
    store.put_run(graph, "doubles")
    back = store.load_run("doubles")
    assert back.equals(graph)
    np.testing.assert_array_equal(back.t_trace_ns, graph.t_trace_ns)


def test_graph_without_optional_columns_round_trips(store, tiny):
    bare = type(tiny).from_arrays(
        tiny.num_ranks,
        rank=tiny.rank,
        kind=tiny.kind,
        cost_ns=tiny.cost_ns,
        size=tiny.size,
        peer=tiny.peer,
        tag=tiny.tag,
        edge_src=tiny.edge_src,
        edge_dst=tiny.edge_dst,
        edge_kind=tiny.edge_kind,
        meta={"name": "bare"},
    )
    info = store.put_run(bare, "bare")
    assert not info.has_t_trace and not info.has_label
    back = store.load_run("bare")
    assert back.equals(bare) and back.t_trace_ns is None and back.label is None


# ---------------------------------------------------------------------------- runs
def test_runs_are_listed_found_and_deleted_with_their_analyses(store, tiny):
    store.put_run(tiny, "b")
    store.put_run(tiny, "a")
    assert [r.name for r in store.list_runs()] == ["a", "b"]
    assert store.has_run("a") and not store.has_run("c")
    store.write_analysis(
        "a",
        "predict",
        {"L": 3000.0},
        {"runtime_ns": 1.0},
        per_vertex=pd.DataFrame(
            {
                "vid": [0, 1],
                "start_ns": [0.0, 1.0],
                "slack_ns": [0.0, 2.0],
                "critical": [True, False],
            }
        ),
    )
    run_id = store.run_info("a").id
    store.delete_run("a")
    assert [r.name for r in store.list_runs()] == ["b"]
    assert store.list_analyses() == []
    assert _count(store, "MATCH (o:Op) WHERE o.run = $id RETURN count(o) AS n", id=run_id) == 0
    assert _count(store, "MATCH (a:Analysis) RETURN count(a) AS n") == 0
    assert store.load_run("b").equals(tiny)


def test_unknown_run_names_the_stored_ones(store, tiny):
    store.put_run(tiny, "tiny")
    with pytest.raises(InputError, match=r"no run named 'nope' .*stored runs: tiny"):
        store.load_run("nope")
    with pytest.raises(InputError, match="no run named"):
        store.delete_run("nope")


def test_existing_name_needs_replace_and_replace_swaps_atomically(store, tiny):
    bigger = chain_graph(3, 40)
    store.put_run(tiny, "app")
    with pytest.raises(InputError, match="already exists.*replace=True"):
        store.put_run(bigger, "app")
    assert store.load_run("app").equals(tiny)  # untouched
    old_id = store.run_info("app").id
    info = store.put_run(bigger, "app", replace=True)
    assert info.id != old_id and info.vertices == bigger.num_vertices
    assert store.load_run("app").equals(bigger)
    assert [r.name for r in store.list_runs()] == ["app"]
    assert _count(store, "MATCH (o:Op) WHERE o.run = $id RETURN count(o) AS n", id=old_id) == 0
    assert _count(store, "MATCH (r:Run) RETURN count(r) AS n") == 1


def test_invalid_run_name_is_refused(store, tiny):
    for name in ("", "   ", "a\nb"):
        with pytest.raises(InputError, match="invalid run name"):
            store.put_run(tiny, name)
    assert store.list_runs() == []


# ---------------------------------------------------------------------------- analyses
def test_analysis_write_back_round_trips(store, tiny):
    store.put_run(tiny, "tiny")
    per_vertex = pd.DataFrame(
        {
            "vid": np.arange(9, -1, -1),
            "start_ns": np.linspace(0.0, 900.5, 10),
            "slack_ns": np.array([0, 0, 5, 0, 1.5, 0, 0, 2, 0, 0], dtype=float),
            "critical": np.array([1, 1, 0, 1, 0, 1, 1, 0, 1, 1], dtype=bool),
        }
    )
    aid = store.write_analysis(
        "tiny",
        "critical",
        {"L_ns": 3000.0, "engine": "graph"},
        {"runtime_ns": 1234.5, "lambda_L": 2},
        per_vertex=per_vertex,
    )
    info, frame = store.load_analysis(aid)
    assert (info.id, info.run, info.kind, info.vertices) == (aid, "tiny", "critical", 10)
    assert info.params == {"L_ns": 3000.0, "engine": "graph"}
    assert info.scalars == {"runtime_ns": 1234.5, "lambda_L": 2}
    expected = per_vertex.sort_values("vid").reset_index(drop=True)
    pd.testing.assert_frame_equal(frame, expected, check_dtype=False)
    assert [a.id for a in store.list_analyses("tiny")] == [aid]
    scalar_only = store.write_analysis("tiny", "tolerance", {}, {"L_1pct_ns": 5.0e3})
    assert store.load_analysis(scalar_only)[1].empty
    store.delete_analysis(aid)
    assert [a.id for a in store.list_analyses()] == [scalar_only]


def test_bad_per_vertex_results_are_refused_and_nothing_is_written(store, tiny):
    store.put_run(tiny, "tiny")
    good = {"vid": [0], "start_ns": [0.0], "slack_ns": [0.0], "critical": [True]}
    for change, message in (
        ({"vid": [10]}, "not a vertex of run 'tiny'"),
        ({"vid": [0.5]}, "must be integer"),
        ({"slack_ns": [float("nan")]}, "NaN"),
    ):
        with pytest.raises(InputError, match=message):
            store.write_analysis("tiny", "x", {}, {}, per_vertex=pd.DataFrame({**good, **change}))
    with pytest.raises(InputError, match="lacks column"):
        store.write_analysis("tiny", "x", {}, {}, per_vertex=pd.DataFrame({"vid": [0]}))
    with pytest.raises(InputError, match="invalid analysis kind"):
        store.write_analysis("tiny", "two words", {}, {})
    assert store.list_analyses() == []


# ---------------------------------------------------------------------------- Cypher
def test_cypher_is_read_only_unless_write(store, tiny):
    store.put_run(tiny, "tiny")
    with pytest.raises(QueryError, match=r"not an allowed read \(CREATE\).*--write"):
        store.query("CREATE (:Run {id: 99, name: 'x', complete: true})")
    assert [r.name for r in store.list_runs()] == ["tiny"]
    frame = store.query("MATCH (r:Run) WHERE r.complete = true RETURN r.name AS name, 'SET x' AS s")
    assert frame.to_dict("list") == {"name": ["tiny"], "s": ["SET x"]}
    store.query("MATCH (r:Run {name: $n}) SET r.format = 'edited'", {"n": "tiny"}, write=True)
    assert store.run_info("tiny").format == "edited"


def test_cypher_syntax_error_is_a_query_error(store):
    with pytest.raises(QueryError):
        store.query("MATCH (o:Op RETURN o")
    with pytest.raises(InputError, match="empty"):
        store.query("   ")


def test_catalogue_query_needs_its_parameters(store, tiny):
    store.put_run(tiny, "tiny")
    with pytest.raises(InputError, match="needs parameter.*limit"):
        store.run_query("heaviest_messages", "tiny")
    with pytest.raises(InputError, match="no catalogue query named 'nope'"):
        store.run_query("nope", "tiny")


def test_read_only_store_refuses_writes(store_uri, tiny):
    with open_store(store_uri) as writer:
        writer.put_run(tiny, "tiny")
    with open_store(store_uri, read_only=True) as reader:
        assert reader.load_run("tiny").equals(tiny)
        with pytest.raises((QueryError, StoreError)):
            reader.query("MATCH (r:Run) SET r.name = 'x'", write=True)


# ---------------------------------------------------------------------------- failures
def test_store_path_that_cannot_be_created_is_a_store_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match="cannot create the store directory.*writable"):
        open_store(str(blocker / "store"))
    with pytest.raises(StoreError, match="writable"):
        open_store("/proc/llamp-store")


def test_unreachable_bolt_server_is_a_store_error():
    port = closed_port()
    with pytest.raises(
        StoreError, match=rf"cannot reach the graph server at bolt://neo4j@127.0.0.1:{port}"
    ):
        open_store(f"bolt://neo4j:secret@127.0.0.1:{port}")


def test_unknown_uri_scheme_is_refused():
    with pytest.raises(InputError, match="unknown store URI"):
        open_store("http://example.invalid/store")


def _child(code: str) -> subprocess.Popen[str]:
    script = f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n" + textwrap.dedent(code)
    return subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=TESTS.parent,
    )


def _wait_for(child: subprocess.Popen[str], marker: str) -> None:
    assert child.stdout is not None
    for line in child.stdout:
        if line.startswith(marker):
            return
    child.wait()
    pytest.fail(f"the loader exited ({child.returncode}) before {marker!r}: {child.stderr.read()}")


_LOADER = """
from store_graphs import chain_graph
from llamp.graphdb import open_store
from llamp.graphdb.ladybug import LadybugStore
from llamp.graphdb.neo4j import Neo4jStore

def tell(after):
    def hook(cls, name):
        original = getattr(cls, name)
        def wrapped(self, *args, **kwargs):
            result = original(self, *args, **kwargs)
            text = str(args[0])
            if after in text:
                print("STEP", text[:40], flush=True)
            return result
        setattr(cls, name, wrapped)
    hook(LadybugStore, "_execute")
    hook(Neo4jStore, "_write_all")

tell({after!r})
graph = chain_graph({ranks}, {steps})
with open_store(sys.argv[1] if len(sys.argv) > 1 else {uri!r}) as store:
    print("OPENED", flush=True)
    store.put_run(graph, "big")
print("DONE", flush=True)
"""


@pytest.mark.slow
def test_a_killed_load_leaves_nothing_and_can_be_redone(store_uri, backend, tiny):
    embedded = backend == "ladybug"
    ranks, steps = (8, 12_500) if embedded else (4, 3_000)
    with open_store(store_uri) as before:
        before.put_run(tiny, "tiny")
    after = "COPY Op" if embedded else "UNWIND"
    child = _child(_LOADER.format(after=after, ranks=ranks, steps=steps, uri=store_uri))
    try:
        _wait_for(child, "STEP")  # ops are in, edges are loading
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL
    with open_store(store_uri) as store:
        assert [r.name for r in store.list_runs()] == ["tiny"]
        assert not store.has_run("big")
        if not embedded:  # the dead load is younger than the lease: hidden, then removed
            assert store.cleanup(older_than_s=0) == ["big"]
        assert _count(store, "MATCH (r:Run) RETURN count(r) AS n") == 1
        assert _count(store, "MATCH (o:Op) RETURN count(o) AS n") == tiny.num_vertices
        assert store.load_run("tiny").equals(tiny)
        graph = chain_graph(ranks, steps)
        store.put_run(graph, "big")
        assert store.load_run("big").equals(graph)


@pytest.mark.slow
def test_a_second_writer_during_a_load_waits_with_a_message_then_proceeds(tmp_path):
    path = str(tmp_path / "store")
    child = _child(_LOADER.format(after="COPY Op", ranks=8, steps=25_000, uri=path))
    notes: list[str] = []
    try:
        _wait_for(child, "OPENED")
        with open_store(path, notify=notes.append) as store:  # waits for the loader
            assert store.has_run("big")
        out, err = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    assert notes and "being written by process" in notes[0] and "waiting" in notes[0]
    with open_store(path) as store:
        assert store.load_run("big").equals(chain_graph(8, 25_000))


def test_cpu_and_nic_streams_survive_the_store(store, tiny):
    """GOAL's cpu/nic columns are kept with the run (whole run and a rank selection)."""
    graph = tiny
    cpu = np.arange(graph.num_vertices, dtype=np.int16) % 2
    nic = (np.arange(graph.num_vertices, dtype=np.int16) // 2) % 3
    names = ("rank", "kind", "cost_ns", "size", "peer", "tag", "edge_src", "edge_dst", "edge_kind")
    streams = ExecutionGraph.from_arrays(
        graph.num_ranks, **{k: getattr(graph, k) for k in names}, cpu=cpu, nic=nic, meta=graph.meta
    )
    store.put_run(streams, "streams")
    back = store.load_run("streams")
    np.testing.assert_array_equal(back.cpu, cpu)
    np.testing.assert_array_equal(back.nic, nic)
    assert "streams" not in back.meta
    assert store.run_info("streams").as_dict()["meta"]["streams"] == ["cpu", "nic"]
    part = store.select("streams", ranks=[0])
    keep = graph.rank == 0
    np.testing.assert_array_equal(part.streams("cpu"), cpu[keep])
    np.testing.assert_array_equal(part.streams("nic"), nic[keep])


def test_a_stored_run_is_read_back_once_then_from_its_graph_file(store, tiny, monkeypatch):
    """The first read-back writes the run and its event graph to the file the store keeps for
    it; the next read maps that file (no database query, no lowering); deleting the run
    removes it."""
    from llamp.lp import engine_for
    from llamp.params import LogGPS

    store.put_run(tiny, "kept")
    first = store.load_run("kept")
    path = store.lowered_path(store.run_info("kept"))
    assert path.is_file()

    def no_database(*args, **kwargs):
        raise AssertionError("read the database again")

    monkeypatch.setattr(type(store), "_run_pages", no_database)
    again = store.load_run("kept")
    assert again.equals(first, labels=True) and again.source == path
    params = LogGPS()
    assert engine_for(again).point(params).runtime_ns == engine_for(tiny).point(params).runtime_ns
    store.delete_run("kept")
    assert not path.exists()


# ---------------------------------------------------------------------------- batched loads
def _rows(store, run: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every Op property and every relationship of ``run`` (by vid), as stored."""
    run_id = store.run_info(run).id
    ops = store.query(
        "MATCH (o:Op) WHERE o.run = $run RETURN o.vid AS vid, o.rank AS rank, o.seq AS seq, "
        "o.kind AS kind, o.cost_ns AS cost_ns, o.size AS size, o.peer AS peer, o.tag AS tag, "
        "o.t_trace_ns AS t_trace_ns, o.label AS label ORDER BY vid",
        {"run": run_id},
    )
    edges = [
        store.query(
            f"MATCH (a:Op)-[e:{rel}]->(b:Op) WHERE a.run = $run RETURN a.vid AS src, "
            f"b.vid AS dst, {'e.size' if rel == 'MSG' else '-1'} AS size",
            {"run": run_id},
        ).assign(rel=rel)
        for rel in ("NEXT", "ISTART", "MSG")
    ]
    edges = pd.concat(edges).sort_values(["rel", "src", "dst", "size"], kind="stable")
    return ops.reset_index(drop=True), edges.reset_index(drop=True)


def test_run_rows_in_small_batches_are_the_rows_of_one_batch():
    """The row builder alone: batches of 100 rows concatenate to the single batch, table by
    table, in order (ops in vertex order, each relationship type in edge order)."""
    from random_graphs import random_graph

    from llamp.graphdb.tables import RunRows

    graph = random_graph(3, ranks=4, steps=2000)

    def tables(batch_rows: int) -> dict[str, pa.Table]:
        parts: dict[str, list[pa.Table]] = {}
        for name, table in RunRows(graph, 7, batch_rows).batches():
            assert table.num_rows <= batch_rows
            parts.setdefault(name, []).append(table)
        return {name: pa.concat_tables(p) for name, p in parts.items()}

    whole, batched = tables(1 << 30), tables(100)
    assert list(whole) == list(batched) == ["Op", "NEXT", "ISTART", "MSG"]
    for name in whole:
        assert batched[name].equals(whole[name]), name
    assert whole["Op"].num_rows == graph.num_vertices > 1000
    assert sum(t.num_rows for n, t in whole.items() if n != "Op") == graph.num_edges
    assert whole["Op"].column("key").to_pylist()[:2] == [7 << 32, (7 << 32) + 1]


def test_a_run_loaded_in_tiny_batches_has_the_rows_of_one_batch(store, monkeypatch, tiny):
    """Batches of 3 rows (several per table) store exactly the rows of one batch per table,
    and read back to the same graph."""
    from llamp.graphdb.store import GraphStore

    graph = tiny
    store.put_run(graph, "whole")
    monkeypatch.setattr(GraphStore, "load_batch_rows", 3)
    store.put_run(graph, "batched")
    for whole, batched in zip(_rows(store, "whole"), _rows(store, "batched"), strict=True):
        pd.testing.assert_frame_equal(whole, batched)
    assert len(_rows(store, "batched")[1]) == graph.num_edges
    assert store.load_run("batched").equals(graph, labels=True)


def test_a_failure_in_a_middle_batch_leaves_no_run_and_cleanup_removes_its_rows(
    store, store_uri, backend, monkeypatch, tiny
):
    """The load fails after some batches of ops and edges are in: no run is visible, its
    graph file is gone, and the rows it wrote are removed (by the failed load itself, or —
    when that clean-up fails too — by the next writer's cleanup)."""
    from llamp.graphdb.store import GraphStore
    from llamp.graphdb.tables import RunRows

    store.put_run(tiny, "kept")
    ops_before = _count(store, "MATCH (o:Op) RETURN count(o) AS n")
    monkeypatch.setattr(GraphStore, "load_batch_rows", 4)
    original = RunRows.batches

    def failing(self):
        for i, batch in enumerate(original(self)):
            if i == 5:  # ops (3 batches) and the first NEXT batches are in
                raise StoreError("disk full (simulated)")
            yield batch

    with monkeypatch.context() as patched:
        patched.setattr(RunRows, "batches", failing)
        patched.setattr(type(store), "_delete_run_rows", lambda self, run_id: None)
        with pytest.raises(StoreError, match="simulated"):
            store.put_run(tiny, "broken", graph_file=True)
    assert [r.name for r in store.list_runs()] == ["kept"]
    assert not store.has_run("broken")
    assert list(store._graph_files().iterdir()) == []  # no file, not even a temporary one
    assert _count(store, "MATCH (o:Op) RETURN count(o) AS n") > ops_before  # left behind
    if backend == "ladybug":
        store.close()
        with open_store(store_uri, notify=lambda text: None) as again:  # cleanup on open
            assert _count(again, "MATCH (o:Op) RETURN count(o) AS n") == ops_before
            assert _count(again, "MATCH (r:Run) RETURN count(r) AS n") == 1
            assert not list(Path(store_uri).glob(".load-*"))
    else:
        assert store.cleanup(older_than_s=0) == ["broken"]
        assert _count(store, "MATCH (o:Op) RETURN count(o) AS n") == ops_before
        assert _count(store, "MATCH (r:Run) RETURN count(r) AS n") == 1


# ---------------------------------------------------------------------------- graph files
def test_a_run_stored_with_its_graph_file_is_never_read_back(store, monkeypatch, tiny):
    """``graph_file=True`` (``llamp ingest --name``) writes the run's graph file before the
    rows: the first read maps it, with the metadata a read-back gives."""
    store.put_run(tiny, "from-db")
    from_db = store.load_run("from-db")
    info = store.put_run(tiny, "with-file", graph_file=True)
    path = store.lowered_path(info)
    assert path.is_file() and not [p for p in path.parent.iterdir() if p.name.startswith(".")]

    def no_database(*args, **kwargs):
        raise AssertionError("read the database")

    monkeypatch.setattr(type(store), "_run_pages", no_database)
    mapped = store.load_run("with-file")
    assert mapped.source == path and mapped.equals(tiny, labels=True)
    np.testing.assert_array_equal(mapped.t_trace_ns, tiny.t_trace_ns)
    assert mapped.meta == {**from_db.meta, "name": "with-file"}
    assert tiny.source is None and tiny.name == "tiny"  # the caller's graph keeps its own
    store.delete_run("with-file")
    assert not path.exists()


def test_a_graph_file_that_cannot_be_written_does_not_fail_the_load(store, monkeypatch, tiny):
    import llamp.lp.lowered

    def refuse(*args, **kwargs):
        raise OSError("read-only file system (simulated)")

    monkeypatch.setattr(llamp.lp.lowered, "save_graph", refuse)
    info = store.put_run(tiny, "no-file", graph_file=True)
    assert not store.lowered_path(info).exists()
    monkeypatch.undo()
    assert store.load_run("no-file").equals(tiny, labels=True)  # read back, as before


def test_ingest_into_the_store_writes_the_graph_file_report_maps_it(tmp_path, monkeypatch):
    """``llamp ingest --name`` leaves the graph file; ``llamp info RUN`` maps it (the
    database's read-back is never used)."""
    from click.testing import CliRunner

    from llamp.cli import cli
    from llamp.graphdb.ladybug import LadybugStore

    monkeypatch.setenv("LLAMP_HOME", str(tmp_path / "home"))
    store = str(tmp_path / "store")
    runner = CliRunner()
    result = runner.invoke(cli, ["--store", store, "ingest", str(SWEEP3D), "--name", "s"])
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "home" / "lowered").glob("*/run-*.npz"))) == 1

    def no_database(*args, **kwargs):
        raise AssertionError("read the database")

    monkeypatch.setattr(LadybugStore, "_run_pages", no_database)
    result = runner.invoke(cli, ["--store", store, "info", "s", "--json"])
    assert result.exit_code == 0, result.output
    assert '"messages": 6052' in result.output


@pytest.mark.parametrize("which", ["tiny", "random"])
def test_a_run_read_back_in_pages_is_the_run_read_whole(store, monkeypatch, tiny, which):
    """Pages of a few vertices, scattered into the graph one by one, give exactly the graph
    of all pages' rows at once (every column, dtype and edge in order), and that is the run."""
    from random_graphs import random_graph

    from llamp.graphdb.tables import graph_from_pages

    graph = tiny if which == "tiny" else random_graph(5, ranks=4, steps=600)
    info = store.put_run(graph, which)
    monkeypatch.setattr(type(store), "page_vertices", 3 if which == "tiny" else 37)
    pages = list(store._run_pages(info))
    assert len(pages) == -(-graph.num_vertices // type(store).page_vertices) > 3
    kw = {
        "meta": info.meta,
        "vertices": info.vertices,
        "with_t_trace": info.has_t_trace,
        "with_label": info.has_label,
    }
    paged = graph_from_pages(info.ranks, iter(pages), edges=info.edges, **kw)
    one_page = (pa.concat_tables([p[0] for p in pages]), pa.concat_tables([p[1] for p in pages]))
    whole = graph_from_pages(info.ranks, [one_page], edges=info.edges, **kw)
    columns = ("rank", "kind", "cost_ns", "size", "peer", "tag", "t_trace_ns", "label")
    for name in (*columns, "edge_src", "edge_dst", "edge_kind"):
        a, b = getattr(paged, name), getattr(whole, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert paged.meta == whole.meta
    assert paged.equals(graph, labels=True)
    assert store.load_run(which).equals(graph, labels=True)  # load_run reads these pages


def test_a_page_with_missing_ops_is_a_damaged_run(tiny):
    from llamp.graphdb.tables import RunRows, graph_from_pages

    ops = RunRows(tiny, 1).ops(0, tiny.num_vertices)
    edges = pa.table(
        {
            "src": pa.array([], pa.int64()),
            "dst": pa.array([], pa.int64()),
            "kind": pa.array([], pa.int8()),
        }
    )
    kw = {
        "meta": {},
        "vertices": tiny.num_vertices,
        "edges": 0,
        "with_t_trace": False,
        "with_label": False,
    }
    with pytest.raises(StoreError, match="damaged"):
        graph_from_pages(3, [(ops.slice(1), edges)], **kw)
    with pytest.raises(StoreError, match="damaged"):
        graph_from_pages(3, [(ops.slice(0, 4), edges)], **kw)


def test_edge_ends_named_by_node_ids_become_vids_and_a_foreign_one_is_damage(tiny):
    """A backend may name an edge's far end by its own node id (Neo4j's ``id(b)``): the ids,
    in any order against the vids and spread over pages, give back the run's edges; an id no
    op of the run has is a damaged run."""
    from llamp.graphdb.tables import RunRows, graph_from_pages

    n = tiny.num_vertices
    node = np.random.default_rng(3).permutation(n).astype(np.int64) * 7 + 100
    ops = RunRows(tiny, 1).ops(0, n).append_column("node", pa.array(node))
    src, dst, kind = tiny.edge_src, tiny.edge_dst, tiny.edge_kind

    def page(lo: int, hi: int, far: np.ndarray) -> tuple[pa.Table, pa.Table]:
        mine = (src >= lo) & (src < hi)
        edges = pa.table({"src": src[mine], "dst_node": far[mine], "kind": kind[mine]})
        return ops.slice(lo, hi - lo), edges

    kw = {
        "meta": {},
        "vertices": n,
        "edges": tiny.num_edges,
        "with_t_trace": tiny.t_trace_ns is not None,
        "with_label": False,
    }
    mid = n // 2
    back = graph_from_pages(
        tiny.num_ranks, [page(0, mid, node[dst]), page(mid, n, node[dst])], **kw
    )
    assert back.equals(tiny)
    foreign = node[dst].copy()
    foreign[-1] = 99  # no op's id
    with pytest.raises(StoreError, match="outside the run"):
        graph_from_pages(tiny.num_ranks, [page(0, n, foreign)], **kw)


TRACES = TESTS / "data" / "traces"
#: One sample per reader (llamp.ingest.FORMATS): rank-file traces, OTF2, DUMPI, SimGrid
#: time-independent, GOAL text, Chakra execution traces, and a saved .npz graph.
FORMAT_SAMPLES = {
    "liballprof": TRACES / "liballprof" / "sweep3d-2x2",
    "otf2": TRACES / "otf2" / "sstmacro-10ranks",
    "dumpi": TRACES / "dumpi" / "sst-dumpi-4ranks",
    "simgrid": TRACES / "simgrid-ti" / "ti-32ranks",
    "goal": TRACES / "goal" / "non_blocking.goal",
    "chakra": TESTS / "data" / "chakra" / "custom_ring_allreduce_8npus_1MB",
}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::llamp.ingest.events.IngestWarning")
def test_every_trace_format_reads_back_exactly(store, tmp_path):
    from llamp.ingest import FORMATS, read

    graphs = {fmt: read(path) for fmt, path in FORMAT_SAMPLES.items()}
    graphs["goal"].save(tmp_path / "g.npz")
    graphs["npz"] = read(tmp_path / "g.npz")
    assert set(graphs) == set(FORMATS)
    for fmt, graph in graphs.items():
        store.put_run(graph, fmt)
    for fmt, graph in graphs.items():
        back = store.load_run(fmt)
        assert back.equals(graph), fmt
        for column in ("t_trace_ns", "label"):
            mine, theirs = getattr(graph, column), getattr(back, column)
            assert (mine is None) == (theirs is None), (fmt, column)
            if mine is not None:
                assert np.array_equal(np.asarray(mine), np.asarray(theirs)), (fmt, column)
