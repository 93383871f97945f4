"""Rank placement driven by the pairwise sensitivity matrices (LLAMP App. J, Algorithm 3).

A *machine* is a set of ``N`` nodes with ``ranks_per_node`` slots each and node-to-node
latency and gap matrices (from a topology, App. H, or a two-level intra/inter-node model,
App. I). A mapping ``π`` puts every rank on a node; a message from rank ``i`` to ``j`` then
pays ``L[π(i), π(j)]`` and ``G[π(i), π(j)]``.

Algorithm 3, as implemented by :func:`place`:

1. start from the best of the baselines (block, round-robin, communication volume), a
   random mapping or the user's;
2. evaluate ``T`` and the critical path's ``λ_L^{ij}``, ``λ_G^{ij}`` under ``π`` (App. I);
3. rank every swap of two ranks on different nodes by its estimated gain, the first-order
   change of ``T`` along the current critical path,
   ``−Σ_ij λ_L^{ij}·ΔL_ij + λ_G^{ij}·ΔG_ij`` (vectorised for all ``P²`` swaps at once,
   :func:`swap_gains`);
   free slots (when the machine has more than ``P``) count as silent ranks, so a swap with
   one moves a rank to a free slot;
4. re-evaluate ``T`` exactly for the ``candidates`` best-ranked swaps with a positive gain
   (one batched sweep of the event graph) and apply the best of them if it improves the
   mapping; if none does, try the next ``candidates``, and so on. When no swap with a
   positive estimated gain improves the mapping, stop (the paper's "revert and stop", which
   gives up after the first candidate); repeat from 2 within the time and iteration budgets.

"Improves" is lexicographic: a lower ``T``, or the same ``T`` (within float noise) and a lower
mean completion time over ranks. The tie-break is an extension of the paper's rule: with
several equally critical paths (symmetric codes), fixing one of them leaves ``T`` unchanged
but shortens that path, and the next iteration's critical path is another one; without it the
search would stop at the first plateau.

Baselines: block (consecutive ranks fill a node), round-robin (rank ``r`` on node
``r mod N``), on a training run every layout of its parallel dimensions (``tp,dp,pp``:
tensor-parallel groups fill a node first, :mod:`llamp.lp.group_placement`) and a
communication-volume partitioner (recursive bisection of the byte matrix
with Kernighan–Lin, networkx, following the node order so halves map onto topology subtrees,
as Scotch-style static mapping does). Mappings are written as an Open MPI rankfile, an MPICH
(Hydra) machinefile or a Slurm ``SLURM_HOSTFILE`` for ``--distribution=arbitrary``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import scipy.sparse as sp

from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp.engine import engine_for
from llamp.lp.event_graph import COEF_G, COEF_GAP, COEF_L, COEF_O, CONST
from llamp.lp.kernels import ABS_TOL_NS, REL_TOL, edge_lanes, ring_size
from llamp.lp.matrix import node_costs, traffic
from llamp.lp.topology import LinkLatencies, Topology
from llamp.lp.weighted import MessageModel, pair_matrices
from llamp.params import LogGPS

#: Output formats of a mapping.
FORMATS = ("openmpi", "mpich", "slurm")


# ---------------------------------------------------------------------- machines
@dataclass(frozen=True)
class Machine:
    """``N`` nodes with ``ranks_per_node`` slots; ``latency_ns[a, b]``, ``gap_ns_per_byte[a, b]``
    between nodes ``a`` and ``b`` (the diagonal: same node); one host name per node."""

    latency_ns: np.ndarray
    gap_ns_per_byte: np.ndarray
    ranks_per_node: int
    hostnames: tuple[str, ...]
    description: str

    def __post_init__(self) -> None:
        N = self.latency_ns.shape[0]
        if self.latency_ns.shape != (N, N) or self.gap_ns_per_byte.shape != (N, N):
            raise InputError(f"{self.description}: node latency and gap matrices must be N × N")
        if self.ranks_per_node < 1:
            raise InputError(f"ranks per node must be ≥ 1, got {self.ranks_per_node}")
        if len(self.hostnames) != N:
            raise InputError(f"{self.description}: {len(self.hostnames)} host names for {N} nodes")
        if len(set(self.hostnames)) != N:
            raise InputError(f"{self.description}: host names must be unique")

    @property
    def num_nodes(self) -> int:
        return int(self.latency_ns.shape[0])

    @property
    def slots(self) -> int:
        return self.num_nodes * self.ranks_per_node

    def check(self, num_ranks: int) -> None:
        """The machine has a slot for every rank."""
        if num_ranks > self.slots:
            raise InputError(
                f"{num_ranks} ranks do not fit on {self.num_nodes} nodes × {self.ranks_per_node} "
                f"ranks per node ({self.description})"
            )


def topology_machine(
    topology: Topology,
    num_nodes: int,
    ranks_per_node: int,
    params: LogGPS,
    latencies: LinkLatencies | None = None,
    *,
    hostnames: list[str] | None = None,
    intra_node_gap_ns_per_byte: float | None = None,
) -> Machine:
    """The first ``num_nodes`` nodes of ``topology`` (dense order), App. H latencies, gap ``G``."""
    if not 1 <= num_nodes <= topology.num_nodes:
        raise InputError(f"{topology.spec} has {topology.num_nodes} nodes, asked for {num_nodes}")
    nodes = np.arange(num_nodes)
    L, G = node_costs(
        topology, nodes, params, latencies, intra_node_gap_ns_per_byte=intra_node_gap_ns_per_byte
    )
    names = tuple(hostnames) if hostnames is not None else tuple(topology.node_names()[:num_nodes])
    return Machine(L, G, ranks_per_node, names, f"{topology.spec}, {num_nodes} nodes")


def two_level_machine(
    num_nodes: int,
    ranks_per_node: int,
    intra: tuple[float, float],
    inter: tuple[float, float],
    *,
    hostnames: list[str] | None = None,
) -> Machine:
    """``num_nodes`` identical nodes: ``(L, G) = intra`` within a node, ``inter`` between."""
    if num_nodes < 1:
        raise InputError(f"the machine needs at least one node, got {num_nodes}")
    eye = np.eye(num_nodes, dtype=bool)
    names = (
        tuple(hostnames) if hostnames is not None else tuple(f"node{i}" for i in range(num_nodes))
    )
    return Machine(
        np.where(eye, float(intra[0]), float(inter[0])),
        np.where(eye, float(intra[1]), float(inter[1])),
        ranks_per_node,
        names,
        f"two-level, {num_nodes} nodes (intra L={intra[0]:g} ns G={intra[1]:g} ns/B, "
        f"inter L={inter[0]:g} ns G={inter[1]:g} ns/B)",
    )


def mapping_model(
    graph: ExecutionGraph, machine: Machine, node_of_rank: np.ndarray
) -> MessageModel:
    """Per-message ``L[π(i), π(j)]``, ``G[π(i), π(j)]``; variables ``L``, ``G`` shift all."""
    sends, recvs = graph.messages()
    a = node_of_rank[graph.rank[sends]]
    b = node_of_rank[graph.rank[recvs]]
    ones, zeros = np.ones((sends.size, 1)), np.zeros((sends.size, 1))
    return MessageModel(
        latency_ns=machine.latency_ns[a, b],
        gap_ns_per_byte=machine.gap_ns_per_byte[a, b],
        names=("L", "G"),
        dlatency=np.hstack([ones, zeros]),
        dgap=np.hstack([zeros, ones]),
    )


# ---------------------------------------------------------------------- baselines
def block_mapping(num_ranks: int, machine: Machine) -> np.ndarray:
    """Rank ``r`` on node ``r // ranks_per_node`` (MPI launchers' default)."""
    machine.check(num_ranks)
    return np.arange(num_ranks, dtype=np.int64) // machine.ranks_per_node


