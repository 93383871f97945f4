"""Analysis subcommands: predict, sweep, critical, tolerance, region, path, report.

GRAPH is an ``.npz`` graph, a ``.goal`` file, a trace directory, or the name of a stored run.
``--ranks``/``--window`` restrict the analysis to a subgraph; ``--save`` writes the result
back to the graph store when GRAPH is a stored run.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from typing import Any

import click
import numpy as np

from llamp import config
from llamp.cli.base import (
    cli,
    collectives_option,
    emit_json,
    engine_option,
    host_speed_option,
    json_option,
    latency_options,
    levels_option,
    load_graph_spec,
    message,
    params_options,
    parse_collectives,
    refuse_host_speed_for_run,
    table,
)
from llamp.config import (
    format_ns,
    format_percent,
    parse_duration_ns,
    parse_percents,
    parse_range,
)
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.params import LogGPS


def _parse_ranks(text: str, num_ranks: int) -> np.ndarray:
    """``"0-7,12"`` → sorted unique rank ids, checked against the graph."""
    ranks: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                a, b = (int(x) for x in part.split("-", 1))
                ranks.update(range(a, b + 1))
            else:
                ranks.add(int(part))
        except ValueError as err:
            raise InputError(f"--ranks: cannot read {part!r} (expected e.g. 0-7,12)") from err
    bad = [r for r in ranks if not 0 <= r < num_ranks]
    if bad:
        raise InputError(f"--ranks: rank {bad[0]} is outside 0..{num_ranks - 1}")
    return np.array(sorted(ranks), dtype=np.int32)


def _parse_window(text: str) -> tuple[float, float]:
    """``"10ms:20ms"`` → (1e7, 2e7) ns; either end may be empty."""
    if ":" not in text:
        raise InputError(f"--window: {text!r} is not FROM:TO (e.g. 10ms:20ms)")
    a, b = text.split(":", 1)
    lo = parse_duration_ns(a) if a.strip() else 0.0
    hi = parse_duration_ns(b) if b.strip() else float("inf")
    if hi <= lo:
        raise InputError(f"--window: the end {b!r} must be after the start {a!r}")
    return lo, hi


def select(graph: ExecutionGraph, ranks: str | None, window: str | None) -> ExecutionGraph:
    """The subgraph of ``ranks`` and trace-time ``window`` (``None`` keeps everything)."""
    if not ranks and not window:
        return graph
    keep = np.ones(graph.num_vertices, dtype=bool)
    parts = []
    if ranks:
        keep &= np.isin(graph.rank, _parse_ranks(ranks, graph.num_ranks))
        parts.append(f"ranks {ranks}")
    if window:
        if graph.t_trace_ns is None:
            raise InputError("--window needs trace timestamps, and this graph has none (GOAL?)")
        lo, hi = _parse_window(window)
        keep &= (graph.t_trace_ns >= lo) & (graph.t_trace_ns < hi)
        parts.append(f"window {window}")
    if not keep.any():
        raise InputError(f"the selection ({', '.join(parts)}) contains no vertex")
    return graph.subgraph(keep, name=f"{graph.name}[{'; '.join(parts)}]")


def _load(
    ctx: click.Context,
    spec: str,
    collectives: str | None,
    ranks,
    window,
    iterations,
    host_speed: str | None = None,
):
    """A file or directory is read and cut in memory; a stored run is cut by the store's
    Cypher catalogue (the same subgraph semantics, tested equal)."""
    from pathlib import Path

    if Path(spec).exists():
        if iterations:
            raise InputError(
                "--iterations selects by collective calls of a stored run; ingest it with --name"
            )
        graph = load_graph_spec(
            spec, collectives=parse_collectives(collectives), host_speed=host_speed
        )
        return select(graph, ranks, window)
    if host_speed is not None:
        refuse_host_speed_for_run(spec)
    if collectives:
        raise InputError(
            f"--collectives re-expands a trace; {spec!r} is a stored run (re-ingest it)"
        )
    from llamp.graphdb import open_store

    with open_store(ctx.obj.get("store_uri"), read_only=True) as store:
        if not store.has_run(spec):
            raise InputError(f"{spec}: no such file, directory or stored run")
        if not (ranks or window or iterations):
            return store.load_run(spec)
        info = store.run_info(spec)
        kwargs: dict[str, Any] = {}
        if ranks:
            kwargs["ranks"] = _parse_ranks(ranks, info.ranks).tolist()
        if window:
            kwargs["trace_window_ns"] = _parse_window(window)
        if iterations:
            a, _, b = iterations.partition(":")
            try:
                kwargs["collectives"] = (int(a), int(b) if b.strip() else None)
            except ValueError as err:
                raise InputError(
                    f"--iterations: {iterations!r} is not K:M (collective calls)"
                ) from err
        return store.select(spec, **kwargs)


def graph_argument(func):
    """GRAPH plus --collectives, --host-speed, --ranks, --window, --iterations; the command
    receives ``graph``."""

    @functools.wraps(func)
    def wrapper(
        graph_spec: str, collectives: str | None, host_speed, ranks, window, iterations, **kw
    ):
        graph = _load(
            click.get_current_context(),
            graph_spec,
            collectives,
            ranks,
            window,
            iterations,
            host_speed,
        )
        return func(graph=graph, graph_spec=graph_spec, **kw)

    wrapper = click.option(
        "--iterations",
        default=None,
        help="Stored runs: from the K-th to before the M-th collective call (K:M, M optional).",
    )(wrapper)
    wrapper = click.option(
        "--window", default=None, help="Trace-time window FROM:TO, e.g. 10ms:20ms."
    )(wrapper)
    wrapper = click.option("--ranks", default=None, help="Analyse only these ranks, e.g. 0-7,12.")(
        wrapper
    )
    wrapper = host_speed_option(wrapper)
    wrapper = collectives_option(wrapper)
    return click.argument("graph_spec", metavar="GRAPH")(wrapper)


def _save_option(func):
    return click.option(
        "--save",
        is_flag=True,
        help="Write the result back to the graph store (GRAPH must be a stored run).",
    )(func)


def _write_back(
    graph_spec: str,
    kind: str,
    params: LogGPS,
    scalars: dict[str, Any],
    per_vertex=None,
    graph: ExecutionGraph | None = None,
) -> str:
    from llamp.graphdb import open_store

    if per_vertex is not None and graph is not None and "parent" in graph.meta:
        raise InputError(
            "--save stores per-op results of the whole run; run it without --ranks/--window/--iterations"
        )

    ctx = click.get_current_context()
    with open_store(ctx.obj.get("store_uri")) as store:
        if not store.has_run(graph_spec):
            raise InputError(f"--save: {graph_spec!r} is not a stored run (ingest it with --name)")
        return store.write_analysis(
            graph_spec, kind, params.as_dict(), scalars, per_vertex=per_vertex
        )


# ---------------------------------------------------------------------- predict
@cli.command()
@graph_argument
@params_options
@engine_option
@json_option
@_save_option
def predict(
    graph: ExecutionGraph, graph_spec: str, params: LogGPS, engine: str, as_json: bool, save: bool
) -> None:
    """Runtime T and sensitivities λ_L, λ_G, λ_o, ρ_L at one configuration."""
    from llamp.lp import evaluate
    from llamp.lp import predict as run_predict

    choice = _engine_choice(engine, graph)
    result = run_predict(graph, params, engine=engine)
    payload = result.as_dict() | {"engine_note": choice.note}
    if save:
        ev = evaluate(graph, params)
        import pandas as pd

        per_vertex = pd.DataFrame(
            {
                "vid": np.arange(graph.num_vertices),
                "start_ns": ev.start_ns,
                "slack_ns": ev.slack_ns,
                "critical": ev.critical,
            }
        )
        payload["analysis_id"] = _write_back(
            graph_spec, "predict", params, result.as_dict(), per_vertex, graph
        )
    if as_json:
        emit_json(payload)
        return
    rows = [
        ("T", format_ns(result.runtime_ns)),
        ("λ_L (messages on the critical path)", f"{result.lambda_L:g}"),
        ("λ_G (bytes on the critical path)", f"{result.lambda_G:g}"),
        ("λ_o (overheads on the critical path)", f"{result.lambda_o:g}"),
        ("ρ_L = L·λ_L/T", f"{result.rho_L:.4%}"),
        ("engine", result.engine),
    ]
    click.echo(_params_line(params))
    click.echo(table(rows, ("quantity", "value")))
    _echo_note(choice)


def _engine_choice(engine: str, graph: ExecutionGraph):
    """The engine of an analysis and its note (``llamp.lp.predict.choose_engine``)."""
    from llamp.lp.predict import choose_engine

    return choose_engine(engine, graph)


def _echo_note(choice) -> None:
    if choice.note:
        click.echo(f"note: {choice.note}")


def _params_line(params: LogGPS) -> str:
    return (
        f"L = {format_ns(params.L)}, o = {format_ns(params.o)}, G = {params.G:g} ns/B, "
        f"S = {params.S} B"
    )


# ---------------------------------------------------------------------- sweep
@cli.command()
@graph_argument
@params_options
@engine_option
@json_option
@click.option(
    "--param", "parameter", type=click.Choice(["L", "G", "o"]), default="L", show_default=True
)
@click.option(
    "--from", "lo", default="0", show_default=True, help="First value (L/o: 0us; G: ns/B)."
)
@click.option("--to", "hi", default="100us", show_default=True, help="Last value.")
@click.option("--points", default=11, show_default=True, type=click.IntRange(2, 100000))
@click.option(
    "--reschedule",
    is_flag=True,
    help="With --order schedule: take each point's resource order from its own schedule pass "
    "(T is then the schedule's at every point) instead of the one at the given parameters; "
    "each point says whether its order changed.",
)
def sweep(
    graph, graph_spec, params, engine, as_json, parameter, lo, hi, points, reschedule
) -> None:
    """T, λ and ρ_L over evenly spaced values of L (or G, o)."""
    from llamp.lp.predict import sweep_rows

    a, b = parse_range(parameter, lo, hi)
    choice = _engine_choice(engine, graph)
    points_ = sweep_rows(
        graph,
        params,
        np.linspace(a, b, points),
        parameter=parameter,
        engine=engine,
        reschedule=reschedule,
    )
    if as_json:
        emit_json({"parameter": parameter, "points": points_, "engine_note": choice.note})
        return
    col = next(iter(points_[0]))
    rows = [
        (
            config.format_value(parameter, r[col]),
            format_ns(r["runtime_ns"]),
            f"{r['lambda_L']:g}",
            f"{r['lambda_G']:g}",
            f"{r['rho_L']:.3%}",
            *(["yes" if r["order_changed"] else "no"] if reschedule else []),
        )
        for r in points_
    ]
    header = (parameter, "T", "λ_L", "λ_G", "ρ_L", *(["order changed"] if reschedule else []))
    click.echo(table(rows, header))
    if params.order == "schedule" and not reschedule:
        click.echo(
            f"order: the schedule at {parameter} = {config.format_value(parameter, getattr(params, parameter))} "
            "for every point (--reschedule: each point's own)"
        )
    click.echo(f"engine: {choice.engine}")
    _echo_note(choice)


def _budget_option(default: str):
    return click.option(
        "--max-evaluations",
        "budget",
        default=default,
        show_default=True,
        metavar="N|auto|all",
        help="Budget of T evaluations for the critical-value search: all (exact, however "
        "long), auto (one to two minutes on a 2-core machine) or a number. Intervals left "
        "unresolved are listed.",
    )


def parse_budget(text: str, graph: ExecutionGraph, params: LogGPS) -> int | None:
    """:func:`llamp.config.parse_budget`, with ``auto`` resolved for ``graph`` by
    :func:`llamp.lp.critical.evaluation_budget`."""
    budget = config.parse_budget(text)
    if budget == "auto":
        from llamp.lp.critical import evaluation_budget

        return evaluation_budget(graph, params)
    return budget


# ---------------------------------------------------------------------- critical
@cli.command()
@graph_argument
@params_options
@engine_option
@json_option
@click.option(
    "--param", "parameter", type=click.Choice(["L", "G", "o"]), default="L", show_default=True
)
@click.option("--from", "lo", default="0", show_default=True)
@click.option("--to", "hi", default="100us", show_default=True)
@_budget_option("all")
@click.option(
    "--min-jump",
    "min_jump",
    default=None,
    metavar="PERCENT",
    help="Show the breakpoints that matter: merge runs of critical values whose λ steps are "
    "below PERCENT of λ, rank by the jump of λ (e.g. 1%). The JSON adds them as significant; "
    "the full exact list stays. With a budget, intervals that may hold such a jump are "
    "refined first (default 1%).",
)
def critical(
    graph, graph_spec, params, engine, as_json, parameter, lo, hi, budget, min_jump
) -> None:
    """Every critical latency in [FROM, TO] and λ_L on each linear piece (exact)."""
    from llamp.config import parse_percent
    from llamp.lp.critical import MIN_JUMP

    a, b = parse_range(parameter, lo, hi)
    jump = None if min_jump is None else parse_percent(min_jump, what="--min-jump")
    choice = _engine_choice(engine, graph)
    result = _search_critical(
        graph,
        params,
        a,
        b,
        parameter=parameter,
        engine=engine,
        max_evaluations=parse_budget(budget, graph, params),
        min_jump=MIN_JUMP if jump is None else jump,
        show_progress=not as_json,
    )
    order = _order_check(graph, params, parameter, [a, *result.critical, b])
    if as_json:
        payload = result.as_dict() | {"engine_note": choice.note}
        if jump is not None:
            unit, slope = result.units()
            payload["min_jump"] = jump
            payload["significant"] = [p.as_dict(unit, slope) for p in result.significant(jump)]
        if order is not None:
            payload["schedule_order"] = order
        emit_json(payload)
        return
    _print_critical(result, jump)
    if order is not None:
        shown = ", ".join(config.format_value(parameter, v) for v in order["differs_at"])
        click.echo(
            f"order: the schedule at {parameter} = "
            f"{config.format_value(parameter, order['baseline'])}; re-scheduled at the range "
            f"ends and critical values ({len(order['checked'])}), it differs at: "
            f"{shown or 'none'}"
        )
    _echo_note(choice)


def _order_check(graph, params, parameter: str, values: list[float]) -> dict | None:
    """Under the schedule order: where (among ``values``) the network's own order is not the
    baseline's (:func:`llamp.lp.schedule.order_changes`)."""
    if params.order != "schedule":
        return None
    from llamp.lp.schedule import order_changes

    checked, differs = order_changes(graph, params, parameter, values)
    return {
        "baseline": float(getattr(params, parameter)),
        "checked": checked,
        "differs_at": differs,
    }


