"""Analysis subcommands: predict, sweep, critical, tolerance, region, path, report.

GRAPH is an ``.npz`` graph, a ``.goal`` file, a trace directory, or the name of a stored run.
``--ranks``/``--window`` restrict the analysis to a subgraph; ``--save`` writes the result
back to the graph store when GRAPH is a stored run (:mod:`llamp.cli.base`). Each analysis and
its options come from :data:`llamp.lp.registry.ANALYSES`; this module prints its tables.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import replace

import click
import numpy as np

from llamp import config
from llamp.cli.base import (
    analysis_settings,
    cli,
    emit_json,
    engine_option,
    graph_argument,
    json_option,
    latency_options,
    message,
    params_options,
    progress_bar,
    save_option,
    settings_options,
    table,
    write_back,
)
from llamp.config import format_ns, format_percent
from llamp.graph import ExecutionGraph
from llamp.lp.registry import ANALYSES, Inputs
from llamp.params import LogGPS


# ---------------------------------------------------------------------- predict
@cli.command()
@graph_argument
@params_options
@engine_option
@json_option
@save_option
def predict(
    graph: ExecutionGraph, graph_spec: str, params: LogGPS, engine: str, as_json: bool, save: bool
) -> None:
    """Runtime T and sensitivities λ_L, λ_G, λ_o, ρ_L at one configuration."""
    choice = _engine_choice(engine, graph)
    result, payload = _run("predict", graph, Inputs(params, engine))
    payload["engine_note"] = choice.note
    if save:
        payload["analysis_id"] = _save("predict", graph_spec, graph, params, payload, per_op=True)
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


def _run(name: str, graph: ExecutionGraph, inputs: Inputs, settings=None):
    """The result of analysis ``name`` (:data:`llamp.lp.registry.ANALYSES`) and its JSON."""
    entry = ANALYSES[name]
    settings = entry.default_settings() if settings is None else settings
    result = entry.run(graph, inputs, settings)
    return result, entry.payload(result, settings, inputs)


def _save(
    name: str,
    graph_spec: str,
    graph: ExecutionGraph,
    params: LogGPS,
    payload: dict,
    per_op: bool = False,
) -> str:
    """``--save``: analysis ``name``'s scalars (the registry's, as a study cell stores them)
    as an Analysis node of the stored run, with each op's schedule when ``per_op``."""
    scalars = ANALYSES[name].scalars(payload)
    per_vertex = _schedule(graph, params) if per_op else None
    return write_back(graph_spec, name, params, scalars, per_vertex, graph)


def _schedule(graph: ExecutionGraph, params: LogGPS):
    """Per-vertex start, slack and critical flag: what ``--save`` stores per operation."""
    import pandas as pd

    from llamp.lp import evaluate

    ev = evaluate(graph, params)
    return pd.DataFrame(
        {
            "vid": np.arange(graph.num_vertices),
            "start_ns": ev.start_ns,
            "slack_ns": ev.slack_ns,
            "critical": ev.critical,
        }
    )


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
        f"S = {params.S} B; {params.model_text()}"
    )


# ---------------------------------------------------------------------- sweep
@cli.command()
@graph_argument
@params_options
@engine_option
@json_option
@settings_options("sweep")
@analysis_settings("sweep")
def sweep(graph, graph_spec, params, engine, as_json, settings) -> None:
    """T, λ and ρ_L over evenly spaced values of L (or G, o)."""
    choice = _engine_choice(engine, graph)
    result, payload = _run("sweep", graph, Inputs(params, engine), settings)
    if as_json:
        emit_json(payload | {"engine_note": choice.note})
        return
    parameter, points_ = result.parameter, result.points
    reschedule = settings.reschedule
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


# ---------------------------------------------------------------------- critical
@cli.command()
@graph_argument
@params_options
@engine_option
@json_option
@settings_options("critical")
@analysis_settings("critical")
def critical(graph, graph_spec, params, engine, as_json, settings) -> None:
    """Every critical latency in [FROM, TO] and λ_L on each linear piece (exact)."""
    choice = _engine_choice(engine, graph)
    bar, report = progress_bar(show=not as_json)
    with bar:
        result, payload = _run("critical", graph, Inputs(params, engine, report=report), settings)
    a, b = settings.range()
    bar, report = progress_bar(show=not as_json)
    with bar:
        report(0.0, "re-scheduling at the critical values")
        order = _order_check(
            graph, params, settings.parameter, [a, *result.critical, b], result, report
        )
    if as_json:
        if order is not None:
            payload["schedule_order"] = order.as_dict()
        emit_json(payload | {"engine_note": choice.note})
        return
    _print_critical(result, settings.min_jump)
    _print_order(order, "the range ends and critical values")
    _echo_note(choice)


