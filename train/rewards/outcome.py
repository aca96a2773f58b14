r"""Outcome rewards from `agentic_infer.verify`: the rollout's answer scored by a metric of `verify.METRICS`, or
by an LLM judge (Chain-of-Agents' 0/1 reward).

    em_reward(RewardInput(text, gold=["Paris"], trajectory=traj))      # traj.answer: the engine's own extraction
    em_reward(RewardInput(r"... \boxed{Paris}", gold=["Paris"]))        # no trajectory: the text's boxed answer
    math_reward(RewardInput(r"... \boxed{1/2}", gold="0.5"))            # 1.0
    reward = judge_reward(EquivalenceJudge(llm))                        # 1.0 when CORRECT

What is scored, first found first (nobody re-parses what an earlier stage structured):
1. a verdict already in `trajectory.rewards` under the reward's metric name (a synth judge step or eval wrote
   it; `judge_acc` for the judge reward);
2. `trajectory.answer`, the answer the engine extracted in its own dialect (the GRPO `rollout_func` and
   verl's agent loop attach the trajectory);
3. only without a trajectory: the answer the completion text states in `answer_format`, a format of
   `verify.ANSWER_FORMATS`: "boxed" by default (the default engine's, Search-o1, and TIR's / ToRL's),
   "answer_tag" for Search-R1 / R1-Searcher / ASearcher / ARTIST / ToolRL text, None for the whole completion.
No answer scores 0. Metrics get the completion as `text`, so the published variants (`search_o1_em`, ...)
work as rewards too. The judge reward judges with `verify.judge_answers` (one call per item showing every
gold alias, no call for an empty answer), as eval and synth do.
Not covered: partial credit beyond the metric's own (F1 is graded).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Sequence
from typing import Any

from agentic_infer.verify import Judge, extract_answer, judge_answers, score
from train.rewards.base import RewardInput, require_gold

DEFAULT_ANSWER_FORMAT = "boxed"  # the default engine's (Search-o1) answer format


def predicted_answer(inp: RewardInput, answer_format: str | None = DEFAULT_ANSWER_FORMAT) -> str | None:
    """The trajectory's answer when there is a trajectory; else the answer the completion states in
    `answer_format` (None: the whole completion, stripped)."""
    if inp.trajectory is not None:
        return inp.trajectory.answer
    return inp.completion.strip() if answer_format is None else extract_answer(answer_format, inp.completion)


def recorded_verdict(inp: RewardInput, metric: str) -> float | None:
    """The verdict `metric` already written into the input's trajectory (None when there is none)."""
    traj = inp.trajectory
    return None if traj is None or metric not in traj.rewards else float(traj.rewards[metric])


def metric_reward(inp: RewardInput, *, metric: str = "em", answer_format: str | None = DEFAULT_ANSWER_FORMAT,
                  **options: Any) -> float:
    """`verify.score(metric, answer, gold)` of the answer found as the module docstring says; 0.0 without one."""
    recorded = recorded_verdict(inp, metric)
    if recorded is not None:
        return recorded
    gold = require_gold(inp, f"metric_reward({metric!r})")
    pred = predicted_answer(inp, answer_format)
    return 0.0 if pred is None else score(metric, pred, gold, text=inp.completion, **options)


def em_reward(inp: RewardInput, *, answer_format: str | None = DEFAULT_ANSWER_FORMAT) -> float:
    """Exact match (SQuAD normalisation) of the answer."""
    return metric_reward(inp, metric="em", answer_format=answer_format)


def f1_reward(inp: RewardInput, *, answer_format: str | None = DEFAULT_ANSWER_FORMAT) -> float:
    """Token F1 (HotpotQA rules) of the answer."""
    return metric_reward(inp, metric="f1", answer_format=answer_format)


def cover_em_reward(inp: RewardInput, *, answer_format: str | None = DEFAULT_ANSWER_FORMAT) -> float:
    """Cover-EM: a gold answer is contained in the answer."""
    return metric_reward(inp, metric="cover_em", answer_format=answer_format)


def math_reward(inp: RewardInput, *, answer_format: str | None = DEFAULT_ANSWER_FORMAT,
                timeout_s: float = 5.0) -> float:
    """Math equivalence (math-verify) of the answer."""
    return metric_reward(inp, metric="math_equal", answer_format=answer_format, timeout_s=timeout_s)


def _run(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # called from inside an event loop
        return pool.submit(asyncio.run, coro).result()


async def ajudge_scores(judge: Judge, inputs: Sequence[RewardInput], *,
                        answer_format: str | None = DEFAULT_ANSWER_FORMAT, metric: str = "judge_acc",
                        concurrency: int = 8) -> list[float]:
    """1.0 per input the judge labels CORRECT, else 0.0; a verdict already recorded under `metric` is reused."""
    out = [recorded_verdict(inp, metric) for inp in inputs]
    todo = [i for i, v in enumerate(out) if v is None]
    items = [(inputs[i].question or "", predicted_answer(inputs[i], answer_format),
              require_gold(inputs[i], "judge_reward")) for i in todo]
    for i, verdict in zip(todo, await judge_answers(judge, items, concurrency=concurrency)):
        out[i] = float(verdict is not None and verdict.correct)
    return [float(v or 0.0) for v in out]


def judge_reward(judge: Judge, *, answer_format: str | None = DEFAULT_ANSWER_FORMAT, metric: str = "judge_acc"):
    """A reward `fn(inp) -> 0.0 | 1.0` asking `judge` (any `verify.Judge`; e.g. engines.judge.EquivalenceJudge),
    unless the trajectory already holds a `metric` verdict."""
    def reward(inp: RewardInput) -> float:
        return _run(ajudge_scores(judge, [inp], answer_format=answer_format, metric=metric))[0]

    reward.__name__ = f"judge_{getattr(judge, 'name', type(judge).__name__)}"
    return reward


__all__ = ["DEFAULT_ANSWER_FORMAT", "ajudge_scores", "cover_em_reward", "em_reward", "f1_reward", "judge_reward",
           "math_reward", "metric_reward", "predicted_answer", "recorded_verdict"]
