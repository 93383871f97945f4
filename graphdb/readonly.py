"""What an ad hoc read may say: ``llamp cypher`` and the UI console refuse the rest.

Read-only is enforced by the database, not by this module: reads run on a LadybugDB database
opened read-only (or in a ``BEGIN TRANSACTION READ ONLY`` when the process also writes) and in
Neo4j ``READ_ACCESS`` transactions, which refuse every write. A read-only database still reads
files, though (``LOAD FROM '/etc/passwd'``, ``CALL read_csv(…)``; ``read_csv_serial`` even
crashed the process), installs extensions and changes settings, and some Bolt servers
(FalkorDB) ignore the access mode. So a read must also pass this allow-list, checked on the
tokens of the query (string literals, backtick identifiers and comments skipped):

- one statement (a ``;`` may only end it: ``COMMIT; CREATE …`` would leave a read transaction);
- no clause outside :data:`READ_CLAUSES`' world: the words of :data:`DENIED_WORDS` (writes,
  files, extensions, settings, transactions) are refused wherever they stand, except as a
  property (``o.set``), parameter (``$delete``) or label/map key (``:Create``, ``{merge: 1}``);
  an alias that collides (``AS drop``) must be quoted (``AS `drop```);
- every call ``name(`` names a function of :data:`FUNCTIONS`, and ``CALL`` only the procedures
  of :data:`PROCEDURES`;
- letters outside ASCII only inside strings, backticks and comments (no look-alike keywords).

Quotes are read twice, once with and once without backslash escapes, and both readings must
pass: a server that does not treat ``\\'`` as an escape cannot see code this check took for a
string.
"""

from __future__ import annotations

import re

from llamp.errors import QueryError

#: Words that write, touch files or the network, load extensions, change settings or the
#: transaction: refused in a read wherever they stand as a keyword.
DENIED_WORDS = frozenset(
    {
        "CREATE",
        "MERGE",
        "SET",
        "DELETE",
        "DETACH",
        "REMOVE",
        "DROP",
        "COPY",
        "ALTER",
        "LOAD",
        "INSTALL",
        "UNINSTALL",
        "ATTACH",
        "USE",
        "IMPORT",
        "EXPORT",
        "CHECKPOINT",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "FOREACH",
        "GRANT",
        "REVOKE",
        "DENY",
        "UPDATE",
        "COMMENT",
        "ANALYZE",
        "EXTENSION",
        "PROJECT",
        "TERMINATE",
        "STOP",
        "START",
        "SHOW",
        "ENABLE",
        "DISABLE",
        "RENAME",
        "TRUNCATE",
        "INSERT",
        "UPSERT",
        "PERIODIC",
        "TRANSACTION",
        "TRANSACTIONS",
        "EXPLAIN",
        "PROFILE",
    }
)
#: Backwards-compatible name: the words that change the store.
WRITE_CLAUSES = DENIED_WORDS

#: Keywords that may stand before ``(`` without being a call.
KEYWORDS = frozenset(
    {
        "MATCH",
        "OPTIONAL",
        "WHERE",
        "WITH",
        "RETURN",
        "UNWIND",
        "ORDER",
        "BY",
        "SKIP",
        "LIMIT",
        "UNION",
        "ALL",
        "DISTINCT",
        "AS",
        "AND",
        "OR",
        "XOR",
        "NOT",
        "IN",
        "IS",
        "NULL",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "END",
        "ASC",
        "DESC",
        "ASCENDING",
        "DESCENDING",
        "STARTS",
        "ENDS",
        "CONTAINS",
        "TRUE",
        "FALSE",
        "ANY",
        "NONE",
        "SINGLE",
        "EXISTS",
        "COUNT",
        "CALL",
        "YIELD",
        "SHORTEST",
        "ALL_SHORTEST",
        "WSHORTEST",
    }
)
#: Scalar, list and aggregate functions a read may call (lower case; both backends).
FUNCTIONS = frozenset(
    {
        # aggregates
        "count",
        "sum",
        "avg",
        "min",
        "max",
        "collect",
        "stdev",
        "stdevp",
        "percentilecont",
        "percentiledisc",
        # numbers
        "abs",
        "ceil",
        "ceiling",
        "floor",
        "round",
        "sqrt",
        "sign",
        "log",
        "log10",
        "log2",
        "ln",
        "exp",
        "pow",
        "power",
        "cbrt",
        "sin",
        "cos",
        "tan",
        "asin",
        "acos",
        "atan",
        "atan2",
        "pi",
        "e",
        "degrees",
        "radians",
        "least",
        "greatest",
        "isnan",
        "isinf",
        "tointeger",
        "tofloat",
        "tostring",
        "toboolean",
        "tointegerornull",
        "tofloatornull",
        "tostringornull",
        "cast",
        "to_int64",
        "to_int32",
        "to_double",
        "to_float",
        "to_string",
        # text
        "lower",
        "upper",
        "tolower",
        "toupper",
        "trim",
        "ltrim",
        "rtrim",
        "substring",
        "substr",
        "left",
        "right",
        "split",
        "replace",
        "reverse",
        "size",
        "length",
        "string_split",
        "starts_with",
        "ends_with",
        "contains",
        "concat",
        "lpad",
        "rpad",
        "prefix",
        "suffix",
        "regexp_matches",
        "format",
        # graph
        "id",
        "elementid",
        "label",
        "labels",
        "type",
        "keys",
        "properties",
        "nodes",
        "rels",
        "relationships",
        "startnode",
        "endnode",
        "offset",
        "is_trail",
        "is_acyclic",
        "cost",
        "exists",
        "shortestpath",
        "allshortestpaths",
        # lists and maps
        "range",
        "head",
        "last",
        "tail",
        "coalesce",
        "nullif",
        "ifnull",
        "list_transform",
        "list_filter",
        "list_reduce",
        "list_sum",
        "list_product",
        "list_sort",
        "list_reverse_sort",
        "list_distinct",
        "list_unique",
        "list_concat",
        "list_cat",
        "list_contains",
        "list_has",
        "list_extract",
        "list_element",
        "list_slice",
        "list_position",
        "list_append",
        "list_prepend",
        "list_any_value",
        "list_creation",
        "array_length",
        "len",
        "struct_extract",
        "map_extract",
        "element_at",
        "reduce",
        # time
        "date",
        "datetime",
        "localdatetime",
        "time",
        "localtime",
        "timestamp",
        "duration",
        "interval",
        "current_date",
        "current_timestamp",
        "epoch_ms",
        "date_part",
        "datepart",
        "date_trunc",
        "datetrunc",
    }
)
#: Procedures ``CALL`` may name (schema browsing only).
PROCEDURES = frozenset(
    {
        "show_tables",
        "table_info",
        "show_connection",
        "db.labels",
        "db.relationshiptypes",
        "db.propertykeys",
        "db.schema.visualization",
        "dbms.components",
    }
)

