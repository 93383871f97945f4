"""``bench_hugepages``: each case measured on both sides, whole processes (a small graph, no
pause; no timing is asserted)."""

from __future__ import annotations

import os

import pytest

from benchmarks import bench_hugepages


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="needs GNU time")
def test_every_case_is_measured_with_huge_pages_on_and_off():
    rows = bench_hugepages.run(quick=True, repeat=1, pause=0.0)
    cases = {r["case"] for r in rows}
    assert len(cases) == 4 and any(c.startswith("sweep, 11 points") for c in cases)
    for case in cases:
        metrics = {r["metric"]: r["value"] for r in rows if r["case"] == case}
        for side in bench_hugepages.SIDES:
            assert metrics[f"{side}: wall"] > 0
            assert metrics[f"{side}: system"] >= 0
            if not case.startswith("first touch"):
                assert metrics[f"{side}: rss"] > 10  # MB: a whole llamp process
