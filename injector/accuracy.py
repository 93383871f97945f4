"""Which part of a prediction is off: the statistics ``llamp validate`` reports beside RRMSE.

A validation compares, for every ΔL, the predicted ``T(L0 + ΔL)`` with repeated measured runs.
RRMSE mixes two different failures, which this module separates:

- the **offset at ΔL = 0**: ``mean(T_meas(0)) − T_pred(0)``, absolute and relative, with the
  95 % interval of the measured mean (Student's t, ``n − 1`` degrees of freedom). An offset
  outside that interval is a cost the run has and the trace does not (the injector's or the
  tracer's per-call cost, a different binary, other processes) — independent of the latency;
- the **slope error**: the least-squares slope ``dT/dΔL`` of every measured run against its
  ΔL (ordinary least squares over the individual runs, so its standard error comes from the
  run-to-run scatter and from how far the measured curve is from a line), against the same
  fit of the predictions. A slope error is a latency sensitivity the model does not see
  (or sees too much of): the protocol, the transport's progress, where the injector delays.

The **stopping rule** of a measurement (:func:`interval_converged`): repeat until the 95 %
interval of the mean is narrower than a given fraction of the mean (the full width,
``2·t·sd/√n``, default 1 %), or a maximum number of runs is reached.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

#: Confidence level of every interval reported.
LEVEL = 0.95
#: Default full width of the mean's 95 % interval, as a fraction of the mean, at which
#: repeated measurement stops.
DEFAULT_WIDTH = 0.01


@dataclass(frozen=True)
class MeanInterval:
    """Mean of ``n`` runs and the half-width of its 95 % interval (``nan`` for one run)."""

    mean: float
    half_width: float
    n: int

    @property
    def relative_width(self) -> float:
        """Full interval width over the mean (``inf`` when it cannot be computed)."""
        if self.n < 2 or not math.isfinite(self.half_width) or self.mean == 0:
            return math.inf
        return 2.0 * self.half_width / abs(self.mean)


def mean_interval(values: Sequence[float], level: float = LEVEL) -> MeanInterval:
    """Mean and Student-t half-width ``t_{(1+level)/2, n−1} · sd / √n`` of ``values``."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("a mean needs at least one value")
    if x.size < 2:
        return MeanInterval(float(x[0]), math.nan, 1)
    sd = float(np.std(x, ddof=1))
    t = float(stats.t.ppf(0.5 + level / 2.0, x.size - 1))
    return MeanInterval(float(x.mean()), t * sd / math.sqrt(x.size), int(x.size))


def interval_converged(
    values: Sequence[float],
    *,
    width: float = DEFAULT_WIDTH,
    min_runs: int = 3,
    max_runs: int = 30,
) -> bool:
    """The stopping rule: at least ``min_runs`` and either the 95 % interval of the mean is at
    most ``width`` of the mean (full width), or ``max_runs`` are reached."""
    n = len(values)
    if n < max(min_runs, 2):
        return False
    if n >= max_runs:
        return True
    return mean_interval(values).relative_width <= width


@dataclass(frozen=True)
class Offset:
    """Measured − predicted at ΔL = 0."""

    measured_ns: float
    half_width_ns: float  # of the measured mean's 95 % interval (nan for one run)
    predicted_ns: float
    runs: int

    @property
    def offset_ns(self) -> float:
        return self.measured_ns - self.predicted_ns

    @property
    def relative(self) -> float:
        """Offset over the measured mean (a fraction)."""
        return self.offset_ns / self.measured_ns

    @property
    def within_noise(self) -> bool | None:
        """Whether the prediction lies inside the measured mean's 95 % interval (``None``
        with a single run: no interval)."""
        if not math.isfinite(self.half_width_ns):
            return None
        return abs(self.offset_ns) <= self.half_width_ns

    def as_dict(self) -> dict[str, float | int | bool | None]:
        return {
            "measured_ns": self.measured_ns,
            "ci95_half_width_ns": self.half_width_ns,
            "predicted_ns": self.predicted_ns,
            "offset_ns": self.offset_ns,
            "offset_relative": self.relative,
            "runs": self.runs,
            "within_noise": self.within_noise,
        }


def offset_at_zero(runs_ns: Sequence[float], predicted_ns: float) -> Offset:
    """The offset of the runs at ΔL = 0 against the prediction there."""
    interval = mean_interval(runs_ns)
    return Offset(interval.mean, interval.half_width, float(predicted_ns), interval.n)


@dataclass(frozen=True)
class SlopeError:
    """Measured vs predicted ``dT/dΔL`` (dimensionless: ns of runtime per ns of latency)."""

    measured: float
    standard_error: float  # of the measured slope (nan when the fit has no residual freedom)
    predicted: float
    runs: int

    @property
    def error(self) -> float:
        """Predicted − measured slope."""
        return self.predicted - self.measured

    @property
    def relative(self) -> float:
        """Slope error over the measured slope (``nan`` for a flat measured curve)."""
        return self.error / self.measured if self.measured != 0 else math.nan

    @property
    def within_noise(self) -> bool | None:
        """Whether the predicted slope lies inside the measured slope's 95 % interval."""
        if not math.isfinite(self.standard_error):
            return None
        t = float(stats.t.ppf(0.5 + LEVEL / 2.0, self.runs - 2))
        return abs(self.error) <= t * self.standard_error

    def as_dict(self) -> dict[str, float | int | bool | None]:
        return {
            "measured": self.measured,
            "standard_error": self.standard_error,
            "predicted": self.predicted,
            "error": self.error,
            "error_relative": self.relative,
            "runs": self.runs,
            "within_noise": self.within_noise,
        }


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(slope, its standard error) of the least-squares line through (x, y)."""
    xm = x - x.mean()
    sxx = float(xm @ xm)
    slope = float(xm @ (y - y.mean())) / sxx
    dof = x.size - 2
    if dof <= 0:
        return slope, math.nan
    resid = y - y.mean() - slope * xm
    return slope, math.sqrt(float(resid @ resid) / dof / sxx)


def slope_error(
    deltas_ns: Sequence[float],
    runs_ns: Sequence[Sequence[float]],
    predicted_ns: Sequence[float],
) -> SlopeError:
    """Least-squares ``dT/dΔL`` of every measured run against its ΔL, and of the predictions
    (one per ΔL); needs at least two distinct ΔL."""
    d = np.asarray(deltas_ns, dtype=np.float64)
    if d.size != len(runs_ns) or d.size != len(predicted_ns):
        raise ValueError("one list of runs and one prediction per ΔL")
    if np.unique(d).size < 2:
        raise ValueError("a slope needs at least two distinct ΔL")
    x = np.concatenate([np.full(len(r), v) for v, r in zip(d, runs_ns, strict=True)])
    y = np.concatenate([np.asarray(r, dtype=np.float64) for r in runs_ns])
    measured, se = _ols(x, y)
    predicted, _ = _ols(d, np.asarray(predicted_ns, dtype=np.float64))
    return SlopeError(measured, se, predicted, int(y.size))
