"""LATS and RAP end to end with the embedded model (SmolLM2-135M via llama.cpp): the search runs,
counts what it spends, records judge-only feedback and every call token-exact (prompt ids as sent,
sampled ids and logprobs), and real logprobs feed RAP's rewards. A model this small rarely solves
Game of 24; whether it does is not asserted (see bench/tree_search.py), but the reward must be the checker's
verdict on the answer it gave."""

import pytest
from tree_fakes import searched

from agentic_infer.config import build_config
from agentic_infer.engines.tree import LATS, RAP, Budget, Game24LATSEnv, LATSOptions
from agentic_infer.engines.tree.rap import RAPOptions
from agentic_infer.engines.tree.rap_tasks import GSM8KTask
from agentic_infer.verify import check_24

PUZZLE = {"question": "1 1 4 6"}


@pytest.mark.slow
async def test_lats_real_model_short_run(embedded_llm, tmp_path):
    options = build_config(LATSOptions, overrides=["sampling.seed=0", "sampling.max_tokens=16", "value_max_tokens=24",
                                                   "reflection_max_tokens=32"])
    engine = LATS(embedded_llm, lambda ex: Game24LATSEnv(ex["question"]), options, n_children=2, depth_limit=3,
                  budget=Budget(iterations=3, llm_calls=4))
    res, tree = await searched(engine, PUZZLE)
    tree.save(tmp_path / "t.json")
    info = res.metadata["tree"]
    spent = info["budget"]["spent"]
    assert info["feedback"] == "judge" and spent["completion_tokens"] > 0
    # the call budget binds (unbudgeted, these 3 iterations take 6 calls) and holds, give or take one call
    assert info["stop_reason"] == "budget llm_calls exhausted" and 4 <= spent["llm_calls"] <= 4 + 1
    assert tree.root.visits == spent["iterations"] >= 1
    assert len(tree.nodes) >= 2 and (tmp_path / "t.json").exists()
    if info["node"] is None:  # no terminal was scored: no answer, no verdict
        assert res.answer is None and res.rewards == {}
    else:  # the verdict is the checker's on the answer given, whatever the model managed
        assert res.rewards == {"correct": float(check_24(res.answer or "", "1 1 4 6"))}, res.answer
    calls = res.trajectories[1:]
    assert calls and all(t.token_exact and t.segments[0].token_ids and t.segments[1].logprobs for t in calls)
    assert sum(len(t.segments[1].token_ids) for t in res.trajectories[1:]) + sum(
        len(s.token_ids) for s in res.trajectories[0].segments if s.kind == "model") == spent["completion_tokens"]


@pytest.mark.slow
async def test_rap_real_model_uses_logprobs(embedded_llm):
    # GSM8K: a free-text sub-question always parses, so the 135M model's proposals become children
    # (on Game of 24 it rarely writes a parseable operation, which left nothing to check)
    engine = RAP(embedded_llm, lambda ex: GSM8KTask(ex["question"]), build_config(RAPOptions, overrides={
        "sampling": {"seed": 0, "max_tokens": 12}, "world_samples": 2, "world_max_tokens": 24}), n_actions=2, depth_limit=2,
        budget=Budget(iterations=1, llm_calls=10))
    question = "Tom has 3 apples and buys 4 more. How many apples does he have?"
    res, tree = await searched(engine, {"question": question})
    kids = [n for n in tree.nodes if n.parent is not None]
    assert res.metadata["tree"]["budget"]["spent"]["llm_calls"] >= 1
    assert kids and all(n.details["likelihood_source"] == "logprobs" for n in kids)
    evaluated = [n for n in kids if "evaluation" in n.details]
    assert evaluated and all(0.0 <= n.reward <= 1.0 for n in evaluated)
