"""Format rewards per dialect, ToolRL matching, ToRL, OTC, ARTIST, and the schedules: hand-computed."""

import math

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.types import Step, Trajectory, Usage
from train.rewards import (
    RewardInput,
    artist_format,
    artist_tool_success,
    atom_searcher_reward,
    atomic_thoughts,
    dialect_format,
    otc_ppo_reward,
    otc_productivity,
    otc_reward,
    parse_tool_calls,
    planner_r1_reward,
    process_weight,
    r1_searcher_format,
    r1_searcher_reward,
    r1_searcher_stage,
    tag_sequence,
    toolrl_correctness,
    toolrl_format,
    toolrl_reward,
    torl_reward,
)

R1 = ("<think>look it up</think><|begin_of_query|>capital of France<|end_of_query|>\n<|begin_of_documents|>\n"
      "Paris is the capital.\n<|end_of_documents|>\n<think>so</think><answer>Paris</answer>")


def test_tag_sequence():
    tags = {"a": ("<a>", "</a>"), "b": ("<b>", "</b>")}
    assert tag_sequence("x<a>1</a> y <b>2</b><a></a>", tags) == ["a", "b", "a"]
    assert tag_sequence("<a><b></b></a>", tags) is None      # nested
    assert tag_sequence("<a>1", tags) is None                # unclosed
    assert tag_sequence("</a>", tags) is None                # unopened


def test_r1_searcher_and_dialect_format():
    assert r1_searcher_format(RewardInput(R1)) == 1.0
    assert r1_searcher_format(RewardInput(R1.replace("<think>look it up</think>", "").replace("<think>so</think>", ""))) == 0.0
    assert r1_searcher_format(RewardInput(R1 + " trailing")) == 0.0
    assert r1_searcher_format(RewardInput(R1.replace("<|end_of_query|>", ""))) == 0.0
    assert r1_searcher_format(RewardInput(R1 + "<answer>Rome</answer>")) == 0.0
    tir = "let me compute\n```python\nprint(2+2)\n```\n```output\n4\n```\nso \\boxed{4}"
    assert dialect_format(RewardInput(tir), dialect="tir") == 1.0
    assert dialect_format(RewardInput(tir.replace("\\boxed{4}", "4")), dialect="tir") == 0.0


def test_toolrl_format():
    assert toolrl_format(RewardInput("<think>t</think>\n<tool_call>\n{}\n</tool_call>")) == 1.0
    assert toolrl_format(RewardInput("<think>t</think><tool_call>{}</tool_call><response>r</response>")) == 1.0
    assert toolrl_format(RewardInput("<think>t</think><response>r</response>")) == 1.0
    assert toolrl_format(RewardInput("<think>t</think>")) == 0.0
    assert toolrl_format(RewardInput("<tool_call>{}</tool_call><think>t</think>")) == 0.0


def test_artist_order():
    ok = "<think>a</think><python>x=1</python>\n<output>\n1\n</output>\n<think>b</think><answer>1</answer>"
    assert artist_format(RewardInput(ok)) == 1.0
    assert artist_format(RewardInput("<python>x</python><answer>1</answer>")) == 0.0  # tool without output
    assert artist_format(RewardInput("<answer>1</answer><think>late</think>")) == 0.0


def test_toolrl_correctness_hand_computed():
    gold = [("search", {"q": "paris", "k": 3}), ("lookup", {"id": 1})]
    assert toolrl_correctness(gold, gold) == pytest.approx(3.0)
    # S_max = 1 + 2 + 3 = 6. Predicted: search with q right, k wrong, extra key; no lookup.
    pred = [("search", {"q": "paris", "k": 5, "lang": "en"})]
    # r_name = 1/2; r_param = |{q,k}| / |{q,k,lang}| = 2/3; r_value = 1  -> 6·(13/6)/6 − 3
    assert toolrl_correctness(pred, gold) == pytest.approx(6 * (0.5 + 2 / 3 + 1) / 6 - 3)
    assert toolrl_correctness([], gold) == pytest.approx(-3.0)
    assert toolrl_correctness([], []) == 3.0 and toolrl_correctness(None, gold) == -3.0
    # the matching is one to one and best: order does not matter
    assert toolrl_correctness(list(reversed(gold)), gold) == pytest.approx(3.0)
    # greedy would give g1 the richer call (1.5 + 0.5); the best matching scores 1 + 3 -> 6·(1 + 4)/6 − 3
    g = [("f", {"a": 1}), ("f", {"a": 1, "b": 2})]
    assert toolrl_correctness([("f", {"a": 1, "b": 2}), ("f", {"a": 9})], g) == pytest.approx(2.0)


def test_toolrl_reward_parses_calls():
    text = '<think>t</think>\n<tool_call>\n{"name": "search", "parameters": {"q": "paris"}}\n</tool_call>'
    assert parse_tool_calls(text) == [("search", {"q": "paris"})]
    assert toolrl_reward(RewardInput(text, gold='[{"name": "search", "arguments": {"q": "paris"}}]')) == 4.0
    assert parse_tool_calls("<tool_call>{oops</tool_call>") is None
    assert toolrl_reward(RewardInput("<think>t</think><tool_call>{oops</tool_call>", gold=[])) == 1.0 - 3.0


