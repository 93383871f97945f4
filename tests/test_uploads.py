"""Uploads of every format the CLI reads (``llamp.ui.uploads.stage``): loose trace files, graph
files and archives, each staged and read back to the same graph as the CLI reads from the
shipped trace; archives unpacked safely (no links, no paths outside, no more than the limits)."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from apptest_pages import archive_bytes

from llamp.errors import InputError
from llamp.ingest import detect_format, read
from llamp.ingest.confine import confined_to
from llamp.ui import uploads
from llamp.ui.uploads import Upload, stage

TRACES = Path(__file__).parent / "data" / "traces"
SWEEP3D = TRACES / "liballprof" / "sweep3d-2x2"
DUMPI = TRACES / "dumpi" / "sst-dumpi-4ranks"
OTF2 = TRACES / "otf2" / "sstmacro-10ranks"
TI32 = TRACES / "simgrid-ti" / "ti-32ranks"
ACTIONS = TRACES / "simgrid-ti" / "actions"
GOAL = TRACES / "goal" / "non_blocking.goal"


def _files(folder: Path, pattern: str = "*") -> list[Upload]:
    return [Upload(p.name, p.read_bytes()) for p in sorted(folder.glob(pattern)) if p.is_file()]


def _tree(folder: Path, prefix: str = "") -> dict[str, bytes]:
    return {
        prefix + p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _dir(path: Path) -> Path:
    path.mkdir()
    return path


def _read(source: Path, workdir: Path):
    with confined_to(workdir):  # as the Runs page reads an upload
        return read(source)


def _same(staged, original) -> None:
    assert staged.num_ranks == original.num_ranks
    assert staged.num_vertices == original.num_vertices
    assert staged.summary().messages == original.summary().messages


@pytest.mark.parametrize(
    "folder,pattern,fmt",
    [
        (SWEEP3D, "pmpi-trace-rank-*.txt", "liballprof"),
        (DUMPI, "*", "dumpi"),  # testtrace.meta + testtrace-000N.bin (+ text dumps)
        (TI32, "ti_trace*.txt", "simgrid"),
    ],
)
def test_loose_trace_files_of_each_format(tmp_path, folder, pattern, fmt):
    files = _files(folder, pattern)
    source = stage(files, tmp_path, "run")
    assert source.is_dir() and detect_format(source) == fmt
    _same(_read(source, tmp_path), read(folder))


def test_dumpi_upload_is_named_by_its_meta_file():
    assert uploads.default_run_name(_files(DUMPI)) == "testtrace"
    assert uploads.default_run_name(_files(TI32, "ti_trace*.txt")) == "ti_trace"


def test_one_simgrid_action_file(tmp_path):
    action = ACTIONS / "actions_bcast.txt"
    source = stage([Upload(action.name, action.read_bytes())], tmp_path, "bcast")
    assert source.is_file() and detect_format(source) == "simgrid"
    _same(_read(source, tmp_path), read(action))


@pytest.mark.parametrize("fmt", ["goal", "npz"])
def test_graph_files(tmp_path, fmt, paper_npz):
    path = GOAL if fmt == "goal" else Path(paper_npz)
    source = stage([Upload(path.name, path.read_bytes())], tmp_path, "g")
    assert source.suffix == f".{fmt}"
    _same(_read(source, tmp_path), read(path))


@pytest.mark.parametrize("kind,suffix", [("zip", ".zip"), ("tar", ".tar.gz")])
def test_otf2_archive_of_the_trace_folder(tmp_path, kind, suffix):
    pytest.importorskip("otf2")
    upload = Upload(f"sstmacro{suffix}", archive_bytes(kind, _tree(OTF2, "sstmacro-10ranks/")))
    assert uploads.default_run_name([upload]) == "sstmacro"
    source = stage([upload], tmp_path, "sstmacro")
    assert source.name == "sstmacro-10ranks" and detect_format(source) == "otf2"
    _same(_read(source, tmp_path), read(OTF2))


def test_dumpi_and_simgrid_archives(tmp_path):
    source = stage(
        [Upload("d.tar.gz", archive_bytes("tar", _tree(DUMPI)))], _dir(tmp_path / "a"), "d"
    )
    assert source == tmp_path / "a" / "unpacked" and detect_format(source) == "dumpi"
    _same(_read(source, tmp_path / "a"), read(DUMPI))
    # What SMPI's -trace-ti writes: a list file beside a folder of rank files; both are the
    # same trace: the folder holding the list is read through it.
    members = {
        "smpi_simgrid.txt": b"replay/actions0.txt\nreplay/actions1.txt\n",
        "replay/actions0.txt": (ACTIONS / "actions0.txt").read_bytes(),
        "replay/actions1.txt": (ACTIONS / "actions1.txt").read_bytes(),
    }
    (tmp_path / "b").mkdir()
    source = stage([Upload("ti.zip", archive_bytes("zip", members))], tmp_path / "b", "ti")
    assert source == tmp_path / "b" / "unpacked" and detect_format(source) == "simgrid"
    assert _read(source, tmp_path / "b").num_ranks == 2


def test_loose_otf2_files_are_refused_with_a_hint(tmp_path):
    anchor = OTF2 / "traces.otf2"
    with pytest.raises(InputError, match="upload it as one .zip"):
        stage([Upload(anchor.name, anchor.read_bytes()), Upload("traces.def", b"")], tmp_path, "x")


def test_archive_holding_two_traces_is_refused(tmp_path):
    members = _tree(SWEEP3D, "a/") | {"b.goal": GOAL.read_bytes()}
    with pytest.raises(InputError, match=r"several inputs \(a \(liballprof\), b.goal \(goal\)\)"):
        stage([Upload("two.zip", archive_bytes("zip", members))], tmp_path, "x")
    with pytest.raises(InputError, match="found no trace or graph"):
        stage(
            [Upload("e.zip", archive_bytes("zip", {"notes.md": b"hi"}))], _dir(tmp_path / "e"), "y"
        )


def test_macos_junk_is_ignored(tmp_path):
    members = _tree(SWEEP3D, "s/") | {"__MACOSX/s/._pmpi-trace-rank-0.txt": b"\x00\x05"}
    source = stage([Upload("s.zip", archive_bytes("zip", members))], tmp_path, "s")
    assert source.name == "s" and not (tmp_path / "unpacked" / "__MACOSX").exists()


def _tar_with(member: tarfile.TarInfo, data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        tf.addfile(member, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def test_links_and_absolute_paths_are_refused(tmp_path):
    link = tarfile.TarInfo("pmpi-trace-rank-0.txt")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    with pytest.raises(InputError, match="is a link"):
        stage([Upload("l.tar.gz", _tar_with(link))], _dir(tmp_path / "1"), "l")
    hard = tarfile.TarInfo("pmpi-trace-rank-0.txt")
    hard.type, hard.linkname = tarfile.LNKTYPE, "/etc/passwd"
    (tmp_path / "2").mkdir()
    with pytest.raises(InputError, match="is a link"):
        stage([Upload("h.tar.gz", _tar_with(hard))], tmp_path / "2", "h")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        info = zipfile.ZipInfo("pmpi-trace-rank-0.txt")
        info.external_attr = (0o120777) << 16  # a symbolic link, as Info-ZIP stores it
        zf.writestr(info, "/etc/passwd")
    (tmp_path / "3").mkdir()
    with pytest.raises(InputError, match="symbolic link"):
        stage([Upload("s.zip", buffer.getvalue())], tmp_path / "3", "s")
    absolute = tarfile.TarInfo("/tmp/pmpi-trace-rank-0.txt")
    absolute.size = 1
    (tmp_path / "4").mkdir()
    with pytest.raises(InputError, match="outside the archive"):
        stage([Upload("a.tar.gz", _tar_with(absolute, b"x"))], tmp_path / "4", "a")


def test_unpacked_size_is_limited_while_writing(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMP_UI_MAX_UNPACKED_MB", "1")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("pmpi-trace-rank-0.txt", b"\0" * (3 << 20))  # 3 MB in a few kB
    assert len(buffer.getvalue()) < 100_000
    with pytest.raises(InputError, match="unpacks to more than 1 MB"):
        stage([Upload("bomb.zip", buffer.getvalue())], tmp_path, "b")
    written = sum(p.stat().st_size for p in (tmp_path / "unpacked").rglob("*") if p.is_file())
    assert written <= 1 << 20


def test_upload_widget_offers_every_loose_format():
    for ext in ("txt", "dat", "meta", "bin", "goal", "npz", "zip", "gz"):
        assert ext in uploads.UPLOAD_TYPES
    from llamp.ingest import FORMATS

    for name in FORMATS:
        hint = {"npz": "llamp graph", "goal": "GOAL", "simgrid": "SimGrid"}.get(name, name)
        assert hint.lower() in uploads.UPLOAD_HELP.lower(), name
