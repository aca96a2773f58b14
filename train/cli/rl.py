"""`agentic train grpo`: GRPO-family RL with our engines' multi-turn rollouts (TRL GRPOTrainer + rollout_func);
`agentic train rl`: the RL recipe on a game (SFT from solver demos, then GRPO and GiGPO), resumable by stage."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from agentic_infer.cli.app import train_app
from agentic_infer.cli.settings import ConfigFile, Set, ShowConfig, engine_settings
from train.cli.sft import (
    Gpus,
    Nodes,
    PrintLaunch,
    Processes,
    Strategy,
    emit_launch,
    is_main_process,
    launch_processes,
)


@train_app.command("grpo")
def grpo(
    config: ConfigFile = None,
    out: Annotated[Optional[Path], typer.Option(help="Output folder: HF checkpoint + policy.gguf.")] = None,  # noqa: UP007
    max_steps: Annotated[Optional[int], typer.Option(help="Stop after N optimizer steps.")] = None,  # noqa: UP007
    set_: Set = None,
    show_config: ShowConfig = False,
    print_launch: PrintLaunch = False,
    gpus: Gpus = 1,
    strategy: Strategy = "zero2",
    nodes: Nodes = 1,
    vllm_gpus: Annotated[int, typer.Option("--vllm-gpus", help="With --print-launch: GPUs for `trl vllm-serve`.")] = 0,
    processes: Processes = 1,
) -> None:
    """GRPO / Dr. GRPO / RLOO / GiGPO / ARPO with Search-o1, TIR or env-agent rollouts (`env: NAME`); settings:
    train.grpo.GRPOSettings."""
    from train.grpo.config import GRPOSettings

    flags = [f"out={out}"] if out else []
    flags += [f"max_steps={max_steps}"] if max_steps is not None else []
    settings = engine_settings(GRPOSettings, config, [*(set_ or []), *flags], show=show_config)
    if print_launch:
        emit_launch("grpo", settings, gpus=gpus, strategy=strategy, nodes=nodes,
                    vllm_gpus=vllm_gpus, model=_served(settings.model))
        return
    if processes != 1:
        launch_processes("grpo", settings, processes)
        return
    from train.grpo.run import train_grpo
    from train.precision import resolve_compute

    compute = resolve_compute(settings.precision, settings.threads)
    typer.echo(f"training with {compute}", err=True)
    result = train_grpo(settings, compute=compute)
    if is_main_process():
            typer.echo(f"trained {result['steps']} steps -> {result['out']}" + (f", {result['gguf']}" if result["gguf"] else ""))


def _served(uri: str) -> str:
    """What `trl vllm-serve --model` takes: an HF folder (a GGUF source: its converted folder, named here)."""
    from train.model_io import resolve_model

    src = resolve_model(uri)
    return str(src.directory) if not src.is_gguf else f"<HF folder of {uri}: agentic train sft --max-steps 0 --out DIR>"


@train_app.command("rl")
def rl(game: Annotated[str, typer.Option(help="frozenlake | sokoban")] = "frozenlake",
       quick: Annotated[bool, typer.Option("--quick", help="2 demos, 1 step per stage (the test-suite run).")] = False,
       out: Annotated[Optional[Path], typer.Option(help="Run folder (default runs/rl).")] = None,  # noqa: UP007
       config: ConfigFile = None, set_: Set = None, show_config: ShowConfig = False) -> None:
    """Demos -> SFT -> one RL stage per estimator -> report under runs/rl/<game>/ (a rerun skips finished stages)."""
    from train.rl import RLSettings, run_rl

    flags = [f"game={game}", *([f"out={out}"] if out else []), *(["quick=true"] if quick else [])]
    run_rl(engine_settings(RLSettings, config, [*(set_ or []), *flags], show=show_config), echo=typer.echo)
