"""Non-blocking collectives (``MPI_Iallreduce``, …) are expanded like their blocking versions,
their first round at the call, the rest progressing until the wait that completes the request
(docs/model.md §Non-blocking collectives), read from liballprof and OTF2 traces.

The running example: 4 ranks; each computes 10 µs, starts an ``MPI_Iallreduce`` of one double
(8 B; recursive doubling: two rounds, peers ``r^1`` then ``r^2``), computes 20 µs, waits, and
computes 10 µs more. L = 3 µs, o = 1.5 µs, G = 6 ns/B, so one message costs
``2o + L + B·G = 3,000 + 3,000 + 7·6 = 6,042`` ns from its send's start to its receive's end.
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import numpy as np
import pytest
from liballprof_writer import WORLD

from llamp.errors import TraceError
from llamp.graph import CALC, IREQUIRES, RECV, REQUIRES, SEND
from llamp.ingest import read
from llamp.ingest.build import COLL_TAG_BASE
from llamp.ingest.dumpi import FUNCTIONS as DUMPI_FUNCTIONS
from llamp.ingest.events import ICOLL, IngestWarning
from llamp.ingest.goal import read_goal, write_goal
from llamp.ingest.liballprof import read_liballprof
from llamp.lp import predict
from llamp.lp.event_graph import _serialisation_chains
from llamp.params import LogGPS

PARAMS = {"L": 3000.0, "o": 1500.0, "G": 6.0}
MODELS = [(p, n) for p in ("async", "wait") for n in ("serial", "overlap")]
#: Every model: the program order under both progress and NIC models, the schedule order
#: (progress does not apply) under both NIC models; each with both rendezvous protocols (the
#: random programs send 300 kB, above S).
ALL_MODELS = [
    {"order": "program", "progress": p, "nic": n, "rendezvous": z}
    for p in ("async", "wait")
    for n in ("serial", "overlap")
    for z in ("handshake", "loggopsim")
] + [
    {"order": "schedule", "nic": n, "rendezvous": z}
    for n in ("serial", "overlap")
    for z in ("handshake", "loggopsim")
]


def comm(r: int, P: int) -> str:
    return f"{WORLD},{r},{P}"


def iallreduce(t0: float, t1: float, r: int, P: int, req: int) -> str:
    return f"MPI_Iallreduce:{t0}:1:2:1:10,8,8:3:{comm(r, P)}:{req}:{t1}"


def write_rank_files(directory: Path, lines_of) -> Path:
    """One liballprof rank file per entry of ``lines_of`` (a list of per-rank record lists),
    between MPI_Init (ending at 100 µs) and the given MPI_Finalize."""
    directory.mkdir(parents=True, exist_ok=True)
    for r, lines in enumerate(lines_of):
        head = ["# collprof 0.9 output file", "# llamp mpi mpich", "MPI_Init:-:1:2:100"]
        (directory / f"pmpi-trace-rank-{r}.txt").write_text("\n".join(head + lines) + "\n")
    return directory


def running_example(directory: Path, P: int = 4, gap_us: int = 20) -> Path:
    """Compute 10 µs, Iallreduce [110, 111] µs, compute ``gap_us``, Wait (4 µs), compute 10."""
    t_wait = 111 + gap_us
    return write_rank_files(
        directory,
        [
            [
                iallreduce(110, 111, r, P, 5000),
                f"MPI_Wait:{t_wait}:5000:6000:{t_wait + 4}",
                f"MPI_Finalize:{t_wait + 14}:-",
            ]
            for r in range(P)
        ],
    )


def quiet_read(path: Path, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = read(path, **kwargs)
    said = [str(w.message) for w in caught if issubclass(w.category, IngestWarning)]
    return graph, said


def runtime(graph, progress: str = "async", nic: str = "serial", **extra) -> float:
    """T under a receive-progress model: a choice of the program order, which is named (the
    default schedule order has no progress choice; its values are LogGOPSim's, given where a
    test compares them)."""
    params = LogGPS(**{**PARAMS, **extra}, progress=progress, nic=nic, order="program")
    return predict(graph, params).runtime_ns


# --------------------------------------------------------------------------- the running example
def test_no_warning_and_an_icoll_row(tmp_path):
    path = running_example(tmp_path / "t")
    trace = read_liballprof(path)
    ev = trace.events
    assert int(np.count_nonzero(ev.kind == ICOLL)) == 4
    assert sorted(set(ev.req_ids.tolist())) == [5000]
    graph, said = quiet_read(path)
    assert said == []
    assert graph.meta["collectives"] == {"allreduce": "recursive_doubling"}


def test_the_expansion_messages(tmp_path):
    graph, _ = quiet_read(running_example(tmp_path / "t"))
    coll = graph.tag >= COLL_TAG_BASE
    for r in range(4):
        sends = np.flatnonzero((graph.rank == r) & (graph.kind == SEND) & coll)
        recvs = np.flatnonzero((graph.rank == r) & (graph.kind == RECV) & coll)
        assert graph.peer[sends].tolist() == [r ^ 1, r ^ 2]
        assert graph.peer[recvs].tolist() == [r ^ 1, r ^ 2]
        assert graph.size[sends].tolist() == graph.size[recvs].tolist() == [8, 8]


def test_every_round_at_the_call_the_completion_at_the_wait(tmp_path):
    """Rank 0's vertices: calc, [round 1: send, recv, join], [round 2: send, recv, join], the
    calc before the wait, the wait's progress join, the calc after the wait. The calc after
    the call irequires round 1 only; the calc after the wait requires the last join; the
    progress join requires the first receive and the calc before the wait (the first blocking
    call)."""
    graph, _ = quiet_read(running_example(tmp_path / "t"))
    mine = np.flatnonzero(graph.rank == 0)
    kinds = [CALC, SEND, RECV, CALC, SEND, RECV, CALC, CALC, CALC, CALC]
    assert graph.kind[mine].tolist() == kinds
    assert graph.cost_ns[mine].tolist() == [10_000] + [0] * 6 + [20_000, 0, 10_000]
    v = mine[0] + np.arange(10)
    edges = set(
        zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), graph.edge_kind.tolist(), strict=True)
    )
    assert {(v[1], v[7], IREQUIRES), (v[2], v[7], IREQUIRES)} <= edges
    assert {(v[6], v[9], REQUIRES), (v[7], v[9], REQUIRES)} <= edges
    assert {(v[2], v[8], REQUIRES), (v[7], v[8], REQUIRES)} <= edges
    assert not any(src == v[8] for src, _, _ in edges)  # nothing waits for the progress join
    assert (v[3], v[4], REQUIRES) in edges and (v[3], v[5], REQUIRES) in edges


def test_a_blocking_call_before_the_wait_progresses_the_collective(tmp_path):
    """Rank 0 starts an Ibarrier, then blocks in a Recv that rank 2 answers only after its own
    wait, which needs rank 0's second round (dissemination: 0 → 2 in round 2). A valid MPI
    program: without a progress thread the Recv drives the barrier, so under progress "wait"
    rank 0's first receive is processed from the Recv on, not at its wait (which would be a
    false deadlock). G = 0, every message 2o + L = 6,000: the rounds end at 16,000 and 22,000;
    rank 2 computes 1 µs after its wait and sends at 23,000; rank 0's Recv ends at 29,000, and
    its last 10 µs make T = 39,000 in every model."""
    P = 4
    ranks = []
    for r in range(P):
        lines = [f"MPI_Ibarrier:110:{comm(r, P)}:4000:111"]
        if r == 0:
            lines += [
                f"MPI_Recv:111:1:1:10,8,8:2:5:{comm(0, P)}:77:130",
                "MPI_Wait:130:4000:88:131",
            ]
            lines.append("MPI_Finalize:141:-")
        elif r == 2:
            lines += ["MPI_Wait:111:4000:88:120", f"MPI_Send:121:1:1:10,8,8:0:5:{comm(2, P)}:125"]
            lines.append("MPI_Finalize:126:-")
        else:
            lines += ["MPI_Wait:111:4000:88:120", "MPI_Finalize:121:-"]
        ranks.append(lines)
    graph, said = quiet_read(write_rank_files(tmp_path / "t", ranks))
    assert said == []
    for model in ALL_MODELS:
        assert predict(graph, LogGPS(**{**PARAMS, "G": 0.0}, **model)).runtime_ns == 39_000, model


def driven_then_more_calls(directory: Path, irecv_first: bool) -> Path:
    """As above, but rank 0 sends to rank 1 between its Recv and its wait (rank 1 receives it
    after its own wait) and computes 4 µs before the wait; with ``irecv_first`` rank 0's
    Recv is an Irecv posted before the Ibarrier and completed by a Wait after it."""
    P = 4
    ranks = []
    for r in range(P):
        barrier = f"MPI_Ibarrier:110:{comm(r, P)}:4000:111"
        if r == 0:
            if irecv_first:
                recv = [
                    f"MPI_Irecv:105:1:1:10,8,8:2:5:{comm(0, P)}:7000:106",
                    barrier,
                    "MPI_Wait:111:7000:88:130",
                ]
            else:
                recv = [barrier, f"MPI_Recv:111:1:1:10,8,8:2:5:{comm(0, P)}:77:130"]
            lines = [
                *recv,
                f"MPI_Send:130:1:1:10,8,8:1:6:{comm(0, P)}:131",
                "MPI_Wait:135:4000:88:136",
                "MPI_Finalize:146:-",
            ]
        elif r == 1:
            lines = [
                barrier,
                "MPI_Wait:111:4000:88:120",
                f"MPI_Recv:121:1:1:10,8,8:0:6:{comm(1, P)}:77:140",
                "MPI_Finalize:141:-",
            ]
        elif r == 2:
            lines = [
                barrier,
                "MPI_Wait:111:4000:88:120",
                f"MPI_Send:121:1:1:10,8,8:0:5:{comm(2, P)}:125",
                "MPI_Finalize:126:-",
            ]
        else:
            lines = [barrier, "MPI_Wait:111:4000:88:120", "MPI_Finalize:121:-"]
        ranks.append(lines)
    return write_rank_files(directory, ranks)


@pytest.mark.parametrize("irecv_first", [False, True])
def test_calls_between_the_driving_call_and_the_wait(tmp_path, irecv_first):
    """The later rounds are no steps of the program on its CPU nor on its NIC: rank 0's round
    2 send (to rank 2, which answers the Recv only after its wait) is held behind neither the
    Send that follows the Recv nor the computation before the wait (either would be a false
    deadlock under nic serial). With the Recv: rank 2 receives round 2 at 22,000, computes
    1 µs, sends; rank 0's Recv ends at 29,000, its Send at 30,500, 4 µs of compute, the wait
    (long done), 10 µs: T = 44,500 in every model."""
    graph, said = quiet_read(driven_then_more_calls(tmp_path / "t", irecv_first))
    assert said == []
    for model in ALL_MODELS:
        params = LogGPS(**{**PARAMS, "G": 0.0}, **model)
        T = predict(graph, params, engine="graph").runtime_ns
        assert predict(graph, params, engine="glop").runtime_ns == pytest.approx(T, rel=1e-9)
        if not irecv_first:
            assert T == 44_500, model


def test_runtime_by_hand(tmp_path):
    """async (a progress thread): round 1 ends at 10,000 + 6,042 = 16,042, round 2 at 22,084,
    while the rank computes from 10,000 + o = 11,500 to 31,500; T = 31,500 + 10,000 = 41,500.
    wait (no progress thread): round 1's receive is processed inside the wait, at
    31,500 + o + B·G = 33,042 (nic serial charges the receiving CPU B·G), round 2 ends at
    39,084; T = 39,084 + 10,000 = 49,084; under nic overlap 31,500 + o = 33,000, round 2 at
    39,042, T = 49,042."""
    graph, _ = quiet_read(running_example(tmp_path / "t"))
    assert runtime(graph, "async", "serial") == 41_500
    assert runtime(graph, "async", "overlap") == 41_500
    assert runtime(graph, "wait", "serial") == 49_084
    assert runtime(graph, "wait", "overlap") == 49_042
    # no progress thread in the schedule order: round 1's message waits for the CPU, as
    # under progress wait (LogGOPSim 76451de on the graph written as GOAL: 49,084)
    for nic, T in (("serial", 49_084), ("overlap", 49_042)):
        for rendezvous in ("handshake", "loggopsim"):
            params = LogGPS(**PARAMS, order="schedule", nic=nic, rendezvous=rendezvous)
            assert predict(graph, params).runtime_ns == T
    # the blocking allreduce adds its 2 × 6,042 to the 40,000 of compute (52,084): under async
    # it is hidden; under wait round 1's message still travels during the compute, only its
    # receipt and round 2 wait for the wait
    assert runtime(graph, "async") < runtime(graph, "wait") < 10_000 + 12_084 + 30_000


def test_the_rounds_are_no_steps_of_the_program(tmp_path):
    """The program-order CPU chain holds the calcs and the first round's send, never a join
    or a later round's send (the MPI library sends it when round 1's message has arrived):
    chained before the 20 µs of compute it would make T the blocking call's 52,084. Round 1's
    join is progress, not a wait: under progress "wait" the first receive is the progress
    join's, processed after the compute before the wait (vertex numbers as above)."""
    graph, _ = quiet_read(running_example(tmp_path / "t"))
    cpu, _, wait_start = _serialisation_chains(graph, "wait", "serial")[:3]
    v = np.flatnonzero(graph.rank == 0)[0] + np.arange(10)
    members = set(cpu.a.tolist()) | set(cpu.b.tolist())
    assert not members & {int(v[3]), int(v[4]), int(v[6]), int(v[8])}
    pinned = set(zip(wait_start.a.tolist(), wait_start.b.tolist(), strict=True))
    assert (int(v[7]), int(v[2])) in pinned
    assert not any(r == v[5] for _, r in pinned)  # round 2 is received as it arrives


