"""SE-Agent's LLM summariser (optional): an LLM reads one failed attempt and writes why it failed and what the next
attempt should change; the operators (`operators.py`) put that analysis into their guidance, after the rule-based
failure mode (`summary.py`), which stays the part a run can rely on.

    analyst = LLMAnalyst(llm)                                           # any backend; greedy, 80 tokens
    result = await evolve(example, make_engine, verify, budget=8, analyst=analyst)

One generation per failed attempt. These calls are not attempts: the budget B still counts attempts only, and
`EvolveResult.analyses` says how many extra generations the analyst made, so a comparison can report them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentic_infer.types import Message, SamplingParams, Trajectory
from synth.evolve.summary import AttemptSummary

PROMPT = """An attempt at the question below was judged wrong.

Question: {question}
Tool calls it made: {calls}
The end of its output:
{tail}
Its final answer: {answer}
An automatic check says: {failure}

In one or two sentences, say why the attempt failed and what the next attempt should do differently. \
Reply with those sentences only."""


class LLMAnalyst:
    """`await analyst(example, trajectory, summary) -> str`: the LLM's analysis of a failed attempt (module
    docstring), one line of at most `max_chars` characters."""

    def __init__(self, llm: Any, *, max_tokens: int = 80, temperature: float = 0.0, seed: int = 0,
                 tail_chars: int = 600, max_chars: int = 400):
        self.llm, self.tail_chars, self.max_chars = llm, tail_chars, max_chars
        self.params = SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed)

    def prompt(self, example: Mapping[str, Any], traj: Trajectory, summary: AttemptSummary) -> list[Message]:
        calls = "; ".join(f"{a}({q})" for a, q in zip((s.action for s in traj.steps), summary.queries)) or "none"
        text = PROMPT.format(question=example.get("question", ""), calls=calls, answer=summary.answer,
                             tail=traj.completion_text[-self.tail_chars:],
                             failure=summary.failure.replace("_", " "))
        return [Message("user", text)]

    async def __call__(self, example: Mapping[str, Any], traj: Trajectory, summary: AttemptSummary) -> str:
        out = await self.llm.generate(self.prompt(example, traj, summary), self.params)
        return " ".join(out[0].text.split())[: self.max_chars]
