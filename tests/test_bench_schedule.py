"""``bench_schedule``: on a small stencil every step gives a CPU time, and the T it reports is
the schedule pass's own T at L = 3 µs."""

from __future__ import annotations

from benchmarks import bench_schedule
from llamp.ingest.synthetic import stencil_with_vertices
from llamp.lp.schedule import schedule
from llamp.params import LogGPS


def test_every_step_is_timed_and_t_is_the_passs(monkeypatch):
    monkeypatch.delenv("LOGGOPSIM", raising=False)
    rows = bench_schedule.measure(2000)
    by_metric = {r["metric"]: r["value"] for r in rows}
    steps = [m for m in by_metric if m.endswith(": CPU")]
    assert len(steps) == 5 + 3 and all(by_metric[m] >= 0.0 for m in steps)
    walls = [m for m in by_metric if m.endswith(": wall")]
    assert len(walls) == 3 and all(by_metric[m] > 0.0 for m in walls)
    assert by_metric["passes of the walks"] >= 6  # one per walk at least
    graph = stencil_with_vertices(2000, ranks=16, alltoall_every=10)
    params = LogGPS(
        L=3000.0, o=1500.0, G=0.0, S=65535, nic="serial", order="schedule", rendezvous="loggopsim"
    )
    assert by_metric["T at L = 3 µs"] == schedule(graph, params).runtime
