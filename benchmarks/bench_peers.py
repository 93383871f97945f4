"""llamp side by side with LogGOPSim on the same GOAL graph at the same points
(docs/architecture.md §Performance targets).

Needs a LogGOPSim binary: ``python -m benchmarks --only peers --loggopsim PATH`` or the
``LOGGOPSIM`` environment variable (``txt2bin`` is taken from the same directory, or from
``TXT2BIN``). Without one the module prints a note and measures nothing.

Graphs: the noisy 16-rank stencil of :func:`llamp.ingest.synthetic.stencil_with_vertices`
(2-D Isend/Irecv/Waitall halo exchange, a recursive-doubling allreduce every iteration, a
linear alltoall every 10th, 10 % load imbalance, 5 % noise, seed 0) at 10^5 and 10^6 vertices
(``quick``: 10^5 only; ``full``: also 3·10^6 and 10^7), written once with :func:`write_goal` (calc costs
rounded to integral ns, as txt2bin needs; both tools then read that one file); and, when
``schedgen`` is next to LogGOPSim (not in ``quick``), the shipped 4-rank Sweep3D trace that
Schedgen extrapolates ×32 to 128 ranks (~8·10^5 vertices).

Every measurement is a whole process as a user runs it (interpreter start-up and imports
included), wall time, CPU time (user + system, all threads: on a loaded machine the steadier
figure) and peak RSS, all three from GNU time, median of ``repeat`` rounds (RSS: largest); within a round the two tools run back to back, alternating which goes first,
so background load on the shared machine hits both alike:

- ingest: ``llamp ingest X.goal -o X.npz`` vs ``txt2bin -i X.goal -o X.bin``;
- one point: ``llamp predict X.npz`` vs one ``LogGOPSim -f X.bin`` run;
- 11-point sweep of L over [0, 100 µs]: ``llamp sweep X.npz --points 11`` vs 11 LogGOPSim runs
  (their times added, their peak RSS the largest);
- every critical latency in [0, 100 µs], exact: ``llamp critical X.npz --max-evaluations all``
  against the same round's 11 LogGOPSim runs (which give T at 11 points, not
  the breakpoints: the issue's yardstick for "all critical latencies in seconds").

``LLAMP_PEERS_OPTIONS`` (e.g. ``"--progress wait"``) is appended to llamp's predict and sweep;
``LLAMP_PEERS_SIZES`` (e.g. ``"3e6"``) replaces the stencil sizes (empty: no stencil and no
Sweep3D);
``LLAMP_PEERS_PASS_SIZES`` (e.g. ``"1e7"``) adds stencils on which only the schedule pass is
measured against one LogGOPSim run (:func:`pass_alone`: sizes where the whole comparison,
all critical latencies included, would take too long).

When the installed llamp has the schedule order (``LogGPS.order``, :mod:`llamp.lp.schedule`),
each round also measures it with LogGOPSim's rendezvous (``--order schedule --rendezvous
loggopsim``), against the same round's LogGOPSim runs:

- the schedule pass alone: :func:`llamp.lp.schedule.schedule` on the loaded graph, in a fresh
  process set up as a ``llamp`` process is (:func:`llamp.cli.prepare_process`: glibc's
  allocator, numpy without huge pages), after numba's one-time set-up
  (:func:`llamp.lp.jit.prepare`, timed apart): the first call (its kernels loaded from numba's
  cache) and a second call, wall and CPU time (on a loaded machine the CPU time is the steadier
  figure);
- one point: ``llamp predict --order schedule`` (pass + lowering + evaluation) vs one run;
- 11-point sweep, the order fixed at the baseline L = 3 µs (one pass) and, when ``sweep`` has
  ``--reschedule``, re-scheduled at every point (11 passes), vs 11 runs; and the farthest
  T_llamp / T_LogGOPSim − 1 of each over the 11 points.

Parameters: o = 1500 ns, G = 0, S = 65535 B, LogGOPSim's g = 0 and O = 0 (its defaults are
g = 1000, G = 6). Ratios are LogGOPSim / llamp for time (above 1: llamp is faster) and llamp /
LogGOPSim for memory. Agreement: T_llamp / T_LogGOPSim − 1 at L = 3 µs, and its value farthest
from 0 over the 11 points (all 11 T of both tools are in the JSON rows); the models differ in
known ways (docs/model.md §Differences from LogGOPSim), so this is a measurement, not a check.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import row
from llamp.ingest.goal import write_goal
from llamp.ingest.synthetic import stencil_with_vertices
from llamp.params import LogGPS

SWEEP3D = Path(__file__).resolve().parent.parent / "tests/data/traces/liballprof/sweep3d-2x2"
O_NS, G_NS, S_BYTES = 1500, 0, 65535
SWEEP_L_NS = [10_000 * i for i in range(11)]  # 0 … 100 µs, what `llamp sweep --points 11` takes
POINT_L_NS = 3000
_T_RE = re.compile(rb"Maximum finishing time at host \d+: (\d+)")
_LLAMP = [sys.executable, "-m", "llamp"]
_NETWORK = ["--o", f"{O_NS}ns", "--G", f"{G_NS}ns/B", "--S", str(S_BYTES)]
#: Extra options for ``llamp predict``/``sweep`` (e.g. model choices), from the environment.
_LLAMP_OPTIONS = shlex.split(os.environ.get("LLAMP_PEERS_OPTIONS", ""))


#: llamp's model that takes LogGOPSim's orders and rendezvous protocol.
_SCHEDULE = ["--order", "schedule", "--rendezvous", "loggopsim"]
#: Times :func:`llamp.lp.schedule.schedule` on a saved graph: argv[1] the .npz, then L o G S.
_PASS_TIMER = """
import json, sys, time
import llamp.cli
llamp.cli.prepare_process()  # glibc and numpy as in a llamp process
from llamp.graph import ExecutionGraph
from llamp.lp.schedule import schedule
from llamp.params import LogGPS
from llamp.lp.jit import prepare
graph = ExecutionGraph.load(sys.argv[1])
L, o, G, S = (float(a) for a in sys.argv[2:6])
params = LogGPS(L=L, o=o, G=G, S=int(S), g=0.0, nic="serial", order="schedule",
                rendezvous="loggopsim")
