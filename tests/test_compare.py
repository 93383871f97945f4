"""Runs side by side (``llamp.lp.compare``, ``llamp compare``), checked by hand on two tiny
graphs: the paper's running example (LLAMP Fig. 4c) and a version of it whose rank 1 computes
twice as long after the receive, with a third rank that only computes.

At ``L = 0.5 µs, o = 0, G = 5 ns/B`` (s = 4 B, so one message costs ``L + 3G = 515 ns``):

- A: ``T(L) = max(1.1, max(L + 0.115, 0.5) + 1) µs`` → T = 1615 ns, λ_L = 1, λ_G = 3; the
  path is c0 (100) → message (500 + 15) → c3 (1000): compute 1100, latency 500, bandwidth 15;
  1% L tolerance: L + 1115 ≤ 1.01 · 1615 → L = 516.15 ns; 1% G tolerance: 1600 + 3G ≤
  1631.15 → G = 10.3833 ns/B.
- B: ``T(L) = max(1.1, max(L + 0.115, 0.5) + 2, 0.05) µs`` → T = 2615 ns; compute 2100;
  1% L tolerance: L + 2115 ≤ 2641.15 → 526.15 ns; 1% G: 2600 + 3G ≤ 2641.15 → 13.7167 ns/B.
"""

from __future__ import annotations

import json
import math

import pytest
from cli_process import llamp
from hand_graphs import build, paper_example

from llamp.errors import InputError
from llamp.lp.compare import Change, compare_runs
from llamp.params import LogGPS

PARAMS = LogGPS(L=500.0, o=0.0, G=5.0, S=1 << 30, nic="overlap")  # the paper's model


def longer_example():
    graph, _ = build(
        3,
        {
            "c0": (0, "calc", 100.0),
            "S": (0, "send", 4, 1),
            "c1": (0, "calc", 1000.0),
            "c2": (1, "calc", 500.0),
            "R": (1, "recv", 4, 0),
            "c3": (1, "calc", 2000.0),
            "d0": (2, "calc", 50.0),
        },
        [
            ("c0", "requires", "S"),
            ("S", "requires", "c1"),
            ("c2", "requires", "R"),
            ("R", "requires", "c3"),
            ("S", "message", "R"),
        ],
        meta={"name": "longer"},
    )
    return graph


@pytest.fixture(scope="module")
def comparison():
    return compare_runs([paper_example(), longer_example()], PARAMS, names=["paper", "longer"])


def test_each_run_has_its_hand_checked_figures(comparison):
    a, b = comparison.runs
    assert (a.name, a.ranks, a.messages, a.bytes, a.collective_instances) == ("paper", 2, 1, 4, 0)
    assert (b.name, b.ranks, b.messages, b.bytes) == ("longer", 3, 1, 4)
    assert a.runtime_ns == pytest.approx(1615.0) and b.runtime_ns == pytest.approx(2615.0)
    assert (a.prediction.lambda_L, a.prediction.lambda_G) == (1.0, 3.0)
    assert a.path_ns == pytest.approx(
        {"compute": 1100.0, "overhead": 0.0, "latency": 500.0, "bandwidth": 15.0}
    )
    assert b.path_ns == pytest.approx(
        {"compute": 2100.0, "overhead": 0.0, "latency": 500.0, "bandwidth": 15.0}
    )
    assert sum(a.path_ns.values()) == pytest.approx(a.runtime_ns)
    assert a.path_share("latency") == pytest.approx(500.0 / 1615.0)
    assert a.latency_tolerance(0.01) == pytest.approx(516.15)
    assert b.latency_tolerance(0.01) == pytest.approx(526.15)
    assert a.bandwidth_tolerance(0.01) == pytest.approx(31.15 / 3)
    assert b.bandwidth_tolerance(0.01) == pytest.approx(41.15 / 3)
    assert a.calc_ns_total == 2600.0 and b.calc_ns_total == 3650.0


