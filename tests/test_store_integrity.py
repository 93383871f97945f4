"""No flipped bit goes unnoticed: every stored run carries a checksum of its contents, checked
when it is read back (docs/SECURITY.md, "Store integrity").

A changed row is a refusal naming the run ("run NAME is damaged") with exit 2; a damaged
graph file kept beside the store is rebuilt from the database with a note; ``llamp runs
check`` verifies on demand. Seeded single-byte flips in a copy of the embedded store's file
give a clean refusal or the identical graph, never a changed number.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_process import llamp

from llamp.errors import InputError
from llamp.graphdb import open_store


@pytest.fixture
def backend() -> str:
    return "ladybug"


@pytest.fixture
def stored(store_uri, sweep3d, tmp_path, monkeypatch) -> str:
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path / "home"))
    with open_store(store_uri) as store:
        store.put_run(sweep3d, "sweep3d", graph_file=True)
    return store_uri


def _member_data(path: Path, name: str) -> int:
    """Where the data of the (stored, uncompressed) member ``name`` of a graph file begins."""
    with zipfile.ZipFile(path) as archive:
        offset = archive.getinfo(name).header_offset
    header = path.read_bytes()[offset : offset + 30]  # the local file header
    return (
        offset
        + 30
        + int.from_bytes(header[26:28], "little")
        + int.from_bytes(header[28:30], "little")
    )


def _forget_graph_files(tmp_path: Path) -> None:
    shutil.rmtree(tmp_path / "home" / "lowered", ignore_errors=True)


def test_read_back_matches_the_checksum_taken_at_ingest(stored, sweep3d, tmp_path):
    _forget_graph_files(tmp_path)
    with open_store(stored, read_only=True) as store:
        info = store.run_info("sweep3d")
        assert info.checksum.startswith("llamp1:") and "checksum" not in info.meta
        assert store.load_run("sweep3d").equals(sweep3d)  # from the database, verified
        check = store.check_run("sweep3d")
    assert (check.status, check.graph_file) == ("ok", "ok")


def test_a_changed_row_is_refused_as_damage(stored, tmp_path, capsys):
    heaviest = "MATCH (o:Op) WITH max(o.cost_ns) AS top MATCH (o:Op) WHERE o.cost_ns = top "
    with open_store(stored) as store:
        store.query(heaviest + "SET o.cost_ns = o.cost_ns + 262144.0", write=True)
    _forget_graph_files(tmp_path)
    with open_store(stored, read_only=True) as store:
        with pytest.raises(InputError, match="run 'sweep3d' is damaged: its rows do not match"):
            store.load_run("sweep3d")
        check = store.check_run("sweep3d")
    assert check.status == "damaged" and "llamp runs delete sweep3d" in check.detail
    done = llamp("--store", stored, "runs", "check", home=tmp_path / "home", check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("llamp: error: run 'sweep3d' is damaged")
    done = llamp("--store", stored, "info", "sweep3d", home=tmp_path / "home", check=False)
    assert done.returncode == 2 and "is damaged" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_damaged_graph_file_is_rebuilt_from_the_store(stored, sweep3d, tmp_path, capsys):
    with open_store(stored, read_only=True) as store:
        path = store.lowered_path(store.run_info("sweep3d"))
    assert path.is_file()
    data = bytearray(path.read_bytes())
    data[_member_data(path, "cost_ns.npy") + 1000] ^= 0x10  # a column: its CRC fails when mapped
    path.write_bytes(bytes(data))
    with open_store(stored, read_only=True) as store:
        assert store.load_run("sweep3d").equals(sweep3d)
    err = capsys.readouterr().err
    assert "the graph file kept for run 'sweep3d' was damaged" in err
    assert "rebuilding it from the store" in err and len(err.strip().splitlines()) == 1
    with open_store(stored, read_only=True) as store:
        assert store.load_run("sweep3d").source == path  # written again, read as before


def test_runs_check_rebuilds_a_damaged_event_graph(stored, tmp_path):
    """The stored event graph (read only when an analysis runs) is checked by ``runs check``."""
    with open_store(stored, read_only=True) as store:
        path = store.lowered_path(store.run_info("sweep3d"))
    data = bytearray(path.read_bytes())
    data[-(len(data) // 20)] ^= 0x01  # near the end: the lowering's members
    path.write_bytes(bytes(data))
    done = llamp("--store", stored, "runs", "check", "--json", home=tmp_path / "home")
    assert [(c["status"], c["graph_file"]) for c in json.loads(done.stdout)] == [("ok", "rebuilt")]
    assert "was damaged" in done.stderr and "rebuilt it from the store" in done.stderr
    again = llamp("--store", stored, "runs", "check", "--json", home=tmp_path / "home")
    assert json.loads(again.stdout)[0]["graph_file"] == "ok"
    predicted = llamp("--store", stored, "predict", "sweep3d", "--json", home=tmp_path / "home")
    assert json.loads(predicted.stdout)["runtime_ns"] > 0


def test_a_damaged_event_graph_is_lowered_again_once_and_written_back(stored, sweep3d, tmp_path):
    """The first analysis that finds the stored event graph damaged lowers again and writes
    the file back (one note); the next process maps the new one, with no note and the same T."""
    with open_store(stored, read_only=True) as store:
        path = store.lowered_path(store.run_info("sweep3d"))
    data = bytearray(path.read_bytes())
    data[-(len(data) // 20)] ^= 0x01  # near the end: the lowering's members
    path.write_bytes(bytes(data))
    damaged = path.stat().st_ino
    first = llamp("--store", stored, "predict", "sweep3d", "--json", home=tmp_path / "home")
    (line,) = first.stderr.splitlines()
    assert re.fullmatch(
        r"llamp: note: the graph file kept for run 'sweep3d': its event graph is damaged "
        r"\(lowering_0_\w+\.npy: CRC mismatch\); lowered it again and wrote it back",
        line,
    ), line
    assert path.stat().st_ino != damaged  # renamed over the damaged one
    again = llamp("--store", stored, "predict", "sweep3d", "--json", home=tmp_path / "home")
    assert again.stderr == ""
    runtime = json.loads(first.stdout)["runtime_ns"]
    assert json.loads(again.stdout)["runtime_ns"] == runtime
    from llamp.lp.engine import engine_for
    from llamp.params import LogGPS

    assert runtime == engine_for(sweep3d).runtime(LogGPS())
    listed = sorted(p.name for p in path.parent.iterdir())
    assert listed == [path.name]  # no temporary left beside it
    done = llamp("--store", stored, "runs", "check", "--json", home=tmp_path / "home")
    assert [(c["status"], c["graph_file"]) for c in json.loads(done.stdout)] == [("ok", "ok")]


def test_an_inconsistent_event_graph_in_a_store_file_is_lowered_again(stored, sweep3d, capsys):
    """A sealed event graph that fails the structure checks (what only a bug could write) is,
    in a store's graph file, one more cache to rebuild: lowered again and written back."""
    import dataclasses

    from llamp.ingest.npz import read_npz
    from llamp.lp import lowered
    from llamp.lp.engine import engine_for
    from llamp.params import LogGPS
    from llamp.seal import Sealer

    params = LogGPS()
    with open_store(stored, read_only=True) as store:
        path = store.lowered_path(store.run_info("sweep3d"))
    graph = read_npz(path, lazy=True)
    key = lowered.lowering_key(lowered.rendezvous_count(graph, params.S), params)
    ev = lowered.persisted(graph, key)
    src = np.array(ev.src)
    src[-1] = ev.num_events  # an in-edge from a position that does not exist
    sizes, counts = lowered.message_sizes(graph)
    sealer = Sealer()
    graph.save(path, extra={lowered.SIZES: sizes, lowered.SIZE_COUNTS: counts}, sealer=sealer)
    lowered._append_lowering(path, 0, dataclasses.replace(ev, src=src), sealer)
    lowered._append_index(path, [lowered._entry(key[0], ev)], sealer)
    want = engine_for(sweep3d).runtime(params)
    for note in (True, False):
        with open_store(stored, read_only=True) as store:
            assert engine_for(store.load_run("sweep3d")).runtime(params) == want
        err = capsys.readouterr().err
        assert (
            "its event graph is inconsistent; lowered it again and wrote it back" in err
        ) == note


