"""The Compare runs page's work, in the background (:mod:`llamp.ui.tasks`): the registry's
``compare`` (:data:`llamp.lp.registry.ANALYSES`, its settings read by the entry's parsers:
:func:`settings`) computed per run as :mod:`llamp.lp.compare` defines it — each run's figures
(:func:`llamp.lp.compare.run_figures`: prediction, tolerances, critical-path composition) and
the critical-latency search its exact ``T(L)`` is read off
(:func:`llamp.lp.compare.search_settings`, the registry's ``critical``), assembled by
:func:`llamp.lp.compare.assemble` — kept per run so adding a run to a comparison computes only
that run (and a cancelled comparison keeps the runs it finished).

A run's search is stored under the same key as the Latency page's automatic search, so either
page reuses what the other found.

Each run's figures and search are kept as Analysis nodes of that run and in the UI's one
in-process memo (:mod:`llamp.ui.stored`), so another session or a restarted server reuses them;
when all of them are kept, :func:`ready` assembles the comparison without a background task.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llamp.config import parse_duration_ns
from llamp.lp import compare
from llamp.lp.compare import Comparison, RunFigures
from llamp.lp.critical import CriticalLatencies
from llamp.lp.registry import ANALYSES, CompareSettings, CriticalSettings, Inputs
from llamp.params import LogGPS
from llamp.ui import store_access, stored
from llamp.ui.tasks import Task

#: The registry's analysis of a run's critical latencies.
CRITICAL = ANALYSES["critical"]


def _stored_figures(token: str, params: LogGPS, levels: tuple) -> tuple:
    return ("ui_run_figures", stored.page_key(params, token, levels=levels))


def _stored_critical(token: str, params: LogGPS, settings: CriticalSettings) -> tuple:
    # the key :func:`llamp.ui.controls.analysis` stores the Latency page's search under
    return (
        CRITICAL.kind,
        stored.page_key(params, token, inputs=("critical", settings, Inputs(params))),
    )


def _figures(name: str, token: str, params: LogGPS, levels: tuple) -> RunFigures | None:
    return stored.find(store_access.cache_key(token), name, *_stored_figures(token, params, levels))


def _critical(
    name: str, token: str, params: LogGPS, settings: CriticalSettings
) -> CriticalLatencies | None:
    return stored.find(
        store_access.cache_key(token), name, *_stored_critical(token, params, settings)
    )


def settings(levels: str, hi: str) -> CompareSettings:
    """The page's inputs (tolerance levels and largest L as typed) as the settings of the
    registry's ``compare``, read by the parsers of ``llamp compare``'s ``--x`` and ``--to``; an
    error names the page's input. As every duration typed on a page, the largest L needs a
    unit."""
    if hi.strip():
        parse_duration_ns(hi, default_unit=None)
    return ANALYSES["compare"].parse(
        {"levels": levels, "hi": hi},
        labels={"levels": "tolerance levels", "hi": "largest L"},
    )


def ready(
    runs: Sequence[tuple[str, str]],
    params: LogGPS,
    levels: Sequence[float],
    hi: float | None = None,
) -> Comparison | None:
    """The comparison :func:`work` would compute, if every run's figures and search are kept
    in this process or stored; else ``None``."""
    levels = tuple(float(x) for x in levels)
    figures = [_figures(name, token, params, levels) for name, token in runs]
    if any(f is None for f in figures):
        return None
    searches = [
        _critical(name, token, params, compare.search_settings(f.tolerance, params, hi))
        for (name, token), f in zip(runs, figures, strict=True)
    ]
    if any(c is None for c in searches):
        return None
    return compare.assemble(params, levels, figures, searches)


def work(
    runs: Sequence[tuple[str, str]],
    params: LogGPS,
    levels: Sequence[float],
    hi: float | None = None,
) -> Callable[[Task], Comparison]:
    """The task comparing ``runs`` (``(name, token)`` pairs, the first is the baseline) at
    ``params``, each run's curve over its own range (or [0, ``hi``]). Only the figures and
    searches not kept from an earlier comparison or Latency page are computed; the progress
    fraction counts those (a search reports its own progress inside its step)."""
    levels = tuple(float(x) for x in levels)

    def run(task: Task) -> Comparison:
        todo = sum(_figures(name, token, params, levels) is None for name, token in runs)
        total = todo + len(runs)
        done = 0

        def step(text: str, within: float = 0.0) -> None:
            task.report((done + within) / total if total else None, text)

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
                        *_stored_figures(token, params, levels),
                        found,
                    )
                done += 1
            figures.append(found)
        searches = []
        for i, ((name, token), f) in enumerate(zip(runs, figures, strict=True)):
            settings = compare.search_settings(f.tolerance, params, hi)
            found = _critical(name, token, params, settings)
            if found is None:
                text = f"critical latencies of {name} ({i + 1}/{len(runs)})"
                step(text)
                graph = store_access.load_graph(name, token)

                def report(fraction: float | None, detail: str, text: str = text) -> None:
                    shown = f"{text}: {detail}" if detail else text
                    step(shown, min(max(fraction or 0.0, 0.0), 1.0))

                found = CRITICAL.run(graph, Inputs(params, report=report), settings)
                with task.steady():
                    stored.save(
                        store_access.cache_key(token),
                        name,
                        *_stored_critical(token, params, settings),
                        found,
                    )
            done += 1
            searches.append(found)
        task.report(1.0, "")
        return compare.assemble(params, levels, figures, searches)

    return run


__all__ = ["CRITICAL", "ready", "settings", "work"]
