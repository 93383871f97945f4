"""The graph-store schema (docs/architecture.md §Graph store), one definition for both backends.

Nodes::

    (:Run {id, name, ranks, vertices, edges, messages, bytes, format, created, meta,
           complete, has_t_trace, has_label, touched})
    (:Op {key, run, vid, rank, seq, kind, cost_ns, size, peer, tag, t_trace_ns, label})
    (:Analysis {id, run, kind, params, scalars, created, vertices, complete, touched})

Relationships::

    (:Op)-[:NEXT]->(:Op)            requires   (dst starts after src finishes)
    (:Op)-[:ISTART]->(:Op)          irequires  (dst starts after src starts)
    (:Op)-[:MSG {size}]->(:Op)      message    (send → matched recv)
    (:Analysis)-[:RESULT {start_ns, slack_ns, critical}]->(:Op)   per-vertex analysis results

``Op.run`` is the integer ``Run.id``, not the run name: a run that replaces another under the
same name is loaded next to it under a fresh id and swapped in when complete, so the name
never points at a half-loaded graph. ``Op.key = Run.id · 2^32 + vid`` is unique across runs
(LadybugDB's primary key, a uniqueness constraint in Neo4j). ``Op.kind`` is
``'calc' | 'send' | 'recv'`` and ``Op.seq`` the position of the op within its rank, so ad hoc
Cypher reads naturally: ``MATCH (o:Op {kind: 'send'}) WHERE o.run = 3 AND o.seq < 10``.

A run or analysis is visible only when ``complete = true``; every catalogue query and every
listing filters on it (atomic ingest, docs/architecture.md §Graph store). ``touched`` (milliseconds since the epoch,
the server's clock in Neo4j) lets the Neo4j backend tell a load that is still running from one
that died.
"""

from __future__ import annotations

import numpy as np

from llamp.graph import IREQUIRES, MESSAGE, REQUIRES

RUN, OP, ANALYSIS = "Run", "Op", "Analysis"

#: Relationship type of each graph edge kind, and back.
EDGE_TYPES: dict[int, str] = {REQUIRES: "NEXT", IREQUIRES: "ISTART", MESSAGE: "MSG"}
EDGE_KINDS: dict[str, int] = {name: kind for kind, name in EDGE_TYPES.items()}
RESULT = "RESULT"

#: ``Op.key = run · 2^KEY_SHIFT + vid``: 2^32 vertices per run, 2^31 runs.
KEY_SHIFT = 32
MAX_VERTICES = 1 << KEY_SHIFT

#: Op properties and their LadybugDB types; t_trace_ns and label may be null.
OP_PROPERTIES: dict[str, str] = {
    "key": "INT64",
    "run": "INT64",
    "vid": "INT64",
    "rank": "INT32",
    "seq": "INT64",
    "kind": "STRING",
    "cost_ns": "DOUBLE",
    "size": "INT64",
    "peer": "INT32",
    "tag": "INT64",
    "t_trace_ns": "DOUBLE",
    "label": "STRING",
}

RUN_PROPERTIES: dict[str, str] = {
    "id": "INT64",
    "name": "STRING",
    "ranks": "INT64",
    "vertices": "INT64",
    "edges": "INT64",
    "messages": "INT64",
    "bytes": "INT64",
    "format": "STRING",
    "created": "STRING",
    "meta": "STRING",
    "complete": "BOOLEAN",
    "has_t_trace": "BOOLEAN",
    "has_label": "BOOLEAN",
    "touched": "INT64",
}

ANALYSIS_PROPERTIES: dict[str, str] = {
    "id": "STRING",
    "run": "INT64",
    "kind": "STRING",
    "params": "STRING",
    "scalars": "STRING",
    "created": "STRING",
    "vertices": "INT64",
    "complete": "BOOLEAN",
    "touched": "INT64",
}

RESULT_PROPERTIES: dict[str, str] = {
    "start_ns": "DOUBLE",
    "slack_ns": "DOUBLE",
    "critical": "BOOLEAN",
}


def op_key(run_id: int, vid: np.ndarray | int) -> np.ndarray | int:
    """The store-wide unique key of vertex ``vid`` of run ``run_id``."""
    return (np.int64(run_id) << KEY_SHIFT) + vid


def _node_table(label: str, properties: dict[str, str], primary: str) -> str:
    columns = ", ".join(f"{name} {kind}" for name, kind in properties.items())
    return f"CREATE NODE TABLE IF NOT EXISTS {label}({columns}, PRIMARY KEY({primary}))"


def _rel_table(name: str, src: str, dst: str, properties: dict[str, str] | None = None) -> str:
    columns = "".join(f", {n} {k}" for n, k in (properties or {}).items())
    return f"CREATE REL TABLE IF NOT EXISTS {name}(FROM {src} TO {dst}{columns})"


#: LadybugDB DDL: typed node/rel tables, the only index is the primary key.
LADYBUG_DDL: tuple[str, ...] = (
    _node_table(RUN, RUN_PROPERTIES, "id"),
    _node_table(OP, OP_PROPERTIES, "key"),
    _node_table(ANALYSIS, ANALYSIS_PROPERTIES, "id"),
    _rel_table("NEXT", OP, OP),
    _rel_table("ISTART", OP, OP),
    _rel_table("MSG", OP, OP, {"size": "INT64"}),
    _rel_table(RESULT, ANALYSIS, OP, RESULT_PROPERTIES),
)

#: Neo4j 5 DDL: uniqueness constraints (which also index) and lookup indexes.
NEO4J_DDL: tuple[str, ...] = (
    "CREATE CONSTRAINT llamp_run_id IF NOT EXISTS FOR (r:Run) REQUIRE r.id IS UNIQUE",
    "CREATE CONSTRAINT llamp_op_key IF NOT EXISTS FOR (o:Op) REQUIRE o.key IS UNIQUE",
    "CREATE CONSTRAINT llamp_analysis_id IF NOT EXISTS FOR (a:Analysis) REQUIRE a.id IS UNIQUE",
    "CREATE INDEX llamp_op_run IF NOT EXISTS FOR (o:Op) ON (o.run)",
    # Run names are unique (concurrent ingests of one name cannot both succeed): a
    # constraint, which replaces the plain index of earlier versions.
    "DROP INDEX llamp_run_name IF EXISTS",
    "CREATE CONSTRAINT llamp_run_name_unique IF NOT EXISTS FOR (r:Run) REQUIRE r.name IS UNIQUE",
    "CREATE INDEX llamp_analysis_run IF NOT EXISTS FOR (a:Analysis) ON (a.run)",
)
