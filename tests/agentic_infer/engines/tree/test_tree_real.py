"""LATS and RAP end to end with the embedded model (SmolLM2-135M via llama.cpp): the search runs,
counts what it spends, records judge-only feedback and every call token-exact (prompt ids as sent,
sampled ids and logprobs), and real logprobs feed RAP's rewards. A model this small rarely solves
Game of 24; correctness is not asserted here (see bench/tree_search.py)."""

import pytest
from tree_fakes import searched

from agentic_infer.engines.tree import LATS, RAP, Budget, Game24LATSEnv, LATSOptions
from agentic_infer.engines.tree.rap import RAPOptions
from agentic_infer.engines.tree.rap_tasks import Game24RAPTask

PUZZLE = {"question": "1 1 4 6"}


@pytest.mark.slow
async def test_lats_real_model_short_run(embedded_llm, tmp_path):
    options = LATSOptions(seed=0, action_max_tokens=16, value_max_tokens=24, reflection_max_tokens=32)
    engine = LATS(embedded_llm, lambda ex: Game24LATSEnv(ex["question"]), options, n_children=2, depth_limit=3,
                  budget=Budget(iterations=2, llm_calls=12))
    res, tree = await searched(engine, PUZZLE)
    tree.save(tmp_path / "t.json")
    info = res.metadata["tree"]
    spent = info["budget"]["spent"]
    assert info["feedback"] == "judge" and spent["llm_calls"] >= 2 and spent["completion_tokens"] > 0
    assert tree.root.visits == spent["iterations"] >= 1
    assert len(tree.nodes) >= 2 and (tmp_path / "t.json").exists()
    assert res.rewards.get("correct") in (1.0, 0.0, None)
    calls = res.trajectories[1:]
    assert calls and all(t.token_exact and t.segments[0].token_ids and t.segments[1].logprobs for t in calls)
    assert sum(len(t.segments[1].token_ids) for t in res.trajectories[1:]) + sum(
        len(s.token_ids) for s in res.trajectories[0].segments if s.kind == "model") == spent["completion_tokens"]


@pytest.mark.slow
async def test_rap_real_model_uses_logprobs(embedded_llm):
    engine = RAP(embedded_llm, lambda ex: Game24RAPTask(ex["question"]), RAPOptions(
        seed=0, world_samples=2, action_max_tokens=12, world_max_tokens=24), n_actions=2, depth_limit=2,
        budget=Budget(iterations=1, llm_calls=10))
    res, tree = await searched(engine, PUZZLE)
    kids = [n for n in tree.nodes if n.parent is not None]
    assert res.metadata["tree"]["budget"]["spent"]["llm_calls"] >= 1
    if kids:  # the model proposed at least one parseable operation
        assert all(n.details["likelihood_source"] == "logprobs" for n in kids)
        evaluated = [n for n in kids if "evaluation" in n.details]
        assert all(0.0 <= n.reward <= 1.0 for n in evaluated)
