"""The network pages of the web UI under AppTest: topology what-if (LLAMP Fig. 11, App. H),
sensitivity matrices (App. I) and rank placement (App. J) show what the Python API computes for
the same inputs on the Sweep3D trace.

The store is a temporary embedded store (``LLAMP_HOME``) holding Sweep3D as run ``sweep3d``.
"""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
from apptest_pages import (
    RUN,
    arr,
    assert_clean,
    exact_ns,
    figures,
    keyed,
    metric,
    page,
    table,
)
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

from llamp.config import format_ns
from llamp.lp import predict
from llamp.lp.matrix import from_topology, pair_sensitivity, two_level
from llamp.lp.placement import (
    block_mapping,
    format_mapping,
    mapping_runtime,
    place,
    round_robin_mapping,
    two_level_machine,
    volume_mapping,
)
from llamp.lp.topology import (
    FatTree,
    LinkLatencies,
    compare_topologies,
    dense_mapping,
    sweep_topologies,
)
from llamp.params import LogGPS
from llamp.ui import page_work

#: The paper's Fig. 11 topologies, the page's default choice.
PAPER_SPECS = ["fattree:k=16,tiers=3", "dragonfly:g=8,a=4,p=8"]
#: The page's default two-level model: (L ns, G ns/B) within and between nodes.
INTRA, INTER = (300.0, 0.05), (3000.0, 0.018)
#: A two-switch topology as an edge list: h0, h1 on s0; h2, h3 on s1 (leaves = compute nodes).
EDGE_LIST = b"h0 s0 terminal\nh1 s0 terminal\nh2 s1 terminal\nh3 s1 terminal\ns0 s1 trunk\n"


@pytest.fixture(scope="module")
def graph(sweep3d):
    """The Sweep3D graph that ``home`` (conftest) stores as run ``sweep3d``."""
    return sweep3d


