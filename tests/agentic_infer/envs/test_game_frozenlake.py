"""FrozenLake env: RAGEN's seeded generation, rendering, rewards, step limit, refusals, solver, snapshots."""

from __future__ import annotations

import pytest

from agentic_infer.envs.games.frozenlake import ACTIONS, FrozenLakeEnv
from agentic_infer.envs.registry import get_env_spec, make_env
from agentic_infer.errors import ConfigError

# S F H      start (0,0); a hole at (0,2); the goal at (1,2)
# F F G
TINY = {"desc": ["SFH", "FFG"]}


def test_seed_3_grid_matches_hand_written():
    # RAGEN's generate_random_map(size=4, p=0.8, seed=3), re-derived independently from its utils.py with numpy's
    # PCG64(SeedSequence(3)) (gymnasium's seeding): FFHF / FFGF / FFFF / FSFH, start (3,1) drawn as P.
    env = make_env("frozenlake", {"seed": 3})
    assert env.render() == "__O_\n__G_\n____\n_P_O"
    assert env.state() == {"grid": "__O_\n__G_\n____\n_P_O", "row": 3, "col": 1, "steps": 0}
    assert env.first_observation().endswith("__O_\n__G_\n____\n_P_O")
    assert env.tool_names() == ["act"]
    assert "act" in env.instructions() and "10" in env.instructions()
    assert get_env_spec("frozenlake").eval_task is True
    # the goal is 3 cells away (Manhattan |3-1| + |1-2|) and no hole blocks it: the optimum is 3 moves
    assert len(env.solve()) == 3


def test_determinism_per_seed():
    for seed in (0, 7, 42):
        a, b = FrozenLakeEnv({"seed": seed}), FrozenLakeEnv({"seed": seed})
        assert a.desc == b.desc and a.state() == b.state()
    assert len({tuple(FrozenLakeEnv({"seed": s}).desc) for s in range(10)}) > 1


def test_seeds_0_to_199_solvable_and_solver_wins():
    for seed in range(200):
        env = FrozenLakeEnv({"seed": seed})
        (r, c), = [(r, row.index("G")) for r, row in enumerate(env.desc) if "G" in row]
        actions = env.solve()
        assert len(actions) >= abs(r - env.row) + abs(c - env.col), seed  # never shorter than Manhattan
        for action in actions:
            assert not env.call_record("act", {"action": action}).error
        verdict = env.verify("")
        assert verdict.success and verdict.reward == 1.0, (seed, verdict.failed)
        assert verdict.info["return"] == 1.0 and env.done and env.render().count("√") == 1


def test_rewards_per_step_on_tiny_board():
    env = FrozenLakeEnv(TINY)
    assert env.render() == "P_O\n__G"
    rec = env.call_record("act", {"action": "Left"})  # into the wall: no move, no reward
    assert (rec.output, rec.reward, rec.info["action_is_effective"], env.done) == ("P_O\n__G", 0.0, False, False)
    rec = env.call_record("act", {"action": "down"})  # case-insensitive, as RAGEN's es_manager matches
    assert (rec.output, rec.reward) == ("__O\nP_G", 0.0)
    rec = env.call_record("act", {"action": "Right"})
    assert (rec.output, rec.reward, env.done) == ("__O\n_PG", 0.0, False)
    rec = env.call_record("act", {"action": "Right"})
    assert (rec.output, rec.reward, env.done, rec.info["success"]) == ("__O\n__√", 1.0, True, True)
    verdict = env.verify("")
    assert verdict.success and verdict.info == {"return": 1.0, "steps": 4, "optimal_steps": 3}
    assert env.call("act", {"action": "Up"}).startswith("Error: the episode is over")


def test_hole_ends_the_episode_without_reward():
    env = FrozenLakeEnv(TINY)
    env.call("act", {"action": "Right"})
    rec = env.call_record("act", {"action": "Right"})
    assert (rec.output, rec.reward, env.done) == ("__X\n__G", 0.0, True)
    verdict = env.verify("")
    assert not verdict.success and verdict.reward == 0.0 and "solved" in verdict.failed
    assert verdict.info["return"] == 0.0


def test_invalid_action_is_refused_and_state_unchanged():
    env = FrozenLakeEnv({"seed": 3})
    before, digest = env.state(), env.digest()
    for bad in ({"action": "Jump"}, {"action": 1}, {}):
        out = env.call("act", bad)
        assert out.startswith("Error: action must be one of Left, Down, Right, Up"), out
    assert env.state() == before and env.digest() == digest and not env.done
    assert env.call("move", {"action": "Left"}).startswith("Error: unknown tool")


