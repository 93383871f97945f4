"""The UI's display layer (``llamp.ui.display``): one formatter per kind of value, the table form
every page shows, and the sidebar's normalised parameters."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from llamp.config import parse_duration_ns
from llamp.errors import ParameterError
from llamp.params import LogGPS
from llamp.ui import display


@pytest.mark.parametrize(
    ("ns", "shown"),
    [
        (0.0, "0 ns"),
        (2.36, "2.36 ns"),
        (1615.0, "1.615 µs"),
        (4999.909997161899, "4.99991 µs"),
        (5.567e6, "5.567 ms"),
        (41909063157.385979, "41.9091 s"),
        (math.inf, "unbounded"),
        (float("nan"), "—"),
        (None, "—"),
    ],
)
def test_durations_take_the_unit_that_suits_them(ns, shown):
    assert display.duration(ns) == shown


def test_exact_duration_reads_back_to_the_same_float():
    for ns in (41909063157.385979, 2936850.544516296, 0.125, 3000.0):
        assert display.parse_exact(display.exact_duration(ns)) == pytest.approx(ns, abs=1e-6)
    assert display.exact_duration(41909063157.385979) == "41,909,063,157.385979 ns"


def test_sizes_bandwidths_percentages_counts():
    assert display.size(262144) == "256 KiB"
    assert display.size(1536) == "1.5 KiB"
    assert display.size(3 << 30) == "3 GiB"
    assert display.size(100) == "100 B"
    assert display.bandwidth(0.018) == "444.4 Gb/s"
    assert display.bandwidth(0.0) == "unbounded"
    assert display.bandwidth(math.inf) == "0 Gb/s"
    assert display.gap(math.inf) == "unbounded"
    assert display.percent(0.125) == "12.5%"
    assert display.count(1_000_000) == "1,000,000"
    assert display.number(None) == "—"


def test_a_change_reads_with_its_direction():
    """A 7,500-fold decrease is '↓ 7,500× faster', never an up arrow with ×0.000133."""
    assert display.change(5.567e6, 5.567e6 * 7500) == ("↓", "7,500× faster")
    assert display.change(2.5, 1.0) == ("↑", "2.5× slower")
    assert display.change(1.0, 1.0) == ("=", "same")
    assert display.change(10.0, 20.0, "less", "more") == ("↓", "2× less")


def test_parameters_are_normalised_as_the_sidebar_reads_them():
    assert display.parameter("L", 4999.909997161899) == "4.99991us"
    assert display.parameter("o", 1500.0) == "1.5us"
    assert display.parameter("g", 0.0) == "0ns"
    assert display.parameter("G", 0.018) == "0.018ns/B"
    assert display.parameter("S", 262144.0) == "262144"
    # What the sidebar shows is what it computes with.
    assert parse_duration_ns(display.parameter("L", 4999.909997161899)) == 4999.91


def test_a_form_duration_needs_a_unit():
    with pytest.raises(ParameterError, match=r"give a unit \(e\.g\. 3us\)"):
        parse_duration_ns("3", default_unit=None)
    with pytest.raises(ParameterError, match="give a unit"):
        parse_duration_ns(3.0, default_unit=None)
    assert parse_duration_ns("3", default_unit="ns") == 3.0  # the CLI's reading is unchanged
    with pytest.raises(ParameterError, match=r"got -1 µs"):
        LogGPS.parse(L="-1us")


def test_download_names_say_run_page_and_parameters():
    params = LogGPS.parse(L="3us", o="1.5us", G="0.018ns/B")
    assert (
        display.download_name("sweep3d", "latency", params, "html")
        == "sweep3d-latency-L3us-o1.5us-G0.018.html"
    )
    assert display.download_name("a b/c", "critical-path", params, "html") != (
        display.download_name("a b/c", "latency", params, "html")
    )
    assert "/" not in display.download_name("../x", "latency", params, "html")


def test_a_table_reads_in_words_and_units():
    frame = pd.DataFrame(
        {
            "L_ns": [1e3, 2e6],
            "runtime_ns": [4.19e10, 4.2e10],
            "lambda_L": [np.nan, 12.0],
            "tolerance_1pct_ns": [1467550.0, math.inf],
            "compute_share": [0.25, 0.5],
            "bytes": [1024, 4096],
            "tag": [4611686018427387914, 7],
            "messages": [10, 20],
        }
    )
    shown = display.frame(frame)
    assert list(shown.columns) == [
        "L (ms)",
        "runtime T (s)",
        "λ_L",
        "tolerance 1% (ms)",
        "compute (%)",
        "bytes (KiB)",
        "messages",
    ]
    assert list(shown["runtime T (s)"]) == [41.9, 42.0]
    assert list(shown["λ_L"]) == ["—", "12"]
    assert list(shown["tolerance 1% (ms)"]) == ["1.46755", "unbounded"]
    assert list(shown["compute (%)"]) == [25.0, 50.0]
    assert list(shown["bytes (KiB)"]) == [1.0, 4.0]
    assert list(shown["messages"]) == [10, 20]
