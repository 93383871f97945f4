"""Predicted vs measured runtime under injected latency (LLAMP §III-B, Fig. 9):
``llamp validate --deltas 0,10,20,50,100us --repeat 5 -- mpirun …``.

1. Trace the application at ΔL = 0 (``llamp trace``'s machinery,
   :func:`llamp.ingest.tracing.run_traced`; ``traces`` times), ingest each trace into an
   execution graph and store one (each calc's mean duration over the runs:
   :func:`average_compute`) as a run.
2. Predict ``T(L0 + ΔL)`` for every ΔL with the graph engine (``L0, o, G, S`` of this machine:
   a network profile from ``llamp calibrate`` or options), from each traced run, and average
   the predictions (:func:`mean_prediction`).
3. Run the application under the injector (:func:`llamp.injector.inject.run_injected`) at every
   ΔL, ``repeat`` times, in a shuffled order per repetition so that a drift of the machine's
   load spreads over all ΔL instead of biasing some.
4. Report per ΔL the measured mean ± sd against the prediction and the relative root mean
   square error over the ΔL list, ``RRMSE = sqrt(mean((T_pred − T_meas)²)) / mean(T_meas)``
   (the paper's accuracy measure, its ref. [56]), and store it as an analysis of kind
   ``validation`` of the run. The injected runs do not depend on the model, so the same runs
   are also compared with the predictions of every model of :data:`MODELS` (each
   receive-progress × NIC model in the program order, each rendezvous × NIC model in the
   schedule order, fixed and re-scheduled): the evidence that chooses the defaults
   (``benchmarks/VALIDATION.md``).

Measured runtime = the injector's: end of ``MPI_Init`` to start of ``MPI_Finalize`` of the
slowest rank, the span ``T`` covers. Each run also records the CPU other processes used while
it ran; the result keeps the load so a reader can judge the numbers.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import re
import shutil
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from llamp.config import (
    NIC_MODELS,
    PROGRESS_MODELS,
    RENDEZVOUS_MODELS,
    format_ns,
    llamp_home,
    parse_duration_ns,
)
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.injector.accuracy import (
    DEFAULT_WIDTH,
    Offset,
    SlopeError,
    interval_converged,
    mean_interval,
    offset_at_zero,
    slope_error,
)
from llamp.injector.inject import InjectedRun, LoadProbe, run_injected, wait_for_quiet
from llamp.injector.message_costs import OVERHEAD_MODELS, MessageCosts
from llamp.params import LogGPS

KIND = "validation"


def model_name(
    progress: str, nic: str, order: str = "program", rendezvous: str = "handshake"
) -> str:
    """The key of a model combination in :attr:`Validation.models`: ``"wait/serial"`` under
    the program order and the paper's rendezvous (whatever the defaults are), else all four
    choices (``"async/serial/schedule/loggopsim"``). :attr:`Model.name` adds
    ``/rescheduled`` and ``/measured``."""
    if order == "program" and rendezvous == "handshake":
        return f"{progress}/{nic}"
    return f"{progress}/{nic}/{order}/{rendezvous}"


@dataclass(frozen=True)
class Model:
    """One combination of the model choices of docs/model.md a validation predicts under."""

    progress: str
    nic: str
    order: str = "program"
    rendezvous: str = "handshake"
    #: under the schedule order: each ΔL in the order of its own schedule pass (LogGOPSim's
    #: T at every ΔL) instead of the order at ΔL = 0.
    reschedule: bool = False
    #: the calibration's per-size overheads charged as CPU, with the wire's L and G
    #: (:mod:`llamp.injector.message_costs`), instead of ``o`` per message end alone.
    measured: bool = False

    @property
    def name(self) -> str:
        name = model_name(self.progress, self.nic, self.order, self.rendezvous)
        name += "/rescheduled" if self.reschedule else ""
        return name + "/measured" if self.measured else name

    def applied(self, params: LogGPS) -> LogGPS:
        """``params`` under this model (its schedule order taken at ``params``)."""
        return params.with_(
            progress=self.progress, nic=self.nic, order=self.order, rendezvous=self.rendezvous
        )


#: Every model a validation also predicts under: each progress × NIC model in the program
#: order with the paper's rendezvous; the schedule order under each rendezvous protocol × NIC
#: model (``loggopsim``/``serial`` is LogGOPSim's semantics), each with the order taken at
#: ΔL = 0 and with the order of each ΔL's own schedule pass. The schedule order has no
#: progress thread (docs/model.md), so one progress model stands for both. With a
#: calibration's per-size overheads (:data:`MEASURED_MODELS`) also the paper's model and the
#: schedule order (``overlap``) with the handshake and the polled rendezvous, fixed and
#: re-scheduled, with those overheads charged.
MODELS = (
    *(Model(p, n) for p in PROGRESS_MODELS for n in NIC_MODELS),
    *(
        Model("async", n, "schedule", r, reschedule=again)
        for r in RENDEZVOUS_MODELS
        for n in NIC_MODELS
        for again in (False, True)
    ),
)
MEASURED_MODELS = (
    Model("async", "overlap", measured=True),
    *(
        Model("async", "overlap", "schedule", r, reschedule=again, measured=True)
        for r in ("handshake", "polled")
        for again in (False, True)
    ),
)


#: Launchers whose arguments hold the application (``mpirun -np 4 ./app``).
_LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun", "prun", "srun", "aprun", "jsrun")
#: Interpreters whose first non-option argument names the application (``python3 app.py``).
_INTERPRETERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|bash|sh|julia|Rscript|perl|ruby|env)$")


def _is_program(word: str) -> bool:
    if "/" in word:
        return os.path.isfile(word) and os.access(word, os.X_OK)
    return shutil.which(word) is not None


def application_name(command: Sequence[str]) -> str:
    """The application a command runs, for naming its run: ``mpirun -np 4 ./lulesh -s 30``
    → ``lulesh``; ``srun -n 8 python3 app.py`` → ``app``.

    After a launcher, the application is the first word that is an executable (a path or a
    program on ``PATH``: launcher options and their values, such as ``-np 4``, are not); after
    an interpreter, its first argument that is not an option. Without an executable: the first
    word after the launcher that is neither an option nor a number."""
    words = [w for w in command if w]
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):  # VAR=value prefixes
        words = words[1:]
    if not words:
        return "app"
    first = os.path.basename(words[0])
    rest = words[1:] if first.split(".")[0] in _LAUNCHERS else words
    app = next((w for w in rest if not w.startswith("-") and _is_program(w)), None)
    if app is None:
        app = next(
            (w for w in rest if not w.startswith("-") and not re.fullmatch(r"[0-9.:,]+", w)),
            words[0],
        )
    if _INTERPRETERS.match(os.path.basename(app)):
        after = rest[rest.index(app) + 1 :]
        app = next((w for w in after if not w.startswith("-") and "=" not in w), app)
    stem = Path(app).name
    stem = Path(stem).stem if Path(stem).suffix in (".py", ".sh", ".jl", ".R", ".pl") else stem
    return re.sub(r"[^A-Za-z0-9_.-]", "_", stem) or "app"


def default_run_name(command: Sequence[str]) -> str:
    """``validate-<application>-<YYYYmmdd-HHMMSS>`` (:func:`application_name`)."""
    return f"validate-{application_name(command)}-{time.strftime('%Y%m%d-%H%M%S')}"


def parse_deltas(text: str) -> tuple[float, ...]:
    """``"0,10,20,50,100us"`` → ns; a bare number takes the unit of the last item that has one
    (µs if none has), so ``0,10,20us`` and ``0us,10us,20us`` mean the same."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise InputError("--deltas: give at least one ΔL, e.g. 0,10,20,50,100us")
    unit = "us"
    for item in reversed(items):
        tail = item.lstrip("+-0123456789.eE")
        if tail:
            unit = tail.strip()
            break
    unit = {"µs": "us", "μs": "us"}.get(unit, unit)
    values = []
    for item in items:
        bare = not item.lstrip("+-0123456789.eE")
        value = (
            parse_duration_ns(item, default_unit=unit)
            if not bare
            else parse_duration_ns(float(item), default_unit=unit)
        )
        if value < 0:
            raise InputError(f"--deltas: ΔL must be ≥ 0, got {item!r}")
        values.append(value)
    if len(set(values)) != len(values):
        raise InputError(f"--deltas: {text!r} repeats a value")
    return tuple(values)


