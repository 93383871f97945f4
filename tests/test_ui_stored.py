"""Analyses of every page kept as Analysis nodes and reused across sessions and restarts:
the design space, classification, topology, matrices, compared runs and the
collectives what-if compute once; a fresh session on the same store, after everything this
process kept is dropped, shows the same numbers without starting a task or calling the
analysis. The stored shapes (:mod:`llamp.ui.codec`) round-trip exactly and read nothing else.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from apptest_pages import RUN, SWEEP3D, assert_clean, exact_ns, keyed, page, table
from store_graphs import stored_home

from llamp.ingest import read
from llamp.lp import compare as lp_compare
from llamp.lp.classify import NETWORKS, Classification, Network, Thresholds
from llamp.lp.region import Axis, RegionEdge, RegionLevel
from llamp.params import LogGPS
from llamp.ui import codec, page_work, stored, tasks
from llamp.ui import store_access as ui_store

BCAST = SWEEP3D.parent / "bcast-synthetic"


@pytest.fixture(scope="module")
def home(tmp_path_factory, sweep3d, ui_store) -> Iterator[Path]:
    """A LLAMP_HOME whose store holds ``sweep3d`` and ``bcast`` (for the Compare page)."""
    with stored_home(tmp_path_factory, {RUN: sweep3d, "bcast": read(BCAST)}, ui_store) as path:
        yield path


pytestmark = pytest.mark.usefixtures("store_env")


# ---------------------------------------------------------------------- the stored shapes
def test_codec_round_trips_arrays_frames_and_registered_dataclasses():
    frame = pd.DataFrame(
        {
            "L_ns": [0.0, 1.5, math.inf],
            "variant": ["ring", None, "rd"],
            "holds": [True, False, True],
            "count": np.array([1, 2, 3], dtype=np.int64),
        },
        index=pd.Index([7, 8, 9], name="row"),
    )
    value = {
        ("a", 1): (np.arange(6, dtype=np.float32).reshape(2, 3), frame),
        "nan": math.nan,
        "params": LogGPS.parse(L="2us"),
        "network": Network("HDR", 200.0, 1000.0, "vendor"),
        "empty": pd.DataFrame(),
    }
    back = codec.decode(codec.encode(value))
    assert set(back) == set(value)
    arr, df = back[("a", 1)]
    assert arr.dtype == np.float32 and arr.shape == (2, 3)
    np.testing.assert_array_equal(arr, np.arange(6).reshape(2, 3))
    pd.testing.assert_frame_equal(df, frame, check_dtype=False)
    assert df["count"].dtype == np.int64 and df["holds"].dtype == bool
    assert math.isnan(back["nan"])
    assert back["params"] == LogGPS.parse(L="2us")
    assert back["network"] == Network("HDR", 200.0, 1000.0, "vendor")
    assert back["empty"].empty


def test_codec_drops_live_fields_and_refuses_other_objects():
    level = RegionLevel(
        0.01,
        110.0,
        np.array([0.0, 1.0]),
        np.array([0.0, 2.0]),
        np.array([100.0, math.nan]),
        np.array([False, True]),
        (RegionEdge("box", side="L_min"), RegionEdge("bound", None, 1.0, 2.0, 3.0)),
        ("L",),
        True,
    )
    back = codec.decode(codec.encode(level))
    np.testing.assert_array_equal(back.runtime_ns, level.runtime_ns)
    assert back.edges == level.edges and back.unbounded == ("L",)
    with pytest.raises(TypeError):
        codec.encode(object())
    with pytest.raises(TypeError):
        codec.encode(np.array(["a", None], dtype=object))
    forged = {"$dc": ["os.system", {}]}
    with pytest.raises(ValueError, match="not a stored class"):
        codec.decode(forged)
    with pytest.raises(ValueError):
        codec.decode({"$nd": ["|O", [1], ""]})
    partial = codec.encode(Axis("L", 3000.0, "ns"))
    del partial["$dc"][1]["unit"]
    with pytest.raises(ValueError, match="fields"):
        codec.decode(partial)


def test_a_result_of_an_older_schema_is_computed_again_never_misread(monkeypatch):
    """A node with the same inputs but an older ``ui_schema`` is not a hit, and a node that
    matches but cannot be read is computed again."""
    params = LogGPS.parse(L="2us")
    key = stored.page_key(params, "token", inputs=["x"])
    old = key | {"ui_schema": stored.SCHEMA - 1}
    network = NETWORKS["HDR"]
    result = Classification(
        network, params, Thresholds(), "label", "C1", "why", pd.DataFrame(), pd.DataFrame(), None
    )
    with ui_store.connect(write=True) as db:
        db.write_analysis(RUN, "ui_test", old, {"value": codec.encode(result)})
        db.write_analysis(RUN, "ui_test_bad", key, {"value": {"$dc": ["nope", {}]}})
    stored.forget()
    assert stored.find("k", RUN, "ui_test", key) is None
    assert stored.find("k", RUN, "ui_test", old) is not None  # it is there, under its key
    assert stored.find("k", RUN, "ui_test_bad", key) is None


def test_the_memo_keeps_a_value_once_per_key_and_within_its_bounds(monkeypatch):
    """``stored.kept``: computed once per key (an upload by its bytes), at most ``most``
    entries of a kind, and the expanded what-if graphs within ``MEMO_VERTICES`` together
    (the least recently used go first)."""
    from store_graphs import tiny_graph

    from llamp.lp.collectives_whatif import CollectiveComparison

    stored.forget()
    calls = []

    def compute(value):
        calls.append(value)
        return value

    assert stored.kept("ui_test_kept", ("a.graphml", b"1 2"), lambda: compute(1)) == 1
    assert stored.kept("ui_test_kept", ("a.graphml", b"1 2"), lambda: compute(2)) == 1
    assert stored.kept("ui_test_kept", ("a.graphml", b"1 3"), lambda: compute(3)) == 3
    assert calls == [1, 3]
    for i in range(4):
        stored.kept("ui_test_most", i, lambda i=i: compute(i), most=2)
    stored.kept("ui_test_most", 2, lambda: compute("again"))  # 2 and 3 are kept
    stored.kept("ui_test_most", 0, lambda: compute("recomputed"))
    assert calls[-1] == "recomputed" and "again" not in calls

    graph = tiny_graph()

    def expansion(label: str) -> CollectiveComparison:
        empty = pd.DataFrame()
        return CollectiveComparison(LogGPS(), (), empty, empty, (), graphs={label: graph})

    monkeypatch.setattr(stored, "MEMO_VERTICES", 2 * graph.num_vertices)
    first = stored.kept("ui_test_graphs", "a", lambda: expansion("a"))
    stored.kept("ui_test_graphs", "b", lambda: expansion("b"))
    assert stored.kept("ui_test_graphs", "a", lambda: expansion("a2")) is first  # used last
    stored.kept("ui_test_graphs", "c", lambda: expansion("c"))  # b makes room
    assert list(stored.kept("ui_test_graphs", "a", lambda: expansion("x")).graphs) == ["a"]
    assert list(stored.kept("ui_test_graphs", "b", lambda: expansion("b2")).graphs) == ["b2"]
    stored.forget()


# ---------------------------------------------------------------------- one page at a time
def _restart() -> None:
    """What a restarted server has: the store, nothing in memory."""
    stored.forget()


def test_the_ui_caches_only_through_the_store_and_its_one_memo():
    """No page or module of the UI keeps results another way (``st.cache_data``,
    ``st.cache_resource``, ``functools`` caches): what is kept is a stored analysis or an entry
    of :func:`llamp.ui.stored.kept`, so ``stored.forget()`` and the store are the whole
    state a restart leaves."""
    import ast

    ui = Path(stored.__file__).parent
    found = []
    for path in sorted(ui.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
            if name in ("cache_data", "cache_resource", "lru_cache", "cache", "cached_property"):
                found.append(f"{path.relative_to(ui.parent)}:{node.lineno}: {name}")
    assert found == []


@pytest.fixture
def no_compute(monkeypatch):
    """After a restart: starting a task or calling any of ``names`` fails the test."""

    def forbid(*names: tuple[object, str]) -> list[str]:
        started: list[str] = []
        real = tasks.start

        def start(key, label, work, *, slot=None, **options):
            started.append(f"{slot}: {label}")
            return real(key, label, work, slot=slot, **options)

        monkeypatch.setattr(tasks, "start", start)
        for owner, name in names:

            def never(*args, _name=name, **kw):
                raise AssertionError(f"{_name} recomputed a stored analysis")

            monkeypatch.setattr(owner, name, never)
        return started

    return forbid


def _open(view: str):
    """Page ``view`` on run :data:`RUN`, settled."""
    at = page(view)
    at.selectbox(key=f"run::{view}").set_value(RUN).run()
    return at


def _kinds() -> set[str]:
    with ui_store.connect() as db:
        return {a.kind for a in db.list_analyses(RUN)}


def test_design_space_is_stored_and_shown_after_a_restart(no_compute):
    at = _open("region")
    assert_clean(at)
    t0 = exact_ns(keyed(at, "region-T0"))
    vertices = table(at, "on_bound")
    designs = table(at, "design")
    assert {"ui_region", "ui_region_preview"} <= _kinds()

    _restart()
    started = no_compute((page_work, "tolerance_region"), (page_work, "region_preview"))
    at = _open("region")
    assert_clean(at)
    assert exact_ns(keyed(at, "region-T0")) == t0
    pd.testing.assert_frame_equal(table(at, "on_bound"), vertices)
    # T at the designs needs the graph's plane: loaded in the background, the region is not
    assert [s for s in started if not s.startswith("region-plane")] == []
    pd.testing.assert_frame_equal(table(at, "design"), designs)


def test_classification_is_stored_and_shown_after_a_restart(no_compute):
    at = _open("classification")
    assert_clean(at)
    label = keyed(at, "class-label").metric[0].value
    runtime = exact_ns(keyed(at, "class-runtime"))
    rules = table(at, "share_needed")
    assert "classify" in _kinds()

    _restart()
    started = no_compute((importlib.import_module("llamp.lp.classify"), "classify"))
    at = _open("classification")
    assert_clean(at)
    assert started == []
    assert keyed(at, "class-label").metric[0].value == label
    assert exact_ns(keyed(at, "class-runtime")) == runtime
    pd.testing.assert_frame_equal(table(at, "share_needed"), rules)


def _frames(at) -> list[pd.DataFrame]:
    return [d.value for d in at.dataframe]


def test_topology_is_stored_and_shown_after_a_restart(no_compute):
    at = _open("topology")
    assert_clean(at)
    before = _frames(at)
    assert before and "ui_topology" in _kinds()

    _restart()
    started = no_compute((page_work, "analyze_topology"))
    at = _open("topology")
    assert_clean(at)
    assert [s for s in started if s.startswith("topology:")] == []
    after = _frames(at)
    assert len(after) == len(before)
    for a, b in zip(after, before, strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_matrices_are_stored_and_shown_after_a_restart(no_compute):
    at = _open("matrices")
    assert_clean(at)
    runtime = exact_ns(keyed(at, "mx-runtime"))
    pairs = table(at, "src")
    assert "matrix" in _kinds()

    _restart()
    started = no_compute((importlib.import_module("llamp.lp.matrix"), "pair_sensitivity"))
    at = _open("matrices")
    assert_clean(at)
    assert started == []
    assert exact_ns(keyed(at, "mx-runtime")) == runtime
    pd.testing.assert_frame_equal(table(at, "src"), pairs)


def test_compared_runs_are_stored_per_run_and_shown_after_a_restart(no_compute):
    at = _open("compare")
    assert_clean(at)
    runtime = exact_ns(keyed(at, "cmp-runtime-1"))
    overview = keyed(at, "cmp-overview").dataframe[0].value
    with ui_store.connect() as db:
        for run in (RUN, "bcast"):
            kinds = {a.kind for a in db.list_analyses(run)}
            assert {"ui_run_figures", "critical"} <= kinds, (run, kinds)

    _restart()
    started = no_compute(
        (lp_compare, "run_figures"),
        (importlib.import_module("llamp.lp.registry"), "critical_search"),
    )
    at = _open("compare")
    assert_clean(at)
    assert started == []
    assert exact_ns(keyed(at, "cmp-runtime-1")) == runtime
    pd.testing.assert_frame_equal(keyed(at, "cmp-overview").dataframe[0].value, overview)


def test_collectives_what_if_is_stored_and_shown_after_a_restart(no_compute):
    at = _open("collectives")
    assert_clean(at)
    shown = [(m.label, m.value) for m in at.metric]
    assert shown and "ui_collectives" in _kinds()

    _restart()
    started = no_compute((page_work, "compare_collectives"), (page_work.whatif, "variant_curves"))
    at = _open("collectives")
    assert_clean(at)
    assert started == []
    assert [(m.label, m.value) for m in at.metric] == shown


def test_a_read_only_ui_keeps_results_in_the_process_only(monkeypatch):
    monkeypatch.setenv("LLAMP_UI_READ_ONLY", "1")
    params = LogGPS.parse(L="7us")
    key = stored.page_key(params, "t", inputs=["ro"])
    stored.save("k", RUN, "ui_read_only", key, dataclasses.replace(params))
    assert stored.find("k", RUN, "ui_read_only", key) == params
    assert "ui_read_only" not in _kinds()
