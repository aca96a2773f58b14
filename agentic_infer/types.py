"""Core records that cross every stage: sampling parameters, completions, messages, trajectories.

No heavy imports here (numpy at most): engines, synth, train and eval all import this module.
Every record validates at construction and raises `ConfigError` naming the parameter, the value
and the fix. `Trajectory` round-trips losslessly through JSON (`to_json` / `from_json`) and a list
of them converts to a `datasets.Dataset` (`trajectories_to_dataset`).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from agentic_infer.errors import ConfigError

FinishReason = Literal["stop", "length", "abort"]
SegmentKind = Literal["prompt", "model", "observation"]
SEGMENT_KINDS = ("prompt", "model", "observation")
FINISH_REASONS = ("stop", "length", "abort")
MAX_TOP_LOGPROBS = 20


def _fail(owner: str, name: str, value: Any, rule: str, fix: str) -> None:
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
            _fail(own, "max_tokens", self.max_tokens, "must be an integer >= 1", "ask for at least one token")
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature)) or self.temperature < 0:
            _fail(own, "temperature", self.temperature, "must be a finite number >= 0", "use 0 for greedy decoding")
        if not (0 < self.top_p <= 1):
            _fail(own, "top_p", self.top_p, "must be in (0, 1]", "use 1.0 to disable nucleus sampling")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            _fail(own, "top_k", self.top_k, "must be an integer >= 0", "use 0 to disable top-k")
        if not isinstance(self.n, int) or self.n < 1:
            _fail(own, "n", self.n, "must be an integer >= 1", "ask for at least one sample")
        if any(not isinstance(s, str) or not s for s in self.stop):
            _fail(own, "stop", self.stop, "every stop string must be a non-empty string", "drop empty entries")
        if self.logprobs is not None and (
            not isinstance(self.logprobs, int) or not 0 <= self.logprobs <= MAX_TOP_LOGPROBS
        ):
            _fail(own, "logprobs", self.logprobs, f"must be None or an integer in 0..{MAX_TOP_LOGPROBS}",
                  "pass the number of top alternatives wanted per token")
        if self.seed is not None and not isinstance(self.seed, int):
            _fail(own, "seed", self.seed, "must be an integer or None", "pass e.g. seed=0")
        if not self.repetition_penalty > 0:
            _fail(own, "repetition_penalty", self.repetition_penalty, "must be > 0", "use 1.0 for no penalty")

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


def _logprobs_to_list(lps: Sequence[TokenLogprob] | None) -> list[dict[str, Any]] | None:
    return None if lps is None else [lp.to_dict() for lp in lps]


def _logprobs_from_list(items: Iterable[dict[str, Any]] | None) -> list[TokenLogprob] | None:
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
            _fail("Completion", "finish_reason", self.finish_reason, f"must be one of {FINISH_REASONS}",
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
            "logprobs": _logprobs_to_list(self.logprobs),
            "finish_reason": self.finish_reason,
            "stop_reason": self.stop_reason,
            "prompt_tokens": self.prompt_tokens,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Completion:
        return cls(
            text=d["text"],
            token_ids=d.get("token_ids"),
            logprobs=_logprobs_from_list(d.get("logprobs")),
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
            _fail("Message", "role", self.role, "must be system, user, assistant or tool", "fix the role name")
        if not isinstance(self.content, str):
            _fail("Message", "content", self.content, "must be a string", "join parts into one string")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        return cls(**{k: d[k] for k in ("role", "content", "name", "tool_calls", "tool_call_id") if k in d})


@dataclass
class Segment:
    """A contiguous piece of a rollout.

    kind "prompt" (system/user text), "model" (sampled by the policy: trainable) or "observation"
    (tool output, retrieved documents, Reason-in-Documents summaries, forced messages: never
    trainable). Token ids and logprobs are kept when the backend gave them; `entropies` may hold a
    per-token entropy (ARPO/AEPO).
    """

    kind: str
    text: str
    token_ids: list[int] | None = None
    logprobs: list[TokenLogprob] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in SEGMENT_KINDS:
            _fail("Segment", "kind", self.kind, f"must be one of {SEGMENT_KINDS}", "label what produced the text")
        if self.logprobs is not None and self.token_ids is not None and len(self.logprobs) != len(self.token_ids):
            _fail("Segment", "logprobs", f"<{len(self.logprobs)} entries>",
                  f"must have one entry per token id ({len(self.token_ids)})", "pass matching lists")

    @property
    def trainable(self) -> bool:
        return self.kind == "model"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "token_ids": self.token_ids,
            "logprobs": _logprobs_to_list(self.logprobs),
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Segment:
        return cls(
            kind=d["kind"],
            text=d["text"],
            token_ids=d.get("token_ids"),
            logprobs=_logprobs_from_list(d.get("logprobs")),
            metadata=dict(d.get("metadata") or {}),
        )


@dataclass
class Step:
    """One action of an agent: what it did, with what arguments, and what came back.

    `state` is a hashable description of the environment state before the action (GiGPO's anchor);
    `reward` an optional per-step reward.
    """

    action: str
    arguments: dict[str, Any] = field(default_factory=dict)
    observation: str | None = None
    error: str | None = None
    state: str | None = None
    reward: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Step:
        return cls(**d)


@dataclass
class Usage:
    """What a rollout spent."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    wall_s: float = 0.0

    def add(self, other: Usage) -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)


