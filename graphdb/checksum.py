"""The content checksum of a stored run: taken when the run is stored, checked when it is read
back, so a flipped bit in the database files is a refusal, never a changed number.

What it covers: the Run node's sizes and flags and its metadata text (with the CPU/NIC
columns it holds), every vertex column in vertex order (``rank, kind, cost_ns, size, peer,
tag``, ``t_trace_ns`` and ``label`` when the run has them), and the edges as a multiset
(the store returns a run's edges in no fixed order, so each edge ``(src, dst, kind)`` is
mixed into 128 bits and the mixes summed modulo 2^64 twice over; a changed edge changes the
sums but for a chance of 2^-64). Vertex columns are hashed with BLAKE2b in chunks widened to
64 bits, so the stored and the read-back graph agree whatever integer widths each uses.
Cost: one pass over the arrays, in chunks of 2^20 elements (bounded extra memory).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from llamp.graph import ExecutionGraph

#: The name of the checksum scheme, stored before the digest (``"llamp1:<hex>"``).
SCHEME = "llamp1"
#: Elements hashed per step (bounded temporary memory).
_CHUNK = 1 << 20
_VERTEX_COLUMNS = ("rank", "kind", "cost_ns", "size", "peer", "tag", "t_trace_ns")
_HEADER_FIELDS = ("ranks", "vertices", "edges", "messages", "bytes", "has_t_trace", "has_label")
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_SALTS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD6E8FEB86659FD93))


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, in place on a uint64 array."""
    x ^= x >> np.uint64(30)
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def _wide(values: np.ndarray) -> np.ndarray:
    """A chunk as 64-bit values: integers and booleans as int64, floats as float64."""
    if values.dtype.kind == "f":
        return np.ascontiguousarray(values, dtype=np.float64)
    return np.ascontiguousarray(values, dtype=np.int64)


def _edge_sums(graph: ExecutionGraph) -> bytes:
    sums = [0, 0]
    for lo in range(0, graph.num_edges, _CHUNK):
        hi = min(lo + _CHUNK, graph.num_edges)
        src = graph.edge_src[lo:hi].astype(np.uint64)
        dst = graph.edge_dst[lo:hi].astype(np.uint64)
        kind = graph.edge_kind[lo:hi].astype(np.uint64)
        for i, salt in enumerate(_SALTS):
            h = _mix(src + salt)
            h ^= dst
            h = _mix(h)
            h ^= kind
            sums[i] = (sums[i] + int(_mix(h).sum(dtype=np.uint64))) % (1 << 64)
    return b"".join(s.to_bytes(8, "little") for s in sums)


def run_checksum(graph: ExecutionGraph, header: dict[str, Any], meta_text: str) -> str:
    """The checksum of a run: ``graph``'s arrays, the Run node's ``header`` fields (sizes and
    flags) and its metadata as stored (``meta_text``, without the checksum itself)."""
    digest = hashlib.blake2b(digest_size=20)
    head = {
        k: (bool(header[k]) if k.startswith("has_") else int(header[k])) for k in _HEADER_FIELDS
    }
    digest.update(json.dumps(head, sort_keys=True).encode())
    digest.update(meta_text.encode())
    n = graph.num_vertices
    for name in _VERTEX_COLUMNS:
        column = getattr(graph, name)
        if column is None:
            continue
        digest.update(name.encode())
        for lo in range(0, n, _CHUNK):
            digest.update(memoryview(_wide(column[lo : lo + _CHUNK])).cast("B"))
    if graph.label is not None:
        digest.update(b"label")
        for lo in range(0, n, _CHUNK):
            text = "\0".join("" if v is None else str(v) for v in graph.label[lo : lo + _CHUNK])
            digest.update(text.encode("utf-8", errors="surrogatepass") + b"\1")
    digest.update(b"edges")
    digest.update(_edge_sums(graph))
    return f"{SCHEME}:{digest.hexdigest()}"


__all__ = ["SCHEME", "run_checksum"]
