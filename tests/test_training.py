"""Synthetic 3D-parallel training steps as Chakra traces: structure, groups, and T."""

from __future__ import annotations

import numpy as np
import pytest

from llamp.errors import InputError
from llamp.graph import SEND
from llamp.ingest import et_def_pb2 as pb
from llamp.ingest import read
from llamp.ingest.chakra import _nodes
from llamp.ingest.training import TrainingStep, training_nodes, write_training
from llamp.lp import evaluate
from llamp.params import LogGPS

SMALL = dict(layers=4, micro_batches=4, hidden=1024, seq_len=512)


def test_megatron_layout_and_groups(tmp_path):
    """rank = t + tp·(d + dp·p): tensor-parallel groups are consecutive ranks."""
    step = TrainingStep(dp=2, tp=2, pp=2, **SMALL)
    assert [step.coords(r) for r in (0, 1, 2, 5, 7)] == [
        (0, 0, 0), (0, 1, 0), (1, 0, 0), (0, 1, 1), (1, 1, 1)
    ]  # fmt: skip
    written = write_training(tmp_path / "s", step)
    graph = read(tmp_path / "s")
    groups = graph.meta["process_groups"]
    assert groups["tp.0.0"] == [0, 1] and groups["tp.1.1"] == [6, 7]
    assert groups["dp.1.0"] == [1, 3] and groups["pp.0.1"] == [2, 6]
    # per rank: 4 micro-batches × 2 layers × (2 computes + 2 all-reduces) × (F + B), a send
    # and a receive per micro-batch (activations out, gradients in, or the reverse on the last
    # stage), 2 gradient all-reduces, the optimizer
    per_rank = 4 * 2 * 4 * 2 + 4 * 2 + 2 + 1
    assert written.nodes == 8 * per_rank


def test_pipeline_messages_pair_in_1f1b_order(tmp_path):
    step = TrainingStep(dp=1, tp=1, pp=4, **SMALL)
    write_training(tmp_path / "s", step)
    graph = read(tmp_path / "s")
    # every micro-batch's activations go forward and its gradients come back: 3 links × 4 × 2
    assert int((graph.kind == SEND).sum()) == 3 * 4 * 2
    assert set(graph.size[graph.kind == SEND].tolist()) == {512 * 1024 * 2}


def test_one_gpu_step_is_its_compute(tmp_path):
    """Without communication T is the sum of the node durations (the GPU stream is a chain)."""
    step = TrainingStep(dp=1, tp=1, pp=1, **SMALL)
    write_training(tmp_path / "s", step)
    compute_us = sum(n.duration_micros for n in training_nodes(step, 0))
    T = evaluate(read(tmp_path / "s"), LogGPS()).runtime_ns
    assert T == pytest.approx(compute_us * 1000.0, rel=1e-12)


def test_latency_and_bandwidth_matter_for_a_3d_step(tmp_path):
    write_training(tmp_path / "s", TrainingStep(dp=2, tp=2, pp=2, **SMALL))
    graph = read(tmp_path / "s")
    low = evaluate(graph, LogGPS(L=1000.0))
    high = evaluate(graph, LogGPS(L=20_000.0))
    assert high.runtime_ns > low.runtime_ns
    assert np.isfinite(low.runtime_ns)


@pytest.mark.slow
def test_4096_gpus_are_written_one_rank_at_a_time(tmp_path):
    step = TrainingStep(dp=16, tp=16, pp=16, layers=16, micro_batches=1, hidden=256, seq_len=64)
    written = write_training(tmp_path / "big", step)
    assert written.ranks == 4096
    last = list(_nodes(tmp_path / "big" / "step.4095.et"))
    assert sum(n.type == pb.COMM_SEND_NODE for n in last) == 1  # the gradient back to stage 14
    per_stage = [len(list(training_nodes(step, step.rank_of(0, 0, p)))) for p in range(16)]
    assert written.nodes == 256 * sum(per_stage)


def test_bad_shapes_are_refused():
    with pytest.raises(InputError, match="do not split over 3 pipeline stages"):
        TrainingStep(pp=3, layers=8)
    with pytest.raises(InputError, match="dp must be a positive integer"):
        TrainingStep(dp=0)
