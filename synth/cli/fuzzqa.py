"""`agentic synth fuzzqa`: fuzzed multi-hop QA (ASearcher-style), gated per edit, with its funnel.

    agentic synth fuzzqa --corpus wiki-vital --n 50 --llm llamacpp://default --out fuzz/ --set judge=yes-no
    agentic synth fuzzqa --grounded musique:../shared/data/multihop/musique_full_train_100.jsonl --n 20 \\
        --llm llamacpp://default --out fuzz-g/ --set k_closed_book=4
    agentic synth fuzzqa ... --executor slurm --tasks 8       # the seeds in blocks on ray / slurm, merged into --out
    agentic eval run --task hotpotqa --data fuzz/qa.jsonl ...      # the output is HotpotQA-format

Thin: validates its flags, builds `FuzzQAConfig` (`--config FILE.yaml`, `--set KEY=VALUE`, `--show-config`)
and calls `synth.fuzzqa.run_fuzzqa`; a rerun with the same `--out` resumes (finished seeds skipped).
Bad input is one line on stderr and exit code 2 (see `agentic_infer.cli`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentic_infer.cli.app import synth_app
from agentic_infer.cli.settings import ConfigFile, Set, ShowConfig, engine_settings
from agentic_infer.executors import ExecutorConfig
from synth.cli.pipeline import Executor, Tasks, Workers


@synth_app.command("fuzzqa")
def fuzzqa(
    out: Annotated[Path | None, typer.Option(help="Output directory: qa.jsonl, provenance.jsonl, stats.json.")]
    = None,
    llm: Annotated[str, typer.Option(help="Backend URI of the LLM that writes, edits and answers.")]
    = "llamacpp://default",
    corpus: Annotated[str | None, typer.Option(help="wiki-vital (default) | multihop | a corpus file or directory "
                                                    "(seeds and the with-tools index).")] = None,
    n: Annotated[int, typer.Option(help="Number of seeds.")] = 50,
    judge: Annotated[str | None, typer.Option(help="Backend URI of the judge LLM (default: --llm).")] = None,
    grounded: Annotated[str | None, typer.Option(help="TASK:FILE: hops from structured evidence "
                                                      "(musique, hotpotqa, 2wiki).")] = None,
    config_file: ConfigFile = None,
    sets: Set = None,
    show_config: ShowConfig = False,
    executor: Executor = "local", tasks: Tasks = 1, workers: Workers = 1,
) -> None:
    """Fuzzed multi-hop QA from seed documents: base QA, INJECT / FUZZ edits, five gates, provenance, funnel."""
    from synth.fuzzqa.config import FuzzQAConfig

    cfg = engine_settings(FuzzQAConfig, config_file, sets, show=show_config)
    from agentic_infer.errors import ConfigError

    if out is None:
        raise ConfigError("--out is required: the directory for qa.jsonl, provenance.jsonl and stats.json")
    if n < 1:
        raise ConfigError(f"--n {n}: must be >= 1")
    from agentic_infer.backends import load_llm
    from synth.fuzzqa.grounded import parse_grounded
    from synth.fuzzqa.run import run_fuzzqa

    if grounded:
        parse_grounded(grounded)  # fail on a bad spec before loading any model
    ex = ExecutorConfig(kind=executor, tasks=tasks, workers=workers)
    console = Console(stderr=True)
    if ex.sharded:  # the seeds in blocks on the executor; each rank loads the backends
        from synth.fuzzqa.distributed import run_fuzzqa_on

        stats = run_fuzzqa_on(ex, out, llm=llm, judge=judge, corpus=corpus, grounded=grounded, n=n, config=cfg)
        _summary(console, stats, out)
        return
    policy = load_llm(llm)
    judge_llm = policy if judge in (None, llm) else load_llm(judge)

    def progress(row: dict) -> None:
        status = "kept" if row.get("qa") else "no QA"
        console.print(f"seed {row['seed_id']}: {len(row['versions'])} versions, {status}")

    stats = asyncio.run(run_fuzzqa(out, llm=policy, judge_llm=judge_llm, corpus=corpus, grounded=grounded, n=n,
                                   config=cfg, on_seed=progress))
    _summary(console, stats, out)


def _summary(console: Console, stats: dict, out: Path) -> None:
    gates = " -> ".join(f"{g} {s['in']}/{s['out']}" for g, s in stats["gates"].items())
    console.print(f"fuzzqa: {stats['qas']} QAs from {stats['seeds']} seeds; write {stats['write']['in']}/"
                  f"{stats['write']['out']}; gates (in/out) {gates} -> {out}/qa.jsonl")
