"""Analyses of execution graphs under LogGPS (docs/analyses.md): two engines, one semantics.

``evaluate``/``predict``/``sweep``/``critical_latencies``/``tolerance``/``critical_path`` take
an :class:`~llamp.graph.ExecutionGraph` and a :class:`~llamp.params.LogGPS` configuration and
return typed results. The graph engine (:mod:`llamp.lp.engine`) is exact and fast; the LP
engine (:mod:`llamp.lp.model`, OR-Tools GLOP/HiGHS) is the paper's Algorithm 1.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, imported on first use (a CLI process imports one analysis)
    from llamp.graph import ExecutionGraph
    from llamp.lp.engine import Evaluation
    from llamp.params import LogGPS

#: The engines an analysis can run on (``--engine``): the exact graph engine, the LP through
#: GLOP or HiGHS, or ``auto``. Here, not in :mod:`llamp.lp.predict`, so that parsing a command's
#: options imports nothing compiled (numba's set-up meanwhile runs in the background while the
#: graph file is read: :mod:`llamp.lp.jit`).
ENGINES = ("auto", "graph", "glop", "highs")

#: Public name → module that defines it (PEP 562: ``llamp.lp.X`` imports only X's module, so
#: ``predict`` does not import OR-Tools, pandas or the what-if analyses).
_EXPORTS = {
    "classify": "classify",
    "compare_collectives": "collectives_whatif",
    "estimate_whatif": "collectives_whatif",
    "variant_curves": "collectives_whatif",
    "CriticalLatencies": "critical",
    "Segment": "critical",
    "critical_latencies": "critical",
    "Evaluation": "engine",
    "GraphEngine": "engine",
    "engine_for": "engine",
    "pair_sensitivity": "matrix",
    "CriticalPath": "path",
    "critical_path": "path",
    "rank_time_split": "path",
    "StreamSplit": "path",
    "place": "placement",
    "Region": "region",
    "tolerance_region": "region",
    "Prediction": "predict",
    "predict": "predict",
    "sweep": "predict",
    "Tolerance": "tolerance",
    "ToleranceLevel": "tolerance",
    "max_parameter_within": "tolerance",
    "tolerance": "tolerance",
    "analyze_topology": "topology",
    "compare_topologies": "topology",
    "sweep_topologies": "topology",
    "monte_carlo": "variability",
}


class _Package(types.ModuleType):
    """``import llamp.lp.predict`` makes the import system set ``llamp.lp.predict`` to the
    submodule; the function of the same name (``predict``, ``tolerance``, ``classify``) must
    stay the package's attribute, as it was when everything was imported eagerly."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == name:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'llamp.lp' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"llamp.lp.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


def evaluate(graph: ExecutionGraph, params: LogGPS) -> Evaluation:
    """Runtime, exact right derivatives, and per-vertex start/finish/slack/critical flags."""
    from llamp.lp.engine import engine_for

    return engine_for(graph).evaluate(params)


__all__ = [
    "CriticalLatencies",
    "CriticalPath",
    "Evaluation",
    "GraphEngine",
    "Prediction",
    "Region",
    "Segment",
    "StreamSplit",
    "Tolerance",
    "analyze_topology",
    "classify",
    "compare_collectives",
    "compare_topologies",
    "ToleranceLevel",
    "critical_latencies",
    "critical_path",
    "engine_for",
    "evaluate",
    "max_parameter_within",
    "monte_carlo",
    "pair_sensitivity",
    "place",
    "predict",
    "rank_time_split",
    "sweep",
    "sweep_topologies",
    "tolerance",
    "tolerance_region",
]
