"""Search-o1: agentic retrieval-augmented reasoning with Reason-in-Documents, in any search dialect.

    engine = SearchO1(llm, retriever, max_searches=10, k=10)   # k: documents per search
    rollout = await engine.run({"question": "..."})        # rollout.trajectories[0] is the trajectory
    rollouts = await run_many(engine, examples, concurrency=8, scheduler="async" | "lockstep")

Defaults follow the reference code (Search-o1, Li et al. 2025, github.com/sunnynexus/Search-o1): max
searches 10 (multi-hop; use 5 for single-hop), max turns 15, 10 documents per search (`k`), temperature 0.7,
top_p 0.8, top_k 20 (`sampling.top_k`), repetition penalty 1.05, doc context ±3000 chars, answer in `\\boxed{}`.
Reason-in-Documents (`rid=True`) may run on a different LLM (`rid_llm`). With another dialect
(`search_r1`, `r1_searcher`, `asearcher`) the same loop runs with that system's tags; RiD is off by default there (those systems insert raw documents).

`assistant_prefix` forces the opening of the assistant turn (e.g. `"<|begin_search_query|>"` makes a
small model that would otherwise answer from memory issue a first search); it is recorded as a
non-trainable prompt segment. `first_query="question"` goes one step further: the first search is the
question itself, run before the model's first turn (the forced query is a prompt segment, no LLM call
is made for it); every later turn, and Reason-in-Documents, is the model's own. A baseline setting for
small models that rarely close a query tag.

Unfinished episodes (turn cap, token budget) are answered from whatever `\\boxed{}` they wrote, as
the reference scores them; `trajectory.metadata["unfinished"]` says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentic_infer.backends.base import LLM
from agentic_infer.config import build_config, renamed
from agentic_infer.engines import prompts
from agentic_infer.engines.base import LoopEngine
from agentic_infer.engines.dialects import get_dialect
from agentic_infer.engines.handlers import AccessHandler, SearchHandler
from agentic_infer.engines.loop import AgentLoop, Episode, LoopLimits
from agentic_infer.engines.rid import ReasonInDocuments
from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.base import Retriever
from agentic_infer.types import Message, SamplingParams

DEFAULT_SAMPLING = SamplingParams(max_tokens=2048, temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05,
                                  logprobs=0)  # the sampled token's logprob, for RL


# What a small base model needs to search at all (`make demo`, the base in `make distill-eval`): a worked example,
# the first search tag forced, and Reason-in-Documents answering inside the analysis it was given.
BASE_HELP = {"worked_example": True, "assistant_prefix": "Let me search for this.\n<|begin_search_query|>",
             "rid_prefill": True}

PLAIN_K, PLAIN_PASSAGE_CHARS, PLAIN_MAX_SEARCHES = 2, 300, 5  # the plain setting `make distill` trains with


def plain_options(*, k: int = PLAIN_K, passage_chars: int = PLAIN_PASSAGE_CHARS,
                  max_searches: int = PLAIN_MAX_SEARCHES, dialect: str = "search_o1") -> dict[str, Any]:
    """The plain setting (raw passages cut to `passage_chars`, no Reason-in-Documents) that distillation
    demonstrations are built with and a distilled policy is served and evaluated with, in `dialect` (search_o1;
    afm for a policy distilled from Chain-of-Agents runs)."""
    return {"dialect": dialect, "rid": False, "k": k, "passage_chars": passage_chars, "max_searches": max_searches}


@renamed(top_k=("k", "documents per search"))
@dataclass(frozen=True)
class SearchO1Config:
    """Search-o1's settings (validated); `SearchO1(llm, retriever, config, **overrides)` or `--config FILE.yaml`."""

    dialect: str = "search_o1"
    max_searches: int = 10
    k: int = 10  # documents per search (sampling top-k is `sampling.top_k`)
    max_turns: int = 15
    max_total_tokens: int = 16384
    rid: bool | None = None  # None: on for the search_o1 dialect, off for the others
    sampling: SamplingParams = DEFAULT_SAMPLING
    rid_sampling: SamplingParams | None = None
    doc_chars: int = 3000  # RiD's document context (± chars around the best-matching sentence)
    passage_chars: int = 0  # without RiD: each raw passage cut to this many characters (0: whole passages)
    worked_example: bool = False
    assistant_prefix: str = ""
    rid_prefill: bool = False
    instruction: str | None = None
    first_query: str | None = None  # "question": the first search is the question itself

    def __post_init__(self) -> None:
        dialect = get_dialect(self.dialect)
        if "search" not in {a.tool for a in dialect.actions}:
            raise ConfigError(f"SearchO1Config.dialect={self.dialect!r} has no search action; use search_o1, "
                              "search_r1, r1_searcher, asearcher or atom_searcher")
        for name in ("k", "max_turns", "max_total_tokens", "doc_chars"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ConfigError(f"SearchO1Config.{name}={getattr(self, name)!r}: must be an integer >= 1")
        if not isinstance(self.passage_chars, int) or self.passage_chars < 0:
            raise ConfigError(f"SearchO1Config.passage_chars={self.passage_chars!r}: must be an integer >= 0 "
                              "(0 shows whole passages)")
        if not isinstance(self.max_searches, int) or self.max_searches < 0:
            raise ConfigError(f"SearchO1Config.max_searches={self.max_searches!r}: must be an integer >= 0")
        if self.first_query not in (None, "question"):
            raise ConfigError(f"SearchO1Config.first_query={self.first_query!r}: the only value is 'question' "
                              "(or None: the model writes every query)")

    @property
    def use_rid(self) -> bool:
        return self.dialect == "search_o1" if self.rid is None else self.rid


class SearchO1(LoopEngine):
    """The Search-o1 engine (see module docstring). Settings: `SearchO1Config`, or its fields as keywords."""

    def __init__(self, llm: LLM, retriever: Retriever, config: SearchO1Config | None = None, *,
                 rid_llm: LLM | None = None, **overrides: Any):
        cfg = self.config = build_config(SearchO1Config, base=config, overrides=overrides, source="keyword arguments")
        self.dialect = get_dialect(cfg.dialect)
        self.llm = llm
        self.sampling = cfg.sampling
        self.rid = ReasonInDocuments(rid_llm or llm, sampling=cfg.rid_sampling, doc_chars=cfg.doc_chars,
                                     search_tags=(self.dialect.actions[0].begin, self.dialect.result_begin),
                                     prefill=cfg.rid_prefill) if cfg.use_rid else None
        handlers: dict[str, Any] = {"search": SearchHandler(retriever, self.dialect, k=cfg.k, rid=self.rid,
                                                            seed=self.sampling.seed,
                                                            passage_chars=cfg.passage_chars or None)}
        if any(a.tool == "access" for a in self.dialect.actions):
            if not hasattr(retriever, "get"):
                raise ConfigError(f"dialect {cfg.dialect!r} reads whole documents: the retriever needs get(doc_id)")
            handlers["access"] = AccessHandler(retriever)
        self.instruction = cfg.instruction or prompts.SEARCH_INSTRUCTIONS[self.dialect.name]
        self.worked_example = cfg.worked_example
        self.assistant_prefix = cfg.assistant_prefix
        self.first_query = cfg.first_query
        record = {"dialect": self.dialect.name, "max_searches": cfg.max_searches, "k": cfg.k,
                  "max_turns": cfg.max_turns, "rid": cfg.use_rid, "passage_chars": cfg.passage_chars, "sampling": self.sampling.to_dict(),
                  "worked_example": cfg.worked_example, "assistant_prefix": cfg.assistant_prefix,
                  "first_query": cfg.first_query}
        self.loop = AgentLoop(llm, self.dialect, handlers, sampling=self.sampling,
                              limits=LoopLimits(max_actions=cfg.max_searches, max_turns=cfg.max_turns,
                                                max_tokens_per_turn=self.sampling.max_tokens,
                                                max_total_tokens=cfg.max_total_tokens),
                              limit_message=prompts.SEARCH_LIMIT_MESSAGE, repeat_message=prompts.SEARCH_REPEAT_MESSAGE,
                              engine=f"search-o1/{self.dialect.name}", config=record)

    def messages(self, example: Mapping[str, Any]) -> list[Message]:
        if not str(example.get("question", "")).strip():
            raise ConfigError(f"example {example!r} has no 'question'; pass {{'question': '...'}}")
        parts = [self.instruction.format(max_actions=self.loop.limits.max_actions)]
        if self.worked_example and self.dialect.name in prompts.WORKED_EXAMPLES:
            parts.append(prompts.WORKED_EXAMPLES[self.dialect.name])
        parts.append(prompts.QUESTION_TEMPLATE.format(question=example["question"]))
        return [Message("user", prompts.with_guidance("\n\n".join(parts), example))]

    def start(self, example: Mapping[str, Any]) -> Episode:
        messages = self.messages(example)
        if self.first_query is None:
            return self.loop.start(dict(example), messages, assistant_prefix=self.assistant_prefix or self.dialect.opening)
        tag = next(a for a in self.dialect.actions if a.tool == "search")
        query = tag.begin + " ".join(str(example["question"]).split()) + tag.end
        episode = self.loop.start(dict(example), messages,
                                  assistant_prefix=(self.assistant_prefix or self.dialect.opening) + query)
        episode.forced_action = True  # the loop runs this search before the model's first turn
        return episode