def _order_check(graph, params, parameter: str, values, critical=None, report=None):
    """Under the schedule order: the network's own order and ``T`` at ``values`` against the
    baseline's (:func:`llamp.lp.order_check.check_order`); ``critical``: the search whose exact
    pieces give the baseline order's ``T`` there; ``report``: a progress bar's."""
    from llamp.lp.order_check import check_order

    # a value inside an interval the budget left unresolved has no exact piece: the engine's T
    fixed = None if critical is None or critical.unresolved else critical.runtime_at
    return check_order(graph, params, parameter, values, fixed, progress=report)


def _print_order(check, where: str) -> None:
    """What :func:`_order_check` found, in words, and the largest differences of ``T``."""
    if check is None:
        return
    name = check.parameter

    def fmt(value: float) -> str:
        return config.format_value(name, value)

    n = len(check.points)
    picked = "" if n == check.candidates else f" of {check.candidates}, evenly picked"
    moved = len(check.differs_at)
    off = check.disagreements
    over = check.agrees_over()
    if not off:
        runtime = f"its own T is this order's at all {n}"
    elif over is None:
        runtime = f"its own T differs at all {n}"
    else:
        span = (
            f"only at {fmt(over[0])}"
            if over[0] == over[1]
            else f"from {fmt(over[0])} to {fmt(over[1])}"
        )
        runtime = f"its own T is this order's {span} and differs at {len(off)}"
    click.echo(
        f"order: the schedule at {name} = {fmt(check.baseline)}, re-scheduled at {where} "
        f"({n}{picked}): the network's own order differs at {moved}, {runtime}"
        + (" (the largest differences below)" if off else "")
    )
    if off:
        rows = [
            (fmt(p.value), format_ns(p.fixed_ns), format_ns(p.own_ns), f"{p.error:+.2%}")
            for p in off[:5]
        ]
        click.echo(table(rows, (name, "T (this order)", "T (own order)", "difference")))


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
@save_option
@settings_options("tolerance")
@analysis_settings("tolerance")
def tolerance(graph, graph_spec, params, engine, as_json, save, settings) -> None:
    """x% latency and bandwidth tolerance relative to T at the configured L, G."""
    choice = _engine_choice(engine, graph)
    result, payload = _run("tolerance", graph, Inputs(params, engine), settings)
    payload["engine_note"] = choice.note
    from llamp.lp.order_check import check_tolerance

    bar, report = progress_bar(show=not as_json)
    with bar:
        report(0.0, "tolerances under the network's own order")
        order = check_tolerance(graph, params, result, progress=report)
    if order:
        payload["schedule_order"] = {k: [w.as_dict() for w in v] for k, v in order.items()}
    if save:
        payload["analysis_id"] = _save("tolerance", graph_spec, graph, params, payload)
    if as_json:
        emit_json(payload)
        return
    _print_tolerance(result, order)
    _echo_note(choice)


def _print_tolerance(result, order: dict | None = None) -> None:
    """The tolerance table; ``order`` (:func:`llamp.lp.order_check.check_tolerance`) adds each
    tolerance under the network's own order."""
    order = order or {}
    click.echo(f"baseline T = {format_ns(result.baseline_ns)} ({result.engine})")

    def own(parameter: str, i: int) -> list[str]:
        if parameter not in order:
            return []
        return [_own_tolerance_text(order[parameter][i])]

    rows = []
    for i, (lat, bw) in enumerate(
        zip(result.latency, result.bandwidth or [None] * len(result.latency), strict=True)
    ):
        rows.append(
            (
                format_percent(lat.x),
                format_ns(lat.bound_ns),
                format_ns(lat.value),
                *own("L", i),
                "—" if bw is None else config.format_value("G", bw.value),
                *(own("G", i) if bw is not None else []),
            )
        )
    header = ["x", "T bound", "max L", *(["own order"] if "L" in order else []), "max G"]
    click.echo(table(rows, (*header, *(["own order"] if "G" in order else []))))
    if order:
        walks = [w for ws in order.values() for w in ws]
        click.echo(
            "own order: where the network's own T (the schedule pass re-run at each value) "
            f"reaches the bound, {sum(len(w.walk) for w in walks)} passes; ↑: it crosses the "
            "bound within 10^-5 above, jumping over it (an order change); ≥ a, < b, a … b: the "
            "pass budget ran out first, its T was below the bound at a and above it at b"
        )


