"""The latency injector (docs/architecture.md §Injector and validation, LLAMP §III-A) and the LogGP calibration.

Without MPI: the calibration fit recovers known L, o, G, S exactly from synthetic ping-pong
data (LogGPS one-way times, docs/model.md §Cost semantics), network profiles round-trip, unit parsing.

With Open MPI (``@pytest.mark.integration``; skipped if ``mpicc`` is absent):

- the library builds warning-free with ``-Wall -Wextra``;
- correctness: every collective (all roots, uneven counts, ``MPI_IN_PLACE``, a
  non-commutative operation, non-blocking variants, a split communicator) and the point-to-point
  corner cases (wildcards, probes, Waitany/Waitsome/Testsome, persistent requests,
  Sendrecv_replace, collectives progressed by Testall) give MPI's results under injection, with
  and without the emulated rendezvous, on 2, 3 and 5 ranks (``llamp-injector-check``);
- timing (LLAMP Fig. 8): a ping-pong round trip grows by 2·ΔL (±10 % or ±2 µs) for ΔL of 10,
  50 and 100 µs; two back-to-back eager sends to a waiting receiver each arrive ΔL after their
  send started and stay about one overhead apart (not ΔL: Fig. 8A, not 8C), and the sender is
  not delayed; a receiver that computes past arrival + ΔL finds its message at once, one that
  waits gets it at send + ΔL;
- ``llamp calibrate`` on a real ping-pong, ``llamp inject`` on a real run.

The machine is shared: timing tests use medians of many iterations and retry a failed
measurement up to three times before failing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from llamp.errors import InputError
from llamp.injector.calibrate import (
    DEFAULT_SIZES,
    NO_SWITCH_S,
    PingPongSample,
    fit_loggp,
    model_one_way_ns,
    parse_bursts,
    parse_pingpong,
)
from llamp.injector.profiles import list_profiles, load_profile, resolve_params, save_profile
from llamp.params import LogGPS

ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _openmpi() -> tuple[str | None, str | None]:
    from llamp.ingest.tracing import TracerError, detect_mpi

    mpicc = shutil.which("mpicc")
    mpirun = shutil.which("mpirun")
    if mpicc is None or mpirun is None:
        return None, None
    try:
        return (mpicc, mpirun) if detect_mpi(mpicc).flavour == "openmpi" else (None, None)
    except TracerError:
        return None, None


MPICC, MPIRUN = _openmpi()
needs_mpi = pytest.mark.skipif(
    MPICC is None,
    reason="no Open MPI mpicc/mpirun on PATH (apt-get install openmpi-bin libopenmpi-dev)",
)
CORES = len(os.sched_getaffinity(0))


def synthetic(L: float, o: float, G: float, S: int = NO_SWITCH_S, sizes=DEFAULT_SIZES):
    """Noise-free ping-pong samples of a LogGPS network."""
    return [
        PingPongSample(
            size=s, rtt_ns=2 * float(model_one_way_ns([s], L, o, G, S)[0]), os_ns=o, or_ns=o
        )
        for s in sizes
    ]


# --------------------------------------------------------------------------- calibration fit
@pytest.mark.parametrize(
    "L, o, G, S",
    [
        (3000.0, 1500.0, 0.018, 256 * 1024),  # the paper's test-bed (§III): IB, S = 256 KB
        (700.0, 250.0, 0.05, 16384),
        (100.0, 50.0, 0.2, 4096),
        (5.0, 80.0, 0.15, 64),
    ],
)
def test_fit_recovers_known_loggps_with_protocol_switch(L, o, G, S):
    fit = fit_loggp(synthetic(L, o, G, S))
    assert fit.L_ns == pytest.approx(L, abs=1e-6)
    assert fit.o_ns == pytest.approx(o)
    assert fit.G_ns_per_byte == pytest.approx(G, rel=1e-9)
    assert fit.S_bytes == S
    assert fit.jump_ns == pytest.approx(2 * o + 2 * L, rel=1e-9)  # rendezvous − eager intercept
    assert np.abs(fit.residuals()["residual_ns"]).max() < 1e-6
    p = fit.params()
    assert (p.L, p.o, p.G, p.S) == (pytest.approx(L), o, pytest.approx(G), S)


def test_fit_without_switch_is_all_eager():
    fit = fit_loggp(synthetic(700.0, 250.0, 0.05))
    assert (fit.L_ns, fit.o_ns, fit.S_bytes) == (pytest.approx(700.0), 250.0, None)
    assert fit.G_ns_per_byte == pytest.approx(0.05)
    assert fit.params().S == NO_SWITCH_S
    assert set(fit.residuals()["protocol"]) == {"eager"}


def test_fit_takes_o_from_send_and_receive_overhead_and_L_from_half_rtt():
    samples = [
        PingPongSample(size=s.size, rtt_ns=s.rtt_ns, os_ns=100.0, or_ns=300.0)
        for s in synthetic(1000.0, 200.0, 0.1)
    ]
    fit = fit_loggp(samples)
    assert (fit.os_ns, fit.or_ns, fit.o_ns) == (100.0, 300.0, 200.0)
    assert fit.L_ns == pytest.approx(1000.0)  # RTT/2 − o_s − o_r


def test_fit_is_robust_to_a_disturbed_large_size():
    samples = synthetic(500.0, 100.0, 0.1, 4096)
    samples[-1] = PingPongSample(samples[-1].size, samples[-1].rtt_ns * 8, 100.0, 100.0)
    fit = fit_loggp(samples)
    assert fit.S_bytes == 4096
    assert fit.G_ns_per_byte == pytest.approx(0.1, rel=1e-6)


def test_calibrations_combine_by_the_median_of_each_size():
    """A calibration taken while the VM ran slow (every size 5× its time) is outvoted by two
    others: the combined fit is theirs, not a mean dragged up by it."""
    from llamp.injector.calibrate import combine

    steady = fit_loggp(synthetic(500.0, 100.0, 0.1, 4096), {64: 20_000.0})
    other = fit_loggp(synthetic(520.0, 110.0, 0.12, 4096), {64: 22_000.0})
    slow = fit_loggp(
        [
            PingPongSample(x.size, x.rtt_ns * 5, x.os_ns * 5, x.or_ns * 5)
            for x in synthetic(500.0, 100.0, 0.1, 4096)
        ],
        {64: 90_000.0},
    )
    assert slow.G_ns_per_byte == pytest.approx(0.5)
    both = combine([steady, slow, other])
    assert both.G_ns_per_byte == pytest.approx(0.12, rel=1e-6)  # per size: the middle value
    assert both.o_ns == pytest.approx(110.0) and both.S_bytes == 4096
    assert both.burst_ns == {64: 22_000.0} and both.measured_on["calibrations"] == 3
    assert combine([steady]) is steady
    with pytest.raises(InputError, match="same message sizes"):
        combine([steady, fit_loggp(synthetic(500.0, 100.0, 0.1, 4096, sizes=DEFAULT_SIZES[:-1]))])
    with pytest.raises(InputError, match="no calibration"):
        combine([])


def test_fit_clamps_a_negative_latency_and_says_so():
    samples = [
        PingPongSample(size=s.size, rtt_ns=s.rtt_ns, os_ns=400.0, or_ns=400.0)
        for s in synthetic(100.0, 200.0, 0.1)
    ]
    fit = fit_loggp(samples)
    assert fit.L_ns == 0.0
    assert any("L set to 0" in w for w in fit.warnings)


def test_fit_rejects_too_few_sizes():
    with pytest.raises(InputError, match="at least 4"):
        fit_loggp(synthetic(1.0, 1.0, 1.0, sizes=(1, 2, 4)))


def test_parse_pingpong_uses_the_lower_quartile():
    text = (
        '{"size": 8, "samples": 9, "rtt_ns": 900, "rtt_q1_ns": 800, "rtt_min_ns": 700, '
        '"rtt_max_ns": 5000, "os_ns": 60, "or_ns": 120}\nnoise line\n'
    )
    (s,) = parse_pingpong(text)
    assert (s.size, s.rtt_ns, s.os_ns, s.or_ns, s.samples, s.rtt_min_ns) == (
        8,
        800.0,
        60.0,
        120.0,
        9,
        700.0,
    )


# --------------------------------------------------------------------------- profiles
def test_profiles_round_trip_and_override(tmp_path):
    params = LogGPS(L=250.0, o=120.0, G=0.16, S=2048)
    path = save_profile("node-a", params, source="test", details={"rms": 1.5}, home=tmp_path)
    assert path == tmp_path / "networks" / "node-a.json"
    loaded = load_profile("node-a", home=tmp_path)
    assert loaded.params == params and loaded.source == "test" and loaded.details == {"rms": 1.5}
    assert resolve_params("node-a", L="1us", home=tmp_path) == params.with_(L=1000.0)
    assert resolve_params(None, L="2us") == LogGPS().with_(L=2000.0)
    save_profile("eager", params.with_(S=NO_SWITCH_S), home=tmp_path)
    assert json.loads((tmp_path / "networks" / "eager.json").read_text())["S_bytes"] is None
    assert load_profile("eager", home=tmp_path).params.S == NO_SWITCH_S
    assert [p.name for p in list_profiles(home=tmp_path)] == ["eager", "node-a"]


def test_profiles_refuse_bad_and_unknown_names(tmp_path):
    with pytest.raises(InputError, match="invalid network name"):
        save_profile("../x", LogGPS(), home=tmp_path)
    save_profile("known", LogGPS(), home=tmp_path)
    with pytest.raises(InputError, match="known: known"):
        load_profile("other", home=tmp_path)


# --------------------------------------------------------------------------- with MPI
@pytest.fixture(scope="module")
def mpi_env(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LLAMP_HOME", str(tmp_path_factory.mktemp("llamp-home")))
        for key, value in ROOT_ENV.items():
            mp.setenv(key, value)
        yield


@pytest.fixture(scope="module")
def programs(mpi_env):
    from llamp.injector.compiled import build_check, build_library

    library, mpi = build_library(MPICC)
    check, _ = build_check(MPICC)
    return library, check, mpi


def launcher(ranks: int) -> list[str]:
    return [MPIRUN, *(["--oversubscribe"] if ranks > CORES else []), "-n", str(ranks)]


def run_check(
    programs,
    ranks: int,
    args: list[str],
    delta_ns: float = 0.0,
    S: int | None = None,
    rendezvous: str = "handshake",
):
    """Run ``llamp-injector-check ARGS`` under the injector; (returncode, stdout, stderr)."""
    from llamp.injector.inject import injector_variables, launch_command

    library, check, mpi = programs
    S = S if S is not None else NO_SWITCH_S
    base = LogGPS(L=500.0, o=200.0, G=0.1, S=S, rendezvous=rendezvous)
    variables = injector_variables(delta_ns, base, os.environ["LLAMP_HOME"])
    argv, env = launch_command([*launcher(ranks), str(check), *args], library, variables, mpi)
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    return out.returncode, out.stdout, out.stderr


def timing(programs, args: list[str], delta_ns: float) -> dict:
    code, stdout, stderr = run_check(programs, 2, args, delta_ns)
    assert code == 0, stderr
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.integration
@needs_mpi
def test_library_builds_without_warnings(mpi_env):
    from llamp.injector.compiled import LIBRARY, build

    messages = []
    build(LIBRARY, MPICC, rebuild=True, log=messages.append)
    assert messages and messages[-1].startswith("built in")
    assert "\n" not in messages[-1], f"compiler warnings: {messages[-1]}"


@pytest.mark.integration
@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3, 5])
@pytest.mark.parametrize("S", [None, 64])
def test_collectives_and_point_to_point_keep_mpi_semantics(programs, ranks, S):
    for mode in ("coll", "p2p"):
        code, stdout, stderr = run_check(programs, ranks, [mode], 20_000.0, S)
        assert code == 0 and stdout.strip() == "ok", f"{mode} on {ranks} ranks:\n{stderr}"


def _retry(measure, ok, tries=3):
    """The first measurement that satisfies ``ok``, else the last (the machine is shared)."""
    for _ in range(tries):
        result = measure()
        if ok(result):
            return result
    return result


@pytest.mark.integration
@needs_mpi
@pytest.mark.parametrize("delta_us", [10, 50, 100])
def test_pingpong_round_trip_grows_by_twice_delta(programs, delta_us):
    delta = delta_us * 1000.0

    def measure():
        base = timing(programs, ["rtt", "8", "2000"], 0.0)["rtt_ns"]
        injected = timing(programs, ["rtt", "8", "1000"], delta)["rtt_ns"]
        return base, injected

    def ok(pair):
        return abs((pair[1] - pair[0]) - 2 * delta) <= max(0.1 * 2 * delta, 2000.0)

    base, injected = _retry(measure, ok)
    assert injected - base == pytest.approx(2 * delta, abs=max(0.2 * delta, 2000.0)), (
        f"RTT {base:.0f} ns → {injected:.0f} ns with ΔL = {delta:.0f} ns"
    )


@pytest.mark.integration
@needs_mpi
def test_back_to_back_sends_are_not_serialised(programs):
    delta = 50_000.0

    def measure():
        return timing(programs, ["b2b", "200"], 0.0), timing(programs, ["b2b", "200"], delta)

    def ok(pair):
        base, inj = pair
        return (
            abs(inj["first_ns"] - base["first_ns"] - delta) <= max(0.1 * delta, 2000.0)
            and abs(inj["second_ns"] - base["second_ns"] - delta) <= max(0.1 * delta, 2000.0)
            and inj["gap_ns"] < 5000.0
        )

    base, inj = _retry(measure, ok)
    # each message arrives ΔL later than without injection (Fig. 8A/D) …
    assert inj["first_ns"] - base["first_ns"] == pytest.approx(delta, abs=max(0.1 * delta, 2000))
    assert inj["second_ns"] - base["second_ns"] == pytest.approx(delta, abs=max(0.1 * delta, 2000))
    assert inj["waitall_ns"] == pytest.approx(inj["second_ns"], abs=max(0.1 * delta, 2000))
    # … and the two arrivals stay about one overhead apart, not ΔL (Fig. 8C) …
    assert inj["gap_ns"] < 5000.0 < 0.5 * delta
    # … and the sender is not delayed
    assert inj["sender_ns"] < 5000.0


@pytest.mark.integration
@needs_mpi
def test_a_computing_receiver_is_not_delayed_past_its_compute(programs):
    delta = 50_000.0

    def busy():  # compute 200 µs > ΔL: the message is due before the compute ends
        return timing(programs, ["compute", "200", "60"], delta)

    def idle():  # compute 20 µs < ΔL: the wait lasts until send + ΔL
        return timing(programs, ["compute", "20", "60"], delta)

    early = _retry(busy, lambda r: r["early"] >= 30 and r["early_wait_ns"] < 5000)
    assert early["early"] >= 30 and early["early_wait_ns"] < 5000, early
    late = _retry(idle, lambda r: r["late"] >= 30 and 0 <= r["late_excess_ns"] < 5000)
    assert late["late"] >= 30 and 0 <= late["late_excess_ns"] < 5000, late


@pytest.mark.integration
@needs_mpi
def test_rendezvous_messages_pay_the_handshake(programs):
    """Above S, a ping-pong round trip grows by 2·3ΔL (RTS, CTS, data per direction)."""
    delta = 20_000.0

    def measure():
        base = timing(programs, ["rtt", "8192", "500"], 0.0)["rtt_ns"]
        code, stdout, stderr = run_check(programs, 2, ["rtt", "8192", "500"], delta, S=4096)
        assert code == 0, stderr
        return base, json.loads(stdout.strip().splitlines()[-1])["rtt_ns"]

    base, injected = _retry(measure, lambda p: abs(p[1] - p[0] - 6 * delta) < 0.15 * 6 * delta)
    assert injected - base == pytest.approx(6 * delta, rel=0.2)


@pytest.mark.integration
@needs_mpi
def test_a_polled_request_is_answered_at_the_receivers_wait(programs):
    """8 KiB above S = 4 KiB, the receiver computing 200 µs after it posted: answered on
    arrival (``handshake``), the data is due 3ΔL after the send, long before the wait, which
    takes what it takes at ΔL = 0 (the read); ``polled``, the request waits for the wait,
    which then lasts the CTS and the data longer: 2ΔL (docs/model.md, the polled
    rendezvous)."""
    delta = 20_000.0

    def run(rendezvous: str, d: float) -> dict:
        args = ["compute", "200", "60", "8192"]
        code, stdout, stderr = run_check(programs, 2, args, d, 4096, rendezvous)
        assert code == 0, stderr
        out = json.loads(stdout.strip().splitlines()[-1])
        assert out["early"] >= 30, out
        return out["early_wait_ns"]

    def measure() -> tuple[float, float, float]:
        return run("handshake", 0.0), run("handshake", delta), run("polled", delta)

    def added(waits) -> tuple[float, float]:
        return waits[1] - waits[0], waits[2] - waits[0]

    def fits(waits) -> bool:
        on_arrival, polled = added(waits)
        return abs(on_arrival) < 5000 and abs(polled - 2 * delta) < 5000

    waits = _retry(measure, fits)
    on_arrival, polled = added(waits)
    assert on_arrival == pytest.approx(0.0, abs=5000), waits
    assert polled == pytest.approx(2 * delta, abs=5000), waits


@pytest.mark.integration
@needs_mpi
@pytest.mark.parametrize("rendezvous", ["handshake", "polled"])
def test_a_request_that_arrives_during_a_blocking_send_is_answered_at_once(programs, rendezvous):
    """NPB CG's exchange (each rank: Irecv, Send, Wait) of 8 KiB above S = 4 KiB: each rank is
    inside its blocking send when the other's request arrives, so it answers at once under
    both protocols (polled: the send is a call inside MPI); one exchange grows by RTS, CTS
    and data, 3ΔL."""
    delta = 20_000.0

    def measure():
        out = []
        for d in (0.0, delta):
            code, stdout, stderr = run_check(
                programs, 2, ["exchange", "8192", "300"], d, 4096, rendezvous
            )
            assert code == 0, stderr
            out.append(json.loads(stdout.strip().splitlines()[-1])["exchange_ns"])
        return out

    base, injected = _retry(measure, lambda p: abs(p[1] - p[0] - 3 * delta) < 0.15 * 3 * delta)
    assert injected - base == pytest.approx(3 * delta, rel=0.15)


def test_the_polled_rendezvous_is_an_environment_switch(tmp_path):
    from llamp.injector.inject import injector_variables

    polled = LogGPS(S=4096, rendezvous="polled")
    assert injector_variables(0.0, polled, tmp_path)["LLAMP_INJECT_RENDEZVOUS"] == "polled"
    on_arrival = LogGPS(S=4096, rendezvous="handshake")
    assert "LLAMP_INJECT_RENDEZVOUS" not in injector_variables(0.0, on_arrival, tmp_path)


@pytest.mark.integration
@needs_mpi
def test_calibrate_on_a_real_pingpong_and_save(mpi_env):
    from llamp.cli import injector  # noqa: F401 - registers the commands
    from llamp.cli.base import cli

    result = CliRunner().invoke(
        cli,
        ["calibrate", "--save", "here", "--iters", "100", "--rounds", "2", "--json", "--"]
        + launcher(2),
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    fit = json.loads(result.output[result.output.index("{") :])
    # two rounds, fitted from their per-size median (the median itself: the combine test; o
    # of the median need not lie between the rounds' o, each a median over small sizes)
    assert len(fit["rounds"]) == 2 and fit["measured_on"]["calibrations"] == 2
    assert all(r["o_ns"] > 0 and r["G_ns_per_byte"] > 0 for r in fit["rounds"])
    assert [r["size_bytes"] for r in fit["residuals"]] == list(DEFAULT_SIZES)
    assert fit["o_ns"] > 0 and fit["G_ns_per_byte"] > 0 and fit["L_ns"] >= 0
    assert all(r["one_way_ns"] > 0 for r in fit["residuals"])
    profile = load_profile("here")
    assert profile.params.o == pytest.approx(fit["o_ns"])
    assert profile.source.startswith("llamp calibrate -- ")
    assert set(fit["parameter_residuals"]) == {"L", "o", "G", "S", "g"}
    assert fit["measured_on"]["mpi"].startswith("Open MPI")
    assert fit["measured_on"]["transport"].startswith("one node")
    assert profile.measured_on == fit["measured_on"]


def test_calibrate_refuses_a_negative_pause():
    from llamp.cli import injector  # noqa: F401 - registers the commands
    from llamp.cli.base import cli

    result = CliRunner().invoke(cli, ["calibrate", "--pause", "-5s", "--", "mpirun", "-n", "2"])
    assert isinstance(result.exception, InputError)  # exit 2 from the entry point
    assert str(result.exception) == "--pause must not be negative, got '-5s'"


@pytest.mark.integration
@needs_mpi
def test_inject_command_reports_runtime_and_delays(programs):
    from llamp.cli import injector  # noqa: F401
    from llamp.cli.base import cli

    library, check, mpi = programs
    result = CliRunner().invoke(
        cli,
        [
            "inject",
            "--delta",
            "50us",
            "--L",
            "500ns",
            "--o",
            "200ns",
            "--G",
            "0.1",
            "--json",
            "--",
            *launcher(2),
            str(check),
            "rtt",
            "8",
            "200",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    run = json.loads(result.output[result.output.index("{\n") :])
    assert run["delta_ns"] == 50_000.0 and len(run["rank_runtimes_ns"]) == 2
    # 220 round trips (20 warm-up) of 2 messages, each held back ≈ ΔL
    assert run["counters"]["messages_sent"] >= 440
    assert run["runtime_ns"] > 440 * 50_000.0 * 0.9
    assert run["base"]["L_ns"] == 500.0


@pytest.mark.integration
@pytest.mark.slow
@needs_mpi
def test_overhead_runs_every_mode_and_counts_calls(programs, tmp_path):
    """``llamp overhead`` on a short halo exchange: plain, traced, the injector without its
    delay path and the null injection, two runs each; the calls are the trace's."""
    from llamp.injector.overhead import MODES, measure_overhead

    halo = tmp_path / "halo"
    app = Path(__file__).parent.parent / "benchmarks" / "apps" / "halo.c"
    subprocess.run([MPICC, "-O2", "-o", str(halo), str(app)], check=True)
    command = [*launcher(2), str(halo), "-n", "20", "-s", "1024", "-c", "10", "-b", "5"]
    result = measure_overhead(command, min_runs=2, max_runs=2, cwd=tmp_path, mpicc=MPICC)
    assert {r.mode for r in result.runs} == set(MODES)
    assert all(len(result.values(m)) == 2 for m in MODES)
    assert all(v > 0 for m in MODES[1:] for v in result.values(m, "span"))
    # per iteration and rank: Irecv ×2, Isend ×2, Waitall → at least 100 calls over 20 iterations
    assert result.calls >= 100
    assert np.isfinite(result.charge_ns)


