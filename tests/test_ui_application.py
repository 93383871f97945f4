"""The application what-if pages under Streamlit's AppTest: collectives (LLAMP Fig. 10),
classification (Tong et al. 2016) and compute variability (Cornebize & Legrand 2022).

Every page renders, its widgets exist, and the numbers it shows are those of the Python API
for the same inputs, on the Sweep3D trace stored as run ``sweep3d`` in a temporary embedded
store (``LLAMP_HOME``).
"""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from apptest_pages import (
    RUN,
    SWEEP3D,
    SettledAppTest,
    arr,
    assert_clean,
    exact_ns,
    figures,
    keyed,
    table,
)
from store_graphs import stored_home
from streamlit.testing.v1 import AppTest

from llamp.config import format_ns
from llamp.ingest import read
from llamp.ingest.collective_models import dimemas, thakur_gropp
from llamp.lp import compare_collectives
from llamp.lp.classify import NETWORKS, Network, classify
from llamp.lp.variability import monte_carlo
from llamp.params import LogGPS
from llamp.ui import APP_PATH, page_work

GOAL = Path(__file__).parent / "data" / "traces" / "goal" / "binary_tree_32.goal"
TIMEOUT = 180
#: The ops Sweep3D's trace calls collectively, with the algorithms it was ingested with.
INGESTED = {"allreduce": "recursive_doubling", "barrier": "dissemination", "bcast": "binomial"}


@pytest.fixture(scope="module")
def graph(sweep3d):
    """The Sweep3D graph that ``home`` stores as run ``sweep3d``."""
    return sweep3d


@pytest.fixture(scope="module")
def home(tmp_path_factory, graph, ui_store):
    """A LLAMP_HOME with Sweep3D as ``sweep3d``, a Sweep3D run whose trace is gone
    (``sweep3d-gone``) and a GOAL schedule (``goal-tree``)."""
    gone = tmp_path_factory.mktemp("uploaded") / "sweep3d-2x2"
    shutil.copytree(SWEEP3D, gone)
    runs = {RUN: graph, "sweep3d-gone": read(gone), "goal-tree": read(GOAL)}
    with stored_home(tmp_path_factory, runs, ui_store) as path:
        shutil.rmtree(gone)
        yield path


def page(view: str, run: str | None = RUN) -> AppTest:
    """The app, run once, then switched to ``views/<view>.py`` on run ``run``."""
    at = SettledAppTest(APP_PATH, default_timeout=TIMEOUT)
    at.run()
    at.switch_page(f"views/{view}.py")
    at.run()
    if run is not None:
        select_run(at, view, run)
    return at


def downloads(at: AppTest) -> set[str]:
    return {b.key for b in at.get("download_button")}


def select_run(at: AppTest, view: str, name: str) -> None:
    at.selectbox(key=f"run::{view}").set_value(name).run()


