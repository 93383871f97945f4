"""Critical latencies in [a, b] (LLAMP §II-B and Algorithm 2), exact via tangent intersection.

``T(L)`` is convex and piecewise linear (a max of affine path lengths, LLAMP Eq. 3), so its
breakpoints — the critical latencies, where the critical path and ``λ_L`` change — are found
exactly from values and one-sided slopes: intersect the tangents at both ends of an interval;
if ``T`` touches the intersection, it is the interval's only breakpoint; otherwise split there
and recurse. One probe at a time this takes ``2k+1`` evaluations for ``k`` breakpoints.

The search runs in **waves**: the probes of all open intervals go to the engine in one
``probe_many`` call, which sweeps the graph once for many values (lanes, both cores), so its
cost is set by the number of waves and of evaluations. Every open interval is probed at its
tangent intersection, which keeps the result exact; the wave is filled up to a multiple of
the probes a pass evaluates anyway (:meth:`~llamp.lp.engine.GraphEngine.wave_width`: up to
:data:`WAVE_WIDTH`, fewer where the lane state is large) with points shared among the
intervals in proportion to their λ jump, placed densest where the tangents bend. Pieces whose
end slopes agree are linear; the breakpoints are the joints between linear pieces of
different slope. λ_L counts messages (λ_G bytes), so when every edge coefficient is a whole
number a breakpoint raises the slope by at least one, and an interval whose slope rises by
one holds a single breakpoint, at its tangent intersection: it needs no probe. On the noisy
10^6-vertex stencil this takes 13 waves and 1.45 evaluations per breakpoint (one probe at a
time: 16 waves, 2k+1 = 4,307 evaluations; benchmarks/bench_critical.py).

The number of breakpoints grows with the trace: a noisy stencil has about one per iteration
(229 at 10^5 vertices, 2,153 at 10^6, ~20,000 expected at 10^7), so the search takes an
optional budget of evaluations. With a budget, intervals are refined in order of their relative
λ jump ``(λ(end) − λ(start)) / max(λ(start), 1)``, an upper bound on the relative jump of any
breakpoint inside: those that may hold a breakpoint of at least ``min_jump`` come first. When
the budget runs out, the intervals not yet resolved are returned as such (``unresolved``: T and
λ at both ends, at least one critical value inside) and ``complete`` is false; every breakpoint
whose relative jump exceeds :attr:`CriticalLatencies.unresolved_bound` has been found, and the
breakpoints found are exact either way. :func:`evaluation_budget` sizes the budget to one or
two minutes of sweeps on the benchmark machine.

LP basis ranges (the paper's SALBLow) are not used: the LLAMP LP is highly degenerate and its
basis range is much narrower than a linear piece of ``T`` (docs/architecture.md §Two engines). The LP path uses the
same tangent walk with LP objective values and reduced costs (any subgradient works).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp.engine import ABS_TOL_NS, LANES, REL_TOL, WORKERS, engine_for
from llamp.lp.predict import PARAMETER_COLUMNS, resolve_engine
from llamp.params import LogGPS

#: (T, left slope, right slope) at each of several parameter values.
ProbeMany = Callable[[list[float]], tuple[np.ndarray, np.ndarray, np.ndarray]]
#: Called after each wave with (share of the total λ jump resolved, waves, evaluations,
#: intervals still open).
Progress = Callable[[float, int, int, int], object]

#: Most probes per wave while few intervals are open: what one round of ``probe_many``
#: evaluates for about the cost of one pass (``LANES`` values per pass on each core) where the
#: lane state is small (:meth:`~llamp.lp.engine.GraphEngine.wave_width`). Measured on the
#: 10^6-vertex noisy stencil (2 cores): 32 → 13 waves, 10.3 s; 64 → 12, 7.9 s; 128 → 11, 7.3 s.
WAVE_WIDTH = LANES * WORKERS
#: The default threshold of a significant breakpoint: λ rises by 1 % of its value.
MIN_JUMP = 0.01

_SLOPE_RTOL = 1e-9


def _same_slope(a: float, b: float) -> bool:
    return abs(b - a) <= _SLOPE_RTOL * max(1.0, abs(a), abs(b))


def relative_jump(before: float, after: float) -> float:
    """The relative step of a slope: ``(after − before) / max(before, 1)`` (λ counts messages
    or bytes, so a step from 0 to 1 counts as 100 %)."""
    return (after - before) / max(before, 1.0)


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

    @property
    def jump(self) -> float:
        """The total λ jump of the breakpoints inside."""
        return self.slope_end - self.slope_start

    @property
    def relative_jump(self) -> float:
        """An upper bound on the relative jump of any breakpoint inside."""
        return relative_jump(self.slope_start, self.slope_end)


@dataclass(frozen=True)
class Breakpoint:
    """A breakpoint that matters: one exact critical value, or a run of consecutive small ones
    merged (see :meth:`CriticalLatencies.significant`)."""

    at: float  # the critical value (the largest-jump breakpoint of the merged group)
    lo: float  # first critical value merged into this one
    hi: float  # last critical value merged into this one
    slope_before: float  # λ left of lo
    slope_after: float  # λ right of hi
    jump: float  # slope_after - slope_before
    relative_jump: float  # jump / max(slope_before, 1)
    merged: int  # how many exact breakpoints this stands for

    def as_dict(self, unit: str = "ns", slope: str = "lambda_L") -> dict[str, Any]:
        return {
            f"at_{unit}": self.at,
            f"from_{unit}": self.lo,
            f"to_{unit}": self.hi,
            f"{slope}_before": self.slope_before,
            f"{slope}_after": self.slope_after,
            "jump": self.jump,
            "relative_jump": self.relative_jump,
            "merged": self.merged,
        }


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
    waves: int = 0

    @property
    def complete(self) -> bool:
        """True if every critical value in [lo, hi] was found."""
        return not self.unresolved

    @property
    def unresolved_jump(self) -> float:
        """The total λ jump of the breakpoints not found (0 when complete)."""
        return float(sum(u.jump for u in self.unresolved))

    @property
    def unresolved_bound(self) -> float:
        """Every breakpoint whose relative λ jump exceeds this was found (0 when complete)."""
        return max((u.relative_jump for u in self.unresolved), default=0.0)

    def slopes(self) -> tuple[np.ndarray, np.ndarray]:
        """λ left and right of each critical value (from the adjacent pieces)."""
        left = {s.end: s.slope for s in self.segments} | {
            u.end: u.slope_end for u in self.unresolved
        }
        right = {s.start: s.slope for s in self.segments}
        right |= {u.start: u.slope_start for u in self.unresolved}
        before = np.array([left[x] for x in self.critical], dtype=np.float64)
        after = np.array([right[x] for x in self.critical], dtype=np.float64)
        return before, after

    def significant(self, min_jump: float = MIN_JUMP) -> list[Breakpoint]:
        """The breakpoints that matter, biggest λ jump first (the full list stays in
        :attr:`critical`).

        Each critical value ``x`` has a relative step ``(λ right − λ left) / max(λ left, 1)``.
        A critical value whose step is at least ``min_jump`` stands alone; a maximal run of
        consecutive critical values (no unresolved interval between them) whose steps are all
        below ``min_jump`` is merged into one :class:`Breakpoint` spanning [first, last], placed
        at its largest step. A merged run is kept only if its total relative jump
        ``(λ after the last − λ before the first) / max(λ before the first, 1)`` reaches
        ``min_jump``: many small steps that add up to a large change stay visible as one.
        """
        if min_jump < 0:
            raise InputError(f"min_jump must be ≥ 0, got {min_jump}")
        if not self.critical:
            return []
        x = np.asarray(self.critical, dtype=np.float64)
        before, after = self.slopes()
        step = (after - before) / np.maximum(before, 1.0)
        ends = {s.start: s.end for s in self.segments}
        groups: list[tuple[int, int]] = []
        start = None
        for i in range(len(x)):
            small = step[i] < min_jump
            if start is not None and not (small and ends.get(x[i - 1]) == x[i]):
                groups.append((start, i - 1))
                start = None
            if not small:
                groups.append((i, i))
            elif start is None:
                start = i
        if start is not None:
            groups.append((start, len(x) - 1))
        out = []
        for a, b in groups:
            jumps = after[a : b + 1] - before[a : b + 1]
            k = a + int(np.argmax(jumps))
            total = float(after[b] - before[a])
            rel = relative_jump(float(before[a]), float(after[b]))
            if a == b or rel >= min_jump:
                if a == b and step[a] < min_jump:
                    continue
                out.append(
                    Breakpoint(
                        at=float(x[k]),
                        lo=float(x[a]),
                        hi=float(x[b]),
                        slope_before=float(before[a]),
                        slope_after=float(after[b]),
                        jump=total,
                        relative_jump=rel,
                        merged=b - a + 1,
                    )
                )
        out.sort(key=lambda p: (-p.jump, p.at))
        return out

    @functools.cached_property
    def _pieces_table(self) -> dict[str, np.ndarray]:
        """Segments and unresolved intervals in order, as arrays (built once)."""
        pieces = sorted(
            [(s.start, s.end, 0, s.slope, s.runtime_start_ns, s.slope) for s in self.segments]
            + [
                (u.start, u.end, 1, u.slope_start, u.runtime_start_ns, u.slope_end)
                for u in self.unresolved
            ]
        )
        return {
            k: np.array([p[i] for p in pieces], dtype=np.float64)
            for i, k in enumerate(("start", "end", "open", "slope", "T", "slope_end"))
        }

    def _locate(self, values) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        x = np.atleast_1d(np.asarray(values, dtype=np.float64))
        name = self.parameter
        bad = (x < self.lo) | (x > self.hi) | ~np.isfinite(x)
        if bad.any():
            raise InputError(
                f"{name} = {x[bad][0]:g} is outside the searched range [{self.lo:g}, {self.hi:g}]"
            )
        table = self._pieces_table
        if not table["start"].size:  # lo == hi: T is known only at lo, from no search
            raise InputError(f"the searched range [{self.lo:g}, {self.hi:g}] has no width")
        i = np.clip(
            np.searchsorted(table["start"], x, side="right") - 1, 0, table["start"].size - 1
        )
        at_hi = x == self.hi
        inside = (table["open"][i] == 1) & (x > table["start"][i]) & ~at_hi
        if inside.any():
            k = int(np.argmax(inside))
            raise InputError(
                f"{name} = {x[k]:g} lies in the unresolved interval [{table['start'][i[k]]:g}, "
                f"{table['end'][i[k]]:g}] (search with a larger budget to know T there)"
            )
        return x, i, table

    def runtime_at(self, values) -> np.ndarray:
        """Exact ``T`` (ns) at each of ``values`` from the linear pieces, without evaluating
        the graph. Raises :class:`InputError` outside [lo, hi] or inside an unresolved
        interval (its ends are known)."""
        x, i, t = self._locate(values)
        T = t["T"][i] + t["slope"][i] * (x - t["start"][i])
        last_open = (x == self.hi) & (t["open"][i] == 1)
        if last_open.any():
            T[last_open] = self.unresolved[-1].runtime_end_ns
        return T

    def slope_at(self, values) -> np.ndarray:
        """Exact λ at each of ``values``: the right slope, as the engine reports it (at a
        critical value, the slope of the piece above), except at ``hi``: the slope left of it.
        Same errors as :meth:`runtime_at`."""
        x, i, t = self._locate(values)
        slope = t["slope"][i].copy()
        last_open = (x == self.hi) & (t["open"][i] == 1)
        slope[last_open] = t["slope_end"][i][last_open]
        return slope

    def as_dict(self) -> dict[str, Any]:
        """The stable ``critical --json`` shape (``*_ns`` for L; G in ns/B)."""
        unit, slope = self.units()
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
            "waves": self.waves,
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
            "unresolved_count": len(self.unresolved),
            f"unresolved_{slope}_jump": self.unresolved_jump,
            "unresolved_relative_jump_bound": self.unresolved_bound,
            "engine": self.engine,
            "params": self.params.as_dict(),
        }

    def units(self) -> tuple[str, str]:
        """The unit suffix of the parameter's values and the name of its slope."""
        unit = "ns" if self.parameter in ("L", "o") else "ns_per_byte"
        return unit, {"L": "lambda_L", "G": "lambda_G", "o": "lambda_o"}[self.parameter]


