"""Graphs and store helpers for the graph-store suites (``test_store*.py``, ``test_queries.py``);
the fixtures built on them (``neo4j_server``, ``backend``, ``store_uri``, ``store``, ``sweep3d``,
``tiny``) are in ``conftest.py``.

Every store test runs on each of :data:`BACKENDS`: ``ladybug`` (embedded, a fresh directory per
test) and ``neo4j`` (Neo4j Community started once per session on a free loopback port by the
``neo4j_server`` fixture, or the server ``NEO4J_URI`` names, which must then be a scratch
database: llamp's nodes are wiped before each test).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph

TRACES = Path(__file__).parent / "data" / "traces"
SWEEP3D = TRACES / "liballprof" / "sweep3d-2x2"
BACKENDS = ["ladybug", pytest.param("neo4j", marks=pytest.mark.integration)]


@contextmanager
def stored_home(
    tmp_path_factory, runs: dict[str, ExecutionGraph], store: str | None = None
) -> Iterator[Path]:
    """A fresh ``LLAMP_HOME`` (no ``LLAMP_STORE``) whose embedded store holds ``runs`` (name →
    graph); the environment points at it until the block ends (module-scoped UI fixtures).
    ``store``: a Neo4j URI (the ``ui_store`` fixture) that holds the runs instead, wiped
    first, and ``LLAMP_STORE`` points at it."""
    from llamp.graphdb import open_store

    path = tmp_path_factory.mktemp("llamp-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLAMP_HOME", str(path))
        if store is None:
            mp.delenv("LLAMP_STORE", raising=False)
        else:
            wipe(store)
            mp.setenv("LLAMP_STORE", store)
        with open_store(None) as opened:
            for name, graph in runs.items():
                opened.put_run(graph, name)
        yield path


def wipe(uri: str) -> None:
    """Remove every llamp node (and its relationships) from a Neo4j store."""
    from llamp.graphdb import open_store
    from llamp.graphdb.neo4j import Neo4jStore

    with open_store(uri) as store:
        assert isinstance(store, Neo4jStore)
        for label in ("Analysis", "Op", "Run"):
            store.query(f"MATCH (n:{label}) DETACH DELETE n", write=True)


def closed_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def backend_uri(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> str:
    """A fresh, empty store of ``backend``."""
    if backend == "ladybug":
        return str(tmp_path / "store")
    uri = request.getfixturevalue("neo4j_server")
    wipe(uri)
    return uri


def tiny_graph() -> ExecutionGraph:
    """Three ranks: calcs, an Isend whose next calc irequires it, messages 0→1→2→0, labels and
    trace times on every vertex."""
    # rank 0: calc, isend→1, calc (irequires the isend), recv←2
    # rank 1: recv←0, calc, send→2
    # rank 2: recv←1, send→0, calc
    rank = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    kind = [CALC, SEND, CALC, RECV, RECV, CALC, SEND, RECV, SEND, CALC]
    cost = [100.0, 0, 50.5, 0, 0, 30.25, 0, 0, 0, 10.0]
    size = [0, 8, 0, 16, 8, 0, 4, 4, 16, 0]
    peer = [0, 1, 0, 2, 0, 0, 2, 1, 0, 0]
    tag = [0, 5, 0, 7, 5, 0, 9, 9, 7, 0]
    edges = [
        (0, 1, REQUIRES),
        (1, 2, IREQUIRES),
        (2, 3, REQUIRES),
        (1, 3, REQUIRES),
        (4, 5, REQUIRES),
        (5, 6, REQUIRES),
        (7, 8, REQUIRES),
        (8, 9, REQUIRES),
        (1, 4, MESSAGE),
        (6, 7, MESSAGE),
        (8, 3, MESSAGE),
    ]
    src, dst, ekind = zip(*edges, strict=True)
    return ExecutionGraph.from_arrays(
        3,
        rank=rank,
        kind=kind,
        cost_ns=cost,
        size=size,
        peer=peer,
        tag=tag,
        edge_src=src,
        edge_dst=dst,
        edge_kind=ekind,
        t_trace_ns=np.array([0, 100, 101, 160, 0, 120, 151, 0, 170, 180], dtype=np.float64),
        label=[f"rank{r}.txt:{i + 1} op" for i, r in enumerate(rank)],
        meta={"name": "tiny", "format": "hand", "collectives": {"bcast": "binomial"}},
    )


def chain_graph(ranks: int, steps: int) -> ExecutionGraph:
    """A large valid graph built with numpy: each rank repeats (calc, send to the next rank,
    recv from the previous one) ``steps`` times, in program order."""
    per_rank = 3 * steps
    n = ranks * per_rank
    vid = np.arange(n, dtype=np.int64)
    rank = vid // per_rank
    pos = vid % per_rank
    kind = np.array([CALC, SEND, RECV], dtype=np.int8)[pos % 3]
    cost = np.where(kind == CALC, 1000.0 + (vid % 7) * 10.0, 0.0)
    size = np.where(kind == CALC, 0, 64 + (vid % 5) * 8)
    nxt, prv = (rank + 1) % ranks, (rank - 1) % ranks
    peer = np.where(kind == SEND, nxt, np.where(kind == RECV, prv, 0))
    tag = np.where(kind == CALC, 0, pos // 3)
    local = np.flatnonzero(pos < per_rank - 1)
    sends = np.flatnonzero(kind == SEND)
    recvs = nxt[sends] * per_rank + pos[sends] + 1
    size[recvs] = size[sends]
    return ExecutionGraph.from_arrays(
        ranks,
        rank=rank,
        kind=kind,
        cost_ns=cost,
        size=size,
        peer=peer,
        tag=tag,
        edge_src=np.concatenate([local, sends]),
        edge_dst=np.concatenate([local + 1, recvs]),
        edge_kind=np.concatenate([np.full(local.size, REQUIRES), np.full(sends.size, MESSAGE)]),
        t_trace_ns=vid.astype(np.float64),
        meta={"name": f"chain-{ranks}x{steps}", "format": "synthetic"},
    )
