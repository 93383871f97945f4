"""End to end (docs/architecture.md §Performance targets): trace → ExecutionGraph → embedded store → full report.

Every case runs the two processes a user runs (:mod:`benchmarks.memprofile`), each in a fresh
subprocess so its peak RSS is its own: ``ingest`` (read the trace, ``put_run`` into an empty
LadybugDB store) and ``report`` (``load_run``, then what ``llamp report`` computes with the
graph engine: prediction, an 11-point sweep of L over [0, 100 µs], the critical latencies in
that interval within the report's default budget of evaluations (``--max-evaluations auto``,
one to two minutes), the 1/2/5 % L and G tolerances, the critical path). Stage times are medians over
the repeats; peak RSS is the largest over the repeats (exact: the kernel's high-water mark,
reset per stage). Each process first loads numba's compiled kernels from its cache on a tiny
trace (about 1 s, reported on its own row, not counted); interpreter start-up and imports are
not included either.

``python -m benchmarks.bench_e2e`` (the *data path*) instead runs each stage as the
whole process a user runs, under GNU time (peak RSS of that process alone): write the noisy
stencil as GOAL, ``llamp ingest X.goal -o X.npz`` (which lowers and keeps the event graph),
the lowering alone (:func:`llamp.lp.event_graph.build_event_graph` on the mapped graph, a process of
its own), the first ``llamp predict X.npz``, ``llamp sweep X.npz --points 11`` and ``llamp
report X.npz``; with ``--side NAME=PYTHON`` once per checkout (e.g. ``before`` = main's
interpreter, ``after`` = this branch's), interleaved, and it checks that every side predicts
the same ``T``.

Cases: the synthetic stencil trace (``llamp.ingest.synthetic.write_liballprof``: 16 ranks,
2-D halo exchange with Isend/Irecv/Waitall, an Allreduce every iteration, an Alltoall every
10th, 10 % load imbalance, 5 % noise, seed 0) at 10^4, 10^5 and 10^6 vertices (``--full``:
also 10^7, with at most :data:`FULL_REPEAT` repeats), and the shared real traces.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.memprofile import PARTS, profile, write_trace
from benchmarks.timing import row

TRACES = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"
#: The shared real traces (tests/data/traces/PROVENANCE.md) with more than a handful of ops.
REAL = {
    "sweep3d-2x2 (liballprof, 4 ranks)": TRACES / "liballprof" / "sweep3d-2x2",
    "sstmacro-10ranks (OTF2)": TRACES / "otf2" / "sstmacro-10ranks",
    "ti-32ranks (SimGrid TI)": TRACES / "simgrid-ti" / "ti-32ranks",
    "sst-dumpi-4ranks (DUMPI)": TRACES / "dumpi" / "sst-dumpi-4ranks",
}
#: Repeats at 10^7 vertices (a repeat takes about two minutes on the 2-core machine).
FULL_REPEAT = 3
BENCH = "e2e"

_REPORT_STAGES = (
    "predict (incl. lowering)",
    "sweep (11 points)",
    "critical latencies",
    "tolerance 1/2/5%",
    "critical path",
)


def _stage(result: dict[str, Any], part: str, name: str) -> dict[str, Any]:
    return next(s for s in result[part]["stages"] if s["stage"] == name)


def _case_rows(case: str, runs: list[dict[str, Any]], events: int | None) -> list[dict]:
    """Medians over ``runs`` (results of :func:`profile`) as table rows."""
    first = runs[0]
    vertices = first["ingest"]["vertices"]
    events = events or first["ingest"].get("events") or None
    extra = {"vertices": vertices, "edges": first["ingest"]["edges"], "repeats": len(runs)}

    def times(part: str, name: str) -> list[float]:
        return [_stage(r, part, name)["seconds"] for r in runs]

    def med(values: list[float]) -> float:
        return statistics.median(values)

    rows = []
    read = times("ingest", "read trace → graph")
    if events:
        rows.append(
            row(
                BENCH,
                case,
                "ingest",
                events / med(read),
                "events/s",
                read,
                events=events,
                seconds=med(read),
                **extra,
            )
        )
    else:
        rows.append(row(BENCH, case, "ingest", med(read), "s", read, **extra))
    load = times("ingest", "store load (put_run)")
    rows.append(
        row(
            BENCH,
            case,
            "store load (embedded)",
            vertices / med(load),
            "vertices/s",
            load,
            seconds=med(load),
        )
    )
    back = times("report", "store read-back (load_run)")
    rows.append(
        row(
            BENCH,
            case,
            "store read-back",
            vertices / med(back),
            "vertices/s",
            back,
            seconds=med(back),
        )
    )
    for name in _REPORT_STAGES:
        rows.append(row(BENCH, case, name, med(times("report", name)), "s", times("report", name)))
    report = [sum(s["seconds"] for s in r["report"]["stages"] if not s["warmup"]) for r in runs]
    rows.append(row(BENCH, case, "report from the store (all stages)", med(report), "s", report))
    whole = [
        sum(s["seconds"] for part in PARTS for s in r[part]["stages"] if not s["warmup"])
        for r in runs
    ]
    rows.append(row(BENCH, case, "whole pipeline (trace → report)", med(whole), "s", whole))
    rep = first["report"]
    rows.append(
        row(
            BENCH,
            case,
            "  critical latencies found",
            rep["breakpoints"],
            "count",
            budget=rep["budget"],
            complete=rep["complete"],
            unresolved=rep["unresolved"],
        )
    )
    if not rep["complete"]:
        rows.append(
            row(
                BENCH,
                case,
                "  intervals left unresolved (budget spent)",
                rep["unresolved"],
                "count",
                budget=rep["budget"],
            )
        )
    for part in PARTS:
        peaks = [(s["peak_mb"], s["stage"]) for r in runs for s in r[part]["stages"]]
        peak, stage = max(peaks)
        rows.append(row(BENCH, case, f"peak RSS, {part} process", peak, "MB", at_stage=stage))
    warm = [s["seconds"] for r in runs for part in PARTS for s in r[part]["stages"] if s["warmup"]]
    rows.append(
        row(BENCH, case, "  one-off numba warm-up per process (not counted)", med(warm), "s", warm)
    )
    return rows


def _progress(case: str, rows: list[dict]) -> None:
    for r in rows:
        print(
            f"#   {case}: {r['metric']} = {r['value']:.4g} {r['unit']}", file=sys.stderr, flush=True
        )


def run(quick: bool, repeat: int, full: bool = False) -> list[dict[str, Any]]:
    sizes = [10**4, 10**5] if quick else [10**4, 10**5, 10**6]
    if full:
        sizes.append(10**7)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="llamp-e2e-") as tmp:
        work = Path(tmp)
        for size in sizes:
            trace, lines = write_trace(work, size)
            reps = min(repeat, FULL_REPEAT) if size >= 10**7 else repeat
            runs = [profile(trace, work, lines=lines) for _ in range(max(1, reps))]
            case = f"stencil {runs[0]['ingest']['vertices']:.2g} vertices"
            case_rows = _case_rows(case, runs, lines)
            _progress(case, case_rows)
            rows += case_rows
        for case, trace in REAL.items():
            if quick and "sweep3d" not in case:
                continue
            runs = [profile(trace, work) for _ in range(max(1, repeat))]
            case_rows = _case_rows(case, runs, None)
            _progress(case, case_rows)
            rows += case_rows
    return rows


# ---------------------------------------------------------------------- data path

#: Sizes of the data-path table (vertices of the noisy 16-rank stencil).
DATA_PATH_SIZES = (10**5, 10**6, 3 * 10**6, 10**7)
DATA_PATH_STAGES = (
    "synth → GOAL",
    "ingest GOAL → .npz",
    "lowering alone",
    "predict",
    "sweep 11",
    "report",
)
_SYNTH = (
    "import sys; from llamp.ingest.synthetic import stencil_with_vertices; "
    "from llamp.ingest.goal import write_goal; "
    "write_goal(stencil_with_vertices(int(sys.argv[1]), ranks=16, alltoall_every=10), sys.argv[2])"
)
_LOWER = (
    "import sys, warnings; warnings.simplefilter('ignore'); from llamp.ingest import read; "
    "from llamp.lp.event_graph import build_event_graph; from llamp.params import LogGPS; "
    "g = read(sys.argv[1]); p = LogGPS(); "
    "ev = build_event_graph(g, p.S, progress=p.progress, nic=p.nic); print(ev.num_edges)"
)


def whole_process(argv: list[str]) -> tuple[float, float, str, float]:
    """(wall seconds, peak RSS in MB, stdout, CPU seconds) of ``argv`` run to completion under
    GNU time: ``%M`` is the process's own high-water mark (not this one's), ``%U + %S`` its
    user and system time, which a machine shared with other jobs inflates far less than the
    wall time. Fails loudly."""
    time_bin = "/usr/bin/time"
    if not os.access(time_bin, os.X_OK):
        raise SystemExit("the data-path benchmark needs GNU time at /usr/bin/time")
    with tempfile.TemporaryDirectory(prefix="llamp-e2e-run-") as tmp:
        rss = Path(tmp) / "maxrss"
        start = time.perf_counter()
        proc = subprocess.run(
            [time_bin, "-f", "%M %U %S", "-o", str(rss), *argv],
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-3:]
            raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {tail}")
        peak_kib, user, system = rss.read_text().split()[-3:]
        return seconds, int(peak_kib) / 1024.0, proc.stdout, float(user) + float(system)


def data_path(python: Path, vertices: int, work: Path) -> dict[str, Any]:
    """Every stage of :data:`DATA_PATH_STAGES` on ``vertices`` with the checkout whose
    interpreter is ``python``: {stage: (wall seconds, peak MB, CPU seconds)}, plus ``T`` of
    the predict and the graph's vertex count."""
    llamp = str(python.parent / "llamp")
    goal, npz = work / "stencil.goal", work / "stencil.npz"
    network = ["--progress", "async", "--nic", "serial"]
    commands = {
        "synth → GOAL": [str(python), "-c", _SYNTH, str(vertices), str(goal)],
        "ingest GOAL → .npz": [llamp, "ingest", str(goal), "-o", str(npz), "--no-progress"],
        "lowering alone": [str(python), "-c", _LOWER, str(npz)],
        "predict": [llamp, "predict", str(npz), *network, "--json"],
        "sweep 11": [llamp, "sweep", str(npz), "--points", "11", "--from", "0us"]
        + ["--to", "100us", *network, "--json"],
        "report": [llamp, "report", str(npz), *network, "--json"],
    }
    out: dict[str, Any] = {}
    for stage, argv in commands.items():
        seconds, peak, stdout, cpu = whole_process(argv)
        out[stage] = (seconds, peak, cpu)
        if stage == "predict":
            out["T_ns"] = json.loads(stdout)["runtime_ns"]
        print(
            f"#   {python}: {vertices:.0e} {stage}: {seconds:.2f} s ({cpu:.2f} s CPU), "
            f"{peak:.0f} MB",
            file=sys.stderr,
            flush=True,
        )
    info = whole_process([llamp, "info", str(npz), "--json"])[2]
    out["vertices"] = int(json.loads(info)["vertices"])
    return out