def test_the_semantics_are_the_graphs(tmp_path):
    """Written as GOAL and read back (no trace behind it), the graph gives the same T under
    every model: the rules look at the graph, not at where it came from."""
    graph, _ = quiet_read(running_example(tmp_path / "t"))
    write_goal(graph, tmp_path / "x.goal")
    again = read_goal(tmp_path / "x.goal")
    for model in ALL_MODELS:
        params = LogGPS(**PARAMS, **model)
        assert predict(again, params).runtime_ns == predict(graph, params).runtime_ns, model


def test_more_overlap_than_the_collective_needs(tmp_path):
    """With 100 µs of compute the messages are long done under async (T = 11,500 + 100,000 +
    10,000); under wait round 1 is received at 111,500 + 1,542 and round 2 takes 6,042."""
    graph, _ = quiet_read(running_example(tmp_path / "t", gap_us=100))
    assert runtime(graph, "async") == 121_500
    assert runtime(graph, "wait") == 111_500 + 1_542 + 6_042 + 10_000


# --------------------------------------------------------------------------- blocking = non-blocking
BLOCKING = {
    "allreduce": ("MPI_Allreduce", "1:2:8:10,8,8:3:{comm}"),
    "bcast": ("MPI_Bcast", "3:1000:13,1,1:1:{comm}"),
    "reduce": ("MPI_Reduce", "1:2:4:10,8,8:3:0:{comm}"),
    "allgather": ("MPI_Allgather", "1:1:10,8,8:2:1:10,8,8:{comm}"),
    "alltoall": ("MPI_Alltoall", "1:64:13,1,1:2:64:13,1,1:{comm}"),
    "barrier": ("MPI_Barrier", "{comm}"),
    "scan": ("MPI_Scan", "1:2:2:10,8,8:3:{comm}"),
}


