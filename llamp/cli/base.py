"""Shared pieces of the CLI: the root group, parameter options, choices built from the
registries, the message channel (``llamp: warning: …``), JSON output, graph resolution.

Value parsers and formatters live in :mod:`llamp.config` (one per value kind, shared with the
UI and study specs); they are re-exported here for the commands."""

from __future__ import annotations

import functools
import importlib
import json
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import numpy as np

from llamp import config
from llamp.config import format_table as table
from llamp.config import parse_collectives, parse_duration_ns
from llamp.errors import InputError
from llamp.graph import ExecutionGraph
from llamp.json_values import json_value
from llamp.params import LogGPS


class _Root(click.Group):
    """The root group. Its subcommands are listed in :data:`COMMANDS` and each one's module
    is imported when that command runs (``llamp --help`` lists them from the table and
    imports none). Once the subcommand is known, a command that calls compiled kernels starts
    numba's one-time set-up in the background (:mod:`llamp.lp.jit`), so it overlaps option
    parsing and reading the graph file (not for ``-h``/``--help``). Not for a command of
    :data:`AHEAD_OF_TIME_COMMANDS` when the install's compiled kernels serve this checkout
    (:mod:`llamp.kernel`): it then imports no numba at all."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            importlib.import_module(f"llamp.cli.{COMMANDS[name][0]}")
        return self.commands.get(name)

    def load_all(self) -> dict[str, click.Command]:
        """Every subcommand, its module imported (for tools that walk the whole CLI)."""
        for name in COMMANDS:
            self.get_command(click.Context(self), name)
        return dict(self.commands)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their one-line helps: from :data:`COMMANDS` for a command whose
        module is not imported, else from the command (the same text: a test compares)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is None:
                text = click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit)
            elif command.hidden:
                continue
            else:
                text = command.get_short_help_str(limit)
            rows.append((name, text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        given = args[0] if args else ""
        if given not in COMMANDS and given not in self.commands and not given.startswith("-"):
            self.load_all()  # an unknown name: click's "Did you mean" picks among all commands
        name, command, rest = super().resolve_command(ctx, args)
        if name in COMPILED_COMMANDS and not HELP_OPTIONS.intersection(rest):
            from llamp.kernel import compiled_kernels

            if name not in AHEAD_OF_TIME_COMMANDS or not compiled_kernels():
                from llamp.lp import jit

                jit.start()
        return name, command, rest


@click.group(
    cls=_Root,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--store",
    "store_uri",
    default=None,
    envvar="LLAMP_STORE",
    help="Graph store: a directory for the embedded LadybugDB store (default $LLAMP_HOME/store) "
    "or bolt://user:pass@host:7687 for Neo4j. Env: LLAMP_STORE.",
)
@click.version_option(package_name="llamp", prog_name="llamp")
@click.pass_context
def cli(ctx: click.Context, store_uri: str | None) -> None:
    """llamp: how much network latency and bandwidth loss an MPI application tolerates."""
    ctx.ensure_object(dict)
    ctx.obj["store_uri"] = store_uri
    ctx.with_resource(relay_warnings())


#: Every subcommand: its module in :mod:`llamp.cli` (imported when the command runs) and its
#: one-line help as ``llamp --help`` shows it (the first sentence of the command's docstring;
#: ``tests/test_cli_consistency.py`` checks both against the commands).
COMMANDS: dict[str, tuple[str, str]] = {
    "calibrate": ("injector", "Fit LogGP L, o, G (and S) with a ping-pong run by COMMAND (e.g."),
    "classify": (
        "application",
        "Computation-, load-imbalance-, bandwidth-, latency- or communication-bound on a network.",
    ),
    "collectives": (
        "application",
        "T(L), λ_L, ρ_L and x% tolerance of TRACE under collective-algorithm VARIANTs.",
    ),
    "compare": (
        "compare_export",
        "Two or more runs side by side: each run's exact T(L) and λ_L (every critical latency over its own L range, or up to --to), tolerances, critical-path composition and what changed against the first RUN (a stored run, a graph file or a trace directory).",
    ),
    "critical": (
        "analyze",
        "Every critical latency in [FROM, TO] and λ_L on each linear piece (exact).",
    ),
    "cypher": ("store_commands", "Run the Cypher QUERY on the store (read-only unless --write)."),
    "export": ("store_commands", "Write the stored RUN to a graph file."),
    "export-report": (
        "compare_export",
        "The report of llamp report as one self-contained HTML file (inline CSS and SVG plots).",
    ),
    "export-timeline": (
        "compare_export",
        "The schedule at the given parameters as a Perfetto/Chrome trace: one track per rank, calc/send/recv slices, the critical path's slices and messages marked.",
    ),
    "gpu-machine": (
        "network",
        "T, λ and x% tolerance per link class (NVLink, network) of a GPU machine.",
    ),
    "info": (
        "ingest",
        "Summary of GRAPH (.npz, .goal, trace directory or stored run): ranks, ops, messages.",
    ),
    "ingest": (
        "ingest",
        "Read the trace or graph at PATH into an execution graph; write it to OUT or the store.",
    ),
    "inject": (
        "injector",
        "Run COMMAND (an MPI launch: -- mpirun -np 4 ./app) with ΔL added to every MPI message.",
    ),
    "matrix": (
        "network",
        "Pairwise sensitivities λ_L^{ij}, λ_G^{ij} under per-pair L_ij, G_ij (LLAMP App.",
    ),
    "mc": (
        "application",
        "Monte Carlo of T, λ_L, ρ_L and x% latency tolerance under compute variability.",
    ),
    "neo4j-import-files": (
        "store_commands",
        "Write GRAPHs (trace, .npz, .goal or stored run) as CSV files for Neo4j's offline importer.",
    ),
    "overhead": (
        "injector",
        "Measure the injector's and the tracer's per-call costs on COMMAND (-- mpirun -n 2 ./app).",
    ),
    "path": ("analyze", "The critical path: its messages and where its time goes, per rank."),
    "place": ("network", "Rank placement by sensitivity-driven swaps (LLAMP App."),
    "place-groups": (
        "network",
        "T, λ and x% tolerance per link class when the run's parallel groups are placed onto the nodes of a GPU machine in different orders.",
    ),
    "predict": ("analyze", "Runtime T and sensitivities λ_L, λ_G, λ_o, ρ_L at one configuration."),
    "query": (
        "store_commands",
        "Run the catalogue query NAME on --run RUN (llamp query --list shows the catalogue).",
    ),
    "region": (
        "analyze",
        "Exact joint tolerance regions: every (U, V) with T ≤ (1+x)·T0, as polygons.",
    ),
    "report": (
        "analyze",
        "Everything at once: summary, prediction, sweep, critical latencies, tolerance, path.",
    ),
    "runs": (
        "store_commands",
        "List the stored runs and the store's size on disk (or: runs show NAME, runs delete NAME, runs check [NAME]).",
    ),
    "study": (
        "study",
        "Run the study SPEC.yaml: every cell (run × collectives × network × placement × option × analysis) not computed yet; one Analysis per cell in the store and one row per cell in the table.",
    ),
    "sweep": ("analyze", "T, λ and ρ_L over evenly spaced values of L (or G, o)."),
    "synth": (
        "synth",
        "Write a noisy iterative stencil (halo exchange, allreduce, alltoall) to OUTPUT (.goal streamed, or .npz).",
    ),
    "synth-training": (
        "synth",
        "Write one 3D-parallel transformer training step (dp × tp × pp GPUs) as a Chakra trace in DIRECTORY, one rank file at a time.",
    ),
    "tolerance": (
        "analyze",
        "x% latency and bandwidth tolerance relative to T at the configured L, G.",
    ),
    "topology": (
        "network",
        "T, λ and x% tolerance per link class on each topology SPEC (LLAMP §IV-2, App.",
    ),
    "trace": (
        "trace",
        "Trace COMMAND with llamp's PMPI tracer: llamp trace -o DIR -- mpirun -np 4 ./app",
    ),
    "ui": ("ui", "Serve the web UI (runs, latency tolerance, critical path, Cypher console)."),
    "validate": (
        "injector",
        "Predict T(L0 + ΔL) from one trace and compare with runs under the injector (RRMSE).",
    ),
}

#: Subcommands whose kernels (on a graph file or a GOAL file, either order) all have compiled
#: exports in ``llamp._kernels``: with the extension they import no numba, so its set-up is
#: not started (a trace format whose reader runs under the JIT loads numba at its first call).
AHEAD_OF_TIME_COMMANDS = frozenset({"ingest", "predict", "sweep"})

#: Subcommands that call compiled kernels (numba): numba's one-time set-up starts in the
#: background as soon as the command is known (:mod:`llamp.lp.jit`).
COMPILED_COMMANDS = frozenset(
    {
        "classify",
        "collectives",
        "compare",
        "critical",
        "export",
        "export-report",
        "export-timeline",
        "ingest",
        "matrix",
        "mc",
        "path",
        "place",
        "predict",
        "region",
        "report",
        "study",
        "sweep",
        "synth",
        "tolerance",
        "topology",
    }
)
HELP_OPTIONS = frozenset({"-h", "--help"})


__all__ = ["RegistryChoice", "message", "parse_collectives", "relay_warnings", "table"]


class RegistryChoice(click.Choice):
    """A ``click.Choice`` whose values come from a registry (``FORMATS``, ``ENGINES``, the
    built-in networks), read when first needed: adding an entry to the registry adds it to
    the option, its help and its error message, and ``llamp --help`` imports nothing heavy."""

    def __init__(self, load: Callable[[], Iterable[str]], case_sensitive: bool = True) -> None:
        self._load = load
        self._loaded: tuple[str, ...] | None = None
        super().__init__((), case_sensitive=case_sensitive)

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        if self._loaded is None:
            self._loaded = tuple(self._load())
        return self._loaded

    @choices.setter
    def choices(self, value: Iterable[str]) -> None:  # click's __init__ assigns ()
        pass

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        """The names as the registry spells them (``QDR``, ``100GbE``), not case-folded."""
        return "[" + "|".join(self.choices) + "]"

    def get_invalid_choice_message(self, value: Any, ctx: click.Context | None) -> str:
        return f"{value!r} is not one of {', '.join(map(repr, self.choices))}."


def message(kind: str, text: object) -> None:
    """The CLI's one channel for diagnostics: one line ``llamp: KIND: text`` on stderr
    (``warning``, ``error``, ``note``), control characters escaped, passwords redacted
    (:func:`llamp.messages.emit`)."""
    from llamp.messages import emit

    emit(kind, text)


def _show_warning(msg, category, filename, lineno, file=None, line=None) -> None:
    message("warning", msg)


@contextmanager
def relay_warnings() -> Iterator[None]:
    """Python warnings raised while a command runs (``IngestWarning``, a solver's
    ``RuntimeWarning``) become ``llamp: warning:`` lines instead of Python's two-line format;
    each distinct message once. Deprecation and import notices of the libraries llamp uses are
    for developers, not users, and stay hidden as Python hides them by default."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning):
            warnings.simplefilter("ignore", category)
        warnings.simplefilter("ignore", ResourceWarning)
        previous = warnings.showwarning
        warnings.showwarning = _show_warning
        try:
            yield
        finally:
            warnings.showwarning = previous


