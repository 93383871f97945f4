"""Progress on stderr for work made of a few long steps (lowering a graph, the stages of a
report): one tqdm bar naming the current step, redrawn every second by a timer thread so its
clock keeps moving through a step that reports nothing itself (a 10^8-vertex lowering step
takes tens of seconds)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def on_terminal() -> bool:
    """stderr is a terminal: where bars shown by default go (``--json`` and pipes get none)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class StepBar:
    """``total`` named steps; :meth:`step` starts the next one. ``show``: True, False, or None
    (only when stderr is a terminal, :func:`on_terminal`)."""

    REDRAW_S = 1.0

    def __init__(self, total: int, desc: str, *, show: bool | None = True):
        self.bar: Any = None
        self.started = False
        self._stop = threading.Event()
        if show is None:
            show = on_terminal()
        if not show:
            return
        from tqdm import tqdm

        self.bar = tqdm(
            total=total,
            desc=desc,
            unit="step",
            leave=False,
            bar_format="{desc}: {n_fmt}/{total_fmt} steps [{elapsed}]",
        )
        self._desc = desc
        self._timer = threading.Thread(target=self._redraw, daemon=True)
        self._timer.start()

    def _redraw(self) -> None:
        while not self._stop.wait(self.REDRAW_S):
            bar = self.bar
            if bar is not None:
                bar.refresh()

    def step(self, name: str) -> None:
        """Begin step ``name`` (the previous one is done)."""
        if self.bar is None:
            return
        if self.started:
            self.bar.update(1)
        self.started = True
        self.bar.set_description_str(f"{self._desc}: {name}")

    def close(self) -> None:
        self._stop.set()
        if self.bar is not None:
            bar, self.bar = self.bar, None
            bar.close()

    def __enter__(self) -> StepBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def ticking(bar: Any, every_s: float = StepBar.REDRAW_S) -> Iterator[Any]:
    """Redraw the tqdm ``bar`` every ``every_s`` seconds while the block runs, so its clock
    keeps moving through one long call that reports nothing (a ``COPY`` of 10^8 rows)."""
    if getattr(bar, "disable", True):
        yield bar
        return
    stop = threading.Event()

    def redraw() -> None:
        while not stop.wait(every_s):
            bar.refresh()

    timer = threading.Thread(target=redraw, daemon=True)
    timer.start()
    try:
        yield bar
    finally:
        stop.set()
        timer.join()