def round_robin_mapping(num_ranks: int, machine: Machine) -> np.ndarray:
    """Rank ``r`` on node ``r mod N`` over all ``N`` nodes (a cyclic distribution)."""
    machine.check(num_ranks)
    return np.arange(num_ranks, dtype=np.int64) % machine.num_nodes


def layout_mappings(graph: ExecutionGraph, machine: Machine) -> dict[str, np.ndarray]:
    """Node of every rank in each layout of a training run's parallel dimensions (its process
    groups, :func:`llamp.lp.group_placement.parallel_dims`; named by the layout, innermost
    first): consecutive slots of the layout fill a node. None for a run with fewer than two
    dimensions (one layout: block), more than :data:`~llamp.lp.group_placement.MAX_DEFAULT_DIMS`
    or process groups that are no regular layout (``llamp place-groups`` says why)."""
    from llamp.lp.group_placement import MAX_DEFAULT_DIMS, order_slots, parallel_dims

    machine.check(graph.num_ranks)
    try:
        dims, _ = parallel_dims(graph)
    except InputError:
        return {}
    if not 2 <= len(dims) <= MAX_DEFAULT_DIMS:
        return {}
    out = {}
    for order in itertools.permutations([d.name for d in dims]):
        out[",".join(order)] = order_slots(dims, order) // machine.ranks_per_node
    return out


