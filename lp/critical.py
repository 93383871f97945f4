"""Critical latencies in [a, b] (LLAMP §II-B and Algorithm 2), exact via tangent intersection.

``T(L)`` is convex and piecewise linear (a max of affine path lengths, LLAMP Eq. 3), so its
breakpoints — the critical latencies, where the critical path and ``λ_L`` change — are found
exactly from values and one-sided slopes: intersect the tangents at both ends of an interval;
if ``T`` touches the intersection, it is the interval's only breakpoint; otherwise split there
and recurse. With the graph engine this takes ``2k+1`` evaluations for ``k`` breakpoints.

LP basis ranges (the paper's SALBLow) are not used: the LLAMP LP is highly degenerate and its
basis range is much narrower than a linear piece of ``T`` (DESIGN §3.2). The LP path uses the
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
class CriticalLatencies:
    """All breakpoints of ``T(parameter)`` in [lo, hi] and the linear pieces between them."""

    parameter: str
    lo: float
    hi: float
    critical: list[float]
    segments: list[Segment]
    evaluations: int
    engine: str
    params: LogGPS = field(repr=False)

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
            "engine": self.engine,
            "params": self.params.as_dict(),
        }


def tangent_breakpoints(
    probe: ProbeMany, lo: float, hi: float
) -> tuple[list[tuple[float, float, float, float]], int]:
    """Breakpoints of a convex piecewise-linear function on [lo, hi] by tangent intersection.

    Works in waves: the tangent intersections of all open intervals are probed together (one
    batched sweep of the graph engine). Returns ``[(x, T(x), slope left of x, slope right of
    x), …]`` sorted by x, and the number of probes. Slopes are sums of integer coefficients
    (message counts, bytes), so slope comparisons are exact up to the rounding of the probe.
    """
    T, left, right = probe([lo, hi])
    calls = 2
    found: dict[float, tuple[float, float, float, float]] = {}
    scale = max(abs(lo), abs(hi), 1.0)
    pending = [(lo, float(T[0]), float(right[0]), hi, float(T[1]), float(left[1]))]
    while pending:
        work = []
        for x0, T0, s0, x1, T1, s1 in pending:
            if s1 - s0 <= 1e-9 * max(1.0, abs(s0), abs(s1)) or x1 - x0 <= 1e-12 * scale:
                continue
            x = (T1 - T0 + s0 * x0 - s1 * x1) / (s0 - s1)
            work.append((x0, T0, s0, x1, T1, s1, min(max(x, x0), x1)))
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
    return sorted(found.values()), calls


def _segments(lo: float, hi: float, T_lo: float, s_lo: float, T_hi: float, points) -> list[Segment]:
    segments = []
    start, T_start, slope = lo, T_lo, s_lo
    for x, T, _left, right in points:
        if x <= lo or x >= hi:
            continue
        segments.append(Segment(start, x, slope, T_start, T))
        start, T_start, slope = x, T, right
    segments.append(Segment(start, hi, slope, T_start, T_hi))
    return segments


def critical_latencies(
    graph: ExecutionGraph,
    params: LogGPS,
    lo: float,
    hi: float,
    *,
    parameter: str = "L",
    engine: str = "auto",
) -> CriticalLatencies:
    """Every critical value of ``parameter`` (default L) in [lo, hi], with λ on each piece."""
    if parameter not in PARAMETER_COLUMNS:
        raise InputError(f"cannot search critical values of {parameter!r}: choose L, G or o")
    if not 0.0 <= lo <= hi:
        raise InputError(f"interval [{lo}, {hi}] must satisfy 0 ≤ from ≤ to")
    chosen = resolve_engine(engine)
    probe = _probe(graph, params, parameter, chosen)
    points, calls = tangent_breakpoints(probe, lo, hi)
    (T_lo, T_hi), _, (s_lo, _) = probe([lo, hi])
    T_lo, T_hi, s_lo = float(T_lo), float(T_hi), float(s_lo)
    inner = [p for p in points if lo < p[0] < hi]
    return CriticalLatencies(
        parameter=parameter,
        lo=lo,
        hi=hi,
        critical=[float(p[0]) for p in inner],
        segments=_segments(lo, hi, T_lo, s_lo, T_hi, inner),
        evaluations=calls,
        engine=chosen,
        params=params,
    )


def _probe(graph: ExecutionGraph, params: LogGPS, parameter: str, engine: str) -> ProbeMany:
    if engine == "graph":
        eng = engine_for(graph)

        def probe(xs: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            T, right, left = eng.probe_many(params, parameter, xs)
            return T, left, right

        return probe
    from llamp.lp.model import LinearProgram

    lp = LinearProgram(engine_for(graph).events(params.S), params, solver=engine)
    attr = {"L": "lambda_L", "G": "lambda_G", "o": "lambda_o"}[parameter]

    def lp_probe(xs: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sols = [lp.solve(params.with_(**{parameter: float(x)})) for x in xs]
        T = np.array([s.runtime_ns for s in sols])
        slope = np.array([getattr(s, attr) for s in sols])
        return T, slope, slope.copy()

    return lp_probe
