"""Small hand-written execution graphs, described op by op, for tests that read like the paper."""

from __future__ import annotations

from typing import Any

from llamp.graph import CALC, COLL, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph

#: The LLAMP paper's model: resource orders by static rules over the program order and the
#: RTS/CTS/data rendezvous (3 L per message). The default is LogGOPSim's schedule order with its
#: rendezvous (docs/model.md); tests of the paper's equations and worked examples, of the
#: handshake's formulas and of the program order's own rules pass this explicitly
#: (``LogGPS(..., **PAPER_MODEL)``, ``build_event_graph(..., **PAPER_MODEL)``).
PAPER_MODEL = {"order": "program", "rendezvous": "handshake"}

_KINDS = {"calc": CALC, "send": SEND, "recv": RECV, "coll": COLL}
_EDGES = {"requires": REQUIRES, "irequires": IREQUIRES, "message": MESSAGE}


def build(
    num_ranks: int,
    vertices: dict[str, tuple],
    edges: list[tuple[str, str, str]],
    meta: dict[str, Any] | None = None,
) -> tuple[ExecutionGraph, dict[str, int]]:
    """``vertices``: name → (rank, "calc", cost_ns) or (rank, "send"/"recv"/"coll", size,
    peer[, tag]) (a coll's peer is its root, its tag the instance, its terms in ``meta``).

    ``edges``: (a, "requires"|"irequires"|"message", b). Vertices must be listed rank by rank.
    Returns the graph and the name → vertex id map.
    """
    ids = {name: i for i, name in enumerate(vertices)}
    cols: dict[str, list] = {k: [] for k in ("rank", "kind", "cost_ns", "size", "peer", "tag")}
    for spec in vertices.values():
        rank, kind = spec[0], _KINDS[spec[1]]
        cols["rank"].append(rank)
        cols["kind"].append(kind)
        if kind == CALC:
            cols["cost_ns"].append(spec[2])
            cols["size"].append(0)
            cols["peer"].append(0)
            cols["tag"].append(0)
        else:
            cols["cost_ns"].append(0.0)
            cols["size"].append(spec[2])
            cols["peer"].append(spec[3])
            cols["tag"].append(spec[4] if len(spec) > 4 else 0)
    graph = ExecutionGraph.from_arrays(
        num_ranks,
        **cols,
        edge_src=[ids[a] for a, _, _ in edges],
        edge_dst=[ids[b] for _, _, b in edges],
        edge_kind=[_EDGES[k] for _, k, _ in edges],
        label=list(vertices),
        meta={"name": "hand", **(meta or {})},
    )
    return graph, ids


def paper_example() -> ExecutionGraph:
    """LLAMP Fig. 4(c): rank 0 c0 → S → c1, rank 1 c2 → R → c3; s = 4 B.

    Costs ``c0 = 0.1 µs, c1 = 1 µs, c2 = 0.5 µs, c3 = 1 µs``; with ``o = 0``, ``G = 5 ns/B``:
    ``T(L) = max(1.1, max(L + 0.115, 0.5) + 1)`` µs (Eq. 5).
    """
    graph, _ = build(
        2,
        {
            "c0": (0, "calc", 100.0),
            "S": (0, "send", 4, 1),
            "c1": (0, "calc", 1000.0),
            "c2": (1, "calc", 500.0),
            "R": (1, "recv", 4, 0),
            "c3": (1, "calc", 1000.0),
        },
        [
            ("c0", "requires", "S"),
            ("S", "requires", "c1"),
            ("c2", "requires", "R"),
            ("R", "requires", "c3"),
            ("S", "message", "R"),
        ],
    )
    return graph