def one_collective(directory: Path, P: int, op: str, nonblocking: bool) -> Path:
    """Compute 10 µs, the collective over [110, 115] µs (as I-call [110, 111] + Wait [111,
    115] when ``nonblocking``), compute 10 µs."""
    name, args = BLOCKING[op]
    ranks = []
    for r in range(P):
        fields = args.format(comm=comm(r, P))
        if nonblocking:
            iname = "MPI_I" + name[4].lower() + name[5:]
            lines = [f"{iname}:110:{fields}:4096:111", "MPI_Wait:111:4096:4200:115"]
        else:
            lines = [f"{name}:110:{fields}:115"]
        ranks.append(lines + ["MPI_Finalize:125:-"])
    return write_rank_files(directory, ranks)


@pytest.mark.parametrize("op", sorted(BLOCKING))
@pytest.mark.parametrize("P", [2, 5, 8])
def test_wait_right_after_the_start_equals_the_blocking_call(tmp_path, op, P):
    blocking, _ = quiet_read(one_collective(tmp_path / "b", P, op, False))
    nonblocking, said = quiet_read(one_collective(tmp_path / "n", P, op, True))
    assert said == []
    sends = nonblocking.kind == SEND
    assert int(sends.sum()) == int((blocking.kind == SEND).sum())
    assert sorted(nonblocking.size[sends].tolist()) == sorted(blocking.size[blocking.kind == SEND])
    for model in ALL_MODELS:
        for S in (65_536, 16):  # eager, and rendezvous for the larger messages
            params = LogGPS(**PARAMS, S=S, **model)
            assert predict(nonblocking, params).runtime_ns == pytest.approx(
                predict(blocking, params).runtime_ns, rel=1e-12
            ), (model, S)


