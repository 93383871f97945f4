"""Background work in the UI: progress and Cancel, the end of work nobody watches,
results stored with the run and reused, display-only controls that never recompute, the page
state in the URL and the links between views. On Sweep3D (run ``sweep3d``) under AppTest.
"""

from __future__ import annotations

import importlib
import threading
import time

import numpy as np
import pytest
from apptest_pages import RUN, arr, assert_clean, exact_ns, figures, keyed, page, table

from llamp.config import parse_duration_ns
from llamp.lp import critical, critical_latencies, evaluate, tolerance
from llamp.lp.critical import exact_curve
from llamp.lp.registry import critical_search
from llamp.lp.tolerance import latency_range
from llamp.params import LogGPS
from llamp.ui import display, stored, tasks
from llamp.ui import store_access as ui_store

pytestmark = pytest.mark.usefixtures("store_env")


@pytest.fixture
def graph(sweep3d):
    return sweep3d


@pytest.fixture
def slow_search(monkeypatch):
    """A critical-latency search that reports progress every 10 ms for up to a minute
    (``state["steps"]``), then answers as the real one: a long analysis to watch and cancel."""
    state = {"calls": 0, "stopped": threading.Event(), "steps": 6000}
    real = critical.critical_latencies

    def slow(graph, params, lo, hi, *, progress=None, **options):
        if progress is None:  # not the Latency page's search (a module imported meanwhile)
            return real(graph, params, lo, hi, **options)
        state["calls"] += 1
        steps = state["steps"]
        try:
            for done in range(steps):
                progress(done / steps, 1, done, 1)
                time.sleep(0.01)
        except BaseException:
            state["stopped"].set()
            raise
        return real(graph, params, lo, hi, **options)

    monkeypatch.setattr(critical, "critical_latencies", slow)
    return state


def _critical_task(at) -> tasks.Task:
    """Run the page until its critical-latency search is under way: the search starts only
    once the prediction and the tolerances it depends on are done (slower on a loaded machine)."""
    for _ in range(10):
        at.run()
        found = [t for t in tasks.running() if t.label == "Finding the critical latencies"]
        if found:
            return found[0]
        for task in tasks.running():
            task.wait(60)
    raise AssertionError(
        f"no critical-latency search started: {[t.label for t in tasks.running()]}"
    )


def test_long_analysis_shows_progress_and_stops_on_cancel(slow_search):
    at = page("latency", settle=False)
    for task in tasks.running():
        task.wait(60)
    at.text_input(key="param_L::latency").set_value("3.1us").run()
    task = _critical_task(at)
    time.sleep(0.5)
    at.run()
    panel = keyed(at, "task-latency-critical")
    text = panel.get("progress")[0].proto.text
    assert text.startswith("Finding the critical latencies: ") and "evaluations in" in text
    assert "%" in text and "left" in text, text
    assert 0 < task.fraction < 1

    at.button(key="task-cancel-latency-critical").click().run()
    assert task.wait(10) and task.state == tasks.CANCELLED
    assert slow_search["stopped"].is_set(), "the search itself stopped, not just the page"
    assert not at.exception
    assert any("cancelled after" in i.value for i in at.info)
    assert at.button(key="task-again-latency-critical")
    # the metrics computed before the search stay on the page
    assert exact_ns(keyed(at, "runtime-L0")) > 0


def test_an_analysis_is_a_job_that_outlives_its_page(slow_search):
    """Leaving the page (or closing the tab) does not stop an analysis: it runs on, the sidebar
    lists it on the other pages, its result is stored, and the page shows it on return."""
    slow_search["steps"] = 300  # 3 s
    at = page("latency", settle=False)
    for task in tasks.running():
        task.wait(60)
    at.text_input(key="param_L::latency").set_value("3.2us").run()
    task = _critical_task(at)
    assert task.job
    at.switch_page("views/runs.py").run()
    assert task.state == tasks.RUNNING and not task.cancelled, "leaving the page keeps the job"
    listed = [c.value for c in at.sidebar.caption]
    assert any("Finding the critical latencies" in c for c in listed), listed
    assert task.wait(60) and task.state == tasks.DONE
    assert not slow_search["stopped"].is_set()
    tasks.restart(task.key)  # forget the task: the page must find the stored result
    calls = slow_search["calls"]
    at.switch_page("views/latency.py").run()
    assert not [t for t in tasks.running() if t.label == "Finding the critical latencies"]
    assert slow_search["calls"] == calls, "stored, not computed again"
    assert not at.exception
    assert len(figures(at)) >= 2, "T(L) and λ_L drawn from the stored search"


