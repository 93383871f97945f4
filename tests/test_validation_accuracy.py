"""What ``llamp validate`` and ``llamp overhead`` report beside RRMSE, on synthetic measured series
(docs/architecture.md §Injector and validation): the mean's 95 % interval and the stopping rule,
the offset at ΔL = 0, the least-squares slope error with its standard error, the per-call cost
charged in the model, what a calibration was measured on and its residual per parameter.
No MPI: the injected, traced and plain runs are replaced by recorded numbers.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from llamp.errors import InputError
from llamp.graph import CALC, ExecutionGraph
from llamp.injector import overhead as overhead_mod
from llamp.injector import validate as validate_mod
from llamp.injector.accuracy import (
    interval_converged,
    mean_interval,
    offset_at_zero,
    slope_error,
)
from llamp.injector.calibrate import NO_SWITCH_S, PingPongSample, fit_loggp, measured_on
from llamp.injector.inject import InjectedRun
from llamp.injector.overhead import ModeRun, Overhead, charge_call_cost, charged_calcs
from llamp.injector.profiles import param_sources, save_profile
from llamp.injector.validate import Validation, ValidationPoint
from llamp.params import LogGPS

SEND, RECV = 1, 2


# --------------------------------------------------------------------------- intervals
def test_mean_interval_by_hand():
    # 1, 2, 3: mean 2, sd 1, t(0.975, 2 dof) = 4.3027 → half-width 4.3027 / √3
    got = mean_interval([1.0, 2.0, 3.0])
    assert got.mean == 2.0 and got.n == 3
    assert got.half_width == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert got.relative_width == pytest.approx(2 * got.half_width / 2.0)
    one = mean_interval([5.0])
    assert one.mean == 5.0 and math.isnan(one.half_width) and one.relative_width == math.inf


def test_stopping_rule():
    tight = [100.0, 100.1, 99.9]  # interval ≈ ±0.25 %: full width 0.5 % < 1 %
    wide = [100.0, 110.0, 90.0]
    assert not interval_converged(tight[:2], min_runs=3)  # too few runs
    assert interval_converged(tight, width=0.01, min_runs=3)
    assert not interval_converged(tight, width=0.004, min_runs=3)
    assert not interval_converged(wide, width=0.01, min_runs=3, max_runs=10)
    assert interval_converged(wide * 4, width=0.01, min_runs=3, max_runs=10)  # 12 ≥ max


# --------------------------------------------------------------------------- offset and slope
def test_offset_at_zero_against_the_interval():
    runs = [207.0e6, 207.8e6, 207.4e6]  # 95 % interval ± 0.99 ms
    off = offset_at_zero(runs, 199.9e6)
    assert off.measured_ns == pytest.approx(np.mean(runs))
    assert off.offset_ns == pytest.approx(np.mean(runs) - 199.9e6)
    assert off.relative == pytest.approx(off.offset_ns / np.mean(runs))
    assert off.half_width_ns == pytest.approx(mean_interval(runs).half_width)
    assert off.half_width_ns == pytest.approx(4.302653 * 0.4e6 / math.sqrt(3), rel=1e-6)
    assert off.within_noise is False  # 7.5 ms off
    inside = offset_at_zero(runs, np.mean(runs) + 0.5 * off.half_width_ns)
    assert inside.within_noise is True
    assert offset_at_zero([1.0e6], 0.9e6).within_noise is None
    d = offset_at_zero(runs, 199.9e6).as_dict()
    assert set(d) >= {"offset_ns", "offset_relative", "ci95_half_width_ns", "within_noise"}


def test_slope_is_the_least_squares_fit_of_every_run():
    rng = np.random.default_rng(7)
    deltas = [0.0, 5e3, 1e4, 2e4, 5e4, 1e5]
    runs = [list(1e8 + 3000.0 * d + rng.normal(0, 2e5, 4)) for d in deltas]
    predicted = [1e8 + 2000.0 * d + 5e5 for d in deltas]
    s = slope_error(deltas, runs, predicted)
    ref = stats.linregress(np.repeat(deltas, 4), np.concatenate(runs))
    assert s.measured == pytest.approx(ref.slope)
    assert s.standard_error == pytest.approx(ref.stderr)
    assert s.predicted == pytest.approx(2000.0)
    assert s.error == pytest.approx(2000.0 - ref.slope)
    assert s.relative == pytest.approx((2000.0 - ref.slope) / ref.slope)
    assert s.runs == 24 and s.within_noise is False
    good = slope_error(deltas, runs, [1e8 + ref.slope * d for d in deltas])
    assert good.within_noise is True and good.error == pytest.approx(0.0, abs=1e-6)


def test_slope_without_residual_freedom_has_no_standard_error():
    s = slope_error([0.0, 1e4], [[1e6], [1.5e6]], [1e6, 1.4e6])
    assert s.measured == pytest.approx(50.0) and s.predicted == pytest.approx(40.0)
    assert math.isnan(s.standard_error) and s.within_noise is None
    with pytest.raises(ValueError):
        slope_error([0.0, 0.0], [[1.0], [2.0]], [1.0, 2.0])


def _result(**kw) -> Validation:
    points = (
        ValidationPoint(0.0, 1.00e9, 100.0, (1.02e9, 0.98e9, 1.00e9), (0.5, 0.6, 0.4)),
        ValidationPoint(5e4, 1.05e9, 100.0, (1.06e9, 1.04e9, 1.08e9), (0.5, 0.5, 0.5)),
    )
    return Validation(
        run="app",
        command=("mpirun", "-n", "2", "./app"),
        params=LogGPS(L=0.0, o=150.0, G=0.2, S=4096),
        points=points,
        repeat=3,
        **kw,
    )


def test_validation_reports_offset_and_slope_in_text_and_json():
    result = _result(
        call_cost_ns=120.0,
        param_sources={"L": "--L 0ns", "o": "network here (llamp calibrate …)"},
        max_repeat=10,
        traced_runtime_ns=0.99e9,
    )
    data = json.loads(json.dumps(result.as_dict()))
    assert data["rrmse"] == pytest.approx(result.rrmse)  # the existing keys stay
    assert data["offset_at_zero"]["offset_ns"] == pytest.approx(0.0, abs=1e-3)
    assert data["offset_at_zero"]["within_noise"] is True
    # measured: means 1.00 → 1.06 s over 50 µs = 1200; predicted 1.00 → 1.05 s = 1000
    assert data["slope"]["measured"] == pytest.approx(1200.0)
    assert data["slope"]["predicted"] == pytest.approx(1000.0)
    assert data["slope"]["error"] == pytest.approx(-200.0)
    assert data["call_cost_ns"] == 120.0 and data["parameter_sources"]["L"] == "--L 0ns"
    assert data["stopping"] == {"ci95_width": 0.01, "max_repeat": 10}
    assert data["points"][0]["loadavg"] == [0.5, 0.6, 0.4]
    assert Validation.from_dict(data) == result
    text = result.summary()
    assert "offset at ΔL = 0: measured − predicted = +0 ns" in text
    assert (
        "slope dT/dΔL (least squares over the runs): measured 1200" in text
        and "predicted 1000" in text
    )
    assert "parameters from: L: --L 0ns; o: network here" in text
    assert "ΔL = 0 ns stopped at 3 runs with its mean's 95% interval 9.94% wide" in text
    assert "before each traced MPI call" in text


def test_validation_without_zero_or_second_delta():
    one = Validation("a", (), LogGPS(), (ValidationPoint(1e4, 1e6, 0.0, (1e6,)),), 1)
    assert one.offset is None and one.slope is None
    assert one.as_dict()["offset_at_zero"] is None and "offset" not in one.summary()


# --------------------------------------------------------------------------- measurement rounds
def test_measure_repeats_only_the_deltas_not_yet_known(monkeypatch):
    """ΔL = 0 is steady (stops at --repeat), ΔL = 10 µs scatters by 10 % (runs to the maximum)."""
    counts = {0.0: 0, 1e4: 0}

    def fake_run(command, delta, **kw):
        counts[delta] += 1
        k = counts[delta]
        runtime = 1e8 if delta == 0 else 1e8 * (1.0 + 0.1 * (-1) ** k)
        return InjectedRun(delta, runtime, (runtime,), {}, 0.1, 0.0, 0.7, ())

    monkeypatch.setattr(validate_mod, "run_injected", fake_run)
    runs = validate_mod.measure(["app"], [0.0, 1e4], repeat=3, max_repeat=7, base=None)
    assert len(runs[0.0]) == 3 and len(runs[1e4]) == 7
    assert all(r.loadavg == 0.7 for r in runs[1e4])
    fixed = validate_mod.measure(["app"], [0.0, 1e4], repeat=2, base=None)
    assert [len(v) for v in fixed.values()] == [2, 2]  # no --max-repeat: exactly --repeat
    with pytest.raises(InputError):
        validate_mod.measure(["app"], [0.0], repeat=3, max_repeat=2, base=None)


# --------------------------------------------------------------------------- per-call cost
def _two_ranks_with_a_join() -> ExecutionGraph:
    """Rank 0: c0 → send → c1 → send (round 1) → join → send (round 2) → c4 (final).
    Rank 1: c5 → recv → c6 → recv → join → recv → c8 (final). t_trace of a join = its round's."""
    kind = [CALC, SEND, CALC, SEND, CALC, SEND, CALC, CALC, RECV, CALC, RECV, CALC, RECV, CALC]
    cost = [10, 0, 5, 0, 0, 0, 7, 3, 0, 4, 0, 0, 0, 2]
    t = [0, 10, 10, 15, 15, 15, 15, 0, 3, 3, 7, 7, 7, 7]
    rank = [0] * 7 + [1] * 7
    local = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
    local += [(a + 7, b + 7) for a, b in local]
    messages = [(1, 8), (3, 10), (5, 12)]
    edges = local + messages
    return ExecutionGraph.from_arrays(
        2,
        rank=rank,
        kind=kind,
        cost_ns=cost,
        size=[0 if k == CALC else 8 for k in kind],
        peer=[0 if k == CALC else (1 - r) for k, r in zip(kind, rank, strict=True)],
        tag=[0] * 14,
        edge_src=[a for a, _ in edges],
        edge_dst=[b for _, b in edges],
        edge_kind=[0] * len(local) + [2] * len(messages),
        t_trace_ns=[float(x) for x in t],
    )


