"""Adapters from our rewards (`fn(RewardInput, **options) -> float`) to the trainers' reward interfaces.

    from train.rewards import em_reward, trl_reward, verl_compute_score
    GRPOTrainer(..., reward_funcs=[trl_reward(em_reward, answer_format="answer_tag")])
    compute_score = verl_compute_score(em_reward)     # verl: reward.custom_reward_function.name

TRL calls `fn(completions, **kw)` with `prompts`, `completion_ids`, the dataset columns and every extra key
our `rollout_func` returned, each a list with one entry per completion. We read the gold answer from the
first of `gold`, `answer`, `ground_truth`, `solution`, `golden_answers`; the question from `question`
(else `prompts` when they are strings); the trajectory from `trajectory` (JSON string, dict or Trajectory);
`extra["step"]` is TRL's `trainer_state.global_step` (the optimizer step the rollouts were generated at: what
step-scheduled rewards read).
Conversational completions (lists of messages) are scored on their last assistant message.
verl calls `compute_score(data_source=, solution_str=, ground_truth=, extra_info=, **kw)` (keywords; its
reward managers add e.g. `reward_router_address`); `extra_info` may carry `question` and `trajectory`. The
ground truth comes in every shape verl datasets use (`verl_gold`): a string (verl's gsm8k / math rows), a list of
answers (numpy arrays once parquet went through pandas or a DataProto), or the Search-R1 layout
`{"target": [...]}` that our exports write (`synth.export.verl_rl_row`). Not covered: async reward functions,
reward weights (TRL's `reward_weights`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentic_infer.errors import ConfigError
from train.rewards.base import Reward, RewardInput, as_trajectory

GOLD_KEYS = ("gold", "answer", "ground_truth", "solution", "golden_answers")


def completion_text(completion: Any) -> str:
    """A TRL completion as text: a string as is, a message list by its last assistant message."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        msgs = [m for m in completion if m.get("role") == "assistant"] or list(completion)
        return str(msgs[-1].get("content") or "")
    raise ConfigError(f"completion: got a {type(completion).__name__}; expected text or a list of messages")


def _column(kw: Mapping[str, Any], keys: Sequence[str], i: int) -> Any:
    for k in keys:
        if k in kw and kw[k] is not None:
            return kw[k][i]
    return None


def trl_reward(fn: Reward, *, name: str | None = None, **options: Any):
    """`fn` as a TRL reward function `f(completions, **kw) -> list[float]` (its `__name__` is logged)."""
    def reward(completions: Sequence[Any], **kw: Any) -> list[float]:
        out = []
        for i, c in enumerate(completions):
            prompts = kw.get("prompts")
            question = _column(kw, ("question",), i)
            if question is None and prompts is not None and isinstance(prompts[i], str):
                question = prompts[i]
            extra = {k: v[i] for k, v in kw.items() if isinstance(v, (list, tuple)) and len(v) > i}
            if kw.get("trainer_state") is not None:
                extra["step"] = int(kw["trainer_state"].global_step)
            inp = RewardInput(completion_text(c), gold=_column(kw, GOLD_KEYS, i), question=question,
                              trajectory=as_trajectory(_column(kw, ("trajectory",), i)), extra=extra)
            out.append(float(fn(inp, **options)))
        return out

    reward.__name__ = name or getattr(fn, "__name__", "reward")
    return reward


def verl_gold(ground_truth: Any) -> str | list[str] | None:
    """verl's `reward_model.ground_truth` as our gold answer(s): a string, a sequence of strings (list, tuple,
    numpy array), or `{"target": one of those}` (the Search-R1 layout); None stays None."""
    if isinstance(ground_truth, Mapping):
        if "target" not in ground_truth:
            raise ConfigError(f"ground_truth={dict(ground_truth)!r}: a dict needs 'target' (the Search-R1 layout "
                              "{'target': [answers]} that `agentic synth export --format verl-rl` writes)")
        ground_truth = ground_truth["target"]
    if ground_truth is None or isinstance(ground_truth, str):
        return ground_truth
    if hasattr(ground_truth, "tolist"):  # a numpy array (or scalar)
        ground_truth = ground_truth.tolist()
    if isinstance(ground_truth, (list, tuple)):
        return [str(g) for g in ground_truth]
    return str(ground_truth)


def verl_compute_score(fn: Reward, **options: Any):
    """`fn` as verl's `compute_score(data_source, solution_str, ground_truth, extra_info=None, **kw) -> float`."""
    def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Mapping | None = None,
                      **kw: Any) -> float:
        extra = dict(extra_info or {})
        extra["data_source"] = data_source
        inp = RewardInput(solution_str, gold=verl_gold(ground_truth), question=extra.get("question"),
                          trajectory=as_trajectory(extra.get("trajectory")), extra=extra)
        return float(fn(inp, **options))

    compute_score.__name__ = f"compute_score_{getattr(fn, '__name__', 'reward')}"
    return compute_score


__all__ = ["GOLD_KEYS", "completion_text", "trl_reward", "verl_compute_score", "verl_gold"]
