"""Placing a training run's parallel groups onto a GPU machine's nodes (llamp place-groups)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from cli_process import llamp
from click.testing import CliRunner

from llamp.cli.base import cli
from llamp.errors import InputError
from llamp.ingest import et_def_pb2 as pb
from llamp.ingest import read
from llamp.ingest.chakra import write_chakra
from llamp.ingest.training import TrainingStep, write_training
from llamp.lp.gpu_machine import GpuMachine, analyze_gpu_machine
from llamp.lp.group_placement import (
    AS_TRACED,
    compare_group_placements,
    order_slots,
    parallel_dims,
)
from llamp.params import LogGPS

#: Bytes of each tensor-parallel message: 2^21 + 1, so it carries (s − 1)·G = 2^21·G.
N = 2**21 + 1
MACHINE = GpuMachine.parse("gpus=2,nvlink=500ns:0.002ns/B,net=3us:0.02ns/B")
O_NS = 1000.0


def _node(i: int, kind: int, **attrs) -> pb.Node:
    n = pb.Node(id=i, name=f"n{i}", type=kind)
    for key, value in attrs.items():
        a = pb.AttributeProto(name=key)
        if isinstance(value, str):
            a.string_val = value
        else:
            a.int64_val = value
        n.attr.append(a)
    return n


@pytest.fixture(scope="module")
def two_by_two(tmp_path_factory):
    """4 GPUs, tp 2 × dp 2 in Megatron's rank order (rank = t + 2·d): each tensor-parallel
    pair sends one N-byte message, each data-parallel pair one 1-byte message."""
    S, R = pb.COMM_SEND_NODE, pb.COMM_RECV_NODE
    files = {
        0: [_node(0, S, comm_dst=1, comm_size=N, pg_name="tp.0"),
            _node(1, S, comm_dst=2, comm_size=1, pg_name="dp.0")],
        1: [_node(0, R, comm_src=0, comm_size=N, pg_name="tp.0"),
            _node(1, S, comm_dst=3, comm_size=1, pg_name="dp.1")],
        2: [_node(0, S, comm_dst=3, comm_size=N, pg_name="tp.1"),
            _node(1, R, comm_src=0, comm_size=1, pg_name="dp.0")],
        3: [_node(0, R, comm_src=2, comm_size=N, pg_name="tp.1"),
            _node(1, R, comm_src=1, comm_size=1, pg_name="dp.1")],
    }  # fmt: skip
    path = tmp_path_factory.mktemp("two-by-two")
    for rank, nodes in files.items():
        write_chakra(path / f"step.{rank}.et", iter(nodes))
    return path


def test_the_dimensions_are_the_process_groups(two_by_two):
    dims, skipped = parallel_dims(read(two_by_two))
    assert [(d.name, d.size) for d in dims] == [("dp", 2), ("tp", 2)] and skipped == {}
    by = {d.name: d for d in dims}
    assert by["tp"].coord.tolist() == [0, 1, 0, 1] and by["dp"].coord.tolist() == [0, 0, 1, 1]
    assert order_slots(dims, ["tp", "dp"]).tolist() == [0, 1, 2, 3]
    assert order_slots(dims, ["dp", "tp"]).tolist() == [0, 2, 1, 3]


def test_tensor_parallel_on_nvlink_is_faster_by_the_cost_difference(two_by_two):
    """With transfers overlapping (nic=overlap) the step is its slowest message, o + L +
    (N−1)·G + o: tp,dp puts the tensor-parallel pairs on NVLink, dp,tp across the network;
    the difference is exactly (L_inter − L_intra) + 2^21·(G_inter − G_intra)."""
    params = LogGPS.parse(o="1us", S="4MiB", nic="overlap")
    result = compare_group_placements(read(two_by_two), params, MACHINE, x=[0.01])
    T = dict(zip(result.mappings.mapping, result.mappings.runtime_ns, strict=True))
    (Li, Gi), (Le, Ge) = MACHINE.nvlink, MACHINE.network
    tp_inside = 2 * O_NS + Li + 2**21 * Gi  # 6694.304 ns; the dp messages: 2o + L_inter = 5 µs
    tp_across = 2 * O_NS + Le + 2**21 * Ge  # 46943.04 ns
    assert T["tp,dp"] == pytest.approx(tp_inside, abs=1e-9)
    assert T["dp,tp"] == pytest.approx(tp_across, abs=1e-9)
    assert T["dp,tp"] - T["tp,dp"] == pytest.approx((Le - Li) + 2**21 * (Ge - Gi), abs=1e-9)
    assert T[AS_TRACED] == T["tp,dp"] and result.traced_layout == ("tp,dp",)
    assert result.best == AS_TRACED
    rows = result.mappings.set_index("mapping")
    assert rows.loc["tp,dp", "tp_groups_in_one_node"] == 1.0
    assert rows.loc["dp,tp", "dp_groups_in_one_node"] == 1.0
    assert rows.loc["dp,tp", "inter_node_bytes"] == 2 * N
    lam = result.variables.set_index(["mapping", "variable"])["lambda"]
    assert (lam["tp,dp", "L_intra"], lam["tp,dp", "G_intra"]) == (1.0, 2.0**21)
    assert (lam["tp,dp", "L_inter"], lam["tp,dp", "G_inter"]) == (0.0, 0.0)
    assert (lam["dp,tp", "L_inter"], lam["dp,tp", "G_inter"]) == (1.0, 2.0**21)
    tol = result.tolerances.set_index(["mapping", "variable"])["tolerance"]
    # tp,dp within 1 %: NVLink latency takes the whole 1 %; the network latency until the
    # 1-byte dp messages (2o + L_inter) reach 1.01·T; their bytes never matter
    assert tol["tp,dp", "L_intra"] == pytest.approx(Li + 0.01 * tp_inside, abs=1e-9)
    assert tol["tp,dp", "L_inter"] == pytest.approx(1.01 * tp_inside - 2 * O_NS, abs=1e-9)
    assert tol["tp,dp", "G_inter"] == np.inf
    assert tol["dp,tp", "G_inter"] == pytest.approx(Ge + 0.01 * tp_across / 2**21, rel=1e-12)


def test_a_serial_nic_sends_the_dp_message_after_the_tp_bytes(two_by_two):
    """LogGP's gap (nic=serial): rank 0's 1-byte dp send leaves after its N-byte tp send."""
    params = LogGPS.parse(o="1us", S="4MiB", nic="serial")
    result = compare_group_placements(read(two_by_two), params, MACHINE, [["tp", "dp"]], x=[])
    (_, Gi), (Le, _) = MACHINE.nvlink, MACHINE.network
    T = result.mappings.set_index("mapping")["runtime_ns"]
    assert T["tp,dp"] == pytest.approx(2 * O_NS + 2**21 * Gi + Le, abs=1e-9)


@pytest.fixture(scope="module")
def step(tmp_path_factory):
    """8 GPUs, dp 2 × tp 2 × pp 2 (Megatron's order)."""
    path = tmp_path_factory.mktemp("step") / "s"
    write_training(
        path, TrainingStep(layers=2, micro_batches=2, hidden=512, seq_len=256)
    )  # fmt: skip
    return path


def test_a_3d_step_every_layout_is_the_gpu_machine_with_ranks_moved(step):
    graph = read(step)
    params = LogGPS()
    layouts = [["tp", "dp", "pp"], ["dp", "tp", "pp"]]
    result = compare_group_placements(graph, params, MACHINE, layouts, x=[0.05])
    assert list(result.dimensions.dimension) == ["dp", "pp", "tp"]
    assert result.traced_layout == ("tp,dp,pp",)
    for name in ("tp,dp,pp", "dp,tp,pp"):
        alone = analyze_gpu_machine(
            graph, params, MACHINE, [0.05], slot_of_rank=result.slot_of_rank[name]
        )
        row = result.mappings.set_index("mapping").loc[name]
        assert row.runtime_ns == alone.runtime_ns
        mine = result.tolerances[result.tolerances.mapping == name].tolerance.to_numpy()
        assert np.array_equal(mine, alone.tolerances.tolerance.to_numpy())
    T = result.mappings.set_index("mapping")["runtime_ns"]
    assert T["tp,dp,pp"] < T["dp,tp,pp"]  # the tensor-parallel all-reduces stay on NVLink


def test_rest_dimension_skipped_families_and_errors(step):
    graph = read(step)
    groups = graph.meta["process_groups"]
    only_tp = {k: v for k, v in groups.items() if k.startswith("tp.")}
    dims, _ = parallel_dims(dataclasses.replace(graph, meta={"process_groups": only_tp}))
    assert [(d.name, d.size) for d in dims] == [("tp", 2), ("rest", 4)]
    assert dims[1].groups == ((0, 2, 4, 6), (1, 3, 5, 7))
    odd = {**only_tp, "x.0": [0, 1, 2]}
    _, skipped = parallel_dims(dataclasses.replace(graph, meta={"process_groups": odd}))
    assert skipped == {"x": "not a partition of the ranks (1 groups of 3 cover 3 of 8 ranks)"}
    with pytest.raises(InputError, match="no dimension 'ep'"):
        compare_group_placements(graph, LogGPS(), MACHINE, [["tp", "ep", "pp"]], x=[])
    with pytest.raises(InputError, match="name every dimension once"):
        compare_group_placements(graph, LogGPS(), MACHINE, [["tp", "dp"]], x=[])
    skew = {"a.0": [0, 1, 2, 3], "a.1": [4, 5, 6, 7], "b.0": [0, 1, 2, 3], "b.1": [4, 5, 6, 7]}
    with pytest.raises(InputError, match="not orthogonal"):
        parallel_dims(dataclasses.replace(graph, meta={"process_groups": skew}))


def test_cli_place_groups(step, two_by_two, tmp_path):
    def run(*args: str) -> str:
        result = CliRunner().invoke(
            cli, ["place-groups", *args], obj={}, env={"LLAMP_HOME": str(tmp_path)}
        )
        assert result.exit_code == 0, result.output
        return result.stdout

    data = json.loads(
        run(str(step), "gpus=2", "--layout", "tp,dp,pp", "--layout", "dp,tp,pp", "--x", "1",
            "--json")
    )  # fmt: skip
    assert [m["mapping"] for m in data["mappings"]] == [AS_TRACED, "tp,dp,pp", "dp,tp,pp"]
    assert data["slot_of_rank"]["dp,tp,pp"] == [0, 2, 1, 3, 4, 6, 5, 7]
    table = run(str(two_by_two), "gpus=2", "--x", "1")
    assert "tp groups in a node" in table and "dp,tp" in table  # every order by default
    bad = llamp(
        "place-groups", str(step), "gpus=2", "--layout", "tp,ep", home=tmp_path, check=False
    )
    assert bad.returncode == 2 and bad.stderr.startswith("llamp: error: order 'tp,ep'")


def test_rank_placement_starts_from_every_layout(two_by_two):
    """``llamp place`` on a training run: its layouts are baselines, with the same exact T."""
    from llamp.lp.placement import place, two_level_machine

    params = LogGPS.parse(o="1us", S="4MiB", nic="overlap")
    machine = two_level_machine(2, 2, MACHINE.nvlink, MACHINE.network)
    result = place(read(two_by_two), params, machine, max_iterations=5)
    T = result.mappings.set_index("mapping")["runtime_ns"]
    (Li, Gi), (Le, Ge) = MACHINE.nvlink, MACHINE.network
    assert T["tp,dp"] == pytest.approx(2 * O_NS + Li + 2**21 * Gi, abs=1e-9)
    assert T["dp,tp"] == pytest.approx(2 * O_NS + Le + 2**21 * Ge, abs=1e-9)
    assert result.node_of_rank["dp,tp"].tolist() == [0, 1, 0, 1]
    assert T[result.best] == T["tp,dp"]


def test_a_gpu_machine_spec_carries_the_layout(two_by_two, tmp_path):
    """``layout=dp:tp`` in the machine: gpu-machine and region --gpu-machine place the ranks."""
    params = LogGPS.parse(o="1us", S="4MiB", nic="overlap")
    graph = read(two_by_two)
    machine = GpuMachine.parse(MACHINE.spec() + ",layout=dp:tp")
    assert machine.layout == ("dp", "tp") and GpuMachine.parse(machine.spec()) == machine
    T = analyze_gpu_machine(graph, params, machine, []).runtime_ns
    (_, _), (Le, Ge) = MACHINE.nvlink, MACHINE.network
    assert T == pytest.approx(2 * O_NS + Le + 2**21 * Ge, abs=1e-9)
    with pytest.raises(InputError, match="no dimension 'ep'"):
        analyze_gpu_machine(graph, params, GpuMachine.parse("gpus=2,layout=ep:tp"), [])


def test_numbered_communicators_of_a_goal_trace_are_dimensions(tmp_path):
    """ATLAHS GOAL: communicators 0, 1 pair ranks {0,1}, {2,3} (a tensor-parallel all-reduce
    of 1 MiB), communicators 2, 3 pair {0,2}, {1,3} (a data-parallel one of 1 KiB)."""
    comms = {0: (0, 1), 1: (2, 3), 2: (0, 2), 3: (1, 3)}
    blocks = []
    for r in range(4):
        tp = next(c for c in (0, 1) if r in comms[c])
        dp = next(c for c in (2, 3) if r in comms[c])
        blocks.append(
            f"rank {r} {{\nl1: calc 100\n"
            f"l2: AllReduce 1048576 bytes comm {tp} gpu {r} stream 0 seq 0 end\nl2 requires l1\n"
            f"l3: AllReduce 1024 bytes comm {dp} gpu {r} stream 0 seq 0 end\nl3 requires l2\n}}\n"
        )
    path = tmp_path / "ai.goal"
    path.write_text("num_ranks 4\n\n" + "\n".join(blocks))
    graph = read(path)
    assert graph.meta["process_groups"] == {"0": [0, 1], "1": [2, 3], "2": [0, 2], "3": [1, 3]}
    dims, _ = parallel_dims(graph)
    assert [(d.name, [list(g) for g in d.groups]) for d in dims] == [
        ("size2.1", [[0, 1], [2, 3]]),
        ("size2.2", [[0, 2], [1, 3]]),
    ]
    result = compare_group_placements(graph, LogGPS(), MACHINE, x=[])
    T = result.mappings.set_index("mapping")["runtime_ns"]
    assert result.traced_layout == ("size2.1,size2.2",)
    assert T["size2.1,size2.2"] < T["size2.2,size2.1"]  # the 1 MiB all-reduce on NVLink