def test_analytic_model_equals_the_blocking_call(tmp_path):
    choice = {"allreduce": "thakur_gropp"}
    blocking, _ = quiet_read(
        one_collective(tmp_path / "b", 8, "allreduce", False), collectives=choice
    )
    nonblocking, _ = quiet_read(
        one_collective(tmp_path / "n", 8, "allreduce", True), collectives=choice
    )
    for progress, nic in MODELS:
        assert runtime(nonblocking, progress, nic) == runtime(blocking, progress, nic)


# --------------------------------------------------------------------------- completions
def two_iallreduces(directory: Path, completion: list[str]) -> Path:
    """Two Iallreduces (requests 4000 and 4004, MPICH's 4-byte MPI_Request) started at 110 and
    111 µs, 20 µs of compute, then ``completion`` (records from 132 µs on)."""
    P = 4
    return write_rank_files(
        directory,
        [
            [
                iallreduce(110, 111, r, P, 4000),
                iallreduce(111, 112, r, P, 4004),
                *completion,
                "MPI_Finalize:150:-",
            ]
            for r in range(P)
        ],
    )


COMPLETIONS = {
    "waitall": ["MPI_Waitall:132:2:4000:5000:136"],
    "testall": [
        "MPI_Testall:132:2:4000:6000:0:5000:133",  # flag 0: completes nothing (computation)
        "MPI_Testall:134:2:4000:6000:1:5000:136",
    ],
    "waitsome": ["MPI_Waitsome:132:2:4000:6000:2:7000:0,1:5000:136"],
    "two waits": ["MPI_Wait:132:4000:5000:134", "MPI_Wait:134:4004:5000:136"],
    "test loop": [
        "MPI_Test:132:4000:6000:0:5000:133",
        "MPI_Test:133:4000:6000:1:5000:134",
        "MPI_Test:134:4004:6000:1:5000:136",
    ],
    "waitany": [
        "MPI_Waitany:132:2:4000:6000:1:5000:134",
        "MPI_Waitany:134:2:4000:6000:0:5000:136",
    ],
}


