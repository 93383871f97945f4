"""Hostile graph files against the CLI, each in its own process (a crash must show as a crash):
every defect is exit 2 with one ``llamp: error:`` line naming the file, or — for an event
graph that does not come from its graph — the true T with one note; memory and time stay
bounded and the store keeps its contents.

Defects are made from a graph file llamp wrote (seeded random graph), changed member by member
with fresh CRCs, as a careless script or an attacker would write them.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from cli_process import llamp_measured
from random_graphs import random_graph

from llamp.graph import ExecutionGraph
from llamp.lp import predict
from llamp.lp.lowered import save_graph
from llamp.params import LogGPS

POINT = ["--L", "2us", "--o", "150ns", "--G", "0.3ns/B", "--S", "2048"]
PARAMS = LogGPS(L=2000.0, o=150.0, G=0.3, S=2048)
#: Peak RSS and wall time a refused or re-lowered small file may take (the interpreter with
#: numpy, numba and llamp loaded is ~250 MB; a bomb would take GBs).
MAX_RSS = 700 << 20
MAX_SECONDS = 120


@pytest.fixture
def env(tmp_path, monkeypatch) -> dict[str, str]:
    """The key that seals files, the same for this process and the CLI processes."""
    key = str(tmp_path / "seal.key")
    monkeypatch.setenv("LLAMP_SEAL_KEY", key)
    return {"LLAMP_SEAL_KEY": key}


@pytest.fixture
def graph() -> ExecutionGraph:
    return random_graph(11, ranks=4, steps=60, max_size=8192)


@pytest.fixture
def saved(tmp_path, graph, env) -> Path:
    return save_graph(graph, tmp_path / "g.npz", (PARAMS,))


def _rewrite(path: Path, member: str, change) -> Path:
    """``path`` with member ``member`` (an array) replaced by ``change(array)``, CRCs fresh."""
    with zipfile.ZipFile(path) as archive:
        contents = {name: archive.read(name) for name in archive.namelist()}
    array = np.lib.format.read_array(io.BytesIO(contents[f"{member}.npy"]))
    out = io.BytesIO()
    np.lib.format.write_array(out, np.asarray(change(array.copy()), order="C"))
    contents[f"{member}.npy"] = out.getvalue()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in contents.items():
            archive.writestr(name, data)
    return path


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` and its content hash."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _run(home: Path, env, *args: str):
    result = llamp_measured(*args, home=home, env=env, timeout=MAX_SECONDS)
    assert result.returncode >= 0, f"killed by signal {-result.returncode}: {result.stderr}"
    assert result.max_rss_bytes < MAX_RSS, result.max_rss_bytes
    assert result.seconds < MAX_SECONDS
    return result


def _refused(result, path: Path, reason: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("llamp: error: "), result.stderr
    assert str(path) in lines[0] and reason in lines[0], lines[0]
    assert result.stdout == ""


def _T(result) -> float:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["runtime_ns"]


# ---------------------------------------------------------------------- defects in the graph


def _edge_out_of_range(a):
    a[len(a) // 2] = 10**6
    return a


def _nan_cost(a):
    a[np.flatnonzero(a > 0)[0]] = np.nan
    return a


def _negative_cost(a):
    a[np.flatnonzero(a > 0)[0]] = -5.0
    return a


def _infinite_cost(a):
    a[np.flatnonzero(a > 0)[0]] = np.inf
    return a


def _rank_out_of_range(a):
    a[-1] = 99
    return a


def _peer_out_of_range(a):
    a[:] = 1000
    return a


@pytest.mark.parametrize(
    ("member", "change", "reason"),
    [
        ("edge_src", _edge_out_of_range, "refers to vertex 1000000"),
        ("edge_dst", _edge_out_of_range, "refers to vertex 1000000"),
        ("cost_ns", _nan_cost, "NaN cost"),
        ("cost_ns", _negative_cost, "negative, infinite or NaN cost"),
        ("cost_ns", _infinite_cost, "negative, infinite or NaN cost"),
        ("rank", _rank_out_of_range, "outside 0..3"),
        ("peer", _peer_out_of_range, "peer outside 0..3"),
        ("num_ranks", lambda a: np.array(1 << 40), "ranks for"),
        ("meta", lambda a: np.frombuffer(b"[" * 10**5 + b"]" * 10**5, np.uint8), "(meta:"),
    ],
    ids=[
        "edge-src",
        "edge-dst",
        "nan",
        "negative",
        "inf",
        "rank",
        "peer",
        "num-ranks",
        "deep-meta",
    ],
)
@pytest.mark.parametrize("command", ["predict", "info", "path", "ingest"])
def test_a_graph_file_with_a_defect_is_refused(
    tmp_path, env, saved, member, change, reason, command
):
    bad = _rewrite(saved, member, change)
    home = tmp_path / "home"
    args = {"predict": ["predict", str(bad), *POINT], "info": ["info", str(bad)]}
    args |= {"path": ["path", str(bad), *POINT], "ingest": ["ingest", str(bad), "--name", "x"]}
    _refused(_run(home, env, *args[command]), bad, reason)


def test_a_forged_validated_stamp_does_not_skip_the_checks(tmp_path, env):
    """A graph that never passed the checks, in a file whose stamp says it did."""
    bad = ExecutionGraph.from_arrays(
        2,
        rank=[0, 0, 1],
        kind=[1, 0, 2],
        cost_ns=[0.0, 5.0, 0.0],
        size=[8, 0, 16],
        peer=[1, 0, 0],
        tag=[0, 0, 0],
        edge_src=[0, 1],
        edge_dst=[2, 0],
        edge_kind=[2, 0],
        validate=False,
    )
    path = bad.save(tmp_path / "forged.npz")
    stamp = np.frombuffer(json.dumps({"version": 3, "validated": True}).encode(), np.uint8)
    _rewrite(path, "llamp_file", lambda a: stamp)
    _refused(_run(tmp_path / "home", env, "info", str(path)), path, "size, peer or tag differ")


# ---------------------------------------------------------------------- event graphs not bound


@pytest.mark.parametrize(
    ("member", "change"),
    [
        ("lowering_0_value", lambda a: a * 1000),
        ("lowering_0_value", lambda a: np.full_like(a, np.nan)),
        ("lowering_0_value", lambda a: -a),
        ("lowering_0_fixed", lambda a: a * 1000),
        ("lowering_0_in_ptr", lambda a: a[::-1].copy()),
        ("lowering_0_src", lambda a: np.full_like(a, 10**9)),
        ("lowering_0_out_edge", lambda a: np.full_like(a, -7)),
        ("lowering_index", None),  # below: copied with the seal from another graph's file
    ],
    ids=[
        "value-x1000",
        "value-nan",
        "value-negative",
        "fixed-x1000",
        "csr",
        "src",
        "out-edge",
        "copied",
    ],
)
def test_an_event_graph_not_sealed_with_its_graph_is_lowered_again(
    tmp_path, env, graph, saved, member, change
):
    """Whatever the stored event graph says, T is the graph's (with one note), never a crash."""
    if member == "lowering_index":  # the event graph and seal of another graph's file
        other = ExecutionGraph.from_arrays(
            graph.num_ranks,
            **{k: getattr(graph, k) for k in ("rank", "kind", "size", "peer", "tag")},
            cost_ns=graph.cost_ns * 2,
            edge_src=graph.edge_src,
            edge_dst=graph.edge_dst,
            edge_kind=graph.edge_kind,
        )
        other_path = save_graph(other, tmp_path / "other.npz", (PARAMS,))
        with zipfile.ZipFile(other_path) as archive:
            theirs = {n: archive.read(n) for n in archive.namelist() if n.startswith("l")}
        with zipfile.ZipFile(saved) as archive:
            mine = {n: archive.read(n) for n in archive.namelist()}
        with zipfile.ZipFile(saved, "w") as archive:
            for name, data in (mine | theirs).items():
                archive.writestr(name, data)
    else:
        _rewrite(saved, member, change)
    result = _run(tmp_path / "home", env, "predict", str(saved), *POINT, "--json")
    assert _T(result) == predict(graph, PARAMS).runtime_ns
    notes = result.stderr.strip().splitlines()
    assert len(notes) == 1 and notes[0].startswith("llamp: warning: ")
    assert "lowering again" in notes[0] and str(saved) in notes[0]


