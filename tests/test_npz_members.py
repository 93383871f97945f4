"""Graph files read in place (:class:`llamp.graph.NpzMembers`): every member mapped, checked
against its CRC-32 on the mapping before it is handed out, never misread."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from random_graphs import random_graph

from llamp.errors import InputError
from llamp.graph import ExecutionGraph, NpzMembers, write_npy
from llamp.lp import predict
from llamp.lp.lowered import save_graph
from llamp.params import LogGPS

BASE = LogGPS(L=2000.0, o=150.0, G=0.3, S=2048)

ARRAYS = {
    "ints": np.arange(1000, dtype=np.int32) * 7 - 3,
    "floats": np.linspace(-1.5, 2.5, 777),
    "fortran": np.asfortranarray(np.arange(60, dtype=np.int64).reshape(5, 12)),
    "matrix": np.arange(24, dtype=np.float32).reshape(2, 3, 4),
    "labels": np.array(["l1", "l22", "l333"]),
    "empty": np.zeros((0, 5), dtype=np.int16),
    "byte": np.array([7], dtype=np.uint8),
}


def _npz(tmp_path, arrays=ARRAYS, name="a.npz"):
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


def test_members_read_in_place_equal_what_numpy_reads(tmp_path):
    path = _npz(tmp_path)
    members = NpzMembers(path)
    assert sorted(members.names()) == sorted(ARRAYS)
    for name, want in ARRAYS.items():
        got = members.array(name)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)
        assert not got.flags.writeable
        assert got.flags.f_contiguous == want.flags.f_contiguous or want.ndim < 2
    with pytest.raises(InputError, match="missing nothere"):
        members.array("nothere")


def test_a_version_2_header_is_read(tmp_path):
    value = np.arange(50, dtype=np.int64)
    payload = io.BytesIO()
    np.lib.format.write_array(payload, value, version=(2, 0))
    path = tmp_path / "v2.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("value.npy", payload.getvalue())
    assert np.array_equal(NpzMembers(path).array("value"), value)


def _flip(path, member: str, at: int) -> None:
    """Flip one byte ``at`` bytes into the data of ``member`` (after its local header)."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    raw = bytearray(path.read_bytes())
    local = info.header_offset
    start = local + 30 + int.from_bytes(raw[local + 26 : local + 28], "little")
    start += int.from_bytes(raw[local + 28 : local + 30], "little")
    raw[start + at] ^= 0x01
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("name", sorted(ARRAYS))
@pytest.mark.parametrize("where", ["header", "last byte"])
def test_one_flipped_bit_in_any_member_is_an_error_naming_file_and_member(tmp_path, name, where):
    path = _npz(tmp_path)
    with zipfile.ZipFile(path) as archive:
        size = archive.getinfo(f"{name}.npy").file_size
    _flip(path, f"{name}.npy", 20 if where == "header" else size - 1)
    members = NpzMembers(path)
    with pytest.raises(InputError, match=rf"a\.npz: damaged llamp graph file \({name}\.npy: CRC"):
        members.array(name)
    others = [n for n in ARRAYS if n != name]
    for other in others:  # the rest of the file still reads
        assert np.array_equal(members.array(other), ARRAYS[other])


def test_a_header_claiming_more_than_its_member_is_refused(tmp_path):
    """A consistent CRC does not make a lying header safe: the array must fit its member."""
    payload = io.BytesIO()
    np.lib.format.write_array(payload, np.arange(10, dtype=np.int64))
    lying = payload.getvalue().replace(b"(10,)", b"(99,)")
    path = tmp_path / "lying.npz"
    with zipfile.ZipFile(path, "w") as archive:  # zipfile computes the CRC of what it stores
        archive.writestr("value.npy", lying)
    with pytest.raises(InputError, match=r"lying\.npz: damaged.*array larger than its member"):
        NpzMembers(path).array("value")