def test_call_cost_is_a_calc_before_each_call():
    g = _two_ranks_with_a_join()
    # before each call: c0, c2 (rank 0), c7, c9 (rank 1); joins 4, 11 and finals 6, 13 not
    assert charged_calcs(g).tolist() == [0, 2, 7, 9]
    charged = charge_call_cost(g, 100.0)
    assert charged.cost_ns.tolist() == [110, 0, 105, 0, 0, 0, 7, 103, 0, 104, 0, 0, 0, 2]
    assert charged.meta["call_cost_calcs"] == 4 and g.cost_ns[0] == 10  # original untouched
    assert charge_call_cost(g, -8.0).cost_ns[[0, 2, 7, 9]].tolist() == [2, 0, 0, 0]
    with pytest.raises(InputError):
        charge_call_cost(g, math.inf)


def test_overhead_per_call_costs():
    runs = [ModeRun("plain", w, math.nan, 0.1, 0.0) for w in (1.000e9, 1.002e9, 0.998e9)]
    runs += [ModeRun("traced", w, w - 2e8, 0.2, 0.0) for w in (1.010e9, 1.012e9, 1.008e9)]
    runs += [ModeRun("loaded", w, w - 2e8, 0.3, 0.0) for w in (1.015e9, 1.017e9, 1.013e9)]
    runs += [ModeRun("injected", w, w - 2e8, 0.3, 0.0) for w in (1.020e9, 1.022e9, 1.018e9)]
    o = Overhead(("app",), tuple(runs), calls=10_000, width=0.01, max_runs=30)
    inj, tr, charge, delay_path = o.costs
    assert delay_path.per_call_ns == pytest.approx(5e6 / 1e4)  # 5 ms of delay path
    assert inj.per_call_ns == pytest.approx(2e7 / 1e4)  # 20 ms over 10 000 calls
    assert tr.per_call_ns == pytest.approx(1e7 / 1e4)
    assert charge.measure == "span" and o.charge_ns == pytest.approx(1e7 / 1e4)
    h = math.hypot(
        mean_interval([1.020e9, 1.022e9, 1.018e9]).half_width,
        mean_interval([1.000e9, 1.002e9, 0.998e9]).half_width,
    )
    assert inj.half_width_ns == pytest.approx(h)
    data = json.loads(json.dumps(o.as_dict(), default=str))
    assert data["modes"]["plain"]["span_mean_ns"] is None
    assert data["charge_per_call_ns"] == pytest.approx(1000.0)
    assert data["charge_distinguishable"] is True


