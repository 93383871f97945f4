"""Ingestion: trace files → :class:`~llamp.graph.ExecutionGraph` (docs/architecture.md §Ingest).

``read(path)`` detects the format, runs its reader and, for traces, the trace→graph rules of
:mod:`llamp.ingest.build`. Formats live in :data:`FORMATS`: a new one is one module plus one
line there. A trace reader returns a :class:`~llamp.ingest.events.Trace`; a graph format
(GOAL, ``.npz``) returns the graph directly.
"""

from __future__ import annotations

import struct
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from llamp.errors import InputError, TraceError
from llamp.graph import ExecutionGraph

__all__ = ["FORMATS", "Format", "default_name", "detect_format", "read", "read_trace"]


@dataclass(frozen=True)
class Format:
    """A registered input format: ``trace`` readers give a Trace, ``graph`` readers a graph."""

    name: str
    kind: str  # "trace" or "graph"
    load: Callable[..., object]
    detect: Callable[[Path], bool]
    description: str
    #: Reader-specific keyword options of ``load`` (e.g. ``host_speed``), beyond lenient/progress.
    options: frozenset[str] = frozenset()
    #: The default run name of a path in this format (``None``: the trace folder's name).
    name_of: Callable[[Path], str] | None = None


def _liballprof(path: Path, *, lenient: bool, progress: bool):
    from llamp.ingest.liballprof import read_liballprof

    return read_liballprof(path, lenient=lenient, progress=progress)


def _is_liballprof(path: Path) -> bool:
    from llamp.ingest.liballprof import is_liballprof

    return is_liballprof(path)


def _simgrid(path: Path, *, lenient: bool, progress: bool, host_speed: float | None = None):
    from llamp.ingest.simgrid import DEFAULT_FLOPS_PER_S, read_simgrid

    speed = DEFAULT_FLOPS_PER_S if host_speed is None else host_speed
    return read_simgrid(path, flops_per_s=speed, lenient=lenient, progress=progress)


def _simgrid_name(path: Path) -> str:
    from llamp.ingest.simgrid import trace_name

    return trace_name(path)


def _is_simgrid(path: Path) -> bool:
    from llamp.ingest.simgrid import is_simgrid

    return is_simgrid(path)


def _otf2(path: Path, *, lenient: bool, progress: bool):
    from llamp.ingest.otf2 import read_otf2

    return read_otf2(path, lenient=lenient, progress=progress)


def _is_otf2(path: Path) -> bool:
    from llamp.ingest.otf2 import is_otf2

    return is_otf2(path)


def _dumpi(path: Path, *, lenient: bool, progress: bool):
    from llamp.ingest.dumpi import read_dumpi

    return read_dumpi(path, lenient=lenient, progress=progress)


def _is_dumpi(path: Path) -> bool:
    from llamp.ingest.dumpi import is_dumpi

    return is_dumpi(path)


def _goal(
    path: Path,
    *,
    lenient: bool,
    progress: bool,
    collectives: dict[str, str] | None = None,
    machine: object | None = None,
) -> ExecutionGraph:
    from llamp.ingest.goal import read_goal
    from llamp.ingest.goal_ai import has_markers, read_goal_ai

    if has_markers(path):
        return read_goal_ai(
            path, collectives=collectives, machine=machine, lenient=lenient, progress=progress
        )
    if collectives:
        from llamp.ingest.build import check_algorithms

        check_algorithms(collectives)  # still reject typos
    return read_goal(path, lenient=lenient, progress=progress)


def _chakra(
    path: Path,
    *,
    lenient: bool,
    progress: bool,
    collectives: dict[str, str] | None = None,
    machine: object | None = None,
) -> ExecutionGraph:
    from llamp.ingest.chakra import read_chakra

    return read_chakra(
        path, collectives=collectives, machine=machine, lenient=lenient, progress=progress
    )


def _is_chakra(path: Path) -> bool:
    if path.is_file() and path.suffix != ".et":
        return False  # told without importing the reader (protobuf): a Chakra file is *.<rank>.et
    from llamp.ingest.chakra import is_chakra

    return is_chakra(path)


