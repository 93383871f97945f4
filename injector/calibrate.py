"""LogGP calibration from a ping-pong: ``llamp calibrate [--save NAME] -- mpirun -n 2 …``.

A Netgauge-like fit (Hoefler et al., "Netgauge", HPCC'07; LLAMP §III measures L, G, S with it)
of the LogGPS parameters of docs/model.md §Cost semantics to ``llamp-pingpong`` (``pingpong.c``), which measures
for each size ``s`` (1 B … 4 MiB by default) the blocking round trip ``RTT(s)``, the send
overhead ``o_s(s)`` (duration of ``MPI_Send`` while the receiver waits) and the receive overhead
``o_r(s)`` (duration of ``MPI_Recv`` of a message that arrived long before):

- ``o`` = the mean of the median ``o_s`` and the median ``o_r`` over small messages (≤ 256 B);
- the one-way time ``y(s) = RTT(s)/2`` (lower quartile of the round trips: other processes
  only ever add time) is, in LogGPS, ``2o + L + (s−1)G`` for an eager message and
  ``4o + 3L + (s−1)G`` for a rendezvous one (RTS, CTS, data: §3.1), so a protocol switch is a
  jump of the intercept. Each pair of consecutive sizes defines a line; its intercept is
  constant along a straight stretch, jumps up at a switch, and falls where caches make the
  curve bend upward. ``S`` is the size before the largest rise (relative to the one-way time)
  of the median intercept of up to 4 pairs after a boundary over that of up to 4 pairs before
  it, where the pair across the boundary is steeper than both sides and the intercept rises
  by at least half (no switch otherwise: every message is eager);
- ``G`` = the median slope of consecutive pairs beyond the switch (without a switch: of the
  pairs ≥ 64 KiB), "the slope over large messages", robust to a few disturbed sizes;
- ``L`` = ``y`` of the smallest message minus the overheads: ``y(s_min) − 2o − (s_min−1)·G_small``
  (clamped at 0, with a warning: on shared memory the receive overhead measured on an arrived
  message can exceed what a waiting receiver pays);
- ``g`` (LogGP's gap per message, the NIC model ``serial``'s message rate): rank 0 sends a
  burst of ``B`` one-byte messages back to back and waits for one ack; the burst takes
  ``T(B) = T(1) + (B−1)·max(o, g)`` (lower quartiles), so ``g = (T(B) − T(1)) / (B−1)``: the
  time between two messages a sender can inject. Where the CPU is the limit (``g ≤ o``) this
  is ≈ o, and the model's ``max(o, g)`` is the same either way.

Residuals (measured − model, per size) come with the fit, so a reader sees where LogGPS does
not describe the machine (caches, protocol details), and per parameter
(:meth:`Calibration.parameter_residuals`): the RMS relative residual of the measurements each
parameter rests on — ``L`` the small eager messages, ``G`` the sizes its slope is taken over,
``S`` the sizes on both sides of the switch, ``o`` the per-size send and receive overheads about
their mean, ``g`` the burst times about their line (three or more burst lengths). Each fit
records what it was measured on (:func:`measured_on`: the MPI library, the launcher, the hosts
or hostfile and the transport selection), so a validation can say which transport its
parameters describe.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shlex
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from llamp.errors import InputError
from llamp.injector.compiled import InjectorError, build_library, build_pingpong
from llamp.injector.inject import injector_variables, launch_command
from llamp.params import LogGPS

DEFAULT_SIZES: tuple[int, ...] = tuple(1 << k for k in range(23))  # 1 B … 4 MiB
SMALL_BYTES = 256
LARGE_BYTES = 64 * 1024
#: S of a network without a visible protocol switch: every message is eager.
NO_SWITCH_S = 1 << 62
#: Pairs of consecutive sizes on each side of a candidate switch.
WINDOW = 4
#: The intercept must rise by this fraction of its value before the switch (and by 10 % of
#: the one-way time there).
MIN_JUMP = 0.5


@dataclass(frozen=True)
class PingPongSample:
    """One message size (ns): round trip (lower quartile), send and receive overhead (medians)."""

    size: int
    rtt_ns: float
    os_ns: float
    or_ns: float
    samples: int = 0
    rtt_min_ns: float | None = None

    @property
    def one_way_ns(self) -> float:
        return self.rtt_ns / 2.0


@dataclass(frozen=True)
class Calibration:
    """A LogGP(S) fit and what it rests on."""

    L_ns: float
    o_ns: float
    G_ns_per_byte: float
    S_bytes: int | None  # None: no protocol switch visible
    os_ns: float
    or_ns: float
    G_small_ns_per_byte: float  # slope below the switch (or over all sizes)
    jump_ns: float | None  # rise of the one-way time at the switch
    samples: tuple[PingPongSample, ...]
    warnings: tuple[str, ...] = field(default=())
    g_ns: float = 0.0  # gap per message from the burst (0 without burst data)
    burst_ns: dict[int, float] = field(default_factory=dict)  # burst length → time
    measured_on: dict[str, Any] = field(default_factory=dict)  # see :func:`measured_on`

    def brief(self) -> dict[str, Any]:
        """L, o, G and S of the fit (one round of several: what a table lists per round)."""
        return {
            "L_ns": self.L_ns,
            "o_ns": self.o_ns,
            "G_ns_per_byte": self.G_ns_per_byte,
            "S_bytes": self.S_bytes,
        }

    def params(self) -> LogGPS:
        """The fit as LogGPS parameters (no switch → every message eager)."""
        return LogGPS(
            L=self.L_ns,
            o=self.o_ns,
            G=self.G_ns_per_byte,
            S=self.S_bytes if self.S_bytes is not None else NO_SWITCH_S,
            g=self.g_ns,
        )

    def residuals(self) -> pd.DataFrame:
        """Per size: measured one-way time, the LogGPS model's, and the difference."""
        sizes = np.array([s.size for s in self.samples], dtype=np.int64)
        measured = np.array([s.one_way_ns for s in self.samples])
        p = self.params()
        model = model_one_way_ns(sizes, p.L, p.o, p.G, p.S)
        return pd.DataFrame(
            {
                "size_bytes": sizes,
                "protocol": np.where(sizes <= p.S, "eager", "rendezvous"),
                "one_way_ns": measured,
                "model_ns": model,
                "residual_ns": measured - model,
                "residual_pct": (measured - model) / measured * 100.0,
                "os_ns": [s.os_ns for s in self.samples],
                "or_ns": [s.or_ns for s in self.samples],
            }
        )

    def parameter_residuals(self) -> dict[str, dict[str, Any]]:
        """Per parameter: the RMS relative residual (%) of the measurements it rests on, how
        many there are, and which (see the module doc); ``nan`` where the fit is exact or
        there is nothing to compare."""
        res = self.residuals()
        sizes = res["size_bytes"].to_numpy()
        rel = res["residual_pct"].to_numpy()

        def rms(mask: np.ndarray) -> tuple[float, int]:
            n = int(mask.sum())
            return (float(np.sqrt(np.mean(rel[mask] ** 2))) if n else math.nan), n

        small = sizes <= SMALL_BYTES
        if self.S_bytes is not None:
            k = int(np.searchsorted(sizes, self.S_bytes))
            window = np.zeros(sizes.size, bool)
            window[max(0, k - WINDOW + 1) : k + 1 + WINDOW] = True
            slope = sizes > self.S_bytes
        else:
            window = np.zeros(sizes.size, bool)
            slope = sizes >= LARGE_BYTES
            if slope.sum() < 3:
                slope = np.ones(sizes.size, bool)
        o_small = np.array(
            [[s.os_ns, s.or_ns] for s in self.samples if s.size <= SMALL_BYTES] or [[np.nan] * 2]
        )
        o_dev = (o_small - self.o_ns) / self.o_ns * 100.0 if self.o_ns > 0 else o_small * np.nan
        g_rms, g_n = math.nan, len(self.burst_ns)
        if g_n >= 3:
            b = np.array(sorted(self.burst_ns), dtype=np.float64)
            t = np.array([self.burst_ns[int(k)] for k in b])
            line = t[0] + (b - b[0]) * self.g_ns
            g_rms = float(np.sqrt(np.mean(((t - line) / t * 100.0) ** 2)))
        out: dict[str, dict[str, Any]] = {}
        for name, (value, n), basis in (
            ("L", rms(small), f"one-way time of messages ≤ {SMALL_BYTES} B"),
            (
                "o",
                (float(np.sqrt(np.nanmean(o_dev**2))), int(np.isfinite(o_dev).sum())),
                f"o_s and o_r of messages ≤ {SMALL_BYTES} B about o",
            ),
            ("G", rms(slope), "one-way time of the sizes the slope is taken over"),
            (
                "S",
                rms(window) if self.S_bytes is not None else (math.nan, 0),
                f"one-way time of up to {WINDOW} sizes each side of S"
                if self.S_bytes is not None
                else "no protocol switch visible",
            ),
            ("g", (g_rms, g_n), "burst times about T(1) + (B − 1)·g"),
        ):
            out[name] = {"rms_residual_pct": value, "measurements": n, "basis": basis}
        return out

    def times(self) -> list[tuple[int, float, float]]:
        """Measured (bytes, one-way ns, MPI_Send ns) per size, for the injector's arrival
        estimates (``LLAMP_INJECT_TIMES``)."""
        return [(s.size, s.one_way_ns, s.os_ns) for s in self.samples]

    def as_dict(self) -> dict[str, Any]:
        res = self.residuals()
        return {
            "L_ns": self.L_ns,
            "o_ns": self.o_ns,
            "G_ns_per_byte": self.G_ns_per_byte,
            "S_bytes": self.S_bytes,
            "g_ns": self.g_ns,
            "burst_ns": {str(k): v for k, v in sorted(self.burst_ns.items())},
            "os_ns": self.os_ns,
            "or_ns": self.or_ns,
            "G_small_ns_per_byte": self.G_small_ns_per_byte,
            "jump_ns": self.jump_ns,
            "rms_residual_pct": float(np.sqrt(np.mean(res["residual_pct"] ** 2))),
            "parameter_residuals": self.parameter_residuals(),
            "measured_on": dict(self.measured_on),
            "warnings": list(self.warnings),
            "residuals": res.to_dict(orient="records"),
        }


