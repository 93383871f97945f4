"""Measured per-message CPU costs: the send and receive overheads the calibration's ping-pong
measured at each size, charged in the model as CPU time (``llamp validate --overheads measured``).

Why. LogGPS charges a message ``o`` of CPU at each end and moves its bytes on a wire at ``G``
per byte, which overlaps computation. On a shared-memory transport there is no wire: the bytes
move by CPU copies inside MPI calls. Open MPI's ``vader`` copies an eager message into a shared
FIFO inside ``MPI_Send``/``MPI_Isend`` and out of it inside the call that completes the
receive; a message above its eager limit (4 KiB) is read by the receiver with one
``process_vm_readv`` inside the completing call. A message's cost is then CPU time that grows
with its size and is paid inside the calls: PLogP's size-dependent overheads ``o_s(m)`` and
``o_r(m)`` (Kielmann et al., "Fast measurement of LogP parameters for message passing
platforms", IPDPS 2000). ``llamp calibrate`` measures both per size (``pingpong.c``: ``o_s``
the duration of ``MPI_Send`` while the receiver waits, ``o_r`` that of ``MPI_Recv`` of a
message that arrived long before). benchmarks/VALIDATION.md §The offset at ΔL = 0 shows the
experiment: on the 8 KiB halo exchange the completing ``MPI_Waitall`` spends 7–9 µs per
iteration (o_r(8 KiB) ≈ 3.6 µs per message) that the fit's ``o`` of ~150 ns does not charge.

How they enter the model (:meth:`MessageCosts.charge`). Per message of ``m`` bytes, the excess
over ``o`` of the overhead measured at ``m`` (piecewise linear between the measured sizes,
extended by the last segment beyond the largest, never below 0), as CPU time in a calc:

- receive: ``o_r(m) − o`` in the first calc that requires the receive (the code after the call
  that completed it, or the join of a collective's next round);
- send: ``o_s(m) − o`` for an eager message (``m ≤ S``, the calibration's switch), in the
  last calc the send requires (the code before the call that started it). A rendezvous
  ``MPI_Send`` blocks while the receiver reads, so its measured duration is not the sender's
  CPU, and nothing is charged.

Calcs are constants: every engine stays exact, every analysis keeps its meaning, and ``o``
stays the per-message overhead the analyses vary (``λ_o`` counts it as before).

The wire (:meth:`MessageCosts.wire`). With the overheads charged as CPU, the ping-pong's
one-way time less the two overheads is what is left for the wire: ``y(m) − o_s(m) − o_r(m)``
over the eager sizes, fitted by least squares to ``L + (m − 1)·G`` (each clamped at 0). On
shared memory nothing is left (the copies are the transfer: L = G = 0); on a network with a
NIC it is the NIC's latency and bandwidth. The validation predicts with these ``L`` and ``G``
under measured overheads: the calibration's ``G`` would count the copies a second time, on a
wire that overlaps computation.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from llamp.errors import InputError
from llamp.graph import CALC, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.injector.calibrate import NO_SWITCH_S

#: ``--overheads``: ``model`` charges LogGPS's ``o`` per message end only; ``measured`` adds
#: the calibration's per-size overheads as CPU time (this module).
OVERHEAD_MODELS = ("model", "measured")


@dataclass(frozen=True)
class MessageCosts:
    """Per-size overheads from a ping-pong (ns) and the fit they are charged against."""

    sizes: tuple[int, ...]  # ascending, bytes
    send_ns: tuple[float, ...]  # o_s(m): MPI_Send while the receiver waits
    recv_ns: tuple[float, ...]  # o_r(m): MPI_Recv of a message that arrived long before
    one_way_ns: tuple[float, ...]  # half the round trip
    o_ns: float  # the fit's o, which the model charges per message end anyway
    eager_limit: int | None  # the calibration's S; None: every message eager

    def __post_init__(self) -> None:
        n = len(self.sizes)
        if n < 2:
            raise InputError(f"measured overheads need at least 2 message sizes, got {n}")
        if any(len(c) != n for c in (self.send_ns, self.recv_ns, self.one_way_ns)):
            raise InputError("measured overheads: one send, receive and one-way time per size")
        if any(b <= a for a, b in zip(self.sizes, self.sizes[1:], strict=False)):
            raise InputError("measured overheads: message sizes must be ascending and distinct")
        values = (*self.send_ns, *self.recv_ns, *self.one_way_ns, self.o_ns)
        if not all(math.isfinite(v) and v >= 0 for v in values):
            raise InputError("measured overheads must be finite and ≥ 0 ns")

    @classmethod
    def from_calibration(cls, fit) -> MessageCosts:
        """From a :class:`llamp.injector.calibrate.Calibration`."""
        pts = sorted(fit.samples, key=lambda s: s.size)
        return cls(
            sizes=tuple(int(p.size) for p in pts),
            send_ns=tuple(float(p.os_ns) for p in pts),
            recv_ns=tuple(float(p.or_ns) for p in pts),
            one_way_ns=tuple(float(p.one_way_ns) for p in pts),
            o_ns=float(fit.o_ns),
            eager_limit=None if fit.S_bytes is None else int(fit.S_bytes),
        )

    @classmethod
    def from_record(cls, record: Mapping[str, Any], *, what: str = "calibration") -> MessageCosts:
        """From a calibration's ``as_dict()`` (a validation run's ``calibration.json``, a network
        profile's details with ``o_ns`` and ``S_bytes``); ``what`` names it in errors."""
        rows = record.get("residuals")
        if not isinstance(rows, list) or not rows:
            raise InputError(f"{what}: no per-size ping-pong times (calibrate it again)")
        try:
            rows = sorted(rows, key=lambda r: int(r["size_bytes"]))
            S = record.get("S_bytes")
            return cls(
                sizes=tuple(int(r["size_bytes"]) for r in rows),
                send_ns=tuple(float(r["os_ns"]) for r in rows),
                recv_ns=tuple(float(r["or_ns"]) for r in rows),
                one_way_ns=tuple(float(r["one_way_ns"]) for r in rows),
                o_ns=float(record["o_ns"]),
                eager_limit=None if S is None else int(S),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise InputError(
                f"{what}: per-size ping-pong times without send and receive overheads ({err})"
            ) from err

    @classmethod
    def from_profile(cls, profile) -> MessageCosts:
        """From a network profile saved by ``llamp calibrate --save NAME``."""
        details = profile.details if isinstance(profile.details, dict) else {}
        S = profile.params.S
        record = dict(details) | {
            "o_ns": profile.params.o,
            "S_bytes": None if S >= NO_SWITCH_S else S,
        }
        return cls.from_record(record, what=f"network profile {profile.name!r}")

    # ------------------------------------------------------------------ per size
    def _at(self, values: Sequence[float], sizes: np.ndarray) -> np.ndarray:
        x = np.asarray(self.sizes, dtype=np.float64)
        y = np.asarray(values, dtype=np.float64)
        m = np.asarray(sizes, dtype=np.float64)
        out = np.interp(m, x, y)
        above = m > x[-1]
        if above.any():
            slope = (y[-1] - y[-2]) / (x[-1] - x[-2])
            out[above] = y[-1] + slope * (m[above] - x[-1])
        return np.maximum(out, 0.0)

    def send_extra(self, sizes: np.ndarray) -> np.ndarray:
        """CPU charged per sent message beyond ``o`` (0 for rendezvous messages)."""
        m = np.asarray(sizes, dtype=np.float64)
        extra = np.maximum(self._at(self.send_ns, m) - self.o_ns, 0.0)
        if self.eager_limit is not None:
            extra[m > self.eager_limit] = 0.0
        return extra

    def recv_extra(self, sizes: np.ndarray) -> np.ndarray:
        """CPU charged per received message beyond ``o``."""
        return np.maximum(self._at(self.recv_ns, sizes) - self.o_ns, 0.0)

    def wire(self) -> tuple[float, float]:
        """``(L, G)`` of what the one-way time leaves after both overheads (module doc), over
        the eager sizes; each clamped at 0."""
        x = np.asarray(self.sizes, dtype=np.float64)
        left = np.asarray(self.one_way_ns) - np.asarray(self.send_ns) - np.asarray(self.recv_ns)
        eager = x <= (self.eager_limit if self.eager_limit is not None else np.inf)
        if eager.sum() < 2:
            eager[:] = True
        G, L = np.polyfit(x[eager] - 1.0, left[eager], 1)
        return max(float(L), 0.0), max(float(G), 0.0)

    # ------------------------------------------------------------------ the charge
    def charge(self, graph: ExecutionGraph) -> ExecutionGraph:
        """``graph`` with the extras of every message in calcs (module doc; a new graph, the
        original untouched). ``meta["message_costs"]`` says how much went where, and how many
        messages had no calc to carry it (a receive nothing but a send requires, say)."""
        cost = np.array(graph.cost_ns, dtype=np.float64, copy=True)
        kind = graph.kind
        src = np.asarray(graph.edge_src, dtype=np.int64)
        dst = np.asarray(graph.edge_dst, dtype=np.int64)
        requires = graph.edge_kind == REQUIRES
        none = np.iinfo(np.int64).max

        after = requires & (kind[src] == RECV) & (kind[dst] == CALC)
        first = np.full(graph.num_vertices, none, np.int64)
        np.minimum.at(first, src[after], dst[after])
        recvs = np.flatnonzero(kind == RECV)
        r_extra = self.recv_extra(graph.size[recvs])
        r_home = first[recvs]
        r_ok = (r_home != none) & (r_extra > 0)
        np.add.at(cost, r_home[r_ok], r_extra[r_ok])

        before = requires & (kind[src] == CALC) & (kind[dst] == SEND)
        last = np.full(graph.num_vertices, -1, np.int64)
        np.maximum.at(last, dst[before], src[before])
        sends = np.flatnonzero(kind == SEND)
        s_extra = self.send_extra(graph.size[sends])
        s_home = last[sends]
        s_ok = (s_home >= 0) & (s_extra > 0)
        np.add.at(cost, s_home[s_ok], s_extra[s_ok])

        record = {
            "recv_charged": int(r_ok.sum()),
            "recv_ns": float(r_extra[r_ok].sum()),
            "recv_uncharged": int(((r_home == none) & (r_extra > 0)).sum()),
            "send_charged": int(s_ok.sum()),
            "send_ns": float(s_extra[s_ok].sum()),
            "send_uncharged": int(((s_home < 0) & (s_extra > 0)).sum()),
        }
        meta = dict(graph.meta) | {"message_costs": record}
        return dataclasses.replace(graph, cost_ns=cost, meta=meta, source=None)

    def describe(self) -> str:
        """One line: what is charged, e.g. for a report's parameter list."""
        L, G = self.wire()
        limit = "every message eager" if self.eager_limit is None else f"S = {self.eager_limit} B"
        return (
            f"measured overheads o_s(m), o_r(m) at {len(self.sizes)} sizes "
            f"({self.sizes[0]}–{self.sizes[-1]} B, {limit}) charged beyond o = "
            f"{self.o_ns:.0f} ns as CPU; wire L = {L:.0f} ns, G = {G:.4g} ns/B"
        )
