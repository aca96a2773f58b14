"""ARPO / AEPO branching decisions (seeded) and the tool-call budget."""

import random

import pytest

from agentic_infer.errors import ConfigError
from train.core.branching import (
    AEPOConfig,
    ARPOConfig,
    Budget,
    aepo_branch_probability,
    aepo_branches,
    aepo_global_samples,
    arpo_branches,
    window_entropy,
)
from train.core.tool_budget import tool_budget


def test_window_entropy():
    assert window_entropy([1.0, 2.0, 9.0], k=2) == 1.5
    assert window_entropy(None) == 0.0
    assert window_entropy([0.6931471805599453], top_k=2) == pytest.approx(1.0)


def test_arpo_threshold_rule_and_budget():
    cfg = ARPOConfig()  # alpha 0.5, beta 0.2, tau 0.5, Z 2, M 16, N 8
    b = Budget(per_prompt=16, used=8)
    assert arpo_branches(3.0, 0.5, budget=b, config=cfg) == 2    # P = 0.5 + 0.2*2.5 = 1.0 > 0.5
    assert arpo_branches(0.5, 0.5, budget=b, config=cfg) == 0    # P = 0.5, not > tau
    assert arpo_branches(0.4, 0.5, budget=b, config=cfg) == 0    # entropy fell
    assert arpo_branches(3.0, 0.5, budget=b.spend(7), config=cfg) == 1   # one left
    assert arpo_branches(3.0, 0.5, budget=Budget(16, 16), config=cfg) == 0


def test_arpo_stochastic_is_seeded():
    cfg = ARPOConfig(stochastic=True)
    b = Budget(16, 8)  # P = 0.5 + 0.2*0.5 = 0.6
    assert random.Random(0).random() >= 0.6 and random.Random(1).random() < 0.6
    assert arpo_branches(1.0, 0.5, budget=b, config=cfg, rng=random.Random(0)) == 0
    assert arpo_branches(1.0, 0.5, budget=b, config=cfg, rng=random.Random(1)) == 2
    with pytest.raises(ConfigError, match="rng"):
        arpo_branches(1.0, 0.5, budget=b, config=cfg)


def test_aepo_dynamic_budget():
    assert aepo_global_samples(1.0, 1.0, total=16) == 8
    assert aepo_global_samples(2.0, 1.0, total=16) == 12         # 16·σ(1) = 11.70
    assert aepo_global_samples(-50.0, 1.0, total=16) == 1
    assert aepo_global_samples(50.0, 1.0, total=16) == 16


def test_aepo_consecutive_branch_penalty():
    cfg = AEPOConfig()  # penalty 0.5
    assert aepo_branch_probability(2.5, 0.5, consecutive=0, config=cfg) == pytest.approx(0.9)
    assert aepo_branch_probability(2.5, 0.5, consecutive=2, config=cfg) == pytest.approx(0.225)
    rng_draw = random.Random(1).random()  # 0.134
    assert aepo_branches(2.5, 0.5, consecutive=0, branches_left=5, config=cfg, rng=random.Random(1)) == 2
    assert rng_draw < 0.225 and aepo_branches(2.5, 0.5, consecutive=2, branches_left=5, config=cfg,
                                              rng=random.Random(1)) == 0  # penalised below tau
    assert aepo_branches(2.5, 0.5, consecutive=0, branches_left=0, config=cfg, rng=random.Random(1)) == 0


def test_tool_budget():
    v = tool_budget(2, 3)
    assert v.allowed and v.left == 1 and v.message is None
    v = tool_budget(3, 3)
    assert not v.allowed and "limit (3)" in v.message
    assert tool_budget(0, 0, message="no tools ({max_calls})").message == "no tools (0)"
