"""A throwaway local Neo4j server for tests and benchmarks: Neo4j Community from Maven Central.

``graphdb/neo4j_server/`` is a Maven project with one class (``org.llamp.Neo4jServer``) that
starts the embedded Neo4j DBMS (``org.neo4j:neo4j``, the version docker/compose.yaml runs)
with its Bolt connector on 127.0.0.1, authentication on. ``scripts/setup.sh`` builds it once
(``mvn package``: the jars stay in the local Maven repository, ``target/classpath.txt`` lists
them). :class:`Neo4jServer` starts it on a free port with a generated password and a home in a
temporary directory, reads its one ready line, and stops it (checkpoint, then exit) on
:meth:`~Neo4jServer.stop` or when this process dies (the server exits when its stdin closes).

Memory: the JVM heap (``-Xmx``) and the page cache are arguments, 2 GiB and 1 GiB by default
(transaction state of one 20 000-row ``UNWIND`` batch fits in a few hundred MiB; the page
cache holds a 10^6-vertex run, ~0.5 GiB of store files, whole).

:func:`admin_import` runs Neo4j's offline importer (``neo4j-admin database import full``, from
the same jars) on the CSV files of :mod:`llamp.graphdb.neo4jimport` into a home that a
:class:`Neo4jServer` then serves.

``python -m llamp.graphdb.neo4jserver`` runs one in the foreground and prints its URI.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from llamp.errors import StoreError

if TYPE_CHECKING:
    from llamp.graphdb.neo4jimport import ImportFiles

#: The launcher's Maven project.
PROJECT = Path(__file__).resolve().parent / "neo4j_server"
MAIN_CLASS = "org.llamp.Neo4jServer"
#: ``neo4j-admin`` (org.neo4j:neo4j-command-line, a dependency of the DBMS).
ADMIN_CLASS = "org.neo4j.cli.AdminTool"


def launcher_classpath() -> str | None:
    """The launcher's Java class path if ``scripts/setup.sh`` built it, else None."""
    classes = PROJECT / "target" / "classes"
    listed = PROJECT / "target" / "classpath.txt"
    if not (classes / "org" / "llamp" / "Neo4jServer.class").is_file() or not listed.is_file():
        return None
    jars = listed.read_text().strip()
    if not jars or not all(Path(j).is_file() for j in jars.split(os.pathsep)):
        return None  # the local Maven repository was cleared: build again
    return f"{classes}{os.pathsep}{jars}"


def unavailable() -> str | None:
    """Why no local Neo4j can be started (one line), or None if it can."""
    if shutil.which("java") is None:
        return "no Java runtime (scripts/setup.sh installs openjdk-17-jre-headless)"
    if launcher_classpath() is None:
        return (
            "the Neo4j launcher is not built (scripts/setup.sh builds it with Maven; "
            "it needs Maven Central once)"
        )
    return None


