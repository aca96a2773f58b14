"""`run_envtasks`: synthesize env tasks on the synth pipeline (datatrove), write them, optionally their demos.

    cfg = EnvTasksConfig(out="runs/envtasks", count=200, seed=0)
    stats = run_envtasks(cfg)          # DIR/tasks.jsonl, DIR/dropped.jsonl, DIR/stats.json (+ DIR/demos/)

    agentic synth envtasks --env retail --count 200 --seed 0 --out runs/envtasks [--backend URI] [--demos]
    agentic synth envtasks --env retail --from-tasks ../shared/data/tools/tau_retail_db/retail_tasks_train.jsonl \
        --out runs/train-demos --demos

The steps (`synth.envtasks.steps`) run on the configured executor (`--executor local|ray|slurm`): SeedReader -> SampleStep ->
PhraseStep -> VerifyStep -> TaskWriter, their per-task outputs under `DIR/work/<config hash>/` (`tasks/`,
`dropped/<step>/`, `logs/`: datatrove's stats and completion markers). After the run they are merged into
`DIR/tasks.jsonl` (rows in seed order), `DIR/dropped.jsonl` (`{reason, step, id, record}`) and
`DIR/stats.json` (seeds, sampled, verified, dropped by reason, counts per template wording and per kind
sequence, seconds per task, every step's datatrove counts). Resuming is datatrove's: a rerun with the same
config skips the finished shards (`--tasks K` shards the seeds) and reruns a killed one whole; a changed
config gets its own work folder; LLM rewordings are cached in `DIR/cache/llm.sqlite3`, so a rerun pays for
none twice. With `demos`, the kept rows become demonstrations (`synth.envtasks.demos`) in `DIR/demos/`
(`trajectories.jsonl` + `stats.json`, as `agentic synth demos` writes them).

`from_tasks` reads an existing retail task file instead of sampling (its rows pass through as they are, with
`provenance.source`); retail DEV tasks are refused (they are for evaluation, never training data).
Not covered: envs other than retail (the sampler knows the retail tool graph only).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.executors import ExecutorConfig, run_steps
from agentic_infer.runner import atomic_open, iter_jsonl, write_jsonl
from synth.envtasks.sampler import SamplerConfig

log = logging.getLogger(__name__)
ENVS = ("retail",)


@dataclass
class EnvTasksConfig:
    """One run: `count` tasks seeded `seed` (or the rows of `from_tasks`) into `out`; see the module docstring."""

    out: str
    env: str = "retail"
    count: int | None = None
    seed: int = 0
    backend: str | None = None  # an LLM rewording each template intent
    demos: bool = False
    from_tasks: str | None = None
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    data_dir: str | None = None
    tokenizer: str = "default"  # the demos' target tokenizer: `load_tokenizer` spec (the embedded GGUF's)
    agent: dict[str, Any] = field(default_factory=dict)  # the demos' EnvAgentConfig settings (tool_schemas, ...)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)  # tasks (shards of the seeds), local/ray/slurm

    def __post_init__(self) -> None:
        if not self.out:
            raise ConfigError("out: missing; give the output directory (--out DIR)")
        if self.env not in ENVS:
            raise ConfigError(f"--env {self.env!r}: task synthesis knows the tool graph of {', '.join(ENVS)} only")
        if self.from_tasks is None and self.count is None:
            raise ConfigError("--count: missing; give the number of tasks to sample (or --from-tasks FILE)")
        if self.count is not None and (not isinstance(self.count, int) or self.count < 1):
            raise ConfigError(f"--count {self.count!r}: must be an integer >= 1")
        if self.from_tasks is not None:
            check_training_file(self.from_tasks)
        if self.backend is not None and "://" not in self.backend:
            raise ConfigError(f"--backend {self.backend!r}: not a backend URI; e.g. llamacpp://default, "
                              "openai://HOST:PORT/v1?model=NAME")


def check_training_file(path: str | Path) -> None:
    """Refuse a missing file and retail dev tasks (held out for evaluation)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--from-tasks {str(path)!r}: no such file; give a retail task JSONL "
                          "(e.g. tools/tau_retail_db/retail_tasks_train.jsonl)")
    if {"dev", "test"} & set(re.split(r"[^a-z0-9]+", p.name.lower())):
        raise ConfigError(f"--from-tasks {str(path)!r}: dev/test tasks are for evaluation, never training data; "
                          "use the train tasks or synthesized ones")


