"""The embedded backend: LadybugDB (the maintained fork of Kùzu), zero set-up, one file.

The store is a directory holding the database file ``graph.lbug``. A run is loaded with one
``COPY … FROM`` per table (``Op``, then each relationship type) from a Parquet file that its
rows are written to batch by batch (:class:`~llamp.graphdb.tables.RunRows`; never row-by-row),
each ``COPY`` committed on its own: wrapping them in one transaction routes every row through
the write-ahead log and doubled the load time (43.7 s instead of 19.8 s for 10^7 vertices,
``benchmarks/RESULTS.md``). Why files, one per table, and a reopen after each ``COPY``
(measured, ``benchmarks/RESULTS.md``, "10^8 into the embedded store"): a ``COPY`` into a
relationship table that already holds rows costs time and memory in proportion to the table
(a batch per ``COPY`` at 3·10^7 vertices: 377 s and 7.3 GB, one file per table: 75 s and
5.0 GB), and LadybugDB keeps what a ``COPY`` built (primary-key index, ~80 B per op) until the
database is closed, much of it outside its buffer pool (whose size ``$LLAMP_STORE_BUFFER_POOL``
sets; LadybugDB's default, ~80 % of the memory, unless set: a 2 GiB pool cannot ``COPY`` 10^8
ops). Atomicity comes from
the ``Run.complete`` flag instead, as in the Neo4j backend: the Run node is created incomplete,
the ops and edges follow, and one small transaction marks it complete (and hides the run it
replaces). Every read filters on the flag; a failed load is deleted at once, a killed one by
:meth:`LadybugStore.cleanup` when the store is next opened for writing (with a message) —
LadybugDB lets one process write a database at a time, and llamp's writers queue on a lock
file (:mod:`llamp.graphdb.locking`), so an incomplete run found by a writer is dead. Readers
open the file read-only beside the writer and never clean up. Deleting is slow in LadybugDB
(about 27 s per 10^6 ops with their edges, measured here), loading fast.

Runs are read back (when their graph file is missing) through LadybugDB's native Arrow
collector (``query_as_arrow``), one query per relationship type: 3× faster than ``execute`` +
``get_as_arrow`` on 10^7 ops; in pages of :attr:`page_vertices` ops.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from llamp.config import store_buffer_pool_bytes
from llamp.errors import QueryError, StoreError
from llamp.graphdb import queries
from llamp.graphdb.locking import Notify, WriterLock, stderr_notify, writer_active
from llamp.graphdb.schema import EDGE_TYPES, KEY_SHIFT, LADYBUG_DDL, RESULT
from llamp.graphdb.store import GraphStore, RunInfo, coerce, disk_usage
from llamp.graphdb.tables import RunRows
from llamp.progress import ticking

#: The database file inside the store directory.
DB_FILE = "graph.lbug"
#: Scratch folders of loads in progress inside the store directory (``.load-<run id>-…``): the
#: Parquet files a run's tables are copied from. A writer finds only dead ones (cleanup).
SCRATCH_PREFIX = ".load-"

_QUERY_ERRORS = (
    "Parser exception",
    "Binder exception",
    "Catalog exception",
    "Runtime exception",
    "Conversion exception",
    "Overflow exception",
)
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
#: Rows per chunk of a native Arrow result.
_ARROW_CHUNK_ROWS = 1 << 20
_LOCK = re.compile(r"Could not set lock on file.*?(?:held by PID (\d+))?", re.DOTALL)
#: A read-only open that a writer's checkpoint (running, or killed half-way) blocks; the
#: last alternative is the instant a checkpoint has truncated the write-ahead log.
_RECOVERY = re.compile(
    r"checkpoint recovery is pending|replay shadow pages|Could not set lock"
    r"|Reading past the end of the file .+?\.wal with size 0"
)


def _return_freed_memory() -> None:
    """Give the heap pages freed by a closed database back to the system (glibc's
    ``malloc_trim``; elsewhere nothing): glibc keeps them otherwise, and a 10^8-vertex load
    then holds what each ``COPY`` freed on top of what the next one needs."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


