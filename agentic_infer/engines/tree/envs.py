"""One factory for tree-search environments: an environment kind + an example -> LATS's env or RAP's task.

    make = lats_env_factory("qa", retriever_for=retriever_for)      # example -> RetrievalQAEnv
    LATS(llm, make, options)
    kind = env_kind(task)                                            # "game24" | "math" | "qa" for a benchmark

The example carries what the environment needs: `question` (the puzzle, question, program spec or blocks
state), `gold` (scoring; oracle feedback only with `feedback=oracle`), `tests` / `hidden_tests` (program) and
`goal` (blocksworld). `agentic run lats|rap` builds its one example from its flags; eval and synth pass the
benchmark's examples, without gold (`with_gold=False`: judge feedback only, the verdict comes from eval).
Not covered: stateful tool environments (tau-bench, TravelPlanner).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentic_infer.errors import ConfigError

LATS_ENVS = ("game24", "qa", "math", "program")
RAP_ENVS = ("game24", "gsm8k", "blocksworld")
Example = Mapping[str, Any]


def env_kind(task: Any, engine: str) -> str:
    """The environment kind of a benchmark task for `engine` ("lats" | "rap"), or a ConfigError."""
    name, family = task.name, task.family
    if name == "game24":
        return "game24"
    if family == "math":
        return "math" if engine == "lats" else "gsm8k"
    if engine == "lats" and family in ("qa", "multihop"):
        return "qa"
    runs_on = "game24, math tasks and QA tasks with a corpus" if engine == "lats" else "game24 and math tasks"
    raise ConfigError(f"engine {engine!r} has no environment for task {name!r} ({family}); it runs on {runs_on}")


def _gold(ex: Example, with_gold: bool) -> Any:
    return ex.get("gold") if with_gold else None


def lats_env_factory(kind: str, *, retriever_for: Callable[[Example], Any] | None = None,
                     with_gold: bool = True) -> Callable[[Example], Any]:
    """`example -> LATS environment` of `kind` (one of LATS_ENVS); `qa` needs `retriever_for`."""
    from agentic_infer.engines.tree.game24 import Game24LATSEnv
    from agentic_infer.engines.tree.lats_envs import MathEnv, ProgramEnv, RetrievalQAEnv

    if kind == "game24":
        return lambda ex: Game24LATSEnv(ex["question"])
    if kind == "math":
        return lambda ex: MathEnv(ex["question"], gold=_gold(ex, with_gold))
    if kind == "qa":
        if retriever_for is None:
            raise ConfigError("LATS on a QA task searches: give an index (--index DIR) or a corpus (--corpus NAME)")
        return lambda ex: RetrievalQAEnv(ex["question"], retriever_for(ex), gold=_gold(ex, with_gold))
    if kind == "program":
        def program(ex: Example) -> Any:
            if not ex.get("tests"):
                raise ConfigError("the program environment needs at least one visible test, e.g. "
                                  "--test 'assert f(1) == 2'")
            return ProgramEnv(ex["question"], visible_tests=list(ex["tests"]),
                              hidden_tests=list(ex.get("hidden_tests") or []))

        return program
    raise ConfigError(f"LATS environment {kind!r}: choose one of {', '.join(LATS_ENVS)}")


def rap_task_factory(kind: str, *, with_gold: bool = True) -> Callable[[Example], Any]:
    """`example -> RAP task` of `kind` (one of RAP_ENVS)."""
    from agentic_infer.engines.tree.rap_tasks import BlocksworldTask, Game24RAPTask, GSM8KTask

    if kind == "game24":
        return lambda ex: Game24RAPTask(ex["question"])
    if kind == "gsm8k":
        return lambda ex: GSM8KTask(ex["question"], gold=_gold(ex, with_gold))
    if kind == "blocksworld":
        def blocks(ex: Example) -> Any:
            if not ex.get("goal"):
                raise ConfigError("the blocksworld task needs a goal, e.g. --goal 'the b block is on top of the a block'")
            return BlocksworldTask(ex["question"], ex["goal"])

        return blocks
    raise ConfigError(f"RAP task {kind!r}: choose one of {', '.join(RAP_ENVS)}")
