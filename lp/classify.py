"""Application classification for a target network (Tong, Pakin, Lang & Yuan, "Fast
classification of MPI applications using Lamport's logical clocks", IPDPS 2016).

The paper classifies an application as computation-, load-imbalance-, bandwidth-, latency- or
communication-bound for an interconnect (BW, L) from the *trend* of predicted times over three
seven-point sets of configurations (§III-G): the **bandwidth** set (BW/8 … 8·BW at L), the
**latency** set (8·L … L/8 at BW) and the **combined** set ((BW/8, 8L) … (8BW, L/8)). For every
configuration it keeps four per-process counters (§III-A, §III-E): computation, wait, latency
and bandwidth time, where communication time overlapped with computation is not counted and
overlap removes latency before bandwidth (its Fig. 2).

Here each configuration is an exact graph-engine evaluation with ``L`` = the network latency and
``G = 8 / BW[Gb/s]`` ns/B (``o`` and ``S`` stay as configured; the paper's Hockney model has no
``o``: with ``o = 0`` the two coincide). The counters of rank ``r`` (:func:`rank_counters`) split
``[0, T]`` exactly:

- ``compute_ns``: time in the rank's calc vertices;
- ``overhead_ns``: CPU overhead of its sends and receives (one ``o`` each: a send's at its
  start, a receive's at its completion; LogGPS, not in the paper);
- the rest is **idle** time, split by what it was spent waiting for. An idle interval
  ``[a, b]`` ends when the rank can run again (a calc starts, a send is posted, a receive
  completes); the binding dependency chain of that event (ties toward more messages, as the
  critical path) is laid out on the time axis backwards from ``b``. Within a message edge the
  order is sender overhead, latency ``L`` terms, bandwidth ``(s−1)·G`` terms, receiver overhead.
  The part of ``[a, b]`` covered by the latency (bandwidth) terms of messages *arriving at
  rank r* (including a rendezvous' CTS and data legs; an analytic collective's cost counts as
  a message arriving at each member, latency terms first) is ``latency_ns`` (``bandwidth_ns``);
  everything else — the peer still computing, its own waits, its overheads, messages between
  other ranks, and the final wait for the slowest rank — is ``wait_ns``.

This reproduces the paper's Fig. 2: early receiver (receiver enters at 12, sender at 18 with 2
units of copy, 2 of latency, 10 of bandwidth: 8 wait, 2 latency, 10 bandwidth) and concurrent
sender/receiver (computation overlaps the latency first: 0 wait, 0 latency, 9 bandwidth).
The application's counters are the means over ranks; communication time = wait + latency +
bandwidth (§IV-C). Rules C1–C5 (§IV-C, thresholds there; all settable) are applied in order
and then again with the "sensitive" share (10 %) for C2–C5; the first that holds gives the
label, and every rule's verdict and numbers are kept (``Classification.rules``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from llamp.errors import InputError
from llamp.graph import CALC, COLL, RECV, SEND, ExecutionGraph
from llamp.kernel import kernel
from llamp.lp.engine import engine_for, slopes_at
from llamp.lp.event_graph import COEF_G, COEF_GAP, COEF_L, COEF_O
from llamp.params import LogGPS


# ------------------------------------------------------------------------------ networks
@dataclass(frozen=True)
class Network:
    """A target interconnect: bandwidth (Gb/s), latency (ns) and where the numbers come from."""

    name: str
    bandwidth_gbps: float
    latency_ns: float
    source: str = ""

    def __post_init__(self) -> None:
        if not (self.bandwidth_gbps > 0 and math.isfinite(self.bandwidth_gbps)):
            raise InputError(f"network bandwidth must be > 0 Gb/s, got {self.bandwidth_gbps!r}")
        if not (self.latency_ns >= 0 and math.isfinite(self.latency_ns)):
            raise InputError(f"network latency must be ≥ 0, got {self.latency_ns!r} ns")

    @property
    def gap_ns_per_byte(self) -> float:
        """``G = 8 / BW``: ns per byte at ``bandwidth_gbps`` Gb/s."""
        return 8.0 / self.bandwidth_gbps

    def params(self, base: LogGPS) -> LogGPS:
        """``base`` with this network's ``L`` and ``G``."""
        return base.with_(L=self.latency_ns, G=self.gap_ns_per_byte)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"G_ns_per_byte": self.gap_ns_per_byte}