#: When the call that completes both requests at once starts (µs → ns).
COMPLETED_AT = {"waitall": 132_000, "waitsome": 132_000, "testall": 134_000}


@pytest.mark.parametrize("how", sorted(COMPLETIONS))
def test_every_completion_waits_for_the_collective(tmp_path, how):
    """Whatever completes the two requests, a calc after it requires each last join."""
    graph, said = quiet_read(two_iallreduces(tmp_path / how, COMPLETIONS[how]))
    assert said == []
    req = graph.edge_kind == REQUIRES
    zero_calc = (graph.kind == CALC) & (graph.cost_ns == 0)
    after = (graph.kind[graph.edge_dst] == CALC) & (graph.cost_ns[graph.edge_dst] > 0)
    joins_waited = int(np.count_nonzero(req & zero_calc[graph.edge_src] & after))
    assert joins_waited == 2 * 4  # two instances, four members
    if how in COMPLETED_AT:
        # both start their first round (o each), the rank computes 20 µs from 13,000, and the
        # collectives (done by 11,500 + 12,084) are hidden: T = 33,000 + the 14 µs after the
        # call, later by the failed tests' time that counts as computation
        late = COMPLETED_AT[how] - 132_000
        assert runtime(graph, "async") == 47_000 + late
        reference, _ = quiet_read(two_iallreduces(tmp_path / "ref", COMPLETIONS["waitall"]))
        assert runtime(graph, "wait") == runtime(reference, "wait") + late