def timed(step):
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    return [time.perf_counter() - wall, time.process_time() - cpu]
print(json.dumps([timed(prepare), timed(lambda: schedule(graph, params)),
                  timed(lambda: schedule(graph, params))]))
"""


def has_schedule_order() -> bool:
    """Whether the installed llamp has the schedule order (found by introspection)."""
    import dataclasses
    import importlib.util

    fields = {f.name for f in dataclasses.fields(LogGPS)}
    return {"order", "rendezvous"} <= fields and importlib.util.find_spec(
        "llamp.lp.schedule"
    ) is not None


def _sweep_reschedules() -> bool:
    """Whether ``llamp sweep`` has ``--reschedule`` (re-schedule at every point)."""
    out = subprocess.run([*_LLAMP, "sweep", "--help"], capture_output=True, check=False)
    return b"--reschedule" in out.stdout


def find_tools(loggopsim: str | None = None) -> tuple[Path, Path] | None:
    """``(LogGOPSim, txt2bin)`` from the argument or ``$LOGGOPSIM``; ``None`` if neither is set.

    Raises ``SystemExit`` with a one-line reason when a given path is not an executable.
    """
    given = loggopsim or os.environ.get("LOGGOPSIM")
    if not given:
        return None
    sim = Path(given)
    if not (sim.is_file() and os.access(sim, os.X_OK)):
        raise SystemExit(f"--loggopsim {given}: not an executable file")
    t2b_given = os.environ.get("TXT2BIN")
    t2b = Path(t2b_given) if t2b_given else sim.with_name("txt2bin")
    if not t2b.is_file():
        found = shutil.which("txt2bin")
        if found is None:
            raise SystemExit(
                f"txt2bin not found next to {sim} nor on PATH; set TXT2BIN to its path"
            )
        t2b = Path(found)
    return sim, t2b


def run_process(argv: list[Any], cpu: list[float] | None = None) -> tuple[float, float, bytes]:
    """Run ``argv`` (strings, paths, numbers) to completion: (wall seconds, peak RSS in MB,
    stdout). Fails loudly. ``cpu``: a list to append the process's CPU seconds (user + system,
    all threads) to.

    The peak RSS comes from GNU time (``/usr/bin/time -f %M``), which forks the program from its
    own small process: Linux carries a process's high-water mark across ``fork`` and ``exec``,
    so a program started straight from this (large) Python process would report this process's
    peak instead of its own.
    """
    args = [str(a) if isinstance(a, int) else os.fspath(a) for a in argv]
    with tempfile.TemporaryDirectory(prefix="llamp-peers-run-") as tmp:
        rss_file = Path(tmp) / "maxrss"
        out_file, err_file = Path(tmp) / "out", Path(tmp) / "err"
        with open(out_file, "wb") as out, open(err_file, "wb") as err:
            start = time.perf_counter()
            code = subprocess.call(
                [_gnu_time(), "-f", "%U %S %M", "-o", rss_file, *args], stdout=out, stderr=err
            )
            seconds = time.perf_counter() - start
        if code != 0:
            tail = err_file.read_text(errors="replace").strip().splitlines()[-3:]
            raise RuntimeError(f"{' '.join(args)} exited {code}: {tail}")
        user, system, peak_kib = rss_file.read_text().split()[-3:]
        if cpu is not None:
            cpu.append(float(user) + float(system))
        return seconds, int(peak_kib) / 1024.0, out_file.read_bytes()


def _gnu_time() -> str:
    path = "/usr/bin/time"
    if not os.access(path, os.X_OK):
        raise SystemExit("bench_peers needs GNU time at /usr/bin/time (apt-get install time)")
    return path


def loggopsim_runtime(stdout: bytes) -> int:
    """T (ns) from LogGOPSim's ``Maximum finishing time at host …: T`` line."""
    m = _T_RE.search(stdout)
    if m is None:
        raise RuntimeError(f"no 'Maximum finishing time' in LogGOPSim output: {stdout[-300:]!r}")
    return int(m.group(1))


