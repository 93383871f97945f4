"""llamp: network latency and bandwidth tolerance of MPI applications (LLAMP, Shen et al. SC'24).

The core model lives here (:class:`ExecutionGraph`, :class:`LogGPS`); the pipeline stages are
``llamp.ingest`` → ``llamp.lp`` → ``llamp.graphdb``, ``llamp.injector``, ``llamp.study`` →
``llamp.cli``, ``llamp.ui`` (imports flow one way: docs/architecture.md §Packages).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph
    from llamp.params import LogGPS

__version__ = "0.1.0"

#: Public name → module that defines it, imported on first use (PEP 562): importing a
#: submodule (``llamp.cli`` as the ``llamp`` command starts) does not import numpy through
#: this package.
_EXPORTS = {
    "CALC": "llamp.graph",
    "IREQUIRES": "llamp.graph",
    "MESSAGE": "llamp.graph",
    "RECV": "llamp.graph",
    "REQUIRES": "llamp.graph",
    "SEND": "llamp.graph",
    "ExecutionGraph": "llamp.graph",
    "LogGPS": "llamp.params",
}

__all__ = [
    "CALC",
    "IREQUIRES",
    "MESSAGE",
    "RECV",
    "REQUIRES",
    "SEND",
    "ExecutionGraph",
    "LogGPS",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'llamp' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