def test_overhead_charges_nothing_it_cannot_tell_from_zero():
    """Runs scattering by ±2 % around spans 1 ms apart per 10 000 calls (100 ns per call):
    the difference is inside its interval, the charge 0, the measurement kept."""
    runs = [ModeRun("traced", w, w, 0.2, 0.0) for w in (1.00e9, 1.02e9, 0.98e9)]
    runs += [ModeRun("injected", w, w, 0.3, 0.0) for w in (1.001e9, 1.021e9, 0.981e9)]
    runs += [ModeRun(m, 1e9, 1e9, 0.3, 0.0) for m in ("plain", "loaded") for _ in range(3)]
    o = Overhead(("app",), tuple(runs), calls=10_000, width=0.01, max_runs=30)
    assert o.costs[2].per_call_ns == pytest.approx(100.0)
    assert o.costs[2].per_call_half_width_ns > 100.0
    assert not o.distinguishable and o.charge_ns == 0.0
    data = json.loads(json.dumps(o.as_dict(), default=str))
    assert data["charge_per_call_ns"] == 0.0 and data["charge_distinguishable"] is False
    assert data["costs"][2]["per_call_ns"] == pytest.approx(100.0)


def test_measure_overhead_rounds_until_every_mode_is_known(monkeypatch, tmp_path):
    import llamp.ingest.tracing as trace_mod

    seen = {"plain": 0, "traced": 0, "loaded": 0, "injected": 0}

    def plain(command, **kw):
        seen["plain"] += 1
        return ModeRun("plain", 1e9 * (1 + 0.2 * (-1) ** seen["plain"]), math.nan, 0.1, 0.0)

    def traced(command, directory, **kw):
        seen["traced"] += 1
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        files = []
        for rank, calls in ((0, 5), (1, 7)):
            f = directory / f"pmpi-trace-rank-{rank}.txt"
            body = "".join(f"MPI_Barrier:{100 + k}:{101 + k}\n" for k in range(calls))
            f.write_text(f"MPI_Init:0:10\n{body}MPI_Finalize:1010:1011\n")
            files.append(f)
        return type("T", (), {"files": files})()

    def injected(command, delta, passive=False, **kw):
        seen["loaded" if passive else "injected"] += 1
        return InjectedRun(delta, 1.01e9, (1.01e9,), {}, 1.02, 0.0, 0.3, ())

    monkeypatch.setattr(overhead_mod, "_run_plain", plain)
    monkeypatch.setattr(trace_mod, "run_traced", traced)
    monkeypatch.setattr(overhead_mod, "run_injected", injected)
    monkeypatch.setattr(overhead_mod, "build_library", lambda *a, **k: None)
    monkeypatch.setattr(trace_mod, "build_tracer", lambda *a, **k: None)

    class Clock:  # every traced run takes 0.5 s of wall time
        t = 0.0

        def perf_counter(self):
            self.t += 0.5
            return self.t

    monkeypatch.setattr(overhead_mod, "time", Clock())
    o = overhead_mod.measure_overhead(["app"], min_runs=3, max_runs=6)
    assert seen == {
        "plain": 6,
        "traced": 3,
        "loaded": 3,
        "injected": 3,
    }  # the plain runs scatter by 20 %
    assert o.calls == 7  # the busiest rank's calls, Init and Finalize left out
    assert o.values("traced", "span") == [1e6] * 3  # MPI_Init end 10 µs → Finalize 1010 µs
    assert o.values("traced") == [0.5e9] * 3
    assert any("plain: stopped at 6 runs" in n for n in o.notes)
    assert o.charge_ns == pytest.approx((1.01e9 - 1e6) / 7)  # both spans exact: a real charge
    assert not any("not distinguishable" in n for n in o.notes)


