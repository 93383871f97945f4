"""Collective-algorithm what-ifs (LLAMP §IV, Fig. 10): one trace, several expansions, side by side.

LLAMP's ICON study traces once and re-runs Schedgen with a different allreduce (recursive
doubling vs ring) to see how the choice changes the runtime ``T(L)``, the latency sensitivity
``λ_L``, the latency ratio ``ρ_L`` and the x% latency tolerance. Here the trace is read once and
rebuilt into one execution graph per *variant* (a set of ``{collective: algorithm}`` choices,
:mod:`llamp.ingest.collectives`); every graph is analysed with the same LogGPS configuration.

A variant may also charge a collective with an analytic model instead of expanding it
(``allreduce=dimemas``, ``allreduce=thakur_gropp:ring``; :mod:`llamp.ingest.collective_models`):
its instances become synchronising ``coll`` vertices, so the expansion and the closed-form
models are compared on the same graph.

Only a trace can be re-expanded: an ``.npz`` or GOAL graph already has its collectives lowered
to point-to-point messages, and which messages formed which collective is gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from llamp.config import DEFAULT_TOLERANCES
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp.engine import engine_for
from llamp.lp.tolerance import max_parameter_within
from llamp.params import LogGPS

DEFAULT_LABEL = "default"


@dataclass(frozen=True)
class Variant:
    """A named choice of collective algorithms (ops not listed keep their defaults)."""

    label: str
    algorithms: tuple[tuple[str, str], ...] = ()

    @property
    def choices(self) -> dict[str, str]:
        return dict(self.algorithms)

    @classmethod
    def parse(cls, text: str) -> Variant:
        """``"allreduce=ring"``, ``"allreduce=ring,bcast=linear"`` or ``"default"``."""
        text = text.strip()
        if not text or text.lower() == DEFAULT_LABEL:
            return cls(DEFAULT_LABEL, ())
        pairs: list[tuple[str, str]] = []
        for item in text.split(","):
            item = item.strip()
            if not item:
                continue
            if "=" not in item:
                raise InputError(
                    f"collective variant {text!r}: {item!r} is not OP=ALGORITHM "
                    "(e.g. allreduce=ring, or 'default')"
                )
            op, alg = (part.strip().lower() for part in item.split("=", 1))
            pairs.append((op, alg))
        from llamp.ingest.build import check_algorithms

        check_algorithms(dict(pairs))
        return cls(text, tuple(pairs))


@dataclass(frozen=True, eq=False)
class CollectiveComparison:
    """Side-by-side analyses of one trace under several collective-algorithm variants.

    ``sweep``: one row per (variant, L): ``variant``, ``L_ns``, ``runtime_ns``, ``lambda_L``,
    ``lambda_G``, ``rho_L``. ``summary``: one row per variant at the configured ``L``:
    ``variant``, ``algorithms`` (op=alg of every collective the trace uses), ``vertices``,
    ``messages``, ``bytes``, ``analytic_collectives`` (coll vertices), ``runtime_ns``, ``lambda_L``, ``lambda_G``, ``rho_L``,
    ``tolerance_<x>pct_L_ns`` per level, and the differences to the first variant
    (``messages_vs_first``, ``runtime_vs_first``: relative, ``lambda_L_vs_first``).
    ``notes``: facts a reader should know (e.g. a variant changes an op the trace never calls).
    """

    params: LogGPS
    variants: tuple[Variant, ...]
    sweep: pd.DataFrame
    summary: pd.DataFrame
    notes: tuple[str, ...]
    graphs: dict[str, ExecutionGraph] = field(repr=False, default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The stable ``collectives --json`` shape."""
        return {
            "params": self.params.as_dict(),
            "variants": [{"label": v.label, "algorithms": v.choices} for v in self.variants],
            "summary": self.summary.to_dict(orient="records"),
            "sweep": self.sweep.to_dict(orient="records"),
            "notes": list(self.notes),
        }


def _tolerance_column(x: float) -> str:
    return f"tolerance_{x * 100:g}pct_L_ns"


def _load_trace(source: Any, *, lenient: bool, host_speed: float | str | None = None):
    """A :class:`~llamp.ingest.events.Trace` from a trace object or a path to a trace
    (``host_speed``: a SimGrid TI trace's flop rate, see :func:`llamp.ingest.read_trace`)."""
    from llamp.ingest import FORMATS, detect_format, read_trace
    from llamp.ingest.events import Trace

    if isinstance(source, Trace):
        if host_speed is not None:
            raise InputError("a host speed applies when a trace is read, not to a Trace object")
        return source
    if isinstance(source, ExecutionGraph):
        raise InputError(
            "collective what-ifs need the trace, not an execution graph: its collectives are "
            "already expanded into point-to-point messages"
        )
    path = Path(source)
    fmt = detect_format(path)
    if FORMATS[fmt].kind != "trace":
        where = "the trace it was made from (a liballprof directory)"
        if fmt == "npz":
            try:
                files = ExecutionGraph.load(path, validate=False).meta.get("files") or []
            except InputError:
                files = []
            dirs = sorted({str(Path(f).parent) for f in files if Path(f).exists()})
            if dirs:
                where = f"its trace directory ({dirs[0]})"
        raise InputError(
            f"{path}: this {fmt} file is an execution graph whose collectives are already "
            "expanded into point-to-point messages, so it cannot be re-expanded with other "
            f"algorithms; pass {where} instead"
        )
    return read_trace(path, lenient=lenient, host_speed=host_speed)


