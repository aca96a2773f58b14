"""Beam search and DFS on a hand-made two-level tree, each algorithm built by name (`make_search`)."""

from __future__ import annotations

import pytest

from agentic_infer.engines.tree import (
    ALGORITHMS,
    DFS,
    MCTS,
    BeamSearch,
    Budget,
    Evaluation,
    Meter,
    Proposal,
    SearchConfigBase,
    SearchSettings,
    make_search,
)
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM

# root -> a, b; each -> x, y (terminal). Evaluations of the children, terminal rewards of the leaves.
EVALS = {"a": 0.9, "b": 0.4, "a/x": 0.5, "a/y": 0.6, "b/x": 0.7, "b/y": 0.1}
TERMINAL = {"a/x": 0.2, "a/y": 0.4, "b/x": 0.9, "b/y": 0.0}


class TwoLevels:
    name = "two-levels"

    def init_state(self):
        return {"path": ""}

    async def step(self, state, action):
        return {"path": f"{state['path']}/{action}".lstrip("/")}, {}

    def is_terminal(self, state):
        return state["path"].count("/") == 1

    def describe(self, state):
        return state["path"]

    def answer(self, state):
        return state["path"]

    async def gold_reward(self, state):
        return None


class Table(SearchConfigBase):
    def __init__(self):
        self.judged: list[str] = []
        self.expanded: list[str] = []

    async def propose(self, tree, node, n):
        self.expanded.append(node.summary)
        return [Proposal("x" if node.depth else "a"), Proposal("y" if node.depth else "b")]

    async def evaluate(self, tree, parent, children):
        return [Evaluation(EVALS[c.summary]) for c in children]

    async def terminal_reward(self, tree, node):
        self.judged.append(node.summary)
        return Evaluation(TERMINAL[node.summary])


async def _run(**settings):
    cfg = Table()
    search = make_search(TwoLevels(), cfg, Meter(FakeLLM(reply="x"), Budget(iterations=10)),
                         SearchSettings(n_children=2, depth_limit=3, **settings))
    return search, await search.run(), cfg


def test_the_table_names_one_class_per_algorithm():
    assert ALGORITHMS == {"mcts": MCTS, "beam": BeamSearch, "dfs": DFS}
    with pytest.raises(ConfigError, match="algorithm='bfs'.*mcts, beam, dfs"):
        SearchSettings(algorithm="bfs")
    with pytest.raises(ConfigError, match="MCTS got SearchSettings.algorithm='beam'.*make_search"):
        MCTS(TwoLevels(), Table(), Meter(FakeLLM(reply="x")), SearchSettings(algorithm="beam"))


async def test_beam_keeps_the_best_by_evaluation_or_by_path_mean():
    # leaf scores at depth 2: b/x .7, a/y .6, a/x .5, b/y .1 -> the beam of 2 is {b/x, a/y}
    search, res, cfg = await _run(algorithm="beam", beam_width=2)
    assert type(search) is BeamSearch and res.tree.algorithm == "beam"
    assert cfg.expanded == ["", "a", "b"] and sorted(cfg.judged) == ["a/y", "b/x"]
    assert (res.answer, res.stop_reason, res.budget["spent"]["iterations"]) == ("b/x", "beam finished", 2)
    # path means: a/y (.9+.6)/2=.75, a/x .7, b/x (.4+.7)/2=.55, b/y .25 -> {a/y, a/x}; a/y's reward .4 is best
    _, res, cfg = await _run(algorithm="beam", beam_width=2, reward_mode="path_mean")
    assert sorted(cfg.judged) == ["a/x", "a/y"] and res.answer == "a/y"
    # width 1: only the best child of the root (a) is expanded
    _, res, cfg = await _run(algorithm="beam", beam_width=1)
    assert cfg.expanded == ["", "a"] and cfg.judged == ["a/y"] and len(res.tree.nodes) == 5


async def test_dfs_goes_best_first_prunes_and_stops_at_the_first_success():
    # a (.9) before b (.4); in a: a/y (.6) then a/x (.5), both below success .5; in b: b/x (.7) succeeds,
    # b/y (.1 < prune .3) is never visited
    search, res, cfg = await _run(algorithm="dfs", dfs_prune=0.3, success_threshold=0.5)
    assert type(search) is DFS
    assert cfg.judged == ["a/y", "a/x", "b/x"]
    assert (res.answer, res.stop_reason) == ("b/x", "DFS found a terminal above the success threshold")
    assert res.budget["spent"]["iterations"] == 3  # root, a, b expanded
    # prune .45 drops b: every terminal fails, the best of them (a/y, .4) is the answer
    _, res, cfg = await _run(algorithm="dfs", dfs_prune=0.45, success_threshold=0.5)
    assert cfg.expanded == ["", "a"] and cfg.judged == ["a/y", "a/x"]
    assert (res.answer, res.stop_reason) == ("a/y", "search space exhausted")
