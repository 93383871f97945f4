"""The graph engine: exact longest paths of the event graph (DESIGN §3.2).

``T(θ)`` is the longest path of the event DAG whose edge weights are affine in θ = (L, G, o).
One forward sweep over events in topological position (numba over CSR, no Python loop per
vertex) gives every event time and, breaking ties toward the larger slope, the exact right
derivatives ∂T/∂L, ∂T/∂G, ∂T/∂o (toward the smaller slope: the left derivatives). A backward
sweep gives the latest time of every event that keeps ``T``, hence slack.

``T`` is convex and piecewise linear in each parameter (a max of affine path lengths, LLAMP
Eq. 3/4), which the analyses in :mod:`llamp.lp.analyses` exploit.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numba
import numpy as np

from llamp.graph import ExecutionGraph
from llamp.lp.events import COEF_G, COEF_L, COEF_O, EventGraph, build_event_graph
from llamp.params import LogGPS

#: Two path lengths within ``REL_TOL·|t| + ABS_TOL_NS`` of each other are a tie (float noise).
REL_TOL = 1e-12
ABS_TOL_NS = 1e-7

#: Parameter name → column of the event-graph coefficients.
DIRECTIONS = {"L": COEF_L, "G": COEF_G, "o": COEF_O}


@numba.njit(cache=True, nogil=True)
def _forward_value(in_ptr, src, w):  # pragma: no cover - compiled
    n = in_ptr.shape[0] - 1
    t = np.zeros(n)
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if lo == hi:
            continue
        best = t[src[lo]] + w[lo]
        for k in range(lo + 1, hi):
            cand = t[src[k]] + w[k]
            if cand > best:
                best = cand
        t[p] = best
    return t


@numba.njit(cache=True, nogil=True)
def _forward_slopes(in_ptr, src, w, dcoef, sign, rel, absol):  # pragma: no cover - compiled
    """Times, one-sided slopes (sign +1: right derivative, −1: left) and the chosen in-edge."""
    n = in_ptr.shape[0] - 1
    k_dim = dcoef.shape[1]
    t = np.zeros(n)
    d = np.zeros((n, k_dim))
    pred = np.full(n, -1, dtype=np.int64)
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if lo == hi:
            continue
        best = t[src[lo]] + w[lo]
        for k in range(lo + 1, hi):
            cand = t[src[k]] + w[k]
            if cand > best:
                best = cand
        t[p] = best
        tol = rel * abs(best) + absol
        first = True
        for k in range(lo, hi):
            s = src[k]
            if t[s] + w[k] >= best - tol:
                if first:
                    for j in range(k_dim):
                        d[p, j] = d[s, j] + dcoef[k, j]
                    pred[p] = k
                    first = False
                else:
                    lead = d[s, 0] + dcoef[k, 0]
                    if sign * lead > sign * d[p, 0]:
                        pred[p] = k
                    for j in range(k_dim):
                        cand = d[s, j] + dcoef[k, j]
                        if sign * cand > sign * d[p, j]:
                            d[p, j] = cand
    return t, d, pred


@numba.njit(cache=True, nogil=True)
def _backward_late(out_ptr, out_edge, dst, w, t, T):  # pragma: no cover - compiled
    """Latest time of every event such that no path exceeds ``T``."""
    n = out_ptr.shape[0] - 1
    late = np.empty(n)
    for p in range(n - 1, -1, -1):
        lo = out_ptr[p]
        hi = out_ptr[p + 1]
        if lo == hi:
            late[p] = T
            continue
        k = out_edge[lo]
        best = late[dst[k]] - w[k]
        for i in range(lo + 1, hi):
            k = out_edge[i]
            cand = late[dst[k]] - w[k]
            if cand < best:
                best = cand
        late[p] = best
    return late


@dataclass(frozen=True)
class Point:
    """``T`` and its one-sided derivatives at one configuration (graph engine)."""

    params: LogGPS
    runtime_ns: float
    right: dict[str, float]
    left: dict[str, float]


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Runtime, sensitivities and per-vertex schedule of one configuration.

    ``lambda_*`` are exact right derivatives (``λ_L = ∂T/∂L⁺``: messages on the critical path,
    a rendezvous message counting 3; ``λ_G``: bytes−1 summed over them; ``λ_o``: overheads on
    it). ``rho_L = L·λ_L/T``. Per vertex: earliest start/finish, slack (how much its start or
    finish, whichever is tighter, may slip without delaying ``T``) and ``critical`` (slack ≈ 0:
    the vertex is on some critical path).
    """

    params: LogGPS
    runtime_ns: float
    lambda_L: float
    lambda_G: float
    lambda_o: float
    rho_L: float
    start_ns: np.ndarray
    finish_ns: np.ndarray
    slack_ns: np.ndarray
    critical: np.ndarray
    engine: str = "graph"


