"""One ``ast.parse`` at a time in the UI process, on the CPython releases whose AST constructor
is not thread-safe (gh-106905).

What the server log showed: ``SystemError: AST constructor recursion depth mismatch
(before=42, after=55)`` raised by ``ast.parse`` in Streamlit's magic (``add_magic``, which
parses a page script before compiling it), failing that run of the page ("Uncaught app
execution"), while background tasks ran. The cause is CPython's, not Streamlit's nor ours:
up to 3.11.7 and 3.12.1, ``PyAST_mod2obj`` (the C code that turns a parsed tree into
``ast`` objects) keeps its recursion counter in the interpreter-wide ``ast_state``, sets it
to the calling thread's stack depth on entry and compares it on exit. Building the objects
allocates, an allocation may run the cyclic garbage collector, the collector may run a
``__del__`` (Python code), and Python code lets another thread run: if that thread is inside
``ast.parse`` too, it resets the shared counter to its own depth and the first one fails.
Parsers in this process: Streamlit's magic in each session's script thread (a new AppTest
session parses again), the traceback module's caret positions (3.11 parses the failing line),
``ast.literal_eval``. Fixed upstream by a per-call counter (python/cpython#113035, in 3.11.8
and 3.12.2); ``tests/test_ui_ast_guard.py`` reproduces the error on this interpreter with two
threads and shows that this guard removes it.

On the affected versions :func:`install` wraps ``ast.parse`` (which ``ast.literal_eval``,
Streamlit's magic and ``traceback`` call) with a process-wide re-entrant lock; on fixed
versions it does nothing. Parsing is short (milliseconds for a page script), so the lock
costs nothing a user sees. Code that calls ``compile(..., ast.PyCF_ONLY_AST)`` itself
bypasses it; nothing in the UI's import tree does.
"""

from __future__ import annotations

import ast
import functools
import sys
import threading

#: Whether this interpreter's AST constructor has the race (fixed in 3.11.8 and 3.12.2).
AFFECTED = sys.implementation.name == "cpython" and (
    sys.version_info[:3] < (3, 11, 8) or (3, 12, 0) <= sys.version_info[:3] < (3, 12, 2)
)

_LOCK = threading.RLock()


def _guarded(parse):
    @functools.wraps(parse)
    def parse_one_at_a_time(*args, **kwargs):
        with _LOCK:
            return parse(*args, **kwargs)

    parse_one_at_a_time.__llamp_guard__ = True
    return parse_one_at_a_time


def install(force: bool = False) -> bool:
    """Serialise ``ast.parse`` in this process if the interpreter needs it (``force``: in any
    case); ``True`` if the guard is in place."""
    if getattr(ast.parse, "__llamp_guard__", False):
        return True
    if not (AFFECTED or force):
        return False
    ast.parse = _guarded(ast.parse)
    return True


__all__ = ["AFFECTED", "install"]
