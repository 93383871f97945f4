"""Reading the web UI under Streamlit's AppTest: open a page, find an element by key, read the
exact number behind a metric, a table by column, the Plotly figures and their data arrays.

The UI suites (``test_ui_*.py``) share these; the store they run on (Sweep3D as run ``sweep3d``
in a temporary ``LLAMP_HOME``) comes from the ``home``/``store_env`` fixtures in ``conftest.py``.
"""

from __future__ import annotations

import base64
import io
import json
import re
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from llamp.ui import APP_PATH, display, tasks

#: The trace the UI suites store as run :data:`RUN`.
SWEEP3D = Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2"
RUN = "sweep3d"
TIMEOUT = 120


class SettledAppTest(AppTest):
    """An AppTest whose every run waits for the background work it started
    (:mod:`llamp.ui.tasks`) and reruns, as the page's progress panel does in a browser, so a
    test reads the finished page."""

    def _run(self, widget_state=None, timeout=None):
        drawn = tasks.panels_drawn
        result = super()._run(widget_state, timeout)
        settled = False
        for _ in range(10):
            if tasks.panels_drawn == drawn and not tasks.running():
                break
            for task in tasks.running():
                task.wait(TIMEOUT)
            drawn = tasks.panels_drawn
            self._page_hash = ""  # stay on the page the last run ended on (a st.switch_page)
            result = super()._run(self._tree.get_widget_states(), timeout)
            settled = True
        if settled:
            # The run after one that drew a progress fragment lacks the keys of its containers
            # in AppTest's element tree (Streamlit 1.67); one more run reads them.
            result = super()._run(self._tree.get_widget_states(), timeout)
        return result


def page(view: str | None = None, *, settle: bool = True) -> AppTest:
    """The app, run once, then switched to ``views/<view>.py`` and run again; ``settle``: each
    run waits for the background work it started (see :class:`SettledAppTest`)."""
    cls = SettledAppTest if settle else AppTest
    at = cls(APP_PATH, default_timeout=TIMEOUT)
    at.run()
    if view is not None:
        at.switch_page(f"views/{view}.py")
        at.run()
    return at


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def keyed(at: AppTest, key: str):
    """The block an element was given ``key`` for (``st.container(key=...)``)."""
    found = [b for b in at.main.children.values() if getattr(b, "key", None) == key]
    stack = list(at.main.children.values())
    while stack and not found:
        node = stack.pop()
        if getattr(node, "key", None) == key:
            found.append(node)
        stack.extend(getattr(node, "children", {}).values())
    assert found, f"no element with key {key!r}"
    return found[0]


def exact_ns(block) -> float:
    """The exact value a metric's caption shows, ``"exact: 2.936850544516 ms"`` → ns."""
    text = block.caption[0].value
    assert text.startswith("exact: "), text
    return display.parse_exact(text.removeprefix("exact: "))


#: Units of the columns a page shows (``"wait (ms)"``, ``"size (KiB)"``, ``"share (%)"``):
#: (the analysis' column suffix, the unit's size in it).
UNITS = {
    "s": ("_ns", 1e9),
    "ms": ("_ns", 1e6),
    "µs": ("_ns", 1e3),
    "ns": ("_ns", 1.0),
    "B": ("_bytes", 1.0),
    "KiB": ("_bytes", 1024.0),
    "MiB": ("_bytes", 1024.0**2),
    "GiB": ("_bytes", 1024.0**3),
    "%": ("_share", 0.01),
    "ns/B": ("_ns_per_byte", 1.0),
    "Gb/s": ("_Gb_per_s", 1.0),
}
#: Headers in words back to the analysis' names (``"λ_L"`` → ``lambda_L``).
NAMES = {words: name for name, words in display.WORDS.items()}


def _code(words: str) -> str:
    """A header in words back to its code name: ``"slack 1%"`` → ``slack_1pct``."""
    return re.sub(r"(\d)%", r"\1pct", words.replace(" ", "_"))


def _numbers(column: pd.Series) -> pd.Series:
    """A column as numbers: a text column's ``unbounded`` is ∞, ``—`` is NaN."""
    if pd.api.types.is_numeric_dtype(column):
        return column
    words = {display.UNBOUNDED: np.inf, f"−{display.UNBOUNDED}": -np.inf, display.MISSING: np.nan}
    return column.map(lambda v: words[v] if v in words else float(str(v).replace(",", "")))


def raw(frame: pd.DataFrame) -> pd.DataFrame:
    """A table as :func:`llamp.ui.display.frame` shows it, back in the analysis' own names
    and units: ``"wait (ms)"`` → ``wait_ns``, ``"vs block"`` → ``vs_block``, ``"λ_L"`` →
    ``lambda_L``."""
    out = {}
    for column in frame.columns:
        base, _, unit = column.rpartition(" (")
        if base and unit.endswith(")") and unit[:-1] in UNITS:
            suffix, scale = UNITS[unit[:-1]]
            name = NAMES.get(base, _code(base))
            if display.kind_of(name)[1] == "percent_value":  # x_percent: a number of %
                out[name] = _numbers(frame[column])
                continue
            values = _numbers(frame[column]) * scale
            if base in NAMES:  # a word of display.WORDS: its code name, with or without unit
                out[name] = values
            if name.endswith(suffix) or name in ("bytes", "nbytes", "size"):
                suffix = ""
            out[name + suffix] = values
        else:
            out[NAMES.get(column, _code(column))] = frame[column]
    return pd.DataFrame(out, index=frame.index)


def table(at: AppTest, column: str) -> pd.DataFrame:
    """The first table shown with ``column``; a table shown with units (``controls.table``)
    is found by the analysis' column name and returned in those names, in ns (:func:`raw`)."""
    for element in at.dataframe:
        frame = element.value
        restored = raw(frame)
        if column in restored.columns and any(
            c.endswith(("_ns", "_bytes", "_share", "_percent")) or c in NAMES.values()
            for c in restored.columns
        ):
            return restored
        if column in frame.columns:
            return frame
    raise AssertionError(f"no table with a {column!r} column")


def figures(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def arr(value) -> np.ndarray:
    """A Plotly data array: a list, or a typed array ``{"dtype", "bdata"}`` (base64)."""
    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
    return np.asarray(value)


def metric(at: AppTest, label: str):
    found = [m for m in at.metric if m.label == label]
    assert found, f"no metric {label!r} in {[m.label for m in at.metric]}"
    return found[0]


def archive_bytes(kind: str, members: dict[str, bytes]) -> bytes:
    """A .zip or .tar.gz holding ``members`` (name → bytes), as a user would upload it."""
    buffer = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buffer, "w") as zf:
            for name, data in members.items():
                zf.writestr(name, data)
    else:
        with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
