"""`agentic train distill` (the whole distillation loop on CPU, resumable by stage) and `agentic train distill-spec`
(the `agentic eval compare` spec of its policies: `make distill-eval` runs it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from agentic_infer.cli.app import train_app
from agentic_infer.cli.settings import ConfigFile, Set, ShowConfig, engine_settings

Quick = Annotated[bool, typer.Option("--quick", help="A few questions, 1-2 steps per stage (the test-suite run).")]
Out = Annotated[Optional[Path], typer.Option(help="Run folder (default runs/distill).")]  # noqa: UP007


def _settings(config, set_, out, quick, show):
    from train.distill import DistillSettings

    flags = [f"out={out}"] if out else []
    flags += ["quick=true"] if quick else []
    return engine_settings(DistillSettings, config, [*(set_ or []), *flags], show=show)


@train_app.command("distill")
def distill(quick: Quick = False, out: Out = None, config: ConfigFile = None, set_: Set = None,
            show_config: ShowConfig = False) -> None:
    """Demos -> filter -> SFT -> GRPO -> GGUF -> report.md under runs/distill/ (a rerun skips finished stages)."""
    from train.distill import run_distill

    result = run_distill(_settings(config, set_, out, quick, show_config), echo=typer.echo)
    typer.echo(result["gguf"])


@train_app.command("distill-spec")
def distill_spec(out: Out = None, config: ConfigFile = None, set_: Set = None, show_config: ShowConfig = False,
                 path: Annotated[Optional[Path], typer.Option("--path", help="Where to write it (default OUT/compare.yaml).")] = None,  # noqa: UP007
                 ) -> None:
    """Write the `agentic eval compare` spec of the recipe's policies (base, SFT-only, distilled) and print its path."""
    from train.distill.evaluate import write_compare_spec

    typer.echo(str(write_compare_spec(_settings(config, set_, out, False, show_config), path)))


@train_app.command("distill-eval", hidden=True)
def distill_eval() -> None:
    """Moved: `make distill-eval`, i.e. `agentic train distill-spec` then `agentic eval compare SPEC`."""
    from agentic_infer.errors import ConfigError

    raise ConfigError("`agentic train distill-eval` moved to eval: run `make distill-eval`, or `agentic train "
                      "distill-spec` then `agentic eval compare runs/distill/compare.yaml [--limit N] [--policy NAME]`")
