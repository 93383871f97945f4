"""Is a Cypher text read-only? ``llamp cypher`` and the UI console refuse writes by default.

The check tokenises the query instead of searching substrings: string literals, backtick
identifiers and comments are skipped, and a keyword used as a property (``o.set``), label
(``:Create``), parameter (``$delete``), map key (``{merge: 1}``) or alias (``AS drop``) does
not count. The Neo4j backend also runs unapproved queries in a read-access transaction, so
the server refuses a write this check could miss.
"""

from __future__ import annotations

import re

from llamp.errors import QueryError

#: Clauses that change the store, its schema or files, or the session's transaction state.
WRITE_CLAUSES = frozenset(
    {
        "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "COPY", "ALTER",
        "LOAD", "INSTALL", "ATTACH", "IMPORT", "EXPORT", "CHECKPOINT", "BEGIN", "COMMIT",
        "ROLLBACK", "FOREACH", "GRANT", "REVOKE", "DENY",
    }
)

_TOKEN = re.compile(
    r"""
    (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")   # string literals with escapes
    | (?P<quoted>`(?:[^`]|``)*`)                        # backtick identifiers
    | (?P<comment>//[^\n]*|/\*.*?\*/)                   # comments
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<space>\s+)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def write_clauses(cypher: str) -> list[str]:
    """The write clauses in ``cypher`` (upper case, first occurrence order, no repeats)."""
    tokens: list[tuple[str, str]] = []
    for match in _TOKEN.finditer(cypher):
        kind = match.lastgroup or "other"
        if kind in ("space", "comment"):
            continue
        tokens.append((kind, match.group()))
    found: list[str] = []
    for i, (kind, text) in enumerate(tokens):
        if kind != "word" or text.upper() not in WRITE_CLAUSES:
            continue
        before = tokens[i - 1][1] if i else ""
        after = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if before in (".", ":", "$") or after == ":":
            continue  # property, label/relationship type, parameter, map key
        if before.upper() == "AS" and tokens[i - 1][0] == "word":
            continue  # alias
        word = text.upper()
        if word not in found:
            found.append(word)
    return found


def check_read_only(cypher: str) -> None:
    """Raise :class:`QueryError` naming the write clauses of ``cypher``, if it has any."""
    found = write_clauses(cypher)
    if found:
        raise QueryError(
            f"this query changes the store ({', '.join(found)}); queries are read-only unless "
            "you pass --write (write=True)"
        )


__all__ = ["WRITE_CLAUSES", "check_read_only", "write_clauses"]
