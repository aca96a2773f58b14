"""`make demo`: the Search-o1 agent with the embedded SmolLM2 over the embedded Wikipedia corpus.

Builds the BM25 index over the 10,033 Wikipedia Vital Articles leads once (cached), then runs
Search-o1 with Reason-in-Documents on a few questions and prints each trajectory: the model's
reasoning, its queries, the retrieved titles, the information inserted, and the answer.

SmolLM2-135M is tiny: shown only the instruction it answers from memory, so the demo adds a
worked example and opens its turn with a search tag (`assistant_prefix`); after that it writes its
own queries, reads what Reason-in-Documents extracted, and answers (often wrongly). A larger model (e.g. `--backend openai://HOST:PORT/v1?model=Qwen2.5-7B-Instruct`
on vLLM) follows the instruction without the example and chains several searches per question.

A distilled policy (`make distill`: `runs/distill/policy.gguf`) is picked up when present (or pass
`--model PATH.gguf`, `make demo MODEL=...`): it gets the plain Search-o1 prompt it was trained with (no
worked example, no forced search tag, raw top-2 passages cut to 300 characters instead of Reason-in-Documents).

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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default=None, help="backend URI (default: the distilled policy if present, "
                    "else llamacpp://default)")
    ap.add_argument("--model", default=None, help="a distilled policy's GGUF (plain prompt)")
    ap.add_argument("--question", action="append", help="ask this instead (repeatable)")
    ap.add_argument("--max-searches", type=int, default=None,
                    help="default: 5 for a distilled policy (what its prompt said in training), 3 for the base")
    args = ap.parse_args(argv)
    console = Console()
    distilled = False
    if args.model or (args.backend is None and DISTILLED.is_file()):
        model = Path(args.model or DISTILLED)
        args.backend, distilled = f"llamacpp://{model.resolve()}", True
        console.print(f"[bold]using the distilled policy {model}[/bold] (plain Search-o1 prompt, raw passages; "
                      "pass --backend llamacpp://default for the base model with prompting help)")
    args.backend = args.backend or "llamacpp://default"
    t0 = time.perf_counter()
    retriever = retriever_factory(default="wiki-vital", on_build=lambda m: console.print(f"[dim]{m}[/dim]"))({})
    console.print(f"[dim]index ready ({len(retriever)} passages) in {time.perf_counter() - t0:.1f}s; "
                  f"loading {args.backend}[/dim]")
    llm = load_llm(args.backend)
    engine = make_engine(llm, retriever, distilled=distilled, max_searches=args.max_searches or (PLAIN_MAX_SEARCHES if distilled else 3))
    questions = args.question or QUESTIONS
    rollouts = asyncio.run(run_many(engine, [{"question": q} for q in questions], concurrency=1, progress=False))
    trajs = [r.trajectory for r in rollouts]
    for traj in trajs:
        print_trajectory(console, traj)
    searches = sum(t.usage.tool_calls for t in trajs)
    console.print(f"\n[bold]{len(trajs)} questions, {searches} searches, "
                  f"{time.perf_counter() - t0:.0f}s in all[/bold]")


if __name__ == "__main__":
    main()
