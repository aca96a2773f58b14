"""The RL report lists every estimator stage trained from the game's SFT stage, whichever run added it."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from train.rl import RLSettings
from train.rl.report import game_section


def _done(folder: Path, settings: RLSettings, summary: dict) -> None:
    folder.mkdir(parents=True)
    (folder / "done.json").write_text(json.dumps({"config_hash": "h", "summary": summary, "settings": asdict(settings)}))


def _rl(success: float) -> dict:
    return {"seconds": 60, "steps": 8, "episodes_per_step": 16, "lr": 5e-5, "gamma": 0.95, "omega": 1.0, "train_s": 50,
            "validation": [{"step": 8, "success": success}], "curve": []}


def test_an_estimator_added_by_a_later_run_is_reported_and_one_from_another_sft_is_not(tmp_path):
    game = tmp_path / "frozenlake"
    first = RLSettings(estimators=("grpo",))  # the run that trained the SFT stage named only grpo
    _done(game / "demos", first, {"seconds": 1, "demos": 64, "mean_moves": 2.6})
    _done(game / "sft", first, {"seconds": 900, "steps": 16, "train_loss": 0.07, "precision": "fp32", "threads": 2,
                                "validation": {"success": 0.719}})
    _done(game / "grpo", first, _rl(0.562))
    _done(game / "gigpo", RLSettings(estimators=("grpo", "gigpo"), micro_batch=4), _rl(0.656))  # a later run
    _done(game / "rloo", RLSettings(sft_lr=1e-5, estimators=("rloo",)), _rl(0.1))  # left from another SFT start
    text = "\n".join(game_section(game, tmp_path, None))
    assert "| step | grpo | gigpo |" in text and "| 8 | 0.562 | 0.656 |" in text
    assert "### gigpo per step" in text and "rloo" not in text
