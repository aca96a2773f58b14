"""Search algorithms over the node table: MCTS (UCT), beam search and DFS.

    search = TreeSearch(env, config, meter, SearchSettings(algorithm="mcts", n_children=5), task="1 1 4 6")
    result = await search.run()       # SearchResult: answer, node, correct (scored afterwards), tree, budget

The engines (`lats.LATS`, `rap.RAP`) build a search per example and turn its result and the
meter's recorded calls into a Rollout (`engine.py`).

MCTS, one iteration: SELECT from the root by UCT(c) = value(c) + w·sqrt(ln N(parent) / N(c)) with
`value` the MEAN backed-up reward (unvisited children first, best evaluation/prior first);
children met on the way are materialised on demand (lazy expansion: `lazy=True` creates children
from proposals and runs the environment step + evaluation only when a child is first chosen;
`lazy=False` (LATS) executes and evaluates all n siblings at expansion, evaluations batched);
EXPAND the leaf (one `propose` call for n children) and SIMULATE: keep expanding and following the
best-evaluated child until a terminal or `depth_limit` (with `rollout=False`, stop after one
level); the reward is the terminal reward (the judge's, or the gold one with feedback="oracle")
or the leaf's evaluation at the depth limit; `reward_mode="path_mean"` (RAP) backs up the mean of
the path's rewards instead. BACKPROPAGATE a running mean into every node on the path (root
included, so root visits = completed iterations). A failed terminal calls `config.on_failure`
(LATS writes a reflection there).

Beam search keeps the `beam_width` best nodes per depth (by evaluation, or path mean); DFS goes
depth-first through children sorted by evaluation, pruning those below `dfs_prune`, and stops at the
first terminal whose reward reaches the success threshold. Both back up every evaluation so the
table's visits/values mean the same as in MCTS.

Feedback: "judge" (default; the environment's gold reward is only used after the search to score
the chosen answer) or "oracle" (the gold reward is the terminal reward and a solved terminal stops
the search, like the LATS reference code). The result and the saved tree record which one ran.
A budget limit reached mid-iteration ends the search; the unfinished iteration is not backed up.
Not covered: parallel (virtual-loss) MCTS, progressive widening, transposition tables.
"""

from __future__ import annotations

import logging
import math
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

ALGORITHMS = ("mcts", "beam", "dfs")


@dataclass(frozen=True)
class SearchSettings:
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

        if self.algorithm not in ALGORITHMS:
            raise bad("algorithm", f"must be one of {ALGORITHMS}", "pick mcts, beam or dfs")
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


def uct(parent: Node, child: Node, w: float) -> float:
    """UCT with the mean value as exploitation term; +inf for an unvisited child."""
    if child.visits == 0:
        return math.inf
    return child.value + w * math.sqrt(math.log(max(parent.visits, 1)) / child.visits)


def _score(n: Node) -> float:
    return n.reward if n.reward is not None else n.prior


def select_child(tree: Tree, node: Node, w: float) -> Node:
    """Unvisited children first (best evaluation, else best prior, then lowest id); else max UCT."""
    kids = tree.children(node)
    unvisited = [c for c in kids if c.visits == 0]
    if unvisited:
        return max(unvisited, key=lambda c: (_score(c), -c.id))
    return max(kids, key=lambda c: (uct(node, c, w), -c.id))


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


class _Stop(Exception):
    def __init__(self, reason: str):
        self.reason = reason


