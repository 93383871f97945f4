"""The injector's and the tracer's own per-call costs: ``llamp overhead -- mpirun -n 2 ./app``.

A validation predicts from a *traced* run and measures *injected* runs; both preload a PMPI
library that does work at every MPI call (the tracer writes a record, the injector stamps a
header, looks up its request tables, checks a release time). At ΔL = 0 the two runs differ by
that work, which no LogGPS parameter describes. This module measures it: the same program

- ``plain``: neither library loaded (wall time of the command only: nothing reports a span);
- ``traced``: under the tracer (wall time, and the span end of ``MPI_Init`` → start of
  ``MPI_Finalize`` of the slowest rank from the trace);
- ``loaded``: under the injector with its delay path switched off (``LLAMP_INJECT_PASSIVE``:
  every header travels and every request is tracked, but no release time is computed);
- ``injected``: under the injector at ΔL = 0 (every release time is computed and is already
  past: the null injection; wall time and the injector's span),

in rounds of shuffled order until every mode's mean is known to the stopping rule of
:mod:`llamp.injector.accuracy` (95 % interval at most ``width`` of the mean, or ``max_runs``),
recording the load average and the CPU other processes used per run. Dividing a difference
of means by the traced MPI calls of the slowest rank gives a cost per call.

**How the cost enters the model** (:func:`charge_call_cost`, ``llamp validate --call-cost``):
as CPU time on the calling rank before each traced call, a calc. Not as ``o += c``: the
injector delays a message by holding back the *receiver's* completion (``inject_core.c``), and
its bookkeeping runs inside every intercepted call, message or not (``MPI_Wait``, a
collective's entry), on that rank's CPU and in series with the program. ``o`` is instead
charged per message end (twice per message, four times in a rendezvous), enters ``λ_o`` and
the NIC models, and would scale the charge with a collective's expansion into messages
instead of with its calls. The charge to give a validation is the injector's cost less the
tracer's (the trace's calcs already hold the tracer's): :attr:`Overhead.charge_ns`, and 0
when the runs cannot tell that difference from 0. Spans of whole runs scatter by per cents
on a virtual machine, so an application's runs resolve a per-call cost only to µs (LAMMPS,
3,876 calls per rank in ~360 ms: ± 4.9 µs), while the two libraries differ by 30–95 ns per
call (``llamp-injector-check exchange``); an estimate charged regardless moved the
predictions at ΔL = 0 by −5.6 % (LAMMPS) to +22 % (NPB CG) (benchmarks/VALIDATION.md, run 11).

The charge is an average over calls. Part of the injector's cost is per message rather than
per call (the small header message each message carries, ``llamp_inject.h``); it is paid
inside the sending and the completing call, so it lands on the right rank and at the right
point of the program, but an application whose calls carry very different numbers of
messages (a collective expanded into many) gets it spread evenly over its calls.

The calcs charged are those the ingest puts before a call (one per call that became
operations or a wait; calls whose time stays in a calc, such as ``MPI_Test``, are not
charged, nor the final calc before ``MPI_Finalize``). The zero-cost join calcs between the
rounds of an expanded collective are not calls and are left alone.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from llamp.errors import InputError
from llamp.graph import CALC, MESSAGE, ExecutionGraph
from llamp.injector.accuracy import DEFAULT_WIDTH, interval_converged, mean_interval
from llamp.injector.compiled import InjectorError, build_library
from llamp.injector.inject import LoadProbe, run_injected

MODES = ("plain", "traced", "loaded", "injected")


def charged_calcs(graph: ExecutionGraph) -> np.ndarray:
    """Indices of the calc vertices before a traced call (see the module doc)."""
    calc = graph.kind == CALC
    src = np.asarray(graph.edge_src, dtype=np.int64)
    dst = np.asarray(graph.edge_dst, dtype=np.int64)
    local = graph.edge_kind != MESSAGE
    candidates = calc.copy()
    # the last calc of every rank ends at MPI_Finalize: no call the span pays for follows it
    idx = np.flatnonzero(calc)
    last = np.full(graph.num_ranks, -1, np.int64)
    np.maximum.at(last, graph.rank[idx], idx)
    candidates[last[last >= 0]] = False
    if graph.t_trace_ns is not None:
        t = graph.t_trace_ns
        into = local & calc[dst]
        same = into & ~calc[src] & (t[src] == t[dst])
        has_same = np.zeros(calc.size, bool)
        has_same[dst[same]] = True
        has_other = np.zeros(calc.size, bool)
        has_other[dst[into & ~same]] = True
        join = calc & (graph.cost_ns == 0) & has_same & ~has_other
        candidates &= ~join
    return np.flatnonzero(candidates)


def charge_call_cost(graph: ExecutionGraph, cost_ns: float) -> ExecutionGraph:
    """``graph`` with ``cost_ns`` added to every calc before a traced call (a new graph; the
    file-backed lowering of the original is not reused). ``cost_ns`` may be negative (a tracer
    dearer than the injector); no calc goes below 0."""
    if not math.isfinite(cost_ns):
        raise InputError(f"--call-cost must be a finite duration, got {cost_ns}")
    cost = np.array(graph.cost_ns, dtype=np.float64, copy=True)
    at = charged_calcs(graph)
    cost[at] = np.maximum(cost[at] + cost_ns, 0.0)
    meta = dict(graph.meta) | {"call_cost_ns": float(cost_ns), "call_cost_calcs": int(at.size)}
    return dataclasses.replace(graph, cost_ns=cost, meta=meta, source=None)


@dataclass(frozen=True)
class ModeRun:
    """One run of the program in one mode."""

    mode: str
    wall_ns: float  # the whole command, launch included
    span_ns: float  # end of MPI_Init → start of MPI_Finalize, slowest rank (nan for plain)
    loadavg: float  # 1-minute load average at the end of the run
    other_load_cores: float  # CPU other processes used during the run


@dataclass(frozen=True)
class CallCost:
    """A difference of two modes' means, per traced call of the slowest rank."""

    of: str
    against: str
    measure: str  # "wall" or "span"
    difference_ns: float
    half_width_ns: float  # 95 % interval of the difference (Welch-style sum of the two)
    calls: int

    @property
    def per_call_ns(self) -> float:
        return self.difference_ns / self.calls

    @property
    def per_call_half_width_ns(self) -> float:
        return self.half_width_ns / self.calls

    def as_dict(self) -> dict[str, Any]:
        return {
            "of": self.of,
            "against": self.against,
            "measure": self.measure,
            "difference_ns": self.difference_ns,
            "ci95_half_width_ns": self.half_width_ns,
            "calls": self.calls,
            "per_call_ns": self.per_call_ns,
            "per_call_ci95_half_width_ns": self.per_call_half_width_ns,
        }


