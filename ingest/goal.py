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

Speed: one ``str.split`` per line and a few comparisons on Schedgen's three common line shapes
(no regular expression), numbers converted per ~8 MB chunk with numpy, matching vectorised; see
``benchmarks/bench_goal.py`` (about 10^6 lines/s read, more written, on one core).
"""

from __future__ import annotations

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

__all__ = ["GoalWritten", "fifo_match", "parse_goal_text", "read_goal", "write_goal"]

_STATEMENT_KEYWORDS = frozenset({"send", "recv", "calc", "rank", "num_ranks"})
_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_RANK_RE = re.compile(r"\s*rank\s*(\S+?)\s*\{\s*(\}?)\s*")
_LABEL_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_BAD_LABEL_START_RE = re.compile(r"\x00[0-9_]")
_COST_RE = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_CHUNK_CHARS = 1 << 23  # lines are scanned in ~8 MB chunks so the per-line strings stay bounded
_MAX_WARNINGS_KEPT = 100
_INT64_MAX = np.iinfo(np.int64).max
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")
_MAX_STREAM = 255  # txt2bin keeps cpu and nic numbers in a uint8


class _LineProblem(Exception):
    """A problem confined to one line: an error, or a skipped line in lenient mode."""


# --------------------------------------------------------------------------- reading


def read_goal(path: str | os.PathLike[str], *, lenient: bool = False) -> ExecutionGraph:
    """Read a GOAL schedule into a validated :class:`ExecutionGraph`.

    Raises :class:`~llamp.errors.TraceError` (``file:line: reason``) on malformed input; see the
    module docstring for the grammar, the message matching and what ``lenient`` relaxes.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise TraceError(f"cannot read GOAL file ({err.strerror or err})", path=str(path)) from err
    # latin-1 never fails to decode; any non-ASCII byte outside a comment is reported by line.
    graph = parse_goal_text(data.decode("latin-1"), name=str(path), lenient=lenient)
    graph.meta["name"] = path.stem
    graph.meta["files"] = [str(path)]
    return graph


def parse_goal_text(text: str, *, name: str = "<string>", lenient: bool = False) -> ExecutionGraph:
    """Parse GOAL text; ``name`` is the file name used in error messages and ``meta``."""
    text = _strip_comments(text, name)
    if not text.isascii():
        pos = _NON_ASCII_RE.search(text).start()
        raise TraceError(
            f"non-ASCII character {text[pos]!r} outside a comment",
            path=name,
            line=text.count("\n", 0, pos) + 1,
        )
    scanner = _Scanner(name, lenient)
    start, lineno = 0, 1
    while start < len(text):
        end = text.find("\n", start + _CHUNK_CHARS)
        end = len(text) if end < 0 else end
        lines = text[start:end].split("\n")
        scanner.scan(lines, lineno)
        lineno += len(lines)
        start = end + 1
    return scanner.finish(text.count("\n") + (0 if text.endswith("\n") else 1))


def _strip_comments(text: str, name: str) -> str:
    """Blank out comments, keeping every newline so line numbers stay right."""
    if "/" not in text:
        return text
    stripped = _COMMENT_RE.sub(
        lambda m: " " + "\n" * m.group().count("\n") if m.group().startswith("/*") else "", text
    )
    pos = stripped.find("/*")
    if pos >= 0:
        raise TraceError(
            "unterminated /* comment (no closing */)",
            path=name,
            line=stripped.count("\n", 0, pos) + 1,
        )
    return stripped


