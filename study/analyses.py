"""The analyses a study cell can run: :data:`ANALYSES`, generated from the registry
:data:`llamp.lp.registry.ANALYSES`.

For each registered analysis: the pydantic model of its settings in a spec (one key per option
of the registry, read by the option's parser of :mod:`llamp.config`), the networks it runs on,
the function that computes it (the registry's, on the cell's inputs: never a re-implementation),
the flat scalars that go into the study table and the store (units in the names), and the
``llamp`` command that computes the same thing alone — the tests run that command and compare
(1e-12).

What is the study's own is how a cell becomes the inputs of an analysis: its network (LogGPS
parameters, a topology with its link latencies, or a GPU machine), its placement, its engine.
On a topology network ``predict`` and ``tolerance`` are ``llamp topology``'s λ and tolerance
per link class; on a GPU machine they are ``llamp gpu-machine``'s (``L_intra``, ``L_inter``,
``G_intra``, ``G_inter``), ``region`` is ``llamp region --gpu-machine`` and ``place-groups``
places the run's parallel groups on that machine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.lp import registry
from llamp.lp.registry import Analysis, Inputs, Option
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


# ---------------------------------------------------------------------- settings models
class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _percent_number(value: Any) -> float:
    """The number of a percentage as written (``"5%"`` → 5.0, ``2`` → 2.0), after the
    option's parser has checked it: a spec keeps the percentages as written."""
    if isinstance(value, str):
        return float(value.strip().removesuffix("%"))
    return float(value)


def _checker(opt: Option) -> Callable[[Any], Any]:
    """A pydantic ``before`` validator: the option's parser checks the value (its error is
    the spec's error, with the spec's line); percentages are kept as numbers."""
    percent = opt.parse in (registry.levels, registry.percent)

    def check(cls, value: Any) -> Any:
        if value is None and opt.study_default_value() is None:
            return value
        try:
            opt.parse(value, opt.study_key)
        except InputError as err:  # pydantic reports a ValueError with the spec's line
            raise ValueError(str(err)) from None
        if percent:
            items = value if isinstance(value, list) else [value]
            numbers = [_percent_number(v) for v in items]
            return numbers if isinstance(value, list) else numbers[0]
        return value

    return check


def settings_model(entry: Analysis) -> type[BaseModel]:
    """The pydantic model of ``entry``'s settings in a spec: a key per option (its study key),
    the option's study default, its bounds, its parser as the validator."""
    fields: dict[str, Any] = {}
    validators: dict[str, Any] = {}
    for opt in entry.options:
        default = opt.study_default_value()
        if isinstance(default, list | tuple):
            value = list(default)
            spec = Field(default_factory=lambda value=value: list(value), alias=opt.study_key)
        else:
            spec = Field(default=default, alias=opt.study_key)
        if opt.minimum is not None:
            spec.metadata.append(_ge(opt.minimum))
        if opt.maximum is not None:
            spec.metadata.append(_le(opt.maximum))
        if opt.parse is registry.levels:
            spec.metadata.append(_min_length(1))
        fields[opt.field] = (opt.study_type, spec)
        validators[f"_check_{opt.field}"] = field_validator(opt.field, mode="before")(_checker(opt))
    name = "".join(part.title() for part in entry.name.split("_")) + "Settings"
    return create_model(name, __base__=_Settings, __validators__=validators, **fields)


def _ge(value: float):
    import annotated_types

    return annotated_types.Ge(value)


def _le(value: float):
    import annotated_types

    return annotated_types.Le(value)


def _min_length(value: int):
    import annotated_types

    return annotated_types.MinLen(value)


# ---------------------------------------------------------------------- a cell's inputs
def _num(value: float) -> str:
    """A float as the CLI reads it back bit-for-bit (``repr``)."""
    return repr(float(value))


def param_args(params: LogGPS, keys: tuple[str, ...] = ("L", "o", "G", "S")) -> list[str]:
    """``--L 3000.0ns --o … --G …ns/B --S …`` for ``params``, exact; every model option of
    :class:`LogGPS` after them (``--g``, ``--progress``, ``--nic`` and any added later: its
    option carries the field's name)."""
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
    for name in (f.name for f in dataclasses.fields(params)):
        if name not in ("L", "o", "G", "S", "schedule_at"):  # schedule_at: where the order is taken
            out += [f"--{name}", str(getattr(params, name))]
    return out


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


def _ranks_per_node(cell) -> int:
    return cell.placement.ranks_per_node if cell.placement else 1


def _mapping(cell) -> str | None:
    place = cell.placement
    return str(place.mapping) if place is not None and place.mapping else None


