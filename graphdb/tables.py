"""Columnar conversion between an :class:`ExecutionGraph` and the store's node/relationship rows.

Loading turns the graph into Arrow tables, a batch of rows at a time (:class:`RunRows`: ``Op``
rows, then each relationship type's), which LadybugDB copies in bulk and the Neo4j backend
sends as ``UNWIND`` batches. Reading back
turns Arrow columns into numpy arrays scattered by ``vid``: no Python object per vertex on
either path.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from llamp.errors import StoreError
from llamp.graph import (
    ARRAY_FIELDS,
    CALC,
    KIND_NAMES,
    MESSAGE,
    RECV,
    SEND,
    ExecutionGraph,
    index_dtype,
    narrow_integers,
)
from llamp.graphdb.schema import EDGE_TYPES, MAX_VERTICES, OP, op_key

_KIND_VALUES = pa.array(KIND_NAMES)


#: Rows per loaded batch: one ``COPY`` in LadybugDB (the Neo4j backend splits it further
#: into ``UNWIND`` transactions). A batch of ops takes ~100 B per row as Arrow columns, so the
#: load holds ~0.4 GB of rows at a time whatever the run's size (a whole 10^8-vertex run as
#: Arrow tables is ~15 GB). Measured in ``benchmarks/RESULTS.md`` (10^8 into the embedded store).
BATCH_ROWS = 1 << 22


#: The graph columns the store's rows are built from (CPU/NIC streams go into the run's meta).
_ROW_COLUMNS = tuple(name for name in ARRAY_FIELDS if name not in ("cpu", "nic"))


@dataclass(frozen=True)
class RunRows:
    """The rows of ``graph`` stored as run ``run_id``, built batch by batch (at most
    ``batch_rows`` rows each): the ``Op`` rows in vertex order, then each relationship type's
    ``from``/``to`` op keys (plus ``size`` for ``MSG``) in edge order. Concatenated, the
    batches are the same rows whatever ``batch_rows`` is; only one batch is held at a time."""

    graph: ExecutionGraph
    run_id: int
    batch_rows: int = BATCH_ROWS

    def __post_init__(self) -> None:
        n = self.graph.num_vertices
        if n >= MAX_VERTICES:
            raise StoreError(
                f"{self.graph.name}: {n} vertices exceed the store's limit of {MAX_VERTICES - 1}"
            )
        if self.batch_rows < 1:
            raise StoreError(f"batch_rows must be positive, got {self.batch_rows}")

    @property
    def num_rows(self) -> int:
        """Ops plus relationships: what a progress bar counts."""
        return self.graph.num_vertices + self.graph.num_edges

    def batches(self) -> Iterator[tuple[str, pa.Table]]:
        """``(table name, rows)``: ``Op`` batches first, then each relationship type's."""
        from llamp.lp.event_graph import release

        columns = [getattr(self.graph, c) for c in _ROW_COLUMNS]
        for lo in range(0, self.graph.num_vertices, self.batch_rows):
            yield OP, self.ops(lo, min(lo + self.batch_rows, self.graph.num_vertices))
            release(*columns)  # a mapped graph (saved first): only a batch's pages stay resident
        for kind_id, rel in EDGE_TYPES.items():
            for table in self._edges(kind_id):
                yield rel, table
                release(*columns)

    def ops(self, lo: int, hi: int) -> pa.Table:
        """The ``Op`` rows of vertices ``lo..hi-1``."""
        graph, run_id = self.graph, self.run_id
        n = hi - lo
        vid = np.arange(lo, hi, dtype=np.int64)
        rank = graph.rank[lo:hi]
        seq = vid - self._rank_bounds[rank]
        kind = pa.DictionaryArray.from_arrays(pa.array(graph.kind[lo:hi], pa.int8()), _KIND_VALUES)
        if graph.t_trace_ns is None:
            t_trace = pa.nulls(n, pa.float64())
        else:
            t_trace = pa.array(graph.t_trace_ns[lo:hi], pa.float64())
        if graph.label is None:
            label = pa.nulls(n, pa.string())
        else:
            label = pa.array(graph.label[lo:hi].astype(str), pa.string())
        return pa.table(
            {
                "key": op_key(run_id, vid),
                "run": np.full(n, run_id, dtype=np.int64),
                "vid": vid,
                "rank": rank,
                "seq": seq,
                "kind": kind.dictionary_decode(),
                "cost_ns": graph.cost_ns[lo:hi],
                "size": pa.array(graph.size[lo:hi], pa.int64()),  # the store's columns: 64-bit
                "peer": graph.peer[lo:hi],
                "tag": pa.array(graph.tag[lo:hi], pa.int64()),
                "t_trace_ns": t_trace,
                "label": label,
            }
        )

    @cached_property
    def _rank_bounds(self) -> np.ndarray:
        return self.graph.rank_bounds()

    def _edges(self, kind_id: int) -> Iterator[pa.Table]:
        """The edges of kind ``kind_id`` in edge order, ``batch_rows`` at a time (the edge
        columns are scanned a window at a time: no whole-graph mask or index is built)."""
        graph, step = self.graph, self.batch_rows
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        held = 0
        for lo in range(0, graph.num_edges, step):
            keep = np.flatnonzero(graph.edge_kind[lo : lo + step] == kind_id)
            if keep.size:
                parts.append((graph.edge_src[lo:][keep], graph.edge_dst[lo:][keep]))
                held += keep.size
            while held >= step or (held and lo + step >= graph.num_edges):
                src = np.concatenate([p[0] for p in parts])
                dst = np.concatenate([p[1] for p in parts])
                yield self._edge_table(kind_id, src[:step], dst[:step])
                parts = [(src[step:], dst[step:])] if src.size > step else []
                held = max(src.size - step, 0)

    def _edge_table(self, kind_id: int, src: np.ndarray, dst: np.ndarray) -> pa.Table:
        columns: dict[str, Any] = {
            "from": op_key(self.run_id, src),
            "to": op_key(self.run_id, dst),
        }
        if kind_id == MESSAGE:
            columns["size"] = pa.array(self.graph.size[src], pa.int64())
        return pa.table(columns)


