"""Concurrency of the embedded store: many readers, readers during an ingest, two
ingests serialised, crash clean-up by writers only. Real processes, small graphs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from store_graphs import chain_graph, tiny_graph

from llamp.graphdb import open_store
from llamp.graphdb.locking import WriterLock, writer_active

HERE = Path(__file__).parent


def _python(code: str, *args: str) -> subprocess.Popen:
    script = f"import sys; sys.path.insert(0, {str(HERE)!r})\n" + textwrap.dedent(code)
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _llamp(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "llamp", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def stored(tmp_path: Path) -> str:
    uri = str(tmp_path / "store")
    with open_store(uri) as store:
        store.put_run(tiny_graph(), "tiny")
    return uri


def test_four_predictions_and_pipeline_reads_run_at_once(stored):
    procs = [_llamp("--store", stored, "predict", "tiny", "--json") for _ in range(4)]
    procs += [
        _llamp("--store", stored, "runs"),
        _llamp("--store", stored, "cypher", "MATCH (r:Run) RETURN r.name AS n"),
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "in use" not in err
    assert not writer_active(Path(stored))


def test_readers_during_an_ingest_see_the_last_complete_state(stored):
    writer = _python(
        """
        from store_graphs import chain_graph
        from llamp.graphdb import open_store
        graph = chain_graph(8, 30000)
        with open_store(sys.argv[1]) as store:
            print("open", flush=True)
            store.put_run(graph, "big")
        """,
        stored,
    )
    assert writer.stdout.readline().strip() == "open"
    seen = []
    while writer.poll() is None:
        with open_store(stored, read_only=True) as store:
            names = [r.name for r in store.list_runs()]
            assert store.load_run("tiny").num_vertices == 10
        seen.append(names)
    _, err = writer.communicate()
    assert writer.returncode == 0, err
    assert seen and seen[0] == ["tiny"], "a reader ran while the ingest held the store"
    assert all(names in (["tiny"], ["big", "tiny"]) for names in seen)
    with open_store(stored, read_only=True) as store:
        assert [r.name for r in store.list_runs()] == ["big", "tiny"]


def test_two_ingests_of_one_name_serialise_and_the_second_is_refused(stored, tmp_path):
    graph = tmp_path / "g.npz"
    chain_graph(4, 20000).save(graph)
    first = _llamp("--store", stored, "ingest", str(graph), "--name", "dup")
    time.sleep(0.3)
    second = _llamp("--store", stored, "ingest", str(graph), "--name", "dup")
    results = [(p.wait(timeout=300), *p.communicate()) for p in (first, second)]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, _, err in results if code == 2)
    assert "already exists" in refused and "Traceback" not in refused
    with open_store(stored, read_only=True) as store:
        assert [r.name for r in store.list_runs()].count("dup") == 1


def test_a_second_writer_waits_with_a_message(stored):
    messages = []
    with WriterLock(Path(stored)):
        assert writer_active(Path(stored))
        waiter = _python(
            """
            from llamp.graphdb import open_store
            with open_store(sys.argv[1]) as store:
                print("writing", flush=True)
            """,
            stored,
        )
        time.sleep(2.0)
        assert waiter.poll() is None, "the second writer did not wait"
        with open_store(stored, read_only=True, notify=messages.append) as store:
            assert [r.name for r in store.list_runs()] == ["tiny"]
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0 and out.strip() == "writing"
    assert "being written by process" in err and "waiting" in err
    assert messages == []  # a reader beside a writer does not wait


def test_a_killed_ingest_is_cleaned_by_the_next_writer_only(stored):
    writer = _python(
        """
        import os, signal
        import llamp.graphdb.ladybug as lb
        from store_graphs import chain_graph
        from llamp.graphdb import open_store
        original = lb.LadybugStore._write
        def write(self, cypher, params=None):
            original(self, cypher, params)
            if cypher.startswith("COPY"):
                os.kill(os.getpid(), signal.SIGKILL)  # killed between two COPYs
        lb.LadybugStore._write = write
        with open_store(sys.argv[1]) as store:
            store.put_run(chain_graph(4, 2000), "killed")
        """,
        stored,
    )
    writer.communicate(timeout=120)
    assert writer.returncode == -signal.SIGKILL
    assert not writer_active(Path(stored))
    assert list(Path(stored).glob(".load-*"))  # the killed load's scratch files
    notes: list[str] = []
    started = time.monotonic()
    with open_store(stored, read_only=True, notify=notes.append) as store:
        assert [r.name for r in store.list_runs()] == ["tiny"]
        left = store.query("MATCH (r:Run) WHERE r.complete = false RETURN count(r) AS n")
    assert time.monotonic() - started < 20
    assert int(left.iloc[0, 0]) == 1, "the reader cleaned up"
    assert not any("removing" in n for n in notes)
    with open_store(stored, notify=notes.append) as store:
        assert [r.name for r in store.list_runs()] == ["tiny"]
    assert any("removing what a killed load left" in n and "'killed'" in n for n in notes)
    assert not list(Path(stored).glob(".load-*"))
    with open_store(stored, read_only=True) as store:
        left = store.query("MATCH (r:Run) WHERE r.complete = false RETURN count(r) AS n")
        assert int(left.iloc[0, 0]) == 0


def test_writer_lock_records_its_holder_and_releases_on_close(stored):
    with open_store(stored) as store:
        assert writer_active(Path(stored))
        text = (Path(stored) / "writer.lock").read_text()
        assert f"process {os.getpid()}" in text
        store.put_run(tiny_graph(), "tiny2")
    assert not writer_active(Path(stored))


@pytest.mark.integration
@pytest.mark.parametrize("backend", ["neo4j"])
def test_concurrent_bolt_ingests_of_one_name_cannot_both_succeed(store_uri, tmp_path):
    graph = tmp_path / "g.npz"
    chain_graph(2, 300).save(graph)
    procs = [_llamp("--store", store_uri, "ingest", str(graph), "--name", "dup") for _ in range(2)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    assert sorted(code for code, _, _ in results) == [0, 2], results
    refused = next(err for code, _, err in results if code == 2)
    assert "already exists" in refused or "by another load meanwhile" in refused
    with open_store(store_uri, read_only=True) as store:
        assert [r.name for r in store.list_runs()] == ["dup"]
        store_names = store.query("MATCH (r:Run) RETURN r.name AS n")["n"].tolist()
    assert store_names.count("dup") == 1
    with open_store(store_uri) as store:  # replace and delete keep names unique
        store.put_run(chain_graph(2, 10), "dup", replace=True)
        assert store.run_info("dup").vertices == 60
        store.delete_run("dup")
        store.put_run(chain_graph(2, 10), "dup")
        assert [r.name for r in store.list_runs()] == ["dup"]