_TONG = "Tong et al. 2016, Table I (Ethernet: minimum MPI latency reported by QLogic; QDR: Panda)"
#: Built-in networks. The first three are the paper's; the others are representative MPI
#: small-message latencies of current interconnects (half round trip of a ping-pong, as
#: osu_latency reports it) with their nominal data rates — calibrate your own system
#: (``llamp calibrate``) when the decision matters.
NETWORKS: dict[str, Network] = {
    n.name: n
    for n in (
        Network("1GbE", 1.0, 50_000.0, _TONG),
        Network("10GbE", 10.0, 5_000.0, _TONG),
        Network("QDR", 32.0, 1_300.0, _TONG + "; 4x QDR InfiniBand carries 32 Gb/s of data"),
        Network(
            "HDR",
            200.0,
            1_000.0,
            "4x HDR InfiniBand (200 Gb/s, IBTA); ≈1 µs MPI latency with ConnectX-6 "
            "(osu_latency on MVAPICH2/HPC-X, representative)",
        ),
        Network(
            "NDR",
            400.0,
            1_000.0,
            "4x NDR InfiniBand (400 Gb/s, IBTA); ≈1 µs MPI latency with ConnectX-7 "
            "(osu_latency, representative)",
        ),
        Network(
            "100GbE",
            100.0,
            2_000.0,
            "100 Gb Ethernet with RoCE v2 (IEEE 802.3); ≈2 µs MPI latency (osu_latency, "
            "representative; TCP sockets take ~10 µs or more)",
        ),
        Network(
            "400GbE",
            400.0,
            2_000.0,
            "400 Gb Ethernet with RoCE v2 (IEEE 802.3bs); ≈2 µs MPI latency (representative)",
        ),
    )
}


def network(name: str) -> Network:
    """The built-in network ``name`` (case-insensitive), or an :class:`InputError` listing them."""
    for key, net in NETWORKS.items():
        if key.lower() == name.strip().lower():
            return net
    raise InputError(f"unknown network {name!r}; built in: {', '.join(NETWORKS)}")


# ------------------------------------------------------------------------------ counters
@kernel()
def _idle_split(
    order,
    begin,
    end,
    owner,
    anchor,
    is_calc,
    num_ranks,
    t,
    pred,
    src,
    comm,
    edge_owner,
    o_pre,
    lat,
    bw,
):  # pragma: no cover - compiled
    """Per rank: calc time, busy time, and the latency and bandwidth time inside idle intervals.

    Busy time is the union of all busy intervals, calc time the union of the calc intervals
    (an overhead that overlaps a calc, e.g. a non-blocking receive completing while the rank
    computes, adds no busy time).

    ``order`` lists the busy intervals ``[begin, end]`` rank by rank in time order; ``anchor``
    is the event whose binding chain (``pred``) explains a gap that ends at ``begin``.
    """
    calc_busy = np.zeros(num_ranks)
    busy = np.zeros(num_ranks)
    latency = np.zeros(num_ranks)
    bandwidth = np.zeros(num_ranks)
    i = 0
    n = order.shape[0]
    while i < n:
        r = owner[order[i]]
        cur = 0.0
        cur_calc = 0.0
        while i < n and owner[order[i]] == r:
            q = order[i]
            a = cur
            b = begin[q]
            if b > a:
                p = anchor[q]
                while t[p] > a:
                    k = pred[p]
                    if k < 0:
                        break
                    s0 = t[src[k]]
                    if comm[k] and edge_owner[k] == r:
                        x0 = s0 + o_pre[k]
                        x1 = x0 + lat[k]
                        x2 = x1 + bw[k]
                        lo = max(x0, a)
                        hi = min(x1, b)
                        if hi > lo:
                            latency[r] += hi - lo
                        lo = max(x1, a)
                        hi = min(x2, b)
                        if hi > lo:
                            bandwidth[r] += hi - lo
                    p = src[k]
            if end[q] > cur:
                busy[r] += end[q] - max(begin[q], cur)
                cur = end[q]
            if is_calc[q] and end[q] > cur_calc:
                calc_busy[r] += end[q] - max(begin[q], cur_calc)
                cur_calc = end[q]
            i += 1
    return calc_busy, busy, latency, bandwidth


