"""A tree search's Rollout records every LLM call: each completion FakeLLM produced appears exactly once
(the chosen path's calls in trajectories[0], every other call as its own trajectory), the chosen path's
model segments carry the sampled ids and logprobs, and the node table's call ids all resolve."""

from __future__ import annotations

from collections import Counter

import pytest
from tree_fakes import Game24Policy, Game24RAPPolicy

from agentic_infer.engines.tree import LATS, RAP, Game24LATSEnv, Game24RAPTask, call_trajectories
from agentic_infer.testing import FakeLLM
from agentic_infer.types import Rollout

PUZZLE = {"id": "p1", "question": "1 1 4 6"}


def lats(llm):
    return LATS(llm, lambda ex: Game24LATSEnv(ex["question"]), iterations=12, n_children=3, sampling={"seed": 0})


def rap(llm):
    return RAP(llm, lambda ex: Game24RAPTask(ex["question"]), iterations=10, n_actions=3)


ENGINES = [pytest.param(lats, Game24Policy, id="lats"), pytest.param(rap, Game24RAPPolicy, id="rap")]


async def _run(make, policy) -> tuple[Rollout, FakeLLM]:
    llm = FakeLLM(policy())
    rollout = await make(llm).run(PUZZLE)
    return Rollout.from_json(rollout.to_json()), llm  # what a JSONL reader gets back


def _calls(rollout: Rollout) -> list[tuple[str, str]]:
    """(prompt text, sampled text) of every recorded completion, the chosen path's included."""
    out = []
    for t in rollout.trajectories:
        for i, s in enumerate(t.segments):
            if s.kind == "model":
                assert t.segments[i - 1].kind == "prompt"
                out.append((t.segments[i - 1].text, s.text))
    return out


@pytest.mark.parametrize("make, policy", ENGINES)
async def test_every_llm_call_appears_exactly_once(make, policy):
    rollout, llm = await _run(make, policy)
    calls = _calls(rollout)
    assert len(calls) == len(llm.prompts) > 10  # FakeLLM records one prompt per sampled completion
    assert Counter(p for p, _ in calls) == Counter(llm.prompts)
    spent = rollout.metadata["tree"]["budget"]["spent"]
    assert rollout.usage.llm_calls == spent["llm_calls"] == len({t.metadata["call_group"]
                                                                 for t in rollout.trajectories[1:]} | {
        s.metadata["call_group"] for s in rollout.trajectories[0].segments})
    assert sum(t.usage.prompt_tokens for t in rollout.trajectories) == spent["prompt_tokens"]
    assert sum(t.usage.completion_tokens for t in rollout.trajectories) == spent["completion_tokens"]
    for t in rollout.trajectories[1:]:
        assert [s.kind for s in t.segments] == ["prompt", "model"] and t.token_exact
        assert t.metadata["purpose"] in ("action", "value", "reflection", "world_model", "self_eval")
        assert t.finish_reason in ("answer", "length") and t.group_id == "p1" and t.engine == rollout.engine


@pytest.mark.parametrize("make, policy", ENGINES)
async def test_chosen_path_model_segments_carry_ids_and_logprobs(make, policy):
    rollout, llm = await _run(make, policy)
    path = rollout.trajectories[0]
    assert rollout.rewards["correct"] == 1.0 and path.finish_reason == "answer" and path.answer
    assert [s.action for s in path.steps] == rollout.metadata["tree"]["actions"] and len(path.steps) >= 2
    assert [s.kind for s in path.segments] == ["prompt", "model"] * len(path.steps)
    for step in path.steps:
        prompt, model = path.segments[step.segment - 1], path.segments[step.segment]
        assert model.kind == "model" and step.metadata["call"] == model.metadata["call"]
        assert prompt.token_ids == llm.tokenizer.encode(prompt.text) and prompt.text in llm.prompts
        assert model.token_ids == llm.tokenizer.encode(model.text) and model.token_ids
        assert [lp.token_id for lp in model.logprobs] == model.token_ids
        assert all(lp.logprob < 0 for lp in model.logprobs)
        assert model.metadata["purpose"] == "action"
        start, end = path.token_span(step.segment)
        assert path.token_ids()[start:end] == model.token_ids
        assert step.action in model.text or model.text.strip().startswith(step.action.split()[0])
    assert not path.token_exact  # each step conditioned on its own prompt, not on the concatenation


@pytest.mark.parametrize("make, policy", ENGINES)
async def test_node_table_call_ids_resolve_to_trajectories(make, policy):
    rollout, _ = await _run(make, policy)
    calls = call_trajectories(rollout)
    nodes = rollout.metadata["tree"]["nodes"]
    listed = [c for n in nodes for c in n["calls"]]
    assert listed and all(c in calls for c in listed)
    assert len(listed) == len(set(listed)) == len(calls)  # every call belongs to exactly one node
    for n in nodes:
        for c in n["calls"]:
            t = calls[c]
            node = t.metadata["node"] if t is not rollout.trajectories[0] else next(
                s.metadata["node"] for s in t.segments if s.metadata.get("call") == c)
            assert node == n["id"]
    on_path = {s.metadata["call"] for s in rollout.trajectories[0].segments}
    assert on_path and on_path <= set(listed)
    assert calls[next(iter(on_path))] is rollout.trajectories[0]
