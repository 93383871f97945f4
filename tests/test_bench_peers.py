"""``bench_peers`` (llamp side by side with LogGOPSim): without LogGOPSim it is skipped with a
note; its process runner and LogGOPSim's output parser; with ``LOGGOPSIM`` set, one tiny
comparison end to end."""

from __future__ import annotations

import os
import sys

import pytest

from benchmarks import bench_peers
from benchmarks.__main__ import run_module


def test_without_loggopsim_the_benchmark_is_skipped_with_a_note(monkeypatch, capsys):
    monkeypatch.delenv("LOGGOPSIM", raising=False)
    rows = run_module("bench_peers", quick=True, repeat=1, full=False, loggopsim=None)
    assert len(rows) == 1 and rows[0]["case"].startswith("skipped: no LogGOPSim binary")
    assert "--loggopsim PATH or LOGGOPSIM" in capsys.readouterr().err


def test_a_given_path_that_is_not_an_executable_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("LOGGOPSIM", raising=False)
    with pytest.raises(SystemExit, match="not an executable file"):
        bench_peers.find_tools(str(tmp_path / "LogGOPSim"))
    monkeypatch.setenv("LOGGOPSIM", str(tmp_path))
    with pytest.raises(SystemExit, match="not an executable file"):
        bench_peers.find_tools(None)


def test_txt2bin_is_looked_up_next_to_loggopsim(tmp_path, monkeypatch):
    sim, t2b = tmp_path / "LogGOPSim", tmp_path / "txt2bin"
    for f in (sim, t2b):
        f.write_text("#!/bin/sh\n")
        f.chmod(0o755)
    monkeypatch.delenv("TXT2BIN", raising=False)
    assert bench_peers.find_tools(str(sim)) == (sim, t2b)


def test_loggopsim_runtime_is_read_from_its_summary_line():
    out = (
        b"LogGP network backend; size: 32 (1 CPUs, 1 NICs); L=3000, o=1500 g=0, G=6, O=0\n"
        b"PERFORMANCE: Processes: 32 \t Events: 93 \t Time: 0 s \t Speed: inf ev/s\n"
        b"Maximum finishing time at host 31: 30000 (3e-05 s)\n"
    )
    assert bench_peers.loggopsim_runtime(out) == 30000
    with pytest.raises(RuntimeError, match="Maximum finishing time"):
        bench_peers.loggopsim_runtime(b"Segmentation fault\n")


def test_run_process_gives_wall_time_peak_rss_cpu_time_and_stdout():
    code = "x = bytearray(64 << 20); print(len(x)); sum(range(3_000_000))"  # 64 MB, some CPU
    cpu: list[float] = []
    seconds, peak_mb, out = bench_peers.run_process([sys.executable, "-c", code], cpu)
    assert out == b"67108864\n" and seconds > 0 and peak_mb >= 64
    assert len(cpu) == 1 and 0 < cpu[0] < seconds + 1.0
    with pytest.raises(RuntimeError, match="exited 3"):
        bench_peers.run_process([sys.executable, "-c", "import sys; sys.exit(3)"])


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LOGGOPSIM"), reason="set LOGGOPSIM to a LogGOPSim binary")
def test_a_small_comparison_end_to_end(tmp_path):
    tools = bench_peers.find_tools(None)
    rows = bench_peers.compare(*bench_peers.stencil_goal(3000, tmp_path), tools, repeat=1)
    by_metric = {r["metric"]: r for r in rows}
    worst = next(r for r in rows if r["metric"].startswith("T, 11 points"))
    assert len(worst["llamp_T"]) == len(worst["loggopsim_T"]) == 11
    # the default model's one order is a measurement here (docs/model.md); re-scheduled at every
    # point under LogGOPSim's rendezvous, llamp's T is LogGOPSim's at all 11 points
    again = next(r for r in rows if r["metric"].startswith("T, 11 points, --order schedule, re-"))
    assert again["llamp_T"] == again["loggopsim_T"] and again["value"] == 0.0
    assert by_metric["11-point sweep: LogGOPSim peak RSS"]["value"] > 0
    # LogGOPSim's CPU time on 3,000 vertices is below GNU time's 10 ms resolution
    assert by_metric["11-point sweep: LogGOPSim CPU"]["value"] >= 0
    assert by_metric["11-point sweep: llamp CPU"]["value"] > 0
    assert by_metric["one point: llamp CPU"]["value"] > 0
    # the exact search found breakpoints; its yardstick is the same round's 11 LogGOPSim runs
    assert by_metric["critical latencies found in [0, 100 µs]"]["value"] > 0
    yardstick = "all critical latencies (llamp) vs 11 points: LogGOPSim"
    assert by_metric[yardstick]["value"] == by_metric["11-point sweep: LogGOPSim"]["value"]
    assert not list(tmp_path.iterdir())  # graph files removed


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LOGGOPSIM"), reason="set LOGGOPSIM to a LogGOPSim binary")
def test_the_pass_alone_beside_one_loggopsim_run_per_round(tmp_path):
    tools = bench_peers.find_tools(None)
    case, goal, _ = bench_peers.stencil_goal(3000, tmp_path)
    rows = bench_peers.pass_alone(case, goal, tools, repeat=2)
    by_metric = {r["metric"]: r for r in rows}
    first = by_metric["schedule pass alone, first call in a process"]
    one_run = by_metric["schedule pass alone: one LogGOPSim run"]
    assert len(first["runs"]) == len(one_run["runs"]) == 2
    assert all(s > 0 for s in first["runs"] + one_run["runs"])
    ratio = by_metric["schedule pass alone: one LogGOPSim run / first call"]["value"]
    assert ratio == pytest.approx(one_run["value"] / first["value"])
    assert not list(tmp_path.iterdir())  # graph files removed
