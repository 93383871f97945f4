"""The error contract under damage: every reader and the ``.npz`` loader, fed seeded
mutations of real inputs, either read them or raise an InputError of one printable line
(file named, quoted input cut) — never another exception, a hang, a huge allocation or a
silently changed count. Seeded and small: a few seconds in the normal suite."""

from __future__ import annotations

import io
import json
import random
import re
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from store_graphs import tiny_graph

from llamp.errors import InputError, TraceError
from llamp.ingest import read

pytestmark = pytest.mark.filterwarnings("ignore::llamp.ingest.events.IngestWarning")

TRACES = Path(__file__).parent / "data" / "traces"
SAMPLES = {
    "liballprof": TRACES / "liballprof" / "bcast-synthetic",
    "goal": TRACES / "goal" / "non_blocking.goal",
    "simgrid": TRACES / "simgrid-ti" / "actions" / "actions0.txt",
    "dumpi": TRACES / "dumpi" / "sst-dumpi-4ranks",
    "otf2": TRACES / "otf2" / "sstmacro-10ranks",
    "chakra": TRACES.parent / "chakra" / "custom_ring_allreduce_8npus_1MB",
    "npz": None,  # a saved tiny graph
}
SEEDS = 25
_NUMBER = re.compile(rb"\d+")
_WILD = [
    b"18446744073709551616",
    b"-1000",
    b"99999999999999999999999",
    b"-1",
    b"0",
    b"9223372036854775808",
    b"1e308",
    b"nan",
    b"-0.5",
]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One seeded damage: truncation, a flipped byte, a wild number, control characters, a
    5000-character run, a duplicated line, a cut-out span, or leading junk."""
    if not data:
        return b"x"
    i = rng.randrange(len(data))
    kind = rng.randrange(8)
    if kind == 0:
        return data[:i]
    if kind == 1:
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1 :]
    if kind == 2:
        numbers = list(_NUMBER.finditer(data))
        if numbers:
            m = rng.choice(numbers)
            return data[: m.start()] + rng.choice(_WILD) + data[m.end() :]
    if kind == 3:
        return data[:i] + b"\x1b[31m\x07\x00" + data[i:]
    if kind == 4:
        return data[:i] + b"A" * 5000 + data[i:]
    if kind == 5:
        lines = data.split(b"\n")
        j = rng.randrange(len(lines))
        lines.insert(j, lines[j])
        return b"\n".join(lines)
    if kind == 6:
        return data[:i] + data[i + rng.randrange(1, 50) :]
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))) + data[i:]


class _Hang(Exception):
    pass


def _alarm(*_):
    raise _Hang


def _copy(fmt: str, into: Path) -> Path:
    source = SAMPLES[fmt]
    if source is None:
        target = into / "graph.npz"
        tiny_graph().save(target)
    elif source.is_dir():
        target = into / source.name
        shutil.copytree(source, target)
    else:
        target = into / source.name
        shutil.copy(source, target)
    return target


def assert_contract(err: InputError, target: Path) -> None:
    text = str(err)
    assert "\n" not in text and text.isprintable(), text[:300]
    assert len(text) <= 1200, len(text)
    assert (
        target.name in text or any(p.name in text for p in target.rglob("*")) or str(target) in text
    ), text[:300]


@pytest.mark.parametrize("fmt", list(SAMPLES))
def test_damaged_inputs_read_or_fail_with_one_line(fmt, tmp_path):
    signal.signal(signal.SIGALRM, _alarm)
    outcomes = {"read": 0, "refused": 0}
    for seed in range(SEEDS):
        rng = random.Random(f"{fmt}-{seed}")
        where = tmp_path / str(seed)
        where.mkdir()
        target = _copy(fmt, where)
        files = sorted(p for p in target.rglob("*") if p.is_file()) if target.is_dir() else [target]
        victim = rng.choice(files)
        victim.write_bytes(mutate(victim.read_bytes(), rng))
        signal.alarm(20)
        try:
            read(target, fmt=fmt)
            outcomes["read"] += 1
        except InputError as err:
            assert_contract(err, target)
            outcomes["refused"] += 1
        except _Hang:
            pytest.fail(f"{fmt} seed {seed}: the reader hung on {victim.name}")
        finally:
            signal.alarm(0)
        shutil.rmtree(where)
    assert outcomes["refused"] > 0, outcomes  # the mutations do damage


# ------------------------------------------------------------------ damage that must be refused
def _liballprof_with(tmp_path: Path, field: int, value: str) -> Path:
    target = tmp_path / "t"
    shutil.copytree(TRACES / "liballprof" / "sweep3d-2x2", target)
    rank0 = target / "pmpi-trace-rank-0.txt"
    lines = rank0.read_text().split("\n")
    i = next(k for k, line in enumerate(lines) if line.startswith("MPI_Bcast"))
    parts = lines[i].split(":")
    parts[field] = value
    lines[i] = ":".join(parts)
    rank0.write_text("\n".join(lines))
    return target


@pytest.mark.parametrize(
    "value", ["18446744073709551616", "99999999999999999999999", "-5", "9223372036854775808"]
)
def test_liballprof_count_that_overflows_is_refused(tmp_path, value):
    with pytest.raises(TraceError, match=r"pmpi-trace-rank-0.txt:\d+: MPI_Bcast"):
        read(_liballprof_with(tmp_path, 3, value))


@pytest.mark.parametrize(
    "line, reason",
    [
        ("0 compute -1000", "flops -1000 is out of range"),
        ("0 compute -0.001", "flops -0.001 is out of range"),
        ("0 compute 1e300", "out of range"),
        ("0 sleep -2", "seconds -2 is out of range"),
        ("0 send 0 0 -0.5", "negative count -0.5"),
        ("0 send 0 0 1e30", "count 1e\\+30 is out of range"),
        ("0 bcast 1e30", "count 1e\\+30 is out of range"),
    ],
)
def test_simgrid_negative_or_huge_values_are_refused(tmp_path, line, reason):
    trace = tmp_path / "actions.txt"
    trace.write_text(f"0 init\n{line}\n0 recv 0 0 1\n0 finalize\n")
    with pytest.raises(TraceError, match=rf"actions.txt:2: .*{reason}"):
        read(trace, fmt="simgrid")


def _npz_members(tmp_path: Path) -> dict[str, bytes]:
    path = tmp_path / "good.npz"
    tiny_graph().save(path)
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _npz_with(tmp_path: Path, members: dict[str, bytes]) -> Path:
    path = tmp_path / "bad.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def test_every_kind_of_damaged_npz_is_an_input_error(tmp_path):
    members = _npz_members(tmp_path)
    good = tmp_path / "good.npz"
    cases = {
        "truncated": good.read_bytes()[: len(good.read_bytes()) // 2],
        "not a zip": b"PK\x03\x04 certainly not",
    }
    for label, data in cases.items():
        path = tmp_path / f"{label}.npz"
        path.write_bytes(data)
        with pytest.raises(InputError, match=re.escape(path.name)):
            read(path)
    bad_meta = dict(members, **{"meta.npy": _npy(np.frombuffer(b"\xff\xfe{", np.uint8))})
    with pytest.raises(InputError, match="bad.npz"):
        read(_npz_with(tmp_path, bad_meta))
    not_json = dict(members, **{"meta.npy": _npy(np.frombuffer(b"{not json", np.uint8))})
    with pytest.raises(InputError, match="bad.npz"):
        read(_npz_with(tmp_path, not_json))
    # a header claiming 7 TiB: refused before numpy allocates anything
    header = _npy(np.zeros(3, np.float64))
    huge = header.replace(b"(3,)", b"(900000000000,)")
    with pytest.raises(InputError, match="claims 7200000000000 bytes"):
        read(_npz_with(tmp_path, dict(members, **{"cost_ns.npy": huge})))
    pickled = dict(members, **{"cost_ns.npy": _npy(np.array([{"a": 1}], dtype=object))})
    with pytest.raises(InputError, match="dtype object"):
        read(_npz_with(tmp_path, pickled))
    assert json.loads(bytes(np.load(good)["meta"]).decode())["name"] == "tiny"


def test_cli_damaged_inputs_exit_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.goal"
    bad.write_bytes(b"num_ranks 1\nrank 0 {\nl1: calc 10\x1b[31m" + b"A" * 300 + b"\n}\n")
    npz = tmp_path / "bad.npz"
    npz.write_bytes(b"PK\x03\x04 junk")
    for args in (
        ["info", str(bad)],
        ["info", str(npz)],
        ["ingest", str(SAMPLES["goal"]), "-o", str(tmp_path / "missing" / "x.npz")],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "llamp", *args], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("llamp: error: "), done.stderr
        assert "\x1b" not in done.stderr and "Traceback" not in done.stderr
        assert len(lines[0]) < 400


def test_a_huge_line_is_refused_before_it_is_scanned(tmp_path):
    from llamp.ingest.liballprof import MAX_LINE_BYTES

    trace = tmp_path / "t"
    trace.mkdir()
    (trace / "pmpi-trace-rank-0.txt").write_bytes(
        b"MPI_Init:1.0:0:0:2.0\nMPI_Send:" + b"," * (MAX_LINE_BYTES + 1) + b"\n"
    )
    with pytest.raises(TraceError, match=r"pmpi-trace-rank-0.txt:2: line is \d+ bytes long"):
        read(trace)