def model_one_way_ns(
    sizes: np.ndarray | Sequence[int], L: float, o: float, G: float, S: int = NO_SWITCH_S
) -> np.ndarray:
    """Half the round trip of a blocking LogGPS ping-pong (docs/model.md §Cost semantics): ``2o + L + (s−1)G``
    eager, ``4o + 3L + (s−1)G`` rendezvous (``s > S``)."""
    s = np.asarray(sizes, dtype=np.float64)
    wire = np.maximum(s - 1.0, 0.0) * G
    return np.where(s <= S, 2 * o + L + wire, 4 * o + 3 * L + wire)


def _switch(x: np.ndarray, y: np.ndarray) -> tuple[int, float] | None:
    """(index k of the last eager size, intercept rise) of the protocol switch, if any."""
    slope = np.diff(y) / np.diff(x)
    icpt = y[:-1] - slope * x[:-1]  # intercept of the line through sizes k and k+1
    best: tuple[int, float] | None = None
    for k in range(1, len(icpt) - 1):  # pair k straddles the boundary between k and k+1
        before = icpt[max(0, k - WINDOW) : k]
        after = icpt[k + 1 : k + 1 + WINDOW]
        lo, hi = float(np.median(before)), float(np.median(after))
        rise = hi - lo
        if rise < MIN_JUMP * max(lo, 0.0) or rise < 0.1 * y[k]:
            continue
        if icpt[k] > lo - 0.5 * rise:  # the pair across a jump is steeper than both sides
            continue
        if best is None or rise / y[k] > best[1] / y[best[0]]:
            best = (k, rise)
    return best


