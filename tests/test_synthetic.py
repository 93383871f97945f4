"""The synthetic stencil generator builds valid graphs with the message counts of its pattern."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from llamp.errors import InputError
from llamp.ingest import read
from llamp.ingest.goal import read_goal, write_goal
from llamp.ingest.synthetic import (
    StencilPattern,
    stencil_graph,
    stencil_with_vertices,
    vertices_per_iteration,
    write_stencil_goal,
)
from llamp.lp import predict
from llamp.params import LogGPS


def test_message_counts_follow_the_pattern():
    """8 ranks, 2-D (4 neighbours), 6 iterations, allreduce every 2nd, alltoall every 3rd:
    halo 8·4·6 = 192, allreduce 3 rounds × 8 × 3 = 72, alltoall 8·7·2 = 112 messages."""
    g = stencil_graph(ranks=8, iterations=6, dims=2, allreduce_every=2, alltoall_every=3)
    s = g.summary()
    assert s.messages == 192 + 72 + 112
    sends, _ = g.messages()
    sizes = g.size[sends]
    p = StencilPattern()
    assert (sizes == p.halo_bytes).sum() == 192
    assert (sizes == p.allreduce_bytes).sum() == 72
    assert (sizes == p.alltoall_bytes).sum() == 112
    assert s.vertices == 8 * round(
        vertices_per_iteration(StencilPattern(ranks=8, allreduce_every=2, alltoall_every=3)) * 6 + 1
    )


def test_same_seed_same_graph_and_valid_evaluation():
    a = stencil_graph(ranks=4, iterations=5, dims=1, seed=3)
    b = stencil_graph(ranks=4, iterations=5, dims=1, seed=3)
    assert a.equals(b)
    assert predict(a, LogGPS()).runtime_ns > a.summary().calc_ns_per_rank[0]


def test_target_size_is_met_within_one_iteration():
    g = stencil_with_vertices(20_000, ranks=16)
    per_iter = vertices_per_iteration(StencilPattern(ranks=16)) * 16
    assert abs(g.num_vertices - 20_000) <= per_iter


def test_non_power_of_two_ranks_need_another_allreduce():
    with pytest.raises(InputError, match="power-of-two"):
        stencil_graph(ranks=6, iterations=2)
    g = stencil_graph(ranks=6, iterations=2, allreduce_every=0)
    assert np.all(g.size[g.messages()[0]] == StencilPattern().halo_bytes)


@pytest.mark.parametrize(
    "pattern",
    [
        dict(ranks=8, iterations=6, dims=2, allreduce_every=2, alltoall_every=3),
        dict(ranks=4, iterations=5, dims=1, seed=3),
        dict(ranks=6, iterations=4, allreduce_every=0, alltoall_every=2),
        dict(ranks=16, iterations=30, alltoall_every=10, halo_bytes=70000),
    ],
)
def test_streamed_goal_is_what_write_goal_writes_for_the_built_graph(tmp_path, pattern):
    """The streaming writer never builds the graph, yet writes the same bytes as
    write_goal(stencil_graph(...)); the file reads back as that graph (costs rounded)."""
    graph = stencil_graph(**pattern)
    expected = write_goal(graph, tmp_path / "built.goal")
    written = write_stencil_goal(tmp_path / "streamed.goal", **pattern)
    text = written.path.read_bytes()
    assert text == expected.path.read_bytes()
    assert written.vertices == graph.num_vertices
    assert written.lines == text.count(b"\n") and written.bytes == len(text)
    back = read_goal(written.path)
    rounded = copy.copy(graph)
    rounded.cost_ns = np.rint(graph.cost_ns)
    assert back.equals(rounded)


def test_streamed_goal_in_small_batches_is_the_same(tmp_path, monkeypatch):
    import llamp.ingest.synthetic as synthetic

    whole = write_stencil_goal(tmp_path / "a.goal", ranks=4, iterations=9, alltoall_every=4)
    monkeypatch.setattr(synthetic, "_BATCH_BYTES", 1)  # one iteration per batch
    parts = write_stencil_goal(tmp_path / "b.goal", ranks=4, iterations=9, alltoall_every=4)
    assert parts.path.read_bytes() == whole.path.read_bytes()


def test_llamp_synth_writes_goal_and_npz_of_the_asked_size(tmp_path, capsys):
    from llamp.cli import main

    for out in (tmp_path / "s.goal", tmp_path / "s.npz"):
        with pytest.raises(SystemExit) as done:
            main(["synth", str(out), "--vertices", "5k", "--ranks", "8", "--json"])
        assert done.value.code == 0
        result = json.loads(capsys.readouterr().out)
        per_iter = vertices_per_iteration(StencilPattern(ranks=8, alltoall_every=10)) * 8
        assert abs(result["vertices"] - 5000) <= per_iter
        graph = read(out)
        assert graph.num_vertices == result["vertices"] and graph.num_ranks == 8
    with pytest.raises(SystemExit) as done:
        main(["synth", str(tmp_path / "x.goal"), "--vertices", "many"])
    assert done.value.code == 2
    assert "expected a count" in capsys.readouterr().err
