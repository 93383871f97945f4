"""Controls shared by the pages: run and LogGPS parameters in the sidebar, readable errors,
CSV downloads.

Analysis pages call :func:`selection`, which renders the run picker and the LogGPS inputs in
the sidebar; their values are kept in the session so they survive switching pages.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from llamp import config
from llamp.errors import LlampError, ParameterError
from llamp.graph import ExecutionGraph
from llamp.params import LogGPS
from llamp.ui import display, store_access, stored, tasks
from llamp.ui.page_work import ParamKey, param_key
from llamp.ui.profile_picker import profile_picker

log = logging.getLogger("llamp.ui")

#: Sidebar parameter inputs: (session key, label, default text, help).
PARAM_INPUTS = (
    ("param_L", "L — latency", "3us", "Network latency per message, with a unit: 3us, 1500ns."),
    ("param_o", "o — CPU overhead", "1.5us", "CPU overhead per send/receive: 1.5us."),
    (
        "param_G",
        "G — gap per byte",
        "0.018ns/B",
        "Gap per byte (0.018ns/B, 18ps/B) or a bandwidth (56Gb/s).",
    ),
    (
        "param_S",
        "S — rendezvous threshold",
        "256KiB",
        "Messages larger than S bytes use the rendezvous protocol: 65536, 64KiB.",
    ),
    (
        "param_g",
        "g — gap per message",
        "0ns",
        "Minimum time between two messages a NIC injects (LogGP's g); used by the serial NIC.",
    ),
)

#: Model choices: (session key, label, options, default, help).
MODEL_INPUTS = (
    (
        "param_progress",
        "Receive progress",
        config.PROGRESS_MODELS,
        config.DEFAULT_PROGRESS,
        "async: a receive's overhead overlaps computation (a progress thread); wait: it is "
        "charged inside the MPI call that completes it (no asynchronous progress).",
    ),
    (
        "param_nic",
        "NIC model",
        config.NIC_MODELS,
        config.DEFAULT_NIC,
        "overlap: concurrent transfers overlap; serial: G is LogGP's gap, each NIC sends and "
        "receives one message after another.",
    ),
    (
        "param_order",
        "Resource order",
        config.ORDER_MODELS,
        config.DEFAULT_ORDER,
        "program: each CPU and NIC serves its operations by static rules over the program "
        "order; schedule: in the order of one event-driven pass at these parameters "
        "(LogGOPSim's schedule).",
    ),
    (
        "param_rendezvous",
        "Rendezvous protocol",
        config.RENDEZVOUS_MODELS,
        config.DEFAULT_RENDEZVOUS,
        "handshake: RTS, CTS, data (3 L per message larger than S), the RTS answered on "
        "arrival; polled: the same, answered only when the receiver is inside MPI, not "
        "computing; loggopsim: the data goes at once and the sender is "
        "released when the receiver matches it (L).",
    ),
)


@dataclass(frozen=True)
class Selection:
    """The run and parameters chosen in the sidebar."""

    name: str
    token: str
    params: LogGPS
    ranks: int = 0  # as the runs table says: known without loading the graph

    @property
    def run(self) -> str:
        """Cache key of the run (store location, name, identity)."""
        return store_access.cache_key(self.token)

    @property
    def key(self) -> ParamKey:
        return param_key(self.params)

    def graph(self) -> ExecutionGraph:
        with st.spinner(f"Loading run {self.name!r} from the store…"):
            return store_access.load_graph(self.name, self.token)


@contextmanager
def readable_errors(action: str) -> Iterator[None]:
    """Show an exception raised inside the block as an ``st.error``, never as a stack trace."""
    try:
        yield
    except LlampError as err:
        st.error(f"{action}: {_shown(err)}")
    except Exception as err:  # noqa: BLE001 - the page must stay usable
        log.exception("%s failed", config.redact(action))
        st.error(
            f"{action} failed: {type(err).__name__}: {_shown(err)} (an internal error: please "
            "report it with the server's log)"
        )


def _shown(err: BaseException) -> str:
    """An error as a person may see it: no password, no control characters, not too long."""
    from llamp.errors import quote

    return quote(config.redact(str(err)), limit=500)


def describe(params: LogGPS) -> str:
    """``L = 3 µs · o = 1.5 µs · G = 0.018 ns/B (444 Gb/s) · S = 262144 B · g = 0 ns ·
    progress async · NIC overlap · order schedule · rendezvous handshake`` (every choice, as
    the sidebar has them; the schedule order has no use for the progress model)."""
    bandwidth = f" ({8.0 / params.G:.4g} Gb/s)" if params.G > 0 else ""
    return (
        f"L = {config.format_ns(params.L)} · o = {config.format_ns(params.o)} · "
        f"G = {params.G:.6g} ns/B{bandwidth} · S = {params.S} B · g = "
        f"{config.format_ns(params.g)} · progress {params.progress} · NIC {params.nic} · "
        f"order {params.order} · rendezvous {params.rendezvous}"
    )


#: The URL query parameter of each sidebar input (``?run=…&L=3us&…``): a view is a link.
URL_KEYS = {
    "run": "run",
    "param_L": "L",
    "param_o": "o",
    "param_G": "G",
    "param_S": "S",
    "param_g": "g",
    "param_progress": "progress",
    "param_nic": "nic",
    "param_order": "order",
    "param_rendezvous": "rendezvous",
}


#: The sidebar inputs that hold a duration (a unit is required: "3" could be ns or µs).
DURATION_INPUTS = {"param_L": "L", "param_o": "o", "param_g": "g"}


def normalised(symbol: str, text: str) -> str:
    """A parameter's text as the sidebar shows it: ``L = "4999.909997161899ns"`` →
    ``"4.99991us"`` (six significant digits of its best unit; the value computed with is the
    value shown). A text that cannot be read is left as it is, for the sidebar to refuse."""
    if symbol not in ("L", "o", "g", "G"):
        return text
    try:
        if symbol == "G":
            return display.parameter("G", config.parse_gap_ns_per_byte(text))
        value = config.parse_duration_ns(text, default_unit=None)
    except LlampError:
        return text
    return display.parameter(symbol, value) if value >= 0 else text


def take_url() -> None:
    """Take the run and parameters a URL names (a bookmark, a shared link, a link from another
    view) as the inputs every page opens with, whichever page the URL opened; a value the URL
    held already is not taken again, so the sidebar stays editable. The app calls this on
    every run, before the page."""
    seen = st.session_state.setdefault("_url_seen", {})
    choices = {key: list(options) for key, _, options, _, _ in MODEL_INPUTS}
    for key, name in URL_KEYS.items():
        value = st.query_params.get(name)
        if value is None or value == seen.get(name):
            continue
        seen[name] = value
        if key in choices and value not in choices[key]:
            st.toast(
                f"The link's {name}={value[:40]!r} is not available here",
                icon=":material/link_off:",
            )
            continue
        _keep(key, normalised(name, value))
        st.session_state["_url_run"] = value if key == "run" else st.session_state.get("_url_run")
        for state in [k for k in st.session_state if str(k).startswith(f"{key}::")]:
            del st.session_state[state]  # each page's input opens on the link's value


def _from_url(names: list[str]) -> None:
    """:func:`take_url`, and a word if the run the URL names is not in the store."""
    take_url()
    wanted = st.session_state.pop("_url_run", None)
    if wanted is not None and wanted not in names:
        st.toast(f"The link's run={wanted[:40]!r} is not in this store", icon=":material/link_off:")


def _to_url(values: dict[str, str]) -> None:
    """Write the page's inputs into the URL (only those that changed)."""
    seen = st.session_state.setdefault("_url_seen", {})
    for key, value in values.items():
        name = URL_KEYS[key]
        if st.query_params.get(name) != value:
            st.query_params[name] = value
        seen[name] = value