def _string_literal(path: Path) -> str:
    """``path`` as a Cypher string literal (``COPY … FROM`` takes no parameter for a file)."""
    return "'" + str(path).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _import_ladybug() -> Any:
    try:
        import ladybug
    except ImportError as err:  # pragma: no cover - ladybug is a hard dependency
        raise StoreError(f"the embedded store needs the 'ladybug' package: {err}") from err
    return ladybug


class LadybugStore(GraphStore):
    """A LadybugDB store in ``directory`` (created on first use)."""

    backend = "ladybug"

    #: How long a reader retries a failed read-only open while a writer holds the store.
    reader_wait_s: float = 600.0

    def __init__(
        self, directory: Path, *, read_only: bool = False, notify: Notify | None = None
    ) -> None:
        super().__init__(str(directory))
        self._ladybug = _import_ladybug()
        self._closed = True
        self._lock: WriterLock | None = None
        self.read_only = read_only
        self.notify = notify or stderr_notify
        self.path = directory if directory.is_file() else directory / DB_FILE
        if not self.path.exists():
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise StoreError(
                    f"cannot create the store directory {directory}: {err.strerror or err}; "
                    "point --store or LLAMP_HOME at a writable directory"
                ) from None
        if not os.access(self.path.parent, os.W_OK | os.X_OK) and not read_only:
            raise StoreError(
                f"the store directory {self.path.parent} is not writable; point --store or "
                "LLAMP_HOME at a writable directory"
            )
        if read_only and not self.path.exists():
            LadybugStore(directory, notify=notify).close()  # create the schema once
        if read_only:
            self._open_reader()
        else:
            self._open_writer()

    def _open_writer(self) -> None:
        self._lock = WriterLock(self.path.parent, self.notify)
        self._lock.acquire()
        try:
            self._db, self._conn = self._open_database(read_only=False)
            self._closed = False
            for statement in LADYBUG_DDL:
                self._execute(statement, {})
            self.cleanup()
        except BaseException:
            self.close()
            raise

    def _open_database(self, *, read_only: bool) -> tuple[Any, Any]:
        """Open the file; while a foreign process holds it for writing, retry (with a message)."""
        announced = False
        deadline = time.monotonic() + self.reader_wait_s
        while True:
            try:
                db = self._ladybug.Database(
                    str(self.path),
                    read_only=read_only,
                    buffer_pool_size=store_buffer_pool_bytes(),
                )
                return db, self._ladybug.Connection(db)
            except RuntimeError as err:
                text = str(err)
                if not _LOCK.search(text) or time.monotonic() > deadline:
                    raise self._open_error(err) from None
                if not announced:
                    self.notify(f"the store {self.location} is held by another process; waiting…")
                    announced = True
                time.sleep(0.2)

    def _open_reader(self) -> None:
        """Read-only open; retried while a writer checkpoints, recovered if a writer died."""
        announced = recovered = False
        deadline = time.monotonic() + self.reader_wait_s
        while True:
            try:
                self._db, self._conn = self._open_database(read_only=True)
                self._closed = False
                return
            except StoreError as err:
                if not _RECOVERY.search(str(err)) or time.monotonic() > deadline:
                    raise
                if writer_active(self.path.parent):
                    if not announced:
                        self.notify(
                            f"the store {self.location} is being written (checkpoint); "
                            "reading as soon as the writer lets go…"
                        )
                        announced = True
                    time.sleep(0.2)
                    continue
                if recovered:
                    raise
                self._recover(err)
                recovered = True

    def _recover(self, err: StoreError) -> None:
        """A writer died mid-checkpoint: open read-write once, under the writer's lock, so
        LadybugDB completes its recovery (the next real writer removes incomplete runs)."""
        if not os.access(self.path.parent, os.W_OK | os.X_OK):
            raise StoreError(
                f"the store {self.location} needs recovery after a killed writer, and this "
                "process may not write it: open it once for writing (e.g. llamp cypher "
                "--write 'RETURN 1') as its owner"
            ) from None
        self.notify(f"recovering the store {self.location} after a killed writer…")
        with WriterLock(self.path.parent, self.notify):
            db, conn = self._open_database(read_only=False)
            conn.close()
            db.close()

    def _open_error(self, err: RuntimeError) -> StoreError:
        text = str(err)
        lock = _LOCK.search(text)
        if lock:
            holder = f" (process {lock.group(1)})" if lock.group(1) else ""
            return StoreError(
                f"the store {self.location} is in use by another llamp process{holder}, e.g. a "
                "load that is still running; retry when it has finished, or open it read-only"
            )
        if "Permission denied" in text or "Read-only file system" in text:
            return StoreError(
                f"cannot write the store {self.path}: {text}; point --store or "
                "LLAMP_HOME at a writable directory"
            )
        return StoreError(f"cannot open the store {self.path}: {text}")

    def close(self) -> None:
        try:
            if not getattr(self, "_closed", True):
                self._closed = True
                self._conn.close()
                self._db.close()
        finally:
            lock = getattr(self, "_lock", None)
            if lock is not None:
                lock.release()

    def limit_query_time(self, seconds: float) -> None:
        self._conn.set_query_timeout(max(1, int(seconds * 1000)))

    # ------------------------------------------------------------------ execution
    def _execute(self, cypher: str, params: dict[str, Any]) -> Any:
        if self._closed:
            raise StoreError(f"the store {self.location} is closed")
        try:
            result = self._conn.execute(cypher, params)
        except RuntimeError as err:
            text = str(err)
            if text.startswith(_QUERY_ERRORS):
                raise QueryError(f"Cypher error: {text}") from None
            if "read-only" in text.lower() or "read only" in text.lower():
                raise QueryError(f"this query writes, and was run read-only: {text}") from None
            raise StoreError(f"{self.location}: {text}") from None
        if isinstance(result, list):  # several statements: the last one's result
            result = result[-1]
        return result

    def _arrow(self, cypher: str, params: dict[str, Any]) -> pa.Table:
        result = self._execute(cypher, params)
        columns = result.get_column_names()
        if result.get_num_tuples() == 0:
            return pa.table({c: pa.nulls(0) for c in columns})
        return result.get_as_arrow(-1)

    def _frame(self, cypher: str, params: dict[str, Any], *, write: bool) -> pd.DataFrame:
        if write and self.read_only:
            raise QueryError(f"the store {self.location} was opened read-only")
        if write or self.read_only:
            return self._arrow(cypher, params).to_pandas()
        # A read on a writer's connection: the database refuses writes in this transaction.
        self._execute("BEGIN TRANSACTION READ ONLY", {})
        try:
            frame = self._arrow(cypher, params).to_pandas()
        except BaseException:
            self._rollback()
            raise
        self._execute("COMMIT", {})
        return frame

    def _rollback(self) -> None:
        try:
            self._execute("ROLLBACK", {})
        except (QueryError, StoreError):
            pass

    def _write(self, cypher: str, params: dict[str, Any] | None = None) -> None:
        if self.read_only:
            raise StoreError(f"the store {self.location} was opened read-only")
        self._execute(cypher, params or {})

    def _native_arrow(self, cypher: str, bounds: dict[str, int]) -> pa.Table:
        """``cypher`` through the native Arrow collector, which takes no parameters: the
        integer ``bounds`` are written into the text. Null strings come back empty, so only
        columns the run is known to hold are read from the result."""
        if self._closed:
            raise StoreError(f"the store {self.location} is closed")
        text = _PARAM.sub(lambda m: str(int(bounds[m.group(1)])), cypher)
        try:
            return self._conn.query_as_arrow(text, _ARROW_CHUNK_ROWS).get_as_arrow()
        except RuntimeError as err:
            raise StoreError(f"{self.location}: {err}") from None

    def _run_pages(self, info: RunInfo) -> Iterator[tuple[pa.Table, pa.Table]]:
        base = info.id << KEY_SHIFT
        for lo in range(0, info.vertices, self.page_vertices):
            hi = min(lo + self.page_vertices, info.vertices)
            bounds = {"key_lo": base + lo, "key_hi": base + hi}
            ops = self._native_arrow(queries.get("ops_page").text(self.backend), bounds)
            edges = [self._native_arrow(text, bounds) for text in queries.PAGE_EDGES.values()]
            yield (
                coerce(ops, queries.OP_COLUMNS),
                coerce(pa.concat_tables(edges, promote_options="permissive"), queries.EDGE_COLUMNS),
            )

    # ------------------------------------------------------------------ loading
    def _new_run_id(self) -> int:
        top = self._arrow("MATCH (r:Run) RETURN max(r.id) AS m", {}).column("m")[0].as_py()
        return 1 if top is None else int(top) + 1

    def _transaction(
        self, steps: list[tuple[str, dict[str, Any]]], bar: tqdm | None, sizes: list[int]
    ) -> None:
        """Run ``steps`` in one transaction; roll back on any failure or interrupt."""
        self._write("BEGIN TRANSACTION")
        try:
            for (cypher, params), size in zip(steps, sizes, strict=True):
                self._execute(cypher, params)
                if bar is not None:
                    bar.update(size)
            self._execute("COMMIT", {})
        except BaseException:
            try:
                self._execute("ROLLBACK", {})
            except (QueryError, StoreError):
                pass
            raise

    def _load_run(
        self, row: dict[str, Any], rows: RunRows, replaces: int | None, progress: bool
    ) -> None:
        """Incomplete Run node, then one auto-committed ``COPY`` per table from a Parquet file
        written batch by batch (ops, then each relationship type; ``COPY`` appends to the
        tables other runs share), the database reopened after each, then the flags flipped
        in one transaction (module doc). On failure :meth:`GraphStore.put_run` deletes what
        was written; after a kill, :meth:`cleanup` does (and removes the scratch files)."""
        created = dict(row, complete=False, touched=int(time.time() * 1000))
        self._write("CREATE (r:Run {" + ", ".join(f"{k}: ${k}" for k in created) + "})", created)
        _return_freed_memory()  # what reading the trace and saving its graph file freed
        scratch = Path(
            tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{row['id']}-", dir=self.path.parent)
        )
        try:
            with (
                tqdm(
                    total=2 * rows.num_rows,
                    desc=f"storing {row['name']}",
                    unit="row",
                    unit_scale=True,
                    disable=not progress,
                    leave=False,
                ) as bar,
                ticking(bar),
            ):
                for table_name, batches in itertools.groupby(rows.batches(), itemgetter(0)):
                    bar.set_postfix_str(f"writing {table_name}")
                    path = scratch / f"{table_name}.parquet"
                    written = 0
                    with contextlib.ExitStack() as files:
                        writer = None
                        for _, table in batches:
                            if writer is None:
                                writer = files.enter_context(pq.ParquetWriter(path, table.schema))
                            writer.write_table(table)
                            written += table.num_rows
                            bar.update(table.num_rows)
                    bar.set_postfix_str(f"copying {table_name}")
                    self._write(f"COPY {table_name} FROM {_string_literal(path)}")
                    path.unlink()
                    self._reopen()
                    bar.update(written)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        finish = [("MATCH (r:Run {id: $id}) SET r.complete = true", {"id": row["id"]})]
        if replaces is not None:
            finish.append(("MATCH (r:Run {id: $id}) SET r.complete = false", {"id": replaces}))
        self._transaction(finish, None, [0] * len(finish))

    def _reopen(self) -> None:
        """Close and reopen the database (the writer's lock stays held): LadybugDB keeps what a
        ``COPY`` built (the primary-key index, ~100 B per op) outside its buffer pool until
        the database is closed, so a big run's load would otherwise hold it all at once."""
        self._closed = True
        self._conn.close()
        self._db.close()
        _return_freed_memory()
        self._db, self._conn = self._open_database(read_only=False)
        self._closed = False

    def _load_results(self, row: dict[str, Any], table: pa.Table) -> None:
        created = dict(row, complete=False, touched=int(time.time() * 1000))
        steps: list[tuple[str, dict[str, Any]]] = [
            ("CREATE (a:Analysis {" + ", ".join(f"{k}: ${k}" for k in created) + "})", created),
        ]
        if table.num_rows:
            rows = pa.table(
                {
                    "from": pa.array([row["id"]] * table.num_rows, pa.string()),
                    "to": table.column("key"),
                    "start_ns": table.column("start_ns"),
                    "slack_ns": table.column("slack_ns"),
                    "critical": table.column("critical"),
                }
            )
            steps.append((f"COPY {RESULT} FROM $rows", {"rows": rows}))
        steps.append(("MATCH (a:Analysis {id: $id}) SET a.complete = true", {"id": row["id"]}))
        self._transaction(steps, None, [0] * len(steps))

    # ------------------------------------------------------------------ deleting
    def _delete_run_rows(self, run_id: int) -> None:
        # Relationships by type first: 27 s instead of 38 s per 10^6 ops (DETACH DELETE alone).
        self._write("MATCH (a:Analysis) WHERE a.run = $id DETACH DELETE a", {"id": run_id})
        for rel in EDGE_TYPES.values():
            self._write(
                f"MATCH (a:Op)-[e:{rel}]->(b:Op) WHERE a.run = $id DELETE e", {"id": run_id}
            )
        self._write("MATCH (o:Op) WHERE o.run = $id DETACH DELETE o", {"id": run_id})
        self._write("MATCH (r:Run {id: $id}) DELETE r", {"id": run_id})

    def _delete_analysis_rows(self, analysis_id: str) -> None:
        self._write("MATCH (a:Analysis {id: $id}) DETACH DELETE a", {"id": analysis_id})

    def disk_bytes(self) -> dict[str, int]:
        return {"database": disk_usage(self.path.parent)} | super().disk_bytes()

    def cleanup(self, older_than_s: float | None = None) -> list[str]:
        """Remove incomplete runs and analyses. LadybugDB admits one writer, so any incomplete
        run found by the writer is dead (``older_than_s`` is accepted and ignored)."""
        if self.read_only:
            return []
        runs = self._arrow(
            "MATCH (r:Run) WHERE r.complete = false RETURN r.id AS id, r.name AS name, "
            "r.vertices AS vertices",
            {},
        )
        if runs.num_rows:
            names = ", ".join(repr(n) for n in runs.column("name").to_pylist())
            ops = sum(int(v or 0) for v in runs.column("vertices").to_pylist())
            self.notify(
                f"removing what a killed load left in {self.location} (run {names}, up to "
                f"{ops} ops; about 30 s per million ops)…"
            )
        for run_id in runs.column("id").to_pylist():
            self._delete_run_rows(int(run_id))
            self._drop_graph_files(int(run_id))
        for scratch in self.path.parent.glob(f"{SCRATCH_PREFIX}*"):
            shutil.rmtree(scratch, ignore_errors=True)
        self._sweep_graph_files()  # one writer: a run's file without its run is dead
        dead = self._arrow("MATCH (a:Analysis) WHERE a.complete = false RETURN a.id AS id", {})
        for analysis_id in dead.column("id").to_pylist():
            self._delete_analysis_rows(analysis_id)
        return [str(n) for n in runs.column("name").to_pylist()]


__all__ = ["DB_FILE", "LadybugStore"]
