"""Studies: spec validation, every analysis equal to its single command, resume,
failed cells, the store, Dask (LocalCluster; a real scheduler and two workers) and Slurm."""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from llamp.cli.base import cli
from llamp.study import ANALYSES, SpecError, load_spec, run_study

DATA = Path(__file__).parent / "data" / "traces"
DUMPI = DATA / "dumpi" / "sst-dumpi-4ranks"
SWEEP3D = DATA / "liballprof" / "sweep3d-2x2"
EXAMPLE = Path(__file__).parents[1] / "examples" / "study.yaml"


def write_spec(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def small_spec(tmp_path: Path, analyses: str = "[predict, {tolerance: {x: [1, 5]}}]") -> Path:
    return write_spec(
        tmp_path,
        f"""\
        study: small
        runs:
          - {{name: dumpi, path: {DUMPI}}}
          - {{name: sweep3d, path: {SWEEP3D}}}
        networks:
          - {{name: slow, L: 10us, G: 10Gb/s}}
          - {{name: fast, L: 1us, G: 200Gb/s, o: 1us}}
        analyses: {analyses}
        """,
    )


def close(a, b) -> bool:
    if b in ("inf", "-inf"):  # the CLI's JSON writes infinities as strings
        b = float(b)
    if isinstance(a, str) or isinstance(b, str) or isinstance(a, bool):
        return a == b
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    a, b = float(a), float(b)
    if math.isinf(a) or math.isinf(b) or math.isnan(a):
        return a == b or (math.isnan(a) and math.isnan(b))
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1.0)


def cli_json(args: list[str], home: Path) -> dict:
    runner = CliRunner()
    result = runner.invoke(cli, args, obj={}, env={"LLAMP_HOME": str(home)})
    assert result.exit_code == 0, (args, result.output, result.exception)
    text = result.stdout
    return json.loads(text[text.index("{") :])


# ---------------------------------------------------------------------------- the spec
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("study: s\nruns: []\n", "spec.yaml:2: runs: List should have at least 1 item"),
        (
            f"study: s\nruns:\n  - {{name: a, path: {DUMPI}}}\nnetworks:\n  - name: n\n"
            "    L: 3us\n    colour: red\nanalyses: [predict]\n",
            "spec.yaml:7: networks[0].colour: LogGPS.parse has no parameter 'colour'",
        ),
        (
            f"study: s\nruns:\n  - {{name: a, path: {DUMPI}}}\nnetworks:\n  - name: n\n"
            "    L: 3 parsecs\nanalyses: [predict]\n",
            "spec.yaml:6: networks[0].L: unknown time unit 'parsecs' in '3 parsecs'",
        ),
        (
            f"study: s\nruns:\n  - {{name: a, path: {DUMPI}}}\nnetworks: [{{name: n}}]\n"
            "analyses:\n  - predict\n  - tolerence\n",
            "spec.yaml:7: analyses[1]: unknown analysis 'tolerence'",
        ),
        (
            f"study: s\nruns:\n  - {{name: a, path: {DUMPI}}}\nnetworks: [{{name: n}}]\n"
            "analyses:\n  - mc: {samples: 0}\n",
            "spec.yaml:6: analyses[0].mc.samples: Input should be greater than or equal to 1",
        ),
        (
            "study: s\nruns:\n  - {name: a, path: nowhere}\nnetworks: [{name: n}]\n"
            "analyses: [predict]\n",
            "spec.yaml:3: runs[0].path:",
        ),
        ("study: s\nrunz: 1\n", "spec.yaml:2: runz: Extra inputs are not permitted"),
        ("study: [unclosed\n", "spec.yaml:2: not YAML"),
    ],
)
def test_a_bad_spec_names_file_line_and_key(tmp_path, body, expected):
    path = tmp_path / "spec.yaml"
    path.write_text(body)
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert str(err.value).startswith(str(tmp_path / expected)) or expected in str(err.value)
    assert "\n" not in str(err.value)


