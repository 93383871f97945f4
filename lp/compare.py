"""Runs side by side: ``T(L)``, ``λ_L``, tolerances, critical-path composition and
what changed between two or more runs under one LogGPS configuration.

Every run is analysed with the same parameters; the first run is the baseline of "what
changed". Each run's ``T(L)`` is exact: every critical latency over the run's own L range
(:func:`search_settings`: [0, 1.25 × its largest L tolerance], or [0, a given largest L] for
every run), the registry's ``critical`` search with its automatic budget, and the curve read
off its linear pieces (:func:`llamp.lp.critical.exact_curve`: ``T`` linear and ``λ_L``
constant between two breakpoints). The command line (``llamp compare``, its JSON and HTML) and
the UI's Compare page consume this one result; the page computes it run by run
(:func:`run_figures`, :func:`search_settings`, :func:`assemble`) so a run added to a comparison
costs only that run. The figures come from the analyses themselves
(:func:`~llamp.lp.predict.predict`, :func:`~llamp.lp.tolerance.tolerance`,
:func:`~llamp.lp.path.critical_path`, :func:`~llamp.lp.critical.critical_latencies`), never
computed here a second way. The critical-path composition splits ``T`` exactly into compute,
overhead, latency and bandwidth time (LLAMP §II-B; :mod:`llamp.lp.path`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from llamp.config import DEFAULT_TOLERANCES, format_ns, format_percent
from llamp.errors import InputError
from llamp.graph import COLL, ExecutionGraph
from llamp.lp.critical import CriticalLatencies, exact_curve
from llamp.lp.path import critical_path
from llamp.lp.predict import Prediction, predict
from llamp.lp.tolerance import Tolerance, latency_range, tolerance
from llamp.params import LogGPS

if TYPE_CHECKING:
    from llamp.lp.registry import CriticalSettings

#: Parts of the critical path, in the order they are shown.
PARTS = ("compute", "overhead", "latency", "bandwidth")


@dataclass(frozen=True)
class RunFigures:
    """One run's size and its analyses at the shared configuration."""

    name: str
    ranks: int
    vertices: int
    messages: int
    bytes: int
    collective_instances: int
    collective_messages: int
    calc_ns_total: float
    prediction: Prediction
    tolerance: Tolerance
    #: ns of compute, overhead, latency and bandwidth on the critical path (sum = ``T``).
    path_ns: dict[str, float]
    path_messages: int

    @property
    def runtime_ns(self) -> float:
        return self.prediction.runtime_ns

    def path_share(self, part: str) -> float:
        T = self.prediction.runtime_ns
        return self.path_ns[part] / T if T > 0 else 0.0

    def latency_tolerance(self, x: float) -> float:
        return next(t.value for t in self.tolerance.latency if math.isclose(t.x, x))

    def bandwidth_tolerance(self, x: float) -> float:
        return next(t.value for t in self.tolerance.bandwidth if math.isclose(t.x, x))

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ranks": self.ranks,
            "vertices": self.vertices,
            "messages": self.messages,
            "bytes": self.bytes,
            "collective_instances": self.collective_instances,
            "collective_messages": self.collective_messages,
            "calc_ns_total": self.calc_ns_total,
            "predict": self.prediction.as_dict(),
            "tolerance": self.tolerance.as_dict(),
            "path": {f"{p}_ns": self.path_ns[p] for p in PARTS} | {"messages": self.path_messages},
        }