def _loggopsim_argv(sim: Path, binfile: Path, L: int) -> list[Any]:
    return [sim, "-f", binfile, "-L", L, "-o", O_NS, "-g", 0, "-G", G_NS, "-S", S_BYTES, "-b"]


class _Pair:
    """One llamp-vs-LogGOPSim measurement: per round, (seconds, peak MB) of each side."""

    def __init__(self) -> None:
        self.llamp: list[tuple[float, float]] = []
        self.peer: list[tuple[float, float]] = []
        self.llamp_cpu: list[float] = []  # CPU seconds per round (all 11 runs of a sweep)
        self.peer_cpu: list[float] = []

    def rows(self, case: str, what: str, peer_name: str) -> list[dict[str, Any]]:
        t_l = statistics.median(s for s, _ in self.llamp)
        t_p = statistics.median(s for s, _ in self.peer)
        m_l = max(m for _, m in self.llamp)
        m_p = max(m for _, m in self.peer)
        runs_l = [s for s, _ in self.llamp]
        runs_p = [s for s, _ in self.peer]
        return [
            row("peers", case, f"{what}: llamp", t_l, "s", runs_l),
            row("peers", case, f"{what}: {peer_name}", t_p, "s", runs_p),
            row("peers", case, f"{what}: {peer_name} / llamp time", t_p / t_l, "×"),
            row("peers", case, f"{what}: llamp peak RSS", m_l, "MB"),
            row("peers", case, f"{what}: {peer_name} peak RSS", m_p, "MB"),
            row("peers", case, f"{what}: llamp / {peer_name} memory", m_l / m_p, "×"),
            row("peers", case, f"{what}: llamp CPU", statistics.median(self.llamp_cpu), "s"),
            row("peers", case, f"{what}: {peer_name} CPU", statistics.median(self.peer_cpu), "s"),
        ]


