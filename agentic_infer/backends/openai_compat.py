"""Any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, OpenAI) through the `openai` client.

URI: `openai://HOST:PORT/v1?model=NAME` with options
`tokenizer=default|PATH` (a local tokenizer: messages are chat-templated here and sent to the
completions API, so partial assistant turns can be continued), `concurrency` (default 16),
`timeout` (seconds, default 120), `retries` (attempts, default 5), `max_wait` (seconds between
attempts, default 30), `https=1`, `api_key_env` (name of the environment variable holding the key,
default OPENAI_API_KEY; "EMPTY" when unset), `stops=client|server`, `flavor=auto|openai|vllm|sglang|llamacpp`,
`token_prompts=auto|on|off` (send token-id prompts as ids; `auto`: yes, except to llama-cpp-python's
server, which takes text only).

Token-in, token-out: a token-id prompt goes to the completions API as ids (the OpenAI API allows a
list of ints), so the server conditions on exactly those ids. Token ids come back where the server
gives them: with vLLM (`flavor=vllm`) the request asks for `return_token_ids` (the ids in
`choice.token_ids`) and, with logprobs, `return_tokens_as_token_ids` (logprob tokens written
`token_id:123`, parsed into `TokenLogprob.token_id`). A server that returns none (llama.cpp's,
OpenAI's) gives `Completion.token_ids=None`, and the agent loop marks such a trajectory inexact. When
ids must be sent as text (`token_prompts=off`), the server re-tokenizes them, so any ids it returns
are dropped.

Sampling options beyond OpenAI's (top_k, repetition penalty) are sent in the server's own dialect:
the flavor is detected once from `GET /models` (`owned_by`) unless given. llama.cpp's server has
non-neutral defaults (top_k 40, min_p 0.05, repeat_penalty 1.1), so for it the neutral values are
always sent; a plain OpenAI server gets only standard fields.

Raw text goes to the completions API; messages go to the chat API unless a local tokenizer is
known. Retries (tenacity): exponential backoff with jitter on 429, 5xx, timeouts and dropped
connections; a `Retry-After` header is honoured; other 4xx are never retried; after the last
attempt a `BackendError` says what failed and how often.

Stop strings: OpenAI-style servers strip the matched stop string and do not say which one matched
(vLLM and SGLang do: use `stops=server` with them). By default (`stops=client`) a request with stop
strings is streamed and the stops are matched here, exactly as for the in-process backends; the
stream is closed the moment one matches, which aborts the request at the server.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

from agentic_infer.backends.base import BaseLLM, sample_seeds
from agentic_infer.errors import BackendError, ConfigError, ContextLengthError
from agentic_infer.types import Completion, Message, SamplingParams, TokenLogprob, TopLogprob

log = logging.getLogger(__name__)


FLAVORS = ("auto", "openai", "vllm", "sglang", "llamacpp")
# `owned_by` in GET /models -> flavor
OWNERS = {"vllm": "vllm", "sglang": "sglang", "me": "llamacpp", "llamacpp": "llamacpp"}
# llama-cpp-python's server (`owned_by: me`) takes text prompts only (llama.cpp's own server takes ids)
TEXT_ONLY_OWNER = "me"


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500 or exc.status_code == 408
    return isinstance(exc, openai.APITimeoutError | openai.APIConnectionError)


def _parse_token(token: str) -> tuple[str, int | None]:
    """(text, id) of a logprob token: vLLM's `return_tokens_as_token_ids` writes `token_id:123` (text unknown)."""
    if token.startswith("token_id:") and token[9:].isdigit():
        return "", int(token[9:])
    return token, None


def _token_logprobs(tokens: Sequence[str], lps: Sequence[float | None], tops: Sequence[dict | None] | None,
                    k: int) -> list[TokenLogprob]:
    out = []
    for i, (tok, lp) in enumerate(zip(tokens, lps)):
        top = (tops[i] if tops and i < len(tops) else None) or {}
        alts = sorted(top.items(), key=lambda kv: -kv[1])[:k]
        text, tid = _parse_token(tok)
        out.append(TokenLogprob(tid, text, float(lp) if lp is not None else math.nan,
                                tuple(_top(t, v) for t, v in alts)))
    return out


def _top(token: str, logprob: float) -> TopLogprob:
    text, tid = _parse_token(token)
    return TopLogprob(text, float(logprob), tid)


