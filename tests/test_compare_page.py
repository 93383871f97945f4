"""The Compare runs page and the sidebar's network-profile picker, under Streamlit's AppTest,
on a store holding Sweep3D (4 ranks) and the bcast loop (4 ranks, 15 messages): what the page
shows is what :func:`llamp.lp.compare.compare_runs` computes for the same runs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from apptest_pages import SWEEP3D, arr, assert_clean, exact_ns, figures, keyed, page, table
from store_graphs import stored_home

from llamp.ingest import read
from llamp.lp.compare import compare_runs
from llamp.lp.critical import critical_latencies
from llamp.lp.tolerance import latency_range
from llamp.params import LogGPS
from llamp.ui import plots

BCAST = SWEEP3D.parent / "bcast-synthetic"
#: What the sidebar's default inputs parse to.
SIDEBAR = LogGPS.parse(L="3us", o="1.5us", G="0.018ns/B", S="256KiB", g="0ns")


@pytest.fixture(scope="module")
def home(tmp_path_factory, sweep3d, ui_store) -> Iterator[Path]:
    """A LLAMP_HOME whose store holds ``bcast`` and ``sweep3d``, and one network profile."""
    from llamp.injector.profiles import save_profile

    with stored_home(
        tmp_path_factory, {"sweep3d": sweep3d, "bcast": read(BCAST)}, ui_store
    ) as path:
        save_profile(
            "ib-hdr",
            LogGPS(L=1234.5, o=321.0, G=0.04, S=65536, g=7.0),
            source="llamp calibrate -- mpirun -n 2",
        )
        yield path


@pytest.fixture(scope="module")
def expected(sweep3d):
    return compare_runs([read(BCAST), sweep3d], SIDEBAR, names=["bcast", "sweep3d"])


def test_compare_page_shows_the_comparison(store_env, expected, sweep3d):
    at = page("compare")
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.multiselect(key="cmp_runs").value == ["bcast", "sweep3d"]  # sidebar run first
    summary = keyed(at, "cmp-summary").markdown
    literal = [re.sub(r"([\\`*_{}\[\]()<>#+!|~$-])", r"\\\1", x) for x in expected.summary()]
    assert [m.value for m in summary] == [f"- {line}" for line in literal]
    assert "\\_" in summary[0].value  # λ_L's underscore is escaped, not an emphasis
    for i, run in enumerate(expected.runs):
        assert exact_ns(keyed(at, f"cmp-runtime-{i}")) == pytest.approx(run.runtime_ns, rel=1e-12)
    tol = table(at, "L tolerance")
    assert list(tol["L tolerance"]) == [
        plots.short_ns(v, 6) for v in expected.tolerances()["latency_ns"]
    ]
    assert list(tol["G tolerance"]) == [
        f"{g:.6g} ns/B" for g in expected.tolerances()["G_ns_per_byte"]
    ]
    # a log L axis at first iff some run's critical latencies all lie in the first tenth of its
    # range (the program order: sweep3d's at 0.5–23 µs on a range to 18 ms; the default
    # schedule order's reach 3 ms on a range to 13 ms, bcast's decide)
    graphs = {"bcast": read(BCAST), "sweep3d": sweep3d}
    squeezed = False
    for run in expected.runs:
        lo, hi = latency_range((t.value for t in run.tolerance.latency), SIDEBAR.L)
        crit = critical_latencies(graphs[run.name], SIDEBAR, lo, hi).critical
        squeezed |= bool(crit) and max(crit) < 0.1 * hi
    assert at.toggle(key="cmp_log_x").value is squeezed
    if not squeezed:
        at.toggle(key="cmp_log_x").set_value(True).run()
    log_fig = figures(at)[0]
    assert all(log_fig["layout"][k]["type"] == "log" for k in ("xaxis", "xaxis2"))
    at.toggle(key="cmp_log_x").set_value(False).run()
    figs = figures(at)
    assert len(figs) == 3
    t_fig, lambda_fig, comp_fig = figs
    assert [tr["name"] for tr in lambda_fig["data"] if "critical" not in tr["name"]] == [
        "bcast",
        "sweep3d",
    ]
    # Each run's curve is its exact T(L) over its own range (one panel each): it passes
    # through every critical latency at the exact T there, and is 0 at L0 (slowdown mode).
    for run in expected.runs:
        lo, hi = latency_range((t.value for t in run.tolerance.latency), SIDEBAR.L)
        crit = critical_latencies(graphs[run.name], SIDEBAR, lo, hi)
        assert crit.complete
        trace = next(tr for tr in t_fig["data"] if tr["name"] == run.name)
        axis = t_fig["layout"]["xaxis" + trace.get("xaxis", "x")[1:]]
        unit = axis["title"]["text"].rsplit("(", 1)[1].rstrip(")")
        scale = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}[unit]
        assert axis["range"] == pytest.approx([0.0, hi / scale])
        x, y = arr(trace["x"]) * scale, arr(trace["y"])
        points = [*crit.critical, SIDEBAR.L, hi]
        expected_T = crit.runtime_at(points)
        for L, T in zip(points, expected_T, strict=True):
            at_L = np.flatnonzero(np.isclose(x, L, rtol=1e-12, atol=0))
            assert at_L.size, (run.name, L)
            assert y[at_L[0]] == pytest.approx((T / run.runtime_ns - 1) * 100, rel=1e-9, abs=1e-9)
        assert y[np.isclose(x, SIDEBAR.L, rtol=1e-12)] == pytest.approx([0.0], abs=1e-9)
        lam = next(tr for tr in lambda_fig["data"] if tr["name"] == run.name)
        lx, ly = arr(lam["x"]) * scale, arr(lam["y"])
        # the figure's x is in its axis unit: × scale may land an ulp below a critical latency
        on = lx[np.isin(lx, x)]
        snapped = [next((c for c in crit.critical if np.isclose(v, c, rtol=1e-12)), v) for v in on]
        assert list(ly[np.isin(lx, x)]) == list(crit.slope_at(np.array(snapped)))
    shares = {tr["name"]: list(arr(tr["x"])) for tr in comp_fig["data"]}
    assert shares["compute"] == pytest.approx(
        [100 * r.path_share("compute") for r in expected.runs]
    )

    at.radio(key="cmp_mode").set_value("T(L)").run()
    t_fig = figures(at)[0]
    assert t_fig["layout"]["yaxis"]["title"]["text"].startswith("T (")
    at.multiselect(key="cmp_runs").set_value(["bcast"]).run()
    assert any("at least two runs" in i.value for i in at.info)


def test_compare_page_reports_bad_inputs_readably(store_env):
    at = page("compare")
    at.text_input(key="cmp_levels").set_value("one,two").run()
    assert not at.exception
    assert any("tolerance levels" in e.value for e in at.error)


def test_profile_picker_fills_the_parameters(store_env):
    at = page("latency")
    box = at.sidebar.selectbox(key="network::latency")
    assert box.options == ["— none: type L, o, G, S —", "ib-hdr"]
    box.set_value("ib-hdr").run()
    assert not at.exception
    values = {k: at.sidebar.text_input(key=f"{k}::latency").value for k in ("param_L", "param_o")}
    assert values == {"param_L": "1234.5ns", "param_o": "321.0ns"}
    assert at.sidebar.text_input(key="param_G::latency").value == "0.04ns/B"
    assert at.sidebar.text_input(key="param_S::latency").value == "65536"
    assert at.sidebar.text_input(key="param_g::latency").value == "7.0ns"
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "L = 1.2345 µs · o = 321 ns" in captions  # what the analyses run with
    # The choice carries over to the next page, and the inputs stay editable.
    at.switch_page("views/compare.py").run()
    assert at.sidebar.text_input(key="param_L::compare").value == "1234.5ns"
    assert at.sidebar.selectbox(key="network::compare").value == "ib-hdr"
    assert "ib-hdr: L = 1.2345 µs" in " ".join(c.value for c in at.sidebar.caption)
    at.sidebar.text_input(key="param_L::compare").set_value("2us").run()
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "L = 2 µs" in captions and "ib-hdr (edited below)" in captions


def test_comparison_download_is_self_contained_html(store_env, expected):
    from llamp.lp.html_report import render_comparison

    page_html = render_comparison(expected)
    assert "http" not in page_html and json.dumps(expected.summary()[0])[1:10] in page_html


def test_critical_path_page_offers_the_exports(store_env, sweep3d):
    at = page("critical_path")
    assert not at.exception, [e.value for e in at.exception]
    buttons = {b.proto.label: b for b in at.get("download_button")}
    assert {"Perfetto trace (JSON)", "Report (HTML)"} <= buttons.keys()
    assert at.checkbox(key="cp-export-critical-only").value is False  # 24,084 vertices: whole


def test_export_downloads_build_the_files(sweep3d):
    from llamp.ui import exports

    trace = json.loads(exports._timeline(sweep3d, SIDEBAR, True)())
    assert {e["cat"] for e in trace["traceEvents"] if e["ph"] == "X"} == {"critical"}
    html = exports._report(sweep3d, SIDEBAR)()
    assert html.startswith("<!DOCTYPE html>") and "http" not in html
    assert "sweep3d-2x2" in html


@pytest.fixture
def slow_sweep3d(monkeypatch):
    """``run_figures`` that takes up to a minute for ``sweep3d`` (the real one for the others):
    a comparison to watch, cancel and leave. Records the runs it was called for."""
    import threading
    import time

    from llamp.lp import compare

    state = {"calls": [], "stopped": threading.Event()}
    real = compare.run_figures

    def slow(graph, params, levels, *, name=None):
        state["calls"].append(name)
        if name == "sweep3d":
            try:
                for _ in range(6000):
                    time.sleep(0.01)
            except BaseException:
                state["stopped"].set()
                raise
        return real(graph, params, levels, name=name)

    monkeypatch.setattr(compare, "run_figures", slow)
    return state


def _comparing():
    from llamp.ui import tasks

    found = [t for t in tasks.running() if t.label == "Comparing 2 runs"]
    assert found, [t.label for t in tasks.running()]
    return found[0]


def test_comparison_runs_in_the_background_and_stops_on_cancel(store_env, slow_sweep3d):
    import time

    from llamp.ui import stored, tasks

    at = page("compare", settle=False)
    for task in tasks.running():
        task.wait(60)
    at.sidebar.text_input(key="param_L::compare").set_value("3.3us").run()  # nothing kept
    task = _comparing()
    deadline = time.monotonic() + 60
    while not (task.fraction or 0) > 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # bcast is done, sweep3d under way
    at.run()
    text = keyed(at, "task-compare").get("progress")[0].proto.text
    assert text.startswith("Comparing 2 runs: analysing sweep3d (2/2)"), text
    assert "%" in text and "left" in text, text

    at.button(key="task-cancel-compare").click().run()
    assert task.wait(10) and task.state == tasks.CANCELLED
    assert slow_sweep3d["stopped"].is_set(), "the analysis itself stopped, not just the page"
    assert not at.exception
    assert any("cancelled after" in i.value for i in at.info)
    params = LogGPS.parse(L="3.3us")
    kept = {
        f.name
        for (_, kind, _), f in stored._MEMO.items()
        if kind == "ui_run_figures" and f.prediction.params == params
    }
    assert kept == {"bcast"}, "the run finished before Cancel is kept"

    # Run again: only sweep3d is analysed; leaving the page does not stop it (a job).
    at.button(key="task-again-compare").click().run()
    again = _comparing()
    assert again is not task and again.job
    deadline = time.monotonic() + 10
    while slow_sweep3d["calls"].count("sweep3d") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert slow_sweep3d["calls"] == ["bcast", "sweep3d", "sweep3d"]
    slow_sweep3d["stopped"].clear()
    at.switch_page("views/runs.py").run()
    time.sleep(0.5)
    assert again.state == tasks.RUNNING and not again.cancelled
    assert not slow_sweep3d["stopped"].is_set()
    again.cancel()  # not to wait the minute out
    assert again.wait(10) and again.state == tasks.CANCELLED


def test_only_missing_runs_are_computed_and_display_controls_redraw(store_env, monkeypatch):
    from llamp.lp import compare, registry

    calls = []
    for owner, fn in ((compare, "run_figures"), (registry, "critical_search")):
        real = getattr(owner, fn)

        def counted(graph, *args, _real=real, _fn=fn, **kwargs):
            calls.append((_fn, kwargs.get("name")))
            return _real(graph, *args, **kwargs)

        monkeypatch.setattr(owner, fn, counted)
    at = page("compare")
    at.sidebar.text_input(key="param_L::compare").set_value("3.4us").run()
    at.text_input(key="cmp_hi").set_value("20us").run()
    at.toggle(key="cmp_log_x").set_value(False).run()
    assert_clean(at)
    assert {c for c in calls if c[0] == "run_figures"} == {
        ("run_figures", "bcast"),
        ("run_figures", "sweep3d"),
    }
    assert len([c for c in calls if c[0] == "critical_search"]) == 4  # auto range, then 20 µs
    first = figures(at)[1]
    assert all(
        tr["x"] and max(arr(tr["x"])) == pytest.approx(20.0) for tr in first["data"][:1]
    )  # every run over [0, 20 µs]
    calls.clear()
    at.radio(key="cmp_mode").set_value("T(L)").run()  # display only
    at.radio(key="cmp_axis").set_value("one axis for all runs").run()
    at.toggle(key="cmp_log_x").set_value(True).run()
    assert_clean(at)
    assert calls == []
    # sweep3d as if never compared: putting it first computes it alone
    from llamp.ui import store_access, stored

    stored.forget()  # nothing kept in this process, and sweep3d not stored with the run
    with store_access.connect(write=True) as db:
        for a in db.list_analyses("sweep3d"):
            if a.kind in ("ui_run_figures", "critical") and a.params["L_ns"] == 3400.0:
                db.delete_analysis(a.id)
    at.multiselect(key="cmp_runs").set_value(["sweep3d", "bcast"]).run()
    assert_clean(at)
    assert calls == [("run_figures", "sweep3d"), ("critical_search", None)]
    at.radio(key="cmp_axis").set_value("each run on its own range").run()
    at.toggle(key="cmp_log_x").set_value(False).run()
    at.radio(key="cmp_mode").set_value("Slowdown T(L)/T(L0) − 1").run()
    again = {tr["name"]: list(arr(tr["y"])) for tr in figures(at)[1]["data"]}
    assert again == {tr["name"]: list(arr(tr["y"])) for tr in first["data"]}


def test_latency_page_offers_the_report(store_env):
    at = page("latency")
    assert_clean(at)
    buttons = {b.proto.label for b in at.get("download_button")}
    assert "Report (HTML)" in buttons


def test_latency_report_reads_T_off_the_exact_segments(store_env, sweep3d):
    from llamp.lp import critical_latencies, predict, sweep, tolerance
    from llamp.lp.critical import exact_curve
    from llamp.ui import exports, store_access

    # the program order: the default schedule order's T(L) has breakpoint pairs 0.1 ns apart
    # that the search takes for one (test_sweep3d.py), and 8 µs, a sampled L, lies in one
    params = LogGPS.parse(base=SIDEBAR, order="program")
    crit = critical_latencies(sweep3d, params, 0.0, 20_000.0)
    assert crit.complete
    curve = exact_curve(crit)
    table = exports.sampled(curve, crit.lo, crit.hi)
    swept = sweep(sweep3d, params, table["L_ns"].to_numpy(), engine="graph")
    assert list(table["runtime_ns"]) == pytest.approx(list(swept["runtime_ns"]), rel=1e-9)
    assert list(table["lambda_L"]) == list(swept["lambda_L"])
    token = store_access.run_token(store_access.list_runs(), "sweep3d")
    build = exports._latency_report(
        "sweep3d",
        token,
        params,
        predict(sweep3d, params),
        tolerance(sweep3d, params),
        crit,
        curve,
    )
    html = build()
    assert html.startswith("<!DOCTYPE html>") and "http" not in html
    assert "llamp report: sweep3d" in html
    assert f"{len(crit.critical):,} critical latencies" in html


def test_a_link_holds_its_run_and_parameters_on_every_page(store_env):
    """``/?run=sweep3d&L=…`` (not the store's first run) and then Latency, Critical path and
    Compare from the menu: every page opens on sweep3d with the link's L, shown normalised,
    the URL keeps them, and the sidebar names no path of the server."""
    from apptest_pages import TIMEOUT, SettledAppTest

    from llamp.ui import APP_PATH
    from llamp.ui.controls import normalised

    at = SettledAppTest(APP_PATH, default_timeout=TIMEOUT)
    at.query_params["run"] = "sweep3d"
    at.query_params["L"] = "4999.909997161899ns"
    at.run()
    assert_clean(at)
    shown_L = normalised("L", "4999.909997161899ns")
    assert shown_L == "4.99991us"
    for view in ("latency", "critical_path", "compare"):
        at.query_params.clear()  # a click in the menu opens the page's bare URL
        at.switch_page(f"views/{view}.py").run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.sidebar.selectbox(key=f"run::{view}").value == "sweep3d", view
        assert at.sidebar.text_input(key=f"param_L::{view}").value == shown_L, view
        url = at.query_params
        assert (url["run"], url["page"], url["L"]) == ("sweep3d", view, shown_L), dict(url)
        sidebar = " ".join(c.value for c in at.sidebar.caption)
        assert str(store_env) not in sidebar and "/" not in sidebar.split("Store: ")[1][:40]
    assert at.multiselect(key="cmp_runs").value[0] == "sweep3d"


def test_the_latency_page_reuses_the_comparisons_search(store_env, monkeypatch):
    """A run compared has its critical latencies searched over the Latency page's automatic
    range and stored under that page's key: the Latency page then searches nothing."""
    from llamp.lp import registry

    at = page("compare")
    at.sidebar.text_input(key="param_L::compare").set_value("3.7us").run()  # a key no one holds
    assert_clean(at)

    def never(*args, **kwargs):
        raise AssertionError("the Latency page searched again")

    monkeypatch.setattr(registry, "critical_search", never)
    at.switch_page("views/latency.py").run()
    assert_clean(at)
    assert [t["name"] for t in figures(at)[0]["data"]][0] == "predicted T(L)"
    assert any("exact critical latencies in [" in c.value for c in at.caption)