#: Reads run ``sweep3d`` of the store argv[1] and compares it with the graph file argv[2]:
#: prints "same", "changed" or "refused: …" (a process of its own: a flip may crash it).
_READ_BACK = """
import sys
import numpy as np
from llamp.errors import LlampError
from llamp.graph import ExecutionGraph
from llamp.graphdb import open_store
try:
    with open_store(sys.argv[1], read_only=True) as store:
        graph = store.load_run("sweep3d")
except LlampError as err:
    print("refused:", type(err).__name__, err)
    raise SystemExit(0)
want = ExecutionGraph.load(sys.argv[2])
same = graph.equals(want, labels=True) and np.array_equal(graph.t_trace_ns, want.t_trace_ns)
print("same" if same else "changed")
"""


@pytest.mark.slow
def test_single_byte_flips_never_change_a_number(stored, sweep3d, tmp_path):
    reference = tmp_path / "sweep3d.npz"
    sweep3d.save(reference)
    original = Path(stored) / "graph.lbug"
    data = original.read_bytes()
    rng = np.random.default_rng(20261127)
    nonzero = np.flatnonzero(np.frombuffer(data, np.uint8))
    outcomes = []
    for k, offset in enumerate(rng.choice(nonzero, 24, replace=False)):
        copy = tmp_path / f"flip-{k}"
        shutil.copytree(stored, copy, ignore=shutil.ignore_patterns("*.lock"))
        flipped = bytearray(data)
        flipped[int(offset)] ^= 1 << int(rng.integers(8))
        (copy / "graph.lbug").write_bytes(bytes(flipped))
        done = subprocess.run(
            [sys.executable, "-c", _READ_BACK, str(copy), str(reference)],
            capture_output=True,
            text=True,
            env={"LLAMP_HOME": str(tmp_path / f"home-{k}"), "PATH": "/usr/bin:/bin"},
            timeout=300,
        )
        line = done.stdout.strip() or f"exit {done.returncode}"
        outcomes.append((int(offset), line[:160]))
        shutil.rmtree(copy)
    changed = [o for o in outcomes if o[1].startswith("changed")]
    assert not changed, changed
    assert all(line == "same" or line.startswith("refused:") for _, line in outcomes), outcomes
