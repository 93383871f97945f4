"""Single-pass checks of the columns of a graph file (docs/SECURITY.md §Graph files).

What a kernel later indexes or adds up without looking must be checked once on load: an
index out of range would make it read outside an array, a NaN cost would give T = NaN.
numpy's reductions check one property per pass (``min``, then ``max``) and its elementwise
tests build a temporary as large as the column (``np.diff``, ``a < b``, ``np.repeat``); at
10^7 vertices those passes were most of the load (``benchmarks/bench_seal.py``). The compiled
checks here read each column once, in place (a memory-mapped column is not copied), and stop
at the first defect. Columns below :data:`COMPILED_MIN` elements take numpy's reductions
instead: loading a compiled kernel costs more than they do.

Each function answers a question (bounds, the first bad index, a yes/no); the caller raises
the error naming the vertex or the file. The kernels release the GIL: :func:`together` runs a
file's independent checks on every core, and :func:`forward_csr` splits its positions among
them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from llamp.kernel import kernel

#: Columns with at least this many elements are checked by a compiled kernel.
COMPILED_MIN = 1 << 21

_BLOCK = 1 << 12  # elements per vectorised step of a compiled check that stops early


def cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def together(jobs: list[Callable[[], Any]], elements: int) -> list[Any]:
    """The results of independent checks, in order: run on a thread per core when they read
    ``elements`` values or more in all (:data:`COMPILED_MIN`; below it a thread costs more than
    the check). Put the longest first."""
    workers = min(len(jobs), cores())
    if workers <= 1 or elements < COMPILED_MIN:
        return [job() for job in jobs]
    from concurrent.futures import ThreadPoolExecutor  # here: a small graph needs none

    with ThreadPoolExecutor(workers, thread_name_prefix="llamp-check") as pool:
        futures = [pool.submit(job) for job in jobs]
        return [future.result() for future in futures]


def bounds(column: np.ndarray) -> tuple[int | float, int | float]:
    """(min, max) of a non-empty numeric column, in one pass for a big integer column (a float
    column takes numpy's reductions, which keep a NaN: then both bounds are NaN)."""
    if column.size < COMPILED_MIN or column.dtype.kind not in "iu":
        return column.min(), column.max()
    return _bounds(column)


def first_descent(column: np.ndarray) -> int:
    """The first index ``i`` with ``column[i] < column[i-1]``, or -1 (nondecreasing)."""
    if column.size < 2:
        return -1
    if column.size < COMPILED_MIN:
        down = np.flatnonzero(column[1:] < column[:-1])
        return int(down[0]) + 1 if down.size else -1
    return int(_first_descent(column))


def first_not_finite_nonnegative(column: np.ndarray) -> int:
    """The first index whose value is negative, infinite or NaN, or -1."""
    if column.size == 0:
        return -1
    if column.size < COMPILED_MIN:
        if column.min() >= 0.0 and column.max() < np.inf:  # NaN fails both comparisons
            return -1
        return int(np.flatnonzero(~((column >= 0.0) & (column < np.inf)))[0])
    return int(_first_not_finite_nonnegative(column))


def forward_csr(in_ptr: np.ndarray, src: np.ndarray) -> bool:
    """Whether ``in_ptr`` runs from 0 to ``len(src)`` without going back and every in-edge
    ``src[in_ptr[p]:in_ptr[p+1]]`` of position ``p`` comes from a position in ``0..p-1``."""
    edges = src.shape[0]
    if in_ptr.ndim != 1 or in_ptr.shape[0] < 1 or in_ptr[0] != 0 or in_ptr[-1] != edges:
        return False
    if edges == 0:
        return bool(first_descent(in_ptr) == -1)
    if in_ptr.size + edges < COMPILED_MIN:
        counts = np.diff(in_ptr)
        if counts.min() < 0:
            return False
        dst = np.repeat(np.arange(in_ptr.size - 1, dtype=np.int64), counts)
        return bool(np.all((src >= 0) & (src < dst)))
    # Chunks of positions compose: each checks its pointers from in_ptr[first] on, which the
    # chunk before it checked as its last (the first chunk starts at in_ptr[0] = 0).
    positions = in_ptr.size - 1
    parts = max(1, min(cores(), positions, (in_ptr.size + edges) // max(COMPILED_MIN, 1)))
    cuts = [positions * k // parts for k in range(parts + 1)]
    chunks = zip(cuts[:-1], cuts[1:], strict=True)
    jobs = [lambda a=a, b=b: bool(_forward_csr(in_ptr, src, a, b)) for a, b in chunks]
    return all(together(jobs, in_ptr.size + edges))


_INTS = ("i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8")


# Each loop is written so that LLVM vectorises it: a count over a block (no branch inside),
# then a search within the block only when the count says it holds a defect.
@kernel(*(f"{t}[::1]" for t in _INTS), nogil=True)
def _bounds(x):  # pragma: no cover - compiled
    lo = x[0]
    hi = x[0]
    for i in range(x.size):
        lo = min(lo, x[i])
        hi = max(hi, x[i])
    return lo, hi


@kernel(*(f"{t}[::1]" for t in _INTS), nogil=True)
def _first_descent(x):  # pragma: no cover - compiled
    n = x.size
    for start in range(1, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        before, after = x[start - 1 : stop - 1], x[start:stop]
        down = 0
        for i in range(after.size):
            down += np.int32(after[i] < before[i])
        if down:
            for i in range(after.size):
                if after[i] < before[i]:
                    return start + i
    return -1


@kernel("f4[::1]", "f8[::1]", nogil=True)
def _first_not_finite_nonnegative(x):  # pragma: no cover - compiled
    n = x.size
    for start in range(0, n, _BLOCK):
        block = x[start : min(start + _BLOCK, n)]
        good = 0
        for i in range(block.size):  # NaN fails both comparisons
            good += np.int32(block[i] >= 0.0) & np.int32(block[i] < np.inf)
        if good != block.size:
            for i in range(block.size):
                if not (block[i] >= 0.0 and block[i] < np.inf):
                    return start + i
    return -1


@kernel("i4[::1], i4[::1], i8, i8", "i8[::1], i8[::1], i8, i8", nogil=True)
def _forward_csr(in_ptr, src, first, stop):  # pragma: no cover - compiled
    edges = src.size
    lo = in_ptr[first]
    if lo < 0 or lo > edges:  # a chunk after a bad one: never index with it
        return False
    for p in range(first, stop):
        hi = in_ptr[p + 1]
        if hi < lo or hi > edges:
            return False
        for e in range(lo, hi):
            s = src[e]
            if s < 0 or s >= p:
                return False
        lo = hi
    return True


__all__ = [
    "COMPILED_MIN",
    "bounds",
    "cores",
    "first_descent",
    "first_not_finite_nonnegative",
    "forward_csr",
    "together",
]
