"""The training-step benchmark's table (benchmarks/bench_training.py) from stage records."""

from __future__ import annotations

from benchmarks.bench_training import STAGES, case_rows


def _run(seconds: float) -> dict:
    stages = [{"stage": "warm-up", "seconds": 9.0, "cpu_seconds": 9.0, "peak_mb": 100.0,
               "warmup": True}]  # fmt: skip
    stages += [
        {"stage": s, "seconds": seconds, "cpu_seconds": seconds / 2, "peak_mb": 500.0 + i,
         "warmup": False}
        for i, s in enumerate(STAGES)
    ]  # fmt: skip
    return {"stages": stages, "vertices": 10_670_592, "edges": 20_506_624, "messages": 5,
            "T_ns": 2.5e8, "lambda_L": 1.0, "lambda_G": 2.0, "budget": 9, "breakpoints": 0,
            "complete": True}  # fmt: skip


def test_rows_sum_the_three_stages_and_keep_the_largest_peak():
    written = {"seconds": 12.0, "nodes": 190_000, "bytes": 10}
    rows = case_rows(1024, written, [_run(2.0), _run(4.0), _run(3.0)], (1.5, 2.5))
    by = {r["metric"]: r for r in rows}
    whole = by["trace → report (the three stages)"]
    assert whole["value"] == 9.0 and whole["cpu_seconds"] == 4.5 and whole["limit"] == 60.0
    assert by["peak RSS (one process)"]["value"] == 502.0
    assert by["peak RSS (one process)"]["at_stage"] == STAGES[-1]
    assert by[STAGES[0]]["value"] == 3.0  # the median of 2, 4, 3
    assert by["  vertices (LogGOPS operations)"]["value"] == 10_670_592
    load = by["  load average before / after (1 min)"]
    assert (load["value"], load["after"]) == (1.5, 2.5)
    assert rows[0]["case"].startswith("1024 GPUs (dp 16 × tp 8 × pp 8), 1.07e+07 vertices")
