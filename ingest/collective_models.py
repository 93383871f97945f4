"""Analytic cost models of MPI collectives: Dimemas fan-in/fan-out and Thakur–Gropp formulas.

llamp normally expands a collective into the point-to-point messages of a concrete algorithm
(:mod:`llamp.ingest.collectives`). The alternative modelled here charges a collective instance
one analytic cost once all members have entered it (a synchronising collective vertex; the graph
extension this needs is described in :func:`instance_costs`). Every cost is affine in the
network parameters, so it fits the LLAMP linear program unchanged::

    cost = latency_terms · L + byte_terms · G + compute_bytes · γ

``L`` is the latency and ``G`` the gap per byte (the Hockney α and β = 1/bandwidth of the
papers), ``γ`` the per-byte reduction cost of Thakur et al. (0 unless given).

**Dimemas** (Girona, Labarta & Badia, "Validation of Dimemas communication model for MPI
collective operations", EuroPVM/MPI 2000, §3.1, Eq. 2–4, Tables 1–3)::

    T = FAN_IN + FAN_OUT,   FAN_IN = (L + SIZE_IN · G) · MODEL_IN_FACTOR

with ``MODEL_IN`` ∈ {0, CT, LIN, LOG} giving the factor 0, 1, ``P`` or ``Nsteps`` (Table 1),
``Nsteps = Σ_{i=1}^{⌈log2 P⌉} ⌈C_i / buses⌉`` (Eq. 4) where ``C_i = min(2^{i−1}, P − 2^{i−1})``
is the number of simultaneous transfers in phase ``i`` of a binomial tree (``Nsteps = ⌈log2 P⌉``
with unlimited buses), and ``SIZE_IN`` ∈ {MAX, MIN, MEAN, 2MAX, S+R} computed from the bytes the
root sends ``s`` and receives ``r`` (Table 2; Dimemas' source defines them as max(s, r),
min(s, r), (s + r)/2, 2·max(s, r), s + r). The fan-out phase is the same with ``MODEL_OUT`` and
``SIZE_OUT``. :data:`DIMEMAS_TABLE3` holds the per-operation parameters the paper found.

**Thakur–Gropp** (Thakur, Rabenseifner & Gropp, "Optimization of collective communication
operations in MPICH", IJHPCA 19(1), 2005, §4; the ring allreduce from Patarasuk & Yuan 2009;
used by Tong et al.'s classification tool, §III-B): see :data:`THAKUR_GROPP` for each formula.
``n`` is the message size in bytes as the paper defines it per operation (:func:`thakur_gropp`).
The paper's formulas are for a power-of-two ``p``; for other ``p`` the recursive-doubling and
Rabenseifner allreduce and the recursive-halving reduce-scatter use MPICH's fold
(``p' = 2^⌊log2 p⌋``, one extra step of ``n`` bytes before and one after), exactly as the
expanded schedules of :mod:`llamp.ingest.collectives` do. The formulas count synchronous
steps: for power-of-two ``p`` their latency terms equal the latencies on the critical path of the
expanded schedule; otherwise the expansion may overlap steps (recursive doubling on ``p = 6``:
the formula's 4 steps, 3 latencies on the expanded critical path).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llamp.errors import InputError

MODELS = ("0", "CT", "LIN", "LOG")
SIZES = ("MAX", "MIN", "MEAN", "2MAX", "S+R")
_MODEL_ALIASES = {"CTE": "CT", "CONST": "CT"}
_SIZE_ALIASES = {"2*MAX": "2MAX", "SIR": "S+R"}


@dataclass(frozen=True)
class AffineCost:
    """``latency_terms · L + byte_terms · G + compute_bytes · γ`` (ns with L in ns, G in ns/B)."""

    latency_terms: float
    byte_terms: float
    compute_bytes: float = 0.0

    def at(self, L: float, G: float, gamma: float = 0.0) -> float:
        """The cost in ns at latency ``L`` (ns), gap ``G`` (ns/B) and reduction cost ``γ``."""
        return self.latency_terms * L + self.byte_terms * G + self.compute_bytes * gamma

    def __add__(self, other: AffineCost) -> AffineCost:
        return AffineCost(
            self.latency_terms + other.latency_terms,
            self.byte_terms + other.byte_terms,
            self.compute_bytes + other.compute_bytes,
        )


# ------------------------------------------------------------------------------- Dimemas
@dataclass(frozen=True)
class DimemasModel:
    """One line of a Dimemas collective configuration: fan-in and fan-out model and size."""

    model_in: str
    size_in: str
    model_out: str
    size_out: str

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("MODEL_IN", self.model_in, MODELS),
            ("SIZE_IN", self.size_in, SIZES),
            ("MODEL_OUT", self.model_out, MODELS),
            ("SIZE_OUT", self.size_out, SIZES),
        ):
            if value not in allowed:
                raise InputError(f"Dimemas {name} {value!r} is not one of {', '.join(allowed)}")

    @classmethod
    def parse(cls, model_in: str, size_in: str, model_out: str, size_out: str) -> DimemasModel:
        """Accept the spellings of the paper and of Dimemas' configuration files (CTE, 2*MAX)."""

        def model(v: str) -> str:
            v = str(v).strip().upper()
            return _MODEL_ALIASES.get(v, v)

        def size(v: str) -> str:
            v = str(v).strip().upper()
            return _SIZE_ALIASES.get(v, v)

        return cls(model(model_in), size(size_in), model(model_out), size(size_out))


