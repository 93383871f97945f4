"""Latency injector and validation (docs/architecture.md §Injector and validation, LLAMP §III): micro-benchmarks of the injector and
the measured-vs-predicted runtime table of two real applications.

With Open MPI on PATH (else no rows), 2 ranks (one per core), ``OMP_NUM_THREADS=1``:

1. ``llamp calibrate`` of this machine (ping-pong 1 B … 4 MiB) → the base LogGPS ``L0, o, G, S``.
2. Injector micro-benchmarks (``llamp-injector-check``, medians of many iterations): the cost
   of the injector at ΔL = 0 per message (half the round-trip difference to a run without it:
   the piggybacked header and the bookkeeping), increase of
   the 8-byte ping-pong round trip for ΔL = 10, 50, 100 µs (ideal 2·ΔL); two back-to-back sends
   to a waiting receiver at ΔL = 50 µs (arrival of each after its own send − ΔL, and the gap
   between the two arrivals: ideal ≈ o, LLAMP Fig. 8A/D; Fig. 8C would give ΔL); a receiver
   that computes 200 µs past the message (time in ``MPI_Wait``: ideal ≈ 0).
3. ``llamp validate`` of LAMMPS (``lmp``, LJ melt: ``tests/data/apps/in.melt``, 4000 atoms,
   300 steps) and HPCC (``hpcc``, ``tests/data/apps/hpccinf.txt`` on a 1 × 2 grid, N = 200:
   every HPCC test) at ΔL = 0, 10, 20, 50, 100 µs, ``max(repeat, 5)`` runs each (quick: 0 and
   50 µs, one run), waiting for other processes to use at most 0.3 cores before each run and
   redoing disturbed runs (up to 3 times). Rows: predicted and measured mean ± sd per ΔL, the
   RRMSE, and the load; the full result (every run, notes) is in the ``validation`` field of the
   RRMSE rows of ``--json``.

The applications' own output goes to a temporary directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.timing import row

ROOT = Path(__file__).resolve().parents[1]
APPS = ROOT / "tests" / "data" / "apps"
ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMP_NUM_THREADS": "1",
}
MAX_LOAD = 0.3
BENCH = "injector"


def _log(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def _openmpi() -> tuple[str, str] | None:
    from llamp.ingest.tracing import TracerError, detect_mpi

    mpicc, mpirun = shutil.which("mpicc"), shutil.which("mpirun")
    if not mpicc or not mpirun:
        return None
    try:
        return (mpicc, mpirun) if detect_mpi(mpicc).flavour == "openmpi" else None
    except TracerError:
        return None


def _launcher(mpirun: str, ranks: int = 2) -> list[str]:
    over = ["--oversubscribe"] if ranks > len(os.sched_getaffinity(0)) else []
    return [mpirun, *over, "-n", str(ranks), "-x", "OMP_NUM_THREADS"]


def _check(args: list[str], delta_ns: float | None, mpirun: str, mpicc: str) -> dict:
    """``llamp-injector-check ARGS`` under the injector at ΔL = ``delta_ns`` (None: without it)."""
    from llamp.injector.compiled import build_check, build_library
    from llamp.injector.inject import injector_variables, launch_command, wait_for_quiet

    library, mpi = build_library(mpicc)
    check, _ = build_check(mpicc)
    wait_for_quiet(MAX_LOAD, timeout_s=120.0)
    command = [*_launcher(mpirun), str(check), *args]
    with tempfile.TemporaryDirectory() as tmp:
        if delta_ns is None:
            argv, env = command, dict(os.environ)
        else:
            variables = injector_variables(delta_ns, None, Path(tmp))
            argv, env = launch_command(command, library, variables, mpi)
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _micro(mpirun: str, mpicc: str, quick: bool) -> list[dict]:
    rows = []
    iters = "500" if quick else "2000"
    native = _check(["rtt", "8", iters], None, mpirun, mpicc)["rtt_ns"]
    base = _check(["rtt", "8", iters], 0.0, mpirun, mpicc)["rtt_ns"]
    rows += [
        row(BENCH, "ping-pong 8 B", "round trip without the injector", native / 1e3, "µs"),
        row(BENCH, "ping-pong 8 B", "round trip, injector at ΔL = 0", base / 1e3, "µs"),
        row(
            BENCH,
            "ping-pong 8 B",
            "injector cost per message (header, bookkeeping)",
            (base - native) / 2,
            "ns",
        ),
    ]
    for delta_us in (10, 50, 100):
        rtt = _check(["rtt", "8", iters], delta_us * 1e3, mpirun, mpicc)["rtt_ns"]
        rows.append(
            row(
                BENCH,
                "ping-pong 8 B",
                f"round-trip increase, ΔL = {delta_us} µs (ideal {2 * delta_us})",
                (rtt - base) / 1e3,
                "µs",
            )
        )
    b0 = _check(["b2b", "200"], 0.0, mpirun, mpicc)
    b = _check(["b2b", "200"], 50e3, mpirun, mpicc)
    case = "2 back-to-back sends, ΔL = 50 µs"
    rows += [
        row(
            BENCH,
            case,
            "1st arrival − ΔL − baseline",
            (b["first_ns"] - 50e3 - b0["first_ns"]) / 1e3,
            "µs",
        ),
        row(
            BENCH,
            case,
            "2nd arrival − ΔL − baseline",
            (b["second_ns"] - 50e3 - b0["second_ns"]) / 1e3,
            "µs",
        ),
        row(BENCH, case, "gap between arrivals (Fig. 8C: ΔL)", b["gap_ns"] / 1e3, "µs"),
        row(BENCH, case, "gap between sends", b["send_gap_ns"] / 1e3, "µs"),
        row(BENCH, case, "sender's time for both sends", b["sender_ns"] / 1e3, "µs"),
    ]
    c = _check(["compute", "200", "100"], 50e3, mpirun, mpicc)
    rows.append(
        row(
            BENCH,
            "receiver computes 200 µs, ΔL = 50 µs",
            "time in MPI_Wait (ideal ≈ 0)",
            c["early_wait_ns"] / 1e3,
            "µs",
            iterations=c["early"],
        )
    )
    return rows


def _validate(
    name: str, command: list[str], cwd: Path, params, times, deltas, repeat: int
) -> list[dict]:
    from llamp.injector.validate import run_validation

    with open(cwd / "output.log", "w") as output:
        result, _ = run_validation(
            command,
            deltas,
            params=params,
            times=times,
            repeat=repeat,
            run_name=name,
            cwd=cwd,
            max_other_load=MAX_LOAD,
            output=output,
            log=_log,
            timeout=600.0,
        )
    print(f"\n{name}:\n{result.summary()}\n", file=sys.stderr, flush=True)
    rows = []
    for p in result.points:
        case = f"{name}, ΔL = {p.delta_ns / 1e3:g} µs"
        rows += [
            row(BENCH, case, "predicted T", p.predicted_ns / 1e9, "s", lambda_L=p.lambda_L),
            row(
                BENCH,
                case,
                "measured T mean",
                p.mean_ns / 1e9,
                "s",
                runs=[t / 1e9 for t in p.runs_ns],
            ),
            row(BENCH, case, "measured T sd", p.sd_ns / 1e9, "s"),
            row(BENCH, case, "error", p.error_pct, "%"),
        ]
    rows.append(row(BENCH, name, "RRMSE", result.rrmse * 100, "%", validation=result.as_dict()))
    rows.append(
        row(
            BENCH,
            name,
            "other processes during the runs (mean)",
            result.load.get("other_load_cores_mean", float("nan")),
            "cores",
        )
    )
    return rows


def run(quick: bool = False, repeat: int = 3) -> list[dict]:
    found = _openmpi()
    if found is None or not shutil.which("lmp") or not shutil.which("hpcc"):
        print("  bench_injector: needs Open MPI, lmp and hpcc: skipped", file=sys.stderr)
        return []
    mpicc, mpirun = found
    from llamp.injector.calibrate import calibrate

    saved = {k: os.environ.get(k) for k in (*ENV, "LLAMP_HOME", "LLAMP_STORE")}
    with tempfile.TemporaryDirectory(prefix="llamp-bench-injector-") as tmp:
        work = Path(tmp)
        os.environ.update(ENV, LLAMP_HOME=str(work / "home"), LLAMP_STORE=str(work / "store"))
        try:
            rows = []
            from llamp.injector.inject import wait_for_quiet

            wait_for_quiet(MAX_LOAD, timeout_s=300.0, log=_log)
            fit = calibrate(_launcher(mpirun), iters=100 if quick else 400, mpicc=mpicc)
            params = fit.params()
            rows += [
                row(BENCH, "calibrate (ping-pong, 2 ranks)", "L", fit.L_ns, "ns"),
                row(BENCH, "calibrate (ping-pong, 2 ranks)", "o", fit.o_ns, "ns"),
                row(BENCH, "calibrate (ping-pong, 2 ranks)", "G", fit.G_ns_per_byte, "ns/B"),
                row(BENCH, "calibrate (ping-pong, 2 ranks)", "S", fit.S_bytes or -1, "B"),
            ]
            rows += _micro(mpirun, mpicc, quick)
            deltas = (0.0, 50e3) if quick else (0.0, 10e3, 20e3, 50e3, 100e3)
            runs = 1 if quick else max(repeat, 5)
            lmp_dir = work / "lammps"
            lmp_dir.mkdir()
            shutil.copy(APPS / "in.melt", lmp_dir / "in.melt")
            rows += _validate(
                "lammps-melt-2",
                [*_launcher(mpirun), "lmp", "-in", "in.melt", "-log", "none", "-screen", "none"],
                lmp_dir,
                params,
                fit.times(),
                deltas,
                runs,
            )
            hpcc_dir = work / "hpcc"
            hpcc_dir.mkdir()
            text = (APPS / "hpccinf.txt").read_text().splitlines()
            text[10], text[11] = "1            Ps", "2            Qs"  # a 1 × 2 grid
            (hpcc_dir / "hpccinf.txt").write_text("\n".join(text) + "\n")
            rows += _validate(
                "hpcc-2", [*_launcher(mpirun), "hpcc"], hpcc_dir, params, fit.times(), deltas, runs
            )
            return rows
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