@dataclass(frozen=True)
class Change:
    """One quantity of a run against the baseline run."""

    quantity: str
    unit: str  # "ns", "ns/B", "count", "bytes", "share" or "" (a plain number)
    baseline: float
    value: float

    @property
    def delta(self) -> float:
        if math.isinf(self.baseline) and math.isinf(self.value):
            return 0.0
        return self.value - self.baseline

    @property
    def ratio(self) -> float:
        """value / baseline (``nan`` when the baseline is 0 or infinite)."""
        if self.baseline == 0 or not math.isfinite(self.baseline):
            return math.nan
        return self.value / self.baseline

    @property
    def significant(self) -> bool:
        """False for equal values and float noise (a share within 0.05 points, a value within
        1e-9 relative)."""
        if self.unit == "share":
            return abs(self.value - self.baseline) >= 5e-4
        if math.isinf(self.baseline) or math.isinf(self.value):
            return self.baseline != self.value
        return abs(self.value - self.baseline) > 1e-9 * max(abs(self.baseline), abs(self.value))

    def shown(self, value: float) -> str:
        """``value`` in this quantity's unit, for people: ``1.615 µs``, ``207.4 MB``, ``12.5%``."""
        return _FORMAT.get(self.unit, _plain)(value)

    def relative(self) -> str:
        """The change as people read it: ``+30.0%``, ``×4e-09``, ``+12.2 points``, ``=``."""
        if not self.significant:
            return "="
        return self.text().rsplit(" (", 1)[1].rstrip(")") if " (" in self.text() else ""

    def text(self) -> str:
        """``runtime: 1.615 µs → 2.1 µs (+30.0%)``."""
        show = self.shown
        if self.baseline == self.value:
            return f"{self.quantity}: {show(self.value)} (unchanged)"
        if self.unit == "share":
            pts = 100 * (self.value - self.baseline)
            rel = f" ({pts:+.1f} points)"
        elif math.isfinite(self.ratio) and (self.ratio == 0 or 0.1 < self.ratio < 10):
            rel = f" ({self.ratio - 1:+.1%})"
        elif math.isfinite(self.ratio):
            rel = f" (×{self.ratio:.3g})"
        else:
            rel = ""
        return f"{self.quantity}: {show(self.baseline)} → {show(self.value)}{rel}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "quantity": self.quantity,
            "unit": self.unit,
            "baseline": self.baseline,
            "value": self.value,
            "delta": self.delta,
            "ratio": self.ratio,
            "text": self.text(),
        }


def _plain(v: float) -> str:
    return f"{v:g}"


def _bytes(v: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.4g} {unit}"
    return f"{v:.0f} B"


_FORMAT: dict[str, Callable[[float], str]] = {
    "ns": format_ns,
    "ns/B": lambda v: "∞" if math.isinf(v) else f"{v:.6g} ns/B",
    "count": lambda v: f"{v:,.0f}",
    "bytes": _bytes,
    "share": lambda v: f"{v:.1%}",
}


