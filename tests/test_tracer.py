"""The PMPI tracer (``ingest/tracer/``, :mod:`llamp.ingest.tracing`, ``llamp trace``).

Programs of ours with a known number of MPI calls per rank (``tests/data/tracer/mpi_program.c``,
``tests/data/fortran/ring.f90``) are traced with 4 ranks; the trace is counted line by line,
independently of the reader, and compared with what the program does by construction and with
the execution graph the reader builds from it. Under Open MPI always (when ``mpicc`` exists);
under MPICH when ``mpicc.mpich`` and ``mpiexec.hydra`` are installed.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from llamp.errors import InputError
from llamp.graph import CALC, IREQUIRES, RECV, REQUIRES, SEND
from llamp.ingest import read
from llamp.ingest import tracing as tracer
from llamp.ingest.build import COLL_TAG_BASE
from llamp.ingest.liballprof import read_liballprof

pytestmark = pytest.mark.integration

DATA = Path(__file__).parent / "data"
C_PROGRAM = DATA / "tracer" / "mpi_program.c"
F_PROGRAM = DATA / "fortran" / "ring.f90"
RANKS = 4
OPENMPI_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _openmpi() -> dict | None:
    mpicc = shutil.which("mpicc.openmpi") or shutil.which("mpicc")
    if mpicc is None:
        return None
    try:
        info = tracer.detect_mpi(mpicc)
    except tracer.TracerError:
        return None
    if info.flavour != "openmpi":
        return None
    launcher = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
    return {
        "name": "openmpi",
        "mpicc": mpicc,
        "mpif90": shutil.which("mpif90.openmpi") or shutil.which("mpif90"),
        "launch": [launcher, "--oversubscribe", "-np", str(RANKS)],
        "env": OPENMPI_ROOT,
    }


def _mpich() -> dict | None:
    mpicc, hydra = shutil.which("mpicc.mpich"), shutil.which("mpiexec.hydra")
    if mpicc is None or hydra is None:
        return None
    return {
        "name": "mpich",
        "mpicc": mpicc,
        "mpif90": shutil.which("mpif90.mpich"),
        "launch": [hydra, "-n", str(RANKS)],
        "env": {},
    }


MPIS = {"openmpi": _openmpi(), "mpich": _mpich()}
SKIP_REASON = {
    "openmpi": "no Open MPI mpicc on PATH (apt-get install openmpi-bin libopenmpi-dev)",
    "mpich": "MPICH not installed (apt-get install mpich libmpich-dev: mpicc.mpich, mpiexec.hydra)",
}


def _mpi(name: str) -> dict:
    mpi = MPIS[name]
    if mpi is None:
        pytest.skip(SKIP_REASON[name])
    return mpi


@pytest.fixture(scope="module", autouse=True)
def llamp_home(tmp_path_factory):
    """One tracer build per MPI for the whole module, in a private $LLAMP_HOME."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLAMP_HOME", str(tmp_path_factory.mktemp("llamp-home")))
        yield


def _compile(mpi: dict, source: Path, out: Path, fortran: bool = False) -> Path:
    compiler = mpi["mpif90"] if fortran else mpi["mpicc"]
    if compiler is None:
        pytest.skip(f"no Fortran compiler wrapper for {mpi['name']} (apt-get install gfortran)")
    done = subprocess.run(
        [compiler, "-O1", "-o", str(out), str(source)], capture_output=True, text=True
    )
    assert done.returncode == 0, f"compiling {source.name} failed:\n{done.stderr}"
    return out


def _trace(mpi: dict, program: Path, directory: Path) -> tracer.TraceRun:
    return tracer.run_traced(
        [*mpi["launch"], str(program)],
        directory,
        mpicc=mpi["mpicc"],
        env=mpi["env"],
        timeout=300,
    )


# --------------------------------------------------------------------------- independent count
def _records(path: Path) -> list[list[str]]:
    """Every MPI record of a rank file as its ':'-separated fields."""
    return [ln.split(":") for ln in path.read_text().splitlines() if ln.startswith("MPI_")]


def _calls(path: Path) -> collections.Counter:
    return collections.Counter(rec[0] for rec in _records(path))


def _comm_lines(path: Path) -> list[tuple[int, list[int]]]:
    out = []
    for line in path.read_text().splitlines():
        if line.startswith("# llamp comm "):
            _, _, _, handle, size, members = line.split()
            out.append((int(size), [int(m) for m in members.split(",")]))
    return out


