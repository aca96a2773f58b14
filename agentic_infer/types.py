"""Core records that cross every stage: sampling parameters, completions, messages, trajectories.

No heavy imports here (numpy at most): engines, synth, train and eval all import this module.
Every record validates at construction and raises `ConfigError` naming the parameter, the value
and the fix. `Trajectory` and `Rollout` round-trip losslessly through JSON (`to_json` / `from_json`)
and a list of trajectories converts to a `datasets.Dataset` (`trajectories_to_dataset`).

One vocabulary across engines (validated):
- `Segment.kind`: "prompt" (system/user text and forced text: never trained), "model" (sampled by the
  policy: trainable), "observation" (tool output, retrieved documents, Reason-in-Documents summaries,
  limit and repeat messages: never trained).
- `Trajectory.finish_reason`: "answer" (the model stopped by itself), "length" (a generation hit its
  token cap), "max_turns", "max_tokens" (the episode's total budget), "context_length", "error" (backend
  failure after retries; the message is in `metadata["error"]`), "abort" (stopped from outside, e.g. a
  DeepConf trace below its confidence threshold), "budget" (a search's budget ran out), None (not finished).

Trainer views (`Trajectory.trl_rollout()`, `sft_row()`, `chat_messages()`) read token ids only when
`token_exact` is True (the ids are exactly what the model conditioned on and sampled); a trajectory
whose ids were re-encoded from text says so, and the views refuse it unless `allow_inexact=True`.
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
TrajectoryFinish = Literal["answer", "length", "max_turns", "max_tokens", "context_length", "error", "abort", "budget"]
SEGMENT_KINDS = ("prompt", "model", "observation")
FINISH_REASONS = ("stop", "length", "abort")
TRAJECTORY_FINISH_REASONS = ("answer", "length", "max_turns", "max_tokens", "context_length", "error", "abort",
                             "budget")
IGNORE_INDEX = -100  # the label of a token that is not trained (PyTorch's cross-entropy ignore_index)
MAX_TOP_LOGPROBS = 20


def trajectory_finish(completion_finish: str) -> TrajectoryFinish:
    """A one-generation trajectory's finish from its completion's: "stop" (EOS or a stop string) -> "answer",
    "length" -> "length", "abort" -> "abort"."""
    if completion_finish not in FINISH_REASONS:
        _fail("Completion", "finish_reason", completion_finish, f"must be one of {FINISH_REASONS}",
              "map the backend's reason onto these")
    return "answer" if completion_finish == "stop" else completion_finish  # type: ignore[return-value]


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
    trainable). Token ids and logprobs are kept when the backend gave them; `entropies()` derives a
    per-token entropy from the top-k logprobs (ARPO/AEPO).
    """

    kind: SegmentKind
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

    def entropies(self) -> list[float] | None:
        """Per-token entropy over each token's top-k alternatives, renormalised to sum to 1 (ARPO's measure).

        None when the backend returned no top-k alternatives for this segment (ask for `logprobs=k`, k >= 2).
        """
        if not self.logprobs or any(not lp.top for lp in self.logprobs):
            return None
        out = []
        for lp in self.logprobs:
            vals = [t.logprob for t in lp.top]
            m = max(vals)
            ps = [math.exp(v - m) for v in vals]
            z = sum(ps)
            out.append(-sum(p / z * math.log(p / z) for p in ps if p > 0))
        return out

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
    `reward` an optional per-step reward; `segment` the index (in `Trajectory.segments`) of the model
    segment that wrote the action, so `Trajectory.token_span(step.segment)` gives its tokens.
    """

    action: str
    arguments: dict[str, Any] = field(default_factory=dict)
    observation: str | None = None
    error: str | None = None
    state: str | None = None
    reward: float | None = None
    segment: int | None = None
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

    `group_id` is the group this trajectory belongs to (the example's id: GRPO's group, DeepConf's
    traces, a tree search's calls). `token_exact` is True when every segment's ids are exactly what the
    model conditioned on and sampled (token-in/token-out); False when some were encoded from text after
    the fact. Branch structure (ARPO/AEPO): `parent_id` and `branch_token` say which trajectory this
    forked from and at which token of the parent's concatenated token ids.
    """

    segments: list[Segment] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    answer: str | None = None
    rewards: dict[str, float] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    finish_reason: TrajectoryFinish | None = None
    engine: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    example: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    group_id: str | None = None
    token_exact: bool = False
    parent_id: str | None = None
    branch_token: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.finish_reason is not None and self.finish_reason not in TRAJECTORY_FINISH_REASONS:
            _fail("Trajectory", "finish_reason", self.finish_reason, f"must be one of {TRAJECTORY_FINISH_REASONS}",
                  "map the engine's reason onto these (details go in metadata)")

    # -- building -------------------------------------------------------------------------------
    def add(self, kind: SegmentKind, text: str, *, token_ids: list[int] | None = None,
            logprobs: list[TokenLogprob] | None = None, **metadata: Any) -> Segment:
        seg = Segment(kind, text, token_ids, logprobs, dict(metadata))
        self.segments.append(seg)
        return seg

    def finish(self, reason: TrajectoryFinish) -> None:
        """Set `finish_reason` (validated against the one vocabulary)."""
        if reason not in TRAJECTORY_FINISH_REASONS:
            _fail("Trajectory", "finish_reason", reason, f"must be one of {TRAJECTORY_FINISH_REASONS}",
                  "map the engine's reason onto these (details go in metadata)")
        self.finish_reason = reason

    # -- views ----------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segments)

    @property
    def completion_text(self) -> str:
        """Everything after the leading prompt segments (what the agent wrote and was shown)."""
        return "".join(s.text for s in self.segments[self._prompt_end():])

    def _prompt_end(self) -> int:
        """Index of the first segment after the leading prompt segments."""
        i = 0
        while i < len(self.segments) and self.segments[i].kind == "prompt":
            i += 1
        return i

    def token_ids(self) -> list[int]:
        ids: list[int] = []
        for i, seg in enumerate(self.segments):
            if seg.token_ids is None:
                raise ConfigError(
                    f"Trajectory.segments[{i}] (kind={seg.kind!r}) has token_ids=None: a token-level view "
                    "needs ids for every segment; call trajectory.tokenize(tokenizer) first (marks it inexact)"
                )
            ids.extend(seg.token_ids)
        return ids

    def loss_mask(self) -> list[int]:
        """1 for every token of a trainable ("model") segment, 0 for prompt and observation tokens."""
        self.token_ids()  # validates that every segment has ids
        return [int(s.trainable) for s in self.segments for _ in s.token_ids or ()]

    def token_span(self, segment: int) -> tuple[int, int]:
        """`[start, end)` of segment `segment`'s tokens in `token_ids()` (e.g. a step's action tokens)."""
        if not 0 <= segment < len(self.segments):
            raise ConfigError(f"segment={segment}: the trajectory has {len(self.segments)} segments")
        self.token_ids()
        start = sum(len(s.token_ids or ()) for s in self.segments[:segment])
        return start, start + len(self.segments[segment].token_ids or ())

    def tokenize(self, tokenizer: Any) -> Trajectory:
        """Fill in missing token ids with `tokenizer.encode(text)` (segment by segment); returns self.

        Ids made this way are not what the model saw (BPE merges across segment boundaries), so a
        trajectory that needed it is marked `token_exact=False`.
        """
        for i, seg in enumerate(self.segments):
            if seg.token_ids is None:  # the first segment starts the sequence (BOS policy); later ones add nothing
                try:
                    seg.token_ids = list(tokenizer.encode(seg.text, add_special=i == 0))
                except TypeError:  # a tokenizer that adds nothing takes no such flag
                    seg.token_ids = list(tokenizer.encode(seg.text))
                self.token_exact = False
        return self

    def _require_exact(self, view: str, allow_inexact: bool) -> None:
        if not self.token_exact and not allow_inexact:
            raise ConfigError(
                f"Trajectory {self.id} (engine {self.engine!r}) has token_exact=False: its ids were encoded from "
                f"text, not taken from the model, so {view} would train on sequences the policy never saw; "
                "regenerate it with a backend that returns token ids, or pass allow_inexact=True")

    def trl_rollout(self, *, allow_inexact: bool = False) -> dict[str, list]:
        """TRL's `rollout_func` shape for this trajectory.

        `prompt_ids` (the leading prompt segments), `completion_ids` (everything after), `logprobs`
        aligned with `completion_ids` (the sampling logprob of model tokens, 0.0 on observation tokens)
        and `env_mask` (1 = sampled by the policy, 0 = observation: not trained).
        """
        self._require_exact("trl_rollout()", allow_inexact)
        cut = self._prompt_end()
        prompt_ids = [i for s in self.segments[:cut] for i in _ids(s)]
        completion, logprobs, mask = [], [], []
        for seg in self.segments[cut:]:
            ids = _ids(seg)
            completion.extend(ids)
            mask.extend([int(seg.trainable)] * len(ids))
            if seg.trainable and seg.logprobs is not None:
                logprobs.extend(lp.logprob for lp in seg.logprobs)
            else:
                logprobs.extend([0.0] * len(ids))
        return {"prompt_ids": prompt_ids, "completion_ids": completion, "logprobs": logprobs, "env_mask": mask}

    def sft_row(self, *, max_length: int | None = None, allow_inexact: bool = False) -> dict[str, list[int]]:
        """A pre-tokenized SFT row: `input_ids`, `labels` (IGNORE_INDEX on every non-trainable token),
        `attention_mask`; cut to `max_length` tokens (labels cut with the ids)."""
        self._require_exact("sft_row()", allow_inexact)
        ids = self.token_ids()
        labels = [i if m else IGNORE_INDEX for i, m in zip(ids, self.loss_mask())]
        if max_length is not None:
            ids, labels = ids[:max_length], labels[:max_length]
        return {"input_ids": ids, "labels": labels, "attention_mask": [1] * len(ids)}

    def chat_messages(self) -> list[dict[str, Any]]:
        """OpenAI-style messages: the prompt's messages, then assistant turns with a `tool` message per observation.

        An agent that splices observations into one assistant turn (Search-o1, TIR) becomes alternating
        assistant / tool messages; forced assistant text (an assistant prefix) opens the first assistant
        message. The prompt's messages come from the first prompt segment's `metadata["messages"]`
        (engines record them), else one user message with the prompt text.
        """
        head = self.segments[:self._prompt_end()]
        first = head[0].metadata.get("messages") if head else None
        messages: list[dict[str, Any]] = [dict(m) for m in first] if first else (
            [{"role": "user", "content": head[0].text}] if head else [])
        forced = "".join(s.text for s in head[1:] if s.metadata.get("forced"))
        assistant = forced
        for seg in self.segments[len(head):]:
            if seg.kind == "observation":
                if assistant:
                    messages.append({"role": "assistant", "content": assistant})
                    assistant = ""
                messages.append({"role": "tool", "content": seg.text})
            else:
                assistant += seg.text
        if assistant:
            messages.append({"role": "assistant", "content": assistant})
        return messages

    # -- serialisation ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "group_id": self.group_id,
            "engine": self.engine,
            "config": self.config,
            "example": self.example,
            "segments": [s.to_dict() for s in self.segments],
            "steps": [s.to_dict() for s in self.steps],
            "answer": self.answer,
            "rewards": self.rewards,
            "usage": asdict(self.usage),
            "finish_reason": self.finish_reason,
            "token_exact": self.token_exact,
            "parent_id": self.parent_id,
            "branch_token": self.branch_token,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trajectory:
        return cls(
            id=d["id"],
            group_id=d.get("group_id"),
            engine=d.get("engine"),
            config=dict(d.get("config") or {}),
            example=dict(d.get("example") or {}),
            segments=[Segment.from_dict(s) for s in d.get("segments", [])],
            steps=[Step.from_dict(s) for s in d.get("steps", [])],
            answer=d.get("answer"),
            rewards=dict(d.get("rewards") or {}),
            usage=Usage(**(d.get("usage") or {})),
            finish_reason=d.get("finish_reason"),
            token_exact=bool(d.get("token_exact", False)),
            parent_id=d.get("parent_id"),
            branch_token=d.get("branch_token"),
            metadata=dict(d.get("metadata") or {}),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Trajectory:
        return cls.from_dict(json.loads(text))


def _ids(seg: Segment) -> list[int]:
    if seg.token_ids is None:
        raise ConfigError(f"a {seg.kind} segment has token_ids=None; call trajectory.tokenize(tokenizer) first")
    return seg.token_ids


@dataclass
class Rollout:
    """The outcome of one engine on one example: the group of its trajectories.

    `trajectories` is the group GRPO, DeepConf and tree search need: one for Search-o1 or TIR, the k
    traces of DeepConf (its voting report in `metadata["deepconf"]`), a tree search's chosen path first
    and then one trajectory per other LLM call (the node table refers to them by id), the branches of
    ARPO/AEPO. `answer` is the engine's final answer (a vote, the chosen path's answer); `rewards` the
    verdicts on it under each metric's name (`agentic_infer.verify`); `usage` the whole rollout's cost.
    `chosen` is the index of the trajectory the answer came from (None for a vote).
    """

    example_id: str
    trajectories: list[Trajectory] = field(default_factory=list)
    answer: str | None = None
    rewards: dict[str, float] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    engine: str | None = None
    example: dict[str, Any] = field(default_factory=dict)
    chosen: int | None = 0
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.chosen is not None and not 0 <= self.chosen < max(1, len(self.trajectories)):
            _fail("Rollout", "chosen", self.chosen, f"must index one of the {len(self.trajectories)} trajectories",
                  "pass None when the answer is a vote")
        for t in self.trajectories:
            if t.group_id is None:
                t.group_id = self.example_id

    @property
    def trajectory(self) -> Trajectory | None:
        """The trajectory the answer came from (None for a vote or an empty rollout)."""
        return None if self.chosen is None or not self.trajectories else self.trajectories[self.chosen]

    @property
    def text(self) -> str:
        """The chosen trajectory's completion text ("" when there is none)."""
        t = self.trajectory
        return t.completion_text if t is not None else ""

    def to_dict(self) -> dict[str, Any]:
        return {"example_id": self.example_id, "engine": self.engine, "example": self.example, "answer": self.answer,
                "rewards": self.rewards, "usage": asdict(self.usage), "chosen": self.chosen,
                "metadata": self.metadata, "trajectories": [t.to_dict() for t in self.trajectories]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Rollout:
        return cls(example_id=d["example_id"], engine=d.get("engine"), example=dict(d.get("example") or {}),
                   answer=d.get("answer"), rewards=dict(d.get("rewards") or {}), usage=Usage(**(d.get("usage") or {})),
                   chosen=d.get("chosen"), metadata=dict(d.get("metadata") or {}),
                   trajectories=[Trajectory.from_dict(t) for t in d.get("trajectories", [])])

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, default=str)

    @classmethod
    def from_json(cls, text: str) -> Rollout:
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
