"""No compiled kernel calls itself, directly or through other kernels of its module.

numba's on-disk cache (``cache=True``) cannot reload a recursive kernel once a process has
compiled it for two argument types: the next process that loads the caller aborts with
``LLVM ERROR: Symbol not found: .numba.unresolved$…``, with no Python traceback to catch. The
schedule pass's introsort (GCC's algorithm, recursive there) did exactly that after the index
columns became int32 for small graphs and int64 for large ones; it is iterative now. This AST
check keeps every kernel of the distribution (``numba.njit``, ``numba.jit`` or
:func:`llamp.kernel.kernel`) free of cycles among the kernels of its module, and names
``file:line`` of each one it finds.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("llamp", "ingest", "lp", "graphdb", "injector", "study", "ui")


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("njit", "jit", "kernel"):
            return True
    return False


def recursive_kernels(source: str, where: str) -> list[str]:
    """``where:line name`` of every kernel of ``source`` on a cycle of calls among its
    module's kernels (a kernel calling itself is the shortest)."""
    tree = ast.parse(source)
    kernels = {
        n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and _is_kernel(n)
    }
    calls = {
        name: {
            c.func.id
            for c in ast.walk(fn)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in kernels
        }
        for name, fn in kernels.items()
    }
    found = []
    for start in kernels:
        seen: set[str] = set()
        todo = list(calls[start])
        while todo:
            name = todo.pop()
            if name == start:
                found.append(f"{where}:{kernels[start].lineno} {start}")
                break
            if name not in seen:
                seen.add(name)
                todo.extend(calls[name])
    return found


def test_no_kernel_is_recursive():
    found = []
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            found += recursive_kernels(path.read_text(), str(path.relative_to(REPO)))
    assert not found, "recursive numba kernels (not reloadable from numba's cache): " + ", ".join(
        found
    )


def test_the_check_catches_direct_and_mutual_recursion():
    source = """
import numba
@numba.njit(cache=True)
def a(x):
    return a(x - 1) if x else 0
@numba.njit(cache=True, nogil=True)
def b(x):
    return c(x)
@numba.njit
def c(x):
    return b(x) if x else d(x)
def d(x):
    return d(x)
@kernel("i8", nogil=True)
def e(x):
    return e(x - 1) if x else 0
"""
    assert recursive_kernels(source, "m.py") == [
        "m.py:4 a",
        "m.py:7 b",
        "m.py:10 c",
        "m.py:15 e",
    ]
