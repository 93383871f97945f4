"""Cached analysis calls: the :mod:`llamp.lp` functions keyed on run and parameters.

Every function takes ``run`` (a string naming the store, the run and its identity, from
:func:`llamp.ui.store.cache_key`), the graph (not hashed: ``_graph``) and the parameters as
plain tuples, so changing a plot option reruns the page without recomputing an analysis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from llamp.graph import ExecutionGraph
from llamp.lp import (
    CriticalLatencies,
    CriticalPath,
    Evaluation,
    Prediction,
    Tolerance,
    critical_latencies,
    critical_path,
    evaluate,
    predict,
    rank_time_split,
    sweep,
    tolerance,
)
from llamp.params import LogGPS

#: (L ns, o ns, G ns/B, S bytes): a hashable LogGPS.
ParamKey = tuple[float, float, float, int]


def param_key(params: LogGPS) -> ParamKey:
    return (float(params.L), float(params.o), float(params.G), int(params.S))


def params_of(key: ParamKey) -> LogGPS:
    L, o, G, S = key
    return LogGPS(L=L, o=o, G=G, S=S)


@st.cache_data(max_entries=64, show_spinner=False)
def predict_at(run: str, _graph: ExecutionGraph, params: ParamKey) -> Prediction:
    """``T``, ``λ_L``, ``λ_G``, ``λ_o``, ``ρ_L`` at ``params``."""
    return predict(_graph, params_of(params))


@st.cache_data(max_entries=64, show_spinner=False)
def tolerance_at(
    run: str, _graph: ExecutionGraph, params: ParamKey, levels: tuple[float, ...]
) -> Tolerance:
    """x% L and G tolerance for each x in ``levels`` (fractions)."""
    return tolerance(_graph, params_of(params), levels)


@dataclass(frozen=True)
class LatencyCurve:
    """``T(L)`` over [lo, hi]: its exact breakpoints and a sweep that includes them."""

    critical: CriticalLatencies
    sweep: pd.DataFrame


@st.cache_data(max_entries=32, show_spinner=False)
def latency_curve(
    run: str,
    _graph: ExecutionGraph,
    params: ParamKey,
    lo: float,
    hi: float,
    points: int,
    extra: tuple[float, ...] = (),
) -> LatencyCurve:
    """Critical latencies in [lo, hi] and a sweep of ``points`` evenly spaced values of L plus
    every critical latency and each of ``extra`` in the range (so the plotted polyline of the
    piecewise-linear ``T(L)`` is exact)."""
    p = params_of(params)
    crit = critical_latencies(_graph, p, lo, hi)
    values = np.concatenate(
        [np.linspace(lo, hi, points), np.asarray(crit.critical, float), np.asarray(extra, float)]
    )
    values = np.unique(values[(values >= lo) & (values <= hi)])
    return LatencyCurve(critical=crit, sweep=sweep(_graph, p, values))


@st.cache_data(max_entries=16, show_spinner=False)
def schedule(run: str, _graph: ExecutionGraph, params: ParamKey) -> Evaluation:
    """Per-vertex start/finish/slack/critical at ``params``."""
    return evaluate(_graph, params_of(params))


@st.cache_data(max_entries=16, show_spinner=False)
def path_at(run: str, _graph: ExecutionGraph, params: ParamKey) -> CriticalPath:
    """The critical path and its per-rank split at ``params``."""
    return critical_path(_graph, params_of(params))


@st.cache_data(max_entries=16, show_spinner=False)
def time_split(run: str, _graph: ExecutionGraph, params: ParamKey) -> pd.DataFrame:
    """Each rank's compute/overhead/blocked split (:func:`llamp.lp.rank_time_split`)."""
    return rank_time_split(_graph, schedule(run, _graph, params))


def auto_range(tol: Tolerance, L0: float) -> tuple[float, float]:
    """[0, 1.25 × the largest L tolerance] (at least 2·L0 and L0 + 10 µs), so every tolerance
    zone is on the plot; L0 + 100 µs if no L tolerance is finite (no message on any path)."""
    finite = [t.value for t in tol.latency if math.isfinite(t.value)]
    if not finite:
        return 0.0, L0 + 100_000.0
    return 0.0, max(1.25 * max(finite), 2.0 * L0, L0 + 10_000.0)
