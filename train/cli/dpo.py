"""`agentic train dpo`: preference optimisation on token-exact pairs (TRL DPOTrainer) -> HF checkpoint + policy.gguf."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from agentic_infer.cli.app import train_app
from agentic_infer.cli.settings import ConfigFile, Set, ShowConfig, engine_settings


@train_app.command("dpo")
def dpo(
    data: Annotated[Optional[Path], typer.Option(help="JSONL of preference pairs (synth tree-data's pairs.jsonl).")] = None,  # noqa: UP007
    model: Annotated[Optional[str], typer.Option(help="Start policy and reference: backend URI (llamacpp://default, hf:///dir, ...).")] = None,  # noqa: UP007
    out: Annotated[Optional[Path], typer.Option(help="Output folder: HF checkpoint + policy.gguf.")] = None,  # noqa: UP007
    max_steps: Annotated[Optional[int], typer.Option(help="Stop after N optimizer steps.")] = None,  # noqa: UP007
    beta: Annotated[Optional[float], typer.Option(help="DPO's beta (the KL weight).")] = None,  # noqa: UP007
    config: ConfigFile = None,
    set_: Set = None,
    show_config: ShowConfig = False,
) -> None:
    """Direct preference optimisation on preference pairs; settings: train.dpo.DPOSettings (see --show-config)."""
    from train.dpo import DPOSettings, train_dpo
    from train.precision import resolve_compute

    flags = {k: v for k, v in {"data": str(data) if data else None, "model": model, "out": str(out) if out else None,
                               "max_steps": max_steps, "beta": beta}.items() if v is not None}
    settings = engine_settings(DPOSettings, config, [*(set_ or []), *(f"{k}={v}" for k, v in flags.items())],
                               show=show_config)
    compute = resolve_compute(settings.precision, settings.threads)
    typer.echo(f"training with {compute}", err=True)
    result = train_dpo(settings, compute=compute)
    margin = next((h["rewards/margins"] for h in reversed(result.history) if "rewards/margins" in h), None)
    typer.echo(f"trained {result.steps} steps on {result.pairs} pairs ({result.kind}; {result.too_long} too long) in "
               f"{result.train_seconds:.1f} s" + (f", last reward margin {margin:.3f}" if margin is not None else "")
               + f" -> {result.out}" + (f", {result.gguf}" if result.gguf else ""))
