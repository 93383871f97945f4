"""Trace → graph rules: calc gaps, op chains, requests, matching, wildcards, collectives."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from llamp.errors import InputError, TraceError
from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.ingest import read
from llamp.ingest.build import COLL_TAG_BASE, COMM_TAG_STRIDE
from llamp.ingest.events import IngestWarning
from llamp.lp.event_graph import build_event_graph

DATA = Path(__file__).parent / "data" / "traces" / "liballprof"
SWEEP3D = DATA / "sweep3d-2x2"
BCAST = DATA / "bcast-synthetic"
WORLD = 1140850688  # MPICH's MPI_COMM_WORLD handle


def write_trace(
    directory: Path,
    bodies: list[list[str]],
    *,
    t_init: int = 100,
    finalize: int = 200,
    extra: tuple[str, ...] = ("# llamp mpi mpich",),
    clockdiffs: list[float] | None = None,
) -> Path:
    """One liballprof file per rank: header, MPI_Init ending at ``t_init``, body, Finalize."""
    directory.mkdir(parents=True, exist_ok=True)
    for r, body in enumerate(bodies):
        diff = 0.0 if clockdiffs is None else clockdiffs[r]
        lines = [
            "# collprof 0.9 output file",
            f"# Init clockdiff: {diff:f}",
            *extra,
            "",
            f"MPI_Init:-:140735000539132:140735000539120:{t_init}",
            *body,
            f"# Finalize clockdiff: {diff:f}",
            f"MPI_Finalize:{finalize}:-",
        ]
        (directory / f"pmpi-trace-rank-{r}.txt").write_text("\n".join(lines) + "\n")
    return directory


def c(r: int, P: int, handle: int = WORLD) -> str:
    return f"{handle},{r},{P}"


def p2p(
    name: str,
    t0: float,
    t1: float,
    peer: int,
    tag: int,
    r: int,
    P: int,
    *,
    count: int = 1,
    req: int | None = None,
    status: bool | None = None,
    handle: int = WORLD,
) -> str:
    """A Send/Recv/Isend/Irecv/*_init line with a 4-byte int datatype."""
    tail = f":{req}" if req is not None else (":140735000539136" if status else "")
    return f"{name}:{t0}:6575616:{count}:1,4,4:{peer}:{tag}:{c(r, P, handle)}{tail}:{t1}"


def edges_of(graph: ExecutionGraph) -> set[tuple[int, int, int]]:
    return set(
        zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), graph.edge_kind.tolist(), strict=True)
    )


# --------------------------------------------------------------------------- structure
def test_isend_irecv_wait_structure(tmp_path):
    A, B = 140735000539136, 140735000539144
    rank0 = [
        p2p("MPI_Irecv", 110, 111, 1, 1, 0, 2, req=A),
        p2p("MPI_Isend", 112, 113, 1, 2, 0, 2, req=B),
        f"MPI_Wait:120:{A}:140735000539000:130",
        f"MPI_Wait:131:{B}:140735000539000:132",
    ]
    rank1 = [
        p2p("MPI_Send", 105, 106, 0, 1, 1, 2),
        p2p("MPI_Recv", 107, 125, 0, 2, 1, 2, status=True),
    ]
    graph = read(write_trace(tmp_path / "t", [rank0, rank1], finalize=140))
    C, S, R = CALC, SEND, RECV
    assert graph.rank.tolist() == [0] * 7 + [1] * 5
    assert graph.kind.tolist() == [C, R, C, S, C, C, C, C, S, C, R, C]
    assert graph.cost_ns.tolist() == [10e3, 0, 1e3, 0, 7e3, 1e3, 8e3, 5e3, 0, 1e3, 0, 15e3]
    assert graph.peer[graph.kind != C].tolist() == [1, 1, 0, 0]
    assert graph.tag[graph.kind != C].tolist() == [1, 2, 1, 2]
    assert graph.size[graph.kind != C].tolist() == [4, 4, 4, 4]
    assert graph.t_trace_ns.tolist() == [
        0,
        10e3,
        11e3,
        12e3,
        13e3,
        30e3,
        32e3,
        0,
        5e3,
        6e3,
        7e3,
        25e3,
    ]
    assert edges_of(graph) == {
        (0, 1, REQUIRES),
        (1, 2, IREQUIRES),
        (2, 3, REQUIRES),
        (3, 4, IREQUIRES),
        (4, 5, REQUIRES),
        (1, 5, REQUIRES),  # Wait(A): the calc after it needs the Irecv
        (5, 6, REQUIRES),
        (3, 6, REQUIRES),  # Wait(B): … and the Isend
        (7, 8, REQUIRES),
        (8, 9, REQUIRES),
        (9, 10, REQUIRES),
        (10, 11, REQUIRES),
        (8, 1, MESSAGE),
        (3, 10, MESSAGE),
    }
    assert graph.num_edges == 14


def test_sendrecv_structure_and_proc_null(tmp_path):
    def sendrecv(t0, t1, dest, stag, src, rtag, r, P):
        return (
            f"MPI_Sendrecv:{t0}:6575616:2:1,4,4:{dest}:{stag}:6575700:2:1,4,4:{src}:{rtag}:"
            f"{c(r, P)}:140735000539136:{t1}"
        )

    # a ring shift on 3 ranks without wrap-around: MPI_PROC_NULL (-1 under MPICH) at the ends
    P = 3
    bodies = [
        [sendrecv(110, 120, 1, 0, -1, 0, 0, P)],
        [sendrecv(110, 120, 2, 0, 0, 0, 1, P)],
        [sendrecv(110, 120, -1, 0, 1, 0, 2, P)],
    ]
    graph = read(write_trace(tmp_path / "t", bodies, finalize=150))
    C, S, R = CALC, SEND, RECV
    assert graph.kind.tolist() == [C, S, C, C, S, R, C, C, R, C]
    assert graph.cost_ns.tolist() == [10e3, 0, 30e3] + [10e3, 0, 0, 30e3] + [10e3, 0, 30e3]
    assert edges_of(graph) == {
        (0, 1, REQUIRES),
        (1, 2, REQUIRES),
        (3, 4, REQUIRES),
        (3, 5, REQUIRES),
        (4, 6, REQUIRES),
        (5, 6, REQUIRES),
        (7, 8, REQUIRES),
        (8, 9, REQUIRES),
        (1, 5, MESSAGE),
        (4, 8, MESSAGE),
    }


def test_persistent_requests(tmp_path):
    P1, P2, Q = 140735000539136, 140735000539144, 140735000539200
    rank0 = [
        p2p("MPI_Send_init", 101, 102, 1, 4, 0, 2, req=P1),
        p2p("MPI_Send_init", 103, 104, 1, 5, 0, 2, count=2, req=P2),
        f"MPI_Startall:110:2:{P1}:111",
        f"MPI_Waitall:112:2:{P1}:0:120",
        f"MPI_Start:130:{P1}:131",
        f"MPI_Wait:132:{P1}:0:140",
        f"MPI_Request_free:150:{P1}:151",
        f"MPI_Request_free:152:{P2}:153",
    ]
    rank1 = [
        p2p("MPI_Recv_init", 101, 102, 0, 4, 1, 2, req=Q),
        f"MPI_Start:105:{Q}:106",
        f"MPI_Wait:107:{Q}:0:115",
        p2p("MPI_Recv", 116, 117, 0, 5, 1, 2, count=2, status=True),
        f"MPI_Start:125:{Q}:126",
        f"MPI_Wait:127:{Q}:0:145",
        f"MPI_Request_free:150:{Q}:151",
    ]
    graph = read(write_trace(tmp_path / "t", [rank0, rank1], finalize=160))
    assert graph.meta["request_stride"] == 8  # P2 = P1 + 8 was hit
    C, S, R = CALC, SEND, RECV
    # rank 0: calc, Startall's two sends, calc, (Waitall) calc, Start's send, calc, (Wait) calc
    assert graph.kind[graph.rank == 0].tolist() == [C, S, S, C, C, S, C, C]
    assert graph.size[graph.rank == 0].tolist() == [0, 4, 8, 0, 0, 4, 0, 0]
    # rank 1: calc, started recv, calc, (Wait) calc, blocking recv, calc, started recv, calc,
    # (Wait) calc
    assert graph.kind[graph.rank == 1].tolist() == [C, R, C, C, R, C, R, C, C]
    base1 = int(np.flatnonzero(graph.rank == 1)[0])
    assert edges_of(graph) == {
        (0, 1, REQUIRES),
        (0, 2, REQUIRES),
        (1, 3, IREQUIRES),
        (2, 3, IREQUIRES),
        (3, 4, REQUIRES),
        (1, 4, REQUIRES),
        (2, 4, REQUIRES),  # Waitall
        (4, 5, REQUIRES),
        (5, 6, IREQUIRES),
        (6, 7, REQUIRES),
        (5, 7, REQUIRES),
        *{
            (base1 + a, base1 + b, k)
            for a, b, k in (
                (0, 1, REQUIRES),
                (1, 2, IREQUIRES),
                (2, 3, REQUIRES),
                (1, 3, REQUIRES),
                (3, 4, REQUIRES),
                (4, 5, REQUIRES),
                (5, 6, REQUIRES),
                (6, 7, IREQUIRES),
                (7, 8, REQUIRES),
                (6, 8, REQUIRES),
            )
        },
        (1, base1 + 1, MESSAGE),
        (2, base1 + 4, MESSAGE),
        (5, base1 + 6, MESSAGE),
    }
    # the calcs: rank 0 from Init (100) to Startall (110), 111→112, 120→130, 131→132, 140→160
    assert graph.cost_ns[graph.kind == CALC][:5].tolist() == [10e3, 1e3, 10e3, 1e3, 20e3]


def test_start_of_unknown_request(tmp_path):
    rank0 = ["MPI_Start:110:140735000539136:111"]
    path = write_trace(tmp_path / "t", [rank0, []])
    with pytest.raises(TraceError) as err:
        read(path)
    assert str(err.value) == (
        f"{path / 'pmpi-trace-rank-0.txt'}:6: MPI_Start of request "
        "140735000539136 that no MPI_Send_init/MPI_Recv_init created (or "
        "that was freed)"
    )


def test_waitall_stride_both_libraries(tmp_path):
    for stride in (4, 8):
        base = 140735000539136
        rank0 = [
            p2p("MPI_Irecv", 110, 111, 1, 1, 0, 2, req=base),
            p2p("MPI_Irecv", 112, 113, 1, 2, 0, 2, req=base + stride),
            f"MPI_Waitall:120:2:{base}:0:130",
        ]
        rank1 = [p2p("MPI_Send", 105, 106, 0, 1, 1, 2), p2p("MPI_Send", 107, 108, 0, 2, 1, 2)]
        graph = read(write_trace(tmp_path / f"s{stride}", [rank0, rank1], extra=()))
        assert graph.meta["request_stride"] == stride
        # both receives join the calc after the Waitall, in request order
        waits = [
            (s, d)
            for s, d, k in zip(graph.edge_src, graph.edge_dst, graph.edge_kind, strict=True)
            if k == REQUIRES and d == 5
        ]
        assert waits == [(4, 5), (1, 5), (3, 5)]


# --------------------------------------------------------------------------- matching
def test_fifo_matching_per_tag(tmp_path):
    # rank 1 receives tag 2 before tag 1; messages of one tag keep their order
    rank0 = [
        p2p("MPI_Send", 110, 111, 1, 1, 0, 2, count=1),
        p2p("MPI_Send", 112, 113, 1, 2, 0, 2, count=2),
        p2p("MPI_Send", 114, 115, 1, 1, 0, 2, count=3),
    ]
    rank1 = [
        p2p("MPI_Recv", 110, 120, 0, 2, 1, 2, count=9, status=True),
        p2p("MPI_Recv", 121, 122, 0, 1, 1, 2, count=9, status=True),
        p2p("MPI_Recv", 123, 124, 0, 1, 1, 2, count=9, status=True),
    ]
    graph = read(write_trace(tmp_path / "t", [rank0, rank1]))
    sends, recvs = graph.messages()
    order = np.argsort(recvs)
    # receive i gets (size) 8, 4, 12: the recv takes the message's size, not its buffer's (36)
    assert graph.size[recvs[order]].tolist() == [8, 4, 12]
    assert graph.size[sends[order]].tolist() == [8, 4, 12]


def test_unmatched_send_strict_and_lenient(tmp_path):
    rank0 = [p2p("MPI_Send", 110, 111, 1, 5, 0, 2)]
    path = write_trace(tmp_path / "t", [rank0, []], finalize=140)
    with pytest.raises(TraceError) as err:
        read(path)
    assert str(err.value) == (
        f"{path / 'pmpi-trace-rank-0.txt'}:6: MPI_Send to rank 1 (tag 5, 4 bytes, MPI_COMM_WORLD) "
        "has no matching receive: rank 0 sends 1 such messages, rank 1 posts 0 matching receives"
    )
    with pytest.warns(IngestWarning, match="lenient: MPI_Send to rank 1 .*: 1×"):
        graph = read(path, lenient=True)
    assert graph.num_vertices == 2 and graph.summary().messages == 0
    assert graph.summary().calc_ns_per_rank == [40e3, 40e3]  # the send's time stays in the calc


def test_message_larger_than_receive_buffer(tmp_path):
    rank0 = [p2p("MPI_Send", 110, 111, 1, 5, 0, 2, count=4)]
    rank1 = [p2p("MPI_Recv", 110, 120, 0, 5, 1, 2, count=2, status=True)]
    path = write_trace(tmp_path / "t", [rank0, rank1])
    with pytest.raises(
        TraceError,
        match=r"rank-1\.txt:6: MPI_Recv: message of 16 bytes from rank 0 "
        r"is larger than the receive buffer of 8 bytes",
    ):
        read(path)


def test_time_going_backwards(tmp_path):
    rank0 = [p2p("MPI_Send", 110, 115, 1, 5, 0, 2), p2p("MPI_Send", 112, 116, 1, 5, 0, 2)]
    rank1 = [
        p2p("MPI_Recv", 110, 120, 0, 5, 1, 2, status=True),
        p2p("MPI_Recv", 121, 122, 0, 5, 1, 2, status=True),
    ]
    path = write_trace(tmp_path / "t", [rank0, rank1])
    with pytest.raises(
        TraceError,
        match=r"rank-0\.txt:7: MPI_Send starts 3000 ns before the previous "
        r"call of its rank ended",
    ):
        read(path)


# --------------------------------------------------------------------------- wildcards
def test_any_source_takes_the_earliest_send_on_the_aligned_clock(tmp_path):
    # rank 0 receives twice from MPI_ANY_SOURCE (-2 under MPICH); rank 1 sends at 150, rank 2 at 120
    rank0 = [
        p2p("MPI_Recv", 110, 160, -2, 7, 0, 3, count=9, status=True),
        p2p("MPI_Recv", 161, 170, -2, 7, 0, 3, count=9, status=True),
    ]
    rank1 = [p2p("MPI_Send", 150, 151, 0, 7, 1, 3, count=1)]
    rank2 = [p2p("MPI_Send", 120, 121, 0, 7, 2, 3, count=2)]
    graph = read(write_trace(tmp_path / "same", [rank0, rank1, rank2]))
    recvs = np.flatnonzero(graph.kind == RECV)
    assert graph.peer[recvs].tolist() == [2, 1] and graph.size[recvs].tolist() == [8, 4]
    assert graph.meta["wildcards_resolved"] == 2
    # rank 2's clock runs 50 µs behind rank 0's (clockdiff = clock_0 − clock_2 = +50 µs): its send
    # happened at 170 on rank 0's clock, after rank 1's
    graph = read(write_trace(tmp_path / "skew", [rank0, rank1, rank2], clockdiffs=[0, 0, 50]))
    recvs = np.flatnonzero(graph.kind == RECV)
    assert graph.peer[recvs].tolist() == [1, 2]
    assert graph.meta["clock_alignment"] == "Init/Finalize clockdiff, linear drift"


def test_any_tag_respects_non_overtaking(tmp_path):
    sends = [
        p2p("MPI_Send", 110, 111, 0, 7, 1, 2, count=1),
        p2p("MPI_Send", 112, 113, 0, 8, 1, 2, count=2),
    ]
    # ANY_TAG (-1) first: it must take the first send (tag 7); then tag 8
    rank0 = [
        p2p("MPI_Recv", 110, 150, 1, -1, 0, 2, count=9, status=True),
        p2p("MPI_Recv", 151, 152, 1, 8, 0, 2, count=9, status=True),
    ]
    graph = read(write_trace(tmp_path / "a", [rank0, sends]))
    recvs = np.flatnonzero(graph.kind == RECV)
    assert graph.tag[recvs].tolist() == [7, 8] and graph.size[recvs].tolist() == [4, 8]
    # tag 8 first skips the tag-7 message; ANY_TAG then takes it
    rank0 = [
        p2p("MPI_Recv", 110, 150, 1, 8, 0, 2, count=9, status=True),
        p2p("MPI_Recv", 151, 152, -2, -1, 0, 2, count=9, status=True),
    ]
    graph = read(write_trace(tmp_path / "b", [rank0, sends]))
    recvs = np.flatnonzero(graph.kind == RECV)
    assert graph.tag[recvs].tolist() == [8, 7] and graph.size[recvs].tolist() == [8, 4]
    assert graph.peer[recvs].tolist() == [1, 1]


def test_wildcard_irecv_with_waitall(tmp_path):
    base = 140735000539136
    rank0 = [
        p2p("MPI_Irecv", 110, 111, -2, -1, 0, 3, req=base),
        p2p("MPI_Irecv", 112, 113, -2, -1, 0, 3, req=base + 4),
        f"MPI_Waitall:114:2:{base}:0:150",
    ]
    rank1 = [p2p("MPI_Send", 130, 131, 0, 3, 1, 3)]
    rank2 = [p2p("MPI_Send", 125, 126, 0, 4, 2, 3)]
    graph = read(write_trace(tmp_path / "t", [rank0, rank1, rank2]))
    recvs = np.flatnonzero(graph.kind == RECV)
    assert graph.peer[recvs].tolist() == [2, 1] and graph.tag[recvs].tolist() == [4, 3]
    build_event_graph(graph, 1 << 18)  # acyclic: no deadlock


# --------------------------------------------------------------------------- collectives
def test_collective_expansion_and_tags(tmp_path):
    P = 4
    bodies = [
        [f"MPI_Bcast:{110 + r}:6575616:8:1,8,8:2:{c(r, P)}:130", f"MPI_Barrier:140:{c(r, P)}:150"]
        for r in range(P)
    ]
    graph = read(write_trace(tmp_path / "t", bodies), collectives={"bcast": "linear"})
    sends, recvs = graph.messages()
    # linear bcast from root 2: 3 messages of 64 bytes; dissemination barrier: 4·2 of 0 bytes
    bcast = graph.size[sends] == 64
    assert bcast.sum() == 3 and (graph.size[sends] == 0).sum() == 8
    assert set(graph.rank[sends[bcast]].tolist()) == {2}
    assert sorted(graph.rank[recvs[bcast]].tolist()) == [0, 1, 3]
    # tags: instance 0 (bcast) and 1 (barrier) on MPI_COMM_WORLD (communicator 0)
    assert set(graph.tag[sends[bcast]].tolist()) == {COLL_TAG_BASE}
    assert set(graph.tag[sends[~bcast]].tolist()) == {COLL_TAG_BASE + 1}
    assert graph.meta["collectives"] == {"barrier": "dissemination", "bcast": "linear"}
    # rank 0: calc 10 µs, one round (recv from root, join), calc 10 µs, barrier rounds, calc
    r0 = graph.rank == 0
    assert graph.kind[r0].tolist() == [
        CALC,
        RECV,
        CALC,
        CALC,
        SEND,
        RECV,
        CALC,
        SEND,
        RECV,
        CALC,
        CALC,
    ]
    assert graph.cost_ns[r0].tolist() == [10e3, 0, 0, 10e3, 0, 0, 0, 0, 0, 0, 50e3]
    build_event_graph(graph, 1 << 18)


def test_collective_members_disagree(tmp_path):
    P = 2
    bodies = [
        [f"MPI_Bcast:110:6575616:8:1,8,8:0:{c(0, P)}:130"],
        [f"MPI_Reduce:110:6575616:6575700:8:1,8,8:3:0:{c(1, P)}:130"],
    ]
    path = write_trace(tmp_path / "t", bodies)
    with pytest.raises(TraceError) as err:
        read(path)
    assert str(err.value) == (
        f"{path / 'pmpi-trace-rank-1.txt'}:6: collective call #1 on MPI_COMM_WORLD: rank 1 calls "
        f"MPI_Reduce, but rank 0 calls MPI_Bcast ({path / 'pmpi-trace-rank-0.txt'}:6)"
    )
    bodies = [[f"MPI_Bcast:110:6575616:8:1,8,8:{r}:{c(r, P)}:130"] for r in range(P)]
    path = write_trace(tmp_path / "root", bodies)
    with pytest.raises(
        TraceError,
        match=r"rank-1\.txt:6: MPI_Bcast \(collective call #1 on "
        r"MPI_COMM_WORLD\): rank 1 gives root 1, rank 0 gives root 0",
    ):
        read(path)
    bodies = [
        [f"MPI_Barrier:110:{c(0, P)}:120", f"MPI_Barrier:130:{c(0, P)}:140"],
        [f"MPI_Barrier:110:{c(1, P)}:120"],
    ]
    path = write_trace(tmp_path / "count", bodies)
    with pytest.raises(
        TraceError,
        match=r"rank-0\.txt:7: MPI_Barrier is collective call #2 of rank 0 "
        r"on MPI_COMM_WORLD, but rank 1 makes only 1",
    ):
        read(path)


def test_sub_communicator_tags(tmp_path):
    # ranks 0 and 1 of 3 in a communicator (handle 9): p2p tag 5 on it becomes 5 + 1·2^32
    hdr = ("# llamp mpi mpich", "# llamp comm 9 2 0,1")
    bodies = [
        [
            p2p("MPI_Send", 110, 111, 1, 5, 0, 2, handle=9),
            f"MPI_Allreduce:120:1:2:1:1,4,4:3:{c(0, 2, 9)}:130",
        ],
        [
            p2p("MPI_Recv", 110, 115, 0, 5, 1, 2, handle=9, status=True),
            f"MPI_Allreduce:120:1:2:1:1,4,4:3:{c(1, 2, 9)}:130",
        ],
        [],
    ]
    path = write_trace(tmp_path / "t", bodies, extra=())
    for r in (0, 1):
        f = path / f"pmpi-trace-rank-{r}.txt"
        f.write_text(
            f.read_text().replace(
                "# Init clockdiff: 0.000000\n",
                "# Init clockdiff: 0.000000\n" + "\n".join(hdr) + "\n",
            )
        )
    graph = read(path)
    sends, _ = graph.messages()
    tags = sorted(graph.tag[sends].tolist())
    assert tags == [
        5 + COMM_TAG_STRIDE,
        COLL_TAG_BASE + COMM_TAG_STRIDE,
        COLL_TAG_BASE + COMM_TAG_STRIDE,
    ]
    assert graph.summary().calc_ns_per_rank[2] == 100e3


def test_unknown_algorithm():
    with pytest.raises(InputError, match="unknown allreduce algorithm 'rng'"):
        read(SWEEP3D, collectives={"allreduce": "rng"})
    with pytest.raises(InputError, match="unknown collective 'allreduc'"):
        read(SWEEP3D, collectives={"allreduc": "ring"})


# --------------------------------------------------------------------------- real traces
def _gaps_ns(path: Path) -> float:
    """Independent calc total of one rank file: plain Python over its lines."""
    modelled = {"MPI_Send", "MPI_Recv", "MPI_Bcast", "MPI_Barrier", "MPI_Allreduce"}
    total, last_end = 0.0, None
    for line in path.read_text().splitlines():
        fields = line.split(":")
        if fields[0] == "MPI_Init":
            last_end = float(fields[-1])
        elif fields[0] in modelled:
            total += float(fields[1]) - last_end
            last_end = float(fields[-1])
        elif fields[0] == "MPI_Finalize":
            total += float(fields[1]) - last_end
    return total * 1000.0


def _collective_calls(path: Path) -> dict[str, int]:
    names = [line.split(":")[0] for line in path.read_text().splitlines()]
    return {op: names.count(op) for op in ("MPI_Bcast", "MPI_Barrier", "MPI_Allreduce")}


@pytest.mark.parametrize("allreduce", ["recursive_doubling", "ring"])
def test_sweep3d_graph(allreduce):
    P = 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = read(SWEEP3D, collectives={"allreduce": allreduce})
    calls = _collective_calls(SWEEP3D / "pmpi-trace-rank-0.txt")
    assert calls == {"MPI_Bcast": 4, "MPI_Barrier": 3, "MPI_Allreduce": 32}
    log2 = math.ceil(math.log2(P))
    pof2 = 1 << (P.bit_length() - 1)
    per_call = {
        "MPI_Bcast": P - 1,  # binomial tree
        "MPI_Barrier": P * log2,  # dissemination
        "MPI_Allreduce": (
            2 * (P - pof2) + pof2 * int(math.log2(pof2))
            if allreduce == "recursive_doubling"
            else 2 * P * (P - 1)
        ),
    }
    expected_coll = sum(calls[op] * per_call[op] for op in calls)
    assert expected_coll == (292 if allreduce == "recursive_doubling" else 804)
    s = graph.summary()
    assert s.messages == 4 * 1440 + expected_coll
    user = (graph.kind == SEND) & (graph.tag < COLL_TAG_BASE)
    assert np.bincount(graph.rank[user]).tolist() == [1440] * 4
    assert (
        np.bincount(graph.rank[(graph.kind == RECV) & (graph.tag < COLL_TAG_BASE)]).tolist()
        == [1440] * 4
    )
    for r in range(P):
        assert s.calc_ns_per_rank[r] == _gaps_ns(SWEEP3D / f"pmpi-trace-rank-{r}.txt")
    assert s.calc_ns_per_rank[0] == 39936849000.0
    assert graph.meta["collectives"] == {
        "allreduce": allreduce,
        "barrier": "dissemination",
        "bcast": "binomial",
    }
    assert graph.meta["format"] == "liballprof" and graph.name == "sweep3d-2x2"
    build_event_graph(graph, 256 * 1024)  # no cycle in the event graph: no deadlock


def test_sweep3d_npz_round_trip(tmp_path):
    graph = read(SWEEP3D)
    out = graph.save(tmp_path / "s.npz")
    again = read(out)
    assert again.equals(graph)
    assert again.meta["collectives"] == graph.meta["collectives"]
    assert np.array_equal(again.t_trace_ns, graph.t_trace_ns)


def test_bcast_synthetic_graph():
    with pytest.warns(IngestWarning, match="world-sized communicator reports a rank"):
        graph = read(BCAST)
    s = graph.summary()
    assert s.messages == 5 * 3  # 5 binomial bcasts on 4 ranks
    assert s.bytes == 15 * 12
    # Init ends at 1 µs, Finalize starts at 13, five 1-µs bcasts: 7 µs of calc per rank
    assert s.calc_ns_per_rank == [7000.0] * 4
    sends, _ = graph.messages()
    # Schedgen's binomial tree from root 0 (v's parent is v − 2^⌊log2 v⌋): 0 → 1, 0 → 2, 1 → 3
    assert np.bincount(graph.rank[sends], minlength=4).tolist() == [10, 5, 0, 0]


def test_v_collectives_take_counts_from_the_members(tmp_path):
    P = 3
    M = [[0, 5, 7], [2, 0, 0], [3, 4, 0]]  # alltoallv bytes, row = sender

    def arr(values):
        return ",".join(str(v) for v in values)

    bodies = []
    for r in range(P):
        col = [M[i][r] for i in range(P)]
        gather_block = [4, 6, 0][r]
        bodies.append(
            [
                f"MPI_Alltoallv:110:1:2:{arr(M[r])}:3:{arr([0] * P)}:13,1,1:4:5:{arr(col)}:6:"
                f"{arr([0] * P)}:13,1,1:{c(r, P)}:120",
                f"MPI_Gatherv:121:1:{gather_block}:13,1,1:2:3:4,6,0:4:0,4,10:13,1,1:1:{c(r, P)}:122",
                f"MPI_Allgatherv:123:1:{r + 1}:13,1,1:2:3:1,2,3:4:0,1,3:13,1,1:{c(r, P)}:124",
                f"MPI_Scatterv:125:1:2:3,0,5:3:0,3,3:13,1,1:4:{[3, 0, 5][r]}:13,1,1:0:{c(r, P)}:126",
                f"MPI_Reduce_scatter:127:1:2:3:2,2,2:1,4,4:3:{c(r, P)}:128",
                f"MPI_Reduce_scatter_block:129:1:2:2:1,4,4:3:{c(r, P)}:130",
                f"MPI_Exscan:131:1:2:1:1,8,8:3:{c(r, P)}:132",
            ]
        )
    graph = read(
        write_trace(tmp_path / "t", bodies),
        collectives={"reduce_scatter": "ring", "allgatherv": "ring"},
    )
    sends, recvs = graph.messages()
    instance = graph.tag[sends] - COLL_TAG_BASE
    pairs = {
        k: sorted(
            zip(
                graph.rank[sends[instance == k]].tolist(),
                graph.rank[recvs[instance == k]].tolist(),
                graph.size[sends[instance == k]].tolist(),
                strict=True,
            )
        )
        for k in range(7)
    }
    # alltoallv (linear): one message per non-zero off-diagonal entry
    assert pairs[0] == [(0, 1, 5), (0, 2, 7), (1, 0, 2), (2, 0, 3), (2, 1, 4)]
    # gatherv to root 1 (linear): rank 0's 4 bytes; rank 2 contributes nothing
    assert pairs[1] == [(0, 1, 4)]
    # allgatherv (ring): P(P−1) messages, each block passed on to the P−1 others
    assert len(pairs[2]) == 6 and sum(p[2] for p in pairs[2]) == (1 + 2 + 3) * 2
    # scatterv from root 0 (linear): only rank 2 gets a non-empty block
    assert pairs[3] == [(0, 2, 5)]
    # reduce_scatter and reduce_scatter_block (ring, 8-byte blocks): P(P−1) messages of 8 bytes
    assert [p[2] for p in pairs[4]] == [8] * 6 and pairs[5] == pairs[4]
    # exscan as scan (recursive doubling on 3 ranks): pairs i ↔ i XOR 2^k inside the group
    assert [(a, b) for a, b, _ in pairs[6]] == [(0, 1), (0, 2), (1, 0), (2, 0)]
    assert graph.meta["collectives"] == {
        "allgatherv": "ring",
        "alltoallv": "linear",
        "gatherv": "linear",
        "reduce_scatter": "ring",
        "scan": "recursive_doubling",
        "scatterv": "linear",
    }
    build_event_graph(graph, 1 << 18)


def test_alltoallv_without_counts_is_absorbed(tmp_path):
    P = 2
    bodies = [[f"MPI_Alltoallv:110:1:2:3:13,1,1:4:5:6:13,1,1:{c(r, P)}:120"] for r in range(P)]
    with pytest.warns(IngestWarning, match=r"MPI_Alltoallv without recvcounts in the trace"):
        graph = read(write_trace(tmp_path / "t", bodies))
    assert graph.summary().messages == 0


# --------------------------------------------------------------------------- completions, cancel
OPENMPI = ("# llamp mpi openmpi",)  # MPI_ANY_SOURCE = -1, 8-byte MPI_Request
UNDEFINED = -32766  # MPI_UNDEFINED
IDX, FLAG, ST = 140735000538000, 140735000538004, 140735000538008  # out-argument addresses


def test_waitany_testany_testsome_waitsome_complete_what_they_name(tmp_path):
    A, B = 140735000539136, 140735000539200  # two request arrays of 2
    rank0 = [
        p2p("MPI_Irecv", 110, 111, 1, 1, 0, 2, req=A),
        p2p("MPI_Irecv", 112, 113, 1, 2, 0, 2, req=A + 8),
        f"MPI_Waitany:114:2:{A}:{IDX}:1:{ST}:120",  # completes A[1]
        f"MPI_Testany:121:2:{A}:{IDX}:{UNDEFINED}:{FLAG}:0:{ST}:122",  # nothing: time only
        f"MPI_Testany:123:2:{A}:{IDX}:0:{FLAG}:1:{ST}:124",  # completes A[0]
        p2p("MPI_Isend", 125, 126, 1, 3, 0, 2, req=B),
        p2p("MPI_Isend", 127, 128, 1, 4, 0, 2, req=B + 8),
        f"MPI_Testsome:129:2:{B}:{IDX}:0:{IDX + 8}:{ST}:130",  # nothing: time only
        f"MPI_Waitsome:131:2:{B}:{IDX}:2:{IDX + 8}:1,0:{ST}:140",  # completes B[1], B[0]
    ]
    rank1 = [
        p2p("MPI_Send", 105, 106, 0, 1, 1, 2),
        p2p("MPI_Send", 107, 108, 0, 2, 1, 2),
        p2p("MPI_Recv", 109, 135, 0, 3, 1, 2, status=True),
        p2p("MPI_Recv", 136, 145, 0, 4, 1, 2, status=True),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = read(write_trace(tmp_path / "t", [rank0, rank1], finalize=150, extra=OPENMPI))
    C, S, R = CALC, SEND, RECV
    assert graph.kind.tolist() == [C, R, C, R, C, C, C, S, C, S, C, C] + [C, S, C, S, C, R, C, R, C]
    # rank 0's calcs: Init→Irecv, →Irecv, →Waitany, →Testany that completed (the other Testany
    # lies inside), →Isend, →Isend, →Waitsome (Testsome inside), →Finalize
    assert graph.cost_ns[graph.kind == C][:8].tolist() == [
        10e3, 1e3, 1e3, 3e3, 1e3, 1e3, 3e3, 10e3,
    ]  # fmt: skip
    assert edges_of(graph) == {
        (0, 1, REQUIRES),
        (1, 2, IREQUIRES),
        (2, 3, REQUIRES),
        (3, 4, IREQUIRES),
        (4, 5, REQUIRES),
        (3, 5, REQUIRES),  # Waitany, index 1: the second Irecv
        (5, 6, REQUIRES),
        (1, 6, REQUIRES),  # Testany, flag 1, index 0: the first Irecv
        (6, 7, REQUIRES),
        (7, 8, IREQUIRES),
        (8, 9, REQUIRES),
        (9, 10, IREQUIRES),
        (10, 11, REQUIRES),
        (9, 11, REQUIRES),  # Waitsome, indices 1,0: both Isends
        (7, 11, REQUIRES),
        (12, 13, REQUIRES),
        (13, 14, REQUIRES),
        (14, 15, REQUIRES),
        (15, 16, REQUIRES),
        (16, 17, REQUIRES),
        (17, 18, REQUIRES),
        (18, 19, REQUIRES),
        (19, 20, REQUIRES),
        (13, 1, MESSAGE),
        (15, 3, MESSAGE),
        (7, 17, MESSAGE),
        (9, 19, MESSAGE),
    }
    assert graph.meta["absorbed_calls"] == {"MPI_Testany": 1, "MPI_Testsome": 1}
    assert graph.meta["request_stride"] == 8


def test_test_and_testall_complete_when_their_flag_says_so(tmp_path):
    A, B = 140735000539136, 140735000539200
    rank0 = [
        p2p("MPI_Irecv", 110, 111, 1, 1, 0, 2, req=A),
        f"MPI_Test:112:{A}:{FLAG}:0:{ST}:113",  # not yet: time only
        f"MPI_Test:114:{A}:{FLAG}:1:{ST}:115",  # completes the Irecv
        p2p("MPI_Isend", 116, 117, 1, 2, 0, 2, req=B),
        p2p("MPI_Isend", 118, 119, 1, 3, 0, 2, req=B + 8),
        f"MPI_Testall:120:2:{B}:{FLAG}:0:{ST}:121",
        f"MPI_Testall:122:2:{B}:{FLAG}:1:{ST}:130",  # completes both Isends
    ]
    rank1 = [
        p2p("MPI_Send", 105, 106, 0, 1, 1, 2),
        p2p("MPI_Recv", 107, 120, 0, 2, 1, 2, status=True),
        p2p("MPI_Recv", 121, 125, 0, 3, 1, 2, status=True),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = read(write_trace(tmp_path / "t", [rank0, rank1], finalize=140, extra=OPENMPI))
    C, S, R = CALC, SEND, RECV
    assert graph.kind.tolist() == [C, R, C, C, S, C, S, C, C] + [C, S, C, R, C, R, C]
    assert graph.cost_ns[:9].tolist() == [10e3, 0, 3e3, 1e3, 0, 1e3, 0, 3e3, 10e3]
    assert edges_of(graph) == {
        (0, 1, REQUIRES),
        (1, 2, IREQUIRES),
        (2, 3, REQUIRES),
        (1, 3, REQUIRES),  # MPI_Test, flag 1
        (3, 4, REQUIRES),
        (4, 5, IREQUIRES),
        (5, 6, REQUIRES),
        (6, 7, IREQUIRES),
        (7, 8, REQUIRES),
        (4, 8, REQUIRES),  # MPI_Testall, flag 1
        (6, 8, REQUIRES),
        (9, 10, REQUIRES),
        (10, 11, REQUIRES),
        (11, 12, REQUIRES),
        (12, 13, REQUIRES),
        (13, 14, REQUIRES),
        (14, 15, REQUIRES),
        (10, 1, MESSAGE),
        (4, 12, MESSAGE),
        (6, 14, MESSAGE),
    }
    assert graph.meta["absorbed_calls"] == {"MPI_Test": 1, "MPI_Testall": 1}


def test_test_without_flag_is_absorbed_as_before(tmp_path):
    # liballprof's layout (request*, flag*, status*): which test succeeded is unknown
    A = 140735000539136
    rank0 = [
        p2p("MPI_Irecv", 110, 111, 1, 1, 0, 2, req=A),
        f"MPI_Test:112:{A}:{FLAG}:{ST}:113",
        f"MPI_Test:114:{A}:{FLAG}:{ST}:115",
    ]
    rank1 = [p2p("MPI_Send", 105, 106, 0, 1, 1, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = read(write_trace(tmp_path / "t", [rank0, rank1], finalize=140))
    assert graph.kind[graph.rank == 0].tolist() == [CALC, RECV, CALC]
    assert graph.cost_ns[:3].tolist() == [10e3, 0, 29e3]  # the tests are calc
    assert (0, 1, REQUIRES) in edges_of(graph) and (1, 2, IREQUIRES) in edges_of(graph)
    assert graph.meta["absorbed_calls"] == {"MPI_Test": 2}


def test_cancelled_wildcard_receive_is_dropped(tmp_path):
    # HPCC's MPIRandomAccess: Irecv(ANY_SOURCE, ANY_TAG) completed by Testany and posted again;
    # at the end the last one is cancelled. Rank 1's tag-9 send (posted at 130, after the
    # cancelled receive completed at 120) belongs to the later Recv.
    A = 140735000539136
    rank0 = [
        p2p("MPI_Irecv", 110, 111, -1, -1, 0, 2, req=A),
        f"MPI_Testany:112:1:{A}:{IDX}:{UNDEFINED}:{FLAG}:0:{ST}:113",
        f"MPI_Testany:114:1:{A}:{IDX}:0:{FLAG}:1:{ST}:115",
        p2p("MPI_Irecv", 116, 117, -1, -1, 0, 2, req=A),
        f"MPI_Cancel:118:{A}:119",
        f"MPI_Wait:119:{A}:{ST}:120",
        p2p("MPI_Recv", 121, 140, 1, 9, 0, 2, status=True),
    ]
    rank1 = [p2p("MPI_Send", 105, 106, 0, 5, 1, 2), p2p("MPI_Send", 130, 131, 0, 9, 1, 2)]
    path = write_trace(tmp_path / "t", [rank0, rank1], finalize=150, extra=OPENMPI)
    with pytest.warns(IngestWarning) as record:
        graph = read(path)
    assert (
        "cancelled receives (MPI_Cancel) that no message needed: dropped, their time is calc: "
        f"1× (first at {path / 'pmpi-trace-rank-0.txt'}:9)"
    ) in str(record[0].message)
    C, S, R = CALC, SEND, RECV
    assert graph.kind.tolist() == [C, R, C, C, R, C] + [C, S, C, S, C]
    # the cancelled Irecv, the Cancel and the Wait (115 → 121) are calc
    assert graph.cost_ns.tolist() == [10e3, 0, 3e3, 6e3, 0, 10e3] + [5e3, 0, 24e3, 0, 19e3]
    assert edges_of(graph) == {
        (0, 1, REQUIRES),
        (1, 2, IREQUIRES),
        (2, 3, REQUIRES),
        (1, 3, REQUIRES),  # the Testany that completed the first Irecv
        (3, 4, REQUIRES),
        (4, 5, REQUIRES),
        (6, 7, REQUIRES),
        (7, 8, REQUIRES),
        (8, 9, REQUIRES),
        (9, 10, REQUIRES),
        (7, 1, MESSAGE),  # the wildcard receive: rank 1's tag 5
        (9, 4, MESSAGE),
    }
    assert graph.tag[1] == 5 and graph.peer[1] == 1
    assert graph.meta["wildcards_resolved"] == 1


def test_cancel_that_came_too_late_keeps_the_receive(tmp_path):
    # the only send to rank 0 can go nowhere but the cancelled receive: the cancel failed
    A = 140735000539136
    rank0 = [
        p2p("MPI_Irecv", 110, 111, 1, 7, 0, 2, req=A),
        f"MPI_Cancel:112:{A}:113",
        f"MPI_Wait:113:{A}:{ST}:120",
        f"MPI_Cancel:121:{A}:122",  # the request is MPI_REQUEST_NULL by now
    ]
    rank1 = [p2p("MPI_Send", 105, 106, 0, 7, 1, 2)]
    path = write_trace(tmp_path / "t", [rank0, rank1], finalize=130, extra=OPENMPI)
    with pytest.warns(IngestWarning) as record:
        graph = read(path)
    text = str(record[0].message)
    assert (
        "cancelled operations kept: a message was left only for them (the MPI_Cancel came "
        f"too late): 1× (first at {path / 'pmpi-trace-rank-0.txt'}:6)"
    ) in text
    assert "MPI_Cancel of a request with no pending operation" in text
    assert graph.kind.tolist() == [CALC, RECV, CALC, CALC, CALC, SEND, CALC]
    assert graph.cost_ns.tolist() == [10e3, 0, 2e3, 10e3, 5e3, 0, 24e3]
    assert edges_of(graph) == {
        (0, 1, REQUIRES),
        (1, 2, IREQUIRES),
        (2, 3, REQUIRES),
        (1, 3, REQUIRES),  # the Wait completes the receive the cancel did not stop
        (4, 5, REQUIRES),
        (5, 6, REQUIRES),
        (5, 1, MESSAGE),
    }


def test_cancelled_sends(tmp_path):
    # the tag-3 send has no receive: its cancel succeeded; the tag-4 one is received: it failed
    A, B = 140735000539136, 140735000539200
    rank0 = [
        p2p("MPI_Isend", 110, 111, 1, 3, 0, 2, req=A),
        f"MPI_Cancel:112:{A}:113",
        f"MPI_Wait:113:{A}:{ST}:114",
        p2p("MPI_Isend", 115, 116, 1, 4, 0, 2, req=B),
        f"MPI_Cancel:117:{B}:118",
        f"MPI_Wait:118:{B}:{ST}:119",
    ]
    rank1 = [p2p("MPI_Recv", 105, 125, 0, 4, 1, 2, status=True)]
    path = write_trace(tmp_path / "t", [rank0, rank1], finalize=130, extra=OPENMPI)
    with pytest.warns(IngestWarning) as record:
        graph = read(path)
    text = str(record[0].message)
    assert (
        "cancelled sends (MPI_Cancel) that no message needed: dropped, their time is calc: 1× "
        f"(first at {path / 'pmpi-trace-rank-0.txt'}:6)"
    ) in text
    assert "cancelled operations kept: a message was left only for them" in text
    assert graph.kind.tolist() == [CALC, SEND, CALC, CALC, CALC, RECV, CALC]
    assert graph.cost_ns.tolist() == [15e3, 0, 2e3, 11e3, 5e3, 0, 5e3]
    assert edges_of(graph) == {
        (0, 1, REQUIRES),
        (1, 2, IREQUIRES),
        (2, 3, REQUIRES),
        (1, 3, REQUIRES),
        (4, 5, REQUIRES),
        (5, 6, REQUIRES),
        (1, 5, MESSAGE),
    }
    assert graph.tag[1] == 4


def test_wildcard_matched_after_it_completed_is_a_note(tmp_path):
    # the receive completes at 115 but the only send starts at 130 (clocks out of sync): taken,
    # since nothing else is left and the receive did complete
    A = 140735000539136
    rank0 = [p2p("MPI_Irecv", 110, 111, -1, -1, 0, 2, req=A), f"MPI_Wait:112:{A}:{ST}:115"]
    rank1 = [p2p("MPI_Send", 130, 131, 0, 3, 1, 2)]
    path = write_trace(tmp_path / "t", [rank0, rank1], finalize=140, extra=OPENMPI)
    with pytest.warns(IngestWarning, match="wildcard receives matched to a send posted after"):
        graph = read(path)
    sends, recvs = graph.messages()
    assert graph.rank[sends].tolist() == [1] and graph.rank[recvs].tolist() == [0]