def _log(message: str) -> None:
    print(f"#   peers: {message}", file=sys.stderr, flush=True)


def stencil_goal(vertices: int, workdir: Path) -> tuple[str, Path, float]:
    """The noisy stencil of about ``vertices`` vertices as GOAL: (case, file, total rounding)."""
    graph = stencil_with_vertices(vertices, ranks=16, alltoall_every=10)
    case = f"stencil {graph.num_vertices:.3g} vertices"
    written = write_goal(graph, workdir / "stencil.goal")
    _log(f"{case}: {written.describe()}")
    return case, written.path, written.rounding_total_ns


def sweep3d_goal(schedgen: Path, workdir: Path) -> tuple[str, Path, float]:
    """The shipped 4-rank Sweep3D trace extrapolated ×32 to 128 ranks by Schedgen
    (``schedgen -p trace --traces-extr 32``: 32 copies of the program, collectives over all)."""
    rank0 = SWEEP3D / "pmpi-trace-rank-0.txt"
    goal = workdir / "sweep3d128.goal"
    run_process([schedgen, "-p", "trace", "--traces", rank0, "--traces-extr", 32, "-o", goal])
    return "sweep3d ×32 = 128 ranks (Schedgen)", goal, 0.0


def compare(
    case: str, goal: Path, rounding_ns: float, tools: tuple[Path, Path], repeat: int
) -> list[dict[str, Any]]:
    """All measurements on the GOAL file ``goal`` (removed afterwards, with its .npz/.bin)."""
    sim, t2b = tools
    npz, binfile = goal.with_suffix(".npz"), goal.with_suffix(".bin")
    _log(f"{case}: GOAL {goal.stat().st_size / 1e6:.0f} MB")

    ingest, point, sweep, critical = _Pair(), _Pair(), _Pair(), _Pair()
    scheduled = _Scheduled(reschedule=_sweep_reschedules()) if has_schedule_order() else None
    found = 0
    llamp_T: list[float] = []
    peer_T: list[int] = []
    point_T: tuple[float, int] = (0.0, 0)
    for k in range(max(1, repeat)):
        first = k % 2 == 0

        def llamp_ingest():
            return run_process([*_LLAMP, "ingest", goal, "-o", npz], ingest.llamp_cpu)[:2]

        def peer_ingest():
            return run_process([t2b, "-i", goal, "-o", binfile], ingest.peer_cpu)[:2]

        a, b = _both(first, llamp_ingest, peer_ingest)
        ingest.llamp.append(a)
        ingest.peer.append(b)

        def llamp_point():
            s, m, out = run_process(
                [
                    *_LLAMP,
                    "predict",
                    npz,
                    "--L",
                    f"{POINT_L_NS}ns",
                    *_NETWORK,
                    *_LLAMP_OPTIONS,
                    "--json",
                ],
                point.llamp_cpu,
            )
            return s, m, out

        def peer_point():
            return run_process(_loggopsim_argv(sim, binfile, POINT_L_NS), point.peer_cpu)

        (s_l, m_l, out_l), (s_p, m_p, out_p) = _both(first, llamp_point, peer_point)
        point.llamp.append((s_l, m_l))
        point.peer.append((s_p, m_p))
        point_T = (_json(out_l)["runtime_ns"], loggopsim_runtime(out_p))

        def llamp_sweep():
            return run_process(
                [*_LLAMP, "sweep", npz, "--points", "11", "--from", "0us", "--to", "100us"]
                + [*_NETWORK, *_LLAMP_OPTIONS, "--json"],
                sweep.llamp_cpu,
            )

        def peer_sweep():
            total, peak, ts, cpu = 0.0, 0.0, [], []
            for L in SWEEP_L_NS:
                s, m, out = run_process(_loggopsim_argv(sim, binfile, L), cpu)
                total += s
                peak = max(peak, m)
                ts.append(loggopsim_runtime(out))
            sweep.peer_cpu.append(sum(cpu))
            return total, peak, ts

        (s_l, m_l, out_l), (s_p, m_p, ts) = _both(first, llamp_sweep, peer_sweep)
        sweep.llamp.append((s_l, m_l))
        sweep.peer.append((s_p, m_p))
        points = _json(out_l)["points"]
        if [p["L_ns"] for p in points] != [float(L) for L in SWEEP_L_NS]:
            raise RuntimeError(f"llamp sweep took other points: {[p['L_ns'] for p in points]}")
        llamp_T, peer_T = [p["runtime_ns"] for p in points], ts

        s_c, m_c, out_c = run_process(
            [*_LLAMP, "critical", npz, "--from", "0us", "--to", "100us"]
            + ["--max-evaluations", "all", *_NETWORK, *_LLAMP_OPTIONS, "--json"],
            critical.llamp_cpu,
        )
        result = _json(out_c)
        if not result["complete"]:
            raise RuntimeError("llamp critical --max-evaluations all left intervals open")
        found = len(result["critical_latencies_ns"])
        critical.llamp.append((s_c, m_c))
        critical.peer.append((s_p, m_p))  # this round's 11 LogGOPSim runs
        critical.peer_cpu.append(sweep.peer_cpu[-1])
        if scheduled is not None:
            scheduled.measure(npz, (s_p, m_p), sweep.peer_cpu[-1], point, ts)
        _log(f"{case}: round {k + 1}/{repeat}: sweep llamp {s_l:.2f} s, LogGOPSim {s_p:.2f} s")

    rel = [t / p - 1.0 for t, p in zip(llamp_T, peer_T, strict=True)]
    worst = max(range(len(rel)), key=lambda i: abs(rel[i]))
    rows = ingest.rows(case, "ingest (.goal → .npz or .bin)", "txt2bin")
    rows += point.rows(case, "one point", "LogGOPSim")
    rows += sweep.rows(case, "11-point sweep", "LogGOPSim")
    rows += critical.rows(case, "all critical latencies (llamp) vs 11 points", "LogGOPSim")
    rows.append(row("peers", case, "critical latencies found in [0, 100 µs]", found, "count"))
    rows += [
        row("peers", case, "T at L=3 µs: llamp", point_T[0], "ns"),
        row("peers", case, "T at L=3 µs: LogGOPSim", point_T[1], "ns"),
        row("peers", case, "T at L=3 µs: llamp / LogGOPSim − 1", point_T[0] / point_T[1] - 1, ""),
        row(
            "peers",
            case,
            f"T, 11 points: farthest llamp / LogGOPSim − 1 (at L={SWEEP_L_NS[worst]} ns)",
            rel[worst],
            "",
            llamp_T=llamp_T,
            loggopsim_T=peer_T,
        ),
        row(
            "peers",
            case,
            "GOAL calc-cost rounding, total (bounds ΔT)",
            rounding_ns,
            "ns",
        ),
    ]
    if scheduled is not None:
        rows += scheduled.rows(case)
    for f in (goal, npz, binfile):
        f.unlink(missing_ok=True)
    return rows


