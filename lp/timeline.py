"""The schedule as a Chrome/Perfetto trace (JSON trace-event format), the critical path marked.

Each rank is one track (``pid`` 0, ``tid`` = rank, named ``rank N``); each vertex a complete
slice (``"ph": "X"``) from its earliest start to its finish under the configuration, timestamps
and durations in microseconds as the format requires (``displayTimeUnit`` ns keeps the
nanoseconds visible). Slices on a critical path are in category ``critical``, the others in
``slack``; their ``args`` give the vertex, size, peer, tag, label and slack in ns. Messages on
the critical path are flow arrows (``"ph": "s"``/``"f"``) from the send slice to the receive
slice. Perfetto (ui.perfetto.dev) and ``chrome://tracing`` open the file as it is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from llamp.errors import InputError
from llamp.graph import CALC, COLL, RECV, SEND, ExecutionGraph
from llamp.params import LogGPS

#: Slice names by vertex kind.
KIND_NAMES = {CALC: "calc", SEND: "send", RECV: "recv", COLL: "coll"}
#: More slices than this need ``critical_only`` (or a subgraph): a viewer holds each slice in
#: memory, and ui.perfetto.dev slows down past a few million.
MAX_SLICES = 2_000_000


@dataclass(frozen=True)
class TimelineSummary:
    """What :func:`write_timeline` wrote."""

    slices: int
    flows: int
    ranks: int
    runtime_ns: float
    critical_only: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "slices": self.slices,
            "flows": self.flows,
            "ranks": self.ranks,
            "runtime_ns": self.runtime_ns,
            "critical_only": self.critical_only,
        }


def _us(ns: float) -> float:
    return round(float(ns) / 1e3, 6)  # µs with ps resolution: stable, short text


def _num(value: float) -> str:
    """A JSON number (non-finite values, which JSON lacks, as null)."""
    return repr(value) if math.isfinite(value) else "null"


def _line(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"))


def _events(
    graph: ExecutionGraph, params: LogGPS, critical_only: bool, stats: dict[str, Any]
) -> Iterator[str]:
    """Every event as one line of JSON: the track names, the slices, the critical messages."""
    from llamp.lp import critical_path, evaluate

    ev = evaluate(graph, params)
    stats["runtime_ns"] = ev.runtime_ns
    meta = {"ph": "M", "pid": 0}
    yield _line(meta | {"tid": 0, "name": "process_name", "args": {"name": f"llamp: {graph.name}"}})
    for rank in range(graph.num_ranks):
        yield _line(meta | {"tid": rank, "name": "thread_name", "args": {"name": f"rank {rank}"}})
        yield _line(meta | {"tid": rank, "name": "thread_sort_index", "args": {"sort_index": rank}})
    chosen = np.flatnonzero(ev.critical) if critical_only else np.arange(graph.num_vertices)
    order = chosen[np.lexsort((ev.start_ns[chosen], graph.rank[chosen]))]
    # One f-string per slice from columns turned into Python lists once: several times faster
    # than a dict and json.dumps per slice (bench_compare).
    start = ev.start_ns[order]
    columns = zip(
        order.tolist(),
        graph.rank[order].tolist(),
        graph.kind[order].tolist(),
        np.round(start / 1e3, 6).tolist(),
        np.round(np.maximum(ev.finish_ns[order] - start, 0.0) / 1e3, 6).tolist(),
        ev.critical[order].tolist(),
        ev.slack_ns[order].tolist(),
        graph.cost_ns[order].tolist(),
        graph.size[order].tolist(),
        graph.peer[order].tolist(),
        graph.tag[order].tolist(),
        strict=True,
    )
    labels = graph.label
    for v, rank, kind, ts, dur, critical, slack, cost, size, peer, tag in columns:
        if kind == CALC:
            args = f'"cost_ns":{_num(cost)}'
        else:
            args = f'"size":{size},"peer":{peer},"tag":{tag}'
        if labels is not None:
            args += f',"label":{json.dumps(str(labels[v]))}'
        cat = "critical" if critical else "slack"
        yield (
            f'{{"ph":"X","pid":0,"tid":{rank},"ts":{_num(ts)},"dur":{_num(dur)},'
            f'"name":"{KIND_NAMES.get(kind, "op")}","cat":"{cat}",'
            f'"args":{{"vertex":{v},"slack_ns":{_num(slack)},{args}}}}}'
        )
    stats["slices"] = int(order.size)
    messages = critical_path(graph, params).messages
    for i, (s, r) in enumerate(messages.tolist()):
        flow = {"pid": 0, "name": "message", "cat": "critical", "id": i}
        yield _line(flow | {"ph": "s", "tid": int(graph.rank[s]), "ts": _us(ev.start_ns[s])})
        yield _line(
            flow | {"ph": "f", "bp": "e", "tid": int(graph.rank[r]), "ts": _us(ev.finish_ns[r])}
        )
    stats["flows"] = len(messages)


def write_timeline(
    graph: ExecutionGraph,
    params: LogGPS,
    out: IO[str],
    *,
    critical_only: bool = False,
    max_slices: int = MAX_SLICES,
    progress: Callable[[int], None] | None = None,
) -> TimelineSummary:
    """Write the trace-event JSON of ``graph`` at ``params`` to the text stream ``out``.

    ``critical_only``: only the vertices on a critical path. More than ``max_slices`` slices is
    an :class:`InputError` (checked before anything is written). ``progress(events)`` is called
    every 100 000 events.
    """
    if not critical_only and graph.num_vertices > max_slices:
        raise InputError(
            f"{graph.name}: {graph.num_vertices:,} vertices is more than {max_slices:,} slices "
            "a trace viewer handles well; export only the critical path or select ranks or a "
            "time window"
        )
    stats: dict[str, Any] = {}
    out.write('{"displayTimeUnit": "ns", "otherData": ')
    out.write(
        json.dumps(
            {"generator": "llamp", "run": graph.name, "params": params.as_dict()},
            sort_keys=True,
        )
    )
    out.write(', "traceEvents": [\n')
    for n, event in enumerate(_events(graph, params, critical_only, stats)):
        if n:
            out.write(",\n")
        out.write(event)
        if progress and n and n % 100_000 == 0:
            progress(n)
    out.write("\n]}\n")
    if stats["slices"] > max_slices:  # critical only, and still too many: say so, keep the file
        raise InputError(
            f"{graph.name}: the critical path has {stats['slices']:,} vertices, more than "
            f"{max_slices:,}; select ranks or a time window"
        )
    return TimelineSummary(
        slices=stats["slices"],
        flows=stats["flows"],
        ranks=graph.num_ranks,
        runtime_ns=stats["runtime_ns"],
        critical_only=critical_only,
    )


def timeline_json(graph: ExecutionGraph, params: LogGPS, *, critical_only: bool = False) -> str:
    """:func:`write_timeline` into a string (for a download button)."""
    import io

    buffer = io.StringIO()
    write_timeline(graph, params, buffer, critical_only=critical_only)
    return buffer.getvalue()


def save_timeline(
    graph: ExecutionGraph, params: LogGPS, path: Path, *, critical_only: bool = False
) -> TimelineSummary:
    """:func:`write_timeline` into ``path``, written to a temporary file and renamed, so a
    failure leaves no half-written trace."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            summary = write_timeline(graph, params, out, critical_only=critical_only)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return summary


__all__ = ["MAX_SLICES", "TimelineSummary", "save_timeline", "timeline_json", "write_timeline"]
