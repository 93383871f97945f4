"""How well do predictions match measured runs? ``python -m benchmarks.validation``

Measures real applications under the latency injector and compares them with the predictions
of every model (:data:`llamp.injector.validate.MODELS`: each receive-progress × NIC model in
the program order; the schedule order under each rendezvous protocol × NIC model, its order
taken at ΔL = 0 or re-scheduled at every ΔL;
``llamp validate`` predicts under all of them from the same runs), then prints (and with
``--out`` writes) ``benchmarks/VALIDATION.md``. Each run keeps its traces, calibration and
results in a ``llamp-validation-*`` directory; ``--rescore DIR`` predicts those measured runs
again under today's models without measuring anything. The protocol
(:data:`PROTOCOL`, also the "Protocol" section of that file):

1. ``llamp calibrate`` of this machine (ping-pong 1 B … 4 MiB and a 64-message burst) → the
   base ``L0, o, G, S, g``, with the residual per parameter and what it was measured on.
2. Per application, ``llamp overhead``: plain, traced and null-injected runs until each mean's
   95 % interval is under ``--ci-width`` → the per-call cost charged in the model
   (``--call-cost``, the injector's less the tracer's; ``--no-overhead`` charges nothing).
3. ``llamp validate`` at ΔL = 0, 5, 10, 20, 50, 100 µs, at least ``--min-repeat`` and at most
   ``--max-repeat`` runs each, until the mean's 95 % interval is under ``--ci-width``, of
   (``--apps`` picks some; :data:`APPLICATIONS`)
   - LAMMPS (``lmp``, the LJ melt of ``tests/data/apps/in.melt``), 2 and 4 ranks;
   - NPB CG class S (NAS Parallel Benchmarks 3.4, MPI), 2 ranks, built from source
     (:mod:`benchmarks.app_sources`: cloned from GitHub, or ``--npb-source``, at a fixed
     commit, into a cache directory outside the repository);
   - HPCC's PTRANS alone (HPCC 1.5.0 built from its release tarball with a fixed grid-layout
     seed, :mod:`benchmarks.app_sources`; HPL's N = 1000: a 500 × 500 transpose five times on
     a 1 × 2 grid), 2 ranks;
   - HPCC (Debian's ``hpcc``, every test on N = 200, a 1 × 2 grid), 2 ranks; several of its
     tests run for a fixed time, not a fixed amount of work (a run under added latency does
     less of it), so its trace does not predict its runs: kept to show that, not to score;
   - ``benchmarks/apps/halo.c``: a periodic-ring halo exchange, Irecv/Isend, an interior
     compute of 50 µs overlapping the messages, Waitall, a boundary compute of 10 µs; 8 KiB
     messages on 2 and 4 ranks (overlapped, latency-bound), 1 MiB messages on 2 ranks
     (bandwidth-bound: 2 × 1 MiB in and out per iteration at ~0.2 ns/B is ~0.8 ms of transfer
     against 60 µs of compute).
4. One table: RRMSE per application and model, the offset at ΔL = 0 and the slope error
   under the default model, the machine load while it ran; per application and model its
   RRMSE, offset and slope error; per ΔL the measured mean, its 95 % interval, the runs and
   their load averages, and each model's prediction.

Runs with more ranks than cores are oversubscribed (the table says so): their measured times
depend on the scheduler as much as on the network. Needs Open MPI (``mpirun``, ``mpicc``); an
application that cannot be built or found here (no ``lmp``, ``hpcc``, ``mpif90``, or no access
to the NPB or HPCC sources) is skipped with one line saying why.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.app_sources import Unavailable, build_npb, build_ptrans, hpcc_input, write_hpccinf
from llamp.config import DEFAULT_RENDEZVOUS, parse_percent
from llamp.injector.accuracy import Offset, SlopeError
from llamp.injector.calibrate import Calibration, calibrate, combine
from llamp.injector.message_costs import OVERHEAD_MODELS, MessageCosts
from llamp.injector.overhead import measure_overhead
from llamp.injector.validate import (
    MEASURED_MODELS,
    MODELS,
    Validation,
    ValidationPoint,
    average_compute,
    mean_models,
    mean_prediction,
    predict_models,
    predict_traced,
    run_validation,
    self_prediction_note,
    trace_directory,
    traced_runtime_ns,
    traces_note,
)
from llamp.params import LogGPS

HERE = Path(__file__).resolve().parent
APPS = HERE.parent / "tests" / "data" / "apps"
DELTAS_NS = (0.0, 5_000.0, 10_000.0, 20_000.0, 50_000.0, 100_000.0)

PROTOCOL = """## Protocol

