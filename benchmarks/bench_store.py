"""Graph store benchmarks (docs/architecture.md §Performance targets: store load ≥ 10^6 vertices/s embedded).

LadybugDB: load (``put_run``) and read-back (``load_run``) throughput at 10^5 and 10^6
vertices, every catalogue query and selection on the 10^6-vertex run, and deleting a run. The
Neo4j backend over Bolt: load, read-back and delete throughput against a local Neo4j
Community server (:mod:`llamp.graphdb.neo4jserver`, heap 4 GiB, page cache 2 GiB) at the same
sizes and, with ``--full``, 10^7 vertices, and Neo4j's offline path at the same sizes (CSV
files, ``neo4j-admin database import full``, server start, constraints, read-back: one row per
phase); each Neo4j row records the machine's load average. Synthetic graphs come from a small
generator private to this module: ranks on a ring, each repeating (calc, send to the next rank, recv from the
previous one) with matched messages.
"""

from __future__ import annotations

import os
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.timing import median_time, peak_rss_mb, row
from llamp.graph import CALC, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph

BENCH = "store"


def _ring_graph(vertices: int, ranks: int = 64, seed: int = 0) -> ExecutionGraph:
    """About ``vertices`` vertices on ``ranks`` ranks (calc, send, recv repeated)."""
    steps = max(1, vertices // (3 * ranks))
    per_rank = 3 * steps
    n = ranks * per_rank
    rng = np.random.default_rng(seed)
    vid = np.arange(n, dtype=np.int64)
    rank = vid // per_rank
    pos = vid % per_rank
    kind = np.array([CALC, SEND, RECV], dtype=np.int8)[pos % 3]
    cost = np.where(kind == CALC, rng.uniform(1e3, 1e5, n), 0.0)
    size = np.where(kind == CALC, 0, 1 << rng.integers(3, 20, n))
    nxt, prv = (rank + 1) % ranks, (rank - 1) % ranks
    peer = np.where(kind == SEND, nxt, np.where(kind == RECV, prv, 0))
    tag = np.where(kind == CALC, 0, pos // 3)
    local = np.flatnonzero(pos < per_rank - 1)
    sends = np.flatnonzero(kind == SEND)
    recvs = nxt[sends] * per_rank + pos[sends] + 1
    size[recvs] = size[sends]
    return ExecutionGraph.from_arrays(
        ranks,
        rank=rank,
        kind=kind,
        cost_ns=cost,
        size=size,
        peer=peer,
        tag=tag,
        edge_src=np.concatenate([local, sends]),
        edge_dst=np.concatenate([local + 1, recvs]),
        edge_kind=np.concatenate([np.full(local.size, REQUIRES), np.full(sends.size, MESSAGE)]),
        t_trace_ns=np.cumsum(cost + 500.0) - (cost + 500.0),
        meta={"name": f"ring-{n}", "format": "synthetic"},
        validate=False,
    )


def _ladybug(graph: ExecutionGraph, label: str, repeat: int, queries: bool) -> list[dict[str, Any]]:
    from llamp.graphdb import open_store

    n = graph.num_vertices
    rows: list[dict[str, Any]] = []
    root = Path(tempfile.mkdtemp(prefix="llamp-bench-store-"))
    try:

        def load() -> None:
            shutil.rmtree(root / "store", ignore_errors=True)
            with open_store(str(root / "store")) as store:
                store.put_run(graph, "bench")

        seconds, runs, _ = median_time(load, repeat)
        rows.append(
            row(
                BENCH,
                f"ladybug {label}",
                "load",
                n / seconds,
                "vertices/s",
                runs,
                seconds=seconds,
                edges=graph.num_edges,
            )
        )
        with open_store(str(root / "store")) as store:
            seconds, runs, back = median_time(lambda: store.load_run("bench"), repeat)
            assert back.equals(graph)
            rows.append(
                row(
                    BENCH,
                    f"ladybug {label}",
                    "read-back",
                    n / seconds,
                    "vertices/s",
                    runs,
                    seconds=seconds,
                )
            )
            if queries:
                rows.extend(_queries(store, graph, label, repeat))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows


def _queries(store: Any, graph: ExecutionGraph, label: str, repeat: int) -> list[dict[str, Any]]:
    from llamp.lp import evaluate
    from llamp.params import LogGPS

    ev = evaluate(graph, LogGPS())
    per_vertex = pd.DataFrame(
        {
            "vid": np.arange(graph.num_vertices),
            "start_ns": ev.start_ns,
            "slack_ns": ev.slack_ns,
            "critical": ev.critical,
        }
    )
    seconds, runs, analysis = median_time(
        lambda: store.write_analysis("bench", "critical", {}, {}, per_vertex=per_vertex), 1
    )
    rows = [
        row(
            BENCH,
            f"ladybug {label}",
            "write_analysis (per-vertex)",
            graph.num_vertices / seconds,
            "vertices/s",
            runs,
            seconds=seconds,
        )
    ]
    mid = float(np.median(ev.start_ns))
    t_mid = float(np.median(graph.t_trace_ns))
    cases = {
        "rank_summary": lambda: store.run_query("rank_summary", "bench"),
        "rank_pair_traffic": lambda: store.run_query("rank_pair_traffic", "bench"),
        "heaviest_messages (100)": lambda: store.run_query("heaviest_messages", "bench", limit=100),
        "critical_candidates (ε=0)": lambda: store.run_query(
            "critical_candidates", "bench", analysis=analysis, eps_ns=0.0
        ),
        "critical_messages (ε=0)": lambda: store.run_query(
            "critical_messages", "bench", analysis=analysis, eps_ns=0.0
        ),
        "select ranks 0-7": lambda: store.select("bench", ranks=range(8)),
        "select trace window (1%)": lambda: store.select(
            "bench", trace_window_ns=(t_mid, t_mid + 0.01 * float(graph.t_trace_ns.max()))
        ),
        "select start window (1%)": lambda: store.select(
            "bench", analysis=analysis, start_window_ns=(mid, mid + 0.01 * ev.runtime_ns)
        ),
        "select slack ≤ 0": lambda: store.select("bench", analysis=analysis, slack_le_ns=0.0),
    }
    for name, func in cases.items():
        seconds, runs, _ = median_time(func, repeat)
        rows.append(row(BENCH, f"ladybug {label}", name, seconds, "s", runs))
    return rows


def _ladybug_delete(graph: ExecutionGraph, label: str) -> dict[str, Any]:
    from llamp.graphdb import open_store

    root = Path(tempfile.mkdtemp(prefix="llamp-bench-store-"))
    try:
        with open_store(str(root / "store")) as store:
            store.put_run(graph, "bench")
            seconds, runs, _ = median_time(lambda: store.delete_run("bench"), 1)
        return row(
            BENCH,
            f"ladybug {label}",
            "delete_run",
            graph.num_vertices / seconds,
            "vertices/s",
            runs,
            seconds=seconds,
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system) process ``pid`` has used so far: on a machine shared with other
    jobs, the comparable number where wall time is not."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _read_back(case: str, n: int, server, read, repeat: int) -> tuple[dict[str, Any], Any]:
    """The read-back row of ``read()`` (median of ``repeat``; server and client CPU per read)
    and what the last read returned."""
    cpu = _cpu_seconds(server.pid), time.process_time()
    seconds, runs, back = median_time(read, repeat)
    return (
        row(
            BENCH,
            case,
            "read-back",
            n / seconds,
            "vertices/s",
            runs,
            seconds=seconds,
            load_avg=os.getloadavg()[0],
            server_cpu_s=(_cpu_seconds(server.pid) - cpu[0]) / len(runs),
            client_cpu_s=(time.process_time() - cpu[1]) / len(runs),
        ),
        back,
    )


def _neo4j(graphs: list[tuple[ExecutionGraph, str]]) -> list[dict[str, Any]]:
    """Load, read back and delete each graph on one local Neo4j Community server (JVM heap
    4 GiB, page cache 2 GiB). Each row carries the 1-minute load average and the CPU seconds
    of server and client."""
    from llamp.errors import StoreError
    from llamp.graphdb import open_store
    from llamp.graphdb.neo4jserver import Neo4jServer, unavailable

    def failed(label: str, note: str) -> list[dict[str, Any]]:
        return [row(BENCH, f"neo4j {label}", "load", float("nan"), "vertices/s", note=note)]

    why = unavailable()
    if why is not None:
        return failed(graphs[0][1], why)
    try:
        server = Neo4jServer(heap="4g", pagecache="2g").start()
    except StoreError as err:
        return failed(graphs[0][1], str(err).splitlines()[0][:200])
    out: list[dict[str, Any]] = []
    home = Path(tempfile.mkdtemp(prefix="llamp-bench-home-"))
    try:
        with open_store(server.uri) as store:
            store.notify = lambda _text: None
            for graph, label in graphs:
                n = graph.num_vertices
                case = f"neo4j {label}"
                cpu = _cpu_seconds(server.pid), time.process_time()
                seconds, runs, _ = median_time(lambda g=graph: store.put_run(g, "bench"), 1)
                load = os.getloadavg()[0]
                out.append(
                    row(
                        BENCH,
                        case,
                        "load",
                        n / seconds,
                        "vertices/s",
                        runs,
                        seconds=seconds,
                        edges=graph.num_edges,
                        load_avg=load,
                        server_cpu_s=_cpu_seconds(server.pid) - cpu[0],
                        client_cpu_s=time.process_time() - cpu[1],
                    )
                )
                os.environ["LLAMP_HOME"] = str(home)  # the graph file load_run writes
                read, back = _read_back(case, n, server, lambda: store.load_run("bench"), 1)
                assert back.equals(graph)
                del back
                out.append(read)
                seconds, runs, _ = median_time(lambda: store.delete_run("bench"), 1)
                out.append(
                    row(
                        BENCH,
                        case,
                        "delete_run",
                        n / seconds,
                        "vertices/s",
                        runs,
                        seconds=seconds,
                        load_avg=os.getloadavg()[0],
                    )
                )
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)
    return out


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (the importer's JVM)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _neo4j_import(graph: ExecutionGraph, label: str, repeat: int) -> list[dict[str, Any]]:
    """Neo4j's offline bulk path for one run: CSV files (:mod:`llamp.graphdb.neo4jimport`),
    ``neo4j-admin database import full`` into a new DBMS home, the server started on it, the
    first writable open (which creates the constraints and indexes over the imported rows),
    and the read-back (the median of ``repeat`` up to 10^6 vertices, else one; server and
    client CPU seconds per read), checked equal to the graph. Each phase is one row with its
    seconds."""
    from llamp.errors import StoreError
    from llamp.graphdb import open_store
    from llamp.graphdb.neo4jimport import write_import_files
    from llamp.graphdb.neo4jserver import Neo4jServer, admin_import, unavailable

    case = f"neo4j-admin import {label}"
    why = unavailable()
    if why is not None:
        return [row(BENCH, case, "import", float("nan"), "vertices/s", note=why)]
    n = graph.num_vertices
    root = Path(tempfile.mkdtemp(prefix="llamp-bench-import-"))
    out: list[dict[str, Any]] = []

    def phase(metric: str, seconds: float, **extra: Any) -> None:
        out.append(
            row(
                BENCH,
                case,
                metric,
                n / seconds,
                "vertices/s",
                [seconds],
                seconds=seconds,
                load_avg=os.getloadavg()[0],
                **extra,
            )
        )

    server = None
    try:
        start = time.perf_counter()
        files = write_import_files([(graph, "bench")], root / "csv")
        phase("write CSV", time.perf_counter() - start, edges=graph.num_edges)
        start, cpu = time.perf_counter(), _children_cpu()
        admin_import(root / "home", files, heap="4g")
        phase("neo4j-admin import", time.perf_counter() - start, import_cpu_s=_children_cpu() - cpu)
        shutil.rmtree(root / "csv")
        start = time.perf_counter()
        server = Neo4jServer(home=root / "home", heap="4g", pagecache="2g").start()
        phase("server start", time.perf_counter() - start)
        start, cpu = time.perf_counter(), _cpu_seconds(server.pid)
        with open_store(server.uri) as store:
            store.query("CALL db.awaitIndexes(3600)", write=True)
            phase("open (constraints, indexes online)", time.perf_counter() - start)
            os.environ["LLAMP_HOME"] = str(root / "llamp-home")
            info = store.run_info("bench")
            reads = repeat if n <= 1_000_000 else 1
            read, back = _read_back(case, n, server, lambda: store._read_back(info), reads)
            out.append(read)
            assert back.equals(graph)
    except StoreError as err:
        out.append(row(BENCH, case, "import", float("nan"), "vertices/s", note=str(err)[:200]))
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return out


def _label(graph: ExecutionGraph) -> str:
    return f"{graph.num_vertices:.0e} vertices".replace("e+0", "e")


def run(quick: bool, repeat: int, full: bool = False) -> list[dict[str, Any]]:
    """LadybugDB at 10^5 and 10^6 vertices; Neo4j over Bolt and through ``neo4j-admin
    database import`` at the same sizes and, with ``full``, at 10^7 (``LLAMP_BENCH_STORE``:
    ``neo4j`` runs the Neo4j rows alone, ``neo4j-import`` the importer's alone)."""
    sizes = [10_000, 100_000] if quick else [100_000, 1_000_000]
    only = os.environ.get("LLAMP_BENCH_STORE", "")
    rows: list[dict[str, Any]] = []
    if not only:
        for i, size in enumerate(sizes):
            graph = _ring_graph(size)
            rows.extend(_ladybug(graph, _label(graph), repeat, queries=i == len(sizes) - 1))
            if i == 0:
                rows.append(_ladybug_delete(graph, _label(graph)))
    neo4j_sizes = sizes + ([10_000_000] if full and not quick else [])
    if only != "neo4j-import":
        graphs = [_ring_graph(size) for size in neo4j_sizes]
        rows.extend(_neo4j([(g, _label(g)) for g in graphs]))
        del graphs
    for size in neo4j_sizes:
        graph = _ring_graph(size)
        rows.extend(_neo4j_import(graph, _label(graph), repeat))
        del graph
    rows.append(row(BENCH, "process", "peak RSS", peak_rss_mb(), "MB"))
    return rows
