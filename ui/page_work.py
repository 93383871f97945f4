"""The UI's inputs of the analyses and the page-specific computations that are not a
registered analysis (:data:`llamp.lp.registry.ANALYSES`: those run through
:func:`llamp.ui.controls.analysis`).

A page runs these through :func:`llamp.ui.controls.background` (or
:func:`llamp.ui.controls.background_each`), which keeps their results as stored analyses. The
inputs several results share — a topology read once, a trace read once, the what-if's expanded
graphs — are kept in the UI's one in-process memo (:func:`llamp.ui.stored.kept`), keyed on
``run`` (a string naming the store, the run and its identity, from
:func:`llamp.ui.store_access.cache_key`) and the parameters as plain tuples, never on a graph.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from llamp.errors import InputError, LlampError
from llamp.graph import ExecutionGraph
from llamp.lp import (
    CriticalLatencies,
)
from llamp.lp import collectives_whatif as whatif
from llamp.lp.collectives_whatif import CollectiveComparison, Variant, compare_collectives
from llamp.lp.placement import Machine
from llamp.lp.region import Plane, Region, RegionPreview, region_preview, tolerance_region
from llamp.lp.registry import ANALYSES, Inputs, MatrixSettings, PlaceSettings, machine
from llamp.lp.topology import (
    LinkLatencies,
    RankMapping,
    ShiftWalk,
    Topology,
    TopologyAnalysis,
    analyze_topology,
    dense_mapping,
    parse_topology,
    read_mapping,
    read_topology,
    topology_model,
)
from llamp.params import LogGPS
from llamp.ui import codec, stored

#: Every field of :class:`LogGPS` in its order (L ns, o ns, G ns/B, S bytes, g ns and the model
#: options): a hashable LogGPS.
ParamKey = tuple


def param_key(params: LogGPS) -> ParamKey:
    return dataclasses.astuple(params)


def params_of(key: ParamKey) -> LogGPS:
    return LogGPS(*key)


#: Columns of :func:`breakpoints`.
BREAKPOINT_COLUMNS = (
    "rank",
    "at_ns",
    "lo_ns",
    "hi_ns",
    "slope_before",
    "slope_after",
    "jump",
    "relative_jump",
    "merged",
)


def breakpoints(crit: CriticalLatencies, min_jump: float) -> pd.DataFrame:
    """The critical latencies that matter, ranked by the jump of λ_L
    (:meth:`~llamp.lp.critical.CriticalLatencies.significant`)."""
    rows = [
        (b.at, b.lo, b.hi, b.slope_before, b.slope_after, b.jump, b.relative_jump, b.merged)
        for b in crit.significant(min_jump=min_jump)
    ]
    frame = pd.DataFrame(rows, columns=list(BREAKPOINT_COLUMNS[1:]))
    frame.insert(0, "rank", np.arange(1, len(frame) + 1))
    return frame


# ---------------------------------------------------------------------- network what-ifs
#: An uploaded file: (its name, its contents).
Upload = tuple[str, bytes]
#: A topology: a spec (``fattree:k=16,tiers=3``, a graph file on the server) or an upload.
TopologySource = str | Upload
#: (l_wire ns, d_switch ns, l_intra_node ns, ((link class, ns), …)): a hashable LinkLatencies.
LatencyKey = tuple[float, float, float, tuple[tuple[str, float], ...]]
#: (L ns, G ns/B) of one level of the two-level node model (App. I).
Level = tuple[float, float]


def latency_key(lat: LinkLatencies) -> LatencyKey:
    per_class = tuple(sorted((str(k), float(v)) for k, v in lat.per_class_ns.items()))
    return (float(lat.wire_ns), float(lat.switch_ns), float(lat.intra_node_ns), per_class)


def latencies_of(key: LatencyKey, topology: Topology | None = None) -> LinkLatencies:
    """The latencies of ``key``; with ``topology``, only the class latencies of its own link
    classes (a class latency applies to the topologies that have it, as in
    :func:`llamp.lp.topology.compare_topologies`)."""
    wire, switch, intra, per_class = key
    classes = {k: v for k, v in per_class if topology is None or k in topology.classes}
    return LinkLatencies(wire_ns=wire, switch_ns=switch, intra_node_ns=intra, per_class_ns=classes)


def check_link_classes(topologies: Sequence[Topology], latencies: LatencyKey) -> None:
    """Every link class given a latency belongs to one of ``topologies``."""
    known = {c for t in topologies for c in t.classes}
    unknown = sorted({k for k, _ in latencies[3]} - known)
    if unknown:
        raise InputError(
            f"no topology has a link class {unknown[0]!r} (classes: {', '.join(sorted(known))})"
        )


def _staged(upload: Upload, read: Callable[[Path], object]):
    """``read(path)`` of an upload saved under its own name in a temporary directory; an
    error names the file as the user knows it, not by the temporary path."""
    name, data = upload
    with tempfile.TemporaryDirectory(prefix="llamp-ui-") as tmp:
        path = Path(tmp) / (Path(name).name or "upload")
        path.write_bytes(data)
        try:
            return read(path)
        except LlampError as err:
            raise InputError(str(err).replace(str(path), name)) from None


def topology_of(source: TopologySource) -> Topology:
    """The topology of a spec (:func:`parse_topology`) or of an uploaded graph file
    (:func:`read_topology`, format by suffix), built once per process: a graph file's routes
    between all compute nodes are computed when it is read."""

    def read() -> Topology:
        if isinstance(source, str):
            return parse_topology(source)
        topo = _staged(source, read_topology)
        topo.name = source[0]  # its spec becomes graph:<file name>
        return topo

    return stored.kept("topology", source, read, most=16)


def rank_mapping(
    topology: Topology, num_ranks: int, ranks_per_node: int, mapping: Upload | None
) -> RankMapping:
    """Dense (``ranks_per_node`` consecutive ranks per node, paper §IV-2) or an uploaded
    mapping file (one node index or name per line, rank 0 first)."""
    if mapping is None:
        return dense_mapping(num_ranks, ranks_per_node)
    read = _staged(mapping, lambda path: read_mapping(path, num_ranks, topology.node_names()))
    return RankMapping(read.node_of_rank, mapping[0])


def topology_analysis(
    graph: ExecutionGraph,
    params: ParamKey,
    source: TopologySource,
    ranks_per_node: int,
    mapping: Upload | None,
    latencies: LatencyKey,
    levels: tuple[float, ...],
) -> TopologyAnalysis:
    """``T``, λ and x% tolerance per link class, switch and same-node latency (App. H)."""
    topo = topology_of(source)
    return analyze_topology(
        graph,
        params_of(params),
        topo,
        rank_mapping(topo, graph.num_ranks, ranks_per_node, mapping),
        latencies_of(latencies, topo),
        levels,
    )


#: Probes of a topology sweep's breakpoint search (two forward sweeps each): every breakpoint
#: of a few hundred; beyond, the ones found, the values asked for and straight lines between.
TOPOLOGY_BREAKPOINT_PROBES = 400


def topology_sweep(
    graph: ExecutionGraph,
    params: ParamKey,
    source: TopologySource,
    ranks_per_node: int,
    mapping: Upload | None,
    latencies: LatencyKey,
    variable: str,
    values_ns: tuple[float, ...],
) -> pd.DataFrame:
    """``T`` and its right derivative at each value of one latency variable, the others fixed
    (the paper's Fig. 11): the rows of :func:`llamp.lp.topology.sweep_topologies` for one
    topology, under this rank mapping (one exact forward sweep per value), and at every
    breakpoint of ``T`` between the first and last value (:meth:`ShiftWalk.breakpoints`,
    at most :data:`TOPOLOGY_BREAKPOINT_PROBES` probes), so the curve drawn through the rows
    is ``T`` itself."""
    topo = topology_of(source)
    p = params_of(params)
    lat = latencies_of(latencies, topo)
    mapping_ = rank_mapping(topo, graph.num_ranks, ranks_per_node, mapping)
    model = topology_model(graph, topo, mapping_, p, lat)
    if variable not in model.names:
        raise InputError(
            f"{topo.spec} has no variable {variable!r} (variables: {', '.join(model.names)})"
        )
    current = float(lat.values(topo)[model.names.index(variable)])
    if math.isnan(current):
        raise InputError(
            f"{topo.spec}: the link classes have different latencies, so {variable} has no "
            "single value to sweep from; sweep one class instead"
        )
    walk = ShiftWalk(graph, p, model)
    T0 = walk.at(variable, 0.0)[0]
    lo, hi = min(values_ns), max(values_ns)
    found, _ = walk.breakpoints(
        variable, lo - current, hi - current, max_probes=TOPOLOGY_BREAKPOINT_PROBES
    )
    values_ns = sorted({*values_ns, *(current + b for b in found)})
    rows = []
    for value in values_ns:
        T, slope = walk.at(variable, float(value) - current)
        rows.append((topo.spec, variable, float(value), T, slope, T / T0 - 1.0 if T0 > 0 else 0.0))
    return pd.DataFrame(
        rows, columns=["topology", "variable", "value_ns", "runtime_ns", "lambda", "slowdown"]
    )


#: Where ``L_ij``, ``G_ij`` come from (App. I): ``("uniform",)`` (the configuration's L, G),
#: ``("two-level", ranks per node, intra Level, inter Level)`` or
#: ``("topology", TopologySource, ranks per node, LatencyKey)`` (dense mapping).
CostSource = tuple


def matrix_of(params: LogGPS, source: CostSource) -> tuple[Inputs, MatrixSettings]:
    """The inputs and settings of the registry's ``matrix`` for ``source``."""
    kind = source[0]
    settings = ANALYSES["matrix"].default_settings()
    if kind == "uniform":
        return Inputs(params), settings
    if kind == "two-level":
        _, ranks_per_node, intra, inter = source
        return Inputs(params), dataclasses.replace(
            settings, ranks_per_node=ranks_per_node, intra=intra, inter=inter
        )
    if kind == "topology":
        _, topo_source, ranks_per_node, latencies = source
        topo = topology_of(topo_source)
        inputs = Inputs(params, topology=topo, latencies=latencies_of(latencies, topo))
        return inputs, dataclasses.replace(settings, ranks_per_node=ranks_per_node)
    raise InputError(f"unknown source of L_ij, G_ij: {kind!r}")


#: A machine for rank placement (App. J): ``("two-level", nodes, ranks per node, intra Level,
#: inter Level, host names)`` or ``("topology", TopologySource, nodes, ranks per node,
#: LatencyKey, host names)``; no host names: node0, node1, …
MachineSpec = tuple
#: Heuristic settings: (time budget s, most swaps, candidates per iteration, start, seed).
PlacementBudget = tuple[float, int, int, str, int]


def placement_of(
    params: ParamKey, spec: MachineSpec, budget: PlacementBudget | None = None
) -> tuple[Inputs, PlaceSettings]:
    """The inputs and settings of the registry's ``place`` for a machine ``spec`` and a
    heuristic ``budget`` (default: the command line's)."""
    settings = ANALYSES["place"].default_settings()
    if budget is not None:
        budget_s, max_swaps, candidates, start, seed = budget
        settings = dataclasses.replace(
            settings,
            budget_s=budget_s,
            max_swaps=max_swaps,
            candidates=candidates,
            start=start,
            seed=seed,
        )
    kind = spec[0]
    if kind == "two-level":
        _, nodes, ranks_per_node, intra, inter, hosts = spec
        settings = dataclasses.replace(
            settings, nodes=nodes, ranks_per_node=ranks_per_node, intra=intra, inter=inter
        )
        return Inputs(params_of(params), hostnames=tuple(hosts) or None), settings
    if kind == "topology":
        _, source, nodes, ranks_per_node, latencies, hosts = spec
        topo = topology_of(source)
        settings = dataclasses.replace(settings, nodes=nodes, ranks_per_node=ranks_per_node)
        inputs = Inputs(
            params_of(params),
            topology=topo,
            latencies=latencies_of(latencies, topo),
            hostnames=tuple(hosts) or None,
        )
        return inputs, settings
    raise InputError(f"unknown machine kind {kind!r}")


def machine_of(params: ParamKey, spec: MachineSpec) -> Machine:
    """The :class:`~llamp.lp.placement.Machine` of ``spec`` (node-to-node L and G), built by
    :func:`llamp.lp.registry.machine` once per process."""

    def build() -> Machine:
        inputs, settings = placement_of(params, spec)
        return machine(settings.nodes, inputs, settings)

    return stored.kept("machine", (params, spec), build, most=16)


# ---------------------------------------------------------------------- application what-ifs
def trace_directory(meta: dict) -> Path | None:
    """Where the trace a run was ingested from is, if it is still on this machine.

    A stored run keeps its ``format`` and source ``files`` in its metadata (paths as given at
    ingest, possibly relative to where ``llamp`` ran). The trace is the files' common directory
    or a directory above it (an OTF2 archive keeps its rank files under ``traces/``) that reads
    as the same format; ``None`` if the files are gone or the run came from a graph file.
    """
    from llamp.ingest import FORMATS, detect_format

    fmt = str(meta.get("format", ""))
    files = [Path(f) for f in meta.get("files") or []]
    if FORMATS.get(fmt) is None or FORMATS[fmt].kind != "trace" or not files:
        return None
    present = [f for f in files if f.exists()]
    if not present:
        return None
    start = Path(os.path.commonpath([str(f.resolve().parent) for f in present]))
    for candidate in (start, *list(start.parents)[:2]):
        try:
            if detect_format(candidate) == fmt:
                return candidate
        except LlampError:
            continue
    return None


def trace_at(path: str, lenient: bool):
    """The trace (:class:`~llamp.ingest.events.Trace`) at ``path``, read once per process."""
    from llamp.ingest import read_trace

    return stored.kept("trace", (path, lenient), lambda: read_trace(path, lenient=lenient), most=4)


#: A collective variant: (label, ((op, algorithm), …)).
VariantKey = tuple[str, tuple[tuple[str, str], ...]]


def _variants(variants: tuple[VariantKey, ...]) -> list[Variant]:
    return [Variant(label, pairs) for label, pairs in variants]


#: Expanded what-ifs kept in the process (their graphs also count towards
#: :data:`llamp.ui.stored.MEMO_VERTICES`).
WHATIF_KEEP = 8


def collective_comparison(
    path: str,
    lenient: bool,
    variants: tuple[VariantKey, ...],
    params: ParamKey,
    levels: tuple[float, ...],
    progress: whatif.ProgressHook | None = None,
) -> CollectiveComparison:
    """:func:`llamp.lp.collectives_whatif.compare_collectives` of the trace at ``path`` at
    ``params`` (LLAMP Fig. 10), with its expanded graphs, computed once per process (the graphs
    are only read): curves over another range of L expand nothing again."""
    return stored.kept(
        "collective_expansion",
        (path, lenient, variants, params, levels),
        lambda: compare_collectives(
            trace_at(path, lenient),
            _variants(variants),
            params_of(params),
            [params[0]],
            levels=levels,
            lenient=lenient,
            progress=progress or False,
        ),
        most=WHATIF_KEEP,
    )


def collective_instances(path: str, lenient: bool) -> pd.DataFrame:
    """:func:`llamp.lp.collectives_whatif.collective_instances` of the trace at ``path``."""
    return stored.kept(
        "collective_instances",
        (path, lenient),
        lambda: whatif.collective_instances(trace_at(path, lenient)),
        most=16,
    )


def collective_costs(
    path: str, lenient: bool, variants: tuple[VariantKey, ...], params: ParamKey
) -> pd.DataFrame:
    """:func:`llamp.lp.collectives_whatif.collective_costs` of the trace at ``path``."""
    return stored.kept(
        "collective_costs",
        (path, lenient, variants, params),
        lambda: whatif.collective_costs(
            collective_instances(path, lenient), _variants(variants), params_of(params)
        ),
        most=16,
    )


def engine_throughput(run: str, graph: ExecutionGraph, params: ParamKey) -> float:
    """:func:`llamp.lp.collectives_whatif.measure_throughput` on the stored run ``run``
    (measured once per process)."""
    return stored.kept(
        "engine_throughput",
        (run, params),
        lambda: whatif.measure_throughput(graph, params_of(params)),
        most=16,
    )


def whatif_estimate(
    path: str,
    lenient: bool,
    variants: tuple[VariantKey, ...],
    levels: int,
    eval_ns_per_vertex: float | None,
) -> whatif.WhatifEstimate:
    """:func:`llamp.lp.collectives_whatif.estimate_whatif` of the trace at ``path`` (without
    curves: their budget is what the comparison leaves of the target)."""
    return stored.kept(
        "whatif_estimate",
        (path, lenient, variants, levels, eval_ns_per_vertex),
        lambda: whatif.estimate_whatif(
            trace_at(path, lenient),
            _variants(variants),
            levels=levels,
            eval_ns_per_vertex=eval_ns_per_vertex,
        ),
        most=32,
    )


# ---------------------------------------------------------------------- joint tolerance regions
@dataclass(frozen=True, eq=False)
class RegionMap:
    """Joint tolerance regions over two of L, G, o and ``T`` on a grid over their box."""

    region: Region
    us: np.ndarray
    vs: np.ndarray
    runtime_ns: np.ndarray  # (len(vs), len(us))


codec.register(RegionMap)


def region_map(
    graph: ExecutionGraph,
    params: ParamKey,
    axes: tuple[str, str],
    levels: tuple[float, ...],
    box: tuple[tuple[str, float], ...],
    preview: RegionPreview,
    report: Callable[[float | None, str], None] | None = None,
) -> RegionMap:
    """Exact regions ``T ≤ (1+x)·T0`` (:func:`llamp.lp.region.tolerance_region`) over the
    heat map of ``preview`` (:func:`region_preview_map` of the same arguments: ``T`` on a grid
    of the same box). ``report(share of the boundaries final, what is done)``."""

    def progress(share: float | None, evaluations: int) -> None:
        if report is not None:
            report(share, f"{evaluations:,} evaluations")

    region = tolerance_region(
        graph, params_of(params), levels=levels, axes=axes, box=dict(box), progress=progress
    )
    return RegionMap(region, preview.us, preview.vs, preview.runtime_ns)


def region_preview_map(
    graph: ExecutionGraph,
    params: ParamKey,
    axes: tuple[str, str],
    levels: tuple[float, ...],
    box: tuple[tuple[str, float], ...],
    cells: int,
    report: Callable[[float | None, str], None] | None = None,
) -> RegionPreview:
    """``T`` on the region's box in seconds (:func:`llamp.lp.region.region_preview`), shown
    while the exact polygons of :func:`region_map` are computed."""
    return region_preview(
        graph,
        params_of(params),
        levels=levels,
        axes=axes,
        box=dict(box),
        cells=cells,
        progress=None if report is None else (lambda done: report(done, "T on the grid")),
    )


def region_plane(run: str, graph: ExecutionGraph, params: ParamKey, axes: tuple[str, str]) -> Plane:
    """``T`` over two of L, G, o (:class:`llamp.lp.region.Plane`): what a region read back from
    the store (:mod:`llamp.ui.stored`, without its plane) needs to evaluate designs; built once
    per process for run ``run``."""
    return stored.kept(
        "region_plane",
        (run, params, axes),
        lambda: Plane.of_parameters(graph, params_of(params), axes),
        most=8,
    )


def with_plane(rmap: RegionMap, plane: Plane) -> RegionMap:
    """``rmap`` whose region evaluates ``T`` through ``plane``."""
    return dataclasses.replace(rmap, region=dataclasses.replace(rmap.region, plane=plane))
