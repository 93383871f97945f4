"""GOAL schedules (Schedgen output, LogGOPSim input): read into and write from an ExecutionGraph.

GOAL (Hoefler et al., "Group Operation Assembly Language", the LogGOPSim toolchain) lists, per
rank, the operations ``send``/``recv``/``calc`` and the dependencies between them::

    num_ranks 2
    rank 0 {
    l1: send 4b to 1 tag 1
    l2: calc 1000
    l1 requires l2          // l1 starts after l2 finishes
    }
    rank 1 { ... }

Each op becomes one vertex; ``A requires B`` becomes a ``requires`` edge B → A (A starts after B
finishes), ``A irequires B`` an ``irequires`` edge B → A (A starts after B starts); messages become
``message`` edges send → recv. Calc costs are nanoseconds (LogGOPSim's time unit). The vertices of
a rank keep the file order (Schedgen writes the gap calc *after* the op it precedes, so file order
is not time order; the graph model allows that). The GOAL labels go to ``graph.label``.

Grammar accepted (LogGOPSim's ``txt2bin`` grammar, read the same way; a little wider where noted,
and stricter where ``txt2bin`` is silent: duplicate labels, block order, a statement after the
``{`` of a block header):

- ``num_ranks <P>`` once, before the first block; then ``rank <r> {`` … ``}`` for every rank
  ``0..P−1`` in order (``rank <r> { }`` on one line is an empty block). One statement per line.
- ``<label>: send <bytes>b to <dst> [tag <t>] [cpu <c>] [nic <n>]``,
  ``<label>: recv <bytes>b from <src> [tag <t>] [cpu <c>] [nic <n>]``,
  ``<label>: calc <ns> [cpu <c>]``, ``<A> requires <B>``, ``<A> irequires <B>``. The optional
  parts come in the order tag, cpu, nic; ``4 b`` is read like ``4b``; the tag defaults to 0.
- Labels ``[a-zA-Z][a-zA-Z0-9_]*``, unique within a rank, not one of LogGOPSim's statement
  keywords (``send recv calc rank num_ranks``); a dependency may only name labels defined on
  earlier lines of the same block. An op without ``<label>:`` is accepted (as by ``txt2bin``)
  and gets the empty label; it cannot be named by a dependency.
- ``//`` line comments and ``/* … */`` block comments (spanning lines) anywhere, also after a
  statement (``txt2bin`` only allows them where a statement starts).
- Numbers are decimal digits. ``calc`` also accepts a decimal fraction or exponent (``1.5``,
  ``1e-05``), which ``txt2bin`` does not; :func:`write_goal` writes integers only (see Writing).
- ``-1`` as a recv source or a recv tag is a wildcard (``MPI_ANY_SOURCE``/``MPI_ANY_TAG``); a
  send's destination and tag must be explicit.

Message matching (static; the graph holds no wildcards):

1. Exact: a send ``r → d`` with tag ``t`` matches a recv at ``d`` from ``r`` with tag ``t``, FIFO
   in file order per ``(r, d, t)`` (MPI's non-overtaking rule, applied statically).
2. Wildcard recvs, after all exact matches, one at a time in file order: each takes the remaining
   unmatched send to its rank that fits (same source if given, same tag if given, same size) and
   comes first by (position in the sender's block, sender rank). The resolved source and tag are
   stored in the recv's ``peer``/``tag``; ``meta["wildcards_resolved"]`` counts them.
3. A matched pair of different sizes, or a send/recv left unmatched, is an error naming
   ``file:line``. With ``lenient=True`` it is a warning and the op becomes a zero-cost calc (its
   dependencies stay).

``cpu <c>``/``nic <n>`` are LogGOPSim's multi-CPU/NIC annotations (a rank runs several CPU
streams and owns several NICs; LogGOPSim counts them from the largest number in the file). They
fill the graph's ``cpu`` and ``nic`` vertex columns (``None`` when a file has none; a calc has no
NIC, its ``nic`` is 0), which the cost model reads as the CPU stream and the NIC an op runs
on. Numbers above 255 are refused: ``txt2bin`` stores them in 8 bits.

``lenient=True`` turns per-line problems into one warning with a count (the first 100 are kept
in ``meta["warnings"]``): a line with an unknown operation, a malformed op or a bad number is
skipped; a dependency naming an unknown label is skipped; a duplicate label keeps the op but the
label stays with its first definition (as in ``txt2bin``); an invalid label is kept; a message op
with a peer outside ``0..P−1``, a size mismatch or no partner becomes a zero-cost calc. The file's
structure (``num_ranks``, blocks, comments, encoding) is never guessed at: those errors are raised
in both modes.

Writing: one block per rank, the ops in vertex order, each dependency right after the later of its
two ops (so Schedgen's files come back line for line), tags always written, ``cpu``/``nic`` written
where either is non-zero. The graph's labels are reused when every one is a valid GOAL label
unique within its rank, otherwise ops are labelled ``l1, l2, …`` per rank. Calc costs are written
as integers, because ``txt2bin`` reads nothing else: a non-integral cost is rounded to the nearest
integer, ties to even (``numpy.rint``), and :class:`GoalWritten` reports how many were rounded and
the total and largest absolute change. ``T`` is the longest path of the event graph and a path
passes each calc at most once, so for any parameters the written graph's ``T`` differs from the
graph's by at most the total (``rounding_total_ns``); a cost of 2^64 ns or more cannot be written.
A graph with integral costs written and read back is identical (:meth:`ExecutionGraph.equals`,
peers, tags, cpu and nic included); the exact format for any graph is ``.npz``. GOAL has no message edges, only FIFO matching, so a graph whose messages
are not FIFO per (source, destination, tag) — e.g. two communicators reusing a tag — cannot be
written and raises :class:`~llamp.errors.GraphError`.

Reading streams: the file is read in chunks of 32 MB, each tokenised by the compiled tokenizer
of :mod:`llamp.ingest.goal_tokenizer` (bytes in, typed columns out: one pass, no Python object
per line), and only the columns are kept, in their narrowest integer types, so memory follows
the graph, not the text. Python handles the few structural lines (``num_ranks``, block headers
and ends) and re-reads a malformed line to say what is wrong with it, so the grammar and the
messages above are one. ``progress=True`` shows bytes read, % and rate on stderr (tqdm);
Ctrl-C stops it cleanly. Labels ``l<k>`` with ``k`` an op's position in its block (what
:func:`write_goal` writes when it numbers ops) are read by number and, above 2^22 ops, not
stored (``graph.label`` is ``None``, ``meta["goal_labels"]`` says so): :func:`write_goal` numbers
the ops the same way, so the file comes back byte for byte. Measured
(``benchmarks/bench_goal.py``, the 10^6-vertex stencil, 70 MB): 0.5–0.6 s to a validated graph
on a quiet machine, against 4.7 s for the former per-line Python scanner and 0.8 s for
LogGOPSim's ``txt2bin`` as a whole process.
"""

from __future__ import annotations

import io
import os
import re
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from llamp.errors import GraphError, TraceError
from llamp.graph import CALC, COLL, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.ingest import goal_tokenizer as tok

__all__ = ["GoalWritten", "fifo_match", "parse_goal_text", "read_goal", "write_goal"]