def _search_critical(graph, params, a, b, *, show_progress: bool = False, **options):
    """:func:`llamp.lp.critical_latencies` with a progress bar on a terminal (share of the
    λ jump between the ends resolved, or of the budget spent if more; waves, evaluations)."""
    from tqdm import tqdm

    from llamp.lp import critical_latencies

    with tqdm(total=100, unit="%", leave=False, disable=None if show_progress else True) as bar:
        budget = options.get("max_evaluations")

        def progress(done: float, waves: int, evaluations: int, open_: int) -> None:
            if budget:  # the budget ends the search before the λ jump is resolved
                done = max(done, evaluations / budget)
            bar.update(round(100 * done) - bar.n)
            bar.set_postfix_str(f"{waves} waves, {evaluations} evaluations, {open_} open")

        return critical_latencies(graph, params, a, b, progress=progress, **options)


def _print_critical(result, min_jump: float | None = None) -> None:
    fmt = format_ns if result.parameter in ("L", "o") else (lambda v: f"{v:g} ns/B")
    found = "" if result.complete else " found"
    name = f"λ_{result.parameter}"
    click.echo(
        f"{len(result.critical)} critical value(s) of {result.parameter}{found} in "
        f"[{fmt(result.lo)}, {fmt(result.hi)}] ({result.evaluations} evaluations in "
        f"{result.waves} waves, {result.engine})"
    )
    if not result.complete:
        width = sum(u.end - u.start for u in result.unresolved)
        click.echo(
            f"incomplete: the budget of {result.max_evaluations} evaluations ran out with "
            f"{len(result.unresolved)} interval(s) unresolved ({fmt(width)} of the range), each "
            f"holding at least one more critical value (--max-evaluations all finds them all); "
            f"together {name} jumps by {result.unresolved_jump:g} in them, and every critical "
            f"value where {name} jumps by more than {result.unresolved_bound:.3%} was found"
        )
    if min_jump is not None:
        significant = result.significant(min_jump)
        click.echo(
            f"{len(significant)} breakpoint(s) where {name} jumps by ≥ {min_jump * 100:g}% "
            f"(runs of smaller steps merged), biggest jump first; {len(result.critical)} exact "
            f"critical value(s) in all (--json lists them):"
        )
        rows = [
            (
                fmt(p.at),
                "" if p.merged == 1 else f"{fmt(p.lo)} – {fmt(p.hi)}",
                f"{p.slope_before:g} → {p.slope_after:g}",
                f"{p.jump:+g}",
                f"{p.relative_jump:+.2%}",
                p.merged,
            )
            for p in significant
        ]
        if rows:
            click.echo(table(rows, ("at", "merged range", name, "jump", "relative", "merged")))
    else:
        rows = [
            (
                fmt(s.start),
                fmt(s.end),
                f"{s.slope:g}",
                format_ns(s.runtime_start_ns),
                format_ns(s.runtime_end_ns),
            )
            for s in result.segments
        ]
        if rows:
            click.echo(table(rows, ("from", "to", name, "T(from)", "T(to)")))
    if result.unresolved:
        rows = [
            (fmt(u.start), fmt(u.end), f"{u.slope_start:g} → {u.slope_end:g}")
            for u in sorted(result.unresolved, key=lambda u: -u.jump)[:20]
        ]
        more = len(result.unresolved) - len(rows)
        click.echo(
            f"unresolved intervals (largest {name} jump first, "
            f"{len(rows)}{f' of {len(rows) + more}' if more else ''}):"
        )
        click.echo(table(rows, ("from", "to", name)))


