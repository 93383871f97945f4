"""Collective-algorithm what-ifs (LLAMP §IV, Fig. 10): one trace, several expansions, side by side.

LLAMP's ICON study traces once and re-runs Schedgen with a different allreduce (recursive
doubling vs ring) to see how the choice changes the runtime ``T(L)``, the latency sensitivity
``λ_L``, the latency ratio ``ρ_L`` and the x% latency tolerance. Here the trace is read once and
rebuilt into one execution graph per *variant* (a set of ``{collective: algorithm}`` choices,
:mod:`llamp.ingest.collectives`); every graph is analysed with the same LogGPS configuration.

A variant may also charge a collective with an analytic model instead of expanding it
(``allreduce=dimemas``, ``allreduce=thakur_gropp:ring``; :mod:`llamp.ingest.collective_models`):
its instances become synchronising ``coll`` vertices, so the expansion and the closed-form
models are compared on the same graph.

Only a trace can be re-expanded, and the GPU formats whose reader expands NCCL collectives
(Chakra, GOAL with collective markers), which are re-read per variant: an ``.npz`` or plain
GOAL graph already has its collectives lowered to point-to-point messages, and which messages
formed which collective is gone.

Where the time goes (measured, ``benchmarks/bench_whatif.py``, 16-rank noisy stencil of 10^6
vertices, allreduce=ring expanding to 3.3·10^6 vertices): expansion 0.6 s, lowering 4.9 s, the
summary (T, λ and three tolerances) 2 s — but the exact curve the UI drew took minutes: 587
evaluations for its 294 critical latencies (157 s) and a 200-point sweep on top (74 s) that
the exact segments already give. So: the curve is drawn from the exact pieces of ``T(L)``
(:func:`variant_curves`, no sweep), one critical-latency search per variant whose waves
evaluate many latencies per pass over the graph (the engine's lanes) runs under a time budget
counted in such waves (what the budget does not reach is returned as unresolved intervals,
exact at their ends), :func:`estimate_whatif` says before any expansion how many vertices each variant has and
how long it will take, and every step reports progress and can be cancelled (``progress`` and
``cancel`` hooks; :class:`Cancelled`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from llamp.config import DEFAULT_TOLERANCES, parse_collectives
from llamp.errors import InputError, LlampError
from llamp.graph import ExecutionGraph
from llamp.lp.critical import CriticalLatencies, critical_latencies, exact_curve
from llamp.lp.engine import engine_for
from llamp.lp.tolerance import Tolerance, ToleranceLevel, latency_range, max_parameter_within
from llamp.params import LogGPS

DEFAULT_LABEL = "default"

#: ``progress(fraction done in [0, 1], what is being done)``; it may raise to stop the work.
ProgressHook = Callable[[float, str], None]
#: ``cancel()``: true once the work should stop (checked between steps).
CancelHook = Callable[[], bool]

#: Target of an interactive what-if: a longer one is announced before it starts.
TARGET_SECONDS = 60.0
#: Expansion + lowering per expanded vertex (measured by ``benchmarks/bench_whatif.py`` on the
#: 2-core machine: 1.5 µs at 10^6 vertices, 1.7 µs for the 3.3·10^6-vertex ring variant).
EXPAND_NS_PER_VERTEX = 1700.0
#: One graph-engine pass (T and one-sided slopes) per expanded vertex, when not measured on the
#: run itself (:func:`measure_throughput`): 27–43 ns at 10^6 vertices, 42–80 ns at 3.3·10^6.
EVAL_NS_PER_VERTEX = 60.0
#: Peak memory per expanded vertex (graph, lowered event graph, a pass's arrays): 1.37 GB for
#: the trace and both variants (1.0 + 3.3 M vertices) of the benchmark.
BYTES_PER_VERTEX = 350.0
#: Passes of the summary per variant: T and λ at L0, and a tangent walk per tolerance level.
SUMMARY_PASSES_PER_LEVEL = 4
#: The least time budget of the exact curves (:func:`curve_budget`).
MIN_CURVE_SECONDS = 10.0


class Cancelled(LlampError):  # noqa: N818 - named for what happened, as the UI shows it
    """A what-if stopped by its ``cancel`` hook; nothing partial is returned."""


class _Steps:
    """Progress over weighted steps, and the cancel check between them."""

    def __init__(self, progress: ProgressHook | None, cancel: CancelHook | None, total: float):
        self.progress, self.cancel = progress, cancel
        self.total = max(float(total), 1e-12)
        self.done = 0.0

    def check(self) -> None:
        if self.cancel is not None and self.cancel():
            raise Cancelled("collective what-if cancelled")

    def report(self, text: str, work: float = 0.0) -> None:
        self.done = min(self.done + work, self.total)
        self.check()
        if self.progress is not None:
            self.progress(self.done / self.total, text)


@dataclass(frozen=True)
class Variant:
    """A named choice of collective algorithms (ops not listed keep their defaults)."""

    label: str
    algorithms: tuple[tuple[str, str], ...] = ()

    @property
    def choices(self) -> dict[str, str]:
        return dict(self.algorithms)

    @classmethod
    def parse(cls, text: str) -> Variant:
        """``"allreduce=ring"``, ``"allreduce=ring,bcast=linear"`` or ``"default"``."""
        text = text.strip()
        if not text or text.lower() == DEFAULT_LABEL:
            return cls(DEFAULT_LABEL, ())
        pairs = list(parse_collectives(text, what=f"collective variant {text!r}").items())
        from llamp.ingest.build import check_algorithms

        check_algorithms(dict(pairs))
        return cls(text, tuple(pairs))


def _variants(variants: Sequence[Variant | str]) -> tuple[Variant, ...]:
    parsed = tuple(v if isinstance(v, Variant) else Variant.parse(v) for v in variants)
    if len(parsed) < 1:
        raise InputError("give at least one collective variant, e.g. allreduce=ring")
    labels = [v.label for v in parsed]
    if len(set(labels)) != len(labels):
        dup = next(lab for lab in labels if labels.count(lab) > 1)
        raise InputError(f"collective variant {dup!r} is given twice")
    return parsed


@dataclass(frozen=True, eq=False)
class CollectiveComparison:
    """Side-by-side analyses of one trace under several collective-algorithm variants.

    ``sweep``: one row per (variant, L): ``variant``, ``L_ns``, ``runtime_ns``, ``lambda_L``,
    ``lambda_G``, ``rho_L``. ``summary``: one row per variant at the configured ``L``:
    ``variant``, ``algorithms`` (op=alg of every collective the trace uses), ``vertices``,
    ``messages``, ``bytes``, ``analytic_collectives`` (coll vertices), ``runtime_ns``, ``lambda_L``, ``lambda_G``, ``rho_L``,
    ``tolerance_<x>pct_L_ns`` per level, and the differences to the first variant
    (``messages_vs_first``, ``runtime_vs_first``: relative, ``lambda_L_vs_first``).
    ``notes``: facts a reader should know (e.g. a variant changes an op the trace never calls).
    ``seconds``: wall time of each variant (expansion, lowering, analyses).
    """

    params: LogGPS
    variants: tuple[Variant, ...]
    sweep: pd.DataFrame
    summary: pd.DataFrame
    notes: tuple[str, ...]
    graphs: dict[str, ExecutionGraph] = field(repr=False, default_factory=dict)
    seconds: dict[str, float] = field(repr=False, default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The stable ``collectives --json`` shape."""
        return {
            "params": self.params.as_dict(),
            "variants": [{"label": v.label, "algorithms": v.choices} for v in self.variants],
            "summary": self.summary.to_dict(orient="records"),
            "sweep": self.sweep.to_dict(orient="records"),
            "notes": list(self.notes),
        }


