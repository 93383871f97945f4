"""The critical path of a GPU run split per stream into compute and exposed communication."""

from __future__ import annotations

import json

import pytest
from cli_process import llamp
from test_chakra import node, write_trace

from llamp.ingest import et_def_pb2 as pb
from llamp.ingest import read
from llamp.lp import critical_path
from llamp.params import LogGPS

P = LogGPS(L=3000.0, o=1500.0, G=0.5, S=1 << 20)
BYTES = 1001  # LogGP charges (s − 1)·G: 1000 · 0.5 ns = 500 ns


def _p2p(tmp_path, hidden_us: int):
    """Rank 0 computes 10 µs then sends; rank 1 computes ``hidden_us`` on its GPU meanwhile,
    receives on its communicator stream, then computes 5 µs after both."""
    rank0 = [
        node(0, pb.COMP_NODE, dur=10),
        node(1, pb.COMM_SEND_NODE, deps=[0], comm_dst=1, comm_src=0, comm_size=BYTES),
    ]
    rank1 = [
        node(0, pb.COMM_RECV_NODE, comm_src=0, comm_dst=1, comm_size=BYTES),
        node(1, pb.COMP_NODE, dur=hidden_us),
        node(2, pb.COMP_NODE, deps=[0, 1], dur=5),
    ]
    return read(write_trace(tmp_path / f"p2p{hidden_us}", [rank0, rank1]))


def test_exposed_message_is_communication_on_the_receiving_stream(tmp_path):
    """T = 10 µs + (L + 2o + 1000·G) + 5 µs: 15 µs compute, 6.5 µs exposed communication."""
    cp = critical_path(_p2p(tmp_path, 1), P)
    s = cp.streams
    assert cp.runtime_ns == pytest.approx(10_000 + 3000 + 2 * 1500 + 500 + 5_000)
    assert s.compute_ns == pytest.approx(15_000)
    assert s.communication_ns == pytest.approx(6_500)
    rows = {(r.rank, r.cpu): r for r in s.per_stream.itertuples()}
    assert rows[(0, 0)].compute_ns == pytest.approx(10_000)
    assert rows[(1, 0)].compute_ns == pytest.approx(5_000)
    comm = rows[(1, 3)]  # the world group's stream: the first communicator stream
    assert (comm.latency_ns, comm.overhead_ns, comm.bandwidth_ns) == pytest.approx(
        (3000, 3000, 500)
    )
    assert comm.compute_ns == 0 and comm.communication_ns == pytest.approx(6_500)
    assert (rows[(0, 0)].stream, comm.stream) == ("gpu", "world lane 0")
    assert s.exposed_fraction == pytest.approx(6_500 / cp.runtime_ns)


def test_message_hidden_behind_compute_is_not_exposed(tmp_path):
    """Rank 1 computes 30 µs while the message (16.5 µs after rank 0's start) arrives."""
    cp = critical_path(_p2p(tmp_path, 30), P)
    assert cp.runtime_ns == pytest.approx(35_000)
    assert cp.streams.compute_ns == pytest.approx(35_000)
    assert cp.streams.communication_ns == 0


def test_collective_rounds_count_as_communication(tmp_path):
    """A 2-GPU all-reduce between two kernels: compute is the kernels, the rest (messages and
    the protocol's per-hop joins) exposed communication, summing to T."""
    per_rank = [
        [
            node(0, pb.COMP_NODE, dur=20),
            node(1, pb.COMM_COLL_NODE, deps=[0], comm_type=pb.ALL_REDUCE, comm_size=1 << 16),
            node(2, pb.COMP_NODE, deps=[1], dur=7),
        ]
        for _ in range(2)
    ]
    graph = read(write_trace(tmp_path / "coll", per_rank))
    cp = critical_path(graph, P)
    s = cp.streams
    assert s.compute_ns == pytest.approx(27_000)
    assert s.compute_ns + s.communication_ns == pytest.approx(cp.runtime_ns)
    protocol = s.per_stream["protocol_ns"].sum()
    assert protocol > 0 and s.per_stream.query("cpu >= 3")["compute_ns"].sum() == 0


def test_mpi_graph_has_no_stream_split(tiny):
    assert critical_path(tiny, P).streams is None


def test_path_json_and_table_show_the_split(tmp_path):
    trace = write_trace(
        tmp_path / "cli",
        [
            [node(0, pb.COMP_NODE, dur=10),
             node(1, pb.COMM_SEND_NODE, deps=[0], comm_dst=1, comm_src=0, comm_size=BYTES)],
            [node(0, pb.COMM_RECV_NODE, comm_src=0, comm_dst=1, comm_size=BYTES),
             node(1, pb.COMP_NODE, deps=[0], dur=5)],
        ],
    )  # fmt: skip
    args = ["path", str(trace), "--L", "3us", "--o", "1.5us", "--G", "0.5ns/B"]
    out = llamp(*args, "--json", home=tmp_path)
    assert out.returncode == 0, out.stderr
    streams = json.loads(out.stdout)["streams"]
    assert streams["compute_ns"] == pytest.approx(15_000)
    assert streams["exposed_communication_ns"] == pytest.approx(6_500)
    text = llamp(*args, home=tmp_path).stdout
    assert "exposed communication" in text and "6.5 µs" in text
