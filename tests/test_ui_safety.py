"""UI safety: upload and unpacked-size limits, file counts, paths confined to the
upload or to the configured server roots, read-only and admin settings, no password shown."""

from __future__ import annotations

import io
import zipfile

import pytest
from apptest_pages import RUN, SWEEP3D, archive_bytes, assert_clean, page

from llamp.config import redact, ui_settings
from llamp.errors import InputError, ParameterError, TraceError
from llamp.ingest import read
from llamp.ingest.confine import confined_to
from llamp.ui import uploads


def _bomb(unpacked_mb: int) -> bytes:
    """A zip of one member of zeros, ~1000× smaller than what it unpacks to."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("pmpi-trace-rank-0.txt", "w", force_zip64=True) as member:
            chunk = b"\0" * (1 << 20)
            for _ in range(unpacked_mb):
                member.write(chunk)
    return buffer.getvalue()


def test_a_zip_bomb_stops_at_the_unpacked_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMP_UI_MAX_UNPACKED_MB", "8")
    data = _bomb(64)
    assert len(data) < 1 << 20
    with pytest.raises(InputError, match=r"unpacks to more than 8 MB \(LLAMP_UI_MAX_UNPACKED_MB\)"):
        uploads.stage([uploads.Upload("bomb.zip", data)], tmp_path, "bomb")
    written = sum(f.stat().st_size for f in tmp_path.rglob("*") if f.is_file())
    assert written < len(data) + (9 << 20), "unpacking stopped at the limit"


def test_upload_size_and_file_count_limits(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMP_UI_MAX_UPLOAD_MB", "1")
    big = uploads.Upload("pmpi-trace-rank-0.txt", b"x" * ((1 << 20) + 1))
    with pytest.raises(InputError, match=r"more than 1 MB \(LLAMP_UI_MAX_UPLOAD_MB\)"):
        uploads.stage([big], tmp_path, "big")
    monkeypatch.setenv("LLAMP_UI_MAX_FILES", "3")
    many = {f"t/pmpi-trace-rank-{i}.txt": b"" for i in range(4)}
    with pytest.raises(InputError, match=r"more than 3 files \(LLAMP_UI_MAX_FILES\)"):
        uploads.stage([uploads.Upload("many.zip", archive_bytes("zip", many))], tmp_path, "m")
    with pytest.raises(InputError, match="more than 3"):
        uploads.stage(
            [uploads.Upload(f"pmpi-trace-rank-{i}.txt", b"") for i in range(4)], tmp_path, "m"
        )
    monkeypatch.setenv("LLAMP_UI_MAX_FILES", "lots")
    with pytest.raises(ParameterError, match="LLAMP_UI_MAX_FILES"):
        ui_settings()


def test_defaults_fit_the_machine(monkeypatch):
    for name in (
        "LLAMP_UI_MAX_UPLOAD_MB",
        "LLAMP_UI_MAX_UNPACKED_MB",
        "LLAMP_UI_MAX_FILES",
        "LLAMP_UI_SERVER_ROOTS",
        "LLAMP_UI_READ_ONLY",
        "LLAMP_UI_ADMIN",
    ):
        monkeypatch.delenv(name, raising=False)
    settings = ui_settings()
    assert settings.max_upload_bytes == 1 << 30
    assert 64 << 20 <= settings.max_unpacked_bytes <= 4 << 30
    assert settings.server_roots == () and not settings.admin and not settings.read_only


def test_a_list_file_in_an_upload_cannot_name_a_server_file(tmp_path):
    upload = tmp_path / "upload"
    upload.mkdir()
    listing = upload / "traces.txt"
    listing.write_text("/etc/passwd\n")
    with confined_to(upload), pytest.raises(TraceError, match="outside the uploaded files") as err:
        read(listing, fmt="simgrid")
    assert "root:" not in str(err.value)
    # the same list naming a file inside the upload is read
    (upload / "rank0.txt").write_text("0 init\n0 compute 1000\n0 finalize\n")
    listing.write_text("rank0.txt\n")
    with confined_to(upload):
        assert read(listing, fmt="simgrid").num_ranks == 1


def test_a_dumpi_prefix_cannot_leave_the_upload(tmp_path):
    upload = tmp_path / "upload"
    upload.mkdir()
    outside = tmp_path / "secret-0000.bin"
    outside.write_bytes(b"\0" * 16)
    (upload / "t.meta").write_text("numprocs=1\nfileprefix=../secret\n")
    with confined_to(upload), pytest.raises(TraceError, match="outside the uploaded files"):
        read(upload / "t.meta", fmt="dumpi")
    (upload / "t.meta").write_text("numprocs=0\nfileprefix=t\n")
    with pytest.raises(TraceError, match="numprocs=0"):
        read(upload / "t.meta", fmt="dumpi")


def test_server_path_is_off_by_default_and_confined_to_roots(store_env, monkeypatch, tmp_path):
    monkeypatch.delenv("LLAMP_UI_SERVER_ROOTS", raising=False)
    at = page()
    assert at.radio(key="ingest_source").options == ["Upload files"]
    monkeypatch.setenv("LLAMP_UI_SERVER_ROOTS", str(tmp_path))
    at = page()
    at.radio(key="ingest_source").set_value("Path on the server").run()
    for outside in (str(SWEEP3D), f"{tmp_path}/../../etc/passwd", "/etc/passwd"):
        at.text_input(key="ingest_path").set_value(outside).run()
        at.text_input(key="ingest_name").set_value("escape").run()
        at.button(key="ingest_button").click().run()
        assert not at.exception
        assert any("outside the directories this UI may read" in e.value for e in at.error)
    assert "escape" not in list(at.dataframe[0].value["name"])


def test_read_only_ui_has_no_ingest_and_no_delete(store_env, monkeypatch):
    monkeypatch.setenv("LLAMP_UI_READ_ONLY", "1")
    at = page()
    assert_clean(at)
    assert RUN in list(at.dataframe[0].value["name"])
    keys = {getattr(b, "key", None) for b in at.button}
    assert "ingest_button" not in keys and "delete_button" not in keys
    assert any("read-only" in i.value for i in at.info)


def test_console_writes_only_with_the_admin_setting(store_env, monkeypatch):
    monkeypatch.delenv("LLAMP_UI_ADMIN", raising=False)
    at = page("cypher")
    assert not [c for c in at.checkbox if c.key == "cypher_write"]
    at.text_area(key="cypher_text").set_value("LOAD FROM '/etc/passwd' RETURN *").run()
    at.button(key="cypher_run_button").click().run()
    assert any(e.value.startswith("Refused") for e in at.error)
    assert "root:" not in str([d.value for d in at.dataframe])
    monkeypatch.setenv("LLAMP_UI_ADMIN", "1")
    at = page("cypher")
    at.checkbox(key="cypher_write").check().run()
    at.text_area(key="cypher_text").set_value(
        "MATCH (r:Run {name: 'sweep3d'}) SET r.format = r.format RETURN r.name AS n"
    ).run()
    at.button(key="cypher_run_button").click().run()
    assert_clean(at)
    assert list(at.dataframe[0].value["n"]) == [RUN]


@pytest.mark.parametrize(
    "uri",
    [
        "bolt://neo4j:s3cr%2Fet@127.0.0.1:7687",
        "bolt://neo4j:s3cr@et@127.0.0.1:7687",
        "neo4j+s://admin:s3cr:et@example.org:7687?database=x",
    ],
)
def test_redaction_hides_every_password(uri):
    shown = redact(uri)
    assert "s3cr" not in shown and "@" in shown
    assert "s3cr" not in redact(f"error: cannot reach {uri}: refused")


def test_percent_encoded_credentials_are_decoded():
    from llamp.graphdb.neo4j import _parse_uri

    parts, port, user, password = _parse_uri("bolt://ne%40o:pa%2Fss%40w%3A@db.example:7688")
    assert (parts.hostname, port, user, password) == ("db.example", 7688, "ne@o", "pa/ss@w:")


@pytest.mark.integration
def test_wrong_bolt_credentials_are_a_readable_error(neo4j_server):
    from llamp.errors import StoreError
    from llamp.graphdb import open_store

    host = neo4j_server.split("@", 1)[1]
    with pytest.raises(StoreError, match="check the user name and password") as err:
        open_store(f"bolt://intruder:s3cr%2Fet@{host}", read_only=True)
    assert "s3cr" not in str(err.value)


def test_stored_upload_names_its_files_as_uploaded(tmp_path, monkeypatch):
    from llamp.graphdb import open_store

    monkeypatch.setenv("LLAMP_HOME", str(tmp_path))
    monkeypatch.delenv("LLAMP_STORE", raising=False)
    goal = SWEEP3D.parent.parent / "goal" / "blocking.goal"
    at = page()
    at.file_uploader(key="ingest_files").set_value(
        (goal.name, goal.read_bytes(), "text/plain")
    ).run()
    at.button(key="ingest_button").click().run()
    assert_clean(at)
    with open_store(None, read_only=True) as store:
        files = store.run_info("blocking").meta["files"]
    assert files == ["blocking.goal"]