def _tolerance_column(x: float) -> str:
    return f"tolerance_{x * 100:g}pct_L_ns"


def _load_trace(source: Any, *, lenient: bool, host_speed: float | str | None = None):
    """A :class:`~llamp.ingest.events.Trace` from a trace object or a path to a trace
    (``host_speed``: a SimGrid TI trace's flop rate, see :func:`llamp.ingest.read_trace`)."""
    from llamp.ingest import FORMATS, detect_format, read_trace
    from llamp.ingest.events import Trace

    if isinstance(source, Trace):
        if host_speed is not None:
            raise InputError("a host speed applies when a trace is read, not to a Trace object")
        return source
    if isinstance(source, ExecutionGraph):
        raise InputError(
            "collective what-ifs need the trace, not an execution graph: its collectives are "
            "already expanded into point-to-point messages"
        )
    path = Path(source)
    fmt = detect_format(path)
    if _expands_itself(path, fmt):
        return _GraphSource(path, fmt, {"name": None})
    if FORMATS[fmt].kind != "trace":
        where = "the trace it was made from (a liballprof directory)"
        if fmt == "npz":
            from llamp.ingest.npz import read_npz

            try:  # a file from outside: its sizes bounded and its columns checked first
                files = read_npz(path, lazy=True).meta.get("files") or []
            except InputError:
                files = []
            dirs = sorted({str(Path(f).parent) for f in files if Path(f).exists()})
            if dirs:
                where = f"its trace directory ({dirs[0]})"
        raise InputError(
            f"{path}: this {fmt} file is an execution graph whose collectives are already "
            "expanded into point-to-point messages, so it cannot be re-expanded with other "
            f"algorithms; pass {where} instead"
        )
    return read_trace(path, lenient=lenient, host_speed=host_speed)


