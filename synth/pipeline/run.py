"""Build a pipeline's datatrove steps from its config and run them on the configured executor (local, Ray, Slurm).

    from synth.pipeline import PipelineConfig, run_pipeline
    summary = run_pipeline(build_config(PipelineConfig, file="pipe.yaml"))   # -> the stats.json mapping

Output directory `OUT/`: `trajectories/<rank>.jsonl` (one Trajectory record a line), `dropped/<step>/<rank>.jsonl`
(`{reason, step, id, record}`), `stats.json` (per step: in, out, dropped by reason, tokens, LLM calls, cache
hits, time; merged over tasks), `README.md` (the dataset card), optional `parquet/`, `dataset/`
(`save_to_disk`), `cache/llm.sqlite3` (the request cache), `logs/<config hash>/` (datatrove's logs, per-task
stats and completion markers), `config.json`.

Resuming is datatrove's: a finished task is skipped (its completion marker), a killed task reruns whole and
rewrites its own output files, so no record is lost or duplicated; the request cache makes the rerun free
for every LLM call that had finished. A run with a changed config (another filter, another sample count)
gets fresh completion markers (the logs folder is per config hash) and so reruns every task, again
replaying the cached calls; the previous run's outputs are moved to `OUT/previous/<hash>/` first, never
deleted. `executor.kind` (`--executor`) runs the same steps on a Ray cluster or on Slurm
(`agentic_infer.executors`): the same records and merged stats as the local run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from agentic_infer.config import config_to_dict
from agentic_infer.errors import ConfigError
from agentic_infer.executors import run_steps
from agentic_infer.runner import atomic_open, iter_jsonl, read_jsonl
from synth.pipeline.config import PipelineConfig
from synth.pipeline.filter_step import FilterStep
from synth.pipeline.judge import JudgeStep
from synth.pipeline.readers import Reader
from synth.pipeline.rollout import RolloutStep
from synth.pipeline.writers import TrajectoryWriter, parquet_writer

log = logging.getLogger(__name__)
OUTPUTS = ("trajectories", "dropped", "parquet", "dataset", "stats.json", "README.md")


def config_hash(cfg: PipelineConfig) -> str:
    """What decides the records: everything but the executor layout and the output directory."""
    d = config_to_dict(cfg)
    for k in ("out", "executor"):
        d.pop(k, None)
    return hashlib.sha1(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:12]


def build_steps(cfg: PipelineConfig, **rollout_kwargs: Any) -> list[Any]:
    """The datatrove steps of `cfg` (validated now: a missing file, an unknown engine, task, metric or filter
    raises a ConfigError before anything runs). `rollout_kwargs` go to `RolloutStep` (e.g. `make_llm`)."""
    from synth.pipeline.progress import ItemProgress

    out = Path(cfg.out)
    r = cfg.reader
    ex = cfg.executor
    progress = ItemProgress(label=f"{cfg.name}: {'rollout' if cfg.rollout is not None else 'items'}",
                            counter="rollout" if cfg.rollout is not None else "reader",
                            enabled=ex.progress and ex.in_process)
    steps: list[Any] = [Reader(kind=r.kind, path=r.path, task=r.task, limit=r.limit, fields=r.fields,
                               progress=progress)]
    if cfg.rollout is not None:
        ro = cfg.rollout
        steps.append(RolloutStep(engine=ro.engine, backend=ro.backend, task=ro.task or "", samples=ro.samples,
                                 settings=ro.settings, concurrency=ro.concurrency, index=ro.index, data=r.path,
                                 cache_path=str(out / "cache" / "llm.sqlite3") if ro.cache else None,
                                 progress=progress, **rollout_kwargs))
    if cfg.judge is not None:
        steps.append(JudgeStep(metrics=cfg.judge.metric_names, judge_specs=cfg.judge.judge_specs,
                               task=(cfg.rollout.task if cfg.rollout is not None else None) or r.task or "",
                               cache_dir=str(out / "cache"), concurrency=cfg.judge.concurrency))
    needs_trajectories = cfg.judge is not None or any(
        f["name"] not in ("exact_dedup", "minhash_dedup", "decontaminate") for f in cfg.filters)
    if needs_trajectories and cfg.rollout is None and r.kind != "trajectories":
        raise ConfigError("filters/judge read trajectories: add a rollout step, or read trajectories "
                          "(reader.kind=trajectories, `agentic synth filter --in DIR`)")
    for i, f in enumerate(cfg.filters):
        opts = {k: v for k, v in f.items() if k != "name"}
        steps.append(FilterStep(f["name"], options=opts, exclusion_folder=str(out / "dropped"),
                                label=f"filter{i}:{f['name']}"))
    if cfg.writer.jsonl:
        steps.append(TrajectoryWriter(str(out)))
    if cfg.writer.parquet:
        steps.append(parquet_writer(str(out)))
    return steps


def _archive_previous(out: Path, digest: str) -> None:
    """Move the outputs of a run with another config to OUT/previous/<its hash>/ (never delete them)."""
    cfg_file = out / "config.json"
    if not cfg_file.exists():
        return
    try:
        old = json.loads(cfg_file.read_text()).get("hash")
    except json.JSONDecodeError:
        old = "unknown"
    if old == digest:
        return
    dest = out / "previous" / str(old)
    dest.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS:
        if (out / name).exists():
            shutil.move(str(out / name), str(dest / name))
    log.warning("%s: the config changed (%s -> %s); the previous outputs are in %s", out, old, digest, dest)


def _total(v: Any) -> float:
    if hasattr(v, "total"):
        return v.total
    return v.get("total", 0) if isinstance(v, dict) else v


def merge_stats(logs: Path) -> list[dict[str, Any]]:
    """datatrove's per-task stats (`logs/stats/*.json`) summed, as one entry per step: in, out, dropped by
    reason, tokens, LLM calls, cache hits, backend calls, time."""
    from datatrove.utils.stats import PipelineStats

    total = PipelineStats()
    for f in sorted((logs / "stats").glob("*.json")):
        total = total + PipelineStats.from_json(json.loads(f.read_text()))
    steps = []
    for st in total.stats:
        counts = {k: _total(v) for k, v in st.stats.items()}
        n_in = int(counts.get("total", counts.get("forwarded", 0)))
        steps.append({
            "step": st.name.split(": ", 1)[-1],
            "in": n_in,
            "out": n_in if "WRITER" in st.name else int(counts.get("forwarded", 0)),
            "dropped": {k[len("dropped_"):]: int(v) for k, v in counts.items() if k.startswith("dropped_")},
            **{k: int(counts[k]) for k in ("prompt_tokens", "completion_tokens", "llm_calls", "cache_hits",
                                           "backend_calls", "judge_calls", "judge_backend_calls") if k in counts},
            **{k: int(v) for k, v in counts.items() if k.startswith("correct:")},
            "time_s": round(float(st.time_stats.total), 3),
        })
    return steps


def read_trajectories(out: Path) -> list[Any]:
    from agentic_infer.types import Trajectory

    return [t for f in sorted((out / "trajectories").glob("*.jsonl")) for t in read_jsonl(f, Trajectory.from_json)]


def first_trajectory(out: Path) -> list[Any]:
    """The first record written (the card's sample), read alone: `[Trajectory]`, or `[]`."""
    from agentic_infer.types import Trajectory

    for f in sorted((out / "trajectories").glob("*.jsonl")):
        for _, rec in iter_jsonl(f, "one Trajectory a line", skip_bad=True):
            try:
                return [Trajectory.from_dict(rec)]
            except (KeyError, TypeError, ValueError):  # input items written without a rollout
                return []
    return []


def run_pipeline(cfg: PipelineConfig, **rollout_kwargs: Any) -> dict[str, Any]:
    """Run `cfg` (see the module docstring); returns what `OUT/stats.json` holds."""
    steps = build_steps(cfg, **rollout_kwargs)  # validates before anything is written
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    digest = config_hash(cfg)
    _archive_previous(out, digest)
    (out / "config.json").write_text(json.dumps({"hash": digest, "config": config_to_dict(cfg)}, indent=2,
                                                default=str))
    logs = out / "logs" / digest
    ex = cfg.executor
    t0 = time.monotonic()
    run_steps(steps, ex, logging_dir=logs, job_name=cfg.name)
    summary = {"name": cfg.name, "config_hash": digest, "tasks": ex.tasks, "wall_s": round(time.monotonic() - t0, 3),
               "steps": merge_stats(logs)}
    summary["records"] = summary["steps"][-1]["out"] if summary["steps"] else 0
    if cfg.writer.jsonl:  # what the JSONL writer wrote; the records are read back only for save_to_disk
        summary["records"] = next(s["in"] for s in summary["steps"] if s["step"] == TrajectoryWriter.name)
        if cfg.writer.save_to_disk and summary["records"]:
            from agentic_infer.types import trajectories_to_dataset

            trajectories_to_dataset(read_trajectories(out)).save_to_disk(str(out / "dataset"))
        if cfg.writer.card:
            from synth.pipeline.card import write_card

            write_card(out, cfg, summary, first_trajectory(out))
    with atomic_open(out / "stats.json") as f:
        f.write(json.dumps(summary, indent=2, ensure_ascii=False))
    return summary


__all__ = ["build_steps", "config_hash", "merge_stats", "read_trajectories", "run_pipeline"]
