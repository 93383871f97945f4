"""Runs: the runs in the graph store; ingest a trace (upload or server path); delete a run."""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import streamlit as st

from llamp import config
from llamp.config import DEFAULT_HOST_SPEED_FLOPS, format_flop_rate
from llamp.errors import InputError, LlampError
from llamp.ingest import confine
from llamp.ui import controls, display, store_access, uploads

settings = config.ui_settings()
st.title("Runs")
st.caption(f"Graph store: {store_access.shown()}")

notice = st.session_state.pop("_runs_notice", None)
if notice:
    st.success(notice[0])
    for line in notice[1]:
        st.warning(line)

# ---------------------------------------------------------------------- stored runs
runs = None
with controls.readable_errors("Reading the graph store"):
    runs = store_access.list_runs()
    if runs.empty:
        st.info("The store holds no run yet: ingest a trace below.")
    else:
        controls.table(
            runs[[c for c in runs.columns if c != "id" and not c.startswith("has_")]],
            labels={"bytes": "sent", "created": "stored"},
            width="stretch",
            column_config={
                "sent (B)": st.column_config.NumberColumn(help="Bytes sent in all messages"),
                "vertices": st.column_config.NumberColumn(help="calc + send + recv ops"),
            },
            key="runs_table",
        )
        controls.csv_download(runs, "llamp-runs.csv", key="runs_csv")


# ---------------------------------------------------------------------- ingest
def server_source(text: str, roots: tuple[Path, ...]) -> tuple[Path, Path]:
    """The trace at ``text`` on the server and the configured root it lies below; anything
    outside ``LLAMP_UI_SERVER_ROOTS`` (after resolving links and ``..``) is refused."""
    if not roots:
        raise InputError("reading paths on the server is off (set LLAMP_UI_SERVER_ROOTS)")
    if not text.strip():
        raise InputError("enter the path of a trace directory, .goal or .npz file")
    source = Path(text.strip()).expanduser()
    resolved = source.resolve()
    root = next((r for r in roots if resolved == r or r in resolved.parents), None)
    if root is None:
        raise InputError(
            f"{str(source)[:100]}: outside the directories this UI may read "
            f"({', '.join(str(r) for r in roots)})"
        )
    if not resolved.exists():
        raise InputError(f"{str(source)[:100]}: no such file or directory on the server")
    return resolved, root


def _ingest(
    source: Path,
    name: str,
    collectives: str,
    host_speed: str,
    lenient: bool,
    replace: bool,
    bar,
    staging: str | None = None,
    hidden: str | None = None,
) -> None:
    from llamp.ingest import read
    from llamp.ingest.events import IngestWarning

    bar.progress(20, text=f"Reading {source.name} and building the execution graph…")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = read(
            source,
            collectives=config.parse_collectives(collectives, what="collective algorithms"),
            lenient=lenient,
            name=name,
            host_speed=host_speed.strip() or None,
        )
    lines = [str(w.message) for w in caught if not issubclass(w.category, IngestWarning)]
    lines += list(graph.meta.get("warnings", []) or [])
    for folder in (f for f in (staging, hidden) if f):  # files as uploaded, not where staged
        lines = [line.replace(folder + os.sep, "").replace(folder, ".") for line in lines]
    if staging and isinstance(graph.meta.get("files"), list):  # as uploaded, not staged
        graph.meta["files"] = [str(f).replace(staging + os.sep, "") for f in graph.meta["files"]]
    summary = graph.summary()
    bar.progress(60, text=f"Storing {summary.vertices:,} vertices and {summary.edges:,} edges…")
    store_access.put_run(graph, name, replace=replace)
    bar.progress(100, text="Stored.")
    st.session_state["_runs_notice"] = (
        f"Stored run {name!r}: {summary.ranks} ranks, {summary.vertices:,} vertices, "
        f"{summary.messages:,} messages ({display.size(summary.bytes)}).",
        lines[:20] + ([f"… and {len(lines) - 20} more warnings"] if len(lines) > 20 else []),
    )
    controls.choose_run(name)  # the analysis pages open on the new run


if settings.read_only:
    st.info("This UI is read-only (LLAMP_UI_READ_ONLY): ingest traces with `llamp ingest`.")
