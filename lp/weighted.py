"""Evaluation under per-message latencies and gaps (heterogeneous LogGP, topologies, noise).

The homogeneous engine (:mod:`llamp.lp.engine`) reads ``(L, G, o)`` from the configuration.
Here every message ``m`` may have its own latency ``L_m`` and gap ``G_m`` (LLAMP App. H/I:
per-pair ``L_ij``, ``G_ij``; a topology's ``(h+1)·l_wire + h·d_switch``), calc costs may be
rescaled (Monte Carlo over compute noise), and the slopes tracked are along any set of
variables ``x`` with ``∂L_m/∂x`` and ``∂G_m/∂x`` given per message. The edge weights are
still affine in those variables, so ``T`` stays convex and piecewise linear along each and the
same exact tie-breaking gives right (or left) derivatives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llamp.errors import InputError
from llamp.graph import COLL, ExecutionGraph
from llamp.lp.engine import engine_for
from llamp.lp.event_graph import COEF_G, COEF_L, CONST, EventGraph
from llamp.lp.kernels import (
    ABS_TOL_NS,
    REL_TOL,
    backtrack_path,
    edge_lanes,
    edge_slopes,
    message_weights,
    ring_size,
)
from llamp.params import LogGPS

PAIRWISE_NEEDS_EXPANSION = (
    "this graph charges collectives with an analytic model (coll vertices), whose cost has no "
    "sender/receiver pair: per-pair latencies and gaps (topologies, sensitivity matrices, "
    "placement) cannot price it. Build the graph with the collectives expanded (no "
    "OP=dimemas or OP=thakur_gropp choice)"
)


def check_pairwise(graph: ExecutionGraph) -> None:
    """Refuse a graph with analytic collectives for a per-pair analysis (see above)."""
    if np.any(graph.kind == COLL):
        raise InputError(PAIRWISE_NEEDS_EXPANSION)


@dataclass(frozen=True)
class MessageModel:
    """Per-message latency and gap, and their derivatives along named variables.

    ``latency_ns[m]``, ``gap_ns_per_byte[m]`` for message ``m`` (in ``graph.messages()``
    order); ``dlatency[m, j] = ∂L_m/∂x_j`` and ``dgap[m, j] = ∂G_m/∂x_j`` for the variables
    ``names``. ``calc_scale`` multiplies calc costs (``None``: unchanged).

    ``homogeneous``: every message at the configuration's ``L`` and ``G`` with variables
    ``("L", "G")`` (:meth:`uniform`). Only such a model can price analytic collectives: their
    cost has no sender/receiver pair to take a per-pair ``L_ij`` or a topology path from.
    """

    latency_ns: np.ndarray
    gap_ns_per_byte: np.ndarray
    names: tuple[str, ...] = ()
    dlatency: np.ndarray | None = None
    dgap: np.ndarray | None = None
    homogeneous: bool = False

    @classmethod
    def uniform(cls, graph: ExecutionGraph, params: LogGPS) -> MessageModel:
        """Every message at the configuration's ``L`` and ``G``, variables ``L`` and ``G``."""
        m = graph.messages()[0].size
        ones = np.ones((m, 1))
        zeros = np.zeros((m, 1))
        return cls(
            latency_ns=np.full(m, params.L),
            gap_ns_per_byte=np.full(m, params.G),
            names=("L", "G"),
            dlatency=np.hstack([ones, zeros]),
            dgap=np.hstack([zeros, ones]),
            homogeneous=True,
        )


