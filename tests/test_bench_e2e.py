"""The data-path benchmark's table (benchmarks/bench_e2e.py): stages per side, T compared."""

from __future__ import annotations

import sys

from benchmarks.bench_e2e import DATA_PATH_STAGES, data_path_table, whole_process


def _run(T: float, peak: float) -> dict:
    run = {stage: [1.5, peak, 1.25] for stage in DATA_PATH_STAGES}
    return {**run, "T_ns": T, "vertices": 99376}


def test_table_lists_every_stage_of_every_side_and_compares_T():
    table = data_path_table({100000: {"before": [_run(1.0, 300.0)], "after": [_run(1.0, 200.0)]}})
    lines = table.splitlines()
    assert lines[0].startswith("| graph | stage | before: wall (s) | before: CPU (s)")
    report = next(line for line in lines if "| report |" in line)
    assert report.split("|")[3:9] == [" 1.50 ", " 1.25 ", " 300 ", " 1.50 ", " 1.25 ", " 200 "]
    assert "equal on every side" in lines[-1]
    assert len(lines) == 2 + len(DATA_PATH_STAGES) + 1


def test_a_differing_T_is_flagged_and_a_missing_side_is_a_dash():
    results = {
        100000: {"before": [_run(1.0, 300.0)], "after": [_run(2.0, 200.0)]},
        1000000: {"after": [_run(3.0, 250.0)]},
    }
    table = data_path_table(results)
    assert "DIFFERS" in table
    row = next(line for line in table.splitlines() if "1.5" in line and "| —" in line)
    assert row.count("—") == 3


def test_whole_process_reports_peak_rss_and_cpu_time():
    seconds, peak_mb, out, cpu = whole_process(
        [sys.executable, "-c", "import numpy; print(numpy.ones(30_000_000).sum())"]
    )
    assert out.strip() == "30000000.0"
    assert peak_mb > 200  # the 240 MB array was resident: the process's own peak
    assert seconds > 0 and cpu > 0