@pytest.fixture
def downloads(monkeypatch) -> dict[str, bytes]:
    """Contents of every download button's file, by file name."""
    files: dict[str, bytes] = {}
    real = MemoryMediaFileStorage.load_and_get_id

    def record(self, path_or_data, mimetype, kind, filename=None):
        if filename is not None and isinstance(path_or_data, bytes):
            files[filename] = path_or_data
        return real(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", record)
    return files


def counting(monkeypatch, name: str, module: object = page_work) -> list:
    """Replace ``module.<name>`` (default ``llamp.ui.page_work``; a ``llamp.lp`` module for the
    registered analyses, which import their function when they run) by a wrapper that records
    its calls."""
    calls: list = []
    real = getattr(module, name)

    def wrapper(*args, **kw):
        calls.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(module, name, wrapper)
    return calls


def grid(value) -> np.ndarray:
    """A Plotly 2-D data array: nested lists, or a typed array with a ``shape`` ("4, 4")."""
    if isinstance(value, dict) and "shape" in value:
        shape = tuple(int(n) for n in value["shape"].split(","))
        return arr(value).reshape(shape).astype(float)
    return np.asarray(value, dtype=float)


def download_keys(at) -> set[str]:
    return {b.key for b in at.get("download_button")}


def class_rows(at) -> pd.DataFrame:
    return table(at, "tolerance_1pct_ns").set_index(["topology", "variable"])


# ---------------------------------------------------------------------- Topology what-if
def test_topology_page_shows_the_api_numbers(store_env, graph):
    """Fat tree k=16 vs dragonfly g=8,a=4,p=8 (the paper's Fig. 11 pair) at the base
    latencies: T, λ per link class and the 1/2/5% tolerances are those of compare_topologies."""
    expected = compare_topologies(graph, LogGPS(), PAPER_SPECS)
    at = page("topology")
    assert_clean(at)
    assert at.title[0].value == "Topology what-if"
    for key in ("topo_fattree", "topo_dragonfly", "topo_torus"):
        assert at.checkbox(key=key) is not None
    assert at.number_input(key="topo_ft_k").value == 16
    assert at.file_uploader(key="topo_files") is not None
    assert at.file_uploader(key="topo_mapping") is not None
    assert {"csv_topo_summary", "csv_topo_classes", "csv_topo_sweep"} <= download_keys(at)

    for i, analysis in enumerate(expected.analyses):
        block = keyed(at, f"topo-runtime-{i}")
        assert block.metric[0].label == analysis.topology
        assert block.metric[0].value == format_ns(analysis.runtime_ns)
        assert exact_ns(block) == pytest.approx(analysis.runtime_ns, abs=1e-5)

    shown = class_rows(at)
    want = expected.variables.set_index(["topology", "variable"])
    assert list(shown.index) == list(want.index)
    np.testing.assert_array_equal(shown["lambda"], want["lambda"])
    np.testing.assert_allclose(shown["value_ns"], want["value_ns"])
    for x in (0.01, 0.02, 0.05):
        tol = expected.tolerances[np.isclose(expected.tolerances["x"], x)]
        tol = tol.set_index(["topology", "variable"]).loc[shown.index]
        pct = f"{x * 100:g}pct"
        # A column with an unbounded tolerance is text, in six significant digits.
        np.testing.assert_allclose(shown[f"tolerance_{pct}_ns"], tol["tolerance_ns"], rtol=1e-5)
        np.testing.assert_allclose(shown[f"headroom_{pct}_ns"], tol["headroom_ns"], rtol=1e-5)
    # Sweep3D's critical path crosses only edge / terminal wires, so core and inter-group
    # latencies are free: ∞ tolerance.
    assert shown.loc[("fattree:k=16,tiers=3", "core"), "tolerance_1pct_ns"] == np.inf
    assert shown.loc[("dragonfly:g=8,a=4,p=8", "terminal"), "lambda"] > 0

    summary = table(at, "mean_switches")
    np.testing.assert_allclose(summary["runtime_ns"], expected.summary["runtime_ns"], rtol=1e-15)
    np.testing.assert_allclose(summary["mean_switches"], expected.summary["mean_switches"])

    lam = figures(at)[0]
    assert [t["name"] for t in lam["data"]] == PAPER_SPECS
    np.testing.assert_array_equal(
        arr(lam["data"][0]["y"]), want.loc[PAPER_SPECS[0], "lambda"].to_numpy()
    )


def test_topology_sweep_is_the_papers_fig11(store_env, graph):
    """T over l_wire from 274 ns to 424 ns, one curve per topology (Fig. 11), equal to
    sweep_topologies at the 61 values and at every breakpoint between them, so the line drawn
    through them is T itself (T at each midpoint is on it); the x axis is in ns."""
    values = np.linspace(274.0, 424.0, 61)
    at = page("topology")
    assert_clean(at)
    fig = figures(at)[1]
    assert fig["layout"]["xaxis"]["title"]["text"] == "l_wire (ns)"
    assert fig["layout"]["yaxis"]["title"]["text"] == "predicted runtime T (s)"
    curves = [t for t in fig["data"] if t["mode"] == "lines"]
    assert [t["name"] for t in curves] == PAPER_SPECS
    drawn = []
    for trace in curves:
        x, y = arr(trace["x"]), arr(trace["y"]) * 1e9
        assert np.isin(values, x).all()
        want = sweep_topologies(graph, LogGPS(), [trace["name"]], x)
        np.testing.assert_allclose(y, want["runtime_ns"], rtol=1e-14)
        middle = sweep_topologies(graph, LogGPS(), [trace["name"]], (x[1:] + x[:-1]) / 2)
        np.testing.assert_allclose(middle["runtime_ns"], (y[1:] + y[:-1]) / 2, rtol=1e-12)
        drawn.append(want)
    expected = pd.concat(drawn, ignore_index=True)
    swept = table(at, "slowdown")
    np.testing.assert_allclose(swept["runtime_ns"], expected["runtime_ns"], rtol=1e-14)
    np.testing.assert_array_equal(swept["lambda"], expected["lambda"])


def test_changing_a_latency_recomputes_and_a_plot_option_does_not(store_env, graph, monkeypatch):
    analysed = counting(monkeypatch, "analyze_topology")
    swept = counting(monkeypatch, "topology_model")
    at = page("topology")
    at.text_input(key="topo_wire").set_value("300ns").run()
    assert_clean(at)
    expected = compare_topologies(graph, LogGPS(), PAPER_SPECS, latencies=LinkLatencies(300.0))
    assert exact_ns(keyed(at, "topo-runtime-0")) == pytest.approx(
        expected.analyses[0].runtime_ns, abs=1e-5
    )
    computed = (len(analysed), len(swept))
    assert min(computed) >= 2, "both topologies analysed and swept at the new latency"
    assert {args[4].wire_ns for args in analysed[-2:] + swept[-2:]} == {300.0}
    # The sweep starts at the new base latency.
    fig = figures(at)[1]
    assert arr(fig["data"][0]["x"])[0] == 300.0
    assert arr(fig["data"][0]["x"])[-1] == 450.0

    at.toggle(key="topo_slowdown").set_value(True).run()
    at.toggle(key="topo_share").set_value(True).run()
    assert_clean(at)
    assert (len(analysed), len(swept)) == computed, "a plot option must not recompute"
    fig = figures(at)[1]
    assert fig["layout"]["yaxis"]["title"]["text"] == "slowdown T / T(base) − 1 (%)"
    assert arr(fig["data"][0]["y"])[0] == 0.0
    assert figures(at)[0]["layout"]["yaxis"]["title"]["text"] == "value·λ / T (%)"


@pytest.mark.slow  # 3–10 s: several subprocesses / page runs
def test_torus_ranks_per_node_and_class_latencies(store_env, graph):
    """Three topologies, 2 ranks per node, a slower core: the API's numbers; l_wire has no
    single value on the fat tree any more, so its sweep says so and the others still run."""
    specs = [*PAPER_SPECS, "torus:dims=4x4x4,p=1"]
    latencies = LinkLatencies(per_class_ns={"core": 500.0})
    expected = compare_topologies(graph, LogGPS(), specs, ranks_per_node=2, latencies=latencies)
    at = page("topology")
    at.checkbox(key="topo_torus").check().run()
    at.number_input(key="topo_rpn").set_value(2).run()
    at.text_input(key="topo_classes").set_value("core=500ns").run()
    assert not at.exception
    for i, analysis in enumerate(expected.analyses):
        assert exact_ns(keyed(at, f"topo-runtime-{i}")) == pytest.approx(
            analysis.runtime_ns, abs=1e-5
        )
    shown = class_rows(at)
    want = expected.variables.set_index(["topology", "variable"])
    np.testing.assert_array_equal(shown["lambda"], want.loc[shown.index, "lambda"])
    assert shown.loc[("torus:dims=4x4x4,p=1", "l_intra_node"), "lambda"] > 0
    assert [e.value for e in at.error] == [
        "Sweep on fattree:k=16,tiers=3: fattree:k=16,tiers=3: the link classes have different "
        "latencies, so l_wire has no single value to sweep from; sweep one class instead"
    ]
    curves = [t["name"] for t in figures(at)[1]["data"] if t["mode"] == "lines"]
    assert curves == specs[1:]


@pytest.mark.slow  # 3–10 s: several subprocesses / page runs
def test_uploaded_graph_and_mapping_files(store_env, graph, tmp_path):
    """An edge-list topology and a mapping file, uploaded: the numbers of the same files
    given to compare_topologies."""
    topo_file = tmp_path / "two-switches.txt"
    topo_file.write_bytes(EDGE_LIST)
    mapping_file = tmp_path / "mapping.txt"
    mapping_file.write_text("h0\nh2\nh1\nh3\n")
    expected = compare_topologies(graph, LogGPS(), [str(topo_file)], mapping_file=mapping_file)
    at = page("topology")
    at.checkbox(key="topo_fattree").uncheck().run()
    at.checkbox(key="topo_dragonfly").uncheck().run()
    at.file_uploader(key="topo_files").set_value((topo_file.name, EDGE_LIST, "text/plain")).run()
    at.file_uploader(key="topo_mapping").set_value(
        (mapping_file.name, mapping_file.read_bytes(), "text/plain")
    ).run()
    assert_clean(at)
    block = keyed(at, "topo-runtime-0")
    assert block.metric[0].label == "graph:two-switches.txt"
    assert exact_ns(block) == pytest.approx(expected.analyses[0].runtime_ns, abs=1e-5)
    shown = class_rows(at)
    assert list(shown.index.get_level_values("variable")) == [
        "terminal",
        "trunk",
        "l_wire",
        "d_switch",
        "l_intra_node",
    ]
    np.testing.assert_array_equal(shown["lambda"], expected.variables["lambda"])
    assert table(at, "mean_switches")["mapping"].iloc[0] == "mapping.txt"


def test_bad_topology_inputs_are_readable_errors(store_env):
    at = page("topology")
    at.checkbox(key="topo_torus").check().run()
    at.text_input(key="topo_torus_dims").set_value("4xq").run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Topology inputs: topology 'torus:dims=4xq,p=1': dims='4xq' is not e.g. 4x4x4"
    ]
    assert not at.metric
    at.text_input(key="topo_torus_dims").set_value("4x4").run()
    at.text_input(key="topo_classes").set_value("nosuch=1us").run()
    assert not at.exception
    assert any("no topology has a link class 'nosuch'" in e.value for e in at.error)
    at.text_input(key="topo_classes").set_value("").run()
    at.number_input(key="topo_rpn").set_value(1).run()
    at.file_uploader(key="topo_mapping").set_value(("map.txt", b"0\n1\n", "text/plain")).run()
    assert not at.exception
    assert any("map.txt: 2 nodes listed, the graph has 4 ranks" in e.value for e in at.error), [
        e.value for e in at.error
    ]
    assert all("llamp-ui-" not in e.value for e in at.error), "no temporary path is shown"


