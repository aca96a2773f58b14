"""Token-in/token-out tensors for training: a batch of completion views, padded, with the loss mask.

    view = completion_view(traj, eos_token_id=tok.eos_token_id, append_eos="finished", max_completion_length=512)
    view.to_trl()                       # {"prompt_ids", "completion_ids", "logprobs", "env_mask"}
    batch = pad_completions([view, ...], pad_token_id=0)   # tensors: completion_ids, attention_mask, loss_mask, ...

The views themselves (`completion_view`, `sft_row`, the end-of-turn policy `append_eos`, truncation) are
`agentic_infer.views`, re-exported here: synth's tokenized export, train's SFT, GRPO's `rollout_func` and
verl's agent loop build their rows with the same functions, so one trajectory gives one row everywhere.
Everything is read from the trajectory's recorded token ids; observation and prompt tokens are never
trained (mask 0). Not covered: packing.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from agentic_infer.errors import ConfigError
from agentic_infer.views import (
    APPEND_EOS,
    AppendEos,
    CompletionView,
    completion_view,
    sft_row,
    truncate_completion,
    wants_eos,
)


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