# ---------------------------------------------------------------------- collectives what-if
def test_collectives_page_compares_recursive_doubling_and_ring(store_env):
    """The Fig. 10 pair by default: the run's own allreduce against the ring."""
    params = LogGPS()
    variants = [
        ",".join(f"{op}={alg}" for op, alg in sorted({**INGESTED, "allreduce": alg}.items()))
        for alg in ("recursive_doubling", "ring")
    ]
    api = compare_collectives(SWEEP3D, variants, params, [params.L]).summary
    at = page("collectives")
    assert_clean(at)
    assert at.number_input(key="coll_count").value == 2
    assert at.selectbox(key="coll_v0_allreduce").value == "recursive_doubling"
    assert at.selectbox(key="coll_v1_allreduce").value == "ring"
    assert at.selectbox(key="coll_v1_bcast").value == "binomial"
    assert "sweep3d-2x2" in " ".join(c.value for c in at.caption if c.value.startswith("Trace:"))

    for i, row in api.iterrows():
        block = keyed(at, f"variant-{i}")
        assert exact_ns(block) == pytest.approx(row["runtime_ns"], abs=1e-5)
        assert block.metric[0].value == format_ns(row["runtime_ns"])
        assert block.metric[1].value == f"{row['lambda_L']:g}"
        tolerances = block.markdown[-1].value
        for x in (1, 2, 5):
            value = format_ns(row[f"tolerance_{x}pct_L_ns"])
            assert f"{x}% L tolerance: **{value}**" in tolerances
    shown = table(at, "runtime_vs_first")
    assert list(shown["variant"]) == ["allreduce=recursive_doubling", "allreduce=ring"]
    for column in ("messages", "runtime_ns", "lambda_L", "rho_L", "tolerance_5pct_L_ns"):
        np.testing.assert_allclose(shown[column], api[column], rtol=1e-12, err_msg=column)
    assert list(shown["messages_vs_first"]) == [0, int(api["messages"][1] - api["messages"][0])]
    assert shown["lambda_L"][1] > shown["lambda_L"][0], "the ring puts more latencies on the path"
    assert {"csv_variants", "csv_variant_sweep", "csv_model_costs"} <= downloads(at)

    t_of_l, lam = figures(at)
    curves = [t for t in t_of_l["data"] if t["mode"] == "lines"]
    assert [t["name"] for t in curves] == list(shown["variant"])
    marks = [t for t in t_of_l["data"] if t["mode"] == "markers"]
    # L0 and the three tolerances of each variant, on an axis in ms here
    for mark, (_, row) in zip(marks, api.iterrows(), strict=True):
        expected = [params.L] + [row[f"tolerance_{x}pct_L_ns"] for x in (1, 2, 5)]
        np.testing.assert_allclose(arr(mark["x"]), np.array(expected) / 1e6, rtol=1e-12)
    assert t_of_l["layout"]["xaxis"]["title"]["text"] == "network latency L (ms)"
    lambda_ring = next(t for t in lam["data"] if t["name"] == "allreduce=ring" and "line" in t)
    assert arr(lambda_ring["y"])[0] == api["lambda_L"][1]  # λ_L at L = 0 (one segment up to L0)


def test_collective_variant_choice_and_layout(store_env, monkeypatch):
    calls = []
    real = page_work.compare_collectives

    def counting(*args, **kw):
        calls.append(args[1])
        return real(*args, **kw)

    monkeypatch.setattr(page_work, "compare_collectives", counting)
    at = page("collectives")
    at.number_input(key="coll_count").set_value(3).run()
    at.selectbox(key="coll_v2_allreduce").set_value("rabenseifner").run()
    at.text_input(key="param_L::collectives").set_value("5us").run()  # a key no cache holds
    assert_clean(at)
    params = LogGPS.parse(L="5us")
    variants = [
        ",".join(f"{op}={alg}" for op, alg in sorted({**INGESTED, "allreduce": alg}.items()))
        for alg in ("recursive_doubling", "ring", "rabenseifner")
    ]
    api = compare_collectives(SWEEP3D, variants, params, [params.L]).summary
    for i, row in api.iterrows():
        assert exact_ns(keyed(at, f"variant-{i}")) == pytest.approx(row["runtime_ns"], abs=1e-5)
    assert [v.label for v in calls[-1]] == [
        "allreduce=recursive_doubling",
        "allreduce=ring",
        "allreduce=rabenseifner",
    ]
    computed = len(calls)
    at.radio(key="coll_layout").set_value("One row per variant (Fig. 10)").run()
    at.toggle(key="coll_log").set_value(True).run()
    assert_clean(at)
    assert len(calls) == computed, "a plot option must not recompute the comparison"
    shown = figures(at)
    assert len(shown) == 6, "T(L) and λ_L/ρ_L per variant"
    zones = shown[0]["layout"]["shapes"]
    assert [s["fillcolor"] for s in zones] == ["#2ca02c", "#ff7f0e", "#d62728"]
    assert shown[0]["layout"]["xaxis"]["type"] == "log"


def test_collective_variant_with_an_analytic_model(store_env):
    """A variant may charge allreduce with Thakur–Gropp's ring formula instead of expanding it:
    the page shows the same numbers as the API, with fewer messages than the expansion. An
    analytic collective needs the program order: under the default the page says so."""
    params = LogGPS(order="program")
    at = page("collectives")
    at.selectbox(key="coll_v1_allreduce").set_value("thakur_gropp:ring").run()
    assert any("--order program" in e.value for e in at.error), [e.value for e in at.error]
    at.selectbox(key="param_order::collectives").set_value("program").run()
    assert_clean(at)
    variants = [
        ",".join(f"{op}={alg}" for op, alg in sorted({**INGESTED, "allreduce": alg}.items()))
        for alg in ("recursive_doubling", "thakur_gropp:ring")
    ]
    api = compare_collectives(SWEEP3D, variants, params, [params.L]).summary
    for i, row in api.iterrows():
        assert exact_ns(keyed(at, f"variant-{i}")) == pytest.approx(row["runtime_ns"], abs=1e-5)
    shown = table(at, "runtime_vs_first")
    assert list(shown["variant"]) == ["allreduce=recursive_doubling", "allreduce=thakur_gropp:ring"]
    assert shown["messages"][1] < shown["messages"][0]
    costs = table(at, "thakur_gropp_formula")
    modelled = costs[
        (costs["variant"] == "allreduce=thakur_gropp:ring") & (costs["op"] == "allreduce")
    ]
    assert set(modelled["algorithm"]) == {"ring"}


