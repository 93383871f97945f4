"""Where a reader may follow a path: inside the upload, when the UI reads one.

Some inputs name other files: a SimGrid list file names the per-rank action files, a DUMPI
``.meta`` its ``fileprefix``. From the command line these may point anywhere the user may
read; for an upload they must stay inside the upload, or a list file naming ``/etc/passwd``
would make the server read it. :func:`confined_to` sets the root for the readers running
inside it; :func:`check` is what a reader calls on every path it takes from an input.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from llamp.errors import TraceError

_ROOT: ContextVar[Path | None] = ContextVar("llamp_ingest_root", default=None)


@contextmanager
def confined_to(root: str | Path) -> Iterator[Path]:
    """Readers inside this block follow paths only below ``root`` (symbolic links resolved)."""
    resolved = Path(root).resolve()
    token = _ROOT.set(resolved)
    try:
        yield resolved
    finally:
        _ROOT.reset(token)


def check(path: Path, *, named_in: Path, line: int | None = None) -> Path:
    """``path`` (named in the file ``named_in``) if it may be read here; else a TraceError."""
    root = _ROOT.get()
    if root is None:
        return path
    resolved = path.resolve()
    if resolved != root and root not in resolved.parents:
        raise TraceError(
            f"names {str(path)[:100]!r}, which is outside the uploaded files",
            path=named_in.name,
            line=line,
        )
    return path


__all__ = ["check", "confined_to"]
