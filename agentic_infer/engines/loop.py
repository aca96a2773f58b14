"""The one generate → act → observe loop; every agent engine is a configuration of it.

A turn: generate (stop strings = the dialect's closing tags) → parse the action the turn ended on →
run its handler (batched across episodes) → splice the observation into the *same* assistant turn
→ continue by raw-prompt continuation. Limits end an episode with a clear `finish_reason`, never
an exception: `answer` (the model stopped without acting), `length` (a turn hit its token cap without
acting), `max_turns`, `max_tokens` (total budget), `context_length`, `error` (backend failure after
its retries; the message is in `metadata["error"]`).

Action policy (Search-o1's reference order): past `max_actions` executed actions the dialect's
limit message is inserted; a repeated action (same tool and argument) gets the repeat message
(when `dedupe`); otherwise the handler runs. Handlers receive all calls of one tool in a turn at
once, so retrieval and Reason-in-Documents are batched in lock-step runs.

`step(episodes)` advances each episode one turn; schedulers (`engines/driver.py`) decide which
episodes share a step.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentic_infer.backends.base import LLM, count_prompt_tokens
from agentic_infer.engines.dialects import Dialect, ParsedAction, extract_answer, parse_action
from agentic_infer.errors import BackendError, ConfigError, ContextLengthError
from agentic_infer.types import Message, SamplingParams, Step, Trajectory, Usage


@dataclass(frozen=True)
class LoopLimits:
    """Budgets of one episode."""

    max_actions: int = 10
    max_turns: int = 15
    max_tokens_per_turn: int = 2048
    max_total_tokens: int = 16384

    def __post_init__(self) -> None:
        for name in ("max_actions", "max_turns", "max_tokens_per_turn", "max_total_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (0 if name == "max_actions" else 1):
                raise ConfigError(f"LoopLimits.{name}={value!r}: must be a positive integer")


@dataclass
class Episode:
    """The running state of one rollout."""

    example: dict[str, Any]
    prompt: str  # the rendered chat prompt up to the start of the assistant turn
    trajectory: Trajectory
    output: str = ""  # the assistant turn so far: model text and observations
    actions: int = 0  # executed actions (the limit counts these)
    executed: list[tuple[str, str]] = field(default_factory=list)
    turns: int = 0
    generated: int = 0  # tokens this episode's own turns generated (the budget counts these)
    span_start: int = 0  # where in `output` the text since the last observation starts
    done: bool = False
    started: float = field(default_factory=time.perf_counter)

    @property
    def text(self) -> str:
        return self.prompt + self.output

    def state_key(self) -> str:
        """A hashable environment state before the next action (GiGPO's anchor): question + actions so far."""
        blob = json.dumps([self.example.get("question", ""), self.executed], ensure_ascii=False)
        return hashlib.sha1(blob.encode()).hexdigest()[:16]

    def to_state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot (trajectory as a dict + counters), for checkpointing a run mid-way.

        The wall clock is stored as `elapsed_s` so that a restored episode keeps counting from there.
        """
        return {"example": self.example, "prompt": self.prompt, "trajectory": self.trajectory.to_dict(),
                "output": self.output, "actions": self.actions, "executed": [list(k) for k in self.executed],
                "turns": self.turns, "generated": self.generated, "span_start": self.span_start, "done": self.done,
                "elapsed_s": time.perf_counter() - self.started}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Episode:
        """The inverse of `to_state` (a fresh object: the snapshot is not aliased)."""
        state = copy.deepcopy(state)
        return cls(example=state["example"], prompt=state["prompt"],
                   trajectory=Trajectory.from_dict(state["trajectory"]), output=state["output"],
                   actions=state["actions"], executed=[(str(t), str(a)) for t, a in state["executed"]],
                   turns=state["turns"], generated=state["generated"], span_start=state.get("span_start", 0),
                   done=state["done"],
                   started=time.perf_counter() - float(state.get("elapsed_s", 0.0)))


@dataclass
class Outcome:
    """What a handler returns for one call: the observation text (inside the dialect's wrapper)."""

    content: str
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    usage: Usage | None = None  # LLM work the handler did (e.g. Reason-in-Documents)


@dataclass
class Call:
    episode: Episode
    action: ParsedAction
    arguments: dict[str, Any]
    state: str = ""  # the episode's state key before this action


class Handler(Protocol):
    async def __call__(self, calls: Sequence[Call]) -> list[Outcome]: ...


class AgentLoop:
    """Drives episodes turn by turn. Engines build one and add their prompt and answer policy."""

    def __init__(self, llm: LLM, dialect: Dialect, handlers: dict[str, Handler], *, sampling: SamplingParams,
                 limits: LoopLimits = LoopLimits(), limit_message: str, repeat_message: str | None = None,
                 engine: str = "agent", config: dict[str, Any] | None = None):
        unknown = {a.tool for a in dialect.actions} - set(handlers) - {"*"}
        if unknown:
            raise ConfigError(f"dialect {dialect.name!r} needs handlers for {sorted(unknown)}; got {sorted(handlers)}")
        self.llm = llm
        self.dialect = dialect
        self.handlers = handlers
        self.sampling = sampling.replace(stop=tuple(dict.fromkeys(sampling.stop + dialect.stops)), include_stop=True,
                                         n=1)
        self.limits = limits
        self.limit_message = limit_message
        self.repeat_message = repeat_message
        self.engine = engine
        self.config = config or {}

    # -- episodes ---------------------------------------------------------------------------------
    def start(self, example: dict[str, Any], messages: Sequence[Message], *, assistant_prefix: str = "") -> Episode:
        """A new episode; `assistant_prefix` is forced text that opens the assistant turn (not trainable)."""
        prompt = self.llm.render(messages, add_generation_prompt=True)
        traj = Trajectory(engine=self.engine, config=dict(self.config), example=dict(example))
        traj.add("prompt", prompt, token_ids=self._encode(prompt), messages=[m.to_dict() for m in messages])
        ep = Episode(example=dict(example), prompt=prompt, trajectory=traj)
        if assistant_prefix:
            ep.output = assistant_prefix
            traj.add("prompt", assistant_prefix, token_ids=self._encode(assistant_prefix), forced=True)
        return ep

    def _encode(self, text: str) -> list[int] | None:
        try:
            return list(self.llm.tokenizer.encode(text))
        except (ConfigError, AttributeError, NotImplementedError):
            return None

    def _observe(self, ep: Episode, text: str, **metadata: Any) -> None:
        ep.output += text
        ep.span_start = len(ep.output)
        ep.trajectory.add("observation", text, token_ids=self._encode(text), **metadata)

    def _finish(self, ep: Episode, reason: str, **metadata: Any) -> None:
        ep.done = True
        traj = ep.trajectory
        traj.finish_reason = reason
        traj.metadata.update(metadata)
        traj.answer = extract_answer(self.dialect, ep.output)
        traj.metadata["unfinished"] = reason in ("max_turns", "max_tokens", "context_length", "error")
        traj.metadata["actions"] = ep.actions
        traj.usage.wall_s = time.perf_counter() - ep.started

    # -- one turn -----------------------------------------------------------------------------------
    async def _generate(self, ep: Episode) -> Any:
        remaining = self.limits.max_total_tokens - ep.generated
        if remaining <= 0:
            self._finish(ep, "max_tokens")
            return None
        params = self.sampling.replace(max_tokens=min(self.limits.max_tokens_per_turn, remaining))
        if self.sampling.seed is not None:  # a different but reproducible seed per turn
            params = params.replace(seed=self.sampling.seed + ep.turns)
        try:
            [comp] = await self.llm.generate(ep.text, params)
        except ContextLengthError as e:
            self._finish(ep, "context_length", error=str(e))
            return None
        except BackendError as e:
            self._finish(ep, "error", error=str(e))
            return None
        ep.turns += 1
        usage = ep.trajectory.usage
        usage.llm_calls += 1
        usage.completion_tokens += comp.num_tokens
        usage.prompt_tokens += count_prompt_tokens(self.llm, ep.text, comp.prompt_tokens)
        ep.generated += comp.num_tokens
        ep.output += comp.text
        ep.trajectory.add("model", comp.text, token_ids=comp.token_ids, logprobs=comp.logprobs, turn=ep.turns,
                          finish_reason=comp.finish_reason, stop_reason=comp.stop_reason)
        return comp

    def _arguments(self, action: ParsedAction) -> tuple[str, dict[str, Any]] | str:
        """(tool, arguments) for an action, or an error message for a malformed tool call."""
        if not self.dialect.json_calls:
            return action.tool, {"query": action.argument}
        try:
            call = json.loads(action.argument)
        except json.JSONDecodeError as e:
            return f"malformed tool call: {e.msg} at char {e.pos}; write {{\"name\": ..., \"arguments\": {{...}}}}"
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return "malformed tool call: expected a JSON object with a \"name\" string and \"arguments\""
        args = call.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                return "malformed tool call: \"arguments\" is not valid JSON"
        if not isinstance(args, dict):
            return "malformed tool call: \"arguments\" must be an object"
        return call["name"], args

    async def step(self, episodes: Sequence[Episode]) -> None:
        """Advance every unfinished episode by one turn (generation concurrently, handlers batched)."""
        live = [ep for ep in episodes if not ep.done]
        comps = await asyncio.gather(*(self._generate(ep) for ep in live))
        pending: dict[str, list[Call]] = {}
        for ep, comp in zip(live, comps):
            if comp is None:
                continue
            # the model's text since the last observation (a forced assistant prefix included)
            action = parse_action(self.dialect, ep.output[ep.span_start:], comp.stop_reason)
            if action is None:
                if comp.finish_reason == "stop":
                    self._finish(ep, "answer")
                else:
                    self._finish(ep, "max_tokens" if ep.generated >= self.limits.max_total_tokens else "length")
                continue
            resolved = self._arguments(action)
            state = ep.state_key()
            if isinstance(resolved, str):  # a malformed native tool call: the error is the observation
                ep.trajectory.usage.tool_errors += 1
                ep.trajectory.steps.append(Step(action.tool, {"raw": action.argument}, None, resolved, state,
                                                metadata={"status": "malformed", "turn": ep.turns}))
                self._observe(ep, self.dialect.message(resolved), status="malformed")
                continue
            tool, args = resolved
            key = (tool, json.dumps(args, sort_keys=True, ensure_ascii=False))
            if ep.actions >= self.limits.max_actions:
                status, message = "limit", self.limit_message
            elif self.repeat_message is not None and key in ep.executed:
                status, message = "repeat", self.repeat_message
            elif tool not in self.handlers:
                status, message = "unknown_tool", f"Unknown tool {tool!r}; available: {sorted(self.handlers)}."
                ep.trajectory.usage.tool_errors += 1
            else:
                ep.actions += 1
                ep.executed.append(key)
                pending.setdefault(tool, []).append(Call(ep, action, args, state))
                continue
            ep.trajectory.steps.append(Step(tool, args, message, None, state,
                                            metadata={"status": status, "turn": ep.turns}))
            self._observe(ep, self.dialect.message(message), status=status)
        for tool, calls in pending.items():
            outcomes = await self.handlers[tool](calls)
            for call, out in zip(calls, outcomes, strict=True):
                ep = call.episode
                usage = ep.trajectory.usage
                usage.tool_calls += 1
                usage.tool_errors += out.error is not None
                if out.usage is not None:
                    usage.add(out.usage)
                ep.trajectory.steps.append(Step(tool, call.arguments, out.content, out.error, call.state,
                                                metadata={"status": "executed", "turn": ep.turns, **out.metadata}))
                self._observe(ep, self.dialect.observation(out.content), status="executed", tool=tool)
        for ep in live:
            if not ep.done and ep.turns >= self.limits.max_turns:
                self._finish(ep, "max_turns")

    async def run(self, example: dict[str, Any], messages: Sequence[Message], *,
                  assistant_prefix: str = "") -> Trajectory:
        ep = self.start(example, messages, assistant_prefix=assistant_prefix)
        while not ep.done:
            await self.step([ep])
        return ep.trajectory