_STATEMENT_KEYWORDS = frozenset({"send", "recv", "calc", "rank", "num_ranks"})
_RANK_RE = re.compile(r"\s*rank\s*(\S+?)\s*\{\s*(\}?)\s*")
_LABEL_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_BAD_LABEL_START_RE = re.compile(r"\x00[0-9_]")
_COST_RE = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_CHUNK_CHARS = (
    32 << 20
)  # bytes read and tokenised at a time (memory follows the graph, not the text)
_MAX_LINE_BYTES = 1 << 26  # a longer line is damage, not GOAL
#: Above this many vertices, labels that are all ``l<k>`` (k: the op's position in its block, as
#: write_goal numbers ops) are not stored: they say nothing the position does not, and as text
#: they would cost 4 bytes per character per op (3 GB at 10^8 ops).
_CANONICAL_LABELS_KEPT = 1 << 22
_MAX_WARNINGS_KEPT = 100
_INT64_MAX = np.iinfo(np.int64).max
_MAX_STREAM = 255  # txt2bin keeps cpu and nic numbers in a uint8


def _non_ascii(raw: bytes) -> str:
    """The character that starts ``raw`` as the user typed it (UTF-8), or its byte when it is
    not UTF-8 (a Latin-1 ``é`` is byte 0xE9, never the character after it)."""
    for end in range(1, len(raw) + 1):
        try:
            return f"non-ASCII character {raw[:end].decode('utf-8')!r}"
        except UnicodeDecodeError:
            continue
    return f"byte 0x{raw[0]:02X} (not UTF-8 text)"


class _LineProblem(Exception):
    """A problem confined to one line: an error, or a skipped line in lenient mode."""


# --------------------------------------------------------------------------- reading


def read_goal(
    path: str | os.PathLike[str], *, lenient: bool = False, progress: bool = False
) -> ExecutionGraph:
    """Read a GOAL schedule into a validated :class:`ExecutionGraph`.

    The file is read in chunks of :data:`_CHUNK_CHARS` bytes and only typed columns are kept,
    so memory follows the graph, not the text. ``progress`` shows bytes read, % and rate on
    stderr (tqdm). Raises :class:`~llamp.errors.TraceError` (``file:line: reason``) on malformed
    input; see the module docstring for the grammar, the message matching and what ``lenient``
    relaxes.
    """
    path = Path(path)
    _return_freed_memory()
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed below, also on Ctrl-C
    except OSError as err:
        raise TraceError(f"cannot read GOAL file ({err.strerror or err})", path=str(path)) from err
    with stream:
        total = os.fstat(stream.fileno()).st_size
        reader = _Reader(str(path), lenient)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=total, unit="B", unit_scale=True, desc="reading GOAL", leave=False)
        try:
            reader.read(stream, bar)
        finally:
            if bar is not None:
                bar.close()
    graph = reader.finish(progress)
    graph.meta["name"] = path.stem
    graph.meta["files"] = [str(path)]
    return graph


def parse_goal_text(text: str, *, name: str = "<string>", lenient: bool = False) -> ExecutionGraph:
    """Parse GOAL text; ``name`` is the file name used in error messages and ``meta``."""
    data = text.encode("utf-8", "surrogatepass")  # non-ASCII is refused where it matters
    reader = _Reader(name, lenient)
    reader.read(io.BytesIO(data), None)
    return reader.finish()


def _word_table() -> tuple[np.ndarray, np.ndarray]:
    """The grammar's words (in the tokenizer's order) as rows of a uint8 matrix and lengths."""
    out = np.zeros((len(tok.WORDS), 16), np.uint8)
    for i, w in enumerate(tok.WORDS):
        out[i, : len(w)] = np.frombuffer(w.encode(), np.uint8)
    return out, np.array([len(w) for w in tok.WORDS], np.int64)


def _keyword_table() -> np.ndarray:
    words = sorted(_STATEMENT_KEYWORDS)
    out = np.zeros((len(words), 16), np.int64)
    for i, w in enumerate(words):
        out[i, 0] = len(w)
        out[i, 1 : 1 + len(w)] = np.frombuffer(w.encode(), np.uint8)
    return out


