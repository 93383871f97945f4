"""``llamp calibrate``, ``llamp inject``, ``llamp overhead``, ``llamp validate``: measure this
machine's LogGP, run an application with injected latency, measure the injector's and the
tracer's own per-call costs, and check predictions against injected runs (docs/architecture.md
§Injector and validation).

Each takes the launcher or application command after ``--``. ``--network NAME`` selects a
network profile saved by ``llamp calibrate --save NAME`` (``$LLAMP_HOME/networks/NAME.json``);
``--L/--o/--G/--S`` override its parameters. See :mod:`llamp.injector`.
"""

from __future__ import annotations

import functools
import shlex
from pathlib import Path
from typing import Any

import click

from llamp.cli.base import (
    cli,
    collectives_option,
    emit_json,
    engine_option,
    json_option,
    message,
    model_options,
    parse_collectives,
    table,
)
from llamp.config import (
    format_ns,
    llamp_home,
    parse_duration_ns,
    parse_percent,
    parse_size_bytes,
)
from llamp.errors import InputError
from llamp.params import LogGPS

_COMMAND = {"ignore_unknown_options": True, "allow_interspersed_args": False}


def network_options(func):
    """``--network NAME --L --o --G --S --g`` and the model choices; the command gets
    ``network``, ``params`` (``None`` when none of the parameters is given), ``times`` (the
    profile's measured times, else ``None``) and ``sources`` (parameter → where its value came
    from)."""

    @click.option(
        "--network",
        default=None,
        metavar="NAME",
        help="Network profile saved by `llamp calibrate --save NAME`.",
    )
    @click.option("--L", "L", default=None, help="Latency L (e.g. 500ns); overrides --network.")
    @click.option("--o", "o", default=None, help="Overhead o per message (e.g. 100ns).")
    @click.option("--G", "G", default=None, help="Gap per byte G (e.g. 0.15ns/B or 50Gb/s).")
    @click.option("--S", "S", default=None, help="Rendezvous threshold S (e.g. 4KiB).")
    @model_options
    @functools.wraps(func)
    def wrapper(*args, network, L, o, G, S, g, progress, nic, order, rendezvous, **kw):
        from llamp.injector.profiles import load_profile, param_sources, resolve_params

        given = network is not None or any(v is not None for v in (L, o, G, S, g))
        kw["network"] = network
        models = {"g": g, "progress": progress, "nic": nic, "order": order}
        models["rendezvous"] = rendezvous
        kw["params"] = resolve_params(network, L=L, o=o, G=G, S=S, **models) if given else None
        kw["times"] = load_profile(network).times() if network else None
        kw["sources"] = param_sources(network, given={"L": L, "o": o, "G": G, "S": S, "g": g})
        return func(*args, **kw)

    return wrapper


def _mpicc_option(func):
    return click.option(
        "--mpicc",
        default=None,
        envvar="MPICC",
        help="MPI C compiler wrapper to build with (default: mpicc on PATH). Env: MPICC.",
    )(func)


def _params_text(p: LogGPS) -> str:
    from llamp.injector.calibrate import NO_SWITCH_S

    S = "none (all eager)" if p.S >= NO_SWITCH_S else f"{p.S} B"
    return (
        f"L = {format_ns(p.L)}, o = {format_ns(p.o)}, G = {p.G:.6g} ns/B, S = {S}, "
        f"g = {format_ns(p.g)}"
    )


