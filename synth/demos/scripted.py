"""Scripted stand-ins for the model, so a demonstration runs through the real Search-o1 engine.

- `Vocab`: the chat template and tokenizer of the model the demonstrations are for: a loaded backend
  (`load_llm(uri)`), a `LocalTokenizer` (`load_tokenizer("default")`: the embedded GGUF's vocabulary,
  no weights), or anything with `render` and `tokenizer`.
- `ScriptedPolicy`: an LLM whose "generations" are given texts; each is returned with the ids
  `encode_continuation` gives (the one encode semantics, nothing added), no logprobs (nothing was
  sampled), and the stop string it ends with as `stop_reason`, so the agent loop parses and splices
  exactly as it does for a sampled turn.
- `ScriptedRid`: the Reason-in-Documents model: for a query it returns `**Final Information**` and the
  evidence sentences that the documents actually retrieved for that query contain (looked up through
  `RecordingRetriever`), else the not-found sentence.
- `RecordingRetriever`: wraps a real retriever and remembers the hits of every query.

Not covered: streaming (the loop never streams); a scripted reply that does not end in a stop string
finishes the episode (as an EOS would).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentic_infer.backends.base import encode_continuation
from agentic_infer.engines.loop import end_of_turn
from agentic_infer.engines.rid import FINAL_MARKER, NOTHING_FOUND
from agentic_infer.errors import BackendError, ConfigError
from agentic_infer.tools.retrieval.base import Hit
from agentic_infer.types import Completion, Message, SamplingParams
from agentic_infer.verify import normalize_answer

_QUERY = re.compile(r"\*\*Current Search Query:\*\*\n(.*?)\n\n\*\*Searched Documents:\*\*", re.S)


class Vocab:
    """Chat template + tokenizer of the target model (see module docstring)."""

    def __init__(self, source: Any):
        if hasattr(source, "render") and hasattr(source, "tokenizer"):
            self._render, self.tokenizer = source.render, source.tokenizer
        elif hasattr(source, "template") and hasattr(source, "encode"):
            self._render, self.tokenizer = source.template.render, source
        else:
            raise ConfigError(f"Vocab: {type(source).__name__} has neither render+tokenizer (a backend) nor "
                              "template+encode (a LocalTokenizer); pass load_llm(uri) or load_tokenizer(spec)")
        self.source = getattr(source, "source", getattr(source, "name", type(source).__name__))

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return self._render(messages, add_generation_prompt=add_generation_prompt)

    def end_of_turn(self) -> str:
        """The text the chat template closes an assistant message with (`<|im_end|>` for ChatML), stripped."""
        return end_of_turn(self)


class ScriptedPolicy:
    """An LLM that replies with the given texts in order (see module docstring)."""

    name = "scripted"

    def __init__(self, vocab: Vocab, replies: Sequence[str]):
        self.vocab = vocab
        self.replies = list(replies)
        self.calls = 0

    @property
    def tokenizer(self) -> Any:
        return self.vocab.tokenizer

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return self.vocab.render(messages, add_generation_prompt=add_generation_prompt)

    async def generate(self, prompt: Any, params: SamplingParams) -> list[Completion]:
        if self.calls >= len(self.replies):
            raise BackendError(f"ScriptedPolicy: the script has {len(self.replies)} turns and the loop asked for "
                               f"turn {self.calls + 1}")
        text = self.replies[self.calls]
        self.calls += 1
        stop = next((s for s in params.stop if text.endswith(s)), None)
        return [Completion(text=text, token_ids=encode_continuation(self, text), logprobs=None,
                           finish_reason="stop", stop_reason=stop)]

    def stream(self, prompt: Any, params: SamplingParams):
        raise ConfigError("ScriptedPolicy does not stream; the agent loop calls generate()")


class RecordingRetriever:
    """A retriever that remembers the hits of every query (`hits[query]`, the latest search wins)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.hits: dict[str, list[Hit]] = {}

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        results = self.inner.search(queries, k)
        for q, hits in zip(queries, results):
            self.hits[q] = list(hits)
        return results

    def get(self, doc_id: str) -> Any:
        return self.inner.get(doc_id)


def evidence_found(hits: Sequence[Hit], evidence: Sequence[str]) -> list[str]:
    """The evidence sentences some hit's text contains (whitespace- and case-normalised)."""
    texts = [" ".join(h.text.split()).lower() for h in hits]
    return [s for s in evidence if any(" ".join(s.split()).lower() in t for t in texts)]


class ScriptedRid(ScriptedPolicy):
    """Reason-in-Documents from the supporting sentences of what was actually retrieved."""

    name = "scripted-rid"

    def __init__(self, vocab: Vocab, retriever: RecordingRetriever, evidence: Mapping[str, Sequence[str]]):
        super().__init__(vocab, [])
        self.retriever = retriever
        self.evidence = {normalize_answer(q): list(v) for q, v in evidence.items()}

    async def generate(self, prompt: Any, params: SamplingParams) -> list[Completion]:
        self.calls += 1
        m = _QUERY.search(prompt if isinstance(prompt, str) else "")
        query = m.group(1).strip() if m else ""
        hits = self.retriever.hits.get(query, [])
        found = evidence_found(hits, self.evidence.get(normalize_answer(query), []))
        info = " ".join(found) if found else NOTHING_FOUND
        text = f"{FINAL_MARKER}\n\n{info}"
        return [Completion(text=text, token_ids=encode_continuation(self, text), finish_reason="stop")]
