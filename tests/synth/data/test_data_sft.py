"""Rejection sampling for cold-start SFT (synth/sft.py): k samples, keep the judged-correct, most confident first."""

from __future__ import annotations

import asyncio

from agentic_infer.engines.direct import Direct
from agentic_infer.engines.group import Group
from agentic_infer.tasks import get_task
from agentic_infer.testing import FakeLLM
from synth.sft import mean_logprob, rejection_sample, select_sft
from tests.conftest import shared_data


def _engine(gold: str) -> Group:
    # sample j: (answer, logprob of every token); 0 correct/less sure, 1 wrong/sure, 2 correct/sure, 3 unfinished
    script = {0: (gold, -0.5), 1: ("Atlantis", -0.05), 2: (gold, -0.2), 3: (gold, -0.01)}

    def make(seed: int) -> Direct:
        answer, lp = script[seed]
        text = f"\\boxed{{{answer}}}" + (" and more" * 40 if seed == 3 else "")
        llm = FakeLLM(reply=text, logprob_fn=lambda i, t, lp=lp: lp)
        from agentic_infer.types import SamplingParams

        return Direct(llm, sampling=SamplingParams(max_tokens=40 if seed == 3 else 400, temperature=0.0, logprobs=0))

    return Group.seeded(make, k=4, seed=0)


def test_rejection_sampling_keeps_the_most_confident_correct_sample():
    examples = get_task("hotpotqa").load(shared_data("multihop/hotpotqa_train_100.json"), limit=2)
    engine = _engine(examples[0]["gold"][0])
    result = asyncio.run(rejection_sample(engine, examples[:1], metric="em", per_question=1))
    [kept] = result.trajectories
    assert kept.rewards["em"] == 1.0 and abs(mean_logprob(kept) - (-0.2)) < 1e-9
    assert kept.group_id == examples[0]["id"] and kept.metadata["sft_rank"] == 0
    assert result.stats["dropped"] == {"incorrect:em": 1, "unfinished:length": 1, "not_most_confident": 1}
    assert kept.sft_row()["input_ids"] == kept.token_ids()  # ready for SFT: the sampled ids


def test_select_sft_per_question_and_missing_verdicts():
    examples = get_task("hotpotqa").load(shared_data("multihop/hotpotqa_train_100.json"), limit=1)
    result = asyncio.run(rejection_sample(_engine(examples[0]["gold"][0]), examples, per_question=2))
    assert len(result.trajectories) == 2
    assert [mean_logprob(t) for t in result.trajectories] == sorted((mean_logprob(t) for t in result.trajectories),
                                                                    reverse=True)
    t = result.trajectories[0]
    t.rewards.clear()
    kept, dropped = select_sft([[t]])
    assert kept == [] and dropped[0][1] == "unjudged:em"
