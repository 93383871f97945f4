"""The low-memory lowering (scratch columns, graph saved first and lowered from its mapped
file) gives exactly the arrays of the in-memory one."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
from random_graphs import random_graph

from llamp.graph import ExecutionGraph, NpzMembers
from llamp.ingest.synthetic import stencil_graph
from llamp.lp import engine_for
from llamp.lp.event_graph import build_event_graph
from llamp.lp.lowered import save_graph
from llamp.params import LogGPS


def _same_event_graphs(a, b) -> None:
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, f.name
            assert np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("S", [0, 2048, 1 << 40])
@pytest.mark.parametrize(("progress", "nic"), [("async", "overlap"), ("wait", "serial")])
def test_scratch_lowering_is_bit_identical(tmp_path, seed, S, progress, nic):
    graph = random_graph(seed, ranks=4, steps=60, max_size=8192)
    memory = build_event_graph(graph, S, progress=progress, nic=nic)
    scratch = build_event_graph(graph, S, progress=progress, nic=nic, scratch=tmp_path)
    _same_event_graphs(memory, scratch)
    assert memory.num_edges > 0
    assert list(tmp_path.iterdir()) == []  # scratch files are unlinked as soon as mapped


def _members(path) -> dict[str, np.ndarray]:
    members = NpzMembers(path)
    return {name: np.array(members.array(name)) for name in members.names()}


@pytest.mark.parametrize(
    "make",
    [
        lambda: random_graph(3, ranks=5, steps=100, max_size=8192),
        lambda: stencil_graph(ranks=8, iterations=200, seed=1),
    ],
    ids=["random", "stencil"],
)
def test_spilled_save_writes_the_same_file(tmp_path, make):
    configs = (LogGPS(), LogGPS(S=256), LogGPS(progress="wait"))
    plain = save_graph(make(), tmp_path / "plain.npz", configs, spill=False)
    graph = make()
    spilled = save_graph(graph, tmp_path / "spilled.npz", configs, spill=True)
    want, got = _members(plain), _members(spilled)
    assert sorted(want) == sorted(got)
    # each file has its own seal (a random file id in every digest)
    del want["llamp_seal"], got["llamp_seal"]
    for name, array in want.items():
        assert array.dtype == got[name].dtype, name
        assert np.array_equal(array, got[name]), name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.npz", "spilled.npz"]
    # the caller's graph now reads its columns from the file, with the same values
    assert graph.source == spilled
    assert isinstance(graph.rank.base, np.memmap) or graph.rank.base is not None
    assert graph.equals(make())
    loaded = ExecutionGraph.load(spilled, lazy=True)
    params = LogGPS(L=3000.0, o=100.0, G=0.1)
    assert engine_for(loaded).point(params) == engine_for(make()).point(params)


@pytest.mark.slow
def test_scratch_lowering_of_the_million_vertex_stencil(tmp_path):
    graph = stencil_graph(ranks=16, iterations=2800, seed=3)
    assert graph.num_vertices > 900_000
    _same_event_graphs(
        build_event_graph(graph, LogGPS().S), build_event_graph(graph, LogGPS().S, scratch=tmp_path)
    )
