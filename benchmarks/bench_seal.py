"""What checking a graph file costs on load (docs/SECURITY.md §Graph files), phase by phase.

A graph file (``llamp synth X.npz --vertices N``: the noisy 16-rank stencil with its event
graph for the default configuration) is loaded as ``llamp predict X.npz`` loads it: the members'
headers and sizes (:func:`llamp.ingest.npz.read_npz`), the columns mapped and their seal
checked, :meth:`ExecutionGraph.check_ranges`, then the stored event graph (seal and structure
checks, :func:`llamp.lp.lowered.persisted`). Each phase is the median of ``--repeat`` runs with
the file in the page cache (one warm-up read first).

Rows (one column per file):

- ``load without the checks``: ``numpy.load`` of every member into memory — the zip's CRC
  and nothing else (what a reader that trusts the file pays);
- ``load with the checks``: llamp's load with every array read into memory: the columns
  (:func:`read_npz`), the stored event graph (:func:`persisted`, its arrays copied);
- ``arrays left mapped``: the same without the copies, what ``predict`` waits for before its
  first kernel pass;
- ``of which``: the keyed BLAKE3 digests of every member (the seal, checked instead of the
  CRC), the range checks of the columns, the checks of the stored event graph;
- ``CRC-32 of every member``: what the seal's digest replaces, over the same bytes;
- the checks beyond the seal in percent of the load, and the seal's net cost beside them;
- ``unsealed file: full validation``: :meth:`ExecutionGraph.validate`, which a file from
  elsewhere gets instead of ``check_ranges`` (its event graph is lowered again as well, which
  at 10^7 vertices takes ~20 s: not timed here).

The machine's load average is printed at the start and the end (a shared machine inflates
the seconds; the ratios hold better).

    python -m benchmarks.bench_seal --graph /tmp/s6.npz /tmp/s7.npz [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import zlib
from pathlib import Path

from llamp.graph import NpzMembers
from llamp.seal import Digest, key


def _median(func, repeat: int) -> float:
    runs = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        func()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def _members(path: Path) -> list[memoryview]:
    """Every member's bytes, mapped (read once, so that the page cache holds the file)."""
    import mmap

    views = []
    with open(path, "rb") as f:
        region = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    members = NpzMembers(path)
    for info in members._infos.values():  # noqa: SLF001 - the benchmark reads the layout
        start = info.header_offset + 30
        start += int.from_bytes(region[info.header_offset + 26 : info.header_offset + 28], "little")
        start += int.from_bytes(region[info.header_offset + 28 : info.header_offset + 30], "little")
        views.append(memoryview(region)[start : start + info.file_size])
    return views


def _event_arrays(ev) -> list:
    from llamp.lp.lowered import _ARRAYS

    return [getattr(ev, name) for name in _ARRAYS]


def measure(path: Path, repeat: int) -> list[tuple[str, float]]:
    import numpy as np

    from llamp.ingest.npz import read_npz
    from llamp.lp.lowered import _check, lowering_key, persisted, rendezvous_count
    from llamp.params import LogGPS

    params = LogGPS()
    views = _members(path)
    secret = key() or bytes(32)
    for view in views:  # warm-up: the file in the page cache
        zlib.crc32(view)

    def mapped():
        graph = read_npz(path, lazy=True)
        ev = persisted(graph, lowering_key(rendezvous_count(graph, params.S), params))
        assert ev is not None, "the file's event graph was not used"
        return graph, ev

    def unchecked():
        """numpy's own load: every member into memory, with the zip's CRC and nothing else."""
        with np.load(path) as archive:
            return [archive[name] for name in archive.files]

    def checked():
        """llamp's load, every array into memory: the columns (read_npz), the event graph."""
        graph = read_npz(path)
        ev = persisted(graph, lowering_key(rendezvous_count(graph, params.S), params))
        assert ev is not None, "the file's event graph was not used"
        return graph, [np.array(a) for a in _event_arrays(ev)]

    graph, ev = mapped()
    messages = int(ev.rendezvous.shape[0])
    rows = [("vertices", float(graph.num_vertices)), ("file MB", path.stat().st_size / 1e6)]
    t_plain = _median(unchecked, repeat)
    t_load = _median(checked, repeat)
    t_mapped = _median(mapped, repeat)

    def digests():
        for i, view in enumerate(views):
            d = Digest(secret, "00" * 16, str(i))
            d.update(view)
            d.hexdigest()

    t_digest = _median(digests, repeat)
    t_crc = _median(lambda: [zlib.crc32(v) for v in views], repeat)
    t_ranges = _median(graph.check_ranges, repeat)
    t_events = _median(lambda: _check(ev, path, messages), repeat)
    t_validate = _median(graph.validate, repeat)
    structure = t_ranges + t_events
    rows += [
        ("load without the checks (numpy.load: zip CRC only) s", t_plain),
        ("load with the checks (llamp, every array read) s", t_load),
        ("load with the checks, arrays left mapped s", t_mapped),
        ("of which: seal digests (in place of the CRC) s", t_digest),
        ("of which: range checks of the columns s", t_ranges),
        ("of which: event-graph checks s", t_events),
        ("CRC-32 of every member s", t_crc),
        ("checks beyond the seal, % of the load", 100 * structure / t_load),
        (
            "seal + checks beyond the CRC it replaces, % of the load",
            100 * (t_digest - t_crc + structure) / t_load,
        ),
        ("load with the checks vs without, %", 100 * (t_load - t_plain) / t_plain),
        ("unsealed file: full validation s", t_validate),
    ]
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--graph", required=True, type=Path, nargs="+", help="graph files llamp wrote"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    load_avg = os.getloadavg()[0]
    columns = [dict(measure(path, args.repeat)) for path in args.graph]
    load_after = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"files": columns, "load_average": [load_avg, load_after]}))
        return
    names = list(columns[0])
    width = max(len(name) for name in names)
    print(f"(load average {load_avg:.1f} at the start, {load_after:.1f} at the end)")
    print(f"{'phase':<{width}}" + "".join(f"  {path.name:>14}" for path in args.graph))
    for name in names:
        print(f"{name:<{width}}" + "".join(f"  {c[name]:>14,.3f}" for c in columns))


if __name__ == "__main__":
    main()
