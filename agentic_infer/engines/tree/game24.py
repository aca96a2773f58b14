"""Game of 24: a deterministic environment and an exact solver (the checker is `verify.game24.check_24`).

    env = Game24Env("1 1 4 6")
    s = env.init_state()                       # {"numbers": ["1","1","4","6"], "exprs": [...], ...}
    s, aux = await env.step(s, "4 * 6 = 24")   # aux["observation"] == "4 * 6 = 24 (left: 1 1 24)"
    solve("1 1 4 6")                            # e.g. "((4 * 6) * 1) * 1"

An action combines two of the remaining numbers with + - * /, written "a op b" (an "= c" and a
"(left: ...)" after it are ignored: the environment computes the result itself, with exact
fractions). A state is terminal when one number is left or the action was invalid (an invalid
action is a dead end, not retried). The gold reward is 1.0 iff the last number is exactly 24.
Not covered: other targets than 24 beyond the `target` argument, unary operations or concatenation.
"""

from __future__ import annotations

import itertools
import re
from fractions import Fraction
from functools import lru_cache
from typing import Any

from agentic_infer.verify.game24 import check_24, parse_numbers

_NUM = r"-?\d+(?:\.\d+)?(?:/\d+)?"
_ACTION = re.compile(rf"({_NUM})\s*([-+*/×x÷])\s*({_NUM})")
_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b}


def fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


@lru_cache(maxsize=65536)
def _solve(nums: tuple[Fraction, ...], target: Fraction) -> tuple[str, ...] | None:
    """Steps 'a op b = c' reaching target, or None."""
    if len(nums) == 1:
        return () if nums[0] == target else None
    for i, j in itertools.permutations(range(len(nums)), 2):
        a, b = nums[i], nums[j]
        rest = tuple(nums[k] for k in range(len(nums)) if k not in (i, j))
        for op, f in _OPS.items():
            if op in "+*" and i > j:
                continue
            if op == "/" and b == 0:
                continue
            c = f(a, b)
            sub = _solve(tuple(sorted(rest + (c,))), target)
            if sub is not None:
                return (f"{fmt(a)} {op} {fmt(b)} = {fmt(c)}",) + sub
    return None


def solve_steps(puzzle: str | list[Any], target: int = 24) -> list[str] | None:
    """A list of steps 'a op b = c' that reaches `target`, or None when the puzzle has no solution."""
    r = _solve(tuple(sorted(parse_numbers(puzzle))), Fraction(target))
    return None if r is None else list(r)


def solvable(numbers: list[str] | list[Fraction] | str, target: int = 24) -> bool:
    return solve_steps(numbers if isinstance(numbers, str) else [str(n) for n in numbers], target) is not None


def solve(puzzle: str | list[Any], target: int = 24) -> str | None:
    """One expression using every number once that equals `target`, or None."""
    steps = solve_steps(puzzle, target)
    if steps is None:
        return None
    env = Game24Env(puzzle if isinstance(puzzle, str) else " ".join(map(str, puzzle)), target=target)
    s = env.init_state()
    for st in steps:
        s = env.apply(s, st)[0]
    return s["exprs"][0]


class Game24Env:
    """The Game of 24 as an environment (see the module docstring)."""

    name = "game24"

    def __init__(self, puzzle: str, *, target: int = 24):
        self.numbers = parse_numbers(puzzle)
        self.puzzle = " ".join(fmt(n) for n in self.numbers)
        self.target = target

    def init_state(self) -> dict[str, Any]:
        nums = [fmt(n) for n in self.numbers]
        return {"numbers": nums, "exprs": list(nums), "history": [], "error": None}

    def apply(self, state: dict[str, Any], action: str) -> tuple[dict[str, Any], dict[str, Any]]:
        m = _ACTION.search((action or "").replace("×", "*").replace("÷", "/"))
        nums = [Fraction(x) for x in state["numbers"]]
        exprs = list(state["exprs"])
        hist = list(state["history"])
        if m is None:
            err = f"invalid action {action.strip()[:80]!r}: expected 'a op b' with op in + - * /"
            return {**state, "history": hist + [action.strip()[:80]], "error": err}, {"observation": err, "valid": False}
        a, op, b = Fraction(m.group(1)), m.group(2).replace("x", "*").replace("×", "*").replace("÷", "/"), Fraction(m.group(3))
        ia = next((i for i, x in enumerate(nums) if x == a), None)
        ib = next((i for i, x in enumerate(nums) if x == b and i != ia), None)
        if ia is None or ib is None:
            err = f"invalid action {m.group(0)!r}: {fmt(a)} and {fmt(b)} are not both among {' '.join(state['numbers'])}"
            return {**state, "history": hist + [m.group(0)], "error": err}, {"observation": err, "valid": False}
        if op == "/" and b == 0:
            err = "invalid action: division by zero"
            return {**state, "history": hist + [m.group(0)], "error": err}, {"observation": err, "valid": False}
        c = _OPS[op](a, b)
        expr = f"({exprs[ia]} {op} {exprs[ib]})"
        keep = [k for k in range(len(nums)) if k not in (ia, ib)]
        new_nums = [fmt(nums[k]) for k in keep] + [fmt(c)]
        new_exprs = [exprs[k] for k in keep] + [expr]
        line = f"{fmt(a)} {op} {fmt(b)} = {fmt(c)} (left: {' '.join(new_nums)})"
        return ({"numbers": new_nums, "exprs": new_exprs, "history": hist + [line], "error": None},
                {"observation": line, "valid": True})

    async def step(self, state: dict[str, Any], action: str) -> tuple[dict[str, Any], dict[str, Any]]:
        return self.apply(state, action)

    def is_terminal(self, state: dict[str, Any]) -> bool:
        return state.get("error") is not None or len(state["numbers"]) <= 1

    def describe(self, state: dict[str, Any]) -> str:
        steps = "; ".join(state["history"])
        tail = f" | error: {state['error']}" if state.get("error") else ""
        return f"left: {' '.join(state['numbers'])}" + (f" | steps: {steps}" if steps else "") + tail

    def answer(self, state: dict[str, Any]) -> str | None:
        if state.get("error") is not None or len(state["numbers"]) != 1:
            return None
        e = state["exprs"][0]
        return (e[1:-1] if e.startswith("(") and e.endswith(")") else e) + f" = {state['numbers'][0]}"

    async def gold_reward(self, state: dict[str, Any]) -> float | None:
        ans = self.answer(state)
        return 1.0 if ans is not None and check_24(ans, self.puzzle, target=self.target) else 0.0

    def agreement_key(self, state: dict[str, Any]) -> str:
        return " ".join(sorted(state["numbers"])) + ("!" if state.get("error") else "")


class Game24LATSEnv(Game24Env):
    """Game of 24 with the LATS prompt pieces (`instructions`, `parse_action`)."""

    instructions = ("Game of 24: combine the given numbers with + - * / to reach exactly 24, using every number "
                    "exactly once. Each step combines two of the numbers left into their result. Write one step "
                    "as 'a op b = c', e.g. '4 * 6 = 24'.")

    @property
    def task(self) -> str:
        return self.puzzle

    def parse_action(self, text: str) -> str | None:
        m = _ACTION.search((text or "").replace("×", "*").replace("÷", "/"))
        return None if m is None else f"{m.group(1)} {m.group(2).replace('x', '*')} {m.group(3)}"
