"""Graph-store access for the UI: one short-lived connection per action, graphs cached.

The embedded LadybugDB store admits one writer process at a time, so the UI never holds a
connection between reruns: the CLI (``llamp tolerance RUN`` …) can use the same store while
the UI is open. Loaded graphs are kept in the UI's in-process memo
(:func:`llamp.ui.stored.kept`, the most recent eight) per store location, run name and run
identity (id and creation time), so a run replaced under the same name is loaded afresh.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd
import streamlit as st

from llamp import config
from llamp.errors import StoreError
from llamp.graph import ExecutionGraph

#: Columns of the runs table, in display order (others a backend reports follow them).
RUN_COLUMNS = ("name", "ranks", "vertices", "edges", "messages", "bytes", "format", "created")


redact = config.redact

#: Rows of a console query the UI keeps (a table the browser can still show).
MAX_QUERY_ROWS = 100_000


def location() -> str:
    """Where the store is: ``$LLAMP_STORE`` (without its password) or the embedded store under
    ``$LLAMP_HOME``."""
    uri = config.store_uri()
    return redact(uri) if uri else f"embedded store in {config.llamp_home().resolve()}"


def shown() -> str:
    """The store as a page names it, with no path of the server's file system and no user or
    password: ``the embedded store`` or ``Neo4j at db.example:7687``."""
    from urllib.parse import urlsplit

    uri = config.store_uri()
    if not uri or "://" not in uri:
        return "the embedded store"
    parts = urlsplit(uri)
    try:
        where = parts.hostname or "?"
        port = parts.port
    except ValueError:  # a port that is not a number: the store refuses it when opened
        where, port = "?", None
    return f"Neo4j at {where}" + (f":{port}" if port else "")


@contextmanager
def connect(*, write: bool = False) -> Iterator[Any]:
    """``open_store`` on ``$LLAMP_STORE`` (or the embedded store); read-only unless ``write``,
    so the UI's reads never take the embedded store's writer lock."""
    try:
        from llamp.graphdb import open_store
    except ImportError as err:
        raise StoreError(f"the graph store is not available in this installation ({err})") from err
    with open_store(config.store_uri(), read_only=not write, notify=_notify) as store:
        yield store


def _check_writable() -> None:
    if config.ui_settings().read_only:
        raise StoreError("this UI is read-only (LLAMP_UI_READ_ONLY): use the llamp CLI to write")


def _notify(message: str) -> None:
    """Why the store keeps the page waiting (another writer, a checkpoint), as a toast."""
    try:
        st.toast(message, icon=":material/hourglass_top:")
    except Exception:  # noqa: BLE001 - outside a page (cached loader): stderr will do
        config_stderr(message)


def config_stderr(message: str) -> None:
    from llamp.graphdb.locking import stderr_notify

    stderr_notify(message)


def run_record(info: Any) -> dict[str, Any]:
    """A ``RunInfo`` as a flat dict (dataclass, ``as_dict()`` or attributes)."""
    if hasattr(info, "as_dict"):
        return dict(info.as_dict())
    if dataclasses.is_dataclass(info):
        return dataclasses.asdict(info)
    if isinstance(info, dict):
        return dict(info)
    return {k: v for k, v in vars(info).items() if not k.startswith("_")}


def list_runs() -> pd.DataFrame:
    """The stored runs, one row each, ``name`` first; empty frame (with columns) if none."""
    with connect() as store:
        records = [run_record(info) for info in store.list_runs()]
    frame = pd.DataFrame.from_records(records)
    if "meta" in frame.columns:  # GOAL's cpu/nic columns, kept with the run when it has them
        frame["streams"] = [
            ", ".join((meta or {}).get("streams") or []) or "one CPU, one NIC per rank"
            for meta in frame["meta"]
        ]
    frame = frame.drop(columns=[c for c in ("meta",) if c in frame.columns])
    if frame.empty:
        return pd.DataFrame(columns=list(RUN_COLUMNS))
    first = [c for c in RUN_COLUMNS if c in frame.columns]
    rest = [c for c in frame.columns if c not in first]
    return frame[first + rest].sort_values("name", kind="stable").reset_index(drop=True)


def run_token(runs: pd.DataFrame, name: str) -> str:
    """Identity of the stored run ``name``: changes when the run is replaced."""
    row = runs.loc[runs["name"] == name]
    if row.empty:
        raise StoreError(f"no stored run named {name!r}")
    parts = [str(row.iloc[0][c]) for c in ("id", "created", "vertices") if c in row.columns]
    return f"{name}|{'|'.join(parts)}"


def cache_key(token: str) -> str:
    """A key naming one run of one store (for the analysis caches)."""
    return f"{location()}|{token}"


#: Loaded graphs kept in the process.
GRAPHS_KEPT = 8


def load_graph(name: str, token: str) -> ExecutionGraph:
    """The graph of stored run ``name`` (kept per store, name and run identity)."""
    from llamp.ui import stored  # stored reads and writes through this module

    def load() -> ExecutionGraph:
        with connect() as store:
            return store.load_run(name)

    return stored.kept("graph", (location(), name, token), load, most=GRAPHS_KEPT)


def put_run(graph: ExecutionGraph, name: str, *, replace: bool) -> dict[str, Any]:
    """Store ``graph`` as run ``name``; refuses to overwrite unless ``replace``."""
    _check_writable()
    with connect(write=True) as store:
        if not replace and store.has_run(name):
            raise StoreError(
                f"a run named {name!r} is already stored: choose another name or tick "
                "'Replace an existing run of the same name'"
            )
        info = store.put_run(graph, name, replace=replace, progress=False)
    return run_record(info) if info is not None else {"name": name}


def delete_run(name: str) -> None:
    _check_writable()
    with connect(write=True) as store:
        store.delete_run(name)


def query(
    cypher: str, params: dict[str, Any] | None = None, *, write: bool = False
) -> pd.DataFrame:
    """A Cypher query, run in a worker process held to the query limits
    (:mod:`llamp.graphdb.worker`: a query that exhausts memory, runs too long or crashes the
    database ends there, with a message, and the UI stays up). The first
    :data:`MAX_QUERY_ROWS` rows become the frame (``attrs["total_rows"]``: how many there
    were), so the server holds no more of a big result than the page can show. Read-only (the store refuses
    writes, too) unless ``write``, which only the admin setting ``LLAMP_UI_ADMIN`` permits."""
    if write and not config.ui_settings().admin:
        raise StoreError("writes from the UI need the admin setting LLAMP_UI_ADMIN=1")
    from llamp.graphdb.worker import run_query

    table = run_query(config.store_uri(), cypher, params or {}, write=write, notify=_notify)
    frame = table.slice(0, MAX_QUERY_ROWS).to_pandas()
    frame.attrs["total_rows"] = table.num_rows
    return frame