class _PassAlone:
    """The schedule pass alone (:data:`_PASS_TIMER`, a fresh process per round) beside one
    LogGOPSim run of the same round."""

    def __init__(self) -> None:
        self.setup: list[float] = []  # numba's one-time set-up in that process
        self.first: list[float] = []  # the pass, first call in a process
        self.warm: list[float] = []  # the pass, second call
        self.one_run: list[float] = []  # one LogGOPSim run, the same round
        self.first_cpu: list[float] = []  # CPU seconds of the same three
        self.warm_cpu: list[float] = []
        self.one_run_cpu: list[float] = []

    @staticmethod
    def time(npz: Path) -> list[list[float]]:
        """:data:`_PASS_TIMER` on ``npz`` in a fresh process: [set-up, first call, second
        call], each [wall, CPU] seconds."""
        _, _, out = run_process(
            [sys.executable, "-c", _PASS_TIMER, npz, POINT_L_NS, O_NS, G_NS, S_BYTES]
        )
        return json.loads(out)

    def add(self, timed: list[list[float]], one_run: float, one_run_cpu: float) -> None:
        """One round: the pass's times (:meth:`time`) and that round's LogGOPSim run."""
        (setup, _), (first, first_cpu), (warm, warm_cpu) = timed
        self.setup.append(setup)
        self.first.append(first)
        self.warm.append(warm)
        self.first_cpu.append(first_cpu)
        self.warm_cpu.append(warm_cpu)
        self.one_run.append(one_run)
        self.one_run_cpu.append(one_run_cpu)

    def rows(self, case: str) -> list[dict[str, Any]]:
        one = statistics.median(self.one_run)
        first, warm = statistics.median(self.first), statistics.median(self.warm)
        what = "schedule pass alone"
        return [
            row("peers", case, "numba set-up before it", statistics.median(self.setup), "s"),
            row("peers", case, f"{what}, first call in a process", first, "s", self.first),
            row("peers", case, f"{what}, second call", warm, "s", self.warm),
            row("peers", case, f"{what}: one LogGOPSim run", one, "s", self.one_run),
            row("peers", case, f"{what}: one LogGOPSim run / first call", one / first, "×"),
            row("peers", case, f"{what}, first call CPU", statistics.median(self.first_cpu), "s"),
            row("peers", case, f"{what}, second call CPU", statistics.median(self.warm_cpu), "s"),
            row(
                "peers",
                case,
                f"{what}: one LogGOPSim run CPU",
                statistics.median(self.one_run_cpu),
                "s",
            ),
        ]


