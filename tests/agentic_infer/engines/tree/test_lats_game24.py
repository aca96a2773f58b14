from __future__ import annotations

import json

import pytest
from tree_fakes import Game24Policy, searched

from agentic_infer.engines.tree import LATS, Budget, Game24LATSEnv, LATSOptions, Tree, solve
from agentic_infer.engines.tree.game24 import Game24Env, solve_steps
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.verify import check_24


def test_solver_and_checker():
    assert check_24(solve("1 1 4 6"), "1 1 4 6")
    assert solve("1 1 1 1") is None
    assert not check_24("(1+1+4)*4", "1 1 4 6")
    assert not check_24("4*6", "1 1 4 6")  # must use every number
    assert check_24("(1+1)*(8+4)", "1 1 8 4") is True
    assert check_24("8/(3-8/3)", "3 3 8 8")
    assert len(solve_steps("4 9 10 13")) == 3


async def test_env_rejects_numbers_not_on_the_board():
    env = Game24Env("1 1 4 6")
    s, aux = await env.step(env.init_state(), "7 + 1 = 8")
    assert not aux["valid"] and env.is_terminal(s) and await env.gold_reward(s) == 0.0


def lats(llm, **options) -> LATS:
    return LATS(llm, lambda ex: Game24LATSEnv(ex["question"]), **options)


PUZZLE = {"question": "1 1 4 6"}


async def test_lats_finds_the_known_solution_judge_only(tmp_path):
    llm = FakeLLM(Game24Policy())
    res, tree = await searched(lats(llm, options=None, iterations=12, n_children=3, sampling={"seed": 0}), PUZZLE)
    tree.save(tmp_path / "t.json")
    assert res.metadata["tree"]["feedback"] == "judge" and res.engine == "lats"
    assert res.rewards["correct"] == 1.0, res.metadata
    assert check_24(res.answer, "1 1 4 6")
    d = json.loads((tmp_path / "t.json").read_text())
    assert d["feedback"] == "judge" and d["budget"]["spent"]["llm_calls"] > 0
    assert d["nodes"][0]["visits"] == d["budget"]["spent"]["iterations"]
    assert {"id", "parent", "action", "visits", "value", "reward"} <= set(d["nodes"][1])
    assert Tree.from_dict(d).to_dict() == d


async def test_expansion_is_one_generate_call_with_n():
    llm = FakeLLM(Game24Policy())
    calls = []
    orig = llm.generate

    async def spy(prompt, params):
        calls.append(params.n)
        return await orig(prompt, params)

    llm.generate = spy
    res = await lats(llm, iterations=1, n_children=4).run(PUZZLE)
    assert 4 in calls  # sibling expansion: one call, n=4
    assert res.metadata["tree"]["budget"]["calls_by_purpose"]["action"] == sum(1 for n in calls if n == 4)


async def test_reflection_is_reused_in_action_and_value_prompts():
    marker = "REFLECT-7f3: never multiply the ones first"
    policy = Game24Policy(reflection=marker)
    llm = FakeLLM(policy)
    # '1 1 1 1' is unsolvable: every terminal fails, so reflections are written
    res, tree = await searched(lats(llm, iterations=4, n_children=2), {"question": "1 1 1 1"})
    # the search ends on a scored terminal that the checker rejects (no expression makes 24 from 1 1 1 1)
    assert res.rewards == {"correct": 0.0}, (res.rewards, res.answer)
    assert not check_24(res.answer or "", "1 1 1 1"), res.answer
    assert marker in tree.reflections
    reflections = [t for t in res.trajectories[1:] if t.metadata["purpose"] == "reflection"]
    assert reflections and all(t.segments[1].text == marker for t in reflections)
    first = next(i for i, p in enumerate(llm.prompts) if "did not solve the task" in p)
    later = llm.prompts[first + 1:]
    assert any(marker in p and "Write only the next step" in p for p in later)
    assert any(marker in p and "Score: N" in p for p in later)
    assert not any(marker in p for p in llm.prompts[:first + 1])


async def test_oracle_flag_and_stop():
    res, tree = await searched(lats(FakeLLM(Game24Policy()), iterations=30, n_children=3, feedback="oracle"),
                               PUZZLE)
    info = res.metadata["tree"]
    assert info["feedback"] == "oracle" and tree.to_dict()["feedback"] == "oracle"
    assert res.rewards["correct"] == 1.0 and info["stop_reason"] == "solved (oracle feedback)"
    assert info["budget"]["spent"]["iterations"] < 30


async def test_llm_call_budget_stops_lats():
    res = await lats(FakeLLM(Game24Policy()), n_children=2, budget={"iterations": None, "llm_calls": 5}).run(
        {"question": "1 1 1 1"})
    assert res.metadata["tree"]["stop_reason"] == "budget llm_calls exhausted"
    assert res.metadata["tree"]["budget"]["spent"]["llm_calls"] == 5 == res.usage.llm_calls
    assert res.trajectories[0].finish_reason == "budget" and not res.trajectories[0].segments


def test_options_are_validated_with_clear_errors():
    with pytest.raises(ConfigError, match="n_children"):
        lats(FakeLLM(), n_children=0)
    with pytest.raises(ConfigError, match="unknown setting 'n_actions'"):
        lats(FakeLLM(), n_actions=3)
    with pytest.raises(ConfigError, match="lam"):
        lats(FakeLLM(), options=LATSOptions(), lam=2.0)
    assert lats(FakeLLM(), budget=Budget(tokens=10)).options.search_budget() == Budget(tokens=10)


async def test_value_mixes_lm_score_and_self_consistency():
    # three samples: two '4 * 6' (merged, votes=2), one '6 * 4' (same resulting state), one invalid twice
    replies = iter(["4 * 6 = 24", "4 * 6", "6 * 4", "hello", "hello there"])

    def policy(prompt):
        if "Score: N" in prompt:
            return "Score: 10"
        return next(replies)

    _, tree = await searched(lats(FakeLLM(policy), options=LATSOptions(lam=0.5), n_children=5, depth_limit=1,
                                  budget=Budget(iterations=1)), PUZZLE)
    kids = {n.action: n for n in tree.children(tree.root)}
    assert kids["4 * 6"].details["votes"] == 2
    ev = kids["4 * 6"].details["evaluation"]
    assert ev["lm"] == 1.0 and ev["sc"] == 3 / 5 and kids["4 * 6"].reward == 0.5 * 1.0 + 0.5 * 3 / 5
    assert kids["6 * 4"].details["evaluation"]["sc"] == 3 / 5
    bad = [n for a, n in kids.items() if a.startswith("hello")]
    assert bad and all(n.details["evaluation"]["sc"] == 0.0 and n.reward == 0.0 for n in bad)
