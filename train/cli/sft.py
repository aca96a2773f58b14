"""`agentic train sft`: supervised fine-tuning on trajectories (TRL SFTTrainer) -> HF checkpoint + policy.gguf."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from agentic_infer.cli.app import train_app
from agentic_infer.cli.settings import ConfigFile, Set, ShowConfig, engine_settings

Gpus = Annotated[int, typer.Option("--gpus", help="With --print-launch: GPUs per node.")]
Strategy = Annotated[str, typer.Option("--strategy", help="With --print-launch: ddp | zero2 | zero3 | fsdp.")]
Nodes = Annotated[int, typer.Option("--nodes", help="With --print-launch: number of nodes.")]
PrintLaunch = Annotated[bool, typer.Option("--print-launch", help="Write the accelerate/DeepSpeed/FSDP configs "
                                           "and print the launch command instead of training.")]
Processes = Annotated[int, typer.Option("--processes", help="Train on N processes (DDP; on CPU gloo) through the "
                                        "launch files --print-launch writes; batch_size is per process.")]


def emit_launch(command: str, settings: Any, *, gpus: int, strategy: str, nodes: int, vllm_gpus: int = 0,
                model: str = "MODEL") -> dict[str, Any]:
    """Write `out/launch/` (the effective settings as `settings.yaml`, accelerate/DeepSpeed/FSDP configs,
    launch.sh) and print the commands; the launched command reads the settings file."""
    import yaml

    from agentic_infer.config import config_to_dict
    from train.launch import write_launch

    folder = Path(settings.out) / "launch"
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / "settings.yaml"
    cfg.write_text(yaml.safe_dump(config_to_dict(settings), sort_keys=False, allow_unicode=True))
    res = write_launch(folder, command, gpus=gpus, strategy=strategy, nodes=nodes, vllm_gpus=vllm_gpus, model=model,
                       train_args=["--config", str(cfg)], precision=settings.precision)
    for f in [str(cfg), *res["files"]]:
        typer.echo(f"# wrote {f}", err=True)
    for c in res["commands"]:
        typer.echo(c)
    return res


def launch_processes(command: str, settings: Any, processes: int) -> None:
    """Train on `processes` processes of this machine: write the DDP launch files (`emit_launch`, strategy ddp,
    one process per GPU, or per core group on CPU) and run their `launch.sh` with this venv's `accelerate`. Without
    CUDA the processes form a gloo group, each with cores / processes torch threads unless `threads` is set."""
    import dataclasses
    import os
    import subprocess
    import sys

    import torch

    from agentic_infer.errors import ConfigError
    from train.precision import Hardware, resolve_threads

    if processes < 2:
        raise ConfigError(f"--processes {processes}: give 2 or more (1 process is the plain command)")
    if "LOCAL_RANK" in os.environ:
        raise ConfigError("--processes inside a launched process: the launch files run the plain command")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # accelerate
    cpu = not torch.cuda.is_available()  # our trainers set use_cpu there, so Accelerate's group is gloo
    if cpu:
        if settings.threads == 0:
            settings = dataclasses.replace(settings, threads=max(1, resolve_threads(0, Hardware.detect())[0] // processes))
    res = emit_launch(command, settings, gpus=processes, strategy="ddp", nodes=1)
    launch = Path(res["files"][-1])
    typer.echo(f"# running {launch} ({processes} processes{', CPU: gloo' if cpu else ''})",
               err=True)
    done = subprocess.run(["sh", str(launch)], env=env)
    if done.returncode != 0:
        raise typer.Exit(done.returncode)


def is_main_process() -> bool:
    """Rank 0 of a launched job, or a plain process."""
    import os

    return int(os.environ.get("RANK", "0")) == 0


@train_app.command("sft")
def sft(
    data: Annotated[Optional[Path], typer.Option(help="JSONL of rollouts, trajectories, tokenized rows or messages.")] = None,  # noqa: UP007
    model: Annotated[Optional[str], typer.Option(help="Backend URI (llamacpp://default, hf:///dir, ...).")] = None,  # noqa: UP007
    out: Annotated[Optional[Path], typer.Option(help="Output folder: HF checkpoint + policy.gguf.")] = None,  # noqa: UP007
    max_steps: Annotated[Optional[int], typer.Option(help="Stop after N optimizer steps.")] = None,  # noqa: UP007
    lora: Annotated[bool, typer.Option("--lora", help="Train LoRA adapters (merged before saving).")] = False,
    allow_inexact: Annotated[bool, typer.Option("--allow-inexact", help="Accept token_exact=False trajectories.")] = False,
    config: ConfigFile = None,
    set_: Set = None,
    show_config: ShowConfig = False,
    print_launch: PrintLaunch = False,
    gpus: Gpus = 1,
    strategy: Strategy = "zero2",
    nodes: Nodes = 1,
    processes: Processes = 1,
) -> None:
    """Supervised fine-tuning on agent trajectories; settings: train.sft.SFTSettings (see --show-config)."""
    from train.sft import SFTSettings, train_sft

    flags = {k: v for k, v in {"data": str(data) if data else None, "model": model, "out": str(out) if out else None,
                               "max_steps": max_steps}.items() if v is not None}
    if lora:
        flags["lora"] = True
    if allow_inexact:
        flags["allow_inexact"] = True
    settings = engine_settings(SFTSettings, config, [*(set_ or []), *(f"{k}={v}" for k, v in flags.items())],
                               show=show_config)
    if print_launch:
        emit_launch("sft", settings, gpus=gpus, strategy=strategy, nodes=nodes)
        return
    if processes != 1:
        launch_processes("sft", settings, processes)
        return
    from train.precision import resolve_compute

    compute = resolve_compute(settings.precision, settings.threads)
    typer.echo(f"training with {compute}", err=True)
    result = train_sft(settings, compute=compute)
    if is_main_process():
            typer.echo(f"trained {result.steps} steps on {result.rows} rows ({result.tokens} trained tokens) in "
                   f"{result.train_seconds:.1f} s -> {result.out}" + (f", {result.gguf}" if result.gguf else ""))
