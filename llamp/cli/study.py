"""``llamp study SPEC.yaml``: runs × networks × what-ifs × analyses on all cores, a Dask
cluster or Slurm (the spec format is in :mod:`llamp.study.spec`)."""

from __future__ import annotations

from pathlib import Path

import click

from llamp.cli.base import cli, emit_json, json_option, message, table


@cli.command()
@click.argument("spec_path", metavar="SPEC.yaml")
@click.option(
    "-o",
    "--output",
    default=None,
    help="Table to write (.parquet or .csv); default: the spec's output.",
)
@click.option(
    "--workers",
    default=None,
    type=click.IntRange(1),
    help="Local worker processes (default: the spec's, else all cores).",
)
@click.option("--serial", is_flag=True, help="Compute every cell in this process (no Dask).")
@click.option(
    "--scheduler",
    default=None,
    metavar="tcp://HOST:PORT",
    help="Run on an existing Dask distributed cluster.",
)
@click.option(
    "--cluster",
    type=click.Choice(["local", "slurm"]),
    default=None,
    help="slurm: start workers through dask-jobqueue (settings: execution.slurm "
    "or the options below).",
)
@click.option("--jobs", default=None, type=click.IntRange(1), help="Slurm jobs to start.")
@click.option("--cores", default=None, type=click.IntRange(1), help="Cores per Slurm job.")
@click.option("--memory", default=None, help="Memory per Slurm job (e.g. 64GB).")
@click.option("--walltime", default=None, help="Walltime per Slurm job (HH:MM:SS).")
@click.option("--queue", default=None, help="Slurm partition.")
@click.option("--account", default=None, help="Slurm account.")
@click.option("--no-store", is_flag=True, help="Do not write cells to the graph store.")
@click.option("--restart", is_flag=True, help="Compute every cell again (no resume).")
@click.option("--dry-run", is_flag=True, help="Validate and list the cells; compute nothing.")
@click.option("--job-script", is_flag=True, help="Print the Slurm job script and stop.")
@json_option
@click.pass_context
def study(
    ctx,
    spec_path,
    output,
    workers,
    serial,
    scheduler,
    cluster,
    jobs,
    cores,
    memory,
    walltime,
    queue,
    account,
    no_store,
    restart,
    dry_run,
    job_script,
    as_json,
) -> None:
    """Run the study SPEC.yaml: every cell (run × collectives × network × placement × option ×
    analysis) not computed yet; one Analysis per cell in the store and one row per cell in
    the table. Cells already stored (or in the study's journal) are skipped; a failed cell is
    reported and the others go on."""
    from llamp.study import load_spec, run_study
    from llamp.study.execute import slurm_cluster

    spec = load_spec(spec_path)
    execution = spec.execution
    if scheduler:
        execution.scheduler = scheduler
    if cluster:
        execution.cluster = cluster
    for key, value in (
        ("jobs", jobs),
        ("cores", cores),
        ("memory", memory),
        ("walltime", walltime),
        ("queue", queue),
        ("account", account),
    ):
        if value is not None:
            setattr(execution.slurm, key, value)
    if job_script:
        click.echo(slurm_cluster(execution.slurm).job_script())
        return
    if dry_run:
        rows = [
            (
                c.id,
                c.run,
                c.collectives,
                c.network.name,
                c.placement.name if c.placement else "",
                c.option,
                c.analysis,
            )
            for c in spec.cells
        ]
        if as_json:
            emit_json(
                [
                    dict(
                        zip(
                            (
                                "cell",
                                "run",
                                "collectives",
                                "network",
                                "placement",
                                "option",
                                "analysis",
                            ),
                            r,
                            strict=True,
                        )
                    )
                    for r in rows
                ]
            )
            return
        click.echo(
            table(
                rows, ("cell", "run", "collectives", "network", "placement", "option", "analysis")
            )
        )
        click.echo(f"{len(rows)} cells")
        return
    report = run_study(
        spec,
        store_uri=ctx.obj.get("store_uri"),
        use_store=not no_store,
        workers=workers or execution.workers,
        serial=serial or execution.workers == 0,
        restart=restart,
        output=Path(output) if output else None,
        progress=not as_json,
        log=None if as_json else (lambda text: message("note", text)),
    )
    if as_json:
        emit_json(report.as_dict() | {"rows": report.table.to_dict(orient="records")})
        if report.failed:
            ctx.exit(1)
        return
    click.echo(
        f"study {spec.name}: {len(report.table)} cells, {report.computed} computed, "
        f"{report.skipped} resumed, {report.failed} failed, on {report.where} "
        f"({report.seconds:.1f} s)"
    )
    failed = report.table[report.table["status"] != "ok"] if len(report.table) else None
    if failed is not None and len(failed):
        click.echo(
            table(
                [
                    (r.cell, r.run, r.network, r.analysis, r.error)
                    for r in failed.itertuples(index=False)
                ],
                ("failed cell", "run", "network", "analysis", "error"),
            )
        )
    if report.output is not None:
        click.echo(f"wrote {report.output}")
    if report.failed:
        ctx.exit(1)
