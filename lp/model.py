"""The LLAMP linear program (LLAMP §II-C1, Appendix C Algorithm 1) on the event graph.

The LP is built from the start/finish :class:`~llamp.lp.event_graph.EventGraph`, so it implements
exactly the semantics the graph engine evaluates (docs/model.md §Cost semantics and docs/architecture.md §Two engines). Every event time is an
affine expression of the LogGPS decision variables ``l``, ``g``, ``o`` and of the time of one
"join" event:

- an event without in-edges happens at 0;
- an event with exactly one in-edge ``u → v`` is folded into ``time(u) + w(u → v)`` (no
  variable: Algorithm 1, lines 10–11);
- an event with two or more in-edges (a join) gets a variable ``y_v`` and one constraint per
  in-edge, ``y_v ≥ time(u) + w(u → v)`` (the ``max`` of Eq. 5 turned into the rows of Eq. 6);
- the runtime ``t`` is at least the time of every event without out-edges (a sink).

With ``time(u) = y_anchor(u) + c(u) + aL(u)·l + aG(u)·g + ao(u)·o`` (``anchor(u)`` the join
``time(u)`` is expressed in, or none), an in-edge ``e = u → j`` of a join gives the row::

    y_j − y_anchor(u) − (aL(u)+cL_e)·l − (aG(u)+cG_e)·g − (ao(u)+co_e)·o ≥ c(u) + const_e

and a sink ``s`` the row ``t − y_anchor(s) − aL(s)·l − aG(s)·g − ao(s)·o ≥ c(s)``. The objective
is ``min t`` with ``l ≥ L``, ``g ≥ G``, ``o ≥ o`` (§II-C1); ``T`` is the optimum and the reduced
costs of ``l``, ``g``, ``o`` are ``λ_L``, ``λ_G``, ``λ_o`` (§II-D1). The tolerance LP is
``max l s.t. t ≤ bound`` with ``g``, ``o`` fixed (§II-D2, Fig. 6). Columns: ``l, g, o, t``, then
one ``y`` per join in topological order (:attr:`LinearProgram.join_events`); rows: the in-edges
of the joins in that order, then the sinks. Everything is in nanoseconds (G in ns/B): seconds
cost HiGHS accuracy (docs/architecture.md §Two engines). ``y`` and ``t`` are free, so the LP value equals the
longest path for every bound, and its reduced costs are subgradients of ``T``.

Degeneracy: ``T`` is convex and piecewise linear in each parameter. At a breakpoint (a critical
latency) the optimum is degenerate and the reduced cost may be any value in ``[λ−, λ+]`` (left
and right derivative); away from breakpoints it is the unique derivative. The graph engine
(:mod:`llamp.lp.engine`) gives exact one-sided values.

Solvers, one path each, all through OR-Tools MathOpt (the model is encoded straight from the
arrays into a MathOpt ``ModelProto``; ``highspy`` is never imported: it clashes with the HiGHS
inside OR-Tools; pywraplp is not used: its HiGHS backend returns no reduced costs and it has no
starting-basis call):

- ``glop`` (default): an incremental GLOP solver started from a *crash basis*, the critical
  tree of one longest-path sweep at the configuration (for each join the in-edge attaining
  the max, ties toward the larger L slope, and the latest sink; ``t`` and the ``y`` basic,
  ``l, g, o`` at their bounds). That basis is primal and dual feasible, hence optimal: GLOP
  verifies it (factorises, checks feasibility) and stops, or pivots on if float noise made
  a choice wrong. So at a breakpoint GLOP reports the right derivative along L. Measured on
  a 10^5-vertex halo graph: 0.2 s instead of 50–60 s for a cold GLOP solve (primal or dual,
  presolve on); Devex pricing replaces steepest edge, whose norm set-up alone costs seconds.
  The tolerance LP starts from the tree at the answer estimated by the walk of docs/analyses.md §Tolerance
  (0 pivots when the estimate is exact). ``crash_basis=False`` solves from scratch.
- ``highs``: HiGHS with presolve, which collapses the path structure (0.7 s at 10^5
  vertices; 90 s without presolve). MathOpt's HiGHS ignores starting bases and is not
  incremental: every solve reloads the model. Its tolerance LP takes 95–210 s at 10^5
  vertices (6e-5 off for G at default tolerances), so ``tolerance`` walks ``T`` with
  ``min t`` solves instead (exact: the reduced cost is a subgradient of the convex ``T``).
- ``pdlp``: first-order, run to a relative gap of 1e-10: ``T`` to about that accuracy; λ are
  exact only when rounding snaps them to integers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
import scipy.sparse as sp
from ortools.linear_solver.python import model_builder
from ortools.math_opt import (
    callback_pb2,
    model_parameters_pb2,
    model_pb2,
    model_update_pb2,
    parameters_pb2,
    result_pb2,
    solution_pb2,
)
from ortools.math_opt.core.python import solver as mathopt_core

from llamp.errors import InputError, LlampError
from llamp.lp.event_graph import COEF_G, COEF_GAP, COEF_L, COEF_O, CONST, EventGraph
from llamp.lp.kernels import ABS_TOL_NS, REL_TOL, edge_slopes
from llamp.params import LogGPS

#: Column indices of the parameter variables and of the runtime; ``y`` columns follow.
COL_L, COL_G, COL_O, COL_T = 0, 1, 2, 3
FIRST_Y = 4

#: Parameter name → LP column of its decision variable.
PARAMETER_COLUMNS = {"L": COL_L, "G": COL_G, "o": COL_O}
#: Parameter name → event-graph coefficient column.
_COEF_OF = {"L": COEF_L, "G": COEF_G, "o": COEF_O}

#: User solver name → MathOpt solver type.
SOLVERS = {
    "glop": parameters_pb2.SOLVER_TYPE_GLOP,
    "highs": parameters_pb2.SOLVER_TYPE_HIGHS,
    "pdlp": parameters_pb2.SOLVER_TYPE_PDLP,
}

#: A reduced cost within this relative distance of an integer is that integer (float noise
#: such as 73.00000000000003); others (a convex combination at a breakpoint) keep 6 decimals.
_SNAP_REL = 1e-6
#: GLOP's primal feasibility tolerance relative to T on the crash-basis path (T's float
#: resolution is 2e-16·T; times are trusted to 1e-9 relative).
_GLOP_REL_FEAS = 1e-12
#: PDLP's termination tolerance (relative gap); its T is only this exact.
_PDLP_REL = 1e-10
#: Steps of the tolerance walk (sweeps for GLOP's crash basis, min-t solves for HiGHS/PDLP).
_MAX_WALK = 100

_AT_LOWER = solution_pb2.BASIS_STATUS_AT_LOWER_BOUND
_AT_UPPER = solution_pb2.BASIS_STATUS_AT_UPPER_BOUND
_FIXED = solution_pb2.BASIS_STATUS_FIXED_VALUE
_BASIC = solution_pb2.BASIS_STATUS_BASIC
_OPTIMAL = result_pb2.TERMINATION_REASON_OPTIMAL
_INFEASIBLE = (
    result_pb2.TERMINATION_REASON_INFEASIBLE,
    result_pb2.TERMINATION_REASON_INFEASIBLE_OR_UNBOUNDED,
)


@dataclass(frozen=True)
class LPSolution:
    """One solve of the LLAMP LP (§II-D1): ``T`` and the reduced costs of ``l``, ``g``, ``o``.

    ``lambda_*`` are reduced costs, rounded: the exact derivative away from breakpoints, a
    value in ``[λ−, λ+]`` at a breakpoint (degenerate optimum). ``build_s`` is the time it took
    to build and load the LP (once per :class:`LinearProgram`), ``solve_s`` this solve.
    """

    runtime_ns: float
    lambda_L: float
    lambda_G: float
    lambda_o: float
    solver: str
    build_s: float
    solve_s: float
    status: str


# ---------------------------------------------------------------------- Algorithm 1
@numba.njit(cache=True, nogil=True)
def _assemble(in_ptr, src, coef, out_ptr):  # pragma: no cover - compiled
    """Algorithm 1 in one forward sweep over event positions: fold, then emit CSR rows.

    Events are in topological position order, so every predecessor is folded before its
    successors: an event with one in-edge inherits its predecessor's anchor join and affine
    offset plus the edge weight; a join anchors itself (offset 0) and emits one row per
    in-edge. Sinks' rows follow. Row entries come in column order (``l, g, o`` then
    ``y_anchor, y_join`` or ``t, y_anchor``); zero coefficients are left out.
    """
    n = in_ptr.shape[0] - 1
    anchor = np.empty(n, dtype=np.int64)
    aff = np.zeros((n, 4))
    ycol = np.full(n, -1, dtype=np.int64)
    num_join_rows = 0
    num_joins = 0
    num_sinks = 0
    for p in range(n):
        deg = in_ptr[p + 1] - in_ptr[p]
        if deg >= 2:
            ycol[p] = FIRST_Y + num_joins
            num_joins += 1
            num_join_rows += deg
        if out_ptr[p + 1] == out_ptr[p]:
            num_sinks += 1
    rows = num_join_rows + num_sinks
    indptr = np.zeros(rows + 1, dtype=np.int64)
    indices = np.empty(5 * rows, dtype=np.int32)
    data = np.empty(5 * rows)
    row_lb = np.empty(rows)
    join_pos = np.empty(num_joins, dtype=np.int64)
    r = 0
    nz = 0
    for p in range(n):
        lo = in_ptr[p]
        hi = in_ptr[p + 1]
        if hi - lo == 1:
            u = src[lo]
            anchor[p] = anchor[u]
            for j in range(4):
                aff[p, j] = aff[u, j] + coef[lo, j]
        elif hi == lo:
            anchor[p] = -1
        else:
            anchor[p] = p
            join_pos[ycol[p] - FIRST_Y] = p
            for k in range(lo, hi):
                u = src[k]
                for j in (COEF_L, COEF_G, COEF_O):
                    value = aff[u, j] + coef[k, j]
                    if value != 0.0:
                        indices[nz] = j - COEF_L + COL_L
                        data[nz] = -value
                        nz += 1
                if anchor[u] >= 0:
                    indices[nz] = ycol[anchor[u]]
                    data[nz] = -1.0
                    nz += 1
                indices[nz] = ycol[p]
                data[nz] = 1.0
                nz += 1
                row_lb[r] = aff[u, CONST] + coef[k, CONST]
                r += 1
                indptr[r] = nz
    for p in range(n):
        if out_ptr[p + 1] != out_ptr[p]:
            continue
        for j in (COEF_L, COEF_G, COEF_O):
            if aff[p, j] != 0.0:
                indices[nz] = j - COEF_L + COL_L
                data[nz] = -aff[p, j]
                nz += 1
        indices[nz] = COL_T
        data[nz] = 1.0
        nz += 1
        if anchor[p] >= 0:
            indices[nz] = ycol[anchor[p]]
            data[nz] = -1.0
            nz += 1
        row_lb[r] = aff[p, CONST]
        r += 1
        indptr[r] = nz
    return data[:nz], indices[:nz], indptr, row_lb, join_pos


def build_arrays(
    events: EventGraph, gap_ns: float = 0.0
) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """The LLAMP LP of ``events`` as arrays (Algorithm 1).

    Returns ``(A, row_lb, join_pos)``: the constraint matrix over columns ``l, g, o, t, y…``
    (every row reads ``A·x ≥ row_lb``) and the positions of the joins owning the ``y`` columns.
    LogGP's gap per message (``gap_ns``, NIC model ``serial``) is a constant of the LP, not a
    decision variable: its terms are folded into the row bounds.
    """
    coef = events.coef
    if gap_ns and np.any(coef[:, COEF_GAP]):
        coef = coef.copy()
        coef[:, CONST] += coef[:, COEF_GAP] * gap_ns
    data, indices, indptr, row_lb, join_pos = _assemble(
        events.in_ptr, events.src, coef, events.out_ptr
    )
    shape = (row_lb.size, FIRST_Y + join_pos.size)
    return sp.csr_matrix((data, indices, indptr), shape=shape, copy=False), row_lb, join_pos


# ---------------------------------------------------------------------- MathOpt protos
@numba.njit(cache=True, nogil=True)
def _varints(values):  # pragma: no cover - compiled
    """Protobuf base-128 varint encoding of non-negative int64 values, concatenated."""
    total = 0
    for i in range(values.shape[0]):
        v = values[i]
        total += 1
        while v >= 128:
            v >>= 7
            total += 1
    out = np.empty(total, dtype=np.uint8)
    k = 0
    for i in range(values.shape[0]):
        v = values[i]
        while v >= 128:
            out[k] = (v & 127) | 128
            v >>= 7
            k += 1
        out[k] = v
        k += 1
    return out


def _varint(value: int) -> bytes:
    return _varints(np.array([value], dtype=np.int64)).tobytes()


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (sub-message, string or packed array)."""
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


