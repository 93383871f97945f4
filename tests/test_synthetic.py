"""The synthetic stencil generator builds valid graphs with the message counts of its pattern."""

from __future__ import annotations

import numpy as np
import pytest

from llamp.errors import InputError
from llamp.ingest.synthetic import (
    StencilPattern,
    stencil_graph,
    stencil_with_vertices,
    vertices_per_iteration,
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
