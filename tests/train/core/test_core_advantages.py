"""GRPO / Dr. GRPO / batch std / RLOO, GiGPO grouping and combination, ARPO attribution, AEPO scaling:
hand-computed cases."""

import math

import pytest
import torch

from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout, Step, TokenLogprob, Trajectory
from train.core.advantages import (
    anchor_groups,
    arpo_token_advantages,
    attribute,
    discounted_returns,
    entropy_aware_advantages,
    gigpo_advantages,
    gigpo_token_advantages,
    grpo_advantages,
    rloo_advantages,
    shared_prefix_lengths,
    zero_std_share,
)

R = [1.0, 0.0, 1.0, 1.0]
G = ["a", "a", "b", "b"]
S = 1 / math.sqrt(2)  # 0.5 / unbiased std of (1, 0)


def test_grpo_group_std():
    assert grpo_advantages(R, group_ids=G).tolist() == pytest.approx([S, -S, 0, 0], abs=1e-3)


def test_dr_grpo_drops_std_and_batch_std():
    assert grpo_advantages(R, group_ids=G, scale="none").tolist() == pytest.approx([0.5, -0.5, 0, 0])
    # batch std of (1, 0, 1, 1) (unbiased) = 0.5
    assert grpo_advantages(R, group_size=2, scale="batch").tolist() == pytest.approx([1, -1, 0, 0], abs=1e-3)


def test_rloo():
    assert rloo_advantages(R, group_ids=G).tolist() == pytest.approx([1, -1, 0, 0])
    assert rloo_advantages([3, 0, 0], group_size=3).tolist() == pytest.approx([3, -1.5, -1.5])
    assert rloo_advantages([5.0], group_size=1).tolist() == [0.0]


def test_zero_std_share_and_errors():
    assert zero_std_share(R, group_ids=G) == 0.5
    with pytest.raises(ConfigError):
        grpo_advantages(R, group_size=3)
    with pytest.raises(ConfigError):
        grpo_advantages([1.0, float("nan")], group_size=2)


def test_discounted_returns():
    assert discounted_returns([0, 0, 1], 0.95) == pytest.approx([0.9025, 0.95, 1.0])
    assert discounted_returns([1, 1], 0.5) == pytest.approx([1.5, 1.0])


def test_anchor_groups_exact_and_similar():
    a, b = "abcdefghijklmnopqrst", "abcdefghijklmnopqrsX"  # SequenceMatcher ratio 2*19/40 = 0.95
    assert anchor_groups([a, b, a, None, None]) == [0, 1, 0, 2, 3]
    assert anchor_groups([a, b, "zzz"], similarity_threshold=0.95) == [0, 0, 1]
    assert anchor_groups([a, b], similarity_threshold=0.96) == [0, 1]


def test_gigpo_combination_hand_computed():
    # T1: s0 -> s1, reward 1 at the end; T2: s0 -> s2, nothing. gamma 0.95: returns [0.95, 1], [0, 0]
    res = gigpo_advantages([1.0, 0.0], [[0.0, 1.0], [0.0, 0.0]], [["s0", "s1"], ["s0", "s2"]])
    assert res.returns == [pytest.approx([0.95, 1.0]), [0.0, 0.0]]
    assert res.groups == [[0, 1], [0, 2]]
    # default mean_norm: episode rows (two turns each) 1, 1, 0, 0 -> mean 0.5
    assert res.episode == pytest.approx([0.5, -0.5])
    # step group s0: returns 0.95, 0 -> mean 0.475; s1, s2 alone -> 0
    assert res.step[0] == pytest.approx([0.475, 0.0]) and res.step[1] == pytest.approx([-0.475, 0.0])
    assert res.combined[0] == pytest.approx([0.975, 0.5]) and res.combined[1] == pytest.approx([-0.975, -0.5])
    half = gigpo_advantages([1.0, 0.0], [[0.0, 1.0], [0.0, 0.0]], [["s0", "s1"], ["s0", "s2"]], omega=0.5)
    assert half.combined[0] == pytest.approx([0.5 + 0.2375, 0.5])
    # mean_std_norm: the episode std over the four rows 1, 1, 0, 0 is sqrt(1/3) (unbiased), not the std of
    # the two trajectories (1/sqrt 2): A^E = 0.5 / 0.57735 = 0.86603; step group s0: std 0.95/sqrt 2 = 0.67175,
    # A^S = 0.475 / 0.67175 = 0.70711
    std = gigpo_advantages([1.0, 0.0], [[0.0, 1.0], [0.0, 0.0]], [["s0", "s1"], ["s0", "s2"]], scale="group")
    assert std.episode == pytest.approx([0.86603, -0.86603], abs=1e-4)
    assert std.combined[0] == pytest.approx([0.86603 + 0.70711, 0.86603], abs=1e-4)


