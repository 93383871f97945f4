"""Compiled kernels: machine code built by ``pip install``, numba's JIT as the fallback.

Every numba loop of the distribution is declared with :func:`kernel` next to its body, with
the argument types it is exported for (``"i8[::1], f8[:, ::1], f8"``: numba's type names,
``[::1]`` a C-contiguous dimension, ``[:]`` any strides). The install compiles every declared
signature of every kernel into one extension module, ``llamp._kernels``
(:mod:`llamp.kernel_build`, with numba's ahead-of-time compiler); at run time a call whose
arguments match a declared signature runs that machine code, and neither numba nor LLVM is
imported. Measured with ``benchmarks/bench_startup.py``: importing numba and setting its CPU
target up cost 0.3–0.5 s per process, loading the extension under 1 ms.

The extension records a digest of the sources it was built from (every ``llamp`` module its
kernel modules load: their constants are compiled in). The first kernel call of a process
compares it with the files on disk; an edited checkout, a missing or foreign extension, or
``LLAMP_KERNELS=jit`` (:func:`llamp.config.kernels_mode`) give numba's JIT for every kernel,
as does a call whose argument types no declared signature matches (a new dtype, a numba typed
container, keyword arguments). JIT kernels are created on their first call, so a process
that calls none never imports numba. Both paths run the same Python source through the same
compiler, so their results are identical (``tests/test_kernel_aot.py``).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import numpy as np

#: Modules whose kernels are compiled ahead of time (what :mod:`llamp.kernel_build` imports):
#: what an analysis of a saved graph calls (the checks of its columns on load, the lowering
#: to the event graph, the longest-path family, the schedule pass) and what ``ingest`` of a
#: GOAL file calls (its tokenizer). The kernels of other modules (the other trace readers,
#: the what-if analyses, checksums) run under the JIT, loaded from numba's cache.
MODULES = (
    "llamp.checks",
    "llamp.ingest.goal_tokenizer",
    "llamp.lp.event_graph",
    "llamp.lp.kernels",
    "llamp.lp.schedule",
)
#: Name of the extension module the install builds.
EXTENSION = "llamp._kernels"

_registry: dict[str, Kernel] = {}
_state_lock = threading.Lock()
_compiled: dict[str, list[tuple[str, str]]] | None = None


class Kernel:
    """A numba kernel: the compiled export matching the arguments, else numba's JIT."""

    def __init__(self, func: Callable, signatures: tuple[str, ...], options: dict[str, Any]):
        functools.update_wrapper(self, func)
        self.py_func = func
        self.signatures = signatures
        self.options = options
        self.key = f"{func.__module__}.{func.__qualname__}"
        self._exports: list[tuple[tuple, Callable]] | None = None
        self._jit: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<kernel {self.key}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        exports = self._exports
        if exports is None:
            exports = self._bind()
        if exports and not kwargs:
            full = args
            defaults = self.py_func.__defaults__
            missing = self.py_func.__code__.co_argcount - len(args)
            if defaults and 0 < missing <= len(defaults):
                full = args + defaults[len(defaults) - missing :]
            for specs, fn in exports:
                if len(specs) == len(full) and all(map(_matches, specs, full)):
                    return fn(*full)
        return self.dispatcher()(*args, **kwargs)

    def _bind(self) -> list[tuple[tuple, Callable]]:
        """The compiled exports of this kernel (none under the JIT), looked up once."""
        table = _extension_table()
        exports = []
        if table:
            module = sys.modules.get(EXTENSION)
            for name, signature in table.get(self.key, ()):
                exports.append((parse_signature(signature), getattr(module, name)))
        self._exports = exports
        return exports

    def dispatcher(self) -> Any:
        """numba's JIT dispatcher of this kernel (created, and numba imported, on first use).

        The kernels it calls are module globals holding :class:`Kernel` objects, which numba
        cannot type: the function is rebuilt over a copy of its globals in which each of them
        is its own dispatcher (numba freezes globals at compilation anyway)."""
        if self._jit is None:
            with self._lock:
                if self._jit is None:
                    import numba

                    options = {"cache": os.environ.get("LLAMP_KERNEL_BUILD") is None}
                    options.update(self.options)
                    self._jit = numba.njit(**options)(self.rebound())
        return self._jit

    def rebound(self) -> Callable:
        """:attr:`py_func` over globals in which every :class:`Kernel` is its dispatcher."""
        f = self.py_func
        scope = dict(f.__globals__)
        for name in f.__code__.co_names:
            value = scope.get(name)
            if isinstance(value, Kernel):
                scope[name] = value.dispatcher()
        g = types.FunctionType(f.__code__, scope, f.__name__, f.__defaults__, f.__closure__)
        g.__qualname__ = f.__qualname__
        g.__module__ = f.__module__
        g.__doc__ = f.__doc__
        g.__kwdefaults__ = f.__kwdefaults__
        return g


