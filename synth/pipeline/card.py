"""The dataset card (`OUT/README.md`) of a pipeline run: what made it, its config, per-step counts, a sample."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from agentic_infer.config import config_to_dict


def write_card(out: Path, cfg: Any, summary: dict[str, Any], sample: list[Any]) -> Path:
    rows = ["| step | in | out | dropped (reason: n) | tokens (prompt / completion) | LLM calls | cache hits | time s |",
            "|---|---|---|---|---|---|---|---|"]
    for s in summary["steps"]:
        dropped = ", ".join(f"{k}: {v}" for k, v in s["dropped"].items()) or "-"
        tokens = f"{s['prompt_tokens']} / {s['completion_tokens']}" if "prompt_tokens" in s else "-"
        rows.append(f"| {s['step']} | {s['in']} | {s['out']} | {dropped} | {tokens} | {s.get('llm_calls', '-')} | "
                    f"{s.get('cache_hits', '-')} | {s['time_s']} |")
    text = "\n".join([
        f"# {summary['name']}",
        "",
        "Made by `agentic_infer`'s synth pipeline (`synth.pipeline`, on datatrove): "
        f"{summary['records']} records, config hash `{summary['config_hash']}`, {summary['tasks']} task(s).",
        "Each line of `trajectories/*.jsonl` is one `agentic_infer.types.Trajectory` record (`Trajectory.from_json`).",
        "",
        "## Steps",
        "",
        *rows,
        "",
        "## Config",
        "",
        "```yaml",
        yaml.safe_dump(config_to_dict(cfg), sort_keys=False, allow_unicode=True).rstrip(),
        "```",
        "",
        "## Sample",
        "",
        "```json",
        json.dumps(sample[0].to_dict(), indent=1, ensure_ascii=False)[:4000] if sample else "(no records)",
        "```",
        "",
    ])
    path = out / "README.md"
    path.write_text(text, encoding="utf-8")
    return path