def test_each_curve_is_the_exact_T_of_L_over_the_runs_own_range(comparison):
    """Both runs' T(L) bend once, at the critical latency 385 ns (L + 115 = 500): flat before,
    slope 1 after. The automatic range is [0, max(1.25 × 5% tolerance, 2·L0, L0 + 10 µs)] =
    [0, 10.5 µs]; the curve's rows are the ends of its pieces, the breakpoint marked."""
    curves = comparison.curves
    assert list(curves["run"].unique()) == ["paper", "longer"]
    a = curves[curves["run"] == "paper"]
    b = curves[curves["run"] == "longer"]
    assert list(a["L_ns"]) == list(b["L_ns"]) == pytest.approx([0.0, 385.0, 10_500.0])
    assert list(a["runtime_ns"]) == pytest.approx([1500.0, 1500.0, 11_615.0])
    assert list(b["runtime_ns"]) == pytest.approx([2500.0, 2500.0, 12_615.0])
    assert list(a["lambda_L"]) == [0.0, 1.0, 1.0]  # right derivatives
    assert list(a["critical"]) == [False, True, False]
    assert [(s.lo, s.hi, s.complete) for s in comparison.critical] == [(0.0, 10_500.0, True)] * 2
    data = comparison.as_dict()["curves"]["paper"]
    assert data["critical_ns"] == pytest.approx([385.0]) and data["hi_ns"] == 10_500.0
    assert data["runtime_ns"] == pytest.approx([1500.0, 1500.0, 11_615.0])


def test_the_curve_passes_through_T_at_every_breakpoint(comparison):
    """At every row of every curve (each critical latency and the range's ends), T and λ_L
    are what ``predict`` gives at that L, to 1e-9 relative."""
    from dataclasses import replace

    from llamp.lp import predict

    graphs = {"paper": paper_example(), "longer": longer_example()}
    for row in comparison.curves.itertuples(index=False):
        p = predict(graphs[row.run], replace(PARAMS, L=float(row.L_ns)), engine="graph")
        assert row.runtime_ns == pytest.approx(p.runtime_ns, rel=1e-9, abs=1e-9), row
        assert row.lambda_L == p.lambda_L, row


def test_the_automatic_range_shows_every_tolerance():
    """[0, max(1.25 × the largest finite tolerance, 2·L0, L0 + 10 µs)]; L0 + 100 µs when no
    tolerance is finite (the Latency page's range and each compared run's)."""
    from llamp.lp.tolerance import latency_range

    assert latency_range([516.15, 580.75, math.inf], 500.0) == (0.0, 10_500.0)
    assert latency_range([20_000.0, 16_000.0], 500.0) == (0.0, 25_000.0)
    assert latency_range([9_000.0], 12_000.0) == (0.0, 24_000.0)
    assert latency_range([math.inf, math.inf], 500.0) == (0.0, 100_500.0)


def test_a_largest_L_puts_every_run_on_one_range():
    result = compare_runs(
        [paper_example(), longer_example()], PARAMS, names=["paper", "longer"], hi=1000.0
    )
    a = result.curves[result.curves["run"] == "paper"]
    assert list(a["L_ns"]) == pytest.approx([0.0, 385.0, 1000.0])
    assert list(a["runtime_ns"]) == pytest.approx([1500.0, 1500.0, 2115.0])
    assert {(s.lo, s.hi) for s in result.critical} == {(0.0, 1000.0)}
    with pytest.raises(InputError, match="largest L"):
        compare_runs([paper_example(), longer_example()], PARAMS, hi=0.0)


