"""The server backend: Neo4j 5 through the official ``neo4j`` driver (Bolt).

``bolt://user:password@host:7687`` (or ``neo4j://…``; ``?database=name`` picks a database).
Runs are loaded as ``UNWIND`` batches of rows (each row a short list of values, 20 000 rows per
transaction: no Python dict per row, no per-row round trip), ops first: each op batch returns
the internal ids of the nodes it created, which the load holds (8 bytes per op), so each
relationship batch finds its two ends by id (``MATCH (a) WHERE id(a) = …``, a direct record
lookup, about half the server time of an ``Op.key`` index seek). The run is made visible by
setting ``Run.complete`` in a last transaction.
``Run.touched`` is refreshed with the server's clock after every batch, so
:meth:`Neo4jStore.cleanup` (run on open) removes only loads that stopped more than
``stale_after_s`` ago: a load still running in another process is left alone.

A run is read back a page of 2^18 ops at a time by two statements, one ``Op.key`` index range
scan each (:func:`_page_statements`): the ops' columns, and the edges of every relationship type
with their far ends as node ids; the two run side by side, a page ahead of the decoding.

Reads run in ``READ_ACCESS`` sessions, which Neo4j refuses to write in; ad hoc reads must also
pass the allow-list (:mod:`llamp.graphdb.readonly`). Uniqueness constraints on ``Run.id``,
``Run.name``, ``Op.key`` and ``Analysis.id`` (:data:`~llamp.graphdb.schema.NEO4J_DDL`) keep
concurrent loaders apart. The tests and benchmarks run it against Neo4j Community from Maven
Central (:mod:`llamp.graphdb.neo4jserver`). Other Bolt servers are refused: their Cypher,
constraints and transactions differ.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np
import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from llamp.config import redact
from llamp.errors import InputError, QueryError, StoreError
from llamp.graphdb.locking import Notify, stderr_notify
from llamp.graphdb.schema import EDGE_KINDS, KEY_SHIFT, NEO4J_DDL, OP, RESULT
from llamp.graphdb.store import GraphStore
from llamp.graphdb.tables import RunRows

if TYPE_CHECKING:
    from llamp.graphdb.store import RunInfo


def _driver_module() -> Any:
    try:
        import neo4j
    except ImportError as err:  # pragma: no cover - neo4j is a hard dependency
        raise StoreError(f"the Neo4j backend needs the 'neo4j' package: {err}") from err
    # The driver logs what it then raises ("Unable to retrieve routing information"); without
    # a handler Python prints those records on stderr before llamp's own message says it once.
    driver_log = logging.getLogger("neo4j")
    if not driver_log.handlers:
        driver_log.addHandler(logging.NullHandler())
    return neo4j


def _plain(value: Any) -> Any:
    """Driver graph types → plain dicts/lists, so a DataFrame of ad hoc results prints and
    serialises like the embedded backend's."""
    from neo4j.graph import Node, Path, Relationship

    if isinstance(value, Node):
        return {"_labels": sorted(value.labels), **dict(value)}
    if isinstance(value, Relationship):
        return {"_type": value.type, **dict(value)}
    if isinstance(value, Path):
        return [_plain(n) for n in value.nodes]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "iso_format"):  # neo4j.time types
        return value.iso_format()
    return value


