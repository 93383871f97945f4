"""Numbers that overflow or lose precision, at the reader that sees them first: a trace count ×
its datatype size beyond 64 bits, a GOAL cost a float64 would round, CLI values out of range.
Each is exit 2 with one ``llamp: error:`` line naming where, in its own process, quickly and in
bounded memory (``--ranks 0-100000000`` once allocated 4 GB)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_process import llamp_measured
from test_liballprof import recv, send, write_trace

from llamp import config
from llamp.errors import ParameterError

MAX_RSS = 700 << 20


def _refused(home: Path, *args: str, where: str, reason: str) -> None:
    result = llamp_measured(*args, home=home, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("llamp: error: "), result.stderr
    assert where in lines[0] and reason in lines[0], lines[0]
    assert result.max_rss_bytes < MAX_RSS and result.seconds < 60


def test_a_count_times_type_size_beyond_64_bits_is_refused_at_its_line(tmp_path):
    count = 2**61 + 4500  # × 8 bytes wraps to 36,000 in int64
    eight = ":1,8,8:"
    path = write_trace(
        tmp_path / "t",
        [
            [send(110, 120, 1, 5, 0, 2, count=count).replace(":1,4,4:", eight)],
            [recv(110, 130, 0, 5, 1, 2, count=count).replace(":1,4,4:", eight)],
        ],
    )
    _refused(
        tmp_path / "home",
        "ingest",
        str(path),
        "--name",
        "t",
        where=f"{path / 'pmpi-trace-rank-0.txt'}:5:",
        reason="18446744073709587616 bytes: more than 64 bits hold",
    )


def test_a_goal_cost_a_float64_would_round_is_refused_at_its_line(tmp_path):
    goal = tmp_path / "big.goal"
    goal.write_text("num_ranks 1\nrank 0 {\nl1: calc 9007199254740993\n}\n")
    _refused(
        tmp_path / "home", "info", str(goal), where=f"{goal}:3:", reason="above 2^53"
    )  # fmt: skip


def test_a_goal_size_of_2_63_is_named_as_beyond_signed_64_bits(tmp_path):
    goal = tmp_path / "big.goal"
    goal.write_text(
        "num_ranks 2\nrank 0 {\nl1: send 9223372036854775808b to 1 tag 0\n}\n"
        "rank 1 {\nl1: recv 8b from 0 tag 0\n}\n"
    )
    _refused(
        tmp_path / "home",
        "info",
        str(goal),
        where=f"{goal}:3:",
        reason="size 9223372036854775808 is above 2^63 − 1",
    )


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    from llamp.ingest.synthetic import stencil_with_vertices

    path = tmp_path_factory.mktemp("small") / "s.npz"
    stencil_with_vertices(2000, ranks=4).save(path)
    return path


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["predict", "--ranks", "0-100000000"], "--ranks: rank 100000000 is outside 0..3"),
        (["predict", "--ranks", "1,,2"], "--ranks: cannot read ''"),
        (["predict", "--ranks", "3-1"], "runs backwards"),
        (["tolerance", "--x", "1,,2"], "--x: '1,,2' has an empty value between commas"),
        (["predict", "--L", "1e400s"], "beyond a float64"),
    ],
    ids=["ranks-huge", "ranks-empty", "ranks-backwards", "x-empty", "L-infinite"],
)
def test_a_cli_value_out_of_range_is_refused_before_allocating(tmp_path, small, args, reason):
    command, *rest = args
    _refused(tmp_path / "home", command, str(small), *rest, where="llamp: error:", reason=reason)


@pytest.mark.parametrize(
    ("text", "reason"),
    [("0:1e400s", "beyond a float64"), ("5ms:1ms", "must be after"), ("5ms", "not FROM:TO")],
)
def test_a_window_beyond_float64_or_backwards_is_refused(text, reason):
    with pytest.raises(ParameterError, match=reason):
        config.parse_window_ns(text)
    assert config.parse_window_ns("10ms:") == (1e7, float("inf"))


def test_json_output_holds_every_value_cypher_returns_unchanged(capsys):
    """A ``sum`` is a Decimal (once "not JSON serializable"), dates are objects: each is
    printed as JSON holds it, integers exactly, never a rounded number."""
    import datetime
    import decimal
    import json

    import numpy as np

    from llamp.cli.base import emit_json

    emit_json(
        {
            "sum": decimal.Decimal(2**63 + 1),
            "half": decimal.Decimal("0.5"),
            "tenth": decimal.Decimal("0.1"),
            "day": datetime.date(2020, 1, 2),
            "list": np.array([1, 2]),
            "nan": float("nan"),
        }
    )
    out = json.loads(capsys.readouterr().out)
    assert out == {
        "sum": 2**63 + 1,
        "half": 0.5,
        "tenth": "0.1",
        "day": "2020-01-02",
        "list": [1, 2],
        "nan": None,
    }


def test_otf2_byte_counts_of_2_63_or_more_are_refused_not_wrapped():
    import numpy as np

    from llamp.errors import TraceError
    from llamp.ingest.otf2 import _bytes

    lengths = np.array([8, 1 << 63], np.uint64)
    calls, lines = np.array([0, 1]), np.array([10, 11])
    with pytest.raises(TraceError, match=r"t\.otf2:11: MPI_Send: 9223372036854775808 bytes"):
        _bytes(lengths, ["MPI_Recv", "MPI_Send"], calls, lines, "t.otf2")
    assert _bytes(lengths[:1], ["x"], calls, lines, "t").tolist() == [8]


def test_dumpi_count_times_a_huge_derived_type_is_refused_not_wrapped():
    """A derived type of 2^62 bytes and a count of 4: beyond 64 bits."""
    from types import SimpleNamespace

    import numpy as np

    from llamp.errors import TraceError
    from llamp.ingest.dumpi import _FID, _Types

    recs = SimpleNamespace(
        dtype_sizes=np.array([0, 8]), fid=np.array([_FID["MPI_Send"]]), path="t-0000.bin"
    )
    types = _Types(recs, diag=None)
    types.sizes[100] = 1 << 62  # 2^31 × 2^31 bytes: still fits
    assert types.bytes(1, 100, 0, 0) == 1 << 62
    with pytest.raises(TraceError, match=r"t-0000\.bin:1: MPI_Send: 4 elements"):
        types.bytes(4, 100, 0, 0)
    with pytest.raises(TraceError, match="more than 64 bits hold"):
        types.bytes(np.array([1, 2]), 100, 0, 0)


def test_a_liballprof_count_of_2_63_is_named_as_written(tmp_path):
    from llamp.errors import TraceError
    from llamp.ingest import read

    big = send(110, 120, 1, 5, 0, 2, count=2**63)
    path = write_trace(tmp_path / "t", [[big], [recv(110, 130, 0, 5, 1, 2)]])
    with pytest.raises(TraceError) as err:
        read(path)
    assert "count is negative or above 2^63 − 1" in str(err.value)
    assert "9223372036854775808" in str(err.value) and err.value.line == 5
