"""Run a validated study: prepare its graphs, skip the cells already done, compute the rest,
store every cell and write the tidy table (one row per cell, units in the column names).

Resume: a cell whose id is in the store (for this study) or in the study's journal
(``<work dir>/cells.jsonl``, appended as results arrive) is not computed again. Failed cells
are recorded with their error and computed again on the next run.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from llamp.errors import InputError
from llamp.study.execute import (
    CellResult,
    Cluster,
    GraphSource,
    connect,
    run_dask,
    run_serial,
)
from llamp.study.spec import Cell, Study

_BOLT = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")


@dataclass
class StudyReport:
    """What a study run did: the table, counts and where things went."""

    table: pd.DataFrame
    computed: int
    skipped: int
    failed: int
    seconds: float
    where: str
    output: Path | None
    graph_loads: int
    stored_runs: dict[tuple[str, str], str | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "cells": int(len(self.table)),
            "computed": self.computed,
            "skipped": self.skipped,
            "failed": self.failed,
            "seconds": self.seconds,
            "executor": self.where,
            "output": None if self.output is None else str(self.output),
            "graph_loads": self.graph_loads,
        }


def work_dir(study: Study) -> Path:
    if study.execution.work_dir:
        path = Path(study.execution.work_dir)
        return path if path.is_absolute() else study.source.parent / path
    return study.source.parent / ".llamp-study" / study.name


def stored_name(run: str, variant: str) -> str:
    """The store's run name of a study run under a collective variant."""
    return run if variant == "default" else f"{run}@{variant}"


def prepare_graphs(
    study: Study,
    *,
    store_uri: str | None,
    use_store: bool,
    directory: Path,
    progress: Callable[[str], None] | None = None,
) -> tuple[dict[tuple[str, str], GraphSource], dict[tuple[str, str], str | None]]:
    """One :class:`GraphSource` per (run, variant) and its stored run name (``None`` without a
    store). Trace runs are read here once, stored (if not yet) and written as ``.npz``."""
    from llamp.config import parse_collectives
    from llamp.ingest import read
    from llamp.ingest.npz import read_npz

    sources: dict[tuple[str, str], GraphSource] = {}
    names: dict[tuple[str, str], str | None] = {}
    graphs_dir = directory / "graphs"
    graphs_dir.mkdir(parents=True, exist_ok=True)
    bolt = bool(store_uri and store_uri.startswith(_BOLT))
    store = None
    if use_store or any(study.runs[r].stored for r, _ in study.graph_keys()):
        from llamp.graphdb import open_store

        store = open_store(store_uri)
    try:
        for key in study.graph_keys():
            run_name, variant = key
            run = study.runs[run_name]
            name = stored_name(run.stored or run_name, variant)
            npz = graphs_dir / f"{run_name}__{_slug(variant)}.npz"
            if progress:
                progress(f"preparing graph {name}")
            if run.stored is not None:
                if store is None or not store.has_run(run.stored):
                    raise InputError(f"runs.{run_name}: no stored run {run.stored!r}")
                names[key] = run.stored
                if bolt:
                    sources[key] = GraphSource(key, store_uri=store_uri, run=run.stored)
                    continue
                if not npz.exists() or _stale(npz, store.run_info(run.stored).created):
                    store.load_run(run.stored).save(npz)
                sources[key] = GraphSource(key, npz=str(npz))
                continue
            path = Path(str(run.path))
            if path.suffix == ".npz" and variant == "default":
                graph = read_npz(path)  # from outside: checked (docs/SECURITY.md §Graph files)
                sources[key] = GraphSource(key, npz=str(path))
            else:
                graph = read(
                    path,
                    fmt=run.format,
                    collectives=parse_collectives(None if variant == "default" else variant),
                )
                graph.save(npz)
                sources[key] = GraphSource(key, npz=str(npz))
            names[key] = None
            if use_store and store is not None:
                _ensure_stored(store, graph, name, path)
                names[key] = name
    finally:
        if store is not None:
            store.close()
    return sources, names


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def _stale(npz: Path, created: str) -> bool:
    from datetime import datetime

    try:
        return npz.stat().st_mtime < datetime.fromisoformat(created).timestamp()
    except ValueError:
        return True


def _ensure_stored(store, graph, name: str, path: Path) -> None:
    if not store.has_run(name):
        store.put_run(graph, name)
        return
    info = store.run_info(name)
    s = graph.summary()
    if (info.ranks, info.vertices, info.messages, info.bytes) != (
        s.ranks,
        s.vertices,
        s.messages,
        s.bytes,
    ):
        raise InputError(
            f"{path}: the store already has a different run {name!r} ({info.vertices} vertices, "
            f"this graph {s.vertices}): rename the run in the spec or delete the stored one"
        )


