"""`Direct` (one generation), `Group` (k samples as one Rollout) and Search-o1's native `first_query`."""

from __future__ import annotations

import pytest

from agentic_infer.engines.direct import COT_PROMPT, Direct
from agentic_infer.engines.group import Group
from agentic_infer.engines.search_o1 import SearchO1
from agentic_infer.errors import ConfigError
from agentic_infer.runner import run_many
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.bm25 import BM25Index
from agentic_infer.types import Rollout, SamplingParams


async def test_direct_records_a_token_exact_trajectory():
    llm = FakeLLM(reply="Six times seven. \\boxed{42}")
    rollout = await Direct(llm, prompt=COT_PROMPT, name="cot").run({"id": "a", "question": "What is 6*7?"})
    traj = rollout.trajectory
    assert rollout.answer == traj.answer == "42" and rollout.engine == traj.engine == "cot"
    assert [s.kind for s in traj.segments] == ["prompt", "model"] and traj.token_exact
    assert traj.token_ids() == llm.prompt_ids[0] + llm.tokenizer.encode("Six times seven. \\boxed{42}")
    assert "Please reason step by step" in llm.prompts[0] and traj.finish_reason == "answer"
    assert traj.usage.llm_calls == 1 and traj.usage.prompt_tokens == len(llm.prompt_ids[0])
    assert traj.segments[0].metadata["messages"][0]["content"].startswith("What is 6*7?")
    with pytest.raises(ConfigError, match="no \\{question\\} field"):
        Direct(llm, prompt="Answer:")
    with pytest.raises(ConfigError, match="has no 'question'"):
        await Direct(llm).run({"id": "b"})


async def test_group_holds_every_sample_and_splits_back():
    seeds = []

    def make(seed: int) -> Direct:
        seeds.append(seed)
        return Direct(FakeLLM(reply=f"\\boxed{{{seed}}}"), sampling=SamplingParams(max_tokens=16, seed=seed))

    group = Group.seeded(make, 3, seed=10)
    [rollout] = await run_many(group, [{"id": "q", "question": "pick"}], progress=False)
    assert seeds == [10, 11, 12] and rollout.answer == "10" and rollout.chosen == 0
    assert [t.answer for t in rollout.trajectories] == ["10", "11", "12"]
    assert {t.group_id for t in rollout.trajectories} == {"q"}
    assert rollout.usage.llm_calls == 3 == sum(t.usage.llm_calls for t in rollout.trajectories)
    assert [s["answer"] for s in rollout.metadata["samples"]] == ["10", "11", "12"]
    back = Rollout.from_json(rollout.to_json())  # splits the same after a JSON round trip
    parts = Group.split(back)
    assert [p.answer for p in parts] == ["10", "11", "12"]
    assert [p.trajectory.id for p in parts] == [t.id for t in rollout.trajectories]
    assert [p.usage.llm_calls for p in parts] == [1, 1, 1]
    assert Group.split(parts[0]) == [parts[0]]  # a plain rollout is its own only sample
    with pytest.raises(ConfigError, match="k=0"):
        Group.seeded(make, 0)


async def test_first_query_searches_the_question_without_an_llm_call():
    index = BM25Index.from_documents([Document(id="d1", title="Rush", text="Rush recorded song 3.")])
    llm = FakeLLM(lambda p: "**Final Information**\nRush." if "**Searched Documents:**" in p
                  else "The answer is \\boxed{Rush}")
    rollout = await SearchO1(llm, index, first_query="question").run({"id": "q", "question": "Who  recorded song 3?"})
    traj = rollout.trajectory
    assert [s.kind for s in traj.segments] == ["prompt", "prompt", "observation", "model"]
    assert traj.segments[1].text == "<|begin_search_query|>Who recorded song 3?<|end_search_query|>"
    assert traj.steps[0].arguments == {"query": "Who recorded song 3?"} and traj.steps[0].observation == "Rush."
    assert traj.usage.llm_calls == len(llm.prompts) == 2  # Reason-in-Documents and the model's one turn
    assert rollout.answer == "Rush" and traj.token_exact and traj.config["first_query"] == "question"
    with pytest.raises(ConfigError, match="first_query='x'"):
        SearchO1(llm, index, first_query="x")