def kernel(*signatures: str, **options: Any) -> Callable[[Callable], Kernel]:
    """Declare a numba kernel (options as :func:`numba.njit`'s; ``cache=True`` is implied) and
    the argument types it is compiled for ahead of time (none: JIT only, e.g. a helper inlined
    into other kernels)."""

    def wrap(func: Callable) -> Kernel:
        k = Kernel(func, tuple(signatures), dict(options))
        _registry[k.key] = k
        return k

    return wrap


def registered() -> dict[str, Kernel]:
    """Every kernel declared so far (by ``module.qualname``)."""
    return dict(_registry)


# ------------------------------------------------------------------------------- signatures
@functools.cache
def parse_signature(text: str) -> tuple[tuple[np.dtype, int, bool], ...]:
    """``"i8[::1], f8[:, :], b1"`` → ``((int64, 1, True), (float64, 2, False), (bool, 0, False))``:
    dtype, number of dimensions (0: a scalar) and whether C-contiguity is required."""
    specs = []
    for token in _split(text):
        if "[" in token:
            head, _, dims = token.partition("[")
            parts = [d.strip() for d in dims.rstrip("]").split(",")]
            specs.append((np.dtype(head.strip()), len(parts), parts[-1] == "::1"))
        else:
            specs.append((np.dtype(token), 0, False))
    return tuple(specs)


def _split(text: str) -> list[str]:
    tokens, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            tokens.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        tokens.append(tail)
    return tokens


def _matches(spec: tuple[np.dtype, int, bool], value: Any) -> bool:
    """Whether numba's JIT would type ``value`` as ``spec`` (the compiled code reads its bytes
    without checking, so this check is what keeps a wrong dtype out of it)."""
    dtype, ndim, contiguous = spec
    if ndim:
        return (
            isinstance(value, np.ndarray)
            and value.dtype == dtype
            and value.ndim == ndim
            and (not contiguous or value.flags.c_contiguous)
        )
    if isinstance(value, np.generic):
        return value.dtype == dtype
    kind = dtype.kind
    if isinstance(value, bool):
        return kind == "b"
    if isinstance(value, int):
        return dtype == np.int64
    if isinstance(value, float):
        return dtype == np.float64
    return False


# -------------------------------------------------------------------------------- extension
def _extension_table() -> dict[str, list[tuple[str, str]]]:
    """``kernel key → [(export name, signature)]`` of ``llamp._kernels`` when it is present,
    built from these sources and not switched off; else empty (every kernel under the JIT)."""
    global _compiled
    if _compiled is None:
        with _state_lock:
            if _compiled is None:
                _compiled = _load_extension()
    return _compiled


def _load_extension() -> dict[str, list[tuple[str, str]]]:
    import json

    from llamp.config import kernels_mode

    if kernels_mode() == "jit":
        return {}
    try:
        extension = importlib.import_module(EXTENSION)
    except ImportError:
        return {}
    manifest = json.loads(extension.manifest())
    if manifest.get("digest") != source_digest(manifest.get("files", [])):
        return {}
    return {key: [tuple(e) for e in entries] for key, entries in manifest["kernels"].items()}


def source_digest(modules: list[str]) -> str:
    """BLAKE2 digest of the source files of ``modules`` (names), found without importing them."""
    import hashlib
    import importlib.util
    from pathlib import Path

    h = hashlib.blake2b(digest_size=16)
    for name in sorted(modules):
        parent, _, leaf = name.rpartition(".")
        spec = importlib.util.find_spec(parent) if parent else None
        if spec is None or not spec.submodule_search_locations:
            return ""
        path = Path(list(spec.submodule_search_locations)[0]) / f"{leaf}.py"
        if not path.is_file():
            path = path.with_suffix("") / "__init__.py"
        try:
            data = path.read_bytes()
        except OSError:
            return ""
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def compiled_kernels() -> list[str]:
    """Keys of the kernels that run compiled code in this process (empty under the JIT)."""
    return sorted(_extension_table())
