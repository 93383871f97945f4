"""The AI dialect of GOAL: collective marker lines expanded as NCCL collectives."""

from __future__ import annotations

import pytest

from llamp.errors import InputError, TraceError
from llamp.graph import RECV, SEND
from llamp.ingest import nccl, read
from llamp.lp import evaluate
from llamp.params import LogGPS

# The two-rank example of LLAMP's trace-compression tests (an AllGather marker between calcs).
TWO_RANKS = """num_ranks 2

rank 0 {
l1: calc 10
l2: AllGather 1024 bytes comm 0 gpu 0 stream 0 seq 7 end
l2 requires l1
l3: calc 5
l3 requires l2
}

rank 1 {
l1: calc 11
l2: AllGather 1024 bytes comm 0 gpu 1 stream 0 seq 7 end
l2 requires l1
l3: calc 6
l3 requires l2
}
"""
ZERO_O = dict(o=0.0, S=1 << 40)


def write(tmp_path, text, name="ai.goal"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_marker_becomes_the_nccl_ring_between_its_dependencies(tmp_path):
    """Each rank sends its 1024-byte block to the other (one message per channel); the calc
    after the marker waits for the collective, the one before it starts it."""
    path = write(tmp_path, TWO_RANKS)
    graph = read(path, collectives={"allgather": "nccl_ring_simple"})
    channels = nccl.NcclMachine().channels
    assert int((graph.kind == SEND).sum()) == int((graph.kind == RECV).sum()) == 2 * channels
    assert graph.meta["collectives"] == {"allgather": "ring/Simple"}
    assert set(graph.size[graph.kind == SEND].tolist()) == {1024 // channels}
    L = 1000.0
    hop = nccl.PROTOCOLS["simple"].hop_ns
    # rank 1 enters at 11 ns, its block reaches rank 0 at 11 + L; one round, then the calc of 5
    T = evaluate(graph, LogGPS(L=L, G=0.0, **ZERO_O)).runtime_ns
    assert T == pytest.approx(11 + L + hop + 5)


def test_instances_match_by_comm_and_seq_and_members_by_use(tmp_path):
    """Four ranks, comm 0 = all, comm 1 = ranks 1 and 3; seq numbers pair the calls."""
    blocks = []
    for r in range(4):
        ops = [f"l1: AllReduce 4096 bytes comm 0 gpu {r} stream 1 seq 0 end"]
        if r in (1, 3):
            ops += ["l2: Broadcast 512 bytes comm 1 gpu 0 stream 2 seq 3 root 1 end"]
            ops += ["l2 requires l1"]
        blocks.append(f"rank {r} {{\n" + "\n".join(ops) + "\n}\n")
    graph = read(
        write(tmp_path, "num_ranks 4\n" + "".join(blocks)),
        collectives={"allreduce": "nccl_ring_ll", "bcast": "nccl_ring_simple"},
    )
    assert graph.meta["collective_markers"] == 6
    channels = nccl.NcclMachine().channels
    ring = 2 * 3 * 4 * channels
    assert int((graph.kind == SEND).sum()) == ring + channels  # + the broadcast 3 → 1
    bcast = graph.size[(graph.kind == SEND) & (graph.rank == 3)]
    assert 512 // channels in bcast.tolist()
    assert set(graph.cpu[(graph.kind == SEND) & (graph.rank == 1)].tolist()) >= {1, 2}


def test_plain_goal_is_read_as_before(tmp_path):
    plain = write(tmp_path, "num_ranks 1\nrank 0 {\nl1: calc 5\n}\n", "plain.goal")
    assert read(plain).num_vertices == 1
    with pytest.raises(InputError, match="unknown allreduce algorithm"):
        read(plain, collectives={"allreduce": "nccl_ring_ll64"})


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("seq 7 end", "sequence 7 end", 1),
            r"ai\.goal:13: collective marker 'AllGather' is not '<bytes> bytes comm",
        ),
        (("1024 bytes comm 0 gpu 1", "2048 bytes comm 0 gpu 1", 1), r"ai\.goal:13: .*2048 bytes"),
        (("seq 7 end\nl2 requires l1\nl3: calc 6", "seq 8 end\nl2 requires l1\nl3: calc 6", 1),
         r"rank 1 uses comm 0 but has no marker with seq 7"),
        (("gpu 1 stream", "gpu 1 stream 0 seq 7 end\nl9: AllGather 1024 bytes comm 0 gpu 2 stream", 1),
         r"comm 0 seq 7 has 2 members on rank 1 \(gpus 1, 2\)"),
    ],
)  # fmt: skip
def test_marker_errors_name_the_line(tmp_path, edit, message):
    old, new, count = edit
    text = TWO_RANKS[::-1].replace(old[::-1], new[::-1], count)[::-1]  # edit the last one
    with pytest.raises(TraceError, match=message):
        read(write(tmp_path, text))


def test_protocol_typo_is_refused(tmp_path):
    with pytest.raises(InputError, match="nccl_ring_ll128"):
        read(write(tmp_path, TWO_RANKS), collectives={"allgather": "nccl_ring_ll64"})