class _Reader:
    """Streaming GOAL reader: the compiled tokenizer per chunk, Python for the rare lines.

    Structure (``num_ranks``, block headers and ends) and every problem are handled here with
    the messages of the grammar; the tokenizer's state lives in ``self.st`` and the label table
    arrays.
    """

    def __init__(self, name: str, lenient: bool):
        self.name = name
        self.lenient = lenient
        self.num_ranks: int | None = None
        self.num_ranks_line = 0
        self.block_line = 0
        self.rank_counts: list[int] = []
        self.problems: list[tuple[int, str]] = []
        self.num_problems = 0
        self.inexact: list[tuple[int, str]] = []  # (vertex, calc cost) a float64 rounds
        self.last_line = 0
        self.st = np.zeros(tok.S_SIZE, np.int64)
        self.st[tok.S_RANK] = -1
        self.st[tok.S_LINE] = 1
        self.st[tok.S_CANON] = 1
        self.st[tok.S_CANON_UPTO] = -1
        self.st[tok.S_PEERMAX] = -1
        self.gen = 0
        self.words, self.word_len = _word_table()
        self.out: dict[str, np.ndarray] = {}
        self.keywords = _keyword_table()
        self.ht_gen = np.full(1 << 10, -1, np.int64)
        self.ht_hash = np.zeros(1 << 10, np.uint64)
        self.ht_vid = np.zeros(1 << 10, np.int64)
        self.arena = np.zeros(1 << 12, np.uint8)
        self.ar_off = np.zeros(1 << 10, np.int64)
        self.lb = np.zeros(0, np.uint8)
        self.chunks: dict[str, list[np.ndarray]] = {
            k: []
            for k in (
                "kind",
                "size",
                "peer",
                "tag",
                "cost",
                "vline",
                "src",
                "dst",
                "ekind",
                "cn_vid",
                "cn_cpu",
                "cn_nic",
                "bad",
                "clab",
                "clab_off",
            )
        }

    # ----------------------------------------------------------------- errors
    def _problem(self, lineno: int, reason: str) -> None:
        """Raise, or (lenient) record a skipped line."""
        if not self.lenient:
            raise TraceError(reason, path=self.name, line=lineno)
        self.num_problems += 1
        if len(self.problems) < _MAX_WARNINGS_KEPT:
            self.problems.append((lineno, reason))

    def _fatal(self, lineno: int, reason: str) -> TraceError:
        return TraceError(reason, path=self.name, line=lineno)

    # ----------------------------------------------------------------- chunks
    def read(self, stream: Any, bar: Any) -> None:
        """Tokenise ``stream`` chunk by chunk (complete lines only; the rest carries over)."""
        buf = np.empty(max(_CHUNK_CHARS, 1), np.uint8)
        carry = 0
        newlines = 0
        last = 10
        while True:
            got = stream.readinto(memoryview(buf)[carry:]) or 0
            end = carry + got
            eof = got == 0
            if got:
                last = int(buf[end - 1])
            cut = end if eof else _after_last_newline(buf, end)
            if cut == 0 and not eof:
                if end >= _MAX_LINE_BYTES:
                    raise self._fatal(
                        int(self.st[tok.S_LINE]),
                        f"line is more than {_MAX_LINE_BYTES >> 20} MiB long: not GOAL, or damaged",
                    )
                grown = np.empty(2 * buf.size, np.uint8)  # a line longer than the chunk
                grown[:end] = buf[:end]
                buf, carry = grown, end
                continue
            chunk = buf[:cut]
            lines = int(np.count_nonzero(chunk == 10))
            newlines += lines
            self._scan(chunk, lines + 1)
            if bar is not None:
                bar.update(cut)
            if eof:
                break
            rest = end - cut
            buf[:rest] = buf[cut:end]
            carry = rest
        self.last_line = newlines + (0 if last == 10 else 1)
        self.out = {}  # the last chunk's work arrays
        self.lb = np.zeros(0, np.uint8)
        if self.st[tok.S_INCOM]:
            raise self._fatal(
                int(self.st[tok.S_COMLINE]), "unterminated /* comment (no closing */)"
            )

    def _scan(self, chunk: np.ndarray, lines: int) -> None:
        """Run the tokenizer over the ``lines`` (at most) lines of one chunk; act on its events."""
        st = self.st
        if self.lb.size < chunk.size + 1:
            self.lb = np.zeros(chunk.size + 1, np.uint8)
        out = {
            "kind": np.empty(lines, np.int8),
            "size": np.empty(lines, np.int64),
            "peer": np.empty(lines, np.int64),
            "tag": np.empty(lines, np.int64),
            "cost": np.empty(lines, np.float64),
            "vline": np.empty(lines, np.int64),
            "cn_vid": np.empty(lines, np.int64),
            "cn_cpu": np.empty(lines, np.int16),
            "cn_nic": np.empty(lines, np.int16),
            "slow_vid": np.empty(lines, np.int64),
            "slow_s": np.empty(lines, np.int64),
            "slow_e": np.empty(lines, np.int64),
            "slow_text": np.empty(chunk.size, np.uint8),
            "bad": np.empty(lines, np.int64),
            "clab_off": np.zeros(lines + 1, np.int64),
            "clab": np.empty(chunk.size, np.uint8),
            "src": np.empty(lines, np.int64),
            "dst": np.empty(lines, np.int64),
            "ekind": np.empty(lines, np.int8),
        }
        for slot in (tok.S_POS, tok.S_NVC, tok.S_NE, tok.S_NSLOW, tok.S_NCN, tok.S_NBAD):
            st[slot] = 0
        st[tok.S_NLAB] = 0
        self.out = out
        while True:
            event = tok.scan_chunk(
                chunk,
                st,
                self.lb,
                tok.WHITESPACE,
                self.words,
                self.word_len,
                self.keywords,
                tok.POW10,
                out["kind"],
                out["size"],
                out["peer"],
                out["tag"],
                out["cost"],
                out["vline"],
                out["cn_vid"],
                out["cn_cpu"],
                out["cn_nic"],
                out["slow_vid"],
                out["slow_s"],
                out["slow_e"],
                out["slow_text"],
                out["bad"],
                out["clab_off"],
                out["clab"],
                out["src"],
                out["dst"],
                out["ekind"],
                self.ht_gen,
                self.ht_hash,
                self.ht_vid,
                self.gen,
                self.arena,
                self.ar_off,
                CALC,
                SEND,
                RECV,
                REQUIRES,
                IREQUIRES,
            )
            if event == tok.EV_DONE:
                break
            self._event(event, chunk)
        nvc, ne = int(st[tok.S_NVC]), int(st[tok.S_NE])
        cost = out["cost"][:nvc]
        ns = int(st[tok.S_NSLOW])
        if ns:  # costs the tokenizer could not convert exactly: Python's float()
            text = out["slow_text"]
            before = sum(part.size for part in self.chunks["cost"])
            for i in range(ns):
                a, b = int(out["slow_s"][i]), int(out["slow_e"][i])
                token = bytes(text[a:b])
                value = float(token)
                cost[int(out["slow_vid"][i])] = value
                if token.isdigit() and int(token) != value:  # an integer a float64 would round
                    self.inexact.append((before + int(out["slow_vid"][i]), token.decode()))
        c = self.chunks
        c["kind"].append(out["kind"][:nvc].copy())
        c["cost"].append(cost.copy())
        # kept narrow where the values allow (a wider chunk widens the whole column)
        for key in ("size", "peer", "tag"):
            c[key].append(_narrow(out[key][:nvc], np.int32))
        c["vline"].append(_narrow(out["vline"][:nvc], np.uint32))
        narrow = np.int32 if st[tok.S_NV] < 2**31 else np.int64
        for key in ("src", "dst"):
            c[key].append(out[key][:ne].astype(narrow))
        c["ekind"].append(out["ekind"][:ne].copy())
        ncn = int(st[tok.S_NCN])
        for key in ("cn_vid", "cn_cpu", "cn_nic"):
            c[key].append(out[key][:ncn].copy())
        c["bad"].append(out["bad"][: int(st[tok.S_NBAD])].copy())
        if not st[tok.S_CANON]:
            c["clab_off"].append(out["clab_off"][: nvc + 1].copy())
            c["clab"].append(out["clab"][: int(st[tok.S_NLAB])].copy())
        else:
            c["clab_off"].append(np.zeros(nvc + 1, np.int64))
            c["clab"].append(np.zeros(0, np.uint8))

    def _line(self) -> str:
        raw = bytes(self.lb[: int(self.st[tok.S_LBLEN])])
        return raw.decode("latin-1")

    def _event(self, event: int, chunk: np.ndarray) -> None:
        st = self.st
        lineno = int(st[tok.S_EVLINE])
        if event == tok.EV_LINE:
            line = self._line()
            self._statement(line, line.split(), lineno)
        elif event == tok.EV_DEP:
            self._bad_dependency(lineno, self._line().split(), int(st[tok.S_ARG]))
        elif event == tok.EV_DUP:
            label = self._line().partition(":")[0].strip()
            self._problem(
                lineno,
                f"duplicate label {label!r} in rank {int(st[tok.S_RANK])} "
                f"(first defined on line {self._line_of(int(st[tok.S_ARG]))})",
            )
        elif event == tok.EV_OVERFLOW:
            what = ("size", "peer", "tag")[int(st[tok.S_ARG])]
            value = bytes(self.lb[int(st[tok.S_ARG2]) : int(st[tok.S_ARG3])]).decode("latin-1")
            raise self._fatal(
                lineno, f"{what} {value[:40]} is above 2^63 − 1, the largest signed 64-bit integer"
            )
        elif event == tok.EV_NONASCII:
            pos = int(st[tok.S_POS])
            raw = bytes(chunk[pos : pos + 4])
            raise self._fatal(lineno, f"{_non_ascii(raw)} outside a comment")
        elif event == tok.EV_ROOM:
            self._grow(int(st[tok.S_ARG]), int(st[tok.S_ARG2]), int(st[tok.S_ARG3]))
        else:  # pragma: no cover - the tokenizer returns only the events above
            raise RuntimeError(f"GOAL tokenizer returned unknown event {event}")

    def _grow(self, offsets: int, nbytes: int, slots: int) -> None:
        """Enlarge the block's label arena and table (the table is rehashed)."""
        if self.ar_off.size < offsets:
            grown = np.zeros(max(2 * self.ar_off.size, 2 * offsets), np.int64)
            grown[: self.ar_off.size] = self.ar_off
            self.ar_off = grown
        if self.arena.size < nbytes:
            grown = np.zeros(max(2 * self.arena.size, 2 * nbytes), np.uint8)
            grown[: self.arena.size] = self.arena
            self.arena = grown
        if self.ht_gen.size < slots:
            cap = self.ht_gen.size
            while cap < 2 * slots:
                cap *= 2
            new_gen = np.full(cap, -1, np.int64)
            new_hash = np.zeros(cap, np.uint64)
            new_vid = np.zeros(cap, np.int64)
            tok.rehash(self.ht_gen, self.ht_hash, self.ht_vid, new_gen, new_hash, new_vid, self.gen)
            self.ht_gen, self.ht_hash, self.ht_vid = new_gen, new_hash, new_vid

    def _bad_dependency(self, lineno: int, toks: list[str], code: int) -> None:
        text = " ".join(toks)
        if code == 1:
            self._problem(lineno, f"{text!r}: an op cannot depend on itself")
            return
        missing = toks[0] if code == 2 else toks[2]
        self._problem(
            lineno,
            f"{text!r}: label {missing!r} is not defined before this line in rank "
            f"{int(self.st[tok.S_RANK])} "
            "(a dependency may only name ops defined on earlier lines of its block)",
        )

    def _statement(self, line: str, tok_: list[str], lineno: int) -> None:
        """A line the tokenizer hands over: structure, or a problem to explain."""
        in_block = self.st[tok.S_RANK] >= 0
        head, colon, rest = line.partition(":")
        if colon and in_block:
            label = head.strip()
            if not label:
                self._problem(lineno, f"empty label before ':' in {line.strip()!r}")
                return
            self._op_problem(rest.split(), line, lineno)
            return
        first = tok_[0]
        if first == "num_ranks" and not colon:
            if self.num_ranks is not None:
                raise self._fatal(
                    lineno, f"second 'num_ranks' line (first on line {self.num_ranks_line})"
                )
            if in_block or self.rank_counts:
                raise self._fatal(lineno, "'num_ranks' must come before the first rank block")
            if len(tok_) != 2 or not tok_[1].isdigit() or int(tok_[1]) < 1:
                raise self._fatal(
                    lineno, f"expected 'num_ranks <P>' with P ≥ 1, got {line.strip()!r}"
                )
            self.num_ranks = int(tok_[1])
            self.num_ranks_line = lineno
            return
        if (
            first.startswith("rank")
            and not colon
            and (first == "rank" or first[4:5] in "{0123456789")
        ):
            self._open_block(line, lineno)
            return
        if first == "}" and len(tok_) == 1:
            if not in_block:
                raise self._fatal(lineno, "'}' outside a rank block")
            self._close_block()
            return
        if not in_block:
            if first.startswith("}"):
                raise self._fatal(lineno, f"unexpected {line.strip()!r} outside a rank block")
            raise self._fatal(
                lineno,
                f"{line.strip()!r} outside a rank block (expected 'num_ranks <P>' or 'rank <r> {{')",
            )
        if first in ("send", "recv", "calc"):
            self._op_problem(tok_, line, lineno)
            return
        if len(tok_) >= 2 and tok_[1] in ("requires", "irequires"):
            self._problem(
                lineno,
                f"expected '<A> {tok_[1]} <B>' with two labels, got {line.strip()!r}",
            )
            return
        if len(tok_) == 3:
            self._problem(
                lineno,
                f"unknown dependency {tok_[1]!r} in {line.strip()!r} (expected requires or irequires)",
            )
            return
        self._problem(
            lineno,
            f"unknown statement {line.strip()!r} (expected '<label>: send|recv|calc …', "
            "'<A> requires <B>', '<A> irequires <B>' or '}')",
        )

    def _op_problem(self, toks: list[str], line: str, lineno: int) -> None:
        """Say what is wrong with an op line the tokenizer refused."""
        try:
            _check_op(toks)
        except _LineProblem as problem:
            self._problem(lineno, str(problem))
            return
        raise RuntimeError(  # the tokenizer and the grammar below disagree: a bug
            f"{self.name}:{lineno}: the GOAL tokenizer refused {line.strip()!r}, "
            "which the grammar accepts"
        )

    def _open_block(self, line: str, lineno: int) -> None:
        st = self.st
        if st[tok.S_RANK] >= 0:
            raise self._fatal(
                lineno,
                f"rank block opened inside the block of rank {int(st[tok.S_RANK])} "
                f"(opened on line {self.block_line}): missing '}}'?",
            )
        m = _RANK_RE.fullmatch(line)
        if m is None:
            raise self._fatal(lineno, f"expected 'rank <r> {{', got {line.strip()!r}")
        if self.num_ranks is None:
            raise self._fatal(lineno, "rank block before the 'num_ranks <P>' line")
        r_text, closed = m.groups()
        if not r_text.isdigit():
            raise self._fatal(lineno, f"rank {r_text!r} is not a rank number")
        r = int(r_text)
        expected = len(self.rank_counts)
        if r >= self.num_ranks:
            raise self._fatal(
                lineno, f"rank {r} is outside 0..{self.num_ranks - 1} (num_ranks {self.num_ranks})"
            )
        if r != expected:
            what = "appears again" if r < expected else "is out of order or a block is missing"
            raise self._fatal(
                lineno,
                f"block of rank {r} where rank {expected} was expected: {what} "
                f"(blocks must be rank 0..{self.num_ranks - 1} in order)",
            )
        st[tok.S_RANK] = r
        st[tok.S_BSTART] = st[tok.S_NV]
        st[tok.S_HCOUNT] = 0
        st[tok.S_AUSED] = 0
        self.gen += 1  # empties the label table
        self.block_line = lineno
        if closed:
            self._close_block()

    def _close_block(self) -> None:
        st = self.st
        self.rank_counts.append(int(st[tok.S_NV] - st[tok.S_BSTART]))
        st[tok.S_RANK] = -1

    def _line_of(self, vid: int) -> int:
        for part in self.chunks["vline"]:
            if vid < part.size:
                return int(part[vid])
            vid -= part.size
        return int(self.out["vline"][vid])  # in the chunk being read

    # ----------------------------------------------------------------- the graph
    def _labels(self, rank: np.ndarray, n: int) -> np.ndarray | None:
        """The label column: UCS-4 built in bulk (``l<k>`` where the file numbers its ops so)."""
        upto = int(self.st[tok.S_CANON_UPTO])
        upto = n if upto < 0 else upto
        if upto == n and n > _CANONICAL_LABELS_KEPT:
            return None
        width = max(int(self.st[tok.S_LABW]), 1)
        out = np.zeros((n, width), np.uint32)
        if upto:
            starts = np.concatenate(([0], np.cumsum(self.rank_counts)[:-1])).astype(np.int64)
            tok.canonical_labels(starts, rank, 0, upto, out)
        row = 0
        bad = self._bad_labels()
        exact: dict[int, str] = {}
        for off, text in zip(self.chunks["clab_off"], self.chunks["clab"], strict=True):
            count = off.size - 1
            if row + count > upto:
                skip = max(upto - row, 0)
                tok.text_labels(text, off[skip:], out, row + skip)
                here = bad[(bad >= row) & (bad < row + count)] - row
                for i in here.tolist():
                    exact[row + i] = bytes(text[off[i] : off[i + 1]]).decode("latin-1")
            row += count
        self.chunks["clab_off"].clear()
        self.chunks["clab"].clear()
        labels = out.view(f"<U{width}").reshape(n)
        if exact:  # odd labels kept exactly (a U column would drop trailing NUL characters)
            labels = labels.astype(object)
            for v, text in exact.items():
                labels[v] = text
        return labels

    def _bad_labels(self) -> np.ndarray:
        """Ids of the ops whose label is not a valid GOAL label (checked in the tokenizer)."""
        parts = self.chunks["bad"]
        if len(parts) != 1:
            parts[:] = [np.concatenate(parts) if parts else np.zeros(0, np.int64)]
        return parts[0]

    def finish(self, progress: bool = False) -> ExecutionGraph:
        """Check the block structure, match messages, build and validate the graph
        (``progress``: one bar over these steps on stderr)."""
        st = self.st
        last_line = self.last_line
        if st[tok.S_RANK] >= 0:
            raise self._fatal(
                self.block_line,
                f"block of rank {int(st[tok.S_RANK])} is not closed with '}}' before the end",
            )
        if self.num_ranks is None:
            raise self._fatal(max(last_line, 1), "missing 'num_ranks <P>' line")
        if len(self.rank_counts) < self.num_ranks:
            raise self._fatal(
                max(last_line, 1),
                f"rank {len(self.rank_counts)} has no block: num_ranks is {self.num_ranks} "
                f"but the file ends after {len(self.rank_counts)} block(s)",
            )
        c = self.chunks

        def take(key: str) -> np.ndarray:
            parts = c[key]
            whole = parts[0] if len(parts) == 1 else np.concatenate(parts)
            parts.clear()
            return whole

        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=4, desc="building graph", unit="step", leave=False)

        def step(what: str) -> None:
            if bar is not None:
                bar.set_postfix_str(what)
                bar.update(1)

        try:
            return self._build(take, step)
        finally:
            if bar is not None:
                bar.close()

    def _build(self, take: Any, step: Any) -> ExecutionGraph:
        """The graph from the columns read (``take`` hands each over, ``step`` reports)."""
        c = self.chunks
        step("columns")
        kind, vline = take("kind"), take("vline")
        n = kind.size
        P = self.num_ranks
        rank = np.repeat(np.arange(P, dtype=np.int32), self.rank_counts)
        labels = self._labels(rank, n)
        for v in self._bad_labels().tolist():
            s = labels[v]
            if s in _STATEMENT_KEYWORDS:
                self._problem(int(vline[v]), f"label {str(s)!r} is a GOAL keyword")
            else:
                self._problem(int(vline[v]), f"label {str(s)!r} is not [a-zA-Z][a-zA-Z0-9_]*")

        size, peer, tag, cost = take("size"), take("peer"), take("tag"), take("cost")
        for v in np.flatnonzero(~np.isfinite(cost)):  # e.g. 400 digits: too large for float64
            self._problem(int(vline[v]), "calc cost is too large for a float64 (inf)")
            cost[v] = 0.0
        for v, token in self.inexact:  # never a silently rounded cost
            self._problem(
                int(vline[v]),
                f"calc cost {token[:40]} is an integer above 2^53 that a float64 cannot hold "
                f"exactly (it would read as {cost[v]:.0f})",
            )
            cost[v] = 0.0

        demote = np.zeros(n, dtype=bool)
        comm = kind != CALC
        bad = np.flatnonzero(comm & (peer >= P))
        for v in bad:
            what = "destination" if kind[v] == SEND else "source"
            self._problem(
                int(vline[v]), f"{what} rank {peer[v]} is outside 0..{P - 1} (num_ranks {P})"
            )
        demote[bad] = True
        live_kind = np.where(demote, CALC, kind).astype(np.int8)

        step("matching messages")
        pairs_s, pairs_r, resolved = self._match(
            rank, live_kind, size, peer, tag, vline, labels, demote
        )
        del live_kind
        if demote.any():
            kind = np.where(demote, CALC, kind).astype(np.int8)
            for column in (size, peer, tag):
                column[demote] = 0
        del vline

        if self.num_problems:
            shown = "; ".join(f"{self.name}:{ln}: {why}" for ln, why in self.problems[:3])
            more = f" (and {self.num_problems - 3} more)" if self.num_problems > 3 else ""
            warnings.warn(
                f"{self.name}: {self.num_problems} problem(s) skipped (lenient): {shown}{more}",
                UserWarning,
                stacklevel=4,
            )
        meta: dict[str, Any] = {
            "name": Path(self.name).stem,
            "format": "goal",
            "files": [self.name],
            "ingested": datetime.now(UTC).isoformat(timespec="seconds"),
            "wildcards_resolved": resolved,
        }
        if labels is None:
            meta["goal_labels"] = (
                "every op was labelled l<k> (k: its position in its rank block): not stored, "
                "write_goal numbers ops the same way"
            )
        if self.num_problems:
            meta["warning_count"] = self.num_problems
            meta["warnings"] = [f"{self.name}:{ln}: {why}" for ln, why in self.problems]
        cpu = nic = None
        cn_vid = take("cn_vid")
        cn_cpu, cn_nic = take("cn_cpu"), take("cn_nic")
        if cn_vid.size:
            cpu = np.zeros(n, dtype=np.int16)
            nic = np.zeros(n, dtype=np.int16)
            cpu[cn_vid], nic[cn_vid] = cn_cpu, cn_nic
            nic[kind == CALC] = 0  # ops demoted to calc (lenient) keep their cpu, not a NIC
        # edges: the file's dependencies, then the messages, written in place (no second copy)
        step("edges")
        ne_local = sum(p.size for p in c["src"])
        ne = ne_local + pairs_s.size
        index = np.int32 if n < 2**31 - 1 else np.int64  # vertex ids as the graph keeps them
        edge_src = np.empty(ne, index)
        edge_dst = np.empty(ne, index)
        edge_kind = np.empty(ne, np.int8)
        for key, column in (("src", edge_src), ("dst", edge_dst), ("ekind", edge_kind)):
            at = 0
            for part in c[key]:
                column[at : at + part.size] = part
                at += part.size
            c[key].clear()
        edge_src[ne_local:] = pairs_s
        edge_dst[ne_local:] = pairs_r
        edge_kind[ne_local:] = MESSAGE
        del pairs_s, pairs_r
        step("validating")
        return ExecutionGraph.from_arrays(
            P,
            rank=rank,
            kind=kind,
            cost_ns=cost,
            size=size,
            peer=peer,
            tag=tag,
            edge_src=edge_src,
            edge_dst=edge_dst,
            edge_kind=edge_kind,
            label=labels,
            cpu=cpu,
            nic=nic,
            meta=meta,
        )

    def _match(
        self,
        rank: np.ndarray,
        kind: np.ndarray,
        size: np.ndarray,
        peer: np.ndarray,
        tag: np.ndarray,
        vline: np.ndarray,
        labels: np.ndarray,
        demote: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Exact FIFO matching, then wildcard resolution; unmatched ops → error or demotion."""
        sends, recvs = fifo_match(rank, kind, peer, tag)
        wrong = size[sends] != size[recvs]
        for s, r in zip(sends[wrong], recvs[wrong], strict=True):
            self._problem(
                int(vline[r]),
                f"recv {size[r]}b (label {str(labels[r])!r}, rank {rank[r]}) is matched FIFO with "
                f"send {size[s]}b on line {vline[s]} (label {str(labels[s])!r}, rank {rank[s]}): "
                "sizes differ",
            )
        demote[sends[wrong]] = True
        demote[recvs[wrong]] = True
        sends, recvs = sends[~wrong], recvs[~wrong]
        kind = np.where(demote, CALC, kind)  # demoted ops are out of wildcard matching too

        matched = np.zeros(rank.size, dtype=bool)
        matched[sends] = True
        matched[recvs] = True
        wild = np.flatnonzero((kind == RECV) & ((peer < 0) | (tag < 0)))
        resolved = 0
        if wild.size:
            ws, wr = _resolve_wildcards(rank, kind, size, peer, tag, matched, wild)
            peer[wr] = rank[ws]
            tag[wr] = tag[ws]
            matched[ws] = True
            matched[wr] = True
            sends, recvs = np.concatenate((sends, ws)), np.concatenate((recvs, wr))
            resolved = int(ws.size)

        lost = np.flatnonzero((kind != CALC) & ~matched)
        for v in lost[: _MAX_WARNINGS_KEPT if self.lenient else 1]:
            if kind[v] == SEND:
                what = f"send {size[v]}b to {peer[v]} tag {tag[v]} has no matching recv at rank {peer[v]}"
            else:
                src = "any source" if peer[v] < 0 else f"from {peer[v]}"
                tg = "any tag" if tag[v] < 0 else f"tag {tag[v]}"
                what = f"recv {size[v]}b ({src}, {tg}) has no matching send to rank {rank[v]}"
            more = (
                f" ({lost.size - 1} more unmatched op(s))"
                if lost.size > 1 and not self.lenient
                else ""
            )
            self._problem(int(vline[v]), f"{what} (rank {rank[v]}, label {str(labels[v])!r}){more}")
        if lost.size > _MAX_WARNINGS_KEPT and self.lenient:
            self.num_problems += lost.size - _MAX_WARNINGS_KEPT
        demote[lost] = True
        order = np.argsort(sends, kind="stable")
        return sends[order], recvs[order], resolved


def _return_freed_memory() -> None:
    """Have glibc serve every block of 1 MiB or more with its own mapping, returned on free.

    By default glibc raises that threshold to 32 MiB once a large block is freed, so the
    chunk columns (a few MiB each, copied, concatenated, freed) end up in the heap, where
    freed holes stay resident: measured at 10^7 vertices, the read's peak RSS falls from 1.43
    to 1.02 GB and the RSS after it from 1.10 to 0.59 GB (the graph itself is 0.43 GB). Process
    wide and harmless elsewhere; a no-op off glibc.
    """
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 1 << 20)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):  # not glibc
        pass


_MALLOC_TUNED = False


def _narrow(values: np.ndarray, dtype: type) -> np.ndarray:
    """A copy of ``values`` as ``dtype`` if every value fits, else as it is."""
    info = np.iinfo(dtype)
    if values.size == 0 or (values.min() >= info.min and values.max() <= info.max):
        return values.astype(dtype)
    return values.copy()


def _after_last_newline(buf: np.ndarray, end: int) -> int:
    """1 + the position of the last newline in buf[:end], or 0 (searched from the end)."""
    step = 1 << 16
    stop = end
    while stop > 0:
        start = max(0, stop - step)
        hits = np.flatnonzero(buf[start:stop] == 10)
        if hits.size:
            return start + int(hits[-1]) + 1
        stop = start
        step *= 4
    return 0


def _check_op(tok: list[str]) -> None:
    """Raise :class:`_LineProblem` saying what is wrong with the op ``tok`` (its words after
    the label), as the grammar reads it; return if nothing is."""
    op = tok[0] if tok else ""
    if op == "calc":
        if len(tok) < 2:
            raise _LineProblem("calc needs a cost in ns, e.g. 'calc 1000'")
        cost = tok[1]
        if not _COST_RE.fullmatch(cost):
            raise _LineProblem(f"calc cost {cost!r} is not a non-negative number of ns")
        rest = tok[2:]
        if rest and rest[0] == "cpu":
            _count(rest, 1, "cpu")
            rest = rest[2:]
        if rest:
            hint = " (a calc takes only 'cpu')" if rest[0] in ("tag", "nic") else ""
            raise _LineProblem(f"unexpected {rest[0]!r} after 'calc {cost}'{hint}")
        return
    if op not in ("send", "recv"):
        if not op:
            raise _LineProblem("missing operation after ':' (expected send, recv or calc)")
        raise _LineProblem(f"unknown operation {op!r} (expected send, recv or calc)")
    i, n = 1, len(tok)
    if i < n and tok[i].endswith("b") and tok[i][:-1].isdigit():
        size = tok[i][:-1]
        i += 1
    elif i + 1 < n and tok[i].isdigit() and tok[i + 1] == "b":
        size = tok[i]
        i += 2
    else:
        got = repr(tok[i]) if i < n else "nothing"
        raise _LineProblem(f"{op} size must be a byte count such as '4b', got {got}")
    word = "to" if op == "send" else "from"
    if i >= n or tok[i] != word:
        got = repr(tok[i]) if i < n else "nothing"
        raise _LineProblem(f"expected '{word}' after '{op} {size}b', got {got}")
    i += 1
    peer = tok[i] if i < n else ""
    if peer == "-1" and op == "send":
        raise _LineProblem("a send needs a destination rank; -1 (wildcard) is only a recv source")
    if not (peer.isdigit() or peer == "-1"):
        got = repr(peer) if peer else "nothing"
        raise _LineProblem(f"expected a rank after '{word}', got {got}")
    i += 1
    if i < n and tok[i] == "tag":
        tag = tok[i + 1] if i + 1 < n else ""
        if tag == "-1" and op == "send":
            raise _LineProblem("a send needs an explicit tag; -1 (wildcard) is only for recvs")
        if not (tag.isdigit() or tag == "-1"):
            got = repr(tag) if tag else "nothing"
            raise _LineProblem(f"expected a tag number after 'tag', got {got}")
        i += 2
    if i < n and tok[i] == "cpu":
        _count(tok, i + 1, "cpu")
        i += 2
    if i < n and tok[i] == "nic":
        _count(tok, i + 1, "nic")
        i += 2
    if i < n:
        hint = (
            " (optional parts come in the order tag, cpu, nic)"
            if tok[i] in ("tag", "cpu", "nic")
            else " (expected tag, cpu or nic)"
        )
        raise _LineProblem(f"unexpected {tok[i]!r} in {op} statement{hint}")


def fifo_match(
    rank: np.ndarray, kind: np.ndarray, peer: np.ndarray, tag: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Exact matches: the k-th send ``r → d`` with tag ``t`` (in vertex order) pairs with the k-th
    recv at ``d`` from ``r`` with tag ``t``. Recvs with a negative peer or tag (wildcards) are left
    out. Returns (send ids, recv ids) in send order, vectorised: one int64 key per (source,
    destination, tag), two stable sorts and a binary search (no per-message Python)."""
    s = np.flatnonzero(kind == SEND)
    r = np.flatnonzero((kind == RECV) & (peer >= 0) & (tag >= 0))
    if s.size == 0 or r.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    s_key, r_key = _channel_keys(rank, peer, tag, s, r)
    so = np.argsort(s_key, kind="stable")
    ks = s_key[so]
    del s_key
    ro = np.argsort(r_key, kind="stable")
    kr = r_key[ro]
    del r_key
    # occurrence of each recv within its run of equal keys: the k-th recv takes the k-th send
    start = np.ones(kr.size, bool)
    start[1:] = kr[1:] != kr[:-1]
    idx = np.arange(kr.size)
    occ = idx - np.maximum.accumulate(np.where(start, idx, 0))
    del start, idx
    left = np.searchsorted(ks, kr, side="left")
    count = np.searchsorted(ks, kr, side="right")
    count -= left
    del ks, kr
    ok = occ < count
    del count
    sends = s[so[left[ok] + occ[ok]]]
    recvs = r[ro[ok]]
    del so, ro, left, occ, ok
    order = np.argsort(sends, kind="stable")
    return sends[order], recvs[order]


def _channel_keys(
    rank: np.ndarray, peer: np.ndarray, tag: np.ndarray, s: np.ndarray, r: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One int64 per (source, destination, tag) of the sends ``s`` and the recvs ``r``, equal
    across sides exactly when all three are: packed in place when the ranges allow (always for
    real traces: one int64 array per side alive), else numbered by np.unique."""
    hi = max(int(rank[s].max()), int(peer[s].max()), int(peer[r].max()), int(rank[r].max())) + 1
    tags = max(int(tag[s].max()), int(tag[r].max())) + 1
    if hi * hi * tags < 2**62:
        keys = []
        for src, dst, ids in ((rank, peer, s), (peer, rank, r)):
            key = src[ids].astype(np.int64)
            key *= hi
            key += dst[ids]
            key *= tags
            key += tag[ids]
            keys.append(key)
        return keys[0], keys[1]
    both = np.stack(
        (
            np.concatenate((rank[s], peer[r])).astype(np.int64),
            np.concatenate((peer[s], rank[r])).astype(np.int64),
            np.concatenate((tag[s], tag[r])).astype(np.int64),
        ),
        axis=1,
    )
    _, dense = np.unique(both, axis=0, return_inverse=True)
    dense = dense.reshape(-1).astype(np.int64)
    return dense[: s.size], dense[s.size :]


def _resolve_wildcards(
    rank: np.ndarray,
    kind: np.ndarray,
    size: np.ndarray,
    peer: np.ndarray,
    tag: np.ndarray,
    matched: np.ndarray,
    wild: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Each wildcard recv, in file order, takes the first fitting unmatched send to its rank,
    ordered by (position in the sender's block, sender rank)."""
    free = np.flatnonzero((kind == SEND) & ~matched)
    bounds = np.concatenate(([0], np.cumsum(np.bincount(rank, minlength=int(rank.max()) + 1))))
    pos = free - bounds[rank[free]]
    free = free[np.lexsort((rank[free], pos))]
    by_dst: dict[int, list[int]] = {}
    for v, d in zip(free.tolist(), peer[free].tolist(), strict=True):
        by_dst.setdefault(d, []).append(v)
    taken: set[int] = set()
    head: dict[int, int] = {}
    out_s: list[int] = []
    out_r: list[int] = []
    for w in wild.tolist():
        d = int(rank[w])
        cands = by_dst.get(d)
        if not cands:
            continue
        want_src, want_tag, want_size = int(peer[w]), int(tag[w]), int(size[w])
        i = head.get(d, 0)
        while i < len(cands) and cands[i] in taken:
            i += 1
        head[d] = i
        for v in cands[i:]:
            if v in taken:
                continue
            if (
                (want_src < 0 or rank[v] == want_src)
                and (want_tag < 0 or tag[v] == want_tag)
                and size[v] == want_size
            ):
                taken.add(v)
                out_s.append(v)
                out_r.append(w)
                break
    return np.array(out_s, dtype=np.int64), np.array(out_r, dtype=np.int64)


def _count(tok: list[str], i: int, what: str) -> int:
    """The ``cpu``/``nic`` number at ``tok[i]``."""
    value = tok[i] if i < len(tok) else ""
    if not value.isdigit():
        got = repr(value) if value else "nothing"
        raise _LineProblem(f"expected a {what} number after '{what}', got {got}")
    if int(value) > _MAX_STREAM:
        raise _LineProblem(
            f"{what} {value} is above {_MAX_STREAM} (LogGOPSim's txt2bin keeps it in 8 bits)"
        )
    return int(value)


# --------------------------------------------------------------------------- writing


@dataclass(frozen=True)
class GoalWritten:
    """What :func:`write_goal` wrote: the file and the rounding of its calc costs (ns).

    ``rounding_total_ns`` (Σ |written − cost| over all calc vertices) bounds ``|ΔT|`` of the
    written graph against the original for any parameters. Usable as a path (``os.PathLike``).
    """

    path: Path
    costs_rounded: int
    rounding_total_ns: float
    rounding_max_ns: float

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "costs_rounded": self.costs_rounded,
            "rounding_total_ns": self.rounding_total_ns,
            "rounding_max_ns": self.rounding_max_ns,
        }

    def describe(self) -> str:
        """One line for the CLI."""
        if not self.costs_rounded:
            return "calc costs written exactly (all integral ns)"
        return (
            f"{self.costs_rounded} calc cost(s) rounded to integral ns (nearest, ties to even): "
            f"total |Δ| {self.rounding_total_ns:.6g} ns, max {self.rounding_max_ns:.6g} ns "
            f"(bounds |ΔT|)"
        )


def write_goal(graph: ExecutionGraph, path: str | os.PathLike[str]) -> GoalWritten:
    """Write ``graph`` as a GOAL schedule that LogGOPSim's ``txt2bin`` and :func:`read_goal` read.

    Calc costs are rounded to integral ns (nearest, ties to even); the returned
    :class:`GoalWritten` says by how much. Raises :class:`~llamp.errors.GraphError` if the graph
    cannot be expressed in GOAL (messages not FIFO per source, destination and tag; a non-finite
    cost or one of 2^64 ns or more; a cpu/nic number above 255; analytic collectives). Written
    atomically (temp + rename).
    """
    path = Path(path)
    n = graph.num_vertices
    kind, rank = graph.kind, graph.rank
    coll = np.flatnonzero(kind == COLL)
    if coll.size:
        raise GraphError(
            "cannot write GOAL: GOAL has no analytic collectives, and this graph charges "
            f"{coll.size} collective vertices with a cost model (e.g. "
            f"{graph.describe_vertex(coll[0])}); build it with the collectives expanded"
        )
    calc = kind == CALC
    bad = np.flatnonzero(calc & ~np.isfinite(graph.cost_ns))
    if bad.size:
        raise GraphError(f"cannot write GOAL: cost is not finite: {graph.describe_vertex(bad[0])}")
    bad = np.flatnonzero(calc & (graph.cost_ns >= 2.0**64))
    if bad.size:
        raise GraphError(
            "cannot write GOAL: a cost of 2^64 ns or more does not fit txt2bin's 64-bit "
            f"integers: {graph.describe_vertex(bad[0])}"
        )
    for name in ("cpu", "nic"):
        bad = np.flatnonzero(graph.streams(name) > _MAX_STREAM)
        if bad.size:
            raise GraphError(
                f"cannot write GOAL: {name} number above {_MAX_STREAM} (txt2bin keeps it in 8 "
                f"bits): {graph.describe_vertex(bad[0])}"
            )
    bad = np.flatnonzero(~calc & (graph.tag < 0))
    if bad.size:
        raise GraphError(
            "cannot write GOAL: a negative tag would read back as a wildcard or an error: "
            f"{graph.describe_vertex(bad[0])}"
        )
    _check_fifo(graph)
    bounds = graph.rank_bounds()
    labels = _labels_for_writing(graph, bounds)

    ops = np.empty(n, dtype=object)
    for k in (SEND, RECV):
        idx = np.flatnonzero(kind == k)
        columns = (
            labels[idx].tolist(),
            graph.size[idx].tolist(),
            graph.peer[idx].tolist(),
            graph.tag[idx].tolist(),
        )
        if k == SEND:
            ops[idx] = [
                f"{a}: send {b}b to {c} tag {d}" for a, b, c, d in zip(*columns, strict=True)
            ]
        else:
            ops[idx] = [
                f"{a}: recv {b}b from {c} tag {d}" for a, b, c, d in zip(*columns, strict=True)
            ]
    idx = np.flatnonzero(calc)
    cost = graph.cost_ns[idx]
    rounded = np.rint(cost)
    error = np.abs(rounded - cost)
    ops[idx] = [
        f"{a}: calc {c}" for a, c in zip(labels[idx].tolist(), _integers(rounded), strict=True)
    ]
    _append_cpu_nic(graph, ops)

    local = graph.edge_kind != MESSAGE
    src, dst, ek = graph.edge_src[local], graph.edge_dst[local], graph.edge_kind[local]
    word = np.array(["requires", "irequires"], dtype=object)[ek]
    deps = [
        f"{a} {w} {b}"
        for a, w, b in zip(labels[dst].tolist(), word.tolist(), labels[src].tolist(), strict=True)
    ]
    lines = np.empty(n + len(deps), dtype=object)
    lines[:n] = ops
    lines[n:] = deps
    # a dependency goes right after the later of its two ops; ties keep the edge order
    position = np.concatenate((2 * np.arange(n, dtype=np.int64), 2 * np.maximum(src, dst) + 1))
    body = lines[np.argsort(position, kind="stable")].tolist()
    per_rank = np.diff(bounds) + np.bincount(rank[dst], minlength=graph.num_ranks)
    ends = np.cumsum(per_rank).tolist()

    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="ascii", newline="\n") as out:
            out.write(f"num_ranks {graph.num_ranks}\n")
            start = 0
            chunk: list[str] = []
            for r, end in enumerate(ends):
                chunk.append(f"\nrank {r} {{")
                chunk.extend(body[start:end])
                chunk.append("}")
                start = end
                if len(chunk) > 1 << 16:
                    out.write("\n".join(chunk) + "\n")
                    chunk = []
            if chunk:
                out.write("\n".join(chunk) + "\n")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return GoalWritten(
        path=path,
        costs_rounded=int(np.count_nonzero(error)),
        rounding_total_ns=float(error.sum()),
        rounding_max_ns=float(error.max()) if error.size else 0.0,
    )


