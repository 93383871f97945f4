"""Summary tables of a benchmark run: ``python -m benchmarks.summary RESULTS.json``.

Turns the rows written by ``python -m benchmarks --json FILE`` into the Markdown tables of
``RESULTS.md``: one row per graph for the end-to-end pipeline, the graph engine and the LP,
and the store operations.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        if unit == "MB":
            return f"{value:,.0f}"
        text = f"{value:.3g}"
        if "e" in text:  # 6.61e+04 → 6.61e4
            mantissa, exponent = text.split("e")
            text = f"{mantissa}e{int(exponent)}"
        return text
    return str(value)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _cases(rows: list[dict[str, Any]], bench: str) -> dict[str, dict[str, dict[str, Any]]]:
    cases: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        if r["benchmark"] == bench:
            cases.setdefault(r["case"], {})[r["metric"].strip()] = r
    return cases


def e2e_table(rows: list[dict[str, Any]]) -> str:
    columns = [
        ("ingest", "ingest (events/s)"),
        ("store load (embedded)", "store load (vertices/s)"),
        ("store read-back", "read-back (vertices/s)"),
        ("predict (incl. lowering)", "predict incl. lowering (s)"),
        ("sweep (11 points)", "sweep 11 pts (s)"),
        ("critical latencies", "critical latencies (s)"),
        ("tolerance 1/2/5%", "tolerance 1/2/5 % (s)"),
        ("critical path", "path (s)"),
        ("report from the store (all stages)", "report (s)"),
        ("whole pipeline (trace → report)", "trace → report (s)"),
        ("peak RSS, ingest process", "peak RSS ingest (MB)"),
        ("peak RSS, report process", "peak RSS report (MB)"),
    ]
    out = []
    for case, m in _cases(rows, "e2e").items():
        found = m.get("critical latencies found", {})
        crit = _fmt(found.get("value"))
        if found.get("complete") is False:
            crit += f" (budget {found.get('budget')}: {found.get('unresolved')} intervals open)"
        cells = [case, _fmt(m["ingest"].get("vertices")), crit]
        for metric, _ in columns:
            r = m.get(metric)
            cells.append("—" if r is None else _fmt(r["value"], r["unit"]))
        cells.append(str(m["ingest"].get("repeats", "")))
        out.append(cells)
    headers = ["graph", "vertices", "critical latencies found"] + [h for _, h in columns]
    return _table(headers + ["runs"], out)


def engine_table(rows: list[dict[str, Any]]) -> str:
    out = []
    for case, m in _cases(rows, "engine").items():
        if "evaluate T" in m:
            out.append(
                [
                    case,
                    _fmt(m["lowering to events"]["value"]),
                    _fmt(m["evaluate T"]["value"]),
                    _fmt(m["evaluate T per 1e6 vertices"]["value"]),
                    _fmt(m["T with left+right λ_L"]["value"]),
                    _fmt(m["full evaluation (λ_L,G,o, slack)"]["value"]),
                    _fmt(m["tolerance 1/2/5% of L and G"]["value"]),
                ]
            )
    headers = [
        "graph",
        "lowering (s)",
        "evaluate T (ms)",
        "T per 10^6 vertices (ms)",
        "T, λ_L± (ms)",
        "full evaluation (ms)",
        "tolerance 1/2/5 % (s)",
    ]
    text = _table(headers, out)
    crit = []
    for case, m in _cases(rows, "engine").items():
        if "critical latencies in [0, 100 µs]" in m:
            crit.append(
                [
                    case,
                    _fmt(m["critical latencies in [0, 100 µs]"]["value"]),
                    _fmt(m["breakpoints found"]["value"]),
                    _fmt(m["sweeps (2k+1)"]["value"]),
                ]
            )
    return (
        text
        + "\n\n"
        + _table(["graph", "all critical latencies (s)", "found", "evaluations"], crit)
    )


def lp_table(rows: list[dict[str, Any]]) -> str:
    metrics = [
        "LP arrays (Algorithm 1 sweep)",
        "build highs",
        "build glop",
        "solve glop",
        "re-solve glop (new L)",
        "solve highs",
        "re-solve highs (new L)",
        "solve glop-cold",
        "tolerance glop (1% L)",
        "tolerance highs (1% L)",
        "graph engine point (reference)",
    ]
    cases = _cases(rows, "lp")
    out = []
    for case, m in cases.items():
        out.append([case] + [_fmt(m[k]["value"]) if k in m else "—" for k in metrics])
    return _table(["graph"] + [f"{k} (s)" for k in metrics], out)


def store_table(rows: list[dict[str, Any]]) -> str:
    out = []
    for case, m in _cases(rows, "store").items():
        for metric, r in m.items():
            if case == "process":
                continue
            extra = f" ({r['seconds']:.3g} s)" if "seconds" in r else ""
            out.append([case, metric, _fmt(r["value"], r["unit"]) + extra, r["unit"]])
    return _table(["graph", "operation", "value", "unit"], out)


def peers_table(rows: list[dict[str, Any]]) -> str:
    """``bench_peers``: llamp vs LogGOPSim per graph (times in s, memory in MB)."""
    out = []
    for case, m in _cases(rows, "peers").items():
        if case.startswith("skipped"):
            out.append([case] + ["—"] * 10)
            continue
        worst = next(r for k, r in m.items() if k.startswith("T, 11 points"))

        def pair(what: str, peer: str, m: dict[str, dict[str, Any]] = m) -> list[str]:
            return [
                f"{_fmt(m[f'{what}: llamp']['value'])} / {_fmt(m[f'{what}: {peer}']['value'])}",
                _fmt(m[f"{what}: {peer} / llamp time"]["value"]),
            ]

        out.append(
            [case]
            + pair("ingest (.goal → .npz or .bin)", "txt2bin")
            + pair("one point", "LogGOPSim")
            + pair("11-point sweep", "LogGOPSim")
            + [
                f"{_fmt(m['11-point sweep: llamp peak RSS']['value'], 'MB')} / "
                f"{_fmt(m['11-point sweep: LogGOPSim peak RSS']['value'], 'MB')}",
                _fmt(m["11-point sweep: llamp / LogGOPSim memory"]["value"]),
                f"{m['T at L=3 µs: llamp / LogGOPSim − 1']['value']:+.2%}",
                f"{worst['value']:+.2%} {worst['metric'].split('(')[-1].rstrip(')')}",
            ]
        )
    headers = [
        "graph",
        "ingest llamp / txt2bin (s)",
        "txt2bin / llamp",
        "one point llamp / LogGOPSim (s)",
        "LogGOPSim / llamp",
        "11-pt sweep llamp / LogGOPSim (s)",
        "LogGOPSim / llamp",
        "peak RSS sweep llamp / LogGOPSim (MB)",
        "llamp / LogGOPSim",
        "T at 3 µs: llamp / LogGOPSim − 1",
        "farthest from LogGOPSim over the sweep",
    ]
    return _table(headers, out)


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        print("usage: python -m benchmarks.summary RESULTS.json", file=sys.stderr)
        return 2
    rows = json.loads(Path(args[0]).read_text())
    benches = {r["benchmark"] for r in rows}
    for title, bench, table in (
        ("End to end", "e2e", e2e_table),
        ("Graph engine", "engine", engine_table),
        ("LP engine", "lp", lp_table),
        ("Store", "store", store_table),
        ("Side by side with LogGOPSim", "peers", peers_table),
    ):
        if bench in benches:
            print(f"### {title}\n\n" + table(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
