"""Critical latencies on a hand-made graph whose ``T(L)`` is known in closed form: the exact
breakpoints, the breakpoints that matter (``significant``), and ``T``/``λ_L`` read from the
exact segments (``runtime_at``/``slope_at``)."""

from __future__ import annotations

import numpy as np
import pytest

from llamp.errors import InputError
from llamp.ingest.goal import parse_goal_text
from llamp.lp import critical_latencies, sweep
from llamp.lp.critical import Breakpoint, relative_jump
from llamp.params import LogGPS

#: Independent chains (compute ``c`` ns, then ``k`` ping-pong messages on their own two ranks): with o = G = g = 0
#: each chain ends at ``c + k·L``, so ``T(L) = max_k (c_k + k·L)``. The intercepts put the
#: breakpoints at 1, 2, 3, 4, 5, 6 and 8 µs with λ_L stepping 0→1→2→200→201→202→203→250.
CHAINS = [
    (1_000_000, 0),
    (999_000, 1),
    (997_000, 2),
    (403_000, 200),
    (399_000, 201),
    (394_000, 202),
    (388_000, 203),
    (12_000, 250),
]
BREAKPOINTS = [1000.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0, 8000.0]
SLOPES = [0.0, 1.0, 2.0, 200.0, 201.0, 202.0, 203.0, 250.0]
PARAMS = LogGPS(L=0.0, o=0.0, G=0.0, g=0.0)


def chains_goal() -> str:
    """Chain ``n`` runs on ranks 2n and 2n+1, each op requiring the rank's previous one."""
    ranks: list[list[str]] = []
    for n, (c, k) in enumerate(CHAINS):
        a, b = [f"c{n}: calc {c}"], []
        for m in range(k):
            src, dst = (a, b) if m % 2 == 0 else (b, a)
            peer_src, peer_dst = (2 * n, 2 * n + 1) if m % 2 == 0 else (2 * n + 1, 2 * n)
            src.append(f"m{m}: send 8b to {peer_dst} tag {n}")
            dst.append(f"m{m}: recv 8b from {peer_src} tag {n}")
        ranks += [a, b]
    text = f"num_ranks {len(ranks)}\n"
    for r, ops in enumerate(ranks):
        labels = [op.split(":")[0] for op in ops]
        deps = [f"{x} requires {y}" for y, x in zip(labels, labels[1:], strict=False)]
        text += f"rank {r} {{\n" + "\n".join(ops + deps) + "\n}\n"
    return text


def closed_form(L):
    return np.max([c + k * np.asarray(L, dtype=float) for c, k in CHAINS], axis=0)


@pytest.fixture(scope="module")
def chains():
    return parse_goal_text(chains_goal(), name="chains.goal")


@pytest.fixture(scope="module")
def crit(chains):
    return critical_latencies(chains, PARAMS, 0.0, 10_000.0)


def test_the_graph_is_the_closed_form(chains):
    values = np.array([0.0, 500.0, 2500.0, 4500.0, 7000.0, 10_000.0])
    got = sweep(chains, PARAMS, values)
    assert got["runtime_ns"].tolist() == pytest.approx(closed_form(values).tolist(), rel=1e-12)


@pytest.mark.parametrize("wave_width", [1, 4, 32])
def test_the_breakpoints_and_slopes_are_exact(chains, wave_width):
    crit = critical_latencies(chains, PARAMS, 0.0, 10_000.0, wave_width=wave_width)
    assert crit.complete
    assert crit.critical == pytest.approx(BREAKPOINTS, rel=1e-12)
    assert [s.slope for s in crit.segments] == SLOPES
    if wave_width == 1:
        # one probe at a time: at most 2k + 1 (fewer when a probe lands on a breakpoint)
        assert crit.evaluations <= 2 * len(BREAKPOINTS) + 1 and crit.waves <= crit.evaluations
    else:  # several probes per wave: fewer waves
        assert crit.waves < critical_latencies(chains, PARAMS, 0.0, 10_000.0, wave_width=1).waves


def test_a_wave_is_as_wide_as_the_lanes_one_pass_holds(chains, monkeypatch):
    """The default wave is what one pass per core evaluates: every lane where the lane state
    is small, fewer where it is large (on the 1,024-GPU training step 2 lanes per pass: a
    wave of 128 probes cost 64 passes there). Same breakpoints either way."""
    from llamp.lp import engine as engine_module

    eng = engine_module.engine_for(chains)
    assert eng.wave_width(PARAMS) == engine_module.LANES * engine_module.WORKERS
    ring = eng.mask(PARAMS) + 1
    monkeypatch.setattr(engine_module, "LANE_BYTES", 8 * 3 * ring * 6)  # room for 6 lanes:
    assert eng.wave_width(PARAMS) == 4 * engine_module.WORKERS  # a pass computes 4 or 8
    narrow = critical_latencies(chains, PARAMS, 0.0, 10_000.0)
    assert narrow.critical == pytest.approx(BREAKPOINTS, rel=1e-11)
    assert (
        narrow.evaluations
        < critical_latencies(
            chains, PARAMS, 0.0, 10_000.0, wave_width=engine_module.LANES * engine_module.WORKERS
        ).evaluations
    )
    monkeypatch.setattr(engine_module, "LANE_BYTES", 8 * 3 * ring)  # one lane: scalar kernel
    assert eng.wave_width(PARAMS) == engine_module.WORKERS


