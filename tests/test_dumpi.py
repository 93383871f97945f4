"""DUMPI binary traces: every record of rank 0 against the reference text dump, footer call
counts of every rank, the graph's messages, truncation and unknown layouts.

Independent sources: ``testtrace-0000.txt`` (``dumpi2ascii`` of rank 0) parsed with string
operations, and each file's footer call counts read here with ``struct``.
"""

from __future__ import annotations

import re
import shutil
import struct
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from llamp.errors import TraceError
from llamp.graph import SEND
from llamp.ingest import detect_format, read
from llamp.ingest.dumpi import FUNCTIONS, _decode_file, find_rank_files, read_dumpi
from llamp.ingest.events import COLL, COLL_OPS, ISEND, RECV, WAIT
from llamp.lp import predict
from llamp.params import LogGPS

DATA = Path(__file__).parent / "data" / "traces" / "dumpi" / "sst-dumpi-4ranks"

_ENTER = re.compile(r"^(MPI_\w+) entering at walltime (\d+)\.(\d{9}), cputime (\d+)\.(\d{9})")
_RETURN = re.compile(r"^(MPI_\w+) returning at walltime (\d+)\.(\d{9}), cputime (\d+)\.(\d{9})")


def reference_calls(path: Path) -> list[dict]:
    """The calls of a dumpi2ascii dump: name, wall/cpu start and stop in ns, integer args."""
    calls: list[dict] = []
    current = None
    for line in path.read_text().splitlines():
        if m := _ENTER.match(line):
            current = {
                "name": m.group(1),
                "wall": [int(m.group(2)) * 10**9 + int(m.group(3))],
                "cpu": [int(m.group(4)) * 10**9 + int(m.group(5))],
                "args": [],
            }
        elif m := _RETURN.match(line):
            assert current is not None and m.group(1) == current["name"]
            current["wall"].append(int(m.group(2)) * 10**9 + int(m.group(3)))
            current["cpu"].append(int(m.group(4)) * 10**9 + int(m.group(5)))
            calls.append(current)
            current = None
        elif current is not None and "=" in line:
            decl, value = line.split("=", 1)
            kind = decl.split()[0]
            if kind in ("int", "MPI_Datatype", "MPI_Comm", "MPI_Op") and current["name"] not in (
                "MPI_Init",
            ):
                current["args"].append(int(value.split()[0]))
            elif kind == "MPI_Request":
                current["args"].append(int(value.strip("[]")))
    return calls


def footer_counts(path: Path) -> dict[str, int]:
    """Non-zero call counts of a DUMPI file's footer (index → footer offset → u32 counts)."""
    data = path.read_bytes()
    index = struct.unpack(">8Q", data[-64:])
    footer = index[6]
    (magic,) = struct.unpack(">Q", data[footer : footer + 8])
    assert magic == 0xF007FEE7
    n = FUNCTIONS.index("DUMPI_ALL_FUNCTIONS") + 1  # the last entry is the total
    counts = struct.unpack(f">{n}I", data[footer + 8 : footer + 8 + 4 * n])
    assert counts[-1] == sum(counts[:-1])
    return {FUNCTIONS[i]: c for i, c in enumerate(counts[:-1]) if c}


def test_rank0_records_match_the_reference_dump():
    reference = reference_calls(DATA / "testtrace-0000.txt")
    recs = _decode_file(DATA / "testtrace-0000.bin")
    assert [FUNCTIONS[f] for f in recs.fid] == [c["name"] for c in reference]
    for e, call in enumerate(reference):
        assert recs.times[e, 2:4].tolist() == call["wall"], call["name"]
        assert recs.times[e, 0:2].tolist() == call["cpu"], call["name"]
        k = len(call["args"])
        assert recs.scal[e, :k].tolist() == call["args"], call["name"]
    # the datatype size table: 9 = MPI_INT has 4 bytes, 14 = MPI_DOUBLE 8
    assert recs.dtype_sizes[9] == 4 and recs.dtype_sizes[14] == 8