def _expands_itself(path: Path, fmt: str) -> bool:
    """A graph format whose reader expands the collectives it names (``collectives`` option):
    Chakra traces, GOAL files with collective markers."""
    from llamp.ingest import FORMATS

    if "collectives" not in FORMATS[fmt].options or FORMATS[fmt].kind != "graph":
        return False
    if fmt == "goal":
        from llamp.ingest.goal_ai import has_markers

        return has_markers(path)
    return True


@dataclass(frozen=True)
class _GraphSource:
    """A source re-read once per variant: its reader expands the collectives (NCCL)."""

    path: Path
    fmt: str
    meta: dict

    def build(self, choices: dict[str, str], *, lenient: bool, name: str) -> ExecutionGraph:
        from llamp.ingest import read

        return read(self.path, fmt=self.fmt, collectives=choices, lenient=lenient, name=name)


# ---------------------------------------------------------------------- estimate
def expanded_vertices(trace, variants: Sequence[Variant | str]) -> dict[str, int]:
    """Vertices of the graph each variant expands ``trace`` into, counted without building it.

    Point-to-point requests and matching are resolved once; per variant only the collective
    plan (which schedule each instance gets, its vertices per member) is redone, and the
    vertex count follows the builder's layout rule (a calc before every group of ops, a final
    calc per rank). Milliseconds, where building the ring variant of a 10^6-vertex trace takes
    seconds and its lowering more.
    """
    from llamp.ingest.build import _Builder, check_algorithms
    from llamp.ingest.events import Diagnostics

    parsed = _variants(variants)
    builder = _Builder(trace, check_algorithms({}), Diagnostics(lenient=True))
    builder.requests()
    builder.match()
    valid_ops = np.flatnonzero(builder.op_valid)
    p2p = np.bincount(builder.op_group[valid_ops], minlength=builder.n).astype(np.int64)
    has_wait = np.zeros(builder.n, bool)
    has_wait[builder.wait_event[builder.op_valid[builder.wait_op]]] = True
    out: dict[str, int] = {}
    for variant in parsed:
        builder.alg = check_algorithms(variant.choices)
        builder.diag = Diagnostics(lenient=True)
        builder.plan_collectives()
        n_ops = p2p + builder.coll_nv
        boundary = (n_ops > 0) | has_wait
        out[variant.label] = int(boundary.sum()) + builder.P + int(n_ops[boundary].sum())
    return out


def measure_throughput(graph: ExecutionGraph, params: LogGPS) -> float:
    """Nanoseconds per vertex of one graph-engine pass (T and slopes along L) on ``graph``,
    measured (the graph is lowered and the kernel loaded first, outside the timing; the
    median of three passes): the machine's speed now, for :func:`estimate_whatif`."""
    engine = engine_for(graph)
    engine.events(params)
    engine.probe_many(params, "L", [params.L])  # the first call loads the compiled kernel
    runs = []
    for _ in range(3):  # the median of three: the machine as busy as it is now
        start = time.perf_counter()
        engine.probe_many(params, "L", [params.L])
        runs.append(time.perf_counter() - start)
    return sorted(runs)[1] * 1e9 / max(graph.num_vertices, 1)


def curve_budget(summary_seconds: float, target_s: float = TARGET_SECONDS) -> float:
    """Seconds for the exact curves of a what-if whose comparison is estimated to take
    ``summary_seconds``: what is left of ``target_s``, at least :data:`MIN_CURVE_SECONDS`."""
    return max(MIN_CURVE_SECONDS, target_s - summary_seconds)


