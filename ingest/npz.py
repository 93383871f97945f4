"""The ``.npz`` graph file (:meth:`ExecutionGraph.save`), read without trusting it (issue 16).

``numpy.load`` believes the archive: a damaged header can ask for a 7 TiB array, a bad zip
raises ``BadZipFile``, a bad ``meta`` member ``UnicodeDecodeError``/``JSONDecodeError``. Here
every member's ``.npy`` header is read first and checked (known name, plain numeric or
string dtype, one dimension, as many bytes as the zip says it unpacks to, within a budget),
then the graph is loaded; whatever the archive still does wrong is an :class:`InputError`
naming the file and the member.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from pathlib import Path

import numpy as np

from llamp.errors import InputError
from llamp.graph import ExecutionGraph

#: Bytes a graph file may unpack to (10^8 vertices take ~6 GB; more is damage).
MAX_UNPACKED_BYTES = 16 << 30


def _check_members(path: Path) -> None:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:
        raise InputError(f"{path}: not a llamp graph file (not a zip archive: {err})") from None
    total = 0
    with archive:
        for info in archive.infolist():
            name = info.filename
            total += info.file_size
            if total > MAX_UNPACKED_BYTES:
                raise InputError(
                    f"{path}: unpacks to more than {MAX_UNPACKED_BYTES >> 30} GiB: damaged"
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


def read_npz(path: str | Path, *, validate: bool = True, lazy: bool = False) -> ExecutionGraph:
    """The graph in ``path``; a damaged file is an InputError, never a crash or a huge
    allocation. ``lazy``: columns memory-mapped (:meth:`ExecutionGraph.load`)."""
    path = Path(path)
    _check_members(path)
    try:
        return ExecutionGraph.load(path, validate=validate, lazy=lazy)
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


__all__ = ["MAX_UNPACKED_BYTES", "read_npz"]
