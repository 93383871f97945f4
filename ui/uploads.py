"""Uploaded files → a path :func:`llamp.ingest.read` understands.

Accepted: several liballprof rank files (``pmpi-trace-rank-N.txt`` or ``<prefix>-N.dat``), one
``.zip``/``.tar``/``.tar.gz``/``.tgz`` archive holding such a trace directory (or a ``.goal``
file), one ``.goal`` file, or one ``.npz`` graph. Archives are unpacked without trusting their
member names (no absolute paths, no ``..``, no links) nor their declared sizes: the upload, the
unpacked bytes (counted while writing, so a zip bomb stops at the limit) and the number of files
are bounded by :class:`llamp.config.UiSettings` (``LLAMP_UI_MAX_*``).
"""

from __future__ import annotations

import re
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from llamp.config import UiSettings, ui_settings
from llamp.errors import InputError

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
GRAPH_SUFFIXES = (".goal", ".npz")
#: Extensions the upload widget offers (without dots).
UPLOAD_TYPES = ["txt", "dat", "goal", "npz", "zip", "tar", "gz", "tgz", "bz2", "xz"]

_RANK_FILE = re.compile(r"^(.*?)-?(\d+)\.(txt|dat)$")


@dataclass(frozen=True)
class Upload:
    """One uploaded file: its name as the browser sent it and its bytes."""

    name: str
    data: bytes


def _archive_suffix(name: str) -> str | None:
    lower = name.lower()
    return next((s for s in ARCHIVE_SUFFIXES if lower.endswith(s)), None)


def default_run_name(uploads: list[Upload]) -> str:
    """A run name from the upload: the archive or graph file stem, else the rank files' prefix
    unless it is the tracer's standard ``pmpi-trace-rank`` ("": the user must name the run)."""
    if not uploads:
        return ""
    if len(uploads) == 1:
        name = Path(uploads[0].name).name
        suffix = _archive_suffix(name) or Path(name).suffix
        if suffix and (suffix in ARCHIVE_SUFFIXES or suffix.lower() in GRAPH_SUFFIXES):
            return name[: -len(suffix)]
    match = _RANK_FILE.match(Path(uploads[0].name).name)
    stem = match.group(1).rstrip("-_.") if match else Path(uploads[0].name).stem
    # The tracer's standard prefix says nothing about the application: no default then.
    return "" if stem in ("pmpi-trace-rank", "") else stem


def _safe_member(name: str) -> PurePosixPath:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts:
        raise InputError(f"archive member {name!r} points outside the archive")
    return path


def _mb(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MB"


class _Budget:
    """Bytes and files an archive may still unpack to."""

    def __init__(self, archive: str, limits: UiSettings) -> None:
        self.archive = archive
        self.limits = limits
        self.bytes = 0
        self.files = 0

    def add_file(self) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise InputError(
                f"{self.archive}: holds more than {self.limits.max_files} files "
                "(LLAMP_UI_MAX_FILES)"
            )

    def copy(self, src, dst) -> None:
        while chunk := src.read(1 << 20):
            self.bytes += len(chunk)
            if self.bytes > self.limits.max_unpacked_bytes:
                raise InputError(
                    f"{self.archive}: unpacks to more than "
                    f"{_mb(self.limits.max_unpacked_bytes)} (LLAMP_UI_MAX_UNPACKED_MB)"
                )
            dst.write(chunk)


def _unpack(archive: Path, into: Path, limits: UiSettings | None = None) -> None:
    budget = _Budget(archive.name, limits or ui_settings())
    try:
        if archive.name.lower().endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    rel = _safe_member(info.filename)
                    if info.is_dir():
                        continue
                    budget.add_file()
                    target = into / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(info) as src, open(target, "wb") as dst:
                        budget.copy(src, dst)
        else:
            with tarfile.open(archive) as tf:
                for member in tf:
                    rel = _safe_member(member.name)
                    if member.isdir():
                        continue
                    if not member.isfile():
                        raise InputError(
                            f"{archive.name}: member {member.name[:100]!r} is a link or device, "
                            "which uploads may not contain"
                        )
                    budget.add_file()
                    target = into / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    src = tf.extractfile(member)
                    if src is None:
                        raise InputError(
                            f"{archive.name}: cannot read member {member.name[:100]!r}"
                        )
                    with src, open(target, "wb") as dst:
                        budget.copy(src, dst)
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        tarfile.TarError,
        EOFError,
        OSError,
        NotImplementedError,
        RuntimeError,
        ValueError,
    ) as err:
        raise InputError(f"{archive.name}: cannot unpack the archive ({str(err)[:200]})") from None


