"""OTF2 (Score-P format): events per rank against a plain iteration with the ``otf2`` package,
timer conversion, communicators, collective expansion counts from the algorithm formulas.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

otf2 = pytest.importorskip("otf2")

from llamp.graph import SEND  # noqa: E402
from llamp.ingest import detect_format, read  # noqa: E402
from llamp.ingest.events import COLL, COLL_OPS, IRECV, ISEND, WAIT, IngestWarning  # noqa: E402
from llamp.ingest.otf2 import read_otf2  # noqa: E402
from llamp.lp import predict  # noqa: E402
from llamp.params import LogGPS  # noqa: E402

DATA = Path(__file__).parent / "data" / "traces" / "otf2" / "sstmacro-10ranks"
ANCHOR = DATA / "traces.otf2"


@pytest.fixture(scope="module")
def reference():
    """Per-rank facts from the otf2 package's own event iterator."""
    out = {
        "isend": defaultdict(list),  # rank → [(receiver, tag, bytes)]
        "irecv": defaultdict(list),
        "coll": defaultdict(Counter),  # rank → Counter((comm ref, op name))
        "first_isend_ns": {},
        "members": {},
    }
    with otf2.reader.open(str(ANCHOR)) as tr:
        defs = tr.definitions
        resolution = defs.clock_properties.timer_resolution
        locs = next(g for g in defs.groups if g.group_type == otf2.GroupType.COMM_LOCATIONS)
        rank_of = {loc: r for r, loc in enumerate(locs.members)}
        for comm in defs.comms:
            g = comm.group
            if g.group_type == otf2.GroupType.COMM_GROUP:
                out["members"][comm._ref] = [rank_of[m] for m in g.members]
            else:
                out["members"][comm._ref] = None  # self communicator
        init_end = {}
        for loc, ev in tr.events:
            r = rank_of[loc]
            name = type(ev).__name__
            if name == "Leave" and ev.region.name == "MPI_Init":
                init_end[r] = ev.time
            elif name == "Enter" and ev.region.name == "MPI_Isend":
                out["first_isend_ns"].setdefault(r, (ev.time - init_end[r]) * 1e9 / resolution)
            elif name == "MpiIsend":
                out["isend"][r].append((ev.receiver, ev.msg_tag, ev.msg_length))
            elif name == "MpiIrecv":
                out["irecv"][r].append((ev.sender, ev.msg_tag, ev.msg_length))
            elif name == "MpiCollectiveEnd":
                op = str(ev.collective_op).split(".")[-1]
                out["coll"][r][(ev.communicator._ref, op)] += 1
    out["resolution"] = resolution
    return out


def test_point_to_point_per_rank(reference):
    trace = read_otf2(DATA)
    ev = trace.events
    assert trace.num_ranks == 10
    assert trace.meta["timer_resolution_per_s"] == reference["resolution"]
    for r in range(10):
        mine = ev.rank == r
        sel = mine & (ev.kind == ISEND)
        expected = reference["isend"][r]
        assert int(sel.sum()) == len(expected) == 144
        assert sorted(ev.size[sel].tolist()) == sorted(x[2] for x in expected)
        assert sorted(ev.tag[sel].tolist()) == sorted(x[1] for x in expected)
        sel = mine & (ev.kind == IRECV)
        assert int(sel.sum()) == len(reference["irecv"][r])
        assert sorted(ev.size[sel].tolist()) == sorted(x[2] for x in reference["irecv"][r])
        # every Isend/Irecv request is completed by a wait row of the same rank
        waited = np.concatenate(
            [ev.requests(int(e)) for e in np.flatnonzero(mine & (ev.kind == WAIT))]
        )
        posted = np.concatenate(
            [
                ev.requests(int(e))
                for e in np.flatnonzero(mine & ((ev.kind == ISEND) | (ev.kind == IRECV)))
            ]
        )
        assert sorted(waited.tolist()) == sorted(posted.tolist())


def test_timer_conversion(reference):
    ev = read_otf2(ANCHOR).events
    for r in (0, 7):
        first = int(np.flatnonzero((ev.rank == r) & (ev.kind == ISEND))[0])
        assert ev.t_start_ns[first] == pytest.approx(reference["first_isend_ns"][r], abs=1e-3)


def test_collectives_and_communicators(reference):
    trace = read_otf2(DATA)
    ev = trace.events
    sizes = {c.members for c in trace.comms if c.members}
    assert {(0, 6), (1, 7), (2, 8), (3, 9)} <= sizes
    for r in range(10):
        expected = sum(n for (ref, op), n in reference["coll"][r].items() if op != "CREATE_HANDLE")
        assert int(np.count_nonzero((ev.rank == r) & (ev.kind == COLL))) == expected
    # sizes: the sstmacro test loops 4 B … 8 KiB per rank block; allgather on the world comm
    r0 = (ev.rank == 0) & (ev.kind == COLL) & (ev.coll == COLL_OPS.index("allgather"))
    world = ev.comm == 0
    assert ev.size[r0 & world].tolist() == [4 << k for k in range(12)]


def expected_messages(op: str, P: int) -> int:
    """Messages of one instance with the default algorithms (llamp.ingest.collectives)."""
    if P == 1:
        return 0
    p = 1 << (P.bit_length() - 1)
    return {
        "GATHER": P - 1,
        "SCATTER": P - 1,
        "REDUCE": P - 1,
        "BCAST": P - 1,
        "ALLGATHER": P * math.ceil(math.log2(P)),
        "ALLTOALL": P * (P - 1),
        "ALLREDUCE": 2 * (P - p) + p * int(math.log2(p)),
    }[op]


def test_graph_message_count(reference):
    # OTF2 3 records non-blocking collectives without messages: absorbed, and said so
    with pytest.warns(IngestWarning, match=r"MPI_Iallgather ×360, MPI_Iallreduce ×360"):
        graph = read(DATA)
    p2p = sum(len(v) for v in reference["isend"].values())
    coll = 0
    seen = Counter()
    for counts in reference["coll"].values():
        for (ref, op), n in counts.items():
            seen[(ref, op)] += n
    for (ref, op), n in seen.items():
        members = reference["members"][ref]
        P = 1 if members is None else len(members)
        coll += (n // P) * expected_messages(op, P)  # n calls = instances × members
    assert int(np.count_nonzero(graph.kind == SEND)) == p2p + coll == 3676
    assert predict(graph, LogGPS()).runtime_ns > 0


def test_auto_detection():
    assert detect_format(DATA) == "otf2"
    assert detect_format(ANCHOR) == "otf2"
    with pytest.warns(IngestWarning):
        assert read(ANCHOR).num_ranks == 10