def _median_slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.median(np.diff(y) / np.diff(x))) if len(x) >= 2 else 0.0


def fit_gap(burst_ns: dict[int, float]) -> float:
    """LogGP's g from burst times: ``(T(B) − T(1)) / (B − 1)`` (0 without two bursts)."""
    if len(burst_ns) < 2:
        return 0.0
    lo, hi = min(burst_ns), max(burst_ns)
    return max((burst_ns[hi] - burst_ns[lo]) / (hi - lo), 0.0)


def fit_loggp(
    samples: Sequence[PingPongSample], burst_ns: dict[int, float] | None = None
) -> Calibration:
    """Fit L, o, G (and S if a switch is visible) to ping-pong medians, and g to the burst
    times if given (see the module doc)."""
    pts = sorted(samples, key=lambda s: s.size)
    if len(pts) < 4:
        raise InputError(f"a LogGP fit needs at least 4 message sizes, got {len(pts)}")
    if len({p.size for p in pts}) != len(pts):
        raise InputError("ping-pong samples repeat a message size")
    sizes = np.array([p.size for p in pts], dtype=np.float64)
    y = np.array([p.one_way_ns for p in pts])
    if np.any(y <= 0):
        raise InputError("ping-pong round trips must be positive")
    x = sizes - 1.0
    warnings: list[str] = []

    small = sizes <= SMALL_BYTES
    if not small.any():
        small[0] = True
        warnings.append(f"no message ≤ {SMALL_BYTES} B: o taken from the smallest size")
    os_ns = float(np.median([p.os_ns for p, k in zip(pts, small, strict=True) if k]))
    or_ns = float(np.median([p.or_ns for p, k in zip(pts, small, strict=True) if k]))
    o = (os_ns + or_ns) / 2.0

    found = _switch(x, y)
    if found is not None:
        k, jump = found
        S: int | None = int(sizes[k])
        jump_ns: float | None = jump
        g_small = _median_slope(x[: k + 1], y[: k + 1])
        G = _median_slope(x[k + 1 :], y[k + 1 :])
    else:
        S, jump_ns = None, None
        g_small = _median_slope(x, y)
        large = sizes >= LARGE_BYTES
        G = _median_slope(x[large], y[large]) if large.sum() >= 3 else g_small
    if G < 0:
        warnings.append(f"negative slope {G:.4g} ns/B over large messages: G set to 0")
        G = 0.0
    L = float(y[0] - 2.0 * o - x[0] * max(g_small, 0.0))
    if L < 0:
        warnings.append(
            f"one-way time of {int(sizes[0])} B ({y[0]:.1f} ns) is below 2o = {2 * o:.1f} ns: "
            "L set to 0"
        )
        L = 0.0
    return Calibration(
        L_ns=L,
        o_ns=o,
        G_ns_per_byte=float(G),
        S_bytes=S,
        os_ns=os_ns,
        or_ns=or_ns,
        G_small_ns_per_byte=float(g_small),
        jump_ns=jump_ns,
        samples=tuple(pts),
        warnings=tuple(warnings),
        g_ns=fit_gap(burst_ns or {}),
        burst_ns=dict(burst_ns or {}),
    )