@dataclass(frozen=True)
class WhatifEstimate:
    """How long a collective what-if will take, before anything is expanded.

    ``variants``: one row per variant: ``variant``, ``vertices`` (exact: the expanded graph's
    vertex count), ``expand_s`` (expansion and lowering), ``summary_s`` (T, λ and the
    tolerances at L0), ``curve_s`` (the exact T(L) curve: its time budget), ``memory_mb``
    (peak, the graph and its lowering). ``seconds``: all of it; ``within_target``: whether the
    comparison and :data:`MIN_CURVE_SECONDS` of curves fit :data:`TARGET_SECONDS`. Rates: :data:`EXPAND_NS_PER_VERTEX` and the engine's
    ``eval_ns_per_vertex`` (measured on the run when given).
    """

    variants: pd.DataFrame
    eval_ns_per_vertex: float
    expand_ns_per_vertex: float
    target_s: float

    @property
    def seconds(self) -> float:
        return float(self.variants[["expand_s", "summary_s", "curve_s"]].to_numpy().sum())

    @property
    def summary_seconds(self) -> float:
        """Without the curves: what the CLI's ``collectives`` and the UI's summary cost."""
        return float(self.variants[["expand_s", "summary_s"]].to_numpy().sum())

    @property
    def within_target(self) -> bool:
        """Whether the comparison fits the target with the least curve budget."""
        return self.summary_seconds + MIN_CURVE_SECONDS <= self.target_s

    @property
    def memory_mb(self) -> float:
        return float(self.variants["memory_mb"].sum())


def estimate_whatif(
    trace,
    variants: Sequence[Variant | str],
    *,
    levels: int = len(DEFAULT_TOLERANCES),
    curve_seconds: float | None = None,
    eval_ns_per_vertex: float | None = None,
    target_s: float = TARGET_SECONDS,
) -> WhatifEstimate:
    """Estimate a what-if of ``variants`` on ``trace`` from the expanded vertex counts
    (:func:`expanded_vertices`) and the engine's throughput (``eval_ns_per_vertex``: measure it
    with :func:`measure_throughput`; default :data:`EVAL_NS_PER_VERTEX`; expansion and lowering
    are slowed by the same factor when it is above the default: a busy machine slows them
    alike). ``curve_seconds``: the
    time budget of the curves (:func:`variant_curves`), shared by the variants; ``None``: no
    curves. ``levels``: tolerance levels of the summary."""
    parsed = _variants(variants)
    if eval_ns_per_vertex is not None and not eval_ns_per_vertex > 0:
        raise InputError(
            f"the engine throughput must be > 0 ns per vertex, got {eval_ns_per_vertex}"
        )
    counts = expanded_vertices(trace, parsed)
    rate = float(eval_ns_per_vertex or EVAL_NS_PER_VERTEX)
    # a busy machine slows expansion and lowering as much as the engine's passes (a graph
    # smaller than the benchmark's runs faster per vertex: no credit for that)
    expand = EXPAND_NS_PER_VERTEX * max(rate / EVAL_NS_PER_VERTEX, 1.0)
    passes = 1 + SUMMARY_PASSES_PER_LEVEL * max(int(levels), 0)
    share = (curve_seconds or 0.0) / len(parsed)
    rows = [
        {
            "variant": v.label,
            "vertices": counts[v.label],
            "expand_s": counts[v.label] * expand * 1e-9,
            "summary_s": counts[v.label] * rate * passes * 1e-9,
            "curve_s": share,
            "memory_mb": counts[v.label] * BYTES_PER_VERTEX / 2**20,
        }
        for v in parsed
    ]
    return WhatifEstimate(pd.DataFrame(rows), rate, expand, float(target_s))


