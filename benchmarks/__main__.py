"""Run every benchmark module and print one table (median of --repeat runs)."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import pkgutil
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchmarks


def _modules(only: list[str] | None) -> list[str]:
    names = sorted(
        m.name
        for m in pkgutil.iter_modules([str(Path(benchmarks.__file__).parent)])
        if m.name.startswith("bench_")
    )
    if only:
        names = [n for n in names if any(o in n for o in only)]
    return names


def run_module(
    name: str, quick: bool, repeat: int, full: bool, loggopsim: str | None = None
) -> list[dict]:
    """The rows of ``benchmarks.<name>`` run in this process (``full`` and ``loggopsim`` go to
    the modules whose ``run`` takes them)."""
    module = importlib.import_module(f"benchmarks.{name}")
    kwargs: dict = {"quick": quick, "repeat": repeat}
    accepted = inspect.signature(module.run).parameters
    if "full" in accepted:
        kwargs["full"] = full
    if "loggopsim" in accepted:
        kwargs["loggopsim"] = loggopsim
    return module.run(**kwargs)


def _run_isolated(
    name: str, quick: bool, repeat: int, full: bool, loggopsim: str | None
) -> list[dict]:
    """Run one module in a fresh interpreter: its peak RSS rows are its own (freed memory is
    not always returned to the system, so a module run after a large one would inherit it)."""
    with tempfile.TemporaryDirectory(prefix="llamp-bench-") as tmp:
        out = Path(tmp) / "rows.json"
        code = (
            "import json, sys; from benchmarks.__main__ import run_module; "
            f"rows = run_module({name!r}, {quick!r}, {repeat!r}, {full!r}, {loggopsim!r}); "
            f"open({str(out)!r}, 'w').write(json.dumps(rows))"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=Path(benchmarks.__file__).parent.parent, check=False
        )
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"benchmark module {name} failed (exit {proc.returncode})")
        return json.loads(out.read_text())


def _fmt(value: float) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke run)")
    parser.add_argument(
        "--full",
        action="store_true",
        help="also 10^7 vertices (end to end, graph engine): adds tens of minutes",
    )
    parser.add_argument("--only", action="append", help="run modules whose name contains this")
    parser.add_argument(
        "--loggopsim",
        metavar="PATH",
        help="LogGOPSim binary for bench_peers (default: $LOGGOPSIM; without one it is skipped)",
    )
    parser.add_argument(
        "--txt2bin",
        metavar="PATH",
        help="LogGOPSim's txt2bin for bench_goal (default: $TXT2BIN, or next to --loggopsim)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--json", dest="json_out", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    if args.txt2bin:
        os.environ["TXT2BIN"] = args.txt2bin  # the modules run in child processes

    rows = []
    started = time.time()
    for name in _modules(args.only):
        print(f"# {name} …", file=sys.stderr, flush=True)
        rows.extend(_run_isolated(name, args.quick, args.repeat, args.full, args.loggopsim))
    headers = ("benchmark", "case", "metric", "value", "unit")
    cells = [headers] + [tuple(_fmt(r[h]) for h in headers) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    print(
        f"llamp benchmarks — {time.strftime('%Y-%m-%d')} — {platform.node()} "
        f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}), "
        f"median of {args.repeat}"
    )
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for c in cells[1:]:
        print("| " + " | ".join(x.ljust(w) for x, w in zip(c, widths, strict=True)) + " |")
    print(f"total {time.time() - started:.1f} s", file=sys.stderr)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
