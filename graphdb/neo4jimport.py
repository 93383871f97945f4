"""Neo4j's offline bulk path: runs as CSV files for ``neo4j-admin database import full``.

Over Bolt a run goes in as ``UNWIND`` transactions (:mod:`llamp.graphdb.neo4j`); Neo4j's own
advice for millions of nodes is the offline importer, which writes the store files directly
(no transactions, no index updates per row) into a new database of a stopped DBMS.
:func:`write_import_files` writes the runs exactly as the Bolt backend stores them (the same
``Run``, ``Op`` and relationship properties, the same keys and checksums, ``complete = true``)
from the store's Arrow rows (:class:`~llamp.graphdb.tables.RunRows`) with Arrow's CSV writer,
a batch at a time: no Python object per row. The database then opens as any llamp store; the
first writable :func:`~llamp.graphdb.open_store` creates the constraints and indexes
(:data:`~llamp.graphdb.schema.NEO4J_DDL`), after which ingests over Bolt add runs to it.

The importer builds a whole database: the runs written together are all it holds (Community
has one user database, ``neo4j``; Enterprise can import next to others and ``CREATE DATABASE``).
:meth:`ImportFiles.admin_args` is the command line after ``neo4j-admin``;
:func:`llamp.graphdb.neo4jserver.admin_import` runs it with the test launcher's jars.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from llamp.errors import InputError, StoreError
from llamp.graph import ExecutionGraph
from llamp.graphdb.schema import EDGE_TYPES, OP, RUN
from llamp.graphdb.store import run_row
from llamp.graphdb.tables import RunRows

#: Header type of each Arrow type (the importer's property types; ``key`` is the node ID).
_TYPES = {
    pa.int8(): "long",
    pa.int16(): "long",
    pa.int32(): "long",
    pa.int64(): "long",
    pa.float64(): "double",
    pa.bool_(): "boolean",
    pa.string(): "string",
}
_OPTIONS = pacsv.WriteOptions(include_header=False, quoting_style="needed")


@dataclass(frozen=True)
class ImportFiles:
    """The CSV files of one import: ``nodes`` and ``relationships`` as (label or type, file)."""

    folder: Path
    nodes: tuple[tuple[str, Path], ...]
    relationships: tuple[tuple[str, Path], ...]
    #: A string holds a line break: the importer must parse quoted fields across lines.
    multiline: bool
    #: The run names, in run-id order (ids 1, 2, …).
    runs: tuple[str, ...]

    def admin_args(self, database: str = "neo4j") -> list[str]:
        """``neo4j-admin`` arguments importing these files into ``database`` (replacing it:
        the DBMS must be stopped, or the database offline)."""
        return [
            "database",
            "import",
            "full",
            "--id-type=INTEGER",
            *(f"--nodes={label}={path}" for label, path in self.nodes),
            *(f"--relationships={kind}={path}" for kind, path in self.relationships),
            *(["--multiline-fields=true"] if self.multiline else []),
            f"--report-file={self.folder / 'import.report'}",  # else in the working directory
            "--overwrite-destination=true",
            database,
        ]


def write_import_files(runs: Sequence[tuple[ExecutionGraph, str]], folder: Path) -> ImportFiles:
    """Write ``runs`` (graph, run name) as importer CSV files in ``folder`` (created; files of
    an earlier import there are replaced). Run ids are 1, 2, … in the given order."""
    names = [name for _, name in runs]
    if not names:
        raise InputError("no runs to write for neo4j-admin import")
    if len(set(names)) != len(names):
        raise InputError(f"run names must be unique in one import: {names}")
    folder.mkdir(parents=True, exist_ok=True)
    touched = int(datetime.now(UTC).timestamp() * 1000)
    run_rows = []
    for run_id, (graph, name) in enumerate(runs, start=1):
        if not isinstance(name, str) or not name.strip() or any(c < " " for c in name):
            raise InputError(f"invalid run name {name!r}: use a non-empty printable name")
        row = run_row(graph, name)
        run_rows.append({"id": run_id, **row, "complete": True, "touched": touched})
    run_table = pa.Table.from_pylist(run_rows)
    writers = _Writers(folder)
    writers.write(RUN, run_table)
    for run_id, (graph, _name) in enumerate(runs, start=1):
        for table_name, table in RunRows(graph, run_id).batches():
            if table_name == OP:
                drop = [c for c in ("t_trace_ns", "label") if table.column(c).null_count]
                writers.write(OP, table.drop_columns(drop), run_id)
            else:
                writers.write(table_name, table, run_id)
    writers.close()
    files = list(writers.files.values())
    return ImportFiles(
        folder=folder,
        nodes=tuple((label, path) for label, path in files if label in (RUN, OP)),
        relationships=tuple((kind, path) for kind, path in files if kind in EDGE_TYPES.values()),
        multiline=writers.multiline,
        runs=tuple(names),
    )


class _Writers:
    """One CSV file per node label and relationship type, the header line first; each run's
    ``Op`` rows have their own file (a run without trace times or labels has fewer columns),
    which the importer takes as its own ``--nodes`` group."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        #: file key → (label or type, path), in the order first written
        self.files: dict[str, tuple[str, Path]] = {}
        self._open: dict[str, tuple[Any, pacsv.CSVWriter, pa.Schema]] = {}
        self.multiline = False

    def write(self, name: str, table: pa.Table, run_id: int = 0) -> None:
        key = f"{name}-{run_id}" if name == OP else name
        if key not in self._open:
            path = self.folder / f"{key.lower()}.csv"
            handle = path.open("wb")
            handle.write((",".join(_header(name, table.schema)) + "\n").encode())
            writer = pacsv.CSVWriter(handle, table.schema, write_options=_OPTIONS)
            self._open[key] = (handle, writer, table.schema)
            self.files[key] = (name, path)
        _check(name, table)
        handle, writer, schema = self._open[key]
        self.multiline = self.multiline or _has_line_break(table)
        writer.write_table(table.cast(schema))

    def close(self) -> None:
        for handle, writer, _ in self._open.values():
            writer.close()
            handle.close()


def _header(name: str, schema: pa.Schema) -> list[str]:
    """The importer's header: ``key:ID`` for ops (the node ID, stored as property ``key``),
    ``:START_ID``/``:END_ID`` for a relationship's two op keys, ``name:type`` otherwise."""
    out = []
    for field in schema:
        if name == OP and field.name == "key":
            out.append("key:ID")
        elif name not in (RUN, OP) and field.name in ("from", "to"):
            out.append(":START_ID" if field.name == "from" else ":END_ID")
        else:
            kind = _TYPES.get(field.type)
            if kind is None:
                raise StoreError(f"no importer type for {name}.{field.name} ({field.type})")
            out.append(f"{field.name}:{kind}")
    return out


def _check(name: str, table: pa.Table) -> None:
    """A NaN or infinite float has no CSV spelling the importer reads back as the same value."""
    for field in table.schema:
        if (
            field.type == pa.float64()
            and not pc.all(pc.is_finite(table.column(field.name))).as_py()
        ):
            raise InputError(
                f"{name}.{field.name} holds a NaN or infinite value, which the importer's CSV "
                "cannot carry: store this run over Bolt"
            )


def _has_line_break(table: pa.Table) -> bool:
    for field in table.schema:
        if field.type == pa.string():
            column = table.column(field.name)
            if pc.any(pc.match_substring_regex(column, r"[\r\n]")).as_py():
                return True
    return False


__all__ = ["ImportFiles", "write_import_files"]
