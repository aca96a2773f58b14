"""Eval tasks from the env registry: every registered env with `default_files` (or `eval_task=True`) is a task of
family "env".

    task = get_task("retail")                      # built from the "retail" EnvSpec
    examples = task.load("../shared/data/tools/tau_retail_db/retail_tasks_dev.jsonl")
    examples[0]   # {"id", "question" (a short view), "gold": [], "env": "retail", "raw": the task row}
    # CLI: agentic eval run --task retail --data FILE --out DIR [--samples k]   (engine "env", the only one)

The task's name is the env's name; the loader reads the env's task rows as the file holds them (JSON Lines,
a JSON list or CSV, `tasks.base.read_rows`; parquet through pyarrow), each row's id from the row (`id`, `_id`,
...) else the file name and line. An env whose factory takes `data_file=` (bfcl: its gold is in
`possible_answer/` next to the file) gets the run's file (`run_env_options`). The engine ("env", `agentic_infer.engines.env_agent`) gets the whole row and computes the verdict
itself; the metrics `success` (primary) and `env_reward` are read from its rewards, not re-scored from
text (`eval.scoring`), and `--samples k` adds tau-bench's pass^1..k. A benchmark task of the same name (e.g.
a tree world such as game24) keeps its name: the env is then no task. `env_tasks()` is called by the task
registry (`agentic_infer.tasks`); this module exports no `TASKS`.
Not covered: envs without task files (build their rows yourself and run the engine).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentic_infer.envs.registry import EnvSpec, get_env_spec, list_envs
from agentic_infer.errors import ConfigError
from agentic_infer.tasks.base import Task, fail, read_rows, record_id

METRICS = ("success", "env_reward")
QUESTION_FIELDS = ("question", "instruction", "query", "user_question", "messages", "prompt")
QUESTION_CHARS = 300


def _user_text(value: Any) -> str:
    """A string, or the first user message's content in a (nested) list of chat messages; "" otherwise."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, Mapping):
        return str(value.get("content", "")).strip() if value.get("role") == "user" else ""
    if isinstance(value, (list, tuple)):
        return next((t for t in map(_user_text, value) if t), "")
    return ""


def question_text(row: Mapping[str, Any]) -> str:
    """A short text view of a task row for result rows and reports (the env shows the agent its own)."""
    for key in QUESTION_FIELDS:
        text = _user_text(row.get(key))
        if text:
            return text[:QUESTION_CHARS]
    return json.dumps(row, ensure_ascii=False, default=str)[:QUESTION_CHARS]


def _rows(path: Path, fmt: str) -> list[tuple[int, Any]]:
    """(row number, row) of a task file: what `read_rows` reads, or a parquet file's rows as plain data."""
    if path.suffix.lower() != ".parquet":
        return read_rows(path, fmt)
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ConfigError(f"{path}: reading parquet task rows needs pyarrow: pip install pyarrow") from e
    return list(enumerate(pq.read_table(path).to_pylist()))


def _loader(spec: EnvSpec) -> Callable[[Path], list[dict[str, Any]]]:
    fmt = f"{spec.name} task rows: {spec.task_format}"

    def load(path: Path) -> list[dict[str, Any]]:
        out = []
        for where, row in _rows(path, fmt):
            if not isinstance(row, dict):
                raise fail(path, where, f"a {type(row).__name__} instead of a task row", fmt)
            out.append({"id": record_id(row, where, path.name), "question": question_text(row), "gold": [],
                        "env": spec.name, "raw": row})
        return out

    return load


def env_task(spec: EnvSpec) -> Task:
    """The eval task of one env (its name, its task files, the env engine's metrics)."""
    return Task(name=spec.name, family="env", description=f"{spec.description} (env; reward: {spec.reward})",
                data_format=f"{spec.name} task rows: {spec.task_format}", loader=_loader(spec), metrics=METRICS,
                primary="success", default_files=tuple(spec.default_files), prompts={},
                extract=lambda text: text, engines=("env",))


def env_tasks() -> list[Task]:
    """One task per registered env with default files."""
    return [env_task(spec) for spec in list_envs()
            if (spec.eval_task if spec.eval_task is not None else bool(spec.default_files))]


def run_env_options(task: Task, data: str | Path) -> dict[str, Any]:
    """The env options a run of env task `task` on file `data` needs: `data_file=` for an env whose factory
    takes one (bfcl reads each row's gold from `possible_answer/` next to the file); else none."""
    make = get_env_spec(task.name).make
    try:
        takes = "data_file" in inspect.signature(make).parameters
    except (TypeError, ValueError):  # a callable without a signature
        takes = False
    return {"data_file": str(data)} if takes and data else {}


def engine_input(example: Mapping[str, Any]) -> dict[str, Any]:
    """What the env engine runs on for one example of an env task: the task row with the example's id."""
    return {**example["raw"], "id": example["id"]}
