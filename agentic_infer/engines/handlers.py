"""Action handlers for the agent loop: search (with optional Reason-in-Documents), whole-document
access, code execution, and native tool calls. Each takes every call of one turn at once.

A handler never raises into the loop: a failing tool becomes an `Outcome` with `error` set, and
its message is what the model sees.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from agentic_infer.engines.dialects import Dialect
from agentic_infer.engines.loop import Call, Outcome
from agentic_infer.engines.rid import ReasonInDocuments
from agentic_infer.tools.base import Tool
from agentic_infer.tools.retrieval.base import Retriever


def cut_text(text: str, chars: int) -> str:
    """`text` when it fits `chars`, else its head up to the last word boundary within `chars`, then " ..."."""
    if len(text) <= chars:
        return text
    head = text[:chars]
    cut = head.rsplit(None, 1)[0] if " " in head.strip() else head
    return cut.rstrip() + " ..."


class SearchHandler:
    """Batched retrieval for all queries of a turn, then RiD per query (or the formatted documents, each passage
    cut to `passage_chars` when set: the raw-passage setting's bound on the observation length)."""

    def __init__(self, retriever: Retriever, dialect: Dialect, *, k: int = 10,
                 rid: ReasonInDocuments | None = None, seed: int | None = None, passage_chars: int | None = None):
        self.retriever = retriever
        self.dialect = dialect
        self.k = k  # documents per search
        self.rid = rid
        self.seed = seed
        self.passage_chars = passage_chars

    async def __call__(self, calls: Sequence[Call]) -> list[Outcome]:
        queries = [c.arguments["query"] for c in calls]
        try:
            results = await asyncio.to_thread(self.retriever.search, queries, self.k)
        except Exception as e:  # a broken retriever is an observation, not a crash
            message = f"Search failed: {type(e).__name__}: {e}"
            return [Outcome(message, error=message) for _ in calls]
        meta = [{"doc_ids": [h.id for h in hits], "titles": [h.title for h in hits]} for hits in results]
        if self.rid is None:
            if self.passage_chars:
                results = [[dataclasses.replace(h, text=cut_text(h.text, self.passage_chars)) for h in hits]
                           for hits in results]
            return [Outcome(self.dialect.format_docs(hits), metadata=m) for hits, m in zip(results, meta)]
        # the episode's output ends with this turn's query; RiD sees the reasoning so far
        items = [(c.episode.output, q, hits) for c, q, hits in zip(calls, queries, results)]
        seeds = [None if self.seed is None else self.seed + c.episode.actions for c in calls]
        extracted = await self.rid.many(items, seeds=seeds)
        return [Outcome(r.info, metadata={**m, "rid_output": r.raw}, usage=r.usage)
                for r, m in zip(extracted, meta)]


class AccessHandler:
    """Read a whole document by id (or title) from a DocumentStore, cut to `max_chars` (ASearcher's access)."""

    def __init__(self, store: Any, *, max_chars: int = 5000):
        self.store = store
        self.max_chars = max_chars

    async def __call__(self, calls: Sequence[Call]) -> list[Outcome]:
        out = []
        for c in calls:
            key = c.arguments["query"]
            doc = await asyncio.to_thread(self.store.get, key)
            if doc is None:
                msg = f"No document with id {key!r}."
                out.append(Outcome(msg, error=msg))
            else:
                text = cut_text(doc.text, self.max_chars)
                out.append(Outcome(f"{doc.title}\n{text}", metadata={"doc_id": doc.id}))
        return out


class CodeHandler:
    """Run each python block in the sandbox; the output block shows stdout, or the compressed error."""

    def __init__(self, sandbox: Tool):
        self.sandbox = sandbox

    async def __call__(self, calls: Sequence[Call]) -> list[Outcome]:
        results = await asyncio.gather(*(self.sandbox(code=c.arguments["query"]) for c in calls))
        out = []
        for r in results:
            text = r.content if r.error is None else (r.content + ("\n" if r.content else "") + r.error)
            out.append(Outcome(text.strip(), error=r.error, metadata={k: v for k, v in r.metadata.items()
                                                                       if k in ("exit_code", "timed_out", "wall_s")}))
        return out


def handlers_for_tools(tools: Mapping[str, Tool] | Sequence[Tool]) -> dict[str, Any]:
    """One handler per tool name, so the loop routes `{"name": ...}` calls like any other action."""
    table = dict(tools) if isinstance(tools, Mapping) else {t.name: t for t in tools}

    def make(tool: Tool):
        async def handle(calls: Sequence[Call]) -> list[Outcome]:
            results = await asyncio.gather(*(tool.call_json(c.arguments) for c in calls))
            return [Outcome(r.as_observation(), error=r.error) for r in results]

        return handle

    return {name: make(tool) for name, tool in table.items()}
