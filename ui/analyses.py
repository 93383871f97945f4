"""Cached analysis calls: the :mod:`llamp.lp` functions keyed on run and parameters.

Every function takes ``run`` (a string naming the store, the run and its identity, from
:func:`llamp.ui.store.cache_key`), the graph (not hashed: ``_graph``) and the parameters as
plain tuples, so changing a plot option reruns the page without recomputing an analysis.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from llamp.config import format_ns
from llamp.errors import InputError, LlampError
from llamp.graph import ExecutionGraph
from llamp.lp import (
    CriticalLatencies,
    CriticalPath,
    Evaluation,
    Prediction,
    Tolerance,
    critical_latencies,
    critical_path,
    evaluate,
    predict,
    rank_time_split,
    sweep,
    tolerance,
)
from llamp.lp import collectives_whatif as whatif
from llamp.lp.classify import Classification, Network, Thresholds, classify
from llamp.lp.collectives_whatif import CollectiveComparison, Variant, compare_collectives
from llamp.lp.matrix import PairCosts, PairSensitivity, from_topology, pair_sensitivity, two_level
from llamp.lp.placement import Machine, Placement, place, topology_machine, two_level_machine
from llamp.lp.region import Plane, Region, RegionPreview, region_preview, tolerance_region
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
from llamp.lp.variability import Variability, monte_carlo
from llamp.params import LogGPS

#: (L ns, o ns, G ns/B, S bytes, g ns, progress, nic, order, rendezvous): a hashable LogGPS.
ParamKey = tuple[float, float, float, int, float, str, str, str, str]


def param_key(params: LogGPS) -> ParamKey:
    return (
        float(params.L),
        float(params.o),
        float(params.G),
        int(params.S),
        float(params.g),
        params.progress,
        params.nic,
        params.order,
        params.rendezvous,
    )


def params_of(key: ParamKey) -> LogGPS:
    L, o, G, S, g, progress, nic, order, rendezvous = key
    return LogGPS(
        L=L, o=o, G=G, S=S, g=g, progress=progress, nic=nic, order=order, rendezvous=rendezvous
    )


@st.cache_data(max_entries=64, show_spinner=False)
def predict_at(run: str, _graph: ExecutionGraph, params: ParamKey) -> Prediction:
    """``T``, ``λ_L``, ``λ_G``, ``λ_o``, ``ρ_L`` at ``params``."""
    return predict(_graph, params_of(params))


@st.cache_data(max_entries=64, show_spinner=False)
def tolerance_at(
    run: str, _graph: ExecutionGraph, params: ParamKey, levels: tuple[float, ...]
) -> Tolerance:
    """x% L and G tolerance for each x in ``levels`` (fractions)."""
    return tolerance(_graph, params_of(params), levels)


@dataclass(frozen=True)
class LatencyCurve:
    """``T(L)`` over [lo, hi]: its exact breakpoints and a sweep that includes them."""

    critical: CriticalLatencies
    sweep: pd.DataFrame


@st.cache_data(max_entries=32, show_spinner=False)
def latency_curve(
    run: str,
    _graph: ExecutionGraph,
    params: ParamKey,
    lo: float,
    hi: float,
    points: int,
    extra: tuple[float, ...] = (),
) -> LatencyCurve:
    """Critical latencies in [lo, hi] and a sweep of ``points`` evenly spaced values of L plus
    every critical latency and each of ``extra`` in the range (so the plotted polyline of the
    piecewise-linear ``T(L)`` is exact)."""
    p = params_of(params)
    crit = critical_latencies(_graph, p, lo, hi)
    values = np.concatenate(
        [np.linspace(lo, hi, points), np.asarray(crit.critical, float), np.asarray(extra, float)]
    )
    values = np.unique(values[(values >= lo) & (values <= hi)])
    return LatencyCurve(critical=crit, sweep=sweep(_graph, p, values))


@st.cache_data(max_entries=16, show_spinner=False)
def schedule(run: str, _graph: ExecutionGraph, params: ParamKey) -> Evaluation:
    """Per-vertex start/finish/slack/critical at ``params``."""
    return evaluate(_graph, params_of(params))


@st.cache_data(max_entries=16, show_spinner=False)
def path_at(run: str, _graph: ExecutionGraph, params: ParamKey) -> CriticalPath:
    """The critical path and its per-rank split at ``params``."""
    return critical_path(_graph, params_of(params))


@st.cache_data(max_entries=16, show_spinner=False)
def time_split(run: str, _graph: ExecutionGraph, params: ParamKey) -> pd.DataFrame:
    """Each rank's compute/overhead/blocked split (:func:`llamp.lp.rank_time_split`)."""
    return rank_time_split(_graph, schedule(run, _graph, params))


