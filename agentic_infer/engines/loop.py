"""The one generate → act → observe loop; every agent engine is a configuration of it.

A turn: generate (stop strings = the dialect's closing tags) → parse the action the turn ended on →
run its handler (batched across episodes) → splice the observation into the *same* assistant turn
→ continue from the sequence so far. Limits end an episode with a clear `finish_reason`, never
an exception: `answer` (the model stopped without acting), `length` (a turn hit its token cap without
acting), `max_turns`, `max_tokens` (total budget), `context_length`, `error` (backend failure after
its retries; the message is in `metadata["error"]`).

Action policy (Search-o1's reference order): past `max_actions` executed actions the dialect's
limit message is inserted; a repeated action (same tool and argument) gets the repeat message
(when `dedupe`); otherwise the handler runs. Handlers receive all calls of one tool in a turn at
once, so retrieval and Reason-in-Documents are batched in lock-step runs.

Token-in, token-out: an episode keeps its conditioning sequence as token ids (`Episode.ids`): the
prompt as `encode_prompt` reads it, then for each turn exactly the ids the backend generated, and
each observation or forced piece as `encode_continuation` reads it (no special tokens added
mid-sequence). Every turn generates from those ids, so the trajectory's ids (`traj.token_ids()`)
are the ids the model conditioned on and sampled, and `traj.token_exact` is True. A model segment's
text is the decoded text of its ids: when a stop string ends inside a token, the backend's text is
cut at the stop string but the whole token was sampled and is in the context of the next turn, so
the few characters after the stop string are part of the segment (and of `ep.output`). When the
backend returns no ids (an OpenAI-compatible server that gives none) or has no tokenizer, the
episode falls back to text prompts from that turn on, its segments get ids encoded from text, and
the trajectory says `token_exact=False`.

Each `Step` records `segment`: the index of the model segment whose text ended in the action.

Environments (`agentic_infer.envs`): an episode may carry its own `env` (`Episode.env`, reached by handlers
through `call.episode.env`; not part of `to_state`, which stays JSON: the engine that made the episode
reattaches one). With an env, a step's `state` is the env's canonical state before the call (`env_state_key`).
An `Outcome` may carry a per-step `reward` (into `Step.reward`) and `done=True` (a terminal tool: the
episode finishes with "answer" after its observation). `respond(episode, message)`: when a turn ends
without an action and the loop has a `respond` hook, it is called with the agent's message since the last
observation; a str is the user's reply, spliced as a masked observation in the chat template's own user
turn (end of turn, user header, reply, end of turn, assistant header: `user_turn`), and the episode
continues; None finishes it ("answer") as without the hook.

`step(episodes)` advances each episode one turn; the runner's schedulers (`agentic_infer/runner.py`)
decide which episodes share a step.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentic_infer.backends.base import LLM, count_prompt_tokens, encode_continuation, encode_prompt
from agentic_infer.engines.dialects import Dialect, ParsedAction, extract_answer, parse_action
from agentic_infer.errors import AgenticError, BackendError, ConfigError, ContextLengthError
from agentic_infer.types import (
    Completion,
    Message,
    SamplingParams,
    SegmentKind,
    Step,
    Trajectory,
    TrajectoryFinish,
    Usage,
)


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


# A state whose canonical text is longer than this is keyed by its digest (e.g. a whole database).
STATE_TEXT_CHARS = 4096


def env_state_key(env: Any) -> str:
    """An env's state as GiGPO's anchor: its canonical JSON text when that is at most `STATE_TEXT_CHARS`
    characters (similar states stay comparable), else `"sha256:"` + the SHA-256 of that text (what the base
    `Env.digest()` computes; one serialisation either way). Equal states give equal keys."""
    text = json.dumps(env.canonical_state(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    if len(text) <= STATE_TEXT_CHARS:
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def end_of_turn(llm: Any) -> str:
    """The text the chat template closes an assistant message with (`<|im_end|>` for ChatML), stripped; "" when
    the template shows none."""
    mark = "@@ASSISTANT-MESSAGE@@"
    text = llm.render([Message("user", "."), Message("assistant", mark)], add_generation_prompt=False)
    return text.split(mark, 1)[1].strip() if mark in text else ""


def user_turn(llm: LLM, reply: str) -> str:
    """The text a chat feeds between the assistant's message and its next one when the user answers `reply`:
    the chat template's end of turn, user header, `reply`, end of turn and assistant header (read off
    `llm.render` of a two-turn chat, so it is the template's own markup)."""
    mark = "@@ASSISTANT-MESSAGE@@"
    head = [Message("user", "."), Message("assistant", mark)]
    before = llm.render(head, add_generation_prompt=False)
    after = llm.render([*head, Message("user", reply)], add_generation_prompt=True)
    cut = before.find(mark)
    if cut < 0 or after[:cut + len(mark)] != before[:cut + len(mark)]:
        raise ConfigError(f"{type(llm).__name__}'s chat template does not render an assistant message verbatim; "
                          "a user reply cannot be spliced into the episode (use a ChatML-style template)")
    return after[cut + len(mark):]


