"""What a 10^8-vertex graph runs through, checked on small graphs: the lane kernels for single
points and probes (``HUGE_EVENTS``), the critical path from one slope column, blocked weights.
Each gives exactly the numbers of the path small graphs take."""

from __future__ import annotations

import numpy as np
import pytest
from random_graphs import random_graph

import llamp.lp.engine as engine_module
from llamp.lp import critical_path, tolerance
from llamp.lp.engine import GraphEngine
from llamp.params import LogGPS

PARAMS = LogGPS(L=2500.0, o=120.0, G=0.25, S=2048)


def _fresh(graph):
    return GraphEngine(graph)


@pytest.mark.parametrize("seed", range(4))
def test_huge_graph_paths_give_the_same_numbers(monkeypatch, seed):
    graph = random_graph(seed, ranks=4, steps=80, max_size=8192)
    small = _fresh(graph)
    want_point = small.point(PARAMS)
    want_probe = small.probe_many(PARAMS, "L", [0.0, 3000.0])
    want_one = small.probe_many(PARAMS, "G", [0.5])
    monkeypatch.setattr(engine_module, "HUGE_EVENTS", 0)
    huge = _fresh(graph)
    assert huge.point(PARAMS) == want_point
    for got, want in zip(huge.probe_many(PARAMS, "L", [0.0, 3000.0]), want_probe, strict=True):
        assert np.array_equal(got, want)
    for got, want in zip(huge.probe_many(PARAMS, "G", [0.5]), want_one, strict=True):
        assert np.array_equal(got, want)
    assert want_point.right["L"] >= 0 and want_point.runtime_ns > 0


@pytest.mark.parametrize("seed", range(4))
def test_huge_graph_tolerance_and_path_are_unchanged(monkeypatch, seed):
    graph = random_graph(seed + 10, ranks=4, steps=80, max_size=8192)
    want_tol = tolerance(graph, PARAMS, (0.01, 0.05), engine="graph")
    want_path = critical_path(graph, PARAMS)
    monkeypatch.setattr(engine_module, "HUGE_EVENTS", 0)
    engine_module._ENGINES.clear()
    got_tol = tolerance(graph, PARAMS, (0.01, 0.05), engine="graph")
    got_path = critical_path(graph, PARAMS)
    assert got_tol.as_dict() == want_tol.as_dict()
    assert got_path.runtime_ns == want_path.runtime_ns
    assert np.array_equal(got_path.vertices, want_path.vertices)
    assert np.array_equal(got_path.messages, want_path.messages)
    assert got_path.split.equals(want_path.split)


def test_blocked_weights_equal_the_one_expression():
    graph = random_graph(7, ranks=5, steps=120, max_size=8192)
    ev = GraphEngine(graph).events(PARAMS)
    wa, wb = ev.pattern_weights(PARAMS.L, PARAMS.G, PARAMS.o, PARAMS.g)
    assert np.array_equal(ev.weights_at(PARAMS), wa[ev.pattern] + ev.value * wb[ev.pattern])
    assert ev.num_edges > 0
