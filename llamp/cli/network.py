"""Network what-ifs: ``llamp topology``, ``llamp gpu-machine``, ``llamp place-groups``,
``llamp matrix``, ``llamp place`` (LLAMP App. H–J).

``topology`` compares topologies on one graph (λ and x% tolerance per link class);
``gpu-machine`` does the same for a GPU machine's NVLink and network, ``place-groups`` for
each placement of a training run's parallel groups onto its nodes;
``matrix`` prints the pairwise sensitivity matrices under per-pair ``L_ij``, ``G_ij``;
``place`` runs the rank-placement heuristic and writes a rankfile/machinefile/hostfile.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import click
import numpy as np

from llamp.cli.base import (
    RegistryChoice,
    analysis_settings,
    cli,
    emit_json,
    graph_argument,
    json_option,
    latency_options,
    levels_option,
    params_options,
    progress_bar,
    settings_options,
    table,
)
from llamp.config import format_ns, format_percent
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp.registry import ANALYSES, Inputs, PlaceGroupsSettings
from llamp.lp.registry import levels as parse_levels
from llamp.params import LogGPS


def _order_line(params: LogGPS) -> str:
    """What order a pairwise analysis evaluates: under the schedule order the pass at the
    uniform parameters; every pair's latency and gap is then evaluated on that one order."""
    if params.order != "schedule":
        return params.model_text()
    return (
        f"{params.model_text()}: the order of the schedule at the uniform L = "
        f"{format_ns(params.L)}, G = {params.G:g} ns/B, for every pair"
    )


def _ns(value: float) -> str:
    return "∞" if math.isinf(value) else format_ns(value)


def _shift(value: float) -> str:
    return "+∞" if math.isinf(value) else f"+{format_ns(value)}"


# ---------------------------------------------------------------------- topology
@cli.command()
@graph_argument
@click.argument("specs", nargs=-1, metavar="[--compare] SPEC...")
@click.option(
    "--compare", is_flag=True, help="Compare the topologies SPEC… (the default with several)."
)
@click.option(
    "--mapping",
    "mapping_file",
    default=None,
    help="Node of every rank, one node index or name per line (default: dense).",
)
@settings_options("topology", "ranks_per_node")
@latency_options
@params_options
@json_option
@settings_options("topology", "levels")
@analysis_settings("topology")
def topology(
    graph: ExecutionGraph,
    graph_spec: str,
    specs,
    compare,
    mapping_file,
    latencies,
    params: LogGPS,
    as_json: bool,
    settings,
) -> None:
    """T, λ and x% tolerance per link class on each topology SPEC (LLAMP §IV-2, App. H).

    SPEC: fattree:k=16[,tiers=2], dragonfly:g=8,a=4,p=8, torus:dims=4x4x4[,p=1], or a graph
    file (.graphml, .gml, edge list). A message between nodes costs Σ wires·l_class +
    h·d_switch (h = switches traversed); --L is not used, --o/--G/--S are.
    """
    inputs = Inputs(params, topology=tuple(specs), mapping=mapping_file, latencies=latencies)
    x = settings.levels
    with _bar(len(specs), "topologies") as bar:

        def report(fraction: float | None, spec: str) -> None:
            bar.update(round((fraction or 0.0) * len(specs)) - bar.n)

        result = ANALYSES["topology"].run(graph, replace(inputs, report=report), settings)
    if as_json:
        emit_json(result.as_dict())
        return
    click.echo(_order_line(params))
    for analysis in result.analyses:
        click.echo(
            f"{analysis.topology}: T = {format_ns(analysis.runtime_ns)}, mapping {analysis.mapping}, "
            f"{analysis.nodes_used}/{analysis.num_nodes} nodes, mean switches per inter-node "
            f"message {analysis.mean_switches:.3g}, intra-node messages "
            f"{analysis.intra_node_fraction:.1%}"
        )
        tol = analysis.tolerances
        rows = []
        for var in analysis.variables.to_dict(orient="records"):
            mine = tol[tol.variable == var["variable"]]
            if math.isnan(var["value_ns"]):  # l_wire over classes of different latencies
                value, share = "mixed", "—"
                cells = [_shift(v) for v in mine["headroom_ns"]]
            else:
                value, share = format_ns(var["value_ns"]), f"{var['lambda_share']:.2%}"
                cells = [_ns(v) for v in mine["tolerance_ns"]]
            rows.append((var["variable"], value, f"{var['lambda']:g}", share, *cells))
        headers = (
            "variable",
            "value",
            "λ",
            "value·λ/T",
            *(f"{format_percent(v)} tolerance" for v in x),
        )
        click.echo(table(rows, headers))
        click.echo("")


