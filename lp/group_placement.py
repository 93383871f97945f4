"""Placement of a training run's parallel groups onto a GPU machine's nodes.

A distributed training step is laid out in *parallel dimensions* — tensor, pipeline, data
parallel — each a partition of the ranks into equal groups that communicate among themselves
(the trace's process groups, Chakra ``pg_name``: ``meta["process_groups"]``). Where those
groups land on the machine decides which messages cross NVLink and which the network:
Megatron-LM's default puts a tensor-parallel group inside a node; a data-parallel-first order
puts it across nodes. This module derives the dimensions from the process groups, builds the
placement of every *order* of them, and evaluates each exactly on a
:class:`~llamp.lp.gpu_machine.GpuMachine`: ``T``, λ per link class and the x % tolerances
(:func:`~llamp.lp.gpu_machine.analyze_gpu_machine` with the ranks in their slots).

Dimensions: process groups are grouped into families by the letters their names start with
(``tp.0.1`` and ``tp.1.1`` → ``tp``). Groups named by number only (PyTorch's process groups,
GOAL communicators) are taken in number order, each joining the first family of its size
whose groups it does not overlap — ``size8``, or ``size2.1``, ``size2.2`` for two families of
one size. A family whose groups are equal, pairwise disjoint and cover every rank is a
dimension; the world group (all ranks) and one-rank groups order nothing and are left out, and
so is a family that is not a partition (listed in ``skipped`` with the reason). A rank's
coordinate along a dimension is its position in its group (members in rank order). If the
dimensions' sizes multiply to less than the rank count, the ranks with equal coordinates form
one more dimension, ``rest`` (e.g. a data-parallel dimension without collectives). The
coordinates must name every rank once (the dimensions are orthogonal, as 3D parallelism
makes them).

An order ``d0,d1,…`` lists the dimensions innermost first: rank ``r`` goes to GPU slot
``Σ c_i(r)·Π_{j<i} n_j`` (``c_i`` its coordinate along ``d_i``, ``n_j`` the sizes), so
consecutive slots — one node's GPUs — take the first dimension's groups first. ``tp,dp,pp``
is Megatron-LM's order, ``dp,tp,pp`` puts data-parallel groups inside nodes. The trace's own
rank order (``as traced``: rank ``r`` in slot ``r``) is evaluated as well, first. Layouts
that give every message the same link class and NIC share (e.g. ``tp,dp,pp`` and ``tp,pp,dp``
when a tensor-parallel group fills a node) have the same model and are evaluated once.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llamp.config import DEFAULT_TOLERANCES
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp.gpu_machine import GpuMachine, GpuMachineAnalysis, analyze_gpu_machine
from llamp.params import LogGPS

__all__ = [
    "AS_TRACED",
    "GroupPlacement",
    "ParallelDim",
    "compare_group_placements",
    "order_slots",
    "parallel_dims",
]

#: The mapping of the trace's rank order (rank ``r`` in slot ``r``).
AS_TRACED = "as traced"
#: Most dimensions whose orders are all evaluated when none are named (4! = 24 orders).
MAX_DEFAULT_DIMS = 4
_FAMILY = re.compile(r"^[A-Za-z_]+")


@dataclass(frozen=True)
class ParallelDim:
    """One parallel dimension: its name, group size, groups (member ranks in rank order) and
    every rank's coordinate (its position in its group)."""

    name: str
    size: int
    groups: tuple[tuple[int, ...], ...]
    coord: np.ndarray


