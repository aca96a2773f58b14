"""LATS as a LangGraph graph: the tree lives in graph state as the node table; interrupt after two
iterations, resume with a new graph and a new backend object from the checkpoint."""

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph", reason="needs the graph extra: pip install 'agentic-infer[graph]'")
from langgraph.checkpoint.memory import MemorySaver  # noqa: E402

from agentic_infer.engines.tree import Game24LATSEnv, check_expression  # noqa: E402
from agentic_infer.integrations.langgraph_tree import ITERATE_NODE, lats_graph  # noqa: E402
from agentic_infer.testing import FakeLLM  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "engines" / "tree"))
from tree_fakes import Game24Policy  # noqa: E402


async def test_lats_graph_runs_and_keeps_the_tree_in_state():
    graph = lats_graph(FakeLLM(Game24Policy()), Game24LATSEnv("1 1 4 6"), checkpointer=MemorySaver(),
                       iterations=12, n_children=3)
    cfg = {"configurable": {"thread_id": "a"}}
    updates = [u async for u in graph.astream({"task": "1 1 4 6"}, cfg, stream_mode="updates")]
    iters = [u for u in updates if ITERATE_NODE in u]
    final = (await graph.aget_state(cfg)).values
    json.dumps(final)  # all state is JSON
    assert final["result"]["correct"] is True and check_expression(final["result"]["answer"], "1 1 4 6")
    visits = final["tree"]["nodes"][0]["visits"]
    assert visits == final["tree"]["budget"]["spent"]["iterations"]
    assert len(iters) in (visits, visits + 1)  # the last step may only find the budget spent


async def test_lats_graph_resumes_from_checkpoint():
    saver = MemorySaver()
    cfg = {"configurable": {"thread_id": "r"}}
    g1 = lats_graph(FakeLLM(Game24Policy()), Game24LATSEnv("1 1 4 6"), checkpointer=saver, iterations=8,
                    n_children=3, interrupt_after=[ITERATE_NODE])
    await g1.ainvoke({"task": "1 1 4 6"}, cfg)
    await g1.ainvoke(None, cfg)
    mid = (await g1.aget_state(cfg)).values
    assert mid["tree"]["nodes"][0]["visits"] == 2 and not mid.get("result")
    n_mid = len(mid["tree"]["nodes"])
    calls_mid = mid["tree"]["budget"]["spent"]["llm_calls"]
    g2 = lats_graph(FakeLLM(Game24Policy()), Game24LATSEnv("1 1 4 6"), checkpointer=saver, iterations=8,
                    n_children=3)
    final = await g2.ainvoke(None, cfg)
    t = final["tree"]
    assert [(n["id"], n["action"]) for n in t["nodes"][:n_mid]] == [(n["id"], n["action"]) for n in mid["tree"]["nodes"]]
    assert t["budget"]["spent"]["llm_calls"] >= calls_mid  # spend carried over, not reset
    assert t["nodes"][0]["visits"] == t["budget"]["spent"]["iterations"] <= 8
    assert final["result"]["feedback"] == "judge"