def _on_topology(inp: CellInput) -> bool:
    return inp.cell.network.kind == "topology"


def _on_gpu(inp: CellInput) -> bool:
    return inp.cell.network.kind == "gpu"


def _inputs(entry: Analysis, inp: CellInput) -> Inputs:
    """The registry's inputs of the cell: its network's parameters, its engine; on a
    topology, the topology, the placement's mapping file and the link latencies; on a GPU
    machine, the machine for the analyses that take one."""
    cell, params = inp.cell, inp.params
    if entry.name == "classify":
        base = LogGPS.parse(o=f"{_num(params.o)}ns", S=str(params.S))
        return Inputs(base, network=registry.target_network(params))
    inputs = Inputs(params, engine=cell.engine, threads=1)  # one thread: one cell per core
    if _on_gpu(inp) and "gpu_machine" in entry.uses:
        inputs = dataclasses.replace(inputs, gpu_machine=cell.network.gpu_machine)
    if _on_topology(inp):
        inputs = dataclasses.replace(
            inputs,
            topology=cell.network.topology,
            mapping=_mapping(cell),
            latencies=_latencies(cell),
        )
    return inputs


def _settings(
    entry: Analysis, inp: CellInput, own: Analysis | None = None
) -> tuple[Any, dict[str, Any]]:
    """The typed settings of ``entry`` for the cell and their raw values (on a topology, the
    placement's ranks per node and no two-level machine). ``own``: the cell's analysis when
    ``entry`` computes it for it (``predict``/``tolerance`` on a topology)."""
    raw = _topology_raw(own, inp) if own is not None and own is not entry else dict(inp.settings)
    if _on_gpu(inp) and "gpu_machine" in {o.field for o in entry.options}:
        raw[entry.option("gpu_machine").study_key] = inp.cell.network.gpu_machine
        axes = entry.option("axes").study_key
        if raw.get(axes) in (None, "L,G"):  # a GPU machine's network L and G
            raw[axes] = "L_inter,G_inter"
    if _on_topology(inp):  # the network is the machine: its placement, not a two-level one
        fields = {o.field for o in entry.options}
        if "ranks_per_node" in fields:
            raw[entry.option("ranks_per_node").study_key] = _ranks_per_node(inp.cell)
        for name in ("intra", "inter"):
            if name in fields:
                raw[entry.option(name).study_key] = None
    return entry.parse(raw, study=True), raw


def _settings_args(entry: Analysis, raw: dict[str, Any]) -> list[str]:
    return [arg for opt in entry.options for arg in opt.arguments(raw.get(opt.study_key))]


# ---------------------------------------------------------------------- topology networks
#: The levels ``predict`` asks ``llamp topology`` for on a topology network.
_PREDICT_LEVELS = [1.0, 2.0, 5.0]
_TOPOLOGY = registry.ANALYSES["topology"]


def _as_topology(entry: Analysis, inp: CellInput) -> bool:
    """``predict`` and ``tolerance`` on a topology network are ``llamp topology``'s λ and
    tolerance per link class."""
    return _on_topology(inp) and entry.name in ("predict", "tolerance")


def _topology_raw(entry: Analysis, inp: CellInput) -> dict[str, Any]:
    """The topology entry's raw settings of a ``predict``/``tolerance`` cell on a topology."""
    raw = dict(inp.settings)
    return {"x": raw.get("x", _PREDICT_LEVELS), "ranks_per_node": _ranks_per_node(inp.cell)}


# ---------------------------------------------------------------------- GPU machines
def _as_gpu_machine(entry: Analysis, inp: CellInput) -> bool:
    return _on_gpu(inp) and entry.name in ("predict", "tolerance")


def _gpu_levels(inp: CellInput) -> list[float]:
    """The tolerance levels (percentages as written) of a GPU-machine cell."""
    value = dict(inp.settings).get("x", _PREDICT_LEVELS)
    return [float(v) for v in (value if isinstance(value, list) else [value])]


def _gpu_machine_run(inp: CellInput) -> dict[str, Any]:
    from llamp.lp.gpu_machine import GpuMachine, analyze_gpu_machine

    machine = GpuMachine.parse(inp.cell.network.gpu_machine)
    levels = registry.levels(_gpu_levels(inp), "x")
    return analyze_gpu_machine(inp.graph, inp.params, machine, levels).as_dict()


