"""Network and collective what-ifs (LLAMP §IV, App. H–J): topology comparison, pair matrices,
rank placement, and collective-algorithm variants.

Graphs are synthetic stencil codes (``llamp.ingest.synthetic``, 64 ranks on a 2-D grid, a
recursive-doubling allreduce every iteration, an alltoall every 10th). Topologies as in the
paper's case study scaled to 64 nodes (one rank per node): a 3-tier fat tree k = 8, a
dragonfly g = 4, a = 4, p = 4 and a 4×4×4 torus. Placement: 8 nodes × 8 ranks, two-level
(intra 300 ns, 0.01 ns/B; inter 3 µs, 0.018 ns/B).

Collectives: the 16-rank noisy stencil written as a liballprof trace
(:func:`llamp.ingest.synthetic.write_liballprof`, the one ``bench_e2e`` ingests: halo exchange,
a recursive-doubling allreduce every iteration, an alltoall every 10th, 10 % imbalance, 5 %
noise) at 10^5 and 10^6 vertices, re-expanded with the default algorithms and with a ring
allreduce (3.3× the vertices). Per variant, each in a fresh process (its own peak RSS): the
vertex count and time :func:`~llamp.lp.collectives_whatif.estimate_whatif` predicts before
expanding; *before*, what the Collectives page computed before the exact curve (the comparison at L0
with its 1/2/5 % tolerances, then every critical latency over the page's automatic range and a
200-point sweep through it), stopped after :data:`BEFORE_LIMIT_S`; *after*, the comparison and
the exact curve in what the comparison left of 60 s (the page's budget,
:func:`~llamp.lp.collectives_whatif.variant_curves`);
and both variants together as the page runs them. ``python -m benchmarks.bench_whatif
--collectives`` runs this part alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
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


# ---------------------------------------------------------------------- collectives
#: The variants compared (the page's Fig. 10 pair).
COLLECTIVE_VARIANTS = ("default", "allreduce=ring")
#: A "before" run is stopped after this long (the page used to run for many minutes).
BEFORE_LIMIT_S = 900.0
#: Points of the sweep the page drew through the critical latencies before the exact curve.
BEFORE_POINTS = 200

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from benchmarks.timing import peak_rss_mb
from llamp.ingest import read_trace
from llamp.lp import critical_latencies, sweep
from llamp.lp import collectives_whatif as w
from llamp.params import LogGPS
path, mode, variants = sys.argv[1], sys.argv[2], sys.argv[3].split(";")
points = int(sys.argv[4])
params = LogGPS()
levels = (0.01, 0.02, 0.05)
trace = read_trace(path)
start = time.perf_counter()
est = w.estimate_whatif(trace, variants, levels=len(levels))
estimate_s = time.perf_counter() - start
comp = w.compare_collectives(trace, variants, params, [params.L], levels=levels)
lo, hi = w.comparison_range(comp.summary, levels, params.L)
budget = w.curve_budget(time.perf_counter() - start)  # what the comparison left of 60 s
out = {"vertices": [int(v) for v in comp.summary["vertices"]],
       "estimated_vertices": [int(v) for v in est.variants["vertices"]],
       "estimate_s": estimate_s, "estimated_s": est.summary_seconds, "budget_s": budget,
       "comparison_s": time.perf_counter() - start}
if mode == "before":
    found = 0
    for label, graph in comp.graphs.items():
        crit = critical_latencies(graph, params, lo, hi)
        found += len(crit.critical)
        sweep(graph, params, __import__("numpy").linspace(lo, hi, points))
    out["critical"], out["unresolved"] = found, 0
else:
    curves = w.variant_curves(comp, lo, hi, seconds=budget)
    out["critical"] = sum(len(c.critical.critical) for c in curves.values())
    out["unresolved"] = sum(len(c.critical.unresolved) for c in curves.values())
out["seconds"] = time.perf_counter() - start
out["rss_mb"] = peak_rss_mb()
print(json.dumps(out))
"""


def _collective_trace(work: Path, vertices: int) -> Path:
    from benchmarks.memprofile import write_trace

    path, _ = write_trace(work, vertices)
    target = work / f"stencil-{vertices}"
    if not target.exists():
        path.rename(target)
    return target


