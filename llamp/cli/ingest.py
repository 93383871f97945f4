"""Ingestion subcommands: ``llamp ingest`` (trace → graph file or stored run) and ``llamp info``.

``llamp ingest PATH`` reads a trace directory, a ``.goal`` or an ``.npz`` file. With ``-o OUT``
the graph is written to ``OUT`` (``.npz`` or ``.goal``, chosen by the suffix); with ``--name`` or
without ``-o`` it is stored as a run in the graph store (``--store`` / ``$LLAMP_STORE``). Whatever
the reader absorbed, dropped or guessed is printed on stderr as ``llamp: warning:`` lines.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import click

from llamp.cli.base import (
    RegistryChoice,
    check_output,
    cli,
    collectives_option,
    emit_json,
    host_speed_option,
    json_option,
    load_graph_spec,
    message,
    parse_collectives,
    table,
)
from llamp.config import format_flop_rate, format_ns
from llamp.errors import InputError, StoreError
from llamp.graph import ExecutionGraph
from llamp.messages import bars_shown
from llamp.progress import on_terminal

#: Inputs at least this large get progress bars (on stderr) unless --no-progress.
PROGRESS_BYTES = 32 << 20


def _formats() -> tuple[str, ...]:
    """``auto`` and every registered format (:data:`llamp.ingest.FORMATS`)."""
    from llamp.ingest import FORMATS

    return ("auto", *FORMATS)


def _input_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(f.stat().st_size for f in path.iterdir() if f.is_file())
    return path.stat().st_size


def read_reporting(path: Path, **kw: Any) -> ExecutionGraph:
    """``llamp.ingest.read`` with its warnings turned into ``llamp: warning:`` lines on stderr."""
    from llamp.ingest import read
    from llamp.ingest.events import IngestWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = read(path, **kw)
    for w in caught:
        if issubclass(w.category, IngestWarning):
            continue  # the same lines are in graph.meta["warnings"]
        message("warning", w.message)
    for line in graph.meta.get("warnings", []) or []:
        message("warning", line)
    return graph


def write_graph_file(
    graph: ExecutionGraph, out: Path, progress: bool = False
) -> dict[str, Any] | None:
    """Write ``graph`` to ``out`` (.npz exact, or .goal); for GOAL return the rounding report
    (:meth:`GoalWritten.as_dict` plus a ``note`` line), else ``None``."""
    suffix = out.suffix.lower()
    if suffix == ".npz":
        from llamp.lp.lowered import save_graph

        save_graph(graph, out, progress=progress)
        return None
    if suffix == ".goal":
        from llamp.ingest.goal import write_goal

        written = write_goal(graph, out)
        report = written.as_dict()
        del report["path"]
        report["note"] = written.describe()
        return report
    raise InputError(f"-o {out}: the output must end in .npz or .goal")


def _store(
    graph: ExecutionGraph, name: str, store_uri: str | None, replace: bool, progress: bool
) -> Any:
    try:
        from llamp.graphdb import open_store
    except ImportError as err:
        raise StoreError(f"the graph store is not available ({err}); use -o OUT.npz") from err
    with open_store(store_uri) as store:
        return store.put_run(graph, name, replace=replace, progress=progress, graph_file=True)


@cli.command("ingest")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    type=RegistryChoice(_formats),
    help="Input format (auto: detected from the path).",
)
@collectives_option
@host_speed_option
@click.option(
    "--gpu-machine",
    default=None,
    metavar="SPEC",
    help="Chakra and GOAL with collective markers: the GPU machine NCCL's choice and channels "
    "assume (gpus=8,nvlink=500ns:0.0022ns/B,net=3us:0.02ns/B,nics=8; llamp gpu-machine).",
)
@click.option(
    "--lenient",
    is_flag=True,
    help="Turn per-line problems (unknown call, unmatched message, …) into warnings.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the graph to OUT (.npz or .goal) instead of the store.",
)
@click.option("--name", default=None, help="Store the graph as run NAME (default: the trace name).")
@click.option("--replace", is_flag=True, help="Replace a stored run of the same name.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help=f"Progress bars on stderr (default: for inputs ≥ {PROGRESS_BYTES >> 20} MB, on a "
    "terminal).",
)
@json_option
@click.pass_context
def ingest_cmd(
    ctx: click.Context,
    path: Path,
    fmt: str,
    collectives: str | None,
    host_speed: str | None,
    gpu_machine: str | None,
    lenient: bool,
    output: Path | None,
    name: str | None,
    replace: bool,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Read the trace or graph at PATH into an execution graph; write it to OUT or the store."""
    if output is not None:
        check_output(output)
    if progress is None:
        progress = on_terminal() and _input_bytes(path) >= PROGRESS_BYTES
    bars_shown(progress)
    started = time.perf_counter()
    machine = None
    if gpu_machine is not None:
        from llamp.lp.gpu_machine import GpuMachine

        machine = GpuMachine.parse(gpu_machine).nccl_machine()
    graph = read_reporting(
        path,
        fmt=fmt,
        collectives=parse_collectives(collectives),
        lenient=lenient,
        progress=progress,
        name=name,
        host_speed=host_speed,
        nccl_machine=machine,
    )
    result: dict[str, Any] = {"name": graph.name, "source": str(path)}
    if output is not None:
        rounding = write_graph_file(graph, output, progress)
        result["output"] = str(output)
        if rounding is not None:
            result["goal_rounding"] = rounding
    if name is not None or output is None:
        info = _store(graph, name or graph.name, ctx.obj.get("store_uri"), replace, progress)
        result["run"] = getattr(info, "name", name or graph.name)
    summary = graph.summary()
    result.update(
        ranks=summary.ranks,
        vertices=summary.vertices,
        edges=summary.edges,
        messages=summary.messages,
        bytes=summary.bytes,
        trace_events=graph.meta.get("trace_events"),
        collectives=graph.meta.get("collectives", {}),
        seconds=round(time.perf_counter() - started, 3),
        warnings=graph.meta.get("warnings", []),
    )
    if "flops_per_s" in graph.meta:
        result["host_speed_flops_per_s"] = graph.meta["flops_per_s"]
    if as_json:
        emit_json(result)
        return
    where = ", ".join(
        x for x in (result.get("output"), result.get("run") and f"run {result['run']!r}") if x
    )
    click.echo(
        f"{graph.name}: {summary.ranks} ranks, {summary.vertices} vertices, "
        f"{summary.messages} messages ({summary.bytes} bytes) → {where} "
        f"in {result['seconds']:.2f} s"
        + (
            f" (host speed {format_flop_rate(graph.meta['flops_per_s'])})"
            if "flops_per_s" in graph.meta
            else ""
        )
    )
    if "goal_rounding" in result:
        click.echo(f"{output}: {result['goal_rounding']['note']}")


