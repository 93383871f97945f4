"""Monte Carlo over compute variability (``llamp mc``, docs/analyses.md): samples per second.

Target (issue "What-if analyses"): 1000 samples of a 10^5-vertex graph within a minute. The
graph is the synthetic stencil code (16 ranks, 2-D halo exchange, an allreduce every
iteration, an alltoall every 10th). Measured: ``T`` only (one sweep per sample), and ``T`` with
``λ_L``/``ρ_L`` and the 1 % latency tolerance (one sweep with slopes plus the tolerance walk).
For reference, ``T`` through ``llamp.lp.weighted.runtime_batch`` (samples as columns of an
edges × samples weight matrix, 50 samples per call), with the same scales.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.timing import median_time, peak_rss_mb, row
from llamp.ingest.synthetic import stencil_with_vertices
from llamp.lp import engine_for
from llamp.lp.variability import VariabilitySpec, _Sampler, monte_carlo
from llamp.lp.weighted import calc_edges, runtime_batch
from llamp.params import LogGPS

PARAMS = LogGPS()
SPEC = dict(spatial_cv=0.05, temporal_cv=0.02, slow_ranks=(3, 7), slowdown=1.5, seed=0)


def _monte_carlo(n: int, samples: int, repeat: int) -> list[dict[str, Any]]:
    graph = stencil_with_vertices(n, ranks=16, alltoall_every=10)
    case = f"stencil {graph.num_vertices:.2g} vertices, {samples} samples"
    engine_for(graph).events(PARAMS)
    monte_carlo(graph, PARAMS, samples=2, **SPEC)  # compile/warm
    rows = []
    t, runs, result = median_time(
        lambda: monte_carlo(graph, PARAMS, samples=samples, sensitivity=False, **SPEC), repeat
    )
    rows.append(row("variability", case, "T only", t, "s", runs))
    rows.append(row("variability", case, "  per sample", t / samples * 1e3, "ms"))
    rows.append(
        row(
            "variability",
            case,
            "  sampling (CPU, all threads)",
            result.seconds["sampling_cpu"],
            "s",
        )
    )
    t, runs, result = median_time(
        lambda: monte_carlo(graph, PARAMS, samples=samples, levels=(0.01,), **SPEC), repeat
    )
    rows.append(row("variability", case, "T, λ_L, ρ_L, 1% L tolerance", t, "s", runs))
    rows.append(row("variability", case, "  per sample", t / samples * 1e3, "ms"))
    summary = result.summary.set_index("quantity")
    rows.append(
        row(
            "variability",
            case,
            "  mean T / no-noise T",
            summary.loc["runtime_ns", "mean"] / result.baseline["runtime_ns"],
            "ratio",
        )
    )
    return rows


def _runtime_batch(n: int, samples: int, repeat: int) -> list[dict[str, Any]]:
    graph = stencil_with_vertices(n, ranks=16, alltoall_every=10)
    case = f"stencil {graph.num_vertices:.2g} vertices, {samples} samples"
    ev = engine_for(graph).events(PARAMS)
    edges, vertices = calc_edges(graph, ev)
    sampler = _Sampler(graph, VariabilitySpec(samples=samples, **SPEC))
    column = np.searchsorted(sampler.calc_vertices, vertices)
    seeds = np.random.SeedSequence(0).spawn(samples)

    def batched() -> np.ndarray:
        out = []
        for start in range(0, samples, 50):
            S = sampler.scales(seeds[start : start + 50])
            scales = np.ones((ev.num_edges, S.shape[0]))
            scales[edges] = S[:, column].T
            out.append(runtime_batch(graph, PARAMS, scales))
        return np.concatenate(out)

    runtime_batch(graph, PARAMS, np.ones((ev.num_edges, 2)))  # compile/warm
    t, runs, _ = median_time(batched, repeat)
    return [row("variability", case, "T only via runtime_batch (reference)", t, "s", runs)]


def run(quick: bool, repeat: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    rows.extend(_monte_carlo(10**5, 200 if quick else 1000, repeat))
    rows.extend(_runtime_batch(10**5, 200 if quick else 1000, 1))
    if not quick:
        rows.extend(_monte_carlo(10**6, 100, 1))
    rows.append(row("variability", "all", "peak RSS", peak_rss_mb(), "MB"))
    return rows