class Neo4jStore(GraphStore):
    """A Neo4j 5 server as a graph store."""

    backend = "neo4j"
    #: Rows per UNWIND batch (one transaction each).
    batch_rows = 20_000
    #: Vertices per read-back page (key range): each page is two statements, the next
    #: page's running on the server while this one is decoded.
    page_vertices = 1 << 18

    def __init__(
        self,
        uri: str,
        *,
        read_only: bool = False,
        stale_after_s: float = 900.0,
        connect_timeout_s: float = 5.0,
        notify: Notify | None = None,
    ) -> None:
        neo4j = _driver_module()
        parts, port, user, password = _parse_uri(uri)
        super().__init__(f"{parts.scheme}://{user}@{parts.hostname}:{port}")
        self.read_only = read_only
        self.notify = notify or stderr_notify
        self.stale_after_s = float(stale_after_s)
        self._database = (parse_qs(parts.query).get("database") or [None])[0]
        auth = (user, password) if parts.username or parts.password else None
        self._errors = neo4j.exceptions
        self._read_mode = neo4j.READ_ACCESS
        self._driver = neo4j.GraphDatabase.driver(
            f"{parts.scheme}://{parts.hostname}:{port}",
            auth=auth,
            connection_timeout=connect_timeout_s,
            max_transaction_retry_time=15.0,
            # Notifications (a property key not created yet in an empty database, …) are
            # warnings for people writing Cypher, not for llamp's own queries.
            notifications_min_severity="OFF",
        )
        self.server_version = ""
        self._closed = False
        try:
            self._connect()
            self.server_version = self._detect()
            if not read_only:
                self._ensure_schema()
                self.cleanup()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ connection
    def _connect(self) -> None:
        errors = self._errors
        last: Exception | None = None
        for _ in range(2):  # one retry: a server that just started may drop the first
            try:
                self._driver.verify_connectivity()
                return
            except errors.AuthError as err:
                raise StoreError(
                    f"{self.location} refused the credentials: {err.message} "
                    "(check the user name and password)"
                ) from None
            except (errors.ServiceUnavailable, errors.SessionExpired, OSError) as err:
                last = err
            except (errors.Neo4jError, errors.DriverError) as err:
                raise StoreError(
                    f"{self.location} refused the connection: {redact(str(err))[:300]} "
                    "(check the user name and password)"
                ) from None
        raise StoreError(
            f"cannot reach the graph server at {self.location}: {_unreachable_reason(last)}. "
            "Is it running? (docker compose -f docker/compose.yaml up -d neo4j)"
        ) from None

    def _detect(self) -> str:
        """The server's version (``5.26.30``, from the Bolt agent ``Neo4j/5.26.30``); a
        server that is not Neo4j 5 or later is a StoreError."""
        agent = self._driver.get_server_info().agent or "an unknown server"
        product, _, version = agent.partition("/")
        major = version.split(".", 1)[0]
        if product.lower() != "neo4j" or not major.isdigit() or int(major) < 5:
            raise StoreError(
                f"{self.location} is {agent}, not a Neo4j 5 server: llamp's Bolt backend needs "
                "Neo4j 5 or later (its Cypher, constraints and transactions)"
            )
        return version

    def _ensure_schema(self) -> None:
        for statement in NEO4J_DDL:
            try:
                self._write(statement)
            except QueryError as err:
                if "run_name_unique" not in statement:
                    raise
                self.notify(
                    f"{self.location}: run names are not unique yet ({err}); delete or "
                    "rename the duplicates (llamp runs) so the constraint can be created"
                )

    def close(self) -> None:
        if getattr(self, "_closed", True):
            return
        self._closed = True
        self._driver.close()

    # ------------------------------------------------------------------ execution
    def _error(self, err: Exception) -> Exception:
        errors = self._errors
        if isinstance(err, errors.ClientError):
            if (
                "AccessMode" in (err.code or "")
                or "read access mode" in (err.message or "").lower()
            ):
                return QueryError(f"this query writes, and was run read-only: {err.message}")
            return QueryError(f"Cypher error: {err.message}")
        if isinstance(err, errors.DatabaseError):
            return StoreError(f"{self.location}: {err.message}")
        if isinstance(err, errors.Neo4jError | errors.DriverError):
            return StoreError(f"{self.location}: {err}")
        return err

    def _records(
        self, cypher: str, params: dict[str, Any], *, write: bool
    ) -> tuple[list[str], list[list[Any]]]:
        if self._closed:
            raise StoreError(f"the store {self.location} is closed")

        def work(tx: Any) -> tuple[list[str], list[list[Any]]]:
            result = tx.run(cypher, params)
            return list(result.keys()), result.values()

        try:
            with self._driver.session(database=self._database) as session:
                if write:
                    return session.execute_write(work)
                return session.execute_read(work)
        except (self._errors.Neo4jError, self._errors.DriverError) as err:
            raise self._error(err) from None

    def _arrow(self, cypher: str, params: dict[str, Any]) -> pa.Table:
        keys, rows = self._records(cypher, params, write=False)
        if not rows:
            return pa.table({k: pa.nulls(0) for k in keys})
        columns = list(zip(*rows, strict=True))
        return pa.table({k: pa.array(list(c)) for k, c in zip(keys, columns, strict=True)})

    def _columns(self, cypher: str, params: dict[str, Any], columns: dict[str, str]) -> pa.Table:
        """The result as one record of lists, one per column: Bolt moves a list of 10^5
        values 3× faster than 10^5 records (a record is a message, each framed and decoded on
        its own). ``collect`` skips nulls, so a null travels as ``[]`` and comes back None;
        the rows keep the query's order (``collect`` takes them as the subquery yields them)."""
        names = list(columns)
        text = f"CALL {{ {cypher} }} RETURN " + ", ".join(
            f"collect(coalesce({c}, [])) AS {c}" for c in names
        )
        keys, rows = self._records(text, params, write=False)
        values = dict(zip(keys, rows[0], strict=True))
        out = {}
        for name in names:
            column = values[name]
            if any(isinstance(v, list) for v in column):
                column = [None if isinstance(v, list) else v for v in column]
            out[name] = pa.array(column)
        return pa.table(out)

    def _frame(self, cypher: str, params: dict[str, Any], *, write: bool) -> pd.DataFrame:
        if write and self.read_only:
            raise QueryError(f"the store {self.location} was opened read-only")
        keys, rows = self._records(cypher, params, write=write)
        return pd.DataFrame([[_plain(v) for v in row] for row in rows], columns=keys)

    def _write(self, cypher: str, params: dict[str, Any] | None = None) -> None:
        if self.read_only:
            raise StoreError(f"the store {self.location} was opened read-only")
        self._records(cypher, params or {}, write=True)

    def _write_all(self, statements: list[tuple[str, dict[str, Any]]]) -> list[list[list[Any]]]:
        """Several statements in one transaction; the records of each."""

        def work(tx: Any) -> list[list[list[Any]]]:
            return [tx.run(cypher, params).values() for cypher, params in statements]

        try:
            with self._driver.session(database=self._database) as session:
                return session.execute_write(work)
        except (self._errors.Neo4jError, self._errors.DriverError) as err:
            raise self._error(err) from None

    # ------------------------------------------------------------------ reading back
    def _run_pages(self, info: RunInfo) -> Iterator[tuple[pa.Table, pa.Table]]:
        """The run's ops and the edges leaving them, a key range at a time, two statements
        per page (:func:`_page_statements`) run side by side on two sessions, the next page's
        while this one is decoded: at most two pages are held. Far ends of edges come as
        node ids (``dst_node``), turned into vids by :func:`graph_from_pages`."""
        ops_text, edges_text = _page_statements(info.has_t_trace, info.has_label)
        base = info.id << KEY_SHIFT

        def fetch(text: str, lo: int, hi: int) -> dict[str, Any]:
            keys, rows = self._records(text, {"lo": base + lo, "hi": base + hi}, write=False)
            return dict(zip(keys, rows[0], strict=True))

        bounds = [
            (lo, min(lo + self.page_vertices, info.vertices))
            for lo in range(0, info.vertices, self.page_vertices)
        ]
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="llamp-neo4j-page") as pool:

            def submit(lo: int, hi: int) -> tuple[Future[dict[str, Any]], ...]:
                return pool.submit(fetch, ops_text, lo, hi), pool.submit(fetch, edges_text, lo, hi)

            ahead = [submit(*page) for page in bounds[:1]]
            for i in range(len(bounds)):
                ops, edges = (future.result() for future in ahead.pop())
                ahead.extend(submit(*page) for page in bounds[i + 1 : i + 2])
                yield _ops_page(ops, base), _edges_page(edges, base)

    # ------------------------------------------------------------------ loading
    def _new_run_id(self) -> int:
        """Reserve an id by creating its (incomplete, nameless) Run node; the uniqueness
        constraint refuses a concurrent loader that picked the same id, which tries the next."""
        for _ in range(20):
            top = self._arrow("MATCH (r:Run) RETURN max(r.id) AS m", {}).column("m")[0].as_py()
            run_id = 1 if top is None else int(top) + 1
            try:
                self._write(
                    "CREATE (r:Run {id: $id, name: $name, complete: false, touched: timestamp()})",
                    {"id": run_id, "name": _pending(run_id)},
                )
            except QueryError as err:
                if "already exists" not in str(err) and "constraint" not in str(err).lower():
                    raise
                continue
            return run_id
        raise StoreError(f"{self.location}: could not reserve a run id (too many concurrent loads)")

    def _row_batches(self, table: pa.Table, columns: list[str]) -> Any:
        """``(first row, rows)``: ``batch_rows`` rows at a time, each row a list of its
        columns' values: 2·10^4 ops went in with 26–41 % less wall time than as parallel
        lists indexed per row (``$key[i]``), on the local server, batches of 2 000–20 000."""
        arrays = [table.column(c).to_numpy(zero_copy_only=False) for c in columns]
        for lo in range(0, table.num_rows, self.batch_rows):
            parts = [a[lo : lo + self.batch_rows].tolist() for a in arrays]
            yield lo, [list(r) for r in zip(*parts, strict=True)]

    def _batches(self, table: pa.Table, columns: list[str]) -> Any:
        arrays = {c: table.column(c).to_numpy(zero_copy_only=False) for c in columns}
        for lo in range(0, table.num_rows, self.batch_rows):
            yield {c: a[lo : lo + self.batch_rows].tolist() for c, a in arrays.items()}

    def _load_run(
        self, row: dict[str, Any], rows: RunRows, replaces: int | None, progress: bool
    ) -> None:
        run_id = row["id"]
        # The name is taken only when the run is complete (unique names): until then it is
        # kept aside, so a replaced run keeps its name while its successor loads.
        props = {k: v for k, v in row.items() if k not in ("id", "name")}
        props["pending_name"] = row["name"]
        self._write(
            "MATCH (r:Run {id: $id}) SET r += $props, r.touched = timestamp()",
            {"id": run_id, "props": props},
        )
        touch = "MATCH (r:Run {id: $run_id}) SET r.touched = timestamp()"
        with tqdm(
            total=rows.num_rows,
            desc=f"storing {row['name']}",
            unit="row",
            unit_scale=True,
            disable=not progress,
            leave=False,
        ) as bar:
            node_ids = np.empty(rows.graph.num_vertices, dtype=np.int64)
            base = run_id << KEY_SHIFT
            for table_name, table in rows.batches():
                if table_name == OP:
                    # a column null throughout (no trace times, no labels) is not set at all
                    columns = [c for c in table.column_names if table.column(c).null_count == 0]
                    statement = (
                        f"UNWIND $rows AS r CREATE (o:{OP} {{"
                        + ", ".join(f"{c}: r[{j}]" for j, c in enumerate(columns))
                        + "}) RETURN collect(id(o)) AS ids"
                    )
                else:
                    props = " {size: r[2]}" if "size" in table.column_names else ""
                    statement = (
                        "UNWIND $rows AS r MATCH (a) WHERE id(a) = r[0] "
                        f"MATCH (b) WHERE id(b) = r[1] CREATE (a)-[:{table_name}{props}]->(b)"
                    )
                    columns = table.column_names
                    ends = [node_ids[table.column(c).to_numpy() - base] for c in columns[:2]]
                    table = pa.table(
                        {
                            "from": ends[0],
                            "to": ends[1],
                            **{c: table.column(c) for c in columns[2:]},
                        }
                    )
                for lo, batch in self._row_batches(table, columns):
                    values = self._write_all(
                        [(statement, {"rows": batch}), (touch, {"run_id": run_id})]
                    )
                    if table_name == OP:
                        first = int(table.column("vid")[lo].as_py())
                        node_ids[first : first + len(batch)] = values[0][0][0]
                    bar.update(len(batch))
        self._finish_run(run_id, row["name"], replaces)

    def _finish_run(self, run_id: int, name: str, replaces: int | None) -> None:
        """One statement: name the run and make it visible (hiding the run it replaces) unless
        another load finished a run of that name meanwhile; of two concurrent commits the
        uniqueness constraint on ``Run.name`` refuses the second."""
        finish = (
            "MATCH (r:Run {id: $id}) "
            "OPTIONAL MATCH (o:Run {name: $name}) WHERE o.complete = true AND o.id <> $old "
            "WITH r, count(o) AS taken WHERE taken = 0 "
            "OPTIONAL MATCH (old:Run {id: $old}) "
            "SET old.complete = false, old.name = $hidden "
            "SET r.name = $name, r.complete = true RETURN count(r) AS done"
        )
        old = -1 if replaces is None else replaces
        params = {"id": run_id, "name": name, "old": old, "hidden": _pending(old)}
        try:
            _, rows = self._records(finish, params, write=True)
        except QueryError as err:
            if "already exists" not in str(err) and "constraint" not in str(err).lower():
                raise
            rows = [[0]]
        if not rows or not rows[0][0]:
            raise InputError(
                f"run {name!r} was stored in {self.location} by another load meanwhile: "
                "pass replace=True (llamp ingest --replace) or choose another name"
            )

    def _load_results(self, row: dict[str, Any], table: pa.Table) -> None:
        analysis_id = row["id"]
        self._write(
            "CREATE (a:Analysis {"
            + ", ".join(f"{k}: ${k}" for k in row)
            + ", complete: false, touched: timestamp()})",
            row,
        )
        link = (
            "UNWIND range(0, size($key) - 1) AS i WITH i, $key[i] AS k "
            "MATCH (a:Analysis {id: $analysis}) MATCH (o:Op {key: k}) "
            f"CREATE (a)-[:{RESULT} {{start_ns: $start_ns[i], slack_ns: $slack_ns[i], "
            "critical: $critical[i]}]->(o)"
        )
        touch = "MATCH (a:Analysis {id: $analysis}) SET a.touched = timestamp()"
        try:
            for batch in self._batches(table, ["key", "start_ns", "slack_ns", "critical"]):
                batch["analysis"] = analysis_id
                self._write_all([(link, batch), (touch, {"analysis": analysis_id})])
            self._write("MATCH (a:Analysis {id: $id}) SET a.complete = true", {"id": analysis_id})
        except BaseException:
            try:
                self._delete_analysis_rows(analysis_id)
            except (StoreError, QueryError):
                pass
            raise

    # ------------------------------------------------------------------ deleting
    def _hide_run(self, run_id: int) -> None:
        """Invisible at once, and its name free for a new run (names are unique)."""
        self._write(
            "MATCH (r:Run {id: $id}) SET r.complete = false, r.pending_name = r.name, "
            "r.name = $hidden",
            {"id": run_id, "hidden": _pending(run_id)},
        )

    def _delete_in_batches(self, cypher: str, params: dict[str, Any]) -> None:
        while True:
            _, rows = self._records(cypher, {**params, "limit": self.batch_rows}, write=True)
            if not rows or not rows[0][0]:
                return

    def _delete_run_rows(self, run_id: int) -> None:
        self._delete_in_batches(
            "MATCH (a:Analysis)-[x:RESULT]->(o:Op) WHERE a.run = $id "
            "WITH x LIMIT $limit DELETE x RETURN count(*) AS n",
            {"id": run_id},
        )
        self._write("MATCH (a:Analysis) WHERE a.run = $id DETACH DELETE a", {"id": run_id})
        self._delete_in_batches(
            "MATCH (o:Op) WHERE o.run = $id WITH o LIMIT $limit DETACH DELETE o "
            "RETURN count(*) AS n",
            {"id": run_id},
        )
        self._write("MATCH (r:Run {id: $id}) DETACH DELETE r", {"id": run_id})

    def _delete_analysis_rows(self, analysis_id: str) -> None:
        self._delete_in_batches(
            "MATCH (a:Analysis {id: $id})-[x:RESULT]->(o:Op) WITH x LIMIT $limit DELETE x "
            "RETURN count(*) AS n",
            {"id": analysis_id},
        )
        self._write("MATCH (a:Analysis {id: $id}) DETACH DELETE a", {"id": analysis_id})

    def cleanup(self, older_than_s: float | None = None) -> list[str]:
        """Remove incomplete runs and analyses untouched for ``older_than_s`` (default
        ``stale_after_s``): their loader died. Younger ones may still be loading."""
        if self.read_only:
            return []
        age_ms = int(1000 * (self.stale_after_s if older_than_s is None else older_than_s))
        runs = self._arrow(
            "MATCH (r:Run) WHERE r.complete = false AND r.touched <= timestamp() - $age "
            "RETURN r.id AS id, coalesce(r.pending_name, r.name) AS name",
            {"age": age_ms},
        )
        if runs.num_rows:
            self.notify(
                f"removing what killed loads left in {self.location} (run "
                + ", ".join(repr(n) for n in runs.column("name").to_pylist())
                + ")…"
            )
        for run_id in runs.column("id").to_pylist():
            self._delete_run_rows(int(run_id))
            self._drop_graph_files(int(run_id))
        self._sweep_graph_files(age_ms / 1000)
        dead = self._arrow(
            "MATCH (a:Analysis) WHERE a.complete = false AND a.touched <= timestamp() - $age "
            "RETURN a.id AS id",
            {"age": age_ms},
        )
        for analysis_id in dead.column("id").to_pylist():
            self._delete_analysis_rows(analysis_id)
        return [str(n) for n in runs.column("name").to_pylist()]