def test_step_limit_ends_the_episode():
    env = FrozenLakeEnv({**TINY, "max_actions_per_traj": 2})
    env.call("act", {"action": "Up"})
    assert not env.done
    env.call("act", {"action": "Left"})
    assert env.done and env.state()["steps"] == 2
    assert env.call("act", {"action": "Down"}).startswith("Error: the episode is over")
    verdict = env.verify("")
    assert not verdict.success and verdict.passed == ["within step limit"] and verdict.reward == 0.0
    # the default step limit is RAGEN's FrozenLake max_actions_per_traj: 10
    env = FrozenLakeEnv(TINY)
    for _ in range(9):
        env.call("act", {"action": "Up"})
    assert not env.done
    env.call("act", {"action": "Up"})
    assert env.done


def test_snapshot_restore():
    env = FrozenLakeEnv({"seed": 3})
    snap = env.snapshot()
    first = env.call("act", {"action": "Right"})
    env.call("act", {"action": "Up"})
    env.restore(snap)
    assert env.state() == FrozenLakeEnv({"seed": 3}).state() and env.calls == [] and not env.done
    assert env.call("act", {"action": "Right"}) == first
    mid = env.snapshot()
    env.call("act", {"action": "Up"})
    env.call("act", {"action": "Up"})
    assert env.done
    env.restore(mid)
    assert not env.done and env.state()["steps"] == 1 and len(env.calls) == 1


def test_slippery_moves_replay_after_restore():
    env = FrozenLakeEnv({"seed": 5, "is_slippery": True})
    snap = env.snapshot()
    outs = [env.call_record("act", {"action": a}).info.get("moved") for a in ("Up", "Left", "Down")]
    env.restore(snap)
    assert [env.call_record("act", {"action": a}).info.get("moved") for a in ("Up", "Left", "Down")] == outs


def test_canonical_state_ignores_step_count():
    # seed 3 starts on the bottom row: Down does not move, so board and position equal a fresh episode's
    env = FrozenLakeEnv({"seed": 3})
    env.call("act", {"action": "Down"})
    assert env.state()["steps"] == 1
    assert env.digest() == FrozenLakeEnv({"seed": 3}).digest()


def test_described_view_names_the_goal_offset_and_each_move_in_action_words():
    # seed 3 (grid above): P at (3,1), G at (1,2), a hole at (3,3); Down from the bottom row is the edge
    env = make_env("frozenlake", {"seed": 3, "view": "described"})
    line = "Goal: 2 Up, 1 Right. Left: ice, Down: edge, Right: ice, Up: ice."
    assert env.first_observation().endswith("__O_\n__G_\n____\n_P_O\n" + line)
    assert env.call("act", {"action": "Right"}) == ("__O_\n__G_\n____\n__PO\n"
                                                          "Goal: 2 Up. Left: ice, Down: edge, Right: hole, Up: ice.")
    assert env.call("act", {"action": "Up"}).endswith("Goal: 1 Up. Left: ice, Down: ice, Right: ice, Up: goal.")
    assert env.state()["grid"] == "__O_\n__G_\n__P_\n___O"  # the state (and GiGPO's anchor) is the grid alone
    grid = make_env("frozenlake", {"seed": 3})
    assert grid.first_observation().endswith("_P_O")  # RAGEN's view stays the default
    for action in ("Right", "Up"):
        grid.call("act", {"action": action})
    assert grid.digest() == env.digest()  # equal boards at equal positions anchor together in either view
    tiny = FrozenLakeEnv({**TINY, "view": "described"})  # S at (0,0), G at (1,2), H at (0,2)
    assert tiny.describe() == "Goal: 1 Down, 2 Right. Left: edge, Down: ice, Right: ice, Up: edge."
    tiny.call("act", {"action": "Right"})
    assert tiny.describe() == "Goal: 1 Down, 1 Right. Left: ice, Down: ice, Right: hole, Up: edge."


def test_bad_config_is_a_config_error():
    for row in ({}, {"seed": -1}, {"seed": 1, "p": 0}, {"seed": 1, "size": 1}, {"desc": ["FFG"]},
                {"seed": 1, "view": "pixels"}):
        with pytest.raises(ConfigError):
            FrozenLakeEnv(row)
    with pytest.raises(ConfigError):
        FrozenLakeEnv({"seed": 1}, colour="blue")
    assert len(ACTIONS) == 4
