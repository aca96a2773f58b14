"""RAGEN's FrozenLake as an `Env`: walk a seeded square board of ice from the start to the goal without falling
into a hole, one move per tool call.

    env = make_env("frozenlake", {"seed": 3})              # or FrozenLakeEnv({"seed": 3, "size": 5, "p": 0.8})
    env.first_observation()                                # the rules, the symbols and the grid
    env.call("act", {"action": "Left"})                    # the new grid; CallResult.reward 1.0 on the goal
    env.verify("")                                         # success = "solved" and "within step limit"
    for a in env.solve(): env.call("act", {"action": a})   # the shortest winning moves (BFS)

Semantics matched with RAGEN (ragen/env/frozen_lake, config/envs.yaml):
- generation: `generate_random_map(size, p, seed)`: numpy's PCG64 seeded with the seed (gymnasium's
  `seeding.np_random` builds the same generator), a size x size board of "F" (probability p) / "H", a random
  start and goal cell (distinct), redrawn from the same generator until a path from start to goal exists;
- task row keys named as RAGEN's config names them: `seed` (its map_seed), `size` (4), `p` (0.8), `is_slippery`,
  `max_actions_per_traj` (10, its FrozenLake step limit); `desc` (gymnasium's name: rows of S/F/H/G) gives a
  hand-made board instead;
- actions Left, Down, Right, Up (RAGEN's action_lookup 1..4, matched case-insensitively as its es_manager does;
  the model writes `<answer>Left || Up</answer>` there, here one `act` call per move);
- rendering: one line per row, "P" player, "_" frozen (the start too), "O" hole, "G" goal, "X" player in a
  hole, "√" player on the goal; `view` "grid" (the default) is this text alone, "described" adds one line
  under it naming in action words where the goal lies and what each move would reach, e.g. "Goal: 2 Down,
  1 Left. Left: hole, Down: ice, Right: edge, Up: ice." (not RAGEN's: a view a 135M model can read, whose
  grid view stays board-blind after SFT; the state, the anchors and the rules are the same in both);
- rewards (gymnasium's): 1.0 for the step that reaches the goal, else 0.0; the episode ends in a hole, on the
  goal or after `max_actions_per_traj` moves.
Differences: `is_slippery` defaults to False here (RAGEN's config says True) so that the BFS solution wins
every time; when True, a move goes to the intended or either perpendicular direction (1/3 each, gymnasium's
rule) drawn from random.Random(f"{seed}:{steps}") so that snapshot/restore replays it. An unknown action is a
refusal ("Error: ...", state unchanged) where RAGEN adds its format penalty (-0.1) outside the env.
Not covered: RAGEN's rgb rendering and its multi-action turns (an agent loop may split them into calls).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentic_infer.envs.base import CallResult, Env, EnvVerdict, Refusal
from agentic_infer.envs.games.moves import act_tool, action_name, game_verdict
from agentic_infer.envs.registry import EnvSpec, register_env
from agentic_infer.errors import ConfigError

ACTIONS = ("Left", "Down", "Right", "Up")  # RAGEN's action_lookup 1..4 (gymnasium's actions 0..3)
MOVES = {"Left": (0, -1), "Down": (1, 0), "Right": (0, 1), "Up": (-1, 0)}
SYMBOLS = {"P": "player", "_": "empty", "O": "hole", "G": "goal", "X": "player in hole", "√": "player on goal"}
_CELL = {"S": "_", "F": "_", "H": "O", "G": "G"}
_CONFIG_KEYS = ("seed", "size", "p", "is_slippery", "max_actions_per_traj", "desc", "view")
VIEWS = ("grid", "described")
_REACHED = {"_": "ice", "O": "hole", "G": "goal"}


@dataclass(frozen=True)
class FrozenLakeConfig:
    """One board's settings (RAGEN's FrozenLakeEnvConfig names; `max_actions_per_traj` from its envs.yaml)."""

    seed: int = 0
    size: int = 4
    p: float = 0.8
    is_slippery: bool = False
    max_actions_per_traj: int = 10
    desc: tuple[str, ...] | None = None
    view: str = "grid"

    def __post_init__(self) -> None:
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ConfigError(f"frozenlake: seed must be an int >= 0, got {self.seed!r}")
        if not isinstance(self.size, int) or self.size < 2:
            raise ConfigError(f"frozenlake: size must be an int >= 2, got {self.size!r}")
        if not isinstance(self.p, (int, float)) or not 0 < self.p <= 1:
            raise ConfigError(f"frozenlake: p (the probability of a frozen cell) must be in (0, 1], got {self.p!r}")
        if not isinstance(self.max_actions_per_traj, int) or self.max_actions_per_traj < 1:
            raise ConfigError(f"frozenlake: max_actions_per_traj must be an int >= 1, got "
                              f"{self.max_actions_per_traj!r}")
        if self.view not in VIEWS:
            raise ConfigError(f"frozenlake: view must be one of {VIEWS}, got {self.view!r}")
        if self.desc is not None:
            rows = list(self.desc)
            if (not rows or any(len(r) != len(rows[0]) for r in rows) or any(set(r) - set(_CELL) for r in rows)
                    or sum(r.count("S") for r in rows) != 1 or sum(r.count("G") for r in rows) < 1):
                raise ConfigError(f"frozenlake: desc must be equal-length rows of S/F/H/G with one S and a G, "
                                  f"got {rows!r}")


def _neighbours(desc: list[str], r: int, c: int) -> list[tuple[str, int, int]]:
    out = []
    for name in ACTIONS:
        dr, dc = MOVES[name]
        if 0 <= r + dr < len(desc) and 0 <= c + dc < len(desc[0]):
            out.append((name, r + dr, c + dc))
    return out


def shortest_path(desc: list[str], start: tuple[int, int]) -> list[str] | None:
    """The shortest action names from `start` to a goal avoiding holes (BFS; ties by action order), or None."""
    parent: dict[tuple[int, int], tuple[tuple[int, int], str] | None] = {start: None}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        if desc[r][c] == "G":
            path: list[str] = []
            node = (r, c)
            while (step := parent[node]) is not None:
                node, action = step
                path.append(action)
            return path[::-1]
        if desc[r][c] == "H":
            continue
        for name, nr, nc in _neighbours(desc, r, c):
            if (nr, nc) not in parent:
                parent[(nr, nc)] = ((r, c), name)
                queue.append((nr, nc))
    return None


def generate_map(*, size: int = 4, p: float = 0.8, seed: int = 0) -> list[str]:
    """RAGEN's `generate_random_map`: rows of S/F/H/G, redrawn from the seeded generator until solvable."""
    rng = np.random.default_rng(seed)
    while True:
        board = rng.choice(["F", "H"], (size, size), p=[p, 1 - p])
        start_r, start_c = rng.integers(size, size=2)
        goal_r, goal_c = rng.integers(size, size=2)
        if (start_r, start_c) != (goal_r, goal_c):
            board[start_r][start_c], board[goal_r][goal_c] = "S", "G"
            desc = ["".join(row) for row in board]
            if shortest_path(desc, (int(start_r), int(start_c))) is not None:
                return desc


