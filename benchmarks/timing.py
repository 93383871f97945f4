"""Timing helpers for the benchmark modules: medians of repeated wall-clock runs, peak RSS."""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable
from typing import Any


def median_time(func: Callable[[], Any], repeat: int) -> tuple[float, list[float], Any]:
    """Run ``func`` ``repeat`` times; return (median seconds, all seconds, last result)."""
    runs: list[float] = []
    result: Any = None
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        result = func()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), runs, result


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB: the kernel's high-water mark
    VmHWM (Linux reports KiB). The runner starts each module in a fresh interpreter."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:  # pragma: no cover - not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def row(
    benchmark: str,
    case: str,
    metric: str,
    value: float,
    unit: str,
    runs: list[float] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One table row."""
    out = {"benchmark": benchmark, "case": case, "metric": metric, "value": value, "unit": unit}
    if runs is not None:
        out["runs"] = runs
    out.update(extra)
    return out
