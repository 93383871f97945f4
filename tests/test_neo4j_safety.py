"""Neo4j's own guards, past llamp's allow-list (``llamp.graphdb.readonly``): reads run in
``READ_ACCESS`` transactions, which Neo4j refuses to write in, whatever the query;
``LOAD CSV`` reads no file (the local server disallows file URLs, as docs/SECURITY.md asks of
a shared one); unknown procedures (APOC is not installed) fail; and a server whose databases are read-only
(``server.databases.default_to_read_only``, docs/SECURITY.md) refuses every write."""

from __future__ import annotations

import pytest
from store_graphs import tiny_graph, wipe

import llamp.graphdb.store as store_module
from llamp.errors import LlampError, QueryError, StoreError
from llamp.graphdb import open_store

pytestmark = pytest.mark.integration

#: Reads that would write or reach outside the graph: the allow-list refuses each; with the
#: allow-list switched off, Neo4j must still refuse or confine them.
PAST_THE_ALLOW_LIST = [
    "CREATE (:Run {id: 901, name: 'x', complete: true})",
    "MATCH (r:Run) SET r.name = 'renamed'",
    "MATCH (n) DETACH DELETE n",
    "CALL { CREATE (:Run {id: 902, name: 'y', complete: true}) }",
    "UNWIND [1] AS x CALL { WITH x MERGE (:Run {id: 903}) } RETURN x",
    "LOAD CSV FROM 'file:///etc/passwd' AS row CREATE (:Leak {line: row})",
    "LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row",
    "RETURN apoc.load.json('file:///etc/passwd') AS x",
    "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DETACH DELETE n', {})",
    "CALL dbms.security.createUser('intruder', 'password1', false)",
    "CALL db.createLabel('Leak')",
    "CREATE INDEX leak FOR (n:Leak) ON (n.x)",
    "CREATE DATABASE leak",
]


@pytest.fixture
def neo4j(neo4j_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> str:
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path / "home"))
    wipe(neo4j_server)
    with open_store(neo4j_server) as store:
        store.put_run(tiny_graph(), "tiny")
    return neo4j_server


def _state(uri: str) -> tuple:
    with open_store(uri, read_only=True) as store:
        frame = store.query("MATCH (n) RETURN labels(n)[0] AS label, count(n) AS n ORDER BY label")
        return tuple(map(tuple, frame.itertuples(index=False)))


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only store", "writer"])
def test_read_access_refuses_what_the_allow_list_would_miss(neo4j, monkeypatch, read_only):
    before = _state(neo4j)
    monkeypatch.setattr(store_module, "check_read_only", lambda cypher: None)
    with open_store(neo4j, read_only=read_only) as store:
        for cypher in PAST_THE_ALLOW_LIST:
            with pytest.raises((QueryError, StoreError)):
                store.query(cypher)
    monkeypatch.undo()
    assert _state(neo4j) == before
    with open_store(neo4j, read_only=True) as store:
        assert [r.name for r in store.list_runs()] == ["tiny"]
        edition = store.query("CALL dbms.components() YIELD edition RETURN edition")
        assert edition["edition"].tolist() == ["community"]


@pytest.mark.slow
def test_a_read_only_server_refuses_every_write(tmp_path, monkeypatch):
    """A database made read-only by the server's configuration (docs/SECURITY.md) serves
    reads and refuses writes whatever the client asks; a writer cannot even open it."""
    from llamp.graphdb.neo4jserver import Neo4jServer, unavailable

    why = unavailable()
    if why is not None:
        pytest.skip(f"no Neo4j to test against: {why}")
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path / "llamp"))
    home = tmp_path / "dbms"
    with Neo4jServer(heap="512m", pagecache="64m", home=home) as server:
        with open_store(server.uri) as store:
            store.put_run(tiny_graph(), "tiny")
    with Neo4jServer(heap="512m", pagecache="64m", home=home, read_only=True) as server:
        with open_store(server.uri, read_only=True) as reader:
            assert [r.name for r in reader.list_runs()] == ["tiny"]
            assert reader.load_run("tiny").equals(tiny_graph())
            with pytest.raises(LlampError, match="read"):
                reader.query("CREATE (:Run {id: 1, name: 'x', complete: true})", write=True)
        with pytest.raises(LlampError, match="read"):
            open_store(server.uri)  # a writer cannot even create the schema
