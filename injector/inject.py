"""Run an MPI command with the latency injector: ``llamp inject --delta 20us -- mpirun …``.

The injector (``inject_*.c``, see ``llamp_inject.h``) is preloaded into every rank like the
tracer (:mod:`llamp.ingest.tracing`: ``-x`` for Open MPI's ``mpirun``, ``-genv`` for MPICH's
hydra, the environment otherwise). It adds ΔL to every point-to-point message, collectives
included, at the receiver (LLAMP §III-A, Fig. 8D); with a base network whose ``S`` is finite,
messages above ``S`` bytes also get the extra handshake latency of LogGPS' rendezvous
(docs/model.md §Cost semantics), so the emulated network is the one the prediction assumes. Each rank writes
``inject-rank-<N>.json``: its runtime (end of ``MPI_Init`` to start of ``MPI_Finalize``, the
span the execution graph's ``T`` covers) and counters. The run's runtime is the slowest
rank's, as ``T`` is the latest finish.

Other processes on the machine change what is measured; each run records the CPU time they
used while it ran (``/proc/stat`` busy time minus the run's own, in cores) and the load
average, so a validation can report (and a reader judge) the load it was measured under.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from llamp.errors import InputError
from llamp.ingest.tracing import MPIInfo, preloaded_command
from llamp.injector.compiled import InjectorError, build_library
from llamp.params import LogGPS

REPORT_FILE = "inject-rank-{rank}.json"
#: S at or above which the injector treats every message as eager (no handshake emulated).
NO_RENDEZVOUS = 1 << 62
COUNTERS = (
    "messages_sent",
    "bytes_sent",
    "messages_received",
    "messages_delayed",
    "delay_added_ns",
    "collectives",
    "collective_messages",
    "passthrough_calls",
    "header_mismatches",
    "orphaned_receives",
    "probes_delayed",
)


@dataclass(frozen=True)
class InjectedRun:
    """One run under the injector: runtime, per-rank runtimes, counters, and the load."""

    delta_ns: float
    runtime_ns: float  # slowest rank: end of MPI_Init → start of MPI_Finalize
    rank_runtimes_ns: tuple[float, ...]
    counters: dict[str, float]  # summed over ranks
    wall_s: float  # the whole command, launch included
    other_load_cores: float  # CPU used by other processes during the run, in cores
    loadavg: float  # 1-minute load average at the end
    command: tuple[str, ...]
    base: dict[str, float] = field(default_factory=dict)

    @property
    def ranks(self) -> int:
        return len(self.rank_runtimes_ns)

    def as_dict(self) -> dict[str, Any]:
        return {
            "delta_ns": self.delta_ns,
            "runtime_ns": self.runtime_ns,
            "rank_runtimes_ns": list(self.rank_runtimes_ns),
            "counters": dict(self.counters),
            "wall_s": self.wall_s,
            "other_load_cores": self.other_load_cores,
            "loadavg": self.loadavg,
            "command": list(self.command),
            "base": dict(self.base),
        }


Times = Sequence[tuple[int, float, float]]
"""This machine's measured times by message size: (bytes, one-way ns, MPI_Send ns), from
``llamp calibrate`` (:meth:`llamp.injector.calibrate.Calibration.times`)."""


def injector_variables(
    delta_ns: float,
    base: LogGPS | None,
    report_dir: Path,
    yield_cpu: bool | None = None,
    times: Times | None = None,
    passive: bool = False,
) -> dict[str, str]:
    """The environment the injector reads (see ``inject_core.c``); ``passive``: headers and
    bookkeeping without the delay path (no release time computed, ΔL ignored)."""
    variables = {
        "LLAMP_INJECT_DELTA_NS": f"{float(delta_ns):.3f}",
        "LLAMP_INJECT_REPORT": str(Path(report_dir).resolve()),
    }
    if base is not None:
        variables.update(
            LLAMP_INJECT_L_NS=f"{base.L:.3f}",
            LLAMP_INJECT_O_NS=f"{base.o:.3f}",
            LLAMP_INJECT_G_NS=f"{base.G:.6f}",
        )
        if base.S < NO_RENDEZVOUS:
            variables["LLAMP_INJECT_S"] = str(int(base.S))
        if base.rendezvous == "polled":  # a request answered only inside MPI
            variables["LLAMP_INJECT_RENDEZVOUS"] = "polled"
    if passive:
        variables["LLAMP_INJECT_PASSIVE"] = "1"
    if yield_cpu is not None:
        variables["LLAMP_INJECT_YIELD"] = "1" if yield_cpu else "0"
    if times:
        rows = sorted((int(b), float(w), float(s)) for b, w, s in times)[:64]
        variables["LLAMP_INJECT_TIMES"] = ",".join(f"{b}:{w:.1f}:{s:.1f}" for b, w, s in rows)
    return variables


def launch_command(
    command: list[str] | tuple[str, ...],
    library: Path,
    variables: dict[str, str],
    mpi: MPIInfo,
) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) that run ``command`` with ``library`` preloaded into every rank and
    ``variables`` in every rank's environment."""
    return preloaded_command(
        command,
        library,
        variables,
        mpi,
        tool="injector",
        error=InjectorError,
        usage="llamp inject --delta 20us -- mpirun -np 4 ./app",
    )