def test_an_uncompleted_request_is_expanded_and_said(tmp_path):
    path = write_rank_files(
        tmp_path / "t",
        [[iallreduce(110, 111, r, 2, 4000), "MPI_Finalize:130:-"] for r in range(2)],
    )
    graph, said = quiet_read(path)
    assert any("no wait or test in the trace completes" in s for s in said)
    assert int(np.count_nonzero(graph.kind == SEND)) == 2
    # nothing waits: the rank ends its compute at 10,000 + o + 19,000; the message at 16,042
    assert runtime(graph) == 10_000 + 1_500 + 19_000


def test_blocking_and_nonblocking_calls_never_match(tmp_path):
    path = write_rank_files(
        tmp_path / "t",
        [
            [iallreduce(110, 111, 0, 2, 4000), "MPI_Wait:111:4000:5000:115", "MPI_Finalize:125:-"],
            [f"MPI_Allreduce:110:1:2:1:10,8,8:3:{comm(1, 2)}:115", "MPI_Finalize:125:-"],
        ],
    )
    with pytest.raises(TraceError, match=r"rank 1 calls MPI_Allreduce, but rank 0 calls "):
        read(path)


# --------------------------------------------------------------------------- OTF2 and DUMPI
def write_otf2(directory: Path, P: int, gap_us: int = 20) -> Path:
    """The running example as Score-P records it: NonBlockingCollectiveRequest in the
    MPI_Iallreduce region, NonBlockingCollectiveComplete (with the operation, communicator and
    byte totals) in the MPI_Wait that completes it; 1 tick = 1 µs."""
    otf2 = pytest.importorskip("otf2")
    from otf2.enums import CollectiveOp, GroupType, Paradigm
    from otf2.events import NonBlockingCollectiveComplete, NonBlockingCollectiveRequest

    t_wait = 111 + gap_us
    with otf2.writer.open(str(directory), timer_resolution=1_000_000) as trace:
        defs = trace.definitions
        node = defs.system_tree_node("node")
        locations = [
            defs.location(
                f"rank {r}", group=defs.location_group(f"rank {r}", system_tree_parent=node)
            )
            for r in range(P)
        ]
        group = defs.group(
            "world", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locations
        )
        world = defs.comm("MPI_COMM_WORLD", group=group, parent=None)
        regions = {
            name: defs.region(name, paradigm=Paradigm.MPI)
            for name in ("MPI_Init", "MPI_Iallreduce", "MPI_Wait", "MPI_Finalize")
        }
        undefined_root = 0xFFFFFFFF
        for location in locations:
            writer = trace.event_writer_from_location(location)
            calls = [
                ("MPI_Init", 0, 100, None),
                ("MPI_Iallreduce", 110, 111, NonBlockingCollectiveRequest(111, 77)),
                (
                    "MPI_Wait",
                    t_wait,
                    t_wait + 4,
                    NonBlockingCollectiveComplete(
                        t_wait + 4, CollectiveOp.ALLREDUCE, world, undefined_root, 8 * P, 8 * P, 77
                    ),
                ),
                ("MPI_Finalize", t_wait + 14, t_wait + 15, None),
            ]
            for name, t0, t1, event in calls:
                writer.enter(t0, regions[name])
                if event is not None:
                    writer(event)
                writer.leave(t1, regions[name])
    return directory / "traces.otf2"


def test_otf2_running_example(tmp_path):
    anchor = write_otf2(tmp_path / "otf2", 4)
    graph, said = quiet_read(anchor)
    assert said == []
    coll = graph.tag >= COLL_TAG_BASE
    for r in range(4):
        sends = np.flatnonzero((graph.rank == r) & (graph.kind == SEND) & coll)
        assert graph.peer[sends].tolist() == [r ^ 1, r ^ 2]
        assert graph.size[sends].tolist() == [8, 8]
    liballprof, _ = quiet_read(running_example(tmp_path / "liballprof"))
    for progress, nic in MODELS:
        assert runtime(graph, progress, nic) == runtime(liballprof, progress, nic)
    assert runtime(graph, "async") == 41_500 and runtime(graph, "wait") == 49_084