class _Scanner:
    """Line scanner state: the current block, the columns read so far (converted per chunk)."""

    def __init__(self, name: str, lenient: bool):
        self.name = name
        self.lenient = lenient
        self.num_ranks: int | None = None
        self.num_ranks_line = 0
        self.rank = -1  # rank of the open block, -1 outside blocks
        self.block_line = 0
        self.block_start = 0  # first vertex id of the open block
        self.rank_counts: list[int] = []
        self.labels_of_rank: dict[str, int] = {}
        self.distinct_labels: set[str] = set()  # validated once, not per vertex
        self.nv = 0
        self.problems: list[tuple[int, str]] = []
        self.num_problems = 0
        # current chunk, as lists (numbers as digit strings, converted in _flush)
        self.kinds: list[int] = []
        self.sizes: list[str] = []
        self.peers: list[str] = []
        self.tags: list[str] = []
        self.costs: list[str] = []
        self.vlines: list[int] = []
        self.labels: list[str] = []
        self.e_src: list[int] = []
        self.e_dst: list[int] = []
        self.e_kind: list[int] = []
        self.cpunic: list[tuple[int, int, int]] = []
        # converted chunks
        self.chunks: dict[str, list[np.ndarray]] = {
            k: [] for k in ("kind", "size", "peer", "tag", "cost", "vline", "src", "dst", "ekind")
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

    # ----------------------------------------------------------------- the hot loop
    def scan(self, lines: list[str], first_lineno: int) -> None:
        """Scan one chunk of lines.

        Schedgen's three line shapes (``l1: calc 5``, ``l1: send 4b to 1 tag 0``,
        ``l1 requires l2``) take the inline fast path: one ``str.split`` and a few comparisons,
        numbers kept as checked digit strings for :meth:`_flush`. Everything else, and every
        error, goes through :meth:`_statement`.
        """
        add_kind, add_size, add_peer = self.kinds.append, self.sizes.append, self.peers.append
        add_tag, add_cost = self.tags.append, self.costs.append
        add_vline, add_label = self.vlines.append, self.labels.append
        add_src, add_dst, add_ekind = self.e_src.append, self.e_dst.append, self.e_kind.append
        cost_ok = _COST_RE.fullmatch
        lab = self.labels_of_rank
        nv = self.nv
        in_block = self.rank >= 0
        lineno = first_lineno - 1
        for line in lines:
            lineno += 1
            tok = line.split()
            n = len(tok)
            if n == 3 and in_block:
                word = tok[1]
                if word == "requires" or word == "irequires":
                    a = lab.get(tok[0])
                    b = lab.get(tok[2])
                    if a is None or b is None or a == b:
                        self._bad_dependency(lineno, tok, a, b)
                    else:
                        add_src(b)
                        add_dst(a)
                        add_ekind(REQUIRES if word == "requires" else IREQUIRES)
                    continue
                head = tok[0]
                if (
                    word == "calc"
                    and head[-1] == ":"
                    and len(head) > 1
                    and (tok[2].isdigit() or cost_ok(tok[2]))
                ):
                    label = head[:-1]
                    add_kind(CALC)
                    add_cost(tok[2])
                    add_vline(lineno)
                    add_label(label)
                    if lab.setdefault(label, nv) != nv:
                        self._duplicate(lineno, label, lab[label])
                    nv += 1
                    continue
            elif n == 7 and in_block:
                head, op, size = tok[0], tok[1], tok[2][:-1]
                if (
                    tok[5] == "tag"
                    and ((op == "send" and tok[3] == "to") or (op == "recv" and tok[3] == "from"))
                    and head[-1] == ":"
                    and len(head) > 1
                    and tok[2][-1] == "b"
                    and size.isdigit()
                    and tok[4].isdigit()
                    and tok[6].isdigit()
                ):
                    label = head[:-1]
                    add_kind(SEND if op == "send" else RECV)
                    add_size(size)
                    add_peer(tok[4])
                    add_tag(tok[6])
                    add_vline(lineno)
                    add_label(label)
                    if lab.setdefault(label, nv) != nv:
                        self._duplicate(lineno, label, lab[label])
                    nv += 1
                    continue
            elif n == 0:
                continue
            self.nv = nv
            self._statement(line, tok, lineno)
            nv = self.nv
            lab = self.labels_of_rank
            in_block = self.rank >= 0
        self.nv = nv
        self._flush()

    def _op(self, tok: list[str], nv: int) -> None:
        """Parse an op outside the fast path (optional parts, wildcards, fractional costs) and
        append it to the chunk lists; raise :class:`_LineProblem` with the reason if malformed."""
        op = tok[0] if tok else ""
        if op == "calc":
            if len(tok) < 2:
                raise _LineProblem("calc needs a cost in ns, e.g. 'calc 1000'")
            cost = tok[1]
            if not _COST_RE.fullmatch(cost):
                raise _LineProblem(f"calc cost {cost!r} is not a non-negative number of ns")
            rest = tok[2:]
            cpu = 0
            if rest and rest[0] == "cpu":
                cpu = _count(rest, 1, "cpu")
                rest = rest[2:]
            if rest:
                hint = " (a calc takes only 'cpu')" if rest[0] in ("tag", "nic") else ""
                raise _LineProblem(f"unexpected {rest[0]!r} after 'calc {cost}'{hint}")
            self.kinds.append(CALC)
            self.costs.append(cost)
            if cpu:
                self.cpunic.append((nv, cpu, 0))
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
            raise _LineProblem(
                "a send needs a destination rank; -1 (wildcard) is only a recv source"
            )
        if not (peer.isdigit() or peer == "-1"):
            got = repr(peer) if peer else "nothing"
            raise _LineProblem(f"expected a rank after '{word}', got {got}")
        i += 1
        tag, cpu, nic = "0", 0, 0
        if i < n and tok[i] == "tag":
            tag = tok[i + 1] if i + 1 < n else ""
            if tag == "-1" and op == "send":
                raise _LineProblem("a send needs an explicit tag; -1 (wildcard) is only for recvs")
            if not (tag.isdigit() or tag == "-1"):
                got = repr(tag) if tag else "nothing"
                raise _LineProblem(f"expected a tag number after 'tag', got {got}")
            i += 2
        if i < n and tok[i] == "cpu":
            cpu = _count(tok, i + 1, "cpu")
            i += 2
        if i < n and tok[i] == "nic":
            nic = _count(tok, i + 1, "nic")
            i += 2
        if i < n:
            hint = (
                " (optional parts come in the order tag, cpu, nic)"
                if tok[i] in ("tag", "cpu", "nic")
                else " (expected tag, cpu or nic)"
            )
            raise _LineProblem(f"unexpected {tok[i]!r} in {op} statement{hint}")
        self.kinds.append(SEND if op == "send" else RECV)
        self.sizes.append(size)
        self.peers.append(peer)
        self.tags.append(tag)
        if cpu or nic:
            self.cpunic.append((nv, cpu, nic))

    def _duplicate(self, lineno: int, label: str, first: int) -> None:
        """A label defined twice in a block; the first definition keeps it (as in txt2bin)."""
        self._problem(
            lineno,
            f"duplicate label {label!r} in rank {self.rank} "
            f"(first defined on line {self._line_of(first)})",
        )

    def _bad_dependency(self, lineno: int, tok: list[str], a: int | None, b: int | None) -> None:
        text = " ".join(tok)
        if a is not None and a == b:
            self._problem(lineno, f"{text!r}: an op cannot depend on itself")
            return
        missing = tok[0] if a is None else tok[2]
        self._problem(
            lineno,
            f"{text!r}: label {missing!r} is not defined before this line in rank {self.rank} "
            "(a dependency may only name ops defined on earlier lines of its block)",
        )

    def _statement(self, line: str, tok: list[str], lineno: int) -> None:
        """Every line the fast path of :meth:`scan` does not take (``tok`` is ``line.split()``)."""
        head, colon, rest = line.partition(":")
        if colon and self.rank >= 0:
            self._labelled_op(head.strip(), rest.split(), line, lineno)
            return
        first = tok[0]
        if first == "num_ranks" and not colon:
            if self.num_ranks is not None:
                raise self._fatal(
                    lineno, f"second 'num_ranks' line (first on line {self.num_ranks_line})"
                )
            if self.rank >= 0 or self.rank_counts:
                raise self._fatal(lineno, "'num_ranks' must come before the first rank block")
            if len(tok) != 2 or not tok[1].isdigit() or int(tok[1]) < 1:
                raise self._fatal(
                    lineno, f"expected 'num_ranks <P>' with P ≥ 1, got {line.strip()!r}"
                )
            self.num_ranks = int(tok[1])
            self.num_ranks_line = lineno
            return
        if (
            first.startswith("rank")
            and not colon
            and (first == "rank" or first[4:5] in "{0123456789")
        ):
            self._open_block(line, lineno)
            return
        if first == "}" and len(tok) == 1:
            if self.rank < 0:
                raise self._fatal(lineno, "'}' outside a rank block")
            self._close_block()
            return
        if self.rank < 0:
            if first.startswith("}"):
                raise self._fatal(lineno, f"unexpected {line.strip()!r} outside a rank block")
            raise self._fatal(
                lineno,
                f"{line.strip()!r} outside a rank block (expected 'num_ranks <P>' or 'rank <r> {{')",
            )
        if first in ("send", "recv", "calc"):
            try:
                self._op(tok, self.nv)
            except _LineProblem as problem:
                self._problem(lineno, str(problem))
                return
            self.vlines.append(lineno)
            self.labels.append("")
            self.nv += 1
            return
        if len(tok) >= 2 and tok[1] in ("requires", "irequires"):
            self._problem(
                lineno,
                f"expected '<A> {tok[1]} <B>' with two labels, got {line.strip()!r}",
            )
            return
        if len(tok) == 3:
            self._problem(
                lineno,
                f"unknown dependency {tok[1]!r} in {line.strip()!r} (expected requires or irequires)",
            )
            return
        self._problem(
            lineno,
            f"unknown statement {line.strip()!r} (expected '<label>: send|recv|calc …', "
            "'<A> requires <B>', '<A> irequires <B>' or '}')",
        )

    def _labelled_op(self, label: str, tok: list[str], line: str, lineno: int) -> None:
        try:
            if not label:
                raise _LineProblem(f"empty label before ':' in {line.strip()!r}")
            self._op(tok, self.nv)
        except _LineProblem as problem:
            self._problem(lineno, str(problem))
            return
        self.vlines.append(lineno)
        self.labels.append(label)
        if self.labels_of_rank.setdefault(label, self.nv) != self.nv:
            self._duplicate(lineno, label, self.labels_of_rank[label])
        self.nv += 1

    def _open_block(self, line: str, lineno: int) -> None:
        if self.rank >= 0:
            raise self._fatal(
                lineno,
                f"rank block opened inside the block of rank {self.rank} "
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
        self.rank = r
        self.block_line = lineno
        self.block_start = self.nv
        self.labels_of_rank = {}
        if closed:
            self._close_block()

    def _close_block(self) -> None:
        self.distinct_labels.update(self.labels_of_rank)
        self.rank_counts.append(self.nv - self.block_start)
        self.rank = -1
        self.labels_of_rank = {}

    # ----------------------------------------------------------------- chunk conversion
    def _flush(self) -> None:
        """Convert the chunk's lists to arrays (the digit strings were checked on the way in)."""
        c = self.chunks
        c["kind"].append(np.array(self.kinds, dtype=np.int8))
        c["vline"].append(np.array(self.vlines, dtype=np.int64))
        for key, values in (("size", self.sizes), ("peer", self.peers), ("tag", self.tags)):
            c[key].append(self._integers(values, key))
        c["cost"].append(np.array(self.costs, dtype=np.float64))
        c["src"].append(np.array(self.e_src, dtype=np.int64))
        c["dst"].append(np.array(self.e_dst, dtype=np.int64))
        c["ekind"].append(np.array(self.e_kind, dtype=np.int8))
        for values in (
            self.kinds,
            self.sizes,
            self.peers,
            self.tags,
            self.costs,
            self.vlines,
            self.e_src,
            self.e_dst,
            self.e_kind,
        ):
            values.clear()

    def _integers(self, values: list[str], what: str) -> np.ndarray:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            # Only overflow can fail here; find the line for the message.
            comm = np.flatnonzero(np.array(self.kinds, dtype=np.int8) != CALC)
            for i, v in enumerate(values):
                if int(v) > _INT64_MAX:
                    line = self.vlines[int(comm[i])]
                    raise TraceError(
                        f"{what} {v} does not fit in 64 bits", path=self.name, line=line
                    ) from None
            raise

    def _line_of(self, vid: int) -> int:
        done = sum(a.size for a in self.chunks["vline"])
        if vid >= done:
            return self.vlines[vid - done]
        return int(np.concatenate(self.chunks["vline"])[vid])

    # ----------------------------------------------------------------- the graph
    def finish(self, last_line: int) -> ExecutionGraph:
        """Check the block structure, match messages, build and validate the graph."""
        if self.rank >= 0:
            raise self._fatal(
                self.block_line, f"block of rank {self.rank} is not closed with '}}' before the end"
            )
        if self.num_ranks is None:
            raise self._fatal(max(last_line, 1), "missing 'num_ranks <P>' line")
        if len(self.rank_counts) < self.num_ranks:
            raise self._fatal(
                max(last_line, 1),
                f"rank {len(self.rank_counts)} has no block: num_ranks is {self.num_ranks} "
                f"but the file ends after {len(self.rank_counts)} block(s)",
            )
        c = {k: np.concatenate(v) for k, v in self.chunks.items()}
        kind, vline = c["kind"], c["vline"]
        n = kind.size
        P = self.num_ranks
        rank = np.repeat(np.arange(P, dtype=np.int32), self.rank_counts)
        labels = np.empty(n, dtype=object)
        labels[:] = self.labels
        self._check_labels(labels, vline)

        comm = kind != CALC
        size = np.zeros(n, dtype=np.int64)
        peer = np.zeros(n, dtype=np.int64)
        tag = np.zeros(n, dtype=np.int64)
        cost = np.zeros(n, dtype=np.float64)
        size[comm], peer[comm], tag[comm] = c["size"], c["peer"], c["tag"]
        cost[~comm] = c["cost"]
        for v in np.flatnonzero(~np.isfinite(cost)):  # e.g. 400 digits: too large for float64
            self._problem(int(vline[v]), "calc cost is too large for a float64 (inf)")
            cost[v] = 0.0

        demote = np.zeros(n, dtype=bool)
        bad = np.flatnonzero(comm & (peer >= P))
        for v in bad:
            what = "destination" if kind[v] == SEND else "source"
            self._problem(
                int(vline[v]), f"{what} rank {peer[v]} is outside 0..{P - 1} (num_ranks {P})"
            )
        demote[bad] = True
        live_kind = np.where(demote, CALC, kind).astype(np.int8)

        pairs_s, pairs_r, resolved = self._match(
            rank, live_kind, size, peer, tag, vline, labels, demote
        )
        kind = np.where(demote, CALC, kind).astype(np.int8)
        for column in (size, peer, tag):
            column[demote] = 0

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
        if self.num_problems:
            meta["warning_count"] = self.num_problems
            meta["warnings"] = [f"{self.name}:{ln}: {why}" for ln, why in self.problems]
        cpu = nic = None
        if self.cpunic:
            vid, cpus, nics = (np.array(x, dtype=np.int64) for x in zip(*self.cpunic, strict=True))
            cpu = np.zeros(n, dtype=np.int16)
            nic = np.zeros(n, dtype=np.int16)
            cpu[vid], nic[vid] = cpus, nics
            nic[kind == CALC] = 0  # ops demoted to calc (lenient) keep their cpu, not a NIC
        return ExecutionGraph.from_arrays(
            P,
            rank=rank,
            kind=kind,
            cost_ns=cost,
            size=size,
            peer=peer,
            tag=tag,
            edge_src=np.concatenate((c["src"], pairs_s)),
            edge_dst=np.concatenate((c["dst"], pairs_r)),
            edge_kind=np.concatenate((c["ekind"], np.full(pairs_s.size, MESSAGE, np.int8))),
            label=labels,
            cpu=cpu,
            nic=nic,
            meta=meta,
        )

    def _check_labels(self, labels: np.ndarray, vline: np.ndarray) -> None:
        """Labels are ``[a-zA-Z][a-zA-Z0-9_]*`` and not a statement keyword (checked in bulk;
        the per-label scan only runs to name the offender)."""
        if _valid_labels(sorted(self.distinct_labels)):
            return
        for v, s in enumerate(self.labels):
            if not s:
                continue
            if s in _STATEMENT_KEYWORDS:
                self._problem(int(vline[v]), f"label {s!r} is a GOAL keyword")
            elif not _LABEL_RE.fullmatch(s):
                self._problem(int(vline[v]), f"label {s!r} is not [a-zA-Z][a-zA-Z0-9_]*")

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
                f"recv {size[r]}b (label {labels[r]!r}, rank {rank[r]}) is matched FIFO with "
                f"send {size[s]}b on line {vline[s]} (label {labels[s]!r}, rank {rank[s]}): "
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
            self._problem(int(vline[v]), f"{what} (rank {rank[v]}, label {labels[v]!r}){more}")
        if lost.size > _MAX_WARNINGS_KEPT and self.lenient:
            self.num_problems += lost.size - _MAX_WARNINGS_KEPT
        demote[lost] = True
        order = np.argsort(sends, kind="stable")
        return sends[order], recvs[order], resolved


def fifo_match(
    rank: np.ndarray, kind: np.ndarray, peer: np.ndarray, tag: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Exact matches: the k-th send ``r → d`` with tag ``t`` (in vertex order) pairs with the k-th
    recv at ``d`` from ``r`` with tag ``t``. Recvs with a negative peer or tag (wildcards) are left
    out. Returns (send ids, recv ids), vectorised (sorts only)."""
    s = np.flatnonzero(kind == SEND)
    r = np.flatnonzero((kind == RECV) & (peer >= 0) & (tag >= 0))
    if s.size == 0 or r.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    src = np.concatenate((rank[s], peer[r])).astype(np.int64)
    dst = np.concatenate((peer[s], rank[r])).astype(np.int64)
    tg = np.concatenate((tag[s], tag[r])).astype(np.int64)
    vid = np.concatenate((s, r))
    side = np.concatenate((np.zeros(s.size, np.int8), np.ones(r.size, np.int8)))
    order = np.lexsort((vid, side, tg, dst, src))  # groups (src, dst, tag), sends first, FIFO
    src, dst, tg, vid, side = src[order], dst[order], tg[order], vid[order], side[order]
    group_start = np.ones(vid.size, dtype=bool)
    group_start[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1]) | (tg[1:] != tg[:-1])
    run_start = group_start.copy()
    run_start[1:] |= side[1:] != side[:-1]
    # occurrence index of each element within its (group, side) run
    idx = np.arange(vid.size)
    occ = idx - np.maximum.accumulate(np.where(run_start, idx, 0))
    group = np.cumsum(group_start) - 1
    key = group * (vid.size + 1) + occ
    is_send = side == 0
    _, i_s, i_r = np.intersect1d(
        key[is_send], key[~is_send], assume_unique=True, return_indices=True
    )
    return vid[is_send][i_s], vid[~is_send][i_r]


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