def _child(trace: Path, mode: str, variants: list[str]) -> dict[str, Any]:
    root = Path(__file__).resolve().parent.parent
    limit = BEFORE_LIMIT_S if mode == "before" else 4 * BEFORE_LIMIT_S
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                _CHILD,
                str(trace),
                mode,
                ";".join(variants),
                str(BEFORE_POINTS),
            ],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"timeout": True, "seconds": time.perf_counter() - started}
    if proc.returncode != 0:
        raise RuntimeError(f"collective what-if child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _collectives(sizes: list[int], before: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="llamp-whatif-") as tmp:
        for n in sizes:
            trace = _collective_trace(Path(tmp), n)
            cases = [[v] for v in COLLECTIVE_VARIANTS] + [list(COLLECTIVE_VARIANTS)]
            for variants in cases:
                label = " + ".join(variants)
                case = f"stencil trace {n:.0e} vertices: {label}"
                for mode in ("before", "after") if before else ("after",):
                    print(f"# {case}, {mode} …", file=sys.stderr, flush=True)
                    r = _child(trace, mode, variants)
                    if r.get("timeout"):
                        rows.append(
                            row("whatif", case, f"{mode}: did not finish within", r["seconds"], "s")
                        )
                        continue
                    if mode == "after" or not before:
                        rows += [
                            row("whatif", case, "expanded vertices", sum(r["vertices"]), "count"),
                            row(
                                "whatif",
                                case,
                                "  estimated before expanding (exact)",
                                sum(r["estimated_vertices"]),
                                "count",
                            ),
                            row("whatif", case, "  estimate took", r["estimate_s"], "s"),
                            row(
                                "whatif",
                                case,
                                "  estimated comparison time (default rate)",
                                r["estimated_s"],
                                "s",
                            ),
                            row(
                                "whatif",
                                case,
                                "  curve budget (60 s − comparison)",
                                r["budget_s"],
                                "s",
                            ),
                        ]
                    rows += [
                        row(
                            "whatif",
                            case,
                            f"{mode}: comparison at L0 (T, λ, 1/2/5%)",
                            r["comparison_s"],
                            "s",
                        ),
                        row(
                            "whatif",
                            case,
                            f"{mode}: total with the T(L) curve",
                            r["seconds"],
                            "s",
                            critical=r["critical"],
                            unresolved=r["unresolved"],
                        ),
                        row(
                            "whatif",
                            case,
                            f"{mode}: critical latencies found",
                            r["critical"],
                            "count",
                        ),
                        row(
                            "whatif",
                            case,
                            f"{mode}: intervals left unresolved",
                            r["unresolved"],
                            "count",
                        ),
                        row("whatif", case, f"{mode}: peak RSS", r["rss_mb"], "MB"),
                    ]
    return rows


def run(quick: bool = False, repeat: int = 3, full: bool = False) -> list[dict[str, Any]]:
    sizes = [10**4] if quick else [10**5, 10**6]
    rows: list[dict[str, Any]] = []
    for n in sizes:
        rows += _topologies(n, repeat)
        rows += _matrices(n, repeat)
    rows += _lp_check(10**4)
    rows += _placement(10**4 if quick else 10**5, 10.0 if quick else 30.0)
    rows.append(row("whatif", "all", "peak RSS", peak_rss_mb(), "MB"))
    rows += _collectives(sizes, before=full)
    return rows


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_whatif", description=__doc__)
    parser.add_argument("--collectives", action="store_true", help="the collective what-ifs only")
    parser.add_argument("--sizes", default="1e5,1e6", help="trace sizes in vertices")
    parser.add_argument("--no-before", action="store_true", help="skip the pre-issue-17 runs")
    parser.add_argument("--json", dest="json_out", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    sizes = [int(float(x)) for x in args.sizes.split(",")]
    if args.collectives:
        rows = _collectives(sizes, before=not args.no_before)
    else:
        rows = run(quick=False, full=not args.no_before)
    headers = ("case", "metric", "value", "unit")
    cells = [headers] + [
        tuple(f"{r[h]:.4g}" if isinstance(r[h], float) else str(r[h]) for h in headers)
        for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    for c in cells[:1] + [tuple("-" * w for w in widths)] + cells[1:]:
        print("| " + " | ".join(x.ljust(w) for x, w in zip(c, widths, strict=True)) + " |")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
