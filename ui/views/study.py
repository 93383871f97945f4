"""Studies: pick a study run with ``llamp study``, see its runs × networks matrix of T,
tolerance or λ_L as a heatmap, sort and filter it, and open a cell's run on the Latency page
with that cell's parameters.

The stored cells are read once per page run (one query, no cache), so a study written by
``llamp study`` while the page is open shows at the next interaction."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from llamp.graphdb.studies import LABELS, column_labels, study_cells, study_matrix, summarise
from llamp.params import LogGPS
from llamp.ui import controls, plots, store_access

st.title("Studies")
st.caption(
    "Runs × networks × what-ifs computed by `llamp study SPEC.yaml`; one stored analysis per "
    "cell. Pick a quantity to colour the matrix, then open a cell on the Latency page."
)


every = None
with controls.readable_errors("Cannot read the graph store"):
    with store_access.connect() as store:
        every = study_cells(store)
if every is None:
    st.stop()
listing = summarise(every)
if listing.empty:
    st.info(
        "The store holds no study yet: run one with `llamp study SPEC.yaml` "
        "(e.g. examples/study.yaml)."
    )
    st.stop()
st.dataframe(listing, hide_index=True, width="stretch")

name = st.selectbox("Study", listing["study"].tolist(), key="study_name")
# the columns of this study only (the others' scalars are empty here)
cells = every[every["study"] == name].dropna(axis=1, how="all").reset_index(drop=True)
analyses = sorted(cells["analysis"].unique())
c1, c2, c3, c4 = st.columns(4)
analysis = c1.selectbox("Analysis", analyses, key="study_analysis")
mine = cells[cells["analysis"] == analysis]
skip = {*LABELS, "stored_run", "analysis_id", "created", "S_bytes"}
numeric = [
    c
    for c in mine.columns
    if c not in skip
    and pd.api.types.is_numeric_dtype(pd.to_numeric(mine[c], errors="coerce"))
    and pd.to_numeric(mine[c], errors="coerce").notna().any()
]
preferred = [
    m for m in ("runtime_ns", "baseline_ns", "tolerance_1pct_L_ns", "lambda_L") if m in numeric
]
metric = c2.selectbox(
    "Quantity", numeric, index=numeric.index(preferred[0]) if preferred else 0, key="study_metric"
)
log = c3.toggle("Logarithmic colours", key="study_log")
relative = c4.toggle(
    "Relative to each run's best",
    value=True,
    key="study_relative",
    help="Colour by value / the run's smallest value, so runs of different scales compare.",
)

f1, f2, f3 = st.columns(3)
runs = f1.multiselect("Runs", sorted(mine["run"].unique()), key="study_runs")
networks = f2.multiselect("Networks", sorted(mine["network"].unique()), key="study_networks")
order = f3.selectbox("Sort runs by", ["name", f"mean {metric}", f"max {metric}"], key="study_sort")
if runs:
    mine = mine[mine["run"].isin(runs)]
if networks:
    mine = mine[mine["network"].isin(networks)]
matrix = study_matrix(mine, metric)
if matrix.empty:
    st.info("No cell of this analysis has that quantity.")
    st.stop()
if order.startswith("mean"):
    matrix = matrix.loc[matrix.mean(axis=1).sort_values().index]
elif order.startswith("max"):
    matrix = matrix.loc[matrix.max(axis=1).sort_values().index]
else:
    matrix = matrix.sort_index()

event = st.plotly_chart(
    plots.study_heatmap(matrix, metric, log=log, relative=relative),
    width="stretch",
    on_select="rerun",
    selection_mode="points",
    key="study_heatmap",
)
st.dataframe(matrix, width="stretch")
controls.csv_download(
    mine.drop(columns=["analysis_id"]),
    f"{controls.slug(name)}.csv",
    key="study_csv",
    label="Download the cells (CSV)",
)

# ---------------------------------------------------------------------- open a cell
st.subheader("Open a cell")
mine = mine.assign(_column=column_labels(mine).to_numpy())
mine = mine.assign(_label=mine["run"] + " on " + mine["_column"])
labels = mine["_label"].tolist()
picked = None
points = (event or {}).get("selection", {}).get("points", []) if event else []
if points:  # a click on the heatmap: the cell of that run (y) and column (x)
    x, y = str(points[0].get("x")), str(points[0].get("y"))
    hit = mine[(mine["run"] == y) & (mine["_column"] == x)]
    picked = hit["_label"].iloc[0] if len(hit) else None
    if picked is not None and st.session_state.get("_study_click") != (x, y):
        st.session_state["_study_click"] = (x, y)  # a new click moves the picker, once
        st.session_state["study_cell"] = picked
if st.session_state.get("study_cell") not in labels:
    st.session_state.pop("study_cell", None)  # another study or filter: start from the first
choice = st.selectbox("Cell (or click it in the matrix)", labels, key="study_cell")
row = mine[mine["_label"] == choice].iloc[0]
params = LogGPS(
    L=float(row["L_ns"]), o=float(row["o_ns"]), G=float(row["G_ns_per_byte"]), S=int(row["S_bytes"])
)
st.caption(
    f"Stored run **{row['stored_run']}** · {controls.describe(params)}"
    + (f" · topology {row['topology']}" if row.get("topology") else "")
)
if st.button("Open on the Latency page", key="study_open", icon=":material/open_in_new:"):
    controls.choose_run(str(row["stored_run"]))
    controls.choose_params(params)
    st.switch_page("views/latency.py")