def test_tables_and_what_changed(comparison):
    tol = comparison.tolerances()
    assert list(tol.columns) == ["run", "x", "bound_ns", "latency_ns", "G_ns_per_byte"]
    assert len(tol) == 6 and tol["bound_ns"].iloc[0] == pytest.approx(1.01 * 1615.0)
    comp = comparison.composition()
    assert comp.groupby("run")["share"].sum().to_dict() == pytest.approx(
        {"paper": 1.0, "longer": 1.0}
    )
    (changes,) = comparison.changes
    by = {c.quantity: c for c in changes}
    assert by["runtime T"].delta == pytest.approx(1000.0)
    assert by["runtime T"].ratio == pytest.approx(2615.0 / 1615.0)
    assert by["ranks"].value == 3 and by["ranks"].baseline == 2
    assert by["1% L tolerance"].delta == pytest.approx(10.0)
    assert not by["λ_L"].significant and not by["messages"].significant
    assert by["runtime T"].relative() == "+61.9%" and by["λ_L"].relative() == "="
    assert by["bytes"].shown(2.5e6) == "2.5 MB" and by["runtime T"].shown(2615.0) == "2.615 µs"
    (line,) = comparison.summary()
    assert line.startswith("longer vs paper: runtime T: 1.615 µs → 2.615 µs (+61.9%)")
    assert "ranks: 2 → 3 (+50.0%)" in line
    assert "1% L tolerance: 516.15 ns → 526.15 ns (+1.9%)" in line
    assert "compute share of the path: 68.1% → 80.3% (+12.2 points)" in line
    assert "λ_L" not in line and "messages" not in line  # unchanged quantities are left out
    data = comparison.as_dict()
    assert data["baseline"] == "paper"
    assert data["curves"]["longer"]["runtime_ns"] == pytest.approx([2500, 2500, 12_615])
    json.dumps(data)  # serialisable as it is (no numpy scalars)


def test_change_text_of_large_ratios_and_infinities():
    assert Change("bytes", "bytes", 1e9, 4.0).text() == "bytes: 1 GB → 4 B (×4e-09)"
    assert Change("x", "count", 39, 0).text() == "x: 39 → 0 (-100.0%)"
    inf = Change("1% G tolerance", "ns/B", math.inf, math.inf)
    assert inf.text() == "1% G tolerance: ∞ (unchanged)" and not inf.significant


def test_bad_comparisons_are_input_errors():
    with pytest.raises(InputError, match="at least two runs"):
        compare_runs([paper_example()], PARAMS)
    with pytest.raises(InputError, match="given twice"):
        compare_runs([paper_example(), paper_example()], PARAMS, names=["a", "a"])
    with pytest.raises(InputError, match="levels"):
        compare_runs([paper_example(), longer_example()], PARAMS, levels=[0.0])


def test_cli_compare_json_and_html(tmp_path):
    a, b = tmp_path / "paper.npz", tmp_path / "longer.npz"
    paper_example().save(a)
    longer_example().save(b)
    args = ["--L", "0.5us", "--o", "0", "--G", "5ns/B", "--S", "1GiB", "--nic", "overlap"]
    html = tmp_path / "cmp.html"
    out = llamp("compare", str(a), str(b), *args, "--json", "--html", str(html), home=tmp_path)
    data = json.loads(out.stdout)
    assert [r["name"] for r in data["runs"]] == ["paper", "longer"]  # graph names, not paths
    assert [r["predict"]["runtime_ns"] for r in data["runs"]] == pytest.approx([1615, 2615])
    assert data["summary"][0].startswith("longer vs paper: runtime T: 1.615 µs → 2.615 µs")
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "paper: 1 critical latencies in [0 ns, 10.5 µs]" in page
    # the JSON, the HTML and the library give one result: the exact curves of compare_runs
    library = compare_runs([paper_example(), longer_example()], PARAMS, names=["paper", "longer"])
    assert data["curves"] == json.loads(json.dumps(library.as_dict()["curves"]))
    text = llamp("compare", str(a), str(b), *args, home=tmp_path).stdout
    assert "what changed:" in text and "ranks: 2 → 3" in text
    assert "T(L) of longer: 1 critical latencies in [0 ns, 10.5 µs]" in text
    gone = llamp("compare", str(a), str(b), "--points", "5", home=tmp_path, check=False)
    assert gone.returncode == 2 and "compare --points is gone" in gone.stderr
    assert "llamp sweep" in gone.stderr and "Traceback" not in gone.stderr
    bad = llamp("compare", str(a), home=tmp_path, check=False)
    assert bad.returncode == 2 and "at least two runs" in bad.stderr
    bad = llamp(
        "compare", str(a), str(b), "--html", str(tmp_path / "x.pdf"), home=tmp_path, check=False
    )
    assert bad.returncode == 2 and "must end in .html" in bad.stderr
    missing = llamp("compare", str(a), "no-such-run", home=tmp_path, check=False)
    assert missing.returncode == 2 and "no-such-run" in missing.stderr
    assert "Traceback" not in missing.stderr
