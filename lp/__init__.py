"""Analyses of execution graphs under LogGPS (DESIGN §5): two engines, one semantics.

``evaluate``/``predict``/``sweep``/``critical_latencies``/``tolerance``/``critical_path`` take
an :class:`~llamp.graph.ExecutionGraph` and a :class:`~llamp.params.LogGPS` configuration and
return typed results. The graph engine (:mod:`llamp.lp.engine`) is exact and fast; the LP
engine (:mod:`llamp.lp.model`, OR-Tools GLOP/HiGHS) is the paper's Algorithm 1.
"""

from llamp.graph import ExecutionGraph
from llamp.lp.classify import classify
from llamp.lp.collectives_whatif import compare_collectives
from llamp.lp.critical import CriticalLatencies, Segment, critical_latencies
from llamp.lp.engine import Evaluation, GraphEngine, engine_for
from llamp.lp.matrix import pair_sensitivity
from llamp.lp.path import CriticalPath, critical_path, rank_time_split
from llamp.lp.placement import place
from llamp.lp.predict import Prediction, predict, sweep
from llamp.lp.region import Region, tolerance_region
from llamp.lp.tolerance import Tolerance, ToleranceLevel, max_parameter_within, tolerance
from llamp.lp.topology import analyze_topology, compare_topologies, sweep_topologies
from llamp.lp.variability import monte_carlo
from llamp.params import LogGPS


def evaluate(graph: ExecutionGraph, params: LogGPS) -> Evaluation:
    """Runtime, exact right derivatives, and per-vertex start/finish/slack/critical flags."""
    return engine_for(graph).evaluate(params)


__all__ = [
    "CriticalLatencies",
    "CriticalPath",
    "Evaluation",
    "GraphEngine",
    "Prediction",
    "Region",
    "Segment",
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