@dataclass
class Trajectory:
    """The record of one rollout; every stage reads and writes this.

    Branch structure (ARPO/AEPO): `parent_id` and `branch_token` say which trajectory this forked
    from and at which token of the parent's concatenated token ids.
    """

    segments: list[Segment] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    answer: str | None = None
    rewards: dict[str, float] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    engine: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    example: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    parent_id: str | None = None
    branch_token: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    # -- building -------------------------------------------------------------------------------
    def add(self, kind: str, text: str, *, token_ids: list[int] | None = None,
            logprobs: list[TokenLogprob] | None = None, **metadata: Any) -> Segment:
        seg = Segment(kind, text, token_ids, logprobs, dict(metadata))
        self.segments.append(seg)
        return seg

    # -- views ----------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segments)

    @property
    def completion_text(self) -> str:
        """Everything after the prompt segments (what the agent wrote and was shown)."""
        return "".join(s.text for s in self.segments if s.kind != "prompt")

    def token_ids(self) -> list[int]:
        ids: list[int] = []
        for i, seg in enumerate(self.segments):
            if seg.token_ids is None:
                raise ConfigError(
                    f"Trajectory.segments[{i}] (kind={seg.kind!r}) has token_ids=None: a token-level view "
                    "needs ids for every segment; call trajectory.tokenize(tokenizer) first"
                )
            ids.extend(seg.token_ids)
        return ids

    def loss_mask(self) -> list[int]:
        """1 for every token of a trainable ("model") segment, 0 for prompt and observation tokens."""
        self.token_ids()  # validates that every segment has ids
        return [int(s.trainable) for s in self.segments for _ in s.token_ids or ()]

    def tokenize(self, tokenizer: Any) -> Trajectory:
        """Fill in missing token ids with `tokenizer.encode(text)` (segment by segment); returns self."""
        for seg in self.segments:
            if seg.token_ids is None:
                seg.token_ids = list(tokenizer.encode(seg.text))
        return self

    # -- serialisation ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "engine": self.engine,
            "config": self.config,
            "example": self.example,
            "segments": [s.to_dict() for s in self.segments],
            "steps": [s.to_dict() for s in self.steps],
            "answer": self.answer,
            "rewards": self.rewards,
            "usage": asdict(self.usage),
            "finish_reason": self.finish_reason,
            "parent_id": self.parent_id,
            "branch_token": self.branch_token,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trajectory:
        return cls(
            id=d["id"],
            engine=d.get("engine"),
            config=dict(d.get("config") or {}),
            example=dict(d.get("example") or {}),
            segments=[Segment.from_dict(s) for s in d.get("segments", [])],
            steps=[Step.from_dict(s) for s in d.get("steps", [])],
            answer=d.get("answer"),
            rewards=dict(d.get("rewards") or {}),
            usage=Usage(**(d.get("usage") or {})),
            finish_reason=d.get("finish_reason"),
            parent_id=d.get("parent_id"),
            branch_token=d.get("branch_token"),
            metadata=dict(d.get("metadata") or {}),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Trajectory:
        return cls.from_dict(json.loads(text))


def trajectories_to_dataset(trajectories: Iterable[Trajectory]) -> Any:
    """A `datasets.Dataset` with one row per trajectory.

    Nested records (segments, steps, usage, config, ...) are stored as JSON strings so that any
    trajectory fits one Arrow schema; `Trajectory.from_dict(json.loads(...))` style decoding is
    done by `dataset_to_trajectories`. Flat columns `id`, `engine`, `answer`, `finish_reason`,
    `text` make filtering easy without decoding.
    """
    import datasets

    rows: dict[str, list[Any]] = {k: [] for k in ("id", "engine", "answer", "finish_reason", "text", "record")}
    for t in trajectories:
        rows["id"].append(t.id)
        rows["engine"].append(t.engine)
        rows["answer"].append(t.answer)
        rows["finish_reason"].append(t.finish_reason)
        rows["text"].append(t.text)
        rows["record"].append(t.to_json())
    return datasets.Dataset.from_dict(rows)


def dataset_to_trajectories(dataset: Any) -> list[Trajectory]:
    """The inverse of `trajectories_to_dataset`."""
    return [Trajectory.from_json(r) for r in dataset["record"]]
