"""Per-message weights: the uniform model equals the homogeneous engine; pair matrices."""

from __future__ import annotations

import numpy as np
import pytest
from hand_graphs import build, paper_example
from random_graphs import random_graph

from llamp.lp import engine_for, predict
from llamp.lp.weighted import MessageModel, calc_edges, evaluate_model, pair_matrices, runtime_batch
from llamp.params import LogGPS


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_uniform_model_equals_homogeneous_engine(seed):
    graph = random_graph(seed, ranks=4, steps=60)
    params = LogGPS(L=2500.0, o=300.0, G=0.3, S=2048)
    ref = predict(graph, params)
    point = evaluate_model(graph, params, MessageModel.uniform(graph, params))
    assert point.runtime_ns == pytest.approx(ref.runtime_ns, rel=1e-12)
    assert point.slopes == {"L": ref.lambda_L, "G": ref.lambda_G}


def test_pair_matrix_of_the_paper_example():
    """The only message (rank 0 → 1) is on the path for L = 0.5 µs: λ_L^{01} = 1, λ_G^{01} = 3."""
    lam_L, lam_G, T = pair_matrices(paper_example(), LogGPS(L=500.0, o=0.0, G=5.0, S=1 << 20))
    assert T == pytest.approx(1615.0)
    assert lam_L.tolist() == [[0.0, 1.0], [0.0, 0.0]]
    assert lam_G.tolist() == [[0.0, 3.0], [0.0, 0.0]]


def test_per_message_latency_changes_only_its_pair():
    """Two receivers; raising L on the 0→2 message by 1 µs delays only that receiver."""
    graph, ids = build(
        3,
        {
            "a": (0, "send", 8, 1),
            "b": (0, "send", 8, 2),
            "r1": (1, "recv", 8, 0),
            "r2": (2, "recv", 8, 0),
        },
        [("a", "message", "r1"), ("b", "message", "r2")],
    )
    params = LogGPS(L=1000.0, o=0.0, G=0.0, S=1 << 20)
    model = MessageModel(latency_ns=np.array([1000.0, 2000.0]), gap_ns_per_byte=np.zeros(2))
    point = evaluate_model(graph, params, model)
    assert point.runtime_ns == pytest.approx(2000.0)


def test_runtime_batch_scales_calc_costs():
    """Paper example at L = 0 (T = max(c0 + c1, max(c0 + 3·G, c2) + c3) = 1.5 µs): scaling every
    calc by 2 doubles T; by 0.5 gives max(550, max(50 + 15, 250) + 500) = 750 ns."""
    graph = paper_example()
    params = LogGPS(L=0.0, o=0.0, G=5.0, S=1 << 20, nic="overlap")  # the paper's model
    ev = engine_for(graph).events(params)
    edges, vertices = calc_edges(graph, ev)
    assert sorted(graph.cost_ns[vertices].tolist()) == [100.0, 500.0, 1000.0, 1000.0]
    scales = np.ones((ev.num_edges, 3))
    scales[edges, :] = np.array([1.0, 2.0, 0.5])
    T = runtime_batch(graph, params, scales)
    np.testing.assert_allclose(T, [1500.0, 3000.0, 750.0])


def _array_weights(ev, params, model, calc_scale=None):
    """The edge weights as the array expression over the E × 5 coefficient table: the
    reference the one-pass kernel must equal bit for bit."""
    from llamp.lp.event_graph import COEF_G, COEF_GAP, COEF_L, COEF_O, CONST

    c = ev.coef
    has_msg = ev.msg >= 0
    msg = np.where(has_msg, ev.msg, 0)
    L = np.where(has_msg, model.latency_ns[msg], 0.0)
    G = np.where(has_msg, model.gap_ns_per_byte[msg], 0.0)
    const = c[:, CONST] if calc_scale is None else c[:, CONST] * calc_scale
    w = const + c[:, COEF_L] * L + c[:, COEF_G] * G + c[:, COEF_O] * params.o
    if params.g:
        w += c[:, COEF_GAP] * params.g
    dw = np.zeros((ev.num_edges, len(model.names)))
    dw += c[:, COEF_L, None] * np.where(has_msg[:, None], model.dlatency[msg], 0.0)
    dw += c[:, COEF_G, None] * np.where(has_msg[:, None], model.dgap[msg], 0.0)
    return w, dw


@pytest.mark.parametrize("seed", [5, 6])
def test_edge_weights_are_the_array_expression_bit_for_bit(seed):
    """Per-message latencies, gaps and slopes along three variables, rescaled calcs and a
    per-message gap g: the kernel's weights and slopes equal the array expression exactly."""
    from llamp.lp.weighted import edge_weights

    graph = random_graph(seed, ranks=4, steps=60)
    params = LogGPS(L=2500.0, o=300.0, G=0.3, S=2048, g=40.0)
    ev = engine_for(graph).events(params)
    rng = np.random.default_rng(seed)
    m = graph.messages()[0].size
    model = MessageModel(
        latency_ns=rng.uniform(100.0, 5000.0, m),
        gap_ns_per_byte=rng.uniform(0.01, 1.0, m),
        names=("a", "b", "c"),
        dlatency=rng.integers(0, 3, (m, 3)).astype(float),
        dgap=rng.uniform(0.0, 2.0, (m, 3)),
    )
    scale = rng.uniform(0.5, 1.5, ev.num_edges)
    for calc_scale in (None, scale):
        w, dw = edge_weights(ev, params, model, calc_scale)
        ref_w, ref_dw = _array_weights(ev, params, model, calc_scale)
        assert np.array_equal(w, ref_w) and np.array_equal(dw, ref_dw)
        assert dw.flags.c_contiguous