def read_task_rows(path: str | Path, *, limit: int | None = None) -> list[dict[str, Any]]:
    """The rows of a retail task file (train tasks, or a previous run's tasks.jsonl); dev rows refused."""
    check_training_file(path)
    rows = []
    for n, row in iter_jsonl(path, "one retail task {id, user_id, instruction, actions, outputs} a line"):
        if not isinstance(row, dict) or "actions" not in row or "user_id" not in row:
            raise ConfigError(f"{path}:{n}: not a retail task row (needs id, user_id, instruction, actions)")
        if "dev" in str(row.get("id", "")).split("-"):
            raise ConfigError(f"{path}:{n}: row {row.get('id')!r} is a dev task; dev tasks are never training data")
        row.setdefault("provenance", {"source": str(path), "index": len(rows)})  # index: the file's order
        rows.append(row)
        if limit and len(rows) >= limit:
            break
    return rows


def config_hash(cfg: EnvTasksConfig) -> str:
    """What decides the rows: everything but the output folder and the executor layout."""
    d = asdict(cfg)
    for k in ("out", "executor", "demos", "tokenizer", "agent"):
        d.pop(k)
    return hashlib.sha1(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:12]


def build_steps(cfg: EnvTasksConfig, work: Path, rows: list[dict[str, Any]] | None = None) -> list[Any]:
    from synth.envtasks.steps import PhraseStep, SampleStep, SeedReader, TaskWriter, VerifyStep
    from synth.pipeline.progress import ItemProgress

    dropped = str(work / "dropped")
    progress = ItemProgress(label=f"envtasks {cfg.env}", counter="reader",
                            enabled=cfg.executor.progress and cfg.executor.in_process)
    return [SeedReader(count=cfg.count or 0, seed=cfg.seed, rows=rows, progress=progress),
            SampleStep(sampler=cfg.sampler, data_dir=cfg.data_dir, exclusion_folder=dropped),
            PhraseStep(run_seed=cfg.seed, backend=cfg.backend, data_dir=cfg.data_dir, env=cfg.env,
                       cache_path=str(Path(cfg.out) / "cache" / "llm.sqlite3") if cfg.backend else None,
                       exclusion_folder=dropped),
            VerifyStep(data_dir=cfg.data_dir, exclusion_folder=dropped),
            TaskWriter(str(work))]


def _merge(work: Path, out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows = [r for f in sorted((work / "tasks").glob("*.jsonl")) for _, r in iter_jsonl(f)]
    rows.sort(key=lambda r: (r.get("provenance", {}).get("index", 0), str(r["id"])))
    dropped = [r for f in sorted((work / "dropped").glob("*/*.jsonl")) for _, r in iter_jsonl(f)]
    write_jsonl(out / "tasks.jsonl", rows)
    write_jsonl(out / "dropped.jsonl", dropped)
    return rows, dropped


def run_envtasks(cfg: EnvTasksConfig) -> dict[str, Any]:
    """Run `cfg` (see the module docstring); returns what `DIR/stats.json` holds."""
    from synth.pipeline.run import merge_stats

    out = Path(cfg.out)
    rows_in = read_task_rows(cfg.from_tasks, limit=cfg.count) if cfg.from_tasks else None
    digest = config_hash(cfg)
    work = out / "work" / digest
    steps = build_steps(cfg, work, rows_in)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    run_steps(steps, cfg.executor, logging_dir=work / "logs", job_name=f"envtasks-{cfg.env}")
    rows, dropped = _merge(work, out)
    step_stats = merge_stats(work / "logs")
    seeds = len(rows_in) if rows_in is not None else cfg.count or 0
    sampled = next((s["out"] for s in step_stats if s["step"] == "sample"), 0)
    work_s = sum(s["time_s"] for s in step_stats)
    stats: dict[str, Any] = {
        "name": "envtasks", "env": cfg.env, "config_hash": digest, "config": asdict(cfg), "seeds": seeds,
        "sampled": sampled, "verified": len(rows),
        "dropped": dict(Counter(d["reason"] for d in dropped)),
        "templates": dict(sorted(Counter(t for r in rows for t in r.get("provenance", {}).get("template", ()))
                                 .items())),
        "kinds": dict(Counter("+".join(r.get("provenance", {}).get("kinds", ())) or "file" for r in rows)),
        "s_per_task": round(work_s / seeds, 4) if seeds else None,
        "wall_s": round(time.monotonic() - t0, 3), "steps": step_stats,
    }
    if cfg.demos:
        from agentic_infer.backends.tokenizer import load_tokenizer
        from synth.demos import Vocab, write_demos
        from synth.envtasks.demos import build_env_demos

        result = build_env_demos(rows, Vocab(load_tokenizer(cfg.tokenizer)), env=cfg.env, agent=cfg.agent)
        write_demos(out / "demos", result, overwrite=True)  # rebuilt whole: demos are deterministic
        stats["demos"] = {k: result.stats[k] for k in ("tried", "kept", "rejected", "wall_s")}
    with atomic_open(out / "stats.json") as f:
        f.write(json.dumps(stats, indent=2, ensure_ascii=False, default=str))
    return stats


__all__ = ["ENVS", "EnvTasksConfig", "build_steps", "check_training_file", "config_hash", "read_task_rows",
           "run_envtasks"]