_WORD = r"[A-Za-z_][A-Za-z0-9_]*"
_COMMON = rf"""
    | (?P<quoted>`(?:[^`]|``)*`)                   # backtick identifiers
    | (?P<comment>//[^\n]*|/\*.*?\*/)              # comments
    | (?P<word>{_WORD})
    | (?P<space>[ \t\r\n\f\v]+)
    | (?P<other>.)
"""
_TOKEN_ESCAPES = re.compile(
    r"""(?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""" + _COMMON, re.VERBOSE | re.DOTALL
)
_TOKEN_PLAIN = re.compile(r"""(?P<string>'[^']*'|"[^"]*")""" + _COMMON, re.VERBOSE | re.DOTALL)


def _tokens(cypher: str, pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    out = []
    for match in pattern.finditer(cypher):
        kind = match.lastgroup or "other"
        if kind not in ("space", "comment"):
            out.append((kind, match.group()))
    return out


def _problems(tokens: list[tuple[str, str]]) -> list[str]:
    found: list[str] = []

    def add(what: str) -> None:
        if what not in found:
            found.append(what)

    n = len(tokens)
    for i, (kind, text) in enumerate(tokens):
        before = tokens[i - 1][1] if i else ""
        after = tokens[i + 1][1] if i + 1 < n else ""
        if kind == "other":
            if text == ";" and any(k != "other" or t != ";" for k, t in tokens[i + 1 :]):
                add("several statements")
            elif not text.isascii():
                add(f"the character {text!r} outside a string")
            continue
        if kind != "word":
            continue
        word = text.upper()
        is_property = before in (".", "$")
        is_label_or_key = before == ":" or (after == ":" and before in ("{", ","))
        if after == "(" and before == ".":
            name = _dotted_back(tokens, i)  # a namespaced call: apoc.load.json(…)
            if name.lower() not in FUNCTIONS and name.lower() not in PROCEDURES:
                add(f"the function {name}()")
            continue
        if is_property:
            continue
        if word in DENIED_WORDS and not is_label_or_key:
            add(word)
            continue
        if word == "CALL":
            name = _dotted(tokens, i + 1)
            if name.lower() not in PROCEDURES:
                add(f"CALL {name or after}")
            continue
        if after == "(" and word not in KEYWORDS and not is_label_or_key:
            name = _dotted_back(tokens, i)
            if name.lower() not in FUNCTIONS and name.lower() not in PROCEDURES:
                add(f"the function {name}()")
    return found


def _dotted(tokens: list[tuple[str, str]], i: int) -> str:
    """The dotted name starting at token ``i`` (``db.labels``)."""
    parts = []
    while i < len(tokens) and tokens[i][0] == "word":
        parts.append(tokens[i][1])
        if not (i + 2 < len(tokens) and tokens[i + 1][1] == "."):
            break
        i += 2
    return ".".join(parts)


def _dotted_back(tokens: list[tuple[str, str]], i: int) -> str:
    """The dotted name ending at token ``i`` (``apoc.load.json``)."""
    parts = [tokens[i][1]]
    while i >= 2 and tokens[i - 1][1] == "." and tokens[i - 2][0] == "word":
        parts.insert(0, tokens[i - 2][1])
        i -= 2
    return ".".join(parts)


def write_clauses(cypher: str) -> list[str]:
    """What ``cypher`` may not do in a read (denied words upper case, calls, several
    statements), in order of first occurrence, no repeats; ``[]`` for an allowed read."""
    found: list[str] = []
    for pattern in (_TOKEN_ESCAPES, _TOKEN_PLAIN):
        for item in _problems(_tokens(cypher, pattern)):
            if item not in found:
                found.append(item)
    return found


def check_read_only(cypher: str) -> None:
    """Raise :class:`QueryError` naming what ``cypher`` may not do in a read, if anything."""
    found = write_clauses(cypher)
    if found:
        raise QueryError(
            f"this query is not an allowed read ({', '.join(found)}); ad hoc queries read "
            "the graph only (no writes, files, extensions or settings) unless you pass "
            "--write (write=True)"
        )


__all__ = [
    "DENIED_WORDS",
    "FUNCTIONS",
    "PROCEDURES",
    "WRITE_CLAUSES",
    "check_read_only",
    "write_clauses",
]