def auto_range(tol: Tolerance, L0: float) -> tuple[float, float]:
    """[0, 1.25 × the largest L tolerance] (at least 2·L0 and L0 + 10 µs), so every tolerance
    zone is on the plot; L0 + 100 µs if no L tolerance is finite (no message on any path)."""
    finite = [t.value for t in tol.latency if math.isfinite(t.value)]
    if not finite:
        return 0.0, L0 + 100_000.0
    return 0.0, max(1.25 * max(finite), 2.0 * L0, L0 + 10_000.0)


# ---------------------------------------------------------------------- latency page (background)
def latency_head(graph: ExecutionGraph, task, params: LogGPS, levels: tuple[float, ...]) -> dict:
    """``T``, λ at ``params`` and the x% L and G tolerances (a few graph passes)."""
    task.report(None, "predicting T(L0)")
    pred = predict(graph, params)
    task.report(0.3, "finding the x% tolerances")
    tol = tolerance(graph, params, levels)
    return {"predict": pred, "tolerance": tol}


def critical_search(
    graph: ExecutionGraph, task, params: LogGPS, lo: float, hi: float, exhaustive: bool
) -> dict:
    """The critical latencies in [lo, hi] (LLAMP Alg. 2, exact), within the automatic
    evaluation budget of :func:`llamp.lp.critical.evaluation_budget` unless ``exhaustive``.
    Progress is what the search reports after each wave (the share of the λ_L jump over the
    range already resolved); a search without that hook is stopped by the task's interrupt."""
    from llamp.lp.critical import evaluation_budget

    budget = None if exhaustive else evaluation_budget(graph, params)
    kwargs: dict = {"max_evaluations": budget}
    if "progress" in inspect.signature(critical_latencies).parameters:

        def progress(done: float, *wave: int) -> None:
            """``(share of the λ jump resolved, waves, evaluations, open intervals)`` after each
            wave (lp/critical.py), or the evaluations done so far."""
            if wave:
                waves, calls, pending = wave
                task.report(done, f"{calls:,} evaluations in {waves:,} waves, {pending:,} open")
            elif budget:
                task.report(done / budget, f"{done:,} evaluations of at most {budget:,}")
            else:
                task.report(None, f"{done:,} evaluations")

        kwargs["progress"] = progress
    task.report(0.0, "searching")
    return {"critical": critical_latencies(graph, params, lo, hi, **kwargs)}


def exact_curve(crit: CriticalLatencies, params: LogGPS) -> pd.DataFrame:
    """``T``, ``λ_L`` (right derivative) and ``ρ_L`` at every end of the exact segments of
    ``crit``: ``T`` is linear and ``λ_L`` constant between two consecutive rows, so this is
    ``T(L)`` over the whole range with no further evaluation (across an interval the search
    left unresolved, the straight line is an upper bound: ``T`` is convex)."""
    L = [s.start for s in crit.segments] + [u.start for u in crit.unresolved]
    T = [s.runtime_start_ns for s in crit.segments] + [u.runtime_start_ns for u in crit.unresolved]
    lam = [s.slope for s in crit.segments] + [u.slope_start for u in crit.unresolved]
    if crit.segments:
        last = max(crit.segments, key=lambda s: s.end)
        L.append(last.end)
        T.append(last.runtime_end_ns)
        lam.append(last.slope)
    frame = pd.DataFrame({"L_ns": L, "runtime_ns": T, "lambda_L": lam}).sort_values("L_ns")
    frame = frame.drop_duplicates("L_ns", keep="first").reset_index(drop=True)
    runtime = frame["runtime_ns"].to_numpy(float)
    frame["rho_L"] = np.divide(
        frame["L_ns"].to_numpy(float) * frame["lambda_L"].to_numpy(float),
        runtime,
        out=np.zeros(len(frame)),
        where=runtime > 0,
    )
    return frame


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


