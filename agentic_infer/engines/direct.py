r"""`Direct`: one generation with a prompt, the direct-answer and chain-of-thought baselines.

    engine = Direct(llm, prompt=COT_PROMPT, sampling=SamplingParams(max_tokens=512, temperature=0.0))
    engine = Direct(llm, build_config(DirectConfig, overrides=["sampling.temperature=0.2"]))   # the same, by --set
    rollout = await engine.run({"question": "What is 6*7?"})
    rollout.answer, rollout.trajectory.usage

Settings (what `--set` / YAML reach) are `DirectConfig`: `sampling` and `system_prompt`; the prompt template
and the answer extractor are code, given as keywords.

The prompt is a template filled with the example's `question` (or a function of the example), sent as
one user message through the model's chat template; the answer is `extract(completion text)`
(default: the last `\boxed{}`). The trajectory holds a prompt segment with the ids the model conditioned
on (`encode_prompt`) and a model segment with the sampled ids and logprobs, so it is `token_exact` when
the backend returns ids. For k samples wrap it in `agentic_infer.engines.group.Group`.
Not covered: multi-turn prompts, tools (see `search_o1`, `tir`), voting (see `deepconf`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentic_infer.backends.base import LLM, count_prompt_tokens, encode_prompt
from agentic_infer.config import build_config
from agentic_infer.engines import prompts
from agentic_infer.engines.base import check_one_sample, single_rollout
from agentic_infer.errors import AgenticError, ConfigError
from agentic_infer.types import Message, Rollout, SamplingParams, Trajectory, Usage, trajectory_finish
from agentic_infer.verify import boxed_answer

DIRECT_PROMPT = "{question}\nGive only the final answer, within \\boxed{{}}."
COT_PROMPT = "{question}\nPlease reason step by step, and put your final answer within \\boxed{{}}."
DEFAULT_SAMPLING = SamplingParams(max_tokens=512, temperature=0.0, logprobs=0)


@dataclass(frozen=True)
class DirectConfig:
    """Direct's settings (validated); `Direct(llm, config, **overrides)` or `--set sampling.temperature=0.2`."""

    sampling: SamplingParams = DEFAULT_SAMPLING
    system_prompt: str | None = None

    def __post_init__(self) -> None:
        check_one_sample("DirectConfig", self.sampling, "Direct makes one sample per example; for k samples wrap it "
                         "in agentic_infer.engines.group.Group")


class Direct:
    """One generation per example (see the module docstring). Settings: `DirectConfig`, or its fields as keywords."""

    def __init__(self, llm: LLM, config: DirectConfig | None = None, *,
                 prompt: str | Callable[[Mapping[str, Any]], str] = DIRECT_PROMPT,
                 extract: Callable[[str], str | None] = boxed_answer, name: str = "direct", **overrides: Any):
        if isinstance(prompt, str) and "{question}" not in prompt:
            raise ConfigError(f"Direct: prompt={prompt!r} has no {{question}} field; add one (or pass a function)")
        cfg = self.config = build_config(DirectConfig, base=config, overrides=overrides, source="keyword arguments")
        self.llm, self.prompt, self.extract, self.name = llm, prompt, extract, name
        self.sampling, self.system_prompt = cfg.sampling, cfg.system_prompt

    def messages(self, example: Mapping[str, Any]) -> list[Message]:
        if not str(example.get("question", "")).strip():
            raise ConfigError(f"Direct: example {dict(example)!r} has no 'question'; pass {{'question': '...'}}")
        text = self.prompt(example) if callable(self.prompt) else self.prompt.format(question=example["question"])
        text = prompts.with_guidance(text, example)
        return ([Message("system", self.system_prompt)] if self.system_prompt else []) + [Message("user", text)]

    async def run(self, example: Mapping[str, Any]) -> Rollout:
        t0 = time.perf_counter()
        messages = self.messages(example)
        meta = {"messages": [m.to_dict() for m in messages]}
        try:
            text = self.llm.render(messages)
            ids = encode_prompt(self.llm, text)
            prompt: Any = text if ids is None else ids
        except AgenticError:  # no chat template known here: the backend sends the messages itself
            text, ids, prompt = "\n".join(m.content for m in messages), None, messages
        [comp] = await self.llm.generate(prompt, self.sampling)
        traj = Trajectory(engine=self.name, config={"sampling": self.sampling.to_dict()}, example=dict(example))
        traj.add("prompt", text, token_ids=ids, **meta)
        traj.add("model", comp.text, token_ids=comp.token_ids, logprobs=comp.logprobs,
                 finish_reason=comp.finish_reason, stop_reason=comp.stop_reason)
        traj.token_exact = ids is not None and comp.token_ids is not None
        traj.answer = self.extract(comp.text)
        traj.finish(trajectory_finish(comp.finish_reason))
        traj.usage = Usage(prompt_tokens=count_prompt_tokens(self.llm, prompt, comp.prompt_tokens),
                           completion_tokens=comp.num_tokens, llm_calls=1, wall_s=time.perf_counter() - t0)
        return single_rollout(traj, example, engine=self.name)