def test_costs_changed_under_an_old_event_graph_give_the_new_T(tmp_path, env, graph, saved):
    """Costs ×1000 with the old lowering kept: ``info`` and ``predict`` agree on the new graph."""
    _rewrite(saved, "cost_ns", lambda a: a * 1000)
    changed = ExecutionGraph.from_arrays(
        graph.num_ranks,
        **{k: getattr(graph, k) for k in ("rank", "kind", "size", "peer", "tag")},
        cost_ns=graph.cost_ns * 1000,
        edge_src=graph.edge_src,
        edge_dst=graph.edge_dst,
        edge_kind=graph.edge_kind,
    )
    result = _run(tmp_path / "home", env, "predict", str(saved), *POINT, "--json")
    assert _T(result) == predict(changed, PARAMS).runtime_ns != predict(graph, PARAMS).runtime_ns


def test_a_file_sealed_with_another_key_is_checked_and_lowered_again(tmp_path, env, graph, saved):
    result = _run(
        tmp_path / "home", {"LLAMP_SEAL_KEY": str(tmp_path / "other.key")}, "predict",
        str(saved), *POINT, "--json",
    )  # fmt: skip
    assert _T(result) == predict(graph, PARAMS).runtime_ns
    assert "not sealed by this installation" in result.stderr


