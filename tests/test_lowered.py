"""The lowered event graph kept in the graph file: built once, reused, versioned, checked."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from random_graphs import random_graph

from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp import engine_for, predict
from llamp.lp.event_graph import LOWERING_VERSION
from llamp.lp.lowered import INDEX, lowering_key, persisted, rendezvous_count, save_graph
from llamp.params import LogGPS

BASE = LogGPS(L=2000.0, o=150.0, G=0.3, S=2048)


def _saved(tmp_path, configs=(BASE,)):
    graph = random_graph(5, ranks=4, steps=80, max_size=8192)
    path = save_graph(graph, tmp_path / "g.npz", configs)
    return graph, path


def test_a_saved_graph_answers_from_its_stored_event_graph(tmp_path, monkeypatch):
    graph, path = _saved(tmp_path)
    loaded = ExecutionGraph.load(path, lazy=True)
    import llamp.lp.engine as engine

    def no_lowering(*args, **kwargs):
        raise AssertionError("lowered again")

    monkeypatch.setattr(engine, "build_event_graph", no_lowering)
    for L in (0.0, 2000.0, 50_000.0):
        params = BASE.with_(L=L)
        want = engine_for(graph).point(params)
        got = engine_for(loaded).point(params)
        assert got.runtime_ns == want.runtime_ns
        assert got.right == want.right and got.left == want.left
    # S with the same rendezvous set reuses it too
    same_set = BASE.with_(S=BASE.S + 1)
    assert rendezvous_count(loaded, same_set.S) == rendezvous_count(graph, same_set.S)
    assert predict(loaded, same_set).runtime_ns == predict(graph, same_set).runtime_ns


@pytest.mark.parametrize("fails", ["writing the columns", "lowering"])
def test_a_save_that_fails_leaves_no_file(tmp_path, monkeypatch, fails):
    """The columns are written by a second thread while the graph is lowered: an error in
    either is the save's error, and neither the file nor a temporary one is left behind."""
    import llamp.lp.engine as engine

    graph = random_graph(5, ranks=4, steps=80, max_size=8192)

    def broken(*args, **kwargs):
        raise OSError(f"{fails} failed")

    if fails == "lowering":
        monkeypatch.setattr(engine, "build_event_graph", broken)
    else:
        monkeypatch.setattr(ExecutionGraph, "save", broken)
    with pytest.raises(OSError, match=fails):
        save_graph(graph, tmp_path / "g.npz", (BASE,))
    assert list(tmp_path.iterdir()) == []


def test_other_models_and_thresholds_are_lowered_on_demand(tmp_path):
    graph, path = _saved(tmp_path)
    loaded = ExecutionGraph.load(path, lazy=True)
    for params in (BASE.with_(nic="serial"), BASE.with_(progress="wait"), BASE.with_(S=0)):
        assert predict(loaded, params).runtime_ns == pytest.approx(
            predict(graph, params).runtime_ns, rel=1e-12
        )


def test_several_lowerings_in_one_file(tmp_path):
    configs = (BASE, BASE.with_(progress="wait", nic="serial"))
    graph, path = _saved(tmp_path, configs)
    loaded = ExecutionGraph.load(path, lazy=True)
    for params in configs:
        key = lowering_key(rendezvous_count(loaded, params.S), params)
        assert persisted(loaded, key) is not None
        assert predict(loaded, params).runtime_ns == predict(graph, params).runtime_ns


def test_schedule_lowerings_are_kept_per_baseline(tmp_path):
    """The schedule order's event graph depends on the parameters of its pass: the file keeps
    one per baseline (and protocol), each found again only for its own key."""
    sched = BASE.with_(order="schedule", rendezvous="loggopsim")
    other = sched.with_(L=9000.0).rescheduled()
    graph, path = _saved(tmp_path, (sched, other, sched.with_(rendezvous="handshake")))
    loaded = ExecutionGraph.load(path, lazy=True)
    for params in (sched, other, sched.with_(rendezvous="handshake")):
        key = lowering_key(rendezvous_count(loaded, params.S), params)
        ev = persisted(loaded, key)
        assert ev is not None and ev.schedule_at == params.schedule_at
        assert predict(loaded, params).runtime_ns == predict(graph, params).runtime_ns
    unseen = sched.with_(L=1.0).rescheduled()
    assert persisted(loaded, lowering_key(rendezvous_count(loaded, unseen.S), unseen)) is None


