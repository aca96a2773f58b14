"""The task registry: every module in `agentic_infer/tasks/` exports `TASKS` (a list of `Task`), found on first use.

    from agentic_infer.tasks import get_task, list_tasks, register_task
    get_task("hotpotqa").load(path)

`register_task(task)` adds a task from outside this package (a user's own benchmark). Every registered env
with task files is a task too (`agentic_infer.tasks.envs`), unless a benchmark task has its name.
Run `agentic eval tasks` for the table of tasks and the files they expect.
"""

from __future__ import annotations

import importlib
import pkgutil

from agentic_infer.errors import ConfigError
from agentic_infer.tasks.base import Task

_REGISTRY: dict[str, Task] = {}
_ALIASES: dict[str, str] = {}
_loaded = False


def register_task(task: Task, *, aliases: tuple[str, ...] = (), replace: bool = False) -> Task:
    """Add `task` to the registry (an existing name is an error unless `replace`)."""
    if task.name in _REGISTRY and not replace:
        raise ConfigError(f"task {task.name!r} is already registered; pass replace=True to override it")
    _REGISTRY[task.name] = task
    for a in aliases:
        _ALIASES[a] = task.name
    return task


def _discover() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for task in getattr(module, "TASKS", ()):
            register_task(task, aliases=getattr(module, "ALIASES", {}).get(task.name, ()), replace=True)
    _add_env_tasks()


def _add_env_tasks() -> None:
    """The env registry's tasks (`agentic_infer.tasks.envs`) under names no benchmark task has."""
    from agentic_infer.tasks.envs import env_tasks

    for task in env_tasks():
        if _REGISTRY.get(task.name, task).family == "env":
            _REGISTRY[task.name] = task


def list_tasks() -> list[Task]:
    """Every registered task, sorted by family then name."""
    _discover()
    _add_env_tasks()
    return sorted(_REGISTRY.values(), key=lambda t: (t.family, t.name))


def get_task(name: str) -> Task:
    """The task called `name` (case-insensitive; `-`/`_` are equivalent; aliases such as `2wikimultihopqa`)."""
    _discover()
    key = name.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in _REGISTRY:  # an env registered since the first lookup
        _add_env_tasks()
    if key not in _REGISTRY:
        raise ConfigError(f"unknown task {name!r}; known: {', '.join(sorted(_REGISTRY))} (see `agentic eval tasks`)")
    return _REGISTRY[key]


__all__ = ["Task", "get_task", "list_tasks", "register_task"]
