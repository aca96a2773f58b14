"""`make demo`: the Search-o1 agent with the embedded SmolLM2 over the embedded Wikipedia corpus.

Builds the BM25 index over the 10,033 Wikipedia Vital Articles leads once (cached), then runs
Search-o1 with Reason-in-Documents on a few questions and prints each trajectory: the model's
reasoning, its queries, the retrieved titles, the information inserted, and the answer.

SmolLM2-135M is tiny: shown only the instruction it answers from memory, so the demo adds a
worked example and opens its turn with a search tag (`assistant_prefix`); after that it writes its
own queries, reads what Reason-in-Documents extracted, and answers (often wrongly). A larger model (e.g. `--backend openai://HOST:PORT/v1?model=Qwen2.5-7B-Instruct`
on vLLM) follows the instruction without the example and chains several searches per question.

The demo says which policy it runs. With no trained policy yet it says how to get one (`make distill`, about
45 minutes on 2 cores, resumable). When `runs/distill/policy.gguf` exists it runs the base and the trained
policy on the same questions and shows them side by side (`--model PATH.gguf` / `make demo MODEL=...` runs
that policy alone; `--backend URI` that backend alone). A trained policy gets the plain Search-o1 prompt it was
trained with (no worked example, no forced search tag, raw top-2 passages cut to 300 characters instead of
Reason-in-Documents).

    python -m agentic_infer.demo [--backend URI | --model PATH.gguf] [--question TEXT ...]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from rich.console import Console

from agentic_infer.backends import load_llm
from agentic_infer.cli.agents import print_trajectory
from agentic_infer.engines.search_o1 import (
    BASE_HELP,
    DEFAULT_SAMPLING,
    PLAIN_MAX_SEARCHES,
    SearchO1,
    plain_options,
)
from agentic_infer.runner import run_many
from agentic_infer.tools.retrieval.corpora import retriever_factory

DISTILLED = Path("runs/distill/policy.gguf")
BASE = "llamacpp://default"
NO_POLICY_HINT = ("No trained policy yet: `make distill` distills this base model into a searching agent "
                  "(SFT on verified demonstrations, then GRPO; about 45 minutes on 2 cores, resumable by stage) "
                  f"and writes {DISTILLED}; `make demo` then shows the base and the trained policy side by side.")
QUESTIONS = [
    "What is the capital of the country where the Eiffel Tower is located?",
    "Which ocean lies between Africa and Australia?",
    "Who painted the Mona Lisa?",
]


def make_engine(llm, retriever, *, distilled: bool, max_searches: int = 3) -> SearchO1:
    """A distilled policy: the plain prompt it was trained with; the base: a worked example and a forced search tag."""
    sampling = DEFAULT_SAMPLING.replace(max_tokens=256, seed=0)
    if distilled:
        return SearchO1(llm, retriever, **plain_options(max_searches=max_searches),
                        max_turns=6, sampling=sampling, max_total_tokens=2048)
    return SearchO1(llm, retriever, max_searches=max_searches, k=3, max_turns=6, **BASE_HELP,
                    rid_sampling=DEFAULT_SAMPLING.replace(max_tokens=128, seed=0), sampling=sampling,
                    max_total_tokens=1024)


def policies(backend: str | None, model: str | None, trained: Path = DISTILLED) -> list[tuple[str, str, bool]]:
    """(name, backend URI, trained?) of each policy the demo runs: the one asked for, else the base and, when a
    trained policy exists, that one too."""
    if model:
        return [("trained", f"llamacpp://{Path(model).resolve()}", True)]
    if backend:
        return [("chosen", backend, False)]
    base = [("base", BASE, False)]
    return base + ([("trained", f"llamacpp://{trained.resolve()}", True)] if trained.is_file() else [])


def side_by_side(console: Console, questions: list[str], runs: dict[str, list]) -> None:
    """One row per question: each policy's answer and searches."""
    from rich.table import Table

    table = Table(title="the same questions, each policy", show_lines=True)
    table.add_column("question")
    for name in runs:
        table.add_column(name)
    for i, q in enumerate(questions):
        table.add_row(q, *[f"{t[i].answer or '(no answer)'}\n[dim]{t[i].usage.tool_calls} searches[/dim]"
                           for t in runs.values()])
    console.print(table)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default=None, help="run this backend URI alone (default: the base model, and "
                    "the distilled policy beside it when runs/distill/policy.gguf exists)")
    ap.add_argument("--model", default=None, help="run this distilled policy's GGUF alone (plain prompt)")
    ap.add_argument("--question", action="append", help="ask this instead (repeatable)")
    ap.add_argument("--max-searches", type=int, default=None,
                    help="default: 5 for a distilled policy (what its prompt said in training), 3 for the base")
    args = ap.parse_args(argv)
    console = Console()
    plan = policies(args.backend, args.model)
    for name, uri, trained in plan:
        console.print(f"[bold]policy {name}: {uri}[/bold] " + ("(trained: plain Search-o1 prompt, raw passages)"
                      if trained else "(base SmolLM2-135M-Instruct with prompting help)" if uri == BASE else ""))
    if not args.backend and not args.model and len(plan) == 1:
        console.print(f"[yellow]{NO_POLICY_HINT}[/yellow]")
    t0 = time.perf_counter()
    retriever = retriever_factory(default="wiki-vital", on_build=lambda m: console.print(f"[dim]{m}[/dim]"))({})
    console.print(f"[dim]index ready ({len(retriever)} passages) in {time.perf_counter() - t0:.1f}s[/dim]")
    questions = args.question or QUESTIONS
    runs = {}
    for name, uri, trained in plan:
        console.print(f"\n[bold]== {name} ({uri}) ==[/bold]")
        engine = make_engine(load_llm(uri), retriever, distilled=trained,
                             max_searches=args.max_searches or (PLAIN_MAX_SEARCHES if trained else 3))
        rollouts = asyncio.run(run_many(engine, [{"question": q} for q in questions], concurrency=1, progress=False))
        runs[name] = [r.trajectory for r in rollouts]
        for traj in runs[name]:
            print_trajectory(console, traj)
    if len(runs) > 1:
        side_by_side(console, questions, runs)
    searches = {name: sum(t.usage.tool_calls for t in trajs) for name, trajs in runs.items()}
    console.print(f"\n[bold]{len(questions)} questions; searches {searches}; {time.perf_counter() - t0:.0f}s in "
                  "all[/bold]")


if __name__ == "__main__":
    main()