# ---------------------------------------------------------------------- Sensitivity matrices
def test_matrices_page_two_level(store_env, graph):
    """The default two-level model (2 ranks per node): heatmaps of λ_L^{ij}, λ_G^{ij} and
    the pair table are pair_sensitivity's."""
    node = dense_mapping(graph.num_ranks, 2).node_of_rank
    expected = pair_sensitivity(graph, LogGPS(), two_level(node, INTRA, INTER))
    at = page("matrices")
    assert_clean(at)
    assert at.radio(key="mx_source").value == "Two-level node model"
    assert at.number_input(key="mx_rpn").value == 2
    assert exact_ns(keyed(at, "mx-runtime")) == pytest.approx(expected.runtime_ns, abs=1e-5)
    assert metric(at, "λ_L = Σ λ_L^ij").value == f"{expected.lambda_L.sum():g}"

    lam_L, lam_G, costs_L, costs_G = figures(at)
    z = grid(lam_L["data"][0]["z"])
    np.testing.assert_array_equal(z, expected.lambda_L)
    hot = np.unravel_index(np.argmax(z), z.shape)  # the hottest pair crosses the nodes
    assert z.max() == expected.lambda_L.max() > 0 and node[hot[0]] != node[hot[1]]
    np.testing.assert_array_equal(grid(lam_G["data"][0]["z"]), expected.lambda_G)
    assert lam_L["data"][0]["colorbar"]["title"]["text"] == (
        "latency terms on the critical path (ns/ns)"
    )
    assert (
        lam_G["data"][0]["colorbar"]["title"]["text"] == "bytes on the critical path (ns per ns/B)"
    )
    assert lam_L["layout"]["xaxis"]["title"]["text"] == "receiver rank j"
    np.testing.assert_array_equal(grid(costs_L["data"][0]["z"]), expected.costs.latency_ns)

    pairs = table(at, "latency_share").reset_index(drop=True)
    want = expected.frame().head(10).reset_index(drop=True)
    np.testing.assert_allclose(pairs["latency_share"], want["latency_share"], rtol=1e-12)
    np.testing.assert_array_equal(pairs["src"], want["src"])
    np.testing.assert_allclose(pairs["latency_ns"], want["latency_ns"], rtol=1e-12)
    assert {"csv_pairs", "csv_lambda_L", "csv_lambda_G"} <= download_keys(at)


