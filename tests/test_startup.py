"""A ``llamp`` process starts lean and ends at once: what ``--help`` and
``predict`` import, numba's set-up in the background (:mod:`llamp.lp.jit`), and the fast exit
of the entry point (same output, same exit codes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from random_graphs import random_graph

import llamp.cli as entry_point
from llamp.graph import ExecutionGraph
from llamp.lp import jit, predict
from llamp.lp.lowered import save_graph
from llamp.params import LogGPS

BASE = LogGPS(L=3000.0, o=1500.0, G=0.0, S=65535)
POINT = ["--L", "3us", "--o", "1500ns", "--G", "0ns/B", "--S", "65535"]
HEAVY = ("pandas", "streamlit", "ortools", "llamp.graphdb", "ladybug", "neo4j", "scipy.sparse")

#: Runs ``llamp`` as its entry point does (``main()`` on ``sys.argv``); an ``atexit`` handler
#: (which the fast exit runs too) prints what was imported and whether numba's set-up started.
_PROBE = textwrap.dedent(
    """
    import atexit, json, os, sys
    def report():
        jit = sys.modules.get("llamp.lp.jit")
        print(json.dumps({
            "modules": sorted(sys.modules),
            "setup_started": bool(jit and jit._thread is not None),
            "blas_threads_env": os.environ.get("OPENBLAS_NUM_THREADS"),
            "hugepage_env": os.environ.get("NUMPY_MADVISE_HUGEPAGE"),
            "hugepage": "numpy" in sys.modules
            and sys.modules["numpy"]._core.multiarray._set_madvise_hugepage(True),
        }), file=sys.stderr)
    atexit.register(report)
    sys.argv = ["llamp", *sys.argv[1:]]
    from llamp.cli import main
    main()
    """
)


def _probe(
    *args: str, env: dict | None = None, drop: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess, dict]:
    """Run ``llamp *args`` under :data:`_PROBE` with ``env`` added to this environment and the
    variables ``drop`` removed from it."""
    base = {k: v for k, v in os.environ.items() if k not in drop}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, **(env or {})},
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return done, report


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    graph = random_graph(11, ranks=4, steps=120, max_size=200_000)
    path = save_graph(graph, tmp_path_factory.mktemp("startup") / "g.npz", (BASE,))
    return graph, path


def test_help_imports_nothing_heavy_and_starts_no_setup():
    for args in (["--help"], ["predict", "--help"], ["runs", "--help"]):
        done, report = _probe(*args)
        assert done.returncode == 0, done.stderr
        assert "Usage: llamp" in done.stdout
        assert not [m for m in HEAVY if m in report["modules"]], args
        assert report["setup_started"] is False, args


def test_help_lists_every_command_and_imports_none_of_their_modules():
    done, report = _probe("--help")
    assert done.returncode == 0, done.stderr
    assert "predict" in done.stdout and "synth-training" in done.stdout
    assert [m for m in report["modules"] if m.startswith("llamp.cli.")] == ["llamp.cli.base"]
    assert "numba" not in report["modules"]


def test_importing_the_cli_imports_no_numpy():
    """The entry point loads numpy itself, after choosing its BLAS threads."""
    code = "import sys, llamp.cli; print(sorted(m for m in ('numpy', 'click') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["['click']"], done.stderr


@pytest.mark.parametrize("given", [None, "3"])
def test_predict_imports_its_own_command_only_and_leaves_the_blas_variable(graph_file, given):
    """``predict`` imports one command module (``llamp.cli.analyze``), no scipy, pandas,
    OR-Tools, nor numba when the compiled kernels serve this checkout; numpy's OpenBLAS is loaded on one thread unless the user chose, and the
    variable is left as the user gave it (programs llamp starts inherit it)."""
    _, path = graph_file
    env = {"OPENBLAS_NUM_THREADS": given} if given else {}
    done, report = _probe(
        "predict", str(path), *POINT, "--json", env=env, drop=entry_point._BLAS_THREADS
    )
    assert done.returncode == 0, done.stderr
    modules = report["modules"]
    assert [m for m in modules if m.startswith("llamp.cli.")] == [
        "llamp.cli.analyze",
        "llamp.cli.base",
    ]
    heavy = ("scipy", "pandas", "ortools", "streamlit")
    if __import__("llamp.kernel").kernel.compiled_kernels():
        heavy += ("numba", "llvmlite")
    assert not [m for m in modules if m.split(".")[0] in heavy]
    assert report["blas_threads_env"] == given


@pytest.mark.parametrize("given", [None, "1", "0"])
def test_numpy_is_loaded_without_huge_pages_unless_the_user_asks(graph_file, given):
    """numpy's huge pages are off in a ``llamp`` process (a first touch costs about five times
    as much with them here: docs/architecture.md §Start-up of a command);
    ``NUMPY_MADVISE_HUGEPAGE`` chosen by the user wins, and the variable is left as given."""
    _, path = graph_file
    env = {entry_point._HUGEPAGE: given} if given else {}
    done, report = _probe(
        "predict", str(path), *POINT, "--json", env=env, drop=(entry_point._HUGEPAGE,)
    )
    assert done.returncode == 0, done.stderr
    assert report["hugepage"] is (given == "1")
    assert report["hugepage_env"] == given
    assert json.loads(done.stdout)["runtime_ns"] > 0


def test_predict_under_the_jit_sets_numba_up_in_the_background(graph_file):
    _, path = graph_file
    done, report = _probe("predict", str(path), *POINT, "--json", env={"LLAMP_KERNELS": "jit"})
    assert done.returncode == 0, done.stderr
    assert not [m for m in HEAVY if m in report["modules"]]
    assert report["setup_started"] is True
    assert "numba" in report["modules"]


@pytest.mark.skipif(
    not __import__("llamp.kernel").kernel.compiled_kernels(),
    reason="llamp._kernels not built from these sources",
)
def test_predict_with_the_compiled_kernels_imports_no_numba(graph_file):
    _, path = graph_file
    done, report = _probe("predict", str(path), *POINT, "--json")
    assert done.returncode == 0, done.stderr
    assert not [m for m in HEAVY if m in report["modules"]]
    assert report["setup_started"] is False
    assert not [m for m in report["modules"] if m.split(".")[0] in ("numba", "llvmlite")]


def test_the_fast_exit_prints_the_same_numbers_bit_for_bit(graph_file):
    """Whole process (background set-up, fast exit) against the in-process engine."""
    graph, path = graph_file
    done = subprocess.run(
        [sys.executable, "-m", "llamp", "predict", str(path), *POINT, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    want = predict(graph, BASE)
    assert got["runtime_ns"] == want.runtime_ns
    assert (got["lambda_L"], got["lambda_G"], got["lambda_o"]) == (
        want.lambda_L,
        want.lambda_G,
        want.lambda_o,
    )
    assert want.lambda_L > 0  # the point is not degenerate


def test_the_fast_exit_keeps_the_exit_codes_and_the_one_line_errors(tmp_path):
    missing = subprocess.run(
        [sys.executable, "-m", "llamp", "predict", str(tmp_path / "none.npz")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"llamp: error: {tmp_path / 'none.npz'}: no such file, directory or stored run"
    ]
    usage = subprocess.run(
        [sys.executable, "-m", "llamp", "predict", "--L", "fast"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert usage.returncode == 2 and usage.stderr.startswith("llamp: error: ")


def test_a_kernel_called_while_the_setup_runs_gets_the_same_answer(graph_file):
    """The set-up holds numba's compiler lock; a kernel load waits for it, never sees it half
    done (here in a process that may have set numba up already: the call is then a no-op)."""
    graph, path = graph_file
    thread = jit.start()
    got = predict(ExecutionGraph.load(path, lazy=True), BASE)
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert jit.start() is thread  # once per process
    want = predict(graph, BASE)
    assert got.runtime_ns == want.runtime_ns and got.lambda_L == want.lambda_L


def test_a_file_written_before_the_fast_exit_is_complete(graph_file, tmp_path):
    """``ingest -o`` in its own process (fast exit): the graph file it leaves reads back whole,
    every member CRC-checked, and answers as the graph it came from."""
    from llamp.ingest.goal import write_goal

    graph, _ = graph_file
    goal = write_goal(graph, tmp_path / "g.goal").path
    out = tmp_path / "out.npz"
    done = subprocess.run(
        [sys.executable, "-m", "llamp", "ingest", str(goal), "-o", str(out), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    back = ExecutionGraph.load(out, lazy=True)
    assert back.num_vertices == graph.num_vertices
    want = predict(ExecutionGraph.load(_goal_to_npz(goal, tmp_path), lazy=True), BASE)
    got = predict(back, BASE)
    assert got.runtime_ns == want.runtime_ns and got.lambda_L == want.lambda_L


def _goal_to_npz(goal, tmp_path):
    """The GOAL file read in this process and saved (the reference for the CLI's file)."""
    from llamp.ingest import read

    return save_graph(read(goal), tmp_path / "reference.npz", (BASE,))


def test_the_setup_skips_scipy_and_leaves_blas_to_kernels_that_use_it():
    """numba's set-up (:func:`llamp.lp.jit.prepare`) does not import scipy.linalg for numba's
    BLAS probe; a kernel using BLAS afterwards still compiles and computes (numba then imports
    scipy through its real ``ensure_blas``)."""
    code = textwrap.dedent(
        """
        import sys
        import numba, numpy as np
        from llamp.lp import jit
        jit.prepare()
        import numba.np.arraymath as arraymath, numba.np.linalg as linalg
        print("scipy.linalg" in sys.modules, arraymath._HAVE_BLAS, linalg.ensure_blas.__name__)
        @numba.njit
        def dot(a, b):
            return np.dot(a, b)
        print(dot(np.arange(6.0).reshape(2, 3), np.arange(3.0)).tolist())
        print("scipy.linalg" in sys.modules)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["False True ensure_blas", "[5.0, 14.0]", "True"]


def test_the_setup_never_deadlocks_with_a_thread_defining_kernels():
    """numba creates its target context under a lock of its own and takes its compiler lock
    inside it; the set-up takes them in that order too. A thread defining and calling a kernel
    while the set-up runs finishes (a smoke test: the interleaving that hung ``llamp predict``
    when the set-up took the compiler lock first is a matter of timing)."""
    code = textwrap.dedent(
        """
        from llamp.lp import jit
        jit.start()
        import numba
        @numba.njit
        def plus_one(x):
            return x + 1
        print(plus_one(41))
        """
    )
    for _ in range(4):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0 and done.stdout.strip() == "42", done.stderr


def test_only_the_process_entry_point_tunes_malloc_and_exits_at_once(monkeypatch, capsys):
    """``main(argv)`` (tests, embedding) leaves the allocator and the interpreter's exit alone;
    ``main()`` on ``sys.argv`` (the ``llamp`` script) keeps freed memory and exits at once."""
    import llamp.cli as entry

    calls: list = []
    monkeypatch.setattr(entry, "_keep_freed_memory", lambda: calls.append("malloc"))
    monkeypatch.setattr(entry, "_may_exit_now", lambda: True)

    def exit_now(code: int) -> None:
        calls.append(("exit now", code))
        raise SystemExit(code)

    monkeypatch.setattr(entry, "_exit_now", exit_now)
    with pytest.raises(SystemExit) as stop:
        entry.main(["--help"])
    assert stop.value.code == 0 and calls == []
    monkeypatch.setattr(sys, "argv", ["llamp", "--help"])
    with pytest.raises(SystemExit) as stop:
        entry.main()
    assert stop.value.code == 0 and calls == ["malloc", ("exit now", 0)]
    assert "Usage: llamp" in capsys.readouterr().out
