"""Neo4j's offline bulk path (``llamp.graphdb.neo4jimport``): runs written as CSV for
``neo4j-admin database import full`` come back from the imported database exactly as stored,
checksums included, and the database then takes Bolt ingests like any llamp store."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from store_graphs import chain_graph, tiny_graph

from llamp.errors import InputError
from llamp.graphdb.neo4jimport import write_import_files


def _awkward_labels():
    """tiny_graph with labels a CSV writer must quote: empty, comma, quote, line break."""
    graph = tiny_graph()
    labels = np.asarray(graph.label, dtype=object).copy()
    labels[:4] = ["", "a, b", 'say "hi"', "two\nlines"]
    graph.label = labels
    return graph


def _no_trace_times():
    graph = chain_graph(3, 40)
    graph.t_trace_ns = None
    assert graph.label is None
    return graph


def test_the_files_carry_the_runs_as_the_bolt_backend_stores_them(tmp_path):
    files = write_import_files([(tiny_graph(), "tiny"), (_no_trace_times(), "chain")], tmp_path)
    assert [label for label, _ in files.nodes] == ["Run", "Op", "Op"]
    assert [kind for kind, _ in files.relationships] == ["NEXT", "ISTART", "MSG"]
    assert files.runs == ("tiny", "chain") and not files.multiline
    with files.nodes[0][1].open() as handle:
        runs = list(csv.DictReader(handle))
    assert [(r["id:long"], r["name:string"], r["complete:boolean"]) for r in runs] == [
        ("1", "tiny", "true"),
        ("2", "chain", "true"),
    ]
    tiny_ops = files.nodes[1][1].read_text().splitlines()
    assert tiny_ops[0].split(",")[:3] == ["key:ID", "run:long", "vid:long"]
    assert tiny_ops[0].endswith("t_trace_ns:double,label:string")
    assert tiny_ops[1].startswith(f"{1 << 32},1,0,0,0,")
    chain_header = files.nodes[2][1].read_text().splitlines()[0]
    assert "t_trace_ns" not in chain_header and "label" not in chain_header
    msg = files.relationships[2][1].read_text().splitlines()
    assert msg[0] == ":START_ID,:END_ID,size:long" and len(msg) == 1 + 3 + 120
    args = files.admin_args()
    assert args[:4] == ["database", "import", "full", "--id-type=INTEGER"]
    assert args[-1] == "neo4j" and "--overwrite-destination=true" in args


def test_line_breaks_in_labels_turn_on_multiline_fields(tmp_path):
    files = write_import_files([(_awkward_labels(), "tiny")], tmp_path)
    assert files.multiline and "--multiline-fields=true" in files.admin_args()


def test_what_csv_cannot_carry_is_refused(tmp_path):
    graph = tiny_graph()
    graph.t_trace_ns = graph.t_trace_ns.copy()
    graph.t_trace_ns[2] = np.nan
    with pytest.raises(InputError, match="t_trace_ns holds a NaN"):
        write_import_files([(graph, "tiny")], tmp_path)
    with pytest.raises(InputError, match="unique"):
        write_import_files([(tiny_graph(), "a"), (tiny_graph(), "a")], tmp_path)
    with pytest.raises(InputError, match="invalid run name"):
        write_import_files([(tiny_graph(), "bad\nname")], tmp_path)


@pytest.mark.integration
@pytest.mark.slow
def test_an_imported_database_serves_the_runs_exactly(tmp_path, monkeypatch, sweep3d):
    from llamp.graphdb import open_store
    from llamp.graphdb.neo4jserver import Neo4jServer, admin_import, unavailable

    why = unavailable()
    if why is not None:
        pytest.skip(f"no Neo4j to test against: {why}")
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path / "llamp"))
    runs = {"awkward": _awkward_labels(), "chain": _no_trace_times(), "sweep3d": sweep3d}
    files = write_import_files(list(zip(runs.values(), runs, strict=True)), tmp_path / "csv")
    summary = admin_import(tmp_path / "dbms", files, heap="512m")
    assert "IMPORT DONE" in summary
    with Neo4jServer(heap="512m", pagecache="64m", home=tmp_path / "dbms") as server:
        with open_store(server.uri) as store:
            assert [r.name for r in store.list_runs()] == list(runs)
            for name, graph in runs.items():
                assert store.check_run(name).status == "ok", name
                assert store.load_run(name).equals(graph), name
            store.put_run(sweep3d, "over bolt")  # the constraints are in place now
            imported = store.run_query("rank_summary", "sweep3d")
            loaded = store.run_query("rank_summary", "over bolt")
            assert imported.equals(loaded) and len(imported) == sweep3d.num_ranks
            with pytest.raises(InputError, match="already exists"):
                store.put_run(sweep3d, "sweep3d")
