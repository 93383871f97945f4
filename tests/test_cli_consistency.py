"""One CLI: option choices from the registries, one percentage rule, one name per concept,
diagnostics as one ``llamp: error|warning:`` line, key/value listings without an empty header,
runs named after the application."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from llamp.cli import main
from llamp.config import format_ns, format_percent
from llamp.ingest import FORMATS
from llamp.lp import tolerance
from llamp.lp.classify import NETWORKS
from llamp.lp.predict import ENGINES
from llamp.params import LogGPS

SWEEP3D = Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2"


def run(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def one_error(err: str) -> str:
    """The single diagnostic line of a failed command."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("llamp: error: "), err
    assert "Traceback" not in err and "Usage:" not in err
    return lines[0]


def unmodelled_trace(directory: Path) -> Path:
    """Two ranks that call MPI_Pcontrol once each: read with an IngestWarning (absorbed call)."""
    directory.mkdir()
    for r in range(2):
        lines = ["# collprof 0.9 output file", "", "MPI_Init:-:1:2:100", "MPI_Pcontrol:110:1:111"]
        lines.append("MPI_Finalize:140:-")
        (directory / f"pmpi-trace-rank-{r}.txt").write_text("\n".join(lines) + "\n")
    return directory


# ---------------------------------------------------------------------- registries
def test_ingest_format_choices_are_the_registry(capsys, tmp_path):
    code, out, _ = run(capsys, "ingest", "-h")
    assert code == 0
    for name in ("auto", *FORMATS):
        assert name in out
    assert {"otf2", "dumpi", "simgrid"} <= set(FORMATS)
    code, _, err = run(capsys, "ingest", SWEEP3D, "--format", "csv", "-o", tmp_path / "x.npz")
    line = one_error(err)
    assert code == 2 and "'csv' is not one of" in line
    assert all(f"'{name}'" in line for name in FORMATS)
    assert line.endswith("(llamp ingest -h for help)")


def test_an_explicit_registered_format_reads(capsys, tmp_path):
    code, _, err = run(
        capsys, "ingest", SWEEP3D, "--format", "liballprof", "-o", tmp_path / "s.npz"
    )
    assert code == 0, err


def test_engine_choices_are_the_registry(capsys, paper_npz):
    code, out, _ = run(capsys, "predict", "-h")
    assert code == 0 and "[" + "|".join(ENGINES) + "]" in out
    code, _, err = run(capsys, "predict", paper_npz, "--engine", "cplex")
    assert code == 2 and "'cplex' is not one of" in one_error(err)


def test_classify_target_choices_are_the_built_in_networks(capsys):
    code, out, _ = run(capsys, "classify", "-h")
    assert code == 0 and "--target" in out
    assert all(name in out for name in NETWORKS)
    assert "--network" not in out  # the deprecated spelling is hidden


# ---------------------------------------------------------------------- one name per concept
def test_classify_network_is_a_deprecated_alias_of_target(capsys, tmp_path):
    """``--target`` is the target network; ``--network`` still works, with a warning."""
    code, out, err = run(capsys, "classify", SWEEP3D, "--target", "qdr", "--json")
    assert code == 0 and err == ""
    payload = json.loads(out)
    code, out_old, err_old = run(capsys, "classify", SWEEP3D, "--network", "QDR", "--json")
    assert code == 0 and json.loads(out_old) == payload
    assert err_old.splitlines() == [
        "llamp: warning: classify --network is deprecated: use --target (--network names a "
        "calibrated profile in every other command)"
    ]
    code, _, err = run(capsys, "classify", SWEEP3D, "--target", "QDR", "--network", "HDR")
    assert code == 2 and "give --target only" in one_error(err.splitlines()[-1])


# ---------------------------------------------------------------------- percentages
def test_tolerance_labels_half_a_percent_as_such(capsys, paper_npz):
    """``--x 0.5`` is 0.5 % (a bare number is a percentage) and is printed ``0.5%``, not ``0%``."""
    from llamp.graph import ExecutionGraph

    code, out, err = run(capsys, "tolerance", paper_npz, "--x", "0.5,5%")
    assert code == 0, err
    expected = tolerance(ExecutionGraph.load(paper_npz), LogGPS(), [0.005, 0.05])
    lines = [line for line in out.splitlines()[3:] if line]
    rows = {line.split()[0]: line for line in lines if line.split()[0].endswith("%")}
    assert set(rows) == {"0.5%", "5%"}
    for level in expected.latency:
        row = rows[format_percent(level.x)]
        assert format_ns(level.value) in row and format_ns(level.bound_ns) in row
    code, out_json, _ = run(capsys, "tolerance", paper_npz, "--x", "0.5", "--json")
    assert [t["x"] for t in json.loads(out_json)["latency"]] == [0.005]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("0", "--x: '0' must be a positive percentage (e.g. 5 or 5%)"),
        ("-1", "--x: '-1' must be a positive percentage"),
        ("1,two", "--x: cannot read 'two' as a percentage (e.g. 5, 5% or 0.5%)"),
    ],
)
def test_bad_percentages_are_one_line_errors(capsys, paper_npz, value, why):
    code, _, err = run(capsys, "tolerance", paper_npz, "--x", value)
    assert code == 2 and why in one_error(err)


