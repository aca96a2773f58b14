"""The tree-search algorithms by name, and `make_search`, which builds the one that settings name.

    search = make_search(env, config, meter, SearchSettings(algorithm="beam", beam_width=3), task="1 1 4 6")
    result = await search.run()

A new algorithm is a `search.TreeSearch` subclass in its own file, added to `ALGORITHMS` here.
"""

from __future__ import annotations

from agentic_infer.engines.tree.base import Environment, Meter, SearchConfig
from agentic_infer.engines.tree.beam import BeamSearch
from agentic_infer.engines.tree.dfs import DFS
from agentic_infer.engines.tree.mcts import MCTS
from agentic_infer.engines.tree.search import SearchSettings, TreeSearch
from agentic_infer.engines.tree.table import Tree

ALGORITHMS: dict[str, type[TreeSearch]] = {"mcts": MCTS, "beam": BeamSearch, "dfs": DFS}


def make_search(env: Environment, config: SearchConfig, meter: Meter, settings: SearchSettings | None = None,
                *, task: str = "", tree: Tree | None = None) -> TreeSearch:
    """The search `settings.algorithm` names (default MCTS) over `env`, guided by `config`, calls through
    `meter`; `tree` resumes a saved node table."""
    settings = settings or SearchSettings()
    return ALGORITHMS[settings.algorithm](env, config, meter, settings, task=task, tree=tree)
