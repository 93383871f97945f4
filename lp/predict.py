"""Runtime prediction and parameter sweeps (LLAMP §II-B/§II-D1).

``predict`` gives ``T``, the sensitivities ``λ_L = ∂T/∂L``, ``λ_G = ∂T/∂G``, ``λ_o = ∂T/∂o``
and the latency ratio ``ρ_L = L·λ_L/T`` at one configuration; ``sweep`` does it over a range of
``L`` or ``G``. The graph engine gives exact right derivatives; the LP engines give reduced
costs, which equal them away from critical latencies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp import ENGINES
from llamp.lp.engine import engine_for
from llamp.params import LogGPS

if TYPE_CHECKING:
    import pandas as pd

PARAMETER_COLUMNS = {"L": "L_ns", "G": "G_ns_per_byte", "o": "o_ns"}


@dataclass(frozen=True)
class Prediction:
    """``T`` and its sensitivities at one configuration, and the engine that computed them."""

    params: LogGPS
    runtime_ns: float
    lambda_L: float
    lambda_G: float
    lambda_o: float
    rho_L: float
    engine: str

    def as_dict(self) -> dict[str, Any]:
        """The stable ``predict --json`` shape."""
        return {
            "runtime_ns": self.runtime_ns,
            "lambda_L": self.lambda_L,
            "lambda_G": self.lambda_G,
            "lambda_o": self.lambda_o,
            "rho_L": self.rho_L,
            "engine": self.engine,
            "params": self.params.as_dict(),
        }


#: Largest graph (vertices) whose LP GLOP builds and solves in reasonable time — one build
#: plus one solve within about 5 s on the 2-core benchmark machine. Measured on the synthetic
#: stencil (``benchmarks/RESULTS.md``): 0.8 s at 10^5, 2.4 s at 3·10^5, 13 s at 10^6 (and a
#: report through the LP needs four builds and 25+ solves: minutes at 10^6, against about 2 s
#: for the graph engine). Above it ``auto`` says that the LP is too large and answers with the
#: graph engine.
LP_MAX_VERTICES = 500_000


@dataclass(frozen=True)
class EngineChoice:
    """The engine an analysis uses, the one asked for, and why (``note``: ``None`` when there
    is nothing to say)."""

    requested: str
    engine: str
    vertices: int
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The ``engine`` object of ``report --json``."""
        return {
            "requested": self.requested,
            "engine": self.engine,
            "vertices": self.vertices,
            "lp_max_vertices": LP_MAX_VERTICES,
            "note": self.note,
        }


