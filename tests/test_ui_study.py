"""The Studies page under AppTest: the study's matrix shows the stored cells' numbers, filters
and sorting work, and opening a cell carries its run and parameters to the Latency page."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from apptest_pages import SettledAppTest
from streamlit.testing.v1 import AppTest

from llamp.study import load_spec, run_study
from llamp.ui import APP_PATH

DATA = Path(__file__).parent / "data" / "traces"
TIMEOUT = 120


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A LLAMP_HOME whose store holds study ``ui-study``: two runs × two networks."""
    path = tmp_path_factory.mktemp("llamp-home")
    spec = path / "spec.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        study: ui-study
        runs:
          - {{name: dumpi, path: {DATA / "dumpi" / "sst-dumpi-4ranks"}}}
          - {{name: sweep3d, path: {DATA / "liballprof" / "sweep3d-2x2"}}}
        networks:
          - {{name: eth, L: 5us, G: 10Gb/s}}
          - {{name: hdr, L: 1us, G: 200Gb/s}}
        analyses: [predict, {{tolerance: {{x: [1]}}}}]
        """)
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLAMP_HOME", str(path))
        mp.delenv("LLAMP_STORE", raising=False)
        report = run_study(load_spec(spec), serial=True)
        yield path, report.table


@pytest.fixture
def env(home, monkeypatch):
    monkeypatch.setenv("LLAMP_HOME", str(home[0]))
    monkeypatch.delenv("LLAMP_STORE", raising=False)
    return home[1]


def study_page() -> AppTest:
    at = SettledAppTest(APP_PATH, default_timeout=TIMEOUT)
    at.run()
    at.switch_page("views/study.py")
    at.run()
    return at


def test_the_matrix_holds_the_stored_cells(env):
    at = study_page()
    assert not at.exception and not at.error
    assert at.selectbox(key="study_name").options == ["ui-study"]
    assert at.selectbox(key="study_analysis").value == "predict"
    assert at.selectbox(key="study_metric").value == "runtime_ns"
    matrix = at.dataframe[1].value
    assert list(matrix.index) == ["dumpi", "sweep3d"] and list(matrix.columns) == ["eth", "hdr"]
    table = env[env["analysis"] == "predict"].set_index(["run", "network"])
    for run in matrix.index:
        for net in matrix.columns:
            assert matrix.loc[run, net] == table.loc[(run, net), "runtime_ns"]
    at.selectbox(key="study_analysis").set_value("tolerance").run()
    assert at.selectbox(key="study_metric").value == "baseline_ns"
    at.selectbox(key="study_metric").set_value("tolerance_1pct_L_ns").run()
    matrix = at.dataframe[1].value
    tol = env[env["analysis"] == "tolerance"].set_index(["run", "network"])
    assert matrix.loc["sweep3d", "hdr"] == tol.loc[("sweep3d", "hdr"), "tolerance_1pct_L_ns"]


def test_filter_and_sort(env):
    at = study_page()
    at.multiselect(key="study_networks").set_value(["hdr"]).run()
    assert list(at.dataframe[1].value.columns) == ["hdr"]
    at.selectbox(key="study_sort").set_value("max runtime_ns").run()
    values = at.dataframe[1].value["hdr"].to_numpy()
    assert np.all(np.diff(values) >= 0)


def test_opening_a_cell_carries_run_and_parameters_to_the_latency_page(env):
    at = study_page()
    labels = at.selectbox(key="study_cell").options
    assert "sweep3d on hdr" in labels
    at.selectbox(key="study_cell").set_value("sweep3d on hdr").run()
    at.button(key="study_open").click().run()
    assert not at.exception
    assert at.session_state["_keep_run"] == "sweep3d"
    assert at.session_state["_keep_param_L"] == "1us"  # normalised as the sidebar shows it
    assert at.session_state["_keep_param_G"] == "0.04ns/B"
    assert at.title[0].value == "Latency sensitivity and tolerance"
    assert any("Run **sweep3d**" in c.value and "L = 1 µs" in c.value for c in at.caption)


def test_a_click_on_the_heatmap_picks_that_cell(env):
    at = study_page()
    first = at.selectbox(key="study_cell").value
    target = next(c for c in ("sweep3d on hdr", "dumpi on eth") if c != first)
    run, net = target.split(" on ")
    at.session_state["study_heatmap"] = {
        "selection": {
            "points": [{"x": net, "y": run}],
            "point_indices": [0],
            "box": [],
            "lasso": [],
        }
    }
    at.run()
    assert not at.exception
    assert at.selectbox(key="study_cell").value == target


def test_a_study_written_while_the_page_is_open_shows_at_the_next_interaction(env):
    """The page reads the stored cells on every run, no cache: a study that ``llamp study``
    stores meanwhile is listed at once, with its cells."""
    from llamp.graphdb.studies import write_cell
    from llamp.ui import store_access

    at = study_page()
    assert at.selectbox(key="study_name").options == ["ui-study"]
    with store_access.connect(write=True) as db:
        cell = next(a for a in db.list_analyses() if a.params.get("study") == "ui-study")
        labels = {k: cell.params[k] for k in ("cell", "run", "network", "analysis")}
        added = write_cell(
            db, labels["run"], labels | {"study": "zz-later"}, cell.params, {"runtime_ns": 1234.0}
        )
    try:
        at.run()
        assert not at.exception
        assert at.selectbox(key="study_name").options == ["ui-study", "zz-later"]
        at.selectbox(key="study_name").set_value("zz-later").run()
        assert not at.exception
        assert at.selectbox(key="study_cell").options == [f"{labels['run']} on {labels['network']}"]
    finally:
        with store_access.connect(write=True) as db:
            db.delete_analysis(added)
    at.run()
    assert at.selectbox(key="study_name").options == ["ui-study"]
