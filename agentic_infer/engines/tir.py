"""Tool-integrated reasoning with code (ToRL / ZeroTIR, and ARTIST's tag template).

    engine = TIR(llm, PythonSandbox(timeout_s=10), max_tool_calls=4)
    rollout = await engine.run({"question": "What is 2**100 mod 7?"})  # rollout.trajectories[0]

The model writes a python block; generation pauses at its end, the code runs in the sandbox, and
the output (stdout, or only the last traceback line on error, ToRL-style) is inserted as an
output block; generation continues in the same assistant turn. Past `max_tool_calls` code is not
run and the budget-exhausted message is inserted instead. Answers: `\\boxed{}` (tir) or
`<answer>` (artist). Correctness (and so any reward) is judged by `agentic_infer.verify`; this
engine only records what happened (tool calls and errors in `steps` and `usage`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentic_infer.backends.base import LLM
from agentic_infer.config import build_config
from agentic_infer.engines import prompts
from agentic_infer.engines.base import LoopEngine
from agentic_infer.engines.dialects import get_dialect
from agentic_infer.engines.handlers import CodeHandler
from agentic_infer.engines.loop import AgentLoop, Episode, LoopLimits
from agentic_infer.errors import ConfigError
from agentic_infer.tools.base import Tool
from agentic_infer.types import Message, SamplingParams

DEFAULT_SAMPLING = SamplingParams(max_tokens=1024, temperature=0.7, top_p=0.95, logprobs=0)


@dataclass(frozen=True)
class TIRConfig:
    """TIR's settings (validated); `TIR(llm, sandbox, config, **overrides)` or `--config FILE.yaml`."""

    dialect: str = "tir"
    max_tool_calls: int = 4
    max_turns: int = 10
    max_total_tokens: int = 8192
    sampling: SamplingParams = DEFAULT_SAMPLING
    instruction: str | None = None

    def __post_init__(self) -> None:
        if {a.tool for a in get_dialect(self.dialect).actions} != {"python"}:
            raise ConfigError(f"TIRConfig.dialect={self.dialect!r} is not a code dialect; use 'tir' or 'artist'")
        for name in ("max_turns", "max_total_tokens"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ConfigError(f"TIRConfig.{name}={getattr(self, name)!r}: must be an integer >= 1")
        if not isinstance(self.max_tool_calls, int) or self.max_tool_calls < 0:
            raise ConfigError(f"TIRConfig.max_tool_calls={self.max_tool_calls!r}: must be an integer >= 0")


class TIR(LoopEngine):
    """The TIR engine (see module docstring). Settings: `TIRConfig`, or its fields as keywords."""

    def __init__(self, llm: LLM, sandbox: Tool, config: TIRConfig | None = None, **overrides: Any):
        cfg = self.config = build_config(TIRConfig, base=config, overrides=overrides, source="keyword arguments")
        self.dialect = get_dialect(cfg.dialect)
        self.sampling = cfg.sampling
        self.instruction = cfg.instruction or prompts.TIR_INSTRUCTIONS[self.dialect.name]
        self.loop = AgentLoop(llm, self.dialect, {"python": CodeHandler(sandbox)}, sampling=self.sampling,
                              limits=LoopLimits(max_actions=cfg.max_tool_calls, max_turns=cfg.max_turns,
                                                max_tokens_per_turn=self.sampling.max_tokens,
                                                max_total_tokens=cfg.max_total_tokens),
                              limit_message=prompts.TOOL_BUDGET_MESSAGE, repeat_message=None,
                              engine=f"tir/{self.dialect.name}",
                              config={"dialect": self.dialect.name, "max_tool_calls": cfg.max_tool_calls,
                                      "max_turns": cfg.max_turns, "sampling": self.sampling.to_dict()})

    def messages(self, example: Mapping[str, Any]) -> list[Message]:
        question = example.get("question") or example.get("problem")
        if not str(question or "").strip():
            raise ConfigError(f"example {example!r} has no 'question' (or 'problem')")
        text = self.instruction.format(max_actions=self.loop.limits.max_actions)
        return [Message("user", f"{text}\n\n{prompts.QUESTION_TEMPLATE.format(question=question)}")]

    def start(self, example: Mapping[str, Any]) -> Episode:
        return self.loop.start(dict(example), self.messages(example))
