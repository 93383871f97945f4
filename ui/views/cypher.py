"""Cypher console: read-only ad hoc queries on the graph store, results as a table and CSV.

Anything but a graph read (writes, files, extensions, settings) is refused before the query
reaches the store (:mod:`llamp.graphdb.readonly`); the store runs the query read-only as well,
in a worker process held to memory and time limits (:mod:`llamp.graphdb.worker`), so a query
that exhausts them or crashes the database ends with a message and the page stays up. ``$run_name`` in a query is bound to the run chosen
here (and ``$run`` to its integer id when the store reports one).
"""

from __future__ import annotations

import decimal
import re

import pandas as pd
import streamlit as st

from llamp import config
from llamp.errors import QueryError
from llamp.graphdb.readonly import write_clauses
from llamp.ui import controls, store_access

#: Example queries (title → Cypher); they run on LadybugDB and Neo4j alike.
EXAMPLES = {
    "Runs": "MATCH (r:Run) WHERE r.complete = true\n"
    "RETURN r.name AS name, r.ranks AS ranks, r.vertices AS vertices, "
    "r.messages AS messages, r.bytes AS bytes\nORDER BY name",
    "Ops per rank": "MATCH (r:Run {name: $run_name})\nMATCH (o:Op) WHERE o.run = r.id\n"
    "RETURN o.rank AS rank, o.kind AS kind, count(*) AS ops\nORDER BY rank, kind",
    "Largest messages": "MATCH (r:Run {name: $run_name})\n"
    "MATCH (s:Op)-[m:MSG]->(d:Op) WHERE s.run = r.id\n"
    "RETURN s.rank AS src, d.rank AS dst, m.size AS bytes, s.tag AS tag, s.vid AS send_vid\n"
    "ORDER BY bytes DESC, send_vid LIMIT 20",
    "Rank-pair traffic": "MATCH (r:Run {name: $run_name})\n"
    "MATCH (s:Op)-[m:MSG]->(d:Op) WHERE s.run = r.id\n"
    "RETURN s.rank AS src, d.rank AS dst, count(*) AS messages, sum(m.size) AS bytes\n"
    "ORDER BY src, dst",
    "Longest computations": "MATCH (r:Run {name: $run_name})\n"
    "MATCH (o:Op) WHERE o.run = r.id AND o.kind = 'calc'\n"
    "RETURN o.rank AS rank, o.seq AS seq, o.cost_ns AS cost_ns\nORDER BY cost_ns DESC LIMIT 20",
}
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def _use(text: str) -> None:
    st.session_state["cypher_text"] = text
    st.session_state.pop("_cypher_result", None)