def test_the_cli_rejects_a_bad_spec_with_exit_2_and_one_line(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(
        f"study: s\nruns:\n  - {{name: a, path: {DUMPI}}}\nnetworks: [{{name: n, G: fast}}]\nanalyses: [predict]\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "llamp", "study", str(path)],
        capture_output=True,
        text=True,
        env=os.environ | {"LLAMP_HOME": str(tmp_path)},
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"llamp: error: {path}:4: networks[0].G: cannot read gap per byte 'fast': expected e.g. "
        "0.018ns/B, 18ps/B or 100Gb/s"
    ]


def test_the_cross_product_and_an_explicit_list(tmp_path):
    study = load_spec(small_spec(tmp_path))
    assert len(study.cells) == 2 * 2 * 2
    assert {(c.run, c.network.name, c.analysis) for c in study.cells} == {
        (r, n, a)
        for r in ("dumpi", "sweep3d")
        for n in ("slow", "fast")
        for a in ("predict", "tolerance")
    }
    fast = next(c for c in study.cells if c.network.name == "fast")
    assert (fast.network.params.L, fast.network.params.o, fast.network.params.G) == (
        1000.0,
        1000.0,
        0.04,
    )
    listed = write_spec(
        tmp_path,
        f"""\
        study: listed
        runs: [{{name: dumpi, path: {DUMPI}}}]
        networks: [{{name: slow, L: 10us}}, {{name: fast, L: 1us}}]
        analyses: [predict, tolerance]
        cells:
          - {{run: dumpi, network: fast, analysis: tolerance}}
        """,
        "listed.yaml",
    )
    cells = load_spec(listed).cells
    assert [(c.run, c.network.name, c.analysis) for c in cells] == [("dumpi", "fast", "tolerance")]


def test_cell_ids_are_stable_and_change_with_the_definition(tmp_path):
    a = [c.id for c in load_spec(small_spec(tmp_path)).cells]
    assert a == [c.id for c in load_spec(small_spec(tmp_path)).cells]
    b = [c.id for c in load_spec(small_spec(tmp_path, "[predict, {tolerance: {x: [1, 2]}}]")).cells]
    assert set(a) & set(b) == {
        c
        for c, cell in zip(a, load_spec(small_spec(tmp_path)).cells, strict=True)
        if cell.analysis == "predict"
    }


def test_unknown_loggps_keys_pass_through_to_loggps_parse(tmp_path, monkeypatch):
    """Keys this llamp's LogGPS does not have (progress, nic after the model change) reach
    LogGPS.parse as they are."""
    from llamp.params import LogGPS

    seen = {}
    original = LogGPS.parse.__func__

    def parse(cls, L=None, o=None, G=None, S=None, base=None, **extra):
        seen.update(extra)
        return original(cls, L=L, o=o, G=G, S=S, base=base)

    monkeypatch.setattr(LogGPS, "parse", classmethod(parse))
    path = write_spec(
        tmp_path,
        f"""\
        study: progress
        runs: [{{name: dumpi, path: {DUMPI}}}]
        networks: [{{name: n, L: 2us, progress: wait, nic: serial}}]
        options: [{{name: plain}}, {{name: g, g: 5ns}}]
        analyses: [predict]
        """,
    )
    study = load_spec(path)
    assert len(study.cells) == 2
    assert seen == {"progress": "wait", "nic": "serial", "g": "5ns"}


# ---------------------------------------------------------------------------- same numbers
def all_analyses_spec(tmp_path: Path) -> Path:
    return write_spec(
        tmp_path,
        f"""\
        study: every-analysis
        runs:
          - {{name: dumpi, path: {DUMPI}}}
        networks:
          - {{name: eth, L: 5us, G: 10Gb/s, o: 1.5us}}
          - {{name: fly, topology: "dragonfly:g=3,a=2,p=1", wire: 300ns, G: 100Gb/s, o: 1us}}
          - {{name: dgx, gpu_machine: "gpus=2,net=2us:100Gb/s", o: 1us}}
        placements:
          - {{name: one, ranks_per_node: 1}}
          - {{name: two, ranks_per_node: 2}}
        analyses:
          - predict
          - tolerance: {{x: [1, 2, 5]}}
          - sweep: {{from: 0, to: 50us, points: 5}}
          - critical: {{from: 0, to: 50us}}
          - matrix
          - classify
          - mc: {{samples: 6, temporal_cv: 0.1, seed: 3, x: [1, 5]}}
          - place: {{intra: "300ns,0.05ns/B", inter: "3us,0.1ns/B", ranks_per_node: 2, max_swaps: 5}}
          - region: {{x: [1, 5], axes: "L,G", designs: ["cheap=6us,0.9ns/B", "fast=1us,0.08ns/B"]}}
          - path
          - topology: {{x: [1, 5]}}
          - report: {{from: 0, to: 50us, points: 5, x: [1, 5]}}
          - place-groups: {{x: [1, 5]}}
        """,
    )


def test_every_analysis_cell_equals_its_single_command(tmp_path):
    study = load_spec(all_analyses_spec(tmp_path))
    assert {c.analysis for c in study.cells} == set(ANALYSES)
    report = run_study(study, store_uri=str(tmp_path / "store"), serial=True)
    assert report.failed == 0, report.table[["analysis", "error"]].to_dict(orient="records")
    from llamp.study.analyses import CellInput
    from llamp.study.execute import GraphSource

    rows = {r["cell"]: r for r in report.table.to_dict(orient="records")}
    npz = study.source.parent / ".llamp-study" / "every-analysis" / "graphs" / "dumpi__default.npz"
    checked = set()
    for cell in study.cells:
        kind = ANALYSES[cell.analysis]
        source = GraphSource(cell.graph_key, npz=str(npz))
        args = kind.command(CellInput(None, cell, source.spec))
        expected = kind.scalars(cli_json(args, tmp_path))
        row = rows[cell.id]
        for key, value in expected.items():
            assert close(row[key], value), (cell.analysis, cell.network.name, key, row[key], value)
        checked.add((cell.analysis, cell.network.kind))
    assert checked >= {(a, "loggps") for a, k in ANALYSES.items() if "loggps" in k.networks} | {
        ("topology", "topology"),
        ("predict", "topology"),
        ("tolerance", "topology"),
        ("matrix", "topology"),
        ("place", "topology"),
        ("place-groups", "gpu"),
    }


def test_a_collective_variant_equals_the_command_on_the_trace(tmp_path):
    path = write_spec(
        tmp_path,
        f"""\
        study: variants
        runs: [{{name: sweep3d, path: {SWEEP3D}}}]
        networks: [{{name: eth, L: 5us, G: 10Gb/s}}]
        collectives: [default, allreduce=ring]
        analyses: [tolerance]
        """,
    )
    report = run_study(load_spec(path), use_store=False, serial=True)
    by_variant = {r["collectives"]: r for r in report.table.to_dict(orient="records")}
    for variant, extra in (
        ("default", []),
        ("allreduce=ring", ["--collectives", "allreduce=ring"]),
    ):
        out = cli_json(
            ["tolerance", str(SWEEP3D), *extra, "--L", "5us", "--G", "10Gb/s", "--json"], tmp_path
        )
        assert close(by_variant[variant]["baseline_ns"], out["baseline_ns"])
        assert close(by_variant[variant]["tolerance_5pct_L_ns"], out["latency"][2]["latency_ns"])
    assert by_variant["default"]["baseline_ns"] != by_variant["allreduce=ring"]["baseline_ns"]


# ---------------------------------------------------------------------------- store, resume
def test_cells_are_stored_linked_to_their_run_and_resumed(tmp_path):
    from llamp.graphdb import open_store
    from llamp.graphdb.studies import studies, study_cells

    store = str(tmp_path / "store")
    study = load_spec(small_spec(tmp_path))
    first = run_study(study, store_uri=store, serial=True, output=tmp_path / "t.parquet")
    assert (first.computed, first.skipped, first.failed) == (8, 0, 0)
    with open_store(store, read_only=True) as s:
        cells = study_cells(s, "small")
        assert sorted(cells["stored_run"].unique()) == ["dumpi", "sweep3d"]
        assert len(cells) == 8 and set(cells["cell"]) == {c.id for c in study.cells}
        counts = s.query(
            "MATCH (a:Analysis) WHERE a.complete = true AND a.params CONTAINS "
            '\'"study": "small"\' MATCH (r:Run) WHERE r.id = a.run '
            "RETURN r.name AS run, count(*) AS n ORDER BY run"
        )
        assert counts["n"].tolist() == [4, 4]
        assert studies(s)["cells"].tolist() == [8]
    again = run_study(study, store_uri=store, serial=True, output=tmp_path / "t.parquet")
    assert (again.computed, again.skipped) == (0, 8)
    import pandas as pd

    table = pd.read_parquet(tmp_path / "t.parquet")
    first_rows = first.table.set_index("cell")
    for row in table.to_dict(orient="records"):
        assert (
            row["runtime_ns" if row["analysis"] == "predict" else "baseline_ns"]
            == first_rows.loc[
                row["cell"], "runtime_ns" if row["analysis"] == "predict" else "baseline_ns"
            ]
        )
    redo = run_study(study, store_uri=store, serial=True, restart=True)
    assert redo.computed == 8
    with open_store(store, read_only=True) as s:
        assert len(study_cells(s, "small")) == 8  # recomputed cells replace the stored ones


def test_an_interrupted_study_resumes_from_its_journal(tmp_path):
    study = load_spec(small_spec(tmp_path))
    run_study(study, use_store=False, serial=True)
    journal = tmp_path / ".llamp-study" / "small" / "cells.jsonl"
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:3]) + "\n" + lines[3][:20])  # killed while writing
    report = run_study(study, use_store=False, serial=True)
    assert (report.skipped, report.computed) == (3, 5)