def _integers(values: np.ndarray) -> list[int]:
    """Integral float64 values in [0, 2^64) as Python ints (exact, also above 2^53)."""
    small = values < 2.0**62
    out = np.empty(values.size, dtype=object)
    out[small] = values[small].astype(np.int64).tolist()
    out[~small] = [int(x) for x in values[~small].tolist()]
    return out.tolist()


def _labels_for_writing(graph: ExecutionGraph, bounds: np.ndarray) -> np.ndarray:
    """The graph's labels if all are valid GOAL labels unique within their rank, else ``l<i>``."""
    n = graph.num_vertices
    if graph.label is not None and n:
        labels = graph.label.tolist()
        try:
            usable = _valid_labels(labels)
        except TypeError:  # a label that is not a str
            usable = False
        ends = bounds.tolist()
        if usable and all(
            len(set(labels[a:b])) == b - a for a, b in zip(ends[:-1], ends[1:], strict=True)
        ):
            return graph.label
    local = np.arange(n, dtype=np.int64) - bounds[graph.rank] + 1
    out = np.empty(n, dtype=object)
    out[:] = [f"l{i}" for i in local.tolist()]
    return out


def _valid_labels(labels: list[str]) -> bool:
    """All labels ``[a-zA-Z][a-zA-Z0-9_]*`` and none a keyword, checked in bulk.

    Raises ``TypeError`` if an element is not a ``str``.
    """
    if not labels:
        return True
    joined = "\x00".join(labels)
    if not labels[0] or not labels[-1] or "\x00\x00" in joined:
        return False
    body = joined.replace("\x00", "").replace("_", "")
    return (
        (not body or (body.isascii() and body.isalnum()))
        and not labels[0][:1].isdigit()
        and not labels[0].startswith("_")
        and _BAD_LABEL_START_RE.search(joined) is None
        and _STATEMENT_KEYWORDS.isdisjoint(labels)
    )


