"""``--engine auto``: the graph engine answers; above the LP size limit the output
says that the LP is too large for GLOP, and the report names the engine of every number."""

from __future__ import annotations

import importlib
import json

import pytest
from click.testing import CliRunner
from hand_graphs import paper_example

from llamp.cli.base import cli
from llamp.errors import InputError
from llamp.lp import predict
from llamp.lp.predict import LP_MAX_VERTICES, choose_engine
from llamp.params import LogGPS

#: The module (``llamp.lp.predict`` the attribute is the function of that name).
predict_module = importlib.import_module("llamp.lp.predict")

#: The paper example at the configuration of its docstring (T(0.5 µs) = 1.615 µs).
PAPER = ("--L", "0.5us", "--o", "0", "--G", "5ns/B", "--nic", "overlap")  # the paper's model


@pytest.fixture
def tiny_lp_limit(monkeypatch):
    """Pretend the LP limit is 3 vertices: the 6-vertex paper example is 'too large'."""
    monkeypatch.setattr(predict_module, "LP_MAX_VERTICES", 3)


def run(tmp_path, *args: str) -> str:
    result = CliRunner().invoke(cli, list(args), env={"LLAMP_HOME": str(tmp_path)})
    assert result.exit_code == 0, result.output
    return result.output


def test_auto_below_the_limit_is_the_graph_engine_without_a_note():
    choice = choose_engine("auto", paper_example())
    assert (choice.requested, choice.engine, choice.vertices, choice.note) == (
        "auto",
        "graph",
        6,
        None,
    )
    assert choice.as_dict()["lp_max_vertices"] == LP_MAX_VERTICES


def test_auto_above_the_limit_says_the_lp_is_too_large(tiny_lp_limit):
    choice = choose_engine("auto", paper_example())
    assert choice.engine == "graph"
    assert "too large for GLOP" in choice.note and "6 vertices > 3" in choice.note


def test_an_explicit_lp_engine_above_the_limit_runs_with_a_warning(tiny_lp_limit):
    choice = choose_engine("glop", paper_example())
    assert choice.engine == "glop" and "may take minutes" in choice.note
    assert choose_engine("graph", paper_example()).note is None


def test_an_unknown_engine_is_refused():
    with pytest.raises(InputError, match="unknown engine 'gurobi'"):
        choose_engine("gurobi", paper_example())


def test_report_json_names_the_engine_of_every_section(paper_npz, tmp_path, tiny_lp_limit):
    data = json.loads(run(tmp_path, "report", paper_npz, *PAPER, "--json"))
    assert data["engine"]["requested"] == "auto" and data["engine"]["engine"] == "graph"
    assert "too large for GLOP" in data["engine"]["note"]
    assert data["predict"]["engine"] == "graph"
    assert {p["engine"] for p in data["sweep"]} == {"graph"}
    assert data["critical"]["engine"] == "graph"
    assert data["tolerance"]["engine"] == "graph"
    assert data["path"]["engine"] == "graph"
    assert data["predict"]["runtime_ns"] == pytest.approx(1615.0)


def test_report_text_states_the_note_and_the_engines(paper_npz, tmp_path, tiny_lp_limit):
    out = run(tmp_path, "report", paper_npz, *PAPER)
    assert "engine: graph (--engine auto; the critical path: graph)" in out
    assert "note: the LP of this graph is too large for GLOP" in out
    assert "sweep of L [graph]" in out and "[graph]" in out.split("critical path:")[1]


def test_report_with_glop_agrees_with_the_graph_engine(paper_npz, tmp_path):
    data = json.loads(run(tmp_path, "report", paper_npz, *PAPER, "--engine", "glop", "--json"))
    assert data["engine"] == {
        "requested": "glop",
        "engine": "glop",
        "vertices": 6,
        "lp_max_vertices": LP_MAX_VERTICES,
        "note": None,
    }
    assert {data[k]["engine"] for k in ("predict", "critical", "tolerance")} == {"glop"}
    assert {p["engine"] for p in data["sweep"]} == {"glop"}
    assert data["path"]["engine"] == "graph"
    exact = predict(paper_example(), LogGPS(L=500.0, o=0.0, G=5.0, nic="overlap"))
    assert data["predict"]["runtime_ns"] == pytest.approx(exact.runtime_ns, rel=1e-9)
    assert data["critical"]["critical_latencies_ns"] == [pytest.approx(385.0)]


@pytest.mark.parametrize("command", ["predict", "sweep", "critical", "tolerance"])
def test_single_analyses_carry_the_note_in_json_and_text(
    paper_npz, tmp_path, tiny_lp_limit, command
):
    data = json.loads(run(tmp_path, command, paper_npz, *PAPER, "--json"))
    assert "too large for GLOP" in data["engine_note"]
    assert "note: the LP of this graph is too large" in run(tmp_path, command, paper_npz, *PAPER)


def test_single_analyses_below_the_limit_have_a_null_note(paper_npz, tmp_path):
    data = json.loads(run(tmp_path, "predict", paper_npz, *PAPER, "--json"))
    assert data["engine_note"] is None and data["engine"] == "graph"
