"""LogGPS parameters (LLAMP §II-A): latency L, overhead o, gap per byte G, threshold S.

``g`` and ``O`` are left out, as in the paper. All times in ns, G in ns/B, S in bytes;
a message of ``size`` bytes is eager iff ``size <= S``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from llamp import config
from llamp.errors import ParameterError


@dataclass(frozen=True)
class LogGPS:
    """One network configuration θ = (L, o, G, S)."""

    L: float = config.DEFAULT_L_NS
    o: float = config.DEFAULT_O_NS
    G: float = config.DEFAULT_G_NS_PER_BYTE
    S: int = config.DEFAULT_S_BYTES

    def __post_init__(self) -> None:
        for name in ("L", "o", "G"):
            value = getattr(self, name)
            if not value >= 0.0 or value == float("inf"):
                raise ParameterError(f"LogGPS {name} must be finite and ≥ 0, got {value!r}")
        if self.S < 0:
            raise ParameterError(f"LogGPS S must be ≥ 0 bytes, got {self.S!r}")

    @classmethod
    def parse(
        cls,
        L: str | float | None = None,
        o: str | float | None = None,
        G: str | float | None = None,
        S: str | int | None = None,
        base: LogGPS | None = None,
    ) -> LogGPS:
        """Build from user strings with units (``L="3us"``, ``G="0.018ns/B"``, ``S="256KiB"``).

        Parameters left ``None`` keep the value of ``base`` (default: the defaults).
        """
        params = base or cls()
        changes: dict[str, float | int] = {}
        if L is not None:
            changes["L"] = config.parse_duration_ns(L)
        if o is not None:
            changes["o"] = config.parse_duration_ns(o)
        if G is not None:
            changes["G"] = config.parse_gap_ns_per_byte(G)
        if S is not None:
            changes["S"] = config.parse_size_bytes(S)
        return replace(params, **changes)

    def with_(self, **changes: float | int) -> LogGPS:
        """A copy with some parameters changed (``params.with_(L=5000.0)``)."""
        return replace(self, **changes)

    def as_dict(self) -> dict[str, float | int]:
        """``{"L_ns", "o_ns", "G_ns_per_byte", "S_bytes"}`` for JSON output and the store."""
        raw = asdict(self)
        return {
            "L_ns": raw["L"],
            "o_ns": raw["o"],
            "G_ns_per_byte": raw["G"],
            "S_bytes": raw["S"],
        }
