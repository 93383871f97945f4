"""The ``llamp`` command line: one entry point, one module per group of subcommands.

Exit codes: 0 success, 2 bad input (:class:`llamp.errors.InputError`, or a path that cannot be
read or written), 1 internal error (a line saying so and where to report it, never a
traceback unless ``LLAMP_DEBUG=1``). Every message is one line, without passwords, with
control characters escaped and long quoted input cut.
Human tables by default, ``--json`` for machines.
"""

from __future__ import annotations

import os
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
from llamp.cli import synth as _synth  # noqa: E402,F401
from llamp.cli import trace as _trace  # noqa: E402,F401
from llamp.cli import ui as _ui  # noqa: E402,F401
from llamp.cli.base import cli
from llamp.config import redact
from llamp.errors import InputError, LlampError, tidy


def main(argv: list[str] | None = None) -> None:
    """Console entry point with the exit-code contract of docs/architecture.md §CLI."""
    try:
        code = cli.main(args=argv, standalone_mode=False, prog_name="llamp")
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as err:
        err.show()
        sys.exit(2)
    except InputError as err:
        click.echo(f"error: {_shown(err)}", err=True)
        sys.exit(2)
    except LlampError as err:
        click.echo(f"error: {_shown(err)}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(1)
    except OSError as err:  # a path the user gave: missing directory, no permission, disk full
        where = f"{err.filename}: " if err.filename else ""
        click.echo(f"error: {_shown(where + (err.strerror or str(err)))}", err=True)
        sys.exit(2)
    except MemoryError:
        click.echo("error: out of memory: the input is too large for this machine", err=True)
        sys.exit(1)
    except Exception as err:  # noqa: BLE001 - the contract: a line, never a traceback
        if os.environ.get("LLAMP_DEBUG"):
            raise
        click.echo(
            f"internal error: {type(err).__name__}: {_shown(err)}\n"
            f"This is a bug in llamp, not in your input: please report it ({REPORT_TO}) with "
            "the command line; LLAMP_DEBUG=1 shows the traceback.",
            err=True,
        )
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


#: Where to report an internal error.
REPORT_TO = "the llamp issue tracker"


def _shown(err: BaseException | str) -> str:
    """One line: no password of a store URI, control characters escaped, long runs cut."""
    return tidy(redact(str(err))).replace("\n", " ")
