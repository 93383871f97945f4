"""The full report on the real Sweep3D trace (4 ranks, 2009): sweep, critical latencies, tolerance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llamp.ingest import read
from llamp.lp import critical_latencies, critical_path, engine_for, predict, sweep, tolerance
from llamp.params import LogGPS

SWEEP3D = Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2"


@pytest.fixture(scope="module")
def sweep3d():
    return read(SWEEP3D)


def test_sweep_is_nondecreasing_and_convex(sweep3d):
    frame = sweep(sweep3d, LogGPS(), np.linspace(0.0, 100_000.0, 11))
    T = frame.runtime_ns.to_numpy()
    assert np.all(np.diff(T) >= 0)
    assert np.all(np.diff(T, 2) >= -1e-6)  # equal spacing: second differences ≥ 0
    lam = frame.lambda_L.to_numpy()
    assert np.all(np.diff(lam) >= 0)  # convexity: λ_L never decreases with L


def test_baseline_close_to_the_traced_runtime(sweep3d):
    """The trace spans ~42 s; at the default LogGPS parameters T(L0) reproduces it (< 1 %):
    Sweep3D on 4 ranks is computation-bound."""
    p = predict(sweep3d, LogGPS())
    assert 41.5e9 < p.runtime_ns < 42.5e9
    assert p.rho_L < 1e-3


@pytest.mark.parametrize("order", ["program", "schedule"])
def test_critical_latencies_reproduce_the_function(sweep3d, order):
    """The program order to 1e-13. The schedule order (the default) to 1e-11, its slopes
    away from 0.2 ns around each critical value: its T(L) has breakpoints 0.1 ns apart
    (λ_L 107 → 111 → 113 at L ≈ 4999.94 and 5000.03 ns), where paths are tied within the
    engine's rounding (REL_TOL · T = 0.04 ns at T = 41.9 s), and the search takes the pair for
    one breakpoint: T off by 0.126 ns (3e-12) beyond it."""
    params = LogGPS(order=order)
    rel, near = (1e-13, 0.0) if order == "program" else (1e-11, 0.2)
    crit = critical_latencies(sweep3d, params, 0.0, 100_000.0)
    assert len(crit.critical) >= 1
    eng = engine_for(sweep3d)
    slopes = [s.slope for s in crit.segments]
    assert slopes == sorted(slopes) and len(set(slopes)) == len(slopes)
    # A dense probe of T and its right slope agrees with the pieces everywhere (a breakpoint
    # that a tangent intersection lands on exactly must not be lost: Sweep3D has such).
    xs = np.linspace(0.0, 40_000.0, 801)
    T, right, _ = eng.probe_many(params, "L", xs)
    for x, t, r in zip(xs, T, right, strict=True):
        seg = next(s for s in crit.segments if s.start <= x < s.end or x == s.end == 100_000.0)
        assert t == pytest.approx(seg.runtime_start_ns + seg.slope * (x - seg.start), rel=rel)
        assert r == seg.slope or any(abs(x - c) <= near for c in crit.critical), x


def test_tolerance_levels_hit_their_bounds(sweep3d):
    params = LogGPS()
    tol = tolerance(sweep3d, params)
    eng = engine_for(sweep3d)
    for level in tol.latency:
        assert eng.runtime(params.with_(L=level.value)) == pytest.approx(level.bound_ns, rel=1e-12)
    for level in tol.bandwidth:
        assert eng.runtime(params.with_(G=level.value)) == pytest.approx(level.bound_ns, rel=1e-12)
    assert [t.value for t in tol.latency] == sorted(t.value for t in tol.latency)


def test_critical_path_time_split_adds_up(sweep3d):
    cp = critical_path(sweep3d, LogGPS())
    assert sum(cp.totals.values()) == pytest.approx(cp.runtime_ns, rel=1e-12)
    assert cp.runtime_ns == pytest.approx(predict(sweep3d, LogGPS()).runtime_ns, rel=1e-12)
    assert len(cp.messages) == predict(sweep3d, LogGPS()).lambda_L  # eager: one L per message
