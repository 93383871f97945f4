"""Heterogeneous LogGP: per-pair ``L_ij``, ``G_ij`` and the λ^{ij} matrices (LLAMP App. I).

``L`` and ``G`` become ``P × P`` matrices; a message from rank ``i`` to rank ``j`` pays
``L_ij`` and ``G_ij``. The pairwise sensitivities ``λ_L^{ij} = ∂T/∂L_ij`` and
``λ_G^{ij} = ∂T/∂G_ij`` (Eq. 7) count, on the critical path, the latency terms of messages
from ``i`` to ``j`` (a rendezvous message counts 3) and their bytes − 1. They are directed
(``i → j``); for the paper's symmetric variable ``l_{ij} = l_{ji}`` add the transpose.

The matrices come from one critical path of the graph engine
(:func:`llamp.lp.weighted.pair_matrices`, exact right derivatives along a uniform shift of all
latencies, ties broken toward more messages). :func:`pair_lp` builds the paper's LP with one
``l_ij`` and one ``g_ij`` per ordered pair (App. I: ``l`` and ``g`` of Algorithm 1 replaced
per pair) and reads the reduced costs; both agree wherever ``T`` is differentiable in every
pair variable (elsewhere the LP may return any subgradient).

Sources of ``L_ij``, ``G_ij``: a two-level node model (:func:`two_level`), a topology with a
rank mapping (:func:`from_topology`), or a CSV file (:func:`read_pair_costs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from ortools.linear_solver.python import model_builder

from llamp.errors import InputError, LlampError
from llamp.graph import ExecutionGraph
from llamp.lp.engine import engine_for
from llamp.lp.event_graph import COEF_G, COEF_GAP, COEF_L, COEF_O, CONST
from llamp.lp.topology import (
    LinkLatencies,
    RankMapping,
    Topology,
    check_mapping,
    route_derivatives,
    route_latency,
)
from llamp.lp.weighted import MessageModel, check_pairwise, pair_matrices
from llamp.params import LogGPS

#: Node pairs per chunk when building node-to-node matrices from a topology.
_CHUNK_PAIRS = 1 << 22


@dataclass(frozen=True)
class PairCosts:
    """Per-pair latency ``L_ij`` (ns) and gap ``G_ij`` (ns/B), ``P × P`` (App. I)."""

    latency_ns: np.ndarray
    gap_ns_per_byte: np.ndarray
    source: str

    def __post_init__(self) -> None:
        L, G = self.latency_ns, self.gap_ns_per_byte
        if L.ndim != 2 or L.shape[0] != L.shape[1] or G.shape != L.shape:
            raise InputError(
                f"{self.source}: L and G must both be P × P, got {L.shape} and {G.shape}"
            )
        for name, m in (("L", L), ("G", G)):
            bad = ~(np.isfinite(m) & (m >= 0))
            if bad.any():
                i, j = np.argwhere(bad)[0]
                raise InputError(
                    f"{self.source}: {name}[{i},{j}] = {float(m[i, j]):g} is not finite and ≥ 0"
                )

    @property
    def num_ranks(self) -> int:
        return int(self.latency_ns.shape[0])


def two_level(
    node_of_rank: np.ndarray,
    intra: tuple[float, float],
    inter: tuple[float, float],
) -> PairCosts:
    """``(L, G) = intra`` between ranks on one node, ``inter`` otherwise (App. I's example)."""
    node = np.asarray(node_of_rank)
    same = node[:, None] == node[None, :]
    return PairCosts(
        latency_ns=np.where(same, float(intra[0]), float(inter[0])),
        gap_ns_per_byte=np.where(same, float(intra[1]), float(inter[1])),
        source=f"two-level (intra L={intra[0]:g} ns G={intra[1]:g} ns/B, "
        f"inter L={inter[0]:g} ns G={inter[1]:g} ns/B)",
    )


def node_costs(
    topology: Topology,
    nodes: np.ndarray,
    params: LogGPS,
    latencies: LinkLatencies | None = None,
    *,
    intra_node_gap_ns_per_byte: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Latency and gap between ``nodes[a]`` and ``nodes[b]`` (``U × U``), as in
    :func:`llamp.lp.topology.topology_model` (built in row chunks to bound memory)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    values = (latencies or LinkLatencies()).values(topology)
    U = nodes.size
    L = np.empty((U, U))
    rows = max(1, _CHUNK_PAIRS // max(U, 1))
    for start in range(0, U, rows):
        a = np.repeat(nodes[start : start + rows], U)
        b = np.tile(nodes, min(rows, U - start))
        L[start : start + rows] = route_latency(
            route_derivatives(topology.routes(a, b)), values
        ).reshape(-1, U)
    G = np.full((U, U), float(params.G))
    if intra_node_gap_ns_per_byte is not None:
        G[nodes[:, None] == nodes[None, :]] = float(intra_node_gap_ns_per_byte)
    return L, G


def from_topology(
    topology: Topology,
    mapping: RankMapping,
    params: LogGPS,
    latencies: LinkLatencies | None = None,
    *,
    intra_node_gap_ns_per_byte: float | None = None,
) -> PairCosts:
    """``L_ij`` of ranks ``i``, ``j`` on their mapped nodes (App. H latencies); ``G_ij = G``."""
    check_mapping(mapping, topology, mapping.num_ranks)
    used, inverse = np.unique(mapping.node_of_rank, return_inverse=True)
    L, G = node_costs(
        topology, used, params, latencies, intra_node_gap_ns_per_byte=intra_node_gap_ns_per_byte
    )
    return PairCosts(
        L[np.ix_(inverse, inverse)],
        G[np.ix_(inverse, inverse)],
        f"{topology.spec} ({mapping.source})",
    )


def read_pair_costs(
    path: str | Path,
    num_ranks: int,
    params: LogGPS,
    *,
    gap_path: str | Path | None = None,
) -> PairCosts:
    """``L_ij``, ``G_ij`` from CSV.

    Two layouts: rows ``i,j,L_ns[,G_ns_per_byte]`` under a header naming those columns (pairs
    not listed keep the configuration's ``L`` and ``G``; a row ``i,j`` also sets ``j,i``
    unless ``j,i`` has its own row: the matrices are symmetric, App. I), or a headerless
    ``P × P`` matrix of ``L`` in ns (``G`` then from the ``P × P`` file ``gap_path`` in ns/B,
    else the configuration's ``G`` everywhere).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such CSV file")
    first = next((ln for ln in path.read_text().splitlines() if ln.strip()), "")
    if _is_numeric_row(first):
        L = _read_square(path, num_ranks, "L (ns)")
        if gap_path is not None:
            G = _read_square(Path(gap_path), num_ranks, "G (ns/B)")
        else:
            G = np.full((num_ranks, num_ranks), float(params.G))
        return PairCosts(L, G, str(path))
    if gap_path is not None:
        raise InputError(f"{path}: a separate G file only goes with a P × P matrix of L")
    frame = pd.read_csv(path, skipinitialspace=True)
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = {"i", "j", "L_ns"} - set(frame.columns)
    if missing:
        raise InputError(
            f"{path}: the header must name i, j, L_ns (and optionally G_ns_per_byte); "
            f"missing {', '.join(sorted(missing))}"
        )
    try:
        i = frame["i"].to_numpy(dtype=np.int64)
        j = frame["j"].to_numpy(dtype=np.int64)
        lat = frame["L_ns"].to_numpy(dtype=np.float64)
        gap = (
            frame["G_ns_per_byte"].to_numpy(dtype=np.float64)
            if "G_ns_per_byte" in frame.columns
            else np.full(i.size, float(params.G))
        )
    except (ValueError, TypeError) as err:
        raise InputError(f"{path}: a value is not a number: {err}") from err
    bad = (i < 0) | (i >= num_ranks) | (j < 0) | (j >= num_ranks)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{path}:{k + 2}: rank pair ({i[k]}, {j[k]}) is outside 0..{num_ranks - 1}"
        )
    key = i * num_ranks + j
    uniq, counts = np.unique(key, return_counts=True)
    if (counts > 1).any():
        dup = int(uniq[counts > 1][0])
        raise InputError(f"{path}: pair ({dup // num_ranks}, {dup % num_ranks}) is listed twice")
    L = np.full((num_ranks, num_ranks), float(params.L))
    G = np.full((num_ranks, num_ranks), float(params.G))
    mirror = ~np.isin(j * num_ranks + i, key)
    L[j[mirror], i[mirror]] = lat[mirror]
    G[j[mirror], i[mirror]] = gap[mirror]
    L[i, j] = lat
    G[i, j] = gap
    return PairCosts(L, G, str(path))


def _is_numeric_row(line: str) -> bool:
    try:
        [float(x) for x in line.split(",")]
    except ValueError:
        return False
    return True


def _read_square(path: Path, num_ranks: int, what: str) -> np.ndarray:
    if not path.is_file():
        raise InputError(f"{path}: no such CSV file")
    try:
        m = np.loadtxt(path, delimiter=",", ndmin=2, comments="#")
    except ValueError as err:
        raise InputError(f"{path}: cannot read a matrix of {what}: {err}") from err
    if m.shape != (num_ranks, num_ranks):
        raise InputError(
            f"{path}: the {what} matrix is {m.shape[0]} × {m.shape[1]}, the graph has "
            f"{num_ranks} ranks"
        )
    return m


# ---------------------------------------------------------------------- evaluation
def _message_pairs(graph: ExecutionGraph) -> tuple[np.ndarray, np.ndarray]:
    sends, recvs = graph.messages()
    return graph.rank[sends].astype(np.int64), graph.rank[recvs].astype(np.int64)


def message_model(graph: ExecutionGraph, costs: PairCosts) -> MessageModel:
    """Per-message ``L_ij``, ``G_ij``; variables ``L`` and ``G`` shift every pair at once (so
    their slopes are the totals ``λ_L = Σ λ_L^{ij}``, ``λ_G = Σ λ_G^{ij}``)."""
    if costs.num_ranks != graph.num_ranks:
        raise InputError(
            f"{costs.source} is for {costs.num_ranks} ranks, the graph has {graph.num_ranks}"
        )
    i, j = _message_pairs(graph)
    ones, zeros = np.ones((i.size, 1)), np.zeros((i.size, 1))
    return MessageModel(
        latency_ns=costs.latency_ns[i, j],
        gap_ns_per_byte=costs.gap_ns_per_byte[i, j],
        names=("L", "G"),
        dlatency=np.hstack([ones, zeros]),
        dgap=np.hstack([zeros, ones]),
    )


def traffic(graph: ExecutionGraph) -> tuple[np.ndarray, np.ndarray]:
    """(messages, bytes) sent from rank ``i`` to rank ``j`` over the whole graph (``P × P``)."""
    P = graph.num_ranks
    i, j = _message_pairs(graph)
    count = np.zeros((P, P))
    volume = np.zeros((P, P))
    np.add.at(count, (i, j), 1.0)
    np.add.at(volume, (i, j), graph.size[graph.messages()[0]].astype(np.float64))
    return count, volume


@dataclass(frozen=True)
class PairSensitivity:
    """``T`` and the directed ``λ_L^{ij}``, ``λ_G^{ij}`` matrices under ``costs`` (App. I)."""

    runtime_ns: float
    lambda_L: np.ndarray
    lambda_G: np.ndarray
    costs: PairCosts
    messages: np.ndarray  # all messages i → j in the graph
    bytes: np.ndarray  # all bytes i → j in the graph

    def frame(self) -> pd.DataFrame:
        """One row per rank pair that exchanges messages: ``src, dst, latency_ns,
        gap_ns_per_byte, lambda_L, lambda_G, messages, bytes, latency_share`` (= L_ij·λ_L^{ij}/T,
        the share of ``T`` spent in that pair's latency), sorted by ``latency_share``."""
        src, dst = np.nonzero((self.messages > 0) | (self.lambda_L > 0) | (self.lambda_G > 0))
        L = self.costs.latency_ns[src, dst]
        lam = self.lambda_L[src, dst]
        frame = pd.DataFrame(
            {
                "src": src,
                "dst": dst,
                "latency_ns": L,
                "gap_ns_per_byte": self.costs.gap_ns_per_byte[src, dst],
                "lambda_L": lam,
                "lambda_G": self.lambda_G[src, dst],
                "messages": self.messages[src, dst].astype(np.int64),
                "bytes": self.bytes[src, dst].astype(np.int64),
                "latency_share": L * lam / self.runtime_ns if self.runtime_ns > 0 else 0.0 * L,
            }
        )
        return frame.sort_values(
            ["latency_share", "lambda_G", "src", "dst"],
            ascending=[False, False, True, True],
            ignore_index=True,
        )

    def as_dict(self) -> dict:
        return {
            "runtime_ns": self.runtime_ns,
            "lambda_L_total": float(self.lambda_L.sum()),
            "lambda_G_total": float(self.lambda_G.sum()),
            "source": self.costs.source,
            "lambda_L": self.lambda_L.tolist(),
            "lambda_G": self.lambda_G.tolist(),
            "L_ns": self.costs.latency_ns.tolist(),
            "G_ns_per_byte": self.costs.gap_ns_per_byte.tolist(),
            "pairs": self.frame().to_dict(orient="records"),
        }


def pair_sensitivity(graph: ExecutionGraph, params: LogGPS, costs: PairCosts) -> PairSensitivity:
    """``λ_L^{ij}``, ``λ_G^{ij}`` of one critical path under per-pair costs (App. I, Eq. 7)."""
    lam_L, lam_G, T = pair_matrices(graph, params, message_model(graph, costs))
    count, volume = traffic(graph)
    return PairSensitivity(T, lam_L, lam_G, costs, count, volume)


# ---------------------------------------------------------------------- the per-pair LP
@dataclass(frozen=True)
class PairLP:
    """The per-pair LP's optimum ``T`` and reduced costs of ``l_ij``, ``g_ij`` (``P × P``)."""

    runtime_ns: float
    lambda_L: np.ndarray
    lambda_G: np.ndarray
    num_variables: int
    num_constraints: int


def pair_lp(
    graph: ExecutionGraph, params: LogGPS, costs: PairCosts, *, solver: str = "glop"
) -> PairLP:
    """The LLAMP LP with one ``l_ij``, ``g_ij`` per ordered rank pair that exchanges messages
    (App. I), solved with OR-Tools; λ^{ij} are the reduced costs of ``l_ij``, ``g_ij``.

    Built on the event graph of :mod:`llamp.lp.event_graph` like :mod:`llamp.lp.model`, but
    unfolded (one time variable ``y_v ≥ 0`` per event and one row ``y_dst − y_src −
    cL·l_ij − cG·g_ij ≥ const + co·o`` per event edge, ``t ≥ y_s`` per sink; ``o`` fixed):
    the same value function ``T(l, g)``, so the same gradient wherever it exists, and
    per-pair columns are a vectorised scatter. Meant as a cross-check on small graphs:
    GLOP solves it from scratch (PDLP's reduced costs are approximate).
    """
    if solver not in ("glop", "highs", "pdlp"):
        raise InputError(f"unknown LP solver {solver!r}: choose glop, highs or pdlp")
    check_pairwise(graph)
    P = graph.num_ranks
    if costs.num_ranks != P:
        raise InputError(f"{costs.source} is for {costs.num_ranks} ranks, the graph has {P}")
    ev = engine_for(graph).events(params)
    n, E = ev.num_events, ev.num_edges
    i, j = _message_pairs(graph)
    pairs, pair_of_msg = np.unique(i * P + j, return_inverse=True)
    Q = pairs.size
    col_t = n
    col_l = n + 1 + np.arange(Q)
    col_g = n + 1 + Q + np.arange(Q)
    num_cols = n + 1 + 2 * Q

    has = ev.msg >= 0
    q = np.where(has, pair_of_msg[np.where(has, ev.msg, 0)] if Q else 0, 0)
    cL, cG = ev.coef[:, COEF_L], ev.coef[:, COEF_G]
    edge_rows = np.arange(E)
    rows = [edge_rows, edge_rows]
    cols = [ev.dst, ev.src]
    vals = [np.ones(E), -np.ones(E)]
    on_l = has & (cL != 0)
    on_g = has & (cG != 0)
    rows += [edge_rows[on_l], edge_rows[on_g]]
    cols += [
        col_l[q[on_l]] if Q else np.zeros(0, np.int64),
        col_g[q[on_g]] if Q else np.zeros(0, np.int64),
    ]
    vals += [-cL[on_l], -cG[on_g]]
    sinks = np.flatnonzero(np.diff(ev.out_ptr) == 0)
    sink_rows = E + np.arange(sinks.size)
    rows += [sink_rows, sink_rows]
    cols += [np.full(sinks.size, col_t), sinks]
    vals += [np.ones(sinks.size), -np.ones(sinks.size)]
    num_rows = E + sinks.size
    matrix = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(num_rows, num_cols),
    )
    row_lb = np.concatenate(
        [
            ev.coef[:, CONST] + ev.coef[:, COEF_O] * params.o + ev.coef[:, COEF_GAP] * params.g,
            np.zeros(sinks.size),
        ]
    )
    var_lb = np.zeros(num_cols)
    var_lb[col_t] = 0.0
    var_lb[col_l] = costs.latency_ns[pairs // P, pairs % P]
    var_lb[col_g] = costs.gap_ns_per_byte[pairs // P, pairs % P]
    objective = np.zeros(num_cols)
    objective[col_t] = 1.0

    model = model_builder.Model()
    model.helper.fill_model_from_sparse_data(
        var_lb, np.full(num_cols, np.inf), objective, row_lb, np.full(num_rows, np.inf), matrix
    )
    mb_solver = model_builder.Solver(solver)
    status = mb_solver.solve(model)
    if status != model_builder.SolveStatus.OPTIMAL:
        raise LlampError(
            f"{solver} did not solve the per-pair LLAMP LP ({num_cols} variables, "
            f"{num_rows} constraints): {status.name}"
        )
    variables = model.get_variables()
    rc = mb_solver.reduced_costs(variables).to_numpy()
    lam_L = np.zeros((P, P))
    lam_G = np.zeros((P, P))
    lam_L[pairs // P, pairs % P] = _snap(rc[col_l])
    lam_G[pairs // P, pairs % P] = _snap(rc[col_g])
    return PairLP(float(mb_solver.objective_value), lam_L, lam_G, num_cols, num_rows)


def _snap(values: np.ndarray) -> np.ndarray:
    """Reduced costs without float noise: integers exact, others to 6 decimals."""
    nearest = np.round(values)
    close = np.abs(values - nearest) <= 1e-6 * np.maximum(1.0, np.abs(values))
    return np.where(close, nearest, np.round(values, 6)) + 0.0


def pair_variables_model(graph: ExecutionGraph, costs: PairCosts) -> MessageModel:
    """``costs`` with one variable per ordered pair that exchanges messages, ``L[i,j]`` and
    ``G[i,j]`` (for one-sided derivatives along each pair: where the right and left ones agree,
    λ^{ij} is unique and every critical path has the same per-pair counts)."""
    P = graph.num_ranks
    i, j = _message_pairs(graph)
    pairs, pair_of_msg = np.unique(i * P + j, return_inverse=True)
    Q = pairs.size
    onehot = np.zeros((i.size, Q))
    onehot[np.arange(i.size), pair_of_msg] = 1.0
    names = tuple(f"L[{p // P},{p % P}]" for p in pairs) + tuple(
        f"G[{p // P},{p % P}]" for p in pairs
    )
    zeros = np.zeros_like(onehot)
    return MessageModel(
        latency_ns=costs.latency_ns[i, j],
        gap_ns_per_byte=costs.gap_ns_per_byte[i, j],
        names=names,
        dlatency=np.hstack([onehot, zeros]),
        dgap=np.hstack([zeros, onehot]),
    )


def write_pairs_csv(result: PairSensitivity, path: str | Path) -> Path:
    """The pair table of :meth:`PairSensitivity.frame` as CSV (readable by
    :func:`read_pair_costs`: its ``src, dst`` are ``i, j``)."""
    path = Path(path)
    frame = result.frame().rename(
        columns={"src": "i", "dst": "j", "latency_ns": "L_ns", "gap_ns_per_byte": "G_ns_per_byte"}
    )
    frame.to_csv(path, index=False)
    return path


def parse_level(text: str, what: str) -> tuple[float, float]:
    """``"300ns,0.05ns/B"`` → (300.0, 0.05): one level of the two-level model."""
    from llamp.config import parse_duration_ns, parse_gap_ns_per_byte

    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InputError(f"{what}: expected L,G (e.g. 300ns,0.05ns/B), got {text!r}")
    L, G = parse_duration_ns(parts[0]), parse_gap_ns_per_byte(parts[1])
    if not (math.isfinite(L) and L >= 0 and math.isfinite(G) and G >= 0):
        raise InputError(f"{what}: L and G must be finite and ≥ 0, got {text!r}")
    return L, G
