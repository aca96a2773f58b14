"""`agentic train grpo` with default settings rewards a correct boxed rollout: the reward functions
`train.grpo.run` builds from `GRPOSettings()`, called the way TRL 1.16 calls them, on the output of our
`rollout_func` (real Search-o1 episodes, the default engine, whose answers are `\\boxed{}`)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("trl")


def test_default_grpo_rewards_a_correct_boxed_rollout(tmp_path):
    from agentic_infer.testing import ByteTokenizer, FakeLLM
    from agentic_infer.tools.retrieval.base import Document
    from agentic_infer.tools.retrieval.index import build_index
    from train.grpo.config import GRPOSettings
    from train.grpo.rollout import RolloutFunc
    from train.grpo.run import engine_factory, reward_function

    build_index([Document(id="d0", title="Paris", text="Paris is the capital of France.")], out=tmp_path / "idx",
                kind="bm25")
    defaults = GRPOSettings()
    engine = engine_factory(GRPOSettings(index=str(tmp_path / "idx")))  # the default engine over a small index
    rollout_func = RolloutFunc(engine, tokenizer=SimpleNamespace(eos_token_id=0), append_eos=defaults.append_eos,
                               max_completion_length=defaults.max_completion_length, seed=defaults.seed,
                               llm_factory=lambda _trainer: FakeLLM(["So the capital is \\boxed{Paris}.",
                                                                     "I think it is \\boxed{Rome}."]))
    question = "What is the capital of France?"
    prompts = [question, question]
    out = rollout_func(prompts)
    assert [t.answer for t in out["trajectory"]] == ["Paris", "Rome"]  # real trajectories, engine-extracted answers

    # TRL's _calculate_rewards: dataset columns and rollout_func's extra fields, one entry per completion
    extra = {k: v for k, v in out.items() if k not in ("prompt_ids", "completion_ids", "logprobs", "env_mask")}
    completions = [ByteTokenizer().decode([i for i in ids if i != 0]) for ids in out["completion_ids"]]
    [reward] = [reward_function(defaults)]
    got = reward(prompts=prompts, completions=completions, completion_ids=out["completion_ids"],
                 answer=["Paris", "Paris"], **extra, trainer_state=None, log_extra=None, log_metric=None)
    assert got == [1.0, 0.0]
