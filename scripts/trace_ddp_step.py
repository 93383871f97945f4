"""Trace one DDP training step of a small MLP on P gloo processes (CPU) into Chakra.

Run it with a Python that has torch 2.x, mlc-chakra and et_replay (not llamp's environment;
llamp needs none of them):

    python scripts/trace_ddp_step.py OUT [--ranks 2] [--steps 3]

Each rank writes, for the last profiled step, the PyTorch execution trace
(``ExecutionTraceObserver``: host operators, their inputs and dependencies) as
``OUT/host.<rank>.json`` and the Kineto trace (durations) as ``OUT/device.<rank>.json``; then
the script runs Chakra's tools on them, as one would by hand:

    chakra_trace_link --rank R --chakra-host-trace OUT/host.R.json \
        --chakra-device-trace OUT/device.R.json --output-file OUT/linked.R.json
    chakra_converter PyTorch --input OUT/linked.R.json --output OUT/ddp.R.et

and records the versions used in ``OUT/versions.json``. The model, the data and the seeds are
fixed, so two runs trace the same operators (the durations are measured, so they differ).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile, schedule

WIDTH = 256  # hidden width: two 256×256 layers and a 256×16 head, 1 MiB of gradients
BATCH = 32


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 16)
    )


def _rank(rank: int, world: int, out: Path, steps: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    # one bucket per layer, so the backward pass issues one all-reduce per layer
    model = DistributedDataParallel(_model(), bucket_cap_mb=0.25)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(1 + rank)
    x = torch.randn(BATCH, WIDTH, generator=gen)
    y = torch.randint(0, 16, (BATCH,), generator=gen)
    loss_fn = nn.CrossEntropyLoss()

    et = ExecutionTraceObserver()
    et.register_callback(str(out / f"host.{rank}.json"))

    def kineto_done(prof) -> None:
        prof.export_chrome_trace(str(out / f"device.{rank}.json"))

    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=0, warmup=steps - 1, active=1),
        on_trace_ready=kineto_done,
        execution_trace_observer=et,
        record_shapes=True,
    ) as prof:
        for _ in range(steps):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3, help="profiled steps; the last is kept")
    ap.add_argument("--port", type=int, default=29517)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    mp.spawn(_rank, args=(args.ranks, args.out, args.steps, args.port), nprocs=args.ranks)
    tools = Path(sys.executable).parent
    for r in range(args.ranks):  # in OUT: the linker finds the Kineto trace by a relative path
        link = [tools / "chakra_trace_link", "--rank", str(r), "--chakra-host-trace"]
        link += [f"host.{r}.json", "--chakra-device-trace", f"device.{r}.json"]
        subprocess.run([*link, "--output-file", f"linked.{r}.json"], check=True, cwd=args.out)
        convert = [tools / "chakra_converter", "PyTorch", "--input", f"linked.{r}.json"]
        subprocess.run([*convert, "--output", f"ddp.{r}.et"], check=True, cwd=args.out)
    versions = {p: version(p) for p in ("mlc-chakra", "et_replay", "protobuf")}
    versions["torch"] = torch.__version__
    (args.out / "versions.json").write_text(json.dumps(versions, indent=1) + "\n")


if __name__ == "__main__":
    main()
