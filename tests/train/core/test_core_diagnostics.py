"""Per-step stats, RAGEN's echo-trap warning and RAGEN-2's mutual-information proxy."""

import math

import pytest
import torch

from train.core.diagnostics import echo_trap, mutual_information_proxy, step_stats


def test_step_stats():
    s = step_stats([1.0, 0.0, 1.0, 1.0], group_size=2, entropy=torch.tensor([[1.0, 3.0], [9.0, 0.0]]),
                   mask=torch.tensor([[1.0, 1.0], [0.0, 0.0]]), grad_norm=2.5)
    assert s["reward_mean"] == 0.75 and s["reward_std"] == pytest.approx(0.5)
    assert s["zero_std_share"] == 0.5 and s["group_reward_std"] == pytest.approx(math.sqrt(0.5) / 2)
    assert s["entropy"] == 2.0 and s["grad_norm"] == 2.5


def _hist(std, ent, gn):
    return [{"group_reward_std": a, "entropy": b, "grad_norm": c} for a, b, c in zip(std, ent, gn)]


def test_echo_trap_fires_in_ragens_order_only():
    std = [1.0] * 5 + [0.9, 0.4, 0.3, 0.2, 0.1]
    ent = [2.0] * 5 + [2.0, 1.9, 0.9, 0.8, 0.5]
    gn = [1.0] * 5 + [1.0, 1.0, 1.2, 4.0, 5.0]
    w = echo_trap(_hist(std, ent, gn))
    assert (w.std_step, w.entropy_step, w.grad_spike_step) == (6, 7, 8) and "echo trap" in w.message
    assert echo_trap(_hist(std, ent, [1.0] * 10)) is None          # no gradient spike
    assert echo_trap(_hist([1.0] * 10, ent, gn)) is None           # reward std held
    assert echo_trap(_hist(std, [2.0] * 10, gn)) is None           # entropy held
    assert echo_trap(_hist(std[:5], ent[:5], gn[:5])) is None      # too short


def test_mutual_information_proxy():
    mi, acc = mutual_information_proxy([[0.0, -10.0], [-10.0, 0.0]])
    assert mi == pytest.approx(math.log(2) - math.log1p(math.exp(-10))) and acc == 1.0
    mi, acc = mutual_information_proxy([[-1.0, -1.0, -1.0], [-2.0, -2.0, -2.0], [-3.0, -3.0, -3.0]])
    assert mi == pytest.approx(0.0, abs=1e-12) and acc == pytest.approx(1 / 3)   # input-independent: Î = 0
