"""Deterministic FakeLLM policies for the Game of 24 (shared by the tree-search tests)."""

from __future__ import annotations

import itertools
import re

from agentic_infer.engines.tree.game24 import solvable

_LEFT = re.compile(r"(?:Progress so far|Trajectory|Failed attempt): left: ([-\d/ ]+)")


def numbers_in(prompt: str) -> list[str]:
    m = _LEFT.findall(prompt)
    return m[-1].split() if m else []


def all_steps(nums: list[str]) -> list[str]:
    out = []
    for i, j in itertools.permutations(range(len(nums)), 2):
        for op in "+-*/":
            if nums[j] == "0" and op == "/":
                continue
            out.append(f"{nums[i]} {op} {nums[j]}")
    return out


class Game24Policy:
    """Action: cycles through every legal step (deterministic counter). Value: 9 if still solvable, else 2."""

    def __init__(self, reflection: str = "I combined numbers into a dead end; keep 24 reachable."):
        self.k = 0
        self.reflection = reflection

    def __call__(self, prompt: str) -> str:
        if "Score: N" in prompt:
            nums = numbers_in(prompt)
            ok = bool(nums) and solvable(nums) and "error" not in prompt.split("Trajectory:")[-1].split("How likely")[0]
            return "Looks " + ("promising" if ok else "hopeless") + f".\nScore: {9 if ok else 2}"
        if "did not solve the task" in prompt:
            return self.reflection
        nums = numbers_in(prompt)
        steps = all_steps(nums) or ["1 + 1"]
        self.k += 1
        return steps[(self.k * 7) % len(steps)] + " = ?"


_RAP_LEFT = re.compile(r"Numbers(?: left)?: ([-\d/ ]+)\.")


class Game24RAPPolicy:
    """RAP on Game of 24: cycles legal operations; exact world model; Yes iff still solvable."""

    def __init__(self):
        self.k = 0

    def __call__(self, prompt: str) -> str:
        from agentic_infer.engines.tree.game24 import Game24Env

        nums = _RAP_LEFT.findall(prompt)[-1].split()
        if "Which numbers are left" in prompt:
            op = re.search(r"Apply the operation (.+?): replace", prompt).group(1)
            env = Game24Env(" ".join(nums)) if len(nums) > 1 else None
            s, aux = env.apply({"numbers": nums, "exprs": nums, "history": [], "error": None}, op)
            return "left: " + " ".join(s["numbers"])
        if "Answer Yes or No" in prompt:
            op = re.search(r"Is '(.+?)' a good step", prompt).group(1)
            env = Game24Env(" ".join(nums))
            s, aux = env.apply({"numbers": nums, "exprs": nums, "history": [], "error": None}, op)
            return "Yes" if aux["valid"] and solvable(s["numbers"]) else "No"
        steps = all_steps(nums)
        self.k += 1
        return steps[(self.k * 5) % len(steps)]


async def searched(engine, example):
    """The engine's Rollout and its search's full node table (what `--save-tree` writes)."""
    search = engine.search(example)
    rollout = await engine.rollout(search, await search.run(), example)
    return rollout, search.tree