def test_classify_shares_take_the_same_percentages(capsys):
    code, out, err = run(capsys, "classify", SWEEP3D, "--target", "QDR", "--json")
    base = json.loads(out)
    code, out, err = run(
        capsys, "classify", SWEEP3D, "--target", "QDR", "--bound-share", "25%", "--json"
    )
    assert code == 0 and json.loads(out) == base
    code, _, err = run(capsys, "classify", SWEEP3D, "--target", "QDR", "--compute-share", "0")
    assert code == 2 and "--compute-share: '0' must be a positive percentage" in one_error(err)


def test_budgets_and_ranges_share_the_parsers(capsys, paper_npz):
    code, _, err = run(capsys, "critical", paper_npz, "--max-evaluations", "1")
    assert code == 2 and "--max-evaluations: 1 < 2" in one_error(err)
    code, _, err = run(capsys, "critical", paper_npz, "--from", "5us", "--to", "1us")
    assert code == 2 and "range 5us..1us: need 0 ≤ from ≤ to" in one_error(err)
    code, _, err = run(capsys, "region", paper_npz, "--max-evaluations", "auto")
    assert code == 2 and "region takes all or a whole number" in one_error(err)


# ---------------------------------------------------------------------- one channel
def test_ingest_warnings_are_one_line_in_every_command(capsys, tmp_path):
    """The absorbed MPI_Pcontrol is reported the same way by ingest, info and predict."""
    trace = unmodelled_trace(tmp_path / "t")
    expected = (
        "llamp: warning: calls not modelled, absorbed into calc: MPI_Pcontrol ×2 "
        f"(e.g. {trace / 'pmpi-trace-rank-0.txt'}:4)"
    )
    for args in (
        ("ingest", trace, "-o", tmp_path / "t.npz"),
        ("info", trace),
        ("predict", trace),
        ("sweep", trace, "--points", "2"),
    ):
        code, _, err = run(capsys, *args)
        assert code == 0, err
        assert err.splitlines() == [expected], (args, err)


def test_usage_errors_are_one_line(capsys):
    code, _, err = run(capsys, "predict", "--no-such-option")
    assert code == 2 and "No such option '--no-such-option'" in one_error(err)
    code, _, err = run(capsys, "no-such-command")
    assert code == 2 and "No such command 'no-such-command'" in one_error(err)


# ---------------------------------------------------------------------- listings, names
def test_info_has_no_empty_header_row(capsys):
    code, out, err = run(capsys, "info", SWEEP3D)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["name", "sweep3d-2x2"]
    assert lines[1].startswith("format") and not any(x and set(x) <= {"-", " "} for x in lines[:10])
    assert "rank  calc" in out  # the per-rank table keeps its header


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["mpirun", "-np", "4", "/bin/true", "none"], "true"),
        (["mpirun", "-np", "4", "./lulesh2.0", "-s", "30"], "lulesh2.0"),
        (["srun", "-n", "8", "python3", "-u", "app.py", "--size", "3"], "app"),
        (["mpiexec", "-n", "2", "--host", "a,b", "ls", "-l"], "ls"),
        (["OMP_NUM_THREADS=2", "./miniFE.x", "nx=30"], "miniFE.x"),
    ],
)
def test_validate_names_a_run_after_the_application(command, name):
    from llamp.injector.validate import application_name, default_run_name

    assert application_name(command) == name
    assert default_run_name(command).startswith(f"validate-{name}-")


# ---------------------------------------------------------------------- units
def test_sweep_prints_values_with_units_and_json_in_ns(capsys, paper_npz):
    """The table says ``10 µs`` (as ``report`` does), the JSON keeps ``L_ns: 10000.0``."""
    code, out, err = run(capsys, "sweep", paper_npz, "--from", "0", "--to", "10us", "--points", "2")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["L", "T"]
    assert lines[2].startswith("0 ns ") and lines[3].startswith("10 µs ")
    code, out, _ = run(capsys, "sweep", paper_npz, "--to", "10us", "--points", "2", "--json")
    assert [p["L_ns"] for p in json.loads(out)["points"]] == [0.0, 10_000.0]
    code, out, _ = run(capsys, "sweep", paper_npz, "--param", "G", "--to", "1ns/B", "--points", "2")
    assert out.splitlines()[3].startswith("1 ns/B ")