def read_reports(directory: Path) -> list[dict[str, Any]]:
    """The per-rank reports of one run, index = rank; an :class:`InjectorError` if any is
    missing (the library was not loaded, or a rank died before ``MPI_Finalize``)."""
    first = directory / REPORT_FILE.format(rank=0)
    if not first.is_file():
        raise InjectorError(
            f"no injector report in {directory}: the injector was not loaded into the MPI "
            "processes (is the application linked against the same MPI as the injector's "
            "mpicc? does the launcher pass LD_PRELOAD?) or rank 0 never reached MPI_Finalize"
        )
    reports = []
    ranks = json.loads(first.read_text())["ranks"]
    for rank in range(ranks):
        path = directory / REPORT_FILE.format(rank=rank)
        if not path.is_file():
            raise InjectorError(f"{path}: missing ({rank} of {ranks} ranks reported)")
        try:
            reports.append(json.loads(path.read_text()))
        except json.JSONDecodeError as err:
            raise InjectorError(f"{path}: unreadable report ({err})") from err
    return reports


def _busy_jiffies() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from /proc/stat, or None where there is none."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    values = [int(x) for x in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values) - idle, sum(values)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def other_load(window_s: float = 1.0) -> float | None:
    """Cores other processes keep busy, measured over ``window_s`` while this process sleeps
    (``None`` without /proc/stat)."""
    before = _busy_jiffies()
    started = time.perf_counter()
    time.sleep(window_s)
    after = _busy_jiffies()
    if before is None or after is None:
        return None
    return (after[0] - before[0]) / os.sysconf("SC_CLK_TCK") / (time.perf_counter() - started)


def wait_for_quiet(max_cores: float, *, timeout_s: float = 300.0, log=None) -> float | None:
    """Wait (up to ``timeout_s``) until other processes use at most ``max_cores`` cores; the
    last load seen. Returns at once without /proc/stat."""
    deadline = time.monotonic() + timeout_s
    told = False
    while True:
        load = other_load()
        if load is None or load <= max_cores or time.monotonic() >= deadline:
            return load
        if log is not None and not told:
            log(f"other processes keep {load:.2f} cores busy: waiting (up to {timeout_s:.0f} s)")
            told = True
        time.sleep(4.0)


class LoadProbe:
    """CPU other processes use while a child command runs (``with LoadProbe() as p: …;
    p.cores``): all busy time minus this process' children's, per second of wall time."""

    def __enter__(self) -> LoadProbe:
        self.cores = 0.0
        self._busy, self._cpu = _busy_jiffies(), _children_cpu_s()
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.perf_counter() - self._t
        busy, cpu = _busy_jiffies(), _children_cpu_s()
        if self._busy is not None and busy is not None and wall > 0:
            all_busy_s = (busy[0] - self._busy[0]) / os.sysconf("SC_CLK_TCK")
            self.cores = max(0.0, all_busy_s - (cpu - self._cpu)) / wall


def run_injected(
    command: list[str] | tuple[str, ...],
    delta_ns: float,
    *,
    base: LogGPS | None = None,
    mpicc: str | None = None,
    report_dir: Path | None = None,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float | None = None,
    output: IO[str] | None = None,
    yield_cpu: bool | None = None,
    times: Times | None = None,
    passive: bool = False,
    log=None,
) -> InjectedRun:
    """Run ``command`` with ΔL = ``delta_ns`` added to every message; its measured runtime.

    ``base`` is the emulated network (its ``S`` decides which messages pay the rendezvous
    handshake, answered only inside the receiver's MPI calls under ``rendezvous="polled"``,
    else on arrival; ``L``, ``o``, ``G`` and, better, the measured ``times`` of ``llamp calibrate``
    estimate when a message arrived at a receiver that was busy). ``output`` receives the command's
    stdout and stderr (default: inherited). Raises :class:`InjectorError` if the build or the
    run fails. ``passive`` loads the injector without its delay path (``llamp overhead``).
    """
    if delta_ns < 0:
        raise InputError(f"ΔL must be ≥ 0, got {delta_ns} ns")
    library, mpi = build_library(mpicc, log=log)
    with tempfile.TemporaryDirectory(prefix="llamp-inject-") as tmp:
        directory = Path(report_dir) if report_dir is not None else Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("inject-rank-*.json"):
            old.unlink()
        variables = injector_variables(
            delta_ns, base, directory.resolve(), yield_cpu, times, passive=passive
        )
        argv, run_env = launch_command(list(command), library, variables, mpi)
        if env:
            run_env.update(env)
        started = time.perf_counter()
        with LoadProbe() as probe:
            try:
                proc = subprocess.run(
                    argv,
                    env=run_env,
                    cwd=cwd,
                    check=False,
                    timeout=timeout,
                    stdout=output,
                    stderr=subprocess.STDOUT if output is not None else None,
                )
            except FileNotFoundError as err:
                raise InjectorError(f"cannot run {argv[0]!r}: {err.strerror}") from err
            except subprocess.TimeoutExpired as err:
                raise InjectorError(
                    f"the injected run did not finish within {timeout} s: {shlex.join(argv)}"
                ) from err
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise InjectorError(
                f"the application failed under the injector (exit code {proc.returncode}): "
                f"{shlex.join(argv)}"
            )
        reports = read_reports(directory)
    other = probe.cores
    runtimes = tuple(float(r["runtime_ns"]) for r in reports)
    counters = {key: float(sum(r.get(key, 0) for r in reports)) for key in COUNTERS}
    first = reports[0]
    return InjectedRun(
        delta_ns=float(delta_ns),
        runtime_ns=max(runtimes),
        rank_runtimes_ns=runtimes,
        counters=counters,
        wall_s=wall,
        other_load_cores=other,
        loadavg=os.getloadavg()[0],
        command=tuple(argv),
        base={
            "L_ns": float(first.get("base_L_ns", 0.0)),
            "o_ns": float(first.get("base_o_ns", 0.0)),
            "G_ns_per_byte": float(first.get("base_G_ns_per_byte", 0.0)),
        },
    )