def _p2p_counts(graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per rank: point-to-point send and receive vertices, and collective instances."""
    p2p = graph.tag < COLL_TAG_BASE
    sends = np.bincount(graph.rank[(graph.kind == SEND) & p2p], minlength=graph.num_ranks)
    recvs = np.bincount(graph.rank[(graph.kind == RECV) & p2p], minlength=graph.num_ranks)
    coll = np.array(
        [
            np.unique(graph.tag[(graph.rank == r) & ~p2p & (graph.kind != CALC)]).size
            for r in range(graph.num_ranks)
        ]
    )
    return sends, recvs, coll


def _never_completed(graph) -> np.ndarray:
    """Per rank: non-blocking ops (an IREQUIRES edge out) that no wait or test completes (no
    REQUIRES edge out)."""
    posted = np.unique(graph.edge_src[graph.edge_kind == IREQUIRES])
    completed = np.unique(graph.edge_src[graph.edge_kind == REQUIRES])
    missing = np.setdiff1d(posted, completed)
    return np.bincount(graph.rank[missing], minlength=graph.num_ranks)


def _read(directory: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = read(directory)
    return graph, " ".join(str(w.message) for w in caught)


def _check_times(path: Path) -> None:
    last = -1.0
    for rec in _records(path):
        t_start = float(rec[1]) if rec[1] != "-" else float(rec[-1])
        t_end = float(rec[-1]) if rec[-1] != "-" else t_start
        assert t_start <= t_end, f"{path.name}: {':'.join(rec)} ends before it starts"
        assert t_start >= last, f"{path.name}: {':'.join(rec)} starts before the previous call"
        last = t_end


# --------------------------------------------------------------------------- C program
#: MPI calls per rank of tests/data/tracer/mpi_program.c (BLOCKING 5, NONBLOCK 10, PERSIST 4,
#: COLL 3), by construction.
C_CALLS = {
    "MPI_Init": 1,
    "MPI_Comm_rank": 2,
    "MPI_Comm_size": 2,
    "MPI_Send": 5,
    "MPI_Recv": 5,
    "MPI_Barrier": 2,
    "MPI_Irecv": 2 * 10 + 2 + 2,
    "MPI_Isend": 2 * 10 + 2 + 2,
    "MPI_Waitall": 10 + 4 + 1,
    "MPI_Comm_split": 1,
    "MPI_Allreduce": 3 + 1,
    "MPI_Bcast": 3,
    "MPI_Comm_dup": 1,
    "MPI_Send_init": 1,
    "MPI_Recv_init": 1,
    "MPI_Startall": 4,
    "MPI_Request_free": 2,
    "MPI_Sendrecv": 1,
    "MPI_Waitany": 2,
    "MPI_Comm_free": 2,
    "MPI_Finalize": 1,
}
C_P2P = 5 + 2 * 10 + 4 + 1 + 2 + 2  # messages each rank sends (= receives)


@pytest.mark.parametrize("mpi_name", ["openmpi", "mpich"])
def test_c_program_trace_and_graph(mpi_name, tmp_path):
    mpi = _mpi(mpi_name)
    program = _compile(mpi, C_PROGRAM, tmp_path / "mpi_program")
    run = _trace(mpi, program, tmp_path / "trace")
    assert run.ranks == RANKS
    assert [f.name for f in run.files] == [f"pmpi-trace-rank-{r}.txt" for r in range(RANKS)]
    for rank, path in enumerate(run.files):
        calls = _calls(path)
        some = {name: calls.pop(name) for name in ("MPI_Waitsome", "MPI_Testsome")}
        assert dict(calls) == C_CALLS, f"rank {rank}"
        for name, count in some.items():
            # outcount*:<n>:indices*[:<i0>,...]: together the loop completed requests 0 and 1
            records = [rec for rec in _records(path) if rec[0] == name]
            assert 1 <= count == len(records) <= (2 if name == "MPI_Waitsome" else 10**6)
            completed = []
            for rec in records:
                outcount = int(rec[5])
                if outcount > 0:
                    completed += [int(i) for i in rec[7].split(",")]
                    assert len(rec) == 10 and len(rec[7].split(",")) == outcount
                else:
                    assert len(rec) == 9
            assert sorted(completed) == [0, 1], f"rank {rank} {name}"
        text = path.read_text()
        assert f"# llamp mpi {mpi_name}\n" in text
        assert "# Init clockdiff: " in text and "# Finalize clockdiff: " in text
        # world, the Comm_split(rank % 2) half, the Comm_dup of the world
        assert _comm_lines(path) == [
            (4, [0, 1, 2, 3]),
            (2, [rank % 2, rank % 2 + 2]),
            (4, [0, 1, 2, 3]),
        ]
        waitany = [rec for rec in _records(path) if rec[0] == "MPI_Waitany"]
        assert sorted(int(rec[5]) for rec in waitany) == [0, 1]  # which request completed
        _check_times(path)
    assert run.calls >= RANKS * (sum(C_CALLS.values()) + 2)

    graph, warned = _read(run.directory)
    for name in ("MPI_Waitany", "MPI_Waitsome", "MPI_Testsome", "MPI_Comm_split"):
        assert name not in warned  # completions read; communicators from '# llamp comm'
    # every Isend/Irecv/Start is completed by its Waitall, Waitany, Waitsome or Testsome
    assert _never_completed(graph).tolist() == [0] * RANKS
    sends, recvs, coll = _p2p_counts(graph)
    for rank, path in enumerate(run.files):
        logged = _calls(path)
        # each Startall starts one send and one receive template
        logged_sends = sum(logged[c] for c in ("MPI_Send", "MPI_Isend", "MPI_Sendrecv"))
        logged_sends += logged["MPI_Startall"]
        logged_recvs = sum(logged[c] for c in ("MPI_Recv", "MPI_Irecv", "MPI_Sendrecv"))
        logged_recvs += logged["MPI_Startall"]
        assert sends[rank] == logged_sends == C_P2P
        assert recvs[rank] == logged_recvs == C_P2P
        logged_coll = sum(logged[c] for c in ("MPI_Barrier", "MPI_Allreduce", "MPI_Bcast"))
        assert coll[rank] == logged_coll == 2 + 4 + 3
    # the split communicators' collectives stay inside their halves
    sub = (graph.tag >= COLL_TAG_BASE) & (graph.kind == SEND)
    comm_of_tag = (graph.tag[sub] - COLL_TAG_BASE) >> 32
    for c in np.unique(comm_of_tag):
        ranks = set(graph.rank[sub][comm_of_tag == c].tolist()) | set(
            graph.peer[sub][comm_of_tag == c].tolist()
        )
        assert ranks in ({0, 2}, {1, 3}, {0, 1, 2, 3})


# --------------------------------------------------------------------------- Fortran program
#: MPI calls per rank of tests/data/fortran/ring.f90 (ITERS = 4), MPI_Test excepted (a loop).
F_CALLS = {
    "MPI_Init": 1,
    "MPI_Comm_rank": 2,
    "MPI_Comm_size": 1,
    "MPI_Send": 4,
    "MPI_Recv": 4,
    "MPI_Barrier": 2,
    "MPI_Irecv": 4 * 2 + 1 + 2,
    "MPI_Isend": 4 * 2 + 1 + 2,
    "MPI_Waitall": 4 + 4 + 1,
    "MPI_Comm_split": 1,
    "MPI_Allreduce": 1,
    "MPI_Bcast": 1,
    "MPI_Send_init": 1,
    "MPI_Recv_init": 1,
    "MPI_Startall": 4,
    "MPI_Request_free": 2,
    "MPI_Wait": 1,
    "MPI_Waitany": 2,
    "MPI_Sendrecv": 1,
    "MPI_Alltoall": 1,
    "MPI_Gatherv": 1,
    "MPI_Reduce": 1,
    "MPI_Comm_free": 1,
    "MPI_Finalize": 1,
}
F_P2P = 4 + 4 * 2 + 4 + 1 + 2 + 1


@pytest.mark.parametrize("mpi_name", ["openmpi", "mpich"])
def test_fortran_program_trace_and_graph(mpi_name, tmp_path):
    """Open MPI's Fortran bindings bypass the C wrappers: the mpi_xxx_ wrappers must catch them
    (MPICH's call the C layer). The program checks its data, so MPI_IN_PLACE, statuses and
    request conversions are right too."""
    mpi = _mpi(mpi_name)
    program = _compile(mpi, F_PROGRAM, tmp_path / "ring", fortran=True)
    run = _trace(mpi, program, tmp_path / "trace")
    for rank, path in enumerate(run.files):
        calls = _calls(path)
        assert calls.pop("MPI_Test") >= 1, f"rank {rank}"
        assert dict(calls) == F_CALLS, f"rank {rank}"
        records = _records(path)
        # MPI_Test:t:request*:flag*:<flag>:status*:t_end: the loop ends at the first success
        flags = [int(rec[4]) for rec in records if rec[0] == "MPI_Test"]
        assert flags == [0] * (len(flags) - 1) + [1], f"rank {rank}"
        allreduce = next(rec for rec in records if rec[0] == "MPI_Allreduce")
        in_place = {"openmpi": 1, "mpich": 2**64 - 1}[mpi_name]  # C MPI_IN_PLACE
        assert int(allreduce[2]) == in_place
        waitany = [rec for rec in records if rec[0] == "MPI_Waitany"]
        assert sorted(int(rec[5]) for rec in waitany) == [0, 1]  # 0-based, as in C
        # a Fortran request array has 4-byte entries: Waitall's base is an Irecv's request
        irecv_requests = {int(rec[-2]) for rec in records if rec[0] == "MPI_Irecv"}
        first_waitall = next(rec for rec in records if rec[0] == "MPI_Waitall")
        assert int(first_waitall[3]) in irecv_requests
        _check_times(path)

    graph, warned = _read(run.directory)
    assert "MPI_Waitany" not in warned and "MPI_Test" not in warned
    # the Test loop completes its Irecv, Waitany x2 the two of the last round
    assert _never_completed(graph).tolist() == [0] * RANKS
    sends, recvs, coll = _p2p_counts(graph)
    for rank, path in enumerate(run.files):
        logged = _calls(path)
        logged_sends = sum(logged[c] for c in ("MPI_Send", "MPI_Isend", "MPI_Sendrecv"))
        logged_sends += logged["MPI_Startall"]
        assert sends[rank] == recvs[rank] == logged_sends == F_P2P
        assert (
            coll[rank] == 2 + 1 + 1 + 3
        )  # Barrier x2, Allreduce, Bcast, Alltoall, Gatherv, Reduce
        gatherv = next(rec for rec in _records(run.files[rank]) if rec[0] == "MPI_Gatherv")
        # count arrays (from Fortran INTEGER arrays) at the root only
        assert (gatherv[7:10:2] == ["1,1,1,1", "0,1,2,3"]) == (rank == 0)


# --------------------------------------------------------------------------- collectives, threads
#: Collective calls per communicator in tests/data/tracer/collectives.c.
COLLECTIVES = {
    "MPI_Barrier": 1,
    "MPI_Bcast": 1,
    "MPI_Reduce": 2,
    "MPI_Allreduce": 1,
    "MPI_Scan": 1,
    "MPI_Exscan": 1,
    "MPI_Allgather": 2,
    "MPI_Allgatherv": 1,
    "MPI_Alltoall": 1,
    "MPI_Alltoallv": 2,
    "MPI_Gather": 1,
    "MPI_Gatherv": 1,
    "MPI_Scatter": 1,
    "MPI_Scatterv": 1,
    "MPI_Reduce_scatter": 1,
    "MPI_Reduce_scatter_block": 1,
}


@pytest.mark.parametrize("mpi_name", ["openmpi", "mpich"])
def test_every_collective_is_recorded_and_read(mpi_name, tmp_path):
    """MPI_IN_PLACE and root-only arguments (NULL, MPI_DATATYPE_NULL, negative counts at the
    non-roots) must neither crash the tracer nor reach the trace as data the reader rejects."""
    mpi = _mpi(mpi_name)
    program = _compile(mpi, DATA / "tracer" / "collectives.c", tmp_path / "collectives")
    run = _trace(mpi, program, tmp_path / "trace")
    for path in run.files:
        calls = _calls(path)
        assert {name: calls[name] for name in COLLECTIVES} == {
            name: 2 * count for name, count in COLLECTIVES.items()
        }
        for rec in _records(path):
            if rec[0] in ("MPI_Gather", "MPI_Scatter") and rec[-2].split(",")[1] != rec[-3]:
                assert "0,0,0" in rec  # the root's side (comm rank != root): not significant
    graph, warned = _read(run.directory)
    assert "lenient" not in warned
    _, _, coll = _p2p_counts(graph)
    assert coll.tolist() == [2 * sum(COLLECTIVES.values())] * RANKS


#: Every non-blocking collective, once per rank in tests/data/tracer/nonblocking_collectives.c.
NONBLOCKING = ["MPI_I" + name[4].lower() + name[5:] for name in COLLECTIVES]


@pytest.mark.parametrize("mpi_name", ["openmpi", "mpich"])
def test_nonblocking_collectives_are_recorded_and_modelled(mpi_name, tmp_path):
    """Each I-collective is the blocking record plus its request; the reader expands it and the
    wait, test, Waitany, Waitsome or Testall that completes the request waits for it."""
    mpi = _mpi(mpi_name)
    source = DATA / "tracer" / "nonblocking_collectives.c"
    program = _compile(mpi, source, tmp_path / "nonblocking")
    run = _trace(mpi, program, tmp_path / "trace")
    for path in run.files:
        calls = _calls(path)
        assert {name: calls[name] for name in NONBLOCKING} == dict.fromkeys(NONBLOCKING, 1)
        records = _records(path)
        iallreduce = next(rec for rec in records if rec[0] == "MPI_Iallreduce")
        wait = next(rec for rec in records if rec[0] == "MPI_Wait")
        assert iallreduce[-2] == wait[2]  # the request, printed before t_end
        _check_times(path)
    graph, warned = _read(run.directory)
    assert warned == ""  # nothing absorbed, every wait entry found its request
    _, _, coll = _p2p_counts(graph)
    assert coll.tolist() == [len(NONBLOCKING)] * RANKS
    assert _never_completed(graph).tolist() == [0] * RANKS


@pytest.mark.parametrize("mpi_name", ["openmpi", "mpich"])
def test_fortran_nonblocking_collectives(mpi_name, tmp_path):
    """Open MPI's Fortran I-collectives (mpi_iallreduce_, …) hand a C request back as a Fortran
    handle; the record prints the program's own INTEGER request, which its wait names."""
    mpi = _mpi(mpi_name)
    source = DATA / "fortran" / "nonblocking.f90"
    program = _compile(mpi, source, tmp_path / "nonblocking", fortran=True)
    run = _trace(mpi, program, tmp_path / "trace")
    expected = ["MPI_Iallreduce", "MPI_Ibcast", "MPI_Ibarrier", "MPI_Ialltoall", "MPI_Igatherv"]
    expected.append("MPI_Iscan")
    for path in run.files:
        records = _records(path)
        calls = _calls(path)
        assert {name: calls[name] for name in expected} == dict.fromkeys(expected, 1)
        iallreduce = next(rec for rec in records if rec[0] == "MPI_Iallreduce")
        wait = next(rec for rec in records if rec[0] == "MPI_Wait")
        assert iallreduce[-2] == wait[2]
    graph, warned = _read(run.directory)
    assert warned == ""
    _, _, coll = _p2p_counts(graph)
    assert coll.tolist() == [6] * RANKS


@pytest.mark.parametrize("mpi_name", ["openmpi", "mpich"])
def test_communicator_is_defined_where_first_used(mpi_name, tmp_path):
    """MPI_Comm_idup's communicator is usable only after its request completes; it is defined
    in front of its first record, also when it reuses the handle of a freed communicator."""
    mpi = _mpi(mpi_name)
    program = _compile(mpi, DATA / "tracer" / "comm_paths.c", tmp_path / "comm_paths")
    run = _trace(mpi, program, tmp_path / "trace")
    for rank, path in enumerate(run.files):
        lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
        at = next(i for i, ln in enumerate(lines) if ln.startswith("MPI_Allreduce:"))
        handle = lines[at].split(":")[-2].split(",")[0]
        assert lines[at - 1] == f"# llamp comm {handle} 4 0,1,2,3", f"rank {rank}"
        assert "MPI_Comm_idup:" in lines[at - 3]  # idup, Wait, definition, Allreduce
    trace = read_liballprof(run.directory)
    members = [c.members for c in trace.comms]
    assert members.count((0, 1, 2, 3)) == 2  # the world and its copy, apart
    graph, warned = _read(run.directory)
    assert "lenient" not in warned


def test_thread_multiple_records_are_whole(tmp_path):
    """Four threads per rank call MPI at once: every record stays one well-formed line."""
    mpi = _mpi("openmpi")
    source = DATA / "tracer" / "threads.c"
    exe = tmp_path / "threads"
    done = subprocess.run(
        [mpi["mpicc"], "-O1", "-pthread", "-o", str(exe), str(source)], capture_output=True
    )
    assert done.returncode == 0, done.stderr
    run = _trace(mpi, exe, tmp_path / "trace")
    record = re.compile(
        r"^MPI_Sendrecv:\d+\.\d{3}:\d+:1:1,4,4:[0-3]:[0-3]:\d+:1:1,4,4:[0-3]:[0-3]:"
        r"\d+,[0-3],4:\d+:\d+\.\d{3}$"
    )
    for path in run.files:
        lines = [ln for ln in path.read_text().splitlines() if ln.startswith("MPI_Sendrecv")]
        assert len(lines) == 4 * 200
        assert all(record.match(ln) for ln in lines), path.name
        assert "MPI_Init_thread:-:" in path.read_text()


# --------------------------------------------------------------------------- launcher and errors
def _info(flavour: str) -> tracer.MPIInfo:
    return tracer.MPIInfo(flavour=flavour, version="0", mpicc="/usr/bin/mpicc", show="gcc")


def test_launch_command_per_launcher(tmp_path):
    lib, out = Path("/x/libllamptrace.so"), tmp_path
    argv, env = tracer.launch_command(
        ["mpirun.openmpi", "-np", "4", "./a"], lib, out, _info("openmpi")
    )
    assert argv == [
        "mpirun.openmpi",
        "-x",
        f"LD_PRELOAD={lib}",
        "-x",
        f"LLAMP_TRACE_DIR={out}",
        "-np",
        "4",
        "./a",
    ]
    assert "LD_PRELOAD" not in env or str(lib) not in env.get("LD_PRELOAD", "")
    argv, _ = tracer.launch_command(["mpiexec.hydra", "-n", "4", "./a"], lib, out, _info("mpich"))
    assert argv[:7] == [
        "mpiexec.hydra",
        "-genv",
        "LD_PRELOAD",
        str(lib),
        "-genv",
        "LLAMP_TRACE_DIR",
        str(out),
    ]
    argv, env = tracer.launch_command(["./a"], lib, out, _info("openmpi"))  # singleton
    assert argv == ["./a"] and env["LD_PRELOAD"].startswith(str(lib))
    assert env["LLAMP_TRACE_DIR"] == str(out)


def test_launcher_of_the_other_mpi_is_refused(tmp_path):
    with pytest.raises(tracer.TracerError, match="MPICH's launcher but the tracer is built for"):
        tracer.launch_command(
            ["mpiexec.hydra", "-n", "2", "./a"], Path("/x.so"), tmp_path, _info("openmpi")
        )


def test_no_mpicc_is_a_clear_error(tmp_path):
    with pytest.raises(tracer.TracerError, match="no MPI C compiler 'no-such-mpicc' on PATH"):
        tracer.run_traced(["./a"], tmp_path, mpicc="no-such-mpicc")


def test_build_failure_shows_the_compiler_output(tmp_path, monkeypatch):
    mpi = _mpi("openmpi")
    sources = tmp_path / "tracer"
    shutil.copytree(tracer.TRACER_DIR, sources)
    with (sources / "record.c").open("a") as fh:
        fh.write("\nthis is not C;\n")
    monkeypatch.setattr(tracer, "TRACER_DIR", sources)
    with pytest.raises(tracer.TracerError) as err:
        tracer.build_tracer(mpi["mpicc"], home=tmp_path / "home")
    message = str(err.value)
    assert "building the tracer failed" in message and "record.c" in message
    assert "error" in message  # the compiler's own words


def test_cached_build_is_reused_and_rebuilt_when_sources_change(tmp_path, monkeypatch):
    mpi = _mpi("openmpi")
    sources = tmp_path / "tracer"
    shutil.copytree(tracer.TRACER_DIR, sources)
    monkeypatch.setattr(tracer, "TRACER_DIR", sources)
    home = tmp_path / "home"
    built: list[str] = []
    lib, info = tracer.build_tracer(mpi["mpicc"], home=home, log=built.append)
    assert lib == home / "tracer" / info.id / "libllamptrace.so" and lib.is_file()
    assert info.flavour == "openmpi" and info.id.startswith(f"openmpi-{info.version}-")
    first = lib.stat().st_mtime_ns
    tracer.build_tracer(mpi["mpicc"], home=home, log=built.append)
    assert lib.stat().st_mtime_ns == first and len(built) == 2  # one build: start + done
    with (sources / "record.c").open("a") as fh:
        fh.write("\n/* changed */\n")
    tracer.build_tracer(mpi["mpicc"], home=home, log=built.append)
    assert len(built) == 4 and lib.stat().st_mtime_ns != first


def test_makefile_builds_what_llamp_trace_builds():
    makefile = (tracer.TRACER_DIR / "Makefile").read_text()
    value = dict(re.findall(r"^(\w+) = (.*)$", makefile, re.M))
    assert value["SOURCES"].split() == list(tracer.SOURCES)
    assert value["CFLAGS"].split() == list(tracer.CFLAGS)
    assert value["LIBS"].split() == list(tracer.LIBS)


def test_tracer_compiles_without_warnings(tmp_path):
    for name in ("openmpi", "mpich"):
        mpi = MPIS[name]
        if mpi is None:
            continue
        cmd = [mpi["mpicc"], *tracer.CFLAGS, "-Werror", "-o", str(tmp_path / f"{name}.so")]
        cmd += [str(tracer.TRACER_DIR / s) for s in tracer.SOURCES] + list(tracer.LIBS)
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_missing_and_incomplete_rank_files(tmp_path):
    header = "# llamp-tracer 1.0 output file\n# world size: 4\n\n"
    (tmp_path / "pmpi-trace-rank-0.txt").write_text(header + "MPI_Init:-:1:2:3.0\n")
    (tmp_path / "pmpi-trace-rank-1.txt").write_text(header)
    with pytest.raises(tracer.TracerError, match="missing rank files pmpi-trace-rank-2.txt"):
        tracer.check_rank_files(tmp_path)
    for r in (2, 3):
        (tmp_path / f"pmpi-trace-rank-{r}.txt").write_text(header + "MPI_Finalize:9.0:-\n")
    with pytest.raises(tracer.TracerError, match="rank 0 .*does not end with MPI_Finalize"):
        tracer.check_rank_files(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(tracer.TracerError, match="no trace files"):
        tracer.check_rank_files(empty)


def test_existing_trace_is_not_overwritten_silently(tmp_path):
    (tmp_path / "pmpi-trace-rank-0.txt").write_text("old")
    with pytest.raises(InputError, match="already holds a trace"):
        tracer.prepare_directory(tmp_path, overwrite=False)
    tracer.prepare_directory(tmp_path, overwrite=True)
    assert not (tmp_path / "pmpi-trace-rank-0.txt").exists()


def test_failing_application_reports_its_exit_code(tmp_path):
    mpi = _mpi("openmpi")
    program = tmp_path / "fail.c"
    program.write_text(
        "#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize();"
        " return 7; }\n"
    )
    exe = _compile(mpi, program, tmp_path / "fail")
    with pytest.raises(tracer.TracerError, match=r"the application failed \(exit code 7\)"):
        tracer.run_traced(
            [*mpi["launch"][:1], "-np", "1", str(exe)],
            tmp_path / "trace",
            mpicc=mpi["mpicc"],
            env=mpi["env"],
            timeout=120,
        )


# --------------------------------------------------------------------------- command line
def test_llamp_trace_command_traces_and_stores(tmp_path, monkeypatch):
    mpi = _mpi("openmpi")
    from click.testing import CliRunner

    import llamp.cli.trace  # noqa: F401 - registers the command
    from llamp.cli.base import cli

    program = _compile(mpi, C_PROGRAM, tmp_path / "mpi_program")
    for key, value in mpi["env"].items():
        monkeypatch.setenv(key, value)
    store = tmp_path / "store"
    result = CliRunner().invoke(
        cli,
        [
            "--store",
            str(store),
            "trace",
            "-o",
            str(tmp_path / "trace"),
            "--mpicc",
            mpi["mpicc"],
            "--ingest",
            "cprog",
            "--json",
            "--",
            *mpi["launch"],
            str(program),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    import json

    payload = json.loads(result.stdout[result.stdout.index("{") :])
    assert payload["ranks"] == RANKS and payload["run"] == "cprog"
    assert payload["mpi_calls"] >= RANKS * (sum(C_CALLS.values()) + 2)
    from llamp.graphdb import open_store

    with open_store(str(store), read_only=True) as db:
        assert db.has_run("cprog")
    assert os.path.isdir(payload["directory"])
