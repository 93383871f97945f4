"""The applications of ``python -m benchmarks.validation`` beyond the halo exchange: where their
sources come from (a git repository at a fixed commit, built into a cache outside the
repository), how HPCC's input is set up, and that an application that cannot be built is
skipped with one line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks import app_sources
from benchmarks.app_sources import (
    HPCC_SHA256,
    NPB,
    Source,
    Unavailable,
    build_npb,
    build_ptrans,
    checkout,
    hpcc_input,
    write_hpccinf,
)
from benchmarks.validation import APPLICATIONS, _applications, parse_apps

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def _git(*argv: str, cwd: Path) -> str:
    env = os.environ | {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    done = subprocess.run(
        ["git", *argv], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture()
def repo(tmp_path) -> tuple[Path, str, str]:
    """A git repository with ``sub/file.txt`` changed in a second commit: (path, first, second)."""
    path = tmp_path / "origin"
    (path / "sub").mkdir(parents=True)
    (path / "other").mkdir()
    _git("init", "-q", cwd=path)
    (path / "sub" / "file.txt").write_text("first\n")
    (path / "other" / "x.txt").write_text("x\n")
    _git("add", ".", cwd=path)
    _git("commit", "-qm", "one", cwd=path)
    first = _git("rev-parse", "HEAD", cwd=path)
    (path / "sub" / "file.txt").write_text("second\n")
    _git("commit", "-qam", "two", cwd=path)
    return path, first, _git("rev-parse", "HEAD", cwd=path)


@needs_git
def test_checkout_takes_the_directory_at_the_recorded_commit(repo, tmp_path):
    path, first, _ = repo
    dest = tmp_path / "dest"
    checkout(Source("owner/name", first, "sub"), dest, origin=str(path))
    assert (dest / "sub" / "file.txt").read_text() == "first\n"  # not the newest commit
    assert not (dest / "other").exists()


@needs_git
def test_checkout_without_the_commit_or_the_repository_is_unavailable(repo, tmp_path):
    path, _, _ = repo
    with pytest.raises(Unavailable, match=r"has no commit 0{40}"):
        checkout(Source("owner/name", "0" * 40, "sub"), tmp_path / "a", origin=str(path))
    with pytest.raises(Unavailable, match="cannot clone .*missing"):
        checkout(
            Source("owner/name", "0" * 40, "sub"), tmp_path / "b", origin=str(path / "missing")
        )


def test_npb_is_pinned_to_one_commit_of_a_public_repository():
    assert NPB.url == "https://github.com/mbdevpl/nas-parallel-benchmarks.git"
    assert len(NPB.commit) == 40 and NPB.commit in NPB.label()


def test_hpcc_input_puts_the_ranks_on_one_row(tmp_path, monkeypatch):
    real_which = shutil.which
    monkeypatch.setattr(
        app_sources.shutil,
        "which",
        lambda name: (
            "/usr/bin/hpcc"
            if name == "hpcc"
            else None
            if name == "dpkg-query"
            else real_which(name)
        ),
    )
    assert hpcc_input(tmp_path, 2) == "/usr/bin/hpcc"
    lines = (tmp_path / "hpccinf.txt").read_text().splitlines()
    reference = (app_sources.APPS / "hpccinf.txt").read_text().splitlines()
    assert len(lines) == len(reference)
    assert lines[10].split() == ["1", "Ps"] and lines[11].split() == ["2", "Qs"]
    changed = [k for k, (a, b) in enumerate(zip(lines, reference, strict=True)) if a != b]
    assert changed == [10]  # the reference already has Qs = 2


def test_ptrans_input_sets_hpl_n_and_the_grid(tmp_path):
    """PTRANS transposes an N/2 × N/2 matrix, N from HPL's problem-size line."""
    write_hpccinf(tmp_path, 2, 1000)
    lines = (tmp_path / "hpccinf.txt").read_text().splitlines()
    reference = (app_sources.APPS / "hpccinf.txt").read_text().splitlines()
    assert lines[5].split() == ["1000", "Ns"] and reference[5].split() == ["200", "Ns"]
    changed = [k for k, (a, b) in enumerate(zip(lines, reference, strict=True)) if a != b]
    assert changed == [5, 10]


def test_a_tarball_that_is_not_hpcc_1_5_0_is_refused_before_anything_is_built(tmp_path):
    fake = tmp_path / "hpcc_1.5.0.orig.tar.gz"
    fake.write_bytes(b"not the release")
    with pytest.raises(Unavailable, match=f"is not HPCC 1.5.0 .*not {HPCC_SHA256}"):
        build_ptrans(origin=str(fake), cache=tmp_path / "cache")
    with pytest.raises(Unavailable, match="cannot fetch .*missing"):
        build_ptrans(origin=str(tmp_path / "missing"), cache=tmp_path / "cache")
    assert not any((tmp_path / "cache").iterdir())  # nothing half-built or left over


