"""`agentic synth envtasks`: writes tasks, drop reasons and stats; resumes; a broken rewording is dropped."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from agentic_infer.cli import main
from synth.envtasks.sampler import sample_task, task_seed
from synth.envtasks.templates import render_intent
from tests.conftest import shared_data


def _run(*args: str) -> None:
    with pytest.raises(SystemExit) as e:
        main(["synth", "envtasks", "--env", "retail", "--no-progress", *args])
    assert e.value.code == 0


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_cli_writes_the_files_and_resumes(tmp_path, tables):
    out = tmp_path / "run"
    _run("--count", "8", "--seed", "2", "--out", str(out))
    rows = _lines(out / "tasks.jsonl")
    stats = json.loads((out / "stats.json").read_text())
    assert (out / "dropped.jsonl").is_file() and stats["seeds"] == 8
    assert stats["verified"] == len(rows) == 8 - sum(stats["dropped"].values())
    assert [s["step"] for s in stats["steps"]][:4] == ["read:seeds", "sample", "phrase", "verify"]
    assert sum(v for k, v in stats["templates"].items() if k.startswith("auth/")) == len(rows)
    for row in rows:
        assert set(row) >= {"id", "user_id", "instruction", "actions", "outputs", "annotator", "provenance"}
        assert row["annotator"] == "synth" and row["provenance"]["seed"] == task_seed(2, row["provenance"]["index"])
    [shard] = (out / "work" / stats["config_hash"] / "tasks").glob("*.jsonl")
    before = shard.stat().st_mtime_ns
    _run("--count", "8", "--seed", "2", "--out", str(out))  # finished: datatrove skips the completed shard
    assert shard.stat().st_mtime_ns == before and _lines(out / "tasks.jsonl") == rows
    for marker in (out / "work" / stats["config_hash"] / "logs" / "completions").iterdir():
        marker.unlink()  # as if killed before the shard finished: it reruns whole, same rows
    _run("--count", "8", "--seed", "2", "--out", str(out))
    assert shard.stat().st_mtime_ns != before and _lines(out / "tasks.jsonl") == rows
    _run("--count", "8", "--seed", "2", "--out", str(tmp_path / "again"))  # one seed, one set of tasks
    assert _lines(tmp_path / "again" / "tasks.jsonl") == rows
    _run("--count", "8", "--seed", "3", "--out", str(tmp_path / "other"))
    assert _lines(tmp_path / "other" / "tasks.jsonl") != rows


def test_a_rewording_that_loses_the_order_id_is_dropped_with_the_reason(tmp_path, tables):
    seed = next(s for s in range(50) if all("order_id" in w for w in sample_task(tables, task_seed(s, 0))[0].writes))
    task, _ = sample_task(tables, task_seed(seed, 0))
    text, _ = render_intent(task, tables)
    for w in task.writes:
        text = text.replace(w["order_id"], "my order")
    out = tmp_path / "r"
    _run("--count", "1", "--seed", str(seed), "--out", str(out), "--backend", f"fake://?reply={quote(text)}")
    assert _lines(out / "tasks.jsonl") == []
    [dropped] = _lines(out / "dropped.jsonl")
    assert dropped["reason"] == "intent_missing:order_id" and dropped["step"] == "verify"
    assert dropped["record"]["instruction"] == text and "prompt" in dropped["record"]["provenance"]
    assert json.loads((out / "stats.json").read_text())["dropped"] == {"intent_missing:order_id": 1}
    assert (out / "cache" / "llm.sqlite3").is_file()


def test_cli_demos_from_train_tasks_and_dev_tasks_refused(tmp_path, capsys):
    train = shared_data("tools/tau_retail_db/retail_tasks_train.jsonl")
    out = tmp_path / "d"
    _run("--from-tasks", str(train), "--count", "2", "--out", str(out), "--demos")
    assert [r["id"] for r in _lines(out / "tasks.jsonl")] == ["retail-train-0", "retail-train-1"]
    demos = _lines(out / "demos" / "trajectories.jsonl")
    assert len(demos) == 2 and all(d["rewards"]["env_reward"] == 1.0 and d["token_exact"] for d in demos)
    assert json.loads((out / "demos" / "stats.json").read_text())["kept"] == 2
    dev = shared_data("tools/tau_retail_db/retail_tasks_dev.jsonl")
    with pytest.raises(SystemExit) as e:
        main(["synth", "envtasks", "--from-tasks", str(dev), "--out", str(tmp_path / "x"), "--demos"])
    assert e.value.code == 2 and "never training data" in capsys.readouterr().err


def test_cli_set_gives_the_demos_env_agent_settings(tmp_path):
    train = shared_data("tools/tau_retail_db/retail_tasks_train.jsonl")
    out = tmp_path / "c"
    _run("--from-tasks", str(train), "--count", "1", "--out", str(out), "--demos", "--set", "tool_schemas=compact")
    [demo] = _lines(out / "demos" / "trajectories.jsonl")
    system = demo["segments"][0]["metadata"]["messages"][0]["content"]
    assert "\nget_order_details(order_id: string): Get the status and details of an order." in system
    assert '"parameters"' not in system and demo["config"]["tool_schemas"] == "compact"


def test_the_same_tasks_from_three_shards_on_slurm(tmp_path, tables, slurm_cluster):
    _run("--count", "8", "--seed", "2", "--out", str(tmp_path / "local"))
    _run("--count", "8", "--seed", "2", "--tasks", "3", "--workers", "2", "--executor", "slurm",
         "--out", str(tmp_path / "slurm"))
    assert _lines(tmp_path / "slurm" / "tasks.jsonl") == _lines(tmp_path / "local" / "tasks.jsonl")
    stats = json.loads((tmp_path / "slurm" / "stats.json").read_text())
    assert len(list((tmp_path / "slurm" / "work" / stats["config_hash"] / "logs" / "slurm_logs").glob("*_[0-2].out"))) >= 3
