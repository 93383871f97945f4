"""numpy's transparent huge pages on and off, in whole ``llamp`` processes.

numpy asks the kernel for huge pages (``madvise(MADV_HUGEPAGE)``) on every large array unless
``NUMPY_MADVISE_HUGEPAGE=0``; the ``llamp`` entry point loads numpy with them off unless the
user set the variable (``llamp/cli/__init__.py`` ``_load_numpy``). This benchmark measures that
choice, each side a fresh process, the two sides alternating which goes first:

- **first touch**: a child that writes one byte per 4 KiB page of a new 400 MB numpy array,
  its system time (the cost of the page faults) and wall time;
- **llamp**: ``ingest`` of the noisy 16-rank stencil written as GOAL (10^6 vertices; ``quick``
  10^5), ``predict`` and an 11-point ``sweep`` of L over [0, 100 µs] of the saved graph
  (3·10^6 vertices; ``quick`` 10^5), wall, user and system time and peak RSS from GNU time.

Each run waits ``pause`` seconds first (default 3 s): a virtual machine's guest hands memory
freed by the last process back to its host after a delay, and a process started right after
another then finds pages already backed and pays less than a user's first command does.
Medians of ``repeat`` rounds. ``python -m benchmarks.bench_hugepages [--quick] [--repeat N]
[--pause S]``; ``python -m benchmarks --only hugepages`` runs it with the others.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_peers import stencil_goal
from benchmarks.timing import row

POINT = ["--L", "3us", "--o", "1500ns", "--G", "0ns/B", "--S", "65535"]
SIDES = {"huge pages on": "1", "huge pages off (llamp's default)": None}

_TOUCH = (
    "import os, time, numpy as np; t = time.perf_counter(); c = os.times(); "
    "a = np.empty(400_000_000 // 8); a[::512] = 1; "
    "print(time.perf_counter() - t, os.times().system - c.system)"
)


def _env(huge: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if huge is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = huge
    return env


def _timed(argv: list[str], huge: str | None) -> dict[str, float]:
    """One process under GNU time: wall, user and system seconds, peak RSS in MB."""
    with tempfile.NamedTemporaryFile(prefix="llamp-huge-", suffix=".time") as out:
        start = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%U %S %M", "-o", out.name, *argv],
            env=_env(huge),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-300:]}")
        user, system, rss = Path(out.name).read_text().split()[-3:]
    return {"wall": wall, "user": float(user), "system": float(system), "rss": int(rss) / 1024}


def _touch(huge: str | None) -> dict[str, float]:
    """The first-touch child: plain Python, not llamp, so numpy's own default (on) is
    turned off explicitly for the "off" side."""
    done = subprocess.run(
        [sys.executable, "-c", _TOUCH],
        env=_env(huge or "0"),
        capture_output=True,
        text=True,
        check=True,
    )
    wall, system = (float(x) for x in done.stdout.split())
    return {"wall": wall, "system": system}


def run(quick: bool = False, repeat: int = 3, pause: float = 3.0) -> list[dict[str, Any]]:
    if not os.access("/usr/bin/time", os.X_OK):
        raise SystemExit("bench_hugepages needs GNU time at /usr/bin/time (apt-get install time)")
    llamp = [sys.executable, "-m", "llamp"]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="llamp-huge-") as tmp:
        work = Path(tmp)
        small = 10**5 if quick else 10**6
        large = 10**5 if quick else 3 * 10**6
        _, goal, _ = stencil_goal(small, work)
        (work / "big").mkdir()
        big_case, big_goal, _ = (
            stencil_goal(large, work / "big") if large != small else ("", goal, 0)
        )
        npz = work / "stencil.npz"
        subprocess.run(
            [*llamp, "ingest", str(big_goal), "-o", str(npz)], check=True, stdout=subprocess.DEVNULL
        )
        cases = {
            "first touch of 400 MB": None,
            f"ingest {small:.0e} vertices (GOAL → .npz)": [
                *llamp,
                "ingest",
                str(goal),
                "-o",
                str(work / "again.npz"),
            ],
            f"predict {large:.0e} vertices": [*llamp, "predict", str(npz), *POINT],
            f"sweep, 11 points, {large:.0e} vertices": [
                *llamp,
                "sweep",
                str(npz),
                "--points",
                "11",
                *POINT,
            ],
        }
        for case, argv in cases.items():
            runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
            for r in range(repeat):
                order = list(SIDES) if r % 2 == 0 else list(reversed(SIDES))
                for side in order:
                    time.sleep(pause)
                    huge = SIDES[side]
                    runs[side].append(_touch(huge) if argv is None else _timed(argv, huge))
            for side, measured in runs.items():
                for what, unit in (("wall", "s"), ("user", "s"), ("system", "s"), ("rss", "MB")):
                    if what in measured[0]:
                        values = [m[what] for m in measured]
                        rows.append(
                            row(
                                "hugepages",
                                case,
                                f"{side}: {what}",
                                statistics.median(values),
                                unit,
                                values,
                            )
                        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_hugepages", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="10^5 vertices only")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pause", type=float, default=3.0, help="seconds before each run")
    args = parser.parse_args(argv)
    rows = run(quick=args.quick, repeat=args.repeat, pause=args.pause)
    print("| case | measure | median | runs |")
    print("|---|---|---|---|")
    for r in rows:
        runs = ", ".join(f"{v:.3g}" for v in r.get("runs", []))
        print(f"| {r['case']} | {r['metric']} | {r['value']:.3g} {r['unit']} | {runs} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
