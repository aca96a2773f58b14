"""Any env whose snapshots restore as a tree-search world: LATS (or any search of `engines.tree`) expands it.

    world = EnvWorld(lambda: make_env("retail", task_row))
    LATS(llm, env_world_factory("retail"), options)               # example (a task row) -> EnvWorld
    s, aux = await world.step(world.init_state(), '{"name": "get_order_details", "arguments": {"order_id": "#W1"}}')

The functional protocol of `engines.tree.base.Environment` over an `agentic_infer.envs.Env`: a state is
{"snapshot": env.snapshot(), "steps": [{action, observation}], "answer", "error"}. `step` restores the
state's snapshot into one reused env, runs the action and snapshots again; it never awaits in between, so
siblings expanded from one node (even concurrently) never see each other's writes. An action is

- a JSON tool call `{"name": ..., "arguments": {...}}`, bare or inside `<tool_call>...</tool_call>` (the first
  JSON object with a "name" in the text; "arguments" may be a JSON string); canonicalised (sorted keys,
  compact), so equal calls written differently merge into one LATS child with their votes added;
- `finish[final message]`: the final answer, terminal (an env tool named "finish" is called instead).

An unparseable action, an unknown tool or a refused call is an "Error: ..." observation and sets `error` (LATS
scores such a child 0); the episode goes on. Terminal on an answer, `env.done` (a terminal tool) or `max_steps`
actions. `gold_reward` is `env.verify(answer).reward` on the state's snapshot: ORACLE feedback (LATS uses it
only with feedback="oracle"; otherwise to score after the search). `agreement_key` (LATS's self-consistency)
is the env's state digest plus the answer.
Not covered: envs whose `reply` (a simulated user) must answer mid-episode; tools that await.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from agentic_infer.envs.base import Env, canonical_text, state_digest
from agentic_infer.errors import ConfigError

_FINISH = re.compile(r"\bfinish\s*\[(.*)\]", re.I | re.S)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)


def parse_tool_action(text: str) -> tuple[str, dict[str, Any]] | str | None:
    """(tool, arguments) for a JSON tool call in `text`, the final message (a str) for `finish[...]`, or None."""
    text = text or ""
    blocks = [m.group(1) for m in _TOOL_CALL.finditer(text)] or [text]
    decoder = json.JSONDecoder()
    for block in blocks:
        for start in (i for i, ch in enumerate(block) if ch == "{"):
            try:
                obj, _ = decoder.raw_decode(block, start)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("name"), str):
                args = obj.get("arguments", obj.get("parameters", {}))
                if isinstance(args, str):
                    try:
                        args = json.loads(args) if args.strip() else {}
                    except json.JSONDecodeError:
                        return None
                return (obj["name"], args) if isinstance(args, dict) else None
    m = _FINISH.search(text)
    return m.group(1).strip() if m else None


def action_text(tool: str, arguments: Mapping[str, Any]) -> str:
    """The canonical text of a tool call (what LATS's children are keyed by)."""
    return json.dumps({"name": tool, "arguments": dict(arguments)}, sort_keys=True, ensure_ascii=False,
                      separators=(", ", ": "))


class EnvWorld:
    """An `Env` as a tree-search world (see the module docstring); `make()` builds the env once."""

    def __init__(self, make: Callable[[], Env], *, max_steps: int = 10, action_max_tokens: int = 256):
        if max_steps < 1:
            raise ConfigError(f"EnvWorld max_steps={max_steps!r}: must be >= 1")
        self.env = make()
        self.name = self.env.name or type(self.env).__name__
        self.max_steps, self.action_max_tokens = max_steps, action_max_tokens
        self.task = self.env.first_observation()
        self._root = self.env.snapshot()
        tools = "\n".join(f"- {t['function']['name']}: {t['function'].get('description', '')} parameters: "
                          f"{json.dumps(t['function'].get('parameters', {}).get('properties', {}))}"
                          for t in self.env.tools())
        policy = self.env.instructions()
        self.instructions = ((f"{policy}\n\n" if policy else "") + f"Tools:\n{tools}\n\nEach step is ONE tool call "
                             'written as JSON: {"name": "<tool>", "arguments": {...}}. When you are done, write '
                             "finish[your final message to the user].")

    def init_state(self) -> dict[str, Any]:
        return {"snapshot": self._root, "steps": [], "answer": None, "error": None}

    def parse_action(self, text: str) -> str | None:
        parsed = parse_tool_action(text)
        if parsed is None:
            return None
        return f"finish[{parsed}]" if isinstance(parsed, str) else action_text(*parsed)

    async def step(self, state: dict[str, Any], action: str) -> tuple[dict[str, Any], dict[str, Any]]:
        env = self.env
        env.restore(state["snapshot"])  # from here to env.snapshot() below nothing awaits: no sibling interleaves
        parsed = parse_tool_action(action)
        answer, error, reward, info = None, None, None, {}
        if isinstance(parsed, str) and "finish" not in env.tool_names():
            answer, obs = parsed, f"Final message: {parsed}"
        elif parsed is None:
            obs = error = ('Error: no tool call found; write {"name": "<tool>", "arguments": {...}} or '
                           "finish[final message]")
        else:
            tool, args = ("finish", {"answer": parsed}) if isinstance(parsed, str) else parsed
            record = env.call_record(tool, args)
            obs, reward, info = record.output, record.reward, dict(record.info)
            error = record.output if record.error else None
        new = {"snapshot": env.snapshot(), "steps": [*state["steps"], {"action": action, "observation": obs}],
               "answer": answer, "error": error}
        return new, {"observation": obs, "valid": error is None, "reward": reward, **info}

    def is_terminal(self, state: dict[str, Any]) -> bool:
        return (state["answer"] is not None or bool(state["snapshot"].get("done"))
                or len(state["steps"]) >= self.max_steps)

    def describe(self, state: dict[str, Any]) -> str:
        return " | ".join(f"{s['action']} -> {s['observation'][:300]}" for s in state["steps"]) or "(no actions yet)"

    def answer(self, state: dict[str, Any]) -> str | None:
        if state["answer"] is not None:
            return state["answer"]
        return "" if state["snapshot"].get("done") else None  # a terminal tool ended it: the state is the answer

    def agreement_key(self, state: dict[str, Any]) -> str:
        return state_digest(state["snapshot"]["state"]) + "|" + canonical_text(state["answer"])

    async def gold_reward(self, state: dict[str, Any]) -> float | None:
        self.env.restore(state["snapshot"])
        return float(self.env.verify(self.answer(state) or "").reward)


def env_world_factory(name: str, **options: Any) -> Callable[[Mapping[str, Any]], EnvWorld]:
    """`example (a task row) -> EnvWorld` over `make_env(name, example, **options)`; a ConfigError for an env whose
    snapshots do not restore (`EnvSpec.snapshots`)."""
    from agentic_infer.envs.registry import get_env_spec, make_env

    spec = get_env_spec(name)
    if not spec.snapshots:
        raise ConfigError(f"env {name!r} cannot be tree-searched: its snapshots do not restore (EnvSpec.snapshots)")
    world = {k: options.pop(k) for k in ("max_steps", "action_max_tokens") if k in options}
    return lambda example: EnvWorld(lambda: make_env(spec, example, **options), **world)