@cli.command("info")
@click.argument("graph_spec", metavar="GRAPH")
@collectives_option
@host_speed_option
@json_option
@click.pass_context
def info_cmd(
    ctx: click.Context,
    graph_spec: str,
    collectives: str | None,
    host_speed: str | None,
    as_json: bool,
) -> None:
    """Summary of GRAPH (.npz, .goal, trace directory or stored run): ranks, ops, messages."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = load_graph_spec(
            graph_spec,
            collectives=parse_collectives(collectives),
            store_uri=ctx.obj.get("store_uri"),
            host_speed=host_speed,
        )
    summary = graph.summary()
    payload = summary.as_dict()
    payload.update(
        format=graph.meta.get("format"),
        collectives=graph.meta.get("collectives", {}),
        warnings=graph.meta.get("warnings", []),
    )
    speed = graph.meta.get("flops_per_s")
    if speed is not None:
        payload["host_speed_flops_per_s"] = speed
    if as_json:
        emit_json(payload)
        return
    rows = [
        ("name", summary.name),
        ("format", payload["format"] or "-"),
        ("ranks", summary.ranks),
        (
            "vertices",
            f"{summary.vertices} ({summary.calcs} calc, {summary.sends} send, "
            f"{summary.recvs} recv"
            + (f", {summary.colls} analytic collective" if summary.colls else "")
            + ")",
        ),
        ("edges", summary.edges),
        ("messages", f"{summary.messages} ({summary.bytes} bytes)"),
        ("CPUs, NICs per rank", f"{summary.cpus}, {summary.nics} (at most)"),
        ("calc total", format_ns(summary.calc_ns_total)),
    ]
    if speed is not None:
        rows.append(("host speed", f"{format_flop_rate(speed)} (compute flops → time)"))
    if payload["collectives"]:
        rows.append(
            ("collectives", ", ".join(f"{k}={v}" for k, v in payload["collectives"].items()))
        )
    click.echo(table(rows, ()))
    per_rank = [(r, format_ns(v)) for r, v in enumerate(summary.calc_ns_per_rank)]
    if len(per_rank) > 16:
        per_rank = per_rank[:8] + [("…", "…")] + per_rank[-8:]
    click.echo()
    click.echo(table(per_rank, ("rank", "calc")))
    for line in payload["warnings"]:
        message("warning", line)
