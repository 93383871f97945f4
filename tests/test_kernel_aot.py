"""Kernels compiled ahead of time (``llamp._kernels``) against numba's JIT of the same source.

The compiled exports and the JIT run one Python source through one compiler, so their results
are bit-identical; the argument check keeps any other dtype or layout out of the machine code
(it goes to the JIT); an extension built from other sources, or ``LLAMP_KERNELS=jit``, puts
every kernel under the JIT. The tests that call the extension skip when the install did not
build it (or built it from other sources: an edited checkout).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llamp import kernel
from llamp.errors import ParameterError
from llamp.lp import kernels
from llamp.lp.kernels import ABS_TOL_NS, REL_TOL

needs_extension = pytest.mark.skipif(
    not kernel.compiled_kernels(), reason="llamp._kernels not built from these sources"
)


def _csr(index: type, pattern: type, seed: int = 3, n: int = 400):
    """A random event DAG in CSR form (every in-edge from an earlier position), patterns of
    four kinds, two slope columns."""
    rng = np.random.default_rng(seed)
    indeg = rng.integers(0, 4, n)
    indeg[0] = 0
    in_ptr = np.concatenate([[0], np.cumsum(indeg)]).astype(index)
    dst = np.repeat(np.arange(n), indeg)
    src = (rng.random(dst.size) * dst).astype(index)
    pat = rng.integers(0, 4, dst.size).astype(pattern)
    value = rng.random(dst.size) * 100.0
    wa, wb = rng.random(4) * 50.0, rng.random(4)
    sa, sb = rng.random((4, 2)), rng.random((4, 2))
    return in_ptr, src, pat, value, wa, wb, sa, sb


@needs_extension
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("pattern", [np.uint8, np.uint16])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_compiled_and_jit_sided_are_identical(index, pattern, sign):
    args = (*_csr(index, pattern), sign, REL_TOL, ABS_TOL_NS)
    for a in args[:3]:
        a.flags.writeable = False  # graph columns are read-only memory maps in a command
    exports = kernels.sided._bind()
    compiled = [fn for specs, fn in exports if all(map(kernel._matches, specs, args))]
    assert len(compiled) == 1
    T_aot, agg_aot = compiled[0](*args)
    T_jit, agg_jit = kernels.sided.dispatcher()(*args)
    T, agg = kernels.sided(*args)
    assert T_aot == T_jit == T > 0
    np.testing.assert_array_equal(agg_aot, agg_jit)
    np.testing.assert_array_equal(agg, agg_jit)


@needs_extension
def test_compiled_and_jit_values_are_identical():
    in_ptr, src, pat, value, wa, wb, _, _ = _csr(np.int32, np.uint8, seed=11)
    args = (in_ptr, src, pat, value, wa, wb)
    [fn] = [fn for specs, fn in kernels.values._bind() if all(map(kernel._matches, specs, args))]
    np.testing.assert_array_equal(
        fn(in_ptr, src, pat, value, wa, wb),
        kernels.values.dispatcher()(in_ptr, src, pat, value, wa, wb),
    )


def test_arguments_outside_the_signatures_go_to_the_jit():
    """Another index dtype, a strided column, float32 slopes, a Python float for an int: no
    export matches."""
    specs = kernel.parse_signature("i4[::1], f8[:, ::1], f8, i8")
    assert specs[0] == (np.dtype(np.int32), 1, True)
    assert specs[1] == (np.dtype(np.float64), 2, True)
    good = (np.zeros(3, np.int32), np.zeros((2, 2)), 1.0, 3)
    assert all(map(kernel._matches, specs, good))
    for i, bad in [
        (0, np.zeros(3, np.int64)),
        (0, np.zeros(6, np.int32)[::2]),
        (1, np.zeros((2, 2), np.float32)),
        (1, np.zeros((2, 4))[:, ::2]),
        (2, 1),
        (3, 3.0),
    ]:
        args = list(good)
        args[i] = bad
        assert not all(map(kernel._matches, specs, args)), (i, bad)
    # float32 values (an export of their own) give what the JIT gives
    in_ptr, src, pat, value, wa, wb, _, _ = _csr(np.int32, np.uint8, seed=5)
    np.testing.assert_array_equal(
        kernels.values(in_ptr, src, pat, value.astype(np.float32), wa, wb),
        kernels.values.dispatcher()(in_ptr, src, pat, value.astype(np.float32), wa, wb),
    )


def test_a_stale_extension_falls_back_to_the_jit(monkeypatch):
    """An extension whose recorded digest differs from the sources on disk is not used."""
    monkeypatch.setattr(kernel, "source_digest", lambda files: "0" * 32)
    assert kernel._load_extension() == {}


def test_kernels_jit_switches_the_extension_off(monkeypatch):
    monkeypatch.setenv("LLAMP_KERNELS", "jit")
    assert kernel._load_extension() == {}
    monkeypatch.setenv("LLAMP_KERNELS", "aot")
    with pytest.raises(ParameterError, match="LLAMP_KERNELS"):
        kernel._load_extension()


def test_the_source_digest_follows_every_byte(tmp_path, monkeypatch):
    package = tmp_path / "kernelpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = kernel.source_digest(["kernelpkg.mod"])
    (package / "mod.py").write_text("X = 2\n")
    after = kernel.source_digest(["kernelpkg.mod"])
    assert before and after and before != after
    assert kernel.source_digest(["kernelpkg.missing"]) == ""


@needs_extension
def test_predict_of_a_saved_graph_imports_no_numba(tmp_path, stencil_npz):
    """The start-up path: the command line, the graph file, the engine, the compiled kernel."""
    code = (
        "import sys\n"
        "from llamp.cli import main\n"
        f"try:\n    main(['predict', {str(stencil_npz)!r}, '--json'])\n"
        "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        "assert 'numba' not in sys.modules, 'numba imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"runtime_ns"' in done.stdout


@pytest.fixture
def stencil_npz(tmp_path) -> Path:
    """A small synthetic stencil saved as a graph file."""
    from llamp.ingest.synthetic import stencil_with_vertices

    path = tmp_path / "stencil.npz"
    stencil_with_vertices(2000, ranks=4).save(path)
    return path


GOAL_TRACES = Path(__file__).resolve().parent / "data" / "traces" / "goal"
COLUMNS = ("kind", "rank", "cost_ns", "size", "peer", "tag", "edge_src", "edge_dst", "edge_kind")


@needs_extension
@pytest.mark.slow
def test_compiled_and_jit_goal_reading_and_schedule_pass_are_identical(tmp_path, monkeypatch):
    """The GOAL tokenizer (numeric and text labels) and the schedule pass, compiled and under
    the JIT (every kernel's compiled exports taken away): the same columns, the same schedule."""
    from llamp.ingest.goal import read_goal, write_goal
    from llamp.ingest.goal_tokenizer import scan_chunk
    from llamp.ingest.synthetic import stencil_with_vertices
    from llamp.lp.schedule import _run, schedule
    from llamp.params import LogGPS

    goals = [write_goal(stencil_with_vertices(3000, ranks=4), tmp_path / "s.goal").path]
    goals += sorted(GOAL_TRACES.glob("*.goal"))
    params = LogGPS(
        L=3000.0, o=1500.0, G=0.02, S=4096, nic="serial", order="schedule", rendezvous="loggopsim"
    )
    assert scan_chunk._bind() and _run._bind()

    def run_all():
        graphs = [read_goal(path) for path in goals]
        return graphs, schedule(graphs[0], params)

    compiled, compiled_schedule = run_all()
    for k in kernel.registered().values():
        monkeypatch.setattr(k, "_exports", [])
    jit, jit_schedule = run_all()
    for path, a, b in zip(goals, compiled, jit, strict=True):
        for column in COLUMNS:
            np.testing.assert_array_equal(getattr(a, column), getattr(b, column), f"{path.name}")
    assert compiled_schedule.runtime == jit_schedule.runtime > 0
    for field in ("start", "finish", "processed", "match", "cpu_prev", "nic_prev"):
        np.testing.assert_array_equal(
            getattr(compiled_schedule, field), getattr(jit_schedule, field), field
        )


@needs_extension
@pytest.mark.parametrize(
    "command",
    [
        ["ingest", "{goal}", "-o", "{out}", "--no-progress"],
        ["predict", "{npz}", "--order", "schedule", "--rendezvous", "loggopsim", "--json"],
        ["sweep", "{npz}", "--points", "3", "--order", "schedule", "--json"],
    ],
)
def test_ingest_of_a_goal_file_and_the_schedule_order_import_no_numba(
    tmp_path, stencil_npz, command
):
    from llamp.ingest.goal import write_goal
    from llamp.ingest.synthetic import stencil_with_vertices

    goal = write_goal(stencil_with_vertices(2000, ranks=4), tmp_path / "s.goal").path
    argv = [a.format(goal=goal, out=tmp_path / "out.npz", npz=stencil_npz) for a in command]
    code = (
        "import sys\n"
        "from llamp.cli import main\n"
        f"try:\n    main({argv!r})\n"
        "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        "assert 'numba' not in sys.modules, 'numba imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    if command[0] == "ingest":
        assert (tmp_path / "out.npz").is_file()
    else:
        assert '"runtime_ns"' in done.stdout
