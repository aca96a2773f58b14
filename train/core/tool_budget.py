"""A tool-call budget for RL rollouts (ZeroTIR / ToRL): after `max_calls` calls the tool is not run and
the model is shown an exhaustion message instead, so it must answer from what it has.

    verdict = tool_budget(calls_used=3, max_calls=3)
    if not verdict.allowed:
        observation = verdict.message          # shown to the model as the tool's output

Pure: the agent loop counts the calls (`Usage.tool_calls`) and asks before each one. Not covered:
per-tool budgets, token budgets (the loop's `max_total_tokens`).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentic_infer.errors import ConfigError

EXHAUSTED = "The number of tool calls has reached the limit ({max_calls}); no more calls will run. " \
            "Answer with what you have."


@dataclass(frozen=True)
class BudgetVerdict:
    allowed: bool
    left: int
    message: str | None = None


def tool_budget(calls_used: int, max_calls: int, *, message: str = EXHAUSTED) -> BudgetVerdict:
    """Whether call number `calls_used + 1` may run; when not, the message (formatted with `max_calls`)."""
    if max_calls < 0 or calls_used < 0:
        raise ConfigError(f"calls_used={calls_used!r}, max_calls={max_calls!r}: both must be >= 0")
    left = max_calls - calls_used
    if left > 0:
        return BudgetVerdict(True, left)
    return BudgetVerdict(False, 0, message.format(max_calls=max_calls))


__all__ = ["EXHAUSTED", "BudgetVerdict", "tool_budget"]