def _ints(number: int, values: np.ndarray) -> bytes:
    values = np.ascontiguousarray(values, dtype=np.int64)
    return _field(number, _varints(values).tobytes()) if values.size else b""


def _doubles(number: int, values: np.ndarray) -> bytes:
    values = np.ascontiguousarray(values, dtype="<f8")
    return _field(number, values.tobytes()) if values.size else b""


def _model_proto(
    matrix: sp.csr_matrix, row_lb: np.ndarray, var_lb: np.ndarray, objective_col: int
) -> model_pb2.ModelProto:
    """MathOpt ``ModelProto`` of ``min x[objective_col] s.t. matrix·x ≥ row_lb, x ≥ var_lb``.

    Encoded straight from the arrays (packed repeated fields) and parsed once: filling the
    Python proto element-wise costs ~80 ns per value, ~1.5 s for a 10^6-vertex LP.
    """
    num_rows, num_cols = matrix.shape
    cols = np.arange(num_cols, dtype=np.int64)
    rows = np.arange(num_rows, dtype=np.int64)
    nz_rows = np.repeat(rows, np.diff(matrix.indptr))
    variables = (
        _ints(1, cols)
        + _doubles(2, var_lb)
        + _doubles(3, np.full(num_cols, np.inf))
        + _ints(4, np.zeros(num_cols, dtype=np.int64))  # integers: all false
    )
    objective = _field(3, _ints(1, [objective_col]) + _doubles(2, [1.0]))
    constraints = _ints(1, rows) + _doubles(2, row_lb) + _doubles(3, np.full(num_rows, np.inf))
    coefficients = _ints(1, nz_rows) + _ints(2, matrix.indices) + _doubles(3, matrix.data)
    encoded = b"".join(
        (
            _field(1, b"llamp"),
            _field(2, variables),
            _field(3, objective),
            _field(4, constraints),
            _field(5, coefficients),
        )
    )
    return model_pb2.ModelProto.FromString(encoded)