#: An open interval ``(x0, T(x0), slope right of x0, x1, T(x1), slope left of x1)``.
Interval = tuple[float, float, float, float, float, float]
#: A linear piece ``(x0, x1, slope, T(x0), T(x1))``.
Piece = tuple[float, float, float, float, float]


@dataclass
class Search:
    """What :func:`tangent_breakpoints` found: linear pieces tiling [lo, hi] around the
    intervals left open, and what it cost."""

    pieces: list[Piece]
    open: list[Interval]
    evaluations: int
    waves: int


def _settle(iv: Interval, tiny: float, pieces: list[Piece], min_step: float | None) -> float | None:
    """Resolve ``iv`` without a probe if possible (appending its linear pieces); otherwise
    return the tangent intersection to probe."""
    x0, T0, s0, x1, T1, s1 = iv
    if x1 <= x0:
        return None
    if _same_slope(s0, s1):
        pieces.append((x0, x1, s0, T0, T1))
        return None
    x = min(max((T1 - T0 + s0 * x0 - s1 * x1) / (s0 - s1), x0), x1)
    single = min_step is not None and s1 - s0 < 2 * min_step - _SLOPE_RTOL * max(1.0, abs(s1))
    if single or x - x0 <= tiny or x1 - x <= tiny:
        # One breakpoint (every breakpoint raises the slope by at least ``min_step``, so a
        # smaller rise than two steps is one), or it sits on an end to rounding: either way
        # it is where the tangents meet.
        Tx = T0 + s0 * (x - x0)
        if x > x0:
            pieces.append((x0, x, s0, T0, Tx))
        if x1 > x:
            pieces.append((x, x1, s1, Tx, T1))
        return None
    return x