def rrmse(predicted: Sequence[float], measured: Sequence[float]) -> float:
    """Relative root mean square error: ``sqrt(mean((p − m)²)) / mean(m)`` (a fraction)."""
    p = np.asarray(predicted, dtype=np.float64)
    m = np.asarray(measured, dtype=np.float64)
    if p.shape != m.shape or p.size == 0:
        raise InputError("RRMSE needs as many predictions as measurements, at least one")
    return float(np.sqrt(np.mean((p - m) ** 2)) / np.mean(m))


@dataclass(frozen=True)
class ValidationPoint:
    """One ΔL: the prediction and the measured runs."""

    delta_ns: float
    predicted_ns: float
    lambda_L: float
    runs_ns: tuple[float, ...]
    #: 1-minute load average at the end of each run, and the cores other processes kept busy
    #: during it (same order as ``runs_ns``; empty for results stored without them).
    loadavg: tuple[float, ...] = ()
    other_load_cores: tuple[float, ...] = ()

    @property
    def mean_ns(self) -> float:
        return float(np.mean(self.runs_ns))

    @property
    def ci95_half_width_ns(self) -> float:
        """Half-width of the measured mean's 95 % interval (nan for one run)."""
        return mean_interval(self.runs_ns).half_width

    @property
    def sd_ns(self) -> float:
        return float(np.std(self.runs_ns, ddof=1)) if len(self.runs_ns) > 1 else 0.0

    @property
    def error_pct(self) -> float:
        return (self.predicted_ns - self.mean_ns) / self.mean_ns * 100.0