def _parse_uri(uri: str) -> tuple[Any, int, str, str]:
    """``bolt://user:password@host:port?database=x`` → (parts, port, user, password), user
    and password percent-decoded; a malformed URI is an InputError that never shows the
    password."""
    shown = redact(uri)
    parts = urlsplit(uri)
    if "/" in parts.path.lstrip("/") or "@" in parts.path:
        raise InputError(
            f"store URI {shown!r}: a '/' in the user name or password must be written %2F "
            "(percent-encode special characters: @ as %40, : as %3A)"
        )
    if not parts.hostname:
        raise InputError(f"store URI {shown!r} names no host: use bolt://user:pass@host:7687")
    try:
        port = parts.port or 7687
    except ValueError:
        raise InputError(
            f"store URI {shown!r}: the port must be a number from 1 to 65535"
        ) from None
    user = unquote(parts.username) if parts.username else "neo4j"
    return parts, port, user, unquote(parts.password or "")


def _unreachable_reason(err: Exception | None) -> str:
    """The driver's reason for a failed connection, on one short line: the operating
    system's (``[Errno 111] Connection refused``) when it gives one, else its first line."""
    text = str(err or "no answer")
    found = re.search(r"\(reason (.+?)\)\s*$", text, flags=re.MULTILINE)
    first = next((line.strip() for line in text.splitlines() if line.strip()), text)
    return redact(found.group(1) if found else first)[:200].rstrip(". ")


