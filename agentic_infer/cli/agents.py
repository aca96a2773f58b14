"""`agentic run search-o1` and `agentic run tir`: agents on one question or a JSONL file of them."""

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
from agentic_infer.errors import ConfigError

DEFAULT_BACKEND = "llamacpp://default"


def default_index_dir() -> Path:
    from agentic_infer.assets import cache_dir

    return cache_dir() / "indexes" / "wiki-vital-bm25"


def ensure_default_index(console: Console | None = None) -> Path:
    """The BM25 index over the embedded wiki-vital corpus, built once into the cache."""
    from agentic_infer.tools.retrieval.index import build_index

    path = default_index_dir()
    if not (path / "meta.json").exists():
        if console is not None:
            console.print(f"[dim]building the default BM25 index over wiki-vital into {path} (once)...[/dim]")
        build_index("wiki-vital", out=path, kind="bm25", overwrite=True)
    return path


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


def _emit(trajs, *, as_json: bool, out: Path | None, console: Console) -> None:
    if as_json:
        for t in trajs:
            typer.echo(t.to_json())
    elif out is None:
        for t in trajs:
            print_trajectory(console, t)
    else:
        answered = sum(t.answer is not None for t in trajs)
        console.print(f"{len(trajs)} trajectories in {out} ({answered} with an answer)")


Question = Annotated[Optional[str], typer.Option("--question", "-q", help="One question.")]  # noqa: UP007
InputFile = Annotated[Optional[Path], typer.Option("--input", "-i", help="JSONL with a 'question' per line.")]  # noqa: UP007
Backend = Annotated[str, typer.Option(help="Backend URI (see `agentic backends`).")]
Scheduler = Annotated[str, typer.Option(help="async | lockstep | sequential.")]
Concurrency = Annotated[int, typer.Option(help="Episodes in flight (async) or per batch (lockstep).")]
Out = Annotated[Optional[Path], typer.Option(help="Append trajectories to this JSONL (resumable).")]  # noqa: UP007
AsJson = Annotated[bool, typer.Option("--json", help="Print trajectories as JSON lines.")]


@run_app.command("search-o1")
def search_o1(
    question: Question = None,
    input_file: InputFile = None,
    backend: Backend = DEFAULT_BACKEND,
    index: Annotated[Optional[Path], typer.Option(help="Index directory (default: wiki-vital BM25).")] = None,  # noqa: UP007
    retriever_url: Annotated[Optional[str], typer.Option(help="A Search-R1-style /retrieve server.")] = None,  # noqa: UP007
    dialect: Annotated[str, typer.Option(help="search_o1 | search_r1 | r1_searcher | asearcher.")] = "search_o1",
    max_searches: Annotated[int, typer.Option()] = 10,
    top_k: Annotated[int, typer.Option()] = 10,
    max_turns: Annotated[int, typer.Option()] = 15,
    worked_example: Annotated[bool, typer.Option(help="Show the model a worked example (small models).")] = False,
    seed: Annotated[Optional[int], typer.Option()] = None,  # noqa: UP007
    scheduler: Scheduler = "async",
    concurrency: Concurrency = 8,
    out: Out = None,
    as_json: AsJson = False,
) -> None:
    """Search-o1 (agentic search with Reason-in-Documents) on questions."""
    from agentic_infer.backends import load_llm
    from agentic_infer.engines.search_o1 import DEFAULT_SAMPLING, SearchO1

    console = Console(stderr=as_json)
    examples = read_examples(question, input_file)
    if index is not None and retriever_url is not None:
        raise ConfigError("give --index or --retriever-url, not both")
    if retriever_url is not None:
        from agentic_infer.tools.retrieval.client import RemoteRetriever

        retriever = RemoteRetriever(retriever_url)
    else:
        from agentic_infer.tools.retrieval.index import load_index

        retriever = load_index(index if index is not None else ensure_default_index(console))
    llm = load_llm(backend)
    engine = SearchO1(llm, retriever, dialect=dialect, max_searches=max_searches, top_k=top_k, max_turns=max_turns,
                      worked_example=worked_example, sampling=DEFAULT_SAMPLING.replace(seed=seed))
    trajs = asyncio.run(engine.run_many(examples, concurrency=concurrency, scheduler=scheduler, out=out,
                                        progress=len(examples) > 1))
    _emit(trajs, as_json=as_json, out=out, console=console)


@run_app.command("tir")
def tir(
    question: Question = None,
    input_file: InputFile = None,
    backend: Backend = DEFAULT_BACKEND,
    dialect: Annotated[str, typer.Option(help="tir (ToRL code blocks) | artist (tags).")] = "tir",
    max_tool_calls: Annotated[int, typer.Option()] = 4,
    timeout_s: Annotated[float, typer.Option(help="Sandbox wall time per run.")] = 10.0,
    seed: Annotated[Optional[int], typer.Option()] = None,  # noqa: UP007
    scheduler: Scheduler = "async",
    concurrency: Concurrency = 4,
    out: Out = None,
    as_json: AsJson = False,
) -> None:
    """Tool-integrated reasoning: the model writes Python, the sandbox runs it, the output goes back."""
    from agentic_infer.backends import load_llm
    from agentic_infer.engines.tir import DEFAULT_SAMPLING, TIR
    from agentic_infer.tools.sandbox import PythonSandbox

    console = Console(stderr=as_json)
    examples = read_examples(question, input_file)
    engine = TIR(load_llm(backend), PythonSandbox(timeout_s=timeout_s), dialect=dialect,
                 max_tool_calls=max_tool_calls, sampling=DEFAULT_SAMPLING.replace(seed=seed))
    trajs = asyncio.run(engine.run_many(examples, concurrency=concurrency, scheduler=scheduler, out=out,
                                        progress=len(examples) > 1))
    _emit(trajs, as_json=as_json, out=out, console=console)
