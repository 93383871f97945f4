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
from dataclasses import dataclass, replace

import numpy as np

from llamp.graph import ExecutionGraph
from llamp.lp.event_graph import (
    COEF_G,
    COEF_GAP,
    COEF_L,
    COEF_O,
    EventGraph,
    build_event_graph,
    release,
)
from llamp.lp.kernels import (
    ABS_TOL_NS,
    LANE_STEP,
    REL_TOL,
    backtrack_path,
    backward_late,
    lanes,
    pair,
    ring_size,
    sided,
    slopes,
    values,
)
from llamp.lp.lowered import lowering_key, persisted, rendezvous_count, renew
from llamp.params import LogGPS

#: Parameter name → column of the event-graph coefficients.
DIRECTIONS = {"L": COEF_L, "G": COEF_G, "o": COEF_O, "g": COEF_GAP}

#: Lanes per pass of :meth:`GraphEngine.probe_many` and :meth:`GraphEngine.points` (parameter
#: values swept together, :mod:`llamp.lp.kernels`). Measured on the 10^6-vertex noisy stencil
#: (2·10^6 events, 4.5·10^6 edges; CPU time of one thread, machine shared;
#: ``benchmarks/bench_engine.py`` lanes table): one pass with T, right and left λ_L took
#: 61 ms at K=2, 80 ms at 8, 100–107 ms at 16, 146–153 ms at 32, 228–281 ms at 64 (0.8–1.0 ns
#: per lane and edge, 230–280 values/s), 271 ms at 80, 425 ms at 128 (no faster per value than
#: 64; 2.4 ns per lane and edge at 8, 1.4–1.6 at 16 where the vectorised loops cover fewer
#: lanes). The ring of 64 lanes, 1,024 events × 3 rows × 64 × 8 B = 1.5 MB, stays in cache.
LANES = 64
#: Bytes of lane state (a ring of events, :func:`~llamp.lp.kernels.ring_size`) one pass may hold:
#: fewer lanes on a graph whose edges reach far back.
LANE_BYTES = 1 << 26
#: When lanes pay for probes (T, right and left slope along one parameter; ms per value, CPU
#: time): at 10^6 vertices the scalar kernel takes 18, lanes 30 at K=2, 23 at 3, 19 at 4, 15 at
#: 6; at 3·10^6 (6·10^6 events: the scalar state, 24 B per event, is far beyond the 32 MB
#: cache) the scalar kernel takes 118, lanes 90 at K=2, 53 at 4, 30 at 8. Probes take lanes from
#: :data:`LANES_PROBES` values per pass, from 2 on graphs of :data:`LARGE_EVENTS` events or more.
LANES_PROBES = 4
LARGE_EVENTS = 4_000_000
#: Points (T and right λ_L, λ_G, λ_o; a scalar sweep per side) take lanes from this many values
#: per pass: at 10^6 vertices the scalar sweep takes 43 ms per value, lanes 35 at K=2, 19 at 4.
LANES_POINTS = 2
#: From this many events a single point or probe goes through the lane kernels too: their state
#: is a ring of events (:func:`~llamp.lp.kernels.ring_size`), where the scalar kernels hold
#: 24–32 B per event (10^8 vertices: 2·10^8 events, 4.8–6.4 GB per sweep, two at once in
#: the tolerance searches). Same numbers (each lane is bit-identical to a scalar sweep).
HUGE_EVENTS = 50_000_000


def _probe_least(events: int) -> int:
    """Values from which probes take the lane kernels (:data:`LANES_PROBES`, 2 from
    :data:`LARGE_EVENTS` events, 1 from :data:`HUGE_EVENTS`)."""
    if events >= HUGE_EVENTS:
        return 1
    return 2 if events >= LARGE_EVENTS else LANES_PROBES