# ---------------------------------------------------------------------- comparison
def compare_collectives(
    source: Any,
    variants: Sequence[Variant | str],
    params: LogGPS,
    latencies_ns: Sequence[float] | np.ndarray,
    *,
    levels: Sequence[float] = DEFAULT_TOLERANCES,
    lenient: bool = False,
    name: str | None = None,
    progress: bool | ProgressHook = False,
    cancel: CancelHook | None = None,
    host_speed: float | str | None = None,
) -> CollectiveComparison:
    """Re-expand ``source`` (a trace directory or Trace) once per variant and compare them.

    ``latencies_ns``: the L values of the sweep (others from ``params``); ``levels``: the levels
    x of the x% latency tolerance (fractions) relative to ``T(params.L)`` of each variant.
    ``progress``: ``True`` for a bar over the variants on stderr (hidden when stderr is not a
    terminal), or a :data:`ProgressHook` called after every step (expansion, lowering, each
    analysis) with the fraction done, weighted by the estimated cost; ``cancel``: checked
    between the steps, raises :class:`Cancelled`.
    ``host_speed``: flop rate of a SimGrid TI trace read from a path (default 1 Gf/s).
    """
    parsed = _variants(variants)
    levels = [float(x) for x in levels]
    if any(x < 0 for x in levels):
        raise InputError("tolerance levels must be ≥ 0 (fractions, e.g. 0.01 for 1%)")
    Ls = np.asarray(latencies_ns, dtype=np.float64)
    if Ls.ndim != 1 or Ls.size == 0 or np.any(Ls < 0) or not np.all(np.isfinite(Ls)):
        raise InputError("the latency sweep needs one or more finite values ≥ 0 ns")

    from llamp.ingest.build import build_graph

    hook = progress if callable(progress) else None
    trace = _load_trace(source, lenient=lenient, host_speed=host_speed)
    if isinstance(source, str | Path):
        from llamp.ingest import default_name

        default = default_name(source)
    else:
        default = "trace"
    base_name = name or trace.meta.get("name") or default
    # Weights of the steps: the estimate's costs (vertex counts only when a hook listens).
    weights = {v.label: (1.0, 1.0, 1.0) for v in parsed}
    if (hook is not None or cancel is not None) and not isinstance(trace, _GraphSource):
        plan = estimate_whatif(trace, parsed, levels=len(levels) + len(Ls)).variants
        for r in plan.itertuples(index=False):
            weights[r.variant] = (r.expand_s / 3.0, 2.0 * r.expand_s / 3.0, r.summary_s)
    steps = _Steps(hook, cancel, sum(sum(w) for w in weights.values()))
    steps.report("reading the trace")
    graphs: dict[str, ExecutionGraph] = {}
    seconds: dict[str, float] = {}
    sweep_rows: list[dict[str, Any]] = []
    summary_rows: list[dict[str, Any]] = []
    notes: list[str] = []
    bar = progress is True
    for variant in tqdm(parsed, unit=" variants", leave=False, disable=None if bar else True):
        started = time.perf_counter()
        w_build, w_lower, w_summary = weights[variant.label]
        if isinstance(trace, _GraphSource):
            graph = trace.build(
                variant.choices, lenient=lenient, name=f"{base_name}[{variant.label}]"
            )
        else:
            graph = build_graph(
                trace,
                collectives=variant.choices,
                lenient=lenient,
                name=f"{base_name}[{variant.label}]",
            )
        graphs[variant.label] = graph
        steps.report(f"{variant.label}: expanded to {graph.num_vertices:,} vertices", w_build)
        used = graph.meta.get("collectives", {})
        absent = sorted(op for op in variant.choices if op not in used)
        if absent:
            notes.append(
                f"{variant.label}: the trace makes no {', '.join(absent)} call, so this choice "
                "changes nothing"
            )
        eng = engine_for(graph)
        eng.events(params)
        steps.report(f"{variant.label}: lowered to its event graph", w_lower)
        per_pass = w_summary / (1 + len(Ls) + SUMMARY_PASSES_PER_LEVEL * len(levels))
        at_each = eng.points([params.with_(L=float(L)) for L in Ls], ("L", "G"), left=False)
        for L, at in zip(Ls, at_each, strict=True):
            sweep_rows.append(
                {
                    "variant": variant.label,
                    "L_ns": float(L),
                    "runtime_ns": at.runtime_ns,
                    "lambda_L": at.right["L"],
                    "lambda_G": at.right["G"],
                    "rho_L": float(L) * at.right["L"] / at.runtime_ns if at.runtime_ns > 0 else 0.0,
                }
            )
        point = eng.point(params, ("L", "G"), left=False)
        steps.report(f"{variant.label}: T and λ at L0", per_pass * (1 + len(Ls)))
        s = graph.summary()
        row: dict[str, Any] = {
            "variant": variant.label,
            "algorithms": ",".join(f"{op}={alg}" for op, alg in sorted(used.items())),
            "vertices": s.vertices,
            "messages": s.messages,
            "bytes": s.bytes,
            "analytic_collectives": s.colls,
            "runtime_ns": point.runtime_ns,
            "lambda_L": point.right["L"],
            "lambda_G": point.right["G"],
            "rho_L": params.L * point.right["L"] / point.runtime_ns
            if point.runtime_ns > 0
            else 0.0,
        }
        for x in levels:
            row[_tolerance_column(x)] = max_parameter_within(
                graph, params, (1.0 + x) * point.runtime_ns, parameter="L"
            )
            steps.report(
                f"{variant.label}: {x * 100:g}% L tolerance", per_pass * SUMMARY_PASSES_PER_LEVEL
            )
        summary_rows.append(row)
        seconds[variant.label] = time.perf_counter() - started
    summary = pd.DataFrame(summary_rows)
    first = summary.iloc[0]
    summary["messages_vs_first"] = summary["messages"] - int(first["messages"])
    summary["runtime_vs_first"] = (
        summary["runtime_ns"] / first["runtime_ns"] - 1.0 if first["runtime_ns"] > 0 else 0.0
    )
    summary["lambda_L_vs_first"] = summary["lambda_L"] - float(first["lambda_L"])
    if len(parsed) > 1:
        for variant in parsed[1:]:
            if graphs[variant.label].equals(graphs[parsed[0].label]):
                notes.append(f"{variant.label} expands to the same graph as {parsed[0].label}")
    return CollectiveComparison(
        params=params,
        variants=parsed,
        sweep=pd.DataFrame(sweep_rows),
        summary=summary,
        notes=tuple(notes),
        graphs=graphs,
        seconds=seconds,
    )


