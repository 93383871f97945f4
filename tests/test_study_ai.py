"""examples/ai-study.yaml in small: its three GPU machines and analyses on a 16-GPU step, each
cell equal to its single ``llamp`` command."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from llamp.cli.base import cli
from llamp.ingest.training import TrainingStep, write_training
from llamp.study.spec import SpecError, load_spec

EXAMPLE = Path(__file__).parents[1] / "examples" / "ai-study.yaml"
NETWORKS = ("ndr-fattree", "roce-400g-rail", "dragonfly")


def _invoke(args: list[str], home: Path) -> dict:
    result = CliRunner().invoke(cli, args, obj={}, env={"LLAMP_HOME": str(home)})
    assert result.exit_code == 0, (args, result.output)
    return json.loads(result.stdout[result.stdout.index("{") :])


def _close(a, b) -> bool:
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    a, b = float(a), float(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1.0)


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ai-study")
    spec = yaml.safe_load(EXAMPLE.read_text())
    step = TrainingStep(dp=2, tp=4, pp=2, layers=4, micro_batches=2, seq_len=512, hidden=1024)
    write_training(tmp / "llama-16", step)
    spec["runs"] = [{"name": "llama-16", "path": "llama-16"}]
    (tmp / "ai-study.yaml").write_text(yaml.safe_dump(spec))
    return tmp


def test_the_ai_study_runs_on_three_gpu_machines(study_dir):
    data = _invoke(
        ["--store", str(study_dir / "store"), "study", str(study_dir / "ai-study.yaml"),
         "--serial", "--json"],
        study_dir,
    )  # fmt: skip
    # predict, tolerance and the joint region on each GPU machine
    assert data["cells"] == 3 * 3 and data["failed"] == 0
    rows = {(r["network"], r["analysis"]): r for r in data["rows"]}
    assert set(rows) == {(n, a) for n in NETWORKS for a in ("predict", "tolerance", "region")}
    for n in NETWORKS:
        assert rows[(n, "predict")]["gpu_machine"].startswith("gpus=8,")
        assert rows[(n, "predict")]["L_ns"] is None  # the machine's L, not LogGPS's (NaN)
    T = {n: rows[(n, "predict")]["runtime_ns"] for n in NETWORKS}
    # NDR (1.8 µs, 400 Gb/s per GPU) beats the dragonfly (2.25 µs, two GPUs per 200 Gb/s NIC)
    assert 0 < T["ndr-fattree"] < T["roce-400g-rail"] < T["dragonfly"]
    # the same step and NVLink: only the network latency differs between the first two, and
    # the step pays it λ_L_inter times
    ndr, roce = rows[("ndr-fattree", "predict")], rows[("roce-400g-rail", "predict")]
    assert ndr["lambda_L_inter"] == roce["lambda_L_inter"] > 0
    assert T["roce-400g-rail"] - T["ndr-fattree"] == pytest.approx(
        200.0 * ndr["lambda_L_inter"], rel=1e-9
    )
    # tensor parallel 4 inside 8-GPU nodes: most messages stay on NVLink
    assert rows[("ndr-fattree", "predict")]["intra_node_fraction"] > 0.5
    assert rows[("ndr-fattree", "predict")]["lambda_L_intra"] > 0
    tol = rows[("roce-400g-rail", "tolerance")]
    assert 2000.0 < tol["tolerance_1pct_L_inter_ns"] <= tol["tolerance_5pct_L_inter_ns"]
    assert tol["tolerance_1pct_G_inter_ns_per_byte"] > 0.02
    region = rows[("roce-400g-rail", "region")]
    assert region["region_5pct_vertices"] >= 3 and "region_5pct_L_inter_ns" in region


def test_every_gpu_machine_cell_equals_its_single_command(study_dir):
    from llamp.ingest import read
    from llamp.study.analyses import ANALYSES, CellInput

    study = load_spec(study_dir / "ai-study.yaml")
    graph = read(study_dir / "llama-16")
    graph_spec = str(study_dir / "llama-16")
    for cell in study.cells:
        if cell.network.name != "roce-400g-rail":
            continue
        kind = ANALYSES[cell.analysis]
        inp = CellInput(graph, cell, graph_spec)
        mine = kind.scalars(kind.run(inp))
        args = kind.command(inp)
        assert args[0] == ("region" if cell.analysis == "region" else "gpu-machine")
        theirs = kind.scalars(_invoke(args, study_dir))
        assert mine.keys() == theirs.keys()
        for key, value in theirs.items():
            assert _close(mine[key], value), (cell.analysis, key, mine[key], value)


def test_a_gpu_machine_network_is_checked_with_its_line(tmp_path):
    (tmp_path / "run.goal").write_text("num_ranks 1\nrank 0 {\nl1: calc 10\n}\n")
    body = (
        "study: s\nruns: [{name: r, path: run.goal}]\nnetworks:\n"
        "  - {name: ok, gpu_machine: 'gpus=4'}\n"
        "  - {name: bad, gpu_machine: {gpus: 4, nvlnk: '1us:1ns/B'}}\n"
        "analyses: [predict]\n"
    )
    (tmp_path / "s.yaml").write_text(body)
    with pytest.raises(SpecError, match=r"s.yaml:5: networks\[1\].gpu_machine: .*'nvlnk'"):
        load_spec(tmp_path / "s.yaml")
    both = body.replace("nvlnk: '1us:1ns/B'}", "nvlink: '1us:1ns/B'}, L: 2us")
    (tmp_path / "s.yaml").write_text(both)
    with pytest.raises(SpecError, match=r"s.yaml:5: networks\[1\].L: .*nvlink and net"):
        load_spec(tmp_path / "s.yaml")


def test_gpu_machines_with_the_groups_placed_differently(study_dir):
    """The same machine with each tensor-parallel group inside a node (Megatron's layout, the
    trace's own) or split over two (pipeline and data parallel innermost): a cell each, equal
    to its command."""
    from llamp.ingest import read
    from llamp.study.analyses import ANALYSES, CellInput

    machine = {"gpus": 8, "nvlink": "500ns:450GB/s", "net": "2us:400Gb/s"}
    spec = {
        "study": "layouts",
        "runs": [{"name": "llama-16", "path": "llama-16"}],
        "networks": [
            {"name": "as-traced", "gpu_machine": machine},
            {"name": "tp-first", "gpu_machine": machine | {"layout": ["tp", "dp", "pp"]}},
            {"name": "tp-across", "gpu_machine": machine | {"layout": ["pp", "dp", "tp"]}},
        ],
        "analyses": ["predict"],
    }
    (study_dir / "layouts.yaml").write_text(yaml.safe_dump(spec))
    study = load_spec(study_dir / "layouts.yaml")
    graph = read(study_dir / "llama-16")
    T = {}
    for cell in study.cells:
        inp = CellInput(graph, cell, str(study_dir / "llama-16"))
        kind = ANALYSES[cell.analysis]
        T[cell.network.name] = kind.scalars(kind.run(inp))["runtime_ns"]
        assert "layout=" in cell.network.gpu_machine or cell.network.name == "as-traced"
        theirs = kind.scalars(_invoke(kind.command(inp), study_dir))["runtime_ns"]
        assert _close(T[cell.network.name], theirs)
    assert T["as-traced"] == T["tp-first"] < T["tp-across"]


def test_placing_the_parallel_groups_is_a_study_analysis(study_dir):
    """place-groups on a GPU-machine network: a cell per network, equal to its single
    ``llamp place-groups GRAPH SPEC`` command; the trace's own order is Megatron's tp,dp,pp."""
    from llamp.ingest import read
    from llamp.study.analyses import ANALYSES, CellInput

    spec = {
        "study": "groups",
        "runs": [{"name": "llama-16", "path": "llama-16"}],
        "networks": [
            {"name": "rail", "gpu_machine": {"gpus": 8, "nvlink": "500ns:450GB/s",
                                             "net": "2us:400Gb/s"}, "o": "1us"},
        ],
        "analyses": [{"place-groups": {"layouts": ["tp,dp,pp", "pp,dp,tp"], "x": [1, 5]}}],
    }  # fmt: skip
    (study_dir / "groups.yaml").write_text(yaml.safe_dump(spec))
    study = load_spec(study_dir / "groups.yaml")
    graph = read(study_dir / "llama-16")
    (cell,) = study.cells
    kind = ANALYSES["place-groups"]
    inp = CellInput(graph, cell, str(study_dir / "llama-16"))
    mine = kind.scalars(kind.run(inp))
    args = kind.command(inp)
    assert args[:3] == ["place-groups", str(study_dir / "llama-16"), cell.network.gpu_machine]
    theirs = kind.scalars(_invoke(args, study_dir))
    assert mine.keys() == theirs.keys()
    for key, value in theirs.items():
        assert key in ("best",) or _close(mine[key], value), (key, mine[key], value)
    assert mine["best"] == theirs["best"] == "as traced"
    assert mine["runtime_ns_as_traced"] == mine["runtime_ns_tp_dp_pp"] < mine["runtime_ns_pp_dp_tp"]
    assert mine["inter_node_bytes_tp_dp_pp"] < mine["inter_node_bytes_pp_dp_tp"]
    assert 0 < mine["tolerance_1pct_L_inter_ns"] <= mine["tolerance_5pct_L_inter_ns"]
