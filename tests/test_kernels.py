"""The longest-path kernel family (llamp.lp.kernels): one home, lanes agree with single values.

Lanes do per lane exactly the floating-point operations of the one-value kernels, so the
agreement asserted here is equality, not closeness.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from llamp.lp import kernels
from llamp.lp.engine import engine_for, slopes_at
from llamp.lp.kernels import ABS_TOL_NS, REL_TOL
from llamp.params import LogGPS
from tests.random_graphs import random_graph

ROOT = Path(kernels.__file__).resolve().parents[1]
PACKAGES = ("lp", "ingest", "graphdb", "llamp", "ui", "injector", "study", "benchmarks")
MODELS = [(p, n) for p in ("async", "wait") for n in ("overlap", "serial")]


def _names_subscripted(node: ast.AST) -> set[str]:
    return {
        n.value.id
        for n in ast.walk(node)
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
    }


def _running_max(node: ast.AST) -> bool:
    """A strict comparison of two computed values that decides an assignment (``if cand >
    best: best = cand``, ``take = cand > best``, ``x if cand > best else y``), or a ``max``:
    keeping a maximum (a check that only returns on a comparison, such as a CSR validation,
    keeps none)."""

    def strict(test: ast.AST) -> bool:
        return any(
            isinstance(n, ast.Compare)
            and any(isinstance(op, ast.Gt | ast.Lt) for op in n.ops)
            and not any(isinstance(x, ast.Constant) for x in [n.left, *n.comparators])
            for n in ast.walk(test)
        )

    def assigns(body: list[ast.stmt]) -> bool:
        return any(
            isinstance(n, ast.Assign | ast.AugAssign) for stmt in body for n in ast.walk(stmt)
        )

    return any(
        (isinstance(n, ast.If) and strict(n.test) and assigns(n.body))
        or (isinstance(n, ast.IfExp | ast.Assign) and strict(getattr(n, "test", n.value)))
        or (
            isinstance(n, ast.Call)
            and ast.unparse(n.func) in ("max", "np.maximum", "numpy.maximum")
        )
        for n in ast.walk(node)
    )


def _longest_path_loops(path: Path) -> list[str]:
    """Compiled functions with a loop that reads the in-edge CSR (``in_ptr[...]``,
    ``src[...]``) and keeps a running maximum: a forward longest-path sweep."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        decorators = " ".join(ast.unparse(d) for d in fn.decorator_list)
        if "njit" not in decorators and "kernel(" not in decorators:
            continue
        for loop in (n for n in ast.walk(fn) if isinstance(n, ast.For)):
            if {"in_ptr", "src"} <= _names_subscripted(loop) and _running_max(loop):
                found.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name}")
                break
    return found


def test_longest_path_loops_live_in_kernels_only():
    assert _longest_path_loops(ROOT / "lp" / "kernels.py"), "the detector finds the kernels"
    outside = [
        hit
        for package in PACKAGES
        if (ROOT / package).is_dir()
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name != "kernels.py" or path.parent.name != "lp"
        for hit in _longest_path_loops(path)
    ]
    assert outside == [], f"longest-path loops outside llamp/lp/kernels.py: {outside}"


def test_tie_rule_is_defined_once():
    defined = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")) if (ROOT / package).is_dir() else ():
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Assign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if isinstance(t, ast.Name) and t.id in ("REL_TOL", "ABS_TOL_NS"):
                            defined.append(str(path.relative_to(ROOT)))
    assert sorted(defined) == ["lp/kernels.py", "lp/kernels.py"]


# ------------------------------------------------------------------------------ agreement
def _single(ev, params, columns, sign):
    """T and aggregated one-sided slopes from the one-value kernel (:func:`engine.slopes_at`)."""
    t, d, _ = slopes_at(ev, params, columns, sign)
    T = t.max()
    tight = t >= T - (REL_TOL * abs(T) + ABS_TOL_NS)
    agg = d[tight].max(axis=0) if sign > 0 else d[tight].min(axis=0)
    return T, agg


