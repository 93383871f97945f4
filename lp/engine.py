"""The graph engine: exact longest paths of the event graph (docs/architecture.md §Two engines).

``T(θ)`` is the longest path of the event DAG whose edge weights are affine in θ = (L, G, o).
One forward sweep over events in topological position (numba over CSR, no Python loop per
vertex) gives every event time and, breaking ties toward the larger slope, the exact right
derivatives ∂T/∂L, ∂T/∂G, ∂T/∂o (toward the smaller slope: the left derivatives). A backward
sweep gives the latest time of every event that keeps ``T``, hence slack.

``T`` is convex and piecewise linear in each parameter (a max of affine path lengths, LLAMP
Eq. 3/4), which the analyses in :mod:`llamp.lp.critical` and :mod:`llamp.lp.tolerance` exploit.
"""

from __future__ import annotations

import os
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from llamp.graph import ExecutionGraph
from llamp.lp.events import COEF_G, COEF_GAP, COEF_L, COEF_O, EventGraph, build_event_graph
from llamp.lp.lowered import lowering_key, persisted, rendezvous_count
from llamp.params import LogGPS

#: Two path lengths within ``REL_TOL·|t| + ABS_TOL_NS`` of each other are a tie (float noise).
REL_TOL = 1e-12
ABS_TOL_NS = 1e-7

#: Parameter name → column of the event-graph coefficients.
DIRECTIONS = {"L": COEF_L, "G": COEF_G, "o": COEF_O, "g": COEF_GAP}


@numba.njit(cache=True, nogil=True, inline="always")
def _latest(t, lo, hi, src, pattern, value, wa, wb):  # pragma: no cover - compiled
    """The latest arrival over in-edges ``lo:hi`` (``hi > lo``): max of ``t[src] + weight``,
    an edge weighing ``wa[pattern] + value·wb[pattern]`` — the step every sweep shares."""
    q = pattern[lo]
    best = t[src[lo]] + wa[q] + value[lo] * wb[q]
    for k in range(lo + 1, hi):
        q = pattern[k]
        cand = t[src[k]] + wa[q] + value[k] * wb[q]
        if cand > best:
            best = cand
    return best


@numba.njit(cache=True, nogil=True)
def _forward_value(in_ptr, src, pattern, value, wa, wb):  # pragma: no cover - compiled
    """Event times: edge ``k`` weighs ``wa[pattern[k]] + value[k]·wb[pattern[k]]``."""
    n = in_ptr.shape[0] - 1
    t = np.zeros(n)
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if lo == hi:
            continue
        best = _latest(t, lo, hi, src, pattern, value, wa, wb)
        t[p] = best
    return t


@numba.njit(cache=True, nogil=True)
def forward_slopes(
    in_ptr, src, pattern, value, wa, wb, sa, sb, sign, rel, absol
):  # pragma: no cover
    """Times, one-sided slopes along the columns of ``sa/sb`` (patterns × k: an edge's slope
    is ``sa[q, j] + value·sb[q, j]``; sign +1: right derivatives, −1: left) and the in-edge
    chosen at each event (tight, with the best slope along column 0)."""
    n = in_ptr.shape[0] - 1
    k_dim = sa.shape[1]
    t = np.zeros(n)
    d = np.zeros((n, k_dim))
    pred = np.full(n, -1, dtype=np.int64)
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if lo == hi:
            continue
        best = _latest(t, lo, hi, src, pattern, value, wa, wb)
        t[p] = best
        tol = rel * abs(best) + absol
        first = True
        for k in range(lo, hi):
            s = src[k]
            q = pattern[k]
            if t[s] + wa[q] + value[k] * wb[q] >= best - tol:
                v = value[k]
                if first:
                    for j in range(k_dim):
                        d[p, j] = d[s, j] + sa[q, j] + v * sb[q, j]
                    pred[p] = k
                    first = False
                else:
                    if sign * (d[s, 0] + sa[q, 0] + v * sb[q, 0]) > sign * d[p, 0]:
                        pred[p] = k
                    for j in range(k_dim):
                        cand = d[s, j] + sa[q, j] + v * sb[q, j]
                        if sign * cand > sign * d[p, j]:
                            d[p, j] = cand
    return t, d, pred


