"""Analyses the UI computed, kept as ``Analysis`` nodes of the graph store and reused across
sessions and restarts.

An expensive result (tolerances, the critical latencies and with them the exact ``T(L)``) is
written once, as the scalars of an ``Analysis`` node of its run (``kind`` names the analysis,
``params`` holds the LogGPS parameters and the analysis' own inputs, so the pair is the key).
A page first looks for a stored result with the same run and key: a hit costs one short read of
the store instead of loading a 10^6-vertex graph and computing. Results are immutable (a run
replaced under its name gets a new identity and loses its analyses), so a hit is also kept in
this process.

The other pages' results (design space, classification, topology, matrices, compared runs,
collective what-ifs) are stored the same way, as JSON of a closed set of shapes
(:mod:`llamp.ui.codec`: numbers, arrays, DataFrames and the result dataclasses registered below),
never as pickles. Their ``params`` also hold the run's token and every input of the page that
changes the answer (uploaded files by their SHA-256), and :data:`SCHEMA`: a node written by an
older version of the UI does not match and the result is computed again; one that matches but
cannot be read back is computed again too.

Writes need a writable store: with ``LLAMP_UI_READ_ONLY`` set, or while the store cannot be
opened for writing, the result stays in this process only (and the page says nothing: it has
the result either way).

The same memo keeps what is worth keeping in this process only (:func:`kept`): an input several
results share (a topology read once, a trace read once, the collective what-if's expanded
graphs) and small figures a page shows while it decides what to compute (an estimate). It is
the UI's one in-process cache: at most :data:`MEMO_MAX` entries, and the expanded what-if
graphs its entries hold at most :data:`MEMO_VERTICES` vertices together (the least recently
used go first).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from llamp import config
from llamp.lp import CriticalLatencies, Prediction, Tolerance, ToleranceLevel
from llamp.lp.collectives_whatif import CollectiveComparison, Variant, VariantCurve
from llamp.lp.compare import RunFigures
from llamp.lp.critical import Segment, Unresolved
from llamp.lp.region import Region, RegionPreview
from llamp.lp.registry import ANALYSES
from llamp.lp.topology import TopologyAnalysis
from llamp.params import LogGPS
from llamp.ui import codec, store_access

log = logging.getLogger("llamp.ui")

#: Bumped when the stored shape of a result changes, so older nodes are not read as new ones.
#: 2: keys hold the run token; the other pages' results (:mod:`llamp.ui.codec`).
SCHEMA = 2

#: Most entries of the in-process memo …
MEMO_MAX = 256
#: … and most vertices of the execution graphs they hold together (an expanded what-if keeps
#: ~350 B per vertex with its lowering: about 5 GB).
MEMO_VERTICES = 15_000_000

_MEMO: dict[tuple[str, str, str], Any] = {}
_MEMO_LOCK = threading.Lock()

T = TypeVar("T")


def key_of(params: LogGPS, **inputs: Any) -> dict[str, Any]:
    """The ``params`` of an Analysis node: the LogGPS parameters, the analysis' inputs and the
    schema of the stored result."""
    return params.as_dict() | {k: _plain(v) for k, v in inputs.items()} | {"ui_schema": SCHEMA}


def page_key(params: LogGPS, token: str, **inputs: Any) -> dict[str, Any]:
    """:func:`key_of` with the run's token: the key of a page's result."""
    return key_of(params, run_token=token, **inputs)


def _plain(value: Any) -> Any:
    """``value`` as JSON for a key: tuples as lists, non-finite floats as text, the bytes of an
    upload as their SHA-256, any other object as its ``repr``."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, bytes | bytearray | memoryview):
        return "sha256:" + hashlib.sha256(bytes(value)).hexdigest()
    if isinstance(value, np.ndarray):
        return f"array {value.dtype.str} {list(value.shape)} " + _plain(value.tobytes())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)  # a small input object (a dataclass of numbers): its repr names it