def compare_collectives(
    source: Any,
    variants: Sequence[Variant | str],
    params: LogGPS,
    latencies_ns: Sequence[float] | np.ndarray,
    *,
    tolerances: Sequence[float] = DEFAULT_TOLERANCES,
    lenient: bool = False,
    name: str | None = None,
    progress: bool = False,
    host_speed: float | str | None = None,
) -> CollectiveComparison:
    """Re-expand ``source`` (a trace directory or Trace) once per variant and compare them.

    ``latencies_ns``: the L values of the sweep (others from ``params``); ``tolerances``: levels
    of the x% latency tolerance (fractions) relative to ``T(params.L)`` of each variant.
    ``progress``: a bar over the variants on stderr (hidden when stderr is not a terminal).
    ``host_speed``: flop rate of a SimGrid TI trace read from a path (default 1 Gf/s).
    """
    parsed = tuple(v if isinstance(v, Variant) else Variant.parse(v) for v in variants)
    if len(parsed) < 1:
        raise InputError("give at least one collective variant, e.g. allreduce=ring")
    labels = [v.label for v in parsed]
    if len(set(labels)) != len(labels):
        dup = next(lab for lab in labels if labels.count(lab) > 1)
        raise InputError(f"collective variant {dup!r} is given twice")
    levels = [float(x) for x in tolerances]
    if any(x < 0 for x in levels):
        raise InputError("tolerance levels must be ≥ 0 (fractions, e.g. 0.01 for 1%)")
    Ls = np.asarray(latencies_ns, dtype=np.float64)
    if Ls.ndim != 1 or Ls.size == 0 or np.any(Ls < 0) or not np.all(np.isfinite(Ls)):
        raise InputError("the latency sweep needs one or more finite values ≥ 0 ns")

    from llamp.ingest.build import build_graph

    trace = _load_trace(source, lenient=lenient, host_speed=host_speed)
    if isinstance(source, str | Path):
        from llamp.ingest import default_name

        default = default_name(source)
    else:
        default = "trace"
    base_name = name or trace.meta.get("name") or default
    graphs: dict[str, ExecutionGraph] = {}
    sweep_rows: list[dict[str, Any]] = []
    summary_rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for variant in tqdm(parsed, unit=" variants", leave=False, disable=None if progress else True):
        graph = build_graph(
            trace,
            collectives=variant.choices,
            lenient=lenient,
            name=f"{base_name}[{variant.label}]",
        )
        graphs[variant.label] = graph
        used = graph.meta.get("collectives", {})
        absent = sorted(op for op in variant.choices if op not in used)
        if absent:
            notes.append(
                f"{variant.label}: the trace makes no {', '.join(absent)} call, so this choice "
                "changes nothing"
            )
        eng = engine_for(graph)
        for L in Ls:
            at = eng.point(params.with_(L=float(L)), ("L", "G"), left=False)
            sweep_rows.append(
                {
                    "variant": variant.label,
                    "L_ns": float(L),
                    "runtime_ns": at.runtime_ns,
                    "lambda_L": at.right["L"],
                    "lambda_G": at.right["G"],
                    "rho_L": float(L) * at.right["L"] / at.runtime_ns if at.runtime_ns > 0 else 0.0,
                }
            )
        point = eng.point(params, ("L", "G"), left=False)
        s = graph.summary()
        row: dict[str, Any] = {
            "variant": variant.label,
            "algorithms": ",".join(f"{op}={alg}" for op, alg in sorted(used.items())),
            "vertices": s.vertices,
            "messages": s.messages,
            "bytes": s.bytes,
            "analytic_collectives": s.colls,
            "runtime_ns": point.runtime_ns,
            "lambda_L": point.right["L"],
            "lambda_G": point.right["G"],
            "rho_L": params.L * point.right["L"] / point.runtime_ns
            if point.runtime_ns > 0
            else 0.0,
        }
        for x in levels:
            row[_tolerance_column(x)] = max_parameter_within(
                graph, params, (1.0 + x) * point.runtime_ns, parameter="L"
            )
        summary_rows.append(row)
    summary = pd.DataFrame(summary_rows)
    first = summary.iloc[0]
    summary["messages_vs_first"] = summary["messages"] - int(first["messages"])
    summary["runtime_vs_first"] = (
        summary["runtime_ns"] / first["runtime_ns"] - 1.0 if first["runtime_ns"] > 0 else 0.0
    )
    summary["lambda_L_vs_first"] = summary["lambda_L"] - float(first["lambda_L"])
    if len(parsed) > 1:
        for variant in parsed[1:]:
            if graphs[variant.label].equals(graphs[parsed[0].label]):
                notes.append(f"{variant.label} expands to the same graph as {parsed[0].label}")
    return CollectiveComparison(
        params=params,
        variants=parsed,
        sweep=pd.DataFrame(sweep_rows),
        summary=summary,
        notes=tuple(notes),
        graphs=graphs,
    )
