"""Build, cache and launch llamp's PMPI tracer (docs/architecture.md §Ingest): ``llamp trace -- mpirun …``.

The tracer (C sources in ``ingest/tracer/``) is a library preloaded into every MPI process
(``LD_PRELOAD``); it writes one liballprof text file per rank, ``pmpi-trace-rank-<N>.txt``,
into the directory named by ``LLAMP_TRACE_DIR``.

- **Build**: on first use, with the ``mpicc`` found on PATH (or ``$MPICC``, or ``mpicc=``).
  The MPI library is identified by preprocessing ``mpi.h`` (``OPEN_MPI`` with
  ``OMPI_*_VERSION``, or ``MPICH_VERSION``), the compiler wrapper's command line by
  ``mpicc -showme`` (Open MPI) or ``mpicc -show`` (MPICH). The library is cached in
  ``$LLAMP_HOME/tracer/<mpi-id>/libllamptrace.so``, ``<mpi-id>`` = flavour, version and a hash
  of the wrapper's command line, so builds for several MPIs coexist; it is rebuilt when the
  sources or flags change (a hash stamp beside it).
- **Launch**: the command's first word decides how the two variables reach the ranks. Open MPI's
  ``mpirun``/``mpiexec`` get ``-x LD_PRELOAD=… -x LLAMP_TRACE_DIR=…``, MPICH's hydra
  (``mpiexec.hydra``, ``mpirun.mpich``, or ``mpirun`` that reports HYDRA) gets ``-genv``; any
  other command (a singleton run, ``srun``) runs with both in its environment. A launcher of the
  other MPI than the tracer's ``mpicc`` is refused before anything runs.
- **Check**: the run must exit with 0 and leave one complete file per rank (the count comes
  from rank 0's header; complete = ends with ``MPI_Finalize``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from llamp.config import llamp_home
from llamp.errors import InputError, LlampError

__all__ = [
    "MPIInfo",
    "TraceRun",
    "TracerError",
    "build_tracer",
    "check_rank_files",
    "detect_mpi",
    "launch_command",
    "preloaded_command",
    "prepare_directory",
    "run_traced",
]

TRACER_DIR = Path(__file__).resolve().parent / "tracer"
SOURCES = ("record.c", "wrap_c.c", "wrap_f.c")
HEADERS = ("llamp_trace.h",)
CFLAGS = ("-shared", "-fPIC", "-O2", "-g", "-Wall", "-Wextra", "-pthread")
LIBS = ("-lm",)
LIBRARY = "libllamptrace.so"
RANK_FILE = "pmpi-trace-rank-{rank}.txt"
_RANK_FILE_RE = re.compile(r"^pmpi-trace-rank-(\d+)\.txt$")

OPENMPI_LAUNCHERS = frozenset({"mpirun.openmpi", "mpiexec.openmpi", "orterun", "prterun", "prun"})
HYDRA_LAUNCHERS = frozenset({"mpiexec.hydra", "mpirun.mpich", "mpiexec.mpich"})
AMBIGUOUS_LAUNCHERS = frozenset({"mpirun", "mpiexec"})


class TracerError(LlampError):
    """The tracer cannot be built, the traced run failed, or it left an incomplete trace."""


@dataclass(frozen=True)
class MPIInfo:
    """The MPI library behind an ``mpicc``: flavour, version and the wrapper's command line."""

    flavour: str  # "openmpi" or "mpich"
    version: str
    mpicc: str  # absolute path of the compiler wrapper
    show: str  # what the wrapper runs (mpicc -showme / -show)

    @property
    def id(self) -> str:
        """Cache directory name, e.g. ``openmpi-4.1.4-1a2b3c4d``."""
        digest = hashlib.sha256(f"{self.mpicc}\0{self.show}".encode()).hexdigest()[:8]
        return f"{self.flavour}-{self.version}-{digest}"

    @property
    def label(self) -> str:
        return f"{'Open MPI' if self.flavour == 'openmpi' else 'MPICH'} {self.version}"


@dataclass(frozen=True)
class TraceRun:
    """One traced run: where its rank files are and what ran."""

    directory: Path
    files: tuple[Path, ...]
    command: tuple[str, ...]  # as launched, with the tracer's options inserted
    seconds: float
    mpi: MPIInfo
    library: Path
    calls: int  # MPI records over all ranks
    calls_per_rank: tuple[int, ...] = field(default=())

    @property
    def ranks(self) -> int:
        return len(self.files)


