"""The one judging rule (`verify.judge_answers`): empty answers make no call, gold aliases go in one call,
concurrency is bounded, failures can be skipped; and `make_judge`'s one vocabulary."""

from __future__ import annotations

import asyncio

import pytest

from agentic_infer.engines.judge import (
    EquivalenceJudge,
    SimpleQAGrader,
    YesNoEquivalenceJudge,
    make_judge,
)
from agentic_infer.errors import BackendError, ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.verify import MetricJudge, Verdict, judge_answer, judge_answers


class Recorder:
    """A judge that records what it is asked, how many calls run at once, and fails on "boom"."""

    def __init__(self, delay_s: float = 0.0):
        self.seen, self.running, self.peak, self.delay_s = [], 0, 0, delay_s

    async def score(self, question, prediction, reference=None):
        self.seen.append((question, prediction, reference))
        self.running += 1
        self.peak = max(self.peak, self.running)
        await asyncio.sleep(self.delay_s)
        self.running -= 1
        if prediction == "boom":
            raise BackendError("judge down", retryable=False)
        return Verdict("CORRECT", 1.0)


async def test_an_empty_answer_is_judged_without_a_call():
    j = Recorder()
    got = await judge_answers(j, [("q1", None, ["a"]), ("q2", "   ", "a"), ("q3", "", ["a", "b"])])
    assert [(v.label, v.score, v.reason) for v in got] == [("INCORRECT", 0.0, "no answer")] * 3
    assert j.seen == []
    grader = SimpleQAGrader(FakeLLM([]))  # FakeLLM([]) fails when asked
    assert (await judge_answer(grader, "q", None, ["a"])).label == "NOT_ATTEMPTED"
    assert grader.calls == 0


async def test_all_gold_aliases_go_into_one_call():
    j = Recorder()
    await judge_answers(j, [("q", "Paris", ["Paris", "City of Paris"]), ("q", "Rome", ["Rome"]), ("q", "x", "x")])
    assert [ref for _, _, ref in j.seen] == [["Paris", "City of Paris"], "Rome", "x"]  # one gold: as itself
    llm = FakeLLM(['{"equivalent": true}'])
    v = await judge_answer(EquivalenceJudge(llm), "Who?", "The Bard", ["William Shakespeare", "The Bard"])
    assert v.correct and len(llm.prompts) == 1
    assert "Gold answer: William Shakespeare | The Bard\n" in llm.prompts[0]  # eval's prompt, unchanged
    # a metric judge: correct when the answer matches any alias
    assert (await judge_answer(MetricJudge("em"), "q", "the bard", ["William Shakespeare", "The Bard"])).correct


async def test_concurrency_is_bounded_and_order_kept():
    j = Recorder(delay_s=0.01)
    items = [(f"q{i}", f"a{i}", "g") for i in range(7)]
    got = await judge_answers(j, items, concurrency=3)
    assert len(got) == 7 and j.peak == 3
    assert [q for q, _, _ in j.seen] == [f"q{i}" for i in range(7)]
    with pytest.raises(ConfigError, match="concurrency=0"):
        await judge_answers(j, items, concurrency=0)


async def test_a_failed_call_raises_or_leaves_an_empty_slot():
    items = [("q1", "ok", "g"), ("q2", "boom", "g")]
    with pytest.raises(BackendError):
        await judge_answers(Recorder(), items)
    got = await judge_answers(Recorder(), items, skip_failures=True)
    assert got[0].correct and got[1] is None


def test_make_judge_has_one_vocabulary():
    llm = FakeLLM([])
    assert type(make_judge("hotpotqa", llm)) is EquivalenceJudge
    assert type(make_judge("simpleqa", llm, verdict="json")) is SimpleQAGrader
    assert type(make_judge("simpleqa", llm, verdict="yes-no")) is YesNoEquivalenceJudge
    assert make_judge("hotpotqa", llm, max_tokens=128).params.max_tokens == 128
    with pytest.raises(ConfigError, match="'yesno' is now spelled 'yes-no'"):
        make_judge("hotpotqa", llm, verdict="yesno")
    with pytest.raises(ConfigError, match="judge verdict 'xml': choose one of json, yes-no"):
        make_judge("hotpotqa", llm, verdict="xml")