def test_work_without_a_hook_is_interrupted_and_unwatched_work_ends(monkeypatch):
    ticks = []

    def busy(task):  # never calls task.report: only the asynchronous interrupt stops it
        while True:
            ticks.append(1)
            time.sleep(0.005)

    task = tasks.start("test|busy", "Busy", busy)
    time.sleep(0.1)
    task.cancel()
    assert task.wait(5) and task.state == tasks.CANCELLED
    seen = len(ticks)
    time.sleep(0.05)
    assert len(ticks) == seen, "the thread stopped"

    monkeypatch.setattr(tasks, "IDLE_S", 0.3)
    orphan = tasks.start(
        "test|orphan", "Orphan", lambda t: [t.report(None) or time.sleep(0.01) for _ in range(3000)]
    )
    assert orphan.wait(10) and orphan.state == tasks.CANCELLED, "nobody watched it"
    tasks.restart("test|busy")
    tasks.restart("test|orphan")


def test_an_interrupt_lost_in_a_finalizer_is_sent_again(monkeypatch):
    """Python prints and drops an exception raised inside ``__del__`` (the failed CI run: the
    interrupt landed in a numba compiler object's finalizer): the reaper sends it again."""
    monkeypatch.setattr(tasks, "INTERRUPT_AGAIN_S", 0.2)
    lost = []

    def swallows_the_first(task):  # no report: only the asynchronous interrupt stops it
        while True:
            try:
                while True:
                    time.sleep(0.005)
            except tasks.Cancelled:
                if lost:
                    raise
                lost.append(1)  # as a finalizer would: printed, ignored, the work goes on

    task = tasks.start("test|lost", "Lost", swallows_the_first)
    time.sleep(0.1)
    task.cancel()
    assert task.wait(10) and task.state == tasks.CANCELLED
    assert lost == [1], "the first interrupt was lost, a later one stopped it"
    tasks.restart("test|lost")


def test_monte_carlo_reports_its_samples_and_stops_at_cancel(graph):
    """The Variability page's work reports the share of samples done after each batch (no
    estimate), and Cancel stops it there: the batches still queued in the pool are dropped
    (all 500,000 samples take ~50 s on Sweep3D here; the cancelled run ends in a moment)."""
    from llamp.lp.registry import ANALYSES, Inputs, MonteCarloSettings

    settings = MonteCarloSettings(
        temporal_cv=0.05, samples=500_000, seed=3, levels=(), runtime_only=True
    )
    task = tasks.start(
        "test|mc",
        "Monte Carlo",
        lambda t: ANALYSES["mc"].run(graph, Inputs(LogGPS(), report=t.report), settings),
        interruptible=False,  # only the report after each batch can stop it
    )
    deadline = time.monotonic() + 60
    while not (task.fraction or 0.0) > 0.0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 0.0 < task.fraction < 0.5 and "sampling 500,000 runs" in task.text
    task.cancel()
    cancelled = time.monotonic()
    assert task.wait(30) and task.state == tasks.CANCELLED
    assert time.monotonic() - cancelled < 10, "the queued batches were not dropped"
    assert task.fraction < 0.5
    tasks.restart("test|mc")


