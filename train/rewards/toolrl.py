"""ToolRL's reward on a RewardInput: R = R_format ∈ {0, 1} + R_correct ∈ [−3, 3] over predicted vs gold tool calls.

    toolrl_reward(RewardInput('<think>..</think><tool_call>\\n{"name": "f", "parameters": {"x": 1}}\\n</tool_call>',
                              gold=[{"name": "f", "parameters": {"x": 1}}]))          # 1 + 3 = 4.0

The reward itself (call parsing, name / parameter-name / parameter-value matching, the format check) is
defined once in `agentic_infer.verify.toolrl`, shared with the BFCL and ToolRL envs; this module adapts it
to `RewardInput` (gold: the expected calls as a JSON string, call dicts or (name, params) pairs).
Not covered: ToolRL's gold-aware format check (use `agentic_infer.verify.toolrl.toolrl_score` with a gold text).
"""

from __future__ import annotations

from agentic_infer.verify.toolrl import as_calls, parse_tool_calls, toolrl_correctness
from train.rewards.base import RewardInput, require_gold
from train.rewards.format import toolrl_format


def toolrl_reward(inp: RewardInput) -> float:
    """R_format + R_correct (gold: the expected calls in `inp.gold`)."""
    gold = as_calls(require_gold(inp, "toolrl_reward"))
    return toolrl_format(inp) + toolrl_correctness(parse_tool_calls(inp.completion), gold)


__all__ = ["as_calls", "parse_tool_calls", "toolrl_correctness", "toolrl_reward"]
