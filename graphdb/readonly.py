"""What an ad hoc query may say: ``llamp cypher``, ``llamp query`` and the UI console refuse
the rest before any database parses it.

Read-only is enforced by the database, not by this module: reads run on a LadybugDB database
opened read-only (or in a ``BEGIN TRANSACTION READ ONLY`` when the process also writes) and in
Neo4j ``READ_ACCESS`` transactions, which refuse every write. A read-only database still reads
files, though (``LOAD FROM '/etc/passwd'``, ``CALL read_csv(…)``; ``read_csv_serial`` even
crashed the process), installs extensions and changes settings; and Neo4j Community's
``READ_ACCESS`` still runs read procedures of any plugin installed. So a read must also pass
this allow-list, checked on the
tokens of the query (string literals and comments skipped, backtick names read as names):

- one statement (a ``;`` may only end it: ``COMMIT; CREATE …`` would leave a read transaction);
- no clause outside :data:`READ_CLAUSES`' world: the words of :data:`DENIED_WORDS` (writes,
  files, extensions, settings, transactions) are refused wherever they stand, except as a
  property (``o.set``), parameter (``$delete``) or label/map key (``:Create``, ``{merge: 1}``);
  an alias that collides (``AS drop``) must be quoted (``AS `drop```);
- every name right before ``(`` is a call wherever it stands (after ``:`` as a map's value
  too, in backticks too: ```repeat`(…)``), unless it is a keyword, and must name a function
  of :data:`FUNCTIONS` (a type of :data:`PARAMETERISED_TYPES` right after ``AS`` is a type:
  ``cast(x AS DECIMAL(18, 3))``); ``CALL`` only the procedures of :data:`PROCEDURES`;
- letters outside ASCII only inside strings, backticks and comments (no look-alike keywords).

Quotes are read twice, once with and once without backslash escapes, and both readings must
pass: a server that does not treat ``\\'`` as an escape cannot see code this check took for a
string. Both readings take linear time: an opener that is never closed is one character of
code, and is not searched for again.

Every query, read or write, must also have a shape the database can afford
(:func:`check_shape`, before it is parsed): valid UTF-8, at most
:attr:`~llamp.config.QueryLimits.max_chars` characters, brackets nested at most
:attr:`~llamp.config.QueryLimits.max_depth` deep, and every variable-length relationship
pattern bounded by at most :attr:`~llamp.config.QueryLimits.max_hops` hops. What a query
then costs to run is held by the worker's memory and time limits
(:mod:`llamp.graphdb.worker`).
"""

from __future__ import annotations

import functools
import re

from llamp.config import QueryLimits
from llamp.errors import QueryError, quote

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
#: Types that take arguments, named right after ``AS`` in a cast (``cast(x AS DECIMAL(18, 3))``,
#: ``STRUCT(a INT64)``): there a name before ``(`` is a type, not a call (an alias is never
#: followed by ``(``).
PARAMETERISED_TYPES = frozenset({"decimal", "numeric", "struct", "map", "union"})
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

_OPEN, _CLOSE = "([{", ")]}"

Token = tuple[str, str]


@functools.cache
def _pattern(escapes: bool, unclosed: frozenset[str]) -> re.Pattern[str]:
    """One token at a time. An opener (quote, backtick, ``/*``) whose closing is missing
    matches as ``open`` up to the end of the text; the openers in ``unclosed`` have no
    alternative here, so each is one ``other`` character (see :func:`_tokens`)."""
    closed, open_ = [], []
    for q in ("'", '"'):
        if q not in unclosed:
            body = rf"(?:[^{q}\\]|\\.)*+" if escapes else rf"[^{q}]*+"
            closed.append(rf"{q}{body}{q}")
            open_.append(rf"{q}{body}\\?\Z")  # a lone backslash may end the text
    quoted = r"(?>`[^`]*+`)+"
    if "`" not in unclosed:
        open_.append(r"`[^`]*+\Z")
    block = r"|/\*.*?\*/" if "/*" not in unclosed else ""
    if "/*" not in unclosed:
        open_.append(r"/\*.*+\Z")
    return re.compile(
        rf"""(?P<string>{"|".join(closed) or "(?!)"})
        | (?P<quoted>{quoted if "`" not in unclosed else "(?!)"})
        | (?P<comment>//[^\n]*+{block})
        | (?P<open>{"|".join(open_) or "(?!)"})
        | (?P<word>[A-Za-z_][A-Za-z0-9_]*+)
        | (?P<number>[0-9]++(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
        | (?P<space>[ \t\r\n\f\v]++)
        | (?P<other>.)""",
        re.VERBOSE | re.DOTALL,
    )


