"""Where the time of one ``llamp`` process goes: ``predict`` from a saved graph and ``ingest``
of a GOAL file, phase by phase, and ``ingest`` beside LogGOPSim's ``txt2bin``.

Graphs: the noisy 16-rank stencil of :func:`llamp.ingest.synthetic.stencil_with_vertices`
(as :mod:`benchmarks.bench_peers`), written as GOAL and ingested to ``.npz`` by ``llamp
ingest``; ``predict`` runs on the ``.npz`` of 10^4 vertices (its fixed cost: what every
analysis command pays before its first pass), ``ingest`` on the GOAL file of 10^6 vertices
(``quick``: 10^5). Parameters: L = 3 µs, o = 1.5 µs, G = 0, S = 65535 B (bench_peers' one
point).

Two measurements per command, each the median of ``repeat`` runs (default 5):

- **whole process** (``python -m llamp …`` as a user runs it, nothing added): wall time, CPU
  time (user + system, all threads) and peak RSS, both from GNU time;
- **phases**: the same command in a child that times, on its main thread, the interpreter's
  start (spawn to the child's first statement), the imports of ``llamp.cli``, and inside
  ``main`` the calls that make up the command (reading the graph file, the stored event graph,
  numba's cached-kernel loads, the kernel pass, GOAL reading, lowering, writing), each counted
  once (time spent in a nested timed call goes to the nested phase); "options, dispatch, other"
  is the rest of ``main``, "exit" the time from ``main``'s return to the process's end. The
  timers are attached when their module is first imported (a meta-path hook), so no module is
  imported earlier than the command itself imports it. Numba's one-time set-up in the
  background thread (:mod:`llamp.lp.jit`) is shown on its own row (its interval overlaps the
  main thread's phases) and is not part of the sum. Waiting for an import that another thread
  is doing (numba's, begun by the set-up thread) counts in the phase that waited.

With a ``txt2bin`` (``--txt2bin PATH``, ``$TXT2BIN``, or next to ``$LOGGOPSIM``), each round
also runs ``txt2bin -i X.goal -o X.bin`` on ingest's GOAL file, whole process, its turn
alternating with llamp's. Each command runs once unmeasured first (bytecode written, files in
the page cache); ``PYTHONDONTWRITEBYTECODE`` is dropped from the children's environment, as an
install has its bytecode. The machine's load average (1 minute, ``/proc/loadavg``) is shown
before and after each command's runs: timings on a shared machine are only comparable at
similar load (the CPU time is the steadier figure).

``python -m benchmarks.bench_startup [--quick] [--repeat N] [--predict-vertices N]
[--ingest-vertices N] [--txt2bin PATH] [--python PATH] [--before PATH]``:
``--python`` runs llamp with another interpreter; ``--before`` adds a column for a second one
(e.g. the main checkout's venv), its runs interleaved with the first's.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import importlib.abc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

POINT = ["--L", "3us", "--o", "1500ns", "--G", "0ns/B", "--S", "65535"]

#: Phase of each timed call, in the order the table shows them.
PHASES = {
    "interpreter": "interpreter start-up",
    "imports": "imports (llamp.cli)",
    "numpy_import": "import numpy (with its BLAS threads)",
    "command_import": "import the command (llamp.cli.base, the subcommand's module)",
    "numba_import": "import numba (on the main thread)",
    "other": "options, dispatch, other",
    "read": "llamp.ingest.read (GOAL: the tokenizer; .npz: see next)",
    "graph_load": "graph file: map + check columns (seal digest or CRC)",
    "events": "event graph: stored (map + seal + checks) or lowered",
    "kernel_load": "numba: first call of each kernel (waiting for the set-up, cache load)",
    "point": "kernel pass (T, λ)",
    "save": "write .npz (main thread: waiting for the column writer, appending lowerings)",
    "exit": "exit (output, thread join, teardown)",
}
BACKGROUND = "numba set-up (background thread; overlaps the phases above)"


# ------------------------------------------------------------------------------- child side
class _Timers:
    """Intervals of timed calls on the main thread, and of numba's set-up on any thread."""

    def __init__(self) -> None:
        self.main = threading.main_thread()
        self.stack: list[list[Any]] = []  # [phase, start, nested seconds]
        self.exclusive: dict[str, float] = {}
        self.background: list[float] = []

    def wrap(self, phase: str, func):
        @functools.wraps(func)
        def timed(*args, **kwargs):
            if threading.current_thread() is not self.main:
                return func(*args, **kwargs)
            frame = [phase, time.perf_counter(), 0.0]
            self.stack.append(frame)
            try:
                return func(*args, **kwargs)
            finally:
                self.stack.pop()
                spent = time.perf_counter() - frame[1]
                self.exclusive[phase] = self.exclusive.get(phase, 0.0) + spent - frame[2]
                if self.stack:
                    self.stack[-1][2] += spent

        return timed

    def wrap_background(self, func):
        @functools.wraps(func)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                self.background.append(time.perf_counter() - start)

        return timed


