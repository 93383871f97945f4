"""The analyses, each described once: :data:`ANALYSES`.

An entry (:class:`Analysis`) holds the function that computes the analysis through the other
modules of :mod:`llamp.lp`, its typed settings (a frozen dataclass; each field is an
:class:`Option` that knows its command-line flag, its study key, its default and the parser of
:mod:`llamp.config` that reads it), the result type, its JSON payload (what ``llamp NAME
--json`` prints and a study cell keeps), its flat scalars (units in the names: the study table
and the graph store) and the kind of the ``Analysis`` node it is stored as.

The consumers are generated from the entries: the command-line options of ``llamp NAME``
(:func:`llamp.cli.base.settings_options`), the study's analyses and their equivalent
commands (:mod:`llamp.study.analyses`), the UI's background runner and its store codec
(:mod:`llamp.ui.stored`). What an analysis runs *on* besides the graph is an :class:`Inputs`:
the LogGPS parameters (every network and model option of :class:`~llamp.params.LogGPS` with
them), the engine, and for the network what-ifs the topology and link latencies.

Most analyses run on one graph; an entry whose ``input`` is ``"runs"`` (``compare``) runs on
two or more, named by ``Inputs.names``: the command line takes several RUN arguments for it and
the UI's Compare page computes it per run, and a study (one run per cell) has none of them.

Adding an analysis is one module of :mod:`llamp.lp`, one entry here and its page's view code
(docs/extending.md).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from llamp import config
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.params import LogGPS

#: ``report(fraction done or None, what is happening)``: how a long analysis tells its caller
#: (a terminal's progress bar, a UI task) how far it is. Raising from it stops the analysis.
Report = Callable[[float | None, str], None]


# ---------------------------------------------------------------------- options
def _text(value: Any, what: str) -> str:
    return str(value)


def _optional_text(value: Any, what: str) -> str | None:
    return None if value is None else str(value)


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise InputError(f"{what}: {value!r} is not a whole number")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InputError(f"{what}: {value!r} is not a whole number") from None


def _optional_int(value: Any, what: str) -> int | None:
    return None if value is None else _int(value, what)


def _float(value: Any, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{what}: {value!r} is not a number") from None
    if not math.isfinite(number):
        raise InputError(f"{what}: {value!r} must be finite")
    return number


def _flag(value: Any, what: str) -> bool:
    return bool(value)


def levels(value: Any, what: str) -> tuple[float, ...]:
    """Tolerance levels as sorted fractions (:func:`llamp.config.parse_percents`) from the
    command line's ``"1,2,5"`` or a study's ``[1, 2, 5]``."""
    if isinstance(value, list | tuple) and value:
        return tuple(sorted({config.parse_percent(v, what=what) for v in value}))
    return config.parse_percents("" if isinstance(value, list | tuple) else value, what=what)


def percent(value: Any, what: str) -> float:
    return config.parse_percent(value, what=what)


def _budget(value: Any, what: str) -> int | str | None:
    return config.parse_budget(value, what=what)


def _ranks(value: Any, what: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        value = ",".join(str(v) for v in value)
    return config.parse_ranks(value, what=what)


def _level(value: Any, what: str) -> tuple[float, float] | None:
    from llamp.lp.matrix import parse_level

    return None if value is None else parse_level(str(value), what)


def _seconds(value: Any, what: str) -> float:
    return config.parse_duration_ns(value, default_unit="s") / 1e9


def _texts(value: Any, what: str) -> tuple[str, ...]:
    return tuple(str(v) for v in (value or ()))


def _largest_latency(value: Any, what: str) -> float | None:
    """A positive duration (``"200us"``; a bare number is in ns), or ``None``: automatic."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    top = config.parse_duration_ns(value)
    if not top > 0:
        raise InputError(f"{what} {value}: must be > 0")
    return top


@dataclass(frozen=True)
class Option:
    """One setting of an analysis: a field of its settings dataclass, the command-line option
    that sets it and the key of a study spec that sets it.

    ``parse(value, what)`` reads what the user gave (the option's text, a study's YAML value)
    into the field's type with a parser of :mod:`llamp.config`; ``what`` names the flag or
    the key in its error. ``default`` is written as a user writes it; ``study_default`` is a
    study's own default where a study runs many cells and picks a smaller one (``None``: the
    same). ``kind`` is how the command line takes it (``text``, ``int``, ``float``, ``choice``,
    ``flag``, ``multiple``: repeatable)."""

    field: str
    flag: str
    parse: Callable[[Any, str], Any]
    default: Any = None
    help: str | None = None
    kind: Literal["text", "int", "float", "choice", "flag", "multiple"] = "text"
    metavar: str | None = None
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None
    minimum: float | None = None
    maximum: float | None = None
    key: str | None = None
    study_default: Any = None
    #: The study's type of the raw value (what its YAML holds), e.g. ``list[float]``.
    study_type: Any = None

    @property
    def study_key(self) -> str:
        return self.key or self.field

    def study_default_value(self) -> Any:
        return self.default if self.study_default is None else self.study_default

    def arguments(self, value: Any) -> list[str]:
        """The command-line arguments that give ``value`` (a study's raw value) exactly."""
        if value is None:
            return []
        if self.kind == "flag":
            return [self.flag] if value else []
        if self.kind == "multiple":
            return [arg for item in value for arg in (self.flag, str(item))]
        if isinstance(value, list | tuple):
            if not value:
                return []
            text = ",".join(repr(v) if isinstance(v, float) else str(v) for v in value)
        elif isinstance(value, float):
            text = repr(value)
        else:
            text = str(value)
        return [self.flag, text]


def levels_setting(
    default: str, help_what: str, study_default: list[float] | None = None
) -> Option:
    """The ``--x`` option of tolerance levels (a study's key ``x``)."""
    return Option(
        "levels",
        "--x",
        levels,
        default,
        help=f"{help_what}: percentages of the baseline runtime, e.g. 1,2,5 or 0.5%. A bare "
        "number is a percentage (0.5 means 0.5 %); each must be positive.",
        metavar="PCT,...",
        key="x",
        study_default=study_default,
        study_type=list[float],
    )


#: :data:`llamp.config.DEFAULT_TOLERANCES` as the command line (``1,2,5``) and a study
#: (``[1.0, 2.0, 5.0]``) write them.
_DEFAULT_X_STUDY = [round(x * 100, 12) for x in config.DEFAULT_TOLERANCES]
_DEFAULT_X = ",".join(f"{x:g}" for x in _DEFAULT_X_STUDY)

_PARAMETER = Option(
    "parameter",
    "--param",
    _text,
    "L",
    kind="choice",
    choices=("L", "G", "o"),
    key="param",
    study_type=Literal["L", "G", "o"],
)
_TWO_LEVEL_KEYS = ("intra", "inter")


def _budget_option(default: str, auto: bool = True) -> Option:
    if auto:
        help_ = (
            "Budget of T evaluations for the critical-value search: all (exact, however "
            "long), auto (one to two minutes on a 2-core machine) or a number. Intervals left "
            "unresolved are listed."
        )
        metavar = "N|auto|all"
    else:
        help_ = "Stop after N evaluations of T (vertices not verified by then are flagged)."
        metavar = "N|all"
    return Option(
        "max_evaluations",
        "--max-evaluations",
        _budget,
        default,
        help=help_,
        metavar=metavar,
        study_type=str | int,
    )


