"""The graph store (docs/architecture.md §Graph store): execution graphs and analysis results in a graph database.

Embedded LadybugDB by default (``$LLAMP_HOME/store``), Neo4j 5 over Bolt for a server
(``bolt://user:pass@host:7687`` or ``LLAMP_STORE``); one interface, :class:`GraphStore`::

    from llamp.graphdb import open_store
    with open_store() as store:
        store.put_run(graph, "sweep3d")
        sub = store.select("sweep3d", ranks=[0, 1])
        store.run_query("rank_pair_traffic", "sweep3d")
"""

from llamp.graphdb.queries import CATALOGUE, Query
from llamp.graphdb.readonly import check_read_only, write_clauses
from llamp.graphdb.store import AnalysisInfo, GraphStore, RunInfo, open_store

__all__ = [
    "CATALOGUE",
    "AnalysisInfo",
    "GraphStore",
    "Query",
    "RunInfo",
    "check_read_only",
    "open_store",
    "write_clauses",
]