# --------------------------------------------------------------------------- calibrate
@cli.command("calibrate", context_settings=_COMMAND)
@click.option("--save", "save_name", default=None, metavar="NAME", help="Save as network NAME.")
@click.option(
    "--sizes",
    default=None,
    help="Message sizes, e.g. 1,64,4KiB,1MiB (default: powers of two from 1 B to 4 MiB).",
)
@click.option("--iters", default=400, show_default=True, type=int, help="Round trips per size.")
@click.option(
    "--rounds",
    default=3,
    show_default=True,
    type=click.IntRange(min=1, max=100),
    help="Ping-pong this many times and fit the per-size median: one round can catch a moment "
    "in which a shared or virtual machine runs several times slower.",
)
@click.option(
    "--pause",
    default="0s",
    show_default=True,
    help="Wait this long between rounds (e.g. 20s), so the rounds sample more of the machine.",
)
@click.option(
    "--injected",
    is_flag=True,
    help="Ping-pong under the injector at ΔL = 0, so o and L include its per-message header.",
)
@click.option("--list", "list_only", is_flag=True, help="List the saved networks and exit.")
@_mpicc_option
@json_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def calibrate_cmd(
    save_name: str | None,
    sizes: str | None,
    iters: int,
    rounds: int,
    pause: str,
    injected: bool,
    list_only: bool,
    mpicc: str | None,
    as_json: bool,
    command: tuple[str, ...],
) -> None:
    """Fit LogGP L, o, G (and S) with a ping-pong run by COMMAND (e.g. -- mpirun -n 2)."""
    import time

    from llamp.injector.calibrate import DEFAULT_SIZES, calibrate, combine
    from llamp.injector.profiles import list_profiles, save_profile

    if list_only:
        profiles = list_profiles()
        if as_json:
            emit_json([p.as_dict() for p in profiles])
            return
        rows = [(p.name, _params_text(p.params), p.created, p.source) for p in profiles]
        click.echo(
            table(rows, ("network", "parameters", "created", "source"))
            if rows
            else f"no saved networks in {llamp_home() / 'networks'}"
        )
        return
    if not command:
        raise InputError("give the launcher after --, e.g. llamp calibrate -- mpirun -n 2")
    size_list = (
        tuple(parse_size_bytes(s.strip()) for s in sizes.split(",") if s.strip())
        if sizes
        else DEFAULT_SIZES
    )
    wait_s = parse_duration_ns(pause, default_unit="s") / 1e9
    if wait_s < 0:
        raise InputError(f"--pause must not be negative, got {pause!r}")
    fits = []
    for k in range(rounds):
        if k and wait_s:
            time.sleep(wait_s)
        fits.append(
            calibrate(
                list(command),
                sizes=size_list,
                iters=iters,
                mpicc=mpicc,
                injected=injected,
                log=lambda m: message("note", m),
            )
        )
    fit = combine(fits)
    result: dict[str, Any] = fit.as_dict()
    if rounds > 1:
        result["rounds"] = [f.brief() for f in fits]
    if save_name:
        path = save_profile(
            save_name,
            fit.params(),
            source="llamp calibrate "
            + ("--injected " if injected else "")
            + "-- "
            + shlex.join(command),
            details=result,
        )
        result["saved"] = str(path)
    if as_json:
        emit_json(result)
        return
    res = fit.residuals()
    rows = [
        (
            int(r.size_bytes),
            r.protocol,
            f"{r.one_way_ns:.1f}",
            f"{r.model_ns:.1f}",
            f"{r.residual_ns:+.1f}",
            f"{r.residual_pct:+.1f}%",
            f"{r.os_ns:.0f}",
            f"{r.or_ns:.0f}",
        )
        for r in res.itertuples(index=False)
    ]
    click.echo(
        table(
            rows,
            ("bytes", "protocol", "RTT/2 (ns)", "model (ns)", "residual", "rel.", "o_s", "o_r"),
        )
    )
    click.echo(f"\nLogGP fit: {_params_text(fit.params())}")
    click.echo(
        f"  o = mean of send overhead {fit.os_ns:.0f} ns and receive overhead {fit.or_ns:.0f} ns"
        f" (messages ≤ 256 B); slope below the switch {fit.G_small_ns_per_byte:.4g} ns/B"
        + (f"; one-way time jumps by {fit.jump_ns:.0f} ns after S" if fit.jump_ns else "")
    )
    click.echo(f"  RMS residual {result['rms_residual_pct']:.1f}%; by parameter:")
    for name, r in result["parameter_residuals"].items():
        value = (
            "–"
            if r["rms_residual_pct"] != r["rms_residual_pct"]
            else (f"{r['rms_residual_pct']:.1f}%")
        )
        click.echo(f"    {name}: {value} over {r['measurements']} ({r['basis']})")
    on = result["measured_on"]
    click.echo(f"  measured on: {on['mpi']}; {on['transport']}; node {on['node']}")
    if rounds > 1:
        Gs = [f.G_ns_per_byte for f in fits]
        click.echo(
            f"  the per-size median of {rounds} rounds; each round's own G: "
            + ", ".join(f"{g:.4g}" for g in Gs)
            + " ns/B, o: "
            + ", ".join(f"{f.o_ns:.0f}" for f in fits)
            + " ns"
        )
        if min(Gs) > 0 and max(Gs) / min(Gs) > 1.25:
            message(
                "warning",
                f"the rounds' G differ by {max(Gs) / min(Gs):.2f}×: the machine's speed moved "
                "while it was calibrated (more --rounds, or a --pause between them, sample more "
                "of it)",
            )
    from llamp.injector.message_costs import MessageCosts

    click.echo(
        f"  for `llamp validate --overheads measured`: {MessageCosts.from_calibration(fit).describe()}"
    )
    for w in fit.warnings:
        message("warning", w)
    if save_name:
        click.echo(f"saved network {save_name!r} → {result['saved']}")


