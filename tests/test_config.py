"""Value parsers and formatters in ``llamp.config``: host speed (flop rate) in SimGrid's notation,
percentages, parameter values and ranges, evaluation budgets, collective choices, tables."""

from __future__ import annotations

import pytest

from llamp.config import (
    DEFAULT_HOST_SPEED_FLOPS,
    format_flop_rate,
    format_percent,
    format_table,
    format_value,
    parse_budget,
    parse_collectives,
    parse_flop_rate,
    parse_percent,
    parse_percents,
    parse_range,
    store_buffer_pool_bytes,
)
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


# ---------------------------------------------------------------------- percentages
@pytest.mark.parametrize(
    ("text", "fraction"),
    [
        ("5", 0.05),
        ("5%", 0.05),
        (" 5 % ", 0.05),
        ("0.5", 0.005),  # a bare number is a percentage: 0.5 means 0.5 %, never 50 %
        ("0.05", 0.0005),
        ("150", 1.5),
        ("1e-3%", 1e-5),
        (2, 0.02),
        (0.5, 0.005),
    ],
)
def test_parse_percent(text, fraction):
    assert parse_percent(text) == pytest.approx(fraction, rel=1e-15)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("0", "must be a positive percentage"),
        ("-1%", "must be a positive percentage"),
        ("0%", "must be a positive percentage"),
        ("nan", "must be a positive percentage"),
        ("inf", "must be a positive percentage"),
        ("five", "cannot read 'five' as a percentage (e.g. 5, 5% or 0.5%)"),
        ("5%%", "cannot read '5%%'"),
        ("", "cannot read ''"),
        (True, "is not a percentage"),
    ],
)
def test_parse_percent_rejects(text, why):
    with pytest.raises(ParameterError) as err:
        parse_percent(text, what="--x")
    message = str(err.value)
    assert message.startswith("--x: ") and why in message and "\n" not in message


def test_parse_percents_sorts_and_drops_repeats():
    assert parse_percents("5, 1%,2,1") == pytest.approx((0.01, 0.02, 0.05))
    with pytest.raises(ParameterError, match=r"empty value between commas"):
        parse_percents("5, 1%,2,,1", what="--x")
    with pytest.raises(ParameterError, match=r"^--x: no value given"):
        parse_percents(" , ", what="--x")
    with pytest.raises(ParameterError, match=r"^--x: '-2' must be a positive percentage"):
        parse_percents("1,-2", what="--x")


@pytest.mark.parametrize(
    ("fraction", "text"),
    [(0.05, "5%"), (0.005, "0.5%"), (0.0125, "1.25%"), (1.0, "100%"), (1e-5, "0.001%")],
)
def test_format_percent_never_rounds_to_zero(fraction, text):
    assert format_percent(fraction) == text
    assert parse_percent(format_percent(fraction)) == pytest.approx(fraction)


# ---------------------------------------------------------------------- values and ranges
def test_parse_range_per_parameter():
    assert parse_range("L", "0", "100us") == (0.0, 100_000.0)
    assert parse_range("o", "1us", "2.5us") == (1000.0, 2500.0)
    assert parse_range("G", "0.01", "100Gb/s") == pytest.approx((0.01, 0.08))
    # the CLI's shared --to default (100us) means 1 ns/B for G; None takes the default too
    assert parse_range("G", "0", "100us") == (0.0, 1.0)
    assert parse_range("L", "0", None) == (0.0, 100_000.0)


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("L", "5us", "1us"), "range 5us..1us: need 0 ≤ from ≤ to"),
        (("L", "-1us", "1us"), "need 0 ≤ from ≤ to"),
        (("L", "1 parsec", "2us"), "unknown time unit 'parsec' in '1 parsec'"),
        (("L", "one", "2us"), "cannot read duration 'one': expected e.g. 3us"),
        (("G", "fast", "1ns/B"), "cannot read gap per byte 'fast'"),
        (("x", "0", "1"), "unknown parameter 'x': choose L, G or o"),
    ],
)
def test_parse_range_rejects(args, why):
    with pytest.raises(ParameterError) as err:
        parse_range(*args)
    assert why in str(err.value)


@pytest.mark.parametrize(
    ("parameter", "value", "text"),
    [
        ("L", 10_000.0, "10 µs"),
        ("L", 1615.0, "1.615 µs"),
        ("o", 250.0, "250 ns"),
        ("G", 0.018, "0.018 ns/B"),
        ("G", float("inf"), "∞"),
        ("S", 262144.0, "262144 B"),
    ],
)
def test_format_value_prints_units(parameter, value, text):
    assert format_value(parameter, value) == text


# ---------------------------------------------------------------------- budgets, collectives
@pytest.mark.parametrize(
    ("text", "budget"),
    [("all", None), (" ALL ", None), (None, None), ("auto", "auto"), ("2", 2), (40, 40)],
)
def test_parse_budget(text, budget):
    assert parse_budget(text) == budget


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("1", "--max-evaluations: 1 < 2 (both ends of the range)"),
        ("many", "--max-evaluations: 'many' is not all, auto or a whole number"),
        ("2.5", "is not all, auto or a whole number"),
    ],
)
def test_parse_budget_rejects(text, why):
    with pytest.raises(ParameterError) as err:
        parse_budget(text)
    assert why in str(err.value)


def test_parse_collectives():
    assert parse_collectives("Allreduce=Ring, bcast=binomial,") == {
        "allreduce": "ring",
        "bcast": "binomial",
    }
    assert parse_collectives(None) == {} and parse_collectives("") == {}
    for bad in ("allreduce", "=ring", "allreduce="):
        with pytest.raises(ParameterError, match=r"^--collectives: '.*' is not OP=ALGORITHM$"):
            parse_collectives(bad)


# ---------------------------------------------------------------------- tables
def test_format_table_with_and_without_headers():
    assert format_table([("a", 1), ("bbb", 22)], ("k", "v")).splitlines() == [
        "k    v",
        "---  --",
        "a    1",
        "bbb  22",
    ]
    # a key/value listing has no header row and no rule (``llamp info``)
    assert format_table([("name", "x"), ("ranks", 4)], ()).splitlines() == ["name   x", "ranks  4"]


def test_store_buffer_pool_default_and_override(monkeypatch):
    monkeypatch.delenv("LLAMP_STORE_BUFFER_POOL", raising=False)
    assert store_buffer_pool_bytes() == 0  # LadybugDB's default
    monkeypatch.setenv("LLAMP_STORE_BUFFER_POOL", "512MiB")
    assert store_buffer_pool_bytes() == 512 << 20
    for bad, why in (("lots", "cannot read size"), ("1MiB", "at least 64MiB")):
        monkeypatch.setenv("LLAMP_STORE_BUFFER_POOL", bad)
        with pytest.raises(ParameterError, match=why) as err:
            store_buffer_pool_bytes()
        assert "LLAMP_STORE_BUFFER_POOL" in str(err.value) and "\n" not in str(err.value)
