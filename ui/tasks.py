"""Background work for the UI: one worker thread per task, progress, Cancel, and an end when
nobody watches any more.

A page asks for a result with :func:`start` (a key naming the computation — run, parameters,
analysis — a label, and a function of a :class:`Task`), then :func:`show` it: the finished
result, or a progress bar with the fraction done, the time left and a Cancel button, redrawn by an
``st.fragment(run_every=…)`` until the task ends, when the whole page reruns once with the
result. The page itself never blocks, so it answers while the work goes on.

Cancellation is cooperative: the work calls :meth:`Task.report` (directly or through the
``progress`` callback an :mod:`llamp.lp` function accepts), which raises :class:`Cancelled` once
the task is cancelled. Work that has no such hook (one long call into a numba kernel) is
interrupted by an asynchronous :class:`Cancelled` in its thread, which Python delivers at the
next bytecode after the kernel returns: the work stops between two passes over the graph.

A task is watched by the (session, page) pairs that show it: each redraw of its progress
fragment is a heartbeat. A plain task is cancelled when the last watcher leaves: the session
moves to another page (:func:`visit`), or no heartbeat came for :data:`IDLE_S` seconds (the tab
was closed, the browser went away). A **job** (``job=True``: work whose result is stored when it
ends, an analysis) outlives its page: leaving the page or closing the tab does not stop it, its
result is stored and shown on return and to every other session; only Cancel, or the same page
asking for other inputs, stops it. :func:`jobs` lists the running ones (the sidebar shows
them). Tasks are shared: two sessions asking for the same key watch one computation. Finished
tasks are kept (at most :data:`KEEP` of them) so a rerun finds them.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

log = logging.getLogger("llamp.ui")

#: Seconds without a heartbeat from any watcher after which a running task is cancelled.
IDLE_S = float(os.environ.get("LLAMP_UI_TASK_IDLE_S", "20"))
#: Seconds after which a cancelled task still running is interrupted again (Task._interrupt).
INTERRUPT_AGAIN_S = 3.0
#: Seconds between two redraws of a progress panel (each one is a heartbeat).
POLL_S = 0.5
#: Finished tasks kept for the pages to pick up (the oldest go first).
KEEP = 16

RUNNING, DONE, FAILED, CANCELLED = "running", "done", "failed", "cancelled"


class Cancelled(BaseException):  # noqa: N818 - a signal, as KeyboardInterrupt, not an error
    """Raised inside a task's work when it was cancelled (a ``BaseException``, so an ``except
    Exception`` in the work does not swallow it)."""


@dataclass(eq=False)
class Task:
    """One computation in its worker thread: state, progress and result."""

    key: str
    label: str
    work: Callable[[Task], Any] = field(repr=False)
    state: str = RUNNING
    fraction: float | None = None
    text: str = ""
    result: Any = field(default=None, repr=False)
    error: BaseException | None = field(default=None, repr=False)
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    #: Interrupt the thread asynchronously on cancel (no cooperative hook in a long step).
    interruptible: bool = True
    #: Runs on when nobody watches (its result is stored): module doc.
    job: bool = False
    watchers: dict[tuple[str, str], float] = field(default_factory=dict, repr=False)
    #: The session whose Cancel button stopped it (``None``: stopped because nobody watched).
    cancelled_by: str | None = None
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _interrupted: float = field(default=0.0, repr=False)  # when Cancelled was last sent
    _thread: threading.Thread | None = field(default=None, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # ------------------------------------------------------------------ inside the work
    def report(self, fraction: float | None = None, text: str | None = None) -> None:
        """Progress: ``fraction`` done (0–1, ``None``: unknown) and what is being done; raises
        :class:`Cancelled` if the task was cancelled."""
        if self._cancel.is_set():
            raise Cancelled(self.key)
        if fraction is not None:
            self.fraction = min(max(float(fraction), 0.0), 1.0)
        if text is not None:
            self.text = text

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def steady(self) -> _Steady:
        """A block the asynchronous interrupt must not cut (e.g. a write to the store)."""
        return _Steady(self)

    # ------------------------------------------------------------------ outside
    @property
    def elapsed_s(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    @property
    def left_s(self) -> float | None:
        """Seconds left, extrapolated from the fraction done so far (``None``: unknown)."""
        f = self.fraction
        if self.state != RUNNING or f is None or f <= 0.0:
            return None
        return self.elapsed_s * (1.0 - f) / f

    def cancel(self) -> None:
        """Stop the work: at its next :meth:`report`, or (``interruptible``) at the next Python
        bytecode it runs."""
        if self.state != RUNNING or self._cancel.is_set():
            return
        self._cancel.set()
        self.text = "Cancelling…"
        self._interrupt()

    def _interrupt(self) -> None:
        """Raise :class:`Cancelled` asynchronously in the work's thread (``interruptible``
        only; never inside a :class:`_Steady` section nor once the work has returned). Python
        may lose it: raised inside a finalizer (e.g. one of numba's compiler objects that the
        garbage collector runs on this thread) it is printed and ignored, so the reaper sends
        it again, every :data:`INTERRUPT_AGAIN_S`, while a cancelled task still runs (not at
        once: the work is then most likely unwinding from the first one)."""
        if not self.interruptible:
            return
        self._interrupted = time.monotonic()
        with self._guard:
            thread = self._thread
            if thread is not None and thread.ident is not None and thread.is_alive():
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(thread.ident), ctypes.py_object(Cancelled)
                )

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the task ended (tests, benchmarks); ``True`` if it did."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.state != RUNNING

    def _run(self) -> None:
        try:
            try:
                value = self.work(self)
            finally:
                with self._guard:  # no asynchronous interrupt from here on
                    self._thread = None
            self.result, self.state, self.fraction = value, DONE, 1.0
        except Cancelled:
            self.state, self.text = CANCELLED, "Cancelled"
        except BaseException as err:  # noqa: BLE001 - reported on the page
            if self._cancel.is_set():
                self.state, self.text = CANCELLED, "Cancelled"
            else:
                log.info("task %s failed: %s", self.label, err)
                self.error, self.state = err, FAILED
        finally:
            self.ended = time.monotonic()
            self.watchers.clear()


class _Steady:
    def __init__(self, task: Task):
        self.task = task

    def __enter__(self) -> None:
        self.task._guard.acquire()
        if self.task._cancel.is_set():
            self.task._guard.release()
            raise Cancelled(self.task.key)

    def __exit__(self, *exc) -> None:
        self.task._guard.release()


_TASKS: dict[str, Task] = {}
_LOCK = threading.Lock()
#: Progress panels drawn so far in this process (a test reruns a page until it draws none).
panels_drawn = 0
_REAPER: threading.Thread | None = None


def _reap_forever() -> None:
    while True:
        time.sleep(1.0)
        now = time.monotonic()
        with _LOCK:
            running = [t for t in _TASKS.values() if t.state == RUNNING]
        for task in running:
            if task.cancelled:
                if now - task._interrupted >= INTERRUPT_AGAIN_S:
                    task._interrupt()  # the last one may have been lost (Task._interrupt)
                continue
            last = max(task.watchers.values(), default=task.started)
            if not task.job and now - last > IDLE_S:
                log.info("cancelling %s: nobody watched it for %.0f s", task.label, now - last)
                task.cancel()


def _ensure_reaper() -> None:
    global _REAPER
    if _REAPER is None or not _REAPER.is_alive():
        _REAPER = threading.Thread(target=_reap_forever, name="llamp-ui-reaper", daemon=True)
        _REAPER.start()


def _session() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "-"


def _page() -> str:
    try:
        return str(st.session_state.get("_llamp_page", ""))
    except Exception:  # noqa: BLE001 - outside a Streamlit session (a script, a benchmark)
        return ""


def get(key: str) -> Task | None:
    with _LOCK:
        return _TASKS.get(key)


def start(
    key: str,
    label: str,
    work: Callable[[Task], Any],
    *,
    slot: str | None = None,
    interruptible: bool = True,
    job: bool = False,
) -> Task:
    """The task computing ``key``: the running or finished one, or a new one running
    ``work(task)`` in its own thread. A failed task, or one this session cancelled, is not
    restarted here (see :func:`restart`), so a page does not loop on an error; a task stopped
    because nobody watched it runs again for whoever asks next.

    ``slot`` names the place on the page that shows the task: when the page's inputs change and
    the slot asks for another task, this session stops watching the previous one (which is
    cancelled if nobody else watches it). ``job``: it runs on when its watchers leave (module
    doc)."""
    session = _session()
    with _LOCK:
        task = _TASKS.get(key)
        if task is not None and task.state == CANCELLED and task.cancelled_by != session:
            task = None  # stopped because its watchers left, or by someone else: run it again
        if task is None:
            task = Task(key, label, work, interruptible=interruptible, job=job)
            _TASKS[key] = task
            thread = threading.Thread(target=task._run, name=f"llamp-task-{label}", daemon=True)
            task._thread = thread
            thread.start()
            ended = [k for k, t in _TASKS.items() if t.state != RUNNING]
            for old in ended[: max(0, len(ended) - KEEP)]:
                del _TASKS[old]
    _ensure_reaper()
    if slot is not None:
        slots = st.session_state.setdefault("_llamp_task_slots", {})
        before = get(slots.get(slot, key))
        slots[slot] = key
        if before is not None and before is not task:
            _unwatch(before)
    watch(task)
    return task


def _unwatch(task: Task) -> None:
    session = _session()
    gone = [w for w in list(task.watchers) if w[0] == session]
    for w in gone:
        task.watchers.pop(w, None)
    if gone and not task.watchers:
        log.info("cancelling %s: its inputs changed", task.label)
        task.cancel()


def restart(key: str) -> None:
    """Forget the ended task ``key`` so the next :func:`start` runs it again."""
    with _LOCK:
        task = _TASKS.get(key)
        if task is not None and task.state != RUNNING:
            del _TASKS[key]


def watch(task: Task) -> None:
    """A heartbeat from this session and page for ``task``."""
    if task.state == RUNNING:
        task.watchers[(_session(), _page())] = time.monotonic()


def visit(page: str) -> None:
    """This session now shows ``page``: it stops watching the tasks of its other pages, and a
    task nobody else watches is cancelled (a job runs on)."""
    st.session_state["_llamp_page"] = page
    session = _session()
    with _LOCK:
        running = [t for t in _TASKS.values() if t.state == RUNNING]
    for task in running:
        gone = [w for w in list(task.watchers) if w[0] == session and w[1] != page]
        for w in gone:
            task.watchers.pop(w, None)
        if gone and not task.watchers and not task.job:
            log.info("cancelling %s: its page was left", task.label)
            task.cancel()


def running() -> list[Task]:
    with _LOCK:
        return [t for t in _TASKS.values() if t.state == RUNNING]


def jobs() -> list[Task]:
    """The jobs still running, the oldest first."""
    return sorted((t for t in running() if t.job), key=lambda t: t.started)


def describe(task: Task) -> str:
    """``"Finding critical latencies: 1,204 evaluations · 42 % · about 12 s left"``."""
    parts = [task.label + (f": {task.text}" if task.text else "")]
    if task.fraction is not None:
        parts.append(f"{task.fraction:.0%}")
    left = task.left_s
    parts.append(
        f"about {_seconds(left)} left" if left is not None else f"{_seconds(task.elapsed_s)} so far"
    )
    return " · ".join(parts)


def _seconds(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    return f"{s / 60:.0f} min"


def result(
    key: str, label: str, work: Callable[[Task], Any], *, slot: str, job: bool = False
) -> Any:
    """:func:`start` then :func:`show`: the result, or ``None`` while the work runs."""
    return show(start(key, label, work, slot=slot, job=job), key=slot)


def show(task: Task, *, key: str) -> Any:
    """The result of ``task`` if it finished; otherwise its progress panel (with Cancel) and
    ``None``. A failed task's error is raised again (show it with ``readable_errors``); a
    cancelled one offers to run again."""
    if task.state == DONE:
        return task.result
    if task.state == FAILED:
        assert task.error is not None
        raise task.error
    if task.state == CANCELLED:
        with st.container(key=f"task-cancelled-{key}"):
            st.info(f"{task.label}: cancelled after {_seconds(task.elapsed_s)}.")
            if st.button("Run again", key=f"task-again-{key}", icon=":material/replay:"):
                restart(task.key)
                st.rerun()
        return None
    global panels_drawn
    panels_drawn += 1
    _panel(task, key)
    return None


@st.fragment(run_every=POLL_S)
def _panel(task: Task, key: str) -> None:
    if task.state != RUNNING:
        st.rerun(scope="app")
    watch(task)
    with st.container(key=f"task-{key}"):
        st.progress(task.fraction or 0.0, text=describe(task))
        # A callback, not the button's return value: it runs once, before the fragment's body,
        # even when a timed redraw of the panel coalesces with the click.
        st.button(
            "Cancel",
            key=f"task-cancel-{key}",
            icon=":material/cancel:",
            on_click=_cancel_from,
            args=(task, _session()),
            disabled=task.cancelled,
        )


def _cancel_from(task: Task, session: str) -> None:
    """The Cancel button: stop ``task`` on behalf of ``session`` (which then sees it cancelled,
    not restarted). The panel redraws until the work has stopped, then the page reruns."""
    task.cancelled_by = session
    task.cancel()
