"""Exceptions for people: each names the file/line, rank/vertex or store that is at fault.

The CLI maps :class:`InputError` subclasses to exit code 2 and anything else to 1.
"""

from __future__ import annotations

import re

#: Characters of quoted input shown in an error message (~100).
QUOTE_LIMIT = 100


def quote(text: str | bytes, limit: int = QUOTE_LIMIT) -> str:
    """``text`` fit for a one-line message: control characters escaped (``\\x1b``, ``\\n``),
    cut to ``limit`` characters with the length that was cut."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="backslashreplace")
    total = len(text)
    head = text[:limit]
    shown = "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
        for c in head
    )
    if total > limit:
        shown += f"… ({total} characters)"
    return shown


#: A message longer than this is cut (a 200 MB trace line must not reach the terminal).
MESSAGE_LIMIT = 1000
_LONG_RUN = re.compile(r"\S{121,}")


def tidy(message: str) -> str:
    """A message fit for one terminal line: control characters escaped, every unbroken run
    of more than 120 characters (a quoted line, a junk field) cut to 100, the whole to
    :data:`MESSAGE_LIMIT` characters."""
    if message.isprintable() and len(message) <= 120:
        return message
    text = "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in message
    )
    text = _LONG_RUN.sub(lambda m: f"{m.group()[:100]}…({len(m.group())} characters)", text)
    if len(text) > MESSAGE_LIMIT:
        text = text[:MESSAGE_LIMIT] + f"… ({len(text)} characters)"
    return text


class LlampError(Exception):
    """Base class of every error llamp raises on purpose; its message is :func:`tidy`."""

    def __init__(self, *args: object) -> None:
        if len(args) == 1 and isinstance(args[0], str):
            args = (tidy(args[0]),)
        super().__init__(*args)


class InputError(LlampError):
    """Bad user input (trace, graph file, parameter, query): exit code 2."""


class TraceError(InputError):
    """A trace file is malformed or inconsistent.

    The message always starts with ``file:line:`` when a line is known, e.g.
    ``pmpi-trace-rank-3.txt:1207: MPI_Irecv has 11 fields, expected 13``.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = (
                f"{quote(str(path), 300)}:{line}: "
                if line is not None
                else f"{quote(str(path), 300)}: "
            )
        super().__init__(where + message)
        self.path = path
        self.line = line
        self.reason = message


class GraphError(InputError):
    """An execution graph violates an invariant (cycle, mismatched message, bad rank)."""


class ParameterError(InputError):
    """A LogGPS parameter or unit string cannot be understood."""


class StoreError(LlampError):
    """The graph store cannot do what was asked (unreachable, locked, not writable)."""


class QueryError(InputError):
    """A Cypher query is invalid or not allowed (e.g. a write clause without --write)."""