# ---------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class Inputs:
    """What an analysis runs on besides the graph and its settings.

    ``params``: the LogGPS parameters with every model option (:class:`LogGPS`); ``engine``:
    one of :data:`llamp.lp.ENGINES`; for the network what-ifs a ``topology`` spec, a rank
    ``mapping`` file and the link ``latencies``; for ``classify`` its target ``network``; for
    the placement of parallel groups the ``gpu_machine`` (its spec text or the machine);
    ``profiles``: saved network profiles a region marks (name, LogGPS); ``report``: where
    progress goes; ``threads``: the Monte Carlo's workers (``None``: every core); ``names``:
    the runs of an analysis of several runs, in the order of their graphs (``None``: each
    graph's own name)."""

    params: LogGPS
    engine: str = "auto"
    topology: Any = None  # a spec, or a llamp.lp.topology.Topology
    mapping: str | None = None
    latencies: Any = None  # llamp.lp.topology.LinkLatencies
    network: Any = None  # llamp.lp.classify.Network
    profiles: tuple[tuple[str, LogGPS], ...] = ()
    hostnames: tuple[str, ...] | None = None
    report: Report | None = None
    threads: int | None = None
    names: tuple[str, ...] | None = None
    gpu_machine: Any = None  # a spec text, or a llamp.lp.gpu_machine.GpuMachine

    def progress(self, fraction: float | None, text: str) -> None:
        if self.report is not None:
            self.report(fraction, text)


# ---------------------------------------------------------------------- settings
@dataclass(frozen=True)
class NoSettings:
    """An analysis with nothing to set but its inputs."""


@dataclass(frozen=True)
class SweepSettings:
    parameter: str = "L"
    lo: str = "0"
    hi: str = "100us"
    points: int = 11
    reschedule: bool = False

    def range(self) -> tuple[float, float]:
        return config.parse_range(self.parameter, self.lo, self.hi)


@dataclass(frozen=True)
class CriticalSettings:
    parameter: str = "L"
    lo: str = "0"
    hi: str = "100us"
    max_evaluations: int | str | None = None
    min_jump: float | None = None

    def range(self) -> tuple[float, float]:
        return config.parse_range(self.parameter, self.lo, self.hi)

    @classmethod
    def over(
        cls, lo: float, hi: float, max_evaluations: int | str | None = "auto"
    ) -> CriticalSettings:
        """The search of L over [``lo``, ``hi``] ns (exact: ``repr`` reads back the same
        float), with the automatic evaluation budget unless told otherwise."""
        return cls(lo=f"{lo!r}ns", hi=f"{hi!r}ns", max_evaluations=max_evaluations)


@dataclass(frozen=True)
class ToleranceSettings:
    levels: tuple[float, ...] = config.DEFAULT_TOLERANCES


@dataclass(frozen=True)
class RegionSettings:
    levels: tuple[float, ...] = config.DEFAULT_TOLERANCES
    axes: str | None = None
    L_max: str | None = None
    G_max: str | None = None
    o_max: str | None = None
    maxima: tuple[str, ...] = ()
    gpu_machine: str | None = None
    ranks_per_node: int = 1
    intra: tuple[float, float] | None = None
    inter: tuple[float, float] | None = None
    designs: tuple[str, ...] = ()
    networks: bool = False
    max_evaluations: int | str | None = None


@dataclass(frozen=True)
class MatrixSettings:
    intra: tuple[float, float] | None = None
    inter: tuple[float, float] | None = None
    ranks_per_node: int = 1


@dataclass(frozen=True)
class ClassifySettings:
    compute_share: float = 0.9
    bound_share: float = 0.25
    sensitive_share: float = 0.1
    insensitive: float = 0.05
    decrease: float = 2.0
    span: int = 8


@dataclass(frozen=True)
class MonteCarloSettings:
    samples: int = 1000
    spatial_cv: float = 0.0
    temporal_cv: float = 0.0
    distribution: str = "lognormal"
    slow_ranks: tuple[int, ...] = ()
    slowdown: float = 1.0
    seed: int = 0
    levels: tuple[float, ...] = (0.01,)
    runtime_only: bool = False


@dataclass(frozen=True)
class TopologySettings:
    levels: tuple[float, ...] = config.DEFAULT_TOLERANCES
    ranks_per_node: int = 1


@dataclass(frozen=True)
class ReportSettings:
    lo: str = "0"
    hi: str = "100us"
    points: int = 11
    levels: tuple[float, ...] = config.DEFAULT_TOLERANCES
    max_evaluations: int | str | None = "auto"

    def range(self) -> tuple[float, float]:
        return config.parse_range("L", self.lo, self.hi)


@dataclass(frozen=True)
class CompareSettings:
    """Tolerance levels, and the largest L of every run's curve (``None``: each run over its
    own automatic range, :func:`llamp.lp.tolerance.latency_range`)."""

    levels: tuple[float, ...] = config.DEFAULT_TOLERANCES
    hi: float | None = None


@dataclass(frozen=True)
class PlaceSettings:
    intra: tuple[float, float] | None = None
    inter: tuple[float, float] | None = None
    nodes: int | None = None
    ranks_per_node: int = 1
    budget_s: float = 30.0
    max_swaps: int = 1000
    candidates: int = 16
    start: str = "best"
    seed: int = 0


@dataclass(frozen=True)
class PlaceGroupsSettings:
    layouts: tuple[str, ...] = ()
    levels: tuple[float, ...] = config.DEFAULT_TOLERANCES


# ---------------------------------------------------------------------- the entries
@dataclass(frozen=True)
class Analysis:
    """One analysis, described once (module docstring).

    ``run(graph, inputs, settings)`` returns the ``result`` (a typed result of :mod:`llamp.lp`;
    with ``input == "runs"`` its first argument is the sequence of the runs' graphs);
    ``payload(result, settings, inputs)`` its JSON; ``scalars(payload)`` flat values with units
    in their names; ``networks`` the kinds of study network it runs on; ``uses`` the fields of
    :class:`Inputs` it reads besides its settings; ``stored`` the result
    dataclasses its stored form holds (the store codec registers them); ``kind`` the stored
    ``Analysis`` node's kind."""

    name: str
    about: str
    settings: type
    options: tuple[Option, ...]
    run: Callable[[ExecutionGraph, Inputs, Any], Any]
    payload: Callable[[Any, Any, Inputs], dict[str, Any]]
    scalars: Callable[[dict[str, Any]], dict[str, Any]]
    networks: frozenset[str] = frozenset({"loggps"})
    uses: frozenset[str] = frozenset({"params"})
    input: Literal["graph", "runs"] = "graph"

    @property
    def kind(self) -> str:
        return self.name

    @property
    def result(self) -> type:
        return _result_types()[self.name][0]

    @property
    def stored(self) -> tuple[type, ...]:
        return _result_types()[self.name][1]

    def option(self, name: str) -> Option:
        return next(o for o in self.options if o.field == name)

    def parse(
        self,
        values: Mapping[str, Any],
        *,
        study: bool = False,
        labels: Mapping[str, str] | None = None,
    ) -> Any:
        """The settings of ``values`` (field or study key → what the user gave; a missing one
        takes its default), each read by its option's parser; an error names the flag (or
        the study key, or a UI input's label from ``labels``: field → label)."""
        parsed = {}
        for opt in self.options:
            key = opt.study_key if study else opt.field
            raw = values.get(key, opt.study_default_value() if study else opt.default)
            what = (labels or {}).get(opt.field) or (opt.study_key if study else opt.flag)
            parsed[opt.field] = opt.parse(raw, what)
        return self.settings(**parsed)

    def default_settings(self) -> Any:
        return self.parse({})

    def compute(self, graph: ExecutionGraph, inputs: Inputs, settings: Any = None) -> Any:
        """The result for ``settings`` (default: the defaults of the command line)."""
        return self.run(graph, inputs, self.default_settings() if settings is None else settings)


