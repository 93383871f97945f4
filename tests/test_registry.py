"""The analysis registry (lp/registry.py): every registered analysis is reachable from the
command line, a study and the UI with the same parameters, read by the same parsers (an
analysis of several runs, ``compare``: the command line and the UI's Compare page; a study
cell is one run)."""

from __future__ import annotations

import dataclasses

import click
import pytest

from llamp.cli import cli
from llamp.errors import InputError, LlampError
from llamp.lp.registry import ANALYSES
from llamp.study.analyses import ANALYSES as STUDY

NAMES = sorted(ANALYSES)
#: The analyses of one graph (a study's cells run them) and those of several runs.
ONE_GRAPH = [n for n in NAMES if ANALYSES[n].input == "graph"]
SEVERAL_RUNS = [n for n in NAMES if ANALYSES[n].input == "runs"]


def _command(name: str) -> click.Command:
    return cli.get_command(click.Context(cli), name)


def _cli_settings(name: str, args: list[str]):
    """The settings the command ``llamp NAME GRAPH ARGS`` would run with."""
    command = _command(name)
    # under the group's context, as `llamp NAME` runs: a context of its own would make click
    # keep the command's help option without `-h` for every later invocation in this process
    parent = click.Context(cli, info_name="llamp", **cli.context_settings)
    with command.make_context(name, ["graph.npz", *args], parent=parent) as ctx:
        values = ctx.params
    entry = ANALYSES[name]
    return entry.parse({o.field: values[o.field] for o in entry.options})


@pytest.mark.parametrize("name", NAMES)
def test_the_settings_are_the_options(name):
    entry = ANALYSES[name]
    assert [f.name for f in dataclasses.fields(entry.settings)] == [o.field for o in entry.options]
    assert len({o.flag for o in entry.options}) == len(entry.options)
    assert entry.default_settings() == _cli_settings(name, [])


@pytest.mark.parametrize("name", NAMES)
def test_every_option_is_a_command_line_option_with_its_default(name):
    params = {p.name: p for p in _command(name).params}
    for opt in ANALYSES[name].options:
        assert opt.field in params, (name, opt.flag)
        param = params[opt.field]
        assert opt.flag in param.opts
        if opt.kind not in ("flag", "multiple"):
            assert param.default == opt.default, (name, opt.flag)


def test_the_study_runs_every_analysis_of_one_graph():
    assert sorted(STUDY) == ONE_GRAPH
    assert SEVERAL_RUNS == ["compare"]


@pytest.mark.parametrize("name", ONE_GRAPH)
def test_every_option_is_a_study_key_and_the_study_command_reads_back_the_same(name):
    """A study's settings (its own defaults included) are the settings its equivalent command
    runs with: the arguments each option writes parse back to the same typed values."""
    entry, model = ANALYSES[name], STUDY[name].settings
    assert STUDY[name].networks == entry.networks
    keys = {info.alias or field for field, info in model.model_fields.items()}
    assert keys == {o.study_key for o in entry.options}
    raw = model.model_validate({}).model_dump(by_alias=True)
    args = [a for o in entry.options for a in o.arguments(raw[o.study_key])]
    assert _cli_settings(name, args) == entry.parse(raw, study=True)


def test_a_non_default_study_setting_reaches_the_command_unchanged():
    entry, model = ANALYSES["mc"], STUDY["mc"].settings
    raw = model.model_validate(
        {"samples": 7, "x": ["0.5%", 2], "slow_ranks": [3, 1], "runtime_only": True}
    ).model_dump(by_alias=True)
    args = [a for o in entry.options for a in o.arguments(raw[o.study_key])]
    settings = _cli_settings("mc", args)
    assert settings == entry.parse(raw, study=True)
    assert settings.levels == (0.005, 0.02) and settings.slow_ranks == (1, 3)
    assert settings.samples == 7 and settings.runtime_only


def test_one_parser_per_value_kind_with_the_flag_or_the_key_in_its_error():
    entry = ANALYSES["tolerance"]
    with pytest.raises(InputError, match=r"^--x: cannot read 'abc'"):
        entry.parse({"levels": "abc"})
    with pytest.raises(InputError, match=r"^x: "):
        entry.parse({"x": [-1]}, study=True)
    with pytest.raises(InputError, match=r"^--slow-ranks: cannot read 'a'"):
        ANALYSES["mc"].parse({"slow_ranks": "1,a"})
    assert ANALYSES["mc"].parse({"slow_ranks": "0-2,5"}).slow_ranks == (0, 1, 2, 5)


