"""Numba's one-time start-up, moved off the critical path of a command.

The first compiled function a process calls, even one loaded from numba's on-disk cache
(``cache=True``), makes numba set up its CPU target: ``BaseContext.refresh`` imports numba's
typing and lowering registries (and, through ``numba.np.arraymath``'s BLAS check,
``scipy.linalg``) and initialises its runtime. Measured here: 0.20–0.28 s on a quiet machine,
about a quarter of ``llamp predict`` on a 3·10^6-vertex graph (``benchmarks/bench_startup.py``).
Loading a cached kernel after that takes 2–15 ms.

A command that will call a kernel starts that set-up in a background thread first
(:func:`start`); the main thread meanwhile parses its options and reads the graph file, whose
CRC checks and numpy passes release the GIL (:class:`llamp.graph.NpzMembers`), so on two cores
the set-up costs little wall time. The set-up holds numba's compiler lock, which every kernel
load takes too: a kernel called before the set-up is done waits for it, never sees it half done.
The thread imports numba modules only (never an ``llamp`` module), so it cannot deadlock with
the main thread's imports.
"""

from __future__ import annotations

import threading

#: Name of the set-up thread (the CLI's fast exit does not wait for it: it only loads code).
THREAD_NAME = "llamp-numba-setup"

_lock = threading.Lock()
_thread: threading.Thread | None = None


def prepare() -> None:
    """Set numba's CPU target up now (what the first cached-kernel load of a process does)."""
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    # The target context (and with it the typing context) first, outside the compiler lock:
    # numba creates it under a lock of its own and takes the compiler lock inside that (as a
    # thread defining a kernel does), so taking the compiler lock first and then waiting for
    # the context would deadlock with such a thread.
    target = cpu_target.target_context
    with global_compiler_lock:
        _import_arraymath()
        target.refresh()


def _import_arraymath() -> None:
    """Import ``numba.np.arraymath`` without its BLAS probe importing ``scipy.linalg``.

    At import, ``numba.np.arraymath`` sets ``_HAVE_BLAS`` by calling ``ensure_blas()``, which
    imports ``scipy.linalg.cython_blas`` and with it all of ``scipy.linalg`` (0.12–0.14 s here,
    half of numba's set-up; llamp's kernels use no BLAS). scipy is a dependency of llamp, so the
    answer is known: while arraymath is imported, ``ensure_blas`` answers "present" when scipy
    can be found, and the real function is put back at once. A kernel that does use BLAS later
    calls the real ``ensure_blas`` (numba calls it when it types ``np.dot`` and the like), which
    imports scipy and checks its integer width then. Skipped when arraymath is already
    imported or numba no longer has ``ensure_blas``.
    """
    import importlib.util
    import sys

    if "numba.np.arraymath" in sys.modules:
        return
    from numba.np import linalg

    real = getattr(linalg, "ensure_blas", None)
    if real is None or importlib.util.find_spec("scipy") is None:
        return
    linalg.ensure_blas = _blas_present
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        linalg.ensure_blas = real


def _blas_present() -> None:
    """``ensure_blas`` for the import of ``numba.np.arraymath`` only (scipy is installed)."""


def start() -> threading.Thread:
    """:func:`prepare` in a background thread (once per process); the thread is returned.

    Not a daemon: the interpreter waits for it at exit rather than stopping it in the middle of
    an import. A failure is left for the first kernel call, which does the same set-up and
    reports it as an error of the command."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_quietly, name=THREAD_NAME)
            _thread.start()
        return _thread


def _quietly() -> None:
    try:
        prepare()
    except Exception:  # noqa: BLE001, S110 - the main thread's first kernel call reports it
        pass