def breakpoints(crit: CriticalLatencies, min_jump: float) -> tuple[pd.DataFrame, bool]:
    """The critical latencies that matter, ranked by the jump of λ_L
    (``CriticalLatencies.significant(min_jump)``), and whether that ranking was available;
    without it, every exact breakpoint, ranked the same way."""
    significant = getattr(crit, "significant", None)
    if callable(significant):
        rows = [
            (b.at, b.lo, b.hi, b.slope_before, b.slope_after, b.jump, b.relative_jump, b.merged)
            for b in significant(min_jump=min_jump)
        ]
        merged = True
    else:
        starts = np.array([s.start for s in crit.segments], float)
        slopes = np.array([s.slope for s in crit.segments], float)
        rows = []
        for x in crit.critical:
            right = int(np.clip(np.searchsorted(starts, x, side="right") - 1, 0, len(starts) - 1))
            before, after = float(slopes[max(right - 1, 0)]), float(slopes[right])
            jump = after - before
            rows.append((x, x, x, before, after, jump, jump / max(before, 1.0), 1))
        rows.sort(key=lambda r: -r[5])
        merged = False
    frame = pd.DataFrame(rows, columns=list(BREAKPOINT_COLUMNS[1:]))
    frame.insert(0, "rank", np.arange(1, len(frame) + 1))
    return frame, merged


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


@st.cache_resource(max_entries=16, show_spinner=False)
def topology_of(source: TopologySource) -> Topology:
    """The topology of a spec (:func:`parse_topology`) or of an uploaded graph file
    (:func:`read_topology`, format by suffix), built once: a graph file's routes between all
    compute nodes are computed when it is read."""
    if isinstance(source, str):
        return parse_topology(source)
    topo = _staged(source, read_topology)
    topo.name = source[0]  # its spec becomes graph:<file name>
    return topo


def rank_mapping(
    topology: Topology, num_ranks: int, ranks_per_node: int, mapping: Upload | None
) -> RankMapping:
    """Dense (``ranks_per_node`` consecutive ranks per node, paper §IV-2) or an uploaded
    mapping file (one node index or name per line, rank 0 first)."""
    if mapping is None:
        return dense_mapping(num_ranks, ranks_per_node)
    read = _staged(mapping, lambda path: read_mapping(path, num_ranks, topology.node_names()))
    return RankMapping(read.node_of_rank, mapping[0])


@st.cache_data(max_entries=64, show_spinner=False)
def topology_analysis(
    run: str,
    _graph: ExecutionGraph,
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
        _graph,
        params_of(params),
        topo,
        rank_mapping(topo, _graph.num_ranks, ranks_per_node, mapping),
        latencies_of(latencies, topo),
        levels,
    )


