"""Where an analysis' fixed schedule order gives the network's own ``T`` (docs/model.md
§Schedule order, "Away from the baseline").

Under ``order="schedule"`` an analysis over a range (critical values, tolerances) evaluates one
order: the schedule pass's at the configuration it was given. Away from it the network's own
order (the pass run at that point: LogGOPSim's, under its model) may be another one, and then
its ``T`` may differ. :func:`check_order` re-schedules at chosen values of the parameter and
reports, per value, whether the pass served every resource in the baseline's order and its own
``T`` beside the fixed order's. The two are different questions: an order may differ where ties
among equal-time messages break the other way and ``T`` does not change (on ``ORDER_FLIPS`` of
the tests the order holds up to 3.5 µs), or ``T`` may differ everywhere but at the baseline (on
LULESH, 8 ranks: 0.02–0.14 % below L0 = 3 µs, 12 % at 10.3 µs, 76.5 % at 100 µs). The answer
an analysis gives is exact for the order it states; this says over which part of its range that
answer is also the network's, and :func:`own_tolerance` finds a tolerance under the network's
own order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from llamp.graph import ExecutionGraph
from llamp.lp.engine import WORKERS, engine_for
from llamp.lp.kernels import ABS_TOL_NS
from llamp.params import LogGPS

if TYPE_CHECKING:  # not at import: `llamp critical` needs neither (nor pandas)
    from llamp.lp.region import Region
    from llamp.lp.tolerance import Tolerance

#: Most values :func:`check_order` re-schedules (each is one pass of the whole graph).
MAX_ORDER_CHECKS = 64
#: Vertices all of a check's passes may visit together, about half a minute of passes on the
#: benchmark machine (one pass over the 3·10^6-vertex stencil: 0.9 s): 64 passes up to
#: 1.5·10^6 vertices, 10 at 10^7, the two ends of the range at 10^8.
CHECK_VERTICES = 1e8
#: How close (relative) an own-order tolerance walk brackets a jump of the own ``T`` over the
#: bound (an order change) before it stops: the value below it is reported.
JUMP_RTOL = 1e-5
#: What one step of an own-order tolerance walk costs, in passes: it lowers the event graph of
#: a new order and walks its tangents (1.3 s at 10^6 vertices against 0.33 s for a pass).
STEP_COST = 4
#: Above this many vertices the passes run one at a time (each holds its own state).
SERIAL_ABOVE = 10**7
#: Two ``T`` agree when they differ by at most this fraction (plus ``ABS_TOL_NS``): the pass
#: adds the same costs as the event graph in another order, so they agree to rounding.
AGREE_RTOL = 1e-9


def unit_of(parameter: str) -> str:
    """The unit suffix of a parameter's values in JSON keys: ``ns_per_byte`` for G, else ``ns``."""
    return "ns_per_byte" if parameter == "G" else "ns"


@dataclass(frozen=True)
class OrderPoint:
    """One re-scheduled value: ``T`` in the analysis' order and in the value's own."""

    value: float
    fixed_ns: float  # T in the order of the baseline's pass (what the analysis evaluated)
    #: T of the pass at this value (LogGOPSim's under --rendezvous loggopsim --nic serial)
    own_ns: float
    same_order: bool  # the pass served every CPU stream and NIC in the baseline's order

    @property
    def agrees(self) -> bool:
        """The fixed order's ``T`` is the value's own."""
        return abs(self.fixed_ns - self.own_ns) <= AGREE_RTOL * abs(self.own_ns) + ABS_TOL_NS

    @property
    def error(self) -> float:
        """(fixed − own) / own: how far the analysis' ``T`` is from the network's own."""
        return (self.fixed_ns - self.own_ns) / self.own_ns if self.own_ns > 0 else 0.0

    def as_dict(self, unit: str) -> dict[str, Any]:
        return {
            f"at_{unit}": self.value,
            "runtime_ns": self.fixed_ns,
            "own_runtime_ns": self.own_ns,
            "relative_error": self.error,
            "same_order": self.same_order,
        }