def _own_tolerance_text(walk) -> str:
    """An own-order tolerance (:class:`llamp.lp.order_check.OwnTolerance`) for a table cell."""
    return walk.text(lambda v: config.format_value(walk.parameter, v))


# ---------------------------------------------------------------------- region
def _profiles() -> tuple:
    """The saved network profiles (name, LogGPS) a region marks with ``--networks``."""
    from llamp.injector.profiles import list_profiles

    return tuple((prof.name, prof.params) for prof in list_profiles())


@cli.command()
@graph_argument
@params_options
@json_option
@settings_options("region", "levels", "axes", "L_max", "G_max", "o_max", "maxima")
@click.option(
    "--topology",
    "topology_spec",
    default=None,
    metavar="SPEC",
    help="Link-class variables of a topology (fattree:k=16, dragonfly:…, torus:…, graph file).",
)
@click.option("--mapping", "mapping_file", default=None, help="Node of every rank (--topology).")
@settings_options("region", "ranks_per_node", "intra", "inter", "gpu_machine")
@latency_options
@settings_options("region", "designs", "networks", "max_evaluations")
@analysis_settings("region")
def region(
    graph, graph_spec, params, as_json, topology_spec, mapping_file, latencies, settings
) -> None:
    """Exact joint tolerance regions: every (U, V) with T ≤ (1+x)·T0, as polygons.

    T is a maximum of affine functions of any two variables, so each region is a convex
    polygon; its vertices are verified by evaluations and each edge lies on one critical
    path's T = bound (λ of that path listed) or on the box (U, V ≥ 0 up to the box maxima).
    """
    from llamp.lp.registry import region_designs

    inputs = Inputs(
        params,
        topology=topology_spec,
        mapping=mapping_file,
        latencies=latencies,
        profiles=_profiles() if settings.networks else (),
    )
    bar, report = progress_bar("evaluations")
    with bar:
        result, payload = _run("region", graph, replace(inputs, report=report), settings)
    from llamp.lp.order_check import check_region
    from llamp.lp.region import level_key

    order = check_region(graph, result)
    if as_json:
        if order:
            au, av = result.axes
            payload["schedule_order"] = {
                level_key(x): [c.as_dict(au.key, av.key) for c in checks]
                for x, checks in order.items()
            }
        emit_json(payload)
        return
    designs = region_designs(result, settings, inputs)
    _print_region(result, result.designs(designs) if designs else None, order)


def _print_region(result, frame, order: dict | None = None) -> None:
    """The regions' vertices; ``order`` (:func:`llamp.lp.order_check.check_region`) adds the
    network's own ``T`` at the vertices it re-scheduled."""
    from llamp.lp.region import NS, level_key

    order = order or {}
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
        checked = {(c.u, c.v): c for c in order.get(level.x, [])}
        rows = []
        for i, edge in enumerate(level.edges):
            T = level.runtime_ns[i]
            if edge.kind == "box":
                along = f"box ({edge.side})"
            else:
                along = (
                    f"T = bound, λ_{au.name} = {edge.lambda_u:g}, λ_{av.name} = {edge.lambda_v:g}"
                )
            own = checked.get((float(level.u[i]), float(level.v[i])))
            rows.append(
                (
                    fmt(au, level.u[i]),
                    fmt(av, level.v[i]),
                    "?" if np.isnan(T) else format_ns(T),
                    *([] if not order else ["—" if own is None else _own_text(own)]),
                    along,
                )
            )
        own_head = ["own T (vs bound)"] if order else []
        click.echo(table(rows, (au.name, av.name, "T", *own_head, "edge to the next vertex")))
        if checked:
            over = [c for c in checked.values() if c.excess > 1e-9]
            moved = sum(not c.same_order for c in checked.values())
            click.echo(
                f"own T: the network's own order re-scheduled at {len(checked)} of "
                f"{level.u.size} vertices: over the bound at {len(over)}, its order differs "
                f"from the baseline's at {moved}"
            )
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


def _own_text(check) -> str:
    """The network's own ``T`` at a region's vertex and its excess over the bound."""
    return f"{format_ns(check.own_ns)} ({check.excess:+.2%})"


