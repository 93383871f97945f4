"""Run the ``llamp`` CLI as a user does: a separate process with its own ``LLAMP_HOME``."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

#: What a child keeps of this process's environment: where the user's seal key is
#: (llamp.seal), so that graph files this process wrote are the user's own there too.
_KEPT = ("HOME", "XDG_CONFIG_HOME", "LLAMP_SEAL_KEY")


def _env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    kept = {k: os.environ[k] for k in _KEPT if k in os.environ}
    return {**kept, "LLAMP_HOME": str(home), "PATH": "/usr/bin:/bin", **(extra or {})}


def llamp(*args: str, home: Path, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "llamp", *args],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=600,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@dataclass(frozen=True)
class Measured:
    """A finished ``llamp`` process: exit code, output, peak RSS and wall time."""

    returncode: int
    stdout: str
    stderr: str
    max_rss_bytes: int
    seconds: float


def _high_water(pid: int) -> int:
    """The peak resident set of process ``pid``'s own memory (``VmHWM``, bytes; 0 once it has
    exited). ``wait4``'s ``ru_maxrss`` is no measure of a child alone on Linux: at ``exec`` it
    keeps the peak of the memory the child was forked with, i.e. of the test process."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def llamp_measured(
    *args: str, home: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> Measured:
    """Run ``llamp ARGS`` in its own process and measure it alone: the peak RSS of this child
    (its ``VmHWM``, polled every 20 ms), not of the test process or every child the tests
    started. A child killed by a signal has a negative return code, as with
    :mod:`subprocess`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "llamp", *args],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=_env(home, env),
        )
        deadline = start + timeout
        peak = 0
        while True:
            peak = max(peak, _high_water(proc.pid))
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        seconds = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measured(
            proc.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            peak or usage.ru_maxrss * 1024,
            seconds,
        )
