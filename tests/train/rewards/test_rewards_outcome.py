"""Outcome rewards (via verify), the LLM-judge reward, and the TRL / verl adapters."""

import json

import pytest

from agentic_infer.types import Step, Trajectory
from agentic_infer.verify import Verdict
from train.rewards import (
    RewardInput,
    cover_em_reward,
    em_reward,
    f1_reward,
    judge_reward,
    math_reward,
    trl_reward,
    verl_compute_score,
)


def test_metric_rewards_extract_in_the_dialects_format():
    assert em_reward(RewardInput("x <answer>Paris</answer>", gold=["paris", "City of Paris"])) == 1.0
    assert em_reward(RewardInput("Paris", gold="Paris")) == 0.0             # no <answer>: no answer
    assert em_reward(RewardInput("Paris", gold="Paris"), answer_format=None) == 1.0
    assert f1_reward(RewardInput("<answer>the city of Paris</answer>", gold="Paris city")) == pytest.approx(0.8)
    assert cover_em_reward(RewardInput("<answer>it is Paris, France</answer>", gold="Paris")) == 1.0
    assert math_reward(RewardInput(r"so \boxed{\frac{1}{2}}", gold="0.5")) == 1.0
    assert math_reward(RewardInput(r"so \boxed{3}", gold="0.5")) == 0.0


class FakeJudge:
    def __init__(self):
        self.seen = []

    async def score(self, question, prediction, reference=None):
        self.seen.append((question, prediction, reference))
        return Verdict("CORRECT" if prediction == "yes" else "INCORRECT", 1.0)


def test_judge_reward_is_0_1_and_skips_missing_answers():
    j = FakeJudge()
    r = judge_reward(j)
    assert r(RewardInput("<answer>yes</answer>", gold="y", question="q?")) == 1.0
    assert r(RewardInput("<answer>no</answer>", gold=["a", "b"], question="q?")) == 0.0
    assert r(RewardInput("nothing", gold="y")) == 0.0
    assert j.seen == [("q?", "yes", "y"), ("q?", "no", "a | b")]


async def test_judge_reward_inside_a_running_loop():
    assert judge_reward(FakeJudge())(RewardInput("<answer>yes</answer>", gold="y")) == 1.0


def test_trl_adapter_reads_gold_trajectory_and_messages():
    traj = Trajectory(steps=[Step("search")])
    seen = []

    def probe(inp, *, bonus):
        seen.append(inp)
        return em_reward(inp) + bonus

    fn = trl_reward(probe, bonus=0.5)
    assert fn.__name__ == "probe"
    turns = [{"role": "assistant", "content": "<answer>Paris</answer>"}, {"role": "tool", "content": "no"},
             {"role": "assistant", "content": "<answer>Rome</answer>"}]  # scored on the last assistant turn
    out = fn(["<answer>Paris</answer>", turns],
             prompts=["q1", "q2"], answer=["Paris", "Paris"], trajectory=[traj.to_json(), None])
    assert out == [1.5, 0.5]
    assert seen[0].trajectory.steps[0].action == "search" and seen[0].question == "q1" and seen[1].trajectory is None
    assert trl_reward(em_reward)(["<answer>a</answer>"], gold=["a"]) == [1.0]


def test_verl_compute_score():
    cs = verl_compute_score(em_reward)
    assert cs("hotpotqa", "<answer>Paris</answer>", ["Paris"], {"trajectory": json.loads(Trajectory().to_json())}) == 1.0
    assert cs("hotpotqa", "<answer>Rome</answer>", "Paris") == 0.0
