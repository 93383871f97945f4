"""Exports for other tools: the schedule as a Chrome/Perfetto trace (JSON trace-event format)
and the report as one self-contained HTML file; ``llamp export-timeline``/``export-report``.

The paper's running example (LLAMP Fig. 4c) at ``L = 0.5 µs, o = 0, G = 5 ns/B``: rank 0 runs
c0 [0, 0.1 µs], S at 0.1 µs (o = 0: zero length), c1 [0.1, 1.1]; rank 1 c2 [0, 0.5], R
[0.5, 0.615] (the message arrives at 0.1 + 0.5 + 3·0.005), c3 [0.615, 1.615]. The critical
path is c0 → S → R → c3; c1 has 515 ns of slack, c2 115 ns.
"""

from __future__ import annotations

import json
import re

import pytest
from cli_process import llamp
from hand_graphs import paper_example

from llamp.errors import InputError
from llamp.lp.compare import compare_runs
from llamp.lp.html_report import render_comparison, render_report
from llamp.lp.report import build_report
from llamp.lp.timeline import timeline_json, write_timeline
from llamp.params import LogGPS

PARAMS = LogGPS(L=500.0, o=0.0, G=5.0, S=1 << 30, nic="overlap")  # the paper's model
ARGS = ["--L", "0.5us", "--o", "0", "--G", "5ns/B", "--S", "1GiB", "--nic", "overlap"]


def test_perfetto_trace_has_one_track_per_rank_and_microsecond_slices():
    data = json.loads(timeline_json(paper_example(), PARAMS))
    assert data["displayTimeUnit"] == "ns" and data["otherData"]["generator"] == "llamp"
    events = data["traceEvents"]
    for e in events:
        assert {"ph", "pid", "tid", "name"} <= e.keys()
        assert e["ph"] in ("M", "X", "s", "f")
        if e["ph"] in ("X", "s", "f"):
            assert isinstance(e["ts"], float) and e["ts"] >= 0
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {0: "rank 0", 1: "rank 1"}
    slices = {e["args"]["label"]: e for e in events if e["ph"] == "X"}
    assert set(slices) == {"c0", "S", "c1", "c2", "R", "c3"}
    expected = {  # label: (rank, ts µs, dur µs, kind, critical)
        "c0": (0, 0.0, 0.1, "calc", True),
        "S": (0, 0.1, 0.0, "send", True),
        "c1": (0, 0.1, 1.0, "calc", False),
        "c2": (1, 0.0, 0.5, "calc", False),
        "R": (1, 0.5, 0.115, "recv", True),
        "c3": (1, 0.615, 1.0, "calc", True),
    }
    for label, (rank, ts, dur, kind, critical) in expected.items():
        e = slices[label]
        assert (e["tid"], e["name"], e["cat"]) == (rank, kind, "critical" if critical else "slack")
        assert e["ts"] == pytest.approx(ts) and e["dur"] == pytest.approx(dur)
        assert e["pid"] == 0
    assert slices["c1"]["args"]["slack_ns"] == pytest.approx(515.0)
    assert slices["c2"]["args"]["slack_ns"] == pytest.approx(115.0)
    assert slices["S"]["args"].items() >= {"size": 4, "peer": 1, "tag": 0}.items()
    assert slices["c3"]["args"]["cost_ns"] == 1000.0
    flows = [e for e in events if e["ph"] in ("s", "f")]
    assert [(e["ph"], e["tid"], e["id"]) for e in flows] == [("s", 0, 0), ("f", 1, 0)]
    assert flows[0]["ts"] == pytest.approx(0.1) and flows[1]["ts"] == pytest.approx(0.615)
    # The last slice ends at T.
    assert max(e["ts"] + e["dur"] for e in slices.values()) == pytest.approx(1.615)


def test_critical_only_and_the_slice_limit(sweep3d):
    data = json.loads(timeline_json(paper_example(), PARAMS, critical_only=True))
    labels = [e["args"]["label"] for e in data["traceEvents"] if e["ph"] == "X"]
    assert labels == ["c0", "S", "R", "c3"]
    import io

    out = io.StringIO()
    with pytest.raises(InputError, match="more than 1,000 slices"):
        write_timeline(sweep3d, LogGPS(), out, max_slices=1000)
    assert out.getvalue() == ""  # refused before anything was written
    summary = write_timeline(sweep3d, LogGPS(), out, critical_only=True)
    events = json.loads(out.getvalue())["traceEvents"]
    assert all(e["cat"] == "critical" for e in events if e["ph"] == "X")
    assert summary.slices == sum(e["ph"] == "X" for e in events) > 0
    assert summary.flows == sum(e["ph"] == "s" for e in events) == 99


def _self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"https?://", page), "no URL: the page must not fetch anything"
    assert "<script" not in page and "<link" not in page and "@import" not in page
    assert not re.search(r"""(src|href)\s*=""", page)


def test_html_report_is_self_contained_and_shows_the_numbers():
    data = build_report(paper_example(), PARAMS, lo=0.0, hi=1000.0, points=5)
    assert data.critical.critical == [pytest.approx(385.0)]
    curve = dict(zip(data.curve["L_ns"], data.curve["runtime_ns"], strict=True))
    assert curve[385.0] == pytest.approx(1500.0) and curve[1000.0] == pytest.approx(2115.0)
    assert list(data.sweep["L_ns"]) == [0.0, 250.0, 500.0, 750.0, 1000.0]
    page = render_report(data)
    _self_contained(page)
    assert page.count("<svg") == 3  # T(L), λ_L, critical-path composition
    for shown in ("1.615 µs", "385 ns", "516.15 ns", "λ_L", "Critical path"):
        assert shown in page, shown


def test_html_comparison_is_self_contained():
    other = paper_example()
    other.meta["name"] = "other"
    page = render_comparison(compare_runs([paper_example(), other], PARAMS, names=["a", "b"]))
    _self_contained(page)
    assert "b vs a: nothing differs" in page
    assert page.count("<svg") == 4  # slowdown, T(L), λ_L, composition
    assert "Slowdown T(L)/T(L0) − 1" in page


def test_cli_exports(paper_npz, tmp_path):
    trace = tmp_path / "path.json"
    out = llamp("export-timeline", paper_npz, *ARGS, "-o", str(trace), "--json", home=tmp_path)
    summary = json.loads(out.stdout)
    assert summary["slices"] == 6 and summary["flows"] == 1 and summary["ranks"] == 2
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == 6
    out = llamp(
        "export-timeline", paper_npz, *ARGS, "-o", str(trace), "--critical-only", home=tmp_path
    )
    assert "4 slices on 2 rank tracks, 1 critical messages" in out.stdout
    events = json.loads(trace.read_text())["traceEvents"]
    assert [e["args"]["label"] for e in events if e["ph"] == "X"] == ["c0", "S", "R", "c3"]
    page = tmp_path / "report.html"
    llamp("export-report", paper_npz, *ARGS, "--to", "1us", "-o", str(page), home=tmp_path)
    _self_contained(page.read_text())
    assert "385 ns" in page.read_text()
    for cmd, name in (("export-timeline", "x.txt"), ("export-report", "x.json")):
        bad = llamp(cmd, paper_npz, "-o", str(tmp_path / name), home=tmp_path, check=False)
        assert bad.returncode == 2 and "must end in" in bad.stderr, bad.stderr
    bad = llamp(
        "export-timeline",
        paper_npz,
        "-o",
        str(tmp_path / "no" / "t.json"),
        home=tmp_path,
        check=False,
    )
    assert bad.returncode == 2 and "does not exist" in bad.stderr
    assert not list(tmp_path.glob(".*.tmp"))