def _basis_proto(row_status: np.ndarray, col_status: np.ndarray) -> solution_pb2.BasisProto:
    ids_r = np.arange(row_status.size, dtype=np.int64)
    ids_c = np.arange(col_status.size, dtype=np.int64)
    encoded = _field(1, _ints(1, ids_r) + _ints(2, row_status)) + _field(
        2, _ints(1, ids_c) + _ints(2, col_status)
    )
    return solution_pb2.BasisProto.FromString(encoded)


def _snap(value: float) -> float:
    """Round a reduced cost: integers are exact, float noise is not (docs/architecture.md §Two engines)."""
    nearest = round(value)
    if abs(value - nearest) <= _SNAP_REL * max(1.0, abs(value)):
        return float(nearest) + 0.0  # + 0.0 turns −0.0 into 0.0
    return round(value, 6) + 0.0


def _tol(value: float) -> float:
    return REL_TOL * abs(value) + ABS_TOL_NS


# ---------------------------------------------------------------------- the LP
class LinearProgram:
    """The LLAMP LP of one event graph (Algorithm 1), loaded into an OR-Tools solver.

    ``solve(params)`` re-solves with new lower bounds for ``l``, ``g``, ``o`` (same
    rendezvous set); ``tolerance(bound)`` solves ``max l s.t. t ≤ bound`` (§II-D2). The LP
    stays available as arrays: :attr:`matrix` (rows read ``matrix·x ≥ row_lb``),
    :attr:`row_lb` and :attr:`join_events` (event id of each ``y`` column, columns 4…).
    ``crash_basis=False`` makes GLOP solve from scratch (slow; for cross-checks).
    """

    def __init__(
        self,
        events: EventGraph,
        params: LogGPS,
        *,
        solver: str = "glop",
        crash_basis: bool = True,
    ):
        if solver not in SOLVERS:
            raise InputError(f"unknown LP solver {solver!r}: choose one of {', '.join(SOLVERS)}")
        started = time.perf_counter()
        self.events = events
        self.solver_name = solver
        self._msg_B, self._msg_B_exact = _message_bytes(events)
        self._check_threshold(params)
        self.params = params
        self._crash = crash_basis and solver == "glop"

        self.matrix, self.row_lb, join_pos = build_arrays(events, params.g)
        self.join_events = events.event_of_pos[join_pos]
        self._join_pos = join_pos
        join_edge = (np.diff(events.in_ptr) >= 2)[events.dst]
        self._row_of_edge = np.cumsum(join_edge) - 1  # valid where join_edge
        self._num_join_rows = int(join_edge.sum())
        self._sinks = np.flatnonzero(np.diff(events.out_ptr) == 0)
        used = np.zeros(3, dtype=bool)
        used[np.unique(self.matrix.indices[self.matrix.indices < 3])] = True
        self._depends = dict(zip(("L", "G", "o"), (bool(u) for u in used), strict=True))

        var_lb = np.full(self.matrix.shape[1], -np.inf)
        var_lb[[COL_L, COL_G, COL_O]] = _values(params)
        if self.num_constraints == 0:
            var_lb[COL_T] = 0.0  # no event: T = 0 rather than unbounded
        self._proto = _model_proto(self.matrix, self.row_lb, var_lb, COL_T)
        self._incremental = None
        if solver == "glop":
            self._incremental = self._call(
                mathopt_core.new,
                SOLVERS[solver],
                self._proto,
                parameters_pb2.SolverInitializerProto(),
            )
            self._proto = None  # GLOP holds the model; updates are sent as deltas
        self._state: tuple | None = None
        self.build_s = time.perf_counter() - started

    # ------------------------------------------------------------------ properties
    @property
    def num_variables(self) -> int:
        """``l, g, o, t`` plus one ``y`` per join event."""
        return int(self.matrix.shape[1])

    @property
    def num_constraints(self) -> int:
        """One per in-edge of a join plus one per sink event."""
        return int(self.matrix.shape[0])

    # ------------------------------------------------------------------ solving
    def solve(self, params: LogGPS | None = None) -> LPSolution:
        """``T`` (the optimum of ``min t``) and ``λ_L``, ``λ_G``, ``λ_o`` (reduced costs, §II-D1).

        With ``params``, the lower bounds of ``l``, ``g``, ``o`` move to that configuration
        (GLOP keeps its model and restarts from the new crash basis); ``params.S`` must give
        the event graph's rendezvous set, else build a new LP from ``events(S)``.
        """
        started = time.perf_counter()
        if params is not None:
            self._check_threshold(params)
            self.params = params
        values = _values(self.params)
        self._set_bounds(lower=values, upper=(math.inf,) * 4, maximize=None)
        basis, magnitude = None, 0.0
        if self._crash and self.num_constraints:
            basis, magnitude = self._min_basis(values)
        result = self._run(basis, magnitude)
        if result.termination.reason != _OPTIMAL:
            raise self._failure(result, "min t")
        solution = result.solutions[0]
        rc = dict(
            zip(
                solution.dual_solution.reduced_costs.ids,
                solution.dual_solution.reduced_costs.values,
                strict=True,
            )
        )
        return LPSolution(
            runtime_ns=float(solution.primal_solution.objective_value),
            lambda_L=_snap(rc.get(COL_L, 0.0)),
            lambda_G=_snap(rc.get(COL_G, 0.0)),
            lambda_o=_snap(rc.get(COL_O, 0.0)),
            solver=self.solver_name,
            build_s=self.build_s,
            solve_s=time.perf_counter() - started,
            status="optimal",
        )

    def tolerance(self, bound_ns: float, *, parameter: str = "L") -> float:
        """Largest ``l`` (``g``, ``o``) with ``T ≤ bound_ns``: ``max l s.t. t ≤ bound`` (§II-D2).

        The other two parameters stay fixed at the current configuration and the maximised
        one is at least its configured value, as in the paper's Fig. 6. ``math.inf`` when
        ``T`` does not depend on the parameter (no message pays it); :class:`InputError` when
        ``T`` at the configured value already exceeds the bound.
        """
        if parameter not in PARAMETER_COLUMNS:
            raise InputError(f"cannot compute the tolerance of {parameter!r}: choose L, G or o")
        bound_ns = float(bound_ns)
        if not math.isfinite(bound_ns):
            raise InputError(f"the runtime bound must be a finite number of ns, got {bound_ns!r}")
        if not self._depends[parameter]:
            T = self.solve().runtime_ns
            if T > bound_ns + 10 * _tol(bound_ns):
                raise self._exceeds(parameter, T, bound_ns)
            return math.inf
        if self.solver_name == "glop":
            return self._tolerance_lp(parameter, bound_ns)
        return self._tolerance_by_solves(parameter, bound_ns)

    def export(self, path: str | Path) -> Path:
        """Write the ``min t`` LP at the current configuration as ``.mps`` or ``.lp`` (by suffix).

        Columns ``l``, ``g``, ``o``, ``t`` are named; the ``y`` columns keep OR-Tools' default
        names in column order (column ``4 + k`` is the join event ``join_events[k]``).
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".mps", ".lp"):
            raise InputError(
                f"{path}: cannot export an LP as {suffix or 'no suffix'}: use .mps or .lp"
            )
        num_rows, num_cols = self.matrix.shape
        var_lb = np.full(num_cols, -np.inf)
        var_lb[[COL_L, COL_G, COL_O]] = _values(self.params)
        if num_rows == 0:
            var_lb[COL_T] = 0.0
        objective = np.zeros(num_cols)
        objective[COL_T] = 1.0
        builder = model_builder.Model()
        builder.name = "llamp"
        builder.helper.fill_model_from_sparse_data(
            var_lb,
            np.full(num_cols, np.inf),
            objective,
            self.row_lb,
            np.full(num_rows, np.inf),
            self.matrix,
        )
        for col, name in ((COL_L, "l"), (COL_G, "g"), (COL_O, "o"), (COL_T, "t")):
            builder.helper.set_var_name(col, name)
        text = builder.export_to_mps_string() if suffix == ".mps" else builder.export_to_lp_string()
        if not text:  # pragma: no cover - OR-Tools logs the reason
            raise LlampError(f"OR-Tools could not export the LLAMP LP to {path}")
        path.write_text(text)
        return path

    # ------------------------------------------------------------------ crash bases
    def _tree(self, values: tuple[float, ...], parameter: str, sign: float):
        ev = self.events
        w = ev.weights(values[COL_L], values[COL_G], values[COL_O], self.params.g)
        slope = np.ascontiguousarray(ev.coef[:, _COEF_OF[parameter], None])
        t, d, pred = edge_slopes(ev.in_ptr, ev.src, w, slope, sign, REL_TOL, ABS_TOL_NS)
        d = d[:, 0]
        sink_t = t[self._sinks]
        T = float(sink_t.max())
        tight = np.flatnonzero(sink_t >= T - _tol(T))
        pick = tight[np.argmax(sign * d[self._sinks[tight]])]
        return T, float(d[self._sinks[pick]]), pred, int(pick)

    def _row_status(self, pred: np.ndarray, sink: int) -> np.ndarray:
        """Rows of the critical tree at their bound, every other slack basic."""
        status = np.full(self.num_constraints, _BASIC, dtype=np.int64)
        status[self._row_of_edge[pred[self._join_pos]]] = _AT_LOWER
        status[self._num_join_rows + sink] = _AT_LOWER
        return status

    def _min_basis(self, values: tuple[float, ...]) -> tuple[solution_pb2.BasisProto, float]:
        """Optimal basis of ``min t`` and ``T``: the critical tree at ``values`` (module doc).

        ``l, g, o`` sit at their lower bounds, ``t`` and every ``y`` are basic, and one row
        per join plus one sink row are tight: with ties broken toward the larger L slope the
        dual values trace one critical path, so the reduced cost of ``l`` is ``λ_L⁺``.
        """
        T, _, pred, sink = self._tree(values, "L", 1.0)
        col_status = np.full(self.num_variables, _BASIC, dtype=np.int64)
        col_status[[COL_L, COL_G, COL_O]] = _AT_LOWER
        return _basis_proto(self._row_status(pred, sink), col_status), T

    def _tolerance_lp(self, parameter: str, bound_ns: float) -> float:
        """GLOP: the paper's tolerance LP, ``max l s.t. t ≤ bound`` with ``g``, ``o`` fixed."""
        col = PARAMETER_COLUMNS[parameter]
        values = _values(self.params)
        upper = [math.inf, math.inf, math.inf, bound_ns]
        for other in (COL_L, COL_G, COL_O):
            if other != col:
                upper[other] = values[other]
        self._set_bounds(lower=values, upper=tuple(upper), maximize=col)
        basis = self._tolerance_basis(parameter, values, bound_ns) if self._crash else None
        result = self._run(basis, bound_ns)
        reason = result.termination.reason
        if reason in _INFEASIBLE:
            raise self._exceeds(parameter, self.solve().runtime_ns, bound_ns)
        if reason != _OPTIMAL:
            raise self._failure(result, f"max {parameter} s.t. t ≤ {bound_ns:g} ns")
        primal = result.solutions[0].primal_solution.variable_values
        return float(dict(zip(primal.ids, primal.values, strict=True))[col])

    def _tolerance_by_solves(self, parameter: str, bound_ns: float) -> float:
        """HiGHS, PDLP: walk ``T`` with ``min t`` solves (the tolerance LP itself is slow there).

        Measured on a 10^5-vertex halo graph: HiGHS's dual simplex needs 95–210 s for
        ``max l s.t. t ≤ bound`` (and lands 6e-5 off for G at its default tolerances), while
        two or three ``min t`` solves, which its presolve collapses, take 1.5–2.5 s. The
        reduced cost is a subgradient of the convex ``T``, so the walk of
        :func:`_walk_to_bound` stays exact.
        """
        attr = {"L": "lambda_L", "G": "lambda_G", "o": "lambda_o"}[parameter]
        base = self.params
        cache: dict[float, tuple[float, float]] = {}

        def probe(x: float, side: float) -> tuple[float, float]:
            if x not in cache:
                sol = self.solve(base.with_(**{parameter: x}))
                cache[x] = (sol.runtime_ns, getattr(sol, attr))
            return cache[x]

        x0 = float(getattr(base, parameter))
        rel = 100 * _PDLP_REL if self.solver_name == "pdlp" else 10 * REL_TOL
        try:
            T0, _ = probe(x0, 1.0)
            if T0 > bound_ns * (1 + rel) + 10 * ABS_TOL_NS:
                raise self._exceeds(parameter, T0, bound_ns)
            x, T, _ = _walk_to_bound(x0, bound_ns, probe, rel=rel)
        finally:
            self.params = base
        if abs(T - bound_ns) > rel * bound_ns + 10 * ABS_TOL_NS:
            raise LlampError(
                f"{self.solver_name}: the tolerance walk for {parameter} did not converge "
                f"(T = {T:g} ns at {parameter} = {x:g}, bound {bound_ns:g} ns)"
            )
        return x

    def _tolerance_basis(
        self, parameter: str, values: tuple[float, ...], bound_ns: float
    ) -> solution_pb2.BasisProto:
        """Starting basis of the tolerance LP: the critical tree at the walk's estimate.

        At the answer ``x*`` the tree (ties toward the larger slope), with the parameter basic
        and ``t`` at its bound, is an optimal basis; if float noise or the step limit leaves
        the walk short, the simplex pivots on from it.
        """
        col = PARAMETER_COLUMNS[parameter]
        x0 = values[col]

        def at(x: float) -> tuple[float, ...]:
            point = list(values)
            point[col] = x
            return tuple(point)

        def probe(x: float, side: float) -> tuple[float, float]:
            T, slope, _, _ = self._tree(at(x), parameter, side)
            return T, slope

        x, _, _ = _walk_to_bound(x0, bound_ns, probe)
        T, slope, pred, sink = self._tree(at(x), parameter, 1.0)
        col_status = np.full(self.num_variables, _BASIC, dtype=np.int64)
        for other in (COL_L, COL_G, COL_O):
            if other != col:
                col_status[other] = _FIXED
        if slope > 0.0 and abs(T - bound_ns) <= 10 * _tol(bound_ns):
            col_status[COL_T] = _AT_UPPER  # the parameter is basic, pinned by the tight path
        else:  # no tight path with a positive slope (e.g. infeasible): the min-t basis at x0
            _, _, pred, sink = self._tree(values, parameter, 1.0)
            col_status[col] = _AT_LOWER
        return _basis_proto(self._row_status(pred, sink), col_status)

    # ------------------------------------------------------------------ solver plumbing
    def _set_bounds(
        self, *, lower: tuple[float, ...], upper: tuple[float, ...], maximize: int | None
    ) -> None:
        """Bounds of ``l, g, o`` (``lower``), of ``l, g, o, t`` (``upper``) and the objective
        (``min t`` when ``maximize`` is None, else ``max`` of that column)."""
        state = (lower, upper, maximize)
        if self._state == state:
            return
        if self._incremental is not None:
            update = model_update_pb2.ModelUpdateProto()
            vu = update.variable_updates
            vu.lower_bounds.ids.extend([COL_L, COL_G, COL_O])
            vu.lower_bounds.values.extend(lower)
            vu.upper_bounds.ids.extend([COL_L, COL_G, COL_O, COL_T])
            vu.upper_bounds.values.extend(upper)
            obj = update.objective_updates
            obj.direction_update = maximize is not None
            obj.linear_coefficients.ids.extend(sorted({COL_T, COL_L, COL_G, COL_O}))
            target = COL_T if maximize is None else maximize
            obj.linear_coefficients.values.extend(
                [1.0 if c == target else 0.0 for c in sorted({COL_T, COL_L, COL_G, COL_O})]
            )
            if not self._call(self._incremental.update, update):  # pragma: no cover
                raise LlampError("GLOP refused an update of the LLAMP LP's bounds")
        else:
            proto = self._proto
            for c in (COL_L, COL_G, COL_O):
                proto.variables.lower_bounds[c] = lower[c]
            for c in (COL_L, COL_G, COL_O, COL_T):
                proto.variables.upper_bounds[c] = upper[c]
            proto.objective.maximize = maximize is not None
            proto.objective.linear_coefficients.ids[0] = COL_T if maximize is None else maximize
        self._state = state

    def _parameters(
        self, basis: solution_pb2.BasisProto | None, magnitude: float
    ) -> parameters_pb2.SolveParametersProto:
        """Solver parameters; ``magnitude`` is the size of ``T`` (ns) for GLOP's tolerances."""
        params = parameters_pb2.SolveParametersProto()
        if self.solver_name == "glop" and basis is not None:
            # From an optimal (or nearly optimal) basis: no presolve (it would discard the
            # basis), primal simplex, Devex pricing (steepest-edge norms cost seconds), no
            # scaling (its non-power-of-two factors put noise such as 1615.0000000000002 on
            # T; the basis is triangular with ±1 entries plus one parameter column).
            # Unscaled, GLOP's absolute feasibility tolerances (1e-8, 1e-6) fall below the
            # float resolution of times near 10^8 ns (status IMPRECISE after useless pivots
            # on a 10^6-vertex tolerance LP): make them relative to T instead.
            params.presolve = parameters_pb2.EMPHASIS_OFF
            params.scaling = parameters_pb2.EMPHASIS_OFF
            params.lp_algorithm = parameters_pb2.LP_ALGORITHM_PRIMAL_SIMPLEX
            params.glop.optimization_rule = params.glop.DEVEX
            params.glop.feasibility_rule = params.glop.DEVEX
            params.glop.primal_feasibility_tolerance = max(1e-8, _GLOP_REL_FEAS * magnitude)
            params.glop.solution_feasibility_tolerance = max(1e-6, 10 * _GLOP_REL_FEAS * magnitude)
        elif self.solver_name == "highs":
            params.highs.bool_options["output_flag"] = False  # no banner on every solve
        elif self.solver_name == "pdlp":
            criteria = params.pdlp.termination_criteria.simple_optimality_criteria
            criteria.eps_optimal_absolute = _PDLP_REL
            criteria.eps_optimal_relative = _PDLP_REL
        return params

    def _run(
        self, basis: solution_pb2.BasisProto | None, magnitude: float = 0.0
    ) -> result_pb2.SolveResultProto:
        params = self._parameters(basis, magnitude)
        model_params = model_parameters_pb2.ModelSolveParametersProto()
        model_params.variable_values_filter.filter_by_ids = True
        model_params.variable_values_filter.filtered_ids.extend([COL_L, COL_G, COL_O, COL_T])
        model_params.reduced_costs_filter.filter_by_ids = True
        model_params.reduced_costs_filter.filtered_ids.extend([COL_L, COL_G, COL_O])
        model_params.dual_values_filter.filter_by_ids = True
        if basis is not None:
            model_params.initial_basis.CopyFrom(basis)
        registration = callback_pb2.CallbackRegistrationProto()
        if self._incremental is not None:
            return self._call(
                self._incremental.solve, params, model_params, None, registration, None, None
            )
        return self._call(
            mathopt_core.solve,
            self._proto,
            SOLVERS[self.solver_name],
            parameters_pb2.SolverInitializerProto(),
            params,
            model_params,
            None,
            registration,
            None,
            None,
        )

    def _call(self, func, *args):
        try:
            return func(*args)
        except Exception as err:  # MathOpt raises StatusNotOk (pybind11_abseil)
            raise LlampError(
                f"{self.solver_name} failed on the LLAMP LP ({self.num_variables} variables, "
                f"{self.num_constraints} constraints): {err}"
            ) from err

    def _failure(self, result: result_pb2.SolveResultProto, what: str) -> LlampError:
        reason = result_pb2.TerminationReasonProto.Name(result.termination.reason)
        reason = reason.removeprefix("TERMINATION_REASON_")
        detail = f" ({result.termination.detail})" if result.termination.detail else ""
        return LlampError(
            f"{self.solver_name} did not solve the LLAMP LP ({what}; {self.num_variables} "
            f"variables, {self.num_constraints} constraints): status {reason}{detail}"
        )

    def _exceeds(self, parameter: str, T: float, bound_ns: float) -> InputError:
        value = _values(self.params)[PARAMETER_COLUMNS[parameter]]
        return InputError(
            f"T({parameter}={value:g}) = {T:g} ns already exceeds the bound {bound_ns:g} ns"
        )

    def _check_threshold(self, params: LogGPS) -> None:
        """``params.S`` must split the messages into the event graph's eager/rendezvous sets;
        the gap per message and the progress and NIC models must be the LP's own."""
        if hasattr(self, "params") and params.g != self.params.g:
            raise InputError(
                f"this LP was built for g = {self.params.g} ns; build a new one for g = {params.g}"
            )
        if params.lowering != self.events.lowering:
            ev = self.events
            raise InputError(
                f"this LP was built for progress={ev.progress}, nic={ev.nic}, order={ev.order}, "
                f"rendezvous={ev.rendezvous_model}"
                + (f", its schedule at (L, o, G, g) = {ev.schedule_at}" if ev.schedule_at else "")
                + f"; build a new one from events(params) for progress={params.progress}, "
                f"nic={params.nic}, order={params.order}, rendezvous={params.rendezvous}"
                + (f", schedule at {params.schedule_at}" if params.order == "schedule" else "")
            )
        if params.S == self.events.S or self._msg_B.size == 0:
            return
        rdv = self.events.rendezvous
        size = self._msg_B + 1.0  # exact where _msg_B_exact
        wrong = (
            (~rdv & self._msg_B_exact & (size > params.S))
            | (~rdv & ~self._msg_B_exact & (params.S < 1))  # size 0 or 1: unknown at S = 0
            | (rdv & (size <= params.S))
        )
        if wrong.any():
            raise InputError(
                f"the LP was built for S = {self.events.S} B and S = {params.S} B changes which "
                "messages use rendezvous: build a new LinearProgram from the event graph of "
                f"S = {params.S} B"
            )