# --------------------------------------------------------------------------- inject
@cli.command("inject", context_settings=_COMMAND)
@click.option("--delta", required=True, help="ΔL added to every message, e.g. 20us.")
@network_options
@click.option(
    "--report",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the per-rank reports (inject-rank-N.json) in this directory.",
)
@_mpicc_option
@json_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def inject_cmd(
    delta: str,
    network: str | None,
    params: LogGPS | None,
    times,
    sources: dict[str, str],
    report: Path | None,
    mpicc: str | None,
    as_json: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND (an MPI launch: -- mpirun -np 4 ./app) with ΔL added to every MPI message.

    The network (--network, or --L/--o/--G/--S) sets S, above which messages also pay the
    rendezvous handshake, and estimates when a message arrived at a receiver that was busy (a
    calibrated network's measured times are used for that); without it every message is eager.
    """
    from llamp.injector.inject import run_injected

    delta_ns = parse_duration_ns(delta, default_unit="us")
    run = run_injected(
        list(command),
        delta_ns,
        base=params,
        times=times,
        mpicc=mpicc,
        report_dir=report,
        log=lambda m: message("note", m),
    )
    if as_json:
        emit_json(run.as_dict() | {"network": network, "parameter_sources": sources})
        return
    c = run.counters
    click.echo(
        f"ΔL = {format_ns(delta_ns)}: runtime {format_ns(run.runtime_ns)} (slowest of "
        f"{run.ranks} ranks, end of MPI_Init to MPI_Finalize; {run.wall_s:.2f} s with launch)"
    )
    click.echo(
        f"  {int(c['messages_sent'])} point-to-point messages ({int(c['bytes_sent'])} bytes), "
        f"{int(c['collectives'])} collectives as {int(c['collective_messages'])} messages; "
        f"{int(c['messages_delayed'])} receives held back, "
        f"{format_ns(c['delay_added_ns'])} in all"
    )
    if c["passthrough_calls"]:
        click.echo(
            f"  {int(c['passthrough_calls'])} calls passed through undelayed "
            "(intercommunicators, non-commutative reduce, alltoallw, …)"
        )
    if c["header_mismatches"] or c["orphaned_receives"]:
        message(
            "warning",
            f"{int(c['header_mismatches'])} messages lost their header pairing, "
            f"{int(c['orphaned_receives'])} active receives were freed",
        )
    click.echo(f"  other processes used {run.other_load_cores:.2f} cores during the run")


# --------------------------------------------------------------------------- validate
def _seconds(text: str, what: str) -> float:
    """A positive duration (:func:`llamp.config.parse_duration_ns`, bare numbers in seconds)."""
    value = parse_duration_ns(text, default_unit="s") / 1e9
    if not 0 < value < float("inf"):
        raise InputError(f"{what}: {text!r} must be a positive duration (e.g. 300s)")
    return value


def _signed_duration_ns(text: str) -> float:
    """A duration that may be negative (``-40ns``)."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    try:
        return sign * parse_duration_ns(body.lstrip("+-"), default_unit="ns")
    except InputError as err:
        raise InputError(f"--call-cost: {err}") from None


# --------------------------------------------------------------------------- overhead
@cli.command("overhead", context_settings=_COMMAND)
@click.option(
    "--ci-width",
    default="1%",
    show_default=True,
    metavar="PERCENT",
    help="Stop once every mode's mean has a 95% interval this wide (full width, share of the mean).",
)
@click.option("--min-runs", default=3, show_default=True, type=int, help="Runs per mode, at least.")
@click.option("--max-runs", default=30, show_default=True, type=int, help="Runs per mode, at most.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the run order.")
@click.option(
    "--timeout",
    default=None,
    metavar="DURATION",
    help="How long one application run may take (e.g. 600s; a bare number is seconds).",
)
@_mpicc_option
@json_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def overhead_cmd(
    ci_width: str,
    min_runs: int,
    max_runs: int,
    seed: int,
    timeout: str | None,
    mpicc: str | None,
    as_json: bool,
    command: tuple[str, ...],
) -> None:
    """Measure the injector's and the tracer's per-call costs on COMMAND (-- mpirun -n 2 ./app).

    Runs COMMAND plain, under the tracer, under the injector without its delay path and under
    the injector at ΔL = 0, in shuffled rounds until each mean is known to --ci-width; prints
    the per-call costs and the charge to give `llamp validate --call-cost`.
    """
    from llamp.injector.overhead import measure_overhead

    say = (lambda m: click.echo(m, err=True)) if not as_json else (lambda m: None)
    log_dir = llamp_home() / "overhead"
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "runs.log", "w") as app_log:
        result = measure_overhead(
            list(command),
            width=parse_percent(ci_width, what="--ci-width"),
            min_runs=min_runs,
            max_runs=max_runs,
            mpicc=mpicc,
            seed=seed,
            timeout=None if timeout is None else _seconds(timeout, "--timeout"),
            output=app_log,
            log=say,
        )
    data = result.as_dict()
    if as_json:
        emit_json(data)
        return
    rows = []
    for mode, m in data["modes"].items():
        span = (
            "–"
            if m["span_mean_ns"] is None
            else f"{format_ns(m['span_mean_ns'])} ± {format_ns(m['span_ci95_half_width_ns'])}"
        )
        wall = f"{format_ns(m['wall_mean_ns'])} ± {format_ns(m['wall_ci95_half_width_ns'])}"
        rows.append((mode, m["runs"], wall, span))
    click.echo(table(rows, ("mode", "runs", "wall (mean ± 95% CI)", "MPI_Init→Finalize")))
    click.echo(f"traced MPI calls of the busiest rank: {result.calls}")
    for c in result.costs:
        click.echo(
            f"  {c.of} − {c.against} ({c.measure}): {format_ns(c.difference_ns)} ± "
            f"{format_ns(c.half_width_ns)} = {c.per_call_ns:.1f} ± "
            f"{c.per_call_half_width_ns:.1f} ns per call"
        )
    loads = [r.loadavg for r in result.runs]
    why = "" if result.distinguishable else ", the difference not distinguishable from 0"
    click.echo(
        f"charge for `llamp validate --call-cost`: {result.charge_ns:.1f}ns{why} "
        f"(load average {min(loads):.2f}–{max(loads):.2f} over {len(loads)} runs)"
    )
    for n in result.notes:
        message("note", n)


def _message_costs(network: str | None, *, required: bool):
    """The per-size overheads of the calibrated profile ``network`` (None without one, or when
    the profile has none and they are not ``required``)."""
    from llamp.injector.message_costs import MessageCosts
    from llamp.injector.profiles import load_profile

    if network is None:
        if required:
            raise InputError(
                "--overheads measured needs a calibrated network: --network NAME (from `llamp "
                "calibrate --save NAME -- mpirun -n 2`)"
            )
        return None
    try:
        return MessageCosts.from_profile(load_profile(network))
    except InputError:
        if required:
            raise
        return None


@cli.command("validate", context_settings=_COMMAND)
@click.option("--deltas", required=True, help="ΔL values, e.g. 0,10,20,50,100us.")
@click.option(
    "--repeat",
    default=5,
    show_default=True,
    type=int,
    help="Runs per ΔL (the least, with --max-repeat).",
)
@click.option(
    "--max-repeat",
    default=None,
    type=int,
    metavar="N",
    help="Keep running the ΔL whose mean is not yet known to --ci-width, up to N runs each.",
)
@click.option(
    "--ci-width",
    default="1%",
    show_default=True,
    metavar="PERCENT",
    help="With --max-repeat: stop once the mean's 95% interval is this wide (full width, "
    "share of the mean).",
)
@click.option(
    "--call-cost",
    default=None,
    metavar="DURATION",
    help="Charge this much CPU in the model before each traced MPI call (e.g. 150ns; may be "
    "negative): the injector's per-call cost less the tracer's, as `llamp overhead` measures.",
)
@click.option(
    "--overheads",
    type=click.Choice(["model", "measured"]),
    default="model",
    show_default=True,
    help="What a message costs the CPU in the prediction: model (o at each end) or measured "
    "(the per-size send and receive overheads of the --network calibration, charged as CPU, "
    "with the wire's L and G: docs/architecture.md §Injector and validation). With a "
    "calibrated --network the other is also predicted, as models marked /measured.",
)
@click.option(
    "--fixed-order",
    is_flag=True,
    default=False,
    help="Under the schedule order, predict every ΔL in the order of the schedule at ΔL = 0 "
    "(as sweep does) instead of each ΔL's own (as predict at L0 + ΔL does; the default). Both "
    "are in the table of models.",
)
@click.option(
    "--traces",
    default=3,
    show_default=True,
    type=click.IntRange(min=1, max=100),
    help="Traced runs at ΔL = 0: each is predicted and the prediction is the mean of theirs "
    "(one run is one sample of a noisy program). The first runs before the injected runs, "
    "the k-th before their k-th round.",
)
@click.option("--run", "run_name", default=None, help="Name of the stored run (default: derived).")
@network_options
@click.option(
    "-o",
    "--trace-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the ΔL = 0 trace goes (default: $LLAMP_HOME/validation/<run>/trace).",
)
@collectives_option
@engine_option
@click.option(
    "--max-load",
    type=float,
    default=None,
    metavar="CORES",
    help="Before each run wait (up to 5 min) until other processes use at most CORES cores "
    "(e.g. 0.3), and run again (up to 3 times) a measurement or trace they disturbed more.",
)
@click.option(
    "--quiet-timeout",
    default="300s",
    show_default=True,
    metavar="DURATION",
    help="With --max-load: how long to wait for a quiet machine before a run (e.g. 300s, 5000ms; "
    "a bare number is seconds).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the run order.")
@click.option(
    "--timeout",
    default=None,
    metavar="DURATION",
    help="How long one application run may take (e.g. 600s; a bare number is seconds).",
)
@click.option("--no-store", is_flag=True, help="Do not store the run and the result.")
@click.option(
    "--show-output",
    is_flag=True,
    help="Show the application's output (default: kept in $LLAMP_HOME/validation/<run>/runs.log).",
)
@_mpicc_option
@json_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def validate_cmd(
    ctx: click.Context,
    deltas: str,
    repeat: int,
    max_repeat: int | None,
    ci_width: str,
    call_cost: str | None,
    overheads: str,
    fixed_order: bool,
    traces: int,
    run_name: str | None,
    network: str | None,
    params: LogGPS | None,
    times,
    sources: dict[str, str],
    trace_dir: Path | None,
    collectives: str | None,
    engine: str,
    max_load: float | None,
    quiet_timeout: str,
    seed: int,
    timeout: str | None,
    no_store: bool,
    show_output: bool,
    mpicc: str | None,
    as_json: bool,
    command: tuple[str, ...],
) -> None:
    """Predict T(L0 + ΔL) from one trace and compare with runs under the injector (RRMSE)."""
    from llamp.injector.validate import default_run_name, parse_deltas, run_validation

    if params is None:
        raise InputError(
            "the prediction needs this machine's LogGP: --network NAME (from `llamp calibrate "
            "--save NAME -- mpirun -n 2`) or --L/--o/--G/--S"
        )
    values = parse_deltas(deltas)
    algorithms = parse_collectives(collectives)
    if algorithms:
        from llamp.ingest.build import check_algorithms

        check_algorithms(algorithms)
    costs = _message_costs(network, required=overheads == "measured")
    name = run_name or default_run_name(command)
    log_dir = llamp_home() / "validation" / name
    log_dir.mkdir(parents=True, exist_ok=True)
    say = (lambda m: message("note", m)) if not as_json else (lambda m: None)
    with open(log_dir / "runs.log", "w") as app_log:
        result, analysis_id = run_validation(
            list(command),
            values,
            params=params,
            repeat=repeat,
            max_repeat=max_repeat,
            width=parse_percent(ci_width, what="--ci-width"),
            call_cost_ns=0.0 if call_cost is None else _signed_duration_ns(call_cost),
            message_costs=costs,
            overheads=overheads,
            traces=traces,
            reschedule=not fixed_order,
            param_sources=sources,
            run_name=name,
            trace_dir=trace_dir,
            mpicc=mpicc,
            collectives=algorithms,
            engine=engine,
            store_uri=ctx.obj.get("store_uri") if ctx.obj else None,
            store=not no_store,
            seed=seed,
            max_other_load=max_load,
            quiet_timeout_s=_seconds(quiet_timeout, "--quiet-timeout"),
            times=times,
            timeout=None if timeout is None else _seconds(timeout, "--timeout"),
            output=None if show_output else app_log,
            log=say,
        )
    if as_json:
        emit_json(result.as_dict() | {"analysis": analysis_id, "network": network})
        return
    click.echo(result.summary())
    if analysis_id:
        click.echo(f"stored as analysis {analysis_id} of run {result.run!r}")
