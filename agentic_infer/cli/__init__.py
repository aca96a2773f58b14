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
# only if it is absent, never silently on other errors.
COMMAND_MODULES = ("generate", "retrieval", "serve", "agents", "deepconf", "eval", "tree", "synth_pipeline",
                   "synth_data", "synth_fuzzqa", "train_sft", "train_rl", "train_distill")


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            importlib.import_module(f"agentic_infer.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"agentic_infer.cli.{name}":
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
