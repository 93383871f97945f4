"""The LLAMP LP (paper §II-C/§II-D, Algorithm 1) against the paper's numbers and the graph engine."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hand_graphs import PAPER_MODEL
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.linear_solver.python import model_builder

from llamp.config import ORDER_MODELS, RENDEZVOUS_MODELS
from llamp.errors import InputError, LlampError
from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.lp.engine import engine_for
from llamp.lp.event_graph import build_event_graph
from llamp.lp.model import LinearProgram, LPSolution, build_arrays
from llamp.params import LogGPS

SIMPLEX = ["glop", "highs"]
EAGER = 10**9


def running_example() -> ExecutionGraph:
    """Fig. 4c: rank 0 ``c0=100 → send 4 B → c1=1000``, rank 1 ``c2=500 → recv → c3=1000``."""
    return ExecutionGraph.from_arrays(
        2,
        rank=[0, 0, 0, 1, 1, 1],
        kind=[CALC, SEND, CALC, CALC, RECV, CALC],
        cost_ns=[100.0, 0, 1000.0, 500.0, 0, 1000.0],
        size=[0, 4, 0, 0, 4, 0],
        peer=[0, 1, 0, 0, 0, 0],
        tag=[0, 7, 0, 0, 7, 0],
        edge_src=[0, 1, 3, 4, 1],
        edge_dst=[1, 2, 4, 5, 4],
        edge_kind=[REQUIRES, REQUIRES, REQUIRES, REQUIRES, MESSAGE],
    )


#: The paper's configuration for Eq. 5/6: o = 0, G = 5 ns/B, every message eager.
PAPER = LogGPS(L=500.0, o=0.0, G=5.0, S=EAGER, nic="overlap", **PAPER_MODEL)
RECV_VERTEX = 4


def example_lp(params: LogGPS = PAPER, solver: str = "glop", **kw) -> LinearProgram:
    return LinearProgram(
        build_event_graph(
            running_example(),
            params.S,
            nic=params.nic,
            order=params.order,
            rendezvous=params.rendezvous,
        ),
        params,
        solver=solver,
        **kw,
    )


# ---------------------------------------------------------------------- the running example
@pytest.mark.parametrize("solver", SIMPLEX)
def test_running_example_runtime_and_latency_sensitivity(solver):
    """Eq. 5: T(L) = max(1.1, max(L + 0.115, 0.5) + 1) µs; critical latency 0.385 µs."""
    lp = example_lp(solver=solver)
    sol = lp.solve()
    assert isinstance(sol, LPSolution)
    assert (sol.runtime_ns, sol.lambda_L, sol.lambda_G, sol.lambda_o) == (1615.0, 1.0, 3.0, 2.0)
    assert sol.solver == solver and sol.status == "optimal"
    assert sol.build_s == lp.build_s > 0 and sol.solve_s > 0
    below = lp.solve(PAPER.with_(L=0.0))  # warm re-solve with a new lower bound of l
    assert (below.runtime_ns, below.lambda_L, below.lambda_G) == (1500.0, 0.0, 0.0)
    assert below.lambda_o == 1.0  # c2 → recv overhead → c3 is critical
    assert lp.solve(PAPER.with_(L=1000.0)).runtime_ns == 2115.0
    at_break = lp.solve(PAPER.with_(L=385.0))
    assert at_break.runtime_ns == 1500.0
    assert 0.0 <= at_break.lambda_L <= 1.0  # degenerate: any value in [λ−, λ+]


def test_glop_reports_the_right_derivative_at_a_breakpoint():
    """The crash basis breaks ties toward the larger latency slope (module docstring)."""
    sol = example_lp().solve(PAPER.with_(L=385.0))
    assert (sol.lambda_L, sol.lambda_G, sol.lambda_o) == (1.0, 3.0, 2.0)


def test_running_example_lp_has_the_structure_of_eq6():
    """Eq. 6 has one y (the recv finish, the only event with two in-edges: the recv start
    and the message), two rows for it, and two runtime rows (the finishes of c1 and c3, the
    only events without successors). With the l, g, o and t columns of Algorithm 1: 5
    variables, 4 constraints. Rows read A·x ≥ b over (l, g, o, t, y)."""
    lp = example_lp()
    assert (lp.num_variables, lp.num_constraints) == (5, 4)
    assert lp.join_events.tolist() == [2 * RECV_VERTEX + 1]
    rows = {
        (tuple(lp.matrix[i].toarray().ravel()), lp.row_lb[i]) for i in range(lp.num_constraints)
    }
    assert rows == {
        ((-1.0, -3.0, -2.0, 0.0, 1.0), 100.0),  # (1) y ≥ l + 3g + 2o + c0    (= l + 0.115 µs)
        ((0.0, 0.0, -1.0, 0.0, 1.0), 500.0),  # (2) y ≥ c2 + o              (= 0.5 µs)
        ((0.0, 0.0, -1.0, 1.0, 0.0), 1100.0),  # (3) t ≥ c0 + o + c1        (= 1.1 µs)
        ((0.0, 0.0, 0.0, 1.0, -1.0), 1000.0),  # (4) t ≥ y + c3
    }
    events = build_event_graph(running_example(), EAGER, nic=PAPER.nic, **PAPER_MODEL)
    matrix, row_lb, join_pos = build_arrays(events)
    assert np.array_equal(matrix.toarray(), lp.matrix.toarray())
    assert np.array_equal(row_lb, lp.row_lb) and join_pos.size == 1


@pytest.mark.parametrize("solver", SIMPLEX)
def test_running_example_tolerance(solver):
    """Fig. 6: max l s.t. t ≤ 2 µs is 0.885 µs; for G, 1600 + 3G ≤ 2000 gives 400/3 ns/B."""
    lp = example_lp(solver=solver)
    assert lp.tolerance(2000.0) == pytest.approx(885.0, rel=1e-12)
    assert lp.tolerance(2000.0, parameter="G") == pytest.approx(400.0 / 3.0, rel=1e-12)
    # the o tolerance: 1615 + 2o ≤ 2000 (the message path carries two overheads)
    assert lp.tolerance(2000.0, parameter="o") == pytest.approx(192.5, rel=1e-12)
    # the LP is left as it was: min t at the configuration
    assert lp.solve().runtime_ns == 1615.0


@pytest.mark.parametrize("solver", SIMPLEX)
def test_tolerance_below_the_configured_runtime_is_an_input_error(solver):
    lp = example_lp(solver=solver)
    with pytest.raises(InputError, match=r"T\(L=500\) = 1615 ns already exceeds the bound 1600"):
        lp.tolerance(1600.0)
    assert lp.tolerance(1615.0) == pytest.approx(500.0, rel=1e-12)  # 0%: T is increasing at L
    with pytest.raises(InputError, match="choose L, G or o"):
        lp.tolerance(2000.0, parameter="S")


def test_zero_percent_tolerance_on_a_flat_stretch_is_its_end():
    """Below the critical latency T does not depend on L: T ≤ T(200) holds up to 385 ns."""
    for solver in SIMPLEX:
        lp = example_lp(PAPER.with_(L=200.0), solver=solver)
        assert lp.solve().runtime_ns == 1500.0
        assert lp.tolerance(1500.0) == pytest.approx(385.0, rel=1e-12)


# ---------------------------------------------------------------------- eager vs rendezvous
@pytest.mark.parametrize("solver", SIMPLEX)
def test_eager_and_rendezvous_by_hand(solver):
    """o = 10 ns, L = 500 ns, G = 5 ns/B, 4 B message (B = 3 bytes charged G).

    Eager: recv finish = max(c2 + o, c0 + 2o + L + 3G) = 635, T = 1635: one L, two o.
    Rendezvous (S = 0): h = max(c0 + o + L, c2) = 610, recv finish = h + 3o + 2L + 3G = 1655,
    T = 2655 (send finish h + 2o + L = 1130 → c1 = 2130 is not critical): λ_L = 1 + 2 = 3
    (RTS, CTS, data), λ_o = 1 + 3 = 4, λ_G = 3. At L = 100 the receive is posted last:
    h = c2 = 500, T = 500 + 30 + 200 + 15 + 1000 = 1745 with λ_L = 2.
    """
    o10 = PAPER.with_(o=10.0)
    eager = example_lp(o10, solver=solver).solve()
    assert (eager.runtime_ns, eager.lambda_L, eager.lambda_G, eager.lambda_o) == (
        1635.0,
        1.0,
        3.0,
        2.0,
    )
    rdv_params = o10.with_(S=0)
    lp = example_lp(rdv_params, solver=solver)
    rdv = lp.solve()
    assert (rdv.runtime_ns, rdv.lambda_L, rdv.lambda_G, rdv.lambda_o) == (2655.0, 3.0, 3.0, 4.0)
    early = lp.solve(rdv_params.with_(L=100.0))
    assert (early.runtime_ns, early.lambda_L) == (1745.0, 2.0)
    engine = engine_for(running_example())
    assert engine.runtime(rdv_params) == 2655.0


def test_threshold_must_keep_the_rendezvous_set():
    lp = example_lp()  # built for S = 10^9: the 4 B message is eager
    assert lp.solve(PAPER.with_(S=4)).runtime_ns == 1615.0  # 4 ≤ S: still eager, same LP
    with pytest.raises(InputError, match="changes which messages use rendezvous"):
        lp.solve(PAPER.with_(S=3))
    rdv = example_lp(PAPER.with_(S=0))
    assert rdv.solve(PAPER.with_(S=3)).runtime_ns == rdv.solve(PAPER.with_(S=0)).runtime_ns
    with pytest.raises(InputError, match="S = 4 B"):
        rdv.solve(PAPER.with_(S=4))


def test_unknown_solver_is_an_input_error():
    with pytest.raises(
        InputError, match="unknown LP solver 'gurobi': choose one of glop, highs, pdlp"
    ):
        example_lp(solver="gurobi")


def test_solver_failure_names_solver_size_and_status():
    from ortools.math_opt import result_pb2

    result = result_pb2.SolveResultProto()
    result.termination.reason = result_pb2.TERMINATION_REASON_NUMERICAL_ERROR
    result.termination.detail = "singular basis"
    error = example_lp(solver="highs")._failure(result, "min t")
    assert isinstance(error, LlampError) and not isinstance(error, InputError)
    assert str(error) == (
        "highs did not solve the LLAMP LP (min t; 5 variables, 4 constraints): "
        "status NUMERICAL_ERROR (singular basis)"
    )


def test_pdlp_is_close_on_the_running_example():
    """PDLP is first-order: T to its termination tolerance, λ exact away from breakpoints."""
    lp = example_lp(solver="pdlp")
    sol = lp.solve()
    assert sol.runtime_ns == pytest.approx(1615.0, rel=1e-8)
    assert (sol.lambda_L, sol.lambda_G, sol.lambda_o) == (1.0, 3.0, 2.0)
    assert lp.tolerance(2000.0) == pytest.approx(885.0, rel=1e-8)


def test_graph_without_messages_tolerates_any_latency():
    graph = ExecutionGraph.from_arrays(
        1,
        rank=[0, 0],
        kind=[CALC, CALC],
        cost_ns=[5.0, 7.0],
        size=[0, 0],
        peer=[0, 0],
        tag=[0, 0],
        edge_src=[0],
        edge_dst=[1],
        edge_kind=[REQUIRES],
    )
    for solver in SIMPLEX:
        lp = LinearProgram(
            build_event_graph(graph, EAGER, nic=PAPER.nic, **PAPER_MODEL), PAPER, solver=solver
        )
        sol = lp.solve()
        assert (sol.runtime_ns, sol.lambda_L, sol.lambda_G, sol.lambda_o) == (12.0, 0.0, 0.0, 0.0)
        assert lp.tolerance(12.0) == math.inf
        with pytest.raises(InputError, match="already exceeds"):
            lp.tolerance(11.0)


def test_empty_graph_runs_in_zero_time():
    graph = ExecutionGraph.from_arrays(
        1,
        rank=[],
        kind=[],
        cost_ns=[],
        size=[],
        peer=[],
        tag=[],
        edge_src=[],
        edge_dst=[],
        edge_kind=[],
    )
    lp = LinearProgram(build_event_graph(graph, EAGER, nic=PAPER.nic, **PAPER_MODEL), PAPER)
    assert (lp.num_variables, lp.num_constraints) == (4, 0)
    assert lp.solve().runtime_ns == 0.0
    assert lp.tolerance(1.0) == math.inf


# ---------------------------------------------------------------------- export
def _read_lp_format(text: str) -> tuple[dict, list, dict]:
    """A small reader for the CPLEX LP files OR-Tools writes (its own LP parser reads a
    different dialect): objective terms, rows ``(terms, sense, rhs)`` and bounds."""
    section, objective, rows, bounds = None, {}, [], {}

    def terms(tokens: list[str]) -> dict[str, float]:
        return {tokens[i + 1]: float(tokens[i]) for i in range(0, len(tokens), 2)}

    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("\\"):
            continue
        if line in ("Minimize", "Maximize", "Subject to", "Bounds", "End"):
            section = line
            continue
        tokens = line.split(":", 1)[-1].split()
        if section == "Minimize":
            objective.update(terms(tokens))
        elif section == "Subject to":
            rows.append((terms(tokens[:-2]), tokens[-2], float(tokens[-1])))
        elif section == "Bounds":
            if tokens[-1] == "free":
                bounds[tokens[0]] = (-math.inf, math.inf)
            elif tokens[1] == "<=" and len(tokens) == 3:
                bounds[tokens[2]] = (float(tokens[0]), math.inf)
            else:
                raise AssertionError(f"unexpected bound line {line!r}")
    return objective, rows, bounds


def test_export_lp_format_holds_the_lp(tmp_path):
    lp = example_lp()
    objective, rows, bounds = _read_lp_format(lp.export(tmp_path / "example.lp").read_text())
    names = ["l", "g", "o", "t", *(v for v in bounds if v not in ("l", "g", "o", "t"))]
    assert objective == {"t": 1.0}
    assert bounds == {
        "l": (500.0, math.inf),
        "g": (5.0, math.inf),
        "o": (0.0, math.inf),
        "t": (-math.inf, math.inf),
        names[4]: (-math.inf, math.inf),
    }
    written = {
        (tuple(r.get(n, 0.0) for n in names), rhs) for r, sense, rhs in rows if sense == ">="
    }
    expected = {
        (tuple(lp.matrix[i].toarray().ravel()), lp.row_lb[i]) for i in range(lp.num_constraints)
    }
    assert len(rows) == 4 and written == expected


def test_export_mps_reads_back_and_solves(tmp_path):
    lp = example_lp(PAPER.with_(L=1000.0))
    path = lp.export(tmp_path / "example.mps")
    model = model_builder.Model()
    assert model.import_from_mps_file(str(path))
    assert (model.num_variables, model.num_constraints) == (5, 4)
    assert {model.var_from_index(i).name for i in range(4)} == {"l", "g", "o", "t"}
    solver = model_builder.Solver("glop")
    assert solver.solve(model) == model_builder.SolveStatus.OPTIMAL
    assert solver.objective_value == pytest.approx(2115.0, rel=1e-12)  # T at L = 1 µs


def test_export_rejects_other_formats(tmp_path):
    with pytest.raises(InputError, match=r"\.json: cannot export an LP as \.json"):
        example_lp().export(tmp_path / "model.json")


# ---------------------------------------------------------------------- random execution graphs
@st.composite
def programs(draw):
    """Several ranks running one global sequence of steps (so nothing deadlocks): calcs,
    messages (each side blocking, or Isend/Irecv that the rank's next op `irequires` and a
    later wait `requires`), waits; sizes around the thresholds; costs with ties (0, equal)."""
    P = draw(st.integers(2, 4))
    ranks: list[list[dict]] = [[] for _ in range(P)]
    state = [{"prev": None, "prev_nb": False, "pending": []} for _ in range(P)]

    def add(r, kind, cost=0.0, size=0, peer=0, tag=0, nonblocking=False, wait=False):
        ops = ranks[r]
        st_ = state[r]
        v = len(ops)
        edges = []
        if wait:
            edges += [(p, REQUIRES) for p in st_["pending"]]
            if st_["prev"] is not None and st_["prev"] not in st_["pending"]:
                edges.append((st_["prev"], IREQUIRES if st_["prev_nb"] else REQUIRES))
            st_["pending"] = []
        elif st_["prev"] is not None:
            edges.append((st_["prev"], IREQUIRES if st_["prev_nb"] else REQUIRES))
        ops.append(dict(kind=kind, cost=cost, size=size, peer=peer, tag=tag, edges=edges))
        st_["prev"], st_["prev_nb"] = v, nonblocking
        if nonblocking:
            st_["pending"].append(v)
        return v

    cost = st.sampled_from([0.0, 100.0, 250.0]) | st.floats(0.0, 5000.0, allow_nan=False)
    messages = []
    for tag in range(draw(st.integers(1, 14))):
        what = draw(st.sampled_from(["calc", "msg", "msg", "wait"]))
        if what == "calc":
            add(draw(st.integers(0, P - 1)), CALC, cost=draw(cost))
        elif what == "wait":
            add(draw(st.integers(0, P - 1)), CALC, cost=draw(cost), wait=True)
        else:
            a, b = draw(st.lists(st.integers(0, P - 1), min_size=2, max_size=2, unique=True))
            size = draw(st.sampled_from([0, 1, 4, 64, 100, 5000]))
            s = add(a, SEND, size=size, peer=b, tag=tag, nonblocking=draw(st.booleans()))
            r = add(b, RECV, size=size, peer=a, tag=tag, nonblocking=draw(st.booleans()))
            messages.append((a, s, b, r))
    for r in range(P):
        if state[r]["pending"] and draw(st.booleans()):
            add(r, CALC, cost=draw(cost), wait=True)
    offset = np.cumsum([0] + [len(ops) for ops in ranks])
    rows = [(r, op) for r in range(P) for op in ranks[r]]
    src, dst, kind = [], [], []
    for r in range(P):
        for v, op in enumerate(ranks[r]):
            for u, k in op["edges"]:
                src.append(offset[r] + u)
                dst.append(offset[r] + v)
                kind.append(k)
    for a, s, b, rv in messages:
        src.append(offset[a] + s)
        dst.append(offset[b] + rv)
        kind.append(MESSAGE)
    # CPU streams and NICs (GOAL's cpu/nic): one per rank, or two drawn per vertex.
    streams = {
        name: draw(st.lists(st.integers(0, 1), min_size=len(rows), max_size=len(rows)))
        if draw(st.booleans())
        else None
        for name in ("cpu", "nic")
    }
    graph = ExecutionGraph.from_arrays(
        P,
        rank=[r for r, _ in rows],
        kind=[op["kind"] for _, op in rows],
        cost_ns=[op["cost"] for _, op in rows],
        size=[op["size"] for _, op in rows],
        peer=[op["peer"] for _, op in rows],
        tag=[op["tag"] for _, op in rows],
        edge_src=src,
        edge_dst=dst,
        edge_kind=kind,
        **streams,
    )
    params = LogGPS(
        L=draw(st.sampled_from([0.0, 500.0]) | st.floats(0.0, 5000.0)),
        o=draw(st.sampled_from([0.0, 100.0]) | st.floats(0.0, 500.0)),
        G=draw(st.sampled_from([0.0, 1.0]) | st.floats(0.0, 10.0)),
        S=draw(st.sampled_from([0, 3, 64, EAGER])),
        g=draw(st.sampled_from([0.0, 0.0, 300.0])),
        progress=draw(st.sampled_from(["async", "wait"])),
        nic=draw(st.sampled_from(["overlap", "serial"])),
        order=draw(st.sampled_from(ORDER_MODELS)),
        rendezvous=draw(st.sampled_from(RENDEZVOUS_MODELS)),
    )
    return graph, params


def _max_within(graph: ExecutionGraph, params: LogGPS, bound: float, parameter: str) -> float:
    """sup{x ≥ x0 : T(x) ≤ bound} by doubling then bisection on the graph engine's runtime."""
    engine = engine_for(graph)

    def fits(x: float) -> bool:
        return engine.runtime(params.with_(**{parameter: x})) <= bound * (1 + 1e-13)

    lo = float(getattr(params, parameter))
    step = max(lo, 1.0)
    hi = lo + step
    while fits(hi):
        step *= 2.0
        hi = lo + step
        if step > 1e15:
            return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _check_against_engine(lp: LinearProgram, graph: ExecutionGraph, params: LogGPS) -> None:
    point = engine_for(graph).point(params)
    sol = lp.solve(params)
    assert sol.runtime_ns == pytest.approx(point.runtime_ns, rel=1e-9, abs=1e-6)
    for name, value in (("L", sol.lambda_L), ("G", sol.lambda_G), ("o", sol.lambda_o)):
        left, right = point.left[name], point.right[name]
        if left == right:
            assert value == right, (name, value, left, right)
        else:
            assert left - 1e-6 <= value <= right + 1e-6, (name, value, left, right)


