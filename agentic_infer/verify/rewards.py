"""Record verdicts where every later stage reads them: `Trajectory.rewards` / `Rollout.rewards`, by metric name.

    write_verdicts(rollout, {"em": score("em", rollout.answer, gold), "judge_acc": 1.0})

Eval rows, synth filters and RL rewards then read `rewards["em"]` instead of scoring again.
Not covered: per-step rewards (`Step.reward`), deciding which metrics to compute.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout, Trajectory


def write_verdicts(target: Trajectory | Rollout, verdicts: Mapping[str, float]) -> dict[str, float]:
    """Write each `verdicts[name]` (a finite number) into `target.rewards[name]`; returns `target.rewards`.

    A Rollout's verdicts judge its answer, which came from its chosen trajectory (when it is not a
    vote), so they go into that trajectory's rewards too. An existing value under the same name is
    replaced.
    """
    if not isinstance(target, (Trajectory, Rollout)):
        raise ConfigError(f"write_verdicts: target is a {type(target).__name__}; pass a Trajectory or a Rollout")
    clean: dict[str, float] = {}
    for name, value in verdicts.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"write_verdicts: metric name {name!r} must be a non-empty string")
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"write_verdicts: {name}={value!r} is not a finite number; pass the verdict's score "
                              "(e.g. `verdict.score`, or float(verdict.correct))")
        clean[name] = float(value)
    target.rewards.update(clean)
    if isinstance(target, Rollout) and target.trajectory is not None:
        target.trajectory.rewards.update(clean)
    return target.rewards


__all__ = ["write_verdicts"]