# ---------------------------------------------------------------------- tolerance
@cli.command()
@graph_argument
@params_options
@engine_option
@json_option
@_save_option
@levels_option("1,2,5", "Degradations")
def tolerance(graph, graph_spec, params, engine, as_json, save, levels) -> None:
    """x% latency and bandwidth tolerance relative to T at the configured L, G."""
    from llamp.lp import tolerance as run_tolerance

    choice = _engine_choice(engine, graph)
    result = run_tolerance(graph, params, parse_levels(levels), engine=engine)
    payload = result.as_dict() | {"engine_note": choice.note}
    if save:
        scalars = {"baseline_ns": result.baseline_ns}
        for t in result.latency:
            scalars[f"latency_{t.x:g}_ns"] = t.value
        for t in result.bandwidth:
            scalars[f"G_{t.x:g}_ns_per_byte"] = t.value
        payload["analysis_id"] = _write_back(graph_spec, "tolerance", params, scalars)
    if as_json:
        emit_json(payload)
        return
    _print_tolerance(result)
    _echo_note(choice)


def parse_levels(text: str) -> list[float]:
    """``--x``: percentages (:func:`llamp.config.parse_percents`) as sorted fractions."""
    return list(parse_percents(text, what="--x"))


def _print_tolerance(result) -> None:
    click.echo(f"baseline T = {format_ns(result.baseline_ns)} ({result.engine})")
    rows = []
    for lat, bw in zip(
        result.latency, result.bandwidth or [None] * len(result.latency), strict=True
    ):
        rows.append(
            (
                format_percent(lat.x),
                format_ns(lat.bound_ns),
                format_ns(lat.value),
                "—"
                if bw is None
                else ("∞" if bw.value == float("inf") else f"{bw.value:.6g} ns/B"),
            )
        )
    click.echo(table(rows, ("x", "T bound", "max L", "max G")))