def displayable(frame: pd.DataFrame) -> pd.DataFrame:
    """Decimal sums (LadybugDB) as numbers, other objects as text, so every column displays."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype != object:
            continue
        values = out[col].dropna()
        if len(values) and all(isinstance(v, decimal.Decimal) for v in values):
            cast = int if all(v == v.to_integral_value() for v in values) else float
            out[col] = out[col].map(lambda v, cast=cast: None if v is None else cast(v))
        elif len(values) and not all(isinstance(v, str | int | float | bool) for v in values):
            out[col] = out[col].map(lambda v: None if v is None else str(v))
    return out


#: Where a store's parser says a syntax error is: LadybugDB ``(line: 3, offset: 0)``, Neo4j
#: ``(line 1, column 13 (offset: 12))``.
_WHERE = re.compile(r"\(line:? (\d+), (?:offset: (\d+)|column (\d+))")


def syntax_error(message: str, query: str) -> tuple[str, str] | None:
    """A store's Cypher syntax error as a person reads it: (what, the query's line with a caret
    under the column), without the parser's expected-token list or grammar rule names; None
    for another error."""
    where = _WHERE.search(message)
    lines = query.splitlines() or [""]
    if where is None or not 1 <= int(where.group(1)) <= len(lines):
        return None
    number = int(where.group(1))
    column = int(where.group(2)) + 1 if where.group(2) is not None else int(where.group(3))
    what = message[: where.start()]
    for prefix in ("Cypher error:", "Parser exception:", "Binder exception:"):
        what = what.replace(prefix, "")
    what = re.split(r"\s+expecting\b|:\s+expected\b", what)[0]
    what = re.sub(r"\boC_\w+", "", what).strip(" :;") or "cannot read the query"
    line = lines[number - 1]
    column = max(1, min(column, len(line) + 1))
    return (
        f"syntax error at line {number}, column {column}: {what}",
        f"{line}\n{' ' * (column - 1)}^",
    )


st.title("Cypher console")
with controls.readable_errors("Query limits"):
    limits = config.query_limits()
    st.caption(
        f"Read-only queries on {store_access.shown()}. Nodes: `Run`, `Op` (`run`, `vid`, `rank`, "
        "`seq`, `kind`, `cost_ns`, `size`, `peer`, `tag`), `Analysis`; relationships `NEXT`, `ISTART`, "
        "`MSG {size}`, `RESULT`. `$run_name` is bound to the run chosen below. Each query runs "
        f"in a worker process limited to {limits.memory_bytes / (1 << 30):g} GiB and "
        f"{limits.timeout_s:g} s (the server's LLAMP_CYPHER_MEMORY and LLAMP_CYPHER_TIMEOUT)."
    )

runs = None
with controls.readable_errors("Reading the graph store"):
    runs = store_access.list_runs()
names = list(runs["name"]) if runs is not None and not runs.empty else []
kept = st.session_state.get("_keep_run")
run_name = (
    st.selectbox(
        "Run for $run_name",
        names,
        index=names.index(kept) if kept in names else 0,
        key="cypher_run",
    )
    if names
    else None
)

st.markdown("**Examples**")
example_cols = st.columns(len(EXAMPLES))
for col, (title, text) in zip(example_cols, EXAMPLES.items(), strict=True):
    col.button(title, key=f"cypher_example_{controls.slug(title)}", on_click=_use, args=(text,))

st.session_state.setdefault("cypher_text", EXAMPLES["Runs"])
cypher = st.text_area("Query", key="cypher_text", height=160)

allow_write = False
if config.ui_settings().admin:
    allow_write = st.checkbox(
        "Allow writes (admin: LLAMP_UI_ADMIN is set)",
        key="cypher_write",
        value=False,
        help="Runs the query read-write, as `llamp cypher --write` does.",
    )

if st.button("Run query", type="primary", key="cypher_run_button", icon=":material/play_arrow:"):
    st.session_state.pop("_cypher_result", None)
    found = [] if allow_write else write_clauses(cypher)
    if found:
        st.error(
            f"Refused: this query would change the store or reach outside it ({', '.join(found)}). "
            "The console runs read-only graph queries only (no writes, files, extensions or "
            "settings); use `llamp cypher --write` for changes."
        )
    elif not cypher.strip():
        st.error("Enter a query first.")
    else:
        wanted = set(_PARAM.findall(cypher))
        params: dict = {}
        if "run_name" in wanted:
            if run_name is None:
                st.error("The query uses $run_name, but the store holds no run.")
                st.stop()
            params["run_name"] = run_name
        if "run" in wanted and run_name is not None and runs is not None and "id" in runs.columns:
            params["run"] = int(runs.loc[runs["name"] == run_name, "id"].iloc[0])
        missing = sorted(wanted - set(params))
        if missing:
            st.error(f"Unbound parameter(s): {', '.join('$' + m for m in missing)}.")
        else:
            with controls.readable_errors("Query"), st.spinner("Running the query…"):
                try:
                    found = store_access.query(cypher, params, write=allow_write)
                except QueryError as err:
                    readable = syntax_error(str(err), cypher)
                    if readable is None:
                        raise
                    st.error(f"Query: {readable[0]}")
                    st.code(readable[1], language=None)
                else:
                    st.session_state["_cypher_result"] = (cypher, displayable(found))

result = st.session_state.get("_cypher_result")
if result is not None:
    text, frame = result
    total = frame.attrs.get("total_rows", len(frame))
    shown = f"the first {len(frame):,} of {total:,}" if total > len(frame) else f"{total:,}"
    st.caption(f"{shown} rows × {len(frame.columns)} columns")
    st.dataframe(frame, hide_index=True, key="cypher_table", width="stretch")
    controls.csv_download(frame, "llamp-query.csv", key="cypher_csv")