@st.cache_data(max_entries=64, show_spinner=False)
def topology_sweep(
    run: str,
    _graph: ExecutionGraph,
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
    topology, under this rank mapping (one exact forward sweep per value)."""
    topo = topology_of(source)
    p = params_of(params)
    lat = latencies_of(latencies, topo)
    mapping_ = rank_mapping(topo, _graph.num_ranks, ranks_per_node, mapping)
    model = topology_model(_graph, topo, mapping_, p, lat)
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
    walk = ShiftWalk(_graph, p, model)
    T0 = walk.at(variable, 0.0)[0]
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


def pair_costs(num_ranks: int, params: LogGPS, source: CostSource) -> PairCosts:
    """Per-pair ``L_ij``, ``G_ij`` of ``source`` for ``num_ranks`` ranks."""
    kind = source[0]
    if kind == "uniform":
        return PairCosts(
            np.full((num_ranks, num_ranks), float(params.L)),
            np.full((num_ranks, num_ranks), float(params.G)),
            f"uniform (L={params.L:g} ns, G={params.G:g} ns/B)",
        )
    if kind == "two-level":
        _, ranks_per_node, intra, inter = source
        return two_level(dense_mapping(num_ranks, ranks_per_node).node_of_rank, intra, inter)
    if kind == "topology":
        _, topo_source, ranks_per_node, latencies = source
        topo = topology_of(topo_source)
        return from_topology(
            topo, dense_mapping(num_ranks, ranks_per_node), params, latencies_of(latencies, topo)
        )
    raise InputError(f"unknown source of L_ij, G_ij: {kind!r}")


@st.cache_data(max_entries=32, show_spinner=False)
def pair_sensitivity_at(
    run: str, _graph: ExecutionGraph, params: ParamKey, source: CostSource
) -> PairSensitivity:
    """``T`` and the directed ``λ_L^{ij}``, ``λ_G^{ij}`` under the costs of ``source``."""
    p = params_of(params)
    return pair_sensitivity(_graph, p, pair_costs(_graph.num_ranks, p, source))


#: A machine for rank placement (App. J): ``("two-level", nodes, ranks per node, intra Level,
#: inter Level, host names)`` or ``("topology", TopologySource, nodes, ranks per node,
#: LatencyKey, host names)``; no host names: node0, node1, …
MachineSpec = tuple
#: Heuristic settings: (time budget s, most swaps, candidates per iteration, start, seed).
PlacementBudget = tuple[float, int, int, str, int]


@st.cache_data(max_entries=16, show_spinner=False)
def machine_of(params: ParamKey, spec: MachineSpec) -> Machine:
    """The :class:`~llamp.lp.placement.Machine` of ``spec`` (node-to-node L and G)."""
    kind = spec[0]
    if kind == "two-level":
        _, nodes, ranks_per_node, intra, inter, hosts = spec
        return two_level_machine(nodes, ranks_per_node, intra, inter, hostnames=list(hosts) or None)
    if kind == "topology":
        _, source, nodes, ranks_per_node, latencies, hosts = spec
        topo = topology_of(source)
        return topology_machine(
            topo,
            nodes,
            ranks_per_node,
            params_of(params),
            latencies_of(latencies, topo),
            hostnames=list(hosts) or None,
        )
    raise InputError(f"unknown machine kind {kind!r}")


def _placement_key(run: str, params: ParamKey, machine: MachineSpec, budget: PlacementBudget):
    return (run, params, machine, budget)


def stored_placement(
    run: str, params: ParamKey, machine: MachineSpec, budget: PlacementBudget
) -> Placement | None:
    """The placement already computed in this session for these inputs, if any."""
    memo = st.session_state.get("_placement_memo", {})
    return memo.get(_placement_key(run, params, machine, budget))


def placement_in(
    task, graph: ExecutionGraph, params: ParamKey, machine: MachineSpec, budget: PlacementBudget
) -> Placement:
    """Algorithm 3 (App. J) against the block, round-robin and volume baselines in a background
    task (:mod:`llamp.ui.tasks`): the fraction done is the larger of swaps / most swaps and
    elapsed / time budget; Cancel stops it after the current swap."""
    budget_s, max_swaps, candidates, start, seed = budget
    task.report(0.0, "evaluating the baselines (block, round-robin, volume)")
    began = time.perf_counter()

    def progress(iteration: int, runtime_ns: float) -> None:
        done = max(iteration / max(max_swaps, 1), (time.perf_counter() - began) / budget_s)
        task.report(min(done, 0.99), f"swap {iteration} accepted: T = {format_ns(runtime_ns)}")

    return place(
        graph,
        params_of(params),
        machine_of(params, machine),
        budget_s=budget_s,
        max_iterations=max_swaps,
        candidates=candidates,
        start=start,
        seed=seed,
        progress=progress,
    )


def remember_placement(
    run: str, params: ParamKey, machine: MachineSpec, budget: PlacementBudget, result: Placement
) -> None:
    """Keep a placement computed in the background for this session (:func:`stored_placement`)."""
    memo = st.session_state.setdefault("_placement_memo", {})
    memo[_placement_key(run, params, machine, budget)] = result
    while len(memo) > 8:  # the oldest first (dicts keep insertion order)
        memo.pop(next(iter(memo)))


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


@st.cache_resource(max_entries=4, show_spinner=False)
def trace_at(path: str, lenient: bool):
    """The trace (:class:`~llamp.ingest.events.Trace`) at ``path``, read once."""
    from llamp.ingest import read_trace

    return read_trace(path, lenient=lenient)


#: A collective variant: (label, ((op, algorithm), …)).
VariantKey = tuple[str, tuple[tuple[str, str], ...]]


def _variants(variants: tuple[VariantKey, ...]) -> list[Variant]:
    return [Variant(label, pairs) for label, pairs in variants]


#: Collective what-ifs kept per server (the graphs are large: the few latest) …
WHATIF_KEEP = 8
#: … and at most this many expanded vertices in their graphs (~350 B each with the lowering:
#: about 5 GB).
WHATIF_VERTICES = 15_000_000


#: Computed what-ifs by key, oldest first, for every session of this server. Not an
#: ``st.cache_*`` of the functions below: those report progress to the page while they run
#: (which a cached function may not) and run in background tasks too.
_WHATIFS: dict[tuple, object] = {}
_WHATIFS_LOCK = threading.Lock()


def _remembered(key: tuple, compute: Callable[[], object]):
    with _WHATIFS_LOCK:
        if key in _WHATIFS:
            return _WHATIFS[key]
    value = compute()
    with _WHATIFS_LOCK:
        _WHATIFS[key] = value
        heavy = _vertices(value) > 0  # a new comparison: older graphs make room for it
        while len(_WHATIFS) > 1 and (
            len(_WHATIFS) > WHATIF_KEEP
            or (heavy and sum(map(_vertices, _WHATIFS.values())) > WHATIF_VERTICES)
        ):
            _WHATIFS.pop(next(iter(_WHATIFS)), None)
    return value


def _vertices(value: object) -> int:
    if isinstance(value, CollectiveComparison):
        return sum(g.num_vertices for g in value.graphs.values())
    return 0


def collective_comparison(
    path: str,
    lenient: bool,
    variants: tuple[VariantKey, ...],
    params: ParamKey,
    levels: tuple[float, ...],
    progress: whatif.ProgressHook | None = None,
) -> CollectiveComparison:
    """:func:`llamp.lp.collectives_whatif.compare_collectives` of the trace at ``path`` at
    ``params`` (LLAMP Fig. 10), computed once per server (the graphs are only read)."""
    return _remembered(
        ("comparison", path, lenient, variants, params, levels),
        lambda: compare_collectives(
            trace_at(path, lenient),
            _variants(variants),
            params_of(params),
            [params[0]],
            tolerances=levels,
            lenient=lenient,
            progress=progress or False,
        ),
    )


def variant_curves(
    path: str,
    lenient: bool,
    variants: tuple[VariantKey, ...],
    params: ParamKey,
    levels: tuple[float, ...],
    lo: float,
    hi: float,
    seconds: float | None,
    progress: whatif.ProgressHook | None = None,
) -> dict[str, whatif.VariantCurve]:
    """:func:`llamp.lp.collectives_whatif.variant_curves` of :func:`collective_comparison`
    (kept regardless of ``seconds``: a budget only decides how much of the same exact curve is
    resolved)."""
    return _remembered(
        ("curves", path, lenient, variants, params, levels, lo, hi),
        lambda: whatif.variant_curves(
            collective_comparison(path, lenient, variants, params, levels),
            lo,
            hi,
            seconds=seconds,
            progress=progress,
        ),
    )


@st.cache_data(max_entries=16, show_spinner=False)
def collective_instances(path: str, lenient: bool) -> pd.DataFrame:
    """:func:`llamp.lp.collectives_whatif.collective_instances` of the trace at ``path``."""
    return whatif.collective_instances(trace_at(path, lenient))


@st.cache_data(max_entries=16, show_spinner=False)
def collective_costs(
    path: str, lenient: bool, variants: tuple[VariantKey, ...], params: ParamKey
) -> pd.DataFrame:
    """:func:`llamp.lp.collectives_whatif.collective_costs` of the trace at ``path``."""
    instances = collective_instances(path, lenient)
    return whatif.collective_costs(instances, _variants(variants), params_of(params))


@st.cache_data(max_entries=16, show_spinner=False)
def engine_throughput(run: str, _graph: ExecutionGraph, params: ParamKey) -> float:
    """:func:`llamp.lp.collectives_whatif.measure_throughput` on the stored run."""
    return whatif.measure_throughput(_graph, params_of(params))


@st.cache_data(max_entries=32, show_spinner=False)
def whatif_estimate(
    path: str,
    lenient: bool,
    variants: tuple[VariantKey, ...],
    levels: int,
    eval_ns_per_vertex: float | None,
) -> whatif.WhatifEstimate:
    """:func:`llamp.lp.collectives_whatif.estimate_whatif` of the trace at ``path`` (without
    curves: their budget is what the comparison leaves of the target)."""
    return whatif.estimate_whatif(
        trace_at(path, lenient),
        _variants(variants),
        levels=levels,
        eval_ns_per_vertex=eval_ns_per_vertex,
    )


#: Tong et al.'s thresholds: (compute share, bound share, sensitive share, insensitive change,
#: decrease factor, span), as :class:`llamp.lp.classify.Thresholds` takes them.
ThresholdKey = tuple[float, float, float, float, float, int]
#: A target network: (name, bandwidth Gb/s, latency ns, source).
NetworkKey = tuple[str, float, float, str]


@st.cache_data(max_entries=32, show_spinner=False)
def classification(
    run: str,
    _graph: ExecutionGraph,
    network: NetworkKey,
    params: ParamKey,
    thresholds: ThresholdKey,
) -> Classification:
    """Tong et al.'s class (C1–C5) on ``network``; ``params`` gives ``o`` and ``S`` (its L and G
    are replaced by each configuration's)."""
    return classify(
        _graph, Network(*network), params=params_of(params), thresholds=Thresholds(*thresholds)
    )


def _variability_key(run: str, params: ParamKey, spec, levels, sensitivity: bool):
    return (run, params, spec, levels, sensitivity)


def stored_variability(
    run: str, params: ParamKey, spec, levels: tuple[float, ...], sensitivity: bool
) -> Variability | None:
    """The Monte Carlo already run in this session for these inputs, if any."""
    memo = st.session_state.get("_variability_memo", {})
    return memo.get(_variability_key(run, params, spec, levels, sensitivity))


def remember_variability(
    run: str, params: ParamKey, spec, levels: tuple[float, ...], sensitivity: bool, result
) -> None:
    """Keep a Monte Carlo run in the background for this session (:func:`stored_variability`)."""
    memo = st.session_state.setdefault("_variability_memo", {})
    memo[_variability_key(run, params, spec, levels, sensitivity)] = result
    while len(memo) > 8:
        memo.pop(next(iter(memo)))


def variability_in(
    task,
    graph: ExecutionGraph,
    params: ParamKey,
    spec,
    levels: tuple[float, ...],
    sensitivity: bool,
) -> Variability:
    """:func:`llamp.lp.variability.monte_carlo` in a background task (:mod:`llamp.ui.tasks`).

    The task's fraction is the share of samples done, reported after each batch of samples on
    the task's own thread (so the time left is extrapolated from real progress), and Cancel
    stops the run there: the report raises, the batches not started are dropped. The result
    is the one ``monte_carlo`` returns for ``spec``, sample for sample.
    """
    threads = max(1, min(len(os.sched_getaffinity(0)), -(-spec.samples // 16)))
    text = f"sampling {spec.samples:,} runs on {threads} thread{'s' if threads > 1 else ''}"
    task.report(0.0, text)
    return monte_carlo(
        graph,
        params_of(params),
        spec,
        tolerances=levels,
        sensitivity=sensitivity,
        on_samples=lambda done: task.report(done / spec.samples, text),
    )


def tolerance_levels(text: str) -> tuple[float, ...]:
    """``"1, 2, 5"`` (percent) → ``(0.01, 0.02, 0.05)``, sorted and without repeats."""
    try:
        values = sorted({float(v) / 100.0 for v in text.replace("%", "").split(",") if v.strip()})
    except ValueError as err:
        raise InputError(f"tolerance levels: cannot read {text!r} (percents, e.g. 1,2,5)") from err
    if not values or values[0] <= 0:
        raise InputError("tolerance levels must be positive percents, e.g. 1,2,5")
    return tuple(values)


# ---------------------------------------------------------------------- joint tolerance regions
@dataclass(frozen=True, eq=False)
class RegionMap:
    """Joint tolerance regions over two of L, G, o and ``T`` on a grid over their box."""

    region: Region
    us: np.ndarray
    vs: np.ndarray
    runtime_ns: np.ndarray  # (len(vs), len(us))


@st.cache_resource(max_entries=16, show_spinner=False)
def region_map(
    run: str,
    _graph: ExecutionGraph,
    params: ParamKey,
    axes: tuple[str, str],
    levels: tuple[float, ...],
    box: tuple[tuple[str, float], ...],
    cells: int,
) -> RegionMap:
    """Exact regions ``T ≤ (1+x)·T0`` (:func:`llamp.lp.region.tolerance_region`) and ``T`` on a
    ``cells × cells`` grid of their box (one batched sweep per group of cells)."""
    region = tolerance_region(_graph, params_of(params), x=levels, axes=axes, box=dict(box))
    us = np.linspace(0.0, region.box[0], cells)
    vs = np.linspace(0.0, region.box[1], cells)
    return RegionMap(region, us, vs, region.plane.runtime_grid(us, vs))


@st.cache_resource(max_entries=16, show_spinner=False)
def region_preview_map(
    run: str,
    _graph: ExecutionGraph,
    params: ParamKey,
    axes: tuple[str, str],
    levels: tuple[float, ...],
    box: tuple[tuple[str, float], ...],
    cells: int,
) -> RegionPreview:
    """``T`` on the region's box in seconds (:func:`llamp.lp.region.region_preview`), shown
    while the exact polygons of :func:`region_map` are computed."""
    return region_preview(
        _graph, params_of(params), x=levels, axes=axes, box=dict(box), cells=cells
    )


@st.cache_resource(max_entries=8, show_spinner=False)
def region_plane(
    run: str, _graph: ExecutionGraph, params: ParamKey, axes: tuple[str, str]
) -> Plane:
    """``T`` over two of L, G, o (:class:`llamp.lp.region.Plane`): what a region read back from
    the store (:mod:`llamp.ui.stored`, without its plane) needs to evaluate designs."""
    return Plane.of_parameters(_graph, params_of(params), axes)


def with_plane(rmap: RegionMap, plane: Plane) -> RegionMap:
    """``rmap`` whose region evaluates ``T`` through ``plane``."""
    return dataclasses.replace(rmap, region=dataclasses.replace(rmap.region, plane=plane))
