"""Blocksworld: a state checker (parse, legality, transition, goal test) for planning tasks.

    s = parse_state("the a block is clear, the hand is empty, the a block is on top of the b block, "
                    "the b block is on the table")
    s2 = apply(s, "unstack the a block from on top of the b block")   # None when illegal
    format_state(s2); goal_satisfied(s2, parse_goal("the b block is on top of the a block"))
    validate_plan(init_text, goal_text, ["unstack a from b", "put down a", ...]) -> (ok, why)

A state is {"on": {block: block_below | "table"}, "holding": block | None}; "clear" is derived.
Text uses the Blocksworld benchmark's phrasing ("the X block is on top of the Y block", "... is on
the table", "... is clear", "the hand is empty", "the hand is holding the X block"); actions are
"pick up X", "put down X", "stack X on top of Y", "unstack X from on top of Y" (the words "the" and
"block" are optional). Not covered: multiple arms, block sizes, PDDL files.
"""

from __future__ import annotations

import re
from typing import Any

from agentic_infer.errors import ParseError

_B = r"(?:the\s+)?([a-z0-9]+)(?:\s+block)?"
_ON = re.compile(rf"{_B}\s+is\s+on\s+top\s+of\s+{_B}")
_TABLE = re.compile(rf"{_B}\s+is\s+on\s+the\s+table")
_HOLD = re.compile(rf"hand\s+is\s+holding\s+{_B}")
_ACTIONS = [
    ("unstack", re.compile(rf"unstack\s+{_B}\s+from(?:\s+on\s+top\s+of)?\s+{_B}")),
    ("stack", re.compile(rf"stack\s+{_B}\s+on(?:\s+top\s+of)?\s+{_B}")),
    ("pickup", re.compile(rf"pick\s*up\s+{_B}")),
    ("putdown", re.compile(rf"put\s*down\s+{_B}")),
]


def parse_state(text: str) -> dict[str, Any]:
    """Facts text -> state; raises ParseError when a block's position is missing or contradictory."""
    t = (text or "").lower()
    on: dict[str, str] = {}
    for a, b in _ON.findall(t):
        if on.get(a, b) != b:
            raise ParseError(f"blocksworld state: block {a!r} is on two things in {text!r}")
        on[a] = b
    for (a,) in [(m,) for m in _TABLE.findall(t)]:
        if on.get(a, "table") != "table":
            raise ParseError(f"blocksworld state: block {a!r} both on the table and on {on[a]!r}")
        on[a] = "table"
    holding = _HOLD.findall(t)
    hold = holding[0] if holding else None
    mentioned = set(re.findall(r"(?:the\s+)?([a-z0-9]+)\s+block", t)) | set(on) | set(on.values()) - {"table"}
    if hold:
        mentioned.discard(hold)
        if hold in on:
            raise ParseError(f"blocksworld state: block {hold!r} is held and placed at once")
    missing = sorted(b for b in mentioned if b not in on and b != "table")
    if missing or not on and not hold:
        raise ParseError(f"blocksworld state: no position for block(s) {missing or '?'} in {text!r}; "
                         "say 'the X block is on the table' or '... on top of the Y block'")
    return {"on": dict(sorted(on.items())), "holding": hold}


def parse_goal(text: str) -> dict[str, str]:
    """Goal facts: {block: below}."""
    t = (text or "").lower()
    goal = {a: b for a, b in _ON.findall(t)}
    goal.update({a: "table" for a in _TABLE.findall(t)})
    if not goal:
        raise ParseError(f"blocksworld goal {text!r}: expected facts like 'the a block is on top of the b block'")
    return goal


def clear(state: dict[str, Any], block: str) -> bool:
    return block != state.get("holding") and all(below != block for below in state["on"].values())


def format_state(state: dict[str, Any]) -> str:
    parts = [f"the {b} block is clear" for b in sorted(state["on"]) if clear(state, b)]
    parts.append(f"the hand is holding the {state['holding']} block" if state.get("holding") else "the hand is empty")
    for b, below in sorted(state["on"].items()):
        parts.append(f"the {b} block is on the table" if below == "table" else f"the {b} block is on top of the {below} block")
    return ", ".join(parts)


def parse_action(text: str) -> tuple[str, tuple[str, ...]] | None:
    t = (text or "").lower()
    best = None
    for kind, rx in _ACTIONS:
        m = rx.search(t)
        if m and (best is None or m.start() < best[2]):
            best = (kind, m.groups(), m.start())
    return None if best is None else (best[0], best[1])


def format_action(action: tuple[str, tuple[str, ...]]) -> str:
    kind, args = action
    return {"pickup": "pick up the {0} block", "putdown": "put down the {0} block",
            "stack": "stack the {0} block on top of the {1} block",
            "unstack": "unstack the {0} block from on top of the {1} block"}[kind].format(*args)


def apply(state: dict[str, Any], action: str | tuple[str, tuple[str, ...]]) -> dict[str, Any] | None:
    """The next state, or None when the action is unparseable or illegal."""
    act = parse_action(action) if isinstance(action, str) else action
    if act is None:
        return None
    kind, args = act
    on, hold = dict(state["on"]), state.get("holding")
    x = args[0]
    if kind == "pickup":
        if hold or on.get(x) != "table" or not clear(state, x):
            return None
        del on[x]
        return {"on": on, "holding": x}
    if kind == "unstack":
        y = args[1]
        if hold or on.get(x) != y or not clear(state, x):
            return None
        del on[x]
        return {"on": on, "holding": x}
    if kind == "putdown":
        if hold != x:
            return None
        on[x] = "table"
        return {"on": dict(sorted(on.items())), "holding": None}
    y = args[1]  # stack
    if hold != x or y not in on or not clear(state, y) or x == y:
        return None
    on[x] = y
    return {"on": dict(sorted(on.items())), "holding": None}


def goal_satisfied(state: dict[str, Any], goal: dict[str, str]) -> bool:
    return all(state["on"].get(b) == below for b, below in goal.items())


def goal_fraction(state: dict[str, Any], goal: dict[str, str]) -> float:
    return sum(state["on"].get(b) == below for b, below in goal.items()) / len(goal)


def validate_plan(init: str, goal: str, plan: list[str]) -> tuple[bool, str]:
    """Replay `plan` from the initial facts; (True, "") when every step is legal and the goal holds."""
    s = parse_state(init)
    g = parse_goal(goal)
    for i, step in enumerate(plan, 1):
        nxt = apply(s, step)
        if nxt is None:
            return False, f"step {i} {step!r} is illegal in state: {format_state(s)}"
        s = nxt
    if not goal_satisfied(s, g):
        return False, f"goal not reached; final state: {format_state(s)}"
    return True, ""