@pytest.mark.parametrize("name", NAMES)
def test_the_ui_stores_every_result_type(name):
    """The store codec of the UI registers what each analysis returns, so the UI's runner
    (:func:`llamp.ui.controls.analysis`) can keep any of them as an Analysis node."""
    from llamp.ui import codec, stored  # noqa: F401 - registers the shapes

    entry = ANALYSES[name]
    assert entry.result in entry.stored or entry.result in codec._NAMES
    assert all(cls in codec._NAMES for cls in entry.stored)


@pytest.mark.parametrize("name", ONE_GRAPH)
def test_the_ui_runner_runs_every_analysis_with_the_settings_it_is_given(name, monkeypatch):
    """:func:`llamp.ui.controls.analysis` runs the registry's own function with the typed
    settings a page gives it (the command line's by default) and keeps the result under the
    entry's stored kind, keyed on those settings."""
    from llamp.params import LogGPS
    from llamp.ui import controls

    entry = ANALYSES[name]
    calls = []

    def run(graph, inputs, settings):
        calls.append((graph, inputs, settings))
        return "result"

    monkeypatch.setitem(ANALYSES, name, dataclasses.replace(entry, run=run))
    started = {}

    def background(sel, slot, label, compute, inputs=(), *, stored_as=None, **kw):
        started.update(compute=compute, key=inputs, kind=stored_as)
        return compute("graph", _Task())

    monkeypatch.setattr(controls, "background", background)
    sel = controls.Selection("run", "token", LogGPS())
    assert controls.analysis(sel, name, "label") == "result"
    ((graph, inputs, settings),) = calls
    assert graph == "graph" and inputs.params == sel.params and inputs.report is not None
    assert settings == entry.default_settings() == _cli_settings(name, [])
    assert started["kind"] == entry.kind and started["key"][:2] == (name, settings)


class _Task:
    def report(self, fraction, text):
        pass

    def steady(self):
        import contextlib

        return contextlib.nullcontext()


# ---------------------------------------------------------------------- analyses of several runs
def test_the_compare_page_reads_its_inputs_as_the_command_line_does():
    """The Compare page's tolerance levels and largest L are ``llamp compare``'s ``--x`` and
    ``--to``, read by the same parsers."""
    from llamp.ui import run_comparison

    page = run_comparison.settings("0.5%, 2", "20us")
    assert page == _cli_settings("compare", ["b.npz", "--x", "0.5%,2", "--to", "20us"])
    assert page.levels == (0.005, 0.02) and page.hi == 20_000.0
    assert run_comparison.settings("1,2,5", "") == ANALYSES["compare"].default_settings()
    with pytest.raises(InputError, match=r"^largest L 0us: must be > 0"):
        run_comparison.settings("1", "0us")
    with pytest.raises(LlampError, match=r"has no unit"):
        run_comparison.settings("1", "20")  # a page's duration needs a unit
    with pytest.raises(InputError, match=r"^--to 0us: must be > 0"):
        ANALYSES["compare"].parse({"hi": "0us"})


@pytest.mark.parametrize("hi", ["", "4us"])
def test_the_compare_page_computes_per_run_what_llamp_compare_computes(hi, tiny, monkeypatch):
    """The UI's Compare runner (figures and critical-latency search per run, kept per run)
    gives exactly the registry's ``compare`` of the same runs (what ``llamp compare`` prints):
    figures, searches and exact curves."""
    from hand_graphs import paper_example

    from llamp.lp.registry import Inputs
    from llamp.lp.tolerance import latency_range
    from llamp.params import LogGPS
    from llamp.ui import run_comparison, store_access, stored

    graphs = {"a": paper_example(), "b": tiny}
    monkeypatch.setattr(store_access, "load_graph", lambda name, token: graphs[name])
    monkeypatch.setattr(stored, "find", lambda *args: None)
    monkeypatch.setattr(stored, "save", lambda *args: None)
    params = LogGPS(L=500.0, o=0.0, G=5.0)
    settings = run_comparison.settings("1,5", hi)

    ui = run_comparison.work([("a", "ta"), ("b", "tb")], params, settings.levels, settings.hi)(
        _Task()
    )
    cli = ANALYSES["compare"].run(list(graphs.values()), Inputs(params, names=("a", "b")), settings)
    # one result: the same figures, searches and exact curves, whichever consumer runs it
    assert ui.as_dict() == cli.as_dict()
    assert ui.curves.equals(cli.curves)
    assert ui.critical == cli.critical
    for search, run in zip(ui.critical, ui.runs, strict=True):
        top = 4000.0 if hi else latency_range((t.value for t in run.tolerance.latency), params.L)[1]
        assert (search.lo, search.hi) == (0.0, top)
        curve = ui.curves[ui.curves["run"] == run.name]
        exact = search.runtime_at(curve["L_ns"].to_numpy())
        assert exact.tolist() == curve["runtime_ns"].tolist()