@dataclass(frozen=True)
class Validation:
    """A validation of one application: per ΔL predicted vs measured, and how it was made."""

    run: str
    command: tuple[str, ...]
    params: LogGPS  # base configuration: L0 = params.L
    points: tuple[ValidationPoint, ...]
    repeat: int
    engine: str = "graph"
    #: the traced run's span (tracer, ΔL = 0); with several traced runs, their mean
    traced_runtime_ns: float = math.nan
    mpi: str = ""
    load: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    created: str = ""
    #: model name (``progress/nic``) → predicted T per ΔL under that model, same runs.
    models: dict[str, tuple[float, ...]] = field(default_factory=dict)
    #: CPU time charged in the model per traced MPI call (a calc before each call:
    #: :func:`llamp.injector.overhead.charge_call_cost`); 0 = none.
    call_cost_ns: float = 0.0
    #: parameter (``L``, ``o``, ``G``, ``S``, ``g``) → where its value came from.
    param_sources: dict[str, str] = field(default_factory=dict)
    #: the stopping rule: full width of the mean's 95 % interval aimed at (fraction of the
    #: mean) and the most runs per ΔL (``repeat`` is the least).
    target_width: float = DEFAULT_WIDTH
    max_repeat: int = 0
    #: what the prediction charges per message: ``model`` (``o`` per message end) or
    #: ``measured`` (the calibration's per-size overheads as CPU, :mod:`.message_costs`).
    overheads: str = "model"
    #: the calibration's per-size overheads, in words (:meth:`MessageCosts.describe`), when
    #: the validation had them; empty otherwise.
    message_costs: str = ""
    #: the prediction at each ΔL under the schedule order: in the order of that ΔL's own
    #: schedule pass (what ``llamp predict`` at L0 + ΔL gives), not the order at ΔL = 0.
    rescheduled: bool = False

    @property
    def rrmse(self) -> float:
        return rrmse([p.predicted_ns for p in self.points], [p.mean_ns for p in self.points])

    @property
    def offset(self) -> Offset | None:
        """Measured − predicted at ΔL = 0 (``None`` without a ΔL = 0 point)."""
        zero = next((p for p in self.points if p.delta_ns == 0), None)
        return None if zero is None else offset_at_zero(zero.runs_ns, zero.predicted_ns)

    @property
    def slope(self) -> SlopeError | None:
        """Measured vs predicted dT/dΔL (``None`` with fewer than two ΔL)."""
        if len(self.points) < 2:
            return None
        return slope_error(
            [p.delta_ns for p in self.points],
            [p.runs_ns for p in self.points],
            [p.predicted_ns for p in self.points],
        )

    def rrmse_by_model(self) -> dict[str, float]:
        """RRMSE of each model's predictions against the same measured runs."""
        measured = [p.mean_ns for p in self.points]
        return {name: rrmse(pred, measured) for name, pred in self.models.items()}

    def offset_by_model(self) -> dict[str, Offset]:
        """Each model's offset at ΔL = 0 against the same runs (empty without a ΔL = 0)."""
        k = next((i for i, p in enumerate(self.points) if p.delta_ns == 0), None)
        if k is None:
            return {}
        runs = self.points[k].runs_ns
        return {name: offset_at_zero(runs, pred[k]) for name, pred in self.models.items()}

    def slope_by_model(self) -> dict[str, SlopeError]:
        """Each model's dT/dΔL against the measured one (empty with fewer than two ΔL)."""
        if len(self.points) < 2:
            return {}
        deltas = [p.delta_ns for p in self.points]
        runs = [p.runs_ns for p in self.points]
        return {name: slope_error(deltas, runs, pred) for name, pred in self.models.items()}

    def table(self) -> pd.DataFrame:
        """One row per ΔL, units in the column names."""
        return pd.DataFrame(
            {
                "delta_L_ns": [p.delta_ns for p in self.points],
                "L_ns": [self.params.L + p.delta_ns for p in self.points],
                "predicted_ns": [p.predicted_ns for p in self.points],
                "measured_mean_ns": [p.mean_ns for p in self.points],
                "measured_sd_ns": [p.sd_ns for p in self.points],
                "runs": [len(p.runs_ns) for p in self.points],
                "error_pct": [p.error_pct for p in self.points],
                "lambda_L": [p.lambda_L for p in self.points],
                "measured_ci95_half_width_ns": [p.ci95_half_width_ns for p in self.points],
            }
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "command": list(self.command),
            "params": self.params.as_dict(),
            "repeat": self.repeat,
            "engine": self.engine,
            "traced_runtime_ns": self.traced_runtime_ns,
            "mpi": self.mpi,
            "rrmse": self.rrmse,
            "load": dict(self.load),
            "counters": dict(self.counters),
            "notes": list(self.notes),
            "created": self.created,
            "models": self._models_dict(),
            "offset_at_zero": None if self.offset is None else self.offset.as_dict(),
            "slope": None if self.slope is None else self.slope.as_dict(),
            "call_cost_ns": self.call_cost_ns,
            "overheads": self.overheads,
            "message_costs": self.message_costs,
            "rescheduled": self.rescheduled,
            "parameter_sources": dict(self.param_sources),
            "stopping": {"ci95_width": self.target_width, "max_repeat": self.max_repeat},
            "points": [
                {
                    "delta_ns": p.delta_ns,
                    "predicted_ns": p.predicted_ns,
                    "lambda_L": p.lambda_L,
                    "runs_ns": list(p.runs_ns),
                    "measured_mean_ns": p.mean_ns,
                    "measured_sd_ns": p.sd_ns,
                    "measured_ci95_half_width_ns": p.ci95_half_width_ns,
                    "error_pct": p.error_pct,
                    "loadavg": list(p.loadavg),
                    "other_load_cores": list(p.other_load_cores),
                }
                for p in self.points
            ],
        }

    def _models_dict(self) -> dict[str, dict[str, Any]]:
        err, offsets, slopes = self.rrmse_by_model(), self.offset_by_model(), self.slope_by_model()
        return {
            name: {
                "predicted_ns": list(pred),
                "rrmse": err[name],
                "offset_at_zero": offsets[name].as_dict() if name in offsets else None,
                "slope": slopes[name].as_dict() if name in slopes else None,
            }
            for name, pred in self.models.items()
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Validation:
        """Inverse of :meth:`as_dict` (the scalars of a stored ``validation`` analysis)."""
        try:
            p = data["params"]
            params = LogGPS(
                L=p["L_ns"],
                o=p["o_ns"],
                G=p["G_ns_per_byte"],
                S=int(p["S_bytes"]),
                g=float(p.get("g_ns", 0.0)),
                progress=str(p.get("progress", "async")),
                nic=str(p.get("nic", "overlap")),
                # stored before the order and protocol were recorded: the program order and
                # the handshake, the only model there was
                order=str(p.get("order", "program")),
                rendezvous=str(p.get("rendezvous", "handshake")),
            )
            points = tuple(
                ValidationPoint(
                    delta_ns=float(q["delta_ns"]),
                    predicted_ns=float(q["predicted_ns"]),
                    lambda_L=float(q.get("lambda_L", math.nan)),
                    runs_ns=tuple(float(x) for x in q["runs_ns"]),
                    loadavg=tuple(float(x) for x in q.get("loadavg") or ()),
                    other_load_cores=tuple(float(x) for x in q.get("other_load_cores") or ()),
                )
                for q in data["points"]
            )
            return cls(
                run=str(data["run"]),
                command=tuple(data.get("command", ())),
                params=params,
                points=points,
                repeat=int(data.get("repeat", 0)),
                engine=str(data.get("engine", "graph")),
                traced_runtime_ns=float(data.get("traced_runtime_ns", math.nan) or math.nan),
                mpi=str(data.get("mpi", "")),
                load={k: float(v) for k, v in (data.get("load") or {}).items()},
                counters={k: float(v) for k, v in (data.get("counters") or {}).items()},
                notes=tuple(data.get("notes", ())),
                created=str(data.get("created", "")),
                models={
                    str(name): tuple(float(x) for x in entry["predicted_ns"])
                    for name, entry in (data.get("models") or {}).items()
                },
                call_cost_ns=float(data.get("call_cost_ns") or 0.0),
                overheads=str(data.get("overheads") or "model"),
                message_costs=str(data.get("message_costs") or ""),
                rescheduled=bool(data.get("rescheduled", False)),
                param_sources={
                    str(k): str(v) for k, v in (data.get("parameter_sources") or {}).items()
                },
                target_width=float((data.get("stopping") or {}).get("ci95_width", DEFAULT_WIDTH)),
                max_repeat=int((data.get("stopping") or {}).get("max_repeat", 0)),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(f"not a validation result ({err})") from err

    def summary(self) -> str:
        """Human table: ΔL, predicted, measured mean ± sd, error; RRMSE and the load."""
        from llamp.config import format_table as table

        rows = [
            (
                format_ns(p.delta_ns),
                format_ns(p.predicted_ns),
                f"{format_ns(p.mean_ns)} ± {format_ns(p.sd_ns)}",
                _interval_text(p.ci95_half_width_ns, p.mean_ns),
                len(p.runs_ns),
                f"{p.error_pct:+.2f}%",
                f"{p.lambda_L:g}",
            )
            for p in self.points
        ]
        text = table(
            rows,
            ("ΔL", "predicted T", "measured T (mean ± sd)", "95% CI", "runs", "error", "λ_L"),
        )
        load = self.load
        lines = [
            text,
            f"RRMSE {self.rrmse * 100:.2f}% over {len(self.points)} values of ΔL "
            f"(L0 = {format_ns(self.params.L)}, o = {format_ns(self.params.o)}, "
            f"G = {self.params.G:.4g} ns/B, S = {self.params.S} B, g = "
            f"{format_ns(self.params.g)}; progress {self.params.progress}, NIC "
            f"{self.params.nic}; engine {self.engine})",
        ]
        lines.extend(self._diagnosis())
        if self.param_sources:
            by_source: dict[str, list[str]] = {}
            for name, source in self.param_sources.items():
                by_source.setdefault(source, []).append(name)
            lines.append(
                "parameters from: "
                + "; ".join(f"{', '.join(names)}: {src}" for src, names in by_source.items())
            )
        if self.max_repeat > self.repeat:
            for p in self.points:
                width = mean_interval(p.runs_ns).relative_width
                if width > self.target_width:
                    lines.append(
                        f"ΔL = {format_ns(p.delta_ns)} stopped at {len(p.runs_ns)} runs with "
                        f"its mean's 95% interval {width * 100:.2f}% wide (target "
                        f"{self.target_width * 100:g}%)"
                    )
        if self.call_cost_ns:
            lines.append(
                f"charged in the model: {format_ns(self.call_cost_ns)} of CPU before each "
                "traced MPI call (--call-cost)"
            )
        if self.rescheduled:
            lines.append(
                "each ΔL predicted in the order of its own schedule pass (as `llamp predict` at "
                "L0 + ΔL; --fixed-order: the order at ΔL = 0)"
            )
        if self.overheads == "measured":
            lines.append(f"charged in the model (--overheads measured): {self.message_costs}")
        elif self.message_costs:
            lines.append(
                f"models marked /measured: {self.message_costs} (this prediction: o per message "
                "end, --overheads model)"
            )
        if self.models:
            lines.append(self.models_table())
        if load:
            lines.append(
                f"load: the traced run shared the machine with "
                f"{load.get('trace_other_load_cores', math.nan):.2f} busy cores of other "
                f"processes; other processes used {load.get('other_load_cores_mean', 0):.2f} cores on "
                f"average (max {load.get('other_load_cores_max', 0):.2f}) while the "
                f"{int(load.get('runs', 0))} runs ran; 1-min load average "
                f"{load.get('loadavg_mean', 0):.2f}"
                + (
                    f"; {int(load['disturbed_runs'])} runs stayed above "
                    f"{load['max_other_load_cores']:.2f} cores after retries"
                    if load.get("disturbed_runs")
                    else ""
                )
            )
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def models_table(self) -> str:
        """Per model, against the same runs: RRMSE, the offset at ΔL = 0 (measured −
        predicted) and the slope error (predicted − measured dT/dΔL)."""
        from llamp.config import format_table as table

        err, offsets, slopes = self.rrmse_by_model(), self.offset_by_model(), self.slope_by_model()
        rows = []
        for name in self.models:
            off, slope = offsets.get(name), slopes.get(name)
            rows.append(
                (
                    name,
                    f"{err[name] * 100:.2f}%",
                    "–"
                    if off is None
                    else f"{_signed_ns(off.offset_ns)} ({off.relative * 100:+.2f}%)",
                    "–" if slope is None else f"{slope.predicted:.4g}",
                    "–" if slope is None else _slope_error_text(slope),
                )
            )
        measured = next(iter(slopes.values()), None)
        title = "by model (same runs" + (
            "):"
            if measured is None
            else f"; measured dT/dΔL {measured.measured:.4g}"
            + (
                f" ± {measured.standard_error:.4g} (s.e.)):"
                if math.isfinite(measured.standard_error)
                else "):"
            )
        )
        return (
            title
            + "\n"
            + table(
                rows,
                ("model", "RRMSE", "offset at ΔL = 0", "predicted dT/dΔL", "slope error"),
            )
        )

    def _diagnosis(self) -> list[str]:
        """The offset at ΔL = 0 and the slope error, each against its noise."""
        lines = []
        off = self.offset
        if off is not None:
            noise = (
                "one run: no interval"
                if off.within_noise is None
                else ("inside" if off.within_noise else "outside")
                + f" the measured mean's 95% interval ± {format_ns(off.half_width_ns)}"
            )
            lines.append(
                f"offset at ΔL = 0: measured − predicted = {_signed_ns(off.offset_ns)} "
                f"({off.relative * 100:+.2f}% of {format_ns(off.measured_ns)}; {noise})"
            )
        slope = self.slope
        if slope is not None:
            rel = f", {slope.relative * 100:+.1f}%" if math.isfinite(slope.relative) else ""
            noise = (
                "no standard error: no more runs than ΔL values"
                if not math.isfinite(slope.standard_error)
                else ("inside" if slope.within_noise else "outside")
                + " the measured slope's 95% interval"
            )
            se = (
                ""
                if not math.isfinite(slope.standard_error)
                else (f" ± {slope.standard_error:.4g} (s.e.)")
            )
            lines.append(
                f"slope dT/dΔL (least squares over the runs): measured {slope.measured:.4g}{se}, "
                f"predicted {slope.predicted:.4g}: error {slope.error:+.4g}{rel} ({noise})"
            )
        return lines


def _slope_error_text(slope: SlopeError) -> str:
    rel = f" ({slope.relative * 100:+.1f}%)" if math.isfinite(slope.relative) else ""
    return f"{slope.error:+.4g}{rel}"


def _signed_ns(value: float) -> str:
    return ("+" if value >= 0 else "−") + format_ns(abs(value))


def _interval_text(half_width_ns: float, mean_ns: float) -> str:
    if not math.isfinite(half_width_ns):
        return "–"
    return f"± {format_ns(half_width_ns)} ({2 * half_width_ns / mean_ns * 100:.2f}%)"


def predict_deltas(
    graph,
    params: LogGPS,
    deltas: Sequence[float],
    *,
    engine: str = "auto",
    reschedule: bool = False,
) -> pd.DataFrame:
    """``T(L0 + ΔL)`` and ``λ_L`` for each ΔL (columns ``delta_L_ns``, ``runtime_ns``,
    ``lambda_L``); under the schedule order with ``reschedule``, each ΔL in the order of its
    own schedule pass (LogGOPSim's T there), else in the order at ``params``."""
    from llamp.lp import sweep

    values = [params.L + d for d in deltas]
    frame = sweep(graph, params, values, parameter="L", engine=engine, reschedule=reschedule)
    frame.insert(0, "delta_L_ns", list(deltas))
    return frame


def predict_models(
    graph, params: LogGPS, deltas: Sequence[float], costs: MessageCosts | None = None
) -> dict[str, tuple[float, ...]]:
    """``T(L0 + ΔL)`` for each ΔL under every model of :data:`MODELS` (by name), and with
    ``costs`` (a calibration's per-size overheads) under :data:`MEASURED_MODELS` too; the graph
    engine's."""
    charged, wired = (graph, params) if costs is None else measured_overheads(graph, params, costs)
    return {
        m.name: tuple(
            predict_deltas(
                charged if m.measured else graph,
                m.applied(wired if m.measured else params),
                deltas,
                engine="graph",
                reschedule=m.reschedule,
            )["runtime_ns"].astype(float)
        )
        for m in (*MODELS, *(MEASURED_MODELS if costs is not None else ()))
    }


def predict_traced(
    graph,
    params: LogGPS,
    deltas: Sequence[float],
    *,
    call_cost_ns: float = 0.0,
    message_costs: MessageCosts | None = None,
    reschedule: bool = True,
    engine: str = "auto",
) -> tuple[Any, LogGPS, pd.DataFrame]:
    """One traced run's prediction at every ΔL: (its graph with ``call_cost_ns`` charged before
    each call, the parameters predicted with, :func:`predict_deltas`' frame). With
    ``message_costs`` the calibration's per-size overheads are charged too, on the wire's
    ``L`` and ``G`` (:func:`measured_overheads`); with ``reschedule`` under the schedule order
    each ΔL is predicted in its own schedule's order."""
    if call_cost_ns:
        from llamp.injector.overhead import charge_call_cost

        graph = charge_call_cost(graph, call_cost_ns)
    charged, used = (
        (graph, params)
        if message_costs is None
        else measured_overheads(graph, params, message_costs)
    )
    again = reschedule and used.order == "schedule"
    return graph, used, predict_deltas(charged, used, deltas, engine=engine, reschedule=again)


def measured_overheads(graph, params: LogGPS, costs: MessageCosts) -> tuple[Any, LogGPS]:
    """``graph`` with the calibration's per-size overheads charged as CPU, and ``params`` with
    the wire's ``L`` and ``G`` (:mod:`llamp.injector.message_costs`; ``o``, ``S``, ``g`` and
    the model choices kept)."""
    L, G = costs.wire()
    return costs.charge(graph), params.with_(L=L, G=G).rescheduled()


def measure(
    command: Sequence[str],
    deltas: Sequence[float],
    *,
    repeat: int,
    base: LogGPS | None,
    max_repeat: int | None = None,
    width: float = DEFAULT_WIDTH,
    mpicc: str | None = None,
    seed: int = 0,
    max_other_load: float | None = None,
    retries: int = 3,
    quiet_timeout_s: float = 300.0,
    times=None,
    cwd: str | Path | None = None,
    timeout: float | None = None,
    output=None,
    log=None,
    before_round: Callable[[int], None] | None = None,
) -> dict[float, list[InjectedRun]]:
    """At least ``repeat`` injected runs per ΔL, each round in its own shuffled order.
    ``before_round(k)`` is called before each round ``k`` after the first (k = 1, 2, …).

    With ``max_repeat`` above ``repeat``, rounds continue over the ΔL whose mean is not yet
    known well enough (:func:`llamp.injector.accuracy.interval_converged`: the 95 % interval
    of the mean at most ``width`` of it) until every ΔL is, or has ``max_repeat`` runs.

    With ``max_other_load`` (cores), each run waits (up to ``quiet_timeout_s``, 30 s once a
    wait has timed out) until other processes use at most that much CPU, and a run during
    which they used more is disturbed and made again, up to ``retries`` more times; the last
    try is kept.
    """
    if repeat < 1:
        raise InputError(f"--repeat must be ≥ 1, got {repeat}")
    most = repeat if max_repeat is None else max_repeat
    if most < repeat:
        raise InputError(f"--max-repeat ({most}) must be at least --repeat ({repeat})")
    if not 0 < width < 1:
        raise InputError(f"the interval width must be between 0 and 100 %, got {width * 100:g} %")
    runs: dict[float, list[InjectedRun]] = {d: [] for d in deltas}
    done = 0
    patience = quiet_timeout_s

    def pending() -> list[float]:
        return [
            d
            for d, rs in runs.items()
            if len(rs) < repeat
            or not interval_converged(
                [r.runtime_ns for r in rs], width=width, min_runs=repeat, max_runs=most
            )
        ]

    rep = 0
    while todo := pending():
        if rep and before_round is not None:
            before_round(rep)
        order = list(todo)
        random.Random(seed + rep).shuffle(order)
        rep += 1
        for delta in order:
            for attempt in range(retries + 1):
                if max_other_load is not None:
                    seen = wait_for_quiet(max_other_load, timeout_s=patience, log=log)
                    if seen is not None and seen > max_other_load:
                        patience = min(patience, 30.0)  # persistently busy: wait less
                run = run_injected(
                    command,
                    delta,
                    base=base,
                    times=times,
                    mpicc=mpicc,
                    cwd=cwd,
                    timeout=timeout,
                    output=output,
                )
                disturbed = max_other_load is not None and run.other_load_cores > max_other_load
                if log is not None:
                    log(
                        f"[run {done + 1}, round {rep}] ΔL = {format_ns(delta)}: T = "
                        f"{format_ns(run.runtime_ns)} (other processes: "
                        f"{run.other_load_cores:.2f} cores, load average {run.loadavg:.2f}"
                        + (", disturbed: again)" if disturbed and attempt < retries else ")")
                    )
                if not disturbed:
                    break
            runs[delta].append(run)
            done += 1
    return runs


def _load_summary(
    runs: dict[float, list[InjectedRun]], max_other_load: float | None
) -> dict[str, float]:
    every = [r for rs in runs.values() for r in rs]
    other = np.array([r.other_load_cores for r in every])
    return {
        "runs": float(len(every)),
        "disturbed_runs": float(np.sum(other > max_other_load)) if max_other_load else 0.0,
        "max_other_load_cores": float(max_other_load or 0.0),
        "other_load_cores_mean": float(other.mean()),
        "other_load_cores_max": float(other.max()),
        "loadavg_mean": float(np.mean([r.loadavg for r in every])),
        "cpus": float(len(os.sched_getaffinity(0))),
    }


def _consistency(runs: dict[float, list[InjectedRun]], graph_messages: int) -> tuple[dict, list]:
    """Counters of the runs, and notes where the runs or the graph disagree."""
    notes = []
    every = [r for rs in runs.values() for r in rs]
    sent = {int(r.counters["messages_sent"] + r.counters["collective_messages"]) for r in every}
    if len(sent) > 1:
        notes.append(
            f"the injected runs sent different numbers of messages ({min(sent)}–{max(sent)}): the "
            "application's communication depends on timing (time-bounded loops, wildcards), "
            "so no single execution graph describes every run"
        )
    injected = max(sent)
    if injected != graph_messages:
        notes.append(
            f"the graph has {graph_messages} messages, an injected run {injected} (point-to-"
            "point and collective): collectives the graph expands differently, or calls the "
            "injector passed through"
        )
    passthrough = max(r.counters["passthrough_calls"] for r in every)
    if passthrough:
        notes.append(f"{int(passthrough)} MPI calls per run were not delayed (see llamp inject)")
    mismatches = max(r.counters["header_mismatches"] for r in every)
    if mismatches:
        notes.append(f"{int(mismatches)} messages lost their send-time header pairing")
    first = every[0].counters
    counters = {
        k: first[k]
        for k in (
            "messages_sent",
            "bytes_sent",
            "collectives",
            "collective_messages",
            "passthrough_calls",
        )
    }
    return counters, notes


def run_validation(
    command: Sequence[str],
    deltas: Sequence[float],
    *,
    params: LogGPS,
    repeat: int = 5,
    max_repeat: int | None = None,
    width: float = DEFAULT_WIDTH,
    call_cost_ns: float = 0.0,
    message_costs: MessageCosts | None = None,
    overheads: str = "model",
    traces: int = 1,
    reschedule: bool = True,
    param_sources: dict[str, str] | None = None,
    run_name: str | None = None,
    trace_dir: Path | None = None,
    mpicc: str | None = None,
    collectives: dict[str, str] | None = None,
    engine: str = "auto",
    store_uri: str | None = None,
    store: bool = True,
    replace: bool = True,
    seed: int = 0,
    max_other_load: float | None = None,
    quiet_timeout_s: float = 300.0,
    times=None,
    cwd: str | Path | None = None,
    timeout: float | None = None,
    output=None,
    log=None,
) -> tuple[Validation, str | None]:
    """Trace, predict, measure, compare (see the module doc); (result, stored analysis id).

    ``repeat``/``max_repeat``/``width``: the stopping rule of :func:`measure`. ``call_cost_ns``:
    CPU time charged in the model before each traced MPI call
    (:func:`llamp.injector.overhead.charge_call_cost`), e.g. the injector's per-call cost less
    the tracer's as ``llamp overhead`` measures them. ``message_costs``: a calibration's
    per-size overheads; with them every model is also predicted with those overheads charged
    (:data:`MEASURED_MODELS`), and ``overheads="measured"`` makes that the prediction
    (:func:`measured_overheads`). ``traces``: traced runs at ΔL = 0; with more than one the
    prediction is the mean of each run's (:func:`mean_prediction`: one traced run is one
    sample of a noisy program). ``reschedule``: under the schedule order each ΔL is
    predicted in the order of its own schedule pass, as ``llamp predict`` at L0 + ΔL does (the
    order at ΔL = 0 is a device of the range analyses; every model is also predicted with it).
    ``param_sources`` says where each LogGPS parameter came from (reported as given)."""
    from llamp.ingest import read
    from llamp.ingest.tracing import run_traced

    if not command:
        raise InputError("no command: llamp validate --deltas 0,10,20us -- mpirun -np 4 ./app")
    if overheads not in OVERHEAD_MODELS:
        raise InputError(
            f"unknown overheads {overheads!r}: use one of " + ", ".join(OVERHEAD_MODELS)
        )
    if overheads == "measured" and message_costs is None:
        raise InputError(
            "--overheads measured needs the per-size overheads of a calibration: --network NAME "
            "saved by `llamp calibrate --save NAME`"
        )
    if traces < 1:
        raise InputError(f"--traces must be at least 1, got {traces}")
    deltas = tuple(sorted(float(d) for d in deltas))
    name = run_name or default_run_name(command)
    directory = Path(trace_dir) if trace_dir else llamp_home() / "validation" / name / "trace"
    runs_traced, graphs, loads = [], [], []

    def trace(k: int) -> None:
        """The ``k``-th traced run (again while other processes disturb it)."""
        into = trace_directory(directory, k)
        for attempt in range(4 if max_other_load is not None else 1):
            if max_other_load is not None:
                wait_for_quiet(max_other_load, timeout_s=quiet_timeout_s, log=log)
            if log:
                log(f"tracing at ΔL = 0 into {into}")
            with LoadProbe() as probe:
                traced = run_traced(
                    list(command),
                    into,
                    mpicc=mpicc,
                    overwrite=True,
                    log=log,
                    cwd=cwd,
                    timeout=timeout,
                )
            if max_other_load is None or probe.cores <= max_other_load:
                break
            if log and attempt < 3:
                log(
                    f"the traced run was disturbed (other processes: {probe.cores:.2f} cores): again"
                )
        loads.append(probe.cores)
        runs_traced.append(traced)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graphs.append(
                read(traced.directory, fmt="liballprof", collectives=collectives or {}, name=name)
            )

    # The first traced run before any injected one (a trace that cannot be read stops the
    # validation before it measures anything); the k-th before the k-th round of injected
    # runs, so the traced runs sample the machine over the measurement as the injected runs
    # do (this VM's speed drifts by tens of percent within seconds), not only its first
    # seconds; any left after the last round, after it.
    trace(0)
    rescheduled = reschedule and params.order == "schedule"  # each ΔL in its own order

    def prediction(graph) -> tuple[Any, LogGPS, pd.DataFrame]:
        return predict_traced(
            graph,
            params,
            deltas,
            call_cost_ns=call_cost_ns,
            message_costs=message_costs if overheads == "measured" else None,
            reschedule=reschedule,
            engine=engine,
        )

    # The first run's prediction now: a graph that cannot be predicted stops here, before the
    # measurement.
    first = prediction(graphs[0])
    if log:
        log(
            f"graph: {graphs[0].num_vertices} vertices, {graphs[0].summary().messages} messages; "
            f"predicted T(L0) from the first traced run = "
            f"{format_ns(float(first[2]['runtime_ns'].iloc[0]))}"
        )
    runs = measure(
        command,
        deltas,
        repeat=repeat,
        max_repeat=max_repeat,
        width=width,
        base=params,
        mpicc=mpicc,
        seed=seed,
        max_other_load=max_other_load,
        quiet_timeout_s=quiet_timeout_s,
        times=times,
        cwd=cwd,
        timeout=timeout,
        output=output,
        log=log,
        before_round=lambda k: trace(k) if k < traces else None,
    )
    for k in range(len(graphs), traces):
        trace(k)
    traced, trace_load = runs_traced[-1], max(loads)
    # each traced run predicted (the first already), the predictions averaged
    each = [first, *(prediction(g) for g in graphs[1:])]
    used = first[1]
    predicted = mean_prediction([p for _, _, p in each])
    models = mean_models([predict_models(g, params, deltas, message_costs) for g, _, _ in each])
    # the graph kept with the result: the calcs' mean durations, where the runs' structure
    # allows it (a representative graph for the analyses; the prediction is the mean above)
    graph, averaged = average_compute([g for g, _, _ in each])
    if log and len(graphs) > 1:
        log(f"predicted T(L0) = {format_ns(float(predicted['runtime_ns'].iloc[0]))}")
    counters, notes = _consistency(runs, int(graph.summary().messages))
    zero = [r for d, rs in runs.items() if d == 0 for r in rs]
    spans = [traced_runtime_ns(t.files) for t in runs_traced]
    traced_T = float(np.mean(spans))
    if len(spans) > 1:
        notes.append(traces_note(spans, averaged))
    if zero and math.isfinite(traced_T):
        overhead = np.mean([r.runtime_ns for r in zero]) / traced_T - 1.0
        took = "the traced run took" if len(spans) == 1 else "the traced runs took on average"
        notes.append(
            f"injector at ΔL = 0 vs the traced run: {overhead * 100:+.1f}% runtime ({took} "
            f"{format_ns(traced_T)})"
        )
    if (own := self_prediction_note([p for _, _, p in each], spans)) is not None:
        notes.append(own)
    points = tuple(
        ValidationPoint(
            delta_ns=d,
            predicted_ns=float(row.runtime_ns),
            lambda_L=float(row.lambda_L),
            runs_ns=tuple(r.runtime_ns for r in runs[d]),
            loadavg=tuple(r.loadavg for r in runs[d]),
            other_load_cores=tuple(r.other_load_cores for r in runs[d]),
        )
        for d, row in zip(deltas, predicted.itertuples(index=False), strict=True)
    )
    result = Validation(
        run=name,
        command=tuple(command),
        params=used,
        points=points,
        repeat=repeat,
        engine=str(predicted["engine"].iloc[0]) if "engine" in predicted else engine,
        traced_runtime_ns=traced_T,
        mpi=traced.mpi.label,
        load=_load_summary(runs, max_other_load) | {"trace_other_load_cores": trace_load},
        counters=counters,
        notes=tuple(notes),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        models=models,
        call_cost_ns=float(call_cost_ns),
        overheads=overheads,
        message_costs="" if message_costs is None else message_costs.describe(),
        rescheduled=rescheduled,
        param_sources=dict(param_sources or {}),
        target_width=width,
        max_repeat=repeat if max_repeat is None else max_repeat,
    )
    analysis_id = None
    if store:
        analysis_id = store_validation(result, graph=graph, store_uri=store_uri, replace=replace)
    return result, analysis_id


def trace_directory(directory: Path, k: int) -> Path:
    """Where the ``k``-th traced run goes: ``directory`` itself, then ``directory-2``, … ."""
    return Path(directory) if k == 0 else Path(f"{directory}-{k + 1}")


def mean_prediction(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The mean over traced runs of each run's prediction (:func:`predict_deltas`): ``T`` and
    ``λ_L`` per ΔL averaged, the other columns the first run's.

    Why not one prediction from the calcs' mean durations (:func:`average_compute`): ``T`` is
    a longest path, convex in the calcs' durations, so ``T(mean durations) ≤ mean T(each
    run's durations)``, short of it by the runs' scatter (an iteration waits for the slower
    of two ranks, and averaging first cancels what each run's slower rank costs). An
    injected run draws its durations as a traced run does, so the mean of the runs'
    predictions is the estimate of the mean an injected ΔL measures; it also needs no common
    structure (a program whose communication depends on timing)."""
    first = frames[0]
    if len(frames) == 1:
        return first
    mean = first.copy()
    for column in ("runtime_ns", "lambda_L"):
        mean[column] = np.mean([f[column].to_numpy(dtype=float) for f in frames], axis=0)
    return mean


def self_prediction_note(frames: Sequence[pd.DataFrame], spans: Sequence[float]) -> str | None:
    """How far the prediction at ΔL = 0 of each traced run (``frames``, as
    :func:`predict_deltas` gives) falls from what that run took (``spans``): what the model
    misses before any latency is injected, apart from the tools' costs and from the injected
    runs' scatter (None without a ΔL = 0 or a span)."""
    own = []
    for frame in frames:
        zero = frame.loc[frame["delta_L_ns"] == 0, "runtime_ns"]
        if zero.empty:
            return None
        own.append(float(zero.iloc[0]))
    took = np.asarray(spans, dtype=float)
    if len(took) != len(own) or not np.all(np.isfinite(took)) or not np.all(took > 0):
        return None
    each = np.asarray(own) / took - 1.0
    spread = (
        "" if len(each) == 1 else f"; per run {each.min() * 100:+.1f} … {each.max() * 100:+.1f} %"
    )
    return (
        f"the model against the traced runs themselves at ΔL = 0: predicted "
        f"{format_ns(float(np.mean(own)))}, they took {format_ns(float(took.mean()))} "
        f"({(np.mean(own) / took.mean() - 1.0) * 100:+.1f} %{spread}): what the model misses "
        "before any latency is injected"
    )


def mean_models(
    predictions: Sequence[dict[str, tuple[float, ...]]],
) -> dict[str, tuple[float, ...]]:
    """Each model's ``T`` per ΔL averaged over the traced runs' predictions
    (:func:`predict_models` of each; :func:`mean_prediction` says why)."""
    return {
        name: tuple(float(t) for t in np.mean([p[name] for p in predictions], axis=0))
        for name in predictions[0]
    }


def average_compute(graphs: Sequence[ExecutionGraph]) -> tuple[ExecutionGraph, bool]:
    """One graph whose calcs take their mean duration over ``graphs`` — traced runs of the same
    program — and whether it could: the runs must have the same structure (vertices, their
    ranks, kinds, sizes, peers and tags, and edges), which a program whose communication
    depends on timing (wildcard receives, time-bounded loops) does not. Otherwise the first
    run's graph, unchanged."""
    first = graphs[0]
    if len(graphs) == 1:
        return first, False
    columns = ("rank", "kind", "size", "peer", "tag", "edge_src", "edge_dst", "edge_kind")
    for other in graphs[1:]:
        if other.num_vertices != first.num_vertices or other.num_edges != first.num_edges:
            return first, False
        if not all(np.array_equal(getattr(other, c), getattr(first, c)) for c in columns):
            return first, False
    cost = np.mean([g.cost_ns for g in graphs], axis=0)
    meta = dict(first.meta) | {"compute_averaged_over_runs": len(graphs)}
    return dataclasses.replace(first, cost_ns=cost, meta=meta, source=None), True


def traces_note(spans: Sequence[float], averaged: bool) -> str:
    what = (
        ""
        if averaged
        else " (their communication differs: the program depends on timing; the graph kept is "
        "the first run's)"
    )
    return (
        f"{len(spans)} traced runs at ΔL = 0 took {format_ns(min(spans))} … "
        f"{format_ns(max(spans))} (mean {format_ns(float(np.mean(spans)))}); the prediction is "
        f"the mean of each run's{what}"
    )


def traced_runtime_ns(files: Sequence[Path]) -> float:
    """End of MPI_Init to start of MPI_Finalize of the slowest rank, from the trace text."""
    spans = []
    for path in files:
        init_end = fin_start = None
        with open(path, encoding="latin-1") as fh:
            for line in fh:
                if line.startswith(("MPI_Init:", "MPI_Init_thread:")) and init_end is None:
                    init_end = float(line.rstrip().rsplit(":", 1)[1])
                elif line.startswith("MPI_Finalize:"):
                    fin_start = float(line.split(":")[1])
        if init_end is None or fin_start is None:
            return math.nan
        spans.append((fin_start - init_end) * 1e3)
    return max(spans) if spans else math.nan


def store_validation(
    result: Validation, *, graph=None, store_uri: str | None = None, replace: bool = True
) -> str:
    """Store ``result`` as a ``validation`` analysis of its run (the graph is stored first if
    given: as a new run, or replacing one of that name with ``replace``); the analysis id."""
    from llamp.graphdb import open_store

    with open_store(store_uri) as store:
        if graph is not None and (replace or not store.has_run(result.run)):
            store.put_run(graph, result.run, replace=replace)
        params = {
            **result.params.as_dict(),
            "deltas_ns": [p.delta_ns for p in result.points],
            "repeat": result.repeat,
            "command": list(result.command),
            "engine": result.engine,
        }
        return store.write_analysis(result.run, KIND, params, result.as_dict())


def load_validations(
    store_uri: str | None = None, run: str | None = None
) -> list[tuple[str, Validation]]:
    """Stored validations (of ``run``, or all), oldest first: (analysis id, result)."""
    from llamp.graphdb import open_store

    with open_store(store_uri, read_only=True) as store:
        infos = [a for a in store.list_analyses(run) if a.kind == KIND]
    return [(a.id, Validation.from_dict(a.scalars)) for a in infos]
