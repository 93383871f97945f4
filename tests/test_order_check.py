"""Where an analysis' fixed schedule order gives the network's own T (llamp.lp.order_check).

The graph of every test: rank 0 computes ``x`` (5 µs, CPU stream 1), then ``c`` (10 µs, CPU
stream 0), and receives rank 1's 8-byte message on stream 0; o = 1.5 µs, G = 0. The message
arrives at o + L. At the baseline L = 3 µs it arrives at 4.5 µs, before ``x`` ends, so stream
0 processes it first (4.5–6 µs) and ``c`` runs 6–16 µs: in that order ``T(L) =
max(5, 3 + L) + 10`` µs, a breakpoint at 2 µs. From L = 3.5 µs on, the message arrives after
``c`` took the stream: the network's own order runs ``c`` 5–15 µs and the message after it,
``T = max(15, 3 + L)`` µs.
"""

from __future__ import annotations

import json

import pytest
from test_schedule import LOGGOPSIM, ORDER_FLIPS, _graph

from llamp.lp.order_check import check_order, check_tolerance, pick
from llamp.lp.tolerance import tolerance

BASE = LOGGOPSIM.with_(L=3000.0, G=0.0).rescheduled()


def test_the_fixed_order_is_the_networks_up_to_where_the_calc_overtakes_the_message():
    """0 and 2 µs (same order) and the baseline agree; at 20 µs the baseline's order gives
    3 + 20 + 10 = 33 µs, the network's own 23 µs (+43.5 %)."""
    check = check_order(_graph(ORDER_FLIPS), BASE, "L", [0.0, 2000.0, 20_000.0])
    got = [(p.value, p.fixed_ns, p.own_ns, p.same_order) for p in check.points]
    assert got == [
        (0.0, 15_000.0, 15_000.0, True),
        (2000.0, 15_000.0, 15_000.0, True),
        (3000.0, 16_000.0, 16_000.0, True),  # the baseline, added between the values
        (20_000.0, 33_000.0, 23_000.0, False),
    ]
    assert check.agrees_over() == (0.0, 3000.0)
    assert check.differs_at == [20_000.0]
    assert [p.value for p in check.disagreements] == [20_000.0]
    assert check.disagreements[0].error == pytest.approx(10 / 23)
    assert check.candidates == 4


def test_the_given_fixed_T_is_used_and_an_order_that_never_agrees_has_no_run():
    """``fixed`` replaces the engine's evaluation (the critical search passes its pieces);
    with every value beyond 3.5 µs none agrees, so there is no run to report."""
    asked = []

    def fixed(values):
        asked.append(list(values))
        return 13_000.0 + values

    check = check_order(_graph(ORDER_FLIPS), BASE, "L", [10_000.0, 20_000.0], fixed)
    assert asked == [[10_000.0, 20_000.0]]
    assert [p.own_ns for p in check.points] == [16_500.0, 23_000.0]
    assert check.agrees_over() is None


def test_a_tolerance_under_the_networks_own_order():
    """T0 = 16 µs. 1 %: the fixed order's L = 3.16 µs keeps the order, its own T is the bound
    16.16 µs: one pass. 5 %: the fixed order reaches 16.8 µs at L = 3.8 µs, where the network's
    own order runs ``c`` first (T = 16.5 µs); in that order T = max(15, 1.5 + L) + 1.5 µs
    reaches the bound at L = 13.8 µs, which is the own order's there: the walk's answer."""
    graph = _graph(ORDER_FLIPS)
    tol = tolerance(graph, BASE, (0.01, 0.05), bandwidth=False)
    ((one, five),) = check_tolerance(graph, BASE, tol).values()
    assert (one.value, one.exact, one.walk) == (
        pytest.approx(3160.0),
        True,
        [(one.fixed, 16_160.0)],
    )
    assert five.fixed == pytest.approx(3800.0) and five.fixed_own_ns == 16_500.0
    assert five.value == pytest.approx(13_800.0) and five.exact
    assert [t for _, t in five.walk] == [16_500.0, pytest.approx(16_800.0)]


