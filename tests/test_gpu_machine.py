"""A GPU machine (NVLink inside a node, NICs between nodes) on a training step."""

from __future__ import annotations

import numpy as np
import pytest
from cli_process import llamp

from llamp.errors import InputError
from llamp.ingest import read
from llamp.ingest.training import TrainingStep, write_training
from llamp.lp.gpu_machine import GpuMachine, analyze_gpu_machine, gpu_variables
from llamp.lp.region import two_level_variables
from llamp.lp.weighted import evaluate_model
from llamp.params import LogGPS


@pytest.fixture(scope="module")
def step(tmp_path_factory):
    """8 GPUs (dp 2 × tp 2 × pp 2): tensor-parallel pairs inside a node."""
    path = tmp_path_factory.mktemp("step") / "s"
    write_training(path, TrainingStep(layers=4, micro_batches=2, hidden=1024, seq_len=512))
    return read(path)


def test_spec_and_affinity():
    m = GpuMachine.parse("gpus=8,nvlink=400ns:0.002ns/B,net=2us:25GB/s,nics=4")
    assert (m.gpus_per_node, m.nics_per_node) == (8, 4)
    assert m.nvlink == (400.0, 0.002) and m.network[0] == 2000.0
    assert m.nic_of_gpu().tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert m.nic_share().tolist() == [2] * 8
    odd = GpuMachine.parse("gpus=4,nics=2,affinity=0:0:0:1")
    assert odd.nic_share().tolist() == [3, 3, 3, 1]
    with pytest.raises(InputError, match="affinity names NIC 2"):
        GpuMachine.parse("gpus=2,nics=2,affinity=0:2")
    with pytest.raises(InputError, match="unknown part 'tor'"):
        GpuMachine.parse("tor=1")


def test_one_nic_per_gpu_is_the_two_level_machine(step):
    machine = GpuMachine.parse("gpus=4,nics=4")
    mine = gpu_variables(step, machine).model
    node = np.arange(step.num_ranks) // 4
    theirs = two_level_variables(step, node, machine.nvlink, machine.network).model
    assert np.array_equal(mine.latency_ns, theirs.latency_ns)
    assert np.array_equal(mine.gap_ns_per_byte, theirs.gap_ns_per_byte)
    assert np.array_equal(mine.dlatency, theirs.dlatency)


def test_shared_nics_scale_the_inter_node_gap(step):
    one = gpu_variables(step, GpuMachine.parse("gpus=4,nics=4")).model
    two = gpu_variables(step, GpuMachine.parse("gpus=4,nics=2")).model
    inter = one.dlatency[:, 1] > 0
    assert inter.any() and (~inter).any()
    assert np.allclose(two.gap_ns_per_byte[inter], 2 * one.gap_ns_per_byte[inter])
    assert np.array_equal(two.gap_ns_per_byte[~inter], one.gap_ns_per_byte[~inter])


def test_lambda_and_tolerance_per_link_class_are_exact(step):
    """T(value + tolerance) = (1+x)·T0 and T(value + δ) − T = λ·δ on the linear piece."""
    params = LogGPS()
    machine = GpuMachine.parse("gpus=4,nics=2")
    result = analyze_gpu_machine(step, params, machine, x=[0.02])
    T0 = result.runtime_ns
    lam = dict(zip(result.variables.variable, result.variables["lambda"], strict=True))
    assert lam["L_intra"] > 0 and lam["L_inter"] > 0
    tol = result.tolerances.set_index("variable")["tolerance"]
    L_inter = float(tol["L_inter"])
    moved = GpuMachine.parse(f"gpus=4,nics=2,net={L_inter}ns:{machine.network[1]}ns/B")
    T = evaluate_model(step, params, gpu_variables(step, moved).model).runtime_ns
    assert T == pytest.approx(1.02 * T0, rel=1e-9)
    nudged = GpuMachine.parse(
        f"gpus=4,nics=2,nvlink={machine.nvlink[0] + 1}ns:{machine.nvlink[1]}ns/B"
    )
    T1 = evaluate_model(step, params, gpu_variables(step, nudged).model).runtime_ns
    assert T1 - T0 == pytest.approx(lam["L_intra"], rel=1e-6)


def test_cli_gpu_machine_and_its_region(step, tmp_path):
    path = tmp_path / "s"
    write_training(path, TrainingStep(layers=4, micro_batches=2, hidden=1024, seq_len=512))
    out = llamp("gpu-machine", str(path), "gpus=4,nics=2", home=tmp_path).stdout
    assert "L_inter" in out and "G_intra" in out and "1% tolerance" in out
    region = llamp("region", str(path), "--gpu-machine", "gpus=4", "--x", "5", home=tmp_path)
    assert "L_intra" in region.stdout and "L_inter" in region.stdout
    bad = llamp("gpu-machine", str(path), "gpus=0", home=tmp_path, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("llamp: error:")


def test_the_machine_sets_nccls_channels_and_nics(tmp_path):
    """Two NICs per GPU: a collective's two channels leave on different NICs of the rank."""
    machine = GpuMachine.parse("gpus=4,nics=8,net=3us:0.02ns/B")
    nm = machine.nccl_machine()
    assert (nm.gpus_per_node, nm.nics, nm.channels) == (4, 2, 2)
    assert nm.bw_inter_gbps == pytest.approx(1 / 0.02 / 2)
    path = tmp_path / "s"
    write_training(path, TrainingStep(layers=4, micro_batches=2, hidden=1024, seq_len=512))
    graph = read(path, nccl_machine=nm)
    assert graph.summary().nics == 2
    assert read(path).summary().nics == 1
    out = llamp(
        "ingest",
        str(path),
        "--gpu-machine",
        "gpus=4,nics=8",
        "-o",
        str(tmp_path / "g.npz"),
        home=tmp_path,
    )
    assert "→" in out.stdout
