"""The critical-latency search under an evaluation budget (a report on 10^7 vertices
must end): what it finds is exact, what it misses is reported as unresolved intervals that
hold the missing critical latencies, and ``auto`` sizes the budget to the graph."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from llamp.cli.base import cli
from llamp.errors import InputError
from llamp.ingest.synthetic import stencil_graph
from llamp.lp import critical_latencies
from llamp.lp.critical import AUTO_MIN_EVALUATIONS, evaluation_budget
from llamp.params import LogGPS

PARAMS = LogGPS()


@pytest.fixture(scope="module")
def noisy():
    """A noisy 8-rank stencil with a few dozen critical latencies in [0, 100 µs]."""
    return stencil_graph(ranks=8, iterations=20, alltoall_every=5, seed=3)


@pytest.fixture(scope="module")
def exact(noisy):
    return critical_latencies(noisy, PARAMS, 0.0, 1e5)


def test_without_a_budget_the_search_is_complete(noisy, exact):
    assert exact.complete and exact.unresolved == [] and exact.max_evaluations is None
    assert len(exact.critical) > 10
    one = critical_latencies(noisy, PARAMS, 0.0, 1e5, wave_width=1)
    # one probe per interval: at most 2k + 1, fewer as intervals where λ_L rises by 1 hold
    # one breakpoint, at the tangent intersection, without a probe
    assert one.evaluations < 2 * len(one.critical) + 1
    # several probes per interval while few are open: the same breakpoints in fewer waves
    assert exact.critical == pytest.approx(one.critical, rel=1e-9)
    assert [s.slope for s in exact.segments] == [s.slope for s in one.segments]
    assert exact.waves < one.waves
    assert exact.unresolved_jump == 0.0 and exact.unresolved_bound == 0.0


@pytest.mark.parametrize("budget", [6, 12, 24])
def test_a_budget_finds_every_breakpoint_above_the_bound_it_reports(noisy, exact, budget):
    """Intervals are refined by their relative λ jump, which bounds the relative jump of any
    breakpoint inside: every breakpoint above ``unresolved_bound`` is found."""
    part = critical_latencies(noisy, PARAMS, 0.0, 1e5, max_evaluations=budget)
    before, after = exact.slopes()
    step = (after - before) / np.maximum(before, 1.0)
    found = set(part.critical)
    for x, r in zip(exact.critical, step, strict=True):
        if r > part.unresolved_bound:
            assert x in found or any(abs(x - y) <= 1e-9 * x for y in found), (x, r)
    assert part.unresolved_jump == pytest.approx(
        sum(u.slope_end - u.slope_start for u in part.unresolved)
    )
    assert part.unresolved_jump > 0 and len(part.unresolved) >= 1


@pytest.mark.parametrize("budget", [2, 7, 25])
def test_a_budget_finds_exact_values_and_brackets_the_rest(noisy, exact, budget):
    part = critical_latencies(noisy, PARAMS, 0.0, 1e5, max_evaluations=budget)
    assert part.evaluations <= budget and not part.complete
    assert all(any(abs(x - y) <= 1e-9 * x for y in exact.critical) for x in part.critical)
    missing = [x for x in exact.critical if not any(abs(x - y) <= 1e-9 * x for y in part.critical)]
    for x in missing:  # every missed critical latency lies in an unresolved interval
        assert any(u.start < x < u.end for u in part.unresolved), x
    for u in part.unresolved:  # and every unresolved interval holds one
        assert u.slope_end > u.slope_start
        assert any(u.start < x < u.end for x in missing)


def test_budgeted_pieces_are_linear_and_tile_the_range_with_the_gaps(noisy):
    part = critical_latencies(noisy, PARAMS, 0.0, 1e5, max_evaluations=9)
    pieces = sorted(
        [(s.start, s.end) for s in part.segments] + [(u.start, u.end) for u in part.unresolved]
    )
    assert pieces[0][0] == 0.0 and pieces[-1][1] == 1e5
    assert all(a[1] == pytest.approx(b[0]) for a, b in zip(pieces, pieces[1:], strict=False))
    for s in part.segments:
        assert s.runtime_end_ns == pytest.approx(
            s.runtime_start_ns + s.slope * (s.end - s.start), rel=1e-9
        )


def test_the_json_says_whether_the_search_is_complete(noisy, exact):
    data = critical_latencies(noisy, PARAMS, 0.0, 1e5, max_evaluations=5).as_dict()
    assert data["complete"] is False and data["max_evaluations"] == 5
    u = data["unresolved"][0]
    assert set(u) == {
        "from_ns",
        "to_ns",
        "lambda_L_from",
        "lambda_L_to",
        "runtime_from_ns",
        "runtime_to_ns",
    }
    assert data["unresolved_count"] == len(data["unresolved"]) >= 1
    jump = sum(u["lambda_L_to"] - u["lambda_L_from"] for u in data["unresolved"])
    assert data["unresolved_lambda_L_jump"] == pytest.approx(jump)
    assert data["waves"] >= 2
    assert exact.as_dict()["complete"] is True and exact.as_dict()["unresolved"] == []


def test_auto_budget_scales_with_the_graph(noisy):
    assert evaluation_budget(noisy, PARAMS) > 10_000  # small graph: exact in practice
    assert AUTO_MIN_EVALUATIONS >= 2


def test_a_budget_below_two_is_refused(noisy):
    with pytest.raises(InputError, match="at least 2"):
        critical_latencies(noisy, PARAMS, 0.0, 1e5, max_evaluations=1)


def test_cli_budget_option_reports_unresolved_intervals(noisy, tmp_path):
    path = tmp_path / "noisy.npz"
    noisy.save(path)
    runner = CliRunner()
    env = {"LLAMP_HOME": str(tmp_path)}
    out = runner.invoke(cli, ["critical", str(path), "--max-evaluations", "6"], env=env)
    assert out.exit_code == 0, out.output
    assert "incomplete: the budget of 6 evaluations ran out" in out.output
    assert "unresolved intervals" in out.output
    out = runner.invoke(cli, ["report", str(path), "--json"], env=env)  # auto: exact here
    data = json.loads(out.output)
    assert data["critical"]["complete"] is True
    out = runner.invoke(cli, ["critical", str(path), "--max-evaluations", "lots"], env=env)
    assert out.exit_code != 0 and "not all, auto or a whole number" in str(out.exception)


def test_an_interval_whose_slope_rises_by_one_needs_no_probe(noisy, exact):
    """λ_L counts messages, so a rise by 1 is one breakpoint: skipping its probe changes
    nothing but the count (``2k + 1`` evaluations without the rule)."""
    from llamp.lp.critical import _assemble, _least_step, _probe, tangent_breakpoints

    assert _least_step(noisy, PARAMS, "L") == 1.0 and _least_step(noisy, PARAMS, "G") == 1.0
    probe = _probe(noisy, PARAMS, "L", "graph")
    plain = tangent_breakpoints(probe, 0.0, 1e5, wave_width=1)
    ruled = tangent_breakpoints(probe, 0.0, 1e5, wave_width=1, min_step=1.0)
    crit_plain, seg_plain, _ = _assemble(0.0, 1e5, plain)
    crit_ruled, seg_ruled, _ = _assemble(0.0, 1e5, ruled)
    assert plain.evaluations == 2 * len(crit_plain) + 1
    assert ruled.evaluations < plain.evaluations
    assert crit_ruled == pytest.approx(crit_plain, rel=1e-9)
    assert crit_plain == pytest.approx(exact.critical, rel=1e-9)
    assert [s.slope for s in seg_ruled] == [s.slope for s in seg_plain]
