"""The 10^8 pipeline: synth → ingest → report, each the whole process a user
runs, with its wall time, CPU time and peak memory.

Stages (a fresh ``llamp`` process each, ``sys.executable -m llamp``):

- ``llamp synth X.goal --vertices N`` — the noisy 16-rank stencil written as GOAL, streamed;
- ``llamp ingest X.goal -o X.npz`` — read, validate, save the graph and its lowered event graph
  (at 10^7 vertices and more through the low-memory path, :func:`llamp.lp.lowered.save_graph`);
- ``llamp report X.npz --json`` — prediction, critical latencies in [0, 100 µs] under the
  default budget, the 11-point sweep, the 1/2/5 % tolerances of L and G, the critical path;
  its own per-stage seconds are printed below the table;
- with ``--store DIR``, the embedded store: ``llamp --store DIR ingest X.goal --name X`` (read,
  write the run's graph file, load the rows in batches) and ``llamp --store DIR report X``
  (maps that graph file; the database is not read back). ``LLAMP_HOME`` is ``DIR/home``, so the
  graph file lands beside the store; the sizes of both on disk are printed.

Measured like GNU ``time -v``: wall clock around the process, CPU (user + system) and peak
RSS (``ru_maxrss``) from ``wait4``; peak virtual size (``VmPeak``) polled from ``/proc``. The
load average at the start of each stage is printed beside it (the machine is shared).
``--address-limit GB`` caps each process's address space (``RLIMIT_AS``, as ``ulimit -v``),
``--rss-limit GB`` kills a process whose resident set passes it (a watchdog polled every 0.2 s:
at 10^8 the graph file and the lowering's scratch columns are memory-mapped, so the address
space is far larger than the memory used, and ``ulimit -v`` alone would stop a healthy run),
and ``--lock FILE`` holds ``flock FILE`` around each stage, so big runs never overlap.

    python -m benchmarks.bench_scale                      # 10^6 vertices in a temporary dir
    python -m benchmarks.bench_scale --vertices 1e8 --dir /work/scale --prefix s8 \\
        --address-limit 48 --rss-limit 16 --lock /work/scale/big.lock --skip synth
    python -m benchmarks.bench_scale --vertices 1e8 --dir /work/scale --prefix s8 \
        --store /work/scale/store8 --skip synth,ingest,report --rss-limit 16 --json
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import row

BENCH = "scale"
STAGES = ("synth", "ingest", "report", "store", "store-report")


def _poll(pid: int, out: dict[str, int], stop: threading.Event, rss_limit_kb: int | None) -> None:
    """Keep the last ``VmPeak`` (kB) of ``pid`` (a high-water mark: the last read is the peak);
    kill the process when its RSS passes ``rss_limit_kb`` (the watchdog)."""
    path = f"/proc/{pid}/status"
    while not stop.wait(0.2):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("VmPeak:"):
                        out["vm_peak_kb"] = int(line.split()[1])
                    elif line.startswith("VmRSS:") and rss_limit_kb is not None:
                        if int(line.split()[1]) > rss_limit_kb:
                            out["killed"] = 1
                            os.kill(pid, signal.SIGKILL)
        except OSError:
            return


def measure(
    command: list[str],
    *,
    address_limit_gb: float | None = None,
    rss_limit_gb: float | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``command``; its wall, CPU, peak RSS and peak virtual size, exit status, stdout.
    ``address_limit_gb``: ``RLIMIT_AS``; ``rss_limit_gb``: killed when its RSS passes it;
    ``env``: added to the environment."""
    limit = None if address_limit_gb is None else int(address_limit_gb * (1 << 30))

    def limits() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.nice(5)

    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=limits,
        text=True,
        env={**os.environ, **(env or {})},
    )
    peak: dict[str, int] = {}
    stop = threading.Event()
    rss_kb = None if rss_limit_gb is None else int(rss_limit_gb * (1 << 20))
    poller = threading.Thread(target=_poll, args=(proc.pid, peak, stop, rss_kb))
    poller.start()
    out_chunks: list[str] = []
    err_chunks: list[str] = []
    readers = [
        threading.Thread(target=lambda: out_chunks.append(proc.stdout.read())),
        threading.Thread(target=lambda: err_chunks.append(proc.stderr.read())),
    ]
    for t in readers:
        t.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    stop.set()
    poller.join()
    for t in readers:
        t.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_gb": usage.ru_maxrss / (1 << 20),
        "peak_virtual_gb": peak.get("vm_peak_kb", 0) / (1 << 20),
        "load": load,
        "exit": proc.returncode,
        "killed": bool(peak.get("killed")),
        "stdout": "".join(out_chunks),
        "stderr": "".join(err_chunks),
    }


