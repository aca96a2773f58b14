"""LangGraph integration for tree search (LATS, RAP): one MCTS iteration per graph step, the tree
kept in graph state.

    START ─▶ start ─▶ iterate ─┬─▶ iterate   (search not over)
                               └─▶ finish ─▶ END

The graph state holds the search as the serialisable node table (`Tree.to_dict()`: nodes, states,
reflections, budget spent) and the LLM calls recorded so far (`calls`: one Trajectory dict per sampled
completion, appended by each step), so any LangGraph checkpointer can store it and an interrupted search
resumes from the last finished iteration: a new graph (same environment / task, a new backend object)
with the same thread id and input None continues where the old one stopped. The finish node writes
the engine's Rollout (`rollout`, as a dict): the same record `LATS.run` / `RAP.run` return.

    from langgraph.checkpoint.memory import MemorySaver
    from agentic_infer.integrations.langgraph_tree import lats_graph, rap_graph
    graph = lats_graph(llm, Game24LATSEnv("1 1 4 6"), checkpointer=MemorySaver(), iterations=10)
    final = await graph.ainvoke({"task": "1 1 4 6"}, {"configurable": {"thread_id": "p1"}})
    final["rollout"]["answer"], final["tree"]["nodes"][0]["visits"]
    graph = rap_graph(llm, Game24RAPTask("1 1 4 6"), checkpointer=MemorySaver(), iterations=10, n_actions=3)
    final = await graph.ainvoke({}, {"configurable": {"thread_id": "p2"}})
    final["rollout"]["metadata"]["tree"]["aggregation"]      # RAP-Aggregation runs in the finish node

Both graphs come from one builder (`tree_graph`) over a tree engine (`LATS`, `RAP`) whose factory
returns the one environment / task of the graph. `env` / `task` must be the same task on resume (the
tree's states are its JSON states).
Not covered: beam search / DFS as graphs (they are not iteration-by-iteration), parallel
iterations, human edits of the tree beyond `aupdate_state` with a valid node table.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from agentic_infer.engines.tree.engine import TreeEngine
from agentic_infer.engines.tree.lats import LATS, LATSOptions
from agentic_infer.engines.tree.rap import RAP, RAPOptions
from agentic_infer.engines.tree.search import TreeSearch
from agentic_infer.engines.tree.table import Tree
from agentic_infer.integrations.langgraph import Interrupt, _langgraph
from agentic_infer.types import Trajectory

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

START_NODE, ITERATE_NODE, FINISH_NODE = "start", "iterate", "finish"


class TreeInput(TypedDict, total=False):
    task: str


class TreeState(TypedDict, total=False):
    task: str
    tree: dict[str, Any]  # Tree.to_dict()
    calls: Annotated[list[dict[str, Any]], operator.add]  # Trajectory.to_dict() of every call, in order
    stop_reason: str | None
    done: bool
    rollout: dict[str, Any]  # Rollout.to_dict()


def tree_graph(engine: TreeEngine, *, checkpointer: Any = None, interrupt_before: Interrupt = None,
               interrupt_after: Interrupt = None, name: str = "tree_search") -> CompiledStateGraph:
    """The start → iterate* → finish graph over a tree engine's MCTS search of the example
    {"question": <the input's task>}; the finish node writes the engine's Rollout."""
    lg = _langgraph()

    def example(state: TreeState) -> Mapping[str, Any]:
        return {"question": state.get("task") or ""}

    def load(state: TreeState, *, with_calls: bool) -> TreeSearch:
        calls = [Trajectory.from_dict(c) for c in state.get("calls") or ()] if with_calls else ()
        return engine.search(example(state), tree=Tree.from_dict(state["tree"]), calls=calls)

    async def start(state: TreeState) -> dict[str, Any]:
        search = engine.search(example(state))
        search.tree.budget = search.meter.report()
        return {"tree": search.tree.to_dict(), "done": False, "stop_reason": None, "task": search.tree.task,
                "calls": [t.to_dict() for t in search.meter.calls]}

    async def iterate(state: TreeState) -> dict[str, Any]:
        search = load(state, with_calls=False)  # the new calls only: the state's list is appended to
        reason = await search.step()
        return {"tree": search.tree.to_dict(), "done": reason is not None, "stop_reason": reason,
                "calls": [t.to_dict() for t in search.meter.calls]}

    async def finish(state: TreeState) -> dict[str, Any]:
        search = load(state, with_calls=True)
        rollout = await engine.rollout(search, await search.finish(state.get("stop_reason") or "stopped"),
                                       example(state))
        return {"tree": search.tree.to_dict(), "rollout": rollout.to_dict()}

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
    return graph.with_config(recursion_limit=int(engine.options.search_budget().iterations or 1000) + 10)


def lats_graph(llm: Any, env: Any, *, checkpointer: Any = None, interrupt_before: Interrupt = None,
               interrupt_after: Interrupt = None, name: str = "lats", options: LATSOptions | None = None,
               **overrides: Any) -> CompiledStateGraph:
    """LATS on `env` as a compiled graph; `overrides` are `LATSOptions` fields (iterations, n_children,
    depth_limit, feedback, budget, ...), validated now, not mid-graph."""
    return tree_graph(LATS(llm, lambda _example: env, options, **overrides), checkpointer=checkpointer,
                      interrupt_before=interrupt_before, interrupt_after=interrupt_after, name=name)


def rap_graph(llm: Any, task: Any, *, checkpointer: Any = None, interrupt_before: Interrupt = None,
              interrupt_after: Interrupt = None, name: str = "rap", options: RAPOptions | None = None,
              **overrides: Any) -> CompiledStateGraph:
    """RAP on `task` (a RAP task, e.g. `Game24RAPTask`) as a compiled graph; `overrides` are `RAPOptions`
    fields (iterations, n_actions, depth_limit, feedback, budget, aggregate, keep_top, ...). The graph
    input's "task" text is ignored: the task object is the task."""
    return tree_graph(RAP(llm, lambda _example: task, options, **overrides), checkpointer=checkpointer,
                      interrupt_before=interrupt_before, interrupt_after=interrupt_after, name=name)