# ---------------------------------------------------------------------- GPU machine
@cli.command("gpu-machine")
@graph_argument
@click.argument("spec", default="", metavar="[SPEC]")
@params_options
@json_option
@levels_option()
def gpu_machine_cmd(
    graph: ExecutionGraph, graph_spec: str, spec: str, params: LogGPS, as_json: bool, levels: str
) -> None:
    """T, λ and x% tolerance per link class (NVLink, network) of a GPU machine.

    SPEC: gpus=8,nvlink=500ns:0.0022ns/B,net=3us:0.02ns/B,nics=8[,affinity=0:0:1:1:…]
    [,layout=tp:dp:pp], every part optional (defaults: an H100 node, one 400 Gb/s NIC per GPU).
    Ranks are GPUs, placed densely or by the layout of their parallel groups (llamp
    place-groups); --L and --G are not used (the machine's are), --o and --S are.
    """
    from llamp.lp.gpu_machine import GpuMachine, analyze_gpu_machine

    machine = GpuMachine.parse(spec)
    x = parse_levels(levels, "--x")
    result = analyze_gpu_machine(graph, params, machine, x)
    if as_json:
        emit_json(result.as_dict())
        return
    click.echo(
        f"{result.machine}: T = {format_ns(result.runtime_ns)}, intra-node messages "
        f"{result.intra_node_fraction:.1%}"
    )
    tol = result.tolerances
    rows = []
    for var in result.variables.to_dict(orient="records"):
        ns = var["unit"] == "ns"
        show = (lambda v: _ns(v)) if ns else (lambda v: "∞" if math.isinf(v) else f"{v:.6g} ns/B")
        mine = tol[tol.variable == var["variable"]]
        rows.append(
            (
                var["variable"],
                show(var["value"]),
                f"{var['lambda']:g}",
                f"{var['lambda_share']:.2%}",
                *(show(v) for v in mine["tolerance"]),
            )
        )
    headers = (
        "variable",
        "value",
        "λ",
        "value·λ/T",
        *(f"{format_percent(v)} tolerance" for v in x),
    )
    click.echo(table(rows, headers))


# ---------------------------------------------------------------------- parallel groups
@cli.command("place-groups")
@graph_argument
@click.argument("spec", default="", metavar="[SPEC]")
@settings_options("place-groups")
@params_options
@json_option
@analysis_settings("place-groups")
def place_groups_cmd(
    graph: ExecutionGraph,
    graph_spec: str,
    spec: str,
    params: LogGPS,
    as_json: bool,
    settings: PlaceGroupsSettings,
) -> None:
    """T, λ and x% tolerance per link class when the run's parallel groups are placed onto
    the nodes of a GPU machine in different orders.

    The parallel dimensions (tp, dp, pp, …) are the trace's process groups (Chakra pg_name),
    grouped by name; an order lists them innermost first, so its first dimension's groups fill
    a node's GPUs first. The trace's own rank order is evaluated too ("as traced"). SPEC is a
    GPU machine as for llamp gpu-machine; --L and --G are not used, --o and --S are.
    """
    entry = ANALYSES["place-groups"]
    inputs = Inputs(params, gpu_machine=spec)
    bar, report = progress_bar()
    with bar:
        result = entry.run(graph, replace(inputs, report=report), settings)
    if as_json:
        emit_json(entry.payload(result, settings, inputs))
        return
    x = settings.levels
    dims = result.dimensions.to_dict(orient="records")
    click.echo(_order_line(params))
    click.echo(
        f"{result.machine}; parallel dimensions: "
        + (
            ", ".join(f"{d['dimension']} {d['size']} ({d['groups']} groups)" for d in dims)
            or "none"
        )
    )
    if result.traced_layout:
        click.echo(f"the trace's rank order is the layout {' = '.join(result.traced_layout)}")
    for family, reason in result.skipped.items():
        click.echo(f"not a dimension: {family}: {reason}")
    rows = [
        (
            r["mapping"],
            format_ns(r["runtime_ns"]),
            f"{r['vs_traced']:+.2%}",
            r["inter_node_bytes"],
            *(f"{r[d['dimension'] + '_groups_in_one_node']:.0%}" for d in dims),
        )
        for r in result.mappings.to_dict(orient="records")
    ]
    headers = (
        "placement",
        "T",
        "vs as traced",
        "inter-node bytes",
        *(f"{d['dimension']} groups in a node" for d in dims),
    )
    click.echo(table(rows, headers))
    click.echo("")
    tol = result.tolerances
    rows = []
    for var in result.variables.to_dict(orient="records"):
        ns = var["unit"] == "ns"
        show = (lambda v: _ns(v)) if ns else (lambda v: "∞" if math.isinf(v) else f"{v:.6g} ns/B")
        mine = tol[(tol.mapping == var["mapping"]) & (tol.variable == var["variable"])]
        rows.append(
            (
                var["mapping"],
                var["variable"],
                show(var["value"]),
                f"{var['lambda']:g}",
                f"{var['lambda_share']:.2%}",
                *(show(v) for v in mine["tolerance"]),
            )
        )
    headers = (
        "placement",
        "variable",
        "value",
        "λ",
        "value·λ/T",
        *(f"{format_percent(v)} tolerance" for v in x),
    )
    click.echo(table(rows, headers))
    click.echo(f"\nfastest: {result.best}")