@numba.njit(cache=True, nogil=True)
def _forward_sided(
    in_ptr, src, pattern, value, wa, wb, sa, sb, sign, rel, absol
):  # pragma: no cover
    """``T`` and its one-sided derivatives along the columns of ``sa/sb`` (sign +1: right,
    −1: left), aggregated over the tight sinks here: the sweep of :func:`forward_slopes`
    without its predecessor array and without handing per-event arrays back (32 B per event
    for three directions, not 40 plus temporaries)."""
    n = in_ptr.shape[0] - 1
    k_dim = sa.shape[1]
    t = np.zeros(n)
    d = np.zeros((n, k_dim))
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if lo == hi:
            continue
        best = _latest(t, lo, hi, src, pattern, value, wa, wb)
        t[p] = best
        tol = rel * abs(best) + absol
        first = True
        for k in range(lo, hi):
            s = src[k]
            q = pattern[k]
            if t[s] + wa[q] + value[k] * wb[q] >= best - tol:
                v = value[k]
                for j in range(k_dim):
                    cand = d[s, j] + sa[q, j] + v * sb[q, j]
                    if first or sign * cand > sign * d[p, j]:
                        d[p, j] = cand
                first = False
    T = 0.0
    for p in range(n):
        if t[p] > T:
            T = t[p]
    tol = rel * abs(T) + absol
    agg = np.zeros(k_dim)
    seen = False
    for p in range(n):
        if t[p] >= T - tol:
            for j in range(k_dim):
                if not seen or sign * d[p, j] > sign * agg[j]:
                    agg[j] = d[p, j]
            seen = True
    return T, agg


@numba.njit(cache=True, nogil=True)
def _forward_pair(in_ptr, src, pattern, value, wa, wb, sa, sb, rel, absol):  # pragma: no cover
    """``T`` and its right and left derivative along one parameter (per-pattern slope
    ``sa[q] + value·sb[q]``) in one sweep."""
    n = in_ptr.shape[0] - 1
    t = np.zeros(n)
    dr = np.zeros(n)
    dl = np.zeros(n)
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if lo == hi:
            continue
        best = _latest(t, lo, hi, src, pattern, value, wa, wb)
        t[p] = best
        tol = rel * abs(best) + absol
        right = -np.inf
        left = np.inf
        for k in range(lo, hi):
            s = src[k]
            q = pattern[k]
            if t[s] + wa[q] + value[k] * wb[q] >= best - tol:
                c = sa[q] + value[k] * sb[q]
                if dr[s] + c > right:
                    right = dr[s] + c
                if dl[s] + c < left:
                    left = dl[s] + c
        dr[p] = right
        dl[p] = left
    T = t.max()
    tol = rel * abs(T) + absol
    right = -np.inf
    left = np.inf
    for p in range(n):
        if t[p] >= T - tol:
            if dr[p] > right:
                right = dr[p]
            if dl[p] < left:
                left = dl[p]
    return T, right, left


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


ALL_COLUMNS = np.array([COEF_L, COEF_G, COEF_O], dtype=np.int64)


