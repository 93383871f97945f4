"""The report of one run (``llamp report``, ``llamp export-report``, the UI's report export):
the prediction, the critical latencies of L in a range, ``T`` over that range, the x%
tolerances and the critical path, computed in that order as stages.

The sweep of L is read from the exact pieces of the critical-latency search (``T`` is linear
on each, LLAMP Alg. 2), so its points cost no evaluation; only points inside an interval a
budget left unresolved are evaluated. Between stages the memory-mapped pages of the graph are
released (:func:`llamp.lp.lowered.release_pages`): at 10^8 vertices each stage then holds only
what it reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from llamp.config import DEFAULT_TOLERANCES
from llamp.graph import ExecutionGraph, GraphSummary
from llamp.lp.critical import CriticalLatencies
from llamp.lp.order_check import OrderCheck, OwnTolerance
from llamp.lp.path import CriticalPath
from llamp.lp.predict import EngineChoice, Prediction
from llamp.lp.tolerance import Tolerance
from llamp.params import LogGPS

#: The stages of a report, in order.
STAGES = ("predict", "critical", "sweep", "tolerance", "order", "path")


@dataclass(frozen=True)
class ReportData:
    """The analyses of a report. ``sweep``: ``T`` at the ``points`` evenly spaced latencies
    (``source`` says whether a row was read from the exact segments or evaluated); ``curve``:
    ``L_ns``, ``runtime_ns``, ``lambda_L`` at every breakpoint and sweep point (the plots);
    ``engine``: the engine choice; ``seconds``: each stage's wall time. Under the schedule
    order (:mod:`llamp.lp.order_check`; else ``None`` and empty): ``order``, the network's own
    order and ``T`` re-scheduled at the sweep points, the range ends and the baseline;
    ``own_tolerance``, each tolerance under the network's own order (``"L"``, ``"G"``)."""

    summary: GraphSummary
    params: LogGPS
    prediction: Prediction
    sweep: pd.DataFrame
    curve: pd.DataFrame
    critical: CriticalLatencies
    tolerance: Tolerance
    path: CriticalPath
    engine: EngineChoice | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    order: OrderCheck | None = None
    own_tolerance: dict[str, list[OwnTolerance]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The stable ``report --json`` shape (the path without its vertex list: it always
        comes from the graph engine)."""
        out = {
            "graph": self.summary.as_dict(),
            "predict": self.prediction.as_dict(),
            "sweep": self.sweep.to_dict(orient="records"),
            "critical": self.critical.as_dict(),
            "tolerance": self.tolerance.as_dict(),
            "path": {k: v for k, v in self.path.as_dict().items() if k != "vertices"}
            | {"engine": "graph"},
            "seconds": dict(self.seconds),
        }
        if self.engine is not None:
            out["engine"] = self.engine.as_dict()
        if self.order is not None:
            out["schedule_order"] = {
                "range": self.order.as_dict(),
                "tolerance": {k: [w.as_dict() for w in v] for k, v in self.own_tolerance.items()},
            }
        return out


def sweep_from_segments(
    graph: ExecutionGraph, params: LogGPS, crit: CriticalLatencies, values: np.ndarray, engine: str
) -> pd.DataFrame:
    """``T`` and ``λ_L`` at ``values`` of L read from the exact segments of ``crit`` (same
    range), evaluated only at the points inside unresolved intervals. Rows from the segments
    have ``source`` ``"segments"`` and no ``lambda_G``/``lambda_o`` (null)."""
    from llamp.lp.predict import sweep

    if crit.hi <= crit.lo:  # a range of zero width has no segments
        return sweep(graph, params, values, engine=engine).assign(source="sweep")
    inside = np.zeros(values.size, dtype=bool)
    for u in crit.unresolved:
        inside |= (values > u.start) & (values < u.end)
    known = values[~inside]
    T = crit.runtime_at(known) if known.size else np.zeros(0)
    lam = crit.slope_at(known) if known.size else np.zeros(0)
    rows = pd.DataFrame(
        {
            "L_ns": known,
            "runtime_ns": T,
            "lambda_L": lam,
            "lambda_G": None,
            "lambda_o": None,
            "rho_L": np.where(T > 0, known * lam / np.where(T > 0, T, 1.0), 0.0),
            "engine": crit.engine,
            "source": "segments",
        }
    )
    if inside.any():
        swept = sweep(graph, params, values[inside], engine=engine).assign(source="sweep")
        rows = pd.concat([rows, swept], ignore_index=True).sort_values("L_ns", kind="stable")
    return rows.reset_index(drop=True)


def report_curve(crit: CriticalLatencies, frame: pd.DataFrame) -> pd.DataFrame:
    """The plotted ``T(L)``: the exact curve of the critical-latency search
    (:func:`llamp.lp.critical.exact_curve`, without evaluating ``T`` again) and the sweep's
    points, by L; ``lambda_L`` is the right derivative at each."""
    from llamp.lp.critical import exact_curve

    columns = ["L_ns", "runtime_ns", "lambda_L"]
    both = pd.concat([frame[columns], exact_curve(crit)[columns]], ignore_index=True)
    return both.drop_duplicates("L_ns", keep="first").sort_values("L_ns", ignore_index=True)


def build_report(
    graph: ExecutionGraph,
    params: LogGPS,
    *,
    lo: float = 0.0,
    hi: float = 100_000.0,
    points: int = 11,
    levels: Sequence[float] = DEFAULT_TOLERANCES,
    max_evaluations: int | None = None,
    engine: str = "auto",
    report: Callable[[float | None, str], None] | None = None,
) -> ReportData:
    """The report over L in [lo, hi] (the critical path from the graph engine).

    ``report(None, stage)`` is called as each stage of :data:`STAGES` begins and
    ``report(fraction, text)`` as the critical-latency search advances (its share of the λ
    jump resolved, or of the budget spent)."""
    from llamp.lp.lowered import release_pages
    from llamp.lp.path import critical_path
    from llamp.lp.predict import choose_engine, predict
    from llamp.lp.registry import critical_search
    from llamp.lp.tolerance import tolerance

    choice = choose_engine(engine, graph)
    seconds: dict[str, float] = {}

    def timed(name: str, compute: Callable[[], Any]) -> Any:
        if report is not None:
            report(None, name)
        start = time.perf_counter()
        out = compute()
        seconds[name] = time.perf_counter() - start
        # Each stage maps what it reads; what the next one needs it maps again (page cache).
        release_pages(graph)
        return out

    pred = timed("predict", lambda: predict(graph, params, engine=engine))
    crit = timed(
        "critical",
        lambda: critical_search(
            graph,
            params,
            lo,
            hi,
            report=report,
            engine=engine,
            max_evaluations=max_evaluations,
        ),
    )
    values = np.linspace(lo, hi, points)
    frame = timed("sweep", lambda: sweep_from_segments(graph, params, crit, values, engine))
    tol = timed("tolerance", lambda: tolerance(graph, params, levels, engine=engine))
    order, own = timed("order", lambda: _order(graph, params, crit, values, tol, report))
    cp = timed("path", lambda: critical_path(graph, params))
    return ReportData(
        summary=graph.summary(),
        params=params,
        prediction=pred,
        sweep=frame,
        curve=report_curve(crit, frame),
        critical=crit,
        tolerance=tol,
        path=cp,
        engine=choice,
        seconds=seconds,
        order=order,
        own_tolerance=own,
    )


def _order(
    graph: ExecutionGraph,
    params: LogGPS,
    crit: CriticalLatencies,
    values: np.ndarray,
    tol: Tolerance,
    report: Callable[[float | None, str], None] | None,
) -> tuple[OrderCheck | None, dict[str, list[OwnTolerance]]]:
    """The report's order checks (:class:`ReportData` ``order``, ``own_tolerance``), progress
    to ``report``."""
    from llamp.lp.order_check import check_order, check_tolerance, max_checks

    candidates = [crit.lo, *crit.critical, *values.tolist(), crit.hi]
    # the sweep points inside an unresolved interval have no exact piece: the engine's T
    fixed = None if crit.unresolved else crit.runtime_at
    # the sweep points and the ends (`llamp critical` checks the critical values too)
    most = min(max_checks(graph), values.size + 2)
    check = check_order(
        graph, params, "L", candidates, fixed, most=most, keep=values, progress=report
    )
    return check, check_tolerance(graph, params, tol, progress=report)


__all__ = [
    "STAGES",
    "ReportData",
    "build_report",
    "report_curve",
    "sweep_from_segments",
]
