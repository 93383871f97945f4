"""The web UI under Streamlit's AppTest: every page renders, its widgets exist, and the numbers
it shows are those of the Python API on the Sweep3D trace (LLAMP §II, docs/architecture.md §UI).

The store is a temporary embedded store (``LLAMP_HOME``) holding Sweep3D as run ``sweep3d``.
"""

from __future__ import annotations

import importlib
import json
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from apptest_pages import (
    RUN,
    SWEEP3D,
    archive_bytes,
    arr,
    assert_clean,
    exact_ns,
    figures,
    keyed,
    metric,
    page,
    raw,
    table,
)

from llamp.config import format_ns
from llamp.errors import InputError
from llamp.ingest import read
from llamp.lp import (
    critical_latencies,
    critical_path,
    evaluate,
    predict,
    rank_time_split,
    tolerance,
)
from llamp.lp.tolerance import latency_range
from llamp.params import LogGPS
from llamp.ui import uploads


@pytest.fixture(scope="module")
def graph(sweep3d):
    """The Sweep3D graph that ``home`` (conftest) stores as run ``sweep3d``."""
    return sweep3d


# ---------------------------------------------------------------------- Runs
def test_runs_page_lists_the_stored_run(store_env, graph):
    at = page()
    assert_clean(at)
    assert at.title[0].value == "Runs"
    runs = raw(at.dataframe[0].value)
    row = runs.loc[runs["name"] == RUN].iloc[0]
    summary = graph.summary()
    assert (row["ranks"], row["vertices"], row["messages"]) == (
        summary.ranks,
        summary.vertices,
        summary.messages,
    )
    assert row["sent_bytes"] == pytest.approx(summary.bytes, rel=1e-12)  # shown in KiB
    assert not [c for c in at.dataframe[0].value.columns if c == "id" or c.startswith("has")]
    assert at.file_uploader(key="ingest_files") is not None
    assert at.button(key="ingest_button").label == "Ingest"
    assert at.get("download_button"), "the runs table has a CSV download"


def test_upload_ingest_and_delete_with_confirmation(store_env, graph):
    at = page()
    files = [
        (f.name, f.read_bytes(), "text/plain")
        for f in sorted(SWEEP3D.glob("pmpi-trace-rank-*.txt"))
    ]
    at.file_uploader(key="ingest_files").set_value(files).run()
    at.text_input(key="ingest_name").set_value("uploaded").run()
    at.button(key="ingest_button").click().run()
    assert_clean(at)
    assert any("Stored run 'uploaded'" in s.value for s in at.success), [
        s.value for s in at.success
    ]
    runs = at.dataframe[0].value
    assert int(runs.loc[runs["name"] == "uploaded", "vertices"].iloc[0]) == graph.num_vertices

    # The same name again is refused unless 'Replace' is ticked.
    at.button(key="ingest_button").click().run()
    assert any("already stored" in e.value for e in at.error)

    at.selectbox(key="delete_name").set_value("uploaded").run()
    at.button(key="delete_button").click().run()
    assert any("cannot be undone" in w.value for w in at.warning)
    assert "uploaded" in list(at.dataframe[0].value["name"]), "nothing deleted before confirming"
    at.button(key="delete_confirm").click().run()
    assert_clean(at)
    assert "uploaded" not in list(at.dataframe[0].value["name"])
    assert RUN in list(at.dataframe[0].value["name"])


def test_bad_upload_is_a_readable_error(store_env):
    at = page()
    at.file_uploader(key="ingest_files").set_value(
        ("pmpi-trace-rank-0.txt", b"garbage line\n", "text/plain")
    ).run()
    at.text_input(key="ingest_name").set_value("broken").run()
    at.button(key="ingest_button").click().run()
    assert not at.exception
    messages = [e.value for e in at.error]
    assert messages and messages[0].startswith("Ingest"), messages
    assert "pmpi-trace-rank-0.txt" in messages[0]
    assert "llamp-ui-" not in messages[0], "the staging directory is not shown"
    assert "broken" not in list(at.dataframe[0].value["name"]), "nothing half-ingested"


