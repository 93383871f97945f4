"""A GPU machine: nodes of GPUs joined by NVLink, nodes joined by NICs (two link classes).

A training run's ranks are GPUs. ``gpus_per_node`` consecutive ranks share a node (the dense
placement NCCL and Megatron assume: a tensor-parallel group inside a node); a message between
two GPUs of one node crosses NVLink/NVSwitch at ``(L_intra, G_intra)``, one between nodes the
network at ``(L_inter, G_inter)`` through the NICs. A node has ``nics_per_node`` NICs and each
local GPU uses the NIC of its *affinity* (default: GPU ``g`` of ``n`` uses NIC
``⌊g·nics/n⌋``, the PCIe-switch pairing of DGX-class nodes); ``k`` GPUs sharing one NIC each get
``1/k`` of its bandwidth, so an inter-node message's gap is ``k·G_inter`` with ``k`` the larger
share of its two ends (LogGP's per-byte gap; the NIC's per-message gap is not modelled here).

The model is a :class:`~llamp.lp.weighted.MessageModel` with the variables ``L_intra``,
``L_inter``, ``G_intra``, ``G_inter`` (the two-level machine of LLAMP App. I, the names
:mod:`llamp.lp.region` draws joint regions over), so ``T`` stays a maximum of affine functions
of each: :func:`analyze_gpu_machine` gives ``T``, λ per link class and the exact x% tolerance
of each class (the walk of :class:`~llamp.lp.topology.ShiftWalk`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llamp.config import DEFAULT_TOLERANCES, parse_duration_ns, parse_gap_ns_per_byte
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.ingest.nccl import NcclMachine
from llamp.lp.region import NS, NS_PER_BYTE, LinkVariables
from llamp.lp.topology import ShiftWalk
from llamp.lp.weighted import MessageModel, check_pairwise
from llamp.params import LogGPS

__all__ = ["GpuMachine", "GpuMachineAnalysis", "analyze_gpu_machine", "gpu_variables"]

#: Defaults: an H100 node (NVLink 4 through NVSwitch: 900 GB/s per GPU both ways, ~450 GB/s
#: one way, about 0.5 µs GPU to GPU) and a 400 Gb/s NIC per GPU (50 GB/s, about 3 µs).
DEFAULT_GPUS_PER_NODE = 8
DEFAULT_NVLINK = (500.0, 1 / 450.0)
DEFAULT_NETWORK = (3000.0, 1 / 50.0)


@dataclass(frozen=True)
class GpuMachine:
    """GPUs per node, NVLink (L ns, G ns/B), network per NIC (L ns, G ns/B), NICs and affinity;
    ``layout``: how a training run's ranks are placed (its parallel dimensions innermost first,
    :mod:`llamp.lp.group_placement`; default: rank ``r`` on GPU ``r``)."""

    gpus_per_node: int = DEFAULT_GPUS_PER_NODE
    nvlink: tuple[float, float] = DEFAULT_NVLINK
    network: tuple[float, float] = DEFAULT_NETWORK
    nics_per_node: int = DEFAULT_GPUS_PER_NODE
    affinity: tuple[int, ...] | None = None
    layout: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.gpus_per_node < 1 or self.nics_per_node < 1:
            raise InputError("a GPU machine needs ≥ 1 GPU and ≥ 1 NIC per node")
        for what, (L, G) in (("nvlink", self.nvlink), ("net", self.network)):
            if not (math.isfinite(L) and L >= 0 and math.isfinite(G) and G >= 0):
                raise InputError(f"GPU machine: {what} L and G must be finite and ≥ 0")
        if self.affinity is not None:
            if len(self.affinity) != self.gpus_per_node:
                raise InputError(
                    f"GPU machine: affinity lists {len(self.affinity)} NICs, one per GPU of "
                    f"{self.gpus_per_node} needed"
                )
            bad = [n for n in self.affinity if not 0 <= n < self.nics_per_node]
            if bad:
                raise InputError(
                    f"GPU machine: affinity names NIC {bad[0]}, a node has NICs "
                    f"0..{self.nics_per_node - 1}"
                )

    @classmethod
    def parse(cls, text: str) -> GpuMachine:
        """``gpus=8,nvlink=500ns:0.0022ns/B,net=3us:0.02ns/B,nics=4,affinity=0:0:1:1:2:2:3:3``
        (every part optional, defaults as :class:`GpuMachine`)."""
        fields: dict[str, object] = {}
        for part in (p.strip() for p in text.split(",") if p.strip()):
            key, _, value = part.partition("=")
            key = key.strip().lower()
            try:
                if key == "gpus":
                    fields["gpus_per_node"] = int(value)
                elif key == "nics":
                    fields["nics_per_node"] = int(value)
                elif key in ("nvlink", "net"):
                    L, _, G = value.partition(":")
                    level = (parse_duration_ns(L), parse_gap_ns_per_byte(G))
                    fields["nvlink" if key == "nvlink" else "network"] = level
                elif key == "affinity":
                    fields["affinity"] = tuple(int(v) for v in value.split(":"))
                elif key == "layout":
                    names = tuple(v.strip() for v in value.split(":"))
                    if not all(names):
                        raise ValueError(value)
                    fields["layout"] = names
                else:
                    raise InputError(
                        f"GPU machine {text!r}: unknown part {key!r} (gpus, nvlink, net, nics, "
                        "affinity, layout)"
                    )
            except ValueError:
                raise InputError(
                    f"GPU machine {text!r}: cannot read {part!r} (e.g. gpus=8, "
                    "nvlink=500ns:0.0022ns/B, net=3us:0.02ns/B, nics=4, affinity=0:0:1:1, "
                    "layout=tp:dp:pp)"
                ) from None
        if "nics_per_node" not in fields and "gpus_per_node" in fields:
            fields["nics_per_node"] = fields["gpus_per_node"]
        return cls(**fields)  # type: ignore[arg-type]

    @classmethod
    def from_parts(cls, parts: dict[str, object]) -> GpuMachine:
        """A machine from a mapping of the :meth:`parse` parts (a study spec's
        ``gpu_machine: {gpus: 8, nvlink: 500ns:0.0022ns/B, …}``; ``affinity`` also a list)."""
        items = []
        for key, value in parts.items():
            if isinstance(value, list | tuple):
                value = ":".join(str(v) for v in value)
            items.append(f"{key}={value}")
        return cls.parse(",".join(items))

    def spec(self) -> str:
        """The :meth:`parse` text of this machine, every number exact (``repr``)."""
        (li, gi), (le, ge) = self.nvlink, self.network
        text = (
            f"gpus={self.gpus_per_node},nvlink={li!r}ns:{gi!r}ns/B,net={le!r}ns:{ge!r}ns/B,"
            f"nics={self.nics_per_node}"
        )
        if self.affinity is not None:
            text += ",affinity=" + ":".join(str(n) for n in self.affinity)
        if self.layout is not None:
            text += ",layout=" + ":".join(self.layout)
        return text

    def nic_of_gpu(self) -> np.ndarray:
        """The NIC each local GPU uses."""
        if self.affinity is not None:
            return np.asarray(self.affinity, np.int64)
        g = np.arange(self.gpus_per_node)
        return g * self.nics_per_node // self.gpus_per_node

    def nic_share(self) -> np.ndarray:
        """How many local GPUs share each local GPU's NIC."""
        nic = self.nic_of_gpu()
        return np.bincount(nic, minlength=self.nics_per_node)[nic]

    def nccl_machine(self, channels: int = 2) -> NcclMachine:
        """What NCCL's choice and the GPU readers' channels assume on this machine: its GPUs per
        node, ``channels`` channels per collective, the NICs of one GPU (at least 1), and each
        channel's share of the NVLink and of the GPU's NIC bandwidth (GB/s = 1 / (ns/B))."""
        share = float(self.nic_share().max())
        (_, gi), (_, ge) = self.nvlink, self.network
        per = max(1, channels)
        return NcclMachine(
            gpus_per_node=self.gpus_per_node,
            channels=per,
            nics=max(1, self.nics_per_node // self.gpus_per_node),
            bw_intra_gbps=(1.0 / gi if gi > 0 else 1e9) / per,
            bw_inter_gbps=(1.0 / (ge * share) if ge > 0 else 1e9) / per,
        )

    def describe(self) -> str:
        (li, gi), (le, ge) = self.nvlink, self.network
        text = (
            f"{self.gpus_per_node} GPUs per node, NVLink L={li:g} ns G={gi:g} ns/B, "
            f"{self.nics_per_node} NICs per node L={le:g} ns G={ge:g} ns/B"
        )
        return text + (f", layout {','.join(self.layout)}" if self.layout else "")


def gpu_variables(
    graph: ExecutionGraph, machine: GpuMachine, slot_of_rank: np.ndarray | None = None
) -> LinkVariables:
    """The per-message model of ``machine`` for ``graph``: rank ``r`` is the GPU in slot
    ``slot_of_rank[r]`` (node ``slot // gpus_per_node``, local GPU ``slot mod gpus_per_node``);
    default: the machine's layout of the run's parallel dimensions, else rank ``r`` in slot
    ``r``."""
    check_pairwise(graph)
    if slot_of_rank is None and machine.layout is not None:
        from llamp.lp.group_placement import order_slots, parallel_dims

        slot_of_rank = order_slots(parallel_dims(graph)[0], machine.layout)
    sends, recvs = graph.messages()
    a, b = graph.rank[sends].astype(np.int64), graph.rank[recvs].astype(np.int64)
    if slot_of_rank is not None:
        slot = np.asarray(slot_of_rank, dtype=np.int64)
        if (
            slot.shape != (graph.num_ranks,)
            or np.unique(slot).size != slot.size
            or (slot.size and slot.min() < 0)
        ):
            raise InputError(
                f"a GPU placement gives every one of the {graph.num_ranks} ranks its own slot "
                "(a non-negative GPU index)"
            )
        a, b = slot[a], slot[b]
    n = machine.gpus_per_node
    same = (a // n == b // n).astype(np.float64)
    other = 1.0 - same
    share = machine.nic_share()
    k = np.maximum(share[a % n], share[b % n]).astype(np.float64) * other
    zero = np.zeros_like(same)
    (Li, Gi), (Le, Ge) = machine.nvlink, machine.network
    model = MessageModel(
        latency_ns=same * Li + other * Le,
        gap_ns_per_byte=same * Gi + k * Ge,
        names=("L_intra", "L_inter", "G_intra", "G_inter"),
        dlatency=np.column_stack([same, other, zero, zero]),
        dgap=np.column_stack([zero, zero, same, k]),
    )
    values = {"L_intra": Li, "L_inter": Le, "G_intra": Gi, "G_inter": Ge}
    units = {"L_intra": NS, "L_inter": NS, "G_intra": NS_PER_BYTE, "G_inter": NS_PER_BYTE}
    return LinkVariables(model, values, units, f"GPU machine ({machine.describe()})")


@dataclass(frozen=True)
class GpuMachineAnalysis:
    """``T`` and, per variable: value, λ (right derivative), value·λ/T and x% tolerances."""

    machine: str
    runtime_ns: float
    intra_node_fraction: float
    variables: pd.DataFrame  # variable, value, unit, lambda, lambda_share
    tolerances: pd.DataFrame  # variable, x, bound_ns, tolerance, headroom
    elapsed_s: float

    def as_dict(self) -> dict:
        return {
            "machine": self.machine,
            "runtime_ns": self.runtime_ns,
            "intra_node_fraction": self.intra_node_fraction,
            "variables": self.variables.to_dict(orient="records"),
            "tolerances": self.tolerances.to_dict(orient="records"),
            "elapsed_s": self.elapsed_s,
        }


def analyze_gpu_machine(
    graph: ExecutionGraph,
    params: LogGPS,
    machine: GpuMachine,
    x: Sequence[float] = DEFAULT_TOLERANCES,
    *,
    slot_of_rank: np.ndarray | None = None,
) -> GpuMachineAnalysis:
    """``T``, λ per link class (NVLink, network; latency and gap) and each one's x% tolerance:
    the largest value with ``T ≤ (1+x)·T0``, the others fixed (``inf``: ``T`` never reaches it).
    ``params`` gives ``o`` and ``S``; ``L`` and ``G`` come from the machine; ``slot_of_rank``
    places the ranks (:func:`gpu_variables`)."""
    started = time.perf_counter()
    levels = sorted(float(v) for v in x)
    if any(v < 0 for v in levels):
        raise InputError("tolerance levels must be ≥ 0 (fractions, e.g. 0.01 for 1%)")
    variables = gpu_variables(graph, machine, slot_of_rank)
    model = variables.model
    walk = ShiftWalk(graph, params, model)
    T0, slopes = walk.point()
    names = list(model.names)
    values = np.array([variables.values[n] for n in names])
    lam = np.array([slopes[n] for n in names])
    table = pd.DataFrame(
        {
            "variable": names,
            "value": values,
            "unit": [variables.units[n] for n in names],
            "lambda": lam,
            "lambda_share": values * lam / T0 if T0 > 0 else np.zeros_like(lam),
        }
    )
    rows = []
    for name, value in zip(names, values, strict=True):
        shift = 0.0
        for level in levels:
            if not math.isinf(shift):
                shift = walk.max_shift(name, (1.0 + level) * T0, start=shift)
            rows.append((name, level, (1.0 + level) * T0, value + shift, shift))
    tolerances = pd.DataFrame(rows, columns=["variable", "x", "bound_ns", "tolerance", "headroom"])
    same = model.dlatency[:, 0]
    return GpuMachineAnalysis(
        machine=machine.describe(),
        runtime_ns=T0,
        intra_node_fraction=float(same.mean()) if same.size else 0.0,
        variables=table,
        tolerances=tolerances,
        elapsed_s=time.perf_counter() - started,
    )
