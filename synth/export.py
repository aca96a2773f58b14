"""Export trajectories for trainers: chat messages, tokenized rows, verl multi-turn SFT and verl RL parquet.

    agentic synth export --in DIR --format messages|tokenized|verl-sft|verl-rl --out PATH
    rows = export_rows(read_trajectories("DIR"), "tokenized")

Input: `DIR/trajectories.jsonl`, JSONL files in `DIR/trajectories/`, or one JSONL file; a line is a
Trajectory record, or a Rollout record (its trajectories are read).

Formats (one row per trajectory, except verl-rl: one per question):
- `messages`: `{id, group_id, messages: [{role, content, trainable}], rewards}`: `Trajectory.chat_messages()`
  (tool results as `tool` messages); `trainable` is True on assistant messages, the per-message flag
  TRL's `assistant_only_loss` (or a collator) needs. Forced assistant text (an assistant prefix) opens
  the first assistant message and is trained with it in this view; the tokenized view is exact.
- `tokenized`: `{id, group_id, input_ids, labels, attention_mask}` from the trajectory's own ids, built by
  `agentic_infer.views.sft_row`, the function `agentic train sft` builds its rows with (labels -100 on every
  prompt and observation token; the same end-of-turn policy `append_eos`, default "finished": a trainable
  EOS after a finished answer, so these rows equal train's for the same settings). The EOS id is
  `eos_token_id`, else the end-of-turn token of `tokenizer` (a `load_tokenizer` spec, default "default":
  the embedded model's, as `agentic synth demos` uses; pass the model's own for other trajectories);
  `append_eos=None` keeps the ids exactly as sampled. Refuses a trajectory whose ids were re-encoded
  (`token_exact=False`) unless `allow_inexact=True`.
- `verl-sft`: parquet for verl's multi-turn SFT dataset: `messages` (role, content), `data_source`,
  `extra_info` (id, group_id).
- `verl-rl`: parquet for verl's RL trainer (the Search-R1 layout), one `verl_rl_row` each: `data_source`,
  `prompt` (the prompt messages), `ability`, `reward_model {style: "rule", ground_truth: {target: [gold...]}}`,
  `extra_info {index, id, question, split, lineage}`. `{target: [...]}` is what verl's own Search-R1 scorer reads
  (`verl.utils.reward_score.search_r1_like_qa_em`: `ground_truth["target"]`) and what
  `train.rewards.adapters.verl_compute_score` unpacks; `train.verl_export` writes its rows with the same function.
Every `messages` / `tokenized` row carries `metadata["lineage"]` (`agentic_infer.lineage.lineage_of`: where the
trajectory came from), a verl row the same as JSON in `extra_info["lineage"]` (verl-rl: the group's first trajectory's).
JSONL is written for `messages` / `tokenized` unless PATH ends in `.parquet`; verl formats are parquet.
Not covered: sharding large exports, HF `datasets` push (see the pipeline's writers).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.lineage import lineage_of
from agentic_infer.runner import atomic_open, iter_jsonl, write_jsonl
from agentic_infer.types import Rollout, Trajectory
from agentic_infer.views import DEFAULT_APPEND_EOS, AppendEos, sft_row

FORMATS = ("messages", "tokenized", "verl-sft", "verl-rl")


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        files = ([path / "trajectories.jsonl"] if (path / "trajectories.jsonl").is_file() else [])
        files += sorted((path / "trajectories").glob("*.jsonl")) if (path / "trajectories").is_dir() else []
        if files:
            return files
        raise ConfigError(f"--in {path}: no trajectories.jsonl and no trajectories/*.jsonl inside; pass the "
                          "output directory of a synth or eval command, or a JSONL file")
    raise ConfigError(f"--in {path}: no such file or directory")


def read_trajectories(path: str | Path) -> Iterator[Trajectory]:
    """Every Trajectory of a directory or JSONL file (Rollout lines are expanded)."""
    for file in _files(Path(path)):
        for n, rec in iter_jsonl(file, "one Trajectory a line"):
            if "segments" in rec:
                yield Trajectory.from_dict(rec)
            elif "trajectories" in rec and "example_id" in rec:
                yield from Rollout.from_dict(rec).trajectories
            else:
                raise ConfigError(f"{file}:{n}: neither a Trajectory (segments) nor a Rollout (trajectories) "
                                  f"record; keys: {sorted(rec)[:8]}")


def messages_row(traj: Trajectory) -> dict[str, Any]:
    msgs = [{"role": m["role"], "content": m.get("content", ""), "trainable": m["role"] == "assistant"}
            for m in traj.chat_messages()]
    return {"id": traj.id, "group_id": traj.group_id, "messages": msgs, "rewards": dict(traj.rewards),
            "metadata": {"lineage": lineage_of(traj)}}


def tokenized_row(traj: Trajectory, *, eos_token_id: int | None = None, append_eos: AppendEos = DEFAULT_APPEND_EOS,
                  max_length: int | None = None, allow_inexact: bool = False) -> dict[str, Any]:
    row = sft_row(traj, eos_token_id=eos_token_id, append_eos=append_eos, max_length=max_length,
                  allow_inexact=allow_inexact)
    return {"id": traj.id, "group_id": traj.group_id, **row, "metadata": {"lineage": lineage_of(traj)}}


def end_of_turn_id(tokenizer: str) -> int:
    """The id of the end-of-turn (EOS) token of tokenizer spec `tokenizer` (`load_tokenizer`: default, a .gguf,
    a local HF folder)."""
    from agentic_infer.backends.tokenizer import load_tokenizer

    tok = load_tokenizer(tokenizer)
    ids = tok.encode(tok.template.eos_token, add_special=False) if tok.template.eos_token else []
    if len(ids) != 1:
        raise ConfigError(f"tokenizer {tokenizer!r}: its end-of-turn token {tok.template.eos_token!r} is not one "
                          "token id; pass --eos-token-id N, or --append-eos none to keep the ids as sampled")
    return ids[0]


def _source(traj: Trajectory) -> str:
    return str(traj.example.get("task") or traj.engine or "agentic")


def verl_sft_row(traj: Trajectory) -> dict[str, Any]:
    return {"messages": [{"role": m["role"], "content": m.get("content", "")} for m in traj.chat_messages()],
            "data_source": _source(traj), "extra_info": {"id": traj.id, "group_id": traj.group_id or "",
                                                         "lineage": json.dumps(lineage_of(traj), default=str)}}


def _gold(traj: Trajectory) -> list[str]:
    gold = traj.example.get("gold") or traj.example.get("answer") or traj.example.get("golden_answers")
    if gold is None:
        raise ConfigError(f"trajectory {traj.id}: its example has no 'gold' answers; verl-rl needs the ground truth")
    return [str(g) for g in (gold if isinstance(gold, list) else [gold])]


def verl_rl_row(*, data_source: str, messages: Sequence[dict[str, Any]], gold: Sequence[str], ability: str,
                extra_info: dict[str, Any]) -> dict[str, Any]:
    """One verl RL row (see the module docstring): the ground truth in the Search-R1 layout `{"target": gold}`."""
    return {"data_source": data_source,
            "prompt": [{"role": m["role"], "content": m.get("content", "")} for m in messages],
            "ability": ability,
            "reward_model": {"style": "rule", "ground_truth": {"target": [str(g) for g in gold]}},
            "extra_info": extra_info}


def verl_rl_rows(trajs: Iterable[Trajectory], *, ability: str = "qa", split: str = "train") -> list[dict[str, Any]]:
    """One row per question (the first trajectory of each group gives the prompt messages)."""
    rows, seen = [], set()
    for t in trajs:
        key = t.group_id or t.example.get("id") or t.id
        if key in seen:
            continue
        seen.add(key)
        head = t.segments[0] if t.segments and t.segments[0].kind == "prompt" else None
        messages = (head.metadata.get("messages") if head else None) or [
            {"role": "user", "content": str(t.example.get("question", ""))}]
        rows.append(verl_rl_row(data_source=_source(t), messages=messages, gold=_gold(t), ability=ability,
                                extra_info={"index": len(rows), "id": str(key),
                                            "question": str(t.example.get("question", "")), "split": split,
                                            "lineage": json.dumps(lineage_of(t), default=str)}))
    return rows


def export_rows(trajs: Iterable[Trajectory], fmt: str, *, max_length: int | None = None,
                allow_inexact: bool = False, ability: str = "qa", eos_token_id: int | None = None,
                append_eos: AppendEos = DEFAULT_APPEND_EOS) -> list[dict[str, Any]]:
    """The rows of format `fmt` (see module docstring)."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if fmt == "verl-rl":
        return verl_rl_rows(trajs, ability=ability)
    if fmt == "messages":
        return [messages_row(t) for t in trajs]
    if fmt == "tokenized":
        return [tokenized_row(t, eos_token_id=eos_token_id, append_eos=append_eos, max_length=max_length,
                              allow_inexact=allow_inexact) for t in trajs]
    return [verl_sft_row(t) for t in trajs]


