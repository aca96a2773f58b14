"""Search-o1 as a LangGraph graph: interrupt after the first search, resume from a SQLite checkpoint
(new graph, new connection, new backend object), same trajectory as an uninterrupted run; streaming
gives one update per turn; the graph embeds in a parent graph; Episode state round-trips."""

import dataclasses
import json
import re

import pytest

pytest.importorskip("langgraph", reason="needs the graph extra: pip install 'agentic-infer[graph]'")
aio = pytest.importorskip("langgraph.checkpoint.sqlite.aio",
                          reason="needs langgraph-checkpoint-sqlite and aiosqlite (the graph extra)")

from langgraph.graph import END, START, StateGraph  # noqa: E402

from agentic_infer.engines.loop import Episode  # noqa: E402
from agentic_infer.engines.prompts import SEARCH_REPEAT_MESSAGE  # noqa: E402
from agentic_infer.engines.search_o1 import SearchO1  # noqa: E402
from agentic_infer.errors import ConfigError  # noqa: E402
from agentic_infer.integrations.langgraph import (  # noqa: E402
    START_NODE,
    TURN_NODE,
    engine_graph,
    search_o1_graph,
    trajectory_from_state,
)
from agentic_infer.testing import FakeLLM  # noqa: E402
from agentic_infer.tools.retrieval.base import Document  # noqa: E402
from agentic_infer.tools.retrieval.memory import InMemoryRetriever  # noqa: E402

Q, EQ = "<|begin_search_query|>", "<|end_search_query|>"
DOCS = [
    Document("d1", "Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."),
    Document("d2", "Paris", "Paris is the capital and most populous city of France."),
    Document("d3", "Berlin", "Berlin is the capital of Germany."),
    Document("d4", "Gustave Eiffel", "Gustave Eiffel's company designed and built the tower."),
]
# the third query repeats the first: the repeat message proves the executed-actions set survived the resume
QUERIES = ["Eiffel Tower location", "Paris country", "Eiffel Tower location", "Eiffel Tower builder"]
EXAMPLE = {"id": "q1", "question": "In which country is the tower built by Gustave Eiffel's company?"}
TURNS = len(QUERIES) + 1


def policy(prompt: str) -> str:
    """Deterministic: one query per turn, then an answer that depends on what was observed."""
    turn = prompt.split("<|im_start|>assistant")[-1].count(EQ)
    if turn < len(QUERIES):
        return f"Step {turn}: I need more facts. {Q}{QUERIES[turn]}{EQ}"
    return f"It is France (repeats: {prompt.count(SEARCH_REPEAT_MESSAGE)}). \\boxed{{France}}"


def rid_policy(prompt: str) -> str:
    query = re.search(r"\*\*Current Search Query:\*\*\n(.*)", prompt).group(1)
    return f"Reading... **Final Information** facts about {query}"


def backends():
    return FakeLLM(policy), FakeLLM(rid_policy)


def graph(llm, rid_llm, **kw):
    return search_o1_graph(llm, InMemoryRetriever(DOCS), rid_llm=rid_llm, k=2, **kw)


def signature(traj):
    steps = [(s.action, s.arguments, s.observation, s.metadata["status"]) for s in traj.steps]
    return [(s.kind, s.text) for s in traj.segments], steps, traj.answer, traj.finish_reason


async def reference():
    llm, rid = backends()
    return (await SearchO1(llm, InMemoryRetriever(DOCS), rid_llm=rid, k=2).run(EXAMPLE)).trajectory


async def test_graph_matches_the_engine():
    llm, rid = backends()
    state = await graph(llm, rid).ainvoke({"example": EXAMPLE})
    traj = trajectory_from_state(state)
    assert signature(traj) == signature(await reference())
    assert traj.answer == "France" and traj.finish_reason == "answer"
    assert [s.metadata["status"] for s in traj.steps] == ["executed", "executed", "repeat", "executed"]
    assert state["done"] and state["turns"] == TURNS and state["actions"] == 3


async def test_interrupt_after_first_search_and_resume_from_sqlite(tmp_path):
    db = str(tmp_path / "checkpoints.sqlite")
    config = {"configurable": {"thread_id": "run-1"}}

    llm, rid = backends()
    async with aio.AsyncSqliteSaver.from_conn_string(db) as saver:
        first = graph(llm, rid, checkpointer=saver, interrupt_after=[TURN_NODE])
        paused = await first.ainvoke({"example": EXAMPLE}, config)
        snapshot = await first.aget_state(config)
    assert snapshot.next == (TURN_NODE,)  # interrupted, one more turn to go
    assert not paused["done"] and paused["turns"] == 1 and paused["actions"] == 1
    [step] = trajectory_from_state(paused).steps
    assert step.action == "search" and step.arguments == {"query": QUERIES[0]}
    assert step.metadata["status"] == "executed"
    assert len(llm.prompts) == 1 and len(rid.prompts) == 1

    # a new process, in effect: new backends, new graph, new connection to the same file
    llm2, rid2 = backends()
    async with aio.AsyncSqliteSaver.from_conn_string(db) as saver:
        resumed = graph(llm2, rid2, checkpointer=saver)
        final = await resumed.ainvoke(None, config)
    traj = trajectory_from_state(final)
    assert signature(traj) == signature(await reference())
    assert traj.id == trajectory_from_state(paused).id  # the same episode, continued
    # the resumed run did not redo turn 1: its first prompt already holds the first search's result
    assert len(llm2.prompts) == TURNS - 1
    assert QUERIES[0] in llm2.prompts[0] and f"facts about {QUERIES[0]}" in llm2.prompts[0]
    assert len(rid2.prompts) == 2  # the two later executed searches (the repeat runs no RiD)
    assert traj.usage.llm_calls == TURNS + 3 and traj.usage.tool_calls == 3