#: The per-operation parameters of Girona et al., Table 3 (SGI Origin, MPICH over shared memory).
DIMEMAS_TABLE3: dict[str, DimemasModel] = {
    "barrier": DimemasModel("LIN", "MAX", "LIN", "MAX"),
    "bcast": DimemasModel("LOG", "MAX", "0", "MAX"),
    "gather": DimemasModel("LOG", "MEAN", "0", "MAX"),
    "gatherv": DimemasModel("LOG", "MEAN", "0", "MAX"),
    "scatter": DimemasModel("0", "MAX", "LOG", "MEAN"),
    "scatterv": DimemasModel("0", "MAX", "LOG", "MEAN"),
    "allgather": DimemasModel("LOG", "MEAN", "LOG", "MEAN"),
    "allgatherv": DimemasModel("LOG", "MEAN", "LOG", "MEAN"),
    "alltoall": DimemasModel("LOG", "MEAN", "LOG", "MAX"),
    "alltoallv": DimemasModel("LOG", "MEAN", "LOG", "MAX"),
    "reduce": DimemasModel("LOG", "2MAX", "0", "MAX"),
    "allreduce": DimemasModel("LOG", "2MAX", "LOG", "MAX"),
    "reduce_scatter": DimemasModel("LOG", "2MAX", "LOG", "MIN"),
    "scan": DimemasModel("LOG", "MAX", "LOG", "MAX"),
}


def _check_members(P: np.ndarray) -> np.ndarray:
    P = np.asarray(P, dtype=np.int64)
    if np.any(P < 1):
        raise InputError(f"a collective needs at least one member, got P = {int(P.min())}")
    return P


def ceil_log2(P: np.ndarray | int) -> np.ndarray:
    """``⌈log2 P⌉`` elementwise for integers ``P ≥ 1`` (exact, no floating point)."""
    P = np.asarray(P, dtype=np.int64)
    out = np.zeros(P.shape, dtype=np.int64)
    v = np.maximum(P - 1, 0)
    while np.any(v > 0):
        out += v > 0
        v = v >> 1
    return out


