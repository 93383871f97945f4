"""``llamp trace [-o DIR] [--ingest NAME] -- mpirun -np 4 ./app``: trace an MPI run.

Builds the PMPI tracer on first use with the ``mpicc`` on PATH (cached per MPI library in
``$LLAMP_HOME/tracer/``), runs the command with the tracer preloaded into every rank, checks
that each rank left a complete ``pmpi-trace-rank-<N>.txt`` (liballprof format) in DIR, and with
``--ingest NAME`` turns the trace into an execution graph stored as run NAME. See
:mod:`llamp.ingest.tracing`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from llamp.cli.base import (
    cli,
    collectives_option,
    emit_json,
    json_option,
    message,
    parse_collectives,
)
from llamp.errors import InputError, StoreError


def _default_dir() -> Path:
    return Path(time.strftime("llamp-trace-%Y%m%d-%H%M%S"))


def _check_run_name(name: str, store_uri: str | None, replace: bool) -> None:
    """Refuse an existing run before the application runs (best effort: the store may be busy)."""
    try:
        from llamp.graphdb import open_store
    except ImportError as err:
        raise StoreError(f"--ingest needs the graph store, which is not available ({err})") from err
    try:
        with open_store(store_uri, read_only=True) as store:
            exists = store.has_run(name)
    except InputError:
        raise
    except Exception:  # noqa: BLE001 - a busy or new store is checked again when writing
        return
    if exists and not replace:
        raise InputError(
            f"run {name!r} already exists in the store: pass --replace or choose another name"
        )


def _ingest(directory: Path, name: str, collectives: dict[str, str], store_uri, replace: bool):
    from llamp.cli.ingest import read_reporting
    from llamp.graphdb import open_store

    graph = read_reporting(directory, fmt="liballprof", collectives=collectives, name=name)
    with open_store(store_uri) as store:
        store.put_run(graph, name, replace=replace)
    return graph


@cli.command(
    "trace",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Trace directory (default: ./llamp-trace-<date>-<time>).",
)
@click.option(
    "--ingest",
    "ingest_name",
    default=None,
    metavar="NAME",
    help="Ingest the trace and store the graph as run NAME.",
)
@collectives_option
@click.option("--replace", is_flag=True, help="With --ingest: replace a stored run NAME.")
@click.option("--overwrite", is_flag=True, help="Replace a trace already in the directory.")
@click.option(
    "--mpicc",
    default=None,
    envvar="MPICC",
    help="MPI C compiler wrapper to build the tracer with (default: mpicc on PATH). Env: MPICC.",
)
@click.option("--rebuild", is_flag=True, help="Rebuild the tracer library even if cached.")
@json_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def trace_cmd(
    ctx: click.Context,
    output: Path | None,
    ingest_name: str | None,
    collectives: str | None,
    replace: bool,
    overwrite: bool,
    mpicc: str | None,
    rebuild: bool,
    as_json: bool,
    command: tuple[str, ...],
) -> None:
    """Trace COMMAND with llamp's PMPI tracer: llamp trace -o DIR -- mpirun -np 4 ./app

    Builds the tracer with mpicc on first use (cached in $LLAMP_HOME/tracer). Open MPI's
    mpirun gets -x LD_PRELOAD, MPICH's mpiexec.hydra -genv; any other command (a singleton
    run, srun) gets LD_PRELOAD in its environment. Every rank writes
    DIR/pmpi-trace-rank-N.txt (liballprof format); the run must exit with 0 and leave a
    complete file per rank.
    """
    from llamp.ingest.tracing import run_traced

    algorithms = parse_collectives(collectives)
    if algorithms:
        if not ingest_name:
            raise InputError("--collectives applies to --ingest NAME")
        from llamp.ingest.build import check_algorithms

        check_algorithms(algorithms)  # a typo fails before the application runs
    store_uri = ctx.obj.get("store_uri") if ctx.obj else None
    if ingest_name:
        _check_run_name(ingest_name, store_uri, replace)
    directory = output or _default_dir()
    run = run_traced(
        list(command),
        directory,
        mpicc=mpicc,
        overwrite=overwrite,
        rebuild=rebuild,
        log=lambda msg: message("note", msg),
    )
    result: dict[str, Any] = {
        "directory": str(run.directory),
        "ranks": run.ranks,
        "mpi": run.mpi.label,
        "mpi_calls": run.calls,
        "mpi_calls_per_rank": list(run.calls_per_rank),
        "seconds": round(run.seconds, 3),
        "command": list(run.command),
        "tracer": str(run.library),
    }
    if ingest_name:
        graph = _ingest(run.directory, ingest_name, algorithms, store_uri, replace)
        summary = graph.summary()
        result.update(
            run=ingest_name,
            vertices=summary.vertices,
            messages=summary.messages,
            bytes=summary.bytes,
            warnings=graph.meta.get("warnings", []),
        )
    if as_json:
        emit_json(result)
        return
    click.echo(
        f"traced {run.ranks} ranks ({run.mpi.label}) in {run.seconds:.2f} s: "
        f"{run.calls} MPI calls → {run.directory}"
    )
    if ingest_name:
        click.echo(
            f"stored run {ingest_name!r}: {result['vertices']} vertices, "
            f"{result['messages']} messages ({result['bytes']} bytes)"
        )
