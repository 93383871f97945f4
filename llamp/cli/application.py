"""Application what-ifs: ``llamp collectives``, ``llamp classify``, ``llamp mc``.

``collectives`` re-expands one trace with different collective algorithms and compares them
(LLAMP §IV, Fig. 10); ``classify`` labels the application for a target network (Tong et al.
2016, rules C1–C5); ``mc`` is a Monte Carlo over compute noise and slow ranks (Cornebize &
Legrand 2022).
"""

from __future__ import annotations

import math

import click
import numpy as np

from llamp.cli.base import (
    RegistryChoice,
    analysis_settings,
    cli,
    emit_json,
    graph_argument,
    host_speed_option,
    json_option,
    levels_option,
    message,
    params_options,
    progress_bar,
    settings_options,
    table,
)
from llamp.config import format_ns, parse_duration_ns, parse_gap_ns_per_byte, parse_range
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp.registry import ANALYSES, Inputs
from llamp.lp.registry import levels as parse_levels
from llamp.params import LogGPS


def _ns(value: float) -> str:
    return "∞" if math.isinf(value) else format_ns(value)


# ---------------------------------------------------------------------- collectives
@cli.command()
@click.argument("trace", metavar="TRACE")
@click.argument("variants", nargs=-1, metavar="[--compare] VARIANT...")
@click.option(
    "--compare",
    is_flag=True,
    help="Compare the VARIANTs side by side (the default with several).",
)
@params_options
@json_option
@click.option("--from", "lo", default="0", show_default=True, help="First L of the sweep.")
@click.option("--to", "hi", default="100us", show_default=True, help="Last L of the sweep.")
@click.option("--points", default=11, show_default=True, type=click.IntRange(2, 100000))
@levels_option()
@click.option("--lenient", is_flag=True, help="Turn per-line trace problems into warnings.")
@host_speed_option
def collectives(
    trace, variants, compare, params: LogGPS, as_json, lo, hi, points, levels, lenient, host_speed
) -> None:
    """T(L), λ_L, ρ_L and x% tolerance of TRACE under collective-algorithm VARIANTs.

    TRACE is a trace directory (liballprof): it is read once and re-expanded per VARIANT.
    A VARIANT is OP=ALG[,OP=ALG…] (e.g. allreduce=ring) or 'default'; the first one is the
    baseline of the differences. ALG may also be an analytic model that charges each instance
    one cost once all members entered it instead of expanding it into messages: dimemas
    (Girona et al. Table 3), thakur_gropp (MPICH's algorithm) or thakur_gropp:ALGORITHM.
    Example: llamp collectives TRACE --compare allreduce=recursive_doubling allreduce=ring
    allreduce=dimemas allreduce=thakur_gropp:ring
    """
    from llamp.ingest.collectives import ALGORITHMS
    from llamp.lp.collectives_whatif import compare_collectives

    if not variants:
        known = "; ".join(f"{op}: {', '.join(algs)}" for op, algs in ALGORITHMS.items())
        raise InputError(
            f"give at least one variant OP=ALG (or 'default'); algorithms: {known}; analytic "
            "models for any op: dimemas, thakur_gropp[:ALG]"
        )
    a, b = parse_range("L", lo, hi)
    result = compare_collectives(
        trace,
        list(variants),
        params,
        np.linspace(a, b, points),
        levels=parse_levels(levels, "--x"),
        lenient=lenient,
        progress=not as_json,
        host_speed=host_speed,
    )
    if as_json:
        emit_json(result.as_dict())
        return
    x = parse_levels(levels, "--x")
    summary = result.summary
    rows = []
    for r in summary.to_dict(orient="records"):
        rows.append(
            (
                r["variant"],
                r["messages"],
                f"{r['messages_vs_first']:+d}",
                format_ns(r["runtime_ns"]),
                f"{r['runtime_vs_first']:+.4%}",
                f"{r['lambda_L']:g}",
                f"{r['rho_L']:.3%}",
                *(_ns(r[f"tolerance_{v * 100:g}pct_L_ns"]) for v in x),
            )
        )
    click.echo(
        f"L = {format_ns(params.L)}, o = {format_ns(params.o)}, G = {params.G:g} ns/B, "
        f"S = {params.S} B; {params.model_text()}"
    )
    click.echo(
        table(
            rows,
            (
                "variant",
                "messages",
                "Δ",
                "T",
                "ΔT",
                "λ_L",
                "ρ_L",
                *(f"{v * 100:g}% tol. L" for v in x),
            ),
        )
    )
    click.echo("\nsweep of L:")
    labels = [v.label for v in result.variants]
    sweep = result.sweep
    rows = []
    for L in sorted(set(sweep["L_ns"].tolist())):
        cells = [format_ns(L)]
        at_L = sweep[sweep["L_ns"] == L].set_index("variant")
        for label in labels:
            cells += [
                format_ns(at_L.loc[label, "runtime_ns"]),
                f"{at_L.loc[label, 'lambda_L']:g}",
                f"{at_L.loc[label, 'rho_L']:.3%}",
            ]
        rows.append(tuple(cells))
    headers = ["L"]
    for k in range(len(labels)):
        headers += [f"T[{k + 1}]", f"λ_L[{k + 1}]", f"ρ_L[{k + 1}]"]
    click.echo(table(rows, tuple(headers)))
    click.echo("  ".join(f"[{k + 1}] {label}" for k, label in enumerate(labels)))
    for note in result.notes:
        click.echo(f"note: {note}")


