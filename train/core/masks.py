"""Token-in/token-out views of trajectories for training: ids, sampling logprobs and the loss mask.

    view = completion_view(traj, eos_token_id=tok.eos_token_id, append_eos="finished", max_completion_length=512)
    view.to_trl()                       # {"prompt_ids", "completion_ids", "logprobs", "env_mask"}
    batch = pad_completions([view, ...], pad_token_id=0)   # tensors: completion_ids, attention_mask, loss_mask, ...

Everything is read from the trajectory's recorded token ids (`Trajectory.trl_rollout()`); nothing is
decoded and re-encoded. Observation and prompt tokens are never trained (mask 0).

End of turn. Our backends do not put the EOS id into a model segment's ids: a trajectory that finished
with `finish_reason == "answer"` ended by EOS (or a stop string), but the EOS token itself is missing,
so the policy would never be taught to stop. `append_eos` adds `eos_token_id` as one trainable token
at the end of such a trajectory's completion: `"eos"` only when the last model segment stopped on EOS
(its `metadata["stop_reason"]` is None), `"finished"` for any "answer" finish (also after a stop string,
teaching the policy to end its turn there), `None` never (the default: the ids stay exactly as sampled).
The appended token's sampling logprob is unknown and recorded as 0.0; `eos_appended` says it happened,
so an importance-sampling correction can skip that position.

Truncation (as TRL PR #4976): `max_completion_length` cuts the completion ids, logprobs and env mask
together, so the tool mask never outgrows the ids (TRL #5144). Not covered: prompt truncation (a
trajectory whose prompt alone exceeds the context should be dropped upstream), packing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from agentic_infer.errors import ConfigError
from agentic_infer.types import IGNORE_INDEX, Trajectory

AppendEos = Literal["eos", "finished"] | None
APPEND_EOS = ("eos", "finished", None)


@dataclass
class CompletionView:
    """One trajectory as the trainer sees it: prompt ids, completion ids, aligned sampling logprobs and
    `env_mask` (1 = sampled by the policy: trained; 0 = observation); `segment_index[i]` is the index in
    `Trajectory.segments` of completion token i (-1 for an appended EOS)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    env_mask: list[int]
    segment_index: list[int]
    eos_appended: bool = False
    truncated: bool = False

    def to_trl(self) -> dict[str, list]:
        """TRL's `rollout_func` keys for this trajectory."""
        return {"prompt_ids": self.prompt_ids, "completion_ids": self.completion_ids, "logprobs": self.logprobs,
                "env_mask": self.env_mask}


def wants_eos(traj: Trajectory, append_eos: AppendEos) -> bool:
    """Whether `append_eos` adds an end-of-turn token to `traj` (see the module docstring)."""
    if append_eos not in APPEND_EOS:
        raise ConfigError(f"append_eos={append_eos!r}: must be one of {APPEND_EOS}")
    if append_eos is None or traj.finish_reason != "answer" or not traj.segments:
        return False
    last = traj.segments[-1]
    if last.kind != "model":
        return False
    return append_eos == "finished" or last.metadata.get("stop_reason") is None


def truncate_completion(view: CompletionView, max_completion_length: int) -> CompletionView:
    """`view` with its completion ids, logprobs, env mask and segment index cut to `max_completion_length`."""
    if max_completion_length < 0:
        raise ConfigError(f"max_completion_length={max_completion_length!r}: must be >= 0")
    n = max_completion_length
    if len(view.completion_ids) <= n:
        return view
    return CompletionView(view.prompt_ids, view.completion_ids[:n], view.logprobs[:n], view.env_mask[:n],
                          view.segment_index[:n], eos_appended=False, truncated=True)  # an appended EOS is last: cut


