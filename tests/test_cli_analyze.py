"""The analysis subcommands: stable JSON, exit codes, selections and write-back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_process import llamp

from llamp.ingest import read
from llamp.lp import predict, tolerance
from llamp.params import LogGPS

SWEEP3D = Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2"


def test_predict_json_on_the_paper_example(paper_npz, tmp_path):
    out = llamp(
        "predict",
        str(paper_npz),
        "--L",
        "0.5us",
        "--o",
        "0",
        "--G",
        "5ns/B",
        "--json",
        home=tmp_path,
    )
    data = json.loads(out.stdout)
    assert {"runtime_ns", "lambda_L", "lambda_G", "lambda_o", "rho_L", "engine"} <= data.keys()
    assert data["runtime_ns"] == pytest.approx(1615.0)
    assert data["lambda_L"] == 1.0 and data["engine"] == "graph"


def test_critical_json_on_the_paper_example(paper_npz, tmp_path):
    out = llamp(
        "critical",
        str(paper_npz),
        "--L",
        "0",
        "--o",
        "0",
        "--G",
        "5ns/B",
        "--nic",
        "overlap",
        "--from",
        "0",
        "--to",
        "1us",
        "--json",
        home=tmp_path,
    )
    data = json.loads(out.stdout)
    assert data["critical_latencies_ns"] == [pytest.approx(385.0)]
    assert [s["lambda_L"] for s in data["segments"]] == [0.0, 1.0]
    assert data["segments"][0]["from_ns"] == 0.0 and data["segments"][-1]["to_ns"] == 1000.0


def test_tolerance_json_matches_the_api_on_sweep3d(tmp_path):
    out = llamp("tolerance", str(SWEEP3D), "--json", home=tmp_path)
    data = json.loads(out.stdout)
    ref = tolerance(read(SWEEP3D), LogGPS())
    assert data["baseline_ns"] == pytest.approx(ref.baseline_ns, rel=1e-12)
    assert [d["x"] for d in data["latency"]] == [0.01, 0.02, 0.05]
    assert data["latency"][0]["latency_ns"] == pytest.approx(ref.latency[0].value, rel=1e-12)
    assert data["bandwidth"][2]["G_ns_per_byte"] == pytest.approx(ref.bandwidth[2].value, rel=1e-12)


@pytest.mark.slow  # 3–10 s: several subprocesses / page runs
def test_report_on_a_stored_run_with_a_rank_selection(tmp_path):
    llamp("ingest", str(SWEEP3D), "--name", "s3d", home=tmp_path)
    full = json.loads(llamp("predict", "s3d", "--json", home=tmp_path).stdout)
    assert full["runtime_ns"] == pytest.approx(
        predict(read(SWEEP3D), LogGPS()).runtime_ns, rel=1e-12
    )
    part = json.loads(llamp("predict", "s3d", "--ranks", "0-1", "--json", home=tmp_path).stdout)
    graph = read(SWEEP3D)
    sub = graph.subgraph(graph.rank <= 1)
    assert part["runtime_ns"] == pytest.approx(predict(sub, LogGPS()).runtime_ns, rel=1e-12)
    report = llamp("report", "s3d", home=tmp_path).stdout
    assert "critical value(s) of L" in report and "max L" in report


@pytest.mark.slow  # 3–10 s: several subprocesses / page runs
def test_save_writes_an_analysis_back(tmp_path):
    llamp("ingest", str(SWEEP3D), "--name", "s3d", home=tmp_path)
    data = json.loads(llamp("predict", "s3d", "--save", "--json", home=tmp_path).stdout)
    assert data["analysis_id"]
    rows = json.loads(
        llamp("cypher", "MATCH (a:Analysis) RETURN a.kind AS kind", "--json", home=tmp_path).stdout
    )
    assert "predict" in json.dumps(rows)


def test_bad_input_exits_2_with_a_readable_message(tmp_path):
    proc = llamp("predict", str(tmp_path / "nope.npz"), home=tmp_path, check=False)
    assert proc.returncode == 2
    assert "no such file" in proc.stderr and "Traceback" not in proc.stderr
    proc = llamp("predict", str(SWEEP3D), "--L", "3 parsecs", home=tmp_path, check=False)
    assert proc.returncode == 2 and "unknown time unit" in proc.stderr


def test_critical_min_jump_ranks_the_breakpoints_that_matter(tmp_path):
    from test_critical import BREAKPOINTS, chains_goal

    path = tmp_path / "chains.goal"
    path.write_text(chains_goal())
    args = ["critical", str(path), "--L", "0", "--o", "0", "--G", "0", "--to", "10us"]
    data = json.loads(llamp(*args, "--min-jump", "1%", "--json", home=tmp_path).stdout)
    assert data["critical_latencies_ns"] == pytest.approx(BREAKPOINTS)
    assert data["min_jump"] == 0.01 and data["complete"] is True
    sig = data["significant"]
    assert [p["at_ns"] for p in sig] == pytest.approx([3000.0, 8000.0, 4000.0, 1000.0, 2000.0])
    assert sig[0] | {"at_ns": 0} == {
        "at_ns": 0,
        "from_ns": pytest.approx(3000.0),
        "to_ns": pytest.approx(3000.0),
        "lambda_L_before": 2.0,
        "lambda_L_after": 200.0,
        "jump": 198.0,
        "relative_jump": pytest.approx(99.0),
        "merged": 1,
    }
    assert sig[2]["merged"] == 3 and sig[2]["to_ns"] == pytest.approx(6000.0)
    text = llamp(*args, "--min-jump", "2", home=tmp_path).stdout
    assert "4 breakpoint(s) where λ_L jumps by ≥ 2%" in text
    assert "7 exact critical value(s) in all" in text
    assert "no-json" not in text and "significant" not in json.dumps(
        json.loads(llamp(*args, "--json", home=tmp_path).stdout)
    )
    bad = llamp(*args, "--min-jump", "lots", home=tmp_path, check=False)
    assert bad.returncode == 2 and "--min-jump" in bad.stderr and "Traceback" not in bad.stderr


def test_report_reads_its_sweep_from_the_exact_segments(tmp_path):
    from test_critical import chains_goal, closed_form

    path = tmp_path / "chains.goal"
    path.write_text(chains_goal())
    args = ["report", str(path), "--L", "0", "--o", "0", "--G", "0", "--to", "10us"]
    data = json.loads(llamp(*args, "--points", "5", "--json", home=tmp_path).stdout)
    sweep = data["sweep"]
    assert [r["L_ns"] for r in sweep] == [0.0, 2500.0, 5000.0, 7500.0, 10_000.0]
    assert {r["source"] for r in sweep} == {"segments"}
    assert [r["runtime_ns"] for r in sweep] == pytest.approx(
        closed_form([0.0, 2500.0, 5000.0, 7500.0, 10_000.0]).tolist()
    )
    assert [r["lambda_L"] for r in sweep] == [0.0, 2.0, 202.0, 203.0, 250.0]
    # a budget too small to resolve the range: points in unresolved intervals are evaluated
    data = json.loads(
        llamp(*args, "--points", "5", "--max-evaluations", "3", "--json", home=tmp_path).stdout
    )
    assert data["critical"]["complete"] is False
    sources = {r["L_ns"]: r["source"] for r in data["sweep"]}
    assert "sweep" in sources.values()
    assert [r["runtime_ns"] for r in data["sweep"]] == pytest.approx(
        closed_form([0.0, 2500.0, 5000.0, 7500.0, 10_000.0]).tolist()
    )