class Neo4jServer:
    """Neo4j Community with Bolt on a free 127.0.0.1 port; ``uri`` (user ``neo4j``, a
    generated password) is what :func:`llamp.graphdb.open_store` takes."""

    def __init__(
        self,
        *,
        heap: str = "2g",
        pagecache: str = "1g",
        read_only: bool = False,
        home: Path | None = None,
        startup_timeout_s: float = 180.0,
    ) -> None:
        why = unavailable()
        if why is not None:
            raise StoreError(f"no local Neo4j server: {why}")
        self.heap, self.pagecache, self.read_only = heap, pagecache, read_only
        self._home = home  # kept on stop (a read-only server needs an existing database)
        self._timeout = startup_timeout_s
        self._dir: Path | None = None
        self._process: subprocess.Popen[str] | None = None
        self.password = ""
        self.port = 0
        self.version = ""

    @property
    def uri(self) -> str:
        return f"bolt://neo4j:{self.password}@127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """The server's process id (its JVM)."""
        if self._process is None:
            raise StoreError("the Neo4j server is not running")
        return self._process.pid

    @property
    def home(self) -> Path:
        """The DBMS home (databases, transaction logs, logs/debug.log)."""
        if self._home is not None:
            return self._home
        if self._dir is None:
            raise StoreError("the Neo4j server is not running")
        return self._dir / "home"

    @property
    def log(self) -> str:
        """The JVM's output and Neo4j's debug log so far (for failure messages)."""
        if self._dir is None:
            return ""
        parts = []
        for path in (self._dir / "server.log", self.home / "logs" / "debug.log"):
            if path.is_file():
                parts.append(path.read_text(errors="replace")[-3000:])
        return "\n".join(parts)

    def start(self) -> Neo4jServer:
        self._dir = Path(tempfile.mkdtemp(prefix="llamp-neo4j-"))
        self.password = secrets.token_urlsafe(18)
        command = [
            shutil.which("java") or "java",
            f"-Xmx{self.heap}",
            f"-Xms{self.heap}",
            "-XX:+UseG1GC",
            "-XX:+ExitOnOutOfMemoryError",
            "-cp",
            launcher_classpath() or "",
            MAIN_CLASS,
            "--home",
            str(self.home),
            "--port",
            "0",
            "--pagecache",
            self.pagecache,
            *(["--read-only"] if self.read_only else []),
        ]
        env = {**os.environ, "LLAMP_NEO4J_PASSWORD": self.password}
        with open(self._dir / "server.log", "wb") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                text=True,
            )
        ready: list[str] = []
        reader = threading.Thread(target=self._read_ready, args=(ready,), daemon=True)
        reader.start()
        reader.join(self._timeout)
        if not ready:
            log_text = self.log
            code = self._process.poll()
            self.stop()
            what = (
                f"did not start within {self._timeout:g} s"
                if code is None
                else f"exited with code {code} while starting"
            )
            raise StoreError(f"Neo4j {what}; its log:\n{log_text}")
        fields = dict(item.split("=", 1) for item in ready[0].split()[1:] if "=" in item)
        self.port, self.version = int(fields["port"]), fields.get("version", "")
        return self

    def _read_ready(self, ready: list[str]) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            if line.startswith("ready port="):
                ready.append(line.strip())
                return

    def stop(self) -> None:
        """Stop the server (closing its stdin: it checkpoints and exits) and remove its home."""
        if self._process is not None:
            if self._process.stdin is not None:
                self._process.stdin.close()
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            if self._process.stdout is not None:
                self._process.stdout.close()
            self._process = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Neo4jServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def admin_import(home: Path, files: ImportFiles, *, heap: str = "2g") -> str:
    """Run ``neo4j-admin database import full`` (the launcher's jars hold Neo4j's admin tool)
    on ``files`` into database ``neo4j`` of the DBMS home ``home``, which no server may be
    running on; a :class:`Neo4jServer` with that ``home`` then serves it. Returns the
    importer's summary (its last lines); a failed import is a StoreError with them."""
    why = unavailable()
    if why is not None:
        raise StoreError(f"no local Neo4j tools: {why}")
    home.mkdir(parents=True, exist_ok=True)
    command = [
        shutil.which("java") or "java",
        f"-Xmx{heap}",
        "-cp",
        launcher_classpath() or "",
        ADMIN_CLASS,
        *files.admin_args(),
    ]
    done = subprocess.run(
        command,
        env={**os.environ, "NEO4J_HOME": str(home)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    summary = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
    if done.returncode != 0:
        raise StoreError(f"neo4j-admin import failed (exit {done.returncode}):\n{summary}")
    return summary


def main() -> int:
    """Run a local Neo4j until Ctrl-C or SIGTERM; print its URI."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop the server on the way out
    try:
        with Neo4jServer() as server:
            print(f"Neo4j {server.version}: {server.uri}  (Ctrl-C stops it)", flush=True)
            threading.Event().wait()
    except StoreError as err:
        print(f"llamp: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["Neo4jServer", "admin_import", "launcher_classpath", "unavailable"]
