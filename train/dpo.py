"""Direct preference optimisation on preference pairs with TRL's `DPOTrainer`, on the pairs' own token ids; the
policy comes back as HF + GGUF, as from `agentic train sft`.

    agentic synth tree-data --in runs/lats --out runs/lats-data          # a search tree's sibling pairs
    agentic train dpo --data runs/lats-data/pairs.jsonl --model llamacpp://default --out runs/dpo [--beta 0.1]
    result = train_dpo(DPOSettings(data="runs/lats-data/pairs.jsonl", out="runs/dpo"))

Data: JSONL, one preference pair a line, in TRL's DPO columns, of one kind per file:
- ids (`prompt_ids`, `chosen_ids`, `rejected_ids`: what `synth tree-data` writes, the ids the policy conditioned on
  and sampled): trained on exactly these. TRL 1.16's `DPOTrainer` would tokenize its text columns again and
  append EOS to both completions; `ExactDPOTrainer` hands the ids to TRL's collator as they are.
- text (`prompt`, `chosen`, `rejected` only): tokenized by TRL as usual (EOS appended).
A pair longer than `max_length` (prompt + the longer completion) is dropped and counted (`too_long`), not cut: a
cut completion would prefer a truncation. A pair whose two completions are equal is refused (no preference).
The loss is TRL's (`loss_type`, default sigmoid: DPO with `beta`); the reference model is the start policy.
`out` ends with the HF checkpoint, `policy.gguf` (unless `gguf=none`), `dpo_result.json` (settings, loss and
reward-margin history, compute) and `lineage.json` (the pairs' origins: rows by operator, engine and backend).
Precision and threads as in `train.sft` (`train.precision`). Not covered: multi-process launch, LoRA.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.runner import iter_jsonl
from train.precision import Compute, Precision, resolve_compute
from train.trainer_args import check_trainer_settings, last_checkpoint, trainer_arguments

PAIR_IDS = ("prompt_ids", "chosen_ids", "rejected_ids")
PAIR_TEXT = ("prompt", "chosen", "rejected")


@dataclass(frozen=True)
class DPOSettings:
    """`agentic train dpo` settings (YAML `--config`, `--set KEY=VALUE`)."""

    model: str = "llamacpp://default"
    data: str = ""
    out: str = "runs/dpo"
    beta: float = 0.1
    loss_type: str = "sigmoid"  # any TRL DPOConfig loss_type
    max_steps: int = -1
    epochs: float = 1.0
    learning_rate: float = 1e-6
    batch_size: int = 1
    grad_accum: int = 1
    max_length: int = 2048
    gguf: str = "f16"  # f32 | f16 | bf16 | q8_0 | none
    precision: str = "auto"  # auto | fp32 | bf16 | fp16 (train.precision)
    threads: int = 0  # torch threads; 0 = every usable core, at most 8
    seed: int = 0
    logging_steps: int = 1
    save_steps: int = 0  # > 0: a checkpoint every N steps (the last one kept); a rerun resumes from it
    trl: dict[str, Any] = field(default_factory=dict)  # any further DPOConfig arguments

    def __post_init__(self) -> None:
        check_trainer_settings(self)
        if self.beta <= 0:
            raise ConfigError(f"beta={self.beta!r}: must be > 0 (the KL weight of DPO; 0.1 is the paper's)")


@dataclass
class DPOResult:
    out: str
    gguf: str | None
    steps: int
    pairs: int  # trained on
    too_long: int  # dropped: prompt + the longer completion over max_length
    kind: str  # "ids" | "text"
    train_seconds: float
    metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)  # loss, rewards/margins, rewards/accuracies
    resumed_from: str | None = None
    compute: dict[str, Any] = field(default_factory=dict)
    data_lineage: dict[str, Any] = field(default_factory=dict)


def read_pairs(path: str | Path, *, max_length: int) -> tuple[list[dict[str, Any]], str, int]:
    """(rows, kind "ids" | "text", pairs dropped as too long) from a JSONL of preference pairs (module docstring)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"--data {str(p)!r}: no such file; pass a JSONL of preference pairs "
                          "(`agentic synth tree-data` writes pairs.jsonl)")
    rows: list[dict[str, Any]] = []
    kinds: set[str] = set()
    too_long = 0
    for n, d in iter_jsonl(p, "one preference pair a line"):
        if all(k in d for k in PAIR_IDS):
            ids = {k: d[k] for k in PAIR_IDS}
            if not all(isinstance(v, list) and v and all(isinstance(x, int) for x in v) for v in ids.values()):
                raise ConfigError(f"{p}:{n}: {', '.join(PAIR_IDS)} must be non-empty lists of token ids")
            row, kind, same = ids, "ids", ids["chosen_ids"] == ids["rejected_ids"]
            length = len(ids["prompt_ids"]) + max(len(ids["chosen_ids"]), len(ids["rejected_ids"]))
        elif all(isinstance(d.get(k), str) for k in PAIR_TEXT):
            row, kind, same, length = {k: d[k] for k in PAIR_TEXT}, "text", d["chosen"] == d["rejected"], 0
        else:
            raise ConfigError(f"{p}:{n}: a record with keys {sorted(d)[:8]}; expected a preference pair with "
                              f"{', '.join(PAIR_IDS)} (token ids) or {', '.join(PAIR_TEXT)} (text)")
        if same:
            raise ConfigError(f"{p}:{n}: chosen and rejected are the same completion: no preference to learn")
        kinds.add(kind)
        if length > max_length:
            too_long += 1
            continue
        rows.append(row)
    if len(kinds) > 1:
        raise ConfigError(f"--data {str(p)!r} mixes token-id pairs and text-only pairs; use one kind per file")
    if not rows:
        raise ConfigError(f"--data {str(p)!r} holds no pair within max_length={max_length} ({too_long} too long)"
                          if too_long else f"--data {str(p)!r} holds no records")
    return rows, kinds.pop(), too_long