# ---------------------------------------------------------------------- exact T(L) curves
def variant_tolerance(summary_row: pd.Series, levels: Sequence[float], params: LogGPS) -> Tolerance:
    """The x% L tolerances of one variant (a row of :attr:`CollectiveComparison.summary`) as a
    :class:`~llamp.lp.Tolerance` (no G tolerances: the what-if computes L only)."""
    T0 = float(summary_row["runtime_ns"])
    latency = [
        ToleranceLevel(float(x), (1.0 + x) * T0, float(summary_row[_tolerance_column(x)]))
        for x in levels
    ]
    return Tolerance(T0, latency, [], "graph", params)


def comparison_range(
    summary: pd.DataFrame, levels: Sequence[float], L0: float
) -> tuple[float, float]:
    """The range of L where every variant's tolerances show: the automatic range
    (:func:`llamp.lp.tolerance.latency_range`) of all of them."""
    values = summary[[_tolerance_column(x) for x in levels]].to_numpy(float)
    return latency_range(values.ravel(), L0)


@dataclass(frozen=True, eq=False)
class VariantCurve:
    """The exact ``T(L)`` of one variant over [lo, hi], from its critical latencies.

    ``critical``: breakpoints and linear pieces (with a time budget: the intervals it did not
    reach are ``critical.unresolved``, exact at their ends). ``curve``: the pieces as points
    (:func:`llamp.lp.critical.exact_curve`, as the Latency page draws them), columns ``L_ns``,
    ``runtime_ns``, ``lambda_L`` (the right derivative: the slope of the piece that starts
    there; at the range's end the slope left of it), ``rho_L`` and ``exact`` (false at the ends
    of an unresolved interval, across which the line is only an upper bound of the convex
    ``T``). No sweep is needed: ``T`` is linear between the points.
    """

    label: str
    critical: CriticalLatencies
    curve: pd.DataFrame
    seconds: float

    @property
    def complete(self) -> bool:
        return not self.critical.unresolved


def curve_points(critical: CriticalLatencies) -> pd.DataFrame:
    """:attr:`VariantCurve.curve`: the exact curve of ``critical``
    (:func:`llamp.lp.critical.exact_curve`) with the ends of its unresolved intervals marked
    (``exact`` false)."""
    frame = exact_curve(critical)
    ends = [v for u in critical.unresolved for v in (u.start, u.end)]
    frame["exact"] = ~np.isin(frame["L_ns"].to_numpy(float), np.asarray(ends, float))
    return frame[["L_ns", "runtime_ns", "lambda_L", "rho_L", "exact"]]