def model_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--g --progress --nic --order --rendezvous``: LogGP's gap per message and the model
    choices."""
    func = click.option(
        "--rendezvous",
        "rendezvous",
        type=click.Choice(config.RENDEZVOUS_MODELS),
        default=None,
        help="Rendezvous protocol (messages larger than S): handshake (RTS, CTS, data: 3 L; the "
        "RTS answered on arrival), polled (the same, the RTS answered only when the receiver "
        "is inside MPI, not computing) or loggopsim (data at once, the "
        "sender released when the receiver matches it: L). "
        f"Default {config.DEFAULT_RENDEZVOUS}.",
    )(func)
    func = click.option(
        "--order",
        "order",
        type=click.Choice(config.ORDER_MODELS),
        default=None,
        help="Resource order: program (static rules over each rank's program order) or "
        "schedule (the order each CPU and NIC serves its operations in one event-driven pass "
        f"at the given parameters, as LogGOPSim). Default {config.DEFAULT_ORDER}.",
    )(func)
    func = click.option(
        "--nic",
        "nic",
        type=click.Choice(config.NIC_MODELS),
        default=None,
        help="NIC model: overlap (concurrent transfers overlap) or serial (G is LogGP's gap: "
        f"a NIC sends and receives one message after another). Default {config.DEFAULT_NIC}.",
    )(func)
    func = click.option(
        "--progress",
        "progress",
        type=click.Choice(config.PROGRESS_MODELS),
        default=None,
        help="Receive progress: async (a receive's o overlaps computation) or wait (charged "
        f"inside the MPI call that completes it). Default {config.DEFAULT_PROGRESS}.",
    )(func)
    return click.option(
        "--g",
        "g",
        default=None,
        help="Gap per message g (e.g. 50ns; used by --nic serial). Default 0.",
    )(func)


def params_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--network --L --o --G --S --g --progress --nic --order --rendezvous`` with units; the
    command receives
    ``params: LogGPS``.

    ``--network NAME`` starts from a profile saved by ``llamp calibrate --save NAME``; the
    other options override it; without either, the defaults of :class:`LogGPS`.
    """

    @click.option(
        "--network",
        "network",
        default=None,
        metavar="NAME",
        help="Start from a calibrated network profile (llamp calibrate --save NAME).",
    )
    @click.option("--L", "L", default=None, help="Latency L (e.g. 3us, 1500ns). Default 3us.")
    @click.option("--o", "o", default=None, help="CPU overhead o per message (e.g. 1.5us).")
    @click.option("--G", "G", default=None, help="Gap per byte G (e.g. 0.018ns/B or 56Gb/s).")
    @click.option("--S", "S", default=None, help="Rendezvous threshold S in bytes (e.g. 256KiB).")
    @model_options
    @functools.wraps(func)
    def wrapper(
        *args: Any,
        network: str | None,
        L: str | None,
        o: str | None,
        G: str | None,
        S: str | None,
        g: str | None,
        progress: str | None,
        nic: str | None,
        order: str | None,
        rendezvous: str | None,
        **kw: Any,
    ):
        models = {
            "g": g,
            "progress": progress,
            "nic": nic,
            "order": order,
            "rendezvous": rendezvous,
        }
        if network:
            from llamp.injector.profiles import resolve_params

            kw["params"] = resolve_params(network, L=L, o=o, G=G, S=S, **models)
        else:
            kw["params"] = LogGPS.parse(L=L, o=o, G=G, S=S, **models)
        return func(*args, **kw)

    return wrapper