def edge_weights(
    ev: EventGraph, params: LogGPS, model: MessageModel, calc_scale: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Edge weights and their derivatives (E × k) under ``model``: one pass of
    :func:`~llamp.lp.kernels.message_weights` over the compact edge form (no E × 5
    coefficient table, no E × k temporaries)."""
    k = len(model.names)
    w = np.empty(ev.num_edges)
    dw = np.empty((ev.num_edges, k))

    def rows(slopes: np.ndarray | None) -> np.ndarray:  # none: no slope from them
        if not k or slopes is None or not slopes.size:
            return np.zeros((0, k))
        return np.ascontiguousarray(slopes, dtype=np.float64)

    message_weights(
        ev.pattern,
        ev.value,
        ev.fixed,
        ev.scaled,
        ev.msg,
        np.asarray(model.latency_ns, dtype=np.float64),
        np.asarray(model.gap_ns_per_byte, dtype=np.float64),
        rows(model.dlatency),
        rows(model.dgap),
        float(params.o),
        float(params.g),
        np.zeros(0) if calc_scale is None else np.asarray(calc_scale, dtype=np.float64),
        w,
        dw,
    )
    coll = ev.collective_edges()
    if coll.any():
        if not model.homogeneous:
            raise InputError(PAIRWISE_NEEDS_EXPANSION)
        c = ev.coefficients(np.flatnonzero(coll))
        w[coll] += c[:, COEF_L] * params.L + c[:, COEF_G] * params.G
        dw[coll, model.names.index("L")] = c[:, COEF_L]
        dw[coll, model.names.index("G")] = c[:, COEF_G]
    return w, dw


@dataclass(frozen=True, eq=False)
class WeightedPoint:
    """``T`` and right derivatives along the model's variables, plus one critical path."""

    runtime_ns: float
    slopes: dict[str, float]
    path_edges: np.ndarray  # event-graph edges of one critical path (source → sink)
    events: EventGraph


def evaluate_model(
    graph: ExecutionGraph,
    params: LogGPS,
    model: MessageModel,
    *,
    sign: float = 1.0,
    calc_scale: np.ndarray | None = None,
) -> WeightedPoint:
    """``T`` and one-sided derivatives along ``model.names`` (sign +1 right, −1 left)."""
    ev = engine_for(graph).events(params)
    w, dw = edge_weights(ev, params, model, calc_scale)
    if ev.num_events == 0:
        return WeightedPoint(0.0, dict.fromkeys(model.names, 0.0), np.zeros(0, np.int64), ev)
    t, d, pred = edge_slopes(ev.in_ptr, ev.src, w, dw, sign, REL_TOL, ABS_TOL_NS)
    T = float(t.max())
    tight = np.flatnonzero(t >= T - (REL_TOL * abs(T) + ABS_TOL_NS))
    if d.shape[1]:
        agg = d[tight].max(axis=0) if sign > 0 else d[tight].min(axis=0)
        sink = int(tight[np.argmax(sign * d[tight, 0])])
    else:
        agg = np.zeros(0)
        sink = int(tight[0])
    _, edges = backtrack_path(pred, ev.src, sink)
    slopes = {name: float(np.round(agg[i], 6)) for i, name in enumerate(model.names)}
    return WeightedPoint(T, slopes, edges, ev)


def runtime_batch(
    graph: ExecutionGraph,
    params: LogGPS,
    calc_scales: np.ndarray,
    model: MessageModel | None = None,
    *,
    memory_bytes: int = 1 << 30,
) -> np.ndarray:
    """``T`` for each column of ``calc_scales`` (E_calc scaling per sample, E × m), batched."""
    ev = engine_for(graph).events(params)
    model = model or MessageModel.uniform(graph, params)
    w0, _ = edge_weights(ev, params, model)
    const = ev.coef[:, CONST]
    base = w0 - const
    m = calc_scales.shape[1]
    out = np.empty(m)
    if ev.num_events == 0:
        return np.zeros(m)
    batch = int(max(1, min(m, memory_bytes // (16 * max(ev.num_edges, 1)))))
    mask = ring_size(ev.in_ptr, ev.src) - 1
    one = np.zeros(ev.num_events, dtype=np.int64)
    for start in range(0, m, batch):
        scale = calc_scales[:, start : start + batch]
        W = np.ascontiguousarray(base[:, None] + const[:, None] * scale)
        T = edge_lanes(ev.in_ptr, ev.src, W, one, 1, mask)[:, 0]
        out[start : start + scale.shape[1]] = T
    return out


def pair_matrices(
    graph: ExecutionGraph, params: LogGPS, model: MessageModel | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Per-rank-pair sensitivities ``λ_L^{ij}``, ``λ_G^{ij}`` from one critical path (App. I).

    ``λ_L^{ij}`` counts the latency terms of messages from rank i to rank j on the path (a
    rendezvous message counts 3), ``λ_G^{ij}`` their bytes − 1. Their sums are ``λ_L``, ``λ_G``
    of that path. Returns (λ_L matrix, λ_G matrix, T).
    """
    check_pairwise(graph)
    model = model or MessageModel.uniform(graph, params)
    point = evaluate_model(graph, params, model)
    ev = point.events
    edges = point.path_edges
    P = graph.num_ranks
    lam_L = np.zeros((P, P))
    lam_G = np.zeros((P, P))
    msg = ev.msg[edges]
    on = msg >= 0
    if on.any():
        sends, recvs = graph.messages()
        i = graph.rank[sends[msg[on]]]
        j = graph.rank[recvs[msg[on]]]
        np.add.at(lam_L, (i, j), ev.coef[edges[on], COEF_L])
        np.add.at(lam_G, (i, j), ev.coef[edges[on], COEF_G])
    return lam_L, lam_G, point.runtime_ns


def calc_edges(graph: ExecutionGraph, ev: EventGraph) -> tuple[np.ndarray, np.ndarray]:
    """(edge ids, vertex ids) of the start→finish edges of calc vertices: where costs live.

    A per-vertex cost scale ``s[v]`` becomes the edge scale ``scale[edges] = s[vertices]``
    (all other edges keep scale 1) for :func:`evaluate_model` and :func:`runtime_batch`.
    """
    vs = ev.vertex_of_pos(ev.src)
    vd = ev.vertex_of_pos(ev.dst)
    start = ev.event_of_pos[ev.src] % 2 == 0
    same = (vs == vd) & (vs >= 0) & start
    edges = np.flatnonzero(same & (graph.kind[np.maximum(vs, 0)] == 0))
    return edges, vs[edges]
