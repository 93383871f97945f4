"""Graph-store subcommands: ``llamp runs`` (list, show, delete), ``llamp cypher``, ``llamp query``
(the named catalogue), ``llamp export`` and ``llamp neo4j-import-files`` (CSV for Neo4j's
offline importer).

The store is ``--store`` / ``$LLAMP_STORE`` (default: the embedded store in
``$LLAMP_HOME/store``). Ad hoc Cypher is read-only unless ``--write``.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from llamp.cli.base import check_output, cli, emit_json, json_option, json_text, table
from llamp.cli.base import table as table_text
from llamp.cli.ingest import write_graph_file
from llamp.config import format_flop_rate, format_ns, query_limits
from llamp.errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

#: Rows printed as a table before the rest is elided (``--json`` prints everything).
MAX_TABLE_ROWS = 200


def _open(ctx: click.Context, *, write: bool = False) -> Any:
    """The store, read-only unless ``write`` (readers never hold the writer's lock)."""
    from llamp.graphdb import open_store

    return open_store(ctx.obj.get("store_uri"), read_only=not write)


def _params(items: tuple[str, ...], max_depth: int) -> dict[str, Any]:
    """``("limit=5", "ranks=[0,1]", "name=x")`` → values read as JSON, else as strings. A
    value nested deeper than ``max_depth`` is refused before it is parsed."""
    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise InputError(f"--param {item!r}: expected NAME=VALUE, e.g. limit=10 or ranks=[0,1]")
        if _json_depth(value) > max_depth:
            raise InputError(
                f"--param {key.strip()}: the value nests more than {max_depth} deep (raise "
                "the limit with LLAMP_CYPHER_MAX_DEPTH)"
            )
        try:
            params[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            params[key.strip()] = value
    return params


def _json_depth(text: str) -> int:
    """How deep ``[`` and ``{`` nest in the JSON ``text`` (outside strings): one linear scan."""
    deepest = depth = 0
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif mark in "]}":
            depth = max(0, depth - 1)
    return deepest


def _print_frame(table: pa.Table, as_json: bool) -> None:
    if as_json:
        _print_json_rows(table)
        return
    frame = table.slice(0, MAX_TABLE_ROWS).to_pandas()
    if frame.empty:
        click.echo(f"(no rows; columns: {', '.join(map(str, frame.columns)) or '-'})")
        return
    rows = [tuple("" if v is None else v for v in row) for row in frame.itertuples(index=False)]
    click.echo(table_text(rows, tuple(str(c) for c in frame.columns)))
    if table.num_rows > MAX_TABLE_ROWS:
        click.echo(
            f"… {table.num_rows - MAX_TABLE_ROWS} more rows (use --json for all {table.num_rows})"
        )


def _print_json_rows(table: pa.Table) -> None:
    """The rows as ``emit_json`` prints a list, written a batch at a time: a big result
    never becomes one list of Python objects in this process."""
    from llamp.graphdb.worker import plain_rows

    if table.num_rows == 0:
        click.echo("[]")
        return
    click.echo("[")
    written = 0
    for batch in table.to_batches(max_chunksize=1 << 14):
        rows = plain_rows(batch)
        text = ",\n".join(
            "\n".join("  " + line for line in json_text(row).splitlines()) for row in rows
        )
        written += len(rows)
        click.echo(text + ("," if written < table.num_rows else ""))
    click.echo("]")


def _limits_options(func: Any) -> Any:
    """``--memory`` and ``--timeout``: the worker's limits (:func:`llamp.config.query_limits`)."""
    func = click.option(
        "--timeout",
        "timeout",
        default=None,
        metavar="DURATION",
        help="Stop the query after this long (e.g. 300s). Default 60s; env LLAMP_CYPHER_TIMEOUT.",
    )(func)
    return click.option(
        "--memory",
        "memory",
        default=None,
        metavar="SIZE",
        help="Memory the query may use (e.g. 4GiB). Default 2GiB; env LLAMP_CYPHER_MEMORY.",
    )(func)


param_option = click.option(
    "--param",
    "-p",
    "param_items",
    multiple=True,
    metavar="NAME=VALUE",
    help='Query parameter $NAME; VALUE is read as JSON (10, [0,1], "x") or else as text.',
)


# ---------------------------------------------------------------------------- runs
@cli.group("runs", invoke_without_command=True)
@json_option
@click.pass_context
def runs_group(ctx: click.Context, as_json: bool) -> None:
    """List the stored runs and the store's size on disk (or: runs show NAME, runs delete
    NAME, runs check [NAME])."""
    if ctx.invoked_subcommand is not None:
        return
    with _open(ctx) as store:
        runs = store.list_runs()
        location = store.location
        disk = store.disk_bytes()
    if as_json:
        emit_json(
            {
                "store": location,
                "runs": [{k: v for k, v in r.as_dict().items() if k != "meta"} for r in runs],
                "disk_bytes": {**disk, "total": sum(disk.values())},
            }
        )
        return
    if not runs:
        click.echo(f"no runs in {location} (store one with: llamp ingest TRACE --name NAME)")
        return
    click.echo(
        table(
            [
                (
                    r.name,
                    r.ranks,
                    r.vertices,
                    r.edges,
                    r.messages,
                    r.bytes,
                    r.format or "-",
                    r.created,
                )
                for r in runs
            ],
            ("name", "ranks", "vertices", "edges", "messages", "bytes", "format", "created"),
        )
    )
    parts = ", ".join(f"{k.replace('_', ' ')} {_size(v)}" for k, v in disk.items())
    click.echo(f"on disk: {_size(sum(disk.values()))} ({parts})")


def _size(n: int) -> str:
    return f"{n / 1e9:,.2f} GB" if n >= 1e9 else f"{n / 1e6:,.1f} MB"


@runs_group.command("show")
@click.argument("name")
@json_option
@click.pass_context
def runs_show(ctx: click.Context, name: str, as_json: bool) -> None:
    """Details of run NAME: size, source, per-rank summary and stored analyses."""
    with _open(ctx) as store:
        info = store.run_info(name)
        ranks = store.run_query("rank_summary", name)
        analyses = store.list_analyses(name)
    if as_json:
        emit_json(
            {
                "run": info.as_dict(),
                "ranks": ranks.to_dict(orient="records"),
                "analyses": [a.as_dict() for a in analyses],
            }
        )
        return
    meta = info.meta
    lines = [
        ("name", info.name),
        ("store id", info.id),
        ("format", info.format or "-"),
        ("created", info.created),
        ("ranks", info.ranks),
        ("vertices", info.vertices),
        ("edges", info.edges),
        ("messages", f"{info.messages} ({info.bytes} bytes)"),
        ("trace times", "yes" if info.has_t_trace else "no"),
        (
            "collectives",
            ", ".join(f"{k}={v}" for k, v in (meta.get("collectives") or {}).items()) or "-",
        ),
    ]
    if meta.get("flops_per_s") is not None:
        lines.append(("host speed", format_flop_rate(meta["flops_per_s"])))
    click.echo(table(lines, ("run", "")))
    click.echo()
    click.echo(
        table(
            [
                (
                    r.rank,
                    r.ops,
                    format_ns(r.calc_ns),
                    r.sends,
                    r.recvs,
                    r.bytes_sent,
                    r.bytes_received,
                )
                for r in ranks.itertuples(index=False)
            ],
            ("rank", "ops", "calc", "sends", "recvs", "bytes sent", "bytes received"),
        )
    )
    if analyses:
        click.echo()
        click.echo(
            table(
                [
                    (
                        a.id,
                        a.kind,
                        a.created,
                        a.vertices,
                        json.dumps(a.scalars, sort_keys=True)[:60],
                    )
                    for a in analyses
                ],
                ("analysis", "kind", "created", "per-vertex rows", "scalars"),
            )
        )


@runs_group.command("delete")
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_context
def runs_delete(ctx: click.Context, name: str, yes: bool, as_json: bool) -> None:
    """Delete run NAME and its stored analyses."""
    with _open(ctx, write=True) as store:
        info = store.run_info(name)
        if not yes and not click.confirm(
            f"delete run {name!r} ({info.vertices} vertices) from {store.location}?", err=True
        ):
            raise click.exceptions.Abort()
        store.delete_run(name)
    if as_json:
        emit_json({"deleted": name})
    else:
        click.echo(f"deleted run {name!r}")


@runs_group.command("check")
@click.argument("name", required=False)
@json_option
@click.pass_context
def runs_check(ctx: click.Context, name: str | None, as_json: bool) -> None:
    """Verify run NAME (every run without NAME): its rows in the store against the checksum
    taken when it was stored, and its graph file, which is rebuilt if damaged. Exit 2 if a
    run is damaged."""
    with _open(ctx) as store:
        names = [name] if name is not None else [r.name for r in store.list_runs()]
        checks = [store.check_run(n) for n in names]
    if as_json:
        emit_json([c.as_dict() for c in checks])
    elif not checks:
        click.echo("no runs to check")
    else:
        click.echo(
            table(
                [
                    (c.name, c.status, c.graph_file, c.detail if c.status != "damaged" else "")
                    for c in checks
                ],
                ("run", "rows", "graph file", "detail"),
            )
        )
    damaged = [c for c in checks if c.status == "damaged"]
    if len(damaged) == 1:
        raise InputError(damaged[0].detail)
    if damaged:
        raise InputError(
            f"{len(damaged)} runs are damaged ({', '.join(repr(c.name) for c in damaged)}): "
            "store each again (llamp ingest TRACE --name NAME --replace) or delete it "
            "(llamp runs delete NAME)"
        )


# ---------------------------------------------------------------------------- cypher, query
@cli.command("cypher")
@click.argument("query")
@param_option
@click.option("--write", is_flag=True, help="Allow clauses that change the store (CREATE, SET, …).")
@_limits_options
@json_option
@click.pass_context
def cypher_cmd(
    ctx: click.Context,
    query: str,
    param_items: tuple[str, ...],
    write: bool,
    memory: str | None,
    timeout: str | None,
    as_json: bool,
) -> None:
    """Run the Cypher QUERY on the store (read-only unless --write).

    Ops are (:Op {run, vid, rank, seq, kind, cost_ns, size, peer, tag, t_trace_ns, label})
    joined by :NEXT, :ISTART and :MSG {size}; Op.run is the id of (:Run {id, name, …}); only
    runs with complete = true are fully loaded. Example:
    llamp cypher "MATCH (r:Run {name: 'sweep3d'}) MATCH (o:Op) WHERE o.run = r.id
    RETURN o.rank AS rank, count(*) AS ops ORDER BY rank"

    The query runs in a worker process held to --memory and --timeout; its text may have
    LLAMP_CYPHER_MAX_CHARS characters (default 20000), nest brackets LLAMP_CYPHER_MAX_DEPTH
    deep (64), and a variable-length pattern must bound its hops: *1..N with N at most
    LLAMP_CYPHER_MAX_HOPS (10). docs/SECURITY.md has the details.
    """
    from llamp.graphdb.worker import run_query

    limits = query_limits(memory, timeout)
    params = _params(param_items, limits.max_depth)
    result = run_query(ctx.obj.get("store_uri"), query, params, write=write, limits=limits)
    _print_frame(result, as_json)


@cli.command("query")
@click.argument("name", required=False)
@click.option("--run", "run", default=None, help="The stored run to query.")
@param_option
@click.option("--list", "list_queries", is_flag=True, help="List the catalogue and exit.")
@click.option("--show", is_flag=True, help="Print the query's Cypher instead of running it.")
@_limits_options
@json_option
@click.pass_context
def query_cmd(
    ctx: click.Context,
    name: str | None,
    run: str | None,
    param_items: tuple[str, ...],
    list_queries: bool,
    show: bool,
    memory: str | None,
    timeout: str | None,
    as_json: bool,
) -> None:
    """Run the catalogue query NAME on --run RUN (llamp query --list shows the catalogue).

    It runs in a worker process held to --memory and --timeout, as llamp cypher does."""
    from llamp.graphdb.queries import CATALOGUE, get

    if list_queries or name is None:
        entries = [
            {"name": q.name, "params": q.params, "columns": list(q.columns), "doc": q.doc}
            for q in CATALOGUE.values()
        ]
        if as_json:
            emit_json(entries)
        else:
            click.echo(
                table(
                    [(e["name"], ", ".join(e["params"]) or "-", e["doc"][:70]) for e in entries],
                    ("query", "params (besides run)", "what"),
                )
            )
        return
    query = get(name)
    if show:
        texts = {"ladybug": query.text("ladybug"), "neo4j": query.text("neo4j")}
        if as_json:
            emit_json({"name": query.name, "params": query.params, "cypher": texts})
        elif query.portable:
            click.echo(query.cypher)
        else:
            click.echo("\n".join(f"-- {b}\n{t}" for b, t in texts.items()))
        return
    if run is None:
        raise InputError(f"llamp query {name} needs --run RUN")
    from llamp.graphdb.worker import run_query

    limits = query_limits(memory, timeout)
    params = _params(param_items, limits.max_depth)
    result = run_query(
        ctx.obj.get("store_uri"), catalogue=name, run=run, params=params, limits=limits
    )
    _print_frame(result, as_json)


# ---------------------------------------------------------------------------- export
@cli.command("export")
@click.argument("run")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Output file: .npz (exact, with metadata) or .goal (Schedgen/LogGOPSim).",
)
@json_option
@click.pass_context
def export_cmd(ctx: click.Context, run: str, output: Path, as_json: bool) -> None:
    """Write the stored RUN to a graph file."""
    check_output(output)
    with _open(ctx) as store:
        graph = store.load_run(run)
    rounding = write_graph_file(graph, output)
    if as_json:
        payload = {"run": run, "output": str(output), "vertices": graph.num_vertices}
        if rounding is not None:
            payload["goal_rounding"] = rounding
        emit_json(payload)
    else:
        click.echo(f"run {run!r}: {graph.num_vertices} vertices → {output}")
        if rounding is not None:
            click.echo(f"{output}: {rounding['note']}")


# ---------------------------------------------------------------------------- neo4j-import
@cli.command("neo4j-import-files")
@click.argument("graphs", nargs=-1, required=True, metavar="GRAPH[=NAME]...")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the CSV files (created).",
)
@json_option
@click.pass_context
def neo4j_import_files_cmd(
    ctx: click.Context, graphs: tuple[str, ...], output: Path, as_json: bool
) -> None:
    """Write GRAPHs (trace, .npz, .goal or stored run) as CSV files for Neo4j's offline importer.

    Each becomes a run named NAME (default: the trace's name), stored as an ingest over Bolt
    stores it. The printed ``neo4j-admin database import full`` command builds a new database
    from them (the DBMS stopped); the first writable ``llamp --store bolt://…`` creates the
    constraints. Faster than ingesting millions of ops over Bolt (benchmarks/RESULTS.md).
    """
    from llamp.cli.base import load_graph_spec
    from llamp.graphdb.neo4jimport import write_import_files
    from llamp.ingest import default_name

    runs = []
    for spec in graphs:
        path, sep, name = spec.rpartition("=")
        if not sep or Path(spec).exists():
            path, name = spec, ""
        graph = load_graph_spec(path, store_uri=ctx.obj.get("store_uri"))
        runs.append((graph, name or (default_name(path) if Path(path).exists() else path)))
    files = write_import_files(runs, output)
    command = ["neo4j-admin", *files.admin_args()]
    if as_json:
        emit_json({"runs": list(files.runs), "output": str(output), "command": command})
        return
    for (graph, name), (_, path) in zip(runs, files.nodes[1:], strict=True):
        click.echo(f"run {name!r}: {graph.num_vertices} ops, {graph.num_edges} edges → {path}")
    click.echo("import them into a new database (the DBMS stopped, database neo4j replaced):")
    click.echo("  " + shlex.join(command))
