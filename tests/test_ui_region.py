"""The Design space page under AppTest: the exact joint L–G tolerance regions of the
Sweep3D trace drawn over a heat map of T, with designs marked, equal to the Python API.

The store is a temporary embedded store (``LLAMP_HOME``) holding Sweep3D as run ``sweep3d``.
"""

from __future__ import annotations

import numpy as np
import pytest
from apptest_pages import RUN, SWEEP3D, arr, assert_clean, exact_ns, figures, keyed, page, table
from store_graphs import stored_home

from llamp.config import format_ns
from llamp.ingest import read
from llamp.lp import engine_for
from llamp.lp.region import tolerance_region
from llamp.params import LogGPS


@pytest.fixture(scope="module")
def graph():
    return read(SWEEP3D)


@pytest.fixture(scope="module")
def home(tmp_path_factory, graph, ui_store):
    with stored_home(tmp_path_factory, {RUN: graph}, ui_store) as path:
        yield path


def test_design_space_page_shows_the_api_regions(store_env, graph):
    params = LogGPS()
    region = tolerance_region(graph, params, levels=[0.01, 0.02, 0.05], axes=("L", "G"))
    at = page("region")
    assert_clean(at)
    assert at.title[0].value == "Network design space"
    assert exact_ns(keyed(at, "region-T0")) == pytest.approx(region.baseline_ns, abs=1e-5)
    for level in region.levels:
        block = keyed(at, f"region-{level.x * 100:g}pct")
        assert block.metric[0].value == f"{level.u.size} vertices"
        assert block.caption[0].value.startswith(f"T ≤ {format_ns(level.bound_ns)}")

    shown = table(at, "L_ns")
    for level in region.levels:
        rows = shown[shown["x_percent"] == level.x * 100]
        np.testing.assert_allclose(rows["L_ns"], level.u, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(rows["G_ns_per_byte"], level.v, rtol=1e-12, atol=1e-15)
        on = rows["on_bound"].to_numpy()
        np.testing.assert_allclose(rows["runtime_ns"][on], level.bound_ns, rtol=1e-9)

    (fig,) = figures(at)
    heat = fig["data"][0]
    assert heat["type"] == "heatmap"
    # The heat map is T over the box: check one cell against a direct evaluation.
    x, y = arr(heat["x"]), arr(heat["y"])
    z = arr(heat["z"]).reshape(y.size, x.size)
    T = engine_for(graph).runtime(params.with_(L=float(x[7]) * 1e3, G=float(y[5])))
    assert z[5][7] == pytest.approx((T / region.baseline_ns - 1) * 100, rel=1e-9, abs=1e-9)
    polygons = [t for t in fig["data"] if t.get("fill") == "toself"]
    assert [t["name"] for t in polygons] == [
        "T ≤ (1 + 5%)·T0",
        "T ≤ (1 + 2%)·T0",
        "T ≤ (1 + 1%)·T0",
    ]  # largest first, so the smaller ones are drawn on top
    assert any(t["name"] == "baseline" for t in fig["data"])
    names = [t["name"] for t in fig["data"]]
    assert "designs inside" in names or "designs outside" in names

    designs = table(at, "design")
    assert {"1GbE", "HDR", "NDR"} <= set(designs["design"])
    hdr = designs[designs["design"] == "HDR"].iloc[0]
    T_hdr = engine_for(graph).runtime(params.with_(L=1000.0, G=8.0 / 200.0))
    assert hdr["runtime_ns"] == pytest.approx(T_hdr, rel=1e-12)
    assert bool(hdr["inside_5pct"]) == (T_hdr <= region.levels[-1].bound_ns)


def test_design_space_user_designs_and_axes(store_env, graph):
    at = page("region")
    at.selectbox(key="region_axes").set_value("L and o")
    at.checkbox(key="region_nets").uncheck()
    at.text_area(key="region_designs").input("lean = 2us, 1us\nbusy = 40us, 3us")
    at.run()
    assert_clean(at)
    designs = table(at, "design")
    assert list(designs["design"]) == ["lean", "busy"]
    params = LogGPS()
    T = engine_for(graph).runtime(params.with_(L=2000.0, o=1000.0))
    assert designs.iloc[0]["runtime_ns"] == pytest.approx(T, rel=1e-12)
    assert "o_ns" in table(at, "L_ns").columns


def test_design_space_box_around_the_designs(store_env, graph):
    at = page("region")
    at.checkbox(key="region_profiles").uncheck()
    at.checkbox(key="region_fit").check()
    at.run()
    assert_clean(at)
    (fig,) = figures(at)
    # 1GbE has the largest L (50 µs) and G (8 ns/B) of the built-in networks.
    assert fig["layout"]["xaxis"]["range"] == pytest.approx([0.0, 1.25 * 50.0])  # µs
    assert fig["layout"]["yaxis"]["range"] == pytest.approx([0.0, 1.25 * 8.0])
    region = tolerance_region(graph, LogGPS(), axes=("L", "G"), box={"L": 62_500.0, "G": 10.0})
    shown = table(at, "L_ns")
    rows = shown[shown["x_percent"] == 5]
    np.testing.assert_allclose(rows["L_ns"], region.levels[-1].u, rtol=1e-12, atol=1e-9)


def test_design_space_bad_design_is_a_readable_error(store_env):
    at = page("region")
    at.text_area(key="region_designs").input("broken = 2us")
    at.run()
    assert not at.exception
    assert "is not NAME = L, G" in at.error[0].value


def test_the_preview_figure_draws_the_grid_and_one_contour_per_level():
    """While the exact polygons are computed the page shows T over the same box, with the
    grid's crossing of each tolerance level dotted (slowdown in % as the exact figure)."""
    from llamp.lp.region import region_preview
    from llamp.ui import plots

    graph = read(SWEEP3D)
    preview = region_preview(graph, LogGPS(), levels=[0.01, 0.05], cells=5)
    fig = plots.region_preview_figure(preview)
    heat, *contours, star = fig.data
    assert heat.type == "heatmap" and star.name == "baseline"
    assert np.allclose(np.asarray(heat.z), (preview.runtime_ns / preview.baseline_ns - 1) * 100)
    assert [(c.type, c.contours.start, c.contours.end) for c in contours] == [
        ("contour", 1.0, 1.0),
        ("contour", 5.0, 5.0),
    ]


def test_the_region_jobs_report_their_fraction_and_share_the_grid(graph):
    """The page's two jobs: ``T`` over the box reports the share of grid points done, the
    exact polygons the share of the boundaries final (to 1), and draw over the same grid."""
    from llamp.ui import page_work

    key = page_work.param_key(LogGPS())
    levels = (0.01, 0.05)
    grid: list[tuple[float | None, str]] = []
    exact: list[tuple[float | None, str]] = []
    preview = page_work.region_preview_map(
        graph, key, ("L", "G"), levels, (), 10, lambda f, t: grid.append((f, t))
    )
    rmap = page_work.region_map(
        graph, key, ("L", "G"), levels, (), preview, lambda f, t: exact.append((f, t))
    )
    assert grid[-1] == (1.0, "T on the grid")
    shares = [f for f, _ in exact if f is not None]
    assert shares and shares[-1] == pytest.approx(1.0, abs=1e-9)
    assert exact[-1][1] == f"{rmap.region.evaluations:,} evaluations"
    assert rmap.runtime_ns is preview.runtime_ns
    assert rmap.region.box == preview.box
    assert preview.expected_evaluations > 0 and preview.seconds_per_evaluation > 0


def test_a_long_region_is_estimated_up_front_and_offers_the_largest_level(store_env, monkeypatch):
    """Above a minute expected, the page states the estimate before starting and computes
    only on the button; the largest level alone gives that level's exact polygon only."""
    from llamp.lp.region import RegionPreview

    monkeypatch.setattr(
        RegionPreview, "expected_s", lambda self, levels=None: 600.0 if levels is None else 300.0
    )
    at = page("region")
    at.text_input(key="region_levels").input("1, 3")
    at.run()
    assert_clean(at)
    (note,) = keyed(at, "region-estimate").info
    assert "expected to take about 600 s" in note.value
    assert "largest level alone takes about 300 s" in note.value
    assert not [m for m in at.metric if m.label.endswith("% region")]  # not started
    at.radio(key="region_exact").set_value("largest level only")
    at.button(key="region_start").click()
    at.run()
    assert_clean(at)
    assert keyed(at, "region-3pct").metric[0].value.endswith("vertices")
    shown = table(at, "L_ns")
    assert set(shown["x_percent"]) == {3.0}
