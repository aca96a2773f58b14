"""Outcome rewards from `agentic_infer.verify`: the answer extracted in the dialect's format, scored by a
metric of `verify.METRICS`, or by an LLM judge (Chain-of-Agents' 0/1 reward).

    em_reward(RewardInput("... <answer>Paris</answer>", gold=["Paris"]))              # 1.0
    math_reward(RewardInput(r"... \\boxed{1/2}", gold="0.5"))                         # 1.0
    reward = judge_reward(EquivalenceJudge(llm))                                       # 1.0 when CORRECT

No answer in the format scores 0. `answer_format` is a format of `verify.ANSWER_FORMATS` ("answer_tag"
for Search-R1 / R1-Searcher / ASearcher / ARTIST / ToolRL, "boxed" for Search-o1 / ToRL / TIR) or None
to score the whole completion. Not covered: partial credit beyond the metric's own (F1 is graded).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Sequence
from typing import Any

from agentic_infer.verify import Judge, extract_answer, score
from train.rewards.base import RewardInput, require_gold


def predicted_answer(inp: RewardInput, answer_format: str | None) -> str | None:
    """The answer stated in the completion in `answer_format` (None: the whole completion, stripped)."""
    return inp.completion.strip() if answer_format is None else extract_answer(answer_format, inp.completion)


def metric_reward(inp: RewardInput, *, metric: str = "em", answer_format: str | None = "answer_tag",
                  **options: Any) -> float:
    """`verify.score(metric, extracted answer, gold)`; 0.0 when no answer is stated."""
    gold = require_gold(inp, f"metric_reward({metric!r})")
    pred = predicted_answer(inp, answer_format)
    return 0.0 if pred is None else score(metric, pred, gold, **options)


def em_reward(inp: RewardInput, *, answer_format: str | None = "answer_tag") -> float:
    """Exact match (SQuAD normalisation) of the extracted answer."""
    return metric_reward(inp, metric="em", answer_format=answer_format)


def f1_reward(inp: RewardInput, *, answer_format: str | None = "answer_tag") -> float:
    """Token F1 (HotpotQA rules) of the extracted answer."""
    return metric_reward(inp, metric="f1", answer_format=answer_format)


def cover_em_reward(inp: RewardInput, *, answer_format: str | None = "answer_tag") -> float:
    """Cover-EM: a gold answer is contained in the extracted answer."""
    return metric_reward(inp, metric="cover_em", answer_format=answer_format)


def math_reward(inp: RewardInput, *, answer_format: str | None = "boxed", timeout_s: float = 5.0) -> float:
    """Math equivalence (math-verify) of the extracted answer."""
    return metric_reward(inp, metric="math_equal", answer_format=answer_format, timeout_s=timeout_s)


def _run(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # called from inside an event loop
        return pool.submit(asyncio.run, coro).result()


async def ajudge_scores(judge: Judge, inputs: Sequence[RewardInput], *, answer_format: str | None = "answer_tag",
                        concurrency: int = 8) -> list[float]:
    """1.0 per input the judge labels CORRECT, else 0.0 (no stated answer: 0.0 without asking)."""
    sem = asyncio.Semaphore(concurrency)

    async def one(inp: RewardInput) -> float:
        pred = predicted_answer(inp, answer_format)
        if pred is None:
            return 0.0
        gold = require_gold(inp, "judge_reward")
        ref = gold if isinstance(gold, str) else " | ".join(gold)
        async with sem:
            return float((await judge.score(inp.question or "", pred, ref)).correct)

    return list(await asyncio.gather(*(one(i) for i in inputs)))


def judge_reward(judge: Judge, *, answer_format: str | None = "answer_tag"):
    """A reward `fn(inp) -> 0.0 | 1.0` asking `judge` (any `verify.Judge`; e.g. engines.judge.EquivalenceJudge)."""
    def reward(inp: RewardInput) -> float:
        return _run(ajudge_scores(judge, [inp], answer_format=answer_format))[0]

    reward.__name__ = f"judge_{getattr(judge, 'name', type(judge).__name__)}"
    return reward


__all__ = ["ajudge_scores", "cover_em_reward", "em_reward", "f1_reward", "judge_reward", "math_reward",
           "metric_reward", "predicted_answer"]