def test_ingest_from_a_server_path(store_env, graph, monkeypatch):
    monkeypatch.setenv("LLAMP_UI_SERVER_ROOTS", str(SWEEP3D.parent))
    at = page()
    at.radio(key="ingest_source").set_value("Path on the server").run()
    at.text_input(key="ingest_path").set_value(str(SWEEP3D)).run()
    at.text_input(key="ingest_name").set_value("from-path").run()
    at.button(key="ingest_button").click().run()
    assert_clean(at)
    assert "from-path" in list(at.dataframe[0].value["name"])
    at.selectbox(key="delete_name").set_value("from-path").run()
    at.button(key="delete_button").click().run()
    at.button(key="delete_confirm").click().run()
    assert "from-path" not in list(at.dataframe[0].value["name"])


def test_ingest_simgrid_with_a_host_speed(store_env, monkeypatch):
    """The ingest form's host speed reaches the reader and is stored with the run; a SimGrid
    list file is named after itself by default; a bad speed is a readable error."""
    from llamp.graphdb import open_store

    TI = Path(__file__).parent / "data" / "traces" / "simgrid-ti" / "actions" / "split_traces"
    monkeypatch.setenv("LLAMP_UI_SERVER_ROOTS", str(TI.parent))  # server paths are opt-in
    at = page()
    assert at.text_input(key="ingest_host_speed").placeholder.startswith("1Gf (default)")
    at.radio(key="ingest_source").set_value("Path on the server").run()
    at.text_input(key="ingest_path").set_value(str(TI)).run()
    at.text_input(key="ingest_host_speed").set_value("bogus").run()
    at.button(key="ingest_button").click().run()
    assert any("cannot read host speed 'bogus'" in e.value for e in at.error)
    at.text_input(key="ingest_host_speed").set_value("500Mf").run()
    at.button(key="ingest_button").click().run()
    assert_clean(at)
    assert "split_traces" in list(at.dataframe[0].value["name"])  # the list file's own name
    with open_store(None) as store:
        meta = store.run_info("split_traces").meta
        calc = store.load_run("split_traces").cost_ns.max()
        store.delete_run("split_traces")
    assert meta["flops_per_s"] == 5e8 and meta["host_speed"] == "500Mf"
    assert calc == pytest.approx(1e9 / 5e8 * 1e9)  # actions1: compute 1e9 flops = 2 s


# ---------------------------------------------------------------------- Latency
def test_latency_page_shows_the_api_numbers(store_env, graph):
    params = LogGPS()
    tol = tolerance(graph, params)
    pred = predict(graph, params)
    at = page("latency")
    assert_clean(at)

    runtime = keyed(at, "runtime-L0")
    assert exact_ns(runtime) == pytest.approx(pred.runtime_ns, abs=1e-5)
    assert metric(at, "T(L0) predicted").value == format_ns(pred.runtime_ns)
    assert metric(at, "λ_L at L0").value == f"{pred.lambda_L:g}"
    for level in tol.latency:
        block = keyed(at, f"tolerance-L-{level.x * 100:g}pct")
        assert block.metric[0].label == f"{level.x * 100:g}% L tolerance"
        assert block.metric[0].value == format_ns(level.value)
        assert exact_ns(block) == pytest.approx(level.value, abs=1e-5)

    shown = table(at, "max L")  # times with their units, as format_ns writes them
    assert list(shown["max L"]) == [format_ns(t.value) for t in tol.latency]
    assert list(shown["T bound"]) == [format_ns(t.bound_ns) for t in tol.latency]
    assert list(shown["max G (ns/B)"]) == [f"{t.value:.6g}" for t in tol.bandwidth]
    assert not [c for c in shown.columns if c.endswith("_ns")], "no internal column names"

    lo, hi = latency_range((t.value for t in tol.latency), params.L)
    crit = critical_latencies(graph, params, lo, hi)
    at.number_input(key="lat_min_jump").set_value(0.0).run()  # every exact breakpoint
    ranked = table(at, "critical L")
    assert sorted(ranked["critical L"]) == sorted(format_ns(c) for c in crit.critical)
    jumps = list(ranked["jump of λ_L"])
    assert jumps == sorted(jumps, reverse=True), "ranked by the jump of λ_L"

    for key in ("csv_tolerance", "csv_critical", "csv_breakpoints"):
        assert at.get("download_button") and any(b.key == key for b in at.get("download_button"))


