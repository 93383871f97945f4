"""examples/ai-study.yaml in small: its networks, placement and analyses on a 16-GPU step."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from llamp.cli.base import cli
from llamp.ingest.training import TrainingStep, write_training

EXAMPLE = Path(__file__).parents[1] / "examples" / "ai-study.yaml"


def test_the_ai_study_runs_on_a_16_gpu_step(tmp_path):
    spec = yaml.safe_load(EXAMPLE.read_text())
    step = TrainingStep(dp=2, tp=4, pp=2, layers=4, micro_batches=2, seq_len=512, hidden=1024)
    write_training(tmp_path / "llama-16", step)
    spec["runs"] = [{"name": "llama-16", "path": "llama-16"}]
    (tmp_path / "ai-study.yaml").write_text(yaml.safe_dump(spec))
    result = CliRunner().invoke(
        cli,
        ["--store", str(tmp_path / "store"), "study", str(tmp_path / "ai-study.yaml"), "--serial",
         "--json"],
        obj={},
        env={"LLAMP_HOME": str(tmp_path)},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout[result.stdout.index("{") :])
    # predict and tolerance on the three networks, the joint L–G region on the flat one
    assert data["cells"] == 3 * 2 + 1 and data["failed"] == 0
    rows = {(r["network"], r["analysis"]): r for r in data["rows"]}
    assert set(rows) == {
        *((n, a) for n in ("ndr-fattree", "roce-400g-rail", "dragonfly")
          for a in ("predict", "tolerance")),
        ("roce-400g-rail", "region"),
    }  # fmt: skip
    T = {
        n: rows[(n, "predict")]["runtime_ns"]
        for n in ("ndr-fattree", "roce-400g-rail", "dragonfly")
    }
    # NDR (400 Gb/s, 0.1 µs switches) beats the 200 Gb/s dragonfly on the same step
    assert 0 < T["ndr-fattree"] < T["dragonfly"]
    # 8 GPUs per node: the tensor-parallel all-reduces stay on NVLink (λ of the intra-node link)
    assert rows[("ndr-fattree", "predict")]["lambda_l_intra_node"] > 0
    roce = rows[("roce-400g-rail", "tolerance")]
    L0 = rows[("roce-400g-rail", "predict")]["L_ns"]
    assert L0 < roce["tolerance_1pct_L_ns"] <= roce["tolerance_5pct_L_ns"]
    region = rows[("roce-400g-rail", "region")]
    assert region["region_5pct_vertices"] >= 3
