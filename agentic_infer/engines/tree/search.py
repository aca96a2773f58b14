"""The common base of the tree-search algorithms: `TreeSearch`, its `SearchSettings` and `SearchResult`.

    search = make_search(env, config, meter, SearchSettings(algorithm="mcts", n_children=5), task="1 1 4 6")
    result = await search.run()       # SearchResult: answer, node, correct (scored afterwards), tree, budget

An algorithm is a `TreeSearch` subclass that implements `async search() -> str` (the stop reason when it
ends by itself) out of the building blocks here: `expand` (one `propose` call for n children),
`materialise` (environment step + evaluation of children), `terminal_reward`, `_backprop` (a running mean
into every node of a path) and the stop checks. The algorithms, one a file: `mcts.MCTS` (UCT, LATS and RAP),
`beam.BeamSearch`, `dfs.DFS`, chosen by `SearchSettings.algorithm` through `algorithms.ALGORITHMS`
(`algorithms.make_search`). The engines (`lats.LATS`, `rap.RAP`) build a search per example and turn its
result and the meter's recorded calls into a Rollout (`engine.py`).

Feedback: "judge" (default; the environment's gold reward is only used after the search to score
the chosen answer) or "oracle" (the gold reward is the terminal reward and a solved terminal stops
the search, like the LATS reference code). The result and the saved tree record which one ran.
A budget limit reached mid-iteration ends the search; the unfinished iteration is not backed up.
A failed terminal (reward below `success_threshold`) calls `config.on_failure` (LATS writes a reflection).
Not covered: parallel (virtual-loss) MCTS, progressive widening, transposition tables.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from agentic_infer.engines.tree.base import (
    FEEDBACK,
    BudgetExhausted,
    Environment,
    Meter,
    SearchConfig,
)
from agentic_infer.engines.tree.table import Node, Tree
from agentic_infer.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchSettings:
    """One search's settings; `algorithm` names its class in `algorithms.ALGORITHMS`, the rest are read by
    the algorithms that use them (`beam_width`: beam; `dfs_prune`: DFS; `exploration_weight`, `lazy`, `rollout`: MCTS)."""

    algorithm: str = "mcts"
    n_children: int = 5
    exploration_weight: float = 1.0
    depth_limit: int = 7
    lazy: bool = False
    rollout: bool = True
    reward_mode: str = "leaf"  # "leaf" (LATS) | "path_mean" (RAP)
    feedback: str = "judge"
    stop_at: float | None = None  # judge mode: stop once a terminal's judge reward >= this
    success_threshold: float = 0.5  # a terminal reward below this is a failure (reflection; DFS goes on)
    beam_width: int = 2
    dfs_prune: float = 0.0

    def __post_init__(self) -> None:
        def bad(name: str, rule: str, fix: str) -> ConfigError:
            return ConfigError(f"SearchSettings.{name}={getattr(self, name)!r}: {rule}; {fix}")

        from agentic_infer.engines.tree.algorithms import ALGORITHMS  # the algorithms import this module

        if self.algorithm not in ALGORITHMS:
            raise bad("algorithm", f"must be one of {tuple(ALGORITHMS)}", f"pick {', '.join(ALGORITHMS)}")
        if self.feedback not in FEEDBACK:
            raise bad("feedback", f"must be one of {FEEDBACK}", "use 'judge' for evaluation runs")
        if self.reward_mode not in ("leaf", "path_mean"):
            raise bad("reward_mode", "must be 'leaf' or 'path_mean'", "LATS uses leaf, RAP path_mean")
        if not isinstance(self.n_children, int) or self.n_children < 1:
            raise bad("n_children", "must be an integer >= 1", "LATS uses 5")
        if not isinstance(self.depth_limit, int) or self.depth_limit < 1:
            raise bad("depth_limit", "must be an integer >= 1", "LATS uses 7, RAP 5")
        if not self.exploration_weight >= 0:
            raise bad("exploration_weight", "must be >= 0", "the papers use 1.0")
        if not isinstance(self.beam_width, int) or self.beam_width < 1:
            raise bad("beam_width", "must be an integer >= 1", "try 2-5")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def node_score(n: Node) -> float:
    """A node's evaluation, else its proposal prior."""
    return n.reward if n.reward is not None else n.prior


