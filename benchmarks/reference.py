"""The LogGOPSim reference set: GOAL graphs and LogGOPSim's T on them, as committed test facts.

``python -m benchmarks.reference --loggopsim PATH [--graphs]``

- ``--graphs`` (re)writes the generated graphs of ``tests/data/reference/``: every Schedgen
  pattern at an eager and a rendezvous size and 4, 16 and 64 ranks (``schedgen`` next to
  LogGOPSim), Schedgen's conversions of the liballprof traces in ``tests/data/traces``, and
  llamp's noisy stencil (:func:`llamp.ingest.synthetic.stencil_with_vertices`, 16 ranks, an
  alltoall every 10th iteration) written with :func:`llamp.ingest.goal.write_goal`; then
  ``PROVENANCE.md`` with the command that made each one. The hand-written graphs
  (``minimal/``, ``multi/``) are kept as they are.
- Always: runs LogGOPSim on every ``.goal`` under ``tests/data/reference/`` at
  L ∈ {0, 3, 10, 20, …, 100} µs for (g, G) ∈ {(0, 0), (0, 6 ns/B), (1 µs, 0)}, o = 1.5 µs,
  S = 65535 B, O = 0 and writes ``loggopsim.json``: per graph and (g, G) the 12 values of T in
  ns, in the order of ``L_ns``.

LogGOPSim takes integral ns and ns/B; its T is the largest CPU clock of any rank (its
``Maximum finishing time`` line).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.bench_peers import find_tools, loggopsim_runtime

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests/data/reference"
FACTS = REFERENCE / "loggopsim.json"
TRACES = ROOT / "tests/data/traces/liballprof"
SAMPLES = ROOT / "tests/data/traces/goal"

L_NS = [0, 3000] + [10_000 * i for i in range(1, 11)]
GAPS = [(0, 0), (0, 6), (1000, 0)]  # (g ns, G ns/B)
O_NS, S_BYTES = 1500, 65535
EAGER_BYTES, RENDEZVOUS_BYTES = 1024, 1 << 20
RANKS = (4, 16, 64)
#: Patterns whose GOAL grows as P²: 32 ranks at most, to keep the committed set small.
QUADRATIC = {"allreduce_ring", "chained_dissem", "linear_alltoall", "linear_alltoallv"}

#: Schedgen patterns (``-p``) and the extra options each needs; ``{size}`` is the data size.
PATTERNS: dict[str, list[str]] = {
    "binarytreebcast": [],
    "binomialtreebcast": [],
    "binomialtreereduce": [],
    "dissemination": [],
    "nwaydissemination": ["--nway", "2"],
    "allreduce_recdoub": [],
    "allreduce_ring": [],
    "pipelinedring": ["--segmentsize", "{segment}"],
    "pipelinedringdep": ["--segmentsize", "{segment}"],
    "doublering": [],
    "gather": [],
    "scatter": [],
    "linbarrier": [],
    "random_bisect": [],
    "random_bisect_fd_sym": [],
    "linear_alltoall": [],
    "linear_alltoallv": [],
    "chained_dissem": [],
}
#: Patterns beyond the (pattern, size, ranks) grid: fixed sizes, non-blocking, a second CPU.
EXTRA: dict[str, list[str]] = {
    "resnet-p4": ["-p", "resnet", "-s", "4"],
    "resnet-p16": ["-p", "resnet", "-s", "16"],
    "nwaydissemination3-p16-eager": [
        "-p", "nwaydissemination", "--nway", "3", "-s", "16", "-d", str(EAGER_BYTES),
    ],
    "binomialtreebcast-nb-cpu1-p16-eager": [
        "-p", "binomialtreebcast", "-s", "16", "-d", str(EAGER_BYTES),
        "--nb", "5000", "--nb-poll", "1000", "--cpu", "1",
    ],
    "allreduce_recdoub-nb-cpu1-p16-rendezvous": [
        "-p", "allreduce_recdoub", "-s", "16", "-d", str(RENDEZVOUS_BYTES),
        "--nb", "20000", "--nb-poll", "5000", "--cpu", "1",
    ],
}  # fmt: skip
#: Schedgen's trace conversion (``-p trace``) of the shipped liballprof traces.
TRACE_RANK0 = {
    "sweep3d-2x2": "sweep3d-2x2/pmpi-trace-rank-0.txt",
    "bcast-synthetic": "bcast-synthetic/trace_bcast-0.dat",
    "lulesh-p8": "lulesh-p8/pmpi-trace-rank-0.txt",
}
STENCIL_VERTICES = 8_000
#: Real traces of other formats, as llamp reads them (written as GOAL by llamp).
LLAMP_TRACES = {
    "sstmacro-10ranks-otf2": "tests/data/traces/otf2/sstmacro-10ranks",
    "sst-dumpi-4ranks": "tests/data/traces/dumpi/sst-dumpi-4ranks",
}


@dataclass(frozen=True)
class Made:
    """A generated reference graph and the command that made it."""

    path: Path
    command: str


def _size_name(size: int) -> str:
    return "eager" if size <= S_BYTES else "rendezvous"


def schedgen_graphs(schedgen: Path) -> list[Made]:
    """Every Schedgen pattern at both sizes and every rank count, the extras and the traces."""
    out_dir = REFERENCE / "schedgen"
    out_dir.mkdir(parents=True, exist_ok=True)
    made: list[Made] = []
    jobs: list[tuple[str, list[str]]] = []
    for pattern, extra in PATTERNS.items():
        for size in (EAGER_BYTES, RENDEZVOUS_BYTES):
            for ranks in (4, 16, 32) if pattern in QUADRATIC else RANKS:
                fill = {"segment": str(size // 4)}
                args = ["-p", pattern, "-s", str(ranks), "-d", str(size)]
                args += [a.format(**fill) for a in extra]
                jobs.append((f"{pattern}-p{ranks}-{_size_name(size)}", args))
    jobs += list(EXTRA.items())
    for name, args in jobs:
        target = out_dir / f"{name}.goal"
        _run([schedgen, *args, "-o", target])
        made.append(Made(target, shlex.join(["schedgen", *args, "-o", target.name])))
    trace_dir = REFERENCE / "traces"
    trace_dir.mkdir(parents=True, exist_ok=True)
    for name, rank0 in TRACE_RANK0.items():
        target = trace_dir / f"{name}.goal"
        args = ["-p", "trace", "--traces", str(TRACES / rank0)]
        _run([schedgen, *args, "-o", target])
        shown = ["-p", "trace", "--traces", f"tests/data/traces/liballprof/{rank0}"]
        made.append(Made(target, shlex.join(["schedgen", *shown, "-o", target.name])))
    return made


def llamp_graphs() -> list[Made]:
    """llamp's own graphs: the noisy 16-rank stencil, and the OTF2 and DUMPI traces of
    ``tests/data/traces`` as llamp ingests them (collectives expanded by its defaults)."""
    import warnings

    from llamp.ingest import read
    from llamp.ingest.goal import write_goal
    from llamp.ingest.synthetic import stencil_with_vertices

    out_dir = REFERENCE / "llamp"
    out_dir.mkdir(parents=True, exist_ok=True)
    graph = stencil_with_vertices(STENCIL_VERTICES, ranks=16, alltoall_every=10)
    target = out_dir / "stencil-p16-noisy.goal"
    write_goal(graph, target)
    call = (
        f"write_goal(stencil_with_vertices({STENCIL_VERTICES}, ranks=16, alltoall_every=10), "
        f"{target.name!r})"
    )
    made = [Made(target, call)]
    for name, trace in LLAMP_TRACES.items():
        target = out_dir / f"{name}.goal"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the calls it absorbs are the reader's business
            write_goal(read(ROOT / trace), target)
        made.append(Made(target, f"write_goal(read({trace!r}), {target.name!r})"))
    return made


def _run(argv: list) -> bytes:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, check=False)
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"{shlex.join(str(a) for a in argv)} exited {proc.returncode}: {tail}")
    return proc.stdout


def reference_graphs() -> list[Path]:
    """Every reference graph: those under ``tests/data/reference`` (sorted), then the GOAL
    samples of ``tests/data/traces/goal``."""
    return sorted(REFERENCE.rglob("*.goal")) + sorted(SAMPLES.glob("*.goal"))


def graph_name(path: Path) -> str:
    """A reference graph's key in the facts file: its path relative to ``tests/data/reference``
    (``../traces/goal/…`` for the samples)."""
    return Path(os.path.relpath(path, REFERENCE)).as_posix()


def gap_key(g_ns: int, G_ns_per_byte: int) -> str:
    """The facts file's key of one (g, G) pair, e.g. ``g0_G6``."""
    return f"g{g_ns}_G{G_ns_per_byte}"