def test_gigpo_episode_mean_across_steps_and_singletons():
    # T1 three turns with reward 1, T2 one turn with 0: rows 1, 1, 1, 0 -> mean 0.75 (verl-agent's cross-step
    # mean); per trajectory the mean is 0.5
    steps = [[0.0, 0.0, 1.0], [0.0]]
    states = [["a", "b", "c"], ["a"]]
    assert gigpo_advantages([1.0, 0.0], steps, states).episode == pytest.approx([0.25, -0.75])
    assert gigpo_advantages([1.0, 0.0], steps, states, episode_mean="trajectories").episode == pytest.approx(
        [0.5, -0.5])
    assert gigpo_advantages([1.0, 0.0], steps, states, turns=[1, 3]).episode == pytest.approx([0.75, -0.25])
    # a group of a single row keeps its raw score (mean 0, std 1), in both modes
    assert gigpo_advantages([0.7], [[0.7]], [["a"]]).episode == pytest.approx([0.7])
    assert gigpo_advantages([0.7], [[0.7]], [["a"]], scale="group").episode == pytest.approx([0.7], abs=1e-5)
    # ... but one trajectory of two turns is two rows: its own mean, 0
    assert gigpo_advantages([0.7], [[0.0, 0.7]], [["a", "b"]]).episode == pytest.approx([0.0])
    with pytest.raises(ConfigError, match="mean_norm"):
        gigpo_advantages([1.0], [[1.0]], [["a"]], scale="batch")
    with pytest.raises(ConfigError, match="turns"):
        gigpo_advantages([1.0, 0.0], steps, states, turns=[0, 1])


def test_anchor_states_are_texts_that_similarity_can_compare():
    """The loop's anchor is the state's text (question + actions so far), so similar states group."""
    from agentic_infer.engines.loop import Episode

    ep = Episode(example={"question": "Who wrote Hamlet?"}, prompt="p", trajectory=Trajectory())
    ep.executed = [("search", "Hamlet author")]
    other = Episode(example={"question": "Who wrote Hamlet?"}, prompt="p", trajectory=Trajectory())
    other.executed = [("search", "Hamlet authors")]
    a, b = ep.state_key(), other.state_key()
    assert "Hamlet author" in a and a != b
    assert anchor_groups([a, b], similarity_threshold=0.95) == [0, 0] and anchor_groups([a, b]) == [0, 1]


def _lp(ids):
    return [TokenLogprob(i, str(i), -0.1) for i in ids]


def _traj(model_ids, reward, states, **kw):
    t = Trajectory(token_exact=True, **kw)
    t.add("prompt", "p", token_ids=[1, 2])
    for k, ids in enumerate(model_ids):
        if k:
            t.add("observation", "o", token_ids=[9])
        t.add("model", "m", token_ids=ids, logprobs=_lp(ids))
    t.steps = [Step("search", state=s, segment=1 + 2 * k) for k, s in enumerate(states)]
    t.rewards["em"] = reward
    return t


def test_gigpo_token_advantages_per_segment():
    t1 = _traj([[3, 4], [5]], 1.0, ["s0"])          # step on the first model segment; the answer turn has none
    t2 = _traj([[3, 6], [7, 8]], 0.0, ["s0"])
    out = gigpo_token_advantages(Rollout("q", [t1, t2]), reward_key="em", scale="none")
    # episode ±0.5; the outcome lands on each one-step trajectory's step: returns 1 vs 0 at s0 -> ±0.5;
    # step tokens get A^E + A^S = ±1, the answer turn (no step) A^E = ±0.5, the observation 0
    assert out[0] == pytest.approx([1.0, 1.0, 0.0, 0.5])
    assert out[1] == pytest.approx([-1.0, -1.0, 0.0, -0.5, -0.5])


def test_arpo_shared_prefix_lengths_and_hard_attribution():
    # P (10 tokens); C forks from P at 6 (9 tokens); G forks from C at 8 (11 tokens); R a second root (7)
    parent, cut, lengths = [None, 0, 1, None], [None, 6, 8, None], [10, 9, 11, 7]
    S_ = shared_prefix_lengths(parent, cut, lengths)
    assert S_ == [[10, 6, 6, 0], [6, 9, 8, 0], [6, 8, 11, 0], [0, 0, 0, 7]]
    adv = [1.0, 0.0, -1.0, 0.5]
    hard = attribute(adv, S_, lengths, mode="hard")
    assert hard[0] == pytest.approx([0.0] * 6 + [1.0] * 4)
    assert hard[1] == pytest.approx([0.0] * 6 + [-0.5] * 2 + [0.0])
    assert hard[2] == pytest.approx([0.0] * 6 + [-0.5] * 2 + [-1.0] * 3)
    assert hard[3] == pytest.approx([0.5] * 7)
    soft = attribute(adv, S_, lengths, mode="soft")
    assert soft[2] == [-1.0] * 11
    # copies: a token is a copy when a lower-indexed trajectory shares it: C's first 6 (P holds them), G's
    # first 8 (P holds 6, C holds 8), none of P's or R's
    from train.core.advantages.arpo import copies

    cp = copies(S_, lengths)
    assert [sum(row) for row in cp] == [0, 6, 8, 0]
    assert cp[2] == [True] * 8 + [False] * 3


