"""Studies in the graph store: one ``Analysis`` node per study cell, linked to its ``Run``.

A cell is stored through :meth:`GraphStore.write_analysis` with ``kind`` the analysis
(``predict``, ``tolerance``, …) and ``params`` holding the LogGPS parameters plus ``study``,
``cell`` (its stable id) and the cell's labels (run, network, placement, option, collectives);
``scalars`` are the cell's results. So a study is one Cypher query away::

    MATCH (a:Analysis) WHERE a.complete = true AND a.params CONTAINS '"study": "demo"'
    MATCH (r:Run) WHERE r.id = a.run RETURN r.name, a.kind, a.params, a.scalars

Nothing else in the store changes: no new node or relationship type.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from llamp.graphdb.store import GraphStore

#: Keys of an Analysis' params that identify a study cell (the rest are LogGPS parameters).
LABELS = ("study", "cell", "run", "collectives", "network", "placement", "option", "analysis")


def write_cell(
    store: GraphStore,
    run: str,
    labels: dict[str, Any],
    params: dict[str, Any],
    scalars: dict[str, Any],
) -> str:
    """Store one computed cell on stored run ``run``; its Analysis id."""
    return store.write_analysis(run, labels["analysis"], params | labels, scalars)


def study_cells(store: GraphStore, study: str | None = None) -> pd.DataFrame:
    """Stored cells (of ``study``, or of every study): one row per cell with the labels, the
    parameters, ``stored_run``, ``analysis_id``, ``created`` and the scalars as columns."""
    rows = []
    for info in store.list_analyses():
        params = info.params
        if "study" not in params or "cell" not in params:
            continue
        if study is not None and params["study"] != study:
            continue
        rows.append(
            params
            | {"stored_run": info.run, "analysis_id": info.id, "created": info.created}
            | info.scalars
        )
    return pd.DataFrame(rows)


def studies(store: GraphStore) -> pd.DataFrame:
    """One row per stored study: ``study``, ``cells``, ``runs``, ``networks``, ``analyses``,
    ``created`` (its newest cell)."""
    return summarise(study_cells(store))


def summarise(cells: pd.DataFrame) -> pd.DataFrame:
    """:func:`studies` of cells already read (:func:`study_cells` of every study)."""
    if cells.empty:
        return pd.DataFrame(columns=["study", "cells", "runs", "networks", "analyses", "created"])
    grouped = cells.groupby("study")
    return pd.DataFrame(
        {
            "cells": grouped["cell"].nunique(),
            "runs": grouped["run"].nunique(),
            "networks": grouped["network"].nunique(),
            "analyses": grouped["analysis"].agg(lambda s: ", ".join(sorted(set(s)))),
            "created": grouped["created"].max(),
        }
    ).reset_index()


def column_labels(
    cells: pd.DataFrame,
    columns: tuple[str, ...] = ("network", "placement", "option", "collectives"),
) -> pd.Series:
    """The matrix column of each cell: its network, with placement, option and collective
    variant when the study has several (``"dragonfly · dense"``)."""
    varying = [c for c in columns if c in cells.columns and cells[c].nunique(dropna=False) > 1]
    varying = varying or [columns[0]]
    return (
        cells[varying]
        .fillna("")
        .astype(str)
        .agg(lambda parts: " · ".join(p for p in parts if p), axis=1)
    )


def study_matrix(
    cells: pd.DataFrame,
    metric: str,
    *,
    analysis: str | None = None,
    rows: str = "run",
    columns: tuple[str, ...] = ("network", "placement", "option", "collectives"),
) -> pd.DataFrame:
    """``metric`` of the stored cells as a matrix: one row per ``rows`` value (runs), one
    column per combination of ``columns`` that varies (network, and placement, option or
    collective variant when the study has several); cells of other analyses left out."""
    frame = cells if analysis is None else cells[cells["analysis"] == analysis]
    if frame.empty or metric not in frame.columns:
        return pd.DataFrame()
    label = column_labels(frame, columns)
    values = pd.to_numeric(frame[metric], errors="coerce")
    table = pd.DataFrame({rows: frame[rows], "column": label, metric: values})
    return table.pivot_table(index=rows, columns="column", values=metric, aggfunc="first")
