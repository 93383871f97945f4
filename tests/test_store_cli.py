"""``llamp runs``, ``llamp cypher``, ``llamp query`` and ``llamp export`` on a store, with their
exit codes (0 ok, 2 bad input, 1 store failure) and JSON output."""

from __future__ import annotations

import json

import cli_process
import numpy as np
import pytest
from store_graphs import BACKENDS, SWEEP3D

from llamp.graph import ExecutionGraph
from llamp.graphdb import open_store


def llamp(capsys, *argv: str) -> tuple[int, str, str]:
    from llamp.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


@pytest.fixture
def backend() -> str:
    """The commands are backend-agnostic (the backends have their own suites): embedded."""
    return "ladybug"


@pytest.fixture
def stored(store_uri, sweep3d) -> str:
    with open_store(store_uri) as store:
        store.put_run(sweep3d, "sweep3d")
    return store_uri


def test_runs_list_show_and_delete(capsys, stored, sweep3d):
    code, out, _ = llamp(capsys, "--store", stored, "runs", "--json")
    assert code == 0
    runs = json.loads(out)["runs"]
    assert [(r["name"], r["vertices"], r["bytes"]) for r in runs] == [
        ("sweep3d", sweep3d.num_vertices, sweep3d.summary().bytes)
    ]
    code, out, _ = llamp(capsys, "--store", stored, "runs", "show", "sweep3d", "--json")
    shown = json.loads(out)
    assert (
        code == 0 and [r["calc_ns"] for r in shown["ranks"]] == sweep3d.summary().calc_ns_per_rank
    )
    code, out, _ = llamp(capsys, "--store", stored, "runs")
    assert code == 0 and "sweep3d" in out and "24084" in out
    code, _, err = llamp(capsys, "--store", stored, "runs", "show", "nope")
    assert code == 2 and "no run named 'nope'" in err
    code, out, _ = llamp(capsys, "--store", stored, "runs", "delete", "sweep3d", "--yes")
    assert code == 0 and "deleted run 'sweep3d'" in out
    code, out, _ = llamp(capsys, "--store", stored, "runs", "--json")
    assert json.loads(out)["runs"] == []


def test_cypher_reads_refuses_writes_and_reports_syntax_errors(capsys, stored):
    code, out, _ = llamp(
        capsys,
        "--store",
        stored,
        "cypher",
        "--json",
        "MATCH (r:Run {name: $n}) MATCH (o:Op) WHERE o.run = r.id "
        "RETURN o.rank AS rank, count(*) AS ops ORDER BY rank",
        "-p",
        'n="sweep3d"',
    )
    assert code == 0
    assert [row["ops"] for row in json.loads(out)] == [6022, 6026, 6018, 6018]
    code, _, err = llamp(capsys, "--store", stored, "cypher", "MATCH (r:Run) SET r.name = 'x'")
    assert code == 2 and "not an allowed read (SET)" in err and "--write" in err
    code, _, _ = llamp(
        capsys, "--store", stored, "cypher", "--write", "MATCH (r:Run) SET r.format = 'edited'"
    )
    assert code == 0
    code, _, err = llamp(capsys, "--store", stored, "cypher", "MATCH (o:Op RETURN o")
    assert code == 2 and "error:" in err
    code, _, err = llamp(capsys, "--store", stored, "cypher", "RETURN 1", "-p", "no-equals")
    assert code == 2 and "expected NAME=VALUE" in err


def test_catalogue_query_from_the_command_line(capsys, stored, sweep3d):
    code, out, _ = llamp(
        capsys, "--store", stored, "query", "rank_pair_traffic", "--run", "sweep3d", "--json"
    )
    assert code == 0
    assert sum(row["bytes"] for row in json.loads(out)) == sweep3d.summary().bytes
    code, out, _ = llamp(
        capsys,
        "--store",
        stored,
        "query",
        "heaviest_messages",
        "--run",
        "sweep3d",
        "-p",
        "limit=2",
        "--json",
    )
    assert [row["size"] for row in json.loads(out)] == sorted(
        sweep3d.size[sweep3d.messages()[0]], reverse=True
    )[:2]
    code, out, _ = llamp(capsys, "--store", stored, "query", "--list", "--json")
    assert {"rank_summary", "critical_candidates", "ops_in_ranks"} <= {
        q["name"] for q in json.loads(out)
    }
    code, out, _ = llamp(capsys, "--store", stored, "query", "ops_in_seq_ranges", "--show")
    assert "$lo[o.rank + 1]" in out and "$lo[o.rank]" in out
    code, _, err = llamp(capsys, "--store", stored, "query", "rank_summary")
    assert code == 2 and "needs --run" in err


