"""A synth pipeline on Ray: the same records and merged stats as the local executor, and a task whose Ray worker is
killed mid-run is resubmitted and finishes without loss, duplicates or a cached LLM call paid twice."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from agentic_infer.backends.cache import backend_calls, cached_keys
from synth.pipeline import run_pipeline
from tests.synth.pipeline.test_resume import _cfg, records, write_nq

pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[3]


def _stats(out: Path) -> list[dict]:
    return json.loads((out / "stats.json").read_text())["steps"]


def _steps(out: Path) -> list[tuple]:
    return [(s["step"], s["in"], s["out"], s["dropped"], s.get("correct:em")) for s in _stats(out)]


@pytest.fixture(scope="module")
def ray_head():
    """A Ray head on loopback with 2 CPUs, started as a user would (`ray start --head`), stopped after."""
    from agentic_infer.executors import local_ray_head

    with local_ray_head(2) as address:
        yield address


def test_ray_executor_gives_the_local_records_and_stats(tmp_path, ray_head):
    data = write_nq(tmp_path / "nq.jsonl", 8)
    run_pipeline(_cfg(tmp_path / "local", data, 1, 1))
    cfg = _cfg(tmp_path / "ray", data, 2, 2)
    cfg.executor.kind = "ray"  # no address: a private Ray on loopback, 2 CPUs, beside the running head
    summary = run_pipeline(cfg)
    a, b = records(tmp_path / "local"), records(tmp_path / "ray")
    assert len(a) == 6 and Counter(a) == Counter(b)
    assert sorted(p.name for p in (tmp_path / "ray" / "trajectories").glob("*.jsonl")) == ["00000.jsonl", "00001.jsonl"]
    assert _steps(tmp_path / "local") == _steps(tmp_path / "ray") and summary["records"] == 6
    ran = json.loads(next((tmp_path / "ray" / "logs").glob("*/executor.json")).read_text())
    assert "ray_remote_kwargs" in ran  # datatrove's RayPipelineExecutor ran it (its own record of itself)


def _rank_workers() -> list[int]:
    """PIDs of Ray's RankWorker actors and the pool processes they forked (they share the process title)."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if b"ray::RankWorker" in (p / "cmdline").read_bytes():
                    pids.append(int(p.name))
            except OSError:
                continue
    return pids


def test_a_killed_ray_task_is_resubmitted_and_loses_pays_duplicates_nothing(tmp_path, ray_head):
    data = write_nq(tmp_path / "nq.jsonl", 16)
    out = tmp_path / "out"
    db = out / "cache" / "llm.sqlite3"
    cmd = [sys.executable, "-m", "agentic_infer", "synth", "rollouts", "--task", "nq-open", "--data", str(data),
           "--engine", "direct", "--backend", "fake://?reply=\\boxed{a1}&token_delay_s=0.03", "--samples", "2",
           "--set", "rollout.settings.sampling.max_tokens=16", "--executor", "ray", "--tasks", "2", "--workers", "2",
           "--set", f"executor.ray_address={ray_head}", "--out", str(out)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # kill both tasks' workers once some requests finished (32 calls in all)
        if db.exists() and len(cached_keys(db)) >= 6 and len(_rank_workers()) >= 2:
            break
        time.sleep(0.05)
    victims = _rank_workers()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    done_before = cached_keys(db)
    calls_before = len(backend_calls(db))
    assert victims and 6 <= len(done_before) < 32, "the kill must land mid-run"
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    rows = records(out)
    assert len(rows) == 32 and len(set(rows)) == 32  # 16 questions x 2 samples: none lost, none twice
    rerun_keys = [k for k, _ in backend_calls(db)[calls_before:]]
    assert not set(rerun_keys) & done_before  # no finished request paid twice
    assert len(rerun_keys) + len(done_before) == 32
    roll = next(s for s in _stats(out) if s["step"].startswith("rollout"))
    assert roll["cache_hits"] == len(done_before) and roll["backend_calls"] == 32 - len(done_before)
