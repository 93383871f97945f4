"""The Validation page under Streamlit's AppTest (docs/architecture.md §UI): with a stored ``validation``
analysis it shows RRMSE, T(L0) and the load as metrics, the measured-vs-predicted plot (error
bars, every run, the prediction), the table with the stored numbers and a CSV download; with
none it says how to make one. The store is a temporary embedded store holding the Sweep3D
trace as run ``sweep3d``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from llamp.config import format_ns
from llamp.ingest import read
from llamp.injector.validate import Validation, ValidationPoint, store_validation
from llamp.params import LogGPS

PAGE = Path(__file__).parents[1] / "ui" / "views" / "validation.py"
SWEEP3D = Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2"
TIMEOUT = 120

RESULT = Validation(
    run="sweep3d",
    command=("mpirun", "-n", "4", "./sweep3d"),
    params=LogGPS(L=400.0, o=150.0, G=0.2, S=4096),
    points=(
        ValidationPoint(0.0, 2.00e6, 40.0, (2.10e6, 1.90e6, 2.00e6)),
        ValidationPoint(1e4, 2.40e6, 40.0, (2.35e6, 2.45e6, 2.43e6)),
        ValidationPoint(5e4, 4.00e6, 40.0, (4.20e6, 4.10e6, 4.00e6)),
    ),
    repeat=3,
    traced_runtime_ns=2.05e6,
    mpi="Open MPI 4.1.4",
    load={"other_load_cores_mean": 0.12, "other_load_cores_max": 0.2, "runs": 9.0},
    notes=("injector at ΔL = 0 vs the traced run: -2.4% runtime",),
    created="2026-01-01T00:00:00+00:00",
)


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path))
    monkeypatch.delenv("LLAMP_STORE", raising=False)
    return tmp_path


def _page() -> AppTest:
    return AppTest.from_file(str(PAGE), default_timeout=TIMEOUT).run()


def test_page_without_validations_explains_how_to_make_one(home):
    at = _page()
    assert not at.exception
    assert any("No validation stored yet" in i.value for i in at.info)
    assert "llamp validate" in at.info[0].value


def test_page_shows_a_stored_validation(home):
    store_validation(RESULT, graph=read(SWEEP3D))
    at = _page()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["RRMSE"] == f"{RESULT.rrmse * 100:.2f}%"
    assert metrics["T(L0) predicted"] == format_ns(2.00e6)
    assert metrics["T measured at ΔL = 0"] == format_ns(2.00e6)
    assert metrics["Other processes"] == "0.12 cores"
    table = at.dataframe[0].value
    assert table["predicted_ns"].tolist() == [2.00e6, 2.40e6, 4.00e6]
    assert table["measured_mean_ns"].tolist() == pytest.approx([2.00e6, 2.41e6, 4.10e6])
    assert table["measured_sd_ns"].iloc[2] == pytest.approx(1e5)
    assert table["runs"].tolist() == [3, 3, 3]
    assert any(d.proto.label == "Download CSV" for d in at.get("download_button"))
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    traces = {t["name"]: t for t in json.loads(charts[0].proto.spec)["data"]}
    assert set(traces) == {"single runs", "measured (mean ± sd)", "predicted T(L0 + ΔL)"}
    assert traces["measured (mean ± sd)"]["error_y"]["visible"] is True
    assert traces["predicted T(L0 + ΔL)"]["x"] == [0.0, 10.0, 50.0]  # µs
    assert len(traces["single runs"]["x"]) == 9
    assert any("vs the traced run" in w.value for w in at.warning)
    # errors 0, −0.01, −0.10 ms on measured means 2.00, 2.41, 4.10 ms
    assert RESULT.rrmse == pytest.approx(math.sqrt((0.01**2 + 0.10**2) / 3) / (8.51 / 3))


def test_page_hides_single_runs_on_request(home):
    store_validation(RESULT, graph=read(SWEEP3D))
    at = _page()
    at.toggle(key="validation_show_runs").set_value(False).run()
    assert not at.exception
    traces = [t["name"] for t in json.loads(at.get("plotly_chart")[0].proto.spec)["data"]]
    assert traces == ["measured (mean ± sd)", "predicted T(L0 + ΔL)"]
