"""Exact joint tolerance regions: ``{(u, v) : T(u, v) ≤ (1+x)·T0}`` over two variables.

``T`` is the longest path of the event graph, whose edge weights are affine in ``(L, G, o)``
(and in the variables of a :class:`~llamp.lp.weighted.MessageModel`: link classes of a
topology, the two levels of a machine), so over any two variables ``u, v``::

    T(u, v) = max over paths p of  a_p + b_p·u + c_p·v        (b_p, c_p ≥ 0)

is convex and piecewise linear (LLAMP Eq. 3/4 in two dimensions), and the region of a bound
``B`` inside a box ``[0, u_max] × [0, v_max]`` is a convex polygon: the box cut by the
half-planes ``a_p + b_p·u + c_p·v ≤ B`` of the paths that reach ``B`` on it.

It is computed exactly by outer approximation (Kelley's cutting planes in the plane): start
from the box; evaluate ``T`` at each vertex of the current polygon ``P ⊇ region``. A vertex
with ``T ≤ B`` is a vertex of the region (an extreme point of ``P`` that lies in the region
``⊆ P``). At a vertex with ``T > B`` one critical path is followed back from the sink and its
affine length ``(a_p, b_p, c_p)`` summed along it: every path is a lower bound of ``T``, so
``a_p + b_p·u + c_p·v ≤ B`` holds on the whole region and cuts the vertex off. There are
finitely many paths, so the loop ends; then every vertex is verified by an evaluation and
every edge lies on the box or on one path's level set, along which ``T`` *is* that path's
length: ``(b_p, c_p)`` are ``λ_u, λ_v`` on that edge (for L and G: messages and bytes on the
critical path). Pieces found for one level are cuts for every level (one ``T``), so the levels
share them; the vertices of a wave are evaluated together, one sweep per core.

Why one path and not the engine's two partial derivatives: at a kink the right derivatives
along ``u`` and along ``v`` may come from different paths, and the plane they span is not a
lower bound of ``T`` (it overestimates ``T`` towards larger ``u`` and ``v``). The 1-D analogue
is the tangent walk of :mod:`llamp.lp.critical` and :mod:`llamp.lp.tolerance`.

Without a box, each axis is first walked to its intercept at the largest bound (the other
variable at 0; Newton steps from far out, one path per step, as
:func:`llamp.lp.tolerance.max_parameter_within`): ``T`` is non-decreasing in every variable,
so the regions lie inside ``[0, intercept_u] × [0, intercept_v]``, and the box is 1.25 times
that (an axis that no path pays is unbounded: its box falls back to :data:`DEFAULT_SPAN`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from llamp.config import DEFAULT_TOLERANCES, parse_duration_ns, parse_gap_ns_per_byte
from llamp.errors import InputError, LlampError
from llamp.graph import ExecutionGraph
from llamp.lp.engine import WORKERS, engine_for
from llamp.lp.event_graph import COEF_G, COEF_L, COEF_O, EventGraph
from llamp.lp.kernels import ABS_TOL_NS, REL_TOL, affine_lanes, ring_size
from llamp.lp.weighted import MessageModel, edge_weights
from llamp.params import LogGPS

#: The homogeneous LogGPS variables a region may span, and their event-graph columns.
PARAMETERS = {"L": COEF_L, "G": COEF_G, "o": COEF_O}
#: Units of a variable: ns for latencies and overheads, ns/B for gaps.
NS, NS_PER_BYTE = "ns", "ns_per_byte"
#: Where an axis counts as unbounded when walking to its intercept (as
#: :data:`llamp.lp.tolerance.UNBOUNDED_AT`).
FAR = {NS: 1e15, NS_PER_BYTE: 1e9}
#: Box side of an unbounded axis when no box is given (the ``sweep`` defaults: 100 µs, 1 ns/B).
DEFAULT_SPAN = {NS: 100_000.0, NS_PER_BYTE: 1.0}
#: Margin of the automatic box over the largest intercept.
BOX_MARGIN = 1.25
#: Points per pass of :func:`~llamp.lp.kernels.affine_lanes`. Measured on the 10^5-vertex
#: noisy stencil (CPU time of one pass, 2-core machine under load 5–8): 4.9 ms for one point,
#: 16 ms for 8 (2.0 ms per point), 40–51 ms for 32 (1.2–1.6), 82 ms for 64 (1.3): 32 it is,
#: a ring of 1,024 events × 4 rows × 32 lanes × 8 B = 1 MB.
LANES = 32
#: Bytes of lane state one pass may hold (a ring of events, 4 rows of 8 B per lane).
RING_BYTES = 1 << 26
#: Evaluations after which a search without a budget gives up (a safety net against a
#: search that does not converge: the uniform benchmark stencils take ~15 evaluations, the
#: noisy 10^5-vertex one ~1,000 for three levels).
MAX_EVALUATIONS = 100_000


def _tol(bound_ns: float) -> float:
    """``T ≤ bound + _tol`` counts as on or inside the bound (as the 1-D tolerance walk)."""
    return 10 * (REL_TOL * abs(bound_ns) + ABS_TOL_NS)


# ---------------------------------------------------------------------- axes and oracle
@dataclass(frozen=True)
class Axis:
    """One variable of the region: its name, baseline value and unit (``ns`` or ``ns_per_byte``)."""

    name: str
    value: float
    unit: str

    @property
    def key(self) -> str:
        """JSON/DataFrame column of the variable: ``L_ns``, ``G_ns_per_byte``, ``core_ns``…"""
        return f"{self.name}_{self.unit}"

    def parse(self, text: str | float, what: str = "") -> float:
        """A value of this variable from user text: a duration (``3us``) for ns, a gap or a
        bandwidth (``0.01ns/B``, ``100Gb/s``) for ns/B; finite and ≥ 0."""
        value = parse_gap_ns_per_byte(text) if self.unit == NS_PER_BYTE else parse_duration_ns(text)
        if not (math.isfinite(value) and value >= 0):
            raise InputError(f"{what or self.name}: {text!r} is not finite and ≥ 0")
        return value


def parameter_axis(name: str, params: LogGPS) -> Axis:
    """The axis of LogGPS parameter ``name`` (L, G or o) at its configured value."""
    if name not in PARAMETERS:
        raise InputError(
            f"unknown variable {name!r}: choose two of L, G, o (or link-class variables "
            "with a topology or a two-level machine)"
        )
    return Axis(name, float(getattr(params, name)), NS_PER_BYTE if name == "G" else NS)


def parse_design(text: str, axes: tuple[Axis, Axis]) -> tuple[str, tuple[float, float]]:
    """``"cheap switch = 3.4us, 0.009ns/B"`` → ``("cheap switch", (3400.0, 0.009))``."""
    name, sep, rest = text.partition("=")
    parts = [x.strip() for x in rest.split(",")]
    if not sep or not name.strip() or len(parts) != 2 or not all(parts):
        raise InputError(
            f"design {text!r} is not NAME = {axes[0].name}, {axes[1].name} "
            "(e.g. cheap = 3.4us, 0.009ns/B)"
        )
    name = name.strip()
    u = axes[0].parse(parts[0], f"design {name}")
    v = axes[1].parse(parts[1], f"design {name}")
    return name, (u, v)


@dataclass(frozen=True)
class LinkVariables:
    """Variables of a per-message model (link classes, two-level machine): the model, the
    baseline value of each variable (NaN: not a single value, e.g. ``l_wire`` over classes of
    different latencies) and each variable's unit, plus a description for the output."""

    model: MessageModel
    values: Mapping[str, float]
    units: Mapping[str, str]
    source: str

    def axis(self, name: str) -> Axis:
        if name not in self.model.names:
            raise InputError(
                f"unknown variable {name!r} of {self.source}: choose two of "
                f"{', '.join(self.model.names)}"
            )
        value = float(self.values[name])
        if not math.isfinite(value):
            raise InputError(
                f"{name} has no single value in {self.source} (its parts differ): choose a "
                "variable with one value"
            )
        return Axis(name, value, self.units[name])