SLOW_OK = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SLOW_OK
@given(programs(), st.sampled_from(["glop", "highs", "glop-cold"]))
def test_lp_agrees_with_the_graph_engine(case, solver):
    """T to 1e-9; λ equal to the engine's derivative where it is unique, else within
    [λ−, λ+]; GLOP from its crash basis gives λ_L⁺ exactly. ``glop-cold`` solves without the
    crash basis, so the LP alone (not the longest-path sweep) produces the numbers."""
    graph, params = case
    events = engine_for(graph).events(params)
    name, _, cold = solver.partition("-")
    lp = LinearProgram(events, params, solver=name, crash_basis=not cold)
    _check_against_engine(lp, graph, params)
    other = params.with_(L=params.L * 0.5 + 123.0, G=params.G + 0.25)
    _check_against_engine(lp, graph, other)  # warm re-solve with new bounds
    if solver == "glop":
        assert lp.solve(other).lambda_L == engine_for(graph).point(other).right["L"]


@SLOW_OK
@given(
    programs(), st.sampled_from([0.0, 0.01, 0.3]), st.sampled_from(["glop", "highs", "glop-cold"])
)
def test_tolerance_matches_bisection_on_the_graph_engine(case, x, solver):
    graph, params = case
    events = engine_for(graph).events(params)
    name, _, cold = solver.partition("-")
    lp = LinearProgram(events, params, solver=name, crash_basis=not cold)
    bound = (1.0 + x) * engine_for(graph).runtime(params)
    for parameter in ("L", "G"):
        expected = _max_within(graph, params, bound, parameter)
        got = lp.tolerance(bound, parameter=parameter)
        if math.isinf(expected):
            assert got == math.inf
        else:
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-6), parameter
