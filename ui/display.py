"""How the UI shows a value: one formatter per kind (durations, sizes, bandwidths, percentages,
counts, ratios) and the table form every page shows.

What a person reads is never a code name or a raw float: a duration is ``41.91 s`` (adaptive
units ns, µs, ms, s), a size ``256 KiB``, a bandwidth ``444.4 Gb/s``, a share ``12.5%``, no
bound ``unbounded``, a missing value ``—``. Tables keep their numbers as numbers (they sort by
value): every column of durations is shown in the one unit that suits it, named in its header
(``runtime (s)``); a column with a missing or unbounded value is shown as text, each cell in the
column's unit. Internal columns (graph tags, vertex ids of the store) are not shown.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

#: What a missing value (None, NaN) reads as.
MISSING = "—"
#: What an infinite bound (no finite tolerance) reads as.
UNBOUNDED = "unbounded"

_TIME_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
_SIZE_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1))


def _missing(value: object) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    try:
        return bool(value != value)  # NaN
    except (TypeError, ValueError):
        return False


def _special(value: object) -> str | None:
    """``—`` for a missing value, ``unbounded`` for +∞, else ``None`` (a number to format)."""
    if _missing(value):
        return MISSING
    if isinstance(value, int | float | np.number) and math.isinf(float(value)):
        return UNBOUNDED if float(value) > 0 else f"−{UNBOUNDED}"
    return None


def time_unit(max_ns: float) -> tuple[str, float]:
    """The unit (and its size in ns) that shows durations up to ``max_ns`` best."""
    magnitude = abs(max_ns) if math.isfinite(max_ns) else 0.0
    for unit, scale in _TIME_UNITS:
        if magnitude >= scale:
            return unit, scale
    return "ns", 1.0


def size_unit(max_bytes: float) -> tuple[str, float]:
    """The unit (and its size in bytes) that shows sizes up to ``max_bytes`` best."""
    magnitude = abs(max_bytes) if math.isfinite(max_bytes) else 0.0
    for unit, scale in _SIZE_UNITS:
        if magnitude >= scale:
            return unit, float(scale)
    return "B", 1.0


def _number(value: float, digits: int) -> str:
    """``value`` in ``digits`` significant digits, never in exponent notation below 10^15."""
    text = f"{value:.{digits}g}"
    if "e" in text and abs(value) < 1e15:
        text = f"{value:,.0f}" if abs(value) >= 1 else f"{value:.{digits + 6}f}".rstrip("0")
    return text


def duration(value_ns: object, digits: int = 6) -> str:
    """A duration in its unit: ``1615.0`` → ``"1.615 µs"``, ``4.19e10`` → ``"41.91 s"``."""
    special = _special(value_ns)
    if special is not None:
        return special
    value = float(value_ns)  # type: ignore[arg-type]
    unit, scale = time_unit(value)
    return f"{_number(value / scale, digits)} {unit}"


def exact_duration(value_ns: float) -> str:
    """The precise value behind a rounded metric, in nanoseconds to the femtosecond's
    thousand, digits grouped: ``"41,909,063,157.385979 ns"`` (the value the CLI's ``--json``
    prints, to compare with)."""
    special = _special(value_ns)
    if special is not None:
        return special
    return f"{float(value_ns):,.6f} ns"


def parse_exact(text: str) -> float:
    """The nanoseconds of an :func:`exact_duration` (what a test reads back)."""
    return float(text.strip().removesuffix(" ns").replace(",", ""))


def size(value_bytes: object, digits: int = 4) -> str:
    """A size in B, KiB, MiB or GiB: ``262144`` → ``"256 KiB"``."""
    special = _special(value_bytes)
    if special is not None:
        return special
    unit, scale = size_unit(float(value_bytes))  # type: ignore[arg-type]
    return f"{_number(float(value_bytes) / scale, digits)} {unit}"  # type: ignore[arg-type]


def bandwidth(gap_ns_per_byte: object, digits: int = 4) -> str:
    """The bandwidth 8/G of a gap per byte G (ns/B) in Gb/s: ``0.018`` → ``"444.4 Gb/s"``;
    a gap of 0 is an unbounded bandwidth."""
    special = _special(gap_ns_per_byte)
    if special is not None:
        return "0 Gb/s" if special == UNBOUNDED else special
    gap = float(gap_ns_per_byte)  # type: ignore[arg-type]
    if gap <= 0:
        return UNBOUNDED
    return f"{_number(8.0 / gap, digits)} Gb/s"


def gap(gap_ns_per_byte: object, digits: int = 4) -> str:
    """A gap per byte G: ``"0.018 ns/B"``."""
    special = _special(gap_ns_per_byte)
    if special is not None:
        return special
    return f"{_number(float(gap_ns_per_byte), digits)} ns/B"  # type: ignore[arg-type]


def percent(fraction: object, digits: int = 4) -> str:
    """A fraction as a percentage: ``0.125`` → ``"12.5%"``."""
    special = _special(fraction)
    if special is not None:
        return special
    return f"{_number(float(fraction) * 100.0, digits)}%"  # type: ignore[arg-type]


def count(value: object) -> str:
    """A whole number with thousands separators: ``1000000`` → ``"1,000,000"``."""
    special = _special(value)
    if special is not None:
        return special
    return f"{int(value):,}"  # type: ignore[call-overload]


def number(value: object, digits: int = 4) -> str:
    """A unitless number (a sensitivity λ, a ratio) in ``digits`` significant digits."""
    special = _special(value)
    if special is not None:
        return special
    return _number(float(value), digits)  # type: ignore[arg-type]


def change(new: float, old: float, less: str = "faster", more: str = "slower") -> tuple[str, str]:
    """How ``new`` compares with ``old`` as (arrow, words): (``"↓"``, ``"7,500× faster"``) for a
    7,500-fold decrease of a runtime, (``"↑"``, ``"2.5× slower"``) for an increase,
    (``"="``, ``"same"``) for equal values; ``less``/``more`` name the direction of another
    quantity (``"less"``, ``"more"``)."""
    if not (math.isfinite(new) and math.isfinite(old)) or new == old:
        return ("=", "same") if new == old else ("", MISSING)
    if new <= 0 or old <= 0:
        return ("↓" if new < old else "↑"), MISSING
    ratio = old / new if new < old else new / old
    shown = f"{ratio:,.0f}" if ratio >= 100 else f"{ratio:.3g}"
    return ("↓", f"{shown}× {less}") if new < old else ("↑", f"{shown}× {more}")


def parameter(parameter: str, value: float) -> str:
    """A LogGPS parameter's value as a sidebar input reads it back, in six significant digits
    of its best unit: ``("L", 4999.909997161899)`` → ``"4.99991us"``; G in ns/B, S in bytes."""
    if parameter == "G":
        return f"{value:.6g}ns/B"
    if parameter == "S":
        return str(int(value))
    unit, scale = time_unit(value)
    return f"{value / scale:.6g}{'us' if unit == 'µs' else unit}"


# ---------------------------------------------------------------------- column headers
#: Headers in words of the analyses' columns (unit suffixes are handled by :func:`header`).
WORDS = {
    "x": "level",
    "x_percent": "tolerance level",
    "lambda_L": "λ_L",
    "lambda_G": "λ_G",
    "lambda_o": "λ_o",
    "rho_L": "ρ_L",
    "lambda": "λ",
    "runtime": "runtime T",
    "T_bound": "T bound",
    "share_needed": "share needed",
    "value_ns": "base latency",
    "lambda_share": "value·λ/T",
    "instances": "collective instances",
    "n_bytes": "message size n",
    "thakur_gropp_ns": "Thakur–Gropp per instance",
    "dimemas_ns": "Dimemas per instance",
    "total_thakur_gropp_ns": "Thakur–Gropp, all instances",
    "total_dimemas_ns": "Dimemas, all instances",
    "thakur_gropp_latency_terms": "Thakur–Gropp latency terms",
    "thakur_gropp_byte_terms": "Thakur–Gropp byte terms",
    "dimemas_latency_terms": "Dimemas latency terms",
    "dimemas_byte_terms": "Dimemas byte terms",
    "messages_vs_first": "Δ messages",
    "runtime_vs_first": "ΔT / T₁",
    "lambda_L_vs_first": "Δλ_L",
    "thakur_gropp_formula": "Thakur–Gropp formula",
    "analytic_collectives": "analytic collectives",
    "nbytes": "size",
    "src": "sender rank",
    "dst": "receiver rank",
}
#: Column-name endings and the kind of value they hold.
_KINDS = (
    ("_ns_per_byte", "gap"),
    ("_Gb_per_s", "bandwidth_gbps"),
    ("_ns", "duration"),
    ("_bytes", "size"),
    ("_share", "share"),
    ("_fraction", "share"),
    ("_pct", "percent_value"),
    ("_percent", "percent_value"),
)
#: Columns never shown: graph tags (communicator and collective instance folded in, up to
#: 2^62) and the store's internal ids.
HIDDEN = frozenset({"tag", "graph_tag", "internal_id", "element_id", "token", "identity"})


def kind_of(column: str) -> tuple[str, str]:
    """(base name, kind) of a column named by the analyses' convention: ``"runtime_ns"`` →
    (``"runtime"``, ``"duration"``); a column without a unit suffix is a ``"plain"`` one."""
    if column in ("bytes", "nbytes", "size"):
        return column, "size"
    if column == "lambda_G":  # dT/dG with G in ns/B: bytes on the critical path
        return column, "size"
    for suffix, kind in _KINDS:
        if column.endswith(suffix) and len(column) > len(suffix):
            return column.removesuffix(suffix), kind
    return column, "plain"


def header(column: str) -> str:
    """A column name in words, without a unit: ``"slack_1pct_ns"`` → ``"slack 1%"``."""
    base, _ = kind_of(column)
    if column in WORDS:
        return WORDS[column]
    if base in WORDS:
        return WORDS[base]
    return re.sub(r"(\d+(?:\.\d+)?)pct", r"\1%", base.replace("_", " "))


def _hidden(column: str) -> bool:
    return column in HIDDEN or column.endswith("_tag") or column.endswith("_id")


def frame(
    data: pd.DataFrame,
    labels: Mapping[str, str] | None = None,
    *,
    keep: tuple[str, ...] = (),
    kinds: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """``data`` as a person reads it: headers in words (``labels`` first, else :func:`header`),
    each column of durations in the unit that suits it (``"runtime (s)"``), sizes in B … GiB,
    shares in %, gaps per byte as ns/B; internal columns left out (except those in ``keep``);
    ``kinds`` names the kind of a column whose name does not say it (``{"share": "share"}``).
    A column holding a missing or infinite value is shown as text, cell by cell
    (``—``, ``unbounded``); other columns stay numbers, so a table still sorts by value."""
    labels = dict(labels or {})
    out: dict[str, pd.Series] = {}
    for column in data.columns:
        column = str(column)
        if _hidden(column) and column not in labels and column not in keep:
            continue
        values = data[column]
        base, kind = kind_of(column)
        kind = (kinds or {}).get(column, kind)
        name = labels.get(column) or header(column)
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if not numeric:
            out[_unique(name, out)] = values.map(_text)
            continue
        array = values.to_numpy(dtype=float, na_value=np.nan)
        finite = array[np.isfinite(array)]
        top = float(np.abs(finite).max()) if finite.size else 0.0
        whole = bool(finite.size) and bool(np.all(finite == np.round(finite)))
        if kind == "duration":
            unit, scale = time_unit(top)
        elif kind == "size":
            unit, scale = size_unit(top)
        elif kind == "share":
            unit, scale = "%", 0.01
        elif kind == "percent_value":
            unit, scale = "%", 1.0
        elif kind == "gap":
            unit, scale = "ns/B", 1.0
        elif kind == "bandwidth_gbps":
            unit, scale = "Gb/s", 1.0
        else:
            unit, scale = "", 1.0
        title = f"{name} ({unit})" if unit and f"({unit})" not in name else name
        scaled = array / scale
        if finite.size == array.size:
            if kind == "plain" and whole and pd.api.types.is_integer_dtype(values):
                out[_unique(title, out)] = values
            else:
                out[_unique(title, out)] = pd.Series(scaled, index=data.index)
            continue
        # Missing or unbounded values: text, each cell in the column's unit.
        out[_unique(title, out)] = pd.Series(
            [
                _special(v) or (f"{int(v):,}" if whole and kind == "plain" else _number(v, 6))
                for v in scaled
            ],
            index=data.index,
        )
    return pd.DataFrame(out, index=data.index)


def _unique(name: str, taken: Mapping[str, object]) -> str:
    shown, n = name, 2
    while shown in taken:
        shown, n = f"{name} ({n})", n + 1
    return shown


def _text(value: object) -> object:
    """A non-numeric cell: ``—`` for a missing value, other values as they are."""
    if _missing(value):
        return MISSING
    if isinstance(value, float) and math.isinf(value):
        return _special(value)
    return value


# ---------------------------------------------------------------------- download names
def download_name(
    run: str, page: str, params: object = None, ext: str = "csv", part: str = ""
) -> str:
    """A download's file name, unique per run, page, part and parameters:
    ``sweep3d-latency-L3us-o1.5us-tolerance.csv``; safe on every file system."""
    pieces = [run, page]
    if params is not None:
        pieces.append(
            f"L{parameter('L', params.L)}-o{parameter('o', params.o)}"  # type: ignore[attr-defined]
            f"-G{parameter('G', params.G).removesuffix('ns/B')}"  # type: ignore[attr-defined]
        )
    if part:
        pieces.append(part)
    stem = "-".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", p).strip("_") for p in pieces if p)
    return f"{stem}.{ext}"