def _append_cpu_nic(graph: ExecutionGraph, ops: np.ndarray) -> None:
    """Append ``cpu <c>`` (calc) or ``cpu <c> nic <n>`` (send/recv) where either is non-zero."""
    if graph.cpu is None and graph.nic is None:
        return
    cpu, nic = graph.streams("cpu"), graph.streams("nic")
    calc = graph.kind == CALC
    idx = np.flatnonzero((cpu != 0) | ((nic != 0) & ~calc))
    ops[idx] = [
        f"{op} cpu {c}" if is_calc else f"{op} cpu {c} nic {m}"
        for op, c, m, is_calc in zip(
            ops[idx].tolist(),
            cpu[idx].tolist(),
            nic[idx].tolist(),
            calc[idx].tolist(),
            strict=True,
        )
    ]


def _check_fifo(graph: ExecutionGraph) -> None:
    """GOAL has no message edges: they must be what FIFO matching of the file gives back."""
    sends, recvs = graph.messages()
    fs, fr = fifo_match(graph.rank, graph.kind, graph.peer, graph.tag)
    want = np.full(graph.num_vertices, -1, dtype=np.int64)
    want[sends] = recvs
    got = np.full(graph.num_vertices, -1, dtype=np.int64)
    got[fs] = fr
    bad = np.flatnonzero(want != got)
    if bad.size:
        s = int(bad[0])
        raise GraphError(
            "cannot write GOAL: its messages are matched FIFO per (source, destination, tag) in "
            f"vertex order, but the graph pairs {graph.describe_vertex(s)} with "
            f"{graph.describe_vertex(want[s]) if want[s] >= 0 else 'nothing'} where FIFO gives "
            f"{graph.describe_vertex(got[s]) if got[s] >= 0 else 'nothing'}"
        )