def _patch_class(module, cls: str, attr: str, wrapper) -> None:
    owner = getattr(module, cls)
    raw = next(k.__dict__[attr] for k in owner.__mro__ if attr in k.__dict__)
    if isinstance(raw, classmethod):
        setattr(owner, attr, classmethod(wrapper(raw.__func__)))
    else:
        setattr(owner, attr, wrapper(raw))


def _patches(timers: _Timers) -> dict[str, Any]:
    def graph(m):
        _patch_class(m, "ExecutionGraph", "load", lambda f: timers.wrap("graph_load", f))
        _patch_class(m, "ExecutionGraph", "save", lambda f: timers.wrap("save", f))

    def engine(m):
        _patch_class(m, "GraphEngine", "events", lambda f: timers.wrap("events", f))
        _patch_class(m, "GraphEngine", "point", lambda f: timers.wrap("point", f))
        _patch_class(m, "GraphEngine", "points", lambda f: timers.wrap("point", f))

    def dispatcher(m):
        _patch_class(m, "Dispatcher", "_compile_for_args", lambda f: timers.wrap("kernel_load", f))

    def ingest(m):
        m.read = timers.wrap("read", m.read)

    def lowered(m):
        # The graph's columns are written by a second thread while this one lowers: the main
        # thread's share of the save is save_graph less the lowering nested in it.
        m.save_graph = timers.wrap("save", m.save_graph)

    def jit(m):
        m.prepare = timers.wrap_background(m.prepare)

    def root(m):
        if hasattr(m, "_Root") and "get_command" in m._Root.__dict__:
            _patch_class(m, "_Root", "get_command", lambda f: timers.wrap("command_import", f))

    return {
        "llamp.cli.base": root,
        "llamp.graph": graph,
        "llamp.lp.engine": engine,
        "numba.core.dispatcher": dispatcher,
        "llamp.ingest": ingest,
        "llamp.lp.lowered": lowered,
        "llamp.lp.jit": jit,
    }