def _npz(path: Path, *, lenient: bool, progress: bool) -> ExecutionGraph:
    from llamp.ingest.npz import read_npz

    return read_npz(path, lazy=True)


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format(
            "liballprof",
            "trace",
            _liballprof,
            _is_liballprof,
            "liballprof text traces: a directory of pmpi-trace-rank-<N>.txt or <prefix>-<N>.dat",
        ),
        Format(
            "otf2",
            "trace",
            _otf2,
            _is_otf2,
            "OTF2 (Score-P) trace: the anchor file *.otf2 or its directory",
        ),
        Format(
            "dumpi",
            "trace",
            _dumpi,
            _is_dumpi,
            "DUMPI (SST) trace: <prefix>.meta, a <prefix>-NNNN.bin, or their directory",
        ),
        Format(
            "simgrid",
            "trace",
            _simgrid,
            _is_simgrid,
            "SimGrid time-independent trace: an action file, a list of per-rank files, or a "
            "directory of <prefix><N>.txt rank files",
            options=frozenset({"host_speed"}),
            name_of=_simgrid_name,
        ),
        Format(
            "goal",
            "graph",
            _goal,
            lambda p: p.is_file() and p.suffix == ".goal",
            "GOAL schedule (Schedgen output, LogGOPSim input; ATLAHS collective markers "
            "expanded), *.goal",
            options=frozenset({"collectives"}),
        ),
        Format(
            "chakra",
            "graph",
            _chakra,
            _is_chakra,
            "Chakra execution trace (MLCommons, ASTRA-sim): <prefix>.<rank>.et files or their "
            "directory",
            options=frozenset({"collectives"}),
        ),
        Format(
            "npz",
            "graph",
            _npz,
            lambda p: p.is_file() and p.suffix == ".npz",
            "llamp graph file written by ExecutionGraph.save, *.npz",
        ),
    )
}