def test_matrix_plot_options_do_not_recompute(store_env, graph, monkeypatch):
    calls = counting(monkeypatch, "pair_sensitivity", importlib.import_module("llamp.lp.matrix"))
    at = page("matrices")
    at.text_input(key="mx_inter_L").set_value("5us").run()  # a key no cache holds
    assert_clean(at)
    node = dense_mapping(graph.num_ranks, 2).node_of_rank
    expected = pair_sensitivity(graph, LogGPS(), two_level(node, INTRA, (5000.0, 0.018)))
    computed = len(calls)
    assert computed >= 1 and calls[-1][2].latency_ns.max() == 5000.0
    at.toggle(key="mx_symmetric").set_value(True).run()
    at.toggle(key="mx_log").set_value(True).run()
    assert_clean(at)
    assert len(calls) == computed, "a plot option must not recompute"
    heat = figures(at)[0]["data"][0]
    sym = expected.lambda_L + expected.lambda_L.T
    np.testing.assert_array_equal(grid(heat["customdata"]), sym)
    with np.errstate(divide="ignore"):
        logs = np.where(sym > 0, np.log10(sym), np.nan)
    np.testing.assert_allclose(grid(heat["z"]), logs)
    assert heat["colorbar"]["title"]["text"].startswith("log10 ")


