"""Reason-in-Documents (Search-o1): distil retrieved documents into the facts the reasoning needs.

A second LLM call (any backend: it may be a cheaper model than the reasoner) reads the previous
reasoning (condensed: when it has more than 5 steps, step 1, the last 4 and every step holding a
search tag are kept, the others become `...`), the current query and the documents (each cut to
±`doc_chars` around its best-matching sentence), and must answer with `**Final Information**`
followed by the extracted facts, or `No helpful information found.`. Only the text after the
marker is inserted between the result tags. One call per executed search, all calls of a turn
issued concurrently. `prefill=True` opens the reply with the marker itself, for small models that
copy documents instead of following the format.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from agentic_infer.backends.base import LLM, count_prompt_tokens
from agentic_infer.errors import BackendError
from agentic_infer.tools.web import context_window
from agentic_infer.types import Message, SamplingParams, Usage

FINAL_MARKER = "**Final Information**"
NOTHING_FOUND = "No helpful information found."

INSTRUCTION = """You help a reasoning agent that has just run a search. Read the inputs below.

1. Look through the **Searched Documents** for facts that answer the **Current Search Query** and
   that move the **Previous Reasoning Steps** toward the original question.
2. Keep only facts stated in the documents. Do not guess.
3. Reply with the heading **Final Information** followed by the useful facts in a few sentences.
   If no document helps, reply with:

**Final Information**

No helpful information found.

**Previous Reasoning Steps:**
{prev_reasoning}

**Current Search Query:**
{query}

**Searched Documents:**
{documents}
"""


def condense_reasoning(output: str, search_tags: Sequence[str]) -> str:
    """Number the reasoning steps; with more than 5, keep step 1, the last 4 and steps with a search tag."""
    lines = [ln for ln in output.replace("\n\n", "\n").split("\n")]
    steps = [f"Step {i}: {ln}" for i, ln in enumerate(lines, 1)]
    if len(steps) <= 5:
        return "\n\n".join(steps)
    kept: list[str] = []
    for i, step in enumerate(steps):
        if i == 0 or i >= len(steps) - 4 or any(tag in step for tag in search_tags):
            kept.append(step)
        elif not kept or kept[-1] != "...":
            kept.append("...")
    return "\n\n".join(kept)


def extract_final_information(text: str) -> str:
    """The text after the last `**Final Information**` marker, else the not-found sentence."""
    if FINAL_MARKER not in text:
        return NOTHING_FOUND
    info = text.split(FINAL_MARKER)[-1].strip().strip("`").strip().lstrip(":").strip()
    return info or NOTHING_FOUND


@dataclass
class RidResult:
    info: str
    raw: str
    usage: Usage


class ReasonInDocuments:
    """Runs the Reason-in-Documents call; `llm` may differ from the reasoning model."""

    def __init__(self, llm: LLM, *, sampling: SamplingParams | None = None, doc_chars: int = 3000,
                 search_tags: Sequence[str] = ("<|begin_search_query|>", "<|begin_search_result|>"),
                 prefill: bool = False):
        self.llm = llm
        self.sampling = sampling or SamplingParams(max_tokens=512, temperature=0.7, top_p=0.8, top_k=20,
                                                   repetition_penalty=1.05)
        self.doc_chars = doc_chars
        self.search_tags = tuple(search_tags)
        self.prefill = prefill  # open the reply with the marker (small models rarely write it themselves)

    def prompt(self, prev_output: str, query: str, docs: Sequence) -> str:
        documents = "\n\n".join(
            f"**Document {i}:** {d.title}\n{context_window(d.text, query, chars=self.doc_chars)}"
            for i, d in enumerate(docs, 1)) or "(no documents were found)"
        text = INSTRUCTION.format(prev_reasoning=condense_reasoning(prev_output, self.search_tags) or "(none yet)",
                                  query=query, documents=documents)
        return self.llm.render([Message("user", text)]) + (f"{FINAL_MARKER}\n\n" if self.prefill else "")

    async def one(self, prev_output: str, query: str, docs: Sequence, *, seed: int | None = None) -> RidResult:
        params = self.sampling if seed is None else self.sampling.replace(seed=seed)
        prompt = self.prompt(prev_output, query, docs)
        try:
            [comp] = await self.llm.generate(prompt, params)
        except BackendError as e:
            return RidResult(NOTHING_FOUND, f"<error: {e}>", Usage(llm_calls=1))
        raw = f"{FINAL_MARKER}\n\n{comp.text}" if self.prefill else comp.text
        return RidResult(extract_final_information(raw), raw,
                         Usage(prompt_tokens=count_prompt_tokens(self.llm, prompt, comp.prompt_tokens),
                               completion_tokens=comp.num_tokens, llm_calls=1))

    async def many(self, items: Sequence[tuple[str, str, Sequence]], *, seeds: Sequence[int | None] | None = None
                   ) -> list[RidResult]:
        seeds = seeds or [None] * len(items)
        return list(await asyncio.gather(*(self.one(p, q, d, seed=s) for (p, q, d), s in zip(items, seeds))))