def _walk_to_bound(
    x0: float, bound_ns: float, probe, *, rel: float = 10 * REL_TOL, max_steps: int = _MAX_WALK
) -> tuple[float, float, float]:
    """The largest ``x ≥ x0`` with ``T(x) ≤ bound`` for a convex, non-decreasing ``T``.

    ``probe(x, side)`` returns ``T(x)`` and a slope there: the right (``side`` = 1) or left
    (−1) derivative, or any subgradient. Tangents from the left reach or pass the answer
    (flat stretches are crossed by doubling steps); Newton steps from the right never pass it
    and land on it after one step per linear piece (docs/analyses.md §Tolerance). Returns
    ``(x, T(x), slope)``, with ``T(x) > bound`` only if ``T(x0)`` already exceeds it. ``T``
    within ``rel·bound`` (plus 1 fs) of the bound counts as on it.
    """
    tol = rel * abs(bound_ns) + 10 * ABS_TOL_NS
    x = x0
    T, slope = probe(x, 1.0)
    step = max(bound_ns - T, 1.0)
    from_right = False
    for _ in range(max_steps):
        if T > bound_ns + tol:
            if x <= x0:
                break  # infeasible at the configured value
            _, left = probe(x, -1.0)
            x = max(x - (T - bound_ns) / left, x0)
            from_right = True
        elif T < bound_ns - tol and slope > 0.0:
            x += (bound_ns - T) / slope
        elif T < bound_ns - tol or not (slope > 0.0 or from_right):
            x, step = x + step, 2.0 * step  # flat: the answer lies further right
        else:
            break  # at the bound, and nothing to the right fits
        T, slope = probe(x, 1.0)
    return x, T, slope


def _values(params: LogGPS) -> tuple[float, float, float]:
    """(L, G, o) in LP column order."""
    values = [0.0, 0.0, 0.0]
    values[COL_L], values[COL_G], values[COL_O] = float(params.L), float(params.G), float(params.o)
    return tuple(values)


def _message_bytes(events: EventGraph) -> tuple[np.ndarray, np.ndarray]:
    """Per message: ``B = max(size−1, 0)`` as paid on its edges, and whether size = B+1 surely.

    A rendezvous message with ``B = 0`` has size 1 (it exceeded S ≥ 0); an eager one with
    ``B = 0`` may have size 0 or 1.
    """
    B = np.zeros(events.rendezvous.size)
    m = events.msg >= 0
    np.maximum.at(B, events.msg[m], events.coef[m, COEF_G])
    return B, (B > 0) | events.rendezvous
