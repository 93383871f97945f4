"""Every page of the web UI reads as a performance engineer expects: each number with its unit,
headers in words, no code names, no internal tags, no ``None``/``NaN``/``Infinity``.

The walk opens every page of the navigation (``llamp.ui.navigation.PAGES``) under AppTest on
Sweep3D (run ``sweep3d``), and on a larger synthetic stencil, and reads what a person would
read: tables (headers and cells), metrics, text, and the figures' titles, legends and hovers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from apptest_pages import SWEEP3D, TIMEOUT, SettledAppTest, figures
from store_graphs import stored_home

from llamp.ingest import read
from llamp.ingest.synthetic import stencil_with_vertices
from llamp.ui import APP_PATH, display
from llamp.ui.navigation import PAGES

#: Words that must never be read on a page.
FORBIDDEN = re.compile(r"\bNone\b|\bNaN\b|\bnan\b|Infinity|\binf\b|\w_ns\b|\bL_ns\b")
#: A bare number of seven or more digits (≥ 10^6) not followed by a unit; numbers with
#: thousands separators (counts) and numbers inside words (ids, names) are fine.
BARE = re.compile(
    r"(?<![\w.,/:-])\d{7,}(?:\.\d+)?(?![\w.,%×/-])(?!\s*(?:ns|µs|us|ms|s|B|KiB|MiB|GiB|Gb/s|%|×)\b)"
)
#: A header ending in a unit: ``runtime (ms)``.
UNIT_HEADER = re.compile(r"\((?:s|ms|µs|ns|B|KiB|MiB|GiB|%|ns/B|Gb/s|[^()]*/[^()]*)\)$")
#: A snake_case code name as a header (``share_needed``, ``thakur_gropp_formula``).
CODE_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
#: Graph tags fold communicators in above 2^32; no shown number is that large an integer.
TAG_LIMIT = 1 << 32


def problems_of_text(where: str, text: str) -> list[str]:
    """What a person must not read in ``text``; code spans (```cost_ns```, the names a Cypher
    query uses) are what they are."""
    found = []
    text = re.sub(r"`[^`]*`", "", text)
    if FORBIDDEN.search(text):
        found.append(f"{where}: {FORBIDDEN.search(text).group(0)!r} in {text[:160]!r}")
    if BARE.search(text):
        found.append(f"{where}: bare number {BARE.search(text).group(0)!r} in {text[:160]!r}")
    return found


def problems_of_table(where: str, frame: pd.DataFrame) -> list[str]:
    found = []
    for column in frame.columns:
        name = str(column)
        if name.endswith("_ns") or CODE_NAME.match(name):
            found.append(f"{where}: header {name!r} is a code name")
        values = frame[column]
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        for value in values:
            if value is None or (isinstance(value, float) and math.isnan(value)):
                found.append(f"{where}: column {name!r} holds a missing value")
                break
            if isinstance(value, str):
                problems = problems_of_text(f"{where} column {name!r}", value)
                if problems:
                    found.extend(problems[:1])
                    break
                continue
            if isinstance(value, int | float | np.number) and not isinstance(value, bool):
                number = float(value)
                if math.isinf(number):
                    found.append(f"{where}: column {name!r} holds an infinity")
                    break
                integer = isinstance(value, int | np.integer)
                if integer and abs(number) >= TAG_LIMIT:
                    found.append(f"{where}: column {name!r} holds {value} (an internal tag?)")
                    break
                if numeric and not integer and abs(number) >= 1e6 and not UNIT_HEADER.search(name):
                    found.append(f"{where}: column {name!r} holds {value} with no unit")
                    break
    return found


def problems_of_figure(where: str, spec: dict) -> list[str]:
    found = []
    layout = spec.get("layout", {})
    texts = []
    for axis in [k for k in layout if k.startswith(("xaxis", "yaxis"))]:
        title = layout[axis].get("title", {})
        texts.append(title.get("text", "") if isinstance(title, dict) else str(title))
    title = layout.get("title", {})
    texts.append(title.get("text", "") if isinstance(title, dict) else str(title))
    for trace in spec.get("data", []):
        texts += [str(trace.get("name", "")), str(trace.get("hovertemplate", ""))]
    for annotation in layout.get("annotations", []):
        texts.append(str(annotation.get("text", "")))
    for text in texts:
        if text and text != "None":
            found += problems_of_text(where, text)
    return found


def page_problems(at) -> list[str]:
    found = []
    for i, element in enumerate(at.dataframe):
        if element.key != "cypher_table":  # the console shows the query's own columns
            found += problems_of_table(f"table {i}", element.value)
    for m in at.metric:
        for part in (m.label, m.value, m.proto.delta or ""):
            found += problems_of_text(f"metric {m.label!r}", str(part))
    for kind in (
        "markdown",
        "caption",
        "info",
        "warning",
        "success",
        "error",
        "subheader",
        "header",
        "title",
        "text",
    ):
        for element in at.get(kind):
            found += problems_of_text(kind, str(element.value))
    for i, spec in enumerate(figures(at)):
        found += problems_of_figure(f"figure {i}", spec)
    return found


def views() -> list[str]:
    return [Path(spec.path).stem for spec in PAGES]


#: The button that starts a page's work where it does not start on its own.
START = {
    "variability": "mc_run",
    "placement": "place_run",
    "parallel_groups": "pg_run",
    "cypher": "cypher_run_button",
}
#: Vertices of the larger run (a 16-rank stencil).
LARGE = 100_000


@pytest.fixture(scope="module")
def home(tmp_path_factory, sweep3d, ui_store) -> Iterator[Path]:
    """A LLAMP_HOME holding Sweep3D (``sweep3d``), the bcast loop (``bcast``: Compare runs
    has two runs to compare) and a 16-rank stencil of about :data:`LARGE` vertices
    (``stencil``)."""
    with stored_home(
        tmp_path_factory,
        {
            "sweep3d": sweep3d,
            "bcast": read(SWEEP3D.parent / "bcast-synthetic"),
            "stencil": stencil_with_vertices(LARGE, ranks=16),
        },
        ui_store,
    ) as path:
        yield path


def walk(view: str, run: str):
    """Page ``view`` opened on ``run`` (as a link ``?run=…`` opens it), its work started."""
    at = SettledAppTest(APP_PATH, default_timeout=TIMEOUT)
    at.query_params["run"] = run
    at.run()
    at.switch_page(f"views/{view}.py")
    at.run()
    if view in START:
        at.button(key=START[view]).click().run()
    return at


@pytest.mark.slow
@pytest.mark.parametrize("view", views())
def test_every_page_reads_with_units(store_env, view):
    at = walk(view, "sweep3d")
    assert not at.exception, [e.value for e in at.exception]
    problems = page_problems(at)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("view", views())
def test_every_page_reads_with_units_on_a_larger_run(store_env, view):
    at = walk(view, "stencil")
    assert not at.exception, [e.value for e in at.exception]
    problems = page_problems(at)
    assert not problems, "\n".join(problems)


def test_the_checks_catch_what_a_person_must_not_read():
    """The walk's checks fail on each thing the pages must not show."""
    bad = pd.DataFrame(
        {
            "runtime_ns": [4.2e10],
            "share_needed": [0.5],
            "T (ms)": [float("inf")],
            "λ_L": [None],
            "messages": [1 << 62],
            "wait": [42328153788.9598],
        }
    )
    problems = " | ".join(problems_of_table("t", bad))
    for expected in (
        "'runtime_ns'",
        "'share_needed'",
        "infinity",
        "missing",
        "internal tag",
        "'wait' holds",
    ):
        assert expected in problems, (expected, problems)
    assert problems_of_text("m", "41909063157.385979") != []
    assert problems_of_text("m", "None") != []
    assert problems_of_text("m", "T = 41.909 s, 1,515 latencies, 42328153 ns") == []
    good = display.frame(bad.drop(columns=["T (ms)", "messages", "wait"]))
    assert problems_of_table("shown", good) == [], good.columns.tolist()


def test_the_url_run_and_parameters_hold_on_the_next_page(store_env):
    """``/?run=bcast&L=4999.909997161899ns`` opened on the Runs page: the Latency page opened
    next shows that run and L as the sidebar writes it (``4.99991us``), and keeps both in the
    URL."""
    at = SettledAppTest(APP_PATH, default_timeout=TIMEOUT)
    at.query_params["run"] = "bcast"
    at.query_params["L"] = "4999.909997161899ns"
    at.run()
    at.switch_page("views/latency.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.selectbox(key="run::latency").value == "bcast"
    assert at.sidebar.text_input(key="param_L::latency").value == "4.99991us"
    assert at.query_params["run"] == ["bcast"] or at.query_params["run"] == "bcast"


@pytest.mark.parametrize(
    ("typed", "said"),
    [("3", "give a unit (e.g. 3us)"), ("-1us", "got -1 µs"), ("3 parsecs", "use one of")],
)
def test_a_refused_duration_names_the_unit(store_env, typed, said):
    at = SettledAppTest(APP_PATH, default_timeout=TIMEOUT)
    at.run()
    at.switch_page("views/latency.py")
    at.run()
    at.sidebar.text_input(key="param_L::latency").set_value(typed).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any(said in e for e in errors), errors
