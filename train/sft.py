"""Supervised fine-tuning on agent trajectories with TRL's `SFTTrainer`; the policy comes back as HF + GGUF.

    agentic train sft --data rollouts.jsonl --model llamacpp://default --out runs/sft --max-steps 50 [--lora]
    result = train_sft(build_config(SFTSettings, overrides={"data": ..., "out": ...}))

Data: JSONL, one record a line, of any of
- Rollouts (`{"example_id", "trajectories": [...]}`): the chosen trajectory (all of them for a vote);
- Trajectories (`{"segments": [...]}`): `train.core.masks.sft_row` (ids as recorded, -100 on prompt and
  observation tokens, a trainable end-of-turn token after a finished answer); inexact trajectories
  (`token_exact=False`) are refused unless `allow_inexact` (then missing ids are encoded segment by segment);
- tokenized rows (`{"input_ids", "labels"?}`): given to TRL as they are (TRL takes `labels` as given);
- chat messages (`{"messages": [...]}`, e.g. `Trajectory.chat_messages()`): TRL tokenizes them with
  `assistant_only_loss=True` on a copy of the tokenizer whose template has `{% generation %}` markers
  (`train.chat_template`: ChatML rendered as the model's own, assistant content and `<|im_end|>` trained).
Packing is off by default (it would let one trajectory attend to another's observations unless TRL's
padding-free position ids are used). LoRA (`lora=true`) goes through peft and is merged before saving.
Precision and threads are `precision` (auto | fp32 | bf16 | fp16: fp32 weights, bf16/fp16 autocast) and
`threads` (torch threads), resolved once per run by `train.precision` and recorded in the result (`compute`).
`out` ends with the HF checkpoint (`out/`), `out/policy.gguf` (unless `gguf=none`), `out/sft_result.json` and
`out/lineage.json` (the data's origins, `agentic_infer.lineage`: rows by operator, engine and backend, distinct
sources, the file's sha256; an eval run of the policy records it).
Not covered: multi-GPU launch (see `train.launch`). Preference pairs: `train.dpo`.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentic_infer.config import renamed
from agentic_infer.errors import ConfigError
from agentic_infer.runner import iter_jsonl
from agentic_infer.types import Rollout, Trajectory
from train.precision import DTYPE_RENAMED, Compute, Precision, resolve_compute
from train.trainer_args import check_trainer_settings, last_checkpoint, trainer_arguments

log = logging.getLogger(__name__)


@renamed(dtype=DTYPE_RENAMED)
@dataclass(frozen=True)
class SFTSettings:
    """`agentic train sft` settings (YAML `--config`, `--set KEY=VALUE`)."""

    model: str = "llamacpp://default"
    data: str = ""
    out: str = "runs/sft"
    max_steps: int = -1
    epochs: float = 1.0
    learning_rate: float = 2e-5
    batch_size: int = 1
    grad_accum: int = 1
    max_length: int = 2048
    packing: bool = False
    append_eos: str | None = "finished"  # train.core.masks: "finished" | "eos" | None
    allow_inexact: bool = False
    lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    gguf: str = "f16"  # f32 | f16 | bf16 | q8_0 | none
    precision: str = "auto"  # auto | fp32 | bf16 | fp16: fp32 weights, bf16/fp16 autocast (train.precision)
    threads: int = 0  # torch threads; 0 = every usable core, at most 8
    seed: int = 0
    logging_steps: int = 1
    save_steps: int = 0  # > 0: a checkpoint every N steps (the last one kept); a rerun resumes from it
    trl: dict[str, Any] = field(default_factory=dict)  # any further SFTConfig arguments

    def __post_init__(self) -> None:
        check_trainer_settings(self)


@dataclass
class SFTResult:
    out: str
    gguf: str | None
    steps: int
    rows: int
    tokens: int  # trained (label != -100) tokens per epoch
    train_seconds: float
    metrics: dict[str, float]
    sequence_tokens: int = 0  # input tokens per epoch (what a training step processes)
    history: list[dict[str, float]] = field(default_factory=list)  # the trainer's logged steps (loss curve)
    resumed_from: str | None = None  # the checkpoint this run continued (train_seconds then counts the rest)
    compute: dict[str, Any] = field(default_factory=dict)  # resolved precision and threads, with reasons
    data_lineage: dict[str, Any] = field(default_factory=dict)  # the data's origins (agentic_infer.lineage)
    processes: int = 1  # the trainer's world size (`--processes`, a launched job)


def read_sft_data(path: str | Path, tokenizer: Any, *, max_length: int | None = None, append_eos: str | None = None,
                  allow_inexact: bool = False) -> tuple[list[dict[str, Any]], str]:
    """Rows for `SFTTrainer` and their kind ("tokens" or "messages") from a JSONL file (see the module docstring)."""
    from agentic_infer.backends.hf import HFTokenizer
    from train.core.masks import sft_row

    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"--data {str(p)!r}: no such file; pass a JSONL of rollouts, trajectories or tokenized rows")
    rows: list[dict[str, Any]] = []
    kinds: set[str] = set()
    for n, d in iter_jsonl(p, "one rollout, trajectory, tokenized row or messages row a line"):
        if "input_ids" in d:
            ids = list(d["input_ids"])[:max_length]
            labels = list(d.get("labels", ids))[:max_length]
            if len(labels) != len(ids):
                raise ConfigError(f"{p}:{n}: labels has {len(labels)} entries for {len(ids)} input_ids")
            rows.append({"input_ids": ids, "labels": labels, "attention_mask": [1] * len(ids)})
            kinds.add("tokens")
        elif "messages" in d:
            rows.append({"messages": d["messages"]})
            kinds.add("messages")
        elif "segments" in d or "trajectories" in d:
            trajs = [Trajectory.from_dict(d)] if "segments" in d else _sft_trajectories(Rollout.from_dict(d))
            for t in trajs:
                if allow_inexact and any(s.token_ids is None for s in t.segments):
                    t.tokenize(HFTokenizer(tokenizer))
                try:
                    rows.append(sft_row(t, eos_token_id=tokenizer.eos_token_id, append_eos=append_eos,
                                        max_length=max_length, allow_inexact=allow_inexact))
                except ConfigError as e:
                    raise ConfigError(f"{p}:{n}: {e} (or pass --allow-inexact)") from None
            kinds.add("tokens")
        else:
            raise ConfigError(f"{p}:{n}: a record with keys {sorted(d)[:8]}; expected a Rollout, a Trajectory, "
                              "a tokenized row (input_ids) or a messages row")
    if not rows:
        raise ConfigError(f"--data {str(p)!r} holds no records")
    if len(kinds) > 1:
        raise ConfigError(f"--data {str(p)!r} mixes tokenized records and messages; use one kind per file")
    return rows, kinds.pop()


def _sft_trajectories(rollout: Rollout) -> list[Trajectory]:
    """The chosen trajectory of a rollout (all of them when the answer is a vote)."""
    return list(rollout.trajectories) if rollout.chosen is None else [rollout.trajectories[rollout.chosen]]


def sft_config(settings: SFTSettings, *, kind: str = "tokens", output_dir: str | None = None,
               precision: Precision | None = None) -> Any:
    """TRL's `SFTConfig` for these settings (CPU-friendly defaults: no reporting; checkpoints only with
    `save_steps`); `precision`: the run's resolved one (default: `settings.precision` resolved here)."""
    from trl import SFTConfig

    kw = trainer_arguments(settings, output_dir=output_dir or str(Path(settings.out) / "trainer"), precision=precision)
    kw.update(max_length=settings.max_length, packing=settings.packing, dataset_kwargs={"skip_prepare_dataset": False},
              assistant_only_loss=kind == "messages")
    kw.update(settings.trl)
    return SFTConfig(**kw)


