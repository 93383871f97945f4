"""Fixtures shared by the test modules, and the test tiers.

Tiers: ``scripts/test.sh`` runs everything (CI); ``scripts/test.sh --quick`` deselects the tests
marked ``slow`` (seconds to minutes each: real MPI programs, the browser, large graphs,
measured runs) and ``integration`` (external programs or servers: mpicc/mpirun, the Neo4j
server, Chromium). Every test has a default timeout (``[tool.pytest.ini_options]``).

Fixtures, by what they hold:

- graphs: ``sweep3d`` (the real 4-rank Sweep3D trace, read once per session), ``tiny`` (a
  three-rank hand-made graph with labels and trace times), ``paper_npz`` (the paper's running
  example, LLAMP Fig. 4, saved as ``.npz``);
- stores: ``backend`` (each of ``store_graphs.BACKENDS``), ``store_uri`` (a fresh empty store
  of it), ``store`` (that store, open), ``neo4j_server`` (the URI of a Neo4j 5 server for
  the session);
- the web UI: ``home`` (a ``LLAMP_HOME`` whose embedded store holds Sweep3D as run
  ``sweep3d``; a module may override it to store more), ``store_env`` (the environment
  pointing at ``home``), ``ui_store`` (None, or the Neo4j server that holds the UI suites'
  runs when ``LLAMP_TEST_UI_STORE=neo4j``).

Helpers that are functions, not fixtures, live in modules named for what they hold
(``hand_graphs``, ``random_graphs``, ``store_graphs``, ``apptest_pages``,
``liballprof_writer``); test modules never import each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hand_graphs import paper_example
from store_graphs import BACKENDS, SWEEP3D, backend_uri, stored_home, tiny_graph

from llamp.graph import ExecutionGraph

if TYPE_CHECKING:  # the store (LadybugDB) is imported only by the tests that use it
    from llamp.graphdb import GraphStore


# ------------------------------------------------------------------------------------ graphs
@pytest.fixture(scope="session")
def sweep3d() -> ExecutionGraph:
    """The Sweep3D 2×2 trace (liballprof, 4 ranks, 24 084 vertices); read-only, shared."""
    from llamp.ingest import read

    return read(SWEEP3D)


@pytest.fixture
def tiny() -> ExecutionGraph:
    return tiny_graph()


@pytest.fixture(scope="module")
def paper_npz(tmp_path_factory) -> str:
    """The paper's running example (LLAMP Fig. 4c, ``hand_graphs.paper_example``) as ``.npz``."""
    path = tmp_path_factory.mktemp("graphs") / "paper.npz"
    paper_example().save(path)
    return str(path)


# ------------------------------------------------------------------------------------ stores
@pytest.fixture(scope="session")
def neo4j_server() -> Iterator[str]:
    """URI of a Neo4j 5 server for the whole session: ``$NEO4J_URI`` if set (a scratch
    database), else Neo4j Community started on a free loopback port
    (:mod:`llamp.graphdb.neo4jserver`, authentication on) and stopped at the end."""
    import os

    from llamp.errors import StoreError
    from llamp.graphdb.neo4jserver import Neo4jServer, unavailable

    if os.environ.get("NEO4J_URI"):
        yield os.environ["NEO4J_URI"]
        return
    why = unavailable()
    if why is not None:
        pytest.skip(f"no Neo4j to test against: {why}")
    server = Neo4jServer(heap="1g", pagecache="256m")
    try:
        server.start()
    except StoreError as err:
        pytest.skip(f"Neo4j could not be started: {str(err).splitlines()[0]}")
    yield server.uri
    server.stop()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store_uri(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> str:
    return backend_uri(request, backend, tmp_path)


@pytest.fixture
def store(store_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GraphStore]:
    from llamp.graphdb import open_store

    monkeypatch.setenv("LLAMP_HOME", str(tmp_path / "home"))  # the store's lowered files
    with open_store(store_uri) as opened:
        yield opened


# ------------------------------------------------------------------------------------ web UI
@pytest.fixture(scope="session")
def ui_store(request: pytest.FixtureRequest) -> str | None:
    """Where the UI suites keep their runs: None, each ``home``'s embedded store; with
    ``LLAMP_TEST_UI_STORE=neo4j``, the session's Neo4j server (``neo4j_server``), so that
    every UI suite runs against Neo4j: ``LLAMP_TEST_UI_STORE=neo4j pytest tests/test_ui_*.py``."""
    import os

    if os.environ.get("LLAMP_TEST_UI_STORE", "") == "neo4j":
        return request.getfixturevalue("neo4j_server")
    return None


@pytest.fixture(scope="module")
def home(tmp_path_factory, sweep3d, ui_store) -> Iterator[Path]:
    """A LLAMP_HOME whose store (embedded, or ``ui_store``) holds Sweep3D as run ``sweep3d``."""
    with stored_home(tmp_path_factory, {"sweep3d": sweep3d}, ui_store) as path:
        yield path


@pytest.fixture
def store_env(home: Path, ui_store: str | None, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment of a user whose ``LLAMP_HOME`` is ``home`` (no ``LLAMP_STORE``, or
    ``ui_store``)."""
    monkeypatch.setenv("LLAMP_HOME", str(home))
    if ui_store is None:
        monkeypatch.delenv("LLAMP_STORE", raising=False)
    else:
        monkeypatch.setenv("LLAMP_STORE", ui_store)
    return home
