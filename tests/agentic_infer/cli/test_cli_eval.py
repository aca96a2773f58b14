"""`agentic eval tasks | run | report` through the real entry point (fake:// backend)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentic_infer.cli import main

REPO = Path(__file__).resolve().parents[3]
HOTPOT = [{"_id": f"q{i}", "question": f"Who recorded song {i}?", "answer": "Rush",
           "context": [["Rush", [f"Rush recorded song {i}."]]], "supporting_facts": [["Rush", 0]]} for i in range(6)]


def _run(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


@pytest.fixture
def data(tmp_path) -> Path:
    p = tmp_path / "hq.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in HOTPOT), encoding="utf-8")
    return p


def test_tasks_lists_every_task(capsys):
    code, out, _ = _run(["eval", "tasks", "--json"], capsys)
    assert code == 0
    names = {t["name"] for t in json.loads(out)}
    assert {"hotpotqa", "gsm8k", "bfcl-parallel", "game24", "simpleqa"} <= names
    code, out, _ = _run(["eval", "tasks"], capsys)
    assert code == 0 and "hotpotqa" in out


def test_run_and_report(tmp_path, data, capsys):
    out_dir = tmp_path / "run"
    code, out, err = _run(["eval", "run", "--task", "hotpotqa", "--data", str(data), "--engine", "direct",
                           "--backend", "fake://?reply=%5Cboxed%7BRush%7D", "--out", str(out_dir), "--quiet"], capsys)
    assert code == 0, err
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["n"] == 6 and summary["metrics"]["em"]["mean"] == 1.0
    code, out, err = _run(["eval", "report", str(out_dir), "--out", str(tmp_path / "rep.html")], capsys)
    assert code == 0 and (tmp_path / "rep.html").exists() and (tmp_path / "rep.md").exists()


def test_config_file_with_flags_on_top(tmp_path, data, capsys):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"task: hotpotqa\ndata: {data}\nengine: cot\nlimit: 2\nsettings: {{sampling: {{max_tokens: 64}}}}\n"
                   "backend: fake://?reply=%5Cboxed%7BRush%7D\n")
    out_dir = tmp_path / "run"
    code, _, err = _run(["eval", "run", "--config", str(cfg), "--limit", "3", "--out", str(out_dir), "--quiet",
                         "--set", "sampling.temperature=0.5"], capsys)
    assert code == 0, err
    run = json.loads((out_dir / "run.json").read_text())
    record = run["config"]
    assert record["engine"] == "cot" and run["engine_config"]["sampling"]["max_tokens"] == 64  # from the file
    assert run["engine_config"]["sampling"]["temperature"] == 0.5  # --set merged over the file's settings
    assert record["limit"] == 3 and record["out"] == str(out_dir)  # flags given on the command line win
    bad = tmp_path / "bad.yaml"
    bad.write_text("task: hotpotqa\nlimt: 2\n")
    code, _, err = _run(["eval", "run", "--config", str(bad), "--data", str(data)], capsys)
    assert code == 2 and "unknown setting 'limt'" in err
    code, _, err = _run(["eval", "run", "--engine", "cot"], capsys)
    assert code == 2 and "give --task NAME and --data FILE" in err


def test_errors_are_one_line(tmp_path, data, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q"}\n')
    code, _, err = _run(["eval", "run", "--task", "hotpotqa", "--data", str(bad), "--backend", "fake://",
                         "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "missing field 'answer'" in err and err.count("\n") == 1
    code, _, err = _run(["eval", "run", "--task", "nope", "--data", str(data), "--backend", "fake://"], capsys)
    assert code == 2 and "unknown task 'nope'" in err
    code, _, err = _run(["eval", "run", "--task", "hotpotqa", "--data", str(data), "--engine", "search-o1",
                         "--backend", "fake://"], capsys)
    assert code == 2 and "--corpus" in err
    code, _, err = _run(["eval", "run", "--task", "hotpotqa", "--data", str(data), "--engine", "cot", "--set", "bogus=1",
                         "--backend", "fake://", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "unknown setting 'bogus' for DirectConfig" in err and err.count("\n") == 1
    for old, new in ((["--max-searches", "3"], "--set max_searches=VALUE"), (["--top-k", "3"], "--set k=VALUE"),
                     (["--max-tokens", "9"], "--set sampling.max_tokens=VALUE"), (["--opt", "a=1"], "--set KEY=VALUE")):
        code, _, err = _run(["eval", "run", "--task", "hotpotqa", "--data", str(data), *old], capsys)
        assert code == 2 and f"{old[0]} was removed" in err and new in err, err
    puzzles = tmp_path / "g24.csv"
    puzzles.write_text("Rank,Puzzles\n1,4 6 1 1\n")
    code, _, err = _run(["eval", "run", "--task", "game24", "--data", str(puzzles), "--engine", "lats", "--set",
                         "n_childs=2", "--backend", "fake://", "--out", str(tmp_path / "o2")], capsys)
    assert code == 2 and "n_childs" in err and err.count("\n") == 1


def test_killed_process_resumes_without_duplicates(tmp_path, data):
    """A real `agentic eval run` process killed mid-run, then rerun: every item once, same answers."""
    out = tmp_path / "k"
    cmd = [sys.executable, "-m", "agentic_infer", "eval", "run", "--task", "hotpotqa", "--data", str(data),
           "--backend", "fake://?reply=%5Cboxed%7BRush%7D&token_delay_s=0.03", "--out", str(out), "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    results = out / "results.jsonl"
    while time.time() < deadline and not (results.exists() and results.read_text().count("\n") >= 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_before = results.read_text().count("\n")
    assert 2 <= n_before < 6
    subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True, timeout=120)
    rows = [json.loads(x) for x in results.read_text().splitlines() if x.strip()]
    assert sorted(r["id"] for r in rows) == [f"q{i}" for i in range(6)]
    assert all(r["prediction"] == "Rush" for r in rows)
    rollouts = [json.loads(x) for x in (out / "rollouts.jsonl").read_text().splitlines()]  # the records: once each
    assert sorted(r["example_id"] for r in rollouts) == [f"q{i}" for i in range(6)]
    trajectories = [t["id"] for r in rollouts for t in r["trajectories"]]
    assert sorted(trajectories) == sorted(i for r in rows for i in r["trajectory_ids"]) and len(set(trajectories)) == 6


def test_judge_check_prints_the_agreement_table(data, tmp_path, capsys):
    out = tmp_path / "agreement.json"
    hotpot = [{**r, "answer": f"band {i}"} for i, r in enumerate(HOTPOT)]
    data.write_text("\n".join(json.dumps(r) for r in hotpot), encoding="utf-8")
    code, text, err = _run(["eval", "judge-check", "--task", "hotpotqa", "--data", str(data), "--judge",
                            "fake://?reply=Yes", "--judge-verdict", "yes-no", "--pairs", "6", "--out", str(out)], capsys)
    assert code == 0, err
    assert "judge agreement on 6 labelled hotpotqa pairs" in text
    reports = json.loads(out.read_text())
    assert set(reports) == {"fake://?reply=Yes (yes-no)", "exact_match (rule)", "cover_em (rule)"}
    [llm_judge] = [r for name, r in reports.items() if name.startswith("fake://")]
    assert llm_judge["tpr"] == 1.0 and llm_judge["tnr"] == 0.0 and len(llm_judge["verdicts"]) == 6
