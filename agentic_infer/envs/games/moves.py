"""What the grid games share: the one `act` tool, reading an action name, and the verdict of an episode.

    act_tool("Make one move.", ACTIONS, "the move")    # the OpenAI schema of act {"action": one of ACTIONS}
    action_name(" up ", ACTIONS)                        # "Up" (case and surrounding space ignored), or None
    game_verdict(solved=..., detail=..., steps=3, limit=10, unit="moves", calls=env.calls, seed=3)

A game's verdict has two checks, "solved" and "within step limit", reward 1.0 iff both pass, and `info` holding
the episode's return (the sum of the per-step rewards) and its steps. Not covered: the games' own rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agentic_infer.envs.base import CallRecord, Check, EnvVerdict, function_schema


def act_tool(description: str, actions: Iterable[str], argument: str) -> dict[str, Any]:
    """The schema of `act {"action": one of actions}`; `argument` describes the action to the model."""
    return function_schema("act", description, {"action": {"type": "string", "enum": list(actions),
                                                           "description": argument}}, ["action"])


def action_name(text: Any, actions: Iterable[str]) -> str | None:
    """The action name that `text` spells (case and surrounding space ignored), None when it spells none."""
    return {n.lower(): n for n in actions}.get(text.strip().lower()) if isinstance(text, str) else None


def game_verdict(*, solved: bool, detail: str, steps: int, limit: int, unit: str, calls: Sequence[CallRecord],
                 **info: Any) -> EnvVerdict:
    """"solved" (with `detail` when it is not) and "within step limit"; reward 1.0 iff both pass."""
    checks = [Check("solved", solved, "" if solved else detail),
              Check("within step limit", steps <= limit, f"{steps} of {limit} {unit}")]
    ret = round(sum(c.reward or 0.0 for c in calls), 10)
    return EnvVerdict(float(all(c.passed for c in checks)), checks, {"return": ret, "steps": steps, **info})