#: Rank 0 answers rank 1's message (``s2`` after ``r``, both on CPU stream 0, where ``c`` runs
#: 10 µs from 5 µs); rank 1 computes 20 µs after the answer. The receive ends at 3 µs + L:
#: below L = 2 µs it ends before ``c`` is released and the answer goes first,
#: T = 26 µs + 2L (29,998 ns at L = 1,999); from L = 2 µs ``c`` goes first and the answer
#: waits for it: T = 40 µs at 2 µs. The own T jumps by 10 µs there.
ANSWER_AFTER_CALC = """num_ranks 2
rank 0 {
x: calc 5000 cpu 1
c: calc 10000 cpu 0
c requires x
r: recv 8b from 1 tag 0 cpu 0
s2: send 8b to 1 tag 1 cpu 0
s2 requires r
}
rank 1 {
s: send 8b to 0 tag 0
r2: recv 8b from 0 tag 1
d: calc 20000
d requires r2
}
"""


def test_a_jump_over_the_bound_is_bracketed():
    """Baseline L = 0 (T0 = 26 µs), bound 30 µs: the fixed order reaches it at L = 2 µs,
    where the own T is 40 µs. Halving between 0 and 2 µs with passes, then one step in the
    order of the last value below (it reaches the bound at 2 µs again, outside): the walk stops
    at the last value below the jump."""
    from llamp.lp.order_check import own_tolerance
    from llamp.lp.schedule import schedule

    graph = _graph(ANSWER_AFTER_CALC)
    base = LOGGOPSIM.with_(L=0.0, G=0.0).rescheduled()
    assert schedule(graph, base).runtime == 26_000.0
    walk = own_tolerance(graph, base, "L", 4 / 26, 30_000.0, 2000.0, 64)
    assert walk.walk[0] == (2000.0, 40_000.0)
    assert not walk.exact and 2000.0 * (1 - 2e-5) < walk.value < 2000.0
    below = [t for v, t in walk.walk if v == walk.value]
    assert below == [pytest.approx(26_000.0 + 2 * walk.value)]
    assert len(walk.walk) == 1 + 17  # halving 2 µs to 10^-5 of it; the last step is 2 µs again
    short = own_tolerance(graph, base, "L", 4 / 26, 30_000.0, 2000.0, 3)
    assert short.value is None and len(short.walk) == 3


def test_the_program_order_needs_no_check():
    params = BASE.with_(order="program")
    assert check_order(_graph(ORDER_FLIPS), params, "L", [0.0, 20_000.0]) is None
    assert (
        check_tolerance(_graph(ORDER_FLIPS), params, tolerance(_graph(ORDER_FLIPS), params)) == {}
    )


def test_picking_keeps_the_ends_and_the_baseline():
    assert pick([5.0, 1.0, 3.0, 3.0, float("inf")]).tolist() == [1.0, 3.0, 5.0]
    assert pick(range(100), 3).tolist() == [0.0, 50.0, 99.0]
    check = check_order(_graph(ORDER_FLIPS), BASE, "L", [0, 1000, 2000, 20_000], most=2)
    assert [p.value for p in check.points] == [0.0, 3000.0, 20_000.0]
    assert check.candidates == 5
    kept = check_order(
        _graph(ORDER_FLIPS), BASE, "L", [0, 1000, 2000, 20_000], most=2, keep=[1000, 2000]
    )
    assert [p.value for p in kept.points] == [1000.0, 2000.0, 3000.0]  # a report's sweep points


def _llamp_json(tmp_path, *args):
    from cli_process import llamp

    path = tmp_path / "flip.goal"
    path.write_text(ORDER_FLIPS)
    options = ("--o", "1.5us", "--G", "0", "--L", "3us", "--rendezvous", "loggopsim")
    out = llamp(*args[:1], str(path), *options, *args[1:], "--json", home=tmp_path)
    return json.loads(out.stdout)