@dataclass
class Episode:
    """The running state of one rollout.

    `ids` is the whole conditioning sequence as token ids (prompt, forced text, every turn's generated
    ids, every observation), the prompt of the next turn; None once the episode runs on text prompts
    (no tokenizer, or a backend that returned no ids). `output` is the assistant turn so far as text
    (model segments as the decoded text of their ids).
    """

    example: dict[str, Any]
    prompt: str  # the rendered chat prompt up to the start of the assistant turn
    trajectory: Trajectory
    output: str = ""  # the assistant turn so far: model text and observations
    ids: list[int] | None = None  # the whole conditioning sequence as token ids (None: text prompts)
    actions: int = 0  # executed actions (the limit counts these)
    executed: list[tuple[str, str]] = field(default_factory=list)
    turns: int = 0
    generated: int = 0  # tokens this episode's own turns generated (the budget counts these)
    span_start: int = 0  # where in `output` the text since the last observation starts
    done: bool = False
    started: float = field(default_factory=time.perf_counter)
    # The forced text ends in a complete action (Search-o1's first_query): the next step runs it
    # without generating (no LLM call, no turn counted).
    forced_action: bool = False
    env: Any = None  # the episode's environment (agentic_infer.envs.Env), if any; not in to_state

    @property
    def text(self) -> str:
        return self.prompt + self.output

    def state_key(self) -> str:
        """The environment state before the next action as text (GiGPO's anchor): the question and the actions
        so far, as canonical JSON. Text, not a digest, so GiGPO's similarity grouping compares states.
        With an env: `env_state_key(env)`."""
        if self.env is not None:
            return env_state_key(self.env)
        return json.dumps([self.example.get("question", ""), self.executed], ensure_ascii=False)

    def to_state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot (trajectory as a dict + counters), for checkpointing a run mid-way.

        The wall clock is stored as `elapsed_s` so that a restored episode keeps counting from there.
        """
        return {"example": self.example, "prompt": self.prompt, "trajectory": self.trajectory.to_dict(),
                "output": self.output, "ids": self.ids, "actions": self.actions,
                "executed": [list(k) for k in self.executed], "turns": self.turns, "generated": self.generated, "span_start": self.span_start, "done": self.done,
                "forced_action": self.forced_action,
                "elapsed_s": time.perf_counter() - self.started}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Episode:
        """The inverse of `to_state` (a fresh object: the snapshot is not aliased)."""
        state = copy.deepcopy(state)
        return cls(example=state["example"], prompt=state["prompt"],
                   trajectory=Trajectory.from_dict(state["trajectory"]), output=state["output"],
                   ids=state.get("ids"), actions=state["actions"], executed=[(str(t), str(a)) for t, a in state["executed"]],
                   turns=state["turns"], generated=state["generated"], span_start=state.get("span_start", 0),
                   done=state["done"], forced_action=state.get("forced_action", False),
                   started=time.perf_counter() - float(state.get("elapsed_s", 0.0)))


@dataclass
class Outcome:
    """What a handler returns for one call: the observation text (inside the dialect's wrapper)."""

    content: str
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    usage: Usage | None = None  # LLM work the handler did (e.g. Reason-in-Documents)
    reward: float | None = None  # a per-step reward (an env's), written to Step.reward
    done: bool = False  # the call ended the episode (an env's terminal tool)


@dataclass
class Call:
    episode: Episode
    action: ParsedAction
    arguments: dict[str, Any]
    state: str = ""  # the episode's state key before this action
    segment: int | None = None  # index of the model segment that wrote the action


class Handler(Protocol):
    async def __call__(self, calls: Sequence[Call]) -> list[Outcome]: ...


Respond = Callable[[Episode, str], Awaitable[str | None]]


class AgentLoop:
    """Drives episodes turn by turn. Engines build one and add their prompt and answer policy."""

    def __init__(self, llm: LLM, dialect: Dialect, handlers: dict[str, Handler], *, sampling: SamplingParams,
                 limits: LoopLimits = LoopLimits(), limit_message: str, repeat_message: str | None = None,
                 engine: str = "agent", config: dict[str, Any] | None = None, respond: Respond | None = None):
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
        self.respond = respond

    # -- episodes ---------------------------------------------------------------------------------
    def start(self, example: dict[str, Any], messages: Sequence[Message], *, assistant_prefix: str = "") -> Episode:
        """A new episode; `assistant_prefix` is forced text that opens the assistant turn (not trainable)."""
        prompt = self.llm.render(messages, add_generation_prompt=True)
        traj = Trajectory(engine=self.engine, config=dict(self.config), example=dict(example))
        ids = encode_prompt(self.llm, prompt)
        traj.add("prompt", prompt, token_ids=ids, messages=[m.to_dict() for m in messages])
        traj.token_exact = ids is not None
        ep = Episode(example=dict(example), prompt=prompt, trajectory=traj, ids=None if ids is None else list(ids))
        if assistant_prefix:
            self._splice(ep, "prompt", assistant_prefix, forced=True)
        return ep

    def _splice(self, ep: Episode, kind: SegmentKind, text: str, **metadata: Any) -> None:
        """Append text the model did not write (an observation, forced text) to the episode, mid-sequence."""
        ids = encode_continuation(self.llm, text)
        ep.output += text
        if ep.ids is not None and ids is not None:
            ep.ids.extend(ids)
        ep.trajectory.add(kind, text, token_ids=ids, **metadata)

    def _observe(self, ep: Episode, text: str, **metadata: Any) -> None:
        self._splice(ep, "observation", text, **metadata)
        ep.span_start = len(ep.output)

    def _finish(self, ep: Episode, reason: TrajectoryFinish, **metadata: Any) -> None:
        ep.done = True
        traj = ep.trajectory
        traj.finish(reason)
        traj.metadata.update(metadata)
        traj.answer = extract_answer(self.dialect, ep.output)
        traj.metadata["unfinished"] = reason in ("max_turns", "max_tokens", "context_length", "error")
        traj.metadata["actions"] = ep.actions
        traj.usage.wall_s = time.perf_counter() - ep.started

    # -- one turn -----------------------------------------------------------------------------------
    async def _generate(self, ep: Episode) -> Completion | None:
        if ep.forced_action:  # the action is already in the forced text: act on it without generating
            ep.forced_action = False
            return Completion(text="", finish_reason="stop")
        remaining = self.limits.max_total_tokens - ep.generated
        if remaining <= 0:
            self._finish(ep, "max_tokens")
            return None
        params = self.sampling.replace(max_tokens=min(self.limits.max_tokens_per_turn, remaining))
        if self.sampling.seed is not None:  # a different but reproducible seed per turn
            params = params.replace(seed=self.sampling.seed + ep.turns)
        prompt: str | list[int] = list(ep.ids) if ep.ids is not None else ep.text
        try:
            [comp] = await self.llm.generate(prompt, params)
        except ContextLengthError as e:
            self._finish(ep, "context_length", error=str(e))
            return None
        except BackendError as e:
            self._finish(ep, "error", error=str(e))
            return None
        ep.turns += 1
        traj = ep.trajectory
        text, ids = comp.text, comp.token_ids
        if ep.ids is not None and ids is not None:
            text = self._decode(ids, comp.text)  # the whole last token, when a stop string ended inside it
            ep.ids.extend(ids)
        else:  # no ids from the backend: continue from text; the segment's ids are encoded, not sampled
            ids = ids if ids is not None else encode_continuation(self.llm, text)
            ep.ids = None
            traj.token_exact = False
        generated = comp.num_tokens or len(ids or ())  # a backend that reports no tokens: count the encoded ones
        traj.usage.llm_calls += 1
        traj.usage.completion_tokens += generated
        traj.usage.prompt_tokens += count_prompt_tokens(self.llm, prompt, comp.prompt_tokens)
        ep.generated += generated
        ep.output += text
        logprobs, extra = comp.logprobs, {}
        if logprobs is not None and ids is not None and len(logprobs) != len(ids):
            # the server's tokens (its logprobs) do not align with ids encoded from text: keep the ids
            logprobs, extra = None, {"logprobs_dropped": f"{len(comp.logprobs)} server tokens vs {len(ids)} ids"}
        traj.add("model", text, token_ids=ids, logprobs=logprobs, turn=ep.turns,
                 finish_reason=comp.finish_reason, stop_reason=comp.stop_reason, **extra)
        return comp

    def _decode(self, ids: list[int], fallback: str) -> str:
        try:
            return self.llm.tokenizer.decode(ids)
        except (AgenticError, AttributeError, NotImplementedError):
            return fallback

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
        return dict(self.dialect.aliases).get(call["name"], call["name"]), args

    async def step(self, episodes: Sequence[Episode]) -> None:
        """Advance every unfinished episode by one turn (generation concurrently, handlers batched)."""
        live = [ep for ep in episodes if not ep.done]
        comps = await asyncio.gather(*(self._generate(ep) for ep in live))
        pending: dict[str, list[Call]] = {}
        asking: list[Episode] = []  # ended a turn without acting, for the respond hook
        for ep, comp in zip(live, comps):
            if comp is None:
                continue
            segment = len(ep.trajectory.segments) - 1  # the model segment this turn wrote
            # the model's text since the last observation (a forced assistant prefix included)
            action = parse_action(self.dialect, ep.output[ep.span_start:], comp.stop_reason)
            if action is None:
                if comp.finish_reason == "stop" and self.respond is not None:
                    asking.append(ep)
                elif comp.finish_reason == "stop":
                    self._finish(ep, "answer")
                else:
                    self._finish(ep, "max_tokens" if ep.generated >= self.limits.max_total_tokens else "length")
                continue
            resolved = self._arguments(action)
            state = ep.state_key()
            if isinstance(resolved, str):  # a malformed native tool call: the error is the observation
                ep.trajectory.usage.tool_errors += 1
                ep.trajectory.steps.append(Step(action.tool, {"raw": action.argument}, None, resolved, state,
                                                segment=segment, metadata={"status": "malformed", "turn": ep.turns}))
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
                pending.setdefault(tool, []).append(Call(ep, action, args, state, segment))
                continue
            ep.trajectory.steps.append(Step(tool, args, message, None, state, segment=segment,
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
                                                reward=out.reward, segment=call.segment,
                                                metadata={"status": "executed", "turn": ep.turns, **out.metadata}))
                self._observe(ep, self.dialect.observation(out.content), status="executed", tool=tool)
                if out.done:
                    self._finish(ep, "answer", ended_by=tool)
        if asking and self.respond is not None:
            replies = await asyncio.gather(*(self.respond(ep, ep.output[ep.span_start:].strip()) for ep in asking))
            for ep, reply in zip(asking, replies):
                if reply is None:
                    self._finish(ep, "answer")
                else:
                    self._user_reply(ep, reply)
        for ep in live:
            if not ep.done and ep.turns >= self.limits.max_turns:
                self._finish(ep, "max_turns")

    def _user_reply(self, ep: Episode, reply: str) -> None:
        """Splice the user's reply. A message the model ended by sampling its end-of-turn token (no stop string:
        backends do not return that token) gets the token as a trainable model segment, so SFT and RL teach the
        model to end a message to the user; the rest of the user turn is a masked observation."""
        turn, eot = user_turn(self.llm, reply), end_of_turn(self.llm)
        last = ep.trajectory.segments[-1]
        if eot and turn.startswith(eot) and last.kind == "model" and last.metadata.get("stop_reason") is None:
            self._splice(ep, "model", eot, end_of_turn=True)
            turn = turn[len(eot):]
        self._observe(ep, turn, status="user", reply=reply)

    async def run(self, example: dict[str, Any], messages: Sequence[Message], *,
                  assistant_prefix: str = "") -> Trajectory:
        ep = self.start(example, messages, assistant_prefix=assistant_prefix)
        while not ep.done:
            await self.step([ep])
        return ep.trajectory