# --------------------------------------------------------------------------- MPI detection
def find_mpicc(mpicc: str | None = None) -> str:
    """Absolute path of ``mpicc`` (argument, ``$MPICC``, or ``mpicc`` on PATH)."""
    name = mpicc or os.environ.get("MPICC") or "mpicc"
    path = shutil.which(name)
    if path is None:
        where = "on PATH" if os.sep not in name else "at that path"
        raise TracerError(
            f"no MPI C compiler {name!r} {where}: install an MPI with its development files "
            "(Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev, or mpich "
            "libmpich-dev) or name the wrapper with --mpicc / $MPICC"
        )
    return path


_PROBE = """#include <mpi.h>
#if defined(OPEN_MPI)
llamp_mpi openmpi OMPI_MAJOR_VERSION OMPI_MINOR_VERSION OMPI_RELEASE_VERSION
#elif defined(MPICH_VERSION)
llamp_mpi mpich MPICH_VERSION
#else
llamp_mpi unknown
#endif
"""


@lru_cache(maxsize=8)
def detect_mpi(mpicc: str | None = None) -> MPIInfo:
    """Which MPI ``mpicc`` compiles for (preprocesses ``mpi.h``; see the module doc)."""
    path = find_mpicc(mpicc)
    show = ""
    for flag in ("-showme", "-show"):  # Open MPI, then MPICH (whose -showme is an error)
        try:
            out = subprocess.run(
                [path, flag], capture_output=True, text=True, timeout=60, check=False
            )
        except OSError as err:
            raise TracerError(f"cannot run {path}: {err}") from err
        if out.returncode == 0 and out.stdout.strip():
            show = out.stdout.strip()
            break
    with tempfile.TemporaryDirectory(prefix="llamp-mpi-probe-") as tmp:
        probe = Path(tmp) / "probe.c"
        probe.write_text(_PROBE)
        out = subprocess.run(
            [path, "-E", str(probe)], capture_output=True, text=True, timeout=120, check=False
        )
    if out.returncode != 0:
        raise TracerError(
            f"{path} cannot preprocess a program including mpi.h (exit {out.returncode}):\n"
            f"{(out.stderr or out.stdout).strip()}"
        )
    match = re.search(r"^llamp_mpi\s+(\w+)\s*(.*)$", out.stdout, re.M)
    if match is None or match.group(1) == "unknown":
        raise TracerError(
            f"{path}: mpi.h is neither Open MPI's nor MPICH's (no OPEN_MPI or MPICH_VERSION); "
            "the tracer supports Open MPI and MPICH-derived libraries"
        )
    flavour, rest = match.group(1), match.group(2).strip()
    if flavour == "openmpi":
        version = ".".join(rest.split())
    else:
        version = rest.strip('" ')
    return MPIInfo(flavour=flavour, version=version, mpicc=path, show=show)


# --------------------------------------------------------------------------- build and cache
def _stamp(info: MPIInfo) -> str:
    digest = hashlib.sha256()
    for name in SOURCES + HEADERS:
        digest.update(name.encode() + b"\0" + (TRACER_DIR / name).read_bytes() + b"\0")
    digest.update(" ".join(CFLAGS + LIBS).encode() + b"\0" + info.show.encode())
    return digest.hexdigest()


def build_tracer(
    mpicc: str | None = None,
    *,
    rebuild: bool = False,
    home: Path | None = None,
    log=None,
) -> tuple[Path, MPIInfo]:
    """The tracer library for ``mpicc``'s MPI, built on first use; (library path, MPI).

    ``log`` (a ``print``-like callable) hears about a build. Raises :class:`TracerError` with
    the compiler's output when the build fails.
    """
    info = detect_mpi(mpicc)
    library = compile_cached(
        info,
        (home or llamp_home()) / "tracer" / info.id / LIBRARY,
        [*CFLAGS, "-I", str(TRACER_DIR), *(str(TRACER_DIR / src) for src in SOURCES), *LIBS],
        _stamp(info),
        what="the tracer",
        error=TracerError,
        rebuild=rebuild,
        log=log,
    )
    return library, info


def compile_cached(
    info: MPIInfo,
    target: Path,
    args: list[str],
    stamp: str,
    *,
    what: str,
    error: type[Exception],
    rebuild: bool = False,
    log=None,
) -> Path:
    """``mpicc args -o target``, unless ``target`` was built with the same ``stamp``.

    The stamp (sources, flags, MPI) is kept beside the target; the output is written to a
    temporary file and renamed, so concurrent builds never expose a half-written file. A failed
    build raises ``error`` with the command and the compiler's output.
    """
    stamp_file = target.with_name(target.name + ".sha256")
    if (
        not rebuild
        and target.is_file()
        and stamp_file.is_file()
        and stamp_file.read_text().strip() == stamp
    ):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    cmd = [info.mpicc, *args, "-o", str(tmp)]
    if log is not None:
        log(f"building {what} for {info.label} with {info.mpicc} → {target}")
    started = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        raise error(
            f"building {what} failed (exit {out.returncode}):\n$ {shlex.join(cmd)}\n"
            f"{(out.stderr + out.stdout).strip()}"
        )
    os.replace(tmp, target)
    stamp_file.write_text(stamp + "\n")
    if log is not None:
        warnings = out.stderr.strip()
        log(
            f"built in {time.perf_counter() - started:.1f} s"
            + (f"\n{warnings}" if warnings else "")
        )
    return target