def _tokens(cypher: str, escapes: bool) -> list[Token]:
    """The query's tokens (``string``, ``quoted``, ``word``, ``number``, ``other`` for one
    character), spaces and comments dropped, strings read with or without backslash escapes.

    Linear time: a quote, backtick or ``/*`` that is never closed is one ``other`` character,
    and the scan goes on after it, as it would for code; such an opener is not searched for
    again (nothing closes a later one either: for escaped strings because the failed search
    ends every backslash pair where a later one would)."""
    out: list[Token] = []
    unclosed: frozenset[str] = frozenset()
    pos = 0
    while True:
        for match in _pattern(escapes, unclosed).finditer(cypher, pos):
            kind = match.lastgroup or "other"
            if kind == "open":
                opener = "/*" if match.group().startswith("/*") else match.group()[0]
                out.extend(("other", c) for c in opener)
                unclosed = unclosed | {opener}
                pos = match.start() + len(opener)
                break
            if kind not in ("space", "comment"):
                out.append((kind, match.group()))
        else:
            return out


def _name(token: Token) -> str:
    """A word, or a backtick name without its backticks."""
    kind, text = token
    return text[1:-1].replace("``", "`") if kind == "quoted" else text


def _is_name(token: Token) -> bool:
    return token[0] in ("word", "quoted")


def _problems(tokens: list[Token]) -> list[str]:
    found: list[str] = []

    def add(what: str) -> None:
        if what not in found:
            found.append(what)

    n = len(tokens)
    last_code = max((i for i in range(n) if tokens[i] != ("other", ";")), default=-1)
    for i, token in enumerate(tokens):
        kind, text = token
        before = tokens[i - 1][1] if i else ""
        after = tokens[i + 1][1] if i + 1 < n else ""
        if kind == "other":
            if text == ";" and i < last_code:
                add("several statements")
            elif not text.isascii():
                add(f"the character {text!r} outside a string")
            continue
        if not _is_name(token):
            continue
        if kind == "word" and not (
            before == "$" or (before == "." and i >= 2 and tokens[i - 2][0] != "number")
        ):
            word = text.upper()
            is_label_or_key = before == ":" or (after == ":" and before in ("{", ","))
            if word in DENIED_WORDS and not is_label_or_key:
                add(word)
                continue
            if word == "CALL":
                name = _dotted(tokens, i + 1)
                if name.lower() not in PROCEDURES:
                    add(f"CALL {name or after}")
                continue
        if after == "(" and tokens[i + 1][0] == "other":
            # A name right before "(" is a call wherever it stands (after ":" in a map too),
            # backticks or not; only keywords may stand there without calling anything.
            if kind == "word" and before.upper() == "AS" and text.lower() in PARAMETERISED_TYPES:
                continue
            if kind == "quoted" or before == "." or text.upper() not in KEYWORDS:
                name = _dotted_back(tokens, i)
                if name.lower() not in FUNCTIONS and name.lower() not in PROCEDURES:
                    add(f"the function {name}()")
    return found


def _dotted(tokens: list[Token], i: int) -> str:
    """The dotted name starting at token ``i`` (``db.labels``, ```db`.labels``)."""
    parts = []
    while i < len(tokens) and _is_name(tokens[i]):
        parts.append(_name(tokens[i]))
        if not (i + 2 < len(tokens) and tokens[i + 1][1] == "."):
            break
        i += 2
    return ".".join(parts)


def _dotted_back(tokens: list[Token], i: int) -> str:
    """The dotted name ending at token ``i`` (``apoc.load.json``)."""
    parts = [_name(tokens[i])]
    while i >= 2 and tokens[i - 1][1] == "." and _is_name(tokens[i - 2]):
        parts.append(_name(tokens[i - 2]))
        i -= 2
    return ".".join(reversed(parts))


def write_clauses(cypher: str) -> list[str]:
    """What ``cypher`` may not do in a read (denied words upper case, calls, several
    statements), in order of first occurrence, no repeats; ``[]`` for an allowed read."""
    found: list[str] = []
    for escapes in (True, False):
        for item in _problems(_tokens(cypher, escapes)):
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


