"""SokobanEnv: seeded generation, BFS solver, RAGEN's rewards, step limit, refusals, snapshots, registry."""

from __future__ import annotations

import pytest

from agentic_infer.envs.games.sokoban import SokobanEnv, parse_answer
from agentic_infer.envs.registry import get_env_spec, make_env
from agentic_infer.errors import ConfigError

LINE = ["######",
        "#PX_O#",
        "######"]  # push the box right twice: the second push lands it on the target


def act(env, action):
    return env.call_record("act", {"action": action})


def test_same_seed_same_board_and_seeds_differ():
    assert SokobanEnv({"seed": 7}).state() == SokobanEnv({"seed": 7}).state()
    grids = {SokobanEnv({"seed": s}).state()["grid"] for s in range(10)}
    assert len(grids) > 5


def test_seeds_0_to_199_are_solvable_and_the_solution_wins_through_call():
    for seed in range(200):
        env = SokobanEnv({"seed": seed})
        actions = env.solve()
        assert actions, seed  # never generated already solved
        for a in actions:
            assert not act(env, a).error
        verdict = env.verify("")
        assert verdict.success and verdict.reward == 1.0, (seed, env.state())
        assert env.done


def test_larger_room_with_two_boxes_is_solvable():
    env = SokobanEnv({"seed": 11, "dim_x": 8, "dim_y": 8, "num_boxes": 2})
    assert env.state()["grid"].count("X") + env.state()["grid"].count("√") == 2
    for a in env.solve():
        act(env, a)
    assert env.verify("").success


def test_rendering_of_seed_3_is_pinned():
    # golden grid of seed 3 (a regression pin of the generator; symbols as RAGEN's grid_lookup)
    expected = "######\n######\n#_#_##\n#__XO#\n#___P#\n######"
    env = make_env("sokoban", {"seed": 3})
    assert env.state()["grid"] == expected
    assert env.first_observation().endswith(expected)
    assert "push all boxes to targets" in env.first_observation()


def test_hand_board_renders_back_with_player_and_box_on_target_symbols():
    board = ["#####", "#S√_#", "#_X_#", "#___#", "#####"]
    assert SokobanEnv({"board": board}).state()["grid"] == "\n".join(board)


def test_rewards_per_step_on_a_hand_board():
    env = SokobanEnv({"board": LINE})
    assert env.solve() == ["Right", "Right"]
    first = act(env, "Right")  # box to (1,3): just the step penalty
    assert first.reward == pytest.approx(-0.1) and first.output == "######\n#_PXO#\n######"
    assert not env.done
    second = act(env, "Right")  # box onto the target, all boxes placed: -0.1 + 1 + 10
    assert second.reward == pytest.approx(10.9) and second.output == "######\n#__P√#\n######"
    assert env.done and second.info["success"]
    verdict = env.verify("")
    assert verdict.success and verdict.info["return"] == pytest.approx(10.8)
    assert act(env, "Left").output.startswith("Error:")  # over: no more moves


def test_box_off_target_and_blocked_moves():
    env = SokobanEnv({"board": ["######", "#P√_O#", "#__X_#", "######"]})
    bump = act(env, "Up")  # into the wall: a step that changes nothing but costs 0.1 (gym-sokoban)
    assert bump.reward == pytest.approx(-0.1) and not bump.info["action_is_effective"]
    assert env.state()["steps"] == 1 and env.state()["player"] == [1, 1]
    assert act(env, "Right").reward == pytest.approx(-1.1)  # the box leaves its target
    assert act(env, "Right").reward == pytest.approx(0.9)  # ... and lands on the other one
    blocked = act(env, "Down")  # the box below cannot go into the wall
    assert blocked.reward == pytest.approx(-0.1) and env.state()["boxes"] == [[1, 4], [2, 3]]


def test_invalid_action_is_refused_and_changes_nothing():
    env = SokobanEnv({"seed": 5})
    before = env.state()
    for args in ({"action": "Jump"}, {}, {"action": 3}):
        assert env.call("act", args).startswith("Error:")
    assert env.state() == before
    assert act(env, "up").error is False  # names are case-insensitive, as RAGEN's parser lower-cases


def test_step_limit_ends_the_episode_unsolved():
    env = SokobanEnv({"board": LINE, "max_steps": 3})
    for _ in range(3):
        act(env, "Left")
    assert env.done
    assert act(env, "Right").output.startswith("Error:") and env.state()["steps"] == 3
    verdict = env.verify("")
    assert verdict.reward == 0.0 and "solved" in verdict.failed
    assert verdict.info["return"] == pytest.approx(-0.3)


def test_snapshot_restore():
    env = SokobanEnv({"seed": 9})
    snap, state = env.snapshot(), env.state()
    for a in env.solve():
        act(env, a)
    assert env.done and env.state() != state
    env.restore(snap)
    assert env.state() == state and not env.done and env.calls == []
    for a in env.solve():
        act(env, a)
    assert env.verify("").success


def test_equal_boards_give_equal_anchors():
    env = SokobanEnv({"board": ["#######", "#_P_XO#", "#######"]})
    start = env.digest()
    act(env, "Left")
    act(env, "Right")
    assert env.digest() == start and env.state()["steps"] == 2


def test_parse_answer_reads_ragens_format():
    assert parse_answer("<think>x</think><answer>Right || right ||Up</answer>") == ["Right", "Right", "Up"]
    assert parse_answer("Left || Down") == ["Left", "Down"]


def test_registry_and_bad_rows():
    spec = get_env_spec("sokoban")
    assert spec.eval_task is True and spec.tools == ("act",)
    assert make_env("sokoban", {"seed": 3}).tool_names() == ["act"]
    for row in ({}, {"seed": "3"}, {"seed": 1, "num_boxes": 0}, {"seed": 1, "colour": 2}, {"board": ["#P#"]}):
        with pytest.raises(ConfigError):
            SokobanEnv(row)


def test_a_box_cannot_push_another_box():
    env = SokobanEnv({"board": ["#######", "#PXX_O#", "#__O__#", "#######"]})
    record = act(env, "Right")
    assert record.reward == pytest.approx(-0.1) and not record.info["action_is_effective"]
    assert env.state()["player"] == [1, 1] and env.state()["boxes"] == [[1, 2], [1, 3]]


def test_solver_finds_the_hand_computed_shortest_path():
    # the box must go down one cell: step right above it, then push down (2 moves; no other 2-move win)
    env = SokobanEnv({"board": ["######", "#P___#", "#_X__#", "#_O__#", "######"]})
    assert env.solve() == ["Right", "Down"]
