"""Search-o1: agentic retrieval-augmented reasoning with Reason-in-Documents, in any search dialect.

    engine = SearchO1(llm, retriever, max_searches=10, top_k=10)
    traj = await engine.run({"question": "..."})
    trajs = await engine.run_many(examples, concurrency=8, scheduler="async" | "lockstep")

Defaults follow the reference (ANCHORS.md): max searches 10 (multi-hop; use 5 for single-hop),
max turns 15, top-k 10, temperature 0.7, top_p 0.8, top_k 20, repetition penalty 1.05, doc context
±3000 chars, answer in `\\boxed{}`. Reason-in-Documents (`rid=True`) may run on a different LLM
(`rid_llm`). With another dialect (`search_r1`, `r1_searcher`, `asearcher`) the same loop runs with
that system's tags; RiD is off by default there (those systems insert raw documents).

`assistant_prefix` forces the opening of the assistant turn (e.g. `"<|begin_search_query|>"` makes a
small model that would otherwise answer from memory issue a first search); it is recorded as a
non-trainable prompt segment.

Unfinished episodes (turn cap, token budget) are answered from whatever `\\boxed{}` they wrote, as
the reference scores them; `trajectory.metadata["unfinished"]` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentic_infer.backends.base import LLM
from agentic_infer.engines import prompts
from agentic_infer.engines.dialects import get_dialect
from agentic_infer.engines.driver import run_many
from agentic_infer.engines.handlers import AccessHandler, SearchHandler
from agentic_infer.engines.loop import AgentLoop, Episode, LoopLimits
from agentic_infer.engines.rid import ReasonInDocuments
from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.base import Retriever
from agentic_infer.types import Message, SamplingParams, Trajectory

DEFAULT_SAMPLING = SamplingParams(max_tokens=2048, temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05,
                                  logprobs=0)  # the sampled token's logprob, for RL


class SearchO1:
    """The Search-o1 engine (see module docstring)."""

    def __init__(self, llm: LLM, retriever: Retriever, *, max_searches: int = 10, top_k: int = 10,
                 max_turns: int = 15, max_total_tokens: int = 16384, dialect: str = "search_o1",
                 rid: bool | None = None, rid_llm: LLM | None = None, sampling: SamplingParams | None = None,
                 rid_sampling: SamplingParams | None = None, doc_chars: int = 3000, worked_example: bool = False,
                 assistant_prefix: str = "", rid_prefill: bool = False, instruction: str | None = None):
        self.dialect = get_dialect(dialect)
        if "search" not in {a.tool for a in self.dialect.actions}:
            raise ConfigError(f"dialect={dialect!r} has no search action; use search_o1, search_r1, r1_searcher "
                              "or asearcher")
        if top_k < 1:
            raise ConfigError(f"top_k={top_k}: must be >= 1")
        self.llm = llm
        self.sampling = sampling or DEFAULT_SAMPLING
        use_rid = (self.dialect.name == "search_o1") if rid is None else rid
        self.rid = ReasonInDocuments(rid_llm or llm, sampling=rid_sampling, doc_chars=doc_chars,
                                     search_tags=(self.dialect.actions[0].begin, self.dialect.result_begin),
                                     prefill=rid_prefill) if use_rid else None
        handlers: dict[str, Any] = {"search": SearchHandler(retriever, self.dialect, top_k=top_k, rid=self.rid,
                                                            seed=self.sampling.seed)}
        if any(a.tool == "access" for a in self.dialect.actions):
            if not hasattr(retriever, "get"):
                raise ConfigError(f"dialect {dialect!r} reads whole documents: the retriever needs get(doc_id)")
            handlers["access"] = AccessHandler(retriever)
        self.instruction = instruction or prompts.SEARCH_INSTRUCTIONS[self.dialect.name]
        self.worked_example = worked_example
        self.assistant_prefix = assistant_prefix
        config = {"dialect": self.dialect.name, "max_searches": max_searches, "top_k": top_k,
                  "max_turns": max_turns, "rid": use_rid, "sampling": self.sampling.to_dict(),
                  "worked_example": worked_example, "assistant_prefix": assistant_prefix}
        self.loop = AgentLoop(llm, self.dialect, handlers, sampling=self.sampling,
                              limits=LoopLimits(max_actions=max_searches, max_turns=max_turns,
                                                max_tokens_per_turn=self.sampling.max_tokens,
                                                max_total_tokens=max_total_tokens),
                              limit_message=prompts.SEARCH_LIMIT_MESSAGE, repeat_message=prompts.SEARCH_REPEAT_MESSAGE,
                              engine=f"search-o1/{self.dialect.name}", config=config)

    def messages(self, example: dict[str, Any]) -> list[Message]:
        if not str(example.get("question", "")).strip():
            raise ConfigError(f"example {example!r} has no 'question'; pass {{'question': '...'}}")
        parts = [self.instruction.format(max_actions=self.loop.limits.max_actions)]
        if self.worked_example and self.dialect.name in prompts.WORKED_EXAMPLES:
            parts.append(prompts.WORKED_EXAMPLES[self.dialect.name])
        parts.append(prompts.QUESTION_TEMPLATE.format(question=example["question"]))
        return [Message("user", "\n\n".join(parts))]

    def start(self, example: dict[str, Any]) -> Episode:
        return self.loop.start(example, self.messages(example), assistant_prefix=self.assistant_prefix)

    async def run(self, example: dict[str, Any]) -> Trajectory:
        return await self.loop.run(example, self.messages(example), assistant_prefix=self.assistant_prefix)

    async def run_many(self, examples: Sequence[dict[str, Any]], *, concurrency: int = 8,
                       scheduler: str = "async", out: str | Path | None = None,
                       progress: bool = True) -> list[Trajectory]:
        return await run_many(self.loop, self.start, examples, scheduler=scheduler, concurrency=concurrency,
                              out=out, progress=progress)
