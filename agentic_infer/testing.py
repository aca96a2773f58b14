"""Test doubles that users need too: a scripted LLM backend and a scripted environment (`CounterEnv`).

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
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from agentic_infer.backends.base import BaseLLM, tokenize
from agentic_infer.backends.chat_template import CHATML, ChatTemplate
from agentic_infer.envs.base import CallResult, Check, Env, EnvVerdict, Refusal, function_schema
from agentic_infer.envs.registry import EnvSpec
from agentic_infer.errors import BackendError, ConfigError
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


# ------------------------------------------------------------------------------------------ a scripted env

class CounterEnv(Env):
    """A tiny scripted environment (a counter to bring to a target), for engine, eval and RL tests.

    Task row: `{"id", "target": int, "start": int = 0, "replies": [str, ...] = [], "stop_tool": bool = True}`.
    Tools: `add {n: int}` (refused unless -10 <= n <= 10; per-step reward 1.0 when the value got closer to the
    target, else 0.0), `get {}` (the value), and, unless `stop_tool` is false, `stop {}` (terminal: `done`).
    `reply(message)` returns the row's `replies` one by one, then None (the episode ends). State
    `{"value": v}`. `verify(response)`: checks "value" (value == target) and "reported" (str(target) appears
    in the response); reward = the share of checks passed.

        register_env(counter_env_spec("counter-test"))   # the tests register it under their own name
        make_env("counter-test", {"id": "c1", "target": 3})
    """

    name = "counter"

    def __init__(self, task_row: Mapping[str, Any], **options: Any):
        super().__init__()
        if options:
            raise ConfigError(f"CounterEnv takes no options, got {sorted(options)}")
        if not isinstance(task_row.get("target"), int):
            raise ConfigError(f"CounterEnv: task row {dict(task_row)!r} needs an int 'target'")
        self.target = int(task_row["target"])
        self.value = int(task_row.get("start", 0))
        self.replies = [str(r) for r in task_row.get("replies", ())]
        self.replied = 0
        self.stop_tool = bool(task_row.get("stop_tool", True))

    def tools(self) -> list[dict[str, Any]]:
        tools = [function_schema("add", "Add n (an integer from -10 to 10) to the counter.",
                                 {"n": {"type": "integer", "description": "the amount to add"}}, ["n"]),
                 function_schema("get", "Read the counter.", {})]
        if self.stop_tool:
            tools.append(function_schema("stop", "End the session (terminal).", {}))
        return tools

    def instructions(self) -> str:
        return "You operate a counter. Bring it to the target, then tell the user its value."

    def first_observation(self) -> str:
        return f"Please bring the counter from {self.value} to {self.target}."

    def execute(self, tool: str, arguments: dict[str, Any]) -> CallResult:
        if tool == "get":
            return CallResult(str(self.value))
        if tool == "stop":
            self.done = True
            return CallResult("Session ended.")
        n = arguments.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or not -10 <= n <= 10:
            raise Refusal(f"n must be an integer from -10 to 10, got {n!r}")
        before = abs(self.target - self.value)
        self.value += n
        return CallResult(f"The counter is now {self.value}.", info={"delta": n},
                          reward=1.0 if abs(self.target - self.value) < before else 0.0)

    async def reply(self, message: str) -> str | None:
        if self.replied >= len(self.replies):
            return None
        self.replied += 1
        return self.replies[self.replied - 1]

    def state(self) -> dict[str, Any]:
        return {"value": self.value}

    def _set_mutable(self, value: Any) -> None:
        self.value = int(value["value"])

    def _extra(self) -> dict[str, Any]:
        return {"replied": self.replied}

    def _set_extra(self, extra: Mapping[str, Any]) -> None:
        self.replied = int(extra.get("replied", 0))

    def verify(self, response: str) -> EnvVerdict:
        at_target, reported = self.value == self.target, str(self.target) in (response or "")
        checks = [Check("value", at_target, "" if at_target else f"value {self.value} != target {self.target}"),
                  Check("reported", reported, "" if reported else f"{self.target} is not in the response")]
        return EnvVerdict(sum(c.passed for c in checks) / len(checks), checks, info={"value": self.value})


def counter_env_spec(name: str = "counter-test", *, default_files: tuple[str, ...] = ()) -> EnvSpec:
    """An `EnvSpec` for `CounterEnv` under `name` (register it with `register_env` in a test)."""
    return EnvSpec(name=name, description="a counter to bring to a target (test double)", make=CounterEnv,
                   tools=("add", "get", "stop"), task_format="{id, target: int, start?: int, replies?: [str]}",
                   reward="share of the checks value == target and target stated in the response",
                   default_files=default_files)