class _Lock:
    """``flock`` on a file around one stage (or nothing)."""

    def __init__(self, path: str | None):
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> None:
        if self.path:
            self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def pipeline(
    vertices: int,
    folder: Path,
    *,
    prefix: str = "scale",
    skip: tuple[str, ...] = (),
    address_limit_gb: float | None = None,
    rss_limit_gb: float | None = None,
    lock: str | None = None,
    store: Path | None = None,
) -> dict[str, dict[str, Any]]:
    """Run the stages on ``folder/prefix.goal`` and ``.npz`` (and into the embedded store
    ``store``); the measurements per stage."""
    llamp = [sys.executable, "-m", "llamp"]
    goal, npz = folder / f"{prefix}.goal", folder / f"{prefix}.npz"
    commands = {
        "synth": [*llamp, "synth", str(goal), "--vertices", str(vertices), "--progress"],
        "ingest": [*llamp, "ingest", str(goal), "-o", str(npz), "--progress"],
        "report": [*llamp, "report", str(npz), "--json"],
    }
    env: dict[str, str] = {}
    if store is not None:
        stored = [*llamp, "--store", str(store)]
        commands["store"] = [*stored, "ingest", str(goal), "--name", prefix, "--progress"]
        commands["store-report"] = [*stored, "report", prefix, "--json"]
        env["LLAMP_HOME"] = str(store / "home")
    results: dict[str, dict[str, Any]] = {}
    for stage in STAGES:
        if stage in skip or stage not in commands:
            continue
        with _Lock(lock):
            result = measure(
                commands[stage],
                address_limit_gb=address_limit_gb,
                rss_limit_gb=rss_limit_gb,
                env=env if stage.startswith("store") else None,
            )
        result["command"] = "llamp " + " ".join(
            Path(a).name if a.startswith("/") else a for a in commands[stage][3:]
        )
        if stage == "store" and store is not None:
            result["disk_gb"] = {
                "database": _du(store) - _du(store / "home"),
                "graph file": _du(store / "home"),
            }
        results[stage] = result
        if result["exit"] != 0:
            last = result["stderr"].strip().replace("\r", "\n").splitlines()[-1:]
            why = "killed by the RSS watchdog" if result["killed"] else " ".join(last)
            print(f"{stage} failed (exit {result['exit']}): {why}", file=sys.stderr)
            break
    return results


def _du(path: Path) -> float:
    """Bytes on disk under ``path``, in GiB."""
    if not path.exists():
        return 0.0
    files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
    return sum(f.stat().st_blocks * 512 for f in files) / (1 << 30)


def _report_seconds(result: dict[str, Any]) -> dict[str, float]:
    try:
        return json.loads(result["stdout"])["seconds"]
    except (KeyError, ValueError, TypeError):
        return {}


def _report_summary(result: dict[str, Any]) -> dict[str, Any]:
    """The report's JSON without its long lists (the path's messages and per-rank rows)."""
    out = json.loads(result["stdout"])
    out["path"] = {
        k: v for k, v in out.get("path", {}).items() if k not in ("messages", "per_rank")
    }
    crit = out.get("critical", {})
    out["critical"] = {k: v for k, v in crit.items() if k not in ("segments", "unresolved")}
    return out


def print_table(vertices: int, results: dict[str, dict[str, Any]]) -> None:
    print(f"\nthe pipeline at {vertices:.3g} vertices (one run per stage)\n")
    head = ("stage", "command", "wall s", "CPU s", "peak RSS GB", "peak virtual GB", "load", "exit")
    rows = [
        (
            stage,
            r["command"],
            f"{r['wall_s']:.1f}",
            f"{r['cpu_s']:.1f}",
            f"{r['peak_rss_gb']:.2f}",
            f"{r['peak_virtual_gb']:.2f}",
            f"{r['load']:.1f}",
            str(r["exit"]),
        )
        for stage, r in results.items()
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    for line in (head, tuple("-" * w for w in widths), *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)))
    for stage in ("report", "store-report"):
        seconds = _report_seconds(results.get(stage, {}))
        if seconds:
            print(f"\n{stage} stages (s): " + "  ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
    disk = results.get("store", {}).get("disk_gb")
    if disk:
        print("\nstore on disk (GiB): " + "  ".join(f"{k} {v:.2f}" for k, v in disk.items()))


def run(quick: bool = False, repeat: int = 1) -> list[dict]:
    """Rows for ``python -m benchmarks`` (10^5 vertices with ``quick``, else 10^6)."""
    vertices = 100_000 if quick else 1_000_000
    folder = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        results = pipeline(vertices, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rows = []
    for stage, r in results.items():
        case = f"{stage} {vertices:.0e} vertices"
        rows.append(row(BENCH, case, "wall", r["wall_s"], "s"))
        rows.append(row(BENCH, case, "CPU", r["cpu_s"], "s"))
        rows.append(row(BENCH, case, "peak RSS", r["peak_rss_gb"] * 1024, "MB"))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vertices", type=float, default=1e6, help="graph size (default 1e6)")
    ap.add_argument("--dir", type=Path, help="where the files go (default: a temporary dir)")
    ap.add_argument("--prefix", default="scale", help="file names PREFIX.goal, PREFIX.npz")
    ap.add_argument("--keep", action="store_true", help="keep the files")
    ap.add_argument("--skip", default="", help="stages to skip, e.g. synth (reuse the file)")
    ap.add_argument("--address-limit", type=float, help="RLIMIT_AS per process, in GiB")
    ap.add_argument("--rss-limit", type=float, help="kill a process whose RSS passes this many GiB")
    ap.add_argument("--lock", help="flock this file around each stage")
    ap.add_argument(
        "--store", type=Path, help="also ingest into the embedded store DIR and report the run"
    )
    ap.add_argument("--json", action="store_true", help="also print the measurements as JSON")
    args = ap.parse_args(argv)
    vertices = int(args.vertices)
    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        results = pipeline(
            vertices,
            folder,
            prefix=args.prefix,
            skip=tuple(s for s in args.skip.split(",") if s),
            address_limit_gb=args.address_limit,
            rss_limit_gb=args.rss_limit,
            lock=args.lock,
            store=args.store,
        )
    finally:
        if args.dir is None and not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print_table(vertices, results)
    if args.json:
        shown = {
            stage: {k: v for k, v in r.items() if k not in ("stdout", "stderr")}
            | {"stderr_tail": r["stderr"].replace("\r", "\n").strip().splitlines()[-3:]}
            | ({"report": _report_summary(r)} if "report" in stage and r["exit"] == 0 else {})
            for stage, r in results.items()
        }
        print(json.dumps(shown))
    return 0 if all(r["exit"] == 0 for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
