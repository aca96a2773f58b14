"""Synth pipelines on datatrove: readers -> rollout (any engine x any backend, k samples) -> judge -> filters
-> writers, each a datatrove `PipelineStep`, run by datatrove's executors (local here, Slurm / Ray on a cluster).

    from agentic_infer.config import build_config
    from synth.pipeline import PipelineConfig, run_pipeline
    cfg = build_config(PipelineConfig, file="pipe.yaml", overrides=["rollout.samples=4"])
    stats = run_pipeline(cfg)          # OUT/trajectories/*.jsonl, OUT/dropped/, OUT/stats.json, OUT/README.md

    agentic synth run pipe.yaml --set rollout.samples=4
    agentic synth rollouts --task hotpotqa --data FILE --engine direct --backend llamacpp://default --out DIR
    agentic synth filter --in DIR --filters correct --filters accuracy_band --out DIR2

Modules: `records` (how examples and Trajectories ride in datatrove Documents), the steps in datatrove's
layout (`readers`, `rollout`, `judge`, `filter_step`, `writers`), `filters` (the filters as plain functions,
`FILTERS`), `config` (the YAML schema), `run` (build and run;
stats.json; resume), `card` (the dataset card). LLM requests go through `agentic_infer.backends.cache.CachedLLM`.
Not covered here: demonstrations from gold decompositions, rejection-sampled SFT sets, exports and fuzzed QA
(their own modules of `synth/`).
"""

from synth.pipeline.config import (
    ExecutorConfig,
    JudgeConfig,
    PipelineConfig,
    ReaderConfig,
    RolloutConfig,
    WriterConfig,
)
from synth.pipeline.filter_step import FilterStep
from synth.pipeline.filters import FILTERS, get_filter
from synth.pipeline.judge import JudgeStep
from synth.pipeline.readers import Reader
from synth.pipeline.rollout import RolloutStep
from synth.pipeline.run import build_steps, run_pipeline
from synth.pipeline.writers import TrajectoryWriter

__all__ = ["FILTERS", "ExecutorConfig", "FilterStep", "JudgeConfig", "JudgeStep", "PipelineConfig", "Reader",
           "ReaderConfig", "RolloutConfig", "RolloutStep", "TrajectoryWriter", "WriterConfig", "build_steps",
           "get_filter", "run_pipeline"]