#: URL parameters that point a page at one thing (an op, a rank pair); a link sets its own.
LINK_KEYS = ("focus", "pair")


def link_params(page: str, **extra: object) -> dict[str, str]:
    """The query parameters of a link to ``page`` (``critical_path``) showing the current run
    and parameters, changed by ``extra`` (``L="3000ns"``, ``focus=17``, ``pair="3,4"``)."""
    current = {k: v for k, v in st.query_params.to_dict().items() if k not in LINK_KEYS}
    return current | {"page": page} | {k: normalised(k, str(v)) for k, v in extra.items()}


def _kept(key: str, default: str) -> str:
    return st.session_state.setdefault(f"_keep_{key}", default)


def _keep(key: str, value: str) -> None:
    st.session_state[f"_keep_{key}"] = value


def set_model_choice(page: str, key: str, value: str) -> None:
    """Set the sidebar's model choice ``key`` (e.g. ``param_order``) on ``page`` and on the
    pages after it; call from a widget's callback (before the sidebar is drawn again)."""
    st.session_state[f"{key}::{page}"] = value
    _keep(key, value)


def _sidebar(page: str) -> Selection | None:
    """Run picker and LogGPS inputs in the sidebar; ``None`` (with a message) if unusable.

    Each page has its own widgets (``<name>::<page>``) initialised from a session copy of the
    last values, so a choice made on one page carries over to the next one.
    """
    with st.sidebar:
        st.caption(f"Store: {store_access.shown()}")
        st.markdown("**Run**")
        runs = None
        with readable_errors("Cannot read the graph store"):
            runs = store_access.list_runs()
        if runs is None:
            return None
        if runs.empty:
            st.info("The store holds no run yet: ingest a trace on the Runs page.")
            return None
        names = list(runs["name"])
        _from_url(names)
        kept = _kept("run", names[0])
        name = st.selectbox(
            "Run",
            names,
            index=names.index(kept) if kept in names else 0,
            key=f"run::{page}",
            label_visibility="collapsed",
        )
        _keep("run", name)
        st.markdown("**LogGPS parameters**")
        profile_picker(page)
        values = {}
        for key, label, default, help_text in PARAM_INPUTS:
            values[key] = st.text_input(
                label, _kept(key, default), key=f"{key}::{page}", help=help_text
            )
            _keep(key, values[key])
        for key, label, options, default, help_text in MODEL_INPUTS:
            kept = _kept(key, default)
            values[key] = st.selectbox(
                label,
                options,
                index=options.index(kept) if kept in options else 0,
                key=f"{key}::{page}",
                help=help_text,
            )
            _keep(key, values[key])
        try:
            for key, symbol in DURATION_INPUTS.items():
                try:
                    config.parse_duration_ns(values[key], default_unit=None)
                except LlampError as err:
                    raise ParameterError(f"{symbol}: {err}") from None
            params = LogGPS.parse(
                L=values["param_L"],
                o=values["param_o"],
                G=values["param_G"],
                S=values["param_S"],
                g=values["param_g"],
                progress=values["param_progress"],
                nic=values["param_nic"],
                order=values["param_order"],
                rendezvous=values["param_rendezvous"],
            )
        except LlampError as err:
            st.error(str(err))
            return None
        _to_url({"run": name} | values)
        st.caption(describe(params))
        row = runs.loc[runs["name"] == name]
        ranks = int(row.iloc[0]["ranks"]) if "ranks" in row.columns and len(row) else 0
        return Selection(name, store_access.run_token(runs, name), params, ranks)


