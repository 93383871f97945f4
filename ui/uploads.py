"""Uploaded files → a path :func:`llamp.ingest.read` understands.

Accepted: every format of :data:`llamp.ingest.FORMATS` — the files of one trace (liballprof
rank files, DUMPI ``.meta`` and ``.bin`` files, SimGrid TI rank files or one action file), one
``.goal`` or ``.npz`` graph, or one ``.zip``/``.tar``/``.tar.gz``/``.tgz`` archive holding any of
these (the only way to upload an OTF2 trace, which is a folder). The format is what
:func:`llamp.ingest.detect_format` says, so a new format needs no change here. Archives are unpacked without trusting their
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
#: Extensions the upload widget offers (without dots): trace files (liballprof ``.txt``/``.dat``,
#: DUMPI ``.meta``/``.bin``, SimGrid TI ``.txt``/``.trace``, Chakra ``.et``), graphs, and archives (any format,
#: and the only way to upload an OTF2 folder).
UPLOAD_TYPES = [
    "txt", "dat", "meta", "bin", "trace", "ti", "goal", "npz", "et",
    "zip", "tar", "gz", "tgz", "bz2", "xz",
]  # fmt: skip
#: What each registered format looks like as an upload (docs and error messages).
FORMAT_HINTS = (
    "liballprof: the pmpi-trace-rank-N.txt (or <prefix>-N.dat) files",
    "DUMPI: the <prefix>.meta and <prefix>-NNNN.bin files",
    "SimGrid TI: the per-rank <prefix>N.txt files or one action file",
    "OTF2: the trace folder as a .zip/.tar.gz archive",
    "GOAL: one .goal file",
    "Chakra: the <prefix>.<rank>.et files",
    "llamp graph: one .npz file",
    "any of these as one .zip/.tar.gz archive",
)
#: Help text of the upload widget.
UPLOAD_HELP = (
    "One trace or graph, in any format llamp reads: "
    + "; ".join(FORMAT_HINTS)
    + ". Archives are unpacked safely (no links, no paths outside, size-limited)."
)

_RANK_FILE = re.compile(r"^(.*?)-?(\d+)\.(txt|dat|bin)$")


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
    metas = [u for u in uploads if u.name.lower().endswith(".meta")]
    if metas:  # DUMPI: the .meta file's stem is the trace's prefix
        return Path(metas[0].name).stem
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
                    if info.is_dir() or _junk(rel):
                        continue
                    if (info.external_attr >> 16) & 0o170000 == 0o120000:
                        raise InputError(
                            f"{archive.name}: member {info.filename[:100]!r} is a symbolic link, "
                            "which uploads may not contain"
                        )
                    budget.add_file()
                    target = into / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(info) as src, open(target, "wb") as dst:
                        budget.copy(src, dst)
        else:
            with tarfile.open(archive) as tf:
                for member in tf:
                    rel = _safe_member(member.name)
                    if member.isdir() or _junk(rel):
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


def _detected(path: Path) -> str | None:
    """The registered format of ``path``, or None."""
    from llamp.ingest import detect_format

    try:
        return detect_format(path)
    except (InputError, OSError, ValueError):
        return None


def _list_covers(list_file: Path) -> set[Path]:
    """The folders holding the rank files a SimGrid list file names (a ``-trace-ti`` output is
    such a list beside a folder of rank files: both stand for the same trace)."""
    from llamp.ingest.simgrid import find_trace_files

    try:
        return {p.resolve().parent for p, rank in find_trace_files(list_file) if rank is not None}
    except (InputError, OSError, ValueError):
        return set()


def _find_input(root: Path, label: str) -> Path:
    """The one input (trace directory or file of a registered format) inside an unpacked
    archive: the directories and files :func:`llamp.ingest.detect_format` recognises, minus
    those inside a recognised directory; exactly one must remain."""
    from llamp.ingest.confine import confined_to

    entries = sorted(p for p in root.rglob("*") if not _junk(p.relative_to(root)))
    dirs = [root] + [p for p in entries if p.is_dir()]
    files = [p for p in entries if p.is_file()]
    found: list[tuple[Path, str]] = []
    covered: list[Path] = []
    with confined_to(root):
        for folder in sorted(dirs, key=lambda d: len(d.parts)):
            if any(c == folder or c in folder.parents for c in covered):
                continue
            fmt = _detected(folder)
            if fmt is not None:
                found.append((folder, fmt))
                covered.append(folder)
        for file in files:
            if any(c in file.parents for c in covered):
                continue
            fmt = _detected(file)
            if fmt is not None:
                found.append((file, fmt))
        listed = set()
        for path, fmt in found:
            if fmt == "simgrid" and path.is_file():
                listed |= _list_covers(path)
    found = [(p, f) for p, f in found if not (p.is_dir() and p.resolve() in listed)]
    if len(found) == 1:
        return found[0][0]
    if not found:
        known = ", ".join(FORMAT_HINTS)
        raise InputError(f"{label}: found no trace or graph in it (readable formats: {known})")
    names = ", ".join(
        f"{(p.relative_to(root).as_posix() or '.')} ({fmt})" for p, fmt in found[:4]
    ) + (", …" if len(found) > 4 else "")
    raise InputError(f"{label}: holds several inputs ({names}); upload one trace or graph")


def _junk(rel: PurePosixPath | Path) -> bool:
    """Files an archiver adds beside the content (macOS resource forks and folders)."""
    return any(part == "__MACOSX" or part.startswith("._") for part in rel.parts)


def stage(uploads: list[Upload], workdir: Path, run_name: str) -> Path:
    """Write ``uploads`` under ``workdir`` and return the path to read: the one input inside
    an archive, a graph file, or the folder of the uploaded trace files (every format of
    :data:`llamp.ingest.FORMATS`: liballprof rank files, DUMPI ``.meta`` + ``.bin`` files,
    SimGrid TI rank files or one action file; OTF2 only as an archive, as it is a folder)."""
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
    names = [Path(u.name.replace("\\", "/")).name for u in uploads]
    if any(n in ("", ".", "..") for n in names):
        raise InputError(f"an uploaded file has no usable name ({names})")
    if len(set(names)) != len(names):
        raise InputError("two uploaded files have the same name")
    archives = [u for u in uploads if _archive_suffix(u.name)]
    graphs = [u for u in uploads if Path(u.name).suffix.lower() in GRAPH_SUFFIXES]
    if (archives or graphs) and len(uploads) != 1:
        raise InputError(
            "upload either one archive, one .goal/.npz file, or the files of one trace, "
            f"not a mix ({', '.join(names)})"
        )
    if archives:
        path = workdir / names[0]
        path.write_bytes(uploads[0].data)
        unpacked = workdir / "unpacked"
        unpacked.mkdir()
        _unpack(path, unpacked, limits)
        return _find_input(unpacked, names[0])
    trace_dir = workdir / (re.sub(r"[^A-Za-z0-9_.-]+", "_", run_name).strip(".") or "trace")
    trace_dir.mkdir()
    for name, upload in zip(names, uploads, strict=True):
        (trace_dir / name).write_bytes(upload.data)
    candidate = trace_dir / names[0] if len(uploads) == 1 else trace_dir
    from llamp.ingest.confine import confined_to

    with confined_to(workdir):
        fmt = _detected(candidate)
    if fmt is None:
        raise InputError(
            f"not a trace rank file nor any format llamp reads: {', '.join(names[:4])}"
            f"{', …' if len(names) > 4 else ''} (expected {'; '.join(FORMAT_HINTS)})"
        )
    if fmt == "otf2":
        raise InputError(
            "an OTF2 trace is a folder (the .otf2 anchor, .def files and the traces folder): "
            "upload it as one .zip or .tar.gz archive"
        )
    return candidate