def _memo_key(run_key: str, kind: str, params: dict[str, Any]) -> tuple[str, str, str]:
    return (run_key, kind, json.dumps(params, sort_keys=True))


def find(run_key: str, run: str, kind: str, params: dict[str, Any]) -> Any | None:
    """The stored ``kind`` result of run ``run`` (cache key ``run_key``) for ``params``, or
    ``None``; never raises (a store that cannot be read means "not stored")."""
    memo = _memo_key(run_key, kind, params)
    with _MEMO_LOCK:
        if memo in _MEMO:
            _MEMO[memo] = _MEMO.pop(memo)  # the most recently used last
            return _MEMO[memo]
    try:
        with store_access.connect() as db:
            rows = [a for a in db.list_analyses(run) if a.kind == kind and a.params == params]
    except Exception as err:  # noqa: BLE001 - a lookup that fails only means computing again
        log.info("stored %s of %s not read: %s", kind, config.redact(run), err)
        return None
    if not rows:
        return None
    try:
        result = _LOAD.get(kind, _load_value)(rows[-1].scalars, _params_of(params))
    except (KeyError, TypeError, ValueError) as err:
        log.info("stored %s %s is not readable (%s): computing again", kind, rows[-1].id, err)
        return None
    _remember(memo, result)
    return result


def save(run_key: str, run: str, kind: str, params: dict[str, Any], result: Any) -> None:
    """Keep ``result`` in this process and, if the store takes writes, as an Analysis node."""
    _remember(_memo_key(run_key, kind, params), result)
    if config.ui_settings().read_only:
        return
    try:
        with store_access.connect(write=True) as db:
            if any(a.kind == kind and a.params == params for a in db.list_analyses(run)):
                return
            db.write_analysis(run, kind, params, _DUMP.get(kind, _dump_value)(result))
    except Exception as err:  # noqa: BLE001 - the result is on the page either way
        log.info("stored %s of %s not written: %s", kind, config.redact(run), err)


def kept(kind: str, key: Any, compute: Callable[[], T], *, most: int | None = None) -> T:
    """``compute()`` once in this process for ``kind`` and ``key`` (any value :func:`_plain`
    names: uploads by their SHA-256), never written to the store; ``most``: at most that many
    entries of ``kind`` are kept (the oldest go first). Computed outside the lock: two
    sessions asking at once may both compute, and keep the same value."""
    memo = _memo_key("", kind, {"key": _plain(key)})
    with _MEMO_LOCK:
        if memo in _MEMO:
            _MEMO[memo] = _MEMO.pop(memo)  # the most recently used last
            return _MEMO[memo]
    value = compute()
    _remember(memo, value)
    if most is not None:
        with _MEMO_LOCK:
            mine = [k for k in _MEMO if k[:2] == ("", kind)]
            for old in mine[: max(len(mine) - most, 0)]:
                _MEMO.pop(old, None)
    return value


def forget() -> None:
    """Drop the results kept in this process (tests; the store keeps its nodes)."""
    with _MEMO_LOCK:
        _MEMO.clear()


def _remember(memo: tuple[str, str, str], result: Any) -> None:
    with _MEMO_LOCK:
        _MEMO.pop(memo, None)  # the newest last
        _MEMO[memo] = result
        while len(_MEMO) > MEMO_MAX:
            _MEMO.pop(next(iter(_MEMO)))
        if _vertices(result) > 0:  # older graphs make room for the new ones
            held = [(k, _vertices(v)) for k, v in _MEMO.items() if k != memo]
            total = sum(n for _, n in held) + _vertices(result)
            for k, n in held:
                if total <= MEMO_VERTICES:
                    break
                if n:
                    del _MEMO[k]
                    total -= n


def _vertices(value: Any) -> int:
    """Vertices of the execution graphs ``value`` holds (a what-if's expanded graphs)."""
    if isinstance(value, CollectiveComparison):
        return sum(g.num_vertices for g in value.graphs.values())
    return 0


