"""`agentic generate` (one completion from any backend) and `agentic backends` (what exists, what each needs)."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from agentic_infer.cli.app import app

DEFAULT_BACKEND = "llamacpp://default"


def completion_json(comp) -> dict:
    """The `--json` shape: text, token_ids, finish/stop reasons, logprobs as {token, logprob, top}."""
    def num(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {
        "text": comp.text,
        "token_ids": comp.token_ids,
        "finish_reason": comp.finish_reason,
        "stop_reason": comp.stop_reason,
        "logprobs": None if comp.logprobs is None else [
            {"token": t.token, "token_id": t.token_id, "logprob": num(t.logprob),
             "top": [{"token": a.token, "logprob": a.logprob} for a in t.top]}
            for t in comp.logprobs
        ],
    }


@app.command()
def generate(
    prompt: Annotated[str, typer.Argument(help="Prompt text (raw continuation unless --chat).")],
    backend: Annotated[str, typer.Option(help="Backend URI (see `agentic backends`).")] = DEFAULT_BACKEND,
    max_tokens: Annotated[int, typer.Option(help="Tokens to generate at most.")] = 128,
    temperature: Annotated[float, typer.Option(help="0 = greedy.")] = 0.0,
    top_p: Annotated[float, typer.Option()] = 1.0,
    seed: Annotated[Optional[int], typer.Option()] = None,  # noqa: UP007 (typer needs Optional)
    logprobs: Annotated[Optional[int], typer.Option(help="Top alternatives per token (0-20).")] = None,  # noqa: UP007
    stop: Annotated[Optional[list[str]], typer.Option(help="Stop string (repeatable).")] = None,  # noqa: UP007
    chat: Annotated[bool, typer.Option(help="Wrap the prompt as a user message in the chat template.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the Completion as JSON.")] = False,
) -> None:
    """Generate one completion and print it."""
    from agentic_infer.backends import load_llm
    from agentic_infer.types import Message, SamplingParams

    params = SamplingParams(max_tokens=max_tokens, temperature=temperature, top_p=top_p, seed=seed,
                            logprobs=logprobs, stop=tuple(stop or ()))
    llm = load_llm(backend)

    async def go():
        try:
            p = [Message("user", prompt)] if chat else prompt
            return (await llm.generate(p, params))[0]
        finally:
            await llm.aclose()

    comp = asyncio.run(go())
    if as_json:
        typer.echo(json.dumps(completion_json(comp), ensure_ascii=False))
    else:
        typer.echo(comp.text)


@app.command()
def backends() -> None:
    """List the backends, an example URI for each, and what each needs installed."""
    from agentic_infer.backends import BACKENDS

    table = Table("scheme", "example", "needs", "what")
    for b in BACKENDS.values():
        table.add_row(b.scheme, b.example, b.needs, b.summary)
    Console().print(table)
