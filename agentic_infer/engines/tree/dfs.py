"""Depth-first search over the node table: `DFS` (the ToT-style search with pruning).

    search = make_search(env, config, meter, SearchSettings(algorithm="dfs", dfs_prune=0.3))

Goes depth-first through each node's children sorted by evaluation (one expansion = one iteration),
skipping children evaluated below `dfs_prune` and nodes at `depth_limit`, and stops at the first
terminal whose reward reaches `success_threshold`. Every evaluation is backed up once, so visits/values
mean what they mean in MCTS.
Not covered: iterative deepening, a value threshold that changes with depth.
"""

from __future__ import annotations

from agentic_infer.engines.tree.search import Stop, TreeSearch, node_score
from agentic_infer.engines.tree.table import Node


class DFS(TreeSearch):
    """Depth-first search with pruning (see the module docstring)."""

    algorithm = "dfs"

    async def _visit(self, node: Node) -> None:
        if node.terminal:
            value = await self.terminal_reward(node)
            self._check_stop(value)
            if value >= self.s.success_threshold:
                raise Stop("DFS found a terminal above the success threshold")
            return
        if node.depth >= self.s.depth_limit:
            return
        self._iteration_gate()
        kids = await self._evaluated(node)
        self.meter.spent.iterations += 1
        for k in sorted(kids, key=lambda c: (-node_score(c), c.id)):
            if node_score(k) >= self.s.dfs_prune:
                await self._visit(k)

    async def search(self) -> str:
        await self._visit(self.tree.root)
        return "search space exhausted"