@dataclass(frozen=True)
class Overhead:
    """Runs of every mode and the per-call costs derived from them."""

    command: tuple[str, ...]
    runs: tuple[ModeRun, ...]
    calls: int  # traced MPI calls of the busiest rank (Init and Finalize excluded)
    width: float
    max_runs: int
    notes: tuple[str, ...] = field(default=())

    def values(self, mode: str, measure: str = "wall") -> list[float]:
        key = "wall_ns" if measure == "wall" else "span_ns"
        return [getattr(r, key) for r in self.runs if r.mode == mode]

    def _cost(self, of: str, against: str, measure: str) -> CallCost:
        a = mean_interval(self.values(of, measure))
        b = mean_interval(self.values(against, measure))
        return CallCost(
            of,
            against,
            measure,
            a.mean - b.mean,
            math.hypot(a.half_width, b.half_width),
            max(self.calls, 1),
        )

    @property
    def costs(self) -> tuple[CallCost, ...]:
        """Injector and tracer against the plain run (wall), injector against tracer (span:
        the charge), and the delay path at ΔL = 0 (null injection against the injector
        without it, span)."""
        return (
            self._cost("injected", "plain", "wall"),
            self._cost("traced", "plain", "wall"),
            self._cost("injected", "traced", "span"),
            self._cost("injected", "loaded", "span"),
        )

    @property
    def distinguishable(self) -> bool:
        """Whether the injector's and the tracer's spans differ by more than the 95 % interval
        of the difference."""
        charge = self.costs[2]
        return abs(charge.difference_ns) > charge.half_width_ns

    @property
    def charge_ns(self) -> float:
        """Per call: what ``llamp validate --call-cost`` should charge so that a prediction
        from the trace describes an injected run — the injector's span less the tracer's when
        the runs tell it from 0 (:attr:`distinguishable`), else 0: a difference inside its
        own interval is the runs' noise, and charging it would move every prediction by that
        noise times the number of calls."""
        return self.costs[2].per_call_ns if self.distinguishable else 0.0

    def as_dict(self) -> dict[str, Any]:
        modes = {}
        for mode in MODES:
            wall = mean_interval(self.values(mode))
            spans = self.values(mode, "span")
            span = mean_interval(spans) if mode != "plain" else None
            modes[mode] = {
                "runs": wall.n,
                "wall_mean_ns": wall.mean,
                "wall_ci95_half_width_ns": wall.half_width,
                "span_mean_ns": None if span is None else span.mean,
                "span_ci95_half_width_ns": None if span is None else span.half_width,
            }
        return {
            "command": list(self.command),
            "calls_per_rank": self.calls,
            "stopping": {"ci95_width": self.width, "max_runs": self.max_runs},
            "modes": modes,
            "costs": [c.as_dict() for c in self.costs],
            "charge_per_call_ns": self.charge_ns,
            "charge_distinguishable": self.distinguishable,
            "runs": [dataclasses.asdict(r) for r in self.runs],
            "notes": list(self.notes),
        }