def kinds_from_names(names: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``'calc'/'send'/'recv'`` → the graph's int8 kind codes; an unknown name is an error."""
    codes = pc.index_in(names, value_set=_KIND_VALUES)
    if codes.null_count:
        bad = pc.filter(names, pc.is_null(codes))[0]
        raise StoreError(f"the store holds an Op of unknown kind {bad!r}")
    return np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.int8)


def _column(table: pa.Table, name: str, dtype: Any, order: np.ndarray | None = None) -> np.ndarray:
    """Column ``name`` as numpy ``dtype`` (``None``: as stored), rows in ``order`` (``None``:
    as returned). Arrow's buffer is used without a copy where it can be (one chunk, no
    nulls); otherwise one copy, straight into the result's type."""
    column = table.column(name)
    if column.null_count:
        raise StoreError(f"the store returned null {name} values for a run that needs them")
    values = column.to_numpy()  # zero-copy for one chunk; one concatenation otherwise
    if order is not None:
        values = values[order]
    return values if dtype is None else np.asarray(values, dtype=dtype)


#: ``Run.meta`` key of a graph's CPU streams and NICs (GOAL's ``cpu``/``nic``): the columns,
#: zlib-compressed and base64-encoded, only for graphs that have them, so the Op schema (and
#: every existing store) stays as it is.
STREAMS = "streams"


def encode_streams(graph: ExecutionGraph) -> dict[str, str] | None:
    """The ``cpu``/``nic`` columns of ``graph`` for its run's metadata, or None (one each)."""
    out = {}
    for name in ("cpu", "nic"):
        column = getattr(graph, name)
        if column is not None:
            raw = np.ascontiguousarray(column, dtype="<i2").tobytes()
            out[name] = base64.b64encode(zlib.compress(raw, 6)).decode()
    return out or None


def decode_streams(meta: dict[str, Any], vertices: int) -> dict[str, np.ndarray]:
    """Inverse of :func:`encode_streams` (the whole run's columns; empty without any)."""
    table = meta.get(STREAMS) or {}
    out = {}
    for name, text in table.items():
        try:
            column = np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype="<i2")
        except (ValueError, zlib.error) as err:
            raise StoreError(f"the run's {name} column is damaged ({err})") from None
        if column.shape != (vertices,):
            raise StoreError(f"the run's {name} column has {column.size} rows, not {vertices}")
        out[name] = column.astype(np.int16)
    return out


