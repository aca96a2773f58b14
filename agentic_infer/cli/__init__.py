"""`agentic` command line: one typer app; each command is thin and calls one library function.

Any `AgenticError` (bad URI, bad parameter, missing file) becomes one line on stderr and exit
code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import sys

from agentic_infer.cli.app import app
from agentic_infer.errors import AgenticError

# Command modules register themselves on import; a module whose optional extra is missing is skipped
# only if it is absent, never silently on other errors.
COMMAND_MODULES = ("generate", "retrieval")


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            importlib.import_module(f"agentic_infer.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"agentic_infer.cli.{name}":
                raise


def main() -> None:
    _register()
    try:
        app()
    except AgenticError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
