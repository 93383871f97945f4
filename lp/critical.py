"""Critical latencies in [a, b] (LLAMP §II-B and Algorithm 2), exact via tangent intersection.

``T(L)`` is convex and piecewise linear (a max of affine path lengths, LLAMP Eq. 3), so its
breakpoints — the critical latencies, where the critical path and ``λ_L`` change — are found
exactly from values and one-sided slopes: intersect the tangents at both ends of an interval;
if ``T`` touches the intersection, it is the interval's only breakpoint; otherwise split there
and recurse. With the graph engine this takes ``2k+1`` evaluations for ``k`` breakpoints.

The number of breakpoints grows with the trace: a noisy stencil has about one per iteration
(228 at 10^5 vertices, ~2,300 at 10^6, ~23,000 expected at 10^7, each evaluation then taking
~0.3 s), so the search takes an optional budget of evaluations. When it runs out, the intervals
not yet resolved are returned as such (``unresolved``: T and λ at both ends, at least one
critical value inside) and ``complete`` is false; the breakpoints found are exact either way.
:func:`evaluation_budget` sizes the budget to one or two minutes of sweeps on the benchmark
machine; waves are breadth first, so a spent budget leaves evenly refined intervals.

LP basis ranges (the paper's SALBLow) are not used: the LLAMP LP is highly degenerate and its
basis range is much narrower than a linear piece of ``T`` (docs/architecture.md §Two engines). The LP path uses the
same tangent walk with LP objective values and reduced costs (any subgradient works).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp.engine import ABS_TOL_NS, REL_TOL, engine_for
from llamp.lp.predict import PARAMETER_COLUMNS, resolve_engine
from llamp.params import LogGPS

#: (T, left slope, right slope) at each of several parameter values.
ProbeMany = Callable[[list[float]], tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Segment:
    """A linear piece of ``T`` over [start, end] with slope ``slope`` (λ_L for L)."""

    start: float
    end: float
    slope: float
    runtime_start_ns: float
    runtime_end_ns: float


@dataclass(frozen=True)
class Unresolved:
    """An interval [start, end] the search had no budget left to resolve: ``T`` is convex
    there, with slope ``slope_start`` right of ``start`` and ``slope_end`` left of ``end``
    (larger), so it holds at least one critical value."""

    start: float
    end: float
    slope_start: float
    slope_end: float
    runtime_start_ns: float
    runtime_end_ns: float


@dataclass(frozen=True)
class CriticalLatencies:
    """All breakpoints of ``T(parameter)`` in [lo, hi] and the linear pieces between them
    (with a budget: those found, and the intervals left unresolved)."""

    parameter: str
    lo: float
    hi: float
    critical: list[float]
    segments: list[Segment]
    evaluations: int
    engine: str
    params: LogGPS = field(repr=False)
    unresolved: list[Unresolved] = field(default_factory=list)
    max_evaluations: int | None = None

    @property
    def complete(self) -> bool:
        """True if every critical value in [lo, hi] was found."""
        return not self.unresolved

    def as_dict(self) -> dict[str, Any]:
        """The stable ``critical --json`` shape (``*_ns`` for L; G in ns/B)."""
        unit = "ns" if self.parameter in ("L", "o") else "ns_per_byte"
        slope = {"L": "lambda_L", "G": "lambda_G", "o": "lambda_o"}[self.parameter]
        key = "critical_latencies" if self.parameter == "L" else f"critical_{self.parameter}"
        return {
            "parameter": self.parameter,
            f"{key}_{unit}": self.critical,
            "segments": [
                {
                    f"from_{unit}": s.start,
                    f"to_{unit}": s.end,
                    slope: s.slope,
                    "runtime_from_ns": s.runtime_start_ns,
                    "runtime_to_ns": s.runtime_end_ns,
                }
                for s in self.segments
            ],
            "evaluations": self.evaluations,
            "max_evaluations": self.max_evaluations,
            "complete": self.complete,
            "unresolved": [
                {
                    f"from_{unit}": u.start,
                    f"to_{unit}": u.end,
                    f"{slope}_from": u.slope_start,
                    f"{slope}_to": u.slope_end,
                    "runtime_from_ns": u.runtime_start_ns,
                    "runtime_to_ns": u.runtime_end_ns,
                }
                for u in self.unresolved
            ],
            "engine": self.engine,
            "params": self.params.as_dict(),
        }


#: A breakpoint ``(x, T(x), slope left of x, slope right of x)``.
Point = tuple[float, float, float, float]
#: An open interval ``(x0, T(x0), slope right of x0, x1, T(x1), slope left of x1)``.
Interval = tuple[float, float, float, float, float, float]


def tangent_breakpoints(
    probe: ProbeMany, lo: float, hi: float, max_probes: int | None = None
) -> tuple[list[Point], list[Interval], int, Interval]:
    """Breakpoints of a convex piecewise-linear function on [lo, hi] by tangent intersection.

    Works in waves: the tangent intersections of all open intervals are probed together (one
    batched sweep of the graph engine). Returns the breakpoints sorted by x, the intervals
    left open when ``max_probes`` probes are spent (the widest are probed first; empty
    without a budget), the number of probes, and ``(lo, T(lo), slope right of lo, hi,
    T(hi), slope left of hi)``. Slopes are sums of integer coefficients (message counts,
    bytes), so slope comparisons are exact up to the rounding of the probe.
    """
    T, left, right = probe([lo, hi])
    calls = 2
    found: dict[float, Point] = {}
    unresolved: list[Interval] = []
    scale = max(abs(lo), abs(hi), 1.0)
    ends = (lo, float(T[0]), float(right[0]), hi, float(T[1]), float(left[1]))
    pending = [ends]
    while pending:
        work = []
        for x0, T0, s0, x1, T1, s1 in pending:
            if s1 - s0 <= 1e-9 * max(1.0, abs(s0), abs(s1)) or x1 - x0 <= 1e-12 * scale:
                continue
            x = (T1 - T0 + s0 * x0 - s1 * x1) / (s0 - s1)
            work.append((x0, T0, s0, x1, T1, s1, min(max(x, x0), x1)))
        if max_probes is not None and calls + len(work) > max_probes:
            work.sort(key=lambda w: w[3] - w[0], reverse=True)
            room = max(0, max_probes - calls)
            unresolved.extend(w[:6] for w in work[room:])
            work = work[:room]
        if not work:
            break
        Tx, sl, sr = probe([w[-1] for w in work])
        calls += len(work)
        pending = []
        for (x0, T0, s0, x1, T1, s1, x), Tv, a, b in zip(work, Tx, sl, sr, strict=True):
            tangent = T0 + s0 * (x - x0)
            tol = 10 * (REL_TOL * max(abs(Tv), 1.0) + ABS_TOL_NS)
            if Tv - tangent <= tol or x - x0 <= 1e-12 * scale or x1 - x <= 1e-12 * scale:
                found.setdefault(round(x, 9), (float(x), float(Tv), s0, s1))
                continue
            if b - a > 1e-9 * max(1.0, abs(a), abs(b)):
                # The probe itself sits on a breakpoint: it becomes an end of both halves,
                # where no further intersection can land, so record it now.
                found.setdefault(round(x, 9), (float(x), float(Tv), float(a), float(b)))
            pending.append((x0, T0, s0, x, float(Tv), float(a)))
            pending.append((x, float(Tv), float(b), x1, T1, s1))
    return sorted(found.values()), sorted(unresolved), calls, ends


def _pieces(
    lo: float, hi: float, ends: Interval, points: list[Point], open_: list[Interval]
) -> tuple[list[Segment], list[Unresolved]]:
    """The linear pieces of ``T`` between the breakpoints, around the unresolved intervals."""
    segments: list[Segment] = []
    unresolved: list[Unresolved] = []
    start, T_start = lo, ends[1]
    knots: list[tuple[float, int, tuple]] = [(p[0], 0, p) for p in points if lo < p[0] < hi]
    knots += [(iv[0], 1, iv) for iv in open_]
    for _, is_interval, knot in sorted(knots, key=lambda k: (k[0], k[1])):
        if is_interval:
            x0, T0, s0, x1, T1, s1 = knot
            if x0 > start:
                segments.append(Segment(start, x0, s0, T_start, T0))
            unresolved.append(Unresolved(x0, x1, s0, s1, T0, T1))
            start, T_start = x1, T1
        else:
            x, T, slope_left, _ = knot
            if x > start:
                segments.append(Segment(start, x, slope_left, T_start, T))
            start, T_start = x, T
    if hi > start:
        segments.append(Segment(start, hi, ends[5], T_start, ends[4]))
    return segments, unresolved


#: Edge visits (evaluations × event-graph edges) of an ``auto`` budget: one to two minutes of
#: batched sweeps on the 2-core benchmark machine (measured: 381 evaluations in 92 s on the
#: 10^7-vertex stencil, 3.2·10^7 event edges).
AUTO_EDGE_VISITS = 1.2e10
#: The smallest ``auto`` budget.
AUTO_MIN_EVALUATIONS = 101


def evaluation_budget(graph: ExecutionGraph, params: LogGPS) -> int:
    """An evaluation budget of one to two minutes for :func:`critical_latencies` on ``graph``:
    unlimited in practice up to ~10^5 vertices, ~4,000 at 10^6, ~400 at 10^7."""
    edges = max(engine_for(graph).events(params).num_edges, 1)
    return max(AUTO_MIN_EVALUATIONS, int(AUTO_EDGE_VISITS / edges))


def critical_latencies(
    graph: ExecutionGraph,
    params: LogGPS,
    lo: float,
    hi: float,
    *,
    parameter: str = "L",
    engine: str = "auto",
    max_evaluations: int | None = None,
) -> CriticalLatencies:
    """Every critical value of ``parameter`` (default L) in [lo, hi], with λ on each piece.

    ``max_evaluations`` bounds the search (at least 2; ``None``: find them all); see the
    module doc and :func:`evaluation_budget`.
    """
    if parameter not in PARAMETER_COLUMNS:
        raise InputError(f"cannot search critical values of {parameter!r}: choose L, G or o")
    if not 0.0 <= lo <= hi:
        raise InputError(f"interval [{lo}, {hi}] must satisfy 0 ≤ from ≤ to")
    if max_evaluations is not None and max_evaluations < 2:
        raise InputError(f"max_evaluations must be at least 2 (both ends), got {max_evaluations}")
    chosen = resolve_engine(engine)
    probe = _probe(graph, params, parameter, chosen)
    points, open_, calls, ends = tangent_breakpoints(probe, lo, hi, max_evaluations)
    inner = [p for p in points if lo < p[0] < hi]
    segments, unresolved = _pieces(lo, hi, ends, inner, open_)
    return CriticalLatencies(
        parameter=parameter,
        lo=lo,
        hi=hi,
        critical=[float(p[0]) for p in inner],
        segments=segments,
        evaluations=calls,
        engine=chosen,
        params=params,
        unresolved=unresolved,
        max_evaluations=max_evaluations,
    )


def _probe(graph: ExecutionGraph, params: LogGPS, parameter: str, engine: str) -> ProbeMany:
    if engine == "graph":
        eng = engine_for(graph)

        def probe(xs: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            T, right, left = eng.probe_many(params, parameter, xs)
            return T, left, right

        return probe
    from llamp.lp.model import LinearProgram

    lp = LinearProgram(engine_for(graph).events(params), params, solver=engine)
    attr = {"L": "lambda_L", "G": "lambda_G", "o": "lambda_o"}[parameter]

    def lp_probe(xs: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sols = [lp.solve(params.with_(**{parameter: float(x)})) for x in xs]
        T = np.array([s.runtime_ns for s in sols])
        slope = np.array([getattr(s, attr) for s in sols])
        return T, slope, slope.copy()

    return lp_probe