# --------------------------------------------------------------------------- launch
@lru_cache(maxsize=16)
def _launcher_flavour(path: str) -> str | None:
    """``openmpi``/``mpich`` from ``<launcher> --version``, ``None`` if it does not say."""
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = out.stdout + out.stderr
    if "Open MPI" in text or "OpenRTE" in text or "PRRTE" in text:
        return "openmpi"
    if "HYDRA" in text or "hydra" in text.lower() or "Intel(R) MPI" in text:
        return "mpich"
    return None


def launcher_flavour(word: str) -> str | None:
    """The MPI flavour of a command's first word if it is an MPI launcher, else ``None``."""
    base = os.path.basename(word)
    if base in OPENMPI_LAUNCHERS:
        return "openmpi"
    if base in HYDRA_LAUNCHERS:
        return "mpich"
    if base in AMBIGUOUS_LAUNCHERS:
        path = shutil.which(word)
        if path is None:
            raise TracerError(f"{word}: no such launcher on PATH")
        flavour = _launcher_flavour(os.path.realpath(path))
        if flavour is None:
            raise TracerError(
                f"{word} --version names neither Open MPI nor MPICH/hydra: cannot tell how to "
                "pass LD_PRELOAD to the ranks"
            )
        return flavour
    return None


def launch_command(
    command: list[str] | tuple[str, ...], library: Path, directory: Path, mpi: MPIInfo
) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) that run ``command`` with the tracer preloaded into every rank."""
    return preloaded_command(
        command,
        library,
        {"LLAMP_TRACE_DIR": str(Path(directory).resolve())},
        mpi,
        tool="tracer",
        error=TracerError,
        usage="llamp trace [OPTIONS] -- mpirun -np 4 ./app",
    )


def preloaded_command(
    command: list[str] | tuple[str, ...],
    library: Path,
    variables: dict[str, str],
    mpi: MPIInfo,
    *,
    tool: str,
    error: type[Exception],
    usage: str,
) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) that run ``command`` with ``library`` preloaded into every rank and
    ``variables`` in every rank's environment (the tracer's and the injector's launch).

    Open MPI's and MPICH's launchers get the settings as ``-x``/``-genv`` arguments; a singleton
    run or a launcher that forwards its environment (srun, …) gets them in the environment.
    ``error`` is raised when the launcher belongs to another MPI than ``tool`` was built for.
    """
    if not command:
        raise InputError(f"no command to run: {usage}")
    env = dict(os.environ)
    preload = str(Path(library).resolve())  # the ranks may run in another directory (cwd=…)
    if env.get("LD_PRELOAD"):
        preload = f"{preload}:{env['LD_PRELOAD']}"
    flavour = launcher_flavour(command[0])
    if flavour is not None and flavour != mpi.flavour:
        names = {"openmpi": "Open MPI", "mpich": "MPICH"}
        raise error(
            f"{command[0]} is {names[flavour]}'s launcher but the {tool} is built for "
            f"{mpi.label} ({mpi.mpicc}); use the mpicc of the MPI the application runs on "
            f"(--mpicc mpicc.{flavour} or $MPICC) or that MPI's launcher"
        )
    settings = {"LD_PRELOAD": preload, **variables}
    env.update(variables)
    if flavour == "openmpi":
        extra = [arg for k, v in settings.items() for arg in ("-x", f"{k}={v}")]
    elif flavour == "mpich":
        extra = [arg for k, v in settings.items() for arg in ("-genv", k, v)]
    else:
        env["LD_PRELOAD"] = preload
        return list(command), env
    return [command[0], *extra, *command[1:]], env


# --------------------------------------------------------------------------- checks
def _rank_files(directory: Path) -> dict[int, Path]:
    found: dict[int, Path] = {}
    if directory.is_dir():
        for entry in directory.iterdir():
            match = _RANK_FILE_RE.match(entry.name)
            if match and entry.is_file():
                found[int(match.group(1))] = entry
    return found


