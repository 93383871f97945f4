"""Build and cache the injector's C library and programs with the ``mpicc`` found (docs/architecture.md §Injector and validation).

Three artefacts, built on first use and cached per MPI library in
``$LLAMP_HOME/injector/<mpi-id>/`` (``<mpi-id>`` as the tracer's: flavour, version, hash of the
wrapper's command line, see :func:`llamp.ingest.tracing.detect_mpi`), rebuilt when their sources
or flags change (a hash stamp beside each):

- ``libllampinject.so``: the PMPI latency injector (``inject_*.c``), preloaded into every rank;
- ``llamp-pingpong``: the ping-pong behind ``llamp calibrate`` (``pingpong.c``);
- ``llamp-injector-check``: micro-benchmarks and self-checks of the injector
  (``injector_check.c``), used by the tests and ``benchmarks/bench_injector.py``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from llamp.config import llamp_home
from llamp.errors import LlampError
from llamp.ingest.tracing import MPIInfo, compile_cached, detect_mpi

SOURCE_DIR = Path(__file__).resolve().parent
HEADERS = ("llamp_inject.h",)
WARNINGS = ("-Wall", "-Wextra")


class InjectorError(LlampError):
    """The injector cannot be built, or an injected or calibration run failed."""


@dataclass(frozen=True)
class Artefact:
    """One thing to build: its file name, sources and compiler flags."""

    name: str
    sources: tuple[str, ...]
    flags: tuple[str, ...]


LIBRARY = Artefact(
    "libllampinject.so",
    ("inject_core.c", "inject_p2p.c", "inject_coll.c"),
    ("-shared", "-fPIC", "-O2", "-g", *WARNINGS, "-pthread"),
)
PINGPONG = Artefact("llamp-pingpong", ("pingpong.c",), ("-O2", *WARNINGS))
CHECK = Artefact("llamp-injector-check", ("injector_check.c",), ("-O2", *WARNINGS))


def _stamp(artefact: Artefact, info: MPIInfo) -> str:
    digest = hashlib.sha256()
    for name in artefact.sources + HEADERS:
        digest.update(name.encode() + b"\0" + (SOURCE_DIR / name).read_bytes() + b"\0")
    digest.update(" ".join(artefact.flags).encode() + b"\0" + info.show.encode())
    return digest.hexdigest()


def build(
    artefact: Artefact,
    mpicc: str | None = None,
    *,
    rebuild: bool = False,
    home: Path | None = None,
    log=None,
) -> tuple[Path, MPIInfo]:
    """``artefact`` built with ``mpicc``'s MPI (cached); (path, MPI).

    Raises :class:`InjectorError` with the compiler's output when the build fails. ``log`` (a
    ``print``-like callable) hears about a build.
    """
    info = detect_mpi(mpicc)
    target = compile_cached(
        info,
        (home or llamp_home()) / "injector" / info.id / artefact.name,
        [
            *artefact.flags,
            "-I",
            str(SOURCE_DIR),
            *(str(SOURCE_DIR / src) for src in artefact.sources),
        ],
        _stamp(artefact, info),
        what=artefact.name,
        error=InjectorError,
        rebuild=rebuild,
        log=log,
    )
    return target, info


def build_library(mpicc: str | None = None, **kw) -> tuple[Path, MPIInfo]:
    """The injector library ``libllampinject.so`` for ``mpicc``'s MPI."""
    return build(LIBRARY, mpicc, **kw)


def build_pingpong(mpicc: str | None = None, **kw) -> tuple[Path, MPIInfo]:
    """The calibration ping-pong program ``llamp-pingpong``."""
    return build(PINGPONG, mpicc, **kw)


def build_check(mpicc: str | None = None, **kw) -> tuple[Path, MPIInfo]:
    """The micro-benchmark and self-check program ``llamp-injector-check``."""
    return build(CHECK, mpicc, **kw)