def volume_mapping(graph: ExecutionGraph, machine: Machine, *, seed: int = 0) -> np.ndarray:
    """Communication-volume baseline: recursive Kernighan–Lin bisection of the byte matrix.

    Ranks and the node range ``[0, N)`` are split together: each half of the ranks (sizes
    proportional to the halves' slots) goes to one half of the nodes, minimising the bytes
    exchanged across the cut; one node's share ends the recursion. ``N`` is the node count
    block mapping uses.
    """
    P = graph.num_ranks
    machine.check(P)
    _, volume = traffic(graph)
    sym = volume + volume.T
    weights = nx.Graph()
    weights.add_nodes_from(range(P))
    i, j = np.nonzero(np.triu(sym, 1))
    weights.add_weighted_edges_from(zip(i.tolist(), j.tolist(), sym[i, j].tolist(), strict=True))
    node_of_rank = np.zeros(P, dtype=np.int64)
    rpn = machine.ranks_per_node
    used = -(-P // rpn)

    def split(ranks: list[int], lo: int, hi: int) -> None:
        if hi - lo == 1 or len(ranks) <= 1:
            node_of_rank[ranks] = lo
            return
        n1 = (hi - lo) // 2
        cap1, cap2 = n1 * rpn, (hi - lo - n1) * rpn
        size1 = min(cap1, max(len(ranks) - cap2, round(len(ranks) * n1 / (hi - lo))))
        first, second = ranks[:size1], ranks[size1:]
        if first and second:
            a, b = nx.algorithms.community.kernighan_lin_bisection(
                weights.subgraph(ranks), partition=(set(first), set(second)), seed=seed
            )
            first, second = sorted(a), sorted(b)  # KL swaps pairs, keeping the sizes
            if len(first) != size1:  # … but may return the two parts in either order
                first, second = second, first
        split(first, lo, lo + n1)
        split(second, lo + n1, hi)

    split(list(range(P)), 0, used)
    return node_of_rank


# ---------------------------------------------------------------------- swap gains
def swap_deltas(flow: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """``Δ[r, s] = Σ_ab F[a,b]·(X'[a,b] − X[a,b])`` for swapping ranks ``r`` and ``s``.

    ``F`` (``P × P``) is a sensitivity matrix, ``X[a, b]`` the cost between the current nodes
    of ranks ``a`` and ``b``; the swap permutes rows and columns ``r``, ``s`` of ``X``. The
    quadratic-assignment swap delta, for all ``(r, s)`` at once: ``F·Xᵀ`` and ``Fᵀ·X`` give the
    row and column sums (sparse ``F``: a critical path touches few pairs), corrected for the
    entries in rows/columns ``r`` and ``s`` themselves.
    """
    F = np.asarray(flow, dtype=np.float64)
    X = np.asarray(dist, dtype=np.float64)
    Fs = sp.csr_matrix(F)
    A = np.asarray(Fs @ X.T)  # A[i, j] = Σ_b F[i, b]·X[j, b]
    B = np.asarray(Fs.T @ X)  # B[i, j] = Σ_a F[a, i]·X[a, j]
    dA, dB = np.diag(A), np.diag(B)
    dF, dX = np.diag(F), np.diag(X)
    Fr, Fs_ = dF[:, None], dF[None, :]
    Xr, Xs = dX[:, None], dX[None, :]
    rows = A.T + A - dA[:, None] - dA[None, :]
    rows -= (F.T - Fr) * (Xr - X.T) + (Fs_ - F) * (X - Xs)
    cols = B.T + B - dB[:, None] - dB[None, :]
    cols -= (F - Fr) * (Xr - X) + (Fs_ - F.T) * (X.T - Xs)
    corners = (Fs_ - Fr) * Xr + (Fr - Fs_) * Xs + (F.T - F) * X + (F - F.T) * X.T
    delta = rows + cols + corners
    np.fill_diagonal(delta, 0.0)
    return delta


def swap_gains(
    lambda_L: np.ndarray, lambda_G: np.ndarray, machine: Machine, node_of_rank: np.ndarray
) -> np.ndarray:
    """Estimated decrease of ``T`` for swapping ranks ``r`` and ``s`` (``P × P``): the
    sensitivity × latency (and gap) gain of App. J along the current critical path."""
    idx = np.asarray(node_of_rank)
    XL = machine.latency_ns[np.ix_(idx, idx)]
    XG = machine.gap_ns_per_byte[np.ix_(idx, idx)]
    return -(swap_deltas(lambda_L, XL) + swap_deltas(lambda_G, XG))


class _Evaluator:
    """``(T, mean rank completion)`` of many mappings, batched in one sweep per chunk."""

    def __init__(self, graph: ExecutionGraph, params: LogGPS, machine: Machine):
        self.graph, self.params, self.machine = graph, params, machine
        self.ev = ev = engine_for(graph).events(params)
        vertex = ev.vertex_of_pos(np.arange(ev.num_events))
        self.rank_of_pos = np.where(vertex >= 0, graph.rank[np.maximum(vertex, 0)], -1).astype(
            np.int64
        )
        self.w0 = (
            ev.coef[:, CONST] + ev.coef[:, COEF_O] * params.o + ev.coef[:, COEF_GAP] * params.g
        )
        self.has = ev.msg >= 0
        self.msg = ev.msg[self.has]
        self.cL = ev.coef[self.has, COEF_L]
        self.cG = ev.coef[self.has, COEF_G]
        sends, recvs = graph.messages()
        self.src_rank = graph.rank[sends]
        self.dst_rank = graph.rank[recvs]
        self.mask = ring_size(ev.in_ptr, ev.src) - 1
        self.batch = int(max(1, min(64, (1 << 28) // (8 * max(ev.num_edges, 1)))))

    def __call__(self, mappings: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        T = np.zeros(len(mappings))
        mean = np.zeros(len(mappings))
        if self.ev.num_events == 0:
            return T, mean
        for start in range(0, len(mappings), self.batch):
            chunk = mappings[start : start + self.batch]
            W = np.repeat(self.w0[:, None], len(chunk), axis=1)
            for c, node in enumerate(chunk):
                a, b = node[self.src_rank], node[self.dst_rank]
                L = self.machine.latency_ns[a, b]
                G = self.machine.gap_ns_per_byte[a, b]
                W[self.has, c] += self.cL * L[self.msg] + self.cG * G[self.msg]
            fin = edge_lanes(
                self.ev.in_ptr, self.ev.src, W, self.rank_of_pos, self.graph.num_ranks, self.mask
            )
            T[start : start + len(chunk)] = fin.max(axis=1)
            mean[start : start + len(chunk)] = fin.mean(axis=1)
        return T, mean


def _better(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """``a`` improves on ``b``: lower ``T``, or equal ``T`` and lower mean completion."""
    tol = 10 * (REL_TOL * abs(b[0]) + ABS_TOL_NS)
    if a[0] < b[0] - tol:
        return True
    return abs(a[0] - b[0]) <= tol and a[1] < b[1] - 10 * (REL_TOL * abs(b[1]) + ABS_TOL_NS)


# ---------------------------------------------------------------------- Algorithm 3
@dataclass(frozen=True)
class Placement:
    """Mappings compared (``mappings``: one row each — ``mapping``, ``runtime_ns``,
    ``vs_block`` (T / T_block − 1), ``mean_rank_finish_ns``, ``inter_node_messages``,
    ``inter_node_bytes``, ``nodes_used``), the node of every rank per mapping, the swaps of
    the heuristic (``history``: ``iteration, rank_a, rank_b, node_a, node_b,
    estimated_gain_ns, runtime_ns, mean_rank_finish_ns, candidates_tried, elapsed_s``; row 0 is
    the start, ``rank_b = −1`` a move to a free slot of ``node_b``) and why it stopped."""

    mappings: pd.DataFrame
    node_of_rank: dict[str, np.ndarray]
    best: str
    history: pd.DataFrame
    stop_reason: str
    machine: Machine
    elapsed_s: float

    def as_dict(self) -> dict:
        return {
            "machine": self.machine.description,
            "best": self.best,
            "stop_reason": self.stop_reason,
            "elapsed_s": self.elapsed_s,
            "mappings": self.mappings.to_dict(orient="records"),
            "history": self.history.to_dict(orient="records"),
            "node_of_rank": {k: v.tolist() for k, v in self.node_of_rank.items()},
            "hostnames": list(self.machine.hostnames),
        }


def place(
    graph: ExecutionGraph,
    params: LogGPS,
    machine: Machine,
    *,
    budget_s: float = 30.0,
    max_iterations: int = 1000,
    candidates: int = 16,
    start: str | np.ndarray = "best",
    seed: int = 0,
    progress: Callable[[int, float], object] | None = None,
) -> Placement:
    """Algorithm 3 (App. J) within ``budget_s`` seconds and ``max_iterations`` swaps; see the
    module docstring. ``start``: ``best`` of the baselines, one of them (``block``,
    ``round-robin``, ``volume``, a layout such as ``tp,dp,pp``), ``random`` (a seeded shuffle of block: the paper's random
    initial mapping) or a node per rank (a user's mapping, reported as ``given``). Every
    reported ``T`` is exact (graph engine). ``progress(iteration, T)`` is called after every
    applied swap."""
    started = time.perf_counter()
    P = graph.num_ranks
    machine.check(P)
    if candidates < 1:
        raise InputError(f"candidates must be ≥ 1, got {candidates}")
    baselines = {
        "block": block_mapping(P, machine),
        "round-robin": round_robin_mapping(P, machine),
        **layout_mappings(graph, machine),
        "volume": volume_mapping(graph, machine, seed=seed),
    }
    if isinstance(start, np.ndarray):
        given = np.asarray(start, dtype=np.int64)
        if (
            given.shape != (P,)
            or given.min(initial=0) < 0
            or given.max(initial=0) >= machine.num_nodes
        ):
            raise InputError(
                f"the initial mapping must give one node in 0..{machine.num_nodes - 1} per rank"
            )
        if (np.bincount(given, minlength=machine.num_nodes) > machine.ranks_per_node).any():
            raise InputError(
                f"the initial mapping puts more than {machine.ranks_per_node} ranks on a node"
            )
        baselines["given"], start = given, "given"
    elif start == "random":
        baselines["random"] = np.random.default_rng(seed).permutation(baselines["block"])
    elif start != "best" and start not in baselines:
        raise InputError(
            f"unknown start mapping {start!r}: choose best, random, {', '.join(baselines)}"
        )
    evaluate = _Evaluator(graph, params, machine)
    names = list(baselines)
    T, mean = evaluate([baselines[n] for n in names])
    scores = {n: (float(T[k]), float(mean[k])) for k, n in enumerate(names)}
    if start == "best":
        start = names[0]
        for n in names[1:]:
            if _better(scores[n], scores[start]):
                start = n
    current = baselines[start].copy()
    score = scores[start]
    history = [(0, -1, -1, -1, -1, 0.0, score[0], score[1], 0, time.perf_counter() - started)]
    stop = "iteration budget reached"
    pad = machine.slots - P  # free slots act as silent ranks: a swap with one is a move
    for iteration in range(1, max_iterations + 1):
        if time.perf_counter() - started >= budget_s:
            stop = "time budget reached"
            break
        lam_L, lam_G, _ = pair_matrices(graph, params, mapping_model(graph, machine, current))
        slots = np.concatenate([current, _free_slots(current, machine)])
        lam_L, lam_G = np.pad(lam_L, (0, pad)), np.pad(lam_G, (0, pad))
        gains = swap_gains(lam_L, lam_G, machine, slots)
        gains[slots[:, None] == slots[None, :]] = 0.0
        r, s = np.nonzero(np.triu(gains > 10 * ABS_TOL_NS, 1))
        keep = r < P
        r, s = r[keep], s[keep]
        if r.size == 0:
            stop = "no swap with a positive estimated gain"
            break
        order = np.lexsort((s, r, -gains[r, s]))
        r, s = r[order], s[order]
        found, tried = None, 0
        while tried < r.size and time.perf_counter() - started < budget_s:
            batch = range(tried, min(tried + candidates, r.size))
            trials = []
            for k in batch:
                trial = slots.copy()
                trial[r[k]], trial[s[k]] = slots[s[k]], slots[r[k]]
                trials.append(trial[:P].copy())
            T, mean = evaluate(trials)
            best_k = min(range(len(trials)), key=lambda k: (T[k], mean[k], k))
            tried += len(trials)
            if _better((float(T[best_k]), float(mean[best_k])), score):
                found = (batch[best_k], trials[best_k], float(T[best_k]), float(mean[best_k]))
                break
        if found is None:
            stop = (
                f"none of the {tried} swaps with a positive estimated gain improves the mapping"
                if tried == r.size
                else "time budget reached"
            )
            break
        pick, trial, T_new, mean_new = found
        a, b = int(r[pick]), int(s[pick])
        history.append(
            (
                iteration,
                a,
                b if b < P else -1,
                int(slots[a]),
                int(slots[b]),
                float(gains[a, b]),
                T_new,
                mean_new,
                tried,
                time.perf_counter() - started,
            )
        )
        current = trial
        score = (T_new, mean_new)
        if progress is not None:
            progress(iteration, score[0])
    mappings = dict(baselines)
    mappings["llamp"] = current
    frame = _compare(graph, machine, mappings, {**scores, "llamp": score})
    best = str(frame.loc[0, "mapping"])
    hist = pd.DataFrame(
        history,
        columns=[
            "iteration",
            "rank_a",
            "rank_b",
            "node_a",
            "node_b",
            "estimated_gain_ns",
            "runtime_ns",
            "mean_rank_finish_ns",
            "candidates_tried",
            "elapsed_s",
        ],
    )
    return Placement(frame, mappings, best, hist, stop, machine, time.perf_counter() - started)


def _free_slots(node_of_rank: np.ndarray, machine: Machine) -> np.ndarray:
    """Node of every free slot (node order), so ranks plus free slots fill the machine."""
    free = machine.ranks_per_node - np.bincount(node_of_rank, minlength=machine.num_nodes)
    return np.repeat(np.arange(machine.num_nodes), free)


def _compare(
    graph: ExecutionGraph,
    machine: Machine,
    mappings: dict[str, np.ndarray],
    scores: dict[str, tuple[float, float]],
) -> pd.DataFrame:
    count, volume = traffic(graph)
    T_block = scores["block"][0]
    rows = []
    for name, node in mappings.items():
        cross = node[:, None] != node[None, :]
        T, mean = scores[name]
        rows.append(
            {
                "mapping": name,
                "runtime_ns": T,
                "vs_block": T / T_block - 1.0 if T_block > 0 else 0.0,
                "mean_rank_finish_ns": mean,
                "inter_node_messages": int(count[cross].sum()),
                "inter_node_bytes": int(volume[cross].sum()),
                "nodes_used": int(np.unique(node).size),
            }
        )
    frame = pd.DataFrame(rows)
    order = sorted(
        range(len(rows)),
        key=lambda k: (
            rows[k]["runtime_ns"],
            rows[k]["mean_rank_finish_ns"],
            rows[k]["mapping"] != "llamp",
            k,
        ),
    )
    return frame.iloc[order].reset_index(drop=True)


def mapping_runtime(
    graph: ExecutionGraph, params: LogGPS, machine: Machine, node_of_rank: np.ndarray
) -> float:
    """``T`` of one mapping (exact, graph engine): the number a placement reports for it."""
    T, _ = _Evaluator(graph, params, machine)([np.asarray(node_of_rank, dtype=np.int64)])
    return float(T[0])


# ---------------------------------------------------------------------- files
def format_mapping(
    node_of_rank: np.ndarray, hostnames: tuple[str, ...] | list[str], fmt: str
) -> str:
    """The mapping as text.

    - ``openmpi``: a rankfile, ``rank R=HOST slot=K`` (``K``: the rank's position among the
      ranks on that host), for ``mpirun --rankfile FILE``;
    - ``mpich``: a Hydra machinefile, ``HOST:COUNT`` for each run of consecutive ranks on one
      host, in rank order (``mpiexec -f FILE``);
    - ``slurm``: one host per line, line ``r`` for rank ``r`` (``SLURM_HOSTFILE=FILE srun
      --distribution=arbitrary``).
    """
    node = np.asarray(node_of_rank, dtype=np.int64)
    hosts = [hostnames[n] for n in node.tolist()]
    if fmt == "openmpi":
        slot = np.zeros(node.size, dtype=np.int64)
        order = np.argsort(node, kind="stable")
        sorted_nodes = node[order]
        first = np.searchsorted(sorted_nodes, sorted_nodes, side="left")
        slot[order] = np.arange(node.size) - first
        return "".join(
            f"rank {r}={h} slot={k}\n"
            for r, (h, k) in enumerate(zip(hosts, slot.tolist(), strict=True))
        )
    if fmt == "mpich":
        lines = []
        if node.size:
            cuts = np.flatnonzero(np.diff(node)) + 1
            starts = np.concatenate(([0], cuts))
            ends = np.concatenate((cuts, [node.size]))
            lines = [
                f"{hosts[a]}:{b - a}\n" for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
            ]
        return "".join(lines)
    if fmt == "slurm":
        return "".join(f"{h}\n" for h in hosts)
    raise InputError(f"unknown mapping format {fmt!r}: choose {', '.join(FORMATS)}")


def write_mapping(
    node_of_rank: np.ndarray, hostnames: tuple[str, ...] | list[str], path: str | Path, fmt: str
) -> Path:
    """Write :func:`format_mapping` to ``path``."""
    path = Path(path)
    path.write_text(format_mapping(node_of_rank, hostnames, fmt))
    return path


def read_mapping_file(
    path: str | Path, hostnames: tuple[str, ...] | list[str], fmt: str, num_ranks: int
) -> np.ndarray:
    """Node of every rank from a file written by :func:`write_mapping` (or by hand)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such mapping file")
    index = {h: i for i, h in enumerate(hostnames)}
    node = np.full(num_ranks, -1, dtype=np.int64)
    cursor = 0

    def host(name: str, number: int) -> int:
        if name not in index:
            raise InputError(f"{path}:{number}: unknown host {name!r}")
        return index[name]

    for number, line in enumerate(path.read_text().splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if fmt == "openmpi":
            head, _, rest = text.partition("=")
            parts = head.split()
            if len(parts) != 2 or parts[0] != "rank" or not rest:
                raise InputError(f"{path}:{number}: expected 'rank R=HOST slot=K', got {text!r}")
            try:
                r = int(parts[1])
            except ValueError as err:
                raise InputError(f"{path}:{number}: rank {parts[1]!r} is not an integer") from err
            if not 0 <= r < num_ranks:
                raise InputError(f"{path}:{number}: rank {r} is outside 0..{num_ranks - 1}")
            node[r] = host(rest.split()[0], number)
        elif fmt == "mpich":
            name, _, count = text.partition(":")
            try:
                k = int(count) if count else 1
            except ValueError as err:
                raise InputError(f"{path}:{number}: expected HOST:COUNT, got {text!r}") from err
            if cursor + k > num_ranks:
                raise InputError(f"{path}:{number}: more than {num_ranks} ranks listed")
            node[cursor : cursor + k] = host(name.strip(), number)
            cursor += k
        elif fmt == "slurm":
            if cursor >= num_ranks:
                raise InputError(f"{path}:{number}: more than {num_ranks} ranks listed")
            node[cursor] = host(text, number)
            cursor += 1
        else:
            raise InputError(f"unknown mapping format {fmt!r}: choose {', '.join(FORMATS)}")
    if (node < 0).any():
        missing = int(np.flatnonzero(node < 0)[0])
        raise InputError(f"{path}: rank {missing} has no host")
    return node
