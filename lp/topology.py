"""Network topologies with one latency variable per link class (LLAMP §IV-2, App. H).

A message between ranks on two different compute nodes crosses ``h`` switches and ``h + 1``
wires, so with one wire latency it costs ``(h+1)·l_wire + h·d_switch`` (the paper's formula,
§IV-2). Here ``h`` is exactly **the number of switches (routers) the message traverses**;
the wires are split into link classes (App. H, Fig. 19), each with its own latency
variable, so the latency of message ``m`` is::

    L_m = Σ_class n_class(m)·l_class + h(m)·d_switch        (Σ_class n_class(m) = h(m) + 1)

and a message between two ranks on the *same* node costs ``l_intra_node`` (no wire, no
switch; default :data:`DEFAULT_INTRA_NODE_NS`). The LogGPS ``L`` of the configuration is not
used for messages; ``o``, ``G`` and ``S`` are. Every latency is affine in the variables, so
``T`` is convex and piecewise linear in each of them: λ per class is a right derivative from
:func:`llamp.lp.weighted.evaluate_model`, and the x% tolerance of a class (largest ``l_class``
with ``T ≤ (1+x)·T0``, every other variable fixed) comes from the same exact walk as
:mod:`llamp.lp.tolerance`, generalised to any variable of a :class:`MessageModel`
(:class:`ShiftWalk`).

Topologies and their classes (compute nodes are numbered densely, as in the paper's case
study: consecutive nodes share the lowest switch):

- :class:`FatTree` ``k`` (switch radix, even), 2 tiers (leaf–spine: ``k`` leaves with ``k/2``
  nodes each, ``k/2`` spines; ``k²/2`` nodes) or 3 tiers (Al-Fares: ``k`` pods of ``k/2`` edge
  and ``k/2`` aggregation switches, ``(k/2)²`` cores; ``k³/4`` nodes). Classes ``edge``
  (node–edge switch), ``aggregation`` (edge–aggregation, i.e. leaf–spine for 2 tiers) and
  ``core`` (aggregation–core). Same edge switch: h = 1; same pod (or any pair, 2 tiers):
  h = 3; different pods: h = 5 (up-down routing, which is minimal).
- :class:`Dragonfly` ``g`` groups of ``a`` routers with ``p`` nodes each (Kim et al.); routers
  of a group are all-to-all, groups are joined by one global link per pair, placed
  consecutively: group ``G``'s ``k``-th global link (``k = 0 … g−2``) leads to group
  ``(G+k+1) mod g`` and sits on router ``⌊k/h⌋`` with ``h = ⌈(g−1)/a⌉`` global ports per
  router. Minimal routing local–global–local. Classes ``terminal``, ``intra`` (router–router
  in a group), ``inter`` (global).
- :class:`Torus` with ``dims`` (any number of dimensions), ``p`` nodes per router (default
  1), minimal dimension-order routing with wraparound: ``h`` = torus distance + 1. One class
  ``link`` (terminal and torus links alike).
- :class:`GraphTopology`: any networkx-readable graph file (edge list, GraphML, GML); hop =
  shortest path through switches only (compute nodes never forward); classes from the edge
  attribute ``class`` (default one class ``link``). See :func:`read_topology`.
"""

from __future__ import annotations

import math
import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse import csgraph

from llamp.config import (
    DEFAULT_INTRA_NODE_NS,
    DEFAULT_SWITCH_NS,
    DEFAULT_TOLERANCES,
    DEFAULT_WIRE_NS,
)
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp.engine import ABS_TOL_NS, REL_TOL, engine_for
from llamp.lp.kernels import edge_slopes as forward_sweep
from llamp.lp.weighted import MessageModel, edge_weights
from llamp.params import LogGPS

#: Names of the variables every topology model has besides its link classes: every wire at
#: once (the paper's ``l_wire``), the switch delay, the same-node latency.
WIRE = "l_wire"
SWITCH = "d_switch"
INTRA_NODE = "l_intra_node"
RESERVED = (WIRE, SWITCH, INTRA_NODE)

#: Shift (ns) at which the asymptotic slope along a latency variable is read.
_HUGE_NS = 1e15


# ---------------------------------------------------------------------- routes
@dataclass(frozen=True)
class Routes:
    """Per node pair: switches traversed ``h`` and wires of each link class (``links[:, c]``)."""

    switches: np.ndarray  # int64 (n,)
    links: np.ndarray  # int64 (n, classes)
    same_node: np.ndarray  # bool (n,)