@dataclass(frozen=True)
class Comparison:
    """Two or more runs at one configuration; ``runs[0]`` is the baseline.

    ``critical[i]``: the critical-latency search of ``runs[i]`` over its L range. ``curves``:
    each run's exact ``T(L)`` read off that search, one row per end of a linear piece: ``run``,
    ``L_ns``, ``runtime_ns``, ``lambda_L`` (right derivative), ``rho_L`` and ``critical``
    (True at a critical latency, False at the ends of the range and at the start of an
    interval a budgeted search left unresolved). ``changes[i]``: what changed from the baseline
    to ``runs[i + 1]``.
    """

    params: LogGPS
    levels: tuple[float, ...]
    runs: list[RunFigures]
    curves: pd.DataFrame = field(repr=False)
    changes: list[list[Change]] = field(repr=False)
    critical: list[CriticalLatencies] = field(repr=False)

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.runs]

    def tolerances(self) -> pd.DataFrame:
        """One row per (run, level): ``run``, ``x``, ``bound_ns``, ``latency_ns``,
        ``G_ns_per_byte`` (``inf``: no value reaches the bound)."""
        rows = []
        for r in self.runs:
            for lat, bw in zip(r.tolerance.latency, r.tolerance.bandwidth, strict=True):
                rows.append(
                    {
                        "run": r.name,
                        "x": lat.x,
                        "bound_ns": lat.bound_ns,
                        "latency_ns": lat.value,
                        "G_ns_per_byte": bw.value,
                    }
                )
        return pd.DataFrame(rows)

    def composition(self) -> pd.DataFrame:
        """One row per (run, part): ``run``, ``part``, ``time_ns``, ``share`` of ``T``."""
        rows = [
            {"run": r.name, "part": p, "time_ns": r.path_ns[p], "share": r.path_share(p)}
            for r in self.runs
            for p in PARTS
        ]
        return pd.DataFrame(rows)

    def overview(self) -> pd.DataFrame:
        """One row per run: size and the figures at ``params``."""
        rows = []
        for r in self.runs:
            row = {
                "run": r.name,
                "ranks": r.ranks,
                "vertices": r.vertices,
                "messages": r.messages,
                "bytes": r.bytes,
                "collectives": r.collective_instances,
                "runtime_ns": r.runtime_ns,
                "lambda_L": r.prediction.lambda_L,
                "lambda_G": r.prediction.lambda_G,
                "rho_L": r.prediction.rho_L,
            }
            for x in self.levels:
                row[f"L_tol_{_pct(x)}_ns"] = r.latency_tolerance(x)
            rows.append(row)
        return pd.DataFrame(rows)

    def curve_notes(self) -> list[str]:
        """One line per run on its exact ``T(L)``: how many critical latencies over which range,
        and how many intervals a budgeted search left unresolved."""
        notes = []
        for run, search in zip(self.runs, self.critical, strict=True):
            note = (
                f"{run.name}: {len(search.critical):,} critical latencies in "
                f"[{format_ns(search.lo)}, {format_ns(search.hi)}]"
            )
            if not search.complete:
                note += (
                    f", {len(search.unresolved):,} intervals left unresolved by the budget of "
                    f"{search.max_evaluations:,} evaluations"
                )
            notes.append(note)
        return notes

    def summary(self) -> list[str]:
        """What changed, one line per compared run: runtime, λ_L, the first L tolerance, the
        critical-path part whose share moved most, ranks, messages, bytes and collectives —
        those that differ (the full list is :attr:`changes`)."""
        base = self.runs[0].name
        first_tol = f"{format_percent(self.levels[0])} L tolerance"
        keys = ("runtime T", "λ_L", first_tol, "ranks", "messages", "bytes", "collectives")
        lines = []
        for run, changes in zip(self.runs[1:], self.changes, strict=True):
            by_name = {c.quantity: c for c in changes}
            shares = [c for c in changes if c.quantity.endswith("share of the path")]
            moved = max(shares, key=lambda c: abs(c.delta))
            picked = [by_name[k] for k in keys[:3]] + [moved] + [by_name[k] for k in keys[3:]]
            differing = [c.text() for c in picked if c.significant]
            body = "; ".join(differing) if differing else "nothing differs"
            lines.append(f"{run.name} vs {base}: {body}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        """The stable ``compare --json`` shape."""
        return {
            "params": self.params.as_dict(),
            "levels": list(self.levels),
            "baseline": self.runs[0].name,
            "runs": [r.as_dict() for r in self.runs],
            "curves": {
                r.name: _curve_dict(frame, search)
                for r, (_, frame), search in zip(
                    self.runs, self.curves.groupby("run", sort=False), self.critical, strict=True
                )
            },
            "changes": {
                run.name: [c.as_dict() for c in changes]
                for run, changes in zip(self.runs[1:], self.changes, strict=True)
            },
            "summary": self.summary(),
        }


def _curve_dict(frame: pd.DataFrame, search: CriticalLatencies) -> dict[str, Any]:
    """One run's exact curve in ``compare --json``: the rows of its pieces and its search."""
    rows = frame[["L_ns", "runtime_ns", "lambda_L", "rho_L"]].to_dict(orient="list")
    return rows | {
        "lo_ns": search.lo,
        "hi_ns": search.hi,
        "critical_ns": [float(v) for v in search.critical],
        "complete": search.complete,
        "unresolved": len(search.unresolved),
        "evaluations": search.evaluations,
    }


def _pct(x: float) -> str:
    return f"{100 * x:g}pct"


def collective_counts(graph: ExecutionGraph) -> tuple[int, int]:
    """(collective instances, collective messages): expanded collectives are the messages
    tagged at or above :data:`~llamp.ingest.build.COLL_TAG_BASE` (one tag per instance and
    communicator), analytic ones their ``coll`` vertices (one tag per instance)."""
    from llamp.ingest.build import COLL_TAG_BASE

    sends, _ = graph.messages()
    tags = graph.tag[sends]
    coll_tags = tags[tags >= COLL_TAG_BASE]
    analytic = np.unique(graph.tag[graph.kind == COLL])
    return int(np.unique(coll_tags).size + analytic.size), int(coll_tags.size)


def run_figures(
    graph: ExecutionGraph,
    params: LogGPS,
    levels: Sequence[float] = DEFAULT_TOLERANCES,
    *,
    name: str | None = None,
) -> RunFigures:
    """Size, prediction, tolerances and critical-path composition of one run."""
    s = graph.summary()
    instances, coll_messages = collective_counts(graph)
    cp = critical_path(graph, params)
    return RunFigures(
        name=name or s.name,
        ranks=s.ranks,
        vertices=s.vertices,
        messages=s.messages,
        bytes=s.bytes,
        collective_instances=instances,
        collective_messages=coll_messages,
        calc_ns_total=s.calc_ns_total,
        prediction=predict(graph, params, engine="graph"),
        tolerance=tolerance(graph, params, list(levels), engine="graph"),
        path_ns={p: cp.totals[f"{p}_ns"] for p in PARTS},
        path_messages=int(len(cp.messages)),
    )


def search_settings(tol: Tolerance, params: LogGPS, hi: float | None = None) -> CriticalSettings:
    """The critical-latency search of one run's ``T(L)``: the registry's ``critical`` over
    [0, ``hi``], or over the run's automatic range (:func:`llamp.lp.tolerance.latency_range`
    of its tolerances), with the automatic evaluation budget
    (:func:`llamp.lp.critical.evaluation_budget`). The Latency page's automatic search is the
    same, so either page reuses what the other found."""
    from llamp.lp.registry import CriticalSettings

    lo, top = (
        (0.0, hi) if hi is not None else latency_range((t.value for t in tol.latency), params.L)
    )
    return CriticalSettings.over(lo, top)


def changes_between(base: RunFigures, run: RunFigures, levels: Sequence[float]) -> list[Change]:
    """Runtime, sensitivities, tolerances, critical-path shares and sizes of ``run`` against
    ``base``, in that order."""
    out = [
        Change("runtime T", "ns", base.runtime_ns, run.runtime_ns),
        Change("λ_L", "", base.prediction.lambda_L, run.prediction.lambda_L),
        Change("λ_G", "", base.prediction.lambda_G, run.prediction.lambda_G),
        Change("ρ_L", "share", base.prediction.rho_L, run.prediction.rho_L),
    ]
    for x in levels:
        out.append(
            Change(
                f"{format_percent(x)} L tolerance",
                "ns",
                base.latency_tolerance(x),
                run.latency_tolerance(x),
            )
        )
    for x in levels:
        out.append(
            Change(
                f"{format_percent(x)} G tolerance",
                "ns/B",
                base.bandwidth_tolerance(x),
                run.bandwidth_tolerance(x),
            )
        )
    for p in PARTS:
        out.append(Change(f"{p} share of the path", "share", base.path_share(p), run.path_share(p)))
    out += [
        Change("messages on the path", "count", base.path_messages, run.path_messages),
        Change("ranks", "count", base.ranks, run.ranks),
        Change("messages", "count", base.messages, run.messages),
        Change("bytes", "bytes", base.bytes, run.bytes),
        Change("collectives", "count", base.collective_instances, run.collective_instances),
        Change("compute (all ranks)", "ns", base.calc_ns_total, run.calc_ns_total),
    ]
    return out


def compare_runs(
    graphs: Sequence[ExecutionGraph],
    params: LogGPS,
    *,
    names: Sequence[str] | None = None,
    levels: Sequence[float] = DEFAULT_TOLERANCES,
    hi: float | None = None,
    progress: Callable[[str, float], None] | None = None,
) -> Comparison:
    """Compare ``graphs`` (two or more; the first is the baseline) at ``params``.

    Each run's exact ``T(L)`` covers its own automatic range, or [0, ``hi``] for every run
    (:func:`search_settings`). ``progress(text, fraction)`` is called before each run's
    analyses and during each search.
    """
    from llamp.lp.registry import ANALYSES, Inputs

    if len(graphs) < 2:
        raise InputError(f"compare needs at least two runs, got {len(graphs)}")
    names = list(names) if names is not None else [g.name for g in graphs]
    if len(names) != len(graphs):
        raise InputError(f"{len(names)} names for {len(graphs)} runs")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"run {dup!r} is given twice: compare distinct runs")
    levels = tuple(float(x) for x in levels)
    if not levels or any(not (x > 0) for x in levels):
        raise InputError("tolerance levels must be positive percentages, e.g. 1,2,5")
    if hi is not None and not (hi > 0 and math.isfinite(hi)):
        raise InputError(f"the largest L of the curves must be finite and > 0, got {hi!r}")
    steps = 2 * len(graphs)
    runs = []
    for i, (graph, name) in enumerate(zip(graphs, names, strict=True)):
        if progress:
            progress(f"Analysing {name} ({i + 1}/{len(graphs)})…", i / steps)
        runs.append(run_figures(graph, params, levels, name=name))
    searches = []
    for i, (graph, run) in enumerate(zip(graphs, runs, strict=True)):
        step = len(graphs) + i
        text = f"T(L) of {run.name}"

        def report(fraction: float | None, detail: str, step=step, text=text) -> None:
            if progress:
                within = min(max(fraction or 0.0, 0.0), 1.0)
                progress(f"{text}: {detail}" if detail else f"{text}…", (step + within) / steps)

        report(0.0, "")
        settings = search_settings(run.tolerance, params, hi)
        searches.append(ANALYSES["critical"].run(graph, Inputs(params, report=report), settings))
    if progress:
        progress("Done.", 1.0)
    return assemble(params, levels, runs, searches)


