"""The ``llamp`` command line: one entry point, one module per group of subcommands.

Exit codes: 0 success, 2 bad input (:class:`llamp.errors.InputError`, or a path that cannot be
read or written), 1 a failure at run time: of the environment (a graph server that does not
answer, out of memory, interrupted) or internal (a line saying so and where to report it, never
a traceback unless ``LLAMP_DEBUG=1``). Every diagnostic goes through one channel
(:func:`llamp.cli.base.message`): one line ``llamp: error: …`` or ``llamp: warning: …`` on
stderr, without passwords, with control characters escaped and long quoted input cut; Python
warnings raised by the library (``IngestWarning``) are relayed the same way.
Human tables by default, ``--json`` for machines.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any

import click

from llamp.config import redact
from llamp.errors import InputError, LlampError, tidy
from llamp.lp.jit import THREAD_NAME


def main(argv: list[str] | None = None) -> None:
    """Console entry point with the exit-code contract of docs/architecture.md §CLI.

    Called as the process's entry point (``argv`` None: the ``llamp`` script, ``python -m
    llamp``), it ends the process with :func:`_exit_now` when that is safe, skipping the
    interpreter's teardown."""
    if argv is None:
        prepare_process()
    code = _run(argv)
    if argv is None and _may_exit_now():
        _exit_now(code)
    sys.exit(code)


def prepare_process() -> None:
    """What the ``llamp`` entry point sets up before its command: glibc keeps and reuses freed
    memory (:func:`_keep_freed_memory`), numpy is loaded with one BLAS thread and without huge
    pages (:func:`_load_numpy`). A benchmark that times llamp's functions in a process of its
    own calls it first, to measure what a ``llamp`` process does."""
    _keep_freed_memory()
    _load_numpy()


def __getattr__(name: str) -> Any:
    """``cli`` (the root group) and ``message``, from :mod:`llamp.cli.base` on first use: the
    entry point imports it after :func:`_load_numpy`. Each subcommand's module is imported
    by the root group when that command runs (:data:`llamp.cli.base.COMMANDS`)."""
    if name in ("cli", "message"):
        from llamp.cli import base

        return getattr(base, name)
    raise AttributeError(f"module 'llamp.cli' has no attribute {name!r}")


def _run(argv: list[str] | None) -> int:
    """The command's exit code; every failure becomes one line on stderr."""
    from llamp.cli.base import cli, message

    try:
        code = cli.main(args=argv, standalone_mode=False, prog_name="llamp")
    except click.exceptions.Abort:
        message("error", "aborted")
        return 1
    except _NO_ARGS_IS_HELP as err:  # ``llamp`` or ``llamp runs`` alone: the help, as before
        err.show()
        return 2
    except click.UsageError as err:
        hint = f" ({err.ctx.command_path} -h for help)" if err.ctx is not None else ""
        message("error", err.format_message() + hint)
        return 2
    except click.ClickException as err:
        message("error", err.format_message())
        return 2
    except InputError as err:
        message("error", err)
        return 2
    except LlampError as err:
        message("error", err)
        return 1
    except KeyboardInterrupt:
        message("error", "interrupted")
        return 1
    except OSError as err:  # a path the user gave: missing directory, no permission, disk full
        where = f"{err.filename}: " if err.filename else ""
        message("error", where + (err.strerror or str(err)))
        return 2
    except MemoryError:
        message("error", "out of memory: the input is too large for this machine")
        return 1
    except Exception as err:  # noqa: BLE001 - the contract: a line, never a traceback
        if os.environ.get("LLAMP_DEBUG"):
            raise
        message(
            "error",
            f"internal error: {type(err).__name__}: {_shown(err)}. This is a bug in llamp, not "
            f"in your input: please report it ({REPORT_TO}) with the command line; "
            "LLAMP_DEBUG=1 shows the traceback.",
        )
        return 1
    return code if isinstance(code, int) else 0


#: glibc ``mallopt`` settings of a ``llamp`` process (``M_TOP_PAD``, ``M_TRIM_THRESHOLD``,
#: ``M_MMAP_THRESHOLD``: 32 MB is the largest glibc accepts).
_MALLOPT = ((-2, 64 << 20), (-1, 256 << 20), (-3, 32 << 20))