def test_progress_estimates_time_left():
    gate = threading.Event()

    def work(task):
        task.report(0.25, "a quarter")
        gate.wait(5)
        return 42

    task = tasks.start("test|eta", "Estimate", work)
    time.sleep(0.2)
    assert task.fraction == 0.25 and task.left_s == pytest.approx(3 * task.elapsed_s, rel=0.2)
    assert "25%" in tasks.describe(task) and "left" in tasks.describe(task)
    gate.set()
    assert task.wait(5) and task.state == tasks.DONE and task.result == 42
    tasks.restart("test|eta")


def test_results_are_stored_with_the_run_and_reused_after_a_restart(graph, monkeypatch):
    params = LogGPS.parse(L="2.5us")
    at = page("latency")
    at.text_input(key="param_L::latency").set_value("2.5us").run()
    assert_clean(at)
    first = exact_ns(keyed(at, "tolerance-L-1pct"))
    assert first == pytest.approx(tolerance(graph, params).latency[0].value, abs=1e-5)
    with ui_store.connect() as db:
        kinds = {a.kind for a in db.list_analyses(RUN) if a.params.get("L_ns") == 2500.0}
    assert {"predict", "tolerance", "critical"} <= kinds

    stored.forget()  # a restart: nothing in memory, the store keeps its Analysis nodes

    def never(*args, **kw):
        raise AssertionError("recomputed a stored analysis")

    for module, name in (
        ("critical", "critical_latencies"),
        ("tolerance", "tolerance"),
        ("predict", "predict"),
    ):
        monkeypatch.setattr(importlib.import_module(f"llamp.lp.{module}"), name, never)
    at = page("latency")
    at.text_input(key="param_L::latency").set_value("2.5us").run()
    assert_clean(at)
    assert exact_ns(keyed(at, "tolerance-L-1pct")) == first
    crit = critical_latencies(
        graph, params, *latency_range((t.value for t in tolerance(graph, params).latency), 2500.0)
    )
    at.number_input(key="lat_min_jump").set_value(0.0).run()
    assert len(table(at, "critical L")) == len(crit.critical)


def test_display_controls_never_recompute_and_markers_follow_the_threshold(graph, monkeypatch):
    calls = []
    real = critical.critical_latencies

    def counting(*args, **kw):
        calls.append(args[2:4])
        return real(*args, **kw)

    monkeypatch.setattr(critical, "critical_latencies", counting)
    at = page("latency")
    at.text_input(key="param_L::latency").set_value("3.3us").run()
    assert_clean(at)
    assert len(calls) == 1
    params = LogGPS.parse(L="3.3us")
    crit = critical_latencies(
        graph, params, *latency_range((t.value for t in tolerance(graph, params).latency), 3300.0)
    )

    def markers(at):
        fig = figures(at)[0]
        found = [t for t in fig["data"] if t["name"].startswith("critical latencies")]
        return arr(found[0]["x"]) if found else np.array([])

    at.number_input(key="lat_min_jump").set_value(0.0).run()
    assert len(markers(at)) == len(crit.critical)  # every exact breakpoint (ms axis)
    np.testing.assert_allclose(np.sort(markers(at)) * 1e6, crit.critical, rtol=1e-9)
    at.number_input(key="lat_min_jump").set_value(5.0).run()
    ranked = table(at, "critical L")
    assert len(markers(at)) == len(ranked) <= len(crit.critical)
    if hasattr(crit, "significant"):
        assert len(ranked) == len(crit.significant(min_jump=0.05))
    at.toggle(key="lat_show_critical").set_value(False).run()
    assert len(markers(at)) == 0
    at.number_input(key="lat_points").set_value(2000).run()
    at.toggle(key="lat_log").set_value(True).run()
    assert_clean(at)
    assert len(calls) == 1, "display-only controls must not recompute"