def test_otf2_request_never_completed_is_absorbed_with_a_warning(tmp_path):
    """Without its completion record the call has no operation or communicator."""
    otf2 = pytest.importorskip("otf2")
    from otf2.enums import GroupType, Paradigm
    from otf2.events import NonBlockingCollectiveRequest

    with otf2.writer.open(str(tmp_path / "o"), timer_resolution=1_000_000) as trace:
        defs = trace.definitions
        node = defs.system_tree_node("node")
        loc = defs.location("rank 0", group=defs.location_group("r", system_tree_parent=node))
        group = defs.group(
            "w", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=[loc]
        )
        defs.comm("MPI_COMM_WORLD", group=group, parent=None)
        writer = trace.event_writer_from_location(loc)
        for name, t0, t1 in (
            ("MPI_Init", 0, 100),
            ("MPI_Iallreduce", 110, 111),
            ("MPI_Finalize", 120, 121),
        ):
            region = defs.region(name, paradigm=Paradigm.MPI)
            writer.enter(t0, region)
            if name == "MPI_Iallreduce":
                writer(NonBlockingCollectiveRequest(111, 9))
            writer.leave(t1, region)
    graph, said = quiet_read(tmp_path / "o" / "traces.otf2")
    assert any(
        "non-blocking collective requests whose completion is not in the trace" in s for s in said
    )
    assert graph.num_vertices == 1  # one rank, one calc: the call is computation


def test_otf2_writer_without_request_events_is_said(reference_sstmacro):
    """SST/macro's OTF2 writer records MPI_Iallgather/Ialltoall/Iallreduce as bare regions:
    no communicator, size or request. They stay computation, and the warning says why."""
    said = reference_sstmacro
    assert any("MPI_Iallgather ×360, MPI_Iallreduce ×360" in s for s in said)
    assert any("without NonBlockingCollectiveRequest/Complete events" in s for s in said)


@pytest.fixture(scope="module")
def reference_sstmacro():
    pytest.importorskip("otf2")
    data = Path(__file__).parent / "data" / "traces" / "otf2" / "sstmacro-10ranks"
    return quiet_read(data)[1]


def test_dumpi_cannot_record_them():
    """DUMPI's function table (sst-dumpi's dumpi_function enum) stops at MPI-2.2: a DUMPI trace
    holds no non-blocking collective, so there is none to keep."""
    names = {
        "MPI_I" + op
        for op in (
            "barrier",
            "bcast",
            "reduce",
            "allreduce",
            "allgather",
            "alltoall",
            "gather",
            "scatter",
            "scan",
            "exscan",
        )
    }
    assert names.isdisjoint(DUMPI_FUNCTIONS)
    assert "MPI_Allreduce" in DUMPI_FUNCTIONS and "MPI_Isend" in DUMPI_FUNCTIONS


def test_persistent_collectives_are_refused_by_name(tmp_path):
    """MPI-4's MPI_Allreduce_init + MPI_Start are not modelled: an error naming the call, not
    an 'unknown call'; lenient reading absorbs them."""
    path = write_rank_files(
        tmp_path / "t",
        [
            [
                f"MPI_Allreduce_init:110:1:2:1:10,8,8:3:{comm(r, 2)}:99:4000:111",
                "MPI_Start:111:4000:112",
                "MPI_Wait:112:4000:5:113",
                "MPI_Finalize:120:-",
            ]
            for r in range(2)
        ],
    )
    with pytest.raises(TraceError, match=r"rank-0.txt:4: MPI_Allreduce_init: persistent collec"):
        read(path)
    graph, said = quiet_read(path, lenient=True)
    assert int(np.count_nonzero(graph.kind == SEND)) == 0
    assert any("persistent collectives (MPI-4) are not modelled" in s for s in said)


# --------------------------------------------------------------------------- random programs
ISTARTS = {
    "MPI_Iallreduce": "1:2:{n}:13,1,1:3:{comm}",
    "MPI_Ibcast": "3:{n}:13,1,1:1:{comm}",
    "MPI_Ireduce": "1:2:{n}:13,1,1:3:0:{comm}",
    "MPI_Iallgather": "1:{n}:13,1,1:2:{n}:13,1,1:{comm}",
    "MPI_Ialltoall": "1:{n}:13,1,1:2:{n}:13,1,1:{comm}",
    "MPI_Ibarrier": "{comm}",
}


