"""Run every benchmark module and print one table (median of --repeat runs)."""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import platform
import sys
import time
from pathlib import Path

import benchmarks


def _modules(only: list[str] | None) -> list[str]:
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(Path(benchmarks.__file__).parent)])
        if m.name.startswith("bench_")
    )
    if only:
        names = [n for n in names if any(o in n for o in only)]
    return names


def _fmt(value: float) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke run)")
    parser.add_argument("--only", action="append", help="run modules whose name contains this")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--json", dest="json_out", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)

    rows = []
    started = time.time()
    for name in _modules(args.only):
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"# {name} …", file=sys.stderr, flush=True)
        rows.extend(module.run(quick=args.quick, repeat=args.repeat))
    headers = ("benchmark", "case", "metric", "value", "unit")
    cells = [headers] + [tuple(_fmt(r[h]) for h in headers) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    print(f"llamp benchmarks — {time.strftime('%Y-%m-%d')} — {platform.node()} "
          f"({platform.machine()}, Python {platform.python_version()}), median of {args.repeat}")
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
