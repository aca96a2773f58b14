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
- `tokenized`: `{id, group_id, input_ids, labels, attention_mask}` from the trajectory's own ids
  (`Trajectory.sft_row`: labels -100 on every prompt and observation token); refuses a trajectory whose
  ids were re-encoded (`token_exact=False`) unless `allow_inexact=True`.
- `verl-sft`: parquet for verl's multi-turn SFT dataset: `messages` (role, content), `data_source`,
  `extra_info` (id, group_id).
- `verl-rl`: parquet for verl's RL trainer (the Search-R1 layout): `data_source`, `prompt` (the
  prompt messages), `ability`, `reward_model {style: "rule", ground_truth: {target: [gold...]}}`,
  `extra_info {index, id, question, split}`.
JSONL is written for `messages` / `tokenized` unless PATH ends in `.parquet`; verl formats are parquet.
Not covered: sharding large exports, HF `datasets` push (see the pipeline's writers).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.runner import iter_jsonl
from agentic_infer.types import Rollout, Trajectory

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
    return {"id": traj.id, "group_id": traj.group_id, "messages": msgs, "rewards": dict(traj.rewards)}


def tokenized_row(traj: Trajectory, *, max_length: int | None = None, allow_inexact: bool = False) -> dict[str, Any]:
    row = traj.sft_row(max_length=max_length, allow_inexact=allow_inexact)
    return {"id": traj.id, "group_id": traj.group_id, **row}


def _source(traj: Trajectory) -> str:
    return str(traj.example.get("task") or traj.engine or "agentic")


def verl_sft_row(traj: Trajectory) -> dict[str, Any]:
    return {"messages": [{"role": m["role"], "content": m.get("content", "")} for m in traj.chat_messages()],
            "data_source": _source(traj), "extra_info": {"id": traj.id, "group_id": traj.group_id or ""}}


def _gold(traj: Trajectory) -> list[str]:
    gold = traj.example.get("gold") or traj.example.get("answer") or traj.example.get("golden_answers")
    if gold is None:
        raise ConfigError(f"trajectory {traj.id}: its example has no 'gold' answers; verl-rl needs the ground truth")
    return [str(g) for g in (gold if isinstance(gold, list) else [gold])]


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
        rows.append({"data_source": _source(t),
                     "prompt": [{"role": m["role"], "content": m.get("content", "")} for m in messages],
                     "ability": ability,
                     "reward_model": {"style": "rule", "ground_truth": {"target": _gold(t)}},
                     "extra_info": {"index": len(rows), "id": str(key), "question": str(t.example.get("question", "")),
                                    "split": split}})
    return rows


def export_rows(trajs: Iterable[Trajectory], fmt: str, *, max_length: int | None = None,
                allow_inexact: bool = False, ability: str = "qa") -> list[dict[str, Any]]:
    """The rows of format `fmt` (see module docstring)."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if fmt == "verl-rl":
        return verl_rl_rows(trajs, ability=ability)
    if fmt == "messages":
        return [messages_row(t) for t in trajs]
    if fmt == "tokenized":
        return [tokenized_row(t, max_length=max_length, allow_inexact=allow_inexact) for t in trajs]
    return [verl_sft_row(t) for t in trajs]


def write_rows(rows: Sequence[dict[str, Any]], out: str | Path, *, parquet: bool | None = None) -> Path:
    """JSONL, or parquet when `parquet` (default: the suffix is `.parquet`); written via a temp file."""
    out = Path(out)
    parquet = out.suffix == ".parquet" if parquet is None else parquet
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    if parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(list(rows)), tmp)
    else:
        with tmp.open("w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    tmp.replace(out)
    return out


def export(src: str | Path, fmt: str, out: str | Path, *, max_length: int | None = None,
           allow_inexact: bool = False, ability: str = "qa", overwrite: bool = False) -> dict[str, Any]:
    """Read `src`, write `out` in `fmt`; returns stats (rows, trajectories, format, paths)."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise ConfigError(f"--out {out} exists; choose another path or pass --overwrite (nothing was written)")
    trajs = list(read_trajectories(src))
    rows = export_rows(trajs, fmt, max_length=max_length, allow_inexact=allow_inexact, ability=ability)
    write_rows(rows, out, parquet=True if fmt.startswith("verl") else None)
    return {"step": "export", "format": fmt, "in": str(src), "out": str(out), "trajectories": len(trajs),
            "rows": len(rows)}
