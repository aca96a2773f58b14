"""RAP tasks: Game of 24, GSM8K-style sub-question decomposition, Blocksworld planning.

Each task gives the prompts and parsers `RAPWorldModel` / `RAPConfig` need (see `rap.py`), a
`heuristic` and `gold_reward` (scoring only unless feedback="oracle"), and `score_answer(answer)`.

- `Game24RAPTask("1 1 4 6")`: action "a op b"; the world model predicts the numbers left; the
  heuristic is 1.0 when the prediction matches exact arithmetic (the checker in `game24.py`), else 0.
- `GSM8KTask(question, gold=None)`: action = the next sub-question ("Now we can answer the
  question: ..." ends the episode); the world model answers it (`world_samples` samples; the
  majority final number and its share = answer confidence); no heuristic. Gold via `math_equal`.
- `BlocksworldTask(init, goal)`: action = one Blocksworld move; the world model predicts the next
  facts; the heuristic is 0 when the checker finds the move illegal or the prediction wrong, else
  the share of goal facts satisfied. Terminal when the goal holds. Gold = the plan replays legally.
Not covered: few-shot prompt pools (prompts here are zero-shot instructions).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from agentic_infer.engines.tree import blocksworld as bw
from agentic_infer.engines.tree.game24 import _ACTION, Game24Env, fmt
from agentic_infer.engines.tree.prompting import first_line
from agentic_infer.errors import ParseError
from agentic_infer.verify import last_number, math_equal

_LEFT = re.compile(r"left\s*:?\s*((?:-?\d+(?:/\d+)?[\s,]*)+)", re.I)


class _Base:
    def invalid_state(self, state: dict[str, Any], action: str, text: str) -> dict[str, Any]:
        return {**state, "invalid": True, "last": f"{action} -> unparseable: {text[:100]}"}

    async def score_answer(self, answer: str | None) -> bool | None:
        return None


class Game24RAPTask(_Base):
    name = "game24"

    def __init__(self, puzzle: str):
        self.env = Game24Env(puzzle)
        self.task = self.env.puzzle

    def init_state(self) -> dict[str, Any]:
        return {"numbers": self.env.init_state()["numbers"], "steps": [], "invalid": False}

    def action_prompt(self, state: dict[str, Any]) -> str:
        return (f"Game of 24 with {self.task}. Numbers left: {' '.join(state['numbers'])}.\n"
                "Propose ONE operation on two of the numbers left, written 'a op b' with op in + - * /.")

    def parse_action(self, text: str) -> str | None:
        m = _ACTION.search(first_line(text).replace("×", "*").replace("÷", "/"))
        return None if m is None else f"{m.group(1)} {m.group(2).replace('x', '*')} {m.group(3)}"

    def world_prompt(self, state: dict[str, Any], action: str) -> str:
        return (f"Numbers: {' '.join(state['numbers'])}. Apply the operation {action}: replace the two numbers by "
                "its result. Which numbers are left? Answer as 'left: n1 n2 ...'.")

    def parse_world(self, text: str, state: dict[str, Any], action: str) -> dict[str, Any] | None:
        m = _LEFT.search(text or "")
        if m is None:
            return None
        nums = m.group(1).replace(",", " ").split()
        try:
            nums = [fmt(Fraction(x)) for x in nums]
        except (ValueError, ZeroDivisionError):
            return None
        if len(nums) != len(state["numbers"]) - 1:
            return None
        return {"numbers": nums, "steps": state["steps"] + [f"{action} (left: {' '.join(nums)})"], "invalid": False}

    def state_key(self, state: dict[str, Any]) -> str:
        return " ".join(sorted(state["numbers"]))

    def self_eval_prompt(self, state: dict[str, Any], action: str) -> str:
        return (f"Numbers left: {' '.join(state['numbers'])}. Is '{action}' a good step towards reaching exactly 24 "
                "with all the numbers? Answer Yes or No.")

    def heuristic(self, parent: dict[str, Any], action: str | None, child: dict[str, Any] | None) -> float | None:
        if child is None or child.get("invalid"):
            return 0.0
        true, aux = self.env.apply({"numbers": parent["numbers"], "exprs": parent["numbers"], "history": [],
                                    "error": None}, action or "")
        return 1.0 if aux["valid"] and sorted(true["numbers"]) == sorted(child["numbers"]) else 0.0

    def is_terminal(self, state: dict[str, Any]) -> bool:
        return bool(state.get("invalid")) or len(state["numbers"]) <= 1

    def describe(self, state: dict[str, Any]) -> str:
        s = f"left: {' '.join(state['numbers'])}"
        return s + (f" | steps: {'; '.join(state['steps'])}" if state["steps"] else "") + (
            " | INVALID" if state.get("invalid") else "")

    def answer(self, state: dict[str, Any]) -> str | None:
        if state.get("invalid") or len(state["numbers"]) != 1:
            return None
        return "; ".join(s.split(" (left")[0] for s in state["steps"])

    async def score_answer(self, answer: str | None) -> bool | None:
        if answer is None:
            return False
        s = self.env.init_state()
        for step in answer.split(";"):
            s, aux = self.env.apply(s, step)
            if not aux["valid"]:
                return False
        return await self.env.gold_reward(s) == 1.0

    async def gold_reward(self, state: dict[str, Any]) -> float | None:
        return 1.0 if await self.score_answer(self.answer(state)) else 0.0


class GSM8KTask(_Base):
    name = "gsm8k"
    FINAL = "now we can answer the question"

    def __init__(self, question: str, gold: str | None = None):
        self.task = question.strip()
        self.gold = gold

    def init_state(self) -> dict[str, Any]:
        return {"qa": [], "done": False, "invalid": False}

    def _so_far(self, state: dict[str, Any]) -> str:
        return "".join(f"Sub-question {i}: {q}\nAnswer {i}: {a}\n" for i, (q, a) in enumerate(state["qa"], 1))

    def action_prompt(self, state: dict[str, Any]) -> str:
        return (f"Question: {self.task}\n{self._so_far(state)}\nBreak the question into simpler sub-questions. "
                "Write the next sub-question on one line; when the question can be answered, write "
                "'Now we can answer the question: <the question>'.")

    def parse_action(self, text: str) -> str | None:
        line = re.sub(r"^(sub-?question\s*\d*\s*:)\s*", "", first_line(text), flags=re.I)
        return line or None

    def world_prompt(self, state: dict[str, Any], action: str) -> str:
        return (f"Question: {self.task}\n{self._so_far(state)}Answer this sub-question: {action}\n"
                "Reason briefly and end with 'The answer is N.'")

    def parse_world(self, text: str, state: dict[str, Any], action: str) -> dict[str, Any] | None:
        num = last_number(text)
        if num is None:
            return None
        return {"qa": state["qa"] + [[action, f"The answer is {num}."]], "invalid": False,
                "done": action.strip().lower().startswith(self.FINAL)}

    def state_key(self, state: dict[str, Any]) -> str:
        return state["qa"][-1][1] if state["qa"] else ""

    def self_eval_prompt(self, state: dict[str, Any], action: str) -> str:
        return (f"Question: {self.task}\n{self._so_far(state)}New sub-question: {action}\n"
                "Is the new sub-question useful for answering the question? Answer Yes or No.")

    def heuristic(self, parent: Any, action: Any, child: Any) -> float | None:
        return None

    def is_terminal(self, state: dict[str, Any]) -> bool:
        return bool(state.get("done") or state.get("invalid"))

    def describe(self, state: dict[str, Any]) -> str:
        return " | ".join(f"{q} -> {a}" for q, a in state["qa"]) or "(no sub-questions yet)"

    def answer(self, state: dict[str, Any]) -> str | None:
        if not state.get("done") or not state["qa"]:
            return None
        return last_number(state["qa"][-1][1])

    async def score_answer(self, answer: str | None) -> bool | None:
        if self.gold is None:
            return None
        return answer is not None and math_equal(answer, self.gold)

    async def gold_reward(self, state: dict[str, Any]) -> float | None:
        ok = await self.score_answer(self.answer(state))
        return None if ok is None else float(ok)


class BlocksworldTask(_Base):
    name = "blocksworld"

    def __init__(self, init: str, goal: str):
        self.init = bw.format_state(bw.parse_state(init))
        self.goal_text = goal
        self.goal = bw.parse_goal(goal)
        self.task = f"Initial state: {self.init}. Goal: {goal}"

    def init_state(self) -> dict[str, Any]:
        return {"facts": self.init, "plan": [], "invalid": False}

    def action_prompt(self, state: dict[str, Any]) -> str:
        return (f"Blocksworld. Actions: pick up X, put down X, stack X on top of Y, unstack X from on top of Y. "
                f"You can only move a clear block, and hold one block at a time.\nCurrent state: {state['facts']}\n"
                f"Goal: {self.goal_text}\nWrite the next action.")

    def parse_action(self, text: str) -> str | None:
        act = bw.parse_action(first_line(text))
        return None if act is None else bw.format_action(act)

    def world_prompt(self, state: dict[str, Any], action: str) -> str:
        return (f"Blocksworld. Current state: {state['facts']}\nAction: {action}\n"
                "Describe the new state in the same style (which blocks are clear, what the hand holds, "
                "where each block is).")

    def parse_world(self, text: str, state: dict[str, Any], action: str) -> dict[str, Any] | None:
        try:
            facts = bw.format_state(bw.parse_state(text))
        except ParseError:
            return None
        return {"facts": facts, "plan": state["plan"] + [action], "invalid": False}

    def state_key(self, state: dict[str, Any]) -> str:
        return state["facts"]

    def self_eval_prompt(self, state: dict[str, Any], action: str) -> str:
        return (f"Blocksworld. Current state: {state['facts']}\nGoal: {self.goal_text}\n"
                f"Is '{action}' a legal action that brings us closer to the goal? Answer Yes or No.")

    def heuristic(self, parent: dict[str, Any], action: str | None, child: dict[str, Any] | None) -> float | None:
        if child is None or child.get("invalid"):
            return 0.0
        true = bw.apply(bw.parse_state(parent["facts"]), action or "")
        if true is None or bw.format_state(true) != child["facts"]:
            return 0.0
        return bw.goal_fraction(true, self.goal)

    def is_terminal(self, state: dict[str, Any]) -> bool:
        return bool(state.get("invalid")) or bw.goal_satisfied(bw.parse_state(state["facts"]), self.goal)

    def describe(self, state: dict[str, Any]) -> str:
        return f"{state['facts']}" + (f" | plan: {'; '.join(state['plan'])}" if state["plan"] else "")

    def answer(self, state: dict[str, Any]) -> str | None:
        return None if state.get("invalid") or not self.is_terminal(state) else "; ".join(state["plan"])

    async def score_answer(self, answer: str | None) -> bool | None:
        if answer is None:
            return False
        plan = [p for p in answer.split(";") if p.strip()]
        return bw.validate_plan(self.init, self.goal_text, plan)[0]

    async def gold_reward(self, state: dict[str, Any]) -> float | None:
        return 1.0 if await self.score_answer(self.answer(state)) else 0.0


RAP_TASKS = {"game24": Game24RAPTask, "gsm8k": GSM8KTask, "blocksworld": BlocksworldTask}
