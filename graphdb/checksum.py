"""The content checksum of a stored run: taken when the run is stored, checked when it is read
back, so a flipped bit in the database files is a refusal, never a changed number.

What it covers: the Run node's sizes and flags and its metadata text (with the CPU/NIC
columns it holds), every vertex column in vertex order (``rank, kind, cost_ns, size, peer,
tag``, ``t_trace_ns`` and ``label`` when the run has them), and the edges as a multiset
(the store returns a run's edges in no fixed order, so each edge ``(src, dst, kind)`` is
mixed (SplitMix64, twice with two salts) and the mixes summed modulo 2^64, in one compiled
pass; a changed edge changes the
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
from llamp.kernel import kernel

#: The name of the checksum scheme, stored before the digest (``"llamp1:<hex>"``).
SCHEME = "llamp1"
#: Elements hashed per step (bounded temporary memory).
_CHUNK = 1 << 20
_VERTEX_COLUMNS = ("rank", "kind", "cost_ns", "size", "peer", "tag", "t_trace_ns")
_HEADER_FIELDS = ("ranks", "vertices", "edges", "messages", "bytes", "has_t_trace", "has_label")
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_SALT1 = np.uint64(0x9E3779B97F4A7C15)
_SALT2 = np.uint64(0xD6E8FEB86659FD93)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


@kernel(nogil=True, inline="always")
def _mix(x: np.uint64) -> np.uint64:
    """SplitMix64's finaliser."""
    x = (x ^ (x >> _S30)) * _M1
    x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


@kernel(nogil=True)
def _edge_sums_kernel(src: np.ndarray, dst: np.ndarray, kind: np.ndarray) -> tuple:
    """Two sums modulo 2^64 of a mix of each edge ``(src, dst, kind)``: order-free."""
    first = np.uint64(0)
    second = np.uint64(0)
    for i in range(src.shape[0]):
        a = np.uint64(src[i])
        b = np.uint64(dst[i])
        c = np.uint64(kind[i])
        first += _mix(_mix(_mix(a + _SALT1) ^ b) ^ c)
        second += _mix(_mix(_mix(a + _SALT2) ^ b) ^ c)
    return first, second


def _wide(values: np.ndarray) -> np.ndarray:
    """A chunk as 64-bit values: integers and booleans as int64, floats as float64."""
    if values.dtype.kind == "f":
        return np.ascontiguousarray(values, dtype=np.float64)
    return np.ascontiguousarray(values, dtype=np.int64)


def _edge_sums(graph: ExecutionGraph) -> bytes:
    first, second = _edge_sums_kernel(
        np.asarray(graph.edge_src), np.asarray(graph.edge_dst), np.asarray(graph.edge_kind)
    )
    return int(first).to_bytes(8, "little") + int(second).to_bytes(8, "little")


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
