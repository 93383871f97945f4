"""Running a study's cells: in this process, on local worker processes, on an existing Dask
cluster (``tcp://host:port``) or on a Slurm allocation through dask-jobqueue.

The client prepares one graph file per (run, collective variant) under the study's work
directory (a shared path on a cluster) — or, for runs in a Neo4j store, lets workers read them
from it — and submits one task per cell. A worker keeps the graphs it loaded (and their lowered
engines, :func:`llamp.lp.engine_for`) in :data:`_GRAPHS`, so each graph is read once per worker,
not once per cell; cells are submitted grouped by graph so a worker tends to stay on one. Only
the client writes the embedded store. A cell that fails returns its error; the others go on.
"""

from __future__ import annotations

import os
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llamp.errors import InputError, LlampError
from llamp.graph import ExecutionGraph


@dataclass(frozen=True)
class GraphSource:
    """Where a worker finds a graph: an ``.npz`` file, or a run in a Neo4j store."""

    key: tuple[str, str]
    npz: str | None = None
    store_uri: str | None = None
    run: str | None = None

    @property
    def spec(self) -> str:
        """The GRAPH argument of the equivalent ``llamp`` command."""
        return self.npz if self.npz is not None else str(self.run)

    def load(self) -> ExecutionGraph:
        if self.npz is not None:  # checked again: the file may have changed since the plan
            from llamp.ingest.npz import read_npz

            return read_npz(self.npz)
        from llamp.graphdb import open_store

        with open_store(self.store_uri, read_only=True) as store:
            return store.load_run(str(self.run))


@dataclass(frozen=True)
class CellResult:
    """The outcome of one cell: its scalars, or the error that stopped it."""

    cell: str
    ok: bool
    scalars: dict[str, Any]
    error: str
    seconds: float
    graph_loaded: bool
    worker: str


#: Graphs a worker process holds, most recently used last.
_GRAPHS: OrderedDict[tuple, ExecutionGraph] = OrderedDict()
#: How many graphs a worker keeps (``LLAMP_STUDY_GRAPHS``): a 10^7-vertex graph is ~1 GB.
_KEEP = int(os.environ.get("LLAMP_STUDY_GRAPHS", "4"))


def _graph(source: GraphSource) -> tuple[ExecutionGraph, bool]:
    cache_key = (source.key, source.npz, source.store_uri, source.run)
    graph = _GRAPHS.get(cache_key)
    if graph is not None:
        _GRAPHS.move_to_end(cache_key)
        return graph, False
    graph = source.load()
    _GRAPHS[cache_key] = graph
    while len(_GRAPHS) > max(_KEEP, 1):
        _GRAPHS.popitem(last=False)
    return graph, True


def run_cell(cell: Any, source: GraphSource) -> CellResult:
    """Compute one cell (on a worker): load its graph unless held, run the analysis."""
    import warnings

    from llamp.study.analyses import ANALYSES, CellInput

    start = time.perf_counter()
    loaded = False
    worker = f"{os.uname().nodename}:{os.getpid()}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph, loaded = _graph(source)
            kind = ANALYSES[cell.analysis]
            payload = kind.run(CellInput(graph, cell, source.spec))
            scalars = kind.scalars(payload)
        return CellResult(cell.id, True, scalars, "", time.perf_counter() - start, loaded, worker)
    except LlampError as err:
        message = str(err)
    except Exception as err:  # noqa: BLE001 - reported in the cell's row, the others go on
        tb = traceback.extract_tb(err.__traceback__)[-1]
        message = f"{type(err).__name__}: {err} ({Path(tb.filename).name}:{tb.lineno})"
    return CellResult(cell.id, False, {}, message, time.perf_counter() - start, loaded, worker)


# ---------------------------------------------------------------------- executors
def _order(cells: list, sources: dict) -> list:
    return sorted(cells, key=lambda c: (c.graph_key, c.analysis, c.network.name))


def run_serial(cells: list, sources: dict) -> Iterator[CellResult]:
    """Every cell in this process, one after the other."""
    for cell in _order(cells, sources):
        yield run_cell(cell, sources[cell.graph_key])


@dataclass
class Cluster:
    """A Dask client and what to close when the study is done."""

    client: Any
    closers: list[Callable[[], None]]
    description: str

    def close(self) -> None:
        for close in self.closers:
            try:
                close()
            except Exception:  # noqa: BLE001 - best effort at shutdown
                pass


def slurm_cluster(settings: Any):
    """A dask-jobqueue ``SLURMCluster`` from the spec's ``execution.slurm`` (not started)."""
    from dask_jobqueue import SLURMCluster

    kwargs: dict[str, Any] = {
        "cores": settings.cores,
        "processes": settings.processes or settings.cores,
        "memory": settings.memory,
        "walltime": settings.walltime,
        "job_extra_directives": list(settings.job_extra_directives),
        "job_script_prologue": list(settings.prologue),
    }
    if settings.interface:
        kwargs["interface"] = settings.interface
    if settings.queue:
        kwargs["queue"] = settings.queue
    if settings.account:
        kwargs["account"] = settings.account
    return SLURMCluster(**kwargs)


def connect(execution: Any, workers: int | None) -> Cluster:
    """A Dask client: ``scheduler`` address, a Slurm allocation, or local processes."""
    from distributed import Client

    if execution.scheduler:
        try:
            client = Client(execution.scheduler, timeout="20s")
        except OSError as err:
            raise InputError(
                f"cannot reach the Dask scheduler {execution.scheduler}: {err}"
            ) from None
        return Cluster(client, [client.close], f"Dask scheduler {execution.scheduler}")
    if execution.cluster == "slurm":
        cluster = slurm_cluster(execution.slurm)
        cluster.scale(jobs=execution.slurm.jobs)
        client = Client(cluster)
        return Cluster(
            client,
            [client.close, cluster.close],
            f"Slurm: {execution.slurm.jobs} job(s) of {execution.slurm.cores} cores",
        )
    from distributed import LocalCluster

    n = workers or os.cpu_count() or 1
    cluster = LocalCluster(
        n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    )
    client = Client(cluster)
    return Cluster(client, [client.close, cluster.close], f"{n} local worker process(es)")


def run_dask(cells: list, sources: dict, cluster: Cluster) -> Iterator[CellResult]:
    """Submit every cell to the cluster; yield results as they complete."""
    from distributed import as_completed

    client = cluster.client
    futures = [
        client.submit(
            run_cell, cell, sources[cell.graph_key], key=f"llamp-cell-{cell.id}", pure=False
        )
        for cell in _order(cells, sources)
    ]
    for future in as_completed(futures):
        try:
            yield future.result()
        except Exception as err:  # noqa: BLE001 - a worker died: report the cell, go on
            cell_id = str(future.key).removeprefix("llamp-cell-")
            yield CellResult(
                cell_id, False, {}, f"worker lost: {type(err).__name__}: {err}", 0.0, False, ""
            )
        future.release()
