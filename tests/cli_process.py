"""Run the ``llamp`` CLI as a user does: a separate process with its own ``LLAMP_HOME``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def llamp(*args: str, home: Path, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "llamp", *args],
        capture_output=True,
        text=True,
        env={"LLAMP_HOME": str(home), "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc
