"""``bench_astra`` (ASTRA-sim's analytical backend beside llamp on the Chakra microbenchmarks):
skipped with a note without ASTRA-sim, a wrong path refused, ASTRA-sim's output read as the
last NPU to finish, and llamp's side at the ring's parameters."""

from __future__ import annotations

import pytest

from benchmarks import bench_astra
from benchmarks.__main__ import run_module


def test_without_astra_sim_the_benchmark_is_skipped_with_a_note(monkeypatch, capsys):
    monkeypatch.delenv("ASTRA_SIM", raising=False)
    rows = run_module("bench_astra", quick=True, repeat=1, full=False)
    assert len(rows) == 1 and rows[0]["case"].startswith("skipped: no ASTRA-sim binary")
    assert "--astra-sim PATH or ASTRA_SIM" in capsys.readouterr().err


def test_a_given_path_that_is_not_an_executable_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("ASTRA_SIM", str(tmp_path))
    with pytest.raises(SystemExit, match="not an executable file"):
        bench_astra.find_binary(None)


def test_t_is_the_last_npu_to_finish(tmp_path):
    fake = tmp_path / "astra"
    fake.write_text(
        "#!/bin/sh\n"
        "echo '[workload] [info] sys[0] finished, 100 cycles, exposed communication 100 cycles.'\n"
        "echo '[workload] [info] sys[1] finished, 250 cycles, exposed communication 250 cycles.'\n"
    )
    fake.chmod(0o755)
    trace = bench_astra.MICRO / "all_reduce" / "4npus_1MB"
    with pytest.raises(RuntimeError, match="finished 2 of 4 NPUs"):
        bench_astra.astra_sim_t(fake, trace, 4, tmp_path)
    assert bench_astra.astra_sim_t(fake, trace, 2, tmp_path) == 250.0


def test_llamp_side_without_hops_is_the_ring_all_reduce():
    """One channel of NCCL's Simple ring, hop latencies at 0, o = 0: each of the 2(P−1) steps
    moves n/P = 256 KiB, one pipeline piece: T = 2(P−1)·(L + (n/P − 1)·G)."""
    trace = bench_astra.MICRO / "all_reduce" / "4npus_1MB"
    G = 1e9 / (bench_astra.BANDWIDTH_GBPS * 2**30)
    bare = bench_astra.llamp_t(trace, "allreduce", "nccl_ring_simple", hops=False)
    assert bare == pytest.approx(6 * (bench_astra.LATENCY_NS + ((1 << 18) - 1) * G), rel=1e-9)
    assert bench_astra.llamp_t(trace, "allreduce", "nccl_ring_simple", hops=True) > bare