# --------------------------------------------------------------------------- calibration
def test_calibration_residual_per_parameter():
    L, o, G, S = 300.0, 100.0, 0.1, 4096
    from llamp.injector.calibrate import model_one_way_ns

    sizes = [1 << k for k in range(20)]
    samples = [
        PingPongSample(s, 2 * float(model_one_way_ns([s], L, o, G, S)[0]), o, o) for s in sizes
    ]
    fit = fit_loggp(samples, {1: 1000.0, 16: 2500.0, 64: 7300.0})
    res = fit.parameter_residuals()
    assert set(res) == {"L", "o", "G", "S", "g"}
    for name in ("L", "o", "G", "S"):
        assert res[name]["rms_residual_pct"] == pytest.approx(0.0, abs=1e-9), name
    assert res["L"]["measurements"] == 9  # 1 … 256 B
    # g = (7300 − 1000) / 63 = 100; the 16-message burst lies 0 ns off that line
    assert fit.g_ns == pytest.approx(100.0)
    assert res["g"]["rms_residual_pct"] == pytest.approx(0.0, abs=1e-9)
    eager = fit_loggp(samples[:8])
    assert eager.S_bytes is None
    assert math.isnan(eager.parameter_residuals()["S"]["rms_residual_pct"])
    assert eager.params().S == NO_SWITCH_S


