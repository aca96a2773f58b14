"""Rows without advantage leave the loss's forward and backward (train.grpo.trained_rows): the gradient is the
one of the whole micro-batch (every aggregation, sequence and token advantages), the model sees only the
trained rows and columns (a forward hook on the model, the component that pays), and a micro-batch without a
trained row runs no gradient forward at all."""

from __future__ import annotations

import pytest

from tests.train.trainers.conftest import StepEngine
from tests.train.trainers.test_trainer_grpo import batch_of, build
from tests.train.trainers.test_trainer_grpo_options import param_grad

torch = pytest.importorskip("torch")
pytest.importorskip("trl")


def seen_shapes(trainer):
    """(rows, columns, grad enabled) of every forward of the model."""
    shapes = []

    def record(_mod, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        shapes.append((ids.size(0), ids.size(1), torch.is_grad_enabled()))

    return shapes, trainer.model.register_forward_pre_hook(record, with_kwargs=True)


def grads(trainer, batch, *, skip: bool):
    trainer.model.double()
    trainer.skip_zero_advantage = skip
    shapes, handle = seen_shapes(trainer)
    try:
        return param_grad(trainer, batch), shapes
    finally:
        handle.remove()


def zero_rows(batch, rows):
    batch = dict(batch)
    adv = batch["advantages"].clone()
    adv[rows] = 0
    batch["advantages"] = adv
    return batch


AGGREGATIONS = ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"]


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
def test_gradient_equal_and_only_trained_rows_run(tokenizer, tmp_path, aggregation):
    from train.grpo.trainer import Estimator

    trainer = build(tokenizer, tmp_path, estimator=Estimator(name="grpo", loss_aggregation=aggregation),
                    engine=StepEngine)
    batch = zero_rows(batch_of(trainer), [0, 1])  # group 0 without reward variance
    assert batch["advantages"][2:].abs().sum() > 0
    full, full_shapes = grads(trainer, batch, skip=False)
    part, part_shapes = grads(trainer, batch, skip=True)
    assert full.abs().sum() > 0 and part.allclose(full, rtol=1e-9, atol=1e-12)
    rows = batch["completion_ids"].size(0)
    assert [s[0] for s in full_shapes] == [rows] and [s[0] for s in part_shapes] == [rows - 2]
    assert part_shapes[0][1] <= full_shapes[0][1]
    assert trainer._metrics["train"]["diag/trained_rows"][-1] == (rows - 2) / rows


def test_completion_columns_cut_after_the_last_trained_token(tokenizer, tmp_path):
    from train.grpo.trained_rows import trained_mask, trained_rows

    trainer = build(tokenizer, tmp_path, engine=StepEngine)
    batch = batch_of(trainer)
    lengths = trained_mask(batch).bool().cumsum(1).argmax(1) + 1  # last trained token + 1, per row
    short = int(lengths.argmin())
    assert lengths[short] < batch["completion_ids"].size(1)  # rows of unequal length: a cut can happen
    keep_only = [i for i in range(batch["completion_ids"].size(0)) if i != short]
    sub = trained_rows(zero_rows(batch, keep_only), aggregation="token-mean")
    assert sub.kept == 1 and sub.inputs["completion_ids"].size(1) == int(lengths[short])
    full, _ = grads(trainer, zero_rows(batch, keep_only), skip=False)
    part, shapes = grads(trainer, zero_rows(batch, keep_only), skip=True)
    assert part.allclose(full, rtol=1e-9, atol=1e-12) and shapes[0][0] == 1


def test_gigpo_token_advantages(tokenizer, tmp_path):
    from train.grpo.trainer import Estimator

    trainer = build(tokenizer, tmp_path, estimator=Estimator(name="gigpo"), engine=StepEngine)
    batch = zero_rows(batch_of(trainer), [2, 3])
    assert batch["advantages"].dim() == 2
    full, _ = grads(trainer, batch, skip=False)
    part, shapes = grads(trainer, batch, skip=True)
    assert part.allclose(full, rtol=1e-9, atol=1e-12) and shapes[0][0] == batch["completion_ids"].size(0) - 2


def test_no_trained_row_no_gradient_forward(tokenizer, tmp_path):
    trainer = build(tokenizer, tmp_path, engine=StepEngine)
    batch = zero_rows(batch_of(trainer), slice(None))
    trainer._metrics["train"]["entropy"].clear()
    trainer.skip_zero_advantage = True
    shapes, handle = seen_shapes(trainer)
    try:
        trainer.model.zero_grad()
        loss = trainer.compute_loss(trainer.model, batch)
        loss.backward()
        again = trainer.compute_loss(trainer.model, batch)
    finally:
        handle.remove()
    assert float(loss) == 0.0 and float(again) == 0.0
    assert all(p.grad is None or not p.grad.any() for p in trainer.model.parameters())
    assert shapes == [(batch["completion_ids"].size(0), shapes[0][1], False)]  # one no-grad forward: the entropy
    assert len(trainer._metrics["train"]["entropy"]) == 1


@pytest.mark.parametrize("change", [{"trl": {"beta": 0.5}}, {"aepo_alpha": 0.2}], ids=["kl", "aepo"])
def test_every_row_runs_where_other_rows_matter(tokenizer, tmp_path, change):
    from train.grpo.trainer import Estimator

    trainer = build(tokenizer, tmp_path, estimator=Estimator(name="grpo", aepo_alpha=change.get("aepo_alpha", 0.0)),
                    engine=StepEngine, **change.get("trl", {}))
    batch = zero_rows(batch_of(trainer), [0, 1])
    _, shapes = grads(trainer, batch, skip=True)
    assert [s[0] for s in shapes if s[2]] == [batch["completion_ids"].size(0)]