class GraphEngine:
    """Evaluates one execution graph at many configurations (one lowering per threshold S)."""

    def __init__(self, graph: ExecutionGraph):
        self.graph = graph
        self._events: dict[int, EventGraph] = {}

    def events(self, S: int) -> EventGraph:
        """The event graph for threshold ``S`` (cached; only the rendezvous set depends on S)."""
        sizes = self.graph.size[self.graph.messages()[0]]
        key = int(np.count_nonzero(sizes > S))  # same rendezvous set ⇔ same count (monotone)
        cached = self._events.get(key)
        if cached is None:
            cached = build_event_graph(self.graph, S)
            self._events[key] = cached
        return cached

    # ------------------------------------------------------------------ evaluations
    def runtime(self, params: LogGPS) -> float:
        """``T(θ)`` only: the cheapest pass."""
        ev = self.events(params.S)
        if ev.num_events == 0:
            return 0.0
        t = _forward_value(ev.in_ptr, ev.src, ev.weights(params.L, params.G, params.o))
        return float(t.max())

    def point(self, params: LogGPS, directions: tuple[str, ...] = ("L", "G", "o")) -> Point:
        """``T`` and its right and left derivatives along ``directions`` at θ."""
        ev = self.events(params.S)
        if ev.num_events == 0:
            zero = dict.fromkeys(directions, 0.0)
            return Point(params, 0.0, zero, dict(zero))
        w = ev.weights(params.L, params.G, params.o)
        cols = [DIRECTIONS[d] for d in directions]
        dcoef = np.ascontiguousarray(ev.coef[:, cols])
        sides = {}
        T = 0.0
        for sign in (1.0, -1.0):
            t, d, _ = _forward_slopes(ev.in_ptr, ev.src, w, dcoef, sign, REL_TOL, ABS_TOL_NS)
            T = float(t.max())
            tight = t >= T - (REL_TOL * abs(T) + ABS_TOL_NS)
            agg = d[tight].max(axis=0) if sign > 0 else d[tight].min(axis=0)
            sides[sign] = {name: float(np.round(agg[i], 6)) for i, name in enumerate(directions)}
        return Point(params, T, sides[1.0], sides[-1.0])

    def evaluate(self, params: LogGPS) -> Evaluation:
        """Full evaluation: T, right derivatives, per-vertex schedule and slack."""
        ev = self.events(params.S)
        V = self.graph.num_vertices
        if ev.num_events == 0:
            empty = np.zeros(0)
            return Evaluation(params, 0.0, 0.0, 0.0, 0.0, 0.0, empty, empty, empty,
                              np.zeros(0, dtype=bool))
        w = ev.weights(params.L, params.G, params.o)
        dcoef = np.ascontiguousarray(ev.coef[:, [COEF_L, COEF_G, COEF_O]])
        t, d, _ = _forward_slopes(ev.in_ptr, ev.src, w, dcoef, 1.0, REL_TOL, ABS_TOL_NS)
        T = float(t.max())
        tol = REL_TOL * abs(T) + ABS_TOL_NS
        lam = np.round(d[t >= T - tol].max(axis=0), 6)
        late = _backward_late(ev.out_ptr, ev.out_edge, ev.dst, w, t, T)
        start = t[ev.start_pos()]
        finish = t[ev.finish_pos()]
        slack = np.maximum(
            np.minimum(late[ev.start_pos()] - start, late[ev.finish_pos()] - finish), 0.0
        )
        critical = slack <= tol
        return Evaluation(
            params=params,
            runtime_ns=T,
            lambda_L=float(lam[0]),
            lambda_G=float(lam[1]),
            lambda_o=float(lam[2]),
            rho_L=params.L * float(lam[0]) / T if T > 0 else 0.0,
            start_ns=start,
            finish_ns=finish,
            slack_ns=slack,
            critical=critical,
        )

    def critical_events(self, params: LogGPS) -> tuple[EventGraph, np.ndarray, np.ndarray, np.ndarray]:
        """One critical path as event positions (source → sink) and the edges taken.

        Ties are broken toward the larger latency slope, so the path is the one whose message
        count is ``λ_L`` (the right derivative). Returns (event graph, positions, edges, weights).
        """
        ev = self.events(params.S)
        w = ev.weights(params.L, params.G, params.o)
        dcoef = np.ascontiguousarray(ev.coef[:, [COEF_L, COEF_G, COEF_O]])
        t, d, pred = _forward_slopes(ev.in_ptr, ev.src, w, dcoef, 1.0, REL_TOL, ABS_TOL_NS)
        if t.size == 0:
            return ev, np.zeros(0, np.int64), np.zeros(0, np.int64), w
        T = float(t.max())
        tight = np.flatnonzero(t >= T - (REL_TOL * abs(T) + ABS_TOL_NS))
        sink = int(tight[np.argmax(d[tight, 0])])
        positions = [sink]
        edges = []
        while pred[positions[-1]] >= 0:
            k = int(pred[positions[-1]])
            edges.append(k)
            positions.append(int(ev.src[k]))
        return ev, np.array(positions[::-1], dtype=np.int64), np.array(edges[::-1], dtype=np.int64), w


_ENGINES: weakref.WeakKeyDictionary[ExecutionGraph, GraphEngine] = weakref.WeakKeyDictionary()


def engine_for(graph: ExecutionGraph) -> GraphEngine:
    """The (cached) graph engine of ``graph``: lowering is done once per graph and S."""
    engine = _ENGINES.get(graph)
    if engine is None:
        engine = GraphEngine(graph)
        _ENGINES[graph] = engine
    return engine