def test_measured_on_records_hosts_transport_and_mpi(tmp_path, monkeypatch):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 slots=1\nnode2 slots=1\n")
    monkeypatch.setenv("OMPI_MCA_btl", "self,vader")
    on = measured_on(
        ["mpirun", "-n", "2", "--hostfile", str(hostfile), "--mca", "pml", "ob1"], "Open MPI 4"
    )
    assert on["mpi"] == "Open MPI 4"
    assert on["hostfile"]["path"] == str(hostfile.resolve())
    assert len(on["hostfile"]["sha256"]) == 64
    assert on["transport_selection"] == {"btl": "self,vader", "pml": "ob1"}
    assert on["transport"] == "selected btl=self,vader, pml=ob1"
    monkeypatch.delenv("OMPI_MCA_btl")
    local = measured_on(["mpirun", "-n", "2"])
    assert local["transport"].startswith("one node") and local["hostfile"] is None
    assert measured_on(["mpirun", "--host", "a,b"])["transport"].startswith("several hosts")


def test_parameter_sources(tmp_path):
    details = {"measured_on": {"mpi": "Open MPI 4.1", "transport": "one node: shm"}}
    save_profile(
        "here",
        LogGPS(L=0.0, o=80.0, G=0.1, S=2048),
        source="llamp calibrate -- mpirun -n 2",
        details=details,
        home=tmp_path,
    )
    got = param_sources("here", given={"L": "500ns"}, home=tmp_path)
    assert got["L"] == "--L 500ns"
    assert got["o"].startswith("network here (llamp calibrate -- mpirun -n 2 on ")
    assert got["o"].endswith("; Open MPI 4.1; one node: shm)")
    assert param_sources(None, given={"G": "0.2"})["L"] == "default"


def test_benchmark_table_shows_protocol_offset_and_slope():

    from benchmarks.validation import PROTOCOL, Application, markdown
    from llamp.injector.validate import MODELS

    v = dataclasses.replace(
        _result(call_cost_ns=12.0),
        models={m.name: (1.00e9, 1.05e9) for m in MODELS},
        load={"other_load_cores_mean": 0.05},
    )
    calibration = {
        "L_ns": 0.0, "o_ns": 70.0, "G_ns_per_byte": 0.07, "S_bytes": 2048, "g_ns": 49.0,
        "parameter_residuals": {"L": {"rms_residual_pct": 1.25}, "S": {"rms_residual_pct": math.nan}},
        "measured_on": {"mpi": "Open MPI 4.1", "transport": "one node"},
    }  # fmt: skip
    app = Application("halo-8k-2", "halo 8 KiB", 2, ("./halo",), "benchmarks/apps/halo.c")
    text = markdown(calibration, [(app, v)], "python -m benchmarks.validation")
    assert PROTOCOL in text and "L 1.2 %, S –" in text and "Open MPI 4.1, one node" in text
    row = next(line for line in text.splitlines() if line.startswith("| halo 8 KiB | 2 |"))
    assert "| 3–3 | 0.05 | 12 ns | +0.00 ms (± 49.68), +0.0 % | 1000 vs 1200 ± 327 |" in row
    assert "| 0 µs | 1000.000 ± 20.000 ms | ± 49.683 ms (9.94 %) | 3 | 0.40–0.60 |" in text
    assert "Applications: halo 8 KiB: benchmarks/apps/halo.c." in text
    per_model = [line for line in text.splitlines() if line.startswith("| halo 8 KiB | 2 | ")][1:]
    assert len(per_model) == len(MODELS)
    assert per_model[6] == (
        "| halo 8 KiB | 2 | async/serial/schedule/handshake | 0.7 % | +0.00 ms (± 49.68), +0.0 % "
        "| 1000 vs 1200 ± 327 |"
    )


