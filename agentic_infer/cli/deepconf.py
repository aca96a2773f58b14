"""`agentic run deepconf`: DeepConf offline or online on one question or a JSONL file of them.

    agentic run deepconf --question "What is 17*23?" --mode online --variant low --budget 32 --warmup 8
    agentic run deepconf --input questions.jsonl --mode offline --budget 16 --json --out traces.jsonl

`--input` is JSON Lines with a `question` (or `problem`) field per line. `--json` prints one JSON
object per question (the run's report); `--out` writes every trace as a Trajectory JSON line.
The paper's window (2048 tokens) only stops traces longer than that; pass a smaller `--window` for
short generations. Bad options are a ConfigError: one line on stderr, exit code 2.
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

DEFAULT_BACKEND = "llamacpp://default"


def _show(console: Console, res: Any) -> None:
    table = Table(title=res.question[:100], show_header=False)
    table.add_row("answer", str(res.answer))
    table.add_row("mode / variant", f"{res.mode} / {res.variant}")
    if res.threshold is not None:
        table.add_row("threshold", f"{res.threshold:.4f}")
    if res.consensus is not None:
        table.add_row("consensus", f"{res.consensus:.3f} ({res.stop_reason})")
    table.add_row("traces", f"{res.traces_total} ({res.traces_stopped_early} stopped early, "
                            f"{res.traces_cancelled} cancelled, {res.traces_voting} voting)")
    table.add_row("tokens", f"{res.tokens_generated:,} generated, ~{res.tokens_saved_est:,} saved (estimate)")
    table.add_row("wall", f"{res.wall_s:.1f} s")
    if res.mode == "offline":
        for method, ans in res.votes.items():
            table.add_row(f"vote {method}", str(ans))
    console.print(table)


@run_app.command("deepconf")
def deepconf(
    question: Annotated[str | None, typer.Option(help="One question.")] = None,  # noqa: UP007
    input_file: Annotated[Path | None, typer.Option("--input", help="JSONL file of questions.")] = None,  # noqa: UP007
    mode: Annotated[str, typer.Option(help="offline | online")] = "online",
    variant: Annotated[str, typer.Option(help="low (keep top 10%) | high (keep top 90%)")] = "low",
    budget: Annotated[int, typer.Option(help="Traces: K offline, B online (warm-up included).")] = 32,
    warmup: Annotated[int, typer.Option(help="Online warm-up traces N_init.")] = 16,
    tau: Annotated[float, typer.Option(help="Online consensus share that stops sampling.")] = 0.95,
    window: Annotated[int, typer.Option(help="Group window in tokens (paper: 2048).")] = 2048,
    max_tokens: Annotated[int, typer.Option(help="Tokens per trace at most.")] = 2048,
    temperature: Annotated[float, typer.Option()] = 0.6,
    top_p: Annotated[float, typer.Option()] = 0.95,
    seed: Annotated[int | None, typer.Option(help="Trace i uses seed+i.")] = None,  # noqa: UP007
    concurrency: Annotated[int, typer.Option(help="Traces in flight at once.")] = 1,
    backend: Annotated[str, typer.Option(help="Backend URI (see `agentic backends`).")] = DEFAULT_BACKEND,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON report per question on stdout.")] = False,
    out: Annotated[Path | None, typer.Option(help="Write every trace as a Trajectory JSON line.")] = None,  # noqa: UP007
) -> None:
    """Sample reasoning traces and vote by confidence (DeepConf), stopping weak traces early online."""
    from agentic_infer.backends import load_llm
    from agentic_infer.engines.deepconf_engine import DeepConf, DeepConfConfig

    examples = read_examples(question, input_file)
    config = DeepConfConfig(mode=mode, variant=variant, budget=budget, warmup=min(warmup, budget) if mode ==
                            "offline" else warmup, tau=tau, window=window, max_tokens=max_tokens,
                            temperature=temperature, top_p=top_p, seed=seed, concurrency=concurrency)
    llm = load_llm(backend)
    console = Console(stderr=as_json)

    async def go() -> None:
        engine = DeepConf(llm, config)
        sink = out.open("w", encoding="utf-8") if out is not None else None
        try:
            for ex in examples:
                res = await engine.run(ex)
                if as_json:
                    typer.echo(json.dumps(res.to_dict(), ensure_ascii=False))
                else:
                    _show(console, res)
                if sink is not None:
                    for t in res.trajectories:
                        sink.write(t.to_json() + "\n")
        finally:
            if sink is not None:
                sink.close()
            await llm.aclose()

    asyncio.run(go())