def test_a_file_cut_after_it_was_opened_is_an_error_not_a_crash(tmp_path):
    """Mapping past the end of a file would crash the process on access (SIGBUS): a member
    that the file no longer holds is refused before it is mapped."""
    path = _npz(tmp_path)
    members = NpzMembers(path)
    with zipfile.ZipFile(path) as archive:
        cut = archive.getinfo("floats.npy").header_offset + 100
    with open(path, "r+b") as f:
        f.truncate(cut)
    with pytest.raises(InputError, match=r"a\.npz: damaged.*floats\.npy is truncated"):
        members.array("floats")
    assert np.array_equal(members.array("ints"), ARRAYS["ints"])  # before the cut: intact


def test_object_arrays_are_refused(tmp_path):
    payload = io.BytesIO()
    np.lib.format.write_array(payload, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    path = tmp_path / "pickled.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("value.npy", payload.getvalue())
    with pytest.raises(InputError, match="object arrays are not allowed"):
        NpzMembers(path).array("value")


def test_a_damaged_graph_column_fails_the_lazy_load(tmp_path):
    graph = random_graph(3, ranks=4, steps=40, max_size=8192)
    path = save_graph(graph, tmp_path / "g.npz", (BASE,))
    _flip(path, "cost_ns.npy", 200)
    with pytest.raises(InputError, match=r"g\.npz: damaged llamp graph file \(cost_ns\.npy: CRC"):
        ExecutionGraph.load(path, lazy=True)


def test_released_members_read_the_same_again(tmp_path):
    """Dropping a member's pages from the process (after the CRC check and on ``release``)
    keeps the array valid: its pages come back from the file."""
    graph = random_graph(4, ranks=4, steps=60, max_size=8192)
    path = save_graph(graph, tmp_path / "g.npz", (BASE,))
    want = predict(graph, BASE)
    loaded = ExecutionGraph.load(path, lazy=True)
    members = NpzMembers(path)
    src = members.array("lowering_0_src")
    copy = np.array(src)
    members.release()
    assert np.array_equal(src, copy)
    got = predict(loaded, BASE)
    assert (got.runtime_ns, got.lambda_L, got.lambda_G, got.lambda_o) == (
        want.runtime_ns,
        want.lambda_L,
        want.lambda_G,
        want.lambda_o,
    )


def test_write_npy_writes_the_bytes_np_savez_writes(tmp_path):
    """Graph files are written member by member from the arrays' memory (no ``tobytes``
    copies), and come out byte for byte as ``np.savez`` writes them: every dtype and layout a
    graph file holds, a 0-d array, a strided view, big-endian data, an empty member."""
    arrays = {
        **ARRAYS,
        "scalar": np.array(16),
        "strided": np.arange(40, dtype=np.int64)[::3],
        "big_endian": np.arange(9, dtype=">i4"),
        "unicode": np.zeros((4, 6), np.uint32).view("<U6").reshape(4),
        "bools": np.array([True, False, True]),
        "empty_text": np.array([], dtype="<U3"),
    }
    want = _npz(tmp_path, arrays, "numpy.npz")
    got = tmp_path / "ours.npz"
    with zipfile.ZipFile(got, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            write_npy(archive, name, array)
    assert got.read_bytes() == want.read_bytes()


def test_write_npy_refuses_object_arrays(tmp_path):
    with zipfile.ZipFile(tmp_path / "o.npz", "w") as archive, pytest.raises(ValueError):
        write_npy(archive, "objects", np.array([{"a": 1}], dtype=object))


def test_a_saved_graph_holds_the_columns_np_savez_would_write(tmp_path):
    """:meth:`ExecutionGraph.save` (and with it ``llamp ingest -o x.npz``) writes each column
    as ``np.savez`` would: same member names, same bytes."""
    graph = random_graph(5, ranks=4, steps=60, max_size=8192)
    graph.label = np.array([f"v{i}" for i in range(graph.num_vertices)], dtype=object)
    path = save_graph(graph, tmp_path / "g.npz", (BASE,))
    with zipfile.ZipFile(path) as archive:
        stored = {i.filename: archive.read(i) for i in archive.infolist()}
    columns = {name: getattr(graph, name) for name in ("rank", "kind", "cost_ns", "edge_src")}
    columns.update(num_ranks=np.array(graph.num_ranks), label=graph.label.astype(str))
    for name, column in columns.items():
        payload = io.BytesIO()
        np.lib.format.write_array(payload, column)
        assert stored[f"{name}.npy"] == payload.getvalue(), name
