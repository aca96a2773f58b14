"""The one Game-of-24 checker and its extraction, shared by the tree environment and the eval task."""

import pytest

from agentic_infer.engines.tree.game24 import Game24Env, solve
from agentic_infer.errors import ConfigError
from agentic_infer.verify import check_24, extract_24_expression


@pytest.mark.parametrize(("expr", "nums", "ok"), [
    ("(1+2+3)*4", "1 2 3 4", True), ("4*(3+2+1)", "1 2 3 4", True), ("8/(3-8/3)", "3 3 8 8", True),
    ("(1+1)*(8+4)", "1 1 8 4", True), ("(1 + 1) × (8 + 4) = 24", "1 1 8 4", True),
    ("(1+2+3)*4", "1 2 3 5", False), ("24", "1 2 3 4", False), ("1+2+3+4", "1 2 3 4", False),
    ("(1+1+4)*4", "1 1 4 6", False), ("4*6", "1 1 4 6", False),
    ("__import__('os')", "1 2 3 4", False), ("4/(1-1)*2*3", "1 1 2 3", False), (None, "1 2 3 4", False),
    ("", "1 2 3 4", False), ("(1+2+3)*", "1 2 3 4", False),
])
def test_check_24(expr, nums, ok):
    assert check_24(expr, nums) is ok


def test_check_24_other_targets_and_bad_puzzles():
    assert check_24("(1+2)*3", [1, 2, 3], target=9)
    assert not check_24("(1+2)*3", [1, 2, 3])
    with pytest.raises(ConfigError, match="puzzle 'a b'"):
        check_24("1+1", "a b")


def test_extract_24_expression():
    assert extract_24_expression("so \\boxed{(1 + 2 + 3) \\times 4 = 24}") == "(1 + 2 + 3) * 4"
    assert extract_24_expression("Try 1+2.\n(1 + 2 + 3) x 4 = 24\nDone") == "(1 + 2 + 3) * 4"
    assert extract_24_expression("no expression") is None and extract_24_expression(None) is None


async def test_the_tree_environment_and_the_eval_task_use_this_checker():
    from agentic_infer.tasks import game24 as task

    env = Game24Env("1 1 4 6")
    for actions, reward in ((("4 * 6", "1 * 1", "24 * 1"), 1.0), (("4 + 6", "1 + 1", "10 * 2"), 0.0)):
        state = env.init_state()
        for action in actions:
            state, _ = await env.step(state, action)
        assert await env.gold_reward(state) == reward == float(check_24(env.answer(state), "1 1 4 6"))
    assert check_24(solve("1 1 4 6"), "1 1 4 6")
    assert task.check_24 is check_24 and task.extract_24_expression is extract_24_expression