def test_lazy_load_maps_the_columns_and_keeps_the_graph(tmp_path):
    graph, path = _saved(tmp_path)
    loaded = ExecutionGraph.load(path, lazy=True)
    assert loaded.equals(graph, labels=True)
    assert loaded.source == path
    assert not loaded.rank.flags.owndata  # memory-mapped, not read


def _rewrite(path, member: str, mutate) -> None:
    """Rewrite one member of the .npz (uncompressed, as np.savez writes it)."""
    with zipfile.ZipFile(path) as archive:
        contents = {i.filename: archive.read(i.filename) for i in archive.infolist()}
    contents[member] = mutate(contents[member])
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in contents.items():
            archive.writestr(name, data)


def test_a_lowering_of_another_version_is_rebuilt_with_a_note(tmp_path):
    graph, path = _saved(tmp_path)

    def older(data: bytes) -> bytes:
        header_end = data.index(b"\n") + 1
        index = json.loads(data[header_end:].decode())
        index["version"] = LOWERING_VERSION - 1
        body = json.dumps(index).encode()
        array = np.frombuffer(body, dtype=np.uint8)
        import io

        out = io.BytesIO()
        np.lib.format.write_array(out, array)
        return out.getvalue()

    _rewrite(path, f"{INDEX}.npy", older)
    loaded = ExecutionGraph.load(path, lazy=True)
    with pytest.warns(UserWarning, match="another llamp version"):
        T = predict(loaded, BASE).runtime_ns
    assert T == predict(graph, BASE).runtime_ns


def _flip(path, member: str, offset: int = 200) -> None:
    raw = bytearray(path.read_bytes())
    at = raw.index(member.encode())  # the local header: the member's data follows
    raw[at + offset] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_a_damaged_graph_column_is_an_error_not_a_number(tmp_path):
    """A flipped byte in a column of the graph fails its CRC: an error naming the file."""
    _, path = _saved(tmp_path)
    _flip(path, "cost_ns.npy")
    with pytest.raises(InputError, match="damaged llamp graph file.*CRC"):
        predict(ExecutionGraph.load(path, lazy=True), BASE)


def test_a_damaged_event_graph_is_lowered_again_with_a_note(tmp_path):
    """The stored event graph is a cache of the graph: a flipped byte in it (its CRC fails)
    costs a lowering, with a note naming the member, and T is the true one."""
    graph, path = _saved(tmp_path)
    _flip(path, "lowering_0_value.npy")
    with pytest.warns(UserWarning, match="event graph is damaged .lowering_0_value.npy: CRC"):
        T = predict(ExecutionGraph.load(path, lazy=True), BASE).runtime_ns
    assert T == predict(graph, BASE).runtime_ns


def test_an_edited_event_graph_is_lowered_again_with_a_note(tmp_path):
    """A lowering whose arrays were changed after sealing (here an edge from a later position,
    with a fresh CRC) is not used: the graph is lowered again and T is the true one."""
    graph, path = _saved(tmp_path)

    def backwards(data: bytes) -> bytes:
        import io

        array = np.lib.format.read_array(io.BytesIO(data))
        array = array.copy()
        array[-1] = array.shape[0] * 10
        out = io.BytesIO()
        np.lib.format.write_array(out, array)
        return out.getvalue()

    _rewrite(path, "lowering_0_src.npy", backwards)
    with pytest.warns(UserWarning, match="not sealed by this installation"):
        T = predict(ExecutionGraph.load(path, lazy=True), BASE).runtime_ns
    assert T == predict(graph, BASE).runtime_ns


def test_an_inconsistent_event_graph_is_refused():
    """The structure checks stay behind the seal: a lowering whose arrays do not fit together
    (an edge from a later position) is refused before a sweep reads it."""
    from llamp.lp.lowered import _check

    graph = random_graph(5, ranks=4, steps=80, max_size=8192)
    ev = engine_for(graph).events(BASE)
    ev.src[-1] = ev.num_events * 10
    with pytest.raises(InputError, match="inconsistent"):
        _check(ev, "g.npz", int(graph.messages()[0].size))


def test_a_graph_saved_without_validation_is_checked_when_mapped(tmp_path):
    """Only a graph that passed its checks is stamped as such: an unchecked one (here a
    message whose two ends disagree on the size) is validated on a lazy load and refused."""
    from llamp.errors import GraphError

    bad = ExecutionGraph.from_arrays(
        2,
        rank=[0, 1],
        kind=[1, 2],
        cost_ns=[0.0, 0.0],
        size=[8, 16],
        peer=[1, 0],
        tag=[0, 0],
        edge_src=[0],
        edge_dst=[1],
        edge_kind=[2],
        validate=False,
    )
    path = bad.save(tmp_path / "bad.npz")
    with pytest.raises(GraphError, match="size, peer or tag differ"):
        ExecutionGraph.load(path, lazy=True)