def loggopsim_facts(
    sim: Path, txt2bin: Path, label: str, goals: dict[str, Path] | None = None
) -> dict:
    """LogGOPSim's T at every point (see the module docstring) for ``goals`` (name → GOAL
    file; default: every reference graph, named by :func:`graph_name`)."""
    if goals is None:
        goals = {graph_name(p): p for p in reference_graphs()}
    graphs: dict[str, dict[str, list[int]]] = {}
    with tempfile.TemporaryDirectory(prefix="llamp-reference-") as tmp:
        binfile = Path(tmp) / "graph.bin"
        for name, goal in goals.items():
            _run([txt2bin, "-i", goal, "-o", binfile])
            try:
                graphs[name] = {
                    gap_key(g, G): [_loggopsim_T(sim, binfile, L, g, G) for L in L_NS]
                    for g, G in GAPS
                }
            except RuntimeError as err:
                graphs[name] = {"error": str(err)[:200]}
            print(f"# {name}: {graphs[name]}"[:120], file=sys.stderr, flush=True)
    return {
        "loggopsim": {
            "version": label,
            "sha256": hashlib.sha256(sim.read_bytes()).hexdigest(),
            "command": "LogGOPSim -f GRAPH.bin -L L -o 1500 -g g -G G -S 65535 -b "
            "(GRAPH.bin from txt2bin -i GRAPH.goal)",
        },
        "o_ns": O_NS,
        "S_bytes": S_BYTES,
        "L_ns": L_NS,
        "gaps": [{"key": gap_key(g, G), "g_ns": g, "G_ns_per_byte": G} for g, G in GAPS],
        "graphs": graphs,
    }


