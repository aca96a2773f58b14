"""The pipeline's YAML config: a validated dataclass per step, read with `agentic_infer.config.build_config`.

    cfg = build_config(PipelineConfig, file="pipe.yaml", overrides=["rollout.samples=4", "executor.tasks=2"])

```yaml
out: runs/hotpot-sft            # output directory (trajectories/, dropped/, stats.json, README.md, cache/)
reader: {kind: task, task: hotpotqa, path: ../shared/data/multihop/hotpotqa_train_100.json, limit: 20}
rollout: {engine: direct, backend: "llamacpp://default", samples: 4, settings: {sampling: {max_tokens: 64, temperature: 0.7}}}
judge: {metrics: [em, f1, {name: judge_acc, backend: "openai://HOST:8000/v1?model=M", verdict: json}]}
filters:                        # in order; each `{name: NAME, ...options}` (see synth.pipeline.filters)
  - {name: correct, metric: em}
  - {name: length, max_tokens: 512}
  - {name: exact_dedup}
writer: {jsonl: true, parquet: false, save_to_disk: false, card: true}
executor: {kind: local, tasks: 1, workers: 1}  # kind: local | ray | slurm (agentic_infer.executors)
```
Unknown keys (a step field, a filter or a filter option that does not exist) fail with the key and what
is accepted, before anything runs or is written.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.config import parse_overrides, renamed
from agentic_infer.errors import ConfigError
from agentic_infer.executors import ExecutorConfig
from synth.pipeline.filters import get_filter
from synth.pipeline.readers import READER_KINDS


@dataclass
class ReaderConfig:
    """Where the items come from (see `synth.pipeline.readers.Reader`)."""

    kind: str = "task"  # task | jsonl | parquet | hf | corpus | trajectories
    path: str = ""
    task: str | None = None  # kind=task: the eval task whose loader reads `path`
    limit: int | None = None
    fields: dict[str, str] = field(default_factory=dict)  # expected field -> column in the file

    def __post_init__(self) -> None:
        if self.kind not in READER_KINDS:
            raise ConfigError(f"reader.kind={self.kind!r}: choose one of {', '.join(READER_KINDS)}")
        if self.limit is not None and (not isinstance(self.limit, int) or self.limit < 1):
            raise ConfigError(f"reader.limit={self.limit!r}: must be an integer >= 1 (or null for all)")


@renamed(max_tokens="settings.sampling.max_tokens", temperature="settings.sampling.temperature",
         seed="settings.sampling.seed", options=("settings", "the engine's config overrides"))
@dataclass
class RolloutConfig:
    """Which engine on which backend, k samples per item (see `synth.pipeline.rollout.RolloutStep`); `settings` are
    the engine's config overrides (as `agentic run --set`: `{max_searches: 3, sampling: {temperature: 0.7}}`)."""

    engine: str = "direct"
    backend: str = "llamacpp://default"
    task: str | None = None  # prompts and answer extraction; default: reader.task
    samples: int = 1
    settings: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 8
    index: str | None = None  # for engines that search: a built index directory, or a corpus:
    #                           per-question (each example's own paragraphs), pooled, wiki-vital
    cache: bool = True  # per-request LLM cache in OUT/cache/llm.sqlite3

    def __post_init__(self) -> None:
        for name in ("samples", "concurrency"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"rollout.{name}={v!r}: must be an integer >= 1")


@dataclass
class JudgeConfig:
    """Verdicts into `Trajectory.rewards`: each entry of `metrics` is a verify metric's name (`em`, `f1`, ...)
    or an LLM judge `{name: judge_acc, backend: URI, verdict: json|yes-no}` (built by
    `agentic_infer.engines.judge.make_judge`, see `synth.pipeline.judge.JudgeStep`; its verdicts cached in
    OUT/cache/judge-<name>.sqlite3)."""

    metrics: tuple[Any, ...] = ("em",)
    concurrency: int = 8  # LLM-judge calls at once

    def __post_init__(self) -> None:
        from agentic_infer.verify import METRICS
        from synth.pipeline.judge import check_judge_spec

        self.metrics = tuple(self.metrics)
        bad = [m for m in self.metrics if isinstance(m, str) and m not in METRICS]
        if bad:
            raise ConfigError(f"judge.metrics: unknown metric(s) {bad}; choose from {sorted(METRICS)}, or give an "
                              "LLM judge {name: judge_acc, backend: URI, verdict: json|yes-no}")
        for m in self.metrics:
            if not isinstance(m, str):
                check_judge_spec(m)
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise ConfigError(f"judge.concurrency={self.concurrency!r}: must be an integer >= 1")

    @property
    def metric_names(self) -> tuple[str, ...]:
        return tuple(m for m in self.metrics if isinstance(m, str))

    @property
    def judge_specs(self) -> list[dict[str, Any]]:
        from synth.pipeline.judge import check_judge_spec

        return [check_judge_spec(m) for m in self.metrics if not isinstance(m, str)]


@dataclass
class WriterConfig:
    jsonl: bool = True  # OUT/trajectories/<rank>.jsonl
    parquet: bool = False  # OUT/parquet/<rank>.parquet
    save_to_disk: bool = False  # OUT/dataset (datasets.Dataset.save_to_disk), after the run
    card: bool = True  # OUT/README.md: what made it, the config, per-step counts, a sample


def parse_filter(item: Any) -> dict[str, Any]:
    """A filter entry: a mapping `{name: NAME, option: value}` or a string `NAME` / `NAME:key=value,key=value`."""
    if isinstance(item, str):
        name, _, rest = item.partition(":")
        parts = [p for p in rest.split(",") if p]
        if any("=" not in p for p in parts):
            raise ConfigError(f"--filters {item!r}: expected NAME or NAME:key=value,key=value "
                              "(e.g. length:max_tokens=512)")
        item = {"name": name.strip(), **parse_overrides(parts)}
    if not isinstance(item, dict) or "name" not in item:
        raise ConfigError(f"filters entry {item!r}: expected {{name: NAME, ...options}} or 'NAME:key=value'")
    spec = get_filter(item["name"])
    takes = [p.name for p in inspect.signature(spec.fn).parameters.values() if p.kind is p.KEYWORD_ONLY]
    bad = sorted(set(item) - {"name", *takes})
    if bad:
        raise ConfigError(f"filters: {item['name']!r} has no option(s) {bad}; it takes {takes}")
    return dict(item)


@dataclass
class PipelineConfig:
    """The whole pipeline: reader -> [rollout] -> [judge] -> filters -> writers, on datatrove's executor."""

    out: str = ""
    name: str = "synth"
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    rollout: RolloutConfig | None = None
    judge: JudgeConfig | None = None
    filters: list[Any] = field(default_factory=list)
    writer: WriterConfig = field(default_factory=WriterConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)

    def __post_init__(self) -> None:
        if not self.out:
            raise ConfigError("out: missing; give the output directory (out: DIR, or --out DIR)")
        self.filters = [parse_filter(f) for f in (self.filters or [])]
        if self.rollout is not None and self.rollout.task is None:
            self.rollout.task = self.reader.task
            if self.rollout.task is None:
                raise ConfigError("rollout.task: missing; name the eval task whose prompt and answer extraction to "
                                  "use (rollout.task: hotpotqa), or read with reader.kind=task")


__all__ = ["ExecutorConfig", "JudgeConfig", "PipelineConfig", "ReaderConfig", "RolloutConfig", "WriterConfig",
           "parse_filter"]
