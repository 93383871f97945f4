"""Diagnostics through one channel: ``llamp: KIND: text`` on a line of its own, names and
characters quoted as the user wrote them, no driver noise before llamp's own message."""

from __future__ import annotations

import pytest
from cli_process import llamp_measured

from llamp import messages
from llamp.errors import TraceError
from llamp.graphdb.locking import stderr_notify
from llamp.ingest.goal import parse_goal_text


def test_every_message_is_prefixed_and_one_line(capsys, monkeypatch):
    monkeypatch.setattr(messages, "_bars_off_terminal", False)
    messages.emit("warning", "two\nlines\x1b[31m")
    stderr_notify("the store is being written (checkpoint); reading as soon as it is free…")
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "llamp: warning: two lines\\x1b[31m"
    assert err[1].startswith("llamp: note: the store is being written (checkpoint)")


def test_after_a_bar_off_a_terminal_a_message_starts_a_fresh_line(capsys, monkeypatch):
    monkeypatch.setattr(messages, "_bars_off_terminal", False)
    messages.bars_shown(True)  # pytest's stderr is not a terminal
    messages.emit("error", "x")
    assert capsys.readouterr().err == "\nllamp: error: x\n"


def _goal_error(text: str) -> str:
    with pytest.raises(TraceError) as err:
        parse_goal_text(text)
    return str(err.value)


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("l1: calc 5 é".encode(), "non-ASCII character 'é'"),
        (b"l1: calc 5 \xe9x", "byte 0xE9 (not UTF-8 text)"),  # Latin-1 é: not the 'x' after it
        (b"l1: calc 5 \xff", "byte 0xFF (not UTF-8 text)"),
        ("l1: calc 5 — x".encode(), "non-ASCII character '—'"),
    ],
)
def test_goal_names_the_character_the_user_wrote(tmp_path, line, named):
    from llamp.ingest import read

    path = tmp_path / "x.goal"
    path.write_bytes(b"num_ranks 1\nrank 0 {\n" + line + b"\n}\n")
    with pytest.raises(TraceError) as err:
        read(path)
    assert str(err.value) == f"{path}:3: {named} outside a comment"


def test_matching_errors_quote_labels_as_written():
    text = (
        "num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\n}\nrank 1 {\nl1: recv 16b from 0 tag 0\n}\n"
    )
    message = _goal_error(text)
    assert "(label 'l1', rank 1)" in message and "np.str_" not in message


def test_an_unreachable_neo4j_server_is_one_line(tmp_path):
    result = llamp_measured("--store", "neo4j://localhost:1", "runs", home=tmp_path, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("llamp: error: cannot reach"), result.stderr


@pytest.mark.slow
def test_a_large_input_on_a_pipe_gets_no_bar_before_its_error(tmp_path):
    """Inputs ≥ 32 MB get bars by default only on a terminal: in a log, the error is the only
    line and starts with ``llamp:``."""
    path = tmp_path / "big.goal"
    body = "".join(f"l{i}: calc 5\n" for i in range(1, 2_600_000))
    path.write_text(f"num_ranks 1\nrank 0 {{\n{body}l0: calc -1\n}}\n")
    assert path.stat().st_size >= 32 << 20
    result = llamp_measured("ingest", str(path), "-o", str(tmp_path / "x.npz"), home=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("llamp: error: ")


def test_table_cells_cannot_break_lines_or_reach_the_terminal():
    """A value from a trace or the store (a GOAL label, a Cypher string) is printed with its
    control characters escaped: no escape sequence reaches the terminal, no row is split."""
    from llamp.config import format_table

    text = format_table([("l\x1b[2J1", "a\nb", "naïve")], ("label", "s\tt", "ok"))
    assert text.splitlines() == [
        "label      s\\tt  ok",
        "---------  ----  -----",
        "l\\x1b[2J1  a\\nb  naïve",
    ]
