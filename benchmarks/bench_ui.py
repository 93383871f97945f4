"""Every UI page on a 10^6-vertex run under AppTest, cold and warm (first result
≤ 15 s cold, ≤ 1 s warm).

The run is the 16-rank noisy stencil of ``ingest/synthetic.py`` (about 10^6 vertices), stored in
a temporary embedded store. Per page:

- **cold**: a server that has seen nothing (Streamlit caches cleared, the UI's memo of stored
  results dropped, the run's stored Analysis nodes deleted): the page is opened and rerun, as its
  progress panel does in a browser, until all its background work is done. ``first result`` is
  when it first shows a number, a table or a plot; ``complete`` when no work is left.
- **warm**: a second session opening the same page afterwards (results stored, graph loaded).
- **restarted**: a server restarted after that (Streamlit caches, the UI's memo and tasks
  dropped; the store keeps the pages' Analysis nodes): the page shows the stored results.

Pages that wait for a user action (an upload, a button) time what they show on opening.
``python -m benchmarks --only ui`` prints the table; ``--quick`` uses 10^5 vertices;
``LLAMP_BENCH_UI_PAGES=region,latency`` times only those pages.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.timing import peak_rss_mb, row

#: Seconds a page may take before the benchmark stops waiting for it.
PAGE_LIMIT_S = 300.0
#: Seconds between two reruns while a page's work goes on (the UI's progress panel polls 0.5 s).
POLL_S = 0.25


def _shows_result(at) -> bool:
    return bool(at.metric or at.dataframe or at.get("plotly_chart"))


def _open(view: str) -> tuple[float, float, str]:
    """(first result s, complete s, note) of opening ``views/<view>.py`` in a new session."""
    from streamlit.testing.v1 import AppTest

    from llamp.ui import APP_PATH, tasks

    at = AppTest(APP_PATH, default_timeout=PAGE_LIMIT_S)
    at.run()
    started = time.perf_counter()
    at.switch_page(f"views/{view}.py").run()
    first = None
    while True:
        now = time.perf_counter() - started
        if first is None and _shows_result(at):
            first = now
        busy = tasks.running()
        drawn = tasks.panels_drawn
        if not busy and first is not None:
            break
        if now > PAGE_LIMIT_S:
            for task in busy:
                task.cancel()
            return first or now, now, f"stopped after {PAGE_LIMIT_S:.0f} s"
        time.sleep(POLL_S)
        at.run()
        if tasks.panels_drawn == drawn and not tasks.running() and not _shows_result(at):
            first = time.perf_counter() - started  # a page that waits for the user
            break
    complete = time.perf_counter() - started
    errors = [e.value for e in at.error] + [str(e.value) for e in at.exception]
    note = ("error: " + errors[0][:80]) if errors else ("" if _shows_result(at) else "no result")
    return first, complete, note


def _restart() -> None:
    """What a restarted server has: the store, nothing in memory."""
    import streamlit as st

    from llamp.ui import stored, tasks

    st.cache_data.clear()
    st.cache_resource.clear()
    stored.forget()
    for task in tasks.running():
        task.cancel()
        task.wait(30)
    with tasks._LOCK:
        tasks._TASKS.clear()


def _cold(run: str) -> None:
    import streamlit as st

    from llamp.ui import store_access, stored, tasks

    st.cache_data.clear()
    st.cache_resource.clear()
    stored.forget()
    for task in tasks.running():
        task.cancel()
        task.wait(30)
    with tasks._LOCK:
        tasks._TASKS.clear()
    with store_access.connect(write=True) as db:
        for analysis in db.list_analyses(run):
            db.delete_analysis(analysis.id)


def run(quick: bool, repeat: int) -> list[dict[str, Any]]:
    from llamp.graphdb import open_store
    from llamp.ingest.synthetic import stencil_with_vertices
    from llamp.ui.navigation import PAGES

    n = 10**5 if quick else 10**6
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="llamp-bench-ui-") as home:
        old = {k: os.environ.get(k) for k in ("LLAMP_HOME", "LLAMP_STORE")}
        os.environ["LLAMP_HOME"] = home
        os.environ.pop("LLAMP_STORE", None)
        try:
            graph = stencil_with_vertices(n, ranks=16, alltoall_every=10)
            case = f"stencil {graph.num_vertices:,} vertices"
            with open_store(None) as db:
                db.put_run(graph, "stencil", progress=False)
            del graph
            for spec in PAGES:
                view = Path(spec.path).stem
                only = os.environ.get("LLAMP_BENCH_UI_PAGES", "")
                if view == "runs" or (only and view not in only.split(",")):
                    continue
                _cold("stencil")
                first, complete, note = _open(view)
                label = f"{view}: cold first result" + (f" ({note})" if note else "")
                rows.append(row("ui", case, label, first, "s"))
                rows.append(row("ui", case, f"{view}: cold complete", complete, "s"))
                opened = [_open(view) for _ in range(max(repeat, 1))]
                warm = [o[1] for o in opened]
                note = opened[-1][2] if not note else "cold run stopped: no result to reuse"
                label = f"{view}: warm" + (f" ({note})" if note else "")
                rows.append(row("ui", case, label, min(warm), "s", warm))
                _restart()
                first, complete, note = _open(view)
                label = "restarted: first result" + (f" ({note})" if note else "")
                rows.append(row("ui", case, f"{view}: {label}", first, "s"))
                rows.append(row("ui", case, f"{view}: restarted: complete", complete, "s"))
        finally:
            for key, value in old.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    rows.append(row("ui", "all", "peak RSS", peak_rss_mb(), "MB"))
    return rows
