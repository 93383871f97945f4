"""The single-pass checks of graph-file columns (:mod:`llamp.checks`): the compiled kernels
(big columns) and numpy's reductions (small ones) give the same answer on seeded columns,
sound and damaged alike."""

from __future__ import annotations

import numpy as np
import pytest

from llamp import checks


@pytest.fixture(params=["numpy", "compiled"])
def path(request, monkeypatch) -> str:
    monkeypatch.setattr(checks, "COMPILED_MIN", 0 if request.param == "compiled" else 1 << 62)
    return request.param


def _csr(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    degree = rng.integers(0, 4, n)
    degree[0] = 0
    in_ptr = np.concatenate(([0], np.cumsum(degree))).astype(np.int32)
    dst = np.repeat(np.arange(n), degree)
    src = (dst - 1 - rng.integers(0, 3, dst.size)).clip(0).astype(np.int32)
    return in_ptr, src


def test_the_checks_find_each_defect_at_its_index(path):
    rng = np.random.default_rng(20261127)
    for _ in range(100):
        n = int(rng.integers(2, 30_000))
        rank = np.sort(rng.integers(0, 64, n)).astype(np.int32)
        assert checks.first_descent(rank) == -1
        j = int(rng.integers(1, n))
        rank[j] = rank[j - 1] - 1
        assert checks.first_descent(rank) == int(np.flatnonzero(np.diff(rank) < 0)[0]) + 1
        assert tuple(checks.bounds(rank)) == (rank.min(), rank.max())
        cost = rng.random(n) * 1e6
        assert checks.first_not_finite_nonnegative(cost) == -1
        k = int(rng.integers(0, n))
        cost[k] = rng.choice([np.nan, -1e-300, np.inf, -np.inf])
        assert checks.first_not_finite_nonnegative(cost) == k
        in_ptr, src = _csr(rng, n)
        assert checks.forward_csr(in_ptr, src)
        if src.size:
            e = int(rng.integers(0, src.size))
            position = int(np.searchsorted(in_ptr, e, side="right")) - 1
            src[e] = rng.choice([position, position + 1, -1])  # itself, ahead, negative
            assert not checks.forward_csr(in_ptr, src)


def test_pointers_that_go_back_or_past_the_edges_are_refused_before_any_read(path):
    in_ptr, src = _csr(np.random.default_rng(7), 1000)
    for damage in (2**31 - 1, -5, src.size + 1):
        bad = in_ptr.copy()
        bad[500] = damage
        assert not checks.forward_csr(bad, src)
    short = in_ptr.copy()
    short[-1] = src.size - 1  # does not end at the edge count
    assert not checks.forward_csr(short, src)