def _world_size(rank0: Path) -> int | None:
    with rank0.open("rb") as fh:
        for _ in range(64):
            line = fh.readline()
            if not line.startswith(b"#"):
                if line.strip():
                    break
                continue
            match = re.match(rb"#\s*world size:\s*(\d+)", line) or re.match(
                rb"#\s*llamp comm\s+\S+\s+(\d+)\s", line
            )
            if match:
                return int(match.group(1))
    return None


def _last_record(path: Path) -> bytes:
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - 4096))
        lines = [ln for ln in fh.read().splitlines() if ln.strip()]
    return lines[-1] if lines else b""


def check_rank_files(directory: Path, expected: int | None = None) -> list[Path]:
    """The complete rank files of a traced run, index = rank, or a :class:`TracerError`.

    The number of ranks is ``expected`` or rank 0's ``# world size`` header; every file must
    end with ``MPI_Finalize``.
    """
    found = _rank_files(directory)
    if not found:
        raise TracerError(
            f"no trace files in {directory}: the tracer was not loaded into the MPI processes "
            "(is the application linked against the same MPI as the tracer's mpicc? compare "
            "`ldd <app> | grep mpi`; does the launcher pass LD_PRELOAD?) or the program never "
            "called MPI_Init"
        )
    if expected is None and 0 in found:
        expected = _world_size(found[0])
    if expected is None:
        expected = max(found) + 1
    missing = [r for r in range(expected) if r not in found]
    if missing:
        names = ", ".join(RANK_FILE.format(rank=r) for r in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise TracerError(
            f"{directory}: missing rank files {names}{more} ({len(found)} of {expected} ranks "
            "wrote a trace)"
        )
    files = [found[r] for r in range(expected)]
    for rank, path in enumerate(files):
        last = _last_record(path)
        if not last.startswith(b"MPI_Finalize:"):
            why = last.decode("latin-1")[:120]
            raise TracerError(
                f"{path}: incomplete trace of rank {rank} (it does not end with MPI_Finalize; "
                f"last line {why!r}): the process died, was killed or exited without "
                "MPI_Finalize"
            )
    return files


def _count_records(path: Path) -> int:
    count = 0
    tail = b""
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            # The 4-byte tail cannot hold a whole 5-byte marker, so a marker split across two
            # reads is counted once in tail + chunk and none twice.
            data = tail + chunk
            count += data.count(b"\nMPI_")
            tail = data[-4:]
    return count


# --------------------------------------------------------------------------- run
def prepare_directory(directory: Path, overwrite: bool) -> None:
    """Create ``directory``; refuse (or with ``overwrite`` remove) rank files already there."""
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{directory} exists and is not a directory")
    old = _rank_files(directory)
    if old and not overwrite:
        raise InputError(
            f"{directory} already holds a trace ({len(old)} rank files): choose another "
            "-o DIR or pass --overwrite"
        )
    for path in old.values():
        path.unlink()
    directory.mkdir(parents=True, exist_ok=True)


def run_traced(
    command: list[str] | tuple[str, ...],
    directory: str | Path,
    *,
    mpicc: str | None = None,
    overwrite: bool = False,
    rebuild: bool = False,
    log=None,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float | None = None,
) -> TraceRun:
    """Run ``command`` (``mpirun …`` or a program) with the tracer; check and return the trace.

    ``env`` adds variables to the run's environment, ``cwd`` is its working directory.
    Raises :class:`TracerError` if the build fails, the command exits with a non-zero code, or
    rank files are missing or incomplete.
    """
    directory = Path(directory).resolve()
    library, mpi = build_tracer(mpicc, rebuild=rebuild, log=log)
    argv, run_env = launch_command(list(command), library, directory, mpi)
    if env:
        run_env.update(env)
    prepare_directory(directory, overwrite)
    started = time.perf_counter()
    try:
        proc = subprocess.run(argv, env=run_env, cwd=cwd, check=False, timeout=timeout)
    except FileNotFoundError as err:
        raise TracerError(f"cannot run {argv[0]!r}: {err.strerror}") from err
    except subprocess.TimeoutExpired as err:
        raise TracerError(
            f"the traced run did not finish within {timeout} s: {shlex.join(argv)}"
        ) from err
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        have = len(_rank_files(directory))
        raise TracerError(
            f"the application failed (exit code {proc.returncode}): {shlex.join(argv)}"
            + (f" ({have} rank files in {directory}, possibly incomplete)" if have else "")
        )
    files = check_rank_files(directory)
    per_rank = tuple(_count_records(f) for f in files)
    return TraceRun(
        directory=directory,
        files=tuple(files),
        command=tuple(argv),
        seconds=seconds,
        mpi=mpi,
        library=library,
        calls=sum(per_rank),
        calls_per_rank=per_rank,
    )
