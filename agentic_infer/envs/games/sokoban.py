"""RAGEN's Sokoban as an `Env`: a text grid generated from a seed, one move per tool call, RAGEN's rewards.

    env = make_env("sokoban", {"seed": 3})               # or SokobanEnv({"seed": 3, "dim_x": 8, "num_boxes": 2})
    print(env.first_observation())                        # the rules and the grid
    for action in env.solve():                            # the shortest winning action sequence (BFS)
        env.call("act", {"action": action})               # the new grid; CallResult.reward is the step reward
    env.verify("").success                                # True: solved within the step limit

Semantics follow RAGEN (ragen/env/sokoban, gym-sokoban underneath): actions "Up", "Down", "Left", "Right"
(the model writes them as `<answer>Right || Up</answer>`; `parse_answer` reads that); symbols `#` wall,
`_` empty, `O` target, `X` box, `√` box on target, `P` player, `S` player on target; reward per step -0.1,
+1 when a box lands on a target, -1 when one leaves it, +10 when the last box is placed; the episode ends
when every box is on a target or after `max_steps` (100) steps. Walking into a wall or an immovable box is
a step as in gym-sokoban (it costs -0.1 and changes nothing else); an unknown action is refused.
Task row: `{"seed": int, "dim_x": 6, "dim_y": 6, "num_boxes": 1, "max_steps": 100, "search_depth": 300}`
(RAGEN's SimpleSokoban defaults; `dim_x` is the number of rows, as RAGEN's `dim_room`), or a hand-made
`{"board": ["#####", "#PXO#", "#####"]}` in RAGEN's symbols. Options to the constructor override the row.
Not covered: RAGEN's exact generator (ours: a seeded random walk and random reverse pulls, BFS-checked, reseeded
deterministically), rgb rendering, RAGEN's per-trajectory cap `max_actions_per_traj` (the agent loop's turns).
"""

from __future__ import annotations

import random
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from agentic_infer.envs.base import CallResult, Env, EnvVerdict, Refusal
from agentic_infer.envs.games.moves import act_tool, action_name, game_verdict
from agentic_infer.envs.registry import EnvSpec, register_env
from agentic_infer.errors import ConfigError

ACTIONS: dict[str, tuple[int, int]] = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}
WALL, EMPTY, TARGET, BOX_ON_TARGET, BOX, PLAYER, PLAYER_ON_TARGET = "#", "_", "O", "√", "X", "P", "S"
STEP_PENALTY, BOX_ON_REWARD, BOX_OFF_PENALTY, FINISH_REWARD = -0.1, 1.0, -1.0, 10.0
RULES = ("You are solving the Sokoban puzzle. You are the player and you need to push all boxes to targets. "
         "When you are right next to a box, you can push it by moving in the same direction. You cannot push a "
         "box through a wall, and you cannot pull a box.\nSymbols: # wall, _ empty, O target, √ box on target, "
         "X box, P player, S player on target.")
_MAX_ATTEMPTS = 1000
Pos = tuple[int, int]


@dataclass(frozen=True)
class SokobanConfig:
    """Board size and limits, named as RAGEN's SokobanEnvConfig names them."""

    dim_x: int = 6
    dim_y: int = 6
    num_boxes: int = 1
    max_steps: int = 100
    search_depth: int = 300

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"sokoban: {f.name} must be a positive integer, got {value!r}")
        if min(self.dim_x, self.dim_y) < 4 or (self.dim_x - 2) * (self.dim_y - 2) < 2 * self.num_boxes + 2:
            raise ConfigError(f"sokoban: a {self.dim_x}x{self.dim_y} room cannot hold {self.num_boxes} box(es); "
                              "use dim_x, dim_y >= 4 and fewer boxes")


@dataclass(frozen=True)
class Board:
    """A position: the fixed floor (walls, targets) and where the player and the boxes are."""

    walls: frozenset[Pos]
    targets: frozenset[Pos]
    player: Pos
    boxes: frozenset[Pos]
    rows: int
    cols: int

    def render(self) -> str:
        """The grid in RAGEN's symbols, one row per line."""
        def cell(p: Pos) -> str:
            if p in self.walls:
                return WALL
            if p == self.player:
                return PLAYER_ON_TARGET if p in self.targets else PLAYER
            if p in self.boxes:
                return BOX_ON_TARGET if p in self.targets else BOX
            return TARGET if p in self.targets else EMPTY
        return "\n".join("".join(cell((r, c)) for c in range(self.cols)) for r in range(self.rows))

    def solved(self) -> bool:
        return self.boxes <= self.targets

    def blocked(self, p: Pos) -> bool:
        return p in self.walls or not (0 <= p[0] < self.rows and 0 <= p[1] < self.cols)

    def move(self, action: str) -> Board:
        """The board after one action (unchanged when the move is blocked)."""
        dr, dc = ACTIONS[action]
        step = (self.player[0] + dr, self.player[1] + dc)
        if self.blocked(step):
            return self
        boxes = self.boxes
        if step in boxes:
            beyond = (step[0] + dr, step[1] + dc)
            if self.blocked(beyond) or beyond in boxes:
                return self
            boxes = (boxes - {step}) | {beyond}
        return Board(self.walls, self.targets, step, boxes, self.rows, self.cols)


