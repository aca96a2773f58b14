"""Beam search over the node table: `BeamSearch` keeps the `beam_width` best nodes per depth.

    search = make_search(env, config, meter, SearchSettings(algorithm="beam", beam_width=3))

Each depth (one iteration, up to `depth_limit`) expands and evaluates every non-terminal node of the
beam, then keeps the `beam_width` best candidates by evaluation (`reward_mode="path_mean"`: by the mean
evaluation of the path), terminals of the beam carried over and given their terminal reward; it ends when
the whole beam is terminal. Every evaluation is backed up once, so visits/values mean what they mean in MCTS.
Not covered: diverse or stochastic beams, length normalisation.
"""

from __future__ import annotations

from agentic_infer.engines.tree.search import TreeSearch, node_score
from agentic_infer.engines.tree.table import Node


class BeamSearch(TreeSearch):
    """Breadth-wise search keeping the best `beam_width` nodes per depth (see the module docstring)."""

    algorithm = "beam"

    def _path_score(self, n: Node) -> float:
        if self.s.reward_mode == "path_mean":
            rs = [p.reward or 0.0 for p in self.tree.path(n)[1:]]
            return sum(rs) / max(1, len(rs))
        return node_score(n)

    async def search(self) -> str:
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
        return "beam finished"