def test_library_deprecations_stay_hidden_and_user_warnings_show(capsys):
    """Only warnings meant for the user reach stderr, as one line each (once per message)."""
    import warnings

    import click

    from llamp.cli.base import cli

    @cli.command("warn-probe", hidden=True)
    def _probe() -> None:
        warnings.warn("old API", DeprecationWarning, stacklevel=1)
        for _ in range(2):
            warnings.warn("solver hit its iteration limit", RuntimeWarning, stacklevel=1)
        click.echo("done")

    try:
        code, out, err = run(capsys, "warn-probe")
    finally:
        del cli.commands["warn-probe"]
    assert code == 0 and out == "done\n"
    assert err.splitlines() == ["llamp: warning: solver hit its iteration limit"]


def test_llamp_alone_prints_the_help(capsys):
    code, out, err = run(capsys)
    assert code == 2 and "llamp: error" not in out + err
    assert "Commands:" in out + err and "ingest" in out + err


def test_study_specs_read_percentages_with_the_same_parser(tmp_path):
    """A spec's ``x`` and classification shares follow ``--x``'s rule and its messages."""
    from llamp.study.spec import SpecError, load_spec

    dumpi = Path(__file__).parent / "data" / "traces" / "dumpi" / "sst-dumpi-4ranks"
    head = f"study: s\nruns:\n  - {{name: a, path: {dumpi}}}\nnetworks: [{{name: n}}]\n"
    good = tmp_path / "good.yaml"
    good.write_text(
        head + "analyses:\n  - tolerance: {x: [0.5%, 2]}\n  - classify: {bound_share: 30%}\n"
    )
    settings = {cell.analysis: cell.settings for cell in load_spec(good).cells}
    assert settings["tolerance"]["x"] == [0.5, 2.0]
    assert settings["classify"]["bound_share"] == 30.0
    bad = tmp_path / "bad.yaml"
    bad.write_text(head + "analyses:\n  - tolerance: {x: [0.5%, 0]}\n")
    with pytest.raises(SpecError) as err:
        load_spec(bad)
    assert str(err.value) == (
        f"{bad}:6: analyses[0].tolerance.x: x: 0 must be a positive percentage (e.g. 5 or 5%)"
    )


def test_a_target_network_given_as_a_profile_is_pointed_to_classify(
    capsys, paper_npz, tmp_path, monkeypatch
):
    """``--network`` is a calibrated profile; a classify target name there gets a hint."""
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path))
    code, _, err = run(capsys, "predict", paper_npz, "--network", "hdr")
    line = one_error(err)
    assert code == 2 and "no network profile 'hdr'" in line
    assert line.endswith("HDR is a target network of `llamp classify --target`, not a profile")


def test_the_command_table_names_every_command_its_module_and_its_help():
    """``llamp --help`` lists the commands from :data:`COMMANDS` without importing them: the
    table holds every registered command, the module that defines it and its one-line help."""
    import click

    from llamp.cli.base import COMMANDS, cli

    commands = {n: c for n, c in cli.load_all().items() if not c.hidden}
    assert sorted(COMMANDS) == sorted(commands)
    for name, (module, short_help) in COMMANDS.items():
        command = commands[name]
        assert command.callback.__module__ == f"llamp.cli.{module}", name
        assert command.get_short_help_str(10**6) == short_help, name
        for limit in (30, 45, 80):
            shown = click.Command(name, help=short_help).get_short_help_str(limit)
            assert shown == command.get_short_help_str(limit), (name, limit)


def test_the_help_is_the_same_before_and_after_every_command_is_loaded():
    code = (
        "import sys; from click.testing import CliRunner; from llamp.cli.base import cli; "
        "lazy = CliRunner().invoke(cli, ['--help']).output; "
        "loaded = [m for m in sys.modules if m.startswith('llamp.cli.') and m != 'llamp.cli.base']; "
        "cli.load_all(); full = CliRunner().invoke(cli, ['--help']).output; "
        "print(loaded == [], lazy == full, 'predict' in lazy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "True", "True"], done.stderr


def test_a_mistyped_command_is_pointed_to_the_right_one(capsys):
    code, out, err = run(capsys, "predic")
    assert code == 2
    assert err.strip() == (
        "llamp: error: No such command 'predic'. Did you mean 'predict'? (llamp -h for help)"
    )