def exact_dpo_trainer_class() -> type:
    """`DPOTrainer` that takes rows already in its tokenized columns as they are (TRL 1.16 always tokenizes the
    text columns again); text rows go through TRL's own preparation."""
    from trl import DPOTrainer

    class ExactDPOTrainer(DPOTrainer):
        def _prepare_dataset(self, dataset: Any, processing_class: Any, args: Any, dataset_name: str) -> Any:
            if set(PAIR_IDS) <= set(dataset.column_names):
                return dataset
            return super()._prepare_dataset(dataset, processing_class, args, dataset_name)

    return ExactDPOTrainer


def build_dpo_trainer(model: Any, tokenizer: Any, rows: list[dict[str, Any]], settings: DPOSettings, *,
                      precision: Precision | None = None) -> Any:
    """An `ExactDPOTrainer` over `rows` (the reference model: a frozen copy of `model`, TRL's default)."""
    from datasets import Dataset
    from trl import DPOConfig

    kw = trainer_arguments(settings, output_dir=str(Path(settings.out) / "trainer"), precision=precision)
    kw.update(beta=settings.beta, loss_type=settings.loss_type, max_length=settings.max_length)
    kw.update(settings.trl)
    return exact_dpo_trainer_class()(model=model, args=DPOConfig(**kw), train_dataset=Dataset.from_list(rows),
                                     processing_class=tokenizer)


def train_dpo(settings: DPOSettings, *, compute: Compute | None = None) -> DPOResult:
    """Load `settings.model`, run DPO on `settings.data`, save the HF checkpoint and the GGUF into `settings.out`."""
    from agentic_infer.lineage import file_lineage, write_policy_lineage
    from train.model_io import load_trainable, save_trained

    if not settings.data:
        raise ConfigError("no training data: pass --data PATH (JSONL of preference pairs, e.g. synth tree-data's "
                          "pairs.jsonl)")
    rows, kind, too_long = read_pairs(settings.data, max_length=settings.max_length)
    compute = compute or resolve_compute(settings.precision, settings.threads)
    compute.apply()
    model, tokenizer = load_trainable(settings.model)
    trainer = build_dpo_trainer(model, tokenizer, rows, settings, precision=compute.precision)
    resume = last_checkpoint(trainer.args.output_dir) if settings.save_steps > 0 else None
    t0 = time.perf_counter()
    out = trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - t0
    dest, gguf, main = save_trained(trainer, tokenizer, settings.out, gguf=settings.gguf)
    history = [{k: float(v) for k, v in h.items() if isinstance(v, (int, float))}
               for h in trainer.state.log_history if "loss" in h]
    result = DPOResult(out=str(dest), gguf=gguf, steps=int(out.global_step), pairs=len(rows), too_long=too_long,
                       kind=kind, train_seconds=seconds, metrics={k: float(v) for k, v in out.metrics.items()},
                       history=history, resumed_from=resume, compute=compute.record(),
                       data_lineage=file_lineage(settings.data))
    if main:
        write_policy_lineage(dest, [result.data_lineage], trained_by="agentic train dpo", base_model=settings.model)
        (dest / "dpo_result.json").write_text(json.dumps({"settings": asdict(settings), **asdict(result)}, indent=2,
                                                         default=str))
    return result