def test_matrices_from_a_topology_and_uniform(store_env, graph):
    params = LogGPS()
    expected = from_topology(FatTree(4, tiers=2), dense_mapping(graph.num_ranks), params)
    result = pair_sensitivity(graph, params, expected)
    at = page("matrices")
    at.radio(key="mx_source").set_value("Topology").run()
    assert_clean(at)
    assert at.text_input(key="mx_topology").value == "fattree:k=4,tiers=2"
    lam_L, _, costs_L, _ = figures(at)
    np.testing.assert_array_equal(grid(lam_L["data"][0]["z"]), result.lambda_L)
    # Ranks 0, 1 share a leaf (2 wires, 1 switch: 656 ns); 0 → 2 crosses a spine (1420 ns).
    np.testing.assert_array_equal(grid(costs_L["data"][0]["z"]), expected.latency_ns)
    assert expected.latency_ns[0, 1] == 656.0 and expected.latency_ns[0, 2] == 1420.0

    at.radio(key="mx_source").set_value("Uniform L, G (sidebar)").run()
    assert_clean(at)
    # With one L for every pair, the pair sensitivities add up to the homogeneous λ_L.
    assert metric(at, "λ_L = Σ λ_L^ij").value == f"{predict(graph, params).lambda_L:g}"


def test_bad_matrix_input_is_readable(store_env):
    at = page("matrices")
    at.text_input(key="mx_intra_G").set_value("fast").run()
    assert not at.exception
    assert at.error and at.error[0].value.startswith("Matrix inputs: cannot read gap per byte")
    assert not at.get("plotly_chart")


# ---------------------------------------------------------------------- Placement
def two_level_default(graph, nodes: int = 2, hosts=None):
    return two_level_machine(nodes, 2, INTRA, INTER, hostnames=hosts)


def test_placement_page_shows_the_api_numbers(store_env, graph, downloads, monkeypatch):
    """Block, round-robin, volume and the heuristic's mapping: each predicted T is the API's;
    the downloaded rankfile is format_mapping of the best mapping."""
    runs = counting(monkeypatch, "place", importlib.import_module("llamp.lp.placement"))
    params = LogGPS()
    machine = two_level_default(graph)
    at = page("placement")
    assert_clean(at)
    assert at.radio(key="place_machine").value == "Two-level (intra/inter-node)"
    assert at.selectbox(key="place_start").value == "best"
    assert not at.get("plotly_chart"), "nothing runs before the button is pressed"
    at.button(key="place_run").click().run()
    assert_clean(at)
    assert len(runs) == 1

    shown = table(at, "vs_block").set_index("mapping")
    assert set(shown.index) == {"block", "round-robin", "volume", "llamp"}
    P = graph.num_ranks
    baselines = {
        "block": block_mapping(P, machine),
        "round-robin": round_robin_mapping(P, machine),
        "volume": volume_mapping(graph, machine),
    }
    for name, node in baselines.items():
        assert shown.loc[name, "runtime_ns"] == mapping_runtime(graph, params, machine, node)
    expected = place(graph, params, machine, budget_s=30.0)
    assert expected.stop_reason.startswith("no swap") and expected.best == "llamp"
    assert shown.loc["llamp", "runtime_ns"] == mapping_runtime(
        graph, params, machine, expected.node_of_rank["llamp"]
    )
    pd.testing.assert_frame_equal(
        table(at, "vs_block")[list(expected.mappings.columns)].reset_index(drop=True),
        expected.mappings,
        check_dtype=False,
    )
    llamp_T = float(expected.mappings.set_index("mapping").loc["llamp", "runtime_ns"])
    assert exact_ns(keyed(at, "place-runtime-llamp")) == pytest.approx(llamp_T, abs=1e-5)
    assert metric(at, "Best mapping").value == "llamp"

    rankfile = format_mapping(expected.node_of_rank["llamp"], machine.hostnames, "openmpi")
    lines = rankfile.splitlines()  # one line per rank, two slots on each node
    assert [line.split("=")[0] for line in lines] == [f"rank {r}" for r in range(P)]
    assert sorted(line.split("=", 1)[1] for line in lines) == [
        f"node{n} slot={s}" for n in range(2) for s in range(2)
    ]
    assert downloads[f"{RUN}-llamp.rankfile"].decode() == rankfile
    for fmt, suffix in (("mpich", "machinefile"), ("slurm", "hostfile")):
        text = format_mapping(expected.node_of_rank["llamp"], machine.hostnames, fmt)
        assert downloads[f"{RUN}-llamp.{suffix}"].decode() == text
    assert [c.value for c in at.code] == [  # st.code drops the final newline
        format_mapping(expected.node_of_rank["llamp"], machine.hostnames, f).rstrip("\n")
        for f in ("openmpi", "mpich", "slurm")
    ]

    history = figures(at)[0]
    np.testing.assert_allclose(arr(history["data"][0]["y"]) * 1e9, expected.history["runtime_ns"])
    # One line per baseline T: round-robin and volume coincide here and share one.
    assert sorted(a["text"] for a in history["layout"]["annotations"]) == [
        "block",
        "round-robin = volume",
    ]
    assert len(history["layout"]["shapes"]) == 2
    at.toggle(key="place_baselines").set_value(False).run()
    assert_clean(at)
    assert len(runs) == 1, "a plot option must not rerun the heuristic"
    assert not figures(at)[0]["layout"].get("shapes")