# ---------------------------------------------------------------------- compact columns


def _two_rank_message(size: int, tag: int) -> ExecutionGraph:
    """calc → send on rank 0, recv → calc on rank 1: one message of ``size`` bytes."""
    return ExecutionGraph.from_arrays(
        2,
        rank=[0, 0, 1, 1],
        kind=[0, 1, 2, 0],
        cost_ns=[100.0, 0.0, 0.0, 50.0],
        size=[0, size, size, 0],
        peer=[0, 1, 0, 0],
        tag=[0, tag, tag, 0],
        edge_src=[0, 1, 2],
        edge_dst=[1, 2, 3],
        edge_kind=[0, 2, 0],
    )


def test_graph_columns_are_32_bit_and_stay_mapped(tmp_path):
    graph, path = _saved(tmp_path)
    for name in ("edge_src", "edge_dst", "size", "tag", "peer", "rank"):
        assert getattr(graph, name).dtype == np.int32, name
    loaded = ExecutionGraph.load(path, lazy=True)
    for name in ("edge_src", "edge_dst", "size", "tag"):
        column = getattr(loaded, name)
        assert column.dtype == np.int32 and not column.flags.owndata, name  # mapped, no copy


def test_sizes_and_tags_that_do_not_fit_32_bits_keep_64(tmp_path):
    """5 GiB in one message and a tag of 2^40: int64 columns, the same numbers after a round
    trip, and T pays (5·2^30 − 1)·G exactly."""
    size, tag = 5 << 30, 1 << 40
    graph = _two_rank_message(size, tag)
    assert graph.size.dtype == np.int64 and graph.tag.dtype == np.int64
    assert graph.edge_src.dtype == np.int32
    params = LogGPS(L=1000.0, o=10.0, G=0.5, S=1 << 62)
    T = predict(graph, params).runtime_ns
    # calc 100, send start → recv finish: 2o + L + (size−1)·G, then calc 50
    assert T == 100.0 + 2 * 10.0 + 1000.0 + (size - 1) * 0.5 + 50.0
    path = save_graph(graph, tmp_path / "wide.npz", (params,))
    loaded = ExecutionGraph.load(path, lazy=True)
    assert loaded.size.dtype == np.int64 and int(loaded.size[1]) == size
    assert int(loaded.tag[2]) == tag
    assert predict(loaded, params).runtime_ns == T
    # values that fit after all are narrowed, with the same numbers
    small = _two_rank_message(1 << 20, 7)
    assert small.size.dtype == np.int32 and int(small.size[1]) == 1 << 20


def test_an_edge_end_beyond_32_bits_is_reported_not_wrapped():
    """Narrowing 2^32 + 1 to int32 would give 1, a valid vertex: the column stays wide and
    validation names the real value."""
    from llamp.errors import GraphError

    with pytest.raises(GraphError, match="refers to vertex 4294967297 of 2"):
        ExecutionGraph.from_arrays(
            1,
            rank=[0, 0],
            kind=[0, 0],
            cost_ns=[1.0, 1.0],
            size=[0, 0],
            peer=[0, 0],
            tag=[0, 0],
            edge_src=[0],
            edge_dst=[(1 << 32) + 1],
            edge_kind=[0],
        )


def _as_version_2(path) -> None:
    """Rewrite a graph file as llamp wrote it before compact columns: int64 edge ends, sizes
    and tags, stamp version 2 (the lowering layout did not change)."""
    import io

    def widen(data: bytes) -> bytes:
        out = io.BytesIO()
        np.lib.format.write_array(out, np.lib.format.read_array(io.BytesIO(data)).astype(np.int64))
        return out.getvalue()

    def stamp_v2(data: bytes) -> bytes:
        stamp = json.loads(bytes(np.lib.format.read_array(io.BytesIO(data))).decode())
        stamp["version"] = 2
        out = io.BytesIO()
        np.lib.format.write_array(out, np.frombuffer(json.dumps(stamp).encode(), np.uint8))
        return out.getvalue()

    for member in ("edge_src", "edge_dst", "size", "tag"):
        _rewrite(path, f"{member}.npy", widen)
    _rewrite(path, "llamp_file.npy", stamp_v2)


