"""`RetailEnv`: tau-bench's retail domain as an `Env` (one task row -> tools, policy, user, verdict).

    env = RetailEnv(task_row)                # a line of retail_tasks_{train,dev}.jsonl as a dict
    env.tools(); env.instructions()          # the 16 shipped schemas; the policy text
    env.first_observation()                  # the user's first message (instruction mode: the instruction)
    env.call("get_order_details", {"order_id": "#W7736983"})
    await env.reply("Please confirm: cancel #W5765741 (yes/no)?")   # "yes"
    env.verify("Your order is cancelled.")   # EnvVerdict: checks "state", "actions", "outputs"

    gold = replay(task_row["actions"])       # a fresh env with the gold actions executed in order

A task row is {id, user_id, instruction, actions: [{name, kwargs}], outputs: [str], annotator}; extra keys are
kept in `env.task`. `user="instruction"` (default) confirms as `InstructionUser` describes; `user="llm"` with
`user_backend=` (an LLM or a backend URI) simulates the user as tau-bench does (its first message is generated on
the first `first_observation()`; async callers can `await env.afirst_observation()` instead). The database is shared
read-only and copied per record on write (`RetailDB`), so an env costs microseconds to build; `snapshot()` /
`restore()` keep only the written records, the call log and the user's state. Not covered: tau-bench's
other domains (airline) and user strategies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.envs.base import CallResult, Env, EnvVerdict
from agentic_infer.envs.retail.db import RetailDB, load_policy, load_tables, load_tool_schemas
from agentic_infer.envs.retail.tools import TERMINAL_TOOLS, TOOLS, WRITE_TOOLS
from agentic_infer.envs.retail.user import InstructionUser, LLMUser, LLMUserConfig
from agentic_infer.envs.retail.verify import verify_episode
from agentic_infer.errors import ConfigError

USER_MODES = ("instruction", "llm")


def _actions(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    actions = row.get("actions", [])
    if not isinstance(actions, list) or not all(
            isinstance(a, Mapping) and isinstance(a.get("name"), str) and isinstance(a.get("kwargs", {}), Mapping)
            for a in actions):
        raise ConfigError(f"retail task {row.get('id')!r}: actions must be a list of {{name, kwargs}} dicts, got "
                          f"{actions!r}")
    return [{"name": a["name"], "kwargs": dict(a.get("kwargs", {}))} for a in actions]


def _run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to completion from sync code, also when called inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class RetailEnv(Env):
    """One retail task: see the module docstring."""

    name = "retail"

    def __init__(self, task_row: Mapping[str, Any], *, data_dir: str | Path | None = None, user: str = "instruction",
                 user_backend: Any = None, user_config: LLMUserConfig | None = None):
        super().__init__()
        if not isinstance(task_row, Mapping):
            raise ConfigError(f"RetailEnv needs a task row dict, got {type(task_row).__name__}")
        if user not in USER_MODES:
            raise ConfigError(f"RetailEnv(user={user!r}): choose one of {', '.join(USER_MODES)}")
        self.task = dict(task_row)
        self.gold_actions = _actions(task_row)
        self.outputs = [str(o) for o in task_row.get("outputs", []) or []]
        self.instruction = str(task_row.get("instruction", ""))
        self.data_dir = data_dir
        self.db = RetailDB(load_tables(data_dir))
        self._schemas = load_tool_schemas(data_dir)
        self._names = [s["function"]["name"] for s in self._schemas]
        unknown = set(self._names) - set(TOOLS)
        if unknown:
            raise ConfigError(f"retail_tools.json names tools this env does not implement: {sorted(unknown)}")
        self.user_mode = user
        self.user: InstructionUser | LLMUser = (
            InstructionUser(self.instruction) if user == "instruction"
            else LLMUser(self.instruction, user_backend, config=user_config))
        self.said: list[str] = []  # the agent's messages to the user (tau-bench checks outputs in all of them)
        self._gold: RetailEnv | None = None

    # -- what the agent is shown -------------------------------------------------------------------
    def tools(self) -> list[dict[str, Any]]:
        return load_tool_schemas(self.data_dir)

    def tool_names(self) -> list[str]:
        return list(self._names)

    def instructions(self) -> str:
        return load_policy(self.data_dir)

    def first_observation(self) -> str:
        """The user's first message. With the LLM user this generates it synchronously: inside a running event
        loop, in a worker thread while that loop waits (prefer `await afirst_observation()` from async code)."""
        if isinstance(self.user, LLMUser):
            return _run_sync(self.user.afirst_message())
        return self.user.first_message()

    async def afirst_observation(self) -> str:
        """`first_observation` for async callers (the LLM user generates on the caller's loop)."""
        if isinstance(self.user, LLMUser):
            return await self.user.afirst_message()
        return self.user.first_message()

    # -- acting ------------------------------------------------------------------------------------
    def execute(self, tool: str, arguments: dict[str, Any]) -> CallResult:
        output = TOOLS[tool](self.db, **arguments)
        if tool in WRITE_TOOLS:
            self.user.note_write()
        if tool in TERMINAL_TOOLS:
            self.done = True
        return CallResult(output)

    async def reply(self, message: str) -> str | None:
        self.said.append(message)
        return await self.user.reply(message) if isinstance(self.user, LLMUser) else self.user.reply(message)

    # -- state and verdict -------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """{"orders", "products", "users"}, shaped as the shipped files (live tables: copy before changing)."""
        return self.db.state()

    def canonical_state(self) -> Any:
        """The base's digest and the records that differ from it (`RetailDB.canonical_state`): equal databases,
        equal canonical states, without canonicalising the whole database at every step."""
        return self.db.canonical_state()

    def gold(self) -> RetailEnv:
        """The env that replaying this task's gold actions on a fresh database gives (computed once)."""
        if self._gold is None:
            self._gold = replay(self.gold_actions, data_dir=self.data_dir)
        return self._gold

    def verify(self, response: str) -> EnvVerdict:
        gold = self.gold()
        return verify_episode(self.db, self.calls, gold.db, gold.calls, self.outputs,
                              said=[*self.said, response])

    def _mutable(self) -> Any:
        return self.db.changes()

    def _set_mutable(self, value: Any) -> None:
        self.db.restore_changes(value)

    def _extra(self) -> dict[str, Any]:
        return {"said": list(self.said), "user": self.user.state()}

    def _set_extra(self, extra: Mapping[str, Any]) -> None:
        self.said = list(extra.get("said", []))
        if "user" in extra:
            self.user.set_state(dict(extra["user"]))


def replay(actions: Sequence[Mapping[str, Any]], *, data_dir: str | Path | None = None) -> RetailEnv:
    """A fresh env (no instruction, no outputs) with `actions` ([{name, kwargs}]) executed in order via `call`."""
    env = RetailEnv({"id": "replay", "instruction": "", "actions": list(actions), "outputs": []}, data_dir=data_dir)
    for action in env.gold_actions:
        env.call(action["name"], action["kwargs"])
    return env