def test_a_failed_cell_is_reported_and_the_others_go_on(tmp_path):
    path = write_spec(
        tmp_path,
        f"""\
        study: failing
        runs: [{{name: dumpi, path: {DUMPI}}}]
        networks: [{{name: free, L: 1us, G: 0}}, {{name: eth, L: 5us, G: 10Gb/s}}]
        analyses: [predict, classify]
        output: out.csv
        """,
    )
    runner = CliRunner()
    result = runner.invoke(
        cli,
        ["study", str(path), "--serial", "--no-store"],
        obj={},
        env={"LLAMP_HOME": str(tmp_path)},
    )
    assert result.exit_code == 1
    assert "3 computed" in result.stdout and "1 failed" in result.stdout
    assert "classify needs a bandwidth: G must be > 0" in result.stdout
    import pandas as pd

    table = pd.read_csv(tmp_path / "out.csv")
    assert table["status"].tolist().count("error") == 1
    assert table.loc[table["status"] == "ok", "runtime_ns"].notna().all()


def test_the_example_study_runs_and_its_table_has_units(tmp_path):
    """examples/study.yaml: the shipped traces × 10GbE, HDR, a dragonfly (CI runs it)."""
    spec = tmp_path / "examples" / "study.yaml"
    spec.parent.mkdir()
    shutil.copy(EXAMPLE, spec)
    (tmp_path / "tests").symlink_to(Path(__file__).parent)
    runner = CliRunner()
    result = runner.invoke(
        cli,
        ["--store", str(tmp_path / "store"), "study", str(spec), "--serial", "--json"],
        obj={},
        env={"LLAMP_HOME": str(tmp_path)},
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout[result.stdout.index("{") :])
    assert data["cells"] == 4 * 3 * 2 and data["failed"] == 0
    rows = data["rows"]
    assert {r["run"] for r in rows} == {"sweep3d", "sstmacro-otf2", "simgrid-ti", "dumpi"}
    assert {r["network"] for r in rows} == {"10GbE", "HDR", "dragonfly"}
    for r in rows:
        assert r["runtime_ns" if r["analysis"] == "predict" else "baseline_ns"] > 0
        if r["analysis"] == "tolerance" and r["network"] != "dragonfly":
            assert r["tolerance_1pct_L_ns"] <= r["tolerance_5pct_L_ns"]
    hdr = {r["run"]: r for r in rows if r["network"] == "HDR" and r["analysis"] == "predict"}
    eth = {r["run"]: r for r in rows if r["network"] == "10GbE" and r["analysis"] == "predict"}
    assert all(hdr[k]["runtime_ns"] <= eth[k]["runtime_ns"] for k in hdr)
    assert (tmp_path / "examples" / "study-results.csv").is_file()