def test_collectives_analytic_costs(store_env):
    """One Thakur–Gropp and one Dimemas row against :mod:`llamp.ingest.collective_models`."""
    params = LogGPS()
    at = page("collectives")
    assert_clean(at)
    costs = table(at, "thakur_gropp_formula")
    ring = costs[
        (costs["variant"] == "allreduce=ring")
        & (costs["op"] == "allreduce")
        & (costs["n_bytes"] == 8)
    ].iloc[0]
    assert ring["instances"] == 20  # Sweep3D: 20 allreduces of 8 B, 12 of 4 B on 4 ranks
    cost = thakur_gropp("allreduce", "ring", 4, 8)
    assert ring["thakur_gropp_latency_terms"] == cost.latency_terms == 6
    assert ring["thakur_gropp_ns"] == pytest.approx(cost.at(params.L, params.G), rel=1e-12)
    assert ring["dimemas_ns"] == pytest.approx(
        dimemas("allreduce", 4, 8, 8).at(params.L, params.G), rel=1e-12
    )
    totals = table(at, "total_dimemas_ns")
    assert list(totals["instances"]) == [39, 39]  # 32 allreduce, 3 barrier, 4 bcast
    mine = costs[costs["variant"] == "allreduce=ring"]
    assert totals["total_thakur_gropp_ns"][1] == pytest.approx(mine["total_thakur_gropp_ns"].sum())


def test_collectives_when_the_trace_is_gone(store_env):
    at = page("collectives")
    select_run(at, "collectives", "sweep3d-gone")
    assert not at.exception
    assert any("not on disk" in w.value for w in at.warning), [w.value for w in at.warning]
    assert not at.metric
    at.text_input(key="coll_trace").set_value(str(SWEEP3D)).run()
    assert_clean(at)
    assert len(at.metric) == 2 * 2, "two variants: T and λ_L each"

    select_run(at, "collectives", "goal-tree")
    at.text_input(key="coll_trace").set_value("").run()
    assert not at.exception
    assert any("already expanded" in w.value for w in at.warning)
    at.text_input(key="coll_trace").set_value(str(GOAL)).run()
    assert not at.exception
    assert any(e.value.startswith("Reading the trace") and "graph" in e.value for e in at.error)


def test_identical_variants_are_a_readable_error(store_env):
    at = page("collectives")
    at.selectbox(key="coll_v1_allreduce").set_value("recursive_doubling").run()
    assert not at.exception
    assert any("given twice" in e.value for e in at.error), [e.value for e in at.error]


# ---------------------------------------------------------------------- classification
def test_classification_page_shows_the_api_numbers(store_env, graph):
    result = classify(graph, "HDR", params=LogGPS(o=0.0))
    at = page("classification")
    assert_clean(at)
    assert at.selectbox(key="cls_network").value == "HDR"
    assert at.radio(key="cls_o").value.startswith("0 ")
    assert keyed(at, "class-label").metric[0].value == result.label == "computation-bound"
    assert keyed(at, "class-label").caption[0].value == f"rule {result.rule}"
    assert any(result.reason in s.value for s in at.success)
    target = result.configs[
        (result.configs["set"] == "latency") & (result.configs["speedup"] == 1.0)
    ].iloc[0]
    assert exact_ns(keyed(at, "class-runtime")) == pytest.approx(target["runtime_ns"], abs=1e-5)
    assert keyed(at, "class-share-wait").metric[0].value == f"{target['wait_share']:.2%}"
    pd.testing.assert_frame_equal(
        table(at, "wait_ns").reset_index(drop=True), result.per_rank, check_dtype=False
    )
    rules = table(at, "holds")
    assert list(rules["rule"]) == list(result.rules["rule"])
    assert list(rules["holds"]) == list(result.rules["holds"])
    assert {"csv_counters", "csv_configs", "csv_rules"} <= downloads(at)

    counters, sets = figures(at)
    assert [t["name"] for t in counters["data"]] == [
        "compute",
        "overhead",
        "wait",
        "latency",
        "bandwidth",
    ]
    wait = next(t for t in counters["data"] if t["name"] == "wait")
    np.testing.assert_allclose(arr(wait["y"]), result.per_rank["wait_ns"] / 1e9)  # in s
    assert sum(1 for t in sets["data"] if t["name"] == "latency") == 3, "one panel per set"