def test_tolerance_and_report_say_where_the_networks_order_differs(tmp_path):
    """``tolerance --json`` and ``report --json`` carry the checks (``schedule_order``)."""
    (tol,) = _llamp_json(tmp_path, "tolerance", "--x", "5")["schedule_order"]["L"]
    assert tol["fixed_order_ns"] == pytest.approx(3800.0)
    assert tol["own_order_ns"] == pytest.approx(13_800.0) and tol["exact"]
    assert tol["own_runtime_at_fixed_ns"] == 16_500.0
    report = _llamp_json(tmp_path, "report", "--to", "20us", "--points", "3")["schedule_order"]
    assert report["tolerance"]["L"][-1]["own_order_ns"] == pytest.approx(13_800.0)
    assert report["range"]["checked"] == [0.0, 2000.0, 3000.0, 10_000.0, 20_000.0]
    assert report["range"]["runtime_differs_at"] == [10_000.0, 20_000.0]
    assert report["range"]["agrees_to_ns"] == 3000.0


def test_a_regions_vertices_are_checked_against_the_bound():
    """The 5 % region over (L, G): on its L axis at 3.8 µs the fixed order reaches the bound
    16.8 µs and the network's own order ends at 16.5 µs; the origin (15 µs) keeps the order."""
    from llamp.lp.order_check import check_region
    from llamp.lp.region import tolerance_region

    graph = _graph(ORDER_FLIPS)
    region = tolerance_region(graph, BASE, levels=(0.05,), axes=("L", "G"))
    (checks,) = check_region(graph, region).values()
    by_vertex = {(round(c.u, 6), c.v): c for c in checks}
    origin, on_axis = by_vertex[0.0, 0.0], by_vertex[3800.0, 0.0]
    assert (origin.own_ns, origin.same_order) == (15_000.0, True)
    assert (on_axis.fixed_ns, on_axis.own_ns) == (pytest.approx(16_800.0), 16_500.0)
    assert on_axis.excess == pytest.approx(-300 / 16_800)
    assert len(checks) == region.levels[0].u.size


def test_region_json_carries_the_checks(tmp_path):
    order = _llamp_json(tmp_path, "region", "--x", "5")["schedule_order"]
    assert [v["own_runtime_ns"] for v in order["5pct"]] == [15_000.0, 16_500.0, 16_500.0]


def test_a_walk_out_of_budget_says_where_it_left_the_answer():
    from llamp.lp.order_check import OwnTolerance

    def walk(*points, value=None, exact=False):
        return OwnTolerance("L", 0.01, 100.0, 5.0, value, exact, list(points))

    fmt = "{:g}".format
    assert walk((5.0, 90.0), (7.0, 95.0)).text(fmt) == "≥ 7"
    assert walk((5.0, 110.0)).text(fmt) == "< 5"
    assert walk((5.0, 110.0), (3.0, 90.0)).text(fmt) == "3 … 5"
    assert walk((5.0, 100.0), value=5.0, exact=True).text(fmt) == "5"
    assert walk((5.0, 110.0), (4.0, 90.0), value=4.0).text(fmt) == "4 ↑"


def test_progress_is_reported_and_can_cancel():
    """Each pass reports its share; an exception raised by the callback (the UI's Cancel) ends
    the check and the walks."""
    seen = []
    check_order(
        _graph(ORDER_FLIPS),
        BASE,
        "L",
        [0.0, 2000.0, 20_000.0],
        progress=lambda f, t: seen.append(f),
    )
    assert seen == [pytest.approx(k / 4) for k in (1, 2, 3, 4)]

    class Stop(Exception):
        pass

    def stop(fraction, text):
        raise Stop

    with pytest.raises(Stop):
        check_order(_graph(ORDER_FLIPS), BASE, "L", [0.0, 20_000.0], progress=stop)
    graph = _graph(ORDER_FLIPS)
    with pytest.raises(Stop):
        check_tolerance(graph, BASE, tolerance(graph, BASE), progress=stop)