@dataclass(frozen=True)
class OrderCheck:
    """The re-scheduled values of ``parameter`` (ascending) around ``baseline``, where the
    analysis' order was taken; ``candidates`` values were asked for, at most
    :data:`MAX_ORDER_CHECKS` of them checked (:func:`check_order`: the values to keep first, the
    others evenly picked with the ends, and the baseline)."""

    parameter: str
    baseline: float
    points: list[OrderPoint]
    candidates: int

    @property
    def differs_at(self) -> list[float]:
        """The checked values whose own order is not the baseline's."""
        return [p.value for p in self.points if not p.same_order]

    @property
    def disagreements(self) -> list[OrderPoint]:
        """The checked values whose own ``T`` is not the fixed order's, largest error first."""
        return sorted((p for p in self.points if not p.agrees), key=lambda p: -abs(p.error))

    def agrees_over(self) -> tuple[float, float] | None:
        """``(first, last)`` of the run of consecutive checked values whose own ``T`` is the
        fixed order's that holds the checked value nearest the baseline (the baseline itself
        when it lies inside the values); ``None`` when that value does not agree."""
        if not self.points:
            return None
        values = np.array([p.value for p in self.points])
        near = int(np.argmin(np.abs(values - self.baseline)))
        if not self.points[near].agrees:
            return None
        lo = hi = near
        while lo > 0 and self.points[lo - 1].agrees:
            lo -= 1
        while hi + 1 < len(self.points) and self.points[hi + 1].agrees:
            hi += 1
        return self.points[lo].value, self.points[hi].value

    def unit(self) -> str:
        return unit_of(self.parameter)

    def as_dict(self) -> dict[str, Any]:
        """The ``schedule_order`` shape of ``critical --json`` (``report --json``: its
        ``range``)."""
        unit = self.unit()
        over = self.agrees_over()
        return {
            "parameter": self.parameter,
            "baseline": self.baseline,
            "candidates": self.candidates,
            "checked": [p.value for p in self.points],
            "differs_at": self.differs_at,
            "runtime_differs_at": [p.value for p in self.points if not p.agrees],
            f"agrees_from_{unit}": None if over is None else over[0],
            f"agrees_to_{unit}": None if over is None else over[1],
            "points": [p.as_dict(unit) for p in self.points],
        }


def pick(values: list[float] | np.ndarray, most: int = MAX_ORDER_CHECKS) -> np.ndarray:
    """``values`` sorted without repeats, at most ``most`` of them evenly picked (the ends
    always)."""
    values = np.unique(np.asarray(values, dtype=np.float64))
    values = values[np.isfinite(values)]
    if values.size > most:
        keep = np.unique(np.linspace(0, values.size - 1, most).round().astype(int))
        values = values[keep]
    return values


def check_order(
    graph: ExecutionGraph,
    params: LogGPS,
    parameter: str,
    values: list[float] | np.ndarray,
    fixed: Callable[[np.ndarray], np.ndarray] | None = None,
    *,
    most: int | None = None,
    keep: list[float] | np.ndarray = (),
    progress: Callable[[float | None, str], object] | None = None,
) -> OrderCheck | None:
    """Re-schedule at ``values`` of ``parameter`` (at most ``most``, :func:`pick`; by default
    :func:`max_checks`; the values of ``keep`` among them first, e.g. a report's sweep points)
    and compare with the order of ``params`` (``None`` unless ``params.order == "schedule"``),
    and at the baseline itself when it lies between them (it agrees: where the run of agreeing
    values starts).

    ``fixed(values)`` gives ``T`` in the baseline's order at those values when the analysis
    already knows it (the critical-value search's exact pieces); by default the graph engine
    evaluates it (the passes: :func:`reschedule`, ``progress`` as there)."""
    if params.order != "schedule":
        return None
    if most is None:
        most = max_checks(graph)
    candidates = pick(values, len(values) + 1)
    baseline = float(getattr(params, parameter))
    inside = candidates.size > 0 and candidates[0] < baseline < candidates[-1]
    if inside:  # it agrees: where the run of agreeing values starts
        candidates = np.union1d(candidates, [baseline])
    kept = pick(np.intersect1d(candidates, np.asarray(keep, dtype=np.float64)), most)
    rest = np.setdiff1d(candidates, kept)
    chosen = np.union1d(kept, pick(rest, most - kept.size) if most > kept.size else [])
    if inside:
        chosen = np.union1d(chosen, [baseline])
    if fixed is None:
        fixed_ns = engine_for(graph).probe_many(params, parameter, chosen)[0]
    else:
        fixed_ns = np.asarray(fixed(chosen), dtype=np.float64)
    configs = [params.with_(**{parameter: float(v)}) for v in chosen]
    owns = reschedule(graph, params, configs, progress)
    points = [
        OrderPoint(float(v), float(t), float(runtime), same)
        for v, t, (runtime, same) in zip(chosen, fixed_ns, owns, strict=True)
    ]
    return OrderCheck(parameter, baseline, points, int(candidates.size))