# ---------------------------------------------------------------------- region
def _region_variables(
    graph, params, topology_spec, mapping_file, ranks_per_node, intra, inter, latencies
):
    """``None`` (L, G, o) or the link variables of a topology or a two-level machine."""
    from llamp.lp.region import topology_variables, two_level_variables

    if topology_spec and (intra or inter):
        raise InputError("choose one machine: --topology SPEC or --intra L,G --inter L,G")
    if intra or inter:
        if not (intra and inter):
            raise InputError("--intra and --inter go together (each L,G, e.g. 300ns,0.05ns/B)")
        from llamp.lp.matrix import parse_level
        from llamp.lp.topology import dense_mapping

        node = dense_mapping(graph.num_ranks, ranks_per_node).node_of_rank
        return two_level_variables(
            graph, node, parse_level(intra, "--intra"), parse_level(inter, "--inter")
        )
    if topology_spec:
        from llamp.lp.topology import dense_mapping, parse_topology, read_mapping

        topo = parse_topology(topology_spec)
        mapping = (
            read_mapping(mapping_file, graph.num_ranks, topo.node_names())
            if mapping_file
            else dense_mapping(graph.num_ranks, ranks_per_node)
        )
        return topology_variables(graph, params, topo, mapping, latencies)
    if mapping_file:
        raise InputError("--mapping goes with --topology")
    return None


