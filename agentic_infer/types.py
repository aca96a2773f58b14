"""Core records that cross every stage: sampling parameters, completions, messages, trajectories, rollouts.

No heavy imports here (numpy at most): engines, synth, train and eval all import this module. The records
of one backend call (`SamplingParams`, `Message`, `Completion`, `TokenLogprob`, `TopLogprob`) live in
`agentic_infer.completions` and are re-exported here; the trainer views of a trajectory (TRL rollout,
SFT rows, chat messages, the end-of-turn policy) live in `agentic_infer.views`, with thin methods here.
Every record validates at construction and raises `ConfigError` naming the parameter, the value and
the fix. `Trajectory` and `Rollout` round-trip losslessly through JSON (`to_json` / `from_json`) and a
list of trajectories converts to a `datasets.Dataset` (`trajectories_to_dataset`).

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
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from agentic_infer.completions import (
    FINISH_REASONS,
    MAX_TOP_LOGPROBS,
    Completion,
    Message,
    SamplingParams,
    TokenLogprob,
    TopLogprob,
    invalid,
    logprobs_from_list,
    logprobs_to_list,
)
from agentic_infer.errors import ConfigError

FinishReason = Literal["stop", "length", "abort"]
SegmentKind = Literal["prompt", "model", "observation"]
TrajectoryFinish = Literal["answer", "length", "max_turns", "max_tokens", "context_length", "error", "abort", "budget"]
SEGMENT_KINDS = ("prompt", "model", "observation")
TRAJECTORY_FINISH_REASONS = ("answer", "length", "max_turns", "max_tokens", "context_length", "error", "abort",
                             "budget")
IGNORE_INDEX = -100  # the label of a token that is not trained (PyTorch's cross-entropy ignore_index)


def trajectory_finish(completion_finish: str) -> TrajectoryFinish:
    """A one-generation trajectory's finish from its completion's: "stop" (EOS or a stop string) -> "answer",
    "length" -> "length", "abort" -> "abort"."""
    if completion_finish not in FINISH_REASONS:
        invalid("Completion", "finish_reason", completion_finish, f"must be one of {FINISH_REASONS}",
                "map the backend's reason onto these")
    return "answer" if completion_finish == "stop" else completion_finish  # type: ignore[return-value]


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
            invalid("Segment", "kind", self.kind, f"must be one of {SEGMENT_KINDS}", "label what produced the text")
        if self.logprobs is not None and self.token_ids is not None and len(self.logprobs) != len(self.token_ids):
            invalid("Segment", "logprobs", f"<{len(self.logprobs)} entries>",
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
            "logprobs": logprobs_to_list(self.logprobs),
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Segment:
        return cls(
            kind=d["kind"],
            text=d["text"],
            token_ids=d.get("token_ids"),
            logprobs=logprobs_from_list(d.get("logprobs")),
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
            invalid("Trajectory", "finish_reason", self.finish_reason, f"must be one of {TRAJECTORY_FINISH_REASONS}",
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
            invalid("Trajectory", "finish_reason", reason, f"must be one of {TRAJECTORY_FINISH_REASONS}",
                  "map the engine's reason onto these (details go in metadata)")
        self.finish_reason = reason

    # -- views ----------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segments)

    @property
    def completion_text(self) -> str:
        """Everything after the leading prompt segments (what the agent wrote and was shown)."""
        return "".join(s.text for s in self.segments[self.prompt_end():])

    def prompt_end(self) -> int:
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

    def trl_rollout(self, *, allow_inexact: bool = False) -> dict[str, list]:
        """TRL's `rollout_func` shape (`agentic_infer.views.trl_rollout`)."""
        from agentic_infer.views import trl_rollout

        return trl_rollout(self, allow_inexact=allow_inexact)

    def sft_row(self, *, eos_token_id: int | None = None, append_eos: str | None = None, max_length: int | None = None,
                allow_inexact: bool = False) -> dict[str, list[int]]:
        """A pre-tokenized SFT row with the end-of-turn policy `append_eos` (`agentic_infer.views.sft_row`)."""
        from agentic_infer.views import sft_row

        return sft_row(self, eos_token_id=eos_token_id, append_eos=append_eos,  # type: ignore[arg-type]
                       max_length=max_length, allow_inexact=allow_inexact)

    def chat_messages(self) -> list[dict[str, Any]]:
        """OpenAI-style messages, observations as `tool` messages (`agentic_infer.views.chat_messages`)."""
        from agentic_infer.views import chat_messages

        return chat_messages(self)

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
            invalid("Rollout", "chosen", self.chosen, f"must index one of the {len(self.trajectories)} trajectories",
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


__all__ = ["FINISH_REASONS", "IGNORE_INDEX", "MAX_TOP_LOGPROBS", "SEGMENT_KINDS", "TRAJECTORY_FINISH_REASONS",
           "Completion", "FinishReason", "Message", "Rollout", "SamplingParams", "Segment", "SegmentKind", "Step",
           "TokenLogprob", "TopLogprob", "Trajectory", "TrajectoryFinish", "Usage", "dataset_to_trajectories",
           "trajectories_to_dataset", "trajectory_finish"]
