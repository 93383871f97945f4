"""The Compare runs page's work, in the background (:mod:`llamp.ui.tasks`): the registry's
``compare`` (:data:`llamp.lp.registry.ANALYSES`, its settings read by the entry's parsers:
:func:`settings`) computed per run, each run's figures
(:func:`llamp.lp.compare.run_figures`: prediction, tolerances, critical-path composition) and
its curve over the shared latencies (:func:`llamp.lp.compare.run_curve`), kept per run so
adding a run to a comparison computes only that run (and a cancelled comparison keeps the runs
it finished).

The curves share one L grid; with the automatic range it reaches 1.25 × the largest tolerance
of any run, so a run whose tolerance is larger than all the others' moves the grid and the
other curves are swept again (their figures are not). A curve is swept in chunks of latencies,
so the progress bar moves and Cancel takes effect between two chunks.

Each run's figures and curve are kept as Analysis nodes of that run and in the UI's one
in-process memo (:mod:`llamp.ui.stored`, kinds ``ui_run_figures`` and ``ui_run_curve``), so
another session or a restarted server reuses them; when all of them are kept, :func:`ready`
assembles the comparison without a background task.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from llamp.config import parse_duration_ns
from llamp.lp import compare
from llamp.lp.compare import Comparison, RunFigures
from llamp.lp.registry import ANALYSES, CompareSettings
from llamp.params import LogGPS
from llamp.ui import store_access, stored
from llamp.ui.tasks import Task

#: Latencies swept per step of a curve (one progress report and cancellation point each).
CHUNK = 8


def _stored_figures(name: str, token: str, params: LogGPS, levels: tuple) -> tuple:
    return ("ui_run_figures", stored.page_key(params, token, levels=levels))


def _stored_curve(name: str, token: str, params: LogGPS, grid: np.ndarray) -> tuple:
    # the grid by its bytes' hash: up to 2,001 latencies are no key
    grid = np.ascontiguousarray(grid, dtype=np.float64)
    return ("ui_run_curve", stored.page_key(params, token, grid=grid.tobytes()))


def _figures(name: str, token: str, params: LogGPS, levels: tuple) -> RunFigures | None:
    return stored.find(
        store_access.cache_key(token), name, *_stored_figures(name, token, params, levels)
    )


def _curve(name: str, token: str, params: LogGPS, grid: np.ndarray) -> pd.DataFrame | None:
    return stored.find(
        store_access.cache_key(token), name, *_stored_curve(name, token, params, grid)
    )


def settings(levels: str, hi: str, points: int) -> CompareSettings:
    """The page's inputs (tolerance levels and largest L as typed, points per curve) as the
    settings of the registry's ``compare``, read by the parsers of ``llamp compare``'s ``--x``,
    ``--to`` and ``--points``; an error names the page's input. As every duration typed on a
    page, the largest L needs a unit."""
    if hi.strip():
        parse_duration_ns(hi, default_unit=None)
    return ANALYSES["compare"].parse(
        {"levels": levels, "hi": hi, "points": points},
        labels={"levels": "tolerance levels", "hi": "largest L", "points": "points per curve"},
    )


def ready(
    runs: Sequence[tuple[str, str]], params: LogGPS, settings: CompareSettings
) -> tuple[Comparison, np.ndarray] | None:
    """The comparison :func:`work` would compute, if every run's figures and curve are kept in
    this process or stored; else ``None``."""
    levels, points, grid = settings.levels, settings.points, settings.latencies(params)
    figures = [_figures(name, token, params, levels) for name, token in runs]
    if any(f is None for f in figures):
        return None
    shared = grid if grid is not None else compare.latency_grid(figures, params, points)
    curves = [_curve(name, token, params, shared) for name, token in runs]
    if any(c is None for c in curves):
        return None
    named = [c.assign(run=name) for c, (name, _) in zip(curves, runs, strict=True)]
    return compare.assemble(params, levels, figures, named), shared


def work(
    runs: Sequence[tuple[str, str]], params: LogGPS, settings: CompareSettings
) -> Callable[[Task], tuple[Comparison, np.ndarray]]:
    """The task comparing ``runs`` (``(name, token)`` pairs, the first is the baseline) at
    ``params``: the comparison ``llamp compare`` computes with ``settings`` and its L grid
    (``settings.latencies``, or :func:`llamp.lp.compare.latency_grid` when automatic). Only the
    runs (and curves) not kept from an earlier comparison are computed; the progress fraction
    counts those."""
    levels, points, grid = settings.levels, settings.points, settings.latencies(params)

    def run(task: Task) -> tuple[Comparison, np.ndarray]:
        todo = [_figures(name, token, params, levels) is None for name, token in runs]
        # Steps: one per run's figures, CHUNK latencies per step of a curve (a guess of the
        # grid's size when it depends on the figures still to compute).
        size = len(grid) if grid is not None else points + 1
        per_curve = -(-size // CHUNK)
        total = sum(todo) + per_curve * len(runs)
        done = 0

        def step(text: str) -> None:
            task.report(done / total if total else None, text)

        figures = []
        for i, (name, token) in enumerate(runs):
            found = _figures(name, token, params, levels)
            if found is None:
                step(f"loading {name} ({i + 1}/{len(runs)})")
                graph = store_access.load_graph(name, token)
                step(f"analysing {name} ({i + 1}/{len(runs)})")
                found = compare.run_figures(graph, params, levels, name=name)
                with task.steady():
                    stored.save(
                        store_access.cache_key(token),
                        name,
                        *_stored_figures(name, token, params, levels),
                        found,
                    )
                done += 1
            figures.append(found)
        shared = grid if grid is not None else compare.latency_grid(figures, params, points)
        curves = []
        for i, (name, token) in enumerate(runs):
            frame = _curve(name, token, params, shared)
            if frame is None:
                graph = store_access.load_graph(name, token)
                pieces = []
                for start in range(0, len(shared), CHUNK):
                    step(f"T(L) of {name} ({i + 1}/{len(runs)})")
                    chunk = shared[start : start + CHUNK]
                    pieces.append(compare.run_curve(graph, params, chunk, name))
                    done += 1
                frame = pd.concat(pieces, ignore_index=True)
                with task.steady():
                    stored.save(
                        store_access.cache_key(token),
                        name,
                        *_stored_curve(name, token, params, shared),
                        frame,
                    )
            else:
                done += per_curve
            curves.append(frame.assign(run=name))
        task.report(1.0, "")
        return compare.assemble(params, levels, figures, curves), shared

    return run


__all__ = ["CHUNK", "ready", "settings", "work"]
