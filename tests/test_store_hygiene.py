"""Disk hygiene of the embedded store: what killed writers left is removed by the next writer,
``--replace`` and ``runs delete`` remove the old run's graph file, ``llamp runs`` shows the size
on disk. Files are counted before and after."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import llamp

from llamp.ingest.synthetic import stencil_with_vertices


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hygiene") / "s.npz"
    stencil_with_vertices(2000, ranks=4).save(path)
    return path


def _files(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in (home / "lowered").rglob("*"))


def _dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
    )
    return int(proc.stdout)


@pytest.mark.slow
def test_replace_and_delete_leave_one_graph_file_then_none(tmp_path, small):
    home = tmp_path / "home"
    llamp("ingest", str(small), "--name", "a", home=home)
    assert [Path(f).name.startswith("run-") for f in _files(home)].count(True) == 1
    for _ in range(3):
        llamp("ingest", str(small), "--name", "a", "--replace", home=home)
    files = [f for f in _files(home) if Path(f).suffix == ".npz"]
    assert len(files) == 1, files
    llamp("runs", "delete", "a", "-y", home=home)
    assert [f for f in _files(home) if Path(f).suffix == ".npz"] == []


@pytest.mark.slow
def test_the_next_writer_removes_what_killed_writers_left(tmp_path, small):
    home = tmp_path / "home"
    llamp("ingest", str(small), "--name", "a", home=home)
    (folder,) = (home / "lowered").iterdir()
    kept = set(_files(home))
    dead, alive = (
        _dead_pid(),
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]),
    )
    try:
        left = [
            folder / f".saving-{dead}-0123456789ab.npz",  # put_run's file, killed mid-write
            folder / f".saving-{dead}-0123456789ab.npz.{dead}.spill.npz",
            folder / f"run-1-0123456789abcdef.npz.{dead}.lowering.npz",  # load_run's
            folder / "run-99-0123456789abcdef.npz",  # the file of a run that is gone
        ]
        for path in left:
            path.write_bytes(b"x" * 1000)
        scratch = folder / f".run-1-0123456789abcdef.npz.{dead}.k2j3h4g5"
        scratch.mkdir()
        (scratch / "src.bin").write_bytes(b"x" * 1000)
        busy = folder / f".saving-{alive.pid}-0123456789ab.npz"  # a writer still at work
        busy.write_bytes(b"x")
        llamp("ingest", str(small), "--name", "b", home=home)  # the next writer
        after = set(_files(home))
        assert not any(str(p.relative_to(home)) in after for p in [*left, scratch])
        assert str(busy.relative_to(home)) in after
        assert kept <= after and len(after - kept) == 2  # run b's file, and the busy one
    finally:
        alive.kill()
        alive.wait()


def test_runs_shows_the_size_on_disk(tmp_path, small):
    home = tmp_path / "home"
    llamp("ingest", str(small), "--name", "a", home=home)
    out = llamp("runs", home=home).stdout
    assert "on disk:" in out and "database" in out and "graph files" in out
    listed = json.loads(llamp("runs", "--json", home=home).stdout)
    assert [r["name"] for r in listed["runs"]] == ["a"]
    on_disk = listed["disk_bytes"]
    graph_files = sum(p.stat().st_blocks * 512 for p in (home / "lowered").rglob("*.npz"))
    assert on_disk["graph_files"] == graph_files > small.stat().st_size // 2
    assert on_disk["database"] > 0
    assert on_disk["total"] == on_disk["graph_files"] + on_disk["database"]
    assert listed["store"] == str(home / "store")
