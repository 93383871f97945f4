"""Read-only by construction: a corpus of bypass attempts against ad hoc reads.

Each attempt must be refused (QueryError, exit 2 in the CLI) and leave the store, the files
and the process as they were: on the allow-list alone, on a LadybugDB store opened read-only,
on a writer's store (reads run in a read-only transaction), through ``llamp cypher`` without
``--write``, and on Neo4j (``tests/test_neo4j_safety.py`` runs writes past the allow-list there).
The database's own refusal is tested by running writes past the allow-list.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from llamp.errors import QueryError
from llamp.graphdb import open_store, write_clauses
from llamp.graphdb.queries import CATALOGUE

#: Attempts to write, read a server file, load an extension, change a setting or crash.
BYPASSES = [
    "UNWIND [1] AS as CREATE (:Run {id: 908, name: 'x', complete: true})",
    "UNWIND [1] AS x CREATE (:Run {id: 908, name: 'x', complete: true})",
    "MATCH (r:Run) WITH r AS merge CREATE (:Run {id: 909})",
    "create (:Run {id: 910})",
    "CrEaTe (:Run {id: 911})",
    "MATCH (n) RETURN n; CREATE (:Run {id: 912})",
    "MATCH (n) RETURN n ; ; CREATE (:Run {id: 912})",
    "COMMIT; CREATE (:Run {id: 913})",
    "RETURN 1 /* comment */ CREATE (:Run {id: 914})",
    "RETURN 1 // comment\nCREATE (:Run {id: 915})",
    "RETURN '\\' CREATE (:Run {id: 916}) //'",
    'RETURN "\\" CREATE (:Run {id: 917}) //"',
    "RETURN 1 /* unterminated CREATE (:Run {id: 918})",
    "ＣREATE (:Run {id: 919})",
    "RETURN 1\u00a0CREATE (:Run {id: 920})",
    "MATCH (r:Run) SET r.name = 'x'",
    "MATCH (r:Run) DETACH DELETE r",
    "MATCH (r:Run) REMOVE r.name",
    "MERGE (:Run {id: 921})",
    "DROP TABLE Run",
    "ALTER TABLE Run ADD evil STRING",
    "COMMENT ON TABLE Run IS 'x'",
    "ANALYZE",
    "UPDATE json",
    "INSTALL json",
    "LOAD EXTENSION json",
    "LOAD json",
    "ATTACH '/tmp/other.lbug' AS other (dbtype lbug)",
    "DETACH other",
    "USE other",
    "CHECKPOINT",
    "BEGIN TRANSACTION",
    "EXPORT DATABASE '/tmp/llamp-export'",
    "IMPORT DATABASE '/tmp/llamp-export'",
    "COPY Run FROM '/etc/passwd'",
    "COPY (MATCH (r:Run) RETURN r.name) TO '/tmp/llamp-leak.csv'",
    "LOAD FROM '/etc/passwd' RETURN *",
    "LOAD WITH HEADERS (a STRING) FROM '/etc/passwd' RETURN *",
    "CALL read_csv_serial('/etc/passwd') RETURN *",
    "CALL read_csv('/etc/passwd') RETURN *",
    "CALL read_parquet('/etc/passwd') RETURN *",
    "CALL read_npy('/etc/passwd') RETURN *",
    "CALL current_setting('threads') RETURN *",
    "CALL threads=1",
    "CALL { CREATE (:Run {id: 922}) }",
    "RETURN read_csv('/etc/passwd')",
    "UNWIND [1] AS x RETURN apoc.load.json('file:///etc/passwd')",
    "LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row",
    "FOREACH (x IN [1] | CREATE (:Run {id: 923}))",
    "CALL dbms.security.createUser('x', 'y', false)",
    "CALL db.createLabel('X')",
    "RETURN http_get('http://127.0.0.1:1')",
    "RETURN 1 AS read_csv('/etc/passwd')",  # only a type may follow AS with arguments
    "RETURN cast(1 AS `decimal`('/etc/passwd'))",
]

#: Ordinary reads that must keep working (examples from the UI console and the docs).
READS = [
    "MATCH (r:Run) WHERE r.complete = true RETURN r.name AS name ORDER BY name",
    "MATCH (r:Run) RETURN r.set AS s, r.delete AS d, 'CREATE (x)' AS t",
    "MATCH (r:Run) RETURN {remove: 1, drop: 2} AS m, `create` AS c",
    "MATCH (o:Op) WHERE o.kind = $delete RETURN count(*) AS n",
    "MATCH (r:Run) RETURN r.name AS `drop`; ",
    "MATCH (s:Op)-[m:MSG]->(d:Op) RETURN s.rank AS src, sum(m.size) AS bytes, "
    "toInteger(avg(m.size)) AS mean ORDER BY src LIMIT 5",
    "UNWIND range(0, 3) AS i RETURN i, coalesce(NULL, i) AS j",
    "CALL show_tables() RETURN *",
    "CALL table_info('Run') RETURN *",
    "// a comment with CREATE\nMATCH (n:Run) RETURN count(n) AS runs",
    "RETURN 'naïve ünïcode in a string' AS s",
    "MATCH (o:Op) RETURN cast(sum(o.cost_ns) AS DECIMAL(38, 3)) AS total_ns",
    "RETURN cast({a: 1} AS STRUCT(a INT64)) AS s",
]


@pytest.mark.parametrize("cypher", BYPASSES)
def test_allow_list_refuses_every_bypass(cypher):
    assert write_clauses(cypher), cypher


@pytest.mark.parametrize("cypher", READS)
def test_allow_list_admits_ordinary_reads(cypher):
    assert write_clauses(cypher) == []


def test_catalogue_queries_are_allowed_reads():
    for query in CATALOGUE.values():
        for backend in ("ladybug", "neo4j"):
            assert write_clauses(query.text(backend)) == [], query.name


def _runs(uri):
    with open_store(uri, read_only=True) as store:
        return store.query("MATCH (r:Run) RETURN count(r) AS n").iloc[0, 0]


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only", "writer"])
def test_every_bypass_is_refused_and_changes_nothing(store_uri, tiny, read_only, tmp_path):
    with open_store(store_uri) as writer:
        writer.put_run(tiny, "tiny")
    before = _runs(store_uri)
    with open_store(store_uri, read_only=read_only) as store:
        for cypher in BYPASSES:
            with pytest.raises(QueryError):
                store.query(cypher)
        assert store.query("MATCH (r:Run) RETURN r.name AS name")["name"].tolist() == ["tiny"]
    assert _runs(store_uri) == before
    assert not (tmp_path / "llamp-leak.csv").exists()


def test_the_database_refuses_writes_the_allow_list_would_miss(tmp_path, tiny, monkeypatch):
    """Past the allow-list, LadybugDB itself refuses: read-only database and read-only
    transaction on a writer's connection."""
    import llamp.graphdb.store as store_module

    uri = str(tmp_path / "store")
    with open_store(uri) as writer:
        writer.put_run(tiny, "tiny")
    monkeypatch.setattr(store_module, "check_read_only", lambda cypher: None)
    write = "UNWIND [1] AS x CREATE (:Run {id: 908, name: 'x', complete: true})"
    for read_only in (True, False):
        with open_store(uri, read_only=read_only) as store:
            with pytest.raises(QueryError, match="read-only"):
                store.query(write)
            with pytest.raises(QueryError):
                store.query("MATCH (n) RETURN n; CREATE (:Run {id: 909})")
    with open_store(uri, read_only=True) as store:
        assert store.query("MATCH (r:Run) RETURN count(r) AS n").iloc[0, 0] == 1
        assert [r.name for r in store.list_runs()] == ["tiny"]


def test_cli_cypher_without_write_refuses_and_runs_still_lists(tmp_path, tiny):
    uri = str(tmp_path / "store")
    with open_store(uri) as writer:
        writer.put_run(tiny, "tiny")
    cmd = [sys.executable, "-m", "llamp", "--store", uri]
    for cypher in BYPASSES[:2] + [
        "LOAD FROM '/etc/passwd' RETURN *",
        "CALL read_csv_serial('/etc/passwd') RETURN *",
    ]:
        done = subprocess.run([*cmd, "cypher", cypher], capture_output=True, text=True)
        assert done.returncode == 2, done.stderr
        assert "not an allowed read" in done.stderr and "Traceback" not in done.stderr
        assert "root:" not in done.stdout + done.stderr
    listed = subprocess.run([*cmd, "runs", "--json"], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert '"name": "tiny"' in listed.stdout and "908" not in listed.stdout