def test_classification_plot_options_do_not_recompute(store_env, monkeypatch):
    calls = []
    module = importlib.import_module("llamp.lp.classify")
    real = module.classify

    def counting(*args, **kw):
        calls.append(args[1])
        return real(*args, **kw)

    monkeypatch.setattr(module, "classify", counting)
    at = page("classification")
    at.selectbox(key="cls_network").set_value("QDR").run()
    at.selectbox(key="cls_span").set_value(4).run()  # a key no cache holds
    assert_clean(at)
    assert calls and calls[-1].name == "QDR"
    computed = len(calls)
    at.toggle(key="cls_shares").set_value(False).run()
    at.toggle(key="cls_with_compute").set_value(False).run()
    assert_clean(at)
    assert len(calls) == computed, "a plot option must not recompute the classification"
    counters, sets = figures(at)
    assert "compute" not in {t["name"] for t in counters["data"]}
    assert sets["layout"]["yaxis"]["title"]["text"].startswith("mean time per rank (")
    assert len(arr(sets["data"][0]["x"])) == 5, "×1/4 … ×4"


def test_classification_custom_network_and_thresholds(store_env, graph):
    at = page("classification")
    at.selectbox(key="cls_network").set_value("custom…").run()
    at.text_input(key="cls_bandwidth").set_value("1Gb/s").run()
    at.text_input(key="cls_latency").set_value("500us").run()
    at.radio(key="cls_o").set_value(at.radio(key="cls_o").options[1]).run()
    at.number_input(key="cls_compute").set_value(99.0).run()
    assert_clean(at)
    from llamp.lp.classify import Thresholds

    result = classify(
        graph,
        Network("custom", 1.0, 500_000.0),
        params=LogGPS(),
        thresholds=Thresholds(compute_share=0.99),
    )
    assert keyed(at, "class-label").metric[0].value == result.label
    assert result.rule != "C1", "C1 is out of reach at 99 %"
    pd.testing.assert_frame_equal(
        table(at, "wait_ns").reset_index(drop=True), result.per_rank, check_dtype=False
    )
    assert table(at, "overhead_ns")["overhead_ns"].sum() > 0, "the sidebar's o is counted"

    at.text_input(key="cls_bandwidth").set_value("fast").run()
    assert not at.exception
    assert any(e.value.startswith("Classification") and "fast" in e.value for e in at.error)


def test_builtin_networks_are_offered(store_env):
    at = page("classification")
    assert at.selectbox(key="cls_network").options == [*NETWORKS, "custom…"]


