"""Studies: a Monte Carlo / tolerance study of one graph on 1 and 2 local Dask
workers, the overhead per cell, and the client's store writes.

The graph is the synthetic stencil (16 ranks, an alltoall every 10th iteration) saved as
``.npz``; the study is N networks (L from 1 to 50 µs, so every cell differs) × two analyses:
``tolerance`` (1 % L and G tolerance) and ``mc`` (4 samples, 2 % temporal noise, ``T`` only).
Measured, each from a cold start of the executor:

- ``start-up``: a ``LocalCluster`` of 1 or 2 single-threaded worker processes started and
  warmed by a 2-cell study (process start, imports, numba compilation, graph load): paid once
  per study;
- ``1 worker`` / ``2 workers``: the study's wall time on the warm cluster;
- overhead per cell = (wall time on 1 worker − Σ cell compute seconds measured inside the
  cells) / cells: what a study adds to the analyses (task submission, result transfer, journal);
- ``store write per cell``: the client writing one cell (one Analysis) to the embedded store
  holding the graph (50 writes, mean).

Sizes: ``--quick`` 10^5 vertices × 40 cells; default 10^6 × 200 cells; ``--full`` 10^6 × 1000.
Run alone: ``python -m benchmarks.bench_study [--quick|--full]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.timing import row
from llamp.ingest.synthetic import stencil_with_vertices


def _spec(directory: Path, npz: Path, networks: int) -> Path:
    lines = [
        f"  - {{name: n{i:04d}, L: {L:.6g}ns, G: 100Gb/s}}"
        for i, L in enumerate(np.linspace(1000.0, 50000.0, networks))
    ]
    spec = directory / "bench.yaml"
    spec.write_text(
        textwrap.dedent(f"""\
        study: bench
        runs: [{{name: stencil, path: {npz}}}]
        analyses:
          - tolerance: {{x: [1]}}
          - mc: {{samples: 4, temporal_cv: 0.02, runtime_only: true}}
        networks:
        """)
        + "\n".join(lines)
        + "\n"
    )
    return spec


def _measure(vertices: int, cells: int, echo: bool = False) -> list[dict[str, Any]]:
    from llamp.study import load_spec, run_study
    from llamp.study.execute import connect

    rows: list[dict[str, Any]] = []

    def emit(r: dict[str, Any]) -> None:
        rows.append(r)
        if echo:  # a long run keeps what it measured if it is stopped
            print(f"# {r['metric']}: {r['value']:.4g} {r['unit']}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="llamp-bench-study-") as tmp:
        directory = Path(tmp)
        graph = stencil_with_vertices(vertices, ranks=16, alltoall_every=10)
        npz = graph.save(directory / "stencil.npz")
        study = load_spec(_spec(directory, npz, cells // 2))
        case = f"stencil {graph.num_vertices:.2g} vertices, {len(study.cells)} cells"

        warm = load_spec(_spec(directory, npz, 2))  # other L: cells the study does not have
        walls, startups, tables = {}, {}, {}
        for workers in (1, 2):
            start = time.perf_counter()
            cluster = connect(study.execution, workers)
            run_study(warm, use_store=False, cluster=cluster, restart=True)
            startups[workers] = time.perf_counter() - start
            try:
                start = time.perf_counter()
                report = run_study(study, use_store=False, cluster=cluster, restart=True)
                walls[workers] = time.perf_counter() - start
            finally:
                cluster.close()
            assert report.failed == 0
            tables[workers] = report.table.set_index("cell").sort_index()
            emit(
                row(
                    "study",
                    case,
                    f"start-up of {workers} worker(s): processes, imports, JIT, graph load",
                    startups[workers],
                    "s",
                )
            )
            emit(row("study", case, f"{workers} worker(s) (wall, warm)", walls[workers], "s"))
            if workers == 1:
                compute = float(report.table["seconds"].sum())
                for analysis, seconds in (
                    report.table.groupby("analysis")["seconds"].median().items()
                ):
                    emit(row("study", case, f"  median cell: {analysis}", seconds, "s"))
                overhead = (walls[1] - compute) / len(study.cells)
                emit(row("study", case, "overhead per cell (1 worker, warm)", overhead * 1e3, "ms"))
                emit(
                    row(
                        "study",
                        case,
                        "  overhead / median cell compute",
                        overhead / float(report.table["seconds"].median()) * 100,
                        "%",
                    )
                )
        same = all(
            np.array_equal(tables[1][c].to_numpy(), tables[2][c].to_numpy(), equal_nan=True)
            for c in ("tolerance_1pct_L_ns", "mc_mean_runtime_ns")
        )
        emit(row("study", case, "same numbers on 1 and 2 workers", float(same), "bool"))
        emit(row("study", case, "speed-up 2 workers vs 1 (warm)", walls[1] / walls[2], "×"))
        emit(
            row(
                "study",
                case,
                "speed-up 2 workers vs 1 (with start-up)",
                (walls[1] + startups[1]) / (walls[2] + startups[2]),
                "×",
            )
        )

        # What the client pays per cell to store it: write_cell on a stored run of this size.
        from llamp.graphdb import open_store
        from llamp.graphdb.studies import write_cell

        cell = study.cells[0]
        writes = 50
        with open_store(str(directory / "store")) as store:
            store.put_run(graph, "stencil")
            start = time.perf_counter()
            for i in range(writes):
                write_cell(
                    store,
                    "stencil",
                    cell.labels() | {"cell": f"bench{i}"},
                    cell.network.params.as_dict(),
                    {"runtime_ns": float(i)},
                )
            per_write = (time.perf_counter() - start) / writes
        emit(
            row(
                "study",
                case,
                "store write per cell (client, embedded store)",
                per_write * 1e3,
                "ms",
            )
        )
    return rows


def run(
    quick: bool = False, repeat: int = 1, full: bool = False, echo: bool = False
) -> list[dict[str, Any]]:
    if quick:
        return _measure(100_000, 40, echo)
    return _measure(1_000_000, 1000 if full else 200, echo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_study", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="10^5 vertices, 40 cells")
    parser.add_argument("--full", action="store_true", help="10^6 vertices, 1000 cells")
    args = parser.parse_args(argv)
    rows = run(quick=args.quick, full=args.full, echo=True)
    width = max(len(r["metric"]) for r in rows)
    print(f"case: {rows[0]['case']}")
    print(f"| {'metric'.ljust(width)} | value | unit |")
    print(f"|{'-' * (width + 2)}|-------|------|")
    for r in rows:
        value = r["value"]
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        label = r["metric"] if r["case"] == rows[0]["case"] else f"{r['metric']} ({r['case']})"
        print(f"| {label.ljust(width)} | {text} | {r['unit']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