def _extra_probes(
    work: list[tuple[Interval, float]], wave_width: int, room: int | None, min_step: float | None
) -> list[int]:
    """How many probes besides its tangent intersection each interval of a wave gets: the
    wave is filled up to a multiple of ``wave_width`` (lanes an engine pass evaluates
    anyway), shared in proportion to each interval's λ jump (a bound on the breakpoints it
    holds: at most ``jump / min_step``, so no more probes than that); with a budget, at most
    a quarter of what is left."""
    n = len(work)
    spare = -(-n // wave_width) * wave_width - n
    if room is not None:
        spare = min(spare, room // 4 - n)
    if spare <= 0:
        return [0] * n
    jumps = np.array([max(iv[5] - iv[2], 0.0) for iv, _ in work])
    total = jumps.sum()
    if total <= 0:
        return [0] * n
    counts = np.floor(spare * jumps / total)
    if min_step is not None:
        counts = np.minimum(counts, np.maximum(np.floor(jumps / min_step) - 1, 0))
    return [int(c) for c in counts]


def _spread(iv: Interval, x: float, count: int, tiny: float) -> list[float]:
    """``count`` points of ``iv`` besides ``x``, denser where the tangents bend: at even
    steps of the parameter of the quadratic Bézier curve on the two ends and the tangents'
    intersection, whose slope rises evenly from one end's to the other's."""
    if count <= 0:
        return []
    x0, x1 = iv[0], iv[3]
    t = np.arange(1, count + 1) / (count + 1)
    grid = (1 - t) ** 2 * x0 + 2 * t * (1 - t) * x + t**2 * x1
    return [float(p) for p in grid if abs(p - x) > tiny and x1 - p > tiny and p - x0 > tiny]


def _priority(iv: Interval) -> float:
    return relative_jump(iv[2], iv[5])


def tangent_breakpoints(
    probe: ProbeMany,
    lo: float,
    hi: float,
    max_probes: int | None = None,
    *,
    wave_width: int = WAVE_WIDTH,
    min_jump: float = MIN_JUMP,
    min_step: float | None = None,
    progress: Progress | None = None,
) -> Search:
    """Breakpoints of a convex piecewise-linear function on [lo, hi] by tangent intersection,
    in waves (module doc).

    Each wave probes every open interval at its tangent intersection, plus spare points up
    to a multiple of ``wave_width`` probes (:func:`_extra_probes`, :func:`_spread`). Slopes are sums of integer coefficients (message counts, bytes), so slope
    comparisons are exact up to the rounding of the probe. With ``max_probes``, intervals are
    probed in order of their relative λ jump; those that may hold a breakpoint of relative
    jump ≥ ``min_jump`` first, the others only while the budget left exceeds twice the
    intervals open. What is open when the budget is spent is returned in ``Search.open``.
    ``min_step``, if given, is the least rise of the slope at any breakpoint (1 when every
    path slope is a whole number): an interval whose slope rises by less than twice that
    holds one breakpoint, at its tangent intersection, and needs no probe.
    """
    T, left, right = probe([lo, hi])
    calls, waves = 2, 1
    ends: Interval = (lo, float(T[0]), float(right[0]), hi, float(T[1]), float(left[1]))
    scale = max(abs(lo), abs(hi), 1.0)
    tiny = 1e-12 * scale
    total_jump = max(ends[5] - ends[2], 0.0)
    pieces: list[Piece] = []
    pending: list[Interval] = [ends]
    while pending:
        work = [(iv, x) for iv in pending if (x := _settle(iv, tiny, pieces, min_step)) is not None]
        pending = []
        if not work:
            break
        room = None if max_probes is None else max_probes - calls
        if room is not None:
            if room <= 0:
                pending = [iv for iv, _ in work]
                break
            work.sort(key=lambda w: _priority(w[0]), reverse=True)
            wide = sum(_priority(iv) >= min_jump for iv, _ in work)
            take = min(room, len(work) if 2 * len(work) <= room or not wide else wide)
            pending = [iv for iv, _ in work[take:]]
            work = work[:take]
        counts = _extra_probes(work, wave_width, room, min_step)
        xs: list[float] = []
        plan = []
        for (iv, x), count in zip(work, counts, strict=True):
            extra = _spread(iv, x, count, tiny)
            plan.append((iv, x, len(xs), len(extra)))
            xs.append(x)
            xs.extend(extra)
        Tx, sl, sr = probe(xs)
        calls += len(xs)
        waves += 1
        for iv, x, k, n_extra in plan:
            x0, T0, s0, x1, T1, s1 = iv
            Tv = float(Tx[k])
            tol = 10 * (REL_TOL * max(abs(Tv), 1.0) + ABS_TOL_NS)
            if Tv - (T0 + s0 * (x - x0)) <= tol:
                # T touches both tangents at x: linear on either side (convexity).
                pieces.append((x0, x, s0, T0, Tv))
                pieces.append((x, x1, s1, Tv, T1))
                continue
            # (x, T, slope left of x, slope right of x) at the ends and the probes, in order
            order = sorted(range(k, k + 1 + n_extra), key=lambda j: xs[j])
            knots = [(x0, T0, s0, s0)]
            knots += [(xs[j], float(Tx[j]), float(sl[j]), float(sr[j])) for j in order]
            knots.append((x1, T1, s1, s1))
            for (a, Ta, _, sa), (b, Tb, sb, _) in zip(knots, knots[1:], strict=False):
                pending.append((a, Ta, sa, b, Tb, sb))
        if progress is not None:
            open_jump = sum(max(iv[5] - iv[2], 0.0) for iv in pending)
            done = 1.0 - open_jump / total_jump if total_jump > 0 else 1.0
            progress(min(max(done, 0.0), 1.0), waves, calls, len(pending))
    return Search(pieces=pieces, open=pending, evaluations=calls, waves=waves)


def _assemble(
    lo: float, hi: float, search: Search
) -> tuple[list[float], list[Segment], list[Unresolved]]:
    """Critical values, maximal linear segments and unresolved intervals from the pieces."""
    items = sorted([(p[0], 0, p) for p in search.pieces] + [(iv[0], 1, iv) for iv in search.open])
    critical: list[float] = []
    segments: list[Segment] = []
    unresolved: list[Unresolved] = []
    current: list | None = None  # [start, end, slope, T_start, T_end] of the growing segment
    prev_slope: float | None = None  # λ left of the current position
    for _, is_open, item in items:
        if is_open:
            x0, T0, s0, x1, T1, s1 = item
            if current is not None:
                segments.append(Segment(*current[:2], current[2], current[3], current[4]))
                current = None
            if prev_slope is not None and x0 > lo and not _same_slope(prev_slope, s0):
                critical.append(x0)
            unresolved.append(Unresolved(x0, x1, s0, s1, T0, T1))
            prev_slope = s1
            continue
        a, b, slope, Ta, Tb = item
        if current is not None and _same_slope(current[2], slope):
            current[1], current[4] = b, Tb
            continue
        if current is not None:
            segments.append(Segment(*current[:2], current[2], current[3], current[4]))
        if prev_slope is not None and a > lo and not _same_slope(prev_slope, slope):
            critical.append(a)
        current = [a, b, slope, Ta, Tb]
        prev_slope = slope
    if current is not None:
        segments.append(Segment(*current[:2], current[2], current[3], current[4]))
    return critical, segments, unresolved


def probe_breakpoints(
    probe: ProbeMany,
    lo: float,
    hi: float,
    *,
    max_probes: int | None = None,
    wave_width: int = 1,
) -> tuple[list[float], bool]:
    """The breakpoints in [lo, hi] of any convex piecewise-linear function given by ``probe``
    (values and one-sided slopes, :data:`ProbeMany`), by the tangent search of
    :func:`critical_latencies`, and whether all were found (``max_probes`` may end the search
    first; the breakpoints found are exact either way)."""
    critical, _, unresolved = _assemble(
        lo, hi, tangent_breakpoints(probe, lo, hi, max_probes, wave_width=wave_width)
    )
    return critical, not unresolved


#: Edge visits (evaluations × event-graph edges) of an ``auto`` budget: one to two minutes of
#: batched sweeps on the 2-core benchmark machine (measured: 381 evaluations in 92 s on the
#: 10^7-vertex stencil, 3.2·10^7 event edges).
AUTO_EDGE_VISITS = 1.2e10
#: The smallest ``auto`` budget.
AUTO_MIN_EVALUATIONS = 101


def exact_curve(crit: CriticalLatencies):
    """``T`` and its right derivative at every end of the exact pieces of ``crit``, by the
    parameter: ``T`` is linear and the slope constant between two consecutive rows, so this is
    ``T`` over the whole range with no further evaluation. Across an interval the search left
    unresolved (a budget) the row at its start holds the exact ``T`` and slope there and the
    straight line to the next row is an upper bound (``T`` is convex). Columns as a sweep's:
    ``L_ns`` (``o_ns``, ``G_ns_per_byte``), ``runtime_ns``, ``lambda_L`` (``lambda_o``,
    ``lambda_G``) and, for L, ``rho_L``."""
    import pandas as pd

    column, slope = {"L": ("L_ns", "lambda_L"), "o": ("o_ns", "lambda_o")}.get(
        crit.parameter, ("G_ns_per_byte", "lambda_G")
    )
    at = [s.start for s in crit.segments] + [u.start for u in crit.unresolved]
    T = [s.runtime_start_ns for s in crit.segments] + [u.runtime_start_ns for u in crit.unresolved]
    lam = [s.slope for s in crit.segments] + [u.slope_start for u in crit.unresolved]
    ends = [(s.end, s.runtime_end_ns, s.slope) for s in crit.segments]
    ends += [(u.end, u.runtime_end_ns, u.slope_end) for u in crit.unresolved]
    if ends:  # the range's end, whether the last piece is resolved or not
        end, runtime, slope_end = max(ends, key=lambda e: e[0])
        at.append(end)
        T.append(runtime)
        lam.append(slope_end)
    frame = pd.DataFrame({column: at, "runtime_ns": T, slope: lam}).sort_values(column)
    frame = frame.drop_duplicates(column, keep="first").reset_index(drop=True)
    if crit.parameter == "L":
        runtime = frame["runtime_ns"].to_numpy(float)
        frame["rho_L"] = np.divide(
            frame["L_ns"].to_numpy(float) * frame["lambda_L"].to_numpy(float),
            runtime,
            out=np.zeros(len(frame)),
            where=runtime > 0,
        )
    return frame


def evaluation_budget(graph: ExecutionGraph, params: LogGPS) -> int:
    """An evaluation budget of one to two minutes for :func:`critical_latencies` on ``graph``:
    unlimited in practice up to ~10^5 vertices, ~2,700 at 10^6, ~270 at 10^7 (noisy stencil:
    there it leaves every interval's relative λ jump below 0.24 %, so every breakpoint whose
    λ_L jumps by more was found; measured, 6 waves)."""
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
    min_jump: float = MIN_JUMP,
    wave_width: int | None = None,
    progress: Progress | None = None,
) -> CriticalLatencies:
    """Every critical value of ``parameter`` (default L) in [lo, hi], with λ on each piece.

    ``max_evaluations`` bounds the search (at least 2; ``None``: find them all); with a budget,
    intervals that may hold a breakpoint whose relative λ jump is at least ``min_jump`` are
    refined first (module doc, :func:`evaluation_budget`). ``wave_width`` is the number of
    probes per wave while few intervals are open (default: what the graph engine's lanes
    evaluate for the cost of one pass per core,
    :meth:`~llamp.lp.engine.GraphEngine.wave_width`, at most :data:`WAVE_WIDTH`; 1 with an
    LP, which solves one value at a time). ``progress`` is called after each wave.
    """
    if parameter not in PARAMETER_COLUMNS:
        raise InputError(f"cannot search critical values of {parameter!r}: choose L, G or o")
    if not 0.0 <= lo <= hi:
        raise InputError(f"interval [{lo}, {hi}] must satisfy 0 ≤ from ≤ to")
    if max_evaluations is not None and max_evaluations < 2:
        raise InputError(f"max_evaluations must be at least 2 (both ends), got {max_evaluations}")
    if wave_width is not None and wave_width < 1:
        raise InputError(f"wave_width must be at least 1, got {wave_width}")
    chosen = resolve_engine(engine)
    if wave_width is None:
        wave_width = engine_for(graph).wave_width(params) if chosen == "graph" else 1
    probe = _probe(graph, params, parameter, chosen)
    # one-sided slopes are exact only with the graph engine (an LP gives any subgradient)
    step = _least_step(graph, params, parameter) if chosen == "graph" else None
    search = tangent_breakpoints(
        probe,
        lo,
        hi,
        max_evaluations,
        wave_width=wave_width,
        min_jump=min_jump,
        min_step=step,
        progress=progress,
    )
    critical, segments, unresolved = _assemble(lo, hi, search)
    return CriticalLatencies(
        parameter=parameter,
        lo=lo,
        hi=hi,
        critical=critical,
        segments=segments,
        evaluations=search.evaluations,
        engine=chosen,
        params=params,
        unresolved=unresolved,
        max_evaluations=max_evaluations,
        waves=search.waves,
    )


def _least_step(graph: ExecutionGraph, params: LogGPS, parameter: str) -> float | None:
    """1 if every edge's coefficient of ``parameter`` is a whole number (message counts for
    L and o, bytes for G), so every path slope is one and a breakpoint raises λ by at least
    1; otherwise ``None``."""
    from llamp.lp.engine import DIRECTIONS

    ev = engine_for(graph).events(params)
    col = DIRECTIONS[parameter]
    whole = np.array_equal(ev.fixed[:, col], np.rint(ev.fixed[:, col]))
    scaled = ev.scaled[:, col]
    if whole and np.any(scaled != 0):
        per_edge = scaled[ev.pattern]
        mask = per_edge != 0
        coef = ev.value[mask] * per_edge[mask]
        whole = np.array_equal(coef, np.rint(coef))
    return 1.0 if whole else None


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