class Plane:
    """``T`` over two variables: edge weights ``w = c0 + u·du + v·dv`` (``c0``: every other
    variable at its configured value, both axes at 0). Points are evaluated in lanes of
    :func:`llamp.lp.kernels.affine_lanes`, which carries one critical path's affine length
    along with ``T``."""

    def __init__(self, events: EventGraph, c0: np.ndarray, du: np.ndarray, dv: np.ndarray):
        self.events = events
        self.c0 = np.ascontiguousarray(c0, dtype=np.float64)
        self.du = np.ascontiguousarray(du, dtype=np.float64)
        self.dv = np.ascontiguousarray(dv, dtype=np.float64)
        self._mask: int | None = None

    @property
    def mask(self) -> int:
        """Ring mask of the lane kernels (:func:`~llamp.lp.kernels.ring_size` − 1), found once."""
        if self._mask is None:
            self._mask = ring_size(self.events.in_ptr, self.events.src) - 1
        return self._mask

    def width(self) -> int:
        """Points one pass evaluates: :data:`LANES`, fewer where the ring (4 rows of 8 B per
        lane and event) would pass :data:`RING_BYTES`."""
        return int(max(1, min(LANES, RING_BYTES // (32 * (self.mask + 1)))))

    def wave(self) -> int:
        """Points for about the cost of one pass on each core: what a round of the search
        hands :meth:`pieces` at once when it can choose."""
        return self.width() * WORKERS

    @classmethod
    def of_parameters(cls, graph: ExecutionGraph, params: LogGPS, axes: tuple[str, str]) -> Plane:
        """Two of the homogeneous parameters L, G, o."""
        ev, _, _, w = engine_for(graph).critical_events(params)
        du, dv = (ev.coef[:, PARAMETERS[a]] for a in axes)
        c0 = w - getattr(params, axes[0]) * du - getattr(params, axes[1]) * dv
        return cls(ev, c0, du, dv)

    @classmethod
    def of_model(
        cls,
        graph: ExecutionGraph,
        params: LogGPS,
        variables: LinkVariables,
        axes: tuple[Axis, Axis],
    ) -> Plane:
        """Two variables of a per-message model."""
        ev = engine_for(graph).critical_events(params)[0]
        w, dw = edge_weights(ev, params, variables.model)
        j = [variables.model.names.index(a.name) for a in axes]
        du, dv = dw[:, j[0]], dw[:, j[1]]
        return cls(ev, w - axes[0].value * du - axes[1].value * dv, du, dv)

    def pieces(
        self, points: Sequence[tuple[float, float]]
    ) -> list[tuple[float, float, float, float]]:
        """``(T, a, b, c)`` at each point: ``T`` and the affine length ``a + b·u + c·v`` of one
        critical path there (a lower bound of ``T`` everywhere, equal to it at the point).

        Points go through :func:`~llamp.lp.kernels.affine_lanes` up to :meth:`width` per
        pass, the passes as even as can be and spread over the machine's cores."""
        ev = self.events
        if ev.num_events == 0:
            return [(0.0, 0.0, 0.0, 0.0)] * len(points)
        if not points:
            return []
        us = np.array([p[0] for p in points], dtype=np.float64)
        vs = np.array([p[1] for p in points], dtype=np.float64)
        passes = -(-len(points) // self.width())
        passes = min(len(points), -(-passes // WORKERS) * WORKERS)
        per = -(-len(points) // passes)
        chunks = [slice(s, min(s + per, len(points))) for s in range(0, len(points), per)]
        T = np.empty(len(points))
        path = np.empty((3, len(points)))

        def run(chunk: slice) -> None:
            T[chunk], path[:, chunk] = affine_lanes(
                ev.in_ptr, ev.src, self.c0, self.du, self.dv, us[chunk], vs[chunk], self.mask
            )

        if len(chunks) > 1 and WORKERS > 1:
            with ThreadPoolExecutor(max_workers=min(WORKERS, len(chunks))) as pool:
                list(pool.map(run, chunks))
        else:
            for chunk in chunks:
                run(chunk)
        return [
            (float(T[j]), float(path[0, j]), float(path[1, j]), float(path[2, j]))
            for j in range(len(points))
        ]

    def runtime(self, u: float, v: float) -> float:
        """``T`` at ``(u, v)``."""
        return self.pieces([(u, v)])[0][0]

    def runtime_grid(
        self,
        us: Sequence[float],
        vs: Sequence[float],
        progress: Callable[[float], None] | None = None,
    ) -> np.ndarray:
        """``T`` on the grid ``us × vs`` (rows: ``vs``, columns: ``us``), in lanes as
        :meth:`pieces`; ``progress(fraction of the grid done)`` after every few passes."""
        us = np.asarray(us, dtype=np.float64)
        vs = np.asarray(vs, dtype=np.float64)
        uu, vv = (a.ravel() for a in np.meshgrid(us, vs))
        points = list(zip(uu.tolist(), vv.tolist(), strict=True))
        T = np.zeros(len(points))
        step = 4 * self.wave()
        for s in range(0, len(points), step):
            T[s : s + step] = [p[0] for p in self.pieces(points[s : s + step])]
            if progress is not None:
                progress(min(s + step, len(points)) / len(points))
        return T.reshape(vs.size, us.size)


# ---------------------------------------------------------------------- polygons
#: Box sides, as ids of the lines of a polygon (cut lines follow, one per path).
U_MIN, V_MIN, U_MAX, V_MAX = 0, 1, 2, 3
SIDES = 4


@dataclass
class _Polygon:
    """A convex polygon, counter-clockwise: vertex ``i``, then edge ``i`` (on line
    ``lines[i]``) to vertex ``i+1``. ``runtime[i]``: ``T`` at the vertex once an evaluation
    put it inside the bound (``None``: not verified yet)."""

    u: list[float]
    v: list[float]
    lines: list[int]
    runtime: list[float | None]
    scale: tuple[float, float]

    @classmethod
    def box(cls, umax: float, vmax: float) -> _Polygon:
        return cls(
            [0.0, umax, umax, 0.0],
            [0.0, 0.0, vmax, vmax],
            [V_MIN, U_MAX, V_MAX, U_MIN],
            [None] * 4,
            (max(umax, 1e-300), max(vmax, 1e-300)),
        )

    def clip(self, excess: list[float], eps: float, line: int) -> bool:
        """Keep the part where ``excess ≤ eps`` (``excess``: an affine function's value at
        each vertex); new vertices lie on ``line``. False if nothing was cut off."""
        n = len(self.u)
        out = [x > eps for x in excess]
        if not any(out):
            return False
        if all(out):
            raise LlampError("joint tolerance region: a cut removed the whole polygon")
        U: list[float] = []
        V: list[float] = []
        lines: list[int] = []
        runtime: list[float | None] = []

        def cross(i: int, j: int) -> tuple[float, float]:
            t = min(max(excess[i] / (excess[i] - excess[j]), 0.0), 1.0)
            return self.u[i] + t * (self.u[j] - self.u[i]), self.v[i] + t * (self.v[j] - self.v[i])

        for i in range(n):
            j = (i + 1) % n
            if not out[i]:
                U.append(self.u[i])
                V.append(self.v[i])
                lines.append(self.lines[i])
                runtime.append(self.runtime[i])
                if out[j]:
                    a, b = cross(i, j)
                    U.append(a)
                    V.append(b)
                    lines.append(line)
                    runtime.append(None)
            elif not out[j]:
                a, b = cross(i, j)
                U.append(a)
                V.append(b)
                lines.append(self.lines[i])
                runtime.append(None)
        self.u, self.v, self.lines, self.runtime = U, V, lines, runtime
        self._drop_empty_edges()
        return True

    def final_share(self) -> float:
        """Share of the boundary that is final: the angle, seen from the origin in box units,
        of the edges whose two ends are verified (on the region's boundary for good), over the
        quarter turn that all edges span (the origin is a vertex: ``T`` is non-decreasing)."""
        su, sv = self.scale
        u = np.asarray(self.u) / su
        v = np.asarray(self.v) / sv
        angle = np.arctan2(v, u)
        origin = (u <= 0.0) & (v <= 0.0)
        nxt = np.roll(np.arange(u.size), -1)
        span = np.where(origin | origin[nxt], 0.0, np.maximum(angle[nxt] - angle, 0.0))
        verified = np.array([T is not None for T in self.runtime])
        return float(span[verified & verified[nxt]].sum() / (math.pi / 2))

    def _drop_empty_edges(self) -> None:
        """A cut through a vertex leaves a zero-length edge: drop it, keeping the vertex that
        was already verified."""
        k = 0
        su, sv = self.scale
        while k < len(self.u) and len(self.u) > 3:
            j = (k + 1) % len(self.u)
            if (
                abs(self.u[k] - self.u[j]) <= 1e-13 * su
                and abs(self.v[k] - self.v[j]) <= 1e-13 * sv
            ):
                keep = self.runtime[k] if self.runtime[k] is not None else self.runtime[j]
                del self.u[j], self.v[j], self.runtime[j], self.lines[k]
                if j < k:
                    k -= 1
                self.runtime[k] = keep
                continue
            k += 1


@dataclass(frozen=True)
class Piece:
    """The length ``a + b·u + c·v`` of one path (``b, c``: its λ along the two axes)."""

    a: float
    b: float
    c: float

    def excess(self, bound_ns: float, u: float, v: float) -> float:
        return self.a + self.b * u + self.c * v - bound_ns


class _Search:
    """Shared state of one region computation: the pieces found and the evaluations spent."""

    def __init__(
        self,
        plane: Plane,
        max_evaluations: int | None,
        progress: Callable[[float | None, int], None] | None = None,
    ):
        self.plane = plane
        self.progress = progress
        #: Share of the regions' boundaries known to be final (``None``: before the polygons).
        self.share: float | None = None
        self.pieces: list[Piece] = []
        self._index: dict[tuple[float, float, float], int] = {}
        self.evaluations = 0
        self.max_evaluations = MAX_EVALUATIONS if max_evaluations is None else max_evaluations
        self._hard_cap = max_evaluations is None

    def room(self) -> int:
        return max(0, self.max_evaluations - self.evaluations)

    def evaluate(self, points: list[tuple[float, float]]) -> list[tuple[float, int]]:
        """``T`` and (the id of) one critical path's piece at each point."""
        if self._hard_cap and self.evaluations + len(points) > self.max_evaluations:
            raise LlampError(
                f"joint tolerance region: more than {self.max_evaluations} evaluations "
                "without converging (pass max_evaluations to stop early with a partial result)"
            )
        raw = []
        step = 4 * self.plane.wave()  # a report (and a chance to cancel) every few passes
        for s in range(0, len(points), step):
            raw += self.plane.pieces(points[s : s + step])
            self.evaluations += min(step, len(points) - s)
            if self.progress is not None:
                self.progress(self.share, self.evaluations)
        out = []
        for T, a, b, c in raw:
            key = (round(a, 6), b, c)
            if key not in self._index:
                self._index[key] = len(self.pieces)
                self.pieces.append(Piece(a, b, c))
            out.append((T, self._index[key]))
        return out

    def report(self, polygons: list[_Polygon]) -> None:
        """Progress: the mean over the levels of :meth:`_Polygon.final_share`."""
        self.share = sum(p.final_share() for p in polygons) / len(polygons)
        if self.progress is not None:
            self.progress(self.share, self.evaluations)


def _intercepts(
    search: _Search, axes: tuple[Axis, Axis], bound_ns: float, which: tuple[bool, bool]
) -> list[float]:
    """Largest ``u`` with ``T(u, 0) ≤ bound`` (and the same for ``v``), ``inf`` if no path
    pays the variable: Newton steps from far out along each axis, one path per step."""
    at = [FAR[axes[0].unit] if which[0] else None, FAR[axes[1].unit] if which[1] else None]
    found = [math.inf, math.inf]
    tol = _tol(bound_ns)
    while any(x is not None for x in at):
        active = [k for k in (0, 1) if at[k] is not None]
        if not search._hard_cap and search.room() < len(active):
            # Budget spent: the walks come from the right, so each point reached is at or
            # beyond its intercept (the box still holds the regions unless it is still far).
            for k in active:
                found[k] = math.inf if at[k] == FAR[axes[k].unit] else at[k]
            break
        points = [(at[k], 0.0) if k == 0 else (0.0, at[k]) for k in active]
        for k, (T, pid) in zip(active, search.evaluate(points), strict=True):
            x, piece = at[k], search.pieces[pid]
            slope = piece.b if k == 0 else piece.c
            if T <= bound_ns + tol:
                found[k] = math.inf if x == FAR[axes[k].unit] else x
                at[k] = None
            elif slope <= 0.0:
                raise LlampError(
                    f"T = {T:g} ns exceeds the bound {bound_ns:g} ns at {axes[k].name} = {x:g} "
                    "on a path that does not depend on it"
                )
            else:
                nxt = max((bound_ns - piece.a) / slope, 0.0)
                if not nxt < x:
                    raise LlampError(
                        f"joint tolerance region: the walk along {axes[k].name} stalled"
                    )
                at[k] = nxt
    return found


def _solve(
    search: _Search, box: tuple[float, float], bounds: list[float]
) -> tuple[list[_Polygon], bool]:
    """The polygon of every bound inside ``box`` (outer approximation, see the module doc).
    Returns the polygons and whether every vertex is verified (False: budget spent)."""
    polys = [_Polygon.box(*box) for _ in bounds]
    # Pieces each polygon still has to be cut with: all known ones at first, then the new
    # ones and those found again at a vertex created after their cut (float rounding).
    pending: list[set[int]] = [set(range(len(search.pieces))) for _ in bounds]
    known = len(search.pieces)
    while True:
        for poly, B, cuts in zip(polys, bounds, pending, strict=True):
            eps = _tol(B)
            for pid in sorted(cuts):
                piece = search.pieces[pid]
                excess = [piece.excess(B, u, v) for u, v in zip(poly.u, poly.v, strict=True)]
                poly.clip(excess, eps, SIDES + pid)
            cuts.clear()
        search.report(polys)
        todo: dict[tuple[float, float], list[tuple[int, int]]] = {}
        for li, poly in enumerate(polys):
            for i, T in enumerate(poly.runtime):
                if T is None:
                    todo.setdefault((poly.u[i], poly.v[i]), []).append((li, i))
        if not todo:
            return polys, True
        points = list(todo)
        if not search._hard_cap:
            points = points[: search.room()]
            if not points:
                return polys, False
        progress = False
        for point, (T, pid) in zip(points, search.evaluate(points), strict=True):
            piece = search.pieces[pid]
            for li, i in todo[point]:
                B = bounds[li]
                if T <= B + _tol(B):
                    polys[li].runtime[i] = T
                    progress = True
                elif piece.excess(B, *point) > _tol(B):
                    pending[li].add(pid)
                    progress = True  # the next clip removes the vertex
                else:
                    raise LlampError(
                        f"joint tolerance region: T = {T!r} ns > {B!r} ns at {point} but the "
                        "critical path found there does not exceed the bound"
                    )
        for cuts in pending:
            cuts.update(range(known, len(search.pieces)))
        known = len(search.pieces)
        if not progress:  # pragma: no cover - defensive
            raise LlampError("joint tolerance region: no progress")


# ---------------------------------------------------------------------- results
@dataclass(frozen=True)
class RegionEdge:
    """Edge ``i`` of a region, from vertex ``i`` to ``i+1``: on the bound (``T`` equals one
    path's length ``constant_ns + λ_u·u + λ_v·v`` along it) or on a side of the box."""

    kind: str  # "bound" | "box"
    side: str | None = None  # box: "L_min", "G_max", …
    lambda_u: float | None = None
    lambda_v: float | None = None
    constant_ns: float | None = None


@dataclass(frozen=True, eq=False)
class RegionLevel:
    """The region ``T ≤ (1+x)·T0`` inside the box: vertices counter-clockwise from the origin.

    ``runtime_ns[i]``: ``T`` evaluated at vertex ``i`` (NaN if the search stopped before
    verifying it: the vertex is then outside or on the region, which lies inside the polygon).
    ``on_bound[i]``: ``T = bound`` there (else a corner of the box inside the region).
    ``unbounded``: the axes along which the region reaches the far side of the box, i.e. it
    goes on beyond the box.
    """

    x: float
    bound_ns: float
    u: np.ndarray
    v: np.ndarray
    runtime_ns: np.ndarray
    on_bound: np.ndarray
    edges: tuple[RegionEdge, ...]
    unbounded: tuple[str, ...]
    complete: bool

    def contains(self, u: float, v: float) -> bool:
        """True if ``(u, v)`` lies in the polygon (boundary included, relative 1e-12)."""
        n = self.u.size
        scale = (
            max(float(np.abs(self.u).max(initial=0.0)), 1e-300),
            max(float(np.abs(self.v).max(initial=0.0)), 1e-300),
        )
        for i in range(n):
            j = (i + 1) % n
            eu, ev = (self.u[j] - self.u[i]) / scale[0], (self.v[j] - self.v[i]) / scale[1]
            pu, pv = (u - self.u[i]) / scale[0], (v - self.v[i]) / scale[1]
            if eu * pv - ev * pu < -1e-12:
                return False
        return True


def level_key(x: float) -> str:
    """Column suffix of level ``x``: ``1pct`` for 0.01, ``0_5pct`` for 0.005."""
    return f"{x * 100:g}".replace(".", "_") + "pct"


@dataclass(frozen=True, eq=False)
class Region:
    """Joint x% tolerance regions over two variables (one :class:`RegionLevel` per x)."""

    axes: tuple[Axis, Axis]
    baseline_ns: float
    box: tuple[float, float]
    levels: tuple[RegionLevel, ...]
    evaluations: int
    pieces: int
    source: str
    params: LogGPS = field(repr=False)
    plane: Plane = field(repr=False)

    @property
    def complete(self) -> bool:
        return all(level.complete for level in self.levels)

    def level(self, x: float) -> RegionLevel:
        for level in self.levels:
            if math.isclose(level.x, x, rel_tol=1e-12, abs_tol=1e-15):
                return level
        raise InputError(f"no region for x = {x:g}: computed {[lv.x for lv in self.levels]}")

    def runtime(self, u: float, v: float) -> float:
        """``T`` at ``(u, v)`` (every other variable at its configured value)."""
        return self.plane.runtime(float(u), float(v))

    def designs(self, points: Mapping[str, tuple[float, float]]) -> pd.DataFrame:
        """Named designs ``name → (u, v)``, evaluated: ``design``, the two axis columns,
        ``runtime_ns``, ``slowdown`` (``T/T0 − 1``), and per level ``slack_<x>pct_ns`` (bound
        − T: positive inside) and ``inside_<x>pct``."""
        rows = []
        for name, (u, v) in points.items():
            T = self.runtime(u, v)
            row: dict[str, Any] = {
                "design": name,
                self.axes[0].key: float(u),
                self.axes[1].key: float(v),
                "runtime_ns": T,
                "slowdown": T / self.baseline_ns - 1.0 if self.baseline_ns > 0 else 0.0,
            }
            for level in self.levels:
                key = level_key(level.x)
                row[f"slack_{key}_ns"] = level.bound_ns - T
                row[f"inside_{key}"] = bool(T <= level.bound_ns + _tol(level.bound_ns))
            rows.append(row)
        return pd.DataFrame(rows)

    def as_dict(self) -> dict[str, Any]:
        """The stable ``region --json`` shape."""
        ku, kv = (a.key for a in self.axes)
        nu, nv = (a.name for a in self.axes)
        regions = []
        for level in self.levels:
            vertices = [
                {
                    ku: float(level.u[i]),
                    kv: float(level.v[i]),
                    "runtime_ns": None
                    if math.isnan(level.runtime_ns[i])
                    else float(level.runtime_ns[i]),
                    "on_bound": bool(level.on_bound[i]),
                }
                for i in range(level.u.size)
            ]
            edges = []
            for i, e in enumerate(level.edges):
                item: dict[str, Any] = {"from": i, "to": (i + 1) % len(level.edges), "kind": e.kind}
                if e.kind == "box":
                    item["side"] = e.side
                else:
                    item[f"lambda_{nu}"] = e.lambda_u
                    item[f"lambda_{nv}"] = e.lambda_v
                    item["constant_ns"] = e.constant_ns
                edges.append(item)
            regions.append(
                {
                    "x": level.x,
                    "bound_ns": level.bound_ns,
                    "vertices": vertices,
                    "edges": edges,
                    "unbounded": list(level.unbounded),
                    "complete": level.complete,
                }
            )
        return {
            "axes": [{"name": a.name, "unit": a.unit, "baseline": a.value} for a in self.axes],
            "baseline_ns": self.baseline_ns,
            "box": {ku: [0.0, self.box[0]], kv: [0.0, self.box[1]]},
            "regions": regions,
            "evaluations": self.evaluations,
            "pieces": self.pieces,
            "complete": self.complete,
            "source": self.source,
            "params": self.params.as_dict(),
        }


def _level(
    poly: _Polygon, x: float, B: float, axes: tuple[Axis, Axis], pieces: list[Piece], done: bool
) -> RegionLevel:
    n = len(poly.u)
    su, sv = poly.scale
    start = min(range(n), key=lambda i: (poly.u[i] / su + poly.v[i] / sv, poly.v[i]))
    order = [(start + k) % n for k in range(n)]
    runtime = np.array([np.nan if poly.runtime[i] is None else poly.runtime[i] for i in order])
    edges = []
    sides = {
        U_MIN: f"{axes[0].name}_min",
        V_MIN: f"{axes[1].name}_min",
        U_MAX: f"{axes[0].name}_max",
        V_MAX: f"{axes[1].name}_max",
    }
    for i in order:
        line = poly.lines[i]
        if line < SIDES:
            edges.append(RegionEdge("box", side=sides[line]))
        else:
            p = pieces[line - SIDES]
            edges.append(RegionEdge("bound", lambda_u=p.b, lambda_v=p.c, constant_ns=p.a))
    unbounded = tuple(
        name for name, side in ((axes[0].name, U_MAX), (axes[1].name, V_MAX)) if side in poly.lines
    )
    return RegionLevel(
        x=x,
        bound_ns=B,
        u=np.array([poly.u[i] for i in order]),
        v=np.array([poly.v[i] for i in order]),
        runtime_ns=runtime,
        on_bound=np.abs(runtime - B) <= _tol(B),
        edges=tuple(edges),
        unbounded=unbounded,
        complete=done,
    )


# ---------------------------------------------------------------------- the analysis
def _box_sides(
    search: _Search,
    pair: tuple[Axis, Axis],
    bound_ns: float,
    box: Mapping[str, float] | None,
) -> list[float]:
    """The region's box: the given sides, and for the others ``BOX_MARGIN`` × the largest
    value where ``T`` on that axis stays within the largest bound (module doc)."""
    given = dict(box or {})
    unknown = set(given) - {a.name for a in pair}
    if unknown:
        raise InputError(f"box: {sorted(unknown)[0]!r} is not an axis of this region")
    sides = []
    for a in pair:
        if a.name in given:
            side = float(given[a.name])
            if not (math.isfinite(side) and side > 0):
                raise InputError(f"box: the largest {a.name} must be finite and > 0, got {side:g}")
            if side < a.value:
                raise InputError(
                    f"box: the largest {a.name} ({side:g} {a.unit}) is below its configured "
                    f"value {a.value:g}: the box must contain the baseline"
                )
        else:
            side = math.nan
        sides.append(side)
    missing = (math.isnan(sides[0]), math.isnan(sides[1]))
    if any(missing):
        far = _intercepts(search, pair, bound_ns, missing)
        for k in (0, 1):
            if missing[k]:
                span = far[k] if math.isfinite(far[k]) else 0.0
                side = BOX_MARGIN * max(span, pair[k].value)
                if not math.isfinite(far[k]) or side <= 0.0:
                    side = max(side, DEFAULT_SPAN[pair[k].unit])
                sides[k] = side
    return sides


def tolerance_region(
    graph: ExecutionGraph,
    params: LogGPS,
    *,
    levels: Sequence[float] = DEFAULT_TOLERANCES,
    axes: tuple[str, str] = ("L", "G"),
    box: Mapping[str, float] | None = None,
    variables: LinkVariables | None = None,
    max_evaluations: int | None = None,
    progress: Callable[[float | None, int], None] | None = None,
) -> Region:
    """Exact regions ``T(u, v) ≤ (1+x)·T0`` over the two variables ``axes`` (module doc).

    ``levels``: the levels x as fractions (0.01 = 1 %). ``axes``: two of L, G, o, or with
    ``variables`` (:func:`two_level_variables`, :func:`topology_variables`) two of its
    variables. ``T0`` is ``T`` at the configured values. ``box``: the largest value of an
    axis (its smallest is 0); axes not given get an automatic side (module doc).
    ``max_evaluations``: stop after that many evaluations with the vertices verified so far
    (the others flagged); ``None``: run to the exact answer. ``progress(share, evaluations)``
    is called after each batch of evaluations and each round of cuts: ``share`` is the part of
    the regions' boundaries already final (the angle their verified edges span seen from the
    origin, in box units, averaged over the levels; ``None`` while the box is sought), which
    grows to 1 as the search ends; ``evaluations`` the evaluations spent so far.
    """
    levels = sorted({float(v) for v in levels})
    if not levels:
        raise InputError("give at least one tolerance level")
    if any(not (v >= 0 and math.isfinite(v)) for v in levels):
        raise InputError("tolerance levels must be finite and ≥ 0 (fractions, e.g. 0.01 for 1%)")
    if len(axes) != 2 or axes[0] == axes[1]:
        raise InputError(f"a region needs two different variables, got {', '.join(axes)}")
    if max_evaluations is not None and max_evaluations < 1:
        raise InputError(f"max_evaluations must be at least 1, got {max_evaluations}")
    if variables is None:
        pair = (parameter_axis(axes[0], params), parameter_axis(axes[1], params))
        plane = Plane.of_parameters(graph, params, axes)
        source = "LogGPS"
    else:
        pair = (variables.axis(axes[0]), variables.axis(axes[1]))
        plane = Plane.of_model(graph, params, variables, pair)
        source = variables.source
    search = _Search(plane, max_evaluations, progress)
    ((T0, _),) = search.evaluate([(pair[0].value, pair[1].value)])
    bounds = [(1.0 + v) * T0 for v in levels]
    sides = _box_sides(search, pair, bounds[-1], box)
    polys, done = _solve(search, (sides[0], sides[1]), bounds)
    return Region(
        axes=pair,
        baseline_ns=T0,
        box=(sides[0], sides[1]),
        levels=tuple(
            _level(poly, v, B, pair, search.pieces, done)
            for poly, v, B in zip(polys, levels, bounds, strict=True)
        ),
        evaluations=search.evaluations,
        pieces=len(search.pieces),
        source=source,
        params=params,
        plane=plane,
    )


@dataclass(frozen=True, eq=False)
class RegionPreview:
    """What a region page can show in seconds while the exact polygons are computed: ``T0``,
    the bounds, the same box as :func:`tolerance_region` and ``T`` on a grid over it (exact
    at every grid point, one lane pass per batch of points)."""

    axes: tuple[Axis, Axis]
    levels: tuple[float, ...]
    baseline_ns: float
    bounds_ns: tuple[float, ...]
    box: tuple[float, float]
    us: np.ndarray
    vs: np.ndarray
    runtime_ns: np.ndarray  # (len(vs), len(us))
    #: Wall seconds per evaluation measured on this graph (the grid's points, in lanes).
    seconds_per_evaluation: float = math.nan
    #: Evaluations the exact regions are expected to take (:func:`expected_evaluations`; 0:
    #: no estimate, the axes count no messages or overheads).
    expected_evaluations: int = 0

    def expected_s(self, levels: int | None = None) -> float:
        """Estimated wall seconds of the exact regions for ``levels`` of the levels (default:
        all): expected evaluations × the measured seconds per evaluation (NaN: no estimate)."""
        if self.expected_evaluations <= 0:
            return math.nan
        share = 1.0 if levels is None else levels / len(self.levels)
        return self.expected_evaluations * share * self.seconds_per_evaluation


#: Evaluations the outer approximation spends per edge of a region: one cut to find the edge,
#: one evaluation to verify its end (the 10^5- and 10^6-vertex noisy stencils: 2.0).
EVALUATIONS_PER_EDGE = 2


def expected_evaluations(
    search: _Search,
    pair: tuple[Axis, Axis],
    ends: tuple[tuple[float, float], tuple[float, float]],
    levels: int,
) -> int:
    """Evaluations the exact regions of ``levels`` levels are expected to take (an estimate,
    not a bound): ``T`` is convex, so along a region's boundary the critical path's count of an
    axis that counts messages or overheads (L, o: whole numbers) moves one way between the two
    ends of the boundary, about one per edge (an edge may keep it and change the other axis's
    count, or change it by several: on the noisy stencils its total change is 1.3–1.8 × the
    edges, so the estimate errs long). Its change between the paths at ``ends`` (points just
    inside the largest bound on each axis) stands for the edges, times
    :data:`EVALUATIONS_PER_EDGE` per edge and level. 0 if neither axis counts (G, link
    variables)."""
    k = next((i for i, a in enumerate(pair) if a.name in ("L", "o")), None)
    if k is None:
        return 0
    (_, p0), (_, p1) = search.evaluate(list(ends))
    a, b = search.pieces[p0], search.pieces[p1]
    span = abs((a.b - b.b) if k == 0 else (a.c - b.c))
    return int(EVALUATIONS_PER_EDGE * levels * (round(span) + 1))


def region_preview(
    graph: ExecutionGraph,
    params: LogGPS,
    *,
    levels: Sequence[float] = DEFAULT_TOLERANCES,
    axes: tuple[str, str] = ("L", "G"),
    box: Mapping[str, float] | None = None,
    cells: int = 40,
    progress: Callable[[float], None] | None = None,
) -> RegionPreview:
    """``T`` on a ``cells × cells`` grid of the box :func:`tolerance_region` would use for
    the same arguments (LogGPS axes), without the polygons: the grid's points go through the
    lanes of :meth:`Plane.runtime_grid` (``progress``: its fraction done)."""
    levels = sorted({float(v) for v in levels})
    if not levels or any(not (v >= 0 and math.isfinite(v)) for v in levels):
        raise InputError("tolerance levels must be finite and ≥ 0 (fractions, e.g. 0.01 for 1%)")
    if len(axes) != 2 or axes[0] == axes[1]:
        raise InputError(f"a region needs two different variables, got {', '.join(axes)}")
    if cells < 2:
        raise InputError(f"a grid needs at least 2 cells per axis, got {cells}")
    pair = (parameter_axis(axes[0], params), parameter_axis(axes[1], params))
    search = _Search(Plane.of_parameters(graph, params, axes), None, None)
    ((T0, _),) = search.evaluate([(pair[0].value, pair[1].value)])
    bounds = [(1.0 + v) * T0 for v in levels]
    sides = _box_sides(search, pair, bounds[-1], box)
    us = np.linspace(0.0, sides[0], cells)
    vs = np.linspace(0.0, sides[1], cells)
    start = time.perf_counter()
    runtime = search.plane.runtime_grid(us, vs, progress)
    per = (time.perf_counter() - start) / runtime.size
    inside = runtime <= bounds[-1] + _tol(bounds[-1])
    ends = (
        (float(us[np.flatnonzero(inside[0])[-1]]), 0.0),
        (0.0, float(vs[np.flatnonzero(inside[:, 0])[-1]])),
    )
    expected = expected_evaluations(search, pair, ends, len(levels))
    return RegionPreview(
        axes=pair,
        levels=tuple(levels),
        baseline_ns=T0,
        bounds_ns=tuple(bounds),
        box=(sides[0], sides[1]),
        us=us,
        vs=vs,
        runtime_ns=runtime,
        seconds_per_evaluation=per,
        expected_evaluations=expected,
    )


# ---------------------------------------------------------------------- link classes
def two_level_variables(
    graph: ExecutionGraph,
    node_of_rank: np.ndarray,
    intra: tuple[float, float],
    inter: tuple[float, float],
) -> LinkVariables:
    """A two-level machine (LLAMP App. I): ``(L, G) = intra`` between ranks on one node,
    ``inter`` otherwise, as four variables ``L_intra``, ``L_inter`` (ns), ``G_intra``,
    ``G_inter`` (ns/B)."""
    node = np.asarray(node_of_rank)
    if node.size != graph.num_ranks:
        raise InputError(f"the node map has {node.size} ranks, the graph {graph.num_ranks}")
    sends, recvs = graph.messages()
    same = (node[graph.rank[sends]] == node[graph.rank[recvs]]).astype(np.float64)
    other = 1.0 - same
    zero = np.zeros_like(same)
    model = MessageModel(
        latency_ns=np.where(same > 0, float(intra[0]), float(inter[0])),
        gap_ns_per_byte=np.where(same > 0, float(intra[1]), float(inter[1])),
        names=("L_intra", "L_inter", "G_intra", "G_inter"),
        dlatency=np.column_stack([same, other, zero, zero]),
        dgap=np.column_stack([zero, zero, same, other]),
    )
    values = {"L_intra": intra[0], "L_inter": inter[0], "G_intra": intra[1], "G_inter": inter[1]}
    units = {"L_intra": NS, "L_inter": NS, "G_intra": NS_PER_BYTE, "G_inter": NS_PER_BYTE}
    return LinkVariables(
        model,
        values,
        units,
        f"two-level (intra L={intra[0]:g} ns G={intra[1]:g} ns/B, "
        f"inter L={inter[0]:g} ns G={inter[1]:g} ns/B)",
    )


def topology_variables(
    graph: ExecutionGraph,
    params: LogGPS,
    topology,
    mapping=None,
    latencies=None,
) -> LinkVariables:
    """A topology's variables (LLAMP App. H: link classes, ``l_wire``, ``d_switch``,
    ``l_intra_node``; :func:`llamp.lp.topology.topology_model`) plus ``G`` (every message's
    gap per byte)."""
    from llamp.lp.topology import LinkLatencies, dense_mapping, topology_model

    latencies = latencies or LinkLatencies()
    mapping = mapping or dense_mapping(graph.num_ranks)
    base = topology_model(graph, topology, mapping, params, latencies)
    m = base.latency_ns.size
    model = MessageModel(
        latency_ns=base.latency_ns,
        gap_ns_per_byte=base.gap_ns_per_byte,
        names=(*base.names, "G"),
        dlatency=np.hstack([base.dlatency, np.zeros((m, 1))]),
        dgap=np.hstack([base.dgap, np.ones((m, 1))]),
    )
    values = dict(zip(base.names, latencies.values(topology), strict=True)) | {"G": params.G}
    units = dict.fromkeys(base.names, NS) | {"G": NS_PER_BYTE}
    return LinkVariables(model, values, units, f"{topology.spec} ({mapping.source})")


# ---------------------------------------------------------------------- designs
def network_designs(
    params: LogGPS,
    axes: tuple[str, str],
    profiles: Sequence[tuple[str, LogGPS]] = (),
    *,
    builtin: bool = True,
) -> dict[str, tuple[float, float]]:
    """Named LogGPS designs as points of a region over two of L, G, o: the built-in networks
    (:data:`llamp.lp.classify.NETWORKS`: their L and G, the rest from ``params``; unless
    ``builtin`` is false) and the given ``(name, params)`` profiles (e.g. calibrated ones)."""
    from llamp.lp.classify import NETWORKS

    if not set(axes) <= set(PARAMETERS):
        raise InputError(
            f"network designs are LogGPS configurations: the axes must be among L, G, o, "
            f"not {', '.join(axes)}"
        )
    points = {}
    for net in NETWORKS.values() if builtin else ():
        p = net.params(params)
        points[net.name] = (float(getattr(p, axes[0])), float(getattr(p, axes[1])))
    for name, p in profiles:
        points[name] = (float(getattr(p, axes[0])), float(getattr(p, axes[1])))
    return points