def write_rows(rows: Sequence[dict[str, Any]], out: str | Path, *, parquet: bool | None = None) -> Path:
    """JSONL, or parquet when `parquet` (default: the suffix is `.parquet`); written via a temp file."""
    out = Path(out)
    parquet = out.suffix == ".parquet" if parquet is None else parquet
    out.parent.mkdir(parents=True, exist_ok=True)
    if not parquet:
        return write_jsonl(out, rows)
    import pyarrow as pa
    import pyarrow.parquet as pq

    with atomic_open(out, "wb") as f:
        pq.write_table(pa.Table.from_pylist(list(rows)), f)
    return out


def export(src: str | Path, fmt: str, out: str | Path, *, max_length: int | None = None,
           allow_inexact: bool = False, ability: str = "qa", overwrite: bool = False,
           append_eos: AppendEos = DEFAULT_APPEND_EOS, eos_token_id: int | None = None,
           tokenizer: str = "default") -> dict[str, Any]:
    """Read `src`, write `out` in `fmt`; returns stats (rows, trajectories, format, paths, the EOS policy)."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise ConfigError(f"--out {out} exists; choose another path or pass --overwrite (nothing was written)")
    trajs = list(read_trajectories(src))
    if fmt == "tokenized" and append_eos is not None and eos_token_id is None:
        eos_token_id = end_of_turn_id(tokenizer)
    rows = export_rows(trajs, fmt, max_length=max_length, allow_inexact=allow_inexact, ability=ability,
                       eos_token_id=eos_token_id, append_eos=append_eos)
    write_rows(rows, out, parquet=True if fmt.startswith("verl") else None)
    stats = {"step": "export", "format": fmt, "in": str(src), "out": str(out), "trajectories": len(trajs),
             "rows": len(rows)}
    if fmt == "tokenized":
        stats.update(append_eos=append_eos, eos_token_id=eos_token_id)
    return stats