def _as_dict(result: Any, settings: Any, inputs: Inputs) -> dict[str, Any]:
    return result.as_dict()


def pct(x: float) -> str:
    return f"{x * 100:g}pct"


# predict ---------------------------------------------------------------------
def _predict(graph: ExecutionGraph, inputs: Inputs, settings: NoSettings):
    from llamp.lp.predict import predict

    return predict(graph, inputs.params, engine=inputs.engine)


def _predict_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: payload[k] for k in ("runtime_ns", "lambda_L", "lambda_G", "lambda_o", "rho_L")}


# sweep -----------------------------------------------------------------------
@dataclass(frozen=True)
class SweepResult:
    """``T``, λ and ρ_L at evenly spaced values of one parameter (rows of
    :func:`llamp.lp.predict.sweep_rows`)."""

    parameter: str
    points: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"parameter": self.parameter, "points": self.points}


def _sweep(graph: ExecutionGraph, inputs: Inputs, settings: SweepSettings) -> SweepResult:
    import numpy as np

    from llamp.lp.predict import sweep_rows

    a, b = settings.range()
    rows = sweep_rows(
        graph,
        inputs.params,
        np.linspace(a, b, settings.points),
        parameter=settings.parameter,
        engine=inputs.engine,
        reschedule=settings.reschedule,
    )
    return SweepResult(settings.parameter, rows)


def _sweep_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    points = payload["points"]
    column = next(iter(points[0]))
    return {
        f"sweep_{column}": [p[column] for p in points],
        "sweep_runtime_ns": [p["runtime_ns"] for p in points],
        "sweep_lambda_L": [p["lambda_L"] for p in points],
        "sweep_rho_L": [p["rho_L"] for p in points],
    }


def _range_options(
    help_from: str | None = None, help_to: str | None = None
) -> tuple[Option, Option, Option]:
    """``--from``, ``--to`` (a study's ``from``, ``to``) and ``--points`` of a range."""
    return (
        Option("lo", "--from", _text, "0", help=help_from, key="from", study_type=str | float),
        Option("hi", "--to", _text, "100us", help=help_to, key="to", study_type=str | float),
        Option(
            "points", "--points", _int, 11, kind="int", minimum=2, maximum=100000, study_type=int
        ),
    )


_RANGE_OPTIONS = (_PARAMETER, *_range_options()[:2])


# critical --------------------------------------------------------------------
def resolve_budget(budget: int | str | None, graph: ExecutionGraph, params: LogGPS) -> int | None:
    """An evaluation budget with ``auto`` sized for ``graph``
    (:func:`llamp.lp.critical.evaluation_budget`)."""
    if budget == "auto":
        from llamp.lp.critical import evaluation_budget

        return evaluation_budget(graph, params)
    return budget  # type: ignore[return-value]


def critical_search(
    graph: ExecutionGraph,
    params: LogGPS,
    lo: float,
    hi: float,
    *,
    report: Report | None = None,
    **options: Any,
):
    """:func:`llamp.lp.critical_latencies` reporting after each wave: the share of the λ jump
    between the ends resolved (or of the budget spent, if more), waves, evaluations and open
    intervals."""
    from llamp.lp.critical import critical_latencies

    progress = None
    if report is not None:
        budget = options.get("max_evaluations")

        def progress(done: float, waves: int, evaluations: int, pending: int) -> None:
            if budget:  # the budget ends the search before the λ jump is resolved
                done = max(done, evaluations / budget)
            report(done, f"{evaluations:,} evaluations in {waves:,} waves, {pending:,} open")

    return critical_latencies(graph, params, lo, hi, progress=progress, **options)


def _critical(graph: ExecutionGraph, inputs: Inputs, settings: CriticalSettings):
    from llamp.lp.critical import MIN_JUMP

    a, b = settings.range()
    return critical_search(
        graph,
        inputs.params,
        a,
        b,
        report=inputs.report,
        parameter=settings.parameter,
        engine=inputs.engine,
        max_evaluations=resolve_budget(settings.max_evaluations, graph, inputs.params),
        min_jump=MIN_JUMP if settings.min_jump is None else settings.min_jump,
    )


def _critical_payload(result, settings: CriticalSettings, inputs: Inputs) -> dict[str, Any]:
    payload = result.as_dict()
    if settings.min_jump is not None:
        unit, slope = result.units()
        payload["min_jump"] = settings.min_jump
        payload["significant"] = [
            p.as_dict(unit, slope) for p in result.significant(settings.min_jump)
        ]
    return payload


def _critical_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    key = next(k for k in payload if k.startswith("critical_"))
    return {
        key: list(payload[key]),
        "critical_count": len(payload[key]),
        "critical_complete": bool(payload["complete"]),
        "critical_evaluations": payload["evaluations"],
    }


# tolerance -------------------------------------------------------------------
def _tolerance(graph: ExecutionGraph, inputs: Inputs, settings: ToleranceSettings):
    from llamp.lp.tolerance import tolerance

    return tolerance(graph, inputs.params, settings.levels, engine=inputs.engine)


def _tolerance_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    out = {"baseline_ns": payload["baseline_ns"]}
    for row in payload["latency"]:
        out[f"tolerance_{pct(row['x'])}_L_ns"] = row["latency_ns"]
    for row in payload["bandwidth"]:
        out[f"tolerance_{pct(row['x'])}_G_ns_per_byte"] = row["G_ns_per_byte"]
    return out


# region ----------------------------------------------------------------------
def region_variables(
    graph: ExecutionGraph,
    params: LogGPS,
    *,
    topology: str | None = None,
    mapping: str | None = None,
    ranks_per_node: int = 1,
    intra: tuple[float, float] | None = None,
    inter: tuple[float, float] | None = None,
    latencies: Any = None,
):
    """``None`` (the variables L, G, o) or the link variables of a topology or of a
    two-level machine (:mod:`llamp.lp.region`)."""
    from llamp.lp.region import topology_variables, two_level_variables
    from llamp.lp.topology import dense_mapping

    if topology and (intra or inter):
        raise InputError("choose one machine: --topology SPEC or --intra L,G --inter L,G")
    if intra or inter:
        if not (intra and inter):
            raise InputError("--intra and --inter go together (each L,G, e.g. 300ns,0.05ns/B)")
        node = dense_mapping(graph.num_ranks, ranks_per_node).node_of_rank
        return two_level_variables(graph, node, intra, inter)
    if topology:
        from llamp.lp.topology import parse_topology, read_mapping

        topo = parse_topology(topology)
        ranks = (
            read_mapping(mapping, graph.num_ranks, topo.node_names())
            if mapping
            else dense_mapping(graph.num_ranks, ranks_per_node)
        )
        return topology_variables(graph, params, topo, ranks, latencies)
    if mapping:
        raise InputError("--mapping goes with --topology")
    return None


