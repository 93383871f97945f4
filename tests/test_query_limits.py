"""Queries cannot take the server down: a corpus of hostile Cypher against ``llamp cypher``,
``llamp query`` and the UI's console (docs/SECURITY.md, "Query limits").

Each attack must end with exit 2 and one ``llamp: error:`` line naming the limit (and how to
raise it), within bounded time and memory, the store unchanged; the UI console must report it
and keep serving. The allow-list must stay linear in the query's length.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apptest_pages import assert_clean, page

from llamp.config import QueryLimits, query_limits
from llamp.errors import ParameterError, QueryError
from llamp.graphdb import open_store, write_clauses
from llamp.graphdb.readonly import check_shape
from llamp.graphdb.worker import check_params
from llamp.json_values import json_value

LIMITS = QueryLimits()


# ----------------------------------------------------------------------------- allow-list
@pytest.mark.parametrize(
    "cypher, named",
    [
        ("RETURN `repeat`('a', 1000000000)", "repeat()"),
        ("RETURN {x: read_csv('/etc/passwd')}", "read_csv()"),
        ("RETURN {x: 1, y: `read_csv`('/etc/passwd')}", "read_csv()"),
        ("CALL `read_csv`('/etc/passwd') RETURN *", "CALL read_csv"),
        ("RETURN `apoc`.`load`.json('file:///etc/passwd')", "apoc.load.json()"),
        ("RETURN [x IN [1] | {k: http_get('http://127.0.0.1:1')}]", "http_get()"),
        ("RETURN CASE WHEN true THEN read_json('/etc/passwd') END", "read_json()"),
        ("RETURN {x: CREATE(1)}", "CREATE()"),
        ("RETURN 1.CREATE", "CREATE"),
    ],
)
def test_calls_are_seen_in_backticks_maps_and_every_expression(cypher, named):
    assert any(named in item for item in write_clauses(cypher)), write_clauses(cypher)


@pytest.mark.parametrize(
    "cypher",
    [
        "RETURN `count`(*) AS n",
        "MATCH (r:Run) RETURN {create: 1, n: toInteger(r.id)} AS m",
        "RETURN 'it\\'s' AS s, \"a \\\" b\" AS t",
        "MATCH (a:Op)-[:NEXT*1..3]->(b:Op) RETURN count(*) AS n",
    ],
)
def test_ordinary_reads_stay_allowed(cypher):
    assert write_clauses(cypher) == []
    check_shape(cypher, LIMITS)


@pytest.mark.parametrize(
    "body",
    ["'\\", "\\'", '"\\', "`", "/*", "'`\"", ";", "a.", "-[", "a "],
    ids=[
        "quote-bs",
        "bs-quote",
        "dq-bs",
        "backtick",
        "comment",
        "mixed",
        "semicolons",
        "dots",
        "patterns",
        "words",
    ],
)
def test_the_allow_list_is_linear_in_the_query_length(body):
    """120 KB of quotes and backslashes took the quadratic checker 111 s."""
    text = body * (120_000 // len(body))
    started = time.perf_counter()
    write_clauses(text)
    with pytest.raises(QueryError, match="LLAMP_CYPHER_MAX_CHARS"):
        check_shape(text, LIMITS)
    assert time.perf_counter() - started < 10.0  # a loaded 2-core machine: ~0.3 s idle


@pytest.mark.parametrize(
    "cypher, message",
    [
        ("RETURN " + "(" * 3000 + "1" + ")" * 3000, "nests brackets 3000 deep"),
        ("RETURN " + "[" * 3000 + "1" + "]" * 3000, "nests brackets 3000 deep"),
        ("MATCH p=(a:Op)-[*1..30]-(b:Op) RETURN count(*)", "[*1..30]"),
        ("MATCH (a:Op)-[*]->(b:Op) RETURN count(*)", "[*]"),
        ("MATCH (a:Op)<-[e:MSG*2..]-(b:Op) RETURN count(*)", "[*2..]"),
        ("RETURN '\udcff'", "not valid UTF-8 text (byte 0xff at character 9)"),
        ("RETURN 1" + " " * 20_000, "LLAMP_CYPHER_MAX_CHARS"),
    ],
)
def test_shapes_the_parser_cannot_afford_are_refused_first(cypher, message):
    with pytest.raises(QueryError) as info:
        check_shape(cypher, LIMITS)
    assert message in str(info.value)


def test_parameters_out_of_range_are_refused():
    deep: list = []
    for _ in range(60_000):
        deep = [deep]
    with pytest.raises(QueryError, match="nests more than 64 deep"):
        check_params({"x": deep}, LIMITS)
    with pytest.raises(QueryError, match="does not fit in a 64-bit integer"):
        check_params({"x": 1 << 64}, LIMITS)
    with pytest.raises(QueryError, match="does not fit in a 64-bit integer"):
        check_params({"x": {"a": [-(1 << 63) - 1]}}, LIMITS)
    check_params({"x": [(1 << 63) - 1, -(1 << 63), 1.5, "s", None, True]}, LIMITS)


def test_limits_come_from_the_environment_and_flags(monkeypatch):
    monkeypatch.setenv("LLAMP_CYPHER_MEMORY", "512MiB")
    monkeypatch.setenv("LLAMP_CYPHER_TIMEOUT", "90s")
    monkeypatch.setenv("LLAMP_CYPHER_MAX_HOPS", "4")
    limits = query_limits()
    assert (limits.memory_bytes, limits.timeout_s, limits.max_hops) == (512 << 20, 90.0, 4)
    assert (
        query_limits("1GiB", "2").timeout_s == 2.0 and query_limits("1GiB").memory_bytes == 1 << 30
    )
    for bad in ({"memory": "1MiB"}, {"memory": "lots"}, {"timeout": "1e400s"}, {"timeout": "0s"}):
        with pytest.raises(ParameterError):
            query_limits(**bad)


def test_every_value_a_query_returns_becomes_json():
    import datetime
    import decimal

    values = [
        decimal.Decimal("414724024"),
        decimal.Decimal("2.5"),
        datetime.date(2026, 1, 2),
        datetime.timedelta(seconds=90),
        b"\x00\xff",
        {"nested": [decimal.Decimal(3)]},
    ]
    assert json.loads(json.dumps([json_value(v) for v in values])) == [
        414724024,
        2.5,
        "2026-01-02",
        90.0,
        "00ff",
        {"nested": [3]},
    ]


# ----------------------------------------------------------------------------- the CLI
@pytest.fixture(scope="module")
def stored(tmp_path_factory, sweep3d) -> tuple[str, Path]:
    root = tmp_path_factory.mktemp("limits")
    uri = str(root / "store")
    with open_store(uri) as store:
        store.put_run(sweep3d, "sweep3d")
    return uri, root / "home"


def _llamp(stored, *args, memory: str = "512MiB", timeout: str = "20s"):
    """``llamp cypher``/``query`` in a process of its own: (exit code, stdout, stderr, the
    largest resident set of the process and its worker in bytes)."""
    uri, home = stored
    argv = [sys.executable, "-m", "llamp", "--store", uri, *args]
    if args[0] in ("cypher", "query"):
        argv += ["--memory", memory, "--timeout", timeout]
    probe = (
        "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
        "sys.exit(p.returncode)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True,
        env={"LLAMP_HOME": str(home), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    err = done.stderr.decode(errors="replace").strip().splitlines()
    peak = int(err.pop()) << 10
    return done.returncode, done.stdout.decode(), "\n".join(err), peak


def _assert_refused(code, err, *words):
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("llamp: error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


def _store_unchanged(stored, sweep3d):
    code, out, err, _ = _llamp(stored, "runs", "check", "--json")
    assert code == 0, err
    assert [(c["name"], c["status"]) for c in json.loads(out)] == [("sweep3d", "ok")]
    code, out, _, _ = _llamp(stored, "runs", "--json")
    assert [(r["name"], r["vertices"]) for r in json.loads(out)["runs"]] == [
        ("sweep3d", sweep3d.num_vertices)
    ]


@pytest.mark.parametrize(
    "args, words",
    [
        (["cypher", "RETURN " + "(" * 3000 + "1" + ")" * 3000], ["3000 deep", "MAX_DEPTH"]),
        (["cypher", "MATCH p=(a:Op)-[*1..30]-(b:Op) RETURN count(*)"], ["MAX_HOPS"]),
        (["cypher", "RETURN `repeat`('a', 1000000000)"], ["repeat()"]),
        (["cypher", "RETURN {x: read_csv('/etc/passwd')}"], ["read_csv()"]),
        (["cypher", "RETURN $x", "-p", "x=" + "[" * 60_000 + "]" * 60_000], ["64 deep"]),
        (["cypher", "RETURN $x", "-p", "x=18446744073709551616"], ["64-bit"]),
        (["cypher", "RETURN '" + "\\'" * 60_000 + "'"], ["MAX_CHARS"]),
        (["cypher", "UNWIND range(1, 1000000000) AS x RETURN sum(x)"], ["memory", "--memory"]),
        (["cypher", "UNWIND range(0, 3000000000) AS x RETURN count(*)"], ["memory", "--memory"]),
        (["query", "rank_summary", "--run", "sweep3d", "-p", "x=" + "{" * 100], ["64 deep"]),
    ],
    ids=[
        "nested-3000",
        "var-length-30",
        "backtick-call",
        "map-value-call",
        "deep-param",
        "param-2^64",
        "quotes-120KB",
        "range-bomb",
        "range-3e9",
        "catalogue-deep-param",
    ],
)
def test_cli_refuses_the_corpus_with_one_line(stored, args, words):
    started = time.monotonic()
    code, _, err, peak = _llamp(stored, *args)
    _assert_refused(code, err, *words)
    assert time.monotonic() - started < 120
    assert peak < 1536 << 20, f"{peak >> 20} MiB"


def test_cli_refuses_non_utf8_bytes(stored):
    uri, home = stored
    done = subprocess.run(
        [sys.executable, "-m", "llamp", "--store", uri, "cypher", b"RETURN '\xff\xfe' AS s"],
        capture_output=True,
        env={"LLAMP_HOME": str(home), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    _assert_refused(done.returncode, done.stderr.decode().strip(), "not valid UTF-8", "0xff")


def test_decimal_sums_print_as_json_numbers(stored, sweep3d):
    code, out, err, _ = _llamp(
        stored, "cypher", "--json", "MATCH (o:Op) RETURN sum(o.size) AS s, count(*) AS n"
    )
    assert code == 0, err
    assert json.loads(out) == [{"s": int(sweep3d.size.sum()), "n": sweep3d.num_vertices}]


@pytest.mark.slow
@pytest.mark.parametrize(
    "cypher, timeout, words",
    [
        (
            "RETURN size(lpad('a', 2000000000, 'b')) AS n",
            "120s",
            ["more memory than its limit of 512 MiB", "--memory"],
        ),
        # 6 hops, not more: with 10 the query outgrows 512 MiB within 2 s on a fast machine
        # (the memory limit then stops it first); here 6 hops need ~6 s to get there
        (
            "MATCH p=(a:Op)-[*1..6]-(b:Op) RETURN count(*) AS n",
            "2s",
            ["time limit of 2 s", "--timeout"],
        ),
    ],
    ids=["lpad-bomb", "var-length-explosion"],
)
def test_exhausting_reads_stop_at_the_limits(stored, sweep3d, cypher, timeout, words):
    started = time.monotonic()
    code, _, err, peak = _llamp(stored, "cypher", cypher, timeout=timeout)
    _assert_refused(code, err, *words)
    assert time.monotonic() - started < 180
    assert peak < 1536 << 20, f"{peak >> 20} MiB"
    _store_unchanged(stored, sweep3d)


def test_the_store_is_unchanged_by_the_corpus(stored, sweep3d):
    for cypher in (
        "RETURN " + "(" * 3000 + "1" + ")" * 3000,
        "UNWIND range(1, 1000000000) AS x RETURN sum(x)",
    ):
        code, _, err, _ = _llamp(stored, "cypher", cypher)
        assert code == 2, err
    _store_unchanged(stored, sweep3d)


# ----------------------------------------------------------------------------- the UI
def test_ui_console_reports_a_limit_and_stays_up(store_env, monkeypatch):
    monkeypatch.setenv("LLAMP_CYPHER_MEMORY", "512MiB")
    at = page("cypher")
    for cypher, words in (
        ("UNWIND range(1, 1000000000) AS x RETURN sum(x) AS s", "LLAMP_CYPHER_MEMORY"),
        ("RETURN " + "(" * 3000 + "1" + ")" * 3000, "LLAMP_CYPHER_MAX_DEPTH"),
        ("RETURN {x: read_csv('/etc/passwd')}", "read_csv()"),
    ):
        at.text_area(key="cypher_text").set_value(cypher).run()
        at.button(key="cypher_run_button").click().run()
        assert not at.exception
        assert any(words in e.value for e in at.error), [e.value for e in at.error]
    at.text_area(key="cypher_text").set_value(
        "MATCH (o:Op) RETURN sum(o.size) AS s, count(*) AS n"
    ).run()
    at.button(key="cypher_run_button").click().run()
    assert_clean(at)
    assert int(at.dataframe[0].value["n"].iloc[0]) > 0


# ----------------------------------------------------------------------------- both backends
def test_the_worker_reads_each_backend_and_every_value_becomes_json(store_uri, tiny, tmp_path):
    """Sums (LadybugDB: exact decimals), nodes, lists and maps as JSON, on every backend."""
    from llamp.graphdb.worker import plain_rows, run_query

    with open_store(store_uri) as store:
        store.put_run(tiny, "tiny")
    table = run_query(
        store_uri,
        "MATCH (r:Run {name: $name}) MATCH (o:Op) WHERE o.run = r.id "
        "RETURN sum(o.size) AS bytes, count(*) AS ops, collect(o.vid)[0..2] AS first, "
        "{n: r.name} AS m, r AS run",
        {"name": "tiny"},
        limits=QueryLimits(memory_bytes=512 << 20, timeout_s=60),
    )
    row = json.loads(json.dumps(plain_rows(table)))[0]
    assert (row["bytes"], row["ops"], row["m"]) == (
        int(tiny.size.sum()),
        tiny.num_vertices,
        {"n": "tiny"},
    )
    assert len(row["first"]) == 2 and "tiny" in json.dumps(row["run"])
    with pytest.raises(QueryError, match="not an allowed read"):
        run_query(store_uri, "MATCH (r:Run) DETACH DELETE r")


def test_the_worker_keeps_the_stores_locking(stored, sweep3d):
    """A read runs beside a writer; a write waits for it (with the store's note), and the
    wait does not count against the time limit."""
    from llamp.graphdb.locking import WriterLock

    uri, home = stored
    with WriterLock(Path(uri)):
        code, out, err, _ = _llamp(stored, "cypher", "--json", "MATCH (r:Run) RETURN r.name AS n")
        assert code == 0 and json.loads(out) == [{"n": "sweep3d"}], err
        writer = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llamp",
                "--store",
                uri,
                "cypher",
                "--write",
                "--timeout",
                "1s",
                "MATCH (r:Run) RETURN count(r) AS n",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={"LLAMP_HOME": str(home), "PATH": "/usr/bin:/bin"},
        )
        note = writer.stderr.readline()  # type: ignore[union-attr] - the worker waits, or fails
        assert "being written by" in note and "waiting" in note, note
        time.sleep(2.0)  # longer than --timeout: waiting for the lock does not count
        assert writer.poll() is None, "the writing query did not wait for the writer"
    out, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    assert out.split() == ["n", "-", "1"], out
    _store_unchanged(stored, sweep3d)


@pytest.mark.slow
def test_an_engine_crash_ends_the_worker_only(stored, sweep3d, monkeypatch):
    """With the nesting limit raised past it, 3,000 nested parentheses crash LadybugDB's
    parser (SIGSEGV): the worker dies, the command says so in one line (exit 2)."""
    uri, home = stored
    nested = "RETURN " + "(" * 3000 + "1" + ")" * 3000
    done = subprocess.run(
        [sys.executable, "-m", "llamp", "--store", uri, "cypher", "--timeout", "300s", nested],
        capture_output=True,
        text=True,
        env={
            "LLAMP_HOME": str(home),
            "PATH": "/usr/bin:/bin",
            "LLAMP_CYPHER_MAX_DEPTH": "5000",
            "LLAMP_CYPHER_MAX_CHARS": "100000",
        },
        timeout=600,
    )
    _assert_refused(done.returncode, done.stderr.strip(), "crashed on this query")
    _store_unchanged(stored, sweep3d)