def parse_bursts(text: str) -> dict[int, float]:
    """Burst length → time (ns) from the ``{"burst": …}`` lines ``llamp-pingpong`` prints."""
    out: dict[int, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith('{"burst"'):
            try:
                rec = json.loads(line)
                out[int(rec["burst"])] = float(rec["time_ns"])
            except (KeyError, ValueError, json.JSONDecodeError) as err:
                raise InjectorError(f"unreadable ping-pong burst line {line!r}: {err}") from err
    return out


def parse_pingpong(text: str) -> list[PingPongSample]:
    """The JSON lines ``llamp-pingpong`` prints, as samples."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{") or line.startswith('{"burst"'):
            continue
        try:
            rec = json.loads(line)
            out.append(
                PingPongSample(
                    size=int(rec["size"]),
                    rtt_ns=float(rec.get("rtt_q1_ns", rec["rtt_ns"])),
                    os_ns=float(rec["os_ns"]),
                    or_ns=float(rec["or_ns"]),
                    samples=int(rec.get("samples", 0)),
                    rtt_min_ns=float(rec["rtt_min_ns"]) if "rtt_min_ns" in rec else None,
                )
            )
        except (KeyError, ValueError, json.JSONDecodeError) as err:
            raise InjectorError(f"unreadable ping-pong output line {line!r}: {err}") from err
    return out


def run_pingpong(
    launcher: Sequence[str],
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    iters: int = 400,
    mpicc: str | None = None,
    injected: bool = False,
    env: dict[str, str] | None = None,
    timeout: float | None = 600.0,
    log=None,
    bursts: dict[int, float] | None = None,
) -> list[PingPongSample]:
    """Run ``llamp-pingpong`` under ``launcher`` (e.g. ``mpirun -n 2``).

    With ``injected`` the ping-pong runs under the injector at ΔL = 0, so the fit includes
    the injector's own per-message cost (the header of each message). The burst times (for
    g) are put into ``bursts`` when a dict is given.
    """
    if not launcher:
        raise InputError(
            "give the launcher to run the ping-pong with: llamp calibrate -- mpirun -n 2"
        )
    if iters < 1 or any(s < 0 for s in sizes):
        raise InputError("ping-pong iterations must be ≥ 1 and sizes ≥ 0")
    program, mpi = build_pingpong(mpicc, log=log)
    argv = [*launcher, str(program), "-s", ",".join(str(int(s)) for s in sizes), "-n", str(iters)]
    run_env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="llamp-calibrate-") as tmp:
        if injected:
            library, _ = build_library(mpicc, log=log)
            argv, run_env = launch_command(
                argv, library, injector_variables(0.0, None, Path(tmp)), mpi
            )
        if env:
            run_env.update(env)
        try:
            out = subprocess.run(
                argv, capture_output=True, text=True, env=run_env, timeout=timeout, check=False
            )
        except FileNotFoundError as err:
            raise InjectorError(f"cannot run {argv[0]!r}: {err.strerror}") from err
        except subprocess.TimeoutExpired as err:
            raise InjectorError(f"the ping-pong did not finish in {timeout} s") from err
    if out.returncode != 0:
        raise InjectorError(
            f"the ping-pong failed (exit code {out.returncode}): {shlex.join(argv)}\n"
            f"{(out.stderr or out.stdout).strip()[-2000:]}"
        )
    found = parse_pingpong(out.stdout)
    if len(found) != len(sizes):
        raise InjectorError(
            f"the ping-pong reported {len(found)} of {len(sizes)} sizes: {shlex.join(argv)}\n"
            f"{out.stdout.strip()[-2000:]}"
        )
    if bursts is not None:
        bursts.update(parse_bursts(out.stdout))
    return found


_HOST_OPTIONS = ("--hostfile", "-hostfile", "--machinefile", "-machinefile", "-f")
_HOSTS_OPTIONS = ("--host", "-host", "-H", "--hosts", "-hosts")


def measured_on(launcher: Sequence[str], mpi_label: str = "") -> dict[str, Any]:
    """What a calibration describes: the MPI library, the launcher, the node it ran from, the
    hosts (``--host``) or hostfile (path and SHA-256 of its contents), the transport selection
    (``--mca`` options and ``OMPI_MCA_*`` / ``FI_*`` / ``UCX_*`` / ``I_MPI_FABRICS``
    variables), and a one-line transport description derived from them."""
    argv = [str(a) for a in launcher]
    hostfile = hosts = None
    mca: dict[str, str] = {}
    for k, word in enumerate(argv[:-1]):
        if word in _HOST_OPTIONS:
            hostfile = argv[k + 1]
        elif word in _HOSTS_OPTIONS:
            hosts = argv[k + 1]
        elif word in ("--mca", "-mca", "--gmca", "-gmca") and k + 2 < len(argv):
            mca[argv[k + 1]] = argv[k + 2]
    prefixes = ("OMPI_MCA_", "FI_", "UCX_", "I_MPI_FABRICS", "MPIR_CVAR_CH4_NETMOD")
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith(prefixes)}
    env_mca = {k[len("OMPI_MCA_") :]: v for k, v in env.items() if k.startswith("OMPI_MCA_")}
    selection = env_mca | mca  # the command line wins over the environment
    out: dict[str, Any] = {
        "mpi": mpi_label,
        "launcher": argv,
        "node": socket.gethostname(),
        "hosts": hosts,
        "hostfile": None,
        "transport_selection": selection,
        "transport_environment": env,
    }
    if hostfile is not None:
        path = Path(hostfile)
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        out["hostfile"] = {"path": str(path.resolve()), "sha256": digest}
    names = {h.split(":")[0] for h in (hosts or "").split(",") if h}
    chosen = ", ".join(f"{k}={v}" for k, v in selection.items() if k in ("pml", "btl", "mtl"))
    if chosen:
        where = f"selected {chosen}"
    elif hostfile is not None or len(names) > 1:
        where = "several hosts: the MPI library's default inter-node transport"
    else:
        where = "one node: the MPI library's default intra-node transport (shared memory)"
    out["transport"] = where
    return out


def combine(calibrations: Sequence[Calibration]) -> Calibration:
    """One fit from several calibrations of the same transport: per message size the median
    round trip and overheads over them (per burst length the median time), fitted again.

    A virtual machine's speed drifts: one calibration can catch a minute in which every
    message costs several times its usual time (a 1 MiB one-way time of 566 µs against
    96–126 µs in the other calibrations of a day), and ``G`` rests on those sizes. The median
    of calibrations spread over a measurement is the machine of most of it."""
    if not calibrations:
        raise InputError("no calibration to combine")
    if len(calibrations) == 1:
        return calibrations[0]
    by_size = [sorted(c.samples, key=lambda s: s.size) for c in calibrations]
    if len({tuple(s.size for s in samples) for samples in by_size}) != 1:
        raise InputError("calibrations to combine must measure the same message sizes")
    samples = [
        PingPongSample(
            size=group[0].size,
            rtt_ns=float(np.median([s.rtt_ns for s in group])),
            os_ns=float(np.median([s.os_ns for s in group])),
            or_ns=float(np.median([s.or_ns for s in group])),
            samples=sum(s.samples for s in group),
        )
        for group in zip(*by_size, strict=True)
    ]
    lengths = set.intersection(*(set(c.burst_ns) for c in calibrations))
    bursts = {n: float(np.median([c.burst_ns[n] for c in calibrations])) for n in sorted(lengths)}
    fit = fit_loggp(samples, bursts)
    on = dict(calibrations[0].measured_on) | {"calibrations": len(calibrations)}
    return dataclasses.replace(fit, measured_on=on)


def calibrate(launcher: Sequence[str], **kw) -> Calibration:
    """Ping-pong under ``launcher`` and fit L, o, G, S and g (``kw`` as :func:`run_pingpong`);
    the fit records what it was measured on (:func:`measured_on`)."""
    bursts: dict[int, float] = {}
    samples = run_pingpong(launcher, bursts=bursts, **kw)
    _, mpi = build_pingpong(kw.get("mpicc"), log=kw.get("log"))
    fit = fit_loggp(samples, bursts)
    on = measured_on(launcher, mpi.label) | {"injected": bool(kw.get("injected", False))}
    return dataclasses.replace(fit, measured_on=on)
