"""SE-Agent trajectory evolution (synth/evolve) on Game of 24 with the task's own CoT engine and exact checker:
a FakeLLM that only finds the solution once told its earlier answer was wrong shows that the operators' guidance
really reaches the executed attempt (the backend's prompts), where best-of-B at the same budget never gets it."""

from __future__ import annotations

import asyncio

import pytest

from agentic_infer.engines.registry import EngineParts, build_engine
from agentic_infer.errors import ConfigError
from agentic_infer.tasks import get_task
from agentic_infer.testing import FakeLLM
from agentic_infer.types import Step, Trajectory
from agentic_infer.verify import score
from synth.evolve import LLMAnalyst, best_of, evolve, recombination, refinement, revision, summarize

PUZZLE = {"id": "game24-x", "question": "4 6 1 1", "gold": ["24"]}
TASK = get_task("game24")


def verify(example, traj) -> float:
    return score("game24_valid", traj.answer, example["gold"], text=traj.completion_text, example=example)


def policy(prompt: str) -> str:
    """Wrong (4+6+1+1 = 12) until a note says an earlier answer was wrong; then right."""
    if "which is wrong" in prompt:
        return "4*6 = 24 and 1*1 = 1. \\boxed{4*6*1*1}"
    return "Add them: \\boxed{4+6+1+1}"


def engine_factory(llm):
    return lambda seed: build_engine("cot", EngineParts(llm=llm, task=TASK))


async def test_guidance_from_the_operators_conditions_the_next_real_attempt():
    llm = FakeLLM(policy)
    result = await evolve(PUZZLE, engine_factory(llm), verify, budget=6, pool=2)
    assert result.solved and result.used == 3  # two samples, then one revision
    ops = [t.metadata["lineage"]["operator"] for t in result.attempts]
    assert ops == ["sample", "sample", "revision"]
    revised = result.attempts[-1]
    guidance = revised.metadata["lineage"]["guidance"]
    assert "'4+6+1+1', which is wrong" in guidance and guidance in llm.prompts[-1]  # the backend saw it
    assert all("earlier attempts" not in p for p in llm.prompts[:2])
    assert revised.metadata["lineage"]["parents"] == [result.attempts[0].id]  # the pool keeps one per answer
    assert [t.rewards["verdict"] for t in result.attempts] == [0.0, 0.0, 1.0]
    baseline = await best_of(PUZZLE, engine_factory(FakeLLM(policy)), verify, budget=6)
    assert not baseline.solved and baseline.used == 6  # the same budget without guidance


async def test_the_operators_take_turns_until_the_budget_is_spent():
    llm = FakeLLM(lambda p: "\\boxed{4+6+1+1}")
    result = await evolve(PUZZLE, engine_factory(llm), verify, budget=6, pool=2)
    assert not result.solved and result.used == 6 and len(llm.prompts) == 6
    assert [t.metadata["lineage"]["operator"] for t in result.attempts] == [
        "sample", "sample", "revision", "refinement", "refinement", "revision"]  # one answer: nothing to recombine


async def test_an_llm_analysis_of_a_failed_attempt_reaches_the_next_attempt():
    """The optional LLM summariser: its analysis of each failed attempt is quoted in the operator's guidance, and
    only that analysis (not the template) holds what the policy needs."""
    def needs_the_hint(prompt: str) -> str:
        return "\\boxed{4*6*1*1}" if "multiply" in prompt else "\\boxed{4+6+1+1}"

    judge = FakeLLM(lambda p: "It added all four numbers;\n multiply 4 by 6 and keep the ones.")
    llm = FakeLLM(needs_the_hint)
    result = await evolve(PUZZLE, engine_factory(llm), verify, budget=4, pool=2, analyst=LLMAnalyst(judge))
    assert result.solved and result.used == 3 and result.analyses == 2  # the solved attempt is not analysed
    assert "Question: 4 6 1 1" in judge.prompts[0] and "Its final answer: 4+6+1+1" in judge.prompts[0]
    assert "wrong answer" in judge.prompts[0] and judge.params[0].temperature == 0.0
    assert result.attempts[0].metadata["analysis"] == "It added all four numbers; multiply 4 by 6 and keep the ones."
    assert "Analysis of that attempt: It added" in llm.prompts[-1]  # the policy's backend saw it
    plain = await evolve(PUZZLE, engine_factory(FakeLLM(needs_the_hint)), verify, budget=4, pool=2)
    assert not plain.solved and plain.analyses == 0


def test_the_analyser_names_the_failure_mode():
    def traj(answer, finish="answer", steps=()):
        t = Trajectory(answer=answer, steps=list(steps))
        t.finish(finish)
        return t

    search = Step(action="search", arguments={"query": "q"}, metadata={"doc_ids": ["d1"]})
    assert summarize(traj("x"), verdict=1.0).failure == "correct"
    assert summarize(traj(None, "length"), verdict=0.0).failure == "unfinished"
    assert summarize(traj(""), verdict=0.0).failure == "no_answer"
    assert summarize(traj("x", steps=[search, search]), verdict=0.0).failure == "repeated_action"
    assert summarize(traj("x", steps=[Step(action="search", error="boom")]), verdict=0.0).failure == "tool_error"
    assert summarize(traj("x"), verdict=0.0, tools_expected=True).failure == "no_tool_call"
    s = summarize(traj("x", steps=[search]), verdict=0.0)
    assert (s.failure, s.queries, s.documents, s.tools) == ("wrong_answer", ["q"], ["d1"], {"search": 1})


def test_operators_write_guidance_from_the_summaries():
    def make(answer, failure="wrong_answer", verdict=0.0, queries=(), docs=()):
        t = Trajectory(answer=answer, steps=[Step(action="search", arguments={"query": q},
                                                  metadata={"doc_ids": list(docs)}) for q in queries])
        t.finish("answer")
        s = summarize(t, verdict=verdict)
        s.failure = failure
        return s

    a, b = make("Lyon", queries=["capital of France"], docs=["d1"]), make("Nice", queries=["French capital"])
    assert "'Lyon', which is wrong" in revision(a) and "'capital of France'" in revision(a)
    assert "Never repeat a call" in revision(make("x", "repeated_action"))
    both = recombination(a, b)
    assert "'capital of France'" in both and "'French capital'" not in both and "'Lyon', 'Nice'" in both
    kept, guidance = refinement([a, make("Lyon", verdict=0.5), b], 2)
    assert [(s.answer, s.verdict) for s in kept] == [("Lyon", 0.5), ("Nice", 0.0)] and "'Lyon'" in guidance
    with pytest.raises(ConfigError, match="budget=0"):
        asyncio.run(evolve(PUZZLE, engine_factory(FakeLLM()), verify, budget=0))
