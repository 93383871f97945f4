"""``llamp ui``: serve the Streamlit web UI (docs/architecture.md §UI) on the configured graph store."""

from __future__ import annotations

import os
import sys

import click

from llamp.cli.base import cli
from llamp.config import llamp_home, redact, ui_settings


def streamlit_command(app: str, port: int, address: str, max_upload_mb: int) -> list[str]:
    """The ``streamlit run`` command line: headless, no telemetry, no stack traces in pages."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        app,
        "--server.headless=true",
        f"--server.port={port}",
        f"--server.address={address}",
        f"--server.maxUploadSize={max_upload_mb}",
        "--server.fileWatcherType=none",
        "--browser.gatherUsageStats=false",
        "--client.showErrorDetails=none",
        "--client.toolbarMode=minimal",
        "--theme.base=light",
    ]


@cli.command("ui")
@click.option("--port", default=8501, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--address",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on (0.0.0.0 for every interface, e.g. inside a container).",
)
@click.option(
    "--store",
    "ui_store",
    default=None,
    help="Graph store for the UI (overrides llamp --store and $LLAMP_STORE).",
)
@click.option(
    "--max-upload-mb",
    default=None,
    type=click.IntRange(1, 1 << 20),
    help="Largest trace upload, all files together (default $LLAMP_UI_MAX_UPLOAD_MB or 1024). "
    "Other limits and permissions: docs/SECURITY.md.",
)
@click.pass_context
def ui_cmd(
    ctx: click.Context, port: int, address: str, ui_store: str | None, max_upload_mb: int | None
) -> None:
    """Serve the web UI (runs, latency tolerance, critical path, Cypher console)."""
    from llamp.ui import APP_PATH

    store_uri = ui_store or ctx.obj.get("store_uri")
    env = dict(os.environ)
    env["LLAMP_HOME"] = str(llamp_home().resolve())
    if store_uri:
        env["LLAMP_STORE"] = store_uri
    if max_upload_mb is not None:
        env["LLAMP_UI_MAX_UPLOAD_MB"] = str(max_upload_mb)
    else:
        max_upload_mb = ui_settings().max_upload_bytes >> 20
    where = redact(store_uri) if store_uri else f"embedded store in {env['LLAMP_HOME']}"
    host = "localhost" if address in ("127.0.0.1", "0.0.0.0") else address
    click.echo(f"llamp ui: http://{host}:{port}  (store: {where}; Ctrl-C stops)", err=True)
    cmd = streamlit_command(str(APP_PATH), port, address, max_upload_mb)
    sys.stdout.flush()
    sys.stderr.flush()
    # Become the Streamlit server, so signals (Ctrl-C, SIGTERM) reach it directly.
    os.execve(sys.executable, cmd, env)