def detect_format(path: str | Path) -> str:
    """The registered format of ``path`` (raises :class:`InputError` if none or no such path)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    # Graph files are told by their suffix: check them before the trace readers, whose
    # detection imports the reader (and the trace→graph rules).
    for fmt in sorted(FORMATS.values(), key=lambda f: f.kind != "graph"):
        if fmt.detect(path):
            return fmt.name
    known = "; ".join(f.description for f in FORMATS.values())
    raise InputError(f"{path}: format not recognised (known: {known})")


def _reader_options(path: Path, spec: Format, host_speed: float | str | None) -> dict:
    """The reader-specific options given (``None`` = not given), checked against the format."""
    options: dict[str, object] = {}
    if host_speed is not None:
        if "host_speed" not in spec.options:
            takes = ", ".join(f.name for f in FORMATS.values() if "host_speed" in f.options)
            raise InputError(
                f"{path}: a host speed (--host-speed) converts the flops of a trace whose "
                f"computation is in flops ({takes}); this input is {spec.name}, whose "
                "computation is already time"
            )
        from llamp.config import parse_flop_rate

        options["host_speed"] = parse_flop_rate(host_speed)
    return options


def default_name(path: str | Path, *, fmt: str = "auto") -> str:
    """The default run name of ``path``: the format's own rule (a SimGrid list file or one-file
    trace: its stem), a graph file's stem, else the trace folder's name."""
    path = Path(path)
    spec = FORMATS.get(detect_format(path) if fmt == "auto" else fmt)
    if spec is not None and spec.name_of is not None:
        return spec.name_of(path)
    if spec is not None and spec.kind == "graph" and path.is_file():
        return path.stem
    return (path.parent if path.is_file() else path).resolve().name


def read_trace(
    path: str | Path,
    *,
    fmt: str = "auto",
    lenient: bool = False,
    progress: bool = False,
    host_speed: float | str | None = None,
):
    """Read a trace into the common event model (:class:`~llamp.ingest.events.Trace`).

    ``host_speed`` (flop/s, or text such as ``"1Gf"``) converts the flops of a SimGrid TI trace
    into time (default :data:`llamp.config.DEFAULT_HOST_SPEED_FLOPS`); other formats refuse it.
    """
    path = Path(path)
    name = detect_format(path) if fmt == "auto" else fmt
    spec = FORMATS.get(name)
    if spec is None:
        raise InputError(f"unknown format {fmt!r}; known: auto, {', '.join(FORMATS)}")
    if spec.kind != "trace":
        raise InputError(f"{path}: {name} is a graph format, not a trace")
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    options = _reader_options(path, spec, host_speed)
    return spec.load(path, lenient=lenient, progress=progress, **options)


@contextmanager
def _damaged_input(path: Path, fmt: str) -> Iterator[None]:
    """What a reader raises on input too damaged for its own checks (a key or index that the
    file promised, a number that does not fit, bytes that do not decode) is bad input: an
    InputError naming the file and the reason, not a traceback."""
    try:
        yield
    except (
        KeyError,
        IndexError,
        ValueError,
        OverflowError,
        UnicodeDecodeError,
        EOFError,
        struct.error,
        zipfile.BadZipFile,
        zlib.error,
    ) as err:
        reason = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        raise TraceError(
            f"damaged {fmt} input, cannot be read ({reason})", path=str(path)
        ) from None
    except OSError as err:
        where = f" ({err.filename})" if err.filename else ""
        raise TraceError(
            f"cannot read the {fmt} input{where}: {err.strerror or err}", path=str(path)
        ) from None
    except MemoryError:
        raise TraceError(
            f"too large or damaged {fmt} input: reading it needs more memory than this machine has",
            path=str(path),
        ) from None


def read(
    path: str | Path,
    *,
    fmt: str = "auto",
    collectives: dict[str, str] | None = None,
    lenient: bool = False,
    progress: bool = False,
    name: str | None = None,
    host_speed: float | str | None = None,
    nccl_machine: object | None = None,
) -> ExecutionGraph:
    """Read ``path`` (trace directory, ``.goal`` or ``.npz``) into an :class:`ExecutionGraph`.

    ``fmt``: ``"auto"`` (from the path) or a key of :data:`FORMATS`. ``collectives`` maps a
    collective to its algorithm (e.g. ``{"allreduce": "ring"}``; defaults as Schedgen).
    ``lenient`` turns per-line problems into a warning with counts; ``progress`` shows tqdm bars
    on stderr. ``name`` defaults to :func:`default_name` (the trace's own name). ``host_speed``
    (flop/s or text such as ``"1Gf"``) converts a SimGrid TI trace's flops into time; it is an
    error for a format whose computation is already time. ``nccl_machine``
    (:class:`~llamp.ingest.nccl.NcclMachine`) is what the GPU readers' NCCL choice and channels
    assume (Chakra, GOAL with collective markers).
    """
    path = Path(path)
    chosen = detect_format(path) if fmt == "auto" else fmt
    spec = FORMATS.get(chosen)
    if spec is None:
        raise InputError(f"unknown format {fmt!r}; known: auto, {', '.join(FORMATS)}")
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    options = _reader_options(path, spec, host_speed)
    if spec.kind == "graph":
        if collectives and "collectives" not in spec.options:
            from llamp.ingest.build import check_algorithms

            check_algorithms(collectives)  # still reject typos
        chosen_collectives = (
            {"collectives": collectives, "machine": nccl_machine}
            if "collectives" in spec.options
            else {}
        )
        with _damaged_input(path, chosen):
            graph = spec.load(path, lenient=lenient, progress=progress, **chosen_collectives)
        if name:
            graph.meta["name"] = name
        return graph
    from llamp.ingest.build import build_graph

    started = time.perf_counter()
    with _damaged_input(path, chosen):
        trace = spec.load(path, lenient=lenient, progress=progress, **options)
    graph = build_graph(
        trace,
        collectives=collectives,
        lenient=lenient,
        name=name or default_name(path, fmt=spec.name),
        progress=progress,
    )
    graph.meta["ingest_seconds"] = round(time.perf_counter() - started, 3)
    return graph