# ---------------------------------------------------------------------- path
@cli.command()
@graph_argument
@params_options
@json_option
@save_option
@click.option("--top", default=10, show_default=True, help="Messages to list.")
def path(graph, graph_spec, params, as_json, save, top) -> None:
    """The critical path: its messages and where its time goes, per rank."""
    cp, payload = _run("path", graph, Inputs(params))
    if save:
        payload["analysis_id"] = _save("path", graph_spec, graph, params, payload, per_op=True)
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
    if cp.streams is not None:
        _print_streams(cp.streams, top)
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


def _print_streams(streams, top: int) -> None:
    """The GPU run's path per stream: compute and exposed communication, largest first."""
    share = f" ({streams.exposed_fraction:.2%} of T)" if streams.runtime_ns else ""
    click.echo(
        f"per stream: compute {format_ns(streams.compute_ns)}, exposed communication "
        f"{format_ns(streams.communication_ns)}{share}"
    )
    frame = streams.per_stream
    order = np.argsort(-(frame["compute_ns"] + frame["communication_ns"]).to_numpy(), kind="stable")
    rows = [
        (
            int(r.rank),
            r.stream,
            format_ns(r.compute_ns),
            format_ns(r.communication_ns),
            format_ns(r.latency_ns),
            format_ns(r.bandwidth_ns),
            format_ns(r.overhead_ns),
            format_ns(r.protocol_ns),
        )
        for r in frame.iloc[order[:top]].itertuples(index=False)
    ]
    click.echo(
        table(
            rows,
            (
                "rank",
                "stream",
                "compute",
                "exposed comm",
                "latency",
                "bandwidth",
                "overhead",
                "protocol",
            ),
        )  # fmt: skip
    )
    if len(frame) > top:
        click.echo(f"({len(frame) - top} more streams: --json lists them all)")


# ---------------------------------------------------------------------- report
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
@settings_options("report")
@analysis_settings("report")
def report(graph, graph_spec, params, engine, as_json, settings) -> None:
    """Everything at once: summary, prediction, sweep, critical latencies, tolerance, path."""
    from llamp.lp.report import STAGES
    from llamp.progress import StepBar

    stages = StepBar(len(STAGES), "report", show=None if not as_json else False)
    bars: list = []

    def report_(fraction: float | None, text: str) -> None:
        """A stage begins (the stage bar) or the critical-latency search advances (its bar)."""
        if fraction is None and text in STAGES:
            while bars:
                bars.pop()[0].close()
            stages.step(text)
            return
        if not bars:
            bars.append(progress_bar(show=not as_json))
        bars[-1][1](fraction, text)

    with stages, _interrupt_exits():
        try:
            data, payload = _run("report", graph, Inputs(params, engine, report=report_), settings)
        finally:
            while bars:
                bars.pop()[0].close()
    if as_json:
        emit_json(payload)
        return
    choice, pred, frame = data.engine, data.prediction, data.sweep
    s = data.summary
    click.echo(
        f"{s.name}: {s.ranks} ranks, {s.vertices} vertices ({s.calcs} calc, {s.sends} send, "
        f"{s.recvs} recv), {s.messages} messages, {s.bytes} bytes"
    )
    click.echo(_params_line(params))
    if params.order == "schedule":
        click.echo(
            f"order: the schedule at L = {format_ns(params.L)} for the sweep, the critical "
            "latencies and the tolerances, each checked against the network's own order below "
            "(llamp sweep --reschedule: each point's own)"
        )
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
    own = {p.value: p for p in data.order.points} if data.order is not None else {}

    def own_text(value: float) -> list[str]:
        if data.order is None:
            return []
        point = own.get(float(value))
        if point is None:
            return ["—"]
        change = (point.own_ns - point.fixed_ns) / point.fixed_ns if point.fixed_ns else 0.0
        return [f"{format_ns(point.own_ns)} ({change:+.2%})"]

    rows = [
        (
            format_ns(r.L_ns),
            format_ns(r.runtime_ns),
            f"{r.lambda_L:g}",
            f"{r.rho_L:.3%}",
            *own_text(r.L_ns),
        )
        for r in frame.itertuples(index=False)
    ]
    own_head = ["T, own order (vs T)"] if data.order is not None else []
    click.echo(table(rows, ("L", "T", "λ_L", "ρ_L", *own_head)))
    click.echo("")
    _print_critical(data.critical)
    _print_order(data.order, "the sweep points and the baseline")
    click.echo("")
    _print_tolerance(data.tolerance, data.own_tolerance)
    click.echo("")
    _print_path(graph, data.path, 5, engine="graph")
    click.echo("\n" + "  ".join(f"{k} {v:.2f}s" for k, v in data.seconds.items()))