@dataclass
class SearchResult:
    """What one search decided; the engines turn it and the meter's calls into a Rollout (`engine.py`)."""

    answer: str | None
    node: int | None
    actions: list[str]
    correct: bool | None  # scored after the search with the environment's gold reward
    feedback: str
    stop_reason: str
    tree: Tree
    budget: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "node": self.node, "actions": self.actions, "correct": self.correct,
                "feedback": self.feedback, "stop_reason": self.stop_reason, "budget": self.budget, **self.extra}


class Stop(Exception):
    """Raised inside a search to end it with `reason` (the search catches it and finishes)."""

    def __init__(self, reason: str):
        self.reason = reason


class TreeSearch:
    """One search of `env` guided by `config`, LLM calls through `meter`; resumable from `tree`. Subclasses
    (one per algorithm, `algorithm` = its name) implement `search()`; build one with `make_search`."""

    algorithm = ""

    def __init__(self, env: Environment, config: SearchConfig, meter: Meter, settings: SearchSettings | None = None,
                 *, task: str = "", tree: Tree | None = None):
        self.env, self.config, self.meter = env, config, meter
        self.s = settings or SearchSettings(algorithm=self.algorithm or "mcts")
        if self.algorithm and self.s.algorithm != self.algorithm:
            raise ConfigError(f"{type(self).__name__} got SearchSettings.algorithm={self.s.algorithm!r}; build the "
                              "search with agentic_infer.engines.tree.make_search(...), which picks the class by name")
        if tree is None:
            root = env.init_state()
            tree = Tree.new(root, env.describe(root), algorithm=self.s.algorithm, env=env.name, task=task,
                            feedback=self.s.feedback, config=self.s.to_dict())
            tree.root.terminal = env.is_terminal(root)
        else:
            spent = tree.budget.get("spent", {})
            for k in ("iterations", "llm_calls", "prompt_tokens", "completion_tokens"):
                setattr(meter.spent, k, int(spent.get(k, 0)))
            meter.restart_clock(float(spent.get("wall_s", 0.0)))
        self.tree = tree

    async def search(self) -> str:
        """Search until done; the stop reason when it ends by itself (a `Stop` or `BudgetExhausted` ends it early)."""
        raise NotImplementedError(f"{type(self).__name__} implements no search(); use make_search(...) to build one "
                                  "of the algorithms of agentic_infer.engines.tree.algorithms.ALGORITHMS")

    # -- building blocks ---------------------------------------------------------------------------
    async def materialise(self, parent: Node, children: list[Node]) -> None:
        """Run the environment step for children without a state, then evaluate those without a reward."""
        for c in children:
            if c.state is None:
                with self.meter.at(c):  # an LLM world model's calls belong to the child they create
                    state, aux = await self.env.step(parent.state, c.action or "")
                c.state, c.summary, c.terminal = state, self.env.describe(state), self.env.is_terminal(state)
                c.details["step"] = aux
        todo = [c for c in children if c.reward is None]
        if todo:
            with self.meter.at(todo[0] if len(todo) == 1 else parent):  # configs name the child themselves
                evals = await self.config.evaluate(self.tree, parent, todo)
            for c, e in zip(todo, evals):
                c.reward = float(e.value)
                c.details["evaluation"] = e.details

    async def expand(self, node: Node) -> list[Node]:
        if not node.children:
            with self.meter.at(node):
                props = await self.config.propose(self.tree, node, self.s.n_children)
            for p in props:
                self.tree.add_child(node, p.action, p.prior, p.details)
            if not props:  # nothing parseable: a dead end, scored as a failed terminal
                node.terminal = True
                node.details["dead_end"] = True
                return []
        kids = self.tree.children(node)
        if not self.s.lazy:
            await self.materialise(node, kids)
        return kids

    async def terminal_reward(self, node: Node) -> float:
        cached = node.details.get("terminal_reward")
        if cached is not None:
            return float(cached["value"])
        if self.s.feedback == "oracle":
            gold = await self.env.gold_reward(node.state) if node.state is not None else 0.0
            value, info = float(gold or 0.0), {"source": "oracle"}
        else:
            with self.meter.at(node):
                ev = await self.config.terminal_reward(self.tree, node)
            value, info = float(ev.value), {"source": "judge", **ev.details}
        node.details["terminal_reward"] = {"value": value, **info}
        if value < self.s.success_threshold:
            with self.meter.at(node):
                await self.config.on_failure(self.tree, node)
        return value

    def _check_stop(self, value: float) -> None:
        if self.s.feedback == "oracle" and value >= 1.0:
            raise Stop("solved (oracle feedback)")
        if self.s.feedback == "judge" and self.s.stop_at is not None and value >= self.s.stop_at:
            raise Stop(f"judge reward >= {self.s.stop_at}")

    def _backprop(self, path: list[Node], leaf_reward: float) -> float:
        if self.s.reward_mode == "path_mean" and len(path) > 1:
            rewards = [n.reward or 0.0 for n in path[1:-1]] + [leaf_reward]
            r = sum(rewards) / len(rewards)
        else:
            r = leaf_reward
        for n in path:
            n.backprop(r)
        return r

    async def _evaluated(self, parent: Node) -> list[Node]:
        """`parent`'s children, each materialised and evaluated, a new one's evaluation backed up once (beam and
        DFS, so the table's visits/values mean the same as in MCTS)."""
        kids = await self.expand(parent)
        await self.materialise(parent, kids)  # beam and DFS need every child's evaluation
        for k in kids:
            if k.visits == 0:
                self._backprop(self.tree.path(k), k.reward or 0.0)
        return kids

    def _iteration_gate(self) -> None:
        limit = self.meter.budget.iterations
        if limit is not None and self.meter.spent.iterations >= limit:
            raise Stop("budget iterations exhausted")
        self.meter.check()

    # -- driver ------------------------------------------------------------------------------------
    def _root_stop(self) -> str:
        return "no valid action at the root" if self.tree.root.details.get("dead_end") else "root is terminal"

    async def run(self) -> SearchResult:
        reason = "search space exhausted"
        try:
            if self.tree.root.terminal:
                raise Stop(self._root_stop())
            reason = await self.search()
        except Stop as e:
            reason = e.reason
        except BudgetExhausted as e:
            reason = f"budget {e.which} exhausted"
        return await self.finish(reason)

    def choose(self) -> Node | None:
        """The answer node: the terminal with the best terminal reward (then value, visits)."""
        scored = [n for n in self.tree.terminals() if "terminal_reward" in n.details and not n.details.get("dead_end")]
        if not scored:
            return None
        return max(scored, key=lambda n: (n.details["terminal_reward"]["value"], n.value, n.visits, -n.id))

    async def finish(self, reason: str, node: Node | None = None) -> SearchResult:
        node = node if node is not None else self.choose()
        answer = self.env.answer(node.state) if node is not None and node.state is not None else None
        correct = None
        if node is not None and node.state is not None:
            gold = await self.env.gold_reward(node.state)  # scoring only, after the search
            correct = None if gold is None else gold >= 1.0
        budget = self.meter.report()
        self.tree.budget = budget
        self.tree.feedback = self.s.feedback
        res = SearchResult(answer=answer, node=None if node is None else node.id,
                           actions=[] if node is None else self.tree.actions(node), correct=correct,
                           feedback=self.s.feedback, stop_reason=reason, tree=self.tree, budget=budget)
        self.tree.result = res.to_dict()
        log.info("tree search (%s, %s feedback) stopped: %s; answer=%r", self.s.algorithm, self.s.feedback, reason,
                 answer)
        return res