def traced_calls(files: Sequence[Path]) -> int:
    """MPI calls of the busiest rank in a liballprof trace (``MPI_…:`` lines; Init and
    Finalize excluded)."""
    most = 0
    for path in files:
        n = 0
        with open(path, encoding="latin-1") as fh:
            for line in fh:
                if line.startswith("MPI_") and not line.startswith(("MPI_Init", "MPI_Finalize")):
                    n += 1
        most = max(most, n)
    return most


def _run_plain(command, *, cwd, timeout, output) -> ModeRun:
    started = time.perf_counter()
    with LoadProbe() as probe:
        try:
            proc = subprocess.run(
                list(command),
                cwd=cwd,
                timeout=timeout,
                check=False,
                stdout=output,
                stderr=subprocess.STDOUT if output is not None else None,
            )
        except FileNotFoundError as err:
            raise InjectorError(f"cannot run {command[0]!r}: {err.strerror}") from err
        except subprocess.TimeoutExpired as err:
            raise InjectorError(f"the plain run did not finish within {timeout} s") from err
    wall = (time.perf_counter() - started) * 1e9
    if proc.returncode != 0:
        raise InjectorError(f"the application failed (exit code {proc.returncode})")
    return ModeRun("plain", wall, math.nan, os.getloadavg()[0], probe.cores)


