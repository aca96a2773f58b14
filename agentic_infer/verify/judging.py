"""The one rule for judging answers against gold answers with any `Judge` (an LLM judge or `MetricJudge`).

    v = await judge_answer(judge, "Who wrote Hamlet?", "Shakespeare", ["William Shakespeare", "The Bard"])
    verdicts = await judge_answers(judge, [(question, answer, golds), ...], concurrency=8)

Eval's judging phase, synth's judge step, fuzzqa's gates and the RL judge reward all call this, so one item
gets one verdict whichever package asks:
- An empty answer (None, or only whitespace) makes no call: its verdict is the judge's `no_answer_label`
  ("INCORRECT"; SimpleQA's grader: "NOT_ATTEMPTED"), score 0.0, reason "no answer".
- Several gold aliases make ONE call that shows them all: the judge receives their list (a single gold
  answer is passed as itself); an LLM judge writes it `alias1 | alias2` in its prompt, as eval always has,
  and `MetricJudge` takes the best over the aliases, so an answer is correct when it is equivalent to any.
  One call per alias (max over aliases) would multiply the cost and give a noisy judge as many chances to
  accept a wrong answer as there are aliases.
- At most `concurrency` judge calls run at once; verdicts come back in input order. With
  `skip_failures=True` a call that fails (an `AgenticError` after the judge's own retries) is logged and its
  slot is None, so a long judging phase keeps what it paid for.
Not covered: writing verdicts into records (`verify.write_verdicts`), building LLM judges
(`agentic_infer.engines.judge.make_judge`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentic_infer.concurrency import gather_bounded
from agentic_infer.errors import AgenticError
from agentic_infer.verify.judge import Judge, Verdict
from agentic_infer.verify.normalize import Gold
from agentic_infer.verify.registry import golds

log = logging.getLogger(__name__)

# (question, answer, gold) or a mapping with `question`, `answer` (or `prediction`) and `gold` (or `reference`)
JudgeItem = tuple[str, str | None, Gold] | Mapping[str, Any]


def _unpack(item: JudgeItem) -> tuple[str, str | None, Gold]:
    if isinstance(item, Mapping):
        answer = item.get("answer", item.get("prediction"))
        return str(item.get("question") or ""), answer, item.get("gold", item.get("reference"))
    question, answer, gold = item
    return question, answer, gold


def no_answer(judge: Judge, answer: str | None) -> Verdict | None:
    """The verdict on an empty answer (see the module docstring), or None when there is an answer to judge."""
    if answer is not None and str(answer).strip():
        return None
    return Verdict(getattr(judge, "no_answer_label", "INCORRECT"), 0.0, "no answer")


async def judge_answers(judge: Judge, items: Iterable[JudgeItem], *, concurrency: int = 8,
                        skip_failures: bool = False) -> list[Verdict | None]:
    """One verdict per (question, answer, gold) item, by the rule of the module docstring, in input order."""
    async def one(item: JudgeItem) -> Verdict | None:
        question, answer, gold = _unpack(item)
        refs: Sequence[str] = golds(gold)
        reference = refs[0] if len(refs) == 1 else refs  # one gold answer as itself, aliases as their list
        empty = no_answer(judge, answer)
        if empty is not None:
            return empty
        try:
            return await judge.score(question, answer, reference)
        except AgenticError as e:
            if not skip_failures:
                raise
            log.warning("judge failed on %r (%s); no verdict for it", question[:80], e)
            return None

    return await gather_bounded(one, items, concurrency)


async def judge_answer(judge: Judge, question: str, answer: str | None, gold: Gold) -> Verdict:
    """The verdict on one answer (`judge_answers` of one item; a failed call raises)."""
    verdicts = await judge_answers(judge, [(question, answer, gold)], concurrency=1)
    return verdicts[0]  # type: ignore[return-value]  # never None: without skip_failures a failure raises


__all__ = ["JudgeItem", "judge_answer", "judge_answers", "no_answer"]