# ---------------------------------------------------------------------- variability
def test_variability_page_shows_the_api_percentiles(store_env, graph, monkeypatch):
    calls = []
    module = importlib.import_module("llamp.lp.variability")
    real = module.monte_carlo

    def counting(*args, **kw):
        calls.append(args[2])
        return real(*args, **kw)

    monkeypatch.setattr(module, "monte_carlo", counting)
    at = page("variability")
    assert_clean(at)
    assert any("Run Monte Carlo" in i.value for i in at.info)
    assert not at.metric, "nothing runs before the button"
    at.number_input(key="mc_samples").set_value(24).run()
    at.number_input(key="mc_seed").set_value(7).run()
    at.number_input(key="mc_spatial").set_value(10.0).run()
    at.text_input(key="mc_slow_ranks").set_value("2").run()
    at.number_input(key="mc_slowdown").set_value(1.3).run()
    at.text_input(key="mc_levels").set_value("1, 5").run()
    at.button(key="mc_run").click().run()
    assert_clean(at)
    api = monte_carlo(
        graph,
        LogGPS(),
        spatial_cv=0.10,
        temporal_cv=0.05,
        slow_ranks=(2,),
        slowdown=1.3,
        samples=24,
        seed=7,
        levels=(0.01, 0.05),
    ).summary.set_index("quantity")
    assert exact_ns(keyed(at, "mc-T-p50")) == pytest.approx(api.loc["runtime_ns", "p50"], abs=1e-5)
    assert exact_ns(keyed(at, "mc-T-p95")) == pytest.approx(api.loc["runtime_ns", "p95"], abs=1e-5)
    assert exact_ns(keyed(at, "mc-T-baseline")) == pytest.approx(
        api.loc["runtime_ns", "baseline"], abs=1e-5
    )
    assert keyed(at, "mc-lambda-p50").metric[0].value == f"{api.loc['lambda_L', 'p50']:g}"
    assert keyed(at, "mc-tolerance-5pct").metric[0].value == format_ns(
        api.loc["tolerance_5pct_L_ns", "p50"]
    )
    shown = table(at, "p50").set_index("quantity")  # with units, as people read them
    assert shown.loc["T", "p50"] == format_ns(api.loc["runtime_ns", "p50"])
    assert shown.loc["λ_L", "p50"] == f"{api.loc['lambda_L', 'p50']:.6g}"
    assert shown.loc["5% L tolerance", "p50"] == format_ns(api.loc["tolerance_5pct_L_ns", "p50"])
    assert not [q for q in shown.index if q.endswith("_ns")], "no internal names"
    assert {"csv_mc_summary", "csv_mc_samples"} <= downloads(at)

    hist = {f["layout"]["title"]["text"]: f for f in figures(at)}
    assert set(hist) == {
        "Predicted runtime T",
        "Latency sensitivity λ_L",
        "1% L tolerance",
        "5% L tolerance",
    }
    runtime = hist["Predicted runtime T"]
    assert len(arr(runtime["data"][0]["x"])) == 24
    lines = [s["x0"] for s in runtime["layout"]["shapes"]]  # P5, P50, P95, no noise, in s
    np.testing.assert_allclose(
        lines,
        np.array([api.loc["runtime_ns", q] for q in ("p5", "p50", "p95", "baseline")]) / 1e9,
    )

    computed = len(calls)
    at.slider(key="mc_bins").set_value(10).run()
    at.toggle(key="mc_show_rho").set_value(True).run()
    assert_clean(at)
    assert len(calls) == computed, "a plot option must not rerun the Monte Carlo"
    assert len(figures(at)) == 5
    assert exact_ns(keyed(at, "mc-T-p50")) == pytest.approx(api.loc["runtime_ns", "p50"], abs=1e-5)


def test_variability_large_run_with_estimated_progress(store_env, graph):
    """More samples than the pilot covers four times: timed pilot, then the run in a worker
    thread; the result is still exactly monte_carlo's."""
    at = page("variability")
    at.number_input(key="mc_samples").set_value(100).run()
    at.toggle(key="mc_sensitivity").set_value(False).run()
    at.button(key="mc_run").click().run()
    assert_clean(at)
    api = monte_carlo(
        graph, LogGPS(), spatial_cv=0.05, temporal_cv=0.05, samples=100, seed=0, sensitivity=False
    ).summary.set_index("quantity")
    assert exact_ns(keyed(at, "mc-T-p50")) == pytest.approx(api.loc["runtime_ns", "p50"], abs=1e-5)
    assert list(table(at, "p50")["quantity"]) == ["T"]
    assert len(figures(at)) == 1


def test_variability_bad_input_is_a_readable_error(store_env):
    at = page("variability")
    at.text_input(key="mc_slow_ranks").set_value("99").run()
    at.button(key="mc_run").click().run()
    assert not at.exception
    assert any("slow rank 99 is outside 0..3" in e.value for e in at.error), [
        e.value for e in at.error
    ]
    at.text_input(key="mc_slow_ranks").set_value("one").run()
    assert any("slow ranks: cannot read 'one'" in e.value for e in at.error)


# ---------------------------------------------------------------------- empty store
def test_pages_on_an_empty_store(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path))
    monkeypatch.delenv("LLAMP_STORE", raising=False)
    for view in ("collectives", "classification", "variability"):
        at = page(view, run=None)
        assert not at.exception, view
        assert not at.metric, view
        assert any("no run yet" in i.value for i in at.sidebar.info), view
