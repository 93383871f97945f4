"""The liballprof reader: files, headers, field checks, MPI library detection, communicators."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from llamp.errors import InputError, TraceError
from llamp.ingest import detect_format, read, read_trace
from llamp.ingest.events import (
    ANY_SOURCE,
    ANY_TAG,
    CANCEL,
    COLL,
    COLL_OPS,
    FINALIZE,
    INIT,
    IRECV,
    PROC_NULL,
    RECV,
    SEND,
    SR_RECV,
    SR_SEND,
    WAIT,
    IngestWarning,
)
from llamp.ingest.liballprof import find_rank_files, read_liballprof

DATA = Path(__file__).parent / "data" / "traces" / "liballprof"
SWEEP3D = DATA / "sweep3d-2x2"
BCAST = DATA / "bcast-synthetic"
SPHOT = DATA / "sphot"


def comm(r: int, P: int, handle: int = 1140850688) -> str:
    return f"{handle},{r},{P}"


def write_trace(
    directory: Path,
    bodies: list[list[str]],
    *,
    t_init: int = 100,
    header: str = "# collprof 0.9 output file",
    extra: tuple[str, ...] = (),
    pattern: str = "pmpi-trace-rank-{r}.txt",
    finalize: int | None = None,
) -> Path:
    """One file per rank: header, MPI_Init ending at ``t_init``, the body, MPI_Finalize."""
    directory.mkdir(parents=True, exist_ok=True)
    for r, body in enumerate(bodies):
        last = max(
            [t_init]
            + [int(float(line.rsplit(":", 1)[1])) for line in body if line.startswith("MPI_")]
        )
        end = finalize if finalize is not None else last + 10
        lines = [
            header,
            "# Init clockdiff: 0.000000",
            *extra,
            "",
            f"MPI_Init:-:140735000539132:140735000539120:{t_init}",
            *body,
            "# Finalize clockdiff: 0.000000",
            f"MPI_Finalize:{end}:-",
        ]
        (directory / pattern.format(r=r)).write_text("\n".join(lines) + "\n")
    return directory


def send(
    t0: int, t1: int, dest: int, tag: int, r: int, P: int, count: int = 1, name: str = "MPI_Send"
) -> str:
    return f"{name}:{t0}:6575616:{count}:1,4,4:{dest}:{tag}:{comm(r, P)}:{t1}"


def recv(t0: int, t1: int, src: int, tag: int, r: int, P: int, count: int = 1) -> str:
    return f"MPI_Recv:{t0}:6575616:{count}:1,4,4:{src}:{tag}:{comm(r, P)}:140735000539136:{t1}"


# --------------------------------------------------------------------------- files
def test_rank_files_unpadded_padded_and_dat(tmp_path):
    assert [f.name for f in find_rank_files(SWEEP3D)] == [
        f"pmpi-trace-rank-{r}.txt" for r in range(4)
    ]
    assert [f.name for f in find_rank_files(BCAST)] == [f"trace_bcast-{r}.dat" for r in range(4)]
    bodies = [[] for _ in range(12)]
    padded = write_trace(tmp_path / "padded", bodies, pattern="pmpi-trace-rank-{r:02d}.txt")
    files = find_rank_files(padded)
    assert [f.name for f in files][:3] == [
        "pmpi-trace-rank-00.txt",
        "pmpi-trace-rank-01.txt",
        "pmpi-trace-rank-02.txt",
    ]
    assert len(files) == 12 and files[11].name == "pmpi-trace-rank-11.txt"
    assert detect_format(padded) == "liballprof"
    assert read_trace(padded).num_ranks == 12


def test_missing_rank_file_is_named(tmp_path):
    path = write_trace(tmp_path / "t", [[] for _ in range(4)])
    (path / "pmpi-trace-rank-2.txt").unlink()
    with pytest.raises(TraceError, match=r"missing rank file pmpi-trace-rank-2\.txt"):
        read(path)


def test_communicator_larger_than_rank_files_names_missing_files(tmp_path):
    body = ["MPI_Barrier:110:1140850688,0,3:120"]
    path = write_trace(tmp_path / "t", [body, [b.replace(",0,3", ",1,3") for b in body]])
    with pytest.raises(TraceError) as err:
        read(path)
    assert "pmpi-trace-rank-0.txt:5:" in str(err.value)
    assert "size 3 but only 2 rank files (missing pmpi-trace-rank-2.txt)" in str(err.value)


def test_unknown_path_and_format(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read(tmp_path / "nothing")
    (tmp_path / "x.txt").write_text("hello\n")
    with pytest.raises(InputError, match="format not recognised"):
        read(tmp_path / "x.txt")
    with pytest.raises(InputError, match="unknown format 'otf9'"):
        read(SWEEP3D, fmt="otf9")


# --------------------------------------------------------------------------- real traces
def test_sweep3d_events():
    trace = read_liballprof(SWEEP3D)
    ev = trace.events
    assert trace.num_ranks == 4
    for r in range(4):
        mine = ev.rank == r
        assert int(np.sum(mine & (ev.kind == SEND))) == 1440
        assert int(np.sum(mine & (ev.kind == RECV))) == 1440
        assert int(np.sum(mine & (ev.kind == INIT))) == 1
        assert int(np.sum(mine & (ev.kind == FINALIZE))) == 1
        ops = [COLL_OPS[c] for c in ev.coll[mine & (ev.kind == COLL)]]
        assert (ops.count("bcast"), ops.count("barrier"), ops.count("allreduce")) == (4, 3, 32)
    # the first Recv of rank 0: 4500 doubles (type size 8) from rank 1, tag 3000, line 15
    first = int(np.flatnonzero((ev.rank == 0) & (ev.kind == RECV))[0])
    assert (ev.peer[first], ev.tag[first], ev.size[first], ev.line[first]) == (1, 3000, 36000, 15)
    # µs → ns relative to the end of MPI_Init (1237666046950106 µs on rank 0)
    assert ev.t_start_ns[first] == (1237666047187471 - 1237666046950106) * 1000.0
    assert trace.diagnostics.absorbed == {
        "MPI_Comm_size": [4, f"{SWEEP3D}/pmpi-trace-rank-0.txt:7"],
        "MPI_Comm_rank": [4, f"{SWEEP3D}/pmpi-trace-rank-0.txt:8"],
    }
    assert trace.meta["tracer"] == "collprof"
    # clockdiff alignment: rank 1's Init clockdiff is -1856.565475 µs (clock_0 − clock_1)
    assert trace.meta["clock_alignment"] == "Init/Finalize clockdiff, linear drift"
    init1 = 1237666046951522 - 1237666046950106
    assert trace.clock_offset_ns[1] == pytest.approx((init1 - 1856.565475) * 1000.0, abs=1e-6)
    t_fin1 = (1237666089490985 - 1237666046951522) * 1000.0
    drift = (-1817.464828 + 1856.565475) * 1000.0 / t_fin1
    assert trace.clock_scale[1] == pytest.approx(1.0 + drift, rel=1e-15)


def test_bcast_synthetic_events():
    trace = read_liballprof(BCAST)
    ev = trace.events
    assert trace.num_ranks == 4
    assert np.array_equal(np.bincount(ev.rank[ev.kind == COLL]), [5, 5, 5, 5])
    assert set(ev.size[ev.kind == COLL].tolist()) == {12}  # 12 MPI_BYTEs
    assert trace.meta["clock_alignment"] == "shared clock (all clockdiffs zero)"


# --------------------------------------------------------------------------- malformed input
def test_truncated_line(tmp_path):
    path = write_trace(tmp_path / "t", [[send(110, 120, 1, 5, 0, 2)], [recv(110, 130, 0, 5, 1, 2)]])
    f = path / "pmpi-trace-rank-1.txt"
    f.write_text(f.read_text().replace(recv(110, 130, 0, 5, 1, 2), "MPI_Recv:110:6575616:1:1,4"))
    with pytest.raises(TraceError) as err:
        read(path)
    text = str(err.value)
    assert text.startswith(f"{f}:5: MPI_Recv has 5 fields, expected 13")
    assert "(truncated line?)" in text and "'MPI_Recv:110:6575616:1:1,4'" in text


def test_cut_off_last_line(tmp_path):
    path = write_trace(tmp_path / "t", [[], []])
    f = path / "pmpi-trace-rank-0.txt"
    f.write_text(f.read_text().rstrip("\n").rsplit("\n", 1)[0] + "\nMPI_Fina")
    with pytest.raises(TraceError) as err:
        read(path)
    assert str(err.value).startswith(f"{f}:6: MPI_Fina has 0 fields")


def test_wrong_field_count(tmp_path):
    bad = send(110, 120, 1, 5, 0, 2).replace(":1,4,4:", ":1,4,4:77:")
    path = write_trace(tmp_path / "t", [[bad], [recv(110, 130, 0, 5, 1, 2)]])
    with pytest.raises(TraceError) as err:
        read(path)
    assert str(err.value).startswith(
        f"{path / 'pmpi-trace-rank-0.txt'}:5: MPI_Send has 13 fields, "
        "expected 12 (t_start, buf, count, dtype(id,size,extent), "
        "peer, tag, comm(handle,rank,size), t_end)"
    )


def test_field_not_a_number_is_named(tmp_path):
    bad = send(110, 120, 1, 5, 0, 2).replace(":1:1,4,4:", ":x1:1,4,4:")
    path = write_trace(tmp_path / "t", [[bad], [recv(110, 130, 0, 5, 1, 2)]])
    with pytest.raises(
        TraceError, match=r"rank-0\.txt:5: MPI_Send: field 3 \(count\) is not a number"
    ):
        read(path)
    bad = send(110, 120, 1, 5, 0, 2).replace(":1,4,4:", ":1:4,4:")
    path = write_trace(tmp_path / "u", [[bad], [recv(110, 130, 0, 5, 1, 2)]])
    with pytest.raises(TraceError, match=r"field 5 \(dtype size\) is after the wrong separator"):
        read(path)


def test_unknown_call_strict_and_lenient(tmp_path):
    body0 = [send(110, 120, 1, 5, 0, 2), "MPI_Frobnicate:125:7:130"]
    path = write_trace(tmp_path / "t", [body0, [recv(110, 130, 0, 5, 1, 2)]])
    with pytest.raises(TraceError) as err:
        read(path)
    assert str(err.value) == (
        f"{path / 'pmpi-trace-rank-0.txt'}:6: unknown call 'MPI_Frobnicate' "
        "(not an MPI function): 'MPI_Frobnicate:125:7:130'"
    )
    with pytest.warns(IngestWarning, match=r"lenient: unknown call 'MPI_Frobnicate'.*1×"):
        graph = read(path, lenient=True)
    # absorbed: rank 0's calcs are 10 (Init→Send) and 20 (Send→Finalize at 140) µs, no gap lost
    calc = graph.summary().calc_ns_per_rank
    assert calc == [10_000.0 + 20_000.0, 20_000.0 + 0.0]
    assert graph.meta["absorbed_calls"] == {"MPI_Frobnicate": 1}


def test_call_names_match_exactly(tmp_path):
    # a prefix of a modelled name is not that call; a known but unmodelled MPI call is absorbed
    body0 = [send(110, 120, 1, 5, 0, 2), "MPI_Sendx:121:122"]
    path = write_trace(tmp_path / "t", [body0, [recv(110, 130, 0, 5, 1, 2)]])
    with pytest.raises(TraceError, match="unknown call 'MPI_Sendx'"):
        read(path)
    body0 = [send(110, 120, 1, 5, 0, 2), "MPI_Type_commit:121:140737488340112:122"]
    path = write_trace(tmp_path / "u", [body0, [recv(110, 130, 0, 5, 1, 2)]])
    with pytest.warns(IngestWarning, match=r"not modelled, absorbed into calc: MPI_Type_commit ×1"):
        graph = read(path)
    assert graph.summary().messages == 1


def test_htor_header_fractional_times_and_in_place(tmp_path):
    # htor's header and clockdiff line, fractional µs, and MPI_IN_PLACE (2^64 - 1) as a buffer
    in_place = 18446744073709551615
    bodies = [
        [f"MPI_Allreduce:110.25:{in_place}:6575616:2:10,8,8:3:{comm(r, 2)}:111.75"]
        for r in range(2)
    ]
    path = write_trace(
        tmp_path / "t", bodies, header="# htor's PMPI Tracer 1.0 Output File", finalize=113
    )
    for r in range(2):
        f = path / f"pmpi-trace-rank-{r}.txt"
        f.write_text(
            f.read_text().replace(
                "# Init clockdiff: 0.000000", "# clockdiff: 0.000000 s (relative to rank 0)"
            )
        )
    trace = read_liballprof(path)
    assert trace.meta["tracer"] == "htor"
    coll = int(np.flatnonzero(trace.events.kind == COLL)[0])
    assert trace.events.t_start_ns[coll] == 10_250.0 and trace.events.t_end_ns[coll] == 11_750.0
    assert trace.events.size[coll] == 16
    graph = read(path)
    assert graph.summary().calc_ns_per_rank == [10_250.0 + 1_250.0] * 2
    assert graph.summary().messages == 2  # recursive doubling on 2 ranks: one exchange


# --------------------------------------------------------------------------- MPI library
def isend(t0, t1, dest, tag, req, r, P, name="MPI_Isend"):
    return f"{name}:{t0}:6575616:1:1,4,4:{dest}:{tag}:{comm(r, P)}:{req}:{t1}"


def test_waitall_stride_openmpi_and_mpich(tmp_path):
    for stride, expect_mpi in ((8, "openmpi"), (4, "mpich")):
        base = 140735000539136
        body0 = [
            isend(110, 111, 1, 1, base, 0, 2),
            isend(112, 113, 1, 2, base + stride, 0, 2),
            f"MPI_Waitall:120:2:{base}:0:130",
        ]
        body1 = [
            isend(110, 111, 0, 1, base, 1, 2, name="MPI_Irecv"),
            isend(112, 113, 0, 2, base + stride, 1, 2, name="MPI_Irecv"),
            f"MPI_Waitall:120:2:{base}:0:130",
        ]
        trace = read_liballprof(write_trace(tmp_path / f"s{stride}", [body0, body1]))
        assert trace.meta["request_stride"] == stride
        assert (
            trace.meta["mpi"] == expect_mpi and trace.meta["mpi_detected_from"] == "request stride"
        )
        wait = int(np.flatnonzero((trace.events.kind == WAIT) & (trace.events.rank == 0))[0])
        assert trace.events.requests(wait).tolist() == [base, base + stride]


def test_wildcard_and_proc_null_constants(tmp_path):
    # MPICH: a send to -1 is MPI_PROC_NULL, so a receive from -2 is MPI_ANY_SOURCE
    body0 = [send(110, 111, -1, 3, 0, 2), recv(112, 150, -2, -1, 0, 2)]
    body1 = [send(120, 121, 0, 9, 1, 2)]
    trace = read_liballprof(write_trace(tmp_path / "mpich", [body0, body1]))
    assert trace.meta["mpi"] == "mpich"
    ev = trace.events
    assert ev.peer[(ev.rank == 0) & (ev.kind == SEND)].tolist() == [PROC_NULL]
    r = (ev.rank == 0) & (ev.kind == RECV)
    assert (ev.peer[r].tolist(), ev.tag[r].tolist()) == ([ANY_SOURCE], [ANY_TAG])
    # Open MPI: the same program prints PROC_NULL as -2 and ANY_SOURCE as -1
    body0 = [send(110, 111, -2, 3, 0, 2), recv(112, 150, -1, -1, 0, 2)]
    trace = read_liballprof(write_trace(tmp_path / "ompi", [body0, body1]))
    assert trace.meta["mpi"] == "openmpi"
    ev = trace.events
    assert ev.peer[(ev.rank == 0) & (ev.kind == SEND)].tolist() == [PROC_NULL]
    assert ev.peer[(ev.rank == 0) & (ev.kind == RECV)].tolist() == [ANY_SOURCE]
    # explicit header wins
    body0 = [recv(112, 150, -1, 9, 0, 2)]
    trace = read_liballprof(
        write_trace(tmp_path / "hdr", [body0, body1], extra=("# llamp mpi mpich",))
    )
    assert trace.meta["mpi_detected_from"] == "llamp mpi header"
    assert trace.events.peer[trace.events.kind == RECV].tolist() == [PROC_NULL]


def test_sphot_wildcards_decided_by_the_data_not_the_stride():
    """LogGOPSim2's sphot (collprof 0.9, 4 ranks): 4-byte request stride (Fortran handles), Open
    MPI constants. Rank 0 posts six MPI_Irecv from -1 that ranks 1-3 answer (two sends each);
    read as MPI_PROC_NULL (MPICH, as the stride suggests) those sends would have no receive."""
    trace = read_liballprof(SPHOT)
    assert trace.meta["request_stride"] == 4
    assert trace.meta["mpi"] == "openmpi"
    assert trace.meta["mpi_detected_from"] == (
        "sends and receives balance only with MPI_ANY_SOURCE = -1: 6 receives from -1 are wildcards"
    )
    ev = trace.events
    wild = (ev.kind == IRECV) & (ev.peer == ANY_SOURCE)
    assert ev.rank[wild].tolist() == [0] * 6 and (ev.tag[wild] == ANY_TAG).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IngestWarning)
        graph = read(SPHOT)
    assert graph.summary().messages == 59
    assert graph.meta["wildcards_resolved"] == 6
    assert graph.name == "sphot"


def test_sphot_header_overrides_the_inference(tmp_path):
    for flavour in ("openmpi", "mpich"):
        copy = tmp_path / flavour
        copy.mkdir()
        for f in SPHOT.iterdir():
            lines = f.read_text().splitlines(keepends=True)
            (copy / f.name).write_text("".join([lines[0], f"# llamp mpi {flavour}\n", *lines[1:]]))
        trace = read_liballprof(copy)
        assert trace.meta["mpi_detected_from"] == "llamp mpi header"
        assert trace.meta["mpi"] == flavour
    with pytest.raises(
        TraceError, match=r"htor-coll-rank-1\.dat:\d+: MPI_Send to rank 0 .* no matching"
    ):
        read(copy)  # the MPICH header makes the six receives MPI_PROC_NULL: sends unmatched


def _irecv(t0, src, req, r, P, tag=5):
    return isend(t0, t0 + 1, src, tag, req, r, P, name="MPI_Irecv")


def _waitall(t0, n, base):
    return f"MPI_Waitall:{t0}:{n}:{base}:0:{t0 + 5}"


BASE = 140735000539136


@pytest.mark.parametrize(
    ("src", "answered", "flavour", "peer"),
    [
        (-1, True, "openmpi", ANY_SOURCE),  # -1 answered by a send: Open MPI's ANY_SOURCE
        (-1, False, "mpich", PROC_NULL),  # -1 and no spare send: MPICH's PROC_NULL
        (-2, True, "mpich", ANY_SOURCE),
        (-2, False, "openmpi", PROC_NULL),
    ],
)
def test_negative_source_read_by_balance_over_the_trace(tmp_path, src, answered, flavour, peer):
    # stride 4 (MPICH-like) in every case: the receives, not the stride, decide
    body0 = [
        _irecv(110, 1, BASE, 0, 2),
        _irecv(111, src, BASE + 4, 0, 2),
        _waitall(112, 2, BASE),
    ]
    body1 = [send(105, 106, 0, 5, 1, 2)] + ([send(107, 108, 0, 5, 1, 2)] if answered else [])
    trace = read_liballprof(write_trace(tmp_path / "t", [body0, body1]))
    assert trace.meta["request_stride"] == 4
    assert trace.meta["mpi"] == flavour
    assert trace.meta["mpi_detected_from"].startswith("sends and receives balance only with")
    ev = trace.events
    assert ev.peer[(ev.kind == IRECV) & (ev.rank == 0)].tolist() == [1, peer]


def test_persistent_wildcard_receive_counts_its_starts(tmp_path):
    # one MPI_Recv_init from -1, started twice: it takes two messages
    body0 = [
        _irecv(110, -1, BASE, 0, 2).replace("MPI_Irecv", "MPI_Recv_init"),
        f"MPI_Start:112:{BASE}:113",
        f"MPI_Wait:114:{BASE}:0:120",
        f"MPI_Start:121:{BASE}:122",
        f"MPI_Wait:123:{BASE}:0:130",
    ]
    body1 = [send(105, 106, 0, 5, 1, 2), send(107, 108, 0, 5, 1, 2)]
    trace = read_liballprof(write_trace(tmp_path / "t", [body0, body1]))
    assert trace.meta["mpi"] == "openmpi"
    assert "2 receives from -1 are wildcards" in trace.meta["mpi_detected_from"]  # 2 starts


def test_ambiguous_negative_source_names_line_and_header(tmp_path):
    # neither: two spare sends to rank 0 but one receive from -1 (and none from -2)
    body0 = [recv(110, 120, -1, 5, 0, 2)]
    body1 = [send(105, 106, 0, 5, 1, 2), send(107, 108, 0, 5, 1, 2)]
    neither = write_trace(tmp_path / "neither", [body0, body1])
    with pytest.raises(TraceError) as err:
        read_liballprof(neither)
    text = str(err.value)
    assert "pmpi-trace-rank-0.txt:5: MPI_Recv from -1: MPI_ANY_SOURCE or MPI_PROC_NULL?" in text
    assert "neither reading (rank 0: 2 messages sent to it, 0 receives naming a source" in text
    assert "'# llamp mpi openmpi' or '# llamp mpi mpich'" in text
    assert "\n" not in text
    # both: one spare send, one receive from -1 and one from -2 (either could be the wildcard)
    body0 = [recv(110, 120, -1, 5, 0, 2), recv(121, 130, -2, 5, 0, 2)]
    both = write_trace(tmp_path / "both", [body0, body1[:1]])
    with pytest.raises(
        TraceError, match=r"rank-0\.txt:5: .*balance under either reading.*# llamp mpi"
    ):
        read_liballprof(both)
    # lenient: a warning that names the header, then the weaker hints (here MPICH's world handle)
    trace = read_liballprof(both, lenient=True)
    assert trace.meta["mpi_detected_from"] == "MPICH MPI_COMM_WORLD handle"
    assert any("# llamp mpi openmpi" in w for w in trace.diagnostics.summary())
    # the header settles it
    settled = write_trace(tmp_path / "settled", [body0, body1[:1]], extra=("# llamp mpi openmpi",))
    ev = read_liballprof(settled).events
    assert ev.peer[(ev.rank == 0) & (ev.kind == RECV)].tolist() == [ANY_SOURCE, PROC_NULL]


def test_sendrecv_is_two_rows(tmp_path):
    line = (
        f"MPI_Sendrecv:110:6575616:2:1,4,4:1:7:6575700:3:1,8,8:1:8:{comm(0, 2)}:140735000539136:120"
    )
    other = (
        f"MPI_Sendrecv:110:6575616:3:1,8,8:0:8:6575700:2:1,4,4:0:7:{comm(1, 2)}:140735000539136:125"
    )
    trace = read_liballprof(write_trace(tmp_path / "t", [[line], [other]]))
    ev = trace.events
    rows = np.flatnonzero(ev.rank == 0)
    assert ev.kind[rows].tolist() == [INIT, SR_SEND, SR_RECV, FINALIZE]
    assert ev.size[rows[1:3]].tolist() == [8, 24] and ev.tag[rows[1:3]].tolist() == [7, 8]


# --------------------------------------------------------------------------- communicators
def test_sub_communicator_with_membership(tmp_path):
    # ranks 1 and 3 of 4 form a communicator (handle 5 at rank 1, 6 at rank 3) and bcast on it
    P = 4
    bodies = [[] for _ in range(P)]
    bodies[1] = ["MPI_Bcast:110:6575616:4:1,4,4:1:5,0,2:120"]
    bodies[3] = ["MPI_Bcast:110:6575616:4:1,4,4:1:6,1,2:130"]
    path = write_trace(tmp_path / "t", bodies)
    for r, handle in ((1, 5), (3, 6)):
        f = path / f"pmpi-trace-rank-{r}.txt"
        f.write_text(
            f.read_text().replace("\n\nMPI_Init", f"\n# llamp comm {handle} 2 1,3\n\nMPI_Init")
        )
    trace = read_liballprof(path)
    sub = [c for c in trace.comms if c.members == (1, 3)]
    assert len(sub) == 1
    graph = read(path)
    # root = comm rank 1 = world rank 3 sends 16 bytes to world rank 1
    sends, recvs = graph.messages()
    assert graph.rank[sends].tolist() == [3] and graph.rank[recvs].tolist() == [1]
    assert graph.size[sends].tolist() == [16]


def test_sub_communicator_without_membership_is_absorbed_with_warning(tmp_path):
    P = 4
    bodies = [[] for _ in range(P)]
    bodies[1] = ["MPI_Bcast:110:6575616:4:1,4,4:1:5,0,2:120"]
    bodies[3] = ["MPI_Bcast:110:6575616:4:1,4,4:1:6,1,2:130"]
    path = write_trace(tmp_path / "t", bodies)
    with pytest.warns(IngestWarning) as record:
        graph = read(path)
    text = str(record[0].message)
    assert (
        "collectives on a sub-communicator without membership (no '# llamp comm' line), "
        f"absorbed into calc: 2× (first at {path / 'pmpi-trace-rank-1.txt'}:5)"
    ) in text
    assert graph.summary().messages == 0
    # the call's time is computation now: rank 3 runs from 100 to 140 µs without a vertex split
    assert graph.summary().calc_ns_per_rank[3] == 40_000.0


def test_p2p_on_sub_communicator_without_membership_is_absorbed(tmp_path):
    # ranks 0 and 2 of 3 talk on a 2-rank communicator the trace does not describe
    bodies = [
        [send(110, 111, 1, 5, 0, 2).replace(comm(0, 2), "7,0,2")],
        [],
        [recv(110, 115, 0, 5, 1, 2).replace(comm(1, 2), "8,1,2")],
    ]
    path = write_trace(tmp_path / "t", bodies)
    with pytest.warns(
        IngestWarning,
        match=r"point-to-point calls on a sub-communicator without "
        r"membership .*: 2× \(first at .*rank-0\.txt:5\)",
    ):
        graph = read(path)
    assert graph.num_vertices == 3 and graph.summary().messages == 0


def test_single_rank_file_path_reads_the_directory():
    graph = read(SWEEP3D / "pmpi-trace-rank-2.txt")
    assert graph.num_ranks == 4 and graph.name == "sweep3d-2x2"


def test_bad_membership_line(tmp_path):
    path = write_trace(tmp_path / "t", [[], []], extra=("# llamp comm 5 2 0",))
    with pytest.raises(
        TraceError, match=r"rank-0\.txt:3: communicator line lists 1 ranks, says size 2"
    ):
        read(path)


def test_no_warnings_on_clean_trace():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = read(SWEEP3D)
    assert graph.meta["warnings"] == []


# --------------------------------------------------------------------------- llamp's extensions
UNDEFINED = -32766  # MPI_UNDEFINED in MPICH and Open MPI
IDX, FLAG, ST = 140735000538000, 140735000538004, 140735000538008  # out-argument addresses
REQ = 140735000539136


def _rank0_rows(trace):
    ev = trace.events
    rows = np.flatnonzero(ev.rank == 0)
    return [(int(ev.kind[e]), int(ev.line[e]), ev.requests(int(e)).tolist()) for e in rows[1:-1]]


def test_completion_calls_become_wait_rows(tmp_path):
    # MPICH header: 4-byte requests; each record names what completed (0-based indices)
    body0 = [
        isend(110, 111, 1, 1, REQ, 0, 2, name="MPI_Irecv"),
        f"MPI_Waitany:112:3:{REQ}:{IDX}:2:{ST}:113",
        f"MPI_Waitany:114:3:{REQ}:{IDX}:{UNDEFINED}:{ST}:115",  # no active request: nothing
        f"MPI_Testany:116:3:{REQ}:{IDX}:{UNDEFINED}:{FLAG}:0:{ST}:117",
        f"MPI_Testany:118:3:{REQ}:{IDX}:{UNDEFINED}:{FLAG}:1:{ST}:119",  # none active
        f"MPI_Testany:120:3:{REQ}:{IDX}:1:{FLAG}:1:{ST}:121",
        f"MPI_Waitsome:122:3:{REQ}:{IDX}:2:{IDX + 4}:2,0:{ST}:123",
        f"MPI_Waitsome:124:3:{REQ}:{IDX}:{UNDEFINED}:{IDX + 4}:{ST}:125",
        f"MPI_Testsome:126:3:{REQ}:{IDX}:0:{IDX + 4}:{ST}:127",
        f"MPI_Testsome:128:3:{REQ}:{IDX}:1:{IDX + 4}:1:{ST}:129",
        f"MPI_Test:130:{REQ}:{FLAG}:0:{ST}:131",
        f"MPI_Test:132:{REQ}:{FLAG}:1:{ST}:133",
        f"MPI_Testall:134:2:{REQ}:{FLAG}:0:{ST}:135",
        f"MPI_Testall:136:2:{REQ}:{FLAG}:1:{ST}:137",
        f"MPI_Cancel:138:{REQ}:139",
    ]
    path = write_trace(
        tmp_path / "t", [body0, [send(110, 111, 0, 1, 1, 2)]], extra=("# llamp mpi mpich",)
    )
    trace = read_liballprof(path)
    assert _rank0_rows(trace) == [
        (IRECV, 6, [REQ]),
        (WAIT, 7, [REQ + 8]),
        (WAIT, 11, [REQ + 4]),
        (WAIT, 12, [REQ + 8, REQ]),
        (WAIT, 15, [REQ + 4]),
        (WAIT, 17, [REQ]),
        (WAIT, 19, [REQ, REQ + 4]),
        (CANCEL, 20, [REQ]),
    ]
    assert trace.diagnostics.absorbed == {
        "MPI_Waitany": [1, f"{path / 'pmpi-trace-rank-0.txt'}:8"],
        "MPI_Testany": [2, f"{path / 'pmpi-trace-rank-0.txt'}:9"],
        "MPI_Waitsome": [1, f"{path / 'pmpi-trace-rank-0.txt'}:13"],
        "MPI_Testsome": [1, f"{path / 'pmpi-trace-rank-0.txt'}:14"],
        "MPI_Test": [1, f"{path / 'pmpi-trace-rank-0.txt'}:16"],
        "MPI_Testall": [1, f"{path / 'pmpi-trace-rank-0.txt'}:18"],
    }
    assert trace.diagnostics.summary() == []  # tests that completed nothing are just time


def test_liballprof_completion_layouts_are_absorbed(tmp_path):
    # liballprof prints only addresses: Waitany/Testany/Waitsome/Testsome cannot be placed
    body0 = [
        f"MPI_Waitany:112:3:{REQ}:{IDX}:{ST}:113",
        f"MPI_Testany:114:3:{REQ}:{IDX}:{FLAG}:{ST}:115",
        f"MPI_Waitsome:116:3:{REQ}:{IDX}:{IDX + 4}:{ST}:117",
        f"MPI_Testsome:118:3:{REQ}:{IDX}:{IDX + 4}:{ST}:119",
        f"MPI_Test:120:{REQ}:{FLAG}:{ST}:121",
        f"MPI_Testall:122:2:{REQ}:{FLAG}:{ST}:123",
    ]
    trace = read_liballprof(write_trace(tmp_path / "t", [body0, []]))
    assert _rank0_rows(trace) == []
    summary = trace.diagnostics.summary()
    assert [line.split()[0] for line in summary] == [
        "MPI_Waitany",
        "MPI_Testany",
        "MPI_Waitsome",
        "MPI_Testsome",
    ]
    assert summary[1] == (
        "MPI_Testany without the completed index/flag (liballprof's layout): which request "
        f"completed is unknown, absorbed into calc: 1× (first at {trace.files[0]}:6)"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            f"MPI_Waitany:112:2:{REQ}:{IDX}:2:{ST}:113",
            "MPI_Waitany: completed index 2 is not one of the 2 requests (0-based; "
            "MPI_UNDEFINED is -32766)",
        ),
        (
            f"MPI_Testany:112:2:{REQ}:{IDX}:-1:{FLAG}:1:{ST}:113",
            "MPI_Testany: completed index -1 is not one of the 2 requests (0-based; "
            "MPI_UNDEFINED is -32766)",
        ),
        (
            f"MPI_Waitsome:112:2:{REQ}:{IDX}:2:{IDX + 4}:1:{ST}:113",
            "MPI_Waitsome: outcount is 2 but 1 indices are printed",
        ),
        (
            f"MPI_Testsome:112:2:{REQ}:{IDX}:3:{IDX + 4}:0,1,1:{ST}:113",
            "MPI_Testsome: outcount 3 for 2 requests",
        ),
        (
            f"MPI_Waitsome:112:3:{REQ}:{IDX}:2:{IDX + 4}:1,1:{ST}:113",
            "MPI_Waitsome: completed indices [1, 1] name a request twice",
        ),
        (
            f"MPI_Waitsome:112:2:{REQ}:{IDX}:2:{IDX + 4}:0,2:{ST}:113",
            "MPI_Waitsome: completed indices [0, 2] are not all among the 2 requests (0-based)",
        ),
    ],
)
def test_bad_completion_records(tmp_path, line, message):
    path = write_trace(tmp_path / "t", [[line], []])
    with pytest.raises(TraceError) as err:
        read_liballprof(path)
    assert str(err.value) == f"{path / 'pmpi-trace-rank-0.txt'}:5: {message}: {line!r}"


def test_wrong_field_count_names_every_layout(tmp_path):
    line = f"MPI_Test:112:{REQ}:{FLAG}:1:{ST}:7:113"
    path = write_trace(tmp_path / "t", [[line], []])
    with pytest.raises(TraceError) as err:
        read_liballprof(path)
    assert str(err.value).startswith(
        f"{path / 'pmpi-trace-rank-0.txt'}:5: MPI_Test has 7 fields, expected 6 (t_start, "
        "request, flag_ptr, flag, status, t_end) or 5 (t_start, request, flag, status, t_end): "
    )


LLAMP_HEADER = ("# llamp mpi openmpi", "# host: vm", "# world size: 2")


def test_llamp_tracer_header_and_world_size(tmp_path):
    path = write_trace(
        tmp_path / "t",
        [[], []],
        header="# llamp-tracer 1.0 output file (liballprof format)",
        extra=LLAMP_HEADER,
    )
    trace = read_liballprof(path)
    assert trace.meta["tracer"] == "llamp-tracer" and trace.meta["mpi"] == "openmpi"
    (path / "pmpi-trace-rank-1.txt").unlink()
    with pytest.raises(TraceError) as err:
        read_liballprof(path)
    assert str(err.value) == (
        f"{path / 'pmpi-trace-rank-0.txt'}: the tracer ran 2 ranks ('# world size' header) but "
        "there are 1 rank files (missing pmpi-trace-rank-1.txt)"
    )


def test_communicator_calls_are_quiet_when_membership_is_recorded(tmp_path):
    split = f"MPI_Comm_split:110:{comm(0, 2)}:0:0:140735000539000:111"
    free = "MPI_Comm_free:112:140735000539000:113"
    bodies = [[split, free], [split.replace(comm(0, 2), comm(1, 2)), free]]
    with pytest.warns(IngestWarning, match=r"absorbed into calc: MPI_Comm_free ×2, MPI_Comm_split"):
        read(write_trace(tmp_path / "bare", bodies))
    lines = [
        "# llamp comm 1140850688 2 0,1",
        "# llamp comm 7 1 {r}",
    ]
    path = write_trace(tmp_path / "t", bodies)
    for r in range(2):
        f = path / f"pmpi-trace-rank-{r}.txt"
        f.write_text(
            f.read_text().replace(
                "\n\nMPI_Init", "\n" + "\n".join(lines).format(r=r) + "\n\nMPI_Init"
            )
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = read(path)
    assert graph.meta["absorbed_calls"] == {"MPI_Comm_free": 2, "MPI_Comm_split": 2}
