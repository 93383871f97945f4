"""Exceptions for people: each names the file/line, rank/vertex or store that is at fault.

The CLI maps :class:`InputError` subclasses to exit code 2 and anything else to 1.
"""

from __future__ import annotations


class LlampError(Exception):
    """Base class of every error llamp raises on purpose."""


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
            where = f"{path}:{line}: " if line is not None else f"{path}: "
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