def _default_axes(variables) -> str:
    if variables is None:
        return "L,G"
    names = variables.model.names
    if "L_intra" in names:
        return "L_intra,L_inter"
    classes = [n for n in names if n not in ("l_wire", "d_switch", "l_intra_node", "G")]
    return f"{classes[-1]},G"


def _region(graph: ExecutionGraph, inputs: Inputs, settings: RegionSettings):
    from llamp.lp.region import parameter_axis, tolerance_region

    if settings.gpu_machine:
        if inputs.topology or settings.intra or settings.inter:
            raise InputError("choose one machine: --gpu-machine, --topology or --intra/--inter")
        from llamp.lp.gpu_machine import GpuMachine, gpu_variables

        variables = gpu_variables(graph, GpuMachine.parse(settings.gpu_machine))
    else:
        variables = region_variables(
            graph,
            inputs.params,
            topology=inputs.topology,
            mapping=inputs.mapping,
            ranks_per_node=settings.ranks_per_node,
            intra=settings.intra,
            inter=settings.inter,
            latencies=inputs.latencies,
        )
    axes = settings.axes or _default_axes(variables)
    names = [a.strip() for a in axes.split(",")]
    if len(names) != 2 or not all(names):
        raise InputError(f"--axes: {axes!r} is not two variables U,V (e.g. L,G)")
    axis = {
        name: parameter_axis(name, inputs.params) if variables is None else variables.axis(name)
        for name in names
    }
    box: dict[str, float] = {}
    for name, text in (("L", settings.L_max), ("G", settings.G_max), ("o", settings.o_max)):
        if text is not None:
            if name not in names:
                raise InputError(f"--{name}-max: {name} is not an axis (--axes {','.join(names)})")
            box[name] = axis[name].parse(text, f"--{name}-max")
    for item in settings.maxima:
        name, sep, text = (p.strip() for p in item.partition("="))
        if not sep or name not in names:
            raise InputError(f"--max: {item!r} is not VAR=VALUE for an axis ({', '.join(names)})")
        box[name] = axis[name].parse(text, f"--max {name}")
    if settings.max_evaluations == "auto":
        raise InputError("--max-evaluations: region takes all or a whole number, not auto")
    return tolerance_region(
        graph,
        inputs.params,
        levels=settings.levels,
        axes=(names[0], names[1]),
        box=box,
        variables=variables,
        max_evaluations=settings.max_evaluations,  # type: ignore[arg-type]
        progress=lambda share, n: inputs.progress(share, f"{n:,} evaluations"),
    )


def region_designs(region, settings: RegionSettings, inputs: Inputs) -> dict[str, tuple]:
    """The designs a region marks: ``--design NAME=U,V`` and, with ``networks``, the built-in
    networks and the saved profiles of ``inputs``."""
    from llamp.lp.region import network_designs, parse_design

    designs: dict[str, tuple[float, float]] = {}
    if settings.networks:
        names = [a.name for a in region.axes]
        designs.update(network_designs(region.params, (names[0], names[1]), inputs.profiles))
    designs.update(parse_design(text, region.axes) for text in settings.designs)
    return designs


def _region_payload(region, settings: RegionSettings, inputs: Inputs) -> dict[str, Any]:
    designs = region_designs(region, settings, inputs)
    payload = region.as_dict()
    payload["designs"] = region.designs(designs).to_dict(orient="records") if designs else []
    return payload


def _region_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    keys = [a["name"] for a in payload["axes"]]
    out: dict[str, Any] = {"baseline_ns": payload["baseline_ns"], "complete": payload["complete"]}
    for region in payload["regions"]:
        level = pct(region["x"])
        out[f"region_{level}_vertices"] = len(region["vertices"])
        for name in keys:
            column = next(k for k in region["vertices"][0] if k.startswith(f"{name}_"))
            out[f"region_{level}_{column}"] = [vertex[column] for vertex in region["vertices"]]
    for design in payload["designs"]:
        for key, value in design.items():
            if key.startswith("inside_") or key.startswith("slack_"):
                out[f"{design['design']}_{key}"] = value
    return out


def _two_level_options(help_intra: str, help_inter: str, rpn_help: str) -> tuple[Option, ...]:
    return (
        Option("intra", "--intra", _level, None, help=help_intra, metavar="L,G", study_type=str),
        Option("inter", "--inter", _level, None, help=help_inter, metavar="L,G", study_type=str),
        Option(
            "ranks_per_node",
            "--ranks-per-node",
            _int,
            1,
            help=rpn_help,
            kind="int",
            minimum=1,
            study_type=int,
        ),
    )


def _ranks_first(options: tuple[Option, ...]) -> tuple[Option, ...]:
    return (options[2], options[0], options[1])


# matrix ----------------------------------------------------------------------
def pair_costs(graph: ExecutionGraph, inputs: Inputs, settings: MatrixSettings):
    """``L_ij``, ``G_ij`` of the matrix: a two-level machine, a topology, or uniform."""
    import numpy as np

    from llamp.lp import matrix
    from llamp.lp.topology import dense_mapping, parse_topology, read_mapping

    P, params = graph.num_ranks, inputs.params
    if settings.intra or settings.inter:
        if not (settings.intra and settings.inter):
            raise InputError("--intra and --inter go together (each L,G, e.g. 300ns,0.05ns/B)")
        node = dense_mapping(P, settings.ranks_per_node).node_of_rank
        return matrix.two_level(node, settings.intra, settings.inter)
    if inputs.topology:
        topo = inputs.topology
        topo = parse_topology(topo) if isinstance(topo, str) else topo
        mapping = (
            read_mapping(inputs.mapping, P, topo.node_names())
            if inputs.mapping
            else dense_mapping(P, settings.ranks_per_node)
        )
        return matrix.from_topology(topo, mapping, params, inputs.latencies)
    return matrix.PairCosts(
        np.full((P, P), params.L),
        np.full((P, P), params.G),
        f"uniform (L={params.L:g} ns, G={params.G:g} ns/B)",
    )


def _matrix(graph: ExecutionGraph, inputs: Inputs, settings: MatrixSettings):
    from llamp.lp.matrix import pair_sensitivity

    return pair_sensitivity(graph, inputs.params, pair_costs(graph, inputs, settings))


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


# classify --------------------------------------------------------------------
def target_network(params: LogGPS):
    """The classify target of a LogGPS network: its bandwidth ``8/G`` and latency ``L``."""
    from llamp.lp.classify import Network

    if params.G <= 0:
        raise InputError("classify needs a bandwidth: G must be > 0 ns/B on this network")
    gap = config.parse_gap_ns_per_byte(f"{8.0 / params.G!r}Gb/s")
    return Network("custom", 8.0 / gap, float(params.L), "given on the command line")