def max_checks(graph: ExecutionGraph) -> int:
    """How many values a check re-schedules on ``graph``: :data:`MAX_ORDER_CHECKS`, fewer when
    they would visit more than :data:`CHECK_VERTICES` vertices, never fewer than 2."""
    return max(2, min(MAX_ORDER_CHECKS, int(CHECK_VERTICES / max(graph.num_vertices, 1))))


def reschedule(
    graph: ExecutionGraph,
    params: LogGPS,
    configs: list[LogGPS],
    progress: Callable[[float | None, str], object] | None = None,
) -> list[tuple[float, bool]]:
    """Per configuration of ``configs`` (each with the order taken at ``params``): ``T`` of the
    schedule pass at its own parameters, and whether that pass served every CPU stream and NIC
    in the order of the pass at ``params``. The passes are independent and release the GIL:
    one per core, one at a time above :data:`SERIAL_ABOVE` vertices. ``progress(share done,
    text)`` after each pass (it may raise to cancel the rest)."""
    from llamp.lp.schedule import schedule

    base = schedule(graph, params)

    def own(config: LogGPS) -> tuple[float, bool]:
        plan = schedule(graph, config.rescheduled())
        return plan.runtime, plan.same_order(base)

    big = graph.num_vertices > SERIAL_ABOVE
    out: list[tuple[float, bool]] = []
    with ThreadPoolExecutor(max_workers=1 if big else max(1, min(WORKERS, len(configs)))) as pool:
        futures = [pool.submit(own, c) for c in configs]
        try:
            for future in futures:
                out.append(future.result())
                if progress is not None:
                    progress(len(out) / len(configs), f"re-scheduled {len(out)}/{len(configs)}")
        finally:
            for future in futures:
                future.cancel()
    return out


@dataclass(frozen=True)
class OwnTolerance:
    """An x% tolerance under the network's own order: the value of ``parameter`` where the
    schedule pass, re-run at that value, reaches ``bound_ns`` (:func:`own_tolerance`).

    ``walk``: (value, own ``T``) of every pass, in order; the first is the fixed order's
    tolerance (``fixed``). ``value``: the own-order tolerance, ``None`` when the pass budget ran
    out first (the walk's values below the bound are those where the own ``T`` was found within
    it). ``exact``: the own ``T`` at ``value`` is the bound; otherwise the own ``T`` crosses the
    bound within :data:`JUMP_RTOL` above ``value``, the last value found below it: by a jump (an
    order change) when the walk had a pass left to check that no step lands inside."""

    parameter: str
    x: float
    bound_ns: float
    fixed: float
    value: float | None
    exact: bool
    walk: list[tuple[float, float]]

    def bracket(self) -> tuple[float | None, float | None]:
        """The largest walked value whose own ``T`` is below the bound and the smallest above it
        (``None`` where there is none): where the walk left the answer when its budget ran
        out."""
        below = [v for v, t in self.walk if t < self.bound_ns]
        above = [v for v, t in self.walk if t > self.bound_ns]
        return (max(below) if below else None), (min(above) if above else None)

    def text(self, fmt: Callable[[float], str]) -> str:
        """The answer for a table cell, values by ``fmt``: the value (``↑`` when the own ``T``
        jumps over the bound just above it), or where the budget left it (``≥ a``, ``< b``,
        ``a … b``)."""
        if self.value is not None:
            return fmt(self.value) + ("" if self.exact else " ↑")
        lo, hi = self.bracket()
        if lo is not None and hi is not None:
            return f"{fmt(lo)} … {fmt(hi)}"
        return f"≥ {fmt(lo)}" if lo is not None else f"< {fmt(hi)}" if hi is not None else "?"

    @property
    def fixed_own_ns(self) -> float:
        """The network's own ``T`` at the fixed order's tolerance (where that order's is the
        bound)."""
        return self.walk[0][1] if self.walk else self.bound_ns

    def as_dict(self) -> dict[str, Any]:
        unit = unit_of(self.parameter)
        return {
            "x": self.x,
            "bound_ns": self.bound_ns,
            f"fixed_order_{unit}": self.fixed,
            "own_runtime_at_fixed_ns": self.fixed_own_ns,
            f"own_order_{unit}": self.value,
            "exact": self.exact,
            "walk": [{f"at_{unit}": v, "own_runtime_ns": t} for v, t in self.walk],
        }