def slopes_at(
    ev: EventGraph, params: LogGPS, columns: np.ndarray = ALL_COLUMNS, sign: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Event times, one-sided slopes along ``columns`` (right for ``sign`` 1, left for −1;
    default L, G, o) and the chosen in-edges at θ = ``params``."""
    wa, wb = ev.pattern_weights(params.L, params.G, params.o, params.g)
    return forward_slopes(
        ev.in_ptr,
        ev.src,
        ev.pattern,
        ev.value,
        wa,
        wb,
        np.ascontiguousarray(ev.fixed[:, columns]),
        np.ascontiguousarray(ev.scaled[:, columns]),
        sign,
        REL_TOL,
        ABS_TOL_NS,
    )


class GraphEngine:
    """Evaluates one execution graph at many configurations (one lowering per threshold S)."""

    def __init__(self, graph: ExecutionGraph):
        self.graph = graph
        self._events: dict[tuple[int, str, str], EventGraph] = {}

    def events(self, params: LogGPS) -> EventGraph:
        """The event graph for ``params``' threshold S, progress and NIC models (cached: the
        weights depend on L, G, o, g; the structure only on the rendezvous set and models).
        Taken from the graph's file when it was saved with one (:mod:`llamp.lp.lowered`)."""
        key = lowering_key(rendezvous_count(self.graph, params.S), params)
        cached = self._events.get(key)
        if cached is None:
            cached = persisted(self.graph, key)
        if cached is None:
            cached = build_event_graph(
                self.graph, params.S, progress=params.progress, nic=params.nic
            )
        self._events[key] = cached
        return cached

    # ------------------------------------------------------------------ evaluations
    def runtime(self, params: LogGPS) -> float:
        """``T(θ)`` only: the cheapest pass."""
        ev = self.events(params)
        if ev.num_events == 0:
            return 0.0
        wa, wb = ev.pattern_weights(params.L, params.G, params.o, params.g)
        t = _forward_value(ev.in_ptr, ev.src, ev.pattern, ev.value, wa, wb)
        return float(t.max())

    def point(
        self, params: LogGPS, directions: tuple[str, ...] = ("L", "G", "o"), *, left: bool = True
    ) -> Point:
        """``T`` and its right (and left) derivatives along ``directions`` at θ."""
        if len(directions) == 1:
            T, right, lft = self.probe_many(params, directions[0], [getattr(params, directions[0])])
            name = directions[0]
            return Point(params, float(T[0]), {name: float(right[0])}, {name: float(lft[0])})
        ev = self.events(params)
        if ev.num_events == 0:
            zero = dict.fromkeys(directions, 0.0)
            return Point(params, 0.0, zero, dict(zero))
        cols = np.array([DIRECTIONS[d] for d in directions], dtype=np.int64)
        wa, wb = ev.pattern_weights(params.L, params.G, params.o, params.g)
        sa = np.ascontiguousarray(ev.fixed[:, cols])
        sb = np.ascontiguousarray(ev.scaled[:, cols])
        sides = {}
        T = 0.0
        for sign in (1.0, -1.0) if left else (1.0,):
            T, agg = _forward_sided(
                ev.in_ptr, ev.src, ev.pattern, ev.value, wa, wb, sa, sb, sign, REL_TOL, ABS_TOL_NS
            )
            T = float(T)
            sides[sign] = {name: _round_slope(agg[i]) for i, name in enumerate(directions)}
        return Point(params, T, sides[1.0], sides.get(-1.0, {}))

    def points(
        self,
        configs: list[LogGPS],
        directions: tuple[str, ...] = ("L", "G", "o"),
        *,
        left: bool = True,
    ) -> list[Point]:
        """:meth:`point` at each configuration, spread over the machine's cores (the sweeps
        release the GIL; each thread holds one sweep's times and slopes, 32 B per event)."""
        for lowering in {(c.S, c.progress, c.nic): c for c in configs}.values():
            self.events(lowering)  # lower once, before the threads
        if len(configs) <= 1 or WORKERS == 1:
            return [self.point(c, directions, left=left) for c in configs]
        with ThreadPoolExecutor(max_workers=min(WORKERS, len(configs))) as pool:
            return list(pool.map(lambda c: self.point(c, directions, left=left), configs))

    def probe_many(
        self, params: LogGPS, parameter: str, values
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``T``, right and left slope along ``parameter`` at each of ``values`` (others fixed).

        The sweeps release the GIL, so values are spread over the machine's cores.
        """
        values = np.asarray(values, dtype=np.float64)
        ev = self.events(params)
        out = np.zeros((3, values.size))
        if ev.num_events == 0 or values.size == 0:
            return out[0], out[1], out[2]
        col = DIRECTIONS[parameter]
        sa = np.ascontiguousarray(ev.fixed[:, col])
        sb = np.ascontiguousarray(ev.scaled[:, col])

        def one(i: int) -> None:
            theta = {"L": params.L, "G": params.G, "o": params.o, "g": params.g}
            theta[parameter] = float(values[i])
            wa, wb = ev.pattern_weights(theta["L"], theta["G"], theta["o"], theta["g"])
            T, right, left = _forward_pair(
                ev.in_ptr, ev.src, ev.pattern, ev.value, wa, wb, sa, sb, REL_TOL, ABS_TOL_NS
            )
            out[:, i] = (T, _round_slope(right), _round_slope(left))

        if values.size == 1 or WORKERS == 1:
            for i in range(values.size):
                one(i)
        else:
            with ThreadPoolExecutor(max_workers=min(WORKERS, values.size)) as pool:
                list(pool.map(one, range(values.size)))
        return out[0], out[1], out[2]

    def evaluate(self, params: LogGPS) -> Evaluation:
        """Full evaluation: T, right derivatives, per-vertex schedule and slack."""
        ev = self.events(params)
        if ev.num_events == 0:
            empty = np.zeros(0)
            return Evaluation(
                params, 0.0, 0.0, 0.0, 0.0, 0.0, empty, empty, empty, np.zeros(0, dtype=bool)
            )
        t, d, _ = slopes_at(ev, params)
        T = float(t.max())
        tol = REL_TOL * abs(T) + ABS_TOL_NS
        lam = d[t >= T - tol].max(axis=0)
        w = ev.weights_at(params)
        late = _backward_late(ev.out_ptr, ev.out_edge, ev.dst, w, t, T)
        start = t[ev.start_pos()]
        finish = t[ev.finish_pos()]
        slack = np.maximum(
            np.minimum(late[ev.start_pos()] - start, late[ev.finish_pos()] - finish), 0.0
        )
        lambda_L = _round_slope(lam[0])
        return Evaluation(
            params=params,
            runtime_ns=T,
            lambda_L=lambda_L,
            lambda_G=_round_slope(lam[1]),
            lambda_o=_round_slope(lam[2]),
            rho_L=params.L * lambda_L / T if T > 0 else 0.0,
            start_ns=start,
            finish_ns=finish,
            slack_ns=slack,
            critical=slack <= tol,
        )

    def critical_events(
        self, params: LogGPS
    ) -> tuple[EventGraph, np.ndarray, np.ndarray, np.ndarray]:
        """One critical path as event positions (source → sink) and the edges taken.

        Ties are broken toward the larger latency slope, so the path is the one whose message
        count is ``λ_L`` (the right derivative). Returns (event graph, positions, edges, weights).
        """
        ev = self.events(params)
        w = ev.weights_at(params)
        if ev.num_events == 0:
            return ev, np.zeros(0, np.int64), np.zeros(0, np.int64), w
        t, d, pred = slopes_at(ev, params)
        T = float(t.max())
        tight = np.flatnonzero(t >= T - (REL_TOL * abs(T) + ABS_TOL_NS))
        sink = int(tight[np.argmax(d[tight, 0])])
        positions, edges = backtrack_path(pred, ev.src, sink)
        return ev, positions, edges, w


@numba.njit(cache=True)
def backtrack_path(pred, src, sink):  # pragma: no cover - compiled
    """Follow the chosen in-edges from ``sink`` back to a source; return both in path order."""
    length = 0
    p = sink
    while pred[p] >= 0:
        length += 1
        p = src[pred[p]]
    positions = np.empty(length + 1, dtype=np.int64)
    edges = np.empty(length, dtype=np.int64)
    p = sink
    for i in range(length, 0, -1):
        positions[i] = p
        edges[i - 1] = pred[p]
        p = src[pred[p]]
    positions[0] = p
    return positions, edges


#: Threads for independent sweeps: the cores this process may run on.
WORKERS = max(
    1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
)


def _round_slope(value: float) -> float:
    """Slopes are sums of integer coefficients: strip float noise (73.00000000000003 → 73)."""
    return float(np.round(value, 6))


_ENGINES: weakref.WeakKeyDictionary[ExecutionGraph, GraphEngine] = weakref.WeakKeyDictionary()


def engine_for(graph: ExecutionGraph) -> GraphEngine:
    """The (cached) graph engine of ``graph``: lowering is done once per graph and S."""
    engine = _ENGINES.get(graph)
    if engine is None:
        engine = GraphEngine(graph)
        _ENGINES[graph] = engine
    return engine