def data_path_table(results: dict[int, dict[str, list[dict[str, Any]]]]) -> str:
    """Markdown: per size and stage, wall time, CPU time and peak RSS of every side (medians
    of the times, the largest peak over repeats); then ``T`` of every side."""
    sides = list(dict.fromkeys(side for by_side in results.values() for side in by_side))
    head = ["graph", "stage"]
    for side in sides:
        head += [f"{side}: wall (s)", f"{side}: CPU (s)", f"{side}: peak RSS (MB)"]
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|",
    ]
    for by_side in results.values():
        runs = next(r for r in by_side.values() if r)
        label = f"stencil {runs[0]['vertices']:,} vertices"
        for stage in DATA_PATH_STAGES:
            cells = [label, stage]
            for side in sides:
                reps = [r for r in by_side.get(side, []) if stage in r]
                if not reps:
                    cells += ["—", "—", "—"]
                    continue
                cells.append(f"{statistics.median(r[stage][0] for r in reps):.2f}")
                cpu = [r[stage][2] for r in reps if len(r[stage]) > 2]
                cells.append(f"{statistics.median(cpu):.2f}" if cpu else "—")
                cells.append(f"{max(r[stage][1] for r in reps):.0f}")
            lines.append("| " + " | ".join(cells) + " |")
        Ts = {
            side: sorted({r["T_ns"] for r in by_side.get(side, []) if "T_ns" in r})
            for side in sides
        }
        same = len({t for ts in Ts.values() for t in ts}) == 1
        cells = [label, "T at L = 3 µs (ns)" + ("; equal on every side" if same else "; DIFFERS")]
        for side in sides:
            cells += [", ".join(repr(t) for t in Ts[side]) or "—", "", ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_e2e",
        description="The data path as whole processes: time and peak RSS per stage.",
    )
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DATA_PATH_SIZES),
        help="vertex counts, comma-separated (e.g. 1e5,1e6,3e6,1e7)",
    )
    parser.add_argument(
        "--side",
        action="append",
        metavar="NAME=PYTHON",
        help="a checkout to measure, by its interpreter (repeatable; default: this one)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per stage (median time)")
    parser.add_argument("--work", type=Path, default=None, help="scratch directory")
    parser.add_argument("--json", dest="json_out", help="also write the results here")
    parser.add_argument(
        "--merge",
        action="append",
        type=Path,
        metavar="JSON",
        help="print one table of the results in these --json files (runs nothing)",
    )
    args = parser.parse_args(argv)
    if args.merge:
        merged: dict[int, dict[str, list[dict[str, Any]]]] = {}
        for path in args.merge:
            for size, by_side in json.loads(path.read_text()).items():
                merged.setdefault(int(size), {}).update(by_side)
        print(data_path_table(dict(sorted(merged.items()))))
        return 0
    sides: dict[str, Path] = {}
    for spec in args.side or [f"this={sys.executable}"]:
        name, _, python = spec.partition("=")
        if not python or not Path(python).is_file():
            parser.error(f"--side {spec!r}: give NAME=PATH-TO-PYTHON of an existing checkout")
        sides[name] = Path(python)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    results: dict[int, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory(prefix="llamp-e2e-", dir=args.work) as tmp:
        for size in sizes:
            results[size] = {name: [] for name in sides}
            for k in range(max(1, args.repeat)):
                order = list(sides.items())
                if k % 2:
                    order.reverse()  # interleave: neither side always runs first
                for name, python in order:
                    work = Path(tmp) / name
                    work.mkdir(exist_ok=True)
                    results[size][name].append(data_path(python, size, work))
                    shutil.rmtree(work)
    print(data_path_table(results))
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps({str(k): v for k, v in results.items()}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
