"""The rows of a micro-batch that can move the gradient, so the loss's forward and backward skip the others.

    sub = trained_rows(inputs, aggregation="token-mean")   # None: every row's advantage is 0
    loss = sub.scale * policy_loss_on(sub.inputs)          # the same loss (and gradient) as on `inputs`

A row whose advantages are all 0 adds nothing to the PPO-clip loss (r·0 = clip(r)·0 = 0), so on the
whole micro-batch and on its other rows alone the loss and its gradient are equal, provided there is no KL term
(β = 0) and the advantages do not depend on the other rows (AEPO's entropy standardisation does: the caller
keeps every row then). In a sparse-reward game most groups have zero reward variance (RAGEN's observation;
69% in `make rl`'s first run), so most rows carry no advantage and their forward and backward are pure cost.
`trained_rows` keeps the rows with a nonzero advantage on a trained token, cuts the completion columns after
the last trained token and the prompt columns before the first real one (causal attention: the cut columns
cannot reach the kept ones; left-padded positions shift all real tokens alike, which RoPE does not see), and
returns the factor that keeps the aggregation's normaliser what it was for the whole micro-batch:
token-mean divides by the generation batch's token count (`tokens`, unchanged: 1), seq-mean-token-mean by the
micro-batch's rows that have trained tokens, seq-mean-token-sum-norm by all its rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

PROMPT_KEYS = ("prompt_ids", "prompt_mask")


@dataclass(frozen=True)
class TrainedRows:
    """`inputs` restricted to the trained rows and columns; `scale` restores the whole micro-batch's
    normaliser; `kept` / `rows`: rows kept of the micro-batch's rows."""

    inputs: dict[str, Any]
    scale: float
    kept: int
    rows: int


def trained_mask(inputs: dict[str, Any]) -> torch.Tensor:
    """(B, T) 1 where a completion token is trained (completion mask x env tool mask)."""
    mask = inputs["completion_mask"]
    return mask * inputs["tool_mask"] if "tool_mask" in inputs else mask


def trained_rows(inputs: dict[str, Any], *, aggregation: str) -> TrainedRows | None:
    """The micro-batch's rows with a nonzero advantage on a trained token (see the module docstring); None when
    there is none (the loss is 0 and so is its gradient)."""
    completion = inputs["completion_ids"]
    rows, width = completion.shape
    mask = trained_mask(inputs).bool()
    adv = inputs["advantages"]
    adv = adv[:, None].expand(rows, width) if adv.dim() == 1 else adv
    keep = ((adv != 0) & mask).any(dim=1)
    kept = int(keep.sum())
    if kept == 0:
        return None
    trained = mask[keep].any(dim=0).nonzero()
    end = int(trained.max()) + 1
    prompt_real = inputs["prompt_mask"][keep].bool().any(dim=0).nonzero()
    start = int(prompt_real.min()) if len(prompt_real) else 0
    out: dict[str, Any] = {}
    for key, value in inputs.items():
        if not isinstance(value, torch.Tensor) or value.dim() == 0 or value.size(0) != rows:
            out[key] = value  # scalars (num_items_in_batch) and non-tensors pass through
            continue
        value = value[keep]
        if key in PROMPT_KEYS:
            value = value[:, start:]
        elif value.dim() >= 2 and value.size(1) == width:
            value = value[:, :end]
        out[key] = value
    if aggregation == "seq-mean-token-mean":
        scale = kept / max(1, int(mask.any(dim=1).sum()))  # rows kept with tokens / rows with tokens
    elif aggregation == "seq-mean-token-sum-norm":
        scale = kept / rows
    else:
        scale = 1.0
    return TrainedRows(out, scale, kept, rows)


__all__ = ["PROMPT_KEYS", "TrainedRows", "trained_mask", "trained_rows"]
