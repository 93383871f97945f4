"""The critical path (LLAMP §II-B): its vertices, messages and where its time goes.

Along the path, every event edge contributes ``const + cL·L + cG·G + co·o``; summing the four
terms separately splits ``T`` exactly into compute, latency, bandwidth and overhead time. Each
contribution is charged to the rank of the edge's destination vertex (a message to the
receiver, an analytic collective's cost to the member it releases). Besides the path, :func:`rank_time_split` splits each rank's own timeline into
compute, overhead and the time it spends blocked in communication.

On a GPU run (a graph whose ranks are DAGs of streams, ``meta["gpu_streams"]``), the path's
time is also split per *stream*, the ``(rank, cpu)`` of each edge's destination vertex
(:class:`StreamSplit`): *compute* is the cost of the calcs the trace gave (kernels, host and
memory operations), *exposed communication* everything else the path pays — latency,
bandwidth, overheads and the per-hop cost of the NCCL protocol (the join calcs of a
collective's rounds: calcs whose every dependency is a collective's send or receive). The two
sum to ``T``: the communication the schedule does not hide behind compute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from llamp.config import COLL_TAG_BASE
from llamp.graph import CALC, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.lp.engine import Evaluation, engine_for
from llamp.lp.event_graph import COEF_G, COEF_GAP, COEF_L, COEF_O, CONST
from llamp.params import LogGPS


@dataclass(frozen=True, eq=False)
class CriticalPath:
    """One critical path (ties broken toward more messages) and its time split.

    ``vertices``: vertex ids in path order. ``messages``: ``(send, recv)`` vertex pairs in path
    order. ``split``: per rank, ns of ``compute``, ``overhead``, ``latency``, ``bandwidth`` on
    the path; the columns sum to ``runtime_ns``.
    """

    params: LogGPS
    runtime_ns: float
    vertices: np.ndarray
    messages: np.ndarray
    split: pd.DataFrame = field(repr=False)
    streams: StreamSplit | None = None

    @property
    def totals(self) -> dict[str, float]:
        cols = ["compute_ns", "overhead_ns", "latency_ns", "bandwidth_ns"]
        return {c: float(self.split[c].sum()) for c in cols}

    def as_dict(self) -> dict[str, Any]:
        """The stable ``path --json`` shape."""
        return {
            "runtime_ns": self.runtime_ns,
            "vertices": [int(v) for v in self.vertices],
            "messages": [[int(s), int(r)] for s, r in self.messages],
            "num_messages": int(len(self.messages)),
            "totals": self.totals,
            "per_rank": self.split.to_dict(orient="records"),
            "params": self.params.as_dict(),
        } | ({"streams": self.streams.as_dict()} if self.streams is not None else {})


@dataclass(frozen=True, eq=False)
class StreamSplit:
    """The critical path of a GPU run per stream: compute and exposed communication (ns).

    ``per_stream``: ``rank``, ``cpu``, ``stream`` (what the cpu is: ``gpu``, ``host``, ``memory``,
    ``<process group> lane <l>`` on Chakra runs), ``compute_ns``, ``communication_ns`` and the latter's
    parts ``latency_ns``, ``bandwidth_ns``, ``overhead_ns``, ``protocol_ns`` (per-hop costs of
    collective rounds and analytic collectives), one row per stream the path passes through;
    ``compute_ns + communication_ns`` over all rows is ``T``."""

    runtime_ns: float
    compute_ns: float
    communication_ns: float
    per_stream: pd.DataFrame = field(repr=False)

    @property
    def exposed_fraction(self) -> float:
        return self.communication_ns / self.runtime_ns if self.runtime_ns > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "runtime_ns": self.runtime_ns,
            "compute_ns": self.compute_ns,
            "exposed_communication_ns": self.communication_ns,
            "exposed_fraction": self.exposed_fraction,
            "per_stream": self.per_stream.to_dict(orient="records"),
        }


def protocol_calcs(graph: ExecutionGraph) -> np.ndarray:
    """Calcs that are steps of an expanded collective: every ``requires`` edge into them comes
    from a send or receive with a collective tag (the join of a round of NCCL's expansion)."""
    src, dst = graph.edge_src, graph.edge_dst
    into_calc = (graph.edge_kind == REQUIRES) & (graph.kind[dst] == CALC)
    s, d = src[into_calc], dst[into_calc]
    coll_op = ((graph.kind[s] == SEND) | (graph.kind[s] == RECV)) & (graph.tag[s] >= COLL_TAG_BASE)
    has_in = np.zeros(graph.num_vertices, bool)
    has_in[d] = True
    other = np.zeros(graph.num_vertices, bool)
    other[d[~coll_op]] = True
    return has_in & ~other


def _stream_split(graph, dst_vertex, coef, params, T) -> StreamSplit:
    cpu = graph.streams("cpu")
    width = int(cpu.max()) + 1 if cpu.size else 1
    stream = graph.rank[dst_vertex].astype(np.int64) * width + cpu[dst_vertex]
    calc = graph.kind[dst_vertex] == CALC
    protocol = protocol_calcs(graph)[dst_vertex]
    const = coef[:, CONST]
    parts = {
        "compute_ns": np.where(calc & ~protocol, const, 0.0),
        "latency_ns": coef[:, COEF_L] * params.L,
        "bandwidth_ns": coef[:, COEF_G] * params.G + coef[:, COEF_GAP] * params.g,
        "overhead_ns": coef[:, COEF_O] * params.o,
        "protocol_ns": np.where(calc & ~protocol, 0.0, const),
    }
    keys, at = np.unique(stream, return_inverse=True)
    table = pd.DataFrame({"rank": keys // width, "cpu": keys % width})
    for name, values in parts.items():
        table[name] = np.bincount(at, weights=values, minlength=keys.size)
    comm = ["latency_ns", "bandwidth_ns", "overhead_ns", "protocol_ns"]
    table.insert(3, "communication_ns", table[comm].sum(axis=1))
    if graph.meta.get("format") == "chakra":
        from llamp.ingest.chakra import stream_name

        names = [
            stream_name(graph.meta, int(r), int(c))
            for r, c in zip(table["rank"], table["cpu"], strict=True)
        ]
    else:
        names = [f"cpu {int(c)}" for c in table["cpu"]]
    table.insert(2, "stream", names)
    table = table.sort_values(["rank", "cpu"], kind="stable").reset_index(drop=True)
    return StreamSplit(
        runtime_ns=T,
        compute_ns=float(table["compute_ns"].sum()),
        communication_ns=float(table["communication_ns"].sum()),
        per_stream=table,
    )


def critical_path(graph: ExecutionGraph, params: LogGPS) -> CriticalPath:
    """The critical path at θ = ``params`` (graph engine)."""
    ev, positions, edges, w = engine_for(graph).critical_events(params)
    vertex = ev.vertex_of_pos(positions)
    vertex = vertex[vertex >= 0]
    if vertex.size:
        keep = np.concatenate(([True], vertex[1:] != vertex[:-1]))
        vertex = vertex[keep]
    sends, recvs = graph.messages()
    # The messages whose latency the path pays (an edge that charges only a message's bytes,
    # a late receive or a NIC chain, is not a transfer).
    msg = ev.msg[edges]
    msg = msg[(msg >= 0) & (ev.coefficients(edges)[:, COEF_L] > 0)]
    if msg.size:
        msg = msg[np.concatenate(([True], msg[1:] != msg[:-1]))]
    messages = (
        np.stack([sends[msg], recvs[msg]], axis=1) if msg.size else np.zeros((0, 2), np.int64)
    )

    coef = ev.coefficients(edges)  # not ev.coef[edges]: that builds all E × 5 first
    # A handshake is charged to the receiver of its message; a collective's sync to the
    # member whose cost edge follows (the edge into the sync weighs 0).
    dst_vertex = ev.owner_of_pos(ev.dst_of(edges))
    ranks = graph.rank[dst_vertex] if dst_vertex.size else np.zeros(0, np.int32)
    parts = {
        "compute_ns": coef[:, CONST],
        "latency_ns": coef[:, COEF_L] * params.L,
        "bandwidth_ns": coef[:, COEF_G] * params.G + coef[:, COEF_GAP] * params.g,
        "overhead_ns": coef[:, COEF_O] * params.o,
    }
    split = pd.DataFrame({"rank": np.arange(graph.num_ranks, dtype=np.int64)})
    for name, values in parts.items():
        split[name] = np.bincount(ranks, weights=values, minlength=graph.num_ranks)
    split["messages_in"] = np.bincount(
        graph.rank[messages[:, 1]] if len(messages) else np.zeros(0, np.int64),
        minlength=graph.num_ranks,
    )
    T = float(w[edges].sum()) if edges.size else 0.0
    streams = (
        _stream_split(graph, dst_vertex, coef, params, T) if graph.meta.get("gpu_streams") else None
    )
    return CriticalPath(
        params=params,
        runtime_ns=T,
        vertices=vertex,
        messages=messages,
        split=split,
        streams=streams,
    )


def rank_time_split(graph: ExecutionGraph, evaluation: Evaluation) -> pd.DataFrame:
    """Per rank: its end time and the split into compute, overhead and blocked time (ns).

    ``overhead_ns`` counts one ``o`` per send and receive (the extra handshake overheads of
    rendezvous messages fall into ``blocked_ns``); ``blocked_ns`` = end − compute − overhead:
    time the rank waits for latency, bandwidth or late peers. ``on_path_ns`` is how much of the rank's vertices lie on a critical path.
    """
    p = evaluation.params
    ranks = np.arange(graph.num_ranks)
    calc = graph.kind == CALC
    comm = (graph.kind == SEND) | (graph.kind == RECV)
    end = np.zeros(graph.num_ranks)
    if graph.num_vertices:
        np.maximum.at(end, graph.rank, evaluation.finish_ns)
    compute = np.bincount(graph.rank[calc], weights=graph.cost_ns[calc], minlength=graph.num_ranks)
    overhead = p.o * np.bincount(graph.rank[comm], minlength=graph.num_ranks)
    crit = evaluation.critical
    on_path = np.bincount(
        graph.rank[crit & calc], weights=graph.cost_ns[crit & calc], minlength=graph.num_ranks
    )
    return pd.DataFrame(
        {
            "rank": ranks,
            "end_ns": end,
            "compute_ns": compute,
            "overhead_ns": overhead,
            "blocked_ns": np.maximum(end - compute - overhead, 0.0),
            "critical_compute_ns": on_path,
        }
    )
