"""Tree search engines: LATS and RAP on one MCTS core (plus beam search and DFS).

- `base`: Environment / SearchConfig protocols, `Budget`, `Meter` (metered LLM), `BudgetExhausted`.
- `table`: the serialisable node table (`Tree`, `Node`).
- `search`: `TreeSearch` (MCTS with UCT, beam, DFS), `SearchSettings`, `SearchResult`, `uct`.
- `game24`: Game of 24 environment, solver and checker.
- `lats`: `run_lats`, `LATSConfig`, `LATSOptions`.
- `rap`: `run_rap`, `rap_search`, `finalise_rap`, `RAPConfig`, `RAPWeights`, `rap_aggregate`; tasks in
  `rap_tasks` and `blocksworld`.
- `lats_envs`: retrieval QA, Python programming and math environments for LATS.
- `viewer`: `render_html(tree)` self-contained HTML.
"""

from agentic_infer.engines.tree.base import (
    Budget,
    BudgetExhausted,
    Environment,
    Evaluation,
    Meter,
    Proposal,
    SearchConfig,
    SearchConfigBase,
)
from agentic_infer.engines.tree.game24 import Game24Env, Game24LATSEnv, check_expression, solve, solve_steps
from agentic_infer.engines.tree.lats import LATSConfig, LATSOptions, lats_search, run_lats
from agentic_infer.engines.tree.lats_envs import MathEnv, ProgramEnv, RetrievalQAEnv
from agentic_infer.engines.tree.rap import (
    RAPConfig,
    RAPOptions,
    RAPWeights,
    RAPWorldModel,
    finalise_rap,
    rap_aggregate,
    rap_search,
    run_rap,
)
from agentic_infer.engines.tree.rap_tasks import BlocksworldTask, Game24RAPTask, GSM8KTask
from agentic_infer.engines.tree.search import SearchResult, SearchSettings, TreeSearch, select_child, uct
from agentic_infer.engines.tree.table import Node, Tree
from agentic_infer.engines.tree.viewer import render_html

__all__ = [
    "BlocksworldTask", "Budget", "BudgetExhausted", "Environment", "Evaluation", "GSM8KTask", "Game24Env",
    "Game24LATSEnv", "Game24RAPTask", "LATSConfig", "LATSOptions", "MathEnv", "Meter", "Node", "ProgramEnv",
    "Proposal", "RAPConfig", "RAPOptions", "RAPWeights", "RAPWorldModel", "RetrievalQAEnv", "SearchConfig",
    "SearchConfigBase", "SearchResult", "SearchSettings", "Tree", "TreeSearch", "check_expression", "finalise_rap",
    "lats_search", "rap_aggregate", "rap_search", "render_html", "run_lats", "run_rap", "select_child", "solve",
    "solve_steps", "uct",
]
