"""LATS and RAP end to end with the embedded model (SmolLM2-135M via llama.cpp): the search runs,
counts what it spends, records judge-only feedback, and real logprobs feed RAP's rewards. A model this
small rarely solves Game of 24; correctness is not asserted here (see bench/tree_search.py)."""

import pytest

from agentic_infer.engines.tree import Budget, Game24LATSEnv, LATSOptions, run_lats
from agentic_infer.engines.tree.rap import RAPOptions, run_rap
from agentic_infer.engines.tree.rap_tasks import Game24RAPTask


@pytest.mark.slow
async def test_lats_real_model_short_run(embedded_llm, tmp_path):
    res = await run_lats(embedded_llm, Game24LATSEnv("1 1 4 6"), n_children=2, depth_limit=3,
                         budget=Budget(iterations=2, llm_calls=12),
                         options=LATSOptions(seed=0, action_max_tokens=16, value_max_tokens=24,
                                             reflection_max_tokens=32),
                         save_tree=tmp_path / "t.json")
    spent = res.budget["spent"]
    assert res.feedback == "judge" and spent["llm_calls"] >= 2 and spent["completion_tokens"] > 0
    assert res.tree.root.visits == spent["iterations"] >= 1
    assert len(res.tree.nodes) >= 2 and (tmp_path / "t.json").exists()
    assert res.correct in (True, False, None)


@pytest.mark.slow
async def test_rap_real_model_uses_logprobs(embedded_llm):
    res = await run_rap(embedded_llm, Game24RAPTask("1 1 4 6"), n_actions=2, depth_limit=2,
                        budget=Budget(iterations=1, llm_calls=10),
                        options=RAPOptions(seed=0, world_samples=2, action_max_tokens=12, world_max_tokens=24))
    kids = [n for n in res.tree.nodes if n.parent is not None]
    assert res.budget["spent"]["llm_calls"] >= 1
    if kids:  # the model proposed at least one parseable operation
        assert all(n.details["likelihood_source"] == "logprobs" for n in kids)
        evaluated = [n for n in kids if "evaluation" in n.details]
        assert all(0.0 <= n.reward <= 1.0 for n in evaluated)