def nsteps(P: np.ndarray | int, buses: int | None = None) -> np.ndarray:
    """Girona et al. Eq. 4: steps of a logarithmic phase on ``P`` members with ``buses`` buses.

    ``⌈log2 P⌉`` phases; phase ``i`` (1-based) has ``C_i = min(2^{i−1}, P − 2^{i−1})``
    simultaneous transfers (a binomial tree doubling its informed members) and needs
    ``⌈C_i / buses⌉`` steps. ``buses=None``: unlimited (one step per phase).
    """
    P = _check_members(P)
    phases = ceil_log2(P)
    if buses is None:
        return phases
    if buses < 1:
        raise InputError(f"the number of buses must be at least 1, got {buses}")
    total = np.zeros(P.shape, dtype=np.int64)
    for i in range(1, int(phases.max(initial=0)) + 1):
        active = phases >= i
        c = np.minimum(1 << (i - 1), P - (1 << (i - 1)))
        total += np.where(active, -(-c // buses), 0)
    return total


def model_factor(model: str, P: np.ndarray | int, buses: int | None = None) -> np.ndarray:
    """``MODEL_IN_FACTOR`` of Table 1: 0 → 0, CT → 1, LIN → P, LOG → Nsteps."""
    P = _check_members(P)
    if model == "0":
        return np.zeros(P.shape, dtype=np.int64)
    if model == "CT":
        return np.ones(P.shape, dtype=np.int64)
    if model == "LIN":
        return P.copy()
    if model == "LOG":
        return nsteps(P, buses)
    raise InputError(f"Dimemas model {model!r} is not one of {', '.join(MODELS)}")


def size_rule(rule: str, sent: np.ndarray | float, received: np.ndarray | float) -> np.ndarray:
    """``SIZE_IN``/``SIZE_OUT`` of Table 2 from the bytes the root sends and receives."""
    s = np.asarray(sent, dtype=np.float64)
    r = np.asarray(received, dtype=np.float64)
    if np.any(s < 0) or np.any(r < 0):
        raise InputError("collective byte counts must be ≥ 0")
    if rule == "MAX":
        return np.maximum(s, r)
    if rule == "MIN":
        return np.minimum(s, r)
    if rule == "MEAN":
        return (s + r) / 2.0
    if rule == "2MAX":
        return 2.0 * np.maximum(s, r)
    if rule == "S+R":
        return s + r
    raise InputError(f"Dimemas size {rule!r} is not one of {', '.join(SIZES)}")


def dimemas(
    model: DimemasModel | str,
    P: int,
    sent_bytes: float,
    received_bytes: float,
    *,
    buses: int | None = None,
) -> AffineCost:
    """Cost of one collective under Dimemas' model (Eq. 2–3); ``model`` may name a Table 3 op."""
    frame = dimemas_costs(
        model, np.array([P]), np.array([sent_bytes]), np.array([received_bytes]), buses=buses
    )
    row = frame.iloc[0]
    return AffineCost(float(row.latency_terms), float(row.byte_terms))


def _dimemas_model(model: DimemasModel | str) -> DimemasModel:
    if isinstance(model, DimemasModel):
        return model
    if model not in DIMEMAS_TABLE3:
        raise InputError(
            f"no Dimemas parameters for collective {model!r}; known (Girona et al. Table 3): "
            f"{', '.join(DIMEMAS_TABLE3)}"
        )
    return DIMEMAS_TABLE3[model]


def dimemas_costs(
    model: DimemasModel | str,
    P: np.ndarray,
    sent_bytes: np.ndarray,
    received_bytes: np.ndarray,
    *,
    buses: int | None = None,
) -> pd.DataFrame:
    """Dimemas costs of many instances of one collective (vectorised).

    Columns: ``P``, ``sent_bytes``, ``received_bytes``, ``fan_in_factor``, ``size_in_bytes``,
    ``fan_out_factor``, ``size_out_bytes``, ``latency_terms`` (coefficient of L),
    ``byte_terms`` (coefficient of G).
    """
    m = _dimemas_model(model)
    P = _check_members(np.atleast_1d(P))
    s = np.broadcast_to(np.asarray(sent_bytes, dtype=np.float64), P.shape)
    r = np.broadcast_to(np.asarray(received_bytes, dtype=np.float64), P.shape)
    f_in = model_factor(m.model_in, P, buses)
    f_out = model_factor(m.model_out, P, buses)
    size_in = size_rule(m.size_in, s, r)
    size_out = size_rule(m.size_out, s, r)
    return pd.DataFrame(
        {
            "P": P,
            "sent_bytes": s,
            "received_bytes": r,
            "fan_in_factor": f_in,
            "size_in_bytes": size_in,
            "fan_out_factor": f_out,
            "size_out_bytes": size_out,
            "latency_terms": (f_in + f_out).astype(np.float64),
            "byte_terms": f_in * size_in + f_out * size_out,
        }
    )


# ---------------------------------------------------------------------------- Thakur–Gropp
#: (op, algorithm) → the formula and what ``n`` is, for documentation and error messages.
THAKUR_GROPP: dict[tuple[str, str], str] = {
    ("barrier", "dissemination"): "⌈lg p⌉α (n unused)",
    ("bcast", "binomial"): "⌈lg p⌉(α + nβ); n = message",
    ("bcast", "scatter_allgather"): "(lg p + p − 1)α + 2((p−1)/p)nβ; n = message",
    ("reduce", "binomial"): "⌈lg p⌉(α + nβ + nγ); n = message",
    ("reduce", "rabenseifner"): "2 lg p α + 2((p−1)/p)nβ + ((p−1)/p)nγ; n = message",
    ("allreduce", "recursive_doubling"): "lg p α + n lg p β + n lg p γ; n = message",
    ("allreduce", "rabenseifner"): "2 lg p α + 2((p−1)/p)nβ + ((p−1)/p)nγ; n = message",
    ("allreduce", "ring"): "2(p−1)α + 2((p−1)/p)nβ + ((p−1)/p)nγ; n = message",
    ("allgather", "ring"): "(p−1)α + ((p−1)/p)nβ; n = total gathered at each process",
    ("allgather", "recursive_doubling"): "lg p α + ((p−1)/p)nβ; n = total gathered",
    ("allgather", "dissemination"): "⌈lg p⌉α + ((p−1)/p)nβ (Bruck); n = total gathered",
    ("gather", "binomial"): "⌈lg p⌉α + ((p−1)/p)nβ; n = total gathered at the root",
    ("scatter", "binomial"): "⌈lg p⌉α + ((p−1)/p)nβ; n = total scattered by the root",
    ("alltoall", "bruck"): "⌈lg p⌉α + (n/2)⌈lg p⌉β; n = total sent by each process",
    ("alltoall", "pairwise"): "(p−1)α + ((p−1)/p)nβ; n = total sent by each process",
    ("reduce_scatter", "recursive_halving"): "lg p α + ((p−1)/p)nβ + ((p−1)/p)nγ; n = total",
    ("reduce_scatter", "pairwise"): "(p−1)α + ((p−1)/p)nβ + ((p−1)/p)nγ; n = total",
}


def thakur_gropp(op: str, algorithm: str, P: int, n_bytes: float) -> AffineCost:
    """Cost of one collective under the Thakur–Gropp formula of ``(op, algorithm)``.

    ``n_bytes`` is the paper's ``n`` for that operation (see :data:`THAKUR_GROPP`). Non-power-of-
    two ``P``: see the module docstring.
    """
    key = (op, algorithm)
    if key not in THAKUR_GROPP:
        known = ", ".join(f"{o}/{a}" for o, a in THAKUR_GROPP)
        raise InputError(f"no Thakur–Gropp formula for {op}/{algorithm}; known: {known}")
    if int(P) != P or P < 1:
        raise InputError(f"{op}: group size P must be an integer ≥ 1, got {P}")
    if n_bytes < 0:
        raise InputError(f"{op}: n must be ≥ 0 bytes, got {n_bytes}")
    p = int(P)
    n = float(n_bytes)
    if p == 1:
        return AffineCost(0.0, 0.0, 0.0)
    lg = int(ceil_log2(p))
    frac = (p - 1) / p
    pof2 = 1 << (p.bit_length() - 1)
    lg2 = pof2.bit_length() - 1
    fold = p != pof2  # MPICH: the r = p − p' extra members fold in first and get the result last
    if key == ("barrier", "dissemination"):
        return AffineCost(lg, 0.0)
    if key == ("bcast", "binomial"):
        return AffineCost(lg, lg * n)
    if key == ("bcast", "scatter_allgather"):
        return AffineCost(math.log2(p) + p - 1, 2 * frac * n)
    if key == ("reduce", "binomial"):
        return AffineCost(lg, lg * n, lg * n)
    if key == ("reduce", "rabenseifner"):
        return AffineCost(2 * math.log2(p), 2 * frac * n, frac * n)
    if key == ("allreduce", "recursive_doubling"):
        extra = 2 if fold else 0
        return AffineCost(lg2 + extra, (lg2 + extra) * n, (lg2 + (1 if fold else 0)) * n)
    if key == ("allreduce", "rabenseifner"):
        f = (pof2 - 1) / pof2
        extra = 2 if fold else 0
        return AffineCost(2 * lg2 + extra, 2 * f * n + extra * n, f * n + (n if fold else 0.0))
    if key == ("allreduce", "ring"):
        return AffineCost(2 * (p - 1), 2 * frac * n, frac * n)
    if key == ("allgather", "ring"):
        return AffineCost(p - 1, frac * n)
    if key == ("allgather", "recursive_doubling"):
        return AffineCost(math.log2(p), frac * n)
    if key in (("allgather", "dissemination"), ("gather", "binomial"), ("scatter", "binomial")):
        return AffineCost(lg, frac * n)
    if key == ("alltoall", "bruck"):
        return AffineCost(lg, n / 2 * lg)
    if key == ("alltoall", "pairwise"):
        return AffineCost(p - 1, frac * n)
    if key == ("reduce_scatter", "recursive_halving"):
        f = (pof2 - 1) / pof2
        if not fold:
            return AffineCost(lg2, f * n, f * n)
        # fold: the extra members hand in all n bytes, and get their n/p block back at the end
        return AffineCost(lg2 + 2, n + f * n + n / p, n + f * n)
    # ("reduce_scatter", "pairwise")
    return AffineCost(p - 1, frac * n, frac * n)


def instance_costs(
    instances: pd.DataFrame,
    *,
    model: str = "dimemas",
    algorithms: dict[str, str] | None = None,
    table: dict[str, DimemasModel] | None = None,
    buses: int | None = None,
) -> pd.DataFrame:
    """Analytic cost of every collective instance of a trace (vectorised per operation).

    ``instances`` has one row per instance with columns ``op``, ``P`` and, for Dimemas,
    ``sent_bytes``/``received_bytes`` (the root's), for Thakur–Gropp ``n_bytes``. Returns the
    frame with ``latency_terms``, ``byte_terms`` (and ``compute_bytes``) appended, so the cost of
    instance ``i`` at θ is ``latency_terms[i]·L + byte_terms[i]·G``.

    This is the cost a *synchronising collective vertex* would carry: in the event graph it
    becomes one event ``e_c`` per instance with an edge ``start(member) → e_c`` of weight 0 from
    every member's entry and an edge ``e_c → finish(member)`` of weight ``cost`` to every
    member's exit — ``finish = max(member entries) + cost`` (Tong et al. Eq. for collectives).
    """
    needed = {"op", "P"} | ({"sent_bytes", "received_bytes"} if model == "dimemas" else {"n_bytes"})
    missing = needed - set(instances.columns)
    if missing:
        raise InputError(f"collective instances lack column(s) {', '.join(sorted(missing))}")
    out = instances.copy()
    lat = np.zeros(len(out))
    byt = np.zeros(len(out))
    comp = np.zeros(len(out))
    ops = out["op"].to_numpy()
    for op in pd.unique(ops):
        rows = np.flatnonzero(ops == op)
        P = out["P"].to_numpy()[rows]
        if model == "dimemas":
            m = (table or DIMEMAS_TABLE3).get(op)
            if m is None:
                raise InputError(f"no Dimemas parameters for collective {op!r}")
            frame = dimemas_costs(
                m,
                P,
                out["sent_bytes"].to_numpy()[rows],
                out["received_bytes"].to_numpy()[rows],
                buses=buses,
            )
            lat[rows] = frame["latency_terms"].to_numpy()
            byt[rows] = frame["byte_terms"].to_numpy()
        elif model == "thakur_gropp":
            alg = (algorithms or {}).get(op, _TG_DEFAULTS.get(op))
            if alg is None:
                raise InputError(f"no Thakur–Gropp algorithm chosen for {op!r}")
            n = out["n_bytes"].to_numpy(dtype=np.float64)[rows]
            keys, inverse = np.unique(
                np.stack([P.astype(np.float64), n], axis=1), axis=0, return_inverse=True
            )
            costs = np.array(
                [
                    (c.latency_terms, c.byte_terms, c.compute_bytes)
                    for c in (thakur_gropp(op, alg, int(k[0]), float(k[1])) for k in keys)
                ]
            )
            lat[rows], byt[rows], comp[rows] = costs[inverse.reshape(-1)].T
        else:
            raise InputError(f"unknown collective model {model!r}: choose dimemas or thakur_gropp")
    out["latency_terms"] = lat
    out["byte_terms"] = byt
    if model == "thakur_gropp":
        out["compute_bytes"] = comp
    return out


#: Thakur–Gropp algorithm per op when none is chosen: MPICH's short-message choices.
_TG_DEFAULTS = {
    "barrier": "dissemination",
    "bcast": "binomial",
    "reduce": "binomial",
    "allreduce": "recursive_doubling",
    "allgather": "recursive_doubling",
    "gather": "binomial",
    "scatter": "binomial",
    "alltoall": "bruck",
    "reduce_scatter": "recursive_halving",
}


# --------------------------------------------------------------------------- graph lowering
#: Choices a graph builder accepts in place of an expansion algorithm: ``dimemas``,
#: ``thakur_gropp`` (MPICH's short-message algorithm) or ``thakur_gropp:ALGORITHM``.
ANALYTIC_MODELS = ("dimemas", "thakur_gropp")

#: The v-variants take the formula of their regular operation (``n`` = the total they move).
_TG_BASE_OP = {
    "allgatherv": "allgather",
    "gatherv": "gather",
    "scatterv": "scatter",
    "alltoallv": "alltoall",
}


@dataclass(frozen=True)
class AnalyticChoice:
    """An analytic model chosen for one collective: ``model`` and, for Thakur–Gropp, the
    algorithm whose formula is used (on ``formula_op``, the op itself or its regular form)."""

    op: str
    model: str
    algorithm: str | None = None

    @property
    def formula_op(self) -> str:
        return _TG_BASE_OP.get(self.op, self.op)

    @property
    def label(self) -> str:
        return self.model if self.algorithm is None else f"{self.model}:{self.algorithm}"


def parse_analytic(op: str, choice: str) -> AnalyticChoice | None:
    """The analytic model ``choice`` names for ``op``, or None when it names an algorithm.

    Raises :class:`InputError` when the model has no cost for ``op`` (Dimemas: not in
    Table 3; Thakur–Gropp: no formula for that algorithm).
    """
    model, _, algorithm = choice.strip().lower().partition(":")
    if model not in ANALYTIC_MODELS:
        return None
    if model == "dimemas":
        if algorithm:
            raise InputError(f"{op}={choice}: the Dimemas model takes no algorithm")
        if op not in DIMEMAS_TABLE3:
            raise InputError(
                f"{op}={choice}: Girona et al.'s Table 3 has no Dimemas parameters for {op}; "
                f"it has {', '.join(DIMEMAS_TABLE3)}"
            )
        return AnalyticChoice(op, model)
    base = _TG_BASE_OP.get(op, op)
    algorithm = algorithm or _TG_DEFAULTS.get(base, "")
    if (base, algorithm) not in THAKUR_GROPP:
        known = sorted(a for o, a in THAKUR_GROPP if o == base)
        if not known:
            raise InputError(f"{op}={choice}: Thakur et al. give no formula for {base}")
        raise InputError(
            f"{op}={choice}: no Thakur–Gropp formula for {base}/{algorithm or '?'}; known: "
            + ", ".join(f"thakur_gropp:{a}" for a in known)
        )
    return AnalyticChoice(op, model, algorithm)


def instance_bytes(
    op: np.ndarray | str,
    P: np.ndarray | int,
    size: np.ndarray | float,
    total: np.ndarray | float,
    counts_sum: np.ndarray | float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per instance: bytes the root (member 0 for unrooted ops) sends and receives, as Dimemas
    counts them, and Thakur et al.'s ``n`` (vectorised over instances).

    ``size`` is the call's size (the root's for rooted ops, member 0's otherwise), ``total`` the
    sum of the per-member counts of a v-variant, ``counts_sum`` member 0's count vector summed
    (alltoallv: what it receives; reduce_scatter: the whole result). ``n`` is the message for
    bcast, reduce, allreduce and scan, the total gathered, scattered or exchanged otherwise.
    """
    op = np.asarray(op)
    P, s, total, counts = np.broadcast_arrays(
        np.asarray(P, dtype=np.float64),
        np.asarray(size, dtype=np.float64),
        np.asarray(total, dtype=np.float64),
        np.asarray(counts_sum, dtype=np.float64),
    )
    zero = np.zeros_like(s)
    table = {
        "barrier": (zero, zero, zero),
        "bcast": (s, s, s),
        "reduce": (s, s, s),
        "allreduce": (s, s, s),
        "scan": (s, s, s),
        "allgather": (s, P * s, P * s),
        "allgatherv": (s, total, total),
        "alltoall": (P * s, P * s, P * s),
        "alltoallv": (counts, counts, counts),
        "gather": (s, P * s, P * s),
        "gatherv": (s, total, total),
        "scatter": (P * s, s, P * s),
        "scatterv": (total, s, total),
        "reduce_scatter": (counts, counts / np.maximum(P, 1), counts),
    }
    sent, received, n = (np.zeros(np.broadcast_shapes(op.shape, s.shape)) for _ in range(3))
    for name, (a, b, c) in table.items():
        sel = np.broadcast_to(op == name, sent.shape)
        sent[sel] = np.broadcast_to(a, sent.shape)[sel]
        received[sel] = np.broadcast_to(b, sent.shape)[sel]
        n[sel] = np.broadcast_to(c, sent.shape)[sel]
    return sent, received, n


def analytic_cost(
    choice: AnalyticChoice, P: int, sent: float, received: float, n_bytes: float
) -> AffineCost:
    """Cost of one instance of ``choice.op`` on ``P`` members under the chosen model."""
    if choice.model == "dimemas":
        return dimemas(choice.op, P, sent, received)
    return thakur_gropp(choice.formula_op, str(choice.algorithm), P, n_bytes)


def analytic_choices(op: str) -> list[str]:
    """Every analytic model choice that prices ``op`` (for menus and error messages)."""
    out = ["dimemas"] if op in DIMEMAS_TABLE3 else []
    base = _TG_BASE_OP.get(op, op)
    out += [f"thakur_gropp:{a}" for o, a in THAKUR_GROPP if o == base]
    return out
