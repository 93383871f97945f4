"""SimGrid time-independent traces: both shared layouts, sizes, times, collectives, errors.

Expected values are computed here from the trace text with plain string operations, and the
collective message counts from the algorithm formulas of ``llamp.ingest.collectives`` (P·⌈log2 P⌉
dissemination barrier, P−1 binomial bcast/reduce/gather, 2r + p'·log2 p' recursive-doubling
allreduce, P(P−1) linear alltoall, one message per non-zero off-diagonal alltoallv entry).
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from llamp.errors import InputError, ParameterError, TraceError
from llamp.graph import CALC, SEND
from llamp.ingest import default_name, detect_format, read
from llamp.ingest.build import build_graph
from llamp.ingest.events import COLL, COLL_OPS, IRECV, ISEND, RECV, WAIT, IngestWarning
from llamp.ingest.events import SEND as EV_SEND
from llamp.ingest.simgrid import DEFAULT_FLOPS_PER_S, find_trace_files, read_simgrid
from llamp.lp import predict
from llamp.params import LogGPS

DATA = Path(__file__).parent / "data" / "traces" / "simgrid-ti"
TI32 = DATA / "ti-32ranks"
ACTIONS = DATA / "actions"


def lines_of(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines() if line.strip()]


def pof2(P: int) -> int:
    return 1 << (P.bit_length() - 1)


def rd_allreduce(P: int) -> int:
    p = pof2(P)
    return 2 * (P - p) + p * int(math.log2(p))


# --------------------------------------------------------------------------- ti-32ranks
def test_ti32_layout_and_collective_rows():
    files = find_trace_files(TI32)
    assert [f.name for f, _ in files] == [f"ti_trace{r}.txt" for r in range(32)]
    assert [r for _, r in files] == list(range(32))
    trace = read_simgrid(TI32)
    assert trace.num_ranks == 32
    ev = trace.events
    for r in (0, 17, 31):
        text = lines_of(TI32 / f"ti_trace{r}.txt")
        assert all(int(t[0]) == r for t in text)
        expected = Counter(t[1] for t in text if t[1] not in ("compute", "comm_size"))
        mine = ev.rank == r
        got = Counter(COLL_OPS[c] for c in ev.coll[mine & (ev.kind == COLL)])
        for op in ("barrier", "bcast", "allreduce", "alltoall", "alltoallv", "gather"):
            assert got[op] == expected[op], (r, op)
        # init 1 → MPI_DOUBLE: sizes are counts × 8 bytes
        sizes = ev.size[mine & (ev.kind == COLL) & (ev.coll == COLL_OPS.index("alltoall"))]
        counts = [int(t[2]) for t in text if t[1] == "alltoall"]
        assert sizes.tolist() == [8 * c for c in counts]
        reduce_sizes = ev.size[mine & (ev.kind == COLL) & (ev.coll == COLL_OPS.index("allreduce"))]
        # "allreduce <count> <flops> [datatype]": datatype 1 is MPI_INT (4 B), default double
        width = {"0": 8, "1": 4}
        assert reduce_sizes.tolist() == [
            width[t[4] if len(t) > 4 else "0"] * int(t[2]) for t in text if t[1] == "allreduce"
        ]


def test_ti32_graph_messages_and_calc_time():
    with warnings.catch_warnings():
        warnings.simplefilter("error", IngestWarning)
        graph = read(TI32)
    P = 32
    text0 = lines_of(TI32 / "ti_trace0.txt")
    n = Counter(t[1] for t in text0)
    # alltoallv: one message per non-zero receive count from another rank (all ranks' lines)
    a2av = 0
    for r in range(P):
        rows = [t for t in lines_of(TI32 / f"ti_trace{r}.txt") if t[1] == "alltoallv"]
        for t in rows:
            recv = [int(x) for x in t[2 + P + 2 : 2 + 2 * P + 2]]
            a2av += sum(1 for src, c in enumerate(recv) if c > 0 and src != r)
    expected = (
        n["barrier"] * P * math.ceil(math.log2(P))
        + n["bcast"] * (P - 1)
        + n["allreduce"] * rd_allreduce(P)
        + n["alltoall"] * P * (P - 1)
        + n["gather"] * (P - 1)
        + a2av
    )
    assert int(np.count_nonzero(graph.kind == SEND)) == expected == 10774
    # calc of rank 0 = (compute flops + allreduce flops) / host speed
    flops = sum(float(t[2]) for t in text0 if t[1] == "compute")
    flops += sum(float(t[3]) for t in text0 if t[1] == "allreduce")
    calc0 = graph.cost_ns[(graph.rank == 0) & (graph.kind == CALC)].sum()
    assert DEFAULT_FLOPS_PER_S == 1e9 and graph.meta["flops_per_s"] == 1e9
    assert calc0 == pytest.approx(flops, rel=1e-12)  # 1 Gf/s: 1 flop = 1 ns
    assert calc0 == pytest.approx(73.13e9, rel=1e-3)  # 73 s of compute on rank 0
    T = predict(graph, LogGPS()).runtime_ns
    assert T > calc0
    # SimGrid's smpi/host-speed default, 20 kf/s: the same flops take 50 000 times longer
    slow = build_graph(read_simgrid(TI32, flops_per_s=2e4))
    calc0 = slow.cost_ns[(slow.rank == 0) & (slow.kind == CALC)].sum()
    assert calc0 == pytest.approx(flops / 2e4 * 1e9, rel=1e-12)
    assert calc0 / 86400e9 == pytest.approx(42.3, abs=0.1)  # days


def test_host_speed_in_simgrid_notation_is_recorded():
    flops = sum(float(t[2]) for t in lines_of(TI32 / "ti_trace0.txt") if t[1] == "compute")
    flops += sum(float(t[3]) for t in lines_of(TI32 / "ti_trace0.txt") if t[1] == "allreduce")
    for text, speed in (("2.5Gf", 2.5e9), ("500Mf", 5e8), ("20kf", 2e4), (4e9, 4e9)):
        graph = read(TI32, host_speed=text)
        assert graph.meta["flops_per_s"] == speed
        calc0 = graph.cost_ns[(graph.rank == 0) & (graph.kind == CALC)].sum()
        assert calc0 == pytest.approx(flops / speed * 1e9, rel=1e-12)
    assert read(TI32, host_speed="2.5Gf").meta["host_speed"] == "2.5Gf"
    assert read(TI32).meta["host_speed"] == "1Gf"


@pytest.mark.parametrize("bad", ["0", "-1Gf", "1gf", "fast", "inf", "1e999"])
def test_bad_host_speed_is_a_clear_error(bad):
    with pytest.raises(ParameterError, match="host speed"):
        read(TI32, host_speed=bad)


def test_host_speed_is_refused_for_a_trace_in_time():
    with pytest.raises(InputError, match=r"sweep3d-2x2: a host speed .* liballprof"):
        read(DATA.parent / "liballprof" / "sweep3d-2x2", host_speed="1Gf")


def test_each_list_file_of_a_folder_names_its_own_run(tmp_path):
    """Several list files in one folder (as SMPI writes one per run, e.g. NPB's cg.S.2.txt and
    ep.S.2.txt beside their rank files): each trace is named after its list file."""
    for f in ("actions0.txt", "actions1.txt"):
        (tmp_path / f).write_bytes((ACTIONS / f).read_bytes())
    for name in ("cg.S.2.txt", "ep.S.2.txt"):
        (tmp_path / name).write_text("actions0.txt\nactions1.txt\n")
    names = {read(tmp_path / n).name for n in ("cg.S.2.txt", "ep.S.2.txt")}
    assert names == {"cg.S.2", "ep.S.2"}
    assert default_name(tmp_path / "cg.S.2.txt") == "cg.S.2"
    # a one-file trace is named by its file, a rank file or a folder by the folder
    assert read(ACTIONS / "actions_allreduce.txt").name == "actions_allreduce"
    assert default_name(TI32 / "ti_trace5.txt") == default_name(TI32) == "ti-32ranks"


# --------------------------------------------------------------------------- actions/
ACTION_FILES = sorted(ACTIONS.glob("actions_*.txt"))


@pytest.mark.parametrize("path", ACTION_FILES, ids=lambda p: p.stem)
def test_actions_point_to_point_counts_and_sizes(path):
    text = lines_of(path)
    trace = read_simgrid(path)
    ev = trace.events
    P = trace.num_ranks
    assert P == len({t[0] for t in text})
    for r in range(P):
        mine = [t for t in text if int(t[0]) == r]
        init = next(t for t in mine if t[1] == "init")
        elem = 8 if len(init) > 2 else 1  # SimGrid: init with an argument → double, else byte
        for action, kind in (("send", EV_SEND), ("isend", ISEND), ("recv", RECV), ("irecv", IRECV)):
            rows = [t for t in mine if t[1] == action]
            sel = (ev.rank == r) & (ev.kind == kind)
            assert int(sel.sum()) == len(rows), (path.name, r, action)
            assert ev.size[sel].tolist() == [int(float(t[4])) * elem for t in rows]
            assert ev.peer[sel].tolist() == [int(t[2]) for t in rows]
            assert ev.tag[sel].tolist() == [int(t[3]) for t in rows]
    graph = read(path)
    assert predict(graph, LogGPS()).runtime_ns > 0


EXPECTED_SENDS = {
    # file: messages of the expanded graph, from the formulas (P ranks in the file)
    "actions_allgatherv": 4 * 3,  # ring allgatherv P(P−1), P = 4
    "actions_allreduce": rd_allreduce(3),  # recursive doubling, P = 3: 2r + p'·log2 p' = 4
    "actions_alltoall": 3 * 2,  # linear P(P−1)
    "actions_alltoallv": 6,  # all off-diagonal counts are non-zero
    "actions_barrier": 1 + 3 * 2,  # one send + dissemination P·⌈log2 P⌉
    "actions_bcast": 3 * 2,  # two binomial bcasts and one binomial reduce, P−1 each
    "actions_bcast_reduce_datatypes": 3 * 2,
    "actions_gather": 3,  # binomial gather P−1, P = 4
    "actions_reducescatter": 4 * 2,  # recursive halving, P = 4: p'·log2 p'
    "actions_waitall": 3,
    "actions_with_isend": 3,
}


@pytest.mark.parametrize("name", sorted(EXPECTED_SENDS))
def test_actions_collective_expansion(name):
    graph = read(ACTIONS / f"{name}.txt")
    assert int(np.count_nonzero(graph.kind == SEND)) == EXPECTED_SENDS[name]
    assert graph.messages()[0].size == EXPECTED_SENDS[name]


def test_allgatherv_blocks_travel_with_their_sizes():
    path = ACTIONS / "actions_allgatherv.txt"
    blocks = [int(x) for x in lines_of(path)[4][3:7]]  # recvcounts, datatype 0 = double
    graph = read(path)
    sizes = sorted(graph.size[graph.kind == SEND].tolist())
    assert sizes == sorted(8 * b for b in blocks for _ in range(3))  # ring: each block P−1 times


def test_datatypes_and_roots():
    trace = read_simgrid(ACTIONS / "actions_bcast_reduce_datatypes.txt")
    ev = trace.events
    coll = ev.kind == COLL
    # bcast 5e4 1 0 (root 1, double), bcast 5e4 0 3 (root 0, short), reduce 5e4 5e8 0 4 (long)
    assert ev.root[coll & (ev.rank == 2)].tolist() == [1, 0, 0]
    assert ev.size[coll & (ev.rank == 2)].tolist() == [50000 * 8, 50000 * 2, 50000 * 8]
    # the reduce's 5e8 flops run after it: rank 1's last calc is 5e8 flops / host speed
    graph = build_graph(trace)
    calcs = graph.cost_ns[(graph.rank == 1) & (graph.kind == CALC)]
    assert calcs[-1] == pytest.approx(5e8 / DEFAULT_FLOPS_PER_S * 1e9)


def test_split_traces_list_file_and_waits():
    files = find_trace_files(ACTIONS / "split_traces")
    assert [(f.name, r) for f, r in files] == [("actions0.txt", 0), ("actions1.txt", 1)]
    trace = read_simgrid(ACTIONS / "split_traces")
    ev = trace.events
    one = ev.rank == 1
    # 1 isend 0 1 1e6 / 1 irecv 0 2 1e6 / 1 wait 0 1 2: the wait completes the irecv only
    irecv = int(np.flatnonzero(one & (ev.kind == IRECV))[0])
    wait = int(np.flatnonzero(one & (ev.kind == WAIT))[0])
    assert ev.requests(wait).tolist() == ev.requests(irecv).tolist()
    # compute 1e9 flops before the isend: 1e9 flops / host speed
    isend = int(np.flatnonzero(one & (ev.kind == ISEND))[0])
    assert ev.t_start_ns[isend] == pytest.approx(1e9 / DEFAULT_FLOPS_PER_S * 1e9)
    graph = read(ACTIONS / "split_traces")
    assert int(np.count_nonzero(graph.kind == SEND)) == 3


def test_old_format_without_tags(tmp_path):
    path = tmp_path / "old.txt"
    path.write_text(
        "0 init\n0 compute 2e4\n0 send 1 1500\n0 Isend 1 10 1\n0 waitAll\n0 finalize\n"
        "1 init\n1 Irecv 0 1500\n1 recv 0 10 1\n1 wait\n1 finalize\n"
    )
    trace = read_simgrid(path)
    ev = trace.events
    assert trace.meta["ti_variant"].startswith("no tags")
    sends = ev.kind == EV_SEND
    assert ev.size[sends].tolist() == [1500]
    assert ev.size[ev.kind == ISEND].tolist() == [10 * 4]  # datatype 1 = MPI_INT
    wait = int(np.flatnonzero((ev.rank == 1) & (ev.kind == WAIT))[0])
    irecv = int(np.flatnonzero(ev.kind == IRECV)[0])
    assert ev.requests(wait).tolist() == ev.requests(irecv).tolist()
    assert ev.t_start_ns[np.flatnonzero(sends)[0]] == pytest.approx(2e4)  # 2e4 flops at 1 Gf/s
    assert int(np.count_nonzero(read(path).kind == SEND)) == 2


# --------------------------------------------------------------------------- errors, detection
def test_missing_argument_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("0 init\n1 init\n0 send 1 0\n1 recv 0 0 10 0\n0 finalize\n1 finalize\n")
    with pytest.raises(TraceError) as err:
        read(path)
    message = str(err.value)
    assert message.startswith(f"{path}:3: send has 2 arguments, expected 3 to 4")
    assert "missing argument" in message


def test_unknown_action_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("0 init\n0 frobnicate 3\n0 finalize\n")
    with pytest.raises(TraceError, match=rf"^{path}:2: unknown SimGrid action 'frobnicate'"):
        read_simgrid(path)
    with pytest.warns(IngestWarning, match="unknown SimGrid action"):
        graph = read(path, lenient=True)
    assert graph.num_ranks == 1


def test_non_numeric_argument(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("0 init\n0 compute lots\n0 finalize\n")
    with pytest.raises(TraceError, match=rf"^{path}:2: compute: argument 1 \('lots'\)"):
        read_simgrid(path)


def test_auto_detection():
    assert detect_format(TI32) == "simgrid"
    assert detect_format(TI32 / "ti_trace5.txt") == "simgrid"
    assert read_simgrid(TI32 / "ti_trace5.txt").num_ranks == 32  # a rank file stands for its set
    assert detect_format(ACTIONS / "actions_gather.txt") == "simgrid"
    assert detect_format(ACTIONS / "split_traces") == "simgrid"
    assert detect_format(ACTIONS) == "simgrid"  # actions<N>.txt are the rank files of one trace