def variant_curves(
    comparison: CollectiveComparison,
    lo: float,
    hi: float,
    *,
    seconds: float | None = None,
    progress: ProgressHook | None = None,
    cancel: CancelHook | None = None,
) -> dict[str, VariantCurve]:
    """The exact ``T(L)`` over [lo, hi] of every variant of ``comparison`` (LLAMP Fig. 10).

    Each variant's critical latencies come from one search over [lo, hi]
    (:func:`llamp.lp.critical_latencies`), whose waves probe many latencies per pass over the
    graph (the engine's lanes: :meth:`~llamp.lp.engine.GraphEngine.wave_width`); ``progress``
    and ``cancel`` are called after each wave. ``seconds``: a time budget shared by the
    variants (``None``: find every breakpoint), turned into evaluations at the time of one
    full wave measured on the variant's graph, so a spent budget leaves intervals unresolved
    (exact at their ends, largest λ jumps resolved first), never a wrong breakpoint.
    """
    if not 0.0 <= lo < hi:
        raise InputError(f"the curve range needs 0 ≤ from < to, got [{lo}, {hi}]")
    params = comparison.params
    labels = [v.label for v in comparison.variants]
    sizes = {label: comparison.graphs[label].num_vertices for label in labels}
    steps = _Steps(progress, cancel, float(sum(sizes.values())))
    started_all = time.perf_counter()
    out: dict[str, VariantCurve] = {}
    for k, label in enumerate(labels):
        graph = comparison.graphs[label]
        started = time.perf_counter()
        budget = None
        if seconds is not None:
            # what is left of the budget, this variant's part of it by size, in full waves
            left_s = seconds - (started - started_all)
            mine = left_s * sizes[label] / sum(sizes[m] for m in labels[k:])
            width = engine_for(graph).wave_width(params)
            wave_s = _wave_seconds(graph, params, lo, hi, width)  # itself a wave of the budget
            budget = max(2, int((mine - wave_s) / max(wave_s, 1e-9) * width))
        base = steps.done

        def wave(done: float, waves: int, calls: int, pending: int, label=label, base=base):
            work = base + done * sizes[label] - steps.done
            steps.report(
                f"{label}: {calls:,} latencies in {waves} passes, {pending:,} intervals open",
                max(work, 0.0),
            )

        crit = critical_latencies(
            graph, params, float(lo), float(hi), max_evaluations=budget, progress=wave
        )
        steps.report(
            f"{label}: critical latencies ({len(crit.critical)} found)",
            max(base + sizes[label] - steps.done, 0.0),
        )
        out[label] = VariantCurve(label, crit, curve_points(crit), time.perf_counter() - started)
    return out


def _wave_seconds(graph: ExecutionGraph, params: LogGPS, lo: float, hi: float, width: int) -> float:
    """Seconds of one wave of the critical-latency search on ``graph``: ``width`` latencies
    in [lo, hi] through the engine's lanes."""
    start = time.perf_counter()
    engine_for(graph).probe_many(params, "L", list(np.linspace(lo, hi, width)))
    return time.perf_counter() - start