def _default_axes(variables) -> str:
    if variables is None:
        return "L,G"
    names = variables.model.names
    if "L_intra" in names:
        return "L_intra,L_inter"
    classes = [n for n in names if n not in ("l_wire", "d_switch", "l_intra_node", "G")]
    return f"{classes[-1]},G"


def _designs(region, texts, networks: bool) -> dict[str, tuple[float, float]]:
    """``--design NAME=U,V`` points, plus the built-in networks and saved profiles."""
    designs: dict[str, tuple[float, float]] = {}
    names = [a.name for a in region.axes]
    if networks:
        from llamp.injector.profiles import list_profiles
        from llamp.lp.region import network_designs

        designs.update(
            network_designs(
                region.params,
                (names[0], names[1]),
                [(prof.name, prof.params) for prof in list_profiles()],
            )
        )
    if texts:
        from llamp.lp.region import parse_design

        designs.update(parse_design(text, region.axes) for text in texts)
    return designs


@cli.command()
@graph_argument
@params_options
@json_option
@levels_option("1,2,5", "Degradations")
@click.option(
    "--axes",
    default=None,
    metavar="U,V",
    help="The two variables: L,G (default), L,o or G,o; with --topology its link classes, "
    "l_wire, d_switch, l_intra_node or G (default: the last class and G); with --intra/--inter "
    "L_intra, L_inter, G_intra, G_inter (default: L_intra,L_inter).",
)
@click.option("--L-max", "L_max", default=None, help="Box: largest L (default: automatic).")
@click.option("--G-max", "G_max", default=None, help="Box: largest G (ns/B or a bandwidth).")
@click.option("--o-max", "o_max", default=None, help="Box: largest o.")
@click.option(
    "--max",
    "maxima",
    multiple=True,
    metavar="VAR=VALUE",
    help="Box: largest value of a link variable (e.g. core=2us); repeatable.",
)
@click.option(
    "--topology",
    "topology_spec",
    default=None,
    metavar="SPEC",
    help="Link-class variables of a topology (fattree:k=16, dragonfly:…, torus:…, graph file).",
)
@click.option("--mapping", "mapping_file", default=None, help="Node of every rank (--topology).")
@click.option(
    "--ranks-per-node",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="Dense mapping: consecutive ranks per node (--topology, --intra/--inter).",
)
@click.option("--intra", default=None, metavar="L,G", help="Two-level machine: same-node L,G.")
@click.option("--inter", default=None, metavar="L,G", help="Two-level machine: inter-node L,G.")
@latency_options
@click.option(
    "--design",
    "design_texts",
    multiple=True,
    metavar="NAME=U,V",
    help="A network design to mark inside/outside each region (e.g. cheap=3.4us,0.009ns/B).",
)
@click.option(
    "--networks",
    is_flag=True,
    help="Also mark the built-in networks (1GbE … NDR) and the saved network profiles.",
)
@click.option(
    "--max-evaluations",
    "budget",
    default="all",
    show_default=True,
    metavar="N|all",
    help="Stop after N evaluations of T (vertices not verified by then are flagged).",
)
def region(
    graph,
    graph_spec,
    params,
    as_json,
    levels,
    axes,
    L_max,
    G_max,
    o_max,
    maxima,
    topology_spec,
    mapping_file,
    ranks_per_node,
    intra,
    inter,
    latencies,
    design_texts,
    networks,
    budget,
) -> None:
    """Exact joint tolerance regions: every (U, V) with T ≤ (1+x)·T0, as polygons.

    T is a maximum of affine functions of any two variables, so each region is a convex
    polygon; its vertices are verified by evaluations and each edge lies on one critical
    path's T = bound (λ of that path listed) or on the box (U, V ≥ 0 up to the box maxima).
    """
    from tqdm import tqdm

    from llamp.lp.region import parameter_axis, tolerance_region

    variables = _region_variables(
        graph, params, topology_spec, mapping_file, ranks_per_node, intra, inter, latencies
    )
    names = [a.strip() for a in (axes or _default_axes(variables)).split(",")]
    if len(names) != 2 or not all(names):
        raise InputError(f"--axes: {axes!r} is not two variables U,V (e.g. L,G)")
    axis = {}
    for name in names:
        axis[name] = parameter_axis(name, params) if variables is None else variables.axis(name)
    box: dict[str, float] = {}
    for name, text in (("L", L_max), ("G", G_max), ("o", o_max)):
        if text is not None:
            if name not in names:
                raise InputError(f"--{name}-max: {name} is not an axis (--axes {','.join(names)})")
            box[name] = axis[name].parse(text, f"--{name}-max")
    for item in maxima:
        name, sep, text = (p.strip() for p in item.partition("="))
        if not sep or name not in names:
            raise InputError(f"--max: {item!r} is not VAR=VALUE for an axis ({', '.join(names)})")
        box[name] = axis[name].parse(text, f"--max {name}")
    max_evaluations = config.parse_budget(budget)
    if max_evaluations == "auto":
        raise InputError("--max-evaluations: region takes all or a whole number, not auto")
    with tqdm(unit=" evaluations", leave=False, disable=None) as bar:
        result = tolerance_region(
            graph,
            params,
            x=parse_levels(levels),
            axes=(names[0], names[1]),
            box=box,
            variables=variables,
            max_evaluations=max_evaluations,
            progress=lambda n: bar.update(n - bar.n),
        )
    designs = _designs(result, design_texts, networks)
    frame = result.designs(designs) if designs else None
    if as_json:
        payload = result.as_dict()
        payload["designs"] = [] if frame is None else frame.to_dict(orient="records")
        emit_json(payload)
        return
    _print_region(result, frame)