# ---------------------------------------------------------------------- matrix
@cli.command()
@graph_argument
@settings_options("matrix")
@click.option(
    "--pairs",
    default=None,
    metavar="FILE.csv",
    help="CSV: rows i,j,L_ns[,G_ns_per_byte] with a header, or a P×P matrix of L (ns).",
)
@click.option("--pairs-gap", default=None, metavar="FILE.csv", help="P×P matrix of G (ns/B).")
@click.option(
    "--topology",
    "topology_spec",
    default=None,
    metavar="SPEC",
    help="L_ij from a topology (fattree:k=16, dragonfly:…, torus:…, graph file).",
)
@click.option(
    "--mapping", "mapping_file", default=None, help="Node of every rank (with --topology)."
)
@latency_options
@params_options
@json_option
@click.option("--top", default=10, show_default=True, help="Rank pairs to list.")
@click.option("-o", "--output", default=None, help="Write the pair table as CSV.")
@click.option(
    "--check-lp",
    is_flag=True,
    help="Also solve the per-pair LP (App. I) and compare its reduced costs.",
)
@analysis_settings("matrix")
def matrix(
    graph,
    graph_spec,
    settings,
    pairs,
    pairs_gap,
    topology_spec,
    mapping_file,
    latencies,
    params,
    as_json,
    top,
    output,
    check_lp,
) -> None:
    """Pairwise sensitivities λ_L^{ij}, λ_G^{ij} under per-pair L_ij, G_ij (LLAMP App. I).

    Directed: λ_L^{ij} counts latency terms of messages from rank i to rank j on the critical
    path (rendezvous: 3), λ_G^{ij} their bytes − 1. Without a source, L and G are uniform.
    """
    from llamp.lp.matrix import pair_lp, pair_sensitivity, read_pair_costs, write_pairs_csv
    from llamp.lp.registry import pair_costs

    chosen = [
        name
        for name, v in (
            ("--intra/--inter", settings.intra or settings.inter),
            ("--pairs", pairs),
            ("--topology", topology_spec),
        )
        if v
    ]
    if len(chosen) > 1:
        raise InputError(f"choose one source of L_ij, G_ij: {' or '.join(chosen)}")
    inputs = Inputs(params, topology=topology_spec, mapping=mapping_file, latencies=latencies)
    if pairs:
        costs = read_pair_costs(pairs, graph.num_ranks, params, gap_path=pairs_gap)
    else:
        costs = pair_costs(graph, inputs, settings)
    result = pair_sensitivity(graph, params, costs)
    payload = result.as_dict()
    check = None
    if check_lp:
        lp = pair_lp(graph, params, costs)
        check = {
            "runtime_ns": lp.runtime_ns,
            "lambda_L_equal": bool(np.array_equal(lp.lambda_L, result.lambda_L)),
            "lambda_G_equal": bool(np.array_equal(lp.lambda_G, result.lambda_G)),
            "variables": lp.num_variables,
            "constraints": lp.num_constraints,
        }
        payload["lp_check"] = check
    if output:
        payload["output"] = str(write_pairs_csv(result, output))
    if as_json:
        emit_json(payload)
        return
    click.echo(_order_line(params))
    click.echo(
        f"{costs.source}: T = {format_ns(result.runtime_ns)}, λ_L = "
        f"{result.lambda_L.sum():g}, λ_G = {result.lambda_G.sum():g}"
    )
    frame = result.frame().head(top)
    rows = [
        (
            r.src,
            r.dst,
            format_ns(r.latency_ns),
            f"{r.gap_ns_per_byte:g}",
            f"{r.lambda_L:g}",
            f"{r.lambda_G:g}",
            r.messages,
            r.bytes,
            f"{r.latency_share:.2%}",
        )
        for r in frame.itertuples(index=False)
    ]
    click.echo(
        table(
            rows,
            (
                "i",
                "j",
                "L_ij",
                "G_ij ns/B",
                "λ_L^ij",
                "λ_G^ij",
                "messages",
                "bytes",
                "L_ij·λ_L^ij/T",
            ),
        )
    )
    if check is not None:
        same = check["lambda_L_equal"] and check["lambda_G_equal"]
        click.echo(
            f"LP (per-pair l_ij, g_ij): T = {format_ns(check['runtime_ns'])}, reduced costs "
            f"{'equal' if same else 'differ (T is not differentiable in every pair here)'}"
        )
    if output:
        click.echo(f"wrote {output}")