def own_tolerance(
    graph: ExecutionGraph,
    params: LogGPS,
    parameter: str,
    x: float,
    bound_ns: float,
    fixed: float,
    most: int,
    tick: Callable[[], object] | None = None,
) -> OwnTolerance:
    """The tolerance of ``parameter`` to ``bound_ns`` under the network's own order, from the
    fixed order's ``fixed`` (at most ``most`` passes, a step counting :data:`STEP_COST`;
    ``tick()`` before each pass, which may raise to cancel).

    Steps of exact fixed-order tolerances: at the last value ``lo`` whose own ``T`` is below
    the bound, the order of the pass there is fixed and its tolerance found exactly (the
    tangent walk of :func:`llamp.lp.tolerance.max_parameter_within`; beyond ``lo``, since that
    order's ``T`` at ``lo`` is the own one); the pass is run there. Its own ``T`` equal to the
    bound: that value is the answer (its order is the step's). Below: the next ``lo``. Above
    (the own order costs more there than the one fixed): the answer lies between ``lo`` and
    that value ``hi``; the walk halves the interval with passes alone (no lowering) down to
    :data:`JUMP_RTOL`, then takes one more step from ``lo``: inside the interval and on the
    bound, it is the exact answer; otherwise the own ``T`` jumps over the bound between ``lo``
    and ``hi`` (an order change) and ``lo`` is reported. On LULESH (8 ranks) a walk takes 2–6
    passes, 15 where it halves. Values the walk did not visit are not checked: where the own
    ``T`` is not monotone, another value below the answer may exceed the bound."""
    from llamp.lp.schedule import schedule

    if not np.isfinite(fixed):  # no message on any path: no order changes T
        return OwnTolerance(parameter, x, bound_ns, fixed, fixed, True, [])
    lo, hi = float(getattr(params, parameter)), math.inf
    lo_plan = None  # the pass at lo (None: the baseline's, which the engine holds)
    value = fixed
    walk: list[tuple[float, float]] = []

    def done(answer: float | None, exact: bool) -> OwnTolerance:
        return OwnTolerance(parameter, x, bound_ns, fixed, answer, exact, walk)

    def on_bound(own: float) -> bool:
        return abs(own - bound_ns) <= AGREE_RTOL * bound_ns + ABS_TOL_NS

    def run(at: float):
        if tick is not None:
            tick()
        return schedule(graph, params.with_(**{parameter: at}).rescheduled())

    spent = 0  # passes, a step counting STEP_COST
    while spent < most:
        plan = run(value)
        spent += 1
        walk.append((value, plan.runtime))
        if on_bound(plan.runtime):
            return done(value, True)
        if plan.runtime < bound_ns:
            lo, lo_plan = value, plan
        else:
            hi = value
        del plan
        if math.isfinite(hi) and hi - lo <= JUMP_RTOL * hi:
            if spent + STEP_COST + 1 > most:  # nothing left to tell a jump from a crossing
                return done(lo, False)
            # bracketed: the step from lo lands on the bound inside, or T jumps over it
            step = _step(graph, params, parameter, lo, lo_plan, bound_ns)
            if not lo < step < hi:
                return done(lo, False)
            plan = run(step)
            walk.append((step, plan.runtime))
            return done(step, True) if on_bound(plan.runtime) else done(lo, False)
        if math.isinf(hi):
            if spent + STEP_COST + 1 > most:
                break
            value = _step(graph, params, parameter, lo, lo_plan, bound_ns)
            spent += STEP_COST
        else:
            value = (lo + hi) / 2
    return done(None, False)


def _step(graph, params: LogGPS, parameter: str, lo: float, plan, bound_ns: float) -> float:
    """The tolerance to ``bound_ns`` in the order of the pass ``plan`` at ``lo`` (``None``: the
    baseline's), lowered from that pass and dropped after unless another analysis holds it."""
    from llamp.lp.tolerance import max_parameter_within

    engine = engine_for(graph)
    at_lo = params.with_(**{parameter: lo}).rescheduled() if plan is not None else params
    held = engine.holds(at_lo)
    if plan is not None and not held:
        engine.events(at_lo, plan=plan)  # the lowering reads the pass already run
    step = max_parameter_within(graph, at_lo, bound_ns, parameter=parameter)
    if not held:
        engine.forget(at_lo)  # one walk's lowering: no other analysis reads it
    return step