class FrozenLakeEnv(Env):
    """One FrozenLake episode (see the module docstring). Tool `act {"action": Left|Down|Right|Up}`.

    State `{"grid", "row", "col", "steps"}`; `canonical_state()` is the grid and position only, so equal boards
    at equal positions anchor equally across episodes. `verify`: checks "solved" (the player is on the goal)
    and "within step limit"; reward 1.0 when both pass; info holds the return and the steps.
    """

    name = "frozenlake"

    def __init__(self, task_row: Mapping[str, Any], **options: Any):
        super().__init__()
        settings = {k: v for k, v in {**dict(task_row), **options}.items() if k in _CONFIG_KEYS}
        unknown = sorted(set(options) - set(_CONFIG_KEYS))
        if unknown:
            raise ConfigError(f"frozenlake: unknown options {unknown}; known: {', '.join(_CONFIG_KEYS)}")
        if "seed" not in settings and "desc" not in settings:
            raise ConfigError(f"frozenlake: the task row needs a 'seed' (or a 'desc' board), got {dict(task_row)!r}")
        if settings.get("desc") is not None:
            settings["desc"] = tuple(settings["desc"])
        self.config = FrozenLakeConfig(**settings)
        cfg = self.config
        self.desc = list(cfg.desc) if cfg.desc else generate_map(size=cfg.size, p=cfg.p, seed=cfg.seed)
        self.start = next((r, row.index("S")) for r, row in enumerate(self.desc) if "S" in row)
        self.row, self.col = self.start
        self.steps = 0

    # -- what the agent is shown -------------------------------------------------------------------
    def tools(self) -> list[dict[str, Any]]:
        return [act_tool("Move the player one cell: Left, Down, Right or Up.", ACTIONS, "the direction to move")]

    def instructions(self) -> str:
        return ("You are solving the FrozenLake puzzle. Avoid the holes and reach the goal. Act with the tool "
                '`act` and one action per call, e.g. act {"action": "Left"}; actions: ' + ", ".join(ACTIONS) + ". "
                f"You have at most {self.config.max_actions_per_traj} moves."
                + (" The ice is slippery: a move may go in a direction perpendicular to the one you chose."
                   if self.config.is_slippery else ""))

    def first_observation(self) -> str:
        legend = ", ".join(f"{k} = {v}" for k, v in SYMBOLS.items())
        return (f"FrozenLake: move the player (P) to the goal (G) without stepping into a hole (O); moving off "
                f"the board leaves you where you are. Symbols: {legend}.\n{self.observe()}")

    def observe(self) -> str:
        """What the agent sees of the board: the grid, plus the described line under `view="described"`."""
        return self.render() if self.config.view == "grid" else f"{self.render()}\n{self.describe()}"

    def describe(self) -> str:
        """The board in action words: where the goal lies from the player and what each move would reach."""
        goal = next((r, row.index("G")) for r, row in enumerate(self.desc) if "G" in row)
        dr, dc = goal[0] - self.row, goal[1] - self.col
        offsets = [f"{abs(d)} {name}" for d, name in ((dr, "Down" if dr > 0 else "Up"),
                                                      (dc, "Right" if dc > 0 else "Left")) if d]
        reach = {name: _REACHED[_CELL[self.desc[r][c]]] for name, r, c in _neighbours(self.desc, self.row, self.col)}
        moves = ", ".join(f"{name}: {reach.get(name, 'edge')}" for name in ACTIONS)
        return f"Goal: {', '.join(offsets) or 'here'}. {moves}."

    def render(self) -> str:
        """The grid as RAGEN's text render draws it (rows joined by newlines)."""
        lines = []
        for r, row in enumerate(self.desc):
            cells = [_CELL[ch] for ch in row]
            if r == self.row:
                here = row[self.col]
                cells[self.col] = "X" if here == "H" else "√" if here == "G" else "P"
            lines.append("".join(cells))
        return "\n".join(lines)

    # -- acting ------------------------------------------------------------------------------------
    def execute(self, tool: str, arguments: dict[str, Any]) -> CallResult:
        raw = arguments.get("action")
        action = action_name(raw, ACTIONS)
        if action is None:
            raise Refusal(f"action must be one of {', '.join(ACTIONS)}, got {raw!r}")
        if self.done:
            raise Refusal("the episode is over (the player reached the goal, fell in a hole or ran out of moves)")
        if self.config.is_slippery:
            i = ACTIONS.index(action)
            action = random.Random(f"{self.config.seed}:{self.steps}").choice(
                [ACTIONS[(i - 1) % 4], action, ACTIONS[(i + 1) % 4]])
        before = (self.row, self.col)
        dr, dc = MOVES[action]
        self.row = min(max(self.row + dr, 0), len(self.desc) - 1)
        self.col = min(max(self.col + dc, 0), len(self.desc[0]) - 1)
        self.steps += 1
        cell = self.desc[self.row][self.col]
        self.done = cell in "HG" or self.steps >= self.config.max_actions_per_traj
        return CallResult(self.observe(), reward=1.0 if cell == "G" else 0.0,
                          info={"moved": action, "action_is_effective": before != (self.row, self.col),
                                "success": cell == "G", "done": self.done})

    def solve(self) -> list[str]:
        """The shortest action sequence from the current position to the goal (BFS; [] when not reachable)."""
        return shortest_path(self.desc, (self.row, self.col)) or []

    # -- state and verdict -------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"grid": self.render(), "row": self.row, "col": self.col, "steps": self.steps}

    def canonical_state(self) -> Any:
        return {"grid": self.render(), "row": self.row, "col": self.col}

    def verify(self, response: str) -> EnvVerdict:
        cell = self.desc[self.row][self.col]
        return game_verdict(solved=cell == "G", detail=f"the player is at ({self.row}, {self.col}), on "
                            f"{'a hole' if cell == 'H' else 'ice'}, not the goal", steps=self.steps,
                            limit=self.config.max_actions_per_traj, unit="moves", calls=self.calls,
                            optimal_steps=len(shortest_path(self.desc, self.start) or []))

    def _mutable(self) -> Any:
        return {"row": self.row, "col": self.col, "steps": self.steps}

    def _set_mutable(self, value: Any) -> None:
        self.row, self.col, self.steps = int(value["row"]), int(value["col"]), int(value["steps"])


register_env(EnvSpec(
    name="frozenlake",
    description="RAGEN's FrozenLake: walk a seeded ice board from the start to the goal avoiding holes",
    make=FrozenLakeEnv,
    tools=("act",),
    task_format='{"seed": int, "size": 4, "p": 0.8, "is_slippery": false, "max_actions_per_traj": 10, '
                '"view": "grid"|"described"} '
                '(or "desc": rows of S/F/H/G for a hand-made board)',
    reward="gymnasium's: 1.0 on the step reaching the goal, else 0.0; verdict 1.0 iff solved within the step limit",
    eval_task=True,
))