def test_footer_counts_equal_decoded_records_every_rank():
    files, keys = find_rank_files(DATA / "testtrace.meta")
    assert keys["numprocs"] == "4" and [f.name for f in files] == [
        f"testtrace-000{r}.bin" for r in range(4)
    ]
    for f in files:
        recs = _decode_file(f)
        assert Counter(FUNCTIONS[i] for i in recs.fid) == footer_counts(f), f.name


def test_events_and_graph():
    reference = reference_calls(DATA / "testtrace-0000.txt")
    isend = next(c for c in reference if c["name"] == "MPI_Isend")
    count, dtype, dest, tag = isend["args"][:4]
    recv = next(c for c in reference if c["name"] == "MPI_Recv")
    trace = read_dumpi(DATA)
    ev = trace.events
    P = trace.num_ranks
    assert P == 4
    r0 = ev.rank == 0
    assert ev.peer[r0 & (ev.kind == ISEND)].tolist() == [dest]
    assert ev.tag[r0 & (ev.kind == ISEND)].tolist() == [tag]
    assert ev.size[r0 & (ev.kind == ISEND)].tolist() == [count * 4]  # MPI_INT
    assert ev.peer[r0 & (ev.kind == RECV)].tolist() == [recv["args"][2]]
    wait = int(np.flatnonzero(r0 & (ev.kind == WAIT))[0])
    assert ev.requests(wait).tolist() == [isend["args"][5]]
    # times: rank 0's Isend starts (Isend wall start − Init wall stop) ns after its origin
    init = reference[0]
    i0 = int(np.flatnonzero(r0 & (ev.kind == ISEND))[0])
    assert ev.t_start_ns[i0] == isend["wall"][0] - init["wall"][1]
    coll = Counter(COLL_OPS[c] for c in ev.coll[ev.kind == COLL])
    assert coll == {"barrier": P, "allreduce": P}
    graph = read(DATA)
    n_isend = sum(footer_counts(f).get("MPI_Isend", 0) for f in find_rank_files(DATA)[0])
    # Isends + dissemination barrier P·log2 P + recursive-doubling allreduce P·log2 P (P = 4)
    assert int(np.count_nonzero(graph.kind == SEND)) == n_isend + 4 * 2 + 4 * 2 == 20
    p2p = (graph.kind == SEND) & (graph.tag < (1 << 62))
    assert graph.size[p2p].tolist() == [count * 4] * n_isend
    assert predict(graph, LogGPS()).runtime_ns > 0


def copy_trace(tmp_path: Path) -> Path:
    folder = tmp_path / "trace"
    shutil.copytree(DATA, folder)
    return folder


def test_truncated_file_names_the_record(tmp_path):
    folder = copy_trace(tmp_path)
    victim = folder / "testtrace-0002.bin"
    recs = _decode_file(victim)
    cut = int(recs.offset[5]) + 7  # inside record #6
    victim.write_bytes(victim.read_bytes()[:cut])
    name = FUNCTIONS[int(recs.fid[5])]
    with pytest.raises(TraceError) as err:
        read(folder)
    message = str(err.value)
    assert message.startswith(f"{victim}: record #6 ({name}) at byte offset {recs.offset[5]}")
    assert "truncated" in message


def test_unknown_layout_is_an_error_naming_offset_and_id(tmp_path):
    folder = copy_trace(tmp_path)
    victim = folder / "testtrace-0001.bin"
    recs = _decode_file(victim)
    data = bytearray(victim.read_bytes())
    at = int(recs.offset[3])
    pcontrol = FUNCTIONS.index("MPI_Pcontrol")  # variadic: DUMPI has no fixed layout for it
    data[at : at + 2] = pcontrol.to_bytes(2, "big")
    victim.write_bytes(bytes(data))
    with pytest.raises(TraceError) as err:
        read_dumpi(folder)
    assert str(err.value).startswith(
        f"{victim}: record #4 at byte offset {at} (0x{at:x}): function id {pcontrol} (MPI_Pcontrol)"
    )


def test_auto_detection():
    assert detect_format(DATA) == "dumpi"
    assert detect_format(DATA / "testtrace.meta") == "dumpi"
    assert detect_format(DATA / "testtrace-0003.bin") == "dumpi"
    assert read_dumpi(DATA / "testtrace-0003.bin").num_ranks == 4
