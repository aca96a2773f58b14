"""`agentic` command line: one typer app; each command is thin and calls one library function.

Any `AgenticError` (bad URI, bad parameter, missing file) becomes one line on stderr and exit
code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer

try:  # recent typer vendors click
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - older typer uses click itself
    from click.exceptions import UsageError

from agentic_infer.cli.app import app
from agentic_infer.errors import AgenticError

# Command modules register themselves on import; a module whose optional extra is missing is skipped
# only if it is absent, never silently on other errors. Packages above agentic_infer (eval, synth, train) add
# their commands through the `agentic_infer.commands` entry-point group (pyproject.toml), so the
# dependency arrow keeps pointing down.
COMMAND_MODULES = ("generate", "retrieval", "serve", "agents", "deepconf", "tree", "envs")
ENTRY_POINT_GROUP = "agentic_infer.commands"


def _register() -> None:
    from importlib.metadata import entry_points

    modules = [f"agentic_infer.cli.{name}" for name in COMMAND_MODULES]
    modules += [ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)]
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise


def main(argv: list[str] | None = None) -> None:
    """Entry point of `agentic`: usage errors and AgenticErrors are one line on stderr, exit code 2."""
    _register()
    try:
        code = app(args=argv, standalone_mode=False)
    except UsageError as e:
        print(f"error: {e.format_message()}", file=sys.stderr)
        raise SystemExit(2) from None
    except typer.Abort:
        print("aborted", file=sys.stderr)
        raise SystemExit(130) from None
    except AgenticError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    raise SystemExit(code if isinstance(code, int) else 0)
