"""The env agent: one engine that drives any registered environment (`agentic_infer.envs`) on the agent loop.

    engine = EnvAgent(llm, EnvAgentConfig(env="retail"))
    rollout = await engine.run(task_row)              # a row of the env's task file (+ "id")
    traj = rollout.trajectory
    traj.rewards["env_reward"], traj.rewards["success"], traj.metadata["verdict"]
    [(s.action, s.arguments, s.state, s.reward) for s in traj.steps]   # one Step per tool call

Registered as "env" (`seeded_factory("env", {"env": "retail"})` for RL, `agentic eval run --task retail`).

An episode builds `env = make_env(cfg.env, example, **cfg.env_options)` and the chat: a system message with
`env.instructions()`, the tool schemas as JSON lines inside `<tools>…</tools>` (as Qwen/Hermes-style templates
show them) and how to call a tool in the dialect (any dialect with `json_calls`; "tool_calls":
`<tool_call>{"name": …, "arguments": {…}}</tool_call>`, results in `<tool_response>`); a user message with
`env.first_observation()`. Every tool name the agent writes goes to the episode's env (`env.call_record`):
the observation is the env's text, a refused call (or an unknown tool, which the env refuses) is an
observation too, counted in `usage.tool_errors`. Each call is one `Step`: `state` = the env's state before
the call as canonical JSON text (GiGPO's anchor; a state over 4096 characters of text is its `sha256:` digest
instead; retail's is the shipped database's digest plus the records that differ from it: `agentic_infer.engines.loop.env_state_key`), `reward` = the
record's per-step reward, `metadata` = {"info": the record's info, "refused": its error flag}.
A message without a tool call goes to `env.reply(message)`: a str is the user's answer (a masked user turn in
the chat template's markup) and the episode continues; None ends it. A terminal tool (`env.done`) ends it too.

At the end, `verdict = env.verify(final message)`, the final message being the agent's last message to the
user ("" when it sent none; an env that checks every message, as tau-bench's outputs check does, keeps the
ones `reply` saw): `trajectory.rewards` (and the Rollout's) get `env_reward` = verdict.reward and
`success` = 1.0 / 0.0 (every check passed), `trajectory.metadata` gets `verdict` (its dict), `env_digest`
(the final state's digest), `env_done` and `messages_to_user` (every message `reply` was asked about).
The Rollout's answer is the final message.
ARPO/AEPO branching (`agentic_infer.engines.branching.BranchingRollout`) forks an episode together with its env
(`Env.fork`, a deep copy by default), so each branch acts on its own env from the fork point on.
Not covered: several tool calls in one turn (generation stops at the first closing tag).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.backends.base import LLM
from agentic_infer.config import build_config, config_to_dict
from agentic_infer.engines.base import LoopEngine, check_one_sample, single_rollout
from agentic_infer.engines.dialects import DIALECTS, Dialect, get_dialect
from agentic_infer.engines.loop import AgentLoop, Call, Episode, Handler, LoopLimits, Outcome
from agentic_infer.envs.base import Env
from agentic_infer.envs.registry import get_env_spec, make_env
from agentic_infer.errors import ConfigError
from agentic_infer.types import Message, Rollout, SamplingParams
from agentic_infer.verify import write_verdicts

TOOL_SCHEMAS = ("json", "compact")
DEFAULT_SAMPLING = SamplingParams(max_tokens=512, temperature=0.0, logprobs=0)
LIMIT_MESSAGE = "You have used all your tool calls. Do not call a tool again; answer the user now."
TOOLS_PROMPT = (
    "# Tools\n\nYou may call one or more functions to help with the user's request. The function signatures "
    "are inside <tools></tools>:\n<tools>\n{tools}\n</tools>\n\nTo call a function, write a JSON object with its "
    "name and arguments inside {begin}{end}:\n{begin}\n{{\"name\": <function-name>, \"arguments\": "
    "<arguments-json-object>}}\n{end}\nThe result comes back inside {result_begin}{result_end}. Make one call at "
    "a time and wait for its result. A message without a function call is sent to the user."
)


def _json_dialects() -> list[str]:
    return sorted(n for n, d in DIALECTS.items() if d.json_calls)


@dataclass(frozen=True)
class EnvAgentConfig:
    """The env agent's settings (validated). `env` (a registry name, `agentic envs`) is required when the engine
    is built; `env_options` go to `make_env`. `max_tokens_per_turn` caps each generation (`sampling.max_tokens`
    is not read), `max_total_tokens` the episode's generated tokens, `max_calls` the executed tool calls."""

    env: str = ""
    env_options: dict[str, Any] = field(default_factory=dict)
    dialect: str = "tool_calls"
    max_calls: int = 10
    max_turns: int = 15
    max_tokens_per_turn: int = 512
    max_total_tokens: int = 8192
    tool_schemas: str = "json"  # "json": the env's schemas as shipped; "compact": one signature line per tool
    sampling: SamplingParams = DEFAULT_SAMPLING

    def __post_init__(self) -> None:
        if not isinstance(self.env, str):
            raise ConfigError(f"EnvAgentConfig.env={self.env!r}: must be an env name (agentic envs lists them)")
        if self.env:
            get_env_spec(self.env)  # an unknown name fails now, listing the known ones
        if not isinstance(self.env_options, Mapping):
            raise ConfigError(f"EnvAgentConfig.env_options={self.env_options!r}: must be a mapping of make_env "
                              "options, e.g. --set env_options.user=instruction")
        if not get_dialect(self.dialect).json_calls:
            raise ConfigError(f"EnvAgentConfig.dialect={self.dialect!r} has no JSON tool calls; choose one of "
                              f"{_json_dialects()}")
        for name in ("max_turns", "max_tokens_per_turn", "max_total_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"EnvAgentConfig.{name}={value!r}: must be an integer >= 1")
        if not isinstance(self.max_calls, int) or isinstance(self.max_calls, bool) or self.max_calls < 0:
            raise ConfigError(f"EnvAgentConfig.max_calls={self.max_calls!r}: must be an integer >= 0")
        if self.tool_schemas not in TOOL_SCHEMAS:
            raise ConfigError(f"EnvAgentConfig.tool_schemas={self.tool_schemas!r}: choose one of {TOOL_SCHEMAS}")
        check_one_sample("EnvAgentConfig", self.sampling, "the env agent makes one episode per example; for k "
                         "samples use the registry's samples (a Group)")


def compact_schema(tool: Mapping[str, Any]) -> str:
    """One line for a tool: `name(arg: type, opt?: type): the description's first sentence` (a short prompt for
    small context windows; argument descriptions and enums are dropped)."""
    fn = tool.get("function", tool)
    params = fn.get("parameters") or {}
    required = set(params.get("required") or ())
    args = ", ".join(f"{name}{'' if name in required else '?'}: {_type_name(spec)}"
                     for name, spec in (params.get("properties") or {}).items())
    description = " ".join(str(fn.get("description", "")).split())
    first = description.split(". ")[0].rstrip(".")
    return f"{fn['name']}({args}): {first}." if first else f"{fn['name']}({args})"


def _type_name(spec: Mapping[str, Any]) -> str:
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list[{_type_name(spec.get('items') or {})}]"
    return str(kind)


def tools_prompt(env: Env, dialect: Dialect, *, schemas: str = "json") -> str:
    """The tool section of the system message: the env's schemas (as JSON, or `compact` signature lines) and how
    to call one in `dialect`."""
    tag = dialect.actions[0]
    tools = "\n".join(compact_schema(t) if schemas == "compact" else json.dumps(t, ensure_ascii=False)
                      for t in env.tools())
    return TOOLS_PROMPT.format(tools=tools, begin=tag.begin, end=tag.end, result_begin=dialect.result_begin,
                               result_end=dialect.result_end)


class EnvTools(Mapping[str, Handler]):
    """The loop's handlers for env episodes: every tool name routes to the episode's own env (the tools can
    differ per task, and an unknown name is the env's own refusal). Iterating lists no names."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}

    def __getitem__(self, name: str) -> Handler:
        if name not in self._handlers:
            self._handlers[name] = _env_handler(name)
        return self._handlers[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _env_handler(name: str) -> Handler:
    async def handle(calls: Sequence[Call]) -> list[Outcome]:
        out = []
        for c in calls:
            env = c.episode.env
            record = env.call_record(name, c.arguments)
            out.append(Outcome(record.output, error=record.output if record.error else None,
                               metadata={"info": record.info, "refused": record.error}, reward=record.reward,
                               done=env.done))
        return out

    return handle


class EnvAgent(LoopEngine):
    """The env agent (see the module docstring). Settings: `EnvAgentConfig`, or its fields as keywords."""

    def __init__(self, llm: LLM, config: EnvAgentConfig | None = None, **overrides: Any):
        cfg = self.config = build_config(EnvAgentConfig, base=config, overrides=overrides,
                                         source="keyword arguments")
        if not cfg.env:
            raise ConfigError("EnvAgentConfig.env is not set: name the environment (--set env=NAME, or "
                              "EnvAgentConfig(env='retail')); `agentic envs` lists them")
        self.spec = get_env_spec(cfg.env)
        self.dialect = get_dialect(cfg.dialect)
        self.loop = AgentLoop(llm, self.dialect, EnvTools(), sampling=cfg.sampling,  # type: ignore[arg-type]
                              limits=LoopLimits(max_actions=cfg.max_calls, max_turns=cfg.max_turns,
                                                max_tokens_per_turn=cfg.max_tokens_per_turn,
                                                max_total_tokens=cfg.max_total_tokens),
                              limit_message=LIMIT_MESSAGE, repeat_message=None, engine=f"env/{self.spec.name}",
                              config=json.loads(json.dumps(config_to_dict(cfg), default=str)),  # JSON-safe
                              respond=self._respond)

    def messages(self, env: Env) -> list[Message]:
        system = "\n\n".join(p for p in (env.instructions().strip(), tools_prompt(env, self.dialect,
                                                                             schemas=self.config.tool_schemas)) if p)
        return [Message("system", system), Message("user", env.first_observation())]

    def start(self, example: Mapping[str, Any]) -> Episode:
        env = make_env(self.spec, example, **self.config.env_options)
        ep = self.loop.start(dict(example), self.messages(env))
        ep.env = env
        ep.trajectory.metadata.update(env=self.spec.name, messages_to_user=[])
        return ep

    async def _respond(self, ep: Episode, message: str) -> str | None:
        ep.trajectory.metadata["messages_to_user"].append(message)
        return await ep.env.reply(message)

    def rollout(self, episode: Episode) -> Rollout:
        env, traj = episode.env, episode.trajectory
        messages = list(traj.metadata.get("messages_to_user", []))
        traj.answer = messages[-1] if messages else ""
        verdict = env.verify(traj.answer)
        traj.metadata.update(verdict=verdict.to_dict(), env_digest=env.digest(), env_done=env.done)
        rollout = single_rollout(traj, episode.example, engine=self.name)
        write_verdicts(rollout, {"env_reward": verdict.reward, "success": float(verdict.success)})
        return rollout