def test_latency_plots_have_zones_units_and_critical_latencies(store_env, graph):
    tol = tolerance(graph, LogGPS())
    at = page("latency")
    t_of_l, lam = figures(at)
    shapes = t_of_l["layout"]["shapes"]
    assert [s["fillcolor"] for s in shapes] == ["#2ca02c", "#ff7f0e", "#d62728"]  # Fig. 1 zones
    assert shapes[0]["x1"] == pytest.approx(tol.latency[0].value / 1e6)  # axis in ms here
    placed = [a["text"] for a in t_of_l["layout"]["annotations"]]
    assert placed[:3] == ["≤ 1%", "1%–2%", "2%–5%"]  # the zones at the top
    assert placed[3:] == [
        f"{x:g}%: {t.value / 1e6:.4g} ms" for x, t in zip((1, 2, 5), tol.latency, strict=True)
    ]  # the tolerances at the bottom
    assert t_of_l["layout"]["xaxis"]["title"]["text"] == "network latency L (ms)"
    assert t_of_l["layout"]["yaxis"]["title"]["text"] == "predicted runtime T (s)"
    names = [trace["name"] for trace in t_of_l["data"]]
    assert any(n.startswith("critical latencies (") for n in names)
    assert lam["layout"]["xaxis"]["title"]["text"] == "network latency L (ms)"
    assert "ρ_L (% of T)" in json.dumps(lam["layout"], ensure_ascii=False)
    # ρ_L = L·λ_L/T, shown in percent
    rho = next(t for t in lam["data"] if t["name"].startswith("ρ_L"))
    lam_l = next(t for t in lam["data"] if t["name"].startswith("λ_L"))
    assert arr(lam_l["y"]).max() == max(
        s.slope for s in critical_latencies(graph, LogGPS(), 0, 2e7).segments
    )
    assert arr(rho["y"])[0] == 0.0


def test_changing_a_parameter_recomputes_and_a_plot_option_does_not(store_env, graph, monkeypatch):
    calls = []
    module = importlib.import_module("llamp.lp.tolerance")
    real = module.tolerance

    def counting(*args, **kw):
        calls.append(args[1])
        return real(*args, **kw)

    monkeypatch.setattr(module, "tolerance", counting)
    at = page("latency")
    at.text_input(key="param_L::latency").set_value("7.5us").run()
    assert_clean(at)
    expected = tolerance(graph, LogGPS.parse(L="7.5us"))
    assert exact_ns(keyed(at, "tolerance-L-1pct")) == pytest.approx(
        expected.latency[0].value, abs=1e-5
    )
    computed = len(calls)
    assert computed >= 1 and calls[-1].L == 7500.0
    at.toggle(key="lat_log").set_value(True).run()
    assert_clean(at)
    assert len(calls) == computed, "a plot option must not recompute the analysis"
    assert figures(at)[0]["layout"]["xaxis"]["type"] == "log"


def test_bad_parameter_is_a_readable_error(store_env):
    at = page("latency")
    at.text_input(key="param_G::latency").set_value("fast").run()
    assert not at.exception
    assert any("gap per byte" in e.value for e in at.sidebar.error)
    assert not at.metric


def test_manual_sweep_range(store_env, graph):
    at = page("latency")
    at.checkbox(key="lat_auto").set_value(False).run()
    at.text_input(key="lat_from").set_value("0us").run()
    at.text_input(key="lat_to").set_value("50us").run()
    assert_clean(at)
    crit = critical_latencies(graph, LogGPS(), 0.0, 50_000.0)
    t_of_l = figures(at)[0]
    curve = next(t for t in t_of_l["data"] if t["name"] == "predicted T(L)")
    x_us = arr(curve["x"])
    assert x_us.min() == pytest.approx(0.0) and x_us.max() == pytest.approx(50.0)
    for seg in crit.segments:  # the exact segment ends lie on the drawn curve
        np.testing.assert_allclose(
            np.interp(seg.end / 1e3, x_us, arr(curve["y"])), seg.runtime_end_ns / 1e9, rtol=1e-9
        )
    assert t_of_l["layout"]["xaxis"]["title"]["text"] == "network latency L (µs)"


