"""Tool-integrated reasoning with code (ToRL / ZeroTIR, and ARTIST's tag template).

    engine = TIR(llm, PythonSandbox(timeout_s=10), max_tool_calls=4)
    traj = await engine.run({"question": "What is 2**100 mod 7?"})

The model writes a python block; generation pauses at its end, the code runs in the sandbox, and
the output (stdout, or only the last traceback line on error, ToRL-style) is inserted as an
output block; generation continues in the same assistant turn. Past `max_tool_calls` code is not
run and the budget-exhausted message is inserted instead. Answers: `\\boxed{}` (tir) or
`<answer>` (artist). Reward helpers for these systems live with the trainers, not here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentic_infer.backends.base import LLM
from agentic_infer.engines import prompts
from agentic_infer.engines.dialects import get_dialect
from agentic_infer.engines.driver import run_many
from agentic_infer.engines.handlers import CodeHandler
from agentic_infer.engines.loop import AgentLoop, Episode, LoopLimits
from agentic_infer.errors import ConfigError
from agentic_infer.tools.base import Tool
from agentic_infer.types import Message, SamplingParams, Trajectory

DEFAULT_SAMPLING = SamplingParams(max_tokens=1024, temperature=0.7, top_p=0.95, logprobs=0)


class TIR:
    def __init__(self, llm: LLM, sandbox: Tool, *, max_tool_calls: int = 4, max_turns: int = 10,
                 max_total_tokens: int = 8192, dialect: str = "tir", sampling: SamplingParams | None = None,
                 instruction: str | None = None):
        self.dialect = get_dialect(dialect)
        if {a.tool for a in self.dialect.actions} != {"python"}:
            raise ConfigError(f"dialect={dialect!r} is not a code dialect; use 'tir' or 'artist'")
        self.sampling = sampling or DEFAULT_SAMPLING
        self.instruction = instruction or prompts.TIR_INSTRUCTIONS[self.dialect.name]
        self.loop = AgentLoop(llm, self.dialect, {"python": CodeHandler(sandbox)}, sampling=self.sampling,
                              limits=LoopLimits(max_actions=max_tool_calls, max_turns=max_turns,
                                                max_tokens_per_turn=self.sampling.max_tokens,
                                                max_total_tokens=max_total_tokens),
                              limit_message=prompts.TOOL_BUDGET_MESSAGE, repeat_message=None,
                              engine=f"tir/{self.dialect.name}",
                              config={"dialect": self.dialect.name, "max_tool_calls": max_tool_calls,
                                      "max_turns": max_turns, "sampling": self.sampling.to_dict()})

    def messages(self, example: dict[str, Any]) -> list[Message]:
        question = example.get("question") or example.get("problem")
        if not str(question or "").strip():
            raise ConfigError(f"example {example!r} has no 'question' (or 'problem')")
        text = self.instruction.format(max_actions=self.loop.limits.max_actions)
        return [Message("user", f"{text}\n\n{prompts.QUESTION_TEMPLATE.format(question=question)}")]

    def start(self, example: dict[str, Any]) -> Episode:
        return self.loop.start(example, self.messages(example))

    async def run(self, example: dict[str, Any]) -> Trajectory:
        return await self.loop.run(example, self.messages(example))

    async def run_many(self, examples: Sequence[dict[str, Any]], *, concurrency: int = 8, scheduler: str = "async",
                       out: str | Path | None = None, progress: bool = True) -> list[Trajectory]:
        return await run_many(self.loop, self.start, examples, scheduler=scheduler, concurrency=concurrency,
                              out=out, progress=progress)
