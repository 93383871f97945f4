"""The ``llamp`` command line: one entry point, one module per group of subcommands.

Exit codes: 0 success, 2 bad input (:class:`llamp.errors.InputError`), 1 internal error.
Human tables by default, ``--json`` for machines.
"""

from __future__ import annotations

import sys

import click

# Each module registers its subcommands on ``cli`` when imported.
from llamp.cli import analyze as _analyze  # noqa: E402,F401
from llamp.cli import application as _application  # noqa: E402,F401
from llamp.cli import ingest as _ingest  # noqa: E402,F401
from llamp.cli import injector as _injector  # noqa: E402,F401
from llamp.cli import network as _network  # noqa: E402,F401
from llamp.cli import store as _store  # noqa: E402,F401
from llamp.cli import study as _study  # noqa: E402,F401
from llamp.cli import trace as _trace  # noqa: E402,F401
from llamp.cli import ui as _ui  # noqa: E402,F401
from llamp.cli.base import cli
from llamp.errors import InputError, LlampError


def main(argv: list[str] | None = None) -> None:
    """Console entry point with the exit-code contract of DESIGN §9."""
    try:
        code = cli.main(args=argv, standalone_mode=False, prog_name="llamp")
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as err:
        err.show()
        sys.exit(2)
    except InputError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    except LlampError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