def measure_overhead(
    command: Sequence[str],
    *,
    width: float = DEFAULT_WIDTH,
    min_runs: int = 3,
    max_runs: int = 30,
    mpicc: str | None = None,
    seed: int = 0,
    cwd: str | Path | None = None,
    timeout: float | None = None,
    output=None,
    log=None,
) -> Overhead:
    """Run ``command`` plain, traced and under the null injection in shuffled rounds until
    every mode's mean (wall time; span too for the preloaded modes) meets the stopping rule."""
    from llamp.ingest.tracing import run_traced
    from llamp.injector.validate import traced_runtime_ns

    if not command:
        raise InputError("no command: llamp overhead -- mpirun -n 2 ./app")
    if min_runs < 2 or max_runs < min_runs:
        raise InputError(f"need 2 ≤ --min-runs ≤ --max-runs, got {min_runs} and {max_runs}")
    if not 0 < width < 1:
        raise InputError(f"the interval width must be between 0 and 100 %, got {width * 100:g} %")
    from llamp.ingest.tracing import build_tracer

    build_library(mpicc, log=log)  # built (or found cached) before any run is timed
    build_tracer(mpicc, log=log)
    runs: list[ModeRun] = []
    calls = 0
    rounds = 0

    def settled(mode: str) -> bool:
        done = [r for r in runs if r.mode == mode]
        ok = interval_converged(
            [r.wall_ns for r in done], width=width, min_runs=min_runs, max_runs=max_runs
        )
        if mode != "plain":
            ok = ok and interval_converged(
                [r.span_ns for r in done], width=width, min_runs=min_runs, max_runs=max_runs
            )
        return ok

    with tempfile.TemporaryDirectory(prefix="llamp-overhead-") as tmp:
        while todo := [m for m in MODES if not settled(m)]:
            random.Random(seed + rounds).shuffle(todo)
            rounds += 1
            for mode in todo:
                if mode == "plain":
                    run = _run_plain(command, cwd=cwd, timeout=timeout, output=output)
                elif mode == "traced":
                    started = time.perf_counter()
                    with LoadProbe() as probe:
                        traced = run_traced(
                            list(command),
                            Path(tmp) / "trace",
                            overwrite=True,
                            cwd=cwd,
                            timeout=timeout,
                            mpicc=mpicc,
                        )
                    wall = (time.perf_counter() - started) * 1e9
                    calls = max(calls, traced_calls(traced.files))
                    span = traced_runtime_ns(traced.files)
                    run = ModeRun("traced", wall, span, os.getloadavg()[0], probe.cores)
                else:
                    inj = run_injected(
                        list(command),
                        0.0,
                        mpicc=mpicc,
                        cwd=cwd,
                        timeout=timeout,
                        output=output,
                        passive=mode == "loaded",
                    )
                    run = ModeRun(
                        mode,
                        inj.wall_s * 1e9,
                        inj.runtime_ns,
                        inj.loadavg,
                        inj.other_load_cores,
                    )
                runs.append(run)
                if log is not None:
                    log(
                        f"[round {rounds}] {mode}: wall {run.wall_ns / 1e6:.2f} ms"
                        + ("" if math.isnan(run.span_ns) else f", span {run.span_ns / 1e6:.2f} ms")
                        + f" (load average {run.loadavg:.2f}, other processes "
                        f"{run.other_load_cores:.2f} cores)"
                    )
    notes = []
    for mode in MODES:
        values = [r.wall_ns for r in runs if r.mode == mode]
        if mean_interval(values).relative_width > width:
            notes.append(
                f"{mode}: stopped at {len(values)} runs with the 95% interval of the mean "
                f"{mean_interval(values).relative_width * 100:.2f}% wide (asked {width * 100:g}%)"
            )
    if calls == 0:
        notes.append("the trace has no MPI call besides Init and Finalize: no per-call cost")
    result = Overhead(tuple(command), tuple(runs), calls, width, max_runs, tuple(notes))
    if not result.distinguishable:
        charge = result.costs[2]
        notes.append(
            "the injector's and the tracer's spans differ by less than their 95% interval "
            f"({charge.per_call_ns:.1f} ± {charge.per_call_half_width_ns:.1f} ns per call): "
            "not distinguishable from 0 at this noise, so the charge is 0"
        )
        result = dataclasses.replace(result, notes=tuple(notes))
    return result
