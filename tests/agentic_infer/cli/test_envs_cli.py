"""`agentic envs` and `agentic envs NAME` through typer's CliRunner (the registry's envs and a test double)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import agentic_infer.cli.envs  # noqa: F401  (attaches the command)
from agentic_infer.cli import main
from agentic_infer.cli.app import app
from agentic_infer.envs.registry import ENVS, list_envs, register_env
from agentic_infer.testing import counter_env_spec

ENV = "counter-cli"
runner = CliRunner()


@pytest.fixture(autouse=True)
def counter_env():
    register_env(counter_env_spec(ENV))
    yield
    ENVS.pop(ENV, None)


def test_table_lists_every_env_with_tools_format_and_reward():
    result = runner.invoke(app, ["envs"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for spec in list_envs():
        assert spec.name in result.output
    # a row of the double: its tools, and its task format with brackets kept (no rich markup eaten)
    assert "add, get, stop" in result.output and "[str]}" in result.output


def test_json_listing_matches_the_registry():
    result = runner.invoke(app, ["envs", "--json"])
    assert result.exit_code == 0, result.output
    listed = {e["name"]: e for e in json.loads(result.output)}
    assert set(listed) == {s.name for s in list_envs()}
    assert listed[ENV]["tools"] == ["add", "get", "stop"] and listed[ENV]["files"] == []
    assert listed[ENV]["reward"] == counter_env_spec().reward


def test_one_env_shows_its_tool_schemas_from_a_task_row(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"id": "a", "target": 3}\n{"id": "b", "target": 4, "stop_tool": false}\n', encoding="utf-8")
    result = runner.invoke(app, ["envs", ENV, "--data", str(data), "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert [t["function"]["name"] for t in shown["tools"]] == ["add", "get", "stop"]
    assert shown["tools"][0]["function"]["parameters"]["required"] == ["n"]
    # the second row's env has no stop tool: the schemas are the row's env's
    result = runner.invoke(app, ["envs", ENV, "--data", str(data), "--row", "1", "--json"])
    assert [t["function"]["name"] for t in json.loads(result.output)["tools"]] == ["add", "get"]
    result = runner.invoke(app, ["envs", ENV, "--data", str(data)], terminal_width=200)
    assert result.exit_code == 0 and "n*: integer" in result.output and "Read the counter." in result.output


def test_without_a_task_file_the_tool_names_are_listed():
    result = runner.invoke(app, ["envs", ENV], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "tools: add, get, stop (no task file" in result.output


def test_real_env_schemas_from_its_shipped_task_file():
    from tests.conftest import shared_data

    shared_data("tools/tau_retail_db/retail_tasks_dev.jsonl")
    result = runner.invoke(app, ["envs", "retail", "--json"])
    assert result.exit_code == 0, result.output
    names = [t["function"]["name"] for t in json.loads(result.output)["tools"]]
    assert len(names) == 16 and "cancel_pending_order" in names


def test_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["envs", "nowhere"])
    assert e.value.code == 2 and "unknown env 'nowhere'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["envs", ENV, "--row", "-1"])
    assert e.value.code == 2 and "--row -1: must be >= 0" in capsys.readouterr().err