def test_new_fields_survive_the_store(tmp_path):
    from llamp.ingest import read
    from llamp.injector.validate import load_validations, store_validation

    graph = read(Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2")
    result = _result(call_cost_ns=-40.0, param_sources={"L": "default"}, max_repeat=9)
    result = dataclasses.replace(result, run="sweep3d")
    store_validation(result, graph=graph, store_uri=str(tmp_path / "store"))
    [(_, found)] = load_validations(str(tmp_path / "store"), run="sweep3d")
    assert found.call_cost_ns == -40.0 and found.param_sources == {"L": "default"}
    assert found.points[0].loadavg == (0.5, 0.6, 0.4) and found.max_repeat == 9
    assert found.slope.measured == pytest.approx(1200.0)


# --------------------------------------------------------------------------- every model
def test_models_compared_include_loggopsims_schedule_order():
    from llamp.injector.validate import MODELS

    names = [m.name for m in MODELS]
    assert names == [
        "async/overlap",
        "async/serial",
        "wait/overlap",
        "wait/serial",
        "async/overlap/schedule/handshake",
        "async/overlap/schedule/handshake/rescheduled",
        "async/serial/schedule/handshake",
        "async/serial/schedule/handshake/rescheduled",
        "async/overlap/schedule/polled",
        "async/overlap/schedule/polled/rescheduled",
        "async/serial/schedule/polled",
        "async/serial/schedule/polled/rescheduled",
        "async/overlap/schedule/loggopsim",
        "async/overlap/schedule/loggopsim/rescheduled",
        "async/serial/schedule/loggopsim",
        "async/serial/schedule/loggopsim/rescheduled",
    ]
    given = LogGPS(L=500.0, o=80.0, G=0.1, S=2048, order="schedule", rendezvous="loggopsim")
    program = MODELS[1].applied(given)  # the program-order models stay program-order
    assert (program.order, program.rendezvous, program.nic) == ("program", "handshake", "serial")
    schedule = MODELS[6].applied(LogGPS(L=500.0, o=80.0, G=0.1, S=2048, progress="wait"))
    assert (schedule.progress, schedule.nic, schedule.order, schedule.rendezvous) == (
        "async",
        "serial",
        "schedule",
        "handshake",
    )
    assert MODELS[7].reschedule and not MODELS[6].reschedule
    assert schedule.schedule_at == (500.0, 80.0, 0.1, 0.0)  # one order, taken at ΔL = 0


def test_schedule_model_predicts_through_the_validation_sweep():
    """The schedule order at ΔL = 0 is the schedule pass's T; around it one fixed order."""
    from llamp.ingest import read
    from llamp.injector.validate import MODELS, predict_deltas
    from llamp.lp.schedule import schedule

    graph = read(Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2")
    base = LogGPS(L=0.0, o=150.0, G=0.2, S=4096)
    model = MODELS[10].applied(base)  # LogGOPSim's rendezvous and NIC
    frame = predict_deltas(graph, model, (0.0, 1e4, 5e4), engine="graph")
    T = frame["runtime_ns"].to_numpy()
    assert T[0] == pytest.approx(schedule(graph, model).runtime, rel=1e-9)
    assert np.all(np.diff(T) > 0)
    again = MODELS[6].applied(base)  # each ΔL in its own schedule pass's order
    T_own = predict_deltas(graph, again, (0.0, 1e4, 5e4), engine="graph", reschedule=True)
    for d, t in zip((0.0, 1e4, 5e4), T_own["runtime_ns"], strict=True):
        assert t == pytest.approx(schedule(graph, again.with_(L=d).rescheduled()).runtime, rel=1e-9)


def test_offset_and_slope_error_per_model():
    """Each model against the same runs: its own offset at ΔL = 0 and slope error, in the
    text table and the JSON."""
    result = dataclasses.replace(
        _result(),
        models={
            "async/serial": (1.00e9, 1.05e9),  # offset 0, slope 1000 (measured 1200)
            "async/serial/schedule/loggopsim": (0.98e9, 1.04e9),  # +20 ms, slope 1200
        },
    )
    offsets, slopes = result.offset_by_model(), result.slope_by_model()
    assert offsets["async/serial"].offset_ns == pytest.approx(0.0, abs=1e-3)
    assert offsets["async/serial/schedule/loggopsim"].offset_ns == pytest.approx(2e7)
    assert slopes["async/serial"].error == pytest.approx(-200.0)
    assert slopes["async/serial/schedule/loggopsim"].error == pytest.approx(0.0, abs=1e-6)
    data = json.loads(json.dumps(result.as_dict()))["models"]["async/serial/schedule/loggopsim"]
    assert data["offset_at_zero"]["offset_ns"] == pytest.approx(2e7)
    assert data["slope"]["predicted"] == pytest.approx(1200.0)
    assert data["rrmse"] == pytest.approx(
        result.rrmse_by_model()["async/serial/schedule/loggopsim"]
    )
    text = result.summary()
    assert "by model (same runs; measured dT/dΔL 1200 ± " in text
    row = next(line for line in text.splitlines() if "schedule/loggopsim" in line)
    assert "+20 ms (+2.00%)" in row and "1200" in row
    assert "-200 (-16.7%)" in next(
        line for line in text.splitlines() if line.lstrip().startswith("async/serial ")
    )
    assert Validation.from_dict(json.loads(json.dumps(result.as_dict()))).models == result.models


def test_per_model_diagnosis_needs_zero_and_two_deltas():
    one = Validation(
        "a", (), LogGPS(), (ValidationPoint(1e4, 1e6, 0.0, (1e6,)),), 1, models={"x/y": (1e6,)}
    )
    assert one.offset_by_model() == {} and one.slope_by_model() == {}
    assert one.as_dict()["models"]["x/y"] == {
        "predicted_ns": [1e6],
        "rrmse": 0.0,
        "offset_at_zero": None,
        "slope": None,
    }


def test_a_stored_validation_keeps_its_order_and_one_stored_before_reads_as_the_program_order():
    schedule = _result()
    assert schedule.params.order == "schedule"  # the default
    again = Validation.from_dict(schedule.as_dict())
    assert (again.params.order, again.params.rendezvous) == ("schedule", "polled")  # default
    old = schedule.as_dict()
    old["params"]["rendezvous"] = "loggopsim"
    assert Validation.from_dict(old).params.rendezvous == "loggopsim"
    for key in ("order", "rendezvous"):
        del old["params"][key]
    before = Validation.from_dict(old)
    assert (before.params.order, before.params.rendezvous) == ("program", "handshake")


# --------------------------------------------------------------------------- several traces
def test_several_traced_runs_average_each_calc():
    from llamp.injector.validate import average_compute, trace_directory, traces_note

    a = _two_ranks_with_a_join()
    b = dataclasses.replace(a, cost_ns=a.cost_ns * 3.0)
    mean, averaged = average_compute([a, b])
    assert averaged and mean.cost_ns.tolist() == (a.cost_ns * 2.0).tolist()
    assert mean.meta["compute_averaged_over_runs"] == 2 and a.cost_ns[0] == 10
    # a run whose communication differs (another message size): the first, unchanged
    other = dataclasses.replace(b, size=np.where(b.size > 0, 16, 0))
    first, averaged = average_compute([a, other])
    assert first is a and not averaged
    assert average_compute([a]) == (a, False)
    assert trace_directory(Path("/x/trace"), 0) == Path("/x/trace")
    assert trace_directory(Path("/x/trace"), 2) == Path("/x/trace-3")
    note = traces_note([27.0e6, 31.0e6, 32.0e6], True)
    assert note == (
        "3 traced runs at ΔL = 0 took 27 ms … 32 ms (mean 30 ms); the prediction is the mean "
        "of each run's"
    )
    assert "the program depends on timing" in traces_note([1.0e6, 2.0e6], False)


#: Two ranks compute, then exchange a message each way: the exchange waits for the slower.
EXCHANGE = """num_ranks 2
rank 0 {{
c: calc {0}
s: send 8b to 1 tag 1
r: recv 8b from 1 tag 2
s requires c
r requires c
}}
rank 1 {{
c: calc {1}
s: send 8b to 0 tag 2
r: recv 8b from 0 tag 1
s requires c
r requires c
}}
"""


def test_the_prediction_is_the_mean_of_the_traced_runs_predictions():
    """Traced run A: rank 0 computes 10 µs, rank 1 2 µs; run B the other way round. Each run
    takes 10 µs and the exchange, and so does each injected run drawn like them; the calcs'
    mean durations (6 µs on both ranks) would predict 6 µs and the exchange, which no run
    takes (T is convex in the durations). The mean of the two predictions is 10 µs and the
    exchange at every ΔL, and needs no common structure."""
    from llamp.ingest.goal import parse_goal_text
    from llamp.injector.validate import (
        average_compute,
        mean_models,
        mean_prediction,
        predict_deltas,
        predict_models,
    )

    a = parse_goal_text(EXCHANGE.format(10000, 2000), name="a.goal")
    b = parse_goal_text(EXCHANGE.format(2000, 10000), name="b.goal")
    params = LogGPS(L=1000.0, o=100.0, G=0.0, g=0.0)
    deltas = [0.0, 5000.0]
    exchange = [2 * 100.0 + 1000.0 + d for d in deltas]  # o + L + o, and ΔL
    each = [predict_deltas(g, params, deltas, engine="graph", reschedule=True) for g in (a, b)]
    for frame in each:
        assert frame["runtime_ns"].tolist() == pytest.approx([10000 + x for x in exchange])
    mean = mean_prediction(each)
    assert mean["runtime_ns"].tolist() == pytest.approx([10000 + x for x in exchange])
    assert mean["lambda_L"].tolist() == pytest.approx([1.0, 1.0])
    assert mean["delta_L_ns"].tolist() == deltas
    averaged, same = average_compute([a, b])
    assert same
    short = predict_deltas(averaged, params, deltas, engine="graph", reschedule=True)
    assert short["runtime_ns"].tolist() == pytest.approx([6000 + x for x in exchange])
    models = mean_models([predict_models(g, params, deltas) for g in (a, b)])
    assert models["async/overlap"] == pytest.approx([10000 + x for x in exchange])
    assert mean_prediction(each[:1]) is each[0]


def test_the_model_is_held_against_the_traced_runs_themselves():
    """Before any latency is injected: each traced run's prediction at ΔL = 0 against the span
    that run took (the NPB CG of validation run 11: 25.4 ms predicted, 27.4 ms taken)."""
    import pandas as pd

    from llamp.injector.validate import self_prediction_note

    def frame(t0: float) -> pd.DataFrame:
        return pd.DataFrame({"delta_L_ns": [0.0, 5e3], "runtime_ns": [t0, t0 + 9e6]})

    note = self_prediction_note([frame(25.0e6), frame(26.0e6)], [27.0e6, 28.0e6])
    assert note == (
        "the model against the traced runs themselves at ΔL = 0: predicted 25.5 ms, they took "
        "27.5 ms (-7.3 %; per run -7.4 … -7.1 %): what the model misses before any latency is "
        "injected"
    )
    assert "per run" not in self_prediction_note([frame(25.0e6)], [25.0e6])
    no_zero = pd.DataFrame({"delta_L_ns": [5e3], "runtime_ns": [1e6]})
    assert self_prediction_note([no_zero], [1e6]) is None
    assert self_prediction_note([frame(1e6)], [math.nan]) is None


def test_traced_runs_are_interleaved_with_the_rounds_of_injected_runs(monkeypatch, tmp_path):
    """The first traced run comes before any injected run, the k-th before round k (the
    machine's speed drifts: the traced runs sample it over the measurement as the injected
    runs do); traced runs left after the last round follow it. The prediction is the mean of
    the four runs' predictions."""
    import llamp.ingest as ingest_mod
    import llamp.ingest.tracing as trace_mod

    events: list[str] = []
    graph = _two_ranks_with_a_join()

    def traced(command, directory, **kw):
        k = sum(e.startswith("trace") for e in events)
        events.append(f"trace {k}")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        f = directory / "pmpi-trace-rank-0.txt"
        f.write_text(f"MPI_Init:0:10\nMPI_Finalize:{1010 + k}:{1011 + k}\n")
        mpi = type("M", (), {"label": "fake MPI"})()
        return type("T", (), {"files": [f], "directory": directory, "mpi": mpi})()

    def read(directory, **kw):
        k = int(events[-1].split()[1])
        return dataclasses.replace(graph, cost_ns=graph.cost_ns * (k + 1))

    def injected(command, delta, **kw):
        events.append(f"run {delta:g}")
        zero = ("bytes_sent", "collectives", "collective_messages", "passthrough_calls")
        counters = dict.fromkeys(zero, 0) | {"messages_sent": 3, "header_mismatches": 0}
        return InjectedRun(delta, 1e5, (1e5,), counters, 0.1, 0.0, 0.3, ())

    monkeypatch.setattr(trace_mod, "run_traced", traced)
    monkeypatch.setattr(ingest_mod, "read", read)
    monkeypatch.setattr(validate_mod, "run_injected", injected)
    result, _ = validate_mod.run_validation(
        ["app"], [0.0, 1e4], params=LogGPS(), repeat=2, traces=4, store=False, trace_dir=tmp_path
    )
    rounds = [e for e in events if not e.startswith("run")]
    assert rounds == ["trace 0", "trace 1", "trace 2", "trace 3"]
    # two rounds (--repeat 2, no --max-repeat) of both ΔL: traces 0, 1 before them, 2 and 3
    # (left over) after the last
    kinds = [e.split()[0] for e in events]
    assert kinds == ["trace", "run", "run", "trace", "run", "run", "trace", "trace"]
    assert result.traced_runtime_ns == pytest.approx(np.mean([1000e3, 1001e3, 1002e3, 1003e3]))
    assert any("4 traced runs" in n and "the mean of each run's" in n for n in result.notes)
    assert any(n.startswith("the model against the traced runs themselves") for n in result.notes)
    # each ΔL in the order of its own schedule pass (the default), as `llamp predict` there
    from llamp.lp import sweep

    points = [LogGPS().L, LogGPS().L + 1e4]
    own = np.mean(
        [
            sweep(
                dataclasses.replace(graph, cost_ns=graph.cost_ns * (k + 1)),
                LogGPS(),
                points,
                reschedule=True,
            )["runtime_ns"].to_numpy()
            for k in range(4)
        ],
        axis=0,
    )
    assert result.rescheduled and "its own schedule pass" in result.summary()
    assert [p.predicted_ns for p in result.points] == pytest.approx(list(own))
