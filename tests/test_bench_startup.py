"""``bench_startup``: the phase timers of one ``llamp`` process add up to its wall time and
name where it went (a tiny graph; no timing is asserted)."""

from __future__ import annotations

import sys

import pytest
from random_graphs import random_graph

from benchmarks import bench_startup
from benchmarks.timing import row
from llamp.ingest.goal import write_goal
from llamp.kernel import compiled_kernels
from llamp.lp.lowered import save_graph
from llamp.params import LogGPS


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    work = tmp_path_factory.mktemp("startup")
    graph = random_graph(2, ranks=4, steps=60, max_size=8192)
    npz = save_graph(graph, work / "g.npz", (LogGPS(),))
    goal = write_goal(graph, work / "g.goal").path
    return work, npz, goal


@pytest.mark.parametrize("mode", ["jit", "auto"])
def test_predict_phases_cover_the_process(files, mode, monkeypatch):
    if mode == "auto" and not compiled_kernels():
        pytest.skip("llamp._kernels not built from these sources")
    monkeypatch.setenv("LLAMP_KERNELS", mode)
    _, npz, _ = files
    timed = bench_startup.phases(sys.executable, ["predict", str(npz), *bench_startup.POINT], 1)
    assert set(timed) == {*bench_startup.PHASES, "background", "total"}
    assert all(v >= 0 for k, v in timed.items() if k != "other")
    assert timed["graph_load"] > 0 and timed["events"] > 0 and timed["point"] > 0
    if mode == "jit":
        assert timed["background"] > 0  # numba's set-up ran in its thread
    else:  # the compiled kernels: no numba in the process
        assert timed["background"] == 0 and timed["numba_import"] == 0
    parts = sum(timed[k] for k in bench_startup.PHASES)
    assert parts == pytest.approx(timed["total"], rel=0.05, abs=0.02)


def test_ingest_phases_and_whole_process_rows(files):
    work, _, goal = files
    argv = ["ingest", str(goal), "-o", str(work / "out.npz"), "--no-progress"]
    timed = bench_startup.phases(sys.executable, argv, 1)
    assert timed["read"] > 0 and timed["save"] > 0 and timed["events"] > 0
    parts = sum(timed[k] for k in bench_startup.PHASES)
    assert parts == pytest.approx(timed["total"], rel=0.05, abs=0.02)
    whole = bench_startup.whole_process(sys.executable, argv, 1)
    assert whole["wall"] > 0 and whole["cpu"] > 0 and 20 < whole["rss"] < 4000
    rows = bench_startup._rows("tiny", "ingest", timed, whole)
    metrics = [r["metric"] for r in rows]
    assert "ingest: whole process wall" in metrics
    assert f"ingest: {bench_startup.PHASES['read']}" in metrics
    assert all(r["benchmark"] == "startup" for r in rows)


def test_a_peer_runs_beside_ingest_and_the_table_shows_load_and_ratios(files):
    """The peer (here a Python that copies the GOAL file, standing for txt2bin) runs once per
    round; its rows, the ratios and the load averages reach the table."""
    work, _, goal = files
    argv = ["ingest", str(goal), "-o", str(work / "out2.npz"), "--no-progress"]
    copy = "import shutil, sys; shutil.copyfile(sys.argv[1], sys.argv[2])"
    peer = [sys.executable, "-c", copy, str(goal), str(work / "copy.goal")]
    results, peer_whole = bench_startup.compare({"": sys.executable}, argv, 2, peer)
    assert (work / "copy.goal").read_bytes() == goal.read_bytes()
    assert len(peer_whole["runs"]) == 2 and peer_whole["cpu"] > 0
    timed, whole = results[""]
    rows = bench_startup._rows("tiny", "ingest", timed, whole)
    rows += bench_startup._peer_rows("tiny", "txt2bin", peer_whole, whole)
    ratio = next(r for r in rows if r["metric"] == "txt2bin: llamp / txt2bin, CPU")
    assert ratio["value"] == pytest.approx(whole["cpu"] / peer_whole["cpu"])
    load = bench_startup.load_average()
    assert load >= 0
    rows.append(row("startup", "tiny", "ingest: load average before", load, ""))
    table = bench_startup._table(rows)
    assert "| tiny | txt2bin | whole process CPU |" in table
    assert "| tiny | ingest | load average before | " in table