def rank_counters(graph: ExecutionGraph, params: LogGPS) -> pd.DataFrame:
    """Tong et al.'s per-process counters at θ = ``params`` (definitions: module docstring).

    One row per rank: ``rank``, ``end_ns`` (finish of its last vertex), ``compute_ns``,
    ``overhead_ns``, ``wait_ns``, ``latency_ns``, ``bandwidth_ns``; the last five sum to ``T``
    for every rank. A rank runs one instruction stream: time is counted once even where
    intervals overlap, calc first (a receive's ``o`` charged while the rank computes — a
    non-blocking receive completing in the background — is not overhead time; two overlapping
    calcs of a hand-written graph count once).
    """
    ev = engine_for(graph).events(params)
    P = graph.num_ranks
    cols = ["rank", "end_ns", "compute_ns", "overhead_ns", "wait_ns", "latency_ns", "bandwidth_ns"]
    if ev.num_events == 0:
        frame = pd.DataFrame(0.0, index=np.arange(P), columns=cols)
        frame["rank"] = np.arange(P)
        return frame
    t, _, pred = slopes_at(ev, params)
    T = float(t.max())
    start = t[ev.start_pos()]
    finish = t[ev.finish_pos()]
    kind = graph.kind
    o = params.o
    # An analytic collective is communication, not busy time: a zero-length mark at its end
    # whose binding chain (through its sync) explains the wait before it.
    coll = kind == COLL
    begin = np.where((kind == RECV) | coll, finish - np.where(coll, 0.0, o), start)
    stop = np.where(kind == SEND, start + o, finish)
    stop = np.where(kind == CALC, finish, stop)
    begin = np.minimum(begin, stop)
    anchor = np.where((kind == RECV) | coll, ev.finish_pos(), ev.start_pos())
    order = np.lexsort((np.arange(graph.num_vertices), begin, graph.rank)).astype(np.int64)

    # Owner rank of every event position (a rendezvous handshake belongs to the receiver).
    events = ev.event_of_pos
    V = graph.num_vertices
    owner_pos = graph.rank[ev.owner_of_pos(np.arange(ev.num_events))].astype(np.int64)
    c = ev.coef
    comm = (ev.msg >= 0) | ev.collective_edges()
    dst_event = events[ev.dst]
    dst_vertex = np.where(dst_event < 2 * V, dst_event // 2, 0)
    ends_op = (dst_event < 2 * V) & (dst_event % 2 == 1) & (kind[dst_vertex] != CALC)
    o_total = c[:, COEF_O] * o
    o_post = np.where(comm & ends_op & (c[:, COEF_O] >= 1.0), o, 0.0)
    calc_busy, busy, latency, bandwidth = _idle_split(
        order,
        begin,
        stop,
        graph.rank.astype(np.int64),
        anchor.astype(np.int64),
        kind == CALC,
        P,
        t,
        pred,
        ev.src,
        comm,
        owner_pos[ev.dst],
        np.ascontiguousarray(o_total - o_post),
        np.ascontiguousarray(c[:, COEF_L] * params.L),
        np.ascontiguousarray(c[:, COEF_G] * params.G + c[:, COEF_GAP] * params.g),
    )
    end = np.zeros(P)
    np.maximum.at(end, graph.rank, finish)
    idle = T - busy
    return pd.DataFrame(
        {
            "rank": np.arange(P),
            "end_ns": end,
            "compute_ns": calc_busy,
            "overhead_ns": busy - calc_busy,
            "wait_ns": np.maximum(idle - latency - bandwidth, 0.0),
            "latency_ns": latency,
            "bandwidth_ns": bandwidth,
        }
    )


# ------------------------------------------------------------------------------ configurations
SETS = ("bandwidth", "latency", "combined")


def configurations(net: Network, span: int = 8) -> pd.DataFrame:
    """The three sets of §III-G: one row per (``set``, ``speedup``) with the network's
    ``bandwidth_gbps``, latency ``L_ns`` and gap ``G_ns_per_byte`` there.

    ``speedup`` ∈ {1/span, …, 1/2, 1, 2, …, span} (powers of two) says how much faster the
    network is: the bandwidth set multiplies BW by it, the latency set divides L by it, the
    combined set does both.
    """
    if span < 2 or span & (span - 1):
        raise InputError(f"the configuration span must be a power of two ≥ 2, got {span}")
    k = int(math.log2(span))
    speedups = [2.0**i for i in range(-k, k + 1)]
    rows = []
    for name in SETS:
        for s in speedups:
            bw = net.bandwidth_gbps * (s if name in ("bandwidth", "combined") else 1.0)
            lat = net.latency_ns / (s if name in ("latency", "combined") else 1.0)
            rows.append(
                {
                    "set": name,
                    "speedup": s,
                    "bandwidth_gbps": bw,
                    "L_ns": lat,
                    "G_ns_per_byte": 8.0 / bw,
                }
            )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ rules
@dataclass(frozen=True)
class Thresholds:
    """Rule thresholds (Tong et al. §IV-C defaults), as fractions and factors."""

    compute_share: float = 0.90  # C1: computation ≥ 90 % of the time
    bound_share: float = 0.25  # C2–C5: wait (C2) or communication ≥ 25 %
    sensitive_share: float = 0.10  # the "-sensitive" variants: ≥ 10 %
    insensitive: float = 0.05  # "insensitive": < 5 % relative change over a set
    decrease: float = 2.0  # "decreases by a factor of 2" between the ×1/2 and ×2 points
    span: int = 8  # the sets go from 1/span to span

    def __post_init__(self) -> None:
        for name in ("compute_share", "bound_share", "sensitive_share", "insensitive"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InputError(f"threshold {name} must be a fraction in [0, 1], got {value!r}")
        if not self.decrease > 1.0:
            raise InputError(f"the decrease factor must be > 1, got {self.decrease!r}")
        if self.span < 2 or self.span & (self.span - 1):
            raise InputError(f"the span must be a power of two ≥ 2, got {self.span!r}")


LABELS = {
    "C1": "computation-bound",
    "C2": "load-imbalance-bound",
    "C3": "bandwidth-bound",
    "C4": "latency-bound",
    "C5": "communication-bound",
    "C2s": "load-imbalance-sensitive",
    "C3s": "bandwidth-sensitive",
    "C4s": "latency-sensitive",
    "C5s": "communication-sensitive",
}


@dataclass(frozen=True, eq=False)
class Classification:
    """The verdict for one network, with everything needed to explain it.

    ``label``/``rule``/``reason``: the first rule that holds (``"unclassified"``/``""`` if
    none). ``configs``: one row per (set, speedup) with the mean counters over ranks
    (``*_ns``), ``runtime_ns``, ``communication_ns`` and their shares of ``T`` (``*_share``).
    ``per_rank``: :func:`rank_counters` at the target network. ``rules``: one row per rule with
    ``holds`` and the numbers it compared (``share``, ``share_needed``, ``change``,
    ``change_limit``, ``ratio``, ``ratio_needed``) and a sentence ``reason``.
    """

    network: Network
    params: LogGPS
    thresholds: Thresholds
    label: str
    rule: str
    reason: str
    configs: pd.DataFrame = field(repr=False)
    per_rank: pd.DataFrame = field(repr=False)
    rules: pd.DataFrame = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The stable ``classify --json`` shape."""
        return {
            "network": self.network.as_dict(),
            "params": self.params.as_dict(),
            "thresholds": asdict(self.thresholds),
            "label": self.label,
            "rule": self.rule,
            "reason": self.reason,
            "rules": self.rules.to_dict(orient="records"),
            "configs": self.configs.to_dict(orient="records"),
            "per_rank": self.per_rank.to_dict(orient="records"),
        }


def _max_change(values: np.ndarray, ref: float) -> float:
    """Largest relative deviation of ``values`` from ``ref`` (0 if all are 0)."""
    if ref > 0:
        return float(np.max(np.abs(values - ref)) / ref)
    return 0.0 if np.all(values == 0) else math.inf


def _ratio(slow: float, fast: float) -> float:
    if fast > 0:
        return slow / fast
    return math.inf if slow > 0 else 1.0


def _rules(configs: pd.DataFrame, th: Thresholds) -> pd.DataFrame:
    target = configs[(configs["set"] == "latency") & (configs["speedup"] == 1.0)].iloc[0]
    T0 = float(target["runtime_ns"])

    def at(name: str, s: float) -> pd.Series:
        return configs[(configs["set"] == name) & (configs["speedup"] == s)].iloc[0]

    def over(name: str | None, column: str) -> np.ndarray:
        frame = configs if name is None else configs[configs["set"] == name]
        return frame[column].to_numpy(dtype=np.float64)

    share = {k: float(target[f"{k}_share"]) for k in ("compute", "wait", "communication")}
    comm0 = float(target["communication_ns"])
    wait0 = float(target["wait_ns"])
    rows: list[dict[str, Any]] = []

    def add(
        rule: str,
        share_name: str,
        need: float,
        change: float | None,
        limit_what: str,
        ratio: float | None,
        ratio_what: str,
    ) -> None:
        value = share[share_name]
        ok_share = value >= need
        ok_change = change is None or change < th.insensitive
        ok_ratio = ratio is None or ratio >= th.decrease
        parts = [
            f"{share_name} is {value:.1%} of T ({'≥' if ok_share else '<'} {need:.0%})",
        ]
        if change is not None:
            parts.append(
                f"{limit_what} changes by {change:.1%} ({'<' if ok_change else '≥'} {th.insensitive:.0%})"
            )
        if ratio is not None:
            parts.append(
                f"{ratio_what} by a factor {ratio:.3g} ({'≥' if ok_ratio else '<'} {th.decrease:g})"
            )
        rows.append(
            {
                "rule": rule,
                "label": LABELS[rule],
                "holds": bool(ok_share and ok_change and ok_ratio),
                "share": value,
                "share_needed": need,
                "change": math.nan if change is None else change,
                "change_limit": th.insensitive if change is not None else math.nan,
                "ratio": math.nan if ratio is None else ratio,
                "ratio_needed": th.decrease if ratio is not None else math.nan,
                "reason": "; ".join(parts),
            }
        )

    span = f"×1/{th.span}…×{th.span}"
    add(
        "C1",
        "compute",
        th.compute_share,
        _max_change(over(None, "runtime_ns"), T0),
        f"T over all three sets ({span})",
        None,
        "",
    )
    for suffix, need in (("", th.bound_share), ("s", th.sensitive_share)):
        add(
            "C2" + suffix,
            "wait",
            need,
            _max_change(over(None, "wait_ns"), wait0),
            f"the wait time over all three sets ({span})",
            None,
            "",
        )
        add(
            "C3" + suffix,
            "communication",
            need,
            _max_change(over("latency", "communication_ns"), comm0),
            f"communication time over the latency set ({span} L)",
            _ratio(
                float(at("bandwidth", 0.5)["communication_ns"]),
                float(at("bandwidth", 2.0)["communication_ns"]),
            ),
            "communication time falls from BW/2 to 2·BW",
        )
        add(
            "C4" + suffix,
            "communication",
            need,
            _max_change(over("bandwidth", "communication_ns"), comm0),
            f"communication time over the bandwidth set ({span} BW)",
            _ratio(
                float(at("latency", 0.5)["communication_ns"]),
                float(at("latency", 2.0)["communication_ns"]),
            ),
            "communication time falls from 2·L to L/2",
        )
        add(
            "C5" + suffix,
            "communication",
            need,
            None,
            "",
            _ratio(
                float(at("combined", 0.5)["communication_ns"]),
                float(at("combined", 2.0)["communication_ns"]),
            ),
            "communication time falls from (BW/2, 2·L) to (2·BW, L/2)",
        )
    frame = pd.DataFrame(rows)
    order = ["C1", "C2", "C3", "C4", "C5", "C2s", "C3s", "C4s", "C5s"]
    return frame.set_index("rule").loc[order].reset_index()


def classify(
    graph: ExecutionGraph,
    net: Network | str,
    *,
    params: LogGPS | None = None,
    thresholds: Thresholds | None = None,
) -> Classification:
    """Classify ``graph`` for the network ``net`` (rules C1–C5 of Tong et al.; module docstring).

    ``params`` supplies ``o`` and ``S`` (its ``L`` and ``G`` are replaced by each
    configuration's); default: ``o = 0`` as in the paper's Hockney model (the network latency
    then is the whole small-message time) and the configured ``S``.
    """
    net = network(net) if isinstance(net, str) else net
    th = thresholds or Thresholds()
    base = params or LogGPS(o=0.0)
    configs = configurations(net, th.span)
    counted: dict[tuple[float, float], pd.DataFrame] = {}
    records = []
    for row in configs.itertuples(index=False):
        key = (float(row.L_ns), float(row.G_ns_per_byte))
        if key not in counted:
            counted[key] = rank_counters(graph, base.with_(L=key[0], G=key[1]))
        counters = counted[key]
        means = counters[
            ["compute_ns", "overhead_ns", "wait_ns", "latency_ns", "bandwidth_ns"]
        ].mean()
        T = engine_for(graph).runtime(base.with_(L=key[0], G=key[1]))
        records.append({"runtime_ns": T, **means.to_dict()})
    values = pd.DataFrame(records)
    configs = pd.concat([configs, values], axis=1)
    configs["communication_ns"] = (
        configs["wait_ns"] + configs["latency_ns"] + configs["bandwidth_ns"]
    )
    T = configs["runtime_ns"].where(configs["runtime_ns"] > 0, 1.0)
    for name in ("compute", "overhead", "wait", "latency", "bandwidth", "communication"):
        configs[f"{name}_share"] = configs[f"{name}_ns"] / T
    rules = _rules(configs, th)
    holding = rules[rules["holds"]]
    if len(holding):
        first = holding.iloc[0]
        label, rule, reason = str(first["label"]), str(first["rule"]), str(first["reason"])
    else:
        label, rule = "unclassified", ""
        reason = "no rule holds: " + " | ".join(f"{r.rule}: {r.reason}" for r in rules.itertuples())
    return Classification(
        network=net,
        params=net.params(base),
        thresholds=th,
        label=label,
        rule=rule,
        reason=reason,
        configs=configs,
        per_rank=counted[(net.latency_ns, net.gap_ns_per_byte)],
        rules=rules,
    )