def random_program(directory: Path, seed: int) -> Path:
    """Every rank: the same steps (non-blocking collectives of 8 B … 300 kB, a ring of
    Irecv/Isend, waits on random subsets of the pending requests, a Sendrecv ring, a blocking
    Allreduce), random compute between."""
    rng = random.Random(seed)
    P = rng.choice([2, 3, 4, 5, 8])
    steps, pending = [], []
    for k in range(rng.randint(2, 7)):
        c = rng.random()
        if c < 0.4:
            steps.append(("start", rng.choice(sorted(ISTARTS)), rng.choice([8, 1000, 300_000]), k))
            pending.append(4000 + 8 * k)
        elif c < 0.5:
            steps.append(("halo", rng.choice([8, 300_000]), k))
            pending += [6000 + 8 * k, 6004 + 8 * k]
        elif c < 0.65 and pending:
            rng.shuffle(pending)
            m = rng.randint(1, len(pending))
            steps.append(("wait", pending[:m]))
            pending = pending[m:]
        else:
            steps.append(("ring" if c < 0.85 else "allreduce", rng.choice([8, 300_000])))
    steps.append(("wait", pending))
    ranks = []
    for r in range(P):
        t, lines = 100, []
        for step in steps:
            t += rng.randint(0, 30)
            if step[0] == "start":
                _, name, n, k = step
                fields = ISTARTS[name].format(n=n, comm=comm(r, P))
                lines.append(f"{name}:{t}:{fields}:{4000 + 8 * k}:{t + 1}")
                t += 1
            elif step[0] == "halo":
                _, n, k = step
                right, left = (r + 1) % P, (r - 1) % P
                lines.append(
                    f"MPI_Irecv:{t}:1:{n}:13,1,1:{left}:{k}:{comm(r, P)}:{6000 + 8 * k}:{t + 1}"
                )
                lines.append(
                    f"MPI_Isend:{t + 1}:1:{n}:13,1,1:{right}:{k}:{comm(r, P)}:{6004 + 8 * k}:{t + 2}"
                )
                t += 2
            elif step[0] == "wait":
                for req in step[1]:
                    lines.append(f"MPI_Wait:{t}:{req}:5:{t + 1}")
                    t += 1
            elif step[0] == "ring":
                n, right, left = step[1], (r + 1) % P, (r - 1) % P
                lines.append(
                    f"MPI_Sendrecv:{t}:1:{n}:13,1,1:{right}:3:2:{n}:13,1,1:{left}:3:{comm(r, P)}:5:{t + 2}"
                )
                t += 2
            else:
                lines.append(f"MPI_Allreduce:{t}:1:2:1:10,8,8:3:{comm(r, P)}:{t + 2}")
                t += 2
        ranks.append([*lines, f"MPI_Finalize:{t + 5}:-"])
    return write_rank_files(directory, ranks)


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_never_deadlock(tmp_path, seed):
    """Valid programs stay deadlock-free under every model (no chain holds the program back for
    a round's message it does not wait for, and the progress join pins the first receive at a
    blocking call, never behind a call that waits for the peers' later rounds); the graph
    engine and GLOP agree on T; and progress "wait" only adds constraints: T(async) ≤ T(wait)
    with the NIC model ``overlap`` (under ``serial`` the receive NIC order, by event depth, may
    change with them)."""
    graph, said = quiet_read(random_program(tmp_path / "t", seed))
    assert said == []
    T = {}
    for model in ALL_MODELS:
        params = LogGPS(**PARAMS, **model)
        graph_T = predict(graph, params, engine="graph").runtime_ns
        glop_T = predict(graph, params, engine="glop").runtime_ns
        assert glop_T == pytest.approx(graph_T, rel=1e-9), model
        T[tuple(model.values())] = graph_T
    for z in ("handshake", "loggopsim"):
        assert T["program", "async", "overlap", z] <= T["program", "wait", "overlap", z] + 1e-6