# ---------------------------------------------------------------------------- Dask, Slurm
def test_a_local_cluster_gives_the_serial_numbers_and_loads_each_graph_once_per_worker(tmp_path):
    study = load_spec(small_spec(tmp_path))
    serial = run_study(study, use_store=False, serial=True, restart=True)
    dask = run_study(study, use_store=False, workers=2, restart=True)
    assert dask.where == "2 local worker process(es)" and dask.failed == 0
    assert dask.graph_loads <= 2 * 2
    a = serial.table.set_index("cell").sort_index()
    b = dask.table.set_index("cell").sort_index()
    for column in ("runtime_ns", "lambda_L", "tolerance_1pct_L_ns", "tolerance_5pct_G_ns_per_byte"):
        np.testing.assert_array_equal(a[column].to_numpy(), b[column].to_numpy())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_real_dask_scheduler_and_two_workers(tmp_path):
    dask = str(Path(sys.executable).parent / "dask")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [
        subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        for _ in range(2):
            procs.append(
                subprocess.Popen(
                    [
                        dask,
                        "worker",
                        address,
                        "--nworkers",
                        "1",
                        "--nthreads",
                        "1",
                        "--host",
                        "127.0.0.1",
                        "--no-dashboard",
                        "--local-directory",
                        str(tmp_path / "dask"),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    cwd=tmp_path,
                )
            )
        from distributed import Client

        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        runner = CliRunner()
        spec = small_spec(tmp_path)
        result = runner.invoke(
            cli,
            [
                "--store",
                str(tmp_path / "store"),
                "study",
                str(spec),
                "--scheduler",
                address,
                "--json",
            ],
            obj={},
            env={"LLAMP_HOME": str(tmp_path)},
        )
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout[result.stdout.index("{") :])
        assert data["executor"] == f"Dask scheduler {address}"
        assert (data["computed"], data["failed"]) == (8, 0)
        workers = {r["worker"] for r in data["rows"]}
        assert len(workers) == 2  # both worker processes computed cells
        serial = run_study(load_spec(spec), use_store=False, serial=True, restart=True)
        expected = serial.table.set_index("cell")
        for row in data["rows"]:
            column = "runtime_ns" if row["analysis"] == "predict" else "tolerance_5pct_L_ns"
            assert row[column] == expected.loc[row["cell"], column]
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        time.sleep(0.1)


def test_the_slurm_job_script_carries_the_spec_settings(tmp_path):
    """dask-jobqueue is not run against a real Slurm here: the job script it would submit is
    checked instead."""
    path = write_spec(
        tmp_path,
        f"""\
        study: on-slurm
        runs: [{{name: dumpi, path: {DUMPI}}}]
        networks: [{{name: n}}]
        analyses: [predict]
        execution:
          cluster: slurm
          slurm: {{cores: 32, memory: 64GB, walltime: "02:30:00", queue: compute, account: proj42, jobs: 4, prologue: ["source /work/venv/bin/activate"]}}
        """,
    )
    runner = CliRunner()
    result = runner.invoke(
        cli,
        ["study", str(path), "--job-script", "--walltime", "03:00:00"],
        obj={},
        env={"LLAMP_HOME": str(tmp_path)},
    )
    assert result.exit_code == 0, result.output
    script = result.stdout
    assert "#SBATCH -p compute" in script
    assert "#SBATCH -A proj42" in script
    assert "#SBATCH -n 1" in script and "#SBATCH --cpus-per-task=32" in script
    assert "#SBATCH --mem=60G" in script
    assert "#SBATCH -t 03:00:00" in script
    assert "--nthreads 1" in script and "--nworkers 32" in script
    assert "source /work/venv/bin/activate" in script


def test_a_stored_run_and_placements_with_a_mapping_file(tmp_path):
    """A run named by the store is exported once for the workers; a placement's mapping file
    (relative to the spec) reaches the topology analysis as `llamp topology --mapping` does."""
    from llamp.graphdb import open_store
    from llamp.ingest import read

    store = str(tmp_path / "store")
    with open_store(store) as s:
        s.put_run(read(DUMPI), "dumpi-stored")
    (tmp_path / "map.txt").write_text("0\n0\n5\n5\n")
    path = write_spec(
        tmp_path,
        """\
        study: placed
        runs: [{name: d, stored: dumpi-stored}]
        networks: [{name: fly, topology: "dragonfly:g=3,a=2,p=1", o: 1us}]
        placements: [{name: dense}, {name: far, mapping: map.txt}]
        analyses: [tolerance]
        """,
    )
    study = load_spec(path)
    report = run_study(study, store_uri=store, serial=True)
    assert report.failed == 0 and len(report.table) == 2
    rows = {r["placement"]: r for r in report.table.to_dict(orient="records")}
    for placement, args in (
        ("dense", ["--ranks-per-node", "1"]),
        ("far", ["--mapping", str(tmp_path / "map.txt")]),
    ):
        out = cli_json(
            [
                "--store",
                store,
                "topology",
                "dumpi-stored",
                "dragonfly:g=3,a=2,p=1",
                *args,
                "--o",
                "1us",
                "--json",
            ],
            tmp_path,
        )
        one = out["topologies"][0]
        assert close(rows[placement]["runtime_ns"], one["runtime_ns"])
        for t in one["tolerances"]:
            key = f"tolerance_{t['x'] * 100:g}pct_{t['variable']}_ns"
            assert close(rows[placement][key], t["tolerance_ns"])
    assert (
        rows["dense"]["runtime_ns"] != rows["far"]["runtime_ns"]
        or rows["dense"]["mean_switches"] != rows["far"]["mean_switches"]
    )
    with open_store(store, read_only=True) as s:
        from llamp.graphdb.studies import study_cells

        assert set(study_cells(s, "placed")["stored_run"]) == {"dumpi-stored"}


def test_workers_read_a_bolt_store_and_cells_are_stored_there(store_uri, tmp_path):
    """With a server store, workers load stored runs from it (no .npz); the client stores the
    cells there too. Trace runs are stored under their name on first use."""
    from llamp.graphdb import open_store
    from llamp.graphdb.studies import study_cells
    from llamp.ingest import read
    from llamp.study.run import prepare_graphs

    with open_store(store_uri) as s:
        s.put_run(read(DUMPI), "dumpi-stored")
    path = write_spec(
        tmp_path,
        f"""\
        study: served
        runs: [{{name: d, stored: dumpi-stored}}, {{name: sweep3d, path: {SWEEP3D}}}]
        networks: [{{name: eth, L: 5us, G: 10Gb/s}}]
        analyses: [predict]
        """,
    )
    study = load_spec(path)
    sources, names = prepare_graphs(
        study, store_uri=store_uri, use_store=True, directory=tmp_path / "work"
    )
    bolt = store_uri.startswith("bolt")
    assert (sources[("d", "default")].npz is None) == bolt
    assert names == {("d", "default"): "dumpi-stored", ("sweep3d", "default"): "sweep3d"}
    report = run_study(study, store_uri=store_uri, serial=True)
    assert report.failed == 0
    expected = cli_json(["predict", str(DUMPI), "--L", "5us", "--G", "10Gb/s", "--json"], tmp_path)
    row = report.table.set_index("run").loc["d"]
    assert close(row["runtime_ns"], expected["runtime_ns"])
    with open_store(store_uri, read_only=True) as s:
        cells = study_cells(s, "served")
    assert sorted(cells["stored_run"]) == ["dumpi-stored", "sweep3d"]