def latency_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--wire --switch --intra-node --link CLASS=VALUE``; the command gets ``latencies``
    (defaults: :mod:`llamp.lp.topology`, imported only when a command runs)."""

    @click.option(
        "--wire",
        default=None,
        help="Latency of every wire, l_wire (default 274ns, the paper's §IV-2 value).",
    )
    @click.option(
        "--switch",
        "switch",
        default=None,
        help="Delay of every switch traversed, d_switch (default 108ns).",
    )
    @click.option(
        "--intra-node",
        "intra_node",
        default=None,
        help="Latency of a message between ranks on one node (default 100ns).",
    )
    @click.option(
        "--link",
        "links",
        multiple=True,
        metavar="CLASS=VALUE",
        help="Latency of one link class (e.g. core=500ns, inter=1us); repeatable.",
    )
    @functools.wraps(func)
    def wrapper(*args, wire, switch, intra_node, links, **kw):
        from llamp.lp.topology import LinkLatencies

        per_class = config.parse_class_latencies(links, what="--link")
        given = {
            key: parse_duration_ns(value)
            for key, value in (
                ("wire_ns", wire),
                ("switch_ns", switch),
                ("intra_node_ns", intra_node),
            )
            if value is not None
        }
        kw["latencies"] = LinkLatencies(**given, per_class_ns=per_class)
        return func(*args, **kw)

    return wrapper


def levels_option(default: str = "1,2,5", what: str = "Tolerance levels"):
    """``--x``: tolerance levels as percentages, as a registered analysis takes them
    (:func:`llamp.lp.registry.levels_setting`); the command receives the text as ``levels``."""
    from llamp.lp.registry import levels_setting

    return _click_option(levels_setting(default, what))


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(
        func
    )


def _engines() -> tuple[str, ...]:
    from llamp.lp import ENGINES

    return ENGINES


def engine_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--engine",
        type=RegistryChoice(_engines),
        default="auto",
        show_default=True,
        help="graph: exact critical-path engine; glop/highs: the LLAMP linear program.",
    )(func)


def collectives_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--collectives",
        default=None,
        metavar="OP=ALG,...",
        help=(
            "Collective algorithms when reading a trace, e.g. allreduce=ring,bcast=binomial; "
            "or an analytic model instead of expansion: OP=dimemas, OP=thakur_gropp[:ALG]."
        ),
    )(func)


def host_speed_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--host-speed`` (SimGrid notation, e.g. 1Gf); the command receives the text or None."""
    from llamp.config import DEFAULT_HOST_SPEED_FLOPS, format_flop_rate

    return click.option(
        "--host-speed",
        "host_speed",
        default=None,
        metavar="SPEED",
        help=(
            "SimGrid TI traces: host speed that turns their compute flops into time, in "
            "SimGrid's notation (f, kf, Mf, Gf, Tf; e.g. 1Gf, 500Mf, or 1e9 flop/s). Default "
            f"{format_flop_rate(DEFAULT_HOST_SPEED_FLOPS)}, the hosts of SimGrid's example "
            "clusters; give the smpi/host-speed the trace was recorded with to get the traced "
            "run's compute times back."
        ),
    )(func)


