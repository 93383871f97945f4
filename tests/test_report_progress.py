"""The report's stage bar and its Ctrl-C exit (what a 10^8-vertex report relies on)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from llamp.progress import StepBar, ticking


def test_step_bar_names_each_step_on_stderr(capsys):
    with StepBar(3, "report", show=True) as bar:
        for name in ("predict", "critical", "path"):
            bar.step(name)
    err = capsys.readouterr().err
    assert "report: predict" in err and "report: critical" in err and "report: path" in err
    assert "2/3 steps" in err


def test_step_bar_off_draws_nothing(capsys):
    with StepBar(2, "report", show=False) as bar:
        bar.step("predict")
    assert capsys.readouterr().err == ""


def test_a_ticking_bar_is_redrawn_during_one_long_call():
    """The store's bar keeps its clock moving through a COPY that reports nothing."""
    import time

    class Bar:
        disable = False
        redraws = 0

        def refresh(self) -> None:
            self.redraws += 1

    bar = Bar()
    with ticking(bar, every_s=0.02):
        time.sleep(0.2)
    after = bar.redraws
    time.sleep(0.05)
    assert after >= 3 and bar.redraws == after  # redrawn during the call, not after it
    bar.disable = True
    with ticking(bar, every_s=0.02):
        time.sleep(0.06)
    assert bar.redraws == after


def test_interrupt_ends_the_report_at_once_with_one_line():
    # A worker still sweeping must not hold the exit (the tolerance searches run on threads).
    code = textwrap.dedent(
        """
        import threading, time
        from llamp.cli.analyze import _interrupt_exits
        threading.Thread(target=time.sleep, args=(60,)).start()
        with _interrupt_exits():
            raise KeyboardInterrupt
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stderr.strip() == "llamp: error: interrupted"