class Topology(ABC):
    """Compute nodes ``0 … num_nodes−1`` joined by switches; see the module docstring."""

    #: Link classes, one latency variable each.
    classes: tuple[str, ...]

    @property
    @abstractmethod
    def num_nodes(self) -> int:
        """Number of compute nodes."""

    @property
    @abstractmethod
    def spec(self) -> str:
        """The spec string that rebuilds this topology (``fattree:k=16,tiers=3``)."""

    @abstractmethod
    def _routes(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(switches, links per class) for node pairs ``a ≠ b`` (vectorised)."""

    @abstractmethod
    def to_networkx(self) -> nx.Graph:
        """The topology as a graph: node attribute ``kind`` (compute | switch), edge ``class``."""

    def node_names(self) -> list[str]:
        """Names of the compute nodes, by index (``node0``, … for built-in topologies)."""
        return [f"node{i}" for i in range(self.num_nodes)]

    def routes(self, a: np.ndarray, b: np.ndarray) -> Routes:
        """Switches and wires per class between compute nodes ``a[i]`` and ``b[i]``."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        bad = (a < 0) | (a >= self.num_nodes) | (b < 0) | (b >= self.num_nodes)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            node = a[k] if not 0 <= a[k] < self.num_nodes else b[k]
            raise InputError(f"node {node} is outside {self.spec} (nodes 0..{self.num_nodes - 1})")
        same = a == b
        switches = np.zeros(a.shape, dtype=np.int64)
        links = np.zeros((*a.shape, len(self.classes)), dtype=np.int64)
        diff = ~same
        if diff.any():
            s, lk = self._routes(a[diff], b[diff])
            switches[diff] = s
            links[diff] = lk
        return Routes(switches, links, same)


def _check_positive(name: str, value: int, spec: str) -> int:
    if int(value) != value or value < 1:
        raise InputError(f"{spec}: {name} must be a positive integer, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class FatTree(Topology):
    """k-ary fat tree with 2 (leaf–spine) or 3 (Al-Fares) tiers; see the module docstring."""

    k: int
    tiers: int = 3

    def __post_init__(self) -> None:
        _check_positive("k", self.k, "fattree")
        if self.k % 2:
            raise InputError(f"fattree: the switch radix k must be even, got {self.k}")
        if self.tiers not in (2, 3):
            raise InputError(f"fattree: tiers must be 2 or 3, got {self.tiers}")
        object.__setattr__(
            self,
            "classes",
            ("edge", "aggregation") if self.tiers == 2 else ("edge", "aggregation", "core"),
        )

    @property
    def num_nodes(self) -> int:
        half = self.k // 2
        return self.k * half if self.tiers == 2 else self.k * half * half

    @property
    def spec(self) -> str:
        return f"fattree:k={self.k},tiers={self.tiers}"

    def _routes(self, a, b):
        half = self.k // 2
        same_leaf = a // half == b // half
        links = np.zeros((a.size, len(self.classes)), dtype=np.int64)
        links[:, 0] = 2
        links[:, 1] = np.where(same_leaf, 0, 2)
        if self.tiers == 2:
            return np.where(same_leaf, 1, 3), links
        same_pod = a // (half * half) == b // (half * half)
        links[:, 2] = np.where(same_pod, 0, 2)
        return np.where(same_leaf, 1, np.where(same_pod, 3, 5)), links

    def to_networkx(self) -> nx.Graph:
        half = self.k // 2
        g = nx.Graph()
        g.add_nodes_from((f"node{i}" for i in range(self.num_nodes)), kind="compute")
        leaves = self.k if self.tiers == 2 else self.k * half
        for n in range(self.num_nodes):
            g.add_edge(f"node{n}", f"edge{n // half}", **{"class": "edge"})
        if self.tiers == 2:
            for e in range(leaves):
                for s in range(half):
                    g.add_edge(f"edge{e}", f"aggregation{s}", **{"class": "aggregation"})
        else:
            for e in range(leaves):
                pod = e // half
                for s in range(half):
                    g.add_edge(
                        f"edge{e}", f"aggregation{pod * half + s}", **{"class": "aggregation"}
                    )
            for agg in range(self.k * half):
                for c in range(half):
                    g.add_edge(
                        f"aggregation{agg}", f"core{(agg % half) * half + c}", **{"class": "core"}
                    )
        for v, kind in g.nodes(data="kind"):
            if kind is None:
                g.nodes[v]["kind"] = "switch"
        return g


@dataclass(frozen=True)
class Dragonfly(Topology):
    """Dragonfly of ``g`` groups, ``a`` routers per group, ``p`` nodes per router."""

    g: int
    a: int
    p: int

    def __post_init__(self) -> None:
        for name in ("g", "a", "p"):
            _check_positive(name, getattr(self, name), "dragonfly")
        object.__setattr__(self, "classes", ("terminal", "intra", "inter"))

    @property
    def num_nodes(self) -> int:
        return self.g * self.a * self.p

    @property
    def spec(self) -> str:
        return f"dragonfly:g={self.g},a={self.a},p={self.p}"

    @property
    def global_ports(self) -> int:
        """Global links per router, ``h = ⌈(g−1)/a⌉``."""
        return -(-(self.g - 1) // self.a)

    def gateway(self, group: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Local index of the router of ``group`` holding the global link to ``target``."""
        return ((target - group - 1) % self.g) // max(self.global_ports, 1)

    def _routes(self, a, b):
        ra, rb = a // self.p, b // self.p
        ga, gb = ra // self.a, rb // self.a
        links = np.zeros((a.size, 3), dtype=np.int64)
        links[:, 0] = 2
        same_router = ra == rb
        same_group = (ga == gb) & ~same_router
        other = ga != gb
        detour = np.where(
            other,
            (self.gateway(ga, gb) != ra % self.a).astype(np.int64)
            + (self.gateway(gb, ga) != rb % self.a),
            0,
        )
        links[:, 1] = np.where(same_group, 1, detour)
        links[:, 2] = other
        switches = np.where(same_router, 1, np.where(same_group, 2, 2 + detour))
        return switches, links

    def to_networkx(self) -> nx.Graph:
        g = nx.Graph()
        g.add_nodes_from((f"node{i}" for i in range(self.num_nodes)), kind="compute")
        for n in range(self.num_nodes):
            g.add_edge(f"node{n}", f"router{n // self.p}", **{"class": "terminal"})
        for grp in range(self.g):
            for i in range(self.a):
                for j in range(i + 1, self.a):
                    g.add_edge(
                        f"router{grp * self.a + i}",
                        f"router{grp * self.a + j}",
                        **{"class": "intra"},
                    )
            for other in range(grp + 1, self.g):
                ra = grp * self.a + int(self.gateway(np.int64(grp), np.int64(other)))
                rb = other * self.a + int(self.gateway(np.int64(other), np.int64(grp)))
                g.add_edge(f"router{ra}", f"router{rb}", **{"class": "inter"})
        for v, kind in g.nodes(data="kind"):
            if kind is None:
                g.nodes[v]["kind"] = "switch"
        return g


@dataclass(frozen=True)
class Torus(Topology):
    """Torus of routers with ``dims`` (e.g. ``(4, 4, 4)``), ``p`` nodes per router."""

    dims: tuple[int, ...]
    p: int = 1

    def __post_init__(self) -> None:
        if not self.dims:
            raise InputError("torus: give at least one dimension, e.g. dims=4x4x4")
        for d in self.dims:
            _check_positive("every dimension", d, "torus")
        _check_positive("p", self.p, "torus")
        object.__setattr__(self, "dims", tuple(int(d) for d in self.dims))
        object.__setattr__(self, "classes", ("link",))

    @property
    def num_nodes(self) -> int:
        return int(np.prod(self.dims)) * self.p

    @property
    def spec(self) -> str:
        return f"torus:dims={'x'.join(map(str, self.dims))},p={self.p}"

    def coordinates(self, router: np.ndarray) -> np.ndarray:
        """Router coordinates (first dimension fastest), shape (n, len(dims))."""
        strides = np.cumprod((1, *self.dims[:-1]))
        return (np.asarray(router)[..., None] // strides) % np.asarray(self.dims)

    def distance(self, ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
        """Minimal router-to-router hops with wraparound."""
        delta = np.abs(self.coordinates(ra) - self.coordinates(rb))
        return np.minimum(delta, np.asarray(self.dims) - delta).sum(axis=-1)

    def _routes(self, a, b):
        dist = self.distance(a // self.p, b // self.p)
        return dist + 1, (dist + 2)[:, None]

    def to_networkx(self) -> nx.Graph:
        g = nx.Graph()
        g.add_nodes_from((f"node{i}" for i in range(self.num_nodes)), kind="compute")
        routers = int(np.prod(self.dims))
        coords = self.coordinates(np.arange(routers))
        strides = np.cumprod((1, *self.dims[:-1]))
        for r in range(routers):
            for d, size in enumerate(self.dims):
                if size == 1:
                    continue
                c = coords[r].copy()
                c[d] = (c[d] + 1) % size
                g.add_edge(f"router{r}", f"router{int(c @ strides)}", **{"class": "link"})
        for n in range(self.num_nodes):
            g.add_edge(f"node{n}", f"router{n // self.p}", **{"class": "link"})
        for v, kind in g.nodes(data="kind"):
            if kind is None:
                g.nodes[v]["kind"] = "switch"
        return g


#: Values of the node attribute ``kind`` that mark a compute node in a topology file.
COMPUTE_KINDS = frozenset({"compute", "node", "host"})


class GraphTopology(Topology):
    """Any topology graph: compute nodes, switches, optional ``class`` per edge.

    Compute nodes are the nodes whose attribute ``kind`` is ``compute`` (or ``node``,
    ``host``); when no node has a ``kind`` (a plain edge list), the leaves (degree 1) are the
    compute nodes. They are numbered in the graph's node order. ``h`` between two compute
    nodes is the length of a shortest path through switches only, minus one; the per-class
    wire counts are those of one such path (scipy's breadth-first order when several
    shortest paths exist — they may differ in classes, never in ``h``). Routes between all
    compute nodes are computed once, batched over sources.
    """

    def __init__(self, graph: nx.Graph, *, name: str = "graph"):
        if graph.is_directed() or graph.is_multigraph():
            graph = nx.Graph(graph.to_undirected() if graph.is_directed() else graph)
        self.graph = graph
        self.name = name
        nodes = list(graph.nodes)
        if not nodes:
            raise InputError(f"{name}: the topology graph has no node")
        kinds = dict(graph.nodes(data="kind"))
        if any(k is not None for k in kinds.values()):
            compute = [v for v in nodes if str(kinds.get(v) or "").lower() in COMPUTE_KINDS]
            rule = "with kind=compute"
        else:
            compute = [v for v in nodes if graph.degree(v) == 1]
            rule = "of degree 1 (no node has a 'kind' attribute)"
        if len(compute) < 1:
            raise InputError(f"{name}: no compute node (nodes {rule})")
        self._compute = compute
        self._names = [str(v) for v in compute]
        classes = sorted({str(c) for _, _, c in graph.edges(data="class", default="link")})
        clash = sorted(set(classes) & set(RESERVED))
        if clash:
            raise InputError(f"{name}: a link class may not be called {clash[0]!r}")
        self.classes = tuple(classes)
        self._switch_table, self._link_table = self._all_routes(nodes, compute)

    @property
    def num_nodes(self) -> int:
        return len(self._compute)

    @property
    def spec(self) -> str:
        return f"graph:{self.name}"

    def node_names(self) -> list[str]:
        return list(self._names)

    def to_networkx(self) -> nx.Graph:
        return self.graph

    def _routes(self, a, b):
        return self._switch_table[a, b].astype(np.int64), self._link_table[a, b].astype(np.int64)

    def _all_routes(self, nodes: list, compute: list) -> tuple[np.ndarray, np.ndarray]:
        """Shortest paths from every compute node, with compute nodes split in an out-copy
        (the source, only out-edges) and an in-copy (a target, only in-edges), so no path
        passes through a compute node; class counts accumulate along the BFS tree level by
        level (vectorised over sources)."""
        index = {v: i for i, v in enumerate(nodes)}
        V, N, C = len(nodes), len(compute), len(self.classes)
        in_copy = np.full(V, -1, dtype=np.int64)
        in_copy[[index[v] for v in compute]] = V + np.arange(N)
        is_compute = in_copy >= 0
        cls_of = {c: i for i, c in enumerate(self.classes)}
        u, v, c = [], [], []
        for x, y, k in self.graph.edges(data="class", default="link"):
            if x == y:
                continue
            for s, t in ((index[x], index[y]), (index[y], index[x])):
                u.append(s)
                v.append(in_copy[t] if is_compute[t] else t)
                c.append(cls_of[str(k)])
        u_a, v_a, c_a = (np.asarray(z, dtype=np.int64) for z in (u, v, c))
        total = V + N
        adj = sp.csr_matrix((np.ones(u_a.size), (u_a, v_a)), shape=(total, total))
        cls = sp.csr_matrix((c_a + 1.0, (u_a, v_a)), shape=(total, total))
        sources = np.flatnonzero(is_compute)
        targets = in_copy[sources]
        switches = np.zeros((N, N), dtype=np.int32)
        links = np.zeros((N, N, C), dtype=np.int32)
        onehot = np.vstack([np.zeros(C, dtype=np.int32), np.eye(C, dtype=np.int32)])
        batch = max(1, int(2e7 // max(total * (C + 2), 1)))
        for start in range(0, N, batch):
            src = sources[start : start + batch]
            dist, pred = csgraph.shortest_path(
                adj,
                method="D",
                directed=True,
                unweighted=True,
                indices=src,
                return_predecessors=True,
            )
            d_t = dist[:, targets]
            off = ~np.isfinite(d_t)
            off[np.arange(src.size), start + np.arange(src.size)] = False
            if off.any():
                i, j = np.argwhere(off)[0]
                raise InputError(
                    f"{self.name}: compute nodes {self._names[start + i]} and {self._names[j]} "
                    "are not connected through switches"
                )
            counts = np.zeros((src.size, total, C), dtype=np.int32)
            finite = np.isfinite(dist)
            depth = np.where(finite, dist, -1).astype(np.int64)
            for level in range(1, int(depth.max()) + 1 if depth.size else 1):
                rows, cols = np.nonzero(depth == level)
                parents = pred[rows, cols]
                k = np.asarray(cls[parents, cols]).ravel().astype(np.int64)
                counts[rows, cols] = counts[rows, parents] + onehot[k]
            switches[start : start + src.size] = np.maximum(d_t - 1, 0).astype(np.int32)
            links[start : start + src.size] = counts[:, targets]
        return switches, links


# ---------------------------------------------------------------------- reading specs
def read_topology(path: str | Path) -> GraphTopology:
    """A topology from a graph file: ``.graphml``, ``.gml``, or an edge list (other suffixes).

    An edge list has one edge per line, ``u v`` or ``u v CLASS`` (``#`` starts a comment);
    its compute nodes are the leaves. GraphML/GML mark compute nodes with ``kind=compute``
    and may give each edge a ``class`` attribute.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such topology file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".graphml":
            graph = nx.read_graphml(path)
        elif suffix == ".gml":
            graph = nx.read_gml(path, label="label")
        else:
            graph = _read_edge_list(path)
    except (nx.NetworkXError, ValueError, KeyError) as err:
        raise InputError(f"{path}: cannot read the topology graph: {err}") from err
    return GraphTopology(graph, name=str(path))


def _read_edge_list(path: Path) -> nx.Graph:
    graph = nx.Graph()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) not in (2, 3):
            raise InputError(
                f"{path}:{number}: expected 'u v' or 'u v CLASS', got {line.strip()!r}"
            )
        attrs = {"class": fields[2]} if len(fields) == 3 else {}
        graph.add_edge(fields[0], fields[1], **attrs)
    return graph


_SPEC_RE = re.compile(r"^\s*([a-zA-Z_-]+)\s*:(.*)$")


def parse_topology(spec: str) -> Topology:
    """``fattree:k=16[,tiers=2]``, ``dragonfly:g=8,a=4,p=8``, ``torus:dims=4x4x4[,p=2]``,
    ``graph:FILE`` or a path to a graph file."""
    text = spec.strip()
    if Path(text).is_file():
        return read_topology(text)
    match = _SPEC_RE.match(text)
    if not match:
        raise InputError(
            f"topology {spec!r}: expected fattree:k=16, dragonfly:g=8,a=4,p=8, torus:dims=4x4x4 "
            "or a graph file"
        )
    kind, rest = match.group(1).lower(), match.group(2).strip()
    if kind in ("graph", "file"):
        return read_topology(rest)
    options: dict[str, str] = {}
    for item in rest.split(","):
        if not item.strip():
            continue
        if "=" not in item:
            raise InputError(f"topology {spec!r}: {item!r} is not NAME=VALUE")
        key, value = (p.strip() for p in item.split("=", 1))
        options[key.lower()] = value
    allowed = {"fattree": {"k", "tiers"}, "dragonfly": {"g", "a", "p"}, "torus": {"dims", "p"}}
    if kind not in allowed:
        raise InputError(
            f"topology {spec!r}: unknown kind {kind!r} (fattree, dragonfly, torus, graph)"
        )
    unknown = set(options) - allowed[kind]
    if unknown:
        raise InputError(
            f"topology {spec!r}: unknown option {sorted(unknown)[0]!r} for {kind} "
            f"(use {', '.join(sorted(allowed[kind]))})"
        )

    def integer(name: str, default: int | None = None) -> int:
        if name not in options:
            if default is None:
                raise InputError(f"topology {spec!r}: {kind} needs {name}=…")
            return default
        try:
            return int(options[name])
        except ValueError as err:
            raise InputError(
                f"topology {spec!r}: {name}={options[name]!r} is not an integer"
            ) from err

    if kind == "fattree":
        return FatTree(integer("k"), integer("tiers", 3))
    if kind == "dragonfly":
        return Dragonfly(integer("g"), integer("a"), integer("p"))
    if "dims" not in options:
        raise InputError(f"topology {spec!r}: torus needs dims=XxYxZ")
    try:
        dims = tuple(int(d) for d in re.split(r"[x×*]", options["dims"].lower()))
    except ValueError as err:
        raise InputError(f"topology {spec!r}: dims={options['dims']!r} is not e.g. 4x4x4") from err
    return Torus(dims, integer("p", 1))


# ---------------------------------------------------------------------- rank mapping
@dataclass(frozen=True)
class RankMapping:
    """Compute node (index into the topology's nodes) of every rank."""

    node_of_rank: np.ndarray  # int64 (P,)
    source: str

    @property
    def num_ranks(self) -> int:
        return int(self.node_of_rank.size)


def dense_mapping(num_ranks: int, ranks_per_node: int = 1) -> RankMapping:
    """Consecutive ranks fill nodes: rank ``r`` on node ``r // ranks_per_node`` (paper §IV-2)."""
    if ranks_per_node < 1:
        raise InputError(f"ranks per node must be ≥ 1, got {ranks_per_node}")
    return RankMapping(
        np.arange(num_ranks, dtype=np.int64) // int(ranks_per_node),
        f"dense, {ranks_per_node} rank{'s' if ranks_per_node > 1 else ''} per node",
    )


def read_mapping(path: str | Path, num_ranks: int, node_names: Sequence[str]) -> RankMapping:
    """One node per rank, one line per rank (rank 0 first): a node index or a node name.

    Blank lines and ``#`` comments are skipped.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such mapping file")
    by_name = {name: i for i, name in enumerate(node_names)}
    nodes: list[int] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        token = line.split("#", 1)[0].strip()
        if not token:
            continue
        if token in by_name:
            nodes.append(by_name[token])
            continue
        try:
            value = int(token)
        except ValueError as err:
            raise InputError(
                f"{path}:{number}: {token!r} is neither a node name nor a node index"
            ) from err
        if not 0 <= value < len(node_names):
            raise InputError(f"{path}:{number}: node {value} is outside 0..{len(node_names) - 1}")
        nodes.append(value)
    if len(nodes) != num_ranks:
        raise InputError(f"{path}: {len(nodes)} nodes listed, the graph has {num_ranks} ranks")
    return RankMapping(np.asarray(nodes, dtype=np.int64), str(path))


def check_mapping(mapping: RankMapping, topology: Topology, num_ranks: int) -> None:
    """The mapping covers the graph's ranks and only uses nodes of ``topology``."""
    if mapping.num_ranks != num_ranks:
        raise InputError(f"the mapping places {mapping.num_ranks} ranks, the graph has {num_ranks}")
    if num_ranks and int(mapping.node_of_rank.max()) >= topology.num_nodes:
        need = int(mapping.node_of_rank.max()) + 1
        raise InputError(
            f"the mapping ({mapping.source}) needs {need} nodes, {topology.spec} has "
            f"{topology.num_nodes}"
        )


# ---------------------------------------------------------------------- latency model
@dataclass(frozen=True)
class LinkLatencies:
    """Latency of each variable: per-class wire latency, switch delay, intra-node latency."""

    wire_ns: float = DEFAULT_WIRE_NS
    switch_ns: float = DEFAULT_SWITCH_NS
    intra_node_ns: float = DEFAULT_INTRA_NODE_NS
    per_class_ns: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        values = {"wire": self.wire_ns, SWITCH: self.switch_ns, INTRA_NODE: self.intra_node_ns}
        values.update(self.per_class_ns)
        for name, value in values.items():
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"the latency of {name} must be finite and ≥ 0 ns, got {value!r}")

    def values(self, topology: Topology) -> np.ndarray:
        """Values of the model's variables (:func:`variable_names`). ``l_wire`` moves every
        class at once; its value is the common class latency, NaN if the classes differ."""
        unknown = set(self.per_class_ns) - set(topology.classes)
        if unknown:
            raise InputError(
                f"{topology.spec} has no link class {sorted(unknown)[0]!r} "
                f"(classes: {', '.join(topology.classes)})"
            )
        per = [float(self.per_class_ns.get(c, self.wire_ns)) for c in topology.classes]
        common = per[0] if len(set(per)) == 1 else math.nan
        return np.array([*per, common, self.switch_ns, self.intra_node_ns])


def variable_names(topology: Topology) -> tuple[str, ...]:
    """Variables of a topology model: its link classes, ``l_wire``, ``d_switch``,
    ``l_intra_node``."""
    return (*topology.classes, *RESERVED)


def route_derivatives(routes: Routes) -> np.ndarray:
    """``∂L/∂x`` per pair for the variables of :func:`variable_names`: wires per class, all
    wires (``h + 1``), switches ``h``, 1 if on the same node."""
    return np.column_stack(
        (routes.links, routes.links.sum(axis=1), routes.switches, routes.same_node.astype(np.int64))
    ).astype(np.float64)


def route_latency(dlat: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Latency per pair: the class columns, switches and same-node column (``l_wire`` is a
    direction, not an extra term)."""
    C = values.size - 3
    return (
        dlat[:, :C] @ values[:C] + dlat[:, C + 1] * values[C + 1] + dlat[:, C + 2] * values[C + 2]
    )


def topology_model(
    graph: ExecutionGraph,
    topology: Topology,
    mapping: RankMapping,
    params: LogGPS,
    latencies: LinkLatencies | None = None,
    *,
    intra_node_gap_ns_per_byte: float | None = None,
) -> MessageModel:
    """Per-message latencies ``Σ n_class·l_class + h·d_switch`` (or ``l_intra_node``) (App. H).

    Variables: the link classes, ``l_wire`` (all classes at once), ``d_switch`` and
    ``l_intra_node``, with ``dlatency[m, class] = n_class(m)``, ``dlatency[m, l_wire] =
    h(m) + 1``, ``dlatency[m, d_switch] = h(m)`` and ``dlatency[m, l_intra_node] = 1`` for
    same-node messages. Gaps: ``params.G`` (same-node
    messages: ``intra_node_gap_ns_per_byte`` if given).
    """
    latencies = latencies or LinkLatencies()
    check_mapping(mapping, topology, graph.num_ranks)
    sends, recvs = graph.messages()
    a = mapping.node_of_rank[graph.rank[sends]]
    b = mapping.node_of_rank[graph.rank[recvs]]
    routes = topology.routes(a, b)
    dlat = route_derivatives(routes)
    gap = np.full(sends.size, float(params.G))
    if intra_node_gap_ns_per_byte is not None:
        gap[routes.same_node] = float(intra_node_gap_ns_per_byte)
    return MessageModel(
        latency_ns=route_latency(dlat, latencies.values(topology)),
        gap_ns_per_byte=gap,
        names=variable_names(topology),
        dlatency=dlat,
        dgap=np.zeros_like(dlat),
    )


# ---------------------------------------------------------------------- tolerance walk
def _tol(value: float) -> float:
    return 10 * (REL_TOL * abs(value) + ABS_TOL_NS)


class ShiftWalk:
    """Exact x% tolerance along any variable of one :class:`MessageModel` (LLAMP §II-D2).

    The walk of :func:`llamp.lp.tolerance.max_parameter_within`, generalised: along variable
    ``x_j`` every edge weight is ``w + δ·∂w/∂x_j``, so ``T(δ)`` is convex, piecewise linear
    and non-decreasing (all derivatives ≥ 0). Tangents from the left overshoot the root, then
    Newton steps from the right with left slopes land on it, one linear piece per step. The
    edge weights and their derivatives are computed once; each step is one forward sweep
    (the kernel of :func:`llamp.lp.weighted.evaluate_model`, same tie-breaking).
    """

    def __init__(self, graph: ExecutionGraph, params: LogGPS, model: MessageModel):
        self.names = model.names
        self.events = engine_for(graph).events(params)
        self.w, self.dw = edge_weights(self.events, params, model)
        self._cols = [np.ascontiguousarray(self.dw[:, j : j + 1]) for j in range(len(self.names))]

    def point(self) -> tuple[float, dict[str, float]]:
        """``T`` and the right derivatives along every variable at the model's values (as
        :func:`llamp.lp.weighted.evaluate_model`, without the path)."""
        ev = self.events
        if ev.num_events == 0:
            return 0.0, dict.fromkeys(self.names, 0.0)
        t, d, _ = forward_sweep(ev.in_ptr, ev.src, self.w, self.dw, 1.0, REL_TOL, ABS_TOL_NS)
        T = float(t.max())
        agg = d[t >= T - (REL_TOL * abs(T) + ABS_TOL_NS)].max(axis=0)
        return T, {n: float(np.round(agg[i], 6)) for i, n in enumerate(self.names)}

    def at(self, variable: str, shift: float, sign: float = 1.0) -> tuple[float, float]:
        """``T`` and its right (``sign`` +1) or left (−1) slope at ``x_j + shift``."""
        ev = self.events
        if ev.num_events == 0:
            return 0.0, 0.0
        col = self._cols[self._index(variable)]
        w = self.w + shift * col[:, 0] if shift else self.w
        t, d, _ = forward_sweep(ev.in_ptr, ev.src, w, col, sign, REL_TOL, ABS_TOL_NS)
        T = float(t.max())
        tight = t >= T - (REL_TOL * abs(T) + ABS_TOL_NS)
        slope = d[tight, 0].max() if sign > 0 else d[tight, 0].min()
        return T, float(np.round(slope, 6))

    def breakpoints(
        self, variable: str, lo: float, hi: float, *, max_probes: int | None = None
    ) -> tuple[list[float], bool]:
        """The shifts in [lo, hi] of ``variable`` where the slope of ``T`` changes (the
        critical values of a link latency, found as the critical latencies are:
        :func:`llamp.lp.critical.probe_breakpoints`, two forward sweeps per probe), and
        whether all were found within ``max_probes``."""
        from llamp.lp.critical import probe_breakpoints

        self._index(variable)

        def probe(xs: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            right = [self.at(variable, float(x)) for x in xs]
            left = [self.at(variable, float(x), -1.0)[1] for x in xs]
            T = np.array([r[0] for r in right])
            return T, np.array(left), np.array([r[1] for r in right])

        return probe_breakpoints(probe, lo, hi, max_probes=max_probes)

    def _index(self, variable: str) -> int:
        if variable not in self.names:
            raise InputError(
                f"unknown variable {variable!r}: choose one of {', '.join(self.names)}"
            )
        return self.names.index(variable)

    def max_shift(
        self, variable: str, bound_ns: float, *, start: float = 0.0, max_steps: int = 10_000
    ) -> float:
        """Largest ``δ ≥ start`` with ``T(x_variable + δ) ≤ bound_ns``.

        ``math.inf`` if ``T`` never reaches the bound (no path ever pays the variable); an
        :class:`InputError` if ``T`` exceeds it already at ``start`` (``start`` ≤ the answer,
        e.g. the answer for a lower bound, is where the walk begins).
        """
        self._index(variable)
        T, slope = self.at(variable, start)
        if T > bound_ns + _tol(bound_ns):
            where = "the current value" if start == 0.0 else f"a shift of {start:g}"
            raise InputError(
                f"T = {T:g} ns at {where} of {variable} already exceeds the bound {bound_ns:g} ns"
            )
        if self.at(variable, _HUGE_NS)[1] <= 0.0:
            return math.inf
        x, step = float(start), max(bound_ns - T, 1.0)
        for _ in range(max_steps):
            if T >= bound_ns - _tol(bound_ns):
                break
            if slope > 0.0:
                x += (bound_ns - T) / slope
            else:
                x, step = x + step, 2.0 * step
            T, slope = self.at(variable, x)
        else:  # pragma: no cover - defensive
            raise RuntimeError("tolerance walk did not bracket the bound")
        for _ in range(max_steps):
            if T - bound_ns <= _tol(bound_ns):
                return x
            _, left = self.at(variable, x, -1.0)
            x = max(x - (T - bound_ns) / left, start)
            T, _ = self.at(variable, x)
        raise RuntimeError("tolerance walk did not converge")  # pragma: no cover


def max_shift_within(
    graph: ExecutionGraph,
    params: LogGPS,
    model: MessageModel,
    variable: str,
    bound_ns: float,
    *,
    start: float = 0.0,
) -> float:
    """Largest ``δ ≥ 0`` with ``T(model + δ·e_variable) ≤ bound_ns`` (exact; see
    :class:`ShiftWalk`). The x% tolerance of ``variable`` is its value plus ``δ`` at
    ``bound_ns = (1+x)·T0``."""
    return ShiftWalk(graph, params, model).max_shift(variable, bound_ns, start=start)


# ---------------------------------------------------------------------- analyses
@dataclass(frozen=True)
class TopologyAnalysis:
    """``T``, λ and x% tolerance per variable of one topology (App. H), plus route statistics.

    ``variables``: one row per variable (``variable``, ``kind`` link|all_links|switch|
    intra_node, ``value_ns`` (NaN for ``l_wire`` when the classes' latencies differ),
    ``lambda``: wires (switches, same-node messages) of that variable on the critical path,
    ``lambda_share``: ``value·λ/T``). ``tolerances``: one row per variable and
    level (``variable``, ``x``, ``bound_ns``, ``tolerance_ns``, ``headroom_ns`` =
    tolerance − value; ``inf`` when no critical path ever pays the variable).
    """

    topology: str
    mapping: str
    runtime_ns: float
    num_nodes: int
    nodes_used: int
    mean_switches: float  # over inter-node messages
    intra_node_fraction: float  # of messages
    variables: pd.DataFrame
    tolerances: pd.DataFrame
    elapsed_s: float

    def as_dict(self) -> dict:
        return {
            "topology": self.topology,
            "mapping": self.mapping,
            "runtime_ns": self.runtime_ns,
            "num_nodes": self.num_nodes,
            "nodes_used": self.nodes_used,
            "mean_switches": self.mean_switches,
            "intra_node_fraction": self.intra_node_fraction,
            "variables": self.variables.to_dict(orient="records"),
            "tolerances": self.tolerances.to_dict(orient="records"),
            "elapsed_s": self.elapsed_s,
        }


def analyze_topology(
    graph: ExecutionGraph,
    params: LogGPS,
    topology: Topology,
    mapping: RankMapping | None = None,
    latencies: LinkLatencies | None = None,
    levels: Sequence[float] = DEFAULT_TOLERANCES,
    *,
    intra_node_gap_ns_per_byte: float | None = None,
) -> TopologyAnalysis:
    """``T``, λ per link class / switch / intra-node, and their x% tolerances (App. H)."""
    started = time.perf_counter()
    levels = [float(v) for v in levels]
    if any(v < 0 for v in levels):
        raise InputError("tolerance levels must be ≥ 0 (fractions, e.g. 0.01 for 1%)")
    latencies = latencies or LinkLatencies()
    mapping = mapping or dense_mapping(graph.num_ranks)
    model = topology_model(
        graph,
        topology,
        mapping,
        params,
        latencies,
        intra_node_gap_ns_per_byte=intra_node_gap_ns_per_byte,
    )
    walk = ShiftWalk(graph, params, model)
    T0, slopes = walk.point()
    values = latencies.values(topology)
    kinds = ["link"] * len(topology.classes) + ["all_links", "switch", "intra_node"]
    lam = np.array([slopes[n] for n in model.names])
    variables = pd.DataFrame(
        {
            "variable": list(model.names),
            "kind": kinds,
            "value_ns": values,
            "lambda": lam,
            "lambda_share": values * lam / T0 if T0 > 0 else np.zeros_like(lam),
        }
    )
    ordered = sorted(levels)

    def walk_levels(name: str) -> list[float]:
        shift, out = 0.0, []
        for level in ordered:  # T is non-decreasing: each answer starts the next walk
            if not math.isinf(shift):
                shift = walk.max_shift(name, (1.0 + level) * T0, start=shift)
            out.append(shift)
        return out

    # The sweeps release the GIL: variables are walked on all cores.
    workers = max(1, min(len(model.names), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        shifts = dict(zip(model.names, pool.map(walk_levels, model.names), strict=True))
    rows = [
        (name, level, (1.0 + level) * T0, value + shift, shift)
        for name, value in zip(model.names, values, strict=True)
        for level, shift in zip(ordered, shifts[name], strict=True)
    ]
    tolerances = pd.DataFrame(
        rows, columns=["variable", "x", "bound_ns", "tolerance_ns", "headroom_ns"]
    )
    switches = model.dlatency[:, len(topology.classes) + 1]
    inter = model.dlatency[:, -1] == 0
    return TopologyAnalysis(
        topology=topology.spec,
        mapping=mapping.source,
        runtime_ns=T0,
        num_nodes=topology.num_nodes,
        nodes_used=int(np.unique(mapping.node_of_rank).size),
        mean_switches=float(switches[inter].mean()) if inter.any() else 0.0,
        intra_node_fraction=float((~inter).mean()) if inter.size else 0.0,
        variables=variables,
        tolerances=tolerances,
        elapsed_s=time.perf_counter() - started,
    )


@dataclass(frozen=True)
class TopologyComparison:
    """Several topologies on one graph (the paper's Fig. 11), as long DataFrames.

    ``summary``: one row per topology (``topology``, ``runtime_ns``, ``num_nodes``,
    ``nodes_used``, ``mean_switches``, ``intra_node_fraction``); ``variables`` and
    ``tolerances``: :class:`TopologyAnalysis` frames with a ``topology`` column.
    """

    analyses: tuple[TopologyAnalysis, ...]
    summary: pd.DataFrame
    variables: pd.DataFrame
    tolerances: pd.DataFrame

    def as_dict(self) -> dict:
        return {"topologies": [a.as_dict() for a in self.analyses]}


def compare_topologies(
    graph: ExecutionGraph,
    params: LogGPS,
    topologies: Sequence[Topology | str],
    *,
    ranks_per_node: int = 1,
    mapping_file: str | Path | None = None,
    latencies: LinkLatencies | None = None,
    levels: Sequence[float] = DEFAULT_TOLERANCES,
    progress: Callable[[str], object] | None = None,
) -> TopologyComparison:
    """:func:`analyze_topology` for each topology, with the same rank mapping rule.

    The mapping is dense (``ranks_per_node``) unless ``mapping_file`` is given (read per
    topology, so node names of a graph topology resolve). A latency given for a link class
    applies to the topologies that have that class (an error if none has it).
    ``progress(spec)`` is called after each topology.
    """
    topos = [parse_topology(t) if isinstance(t, str) else t for t in topologies]
    if latencies is not None:
        known = {c for t in topos for c in t.classes}
        unknown = sorted(set(latencies.per_class_ns) - known)
        if unknown:
            raise InputError(
                f"no topology has a link class {unknown[0]!r} (classes: {', '.join(sorted(known))})"
            )
    analyses = []
    for topo in topos:
        if mapping_file is not None:
            mapping = read_mapping(mapping_file, graph.num_ranks, topo.node_names())
        else:
            mapping = dense_mapping(graph.num_ranks, ranks_per_node)
        lat = latencies or LinkLatencies()
        lat = replace(
            lat, per_class_ns={k: v for k, v in lat.per_class_ns.items() if k in topo.classes}
        )
        analyses.append(analyze_topology(graph, params, topo, mapping, lat, levels))
        if progress is not None:
            progress(topo.spec)
    summary = pd.DataFrame(
        [
            {
                "topology": a.topology,
                "runtime_ns": a.runtime_ns,
                "num_nodes": a.num_nodes,
                "nodes_used": a.nodes_used,
                "mean_switches": a.mean_switches,
                "intra_node_fraction": a.intra_node_fraction,
            }
            for a in analyses
        ]
    )
    variables = pd.concat(
        [a.variables.assign(topology=a.topology) for a in analyses], ignore_index=True
    )
    tolerances = pd.concat(
        [a.tolerances.assign(topology=a.topology) for a in analyses], ignore_index=True
    )
    front = ["topology"]
    variables = variables[front + [c for c in variables.columns if c not in front]]
    tolerances = tolerances[front + [c for c in tolerances.columns if c not in front]]
    return TopologyComparison(tuple(analyses), summary, variables, tolerances)


def sweep_topologies(
    graph: ExecutionGraph,
    params: LogGPS,
    topologies: Sequence[Topology | str],
    values_ns: Sequence[float],
    *,
    variable: str = WIRE,
    ranks_per_node: int = 1,
    latencies: LinkLatencies | None = None,
) -> pd.DataFrame:
    """``T`` and its right derivative at each value of one variable, per topology (the
    paper's Fig. 11: runtime against the per-wire latency ``l_wire``, others fixed).

    One row per topology and value: ``topology``, ``variable``, ``value_ns``, ``runtime_ns``,
    ``lambda``, ``slowdown`` (T / T at the configured value − 1). Dense mapping.
    """
    latencies = latencies or LinkLatencies()
    values = np.asarray(values_ns, dtype=np.float64)
    rows = []
    for item in topologies:
        topo = parse_topology(item) if isinstance(item, str) else item
        lat = replace(
            latencies,
            per_class_ns={k: v for k, v in latencies.per_class_ns.items() if k in topo.classes},
        )
        model = topology_model(
            graph, topo, dense_mapping(graph.num_ranks, ranks_per_node), params, lat
        )
        if variable not in model.names:
            raise InputError(
                f"{topo.spec} has no variable {variable!r} (variables: {', '.join(model.names)})"
            )
        current = lat.values(topo)[model.names.index(variable)]
        if math.isnan(current):
            raise InputError(
                f"{topo.spec}: the link classes have different latencies, so {variable} has no "
                "single value to sweep from; sweep one class instead"
            )
        walk = ShiftWalk(graph, params, model)
        T0 = walk.at(variable, 0.0)[0]
        for value in values:
            T, slope = walk.at(variable, float(value) - current)
            rows.append(
                (topo.spec, variable, float(value), T, slope, T / T0 - 1.0 if T0 > 0 else 0.0)
            )
    return pd.DataFrame(
        rows, columns=["topology", "variable", "value_ns", "runtime_ns", "lambda", "slowdown"]
    )