def _journal_rows(path: Path) -> dict[str, dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return done
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by an interruption
        if row.get("status") == "ok":
            done[row["cell"]] = row
    return done


def _network_columns(cell: Cell) -> dict[str, Any]:
    """The cell's network as columns: its LogGPS parameters, topology and GPU machine; on a
    GPU machine ``L`` and ``G`` are its own (``gpu_machine``), not LogGPS's: NaN."""
    columns = cell.network.params.as_dict() | {"topology": cell.network.topology or ""}
    columns["gpu_machine"] = cell.network.gpu_machine or ""
    if cell.network.gpu_machine:
        columns |= {"L_ns": float("nan"), "G_ns_per_byte": float("nan")}
    return columns


def _row(cell: Cell, result: CellResult | None, scalars: dict[str, Any]) -> dict[str, Any]:
    row = cell.labels() | _network_columns(cell)
    if result is not None:
        row |= {
            "status": "ok" if result.ok else "error",
            "error": result.error,
            "seconds": result.seconds,
            "worker": result.worker,
        }
    return row | scalars


def run_study(
    study: Study,
    *,
    store_uri: str | None = None,
    use_store: bool = True,
    workers: int | None = None,
    serial: bool = False,
    restart: bool = False,
    output: Path | None = None,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
    cluster: Cluster | None = None,
) -> StudyReport:
    """Compute the cells of ``study`` not done yet; store them; write and return the table.

    ``cluster``: a connected :class:`~llamp.study.execute.Cluster` to use (and leave open)
    instead of the one the spec or ``workers`` describe."""
    from tqdm import tqdm

    started = time.perf_counter()
    directory = work_dir(study)
    directory.mkdir(parents=True, exist_ok=True)
    journal = directory / "cells.jsonl"
    if restart and journal.exists():
        journal.unlink()
    say = log or (lambda message: None)
    sources, names = prepare_graphs(
        study, store_uri=store_uri, use_store=use_store, directory=directory, progress=say
    )
    done: dict[str, dict[str, Any]] = {} if restart else _journal_rows(journal)
    replaced: dict[str, list[str]] = {}  # cell → stored analyses a recomputation replaces
    if use_store:
        from llamp.graphdb import open_store
        from llamp.graphdb.studies import LABELS, study_cells

        with open_store(store_uri, read_only=True) as store:
            stored = study_cells(store, study.name)
        for row in stored.to_dict(orient="records"):
            replaced.setdefault(row["cell"], []).append(row["analysis_id"])
            if not restart:
                extra = {"stored_run", "analysis_id", "created", *LABELS}
                done.setdefault(row["cell"], {k: v for k, v in row.items() if k not in extra})
    todo = [c for c in study.cells if c.id not in done]
    by_id = {c.id: c for c in study.cells}
    rows: dict[str, dict[str, Any]] = {}
    for cell in study.cells:
        if cell.id in done:
            scalars = {k: v for k, v in done[cell.id].items() if k not in _row(cell, None, {})}
            scalars = {
                k: v
                for k, v in scalars.items()
                if k not in ("status", "error", "seconds", "worker")
            }
            rows[cell.id] = _row(cell, None, scalars) | {
                "status": "ok",
                "error": "",
                "seconds": done[cell.id].get("seconds", math.nan),
                "worker": "(resumed)",
            }
    say(f"{len(study.cells)} cells: {len(done)} done before, {len(todo)} to compute")

    where = "this process"
    given = cluster
    computed = failed = loads = 0
    store = None
    try:
        if todo and not serial:
            cluster = given or connect(study.execution, workers)
            where = cluster.description
            results = run_dask(todo, sources, cluster)
        else:
            results = run_serial(todo, sources)
        if use_store and todo:
            from llamp.graphdb import open_store

            store = open_store(store_uri)
        computing = time.perf_counter()
        with (
            journal.open("a") as out,
            tqdm(
                total=len(todo),
                unit=" cells",
                desc=study.name,
                disable=not progress or None,
                leave=False,
            ) as bar,
        ):
            for result in results:
                cell = by_id[result.cell]
                row = _row(cell, result, result.scalars)
                rows[cell.id] = row
                loads += int(result.graph_loaded)
                if result.ok:
                    computed += 1
                    if store is not None and names.get(cell.graph_key):
                        from llamp.graphdb.studies import write_cell

                        write_cell(
                            store,
                            names[cell.graph_key],
                            cell.labels(),
                            _network_columns(cell),
                            result.scalars,
                        )
                        for old in replaced.pop(cell.id, []):
                            store.delete_analysis(old)
                else:
                    failed += 1
                    say(
                        f"cell {cell.id} ({cell.run} × {cell.network.name} × {cell.analysis}) "
                        f"failed: {result.error}"
                    )
                out.write(json.dumps(row, default=str) + "\n")
                out.flush()
                bar.update(1)
                if bar.disable and log is not None:
                    _report_progress(
                        computed + failed, len(todo), time.perf_counter() - computing, say
                    )
    finally:
        if store is not None:
            store.close()
        if cluster is not None and cluster is not given:
            cluster.close()
    order = [c.id for c in study.cells]
    table = pd.DataFrame([rows[i] for i in order if i in rows])
    target = output or study.output
    if target is not None:
        write_table(table, target)
    return StudyReport(
        table=table,
        computed=computed,
        skipped=len(study.cells) - len(todo),
        failed=failed,
        seconds=time.perf_counter() - started,
        where=where,
        output=target,
        graph_loads=loads,
        stored_runs=names,
    )


def _report_progress(done: int, total: int, elapsed: float, say: Callable[[str], None]) -> None:
    """Without a terminal (batch jobs, logs): a line at every tenth of the cells."""
    step = max(1, total // 10)
    if done % step and done != total:
        return
    left = elapsed / done * (total - done)
    say(f"{done}/{total} cells, {elapsed:.0f} s elapsed, about {left:.0f} s left")


def write_table(table: pd.DataFrame, path: Path) -> Path:
    """``.parquet`` or ``.csv`` by suffix; list columns (sweeps) become JSON text in CSV."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        table.to_parquet(path, index=False)
    elif path.suffix == ".csv":
        flat = table.copy()
        for column in flat.columns:
            if flat[column].map(lambda v: isinstance(v, list | tuple)).any():
                flat[column] = flat[column].map(
                    lambda v: json.dumps(v) if isinstance(v, list | tuple) else v
                )
        flat.to_csv(path, index=False)
    else:
        raise InputError(f"{path}: the table is written as .parquet or .csv")
    return path