async def test_resume_turn_by_turn_each_from_a_new_connection(tmp_path):
    db = str(tmp_path / "ckpt.sqlite")
    config = {"configurable": {"thread_id": "stepwise"}}
    payload = {"example": EXAMPLE}
    for _ in range(TURNS + 2):  # more calls than turns: a finished thread stays finished
        llm, rid = backends()
        async with aio.AsyncSqliteSaver.from_conn_string(db) as saver:
            g = graph(llm, rid, checkpointer=saver, interrupt_after=[TURN_NODE])
            state = await g.ainvoke(payload, config)
            payload = None
            assert len(llm.prompts) <= 1  # at most one turn per invocation
    assert state["done"]
    assert signature(trajectory_from_state(state)) == signature(await reference())


async def test_streaming_yields_one_update_per_turn():
    llm, rid = backends()
    updates = [u async for u in graph(llm, rid).astream({"example": EXAMPLE}, stream_mode="updates")]
    assert list(updates[0]) == [START_NODE]
    turns = [u[TURN_NODE] for u in updates[1:]]
    assert all(list(u) == [TURN_NODE] for u in updates[1:])
    assert [t["turns"] for t in turns] == list(range(1, TURNS + 1))
    assert [t["done"] for t in turns] == [False] * (TURNS - 1) + [True]
    assert [len(t["trajectory"]["steps"]) for t in turns] == [1, 2, 3, 4, 4]
    json.dumps(updates)  # every update is plain JSON


async def test_embeds_in_a_parent_graph():
    from typing import Any, TypedDict

    class Parent(TypedDict, total=False):
        example: dict[str, Any]
        trajectory: dict[str, Any]
        correct: bool

    def judge(state: Parent) -> dict:
        return {"correct": trajectory_from_state(state).answer == "France"}

    llm, rid = backends()
    parent = StateGraph(Parent)
    parent.add_node("agent", graph(llm, rid))
    parent.add_node("judge", judge)
    parent.add_edge(START, "agent")
    parent.add_edge("agent", "judge")
    parent.add_edge("judge", END)
    out = await parent.compile().ainvoke({"example": EXAMPLE})
    assert out["correct"] is True and set(out) == {"example", "trajectory", "correct"}


async def test_episode_state_round_trips_losslessly():
    llm, rid = backends()
    engine = SearchO1(llm, InMemoryRetriever(DOCS), rid_llm=rid, k=2)
    ep = engine.start(EXAMPLE)
    await engine.loop.step([ep])
    state = ep.to_state()
    json.dumps(state)  # storable by any checkpointer
    # `env` is no JSON: the engine that made the episode reattaches its env (agentic_infer/engines/loop.py)
    assert {f.name for f in dataclasses.fields(Episode)} - {"started", "env"} <= set(state)
    back = Episode.from_state(json.loads(json.dumps(state)))
    assert back.executed == ep.executed and isinstance(back.executed[0], tuple)
    assert back.trajectory.to_dict() == ep.trajectory.to_dict()
    assert (back.output, back.prompt, back.actions, back.turns, back.generated, back.done) == \
           (ep.output, ep.prompt, ep.actions, ep.turns, ep.generated, ep.done)
    back.trajectory.segments.clear()  # not aliased
    assert len(ep.trajectory.segments) == 3


async def test_bad_inputs_are_config_errors():
    llm, rid = backends()
    with pytest.raises(ConfigError, match="interrupt_after"):
        graph(llm, rid, interrupt_after=["generate"])
    with pytest.raises(ConfigError, match="needs a `loop`"):
        engine_graph(object())
    with pytest.raises(ConfigError, match="graph input must be"):
        await graph(llm, rid).ainvoke({"example": "just a string"})
    with pytest.raises(ConfigError, match="no 'trajectory'"):
        trajectory_from_state({"example": {}})


async def test_many_turns_do_not_hit_the_recursion_limit():
    queries = iter(range(10_000))  # a new query every turn: only the turn cap ends the episode
    llm = FakeLLM(lambda p: f"{Q}q{next(queries)}{EQ}")
    g = graph(llm, None, max_turns=40, max_searches=100, rid=False)
    assert g.config["recursion_limit"] == 45  # set explicitly: older LangGraph defaults to 25 super-steps
    state = await g.ainvoke({"example": EXAMPLE})
    traj = trajectory_from_state(state)
    assert traj.finish_reason == "max_turns" and state["turns"] == 40
