"""`agentic run deepconf` end to end over the fake backend: --question, --input JSONL, --json, --out (Rollout
lines, resumable), errors."""

import json

import pytest

from agentic_infer.cli import main
from agentic_infer.types import Rollout

FAKE = "fake://?reply=%5Cboxed%7B42%7D"  # every trace answers \boxed{42}


def run(capsys, *args):
    with pytest.raises(SystemExit) as e:
        main(["run", "deepconf", "--backend", FAKE, *args])
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_question_json_and_rollouts(capsys, tmp_path):
    rollouts = tmp_path / "rollouts.jsonl"
    args = ("--question", "What is 6*7?", "--set", "budget=4", "--set", "warmup=2", "--json", "--out", str(rollouts))
    code, out, _ = run(capsys, *args)
    assert code == 0
    rep = json.loads(out)
    assert rep["answer"] == "42" and rep["mode"] == "online" and rep["stop_reason"] == "consensus"
    assert rep["traces_total"] == 2 and rep["threshold"] is not None and rep["question"] == "What is 6*7?"
    [rollout] = [Rollout.from_json(line) for line in rollouts.read_text().splitlines()]
    assert rollout.answer == "42" and rollout.metadata["deepconf"]["traces_total"] == 2
    trajs = rollout.trajectories
    assert len(trajs) == 2 and all(t.answer == "42" and t.engine == "deepconf" for t in trajs)
    code, again, _ = run(capsys, *args)  # a rerun finds the question done and writes nothing new
    assert code == 0 and json.loads(again)["id"] == rep["id"]
    assert len(rollouts.read_text().splitlines()) == 1


def test_input_file_offline_table(capsys, tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text('{"question": "a?"}\n\n{"problem": "b?", "answer": "42"}\n')
    code, out, _ = run(capsys, "--input", str(f), "--set", "mode=offline", "--set", "budget=3")
    assert code == 0 and out.count("vote top10_bottom10") == 2 and "42" in out


@pytest.mark.parametrize("args, message", [
    ([], "exactly one of --question"),
    (["--question", "q", "--set", "variant=90"], "variant=90"),
    (["--question", "q", "--set", "budget=4"], "warmup=16 exceeds budget=4"),
    (["--question", "q", "--set", "max_tokens=64"], "'max_tokens' is renamed 'sampling.max_tokens'"),
    (["--input", "/nonexistent.jsonl"], "no such file"),
])
def test_errors_are_one_line(capsys, args, message):
    code, _, err = run(capsys, *args)
    assert code == 2 and message in err and err.count("\n") == 1
