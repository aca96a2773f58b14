"""The MCTS core on synthetic random trees: UCT arithmetic, backprop invariants, budgets, flags."""

from __future__ import annotations

import math
import random

import pytest

from agentic_infer.engines.tree import (
    Budget,
    Evaluation,
    Meter,
    Node,
    Proposal,
    SearchConfigBase,
    SearchSettings,
    Tree,
    make_search,
    select_child,
    uct,
)
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.types import SamplingParams


class RandomEnv:
    """States are paths of action ids; terminal at a random depth fixed per path; gold = path hash parity."""

    name = "random"

    def __init__(self, seed: int, p_terminal: float = 0.3):
        self.seed = seed
        self.p_terminal = p_terminal

    def init_state(self):
        return {"path": []}

    async def step(self, state, action):
        return {"path": state["path"] + [action]}, {"observation": f"did {action}"}

    def is_terminal(self, state):
        r = random.Random(f"{self.seed}-{'/'.join(state['path'])}")
        return len(state["path"]) >= 1 and r.random() < self.p_terminal

    def describe(self, state):
        return "/".join(state["path"]) or "(root)"

    def answer(self, state):
        return self.describe(state)

    async def gold_reward(self, state):
        r = random.Random(f"gold-{self.seed}-{'/'.join(state['path'])}")
        return 1.0 if r.random() < 0.05 else 0.0


class RandomConfig(SearchConfigBase):
    """Proposes 1-3 actions, evaluates with seeded random values; one LLM call per proposal."""

    def __init__(self, seed: int, meter: Meter):
        self.rng = random.Random(seed)
        self.meter = meter
        self.failures = 0

    async def propose(self, tree, node, n):
        await self.meter.generate("propose", SamplingParams(n=1, max_tokens=4))
        return [Proposal(f"a{i}", self.rng.random()) for i in range(self.rng.randint(1, n))]

    async def evaluate(self, tree, parent, children):
        return [Evaluation(self.rng.random()) for _ in children]

    async def terminal_reward(self, tree, node):
        return Evaluation(self.rng.random())

    async def on_failure(self, tree, node):
        self.failures += 1


def _search(seed, *, budget=None, p_terminal=0.3, **kw):
    meter = Meter(FakeLLM(reply="x"), budget or Budget(iterations=25))
    env = RandomEnv(seed, p_terminal)
    cfg = RandomConfig(seed, meter)
    settings = SearchSettings(**{"n_children": 3, "depth_limit": 5, **kw})
    return make_search(env, cfg, meter, settings, task=f"random-{seed}"), cfg


def test_uct_arithmetic():
    parent = Node(0, None, visits=10)
    child = Node(1, 0, visits=4, value=0.5)
    assert uct(parent, child, 1.0) == pytest.approx(0.5 + math.sqrt(math.log(10) / 4))
    assert uct(parent, child, 0.0) == 0.5
    assert uct(parent, Node(2, 0, visits=0), 1.0) == math.inf


def test_selection_prefers_unvisited_then_uct():
    t = Tree.new({"x": 0}, "root")
    a = t.add_child(t.root, "a", prior=0.1)
    b = t.add_child(t.root, "b", prior=0.9)
    assert select_child(t, t.root, 1.0) is b  # unvisited: best prior first
    b.reward = 0.0
    a.reward = 0.5
    assert select_child(t, t.root, 1.0) is a  # evaluation beats prior
    for n, visits, value in ((t.root, 10, 0.5), (a, 8, 0.6), (b, 2, 0.3)):
        n.visits, n.value = visits, value
    # a: 0.6 + sqrt(ln10/8) = 1.1365 ; b: 0.3 + sqrt(ln10/2) = 1.3730
    assert select_child(t, t.root, 1.0) is b
    assert select_child(t, t.root, 0.1) is a


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("mode", ["leaf", "path_mean"])
async def test_backprop_invariants_on_random_trees(seed, lazy, mode):
    search, _ = _search(seed, lazy=lazy, reward_mode=mode)
    seen: dict[int, list[float]] = {}
    orig = search._backprop

    def recording(path, leaf_reward):
        r = orig(path, leaf_reward)
        for n in path:
            seen.setdefault(n.id, []).append(r)
        return r

    search._backprop = recording
    res = await search.run()
    t = res.tree
    it = res.budget["spent"]["iterations"]
    assert t.root.visits == it
    if res.stop_reason.startswith("budget iterations"):
        assert it == 25
    for n in t.nodes:
        kids = t.children(n)
        assert n.visits >= sum(k.visits for k in kids)
        if n.visits:
            assert n.value == pytest.approx(sum(seen[n.id]) / len(seen[n.id]))
            assert len(seen[n.id]) == n.visits
        else:
            assert n.id not in seen


@pytest.mark.parametrize("algorithm", ["beam", "dfs"])
async def test_beam_and_dfs_keep_the_invariants(algorithm):
    search, _ = _search(3, algorithm=algorithm, beam_width=2)
    res = await search.run()
    for n in res.tree.nodes:
        assert n.visits >= sum(k.visits for k in res.tree.children(n))
    assert res.tree.algorithm == algorithm


@pytest.mark.parametrize("limit, which", [({"llm_calls": 4}, "llm_calls"), ({"tokens": 60}, "tokens"),
                                          ({"wall_s": 1e-9}, "wall_s")])
async def test_budgets_stop_the_search(limit, which):
    search, _ = _search(1, budget=Budget(iterations=None, **limit), p_terminal=0.02, depth_limit=30)
    res = await search.run()
    assert res.stop_reason == f"budget {which} exhausted"
    spent = res.budget["spent"]
    if which == "llm_calls":
        assert spent["llm_calls"] == 4
    if which == "tokens":
        assert spent["tokens"] >= 60 and spent["llm_calls"] <= 60
    assert res.tree.root.visits == spent["iterations"]


async def test_iteration_budget():
    search, _ = _search(2, budget=Budget(iterations=7))
    res = await search.run()
    assert res.budget["spent"]["iterations"] == res.tree.root.visits <= 7


async def test_feedback_flag_and_oracle_never_default():
    assert SearchSettings().feedback == "judge"
    with pytest.raises(ConfigError, match="feedback"):
        SearchSettings(feedback="gold")
    judge, cfg = _search(5)
    r1 = await judge.run()
    assert r1.feedback == "judge" and r1.tree.to_dict()["feedback"] == "judge"
    assert all(n.details["terminal_reward"]["source"] == "judge" for n in r1.tree.terminals()
               if "terminal_reward" in n.details)
    oracle, _ = _search(5, feedback="oracle")
    r2 = await oracle.run()
    assert r2.feedback == "oracle"
    assert all(n.details["terminal_reward"]["source"] == "oracle" for n in r2.tree.terminals()
               if "terminal_reward" in n.details)


async def test_resume_from_saved_table(tmp_path):
    search, _ = _search(4, budget=Budget(iterations=5))
    res = await search.run()
    path = res.tree.save(tmp_path / "tree.json")
    tree = Tree.load(path)
    meter = Meter(FakeLLM(reply="x"), Budget(iterations=9))
    again = make_search(RandomEnv(4), RandomConfig(4, meter), meter, SearchSettings(n_children=3, depth_limit=5),
                        tree=tree)
    res2 = await again.run()
    assert res2.tree.root.visits == res2.budget["spent"]["iterations"] <= 9
    assert res2.tree.root.visits > 5 or res2.stop_reason == "search space exhausted"


def test_budget_validation():
    with pytest.raises(ConfigError, match="never stop"):
        Budget(iterations=None)
    with pytest.raises(ConfigError, match="iterations"):
        Budget(iterations=0)
