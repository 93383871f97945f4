"""Named network profiles: LogGPS parameters stored as ``$LLAMP_HOME/networks/NAME.json``.

``llamp calibrate --save NAME -- mpirun -n 2`` writes one from a ping-pong fit; any analysis that
takes ``--network NAME`` starts from it, and ``--L/--o/--G/--S`` given with it override single
parameters (:func:`resolve_params`). A profile file::

    {"name": "this-node", "L_ns": 0.0, "o_ns": 100.0, "G_ns_per_byte": 0.158,
     "S_bytes": 2048, "g_ns": 250.0, "source": "llamp calibrate -- mpirun -n 2", "created": "…",
     "details": {…the fit, its residuals…}}

``S_bytes`` is ``null`` when no protocol switch was visible (every message eager); ``g_ns``
(LogGP's gap per message, from a burst of small messages) is 0 when absent (older profiles).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llamp.config import llamp_home
from llamp.errors import InputError
from llamp.injector.calibrate import NO_SWITCH_S
from llamp.params import LogGPS

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class NetworkProfile:
    """A named LogGPS configuration and where it came from."""

    name: str
    params: LogGPS
    source: str = ""
    created: str = ""
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def times(self) -> list[tuple[int, float, float]] | None:
        """The measured (bytes, one-way ns, MPI_Send ns) of a calibrated profile, else None."""
        rows = self.details.get("residuals") if isinstance(self.details, dict) else None
        try:
            return [(int(r["size_bytes"]), float(r["one_way_ns"]), float(r["os_ns"])) for r in rows]
        except (TypeError, KeyError, ValueError):
            return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "L_ns": self.params.L,
            "o_ns": self.params.o,
            "G_ns_per_byte": self.params.G,
            "S_bytes": None if self.params.S >= NO_SWITCH_S else self.params.S,
            "g_ns": self.params.g,
            "source": self.source,
            "created": self.created,
            "details": self.details,
        }


def profiles_dir(home: Path | None = None) -> Path:
    """``$LLAMP_HOME/networks``."""
    return (home or llamp_home()) / "networks"


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InputError(
            f"invalid network name {name!r}: letters, digits, '.', '_' or '-' (at most 64, "
            "starting with a letter or digit)"
        )
    return name


def profile_path(name: str, home: Path | None = None) -> Path:
    return profiles_dir(home) / f"{_check_name(name)}.json"


def save_profile(
    name: str,
    params: LogGPS,
    *,
    source: str = "",
    details: dict[str, Any] | None = None,
    home: Path | None = None,
) -> Path:
    """Write (or replace) profile ``name``; its path. Written atomically."""
    profile = NetworkProfile(
        name=_check_name(name),
        params=params,
        source=source,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        details=details or {},
    )
    path = profile_path(name, home)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(profile.as_dict(), indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)
    return path


def _from_dict(data: dict[str, Any], where: str) -> NetworkProfile:
    try:
        S = data.get("S_bytes")
        params = LogGPS(
            L=float(data["L_ns"]),
            o=float(data["o_ns"]),
            G=float(data["G_ns_per_byte"]),
            S=NO_SWITCH_S if S is None else int(S),
            g=float(data.get("g_ns") or 0.0),
        )
        return NetworkProfile(
            name=str(data["name"]),
            params=params,
            source=str(data.get("source", "")),
            created=str(data.get("created", "")),
            details=dict(data.get("details") or {}),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(f"{where}: not a network profile ({err})") from err


def load_profile(name: str, home: Path | None = None) -> NetworkProfile:
    """Profile ``name``; an :class:`InputError` naming the known ones if there is none."""
    path = profile_path(name, home)
    if not path.is_file():
        known = ", ".join(p.name for p in list_profiles(home)) or "none yet"
        from llamp.lp.classify import NETWORKS

        target = next((key for key in NETWORKS if key.lower() == name.lower()), None)
        hint = (
            f"; {target} is a target network of `llamp classify --target`, not a profile"
            if target
            else ""
        )
        raise InputError(
            f"no network profile {name!r} in {profiles_dir(home)} (known: {known}); create one "
            f"with: llamp calibrate --save {name} -- mpirun -n 2{hint}"
        )
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: unreadable network profile ({err})") from err
    return _from_dict(data, str(path))


def list_profiles(home: Path | None = None) -> list[NetworkProfile]:
    """Every readable profile, by name."""
    out = []
    directory = profiles_dir(home)
    if directory.is_dir():
        for path in sorted(directory.glob("*.json")):
            try:
                out.append(_from_dict(json.loads(path.read_text()), str(path)))
            except (InputError, json.JSONDecodeError):
                continue
    return out


def delete_profile(name: str, home: Path | None = None) -> None:
    path = profile_path(name, home)
    if not path.is_file():
        raise InputError(f"no network profile {name!r} in {profiles_dir(home)}")
    path.unlink()


def resolve_params(
    network: str | None = None,
    *,
    L: str | float | None = None,
    o: str | float | None = None,
    G: str | float | None = None,
    S: str | int | None = None,
    g: str | float | None = None,
    progress: str | None = None,
    nic: str | None = None,
    order: str | None = None,
    rendezvous: str | None = None,
    home: Path | None = None,
) -> LogGPS:
    """LogGPS from ``--network NAME`` (if given) with ``--L/--o/--G/--S/--g`` and the model
    choices overriding it; the defaults of :class:`LogGPS` without a network."""
    base = load_profile(network, home).params if network else None
    return LogGPS.parse(
        L=L,
        o=o,
        G=G,
        S=S,
        base=base,
        g=g,
        progress=progress,
        nic=nic,
        order=order,
        rendezvous=rendezvous,
    )
