"""LATS and RAP as LangGraph graphs: the tree lives in graph state as the node table; interrupt after two
iterations, resume with a new graph and a new backend object from the checkpoint (RAP: a SQLite
checkpoint through a new connection, same tree and result as an uninterrupted run)."""

import json
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph", reason="needs the graph extra: pip install 'agentic-infer[graph]'")
aio = pytest.importorskip("langgraph.checkpoint.sqlite.aio",
                          reason="needs langgraph-checkpoint-sqlite and aiosqlite (the graph extra)")
from langgraph.checkpoint.memory import MemorySaver  # noqa: E402

from agentic_infer.engines.tree import RAP, Game24LATSEnv, Game24RAPTask, call_trajectories  # noqa: E402
from agentic_infer.integrations.langgraph_tree import ITERATE_NODE, lats_graph, rap_graph  # noqa: E402
from agentic_infer.testing import FakeLLM  # noqa: E402
from agentic_infer.types import Rollout  # noqa: E402
from agentic_infer.verify import check_24  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1] / "engines" / "tree"))
from tree_fakes import Game24Policy, Game24RAPPolicy, all_steps, searched  # noqa: E402


async def test_lats_graph_runs_and_keeps_the_tree_in_state():
    graph = lats_graph(FakeLLM(Game24Policy()), Game24LATSEnv("1 1 4 6"), checkpointer=MemorySaver(),
                       iterations=12, n_children=3)
    cfg = {"configurable": {"thread_id": "a"}}
    updates = [u async for u in graph.astream({"task": "1 1 4 6"}, cfg, stream_mode="updates")]
    iters = [u for u in updates if ITERATE_NODE in u]
    final = (await graph.aget_state(cfg)).values
    json.dumps(final)  # all state is JSON
    rollout = Rollout.from_dict(final["rollout"])
    assert rollout.rewards["correct"] == 1.0 and check_24(rollout.answer, "1 1 4 6")
    assert rollout.engine == "lats" and rollout.metadata["tree"]["stop_reason"]
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
    rollout = Rollout.from_dict(final["rollout"])
    assert rollout.metadata["tree"]["feedback"] == "judge"
    # the calls made before the interrupt were kept in graph state: every node's call ids resolve
    calls = call_trajectories(rollout)
    assert all(c in calls for n in t["nodes"] for c in n["calls"])
    assert sum(len(n["calls"]) for n in t["nodes"]) == len(calls) == len(final["calls"])


# -- RAP ------------------------------------------------------------------------------------------

N_ACTIONS = 3


class CallOrderFreeRAPPolicy(Game24RAPPolicy):
    """Game24RAPPolicy whose action samples depend only on the prompt and the sample's index in its
    call (a per-prompt count modulo n), not on how many calls came before, so a resumed search with a
    new backend object sees exactly what an uninterrupted one sees."""

    def __init__(self):
        super().__init__()
        self.seen: dict[str, int] = {}

    def __call__(self, prompt: str) -> str:
        if "Propose ONE operation" not in prompt:
            return super().__call__(prompt)
        i = self.seen.get(prompt, 0)
        self.seen[prompt] = i + 1
        nums = _rap_numbers(prompt)
        steps = all_steps(nums)
        return steps[((i % N_ACTIONS) * 5 + 2) % len(steps)]


def _rap_numbers(prompt: str) -> list[str]:
    return re.findall(r"Numbers(?: left)?: ([-\d/ ]+)\.", prompt)[-1].split()


def rap_llm() -> FakeLLM:
    return FakeLLM(CallOrderFreeRAPPolicy())


def table(tree: dict) -> list[tuple]:
    return [(n["id"], n["parent"], n["action"], n["visits"], round(n["value"], 9), n["reward"]) for n in tree["nodes"]]


def spent(tree: dict) -> tuple:
    s = tree["budget"]["spent"]
    return s["iterations"], s["llm_calls"], s["prompt_tokens"], s["completion_tokens"]


