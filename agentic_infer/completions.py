"""What a backend call takes and returns: `SamplingParams`, chat `Message`s, `Completion`s with per-token logprobs.

    params = SamplingParams(max_tokens=256, temperature=0.7, logprobs=5)   # validated here
    [comp] = await llm.generate(prompt, params)
    comp.text, comp.token_ids, comp.logprobs[0].top, comp.finish_reason     # one shape for every backend

No heavy imports. Every record validates at construction and raises `ConfigError` naming the parameter,
the value and the fix (`invalid`). `agentic_infer.types` re-exports all of these, next to the trajectory
records they end up in. Not covered: trajectories and rollouts (`agentic_infer.types`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agentic_infer.errors import ConfigError

FINISH_REASONS = ("stop", "length", "abort")
MAX_TOP_LOGPROBS = 20


def invalid(owner: str, name: str, value: Any, rule: str, fix: str) -> None:
    """Raise the ConfigError of a bad field: `Owner.name=value: rule; fix`."""
    raise ConfigError(f"{owner}.{name}={value!r}: {rule}; {fix}")


@dataclass(frozen=True)
class SamplingParams:
    """How to sample, with OpenAI/vLLM names.

    `logprobs` is the number of top alternatives returned per generated token (0 = only the
    sampled token's logprob, None = no logprobs). `include_stop` keeps the matched stop string at
    the end of the text (Search-o1 needs the closing tag). `top_k=0` disables top-k.
    """

    max_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    n: int = 1
    stop: tuple[str, ...] = ()
    seed: int | None = None
    logprobs: int | None = None
    repetition_penalty: float = 1.0
    include_stop: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))
        own = "SamplingParams"
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            invalid(own, "max_tokens", self.max_tokens, "must be an integer >= 1", "ask for at least one token")
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature)) or self.temperature < 0:
            invalid(own, "temperature", self.temperature, "must be a finite number >= 0", "use 0 for greedy decoding")
        if not (0 < self.top_p <= 1):
            invalid(own, "top_p", self.top_p, "must be in (0, 1]", "use 1.0 to disable nucleus sampling")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            invalid(own, "top_k", self.top_k, "must be an integer >= 0", "use 0 to disable top-k")
        if not isinstance(self.n, int) or self.n < 1:
            invalid(own, "n", self.n, "must be an integer >= 1", "ask for at least one sample")
        if any(not isinstance(s, str) or not s for s in self.stop):
            invalid(own, "stop", self.stop, "every stop string must be a non-empty string", "drop empty entries")
        if self.logprobs is not None and (
            not isinstance(self.logprobs, int) or not 0 <= self.logprobs <= MAX_TOP_LOGPROBS
        ):
            invalid(own, "logprobs", self.logprobs, f"must be None or an integer in 0..{MAX_TOP_LOGPROBS}",
                  "pass the number of top alternatives wanted per token")
        if self.seed is not None and not isinstance(self.seed, int):
            invalid(own, "seed", self.seed, "must be an integer or None", "pass e.g. seed=0")
        if not self.repetition_penalty > 0:
            invalid(own, "repetition_penalty", self.repetition_penalty, "must be > 0", "use 1.0 for no penalty")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def replace(self, **changes: Any) -> SamplingParams:
        """A copy with some fields changed (validated again)."""
        return SamplingParams(**{**asdict(self), **changes})

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d


@dataclass(frozen=True)
class TopLogprob:
    """One candidate at one position: its text, logprob and (when known) token id."""

    token: str
    logprob: float
    token_id: int | None = None


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token: id (None when the backend gives only text), text, logprob, top-k alternatives."""

    token_id: int | None
    token: str
    logprob: float
    top: tuple[TopLogprob, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "token_id": self.token_id,
            "token": self.token,
            "logprob": self.logprob,
            "top": [{"token": t.token, "logprob": t.logprob, "token_id": t.token_id} for t in self.top],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TokenLogprob:
        return cls(
            token_id=d.get("token_id"),
            token=d["token"],
            logprob=float(d["logprob"]),
            top=tuple(TopLogprob(t["token"], float(t["logprob"]), t.get("token_id")) for t in d.get("top", ())),
        )


def logprobs_to_list(lps: Sequence[TokenLogprob] | None) -> list[dict[str, Any]] | None:
    return None if lps is None else [lp.to_dict() for lp in lps]


def logprobs_from_list(items: Iterable[dict[str, Any]] | None) -> list[TokenLogprob] | None:
    return None if items is None else [TokenLogprob.from_dict(x) for x in items]


@dataclass
class Completion:
    """One sampled continuation. Every backend returns exactly this shape.

    `finish_reason`: "stop" (EOS or a stop string), "length" (max_tokens) or "abort" (cancelled).
    `stop_reason`: the stop string that matched, None for EOS or any other finish.
    """

    text: str
    token_ids: list[int] | None = None
    logprobs: list[TokenLogprob] | None = None
    finish_reason: str = "stop"
    stop_reason: str | None = None
    prompt_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.finish_reason not in FINISH_REASONS:
            invalid("Completion", "finish_reason", self.finish_reason, f"must be one of {FINISH_REASONS}",
                  "map the backend's reason onto these")

    @property
    def num_tokens(self) -> int:
        if self.token_ids is not None:
            return len(self.token_ids)
        if self.logprobs is not None:
            return len(self.logprobs)
        return 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "token_ids": self.token_ids,
            "logprobs": logprobs_to_list(self.logprobs),
            "finish_reason": self.finish_reason,
            "stop_reason": self.stop_reason,
            "prompt_tokens": self.prompt_tokens,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Completion:
        return cls(
            text=d["text"],
            token_ids=d.get("token_ids"),
            logprobs=logprobs_from_list(d.get("logprobs")),
            finish_reason=d.get("finish_reason", "stop"),
            stop_reason=d.get("stop_reason"),
            prompt_tokens=d.get("prompt_tokens"),
        )


@dataclass
class Message:
    """A chat message (OpenAI shape). `tool_calls` holds native tool calls as OpenAI dicts."""

    role: str
    content: str = ""
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ("system", "user", "assistant", "tool"):
            invalid("Message", "role", self.role, "must be system, user, assistant or tool", "fix the role name")
        if not isinstance(self.content, str):
            invalid("Message", "content", self.content, "must be a string", "join parts into one string")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        return cls(**{k: d[k] for k in ("role", "content", "name", "tool_calls", "tool_call_id") if k in d})


__all__ = ["FINISH_REASONS", "MAX_TOP_LOGPROBS", "Completion", "Message", "SamplingParams", "TokenLogprob",
           "TopLogprob", "invalid", "logprobs_from_list", "logprobs_to_list"]
