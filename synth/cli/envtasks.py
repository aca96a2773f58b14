"""`agentic synth envtasks`: AgentScaler-style env tasks from the real retail database, and their demonstrations.

    agentic synth envtasks --env retail --count 200 --seed 0 --out runs/envtasks
    agentic synth envtasks --env retail --count 200 --seed 0 --out runs/envtasks --backend llamacpp://default
    agentic synth envtasks --env retail --from-tasks ../shared/data/tools/tau_retail_db/retail_tasks_train.jsonl \
        --out runs/train-demos --demos
    agentic synth export --in runs/train-demos/demos --format tokenized --out runs/train-demos/sft.jsonl

Thin: validates the flags, builds `EnvTasksConfig` and calls `synth.envtasks.run_envtasks` (a datatrove
pipeline: per-step counts, drop reasons in DIR/dropped.jsonl, a progress bar on a terminal; a rerun with the
same flags resumes). Writes DIR/tasks.jsonl, DIR/dropped.jsonl, DIR/stats.json; `--demos` adds DIR/demos/
(trajectories.jsonl + stats.json, as `agentic synth demos`); `--stage1` adds DIR/stage1/: BFCL's gold calls
as demonstrations in the same tool-call dialect (BFCL's EVAL items: never evaluate a model trained on them
on BFCL). Bad input is one line on stderr and exit code 2 (see `agentic_infer.cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from agentic_infer.cli.app import synth_app


@synth_app.command("envtasks")
def envtasks(
    out: Annotated[Path, typer.Option(help="Output directory: tasks.jsonl, dropped.jsonl, stats.json (+ demos/).")],
    env: Annotated[str, typer.Option(help="The environment whose tool graph to sample (retail).")] = "retail",
    count: Annotated[Optional[int], typer.Option(help="Tasks to sample (with --from-tasks: at most N rows).")]
    = None,
    seed: Annotated[int, typer.Option(help="Run seed: task i is drawn with task_seed(seed, i).")] = 0,
    backend: Annotated[Optional[str], typer.Option(help="Backend URI of an LLM that rewords each template "
                                                        "intent (checked like a template's).")] = None,
    demos: Annotated[bool, typer.Option("--demos/--no-demos", help="Also write DIR/demos/: the kept tasks' gold "
                                                                   "actions as verified demonstrations.")] = False,
    from_tasks: Annotated[Optional[Path], typer.Option(help="Read a retail task file (e.g. the 500 train tasks) "
                                                            "instead of sampling; dev tasks are refused.")] = None,
    stage1: Annotated[bool, typer.Option("--stage1/--no-stage1", help="Also write DIR/stage1/: BFCL's gold calls "
                                                                      "as demonstrations (BFCL eval items).")] = False,
    max_writes: Annotated[int, typer.Option(help="At most this many writes per sampled task.")] = 2,
    tokenizer: Annotated[str, typer.Option(help="Demos' tokenizer + chat template: 'default' (embedded GGUF), a "
                                                ".gguf or a local HF directory.")] = "default",
    settings: Annotated[Optional[list[str]], typer.Option("--set", help="The demos' env agent setting KEY=VALUE "
                                                                       "(EnvAgentConfig), e.g. tool_schemas=compact: "
                                                                       "the prompt the policy will run with.")] = None,
    tasks: Annotated[int, typer.Option("--tasks", help="datatrove tasks (shards of the seeds).")] = 1,
    workers: Annotated[int, typer.Option("--workers", help="datatrove tasks run at once.")] = 1,
    executor: Annotated[str, typer.Option("--executor", help="Where the tasks run: local | ray | slurm.")] = "local",
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="A progress bar (on a terminal).")]
    = True,
) -> None:
    """Sample tasks over the env's tool graph, execute them for the gold end state, phrase and check the intent."""
    from agentic_infer.config import parse_overrides
    from agentic_infer.executors import ExecutorConfig
    from synth.envtasks import EnvTasksConfig, SamplerConfig, run_envtasks

    cfg = EnvTasksConfig(out=str(out), env=env, count=count, seed=seed, backend=backend, demos=demos,
                         from_tasks=str(from_tasks) if from_tasks else None,
                         sampler=SamplerConfig(max_writes=max_writes), tokenizer=tokenizer,
                         agent=parse_overrides(settings or []),
                         executor=ExecutorConfig(kind=executor, tasks=tasks, workers=workers, progress=progress))
    stats = run_envtasks(cfg)
    con = Console(stderr=True)
    for s in stats["steps"]:
        dropped = ", ".join(f"{k}={v}" for k, v in s["dropped"].items())
        con.print(f"{s['step']:<18} in {s['in']:>6}  out {s['out']:>6}" + (f"  dropped {dropped}" if dropped else ""))
    line = (f"envtasks: {stats['verified']} verified of {stats['seeds']} ({stats['sampled']} sampled) -> "
            f"{out}/tasks.jsonl")
    if "demos" in stats:
        line += f"; demos {stats['demos']['kept']}/{stats['demos']['tried']} -> {out}/demos/"
    con.print(line)
    if stage1:
        from agentic_infer.backends.tokenizer import load_tokenizer
        from synth.demos import Vocab, write_demos
        from synth.envtasks.stages import stage1_demos

        result = stage1_demos(Vocab(load_tokenizer(tokenizer)))
        write_demos(out / "stage1", result, overwrite=True)
        con.print(f"stage1: {result.stats['kept']}/{result.stats['tried']} BFCL demos -> {out}/stage1/ (BFCL eval "
                  "items: do not evaluate on BFCL after training on them)")
