"""Network what-ifs (LLAMP App. H–J): topology comparison, pair matrices, rank placement.

Graphs are synthetic stencil codes (``llamp.ingest.synthetic``, 64 ranks on a 2-D grid, a
recursive-doubling allreduce every iteration, an alltoall every 10th). Topologies as in the
paper's case study scaled to 64 nodes (one rank per node): a 3-tier fat tree k = 8, a
dragonfly g = 4, a = 4, p = 4 and a 4×4×4 torus. Placement: 8 nodes × 8 ranks, two-level
(intra 300 ns, 0.01 ns/B; inter 3 µs, 0.018 ns/B).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.timing import median_time, peak_rss_mb, row
from llamp.ingest.synthetic import stencil_with_vertices
from llamp.lp.engine import engine_for
from llamp.lp.matrix import pair_lp, pair_sensitivity, two_level
from llamp.lp.placement import place, two_level_machine
from llamp.lp.topology import analyze_topology, dense_mapping, parse_topology
from llamp.params import LogGPS

PARAMS = LogGPS()
TOPOLOGIES = ("fattree:k=8", "dragonfly:g=4,a=4,p=4", "torus:dims=4x4x4")
INTRA, INTER = (300.0, 0.01), (3000.0, 0.018)


def _graph(n: int):
    return stencil_with_vertices(n, ranks=64, alltoall_every=10)


def _topologies(n: int, repeat: int) -> list[dict[str, Any]]:
    graph = _graph(n)
    engine_for(graph).events(PARAMS)  # lowering is measured by bench_engine
    case = f"stencil {graph.num_vertices:.2g} vertices"
    rows = []
    for spec in TOPOLOGIES:
        topo = parse_topology(spec)
        t, runs, result = median_time(
            lambda topo=topo: analyze_topology(graph, PARAMS, topo, dense_mapping(64)), repeat
        )
        rows.append(
            row("whatif", case, f"{spec}: T, λ and 1/2/5% tolerance per variable", t, "s", runs)
        )
        wire = result.tolerances.query("variable == 'l_wire' and x == 0.01").tolerance_ns.iloc[0]
        rows.append(row("whatif", case, f"  {spec}: 1% l_wire tolerance", wire, "ns"))
    return rows


def _matrices(n: int, repeat: int) -> list[dict[str, Any]]:
    graph = _graph(n)
    costs = two_level(np.arange(64) // 8, INTRA, INTER)
    pair_sensitivity(graph, PARAMS, costs)  # warm
    case = f"stencil {graph.num_vertices:.2g} vertices"
    t, runs, _ = median_time(lambda: pair_sensitivity(graph, PARAMS, costs), repeat)
    return [row("whatif", case, "λ_L^ij, λ_G^ij matrices (critical path)", t, "s", runs)]


def _lp_check(n: int) -> list[dict[str, Any]]:
    graph = _graph(n)
    costs = two_level(np.arange(64) // 8, INTRA, INTER)
    paths = pair_sensitivity(graph, PARAMS, costs)
    t, runs, lp = median_time(lambda: pair_lp(graph, PARAMS, costs), 1)
    case = f"stencil {graph.num_vertices:.2g} vertices"
    same = np.array_equal(lp.lambda_L, paths.lambda_L) and np.array_equal(
        lp.lambda_G, paths.lambda_G
    )
    return [
        row(
            "whatif",
            case,
            "per-pair LP (GLOP, from scratch)",
            t,
            "s",
            runs,
            variables=lp.num_variables,
            constraints=lp.num_constraints,
        ),
        row("whatif", case, "  reduced costs equal the path matrices", int(same), "bool"),
    ]


def _placement(n: int, budget_s: float) -> list[dict[str, Any]]:
    graph = _graph(n)
    machine = two_level_machine(8, 8, INTRA, INTER)
    case = f"stencil {graph.num_vertices:.2g} vertices, 8 nodes × 8"
    rows = []
    for start in ("best", "random"):
        t, runs, result = median_time(
            lambda start=start: place(graph, PARAMS, machine, budget_s=budget_s, start=start), 1
        )
        frame = result.mappings.set_index("mapping")
        swaps = len(result.history) - 1
        rows += [
            row(
                "whatif",
                case,
                f"placement from {start} (Algorithm 3 + baselines)",
                t,
                "s",
                runs,
                stop=result.stop_reason,
            ),
            row("whatif", case, "  swaps applied", swaps, "count"),
            row("whatif", case, "  llamp T vs block", 100 * frame.loc["llamp", "vs_block"], "%"),
        ]
        if start == "random":
            rows.append(
                row(
                    "whatif",
                    case,
                    "  random start T vs block",
                    100 * frame.loc["random", "vs_block"],
                    "%",
                )
            )
    rows += [
        row("whatif", case, "volume T vs block", 100 * frame.loc["volume", "vs_block"], "%"),
        row(
            "whatif",
            case,
            "round-robin T vs block",
            100 * frame.loc["round-robin", "vs_block"],
            "%",
        ),
    ]
    return rows


def run(quick: bool = False, repeat: int = 3) -> list[dict[str, Any]]:
    sizes = [10**4] if quick else [10**5, 10**6]
    rows: list[dict[str, Any]] = []
    for n in sizes:
        rows += _topologies(n, repeat)
        rows += _matrices(n, repeat)
    rows += _lp_check(10**4)
    rows += _placement(10**4 if quick else 10**5, 10.0 if quick else 30.0)
    rows.append(row("whatif", "all", "peak RSS", peak_rss_mb(), "MB"))
    return rows
