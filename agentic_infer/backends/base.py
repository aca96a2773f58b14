"""The LLM protocol every backend implements, and the pieces they share.

A backend is async-first:

- `await llm.generate(prompt, params) -> list[Completion]` (`params.n` completions). A prompt is raw
  text (already chat-templated, possibly ending inside an assistant turn, which the model continues),
  token ids, or a list of `Message`s (rendered with the model's chat template when one is known,
  otherwise sent to a chat API).
- `async for delta in llm.stream(prompt, params)`: one `StreamDelta` per generated token; breaking
  out of the loop (or `aclose()`) cancels the generation at the backend.
- `llm.render(messages, add_generation_prompt=True) -> str` applies the chat template.
- `llm.tokenizer.encode(text, add_special=True) / decode(ids)` (see "Encode semantics" below).

Encode semantics, the same for every tokenizer (llama.cpp, transformers, the local tokenizer of a
remote model, FakeLLM's byte tokenizer):

- `encode(text, add_special=True)`: `text` opens a sequence. The model's own start-of-sequence
  policy applies (a BOS token when its tokenizer adds one: llama.cpp's `add_bos_token`,
  transformers' `add_special_tokens`; never a second one in front of a BOS the text already begins
  with, as a rendered chat template may), and these are exactly the ids `llm.generate(text)`
  conditions on. `encode_prompt(llm, text)` is this.
- `encode(text, add_special=False)`: `text` is a piece spliced into the middle of a sequence (an
  observation, forced text): nothing is added, never a BOS or EOS. `encode_continuation(llm, text)`
  is this.
- In both, special-token strings written in the text (chat markers such as `<|im_start|>`) are parsed
  as the special tokens, as a rendered chat template needs. `decode(ids)` renders special tokens as
  their text, so `encode(decode(ids))` round-trips a canonical tokenization.

Generated text is decoded from ids; so a piece's ids, not its text, are the record (BPE merges
across piece boundaries: `encode(a) + encode(b) != encode(a + b)` in general). The agent loop keeps
ids and generates from them (`engines/loop.py`).

Backends subclass `BaseLLM` and implement `_stream_tokens` (one sample, token by token) or override
`_generate_one`; stop strings are matched here, client-side, by `StopMatcher`, so every backend
reports which stop string matched and can keep it in the text.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import inspect
import random
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Union, runtime_checkable

from agentic_infer.errors import AgenticError, BackendError, ConfigError
from agentic_infer.types import Completion, Message, SamplingParams, TokenLogprob

Prompt = Union[str, Sequence[int], Sequence[Message]]


@runtime_checkable
class Tokenizer(Protocol):
    """See "Encode semantics" in the module docstring."""

    def encode(self, text: str, add_special: bool = True) -> list[int]: ...
    def decode(self, ids: Sequence[int]) -> str: ...


@dataclass
class StreamDelta:
    """One streamed step: the new text (may be empty while a UTF-8 character is incomplete), the token
    with its logprobs (None when the backend does not give tokens), and, on the last delta, the finish."""

    text: str
    token: TokenLogprob | None = None
    finish_reason: str | None = None
    stop_reason: str | None = None


@runtime_checkable
class LLM(Protocol):
    name: str

    async def generate(self, prompt: Prompt, params: SamplingParams) -> list[Completion]: ...
    def stream(self, prompt: Prompt, params: SamplingParams) -> AsyncIterator[StreamDelta]: ...
    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str: ...
    @property
    def tokenizer(self) -> Tokenizer: ...


class StopMatcher:
    """Incremental stop-string detection over streamed text.

    `feed(piece)` returns None while no stop string has appeared, else `(text, stop)` where text is
    everything generated up to the stop string (including it when `include_stop`). Only the tail
    that could still hold a stop string is rescanned, so a long generation costs O(length).
    """

    def __init__(self, stops: Sequence[str], include_stop: bool = False):
        self.stops = tuple(stops)
        self.include_stop = include_stop
        self.text = ""
        self._longest = max((len(s) for s in self.stops), default=0)

    def feed(self, piece: str) -> tuple[str, str] | None:
        start = max(0, len(self.text) - self._longest + 1)
        self.text += piece
        if not self.stops or not piece:
            return None
        best: tuple[int, str] | None = None
        for s in self.stops:
            i = self.text.find(s, start)
            if i >= 0 and (best is None or i < best[0]):
                best = (i, s)
        if best is None:
            return None
        i, s = best
        return (self.text[: i + len(s)] if self.include_stop else self.text[:i]), s

    def safe_len(self) -> int:
        """How much of the text can be shown: all but a tail that may be the start of a stop string."""
        n = len(self.text)
        for k in range(min(self._longest - 1, n), 0, -1):
            tail = self.text[n - k:]
            if any(s.startswith(tail) for s in self.stops):
                return n - k
        return n


class Utf8Stream:
    """Turns token byte strings into text without splitting multi-byte characters."""

    def __init__(self) -> None:
        self._dec = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, data: bytes) -> str:
        return self._dec.decode(data)

    def flush(self) -> str:
        return self._dec.decode(b"", final=True)


async def collect(deltas: AsyncIterator[StreamDelta], *, keep_token_ids: bool = True) -> Completion:
    """Accumulate a stream into one Completion."""
    text: list[str] = []
    toks: list[TokenLogprob] = []
    finish, stop = "length", None
    async for d in deltas:
        text.append(d.text)
        if d.token is not None:
            toks.append(d.token)
        if d.finish_reason is not None:
            finish, stop = d.finish_reason, d.stop_reason
    ids = [t.token_id for t in toks] if toks and keep_token_ids and all(t.token_id is not None for t in toks) else None
    return Completion(text="".join(text), token_ids=ids, logprobs=toks or None, finish_reason=finish,
                      stop_reason=stop)


_DONE = object()


async def thread_tokens(run: Any, what: str) -> AsyncIterator[Any]:
    """Run a blocking token loop in a worker thread and yield what it emits.

    `run(emit, cancelled)` calls `emit(item)` per token and returns at the end; it must check the
    `threading.Event` `cancelled` between tokens. Leaving the iteration sets it and joins the
    thread, so a cancelled generation really stops. Exceptions in the thread surface here as
    `BackendError` (ours are re-raised unchanged).
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    cancelled = threading.Event()

    def emit(item: Any) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, item)

    def work() -> None:
        try:
            run(emit, cancelled)
            emit(_DONE)
        except BaseException as e:  # forwarded to the consumer, never swallowed
            emit(e)

    thread = threading.Thread(target=work, name=f"{what}-generate", daemon=True)
    thread.start()
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                if isinstance(item, AgenticError):
                    raise item
                raise BackendError(f"{what} generation failed: {item!r}") from item
            yield item
    finally:
        cancelled.set()
        await asyncio.to_thread(thread.join)