def resolve_engine(engine: str, question: str = "point") -> str:
    """``auto`` → the graph engine (exact and fastest for every single-parameter question)."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
    return "graph" if engine == "auto" else engine


def choose_engine(engine: str, graph: ExecutionGraph) -> EngineChoice:
    """The engine for analyses of ``graph`` (:func:`resolve_engine`), with a note when the
    graph is too large for the LP (:data:`LP_MAX_VERTICES`): ``auto`` then says that it uses
    the graph engine because of the size; an explicit LP engine runs, warned that it is slow.
    """
    chosen = resolve_engine(engine)
    n = graph.num_vertices
    note = None
    if n > LP_MAX_VERTICES:
        size = f"{n:,} vertices > {LP_MAX_VERTICES:,}"
        if engine == "auto":
            note = (
                f"the LP of this graph is too large for GLOP in reasonable time ({size}); "
                "every number comes from the graph engine (exact longest paths)"
            )
        elif chosen != "graph":
            note = (
                f"the LP of this graph is large ({size}): {chosen} may take minutes per solve; "
                "--engine auto answers with the exact graph engine"
            )
    return EngineChoice(requested=engine, engine=chosen, vertices=n, note=note)


def predict(graph: ExecutionGraph, params: LogGPS, *, engine: str = "auto") -> Prediction:
    """``T(θ)``, ``λ_L``, ``λ_G``, ``λ_o``, ``ρ_L`` at θ = ``params``."""
    chosen = resolve_engine(engine)
    if chosen == "graph":
        point = engine_for(graph).point(params, left=False)
        T, lam = point.runtime_ns, point.right
    else:
        from llamp.lp.model import LinearProgram

        lp = LinearProgram(engine_for(graph).events(params), params, solver=chosen)
        sol = lp.solve()
        T = sol.runtime_ns
        lam = {"L": sol.lambda_L, "G": sol.lambda_G, "o": sol.lambda_o}
    return Prediction(
        params=params,
        runtime_ns=T,
        lambda_L=lam["L"],
        lambda_G=lam["G"],
        lambda_o=lam["o"],
        rho_L=params.L * lam["L"] / T if T > 0 else 0.0,
        engine=chosen,
    )


def sweep(
    graph: ExecutionGraph,
    params: LogGPS,
    values: np.ndarray | list[float],
    *,
    parameter: str = "L",
    engine: str = "auto",
    reschedule: bool = False,
) -> pd.DataFrame:
    """Predictions over ``values`` of ``parameter`` (``"L"``, ``"G"`` or ``"o"``), others fixed.

    Columns: the parameter (``L_ns``/``G_ns_per_byte``/``o_ns``), ``runtime_ns``,
    ``lambda_L``, ``lambda_G``, ``lambda_o``, ``rho_L``, ``engine``.

    Under ``order="schedule"`` every point is evaluated in the order of the schedule at
    ``params`` (T is then one convex, piecewise-linear function of the parameter);
    ``reschedule`` takes each point's order from its own schedule pass instead (T is then the
    schedule's T at every point, LogGOPSim's) and adds ``order_changed``: the point's order
    differs from the one at ``params``.
    """
    import pandas as pd  # here, not at import: `llamp predict` never needs it

    return pd.DataFrame(
        sweep_rows(graph, params, values, parameter=parameter, engine=engine, reschedule=reschedule)
    )


def _rescheduled(
    graph: ExecutionGraph,
    params: LogGPS,
    configs: list[LogGPS],
    evaluate: Callable[[list[LogGPS]], list[tuple[float, dict[str, float]]]],
) -> tuple[list[tuple[float, dict[str, float]]], list[bool]]:
    """``evaluate`` of every configuration, each on the event graph of its own schedule pass
    (lowered from that pass, not run again), and per configuration whether its order differs
    from the one at ``params``. Consecutive configurations whose passes served every resource
    in the same order share one lowering (the same arrays: exact, only cheaper); a lowering is
    evaluated as soon as its run of configurations ends and then dropped, so the sweep holds
    one re-scheduled lowering at a time, not one per point (Sweep3D ×32, 11 points: peak RSS
    1.49 → 0.47 GB, benchmarks/RESULTS.md)."""
    from llamp.lp.schedule import schedule, schedule_at

    engine = engine_for(graph)
    base = schedule(graph, params)
    results: list[tuple[float, dict[str, float]]] = []
    changed: list[bool] = []
    group: list[LogGPS] = []
    last = None

    def flush() -> None:
        results.extend(evaluate(group))
        for c in group:
            if c not in kept:
                engine.forget(c)
        group.clear()

    kept = [c for c in configs if engine.holds(c)]  # lowered before: another analysis's
    for c in configs:
        plan = schedule_at(graph, c.S, c.nic, c.rendezvous, c.schedule_at)
        changed.append(not plan.same_order(base))
        if group and plan.same_order(last) and group[0].S == c.S:
            engine.share(c, group[0])
        else:
            if group:
                flush()
            engine.events(c, plan=plan)
            last = plan
        group.append(c)
        del plan
    if group:
        flush()
    return results, changed


def sweep_rows(
    graph: ExecutionGraph,
    params: LogGPS,
    values: np.ndarray | list[float],
    *,
    parameter: str = "L",
    engine: str = "auto",
    reschedule: bool = False,
) -> list[dict[str, Any]]:
    """:func:`sweep` as a list of rows (dicts with its columns), without pandas."""
    if parameter not in PARAMETER_COLUMNS:
        raise InputError(f"cannot sweep {parameter!r}: choose L, G or o")
    if reschedule and params.order != "schedule":
        raise InputError("reschedule needs the schedule order (--order schedule)")
    chosen = resolve_engine(engine)
    values = np.asarray(values, dtype=np.float64)
    configs = [params.with_(**{parameter: float(value)}) for value in values]
    changed: list[bool] = []

    def evaluate(group: list[LogGPS]) -> list[tuple[float, dict[str, float]]]:
        """T and the right slopes of each configuration of ``group``."""
        if chosen == "graph":
            points = engine_for(graph).points(group, left=False)
            return [(pt.runtime_ns, pt.right) for pt in points]
        from llamp.lp.model import LinearProgram

        out = []
        lp = None
        for p in group:
            if lp is None or lp.events.lowering != p.lowering:
                lp = LinearProgram(engine_for(graph).events(p), p, solver=chosen)
            sol = lp.solve(p)
            out.append((sol.runtime_ns, {"L": sol.lambda_L, "G": sol.lambda_G, "o": sol.lambda_o}))
        return out

    if reschedule:
        configs = [c.rescheduled() for c in configs]
        results, changed = _rescheduled(graph, params, configs, evaluate)
    else:
        results = evaluate(configs)
    rows = []
    for value, p, (T, lam) in zip(values, configs, results, strict=True):
        rows.append(
            {
                PARAMETER_COLUMNS[parameter]: float(value),
                "runtime_ns": T,
                "lambda_L": lam["L"],
                "lambda_G": lam["G"],
                "lambda_o": lam["o"],
                "rho_L": p.L * lam["L"] / T if T > 0 else 0.0,
                "engine": chosen,
            }
        )
    for row, change in zip(rows, changed, strict=False):
        row["order_changed"] = change
    return rows