def _classify(graph: ExecutionGraph, inputs: Inputs, settings: ClassifySettings):
    from llamp.lp.classify import Thresholds, classify

    network = inputs.network if inputs.network is not None else target_network(inputs.params)
    thresholds = Thresholds(
        compute_share=settings.compute_share,
        bound_share=settings.bound_share,
        sensitive_share=settings.sensitive_share,
        insensitive=settings.insensitive,
        decrease=settings.decrease,
        span=settings.span,
    )
    return classify(graph, network, params=inputs.params, thresholds=thresholds)


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


def _share(field_: str, flag: str, default: str, help_: str) -> Option:
    return Option(
        field_,
        flag,
        percent,
        default,
        help=help_,
        metavar="PCT",
        study_default=float(default),
        study_type=float,
    )


# mc --------------------------------------------------------------------------
def _distributions() -> tuple[str, ...]:
    from llamp.lp.variability import DISTRIBUTIONS

    return DISTRIBUTIONS


def _mc(graph: ExecutionGraph, inputs: Inputs, settings: MonteCarloSettings):
    from llamp.lp.variability import VariabilitySpec, monte_carlo

    spec = VariabilitySpec(
        spatial_cv=settings.spatial_cv,
        temporal_cv=settings.temporal_cv,
        distribution=settings.distribution,
        slow_ranks=settings.slow_ranks,
        slowdown=settings.slowdown,
        samples=settings.samples,
        seed=settings.seed,
    )
    threads = inputs.threads or max(1, min(len(os.sched_getaffinity(0)), -(-spec.samples // 16)))
    text = f"sampling {spec.samples:,} runs on {threads} thread{'s' if threads > 1 else ''}"
    inputs.progress(0.0, text)
    return monte_carlo(
        graph,
        inputs.params,
        spec,
        levels=settings.levels,
        sensitivity=not settings.runtime_only,
        workers=inputs.threads,
        on_samples=None
        if inputs.report is None
        else (lambda done: inputs.progress(done / spec.samples, text)),
    )


def _mc_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for row in payload["summary"]:
        q = row["quantity"]
        for stat in ("baseline", "mean", "sd", "p5", "p50", "p95"):
            out[f"mc_{stat}_{q}"] = row[stat]
    return out


# place -----------------------------------------------------------------------
def machine(num_ranks: int | None, inputs: Inputs, settings: PlaceSettings):
    """The machine of a placement (LLAMP App. J): the first nodes of ``inputs.topology`` (a
    spec or a :class:`~llamp.lp.topology.Topology`) or a two-level machine of
    ``settings.intra``/``inter``; ``settings.nodes`` nodes (default: ``num_ranks`` / ranks per
    node, rounded up)."""
    from llamp.lp.placement import topology_machine, two_level_machine
    from llamp.lp.topology import parse_topology

    rpn = settings.ranks_per_node
    nodes = settings.nodes or -(-int(num_ranks or 0) // rpn)
    hosts = list(inputs.hostnames) if inputs.hostnames else None
    if inputs.topology and (settings.intra or settings.inter):
        raise InputError("choose a machine: --topology SPEC or --intra L,G --inter L,G")
    if inputs.topology:
        topo = inputs.topology
        return topology_machine(
            parse_topology(topo) if isinstance(topo, str) else topo,
            nodes,
            rpn,
            inputs.params,
            inputs.latencies,
            hostnames=hosts,
        )
    if settings.intra and settings.inter:
        return two_level_machine(nodes, rpn, settings.intra, settings.inter, hostnames=hosts)
    raise InputError("describe the machine: --topology SPEC, or --intra L,G --inter L,G")


def _place(graph: ExecutionGraph, inputs: Inputs, settings: PlaceSettings, start=None):
    import time

    from llamp.config import format_ns
    from llamp.lp.placement import place

    began = time.perf_counter()
    most = max(settings.max_swaps, 1)

    def progress(iteration: int, runtime_ns: float) -> None:
        done = max(iteration / most, (time.perf_counter() - began) / settings.budget_s)
        inputs.progress(min(done, 0.99), f"swap {iteration} accepted: T = {format_ns(runtime_ns)}")

    inputs.progress(0.0, "evaluating the baselines (block, round-robin, volume)")
    return place(
        graph,
        inputs.params,
        machine(graph.num_ranks, inputs, settings),
        budget_s=settings.budget_s,
        max_iterations=settings.max_swaps,
        candidates=settings.candidates,
        start=settings.start if start is None else start,
        seed=settings.seed,
        progress=progress,
    )


def _place_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"best": payload["best"], "stop_reason": payload["stop_reason"]}
    for row in payload["mappings"]:
        out[f"runtime_ns_{row['mapping']}"] = row["runtime_ns"]
    best = next(r for r in payload["mappings"] if r["mapping"] == payload["best"])
    out["runtime_ns"] = best["runtime_ns"]
    return out


# place-groups ----------------------------------------------------------------
def gpu_machine(inputs: Inputs):
    """The :class:`~llamp.lp.gpu_machine.GpuMachine` of ``inputs`` (its spec text, or the
    default machine when none is given)."""
    from llamp.lp.gpu_machine import GpuMachine

    given = inputs.gpu_machine
    return given if isinstance(given, GpuMachine) else GpuMachine.parse(given or "")


def _place_groups(graph: ExecutionGraph, inputs: Inputs, settings: PlaceGroupsSettings):
    from llamp.lp.group_placement import compare_group_placements

    def progress(done: int, total: int, label: str) -> None:
        inputs.progress(done / total, f"layout {label} evaluated ({done} of {total})")

    inputs.progress(0.0, "finding the parallel dimensions")
    return compare_group_placements(
        graph,
        inputs.params,
        gpu_machine(inputs),
        [layout.split(",") for layout in settings.layouts] or None,
        settings.levels,
        progress=progress,
    )


def layout_key(label: str) -> str:
    """A layout's name in a scalar's key: ``tp,dp,pp`` → ``tp_dp_pp``, ``as traced`` →
    ``as_traced``."""
    return "_".join(part for part in re.split(r"[^A-Za-z0-9]+", label) if part)


def _place_groups_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    """The fastest layout, ``runtime_ns`` and ``inter_node_bytes`` per layout, and the fastest
    layout's λ and tolerances per link class (units in the names, as ``llamp gpu-machine``)."""
    best = payload["best"]
    out: dict[str, Any] = {"best": best}
    for row in payload["mappings"]:
        key = layout_key(row["mapping"])
        out[f"runtime_ns_{key}"] = row["runtime_ns"]
        out[f"inter_node_bytes_{key}"] = row["inter_node_bytes"]
        if row["mapping"] == best:
            out["runtime_ns"] = row["runtime_ns"]
    units = {}
    for var in payload["variables"]:
        if var["mapping"] == best:
            out[f"lambda_{var['variable']}"] = var["lambda"]
            units[var["variable"]] = var["unit"]
    for row in payload["tolerances"]:
        if row["mapping"] == best:
            key = f"tolerance_{pct(row['x'])}_{row['variable']}_{units[row['variable']]}"
            out[key] = row["tolerance"]
    return out


# path ------------------------------------------------------------------------
def _path(graph: ExecutionGraph, inputs: Inputs, settings: NoSettings):
    from llamp.lp.path import critical_path

    return critical_path(graph, inputs.params)


def _path_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    return {"runtime_ns": payload["runtime_ns"], **payload["totals"]} | {
        "path_messages": payload["num_messages"]
    }


# topology --------------------------------------------------------------------
def topologies(inputs: Inputs) -> list[Any]:
    """The topologies of ``inputs``: one spec (or :class:`~llamp.lp.topology.Topology`) or a
    sequence of them."""
    given = inputs.topology
    found = list(given) if isinstance(given, list | tuple) else [given]
    found = [t for t in found if t]
    if not found:
        raise InputError("give at least one topology, e.g. fattree:k=16 dragonfly:g=8,a=4,p=8")
    return found


def _topology(graph: ExecutionGraph, inputs: Inputs, settings: TopologySettings):
    from llamp.lp.topology import compare_topologies

    chosen = topologies(inputs)
    done = []

    def progress(spec: str) -> None:
        done.append(spec)
        inputs.progress(len(done) / len(chosen), spec)

    return compare_topologies(
        graph,
        inputs.params,
        chosen,
        ranks_per_node=settings.ranks_per_node,
        mapping_file=inputs.mapping,
        latencies=inputs.latencies,
        levels=settings.levels,
        progress=progress,
    )


def topology_scalars(payload: dict[str, Any], with_tolerance: bool = True) -> dict[str, Any]:
    """Per topology ``runtime_ns``, ``mean_switches``, ``lambda_VAR`` and (``with_tolerance``)
    ``baseline_ns``, ``tolerance_Xpct_VAR_ns``; with several topologies each key starts with
    the topology's spec."""
    rows = payload["topologies"]
    out: dict[str, Any] = {}
    for one in rows:
        head = "" if len(rows) == 1 else f"{one['topology']}_"
        out[f"{head}runtime_ns"] = one["runtime_ns"]
        out[f"{head}mean_switches"] = one["mean_switches"]
        for var in one["variables"]:
            out[f"{head}lambda_{var['variable']}"] = var["lambda"]
        if with_tolerance:
            out[f"{head}baseline_ns"] = one["runtime_ns"]
            for row in one["tolerances"]:
                key = f"{head}tolerance_{pct(row['x'])}_{row['variable']}_ns"
                out[key] = row["tolerance_ns"]
    return out


# report ----------------------------------------------------------------------
def _report(graph: ExecutionGraph, inputs: Inputs, settings: ReportSettings):
    from llamp.lp.report import build_report

    a, b = settings.range()
    return build_report(
        graph,
        inputs.params,
        lo=a,
        hi=b,
        points=settings.points,
        levels=settings.levels,
        max_evaluations=resolve_budget(settings.max_evaluations, graph, inputs.params),
        engine=inputs.engine,
        report=inputs.report,
    )


def _report_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    crit = _critical_scalars(payload["critical"])
    return (
        _predict_scalars(payload["predict"])
        | _tolerance_scalars(payload["tolerance"])
        | {"critical_count": crit["critical_count"], "critical_complete": crit["critical_complete"]}
    )


# compare ---------------------------------------------------------------------
def _compare(graphs, inputs: Inputs, settings: CompareSettings):
    from llamp.lp.compare import compare_runs

    return compare_runs(
        graphs,
        inputs.params,
        names=inputs.names,
        levels=settings.levels,
        hi=settings.hi,
        progress=lambda text, fraction: inputs.progress(fraction, text),
    )


def _compare_scalars(payload: dict[str, Any]) -> dict[str, Any]:
    """Per run (its name first) ``runtime_ns``, ``lambda_L``, ``rho_L`` and the L
    tolerances."""
    out: dict[str, Any] = {"baseline": payload["baseline"]}
    for run in payload["runs"]:
        head = f"{run['name']}_"
        predict = run["predict"]
        out[f"{head}runtime_ns"] = predict["runtime_ns"]
        out[f"{head}lambda_L"] = predict["lambda_L"]
        out[f"{head}rho_L"] = predict["rho_L"]
        for row in run["tolerance"]["latency"]:
            out[f"{head}tolerance_{pct(row['x'])}_L_ns"] = row["latency_ns"]
    return out


def _result_types() -> dict[str, tuple[type, tuple[type, ...]]]:
    """name → (result type, dataclasses its stored form holds), imported when needed."""
    from llamp.graph import GraphSummary
    from llamp.lp.classify import Classification, Network, Thresholds
    from llamp.lp.compare import Change, Comparison, RunFigures
    from llamp.lp.critical import CriticalLatencies, Segment, Unresolved
    from llamp.lp.group_placement import GroupPlacement
    from llamp.lp.matrix import PairCosts, PairSensitivity
    from llamp.lp.order_check import OrderCheck, OrderPoint, OwnTolerance
    from llamp.lp.path import CriticalPath
    from llamp.lp.placement import Machine, Placement
    from llamp.lp.predict import EngineChoice, Prediction
    from llamp.lp.region import Axis, Region, RegionEdge, RegionLevel
    from llamp.lp.report import ReportData
    from llamp.lp.tolerance import Tolerance, ToleranceLevel
    from llamp.lp.topology import TopologyAnalysis, TopologyComparison
    from llamp.lp.variability import Variability, VariabilitySpec

    return {
        "predict": (Prediction, (LogGPS, Prediction)),
        "sweep": (SweepResult, (SweepResult,)),
        "critical": (CriticalLatencies, (LogGPS, Segment, Unresolved, CriticalLatencies)),
        "tolerance": (Tolerance, (LogGPS, ToleranceLevel, Tolerance)),
        "region": (Region, (LogGPS, Axis, RegionEdge, RegionLevel, Region)),
        "matrix": (PairSensitivity, (PairCosts, PairSensitivity)),
        "classify": (Classification, (LogGPS, Network, Thresholds, Classification)),
        "mc": (Variability, (LogGPS, VariabilitySpec, Variability)),
        "place": (Placement, (Machine, Placement)),
        "place-groups": (GroupPlacement, (GroupPlacement,)),
        "path": (CriticalPath, (LogGPS, CriticalPath)),
        "topology": (TopologyComparison, (TopologyAnalysis, TopologyComparison)),
        "compare": (
            Comparison,
            (LogGPS, Prediction, ToleranceLevel, Tolerance, RunFigures, Change)
            + (Segment, Unresolved, CriticalLatencies, Comparison),
        ),
        "report": (
            ReportData,
            (LogGPS, GraphSummary, EngineChoice, Prediction, Segment, Unresolved)
            + (CriticalLatencies, ToleranceLevel, Tolerance, CriticalPath)
            + (OrderPoint, OrderCheck, OwnTolerance, ReportData),
        ),
    }


_BOTH = frozenset({"loggps", "topology"})
#: Study networks of the analyses that also run on a GPU machine (``llamp gpu-machine``,
#: ``llamp region --gpu-machine``).
_ALL = _BOTH | {"gpu"}
_ENGINE = frozenset({"params", "engine"})

#: Every analysis, by name: the command-line command of the same name, the study's analysis
#: of the same name and the UI's stored kind of the same name.
ANALYSES: dict[str, Analysis] = {
    a.name: a
    for a in (
        Analysis(
            "predict",
            "T and λ (llamp predict; on a topology: llamp topology)",
            NoSettings,
            (),
            _predict,
            _as_dict,
            _predict_scalars,
            _ALL,
            uses=_ENGINE,
        ),
        Analysis(
            "sweep",
            "T, λ_L, ρ_L over a range of L, G or o (llamp sweep)",
            SweepSettings,
            (
                *_RANGE_OPTIONS[:1],
                *_range_options("First value (L/o: 0us; G: ns/B).", "Last value."),
                Option(
                    "reschedule",
                    "--reschedule",
                    _flag,
                    False,
                    help="With --order schedule: take each point's resource order from its own "
                    "schedule pass (T is then the schedule's at every point) instead of the one "
                    "at the given parameters; each point says whether its order changed.",
                    kind="flag",
                    study_type=bool,
                ),
            ),
            _sweep,
            _as_dict,
            _sweep_scalars,
            uses=_ENGINE,
        ),
        Analysis(
            "critical",
            "every critical latency in a range (llamp critical)",
            CriticalSettings,
            (
                *_RANGE_OPTIONS,
                _budget_option("all"),
                Option(
                    "min_jump",
                    "--min-jump",
                    lambda v, what: None if v is None else config.parse_percent(v, what=what),
                    None,
                    help="Show the breakpoints that matter: merge runs of critical values whose "
                    "λ steps are below PERCENT of λ, rank by the jump of λ (e.g. 1%). The JSON "
                    "adds them as significant; the full exact list stays. With a budget, "
                    "intervals that may hold such a jump are refined first (default 1%).",
                    metavar="PERCENT",
                    study_type=str | float | None,
                ),
            ),
            _critical,
            _critical_payload,
            _critical_scalars,
            uses=_ENGINE,
        ),
        Analysis(
            "tolerance",
            "x% L and G tolerance (llamp tolerance / topology)",
            ToleranceSettings,
            (levels_setting(_DEFAULT_X, "Degradations", _DEFAULT_X_STUDY),),
            _tolerance,
            _as_dict,
            _tolerance_scalars,
            _ALL,
            uses=_ENGINE,
        ),
        Analysis(
            "region",
            "exact joint x% tolerance regions over two of L, G, o and the designs inside them "
            "(llamp region)",
            RegionSettings,
            (
                levels_setting(_DEFAULT_X, "Degradations", _DEFAULT_X_STUDY),
                Option(
                    "axes",
                    "--axes",
                    _optional_text,
                    None,
                    help="The two variables: L,G (default), L,o or G,o; with --topology its link "
                    "classes, l_wire, d_switch, l_intra_node or G (default: the last class and "
                    "G); with --intra/--inter L_intra, L_inter, G_intra, G_inter (default: "
                    "L_intra,L_inter).",
                    metavar="U,V",
                    study_default="L,G",
                    study_type=Literal[  # and any two link classes of a GPU machine
                        "L,G",
                        "L,o",
                        "G,o",
                        "L_intra,L_inter",
                        "L_inter,G_inter",
                        "L_intra,G_intra",
                        "G_intra,G_inter",
                        "L_intra,G_inter",
                        "L_inter,G_intra",
                    ],
                ),
                Option(
                    "L_max",
                    "--L-max",
                    _optional_text,
                    None,
                    help="Box: largest L (default: automatic).",
                    study_type=str | None,
                ),
                Option(
                    "G_max",
                    "--G-max",
                    _optional_text,
                    None,
                    help="Box: largest G (ns/B or a bandwidth).",
                    study_type=str | None,
                ),
                Option(
                    "o_max",
                    "--o-max",
                    _optional_text,
                    None,
                    help="Box: largest o.",
                    study_type=str | None,
                ),
                Option(
                    "maxima",
                    "--max",
                    _texts,
                    (),
                    help="Box: largest value of a link variable (e.g. core=2us); repeatable.",
                    kind="multiple",
                    metavar="VAR=VALUE",
                    key="max",
                    study_default=[],
                    study_type=list[str],
                ),
                Option(
                    "gpu_machine",
                    "--gpu-machine",
                    _optional_text,
                    None,
                    help="GPU machine: gpus=8,nvlink=500ns:0.0022ns/B,net=3us:0.02ns/B,nics=8"
                    "[,affinity=…][,layout=tp:dp:pp]; variables L_intra, L_inter, G_intra, G_inter.",
                    metavar="SPEC",
                    study_type=str | None,
                ),
                *_ranks_first(
                    _two_level_options(
                        "Two-level machine: same-node L,G.",
                        "Two-level machine: inter-node L,G.",
                        "Dense mapping: consecutive ranks per node (--topology, --intra/--inter).",
                    )
                ),
                Option(
                    "designs",
                    "--design",
                    _texts,
                    (),
                    help="A network design to mark inside/outside each region (e.g. "
                    "cheap=3.4us,0.009ns/B).",
                    kind="multiple",
                    metavar="NAME=U,V",
                    key="designs",
                    study_default=[],
                    study_type=list[str],
                ),
                Option(
                    "networks",
                    "--networks",
                    _flag,
                    False,
                    help="Also mark the built-in networks (1GbE … NDR) and the saved network "
                    "profiles.",
                    kind="flag",
                    study_type=bool,
                ),
                _budget_option("all", auto=False),
            ),
            _region,
            _region_payload,
            _region_scalars,
            frozenset({"loggps", "gpu"}),
            uses=frozenset({"params", "topology", "mapping", "latencies", "profiles"}),
        ),
        Analysis(
            "matrix",
            "pairwise λ_L^ij, λ_G^ij (llamp matrix)",
            MatrixSettings,
            _two_level_options(
                "Same-node L,G (e.g. 300ns,0.05ns/B).",
                "Inter-node L,G (e.g. 3us,0.018ns/B).",
                "Consecutive ranks per node (two-level model, dense topology mapping).",
            ),
            _matrix,
            _as_dict,
            _matrix_scalars,
            _BOTH,
            uses=frozenset({"params", "topology", "mapping", "latencies"}),
        ),
        Analysis(
            "classify",
            "latency/bandwidth/compute-bound on the network (llamp classify)",
            ClassifySettings,
            (
                _share(
                    "compute_share",
                    "--compute-share",
                    "90",
                    "C1: computation ≥ this percentage of T (e.g. 90 or 90%).",
                ),
                _share(
                    "bound_share",
                    "--bound-share",
                    "25",
                    "C2–C5: wait / communication ≥ this percentage of T.",
                ),
                _share(
                    "sensitive_share",
                    "--sensitive-share",
                    "10",
                    "The '-sensitive' variants: ≥ this percentage of T.",
                ),
                _share(
                    "insensitive",
                    "--insensitive",
                    "5",
                    "Insensitive: changes by less than this percentage over a set.",
                ),
                Option(
                    "decrease",
                    "--decrease",
                    _float,
                    2.0,
                    help="Sensitive: falls by this factor from the ×1/2 to the ×2 configuration.",
                    kind="float",
                    study_type=float,
                ),
                Option(
                    "span",
                    "--span",
                    _int,
                    8,
                    help="The sets reach 1/SPAN … SPAN× the target (power of two).",
                    kind="int",
                    minimum=2,
                    study_type=int,
                ),
            ),
            _classify,
            _as_dict,
            _classify_scalars,
            uses=frozenset({"params", "network"}),
        ),
        Analysis(
            "mc",
            "Monte Carlo of T, λ_L and tolerance under compute noise (llamp mc)",
            MonteCarloSettings,
            (
                Option(
                    "samples",
                    "--samples",
                    _int,
                    1000,
                    kind="int",
                    minimum=1,
                    study_default=100,
                    study_type=int,
                ),
                Option(
                    "spatial_cv",
                    "--spatial-cv",
                    _float,
                    0.0,
                    help="Coefficient of variation of a rank's speed (per sample).",
                    kind="float",
                    minimum=0.0,
                    study_type=float,
                ),
                Option(
                    "temporal_cv",
                    "--temporal-cv",
                    _float,
                    0.0,
                    help="Coefficient of variation of every calc (per sample and calc).",
                    kind="float",
                    minimum=0.0,
                    study_type=float,
                ),
                Option(
                    "distribution",
                    "--distribution",
                    _text,
                    "lognormal",
                    help="Law of the factors (mean 1): normal is truncated at 0.",
                    kind="choice",
                    choices=_distributions,
                    study_type=Literal["lognormal", "normal", "halfnormal"],
                ),
                Option(
                    "slow_ranks",
                    "--slow-ranks",
                    _ranks,
                    None,
                    help="Ranks slowed down by --slowdown, e.g. 3,7.",
                    study_default=[],
                    study_type=list[int],
                ),
                Option(
                    "slowdown",
                    "--slowdown",
                    _float,
                    1.0,
                    help="Factor on the calc costs of the slow ranks.",
                    kind="float",
                    study_type=float,
                ),
                Option("seed", "--seed", _int, 0, kind="int", study_type=int),
                levels_setting("1", "Tolerance levels", [1.0]),
                Option(
                    "runtime_only",
                    "--runtime-only",
                    _flag,
                    False,
                    help="Only T (no λ_L, ρ_L, tolerance): faster.",
                    kind="flag",
                    study_type=bool,
                ),
            ),
            _mc,
            _as_dict,
            _mc_scalars,
            uses=frozenset({"params", "threads"}),
        ),
        Analysis(
            "place",
            "rank placement vs block/round-robin/volume (llamp place)",
            PlaceSettings,
            (
                Option(
                    "intra",
                    "--intra",
                    _level,
                    None,
                    help="Two-level machine: same-node L,G.",
                    metavar="L,G",
                    study_type=str | None,
                ),
                Option(
                    "inter",
                    "--inter",
                    _level,
                    None,
                    help="Two-level machine: inter-node L,G.",
                    metavar="L,G",
                    study_type=str | None,
                ),
                Option(
                    "nodes",
                    "--nodes",
                    _optional_int,
                    None,
                    help="Nodes available (default: ranks / ranks-per-node, rounded up).",
                    kind="int",
                    minimum=1,
                    study_type=int | None,
                ),
                Option(
                    "ranks_per_node",
                    "--ranks-per-node",
                    _int,
                    1,
                    kind="int",
                    minimum=1,
                    study_type=int,
                ),
                Option(
                    "budget_s",
                    "--budget",
                    _seconds,
                    "30s",
                    help="Time budget of the heuristic.",
                    key="budget",
                    study_default="600s",
                    study_type=str,
                ),
                Option(
                    "max_swaps",
                    "--max-swaps",
                    _int,
                    1000,
                    help="Iteration budget: most swaps the heuristic applies.",
                    kind="int",
                    minimum=0,
                    study_type=int,
                ),
                Option(
                    "candidates",
                    "--candidates",
                    _int,
                    16,
                    help="Best-ranked swaps evaluated exactly per iteration.",
                    kind="int",
                    minimum=1,
                    study_type=int,
                ),
                Option(
                    "start",
                    "--start",
                    _text,
                    "best",
                    help="Initial mapping of the heuristic.",
                    kind="choice",
                    choices=("best", "block", "round-robin", "volume", "random"),
                    study_type=Literal["best", "block", "round-robin", "volume", "random"],
                ),
                Option(
                    "seed",
                    "--seed",
                    _int,
                    0,
                    help="Seed of the random start.",
                    kind="int",
                    study_type=int,
                ),
            ),
            _place,
            _as_dict,
            _place_scalars,
            _BOTH,
            uses=frozenset({"params", "topology", "latencies", "hostnames"}),
        ),
        Analysis(
            "place-groups",
            "T, λ and x% tolerance per link class of each placement of a training run's "
            "parallel groups on a GPU machine (llamp place-groups)",
            PlaceGroupsSettings,
            (
                Option(
                    "layouts",
                    "--layout",
                    _texts,
                    (),
                    help="A placement: the parallel dimensions innermost first (e.g. tp,dp,pp: "
                    "tensor-parallel groups fill a node first); repeat to compare several. "
                    "Default: every order.",
                    kind="multiple",
                    metavar="D0,D1,…",
                    study_default=[],
                    study_type=list[str],
                ),
                levels_setting(_DEFAULT_X, "Tolerance levels", _DEFAULT_X_STUDY),
            ),
            _place_groups,
            _as_dict,
            _place_groups_scalars,
            frozenset({"gpu"}),
            uses=frozenset({"params", "gpu_machine"}),
        ),
        Analysis(
            "path",
            "the critical path and where its time goes, per rank (llamp path)",
            NoSettings,
            (),
            _path,
            _as_dict,
            _path_scalars,
        ),
        Analysis(
            "topology",
            "T, λ and x% tolerance per link class of each topology (llamp topology)",
            TopologySettings,
            (
                levels_setting(_DEFAULT_X, "Tolerance levels", _DEFAULT_X_STUDY),
                Option(
                    "ranks_per_node",
                    "--ranks-per-node",
                    _int,
                    1,
                    help="Dense mapping: consecutive ranks fill a node.",
                    kind="int",
                    minimum=1,
                    study_type=int,
                ),
            ),
            _topology,
            _as_dict,
            topology_scalars,
            frozenset({"topology"}),
            uses=frozenset({"params", "topology", "mapping", "latencies"}),
        ),
        Analysis(
            "report",
            "prediction, critical latencies, sweep, tolerance and critical path of L at once "
            "(llamp report)",
            ReportSettings,
            (
                *_range_options("Sweep/critical interval start.", "Sweep/critical interval end."),
                levels_setting(_DEFAULT_X, "Tolerance levels", _DEFAULT_X_STUDY),
                _budget_option("auto"),
            ),
            _report,
            _as_dict,
            _report_scalars,
            uses=_ENGINE,
        ),
        Analysis(
            "compare",
            "two or more runs side by side: T(L), λ_L, tolerances, critical-path composition "
            "and what changed against the first (llamp compare)",
            CompareSettings,
            (
                levels_setting(_DEFAULT_X, "Tolerance levels"),
                Option(
                    "hi",
                    "--to",
                    _largest_latency,
                    None,
                    help="Largest L of every run's exact T(L) (default: each run to 1.25 × "
                    "its largest L tolerance).",
                    key="to",
                    study_type=str | None,
                ),
            ),
            _compare,
            _as_dict,
            _compare_scalars,
            frozenset(),
            input="runs",
        ),
    )
}


__all__ = [
    "ANALYSES",
    "Analysis",
    "CompareSettings",
    "Inputs",
    "Option",
    "Report",
    "critical_search",
    "gpu_machine",
    "layout_key",
    "levels",
    "levels_setting",
    "machine",
    "percent",
    "pct",
    "pair_costs",
    "region_variables",
    "resolve_budget",
    "target_network",
    "topologies",
    "topology_scalars",
]