def parse_board(lines: list[str]) -> Board:
    """A Board from grid text rows in RAGEN's symbols (one player; as many boxes as targets)."""
    walls, targets, boxes, players = set(), set(), set(), []
    for r, row in enumerate(lines):
        for c, ch in enumerate(row):
            if ch not in (WALL, EMPTY, TARGET, BOX_ON_TARGET, BOX, PLAYER, PLAYER_ON_TARGET):
                raise ConfigError(f"sokoban board: unknown symbol {ch!r} at row {r}, column {c}; use # _ O √ X P S")
            {WALL: walls, BOX: boxes, BOX_ON_TARGET: boxes}.get(ch, set()).add((r, c))
            if ch in (TARGET, BOX_ON_TARGET, PLAYER_ON_TARGET):
                targets.add((r, c))
            if ch in (PLAYER, PLAYER_ON_TARGET):
                players.append((r, c))
    if len(players) != 1 or not boxes or len(boxes) != len(targets) or len({len(x) for x in lines}) != 1:
        raise ConfigError(f"sokoban board {lines!r}: needs equal-length rows, one player (P/S) and as many "
                          "boxes as targets (at least one)")
    return Board(frozenset(walls), frozenset(targets), players[0], frozenset(boxes), len(lines), len(lines[0]))


def shortest_solution(board: Board, *, max_depth: int) -> list[str] | None:
    """The shortest action sequence that solves `board` (BFS over player and boxes), None beyond `max_depth`."""
    start = (board.player, board.boxes)
    parents: dict[tuple[Pos, frozenset[Pos]], tuple[Any, str] | None] = {start: None}
    queue = deque([(board, 0)])
    while queue:
        node, depth = queue.popleft()
        if node.solved():
            path: list[str] = []
            key = (node.player, node.boxes)
            while parents[key] is not None:
                key, action = parents[key]
                path.append(action)
            return path[::-1]
        if depth >= max_depth:
            continue
        for action in ACTIONS:
            nxt = node.move(action)
            key = (nxt.player, nxt.boxes)
            if key not in parents:
                parents[key] = ((node.player, node.boxes), action)
                queue.append((nxt, depth + 1))
    return None


def generate_board(seed: int, config: SokobanConfig) -> Board:
    """A solvable board for `seed`: carve a room, put boxes on targets, pull them off; reseed until solvable."""
    rows, cols = config.dim_x, config.dim_y
    for attempt in range(_MAX_ATTEMPTS):
        rng = random.Random(f"sokoban:{seed}:{attempt}")
        floor: set[Pos] = set()
        pos = (rng.randint(1, rows - 2), rng.randint(1, cols - 2))
        direction = rng.choice(list(ACTIONS.values()))
        for _ in range(int(1.7 * (rows + cols))):  # gym-sokoban's num_gen_steps
            if rng.random() < 0.35:
                direction = rng.choice(list(ACTIONS.values()))
            floor.add(pos)
            if rng.random() < 0.5:  # a wider corridor, as gym-sokoban's masks carve
                side = (direction[1], direction[0])
                floor.add((min(max(pos[0] + side[0], 1), rows - 2), min(max(pos[1] + side[1], 1), cols - 2)))
            pos = (min(max(pos[0] + direction[0], 1), rows - 2), min(max(pos[1] + direction[1], 1), cols - 2))
        if len(floor) < config.num_boxes + 2:
            continue
        picked = rng.sample(sorted(floor), config.num_boxes + 1)
        targets, player = frozenset(picked[1:]), picked[0]
        walls = frozenset((r, c) for r in range(rows) for c in range(cols) if (r, c) not in floor)
        boxes, best = frozenset(targets), (0, player, frozenset(targets))
        for _ in range(rng.randint(20, 60)):  # reverse play: walk, sometimes pulling the box behind
            dr, dc = rng.choice(list(ACTIONS.values()))
            step, behind = (player[0] + dr, player[1] + dc), (player[0] - dr, player[1] - dc)
            if step not in floor or step in boxes:
                continue
            if behind in boxes and rng.random() < 0.9:
                boxes = (boxes - {behind}) | {player}
            player = step
            score = sum(min(abs(b[0] - t[0]) + abs(b[1] - t[1]) for t in targets) for b in boxes)
            if score >= best[0]:  # keep the most displaced position, as gym-sokoban's box_displacement_score
                best = (score, player, boxes)
        board = Board(walls, targets, best[1], best[2], rows, cols)
        if shortest_solution(board, max_depth=min(config.search_depth, config.max_steps)):  # [] when solved
            return board
    raise ConfigError(f"sokoban: no solvable board for seed {seed} in {_MAX_ATTEMPTS} attempts with {config}; "
                      "use a larger room or fewer boxes")


