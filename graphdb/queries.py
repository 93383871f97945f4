"""The query catalogue: named, parameterised Cypher over stored runs (docs/architecture.md §Graph store).

Every query takes ``$run`` (the integer ``Run.id``; :meth:`GraphStore.run_query` resolves a
run name and checks that the run is complete). One text serves LadybugDB and Neo4j wherever
the dialects allow; the rules that make that work (docs/architecture.md §Graph store): endpoint lookups as separate
``MATCH`` clauses, one relationship type per pattern, ``ORDER BY``/``LIMIT`` only in
``RETURN``, a condition on two relationships of one type only after ``WITH`` (LadybugDB
0.22.0 filters wrongly otherwise), no ``CALL {}``, no APOC, no list comprehensions, integer sums coerced on the
client (LadybugDB sums to a 128-bit integer). Where a dialect differs
the two texts stand side by side (:attr:`Query.ladybug`, :attr:`Query.neo4j`): list
indexing is 1-based in LadybugDB and 0-based in Neo4j.

Subgraph selections come in pairs, ``ops_<selection>`` and ``edges_<selection>``: the ops
the selection keeps, and every edge (``src, dst, kind`` with the graph's edge-kind codes)
whose both ends it keeps; :meth:`GraphStore.select` turns the pair into an
:class:`~llamp.graph.ExecutionGraph` with :meth:`ExecutionGraph.subgraph` semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llamp.errors import InputError
from llamp.graphdb.schema import EDGE_KINDS

#: Columns of every ``ops_*`` query, in the order the graph needs them.
OP_RETURN = (
    "o.vid AS vid, o.rank AS rank, o.kind AS kind, o.cost_ns AS cost_ns, o.size AS size, "
    "o.peer AS peer, o.tag AS tag, o.t_trace_ns AS t_trace_ns, o.label AS label"
)
OP_COLUMNS = {
    "vid": "int64",
    "rank": "int32",
    "kind": "str",
    "cost_ns": "float64",
    "size": "int64",
    "peer": "int32",
    "tag": "int64",
    "t_trace_ns": "float64",
    "label": "str",
}
EDGE_COLUMNS = {"src": "int64", "dst": "int64", "kind": "int8"}


@dataclass(frozen=True)
class Query:
    """A named Cypher query: ``cypher`` runs on both backends unless a backend text is given.

    ``params`` are the parameters besides ``$run`` with their meaning; ``columns`` the result
    columns and their dtypes (results are coerced to them, so an integer sum is an int64 on
    every backend).
    """

    name: str
    doc: str
    cypher: str
    params: dict[str, str] = field(default_factory=dict)
    columns: dict[str, str] = field(default_factory=dict)
    ladybug: str | None = None
    neo4j: str | None = None

    def text(self, backend: str) -> str:
        """The Cypher text for ``backend`` (``"ladybug"`` or ``"neo4j"``)."""
        if backend == "ladybug" and self.ladybug is not None:
            return self.ladybug
        if backend == "neo4j" and self.neo4j is not None:
            return self.neo4j
        return self.cypher

    @property
    def portable(self) -> bool:
        """True if one text serves both backends."""
        return self.ladybug is None and self.neo4j is None


def _edges_among(pattern: str, where: str, carry: str = "a, b") -> str:
    """Edges of every type whose two ends satisfy ``where``; ``pattern`` binds ``a``, ``b``
    around ``[:{rel}]``. One relationship type per pattern, joined by ``UNION ALL``.

    The run is filtered in the ``MATCH`` and the two-ended condition after ``WITH``:
    LadybugDB 0.22.0 returns wrong rows when one ``WHERE`` filters two relationships of the
    same table (``ra.start_ns … AND rb.start_ns …``: 44 rows instead of 288 on Sweep3D).
    """
    parts = [
        f"MATCH {pattern.format(rel=rel)} WHERE a.run = $run WITH {carry} WHERE {where} "
        f"RETURN a.vid AS src, b.vid AS dst, {kind} AS kind"
        for rel, kind in EDGE_KINDS.items()
    ]
    return " UNION ALL ".join(parts)


def _selection(
    name: str,
    doc: str,
    params: dict[str, str],
    *,
    ops: str,
    edges: str,
    ops_ladybug: str | None = None,
    edges_ladybug: str | None = None,
) -> tuple[Query, Query]:
    return (
        Query(f"ops_{name}", f"Ops of {doc}.", ops, params, OP_COLUMNS, ladybug=ops_ladybug),
        Query(
            f"edges_{name}",
            f"Edges among the ops of {doc}.",
            edges,
            params,
            EDGE_COLUMNS,
            ladybug=edges_ladybug,
        ),
    )


#: The edges of one relationship type leaving the ops of a page (keys in [$key_lo, $key_hi)).
PAGE_EDGES: dict[str, str] = {
    rel: f"MATCH (a:Op)-[:{rel}]->(b:Op) WHERE a.key >= $key_lo AND a.key < $key_hi "
    f"RETURN a.vid AS src, b.vid AS dst, {kind} AS kind"
    for rel, kind in EDGE_KINDS.items()
}

_PLAIN_EDGE = "(a:Op)-[:{rel}]->(b:Op)"
_RESULT_EDGE = (
    "(an:Analysis {{id: $analysis}})-[ra:RESULT]->(a:Op)-[:{rel}]->(b:Op)<-[rb:RESULT]-(an)"
)

_SELECTIONS: tuple[Query, ...] = (
    *_selection(
        "page",
        "one page of a whole run: op keys in [$key_lo, $key_hi) (Op.key = run·2^32 + vid)",
        {"key_lo": "first op key", "key_hi": "op key past the last"},
        ops=f"MATCH (o:Op) WHERE o.key >= $key_lo AND o.key < $key_hi RETURN {OP_RETURN}",
        edges=" UNION ALL ".join(PAGE_EDGES.values()),
    ),
    *_selection(
        "in_ranks",
        "the ranks in $ranks",
        {"ranks": "list of rank ids"},
        ops=f"MATCH (o:Op) WHERE o.run = $run AND o.rank IN $ranks RETURN {OP_RETURN}",
        edges=_edges_among(_PLAIN_EDGE, "a.rank IN $ranks AND b.rank IN $ranks"),
    ),
    *_selection(
        "in_trace_window",
        "the trace-time window [$t0_ns, $t1_ns) (Op.t_trace_ns)",
        {"t0_ns": "window start (trace time, ns)", "t1_ns": "window end (exclusive)"},
        ops=f"MATCH (o:Op) WHERE o.run = $run AND o.t_trace_ns >= $t0_ns AND o.t_trace_ns < $t1_ns "
        f"RETURN {OP_RETURN}",
        edges=_edges_among(
            _PLAIN_EDGE,
            "a.t_trace_ns >= $t0_ns AND a.t_trace_ns < $t1_ns "
            "AND b.t_trace_ns >= $t0_ns AND b.t_trace_ns < $t1_ns",
        ),
    ),
    *_selection(
        "in_start_window",
        "the window [$t0_ns, $t1_ns) of start times under the stored analysis $analysis",
        {
            "analysis": "analysis id",
            "t0_ns": "window start (ns)",
            "t1_ns": "window end (exclusive)",
        },
        ops="MATCH (an:Analysis {id: $analysis})-[r:RESULT]->(o:Op) "
        f"WHERE o.run = $run AND r.start_ns >= $t0_ns AND r.start_ns < $t1_ns RETURN {OP_RETURN}",
        edges=_edges_among(
            _RESULT_EDGE,
            "ra.start_ns >= $t0_ns AND ra.start_ns < $t1_ns "
            "AND rb.start_ns >= $t0_ns AND rb.start_ns < $t1_ns",
            "a, b, ra, rb",
        ),
    ),
    *_selection(
        "near_critical",
        "the critical-path candidates (slack ≤ $eps_ns) of analysis $analysis",
        {"analysis": "analysis id", "eps_ns": "slack bound (ns)"},
        ops="MATCH (an:Analysis {id: $analysis})-[r:RESULT]->(o:Op) "
        f"WHERE o.run = $run AND r.slack_ns <= $eps_ns RETURN {OP_RETURN}",
        edges=_edges_among(
            _RESULT_EDGE, "ra.slack_ns <= $eps_ns AND rb.slack_ns <= $eps_ns", "a, b, ra, rb"
        ),
    ),
    *_selection(
        "in_seq_ranges",
        "each rank r's program-order range [$lo[r], $hi[r]) (Op.seq)",
        {"lo": "per-rank first seq (list indexed by rank)", "hi": "per-rank end seq (exclusive)"},
        ops=f"MATCH (o:Op) WHERE o.run = $run AND o.seq >= $lo[o.rank] AND o.seq < $hi[o.rank] "
        f"RETURN {OP_RETURN}",
        ops_ladybug="MATCH (o:Op) WHERE o.run = $run "
        f"AND o.seq >= $lo[o.rank + 1] AND o.seq < $hi[o.rank + 1] RETURN {OP_RETURN}",
        edges=_edges_among(
            _PLAIN_EDGE,
            "a.seq >= $lo[a.rank] AND a.seq < $hi[a.rank] "
            "AND b.seq >= $lo[b.rank] AND b.seq < $hi[b.rank]",
        ),
        edges_ladybug=_edges_among(
            _PLAIN_EDGE,
            "a.seq >= $lo[a.rank + 1] AND a.seq < $hi[a.rank + 1] "
            "AND b.seq >= $lo[b.rank + 1] AND b.seq < $hi[b.rank + 1]",
        ),
    ),
)

_TABLES: tuple[Query, ...] = (
    Query(
        "collective_first_ops",
        "Per rank, the program position (seq) of the first op of each collective instance "
        "whose message tag is in $tags (ingest tags collective instance k on communicator c "
        "as 2^62 + c·2^32 + k); bounds of an iteration window.",
        "MATCH (o:Op) WHERE o.run = $run AND o.tag IN $tags "
        "RETURN o.rank AS rank, o.tag AS tag, min(o.seq) AS first_seq ORDER BY rank, tag",
        {"tags": "list of collective message tags"},
        {"rank": "int32", "tag": "int64", "first_seq": "int64"},
    ),
    Query(
        "critical_candidates",
        "Ops with slack ≤ $eps_ns under the stored analysis $analysis (ε = 0: the ops on a "
        "critical path), in start-time order.",
        "MATCH (an:Analysis {id: $analysis})-[r:RESULT]->(o:Op) "
        "WHERE o.run = $run AND r.slack_ns <= $eps_ns "
        "RETURN o.vid AS vid, o.rank AS rank, o.kind AS kind, o.cost_ns AS cost_ns, "
        "o.size AS size, o.peer AS peer, r.start_ns AS start_ns, r.slack_ns AS slack_ns, "
        "r.critical AS critical ORDER BY start_ns, vid",
        {"analysis": "analysis id", "eps_ns": "slack bound (ns)"},
        {
            "vid": "int64",
            "rank": "int32",
            "kind": "str",
            "cost_ns": "float64",
            "size": "int64",
            "peer": "int32",
            "start_ns": "float64",
            "slack_ns": "float64",
            "critical": "bool",
        },
    ),
    Query(
        "critical_messages",
        "Messages whose send and recv both have slack ≤ $eps_ns under analysis $analysis: the "
        "cross-rank hops of the message chains that join the critical-path candidates.",
        "MATCH (an:Analysis {id: $analysis})-[ra:RESULT]->(s:Op)-[m:MSG]->(d:Op)<-[rb:RESULT]-(an) "
        "WHERE s.run = $run WITH s, d, m, ra, rb "
        "WHERE ra.slack_ns <= $eps_ns AND rb.slack_ns <= $eps_ns "
        "RETURN s.vid AS send_vid, d.vid AS recv_vid, s.rank AS src, d.rank AS dst, "
        "m.size AS size, ra.start_ns AS send_start_ns, rb.start_ns AS recv_start_ns "
        "ORDER BY send_start_ns, send_vid",
        {"analysis": "analysis id", "eps_ns": "slack bound (ns)"},
        {
            "send_vid": "int64",
            "recv_vid": "int64",
            "src": "int32",
            "dst": "int32",
            "size": "int64",
            "send_start_ns": "float64",
            "recv_start_ns": "float64",
        },
    ),
    Query(
        "heaviest_messages",
        "The $limit largest messages (ties by send vid).",
        "MATCH (s:Op)-[m:MSG]->(d:Op) WHERE s.run = $run "
        "RETURN s.vid AS send_vid, d.vid AS recv_vid, s.rank AS src, d.rank AS dst, "
        "m.size AS size, s.tag AS tag ORDER BY size DESC, send_vid LIMIT $limit",
        {"limit": "number of messages"},
        {
            "send_vid": "int64",
            "recv_vid": "int64",
            "src": "int32",
            "dst": "int32",
            "size": "int64",
            "tag": "int64",
        },
    ),
    Query(
        "rank_pair_traffic",
        "Messages and bytes per (source rank, destination rank) pair.",
        "MATCH (s:Op)-[m:MSG]->(d:Op) WHERE s.run = $run "
        "RETURN s.rank AS src, d.rank AS dst, count(*) AS messages, sum(m.size) AS bytes "
        "ORDER BY src, dst",
        {},
        {"src": "int32", "dst": "int32", "messages": "int64", "bytes": "int64"},
    ),
    Query(
        "rank_summary",
        "Per rank: ops, calc time, sends, recvs, bytes sent and received.",
        "MATCH (o:Op) WHERE o.run = $run "
        "RETURN o.rank AS rank, count(*) AS ops, "
        "sum(CASE WHEN o.kind = 'calc' THEN o.cost_ns ELSE 0.0 END) AS calc_ns, "
        "sum(CASE WHEN o.kind = 'send' THEN 1 ELSE 0 END) AS sends, "
        "sum(CASE WHEN o.kind = 'recv' THEN 1 ELSE 0 END) AS recvs, "
        "sum(CASE WHEN o.kind = 'send' THEN o.size ELSE 0 END) AS bytes_sent, "
        "sum(CASE WHEN o.kind = 'recv' THEN o.size ELSE 0 END) AS bytes_received "
        "ORDER BY rank",
        {},
        {
            "rank": "int32",
            "ops": "int64",
            "calc_ns": "float64",
            "sends": "int64",
            "recvs": "int64",
            "bytes_sent": "int64",
            "bytes_received": "int64",
        },
    ),
)

#: Every catalogue query by name.
CATALOGUE: dict[str, Query] = {q.name: q for q in (*_SELECTIONS, *_TABLES)}

#: Selections usable with :meth:`GraphStore.select` (each has ``ops_``/``edges_`` queries).
SELECTIONS: tuple[str, ...] = tuple(
    q.name.removeprefix("ops_")
    for q in _SELECTIONS
    if q.name.startswith("ops_") and q.name != "ops_page"
)


def get(name: str) -> Query:
    """The catalogue query ``name``; an unknown name lists the known ones."""
    try:
        return CATALOGUE[name]
    except KeyError:
        known = ", ".join(sorted(CATALOGUE))
        raise InputError(f"no catalogue query named {name!r}; known: {known}") from None


__all__ = ["CATALOGUE", "EDGE_COLUMNS", "OP_COLUMNS", "PAGE_EDGES", "Query", "SELECTIONS", "get"]