@pytest.mark.slow
@pytest.mark.integration
def test_ptrans_builds_and_sends_the_same_messages_every_run(tmp_path):
    """HPCC's PTRANS alone, from the release tarball (Debian's archive, or a copy named by
    ``LLAMP_HPCC_SOURCE``), with its grid-layout seed fixed: it passes its own check on 2
    ranks, and two runs print the same result line (the same transpose on the same grid)."""
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not installed")
    try:
        exe, source = build_ptrans(origin=os.environ.get("LLAMP_HPCC_SOURCE"), cache=tmp_path)
    except Unavailable as why:
        pytest.skip(f"PTRANS cannot be built here: {why}")
    assert "HPCC 1.5.0" in source and "fixed grid-layout seed" in source
    seeded = (tmp_path / "hpcc-1.5.0" / "hpcc-1.5.0" / "PTRANS" / "pdtransdriver.c").read_text()
    assert "time(NULL)" not in seeded
    write_hpccinf(tmp_path, 2, 400)
    env = os.environ | {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    lines = []
    for _ in range(2):
        done = subprocess.run(
            ["mpirun", "-n", "2", str(exe)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        (line,) = [x for x in done.stdout.splitlines() if x.startswith("PTRANS")]
        lines.append(line.split(",")[:3])  # passed, n, nb, grid (not the timings)
    assert lines[0] == lines[1] and lines[0][0] == "PTRANS passed: n = 200"
    assert build_ptrans(cache=tmp_path)[0] == exe  # built once


def test_hpcc_absent_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setattr(app_sources.shutil, "which", lambda name: None)
    with pytest.raises(Unavailable, match="hpcc not found"):
        hpcc_input(tmp_path, 2)


def test_apps_option():
    assert parse_apps(None, quick=False) == APPLICATIONS
    assert parse_apps(None, quick=True) == ("halo-8k-2", "halo-1m-2", "halo-8k-4")
    assert parse_apps("hpcc-2, npb-cg-2", quick=False) == ("npb-cg-2", "hpcc-2")
    with pytest.raises(SystemExit, match="unknown application 'cg'"):
        parse_apps("cg", quick=False)


def test_an_application_that_cannot_be_built_is_skipped_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMP_APPS_CACHE", str(tmp_path / "cache"))
    said: list[str] = []
    apps = _applications(
        tmp_path,
        tmp_path / "halo",
        False,
        ("npb-cg-2", "halo-8k-2"),
        str(tmp_path / "none"),
        said.append,
    )
    assert [a.key for a in apps] == ["halo-8k-2"]
    assert len(said) == 1 and said[0].startswith("skipping npb-cg-2: ")
    assert "\n" not in said[0]
    assert not (tmp_path / "cache" / f"npb-{NPB.commit[:12]}").exists()  # nothing half-built


@pytest.mark.slow
@pytest.mark.integration
def test_npb_cg_builds_and_verifies(tmp_path):
    """NPB CG class S from its sources (GitHub, or a clone named by ``LLAMP_NPB_SOURCE``),
    run on 2 ranks with the Fortran calls going through the C bindings."""
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not installed")
    try:
        exe, source = build_npb(
            "cg", "S", origin=os.environ.get("LLAMP_NPB_SOURCE"), cache=tmp_path
        )
    except Unavailable as why:
        pytest.skip(f"NPB CG cannot be built here: {why}")
    assert NPB.commit in source
    symbols = subprocess.run(["nm", str(exe)], capture_output=True, text=True).stdout
    assert " T mpi_send_" in symbols and " T mpi_wait_" in symbols
    env = os.environ | {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    done = subprocess.run(
        ["mpirun", "-n", "2", str(exe)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0 and "VERIFICATION SUCCESSFUL" in done.stdout


def test_rescore_predicts_kept_runs_again_under_todays_models(tmp_path):
    """``--rescore DIR``: the measured runs an earlier validation kept are predicted again from
    their trace, call cost and calibration, under today's default and every model; the runs,
    loads and notes stay the run's own."""
    import json

    from benchmarks.validation import markdown, rescore
    from llamp.ingest import read
    from llamp.injector.overhead import charge_call_cost
    from llamp.injector.validate import MODELS, predict_deltas
    from llamp.params import LogGPS

    trace = Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2"
    shutil.copytree(trace, tmp_path / "trace-0")
    runs = {0.0: [2.0e6, 2.1e6, 2.05e6], 20_000.0: [2.5e6, 2.6e6, 2.55e6]}
    kept = {
        "run": "halo-8k-2",
        "command": ["mpirun", "-n", "2", "./halo"],
        # the model choices of the day it ran; a re-score predicts under today's
        "params": {
            "L_ns": 0.0,
            "o_ns": 238.5,
            "G_ns_per_byte": 0.14,
            "S_bytes": 2048,
            "g_ns": 115.0,
            "progress": "wait",
            "nic": "serial",
            "order": "program",
            "rendezvous": "loggopsim",
        },
        "repeat": 3,
        "call_cost_ns": 50.0,
        "mpi": "Open MPI 4.1.4",
        "notes": ["injector at ΔL = 0 vs the traced run: +1.4% runtime"],
        "points": [
            {"delta_ns": d, "runs_ns": r, "loadavg": [0.1] * 3, "other_load_cores": [0.01] * 3}
            for d, r in runs.items()
        ],
    }
    (tmp_path / "halo-8k-2.json").write_text(json.dumps(kept))
    calibration, results = rescore(tmp_path, log=lambda *_: None)
    ((app, v),) = results
    assert app.name == "halo 8 KiB" and calibration["o_ns"] == 238.5
    assert [m.name for m in MODELS] == list(v.models)
    assert [p.runs_ns for p in v.points] == [tuple(r) for r in runs.values()]
    assert v.notes[1:] == tuple(kept["notes"]) and v.call_cost_ns == 50.0
    # and how far today's model falls from the traced run itself at ΔL = 0
    assert v.notes[0].startswith("the model against the traced runs themselves at ΔL = 0")
    # today's model, with the protocol the run's injector emulated (on arrival: not recorded)
    today = LogGPS(L=0.0, o=238.5, G=0.14, S=2048, g=115.0, rendezvous="handshake")
    graph = charge_call_cost(read(tmp_path / "trace-0", name="x"), 50.0)
    expected = predict_deltas(graph, today, list(runs), engine="graph", reschedule=True)[
        "runtime_ns"
    ]
    assert [p.predicted_ns for p in v.points] == pytest.approx(list(expected), rel=1e-12)
    assert v.rescheduled  # each ΔL in its own schedule's order, as llamp validate
    fixed = predict_deltas(graph, today, list(runs), engine="graph")["runtime_ns"]
    assert list(fixed) != pytest.approx(list(expected), rel=1e-12)  # the order changes here
    assert "| halo 8 KiB | 2 |" in markdown(calibration, results, "x")
    # the parameters of the calibrations' median, for every application (the run's end)
    median = LogGPS(L=0.0, o=200.0, G=0.2, S=2048, g=100.0)
    _, ((_, again),) = rescore(tmp_path, log=lambda *_: None, params=median)
    assert again.params == median
    expected = predict_deltas(graph, median, list(runs), engine="graph", reschedule=True)[
        "runtime_ns"
    ]
    assert [p.predicted_ns for p in again.points] == pytest.approx(list(expected), rel=1e-12)
    each = [
        {"L_ns": 0.0, "o_ns": o, "G_ns_per_byte": G, "S_bytes": 2048}
        for o, G in ((238.5, 0.14), (205.0, 0.55), (140.0, 0.17))
    ]
    text = markdown(calibration | {"calibrations": each}, results, "x")
    assert "median of 3 calibrations" in text and "G: 0.14, 0.55, 0.17 ns/B" in text
    assert "the `handshake` rendezvous: a request is answered when it arrives" in text
    # a run whose injector emulated the polled rendezvous is predicted under it by default
    (tmp_path / "halo-8k-2.json").write_text(json.dumps(kept | {"injected_rendezvous": "polled"}))
    calibration, results = rescore(tmp_path, log=lambda *_: None)
    ((_, polled),) = results
    assert polled.params == today.with_(rendezvous="polled")
    expected = predict_deltas(graph, polled.params, list(runs), engine="graph", reschedule=True)[
        "runtime_ns"
    ]
    assert [p.predicted_ns for p in polled.points] == pytest.approx(list(expected), rel=1e-12)
    assert "Injected network: the `polled` rendezvous" in markdown(calibration, results, "x")
    # several traced runs: each predicted, the mean kept; the run's note on its traced runs
    # says how they are predicted today
    shutil.copytree(trace, tmp_path / "trace-0-2")
    stale = "2 traced runs at ΔL = 0 took 1 ms … 2 ms (mean 1.5 ms); each calc's duration averaged"
    two = kept | {"trace_dirs": ["trace-0", "trace-0-2"], "notes": [stale, *kept["notes"]]}
    (tmp_path / "halo-8k-2.json").write_text(json.dumps(two))
    _, ((_, both),) = rescore(tmp_path, log=lambda *_: None)
    once = predict_deltas(graph, today, list(runs), engine="graph", reschedule=True)
    assert [p.predicted_ns for p in both.points] == pytest.approx(list(once["runtime_ns"]))
    assert both.notes[2:] == tuple(kept["notes"]) and stale not in both.notes
    assert both.notes[0].startswith("2 traced runs at ΔL = 0 took ")
    assert both.notes[0].endswith("the prediction is the mean of each run's")
    assert "per run" in both.notes[1]
    with pytest.raises(SystemExit, match="no results"):
        rescore(tmp_path / "trace-0")
