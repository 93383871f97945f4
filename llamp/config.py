"""Configuration in one place: defaults, environment variables and unit parsing.

Every duration inside llamp is a float in nanoseconds; every size an integer in bytes.
Users may write units anywhere the CLI or UI takes a duration (``3us``, ``1.5ms``,
``250ns``, ``0.2s``) or a per-byte gap (``0.018ns/B``, ``18ps/B``, ``100Gb/s`` as a
bandwidth that is converted to its gap) or a host speed (``1Gf``, SimGrid's notation).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from llamp.errors import ParameterError

#: Default LogGPS configuration: L, G and S as measured with Netgauge on the LLAMP paper's
#: test-bed (56 Gb/s InfiniBand, §III: L = 3.0 µs, G = 0.018 ns/B, S = 256 KB); o is
#: LogGOPSim's default (1.5 µs). Override with --L/--o/--G/--S or a calibrated network.
DEFAULT_L_NS = 3000.0
DEFAULT_O_NS = 1500.0
DEFAULT_G_NS_PER_BYTE = 0.018
DEFAULT_S_BYTES = 256 * 1024
#: LogGP's gap per message g (the NIC's minimum time between two injections): 0, as in the
#: LLAMP paper; only the NIC model ``serial`` charges it.
DEFAULT_GAP_NS = 0.0

#: Receive-progress models (docs/model.md): ``async`` charges a non-blocking receive's ``o`` at
#: ``max(post, arrival)``; ``wait`` inside the MPI call that completes it.
PROGRESS_MODELS = ("async", "wait")
#: NIC models: ``overlap`` lets concurrent transfers overlap; ``serial`` makes G a gap (LogGP):
#: each NIC injects and accepts one message after another.
NIC_MODELS = ("overlap", "serial")
DEFAULT_PROGRESS = "async"
DEFAULT_NIC = "overlap"
#: Resource orders (docs/model.md §Serialisation): ``program`` chains each resource's
#: operations by static rules over the program order; ``schedule`` takes the order in which
#: each CPU stream and NIC serves them from one event-driven pass at the baseline parameters
#: (LogGOPSim's schedule).
ORDER_MODELS = ("program", "schedule")
DEFAULT_ORDER = "schedule"
#: Rendezvous protocols (size > S): ``handshake`` is the paper's RTS, CTS, data (3 L per
#: message), the request answered when it arrives; ``polled`` the same handshake answered only
#: when the receiver is inside MPI (its CPU stream not computing: an MPI library without a
#: progress thread; the default since validation run 9, docs/model.md §Default model);
#: ``loggopsim`` is LogGOPSim's: the data travels at once and the sender is released when the
#: receiver has matched it (L per message).
RENDEZVOUS_MODELS = ("handshake", "polled", "loggopsim")
DEFAULT_RENDEZVOUS = "polled"

#: Wire latency and switch delay of the paper's case study (§IV-2, after Zambre et al.).
DEFAULT_WIRE_NS = 274.0
DEFAULT_SWITCH_NS = 108.0
#: Latency of a message between two ranks on the same node (shared memory: a cache-line
#: transfer between cores, no wire and no switch). The CPU cost is in ``o``, not here.
DEFAULT_INTRA_NODE_NS = 100.0

#: Default tolerance levels (fractions of the baseline runtime).
DEFAULT_TOLERANCES = (0.01, 0.02, 0.05)


def llamp_home() -> Path:
    """Directory holding the embedded store and caches (``$LLAMP_HOME``, default ``./.llamp``)."""
    return Path(os.environ.get("LLAMP_HOME", ".llamp"))


def kernels_mode() -> str:
    """How kernels run (``$LLAMP_KERNELS``): ``auto`` (default: the compiled extension when it
    was built from these sources, else numba's JIT) or ``jit`` (numba's JIT always)."""
    value = os.environ.get("LLAMP_KERNELS", "").strip().lower() or "auto"
    if value not in ("auto", "jit"):
        raise ParameterError(f"$LLAMP_KERNELS={value[:40]!r}: expected 'auto' or 'jit'")
    return value


def seal_key_path() -> Path:
    """The file holding this installation's key for sealing graph files (:mod:`llamp.seal`):
    ``$LLAMP_SEAL_KEY``, default ``~/.config/llamp/seal.key`` (per user, not per
    ``LLAMP_HOME``: a graph file written in one directory is trusted in another)."""
    value = os.environ.get("LLAMP_SEAL_KEY")
    if value:
        return Path(value)
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "llamp" / "seal.key"


def store_uri() -> str | None:
    """The store URI from ``$LLAMP_STORE`` (e.g. ``bolt://neo4j:pw@host:7687``), if set."""
    value = os.environ.get("LLAMP_STORE")
    return value or None


def store_buffer_pool_bytes() -> int:
    """The embedded store's buffer pool (LadybugDB's page cache) in bytes from
    ``$LLAMP_STORE_BUFFER_POOL`` (a size: ``512MiB``, ``4GiB``); ``0``, LadybugDB's default
    (~80 % of the machine's memory), when unset. Measured at 10^8 vertices
    (benchmarks/RESULTS.md, "10^8 into the embedded store"): the load peaks at 12.3 GiB with
    the default (a ``COPY`` keeps most of its memory outside the pool) and fails with 2 GiB
    ("the buffer pool is full"); the paged read-back of the run peaks at 11.3 GiB with the
    default and 9.6 GiB with 1 GiB (the pool keeps the pages it read)."""
    text = os.environ.get("LLAMP_STORE_BUFFER_POOL", "").strip()
    if not text:
        return 0
    try:
        value = parse_size_bytes(text)
    except ParameterError as err:
        raise ParameterError(f"$LLAMP_STORE_BUFFER_POOL: {err}") from None
    if value < 64 << 20:
        raise ParameterError(
            f"$LLAMP_STORE_BUFFER_POOL={text[:40]!r}: at least 64MiB (LadybugDB needs room for "
            "a COPY's column buffers)"
        )
    return value


def redact(uri: str) -> str:
    """A store URI without its password (``bolt://neo4j:secret@host`` → ``bolt://neo4j@host``);
    text that merely contains URIs (an error message) is redacted throughout."""
    return re.sub(r"([a-z][a-z0-9+.-]*://[^\s:/@]*):\S*@", r"\1@", uri, flags=re.IGNORECASE)


@dataclass(frozen=True)
class UiSettings:
    """What the web UI lets its users do (environment variables; docs/SECURITY.md).

    - ``LLAMP_UI_MAX_UPLOAD_MB`` (default 1024): the largest upload, all files together;
    - ``LLAMP_UI_MAX_UNPACKED_MB`` (default 4096, at most half the free temporary space): what
      an uploaded archive may unpack to;
    - ``LLAMP_UI_MAX_FILES`` (default 20000): files in one upload or archive;
    - ``LLAMP_UI_SERVER_ROOTS`` (default none): directories, separated by ``:``, below which
      "Path on the server" may read; without any, that input is off;
    - ``LLAMP_UI_READ_ONLY`` (default off): no ingest and no delete from the UI;
    - ``LLAMP_UI_ADMIN`` (default off): the Cypher console may run writes.
    """

    max_upload_bytes: int
    max_unpacked_bytes: int
    max_files: int
    server_roots: tuple[Path, ...]
    read_only: bool
    admin: bool


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ParameterError(f"${name}={text[:40]!r}: expected a whole number") from None
    if value < 1:
        raise ParameterError(f"${name}={value}: must be at least 1")
    return value


def ui_settings() -> UiSettings:
    """The UI's limits and permissions from the environment (see :class:`UiSettings`)."""
    import shutil
    import tempfile

    free = shutil.disk_usage(tempfile.gettempdir()).free
    unpacked_default = max(64, min(4096, free // 2 >> 20))
    roots = tuple(
        Path(p).expanduser().resolve()
        for p in os.environ.get("LLAMP_UI_SERVER_ROOTS", "").split(os.pathsep)
        if p.strip()
    )
    return UiSettings(
        max_upload_bytes=_env_int("LLAMP_UI_MAX_UPLOAD_MB", 1024) << 20,
        max_unpacked_bytes=_env_int("LLAMP_UI_MAX_UNPACKED_MB", unpacked_default) << 20,
        max_files=_env_int("LLAMP_UI_MAX_FILES", 20000),
        server_roots=roots,
        read_only=_env_flag("LLAMP_UI_READ_ONLY"),
        admin=_env_flag("LLAMP_UI_ADMIN"),
    )


@dataclass(frozen=True)
class QueryLimits:
    """The bounds of one ad hoc Cypher query (``llamp cypher``, ``llamp query``, the UI's
    console; docs/SECURITY.md). The query runs in a worker process
    (:mod:`llamp.graphdb.worker`) held to ``memory_bytes`` and ``timeout_s``; the text is
    checked against the other three before the database parses it.

    - ``LLAMP_CYPHER_MEMORY`` / ``--memory`` (default 2GiB): what the query may allocate;
    - ``LLAMP_CYPHER_TIMEOUT`` / ``--timeout`` (default 60s): how long it may run;
    - ``LLAMP_CYPHER_MAX_CHARS`` (default 20000): characters of query text;
    - ``LLAMP_CYPHER_MAX_DEPTH`` (default 64): nesting of ``(``, ``[`` and ``{`` (LadybugDB's
      parser takes 2.5 s at depth 1000 and crashes at 3000);
    - ``LLAMP_CYPHER_MAX_HOPS`` (default 10): the upper bound a variable-length relationship
      pattern (``-[*1..N]-``) must state.
    """

    memory_bytes: int = 2 << 30
    timeout_s: float = 60.0
    max_chars: int = 20_000
    max_depth: int = 64
    max_hops: int = 10


#: The smallest memory limit a query worker accepts (its libraries alone take more).
MIN_QUERY_MEMORY = 64 << 20


def query_limits(memory: str | None = None, timeout: str | None = None) -> QueryLimits:
    """The query limits from the environment; ``memory`` and ``timeout`` (CLI flags, e.g.
    ``4GiB``, ``300s``) override ``LLAMP_CYPHER_MEMORY`` and ``LLAMP_CYPHER_TIMEOUT``."""
    default = QueryLimits()
    memory_text = memory or os.environ.get("LLAMP_CYPHER_MEMORY", "").strip()
    timeout_text = timeout or os.environ.get("LLAMP_CYPHER_TIMEOUT", "").strip()
    memory_bytes = default.memory_bytes
    if memory_text:
        where = "--memory" if memory else "$LLAMP_CYPHER_MEMORY"
        try:
            memory_bytes = parse_size_bytes(memory_text)
        except ParameterError as err:
            raise ParameterError(f"{where}: {err}") from None
        if memory_bytes < MIN_QUERY_MEMORY:
            raise ParameterError(f"{where} {memory_text[:40]!r}: at least 64MiB")
    timeout_s = default.timeout_s
    if timeout_text:
        where = "--timeout" if timeout else "$LLAMP_CYPHER_TIMEOUT"
        try:
            timeout_s = parse_duration_ns(timeout_text, default_unit="s") / 1e9
        except ParameterError as err:
            raise ParameterError(f"{where}: {err}") from None
        if not 0.1 <= timeout_s <= 7 * 86400:
            raise ParameterError(f"{where} {timeout_text[:40]!r}: between 0.1s and 7 days")
    return QueryLimits(
        memory_bytes=memory_bytes,
        timeout_s=timeout_s,
        max_chars=_env_int("LLAMP_CYPHER_MAX_CHARS", default.max_chars),
        max_depth=_env_int("LLAMP_CYPHER_MAX_DEPTH", default.max_depth),
        max_hops=_env_int("LLAMP_CYPHER_MAX_HOPS", default.max_hops),
    )


_TIME_UNITS_NS = {
    "ps": 1e-3,
    "ns": 1.0,
    "us": 1e3,
    "µs": 1e3,
    "μs": 1e3,
    "ms": 1e6,
    "s": 1e9,
}

_NUMBER = r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_DURATION_RE = re.compile(rf"^\s*{_NUMBER}\s*([a-zA-Zµμ]*)\s*$")
_GAP_RE = re.compile(rf"^\s*{_NUMBER}\s*([a-zA-Zµμ]*)\s*/\s*([a-zA-Z]+)\s*$")


def parse_duration_ns(text: str | float | int, *, default_unit: str | None = "ns") -> float:
    """``"3us"`` → 3000.0. A bare number is read in ``default_unit``; with
    ``default_unit=None`` a unit is required (a form where ``3`` could mean 3 ns or 3 µs)."""
    if isinstance(text, int | float):
        if default_unit is None:
            raise ParameterError(f"duration {text!r} has no unit: give a unit (e.g. 3us)")
        return float(text) * _TIME_UNITS_NS[default_unit]
    match = _DURATION_RE.match(text)
    if not match:
        raise ParameterError(f"cannot read duration {text[:40]!r}: expected e.g. 3us, 1.5ms, 250ns")
    if not match.group(2) and default_unit is None:
        raise ParameterError(f"duration {text[:40]!r} has no unit: give a unit (e.g. 3us)")
    value, unit = float(match.group(1)), match.group(2) or default_unit or "ns"
    if unit not in _TIME_UNITS_NS:
        raise ParameterError(
            f"unknown time unit {unit!r} in {text!r}: use one of ps, ns, us, ms, s"
        )
    ns = value * _TIME_UNITS_NS[unit]
    if not math.isfinite(ns):
        raise ParameterError(f"duration {text[:40]!r} is beyond a float64 (infinite)")
    return ns


def parse_window_ns(text: str, *, what: str = "--window") -> tuple[float, float]:
    """A time window ``FROM:TO`` (durations; either end may be empty: 0 and ∞) in ns:
    ``"10ms:20ms"`` → (1e7, 2e7)."""
    if ":" not in text:
        raise ParameterError(f"{what}: {text[:40]!r} is not FROM:TO (e.g. 10ms:20ms)")
    a, b = text.split(":", 1)
    try:
        lo = parse_duration_ns(a) if a.strip() else 0.0
        hi = parse_duration_ns(b) if b.strip() else math.inf
    except ParameterError as err:
        raise ParameterError(f"{what}: {err}") from None
    if hi <= lo:
        raise ParameterError(f"{what}: the end {b[:40]!r} must be after the start {a[:40]!r}")
    return lo, hi


def parse_rank_set(text: str, num_ranks: int, *, what: str = "--ranks") -> list[tuple[int, int]]:
    """Ranks ``"0-7,12"`` of a graph of ``num_ranks`` ranks as inclusive (first, last) spans,
    each checked against the graph before anything is allocated (``0-100000000`` on 16 ranks
    is an error, not 10^8 integers)."""
    spans = []
    for part in str(text).split(","):
        item = part.strip()
        a, dash, b = item.partition("-")
        if not (a.strip().isdigit() and (not dash or b.strip().isdigit())):
            raise ParameterError(f"{what}: cannot read {item[:40]!r} (expected e.g. 0-7,12)")
        first, last = int(a), int(b) if dash else int(a)
        for r in (first, last):
            if r >= num_ranks:
                raise ParameterError(f"{what}: rank {r} is outside 0..{num_ranks - 1}")
        if last < first:
            raise ParameterError(f"{what}: {item[:40]!r} runs backwards")
        spans.append((first, last))
    return spans


_BANDWIDTH_BITS = {"b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}
_BANDWIDTH_BYTES = {"B": 8.0, "KB": 8e3, "MB": 8e6, "GB": 8e9, "TB": 8e12}


def parse_gap_ns_per_byte(text: str | float | int) -> float:
    """Gap per byte G in ns/B from ``"0.018ns/B"``, ``"18ps/B"``, ``"100Gb/s"`` or ``"12.5GB/s"``.

    A bare number is ns/B. A bandwidth (``…/s``) is converted: G = 1 / bytes-per-ns.
    """
    if isinstance(text, int | float):
        return float(text)
    bare = _DURATION_RE.match(text)
    if bare and not bare.group(2):
        return float(bare.group(1))
    match = _GAP_RE.match(text)
    if not match:
        raise ParameterError(
            f"cannot read gap per byte {text!r}: expected e.g. 0.018ns/B, 18ps/B or 100Gb/s"
        )
    value, num, den = float(match.group(1)), match.group(2), match.group(3)
    if den == "B" and num in _TIME_UNITS_NS:
        return value * _TIME_UNITS_NS[num]
    if den == "s":
        if num in _BANDWIDTH_BYTES:
            bits_per_s = value * _BANDWIDTH_BYTES[num]
        elif num.lower() in _BANDWIDTH_BITS and num[-1] == "b":
            bits_per_s = value * _BANDWIDTH_BITS[num.lower()]
        else:
            raise ParameterError(f"unknown bandwidth unit {num}/s in {text!r}: use Gb/s or GB/s")
        if bits_per_s <= 0:
            raise ParameterError(f"bandwidth must be positive in {text!r}")
        return 8.0 / bits_per_s * 1e9
    raise ParameterError(f"unknown unit {num}/{den} in {text!r}: use ns/B, ps/B or Gb/s")


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gib": 1 << 30,
}


def parse_size_bytes(text: str | int) -> int:
    """``"256KiB"`` → 262144; a bare integer is bytes."""
    if isinstance(text, int):
        return text
    match = _DURATION_RE.match(text)
    unit = match.group(2).lower() if match else None
    if not match or unit not in _SIZE_UNITS:
        raise ParameterError(f"cannot read size {text!r}: expected e.g. 65536, 64KiB, 1MiB")
    return int(float(match.group(1)) * _SIZE_UNITS[unit])


#: Default host speed (flop/s) that turns a SimGrid TI trace's ``compute <flops>`` into time:
#: 1 Gf/s, the speed of the hosts of SimGrid's example clusters (``cluster_backbone.xml``; a TI
#: trace is replayed on a platform, and its flops take ``flops / host speed`` there). SMPI's
#: ``smpi/host-speed`` default (20 kf/s, which SimGrid itself warns is a placeholder) would make
#: the shared 32-rank trace's rank 0 compute for 42 days instead of 73 s.
DEFAULT_HOST_SPEED_FLOPS = 1e9

# SimGrid's speed units (``xbt_parse_get_speed``): f, kf, Mf, … in steps of 1000, and
# ``flops`` with the same prefixes; ``flop/s`` and ``flops/s`` are accepted too.
_FLOP_PREFIXES = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_FLOP_RE = re.compile(rf"^\s*{_NUMBER}\s*(?:([kMGTPE]?)(f|flops?|flops?/s))?\s*$")


def parse_flop_rate(text: str | float | int) -> float:
    """A host speed in flop/s from SimGrid's notation: ``"1Gf"`` → 1e9, ``"20kf"``, ``"2.5Mflops"``,
    ``"1e9"`` (a bare number is flop/s). Rejects zero, negative and non-finite speeds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        match = _FLOP_RE.match(str(text))
        if not match:
            raise ParameterError(
                f"cannot read host speed {text!r}: expected flop/s in SimGrid's notation, e.g. "
                "1Gf, 500Mf, 20kf, 2.5Gflops or 1e9 (prefixes k, M, G, T, P, E; case matters)"
            )
        value = float(match.group(1)) * _FLOP_PREFIXES[match.group(2) or ""]
    if not math.isfinite(value) or value <= 0:
        raise ParameterError(f"host speed must be a positive, finite flop rate, got {text!r}")
    return value


def format_flop_rate(flops_per_s: float) -> str:
    """SimGrid notation of a host speed: ``1e9`` → ``"1Gf"``, ``2.5e4`` → ``"25kf"``."""
    for prefix in ("E", "P", "T", "G", "M", "k"):
        if flops_per_s >= _FLOP_PREFIXES[prefix]:
            return f"{flops_per_s / _FLOP_PREFIXES[prefix]:.6g}{prefix}f"
    return f"{flops_per_s:.6g}f"


def format_ns(value_ns: float) -> str:
    """Human form of a duration: ``1615.0`` → ``"1.615 µs"``."""
    if value_ns != value_ns:  # NaN
        return "nan"
    if value_ns == float("inf"):
        return "∞"
    magnitude = abs(value_ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if magnitude >= scale:
            return f"{value_ns / scale:.6g} {unit}"
    return f"{value_ns:.6g} ns"


# ---------------------------------------------------------------------- graph tags
#: Graph tag of a point-to-point message on communicator ``c``: ``tag + c · COMM_TAG_STRIDE``
#: (``MPI_COMM_WORLD`` is ``c = 0``, so its messages keep their MPI tag). Shared by the
#: trace→graph rules (``ingest/build.py``) and the store's collective selection
#: (``graphdb/store.py``), hence kept in the core.
COMM_TAG_STRIDE = 1 << 32
#: Collective messages: ``COLL_TAG_BASE + c · COMM_TAG_STRIDE + instance``, above any user tag.
COLL_TAG_BASE = 1 << 62


# ---------------------------------------------------------------------- value parsers
# One parser per value kind, used by the CLI, the UI and study specs alike. Each raises a
# ParameterError (an InputError: exit 2) whose one line says what was read and what is accepted.


def parse_percent(text: str | float | int, *, what: str = "percentage") -> float:
    """A percentage as a fraction: ``"5"`` → 0.05, ``"5%"`` → 0.05, ``"0.5"`` → 0.005.

    One rule everywhere: the number *is* a percentage, with or without ``%`` (``0.05`` means
    0.05 %, not 5 %). Zero, negative and non-finite values are refused: every llamp
    percentage is a degradation or a share that must be positive.
    """
    if isinstance(text, bool):
        raise ParameterError(f"{what}: {text!r} is not a percentage (e.g. 5 or 5%)")
    if isinstance(text, int | float):
        value = float(text)
    else:
        body = str(text).strip()
        body = body[:-1].strip() if body.endswith("%") else body
        try:
            value = float(body)
        except ValueError:
            raise ParameterError(
                f"{what}: cannot read {str(text)[:40]!r} as a percentage (e.g. 5, 5% or 0.5%)"
            ) from None
    if not math.isfinite(value) or value <= 0:
        raise ParameterError(f"{what}: {text!r} must be a positive percentage (e.g. 5 or 5%)")
    return value / 100.0


def parse_percents(text: str, *, what: str = "percentages") -> tuple[float, ...]:
    """A comma-separated list of percentages (:func:`parse_percent`) as sorted, distinct
    fractions: ``"5, 1%, 2"`` → ``(0.01, 0.02, 0.05)``."""
    items = str(text).split(",")
    if not any(item.strip() for item in items):
        raise ParameterError(f"{what}: no value given (expected percentages, e.g. 1,2,5)")
    if not all(item.strip() for item in items):
        raise ParameterError(f"{what}: {str(text)[:40]!r} has an empty value between commas")
    return tuple(sorted({parse_percent(item, what=what) for item in items}))


def format_percent(fraction: float) -> str:
    """A fraction as a percentage with as many digits as it has: 0.05 → ``"5%"``,
    0.005 → ``"0.5%"``, 0.0125 → ``"1.25%"`` (never rounded to ``"0%"``)."""
    return f"{fraction * 100:.6g}%"


def parse_value(parameter: str, text: str | float | int) -> float:
    """A value of a LogGPS parameter: ``L``/``o``/``g`` a duration in ns, ``G`` a gap per byte
    in ns/B (or a bandwidth), ``S`` a size in bytes."""
    if parameter == "G":
        return parse_gap_ns_per_byte(text)
    if parameter == "S":
        return float(parse_size_bytes(text if isinstance(text, int) else str(text)))
    if parameter in ("L", "o", "g"):
        return parse_duration_ns(text)
    raise ParameterError(f"unknown parameter {parameter!r}: choose L, G or o")


def format_value(parameter: str, value: float) -> str:
    """A value of a LogGPS parameter with its unit: L/o/g as a duration (``10 µs``),
    G in ns/B, S in bytes. What human tables print for a parameter's value."""
    if parameter == "G":
        return "∞" if value == float("inf") else f"{value:.6g} ns/B"
    if parameter == "S":
        return f"{value:.0f} B"
    return format_ns(value)


#: Default last value of a sweep or critical range: 100 µs for L/o; for G (whose unit is
#: ns/B) 1 ns/B, about a 8 Gb/s link.
DEFAULT_RANGE_END = {"L": "100us", "o": "100us", "G": "1ns/B"}


def parse_range(parameter: str, lo: str, hi: str | None) -> tuple[float, float]:
    """``[lo, hi]`` of ``parameter`` (:func:`parse_value`), checked ``0 ≤ lo ≤ hi``.

    ``hi=None`` takes :data:`DEFAULT_RANGE_END`; so does ``"100us"`` for G (the CLI's
    shared ``--to`` default, which is no gap per byte)."""
    if hi is None or (parameter == "G" and str(hi).strip() == DEFAULT_RANGE_END["L"]):
        hi = DEFAULT_RANGE_END.get(parameter, DEFAULT_RANGE_END["L"])
    a, b = parse_value(parameter, lo), parse_value(parameter, hi)
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ParameterError(f"range {lo}..{hi}: both ends must be finite")
    if not 0 <= a <= b:
        raise ParameterError(f"range {lo}..{hi}: need 0 ≤ from ≤ to")
    return a, b


def parse_budget(text: str | int | None, *, what: str = "--max-evaluations") -> int | str | None:
    """An evaluation budget: ``"all"`` (or ``None``) → ``None`` (no budget), ``"auto"`` →
    ``"auto"`` (resolved by the caller from the graph's size), or a whole number ≥ 2 (the
    two ends of a range)."""
    if text is None:
        return None
    value = str(text).strip().lower()
    if value == "all":
        return None
    if value == "auto":
        return "auto"
    try:
        budget = int(value)
    except ValueError:
        raise ParameterError(f"{what}: {text!r} is not all, auto or a whole number") from None
    if budget < 2:
        raise ParameterError(f"{what}: {budget} < 2 (both ends of the range)")
    return budget


def parse_class_latencies(items: Iterable[str], *, what: str = "--link") -> dict[str, float]:
    """Link-class latencies ``CLASS=VALUE`` (``core=500ns``), one per item, as ns by class
    (the command line's repeated ``--link``, the UI's comma-separated list); blank items are
    skipped."""
    out: dict[str, float] = {}
    for item in items:
        if not item.strip():
            continue
        name, sep, value = (p.strip() for p in item.partition("="))
        if not sep or not name:
            raise ParameterError(f"{what}: {item.strip()!r} is not CLASS=VALUE (e.g. core=500ns)")
        out[name] = parse_duration_ns(value)
    return out


#: The most ranks a rank list may name when no graph bounds it (a study or UI setting).
MAX_RANKS = 1 << 22


def parse_ranks(
    text: str | int, *, what: str = "--ranks", num_ranks: int | None = None
) -> tuple[int, ...]:
    """``"0-7,12"`` → sorted distinct rank ids ``(0, 1, …, 7, 12)``, each checked to lie in
    ``0 … num_ranks − 1`` (:data:`MAX_RANKS` without a graph) before any is listed
    (:func:`parse_rank_set`); an empty text is no rank."""
    if not str(text).strip():
        return ()
    spans = parse_rank_set(str(text), MAX_RANKS if num_ranks is None else num_ranks, what=what)
    return tuple(sorted(set().union(*(range(a, b + 1) for a, b in spans))))


def parse_collectives(text: str | None, *, what: str = "--collectives") -> dict[str, str]:
    """``"allreduce=ring,bcast=binomial"`` → ``{"allreduce": "ring", "bcast": "binomial"}``
    (lower case; whether the algorithm exists is checked when the trace is read)."""
    if not text:
        return {}
    choices: dict[str, str] = {}
    for item in str(text).split(","):
        if not item.strip():
            continue
        op, sep, alg = (part.strip().lower() for part in item.partition("="))
        if not sep or not op or not alg:
            raise ParameterError(f"{what}: {item.strip()!r} is not OP=ALGORITHM")
        choices[op] = alg
    return choices


def format_table(
    rows: list[tuple[object, ...]] | list[list[object]], headers: tuple[str, ...]
) -> str:
    """A plain aligned text table: a header row, a rule, then the rows.

    Without headers (``()``) only the rows are printed, aligned, with no rule. A cell's
    control characters are escaped (``\\n``, ``\\x1b``): a value read from a trace or the
    store (a label, a Cypher string) can neither break the table's lines nor send the
    terminal an escape sequence."""
    width = len(headers) if headers else max((len(r) for r in rows), default=0)
    cells = [tuple(_cell(c) for c in row) for row in rows]
    if headers:
        cells.insert(0, tuple(_cell(c) for c in headers))
    widths = [max((len(row[i]) for row in cells if i < len(row)), default=0) for i in range(width)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() for row in cells
    ]
    if headers:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: object) -> str:
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
