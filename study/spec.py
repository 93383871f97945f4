"""Study specifications: a YAML file naming runs, networks, collective variants, placements,
what-if options and analyses, validated up front (pydantic) with errors that name file, line
and key.

A spec (every path is relative to the spec's directory)::

    study: shipped-traces
    runs:                                   # stored run names, trace paths, .goal, .npz
      - {name: sweep3d, path: ../tests/data/traces/liballprof/sweep3d-2x2}
      - {name: lulesh, stored: lulesh}
    networks:                               # LogGPS keys go to LogGPS.parse as they are
      - {name: 10GbE, L: 5us, G: 10Gb/s}
      - {name: lab, profile: my-calibration, L: 2us}       # llamp calibrate --save NAME
      - {name: dragonfly, topology: "dragonfly:g=4,a=2,p=2", wire: 274ns, o: 1.5us}
      - {name: dgx, gpu_machine: {gpus: 8, nvlink: "500ns:450GB/s", net: "3us:400Gb/s"}}
    collectives: [default, allreduce=ring]  # trace runs only (re-expanded per variant)
    placements:                             # topology networks only
      - {name: dense}
      - {name: pairs, ranks_per_node: 2}
    options:                                # what-ifs merged into every network
      - {name: as-is}
      - {name: wait, progress: wait}
    analyses: [predict, {tolerance: {x: [1, 2, 5]}}, {mc: {samples: 100, temporal_cv: 0.05}}]
    cells:                                  # optional: this list instead of the cross product
      - {run: sweep3d, network: 10GbE, analysis: tolerance}
    engine: auto
    execution: {workers: 2}                 # or scheduler: tcp://host:8786, or cluster: slurm
    output: results.parquet

Networks accept every keyword of :meth:`llamp.params.LogGPS.parse` they are given (``L``,
``o``, ``G``, ``S`` and whatever later versions add, e.g. ``progress``, ``nic``, ``g``): a key
LogGPS does not know is an error naming its line.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from llamp.errors import InputError, LlampError
from llamp.params import LogGPS

_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+=:-]{0,63}$"


class SpecError(InputError):
    """A study spec that cannot be run: ``file:line: key: reason``."""


# ---------------------------------------------------------------------- YAML with lines
def _load_yaml(text: str, where: str) -> tuple[Any, dict[tuple, int]]:
    """The document and the 1-based line of every key path (``("networks", 2, "L")``)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f"{mark.line + 1}" if mark is not None else "?"
        problem = getattr(err, "problem", None) or str(err)
        raise SpecError(f"{where}:{line}: not YAML ({problem})") from None
    if root is None:
        raise SpecError(f"{where}:1: the spec is empty")
    lines: dict[tuple, int] = {}
    constructor = yaml.SafeLoader("")

    def build(node: yaml.Node, path: tuple) -> Any:
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            out = {}
            for key_node, value_node in node.value:
                key = constructor.construct_object(key_node, deep=True)
                lines[(*path, key)] = key_node.start_mark.line + 1
                out[key] = build(value_node, (*path, key))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [build(item, (*path, i)) for i, item in enumerate(node.value)]
        return constructor.construct_object(node, deep=True)

    return build(root, ()), lines


def _line(lines: dict[tuple, int], loc: tuple) -> int:
    for cut in range(len(loc), -1, -1):
        if tuple(loc[:cut]) in lines:
            return lines[tuple(loc[:cut])]
    return 1