class TreeSearch:
    """One search of `env` guided by `config`, LLM calls through `meter`; resumable from `tree`."""

    def __init__(self, env: Environment, config: SearchConfig, meter: Meter, settings: SearchSettings | None = None,
                 *, task: str = "", tree: Tree | None = None):
        self.env, self.config, self.meter = env, config, meter
        self.s = settings or SearchSettings()
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
            raise _Stop("solved (oracle feedback)")
        if self.s.feedback == "judge" and self.s.stop_at is not None and value >= self.s.stop_at:
            raise _Stop(f"judge reward >= {self.s.stop_at}")

    def _backprop(self, path: list[Node], leaf_reward: float) -> float:
        if self.s.reward_mode == "path_mean" and len(path) > 1:
            rewards = [n.reward or 0.0 for n in path[1:-1]] + [leaf_reward]
            r = sum(rewards) / len(rewards)
        else:
            r = leaf_reward
        for n in path:
            n.backprop(r)
        return r

    # -- MCTS --------------------------------------------------------------------------------------
    async def mcts_iteration(self) -> None:
        node, path = self.tree.root, [self.tree.root]
        while node.children and not node.terminal:
            child = select_child(self.tree, node, self.s.exploration_weight)
            await self.materialise(node, [child])
            node = child
            path.append(node)
        while not node.terminal and node.depth < self.s.depth_limit:
            kids = await self.expand(node)
            if not kids:
                break
            if self.s.lazy:
                best = max(kids, key=lambda c: (_score(c), -c.id))
                await self.materialise(node, [best])
            else:
                best = max(kids, key=lambda c: (_score(c), -c.id))
            node = best
            path.append(node)
            if not self.s.rollout:
                break
        leaf = 0.0
        if node.terminal:
            leaf = await self.terminal_reward(node)
        else:
            leaf = node.reward or 0.0
        self._backprop(path, leaf)
        self.meter.spent.iterations += 1
        if node.terminal:
            self._check_stop(leaf)

    # -- beam / DFS --------------------------------------------------------------------------------
    def _path_score(self, n: Node) -> float:
        if self.s.reward_mode == "path_mean":
            rs = [p.reward or 0.0 for p in self.tree.path(n)[1:]]
            return sum(rs) / max(1, len(rs))
        return _score(n)

    async def _evaluated(self, parent: Node) -> list[Node]:
        kids = await self.expand(parent)
        await self.materialise(parent, kids)  # beam and DFS need every child's evaluation
        for k in kids:
            if k.visits == 0:
                self._backprop(self.tree.path(k), k.reward or 0.0)
        return kids

    async def beam(self) -> None:
        beam = [self.tree.root]
        for _ in range(self.s.depth_limit):
            self._iteration_gate()
            cands: list[Node] = []
            for b in beam:
                cands += [b] if b.terminal else await self._evaluated(b)
            if not cands:
                break
            beam = sorted(cands, key=lambda c: (-self._path_score(c), c.id))[: self.s.beam_width]
            for b in beam:
                if b.terminal:
                    self._check_stop(await self.terminal_reward(b))
            self.meter.spent.iterations += 1
            if all(b.terminal for b in beam):
                break

    async def dfs(self, node: Node) -> None:
        if node.terminal:
            value = await self.terminal_reward(node)
            self._check_stop(value)
            if value >= self.s.success_threshold:
                raise _Stop("DFS found a terminal above the success threshold")
            return
        if node.depth >= self.s.depth_limit:
            return
        self._iteration_gate()
        kids = await self._evaluated(node)
        self.meter.spent.iterations += 1
        for k in sorted(kids, key=lambda c: (-_score(c), c.id)):
            if _score(k) >= self.s.dfs_prune:
                await self.dfs(k)

    def _iteration_gate(self) -> None:
        limit = self.meter.budget.iterations
        if limit is not None and self.meter.spent.iterations >= limit:
            raise _Stop("budget iterations exhausted")
        self.meter.check()

    # -- driver ------------------------------------------------------------------------------------
    def _root_stop(self) -> str:
        return "no valid action at the root" if self.tree.root.details.get("dead_end") else "root is terminal"

    async def step(self) -> str | None:
        """One MCTS iteration; the stop reason when the search is over, else None. The tree's
        `budget` is updated, so the node table alone is enough to resume (LangGraph checkpoints)."""
        reason: str | None = None
        try:
            if self.tree.root.terminal:
                raise _Stop(self._root_stop())
            self._iteration_gate()
            before, calls = len(self.tree.nodes), self.meter.spent.llm_calls
            await self.mcts_iteration()
            grew = len(self.tree.nodes) > before or self.meter.spent.llm_calls > calls
            self._idle = 0 if grew else getattr(self, "_idle", 0) + 1
            if self._fully_explored() and not grew:
                reason = "search space exhausted"
            elif self._idle >= 1000:  # only cached terminals keep being selected: nothing left to learn
                reason = "no progress in 1000 iterations"
        except _Stop as e:
            reason = e.reason
        except BudgetExhausted as e:
            reason = f"budget {e.which} exhausted"
        self.tree.budget = self.meter.report()
        return reason

    async def run(self) -> SearchResult:
        reason = "search space exhausted"
        try:
            if self.tree.root.terminal:
                raise _Stop(self._root_stop())
            if self.s.algorithm == "mcts":
                while True:
                    stop = await self.step()
                    if stop is not None:
                        reason = stop
                        break
            elif self.s.algorithm == "beam":
                await self.beam()
                reason = "beam finished"
            else:
                await self.dfs(self.tree.root)
        except _Stop as e:
            reason = e.reason
        except BudgetExhausted as e:
            reason = f"budget {e.which} exhausted"
        return await self.finish(reason)

    def _fully_explored(self) -> bool:
        return all(n.terminal or (n.children and n.materialised) or n.depth >= self.s.depth_limit
                   for n in self.tree.nodes if n.materialised) and all(n.materialised for n in self.tree.nodes)

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