def _keep_freed_memory() -> None:
    """Let glibc keep up to 256 MB of freed heap, grow it 64 MB at a time, and serve blocks
    up to 32 MB from it.

    A command allocates and frees arrays of a few MB to a few tens of MB over and over
    (columns, chunk buffers, kernel outputs); with glibc's defaults (128 KB) the heap is trimmed
    and grown back each time, and every page comes back as a fresh, zeroed page fault. Measured
    on ``llamp ingest`` of the 10^6-vertex stencil: 205,000 → 67,000 page faults, 0.1–0.3 s less
    system time, peak RSS +23 MB (375 → 398 MB). Setting either of those fixes glibc's
    threshold for blocks it maps on their own (and unmaps when freed) at 128 KB, where glibc
    would otherwise raise it as such blocks are freed: every array above 128 KB was fresh
    memory again. At 32 MB (glibc's upper limit) ``sweep`` of the 3·10^6-vertex stencil:
    1.13 → 0.87 s of system time, 3.13 → 2.85 s wall, peak RSS 1.20 → 1.34 GB (RESULTS.md,
    "The schedule pass's heap, and freed memory reused"). Only for the process's entry point, only where glibc is the C
    library (nothing happens elsewhere)."""
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return
    for option, value in _MALLOPT:
        mallopt(option, value)


#: Environment variables that set the thread count of numpy's OpenBLAS when it is loaded.
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
#: numpy's switch for ``madvise(MADV_HUGEPAGE)`` on its large arrays, read when it is loaded.
_HUGEPAGE = "NUMPY_MADVISE_HUGEPAGE"


def _load_numpy() -> None:
    """Load numpy with its OpenBLAS on one thread and without transparent huge pages for its
    arrays, each unless the user chose (set the variable to choose).

    - OpenBLAS starts its thread pool and their buffers when numpy is imported: 0.04–0.05 s of
      CPU per process here (2 cores; more with more cores), a third of what a ``predict`` of a
      small graph costs (``benchmarks/bench_startup.py``). llamp's passes are compiled kernels
      and sparse products, and its dense BLAS calls are matrix-vector products over a few
      columns, which do not gain from the pool.
    - numpy asks the kernel for huge pages on every large array. A large analysis touches most
      of its memory once (columns written once, read a few times), and on this machine (a
      virtual machine whose host backs memory a guest touches for the first time) a huge page
      costs about five times what its 512 small pages cost: a new 400 MB array touched once,
      1.21 s of system time with huge pages, 0.19 s without; ``sweep`` of the 3·10^6-vertex
      stencil 2.24 → 1.40 s of system time and 4.24 → 3.96 s wall, ``predict`` 3.92 → 3.24 s
      (``benchmarks/bench_hugepages.py``, RESULTS.md). ``NUMPY_MADVISE_HUGEPAGE=1`` restores
      them.

    The variables are set for numpy's import only and removed again, so programs llamp starts
    (``llamp inject -- mpirun ./app``) get the environment as the user gave it."""
    if "numpy" in sys.modules:
        return
    chosen = {}
    if not any(name in os.environ for name in _BLAS_THREADS):
        chosen["OPENBLAS_NUM_THREADS"] = "1"
    if _HUGEPAGE not in os.environ:
        chosen[_HUGEPAGE] = "0"
    os.environ.update(chosen)
    try:
        import numpy  # noqa: F401 - loaded now, with the settings above
    finally:
        for name in chosen:
            del os.environ[name]


#: Modules whose objects may still have something to write when they are destroyed (a store's
#: database handle, the UI server): once one is imported, the process exits the ordinary way.
_ORDINARY_EXIT = ("llamp.graphdb", "llamp.ui", "streamlit", "ladybug", "kuzu", "neo4j")


def _may_exit_now() -> bool:
    """True when nothing but numba's set-up thread (:mod:`llamp.lp.jit`) runs besides this
    one and no module of :data:`_ORDINARY_EXIT` is loaded."""
    if any(name in sys.modules for name in _ORDINARY_EXIT):
        return False
    main_thread = threading.main_thread()
    return all(t is main_thread or t.daemon or t.name == THREAD_NAME for t in threading.enumerate())


def _exit_now(code: int) -> None:
    """Run the ``atexit`` handlers, flush stdout and stderr, and end the process at once.

    The interpreter's own teardown (freeing every module and object, numba's and LLVM's among
    them) costs 0.15–0.5 s after a command that loaded numba (``benchmarks/bench_startup.py``,
    "exit" phase) and has nothing left to do here: files the commands write are closed when
    they return, and :func:`_may_exit_now` keeps the ordinary exit for stores and the UI. If
    flushing fails (a closed pipe), the ordinary exit reports it as before."""
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)


#: Raised by a group called without a command (click ≥ 8.2); its message is the whole help.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())

#: Where to report an internal error.
REPORT_TO = "the llamp issue tracker"


def _shown(err: BaseException | str) -> str:
    """One line: no password of a store URI, control characters escaped, long runs cut."""
    return tidy(redact(str(err))).replace("\n", " ")
