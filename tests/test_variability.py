"""Monte Carlo over compute variability (Cornebize & Legrand 2022): spatial and temporal noise,
slow ranks; every sample exact, reproducible from the seed."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.ingest.synthetic import stencil_graph
from llamp.lp import engine_for, predict, tolerance
from llamp.lp.variability import VariabilitySpec, factors, monte_carlo, sample_costs
from llamp.lp.weighted import calc_edges, runtime_batch
from llamp.params import LogGPS

PARAMS = LogGPS()  # L = 3 µs, o = 1.5 µs, G = 0.018 ns/B, S = 256 KiB


@pytest.fixture(scope="module")
def synchronising() -> ExecutionGraph:
    """8 ranks, 20 iterations of a 1-D halo exchange and an allreduce, no built-in noise."""
    return stencil_graph(ranks=8, iterations=20, dims=1, imbalance=0.0, noise=0.0)


def with_costs(graph: ExecutionGraph, cost: np.ndarray) -> ExecutionGraph:
    return ExecutionGraph.from_arrays(
        graph.num_ranks,
        rank=graph.rank,
        kind=graph.kind,
        cost_ns=cost,
        size=graph.size,
        peer=graph.peer,
        tag=graph.tag,
        edge_src=graph.edge_src,
        edge_dst=graph.edge_dst,
        edge_kind=graph.edge_kind,
    )


@pytest.mark.parametrize("order", ["program", "schedule"])
def test_without_variability_every_sample_is_the_deterministic_value(synchronising, order):
    params = PARAMS.with_(order=order)
    result = monte_carlo(synchronising, params, samples=16, spatial_cv=0.0, temporal_cv=0.0)
    ref = predict(synchronising, params)
    tol = tolerance(synchronising, params, [0.01], bandwidth=False).latency[0].value
    if order == "program":
        # the program order's values for this graph, pinned: T = 820.00756 µs, 60 latencies
        assert (ref.runtime_ns, ref.lambda_L) == (pytest.approx(820_007.56), 60.0)
        assert tol == pytest.approx(3136.6679266667)
    s = result.samples
    np.testing.assert_allclose(s["runtime_ns"], ref.runtime_ns, rtol=1e-12)
    assert (s["lambda_L"] == ref.lambda_L).all()
    np.testing.assert_allclose(s["rho_L"], ref.rho_L, rtol=1e-12)
    np.testing.assert_allclose(s["tolerance_1pct_L_ns"], tol, rtol=1e-9)
    summary = result.summary.set_index("quantity")
    assert summary.loc["runtime_ns", "sd"] < 1e-9 * ref.runtime_ns
    assert summary.loc["runtime_ns", "p5"] == pytest.approx(
        summary.loc["runtime_ns", "p95"], rel=1e-12
    )
    assert summary.loc["runtime_ns", "baseline"] == ref.runtime_ns
    assert result.baseline["tolerance_1pct_L_ns"] == tol
    assert result.params.order == order


def test_each_sample_equals_the_engine_on_its_own_costs(synchronising):
    """Sample j, re-evaluated by the ordinary analyses on a graph with sample j's costs, gives the
    same T (1e-12), λ_L (exact) and 1 % / 5 % latency tolerance (1e-9): under the default
    schedule order each sample is re-scheduled at its own costs."""
    assert PARAMS.order == "schedule"
    spec = VariabilitySpec(spatial_cv=0.05, temporal_cv=0.1, samples=12, seed=7)
    result = monte_carlo(synchronising, PARAMS, spec, levels=(0.01, 0.05), batch=5)
    for j in (0, 4, 11):
        graph = with_costs(synchronising, sample_costs(synchronising, spec, j))
        ref = predict(graph, PARAMS)
        row = result.samples.iloc[j]
        assert row["runtime_ns"] == pytest.approx(ref.runtime_ns, rel=1e-12)
        assert row["lambda_L"] == ref.lambda_L
        tol = tolerance(graph, PARAMS, [0.01, 0.05], bandwidth=False).latency
        assert row["tolerance_1pct_L_ns"] == pytest.approx(tol[0].value, rel=1e-9)
        assert row["tolerance_5pct_L_ns"] == pytest.approx(tol[1].value, rel=1e-9)
    assert result.samples["runtime_ns"].nunique() == 12


def test_runtimes_match_runtime_batch(synchronising):
    """The fused sampler kernel and llamp.lp.weighted.runtime_batch agree on T. Both evaluate
    one event graph for every sample: the program order's (the schedule order re-schedules
    each sample, ``test_each_sample_equals_the_engine_on_its_own_costs``)."""
    params = PARAMS.with_(order="program")
    spec = VariabilitySpec(spatial_cv=0.1, temporal_cv=0.1, samples=6, seed=1)
    result = monte_carlo(synchronising, params, spec, sensitivity=False)
    ev = engine_for(synchronising).events(params)
    edges, vertices = calc_edges(synchronising, ev)
    scales = np.ones((ev.num_edges, spec.samples))
    base = synchronising.cost_ns[vertices]
    for j in range(spec.samples):
        cost = sample_costs(synchronising, spec, j)[vertices]
        scales[edges, j] = np.where(base > 0, cost / np.where(base > 0, base, 1.0), 1.0)
    np.testing.assert_allclose(
        result.samples["runtime_ns"], runtime_batch(synchronising, params, scales), rtol=1e-12
    )
    assert list(result.samples.columns) == ["sample", "runtime_ns"]


def test_mean_runtime_grows_with_temporal_variability(synchronising):
    """An allreduce every iteration waits for the slowest rank: E[max] > max E, so the mean T
    rises with the temporal CV, and even P5 exceeds the noise-free T."""
    T0 = predict(synchronising, PARAMS).runtime_ns
    means = []
    for cv in (0.0, 0.05, 0.1, 0.2):
        s = monte_carlo(
            synchronising, PARAMS, samples=200, temporal_cv=cv, seed=3, sensitivity=False
        )
        summary = s.summary.set_index("quantity").loc["runtime_ns"]
        means.append(summary["mean"])
        if cv > 0:
            assert summary["p5"] > T0
    assert means[0] == pytest.approx(T0, rel=1e-12)
    assert means[0] < means[1] < means[2] < means[3]
    assert means[3] > 1.03 * T0


def test_seed_reproduces_and_samples_do_not_depend_on_batching(synchronising):
    spec = VariabilitySpec(spatial_cv=0.05, temporal_cv=0.02, samples=10, seed=42)
    a = monte_carlo(synchronising, PARAMS, spec, batch=3, workers=1)
    b = monte_carlo(synchronising, PARAMS, spec, batch=7, workers=2)
    pd.testing.assert_frame_equal(a.samples, b.samples)
    longer = monte_carlo(
        synchronising, PARAMS, samples=25, spatial_cv=0.05, temporal_cv=0.02, seed=42
    )
    pd.testing.assert_frame_equal(longer.samples.iloc[:10], a.samples)
    other = monte_carlo(
        synchronising, PARAMS, samples=10, spatial_cv=0.05, temporal_cv=0.02, seed=43
    )
    assert not np.array_equal(other.samples["runtime_ns"], a.samples["runtime_ns"])


def test_slow_ranks(synchronising):
    """Without noise, ranks 3 and 5 slowed 1.5× give exactly the T of the graph whose calcs on
    ranks 3 and 5 cost 1.5× as much."""
    result = monte_carlo(synchronising, PARAMS, samples=3, slow_ranks=(3, 5), slowdown=1.5)
    cost = synchronising.cost_ns * np.where(np.isin(synchronising.rank, [3, 5]), 1.5, 1.0)
    ref = predict(with_costs(synchronising, cost), PARAMS)
    np.testing.assert_allclose(result.samples["runtime_ns"], ref.runtime_ns, rtol=1e-12)
    assert (result.samples["lambda_L"] == ref.lambda_L).all()
    assert result.baseline["runtime_ns"] == predict(synchronising, PARAMS).runtime_ns
    assert ref.runtime_ns > 1.1 * result.baseline["runtime_ns"]


@pytest.mark.parametrize("distribution", ["lognormal", "normal", "halfnormal"])
def test_factor_distributions_have_mean_one_and_the_cv(distribution):
    x = factors(np.random.default_rng(0), 1_000_000, 0.2, distribution)
    assert x.mean() == pytest.approx(1.0, abs=1e-3)
    assert x.std() / x.mean() == pytest.approx(0.2, abs=2e-3)
    assert x.min() > 0.0
    if distribution != "normal":  # both skewed toward slow calls, as measured kernels are
        assert np.mean(x > 1.0) < 0.5


def test_bad_specs_are_errors(synchronising):
    with pytest.raises(InputError, match="slow rank 8 is outside 0..7"):
        monte_carlo(synchronising, PARAMS, samples=2, slow_ranks=(8,), slowdown=2.0)
    with pytest.raises(InputError, match="temporal cv must be a finite value ≥ 0"):
        VariabilitySpec(temporal_cv=-0.1)
    with pytest.raises(InputError, match="half-normal factor with mean 1 has CV ≤ 0.756"):
        VariabilitySpec(temporal_cv=0.8, distribution="halfnormal")
    with pytest.raises(InputError, match="unknown distribution 'gamma'"):
        VariabilitySpec(distribution="gamma")
    with pytest.raises(InputError, match="either a VariabilitySpec or its fields"):
        monte_carlo(synchronising, PARAMS, VariabilitySpec(), samples=3)


def test_cli_mc(capsys, tmp_path, synchronising):
    from llamp.cli import main

    path = synchronising.save(tmp_path / "sync.npz")

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as info:
            main([str(a) for a in args])
        out = capsys.readouterr()
        return info.value.code, out.out, out.err

    args = (
        "mc",
        path,
        "--samples",
        "40",
        "--spatial-cv",
        "0.05",
        "--temporal-cv",
        "0.02",
        "--slow-ranks",
        "3,7",
        "--slowdown",
        "1.5",
        "--seed",
        "5",
        "--json",
    )
    code, out, err = run(*args)
    assert code == 0, err
    payload = json.loads(out)
    summary = {r["quantity"]: r for r in payload["summary"]}
    assert set(summary) == {"runtime_ns", "lambda_L", "rho_L", "tolerance_1pct_L_ns"}
    assert payload["spec"]["slow_ranks"] == [3, 7]
    assert summary["runtime_ns"]["p5"] > summary["runtime_ns"]["baseline"]
    assert math.isfinite(summary["tolerance_1pct_L_ns"]["mean"])
    code, again, _ = run(*args)
    assert json.loads(again)["summary"] == payload["summary"]
    csv = tmp_path / "samples.csv"
    code, out, err = run(
        "mc", path, "--samples", "5", "--temporal-cv", "0.1", "--runtime-only", "--samples-csv", csv
    )
    assert code == 0, err
    assert "\nT " in out and "λ_L" not in out
    assert pd.read_csv(csv).shape == (5, 2)
    code, _, err = run("mc", path, "--samples", "5", "--slow-ranks", "99", "--slowdown", "2")
    assert code == 2 and "slow rank 99" in err