# ---------------------------------------------------------------------- classify
def _target_networks() -> tuple[str, ...]:
    """The built-in target networks (:data:`llamp.lp.classify.NETWORKS`)."""
    from llamp.lp.classify import NETWORKS

    return tuple(NETWORKS)


@cli.command()
@graph_argument
@json_option
@click.option(
    "--target",
    "network_name",
    type=RegistryChoice(_target_networks, case_sensitive=False),
    default=None,
    help="Target network, one of the built-in ones (Tong et al. 2016, Table I).",
)
@click.option(
    "--network",
    "deprecated_network",
    default=None,
    hidden=True,
    help="Deprecated spelling of --target (elsewhere --network is a calibrated profile).",
)
@click.option("--bandwidth", default=None, help="Custom network bandwidth (e.g. 25Gb/s, or Gb/s).")
@click.option("--latency", default=None, help="Custom network latency (e.g. 2us).")
@click.option(
    "--o",
    "o",
    default="0",
    show_default=True,
    help="CPU overhead o per message (the paper's Hockney model has none).",
)
@click.option("--S", "S", default=None, help="Rendezvous threshold S in bytes (default 256KiB).")
@settings_options("classify")
@analysis_settings("classify")
def classify(
    graph: ExecutionGraph,
    graph_spec: str,
    as_json,
    network_name,
    deprecated_network,
    bandwidth,
    latency,
    o,
    S,
    settings,
) -> None:
    """Computation-, load-imbalance-, bandwidth-, latency- or communication-bound on a network.

    Evaluates the bandwidth, latency and combined seven-point sets around the network (Tong et
    al. 2016, §III-G), splits every rank's time into computation, overhead, wait, latency and
    bandwidth, and applies rules C1–C5 with the thresholds given.
    """
    from llamp.lp.classify import Network, network

    if deprecated_network is not None:
        message(
            "warning",
            "classify --network is deprecated: use --target (--network names a calibrated "
            "profile in every other command)",
        )
        if network_name is not None:
            raise InputError("give --target only (--network is its deprecated spelling)")
        network_name = deprecated_network
    if network_name and (bandwidth or latency):
        raise InputError("give either --target or --bandwidth/--latency, not both")
    if network_name:
        net = network(network_name)
    elif bandwidth and latency:
        gap = parse_gap_ns_per_byte(bandwidth if "/" in bandwidth else f"{bandwidth}Gb/s")
        net = Network(
            "custom",
            8.0 / gap,
            parse_duration_ns(latency, default_unit="us"),
            "given on the command line",
        )
    else:
        raise InputError(
            f"choose a target network: --target NAME ({', '.join(_target_networks())}) or "
            "--bandwidth BW --latency L"
        )
    base = LogGPS.parse(o=o, S=S)
    entry = ANALYSES["classify"]
    inputs = Inputs(base, network=net)
    result = entry.run(graph, inputs, settings)
    if as_json:
        emit_json(entry.payload(result, settings, inputs))
        return
    click.echo(
        f"{graph.name} on {net.name} ({net.bandwidth_gbps:g} Gb/s, {format_ns(net.latency_ns)}; "
        f"o = {format_ns(base.o)}, S = {base.S} B): {result.label.upper()}"
        + (f" ({result.rule})" if result.rule else "")
    )
    click.echo(f"  because {result.reason}")
    click.echo("")
    rows = [
        (
            r["set"],
            f"×{r['speedup']:g}",
            f"{r['bandwidth_gbps']:g}",
            format_ns(r["L_ns"]),
            format_ns(r["runtime_ns"]),
            f"{r['compute_share']:.1%}",
            f"{r['overhead_share']:.1%}",
            f"{r['wait_share']:.1%}",
            f"{r['latency_share']:.1%}",
            f"{r['bandwidth_share']:.1%}",
        )
        for r in result.configs.to_dict(orient="records")
    ]
    click.echo(
        table(
            rows,
            (
                "set",
                "speed",
                "Gb/s",
                "L",
                "T",
                "compute",
                "overhead",
                "wait",
                "latency",
                "bandwidth",
            ),
        )
    )
    click.echo("")
    rows = [
        (r["rule"], r["label"], "yes" if r["holds"] else "no", r["reason"])
        for r in result.rules.to_dict(orient="records")
    ]
    click.echo(table(rows, ("rule", "label", "holds", "because")))


