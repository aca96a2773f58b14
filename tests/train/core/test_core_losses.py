"""PPO-clip aggregation modes and AEPO entropy-balanced clipping, gradients checked with autograd."""

import math

import pytest
import torch

from agentic_infer.errors import ConfigError
from train.core.losses import aggregate, policy_loss

MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])


def test_aggregation_modes_hand_computed():
    logp = torch.zeros(2, 3)
    adv = torch.tensor([1.0, 2.0])  # ratio 1: per-token loss -A
    tok, _ = policy_loss(logp, logp, adv, MASK, aggregation="token-mean")
    seq, _ = policy_loss(logp, logp, adv, MASK, aggregation="seq-mean-token-mean")
    dr, _ = policy_loss(logp, logp, adv, MASK, aggregation="seq-mean-token-sum-norm", constant=4)
    assert float(tok) == pytest.approx(-5 / 4)
    assert float(seq) == pytest.approx(-1.5)
    assert float(dr) == pytest.approx(-5 / 8)
    pad_default, _ = policy_loss(logp, logp, adv, MASK, aggregation="seq-mean-token-sum-norm")
    assert float(pad_default) == pytest.approx(-5 / 6)  # constant defaults to T = 3


def test_empty_mask_is_zero_not_nan():
    z = torch.zeros(2, 3)
    for mode in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"):
        assert float(aggregate(torch.ones(2, 3), z, mode)) == 0.0
    with pytest.raises(ConfigError, match="aggregation"):
        aggregate(torch.ones(2, 3), MASK, "mean")  # type: ignore[arg-type]


def _grad(ratio: float, adv: float, **kw) -> tuple[float, float]:
    logp = torch.tensor([[math.log(ratio)]], requires_grad=True)
    loss, _ = policy_loss(logp, torch.zeros(1, 1), torch.tensor([adv]), torch.ones(1, 1), eps_low=0.2, **kw)
    loss.backward()
    return loss.item(), logp.grad.item()


def test_ppo_clip_values_and_gradients():
    assert _grad(1.1, 1.0) == pytest.approx((-1.1, -1.1))        # inside the range: d(-r·A)/dlogp = -r·A
    assert _grad(1.5, 1.0) == pytest.approx((-1.2, 0.0))         # clipped above: no gradient
    assert _grad(0.5, -1.0) == pytest.approx((0.8, 0.0))         # clipped below with A < 0: no gradient
    assert _grad(1.5, -1.0) == pytest.approx((1.5, 1.5))         # A < 0, r high: unclipped (pessimistic)


def test_aepo_entropy_balanced_clipping_keeps_gradient_of_clipped_high_ratio_tokens():
    # same value (1+eps_h)·A, but gradient (1+eps_h)·A·dlogp instead of 0
    loss, grad = _grad(1.5, 1.0, entropy_balanced=True)
    assert loss == pytest.approx(-1.2) and grad == pytest.approx(-1.2)
    assert _grad(1.5, 2.0, entropy_balanced=True, eps_high=0.28) == pytest.approx((-2.56, -2.56))
    # the lower bound and unclipped tokens are unchanged
    assert _grad(0.5, -1.0, entropy_balanced=True) == pytest.approx((0.8, 0.0))
    assert _grad(1.1, 1.0, entropy_balanced=True) == pytest.approx((-1.1, -1.1))


def test_stats_and_masked_tokens_carry_no_gradient():
    logp = torch.tensor([[math.log(1.5), 0.0, 3.0]], requires_grad=True)
    loss, stats = policy_loss(logp, torch.zeros(1, 3), torch.tensor([1.0]), torch.tensor([[1.0, 1.0, 0.0]]))
    loss.backward()
    assert logp.grad[0, 2] == 0.0
    assert stats["clip_frac"] == pytest.approx(0.5) and stats["ratio_max"] == pytest.approx(1.5)
