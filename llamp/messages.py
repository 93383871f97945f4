"""The one channel for diagnostics on stderr: ``llamp: KIND: text``, one line each.

Every warning, note and error a person reads goes through :func:`emit` — the CLI's messages,
the store's waits and clean-ups — so each is prefixed, has its control characters escaped and
its passwords redacted, and starts on a line of its own: where a progress bar may have drawn on
a stderr that is not a terminal (a log file keeps a bar's last ``\\r`` frame on the line the next
write continues), a newline comes first.
"""

from __future__ import annotations

import sys

from llamp.config import redact
from llamp.errors import tidy

_bars_off_terminal = False


def bars_shown(show: bool) -> None:
    """Record that progress bars are drawn (``show``) on the current stderr; off a terminal,
    every later message then starts on a fresh line."""
    global _bars_off_terminal
    if show and not _on_terminal():
        _bars_off_terminal = True


def _on_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def line(kind: str, text: object) -> str:
    """The message as :func:`emit` prints it (without the fresh-line newline)."""
    body = tidy(redact(str(text)).strip().replace("\n", " "))
    return f"llamp: {kind}: {body}"


def emit(kind: str, text: object) -> None:
    """Print ``llamp: KIND: text`` on stderr (``kind``: error, warning, note)."""
    prefix = "\n" if _bars_off_terminal else ""
    print(prefix + line(kind, text), file=sys.stderr, flush=True)


__all__ = ["bars_shown", "emit", "line"]
