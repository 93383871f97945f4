"""The graph store interface (docs/architecture.md §Graph store): runs, Cypher, catalogue queries, selections, results.

:func:`open_store` picks the backend from a URI: ``None`` → ``$LLAMP_STORE``, else the
embedded LadybugDB store in ``$LLAMP_HOME/store``; ``bolt://…``/``neo4j://…`` → Neo4j 5 over
Bolt; anything else is the directory of an embedded store. Both backends share this class's
logic and differ only in how rows get in and out (:mod:`llamp.graphdb.ladybug`,
:mod:`llamp.graphdb.neo4j`).

Atomicity: a run is written with ``Run.complete = false`` and flipped to ``true`` last, in one
transaction with hiding the run it replaces; every read filters on the flag, so a run is
visible only when fully loaded (both backends load the rows themselves outside any long
transaction: the embedded one was twice as slow inside one, ``benchmarks/RESULTS.md``). A replaced run stays visible until its successor
is complete. Leftovers of a failed or killed load are removed by :meth:`GraphStore.cleanup`,
which opening a store runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from llamp.config import llamp_home, store_uri
from llamp.errors import InputError, LlampError, StoreError
from llamp.graph import ExecutionGraph
from llamp.graphdb import queries
from llamp.graphdb.locking import stderr_notify
from llamp.graphdb.readonly import check_read_only
from llamp.graphdb.schema import KEY_SHIFT, MAX_VERTICES
from llamp.graphdb.tables import (
    BATCH_ROWS,
    STREAMS,
    RunRows,
    encode_streams,
    graph_from_pages,
    graph_from_tables,
)

_ARROW_TYPES = {
    "int64": pa.int64(),
    "int32": pa.int32(),
    "int8": pa.int8(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "str": pa.string(),
}
_RUN_INFO_FIELDS = (
    "name",
    "id",
    "ranks",
    "vertices",
    "edges",
    "messages",
    "bytes",
    "format",
    "created",
    "has_t_trace",
    "has_label",
)
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class RunInfo:
    """A stored run: its name, store id and size; ``meta`` is the graph's metadata,
    ``checksum`` the content checksum its read-back must match."""

    name: str
    id: int
    ranks: int
    vertices: int
    edges: int
    messages: int
    bytes: int
    format: str
    created: str
    has_t_trace: bool
    has_label: bool
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    #: The content checksum taken when the run was stored (:mod:`llamp.graphdb.checksum`);
    #: empty for a run stored before checksums.
    checksum: str = field(default="", compare=False)

    def as_dict(self) -> dict[str, Any]:
        """The run's fields; the encoded CPU/NIC columns in ``meta`` are summarised, not shown."""
        out = asdict(self)
        if STREAMS in out["meta"]:
            meta = dict(out["meta"])
            meta[STREAMS] = sorted(meta[STREAMS])  # which columns are kept: ["cpu", "nic"]
            meta.pop("vertices_total", None)
            out["meta"] = meta
        return out


@dataclass(frozen=True)
class RunCheck:
    """What :meth:`GraphStore.check_run` found: ``status`` "ok" (the rows match the run's
    checksum), "damaged" or "unverified" (stored without a checksum); ``graph_file`` "ok",
    "rebuilt" (it was damaged and is written again from the verified rows), "removed"
    (damaged, and could not be written again) or "none"."""

    name: str
    status: str
    detail: str
    graph_file: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: A checksum no read-back matches: the Run node's metadata could not be read.
_UNREADABLE = "unreadable"


def _damaged(name: str, what: str) -> InputError:
    return InputError(
        f"run {name!r} is damaged: {what}; its stored rows cannot be trusted: store it again "
        f"(llamp ingest TRACE --name {name} --replace) or delete it (llamp runs delete "
        f"{name}); llamp runs check lists every damaged run"
    )


