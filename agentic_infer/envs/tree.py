"""The tree-search worlds as envs: one factory (`make_env`) for LATS's environments, RAP's tasks and every
tool domain (the other direction, any snapshotting env as a tree-search world, is `engines.tree.env_world`).

    env = make_env("game24", {"question": "1 1 4 6"})           # a TreeWorldEnv over Game24LATSEnv
    env.call("act", {"action": "4 * 6"})                        # "4 * 6 = 24 (left: 1 1 24)"
    env.verify("").reward                                       # the world's gold reward (0.0 until solved)
    env.world                                                   # the functional world LATS runs on
    make_env("blocksworld", row, view="rap").world.rap_task     # the task RAP searches

Registered worlds (tool "act" {"action": text}; a task row holds `question`, and `gold` (or `answer`) to score):
`game24` (Game24LATSEnv), `math` (MathEnv), `qa` (RetrievalQAEnv; option `retriever=` or `retriever_for=`),
`program` (ProgramEnv; `tests`, `hidden_tests`), `blocksworld` (`question` = the initial facts, `goal`; its true
transition is the Blocksworld checker; an illegal move ends the episode, as in RAP's task). Options: `with_gold`
(False: no gold, the world cannot score), `view` ("lats", or "rap": a `TaskWorld` holding the RAP task,
`world.rap_task`, moved by the checker's transition where one exists: game24, blocksworld; GSM8K's transitions
are the LLM world model's, so acting in that view is refused), and any keyword of the world's constructor
(`max_steps`, `k`, ...). The env's state is the world's JSON state (snapshot/restore: that dict); a step's
reward is the world's `feedback_reward` when it has one (visible tests); the verdict's reward is its gold
reward on the state (no checks and 0.0 when the task has no gold; the agent's final message is not read: the
answer is the world's own, e.g. `finish[...]`). Tool calls run the world's async `step` to completion
(`run_sync`, in a worker thread inside a running event loop).
Not covered: eval task files for these envs (`default_files` is empty: their benchmarks are eval tasks already).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from agentic_infer.envs.base import CallResult, Check, Env, EnvVerdict, Refusal, function_schema
from agentic_infer.envs.registry import EnvSpec, register_env
from agentic_infer.errors import ConfigError

T = TypeVar("T")
VIEWS = ("lats", "rap")


def run_sync(awaitable: Awaitable[T]) -> T:
    """The result of a coroutine from synchronous code (Env methods), inside a running event loop or not."""
    async def wait() -> T:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # called from an engine's event loop
        return pool.submit(asyncio.run, wait()).result()


# -- tree worlds as envs ---------------------------------------------------------------------------------------
class TreeWorldEnv(Env):
    """A tree-search world (the functional protocol of `engines.tree.base.Environment`) as an `Env`."""

    def __init__(self, world: Any, *, name: str):
        super().__init__()
        self.world, self.name = world, name
        self._state: dict[str, Any] = world.init_state()
        self.done = bool(world.is_terminal(self._state))

    def tools(self) -> list[dict[str, Any]]:
        return [function_schema("act", "Take one step in the task (the instructions say how to write it).",
                                {"action": {"type": "string", "description": "the step, e.g. '4 * 6' or "
                                            "'finish[answer]'"}}, ["action"])]

    def instructions(self) -> str:
        return str(getattr(self.world, "instructions", "") or "")

    def first_observation(self) -> str:
        return f"Task: {getattr(self.world, 'task', '')}\nState: {self.world.describe(self._state)}"

    def execute(self, tool: str, arguments: dict[str, Any]) -> CallResult:
        text = arguments.get("action")
        if not isinstance(text, str) or not text.strip():
            raise Refusal(f"act needs a non-empty 'action' string, got {text!r}")
        if self.world.is_terminal(self._state):
            raise Refusal("the episode is over; no further steps")
        parse = getattr(self.world, "parse_action", None)
        action = (parse(text) if parse is not None else None) or text.strip()
        state, aux = run_sync(self.world.step(self._state, action))
        self._state = state
        self.done = bool(self.world.is_terminal(state))
        feedback = getattr(self.world, "feedback_reward", None)
        valid = aux.get("valid", not state.get("error"))
        obs = str(aux.get("observation", ""))
        return CallResult(obs if valid else f"Error: {obs}", error=not valid, info={"action": action, **aux},
                          reward=None if feedback is None else float(feedback(state)))

    def state(self) -> dict[str, Any]:
        return self._state

    def _set_mutable(self, value: Any) -> None:
        self._state = dict(value)

    def verify(self, response: str) -> EnvVerdict:
        answer = self.world.answer(self._state)
        gold = run_sync(self.world.gold_reward(self._state))
        info = {"answer": answer, "response": response}
        if gold is None:
            return EnvVerdict(0.0, [], {**info, "why": "no gold answer or checker for this task"})
        return EnvVerdict(float(gold), [Check("solved", float(gold) >= 1.0, f"answer {answer!r}", "outcome")], info)


class TaskWorld:
    """A RAP task with a true transition (`transition(state, action) -> (state, aux)`, a checker's), so it
    is a functional world an env can act in; `rap_task` is the task RAP searches."""

    def __init__(self, rap_task: Any, transition: Callable[[dict[str, Any], str], tuple[dict[str, Any], dict]] | None,
                 instructions: str = ""):
        self.rap_task, self.name, self.task = rap_task, rap_task.name, rap_task.task
        self.instructions, self._transition = instructions, transition

    async def step(self, state: dict[str, Any], action: str) -> tuple[dict[str, Any], dict[str, Any]]:
        if self._transition is None:
            raise Refusal(f"{self.name}: this task's transitions are predicted by the LLM world model (RAP); "
                          "it has no true transition to act with (use the 'math' env's lats view)")
        return self._transition(state, action)

    def init_state(self) -> dict[str, Any]:
        return self.rap_task.init_state()

    def parse_action(self, text: str) -> str | None:
        return self.rap_task.parse_action(text)

    def is_terminal(self, state: dict[str, Any]) -> bool:
        return self.rap_task.is_terminal(state)

    def describe(self, state: dict[str, Any]) -> str:
        return self.rap_task.describe(state)

    def answer(self, state: dict[str, Any]) -> str | None:
        return self.rap_task.answer(state)

    async def gold_reward(self, state: dict[str, Any]) -> float | None:
        return await self.rap_task.gold_reward(state)


def _game24_transition(task: Any) -> Callable[[dict[str, Any], str], tuple[dict[str, Any], dict[str, Any]]]:
    """Game24RAPTask's states ({numbers, steps, invalid}) moved by exact arithmetic (`Game24Env.apply`)."""
    def step(state: dict[str, Any], action: str) -> tuple[dict[str, Any], dict[str, Any]]:
        nums = list(state["numbers"])
        true, aux = task.env.apply({"numbers": nums, "exprs": nums, "history": [], "error": None}, action)
        if not aux["valid"]:
            return {**state, "steps": [*state["steps"], action], "invalid": True}, aux
        left = " ".join(true["numbers"])
        return {"numbers": true["numbers"], "steps": [*state["steps"], f"{action} (left: {left})"],
                "invalid": False}, aux

    return step


def _blocks_transition(state: dict[str, Any], action: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """BlocksworldTask's states ({facts, plan, invalid}) moved by the Blocksworld checker; an illegal move ends it."""
    from agentic_infer.engines.tree import blocksworld as bw

    true = bw.apply(bw.parse_state(state["facts"]), action)
    if true is None:
        obs = f"illegal action {action!r} in: {state['facts']}"
        return {**state, "invalid": True}, {"observation": obs, "valid": False}
    facts = bw.format_state(true)
    return {"facts": facts, "plan": [*state["plan"], action], "invalid": False}, {"observation": facts, "valid": True}


BLOCKS_INSTRUCTIONS = ("Blocksworld: reach the goal by moving blocks, one action per step: pick up X, put down X, "
                       "stack X on top of Y, unstack X from on top of Y. Only a clear block moves, one at a time.")


def _gold(row: Mapping[str, Any], with_gold: bool) -> Any:
    return row.get("gold", row.get("answer")) if with_gold else None


def _world(kind: str, row: Mapping[str, Any], *, view: str, with_gold: bool, retriever: Any = None,
           retriever_for: Callable[[Mapping[str, Any]], Any] | None = None, **options: Any) -> Any:
    """The functional world of `kind` for one task row (see the module docstring)."""
    from agentic_infer.engines.tree.game24 import Game24LATSEnv
    from agentic_infer.engines.tree.lats_envs import MathEnv, ProgramEnv, RetrievalQAEnv
    from agentic_infer.engines.tree.rap_tasks import BlocksworldTask, Game24RAPTask, GSM8KTask

    if view not in VIEWS:
        raise ConfigError(f"env {kind!r}: view={view!r}; choose one of {VIEWS}")
    if "question" not in row:
        raise ConfigError(f"env {kind!r}: the task row needs 'question' (got keys {sorted(row)})")
    q = str(row["question"])
    if kind == "game24":
        if view == "rap":
            task = Game24RAPTask(q)
            return TaskWorld(task, _game24_transition(task), Game24LATSEnv.instructions)
        return Game24LATSEnv(q, **options)
    if kind == "math":
        if view == "rap":
            return TaskWorld(GSM8KTask(q, gold=_gold(row, with_gold)), None)
        return MathEnv(q, gold=_gold(row, with_gold), **options)
    if kind == "blocksworld":
        if not row.get("goal"):
            raise ConfigError("the blocksworld task needs a goal, e.g. --goal 'the b block is on top of the a block'")
        return TaskWorld(BlocksworldTask(q, str(row["goal"])), _blocks_transition, BLOCKS_INSTRUCTIONS)
    if view == "rap":
        raise ConfigError(f"env {kind!r} has no RAP view; RAP runs on game24, math (GSM8K) and blocksworld")
    if kind == "qa":
        if retriever is None and retriever_for is None:
            raise ConfigError("LATS on a QA task searches: give an index (--index DIR) or a corpus (--corpus NAME)")
        return RetrievalQAEnv(q, retriever if retriever is not None else retriever_for(row),  # type: ignore[misc]
                              gold=_gold(row, with_gold), **options)
    if not row.get("tests"):
        raise ConfigError("the program environment needs at least one visible test, e.g. --test 'assert f(1) == 2'")
    return ProgramEnv(q, visible_tests=list(row["tests"]), hidden_tests=list(row.get("hidden_tests") or []), **options)


def _maker(kind: str) -> Callable[..., TreeWorldEnv]:
    def make(row: Mapping[str, Any], *, view: str = "lats", with_gold: bool = True, **options: Any) -> TreeWorldEnv:
        try:
            world = _world(kind, row, view=view, with_gold=with_gold, **options)
        except TypeError as e:  # an option the world's constructor does not take
            raise ConfigError(f"env {kind!r}: {e}; options are view, with_gold, retriever / retriever_for (qa) and "
                              "the world's own keywords") from e
        return TreeWorldEnv(world, name=kind)

    return make


TREE_WORLDS = {
    "game24": ("Game of 24 (combine four numbers to 24)", "question: the four numbers, e.g. '1 1 4 6'",
               "1.0 iff the final expression uses every number once and equals 24"),
    "math": ("math word problem: reasoning steps, calculate[expr], finish[answer]",
             "question; gold (or answer): the reference answer", "1.0 iff finish[...] is math-equal to the gold"),
    "qa": ("retrieval QA (ReAct): search[query], lookup[term], finish[answer]; option retriever= or retriever_for=",
           "question; gold (or answer): the answer(s)", "exact match (SQuAD normalisation) of finish[...]"),
    "program": ("Python programming: an action is a whole program, run against the visible tests",
                "question: the spec; tests: visible asserts; hidden_tests: scoring asserts",
                "1.0 iff the last program passes the hidden tests (visible if none); step reward: visible pass rate"),
    "blocksworld": ("Blocksworld planning, moves checked by the Blocksworld checker",
                    "question: the initial facts; goal: the goal facts", "1.0 iff the plan replays legally to the goal"),
}
for _kind, (_what, _row, _reward) in TREE_WORLDS.items():
    register_env(EnvSpec(_kind, f"tree-search world: {_what}", _maker(_kind), ("act",), _row, _reward))
