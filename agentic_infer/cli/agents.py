"""`agentic run search-o1` and `agentic run tir`: agents on one question or a JSONL file of them.

How the engine runs is its config (`--config FILE.yaml`, `--set KEY=VALUE`, `--show-config`; see
`agentic_infer/cli/settings.py`); the flags say what to run it on and where the rollouts go.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from agentic_infer.cli.app import run_app
from agentic_infer.cli.inputs import read_examples
from agentic_infer.cli.settings import ConfigFile, Set, ShowConfig, engine_settings
from agentic_infer.tools.retrieval.corpora import retriever_factory

DEFAULT_BACKEND = "llamacpp://default"


def print_trajectory(console: Console, traj) -> None:
    """Reasoning, queries, retrieved titles, inserted information and the answer, readably."""
    console.rule(f"[bold]{traj.example.get('question', '')}")
    steps = iter(traj.steps)
    for seg in traj.segments[1:]:
        if seg.kind == "model":
            console.print(seg.text.strip(), style="white", markup=False, highlight=False)
        elif seg.kind == "prompt":  # forced text opening the assistant turn
            console.print(seg.text.strip(), style="dim", markup=False, highlight=False)
        else:
            step = next(steps, None)
            if step is None:
                continue
            header = f"{step.action}: {next(iter(step.arguments.values()), '')}"
            titles = ", ".join(step.metadata.get("titles", []))
            body = (f"[dim]retrieved: {escape(titles)}[/dim]\n" if titles else "") + escape(step.observation or step.error or "")
            style = "cyan" if step.metadata.get("status") == "executed" else "yellow"
            title = escape(f"{header} [{step.metadata.get('status')}]")
            console.print(Panel(body.strip(), title=title, border_style=style))
    u = traj.usage
    console.print(f"[bold green]answer:[/bold green] {traj.answer!r}   [dim]finish={traj.finish_reason} "
                  f"tokens={u.completion_tokens} llm_calls={u.llm_calls} tool_calls={u.tool_calls} "
                  f"tool_errors={u.tool_errors} wall={u.wall_s:.1f}s[/dim]")


def _run_and_emit(engine, examples, *, scheduler: str, concurrency: int, as_json: bool, out: Path | None,
                  console: Console) -> None:
    from agentic_infer.runner import run_many

    rollouts = [r for r in asyncio.run(run_many(engine, examples, concurrency=concurrency, scheduler=scheduler,
                                                 out=out, progress=len(examples) > 1)) if r is not None]
    if as_json:
        for r in rollouts:
            typer.echo(r.to_json())
    elif out is None:
        for r in rollouts:
            print_trajectory(console, r.trajectory)
    else:
        answered = sum(r.answer is not None for r in rollouts)
        failed = len(examples) - len(rollouts)
        console.print(f"{len(rollouts)} rollouts in {out} ({answered} with an answer"
                      + (f"; {failed} failed, see {out}.errors.jsonl, rerun to retry)" if failed else ")"))


Question = Annotated[Optional[str], typer.Option("--question", "-q", help="One question.")]  # noqa: UP007
InputFile = Annotated[Optional[Path], typer.Option("--input", "-i", help="JSONL with a 'question' per line.")]  # noqa: UP007
Backend = Annotated[str, typer.Option(help="Backend URI (see `agentic backends`).")]
Scheduler = Annotated[str, typer.Option(help="async | lockstep | sequential.")]
Concurrency = Annotated[int, typer.Option(help="Episodes in flight (async) or per batch (lockstep).")]
Out = Annotated[Optional[Path], typer.Option(help="Append rollouts to this JSONL (resumable).")]  # noqa: UP007
AsJson = Annotated[bool, typer.Option("--json", help="Print rollouts as JSON lines.")]


@run_app.command("search-o1")
def search_o1(
    question: Question = None,
    input_file: InputFile = None,
    backend: Backend = DEFAULT_BACKEND,
    index: Annotated[Optional[Path], typer.Option(help="Index directory (default: wiki-vital BM25).")] = None,  # noqa: UP007
    retriever_url: Annotated[Optional[str], typer.Option(help="A Search-R1-style /retrieve server.")] = None,  # noqa: UP007
    config: ConfigFile = None,
    set_: Set = None,
    show_config: ShowConfig = False,
    scheduler: Scheduler = "async",
    concurrency: Concurrency = 8,
    out: Out = None,
    as_json: AsJson = False,
) -> None:
    """Search-o1 (agentic search with Reason-in-Documents) on questions; settings: SearchO1Config."""
    from agentic_infer.backends import load_llm
    from agentic_infer.engines.search_o1 import SearchO1, SearchO1Config

    settings = engine_settings(SearchO1Config, config, set_, show=show_config)
    console = Console(stderr=as_json)
    examples = read_examples(question, input_file)
    retriever_for = retriever_factory(index=index, url=retriever_url, default="wiki-vital",
                                      on_build=lambda m: console.print(f"[dim]{m}[/dim]"))
    engine = SearchO1(load_llm(backend), retriever_for({}), settings)
    _run_and_emit(engine, examples, scheduler=scheduler, concurrency=concurrency, as_json=as_json, out=out,
                  console=console)


@run_app.command("tir")
def tir(
    question: Question = None,
    input_file: InputFile = None,
    backend: Backend = DEFAULT_BACKEND,
    timeout_s: Annotated[float, typer.Option(help="Sandbox wall time per run.")] = 10.0,
    config: ConfigFile = None,
    set_: Set = None,
    show_config: ShowConfig = False,
    scheduler: Scheduler = "async",
    concurrency: Concurrency = 4,
    out: Out = None,
    as_json: AsJson = False,
) -> None:
    """Tool-integrated reasoning: the model writes Python, the sandbox runs it, the output goes back; settings:
    TIRConfig."""
    from agentic_infer.backends import load_llm
    from agentic_infer.engines.tir import TIR, TIRConfig
    from agentic_infer.tools.sandbox import PythonSandbox

    settings = engine_settings(TIRConfig, config, set_, show=show_config)
    console = Console(stderr=as_json)
    examples = read_examples(question, input_file)
    engine = TIR(load_llm(backend), PythonSandbox(timeout_s=timeout_s), settings)
    _run_and_emit(engine, examples, scheduler=scheduler, concurrency=concurrency, as_json=as_json, out=out,
                  console=console)
