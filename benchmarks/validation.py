"""Which model defaults does the evidence support? ``python -m benchmarks.validation``

Measures real applications under the latency injector and compares them with the predictions
of every receive-progress × NIC model (``llamp validate`` predicts under all four from the same
runs), then writes ``benchmarks/VALIDATION.md``:

1. ``llamp calibrate`` of this machine (ping-pong 1 B … 4 MiB and a 64-message burst) → the
   base ``L0, o, G, S, g``.
2. ``llamp validate`` at ΔL = 0, 10, 20, 50, 100 µs, ``--repeat`` runs each, of
   - LAMMPS (``lmp``, the LJ melt of ``tests/data/apps/in.melt``), 2 and 4 ranks;
   - ``benchmarks/apps/halo.c``: a periodic-ring halo exchange, Irecv/Isend, an interior
     compute of 50 µs overlapping the messages, Waitall, a boundary compute of 10 µs; 8 KiB
     messages on 2 and 4 ranks (overlapped, latency-bound), 1 MiB messages on 2 ranks
     (bandwidth-bound: 2 × 1 MiB in and out per iteration at ~0.2 ns/B is ~0.8 ms of transfer
     against 60 µs of compute).
3. One table: RRMSE per application and model, the machine load while it ran, and per ΔL the
   measured mean and each model's prediction.

Runs with more ranks than cores are oversubscribed (the table says so): their measured times
depend on the scheduler as much as on the network. Needs Open MPI (``mpirun``, ``mpicc``);
LAMMPS rows are skipped without ``lmp``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from llamp.injector.calibrate import calibrate
from llamp.injector.validate import MODELS, Validation, model_name, run_validation

HERE = Path(__file__).resolve().parent
APPS = HERE.parent / "tests" / "data" / "apps"
DELTAS_NS = (0.0, 10_000.0, 20_000.0, 50_000.0, 100_000.0)


def _launcher(ranks: int) -> list[str]:
    mpirun = shutil.which("mpirun") or "mpirun"
    over = ["--oversubscribe"] if ranks > len(os.sched_getaffinity(0)) else []
    return [mpirun, *over, "-n", str(ranks), "-x", "OMP_NUM_THREADS"]


def _applications(halo: Path, quick: bool) -> list[tuple[str, int, list[str]]]:
    iterations = "500" if quick else "2000"
    apps = [
        ("halo 8 KiB", 2, [str(halo), "-n", iterations, "-s", "8192", "-c", "50", "-b", "10"]),
        ("halo 8 KiB", 4, [str(halo), "-n", iterations, "-s", "8192", "-c", "50", "-b", "10"]),
        (
            "halo 1 MiB",
            2,
            [str(halo), "-n", "200" if quick else "500", "-s", "1048576", "-c", "50", "-b", "10"],
        ),
    ]
    if shutil.which("lmp") and not quick:
        melt = ["lmp", "-in", str(APPS / "in.melt"), "-log", "none", "-screen", "none"]
        apps = [("LAMMPS in.melt", 2, melt), ("LAMMPS in.melt", 4, melt), *apps]
    return apps


def run(
    repeat: int = 3, quick: bool = False, max_load: float | None = None, log=print
) -> tuple[dict, list[tuple[str, int, Validation]]]:
    """Calibrate, then validate every application; (calibration dict, results)."""
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    os.environ["OMP_NUM_THREADS"] = "1"
    work = Path(tempfile.mkdtemp(prefix="llamp-validation-"))
    halo = work / "halo"
    subprocess.run(
        [shutil.which("mpicc") or "mpicc", "-O2", "-o", str(halo), str(HERE / "apps" / "halo.c")],
        check=True,
    )
    log("calibrating this machine (ping-pong and burst)…")
    fit = calibrate(_launcher(2), iters=200)
    params = fit.params()
    log(
        f"  L = {params.L:.0f} ns, o = {params.o:.0f} ns, G = {params.G:.4g} ns/B, S = {params.S}, g = {params.g:.0f} ns"
    )
    results = []
    for name, ranks, argv in _applications(halo, quick):
        log(f"validating {name} on {ranks} ranks…")
        started = time.perf_counter()
        result, _ = run_validation(
            [*_launcher(ranks), *argv],
            DELTAS_NS[::2] if quick else DELTAS_NS,
            params=params,
            repeat=1 if quick else repeat,
            run_name=f"{name.replace(' ', '-')}-{ranks}",
            trace_dir=work / f"trace-{len(results)}",
            store=False,
            cwd=work,
            engine="graph",
            max_other_load=max_load,
            quiet_timeout_s=120.0,
            log=None,
        )
        log(f"  {time.perf_counter() - started:.0f} s; RRMSE by model: {result.rrmse_by_model()}")
        results.append((name, ranks, result))
    return fit.as_dict(), results


def markdown(calibration: dict, results: list[tuple[str, int, Validation]], command: str) -> str:
    """The VALIDATION.md text: setup, the RRMSE table, per-ΔL detail."""
    names = [model_name(p, n) for p, n in MODELS]
    cores = len(os.sched_getaffinity(0))
    lines = [
        "# Validation: which receive-progress and NIC model fits measured runs",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({cores} cores, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB), Open MPI over "
        f"shared memory, with `{command}` (`benchmarks/validation.py`). Each application is traced "
        "once at ΔL = 0, then run under the latency injector at every ΔL; the same measured runs "
        "are compared with the predictions of all four models (`llamp validate` does this for "
        "every run). RRMSE = sqrt(mean((T_pred − T_meas)²)) / mean(T_meas) over the ΔL list.",
        "",
        f"Calibration: L = {calibration['L_ns']:.0f} ns, o = {calibration['o_ns']:.0f} ns, "
        f"G = {calibration['G_ns_per_byte']:.4g} ns/B, S = {calibration['S_bytes']}, "
        f"g = {calibration['g_ns']:.0f} ns.",
        "",
        "| application | ranks | runs per ΔL | other load (cores, mean) | "
        + " | ".join(f"RRMSE {n}" for n in names)
        + " |",
        "|---|---|---|---|" + "---|" * len(names),
    ]
    for name, ranks, v in results:
        err = v.rrmse_by_model()
        best = min(err.values())
        cells = [
            f"**{err[n] * 100:.1f} %**" if err[n] == best else f"{err[n] * 100:.1f} %"
            for n in names
        ]
        over = " (oversubscribed)" if ranks > cores else ""
        lines.append(
            f"| {name} | {ranks}{over} | {v.repeat} | {v.load.get('other_load_cores_mean', math.nan):.2f} | "
            + " | ".join(cells)
            + " |"
        )
    means = {n: sum(v.rrmse_by_model()[n] for _, _, v in results) / len(results) for n in names}
    lines += [
        "| **mean** | | | | " + " | ".join(f"{means[n] * 100:.1f} %" for n in names) + " |",
        "",
        "Per ΔL (measured mean, and each model's prediction):",
        "",
    ]
    for name, ranks, v in results:
        lines += [
            f"**{name}, {ranks} ranks** (λ_L at ΔL = 0: {v.points[0].lambda_L:g})",
            "",
            "| ΔL | measured | " + " | ".join(names) + " |",
            "|---|---|" + "---|" * len(names),
        ]
        for k, p in enumerate(v.points):
            preds = " | ".join(f"{v.models[n][k] / 1e6:.3f} ms" for n in names)
            lines.append(
                f"| {p.delta_ns / 1000:g} µs | {p.mean_ns / 1e6:.3f} ± {p.sd_ns / 1e6:.3f} ms | {preds} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per ΔL (default 3)")
    parser.add_argument("--quick", action="store_true", help="halo only, 3 ΔL, 1 run each")
    parser.add_argument("--out", type=Path, default=None, help="write the markdown here")
    parser.add_argument(
        "--max-load",
        type=float,
        default=None,
        help="wait (up to 2 min) until other processes use at most this many cores before a run",
    )
    args = parser.parse_args()
    calibration, results = run(repeat=args.repeat, quick=args.quick, max_load=args.max_load)
    text = markdown(
        calibration, results, "python -m benchmarks.validation" + (" --quick" if args.quick else "")
    )
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