def check_tolerance(
    graph: ExecutionGraph,
    params: LogGPS,
    tolerance: Tolerance,
    most: int | None = None,
    progress: Callable[[float | None, str], object] | None = None,
) -> dict[str, list[OwnTolerance]]:
    """:func:`own_tolerance` of every level of ``tolerance`` (``"L"``, and ``"G"`` when it has
    bandwidth levels); empty unless ``params.order == "schedule"``. ``most``: passes per walk,
    by default :data:`MAX_ORDER_CHECKS`, fewer when all walks together could visit more than
    :data:`CHECK_VERTICES` vertices (at least one: the own ``T`` at the fixed order's
    tolerance). ``progress(share of the passes budgeted, text)`` before each pass (from the
    walks' threads; it may raise to cancel them)."""
    if params.order != "schedule":
        return {}
    searches = [
        (parameter, level)
        for parameter, levels in (("L", tolerance.latency), ("G", tolerance.bandwidth))
        for level in levels
    ]
    if most is None:
        share = CHECK_VERTICES / max(graph.num_vertices, 1) / max(len(searches), 1)
        most = max(1, min(MAX_ORDER_CHECKS, int(share)))

    passes = [0]

    def tick() -> None:
        passes[0] += 1
        if progress is not None:
            budget = most * len(searches)
            progress(min(passes[0] / budget, 1.0), f"pass {passes[0]} (at most {budget})")

    def walk(search) -> OwnTolerance:
        parameter, level = search
        return own_tolerance(
            graph, params, parameter, level.x, level.bound_ns, level.value, most, tick
        )

    big = graph.num_vertices > SERIAL_ABOVE
    with ThreadPoolExecutor(max_workers=1 if big else max(1, min(WORKERS, len(searches)))) as pool:
        walks = list(pool.map(walk, searches))
    out: dict[str, list[OwnTolerance]] = {}
    for (parameter, _), result in zip(searches, walks, strict=True):
        out.setdefault(parameter, []).append(result)
    return out


@dataclass(frozen=True)
class VertexCheck:
    """A vertex ``(u, v)`` of a tolerance region re-scheduled: ``T`` there in the region's order
    (``fixed_ns``: the bound on a bound edge), the network's own, and whether its order is the
    baseline's."""

    u: float
    v: float
    bound_ns: float
    fixed_ns: float
    own_ns: float
    same_order: bool

    @property
    def excess(self) -> float:
        """(own − bound) / bound: > 0 where the network's own order leaves the region."""
        return (self.own_ns - self.bound_ns) / self.bound_ns if self.bound_ns > 0 else 0.0

    def as_dict(self, u_key: str, v_key: str) -> dict[str, Any]:
        """The ``schedule_order`` entry of ``region --json`` (the axes' keys, ``L_ns``…)."""
        return {
            u_key: self.u,
            v_key: self.v,
            "bound_ns": self.bound_ns,
            "runtime_ns": self.fixed_ns,
            "own_runtime_ns": self.own_ns,
            "same_order": self.same_order,
        }


def check_region(graph: ExecutionGraph, region: Region) -> dict[float, list[VertexCheck]]:
    """The verified vertices of each level of ``region`` (x → vertices), re-scheduled, when its
    two axes are LogGPS parameters (L, G, o) under ``order="schedule"`` (else empty); at most
    :func:`max_checks` vertices in all, evenly picked per level."""
    params = region.params
    names = tuple(axis.name for axis in region.axes)
    if params.order != "schedule" or region.source != "LogGPS":
        return {}
    per_level = max(2, max_checks(graph) // max(len(region.levels), 1))
    picked: list[tuple[float, int]] = []
    for level in region.levels:
        verified = np.flatnonzero(np.isfinite(level.runtime_ns))
        if verified.size > per_level:
            keep = np.unique(np.linspace(0, verified.size - 1, per_level).round().astype(int))
            verified = verified[keep]
        picked += [(level.x, int(i)) for i in verified]
    levels = {level.x: level for level in region.levels}
    configs = [
        params.with_(**{names[0]: float(levels[x].u[i]), names[1]: float(levels[x].v[i])})
        for x, i in picked
    ]
    out: dict[float, list[VertexCheck]] = {level.x: [] for level in region.levels}
    for (x, i), (own, same) in zip(picked, reschedule(graph, params, configs), strict=True):
        level = levels[x]
        out[x].append(
            VertexCheck(
                float(level.u[i]),
                float(level.v[i]),
                level.bound_ns,
                float(level.runtime_ns[i]),
                float(own),
                same,
            )
        )
    return out
