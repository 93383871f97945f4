"""LogGPS parameters (LLAMP §II-A): latency L, overhead o, gap per byte G, threshold S,
plus LogGP's gap per message g and the two model choices that shape the event graph.

All times in ns, G in ns/B, S in bytes; a message of ``size`` bytes is eager iff
``size <= S``. ``O`` (overhead per byte) is left out, as in the paper. ``progress``
(``async``/``wait``), ``nic`` (``overlap``/``serial``), ``order`` (``program``/``schedule``)
and ``rendezvous`` (``handshake``/``polled``/``loggopsim``) select the models of
docs/model.md; ``g`` only matters under ``nic="serial"``.

Under ``order="schedule"`` the resource orders are those of one event-driven pass at
``schedule_at`` = (L, o, G, g): the parameters the configuration was given with.
:meth:`LogGPS.with_` keeps it, so an analysis that varies L around a baseline evaluates one
fixed order (T stays convex and piecewise linear); :meth:`LogGPS.rescheduled` moves it to the
configuration's own parameters (``sweep --reschedule``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from llamp import config
from llamp.errors import ParameterError


@dataclass(frozen=True)
class LogGPS:
    """One network configuration θ = (L, o, G, S)."""

    L: float = config.DEFAULT_L_NS
    o: float = config.DEFAULT_O_NS
    G: float = config.DEFAULT_G_NS_PER_BYTE
    S: int = config.DEFAULT_S_BYTES
    g: float = config.DEFAULT_GAP_NS
    progress: str = config.DEFAULT_PROGRESS
    nic: str = config.DEFAULT_NIC
    order: str = config.DEFAULT_ORDER
    rendezvous: str = config.DEFAULT_RENDEZVOUS
    #: (L, o, G, g) of the schedule pass under ``order="schedule"``; None: this configuration's
    #: own. Not part of equality: it says where an order was taken, not what θ is.
    schedule_at: tuple[float, float, float, float] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("L", "o", "G", "g"):
            value = getattr(self, name)
            if not value >= 0.0 or value == float("inf"):
                raise ParameterError(
                    f"LogGPS {name} must be finite and ≥ 0, got {config.format_value(name, value)}"
                )
        if self.S < 0:
            raise ParameterError(f"LogGPS S must be ≥ 0 bytes, got {self.S!r} B")
        if self.progress not in config.PROGRESS_MODELS:
            raise ParameterError(
                f"unknown progress model {self.progress!r}: use one of "
                + ", ".join(config.PROGRESS_MODELS)
            )
        if self.nic not in config.NIC_MODELS:
            raise ParameterError(
                f"unknown NIC model {self.nic!r}: use one of " + ", ".join(config.NIC_MODELS)
            )
        if self.order not in config.ORDER_MODELS:
            raise ParameterError(
                f"unknown order {self.order!r}: use one of " + ", ".join(config.ORDER_MODELS)
            )
        if self.rendezvous not in config.RENDEZVOUS_MODELS:
            raise ParameterError(
                f"unknown rendezvous protocol {self.rendezvous!r}: use one of "
                + ", ".join(config.RENDEZVOUS_MODELS)
            )
        if self.schedule_at is None:
            own = (float(self.L), float(self.o), float(self.G), float(self.g))
            object.__setattr__(self, "schedule_at", own)

    @classmethod
    def parse(
        cls,
        L: str | float | None = None,
        o: str | float | None = None,
        G: str | float | None = None,
        S: str | int | None = None,
        base: LogGPS | None = None,
        *,
        g: str | float | None = None,
        progress: str | None = None,
        nic: str | None = None,
        order: str | None = None,
        rendezvous: str | None = None,
    ) -> LogGPS:
        """Build from user strings with units (``L="3us"``, ``G="0.018ns/B"``, ``S="256KiB"``,
        ``g="50ns"``, ``progress="wait"``, ``nic="serial"``, ``order="schedule"``,
        ``rendezvous="loggopsim"``).

        Parameters left ``None`` keep the value of ``base`` (default: the defaults); the
        schedule is taken at the result's own parameters.
        """
        params = base or cls()
        changes: dict[str, float | int | None] = {"schedule_at": None}
        if L is not None:
            changes["L"] = config.parse_duration_ns(L)
        if o is not None:
            changes["o"] = config.parse_duration_ns(o)
        if G is not None:
            changes["G"] = config.parse_gap_ns_per_byte(G)
        if S is not None:
            changes["S"] = config.parse_size_bytes(S)
        if g is not None:
            changes["g"] = config.parse_duration_ns(g)
        if progress is not None:
            changes["progress"] = str(progress)
        if nic is not None:
            changes["nic"] = str(nic)
        if order is not None:
            changes["order"] = str(order)
        if rendezvous is not None:
            changes["rendezvous"] = str(rendezvous)
        return replace(params, **changes)

    def with_(self, **changes: float | int | str) -> LogGPS:
        """A copy with some parameters changed (``params.with_(L=5000.0)``), its schedule
        order still taken at this configuration's ``schedule_at``."""
        return replace(self, **changes)

    def rescheduled(self) -> LogGPS:
        """The same configuration with its schedule order taken at its own parameters."""
        return replace(self, schedule_at=None)

    def model_text(self) -> str:
        """The model choices in words, for headers: ``order schedule, rendezvous handshake,
        NIC serial``; under the program order also its receive-progress model (the schedule
        order has none: it processes each message when its CPU stream is free)."""
        parts = [f"order {self.order}", f"rendezvous {self.rendezvous}", f"NIC {self.nic}"]
        if self.order == "program":
            parts.append(f"progress {self.progress}")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, float | int | str]:
        """``{"L_ns", "o_ns", "G_ns_per_byte", "S_bytes", "g_ns", "progress", "nic", "order",
        "rendezvous"}`` for JSON output and the store."""
        raw = asdict(self)
        return {
            "L_ns": raw["L"],
            "o_ns": raw["o"],
            "G_ns_per_byte": raw["G"],
            "S_bytes": raw["S"],
            "g_ns": raw["g"],
            "progress": raw["progress"],
            "nic": raw["nic"],
            "order": raw["order"],
            "rendezvous": raw["rendezvous"],
        }

    @property
    def lowering(self) -> tuple:
        """What shapes the event graph besides S: (progress, nic, order, rendezvous, the
        schedule's parameters under ``order="schedule"``, else ())."""
        at = self.schedule_at if self.order == "schedule" else ()
        return (self.progress, self.nic, self.order, self.rendezvous, at)
