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
from llamp.lp.events import LOWERING_VERSION
from llamp.lp.lowered import INDEX, persisted, rendezvous_count, save_graph
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
        key = (rendezvous_count(loaded, params.S), params.progress, params.nic)
        assert persisted(loaded, key) is not None
        assert predict(loaded, params).runtime_ns == predict(graph, params).runtime_ns


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


def test_a_damaged_member_is_an_error_not_a_number(tmp_path):
    """A flipped byte in a stored array fails its CRC: an error naming the file."""
    _, path = _saved(tmp_path)
    raw = bytearray(path.read_bytes())
    at = raw.index(b"lowering_0_value.npy")  # the local header: the member's data follows
    raw[at + 200] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError, match="damaged llamp graph file.*CRC"):
        predict(ExecutionGraph.load(path, lazy=True), BASE)


def test_an_inconsistent_event_graph_is_refused(tmp_path):
    """A lowering whose arrays are intact but do not fit together (an edge from a later
    position) is refused before a sweep reads it."""
    _, path = _saved(tmp_path)

    def backwards(data: bytes) -> bytes:
        import io

        array = np.lib.format.read_array(io.BytesIO(data))
        array = array.copy()
        array[-1] = array.shape[0] * 10
        out = io.BytesIO()
        np.lib.format.write_array(out, array)
        return out.getvalue()

    _rewrite(path, "lowering_0_src.npy", backwards)
    with pytest.raises(InputError, match="inconsistent"):
        predict(ExecutionGraph.load(path, lazy=True), BASE)


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
