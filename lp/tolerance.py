"""x% latency and bandwidth tolerance (LLAMP §II-D2).

The x% L tolerance is the largest ``L`` with ``T(L) ≤ (1+x)·T(L0)``, where ``L0`` is the
configured latency (the same for ``G``). The LP engines solve the paper's tolerance LP
(``max l s.t. t ≤ bound``). The graph engine walks the convex, non-decreasing ``T(L)``: a
tangent from the left overshoots the root, then Newton steps from the right with left slopes
land on it exactly after one step per linear piece crossed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from llamp.config import DEFAULT_TOLERANCES
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp.engine import ABS_TOL_NS, REL_TOL, WORKERS, engine_for
from llamp.lp.predict import resolve_engine
from llamp.params import LogGPS

#: Values of L (ns) and G (ns/B) beyond which a parameter counts as tolerated without bound.
UNBOUNDED_AT = {"L": 1e15, "G": 1e9, "o": 1e15}


@dataclass(frozen=True)
class ToleranceLevel:
    """The largest parameter value keeping ``T`` within ``(1+x)·T0``."""

    x: float
    bound_ns: float
    value: float  # ns for L and o, ns/B for G; math.inf if no value reaches the bound


@dataclass(frozen=True)
class Tolerance:
    """Latency and bandwidth tolerances relative to the baseline ``T(L0, G0)``."""

    baseline_ns: float
    latency: list[ToleranceLevel]
    bandwidth: list[ToleranceLevel]
    engine: str
    params: LogGPS = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The stable ``tolerance --json`` shape."""
        return {
            "baseline_ns": self.baseline_ns,
            "latency": [
                {"x": t.x, "bound_ns": t.bound_ns, "latency_ns": t.value} for t in self.latency
            ],
            "bandwidth": [
                {"x": t.x, "bound_ns": t.bound_ns, "G_ns_per_byte": t.value} for t in self.bandwidth
            ],
            "engine": self.engine,
            "params": self.params.as_dict(),
        }


def latency_range(tolerances: Iterable[float], L0: float) -> tuple[float, float]:
    """The automatic L range of ``T(L)`` given x% L tolerances (ns, ``inf`` allowed; of one run
    or of several curves drawn together): [0, 1.25 × the largest finite one], at least 2·L0
    and L0 + 10 µs, so every tolerance zone shows; [0, L0 + 100 µs] if none is finite (no
    message on any path). The Latency page's default range, each run's range in a comparison
    (:func:`llamp.lp.compare.search_settings`) and the collective variants' common range."""
    finite = [float(v) for v in tolerances if math.isfinite(v)]
    if not finite:
        return 0.0, L0 + 100_000.0
    return 0.0, max(1.25 * max(finite), 2.0 * L0, L0 + 10_000.0)


def max_parameter_within(
    graph: ExecutionGraph,
    params: LogGPS,
    bound_ns: float,
    *,
    parameter: str = "L",
    max_steps: int = 10_000,
) -> float:
    """Largest value of ``parameter`` with ``T ≤ bound_ns`` (graph engine, exact).

    The search starts at the configured value (an :class:`InputError` if ``T`` there already
    exceeds the bound); ``math.inf`` if ``T`` never reaches the bound (no message on any path).
    """
    eng = engine_for(graph)

    def at(x: float):
        return eng.point(params.with_(**{parameter: x}), (parameter,))

    x0 = float(getattr(params, parameter))
    p = at(x0)
    if p.runtime_ns > bound_ns + _tol(bound_ns):
        raise InputError(
            f"T({parameter}={x0:g}) = {p.runtime_ns:g} ns already exceeds the bound {bound_ns:g} ns"
        )
    # Phase 1: find x_hi with T(x_hi) ≥ bound (tangents from the left overshoot the root).
    x, T, slope = x0, p.runtime_ns, p.right[parameter]
    asymptote = at(UNBOUNDED_AT[parameter]).right[parameter]
    if asymptote <= 0.0:
        return math.inf
    step = max(bound_ns - T, 1.0)
    for _ in range(max_steps):
        if T >= bound_ns - _tol(bound_ns):
            break
        if slope > 0.0:
            x = x + (bound_ns - T) / slope
        else:
            x, step = x + step, step * 2.0
        p = at(x)
        T, slope = p.runtime_ns, p.right[parameter]
    else:  # pragma: no cover - defensive
        raise RuntimeError("tolerance search did not bracket the bound")
    # Phase 2: Newton from the right with left slopes (monotone, exact on pieces).
    for _ in range(max_steps):
        if T - bound_ns <= _tol(bound_ns):
            return x
        left = p.left[parameter]
        x = max(x - (T - bound_ns) / left, x0)
        p = at(x)
        T = p.runtime_ns
    raise RuntimeError("tolerance search did not converge")  # pragma: no cover


def _tol(value: float) -> float:
    return 10 * (REL_TOL * abs(value) + ABS_TOL_NS)


def tolerance(
    graph: ExecutionGraph,
    params: LogGPS,
    levels: tuple[float, ...] | list[float] = DEFAULT_TOLERANCES,
    *,
    engine: str = "auto",
    bandwidth: bool = True,
) -> Tolerance:
    """x% tolerance of L (and G) for each level x in ``levels`` (fractions: 0.01 = 1%)."""
    levels = [float(v) for v in levels]
    if any(v < 0 for v in levels):
        raise InputError("tolerance levels must be ≥ 0 (fractions, e.g. 0.01 for 1%)")
    chosen = resolve_engine(engine)
    parameters = ("L", "G") if bandwidth else ("L",)
    searches = [(p, v) for p in parameters for v in levels]
    if chosen == "graph":
        T0 = engine_for(graph).runtime(params)  # also lowers the graph, once

        def solve(search: tuple[str, float]) -> float:
            parameter, v = search
            return max_parameter_within(graph, params, (1 + v) * T0, parameter=parameter)

        # The searches are independent walks whose sweeps release the GIL: one per core.
        with ThreadPoolExecutor(max_workers=max(1, min(WORKERS, len(searches)))) as pool:
            values = list(pool.map(solve, searches))
    else:
        from llamp.lp.model import LinearProgram

        lp = LinearProgram(engine_for(graph).events(params), params, solver=chosen)
        T0 = lp.solve().runtime_ns
        values = [lp.tolerance((1 + v) * T0, parameter=p) for p, v in searches]
    found = dict(zip(searches, values, strict=True))
    latency = [ToleranceLevel(v, (1 + v) * T0, found["L", v]) for v in levels]
    band = [ToleranceLevel(v, (1 + v) * T0, found["G", v]) for v in levels] if bandwidth else []
    return Tolerance(baseline_ns=T0, latency=latency, bandwidth=band, engine=chosen, params=params)