def completion_view(traj: Trajectory, *, eos_token_id: int | None = None, append_eos: AppendEos = None,
                    max_completion_length: int | None = None, allow_inexact: bool = False) -> CompletionView:
    """The trainer's view of `traj` from its recorded ids (refuses inexact ids unless `allow_inexact`)."""
    trl = traj.trl_rollout(allow_inexact=allow_inexact)
    cut = next((i for i, s in enumerate(traj.segments) if s.kind != "prompt"), len(traj.segments))
    seg_index = [i for i, s in enumerate(traj.segments[cut:], cut) for _ in s.token_ids or ()]
    view = CompletionView(trl["prompt_ids"], trl["completion_ids"], trl["logprobs"], trl["env_mask"], seg_index)
    if wants_eos(traj, append_eos):
        if eos_token_id is None:
            raise ConfigError(f"append_eos={append_eos!r} needs eos_token_id; pass the tokenizer's end-of-turn id "
                              "(e.g. tokenizer.eos_token_id)")
        if not view.completion_ids or view.completion_ids[-1] != eos_token_id:
            view.completion_ids.append(eos_token_id)
            view.logprobs.append(0.0)
            view.env_mask.append(1)
            view.segment_index.append(-1)
            view.eos_appended = True
    if max_completion_length is not None:
        view = truncate_completion(view, max_completion_length)
    return view


def sft_row(traj: Trajectory, *, eos_token_id: int | None = None, append_eos: AppendEos = None,
            max_length: int | None = None, allow_inexact: bool = False) -> dict[str, list[int]]:
    """`input_ids`, `labels` (IGNORE_INDEX on prompt and observation tokens), `attention_mask`, with the
    optional trainable EOS, cut to `max_length` (labels cut with the ids)."""
    view = completion_view(traj, eos_token_id=eos_token_id, append_eos=append_eos, allow_inexact=allow_inexact)
    ids = view.prompt_ids + view.completion_ids
    labels = [IGNORE_INDEX] * len(view.prompt_ids) + [
        t if m else IGNORE_INDEX for t, m in zip(view.completion_ids, view.env_mask)]
    if max_length is not None:
        ids, labels = ids[:max_length], labels[:max_length]
    return {"input_ids": ids, "labels": labels, "attention_mask": [1] * len(ids)}


def pad_completions(views: Sequence[CompletionView], *, pad_token_id: int = 0,
                    advantages: Sequence[Sequence[float]] | None = None) -> dict[str, torch.Tensor]:
    """Right-pad completions to one (B, T) batch: `completion_ids`, `attention_mask` (1 = a real token),
    `loss_mask` (real and trained), `old_logprobs`, and `advantages` when per-token lists are given."""
    if not views:
        raise ConfigError("pad_completions: no views; pass at least one CompletionView")
    if advantages is not None and [len(a) for a in advantages] != [len(v.completion_ids) for v in views]:
        raise ConfigError("pad_completions: advantages must hold one value per completion token of each view")
    t = max(1, max(len(v.completion_ids) for v in views))
    b = len(views)
    out = {"completion_ids": torch.full((b, t), pad_token_id, dtype=torch.long),
           "attention_mask": torch.zeros(b, t, dtype=torch.long), "loss_mask": torch.zeros(b, t),
           "old_logprobs": torch.zeros(b, t)}
    if advantages is not None:
        out["advantages"] = torch.zeros(b, t)
    for i, v in enumerate(views):
        n = len(v.completion_ids)
        out["completion_ids"][i, :n] = torch.tensor(v.completion_ids, dtype=torch.long)
        out["attention_mask"][i, :n] = 1
        out["loss_mask"][i, :n] = torch.tensor(v.env_mask, dtype=torch.float)
        out["old_logprobs"][i, :n] = torch.tensor(v.logprobs, dtype=torch.float)
        if advantages is not None:
            out["advantages"][i, :n] = torch.tensor(list(advantages[i]), dtype=torch.float)
    return out


__all__ = ["APPEND_EOS", "AppendEos", "CompletionView", "completion_view", "pad_completions", "sft_row",
           "truncate_completion", "wants_eos"]
