"""`agentic run lats`, `agentic run rap` and `agentic tree view` end to end (FakeLLM policies)."""

import json
import re
import sys
from pathlib import Path

import pytest

import agentic_infer.backends as backends
from agentic_infer.cli import main
from agentic_infer.testing import FakeLLM
from agentic_infer.verify import check_24

sys.path.insert(0, str(Path(__file__).parents[1] / "engines" / "tree"))
from tree_fakes import Game24Policy, Game24RAPPolicy  # noqa: E402


def run(capsys, *args):
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


@pytest.fixture
def policy_backend(monkeypatch):
    def use(policy):
        monkeypatch.setattr(backends, "load_llm", lambda uri: FakeLLM(policy))
    return use


def test_run_lats_json_save_tree_and_view(capsys, tmp_path, policy_backend):
    policy_backend(Game24Policy())
    tree = tmp_path / "t.json"
    code, out, err = run(capsys, "run", "lats", "--env", "game24", "--input", "1 1 4 6", "--set", "iterations=12",
                         "--set", "n_children=3", "--save-tree", str(tree), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["engine"] == "lats" and res["feedback"] == "judge" and res["correct"] is True
    assert check_24(res["answer"], "1 1 4 6")
    assert res["budget"]["spent"]["llm_calls"] > 0 and res["tree_file"] == str(tree)
    html = tmp_path / "t.html"
    code, out, _ = run(capsys, "tree", "view", str(tree), "--out", str(html))
    assert code == 0 and "judge feedback" in out
    page = html.read_text()
    assert "<details" in page and "judge feedback" in page and "1 1 4 6" in page
    assert not re.search(r"(src|href)=['\"]?https?://", page)  # self-contained


def test_run_lats_human_output_oracle(capsys, policy_backend):
    policy_backend(Game24Policy())
    code, out, _ = run(capsys, "run", "lats", "--env", "game24", "--input", "1 1 4 6", "--set", "iterations=30",
                       "--set", "n_children=3", "--set", "feedback=oracle")
    assert code == 0 and "(oracle feedback)" in out and "correct=True" in out


def test_run_rap_game24(capsys, tmp_path, policy_backend):
    policy_backend(Game24RAPPolicy())
    code, out, err = run(capsys, "run", "rap", "--task", "game24", "--input", "1 1 4 6", "--set", "iterations=10",
                         "--set", "n_actions=3", "--json", "--save-tree", str(tmp_path / "r.json"))
    assert code == 0, err
    res = json.loads(out)
    assert res["engine"] == "rap" and res["correct"] is True and res["aggregation"]["voters"] >= 1


@pytest.mark.parametrize("args, message", [
    (["run", "lats", "--env", "nope", "--input", "x"], "--env 'nope'"),
    (["run", "lats", "--env", "game24", "--input", "a b"], "expected numbers"),
    (["run", "lats", "--env", "program", "--input", "write f"], "--test"),
    (["run", "lats", "--env", "game24", "--input", "1 2 3 4", "--set", "feedback=gold"], "feedback"),
    (["run", "rap", "--task", "blocksworld", "--input", "the a block is on the table"], "--goal"),
    (["run", "rap", "--task", "chess", "--input", "x"], "--task 'chess'"),
    (["tree", "view", "/nonexistent/t.json"], "no such file"),
])
def test_errors_are_one_line_exit_2(capsys, args, message, policy_backend):
    policy_backend(Game24Policy())
    code, _, err = run(capsys, *args)
    assert code == 2 and message in err and err.count("\n") == 1
