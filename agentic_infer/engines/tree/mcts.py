"""Monte Carlo tree search with UCT (the search of LATS and RAP): `MCTS`, `uct`, `select_child`.

    search = make_search(env, config, meter, SearchSettings(algorithm="mcts", n_children=5), task="1 1 4 6")
    result = await search.run()       # or `await search.step()` one iteration at a time (LangGraph)

One iteration: SELECT from the root by UCT(c) = value(c) + w·sqrt(ln N(parent) / N(c)) with
`value` the MEAN backed-up reward (unvisited children first, best evaluation/prior first);
children met on the way are materialised on demand (lazy expansion: `lazy=True` creates children
from proposals and runs the environment step + evaluation only when a child is first chosen;
`lazy=False` (LATS) executes and evaluates all n siblings at expansion, evaluations batched);
EXPAND the leaf (one `propose` call for n children) and SIMULATE: keep expanding and following the
best-evaluated child until a terminal or `depth_limit` (with `rollout=False`, stop after one
level); the reward is the terminal reward (the judge's, or the gold one with feedback="oracle")
or the leaf's evaluation at the depth limit; `reward_mode="path_mean"` (RAP) backs up the mean of
the path's rewards instead. BACKPROPAGATE a running mean into every node on the path (root
included, so root visits = completed iterations).
Not covered: parallel (virtual-loss) MCTS, progressive widening, transposition tables.
"""

from __future__ import annotations

import math

from agentic_infer.engines.tree.base import BudgetExhausted
from agentic_infer.engines.tree.search import Stop, TreeSearch, node_score
from agentic_infer.engines.tree.table import Node, Tree


def uct(parent: Node, child: Node, w: float) -> float:
    """UCT with the mean value as exploitation term; +inf for an unvisited child."""
    if child.visits == 0:
        return math.inf
    return child.value + w * math.sqrt(math.log(max(parent.visits, 1)) / child.visits)


def select_child(tree: Tree, node: Node, w: float) -> Node:
    """Unvisited children first (best evaluation, else best prior, then lowest id); else max UCT."""
    kids = tree.children(node)
    unvisited = [c for c in kids if c.visits == 0]
    if unvisited:
        return max(unvisited, key=lambda c: (node_score(c), -c.id))
    return max(kids, key=lambda c: (uct(node, c, w), -c.id))


class MCTS(TreeSearch):
    """MCTS iterations until a stop (see the module docstring); `step()` runs one, for checkpointed graphs."""

    algorithm = "mcts"

    async def iteration(self) -> None:
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
                best = max(kids, key=lambda c: (node_score(c), -c.id))
                await self.materialise(node, [best])
            else:
                best = max(kids, key=lambda c: (node_score(c), -c.id))
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

    async def step(self) -> str | None:
        """One MCTS iteration; the stop reason when the search is over, else None. The tree's
        `budget` is updated, so the node table alone is enough to resume (LangGraph checkpoints)."""
        reason: str | None = None
        try:
            if self.tree.root.terminal:
                raise Stop(self._root_stop())
            self._iteration_gate()
            before, calls = len(self.tree.nodes), self.meter.spent.llm_calls
            await self.iteration()
            grew = len(self.tree.nodes) > before or self.meter.spent.llm_calls > calls
            self._idle = 0 if grew else getattr(self, "_idle", 0) + 1
            if self._fully_explored() and not grew:
                reason = "search space exhausted"
            elif self._idle >= 1000:  # only cached terminals keep being selected: nothing left to learn
                reason = "no progress in 1000 iterations"
        except Stop as e:
            reason = e.reason
        except BudgetExhausted as e:
            reason = f"budget {e.which} exhausted"
        self.tree.budget = self.meter.report()
        return reason

    async def search(self) -> str:
        while True:
            stop = await self.step()
            if stop is not None:
                return stop

    def _fully_explored(self) -> bool:
        return all(n.terminal or (n.children and n.materialised) or n.depth >= self.s.depth_limit
                   for n in self.tree.nodes if n.materialised) and all(n.materialised for n in self.tree.nodes)