#: Imports timed as a phase of their own (with everything they import), on the main thread.
TIMED_IMPORTS = {
    "numba": "numba_import",
    "numpy": "numpy_import",
    "llamp.cli.base": "command_import",
}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Applies ``patches[name]`` right after module ``name`` is executed by its own loader, and
    times the imports of :data:`TIMED_IMPORTS` on the main thread."""

    def __init__(self, patches: dict[str, Any], timers: _Timers):
        self.patches = patches
        self.timers = timers

    def find_spec(self, name, path, target=None):
        patch = self.patches.get(name)
        if patch is None and name in TIMED_IMPORTS:
            patch = lambda module: None  # noqa: E731 - timed below, nothing to attach
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        execute = spec.loader.exec_module
        if name in TIMED_IMPORTS:
            execute = self.timers.wrap(TIMED_IMPORTS[name], execute)

        def exec_module(module):
            execute(module)
            patch(module)

        spec.loader.exec_module = exec_module
        return spec


def child(argv: list[str], out: Path) -> None:
    """Run ``llamp argv`` as its entry point does (``main()`` on ``sys.argv``, so with its fast
    exit) with the phase timers; an ``atexit`` handler writes them to ``out`` (JSON)."""
    entered = time.time()
    t0 = time.perf_counter()
    timers = _Timers()
    sys.meta_path.insert(0, _AfterImport(_patches(timers), timers))
    import llamp.cli

    imported = time.perf_counter()
    during_imports = sum(timers.exclusive.values())

    def write() -> None:
        finished = time.perf_counter()
        timed = sum(timers.exclusive.values())
        result = {
            "entered_epoch": entered,
            "left_epoch": time.time(),
            "imports": imported - t0 - during_imports,
            "other": finished - imported - (timed - during_imports),
            **timers.exclusive,
            "background": sum(timers.background),
        }
        out.write_text(json.dumps(result))

    atexit.register(write)
    sys.argv = ["llamp", *argv]
    llamp.cli.main()


# ------------------------------------------------------------------------------ parent side
def _spawn(python: str, args: list[str]) -> tuple[float, float, float, float]:
    """Run ``args`` to the end under GNU time: (wall s, CPU s of all its threads, peak RSS MB,
    start epoch). GNU time forks the program from its own small process: Linux carries a
    process's high-water mark across ``fork`` and ``exec``, so a program started straight from
    this (large) process would report this process's peak (as in :mod:`benchmarks.bench_peers`)."""
    with tempfile.TemporaryDirectory(prefix="llamp-startup-run-") as tmp:
        usage = Path(tmp) / "usage"
        started_epoch = time.time()
        start = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%U %S %M", "-o", str(usage), python, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
            cwd=tmp,  # not a checkout: ``-m llamp`` imports the interpreter's own llamp
            env=_child_env(),
        )
        wall = time.perf_counter() - start
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip()[-300:]
            raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {tail}")
        user, system, peak_kib = usage.read_text().split()[-3:]
    return wall, float(user) + float(system), int(peak_kib) / 1024.0, started_epoch


def _child_env() -> dict[str, str]:
    """This process's environment without ``PYTHONDONTWRITEBYTECODE``, so that llamp's modules
    run from their cached bytecode as in an install (with it set, every process compiled every
    llamp module from source: 0.05–0.1 s more per process here)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def whole_process(python: str, argv: list[str], repeat: int) -> dict[str, Any]:
    """``llamp argv`` as a user runs it: median wall and CPU, largest peak RSS."""
    return _whole([_spawn(python, ["-m", "llamp", *argv]) for _ in range(max(1, repeat))])


def _whole(runs: list[tuple[float, float, float, float]]) -> dict[str, Any]:
    return {
        "wall": statistics.median(r[0] for r in runs),
        "cpu": statistics.median(r[1] for r in runs),
        "rss": max(r[2] for r in runs),
        "runs": [r[0] for r in runs],
    }


def phases(python: str, argv: list[str], repeat: int) -> dict[str, float]:
    """Median seconds per phase of ``llamp argv`` (keys of :data:`PHASES`, ``background``)."""
    return _median_phases([_phase_run(python, argv) for _ in range(max(1, repeat))])


def _median_phases(rounds: list[dict[str, float]]) -> dict[str, float]:
    keys = [*PHASES, "background", "total"]
    return {k: statistics.median(r.get(k, 0.0) for r in rounds) for k in keys}


def _phase_run(python: str, argv: list[str]) -> dict[str, float]:
    """One instrumented run of ``llamp argv`` (:func:`child`): seconds per phase."""
    with tempfile.TemporaryDirectory(prefix="llamp-startup-") as tmp:
        out = Path(tmp) / "phases.json"
        # This file by path: the child's llamp is the interpreter's own (``--python``).
        code = (
            "import importlib.util as u; from pathlib import Path; "
            f"s = u.spec_from_file_location('bench_startup_child', {__file__!r}); "
            "m = u.module_from_spec(s); s.loader.exec_module(m); "
            f"m.child({argv!r}, Path({str(out)!r}))"
        )
        wall, _, _, started = _spawn(python, ["-c", code])
        got = json.loads(out.read_text())
    got["interpreter"] = got["entered_epoch"] - started
    got["exit"] = started + wall - got["left_epoch"]
    got["total"] = wall
    return got


def compare(
    interpreters: dict[str, str],
    argv: list[str],
    repeat: int,
    peer: list[str] | None = None,
) -> tuple[dict[str, tuple[dict[str, float], dict[str, Any]]], dict[str, Any] | None]:
    """Phases and whole-process numbers of ``llamp argv`` under each interpreter (label →
    path), interleaved: each round runs every interpreter once, in turn, the first one
    alternating, so background load on the shared machine hits all alike; ``peer`` (a
    program and its arguments) runs once per round too, its turn alternating the same way."""
    timed: dict[str, list] = {k: [] for k in interpreters}
    whole: dict[str, list] = {k: [] for k in interpreters}
    peer_runs: list = []
    labels = list(interpreters) + (["peer"] if peer else [])
    for path in interpreters.values():  # unmeasured: bytecode written, files in the page cache
        _spawn(path, ["-m", "llamp", *argv])
    for k in range(max(1, repeat)):
        for label in labels if k % 2 == 0 else labels[::-1]:
            if label == "peer":
                peer_runs.append(_spawn(peer[0], peer[1:]))
                continue
            timed[label].append(_phase_run(interpreters[label], argv))
            whole[label].append(_spawn(interpreters[label], ["-m", "llamp", *argv]))
    results = {k: (_median_phases(timed[k]), _whole(whole[k])) for k in interpreters}
    return results, (_whole(peer_runs) if peer_runs else None)


def load_average() -> float:
    """The machine's 1-minute load average (``/proc/loadavg``; NaN where there is none)."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def _rows(case: str, command: str, timed: dict[str, float], whole: dict[str, float]) -> list:
    from benchmarks.timing import row

    rows = []
    for key, label in PHASES.items():
        if timed.get(key, 0.0) > 0.0005:
            rows.append(row("startup", case, f"{command}: {label}", timed[key], "s"))
    rows.append(row("startup", case, f"{command}: {BACKGROUND}", timed["background"], "s"))
    rows.append(row("startup", case, f"{command}: phases, total wall", timed["total"], "s"))
    rows.append(
        row("startup", case, f"{command}: whole process wall", whole["wall"], "s", whole["runs"])
    )
    rows.append(row("startup", case, f"{command}: whole process CPU", whole["cpu"], "s"))
    rows.append(row("startup", case, f"{command}: whole process peak RSS", whole["rss"], "MB"))
    return rows


