"""An eval run split into shards on an executor (local processes, Ray): the same rows and summary as one process,
and a run killed mid-way resumes without generating an item twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.executors import ExecutorConfig
from agentic_infer.testing import FakeLLM
from eval.runner import RunConfig, run_eval
from eval.summary import read_results
from tests.eval.test_eval_runner import HOTPOT, STABLE

ROOT = Path(__file__).resolve().parents[2]
REPLY = "fake://?reply=%5Cboxed%7BRush%7D"


@pytest.fixture
def hq16(tmp_path) -> Path:
    p = tmp_path / "hq.jsonl"
    rows = [{**r, "_id": f"{r['_id']}-{k}"} for k in range(2) for r in HOTPOT]
    p.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return p


def _rows(out: Path) -> list[dict]:
    return [{k: r.get(k) for k in STABLE} for r in read_results(out / "results.jsonl")]


def _summary(out: Path) -> dict:
    s = json.loads((out / "summary.json").read_text())
    return {k: s[k] for k in ("n", "metrics")}


def _shard_rollout_ids(out: Path) -> list[str]:
    return [json.loads(line)["example_id"] for f in sorted(out.glob("shards/*/0000*/rollouts.jsonl"))
            for line in f.read_text().splitlines()]


@pytest.mark.parametrize("executor", [{"kind": "local", "tasks": 3, "workers": 2}, {"kind": "ray", "tasks": 2, "workers": 2},
                                      {"kind": "slurm", "tasks": 2, "workers": 2, "poll_s": 0.5}])
async def test_a_sharded_run_gives_the_one_process_rows_and_summary(hq16, tmp_path, executor, request):
    if executor["kind"] == "slurm":
        request.getfixturevalue("slurm_cluster")
    base = dict(task="hotpotqa", data=str(hq16), engine="direct", backend=REPLY)
    one = await run_eval(RunConfig(out=str(tmp_path / "one"), **base), progress=False)
    out = tmp_path / "sharded"
    sharded = await run_eval(RunConfig(out=str(out), executor=ExecutorConfig(**executor), **base), progress=False)
    assert _rows(tmp_path / "one") == _rows(out) and len(_rows(out)) == 16  # same rows, in the examples' order
    assert _summary(tmp_path / "one") == _summary(out) and one["metrics"] == sharded["metrics"]
    assert sorted(_shard_rollout_ids(out)) == sorted(r["id"] for r in _rows(out))  # each item generated once, in a shard
    assert len(list(out.glob("shards/*/logs/completions/*"))) == executor["tasks"]


async def test_a_sharded_run_with_an_llm_object_is_refused(hq16, tmp_path):
    cfg = RunConfig(task="hotpotqa", data=str(hq16), engine="direct", backend=REPLY, out=str(tmp_path / "o"),
                    executor=ExecutorConfig(tasks=2))
    with pytest.raises(ConfigError, match="--backend"):
        await run_eval(cfg, llm=FakeLLM(lambda p: "x"), progress=False)


def test_a_killed_sharded_run_resumes_without_generating_an_item_twice(hq16, tmp_path):
    out = tmp_path / "o"
    cmd = [sys.executable, "-m", "agentic_infer", "eval", "run", "--task", "hotpotqa", "--data", str(hq16),
           "--engine", "direct", "--backend", REPLY + "&token_delay_s=0.05", "--executor", "local", "--tasks", "2",
           "--workers", "2", "--quiet", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_shard_rollout_ids(out)) < 4:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its shard processes
    proc.wait()
    before = _shard_rollout_ids(out)
    assert 4 <= len(before) < 16 and not (out / "summary.json").exists(), "the kill must land mid-run"
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ids = [r["id"] for r in _rows(out)]
    assert len(ids) == 16 == len(set(ids))
    after = _shard_rollout_ids(out)
    assert len(after) == 16 == len(set(after))  # no item generated twice
    assert json.loads((out / "summary.json").read_text())["n"] == 16


async def test_a_sharded_run_keeps_the_reasons_its_failed_items_failed(tmp_path):
    """Items that fail in a shard (here: a question without paragraphs for --corpus per-question) are recorded in
    the run's own errors file, as a one-process run records them, so `eval compare` can say why they are unscored."""
    from eval.compare import coverage

    rows = [*HOTPOT[:4], {**HOTPOT[4], "context": []}, {**HOTPOT[5], "context": []}]
    data = tmp_path / "hq.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    base = dict(task="hotpotqa", data=str(data), engine="search-o1", corpus="per-question", backend=REPLY)
    await run_eval(RunConfig(out=str(tmp_path / "one"), **base), progress=False)
    out = tmp_path / "sharded"
    await run_eval(RunConfig(out=str(out), executor=ExecutorConfig(kind="local", tasks=2, workers=2), **base),
                   progress=False)
    failed = {json.loads(line)["id"] for line in (out / "rollouts.jsonl.errors.jsonl").read_text().splitlines()}
    assert failed == {"q4", "q5"} == {json.loads(line)["id"] for line in
                                      (tmp_path / "one" / "rollouts.jsonl.errors.jsonl").read_text().splitlines()}
    [line] = coverage({"p": {"hotpotqa": out}})
    assert line.startswith("- p / hotpotqa: 4 of 6 scored; failed: 2 x ConfigError:") and "no paragraphs" in line
