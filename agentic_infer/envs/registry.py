"""The environment registry: one factory for every environment, from tool domains to tree-search worlds.

    from agentic_infer.envs import make_env, list_envs
    env = make_env("retail", task_row)        # a line of retail_tasks_train.jsonl, as a dict
    [spec.name for spec in list_envs()]       # what `agentic envs` lists

An entry (`EnvSpec`) says how to build the env from one task row (`make(task_row, **options)`), what its
tools are, what a task row looks like, how the reward is made, and the shipped data files its tasks come
from. Add one with `register_env(EnvSpec(...))`; the built-in modules register theirs when first needed.
Not covered: envs served over the network (wrap the client in an `Env`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentic_infer.envs.base import Env
from agentic_infer.errors import ConfigError

# Modules whose import registers the built-in envs.
BUILTIN_MODULES = ("agentic_infer.envs.retail", "agentic_infer.envs.travelplanner", "agentic_infer.envs.bfcl",
                   "agentic_infer.envs.tree", "agentic_infer.envs.games")


@dataclass(frozen=True)
class EnvSpec:
    """One registered env: `make(task_row, **options) -> Env` and what `agentic envs` shows about it."""

    name: str
    description: str
    make: Callable[..., Env]
    tools: tuple[str, ...]  # tool names (for envs whose tools depend on the task: a summary)
    task_format: str  # what a task row holds
    reward: str  # how the verdict's reward is made
    default_files: tuple[str, ...] = ()  # task files under the shared data folder (eval's defaults)
    snapshots: bool = True  # snapshot()/restore() work: a tree search can expand it
    eval_task: bool | None = None  # an eval task of its own (None: iff it has default_files; games read --data)


ENVS: dict[str, EnvSpec] = {}
_loaded = False


def register_env(spec: EnvSpec) -> EnvSpec:
    ENVS[spec.name] = spec
    return spec


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILTIN_MODULES:
            importlib.import_module(module)


def get_env_spec(name: str | EnvSpec) -> EnvSpec:
    if isinstance(name, EnvSpec):
        return name
    _load_builtins()
    if name not in ENVS:
        raise ConfigError(f"unknown env {name!r}; choose one of {', '.join(sorted(ENVS))} (agentic envs lists them)")
    return ENVS[name]


def list_envs() -> list[EnvSpec]:
    _load_builtins()
    return [ENVS[n] for n in sorted(ENVS)]


def make_env(name: str | EnvSpec, task_row: Mapping[str, Any], **options: Any) -> Env:
    """A fresh env `name` for one task row (a dict as the task file holds it)."""
    spec = get_env_spec(name)
    if not isinstance(task_row, Mapping):
        raise ConfigError(f"make_env({spec.name!r}, ...): the task row must be a dict, got {type(task_row).__name__}; "
                          f"expected {spec.task_format}")
    return spec.make(task_row, **options)
