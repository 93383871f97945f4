"""Analyses on random graphs: exact critical latencies and tolerances against dense sweeps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_graphs import random_graph

from llamp.lp import critical_latencies, engine_for, max_parameter_within, sweep, tolerance
from llamp.params import LogGPS

graphs = st.builds(
    random_graph,
    seed=st.integers(0, 10_000),
    ranks=st.integers(2, 5),
    steps=st.integers(5, 60),
)
configs = st.builds(
    LogGPS,
    L=st.floats(0.0, 5000.0),
    o=st.floats(0.0, 500.0),
    G=st.floats(0.0, 2.0),
    S=st.sampled_from([0, 512, 4096, 1 << 30]),
    g=st.sampled_from([0.0, 200.0]),
    progress=st.sampled_from(["async", "wait"]),
    nic=st.sampled_from(["overlap", "serial"]),
)


def _dense(graph, params, lo, hi, n=400):
    eng = engine_for(graph)
    xs = np.linspace(lo, hi, n)
    return xs, np.array([eng.runtime(params.with_(L=float(x))) for x in xs])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs, params=configs)
def test_T_of_L_is_nondecreasing_convex_and_matches_its_pieces(graph, params):
    """T(L) is a max of affine functions with non-negative slopes; the exact pieces found by
    tangent intersection reproduce a dense sweep everywhere."""
    lo, hi = 0.0, 20_000.0
    result = critical_latencies(graph, params, lo, hi)
    xs, Ts = _dense(graph, params, lo, hi)
    assert np.all(np.diff(Ts) >= -1e-6)
    slopes = np.diff(Ts) / np.diff(xs)
    assert np.all(np.diff(slopes) >= -1e-6)  # convex
    for seg in result.segments:
        inside = (xs >= seg.start) & (xs <= seg.end)
        predicted = seg.runtime_start_ns + seg.slope * (xs[inside] - seg.start)
        np.testing.assert_allclose(Ts[inside], predicted, rtol=1e-9, atol=1e-6)
    # every slope change of the dense sweep lies in a grid cell holding a critical latency
    step = xs[1] - xs[0]
    changes = np.flatnonzero(np.abs(np.diff(slopes)) > 1e-6)
    for c in changes:
        cell_lo, cell_hi = xs[c], xs[c + 2]
        assert any(cell_lo - 1e-9 <= x <= cell_hi + 1e-9 for x in result.critical), (cell_lo, step)
    # and slopes strictly increase across each reported breakpoint
    for a, b in zip(result.segments, result.segments[1:], strict=False):
        assert b.slope > a.slope


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs, params=configs, x=st.sampled_from([0.01, 0.05, 0.2]))
def test_latency_tolerance_is_the_root_of_T(graph, params, x):
    """The x% tolerance L* satisfies T(L*) = (1+x)·T(L0) and T is larger just beyond it."""
    eng = engine_for(graph)
    T0 = eng.runtime(params)
    bound = (1 + x) * T0
    L_star = max_parameter_within(graph, params, bound)
    if L_star == float("inf"):
        assert eng.point(params.with_(L=1e12), ("L",)).right["L"] == 0.0
        return
    assert L_star >= params.L
    assert eng.runtime(params.with_(L=L_star)) == pytest.approx(bound, rel=1e-9, abs=1e-6)
    assert eng.runtime(params.with_(L=L_star * 1.001 + 1.0)) > bound


def test_tolerance_levels_are_ordered_and_relative_to_configured_L():
    graph = random_graph(7, ranks=4, steps=80)
    params = LogGPS(L=2000.0, o=200.0, G=0.5, S=4096)
    tol = tolerance(graph, params)
    assert tol.baseline_ns == pytest.approx(engine_for(graph).runtime(params))
    lat = [t.value for t in tol.latency]
    assert lat == sorted(lat) and lat[0] >= params.L
    bw = [t.value for t in tol.bandwidth]
    assert bw == sorted(bw) and bw[0] >= params.G
    assert [t.x for t in tol.latency] == [0.01, 0.02, 0.05]


def test_sweep_reports_exact_right_derivatives():
    graph = random_graph(11, ranks=3, steps=50)
    params = LogGPS(L=0.0, o=100.0, G=0.1, S=1 << 30)
    frame = sweep(graph, params, np.linspace(0.0, 50_000.0, 11))
    T = frame.runtime_ns.to_numpy()
    lam = frame.lambda_L.to_numpy()
    # finite differences just to the right match λ_L
    eng = engine_for(graph)
    for L, t, slope in zip(frame.L_ns, T, lam, strict=True):
        right = eng.runtime(params.with_(L=L + 1e-3))
        assert (right - t) / 1e-3 == pytest.approx(slope, abs=1e-3)
    assert np.allclose(frame.rho_L, frame.L_ns * lam / T)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs, params=configs)
def test_critical_values_of_G_are_exact_under_every_nic_model(graph, params):
    """T(G) is a max of affine functions in both NIC models (under serial G also spaces the
    transfers of one NIC): the exact pieces reproduce a dense sweep of G."""
    lo, hi = 0.0, 20.0
    result = critical_latencies(graph, params, lo, hi, parameter="G")
    eng = engine_for(graph)
    xs = np.linspace(lo, hi, 200)
    Ts = np.array([eng.runtime(params.with_(G=float(x))) for x in xs])
    slopes = np.diff(Ts) / np.diff(xs)
    assert np.all(np.diff(slopes) >= -1e-6 * max(1.0, float(np.abs(slopes).max())))  # convex
    for seg in result.segments:
        inside = (xs >= seg.start) & (xs <= seg.end)
        predicted = seg.runtime_start_ns + seg.slope * (xs[inside] - seg.start)
        np.testing.assert_allclose(Ts[inside], predicted, rtol=1e-9, atol=1e-6)