#: The op columns a read-back takes besides ``key`` and the node id, in the graph's order.
_PAGE_COLUMNS = ("rank", "kind", "cost_ns", "size", "peer", "tag")


def _page_statements(with_t_trace: bool, with_label: bool) -> tuple[str, str]:
    """The two statements that read one page of a run (op keys in ``[$lo, $hi)``): its ops
    and the edges leaving them, each one record of lists (a record per row costs Bolt 3×).

    Both start from one range scan of the ``Op.key`` index, whose values come with it (the
    vid is ``key − run·2^32``: no ``vid`` read). The ops' statement reads only the columns the
    run has; the edges' statement expands the three relationship types at once and names the
    far end by its node id (``id(b)``), which costs no property read: 10^6 ops and their
    1.3·10^6 edges took 5.6 + 2.1 server CPU seconds this way, 7.1 + 5.6 as ``vid`` columns
    and one index scan per relationship type."""
    columns = [*_PAGE_COLUMNS, *(["t_trace_ns"] if with_t_trace else [])]
    columns += ["label"] if with_label else []
    scan = "MATCH (o:Op) WHERE o.key >= $lo AND o.key < $hi"
    ops = f"{scan} RETURN collect(id(o)) AS node, collect(o.key) AS key, " + ", ".join(
        f"collect(o.{c}) AS {c}" for c in columns
    )
    types = "|".join(EDGE_KINDS)
    edges = (
        f"MATCH (o:Op)-[r:{types}]->(b) WHERE o.key >= $lo AND o.key < $hi "
        "RETURN collect(o.key) AS src, collect(id(b)) AS dst_node, collect(type(r)) AS type"
    )
    return ops, edges