def _print_region(result, frame) -> None:
    from llamp.lp.region import NS, level_key

    au, av = result.axes

    def fmt(axis, value: float) -> str:
        return format_ns(value) if axis.unit == NS else f"{value:.6g} ns/B"

    click.echo(
        f"baseline T0 = {format_ns(result.baseline_ns)} at {au.name} = {fmt(au, au.value)}, "
        f"{av.name} = {fmt(av, av.value)} ({result.source}); box {au.name} ≤ "
        f"{fmt(au, result.box[0])}, {av.name} ≤ {fmt(av, result.box[1])}; "
        f"{result.evaluations} evaluations, {result.pieces} critical paths"
    )
    if not result.complete:
        click.echo(
            "incomplete: the evaluation budget ran out; vertices marked ? are not verified "
            "(the region lies inside the polygon shown)"
        )
    for level in result.levels:
        beyond = (
            f"; reaches the box at {', '.join(n + ' max' for n in level.unbounded)}"
            if level.unbounded
            else ""
        )
        click.echo(
            f"\n{level.x * 100:g}% region: T ≤ {format_ns(level.bound_ns)}, {level.u.size} vertices{beyond}"
        )
        rows = []
        for i, edge in enumerate(level.edges):
            T = level.runtime_ns[i]
            if edge.kind == "box":
                along = f"box ({edge.side})"
            else:
                along = (
                    f"T = bound, λ_{au.name} = {edge.lambda_u:g}, λ_{av.name} = {edge.lambda_v:g}"
                )
            rows.append(
                (
                    fmt(au, level.u[i]),
                    fmt(av, level.v[i]),
                    "?" if np.isnan(T) else format_ns(T),
                    along,
                )
            )
        click.echo(table(rows, (au.name, av.name, "T", "edge to the next vertex")))
    if frame is not None:
        click.echo("\ndesigns:")
        rows = []
        for r in frame.to_dict(orient="records"):
            inside = [f"{lv.x * 100:g}%" for lv in result.levels if r[f"inside_{level_key(lv.x)}"]]
            rows.append(
                (
                    r["design"],
                    fmt(au, r[au.key]),
                    fmt(av, r[av.key]),
                    format_ns(r["runtime_ns"]),
                    f"{r['slowdown']:+.3%}",
                    ", ".join(inside) or "none",
                )
            )
        click.echo(table(rows, ("design", au.name, av.name, "T", "vs T0", "within")))


