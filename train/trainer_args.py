"""What the offline trainers (SFT, DPO, the RL recipe's stages) share: their settings checks, their
TrainingArguments, and where a stopped run resumes.

    check_trainer_settings(settings)                     # in a settings dataclass's __post_init__
    kw = trainer_arguments(settings, output_dir="out/trainer", precision=compute.precision)
    trainer.train(resume_from_checkpoint=last_checkpoint("out/trainer"))

`settings` is any dataclass with the fields these read (SFTSettings, DPOSettings): precision, threads, trl, gguf,
max_length, batch_size, grad_accum, max_steps, epochs, learning_rate, seed, logging_steps, save_steps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from train.precision import Precision, check_settings, resolve_precision


def check_trainer_settings(settings: Any) -> None:
    """The checks every offline trainer's settings share (SFT, DPO): precision, threads and TRL overrides, the
    GGUF type, positive lengths and batch sizes; a ConfigError naming the offending value."""
    from train.model_io import OUTTYPES

    check_settings(settings.precision, settings.threads, settings.trl)
    if settings.gguf not in (*OUTTYPES, "none"):
        raise ConfigError(f"gguf={settings.gguf!r}: must be one of {(*OUTTYPES, 'none')}")
    if settings.max_length < 1 or settings.batch_size < 1 or settings.grad_accum < 1:
        raise ConfigError("max_length, batch_size and grad_accum must be >= 1 "
                          f"(got {settings.max_length}, {settings.batch_size}, {settings.grad_accum})")


def trainer_arguments(settings: Any, *, output_dir: str, precision: Precision | None = None) -> dict[str, Any]:
    """The TrainingArguments every offline trainer here shares (SFT, DPO): steps or epochs, learning rate, batch,
    seed, logging, no reporting, CPU when there is no CUDA, checkpoints only with `save_steps` (the last kept),
    and the resolved precision (default: `settings.precision` resolved here)."""
    import torch

    precision = precision or resolve_precision(settings.precision)
    return dict(
        output_dir=output_dir, max_steps=settings.max_steps, num_train_epochs=settings.epochs,
        learning_rate=settings.learning_rate, per_device_train_batch_size=settings.batch_size,
        gradient_accumulation_steps=settings.grad_accum, seed=settings.seed, logging_steps=settings.logging_steps,
        report_to="none", use_cpu=not torch.cuda.is_available(),
        **({"save_strategy": "steps", "save_steps": settings.save_steps, "save_total_limit": 1}
           if settings.save_steps > 0 else {"save_strategy": "no"}),
        **precision.trl_args(),
    )


def last_checkpoint(folder: str | Path) -> str | None:
    """The newest `checkpoint-N` folder a trainer saved in `folder` (None when there is none)."""
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(folder)) if Path(folder).is_dir() else None


__all__ = ["check_trainer_settings", "last_checkpoint", "trainer_arguments"]
