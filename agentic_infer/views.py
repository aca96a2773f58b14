"""Trainer views of a Trajectory, in one place: TRL's rollout shape, the completion view, SFT rows, chat messages.

    trl_rollout(traj)                              # {"prompt_ids", "completion_ids", "logprobs", "env_mask"}
    view = completion_view(traj, eos_token_id=eos, append_eos="finished", max_completion_length=512)
    sft_row(traj, eos_token_id=eos, append_eos="finished", max_length=2048)   # input_ids, labels, attention_mask
    chat_messages(traj)                            # OpenAI-style messages, observations as `tool` messages

synth's tokenized export (`synth.export`), train's SFT (`train.sft`, through `train.core.masks`), GRPO's
`rollout_func` and verl's agent loop all build their rows here, so one trajectory with one setting gives one
row everywhere. Everything is read from the trajectory's recorded token ids; nothing is decoded and
re-encoded; ids re-encoded from text (`token_exact=False`) are refused unless `allow_inexact=True`. Prompt
and observation tokens are never trained (label `IGNORE_INDEX`, env mask 0).

End of turn, the ONE policy (`append_eos`). Our backends do not put the EOS id into a model segment's ids:
a trajectory that finished with `finish_reason == "answer"` ended by EOS (or a stop string), but the EOS
token itself is missing, so the policy would never be taught to stop. `append_eos` adds `eos_token_id` as
one trainable token at the end of such a trajectory's completion: `"eos"` only when the last model segment
stopped on EOS (its `metadata["stop_reason"]` is None), `"finished"` for any "answer" finish (also after a
stop string, teaching the policy to end its turn there), `None` never (the ids stay exactly as sampled).
`DEFAULT_APPEND_EOS` ("finished") is the default of the SFT entry points (`agentic train sft`,
`agentic synth export --format tokenized`). The appended token's sampling logprob is unknown and recorded as
0.0; `eos_appended` says it happened, so an importance-sampling correction can skip that position.

Truncation (as TRL PR #4976): `max_completion_length` cuts the completion ids, logprobs and env mask
together, so the tool mask never outgrows the ids (TRL #5144); `sft_row`'s `max_length` cuts ids and
labels together. Not covered: prompt truncation (drop a trajectory whose prompt alone exceeds the context
upstream), packing, padding into tensors (`train.core.masks.pad_completions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agentic_infer.errors import ConfigError
from agentic_infer.types import IGNORE_INDEX, Segment, Trajectory

AppendEos = Literal["eos", "finished"] | None
APPEND_EOS = ("eos", "finished", None)
DEFAULT_APPEND_EOS: AppendEos = "finished"


def require_exact(traj: Trajectory, view: str, allow_inexact: bool) -> None:
    """Refuse a trajectory whose ids were encoded from text, unless `allow_inexact`."""
    if not traj.token_exact and not allow_inexact:
        raise ConfigError(
            f"Trajectory {traj.id} (engine {traj.engine!r}) has token_exact=False: its ids were encoded from "
            f"text, not taken from the model, so {view} would train on sequences the policy never saw; "
            "regenerate it with a backend that returns token ids, or pass allow_inexact=True")


def _ids(seg: Segment) -> list[int]:
    if seg.token_ids is None:
        raise ConfigError(f"a {seg.kind} segment has token_ids=None; call trajectory.tokenize(tokenizer) first")
    return seg.token_ids


def trl_rollout(traj: Trajectory, *, allow_inexact: bool = False) -> dict[str, list]:
    """TRL's `rollout_func` shape: `prompt_ids` (the leading prompt segments), `completion_ids` (everything
    after), `logprobs` aligned with `completion_ids` (the sampling logprob of model tokens, 0.0 on observation
    tokens) and `env_mask` (1 = sampled by the policy, 0 = observation: not trained)."""
    require_exact(traj, "trl_rollout()", allow_inexact)
    cut = traj.prompt_end()
    prompt_ids = [i for s in traj.segments[:cut] for i in _ids(s)]
    completion, logprobs, mask = [], [], []
    for seg in traj.segments[cut:]:
        ids = _ids(seg)
        completion.extend(ids)
        mask.extend([int(seg.trainable)] * len(ids))
        if seg.trainable and seg.logprobs is not None:
            logprobs.extend(lp.logprob for lp in seg.logprobs)
        else:
            logprobs.extend([0.0] * len(ids))
    return {"prompt_ids": prompt_ids, "completion_ids": completion, "logprobs": logprobs, "env_mask": mask}


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
    """The trainer's view of `traj` from its recorded ids, with the end-of-turn policy applied."""
    trl = trl_rollout(traj, allow_inexact=allow_inexact)
    cut = traj.prompt_end()
    seg_index = [i for i, s in enumerate(traj.segments[cut:], cut) for _ in s.token_ids or ()]
    view = CompletionView(trl["prompt_ids"], trl["completion_ids"], trl["logprobs"], trl["env_mask"], seg_index)
    if wants_eos(traj, append_eos):
        if eos_token_id is None:
            raise ConfigError(f"append_eos={append_eos!r} needs eos_token_id; pass the tokenizer's end-of-turn id "
                              "(e.g. tokenizer.eos_token_id), or append_eos=None to keep the ids as sampled")
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
    """A pre-tokenized SFT row: `input_ids`, `labels` (IGNORE_INDEX on prompt and observation tokens),
    `attention_mask`, with the end-of-turn policy applied, cut to `max_length` (labels cut with the ids)."""
    view = completion_view(traj, eos_token_id=eos_token_id, append_eos=append_eos, allow_inexact=allow_inexact)
    ids = view.prompt_ids + view.completion_ids
    labels = [IGNORE_INDEX] * len(view.prompt_ids) + [
        t if m else IGNORE_INDEX for t, m in zip(view.completion_ids, view.env_mask)]
    if max_length is not None:
        ids, labels = ids[:max_length], labels[:max_length]
    return {"input_ids": ids, "labels": labels, "attention_mask": [1] * len(ids)}


def chat_messages(traj: Trajectory) -> list[dict[str, Any]]:
    """OpenAI-style messages: the prompt's messages, then assistant turns with a `tool` message per observation.

    An agent that splices observations into one assistant turn (Search-o1, TIR) becomes alternating
    assistant / tool messages; forced assistant text (an assistant prefix) opens the first assistant
    message. The prompt's messages come from the first prompt segment's `metadata["messages"]`
    (engines record them), else one user message with the prompt text.
    """
    head = traj.segments[:traj.prompt_end()]
    first = head[0].metadata.get("messages") if head else None
    messages: list[dict[str, Any]] = [dict(m) for m in first] if first else (
        [{"role": "user", "content": head[0].text}] if head else [])
    assistant = "".join(s.text for s in head[1:] if s.metadata.get("forced"))
    for seg in traj.segments[len(head):]:
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


__all__ = ["APPEND_EOS", "DEFAULT_APPEND_EOS", "AppendEos", "CompletionView", "chat_messages", "completion_view",
           "require_exact", "sft_row", "trl_rollout", "truncate_completion", "wants_eos"]
