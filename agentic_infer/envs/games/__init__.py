"""RAGEN's games as envs: FrozenLake and Sokoban as text grids, generated from a seed (registered on import)."""

from agentic_infer.envs.games import frozenlake, sokoban  # noqa: F401