def pass_alone(
    case: str, goal: Path, tools: tuple[Path, Path], repeat: int
) -> list[dict[str, Any]]:
    """Only the schedule pass against one LogGOPSim run on ``goal`` (removed afterwards, with
    its .npz/.bin), the two sides alternating which goes first: for sizes where the whole
    comparison would take too long (``LLAMP_PEERS_PASS_SIZES``, e.g. 10^7)."""
    sim, t2b = tools
    npz, binfile = goal.with_suffix(".npz"), goal.with_suffix(".bin")
    run_process([*_LLAMP, "ingest", goal, "-o", npz])
    run_process([t2b, "-i", goal, "-o", binfile])
    alone, peer_cpu = _PassAlone(), []

    def peer() -> float:
        return run_process(_loggopsim_argv(sim, binfile, POINT_L_NS), peer_cpu)[0]

    for k in range(max(1, repeat)):
        timed, one_run = _both(k % 2 == 0, lambda: _PassAlone.time(npz), peer)
        alone.add(timed, one_run, peer_cpu[-1])
        _log(
            f"{case}: round {k + 1}/{repeat}: pass {alone.first[-1]:.2f} s, LogGOPSim {one_run:.2f} s"
        )
    for f in (goal, npz, binfile):
        f.unlink(missing_ok=True)
    return alone.rows(case)


