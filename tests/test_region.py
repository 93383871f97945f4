"""Joint tolerance regions: exact polygons {(u, v) : T(u, v) ≤ (1+x)·T0}."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_process import llamp
from hand_graphs import build, paper_example
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_graphs import random_graph

from llamp.errors import InputError
from llamp.lp import engine_for
from llamp.lp.matrix import message_model, two_level
from llamp.lp.region import (
    region_preview,
    tolerance_region,
    topology_variables,
    two_level_variables,
)
from llamp.lp.topology import FatTree, LinkLatencies, dense_mapping, topology_model
from llamp.lp.weighted import evaluate_model
from llamp.params import LogGPS


def two_paths():
    """Rank 0 sends 1 B to rank 1 (then 1000 ns of work) and 101 B to rank 2 (then 500 ns),
    then computes 1200 ns itself; o = 0, so ``T(L, G) = max(1200, 1000 + L, 500 + L + 100·G)``."""
    graph, _ = build(
        3,
        {
            "s1": (0, "send", 1, 1),
            "s2": (0, "send", 101, 2),
            "c0": (0, "calc", 1200.0),
            "r1": (1, "recv", 1, 0),
            "c1": (1, "calc", 1000.0),
            "r2": (2, "recv", 101, 0),
            "c2": (2, "calc", 500.0),
        },
        [
            ("s1", "requires", "s2"),
            ("s2", "requires", "c0"),
            ("r1", "requires", "c1"),
            ("r2", "requires", "c2"),
            ("s1", "message", "r1"),
            ("s2", "message", "r2"),
        ],
    )
    return graph


TWO_PATHS = LogGPS(L=100.0, o=0.0, G=1.0)  # T0 = 1200


def corners(level):
    return [(round(u, 9), round(v, 9)) for u, v in zip(level.u, level.v, strict=True)]


def test_the_paper_example_region_is_a_triangle():
    # T = max(1100 + L + 3G, 1500, 1100) (LLAMP Fig. 4, o = 0, s = 4 B); T0 = 1615 at L = 0.5 µs,
    # G = 5 ns/B; T ≤ 2 µs ⇔ L + 3G ≤ 900.
    region = tolerance_region(
        paper_example(),
        LogGPS(L=500.0, o=0.0, G=5.0, nic="overlap"),
        levels=[2000.0 / 1615.0 - 1.0],
    )
    level = region.levels[0]
    assert region.baseline_ns == pytest.approx(1615.0)
    assert level.bound_ns == pytest.approx(2000.0)
    assert corners(level) == [(0.0, 0.0), (900.0, 0.0), (0.0, 300.0)]
    assert [e.kind for e in level.edges] == ["box", "bound", "box"]
    bound = level.edges[1]
    assert (bound.lambda_u, bound.lambda_v, bound.constant_ns) == (1.0, 3.0, pytest.approx(1100.0))
    assert level.runtime_ns == pytest.approx([1500.0, 2000.0, 2000.0], rel=1e-12)
    assert level.on_bound.tolist() == [False, True, True]
    assert level.unbounded == () and level.complete


def test_two_paths_give_a_quadrilateral_with_each_path_on_its_edge():
    region = tolerance_region(two_paths(), TWO_PATHS, levels=[0.1, 0.25])
    assert region.baseline_ns == pytest.approx(1200.0)
    small, large = region.levels
    # 10 %: L ≤ 320 and L + 100·G ≤ 820.
    assert corners(small) == [(0.0, 0.0), (320.0, 0.0), (320.0, 5.0), (0.0, 8.2)]
    # 25 %: L ≤ 500 and L + 100·G ≤ 1000.
    assert corners(large) == [(0.0, 0.0), (500.0, 0.0), (500.0, 5.0), (0.0, 10.0)]
    edges = [(e.kind, e.lambda_u, e.lambda_v) for e in large.edges]
    assert edges == [
        ("box", None, None),
        ("bound", 1.0, 0.0),
        ("bound", 1.0, 100.0),
        ("box", None, None),
    ]
    assert [e.constant_ns for e in large.edges[1:3]] == [
        pytest.approx(1000.0),
        pytest.approx(500.0),
    ]
    assert large.contains(400.0, 5.9) and not large.contains(400.0, 6.1)
    assert not large.contains(501.0, 0.0)


def test_the_preview_has_the_region_s_box_and_exact_T_on_its_grid():
    """What the design-space page shows first: the same T0, bounds and box as the exact
    region, and on the grid T(L, G) = max(1200, 1000 + L, 500 + L + 100·G)."""
    region = tolerance_region(two_paths(), TWO_PATHS, levels=[0.1, 0.25])
    preview = region_preview(two_paths(), TWO_PATHS, levels=[0.1, 0.25], cells=6)
    assert preview.baseline_ns == region.baseline_ns
    assert preview.box == region.box
    assert preview.bounds_ns == pytest.approx((1320.0, 1500.0))
    assert preview.runtime_ns.shape == (6, 6)
    assert np.allclose(
        preview.runtime_ns, region.plane.runtime_grid(preview.us, preview.vs), rtol=1e-12
    )
    L, G = np.meshgrid(preview.us, preview.vs)
    by_hand = np.maximum.reduce([np.full_like(L, 1200.0), 1000.0 + L, 500.0 + L + 100.0 * G])
    assert np.allclose(preview.runtime_ns, by_hand, rtol=1e-12)
    with pytest.raises(InputError, match="at least 2 cells"):
        region_preview(two_paths(), TWO_PATHS, cells=1)


def test_a_box_clips_the_region_and_says_where_it_goes_on():
    region = tolerance_region(two_paths(), TWO_PATHS, levels=[0.25], box={"L": 400.0, "G": 50.0})
    level = region.levels[0]
    assert corners(level) == [(0.0, 0.0), (400.0, 0.0), (400.0, 6.0), (0.0, 10.0)]
    assert level.unbounded == ("L",)
    assert level.on_bound.tolist() == [False, False, True, True]
    assert region.box == (400.0, 50.0)


def test_a_variable_no_path_pays_is_unbounded():
    # One-byte messages never pay G: the region is a band L ≤ 320, whatever G.
    graph, _ = build(
        2,
        {
            "s": (0, "send", 1, 1),
            "c0": (0, "calc", 1200.0),
            "r": (1, "recv", 1, 0),
            "c1": (1, "calc", 1000.0),
        },
        [("s", "requires", "c0"), ("r", "requires", "c1"), ("s", "message", "r")],
    )
    level = tolerance_region(graph, TWO_PATHS, levels=[0.1]).levels[0]
    assert level.unbounded == ("G",)
    assert max(level.u) == pytest.approx(320.0)
    assert max(level.v) == pytest.approx(1.25)  # 1.25 × G0 (above the default span 1 ns/B)


def test_designs_are_evaluated_and_marked():
    region = tolerance_region(two_paths(), TWO_PATHS, levels=[0.1, 0.25])
    frame = region.designs({"fast": (100.0, 1.0), "mid": (450.0, 5.0), "slow": (600.0, 1.0)})
    assert frame["runtime_ns"].tolist() == pytest.approx([1200.0, 1450.0, 1600.0])
    assert frame["inside_10pct"].tolist() == [True, False, False]
    assert frame["inside_25pct"].tolist() == [True, True, False]
    assert frame["slack_25pct_ns"].tolist() == pytest.approx([300.0, 50.0, -100.0])


def test_bad_requests_are_input_errors():
    graph = two_paths()
    with pytest.raises(InputError, match="two different variables"):
        tolerance_region(graph, TWO_PATHS, axes=("L", "L"))
    with pytest.raises(InputError, match="unknown variable 'S'"):
        tolerance_region(graph, TWO_PATHS, axes=("L", "S"))
    with pytest.raises(InputError, match="contain the baseline"):
        tolerance_region(graph, TWO_PATHS, box={"L": 50.0})
    with pytest.raises(InputError, match="not an axis"):
        tolerance_region(graph, TWO_PATHS, box={"o": 50.0})


# ---------------------------------------------------------------------- property tests
def _check_exact(region, runtime, rng, samples=60):
    """Vertices on T = bound (1e-9 relative), edges on one path's level set, and sampled
    points inside the polygon ⇔ T ≤ bound, all against an independent evaluation."""
    su, sv = region.box
    for level in region.levels:
        B = level.bound_ns
        n = level.u.size
        for i in range(n):
            T = runtime(level.u[i], level.v[i])
            assert T == pytest.approx(level.runtime_ns[i], rel=1e-12, abs=1e-6)
            if level.on_bound[i]:
                assert abs(T - B) <= 1e-9 * B
            else:
                assert T <= B * (1 + 1e-12)
            edge = level.edges[i]
            j = (i + 1) % n
            mu, mv = (level.u[i] + level.u[j]) / 2, (level.v[i] + level.v[j]) / 2
            if edge.kind == "bound":
                piece = edge.constant_ns + edge.lambda_u * mu + edge.lambda_v * mv
                assert runtime(mu, mv) == pytest.approx(B, rel=1e-9)
                assert piece == pytest.approx(B, rel=1e-9)
        for u, v in zip(rng.uniform(0, su, samples), rng.uniform(0, sv, samples), strict=True):
            T = runtime(u, v)
            if abs(T - B) <= 1e-7 * B:
                continue  # too close to the boundary to classify by floats
            assert level.contains(u, v) == (T <= B), (u, v, T, B)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    axes=st.sampled_from([("L", "G"), ("L", "o"), ("G", "o"), ("G", "L")]),
    S=st.sampled_from([256, 1 << 30]),
)
def test_random_graphs_regions_match_direct_evaluation(seed, axes, S):
    graph = random_graph(seed, ranks=3, steps=40)
    params = LogGPS(L=1500.0, o=300.0, G=0.5, S=S)
    region = tolerance_region(graph, params, levels=[0.01, 0.05, 0.2], axes=axes)
    eng = engine_for(graph)
    assert region.baseline_ns == pytest.approx(eng.runtime(params), rel=1e-12)

    def runtime(u, v):
        return eng.runtime(params.with_(**{axes[0]: float(u), axes[1]: float(v)}))

    _check_exact(region, runtime, np.random.default_rng(seed))
    assert region.complete


def test_a_budget_stops_early_with_unverified_vertices_flagged():
    graph = random_graph(7, ranks=4, steps=80)
    params = LogGPS(L=1500.0, o=300.0, G=0.5, S=256)
    full = tolerance_region(graph, params, levels=[0.05])
    cut = tolerance_region(graph, params, levels=[0.05], max_evaluations=5)
    assert cut.evaluations <= 5 < full.evaluations
    assert not cut.complete and np.isnan(cut.levels[0].runtime_ns).any()
    # The true region lies inside the partial polygon.
    level = full.levels[0]
    for u, v in zip(level.u, level.v, strict=True):
        assert cut.levels[0].contains(u, v)


# ---------------------------------------------------------------------- link classes
def test_two_level_region_matches_the_per_pair_model():
    graph = random_graph(3, ranks=4, steps=60)
    params = LogGPS(L=1000.0, o=200.0, G=0.2, S=1 << 30)
    node = dense_mapping(4, 2).node_of_rank
    intra, inter = (300.0, 0.05), (2000.0, 0.2)
    variables = two_level_variables(graph, node, intra, inter)
    region = tolerance_region(
        graph, params, levels=[0.02, 0.1], axes=("L_intra", "L_inter"), variables=variables
    )
    assert [a.key for a in region.axes] == ["L_intra_ns", "L_inter_ns"]

    def runtime(u, v):
        costs = two_level(node, (u, intra[1]), (v, inter[1]))
        return evaluate_model(graph, params, message_model(graph, costs)).runtime_ns

    assert region.baseline_ns == pytest.approx(runtime(300.0, 2000.0), rel=1e-12)
    _check_exact(region, runtime, np.random.default_rng(3), samples=30)


def test_topology_region_over_a_link_class_and_G():
    graph = random_graph(11, ranks=8, steps=80)
    params = LogGPS(L=1000.0, o=200.0, G=0.2, S=1 << 30)
    topo = FatTree(4, tiers=3)
    mapping = dense_mapping(8, 1)
    variables = topology_variables(graph, params, topo, mapping)
    region = tolerance_region(graph, params, levels=[0.05], axes=("core", "G"), variables=variables)

    def runtime(u, v):
        model = topology_model(
            graph, topo, mapping, params.with_(G=float(v)), LinkLatencies(per_class_ns={"core": u})
        )
        return evaluate_model(graph, params.with_(G=float(v)), model).runtime_ns

    _check_exact(region, runtime, np.random.default_rng(11), samples=30)


def test_unknown_link_variable_names_the_choices():
    graph = random_graph(3, ranks=4, steps=20)
    variables = two_level_variables(graph, dense_mapping(4, 2).node_of_rank, (1, 0), (2, 0))
    with pytest.raises(InputError, match="L_intra, L_inter, G_intra, G_inter"):
        tolerance_region(graph, LogGPS(), axes=("L", "G"), variables=variables)


# ---------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def two_paths_npz(tmp_path_factory):
    path = tmp_path_factory.mktemp("graphs") / "two-paths.npz"
    two_paths().save(path)
    return path


def test_cli_region_json(two_paths_npz, tmp_path):
    out = llamp(
        "region", str(two_paths_npz), "--L", "100ns", "--o", "0", "--G", "1ns/B",
        "--x", "10,25", "--L-max", "2us", "--G-max", "50ns/B",
        "--design", "cheap=450ns,5ns/B", "--json", home=tmp_path,
    )  # fmt: skip
    data = json.loads(out.stdout)
    assert data["baseline_ns"] == pytest.approx(1200.0)
    assert data["box"] == {"L_ns": [0.0, 2000.0], "G_ns_per_byte": [0.0, 50.0]}
    assert [r["x"] for r in data["regions"]] == [0.1, 0.25]
    vertices = data["regions"][1]["vertices"]
    assert [(v["L_ns"], v["G_ns_per_byte"]) for v in vertices] == [
        (0.0, 0.0),
        pytest.approx((500.0, 0.0)),
        pytest.approx((500.0, 5.0)),
        pytest.approx((0.0, 10.0)),
    ]
    assert data["regions"][1]["edges"][2] == {
        "from": 2, "to": 3, "kind": "bound", "lambda_L": 1.0, "lambda_G": 100.0,
        "constant_ns": pytest.approx(500.0),
    }  # fmt: skip
    assert data["regions"][1]["unbounded"] == [] and data["complete"]
    assert data["evaluations"] > 0
    assert data["designs"][0]["design"] == "cheap"
    assert data["designs"][0]["inside_25pct"] and not data["designs"][0]["inside_10pct"]


def test_cli_region_table_and_two_level(two_paths_npz, tmp_path):
    out = llamp(
        "region", str(two_paths_npz), "--L", "100ns", "--o", "0", "--G", "1ns/B", "--x", "25",
        home=tmp_path,
    )  # fmt: skip
    assert "25% region: T ≤ 1.5 µs, 4 vertices" in out.stdout
    assert "λ_L = 1, λ_G = 100" in out.stdout
    out = llamp(
        "region", str(two_paths_npz), "--o", "0", "--intra", "100ns,1ns/B", "--inter",
        "200ns,1ns/B", "--ranks-per-node", "2", "--json", home=tmp_path,
    )  # fmt: skip
    data = json.loads(out.stdout)
    assert [a["name"] for a in data["axes"]] == ["L_intra", "L_inter"]
    assert data["source"].startswith("two-level")


def test_cli_region_bad_input_is_one_line(two_paths_npz, tmp_path):
    out = llamp("region", str(two_paths_npz), "--axes", "L,S", home=tmp_path, check=False)
    assert out.returncode == 2
    assert "unknown variable 'S'" in out.stderr and "Traceback" not in out.stderr
    out = llamp(
        "region",
        str(two_paths_npz),
        "--G-max",
        "1ns/B",
        "--axes",
        "L,o",
        home=tmp_path,
        check=False,
    )
    assert out.returncode == 2 and "G is not an axis" in out.stderr


def test_sweep3d_regions_are_exact():
    from test_cli_analyze import SWEEP3D

    from llamp.ingest import read

    graph = read(SWEEP3D)
    params = LogGPS()
    eng = engine_for(graph)
    for axes in (("L", "G"), ("L", "o")):
        region = tolerance_region(graph, params, axes=axes)
        assert region.complete

        def runtime(u, v, axes=axes):
            return eng.runtime(params.with_(**{axes[0]: float(u), axes[1]: float(v)}))

        _check_exact(region, runtime, np.random.default_rng(1), samples=40)


@pytest.mark.parametrize("seed", [5, 21])
def test_lp_tolerance_agrees_at_every_vertex(seed):
    """The LP engine (LLAMP Alg. 1's tolerance LP, ``max l s.t. t ≤ bound``) at the G of each
    boundary vertex gives back its L: an independent check of the polygon."""
    from llamp.lp.model import LinearProgram

    graph = random_graph(seed, ranks=3, steps=40)
    params = LogGPS(L=1500.0, o=300.0, G=0.5, S=256)
    region = tolerance_region(graph, params, levels=[0.05])
    level = region.levels[0]
    events = engine_for(graph).critical_events(params)[0]
    checked = 0
    for u, v, on in zip(level.u, level.v, level.on_bound, strict=True):
        if not on or u <= 0.0:
            continue
        lp = LinearProgram(events, params.with_(L=0.0, G=float(v)))
        assert lp.tolerance(level.bound_ns, parameter="L") == pytest.approx(u, rel=1e-6, abs=1e-3)
        checked += 1
    assert checked >= 1


def test_progress_is_the_share_of_the_boundaries_final_growing_to_one():
    """The noisy 2·10^4-vertex stencil (regions of tens of vertices): ``None`` while the box
    is sought, then a share that only grows (a verified vertex stays a vertex) and ends at 1;
    evaluations counted as they are spent."""
    from llamp.ingest.synthetic import stencil_with_vertices

    graph = stencil_with_vertices(20_000, ranks=16, alltoall_every=10)
    seen: list[tuple[float | None, int]] = []
    region = tolerance_region(
        graph, LogGPS(), levels=[0.01, 0.05], progress=lambda f, n: seen.append((f, n))
    )
    shares = [f for f, _ in seen if f is not None]
    assert seen[0][0] is None
    assert len(shares) > 3
    assert all(b >= a - 1e-12 for a, b in zip(shares, shares[1:], strict=False))
    assert 0.0 <= shares[0] < 0.5 and shares[-1] == pytest.approx(1.0, abs=1e-9)
    counts = [n for _, n in seen]
    assert counts == sorted(counts) and counts[-1] == region.evaluations


def test_the_preview_estimates_the_exact_regions_work():
    """Expected evaluations from the change of λ_L along the boundary (2 per edge and level)
    are within a factor 2 of the evaluations the search takes; the cost per evaluation is
    measured."""
    from llamp.ingest.synthetic import stencil_with_vertices

    graph = stencil_with_vertices(20_000, ranks=16, alltoall_every=10)
    levels = [0.01, 0.02, 0.05]
    preview = region_preview(graph, LogGPS(), levels=levels, cells=20)
    region = tolerance_region(graph, LogGPS(), levels=levels)
    assert preview.seconds_per_evaluation > 0
    spent = region.evaluations
    assert spent / 2 <= preview.expected_evaluations <= 2 * spent
    assert preview.expected_s() == pytest.approx(
        preview.expected_evaluations * preview.seconds_per_evaluation
    )
    assert preview.expected_s(1) == pytest.approx(preview.expected_s() / 3)