def test_significant_merges_runs_of_small_steps_and_ranks_by_jump(crit):
    # steps: 1000: 0→1 (100 %), 2000: 1→2 (100 %), 3000: 2→200 (9900 %),
    # 4000/5000/6000: +1 each (0.5 %, 0.498 %, 0.495 %), 8000: 203→250 (23 %).
    got = crit.significant(0.01)
    assert [b.at for b in got] == pytest.approx([3000.0, 8000.0, 4000.0, 1000.0, 2000.0])
    merged = got[2]
    assert merged == Breakpoint(
        at=pytest.approx(4000.0),
        lo=pytest.approx(4000.0),
        hi=pytest.approx(6000.0),
        slope_before=200.0,
        slope_after=203.0,
        jump=3.0,
        relative_jump=pytest.approx(0.015),
        merged=3,
    )
    assert got[0].jump == 198.0 and got[0].relative_jump == pytest.approx(99.0)
    assert got[0].merged == 1 and got[0].lo == got[0].hi == got[0].at
    assert got[1].slope_before == 203.0 and got[1].relative_jump == pytest.approx(47 / 203)


def test_a_merged_run_below_the_threshold_is_dropped(crit):
    # at 2 % the run 4–6 µs (+1.5 % in all) no longer matters
    assert [b.at for b in crit.significant(0.02)] == pytest.approx([3000.0, 8000.0, 1000.0, 2000.0])
    # at 30 % the 23 % step at 8 µs joins the run: 4, 5, 6, 8 µs merge (200 → 250: 25 %) and drop
    assert [b.at for b in crit.significant(0.3)] == pytest.approx([3000.0, 1000.0, 2000.0])
    # at 0 nothing merges: every exact breakpoint, by jump
    every = crit.significant(0.0)
    assert len(every) == 7 and all(b.merged == 1 for b in every)
    assert every[0].at == pytest.approx(3000.0) and every[1].at == pytest.approx(8000.0)


def test_the_relative_jump_counts_a_step_from_zero_against_one():
    assert relative_jump(0.0, 1.0) == 1.0 and relative_jump(200.0, 201.0) == 0.005


def test_runtime_and_slope_from_the_segments_match_the_engine(chains, crit):
    values = np.array([0.0, 999.0, 1000.0, 2500.0, 3000.0, 5500.0, 8000.0, 9999.5, 10_000.0])
    ref = sweep(chains, PARAMS, values)
    assert crit.runtime_at(values) == pytest.approx(ref["runtime_ns"].to_numpy(), rel=1e-12)
    assert crit.runtime_at(values) == pytest.approx(closed_form(values), rel=1e-12)
    # right slopes (the engine's), at a breakpoint the piece above it
    assert crit.slope_at(values).tolist() == ref["lambda_L"].tolist()
    assert crit.slope_at([1000.0, 3000.0]).tolist() == [1.0, 200.0]


def test_runtime_at_refuses_values_it_does_not_know(chains, crit):
    with pytest.raises(InputError, match="outside the searched range"):
        crit.runtime_at([500.0, 10_001.0])
    part = critical_latencies(chains, PARAMS, 0.0, 10_000.0, max_evaluations=3, wave_width=1)
    assert not part.complete
    u = part.unresolved[0]
    inside = (u.start + u.end) / 2
    with pytest.raises(InputError, match="unresolved interval"):
        part.slope_at([inside])
    # the ends of an unresolved interval are known exactly
    assert part.runtime_at([u.start, u.end]) == pytest.approx(closed_form([u.start, u.end]))


def test_significant_of_a_partial_search_never_merges_across_a_gap(chains, crit):
    for budget in range(3, 12):
        part = critical_latencies(chains, PARAMS, 0.0, 10_000.0, max_evaluations=budget)
        found = part.significant(0.0)
        assert len(found) == len(part.critical) and all(b.merged == 1 for b in found)
        exact = dict(zip(BREAKPOINTS, zip(SLOPES, SLOPES[1:], strict=False), strict=True))
        for b in found:  # the slopes either side of a found breakpoint are the exact ones
            key = min(exact, key=lambda x, b=b: abs(x - b.at))
            assert b.at == pytest.approx(key) and (b.slope_before, b.slope_after) == exact[key]
        for b in part.significant(0.01):
            inside = [x for x in part.critical if b.lo <= x <= b.hi]
            assert len(inside) == b.merged
            assert not any(b.lo < u.start < b.hi for u in part.unresolved)
