"""Ad hoc Cypher in a worker process held to memory and time limits (docs/SECURITY.md).

``llamp cypher``, ``llamp query`` and the UI's Cypher console never run a query in their own
process: a query that exhausts memory, runs for hours or crashes the database engine (LadybugDB
segfaulted on 3,000 nested parentheses) must not take the CLI's terminal or the Streamlit
server with it. :func:`run_query` checks the text first, in the calling process and in linear
time (:func:`llamp.graphdb.readonly.check_shape`: UTF-8, length, nesting, variable-length
bounds; the allow-list for reads; the parameters), then starts ``python -m
llamp.graphdb.worker``, which

- opens the store itself, read-only unless the query may write, under the store's
  reader/writer locking (:mod:`llamp.graphdb.locking`: a reader waits while a writer
  checkpoints, a writer queues on the lock), with LadybugDB's buffer pool at half the memory
  limit;
- then limits its address space (``RLIMIT_AS``) to what it has mapped so far plus the memory
  limit — LadybugDB reserves its address space when it opens the database, so the limit counts
  what the query allocates — and sets LadybugDB's query timeout to the time limit;
- runs the query and writes the result as an Arrow IPC stream to stdout, its notes and its
  error (one JSON object a line) to stderr.

The calling process kills the worker when the time limit (plus :data:`GRACE_S`) has passed
since the query started (waiting for a writer does not count), and turns every way the worker
can end into one :class:`~llamp.errors.QueryError` line naming the limit and how to raise it:
a refusal, an allocation the limit stopped (``std::bad_alloc``, a full buffer pool), the
timeout, a crash. The worker holds no state between queries: each query pays for a fresh
process (its imports and the store's open), which an ad hoc query can afford.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from llamp.config import QueryLimits, query_limits
from llamp.errors import InputError, LlampError, QueryError, StoreError, quote, tidy
from llamp.graphdb.locking import stderr_notify
from llamp.graphdb.readonly import check_read_only, check_shape
from llamp.json_values import json_value

#: Seconds the worker gets beyond the time limit to report it (LadybugDB's own timeout
#: stops the query; the kill is the backstop for an engine that does not notice).
GRACE_S = 5.0
#: A worker's exit code after it reported an error on stderr.
REPORTED = 3
#: Parameter values: integers LadybugDB and Neo4j hold (64-bit), at most this many items.
_INT64 = (-(1 << 63), (1 << 63) - 1)
_MAX_PARAM_ITEMS = 1_000_000
_MEMORY_ERRORS = re.compile(
    r"bad_alloc|Unable to allocate memory|buffer pool is full|out of memory"
)
_TIMEOUT_ERRORS = re.compile(r": Interrupted\.?$")


def run_query(
    store: str | None,
    cypher: str | None = None,
    params: Mapping[str, Any] | None = None,
    *,
    write: bool = False,
    catalogue: str | None = None,
    run: str | None = None,
    limits: QueryLimits | None = None,
    notify: Callable[[str], None] | None = None,
) -> pa.Table:
    """The rows of ``cypher`` (or of the catalogue query ``catalogue`` on run ``run``) on the
    store at ``store`` (None: ``$LLAMP_STORE`` or the embedded store), run in a worker process
    held to ``limits`` (default :func:`llamp.config.query_limits`). Read-only unless
    ``write``. Every refusal and every limit hit is a :class:`QueryError` (exit 2);
    ``notify(text)`` hears why the worker waits (a writer holds the store)."""
    limits = limits or query_limits()
    params = dict(params or {})
    if catalogue is None:
        if not isinstance(cypher, str) or not cypher.strip():
            raise InputError("empty Cypher query")
        check_shape(cypher, limits)
        if not write:
            check_read_only(cypher)
    check_params(params, limits)
    request = {
        "store": store,
        "cypher": cypher,
        "params": params,
        "write": write,
        "catalogue": catalogue,
        "run": run,
        "memory_bytes": limits.memory_bytes,
        "timeout_s": limits.timeout_s,
    }
    return _Worker(request, limits, notify or stderr_notify).result()


def check_params(params: Mapping[str, Any], limits: QueryLimits) -> None:
    """Refuse parameter values the databases cannot hold or that would take long to send:
    integers beyond 64 bits, nesting deeper than ``limits.max_depth``, more than a million
    items in all. Iterative: a deep value cannot exhaust the stack."""
    for name, value in params.items():
        stack = [(value, 1)]
        items = 0
        while stack:
            item, depth = stack.pop()
            items += 1
            if depth > limits.max_depth:
                raise QueryError(
                    f"parameter ${name} nests more than {limits.max_depth} deep (raise the "
                    "limit with LLAMP_CYPHER_MAX_DEPTH)"
                )
            if items > _MAX_PARAM_ITEMS:
                raise QueryError(f"parameter ${name} holds more than {_MAX_PARAM_ITEMS} values")
            if isinstance(item, bool) or item is None:
                continue
            if isinstance(item, int) and not _INT64[0] <= item <= _INT64[1]:
                raise QueryError(
                    f"parameter ${name}: {quote(str(item), 40)} does not fit in a 64-bit "
                    f"integer ({_INT64[0]} to {_INT64[1]}); pass it as a float or a string"
                )
            if isinstance(item, dict):
                stack.extend((v, depth + 1) for v in item.values())
            elif isinstance(item, list | tuple):
                stack.extend((v, depth + 1) for v in item)


def plain_rows(table: pa.Table | pa.RecordBatch) -> list[dict[str, Any]]:
    """The rows of a query result (or of one batch of it) as JSON-ready dicts
    (:func:`llamp.json_values.json_value`)."""
    return [{k: json_value(v) for k, v in row.items()} for row in table.to_pylist()]


def _size(nbytes: int) -> str:
    return f"{nbytes / (1 << 30):g} GiB" if nbytes >= 1 << 30 else f"{nbytes >> 20} MiB"


def _memory_hit(limits: QueryLimits) -> QueryError:
    return QueryError(
        f"the query needed more memory than its limit of {_size(limits.memory_bytes)} and was "
        "stopped (raise the limit with --memory or LLAMP_CYPHER_MEMORY, or ask for less: "
        "LIMIT, fewer hops, aggregate in the query)"
    )


def _time_hit(limits: QueryLimits) -> QueryError:
    return QueryError(
        f"the query ran longer than its time limit of {limits.timeout_s:g} s and was stopped "
        "(raise the limit with --timeout or LLAMP_CYPHER_TIMEOUT)"
    )


class _Worker:
    """One worker process: start, feed the request, collect stdout, relay stderr, enforce
    the time limit, translate how it ended."""

    def __init__(
        self, request: dict[str, Any], limits: QueryLimits, notify: Callable[[str], None]
    ) -> None:
        self.request = request
        self.limits = limits
        self.notify = notify
        self.started = threading.Event()
        self.error: dict[str, str] | None = None
        self.noise = ""  # the last line that was not the worker's own (a library's, a crash's)
        self.output = bytearray()

    def result(self) -> pa.Table:
        try:
            payload = json.dumps(self.request).encode()
        except (TypeError, ValueError) as err:
            raise QueryError(f"a parameter cannot be sent to the database: {err}") from None
        proc = subprocess.Popen(
            [sys.executable, "-m", "llamp.graphdb.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # Ctrl-C reaches the worker through this process only
        )
        readers = [
            threading.Thread(target=self._read_stdout, args=(proc.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(proc.stderr,), daemon=True),
        ]
        try:
            for reader in readers:
                reader.start()
            try:
                proc.stdin.write(payload)  # type: ignore[union-attr]
                proc.stdin.close()  # type: ignore[union-attr]
            except BrokenPipeError:
                pass  # it ended at once: its stderr says why
            timed_out = self._wait(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for reader in readers:
                reader.join(timeout=10)
        if timed_out:
            raise _time_hit(self.limits)
        return self._outcome(proc.returncode)

    def _wait(self, proc: subprocess.Popen) -> bool:
        """Wait for the worker; True if it was killed for running past the time limit."""
        while not self.started.wait(0.1):
            if proc.poll() is not None:
                return False
        deadline = time.monotonic() + self.limits.timeout_s + GRACE_S
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return True
        return False

    def _read_stdout(self, stream: Any) -> None:
        while chunk := stream.read(1 << 20):
            self.output += chunk

    def _read_stderr(self, stream: Any) -> None:
        for raw in stream:
            line = raw.decode("utf-8", errors="backslashreplace").strip()
            try:
                item = json.loads(line)
            except ValueError:
                item = None
            if not isinstance(item, dict):
                self.noise = line or self.noise  # a library's warning, or why it crashed
                continue
            if item.get("started"):
                self.started.set()
            elif "note" in item:
                self.notify(str(item["note"]))
            elif "error" in item:
                self.error = {"kind": str(item.get("kind")), "message": str(item["error"])}

    def _outcome(self, code: int) -> pa.Table:
        error = self.error or {}
        kind, text = error.get("kind", ""), error.get("message", self.noise)
        if code == 0 and not kind:
            try:
                return pa.ipc.open_stream(bytes(self.output)).read_all()
            except (pa.ArrowInvalid, OSError) as err:
                raise StoreError(f"the query's result could not be read back: {err}") from None
        if kind == "input":
            raise QueryError(text)
        if kind == "store":
            raise StoreError(text)
        if kind == "memory" or code == -signal.SIGKILL:
            raise _memory_hit(self.limits)
        if kind == "time":
            raise _time_hit(self.limits)
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            raise QueryError(
                f"the database engine crashed on this query ({name}); nothing was changed "
                f"(simplify the query, or report it if it is an ordinary read){_detail(text)}"
            )
        raise StoreError(f"the query worker failed (exit {code}){_detail(text)}")


def _detail(text: str) -> str:
    return f": {quote(text, 200)}" if text else ""


# --------------------------------------------------------------------------- the worker
def _emit(**item: Any) -> None:
    sys.stderr.write(json.dumps(item) + "\n")
    sys.stderr.flush()


def _limit_address_space(memory_bytes: int) -> None:
    """``RLIMIT_AS`` at what this process maps now plus ``memory_bytes`` (Linux; elsewhere
    only the time limit and the buffer pool hold)."""
    import resource

    try:
        with open("/proc/self/status") as status:
            mapped = int(re.search(r"VmSize:\s+(\d+)", status.read()).group(1)) << 10  # type: ignore[union-attr]
    except (OSError, AttributeError, ValueError):
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = mapped + memory_bytes
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _to_arrow(frame: Any) -> pa.Table:
    """A result frame as an Arrow table; a column Arrow cannot type (mixed values, Neo4j
    nodes) goes as its :func:`~llamp.json_values.json_value` form, or as JSON text."""
    columns = {}
    for position, name in enumerate(frame.columns):
        values = frame.iloc[:, position].tolist()
        try:
            columns[str(name)] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
            plain = [json_value(v) for v in values]
            try:
                columns[str(name)] = pa.array(plain)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                columns[str(name)] = pa.array(
                    [None if v is None else json.dumps(v, default=str) for v in plain]
                )
    return pa.table(columns)


def _classify(err: BaseException) -> str:
    text = str(err)
    if isinstance(err, MemoryError) or _MEMORY_ERRORS.search(text):
        return "memory"
    if _TIMEOUT_ERRORS.search(text):
        return "time"
    if isinstance(err, InputError):
        return "input"
    return "store" if isinstance(err, LlampError) else "internal"


def _serve(request: dict[str, Any]) -> pa.Table:
    memory = int(request["memory_bytes"])
    if not os.environ.get("LLAMP_STORE_BUFFER_POOL"):
        os.environ["LLAMP_STORE_BUFFER_POOL"] = str(max(64 << 20, memory // 2))
    from llamp.graphdb.store import open_store

    write = bool(request.get("write"))
    store = open_store(
        request.get("store"), read_only=not write, notify=lambda text: _emit(note=text)
    )
    with store:
        store.limit_query_time(float(request["timeout_s"]))
        _limit_address_space(memory)
        _emit(started=True)
        if request.get("catalogue"):
            frame = store.run_query(request["catalogue"], request["run"], **request["params"])
        else:
            frame = store.query(request["cypher"], request["params"], write=write)
        return _to_arrow(frame)


def main() -> int:
    """The worker: one request on stdin, the result on stdout (see the module doc)."""
    try:
        request = json.loads(sys.stdin.buffer.read())
        table = _serve(request)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        result = sink.getvalue()
    except BaseException as err:  # noqa: BLE001 - every end is reported, as one line
        if isinstance(err, SystemExit):
            raise
        _emit(error=tidy(f"{err}" or type(err).__name__), kind=_classify(err))
        return REPORTED
    try:
        sys.stdout.buffer.write(memoryview(result))
        sys.stdout.flush()
    except BrokenPipeError:
        return REPORTED
    return 0


__all__ = ["GRACE_S", "check_params", "plain_rows", "run_query"]

if __name__ == "__main__":
    sys.exit(main())
