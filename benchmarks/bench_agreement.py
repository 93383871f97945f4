"""Agreement with LogGOPSim on the reference set (``tests/data/reference``, its facts in
``loggopsim.json``, made by :mod:`benchmarks.reference`).

For every reference graph and every model the installed llamp offers — progress × NIC, and order
× rendezvous when :class:`~llamp.params.LogGPS` has those fields — llamp's ``T`` at the facts'
points (12 latencies L ∈ {0, 3, 10, …, 100} µs × three (g, G) pairs, o = 1.5 µs, S = 65535 B)
against LogGOPSim's: the largest ``|T_llamp − T_LogGOPSim| / T_LogGOPSim`` and how many of the
36 points agree to the nanosecond. Under ``order="schedule"`` two more rows per graph, over the
11 latencies 0, 10, …, 100 µs at g = G = 0: the order scheduled once at the baseline
L = 3 µs (fixed order, as every analysis around one baseline uses it) and re-scheduled at each
point (as ``sweep --reschedule``).

Needs no LogGOPSim: the facts are committed. ``python -m benchmarks --only agreement`` prints
the rows; ``python -m benchmarks.bench_agreement`` prints one line per graph with a column per
model (``--summary``: one line per pattern; ``--model schedule``: only those models; ``--quick``:
the graphs of 16 ranks or fewer, no traces). With ``--full`` and a LogGOPSim binary
(``--loggopsim PATH`` or ``$LOGGOPSIM``) also two graphs too large to commit, made and run
through LogGOPSim at benchmark time (:func:`live_graphs`), under the serial-NIC models.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.timing import row
from llamp import config
from llamp.errors import LlampError
from llamp.params import LogGPS

REFERENCE = Path(__file__).resolve().parent.parent / "tests/data/reference"
FACTS = REFERENCE / "loggopsim.json"
BASELINE_L_NS = 3000.0
#: The 11 latencies of the fixed-order and re-scheduled comparisons (``sweep --points 11``).
SWEEP_L_NS = [10_000.0 * i for i in range(11)]


@dataclass(frozen=True)
class Agreement:
    """llamp against LogGOPSim on one graph under one model, over ``points`` points."""

    graph: str
    model: str
    max_rel: float  # largest |T_llamp − T_LogGOPSim| / T_LogGOPSim (inf: llamp failed)
    exact: int  # points where both T agree to the nanosecond
    points: int
    error: str = ""  # llamp's error when it could not evaluate the graph

    def cell(self) -> str:
        if self.error:
            return "error"
        return f"{100 * self.max_rel:.3g}% {self.exact}/{self.points}"


def load_facts(path: Path = FACTS) -> dict[str, Any]:
    """The committed facts file (see :mod:`benchmarks.reference`)."""
    return json.loads(path.read_text())


def model_fields() -> set[str]:
    """The model choices the installed :class:`LogGPS` has (found by introspection)."""
    return {f.name for f in dataclasses.fields(LogGPS)} & {
        "progress",
        "nic",
        "order",
        "rendezvous",
    }


def models() -> list[dict[str, str]]:
    """Every combination of the installed model choices, e.g. ``{"progress": "wait", …}``."""
    have = model_fields()
    choices = {
        "order": getattr(config, "ORDER_MODELS", ()),
        "progress": config.PROGRESS_MODELS,
        "nic": config.NIC_MODELS,
        "rendezvous": getattr(config, "RENDEZVOUS_MODELS", ()),
    }
    names = [n for n in ("order", "progress", "nic", "rendezvous") if n in have and choices[n]]
    combos = itertools.product(*(choices[n] for n in names))
    return [dict(zip(names, combo, strict=True)) for combo in combos]


def model_name(model: dict[str, str]) -> str:
    return " ".join(model.values())


def params_for(model: dict[str, str], facts: dict[str, Any], gap: dict, L: float) -> LogGPS:
    return LogGPS(
        L=float(L),
        o=float(facts["o_ns"]),
        G=float(gap["G_ns_per_byte"]),
        g=float(gap["g_ns"]),
        S=int(facts["S_bytes"]),
        **model,
    )


def read_reference(name: str):
    """A reference graph by its facts-file key."""
    from llamp.ingest.goal import read_goal

    return read_goal(REFERENCE / name)


def agreement(graph, name: str, model: dict[str, str], facts: dict[str, Any]) -> Agreement:
    """llamp's T at every point of the facts file against LogGOPSim's, one configuration per
    point (under ``order="schedule"``: scheduled at that point)."""
    from llamp.lp.engine import GraphEngine

    engine = GraphEngine(graph)
    truth = facts["graphs"][name]
    worst, exact, points = 0.0, 0, 0
    try:
        for gap in facts["gaps"]:
            for L, t_ref in zip(facts["L_ns"], truth[gap["key"]], strict=True):
                t = engine.runtime(params_for(model, facts, gap, L))
                worst = max(worst, _rel(t, t_ref))
                exact += abs(t - t_ref) < 0.5
                points += 1
    except LlampError as err:
        return Agreement(name, model_name(model), float("inf"), 0, points, str(err)[:160])
    return Agreement(name, model_name(model), worst, exact, points)


def schedule_sweeps(
    graph, name: str, model: dict[str, str], facts: dict[str, Any]
) -> tuple[Agreement, Agreement]:
    """Under ``order="schedule"``, g = G = 0, the 11 latencies 0 … 100 µs: (the order
    scheduled once at L = 3 µs, re-scheduled at each point) against LogGOPSim."""
    from llamp.lp.engine import GraphEngine

    engine = GraphEngine(graph)
    gap = next(g for g in facts["gaps"] if g["g_ns"] == 0 and g["G_ns_per_byte"] == 0)
    truth = dict(zip(facts["L_ns"], facts["graphs"][name][gap["key"]], strict=True))
    base = params_for(model, facts, gap, BASELINE_L_NS)
    out = []
    for label, config_at in (
        ("fixed order at L=3us", lambda L: base.with_(L=L)),
        ("re-scheduled per point", lambda L: params_for(model, facts, gap, L)),
    ):
        title = f"{model_name(model)}, {label}"
        worst, exact = 0.0, 0
        try:
            for L in SWEEP_L_NS:
                t = engine.runtime(config_at(L))
                worst = max(worst, _rel(t, truth[L]))
                exact += abs(t - truth[L]) < 0.5
        except LlampError as err:
            failed = Agreement(name, title, float("inf"), 0, len(SWEEP_L_NS), str(err)[:160])
            out.append(failed)
            continue
        out.append(Agreement(name, title, worst, exact, len(SWEEP_L_NS)))
    return out[0], out[1]


def _rel(t: float, t_ref: float) -> float:
    if t_ref == 0:
        return 0.0 if t == 0 else float("inf")
    return abs(t - t_ref) / t_ref


def measured_graphs(facts: dict[str, Any], quick: bool) -> list[str]:
    """The graphs LogGOPSim completed (``quick``: those of 16 ranks or fewer)."""
    names = [n for n, v in facts["graphs"].items() if "error" not in v]
    if quick:
        names = [n for n in names if not any(f"-p{p}-" in n for p in (32, 64))]
        names = [n for n in names if not n.startswith(("traces/", "llamp/"))]
    return names


def evaluate_all(quick: bool) -> list[Agreement]:
    """Every measured graph under every installed model (and the schedule-order sweeps)."""
    facts = load_facts()
    results: list[Agreement] = []
    for name in measured_graphs(facts, quick):
        try:
            graph = read_reference(name)
        except LlampError as err:
            results.append(Agreement(name, "read", float("inf"), 0, 0, str(err)[:160]))
            continue
        for model in models():
            results.append(agreement(graph, name, model, facts))
            if model.get("order") == "schedule":
                results.extend(schedule_sweeps(graph, name, model, facts))
    return results


def live_graphs(tools: tuple[Path, Path], workdir: Path) -> tuple[dict[str, Any], dict]:
    """Graphs too large to commit, made and measured by LogGOPSim now: the noisy 16-rank
    stencil at 10^5 vertices and Schedgen's 128-rank Sweep3D (×32 extrapolation of the shipped
    4-rank trace). Returns (facts as in ``loggopsim.json``, name → ExecutionGraph)."""
    from benchmarks.bench_peers import stencil_goal, sweep3d_goal
    from benchmarks.reference import loggopsim_facts
    from llamp.ingest.goal import read_goal

    sim, txt2bin = tools
    goals: dict[str, Path] = {}
    stencil_dir = workdir / "stencil"
    stencil_dir.mkdir()
    case, path, _ = stencil_goal(100_000, stencil_dir)
    goals[case] = path
    schedgen = sim.with_name("schedgen")
    if schedgen.is_file():
        case, path, _ = sweep3d_goal(schedgen, workdir)
        goals[case] = path
    facts = loggopsim_facts(sim, txt2bin, "live", goals)
    return facts, {name: read_goal(path) for name, path in goals.items()}


def evaluate_live(loggopsim: str | None) -> list[Agreement]:
    """:func:`live_graphs` under the models with a serial NIC (LogGOPSim's), when a LogGOPSim
    binary is given (``--loggopsim``/``$LOGGOPSIM``); else nothing."""
    import tempfile

    from benchmarks.bench_peers import find_tools

    tools = find_tools(loggopsim)
    if tools is None:
        return []
    results: list[Agreement] = []
    with tempfile.TemporaryDirectory(prefix="llamp-agreement-") as tmp:
        facts, graphs = live_graphs(tools, Path(tmp))
        for name, graph in graphs.items():
            if "error" in facts["graphs"][name]:
                continue
            for model in models():
                if model.get("nic") != "serial":
                    continue
                results.append(agreement(graph, name, model, facts))
                if model.get("order") == "schedule":
                    results.extend(schedule_sweeps(graph, name, model, facts))
    return results


def run(
    quick: bool, repeat: int, full: bool = False, loggopsim: str | None = None
) -> list[dict[str, Any]]:
    rows = []
    results = evaluate_all(quick)
    if full:
        results += evaluate_live(loggopsim)
    for a in results:
        rows.append(
            row(
                "agreement",
                a.graph,
                a.model,
                a.cell(),
                "",
                max_rel=a.max_rel,
                exact=a.exact,
                points=a.points,
                error=a.error,
            )
        )
    for model in sorted({a.model for a in results}):
        of = [a for a in results if a.model == model]
        rows.append(
            row(
                "agreement",
                f"all {len(of)} graphs",
                model,
                f"exact everywhere on {sum(a.exact == a.points and not a.error for a in of)}, "
                f"worst {100 * max(a.max_rel for a in of):.3g}%",
                "",
            )
        )
    return rows


def family(graph: str) -> str:
    """A graph's family: Schedgen's pattern and size class without the rank count
    (``schedgen/gather-p16-eager.goal`` → ``gather eager``), else the graph's name."""
    m = re.fullmatch(r"schedgen/(.+)-p\d+-(eager|rendezvous)\.goal", graph)
    return f"{m.group(1)} {m.group(2)}" if m else graph.removesuffix(".goal")


def summary(results: list[Agreement], columns: list[str]) -> list[tuple[str, list[str]]]:
    """Per family and model: the worst max |ΔT|/T over its graphs and how many graphs are exact
    at every point."""
    out = []
    for fam in dict.fromkeys(family(a.graph) for a in results):
        cells = []
        for c in columns:
            of = [a for a in results if family(a.graph) == fam and a.model == c]
            if not of:
                cells.append("")
            elif any(a.error for a in of):
                cells.append("error")
            else:
                worst = max(a.max_rel for a in of)
                exact = sum(a.exact == a.points for a in of)
                cells.append(f"{100 * worst:.3g}% ({exact}/{len(of)})")
        out.append((fam, cells))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_agreement")
    parser.add_argument("--quick", action="store_true", help="graphs of 16 ranks or fewer")
    parser.add_argument(
        "--model",
        action="append",
        help="only the models whose name contains this (e.g. 'schedule'); repeatable",
    )
    parser.add_argument(
        "--summary",
        action="store_true",
        help="one line per pattern: worst max |ΔT|/T over its graphs (graphs exact everywhere)",
    )
    parser.add_argument("--loggopsim", metavar="PATH", help="also the live graphs ($LOGGOPSIM)")
    parser.add_argument("--json", dest="json_out", help="also write the results as JSON")
    args = parser.parse_args(argv)
    results = evaluate_all(args.quick) + evaluate_live(args.loggopsim)
    columns = [
        c
        for c in dict.fromkeys(a.model for a in results)
        if not args.model or any(m in c for m in args.model)
    ]
    if args.summary:
        lines = summary(results, columns)
    else:
        by = {(a.graph, a.model): a for a in results}
        graphs = dict.fromkeys(a.graph for a in results)
        lines = [(g, [by[(g, c)].cell() if (g, c) in by else "" for c in columns]) for g in graphs]
    print("| graph | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name, cells in lines:
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps([dataclasses.asdict(a) for a in results], indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