def graph_from_tables(
    num_ranks: int,
    ops: pa.Table,
    edges: pa.Table,
    *,
    meta: dict[str, Any],
    with_t_trace: bool,
    with_label: bool,
) -> ExecutionGraph:
    """Rebuild a selection of a run from its ``Op`` rows (any order) and ``src, dst, kind``
    edge rows (vids): vertices keep their relative order, edges must join selected vertices,
    and a send or recv whose message is not among the edges becomes a zero-cost calc, exactly
    as :meth:`ExecutionGraph.subgraph` does. A whole run is read by :func:`graph_from_pages`.
    """
    vid = _column(ops, "vid", np.int64)
    order: np.ndarray | None = None  # rows already in vid order: no permutation
    if vid.size > 1 and np.any(vid[1:] < vid[:-1]):
        order = np.argsort(vid, kind="stable")
        vid = vid[order]
    n = vid.shape[0]
    if n > 1 and np.any(vid[1:] == vid[:-1]):
        raise StoreError("the store returned the same op twice: the run is damaged")
    rank = _column(ops, "rank", np.int32, order)
    kind = kinds_from_names(ops.column("kind"))
    kind = kind if order is None else kind[order]
    cost = _column(ops, "cost_ns", np.float64, order)
    size = narrow_integers(_column(ops, "size", None, order))
    peer = _column(ops, "peer", np.int32, order)
    tag = narrow_integers(_column(ops, "tag", None, order))
    t_trace = _column(ops, "t_trace_ns", np.float64, order) if with_t_trace else None
    label = None
    if with_label:
        label = ops.column("label").to_numpy(zero_copy_only=False)
        label = (label if order is None else label[order]).astype(object)
    streams = {}
    if meta.get(STREAMS):
        total = meta.get("vertices_total", n)
        streams = {k: v[vid] for k, v in decode_streams(meta, int(total)).items()}
        meta = {k: v for k, v in meta.items() if k not in (STREAMS, "vertices_total")}

    src_vid = _column(edges, "src", None)
    dst_vid = _column(edges, "dst", None)
    edge_kind = _column(edges, "kind", np.int8)
    src = np.searchsorted(vid, src_vid)
    dst = np.searchsorted(vid, dst_vid)
    inside = (src < n) & (dst < n)
    inside[inside] &= (vid[src[inside]] == src_vid[inside]) & (vid[dst[inside]] == dst_vid[inside])
    if not np.all(inside):
        raise StoreError("the store returned an edge to an op outside the selection")

    matched = np.zeros(n, dtype=bool)
    message = edge_kind == MESSAGE
    matched[src[message]] = True
    matched[dst[message]] = True
    orphan = ((kind == SEND) | (kind == RECV)) & ~matched
    kind = np.where(orphan, CALC, kind).astype(np.int8)
    cost = np.where(orphan, 0.0, cost)
    size = np.where(orphan, 0, size)
    peer = np.where(orphan, 0, peer)
    tag = np.where(orphan, 0, tag)
    return ExecutionGraph.from_arrays(
        num_ranks,
        rank=rank,
        kind=kind,
        cost_ns=cost,
        size=size,
        peer=peer,
        tag=tag,
        edge_src=src,
        edge_dst=dst,
        edge_kind=edge_kind,
        t_trace_ns=t_trace,
        label=label,
        meta=meta,
        **streams,
    )


