"""Software latency injector, LogGP calibration and validation harness (docs/architecture.md §Injector and validation).

- :mod:`llamp.injector.compiled`: builds and caches the C programs with the ``mpicc`` found;
- :mod:`llamp.injector.inject`: runs an MPI command with ΔL added to every message at the
  receiver (a PMPI library, ``inject_*.c``; LLAMP §III-A, Fig. 8D);
- :mod:`llamp.injector.calibrate`: a Netgauge-like LogGP(S) fit from a ping-pong;
- :mod:`llamp.injector.profiles`: named network profiles in ``$LLAMP_HOME/networks``;
- :mod:`llamp.injector.overhead`: the injector's and the tracer's own per-call costs, and
  charging a per-call cost in the model;
- :mod:`llamp.injector.accuracy`: the mean's interval and the stopping rule, the offset at
  ΔL = 0 and the slope error of a validation;
- :mod:`llamp.injector.validate`: predicted vs measured runtime over a list of ΔL, RRMSE.
"""

from llamp.injector.calibrate import Calibration, PingPongSample, calibrate, fit_loggp
from llamp.injector.compiled import InjectorError
from llamp.injector.inject import InjectedRun, run_injected
from llamp.injector.profiles import (
    NetworkProfile,
    list_profiles,
    load_profile,
    resolve_params,
    save_profile,
)
from llamp.injector.validate import Validation, ValidationPoint, rrmse, run_validation

__all__ = [
    "Calibration",
    "InjectedRun",
    "InjectorError",
    "NetworkProfile",
    "PingPongSample",
    "Validation",
    "ValidationPoint",
    "calibrate",
    "fit_loggp",
    "list_profiles",
    "load_profile",
    "resolve_params",
    "rrmse",
    "run_injected",
    "run_validation",
    "save_profile",
]