What a table in this file must have been measured under (`python -m benchmarks.validation`
follows it; `--quick` does not and is for trying the script only):

1. **A quiet machine.** Nothing else running; each run records the 1-minute load average at
   its end and the CPU other processes used while it ran (`/proc/stat` busy time less the
   run's own), and the tables show both. `--max-load CORES` additionally waits before each run
   until other processes use at most that many cores and repeats a run they disturbed more.
   One rank per core: runs with more ranks than cores are marked oversubscribed.
2. **Calibration of the transport used.** `llamp calibrate` with the same launcher and
   transport selection as the application runs, before each application and after the last
   (since run 8: one calibration can catch a minute in which the VM runs several times
   slower); the predictions use the per-size median of them, whose fit's residual per
   parameter (L, o, G, S, g), each calibration's own G and o, and what they were measured on
   (MPI library, hosts or hostfile, transport) are printed with the table.
3. **The tools' own cost.** `llamp overhead` runs the application plain, traced, under the
   injector without its delay path and under the injector at ΔL = 0, in shuffled rounds until
   each mean's 95 % interval is under the target width; the injector's per-call cost less the
   tracer's is charged in the model as CPU time before each traced MPI call (`llamp validate
   --call-cost`) when its 95 % interval excludes 0 (since run 11; before, whatever the runs
   gave), and the delay path's own cost at ΔL = 0 is reported beside it.
4. **Measurement.** Six traced runs at ΔL = 0 (`--traces`; three before run 11), each
   predicted, the prediction the mean of theirs (since run 11; before, one prediction from
   each computation's mean duration over them: one run is one sample of a noisy program),
   the first before the injected runs, the k-th before their k-th round (since run 7: the traced
   runs sample the machine over the measurement, as the injected runs do), and injected
   runs at ΔL ∈ {0, 5, 10, 20, 50, 100} µs in rounds of shuffled order; a ΔL is
   run again until the 95 % interval of its mean (Student t, full width) is under 1 % of the
   mean, at least 3 and at most `--max-repeat` runs. A ΔL that stops at the maximum is
   reported with its wider interval.
5. **Report.** Per application: RRMSE under each model; the offset at ΔL = 0 (measured −
   predicted, with the measured mean's 95 % interval) and the slope error (least-squares
   dT/dΔL over every run against the prediction's, with its standard error), so that a
   constant cost and a missing latency sensitivity are told apart. The prediction they are
   taken from is the default model's at L0 + ΔL, each ΔL in the order of its own schedule
   pass, as `llamp predict` there gives it (since run 10; before, the order at ΔL = 0,
   which the models without `/rescheduled` still show).
"""


def _launcher(ranks: int) -> list[str]:
    mpirun = shutil.which("mpirun") or "mpirun"
    over = ["--oversubscribe"] if ranks > len(os.sched_getaffinity(0)) else []
    return [mpirun, *over, "-n", str(ranks), "-x", "OMP_NUM_THREADS"]


#: ``--apps`` keys, in the order they run.
APPLICATIONS = (
    "npb-cg-2",
    "hpcc-ptrans-2",
    "hpcc-2",
    "halo-8k-2",
    "halo-1m-2",
    "lammps-2",
    "lammps-4",
    "halo-8k-4",
)


#: HPL's problem size for HPCC's PTRANS: it transposes an N/2 × N/2 matrix (~25 ms a run here,
#: about a hundred messages per rank: a ΔL of 100 µs adds about 20 %).
PTRANS_N = 1000

#: The name each application has in the tables.
NAMES = {
    "npb-cg-2": "NPB CG class S",
    "hpcc-ptrans-2": "HPCC PTRANS (N = 1000)",
    "hpcc-2": "HPCC (all tests, N = 200)",
    "halo-8k-2": "halo 8 KiB",
    "halo-1m-2": "halo 1 MiB",
    "lammps-2": "LAMMPS in.melt",
    "lammps-4": "LAMMPS in.melt",
    "halo-8k-4": "halo 8 KiB",
}


@dataclass(frozen=True)
class Application:
    key: str
    name: str
    ranks: int
    argv: tuple[str, ...]
    source: str  # where the program came from
    directory: str = ""  # where it runs, under the validation's directory ("": there)


def _applications(
    work: Path,
    halo: Path,
    quick: bool,
    wanted: tuple[str, ...],
    npb_source: str | None,
    log=print,
    *,
    hpcc_source: str | None = None,
) -> list[Application]:
    """The applications of ``wanted`` that can run here; one line for each skipped."""
    iterations = "500" if quick else "2000"
    halo_8k = (str(halo), "-n", iterations, "-s", "8192", "-c", "50", "-b", "10")
    halo_1m = (str(halo), "-n", "200" if quick else "500", "-s", "1048576", "-c", "50", "-b", "10")
    melt = ("-in", str(APPS / "in.melt"), "-log", "none", "-screen", "none")
    here = "benchmarks/apps/halo.c"
    apps = []
    for key in wanted:
        try:
            if key.startswith("lammps-"):
                lmp = shutil.which("lmp")
                if lmp is None:
                    raise Unavailable("lmp not found (apt-get install lammps)")
                apps.append(
                    Application(key, NAMES[key], int(key[-1]), ("lmp", *melt), _lammps(lmp))
                )
            elif key == "npb-cg-2":
                exe, source = build_npb("cg", "S", origin=npb_source)
                apps.append(Application(key, NAMES[key], 2, (str(exe),), source))
            elif key == "hpcc-ptrans-2":
                exe, source = build_ptrans(origin=hpcc_source)
                (work / key).mkdir(exist_ok=True)  # its own hpccinf.txt and hpccoutf.txt
                write_hpccinf(work / key, 2, PTRANS_N)
                apps.append(Application(key, NAMES[key], 2, (str(exe),), source, key))
            elif key == "hpcc-2":
                source = hpcc_input(work, 2)
                apps.append(Application(key, NAMES[key], 2, ("hpcc",), source))
            elif key.startswith("halo-8k-"):
                apps.append(Application(key, NAMES[key], int(key[-1]), halo_8k, here))
            elif key == "halo-1m-2":
                apps.append(Application(key, NAMES[key], 2, halo_1m, here))
        except Unavailable as why:
            log(f"skipping {key}: {why}")
    return apps


def _lammps(exe: str) -> str:
    """LAMMPS's version, from its Debian package where there is one."""
    if shutil.which("dpkg-query"):
        version = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Version}", "lammps"], capture_output=True, text=True
        ).stdout.strip()
        if version:
            return f"Debian lammps {version}"
    return exe


def parse_apps(text: str | None, quick: bool) -> tuple[str, ...]:
    """``--apps``: comma-separated keys of :data:`APPLICATIONS` (default: all; the halo
    exchange alone with ``--quick``)."""
    if not text:
        return tuple(k for k in APPLICATIONS if k.startswith("halo-")) if quick else APPLICATIONS
    keys = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in keys if k not in APPLICATIONS]
    if unknown:
        raise SystemExit(
            f"validation: error: unknown application {unknown[0]!r}; choose from "
            + ", ".join(APPLICATIONS)
        )
    return tuple(k for k in APPLICATIONS if k in keys)


def run(
    repeat: int = 3,
    quick: bool = False,
    max_load: float | None = None,
    max_repeat: int = 30,
    width: float = 0.01,
    overhead: bool = True,
    apps: tuple[str, ...] = APPLICATIONS,
    npb_source: str | None = None,
    hpcc_source: str | None = None,
    overheads: str = "model",
    traces: int = 6,
    rendezvous: str = DEFAULT_RENDEZVOUS,
    log=print,
) -> tuple[dict, list[tuple[Application, Validation]]]:
    """Calibrate, measure each application's tool overhead, then validate it; (calibration
    dict, results). ``overheads``: what the default prediction charges per message (every
    model is also predicted with the calibration's per-size overheads, ``/measured``).

    The machine is calibrated before each application and after the last; the results are
    predicted (:func:`rescore`) from the per-size median of those calibrations
    (:func:`llamp.injector.calibrate.combine`), which ``calibration.json`` keeps with each
    calibration's own fit. The injected runs emulate the network of the first calibration
    (its S and its measured one-way times estimate when a message arrived)."""
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
    params = fit.params().with_(rendezvous=rendezvous)  # the injected network's protocol
    log(
        f"  L = {params.L:.0f} ns, o = {params.o:.0f} ns, G = {params.G:.4g} ns/B, S = {params.S}, g = {params.g:.0f} ns"
    )
    source = f"llamp calibrate -- {' '.join(_launcher(2))} ({fit.measured_on['transport']})"
    costs = MessageCosts.from_calibration(fit)
    log(f"  {costs.describe()}")
    (work / "calibration.json").write_text(json.dumps(fit.as_dict(), indent=1))
    fits = [fit]
    results = []
    for app in _applications(work, halo, quick, apps, npb_source, log, hpcc_source=hpcc_source):
        if results:
            fits.append(_calibrate_again(log))
        name, ranks = app.name, app.ranks
        command = [*_launcher(ranks), *app.argv]
        charge, cost_note = 0.0, ""
        if overhead and not quick:
            log(f"measuring the tools' per-call cost on {name}, {ranks} ranks…")
            cost = measure_overhead(
                command, width=width, min_runs=repeat, max_runs=max_repeat, cwd=work / app.directory
            )
            charge = cost.charge_ns
            measured = cost.costs[2]
            cost_note = (
                f"the tools' per-call cost (injector less tracer, {cost.calls} calls per rank): "
                f"{measured.per_call_ns:.1f} ± {measured.per_call_half_width_ns:.1f} ns "
                f"measured, {charge:.1f} ns charged"
                + ("" if cost.distinguishable else " (not distinguishable from 0)")
            )
            log(f"  {cost_note}")
        log(f"validating {name} on {ranks} ranks…")
        started = time.perf_counter()
        result, _ = run_validation(
            command,
            DELTAS_NS[::2] if quick else DELTAS_NS,
            params=params,
            repeat=1 if quick else repeat,
            max_repeat=1 if quick else max_repeat,
            width=width,
            call_cost_ns=charge,
            message_costs=costs,
            overheads=overheads,
            traces=traces,
            param_sources={p: source for p in ("L", "o", "G", "S", "g")},
            run_name=app.key,
            trace_dir=work / _trace_dir(len(results)),
            store=False,
            cwd=work / app.directory,
            engine="graph",
            max_other_load=max_load,
            quiet_timeout_s=120.0,
            log=None,
        )
        log(f"  {time.perf_counter() - started:.0f} s; RRMSE by model: {result.rrmse_by_model()}")
        if cost_note:
            result = dataclasses.replace(result, notes=(*result.notes, cost_note))
        results.append((app, result))
        saved = work / f"{app.key}.json"
        saved.write_text(
            json.dumps(
                result.as_dict()
                | {
                    "source": app.source,
                    "injected_rendezvous": params.rendezvous,
                    "trace_dir": _trace_dir(len(results) - 1),
                    "trace_dirs": [
                        trace_directory(Path(_trace_dir(len(results) - 1)), k).name
                        for k in range(traces)
                    ],
                },
                indent=1,
            )
        )
        log(f"  result kept in {saved}")
    if not results:
        return fit.as_dict(), results
    fits.append(_calibrate_again(log))
    combined = combine(fits)
    each = [f.brief() for f in fits]
    (work / "calibration.json").write_text(
        json.dumps(combined.as_dict() | {"calibrations": each}, indent=1)
    )
    c = combined.params()
    log(
        f"the median of {len(fits)} calibrations: L = {c.L:.0f} ns, o = {c.o:.0f} ns, "
        f"G = {c.G:.4g} ns/B, S = {c.S}, g = {c.g:.0f} ns; predicting from it"
    )
    return rescore(work, log=log, params=c.with_(rendezvous=rendezvous))


def _notes_today(notes: Sequence[str], graphs, frames, dirs: Sequence[Path]) -> tuple[str, ...]:
    """The run's notes, with those on its traced runs (how they are predicted, how far the
    model falls from them at ΔL = 0) as today's prediction gives them."""
    kept = tuple(
        n
        for n in notes
        if " traced runs at ΔL = 0 took " not in n
        and not n.startswith("the model against the traced runs themselves")
    )
    spans = [traced_runtime_ns(sorted(p for p in Path(d).iterdir() if p.is_file())) for d in dirs]
    today = [] if len(dirs) < 2 else [traces_note(spans, average_compute(graphs)[1])]
    if (own := self_prediction_note(frames, spans)) is not None:
        today.append(own)
    return (*today, *kept)


def _calibrate_again(log) -> Calibration:
    """One more calibration between applications (3 s here), as the first."""
    fit = calibrate(_launcher(2), iters=200)
    log(f"calibrated again: G = {fit.G_ns_per_byte:.4g} ns/B, o = {fit.o_ns:.0f} ns")
    return fit


def _trace_dir(index: int) -> str:
    return f"trace-{index}"


def rescore(
    directory: Path, log=print, params: LogGPS | None = None
) -> tuple[dict, list[tuple[Application, Validation]]]:
    """An earlier run's measured runs against today's predictions: the results it kept in
    ``directory`` (``<app>.json`` and the traces) predicted again, under today's default and
    every model of :data:`MODELS`, from the same traces, tool costs and calibration (each
    application's own parameters, or ``params`` for all). Nothing is measured again; the
    runs, loads and notes are the run's own."""
    import warnings

    from llamp.ingest import read

    given = params
    directory = Path(directory)
    kept = [k for k in APPLICATIONS if (directory / f"{k}.json").is_file()]
    if not kept:
        raise SystemExit(f"validation: error: no results (<application>.json) in {directory}")
    calibration_file = directory / "calibration.json"
    calibration = json.loads(calibration_file.read_text()) if calibration_file.is_file() else None
    costs = None
    if calibration is not None and calibration.get("residuals"):
        costs = MessageCosts.from_record(calibration, what=str(calibration_file))
    results = []
    for index, key in enumerate(kept):
        saved = json.loads((directory / f"{key}.json").read_text())
        p = saved["params"]
        params = (
            given
            if given is not None
            else LogGPS(
                L=p["L_ns"],
                o=p["o_ns"],
                G=p["G_ns_per_byte"],
                S=p["S_bytes"],
                g=p["g_ns"],
                # today's model choices, but the protocol the injector emulated (runs from
                # before it was recorded: answered on arrival)
                rendezvous=saved.get("injected_rendezvous", "handshake"),
            )
        )
        if calibration is None:  # a run from before calibration.json was kept
            calibration = {
                "L_ns": params.L,
                "o_ns": params.o,
                "G_ns_per_byte": params.G,
                "S_bytes": params.S,
                "g_ns": params.g,
                "measured_on": {"mpi": saved.get("mpi", "?"), "transport": "?"},
            }
        # Runs from before the trace directory was recorded traced the applications in
        # APPLICATIONS order into trace-0, trace-1, …
        trace = directory / saved.get("trace_dir", _trace_dir(index))
        dirs = [directory / d for d in saved.get("trace_dirs") or [trace.name]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = [read(d, fmt="liballprof", name=key) for d in dirs]
        deltas = [pt["delta_ns"] for pt in saved["points"]]
        measured = saved.get("overheads") == "measured" and costs is not None
        overheads = "measured" if measured else "model"
        # each traced run predicted as llamp validate does (each ΔL in its own order), the
        # predictions averaged
        each = [
            predict_traced(
                g,
                params,
                deltas,
                call_cost_ns=saved.get("call_cost_ns") or 0.0,
                message_costs=costs if measured else None,
                engine="graph",
            )
            for g in traced
        ]
        graphs = [g for g, _, _ in each]
        frames = [frame for _, _, frame in each]
        predicted = mean_prediction(frames)
        points = tuple(
            ValidationPoint(
                delta_ns=pt["delta_ns"],
                predicted_ns=float(row.runtime_ns),
                lambda_L=float(row.lambda_L),
                runs_ns=tuple(pt["runs_ns"]),
                loadavg=tuple(pt.get("loadavg", ())),
                other_load_cores=tuple(pt.get("other_load_cores", ())),
            )
            for pt, row in zip(saved["points"], predicted.itertuples(index=False), strict=True)
        )
        stopping = saved.get("stopping") or {}
        result = Validation(
            run=saved["run"],
            command=tuple(saved["command"]),
            params=params,
            points=points,
            repeat=saved["repeat"],
            engine="graph",
            traced_runtime_ns=saved.get("traced_runtime_ns", math.nan),
            mpi=saved.get("mpi", ""),
            load=saved.get("load", {}),
            counters=saved.get("counters", {}),
            notes=_notes_today(saved.get("notes", ()), graphs, frames, dirs),
            created=saved.get("created", ""),
            models=mean_models([predict_models(g, params, deltas, costs) for g in graphs]),
            call_cost_ns=float(saved.get("call_cost_ns", 0.0)),
            overheads=overheads,
            message_costs="" if costs is None else costs.describe(),
            rescheduled=params.order == "schedule",
            param_sources=saved.get("parameter_sources", {}),
            target_width=stopping.get("ci95_width", 0.01),
            max_repeat=stopping.get("max_repeat", 0),
        )
        ranks = int(key[-1])
        app = Application(key, NAMES[key], ranks, tuple(saved["command"]), saved.get("source", ""))
        log(f"{NAMES[key]}: RRMSE by model {result.rrmse_by_model()}")
        results.append((app, result))
    return calibration, results


def _emulated(results: list[tuple[Application, Validation]]) -> str:
    """Which rendezvous protocol the injected runs emulated (``--rendezvous``)."""
    used = sorted({v.params.rendezvous for _, v in results})
    if not used:
        return ""
    if used == ["polled"]:
        return (
            "Injected network: the `polled` rendezvous (`--rendezvous polled`): a request that "
            "arrives while its receiver is outside MPI is answered when the receiver next "
            "enters an MPI call that can wait (its wait, a blocking send, …), as by an MPI "
            "library without a progress thread."
        )
    return (
        f"Injected network: the `{'`, `'.join(used)}` rendezvous: a request is answered when it "
        "arrives (`--rendezvous polled` answers it at the receiver's wait)."
    )


def _calibrations(calibration: dict) -> str:
    """The fits the calibration is the per-size median of (none: one calibration)."""
    each = calibration.get("calibrations") or []
    if len(each) < 2:
        return ""
    G = ", ".join(f"{c['G_ns_per_byte']:.3g}" for c in each)
    o = ", ".join(f"{c['o_ns']:.0f}" for c in each)
    return (
        f" The per-size median of {len(each)} calibrations, one before each application and "
        f"one after the last (their own G: {G} ns/B; o: {o} ns)."
    )


def _per_parameter(calibration: dict) -> str:
    parts = []
    for name, r in (calibration.get("parameter_residuals") or {}).items():
        value = r["rms_residual_pct"]
        parts.append(f"{name} {value:.1f} %" if value == value else f"{name} –")
    return ", ".join(parts)


def markdown(calibration: dict, results: list[tuple[Application, Validation]], command: str) -> str:
    """The VALIDATION.md text: setup, protocol, the RRMSE table, the offset and slope error per
    model, per-ΔL detail."""
    names = [
        m.name for m in (*MODELS, *MEASURED_MODELS) if all(m.name in v.models for _, v in results)
    ]
    cores = len(os.sched_getaffinity(0))
    lines = [
        "# Validation: which model fits measured runs",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this machine ({cores} cores, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB), Open MPI over "
        f"shared memory, with `{command}` (`benchmarks/validation.py`). Each application is traced "
        "at ΔL = 0 (each traced run predicted, the predictions averaged), then run under "
        "the latency injector at every ΔL; the same measured runs "
        f"are compared with the predictions of all {len(names)} models (`llamp validate` does "
        "this for every run; `progress/NIC/schedule/rendezvous` is the schedule order with "
        "that NIC model and rendezvous protocol, its order taken at ΔL = 0, `…/rescheduled` at "
        "every ΔL; `async/serial/schedule/loggopsim` is LogGOPSim's model; `…/measured` "
        "charges the calibration's per-size send and receive overheads as CPU, with the wire's "
        "L and G: `llamp validate --overheads measured`). "
        "RRMSE = sqrt(mean((T_pred − T_meas)²)) / "
        "mean(T_meas) over the ΔL list.",
        "",
        f"Calibration: L = {calibration['L_ns']:.0f} ns, o = {calibration['o_ns']:.0f} ns, "
        f"G = {calibration['G_ns_per_byte']:.4g} ns/B, S = {calibration['S_bytes']}, "
        f"g = {calibration['g_ns']:.0f} ns; RMS residual by parameter: "
        f"{_per_parameter(calibration)}; measured on "
        f"{(calibration.get('measured_on') or {}).get('mpi', '?')}, "
        f"{(calibration.get('measured_on') or {}).get('transport', '?')}."
        + _calibrations(calibration),
        "",
        _emulated(results),
        "",
        "Applications: "
        + "; ".join(f"{app.name}: {app.source}" for app in {a.name: a for a, _ in results}.values())
        + ".",
        "",
        PROTOCOL,
        "| application | ranks | runs per ΔL | other load (cores, mean) | call cost charged | "
        "offset at ΔL = 0 | slope error | " + " | ".join(f"RRMSE {n}" for n in names) + " |",
        "|---|---|---|---|---|---|---|" + "---|" * len(names),
    ]
    for app, v in results:
        err = v.rrmse_by_model()
        best = min(err.values())
        cells = [
            f"**{err[n] * 100:.1f} %**" if err[n] == best else f"{err[n] * 100:.1f} %"
            for n in names
        ]
        over = " (oversubscribed)" if app.ranks > cores else ""
        counts = [len(p.runs_ns) for p in v.points]
        lines.append(
            f"| {app.name} | {app.ranks}{over} | {min(counts)}–{max(counts)} | "
            f"{v.load.get('other_load_cores_mean', math.nan):.2f} | {v.call_cost_ns:.0f} ns | "
            f"{_offset_cell(v.offset)} | {_slope_cell(v.slope)} | " + " | ".join(cells) + " |"
        )
    means = {n: sum(v.rrmse_by_model()[n] for _, v in results) / len(results) for n in names}
    lines += [
        "| **mean** | | | | | | | " + " | ".join(f"{means[n] * 100:.1f} %" for n in names) + " |",
        "",
        "Per model: RRMSE, offset at ΔL = 0 (measured − predicted, the measured mean's 95 % "
        "interval) and slope (predicted vs measured dT/dΔL, least squares over every run, ± its "
        "standard error):",
        "",
        "| application | ranks | model | RRMSE | offset at ΔL = 0 | slope predicted vs measured |",
        "|---|---|---|---|---|---|",
    ]
    for app, v in results:
        err, offsets, slopes = v.rrmse_by_model(), v.offset_by_model(), v.slope_by_model()
        for n in names:
            lines.append(
                f"| {app.name} | {app.ranks} | {n} | {err[n] * 100:.1f} % | "
                f"{_offset_cell(offsets.get(n))} | {_slope_cell(slopes.get(n))} |"
            )
    lines += ["", "Per ΔL (measured mean, and each model's prediction):", ""]
    for app, v in results:
        lines += [
            f"**{app.name}, {app.ranks} ranks** (λ_L at ΔL = 0: {v.points[0].lambda_L:g})",
            "",
            "| ΔL | measured (mean ± sd) | 95 % interval | runs | load average | "
            + " | ".join(names)
            + " |",
            "|---|---|---|---|---|" + "---|" * len(names),
        ]
        for k, p in enumerate(v.points):
            preds = " | ".join(f"{v.models[n][k] / 1e6:.3f} ms" for n in names)
            ci = p.ci95_half_width_ns
            ci_text = "–" if ci != ci else f"± {ci / 1e6:.3f} ms ({2 * ci / p.mean_ns * 100:.2f} %)"
            loads = f"{min(p.loadavg):.2f}–{max(p.loadavg):.2f}" if p.loadavg else "–"
            lines.append(
                f"| {p.delta_ns / 1000:g} µs | {p.mean_ns / 1e6:.3f} ± {p.sd_ns / 1e6:.3f} ms | "
                f"{ci_text} | {len(p.runs_ns)} | {loads} | {preds} |"
            )
        lines += [""] + [f"- note: {n}" for n in v.notes] + ([""] if v.notes else [])
    return "\n".join(lines) + "\n"


def _offset_cell(off: Offset | None) -> str:
    if off is None:
        return "–"
    ci = "" if off.half_width_ns != off.half_width_ns else f" (± {off.half_width_ns / 1e6:.2f})"
    return f"{off.offset_ns / 1e6:+.2f} ms{ci}, {off.relative * 100:+.1f} %"


def _slope_cell(s: SlopeError | None) -> str:
    if s is None:
        return "–"
    se = "" if s.standard_error != s.standard_error else f" ± {s.standard_error:.3g}"
    return f"{s.predicted:.4g} vs {s.measured:.4g}{se}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per ΔL, at least (default 3)")
    parser.add_argument(
        "--max-repeat", type=int, default=30, help="runs per ΔL, at most (default 30)"
    )
    parser.add_argument(
        "--ci-width",
        default="1%",
        help="stop once the mean's 95%% interval is this wide (full width; default 1%%)",
    )
    parser.add_argument(
        "--no-overhead",
        action="store_true",
        help="do not measure the tools' per-call cost (charge nothing in the model)",
    )
    parser.add_argument("--quick", action="store_true", help="halo only, 3 ΔL, 1 run each")
    parser.add_argument(
        "--apps",
        default=None,
        help="comma-separated applications to run (default all): " + ", ".join(APPLICATIONS),
    )
    parser.add_argument(
        "--npb-source",
        default=None,
        help="a git clone or mirror of the NPB repository to build from (default: GitHub)",
    )
    parser.add_argument(
        "--hpcc-source",
        default=None,
        help="HPCC 1.5.0's release tarball (a file or URL) to build PTRANS from (default: "
        "Debian's archive)",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the markdown here")
    parser.add_argument(
        "--traces",
        type=int,
        default=6,
        help="traced runs at ΔL = 0 per application, their predictions averaged (default 6)",
    )
    parser.add_argument(
        "--overheads",
        choices=OVERHEAD_MODELS,
        default="model",
        help="what the default prediction charges per message (default model; every model is "
        "also predicted with the measured per-size overheads, /measured)",
    )
    parser.add_argument(
        "--rendezvous",
        choices=("handshake", "polled"),  # the two the injector emulates
        default=DEFAULT_RENDEZVOUS,
        help="the rendezvous protocol the injector emulates above S, and the default "
        f"prediction's (default {DEFAULT_RENDEZVOUS}; polled: a request answered only inside "
        "the receiver's MPI calls)",
    )
    parser.add_argument(
        "--max-load",
        type=float,
        default=None,
        help="wait (up to 2 min) until other processes use at most this many cores before a run",
    )
    parser.add_argument(
        "--rescore",
        type=Path,
        metavar="DIR",
        default=None,
        help="measure nothing: predict the runs an earlier run kept in DIR (its "
        "llamp-validation-* directory) again under today's models",
    )
    args = parser.parse_args()
    if args.rescore is not None:
        calibration, results = rescore(args.rescore)
        text = markdown(
            calibration,
            results,
            "python -m benchmarks.validation`, re-scored with `--rescore DIR",
        )
        print(text)
        if args.out:
            args.out.write_text(text)
        return
    calibration, results = run(
        repeat=args.repeat,
        quick=args.quick,
        max_load=args.max_load,
        max_repeat=max(args.max_repeat, args.repeat),
        width=parse_percent(args.ci_width, what="--ci-width"),
        overhead=not args.no_overhead,
        apps=parse_apps(args.apps, args.quick),
        npb_source=args.npb_source,
        hpcc_source=args.hpcc_source,
        overheads=args.overheads,
        traces=args.traces,
        rendezvous=args.rendezvous,
    )
    text = markdown(
        calibration, results, "python -m benchmarks.validation" + (" --quick" if args.quick else "")
    )
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
