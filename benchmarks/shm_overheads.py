"""Where the time at ΔL = 0 goes on shared memory: ``python -m benchmarks.shm_overheads``.

The experiment behind ``llamp validate --overheads measured`` (``injector/message_costs.py``,
benchmarks/VALIDATION.md §The offset at ΔL = 0). The halo exchange of
``benchmarks/apps/halo.c`` (2 ranks, Irecv/Isend, 50 µs of compute overlapping the messages,
Waitall, 10 µs more) is traced ``--repeat`` times per variant:

- message size 1 KiB (eager in Open MPI's ``vader``), 8 KiB (above its 4 KiB eager limit:
  one ``process_vm_readv`` by the receiver, CMA), 1 MiB;
- 8 KiB with ``btl_vader_eager_limit`` raised to 16 KiB (eager: copied in and out through the
  shared FIFO), and with ``btl_vader_single_copy_mechanism none`` (no CMA: fragments through
  the FIFO).

Per variant: the traced run's span (end of ``MPI_Init`` to start of ``MPI_Finalize``, the
slowest rank), the time its ranks spent inside ``MPI_Waitall`` and ``MPI_Isend`` (mean over
the two ranks, from the trace's enter and exit times), and T at ΔL = 0 predicted from that
trace under the default model with the calibration of the same transport (``llamp calibrate``
with the variant's ``--mca`` options), with ``o`` per message end (``model``) and with the
calibration's per-size overheads charged as CPU (``measured``); the offset is span − T. The
trace's span is what the injected runs at ΔL = 0 measure (within their noise:
``llamp validate`` prints the difference). Needs Open MPI (``mpirun``, ``mpicc``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import warnings
from pathlib import Path

from llamp.config import format_table
from llamp.injector.calibrate import calibrate
from llamp.injector.message_costs import MessageCosts
from llamp.injector.validate import measured_overheads, predict_deltas, traced_runtime_ns

HERE = Path(__file__).resolve().parent

#: (label, message bytes, iterations, extra mpirun options)
VARIANTS = (
    ("1 KiB", 1024, 2000, ()),
    ("8 KiB", 8192, 2000, ()),
    ("8 KiB, eager limit 16 KiB", 8192, 2000, ("--mca", "btl_vader_eager_limit", "16384")),
    ("8 KiB, no single copy", 8192, 2000, ("--mca", "btl_vader_single_copy_mechanism", "none")),
    ("1 MiB", 1 << 20, 500, ()),
)


def time_in_calls(directory: Path, names: tuple[str, ...]) -> dict[str, float]:
    """Mean over ranks of the ns spent inside each named call (liballprof lines
    ``name:enter:…:exit``, times in µs)."""
    files = sorted(directory.glob("pmpi-trace-rank-*.txt"))
    total = dict.fromkeys(names, 0.0)
    for path in files:
        for line in path.read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in total:
                fields = rest.split(":")
                total[name] += (float(fields[-1]) - float(fields[0])) * 1000.0
    return {k: v / max(len(files), 1) for k, v in total.items()}


def run(repeat: int = 3, log=print) -> list[dict]:
    from llamp.ingest import read
    from llamp.ingest.tracing import run_traced

    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    work = Path(tempfile.mkdtemp(prefix="llamp-shm-"))
    halo = work / "halo"
    mpicc = shutil.which("mpicc") or "mpicc"
    subprocess.run([mpicc, "-O2", "-o", str(halo), str(HERE / "apps" / "halo.c")], check=True)
    mpirun = shutil.which("mpirun") or "mpirun"
    fits: dict[tuple[str, ...], tuple] = {}
    rows = []
    for label, size, iterations, mca in VARIANTS:
        if mca not in fits:
            log(f"calibrating with {' '.join(mca) or 'the default transport'}…")
            fit = calibrate([mpirun, *mca, "-n", "2"], iters=200)
            fits[mca] = (fit.params(), MessageCosts.from_calibration(fit))
        params, costs = fits[mca]
        spans, waits, sends, model, measured = [], [], [], [], []
        for k in range(repeat):
            trace = work / f"{size}-{len(rows)}-{k}"
            command = [mpirun, *mca, "-n", "2", str(halo), "-n", str(iterations)]
            command += ["-s", str(size), "-c", "50", "-b", "10"]
            run_traced(command, trace, overwrite=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                graph = read(trace, fmt="liballprof", name="halo")
            spans.append(traced_runtime_ns(sorted(trace.glob("pmpi-trace-rank-*.txt"))))
            inside = time_in_calls(trace, ("MPI_Waitall", "MPI_Isend"))
            waits.append(inside["MPI_Waitall"])
            sends.append(inside["MPI_Isend"])
            model.append(float(predict_deltas(graph, params, [0.0])["runtime_ns"].iloc[0]))
            charged, wired = measured_overheads(graph, params, costs)
            measured.append(float(predict_deltas(charged, wired, [0.0])["runtime_ns"].iloc[0]))
        span = statistics.mean(spans)
        row = {
            "variant": label,
            "runs": repeat,
            "span_ns": span,
            "span_sd_ns": statistics.stdev(spans) if repeat > 1 else float("nan"),
            "waitall_ns": statistics.mean(waits),
            "isend_ns": statistics.mean(sends),
            "model_ns": statistics.mean(model),
            "measured_ns": statistics.mean(measured),
            "o_ns": params.o,
            "recv_extra_ns": float(costs.recv_extra([size])[0]),
            "send_extra_ns": float(costs.send_extra([size])[0]),
        }
        rows.append(row)
        log(f"  {label}: {row}")
    shutil.rmtree(work, ignore_errors=True)
    return rows


def table(rows: list[dict]) -> str:
    def ms(x: float) -> str:
        return f"{x / 1e6:.2f} ms"

    def off(span: float, t: float) -> str:
        return f"{ms(t)} ({(span - t) / span * 100:+.1f} %)"

    return format_table(
        [
            (
                r["variant"],
                r["runs"],
                f"{ms(r['span_ns'])} ± {ms(r['span_sd_ns'])}",
                ms(r["waitall_ns"]),
                ms(r["isend_ns"]),
                f"{r['recv_extra_ns']:.0f} / {r['send_extra_ns']:.0f} ns",
                off(r["span_ns"], r["model_ns"]),
                off(r["span_ns"], r["measured_ns"]),
            )
            for r in rows
        ],
        (
            "halo, 2 ranks",
            "runs",
            "traced span (mean ± sd)",
            "in MPI_Waitall",
            "in MPI_Isend",
            "measured extra: recv / send",
            "T, model (offset)",
            "T, measured overheads (offset)",
        ),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="traced runs per variant")
    args = parser.parse_args()
    print(table(run(repeat=args.repeat)))


if __name__ == "__main__":
    main()