# ---------------------------------------------------------------------- Critical path
def test_critical_path_page_shows_the_api_numbers(store_env, graph):
    params = LogGPS()
    ev = evaluate(graph, params)
    cp = critical_path(graph, params)
    at = page("critical_path")
    assert_clean(at)
    assert exact_ns(keyed(at, "path-runtime")) == pytest.approx(ev.runtime_ns, abs=1e-5)
    assert metric(at, "Ops on the path").value == f"{len(cp.vertices):,}"
    assert metric(at, "Messages on the path").value == f"{len(cp.messages):,}"
    pd.testing.assert_frame_equal(
        table(at, "latency_ns").reset_index(drop=True),
        cp.split.reset_index(drop=True),
        check_dtype=False,
        rtol=1e-12,
    )
    pd.testing.assert_frame_equal(
        table(at, "blocked_ns").reset_index(drop=True),
        rank_time_split(graph, ev).reset_index(drop=True),
        check_dtype=False,
        rtol=1e-12,
    )
    shown = next(d.value for d in at.dataframe if "blocked" in " ".join(d.value.columns))
    assert not [c for c in shown.columns if c.endswith("_ns")], "times with units"
    messages = table(at, "send op")
    assert not [c for c in messages.columns if c.endswith(("_ns", "_vid"))]
    assert len(messages) == min(20, len(cp.messages))
    assert set(zip(messages["send op"], messages["receive op"], strict=True)) <= {
        (int(s), int(r)) for s, r in cp.messages
    }

    timeline, path_fig, rank_fig = figures(at)
    bars = [t for t in timeline["data"] if t["type"] == "bar"]
    critical_bars = [t for t in bars if t["name"].endswith("· critical")]
    assert critical_bars, "critical-path ops are highlighted"
    assert timeline["layout"]["xaxis"]["title"]["text"].startswith("time since start (")
    assert {t["name"] for t in path_fig["data"]} == {
        "compute",
        "overhead",
        "latency",
        "bandwidth",
    }
    assert {t["name"] for t in rank_fig["data"]} == {"compute", "overhead", "blocked"}
    assert path_fig["layout"]["yaxis"]["title"]["text"] == "time (s)"


def test_timeline_window(store_env, graph):
    ev = evaluate(graph, LogGPS())
    at = page("critical_path")
    at.text_input(key="cp_from").set_value("1s").run()
    at.text_input(key="cp_to").set_value("1.2s").run()
    assert_clean(at)
    inside = int(((ev.start_ns <= 1.2e9) & (ev.finish_ns >= 1e9)).sum())
    bars = [t for t in figures(at)[0]["data"] if t["type"] == "bar"]
    assert sum(len(arr(t["base"])) for t in bars) == inside
    assert figures(at)[0]["layout"]["xaxis"]["title"]["text"] == "time since start (ms)"
    at.text_input(key="cp_to").set_value("0.5s").run()
    assert any("must be after" in e.value for e in at.error)
    assert not at.exception


# ---------------------------------------------------------------------- Cypher console
def test_cypher_console_runs_read_only_queries(store_env, graph):
    at = page("cypher")
    assert_clean(at)
    at.button(key="cypher_run_button").click().run()
    assert_clean(at)
    result = at.dataframe[0].value
    assert RUN in list(result["name"])

    at.button(key="cypher_example_Rank-pair_traffic").click().run()
    assert "count(*) AS messages" in at.text_area(key="cypher_text").value
    at.button(key="cypher_run_button").click().run()
    assert_clean(at)
    traffic = at.dataframe[0].value
    summary = graph.summary()
    assert int(traffic["messages"].sum()) == summary.messages
    assert int(traffic["bytes"].sum()) == summary.bytes
    assert any(b.key == "cypher_csv" for b in at.get("download_button"))


def test_cypher_console_refuses_writes(store_env):
    at = page("cypher")
    at.text_area(key="cypher_text").set_value("MATCH (o:Op) DETACH DELETE o").run()
    at.button(key="cypher_run_button").click().run()
    assert not at.exception
    assert any(e.value.startswith("Refused") and "DELETE" in e.value for e in at.error)
    at.text_area(key="cypher_text").set_value("MATCH (o:Op) RETURN count(*) AS n").run()
    at.button(key="cypher_run_button").click().run()
    assert_clean(at)
    assert int(at.dataframe[0].value["n"].iloc[0]) > 0, "nothing was deleted"


def test_cypher_syntax_error_is_readable(store_env):
    at = page("cypher")
    at.text_area(key="cypher_text").set_value("MATCH (o:Op RETURN o").run()
    at.button(key="cypher_run_button").click().run()
    assert not at.exception
    assert at.error and at.error[0].value.startswith("Query")
    message = at.error[0].value
    assert "line 1, column" in message, message
    assert "\\n" not in message and "oC_" not in message and "expecting" not in message
    assert at.code and at.code[0].value.splitlines()[0] == "MATCH (o:Op RETURN o"
    assert at.code[0].value.splitlines()[1].strip() == "^"


