"""llamp: network latency and bandwidth tolerance of MPI applications (LLAMP, Shen et al. SC'24).

The core model lives here (:class:`ExecutionGraph`, :class:`LogGPS`); the pipeline stages are
``llamp.ingest`` → ``llamp.lp`` → ``llamp.graphdb``, ``llamp.injector``, ``llamp.study`` →
``llamp.cli``, ``llamp.ui`` (imports flow one way: docs/architecture.md §Packages).
"""

from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.params import LogGPS

__version__ = "0.1.0"

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
