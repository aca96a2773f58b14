"""LATS environments: retrieval QA (ReAct), Python programming with tests, math with a checker.

    env = RetrievalQAEnv("Which city is the capital of France?", retriever, gold="Paris")
    env = ProgramEnv("Write add(a, b).", visible_tests=["assert add(1, 2) == 3"],
                     hidden_tests=["assert add(-1, 1) == 0"], sandbox=PythonSandbox())
    env = MathEnv("What is 3 + 4?", gold="7")
    rollout = await LATS(llm, lambda example: env, iterations=10).run({"question": env.task})

- `RetrievalQAEnv` over any `Retriever`: actions `search[query]` (top-k passages, shown as
  "title: text"), `lookup[term]` (the next sentence containing the term in the last search's
  passages), `finish[answer]` (terminal). An unparseable action gets an error observation and the
  episode goes on; `max_steps` actions end it. Gold = exact match (SQuAD normalisation), scoring
  only unless feedback="oracle".
- `ProgramEnv`: an action is a whole program (a ```python block); it runs in the sandbox with the
  VISIBLE tests, whose outcome is the observation. Terminal when the visible tests pass or after
  `max_attempts`. The visible-test pass rate is legitimate environment feedback and is the
  terminal reward (`feedback_reward`); the HIDDEN tests are used only for `gold_reward` (scoring).
- `MathEnv`: actions `calculate[expr]` (the safe calculator), any other text = one reasoning step,
  `finish[answer]` (terminal). Gold = `math_equal`.
Not covered: Wikipedia API actions (`lookup` works over retrieved passages only), WebShop.
"""

from __future__ import annotations

import re
from typing import Any

from agentic_infer.tools.retrieval.base import Retriever
from agentic_infer.verify import exact_match, last_number, math_equal, normalize_answer

_REACT = re.compile(r"\b(search|lookup|finish)\s*\[(.*?)\]", re.I | re.S)
_SENT = re.compile(r"(?<=[.!?])\s+")


class _StepsEnv:
    """Shared by the text-action environments: state = {"steps": [...], "answer": ...}; an answer or
    `max_steps` actions end the episode."""

    max_steps: int

    def is_terminal(self, state: dict[str, Any]) -> bool:
        return state["answer"] is not None or len(state["steps"]) >= self.max_steps

    def describe(self, state: dict[str, Any]) -> str:
        return " | ".join(f"{s['action']} -> {s['observation'][:300]}" for s in state["steps"]) or "(no actions yet)"

    def answer(self, state: dict[str, Any]) -> str | None:
        return state["answer"]


class RetrievalQAEnv(_StepsEnv):
    name = "retrieval_qa"
    instructions = ("Answer the question by interleaving actions. Available actions, one per step:\n"
                    "search[query]: search the corpus and read the top passages;\n"
                    "lookup[term]: the next sentence containing the term in the passages last retrieved;\n"
                    "finish[answer]: give the final short answer.")

    def __init__(self, question: str, retriever: Retriever, *, gold: str | list[str] | None = None, k: int = 3,
                 max_steps: int = 7, passage_chars: int = 300):
        self.task = question.strip()
        self.retriever, self.gold, self.k, self.max_steps, self.passage_chars = retriever, gold, k, max_steps, passage_chars

    def init_state(self) -> dict[str, Any]:
        return {"steps": [], "answer": None, "passages": [], "lookups": {}}

    def parse_action(self, text: str) -> str | None:
        m = _REACT.search(text or "")
        return None if m is None else f"{m.group(1).lower()}[{' '.join(m.group(2).split())}]"

    async def step(self, state: dict[str, Any], action: str) -> tuple[dict[str, Any], dict[str, Any]]:
        s = {**state, "steps": list(state["steps"]), "lookups": dict(state["lookups"])}
        m = _REACT.search(action or "")
        if m is None:
            obs = "Invalid action. Use search[query], lookup[term] or finish[answer]."
        else:
            kind, arg = m.group(1).lower(), m.group(2).strip()
            if kind == "finish":
                s["answer"] = arg
                obs = f"Episode finished with answer: {arg}"
            elif kind == "search":
                hits = self.retriever.search([arg], self.k)[0]
                s["passages"] = [f"{h.title}: {h.text}" for h in hits]
                s["lookups"] = {}
                obs = " ".join(f"[{i}] {p[: self.passage_chars]}" for i, p in enumerate(s["passages"], 1)) or \
                    f"No results for {arg!r}."
            else:
                sents = [x for p in s["passages"] for x in _SENT.split(p) if arg.lower() in x.lower()]
                i = s["lookups"].get(arg.lower(), 0)
                s["lookups"][arg.lower()] = i + 1
                obs = f"(Result {i + 1}/{len(sents)}) {sents[i]}" if i < len(sents) else f"No more results for {arg!r}."
        s["steps"].append({"action": action, "observation": obs})
        return s, {"observation": obs, "valid": m is not None}

    def agreement_key(self, state: dict[str, Any]) -> str:
        last = state["steps"][-1]["action"] if state["steps"] else ""
        return "finish:" + normalize_answer(state["answer"]) if state["answer"] is not None else last.lower()

    async def gold_reward(self, state: dict[str, Any]) -> float | None:
        if self.gold is None:
            return None
        return exact_match(state["answer"], self.gold) if state["answer"] is not None else 0.0


_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", re.S)