def _per_pass(mask: int, rows: int) -> int:
    """Lanes one pass holds: at most :data:`LANES` and :data:`LANE_BYTES` of lane state
    (``rows`` values per event of a ring of ``mask + 1`` events), a multiple of
    :data:`~llamp.lp.kernels.LANE_STEP` above it (what a pass computes)."""
    fits = int(max(1, min(LANES, LANE_BYTES // (8 * rows * (mask + 1)))))
    return fits if fits <= LANE_STEP else fits - fits % LANE_STEP  # passes pad to LANE_STEP


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
    return slopes(
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
        self._events: dict[tuple, EventGraph] = {}
        self._masks: dict[tuple, int] = {}
        self._rendezvous: dict[int, int] = {}

    def _key(self, params: LogGPS) -> tuple:
        """The lowering key of ``params`` (the rendezvous count of its S counted once per S:
        from the graph it reads every message's size, 18 ms per call at 10^6 vertices)."""
        count = self._rendezvous.get(params.S)
        if count is None:
            count = self._rendezvous[params.S] = rendezvous_count(self.graph, params.S)
        return lowering_key(count, params)

    def events(self, params: LogGPS, plan=None) -> EventGraph:
        """The event graph for ``params``' threshold S, progress and NIC models (cached: the
        weights depend on L, G, o, g; the structure only on the rendezvous set and models).
        Taken from the graph's file when it was saved with one (:mod:`llamp.lp.lowered`).
        ``plan``: the schedule pass of ``params`` when the caller ran it
        (:func:`llamp.lp.schedule.schedule_at`), so a lowering does not run it again."""
        key = self._key(params)
        cached = self._events.get(key)
        if cached is None:
            cached = persisted(self.graph, key)
        if cached is None:
            cached = build_event_graph(
                self.graph,
                params.S,
                progress=params.progress,
                nic=params.nic,
                order=params.order,
                rendezvous=params.rendezvous,
                schedule_at=params.schedule_at,
                plan=plan,
            )
            renew(self.graph, key, cached)  # a store's damaged copy is replaced by this one
        self._events[key] = cached
        return cached

    def holds(self, params: LogGPS) -> bool:
        """The event graph of ``params`` is in this engine's cache."""
        return self._key(params) in self._events

    def forget(self, params: LogGPS) -> None:
        """Drop the event graph of ``params`` from the cache (a caller done with a lowering
        no other analysis shares: a re-scheduled sweep's point), so its memory is freed."""
        key = self._key(params)
        self._events.pop(key, None)
        self._masks.pop(key, None)

    def share(self, params: LogGPS, like: LogGPS) -> None:
        """Evaluate ``params`` on the event graph of ``like`` (order ``schedule``): for callers
        whose schedule passes at both served every resource in the same order
        (:meth:`~llamp.lp.schedule.Schedule.same_order`); the lowering reads nothing else of a
        pass, so both lower to the same arrays and one lowering serves both."""
        ev = self.events(like)
        key = self._key(params)
        if key not in self._events:
            self._events[key] = replace(ev, schedule_at=params.schedule_at)

    # ------------------------------------------------------------------ evaluations
    def runtime(self, params: LogGPS) -> float:
        """``T(θ)`` only: the cheapest pass."""
        ev = self.events(params)
        if ev.num_events == 0:
            return 0.0
        wa, wb = ev.pattern_weights(params.L, params.G, params.o, params.g)
        t = values(ev.in_ptr, ev.src, ev.pattern, ev.value, wa, wb)
        return float(t.max())

    def mask(self, params: LogGPS) -> int:
        """Ring mask of the lane kernels for ``params``' lowering (cached with it)."""
        ev = self.events(params)
        key = self._key(params)
        mask = self._masks.get(key)
        if mask is None:
            mask = self._masks[key] = ring_size(ev.in_ptr, ev.src) - 1
        return mask

    def point(
        self, params: LogGPS, directions: tuple[str, ...] = ("L", "G", "o"), *, left: bool = True
    ) -> Point:
        """``T`` and its right (and left) derivatives along ``directions`` at θ."""
        if len(directions) == 1:
            T, right, lft = self.probe_many(params, directions[0], [getattr(params, directions[0])])
            name = directions[0]
            return Point(params, float(T[0]), {name: float(right[0])}, {name: float(lft[0])})
        return self.points([params], directions, left=left)[0]

    def points(
        self,
        configs: list[LogGPS],
        directions: tuple[str, ...] = ("L", "G", "o"),
        *,
        left: bool = True,
    ) -> list[Point]:
        """``T`` and its right (and left) derivatives along ``directions`` at each configuration.

        Configurations sharing a lowering go through the lane kernel together
        (:func:`~llamp.lp.kernels.lanes`, up to :data:`LANES` per pass), the passes
        spread over the machine's cores (they release the GIL)."""
        out: list[Point | None] = [None] * len(configs)
        cols = np.array([DIRECTIONS[d] for d in directions], dtype=np.int64)
        jobs = []
        groups: dict[tuple, list[int]] = {}
        for i, c in enumerate(configs):
            key = self._key(c)
            groups.setdefault(key, []).append(i)
        for idx in groups.values():
            first = configs[idx[0]]
            ev = self.events(first)
            if ev.num_events == 0:
                for i in idx:
                    zero = dict.fromkeys(directions, 0.0)
                    out[i] = Point(configs[i], 0.0, zero, dict(zero) if left else {})
                continue
            huge = ev.num_events >= HUGE_EVENTS
            if len(idx) < LANES_POINTS and not huge:  # the scalar kernels: no ring to size
                jobs += [(ev, 0, [i]) for i in idx]
                continue
            mask = self.mask(first)
            rows = 1 + len(directions) * (2 if left else 1)
            width = self._lane_width(len(idx), mask, rows, 1 if huge else LANES_POINTS)
            for s in range(0, len(idx), width):
                jobs.append((ev, mask, idx[s : s + width]))

        both = np.concatenate([cols, cols]) if left else cols
        sgn = np.repeat([1.0, -1.0], cols.size)[: both.size]
        k = len(directions)

        def run(job) -> None:
            ev, mask, idx = job
            if mask == 0:  # one configuration: the scalar kernel, no lane loops
                out[idx[0]] = self._point(ev, configs[idx[0]], directions, cols, left)
                return
            WA, WB = _lane_weights(ev, [configs[i] for i in idx])
            sa = np.ascontiguousarray(ev.fixed[:, both])
            sb = np.ascontiguousarray(ev.scaled[:, both])
            T, agg = lanes(ev.in_ptr, ev.src, ev.pattern, ev.value, WA, WB, sa, sb, sgn, mask)
            agg = np.round(agg, 6)
            for j, i in enumerate(idx):
                right = {d: float(agg[j, c]) for c, d in enumerate(directions)}
                lft = {d: float(agg[j, k + c]) for c, d in enumerate(directions)} if left else {}
                out[i] = Point(configs[i], float(T[j]), right, lft)

        _spread(run, jobs)
        return out  # type: ignore[return-value]

    def probe_many(
        self, params: LogGPS, parameter: str, values
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``T``, right and left slope along ``parameter`` at each of ``values`` (others fixed).

        Values go through the lane kernel (:func:`~llamp.lp.kernels.lanes`) up to
        :data:`LANES` per pass, the passes spread over the machine's cores; each lane's
        numbers are bit-identical to a sweep of its value alone.
        """
        values = np.asarray(values, dtype=np.float64)
        ev = self.events(params)
        out = np.zeros((3, values.size))
        if ev.num_events == 0 or values.size == 0:
            return out[0], out[1], out[2]
        col = DIRECTIONS[parameter]
        sa = np.ascontiguousarray(ev.fixed[:, [col, col]])
        sb = np.ascontiguousarray(ev.scaled[:, [col, col]])
        sgn = np.array([1.0, -1.0])
        least = _probe_least(ev.num_events)
        if values.size < least:  # the scalar kernels: no ring to size (a pass)
            mask, width = 0, 1
        else:
            mask = self.mask(params)
            width = self._lane_width(values.size, mask, 3, least)
        chunks = [slice(s, min(s + width, values.size)) for s in range(0, values.size, width)]

        def run(chunk: slice) -> None:
            configs = [params.with_(**{parameter: float(v)}) for v in values[chunk]]
            if mask == 0:  # one value: the scalar kernel, no lane loops
                wa, wb = ev.pattern_weights(*(getattr(configs[0], n) for n in "LGog"))
                one = pair(
                    ev.in_ptr,
                    ev.src,
                    ev.pattern,
                    ev.value,
                    wa,
                    wb,
                    sa[:, 0].copy(),
                    sb[:, 0].copy(),
                    REL_TOL,
                    ABS_TOL_NS,
                )
                out[:, chunk] = np.array([one[0], _round_slope(one[1]), _round_slope(one[2])])[
                    :, None
                ]
                return
            WA, WB = _lane_weights(ev, configs)
            T, agg = lanes(ev.in_ptr, ev.src, ev.pattern, ev.value, WA, WB, sa, sb, sgn, mask)
            out[0, chunk] = T
            out[1:, chunk] = np.round(agg, 6).T

        _spread(run, chunks)
        return out[0], out[1], out[2]

    @staticmethod
    def _point(
        ev: EventGraph, params: LogGPS, directions: tuple[str, ...], cols: np.ndarray, left: bool
    ) -> Point:
        """One configuration through :func:`~llamp.lp.kernels.sided` (one sweep per side)."""
        wa, wb = ev.pattern_weights(params.L, params.G, params.o, params.g)
        sa = np.ascontiguousarray(ev.fixed[:, cols])
        sb = np.ascontiguousarray(ev.scaled[:, cols])
        sides = {}
        T = 0.0
        for sign in (1.0, -1.0) if left else (1.0,):
            T, agg = sided(
                ev.in_ptr, ev.src, ev.pattern, ev.value, wa, wb, sa, sb, sign, REL_TOL, ABS_TOL_NS
            )
            sides[sign] = {name: _round_slope(agg[i]) for i, name in enumerate(directions)}
        return Point(params, float(T), sides[1.0], sides.get(-1.0, {}))

    def wave_width(self, params: LogGPS) -> int:
        """Probes one round of :meth:`probe_many` evaluates for about the cost of one pass on
        each core: :data:`LANES` per pass where the lane state fits :data:`LANE_BYTES`, fewer
        on a graph whose edges reach far back (its ring is larger), one (the scalar kernel)
        where lanes do not pay. On the 1,024-GPU training step (rings of ~10^6 events) that
        is 2 per pass: probing 128 latencies at once costs 64 passes there, not one."""
        ev = self.events(params)
        if ev.num_events == 0:
            return WORKERS
        per_pass = _per_pass(self.mask(params), 3)
        return (per_pass if per_pass >= _probe_least(ev.num_events) else 1) * WORKERS

    def _lane_width(self, count: int, mask: int, rows: int, least: int) -> int:
        """Values per pass for ``count`` values: at most :data:`LANES` and :data:`LANE_BYTES`
        of state, the passes a multiple of the cores and as even as can be (200 values on 2
        cores: 4 passes of 50, not 64, 64, 64, 8), and 1 (the scalar kernels) below ``least``,
        where lanes do not pay."""
        passes = -(-count // _per_pass(mask, rows))
        passes = -(-passes // WORKERS) * WORKERS
        width = -(-count // passes)
        return width if width >= least else 1

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
        late = backward_late(ev.out_ptr, ev.out_edge, ev.dst, w, T)
        start = t[ev.start_pos()]
        finish = t[ev.finish_pos()]
        slack = np.minimum(late[ev.start_pos()] - start, late[ev.finish_pos()] - finish)
        # within the rounding of T a vertex is on a critical path: its slack is 0, not an ulp
        # of T (the schedule order's long resource chains leave such residues)
        slack = np.where(slack <= tol, 0.0, slack)
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
        if ev.num_events == 0:
            return ev, np.zeros(0, np.int64), np.zeros(0, np.int64), ev.weights_at(params)
        # The path follows column 0 (λ_L) alone: the other slopes would cost 16 B per event.
        t, d, pred = slopes_at(ev, params, ALL_COLUMNS[:1])
        T = float(t.max())
        tight = np.flatnonzero(t >= T - (REL_TOL * abs(T) + ABS_TOL_NS))
        sink = int(tight[np.argmax(d[tight, 0])])
        del t, d
        positions, edges = backtrack_path(pred, ev.src, sink)
        del pred
        # A mapped event graph leaves the resident set between passes (10^8 vertices: ~5 GB).
        release(ev.in_ptr, ev.src, ev.pattern, ev.value)
        w = ev.weights_at(params)
        release(ev.pattern, ev.value)
        return ev, positions, edges, w


#: Threads for independent sweeps: the cores this process may run on.
WORKERS = max(
    1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
)


def _lane_weights(ev: EventGraph, configs: list[LogGPS]) -> tuple[np.ndarray, np.ndarray]:
    """Pattern weights of each configuration as lanes (patterns × K), each column exactly
    :meth:`~llamp.lp.event_graph.EventGraph.pattern_weights` of its configuration."""
    pairs = [ev.pattern_weights(c.L, c.G, c.o, c.g) for c in configs]
    WA = np.ascontiguousarray(np.stack([wa for wa, _ in pairs], axis=1))
    WB = np.ascontiguousarray(np.stack([wb for _, wb in pairs], axis=1))
    return WA, WB


def _spread(run, jobs: list) -> None:
    """``run`` on every job, over the machine's cores (the kernels release the GIL)."""
    if len(jobs) <= 1 or WORKERS == 1:
        for job in jobs:
            run(job)
        return
    from concurrent.futures import ThreadPoolExecutor  # here: a one-pass command needs none

    pool = ThreadPoolExecutor(max_workers=min(WORKERS, len(jobs)))
    try:
        list(pool.map(run, jobs))
    except BaseException:
        # Ctrl-C: do not wait for the passes under way (tens of seconds at 10^8 vertices).
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


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