def test_export_writes_npz_and_goal(capsys, stored, sweep3d, tmp_path):
    npz = tmp_path / "sweep.npz"
    code, _, _ = llamp(capsys, "--store", stored, "export", "sweep3d", "-o", str(npz))
    assert code == 0 and ExecutionGraph.load(npz).equals(sweep3d)
    goal = tmp_path / "sweep.goal"
    code, out, _ = llamp(capsys, "--store", stored, "export", "sweep3d", "-o", str(goal))
    assert f"{goal}: calc costs written exactly (all integral ns)" in out
    from llamp.ingest.goal import read_goal

    back = read_goal(goal)
    assert code == 0 and back.num_vertices == sweep3d.num_vertices
    np.testing.assert_array_equal(np.sort(back.size), np.sort(sweep3d.size))
    code, _, err = llamp(
        capsys, "--store", stored, "export", "sweep3d", "-o", str(tmp_path / "x.csv")
    )
    assert code == 2 and ".npz or .goal" in err


def test_neo4j_import_files_from_a_trace_and_a_stored_run(capsys, stored, sweep3d, tmp_path):
    out_dir = tmp_path / "csv"
    code, out, _ = llamp(
        capsys,
        "--store",
        stored,
        "neo4j-import-files",
        str(SWEEP3D),
        "sweep3d=again",
        "-o",
        str(out_dir),
    )
    assert code == 0 and "run 'sweep3d-2x2': 24084 ops" in out and "run 'again'" in out
    assert "neo4j-admin database import full --id-type=INTEGER" in out
    ops = (out_dir / "op-2.csv").read_text().splitlines()
    assert len(ops) == 1 + sweep3d.num_vertices and ops[0].startswith("key:ID,")
    code, out, _ = llamp(capsys, "neo4j-import-files", str(SWEEP3D), "-o", str(out_dir), "--json")
    assert code == 0 and json.loads(out)["runs"] == ["sweep3d-2x2"]
    code, _, err = llamp(capsys, "neo4j-import-files", "no-such-run", "-o", str(out_dir))
    assert code == 2 and "no-such-run: no such file, directory or stored run" in err


def test_unreachable_server_exits_1(capsys):
    code, _, err = llamp(capsys, "--store", "bolt://neo4j:pw@127.0.0.1:1", "runs")
    assert code == 1 and "cannot reach the graph server" in err


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("neo4j://127.0.0.1:1", "Unable to retrieve routing information"),
        ("bolt://someone:secret@127.0.0.1:1", "[Errno 111] Connection refused"),
    ],
)
def test_an_unreachable_server_is_one_line_naming_it_and_exit_1(uri, reason, tmp_path):
    """A server that does not answer is a failure of the environment, not of the input: exit
    1 (the runtime-failure code), one line naming the URI (without its password), no driver
    noise and no traceback, for every command that opens the store."""
    for command in (("runs", "--json"), ("cypher", "RETURN 1")):
        done = cli_process.llamp("--store", uri, *command, home=tmp_path, check=False)
        shown = uri.replace("someone:secret@", "someone@").replace("//127", "//neo4j@127")
        assert done.returncode == 1, done.stderr
        assert done.stdout == ""
        assert done.stderr.splitlines() == [
            f"llamp: error: cannot reach the graph server at {shown}: {reason}. Is it "
            "running? (docker compose -f docker/compose.yaml up -d neo4j)"
        ]


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_analyses_of_a_stored_run_equal_the_trace_s_and_are_saved(
    capsys, stored, tmp_path, monkeypatch
):
    """predict, tolerance and path on a stored run (read back from the store, not from a
    graph file) give the numbers of the trace itself, and --save stores each one."""
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path / "home"))
    commands = {
        "predict": ("runtime_ns", "lambda_L", "lambda_G"),
        "tolerance": ("baseline_ns", "latency", "bandwidth"),
        "path": ("runtime_ns",),
    }
    saved = []
    for command, fields in commands.items():
        code, out, err = llamp(capsys, "--store", stored, command, "sweep3d", "--save", "--json")
        assert code == 0, err
        from_store = json.loads(out)
        code, out, err = llamp(capsys, command, str(SWEEP3D), "--json")
        assert code == 0, err
        from_trace = json.loads(out)
        assert {f: from_store[f] for f in fields} == {f: from_trace[f] for f in fields}
        saved.append(from_store["analysis_id"])
    with open_store(stored, read_only=True) as store:
        analyses = {a.id: a.kind for a in store.list_analyses("sweep3d")}
    assert [analyses[a] for a in saved] == list(commands)