def _natural(name: str) -> tuple:
    """Sort key: numbers by value (``"10"`` after ``"9"``)."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def parallel_dims(graph: ExecutionGraph) -> tuple[tuple[ParallelDim, ...], dict[str, str]]:
    """The parallel dimensions of ``graph`` from its process groups (module docstring) and
    the families that are not dimensions, with the reason."""
    P = graph.num_ranks
    groups = graph.meta.get("process_groups") or {}
    if not isinstance(groups, dict):
        raise InputError(f"{graph.name}: meta 'process_groups' is not a table of groups")
    families: dict[str, list[tuple[int, ...]]] = {}
    unnamed: list[tuple[int, ...]] = []
    for name, members in sorted(groups.items(), key=lambda kv: _natural(str(kv[0]))):
        try:
            ranks = tuple(sorted(int(r) for r in members))
        except (TypeError, ValueError):
            raise InputError(
                f"{graph.name}: process group {str(name)[:40]!r} has a member that is not a rank"
            ) from None
        if len(ranks) <= 1 or len(ranks) >= P:
            continue
        m = _FAMILY.match(str(name))
        letters = m.group(0).strip("_") if m else ""
        if letters:
            families.setdefault(letters, []).append(ranks)
        else:
            unnamed.append(ranks)
    # groups named by number only: in name order, each joins the first family of its size it
    # does not overlap (communicators are created dimension by dimension)
    by_size: dict[int, list[list[tuple[int, ...]]]] = {}
    for ranks in unnamed:
        fams = by_size.setdefault(len(ranks), [])
        for fam in fams:
            if not set(ranks) & {r for g in fam for r in g}:
                fam.append(ranks)
                break
        else:
            fams.append([ranks])
    for size, fams in by_size.items():
        for j, fam in enumerate(fams):
            families[f"size{size}" + (f".{j + 1}" if len(fams) > 1 else "")] = fam
    dims: list[ParallelDim] = []
    skipped: dict[str, str] = {}
    for family in sorted(families):
        members = sorted(set(families[family]))
        sizes = {len(g) for g in members}
        flat = np.concatenate([np.asarray(g) for g in members])
        if len(sizes) != 1:
            skipped[family] = f"groups of different sizes ({', '.join(map(str, sorted(sizes)))})"
        elif flat.size != P or np.unique(flat).size != P:
            covered = np.unique(flat).size
            skipped[family] = (
                f"not a partition of the ranks ({len(members)} groups of {sizes.pop()} cover "
                f"{covered} of {P} ranks{', overlapping' if covered < flat.size else ''})"
            )
        else:
            coord = np.empty(P, dtype=np.int64)
            for g in members:
                coord[list(g)] = np.arange(len(g))
            dims.append(ParallelDim(family, len(members[0]), tuple(members), coord))
    size = int(np.prod([d.size for d in dims])) if dims else 1
    if size < P:
        # the ranks with equal coordinates along the dimensions found form one more
        key = _radix(dims, [d.name for d in dims], P)
        _, cls, counts = np.unique(key, return_inverse=True, return_counts=True)
        if P % size or (counts != P // size).any():
            raise InputError(
                f"{graph.name}: the parallel dimensions ({_sizes(dims)}) do not divide the {P} "
                "ranks evenly; the process groups do not describe a regular layout"
            )
        order = np.argsort(cls, kind="stable")  # rank order within each class
        coord = np.empty(P, dtype=np.int64)
        coord[order] = np.arange(P) % (P // size)
        rest = tuple(tuple(order[k : k + P // size].tolist()) for k in range(0, P, P // size))
        dims.append(ParallelDim("rest", P // size, rest, coord))
    if size > P or np.unique(_radix(dims, [d.name for d in dims], P)).size != P:
        raise InputError(
            f"{graph.name}: the parallel dimensions ({_sizes(dims)}) are not orthogonal: two "
            "ranks have the same coordinates"
        )
    return tuple(dims), skipped


def _sizes(dims: Sequence[ParallelDim]) -> str:
    return " × ".join(f"{d.name} {d.size}" for d in dims)


def _radix(dims: Sequence[ParallelDim], order: Sequence[str], num_ranks: int) -> np.ndarray:
    by_name = {d.name: d for d in dims}
    slot = np.zeros(num_ranks, dtype=np.int64)
    stride = 1
    for name in order:
        d = by_name[name]
        slot += d.coord * stride
        stride *= d.size
    return slot


def order_slots(dims: Sequence[ParallelDim], order: Sequence[str]) -> np.ndarray:
    """The GPU slot of every rank under ``order`` (dimension names, innermost first)."""
    names = [d.name for d in dims]
    order = [o.strip() for o in order]
    unknown = [o for o in order if o not in names]
    if unknown:
        raise InputError(
            f"order {','.join(order)!r}: no dimension {unknown[0]!r} in this run "
            f"(dimensions: {', '.join(names) or 'none'})"
        )
    if sorted(order) != sorted(names):
        raise InputError(
            f"order {','.join(order)!r}: name every dimension once ({', '.join(names)})"
        )
    return _radix(dims, order, dims[0].coord.size if dims else 1)


@dataclass(frozen=True)
class GroupPlacement:
    """Each placement of the parallel dimensions on a GPU machine, evaluated exactly.

    ``dimensions``: ``dimension, size, groups``. ``mappings``: one row per placement —
    ``mapping`` (the order, innermost first, or ``as traced``; ``traced_layout``: the orders
    that are the trace's own), ``runtime_ns``, ``vs_traced``
    (``T / T_traced − 1``), ``inter_node_messages``, ``inter_node_bytes`` and, per dimension
    ``d``, ``<d>_groups_in_one_node`` (the fraction of its groups a node holds whole).
    ``variables``: ``mapping, variable, value, unit, lambda, lambda_share`` (the four link
    classes ``L_intra``, ``L_inter``, ``G_intra``, ``G_inter``). ``tolerances``: ``mapping,
    variable, x, bound_ns, tolerance, headroom``. ``slot_of_rank``: each placement's GPU slot of
    every rank."""

    machine: str
    dimensions: pd.DataFrame
    skipped: dict[str, str]
    mappings: pd.DataFrame
    variables: pd.DataFrame
    tolerances: pd.DataFrame
    slot_of_rank: dict[str, np.ndarray]
    best: str
    traced_layout: tuple[str, ...]
    elapsed_s: float

    def as_dict(self) -> dict:
        return {
            "machine": self.machine,
            "best": self.best,
            "traced_layout": list(self.traced_layout),
            "dimensions": self.dimensions.to_dict(orient="records"),
            "skipped": dict(self.skipped),
            "mappings": self.mappings.to_dict(orient="records"),
            "variables": self.variables.to_dict(orient="records"),
            "tolerances": self.tolerances.to_dict(orient="records"),
            "slot_of_rank": {k: v.tolist() for k, v in self.slot_of_rank.items()},
            "elapsed_s": self.elapsed_s,
        }


def compare_group_placements(
    graph: ExecutionGraph,
    params: LogGPS,
    machine: GpuMachine,
    orders: Sequence[Sequence[str]] | None = None,
    x: Sequence[float] = DEFAULT_TOLERANCES,
    progress: Callable[[int, int, str], None] | None = None,
) -> GroupPlacement:
    """``T``, λ per link class and x % tolerances of the trace's rank order and of each
    ``order`` of the parallel dimensions (default: every order, for at most
    :data:`MAX_DEFAULT_DIMS` dimensions) on ``machine`` (module docstring). ``params`` gives
    ``o`` and ``S``; the machine gives ``L`` and ``G``. ``progress(done, total, layout)`` is
    called after each layout."""
    started = time.perf_counter()
    dims, skipped = parallel_dims(graph)
    names = [d.name for d in dims]
    if orders is None:
        if len(dims) > MAX_DEFAULT_DIMS:
            raise InputError(
                f"{len(dims)} parallel dimensions ({', '.join(names)}): name the orders to "
                "compare (--layout d0,d1,…)"
            )
        orders = list(itertools.permutations(names))
    slots: dict[str, np.ndarray] = {AS_TRACED: np.arange(graph.num_ranks, dtype=np.int64)}
    for order in orders:
        label = ",".join(o.strip() for o in order)
        if label in slots:
            raise InputError(f"order {label!r} is given twice")
        slots[label] = order_slots(dims, order)
    sends, recvs = graph.messages()
    src, dst = graph.rank[sends].astype(np.int64), graph.rank[recvs].astype(np.int64)
    nbytes = graph.size[sends].astype(np.int64)
    n = machine.gpus_per_node
    rows, variables, tolerances = [], [], []
    share = machine.nic_share()
    done: dict[bytes, GpuMachineAnalysis] = {}
    for done_layouts, (label, slot) in enumerate(slots.items(), 1):
        node = slot // n
        cross = node[src] != node[dst]
        # two layouts that put every message on the same link class with the same NIC share
        # have the same model, hence the same answers: evaluated once
        k = np.maximum(share[slot[src] % n], share[slot[dst] % n]) * cross
        key = hashlib.sha1(np.packbits(cross).tobytes() + k.astype(np.int32).tobytes()).digest()
        result = done.get(key)
        if result is None:
            result = done[key] = analyze_gpu_machine(graph, params, machine, x, slot_of_rank=slot)
        row = {
            "mapping": label,
            "runtime_ns": result.runtime_ns,
            "inter_node_messages": int(cross.sum()),
            "inter_node_bytes": int(nbytes[cross].sum()),
        }
        for d in dims:
            whole = [np.unique(node[list(g)]).size == 1 for g in d.groups]
            row[f"{d.name}_groups_in_one_node"] = float(np.mean(whole))
        rows.append(row)
        variables.append(result.variables.assign(mapping=label))
        tolerances.append(result.tolerances.assign(mapping=label))
        if progress is not None:
            progress(done_layouts, len(slots), label)
    frame = pd.DataFrame(rows)
    T0 = float(frame.loc[0, "runtime_ns"])
    frame.insert(2, "vs_traced", frame["runtime_ns"] / T0 - 1.0 if T0 > 0 else 0.0)
    best = str(
        frame.loc[int(np.argmin(frame["runtime_ns"].to_numpy())), "mapping"]
    )  # first of ties
    first = ["mapping"]
    var = pd.concat(variables, ignore_index=True)
    tol = pd.concat(tolerances, ignore_index=True)
    return GroupPlacement(
        machine=machine.describe(),
        dimensions=pd.DataFrame(
            {
                "dimension": names,
                "size": [d.size for d in dims],
                "groups": [len(d.groups) for d in dims],
            }
        ),
        skipped=skipped,
        mappings=frame,
        variables=var[first + [c for c in var.columns if c != "mapping"]],
        tolerances=tol[first + [c for c in tol.columns if c != "mapping"]],
        slot_of_rank=slots,
        best=best,
        traced_layout=tuple(
            k for k, v in slots.items() if k != AS_TRACED and np.array_equal(v, slots[AS_TRACED])
        ),
        elapsed_s=time.perf_counter() - started,
    )