# ---------------------------------------------------------------------- path
@cli.command()
@graph_argument
@params_options
@json_option
@_save_option
@click.option("--top", default=10, show_default=True, help="Messages to list.")
def path(graph, graph_spec, params, as_json, save, top) -> None:
    """The critical path: its messages and where its time goes, per rank."""
    from llamp.lp import critical_path, evaluate

    cp = critical_path(graph, params)
    payload = cp.as_dict()
    if save:
        ev = evaluate(graph, params)
        import pandas as pd

        per_vertex = pd.DataFrame(
            {
                "vid": np.arange(graph.num_vertices),
                "start_ns": ev.start_ns,
                "slack_ns": ev.slack_ns,
                "critical": ev.critical,
            }
        )
        payload["analysis_id"] = _write_back(
            graph_spec, "path", params, cp.totals | {"runtime_ns": cp.runtime_ns}, per_vertex, graph
        )
    if as_json:
        emit_json(payload)
        return
    _print_path(graph, cp, top)


def _print_path(graph: ExecutionGraph, cp, top: int, engine: str | None = None) -> None:
    totals = cp.totals
    click.echo(
        f"critical path: T = {format_ns(cp.runtime_ns)}, {len(cp.vertices)} vertices, "
        f"{len(cp.messages)} messages" + (f" [{engine}]" if engine else "")
    )
    rows = [
        (k.removesuffix("_ns"), format_ns(v), f"{v / cp.runtime_ns:.2%}" if cp.runtime_ns else "—")
        for k, v in totals.items()
    ]
    click.echo(table(rows, ("part", "time", "share")))
    split = cp.split
    rows = [
        (
            int(r.rank),
            format_ns(r.compute_ns),
            format_ns(r.overhead_ns),
            format_ns(r.latency_ns),
            format_ns(r.bandwidth_ns),
            int(r.messages_in),
        )
        for r in split.itertuples(index=False)
        if r.compute_ns + r.overhead_ns + r.latency_ns + r.bandwidth_ns > 0
    ]
    click.echo(table(rows, ("rank", "compute", "overhead", "latency", "bandwidth", "msgs in")))
    if len(cp.messages):
        sizes = graph.size[cp.messages[:, 0]]
        order = np.argsort(-sizes, kind="stable")[:top]
        rows = [
            (
                int(graph.rank[cp.messages[i, 0]]),
                int(graph.rank[cp.messages[i, 1]]),
                int(sizes[i]),
                int(graph.tag[cp.messages[i, 0]]),
            )
            for i in order
        ]
        click.echo(f"largest {len(rows)} of {len(cp.messages)} messages on the path:")
        click.echo(table(rows, ("from", "to", "bytes", "tag")))


# ---------------------------------------------------------------------- report
def _sweep_from_segments(graph, params, crit, values: np.ndarray, engine: str):
    """The report's sweep of L: ``T`` and ``λ_L`` read from the exact segments of ``crit``
    (same range), evaluated only at the points inside unresolved intervals. Rows from the
    segments have ``source`` ``"segments"`` and no ``lambda_G``/``lambda_o`` (null)."""
    import pandas as pd

    from llamp.lp import sweep as run_sweep

    if crit.hi <= crit.lo:  # a range of zero width has no segments
        return run_sweep(graph, params, values, engine=engine).assign(source="sweep")
    inside = np.zeros(values.size, dtype=bool)
    for u in crit.unresolved:
        inside |= (values > u.start) & (values < u.end)
    known = values[~inside]
    T = crit.runtime_at(known) if known.size else np.zeros(0)
    lam = crit.slope_at(known) if known.size else np.zeros(0)
    rows = pd.DataFrame(
        {
            "L_ns": known,
            "runtime_ns": T,
            "lambda_L": lam,
            "lambda_G": None,
            "lambda_o": None,
            "rho_L": np.where(T > 0, known * lam / np.where(T > 0, T, 1.0), 0.0),
            "engine": crit.engine,
            "source": "segments",
        }
    )
    if inside.any():
        swept = run_sweep(graph, params, values[inside], engine=engine).assign(source="sweep")
        rows = pd.concat([rows, swept], ignore_index=True).sort_values("L_ns", kind="stable")
    return rows.reset_index(drop=True)