def json_text(payload: Any) -> str:
    """``payload`` as stable JSON text (sorted keys, infinities as the string "inf")."""
    return json.dumps(json_value(payload), indent=2, sort_keys=True)


def emit_json(payload: Any) -> None:
    """Print ``payload`` as stable JSON (sorted keys, infinities as the string "inf")."""
    click.echo(json_text(payload))


def check_output(path: Path, suffixes: tuple[str, ...] = (".npz", ".goal")) -> None:
    """Refuse an output file that cannot be written before any work is done."""
    if path.suffix.lower() not in suffixes:
        raise InputError(f"-o {path}: the output must end in {' or '.join(suffixes)}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"-o {path}: the directory {parent} does not exist")
    if path.is_dir():
        raise InputError(f"-o {path}: is a directory")


def load_graph_spec(
    spec: str,
    *,
    collectives: dict[str, str] | None = None,
    store_uri: str | None = None,
    fmt: str = "auto",
    host_speed: str | None = None,
) -> ExecutionGraph:
    """Resolve GRAPH: an ``.npz`` file, a ``.goal`` file, a trace directory, or a stored run name."""
    from llamp.ingest import read

    path = Path(spec)
    if path.exists():
        return read(path, fmt=fmt, collectives=collectives or {}, host_speed=host_speed)
    if host_speed is not None:
        refuse_host_speed_for_run(spec)
    try:
        from llamp.graphdb import open_store
    except ImportError:  # pragma: no cover - graph store not installed
        open_store = None
    if open_store is not None:
        with open_store(store_uri, read_only=True) as store:
            if store.has_run(spec):
                return store.load_run(spec)
    raise InputError(f"{spec}: no such file, directory or stored run")


def refuse_host_speed_for_run(spec: str) -> None:
    """--host-speed applies when a trace is read; a stored run keeps the speed it was read with."""
    raise InputError(
        f"--host-speed converts a SimGrid trace's flops when it is read; {spec!r} is not a "
        "trace path (a stored run keeps the host speed it was ingested with: re-ingest the "
        "trace with --host-speed)"
    )


# ---------------------------------------------------------------------- GRAPH and selections
def select(graph: ExecutionGraph, ranks: str | None, window: str | None) -> ExecutionGraph:
    """The subgraph of ``ranks`` and trace-time ``window`` (``None`` keeps everything)."""

    if not ranks and not window:
        return graph
    keep = np.ones(graph.num_vertices, dtype=bool)
    parts = []
    if ranks:
        chosen = config.parse_ranks(ranks, what="--ranks", num_ranks=graph.num_ranks)
        keep &= np.isin(graph.rank, np.array(chosen, dtype=np.int32))
        parts.append(f"ranks {ranks}")
    if window:
        if graph.t_trace_ns is None:
            raise InputError("--window needs trace timestamps, and this graph has none (GOAL?)")
        lo, hi = config.parse_window_ns(window)
        keep &= (graph.t_trace_ns >= lo) & (graph.t_trace_ns < hi)
        parts.append(f"window {window}")
    if not keep.any():
        raise InputError(f"the selection ({', '.join(parts)}) contains no vertex")
    return graph.subgraph(keep, name=f"{graph.name}[{'; '.join(parts)}]")


def load_selection(
    ctx: click.Context,
    spec: str,
    collectives: str | None,
    ranks: str | None,
    window: str | None,
    iterations: str | None,
    host_speed: str | None = None,
) -> ExecutionGraph:
    """GRAPH with its selection. A file or directory is read and cut in memory; a stored run
    is cut by the store's Cypher catalogue (the same subgraph semantics, tested equal)."""
    if Path(spec).exists():
        if iterations:
            raise InputError(
                "--iterations selects by collective calls of a stored run; ingest it with --name"
            )
        graph = load_graph_spec(
            spec, collectives=parse_collectives(collectives), host_speed=host_speed
        )
        return select(graph, ranks, window)
    if host_speed is not None:
        refuse_host_speed_for_run(spec)
    if collectives:
        raise InputError(
            f"--collectives re-expands a trace; {spec!r} is a stored run (re-ingest it)"
        )
    from llamp.graphdb import open_store

    with open_store(ctx.obj.get("store_uri"), read_only=True) as store:
        if not store.has_run(spec):
            raise InputError(f"{spec}: no such file, directory or stored run")
        if not (ranks or window or iterations):
            return store.load_run(spec)
        info = store.run_info(spec)
        kwargs: dict[str, Any] = {}
        if ranks:
            kwargs["ranks"] = list(config.parse_ranks(ranks, what="--ranks", num_ranks=info.ranks))
        if window:
            kwargs["trace_window_ns"] = config.parse_window_ns(window)
        if iterations:
            a, _, b = iterations.partition(":")
            try:
                kwargs["collectives"] = (int(a), int(b) if b.strip() else None)
            except ValueError as err:
                raise InputError(
                    f"--iterations: {iterations!r} is not K:M (collective calls)"
                ) from err
        return store.select(spec, **kwargs)


def graph_argument(func: Callable[..., Any]) -> Callable[..., Any]:
    """GRAPH plus --collectives, --host-speed, --ranks, --window, --iterations; the command
    receives ``graph`` and ``graph_spec``."""

    @functools.wraps(func)
    def wrapper(
        graph_spec: str, collectives: str | None, host_speed, ranks, window, iterations, **kw
    ):
        graph = load_selection(
            click.get_current_context(),
            graph_spec,
            collectives,
            ranks,
            window,
            iterations,
            host_speed,
        )
        return func(graph=graph, graph_spec=graph_spec, **kw)

    wrapper = click.option(
        "--iterations",
        default=None,
        help="Stored runs: from the K-th to before the M-th collective call (K:M, M optional).",
    )(wrapper)
    wrapper = click.option(
        "--window", default=None, help="Trace-time window FROM:TO, e.g. 10ms:20ms."
    )(wrapper)
    wrapper = click.option("--ranks", default=None, help="Analyse only these ranks, e.g. 0-7,12.")(
        wrapper
    )
    wrapper = host_speed_option(wrapper)
    wrapper = collectives_option(wrapper)
    return click.argument("graph_spec", metavar="GRAPH")(wrapper)


# ---------------------------------------------------------------------- --save
def save_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--save``: the command writes its result back to the graph store (:func:`write_back`)."""
    return click.option(
        "--save",
        is_flag=True,
        help="Write the result back to the graph store (GRAPH must be a stored run).",
    )(func)


def write_back(
    graph_spec: str,
    kind: str,
    params: LogGPS,
    scalars: dict[str, Any],
    per_vertex: Any = None,
    graph: ExecutionGraph | None = None,
) -> str:
    """Store a result as an ``Analysis`` node of the stored run ``graph_spec``; its id."""
    from llamp.graphdb import open_store

    if per_vertex is not None and graph is not None and "parent" in graph.meta:
        raise InputError(
            "--save stores per-op results of the whole run; run it without --ranks/--window/--iterations"
        )

    ctx = click.get_current_context()
    with open_store(ctx.obj.get("store_uri")) as store:
        if not store.has_run(graph_spec):
            raise InputError(f"--save: {graph_spec!r} is not a stored run (ingest it with --name)")
        return store.write_analysis(
            graph_spec, kind, params.as_dict(), scalars, per_vertex=per_vertex
        )


# ---------------------------------------------------------------------- analysis settings
def _click_option(opt: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The click option of one :class:`llamp.lp.registry.Option`."""
    kw: dict[str, Any] = {"help": opt.help}
    if opt.metavar:
        kw["metavar"] = opt.metavar
    if opt.kind == "flag":
        kw["is_flag"] = True
    elif opt.kind == "multiple":
        kw["multiple"] = True
    else:
        kw["default"] = opt.default
        kw["show_default"] = opt.default is not None
        if opt.kind == "int":
            bounded = opt.minimum is not None or opt.maximum is not None
            kw["type"] = click.IntRange(opt.minimum, opt.maximum) if bounded else int
        elif opt.kind == "float":
            kw["type"] = click.FloatRange(opt.minimum) if opt.minimum is not None else float
        elif opt.kind == "choice":
            kw["type"] = (
                RegistryChoice(opt.choices)
                if callable(opt.choices)
                else click.Choice(list(opt.choices))
            )
    return click.option(opt.flag, opt.field, **kw)


def settings_options(name: str, *only: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The command-line options of analysis ``name``'s settings
    (:data:`llamp.lp.registry.ANALYSES`), all of them or those named in ``only``, in the
    registry's order; :func:`analysis_settings` turns them into the settings."""
    from llamp.lp.registry import ANALYSES

    options = [o for o in ANALYSES[name].options if not only or o.field in only]

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for opt in reversed(options):
            func = _click_option(opt)(func)
        return func

    return decorate


def analysis_settings(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The command receives ``settings``: analysis ``name``'s settings read from its options
    (:func:`settings_options`) by the registry's parsers."""
    from llamp.lp.registry import ANALYSES

    entry = ANALYSES[name]

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kw: Any) -> Any:
            given = {o.field: kw.pop(o.field) for o in entry.options}
            return func(*args, settings=entry.parse(given), **kw)

        return wrapper

    return decorate


def progress_bar(unit: str = "%", show: bool = True):
    """A progress bar on stderr (hidden when stderr is not a terminal) and the
    :data:`llamp.lp.registry.Report` that drives it: the fraction done (out of 100, with
    ``unit="%"``) and what is happening."""
    from tqdm import tqdm

    bar = tqdm(
        total=100 if unit == "%" else None,
        unit=unit if unit == "%" else f" {unit}",
        leave=False,
        disable=None if show else True,
    )

    def report(fraction: float | None, text: str) -> None:
        if fraction is not None and bar.total:
            bar.update(round(100 * fraction) - bar.n)
        bar.set_postfix_str(text)

    return bar, report