def parse_answer(text: str) -> list[str]:
    """The actions in a RAGEN answer `<answer>Right || Up</answer>` (or bare `Right || Up`), unknown ones dropped."""
    match = re.search(r"<answer>(.*?)</answer>", text, flags=re.DOTALL)
    names = [action_name(part, ACTIONS) for part in (match.group(1) if match else text).split("||")]
    return [n for n in names if n]


class SokobanEnv(Env):
    """One Sokoban episode (see the module docstring). Tool: `act {"action": "Up"|"Down"|"Left"|"Right"}`."""

    name = "sokoban"

    def __init__(self, task_row: Mapping[str, Any], **options: Any):
        super().__init__()
        settings = {**dict(task_row), **options}
        known = {f.name for f in fields(SokobanConfig)}
        unknown = set(settings) - known - {"seed", "board", "id"}
        if unknown:
            raise ConfigError(f"sokoban: unknown settings {sorted(unknown)}; use seed or board, {sorted(known)}")
        self.config = SokobanConfig(**{k: settings[k] for k in known if k in settings})
        self.seed = settings.get("seed")
        if "board" in settings:
            self.board = parse_board(list(settings["board"]))
        elif isinstance(self.seed, int) and not isinstance(self.seed, bool):
            self.board = generate_board(self.seed, self.config)
        else:
            raise ConfigError(f"sokoban: the task row needs an int 'seed' (or a 'board'), got {dict(task_row)!r}")
        self.steps = 0

    def tools(self) -> list[dict[str, Any]]:
        return [act_tool("Make one move: the player steps (pushing a box in front of it).", ACTIONS,
                         "the move: Up, Down, Left or Right")]

    def instructions(self) -> str:
        return (f"Act with the tool `act` and one action ({', '.join(ACTIONS)}), e.g. act {{\"action\": \"Right\"}}; "
                f"each call makes one move and shows the new grid. At most {self.config.max_steps} moves; each "
                "costs 0.1, a box on a target earns 1, all boxes on targets earn 10.")

    def first_observation(self) -> str:
        return f"{RULES}\n\n{self.board.render()}"

    def execute(self, tool: str, arguments: dict[str, Any]) -> CallResult:
        if self.done:
            raise Refusal("the episode is over (solved or out of moves); no more moves are accepted")
        raw = arguments.get("action")
        action = action_name(raw, ACTIONS)
        if action is None:
            raise Refusal(f"invalid action {raw!r}; use one of {', '.join(ACTIONS)}")
        before = self.board
        self.board = before.move(action)
        self.steps += 1
        placed, was_placed = len(self.board.boxes & self.board.targets), len(before.boxes & before.targets)
        reward = STEP_PENALTY + (BOX_ON_REWARD if placed > was_placed else
                                 BOX_OFF_PENALTY if placed < was_placed else 0.0)
        solved = self.board.solved()
        reward += FINISH_REWARD if solved else 0.0
        self.done = solved or self.steps >= self.config.max_steps
        info = {"action_is_effective": self.board != before, "success": solved, "steps": self.steps}
        return CallResult(self.board.render(), info=info, reward=round(reward, 10))

    def solve(self) -> list[str]:
        """The shortest actions from the current position to the goal ([] when solved; ConfigError if none)."""
        solution = shortest_solution(self.board, max_depth=self.config.search_depth)
        if solution is None:
            raise ConfigError(f"sokoban: no solution within search_depth={self.config.search_depth} moves")
        return solution

    def state(self) -> dict[str, Any]:
        return {"grid": self.board.render(), **self._mutable()}

    def canonical_state(self) -> Any:
        return {"grid": self.board.render()}  # the grid fixes every position; equal boards, equal anchors

    def verify(self, response: str) -> EnvVerdict:
        return game_verdict(solved=self.board.solved(), detail=f"boxes off target:\n{self.board.render()}",
                            steps=self.steps, limit=self.config.max_steps, unit="steps", calls=self.calls,
                            seed=self.seed)

    def _mutable(self) -> Any:
        return {"player": list(self.board.player), "boxes": sorted(list(b) for b in self.board.boxes),
                "steps": self.steps}

    def _set_mutable(self, value: Any) -> None:
        self.board = replace(self.board, player=tuple(value["player"]), boxes=frozenset(map(tuple, value["boxes"])))
        self.steps = int(value["steps"])


register_env(EnvSpec(
    name="sokoban",
    description="RAGEN's Sokoban: push every box onto a target on a seeded text grid, one move per call",
    make=SokobanEnv,
    tools=("act",),
    task_format='{"seed": int, optional "dim_x", "dim_y", "num_boxes", "max_steps", "search_depth"} '
                '(RAGEN SimpleSokoban defaults 6, 6, 1, 100, 300) or {"board": [rows in # _ O √ X P S]}',
    reward="RAGEN per step: -0.1, +1 box on target, -1 box off, +10 solved; verdict 1 iff solved within "
           "max_steps (info.return = the summed step rewards)",
    eval_task=True,
))
