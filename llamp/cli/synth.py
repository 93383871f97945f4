"""``llamp synth``: write a synthetic stencil trace (benchmarks, demos, scale tests).

``llamp synth OUT.goal --vertices 1e8`` streams the GOAL text of
:func:`llamp.ingest.synthetic.write_stencil_goal` (memory stays small at any size); ``OUT.npz``
builds the graph in memory (:func:`~llamp.ingest.synthetic.stencil_graph`) and saves it.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from llamp.cli.base import check_output, cli, emit_json, json_option
from llamp.errors import InputError
from llamp.messages import bars_shown
from llamp.progress import on_terminal


def _count(text: str) -> int:
    """``1e8``, ``100000000`` or ``10M``-style counts."""
    units = {"k": 1e3, "m": 1e6, "g": 1e9}
    raw = text.strip().lower()
    scale = units.get(raw[-1:], 1.0)
    number = raw[:-1] if raw[-1:] in units else raw
    try:
        value = float(number) * scale
    except ValueError:
        raise InputError(f"--vertices {text!r}: expected a count such as 1e7 or 10M") from None
    if not 1 <= value <= 1e12:
        raise InputError(f"--vertices {text!r}: expected a count between 1 and 10^12")
    return int(value)


@cli.command("synth")
@click.argument("output", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--vertices", default="1e6", show_default=True, help="About this many vertices.")
@click.option("--ranks", default=16, show_default=True, type=click.IntRange(2, 1 << 20))
@click.option("--dims", default=2, show_default=True, type=click.IntRange(1, 2))
@click.option(
    "--allreduce-every", default=1, show_default=True, type=click.IntRange(0), help="0: none."
)
@click.option(
    "--alltoall-every", default=10, show_default=True, type=click.IntRange(0), help="0: none."
)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress on stderr (default: ≥ 10^7 vertices, on a terminal).",
)
@json_option
def synth_cmd(
    output: Path,
    vertices: str,
    ranks: int,
    dims: int,
    allreduce_every: int,
    alltoall_every: int,
    seed: int,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Write a noisy iterative stencil (halo exchange, allreduce, alltoall) to OUTPUT (.goal
    streamed, or .npz)."""
    from llamp.ingest.synthetic import StencilPattern, iterations_for

    check_output(output)
    target = _count(vertices)
    pattern = StencilPattern(
        ranks=ranks,
        dims=dims,
        allreduce_every=allreduce_every,
        alltoall_every=alltoall_every,
        seed=seed,
    )
    iterations = iterations_for(target, pattern)
    if progress is None:
        progress = on_terminal() and target >= 10_000_000
    bars_shown(progress)
    started = time.perf_counter()
    if output.suffix.lower() == ".goal":
        from llamp.ingest.synthetic import write_stencil_goal

        written = write_stencil_goal(output, pattern, iterations=iterations, progress=progress)
        n, lines, size = written.vertices, written.lines, written.bytes
    else:
        from llamp.ingest.synthetic import stencil_graph
        from llamp.lp.lowered import save_graph

        graph = stencil_graph(pattern, iterations=iterations)
        save_graph(graph, output)
        n, lines, size = graph.num_vertices, None, output.stat().st_size
    seconds = round(time.perf_counter() - started, 3)
    result = {
        "output": str(output),
        "ranks": ranks,
        "iterations": iterations,
        "vertices": n,
        "lines": lines,
        "bytes": size,
        "seconds": seconds,
    }
    if as_json:
        emit_json(result)
        return
    click.echo(
        f"{output}: stencil of {ranks} ranks × {iterations} iterations, {n} vertices, "
        f"{size / 1e6:.1f} MB in {seconds:.2f} s"
    )


@cli.command("synth-training")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--dp", default=2, show_default=True, type=click.IntRange(1), help="Data parallel.")
@click.option("--tp", default=2, show_default=True, type=click.IntRange(1), help="Tensor parallel.")
@click.option("--pp", default=2, show_default=True, type=click.IntRange(1), help="Pipeline stages.")
@click.option("--layers", default=8, show_default=True, type=click.IntRange(1))
@click.option("--micro-batches", default=4, show_default=True, type=click.IntRange(1))
@click.option("--hidden", default=4096, show_default=True, type=click.IntRange(1))
@click.option("--seq-len", default=2048, show_default=True, type=click.IntRange(1))
@click.option("--prefix", default="step", show_default=True, help="Files <prefix>.<rank>.et.")
@click.option("--progress/--no-progress", default=None, help="Progress on stderr.")
@json_option
def synth_training_cmd(
    directory: Path,
    dp: int,
    tp: int,
    pp: int,
    layers: int,
    micro_batches: int,
    hidden: int,
    seq_len: int,
    prefix: str,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Write one 3D-parallel transformer training step (dp × tp × pp GPUs) as a Chakra trace
    in DIRECTORY, one rank file at a time."""
    from llamp.ingest.training import TrainingStep, write_training

    step = TrainingStep(
        dp=dp,
        tp=tp,
        pp=pp,
        layers=layers,
        micro_batches=micro_batches,
        hidden=hidden,
        seq_len=seq_len,
    )
    if not prefix or "/" in prefix or prefix.startswith("."):
        raise InputError(f"--prefix {prefix!r}: a plain file-name prefix such as 'step'")
    started = time.perf_counter()
    written = write_training(
        directory, step, prefix=prefix, progress=step.gpus >= 512 if progress is None else progress
    )
    seconds = round(time.perf_counter() - started, 3)
    if as_json:
        emit_json({**written.__dict__, "seconds": seconds})
        return
    click.echo(
        f"{directory}: training step of {step.gpus} GPUs (dp {dp} × tp {tp} × pp {pp}), "
        f"{written.nodes} nodes, {written.bytes / 1e6:.1f} MB in {seconds:.2f} s"
    )