def test_url_state_round_trip(graph):
    at = page(None)
    at.query_params.update({"page": "latency", "run": RUN, "L": "7.5us", "o": "1us"})
    at.run()
    assert_clean(at)
    assert at.text_input(key="param_L::latency").value == "7.5us"
    assert at.text_input(key="param_o::latency").value == "1us"
    expected = tolerance(graph, LogGPS.parse(L="7.5us", o="1us"))
    assert exact_ns(keyed(at, "tolerance-L-1pct")) == pytest.approx(
        expected.latency[0].value, abs=1e-5
    )
    at.text_input(key="param_G::latency").set_value("0.02ns/B").run()
    url = dict(at.query_params)
    assert url["page"] == "latency" and url["run"] == RUN
    assert (url["L"], url["o"], url["G"]) == ("7.5us", "1us", "0.02ns/B")
    # the sidebar stays editable: the URL's L is not forced back once it was taken
    at.text_input(key="param_L::latency").set_value("4us").run()
    assert at.text_input(key="param_L::latency").value == "4us"
    assert at.query_params["L"] == "4us"


def _page_links(at) -> list:
    found, stack = [], list(at.main.children.values())
    while stack:
        node = stack.pop(0)
        if getattr(node, "type", None) == "page_link":
            found.append(node)
        stack.extend(getattr(node, "children", {}).values())
    return found


def test_links_open_the_critical_path_at_the_point(graph):
    at = page("latency")
    at.number_input(key="lat_min_jump").set_value(0.0).run()
    link = _page_links(at)[0].proto
    assert "critical_path" in link.page
    assert "page=critical_path" in link.query_string and f"run={RUN}" in link.query_string
    ranked = table(at, "critical L")
    first = ranked["critical L"].iloc[0]
    assert link.label == f"Critical path at L = {first}"

    params = LogGPS()
    ev = evaluate(graph, params)
    at = page(None)
    at.query_params.update({"page": "critical_path", "run": RUN, "focus": "1234"})
    at.run()
    assert_clean(at)
    assert any("Linked op 1,234" in i.value for i in at.info)
    star = [t for t in figures(at)[0]["data"] if t["name"] == "linked op"]
    assert star and arr(star[0]["customdata"]).tolist() == [1234]
    start = ev.start_ns[1234]
    assert parse_duration_ns(at.text_input(key="cp_from").value) <= start * (1 + 1e-5)
    assert parse_duration_ns(at.text_input(key="cp_to").value) >= start * (1 - 1e-5)

    at = page(None)
    at.query_params.update({"page": "critical_path", "run": RUN, "pair": "0,1"})
    at.run()
    assert_clean(at)
    assert any(i.value.startswith("Linked op") for i in at.info) or any(
        "No critical message between ranks 0 and 1" in i.value for i in at.info
    )


def test_exact_curve_is_t_of_l_from_the_segments_even_with_a_budget(graph):
    """T(L) drawn from the segments: exact at every breakpoint; with a spent budget the
    unresolved intervals are chords above T (convexity)."""
    params = LogGPS()
    full = critical_latencies(graph, params, 0.0, 50_000.0)
    curve = exact_curve(full)
    np.testing.assert_allclose(curve["L_ns"].iloc[1:-1], full.critical, rtol=1e-12)
    for seg in full.segments:
        row = curve[curve["L_ns"] == seg.start].iloc[0]
        assert row["runtime_ns"] == seg.runtime_start_ns and row["lambda_L"] == seg.slope
    budgeted = critical_latencies(graph, params, 0.0, 50_000.0, max_evaluations=6)
    assert not budgeted.complete
    chord = exact_curve(budgeted)
    assert (chord["L_ns"].iloc[0], chord["L_ns"].iloc[-1]) == (0.0, 50_000.0)
    exact_T = np.interp(chord["L_ns"], curve["L_ns"], curve["runtime_ns"])
    # its knots are exact; the full curve between them is exact up to the search's tolerance:
    # it takes breakpoints closer than its tangents can tell apart, 10·REL_TOL·T
    # (lp/kernels.py; Sweep3D has pairs 0.1 ns apart under the schedule order), for one
    np.testing.assert_allclose(chord["runtime_ns"], exact_T, rtol=1e-11)
    mid = (chord["L_ns"].to_numpy()[:-1] + chord["L_ns"].to_numpy()[1:]) / 2
    above = np.interp(mid, chord["L_ns"], chord["runtime_ns"]) >= np.interp(
        mid, curve["L_ns"], curve["runtime_ns"]
    ) * (1 - 1e-12)
    assert above.all()