# ---------------------------------------------------------------------- mc
def _quantity(column: str):
    """Display name and formatter of a Monte Carlo quantity column."""
    if column == "runtime_ns":
        return "T", _ns
    if column == "lambda_L":
        return "λ_L", lambda v: f"{v:g}"
    if column == "rho_L":
        return "ρ_L", lambda v: f"{v:.3%}"
    level = column.removeprefix("tolerance_").removesuffix("pct_L_ns")
    return f"{level}% L tolerance", _ns


@cli.command()
@graph_argument
@params_options
@json_option
@settings_options("mc")
@click.option(
    "--samples-csv",
    default=None,
    type=click.Path(dir_okay=False),
    help="Also write one row per sample to this CSV file.",
)
@analysis_settings("mc")
def mc(
    graph: ExecutionGraph,
    graph_spec: str,
    params: LogGPS,
    as_json,
    samples_csv,
    settings,
) -> None:
    """Monte Carlo of T, λ_L, ρ_L and x% latency tolerance under compute variability.

    Every calc of rank r costs cost·spatial[r]·temporal[calc]·slowdown[r] in a sample, with
    independent factors of mean 1 (Cornebize & Legrand 2022: spatial and temporal variability,
    slow nodes). Seeded: the same seed gives the same samples.
    """
    entry = ANALYSES["mc"]
    bar, report = progress_bar(show=not as_json)
    with bar:
        result = entry.run(graph, Inputs(params, report=report), settings)
    if samples_csv:
        result.samples.to_csv(samples_csv, index=False)
    if as_json:
        emit_json(entry.payload(result, settings, Inputs(params)))
        return
    s = settings
    click.echo(
        f"{graph.name}: {s.samples} samples, spatial CV {s.spatial_cv:g}, temporal CV {s.temporal_cv:g} "
        f"({s.distribution})"
        + (
            f", ranks {','.join(map(str, s.slow_ranks))} slowed ×{s.slowdown:g}"
            if s.slow_ranks
            else ""
        )
        + f", seed {s.seed}; {result.seconds['total']:.2f} s"
    )
    click.echo(
        f"{params.model_text()}: "
        + (
            "each sample re-scheduled at its own costs"
            if params.order == "schedule"
            else "one event graph for every sample"
        )
    )
    rows = []
    for r in result.summary.to_dict(orient="records"):
        name, fmt = _quantity(r["quantity"])
        sd = "—" if math.isnan(r["sd"]) else fmt(r["sd"])
        rows.append(
            (
                name,
                fmt(r["baseline"]),
                fmt(r["mean"]),
                sd,
                fmt(r["p5"]),
                fmt(r["p50"]),
                fmt(r["p95"]),
            )
        )
    click.echo(table(rows, ("quantity", "no noise", "mean", "sd", "P5", "P50", "P95")))
