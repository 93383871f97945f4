"""Counting trace records must not depend on where the file is cut into reads."""

from __future__ import annotations

from llamp.ingest.tracing import _count_records


def test_records_split_across_read_boundaries_are_counted_once(tmp_path):
    line = b"MPI_Send:1:2:3\n"  # 15 bytes: markers fall on every offset of the 4 MiB reads
    n = (1 << 22) // len(line) * 3 + 7
    path = tmp_path / "pmpi-trace-rank-0.txt"
    path.write_bytes(b"# header\n" + line * n)
    assert _count_records(path) == n
