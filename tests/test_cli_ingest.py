"""``llamp ingest`` and ``llamp info``: outputs, JSON, exit codes, warnings on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np
import pytest

import llamp.graphdb
from llamp.cli import main
from llamp.graph import ExecutionGraph
from llamp.ingest import read
from llamp.ingest.goal import read_goal

SWEEP3D = Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2"


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def bad_trace(directory: Path) -> Path:
    """Two ranks; rank 0 sends a message nobody receives."""
    directory.mkdir()
    for r in range(2):
        body = ["MPI_Send:110:6575616:1:1,4,4:1:5:1140850688,0,2:111"] if r == 0 else []
        lines = [
            "# collprof 0.9 output file",
            "",
            "MPI_Init:-:1:2:100",
            *body,
            "MPI_Finalize:140:-",
        ]
        (directory / f"pmpi-trace-rank-{r}.txt").write_text("\n".join(lines) + "\n")
    return directory


def test_ingest_to_npz_and_info_json(tmp_path, capsys):
    out = tmp_path / "sweep.npz"
    code, stdout, stderr = run(capsys, "ingest", SWEEP3D, "-o", out)
    assert code == 0, stderr
    assert stderr == ""
    assert (
        f"sweep3d-2x2: 4 ranks, 24084 vertices, 6052 messages (207362012 bytes) → {out}" in stdout
    )
    graph = ExecutionGraph.load(out)
    assert graph.equals(read(SWEEP3D))
    code, stdout, _ = run(capsys, "info", out, "--json")
    assert code == 0
    info = json.loads(stdout)
    assert {
        k: info[k] for k in ("ranks", "vertices", "calcs", "sends", "recvs", "messages", "bytes")
    } == {
        "ranks": 4,
        "vertices": 24084,
        "calcs": 11980,
        "sends": 6052,
        "recvs": 6052,
        "messages": 6052,
        "bytes": 207362012,
    }
    assert info["calc_ns_per_rank"] == [39936849000.0, 39586579000.0, 39785722000.0, 39937886000.0]
    assert info["collectives"] == {
        "allreduce": "recursive_doubling",
        "barrier": "dissemination",
        "bcast": "binomial",
    }


def test_ingest_collectives_option_json(tmp_path, capsys):
    out = tmp_path / "ring.npz"
    code, stdout, _ = run(
        capsys, "ingest", SWEEP3D, "--collectives", "allreduce=ring", "-o", out, "--json"
    )
    assert code == 0
    result = json.loads(stdout)
    # 5760 point-to-point + 4 bcasts · 3 + 3 barriers · 8 + 32 ring allreduces · 2·4·3
    assert result["messages"] == 5760 + 12 + 24 + 768
    assert result["collectives"]["allreduce"] == "ring"
    assert result["output"] == str(out) and result["trace_events"] == 11684


def test_ingest_to_goal(tmp_path, capsys):
    out = tmp_path / "sweep.goal"
    code, _, stderr = run(capsys, "ingest", SWEEP3D, "-o", out)
    assert code == 0, stderr
    back = read_goal(out)
    assert back.summary().messages == 6052
    assert back.summary().calc_ns_per_rank == read(SWEEP3D).summary().calc_ns_per_rank


def test_ingest_to_goal_reports_the_rounding_of_costs(tmp_path, capsys):
    from llamp.ingest.synthetic import stencil_graph

    graph = stencil_graph(ranks=4, iterations=5)
    fractional = graph.cost_ns != np.rint(graph.cost_ns)
    error = np.abs(np.rint(graph.cost_ns) - graph.cost_ns)
    graph.save(tmp_path / "s.npz")
    out = tmp_path / "s.goal"
    code, stdout, stderr = run(capsys, "ingest", tmp_path / "s.npz", "-o", out)
    assert code == 0, stderr
    assert f"{out}: {int(fractional.sum())} calc cost(s) rounded to integral ns" in stdout
    code, stdout, _ = run(capsys, "ingest", tmp_path / "s.npz", "-o", out, "--json")
    rounding = json.loads(stdout)["goal_rounding"]
    assert rounding["costs_rounded"] == int(fractional.sum()) > 0
    assert rounding["rounding_total_ns"] == pytest.approx(error.sum())
    assert rounding["rounding_max_ns"] == pytest.approx(error.max())
    np.testing.assert_array_equal(read_goal(out).cost_ns, np.rint(graph.cost_ns))


def test_info_human_table(capsys):
    code, stdout, _ = run(capsys, "info", SWEEP3D)
    assert code == 0
    assert "ranks" in stdout and "6052 (207362012 bytes)" in stdout
    assert "39.9368 s" in stdout  # rank 0's calc


def test_bad_trace_strict_exit_2_and_lenient_warning(tmp_path, capsys):
    path = bad_trace(tmp_path / "bad")
    code, _, stderr = run(capsys, "ingest", path, "-o", tmp_path / "x.npz")
    assert code == 2
    assert stderr.startswith(
        f"llamp: error: {path / 'pmpi-trace-rank-0.txt'}:4: MPI_Send to rank 1"
    )
    assert not (tmp_path / "x.npz").exists()
    code, stdout, stderr = run(capsys, "ingest", path, "--lenient", "-o", tmp_path / "x.npz")
    assert code == 0
    assert (
        "llamp: warning: lenient: MPI_Send to rank 1 (tag 5, 4 bytes, MPI_COMM_WORLD) has no matching "
        "receive" in stderr
    )
    assert ExecutionGraph.load(tmp_path / "x.npz").summary().messages == 0


def test_bad_output_suffix(tmp_path, capsys):
    code, _, stderr = run(capsys, "ingest", SWEEP3D, "-o", tmp_path / "x.txt")
    assert code == 2
    assert "the output must end in .npz or .goal" in stderr


@pytest.mark.skipif(not hasattr(llamp.graphdb, "open_store"), reason="graph store not built yet")
def test_ingest_into_store_and_info(tmp_path, capsys):
    store = tmp_path / "store"
    code, _, stderr = run(capsys, "--store", store, "ingest", SWEEP3D, "--name", "sweep")
    assert code == 0, stderr
    code, stdout, _ = run(capsys, "--store", store, "info", "sweep", "--json")
    assert code == 0
    assert json.loads(stdout)["messages"] == 6052


# --------------------------------------------------------------------------- SimGrid host speed
TI = Path(__file__).parent / "data" / "traces" / "simgrid-ti"
TI32 = TI / "ti-32ranks"


def test_every_command_that_reads_a_trace_takes_host_speed():
    from llamp.cli import cli

    readers = []
    for name, command in cli.load_all().items():
        arguments = {p.name for p in command.params if isinstance(p, click.Argument)}
        if arguments & {"graph_spec", "path", "trace"}:
            readers.append(name)
            options = {p.name for p in command.params}
            assert "host_speed" in options, f"llamp {name} reads a trace but has no --host-speed"
    assert {"ingest", "info", "predict", "sweep", "report", "collectives"} <= set(readers)


def test_ingest_simgrid_host_speed_is_stored_and_shown(tmp_path, capsys):
    store = tmp_path / "store"
    code, stdout, stderr = run(
        capsys, "--store", store, "ingest", TI32, "--host-speed", "2Gf", "--name", "ti"
    )
    assert code == 0, stderr
    assert "(host speed 2Gf)" in stdout
    code, stdout, _ = run(capsys, "--store", store, "info", "ti", "--json")
    assert code == 0
    info = json.loads(stdout)
    assert info["host_speed_flops_per_s"] == 2e9
    fast = info["calc_ns_total"]
    code, stdout, _ = run(capsys, "--store", store, "info", "ti")
    assert "host speed" in stdout and "2Gf" in stdout
    code, stdout, _ = run(capsys, "--store", store, "runs", "show", "ti")
    assert code == 0 and "host speed" in stdout and "2Gf" in stdout
    # the default, 1 Gf/s, read straight from the trace: twice the compute time
    code, stdout, _ = run(capsys, "info", TI32, "--json")
    default = json.loads(stdout)
    assert default["host_speed_flops_per_s"] == 1e9
    assert default["calc_ns_total"] == pytest.approx(2 * fast, rel=1e-12)
    # a stored run keeps its speed: --host-speed on it is an error, not silently ignored
    code, _, stderr = run(capsys, "--store", store, "predict", "ti", "--host-speed", "1Gf")
    assert code == 2 and "re-ingest the trace with --host-speed" in stderr


def test_host_speed_option_on_analyses_and_its_errors(capsys):
    code, slow, stderr = run(capsys, "predict", TI32, "--host-speed", "20kf", "--json")
    assert code == 0, stderr
    code, fast, stderr = run(capsys, "predict", TI32, "--host-speed", "1e9", "--json")
    assert code == 0, stderr
    assert json.loads(slow)["runtime_ns"] > 1e4 * json.loads(fast)["runtime_ns"]
    for bad, why in (("0", "positive"), ("1 GHz", "cannot read host speed"), ("-5Mf", "positive")):
        code, _, stderr = run(capsys, "info", TI32, "--host-speed", bad)
        assert code == 2 and why in stderr and len(stderr.strip().splitlines()) == 1
    code, _, stderr = run(capsys, "info", SWEEP3D, "--host-speed", "1Gf")
    assert code == 2 and "liballprof, whose computation is already time" in stderr


def test_list_files_in_one_folder_get_their_own_run_names(tmp_path, capsys):
    for f in ("actions0.txt", "actions1.txt"):
        (tmp_path / f).write_bytes((TI / "actions" / f).read_bytes())
    for name in ("cg.S.2.txt", "ep.S.2.txt"):
        (tmp_path / name).write_text("actions0.txt\nactions1.txt\n")
    store = tmp_path / "store"
    for name in ("cg.S.2.txt", "ep.S.2.txt"):
        code, _, stderr = run(capsys, "--store", store, "ingest", tmp_path / name)
        assert code == 0, stderr
    code, stdout, _ = run(capsys, "--store", store, "runs", "--json")
    assert code == 0
    assert {r["name"] for r in json.loads(stdout)["runs"]} == {"cg.S.2", "ep.S.2"}