def _params_of(params: dict[str, Any]) -> LogGPS:
    return LogGPS(
        L=params["L_ns"],
        o=params["o_ns"],
        G=params["G_ns_per_byte"],
        S=params["S_bytes"],
        g=params["g_ns"],
        progress=params["progress"],
        nic=params["nic"],
        # an analysis stored without these was computed before they were choices: the program
        # order and the handshake, whatever the default is now
        order=params.get("order", "program"),
        rendezvous=params.get("rendezvous", "handshake"),
    )


# ---------------------------------------------------------------------- shapes
def _num(value: Any) -> float:
    return float(value)  # "inf"/"Infinity"/"nan" and numbers alike


def _dump_prediction(p: Prediction) -> dict[str, Any]:
    return {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.name != "params"}


def _load_prediction(d: dict[str, Any], params: LogGPS) -> Prediction:
    return Prediction(params=params, **d)


def _levels(levels: list[ToleranceLevel]) -> list[list[float | str]]:
    return [[t.x, t.bound_ns, _plain(float(t.value))] for t in levels]


def _dump_tolerance(t: Tolerance) -> dict[str, Any]:
    return {
        "baseline_ns": t.baseline_ns,
        "latency": _levels(t.latency),
        "bandwidth": _levels(t.bandwidth),
        "engine": t.engine,
    }


def _load_tolerance(d: dict[str, Any], params: LogGPS) -> Tolerance:
    def levels(rows):
        return [ToleranceLevel(_num(x), _num(b), _num(v)) for x, b, v in rows]

    return Tolerance(
        _num(d["baseline_ns"]), levels(d["latency"]), levels(d["bandwidth"]), d["engine"], params
    )


_SEGMENT = [f.name for f in dataclasses.fields(Segment)]
_UNRESOLVED = [f.name for f in dataclasses.fields(Unresolved)]


def _dump_critical(c: CriticalLatencies) -> dict[str, Any]:
    """Columns, not one map per segment: a noisy run has thousands of them."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(c):
        value = getattr(c, f.name)
        if f.name == "params":
            continue
        if f.name == "segments":
            out["segments"] = {n: [getattr(s, n) for s in value] for n in _SEGMENT}
        elif f.name == "unresolved":
            out["unresolved"] = {n: [getattr(u, n) for u in value] for n in _UNRESOLVED}
        else:
            out[f.name] = _plain(value)
    return out


def _load_critical(d: dict[str, Any], params: LogGPS) -> CriticalLatencies:
    def rows(cls, names, columns):
        return [cls(*values) for values in zip(*(columns[n] for n in names), strict=True)]

    known = {f.name for f in dataclasses.fields(CriticalLatencies)}
    fields = {k: v for k, v in d.items() if k in known}
    fields["segments"] = rows(Segment, _SEGMENT, d["segments"])
    fields["unresolved"] = rows(Unresolved, _UNRESOLVED, d["unresolved"])
    fields["lo"], fields["hi"] = _num(d["lo"]), _num(d["hi"])
    return CriticalLatencies(params=params, **fields)


# The stored shapes: every registered analysis' result types, and the pages' own results.
for _entry in ANALYSES.values():
    for _cls in _entry.stored:
        codec.register(_cls)
for _cls in (RegionPreview, TopologyAnalysis, RunFigures, Variant, VariantCurve):
    codec.register(_cls)
codec.register(Region, plane=None)  # T at a design needs the graph: the page loads it then
codec.register(CollectiveComparison, graphs={})  # the expanded graphs stay in the process


def _dump_value(result: Any) -> dict[str, Any]:
    return {"value": codec.encode(result)}


def _load_value(d: dict[str, Any], params: LogGPS) -> Any:
    return codec.decode(d["value"])


_DUMP = {"predict": _dump_prediction, "tolerance": _dump_tolerance, "critical": _dump_critical}
_LOAD = {"predict": _load_prediction, "tolerance": _load_tolerance, "critical": _load_critical}
