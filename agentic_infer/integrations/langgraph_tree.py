"""LangGraph integration for LATS: one MCTS iteration per graph step, the tree kept in graph state.

    START ─▶ start ─▶ iterate ─┬─▶ iterate   (search not over)
                               └─▶ finish ─▶ END

The graph state holds the search as the serialisable node table (`Tree.to_dict()`: nodes, states,
reflections, budget spent), so any LangGraph checkpointer can store it and an interrupted search
resumes from the last finished iteration: a new graph (same environment, a new backend object)
with the same thread id and input None continues where the old one stopped.

    from langgraph.checkpoint.memory import MemorySaver
    from agentic_infer.integrations.langgraph_tree import lats_graph
    graph = lats_graph(llm, Game24LATSEnv("1 1 4 6"), checkpointer=MemorySaver(), iterations=10)
    final = await graph.ainvoke({"task": "1 1 4 6"}, {"configurable": {"thread_id": "p1"}})
    final["result"]["answer"], final["tree"]["nodes"][0]["visits"]

`env` must be the same task on resume (the tree's states are the environment's JSON states).
Not covered: RAP as a graph (same pattern; `TreeSearch.step` works for any MCTS search), parallel
iterations, human edits of the tree beyond `aupdate_state` with a valid node table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from agentic_infer.engines.tree.lats import LATSOptions, lats_search
from agentic_infer.engines.tree.table import Tree
from agentic_infer.integrations.langgraph import Interrupt, _langgraph

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

START_NODE, ITERATE_NODE, FINISH_NODE = "start", "iterate", "finish"


class TreeInput(TypedDict, total=False):
    task: str


class TreeState(TypedDict, total=False):
    task: str
    tree: dict[str, Any]  # Tree.to_dict()
    stop_reason: str | None
    done: bool
    result: dict[str, Any]


def lats_graph(llm: Any, env: Any, *, checkpointer: Any = None, interrupt_before: Interrupt = None,
               interrupt_after: Interrupt = None, name: str = "lats", options: LATSOptions | None = None,
               **search_options: Any) -> CompiledStateGraph:
    """LATS on `env` as a compiled graph; `search_options` go to `lats_search` (iterations, n_children,
    depth_limit, feedback, budget, ...)."""
    lg = _langgraph()
    lats_search(llm, env, options=options, **search_options)  # validate the options now, not mid-graph

    def search_for(tree: dict[str, Any] | None, task: str | None):
        return lats_search(llm, env, options=options, task=task,
                           tree=None if tree is None else Tree.from_dict(tree), **search_options)

    async def start(state: TreeState) -> dict[str, Any]:
        search = search_for(None, state.get("task"))
        search.tree.budget = search.meter.report()
        return {"tree": search.tree.to_dict(), "done": False, "stop_reason": None,
                "task": search.tree.task}

    async def iterate(state: TreeState) -> dict[str, Any]:
        search = search_for(state["tree"], state.get("task"))
        reason = await search.step()
        return {"tree": search.tree.to_dict(), "done": reason is not None, "stop_reason": reason}

    async def finish(state: TreeState) -> dict[str, Any]:
        search = search_for(state["tree"], state.get("task"))
        res = await search.finish(state.get("stop_reason") or "stopped")
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
    limit = search_options.get("iterations", 10)
    budget = search_options.get("budget")
    if budget is not None and getattr(budget, "iterations", None):
        limit = budget.iterations
    return graph.with_config(recursion_limit=int(limit or 1000) + 10)