def _peer_rows(case: str, name: str, peer: dict[str, Any], llamp: dict[str, Any]) -> list:
    from benchmarks.timing import row

    return [
        row("startup", case, f"{name}: whole process wall", peer["wall"], "s", peer["runs"]),
        row("startup", case, f"{name}: whole process CPU", peer["cpu"], "s"),
        row("startup", case, f"{name}: whole process peak RSS", peer["rss"], "MB"),
        row("startup", case, f"{name}: llamp / {name}, wall", llamp["wall"] / peer["wall"], "×"),
        row("startup", case, f"{name}: llamp / {name}, CPU", llamp["cpu"] / peer["cpu"], "×"),
    ]


def find_txt2bin(given: str | None = None) -> str | None:
    """LogGOPSim's ``txt2bin``: the argument, ``$TXT2BIN``, or next to ``$LOGGOPSIM``."""
    candidates = [given, os.environ.get("TXT2BIN")]
    if os.environ.get("LOGGOPSIM"):
        candidates.append(str(Path(os.environ["LOGGOPSIM"]).with_name("txt2bin")))
    for path in candidates:
        if path and Path(path).is_file() and os.access(path, os.X_OK):
            return path
    if given:
        raise SystemExit(f"--txt2bin {given}: not an executable file")
    return None


def _make_graphs(workdir: Path, vertices: int, python: str) -> tuple[str, Path, Path]:
    from llamp.ingest.goal import write_goal
    from llamp.ingest.synthetic import stencil_with_vertices

    graph = stencil_with_vertices(vertices, ranks=16, alltoall_every=10)
    case = f"stencil {graph.num_vertices:.3g} vertices"
    goal = write_goal(graph, workdir / f"stencil{vertices}.goal").path
    npz = goal.with_suffix(".npz")
    _spawn(python, ["-m", "llamp", "ingest", str(goal), "-o", str(npz), "--no-progress"])
    return case, goal, npz