def _choice_tokens(choice: Any, k: int | None) -> list[TokenLogprob]:
    """The tokens of one (streamed or whole) completions choice: from its logprobs, with the ids the server
    gave (vLLM: `return_token_ids` puts them in `choice.token_ids`, `return_tokens_as_token_ids` in the
    logprob tokens); [] when the choice carries neither logprobs nor ids."""
    lp = choice.logprobs
    toks = _token_logprobs(lp.tokens or [], lp.token_logprobs or [], lp.top_logprobs, k or 0) \
        if lp is not None and lp.tokens else []
    ids = getattr(choice, "token_ids", None)
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        return toks
    if toks and len(toks) == len(ids):
        return [replace(t, token_id=i) for t, i in zip(toks, ids)]
    return [TokenLogprob(i, "", math.nan) for i in ids]


def _chat_logprobs(content: Sequence[Any] | None) -> list[TokenLogprob]:
    out = []
    for item in content or ():
        out.append(TokenLogprob(None, item.token, float(item.logprob),
                                tuple(TopLogprob(t.token, float(t.logprob)) for t in (item.top_logprobs or ()))))
    return out


class OpenAICompatLLM(BaseLLM):
    """Client of an OpenAI-compatible server."""

    name = "openai"

    def __init__(self, base_url: str, model: str, *, tokenizer: str | None = None, concurrency: int = 16,
                 timeout: float = 120.0, retries: int = 5, max_wait: float = 30.0, api_key: str | None = None,
                 stops: str = "client", flavor: str = "auto", token_prompts: str = "auto"):
        super().__init__()
        import openai

        if concurrency < 1:
            raise ConfigError(f"concurrency={concurrency}: must be >= 1")
        if retries < 1:
            raise ConfigError(f"retries={retries}: must be >= 1 (1 = a single attempt, no retry)")
        if stops not in ("client", "server"):
            raise ConfigError(f"stops={stops!r}: must be 'client' or 'server'")
        if flavor not in FLAVORS:
            raise ConfigError(f"flavor={flavor!r}: must be one of {FLAVORS}")
        if token_prompts not in ("auto", "on", "off"):
            raise ConfigError(f"token_prompts={token_prompts!r}: must be 'auto', 'on' or 'off'")
        self.flavor = flavor
        self.token_prompts = token_prompts
        self.base_url = base_url
        self.model = model
        self.retries = retries
        self.max_wait = max_wait
        self.stops = stops
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "EMPTY", max_retries=0,
            # openai.Timeout: the type of the HTTP library this openai release uses (httpx before 3.0, httpx2 after)
            timeout=openai.Timeout(timeout, connect=min(timeout, 10.0)),
        )
        self._limit = asyncio.Semaphore(concurrency)
        self._tok = None
        if tokenizer is not None:
            from agentic_infer.backends.tokenizer import load_tokenizer

            self._tok = load_tokenizer(tokenizer)

    @property
    def tokenizer(self) -> Any:
        if self._tok is None:
            raise ConfigError(f"openai backend for model {self.model!r} has no local tokenizer; add "
                              "?tokenizer=default|PATH to the URI")
        return self._tok

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return self.tokenizer.template.render(messages, add_generation_prompt=add_generation_prompt)

    # -- requests with retries ----------------------------------------------------------------------
    async def _request(self, make: Any, *, limited: bool = True) -> Any:
        """Call `make()` under the concurrency limit with retries; map failures to BackendError.

        `limited=False` when the caller already holds a slot of the limit (a stream holds one until it ends)."""
        import openai
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

        jitter = wait_exponential_jitter(multiplier=0.25, max=self.max_wait, jitter=0.25)

        def wait(state: Any) -> float:
            after = _retry_after(state.outcome.exception())
            return min(after, self.max_wait) if after is not None else jitter(state)

        def before_sleep(state: Any) -> None:
            log.warning("openai backend %s: attempt %d failed (%r); retrying", self.base_url,
                        state.attempt_number, state.outcome.exception())

        last: BaseException | None = None
        try:
            async for attempt in AsyncRetrying(stop=stop_after_attempt(self.retries), wait=wait,
                                               retry=retry_if_exception(_retryable), reraise=True,
                                               before_sleep=before_sleep):
                with attempt:
                    if not limited:
                        return await make()
                    async with self._limit:
                        return await make()
        except openai.APIStatusError as e:
            last = e
            body = str(getattr(e, "message", e))
            if e.status_code == 400 and ("context" in body.lower() or "too long" in body.lower()):
                raise ContextLengthError(f"{self.base_url}: {body}", status_code=400) from e
            retryable = _retryable(e)
            raise BackendError(
                f"{self.base_url} (model {self.model!r}) answered HTTP {e.status_code}: {body}"
                + (f" after {self.retries} attempts" if retryable else " (not retried: a client error)"),
                retryable=retryable, status_code=e.status_code) from e
        except (openai.APITimeoutError, openai.APIConnectionError) as e:
            last = e
            raise BackendError(f"{self.base_url} (model {self.model!r}): {type(e).__name__}: {e} after "
                               f"{self.retries} attempts; is the server up and the timeout long enough?",
                               retryable=True) from e
        raise BackendError(f"{self.base_url}: request failed: {last!r}")  # pragma: no cover

    async def _detect_flavor(self) -> str:
        if self.flavor == "auto":
            try:
                models = await self._request(lambda: self._client.models.list())
                owners = {getattr(m, "owned_by", "") for m in models.data}
            except BackendError:
                owners = set()
            self.flavor = next((f for o, f in OWNERS.items() if o in owners), "openai")
            if self.token_prompts == "auto" and TEXT_ONLY_OWNER in owners:
                self.token_prompts = "off"
            log.info("openai backend %s: server flavor %s", self.base_url, self.flavor)
        return self.flavor

    def _wire_prompt(self, prompt: str | list[int]) -> tuple[str | list[int], bool]:
        """The prompt as sent, and whether token ids were turned into text for a server that takes text only
        (it re-tokenizes them, so ids it returns would not be exact: they are dropped)."""
        if isinstance(prompt, str) or self.token_prompts != "off":
            return prompt, False
        return self.tokenizer.decode(prompt), True

    def _body(self, params: SamplingParams, *, n: int, seed: int | None, chat: bool, send_stop: bool) -> dict:
        body: dict[str, Any] = {
            "model": self.model, "max_tokens": params.max_tokens, "temperature": params.temperature,
            "top_p": params.top_p, "n": n,
        }
        if seed is not None:
            body["seed"] = seed
        if send_stop and params.stop:
            body["stop"] = list(params.stop)
        extra: dict[str, Any] = {}
        if self.flavor == "llamacpp":
            extra.update(top_k=params.top_k, min_p=0.0, repeat_penalty=params.repetition_penalty)
        elif self.flavor in ("vllm", "sglang"):
            if params.top_k > 0:
                extra["top_k"] = params.top_k
            if params.repetition_penalty != 1.0:
                extra["repetition_penalty"] = params.repetition_penalty
            if send_stop and params.stop and params.include_stop:
                extra["include_stop_str_in_output" if self.flavor == "vllm" else "no_stop_trim"] = True
            if self.flavor == "vllm" and not chat:  # token ids back (token-in, token-out)
                extra["return_token_ids"] = True
                if params.logprobs is not None:
                    extra["return_tokens_as_token_ids"] = True
        elif params.top_k > 0 or params.repetition_penalty != 1.0:
            log.warning("openai backend %s: a plain OpenAI server takes no top_k / repetition_penalty; ignored "
                        "(set ?flavor=vllm|sglang|llamacpp if the server understands them)", self.base_url)
        if params.logprobs is not None:
            if chat:
                body["logprobs"] = True
                body["top_logprobs"] = params.logprobs
            else:
                body["logprobs"] = params.logprobs
        if extra:
            body["extra_body"] = extra
        return body

    # -- generate -------------------------------------------------------------------------------------
    async def generate(self, prompt: Any, params: SamplingParams) -> list[Completion]:
        await self._detect_flavor()
        if not isinstance(prompt, str) and self._tok is None and _is_messages(prompt):
            return await self._chat(prompt, params)
        p = self._as_prompt(prompt)
        if params.stop and self.stops == "client":
            seeds = sample_seeds(params)
            return list(await asyncio.gather(*(self._generate_one(p, params.replace(n=1), s) for s in seeds)))
        wire, retexted = self._wire_prompt(p)
        resp = await self._request(lambda: self._client.completions.create(
            prompt=wire, **self._body(params, n=params.n, seed=params.seed, chat=False, send_stop=True)))
        out = [self._from_choice(c, params) for c in sorted(resp.choices, key=lambda c: c.index)]
        prompt_tokens = getattr(getattr(resp, "usage", None), "prompt_tokens", None)
        for comp in out:
            comp.prompt_tokens = prompt_tokens
            if retexted:
                comp.token_ids = None
        return out

    def _from_choice(self, choice: Any, params: SamplingParams) -> Completion:
        toks = _choice_tokens(choice, params.logprobs)
        lps = toks if params.logprobs is not None and choice.logprobs is not None else None
        ids = [t.token_id for t in toks] if toks and all(t.token_id is not None for t in toks) else None
        finish = choice.finish_reason if choice.finish_reason in ("stop", "length") else "stop"
        stop_reason = getattr(choice, "stop_reason", None) or getattr(choice, "matched_stop", None)
        if not isinstance(stop_reason, str):
            stop_reason = None
        text = choice.text
        if stop_reason and params.include_stop and not text.endswith(stop_reason):
            text += stop_reason
        return Completion(text=text, token_ids=ids, logprobs=lps, finish_reason=finish, stop_reason=stop_reason)

    async def _chat(self, messages: Sequence[Any], params: SamplingParams) -> list[Completion]:
        msgs = [m.to_dict() if isinstance(m, Message) else dict(m) for m in messages]
        resp = await self._request(lambda: self._client.chat.completions.create(
            messages=msgs, **self._body(params, n=params.n, seed=params.seed, chat=True, send_stop=True)))
        out = []
        for c in sorted(resp.choices, key=lambda c: c.index):
            lps = _chat_logprobs(c.logprobs.content) if (params.logprobs is not None and c.logprobs) else None
            finish = c.finish_reason if c.finish_reason in ("stop", "length") else "stop"
            stop_reason = getattr(c, "stop_reason", None)
            out.append(Completion(text=c.message.content or "", logprobs=lps, finish_reason=finish,
                                  stop_reason=stop_reason if isinstance(stop_reason, str) else None))
        return out

    # -- streaming ------------------------------------------------------------------------------------
    async def _stream_tokens(self, prompt, params, seed, cancelled) -> AsyncIterator[tuple[Any, Any]]:
        await self._detect_flavor()
        prompt, retexted = self._wire_prompt(prompt if isinstance(prompt, str) else list(prompt))
        body = self._body(params, n=1, seed=seed, chat=False, send_stop=False)
        async with self._limit:  # a stream holds its slot until it ends, not only until its headers arrive
            chunks = self._stream_chunks(prompt, body, params, retexted, cancelled)
            try:
                async for item in chunks:
                    yield item
            finally:  # closes the HTTP stream (the server aborts it) before the slot is released
                await chunks.aclose()

    async def _stream_chunks(self, prompt, body, params, retexted, cancelled) -> AsyncIterator[tuple[Any, Any]]:
        stream = await self._request(lambda: self._client.completions.create(prompt=prompt, stream=True, **body),
                                     limited=False)
        try:
            async for chunk in stream:
                if cancelled.is_set():
                    return
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                toks = _choice_tokens(choice, params.logprobs)
                if retexted:  # the server re-tokenized our ids: what it returns is not exact
                    toks = [replace(t, token_id=None) for t in toks]
                if toks and all(t.token_id is not None for t in toks):
                    # one delta per token, the chunk's text with its last token: a stop string matched in
                    # the chunk then keeps every id the server generated (the loop decodes them)
                    for tok in toks[:-1]:
                        yield "", tok
                    yield choice.text or "", toks[-1]
                elif toks:
                    for tok in toks:  # one delta per token; the chunk's text is the tokens' text
                        yield tok.token, tok
                elif choice.text:
                    yield choice.text, None
                if choice.finish_reason is not None:
                    return
        except Exception as e:
            import openai

            if isinstance(e, openai.APIError | OSError):
                raise BackendError(f"{self.base_url}: stream broke: {e!r}", retryable=True) from e
            raise
        finally:
            await stream.close()

    async def aclose(self) -> None:
        await self._client.close()


def _is_messages(prompt: Any) -> bool:
    items = list(prompt)
    return bool(items) and all(isinstance(m, Message) or (isinstance(m, dict) and "role" in m) for m in items)

