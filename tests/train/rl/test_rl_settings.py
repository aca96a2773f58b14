"""The RL recipe's settings, seed ranges and report pieces (no model: the quick run is test_rl_quick.py)."""

from __future__ import annotations

import pytest

from agentic_infer.errors import ConfigError
from train.rl import HELD_OUT_FROM, RLSettings


def test_held_out_seeds_are_refused_for_every_range():
    assert HELD_OUT_FROM == 900000
    RLSettings(val_seed_start=899968, val_size=32)  # ends at 899999: allowed
    for kw in ({"val_seed_start": 899969, "val_size": 32}, {"train_seed_start": 899000, "train_seeds": 1001},
               {"demo_seeds": 900001}):
        with pytest.raises(ConfigError, match="held out"):
            RLSettings(**kw)


def test_rows_carry_the_seed_and_the_board_settings():
    s = RLSettings(board={"size": 5})  # over the game's default board: FrozenLake's described view
    assert s.rows(7, 2) == [{"id": "frozenlake-7", "seed": 7, "view": "described", "size": 5},
                            {"id": "frozenlake-8", "seed": 8, "view": "described", "size": 5}]
    assert RLSettings(board={"view": "grid"}).rows(0, 1)[0]["view"] == "grid"  # RAGEN's view, asked for
    assert RLSettings(game="sokoban").rows(0, 1) == [{"id": "sokoban-0", "seed": 0}]


def test_bad_settings_name_the_value():
    with pytest.raises(ConfigError, match="game='chess'"):
        RLSettings(game="chess")
    with pytest.raises(ConfigError, match="estimators=\\['grpo', 'grpo'\\]"):
        RLSettings(estimators=("grpo", "grpo"))
    with pytest.raises(ConfigError, match="rl_generations=1"):
        RLSettings(rl_generations=1)


def test_rl_stages_share_their_settings_and_hash_after_sft():
    from train.rl.recipe import STAGE_KEYS
    from train.stages import stage_hashes

    stages = ["demos", "sft", "grpo", "gigpo", "report"]
    keys = {"demos": STAGE_KEYS["demos"], "sft": STAGE_KEYS["sft"], "grpo": STAGE_KEYS["rl"], "gigpo": STAGE_KEYS["rl"]}
    a = stage_hashes(RLSettings(), stages, keys)
    b = stage_hashes(RLSettings(rl_lr=RLSettings().rl_lr * 3), stages, keys)
    assert [a[k] == b[k] for k in stages] == [True, True, False, False, False]  # only RL reruns
    c = stage_hashes(RLSettings(demo_seeds=12), stages, keys)
    assert not any(a[k] == c[k] for k in stages)


def test_echo_alarm_fires_once_std_then_entropy_fall_and_the_gradient_spikes():
    from train.rl.report import echo_alarms

    flat = {"diag/group_reward_std": 0.5, "entropy": 1.0, "grad_norm": 1.0}
    curve = [dict(flat) for _ in range(3)]  # the baseline window (3 steps)
    curve += [{**flat, "diag/group_reward_std": 0.1} for _ in range(3)]  # std falls (<= 0.25 for 3 steps)
    curve += [{**flat, "diag/group_reward_std": 0.1, "entropy": 0.2} for _ in range(3)]  # then entropy falls
    curve += [{"diag/group_reward_std": 0.1, "entropy": 0.2, "grad_norm": 5.0}]  # then a 5x gradient spike
    alarms = echo_alarms(curve)
    assert alarms == [False] * 9 + [True]
    assert echo_alarms([dict(flat) for _ in range(10)]) == [False] * 10


def test_validation_starts_from_the_given_point_without_validating(tmp_path):
    """The SFT stage's step-0 point (same weights, same seeds) is the RL curve's step 0: logged, not re-measured
    (model=None would fail inside validate); a later step still validates."""
    from types import SimpleNamespace

    from train.rl.validate import ValidationCallback

    start = {"step": 0, "success": 0.25, "calls": 3.0, "successes": [1.0, 0.0, 0.0, 0.0], "seconds": 9.0}
    cb = ValidationCallback([{"id": "frozenlake-1", "seed": 1}], every=4, game="frozenlake", agent={}, batch=1,
                            tokenizer=None, log=tmp_path / "v.jsonl", start=start)
    cb.on_train_begin(None, SimpleNamespace(global_step=0), None, model=None)
    assert cb.points == [{k: start[k] for k in ("step", "success", "calls", "successes")}]
    assert (tmp_path / "v.jsonl").read_text().count("\n") == 1
    with pytest.raises(AttributeError):  # step 4: validates the model (None here)
        cb.on_step_end(None, SimpleNamespace(global_step=4), None, model=None)
