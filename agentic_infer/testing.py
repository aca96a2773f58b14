"""Test doubles that users need too: a scripted LLM backend.

`FakeLLM(responses)` is a real backend in every respect but the model: `responses` is a list of
strings returned in order, one per generated completion, or a callable `prompt -> str`. It honours
stop strings like a real backend (cuts at the first stop string, reports it in `stop_reason`, keeps
it when `include_stop`), `max_tokens`, `n`, streaming with cancellation, a ChatML chat template and
a byte-level tokenizer of its own (token id = UTF-8 byte, so encode/decode are lossless; a token-id
prompt is decoded with it before the script sees it, and `prompt_ids` records it), records the
`SamplingParams` each completion was asked with (`params`, in step with `prompts`: what an engine really
sent), and returns deterministic fake logprobs (override with `logprob_fn(token_index, token_id) -> float`).

A response may also be a list of token ids, generated exactly as given (a non-canonical tokenization,
a stop string ending inside a token), and `tokenizer=` swaps in a real tokenizer (e.g. a GGUF
model's, `agentic_infer.backends.tokenizer.load_tokenizer`) to script a real vocabulary.

    llm = FakeLLM(["I should search. <|begin_search_query|>x<|end_search_query|>", "\\\\boxed{42}"])
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from agentic_infer.backends.base import BaseLLM, tokenize
from agentic_infer.backends.chat_template import CHATML, ChatTemplate
from agentic_infer.errors import BackendError
from agentic_infer.types import Message, SamplingParams, TokenLogprob, TopLogprob


class ByteTokenizer:
    """Token id = one UTF-8 byte (0..255). Lossless and dependency-free; it has no special tokens, so
    `add_special` adds nothing either way (the encode semantics of `agentic_infer.backends.base`)."""

    def encode(self, text: str, add_special: bool = True) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(ids).decode("utf-8", errors="replace")


def default_logprob(index: int, token_id: int) -> float:
    """A deterministic logprob in [-0.7, -0.05] that varies with the token."""
    return -0.05 - 0.1 * ((token_id * 7 + index) % 7)


class FakeLLM(BaseLLM):
    """A scripted backend: see the module docstring."""

    name = "fake"

    def __init__(self, responses: Sequence[str | Sequence[int]] | Callable[[str], str | Sequence[int]] | None = None,
                 *, reply: str | None = None, logprob_fn: Callable[[int, int], float] | None = None,
                 token_delay_s: float = 0.0, tokenizer: Any = None):
        super().__init__()
        if responses is None and reply is None:
            reply = ""
        self._script = (lambda _prompt: reply) if reply is not None else responses
        self._queue = None if callable(self._script) else list(self._script)
        self._given = 0 if self._queue is None else len(self._queue)
        self._tokenizer = tokenizer if tokenizer is not None else ByteTokenizer()
        self._template = ChatTemplate(CHATML)
        self.logprob_fn = logprob_fn or default_logprob
        self.token_delay_s = token_delay_s
        self.prompts: list[str] = []  # every prompt seen, in order (token-id prompts decoded)
        self.prompt_ids: list[list[int] | None] = []  # the same prompts as ids when given as ids, else None
        self.params: list[SamplingParams] = []  # the sampling of each of those completions
        self.tokens_generated = 0  # tokens actually produced (a cancelled stream stops counting)

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    @property
    def remaining(self) -> int | None:
        """Scripted responses not yet used (None for a callable script)."""
        return None if self._queue is None else len(self._queue)

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return self._template.render(messages, add_generation_prompt=add_generation_prompt)

    def _next_response(self, prompt: str) -> str | Sequence[int]:
        self.prompts.append(prompt)
        if self._queue is None:
            out = self._script(prompt)  # type: ignore[operator]
            return out if isinstance(out, list | tuple) else str(out)
        if not self._queue:
            raise BackendError(f"FakeLLM ran out of scripted responses ({self._given} given); add more responses "
                               "or pass a callable")
        return self._queue.pop(0)

    async def _stream_tokens(self, prompt, params, seed, cancelled) -> AsyncIterator[tuple[Any, Any]]:
        self.prompt_ids.append(None if isinstance(prompt, str) else list(prompt))
        self.params.append(params)
        text = prompt if isinstance(prompt, str) else self._tokenizer.decode(prompt)
        reply = self._next_response(text)
        ids = list(reply) if not isinstance(reply, str) else self._encode(reply)
        k = params.logprobs or 0
        for i, tid in enumerate(ids):
            if cancelled.is_set():
                return
            if self.token_delay_s:
                await asyncio.sleep(self.token_delay_s)
            lp = self.logprob_fn(i, tid)
            piece = self._piece(tid)
            alts = [TopLogprob(piece, lp, tid)]
            alts += [TopLogprob("", lp - 1.0 - j, (tid + j + 1) % 256) for j in range(max(0, k - 1))]
            self.tokens_generated += 1
            yield (bytes([tid]) if self._bytes else piece), TokenLogprob(tid, piece, lp, tuple(alts[:k]))

    @property
    def _bytes(self) -> bool:
        return isinstance(self._tokenizer, ByteTokenizer)

    def _encode(self, text: str) -> list[int]:
        return tokenize(self._tokenizer, text, add_special=False)  # generated text: nothing added

    def _piece(self, tid: int) -> str:
        if self._bytes:
            return chr(tid) if tid < 128 else ""
        return self._tokenizer.decode([tid])