class ProgramEnv:
    name = "program"
    action_max_tokens = 512  # a whole program per action: LATS uses this, not sampling.max_tokens

    def __init__(self, prompt: str, *, visible_tests: list[str], hidden_tests: list[str] | None = None,
                 sandbox: Any = None, max_attempts: int = 4):
        from agentic_infer.tools.sandbox import PythonSandbox

        self.task = prompt.strip()
        self.visible, self.hidden = list(visible_tests), list(hidden_tests or [])
        self.sandbox = sandbox or PythonSandbox(timeout_s=10.0)
        self.max_attempts = max_attempts
        tests = "\n".join(self.visible)
        self.instructions = ("Write a complete Python solution to the programming task in one ```python block. "
                             f"It must pass these tests:\n{tests}")

    def init_state(self) -> dict[str, Any]:
        return {"attempts": [], "code": None, "passed": 0, "total": len(self.visible)}

    def parse_action(self, text: str) -> str | None:
        m = _CODE.search(text or "")
        code = (m.group(1) if m else "").strip()
        return code or None

    async def _run_tests(self, code: str, tests: list[str]) -> tuple[int, str]:
        harness = [code, "__passed = 0", "__fails = []"]
        for t in tests:
            harness += ["try:", *("    " + ln for ln in t.splitlines()), "    __passed += 1",
                        "except Exception as __e:", f"    __fails.append({t!r} + ': ' + type(__e).__name__ + ' ' + str(__e))"]
        harness += ["print('PASSED', __passed)", "print('\\n'.join(__fails[:2]))"]
        res = await self.sandbox.run("\n".join(harness))
        m = re.search(r"PASSED (\d+)", res.content or "")
        if m is None:
            return 0, (res.error or res.content or "no output")[:400]
        return int(m.group(1)), res.content.split("\n", 1)[-1].strip()[:400]

    async def step(self, state: dict[str, Any], action: str) -> tuple[dict[str, Any], dict[str, Any]]:
        passed, why = await self._run_tests(action, self.visible)
        obs = f"{passed}/{len(self.visible)} visible tests passed" + (f"; failures: {why}" if why else "")
        s = {"attempts": state["attempts"] + [{"code": action, "observation": obs}], "code": action, "passed": passed,
             "total": len(self.visible)}
        return s, {"observation": obs}

    def is_terminal(self, state: dict[str, Any]) -> bool:
        return (state["code"] is not None and state["passed"] == state["total"]) or len(state["attempts"]) >= self.max_attempts

    def describe(self, state: dict[str, Any]) -> str:
        if not state["attempts"]:
            return "(no attempt yet)"
        last = state["attempts"][-1]
        return f"attempt {len(state['attempts'])}:\n```python\n{last['code']}\n```\n{last['observation']}"

    def answer(self, state: dict[str, Any]) -> str | None:
        return state["code"]

    def feedback_reward(self, state: dict[str, Any]) -> float:
        return state["passed"] / max(1, state["total"])

    def agreement_key(self, state: dict[str, Any]) -> str:
        return f"{state['passed']}/{state['total']}:" + " ".join((state["code"] or "").split())

    async def gold_reward(self, state: dict[str, Any]) -> float | None:
        if state["code"] is None:
            return 0.0
        tests = self.hidden or self.visible
        passed, _ = await self._run_tests(state["code"], tests)
        return 1.0 if passed == len(tests) else 0.0


_MATH = re.compile(r"\b(calculate|finish)\s*\[(.*?)\]", re.I | re.S)


class MathEnv(_StepsEnv):
    name = "math"
    instructions = ("Solve the math problem step by step. Each step is one short line of reasoning, or "
                    "calculate[expression] to evaluate arithmetic, or finish[answer] with the final answer.")

    def __init__(self, question: str, *, gold: str | None = None, max_steps: int = 8):
        self.task, self.gold, self.max_steps = question.strip(), gold, max_steps

    def init_state(self) -> dict[str, Any]:
        return {"steps": [], "answer": None}

    def parse_action(self, text: str) -> str | None:
        m = _MATH.search(text or "")
        if m:
            return f"{m.group(1).lower()}[{m.group(2).strip()}]"
        line = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")
        return line[:300] or None

    async def step(self, state: dict[str, Any], action: str) -> tuple[dict[str, Any], dict[str, Any]]:
        from agentic_infer.tools.calculator import evaluate_expression, format_number

        s = {"steps": list(state["steps"]), "answer": state["answer"]}
        m = _MATH.search(action or "")
        if m and m.group(1).lower() == "finish":
            s["answer"] = m.group(2).strip()
            obs = f"Final answer: {s['answer']}"
        elif m:
            try:
                obs = f"= {format_number(evaluate_expression(m.group(2)))}"
            except (ValueError, ArithmeticError, SyntaxError) as e:
                obs = f"calculator error: {type(e).__name__}: {e}"
        else:
            obs = "(noted)"
        s["steps"].append({"action": action, "observation": obs})
        return s, {"observation": obs}

    def agreement_key(self, state: dict[str, Any]) -> str:
        if state["answer"] is not None:
            return "finish:" + (last_number(state["answer"]) or state["answer"].strip().lower())
        return (state["steps"][-1]["action"] if state["steps"] else "").strip().lower()

    async def gold_reward(self, state: dict[str, Any]) -> float | None:
        if self.gold is None:
            return None
        if state["answer"] is None:
            return 0.0
        return 1.0 if math_equal(state["answer"], self.gold) else 0.0