def test_placement_swaps_hosts_and_downloads(store_env, graph, downloads):
    """4 nodes × 2 slots from round-robin: the heuristic accepts swaps; the history, the
    mapping and the host names in the files are those of place()."""
    params = LogGPS()
    hosts = ["c1", "c2", "c3", "c4"]
    machine = two_level_machine(4, 2, INTRA, INTER, hostnames=hosts)
    expected = place(graph, params, machine, budget_s=30.0, start="round-robin")
    assert len(expected.history) > 1
    at = page("placement")
    at.number_input(key="place_nodes").set_value(4).run()
    at.text_area(key="place_hosts").set_value("\n".join(hosts)).run()
    at.selectbox(key="place_start").set_value("round-robin").run()
    at.button(key="place_run").click().run()
    assert_clean(at)
    assert metric(at, "Swaps applied").value == str(len(expected.history) - 1)
    history = table(at, "estimated_gain_ns")
    np.testing.assert_array_equal(history["rank_a"], expected.history["rank_a"])
    np.testing.assert_allclose(history["runtime_ns"], expected.history["runtime_ns"])
    points = figures(at)[0]["data"][0]
    assert list(arr(points["x"])) == list(range(len(expected.history)))

    best = expected.node_of_rank[expected.best]
    for fmt, suffix in (("openmpi", "rankfile"), ("mpich", "machinefile"), ("slurm", "hostfile")):
        text = downloads[f"{RUN}-{expected.best}.{suffix}"].decode()
        assert text == format_mapping(best, hosts, fmt)
    assert set(downloads[f"{RUN}-{expected.best}.hostfile"].decode().split()) <= set(hosts)

    at.selectbox(key="place_which").set_value("block").run()
    assert_clean(at)
    assert downloads[f"{RUN}-block.rankfile"].decode() == format_mapping(
        block_mapping(graph.num_ranks, machine), hosts, "openmpi"
    )


def test_placement_on_a_topology(store_env, graph):
    params = LogGPS()
    at = page("placement")
    at.radio(key="place_machine").set_value("Topology").run()
    at.number_input(key="place_rpn").set_value(1).run()
    at.button(key="place_run").click().run()
    assert_clean(at)
    from llamp.lp.placement import topology_machine

    machine = topology_machine(FatTree(4, tiers=2), 4, 1, params)
    expected = place(graph, params, machine, budget_s=30.0)
    shown = table(at, "vs_block").set_index("mapping")
    for name, node in expected.node_of_rank.items():
        assert shown.loc[name, "runtime_ns"] == mapping_runtime(graph, params, machine, node)


def test_bad_placement_inputs_are_readable(store_env):
    at = page("placement")
    at.text_area(key="place_hosts").set_value("only-one").run()
    assert not at.exception
    assert [e.value for e in at.error] == ["Placement inputs: 1 host names for 2 nodes"]
    assert "place_run" not in [b.key for b in at.button], "no run button while inputs are wrong"
    at.text_area(key="place_hosts").set_value("").run()
    at.radio(key="place_machine").set_value("Topology").run()
    at.text_input(key="place_topology").set_value("fattree:k=2,tiers=2").run()
    at.number_input(key="place_rpn").set_value(1).run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Placement inputs: fattree:k=2,tiers=2 has 2 nodes, asked for 4"
    ]
    assert not at.get("plotly_chart")


# ---------------------------------------------------------------------- empty store
def test_network_pages_on_an_empty_store(tmp_path, monkeypatch):
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path))
    monkeypatch.delenv("LLAMP_STORE", raising=False)
    for view in ("topology", "matrices", "placement"):
        at = page(view)
        assert not at.exception, view
        assert not at.metric, view
        assert any("no run yet" in i.value for i in at.sidebar.info), view