def test_a_sealed_file_answers_from_its_event_graph_without_a_note(tmp_path, env, graph, saved):
    result = _run(tmp_path / "home", env, "predict", str(saved), *POINT, "--json")
    assert _T(result) == predict(graph, PARAMS).runtime_ns
    assert result.stderr == ""


@pytest.mark.slow
def test_ingesting_a_doctored_file_stores_the_true_graph(tmp_path, env, graph, saved):
    """The store's graph file is written from the checked graph: the doctored lowering is not
    copied into it, so the stored run answers with the true T."""
    _rewrite(saved, "lowering_0_value", lambda a: a * 1000)
    home = tmp_path / "home"
    assert _run(home, env, "ingest", str(saved), "--name", "g").returncode == 0
    stored = _run(home, env, "predict", "g", *POINT, "--json")
    assert _T(stored) == predict(graph, PARAMS).runtime_ns


@pytest.mark.slow
def test_a_refused_ingest_leaves_the_store_unchanged(tmp_path, env, saved):
    home = tmp_path / "home"
    assert _run(home, env, "ingest", str(saved), "--name", "good").returncode == 0
    before = _tree(home)
    bad = _rewrite(saved, "edge_src", _edge_out_of_range)
    _refused(_run(home, env, "ingest", str(bad), "--name", "bad"), bad, "refers to vertex")
    assert _tree(home) == before


# ---------------------------------------------------------------------- compression bombs


def _bomb(path: Path, inflated: int, *, declared: int | None = None) -> Path:
    """A graph file whose ``cost_ns`` member inflates to ``inflated`` bytes of zeros (its zip
    entry declaring ``declared`` bytes, default the truth), the other members a valid graph."""
    good = random_graph(3, ranks=2, steps=10)
    good.save(path)
    with zipfile.ZipFile(path) as archive:
        contents = {name: archive.read(name) for name in archive.namelist()}
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": ((inflated - 128) // 8,)}
    )
    head = header.getvalue().ljust(128, b" ")[:127] + b"\n"
    compressor = zlib.compressobj(1, zlib.DEFLATED, -15)
    chunk = bytes(1 << 24)
    body = [compressor.compress(head)]
    crc = zlib.crc32(head)
    left = inflated - len(head)
    while left > 0:
        piece = chunk[: min(left, len(chunk))]
        body.append(compressor.compress(piece))
        crc = zlib.crc32(piece, crc)
        left -= len(piece)
    body.append(compressor.flush())
    with zipfile.ZipFile(path, "w") as archive:
        for name, member in contents.items():
            if name != "cost_ns.npy":
                archive.writestr(name, member)
    return _append_raw_member(path, "cost_ns.npy", b"".join(body), crc, declared or inflated)


def _append_raw_member(path: Path, name: str, data: bytes, crc: int, size: int) -> Path:
    """Append a deflated member whose bytes are ``data`` as given (zipfile would compress)."""
    with zipfile.ZipFile(path, "a", allowZip64=True) as archive:
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive._lock:  # noqa: SLF001 - write a precompressed member
            archive.fp.seek(archive.start_dir)
            info.header_offset = archive.fp.tell()
            info.CRC, info.compress_size, info.file_size = crc, len(data), size
            info.flag_bits = 0
            archive.fp.write(info.FileHeader(zip64=size > 0xFFFFFFFF))
            archive.fp.write(data)
            archive.start_dir = archive.fp.tell()
            archive.filelist.append(info)
            archive.NameToInfo[name] = info
            archive._didModify = True  # noqa: SLF001
    return path


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    """1 GiB of zeros in ~5 MB."""
    return _bomb(tmp_path_factory.mktemp("bomb") / "bomb.npz", 1 << 30)