def count_prompt_tokens(llm: Any, prompt: Any, reported: int | None = None) -> int:
    """Prompt tokens of one call: the backend's own count when it `reported` one, else `prompt` counted by
    its tokenizer (token ids count as they are, text as `encode_prompt` reads it); 0 when neither is
    possible (a message list, or a remote model without ?tokenizer=)."""
    if reported is not None:
        return reported
    if isinstance(prompt, list) and all(isinstance(i, int) for i in prompt):
        return len(prompt)
    ids = encode_prompt(llm, prompt) if isinstance(prompt, str) else None
    return len(ids) if ids is not None else 0


def encode_prompt(llm: Any, text: str) -> list[int] | None:
    """Token ids of `text` at the start of a sequence, exactly as `llm.generate(text)` conditions on them
    (`tokenizer.encode(text, add_special=True)`: the model's own BOS policy, special-token strings such as
    chat markers parsed). None when the backend has no tokenizer."""
    return _encode(llm, text, add_special=True)


def encode_continuation(llm: Any, text: str) -> list[int] | None:
    """Token ids of `text` spliced into the middle of a sequence (an observation, forced text):
    `tokenizer.encode(text, add_special=False)`: special-token strings parsed, nothing added (no BOS/EOS).
    None when the backend has no tokenizer."""
    return _encode(llm, text, add_special=False)


def _encode(llm: Any, text: str, *, add_special: bool) -> list[int] | None:
    try:
        return tokenize(llm.tokenizer, text, add_special=add_special)
    except (AgenticError, AttributeError, NotImplementedError):  # no tokenizer (a remote model without one)
        return None


def tokenize(tokenizer: Any, text: str, *, add_special: bool) -> list[int]:
    """`tokenizer.encode(text, add_special=...)`; a tokenizer whose encode takes no such flag adds nothing
    and is called without it."""
    if not _takes_add_special(tokenizer.encode):
        return list(tokenizer.encode(text))
    return list(tokenizer.encode(text, add_special=add_special))


