"""Compute variability (Cornebize & Legrand, "Simulation-based optimization and sensibility
analysis of MPI applications: variability matters", JPDC 2022): Monte Carlo over calc costs.

The paper finds that faithful predictions need both **spatial** variability (nodes differ: a
per-node mean, its Eq. 5) and short-term **temporal** variability (two calls of the same kernel
on the same node never take the same time: its Eq. 1–2), and studies slow nodes (§5.3). Here
every calc vertex ``v`` of rank ``r`` in sample ``j`` costs::

    cost_j(v) = cost(v) · spatial_j[r] · temporal_j[v] · slowdown[r]

where ``spatial_j[r]`` and ``temporal_j[v]`` are independent random factors with mean 1 and
coefficients of variation ``spatial_cv`` and ``temporal_cv``, and ``slowdown[r]`` is the given
factor on the slow ranks (1 elsewhere). Distributions of the factors (``distribution``):

- ``lognormal`` (default): ``exp(μ + σZ)`` with ``σ² = ln(1 + cv²)``, ``μ = −σ²/2``: mean 1 and
  CV exactly ``cv``, always positive, skewed toward slow runs as measured kernel times are.
- ``normal``: ``N(1, cv²)`` truncated at 0 (redrawn while ≤ 0, so the distribution is the
  conditional one). The truncation moves the mean above 1 by less than 1e-6 for ``cv ≤ 0.2``
  and 0.1 % for ``cv = 0.3``.
- ``halfnormal``: the paper's ``H(μ, σ)`` (its Eq. 1), ``a + s·|Z|`` with
  ``s = cv / sqrt(1 − 2/π)`` and ``a = 1 − s·sqrt(2/π)``: mean 1, CV ``cv``, positively skewed,
  bounded below by ``a``; needs ``cv ≤ sqrt(π/2 − 1) ≈ 0.7555`` so that ``a ≥ 0``.

Each sample is evaluated exactly: ``T``, the latency sensitivity ``λ_L`` (right derivative) and
``ρ_L`` at the configured ``L``, and the x% latency tolerance (the largest ``L`` with
``T_j(L) ≤ (1+x)·T_j(L0)``, relative to the sample's own ``T_j(L0)``). Samples are evaluated by
compiled sweeps over the event graph that compute each edge weight on the fly from the compact
per-sample scales (no edges × samples matrix), one sample after another in each thread (the
event times of one sample stay in cache), spread over the machine's cores. Sample ``j`` draws
from its own stream ``SeedSequence(seed).spawn(samples)[j]``, so results depend only on
``seed`` and ``j`` — not on the number of threads or the batch size.

Under ``order="schedule"`` every sample is re-scheduled: the schedule pass runs on the sample's
own costs at the configuration and the sample is evaluated on the event graph of that order
(LogGOPSim's order for those costs), so sample ``j`` equals the ordinary analyses of the graph
with sample ``j``'s costs (:func:`sample_costs`); its tolerance keeps that order, as
:func:`llamp.lp.tolerance.tolerance` does. A noisy sample changes the order a CPU or NIC
serves its operations in, and the baseline's order would charge it orders the network never
produces. Each sample then costs one schedule pass and one lowering (the program order shares
one event graph among all samples).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from llamp.errors import InputError
from llamp.graph import CALC, ExecutionGraph
from llamp.lp.engine import engine_for
from llamp.lp.event_graph import COEF_G, COEF_GAP, COEF_L, COEF_O, CONST
from llamp.lp.kernels import ABS_TOL_NS, REL_TOL, calc_lanes, ring_size
from llamp.lp.tolerance import UNBOUNDED_AT, max_parameter_within
from llamp.lp.weighted import calc_edges
from llamp.params import LogGPS

DISTRIBUTIONS = ("lognormal", "normal", "halfnormal")
_HALFNORMAL_MAX_CV = math.sqrt(math.pi / 2.0 - 1.0)
_WORKERS = max(
    1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
)


# ------------------------------------------------------------------------------ sampling
def factors(
    rng: np.random.Generator, size: int | tuple[int, ...], cv: float, distribution: str
) -> np.ndarray:
    """Random factors with mean 1 and coefficient of variation ``cv`` (module docstring)."""
    if cv == 0.0:
        return np.ones(size)
    if distribution == "lognormal":
        sigma2 = math.log1p(cv * cv)
        return np.exp(rng.standard_normal(size) * math.sqrt(sigma2) - sigma2 / 2.0)
    if distribution == "normal":
        out = 1.0 + cv * rng.standard_normal(size)
        bad = out <= 0.0
        while bad.any():
            out[bad] = 1.0 + cv * rng.standard_normal(int(bad.sum()))
            bad = out <= 0.0
        return out
    if distribution == "halfnormal":
        s = cv / math.sqrt(1.0 - 2.0 / math.pi)
        return (1.0 - s * math.sqrt(2.0 / math.pi)) + s * np.abs(rng.standard_normal(size))
    raise InputError(f"unknown distribution {distribution!r}: choose {', '.join(DISTRIBUTIONS)}")


@dataclass(frozen=True)
class VariabilitySpec:
    """What is varied: coefficients of variation, distribution, slow ranks, samples, seed."""

    spatial_cv: float = 0.0
    temporal_cv: float = 0.0
    distribution: str = "lognormal"
    slow_ranks: tuple[int, ...] = ()
    slowdown: float = 1.0
    samples: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("spatial_cv", "temporal_cv"):
            value = getattr(self, name)
            if not (value >= 0.0 and math.isfinite(value)):
                raise InputError(
                    f"{name.replace('_', ' ')} must be a finite value ≥ 0, got {value!r}"
                )
        if self.distribution not in DISTRIBUTIONS:
            raise InputError(
                f"unknown distribution {self.distribution!r}: choose {', '.join(DISTRIBUTIONS)}"
            )
        if self.distribution == "halfnormal":
            worst = max(self.spatial_cv, self.temporal_cv)
            if worst > _HALFNORMAL_MAX_CV:
                raise InputError(
                    f"a half-normal factor with mean 1 has CV ≤ {_HALFNORMAL_MAX_CV:.3f}; "
                    f"got {worst:g} (use lognormal for larger variability)"
                )
        if not (self.slowdown > 0.0 and math.isfinite(self.slowdown)):
            raise InputError(f"slowdown must be a finite factor > 0, got {self.slowdown!r}")
        if self.samples < 1:
            raise InputError(f"need at least one sample, got {self.samples}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "spatial_cv": self.spatial_cv,
            "temporal_cv": self.temporal_cv,
            "distribution": self.distribution,
            "slow_ranks": list(self.slow_ranks),
            "slowdown": self.slowdown,
            "samples": self.samples,
            "seed": self.seed,
        }


@dataclass(frozen=True, eq=False)
class Variability:
    """Distributions of ``T``, ``λ_L``, ``ρ_L`` and the latency tolerance under compute noise.

    ``samples``: one row per sample (``sample``, ``runtime_ns``, and when computed
    ``lambda_L``, ``rho_L``, ``tolerance_<x>pct_L_ns``). ``summary``: one row per quantity with
    ``mean``, ``sd``, ``p5``, ``p50``, ``p95``, ``min``, ``max`` and ``baseline`` (the graph as
    traced: no noise, no slowdown). ``seconds``: wall time of sampling and evaluation.
    """

    params: LogGPS
    spec: VariabilitySpec
    tolerances: tuple[float, ...]
    baseline: dict[str, float]
    samples: pd.DataFrame = field(repr=False)
    summary: pd.DataFrame
    seconds: dict[str, float]

    def as_dict(self, *, with_samples: bool = False) -> dict[str, Any]:
        """The stable ``mc --json`` shape (per-sample rows only if asked)."""
        out: dict[str, Any] = {
            "params": self.params.as_dict(),
            "spec": self.spec.as_dict(),
            "tolerances": list(self.tolerances),
            "baseline": self.baseline,
            "summary": self.summary.to_dict(orient="records"),
            "seconds": self.seconds,
        }
        if with_samples:
            out["samples"] = self.samples.to_dict(orient="records")
        return out


def _tolerance_column(x: float) -> str:
    return f"tolerance_{x * 100:g}pct_L_ns"


class _Sampler:
    """Draws the per-sample scale of every calc vertex (vertex-id order, one stream per sample).

    Drawing per calc vertex in id order (not per event-graph edge) makes a sample's costs
    independent of how the event graph is laid out, e.g. for another threshold ``S``.
    """

    def __init__(self, graph: ExecutionGraph, spec: VariabilitySpec):
        bad = [r for r in spec.slow_ranks if not 0 <= r < graph.num_ranks]
        if bad:
            raise InputError(f"slow rank {bad[0]} is outside 0..{graph.num_ranks - 1}")
        self.calc_vertices = np.flatnonzero(graph.kind == CALC)
        self.calc_rank = graph.rank[self.calc_vertices].astype(np.int64)
        slow = np.ones(graph.num_ranks)
        slow[list(spec.slow_ranks)] = spec.slowdown
        self.slow = slow[self.calc_rank]
        self.num_ranks = graph.num_ranks
        self.spec = spec

    def scales(self, seeds: list[np.random.SeedSequence]) -> np.ndarray:
        """Per-sample scales, samples × calc vertices."""
        spec = self.spec
        S = np.empty((len(seeds), self.calc_rank.size))
        for i, seq in enumerate(seeds):
            rng = np.random.default_rng(seq)
            spatial = factors(rng, self.num_ranks, spec.spatial_cv, spec.distribution)
            temporal = factors(rng, self.calc_rank.size, spec.temporal_cv, spec.distribution)
            S[i] = spatial[self.calc_rank] * temporal * self.slow
        return S


class _Evaluator:
    """The event graph of one graph and configuration, split into the arrays the kernels need."""

    def __init__(self, graph: ExecutionGraph, params: LogGPS, calc_vertices: np.ndarray, scales):
        ev = engine_for(graph).events(params)
        self.ev = ev
        c = ev.coef
        self.const = np.ascontiguousarray(c[:, CONST])
        self.cL = np.ascontiguousarray(c[:, COEF_L])
        self.rest = np.ascontiguousarray(
            c[:, COEF_G] * params.G + c[:, COEF_O] * params.o + c[:, COEF_GAP] * params.g
        )
        row_of_vertex = np.full(graph.num_vertices, -1, dtype=np.int64)
        row_of_vertex[calc_vertices] = np.arange(calc_vertices.size)
        edges, vertices = calc_edges(graph, ev)
        self.calc_row = np.full(ev.num_edges, -1, dtype=np.int64)
        self.calc_row[edges] = row_of_vertex[vertices]
        self.scales = scales
        self.mask = ring_size(ev.in_ptr, ev.src) - 1

    def runtimes(self, S: np.ndarray, Ls: np.ndarray) -> np.ndarray:
        return self._lanes(S, Ls, False)[0]

    def slopes(self, S: np.ndarray, Ls: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        T, right, left = self._lanes(S, Ls, True)
        return T, np.round(right, 6), np.round(left, 6)

    def _lanes(self, S: np.ndarray, Ls: np.ndarray, with_slopes: bool):
        """The samples (rows of ``S``, entries of ``Ls``) as lanes of one pass."""
        ev = self.ev
        return calc_lanes(
            ev.in_ptr,
            ev.src,
            self.const,
            self.cL,
            self.rest,
            self.calc_row,
            np.ascontiguousarray(S, dtype=np.float64),
            np.ascontiguousarray(Ls, dtype=np.float64),
            with_slopes,
            self.mask,
        )


def _tol(value: np.ndarray) -> np.ndarray:
    return 10 * (REL_TOL * np.abs(value) + ABS_TOL_NS)


def _tolerance_walk(
    evaluator: _Evaluator,
    S: np.ndarray,
    L0: float,
    T0: np.ndarray,
    right0: np.ndarray,
    bound: np.ndarray,
    max_steps: int = 10_000,
) -> np.ndarray:
    """Largest ``L ≥ L0`` with ``T_j(L) ≤ bound_j`` for every sample ``j``.

    The walk of :func:`llamp.lp.tolerance.max_parameter_within` for all samples in lockstep
    (only unfinished samples are re-evaluated): tangents from the left overshoot the root of the
    convex, non-decreasing ``T(L)``; Newton steps from the right with left slopes then land on it
    exactly, one step per linear piece crossed.
    """
    m = S.shape[0]
    x = np.full(m, L0)
    T = T0.copy()
    slope = right0.copy()
    left = np.zeros(m)
    step = np.maximum(bound - T, 1.0)
    active = np.flatnonzero(T < bound - _tol(bound))
    for _ in range(max_steps):
        if active.size == 0:
            break
        pos = slope[active] > 0.0
        gap = bound[active] - T[active]
        x[active] += np.where(pos, gap / np.where(pos, slope[active], 1.0), step[active])
        step[active] = np.where(pos, step[active], 2.0 * step[active])
        T[active], slope[active], left[active] = evaluator.slopes(S[active], x[active])
        active = active[T[active] < bound[active] - _tol(bound[active])]
    else:  # pragma: no cover - defensive
        raise RuntimeError("tolerance search did not bracket the bound")
    active = np.flatnonzero(T - bound > _tol(bound))
    for _ in range(max_steps):
        if active.size == 0:
            return x
        x[active] = np.maximum(x[active] - (T[active] - bound[active]) / left[active], L0)
        T[active], _, left[active] = evaluator.slopes(S[active], x[active])
        active = active[T[active] - bound[active] > _tol(bound[active])]
    raise RuntimeError("tolerance search did not converge")  # pragma: no cover


def _summary(frame: pd.DataFrame, baseline: dict[str, float]) -> pd.DataFrame:
    """One row per quantity: moments (when all samples are finite), percentiles, extremes."""
    rows = []
    for column in frame.columns:
        if column == "sample":
            continue
        values = frame[column].to_numpy(dtype=np.float64)
        p5, p50, p95 = np.percentile(values, [5, 50, 95])
        finite = bool(np.isfinite(values).all())  # an unbounded tolerance has no moments
        rows.append(
            {
                "quantity": column,
                "mean": float(values.mean()) if finite else math.inf,
                "sd": (float(values.std(ddof=1)) if values.size > 1 else 0.0)
                if finite
                else math.nan,
                "p5": float(p5),
                "p50": float(p50),
                "p95": float(p95),
                "min": float(values.min()),
                "max": float(values.max()),
                "baseline": baseline.get(column, math.nan),
            }
        )
    return pd.DataFrame(rows)


def _unbounded(graph: ExecutionGraph, params: LogGPS) -> bool:
    """No latency on any path far out: every latency tolerance of ``graph`` is unbounded."""
    point = engine_for(graph).point(params.with_(L=UNBOUNDED_AT["L"]), ("L",), left=False)
    return point.right["L"] <= 0.0


def _with_costs(graph: ExecutionGraph, calc_vertices: np.ndarray, scale: np.ndarray):
    """``graph`` with its calcs ``calc_vertices`` scaled by ``scale`` (one sample's costs)."""
    cost = graph.cost_ns.astype(np.float64, copy=True)
    cost[calc_vertices] *= scale
    # no source: the graph file's stored event graphs are of the traced costs
    return replace(graph, cost_ns=cost, source=None)


def sample_costs(graph: ExecutionGraph, spec: VariabilitySpec, sample: int) -> np.ndarray:
    """The calc costs (ns, one per vertex; 0 for sends/recvs) of sample ``sample`` of ``spec``.

    Reproduces exactly what :func:`monte_carlo` evaluates for that sample, e.g. to inspect or
    re-analyse one unusual sample with the other analyses.
    """
    if not 0 <= sample < spec.samples:
        raise InputError(f"sample {sample} is outside 0..{spec.samples - 1}")
    sampler = _Sampler(graph, spec)
    seq = np.random.SeedSequence(spec.seed).spawn(spec.samples)[sample]
    cost = graph.cost_ns.copy()
    cost[sampler.calc_vertices] *= sampler.scales([seq])[0]
    return cost


def monte_carlo(
    graph: ExecutionGraph,
    params: LogGPS,
    spec: VariabilitySpec | None = None,
    *,
    levels: tuple[float, ...] | list[float] = (0.01,),
    sensitivity: bool = True,
    batch: int = 16,
    workers: int | None = None,
    progress: bool = False,
    on_samples: Callable[[int], None] | None = None,
    **spec_fields: Any,
) -> Variability:
    """Monte Carlo of ``T`` (and ``λ_L``, ``ρ_L``, x% latency tolerance) under compute noise.

    ``spec`` (or its fields as keywords: ``spatial_cv``, ``temporal_cv``, ``distribution``,
    ``slow_ranks``, ``slowdown``, ``samples``, ``seed``) says what varies. ``sensitivity=False``
    computes ``T`` only (one sweep per sample); otherwise each sample also gets ``λ_L``/``ρ_L``
    and the tolerances (one sweep with slopes plus a few for the tolerance walk). ``batch``
    samples are drawn and evaluated together; ``workers`` threads (default: all cores).
    ``progress`` shows a bar on the terminal; ``on_samples(done)`` is called on the calling
    thread after each batch with the samples done so far: an exception it raises (a UI's
    Cancel) stops the run, and the batches not started are dropped. Under
    ``order="schedule"`` each sample is re-scheduled at its own costs (module docstring).
    """
    if spec is not None and spec_fields:
        raise InputError("pass either a VariabilitySpec or its fields as keywords, not both")
    spec = spec or VariabilitySpec(**spec_fields)
    levels = tuple(float(x) for x in levels) if sensitivity else ()
    if any(x < 0 for x in levels):
        raise InputError("tolerance levels must be ≥ 0 (fractions, e.g. 0.01 for 1%)")
    started = time.perf_counter()
    sampler = _Sampler(graph, spec)
    reschedule = params.order == "schedule"
    evaluator = (
        None if reschedule else _Evaluator(graph, params, sampler.calc_vertices, sampler.scales)
    )
    eng = engine_for(graph)
    base_point = eng.point(params, ("L",), left=False)
    baseline: dict[str, float] = {"runtime_ns": base_point.runtime_ns}
    if sensitivity:
        lam = base_point.right["L"]
        baseline["lambda_L"] = lam
        baseline["rho_L"] = (
            params.L * lam / base_point.runtime_ns if base_point.runtime_ns > 0 else 0.0
        )
        for x in levels:
            baseline[_tolerance_column(x)] = max_parameter_within(
                graph, params, (1.0 + x) * base_point.runtime_ns, parameter="L"
            )
        unbounded = _unbounded(graph, params)
    else:
        unbounded = False
    seeds = np.random.SeedSequence(spec.seed).spawn(spec.samples)
    chunks = [list(range(i, min(i + batch, spec.samples))) for i in range(0, spec.samples, batch)]
    n_cols = 1 + (2 + len(levels) if sensitivity else 0)
    results = np.zeros((spec.samples, n_cols))

    def evaluate(ev: _Evaluator, idx: list[int], S: np.ndarray, unbounded: bool) -> None:
        """The samples ``idx`` (rows of ``S``) on the event graph of ``ev``."""
        Ls = np.full(len(idx), params.L)
        if not sensitivity:
            results[idx, 0] = ev.runtimes(S, Ls)
            return
        T0, right, _ = ev.slopes(S, Ls)
        results[idx, 0] = T0
        results[idx, 1] = right
        results[idx, 2] = np.where(T0 > 0, params.L * right / np.where(T0 > 0, T0, 1.0), 0.0)
        for k, x in enumerate(levels):
            if unbounded:
                results[idx, 3 + k] = math.inf
            else:
                results[idx, 3 + k] = _tolerance_walk(ev, S, params.L, T0, right, (1.0 + x) * T0)

    def run(idx: list[int]) -> tuple[float, float]:
        """Evaluate the samples ``idx``; return (sampling, evaluation) seconds."""
        t0 = time.perf_counter()
        S = sampler.scales([seeds[i] for i in idx])
        t1 = time.perf_counter()
        if evaluator is not None:
            evaluate(evaluator, idx, S, sensitivity and unbounded)
            return t1 - t0, time.perf_counter() - t1
        ones = np.ones((1, sampler.calc_vertices.size))
        for i, scale in zip(idx, S, strict=True):
            own = _with_costs(graph, sampler.calc_vertices, scale)
            ev = _Evaluator(own, params, sampler.calc_vertices, sampler.scales)
            own_unbounded = sensitivity and _unbounded(own, params)
            evaluate(ev, [i], ones, own_unbounded)
        return t1 - t0, time.perf_counter() - t1

    n_workers = min(workers or _WORKERS, len(chunks))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=spec.samples, unit=" samples", desc="monte carlo", leave=False, disable=None
        )
    times: list[tuple[float, float]] = []
    if n_workers <= 1:
        outcomes = map(run, chunks)
        pool = None
    else:
        pool = ThreadPoolExecutor(max_workers=n_workers)
        outcomes = pool.map(run, chunks)
    done = 0
    try:
        for idx, spent in zip(chunks, outcomes, strict=True):
            times.append(spent)
            done += len(idx)
            if bar is not None:
                bar.update(len(idx))
            if on_samples is not None:
                on_samples(done)
    finally:
        if pool is not None:
            # every batch is queued at once: on an early exit only the running ones finish
            pool.shutdown(cancel_futures=True)
        if bar is not None:
            bar.close()
    columns = ["runtime_ns"] + (
        ["lambda_L", "rho_L"] + [_tolerance_column(x) for x in levels] if sensitivity else []
    )
    frame = pd.DataFrame(results, columns=columns)
    frame.insert(0, "sample", np.arange(spec.samples))
    seconds = {
        "total": time.perf_counter() - started,
        "sampling_cpu": float(sum(t[0] for t in times)),
        "evaluation_cpu": float(sum(t[1] for t in times)),
    }
    return Variability(
        params=params,
        spec=spec,
        tolerances=levels,
        baseline=baseline,
        samples=frame,
        summary=_summary(frame, baseline),
        seconds=seconds,
    )
