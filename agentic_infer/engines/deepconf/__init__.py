"""DeepConf (Deep Think with Confidence): confidence-filtered voting over sampled reasoning traces.

- `confidence`: the pure confidence measures and voting rules (numpy only).
- `engine`: `DeepConf(llm, config).run(example) -> Rollout` (offline and online modes), `DeepConfConfig`.
- `replay`: online mode replayed over recorded traces (`ReplayTrace`, `replay_online`, `replay_offline`).

    from agentic_infer.engines.deepconf import DeepConf
    rollout = await DeepConf(llm, mode="online", budget=32, warmup=16).run({"question": "What is 6*7?"})
"""

from agentic_infer.engines.deepconf.confidence import (
    METRICS,
    VARIANT_KEEP,
    GroupTracker,
    answer_weights,
    group_confidences,
    leading_share,
    online_threshold,
    stop_position,
    token_confidence,
    token_confidences,
    trace_confidence,
    trace_confidences,
    variant_keep,
    vote,
)
from agentic_infer.engines.deepconf.engine import (
    DEFAULT_INSTRUCTION,
    DEFAULT_SAMPLING,
    DeepConf,
    DeepConfConfig,
)
from agentic_infer.engines.deepconf.replay import ReplayOutcome, ReplayTrace, replay_offline, replay_online

__all__ = [
    "DEFAULT_INSTRUCTION", "DEFAULT_SAMPLING", "METRICS", "VARIANT_KEEP", "DeepConf", "DeepConfConfig", "GroupTracker", "ReplayOutcome",
    "ReplayTrace", "answer_weights", "group_confidences", "leading_share", "online_threshold", "replay_offline",
    "replay_online", "stop_position", "token_confidence", "token_confidences", "trace_confidence",
    "trace_confidences", "variant_keep", "vote",
]
