"""Chakra execution traces: the microbenchmarks read and expanded, and the error contract."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest
from cli_process import llamp

from llamp.errors import InputError, TraceError
from llamp.graph import CALC, RECV, SEND
from llamp.ingest import detect_format, et_def_pb2, nccl, read
from llamp.ingest.chakra import nccl_bytes, read_chakra, write_chakra
from llamp.lp import evaluate
from llamp.params import LogGPS

DATA = Path(__file__).parent / "data" / "chakra"
MICRO = DATA / "microbenchmarks"
RING = DATA / "custom_ring_allreduce_8npus_1MB"
DDP = DATA / "pytorch_ddp_gloo_2ranks"
MB = 1 << 20
A = et_def_pb2.AttributeProto


def node(id_, type_, *, deps=(), dur=0, **attrs):
    n = et_def_pb2.Node(id=id_, name=f"n{id_}", type=type_, duration_micros=dur)
    n.data_deps.extend(deps)
    for key, value in attrs.items():
        if isinstance(value, bool):
            n.attr.append(A(name=key, bool_val=value))
        elif isinstance(value, str):
            n.attr.append(A(name=key, string_val=value))
        else:
            n.attr.append(A(name=key, int64_val=value))
    return n


def write_trace(directory: Path, per_rank: list[list]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for r, nodes in enumerate(per_rank):
        write_chakra(directory / f"t.{r}.et", iter(nodes))
    return directory


# ---------------------------------------------------------------------------------- reading
@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "all_to_all", "reduce_scatter"])
@pytest.mark.parametrize("npus", [4, 8, 16])
def test_microbenchmarks_expand_as_nccl_would(op, npus):
    """One COMM_COLL node of 1 MiB per NPU becomes the NCCL plan NCCL's rule picks; an
    all-gather's and an all-to-all's 1 MiB is each NPU's own buffer (ASTRA-sim's reading), so
    those move P MiB."""
    path = MICRO / op / f"{npus}npus_1MB"
    assert detect_format(path) == "chakra"
    graph = read(path)
    name = {"all_reduce": "allreduce", "all_gather": "allgather", "all_to_all": "alltoall"}
    coll = name.get(op, op)
    nbytes = MB * npus if op in ("all_gather", "all_to_all") else MB
    assert nccl_bytes(coll, MB, npus) == nbytes
    alg, proto = nccl.choose(coll, npus, nbytes)
    plan = nccl.plan(coll, npus, nbytes, algorithm=alg, protocol=proto, channels=2)
    assert graph.num_ranks == npus
    assert graph.meta["collectives"] == {coll: f"{alg}/{plan.protocol.name}"}
    sends = graph.kind == SEND
    assert int(sends.sum()) == plan.messages
    assert int(graph.size[sends].sum()) == sum(
        s.size for m in plan.lanes for lane in m for r in lane for s in r if s.kind == SEND
    )


def test_all_gather_and_all_to_all_sizes_are_each_npus_buffer():
    """ASTRA-sim's ring (Ring.cc) sends an all-gather's ``comm_size`` at every step and an
    all-to-all's ``comm_size / P`` to each peer: each NPU sends (P−1)·1 MiB and (P−1)/P MiB."""
    from llamp.ingest.nccl import NcclMachine

    one = NcclMachine(channels=1)
    gather = read(MICRO / "all_gather" / "4npus_1MB",
                  collectives={"allgather": "nccl_ring_simple"}, nccl_machine=one)  # fmt: skip
    a2a = read(MICRO / "all_to_all" / "4npus_1MB", nccl_machine=one)
    for graph, per_rank in ((gather, 3 * MB), (a2a, 3 * MB // 4)):
        sends = graph.kind == SEND
        for r in range(4):
            assert int(graph.size[sends & (graph.rank == r)].sum()) == per_rank


def test_an_algorithm_and_protocol_can_be_chosen():
    path = MICRO / "all_reduce" / "8npus_1MB"
    ring = read(path, collectives={"allreduce": "nccl_ring_simple"})
    assert ring.meta["collectives"] == {"allreduce": "ring/Simple"}
    assert int((ring.kind == SEND).sum()) == 2 * 7 * 8 * 2  # 2 channels, one piece each
    with pytest.raises(InputError, match="nccl_tree_ll128"):
        read(path, collectives={"allreduce": "recursive_doubling"})


def test_collective_what_if_rereads_the_chakra_trace_per_variant():
    """NCCL ring vs double binary tree on the 8-NPU all-reduce: the ring's 2·7·8 messages per
    channel and piece against the trees' 2·7."""
    from llamp.lp.collectives_whatif import compare_collectives

    path = MICRO / "all_reduce" / "8npus_1MB"
    result = compare_collectives(
        path, ["allreduce=nccl_ring", "allreduce=nccl_tree"], LogGPS(), [0.0, 5000.0]
    )
    s = result.summary.set_index("variant")
    for alg in ("ring", "tree"):
        graph = read(path, collectives={"allreduce": f"nccl_{alg}"})
        row = s.loc[f"allreduce=nccl_{alg}"]
        assert int(row["messages"]) == int((graph.kind == SEND).sum())
        assert row["runtime_ns"] == pytest.approx(evaluate(graph, LogGPS()).runtime_ns, rel=1e-12)
    assert s.loc["allreduce=nccl_ring", "messages"] > s.loc["allreduce=nccl_tree", "messages"]


def test_custom_ring_allreduce_as_send_recv_nodes():
    """ASTRA-sim's MSCCL ring written as 2(P−1) send/recv steps on one tag, each NPU a chain
    send → recv → (reduce) → send …; the first P−1 receives are receive-reduce-copy steps
    followed by a 7 µs COMP node. At o = 0 and eager, T is the textbook ring plus the reduces:
    2(P−1)·(L + (n/P − 1)·G) + (P−1)·7 µs."""
    graph = read(RING)
    assert graph.num_ranks == 8
    assert int((graph.kind == SEND).sum()) == int((graph.kind == RECV).sum()) == 8 * 14
    L, G = 2000.0, 0.01
    T = evaluate(graph, LogGPS(L=L, o=0.0, G=G, S=1 << 40)).runtime_ns
    assert T == pytest.approx(14 * (L + (MB // 8 - 1) * G) + 7 * 7000.0, rel=1e-9)


def _chakra_nodes(path: Path) -> list:
    """The nodes of one rank file, read with the schema alone (varint length, message)."""
    data, pos, records = path.read_bytes(), 0, []
    while pos < len(data):
        length, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        records.append(data[pos : pos + length])
        pos += length
    nodes = [et_def_pb2.Node() for _ in records[1:]]  # the first record is the GlobalMetadata
    for n, raw in zip(nodes, records[1:], strict=True):
        n.ParseFromString(raw)
    return nodes


def test_pytorch_ddp_step_on_gloo():
    """A real DDP step (2 gloo processes, PyTorch's execution trace and Kineto trace linked and
    converted by Chakra's tools): its two gradient-bucket all-reduces become NCCL ring messages
    of the buckets' bytes, both ranks agree, and T is the measured host time plus the model's
    communication, with λ_L the slope of T in L."""
    graph = read(DDP)
    assert detect_format(DDP) == "chakra"
    assert graph.num_ranks == 2
    assert graph.meta["process_groups"] == {"world": [0, 1]}
    # the buckets: output layer + last hidden layer (16·256+16 + 256·256+256 floats), then one
    # hidden layer (256·256+256 floats); the first layer's bucket is the first one reduced
    buckets = [(16 * 256 + 16 + 256 * 256 + 256) * 4, (256 * 256 + 256) * 4]
    nodes = [_chakra_nodes(DDP / f"ddp.{r}.et") for r in range(2)]
    for per_rank in nodes:
        gloo = [n for n in per_rank if n.name == "gloo:all_reduce"]
        assert len(gloo) == 2 and all(n.type == et_def_pb2.COMP_NODE for n in gloo)
    sends = graph.kind == SEND
    expected = 0
    for size in buckets:
        alg, proto = nccl.choose("allreduce", 2, size)
        plan = nccl.plan("allreduce", 2, size, algorithm=alg, protocol=proto, channels=2)
        expected += sum(
            s.size for m in plan.lanes for lane in m for r in lane for s in r if s.kind == SEND
        )
    assert int(graph.size[sends].sum()) == expected
    # every rank's communication matches its peer's: what 0 sends, 1 receives, and back
    recvs = graph.kind == RECV
    for r in range(2):
        out = sends & (graph.rank == r)
        into = recvs & (graph.rank == 1 - r)
        assert int(out.sum()) == int(into.sum()) > 0
        assert int(graph.size[out].sum()) == int(graph.size[into].sum()) == expected // 2
        assert set(graph.peer[out].tolist()) == {1 - r}
    # with a free network, T is the longest rank's measured host time (its operators run one
    # after another on the host stream; the gloo operations' measured time is replaced by the
    # model's cost) plus at most the protocol's per-hop latencies, the expansion's only calcs
    host = [
        sum(n.duration_micros for n in per_rank if not n.name.startswith("gloo:")) * 1000.0
        for per_rank in nodes
    ]
    hops = float(graph.cost_ns[graph.kind == CALC].sum()) - sum(host)
    assert 0.0 < hops < 100_000.0
    free = evaluate(graph, LogGPS(L=0.0, o=0.0, G=0.0, S=1 << 40)).runtime_ns
    assert max(host) <= free <= max(host) + hops
    p = LogGPS()
    at = evaluate(graph, p)
    assert np.isfinite(at.runtime_ns) and at.runtime_ns > free
    assert at.lambda_L > 0 and at.lambda_G > 0
    step = 1.0
    moved = evaluate(graph, LogGPS(L=p.L + step, o=p.o, G=p.G, S=p.S)).runtime_ns
    assert (moved - at.runtime_ns) / step == pytest.approx(at.lambda_L, rel=1e-6)


def test_gloo_operations_the_trace_cannot_place_are_refused(tmp_path):
    """gloo's send names no peer in the converted trace: refused with file, record, reason."""
    C = et_def_pb2.COMP_NODE
    send = node(1, C, dur=3)
    send.name = "gloo:send"
    send.inputs.values = "[[1, 2, 0, 100, 4, 'cpu']]"
    d = write_trace(tmp_path / "t", [[send], [node(1, C, dur=1)]])
    with pytest.raises(TraceError, match=r"t\.0\.et: record 1 .*gloo operation 'send' is not"):
        read(d)
    bad = node(1, C, dur=3)
    bad.name = "gloo:all_reduce"
    bad.inputs.values = "__import__('os')"
    d = write_trace(tmp_path / "u", [[bad], [bad]])
    with pytest.raises(TraceError, match="inputs.values is not a list of tensors"):
        read(d)


def test_gloo_all_gather_is_the_gathered_output():
    """An all-gather's input is one rank's share (``comm_size``, as ASTRA-sim reads it): the
    collective moves P times it."""
    from llamp.ingest.chakra import _gloo_collective

    n = et_def_pb2.Node(id=5, name="gloo:all_gather", type=et_def_pb2.COMP_NODE)
    n.inputs.values = "[[6, 7, 0, 100, 4, 'cpu']]"
    assert _gloo_collective(n, 1, 0, Path("t.0.et")) == {
        "comm_type": et_def_pb2.ALL_GATHER,
        "comm_size": 400,
    }
    assert nccl_bytes("allgather", 400, 4) == 4 * 400


def test_streams_groups_and_dependencies(tmp_path):
    """GPU compute on cpu 0, host ops on cpu 1, each process group its own stream; data and
    control dependencies are edges; a group's members are the ranks that use it."""
    C, COLL, SEND_, RECV_ = (et_def_pb2.COMP_NODE, et_def_pb2.COMM_COLL_NODE,
                             et_def_pb2.COMM_SEND_NODE, et_def_pb2.COMM_RECV_NODE)  # fmt: skip
    ranks = []
    for r in range(4):
        pg = "tp0" if r < 2 else "tp1"
        nodes = [
            node(1, C, dur=10),
            node(2, C, dur=3, is_cpu_op=True),
            node(3, COLL, deps=[1], comm_type=et_def_pb2.ALL_REDUCE, comm_size=4096, pg_name=pg),
            node(4, C, deps=[3, 2], dur=5),
        ]
        if r == 0:
            nodes.append(node(5, SEND_, deps=[4], comm_dst=2, comm_size=64, comm_tag=9))
        if r == 2:
            nodes.append(node(5, RECV_, deps=[4], comm_src=0, comm_size=64, comm_tag=9))
        ranks.append(nodes)
    graph = read(write_trace(tmp_path / "t", ranks))
    assert graph.meta["process_groups"] == {"tp0": [0, 1], "tp1": [2, 3], "world": [0, 1, 2, 3]}
    assert graph.cpu is not None
    calcs = np.flatnonzero((graph.rank == 0) & (graph.cost_ns == 3000.0))
    assert graph.cpu[calcs].tolist() == [1]
    T = evaluate(graph, LogGPS(L=1000.0, o=0.0, G=0.0, S=1 << 40)).runtime_ns
    hop = nccl.PROTOCOLS[nccl.choose("allreduce", 2, 4096)[1]].hop_ns
    # rank 2: 10 µs, the 2-member all-reduce, 5 µs, then rank 0's 64-byte message
    assert T > 15_000.0 + 1000.0 + hop


def test_gzipped_files_are_read(tmp_path):
    target = tmp_path / "gz"
    target.mkdir()
    for f in (MICRO / "all_reduce" / "4npus_1MB").iterdir():
        (target / f.name).write_bytes(gzip.compress(f.read_bytes()))
    assert read(target).equals(read(MICRO / "all_reduce" / "4npus_1MB"))


# ------------------------------------------------------------------------------ error contract
def _copy(tmp_path: Path, src: Path = MICRO / "all_reduce" / "4npus_1MB") -> Path:
    dst = tmp_path / "trace"
    shutil.copytree(src, dst)
    return dst


def test_truncated_file(tmp_path):
    d = _copy(tmp_path)
    f = d / "all_reduce.2.et"
    f.write_bytes(f.read_bytes()[:-5])
    with pytest.raises(TraceError, match=r"all_reduce\.2\.et: record 1 at byte \d+: truncated"):
        read(d)


def test_bad_varint(tmp_path):
    d = _copy(tmp_path)
    f = d / "all_reduce.1.et"
    f.write_bytes(f.read_bytes() + b"\xff\xff\xff\xff\xff\xff")
    with pytest.raises(TraceError, match=r"all_reduce\.1\.et: record 2 .*bad length prefix"):
        read(d)


def test_record_that_is_no_node(tmp_path):
    d = _copy(tmp_path)
    f = d / "all_reduce.0.et"
    f.write_bytes(f.read_bytes() + b"\x03\xff\xff\xff")
    with pytest.raises(TraceError, match=r"all_reduce\.0\.et: record 2 .*not a Chakra Node"):
        read(d)


def test_unknown_node_type(tmp_path):
    bad = et_def_pb2.Node(id=7, name="mystery")
    bad.type = 42  # proto3 enums are open: the value parses, the schema does not know it
    d = write_trace(tmp_path / "t", [[bad], [node(7, et_def_pb2.COMP_NODE)]])
    with pytest.raises(
        TraceError, match=r"t\.0\.et: record 1 .*node 7 'mystery': unknown node type 42"
    ):
        read(d)


def test_dangling_dependency(tmp_path):
    d = write_trace(tmp_path / "t", [[node(1, et_def_pb2.COMP_NODE, deps=[99], dur=1)]])
    with pytest.raises(TraceError, match=r"t\.0\.et: record 1 .*depends on node 99"):
        read(d)
    # a control parent that is not in the file: an error, except on a root (no data_deps),
    # the converter's dropped profiler node
    root = node(1, et_def_pb2.COMP_NODE, dur=1)
    root.ctrl_deps.append(0)
    child = node(2, et_def_pb2.COMP_NODE, deps=[1], dur=2)
    child.ctrl_deps.append(98)
    d = write_trace(tmp_path / "u", [[root, child]])
    with pytest.raises(TraceError, match=r"record 2 .*depends on node 98"):
        read(d)
    d = write_trace(tmp_path / "v", [[root, node(2, et_def_pb2.COMP_NODE, deps=[1], dur=2)]])
    assert evaluate(read(d), LogGPS()).runtime_ns == pytest.approx(3000.0)


def test_unknown_collective_and_disagreeing_members(tmp_path):
    COLL = et_def_pb2.COMM_COLL_NODE
    d = write_trace(tmp_path / "a", [[node(1, COLL, comm_type=77, comm_size=8)]] * 2)
    with pytest.raises(TraceError, match="unknown comm_type 77"):
        read(d)
    d = write_trace(
        tmp_path / "b",
        [
            [node(1, COLL, comm_type=et_def_pb2.ALL_REDUCE, comm_size=8)],
            [node(1, COLL, comm_type=et_def_pb2.ALL_REDUCE, comm_size=16)],
        ],
    )
    with pytest.raises(TraceError, match=r"t\.1\.et: record 1 .*allreduce of 16 bytes here"):
        read(d)


def test_unmatched_send(tmp_path):
    S = et_def_pb2.COMM_SEND_NODE
    d = write_trace(
        tmp_path / "t", [[node(1, S, comm_dst=1, comm_size=8)], [node(1, et_def_pb2.COMP_NODE)]]
    )
    with pytest.raises(TraceError, match="rank 0's send to rank 1 .* no matching"):
        read(d)


def test_missing_rank_file(tmp_path):
    d = _copy(tmp_path)
    (d / "all_reduce.1.et").unlink()
    with pytest.raises(InputError, match="rank 1 is missing"):
        read_chakra(d)


def test_cli_reports_one_line_and_exit_2(tmp_path):
    d = _copy(tmp_path)
    f = d / "all_reduce.3.et"
    f.write_bytes(f.read_bytes()[:-1])
    proc = llamp("info", str(d), home=tmp_path, check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("llamp: error: ") and "truncated" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_one_member_group_and_uploaded_rank_files(tmp_path):
    """A group only rank 0 uses is a one-member collective (no messages, zero cost); the rank
    files uploaded loose in the UI are read as the trace."""
    from llamp.ui.uploads import Upload, stage

    C, COLL = et_def_pb2.COMP_NODE, et_def_pb2.COMM_COLL_NODE
    solo = [
        node(1, C, dur=4),
        node(2, COLL, deps=[1], comm_type=et_def_pb2.ALL_REDUCE, comm_size=64, pg_name="solo"),
        node(3, C, deps=[2], dur=6),
    ]
    graph = read(write_trace(tmp_path / "t", [solo, [node(1, C, dur=1)]]))
    assert graph.meta["process_groups"] == {"solo": [0]}
    assert int((graph.kind == SEND).sum()) == 0
    assert evaluate(graph, LogGPS()).runtime_ns == pytest.approx(10_000.0)
    src = MICRO / "all_gather" / "4npus_1MB"
    uploads = [Upload(f.name, f.read_bytes()) for f in sorted(src.iterdir())]
    (tmp_path / "work").mkdir()
    staged = stage(uploads, tmp_path / "work", "ag4")
    assert read(staged).equals(read(src))
