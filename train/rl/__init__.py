"""`make rl`: SFT cold start from solver demonstrations, then GRPO-family RL on RAGEN's games (train.rl.recipe)."""

from train.rl.recipe import GAMES, HELD_OUT_FROM, RLSettings, run_rl

__all__ = ["GAMES", "HELD_OUT_FROM", "RLSettings", "run_rl"]
