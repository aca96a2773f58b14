"""`agentic synth demos|coa` on any executor: the questions in contiguous blocks, one per rank, merged in order.

    spec = BuildSpec("coa", task="musique", data="musique_train_100.json", options=CoAOptions())
    stats = run_build(spec, "coa/", ExecutorConfig(kind="slurm", tasks=4))     # or the default: one local process

A `BuildSpec` names everything a run builds from (task, file, options, the tokenizer by name, the role backend
by URI), so a rank on another process or node rebuilds the same inputs: it loads the questions, builds its
block (`agentic_infer.shards.block`; a pooled corpus still spans every question) into its shard folder
(`out/shards/<plan>/<rank>/`, as one run writes: trajectories.jsonl, stats.json, and for coa dropped.jsonl),
and the driver concatenates the shards in rank order, which is the questions' order: the output is the
one-process output (timings aside). Stats: counts summed over the shards (`sum_stats`), `wall_s` the driver's,
the rates recomputed from it, and `executor` recording where it ran. A killed run resumes by rank.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.executors import ExecutorConfig
from agentic_infer.runner import write_jsonl
from agentic_infer.shards import block, concat_lines, plan_key, run_shards, sum_stats

KINDS = ("demos", "coa")
FILES = {"demos": ("trajectories.jsonl",), "coa": ("trajectories.jsonl", "dropped.jsonl")}


@dataclass(frozen=True)
class BuildSpec:
    """One `synth demos|coa` run's inputs, by name (picklable)."""

    kind: str  # demos | coa
    task: str
    data: str
    options: Any  # synth.demos.DemoOptions | synth.coa.CoAOptions
    limit: int | None = None
    tokenizer: str = "default"  # tokenizer + chat template: 'default' (embedded GGUF), a .gguf or an HF directory
    backend: str | None = None  # take tokenizer and template from this backend URI instead
    role_backend: str | None = None  # coa's llm mode: every role's backend URI

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"BuildSpec.kind={self.kind!r}: choose one of {list(KINDS)}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit {self.limit}: must be >= 1")

    def vocab(self) -> Any:
        from synth.demos import Vocab

        if self.backend:
            from agentic_infer.backends import load_llm

            return Vocab(load_llm(self.backend))
        from agentic_infer.backends.tokenizer import load_tokenizer

        return Vocab(load_tokenizer(self.tokenizer))

    def examples(self) -> tuple[str, list[dict[str, Any]]]:
        """The task's name and its loaded questions."""
        from agentic_infer.tasks import get_task

        t = get_task(self.task)
        return t.name, t.load(Path(self.data), limit=self.limit)

    def build(self, out: Path, only: range | None = None) -> dict[str, Any]:
        """Build the questions `only` (all by default) and write them into `out`; returns the stats."""
        task, examples = self.examples()
        vocab = self.vocab()
        if self.kind == "demos":
            from synth.demos import build_demos, write_demos

            result = asyncio.run(build_demos(examples, vocab, self.options, task=task, only=only))
            result.stats["data"] = str(self.data)
            write_demos(out, result, overwrite=True)
        else:
            from synth.coa import build_coa, write_coa

            llms = None
            if self.role_backend is not None:
                from agentic_infer.backends import load_llm

                llms = load_llm(self.role_backend)
            result = asyncio.run(build_coa(examples, vocab, self.options, task=task, only=only, llms=llms))
            write_coa(out, result, overwrite=True)
        return result.stats


def build_block(spec: BuildSpec, rank: int, world: int, out: Path) -> int:
    """Rank `rank`'s block of the questions, built into its shard folder `out`."""
    _, examples = spec.examples()
    mine = block(len(examples), rank, world)
    spec.build(out, only=mine)
    return len(mine)


def run_build(spec: BuildSpec, out: str | Path, executor: ExecutorConfig | None = None, *,
              overwrite: bool = False) -> dict[str, Any]:
    """Build `spec` into `out` on `executor` (one local process by default); returns the stats written."""
    out, ex = Path(out), executor or ExecutorConfig()
    if (out / "trajectories.jsonl").exists() and not overwrite:
        raise ConfigError(f"{out / 'trajectories.jsonl'} exists; choose another --out or pass --overwrite "
                          "(nothing was written)")
    if not ex.sharded:
        return spec.build(out)
    t0 = time.perf_counter()
    folder = out / "shards" / plan_key(spec.kind, spec.task, str(spec.data), spec.limit, asdict(spec.options),
                                       spec.tokenizer, spec.backend, spec.role_backend, ex.tasks)
    shards = run_shards(partial(build_block, spec), ex, folder, job_name=f"synth-{spec.kind}")
    for name in FILES[spec.kind]:
        write_jsonl(out / name, concat_lines(d / name for d in shards))
    stats = sum_stats([json.loads((d / "stats.json").read_text()) for d in shards], same=("options",))
    wall = time.perf_counter() - t0
    stats["wall_s"] = round(wall, 3)
    if spec.kind == "demos":
        stats["demos_per_min"] = round(stats["kept"] / wall * 60, 1) if wall > 0 else None
    else:
        stats["ms_per_row"] = round(1000 * wall / max(stats["built"], 1), 1)
    stats["executor"] = {"kind": ex.kind, "tasks": ex.tasks, "workers": ex.workers, "shards": str(folder)}
    (out / "stats.json").write_text(json.dumps(stats, indent=2), encoding="utf-8")
    return stats


__all__ = ["BuildSpec", "build_block", "run_build"]