def _traj(errors, answer=None):
    """A trajectory with one tool step per entry of `errors`; `answer` is what its engine extracted."""
    return Trajectory(steps=[Step("python", error=e) for e in errors], answer=answer)


def test_torl_reward():
    assert torl_reward(RewardInput(r"\boxed{4}", gold="4", trajectory=_traj([None], "4"))) == 1.0
    assert torl_reward(RewardInput(r"\boxed{5}", gold="4", trajectory=_traj([None], "5"))) == -1.0
    assert torl_reward(RewardInput(r"\boxed{4}", gold="4", trajectory=_traj(["NameError"], "4"))) == 0.5
    assert torl_reward(RewardInput(r"\boxed{5}", gold="4", trajectory=_traj(["x"], "5")), exec_penalty=None) == -1.0
    assert torl_reward(RewardInput(r"\boxed{4}", gold="4")) == 1.0  # no trajectory: the text's boxed answer


def test_otc_and_artist():
    assert otc_productivity(1.0, 4) == 0.25 and otc_productivity(1.0, 0) == 1.0 and otc_productivity(0.0, 2) == 0
    assert otc_ppo_reward(True, 0, c=4) == 1.0
    assert otc_ppo_reward(True, 2, c=4) == pytest.approx(math.cos(2 * math.pi / 8))
    assert otc_ppo_reward(False, 0, c=4) == 0.0
    assert otc_reward(RewardInput("<answer>a</answer>", gold="a", trajectory=_traj([None, None], "a")), c=4) == \
        pytest.approx(math.cos(2 * math.pi / 8))
    assert artist_tool_success(_traj([None, "boom", None, None])) == 0.75
    assert artist_tool_success(Trajectory(usage=Usage(tool_calls=4, tool_errors=1))) == 0.75
    assert artist_tool_success(Trajectory()) == 0.0


def test_r1_searcher_two_stages():
    assert r1_searcher_stage(0, 100) == 1 and r1_searcher_stage(100, 100) == 2
    assert r1_searcher_reward(RewardInput(R1, gold="Paris"), stage=1) == 1.0
    assert r1_searcher_reward(RewardInput("<think>a</think><answer>Paris</answer>", gold="Paris"), stage=1) == 0.5
    assert r1_searcher_reward(RewardInput(R1, gold="Paris"), stage=2) == 1.0
    assert r1_searcher_reward(RewardInput("<answer>Paris</answer> x", gold="Paris"), stage=2) == -2.0 + 1.0  # badly formed, right answer


def test_atom_searcher_schedule():
    assert process_weight(0, 100) == 0.5 and process_weight(50, 100) == 0.25 and process_weight(200, 100) == 0.0
    assert process_weight(50, 100, decay="cosine") == pytest.approx(0.25)
    assert process_weight(25, 100, decay="cosine") == pytest.approx(0.25 * (1 + math.cos(math.pi / 4)))
    assert atom_searcher_reward(1.0, 0.0, step=0, total_steps=100) == 0.5
    assert atom_searcher_reward(1.0, 0.0, step=100, total_steps=100) == 1.0
    assert [(a.tag, a.text) for a in atomic_thoughts("<plan>p</plan> x <VERIFICATION> v </VERIFICATION>")] == [
        ("PLAN", "p"), ("VERIFICATION", "v")]


def test_planner_r1_is_a_weighted_sum_per_stage():
    from train.rewards.schedules import RewardTerms

    perfect = RewardTerms(schema=1.0, cs_micro=1.0, hard_micro=1.0, cs_macro=1.0, hard_macro=1.0, pass_=1.0)
    assert [planner_r1_reward(perfect, stage=s) for s in (1, 2, 3)] == [6.0, 3.0, 1.0]
    # 7 of 8 commonsense and 1 of 2 hard passed: 1 + 0.875 + 0.5 (no macro term, no pass) in stage 1, 0 after
    partial = RewardTerms(schema=1.0, cs_micro=0.875, hard_micro=0.5, cs_macro=0.0, hard_macro=0.0, pass_=0.0)
    assert planner_r1_reward(partial, stage=1) == 2.375
    assert planner_r1_reward(partial, stage=2) == 0.0 and planner_r1_reward(partial, stage=3) == 0.0
    # a sum, not a chain: a failed schema term hides nothing (the old chained reward gave 0 here)
    no_schema = RewardTerms(schema=0.0, cs_micro=1.0, hard_micro=1.0, cs_macro=1.0, hard_macro=1.0, pass_=0.0)
    assert planner_r1_reward(no_schema, stage=1) == 4.0 and planner_r1_reward(no_schema, stage=2) == 2.0
    assert planner_r1_reward(partial, stage=1, weights={"cs_micro": 2.0, "hard_micro": 4.0}) == 2 * 0.875 + 4 * 0.5
    with pytest.raises(ConfigError):
        planner_r1_reward(perfect, stage=4)