def _depth(tokens: list[Token]) -> int:
    deepest = depth = 0
    for kind, text in tokens:
        if kind != "other":
            continue
        if text in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif text in _CLOSE and depth:
            depth -= 1
    return deepest


def _hops(tokens: list[Token], max_hops: int) -> str | None:
    """The first variable-length relationship pattern (``-[e:MSG*1..40]->``) without an
    upper bound or with one above ``max_hops``, as written; None if there is none. A
    pattern is a ``[`` right after ``-`` or ``<``; its ``*`` at its own level starts the
    length: ``*``, ``*N``, ``*N..``, ``*..M``, ``*N..M``, after an optional SHORTEST / ALL
    SHORTEST / TRAIL / ACYCLIC word. One pass, a stack of the open brackets."""
    stack: list[bool] = []  # per open bracket: is it a relationship pattern's "["
    for j, (kind, text) in enumerate(tokens):
        if kind != "other":
            continue
        if text in _OPEN:
            stack.append(text == "[" and j > 0 and tokens[j - 1][1] in ("-", "<"))
        elif text in _CLOSE:
            if stack:
                stack.pop()
        elif text == "*" and stack and stack[-1]:
            problem = _star_problem(tokens, j, max_hops)
            if problem is not None:
                return problem
    return None


def _star_problem(tokens: list[Token], j: int, max_hops: int) -> str | None:
    k = j + 1
    while k < len(tokens) and tokens[k][0] == "word":
        k += 1  # SHORTEST, ALL SHORTEST, TRAIL, ACYCLIC
    text = [t for _, t in tokens[j:k]]
    numbers: list[str] = []
    dots = False
    while k < len(tokens) and (tokens[k][0] == "number" or tokens[k][1] == "."):
        if tokens[k][0] == "number":
            if "." in tokens[k][1]:  # "1..3" never tokenises so; "1.5" is no bound
                return "*" + "".join(t for _, t in tokens[j + 1 : k + 1])
            numbers.append(tokens[k][1])
        else:
            dots = True
        text.append(tokens[k][1])
        k += 1
    shown = "".join(text)
    if not numbers or (dots and len(numbers) == 1 and tokens[k - 1][0] != "number"):
        return shown  # no upper bound: "*", "*2.."
    upper = int(numbers[-1]) if "e" not in numbers[-1].lower() else max_hops + 1
    return shown if upper > max_hops else None


def check_shape(cypher: str, limits: QueryLimits) -> None:
    """Refuse, before any database parses it, a query that is not valid UTF-8 text, longer
    than ``limits.max_chars``, nested deeper than ``limits.max_depth`` or with a
    variable-length pattern longer than ``limits.max_hops`` (or unbounded): one linear scan.
    The message names the limit and how to raise it."""
    try:
        cypher.encode("utf-8")
    except UnicodeEncodeError as err:
        char = cypher[err.start]
        what = (
            f"byte 0x{ord(char) - 0xDC00:02x}"
            if 0xDC80 <= ord(char) <= 0xDCFF
            else f"character U+{ord(char):04X}"
        )
        raise QueryError(
            f"the query is not valid UTF-8 text ({what} at character {err.start + 1})"
        ) from None
    if len(cypher) > limits.max_chars:
        raise QueryError(
            f"the query has {len(cypher)} characters, more than the limit of "
            f"{limits.max_chars} (raise it with LLAMP_CYPHER_MAX_CHARS)"
        )
    tokens = _tokens(cypher, True)
    depth = _depth(tokens)
    if depth > limits.max_depth:
        raise QueryError(
            f"the query nests brackets {depth} deep, more than the limit of "
            f"{limits.max_depth} (raise it with LLAMP_CYPHER_MAX_DEPTH)"
        )
    pattern = _hops(tokens, limits.max_hops)
    if pattern is not None:
        raise QueryError(
            f"the variable-length pattern [{quote(pattern, 40)}] may follow more than "
            f"{limits.max_hops} relationships: give an upper bound of at most "
            f"{limits.max_hops} (e.g. *1..{limits.max_hops}), or raise the limit with "
            "LLAMP_CYPHER_MAX_HOPS"
        )


__all__ = [
    "DENIED_WORDS",
    "FUNCTIONS",
    "PROCEDURES",
    "WRITE_CLAUSES",
    "check_read_only",
    "check_shape",
    "write_clauses",
]