def choose_run(name: str) -> None:
    """Make ``name`` the run the analysis pages open on (e.g. after ingesting it)."""
    _keep("run", name)


def choose_params(params: LogGPS) -> None:
    """Make ``params`` the LogGPS inputs the analysis pages open with (as the sidebar shows
    them: six significant digits in the best unit)."""
    _keep("param_L", display.parameter("L", params.L))
    _keep("param_o", display.parameter("o", params.o))
    _keep("param_G", display.parameter("G", params.G))
    _keep("param_S", display.parameter("S", params.S))


def selection(page: str) -> Selection:
    """Render the sidebar controls of ``page`` and return the chosen run and parameters; stops
    the page with a message if there is no run or a parameter cannot be read."""
    chosen = _sidebar(page)
    if chosen is None:
        st.info("Choose a run and valid LogGPS parameters in the sidebar.")
        st.stop()
    return chosen


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "run"


def csv_download(
    frame: pd.DataFrame, file_name: str, *, key: str, label: str = "Download CSV"
) -> None:
    """A download button for ``frame`` as CSV (all columns, no index)."""
    st.download_button(
        label,
        data=frame.to_csv(index=False).encode(),
        file_name=file_name,
        mime="text/csv",
        key=key,
        icon=":material/download:",
    )


def time_unit(max_ns: float) -> tuple[str, float]:
    """The unit (and its size in ns) that shows durations up to ``max_ns`` best."""
    return display.time_unit(max_ns)