@pytest.mark.parametrize("command", ["info", "predict", "ingest"])
def test_a_compression_bomb_is_refused_before_it_inflates(tmp_path, env, bomb, command):
    assert bomb.stat().st_size < 8 << 20
    args = {"info": ["info"], "predict": ["predict", *POINT], "ingest": ["ingest", "--name", "b"]}
    cmd = args[command]
    result = _run(tmp_path / "home", env, cmd[0], str(bomb), *cmd[1:])
    _refused(result, bomb, "would inflate to 1,024 MiB")


def test_a_bomb_given_to_the_collective_what_ifs_is_never_inflated(tmp_path, env, bomb):
    """``llamp collectives`` reads a graph file only to point at its trace: through the
    checked reader too (bounded memory, exit 2, one line)."""
    result = _run(tmp_path / "home", env, "collectives", str(bomb), "default")
    _refused(result, bomb, "execution graph")


def test_a_member_that_inflates_beyond_its_declared_size_is_cut_and_refused(tmp_path, env):
    bomb = _bomb(tmp_path / "liar.npz", 256 << 20, declared=4096)
    result = _run(tmp_path / "home", env, "info", str(bomb))
    _refused(result, bomb, "cost_ns")


def test_a_bomb_inside_a_zip_upload_is_refused(tmp_path, env, bomb):
    from llamp.errors import InputError
    from llamp.ingest import read
    from llamp.ui.uploads import Upload, stage

    (tmp_path / "work").mkdir()
    outer = io.BytesIO()
    with zipfile.ZipFile(outer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(bomb, "bomb.npz")
    staged = stage([Upload("graph.zip", outer.getvalue())], tmp_path / "work", "bomb")
    with pytest.raises(InputError, match="would inflate"):
        read(staged)


# ---------------------------------------------------------------------- seeded random damage

_FUZZ = """
import sys, warnings
from llamp.errors import InputError
from llamp.ingest import read
from llamp.lp import predict
from llamp.params import LogGPS
warnings.simplefilter("ignore")
params = LogGPS(L=2000.0, o=150.0, G=0.3, S=2048)
for path in sys.argv[1:]:
    try:
        T = predict(read(path), params).runtime_ns
        print(path, "T", T)
    except InputError as err:
        print(path, "refused", str(err).splitlines()[0][:200])
"""


def test_seeded_random_damage_never_crashes_and_never_changes_T_silently(tmp_path, env, graph):
    """Random values written into random members (fresh CRCs), all in one child process: each
    file is refused or gives the T of the graph it holds; a crash kills the child (a signal)."""
    import subprocess
    import sys

    rng = np.random.default_rng(2028)
    members = [
        "rank", "kind", "cost_ns", "size", "peer", "tag", "edge_src", "edge_dst", "edge_kind",
        "lowering_0_src", "lowering_0_pattern", "lowering_0_value", "lowering_0_msg",
        "lowering_0_in_ptr", "lowering_0_out_ptr", "lowering_0_out_edge",
        "lowering_0_event_of_pos", "lowering_0_pos_of_event", "lowering_0_fixed",
    ]  # fmt: skip
    paths, truth = [], {}
    for i in range(60):
        path = save_graph(graph, tmp_path / f"f{i}.npz", (PARAMS,))
        member = members[i % len(members)]

        def damage(a):
            flat = a.reshape(-1)
            where = rng.integers(0, flat.size, size=max(1, flat.size // 50))
            if flat.dtype.kind == "f":
                flat[where] = rng.choice([np.nan, -1.0, 1e30, np.inf, 0.0, 123.0], where.size)
            else:
                info = np.iinfo(flat.dtype)
                flat[where] = rng.integers(info.min, info.max, where.size, dtype=flat.dtype)
            return a

        _rewrite(path, member, damage)
        paths.append(str(path))
        if member.startswith("lowering_"):
            truth[str(path)] = predict(graph, PARAMS).runtime_ns
    proc = subprocess.run(
        [sys.executable, "-c", _FUZZ, *paths],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", **env},
    )
    assert proc.returncode == 0, f"child died ({proc.returncode}): {proc.stderr[-2000:]}"
    outcome = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert sorted(outcome) == sorted(paths)
    for path, T in truth.items():  # a damaged event graph never changes T
        assert outcome[path] == f"T {T!r}", outcome[path]