def _loggopsim_T(sim: Path, binfile: Path, L: int, g: int, G: int) -> int:
    argv = [sim, "-f", binfile, "-L", L, "-o", O_NS, "-g", g, "-G", G, "-S", S_BYTES, "-b"]
    proc = subprocess.run([str(a) for a in argv], capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"LogGOPSim exited {proc.returncode} at L={L}, g={g}, G={G}")
    try:
        return loggopsim_runtime(proc.stdout)
    except RuntimeError:
        lines = [x for x in proc.stdout.decode(errors="replace").splitlines() if "queue" in x]
        raise RuntimeError(f"LogGOPSim printed no T at L={L}, g={g}, G={G}: {lines[:2]}") from None


def write_provenance(made: list[Made]) -> None:
    """``PROVENANCE.md``: where every graph under ``tests/data/reference`` comes from."""
    rows = "\n".join(
        f"| `{m.path.relative_to(REFERENCE).as_posix()}` | `{m.command}` |" for m in made
    )
    (REFERENCE / "PROVENANCE.md").write_text(_PROVENANCE.format(rows=rows))


_PROVENANCE = """\
# The LogGOPSim reference set

GOAL graphs and LogGOPSim's runtime `T` on them (`loggopsim.json`), read by
`tests/test_reference_agreement.py` and `benchmarks/bench_agreement.py`. Everything here is
made by `python -m benchmarks.reference --loggopsim PATH --graphs` (Schedgen is taken from the
directory of LogGOPSim); without `--graphs` it only re-runs LogGOPSim and rewrites
`loggopsim.json`.

- `loggopsim.json`: for every graph that LogGOPSim completes (the others have `error`: its exit
  status or the receives it left unmatched) and every (g, G) in {{(0, 0), (0, 6 ns/B), (1 µs, 0)}}, `T`
  in ns at the 12 latencies of `L_ns` (0, 3, 10, 20, …, 100 µs), o = 1.5 µs, S = 65535 B,
  O = 0, from the LogGOPSim binary whose version and SHA-256 it records.
- `schedgen/`: Schedgen's collective patterns (spcl/LogGOPSim toolchain, BSD-style licence
  with the SPCL acknowledgement clause), 1 KiB (eager) and 1 MiB (rendezvous, above S) at 4, 16
  and 64 ranks (4, 16 and 32 where the GOAL grows as P²), plus the fixed-size ResNet pattern, a 3-way dissemination and two
  non-blocking patterns whose local computation runs on CPU 1 (multi-CPU GOAL). Schedgen seeds
  `random_bisect` and `random_bisect_fd_sym` from the clock: regenerating them gives other
  pairings (and new facts, measured with them).
- `traces/`: Schedgen's conversion (`-p trace`) of the liballprof traces in
  `tests/data/traces/liballprof/` (their provenance: `tests/data/traces/PROVENANCE.md`).
- `llamp/`: llamp's own generator, the noisy 16-rank stencil; and the OTF2 (SST/macro, 10
  ranks) and DUMPI (4 ranks) traces of `tests/data/traces/` as llamp reads them, written as GOAL
  by llamp (their provenance: `tests/data/traces/PROVENANCE.md`).
- `minimal/`: hand-written graphs, a few lines each, that isolate one rule of the model (the
  CPU stream of a rank, receive order, late receives, rendezvous) or one defect of LogGOPSim
  (the leading comment of each file says which).
- `multi/`: hand-written multi-CPU and multi-NIC graphs (`cpu N`, `nic N`).
- The GOAL samples in `tests/data/traces/goal/` (LogGOPSim's own `binary_tree_32.goal`, BSD-style;
  LLAMP's `blocking.goal` and `non_blocking.goal`, MIT) are measured where they are
  (`../traces/goal/…` in `loggopsim.json`).

| graph | made by |
|---|---|
{rows}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reference", description=__doc__)
    parser.add_argument("--loggopsim", metavar="PATH", help="LogGOPSim binary ($LOGGOPSIM)")
    parser.add_argument("--graphs", action="store_true", help="regenerate the graphs first")
    parser.add_argument(
        "--version-label",
        default="spcl/LogGOPSim 76451de",
        help="LogGOPSim's version as recorded in the facts file",
    )
    args = parser.parse_args(argv)
    tools = find_tools(args.loggopsim)
    if tools is None:
        raise SystemExit("python -m benchmarks.reference needs --loggopsim PATH or LOGGOPSIM")
    sim, txt2bin = tools
    if args.graphs:
        schedgen = sim.with_name("schedgen")
        if not schedgen.is_file():
            raise SystemExit(f"--graphs needs schedgen next to {sim}")
        write_provenance(schedgen_graphs(schedgen) + llamp_graphs())
    facts = loggopsim_facts(sim, txt2bin, args.version_label)
    FACTS.write_text(json.dumps(facts, indent=1) + "\n")
    print(f"wrote {FACTS.relative_to(ROOT)}: {len(facts['graphs'])} graphs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
