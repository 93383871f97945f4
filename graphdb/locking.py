"""Who may open the embedded store, and how the others wait.

LadybugDB admits one read-write process per database file, and read-only processes beside it;
a read-only open fails while the writer checkpoints ("checkpoint recovery is pending", or
"reading past the end" of a write-ahead log the checkpoint has just emptied) and after a
writer was killed mid-checkpoint until a writer reopens the file. So:

- writers take an exclusive ``flock`` on ``writer.lock`` in the store directory for as long as
  they hold the database; a second writer waits for it (with a message naming the holder)
  instead of failing: two ingests serialise;
- readers open read-only at any time and see the last complete state (runs are flagged
  complete last); a failed open is retried, with one message, while a writer holds the lock;
- crash recovery is a writer's job: when a read-only open fails and no writer holds the lock,
  the reader takes the writer's lock just long enough to open the file read-write once, which
  completes LadybugDB's own recovery (incomplete runs are left for the next real writer to
  remove), and says so.

The lock is advisory and per directory: it orders llamp processes; a foreign process that holds
the database is waited for by retrying the open.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from llamp.errors import StoreError
from llamp.messages import emit

#: The lock file inside the store directory.
LOCK_FILE = "writer.lock"

Notify = Callable[[str], None]


def stderr_notify(message: str) -> None:
    """The default way to tell a person why llamp is waiting: one ``llamp: note:`` line on
    stderr (:func:`llamp.messages.emit`)."""
    emit("note", message)


def _holder(path: Path) -> str:
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        text = ""
    return text[:200] or "another llamp process"


def writer_active(directory: Path) -> bool:
    """True while a llamp writer holds the store in ``directory``."""
    path = directory / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


class WriterLock:
    """The exclusive writer lock of one store directory; waits (with a message) while held."""

    def __init__(self, directory: Path, notify: Notify | None = None) -> None:
        self.path = directory / LOCK_FILE
        self.notify = notify or stderr_notify
        self._fd: int | None = None

    def acquire(self, timeout_s: float | None = None) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o664)
        except OSError as err:
            raise StoreError(
                f"cannot lock the store directory {self.path.parent} for writing: "
                f"{err.strerror or err}; point --store or LLAMP_HOME at a writable directory"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.notify(
                f"the store {self.path.parent} is being written by {_holder(self.path)}; "
                "waiting for it to finish (Ctrl-C to give up)…"
            )
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if deadline is not None and time.monotonic() > deadline:
                        os.close(fd)
                        raise StoreError(
                            f"the store {self.path.parent} is still being written by "
                            f"{_holder(self.path)} after {timeout_s:g} s"
                        ) from None
                    time.sleep(0.2)
                except BaseException:
                    os.close(fd)
                    raise
            self.notify("the other writer has finished; going on")
        os.ftruncate(fd, 0)
        command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
        os.write(fd, f"process {os.getpid()} ({command[:120]})".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
            os.close(fd)  # closing the descriptor drops the flock

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["LOCK_FILE", "Notify", "WriterLock", "stderr_notify", "writer_active"]