def test_arpo_token_advantages_on_a_branched_rollout():
    p = _traj([[3, 4, 5, 6]], 1.0, [], id="p")
    c = _traj([[3, 4, 7]], 0.0, [], id="c", parent_id="p", branch_token=4)  # shares prompt + [3, 4]
    out = arpo_token_advantages(Rollout("q", [p, c]), [1.0, 0.0], mode="hard")
    assert out[0] == pytest.approx([0.5, 0.5, 1.0, 1.0])
    assert out[1] == pytest.approx([0.5, 0.5, 0.0])
    # hard trains the two shared completion tokens once, in p's row; c keeps only its own token
    from train.core.advantages.arpo import arpo_token_keep

    assert arpo_token_keep(Rollout("q", [p, c])) == [[1, 1, 1, 1], [0, 0, 1]]
    bad = _traj([[8, 4, 7]], 0.0, [], id="c", parent_id="p", branch_token=4)
    with pytest.raises(ConfigError, match="differ from its parent"):
        arpo_token_advantages(Rollout("q", [p, bad]), [1.0, 0.0])


def test_aepo_entropy_aware_advantages():
    ent = torch.tensor([[1.0, 3.0], [2.0, 2.0]], requires_grad=True)
    mask = torch.ones(2, 2)
    out = entropy_aware_advantages(torch.tensor([1.0, -1.0]), ent, mask)
    h = math.sqrt(2)  # standardised entropies: -sqrt2, +sqrt2, 0, 0 (population std)
    assert out.tolist() == [pytest.approx([1 - 0.2 * h, 1 + 0.2 * h], abs=1e-4), pytest.approx([-1.0, -1.0])]
    assert not out.requires_grad  # stop-gradient through the entropy
    masked = entropy_aware_advantages(torch.tensor([1.0, -1.0]), ent, torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
    assert masked.tolist() == [pytest.approx([0.8, 1.2], abs=1e-4), [0.0, 0.0]]


def test_the_outcome_is_the_episodes_total_reward_not_paid_twice():
    from train.core.advantages.gigpo import rollout_step_rewards, with_outcome

    assert with_outcome([0.0, 0.0, 1.0], 1.0) == [0.0, 0.0, 1.0]  # a game that paid its goal step
    assert with_outcome([0.0, 0.0], 1.0) == [0.0, 1.0]  # a sparse env: the whole outcome on the last step
    assert with_outcome([0.5, 0.0], 0.0) == [0.5, -0.5]  # paid on the way, failed at the end: total 0
    assert with_outcome([], 1.0) == []
    won = Trajectory(id="w", rewards={"r": 1.0}, steps=[Step(action="act", state="s0", reward=0.0),
                                                         Step(action="act", state="s1", reward=1.0)])
    lost = Trajectory(id="l", rewards={"r": 0.0}, steps=[Step(action="act", state="s0", reward=0.0)])
    episode, steps, states = rollout_step_rewards(Rollout("t", [won, lost], None), reward_key="r")
    assert (episode, steps, states) == ([1.0, 0.0], [[0.0, 1.0], [0.0]], [["s0", "s1"], ["s0"]])
    # GiGPO over them (mean_norm, gamma 0.95): the s0 group compares returns 0.95 (won) and 0 (lost): A^S ±0.475
    res = gigpo_advantages(episode, steps, states, gamma=0.95)
    assert res.step[0][0] == pytest.approx(0.475) and res.step[1][0] == pytest.approx(-0.475)


def test_anchor_counts_are_the_steps_in_shared_states():
    from train.core.advantages.gigpo import anchor_counts

    assert anchor_counts([["a", "b"], ["a", "c"], ["d"]]) == (2, 5)  # only the two "a" steps share a state
    assert anchor_counts([["a", "a"]]) == (2, 2)  # a state revisited within one episode counts too
    assert anchor_counts([[None, None]]) == (0, 2)  # no anchor: always alone
    assert anchor_counts([]) == (0, 0)