def _takes_add_special(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return "add_special" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def without_double_bos(ids: list[int], bos_id: int | None) -> list[int]:
    """`ids` minus a BOS the tokenizer added in front of one the text already began with (a rendered chat
    template that writes `{{ bos_token }}`): the model is conditioned on one BOS, never two."""
    if bos_id is not None and len(ids) >= 2 and ids[0] == ids[1] == bos_id:
        return ids[1:]
    return ids


def sample_seeds(params: SamplingParams) -> list[int]:
    """One seed per sample: `seed, seed+1, ...` when a seed is given, random ones otherwise."""
    if params.seed is not None:
        return [params.seed + i for i in range(params.n)]
    rng = random.SystemRandom()
    return [rng.randrange(2**31 - 1) for _ in range(params.n)]


class BaseLLM:
    """Shared machinery: prompt normalisation, `n` samples, stop strings, streaming, cancellation.

    Subclasses implement `_stream_tokens(prompt, params, seed, cancelled)`: an async iterator of
    `(token_bytes_or_text, TokenLogprob | None)` for ONE sample that stops at EOS / max_tokens and
    checks `cancelled.is_set()` between tokens; it signals EOS by returning and `max_tokens` is
    enforced here. Backends whose engine matches stops and batches `n` itself may override
    `generate` entirely (the OpenAI backend does).
    """

    name = "base"
    #: max concurrent generations inside one backend (llama.cpp: 1, one context)
    max_concurrency: int | None = None

    def __init__(self) -> None:
        self._sem = asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else None

    # -- prompt handling -------------------------------------------------------------------------
    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        raise ConfigError(f"backend {self.name!r} knows no chat template; pass raw text or choose a backend "
                          "with a tokenizer")

    def _as_prompt(self, prompt: Prompt) -> str | list[int]:
        if isinstance(prompt, str):
            return prompt
        items = list(prompt)
        if not items:
            raise ConfigError("prompt=[]: empty prompt; pass text, token ids or messages")
        if all(isinstance(m, Message) for m in items):
            return self.render(items)
        if all(isinstance(m, dict) and "role" in m for m in items):
            return self.render([Message.from_dict(m) for m in items])
        if all(isinstance(t, int) for t in items):
            return items
        raise ConfigError(f"prompt of type {type(items[0]).__name__}: expected str, token ids or Message list")

    # -- generation --------------------------------------------------------------------------------
    async def _stream_tokens(self, prompt: str | list[int], params: SamplingParams, seed: int,
                             cancelled: asyncio.Event) -> AsyncIterator[tuple[Any, TokenLogprob | None]]:
        raise NotImplementedError
        yield  # pragma: no cover

    async def _stream_one(self, prompt: str | list[int], params: SamplingParams, seed: int) -> AsyncIterator[StreamDelta]:
        cancelled = asyncio.Event()
        matcher = StopMatcher(params.stop, params.include_stop)
        utf8 = Utf8Stream()
        emitted = 0  # chars of matcher.text already yielded
        produced = 0
        gen = self._stream_tokens(prompt, params, seed, cancelled)
        finish, stop = "stop", None
        try:
            async for piece, tok in gen:
                produced += 1
                text = utf8.push(piece) if isinstance(piece, bytes) else piece
                hit = matcher.feed(text)
                if hit is not None:
                    final, stop = hit
                    yield StreamDelta(final[emitted:], tok, "stop", stop)
                    return
                safe = matcher.safe_len()
                yield StreamDelta(matcher.text[emitted:safe], tok)
                emitted = safe
                if produced >= params.max_tokens:
                    finish = "length"
                    break
            tail = utf8.flush()
            if tail:
                matcher.feed(tail)
            yield StreamDelta(matcher.text[emitted:], None, finish, None)
        finally:
            cancelled.set()
            await gen.aclose()

    async def stream(self, prompt: Prompt, params: SamplingParams) -> AsyncIterator[StreamDelta]:
        """Stream one sample (params.n must be 1). Leaving the loop early cancels generation."""
        if params.n != 1:
            raise ConfigError(f"SamplingParams.n={params.n}: stream() yields one sample; call it once per sample")
        p = self._as_prompt(prompt)
        seed = sample_seeds(params)[0]
        async with self._slot():
            agen = self._stream_one(p, params, seed)
            try:
                async for d in agen:
                    yield d
            finally:
                await agen.aclose()

    async def _generate_one(self, prompt: str | list[int], params: SamplingParams, seed: int) -> Completion:
        comp = await collect(self._stream_one(prompt, params, seed))
        if params.logprobs is None:
            comp.logprobs = None
        if not isinstance(prompt, str):
            comp.prompt_tokens = len(prompt)
        return comp

    async def generate(self, prompt: Prompt, params: SamplingParams) -> list[Completion]:
        p = self._as_prompt(prompt)
        out = []
        for seed in sample_seeds(params):
            async with self._slot():
                out.append(await self._generate_one(p, params, seed))
        return out

    @contextlib.asynccontextmanager
    async def _slot(self):
        if self._sem is None:
            yield
        else:
            async with self._sem:
                yield

    async def aclose(self) -> None:
        """Release resources (servers, engines). Safe to call twice."""

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
