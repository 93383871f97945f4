"""Unit parsing in ``llamp.config``: the host speed (flop rate) in SimGrid's notation."""

from __future__ import annotations

import pytest

from llamp.config import DEFAULT_HOST_SPEED_FLOPS, format_flop_rate, parse_flop_rate
from llamp.errors import ParameterError


@pytest.mark.parametrize(
    ("text", "flops"),
    [
        ("1Gf", 1e9),
        ("20kf", 2e4),
        ("98.095Mf", 98.095e6),  # SimGrid's small_platform hosts
        ("1.5Tf", 1.5e12),
        ("7f", 7.0),
        ("2.5Gflops", 2.5e9),
        ("3 Mflop/s", 3e6),
        ("1e9", 1e9),
        ("250", 250.0),
        (1e9, 1e9),
        (20000, 2e4),
    ],
)
def test_parse_flop_rate(text, flops):
    assert parse_flop_rate(text) == pytest.approx(flops, rel=1e-15)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("0", "positive"),
        ("0Gf", "positive"),
        ("-1Gf", "positive"),
        ("1e999", "finite"),
        (float("inf"), "finite"),
        (float("nan"), "finite"),
        (0, "positive"),
        ("1gf", "cannot read"),  # SimGrid's m is milli, G is giga: case matters
        ("1GHz", "cannot read"),
        ("fast", "cannot read"),
        ("", "cannot read"),
        ("inf", "cannot read"),
    ],
)
def test_parse_flop_rate_rejects(text, why):
    with pytest.raises(ParameterError, match=why):
        parse_flop_rate(text)


def test_format_flop_rate_round_trips():
    assert format_flop_rate(DEFAULT_HOST_SPEED_FLOPS) == "1Gf"
    for text in ("20kf", "2.5Gf", "500Mf", "7f", "1.5Tf"):
        assert format_flop_rate(parse_flop_rate(text)) == text
