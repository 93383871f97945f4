"""The ``llamp`` command line: one entry point, one module per group of subcommands.

Exit codes: 0 success, 2 bad input (:class:`llamp.errors.InputError`, or a path that cannot be
read or written), 1 internal error (a line saying so and where to report it, never a
traceback unless ``LLAMP_DEBUG=1``). Every diagnostic goes through one channel
(:func:`llamp.cli.base.message`): one line ``llamp: error: …`` or ``llamp: warning: …`` on
stderr, without passwords, with control characters escaped and long quoted input cut; Python
warnings raised by the library (``IngestWarning``) are relayed the same way.
Human tables by default, ``--json`` for machines.
"""

from __future__ import annotations

import os
import sys

import click

# Each module registers its subcommands on ``cli`` when imported.
from llamp.cli import analyze as _analyze  # noqa: E402,F401
from llamp.cli import application as _application  # noqa: E402,F401
from llamp.cli import compare as _compare  # noqa: E402,F401
from llamp.cli import ingest as _ingest  # noqa: E402,F401
from llamp.cli import injector as _injector  # noqa: E402,F401
from llamp.cli import network as _network  # noqa: E402,F401
from llamp.cli import store as _store  # noqa: E402,F401
from llamp.cli import study as _study  # noqa: E402,F401
from llamp.cli import synth as _synth  # noqa: E402,F401
from llamp.cli import trace as _trace  # noqa: E402,F401
from llamp.cli import ui as _ui  # noqa: E402,F401
from llamp.cli.base import cli, message
from llamp.config import redact
from llamp.errors import InputError, LlampError, tidy


def main(argv: list[str] | None = None) -> None:
    """Console entry point with the exit-code contract of docs/architecture.md §CLI."""
    try:
        code = cli.main(args=argv, standalone_mode=False, prog_name="llamp")
    except click.exceptions.Abort:
        message("error", "aborted")
        sys.exit(1)
    except _NO_ARGS_IS_HELP as err:  # ``llamp`` or ``llamp runs`` alone: the help, as before
        err.show()
        sys.exit(2)
    except click.UsageError as err:
        hint = f" ({err.ctx.command_path} -h for help)" if err.ctx is not None else ""
        message("error", err.format_message() + hint)
        sys.exit(2)
    except click.ClickException as err:
        message("error", err.format_message())
        sys.exit(2)
    except InputError as err:
        message("error", err)
        sys.exit(2)
    except LlampError as err:
        message("error", err)
        sys.exit(1)
    except KeyboardInterrupt:
        message("error", "interrupted")
        sys.exit(1)
    except OSError as err:  # a path the user gave: missing directory, no permission, disk full
        where = f"{err.filename}: " if err.filename else ""
        message("error", where + (err.strerror or str(err)))
        sys.exit(2)
    except MemoryError:
        message("error", "out of memory: the input is too large for this machine")
        sys.exit(1)
    except Exception as err:  # noqa: BLE001 - the contract: a line, never a traceback
        if os.environ.get("LLAMP_DEBUG"):
            raise
        message(
            "error",
            f"internal error: {type(err).__name__}: {_shown(err)}. This is a bug in llamp, not "
            f"in your input: please report it ({REPORT_TO}) with the command line; "
            "LLAMP_DEBUG=1 shows the traceback.",
        )
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


#: Raised by a group called without a command (click ≥ 8.2); its message is the whole help.
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())

#: Where to report an internal error.
REPORT_TO = "the llamp issue tracker"


def _shown(err: BaseException | str) -> str:
    """One line: no password of a store URI, control characters escaped, long runs cut."""
    return tidy(redact(str(err))).replace("\n", " ")
