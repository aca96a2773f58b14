"""Env tasks in the eval: the loader, engine "env" by default and only, metrics from the engine's verdicts (not
re-scored), tau-bench's pass^k (hand-computed), the report, the CLI, and each real env on two rows (FakeLLM)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentic_infer.backends as backends
from agentic_infer.cli import main
from agentic_infer.envs.registry import ENVS, register_env
from agentic_infer.errors import ConfigError
from agentic_infer.tasks import _REGISTRY, get_task, list_tasks
from agentic_infer.testing import FakeLLM, counter_env_spec
from eval.report import write_report
from eval.runner import RunConfig, run_eval
from eval.stats import pass_hat_k
from eval.summary import read_results
from tests.conftest import shared_data

ENV = "counter-eval"


@pytest.fixture(autouse=True)
def counter_env():
    register_env(counter_env_spec(ENV, default_files=("tools/counter.jsonl",)))
    yield
    ENVS.pop(ENV, None)
    _REGISTRY.pop(ENV, None)


def call(name: str, **arguments) -> str:
    return f'<tool_call>{json.dumps({"name": name, "arguments": arguments})}</tool_call>'


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_every_env_with_files_is_a_task_and_its_loader_keeps_the_rows(tmp_path):
    assert ENV in {t.name for t in list_tasks()}
    task = get_task(ENV)
    assert task.family == "env" and task.primary == "success" and task.metrics == ("success", "env_reward")
    assert task.engines == ("env",) and task.default_files == ("tools/counter.jsonl",)
    data = write_rows(tmp_path / "c.jsonl", [{"id": "a", "target": 3}, {"target": 4, "instruction": "Reach 4."}])
    a, b = task.load(data)
    assert (a["id"], b["id"]) == ("a", "c.jsonl-2")  # the row's id, else the file name and line
    assert a["raw"] == {"id": "a", "target": 3} and a["gold"] == [] and a["env"] == ENV
    assert b["question"] == "Reach 4." and a["question"] == '{"id": "a", "target": 3}'
    (tmp_path / "bad.jsonl").write_text('[1, 2]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="bad.jsonl:0: a int instead of a task row"):
        task.load(tmp_path / "bad.jsonl")


def test_an_env_without_files_is_a_task_only_when_it_says_so():
    """Generated envs (games: rows are seeds the user writes) have no shipped files; `eval_task=True` makes them tasks."""
    import dataclasses

    register_env(counter_env_spec("counter-nofiles"))
    register_env(dataclasses.replace(counter_env_spec("counter-seeds"), eval_task=True))
    try:
        names = {t.name for t in list_tasks()}
        assert "counter-seeds" in names and "counter-nofiles" not in names
        assert get_task("counter-seeds").default_files == ()
    finally:
        for name in ("counter-nofiles", "counter-seeds"):
            ENVS.pop(name, None)
            _REGISTRY.pop(name, None)


def test_a_benchmark_task_keeps_its_name_over_an_env():
    register_env(counter_env_spec("hotpotqa", default_files=("x.jsonl",)))
    try:
        assert get_task("hotpotqa").family == "multihop"
        assert [t.family for t in list_tasks() if t.name == "hotpotqa"] == ["multihop"]
    finally:
        ENVS.pop("hotpotqa")


def test_env_tasks_run_on_engine_env_only(tmp_path):
    data = write_rows(tmp_path / "c.jsonl", [{"id": "a", "target": 3}])
    cfg = RunConfig(task=ENV, data=str(data))
    assert cfg.engine == "env" and cfg.engine_config().env == ENV
    assert RunConfig(task="hotpotqa", data=str(data)).engine == "direct"
    with pytest.raises(ConfigError, match="env tasks run on engine 'env'"):
        RunConfig(task=ENV, data=str(data), engine="direct")
    with pytest.raises(ConfigError, match="engine 'env' runs env tasks only"):
        RunConfig(task="hotpotqa", data=str(data), engine="env")
    with pytest.raises(ConfigError, match="drop --set env"):
        RunConfig(task=ENV, data=str(data), settings={"env": "retail"})


async def test_metrics_are_the_engines_verdicts(tmp_path):
    data = write_rows(tmp_path / "c.jsonl", [{"id": "a", "target": 3}, {"id": "b", "target": 2},
                                             {"id": "c", "target": 5}])
    # a: reaches 3 and says so (1/1); b: reaches 2, says nothing useful (1/2 checks); c: does nothing (0/2)
    llm = FakeLLM([call("add", n=3), "It is 3.", call("add", n=2), "Done.", "No."])
    out = tmp_path / "run"
    summary = await run_eval(RunConfig(task=ENV, data=str(data), out=str(out)), llm=llm, progress=False)
    rows = {r["id"]: r for r in read_results(out / "results.jsonl")}
    assert {k: r["metrics"] for k, r in rows.items()} == {
        "a": {"success": 1.0, "env_reward": 1.0}, "b": {"success": 0.0, "env_reward": 0.5},
        "c": {"success": 0.0, "env_reward": 0.0}}
    assert rows["b"]["env"]["failed"] == {"reported": "2 is not in the response"}
    assert rows["a"]["prediction"] == "It is 3." and rows["a"]["tool_calls"] == 1
    assert summary["engine"] == "env" and summary["primary"] == "success"
    assert summary["metrics"]["success"]["mean"] == pytest.approx(1 / 3)
    assert summary["metrics"]["env_reward"]["mean"] == pytest.approx(0.5)
    rollout = json.loads((out / "rollouts.jsonl").read_text().splitlines()[0])
    assert rollout["example"] == {"id": "a", "target": 3} and rollout["rewards"]["success"] == 1.0
    assert rollout["trajectories"][0]["steps"][0]["state"] == '{"value":0}'


def test_pass_hat_k_by_hand():
    assert pass_hat_k(3, 2, 1) == pytest.approx(2 / 3)
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)  # C(2,2)/C(3,2)
    assert pass_hat_k(3, 2, 3) == 0.0 and pass_hat_k(3, 3, 3) == 1.0
    assert pass_hat_k(4, 3, 2) == pytest.approx(0.5)  # C(3,2)/C(4,2) = 3/6
    with pytest.raises(ConfigError):
        pass_hat_k(3, 2, 4)


async def test_samples_give_pass_hat_k_in_summary_and_report(tmp_path):
    data = write_rows(tmp_path / "c.jsonl", [{"id": "a", "target": 3}, {"id": "b", "target": 5}])
    win = lambda t: [call("add", n=t), f"It is {t}."]  # noqa: E731
    # task a: 2 of 3 samples succeed; task b: 3 of 3
    llm = FakeLLM([*win(3), *win(3), "I cannot.", *win(5), *win(5), *win(5)])
    out = tmp_path / "run"
    summary = await run_eval(RunConfig(task=ENV, data=str(data), out=str(out), samples=3), llm=llm, progress=False)
    m = summary["metrics"]
    # pass^j = mean over tasks of C(c, j) / C(3, j): a (c=2): 2/3, 1/3, 0; b (c=3): 1, 1, 1
    assert m["pass^1"]["mean"] == pytest.approx((2 / 3 + 1) / 2)
    assert m["pass^2"]["mean"] == pytest.approx((1 / 3 + 1) / 2)
    assert m["pass^3"]["mean"] == pytest.approx(0.5)
    assert m["pass@3"]["mean"] == 1.0 and "maj@3" not in m
    assert m["success"]["mean"] == 1.0  # sample 0 of each task
    rows = {r["id"]: r for r in read_results(out / "results.jsonl")}
    assert rows["a"]["metrics"]["pass^2"] == pytest.approx(1 / 3)
    rollout = json.loads((out / "rollouts.jsonl").read_text().splitlines()[0])
    assert [t["rewards"]["success"] for t in rollout["trajectories"]] == [1.0, 1.0, 0.0]
    saved = json.loads((out / "summary.json").read_text())
    assert saved["metrics"]["pass^3"]["mean"] == pytest.approx(0.5)
    html, md, *_ = write_report([out], out=tmp_path / "report.html")
    text = md.read_text()
    for name in ("success (95% CI)", "pass^1 (95% CI)", "pass^2 (95% CI)", "pass^3 (95% CI)"):
        assert name in text


def test_cli_eval_run_on_an_env_task(tmp_path, monkeypatch, capsys):
    data = write_rows(tmp_path / "c.jsonl", [{"id": "a", "target": 3}])
    monkeypatch.setattr(backends, "load_llm", lambda uri: FakeLLM([call("add", n=3), "It is 3."]))
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as e:
        main(["eval", "run", "--task", ENV, "--data", str(data), "--out", str(out), "--quiet"])
    assert e.value.code == 0, capsys.readouterr().err
    assert f"{ENV} / env" in capsys.readouterr().out
    assert json.loads((out / "summary.json").read_text())["metrics"]["success"]["mean"] == 1.0
    with pytest.raises(SystemExit) as e:
        main(["eval", "run", "--task", ENV, "--data", str(data), "--out", str(tmp_path / "x"), "--engine", "cot"])
    assert e.value.code == 2 and "env tasks run on engine 'env'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["eval", "run", "--task", ENV, "--show-config"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith(f"env: {ENV}\n")


# ------------------------------------------------------------------------------ the real envs, two rows each

def _first_rows(path: Path, n: int = 2) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:n]]


async def test_retail_two_rows(tmp_path):
    rows = _first_rows(shared_data("tools/tau_retail_db/retail_tasks_dev.jsonl"))
    data = write_rows(tmp_path / "retail.jsonl", rows)
    gold = rows[0]["actions"][0]
    # row 0: the gold write, then a closing message (it has no outputs to state); row 1: does nothing
    llm = FakeLLM([call(gold["name"], **gold["kwargs"]), "Your order is cancelled.", "Sorry, I cannot help."])
    out = tmp_path / "run"
    summary = await run_eval(RunConfig(task="retail", data=str(data), out=str(out)), llm=llm, progress=False)
    results = {r["id"]: r for r in read_results(out / "results.jsonl")}
    assert results[rows[0]["id"]]["metrics"] == {"success": 1.0, "env_reward": 1.0}
    assert results[rows[1]["id"]]["metrics"]["success"] == 0.0
    assert summary["metrics"]["success"]["mean"] == 0.5
    traj = json.loads((out / "rollouts.jsonl").read_text().splitlines()[0])["trajectories"][0]
    # the state before the first call: the shipped database unchanged, as retail's canonical text (its digest and
    # the records that differ from it: none yet), short enough to be GiGPO's text anchor
    assert json.loads(traj["steps"][0]["state"]).keys() == {"base"}
    assert traj["token_exact"] is True


async def test_bfcl_two_rows(tmp_path):
    """`--task bfcl` is the env task (the text tasks bfcl-simple/... stay); the gold comes from the run's file."""
    src = shared_data("tools/bfcl/BFCL_v4_simple_python.json")
    assert get_task("bfcl").family == "env" and get_task("bfcl-simple").family == "tools"
    cfg = RunConfig(task="bfcl", data=str(src), out=str(tmp_path / "run"), limit=2)
    assert cfg.engine_config().env_options == {"data_file": str(src)}
    # row 0 (triangle area, base 10, height 5): the right call; row 1: no call at all
    llm = FakeLLM([call("calculate_triangle_area", base=10, height=5), "The area is 25.", "I do not know."])
    summary = await run_eval(cfg, llm=llm, progress=False)
    rows = read_results(tmp_path / "run" / "results.jsonl")
    assert [(r["id"], r["metrics"]["success"]) for r in rows] == [("simple_python_0", 1.0),
                                                                       ("simple_python_1", 0.0)]
    assert summary["n"] == 2 and summary["metrics"]["success"]["mean"] == 0.5


async def test_travelplanner_two_rows(tmp_path):
    rows = _first_rows(shared_data("tools/travelplanner/std_travelplanner.jsonl"))
    data = write_rows(tmp_path / "tp.jsonl", rows)
    gold_plan = rows[0]["messages"][2]["content"]
    llm = FakeLLM([gold_plan, "I cannot plan this trip."])  # row 0: the gold plan as the answer; row 1: none
    out = tmp_path / "run"
    cfg = RunConfig(task="travelplanner", data=str(data), out=str(out),
                    settings={"max_tokens_per_turn": 4096, "max_total_tokens": 4096})  # FakeLLM: a token per byte
    summary = await run_eval(cfg, llm=llm, progress=False)
    results = read_results(out / "results.jsonl")
    assert [r["id"] for r in results] == ["tp.jsonl-1", "tp.jsonl-2"]  # no ids in the rows: file name + line
    assert [r["metrics"]["success"] for r in results] == [1.0, 0.0]
    assert summary["metrics"]["success"]["mean"] == 0.5