class _Scheduled:
    """The schedule-order rows of one graph: per round, the pass alone, one point and the
    11-point sweeps, each beside the same round's LogGOPSim runs."""

    def __init__(self, reschedule: bool) -> None:
        self.reschedule = reschedule
        self.alone = _PassAlone()
        self.point, self.fixed, self.resched = _Pair(), _Pair(), _Pair()
        self.T: dict[str, list[float]] = {}
        self.peer_T: list[int] = []

    def measure(
        self,
        npz: Path,
        peer_sweep: tuple[float, float],
        peer_sweep_cpu: float,
        point: _Pair,
        peer_T: list[int],
    ) -> None:
        self.alone.add(_PassAlone.time(npz), point.peer[-1][0], point.peer_cpu[-1])
        s, m, _ = run_process(
            [*_LLAMP, "predict", npz, "--L", f"{POINT_L_NS}ns", *_NETWORK, *_SCHEDULE, "--json"],
            self.point.llamp_cpu,
        )
        self.point.llamp.append((s, m))
        self.point.peer.append(point.peer[-1])
        self.point.peer_cpu.append(point.peer_cpu[-1])
        self.peer_T = peer_T
        sweeps = [("fixed", self.fixed, [])]
        if self.reschedule:
            sweeps.append(("re-scheduled", self.resched, ["--reschedule"]))
        for name, pair, extra in sweeps:
            s, m, out = run_process(
                [*_LLAMP, "sweep", npz, "--points", "11", "--from", "0us", "--to", "100us"]
                + [*_NETWORK, *_SCHEDULE, *extra, "--json"],
                pair.llamp_cpu,
            )
            pair.llamp.append((s, m))
            pair.peer.append(peer_sweep)
            pair.peer_cpu.append(peer_sweep_cpu)
            self.T[name] = [p["runtime_ns"] for p in _json(out)["points"]]

    def rows(self, case: str) -> list[dict[str, Any]]:
        rows = self.alone.rows(case)
        rows += self.point.rows(case, "one point, --order schedule", "LogGOPSim")
        labels = {"fixed": "order fixed at L=3 µs", "re-scheduled": "re-scheduled per point"}
        for name, pair in (("fixed", self.fixed), ("re-scheduled", self.resched)):
            if not pair.llamp:
                continue
            rows += pair.rows(
                case, f"11-point sweep, --order schedule, {labels[name]}", "LogGOPSim"
            )
            rel = [t / p - 1.0 for t, p in zip(self.T[name], self.peer_T, strict=True)]
            worst = max(range(len(rel)), key=lambda i: abs(rel[i]))
            rows.append(
                row(
                    "peers",
                    case,
                    f"T, 11 points, --order schedule, {labels[name]}: farthest "
                    f"llamp / LogGOPSim − 1 (at L={SWEEP_L_NS[worst]} ns)",
                    rel[worst],
                    "",
                    llamp_T=self.T[name],
                    loggopsim_T=self.peer_T,
                )
            )
        return rows


def _json(stdout: bytes) -> dict[str, Any]:
    return json.loads(stdout)


def _both(llamp_first: bool, llamp_side: Any, peer_side: Any) -> tuple[Any, Any]:
    """Run both sides back to back in the given order; return (llamp's, the peer's) result."""
    if llamp_first:
        a = llamp_side()
        return a, peer_side()
    b = peer_side()
    return llamp_side(), b


def run(
    quick: bool, repeat: int, full: bool = False, loggopsim: str | None = None
) -> list[dict[str, Any]]:
    tools = find_tools(loggopsim)
    if tools is None:
        note = "skipped: no LogGOPSim binary (--loggopsim PATH or LOGGOPSIM)"
        _log(note)
        return [row("peers", note, "—", "—", "")]
    sizes = [100_000] if quick else [100_000, 1_000_000] + ([3_000_000, 10_000_000] if full else [])
    if "LLAMP_PEERS_SIZES" in os.environ:  # empty: only the pass sizes below
        sizes = [int(float(n)) for n in os.environ["LLAMP_PEERS_SIZES"].split(",") if n]
    pass_sizes = [
        int(float(n)) for n in os.environ.get("LLAMP_PEERS_PASS_SIZES", "").split(",") if n
    ]
    schedgen = None if quick or not sizes else tools[0].with_name("schedgen")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="llamp-peers-") as tmp:
        for n in sizes:
            rows += compare(*stencil_goal(n, Path(tmp)), tools, repeat)
        for n in pass_sizes if has_schedule_order() else []:
            case, goal, _ = stencil_goal(n, Path(tmp))
            rows += pass_alone(case, goal, tools, repeat)
        if schedgen is not None and schedgen.is_file():
            rows += compare(*sweep3d_goal(schedgen, Path(tmp)), tools, repeat)
        elif schedgen is not None:
            _log(f"no schedgen next to {tools[0]}: the Sweep3D ×128 case is left out")
    return rows