def with_units(frame: pd.DataFrame, labels: dict[str, str] | None = None) -> pd.DataFrame:
    """``frame`` as a person reads it (:func:`llamp.ui.display.frame`): headers in words,
    durations, sizes and shares in the unit that suits each column, internal columns left
    out, ``—`` for a missing value and ``unbounded`` for an infinite one."""
    return display.frame(frame, labels)


#: Header endings of the columns :func:`table` shows in six significant digits.
_UNIT_HEADERS = ("(s)", "(ms)", "(µs)", "(ns)", "(B)", "(KiB)", "(MiB)", "(GiB)", "(%)", "(ns/B)")


def table(
    frame: pd.DataFrame,
    *,
    key: str,
    labels: dict[str, str] | None = None,
    kinds: dict[str, str] | None = None,
    **kwargs: Any,
) -> Any:
    """``st.dataframe`` of :func:`with_units` (``frame``), numbers with six significant
    digits."""
    shown = display.frame(frame, labels, kinds=kinds)
    config = {
        c: st.column_config.NumberColumn(c, format="%.6g")
        for c in shown.columns
        if c.endswith(_UNIT_HEADERS) and pd.api.types.is_numeric_dtype(shown[c])
    }
    return st.dataframe(
        shown,
        hide_index=True,
        key=key,
        column_config=config | kwargs.pop("column_config", {}),
        **kwargs,
    )


def background(
    sel: Selection,
    slot: str,
    label: str,
    compute: Callable[[ExecutionGraph, tasks.Task], Any],
    inputs: object = (),
    *,
    stored_as: str | None = None,
    shape: tuple[Callable[[Any], Any], Callable[[Any], Any]] | None = None,
    start: bool = True,
) -> Any:
    """``compute(graph, task)`` of the selected run in the background (:mod:`llamp.ui.tasks`),
    keyed on the run, the parameters and ``inputs``: its result, or ``None`` while it runs
    (the progress panel with Cancel is on the page). The graph is loaded in the background too.

    ``stored_as``: the result is kept as an Analysis node of that kind (:mod:`llamp.ui.stored`)
    keyed on the run's token, the parameters and ``inputs``, and a stored one is returned at
    once, without a task; the task is a job (:mod:`llamp.ui.tasks`): it runs on when the user
    leaves the page, and its result is stored. ``shape``: (what to store of a result, ``None`` for nothing; the
    result from what was stored), for a result holding live objects. ``start=False``: only
    a stored result or one of a task already started (a page that computes on a button)."""
    to_store, from_store = shape or (lambda r: r, lambda r: r)
    key = stored.page_key(sel.params, sel.token, inputs=inputs) if stored_as else {}
    if stored_as:
        found = stored.find(sel.run, sel.name, stored_as, key)
        if found is not None:
            return from_store(found)
    task_key = _task_key(sel, slot, inputs)
    if not start and tasks.get(task_key) is None:
        return None

    def work(task: tasks.Task) -> Any:
        task.report(None, f"loading run {sel.name!r}")
        graph = store_access.load_graph(sel.name, sel.token)
        task.report(None, "")
        result = compute(graph, task)
        kept = to_store(result) if stored_as else None
        if kept is not None:
            with task.steady():
                stored.save(sel.run, sel.name, stored_as, key, kept)
        return result

    return tasks.result(task_key, label, work, slot=slot, job=stored_as is not None)


