"""Runs side by side and exports for other tools: compare, export-timeline, export-report.

``llamp compare A B …`` analyses each run (a stored run, an ``.npz``/``.goal`` file or a trace
directory) at one configuration: the registry's ``compare``
(:func:`llamp.lp.compare.compare_runs`: figures and each run's exact ``T(L)``, the same result
the UI's Compare page shows), its options generated from the entry; ``export-timeline``
writes the schedule with its critical path as a Chrome/Perfetto trace
(:mod:`llamp.lp.timeline`); ``export-report`` writes ``llamp report`` as one self-contained
HTML file (:mod:`llamp.lp.html_report`). Output files are checked before any work is done
(suffix, existing directory), like ``llamp export``.
"""

from __future__ import annotations

from pathlib import Path

import click

from llamp.cli.base import (
    analysis_settings,
    check_output,
    cli,
    emit_json,
    graph_argument,
    json_option,
    load_graph_spec,
    params_options,
    settings_options,
    table,
)
from llamp.config import format_ns
from llamp.errors import InputError
from llamp.lp.registry import ANALYSES, Inputs


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a failure leaves nothing."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


# ---------------------------------------------------------------------- compare
@cli.command()
@click.argument("runs", nargs=-1, required=True, metavar="RUN RUN...")
@params_options
@json_option
@settings_options("compare")
@click.option(
    "--html",
    "html_out",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the comparison as a self-contained HTML file.",
)
@click.option("--points", "removed_points", default=None, hidden=True)
@analysis_settings("compare")
@click.pass_context
def compare(ctx, runs, params, as_json, settings, html_out, removed_points) -> None:
    """Two or more runs side by side: each run's exact T(L) and λ_L (every critical latency
    over its own L range, or up to --to), tolerances, critical-path composition and what
    changed against the first RUN (a stored run, a graph file or a trace directory)."""
    from tqdm import tqdm

    from llamp.ingest import default_name
    from llamp.lp.compare import PARTS

    if removed_points is not None:
        raise InputError(
            "compare --points is gone: each run's T(L) is exact (every critical latency in "
            "its range, JSON key curves); for T at chosen latencies use "
            "llamp sweep RUN --from A --to B --points N"
        )
    if len(runs) < 2:
        raise InputError(f"compare needs at least two runs, got {len(runs)}")
    if html_out is not None:
        check_output(html_out, (".html", ".htm"))
    graphs, names = [], []
    with tqdm(total=2 * len(runs), unit=" steps", leave=False, disable=None) as bar:
        for spec in runs:
            bar.set_description(f"loading {spec}")
            graphs.append(load_graph_spec(spec, store_uri=ctx.obj.get("store_uri")))
            # A file or directory is named as ingest would name it, a stored run by its name.
            names.append(default_name(spec) if Path(spec).exists() else spec)
        if len(set(names)) != len(names):
            names = list(runs)

        def report(fraction: float | None, text: str) -> None:
            bar.set_description(text)
            if fraction is not None:
                bar.update(round(fraction * bar.total) - bar.n)

        inputs = Inputs(params, names=tuple(names), report=report)
        result = ANALYSES["compare"].run(graphs, inputs, settings)
    if html_out is not None:
        from llamp.lp.html_report import render_comparison

        _write_text(html_out, render_comparison(result))
    if as_json:
        payload = result.as_dict()
        if html_out is not None:
            payload["html"] = str(html_out)
        emit_json(payload)
        return
    rows = [
        (
            r.name,
            r.ranks,
            f"{r.messages:,}",
            f"{r.bytes:,}",
            r.collective_instances,
            format_ns(r.runtime_ns),
            f"{r.prediction.lambda_L:g}",
            f"{r.prediction.rho_L:.2%}",
        )
        for r in result.runs
    ]
    click.echo(table(rows, ("run", "ranks", "messages", "bytes", "colls", "T", "λ_L", "ρ_L")))
    click.echo("")
    tol = result.tolerances()
    click.echo(
        table(
            [
                (
                    r.run,
                    f"{100 * r.x:g}%",
                    format_ns(r.latency_ns),
                    "∞" if r.G_ns_per_byte == float("inf") else f"{r.G_ns_per_byte:.6g} ns/B",
                )
                for r in tol.itertuples(index=False)
            ],
            ("run", "x", "L tolerance", "G tolerance"),
        )
    )
    click.echo("")
    click.echo(
        table(
            [
                (r.name, *(f"{r.path_share(p):.1%}" for p in PARTS), r.path_messages)
                for r in result.runs
            ],
            ("critical path", *PARTS, "messages"),
        )
    )
    click.echo("")
    for note in result.curve_notes():
        click.echo(f"T(L) of {note}")
    click.echo("\nwhat changed:")
    for line in result.summary():
        click.echo(f"  {line}")
    if html_out is not None:
        click.echo(f"\nwrote {html_out}")


# ---------------------------------------------------------------------- export-timeline
@cli.command("export-timeline")
@graph_argument
@params_options
@json_option
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Output file (.json): Chrome/Perfetto trace-event format.",
)
@click.option(
    "--critical-only",
    is_flag=True,
    help="Only the vertices on a critical path (for graphs too large to view whole).",
)
def export_timeline(graph, graph_spec, params, as_json, output, critical_only) -> None:
    """The schedule at the given parameters as a Perfetto/Chrome trace: one track per rank,
    calc/send/recv slices, the critical path's slices and messages marked."""
    from llamp.lp.timeline import save_timeline

    check_output(output, (".json",))
    summary = save_timeline(graph, params, output, critical_only=critical_only)
    if as_json:
        emit_json(summary.as_dict() | {"output": str(output)})
        return
    click.echo(
        f"{graph.name}: {summary.slices:,} slices on {summary.ranks} rank tracks, "
        f"{summary.flows:,} critical messages, T = {format_ns(summary.runtime_ns)} → {output} "
        "(open it in ui.perfetto.dev or chrome://tracing)"
    )


# ---------------------------------------------------------------------- export-report
@cli.command("export-report")
@graph_argument
@params_options
@json_option
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Output file (.html): self-contained, no network access needed to view it.",
)
@settings_options("report")
@analysis_settings("report")
def export_report(graph, graph_spec, params, as_json, output, settings) -> None:
    """The report of llamp report as one self-contained HTML file (inline CSS and SVG plots)."""
    from llamp.lp.html_report import render_report

    check_output(output, (".html", ".htm"))
    data = ANALYSES["report"].run(graph, Inputs(params, engine="graph"), settings)
    _write_text(output, render_report(data))
    if as_json:
        emit_json(
            {
                "output": str(output),
                "runtime_ns": data.prediction.runtime_ns,
                "critical_latencies": len(data.critical.critical),
                "complete": data.critical.complete,
            }
        )
        return
    click.echo(f"{graph.name}: report → {output}")
