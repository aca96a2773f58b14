"""`agentic train distill` / `agentic train distill-eval`: the whole distillation loop on CPU, resumable by stage."""

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


@train_app.command("distill-eval")
def distill_eval(limit: Annotated[Optional[int], typer.Option(help="Only the first N questions per dev file.")] = None,  # noqa: UP007
                 out: Out = None, config: ConfigFile = None, set_: Set = None, show_config: ShowConfig = False,
                 dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the eval commands only.")] = False,
                 policy: Annotated[Optional[list[str]], typer.Option("--policy", help="Only this policy: base, sft or distilled (repeatable; default all three).")] = None,  # noqa: UP007
                 ) -> None:
    """Base (demo prompting help) vs distilled (plain prompt) with Search-o1 over per-question BM25 on the dev files."""
    from train.distill.evaluate import POLICIES, run_distill_eval

    run_distill_eval(_settings(config, set_, out, False, show_config), limit=limit, echo=typer.echo, dry_run=dry_run,
                     only=tuple(policy) if policy else POLICIES)