def test_a_file_written_before_compact_columns_still_reads(tmp_path):
    graph, path = _saved(tmp_path)
    _as_version_2(path)
    with zipfile.ZipFile(path) as archive, archive.open("edge_src.npy") as member:
        assert np.lib.format.read_array(member).dtype == np.int64
    for lazy in (False, True):
        loaded = ExecutionGraph.load(path, lazy=lazy)
        assert loaded.equals(graph, labels=True)
        assert loaded.edge_src.dtype == np.int32 and loaded.size.dtype == np.int32
    # written before the seal: its stored lowering is not trusted, the graph is lowered again
    loaded = ExecutionGraph.load(path, lazy=True)
    with pytest.warns(UserWarning, match="not sealed"):
        assert predict(loaded, BASE).runtime_ns == predict(graph, BASE).runtime_ns


def test_the_lowering_counting_sort_is_stable_in_both_index_types():
    from llamp.lp.event_graph import _group_by

    rng = np.random.default_rng(3)
    keys = rng.integers(0, 50, 1000).astype(np.int32)
    want = np.argsort(keys, kind="stable")
    for dtype in (np.int32, np.int64):
        perm = _group_by(keys, 50, dtype)
        assert perm.dtype == dtype
        np.testing.assert_array_equal(perm, want)


def test_destinations_of_a_few_edges_without_the_dst_column():
    graph = random_graph(8, ranks=4, steps=60)
    ev = engine_for(graph).events(BASE)
    edges = np.array([0, 1, ev.num_edges // 2, ev.num_edges - 1])
    np.testing.assert_array_equal(ev.dst_of(edges), ev.dst[edges])
    assert ev.src.dtype == np.int32 and ev.in_ptr.dtype == np.int32


def test_the_lowering_with_64_bit_indices_is_the_same_event_graph(monkeypatch):
    """Graphs too large for int32 indices are lowered with int64 ones: the same arrays."""
    from llamp.lp import event_graph as events

    graph = random_graph(9, ranks=4, steps=60)
    for params in (BASE, BASE.with_(progress="wait", nic="serial", S=0)):
        narrow = events.build_event_graph(graph, params.S, progress=params.progress, nic=params.nic)
        with monkeypatch.context() as patch:
            patch.setattr(events, "_INDEX32_LIMIT", 10)
            wide = events.build_event_graph(
                graph, params.S, progress=params.progress, nic=params.nic
            )
        assert narrow.src.dtype == np.int32 and wide.src.dtype == np.int64
        for name in ("src", "pattern", "value", "msg", "event_of_pos", "in_ptr", "out_edge"):
            np.testing.assert_array_equal(getattr(wide, name), getattr(narrow, name))
        np.testing.assert_array_equal(wide.fixed, narrow.fixed)


def test_integral_values_are_stored_as_float32_with_the_same_answers(tmp_path, monkeypatch):
    """A graph with integral costs (as every GOAL file has) keeps its edge values in float32
    — exact — and answers exactly as with float64 values; a fractional cost keeps float64."""
    from llamp.lp import event_graph as events

    graph = random_graph(11, ranks=4, steps=80, max_size=8192)

    def with_costs(costs) -> ExecutionGraph:
        copy = graph.subgraph(np.ones(graph.num_vertices, bool))
        copy.cost_ns[:] = costs
        copy.validate()
        return copy

    integral = with_costs(np.rint(graph.cost_ns * 1000.0))  # ns, integral, < 2^24
    path = save_graph(integral, tmp_path / "integral.npz", (BASE,))
    loaded = ExecutionGraph.load(path, lazy=True)
    assert engine_for(loaded).events(BASE).value.dtype == np.float32  # as stored
    with monkeypatch.context() as patch:
        patch.setattr(events, "_fits_float32", lambda values: False)
        wide = with_costs(integral.cost_ns)
        assert engine_for(wide).events(BASE).value.dtype == np.float64
    for L in (0.0, 3000.0, 80_000.0):
        params = BASE.with_(L=L)
        got, want = engine_for(loaded).point(params), engine_for(wide).point(params)
        assert got.runtime_ns == want.runtime_ns
        assert got.right == want.right and got.left == want.left
    fractional = with_costs(graph.cost_ns * 1000.0 + 0.1)
    assert engine_for(fractional).events(BASE).value.dtype == np.float64