@pytest.fixture(params=["lanes", "scalar"])
def paths(request, monkeypatch):
    """Run the engine's probes through the lane kernel from 2 values on, or never."""
    import llamp.lp.engine as engine

    least = 2 if request.param == "lanes" else 10**9
    monkeypatch.setattr(engine, "LANES_PROBES", least)
    monkeypatch.setattr(engine, "LANES_POINTS", least)
    return request.param


def _graph(seed):
    return random_graph(seed, ranks=4, steps=90, max_size=8192)


@pytest.mark.parametrize(("progress", "nic"), MODELS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pair_lanes_equal_single_sweeps(seed, progress, nic, paths):
    graph = _graph(seed)
    params = LogGPS(L=3000.0, o=800.0, G=0.05, S=2048, progress=progress, nic=nic)
    eng = engine_for(graph)
    ev = eng.events(params)
    for parameter, col in (("L", 1), ("G", 2), ("o", 3)):
        base = getattr(params, parameter)
        vals = base * np.array([0.0, 0.1, 0.5, 1.0, 1.7, 3.0, 10.0, 40.0, 123.4])
        T, right, left = eng.probe_many(params, parameter, vals)
        for i, v in enumerate(vals):
            at = params.with_(**{parameter: float(v)})
            T1, r1 = _single(ev, at, np.array([col]), 1.0)
            T2, l1 = _single(ev, at, np.array([col]), -1.0)
            assert T[i] == T1 == T2
            assert right[i] == np.round(r1[0], 6)
            assert left[i] == np.round(l1[0], 6)
            assert left[i] <= right[i]


@pytest.mark.parametrize(("progress", "nic"), MODELS)
def test_lane_chunks_do_not_change_numbers(progress, nic, monkeypatch):
    import llamp.lp.engine as engine

    graph = _graph(4)
    params = LogGPS(L=2000.0, o=500.0, G=0.02, S=1024, progress=progress, nic=nic)
    vals = np.linspace(0.0, 50_000.0, 37)
    monkeypatch.setattr(engine, "LANES_PROBES", 2)
    wide = engine_for(graph).probe_many(params, "L", vals)
    monkeypatch.setattr(engine, "LANES", 3)
    mid = engine.GraphEngine(graph).probe_many(params, "L", vals)
    for a, b in zip(wide, mid, strict=True):
        assert np.array_equal(a, b)
    monkeypatch.setattr(engine, "LANES", 1)
    narrow = engine.GraphEngine(graph).probe_many(params, "L", vals)
    for a, b in zip(wide, narrow, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize(("progress", "nic"), MODELS)
@pytest.mark.parametrize("seed", [5, 6])
def test_sided_lanes_equal_single_sweeps(seed, progress, nic, paths):
    graph = _graph(seed)
    base = LogGPS(L=3000.0, o=800.0, G=0.05, S=2048, progress=progress, nic=nic)
    configs = [base.with_(L=L, G=G) for L in (0.0, 700.0, 9000.0) for G in (0.0, 0.01, 0.3)]
    points = engine_for(graph).points(configs)
    ev = engine_for(graph).events(base)
    cols = np.array([1, 2, 3])
    for pt, c in zip(points, configs, strict=True):
        T, right = _single(ev, c, cols, 1.0)
        _, left = _single(ev, c, cols, -1.0)
        assert pt.runtime_ns == T
        assert [pt.right[d] for d in "LGo"] == list(np.round(right, 6))
        assert [pt.left[d] for d in "LGo"] == list(np.round(left, 6))


@pytest.mark.parametrize(("progress", "nic"), MODELS)
def test_edge_and_calc_lanes_equal_single_sweeps(progress, nic):
    graph = _graph(8)
    params = LogGPS(L=1500.0, o=300.0, G=0.04, S=4096, progress=progress, nic=nic)
    ev = engine_for(graph).events(params)
    rng = np.random.default_rng(0)
    c = ev.coef
    const = np.ascontiguousarray(c[:, 0])
    cL = np.ascontiguousarray(c[:, 1])
    rest = np.ascontiguousarray(c[:, 2] * params.G + c[:, 3] * params.o + c[:, 4] * params.g)
    calc_row = np.where(const > 0, rng.integers(0, 5, ev.num_edges), -1).astype(np.int64)
    S = rng.uniform(0.5, 2.0, size=(6, 5))
    Ls = rng.uniform(0.0, 20_000.0, size=6)
    mask = kernels.ring_size(ev.in_ptr, ev.src) - 1
    T, right, left = kernels.calc_lanes(
        ev.in_ptr, ev.src, const, cL, rest, calc_row, S, Ls, True, mask
    )
    T0, _, _ = kernels.calc_lanes(ev.in_ptr, ev.src, const, cL, rest, calc_row, S, Ls, False, mask)
    assert np.array_equal(T, T0)
    W = np.empty((ev.num_edges, Ls.size))
    group = np.arange(ev.num_events, dtype=np.int64) % 3
    for j in range(Ls.size):
        scale = np.where(calc_row >= 0, S[j, np.maximum(calc_row, 0)], 1.0)
        w = const * scale + cL * Ls[j] + rest
        W[:, j] = w
        t, dr, _ = kernels.edge_slopes(ev.in_ptr, ev.src, w, cL[:, None], 1.0, REL_TOL, ABS_TOL_NS)
        _, dl, _ = kernels.edge_slopes(ev.in_ptr, ev.src, w, cL[:, None], -1.0, REL_TOL, ABS_TOL_NS)
        tight = t >= t.max() - (REL_TOL * t.max() + ABS_TOL_NS)
        assert T[j] == t.max()
        assert right[j] == dr[tight, 0].max()
        assert left[j] == dl[tight, 0].min()
        fin = kernels.edge_lanes(
            ev.in_ptr, ev.src, np.ascontiguousarray(W[:, : j + 1]), group, 3, mask
        )
        for g in range(3):
            assert fin[j, g] == t[group == g].max()
        lanes_T, path = kernels.affine_lanes(
            ev.in_ptr, ev.src, w, cL, rest, np.zeros(2), np.array([0.0, 2.0]), mask
        )
        assert lanes_T[0] == t.max()
        # one critical path's affine length: its constant is T at the point, and with weights
        # w + 2·rest its length is a lower bound of T there
        assert path[0, 0] == pytest.approx(t.max(), rel=1e-12)
        T2 = kernels.edge_lanes(
            ev.in_ptr, ev.src, np.ascontiguousarray((w + 2.0 * rest)[:, None]), group * 0, 1, mask
        )[0, 0]
        assert lanes_T[1] == pytest.approx(T2, rel=1e-12)
        assert path[0, 1] + 2.0 * path[2, 1] == pytest.approx(T2, rel=1e-12)
        assert path[0, 0] + 2.0 * path[2, 0] <= T2 * (1 + 1e-12)


def test_ring_covers_every_edge():
    graph = _graph(9)
    ev = engine_for(graph).events(LogGPS())
    dst = np.repeat(np.arange(ev.num_events), np.diff(ev.in_ptr))
    R = kernels.ring_size(ev.in_ptr, ev.src)
    assert R & (R - 1) == 0
    assert R > (dst - ev.src).max() == kernels.reach(ev.in_ptr, ev.src)


def _chain_and_star(n):
    """Event p follows p − 1 and p − 2 (reach 2): with weights of 10⁻¹² ns every event is a
    tight sink with its own time, more than a lane keeps as candidates."""
    in_ptr = np.r_[0, 0, 1 + 2 * np.arange(n - 1)].astype(np.int64)
    src = [0]
    for p in range(2, n):
        src += [p - 1, p - 2]
    src = np.array(src, dtype=np.int64)
    return in_ptr, src


@pytest.mark.parametrize("n", [50, 3 * kernels.CANDIDATES])
def test_lanes_equal_full_sweeps_on_rings_and_many_tight_sinks(n):
    in_ptr, src = _chain_and_star(n)
    pattern = (np.arange(src.size) % 2).astype(np.uint8)
    value = (np.arange(src.size) % 7).astype(np.float64)
    WA = np.array([[1e-12, 0.0, 1.0, 0.0], [1e-12, 1.5, 0.0, 0.0]])  # lane 3: all times equal
    WB = np.array([[0.0, 0.0, 0.5, 0.0], [0.0, 0.25, 0.0, 0.0]])
    sa = np.array([[1.0, 1.0], [0.0, 0.0]])
    sb = np.array([[0.0, 0.0], [1.0, 1.0]])
    mask = kernels.ring_size(in_ptr, src) - 1
    assert mask == 3
    T, agg = kernels.lanes(in_ptr, src, pattern, value, WA, WB, sa, sb, np.array([1.0, -1.0]), mask)
    for j in range(WA.shape[1]):
        T1, r = _single_arrays(in_ptr, src, pattern, value, WA[:, j], WB[:, j], sa, sb, 1.0)
        _, left = _single_arrays(in_ptr, src, pattern, value, WA[:, j], WB[:, j], sa, sb, -1.0)
        assert T[j] == T1
        assert agg[j, 0] == r[0] and agg[j, 1] == left[1]
    assert 0.0 < T[0] < ABS_TOL_NS
    over = kernels._lanes_pass(
        in_ptr,
        src,
        pattern,
        value,
        WA,
        WB,
        sa,
        sb,
        np.array([1.0, -1.0]),
        mask,
        np.zeros(0),
        REL_TOL,
        ABS_TOL_NS,
    )[2]
    # lane 0 keeps every event (distinct times, all tight): the pass is redone with the final
    # thresholds; lane 3's equal times merge into one candidate
    assert over == (n > kernels.CANDIDATES)


def _single_arrays(in_ptr, src, pattern, value, wa, wb, sa, sb, sign):
    t, d, _ = kernels.slopes(
        in_ptr, src, pattern, value, wa.copy(), wb.copy(), sa, sb, sign, REL_TOL, ABS_TOL_NS
    )
    T = t.max()
    tight = t >= T - (REL_TOL * abs(T) + ABS_TOL_NS)
    return T, d[tight].max(axis=0) if sign > 0 else d[tight].min(axis=0)


def test_a_pass_of_more_than_four_lanes_computes_a_multiple_of_four(monkeypatch):
    """Five values run as eight lanes (the extra three repeat the last value) and come back
    as five, each bit-identical to its own sweep."""
    import llamp.lp.kernels as kernels
    from llamp.lp.engine import _lane_weights

    assert [kernels.padded_lanes(k) for k in (1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 64)] == [
        1, 2, 3, 4, 8, 8, 8, 8, 12, 12, 12, 16, 64
    ]  # fmt: skip
    graph = _graph(3)
    params = LogGPS(L=2000.0, o=500.0, G=0.02, S=1024)
    eng = engine_for(graph)
    ev = eng.events(params)
    configs = [params.with_(L=L) for L in (0.0, 1000.0, 5000.0, 20_000.0, 80_000.0)]
    cols = np.array([1, 2, 3])
    sa, sb = np.ascontiguousarray(ev.fixed[:, cols]), np.ascontiguousarray(ev.scaled[:, cols])
    widths, real = [], kernels._lanes_pass
    monkeypatch.setattr(
        kernels, "_lanes_pass", lambda *args: widths.append(args[4].shape[1]) or real(*args)
    )
    WA, WB = _lane_weights(ev, configs)
    T, agg = kernels.lanes(
        ev.in_ptr, ev.src, ev.pattern, ev.value, WA, WB, sa, sb, np.ones(3), eng.mask(params)
    )
    assert widths[0] == 8 and T.shape == (5,) and agg.shape == (5, 3)
    for j, c in enumerate(configs):
        T1, right = _single(ev, c, cols, 1.0)
        assert T[j] == T1 and np.array_equal(agg[j], right)