def build_sft_trainer(model: Any, tokenizer: Any, rows: list[dict[str, Any]], settings: SFTSettings, *,
                      kind: str = "tokens", output_dir: str | None = None, precision: Precision | None = None) -> Any:
    """A TRL `SFTTrainer` over `rows` (LoRA adapters added when `settings.lora`; `precision` as in `sft_config`)."""
    from datasets import Dataset
    from trl import SFTTrainer

    from train.chat_template import training_tokenizer

    if kind == "messages" and "chat_template_path" not in settings.trl:
        tokenizer = training_tokenizer(tokenizer)  # a copy with {% generation %} markers (assistant_only_loss)
    peft_config = None
    if settings.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=settings.lora_r, lora_alpha=settings.lora_alpha, lora_dropout=settings.lora_dropout,
                                 target_modules=list(settings.lora_targets), task_type="CAUSAL_LM")
    return SFTTrainer(model=model, args=sft_config(settings, kind=kind, output_dir=output_dir, precision=precision),
                      train_dataset=Dataset.from_list(rows), processing_class=tokenizer, peft_config=peft_config)


def train_sft(settings: SFTSettings, *, compute: Compute | None = None) -> SFTResult:
    """Load `settings.model`, train on `settings.data`, save the HF checkpoint and the GGUF into `settings.out`;
    `compute`: precision and threads already resolved by a caller (default: resolved here, once)."""
    from agentic_infer.lineage import file_lineage, write_policy_lineage
    from train.model_io import load_trainable, save_trained

    if not settings.data:
        raise ConfigError("no training data: pass --data PATH (JSONL of rollouts, trajectories or tokenized rows)")
    compute = compute or resolve_compute(settings.precision, settings.threads)
    compute.apply()
    model, tokenizer = load_trainable(settings.model)
    rows, kind = read_sft_data(settings.data, tokenizer, max_length=settings.max_length,
                               append_eos=settings.append_eos, allow_inexact=settings.allow_inexact)
    trainer = build_sft_trainer(model, tokenizer, rows, settings, kind=kind, precision=compute.precision)
    resume = last_checkpoint(trainer.args.output_dir) if settings.save_steps > 0 else None
    if resume:
        log.info("resuming SFT from %s", resume)
    t0 = time.perf_counter()
    out = trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - t0
    dest, gguf, main = save_trained(trainer, tokenizer, settings.out, gguf=settings.gguf)  # rank 0 saves
    tokens = sum(sum(1 for x in r["labels"] if x != -100) for r in rows) if kind == "tokens" else 0
    history = [{k: float(v) for k, v in h.items() if isinstance(v, (int, float))}
               for h in trainer.state.log_history if "loss" in h]
    result = SFTResult(out=str(dest), gguf=gguf, steps=int(out.global_step), rows=len(rows), tokens=tokens,
                       train_seconds=seconds, metrics={k: float(v) for k, v in out.metrics.items()},
                       sequence_tokens=sum(len(r["input_ids"]) for r in rows) if kind == "tokens" else 0,
                       history=history, resumed_from=resume, compute=compute.record(),
                       data_lineage=file_lineage(settings.data), processes=int(trainer.args.world_size))
    if main:
        write_policy_lineage(dest, [result.data_lineage], trained_by="agentic train sft", base_model=settings.model)
        (dest / "sft_result.json").write_text(json.dumps({"settings": asdict(settings), **asdict(result)}, indent=2,
                                                         default=str))
    trainer.accelerator.wait_for_everyone()
    return result
