"""`agentic synth run | rollouts | filter`: synth pipelines on datatrove (see `synth.pipeline`).

    agentic synth run pipe.yaml --set rollout.samples=4 --set executor.tasks=2
    agentic synth rollouts --task hotpotqa --data ../shared/data/multihop/hotpotqa_train_100.json \
        --engine direct --backend llamacpp://default --samples 4 --limit 20 --filters correct --out runs/hq
    agentic synth filter --in runs/hq --filters accuracy_band --filters exact_dedup --out runs/hq-rl
    agentic synth rollouts ... --executor ray --tasks 8 --workers 4     # or --executor slurm (agentic_infer.executors)

Every command writes OUT/trajectories/*.jsonl (one Trajectory record a line), OUT/stats.json, OUT/README.md
and OUT/dropped/ (each dropped record with its reason); a rerun resumes (finished tasks are skipped, finished
LLM requests replayed from OUT/cache/llm.sqlite3). Bad input is one line naming the field, exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from agentic_infer.cli.app import synth_app
from agentic_infer.cli.settings import RemovedFlag, removed_flags
from agentic_infer.errors import ConfigError

Filters = Annotated[Optional[list[str]], typer.Option(  # noqa: UP007
    "--filters", help="A filter: NAME or NAME:key=value,key=value (repeatable, applied in order); "
                      "see synth.pipeline.filters.FILTERS.")]
Sets = Annotated[Optional[list[str]], typer.Option(  # noqa: UP007
    "--set", help="Override one setting: KEY=VALUE, dotted (rollout.samples=4, executor.tasks=2, the engine's: "
                  "rollout.settings.sampling.max_tokens=64); repeatable.")]
Tasks = Annotated[int, typer.Option("--tasks", help="datatrove tasks (shards of the input).")]
Workers = Annotated[int, typer.Option("--workers", help="datatrove tasks run at once.")]
Executor = Annotated[str, typer.Option("--executor", help="Where the tasks run: local | ray | slurm (a Ray cluster: "
                                       "--set executor.ray_address=HOST:PORT; Slurm: executor.slurm_partition=P).")]
ShowProgress = Annotated[bool, typer.Option("--progress/--no-progress", help="A progress bar of the items (drawn only "
                                            "on a terminal, with one worker).")]


def _run(overrides: dict[str, Any], *, file: Path | None = None, sets: list[str] | None = None) -> None:
    from rich.console import Console

    from agentic_infer.config import build_config
    from synth.pipeline import PipelineConfig, run_pipeline

    base = build_config(PipelineConfig, overrides={"out": "-", **overrides}, source="the command's flags") \
        if overrides else None
    cfg = build_config(PipelineConfig, file=file, overrides=sets or [], base=base)
    if cfg.out in ("", "-"):
        raise ConfigError("out: missing; give --out DIR (or out: DIR in the config file)")
    summary = run_pipeline(cfg)
    con = Console(stderr=True)
    for s in summary["steps"]:
        dropped = ", ".join(f"{k}={v}" for k, v in s["dropped"].items())
        con.print(f"{s['step']:<28} in {s['in']:>6}  out {s['out']:>6}" + (f"  dropped {dropped}" if dropped else ""))
    con.print(f"{summary['records']} records -> {cfg.out}/trajectories/ (stats: {cfg.out}/stats.json)")


@synth_app.command("run")
def run_cmd(config: Annotated[Path, typer.Argument(help="The pipeline's YAML config (synth.pipeline.config).")],
            sets: Sets = None, progress: ShowProgress = True) -> None:
    """Run a synth pipeline from its YAML config."""
    if not config.is_file():
        raise ConfigError(f"CONFIG {str(config)!r}: no such file; write the pipeline's YAML (see synth.pipeline.config)")
    _run({}, file=config, sets=[*(sets or ()), *(() if progress else ("executor.progress=false",))])


@synth_app.command("rollouts")
def rollouts_cmd(
    task: Annotated[str, typer.Option("--task", help="Eval task: its loader reads --data, its prompt and extraction.")],
    data: Annotated[Path, typer.Option("--data", help="The benchmark file.")],
    out: Annotated[Path, typer.Option("--out", help="Output directory.")],
    engine: Annotated[str, typer.Option("--engine", help="Engine of eval's table (direct, cot, search-o1, ...).")]
    = "direct",
    backend: Annotated[str, typer.Option("--backend", help="Backend URI.")] = "llamacpp://default",
    samples: Annotated[int, typer.Option("--samples", help="Samples per question (the group).")] = 1,
    limit: Annotated[Optional[int], typer.Option("--limit", help="First N questions.")] = None,  # noqa: UP007
    max_tokens: RemovedFlag("--max-tokens", "--set rollout.settings.sampling.max_tokens=VALUE") = None,
    judge: Annotated[Optional[list[str]], typer.Option("--judge", help="verify metric(s) to judge with; "  # noqa: UP007
                                                       "default: em when a filter needs verdicts.")] = None,
    filters: Filters = None, tasks: Tasks = 1, workers: Workers = 1, executor: Executor = "local",
    sets: Sets = None, progress: ShowProgress = True,
) -> None:
    """Run an engine on a benchmark file: k samples per question as Trajectory records, judged and filtered."""
    removed_flags({"--max-tokens": (max_tokens, "--set rollout.settings.sampling.max_tokens=VALUE")})
    names = [f.partition(":")[0] for f in filters or ()]
    metrics = list(judge or ([] if not set(names) & {"correct", "accuracy_band", "all_equal", "reward_variance"}
                             else ["em"]))
    overrides: dict[str, Any] = {
        "out": str(out), "name": f"{task}-{engine}",
        "reader": {"kind": "task", "task": task, "path": str(data), "limit": limit},
        "rollout": {"engine": engine, "backend": backend, "samples": samples},
        "filters": list(filters or ()), "executor": {"kind": executor, "tasks": tasks, "workers": workers, "progress": progress}}
    if metrics:
        overrides["judge"] = {"metrics": metrics}
    _run(overrides, sets=sets)


@synth_app.command("filter")
def filter_cmd(
    inp: Annotated[Path, typer.Option("--in", help="A directory of trajectories (or a trajectories JSONL file).")],
    out: Annotated[Path, typer.Option("--out", help="Output directory (not --in).")],
    filters: Filters = None,
    judge: Annotated[Optional[list[str]], typer.Option("--judge", help="verify metric(s) to (re)judge with "  # noqa: UP007
                                                       "before filtering.")] = None,
    tasks: Tasks = 1, workers: Workers = 1, executor: Executor = "local", sets: Sets = None,
    progress: ShowProgress = True,
) -> None:
    """Filter existing trajectories; the kept ones go to OUT, the dropped ones to OUT/dropped/ with their reason."""
    if not filters and not judge:
        raise ConfigError("--filters: none given; name at least one (e.g. --filters correct), see "
                          "synth.pipeline.filters.FILTERS")
    if out.resolve() == inp.resolve():
        raise ConfigError(f"--out {str(out)!r} is --in: write the filtered set to another directory, so the input "
                          "is kept")
    overrides: dict[str, Any] = {"out": str(out), "name": f"filter-{inp.name}",
                                 "reader": {"kind": "trajectories", "path": str(inp)},
                                 "filters": list(filters or ()),
                                 "executor": {"kind": executor, "tasks": tasks, "workers": workers, "progress": progress}}
    if judge:
        overrides["judge"] = {"metrics": list(judge)}
    _run(overrides, sets=sets)
