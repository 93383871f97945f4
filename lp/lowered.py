"""Lowered event graphs kept in the graph file, so a process does not lower again.

Lowering an execution graph to its event graph (:func:`llamp.lp.event_graph.build_event_graph`) costs
far more than a sweep over it (10^6 vertices: ~1.4 s against ~12 ms), and every CLI process
used to redo it. :func:`save_graph` writes the graph together with its event graph for the
given configurations (by default the configured defaults); :func:`persisted` finds one for a
configuration in the file a graph was loaded from, memory-mapped (:class:`NpzMembers`: a
process only pays for the pages a sweep touches).

Layout inside the ``.npz``: ``lowering_index`` (JSON: the :data:`LOWERING_VERSION`, and per
lowering its rendezvous count, S, progress and NIC models), ``lowering_sizes`` /
``lowering_size_counts`` (the distinct message sizes and how many messages have each, so the
rendezvous set of any S is known without reading the graph), and the arrays of lowering ``i``
as ``lowering_<i>_<field>``. A lowering is identified by what shapes the event graph: the
rendezvous set (its size: S splits the sorted sizes), the progress and the NIC model. A file
whose lowering has another version is lowered again, with a note; it is never misread.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import warnings
import zipfile
from pathlib import Path

import numpy as np

from llamp import checks
from llamp.errors import InputError, LlampError
from llamp.graph import ARRAY_FIELDS, ExecutionGraph, NpzMembers, write_npy, write_seal
from llamp.lp.event_graph import LOWERING_STEPS, LOWERING_VERSION, EventGraph
from llamp.params import LogGPS
from llamp.progress import StepBar
from llamp.seal import Sealer

INDEX = "lowering_index"
SIZES = "lowering_sizes"
SIZE_COUNTS = "lowering_size_counts"

_ARRAYS = (
    "src",
    "pattern",
    "value",
    "fixed",
    "scaled",
    "msg",
    "event_of_pos",
    "pos_of_event",
    "in_ptr",
    "out_ptr",
    "out_edge",
    "rendezvous",
    "extra_owner",
)

LoweringKey = tuple


def lowering_key(rendezvous: int, params: LogGPS) -> LoweringKey:
    """(rendezvous count, progress, nic, order, rendezvous protocol, schedule parameters or
    ()): configurations with equal keys share one event graph."""
    return (int(rendezvous), *params.lowering)


def message_sizes(graph: ExecutionGraph) -> tuple[np.ndarray, np.ndarray]:
    """(distinct message sizes ascending, messages of each size) — from the graph file's table
    when there is one (no column is read), else from the graph."""
    table = _file(graph)
    if table is not None and SIZES in table.members and SIZE_COUNTS in table.members:
        sizes, counts = table.members.array(SIZES), table.members.array(SIZE_COUNTS)
        if _bound(graph, table, (SIZES, SIZE_COUNTS)):
            return sizes, counts
    sizes = graph.size[graph.messages()[0]]
    return np.unique(sizes, return_counts=True)


def rendezvous_count(graph: ExecutionGraph, S: int) -> int:
    """Messages larger than ``S`` (the rendezvous set: same count ⇔ same set)."""
    sizes, counts = message_sizes(graph)
    return int(counts[np.searchsorted(sizes, S, side="right") :].sum())


#: Graphs of at least this many vertices are saved through the low-memory path
#: (:func:`save_graph` ``spill``): the in-memory lowering needs ~200 B per vertex (2.2 GB
#: at 10^7).
SPILL_VERTICES = 5_000_000


def save_graph(
    graph: ExecutionGraph,
    path: str | Path,
    configs: tuple[LogGPS, ...] = (LogGPS(),),
    *,
    spill: bool | None = None,
    progress: bool = False,
) -> Path:
    """Write ``graph`` to ``path`` (``.npz``) with its event graphs for ``configs``.

    ``spill`` (default: for graphs of :data:`SPILL_VERTICES` vertices or more) saves the graph's
    columns first, then lowers from that file, memory-mapped, with the lowering's per-edge
    columns in scratch files beside ``path`` (:func:`build_event_graph` ``scratch``), and appends
    each lowered array to the file as it is written. The columns of ``graph`` itself are
    replaced by the mapped ones (same values, read-only), so the in-memory copy is freed: at
    10^8 vertices the graph (4.8 GB) and its event graph (11 GB) are never resident together.
    The file holds the same arrays either way. ``progress``: a bar on stderr per lowering step.
    """
    path = Path(path)
    sizes, counts = np.unique(graph.size[graph.messages()[0]], return_counts=True)
    extra: dict[str, np.ndarray] = {SIZES: sizes.astype(np.int64), SIZE_COUNTS: counts}
    keys: dict[LoweringKey, LogGPS] = {}
    for params in configs:
        rendezvous = int(counts[np.searchsorted(sizes, params.S, side="right") :].sum())
        keys.setdefault(lowering_key(rendezvous, params), params)
    if spill is None:
        spill = graph.num_vertices >= SPILL_VERTICES
    if spill:
        return _save_spilled(graph, path, keys, extra, progress)
    return _save_overlapped(graph, path, keys, extra)


def _save_overlapped(
    graph: ExecutionGraph,
    path: Path,
    keys: dict[LoweringKey, LogGPS],
    extra: dict[str, np.ndarray],
) -> Path:
    """:func:`save_graph` in memory: the graph's columns are written by a second thread while
    this one lowers (the writes and their CRCs release the GIL, as do most of the lowering's
    passes: on two cores the write costs little wall time), then each lowering is appended to
    the same (temporary) file, renamed into place at the end."""
    from llamp.lp.engine import engine_for

    tmp = path.with_name(f"{path.name}.{os.getpid()}.lowering.npz")
    failed: list[BaseException] = []

    sealer = Sealer()

    def write_columns() -> None:
        try:
            graph.save(tmp, extra=extra, sealer=sealer)
        except BaseException as err:  # noqa: BLE001 - raised again by the lowering thread
            failed.append(err)

    writer = threading.Thread(target=write_columns, name="llamp-save-columns")
    writer.start()
    try:
        try:
            engine = engine_for(graph)
            lowerings = [(key[0], engine.events(params)) for key, params in keys.items()]
        finally:
            writer.join()
        if failed:
            raise failed[0]
        for i, (_, ev) in enumerate(lowerings):
            _append_lowering(tmp, i, ev, sealer)
        _append_index(tmp, [_entry(rendezvous, ev) for rendezvous, ev in lowerings], sealer)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _append_lowering(
    tmp: Path, i: int, ev: EventGraph, sealer: Sealer, *, release_arrays: bool = False
) -> None:
    """The arrays of lowering ``i`` appended to the zip ``tmp`` (``release_arrays``: their
    mapped pages dropped once written)."""
    from llamp.lp.event_graph import release

    with zipfile.ZipFile(tmp, mode="a", compression=zipfile.ZIP_STORED) as archive:
        for name in _ARRAYS:
            array = np.asarray(getattr(ev, name))
            write_npy(archive, f"lowering_{i}_{name}", array, sealer=sealer)
            if release_arrays:
                release(array)


def _append_index(tmp: Path, entries: list[dict], sealer: Sealer) -> None:
    """The lowering index, then the seal over every member of the file."""
    with zipfile.ZipFile(tmp, mode="a", compression=zipfile.ZIP_STORED) as archive:
        write_npy(archive, INDEX, _index(entries), force_zip64=False, sealer=sealer)
        write_seal(archive, sealer)


def _entry(rendezvous: int, ev: EventGraph) -> dict:
    return {
        "rendezvous": rendezvous,
        "S": ev.S,
        "progress": ev.progress,
        "nic": ev.nic,
        "order": ev.order,
        "rendezvous_model": ev.rendezvous_model,
        "schedule_at": list(ev.schedule_at),
        "num_vertices": ev.num_vertices,
        "num_events": ev.num_events,
        "num_handshakes": ev.num_handshakes,
    }


def _index(entries: list[dict]) -> np.ndarray:
    index = {"version": LOWERING_VERSION, "lowerings": entries}
    return np.frombuffer(json.dumps(index).encode(), dtype=np.uint8)


def _save_spilled(
    graph: ExecutionGraph,
    path: Path,
    keys: dict[LoweringKey, LogGPS],
    extra: dict[str, np.ndarray],
    progress: bool,
) -> Path:
    """:func:`save_graph` in bounded memory (its ``spill``): graph columns, then each lowering
    appended member by member to the same (temporary) zip, renamed into place at the end."""
    from llamp.lp.event_graph import build_event_graph

    tmp = path.with_name(f"{path.name}.{os.getpid()}.spill.npz")
    scratch = Path(tempfile.mkdtemp(prefix=f".{path.name}.{os.getpid()}.", dir=path.parent))
    bar = StepBar(1 + (len(LOWERING_STEPS) + 1) * len(keys), "saving", show=progress)
    sealer = Sealer()
    try:
        bar.step("saving the graph")
        graph.save(tmp, extra=extra, sealer=sealer)
        mapped = ExecutionGraph.load(tmp, lazy=True, validate=False)
        for name in _COLUMNS:  # the in-memory columns go; the mapped ones take their place
            setattr(graph, name, getattr(mapped, name))
        del mapped
        entries = []
        for i, (key, params) in enumerate(keys.items()):
            rendezvous = key[0]
            ev = build_event_graph(
                graph,
                params.S,
                progress=params.progress,
                nic=params.nic,
                order=params.order,
                rendezvous=params.rendezvous,
                schedule_at=params.schedule_at,
                scratch=scratch,
                on_step=lambda what, i=i: bar.step(f"lowering {i + 1}/{len(keys)}: {what}"),
            )
            bar.step(f"writing lowering {i + 1}/{len(keys)}")
            _append_lowering(tmp, i, ev, sealer, release_arrays=True)
            entries.append(_entry(rendezvous, ev))
            del ev
        _append_index(tmp, entries, sealer)
        tmp.replace(path)
        graph.source = path
        graph.__dict__.pop("_lowered_file", None)
        if sealer.secret is not None:  # its columns are the ones just sealed
            graph.__dict__["_seal"] = sealer.file_id
        return path
    finally:
        bar.close()
        shutil.rmtree(scratch, ignore_errors=True)
        tmp.unlink(missing_ok=True)


#: The array fields of :class:`ExecutionGraph` (replaced by mapped ones after a spilled save;
#: not ``label``: mapped, it would be a str column instead of objects).
_COLUMNS = ARRAY_FIELDS


class _GraphFile:
    """The lowering index of one graph file (read once per graph)."""

    def __init__(self, path: Path):
        self.members = NpzMembers(path)
        self.path = path
        self.index = self.members.json(INDEX) if INDEX in self.members else None
        self.noted = False
        #: Why its event graph could not be used, for a file kept as a cache (:func:`renew`).
        self.stale: str | None = None


def _file(graph: ExecutionGraph) -> _GraphFile | None:
    if graph.source is None:
        return None
    cached = graph.__dict__.get("_lowered_file", False)
    if cached is False:
        cached = None
        if Path(graph.source).suffix == ".npz" and Path(graph.source).is_file():
            cached = _GraphFile(Path(graph.source))
        graph.__dict__["_lowered_file"] = cached
    return cached


def release_pages(graph: ExecutionGraph) -> None:
    """Drop the memory-mapped pages of ``graph``'s columns and of its stored event graphs from
    this process's resident set (they stay in the page cache; the next access maps them
    again). Between the stages of a report at 10^8 vertices: each stage then holds only what
    it reads (~5 GB for a sweep), not everything the stages before it touched."""
    from llamp.lp.event_graph import release

    release(*(getattr(graph, name) for name in _COLUMNS), graph.label)
    table = graph.__dict__.get("_lowered_file")
    if table:
        table.members.release()


def _bound(graph: ExecutionGraph, table: _GraphFile, names) -> bool:
    """Whether the members ``names`` (read already) and ``graph``'s columns carry one seal of
    this installation: written together, from these columns, unchanged (:mod:`llamp.seal`)."""
    seal = graph.__dict__.get("_seal")
    return seal is not None and seal == table.members.file_id and table.members.sealed(names)


#: Key in a graph's ``__dict__`` of the callback that marks its file as a cache llamp keeps
#: (a store's graph file: :meth:`llamp.graphdb.store.GraphStore.load_run`): a stored event
#: graph that cannot be used is then replaced by the one lowered again (:func:`renew`), and
#: the callback says so, once, instead of the note asking the user to save the file again.
CACHE_NOTE = "_cache_note"


def _note(table: _GraphFile, why: str, graph: ExecutionGraph | None = None) -> None:
    if graph is not None and graph.__dict__.get(CACHE_NOTE) is not None:
        table.stale = table.stale or why
        return
    if not table.noted:
        table.noted = True
        warnings.warn(
            f"{table.path}: {why}; lowering again (save the graph again to keep the new one)",
            stacklevel=4,
        )


def persisted(graph: ExecutionGraph, key: LoweringKey) -> EventGraph | None:
    """The event graph for ``key`` stored in the file ``graph`` was loaded from, or None.

    Used only when this installation sealed it together with the graph's columns: a lowering
    that does not come from the costs beside it (edited, copied from another file, written
    elsewhere) would give another T with no sign of it, so it is lowered again, with a note;
    so is a damaged one (a member whose bytes match neither its seal nor its CRC).
    """
    table = _file(graph)
    if table is None or table.index is None:
        return None
    index = table.index
    if not isinstance(index, dict) or index.get("version") != LOWERING_VERSION:
        version = index.get("version") if isinstance(index, dict) else None
        _note(
            table,
            f"its event graph was written by another llamp version (lowering {version}, "
            f"this one reads {LOWERING_VERSION})",
            graph,
        )
        return None
    if not _bound(graph, table, (INDEX,)):
        _note(table, "its event graph is not sealed by this installation with its graph", graph)
        return None
    for i, entry in enumerate(index.get("lowerings", [])):
        stored = (
            entry.get("rendezvous"),
            entry.get("progress"),
            entry.get("nic"),
            entry.get("order"),
            entry.get("rendezvous_model"),
            tuple(entry.get("schedule_at", ())),
        )
        if stored != key:
            continue
        if entry.get("num_vertices") != graph.num_vertices:
            raise InputError(f"{table.path}: its event graph does not belong to its graph")
        names = [f"lowering_{i}_{name}" for name in _ARRAYS]
        try:
            arrays = {name: table.members.array(f"lowering_{i}_{name}") for name in _ARRAYS}
        except InputError as err:  # a cache of the graph: its damage costs a lowering, no more
            _note(table, f"its event graph is damaged ({err.__cause__ or err})", graph)
            return None
        if not _bound(graph, table, names):
            _note(table, "its event graph is not sealed by this installation with its graph", graph)
            return None
        ev = EventGraph(
            num_vertices=int(entry["num_vertices"]),
            num_events=int(entry["num_events"]),
            S=int(entry["S"]),
            num_handshakes=int(entry["num_handshakes"]),
            progress=str(entry["progress"]),
            nic=str(entry["nic"]),
            order=str(entry["order"]),
            rendezvous_model=str(entry["rendezvous_model"]),
            schedule_at=tuple(float(x) for x in entry["schedule_at"]),
            **arrays,
        )
        # The checks read every array once; each is released from the resident set after its
        # pass (the analyses touch what they use, when they do).
        try:
            _check(
                ev,
                table.path,
                int(table.members.array(SIZE_COUNTS).sum()),
                lambda *names, i=i: table.members.release(f"lowering_{i}_{n}" for n in names),
            )
        except InputError:
            if graph.__dict__.get(CACHE_NOTE) is None:
                raise
            _note(table, "its event graph is inconsistent", graph)  # a cache: lowered again
            return None
        return ev
    return None


def renew(graph: ExecutionGraph, key: LoweringKey, ev: EventGraph) -> None:
    """Replace the file of ``graph`` by one holding ``ev``, the event graph for ``key`` just
    lowered again because the stored one could not be used (damaged, unsealed, of another
    version) — only for a file kept as a cache (:data:`CACHE_NOTE`), so that the next process
    maps a sound event graph instead of lowering again. Written to a temporary file beside it
    and renamed over it (a reader sees the old file or the new one); the cache's callback
    gets one line saying what was done. Best effort: if the file cannot be written, the next
    process lowers again and says so again."""
    table = graph.__dict__.get("_lowered_file")
    note = graph.__dict__.get(CACHE_NOTE)
    if not table or table.stale is None or note is None:
        return
    why, table.stale = table.stale, None
    sealer = Sealer()
    if sealer.secret is None:  # unsealed, it would be refused again: nothing to gain
        note(f"{why}; lowered it again (without this installation's seal key it is not kept)")
        return
    path = table.path
    tmp = path.with_name(f"{path.name}.{os.getpid()}.lowering.npz")  # swept if killed
    sizes, counts = np.unique(graph.size[graph.messages()[0]], return_counts=True)
    try:
        graph.save(tmp, extra={SIZES: sizes.astype(np.int64), SIZE_COUNTS: counts}, sealer=sealer)
        _append_lowering(tmp, 0, ev, sealer)
        _append_index(tmp, [_entry(key[0], ev)], sealer)
        tmp.replace(path)
    except (OSError, LlampError) as err:
        note(f"{why}; lowered it again, but could not write it back ({err})")
        return
    finally:
        tmp.unlink(missing_ok=True)
    graph.__dict__.pop("_lowered_file", None)
    graph.__dict__["_seal"] = sealer.file_id
    note(f"{why}; lowered it again and wrote it back")


def _check(ev: EventGraph, path: Path, messages: int, checked=lambda *names: None) -> None:
    """Structure a sweep relies on (it reads arrays unchecked): sizes, index ranges, and every
    edge going forward in position order. Raises :class:`InputError` on a damaged lowering.
    ``checked(*names)`` is called once the arrays ``names`` have been read."""
    n, E = ev.num_events, ev.num_edges
    K = ev.fixed.shape[0]
    ok = (
        ev.in_ptr.shape == (n + 1,)
        and ev.out_ptr.shape == (n + 1,)
        and ev.out_edge.shape == (E,)
        and ev.pattern.shape == (E,)
        and ev.value.shape == (E,)
        and ev.msg.shape == (E,)
        and ev.event_of_pos.shape == (n,)
        and ev.pos_of_event.shape == (n,)
        and ev.fixed.shape == ev.scaled.shape
        and ev.fixed.ndim == 2
        and ev.fixed.shape[1] == 5
        and ev.rendezvous.shape == (messages,)
    )
    if not ok:
        raise InputError(f"{path}: damaged llamp graph file (its event graph is inconsistent)")

    def job(test, *names):
        def run():
            passed = test()
            checked(*names)
            return passed

        return run

    ok = all(
        checks.together(
            [  # independent passes, the longest first
                job(lambda: checks.forward_csr(ev.in_ptr, ev.src), "src", "in_ptr"),
                job(lambda: _within(ev.msg, -1, messages), "msg"),
                job(lambda: _within(ev.out_edge, 0, E), "out_edge"),
                job(lambda: _pointers(ev.out_ptr, E), "out_ptr"),
                job(lambda: _within(ev.event_of_pos, 0, n), "event_of_pos"),
                job(lambda: _within(ev.pos_of_event, 0, n), "pos_of_event"),
                job(lambda: _within(ev.pattern, 0, K), "pattern"),
            ],
            n + E,
        )
    )
    if not ok:
        raise InputError(f"{path}: damaged llamp graph file (its event graph is inconsistent)")


def _within(column: np.ndarray, low: int, high: int) -> bool:
    """Every value in ``low..high-1`` (one pass; an empty column passes)."""
    if column.size == 0:
        return True
    least, most = checks.bounds(column)
    return bool(least >= low and most < high)


def _pointers(ptr: np.ndarray, E: int) -> bool:
    """A CSR pointer column: from 0 to E without going back."""
    return bool(ptr[0] == 0 and ptr[-1] == E and checks.first_descent(ptr) == -1)
