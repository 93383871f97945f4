"""The ``.npz`` graph file (:meth:`ExecutionGraph.save`), read without trusting it.

``numpy.load`` believes the archive: a damaged header can ask for a 7 TiB array, a bad zip
raises ``BadZipFile``, a bad ``meta`` member ``UnicodeDecodeError``/``JSONDecodeError``, a
7.8 MB member can inflate to 8 GB. Here every member's ``.npy`` header is read first and
checked (known name, plain numeric or string dtype, one dimension, as many bytes as the zip
says it unpacks to), and the bytes the archive unpacks to are bounded before anything is
allocated: a stored member is as large as the file says (the file bounds it), and compressed
members together inflate to at most :func:`unpack_limit` — :data:`MAX_RATIO` times their
compressed size, and a quarter of the machine's memory (a member that inflates to more than it
declares is cut at its declared size by :mod:`zipfile`, whose CRC check then fails). Then the
graph is loaded; its columns are checked (:meth:`ExecutionGraph.check_ranges` for a file this
installation sealed, :meth:`ExecutionGraph.validate` for any other) and its stored event graph
is used only under the seal (:mod:`llamp.seal`). Whatever the archive still does wrong is an
:class:`InputError` naming the file and the member.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from llamp.errors import GraphError, InputError
from llamp.graph import ExecutionGraph

#: How many times its compressed size a compressed member may inflate to. llamp writes graph
#: files uncompressed; ``np.savez_compressed`` of a graph's columns inflates 3–30 times (a
#: sorted rank column the most), a zip bomb ~1,000 times.
MAX_RATIO = 100
#: Bytes compressed members may always inflate to, whatever their size.
MIN_UNPACK_BYTES = 64 << 20


def memory_bytes() -> int:
    """The machine's physical memory in bytes (16 GiB where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 16 << 30


def unpack_limit(compressed_bytes: int) -> int:
    """Bytes the compressed members of a graph file may inflate to, in total."""
    return min(MAX_RATIO * compressed_bytes + MIN_UNPACK_BYTES, memory_bytes() // 4)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB"


def _check_members(path: Path) -> None:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:
        raise InputError(f"{path}: not a llamp graph file (not a zip archive: {err})") from None
    with archive:
        infos = archive.infolist()
        packed = [i for i in infos if i.compress_type != zipfile.ZIP_STORED]
        inflated = sum(i.file_size for i in packed)
        limit = unpack_limit(sum(i.compress_size for i in packed))
        if inflated > limit:
            raise InputError(
                f"{path}: its compressed members would inflate to {_mib(inflated)}, more than "
                f"{_mib(limit)} ({MAX_RATIO}× their size, at most a quarter of this machine's "
                "memory): refused"
            )
        for info in infos:
            name = info.filename
            if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
                raise InputError(
                    f"{path}: member {name[:100]!r} is stored uncompressed but claims "
                    f"{info.file_size} bytes in {info.compress_size}: damaged"
                )
            if not name.endswith(".npy"):
                raise InputError(f"{path}: member {name[:100]!r} is not an array")
            try:
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    read_header = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = read_header(member, max_header_size=10_000)
            except (
                ValueError,
                OSError,
                EOFError,
                zipfile.BadZipFile,
                zlib.error,
                SyntaxError,
                TypeError,
                NotImplementedError,
            ) as err:
                raise InputError(f"{path}: member {name[:100]!r} is damaged ({err})") from None
            # one column per member; the pattern tables of a stored event graph are 2-D
            dims = 2 if name.startswith("lowering_") else 1
            if dtype.hasobject or dtype.kind not in "biufSUV" or len(shape) > dims:
                raise InputError(
                    f"{path}: member {name[:100]!r} has dtype {dtype} and shape {shape}, "
                    "not a column of a llamp graph"
                )
            need = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
            if need > info.file_size:
                raise InputError(
                    f"{path}: member {name[:100]!r} claims {need} bytes but holds "
                    f"{info.file_size}: damaged"
                )


def read_npz(path: str | Path, *, lazy: bool = False) -> ExecutionGraph:
    """The graph in ``path``, checked; a damaged or hostile file is an InputError, never a
    crash, a huge allocation or a changed number. ``lazy``: columns memory-mapped
    (:meth:`ExecutionGraph.load`)."""
    path = Path(path)
    _check_members(path)
    try:
        return ExecutionGraph.load(path, lazy=lazy)
    except GraphError as err:  # a defect of the graph: name the file it is in
        raise GraphError(f"{path}: {err}") from None
    except InputError:
        raise
    except (
        zipfile.BadZipFile,
        zlib.error,
        OSError,
        EOFError,
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        OverflowError,
        UnicodeDecodeError,
        json.JSONDecodeError,
    ) as err:
        raise InputError(
            f"{path}: not a valid llamp graph file ({type(err).__name__}: {err})"
        ) from None


__all__ = ["MAX_RATIO", "read_npz", "unpack_limit"]