def test_passive_injection_is_an_environment_switch(tmp_path):
    from llamp.injector.inject import injector_variables

    assert injector_variables(0.0, None, tmp_path, passive=True)["LLAMP_INJECT_PASSIVE"] == "1"
    assert "LLAMP_INJECT_PASSIVE" not in injector_variables(0.0, None, tmp_path)


def test_inject_refuses_a_negative_delta():
    from llamp.injector.inject import run_injected

    with pytest.raises(InputError, match="≥ 0"):
        run_injected(["true"], -1.0)


def test_gap_per_message_comes_from_the_burst():
    """A burst of 64 one-byte messages takes 63·g more than one: g = (T(64) − T(1)) / 63;
    the fit carries it into the parameters and the saved profile."""
    text = '{"burst": 1, "samples": 100, "time_ns": 1000}\n{"burst": 64, "samples": 100, "time_ns": 7300}\n'
    bursts = parse_bursts(text)
    assert bursts == {1: 1000.0, 64: 7300.0}
    assert parse_pingpong(text) == []  # burst lines are not sizes
    fit = fit_loggp(synthetic(700.0, 250.0, 0.05), bursts)
    assert fit.g_ns == pytest.approx(100.0)
    assert fit.params().g == pytest.approx(100.0)
    assert fit.as_dict()["g_ns"] == pytest.approx(100.0)
    assert fit_loggp(synthetic(700.0, 250.0, 0.05)).g_ns == 0.0  # no burst: g unknown, 0


def test_profiles_carry_g(tmp_path):
    path = save_profile("burst", LogGPS(g=120.0), home=tmp_path)
    assert load_profile("burst", home=tmp_path).params.g == 120.0
    assert json.loads(path.read_text())["g_ns"] == 120.0
    older = json.loads(path.read_text())
    del older["g_ns"]
    path.write_text(json.dumps(older))
    assert load_profile("burst", home=tmp_path).params.g == 0.0  # profiles before g