@dataclass(frozen=True)
class AnalysisInfo:
    """A stored analysis result: scalars and parameters as given to ``write_analysis``."""

    id: str
    run: str
    kind: str
    params: dict[str, Any]
    scalars: dict[str, Any]
    created: str
    vertices: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _json(value: Any) -> str:
    def default(obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            return obj.tolist()
        if isinstance(obj, np.generic):
            return obj.item()
        if hasattr(obj, "as_dict"):
            return obj.as_dict()
        return str(obj)

    return json.dumps(value, default=default, sort_keys=True)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def coerce(table: pa.Table, columns: dict[str, str]) -> pa.Table:
    """Cast the declared result columns to their dtypes (exact: a fractional float or an
    out-of-range decimal is an error, not a silent truncation)."""
    for name, dtype in columns.items():
        if name not in table.column_names:
            continue
        target = _ARROW_TYPES[dtype]
        column = table.column(name)
        if column.type != target:
            if pa.types.is_dictionary(column.type):
                column = column.cast(column.type.value_type)
            try:
                column = pc.cast(column, target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
                raise StoreError(f"column {name} cannot be read as {dtype}: {err}") from err
            table = table.set_column(table.column_names.index(name), name, column)
    return table


class GraphStore(ABC):
    """A graph store holding runs (execution graphs) and analysis results; see the module doc.

    Use as a context manager; ``location`` names the store in messages (never a password).
    """

    backend: ClassVar[str]

    def __init__(self, location: str) -> None:
        self.location = location

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.location}>"

    # ------------------------------------------------------------------ backend primitives
    @abstractmethod
    def close(self) -> None:
        """Release the database (and its lock or connections)."""

    @abstractmethod
    def _arrow(self, cypher: str, params: dict[str, Any]) -> pa.Table:
        """Run a read query the store itself issues; the result as an Arrow table."""

    @abstractmethod
    def _frame(self, cypher: str, params: dict[str, Any], *, write: bool) -> pd.DataFrame:
        """Run a user query (already checked); the result as a DataFrame."""

    def limit_query_time(self, seconds: float) -> None:  # noqa: B027 - optional to override
        """Stop later queries of this connection after ``seconds`` where the backend can
        (LadybugDB); elsewhere the worker's kill holds (:mod:`llamp.graphdb.worker`)."""

    @abstractmethod
    def _write(self, cypher: str, params: dict[str, Any] | None = None) -> None:
        """Run one write statement the store itself issues."""

    @abstractmethod
    def _new_run_id(self) -> int:
        """An id no run (complete or not) uses."""

    @abstractmethod
    def _load_run(
        self, row: dict[str, Any], rows: RunRows, replaces: int | None, progress: bool
    ) -> None:
        """Create the Run node (complete = false), load ops and edges batch by batch
        (:meth:`RunRows.batches`), then in one step set it complete and hide the run it
        ``replaces``. On failure leave nothing visible."""

    @abstractmethod
    def _load_results(self, row: dict[str, Any], table: pa.Table) -> None:
        """Create the Analysis node and its RESULT relationships (``table``: op ``key``,
        ``start_ns``, ``slack_ns``, ``critical``), complete last."""

    @abstractmethod
    def _delete_run_rows(self, run_id: int) -> None:
        """Delete a (hidden) run's analyses, ops, edges and finally its Run node."""

    @abstractmethod
    def _delete_analysis_rows(self, analysis_id: str) -> None:
        """Delete an analysis node and its RESULT relationships."""

    @abstractmethod
    def cleanup(self, older_than_s: float | None = None) -> list[str]:
        """Remove what failed or killed loads left behind; return the run names removed."""

    # ------------------------------------------------------------------ queries
    def query(
        self, cypher: str, params: dict[str, Any] | None = None, *, write: bool = False
    ) -> pd.DataFrame:
        """Run ad hoc Cypher. Read-only unless ``write``: a write clause raises QueryError.

        Runs are visible to ad hoc queries as stored: filter on ``Run.complete`` (and join ops
        by ``Op.run = Run.id``) to see only fully loaded runs.
        """
        if not isinstance(cypher, str) or not cypher.strip():
            raise InputError("empty Cypher query")
        if not write:
            check_read_only(cypher)
        return self._frame(cypher, dict(params or {}), write=write)

    def _catalogue(self, query: queries.Query, params: dict[str, Any]) -> pa.Table:
        text = query.text(self.backend)
        used = set(_PARAM.findall(text))
        missing = sorted(used - params.keys())
        if missing:
            raise InputError(
                f"query {query.name} needs parameter(s) {', '.join(missing)}: "
                + "; ".join(f"{p}: {query.params.get(p, 'run id')}" for p in missing)
            )
        return coerce(
            self._columns(text, {k: v for k, v in params.items() if k in used}, query.columns),
            query.columns,
        )

    def _columns(self, cypher: str, params: dict[str, Any], columns: dict[str, str]) -> pa.Table:
        """Run a catalogue query whose result columns are ``columns`` (a backend may fetch
        them column by column)."""
        return self._arrow(cypher, params)

    def run_query(self, name: str, run: str, **params: Any) -> pd.DataFrame:
        """Run the catalogue query ``name`` (:mod:`llamp.graphdb.queries`) on run ``run``."""
        info = self.run_info(run)
        query = queries.get(name)
        if "analysis" in params:
            self._check_analysis(params["analysis"], info)
        return self._catalogue(query, {"run": info.id, **params}).to_pandas()

    # ------------------------------------------------------------------ runs
    def _run_rows(self, where: str, params: dict[str, Any]) -> list[RunInfo]:
        table = self._arrow(
            f"MATCH (r:Run) WHERE r.complete = true{where} RETURN r.id AS id, r.name AS name, "
            "r.ranks AS ranks, r.vertices AS vertices, r.edges AS edges, r.messages AS messages, "
            "r.bytes AS bytes, r.format AS format, r.created AS created, "
            "r.has_t_trace AS has_t_trace, r.has_label AS has_label, r.meta AS meta "
            "ORDER BY name, id",
            params,
        )
        runs = []
        for row in table.to_pylist():
            if any(row[k] is None for k in ("id", "name", "ranks", "vertices", "edges")):
                continue  # not a run llamp stored (an ad hoc --write made it): not listed
            try:
                meta = json.loads(row["meta"] or "{}")
                checksum = str(meta.pop("checksum", ""))
            except (ValueError, AttributeError, TypeError):
                meta, checksum = {}, _UNREADABLE  # damaged: listed, and refused when read
            runs.append(
                RunInfo(
                    name=row["name"],
                    id=int(row["id"]),
                    ranks=int(row["ranks"]),
                    vertices=int(row["vertices"]),
                    edges=int(row["edges"]),
                    messages=int(row["messages"] or 0),
                    bytes=int(row["bytes"] or 0),
                    format=row["format"] or "",
                    created=row["created"] or "",
                    has_t_trace=bool(row["has_t_trace"]),
                    has_label=bool(row["has_label"]),
                    meta=meta,
                    checksum=checksum,
                )
            )
        return runs

    def list_runs(self) -> list[RunInfo]:
        """Every fully loaded run, by name."""
        return self._run_rows("", {})

    def has_run(self, name: str) -> bool:
        """True if a fully loaded run is called ``name``."""
        return bool(self._run_rows(" AND r.name = $name", {"name": name}))

    def run_info(self, name: str) -> RunInfo:
        """The run called ``name``; an unknown name is an InputError listing the known ones."""
        rows = self._run_rows(" AND r.name = $name", {"name": name})
        if not rows:
            known = [r.name for r in self.list_runs()]
            hint = f"stored runs: {', '.join(known)}" if known else "the store holds no runs"
            raise InputError(f"no run named {name!r} in {self.location} ({hint})")
        return rows[-1]

    #: Rows per loaded batch (:class:`RunRows`): the load holds one batch at a time.
    load_batch_rows: ClassVar[int] = BATCH_ROWS

    def put_run(
        self,
        graph: ExecutionGraph,
        name: str,
        *,
        replace: bool = False,
        progress: bool = False,
        graph_file: bool = False,
    ) -> RunInfo:
        """Store ``graph`` as run ``name``; visible only once fully loaded.

        An existing run of that name is an error unless ``replace``; then it stays visible
        until the new one is complete and is deleted afterwards. The rows go in batches of
        :attr:`load_batch_rows`, so the load's memory does not grow with the run.

        ``graph_file``: also write the run's graph file (:meth:`lowered_path`, the graph with
        its event graph for the default configuration) before the rows, so that
        :meth:`load_run` maps it from the start and never reads the run back from the
        database. As :func:`llamp.lp.lowered.save_graph` does, a big graph's columns are then
        replaced by the mapped ones (same values), and the load reads those. Best effort, as
        in :meth:`load_run`: a file that cannot be written is skipped (``llamp ingest --name``).
        """
        if not isinstance(name, str) or not name.strip() or any(c < " " for c in name):
            raise InputError(f"invalid run name {name!r}: use a non-empty printable name")
        existing = self._run_rows(" AND r.name = $name", {"name": name})
        if existing and not replace:
            raise InputError(
                f"run {name!r} already exists in {self.location}: pass replace=True "
                "(llamp ingest --replace) to overwrite it, or choose another name"
            )
        row = run_row(graph, name)
        saved = self._save_graph_file(graph, row, progress) if graph_file else None
        kept: Path | None = None
        run_id: int | None = None
        try:
            run_id = self._new_run_id()
            row["id"] = run_id
            if saved is not None:
                kept = self._keep_graph_file(saved, row)
            rows = RunRows(graph, run_id, self.load_batch_rows)
            self._load_run(row, rows, existing[0].id if existing else None, progress)
        except BaseException:
            if saved is not None:
                saved.unlink(missing_ok=True)
            if kept is not None:
                kept.unlink(missing_ok=True)
            if run_id is not None:
                self._discard(run_id)
            raise
        for old in existing:
            self._delete_run_rows(old.id)
            self._drop_graph_files(old.id)
        return self.run_info(name)

    def _save_graph_file(
        self, graph: ExecutionGraph, row: dict[str, Any], progress: bool
    ) -> Path | None:
        """Write ``graph`` as :meth:`load_run` would read it back (the stored metadata, CPU/NIC
        columns as columns) to a temporary file in the store's graph-file folder; None if
        that fails (a read-only home)."""
        from llamp.lp.lowered import save_graph

        meta = json.loads(row["meta"])
        meta.pop(STREAMS, None)
        meta.pop("vertices_total", None)
        meta.pop("checksum", None)
        folder = self._graph_files()
        path = folder / f".saving-{os.getpid()}-{uuid.uuid4().hex[:12]}.npz"
        own_meta, own_source = graph.meta, graph.source
        graph.meta = meta
        try:
            folder.mkdir(parents=True, exist_ok=True)
            save_graph(graph, path, progress=progress)
        except (OSError, LlampError):
            path.unlink(missing_ok=True)
            return None
        finally:
            graph.meta, graph.source = own_meta, own_source  # the file is renamed next
            graph.__dict__.pop("_lowered_file", None)
        return path

    def _keep_graph_file(self, saved: Path, row: dict[str, Any]) -> Path | None:
        """Rename the file :meth:`_save_graph_file` wrote to the run's :meth:`lowered_path`
        (known once the run has its id), or drop it."""
        info = RunInfo(**{k: row[k] for k in _RUN_INFO_FIELDS}, meta={})
        path = self.lowered_path(info)
        try:
            saved.replace(path)
        except OSError:
            saved.unlink(missing_ok=True)
            return None
        return path

    def load_run(self, name: str) -> ExecutionGraph:
        """The stored run ``name`` as an ExecutionGraph, identical to the one stored.

        The first read-back also writes the run, with its event graph for the default
        configuration, to a graph file the store keeps for it (:meth:`lowered_path`); later
        reads (any process) map that file instead of reading the database and lowering again.
        The file is best effort: if it cannot be written or read, the store is read; if its
        event graph cannot be used, the first analysis lowers again and writes it back.
        """
        info = self.run_info(name)
        cached = self.lowered_path(info)
        if cached.is_file():
            from llamp.ingest.npz import read_npz

            try:
                graph = read_npz(cached, lazy=True)
            except (InputError, OSError) as err:
                cached.unlink(missing_ok=True)  # damaged: read the store, write it again
                self._note(
                    f"the graph file kept for run {name!r} was damaged ({err}); rebuilding "
                    "it from the store"
                )
            else:
                self._keep_as_cache(graph, name)
                return graph
        graph = self._read_back(info)
        self._write_graph_file(graph, cached)
        return graph

    def _keep_as_cache(self, graph: ExecutionGraph, name: str) -> None:
        """Mark ``graph``'s file as the cache of run ``name``: a stored event graph found
        unusable when an analysis needs it is lowered again and written back, with one note
        (:func:`llamp.lp.lowered.renew`), so that only one process pays for it."""
        from llamp.lp.lowered import CACHE_NOTE

        notify = getattr(self, "notify", None) or stderr_notify
        graph.__dict__[CACHE_NOTE] = lambda text: notify(
            f"the graph file kept for run {name!r}: {text}"
        )

    def _read_back(self, info: RunInfo) -> ExecutionGraph:
        """Run ``info`` read from the database, checked against its checksum: a mismatch,
        or rows that do not make a graph, is an InputError "run NAME is damaged"."""
        if not (0 <= info.vertices <= MAX_VERTICES and 0 <= info.edges <= MAX_VERTICES << 6):
            raise _damaged(info.name, f"it claims {info.vertices} ops and {info.edges} edges")
        try:
            graph = graph_from_pages(
                info.ranks,
                self._run_pages(info),
                meta=info.meta,
                vertices=info.vertices,
                edges=info.edges,
                with_t_trace=info.has_t_trace,
                with_label=info.has_label,
            )
        except (InputError, StoreError, ValueError) as err:
            if isinstance(err, StoreError) and "damaged" not in str(err):
                raise  # the database cannot be read (a connection), not a damaged run
            raise _damaged(info.name, f"its rows do not make a graph ({err})") from None
        if info.checksum:
            from llamp.graphdb.checksum import run_checksum

            found = run_checksum(graph, info.__dict__, _json(info.meta))
            if found != info.checksum:
                raise _damaged(
                    info.name, "its rows do not match the checksum taken when it was stored"
                )
        return graph

    def _write_graph_file(self, graph: ExecutionGraph, path: Path) -> bool:
        """Best effort: write the run's graph file (a read-only home: analyses lower in
        memory, as before); True if it was written."""
        try:
            from llamp.lp.lowered import save_graph

            path.parent.mkdir(parents=True, exist_ok=True)
            save_graph(graph, path)
        except (OSError, LlampError):
            return False
        return True

    def _note(self, text: str) -> None:
        """One line to the person (the backend's ``notify``, else stderr)."""
        (getattr(self, "notify", None) or stderr_notify)(text)

    def check_run(self, name: str) -> RunCheck:
        """Verify run ``name``: its rows read from the database against the checksum taken
        when it was stored, and its graph file (every member's CRC, and its graph against the
        verified rows). A damaged graph file is written again from the rows."""
        info = self.run_info(name)
        try:
            graph = self._read_back(info)
        except InputError as err:
            return RunCheck(name, "damaged", str(err), "-")
        status, detail = "ok", "rows match the checksum"
        if not info.checksum:
            status = "unverified"
            detail = "stored without a checksum (by an older llamp): store it again to add one"
        cached = self.lowered_path(info)
        if not cached.is_file():
            return RunCheck(name, status, detail, "none")
        problem = _graph_file_problem(cached, graph)
        if problem is None:
            return RunCheck(name, status, detail, "ok")
        cached.unlink(missing_ok=True)
        rebuilt = self._write_graph_file(graph, cached)
        self._note(
            f"the graph file kept for run {name!r} was damaged ({problem}); "
            + ("rebuilt it from the store" if rebuilt else "removed it")
        )
        return RunCheck(name, status, detail, "rebuilt" if rebuilt else "removed")

    def lowered_path(self, info: RunInfo) -> Path:
        """The graph file kept for run ``info`` (``$LLAMP_HOME/lowered/<store>/run-<id>-….npz``):
        named by the store's location and the run's id, creation time and size, so a replaced
        or re-created run never reads another's file."""
        stamp = f"{info.id}:{info.created}:{info.vertices}:{info.edges}:{info.messages}"
        digest = hashlib.sha1(stamp.encode()).hexdigest()[:16]
        return self._graph_files() / f"run-{info.id}-{digest}.npz"

    def _graph_files(self) -> Path:
        """The folder of this store's graph files (one per store location)."""
        store = hashlib.sha1(str(self.location).encode()).hexdigest()[:16]
        return llamp_home() / "lowered" / store

    def _sweep_graph_files(self, older_than_s: float = 0.0) -> None:
        """Remove what killed writers left in this store's graph-file folder: the temporary
        files and scratch folders of processes that are no longer running (their names carry
        the writer's pid), and the graph files of runs that no longer exist, untouched for
        ``older_than_s`` (a concurrent writer names its file before its run appears)."""
        folder = self._graph_files()
        if not folder.is_dir():
            return
        runs = {
            int(i) for i in self._arrow("MATCH (r:Run) RETURN r.id AS id", {})["id"].to_pylist()
        }
        now = time.time()
        for path in folder.iterdir():
            pid = _writer_pid(path.name)
            try:
                if pid is not None:
                    dead = not _alive(pid)
                else:
                    match = _RUN_FILE.match(path.name)
                    dead = (
                        match is not None
                        and int(match.group(1)) not in runs
                        and now - path.stat().st_ctime >= older_than_s
                    )
                if dead:
                    if path.is_dir():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.unlink(missing_ok=True)
            except OSError:
                pass  # best effort: the next writer tries again

    def disk_bytes(self) -> dict[str, int]:
        """Bytes on disk: ``graph_files`` (this store's graph-file folder) and, for a store
        in a directory, ``database``."""
        return {"graph_files": disk_usage(self._graph_files())}

    def _drop_graph_files(self, run_id: int) -> None:
        """Remove the graph files of run ``run_id`` (deleted, or never completed)."""
        for old in self._graph_files().glob(f"run-{run_id}-*.npz"):
            old.unlink(missing_ok=True)

    #: Vertices per read-back page: one page of ops and the edges leaving them is held as
    #: Arrow rows at a time (:func:`graph_from_pages`).
    page_vertices: ClassVar[int] = 1 << 20

    def _run_pages(self, info: RunInfo) -> Iterator[tuple[pa.Table, pa.Table]]:
        """The run's ops and edges, page by page (vid ranges in ascending order)."""
        base = info.id << KEY_SHIFT
        for lo in range(0, info.vertices, self.page_vertices):
            hi = min(lo + self.page_vertices, info.vertices)
            params = {"run": info.id, "key_lo": base + lo, "key_hi": base + hi}
            yield (
                self._catalogue(queries.get("ops_page"), params),
                self._catalogue(queries.get("edges_page"), params),
            )

    def _discard(self, run_id: int) -> None:
        """Best effort: remove what a failed load of ``run_id`` wrote (cleanup() retries)."""
        try:
            self._delete_run_rows(run_id)
        except (StoreError, InputError):
            pass
        self._drop_graph_files(run_id)

    def delete_run(self, name: str) -> None:
        """Delete run ``name`` with its analyses; it disappears at once, the rows follow."""
        info = self.run_info(name)
        self._hide_run(info.id)
        self._delete_run_rows(info.id)
        self._drop_graph_files(info.id)

    def _hide_run(self, run_id: int) -> None:
        """Make a run invisible at once (before its rows are deleted)."""
        self._write("MATCH (r:Run {id: $id}) SET r.complete = false", {"id": run_id})

    # ------------------------------------------------------------------ selections
    def select(
        self,
        run: str,
        *,
        ranks: Iterable[int] | None = None,
        trace_window_ns: tuple[float, float] | None = None,
        analysis: str | None = None,
        start_window_ns: tuple[float, float] | None = None,
        slack_le_ns: float | None = None,
        collectives: tuple[int, int | None] | None = None,
        comm: int = 0,
    ) -> ExecutionGraph:
        """The subgraph of ``run`` kept by every given selection, as an ExecutionGraph.

        - ``ranks``: these ranks only;
        - ``trace_window_ns=(t0, t1)``: ops with trace time in ``[t0, t1)``;
        - ``analysis`` with ``start_window_ns=(t0, t1)``: ops starting in ``[t0, t1)`` under
          that stored analysis, and/or with ``slack_le_ns=ε``: the critical-path candidates;
        - ``collectives=(k, m)``: the iteration window from the k-th collective call on
          communicator ``comm`` (0 = MPI_COMM_WORLD, as numbered at ingest) up to, excluding,
          the m-th (``m=None``: to the end), per rank in program order.

        Semantics of :meth:`ExecutionGraph.subgraph`: a message whose partner is not kept
        becomes a zero-cost calc. Vertex ids are renumbered; ranks keep their ids.
        """
        info = self.run_info(run)
        chosen: list[tuple[str, dict[str, Any]]] = []
        described: list[str] = []
        if ranks is not None:
            rank_list = sorted({int(r) for r in ranks})
            bad = [r for r in rank_list if not 0 <= r < info.ranks]
            if bad or not rank_list:
                raise InputError(
                    f"ranks {bad or '(none)'} not in run {run!r} (0..{info.ranks - 1})"
                )
            chosen.append(("in_ranks", {"ranks": rank_list}))
            described.append(f"ranks {_ranges(rank_list)}")
        if trace_window_ns is not None:
            if not info.has_t_trace:
                raise InputError(
                    f"run {run!r} has no trace times (t_trace_ns): use an analysis window"
                )
            t0, t1 = _window(trace_window_ns, "trace_window_ns")
            chosen.append(("in_trace_window", {"t0_ns": t0, "t1_ns": t1}))
            described.append(f"trace time [{t0:g}, {t1:g}) ns")
        if start_window_ns is not None or slack_le_ns is not None:
            if analysis is None:
                raise InputError("start_window_ns and slack_le_ns need analysis=<analysis id>")
            self._check_analysis(analysis, info)
        elif analysis is not None:
            raise InputError(
                "analysis= selects nothing by itself: add start_window_ns or slack_le_ns"
            )
        if start_window_ns is not None:
            t0, t1 = _window(start_window_ns, "start_window_ns")
            chosen.append(("in_start_window", {"analysis": analysis, "t0_ns": t0, "t1_ns": t1}))
            described.append(f"start [{t0:g}, {t1:g}) ns under {analysis}")
        if slack_le_ns is not None:
            chosen.append(("near_critical", {"analysis": analysis, "eps_ns": float(slack_le_ns)}))
            described.append(f"slack ≤ {float(slack_le_ns):g} ns under {analysis}")
        if collectives is not None:
            lo, hi = self._iteration_bounds(info, collectives, comm)
            chosen.append(("in_seq_ranges", {"lo": lo, "hi": hi}))
            described.append(f"collectives [{collectives[0]}, {collectives[1]}) on comm {comm}")
        if not chosen:
            raise InputError(
                "select() needs at least one of ranks, trace_window_ns, "
                "start_window_ns, slack_le_ns, collectives"
            )
        first, first_params = chosen[0]
        ops = self._catalogue(queries.get(f"ops_{first}"), {"run": info.id, **first_params})
        edges = self._catalogue(queries.get(f"edges_{first}"), {"run": info.id, **first_params})
        for name, params in chosen[1:]:
            other = self._catalogue(queries.get(f"ops_{name}"), {"run": info.id, **params})
            keep = pc.is_in(ops.column("vid"), value_set=other.column("vid"))
            ops = ops.filter(keep)
        if len(chosen) > 1:
            vids = ops.column("vid")
            both = pc.and_(
                pc.is_in(edges.column("src"), value_set=vids),
                pc.is_in(edges.column("dst"), value_set=vids),
            )
            edges = edges.filter(both)
        meta = dict(info.meta)
        meta.update(name=f"{run}[{'; '.join(described)}]", parent=run, selection=described)
        return graph_from_tables(
            info.ranks,
            ops,
            edges,
            meta=meta,
            with_t_trace=info.has_t_trace,
            with_label=info.has_label,
        )

    def _iteration_bounds(
        self, info: RunInfo, collectives: tuple[int, int | None], comm: int
    ) -> tuple[list[int], list[int]]:
        from llamp.config import COLL_TAG_BASE, COMM_TAG_STRIDE

        k, m = collectives
        if k < 0 or (m is not None and m <= k):
            raise InputError(f"collective window [{k}, {m}) is empty: need 0 ≤ k < m")
        base = COLL_TAG_BASE + int(comm) * COMM_TAG_STRIDE
        tags = [base + k] + ([] if m is None else [base + m])
        firsts = self._catalogue(
            queries.get("collective_first_ops"), {"run": info.id, "tags": tags}
        ).to_pandas()
        lo = np.zeros(info.ranks, dtype=np.int64)
        hi = np.full(info.ranks, info.vertices, dtype=np.int64)
        for tag, bound in ((tags[0], lo), *(((tags[1], hi),) if m is not None else ())):
            rows = firsts[firsts["tag"] == tag]
            if rows.empty:
                raise InputError(
                    f"run {info.name!r} has no collective call #{tag - base} on communicator {comm}"
                )
            bound[rows["rank"].to_numpy()] = rows["first_seq"].to_numpy()
        members = firsts[firsts["tag"] == tags[0]]["rank"].to_numpy()
        outside = np.setdiff1d(np.arange(info.ranks), members)
        lo[outside] = hi[outside] = 0
        return lo.tolist(), hi.tolist()

    # ------------------------------------------------------------------ analyses
    def write_analysis(
        self,
        run: str,
        kind: str,
        params: dict[str, Any],
        scalars: dict[str, Any],
        *,
        per_vertex: pd.DataFrame | None = None,
    ) -> str:
        """Store an analysis of ``run``; return its id. ``per_vertex`` (columns ``vid``,
        ``start_ns``, ``slack_ns``, ``critical``) becomes RESULT relationships to the ops,
        which the catalogue's window and critical-path queries read."""
        info = self.run_info(run)
        if not isinstance(kind, str) or not _KIND.match(kind):
            raise InputError(f"invalid analysis kind {kind!r}: a word such as 'critical'")
        table = _result_table(info, per_vertex)
        analysis_id = f"{kind}-{uuid.uuid4().hex[:12]}"
        row = {
            "id": analysis_id,
            "run": info.id,
            "kind": kind,
            "params": _json(params),
            "scalars": _json(scalars),
            "created": _now(),
            "vertices": table.num_rows,
        }
        self._load_results(row, table)
        return analysis_id

    def _analysis_rows(self, where: str, params: dict[str, Any]) -> list[AnalysisInfo]:
        table = self._arrow(
            "MATCH (a:Analysis) WHERE a.complete = true" + where + " "
            "MATCH (r:Run) WHERE r.id = a.run AND r.complete = true "
            "RETURN a.id AS id, r.name AS run, a.kind AS kind, a.params AS params, "
            "a.scalars AS scalars, a.created AS created, a.vertices AS vertices "
            "ORDER BY created, id",
            params,
        )
        return [
            AnalysisInfo(
                id=row["id"],
                run=row["run"],
                kind=row["kind"],
                params=json.loads(row["params"]),
                scalars=json.loads(row["scalars"]),
                created=row["created"],
                vertices=int(row["vertices"]),
            )
            for row in table.to_pylist()
        ]

    def list_analyses(self, run: str | None = None) -> list[AnalysisInfo]:
        """Stored analyses (of ``run``, or all), oldest first."""
        if run is None:
            return self._analysis_rows("", {})
        info = self.run_info(run)
        return self._analysis_rows(" AND a.run = $run", {"run": info.id})

    def analysis_info(self, analysis_id: str) -> AnalysisInfo:
        rows = self._analysis_rows(" AND a.id = $id", {"id": analysis_id})
        if not rows:
            raise InputError(f"no analysis {analysis_id!r} in {self.location}")
        return rows[0]

    def _check_analysis(self, analysis_id: str, info: RunInfo) -> None:
        found = self.analysis_info(analysis_id)
        if found.run != info.name:
            raise InputError(
                f"analysis {analysis_id!r} belongs to run {found.run!r}, not {info.name!r}"
            )

    def load_analysis(self, analysis_id: str) -> tuple[AnalysisInfo, pd.DataFrame]:
        """An analysis and its per-vertex results (``vid, start_ns, slack_ns, critical``,
        by vid; empty if it has none)."""
        info = self.analysis_info(analysis_id)
        table = self._arrow(
            "MATCH (a:Analysis {id: $id})-[x:RESULT]->(o:Op) RETURN o.vid AS vid, "
            "x.start_ns AS start_ns, x.slack_ns AS slack_ns, x.critical AS critical",
            {"id": analysis_id},
        )
        table = coerce(
            table,
            {"vid": "int64", "start_ns": "float64", "slack_ns": "float64", "critical": "bool"},
        )
        frame = table.to_pandas().sort_values("vid", kind="stable").reset_index(drop=True)
        return info, frame

    def delete_analysis(self, analysis_id: str) -> None:
        """Delete a stored analysis and its per-vertex results."""
        self.analysis_info(analysis_id)
        self._write("MATCH (a:Analysis {id: $id}) SET a.complete = false", {"id": analysis_id})
        self._delete_analysis_rows(analysis_id)


def _graph_file_problem(path: Path, graph: ExecutionGraph) -> str | None:
    """What is wrong with the graph file ``path`` kept for ``graph``, or None: a member whose
    CRC fails (columns and stored event graphs alike), or columns other than ``graph``'s."""
    from llamp.graph import NpzMembers
    from llamp.ingest.npz import read_npz

    try:
        members = NpzMembers(path)
        for member in members.names():
            members.array(member)
            members.release([member])
        kept = read_npz(path, lazy=True)
    except (InputError, OSError) as err:
        return str(err)
    same = kept.equals(graph, labels=True) and (
        (kept.t_trace_ns is None) == (graph.t_trace_ns is None)
        and (graph.t_trace_ns is None or np.array_equal(kept.t_trace_ns, graph.t_trace_ns))
    )
    return None if same else "its graph differs from the run's verified rows"


def _window(window: Sequence[float], name: str) -> tuple[float, float]:
    try:
        t0, t1 = (float(x) for x in window)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a pair (t0, t1) of nanoseconds, got {window!r}") from None
    if not t0 < t1:
        raise InputError(f"{name} [{t0:g}, {t1:g}) is empty")
    return t0, t1


def _ranges(values: list[int]) -> str:
    parts, start = [], values[0]
    for a, b in zip(values, values[1:] + [None], strict=True):
        if b != a + 1:
            parts.append(str(start) if start == a else f"{start}-{a}")
            start = b
    return ",".join(parts)


def _result_table(info: RunInfo, per_vertex: pd.DataFrame | None) -> pa.Table:
    columns = ("vid", "start_ns", "slack_ns", "critical")
    if per_vertex is None:
        return pa.table(
            {
                "key": pa.array([], pa.int64()),
                "start_ns": pa.array([], pa.float64()),
                "slack_ns": pa.array([], pa.float64()),
                "critical": pa.array([], pa.bool_()),
            }
        )
    missing = [c for c in columns if c not in per_vertex.columns]
    if missing:
        raise InputError(
            f"per_vertex lacks column(s) {', '.join(missing)}; needs {', '.join(columns)}"
        )
    vid = per_vertex["vid"].to_numpy()
    if not np.issubdtype(vid.dtype, np.integer):
        raise InputError(f"per_vertex.vid must be integer vertex ids, got {vid.dtype}")
    vid = vid.astype(np.int64)
    bad = np.flatnonzero((vid < 0) | (vid >= info.vertices))
    if bad.size:
        raise InputError(
            f"per_vertex.vid {vid[bad[0]]} is not a vertex of run {info.name!r} "
            f"(0..{info.vertices - 1})"
        )
    if np.unique(vid).size != vid.size:
        raise InputError("per_vertex.vid has duplicate vertex ids")
    start = per_vertex["start_ns"].to_numpy(dtype=np.float64)
    slack = per_vertex["slack_ns"].to_numpy(dtype=np.float64)
    if np.isnan(start).any() or np.isnan(slack).any():
        raise InputError("per_vertex start_ns/slack_ns contain NaN")
    return pa.table(
        {
            "key": (np.int64(info.id) << KEY_SHIFT) + vid,
            "start_ns": start,
            "slack_ns": slack,
            "critical": per_vertex["critical"].to_numpy(dtype=bool),
        }
    )


def run_row(graph: ExecutionGraph, name: str) -> dict[str, Any]:
    """The ``Run`` properties of ``graph`` stored as ``name`` (all but ``id``): its size, its
    metadata as JSON with the CPU/NIC streams and the content checksum its read-back must
    match."""
    summary = graph.summary()
    meta = dict(graph.meta)
    meta["name"] = name
    streams = encode_streams(graph)
    if streams:
        meta[STREAMS] = streams
        meta["vertices_total"] = graph.num_vertices
    row = {
        "name": name,
        "ranks": graph.num_ranks,
        "vertices": graph.num_vertices,
        "edges": graph.num_edges,
        "messages": summary.messages,
        "bytes": summary.bytes,
        "format": str(graph.meta.get("format", "")),
        "created": _now(),
        "meta": _json(meta),
        "has_t_trace": graph.t_trace_ns is not None,
        "has_label": graph.label is not None,
    }
    from llamp.graphdb.checksum import run_checksum  # numba: only when a run is stored

    meta["checksum"] = run_checksum(graph, row, row["meta"])
    row["meta"] = _json(meta)
    return row


def open_store(
    uri: str | None = None, *, read_only: bool = False, notify: Any = None
) -> GraphStore:
    """Open the graph store at ``uri`` (see the module doc); create it on first use.

    ``read_only`` opens the store for reading only (the database refuses writes); any number
    of readers run beside one writer and see the last complete state. A writer of the embedded
    store waits for another writer to finish (:mod:`llamp.graphdb.locking`); ``notify(text)``
    tells the person why it waits (default: a line on stderr).
    """
    uri = uri if uri is not None else store_uri()
    if uri is None:
        uri = str(llamp_home() / "store")
    if uri.startswith(
        ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")
    ):
        from llamp.graphdb.neo4j import Neo4jStore

        return Neo4jStore(uri, read_only=read_only, notify=notify)
    if "://" in uri:
        raise InputError(
            f"unknown store URI {uri!r}: use a directory or bolt://user:pass@host:7687"
        )
    from llamp.graphdb.ladybug import LadybugStore

    return LadybugStore(Path(uri), read_only=read_only, notify=notify)


__all__ = ["AnalysisInfo", "GraphStore", "RunCheck", "RunInfo", "coerce", "open_store", "run_row"]


#: ``run-<id>-<digest>.npz``: a run's graph file (:meth:`GraphStore.lowered_path`).
_RUN_FILE = re.compile(r"^run-(\d+)-[0-9a-f]+\.npz$")
#: Names of the temporary files and folders a graph-file writer makes, with its pid.
_WRITER_TEMPORARIES = (
    re.compile(r"^\.saving-(\d+)-[0-9a-f]+\.npz$"),
    re.compile(r"\.npz\.(\d+)\.(?:tmp|lowering|spill)\.npz$"),
    re.compile(r"^\..*\.npz\.(\d+)\.[^.]+$"),  # the lowering's scratch folder
)


def _writer_pid(name: str) -> int | None:
    for pattern in _WRITER_TEMPORARIES:
        match = pattern.search(name)
        if match:
            return int(match.group(1))
    return None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def disk_usage(root: Path) -> int:
    """Bytes the files under ``root`` take on disk (0 when it does not exist)."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                pass
    return total
