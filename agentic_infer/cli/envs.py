"""`agentic envs [NAME]`: the registered environments, and one env's tool schemas.

    agentic envs                       # table: name, tools, task format, reward, task files
    agentic envs retail                # the tool schemas of retail (built on the first row of its task file)
    agentic envs bfcl --data FILE --row 3 --json    # the schemas an env shows for one task row, as JSON

The table reads the registry (`agentic_infer.envs.list_envs`). Tools may depend on the task (bfcl's functions
come from each row), so `agentic envs NAME` builds the env on one task row: line `--row` (default the first)
of `--data FILE`, else of the env's first task file under the shared data folder; with neither it lists the
tool names the registry records. Run an env with `agentic eval run --task NAME` (engine "env").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agentic_infer.cli.app import app
from agentic_infer.errors import ConfigError


def _task_row(spec: Any, data: Path | None, row: int) -> dict[str, Any] | None:
    """Task row `row` of `data` or of the env's first default file (None when there is no file to read)."""
    from agentic_infer.tasks.envs import env_task
    from agentic_infer.tools.retrieval.recipes import shared_data_dir

    if data is None:
        if not spec.default_files:
            return None
        try:
            data = shared_data_dir() / spec.default_files[0]
        except ConfigError:
            return None
        if not data.is_file():
            return None
    examples = env_task(spec).load(data, limit=row + 1)
    if row >= len(examples):
        raise ConfigError(f"--row {row}: {data} holds {len(examples)} task rows; pick 0..{len(examples) - 1}")
    return examples[row]["raw"]


@app.command("envs")
def envs_cmd(
    name: Annotated[Optional[str], typer.Argument(help="An env: show its tool schemas.")] = None,  # noqa: UP007
    data: Annotated[Optional[Path], typer.Option("--data", help="A task file of the env (default: its first shipped file).")] = None,  # noqa: UP007
    row: Annotated[int, typer.Option("--row", help="Which task row of the file builds the env (0 = first).")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """List the environments (name, tools, task format, reward), or one env's tool schemas."""
    from agentic_infer.envs.registry import get_env_spec, list_envs, make_env

    if name is None:
        specs = list_envs()
        if as_json:
            typer.echo(json.dumps([{"name": s.name, "description": s.description, "tools": list(s.tools),
                                    "task_format": s.task_format, "reward": s.reward, "files": list(s.default_files),
                                    "snapshots": s.snapshots} for s in specs], indent=1))
            return
        table = Table(title="agentic envs", show_lines=True)
        for col in ("env", "tools", "task format", "reward", "task files"):
            table.add_column(col, overflow="fold")
        for s in specs:
            table.add_row(*(escape(c) for c in (s.name, ", ".join(s.tools), s.task_format, s.reward,
                                                "\n".join(s.default_files) or "-")))
        Console(width=200).print(table)
        return
    if row < 0:
        raise ConfigError(f"--row {row}: must be >= 0")
    spec = get_env_spec(name)
    task_row = _task_row(spec, data, row)
    schemas = make_env(spec, task_row).tools() if task_row is not None else None
    if as_json:
        typer.echo(json.dumps({"name": spec.name, "tools": schemas if schemas is not None else list(spec.tools)},
                              indent=1, ensure_ascii=False))
        return
    console = Console(width=200)
    console.print(escape(f"{spec.name}: {spec.description}\ntask rows: {spec.task_format}\nreward: {spec.reward}"))
    if schemas is None:
        console.print(escape(f"tools: {', '.join(spec.tools)} (no task file to build the env on: pass --data FILE "
                             "for their schemas)"))
        return
    table = Table(title=f"{spec.name} tools", show_lines=True)
    for col in ("tool", "description", "parameters (* required)"):
        table.add_column(col, overflow="fold")
    for t in schemas:
        fn = t.get("function", t)
        params = fn.get("parameters") or {}
        required = set(params.get("required") or ())
        args = [f"{k}{'*' if k in required else ''}: {v.get('type', '?') if isinstance(v, dict) else '?'}"
                for k, v in (params.get("properties") or {}).items()]
        table.add_row(*(escape(c) for c in (str(fn.get("name", "?")), str(fn.get("description", "")),
                                            "\n".join(args) or "-")))
    console.print(table)
