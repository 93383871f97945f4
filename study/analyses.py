"""The analyses a study cell can run: one table, :data:`ANALYSES`, one row per analysis.

Each row names the networks it runs on, the pydantic model of its settings in the spec, the
function that computes it through :mod:`llamp.lp` (never a re-implementation), the flat scalars
that go into the study table and the store (units in the names), and the ``llamp`` command
that computes the same thing alone — the tests run that command and compare (1e-12).

Adding an analysis (e.g. ``region``, issue 19) is one :class:`AnalysisKind` row.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from llamp.config import parse_budget, parse_percent, parse_range
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.params import LogGPS


@dataclass(frozen=True)
class CellInput:
    """What an analysis sees: the graph, the cell (network, placement, settings) and the
    GRAPH argument of the equivalent command (an ``.npz`` path or a stored run name)."""

    graph: ExecutionGraph
    cell: Any  # llamp.study.spec.Cell
    graph_spec: str

    @property
    def params(self) -> LogGPS:
        return self.cell.network.params

    @property
    def settings(self) -> dict[str, Any]:
        return self.cell.settings


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator(
        "x",
        "compute_share",
        "bound_share",
        "sensitive_share",
        "insensitive",
        check_fields=False,
        mode="before",
    )
    @classmethod
    def _percentages(cls, value: Any, info: Any) -> Any:
        """Percentages (``x``, the classification shares) are read as the CLI reads them
        (``5`` or ``"5%"``, positive; :func:`llamp.config.parse_percent`) and kept as the
        percent numbers."""
        items = value if isinstance(value, list) else [value]
        for v in items:
            try:
                parse_percent(v, what=info.field_name)
            except InputError as err:  # pydantic reports a ValueError with the spec's line
                raise ValueError(str(err)) from None
        numbers = [_percent_number(v) for v in items]
        return numbers if isinstance(value, list) else numbers[0]


def _percent_number(value: Any) -> float:
    """The number of a percentage as written (``"5%"`` → 5.0, ``2`` → 2.0), after
    :func:`llamp.config.parse_percent` has checked it."""
    if isinstance(value, str):
        return float(value.strip().removesuffix("%"))
    return float(value)


class NoSettings(_Settings):
    pass


class ToleranceSettings(_Settings):
    x: list[float] = Field(default_factory=lambda: [1.0, 2.0, 5.0], min_length=1)


class RangeSettings(_Settings):
    param: Literal["L", "G", "o"] = "L"
    from_: str | float = Field(default="0", alias="from")
    to: str | float = "100us"


class SweepSettings(RangeSettings):
    points: int = Field(default=11, ge=2, le=100000)


class CriticalSettings(RangeSettings):
    max_evaluations: str | int = "all"


class ClassifySettings(_Settings):
    compute_share: float = 90.0
    bound_share: float = 25.0
    sensitive_share: float = 10.0
    insensitive: float = 5.0
    decrease: float = 2.0
    span: int = Field(default=8, ge=2)


class MonteCarloSettings(_Settings):
    samples: int = Field(default=100, ge=1)
    spatial_cv: float = Field(default=0.0, ge=0.0)
    temporal_cv: float = Field(default=0.0, ge=0.0)
    distribution: Literal["lognormal", "normal", "halfnormal"] = "lognormal"
    slow_ranks: list[int] = Field(default_factory=list)
    slowdown: float = 1.0
    seed: int = 0
    x: list[float] = Field(default_factory=lambda: [1.0], min_length=1)
    runtime_only: bool = False


class PlaceSettings(_Settings):
    intra: str | None = None
    inter: str | None = None
    nodes: int | None = Field(default=None, ge=1)
    ranks_per_node: int = Field(default=1, ge=1)
    budget: str = "600s"
    max_swaps: int = Field(default=1000, ge=0)
    candidates: int = Field(default=16, ge=1)
    start: Literal["best", "block", "round-robin", "volume", "random"] = "best"


class RegionSettings(_Settings):
    x: list[float] = Field(default_factory=lambda: [1.0, 2.0, 5.0], min_length=1)
    axes: Literal["L,G", "L,o", "G,o"] = "L,G"
    #: Designs to mark inside/outside, as ``llamp region --design NAME=U,V`` takes them.
    designs: list[str] = Field(default_factory=list)
    max_evaluations: str | int = "all"


class MatrixSettings(_Settings):
    intra: str | None = None
    inter: str | None = None
    ranks_per_node: int = Field(default=1, ge=1)


# ---------------------------------------------------------------------- shared pieces
def _num(value: float) -> str:
    """A float as the CLI reads it back bit-for-bit (``repr``)."""
    return repr(float(value))


def param_args(params: LogGPS, keys: tuple[str, ...] = ("L", "o", "G", "S")) -> list[str]:
    """``--L 3000.0ns --o … --G …ns/B --S …`` for ``params``, exact."""
    out = []
    for key in keys:
        value = getattr(params, key)
        text = {
            "L": f"{_num(value)}ns",
            "o": f"{_num(value)}ns",
            "G": f"{_num(value)}ns/B",
            "S": str(int(value)),
        }[key]
        out += [f"--{key}", text]
    extra = [
        f for f in params.__dataclass_fields__ if f not in ("L", "o", "G", "S", "schedule_at")
    ]  # fields added later (g, progress, nic, order, rendezvous): options of the same name
    for name in extra:
        out += [f"--{name}", str(getattr(params, name))]
    return out


def _engine_command(inp: CellInput, name: str, *extra: str) -> list[str]:
    """``llamp NAME GRAPH <parameters> --engine E <extra> --json`` for the cell."""
    return [
        name,
        inp.graph_spec,
        *param_args(inp.params),
        "--engine",
        inp.cell.engine,
        *extra,
        "--json",
    ]


def _levels(x: list[float]) -> list[float]:
    return [parse_percent(v, what="x") for v in x]


def _pct(x: float) -> str:
    return f"{x * 100:g}pct"


def _latencies(cell):
    from llamp.lp.topology import LinkLatencies

    lat = dict(cell.network.latencies)
    return LinkLatencies(
        **{k: v for k, v in lat.items() if k != "per_class_ns"},
        per_class_ns=lat.get("per_class_ns", {}),
    )


def _latency_args(cell) -> list[str]:
    lat = cell.network.latencies
    out = []
    for key, flag in (
        ("wire_ns", "--wire"),
        ("switch_ns", "--switch"),
        ("intra_node_ns", "--intra-node"),
    ):
        if key in lat:
            out += [flag, f"{_num(lat[key])}ns"]
    for name, value in lat.get("per_class_ns", {}).items():
        out += ["--link", f"{name}={_num(value)}ns"]
    return out


def _placement_args(cell) -> list[str]:
    place = cell.placement
    if place is not None and place.mapping:
        return ["--mapping", str(place.mapping)]
    return ["--ranks-per-node", str(place.ranks_per_node if place else 1)]


def _range(settings: dict[str, Any]) -> tuple[float, float]:
    return parse_range(settings["param"], str(settings["from"]), str(settings["to"]))


def _budget(text: str | int, inp: CellInput, *, auto: bool = True) -> int | None:
    """``max_evaluations`` (:func:`llamp.config.parse_budget`), ``auto`` sized for the graph
    (critical latencies; a region takes all or a number, as ``llamp region`` does)."""
    budget = parse_budget(text, what="max_evaluations")
    if budget == "auto" and not auto:
        raise InputError("max_evaluations: a region takes all or a whole number, not auto")
    if budget == "auto":
        from llamp.lp.critical import evaluation_budget

        return evaluation_budget(inp.graph, inp.params)
    return budget


# ---------------------------------------------------------------------- analyses
def _region(inp: CellInput) -> dict[str, Any]:
    """``llamp region --json`` of the cell: the exact 1/2/5 % polygons over two of L, G, o and
    whether each listed design lies inside (which designs the application tolerates)."""
    from llamp.lp.region import parse_design, tolerance_region

    s = inp.settings
    budget = _budget(s["max_evaluations"], inp, auto=False)
    u, v = s["axes"].split(",")
    result = tolerance_region(
        inp.graph,
        inp.params,
        x=_levels(s["x"]),
        axes=(u, v),
        max_evaluations=budget,
    )
    designs = dict(parse_design(text, result.axes) for text in s["designs"])
    payload = result.as_dict()
    payload["designs"] = result.designs(designs).to_dict(orient="records") if designs else []
    return payload


def _region_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    keys = [a["name"] for a in payload["axes"]]
    out: dict[str, Any] = {"baseline_ns": payload["baseline_ns"], "complete": payload["complete"]}
    for region in payload["regions"]:
        pct = _pct(region["x"])
        out[f"region_{pct}_vertices"] = len(region["vertices"])
        for name in keys:
            column = next(k for k in region["vertices"][0] if k.startswith(f"{name}_"))
            out[f"region_{pct}_{column}"] = [vertex[column] for vertex in region["vertices"]]
    for design in payload["designs"]:
        for key, value in design.items():
            if key.startswith("inside_") or key.startswith("slack_"):
                out[f"{design['design']}_{key}"] = value
    return out


def _region_cli(inp: CellInput) -> list[str]:
    s = inp.settings
    designs = [arg for text in s["designs"] for arg in ("--design", text)]
    return [
        "region",
        inp.graph_spec,
        *param_args(inp.params),
        "--x",
        ",".join(f"{v:g}" for v in s["x"]),
        "--axes",
        s["axes"],
        *designs,
        "--max-evaluations",
        str(s["max_evaluations"]),
        "--json",
    ]


def _predict(inp: CellInput) -> dict[str, Any]:
    if inp.cell.network.kind == "topology":
        return _topology(inp, [1.0, 2.0, 5.0])
    from llamp.lp import predict

    return predict(inp.graph, inp.params, engine=inp.cell.engine).as_dict()


def _topology(inp: CellInput, x: list[float]) -> dict[str, Any]:
    from llamp.lp.topology import compare_topologies

    place = inp.cell.placement
    return compare_topologies(
        inp.graph,
        inp.params,
        [inp.cell.network.topology],
        ranks_per_node=place.ranks_per_node if place else 1,
        mapping_file=place.mapping if place and place.mapping else None,
        latencies=_latencies(inp.cell),
        x=_levels(x),
    ).as_dict()


def _topology_scalars(payload: dict[str, Any], with_tolerance: bool) -> dict[str, Any]:
    one = payload["topologies"][0]
    out: dict[str, Any] = {"runtime_ns": one["runtime_ns"], "mean_switches": one["mean_switches"]}
    for var in one["variables"]:
        out[f"lambda_{var['variable']}"] = var["lambda"]
    if with_tolerance:
        out["baseline_ns"] = one["runtime_ns"]
        for row in one["tolerances"]:
            out[f"tolerance_{_pct(row['x'])}_{row['variable']}_ns"] = row["tolerance_ns"]
    return out


def _predict_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    if "topologies" in payload:
        return _topology_scalars(payload, with_tolerance=False)
    return {k: payload[k] for k in ("runtime_ns", "lambda_L", "lambda_G", "lambda_o", "rho_L")}


def _topology_cli(inp: CellInput, x: list[float]) -> list[str]:
    return [
        "topology",
        inp.graph_spec,
        inp.cell.network.topology,
        *_placement_args(inp.cell),
        *_latency_args(inp.cell),
        *param_args(inp.params, ("o", "G", "S")),
        "--x",
        ",".join(f"{v:g}" for v in x),
        "--json",
    ]


def _predict_cli(inp: CellInput) -> list[str]:
    if inp.cell.network.kind == "topology":
        return _topology_cli(inp, [1.0, 2.0, 5.0])
    return _engine_command(inp, "predict")


def _tolerance(inp: CellInput) -> dict[str, Any]:
    if inp.cell.network.kind == "topology":
        return _topology(inp, inp.settings["x"])
    from llamp.lp import tolerance

    return tolerance(
        inp.graph, inp.params, _levels(inp.settings["x"]), engine=inp.cell.engine
    ).as_dict()


def _tolerance_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    if "topologies" in payload:
        return _topology_scalars(payload, with_tolerance=True)
    out = {"baseline_ns": payload["baseline_ns"]}
    for row in payload["latency"]:
        out[f"tolerance_{_pct(row['x'])}_L_ns"] = row["latency_ns"]
    for row in payload["bandwidth"]:
        out[f"tolerance_{_pct(row['x'])}_G_ns_per_byte"] = row["G_ns_per_byte"]
    return out


def _tolerance_cli(inp: CellInput) -> list[str]:
    x = inp.settings["x"]
    if inp.cell.network.kind == "topology":
        return _topology_cli(inp, x)
    return _engine_command(inp, "tolerance", "--x", ",".join(f"{v:g}" for v in x))


def _sweep(inp: CellInput) -> dict[str, Any]:
    from llamp.lp import sweep

    a, b = _range(inp.settings)
    param = inp.settings["param"]
    frame = sweep(
        inp.graph,
        inp.params,
        np.linspace(a, b, inp.settings["points"]),
        parameter=param,
        engine=inp.cell.engine,
    )
    return {"parameter": param, "points": frame.to_dict(orient="records")}


def _sweep_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    points = payload["points"]
    column = next(iter(points[0]))
    return {
        f"sweep_{column}": [p[column] for p in points],
        "sweep_runtime_ns": [p["runtime_ns"] for p in points],
        "sweep_lambda_L": [p["lambda_L"] for p in points],
        "sweep_rho_L": [p["rho_L"] for p in points],
    }


def _range_cli(inp: CellInput) -> list[str]:
    s = inp.settings
    return ["--param", s["param"], "--from", str(s["from"]), "--to", str(s["to"])]


def _sweep_cli(inp: CellInput) -> list[str]:
    return _engine_command(inp, "sweep", *_range_cli(inp), "--points", str(inp.settings["points"]))


def _critical(inp: CellInput) -> dict[str, Any]:
    from llamp.lp import critical_latencies

    a, b = _range(inp.settings)
    budget = _budget(inp.settings["max_evaluations"], inp)
    return critical_latencies(
        inp.graph,
        inp.params,
        a,
        b,
        parameter=inp.settings["param"],
        engine=inp.cell.engine,
        max_evaluations=budget,
    ).as_dict()


def _critical_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    key = next(k for k in payload if k.startswith("critical_"))
    return {
        key: list(payload[key]),
        "critical_count": len(payload[key]),
        "critical_complete": bool(payload["complete"]),
        "critical_evaluations": payload["evaluations"],
    }


def _critical_cli(inp: CellInput) -> list[str]:
    return _engine_command(
        inp, "critical", *_range_cli(inp), "--max-evaluations", str(inp.settings["max_evaluations"])
    )


def _gap_network(params: LogGPS):
    """The classify target of a LogGPS network, built as ``--bandwidth/--latency`` would."""
    from llamp.config import parse_duration_ns, parse_gap_ns_per_byte
    from llamp.lp.classify import Network

    if params.G <= 0:
        raise InputError("classify needs a bandwidth: G must be > 0 ns/B on this network")
    gap = parse_gap_ns_per_byte(f"{_num(8.0 / params.G)}Gb/s")
    return Network(
        "custom", 8.0 / gap, parse_duration_ns(f"{_num(params.L)}ns"), "given on the command line"
    )


def _classify(inp: CellInput) -> dict[str, Any]:
    from llamp.lp.classify import Thresholds, classify

    s = inp.settings
    base = LogGPS.parse(o=f"{_num(inp.params.o)}ns", S=str(inp.params.S))
    th = Thresholds(
        compute_share=s["compute_share"] / 100.0,
        bound_share=s["bound_share"] / 100.0,
        sensitive_share=s["sensitive_share"] / 100.0,
        insensitive=s["insensitive"] / 100.0,
        decrease=s["decrease"],
        span=s["span"],
    )
    return classify(inp.graph, _gap_network(inp.params), params=base, thresholds=th).as_dict()


def _classify_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    target = next((c for c in payload["configs"] if c.get("speedup") == 1), payload["configs"][0])
    return {
        "label": payload["label"],
        "rule": payload["rule"] or "",
        "runtime_ns": target["runtime_ns"],
        "compute_share": target["compute_share"],
        "wait_share": target["wait_share"],
        "latency_share": target["latency_share"],
        "bandwidth_share": target["bandwidth_share"],
    }


def _classify_cli(inp: CellInput) -> list[str]:
    s, p = inp.settings, inp.params
    return [
        "classify",
        inp.graph_spec,
        "--bandwidth",
        f"{_num(8.0 / p.G)}Gb/s" if p.G else "0",
        "--latency",
        f"{_num(p.L)}ns",
        "--o",
        f"{_num(p.o)}ns",
        "--S",
        str(p.S),
        "--compute-share",
        str(s["compute_share"]),
        "--bound-share",
        str(s["bound_share"]),
        "--sensitive-share",
        str(s["sensitive_share"]),
        "--insensitive",
        str(s["insensitive"]),
        "--decrease",
        str(s["decrease"]),
        "--span",
        str(s["span"]),
        "--json",
    ]


def _mc(inp: CellInput) -> dict[str, Any]:
    from llamp.lp.variability import VariabilitySpec, monte_carlo

    s = inp.settings
    spec = VariabilitySpec(
        spatial_cv=s["spatial_cv"],
        temporal_cv=s["temporal_cv"],
        distribution=s["distribution"],
        slow_ranks=tuple(sorted(set(s["slow_ranks"]))),
        slowdown=s["slowdown"],
        samples=s["samples"],
        seed=s["seed"],
    )
    # One thread: a study already runs one cell per core.
    return monte_carlo(
        inp.graph,
        inp.params,
        spec,
        tolerances=_levels(s["x"]),
        sensitivity=not s["runtime_only"],
        workers=1,
    ).as_dict()


def _mc_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for row in payload["summary"]:
        q = row["quantity"]
        for stat in ("baseline", "mean", "sd", "p5", "p50", "p95"):
            out[f"mc_{stat}_{q}"] = row[stat]
    return out


def _mc_cli(inp: CellInput) -> list[str]:
    s = inp.settings
    args = [
        "mc",
        inp.graph_spec,
        *param_args(inp.params),
        "--samples",
        str(s["samples"]),
        "--spatial-cv",
        repr(s["spatial_cv"]),
        "--temporal-cv",
        repr(s["temporal_cv"]),
        "--distribution",
        s["distribution"],
        "--slowdown",
        repr(s["slowdown"]),
        "--seed",
        str(s["seed"]),
        "--x",
        ",".join(f"{v:g}" for v in s["x"]),
        "--json",
    ]
    if s["slow_ranks"]:
        args += ["--slow-ranks", ",".join(map(str, s["slow_ranks"]))]
    if s["runtime_only"]:
        args.append("--runtime-only")
    return args


def _machine(inp: CellInput):
    from llamp.lp.matrix import parse_level
    from llamp.lp.placement import topology_machine, two_level_machine
    from llamp.lp.topology import parse_topology

    s, cell = inp.settings, inp.cell
    P = inp.graph.num_ranks
    if cell.network.kind == "topology":
        rpn = cell.placement.ranks_per_node if cell.placement else 1
        nodes = s["nodes"] or -(-P // rpn)
        return topology_machine(
            parse_topology(cell.network.topology), nodes, rpn, inp.params, _latencies(cell)
        )
    if not (s["intra"] and s["inter"]):
        raise InputError("place on a LogGPS network needs settings intra: L,G and inter: L,G")
    rpn = s["ranks_per_node"]
    nodes = s["nodes"] or -(-P // rpn)
    return two_level_machine(
        nodes, rpn, parse_level(s["intra"], "intra"), parse_level(s["inter"], "inter")
    )


def _place(inp: CellInput) -> dict[str, Any]:
    from llamp.config import parse_duration_ns
    from llamp.lp.placement import place

    s = inp.settings
    result = place(
        inp.graph,
        inp.params,
        _machine(inp),
        budget_s=parse_duration_ns(s["budget"], default_unit="s") / 1e9,
        max_iterations=s["max_swaps"],
        candidates=s["candidates"],
        start=s["start"],
    )
    return result.as_dict()


def _place_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"best": payload["best"], "stop_reason": payload["stop_reason"]}
    for row in payload["mappings"]:
        out[f"runtime_ns_{row['mapping']}"] = row["runtime_ns"]
    best = next(r for r in payload["mappings"] if r["mapping"] == payload["best"])
    out["runtime_ns"] = best["runtime_ns"]
    return out


def _place_cli(inp: CellInput) -> list[str]:
    s, cell = inp.settings, inp.cell
    args = ["place", inp.graph_spec]
    if cell.network.kind == "topology":
        rpn = cell.placement.ranks_per_node if cell.placement else 1
        args += [
            "--topology",
            cell.network.topology,
            "--ranks-per-node",
            str(rpn),
            *_latency_args(cell),
        ]
    else:
        args += [
            "--intra",
            s["intra"],
            "--inter",
            s["inter"],
            "--ranks-per-node",
            str(s["ranks_per_node"]),
        ]
    if s["nodes"]:
        args += ["--nodes", str(s["nodes"])]
    return args + [
        "--budget",
        s["budget"],
        "--max-swaps",
        str(s["max_swaps"]),
        "--candidates",
        str(s["candidates"]),
        "--start",
        s["start"],
        *param_args(inp.params),
        "--json",
    ]


def _matrix(inp: CellInput) -> dict[str, Any]:
    from llamp.lp import matrix
    from llamp.lp.topology import dense_mapping, parse_topology, read_mapping

    s, cell, P = inp.settings, inp.cell, inp.graph.num_ranks
    if cell.network.kind == "topology":
        topo = parse_topology(cell.network.topology)
        place = cell.placement
        mapping = (
            read_mapping(place.mapping, P, topo.node_names())
            if place and place.mapping
            else dense_mapping(P, place.ranks_per_node if place else 1)
        )
        costs = matrix.from_topology(topo, mapping, inp.params, _latencies(cell))
    elif s["intra"] or s["inter"]:
        if not (s["intra"] and s["inter"]):
            raise InputError("matrix: intra and inter go together (each L,G)")
        node = dense_mapping(P, s["ranks_per_node"]).node_of_rank
        costs = matrix.two_level(
            node,
            matrix.parse_level(s["intra"], "--intra"),
            matrix.parse_level(s["inter"], "--inter"),
        )
    else:
        costs = matrix.PairCosts(
            np.full((P, P), inp.params.L),
            np.full((P, P), inp.params.G),
            f"uniform (L={inp.params.L:g} ns, G={inp.params.G:g} ns/B)",
        )
    return matrix.pair_sensitivity(inp.graph, inp.params, costs).as_dict()


def _matrix_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    pairs = payload["pairs"]
    top = pairs[0] if pairs else None
    return {
        "runtime_ns": payload["runtime_ns"],
        "lambda_L_total": payload["lambda_L_total"],
        "lambda_G_total": payload["lambda_G_total"],
        "top_pair": f"{top['src']}->{top['dst']}" if top else "",
        "top_pair_lambda_L": top["lambda_L"] if top else math.nan,
    }


def _matrix_cli(inp: CellInput) -> list[str]:
    s, cell = inp.settings, inp.cell
    args = ["matrix", inp.graph_spec]
    if cell.network.kind == "topology":
        args += ["--topology", cell.network.topology, *_placement_args(cell), *_latency_args(cell)]
    elif s["intra"]:
        args += [
            "--intra",
            s["intra"],
            "--inter",
            s["inter"],
            "--ranks-per-node",
            str(s["ranks_per_node"]),
        ]
    return args + [*param_args(inp.params), "--json"]


@dataclass(frozen=True)
class AnalysisKind:
    """One analysis of the study registry."""

    name: str
    networks: frozenset[str]  # "loggps", "topology"
    settings: type[BaseModel]
    run: Callable[[CellInput], dict[str, Any]]  # the CLI's --json payload
    scalars: Callable[[dict[str, Any]], dict[str, Any]]  # flat, units in the names
    command: Callable[[CellInput], list[str]]  # the single llamp command of the cell
    about: str


_BOTH = frozenset({"loggps", "topology"})
_LOGGPS = frozenset({"loggps"})

#: The registry: name → analysis. One row per analysis; the spec, the CLI and the UI read it.
ANALYSES: dict[str, AnalysisKind] = {
    a.name: a
    for a in (
        AnalysisKind(
            "predict",
            _BOTH,
            NoSettings,
            _predict,
            _predict_scalars,
            _predict_cli,
            "T and λ (llamp predict; on a topology: llamp topology)",
        ),
        AnalysisKind(
            "sweep",
            _LOGGPS,
            SweepSettings,
            _sweep,
            _sweep_scalars,
            _sweep_cli,
            "T, λ_L, ρ_L over a range of L, G or o (llamp sweep)",
        ),
        AnalysisKind(
            "critical",
            _LOGGPS,
            CriticalSettings,
            _critical,
            _critical_scalars,
            _critical_cli,
            "every critical latency in a range (llamp critical)",
        ),
        AnalysisKind(
            "tolerance",
            _BOTH,
            ToleranceSettings,
            _tolerance,
            _tolerance_scalars,
            _tolerance_cli,
            "x% L and G tolerance (llamp tolerance / topology)",
        ),
        AnalysisKind(
            "region",
            _LOGGPS,
            RegionSettings,
            _region,
            _region_scalars,
            _region_cli,
            "exact joint x% tolerance regions over two of L, G, o and the designs inside them "
            "(llamp region)",
        ),
        AnalysisKind(
            "matrix",
            _BOTH,
            MatrixSettings,
            _matrix,
            _matrix_scalars,
            _matrix_cli,
            "pairwise λ_L^ij, λ_G^ij (llamp matrix)",
        ),
        AnalysisKind(
            "classify",
            _LOGGPS,
            ClassifySettings,
            _classify,
            _classify_scalars,
            _classify_cli,
            "latency/bandwidth/compute-bound on the network (llamp classify)",
        ),
        AnalysisKind(
            "mc",
            _LOGGPS,
            MonteCarloSettings,
            _mc,
            _mc_scalars,
            _mc_cli,
            "Monte Carlo of T, λ_L and tolerance under compute noise (llamp mc)",
        ),
        AnalysisKind(
            "place",
            _BOTH,
            PlaceSettings,
            _place,
            _place_scalars,
            _place_cli,
            "rank placement vs block/round-robin/volume (llamp place)",
        ),
    )
}
