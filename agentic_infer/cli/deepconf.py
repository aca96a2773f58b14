"""`agentic run deepconf`: DeepConf offline or online on one question or a JSONL file of them.

    agentic run deepconf --question "What is 17*23?" --set budget=32 --set warmup=8        # online, low
    agentic run deepconf --input questions.jsonl --set mode=offline --set budget=16 --json --out rollouts.jsonl
    agentic run deepconf --config deepconf.yaml --show-config                               # every setting

`--input` is JSON Lines with a `question` (or `problem`) field per line. `--json` prints one JSON
object per question (the run's voting report); `--out` appends one Rollout JSON line per question
(its trajectories are the traces) through `agentic_infer.runner.run_many`, so a rerun skips the
questions already written.
Settings are `DeepConfConfig` (`--config FILE.yaml`, `--set KEY=VALUE`; sampling is nested:
`--set sampling.max_tokens=512 --set sampling.temperature=0.8 --set sampling.seed=0`); this command's defaults
differ from the paper's in `budget=32` and `sampling.max_tokens=2048` (a laptop run). The paper's window (2048
tokens) only stops traces longer than that; `--set window=64` for short generations. Bad options are a ConfigError: one line on stderr, exit code 2.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from agentic_infer.cli.app import run_app
from agentic_infer.cli.inputs import read_examples
from agentic_infer.cli.settings import ConfigFile, Set, ShowConfig, engine_settings

DEFAULT_BACKEND = "llamacpp://default"
CLI_DEFAULTS = {"budget": 32, "sampling.max_tokens": 2048}  # a laptop-sized run; the paper's budget is 512


def _show(console: Console, question: str, rep: dict[str, Any]) -> None:
    table = Table(title=question[:100], show_header=False)
    table.add_row("answer", str(rep["answer"]))
    table.add_row("mode / variant", f"{rep['mode']} / {rep['variant']}")
    if rep["threshold"] is not None:
        table.add_row("threshold", f"{rep['threshold']:.4f}")
    if rep["consensus"] is not None:
        table.add_row("consensus", f"{rep['consensus']:.3f} ({rep['stop_reason']})")
    table.add_row("traces", f"{rep['traces_total']} ({rep['traces_stopped_early']} stopped early, "
                            f"{rep['traces_cancelled']} cancelled, {rep['traces_voting']} voting)")
    table.add_row("tokens", f"{rep['tokens_generated']:,} generated, ~{rep['tokens_saved_est']:,} saved (estimate)")
    table.add_row("wall", f"{rep['wall_s']:.1f} s")
    if rep["mode"] == "offline":
        for method, ans in rep["votes"].items():
            table.add_row(f"vote {method}", str(ans))
    console.print(table)


@run_app.command("deepconf")
def deepconf(
    question: Annotated[str | None, typer.Option(help="One question.")] = None,  # noqa: UP007
    input_file: Annotated[Path | None, typer.Option("--input", help="JSONL file of questions.")] = None,  # noqa: UP007
    backend: Annotated[str, typer.Option(help="Backend URI (see `agentic backends`).")] = DEFAULT_BACKEND,
    config: ConfigFile = None,
    set_: Set = None,
    show_config: ShowConfig = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON report per question on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="Append each question's Rollout (its traces) to this JSONL; "  # noqa: UP007
                                                   "resumable.")] = None,
) -> None:
    """Sample reasoning traces and vote by confidence (DeepConf), stopping weak traces early online."""
    from agentic_infer.backends import load_llm
    from agentic_infer.engines.deepconf import DeepConf, DeepConfConfig

    config = engine_settings(DeepConfConfig, config, set_, show=show_config, defaults=CLI_DEFAULTS)
    examples = read_examples(question, input_file)
    llm = load_llm(backend)
    console = Console(stderr=as_json)

    async def go() -> list:
        from agentic_infer.runner import run_many

        try:
            return await run_many(DeepConf(llm, config), examples, concurrency=1, out=out,
                                  progress=len(examples) > 1 and not as_json)
        finally:
            await llm.aclose()

    for ex, rollout in zip(examples, asyncio.run(go())):
        if rollout is None:  # failed; logged and listed in OUT.errors.jsonl, retried on the next run
            continue
        report = {"id": rollout.example_id, "question": ex["question"], **rollout.metadata["deepconf"]}
        if as_json:
            typer.echo(json.dumps(report, ensure_ascii=False))
        else:
            _show(console, ex["question"], report)