def gpu_machine_scalars(payload: dict[str, Any], with_tolerance: bool = True) -> dict[str, Any]:
    """``runtime_ns``, ``intra_node_fraction``, ``lambda_VAR`` and (``with_tolerance``)
    ``baseline_ns``, ``tolerance_Xpct_VAR_ns`` (latencies) or ``…_ns_per_byte`` (gaps) of a
    ``llamp gpu-machine`` payload."""
    out: dict[str, Any] = {
        "runtime_ns": payload["runtime_ns"],
        "intra_node_fraction": payload["intra_node_fraction"],
    }
    for var in payload["variables"]:
        out[f"lambda_{var['variable']}"] = var["lambda"]
    if with_tolerance:
        out["baseline_ns"] = payload["runtime_ns"]
        units = {v["variable"]: v["unit"] for v in payload["variables"]}
        for row in payload["tolerances"]:
            key = f"tolerance_{registry.pct(row['x'])}_{row['variable']}_{units[row['variable']]}"
            out[key] = row["tolerance"]
    return out


def _gpu_machine_command(inp: CellInput) -> list[str]:
    levels = ",".join(repr(v) for v in _gpu_levels(inp))
    return [
        "gpu-machine",
        inp.graph_spec,
        inp.cell.network.gpu_machine,
        *param_args(inp.params, ("o", "S")),
        "--x",
        levels,
        "--json",
    ]


# ---------------------------------------------------------------------- generated rows
@dataclass(frozen=True)
class AnalysisKind:
    """One analysis of a study: the registry's entry and what the study adds."""

    name: str
    networks: frozenset[str]  # "loggps", "topology", "gpu"
    settings: type[BaseModel]
    run: Callable[[CellInput], dict[str, Any]]  # the CLI's --json payload
    scalars: Callable[[dict[str, Any]], dict[str, Any]]  # flat, units in the names
    command: Callable[[CellInput], list[str]]  # the single llamp command of the cell
    about: str


def _kind(entry: Analysis) -> AnalysisKind:
    def run(inp: CellInput) -> dict[str, Any]:
        if _as_gpu_machine(entry, inp):
            return _gpu_machine_run(inp)
        target = _TOPOLOGY if _as_topology(entry, inp) else entry
        settings, _ = _settings(target, inp, entry)
        inputs = _inputs(target, inp)
        return target.payload(target.run(inp.graph, inputs, settings), settings, inputs)

    def scalars(payload: dict[str, Any]) -> dict[str, Any]:
        if "intra_node_fraction" in payload and "variables" in payload:
            return gpu_machine_scalars(payload, with_tolerance=entry.name != "predict")
        if "topologies" in payload:
            return registry.topology_scalars(payload, with_tolerance=entry.name != "predict")
        return entry.scalars(payload)

    def command(inp: CellInput) -> list[str]:
        if _as_gpu_machine(entry, inp):
            return _gpu_machine_command(inp)
        target = _TOPOLOGY if _as_topology(entry, inp) else entry
        _, raw = _settings(target, inp, entry)
        args = [target.name, inp.graph_spec, *_input_args(target, inp)]
        return [*args, *_settings_args(target, raw), "--json"]

    return AnalysisKind(
        entry.name,
        entry.networks,
        settings_model(entry),
        run,
        scalars,
        command,
        entry.about,
    )


def _input_args(entry: Analysis, inp: CellInput) -> list[str]:
    """The command-line arguments of the cell's inputs (:func:`_inputs`)."""
    params, cell = inp.params, inp.cell
    if entry.name == "classify":
        return [
            "--bandwidth",
            f"{_num(8.0 / params.G)}Gb/s" if params.G else "0",
            "--latency",
            f"{_num(params.L)}ns",
            "--o",
            f"{_num(params.o)}ns",
            "--S",
            str(params.S),
        ]
    if "gpu_machine" in entry.uses:  # GRAPH SPEC: the machine gives L and G
        return [cell.network.gpu_machine, *param_args(params, ("o", "S"))]
    if entry is _TOPOLOGY:
        mapping = _mapping(cell)
        return [
            cell.network.topology,
            *(["--mapping", mapping] if mapping else []),
            *_latency_args(cell),
            *param_args(params, ("o", "G", "S")),
        ]
    args = param_args(params)
    if "engine" in entry.uses:
        args += ["--engine", cell.engine]
    if _on_topology(inp):
        args += ["--topology", cell.network.topology, *_latency_args(cell)]
        if _mapping(cell) and "mapping" in entry.uses:
            args += ["--mapping", _mapping(cell)]
    return args


#: The registry: name → analysis, one per entry of :data:`llamp.lp.registry.ANALYSES` that runs
#: on one graph (a cell is one run; ``compare`` of several runs is not a cell's analysis).
ANALYSES: dict[str, AnalysisKind] = {
    name: _kind(entry) for name, entry in registry.ANALYSES.items() if entry.input == "graph"
}
