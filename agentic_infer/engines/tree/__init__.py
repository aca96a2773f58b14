"""Tree search engines: LATS and RAP on one MCTS core (plus beam search and DFS).

- `base`: Environment / SearchConfig protocols, `Budget`, `Meter` (metered LLM), `BudgetExhausted`.
- `table`: the serialisable node table (`Tree`, `Node`).
- `search`: the algorithms' common base `TreeSearch`, `SearchSettings`, `SearchResult`.
- `mcts` (`MCTS`, `uct`, `select_child`), `beam` (`BeamSearch`), `dfs` (`DFS`): one search algorithm a file;
  `algorithms`: `ALGORITHMS` (name -> class) and `make_search(env, config, meter, settings)`.
- `game24`: Game of 24 environment and solver (its checker: `agentic_infer.verify.check_24`).
- `engine`: `TreeEngine` (run(example) -> Rollout recording every LLM call), `call_trajectories`.
- `lats`: the `LATS` engine, `LATSOptions`, `LATSConfig` (propose / evaluate / reflect).
- `rap`: the `RAP` engine, `RAPOptions`, `RAPWeights`, `RAPConfig`, `RAPWorldModel`, `rap_aggregate`; tasks in
  `rap_tasks` and `blocksworld`.
- `lats_envs`: retrieval QA, Python programming and math environments for LATS.
- `viewer`: `render_html(tree)` self-contained HTML.
"""

from agentic_infer.engines.tree.algorithms import ALGORITHMS, make_search
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
from agentic_infer.engines.tree.beam import BeamSearch
from agentic_infer.engines.tree.dfs import DFS
from agentic_infer.engines.tree.engine import TreeEngine, call_trajectories
from agentic_infer.engines.tree.game24 import Game24Env, Game24LATSEnv, solve, solve_steps
from agentic_infer.engines.tree.lats import LATS, LATSConfig, LATSOptions
from agentic_infer.engines.tree.lats_envs import MathEnv, ProgramEnv, RetrievalQAEnv
from agentic_infer.engines.tree.mcts import MCTS, select_child, uct
from agentic_infer.engines.tree.rap import (
    RAP,
    RAPConfig,
    RAPOptions,
    RAPWeights,
    RAPWorldModel,
    rap_aggregate,
)
from agentic_infer.engines.tree.rap_tasks import BlocksworldTask, Game24RAPTask, GSM8KTask
from agentic_infer.engines.tree.search import SearchResult, SearchSettings, TreeSearch
from agentic_infer.engines.tree.table import Node, Tree
from agentic_infer.engines.tree.viewer import render_html

__all__ = [
    "ALGORITHMS", "DFS", "LATS", "MCTS", "RAP", "BeamSearch", "BlocksworldTask", "Budget", "BudgetExhausted", "Environment", "Evaluation", "GSM8KTask",
    "Game24Env", "Game24LATSEnv", "Game24RAPTask", "LATSConfig", "LATSOptions", "MathEnv", "Meter", "Node",
    "ProgramEnv", "Proposal", "RAPConfig", "RAPOptions", "RAPWeights", "RAPWorldModel", "RetrievalQAEnv",
    "SearchConfig", "SearchConfigBase", "SearchResult", "SearchSettings", "Tree", "TreeEngine", "TreeSearch",
    "call_trajectories", "make_search", "rap_aggregate", "render_html", "select_child", "solve", "solve_steps", "uct",
]