#: The stages of ``llamp report``, in order (its stage bar and its ``seconds``).
_REPORT_STAGES = ("predict", "critical", "sweep", "tolerance", "path")


@contextlib.contextmanager
def _interrupt_exits():
    """Ctrl-C ends the report at once: the one line and exit status of every llamp command
    (``llamp: error: interrupted``, 1). The tolerance and critical-latency searches run
    sweeps on worker threads; a normal exit would wait for every queued sweep (minutes at
    10^8 vertices), and the report writes nothing that needs cleaning up."""
    try:
        yield
    except KeyboardInterrupt:
        sys.stdout.flush()
        message("error", "interrupted")
        sys.stderr.flush()
        os._exit(1)


@cli.command()
@graph_argument
@params_options
@engine_option
@json_option
@click.option("--from", "lo", default="0", show_default=True, help="Sweep/critical interval start.")
@click.option("--to", "hi", default="100us", show_default=True, help="Sweep/critical interval end.")
@click.option("--points", default=11, show_default=True, type=click.IntRange(2, 100000))
@click.option(
    "--x", "levels", default="1,2,5", show_default=True, help="Tolerance levels in percent."
)
@_budget_option("auto")
def report(graph, graph_spec, params, engine, as_json, lo, hi, points, levels, budget) -> None:
    """Everything at once: summary, prediction, sweep, critical latencies, tolerance, path."""
    from llamp.lp import critical_path
    from llamp.lp import predict as run_predict
    from llamp.lp import tolerance as run_tolerance
    from llamp.lp.lowered import release_pages
    from llamp.progress import StepBar

    a, b = parse_range("L", lo, hi)
    choice = _engine_choice(engine, graph)
    timings: dict[str, float] = {}
    stages = StepBar(len(_REPORT_STAGES), "report", show=None if not as_json else False)

    def timed(name, fn):
        stages.step(name)
        start = time.perf_counter()
        out = fn()
        timings[name] = time.perf_counter() - start
        # Each stage maps what it reads; what the next one needs it maps again (page cache).
        release_pages(graph)
        return out

    with stages, _interrupt_exits():
        pred = timed("predict", lambda: run_predict(graph, params, engine=engine))
        max_evaluations = parse_budget(budget, graph, params)
        crit = timed(
            "critical",
            lambda: _search_critical(
                graph,
                params,
                a,
                b,
                engine=engine,
                max_evaluations=max_evaluations,
                show_progress=not as_json,
            ),
        )
        frame = timed(
            "sweep",
            lambda: _sweep_from_segments(graph, params, crit, np.linspace(a, b, points), engine),
        )
        tol = timed(
            "tolerance", lambda: run_tolerance(graph, params, parse_levels(levels), engine=engine)
        )
        cp = timed("path", lambda: critical_path(graph, params))
    if as_json:
        emit_json(
            {
                "graph": graph.summary().as_dict(),
                "predict": pred.as_dict(),
                "sweep": frame.to_dict(orient="records"),
                "critical": crit.as_dict(),
                "tolerance": tol.as_dict(),
                # The critical path always comes from the graph engine.
                "path": {k: v for k, v in cp.as_dict().items() if k != "vertices"}
                | {"engine": "graph"},
                "engine": choice.as_dict(),
                "seconds": timings,
            }
        )
        return
    s = graph.summary()
    click.echo(
        f"{s.name}: {s.ranks} ranks, {s.vertices} vertices ({s.calcs} calc, {s.sends} send, "
        f"{s.recvs} recv), {s.messages} messages, {s.bytes} bytes"
    )
    click.echo(_params_line(params))
    click.echo(f"engine: {choice.engine} (--engine {choice.requested}; the critical path: graph)")
    _echo_note(choice)
    click.echo("")
    click.echo(
        f"T = {format_ns(pred.runtime_ns)}   λ_L = {pred.lambda_L:g}   λ_G = {pred.lambda_G:g}   "
        f"λ_o = {pred.lambda_o:g}   ρ_L = {pred.rho_L:.3%}   [{pred.engine}]"
    )
    exact = int((frame["source"] == "segments").sum())
    click.echo(
        f"\nsweep of L [{', '.join(sorted(set(frame['engine'])))}]: {exact} of {len(frame)} "
        "point(s) read from the exact segments, the rest evaluated"
    )
    rows = [
        (format_ns(r.L_ns), format_ns(r.runtime_ns), f"{r.lambda_L:g}", f"{r.rho_L:.3%}")
        for r in frame.itertuples(index=False)
    ]
    click.echo(table(rows, ("L", "T", "λ_L", "ρ_L")))
    click.echo("")
    _print_critical(crit)
    click.echo("")
    _print_tolerance(tol)
    click.echo("")
    _print_path(graph, cp, 5, engine="graph")
    click.echo("\n" + "  ".join(f"{k} {v:.2f}s" for k, v in timings.items()))
