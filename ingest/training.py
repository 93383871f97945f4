"""Synthetic 3D-parallel transformer training steps written as Chakra execution traces.

One training step of a GPT-style transformer on ``dp × tp × pp`` GPUs (data, tensor and
pipeline parallel; Megatron-LM's layout: rank = t + tp·(d + dp·p), so a tensor-parallel group
is ``tp`` consecutive ranks), for scale tests of the Chakra reader and the analyses: 8 to 4,096
GPUs and beyond, one rank file at a time (memory stays that of one rank's nodes).

Per micro-batch and layer (``b`` micro-batch size, ``s`` sequence length, ``h`` hidden size,
``e`` bytes per element; FLOP counts of Narayanan et al., SC'21, divided by ``tp``):

- forward: attention (``8bsh² + 4bs²h`` FLOP) then an all-reduce of ``bsh·e`` bytes on the
  tensor-parallel group, MLP (``16bsh²``) then another such all-reduce; backward: the same with
  twice the FLOP. Compute runs at ``gpu_flops`` on the GPU stream, one node after another;
- between pipeline stages the activations (forward) and their gradients (backward), ``bsh·e``
  bytes, as COMM_SEND / COMM_RECV nodes (tag ``2·micro-batch + direction``), in the 1F1B
  order (``pp − stage − 1`` warm-up forwards, then one forward and one backward alternately);
- after the last micro-batch's backward of a layer, an all-reduce of its gradients
  (``12h²/tp · e`` bytes) on the data-parallel group, overlapping the remaining backward; the
  optimizer step (reading and writing 16 bytes per parameter at ``memory_bytes_per_s``) waits
  for all of them.

Groups are ``pg_name`` ``tp.<d>.<p>``, ``dp.<t>.<p>`` and ``pp.<t>.<d>``; a dimension of size 1
has no communication.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from llamp.errors import InputError
from llamp.ingest import et_def_pb2 as pb
from llamp.ingest.chakra import write_chakra

__all__ = ["TrainingStep", "training_nodes", "write_training"]

_A = pb.AttributeProto


@dataclass(frozen=True)
class TrainingStep:
    """A 3D-parallel training step (sizes in elements unless named bytes)."""

    dp: int = 2
    tp: int = 2
    pp: int = 2
    layers: int = 8
    micro_batches: int = 4
    micro_batch_size: int = 1
    seq_len: int = 2048
    hidden: int = 4096
    bytes_per_element: int = 2
    gpu_flops: float = 400e12
    memory_bytes_per_s: float = 2e12

    def __post_init__(self) -> None:
        for name in ("dp", "tp", "pp", "layers", "micro_batches", "micro_batch_size", "seq_len",
                     "hidden", "bytes_per_element"):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise InputError(f"training step: {name} must be a positive integer, got {value}")
        if self.layers % self.pp:
            raise InputError(
                f"training step: {self.layers} layers do not split over {self.pp} pipeline stages"
            )
        if self.gpus > 1 << 20:
            raise InputError(f"training step: {self.gpus} GPUs is more than 2^20")
        if not (self.gpu_flops > 0 and self.memory_bytes_per_s > 0):
            raise InputError("training step: gpu_flops and memory_bytes_per_s must be > 0")

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp

    def coords(self, rank: int) -> tuple[int, int, int]:
        """(d, t, p) of a rank."""
        t, rest = rank % self.tp, rank // self.tp
        return rest % self.dp, t, rest // self.dp

    def rank_of(self, d: int, t: int, p: int) -> int:
        return t + self.tp * (d + self.dp * p)


class _Ids:
    def __init__(self) -> None:
        self.next = 0

    def node(self, name: str, kind: int, deps=(), **attrs) -> pb.Node:
        n = pb.Node(id=self.next, name=name, type=kind)
        self.next += 1
        n.ctrl_deps.extend(d for d in deps if d is not None)
        for key, value in attrs.items():
            if isinstance(value, bool):
                n.attr.append(_A(name=key, bool_val=value))
            elif isinstance(value, str):
                n.attr.append(_A(name=key, string_val=value))
            else:
                n.attr.append(_A(name=key, int64_val=value))
        return n


def _one_f_one_b(stage: int, stages: int, m: int) -> list[tuple[str, int]]:
    warm = min(stages - stage - 1, m)
    order = [("F", i) for i in range(warm)]
    for i in range(m - warm):
        order += [("F", warm + i), ("B", i)]
    order += [("B", m - warm + j) for j in range(warm)]
    return order


def training_nodes(step: TrainingStep, rank: int) -> Iterator[pb.Node]:
    """The Chakra nodes of ``rank``'s file, in issue order (module docstring)."""
    d, t, p = step.coords(rank)
    b, s, h, e = step.micro_batch_size, step.seq_len, step.hidden, step.bytes_per_element
    act = b * s * h * e
    per_stage = step.layers // step.pp
    ns = 1e9 / step.gpu_flops
    attn_ns = (8 * b * s * h * h + 4 * b * s * s * h) / step.tp * ns
    mlp_ns = 16 * b * s * h * h / step.tp * ns
    tp_pg, dp_pg, pp_pg = f"tp.{d}.{p}", f"dp.{t}.{p}", f"pp.{t}.{d}"
    ids = _Ids()
    last = None  # the GPU stream's previous node
    grads = []

    def comp(name: str, dur_ns: float):
        nonlocal last
        n = ids.node(name, pb.COMP_NODE, [last], is_cpu_op=False)
        n.duration_micros = max(1, round(dur_ns / 1000))
        last = n.id
        return n

    def tp_allreduce(name: str):
        nonlocal last
        n = ids.node(name, pb.COMM_COLL_NODE, [last], comm_type=pb.ALL_REDUCE, comm_size=act,
                     pg_name=tp_pg)  # fmt: skip
        last = n.id
        return n

    for phase, mb in _one_f_one_b(p, step.pp, step.micro_batches):
        forward = phase == "F"
        if forward and p > 0 or not forward and p < step.pp - 1:
            peer = step.rank_of(d, t, p - 1 if forward else p + 1)
            recv = ids.node(f"recv_{phase}{mb}", pb.COMM_RECV_NODE, [last], comm_src=peer,
                            comm_dst=rank, comm_size=act, comm_tag=2 * mb + (not forward),
                            pg_name=pp_pg)  # fmt: skip
            yield recv
            last = recv.id
        scale = 1.0 if forward else 2.0
        layers = range(per_stage) if forward else reversed(range(per_stage))
        for layer in layers:
            parts = (
                (("attn", attn_ns), ("mlp", mlp_ns))
                if forward
                else (("mlp", mlp_ns), ("attn", attn_ns))
            )
            for part, dur in parts:
                yield comp(f"{phase}{mb}_l{layer}_{part}", dur * scale)
                if step.tp > 1:
                    yield tp_allreduce(f"{phase}{mb}_l{layer}_{part}_tp_allreduce")
            if not forward and mb == step.micro_batches - 1 and step.dp > 1:
                grad = ids.node(f"l{layer}_dp_allreduce", pb.COMM_COLL_NODE, [last],
                                comm_type=pb.ALL_REDUCE, comm_size=12 * h * h // step.tp * e,
                                pg_name=dp_pg)  # fmt: skip
                grads.append(grad.id)
                yield grad
        if forward and p < step.pp - 1 or not forward and p > 0:
            peer = step.rank_of(d, t, p + 1 if forward else p - 1)
            yield ids.node(f"send_{phase}{mb}", pb.COMM_SEND_NODE, [last], comm_src=rank,
                           comm_dst=peer, comm_size=act, comm_tag=2 * mb + (not forward),
                           pg_name=pp_pg)  # fmt: skip
    params = 12 * h * h * per_stage // step.tp
    optimizer = comp("optimizer", 16 * params / step.memory_bytes_per_s * 1e9)
    optimizer.ctrl_deps.extend(grads)
    yield optimizer


@dataclass(frozen=True)
class TrainingWritten:
    """What :func:`write_training` wrote."""

    directory: str
    ranks: int
    nodes: int
    bytes: int
    step: dict


def write_training(
    directory: str | os.PathLike[str], step: TrainingStep, *, prefix: str = "step",
    progress: bool = False,
) -> TrainingWritten:  # fmt: skip
    """Write ``<directory>/<prefix>.<rank>.et`` for every GPU, one rank at a time."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    nodes = size = 0
    ranks = range(step.gpus)
    if progress:
        from tqdm import tqdm

        ranks = tqdm(ranks, unit=" ranks", desc="writing Chakra", leave=False)
    for r in ranks:
        path = out / f"{prefix}.{r}.et"
        nodes += write_chakra(path, training_nodes(step, r))
        size += path.stat().st_size
    return TrainingWritten(str(out), step.gpus, nodes, size, asdict(step))