def test_the_critical_latency_search_reports_and_stops_from_its_progress_hook(graph):
    """The hook the Latency page's progress bar and Cancel use (``critical_latencies(progress=)``
    of lp/critical.py, called after each wave): the registry's search reports it to the task,
    and raising Cancelled from it stops the search."""
    seen: list[tuple] = []
    crit = critical_latencies(graph, LogGPS(), 0.0, 50_000.0, progress=lambda *a: seen.append(a))
    assert seen and crit.complete

    class Recorder:
        fraction = None
        text = ""

        def report(self, fraction=None, text=None):
            self.fraction, self.text = fraction, text

    task = Recorder()
    found = critical_search(graph, LogGPS(), 0.0, 50_000.0, report=task.report)
    assert found.critical == crit.critical
    assert task.text and "evaluations" in task.text

    def stop(*args) -> None:
        raise tasks.Cancelled("test")

    with pytest.raises(tasks.Cancelled):
        critical_latencies(graph, LogGPS(), 0.0, 50_000.0, progress=stop)


def test_a_heatmap_pair_and_a_placement_swap_link_to_the_timeline(graph):
    """Sensitivity matrices: the pair picked (or clicked) links to ``?pair=i,j``; an accepted
    placement swap of ranks a, b links to ``?pair=a,b``; the critical-path page opens on the
    first critical message between them."""
    from llamp.lp import critical_path

    at = page("matrices")
    assert_clean(at)
    pair = at.selectbox(key="mx_open_pair").value
    link = _page_links(at)[0].proto
    assert f"pair={pair[0]}%2C{pair[1]}" in link.query_string or (
        f"pair={pair[0]},{pair[1]}" in link.query_string
    )
    assert "page=critical_path" in link.query_string

    at = page(None)
    at.query_params.update({"page": "critical_path", "run": RUN, "pair": f"{pair[0]},{pair[1]}"})
    at.run()
    assert_clean(at)
    cp = critical_path(graph, LogGPS())
    s, r = cp.messages[:, 0], cp.messages[:, 1]
    a, b = pair
    hit = [
        int(v)
        for v, x, y in zip(s, graph.rank[s], graph.rank[r], strict=True)
        if {int(x), int(y)} == {a, b}
    ]
    assert any(f"Linked op {hit[0]:,}:" in i.value for i in at.info)

    at = page("placement")
    at.number_input(key="place_nodes").set_value(4).run()
    at.selectbox(key="place_start").set_value("round-robin").run()
    at.button(key="place_run").click().run()
    assert_clean(at)
    swap = at.selectbox(key="place_open_swap")
    links = [p.proto for p in _page_links(at)]
    assert links and "page=critical_path" in links[0].query_string
    assert "pair=" in links[0].query_string and swap.value is not None


def test_the_latency_page_shows_the_tolerances_under_the_networks_own_order(graph):
    """Under the schedule order (the default) the page also gives each tolerance where the
    schedule pass, re-run at each value, reaches the bound (llamp.lp.order_check), stored with
    the run like the other analyses."""
    from llamp.lp.order_check import check_tolerance

    params = LogGPS.parse(L="2.5us")
    at = page("latency")
    at.text_input(key="param_L::latency").set_value("2.5us").run()
    assert_clean(at)
    shown = table(at, "max L (own order)")
    walks = check_tolerance(graph, params, tolerance(graph, params))
    assert list(shown["max L (order fixed)"]) == [display.duration(w.fixed) for w in walks["L"]]
    expected = [display.duration(w.value) + ("" if w.exact else " ↑") for w in walks["L"]]
    assert list(shown["max L (own order)"]) == expected
    with ui_store.connect() as db:
        kinds = {a.kind for a in db.list_analyses(RUN) if a.params.get("L_ns") == 2500.0}
    assert "ui_own_tolerance" in kinds
