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
    metric_reward,
    trl_reward,
    verl_compute_score,
)


def test_metric_rewards_extract_from_text_without_a_trajectory():
    tag = {"answer_format": "answer_tag"}
    assert em_reward(RewardInput("x \\boxed{Paris}", gold=["paris", "City of Paris"])) == 1.0  # default: boxed
    assert em_reward(RewardInput("x <answer>Paris</answer>", gold="Paris")) == 0.0  # no box: no answer
    assert em_reward(RewardInput("x <answer>Paris</answer>", gold=["paris", "City of Paris"]), **tag) == 1.0
    assert em_reward(RewardInput("Paris", gold="Paris"), answer_format=None) == 1.0
    assert f1_reward(RewardInput("<answer>the city of Paris</answer>", gold="Paris city"), **tag) == pytest.approx(0.8)
    assert cover_em_reward(RewardInput("<answer>it is Paris, France</answer>", gold="Paris"), **tag) == 1.0
    assert math_reward(RewardInput(r"so \boxed{\frac{1}{2}}", gold="0.5")) == 1.0
    assert math_reward(RewardInput(r"so \boxed{3}", gold="0.5")) == 0.0


class FakeJudge:
    def __init__(self):
        self.seen = []

    async def score(self, question, prediction, reference=None):
        self.seen.append((question, prediction, reference))
        return Verdict("CORRECT" if prediction == "yes" else "INCORRECT", 1.0)


def test_metric_rewards_read_the_trajectory_first():
    """A recorded verdict, then the engine's answer; the completion text is not re-parsed."""
    traj = Trajectory(answer="Paris")
    assert em_reward(RewardInput("<answer>Rome</answer> \\boxed{Rome}", gold="Paris", trajectory=traj)) == 1.0
    assert em_reward(RewardInput("\\boxed{Paris}", gold="Paris", trajectory=Trajectory(answer=None))) == 0.0
    judged = Trajectory(answer="Rome", rewards={"em": 1.0, "f1": 0.25})
    assert em_reward(RewardInput("", gold="Paris", trajectory=judged)) == 1.0  # the judge step's verdict
    assert f1_reward(RewardInput("", trajectory=judged)) == 0.25  # no gold needed for a recorded verdict
    assert metric_reward(RewardInput("so \\boxed{\\text{Paris}}", gold=["Paris"], trajectory=Trajectory(answer="x")),
                         metric="search_o1_em") == 1.0  # a published variant reads the text, as in eval


def test_judge_reward_is_0_1_and_skips_missing_answers():
    j = FakeJudge()
    r = judge_reward(j, answer_format="answer_tag")
    assert r(RewardInput("<answer>yes</answer>", gold="y", question="q?")) == 1.0
    assert r(RewardInput("<answer>no</answer>", gold=["a", "b"], question="q?")) == 0.0
    assert r(RewardInput("nothing", gold="y")) == 0.0
    assert j.seen == [("q?", "yes", "y"), ("q?", "no", ["a", "b"])]  # every alias in one call
    assert judge_reward(j)(RewardInput("", gold="y", trajectory=Trajectory(answer="yes"))) == 1.0
    judged = Trajectory(answer="yes", rewards={"judge_acc": 0.0})
    assert judge_reward(j)(RewardInput("", gold="y", trajectory=judged)) == 0.0
    assert len(j.seen) == 3  # the recorded verdict made no call


async def test_judge_reward_inside_a_running_loop():
    assert judge_reward(FakeJudge())(RewardInput("\\boxed{yes}", gold="y")) == 1.0


def test_trl_adapter_reads_gold_trajectory_and_messages():
    traj = Trajectory(steps=[Step("search")], answer="Paris")
    seen = []

    def probe(inp, *, bonus):
        seen.append(inp)
        return em_reward(inp, answer_format="answer_tag") + bonus

    fn = trl_reward(probe, bonus=0.5)
    assert fn.__name__ == "probe"
    turns = [{"role": "assistant", "content": "<answer>Paris</answer>"}, {"role": "tool", "content": "no"},
             {"role": "assistant", "content": "<answer>Rome</answer>"}]  # scored on the last assistant turn
    out = fn(["<answer>Paris</answer>", turns],
             prompts=["q1", "q2"], answer=["Paris", "Paris"], trajectory=[traj.to_json(), None])
    assert out == [1.5, 0.5]
    assert seen[0].trajectory.steps[0].action == "search" and seen[0].question == "q1" and seen[1].trajectory is None
    assert trl_reward(em_reward, answer_format="answer_tag")(["<answer>a</answer>"], gold=["a"]) == [1.0]


def test_verl_compute_score():
    cs = verl_compute_score(em_reward)
    traj = json.loads(Trajectory(answer="Paris").to_json())
    assert cs("hotpotqa", "<answer>Paris</answer>", ["Paris"], {"trajectory": traj}) == 1.0
    assert cs("hotpotqa", "\\boxed{Rome}", "Paris") == 0.0 and cs("hotpotqa", "\\boxed{Paris}", "Paris") == 1.0