def _key(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


# ---------------------------------------------------------------------- the models
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class RunSpec(_Strict):
    """A graph: a trace directory, ``.goal`` or ``.npz`` file (``path``) or a stored run."""

    name: str = Field(pattern=_NAME)
    path: str | None = None
    stored: str | None = None
    format: str = "auto"

    def model_post_init(self, __context: Any) -> None:
        if (self.path is None) == (self.stored is None):
            raise ValueError("give exactly one of path (a trace or graph file) or stored (a run)")


class NetworkSpec(BaseModel):
    """LogGPS parameters (any key of ``LogGPS.parse``), a calibrated ``profile``, a
    ``topology`` with its link latencies (``wire``, ``switch``, ``intra_node``, ``links``), or a
    ``gpu_machine`` (:class:`llamp.lp.gpu_machine.GpuMachine`: its spec text or a mapping of
    its parts ``gpus``, ``nvlink``, ``net``, ``nics``, ``affinity``; the machine gives L and G,
    the LogGPS keys the rest)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(pattern=_NAME)
    profile: str | None = None
    topology: str | None = None
    wire: str | float | None = None
    switch: str | float | None = None
    intra_node: str | float | None = None
    links: dict[str, str | float] = Field(default_factory=dict)
    gpu_machine: str | dict[str, str | int | float | list[int | str]] | None = None

    @property
    def loggps_keys(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @property
    def kind(self) -> str:
        return "gpu" if self.gpu_machine is not None else "topology" if self.topology else "loggps"


class PlacementSpec(_Strict):
    """Rank → node mapping on topology networks: dense with ``ranks_per_node`` or a file."""

    name: str = Field(pattern=_NAME)
    ranks_per_node: int = Field(default=1, ge=1)
    mapping: str | None = None


class OptionSpec(BaseModel):
    """A what-if merged into every network: LogGPS keys (e.g. ``progress: wait``)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(pattern=_NAME)

    @property
    def loggps_keys(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class SlurmSpec(_Strict):
    """dask-jobqueue ``SLURMCluster`` settings; ``jobs`` is how many jobs to start."""

    cores: int = Field(default=1, ge=1)
    processes: int | None = Field(default=None, ge=1)
    memory: str = "4GB"
    walltime: str = "01:00:00"
    queue: str | None = None
    account: str | None = None
    jobs: int = Field(default=1, ge=1)
    job_extra_directives: list[str] = Field(default_factory=list)
    prologue: list[str] = Field(default_factory=list)  # e.g. module load, source venv
    interface: str | None = None  # network interface of the workers (e.g. ib0)


class ExecutionSpec(_Strict):
    workers: int | None = Field(default=None, ge=0)
    scheduler: str | None = None
    cluster: Literal["local", "slurm"] = "local"
    slurm: SlurmSpec = Field(default_factory=SlurmSpec)
    work_dir: str | None = None


class CellSpec(_Strict):
    run: str
    network: str
    analysis: str
    collectives: str = "default"
    placement: str | None = None
    option: str | None = None


class StudySpec(_Strict):
    study: str = Field(pattern=_NAME)
    runs: list[RunSpec] = Field(min_length=1)
    networks: list[NetworkSpec] = Field(min_length=1)
    collectives: list[str] = Field(default_factory=lambda: ["default"], min_length=1)
    placements: list[PlacementSpec] = Field(default_factory=list)
    options: list[OptionSpec] = Field(default_factory=list)
    analyses: list[str | dict[str, dict[str, Any] | None]] = Field(min_length=1)
    cells: list[CellSpec] | None = None
    engine: Literal["auto", "graph", "glop", "highs"] = "auto"
    execution: ExecutionSpec = Field(default_factory=ExecutionSpec)
    output: str | None = None

    @field_validator("collectives")
    @classmethod
    def _variants(cls, value: list[str]) -> list[str]:
        for item in value:
            if item != "default" and "=" not in item:
                raise ValueError(f"{item!r} is not 'default' or OP=ALG[,OP=ALG…]")
        return value


# ---------------------------------------------------------------------- cells
@dataclass(frozen=True)
class Network:
    """A resolved network: its LogGPS parameters and, for topologies, the link latencies."""

    name: str
    params: LogGPS
    topology: str | None = None
    latencies: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, Any] = field(default_factory=dict)  # as given: LogGPS keys, profile
    gpu_machine: str | None = None  # GpuMachine.spec(): exact, as the command line takes it

    @property
    def kind(self) -> str:
        return "gpu" if self.gpu_machine else "topology" if self.topology else "loggps"


@dataclass(frozen=True)
class Cell:
    """One run × collective variant × network × placement × option × analysis."""

    study: str
    run: str
    collectives: str
    network: Network
    placement: PlacementSpec | None
    option: str
    analysis: str
    settings: dict[str, Any]
    engine: str

    @property
    def graph_key(self) -> tuple[str, str]:
        return (self.run, self.collectives)

    @property
    def id(self) -> str:
        """Stable over re-runs of the same definition (resume skips stored cells by it)."""
        payload = {
            "study": self.study,
            "run": self.run,
            "collectives": self.collectives,
            "network": [
                self.network.params.as_dict(),
                self.network.topology,
                self.network.latencies,
                self.network.keys,
                *([self.network.gpu_machine] if self.network.gpu_machine else []),
            ],
            "placement": None if self.placement is None else self.placement.model_dump(),
            "analysis": self.analysis,
            "settings": self.settings,
            "engine": self.engine,
        }
        text = json.dumps(payload, sort_keys=True, default=str)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def labels(self) -> dict[str, Any]:
        """The identifying columns of the cell's table row."""
        return {
            "study": self.study,
            "cell": self.id,
            "run": self.run,
            "collectives": self.collectives,
            "network": self.network.name,
            "placement": self.placement.name if self.placement else "",
            "option": self.option,
            "analysis": self.analysis,
        }


@dataclass(frozen=True)
class Study:
    """A validated spec: its runs (paths resolved), cells, execution settings and output."""

    name: str
    source: Path
    runs: dict[str, RunSpec]
    cells: list[Cell]
    execution: ExecutionSpec
    output: Path | None

    def graph_keys(self) -> list[tuple[str, str]]:
        return sorted({c.graph_key for c in self.cells})


def _resolve_network(
    net: NetworkSpec, option: OptionSpec | None, base_dir: Path, home: Path | None
) -> Network:
    keys = net.loggps_keys | (option.loggps_keys if option else {})
    gpu = None
    if net.gpu_machine is not None:
        from llamp.lp.gpu_machine import GpuMachine

        if net.topology:
            raise ValueError("gpu_machine: give a GPU machine or a topology, not both")
        given = sorted(k for k in ("L", "G") if k in keys)
        if given:
            raise ValueError(f"{given[0]!r}: a GPU machine's L and G are its nvlink and net parts")
        machine = (
            GpuMachine.parse(net.gpu_machine)
            if isinstance(net.gpu_machine, str)
            else GpuMachine.from_parts(net.gpu_machine)
        )
        gpu = machine.spec()
    base = None
    if net.profile:
        from llamp.injector.profiles import load_profile

        base = load_profile(net.profile, home).params
    try:
        params = LogGPS.parse(**keys, base=base)
    except TypeError as err:
        unknown = str(err).split("argument")[-1].strip(" '")
        raise ValueError(f"LogGPS.parse has no parameter {unknown!r} in this llamp") from None
    latencies: dict[str, Any] = {}
    if net.topology:
        from llamp.config import parse_duration_ns
        from llamp.lp.topology import parse_topology

        topo = parse_topology(net.topology)
        for key in ("wire", "switch", "intra_node"):
            value = getattr(net, key)
            if value is not None:
                latencies[f"{key}_ns"] = parse_duration_ns(value)
        per_class = {k: parse_duration_ns(v) for k, v in net.links.items()}
        unknown = sorted(set(per_class) - set(topo.classes))
        if unknown:
            raise ValueError(
                f"{net.topology} has no link class {unknown[0]!r} (classes: "
                f"{', '.join(topo.classes)})"
            )
        latencies["per_class_ns"] = per_class
    given = {k: str(v) for k, v in keys.items()} | {"profile": net.profile}
    return Network(net.name, params, net.topology, latencies, given, gpu)


def _unique(items: list[Any], what: str, lines: dict, where: str) -> None:
    seen: set[str] = set()
    for i, item in enumerate(items):
        if item.name in seen:
            raise SpecError(
                f"{where}:{_line(lines, (what, i, 'name'))}: {what}[{i}].name: "
                f"{item.name!r} is used twice"
            )
        seen.add(item.name)


def _analysis_items(spec: StudySpec) -> list[tuple[int, str, dict[str, Any]]]:
    out = []
    for i, item in enumerate(spec.analyses):
        if isinstance(item, str):
            out.append((i, item, {}))
        elif len(item) == 1:
            ((name, settings),) = item.items()
            out.append((i, name, dict(settings or {})))
        else:
            raise ValueError("an analysis is a name or {name: {settings}} with one key")
    return out


def load_spec(path: str | Path, *, home: Path | None = None) -> Study:
    """Read and validate the study spec at ``path``; a :class:`SpecError` names file and line."""
    from llamp.study.analyses import ANALYSES

    path = Path(path)
    where = str(path)
    if not path.is_file():
        raise SpecError(f"{where}: no such study spec")
    data, lines = _load_yaml(path.read_text(), where)
    try:
        spec = StudySpec.model_validate(data)
    except ValidationError as err:
        # An unknown key explains a missing one (a typo), so it is reported first.
        first = sorted(err.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
        loc = tuple(first["loc"])
        msg = first["msg"].removeprefix("Value error, ")
        raise SpecError(f"{where}:{_line(lines, loc)}: {_key(loc)}: {msg}") from None

    def fail(loc: tuple, reason: str) -> SpecError:
        return SpecError(f"{where}:{_line(lines, loc)}: {_key(loc)}: {reason}")

    base_dir = path.parent
    for what in ("runs", "networks", "placements", "options"):
        _unique(getattr(spec, what), what, lines, where)
    for i, run in enumerate(spec.runs):
        if run.path is not None and not (base_dir / run.path).exists():
            raise fail(("runs", i, "path"), f"{base_dir / run.path}: no such file or directory")
        if run.stored is not None and spec.collectives != ["default"]:
            raise fail(
                ("runs", i, "stored"),
                "collective variants re-expand a trace; a stored run cannot be re-expanded "
                "(give its trace path)",
            )
    for i, place in enumerate(spec.placements):
        if place.mapping is not None and not (base_dir / place.mapping).is_file():
            raise fail(("placements", i, "mapping"), f"{base_dir / place.mapping}: no such file")

    analyses: dict[str, tuple[str, dict[str, Any]]] = {}
    try:
        items = _analysis_items(spec)
    except ValueError as err:
        raise fail(("analyses",), str(err)) from None
    for i, name, settings in items:
        kind = ANALYSES.get(name)
        if kind is None:
            raise fail(("analyses", i), f"unknown analysis {name!r}; known: {', '.join(ANALYSES)}")
        try:
            checked = kind.settings.model_validate(settings).model_dump(by_alias=True)
        except ValidationError as err:
            first = err.errors()[0]
            loc = ("analyses", i, name, *first["loc"])
            msg = first["msg"].removeprefix("Value error, ")
            raise fail(loc, msg) from None
        if name in analyses:
            raise fail(("analyses", i), f"{name} is listed twice")
        analyses[name] = (name, checked)

    options: list[OptionSpec | None] = list(spec.options) or [None]
    networks: dict[tuple[str, str], Network] = {}
    for i, net in enumerate(spec.networks):
        for option in options:
            try:
                networks[(net.name, option.name if option else "")] = _resolve_network(
                    net, option, base_dir, home
                )
            except (ValueError, LlampError) as err:
                bad = _offending_key(str(err), net, option)
                if bad and option is not None and bad in option.loggps_keys:
                    j = spec.options.index(option)
                    raise fail(("options", j, bad), str(err)) from None
                raise fail(("networks", i, bad) if bad else ("networks", i), str(err)) from None

    for place in spec.placements:
        if place.mapping is not None:
            place.mapping = str((base_dir / place.mapping).resolve())
    placements = {p.name: p for p in spec.placements}
    runs = {r.name: r for r in spec.runs}
    for run in runs.values():
        if run.path is not None:
            run.path = str((base_dir / run.path).resolve())

    def make(run, variant, net, place, option, analysis) -> Cell:
        name, settings = analyses[analysis]
        return Cell(
            study=spec.study,
            run=run,
            collectives=variant,
            network=networks[(net, option or "")],
            placement=place,
            option=option or "",
            analysis=name,
            settings=settings,
            engine=spec.engine,
        )

    cells: list[Cell] = []
    default_place = PlacementSpec(name="dense")
    if spec.cells is None:
        for run, variant, net, option, analysis in itertools.product(
            runs, spec.collectives, spec.networks, options, analyses
        ):
            if net.kind not in ANALYSES[analysis].networks:
                continue  # e.g. sweep on a topology: the cross product leaves it out
            places = (list(placements.values()) or [default_place]) if net.topology else [None]
            for place in places:
                cells.append(
                    make(run, variant, net.name, place, option.name if option else None, analysis)
                )
    else:
        nets = {n.name: n for n in spec.networks}
        for i, c in enumerate(spec.cells):
            for key, known in (
                ("run", runs),
                ("network", nets),
                ("analysis", analyses),
            ):
                if getattr(c, key) not in known:
                    raise fail(
                        ("cells", i, key),
                        f"no {key} {getattr(c, key)!r} in the spec ({', '.join(known)})",
                    )
            if c.collectives not in spec.collectives:
                raise fail(("cells", i, "collectives"), f"{c.collectives!r} is not in collectives")
            net = nets[c.network]
            kind = ANALYSES[c.analysis]
            if net.kind not in kind.networks:
                raise fail(
                    ("cells", i, "analysis"), f"{c.analysis} does not run on a {net.kind} network"
                )
            if c.option is not None and c.option not in {o.name for o in spec.options}:
                raise fail(("cells", i, "option"), f"no option {c.option!r} in the spec")
            if c.placement is not None and not net.topology:
                raise fail(("cells", i, "placement"), "placements apply to topology networks")
            if c.placement is not None and c.placement not in placements:
                raise fail(("cells", i, "placement"), f"no placement {c.placement!r} in the spec")
            place = (placements.get(c.placement) or default_place) if net.topology else None
            cells.append(make(c.run, c.collectives, c.network, place, c.option, c.analysis))
    if not cells:
        raise fail(("analyses",), "no cell: no analysis runs on the networks given")
    ids = [c.id for c in cells]
    if len(set(ids)) != len(ids):
        raise fail(("cells",), "two cells are identical")
    output = Path(spec.output) if spec.output else None
    if output is not None and not output.is_absolute():
        output = base_dir / output
    return Study(spec.study, path, runs, cells, spec.execution, output)


def _offending_key(message: str, net: NetworkSpec, option: OptionSpec | None) -> str | None:
    if net.gpu_machine is not None and message.startswith(("GPU machine", "a GPU machine")):
        return "gpu_machine"
    keys = list(net.loggps_keys) + (list(option.loggps_keys) if option else [])
    keys += ["profile", "topology", "wire", "switch", "intra_node", "links", "gpu_machine"]
    for key in keys:
        if repr(key) in message or f"{key} " in message.split(":")[0]:
            return key
    for key in keys:
        value = (net.loggps_keys | (option.loggps_keys if option else {})).get(key)
        if value is not None and repr(str(value)) in message:
            return key
    return None
