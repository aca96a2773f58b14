"""Tree-search environments by kind, through the env registry (`agentic_infer.envs`: one factory for every
environment): an environment kind + an example -> LATS's env or RAP's task.

    make = lats_env_factory("qa", retriever_for=retriever_for)      # example -> RetrievalQAEnv
    LATS(llm, make, options)
    LATS(llm, lats_env_factory("retail"), options)                   # any snapshotting env, through EnvWorld
    kind = env_kind(task)                                            # "game24" | "math" | "qa" for a benchmark

The example carries what the environment needs: `question` (the puzzle, question, program spec or blocks
state), `gold` (scoring; oracle feedback only with `feedback=oracle`), `tests` / `hidden_tests` (program) and
`goal` (blocksworld). `agentic run lats|rap` builds its one example from its flags; eval and synth pass the
benchmark's examples, without gold (`with_gold=False`: judge feedback only, the verdict comes from eval).
The worlds are registered as envs in `agentic_infer.envs.tree` (`make_env(kind, example).world` is the LATS
environment; RAP's tasks are the registry's "rap" view, GSM8K's under the "math" env). A kind outside LATS_ENVS
is any registered env whose snapshots restore (`EnvSpec.snapshots`): the example is its task row, and LATS
expands it through `agentic_infer.engines.tree.env_world.EnvWorld`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentic_infer.errors import ConfigError

LATS_ENVS = ("game24", "qa", "math", "program")
RAP_ENVS = ("game24", "gsm8k", "blocksworld")
RAP_WORLDS = {"game24": "game24", "gsm8k": "math", "blocksworld": "blocksworld"}  # RAP task -> registered env
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


def lats_env_factory(kind: str, *, retriever_for: Callable[[Example], Any] | None = None,
                     with_gold: bool = True, **options: Any) -> Callable[[Example], Any]:
    """`example -> LATS environment` of `kind`: a tree world of LATS_ENVS (`qa` needs `retriever_for`), or any
    other registered env whose snapshots restore, searched through `EnvWorld` (`options` go to `make_env`)."""
    from agentic_infer.envs.registry import get_env_spec, make_env

    if kind in LATS_ENVS:
        extra = {"retriever_for": retriever_for} if kind == "qa" else {}
        if kind == "qa" and retriever_for is None:
            raise ConfigError("LATS on a QA task searches: give an index (--index DIR) or a corpus (--corpus NAME)")
        return lambda ex: make_env(kind, ex, with_gold=with_gold, **extra, **options).world
    from agentic_infer.engines.tree.env_world import env_world_factory

    try:
        get_env_spec(kind)
    except ConfigError as e:
        raise ConfigError(f"LATS environment {kind!r}: choose one of {', '.join(LATS_ENVS)} or a registered env "
                          f"({e})") from e
    return env_world_factory(kind, **options)


def rap_task_factory(kind: str, *, with_gold: bool = True) -> Callable[[Example], Any]:
    """`example -> RAP task` of `kind` (one of RAP_ENVS), built by the env registry (its "rap" view)."""
    from agentic_infer.envs.registry import make_env

    if kind not in RAP_ENVS:
        raise ConfigError(f"RAP task {kind!r}: choose one of {', '.join(RAP_ENVS)}")
    name = RAP_WORLDS[kind]
    return lambda ex: make_env(name, ex, view="rap", with_gold=with_gold).world.rap_task