# ---------------------------------------------------------------------- place
def _mapping_formats() -> tuple[str, ...]:
    """Rank-mapping file formats (:data:`llamp.lp.placement.FORMATS`)."""
    from llamp.lp.placement import FORMATS

    return FORMATS


@cli.command()
@graph_argument
@click.option(
    "--topology",
    "topology_spec",
    default=None,
    metavar="SPEC",
    help="Machine from a topology (its first --nodes nodes).",
)
@settings_options("place", "intra", "inter", "nodes", "ranks_per_node")
@click.option(
    "--hosts",
    "hosts_file",
    default=None,
    help="Host names of the nodes, one per line (default node0, node1, …).",
)
@settings_options("place", "budget_s", "max_swaps", "candidates")
@click.option(
    "--initial",
    "initial_file",
    default=None,
    help="Start from this mapping (a file in --format, host names as in --hosts).",
)
@settings_options("place", "start", "seed")
@click.option("-o", "--output", default=None, help="Write the best mapping to this file.")
@click.option(
    "--format",
    "fmt",
    type=RegistryChoice(_mapping_formats),
    default="openmpi",
    show_default=True,
    help="openmpi rankfile, mpich (Hydra) machinefile, slurm SLURM_HOSTFILE.",
)
@click.option(
    "--mapping",
    "which",
    default="best",
    show_default=True,
    help="Mapping to write: best, llamp, block, round-robin, volume, a layout of a training "
    "run (tp,dp,pp; llamp place-groups) (random, given: the start).",
)
@latency_options
@params_options
@json_option
@analysis_settings("place")
def place(
    graph,
    graph_spec,
    topology_spec,
    hosts_file,
    initial_file,
    output,
    fmt,
    which,
    latencies,
    params,
    as_json,
    settings,
) -> None:
    """Rank placement by sensitivity-driven swaps (LLAMP App. J, Algorithm 3) vs block,
    round-robin and a communication-volume partitioner; predicted T for each."""
    from llamp.lp.placement import format_mapping, read_mapping_file, write_mapping
    from llamp.lp.registry import machine

    num_nodes = settings.nodes or -(-graph.num_ranks // settings.ranks_per_node)
    hostnames = None
    if hosts_file:
        path = Path(hosts_file)
        if not path.is_file():
            raise InputError(f"{path}: no such hosts file")
        hostnames = [ln.split("#", 1)[0].strip() for ln in path.read_text().splitlines()]
        hostnames = [h for h in hostnames if h]
        if len(hostnames) < num_nodes:
            raise InputError(f"{path}: {len(hostnames)} host names for {num_nodes} nodes")
        hostnames = tuple(hostnames[:num_nodes])
    inputs = Inputs(params, topology=topology_spec, latencies=latencies, hostnames=hostnames)
    machine_ = machine(graph.num_ranks, inputs, settings)
    start = None
    if initial_file:
        start = read_mapping_file(initial_file, machine_.hostnames, fmt, graph.num_ranks)
    bar, report = progress_bar()
    with bar:
        result = ANALYSES["place"].run(graph, replace(inputs, report=report), settings, start=start)
    chosen = result.best if which == "best" else which
    if chosen not in result.node_of_rank:
        raise InputError(
            f"--mapping: no mapping {which!r} in this run (best, {', '.join(result.node_of_rank)})"
        )
    payload = result.as_dict()
    payload["written"] = chosen
    if output:
        write_mapping(result.node_of_rank[chosen], machine_.hostnames, output, fmt)
        payload["output"] = output
        payload["format"] = fmt
    if as_json:
        emit_json(payload)
        return
    click.echo(_order_line(params))
    click.echo(
        f"{machine_.description}, {machine_.ranks_per_node} ranks per node; heuristic: "
        f"{len(result.history) - 1} swaps, stopped: {result.stop_reason} "
        f"({result.elapsed_s:.2f} s)"
    )
    rows = [
        (
            r.mapping,
            format_ns(r.runtime_ns),
            f"{r.vs_block:+.2%}",
            r.inter_node_messages,
            r.inter_node_bytes,
        )
        for r in result.mappings.itertuples(index=False)
    ]
    click.echo(
        table(
            rows, ("mapping", "predicted T", "vs block", "inter-node messages", "inter-node bytes")
        )
    )
    if output:
        click.echo(f"wrote {chosen} mapping to {output} ({fmt})")
    else:
        click.echo(f"\n{chosen} mapping ({fmt}):")
        click.echo(format_mapping(result.node_of_rank[chosen], machine_.hostnames, fmt), nl=False)


def _bar(total: int | None, unit: str):
    """A progress bar on stderr (hidden when stderr is not a terminal)."""
    from tqdm import tqdm

    return tqdm(total=total, unit=f" {unit}", leave=False, disable=None, file=None)