def run_curve(search: CriticalLatencies, name: str) -> pd.DataFrame:
    """One run's exact ``T(L)`` as :attr:`Comparison.curves` holds it: the rows of
    :func:`llamp.lp.critical.exact_curve` with the run's name and the critical latencies
    marked."""
    frame = exact_curve(search)
    frame.insert(0, "run", name)
    frame["critical"] = np.isin(frame["L_ns"].to_numpy(float), np.asarray(search.critical, float))
    return frame[["run", "L_ns", "runtime_ns", "lambda_L", "rho_L", "critical"]]


def assemble(
    params: LogGPS,
    levels: Sequence[float],
    runs: Sequence[RunFigures],
    searches: Sequence[CriticalLatencies],
) -> Comparison:
    """A :class:`Comparison` from each run's figures and critical-latency search (computed
    one by one, e.g. by a UI that keeps them per run), its curves read off the searches."""
    levels = tuple(float(x) for x in levels)
    if len(runs) < 2:
        raise InputError(f"compare needs at least two runs, got {len(runs)}")
    if len(searches) != len(runs) or any(s.parameter != "L" for s in searches):
        raise InputError("a comparison needs one critical-latency search of L per run")
    return Comparison(
        params=params,
        levels=levels,
        runs=list(runs),
        curves=pd.concat(
            [run_curve(s, r.name) for r, s in zip(runs, searches, strict=True)],
            ignore_index=True,
        ),
        changes=[changes_between(runs[0], r, levels) for r in runs[1:]],
        critical=list(searches),
    )


__all__ = [
    "Change",
    "assemble",
    "run_curve",
    "search_settings",
    "Comparison",
    "RunFigures",
    "collective_counts",
    "compare_runs",
    "run_figures",
]
