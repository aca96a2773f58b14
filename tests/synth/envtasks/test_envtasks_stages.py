"""AgentScaler's two stages as data: BFCL's gold calls in the env dialect (stage 1), then the domain (stage 2)."""

from __future__ import annotations

import asyncio

import pytest

from agentic_infer.errors import ConfigError
from synth.envtasks.demos import play_script, tool_call_text
from synth.envtasks.stages import NO_FIT, bfcl_rows, stage1_demos, stage1_script, stage2_demos, write_stages
from tests.conftest import shared_data


@pytest.fixture(scope="module")
def stage1(vocab):
    shared_data("tools/bfcl/BFCL_v4_simple_python.json")
    return stage1_demos(vocab, limit=3)


def test_stage1_gold_calls_verify_through_the_bfcl_env(stage1):
    assert stage1.stats["tried"] == 12 and stage1.stats["kept"] == 12
    assert "evaluation items" in stage1.stats["bfcl_eval_items"]
    by_id = {t.group_id: t for t in stage1.trajectories}
    assert all(t.metadata["bfcl_eval_item"] and t.rewards["env_reward"] == 1.0 and t.token_exact
               for t in by_id.values())
    # simple_python_0 by hand: calculate_triangle_area(base=10, height=5); "unit" is optional (allowed "")
    [step] = by_id["simple_python_0"].steps
    assert (step.action, step.arguments) == ("calculate_triangle_area", {"base": 10, "height": 5, "unit": "units"})
    # parallel_0: two spotify.play calls, one per turn, named as the env's tools spell them
    assert [(s.action, s.arguments) for s in by_id["parallel_0"].steps] == [
        ("spotify_play", {"artist": "Taylor Swift", "duration": 20}),
        ("spotify_play", {"artist": "Maroon 5", "duration": 15})]
    irrelevant = by_id["irrelevance_0"]
    assert irrelevant.steps == [] and irrelevant.answer == NO_FIT


def test_stage1_a_wrong_call_is_rejected(vocab):
    [row] = bfcl_rows([shared_data("tools/bfcl/BFCL_v4_simple_python.json")], limit=1)
    turns = stage1_script(row)
    wrong = [tool_call_text("calculate_triangle_area", {"base": 11, "height": 5})] + turns[1:]
    traj, reason = asyncio.run(play_script(row, wrong, vocab, env="bfcl", calls=1))
    assert reason == "reward_0:ast" and traj.rewards["env_reward"] == 0.0


def test_stage2_takes_train_tasks_and_refuses_dev(vocab, tmp_path, stage1):
    with pytest.raises(ConfigError, match="never training data"):
        stage2_demos(vocab, train_file=shared_data("tools/tau_retail_db/retail_tasks_dev.jsonl"))
    s2 = stage2_demos(vocab, train_file=shared_data("tools/tau_retail_db/retail_tasks_train.jsonl"), limit=1)
    assert s2.stats["kept"] == 1 and s2.trajectories[0].metadata["demo"]["stage"] == 2
    stats = write_stages(tmp_path, stage1, s2)
    assert (tmp_path / "stage1" / "trajectories.jsonl").is_file() and stats["stage2"]["kept"] == 1
