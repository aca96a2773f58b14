"""LangGraph integration for tree search (LATS, RAP): one MCTS iteration per graph step, the tree
kept in graph state.

    START ─▶ start ─▶ iterate ─┬─▶ iterate   (search not over)
                               └─▶ finish ─▶ END

The graph state holds the search as the serialisable node table (`Tree.to_dict()`: nodes, states,
reflections, budget spent), so any LangGraph checkpointer can store it and an interrupted search
resumes from the last finished iteration: a new graph (same environment / task, a new backend
object) with the same thread id and input None continues where the old one stopped.

    from langgraph.checkpoint.memory import MemorySaver
    from agentic_infer.integrations.langgraph_tree import lats_graph, rap_graph
    graph = lats_graph(llm, Game24LATSEnv("1 1 4 6"), checkpointer=MemorySaver(), iterations=10)
    final = await graph.ainvoke({"task": "1 1 4 6"}, {"configurable": {"thread_id": "p1"}})
    final["result"]["answer"], final["tree"]["nodes"][0]["visits"]
    graph = rap_graph(llm, Game24RAPTask("1 1 4 6"), checkpointer=MemorySaver(), iterations=10, n_actions=3)
    final = await graph.ainvoke({}, {"configurable": {"thread_id": "p2"}})
    final["result"]["aggregation"]      # RAP-Aggregation runs in the finish node

Both graphs come from one builder (`tree_graph`) that takes a factory of `TreeSearch` objects
(fresh, or resumed from a node table) and an optional async post-processing of the result.
`env` / `task` must be the same task on resume (the tree's states are its JSON states).
Not covered: beam search / DFS as graphs (they are not iteration-by-iteration), parallel
iterations, human edits of the tree beyond `aupdate_state` with a valid node table.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypedDict

from agentic_infer.engines.tree.lats import LATSOptions, lats_search
from agentic_infer.engines.tree.rap import RAPOptions, finalise_rap, rap_search
from agentic_infer.engines.tree.search import SearchResult, TreeSearch
from agentic_infer.engines.tree.table import Tree
from agentic_infer.integrations.langgraph import Interrupt, _langgraph

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

START_NODE, ITERATE_NODE, FINISH_NODE = "start", "iterate", "finish"

SearchFactory = Callable[[Tree | None, str | None], TreeSearch]
Finaliser = Callable[[SearchResult], Awaitable[SearchResult]]


class TreeInput(TypedDict, total=False):
    task: str


class TreeState(TypedDict, total=False):
    task: str
    tree: dict[str, Any]  # Tree.to_dict()
    stop_reason: str | None
    done: bool
    result: dict[str, Any]


def _recursion_limit(search_options: dict[str, Any]) -> int:
    limit = search_options.get("iterations", 10)
    budget = search_options.get("budget")
    if budget is not None and getattr(budget, "iterations", None):
        limit = budget.iterations
    return int(limit or 1000) + 10


def tree_graph(search_for: SearchFactory, *, finalise: Finaliser | None = None, checkpointer: Any = None,
               interrupt_before: Interrupt = None, interrupt_after: Interrupt = None, name: str = "tree_search",
               recursion_limit: int = 1010) -> CompiledStateGraph:
    """The start → iterate* → finish graph over any MCTS `TreeSearch`: `search_for(tree, task)` builds
    the search (fresh when `tree` is None, else resumed from that node table); `finalise` post-processes
    the result in the finish node (e.g. RAP-Aggregation)."""
    lg = _langgraph()

    def load(state: TreeState) -> TreeSearch:
        return search_for(Tree.from_dict(state["tree"]), state.get("task"))

    async def start(state: TreeState) -> dict[str, Any]:
        search = search_for(None, state.get("task"))
        search.tree.budget = search.meter.report()
        return {"tree": search.tree.to_dict(), "done": False, "stop_reason": None, "task": search.tree.task}

    async def iterate(state: TreeState) -> dict[str, Any]:
        search = load(state)
        reason = await search.step()
        return {"tree": search.tree.to_dict(), "done": reason is not None, "stop_reason": reason}

    async def finish(state: TreeState) -> dict[str, Any]:
        res = await load(state).finish(state.get("stop_reason") or "stopped")
        if finalise is not None:
            res = await finalise(res)
        return {"tree": res.tree.to_dict(), "result": res.to_dict()}

    def route(state: TreeState) -> str:
        return FINISH_NODE if state["done"] else ITERATE_NODE

    builder = lg.StateGraph(TreeState, input_schema=TreeInput, output_schema=TreeState)
    builder.add_node(START_NODE, start)
    builder.add_node(ITERATE_NODE, iterate)
    builder.add_node(FINISH_NODE, finish)
    builder.add_edge(lg.START, START_NODE)
    builder.add_edge(START_NODE, ITERATE_NODE)
    builder.add_conditional_edges(ITERATE_NODE, route, [ITERATE_NODE, FINISH_NODE])
    builder.add_edge(FINISH_NODE, lg.END)
    graph = builder.compile(checkpointer=checkpointer, interrupt_before=interrupt_before,
                            interrupt_after=interrupt_after, name=name)
    return graph.with_config(recursion_limit=recursion_limit)


def lats_graph(llm: Any, env: Any, *, checkpointer: Any = None, interrupt_before: Interrupt = None,
               interrupt_after: Interrupt = None, name: str = "lats", options: LATSOptions | None = None,
               **search_options: Any) -> CompiledStateGraph:
    """LATS on `env` as a compiled graph; `search_options` go to `lats_search` (iterations, n_children,
    depth_limit, feedback, budget, ...)."""
    lats_search(llm, env, options=options, **search_options)  # validate the options now, not mid-graph

    def search_for(tree: Tree | None, task: str | None) -> TreeSearch:
        return lats_search(llm, env, options=options, task=task, tree=tree, **search_options)

    return tree_graph(search_for, checkpointer=checkpointer, interrupt_before=interrupt_before,
                      interrupt_after=interrupt_after, name=name, recursion_limit=_recursion_limit(search_options))


def rap_graph(llm: Any, task: Any, *, checkpointer: Any = None, interrupt_before: Interrupt = None,
              interrupt_after: Interrupt = None, name: str = "rap", options: RAPOptions | None = None,
              aggregate: str | None = "value", keep_top: float | None = None,
              **search_options: Any) -> CompiledStateGraph:
    """RAP on `task` (a RAP task, e.g. `Game24RAPTask`) as a compiled graph; `search_options` go to
    `rap_search` (iterations, n_actions, depth_limit, feedback, budget, ...); `aggregate` /
    `keep_top` as in `run_rap`. The graph input's "task" text is ignored: the task object is the task."""
    rap_search(llm, task, options=options, **search_options)  # validate the options now, not mid-graph

    def search_for(tree: Tree | None, _task: str | None) -> TreeSearch:
        return rap_search(llm, task, options=options, tree=tree, **search_options)

    async def finalise(res: SearchResult) -> SearchResult:
        return await finalise_rap(res, task, aggregate=aggregate, keep_top=keep_top)

    return tree_graph(search_for, finalise=finalise, checkpointer=checkpointer, interrupt_before=interrupt_before,
                      interrupt_after=interrupt_after, name=name, recursion_limit=_recursion_limit(search_options))