# ---------------------------------------------------------------------- analytic costs
def _group_sum(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Sums of the CSR segments ``values[ptr[i]:ptr[i+1]]``."""
    total = np.concatenate([[0], np.cumsum(values, dtype=np.int64)])
    return total[ptr[1:]] - total[ptr[:-1]]


INSTANCE_COLUMNS = ["op", "P", "sent_bytes", "received_bytes", "n_bytes", "instances"]


def collective_instances(trace) -> pd.DataFrame:
    """The trace's collective instances, grouped: one row per (``op``, ``P``, sizes) with
    ``instances`` (how many), ``sent_bytes``/``received_bytes`` (the root's or member 0's, as
    Dimemas counts them) and ``n_bytes`` (Thakur et al.'s ``n``: the message for bcast, reduce,
    allreduce and scan; the total gathered, scattered or exchanged per process otherwise).

    As the graph builder does, the k-th collective call of each member of a communicator is
    instance k; communicators of one member or without known membership are left out.
    """
    from llamp.ingest.collective_models import instance_bytes
    from llamp.ingest.events import COLL, COLL_OPS, ICOLL, ROOTED_OPS, kind_in

    ev = trace.events
    rows = np.flatnonzero(kind_in(ev.kind, (COLL, ICOLL)))
    if not rows.size:
        return pd.DataFrame(columns=INSTANCE_COLUMNS)
    counts_sum = _group_sum(ev.cnt_values, ev.cnt_ptr)
    size_of = np.array([c.size or 0 for c in trace.comms])
    comm = ev.comm[rows].astype(np.int64)
    keep = size_of[comm] > 1
    rows, comm = rows[keep], comm[keep]
    frame = pd.DataFrame(
        {
            "comm": comm,
            "rank": ev.rank[rows],
            "op": np.asarray(COLL_OPS)[ev.coll[rows]],
            "root": ev.root[rows],
            "size": ev.size[rows],
            "counts": counts_sum[rows],
        }
    )
    member = np.full(len(frame), -1)
    for c in np.unique(comm):
        members = np.asarray(trace.comms[c].members)
        inv = np.full(trace.num_ranks, -1)
        inv[members] = np.arange(members.size)
        sel = comm == c
        member[sel] = inv[frame["rank"].to_numpy()[sel]]
    frame["member"] = member
    frame["k"] = frame.groupby(["comm", "rank"], sort=False).cumcount()
    frame["P"] = size_of[frame["comm"]]
    groups = frame.groupby(["comm", "k"], sort=False)
    inst = groups.agg(op=("op", "first"), P=("P", "first"), members=("rank", "size"))
    inst = inst[inst["members"] == inst["P"]]
    first = frame[frame["member"] == 0].set_index(["comm", "k"])
    rooted_row = frame[frame["member"] == frame["root"]].set_index(["comm", "k"])
    total = groups["size"].sum()
    inst["s"] = first["size"].reindex(inst.index).fillna(0).to_numpy()
    inst["root_size"] = rooted_row["size"].reindex(inst.index).fillna(0).to_numpy()
    inst["total"] = total.reindex(inst.index).to_numpy()
    inst["counts"] = first["counts"].reindex(inst.index).fillna(0).to_numpy()
    op, P, s = inst["op"].to_numpy(), inst["P"].to_numpy(), inst["s"].to_numpy()
    s = np.where(np.isin(op, list(ROOTED_OPS)), inst["root_size"].to_numpy(), s)
    sent, received, n = instance_bytes(
        op, P, s, inst["total"].to_numpy(), inst["counts"].to_numpy()
    )
    out = pd.DataFrame(
        {
            "op": op,
            "P": P.astype(np.int64),
            "sent_bytes": sent,
            "received_bytes": received,
            "n_bytes": n,
        }
    )
    grouped = out.groupby(["op", "P", "sent_bytes", "received_bytes", "n_bytes"], sort=True)
    return grouped.size().rename("instances").reset_index()[INSTANCE_COLUMNS]


def collective_costs(
    instances: pd.DataFrame, variants: Sequence[Variant | str], params: LogGPS
) -> pd.DataFrame:
    """Analytic costs of a trace's collective instances (:func:`collective_instances`) at
    ``params`` (:mod:`llamp.ingest.collective_models`): Dimemas (Girona et al. Table 3) once,
    Thakur–Gropp per variant with the variant's algorithm (no cost where the paper has no
    formula for it). One row per (variant, op, P, sizes); ``*_ns`` are per instance,
    ``total_*_ns`` over the instances. Milliseconds at any trace size: nothing is expanded,
    so this is the what-if to offer when an expansion would take too long."""
    from llamp.ingest.collective_models import (
        THAKUR_GROPP,
        instance_costs,
        parse_analytic,
        thakur_gropp,
    )

    parsed = _variants(variants)
    if instances.empty:
        return pd.DataFrame()
    L, G = params.L, params.G
    dim = instance_costs(instances, model="dimemas")
    frames = []
    for variant in parsed:
        choices = variant.choices
        rows = []
        for r in dim.itertuples(index=False):
            algorithm = choices.get(r.op, "")
            modelled = parse_analytic(r.op, algorithm) if algorithm else None
            if modelled is not None and modelled.algorithm is not None:
                algorithm = modelled.algorithm  # thakur_gropp:ALG prices with ALG's formula
            formula = THAKUR_GROPP.get((r.op, algorithm))
            tg = thakur_gropp(r.op, algorithm, int(r.P), float(r.n_bytes)) if formula else None
            dim_ns = r.latency_terms * L + r.byte_terms * G
            tg_ns = tg.at(L, G) if tg else math.nan
            rows.append(
                {
                    "variant": variant.label,
                    "op": r.op,
                    "algorithm": algorithm,
                    "P": r.P,
                    "n_bytes": r.n_bytes,
                    "instances": r.instances,
                    "thakur_gropp_formula": formula or "no formula for this algorithm",
                    "thakur_gropp_latency_terms": tg.latency_terms if tg else math.nan,
                    "thakur_gropp_byte_terms": tg.byte_terms if tg else math.nan,
                    "thakur_gropp_ns": tg_ns,
                    "total_thakur_gropp_ns": r.instances * tg_ns,
                    "dimemas_latency_terms": r.latency_terms,
                    "dimemas_byte_terms": r.byte_terms,
                    "dimemas_ns": dim_ns,
                    "total_dimemas_ns": r.instances * dim_ns,
                }
            )
        frames.append(pd.DataFrame(rows))
    return pd.concat(frames, ignore_index=True)
