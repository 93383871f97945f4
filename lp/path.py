"""The critical path (LLAMP §II-B): its vertices, messages and where its time goes.

Along the path, every event edge contributes ``const + cL·L + cG·G + co·o``; summing the four
terms separately splits ``T`` exactly into compute, latency, bandwidth and overhead time. Each
contribution is charged to the rank of the edge's destination vertex (a message to the
receiver, an analytic collective's cost to the member it releases). Besides the path, :func:`rank_time_split` splits each rank's own timeline into
compute, overhead and the time it spends blocked in communication.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from llamp.graph import CALC, RECV, SEND, ExecutionGraph
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
        }


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
    return CriticalPath(
        params=params, runtime_ns=T, vertices=vertex, messages=messages, split=split
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