def run(
    quick: bool = False,
    repeat: int = 5,
    python: str | None = None,
    before: str | None = None,
    predict_vertices: int | None = None,
    ingest_vertices: int | None = None,
    txt2bin: str | None = None,
) -> list[dict[str, Any]]:
    """The rows of both commands under ``python`` (default: this interpreter) and, when
    ``before`` names another interpreter (another checkout's venv), under it too, interleaved;
    the metric then says which (``[before]``/``[after]``). ``txt2bin``: beside ``ingest``."""
    from benchmarks.timing import row

    interpreters = {"after" if before else "": python or sys.executable}
    if before:
        interpreters = {"before": before, **interpreters}
    maker = interpreters["after" if before else ""]
    predict_size = predict_vertices or 10_000
    ingest_size = ingest_vertices or (100_000 if quick else 1_000_000)
    rows = []
    with tempfile.TemporaryDirectory(prefix="llamp-bench-startup-") as tmp:
        work = Path(tmp)
        graphs = {n: _make_graphs(work, n, maker) for n in {predict_size, ingest_size}}
        case, _, npz = graphs[predict_size]
        commands = [("predict", case, ["predict", str(npz), *POINT], None)]
        case, goal, _ = graphs[ingest_size]
        out = work / "ingested.npz"
        peer = [txt2bin, "-i", str(goal), "-o", str(work / "txt2bin.bin")] if txt2bin else None
        argv = ["ingest", str(goal), "-o", str(out), "--no-progress"]
        commands.append(("ingest", case, argv, peer))
        for command, case, argv, peer in commands:
            load_before = load_average()
            results, peer_whole = compare(interpreters, argv, repeat, peer)
            rows.append(row("startup", case, f"{command}: load average before", load_before, ""))
            rows.append(row("startup", case, f"{command}: load average after", load_average(), ""))
            for label, (timed, whole) in results.items():
                name = f"{command} [{label}]" if label else command
                rows += _rows(case, name, timed, whole)
            if peer_whole is not None:
                rows += _peer_rows(case, "txt2bin", peer_whole, list(results.values())[-1][1])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_startup", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10^5 vertices only")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--python", help="interpreter to run llamp with (default: this one)")
    parser.add_argument(
        "--before",
        metavar="PYTHON",
        help="also run llamp with this interpreter (another checkout's venv), interleaved",
    )
    parser.add_argument(
        "--predict-vertices",
        type=int,
        metavar="N",
        help="size of predict's graph (default 10^4: the fixed cost of a command)",
    )
    parser.add_argument(
        "--ingest-vertices",
        type=int,
        metavar="N",
        help="size of ingest's GOAL file (default 10^6, quick 10^5)",
    )
    parser.add_argument(
        "--txt2bin",
        metavar="PATH",
        help="LogGOPSim's txt2bin, run beside ingest (default $TXT2BIN, or next to $LOGGOPSIM)",
    )
    args = parser.parse_args(argv)
    rows = run(
        quick=args.quick,
        repeat=args.repeat,
        python=args.python,
        before=args.before,
        predict_vertices=args.predict_vertices,
        ingest_vertices=args.ingest_vertices,
        txt2bin=find_txt2bin(args.txt2bin),
    )
    print(_table(rows))
    return 0


def _table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table: one line per case, command and phase; one column per interpreter."""
    columns: list[str] = []
    cells: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in rows:
        head, what = r["metric"].split(": ", 1)
        command, _, label = head.partition(" [")
        label = label.rstrip("]") or "value"
        if label not in columns:
            columns.append(label)
        formats = {"MB": "{:.0f} MB", "s": "{:.3f} s", "×": "{:.2f}×", "": "{:.2f}"}
        value = formats[r["unit"]].format(r["value"])
        cells.setdefault((r["case"], command, what), {})[label] = value
    lines = ["| case | command | phase | " + " | ".join(columns) + " |"]
    lines.append("|" + "---|" * (3 + len(columns)))
    for (case, command, what), values in cells.items():
        got = " | ".join(values.get(c, "") for c in columns)
        lines.append(f"| {case} | {command} | {what} | {got} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
