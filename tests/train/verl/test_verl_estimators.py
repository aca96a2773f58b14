"""Our estimators inside verl 0.9.1: found by verl's own registry, produced by verl's own `compute_advantage`
(Dr. GRPO), and GiGPO's step term computed from the per-row steps an agent-loop batch carries."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agentic_infer.errors import ConfigError
from train import verl_estimators, verl_export
from train.verl_estimators import STEPS_FIELD, agentic_gigpo, register_estimators

pytestmark = pytest.mark.verl


def batch(rewards, mask, uids, **non_tensors):
    from verl.protocol import DataProto

    return DataProto.from_dict(tensors={"token_level_rewards": torch.tensor(rewards, dtype=torch.float32),
                                        "response_mask": torch.tensor(mask, dtype=torch.int64)},
                               non_tensors={"uid": np.array(uids, dtype=object), **non_tensors})


def test_registered_names_resolve_to_our_functions():
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    register_estimators()
    register_estimators()  # idempotent: verl refuses a *different* function under a taken name
    assert get_adv_estimator_fn("agentic_dr_grpo") is verl_estimators.agentic_dr_grpo
    assert get_adv_estimator_fn("agentic_gigpo") is verl_estimators.agentic_gigpo


def test_verls_compute_advantage_produces_our_dr_grpo(verl_config):
    from verl.trainer.ppo.ray_trainer import compute_advantage

    register_estimators()
    algorithm = verl_config(verl_export.overrides(estimator="dr_grpo", reward_path="r.py")).algorithm
    assert algorithm.adv_estimator == "agentic_dr_grpo"
    # scores (sum over tokens): uid a: 1, 0 -> mean 0.5 -> +0.5, -0.5; uid b: 3, 1 -> mean 2 -> +1, -1 (no std);
    # each row's advantage on its unmasked tokens, 0 where the mask is 0 (tool tokens, padding)
    data = batch([[0, 0, 1], [0, 0, 0], [0, 3, 0], [0, 0, 1]], [[1, 1, 1], [1, 1, 0], [1, 0, 1], [1, 1, 1]],
                 ["a", "a", "b", "b"])
    out = compute_advantage(data, adv_estimator=algorithm.adv_estimator, config=algorithm)
    expected = [[0.5, 0.5, 0.5], [-0.5, -0.5, 0.0], [1.0, 0.0, 1.0], [-1.0, -1.0, -1.0]]
    torch.testing.assert_close(out.batch["advantages"], torch.tensor(expected))
    torch.testing.assert_close(out.batch["returns"], torch.tensor(expected))


def test_verls_compute_advantage_never_hands_gigpo_the_steps():
    """verl 0.9.1 passes `non_tensor_batch` to 'gdpo' only: even with the steps in the batch, GiGPO refuses
    loudly rather than train episode-level GRPO under its name (a verl that forwards them turns this red)."""
    from verl.trainer.ppo.ray_trainer import compute_advantage

    register_estimators()
    steps = {"states": ["s"], "rewards": [0.0], "spans": [[0, 1]]}
    data = batch([[1.0], [0.0]], [[1], [1]], ["a", "a"], **{STEPS_FIELD: np.array([steps, steps], dtype=object)})
    with pytest.raises(ConfigError, match="passes non_tensor_batch to 'gdpo' only"):
        compute_advantage(data, adv_estimator="agentic_gigpo", config={})
    with pytest.raises(ConfigError, match="cannot be computed inside stock verl"):
        verl_export.overrides(estimator="gigpo", reward_path="r.py")


def steps(states, rewards, spans):
    return {"states": states, "rewards": rewards, "spans": spans}


def test_gigpo_from_a_verl_batch_with_steps_hand_computed():
    from omegaconf import OmegaConf

    q_mask = [1, 1, 0, 0, 1, 1, 1, 1]  # step 0 [0,2), observation [2,4), step 1 [4,6), final answer [6,8)
    p_mask = [1, 1, 1, 1, 0, 0, 0, 0]  # step 0 [0,2), final answer [2,4), padding
    rewards = [[0] * 7 + [1], [0] * 8, [0] * 8, [0, 0, 0, 1] + [0] * 4, [0] * 8]
    rows = [steps(["S0", "S1"], [0, 0], [[0, 2], [4, 6]]), steps(["S0", "S1"], [0, 0], [[0, 2], [4, 6]]),
            steps(["S0", "S2"], [0, 0.5], [[0, 2], [4, 6]]), steps(["S0"], [0], [[0, 2]]),
            steps(["S0"], [0], [[0, 2]])]
    data = batch(rewards, [q_mask] * 3 + [p_mask] * 2, ["q", "q", "q", "p", "p"],
                 **{STEPS_FIELD: np.array(rows, dtype=object)})
    config = OmegaConf.create({"adv_estimator": "agentic_gigpo", "gigpo": {"gamma": 0.5, "omega": 0.5,
                                                                           "scale": "none"}})
    adv, ret = agentic_gigpo(token_level_rewards=data.batch["token_level_rewards"],
                             response_mask=data.batch["response_mask"], index=data.non_tensor_batch["uid"],
                             config=config, non_tensor_batch=data.non_tensor_batch)
    # uid q: scores 1, 0, 0 -> A^E = r - 1/3 = 2/3, -1/3, -1/3 (mean normalisation, every row 2 steps).
    # The outcome is the episode's total: what the steps did not pay joins the last step, so the step rewards
    # become [0, 0 + 1], [0, 0], [0, 0.5 + (0 - 0.5)] = [0, 0]; returns (gamma 0.5): [0.5, 1], [0, 0], [0, 0].
    # Anchor S0: returns 0.5, 0, 0, mean 1/6 -> A^S 1/3, -1/6, -1/6; S1: 1, 0, mean 0.5 -> 0.5, -0.5; S2 alone
    # -> 0. Combined A^E + 0.5 * A^S on each step's span.
    a, b = 2 / 3, -1 / 3
    row0 = [a + 1 / 6] * 2 + [0, 0] + [a + 0.25] * 2 + [a] * 2
    row1 = [b - 1 / 12] * 2 + [0, 0] + [b - 0.25] * 2 + [b] * 2
    row2 = [b - 1 / 12] * 2 + [0, 0] + [b] * 4
    # uid p (its S0 is compared within p only): scores 1, 0 -> A^E 0.5, -0.5; returns 1, 0 -> A^S 0.5, -0.5;
    # step span 0.5 + 0.25 = 0.75 (and -0.75), the answer tokens A^E, padding 0
    row3 = [0.75] * 2 + [0.5] * 2 + [0] * 4
    row4 = [-0.75] * 2 + [-0.5] * 2 + [0] * 4
    torch.testing.assert_close(adv, torch.tensor([row0, row1, row2, row3, row4]))
    torch.testing.assert_close(ret, adv)


def test_gigpo_options_and_rows_are_checked():
    data = batch([[1.0]], [[1]], ["a"], **{STEPS_FIELD: np.array([steps(["s"], [0], [[0, 1]])], dtype=object)})
    kw = {"token_level_rewards": data.batch["token_level_rewards"], "response_mask": data.batch["response_mask"],
          "index": data.non_tensor_batch["uid"], "non_tensor_batch": data.non_tensor_batch}
    with pytest.raises(ConfigError, match="unknown option"):
        agentic_gigpo(config={"gigpo": {"step_advantage_w": 1.0}}, **kw)
    kw["non_tensor_batch"] = {STEPS_FIELD: np.array([steps(["s", "t"], [0], [[0, 1]])], dtype=object)}
    with pytest.raises(ConfigError, match="2 states, 1 rewards"):
        agentic_gigpo(**kw)