def _task_key(sel: Selection, slot: str, inputs: object) -> str:
    return f"{slot}|{sel.run}|{sel.key}|{inputs!r}"


def started(sel: Selection, slot: str, inputs: object = ()) -> bool:
    """A :func:`background` task of ``slot`` and ``inputs`` exists for the selected run (running
    or ended in this process)."""
    return tasks.get(_task_key(sel, slot, inputs)) is not None


def background_each(
    sel: Selection,
    slot: str,
    label: str,
    compute: Callable[[ExecutionGraph, Any], Any],
    items: list[Any],
    *,
    stored_as: str,
    describe: Callable[[Any], str] = str,
) -> list[Any] | None:
    """``compute(graph, item)`` of the selected run for each of ``items`` (values naming
    every input of one piece of a page's work: a topology and its latencies), each result kept
    as an Analysis node of kind ``stored_as`` keyed on the run's token, the parameters and its
    item: the stored results at once, else those not stored yet computed in one background
    task (:func:`background`: progress per item, Cancel), so adding an item to a page computes
    only that one. Their results in the order of ``items``, an item whose work raised an
    error as that error (shown by the page, not stored), or ``None`` while the task runs."""
    keys = [stored.page_key(sel.params, sel.token, inputs=item) for item in items]
    found = [stored.find(sel.run, sel.name, stored_as, key) for key in keys]
    if all(f is not None for f in found):
        return found

    def work(graph: ExecutionGraph, task: tasks.Task) -> list[Any]:
        out = []
        for i, (item, key) in enumerate(zip(items, keys, strict=True)):
            result = stored.find(sel.run, sel.name, stored_as, key)
            if result is None:
                task.report(i / len(items), f"{describe(item)} ({i + 1}/{len(items)})")
                try:
                    result = compute(graph, item)
                except Exception as err:  # noqa: BLE001 - shown per item by the page
                    out.append(err)
                    continue
                with task.steady():
                    stored.save(sel.run, sel.name, stored_as, key, result)
            out.append(result)
        return out

    return background(sel, slot, label, work, tuple(items))


def levels(text: str) -> tuple[float, ...]:
    """Tolerance levels typed on a page (``"1, 2, 5"``, percentages) as sorted fractions, read
    as ``--x`` reads them (:func:`llamp.lp.registry.levels`)."""
    from llamp.lp.registry import levels as parse_levels

    return parse_levels(text, "tolerance levels")


def analysis(
    sel: Selection,
    name: str,
    label: str,
    settings: Any = None,
    inputs: Any = None,
    *,
    slot: str | None = None,
    identity: object = None,
    start: bool = True,
) -> Any:
    """Analysis ``name`` of the registry (:data:`llamp.lp.registry.ANALYSES`) on the selected
    run: the stored result at once, else computed in the background (:func:`background`, its
    progress reported to the page) and stored as an Analysis node of the entry's kind.
    ``settings`` default to the command line's; ``inputs`` (:class:`~llamp.lp.registry.Inputs`)
    to the sidebar's parameters; ``identity`` names inputs whose ``repr`` is not their
    identity (an uploaded topology: its source); ``start``: as :func:`background`'s."""
    import dataclasses

    from llamp.lp.registry import ANALYSES, Inputs

    entry = ANALYSES[name]
    settings = entry.default_settings() if settings is None else settings
    inputs = Inputs(sel.params) if inputs is None else inputs

    def compute(graph: ExecutionGraph, task: tasks.Task) -> Any:
        return entry.run(graph, dataclasses.replace(inputs, report=task.report), settings)

    key = identity if identity is not None else dataclasses.replace(inputs, report=None)
    return background(
        sel, slot or name, label, compute, (name, settings, key), stored_as=entry.kind, start=start
    )