def _ops_page(values: dict[str, list[Any]], base: int) -> pa.Table:
    """One page's op columns (lists from :func:`_page_statements`) as an Arrow table with
    ``vid`` and ``node``; a column shorter than the page (``collect`` skips a null: a
    property missing on some op) is a damaged run."""
    rows = len(values["key"])
    short = [name for name, column in values.items() if len(column) != rows]
    if short:
        raise StoreError(
            f"the store holds ops without {', '.join(short)}: the run is damaged; delete it "
            "and load it again"
        )
    columns: dict[str, Any] = {"vid": np.asarray(values.pop("key"), np.int64) - base}
    columns["node"] = np.asarray(values.pop("node"), np.int64)
    for name, column in values.items():
        columns[name] = pa.array(column)
    return pa.table(columns)


def _edges_page(values: dict[str, list[Any]], base: int) -> pa.Table:
    """One page's edges as ``src`` (vid), ``dst_node`` (node id) and ``kind`` (the graph's
    edge-kind code of the relationship type)."""
    types = pa.array(values["type"], pa.string()).dictionary_encode()
    known = [EDGE_KINDS.get(name, -1) for name in types.dictionary.to_pylist()]
    codes = np.asarray(known, np.int8)[types.indices.to_numpy(zero_copy_only=False)]
    if np.any(codes < 0):
        raise StoreError("the store holds an edge of an unknown type: the run is damaged")
    return pa.table(
        {
            "src": np.asarray(values["src"], np.int64) - base,
            "dst_node": np.asarray(values["dst_node"], np.int64),
            "kind": codes,
        }
    )


def _pending(run_id: int) -> str:
    """The name of a run while it loads or is deleted: unique, and no user name (those are
    printable)."""
    return f"\x01run {run_id}"


__all__ = ["Neo4jStore"]