RAP_OPTS = {"iterations": 6, "n_actions": N_ACTIONS}


def rollout_of(final: dict) -> Rollout:
    return Rollout.from_dict(final["rollout"])


async def test_rap_graph_equals_the_engine():
    res, tree = await searched(RAP(rap_llm(), lambda _example: Game24RAPTask("1 1 4 6"), **RAP_OPTS),
                               {"question": "1 1 4 6"})
    graph = rap_graph(rap_llm(), Game24RAPTask("1 1 4 6"), checkpointer=MemorySaver(), **RAP_OPTS)
    final = await graph.ainvoke({"task": "1 1 4 6"}, {"configurable": {"thread_id": "rap"}})
    json.dumps(final)
    got = rollout_of(final)
    assert got.answer == res.answer and got.rewards == res.rewards
    assert got.metadata["tree"]["aggregation"] == res.metadata["tree"]["aggregation"]
    assert table(final["tree"]) == table(tree.to_dict())
    def sampled(r: Rollout) -> list[tuple[str, str]]:
        return [(s.metadata.get("purpose", t.metadata.get("purpose")), s.text) for t in r.trajectories
                for s in t.segments if s.kind == "model"]

    assert sampled(got) == sampled(res)  # the same calls, recorded alike, chosen path first
    assert final["tree"]["config"]["engine"] == "rap"
    assert final["tree"]["nodes"][0]["visits"] == final["tree"]["budget"]["spent"]["iterations"]


async def test_rap_graph_resumes_from_sqlite_with_the_same_result(tmp_path):
    db = str(tmp_path / "rap.sqlite")
    cfg = {"configurable": {"thread_id": "rap-1"}}
    async with aio.AsyncSqliteSaver.from_conn_string(db) as saver:
        g1 = rap_graph(rap_llm(), Game24RAPTask("1 1 4 6"), checkpointer=saver, interrupt_after=[ITERATE_NODE],
                       **RAP_OPTS)
        await g1.ainvoke({"task": "1 1 4 6"}, cfg)
        await g1.ainvoke(None, cfg)
        snap = await g1.aget_state(cfg)
    mid = snap.values
    assert snap.next == (ITERATE_NODE,) and not mid.get("result")
    assert mid["tree"]["nodes"][0]["visits"] == 2

    # a new process, in effect: new backend object, new graph, new connection to the same file
    async with aio.AsyncSqliteSaver.from_conn_string(db) as saver:
        g2 = rap_graph(rap_llm(), Game24RAPTask("1 1 4 6"), checkpointer=saver, **RAP_OPTS)
        resumed = await g2.ainvoke(None, cfg)
    ref = await rap_graph(rap_llm(), Game24RAPTask("1 1 4 6"), checkpointer=MemorySaver(), **RAP_OPTS).ainvoke(
        {"task": "1 1 4 6"}, {"configurable": {"thread_id": "ref"}})
    n_mid = len(mid["tree"]["nodes"])
    assert [r[:3] for r in table(resumed["tree"])[:n_mid]] == [r[:3] for r in table(mid["tree"])]  # tree kept
    assert table(resumed["tree"]) == table(ref["tree"])
    assert spent(resumed["tree"]) == spent(ref["tree"])  # spend carried over, not reset or double-counted
    got, want = rollout_of(resumed), rollout_of(ref)
    assert got.answer == want.answer and got.metadata["tree"]["feedback"] == "judge"
    assert got.metadata["tree"]["aggregation"] == want.metadata["tree"]["aggregation"]
    assert got.rewards["correct"] == 1.0  # the known solution, checked by the task's own checker
    # the resumed graph's rollout holds every call, the ones before the interrupt included
    assert [t.metadata["purpose"] for t in got.trajectories[1:]] == [t.metadata["purpose"] for t in want.trajectories[1:]]