else:
    st.subheader("Ingest a trace")
    source_kind = st.radio(
        "Source",
        ["Upload files", "Path on the server"] if settings.server_roots else ["Upload files"],
        horizontal=True,
        key="ingest_source",
        label_visibility="collapsed",
    )
    files = []
    server_path = ""
    if source_kind == "Upload files":
        files = (
            st.file_uploader(
                "Trace files",
                type=uploads.UPLOAD_TYPES,
                accept_multiple_files=True,
                key="ingest_files",
                help=uploads.UPLOAD_HELP,
            )
            or []
        )
        default_name = uploads.default_run_name([uploads.Upload(f.name, b"") for f in files])
        st.caption(
            f"Up to {settings.max_upload_bytes >> 20:,} MB per upload, archives up to "
            f"{settings.max_unpacked_bytes >> 20:,} MB unpacked and {settings.max_files:,} files."
        )
    else:
        server_path = st.text_input(
            "Path on the server",
            key="ingest_path",
            placeholder="/data/traces/lulesh-64 (a trace directory, .goal or .npz)",
            help="Below: " + ", ".join(str(r) for r in settings.server_roots),
        )
        default_name = Path(server_path.strip()).name.removesuffix(".goal").removesuffix(".npz")
        if server_path.strip():
            from llamp.ingest import default_name as trace_default_name

            try:  # the trace's own name (a SimGrid list file: its stem, not its folder's)
                source_path, _ = server_source(server_path, settings.server_roots)
                default_name = trace_default_name(source_path)
            except LlampError:
                pass  # the Ingest button reports what is wrong with the path

    left, right = st.columns(2)
    with left:
        run_name = (
            st.text_input(
                "Run name", key="ingest_name", placeholder=default_name or "name of the stored run"
            ).strip()
            or default_name
        )
        collectives = st.text_input(
            "Collective algorithms",
            key="ingest_collectives",
            placeholder="defaults as Schedgen; e.g. allreduce=ring,bcast=binomial",
        )
        host_speed = st.text_input(
            "Host speed (SimGrid TI traces)",
            key="ingest_host_speed",
            placeholder=f"{format_flop_rate(DEFAULT_HOST_SPEED_FLOPS)} (default); e.g. 500Mf, 20kf",
            help="The flop rate that turns a SimGrid time-independent trace's compute flops into "
            "time, in SimGrid's notation (f, kf, Mf, Gf, Tf, or flop/s as a number). The default "
            "is the host speed of SimGrid's example clusters; give the smpi/host-speed the trace "
            "was recorded with to get the traced run's compute times back. Other formats carry "
            "times, not flops: leave it empty for them.",
        )
    with right:
        lenient = st.checkbox("Lenient: turn per-line problems into warnings", key="ingest_lenient")
        replace = st.checkbox("Replace an existing run of the same name", key="ingest_replace")

    if st.button("Ingest", type="primary", key="ingest_button", icon=":material/upload:"):
        bar = st.progress(0, text="Preparing the input…")
        done = False
        with (
            controls.readable_errors("Ingest"),
            tempfile.TemporaryDirectory(prefix="llamp-ui-") as tmp,
        ):
            try:
                if not run_name:
                    raise InputError(
                        "give the run a name (e.g. the application and its rank count)"
                    )
                if source_kind == "Upload files":
                    if not files:
                        raise InputError("choose trace files to upload first")
                    bar.progress(5, text="Saving the upload…")
                    source = uploads.stage(
                        [uploads.Upload(f.name, f.getvalue()) for f in files], Path(tmp), run_name
                    )
                    root = Path(tmp)
                else:
                    source, root = server_source(server_path, settings.server_roots)
                with confine.confined_to(root):  # every path a reader follows stays inside
                    # uploaded files are named relative to the folder they were staged in
                    upload_dir = source if Path(source).is_dir() else Path(source).parent
                    staging = str(upload_dir) if source_kind == "Upload files" else None
                    _ingest(
                        source,
                        run_name,
                        collectives,
                        host_speed,
                        lenient,
                        replace,
                        bar,
                        staging,
                        tmp if source_kind == "Upload files" else None,
                    )
            except LlampError as err:
                # Name uploaded files as the user knows them, not by the staging directory.
                raise InputError(str(err).replace(tmp + os.sep, "")) from None
            done = True
        if done:
            st.rerun()
        bar.empty()

# ---------------------------------------------------------------------- delete
if runs is not None and not runs.empty and not settings.read_only:
    st.subheader("Delete a run")
    names = list(runs["name"])
    pending = st.session_state.get("_delete_pending")
    victim = st.selectbox("Run to delete", names, key="delete_name")
    if pending not in names:
        if st.button("Delete…", key="delete_button", icon=":material/delete:"):
            st.session_state["_delete_pending"] = victim
            st.rerun()
    else:
        st.warning(
            f"Delete run {pending!r} and the analyses stored with it? This cannot be undone."
        )
        yes, no = st.columns(2)
        if yes.button(f"Yes, delete {pending!r}", type="primary", key="delete_confirm"):
            st.session_state.pop("_delete_pending", None)
            with controls.readable_errors(f"Deleting {pending!r}"):
                store_access.delete_run(pending)
                st.session_state["_runs_notice"] = (f"Deleted run {pending!r}.", [])
                st.rerun()
        if no.button("Cancel", key="delete_cancel"):
            st.session_state.pop("_delete_pending", None)
            st.rerun()