def graph_from_pages(
    num_ranks: int,
    pages: Iterable[tuple[pa.Table, pa.Table]],
    *,
    meta: dict[str, Any],
    vertices: int,
    edges: int,
    with_t_trace: bool,
    with_label: bool,
) -> ExecutionGraph:
    """A whole run rebuilt from its pages: each page is the ``Op`` rows of a vid range
    ``lo..hi-1`` (any order; the pages in ascending ranges) and the ``src, dst, kind`` rows of
    the edges leaving them. Each page is scattered into the graph's columns as it comes, so
    only one page is ever held as Arrow rows (a whole 10^8-vertex run is ~15 GB of them).

    Any paging gives the same graph, column for column and edge for edge in the same order
    (one page holding every row included); a page with missing, repeated or foreign ops, or a
    total of edges other than ``edges``, is a damaged run.

    A backend whose cheapest handle on an edge's far end is its own node id (Neo4j's ``id(b)``:
    no property read) gives the ops a ``node`` column and the edges ``dst_node`` instead of
    ``dst``; those ends are turned into vids once every page is in (the far end may lie in a
    later page), and one that names no op of the run is a damaged run."""
    n = vertices
    rank = np.empty(n, np.int32)
    kind = np.empty(n, np.int8)
    cost = np.empty(n, np.float64)
    size = np.empty(n, np.int64)
    peer = np.empty(n, np.int32)
    tag = np.empty(n, np.int64)
    t_trace = np.empty(n, np.float64) if with_t_trace else None
    label = np.empty(n, object) if with_label else None
    index = index_dtype(n)
    src, dst = np.empty(edges, index), np.empty(edges, index)
    edge_kind = np.empty(edges, np.int8)
    node: np.ndarray | None = None  # the backend's node id of each vertex (``node`` column)
    far: np.ndarray | None = None  # the edges' far ends as node ids (``dst_node`` column)
    done = held = 0
    for ops, page_edges in pages:
        vid = _column(ops, "vid", np.int64)
        order: np.ndarray | None = None
        if vid.size > 1 and np.any(vid[1:] < vid[:-1]):
            order = np.argsort(vid, kind="stable")
            vid = vid[order]
        count = vid.shape[0]
        if count and (vid[0] != done or vid[-1] != done + count - 1 or np.any(vid[1:] == vid[:-1])):
            raise StoreError(
                f"the store holds ops {vid[0]}..{vid[-1]} ({count} rows) where vertices "
                f"{done}..{done + count - 1} were expected: the run is damaged; delete it and "
                "load it again"
            )
        hi = done + count
        rank[done:hi] = _column(ops, "rank", np.int32, order)
        page_kind = kinds_from_names(ops.column("kind"))
        kind[done:hi] = page_kind if order is None else page_kind[order]
        cost[done:hi] = _column(ops, "cost_ns", np.float64, order)
        size[done:hi] = _column(ops, "size", np.int64, order)
        peer[done:hi] = _column(ops, "peer", np.int32, order)
        tag[done:hi] = _column(ops, "tag", np.int64, order)
        if t_trace is not None:
            t_trace[done:hi] = _column(ops, "t_trace_ns", np.float64, order)
        if label is not None:
            text = ops.column("label").to_numpy(zero_copy_only=False)
            label[done:hi] = text if order is None else text[order]
        if "node" in ops.column_names:
            node = np.empty(n, np.int64) if node is None else node
            node[done:hi] = _column(ops, "node", np.int64, order)
        done = hi
        page_src = _column(page_edges, "src", None)
        by_node = "dst_node" in page_edges.column_names
        page_dst = _column(page_edges, "dst_node" if by_node else "dst", None)
        m = page_src.shape[0]
        if held + m > edges:
            raise StoreError(
                f"the store holds more than {edges} edges for this run: the run is damaged"
            )
        if m and not (page_src.min() >= 0 and page_src.max() < n):
            raise StoreError("the store returned an edge from an op outside the selection")
        if by_node:
            far = np.empty(edges, np.int64) if far is None else far
            far[held : held + m] = page_dst
        elif m and not (page_dst.min() >= 0 and page_dst.max() < n):
            raise StoreError("the store returned an edge to an op outside the selection")
        else:
            dst[held : held + m] = page_dst
        src[held : held + m] = page_src
        edge_kind[held : held + m] = _column(page_edges, "kind", np.int8)
        held += m
    if done != n:
        raise StoreError(
            f"the store holds {done} ops for a run of {n} vertices: the run is damaged; "
            "delete it and load it again"
        )
    if held != edges:
        raise StoreError(f"the store holds {held} edges for a run of {edges}: the run is damaged")
    if far is not None:
        if node is None:
            raise StoreError("the store named edge ends by node ids but gave none for its ops")
        dst[:] = _vids_of_nodes(node, far)
    streams = {}
    if meta.get(STREAMS):
        streams = decode_streams(meta, int(meta.get("vertices_total", n)))
        meta = {k: v for k, v in meta.items() if k not in (STREAMS, "vertices_total")}
    return ExecutionGraph.from_arrays(
        num_ranks,
        rank=rank,
        kind=kind,
        cost_ns=cost,
        size=narrow_integers(size),
        peer=peer,
        tag=narrow_integers(tag),
        edge_src=src,
        edge_dst=dst,
        edge_kind=edge_kind,
        t_trace_ns=t_trace,
        label=label,
        meta=meta,
        **streams,
    )


def _vids_of_nodes(node: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The vid of each node id in ``wanted``, ``node`` being every vertex's node id by vid (no
    sort when the ids already rise with the vid, as after a load in vid order)."""
    rising = node.size < 2 or bool(np.all(node[1:] > node[:-1]))
    order = None if rising else np.argsort(node, kind="stable")
    ordered = node if order is None else node[order]
    if ordered.size > 1 and np.any(ordered[1:] == ordered[:-1]):
        raise StoreError("the store returned two ops as one node: the run is damaged")
    pos = np.searchsorted(ordered, wanted)
    np.minimum(pos, max(ordered.size - 1, 0), out=pos)
    if wanted.size and (ordered.size == 0 or not np.array_equal(ordered[pos], wanted)):
        raise StoreError("the store returned an edge to an op outside the run: it is damaged")
    return pos if order is None else order[pos]


__all__ = [
    "BATCH_ROWS",
    "RunRows",
    "graph_from_pages",
    "graph_from_tables",
    "kinds_from_names",
]