def _find_input(root: Path, label: str) -> Path:
    """The trace directory or graph file inside an unpacked archive."""
    files = [p for p in root.rglob("*") if p.is_file() and not p.name.startswith("._")]
    graphs = [p for p in files if p.suffix.lower() in GRAPH_SUFFIXES]
    rank_dirs = sorted(
        {p.parent for p in files if _RANK_FILE.match(p.name)}, key=lambda d: len(d.parts)
    )
    if rank_dirs and graphs:
        raise InputError(f"{label}: holds both trace files and graph files; upload one input")
    if len(rank_dirs) > 1:
        dirs = ", ".join(str(d.relative_to(root)) for d in rank_dirs[:4])
        raise InputError(f"{label}: holds several trace directories ({dirs}); upload one")
    if rank_dirs:
        return rank_dirs[0]
    if len(graphs) == 1:
        return graphs[0]
    if len(graphs) > 1:
        raise InputError(f"{label}: holds {len(graphs)} graph files; upload one")
    raise InputError(
        f"{label}: found no trace (pmpi-trace-rank-N.txt files) and no .goal/.npz graph in it"
    )


def stage(uploads: list[Upload], workdir: Path, run_name: str) -> Path:
    """Write ``uploads`` under ``workdir`` and return the path to read."""
    if not uploads:
        raise InputError("no file uploaded")
    limits = ui_settings()
    total = sum(len(u.data) for u in uploads)
    if total > limits.max_upload_bytes:
        raise InputError(
            f"the upload is {_mb(total)}, more than {_mb(limits.max_upload_bytes)} "
            "(LLAMP_UI_MAX_UPLOAD_MB)"
        )
    if len(uploads) > limits.max_files:
        raise InputError(
            f"{len(uploads)} files uploaded, more than {limits.max_files} (LLAMP_UI_MAX_FILES)"
        )
    names = [Path(u.name).name for u in uploads]
    if len(set(names)) != len(names):
        raise InputError("two uploaded files have the same name")
    archives = [u for u in uploads if _archive_suffix(u.name)]
    graphs = [u for u in uploads if Path(u.name).suffix.lower() in GRAPH_SUFFIXES]
    if archives or graphs:
        if len(uploads) != 1:
            raise InputError(
                "upload either one archive, one .goal/.npz file, or the rank files of one "
                f"trace, not a mix ({', '.join(names)})"
            )
        single = uploads[0]
        path = workdir / Path(single.name).name
        path.write_bytes(single.data)
        if graphs:
            return path
        unpacked = workdir / "unpacked"
        unpacked.mkdir()
        _unpack(path, unpacked, limits)
        return _find_input(unpacked, single.name)
    unknown = [n for n in names if not _RANK_FILE.match(n)]
    if unknown:
        raise InputError(
            f"not a trace rank file: {', '.join(unknown)} (expected pmpi-trace-rank-N.txt, "
            "an archive, or a .goal/.npz file)"
        )
    trace_dir = workdir / (re.sub(r"[^A-Za-z0-9_.-]+", "_", run_name) or "trace")
    trace_dir.mkdir()
    for upload in uploads:
        (trace_dir / Path(upload.name).name).write_bytes(upload.data)
    return trace_dir