# ---------------------------------------------------------------------- empty / unreachable store
def test_empty_store(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path))
    monkeypatch.delenv("LLAMP_STORE", raising=False)
    at = page()
    assert_clean(at)
    assert any("no run yet" in i.value for i in at.info)
    for view in ("latency", "critical_path", "cypher"):
        at = page(view)
        assert not at.exception, view
        assert not at.metric


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_neo4j_is_a_readable_error(monkeypatch, tmp_path):
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path))
    monkeypatch.setenv("LLAMP_STORE", f"bolt://neo4j:secret@127.0.0.1:{_closed_port()}")
    for view in (None, "latency", "cypher"):
        at = page(view)
        assert not at.exception, view
        errors = [e.value for e in (*at.error, *at.sidebar.error)]
        assert errors, view
        assert "Traceback" not in " ".join(errors)
        assert "secret" not in " ".join(errors), "the password is never shown"
        assert "cannot reach" in " ".join(errors)


# ---------------------------------------------------------------------- uploads


@pytest.mark.parametrize("kind,suffix", [("zip", ".zip"), ("tar", ".tar.gz")])
def test_archive_upload_finds_the_trace_directory(tmp_path, kind, suffix, graph):
    members = {
        f"sweep3d-2x2/{f.name}": f.read_bytes() for f in SWEEP3D.glob("pmpi-trace-rank-*.txt")
    }
    upload = uploads.Upload(f"sweep3d{suffix}", archive_bytes(kind, members))
    assert uploads.default_run_name([upload]) == "sweep3d"
    source = uploads.stage([upload], tmp_path, "sweep3d")
    assert source.is_dir() and len(list(source.glob("pmpi-trace-rank-*.txt"))) == 4
    assert read(source).num_vertices == graph.num_vertices


def test_archive_with_escaping_member_is_refused(tmp_path):
    upload = uploads.Upload("evil.zip", archive_bytes("zip", {"../pmpi-trace-rank-0.txt": b"x"}))
    with pytest.raises(InputError, match="outside the archive"):
        uploads.stage([upload], tmp_path, "evil")
    assert not (tmp_path.parent / "pmpi-trace-rank-0.txt").exists()


def test_upload_mixes_and_strangers_are_refused(tmp_path):
    goal = uploads.Upload("app.goal", b"num_ranks 1\n")
    rank = uploads.Upload("pmpi-trace-rank-0.txt", b"")
    with pytest.raises(InputError, match="not a mix"):
        uploads.stage([goal, rank], tmp_path, "x")
    with pytest.raises(InputError, match="not a trace rank file"):
        uploads.stage([uploads.Upload("notes.txt", b"")], tmp_path, "x")
    with pytest.raises(InputError, match="cannot unpack"):
        uploads.stage([uploads.Upload("broken.zip", b"not a zip")], tmp_path, "x")
    assert uploads.default_run_name([rank]) == ""
    assert uploads.default_run_name([uploads.Upload("lulesh-0.dat", b"")]) == "lulesh"


def test_goal_upload(store_env):
    goal = Path(__file__).parent / "data" / "traces" / "goal" / "binary_tree_32.goal"
    at = page()
    at.file_uploader(key="ingest_files").set_value(
        (goal.name, goal.read_bytes(), "text/plain")
    ).run()
    at.button(key="ingest_button").click().run()  # the name defaults to the file's stem
    assert_clean(at)
    runs = at.dataframe[0].value
    row = runs.loc[runs["name"] == "binary_tree_32"].iloc[0]
    assert row["vertices"] == read(goal).num_vertices
    at.selectbox(key="delete_name").set_value("binary_tree_32").run()
    at.button(key="delete_button").click().run()
    at.button(key="delete_confirm").click().run()
    assert "binary_tree_32" not in list(at.dataframe[0].value["name"])


def test_analysis_failure_is_a_readable_error(store_env, monkeypatch):
    def broken(*args, **kw):
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(importlib.import_module("llamp.lp.tolerance"), "tolerance", broken)
    at = page("latency")
    at.text_input(key="param_o::latency").set_value("1.25us").run()  # a key no cache holds
    assert not at.exception
    assert any(
        e.value.startswith(
            "Latency analysis failed: RuntimeError: solver exploded (an "
            "internal error: please report it"
        )
        for e in at.error
    ), [e.value for e in at.error]
