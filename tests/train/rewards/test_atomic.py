"""Atom-Searcher: atomic thoughts as the released model writes them (upper-case tags inside a pre-filled <think>),
the offline reasoning reward model against a real MuSiQue decomposition (expected scores worked out by hand from
the rules in train/rewards/atomic.py), an LLM judge as the RRM, and the dialect run end to end by the agent loop."""

from __future__ import annotations

import json

import pytest

from agentic_infer.engines.dialects import ATOM_SEARCHER
from agentic_infer.engines.judge import RubricJudge
from agentic_infer.engines.search_o1 import SearchO1
from agentic_infer.tasks import get_task
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.memory import InMemoryRetriever
from synth.demos.plans import gold_plan
from tests.conftest import shared_data
from train.rewards import (
    LLMRRM,
    OfflineRRM,
    atom_searcher_reward,
    atomic_thought_reward,
    atomic_thoughts,
    score_trajectory,
)


def call(query: str) -> str:
    return "<tool_call>" + json.dumps({"name": "web_search", "arguments": {"query": query}}) + "</tool_call>"


@pytest.fixture(scope="module")
def van_hook():
    """MuSiQue dev 2hop__574419_270105: Van Hook Township -> Mountrail County -> seat Stanley; its paragraphs."""
    ex = get_task("musique").load(shared_data("multihop/musique_ans_dev_150.jsonl"), limit=1)[0]
    plan, why = gold_plan(ex)
    assert why is None and [h.answer for h in plan.hops] == ["Mountrail County", "Stanley"]
    paras = {p["title"]: p["paragraph_text"] for p in ex["raw"]["paragraphs"]}
    return ex, plan, paras


TURNS = [  # what the model writes after the pre-filled <think> of each turn
    "<PLAN>First find the county of Van Hook Township, then its seat.</PLAN></think>\n" + call("Van Hook Township county"),
    "<VERIFICATION>Van Hook Township lies in Mountrail County.</VERIFICATION>"
    "<VERIFICATION>The seat is Stanley.</VERIFICATION></think>\n" + call("Minnesota territories"),
    "<REFLECTION>That search missed; look for the county seat instead.</REFLECTION></think>\n"
    + call("Mountrail County seat"),
    "<OBSERVATION>The courthouse of Mountrail County stands in Stanley.</OBSERVATION>"
    "<RISK_ANALYSIS>None left.</RISK_ANALYSIS></think>\n<answer>Stanley</answer>",
]
HITS = ["Van Hook Township, Mountrail County, North Dakota", "McCormack, Minnesota", "Mountrail County Courthouse"]


def completion(paras) -> str:
    """The turns with the real paragraphs as tool responses, spliced as the dialect splices them."""
    out = TURNS[0]
    for title, turn in zip(HITS, TURNS[1:]):
        out += ATOM_SEARCHER.observation(f"{title}\n{paras[title]}") + turn
    return out


def test_atoms_are_the_models_own_tags_any_case_never_inside_a_tool_response():
    text = ("<PLAN>a</PLAN><hypothesis_testing>b</hypothesis_testing></think>" + call("q1")
            + ATOM_SEARCHER.observation("<PLAN>not an atom: inside a document</PLAN>") + "<Reflection>c</Reflection>"
            "</think><answer><VERIFICATION>no atom in the answer</VERIFICATION></answer>")
    atoms = atomic_thoughts(text)
    assert [(a.tag, a.text) for a in atoms] == [("PLAN", "a"), ("HYPOTHESIS_TESTING", "b"), ("ACTION", "q1"),
                                                ("REFLECTION", "c")]
    assert all(text[a.start:].lower().startswith(f"<{a.tag.lower()}>") for a in atoms if a.tag != "ACTION")
    whole = atomic_thoughts(text, whole_think=True)  # the ablation: each think block is one atom
    assert [(a.tag, a.text) for a in whole] == [("THINK", "<PLAN>a</PLAN><hypothesis_testing>b</hypothesis_testing>"),
                                                ("ACTION", "q1"), ("THINK", "<Reflection>c</Reflection>")]


def test_offline_rrm_scores_each_atom_against_the_gold_hops(van_hook):
    _, plan, paras = van_hook
    atoms = OfflineRRM(plan).score(completion(paras))
    got = [(a.tag, a.score) for a in atoms]
    assert got == [("PLAN", 1.0),          # names hop 1's entity (Van Hook Township)
                   ("ACTION", 1.0),        # targets hop 1, the next open one
                   ("VERIFICATION", 1.0),  # Mountrail County, in the tool response before it
                   ("VERIFICATION", 0.0),  # Stanley: not retrieved yet
                   ("ACTION", 0.0),        # Minnesota: not hop 2 (Mountrail County capital)
                   ("REFLECTION", 1.0),    # after the search that resolved nothing
                   ("ACTION", 1.0),        # names Mountrail County, what hop 2 needs
                   ("OBSERVATION", 1.0),   # Stanley, now retrieved
                   ("RISK_ANALYSIS", None)]  # no offline rule: left for an LLM judge
    assert atomic_thought_reward(atoms) == pytest.approx(6 / 8)
    hit = TURNS[0] + ATOM_SEARCHER.observation(paras[HITS[0]]) + "<REFLECTION>Found it.</REFLECTION></think>"
    assert [(a.tag, a.score) for a in OfflineRRM(plan).score(hit)][-1] == ("REFLECTION", 0.0)  # nothing had missed
    whole = OfflineRRM(plan, whole_think=True).score(completion(paras))
    assert [(a.tag, a.score) for a in whole] == [("THINK", 0.5), ("ACTION", 1.0), ("THINK", 1.0), ("ACTION", 0.0),
                                                 ("THINK", 0.0), ("ACTION", 1.0), ("THINK", 0.5)]
    assert atomic_thought_reward(whole) == pytest.approx(4 / 7)
    # the schedule mixes ATR with the outcome: process first (λ = 0.5 at step 0), outcome only at the end
    assert atom_searcher_reward(1.0, 0.75, step=0, total_steps=10) == pytest.approx(0.875)
    assert atom_searcher_reward(1.0, 0.75, step=10, total_steps=10) == 1.0


async def test_llm_rrm_maps_the_judges_rating_onto_each_atom():
    judge_llm = FakeLLM(lambda p: "Grounded. Score: 10" if "Rate this one PLAN" in p else "Off. Score: 1")
    text = "<PLAN>find X</PLAN><RISK_ANALYSIS>none</RISK_ANALYSIS></think>" + call("X")
    atoms = await LLMRRM(RubricJudge(judge_llm)).score(text, question="Who is X?", gold=["Y"])
    assert [(a.tag, a.score) for a in atoms] == [("PLAN", 1.0), ("RISK_ANALYSIS", 0.0), ("ACTION", 0.0)]
    assert len(judge_llm.prompts) == 3 and "Question: Who is X?" in judge_llm.prompts[0]


async def test_atom_searcher_dialect_runs_in_the_agent_loop(van_hook):
    ex, plan, paras = van_hook
    docs = [Document(str(i), t, x) for i, (t, x) in enumerate(paras.items())]
    llm = FakeLLM([TURNS[0], TURNS[3]])
    engine = SearchO1(llm, InMemoryRetriever(docs), dialect="atom_searcher", k=1)
    traj = (await engine.run({"question": ex["question"]})).trajectory
    assert traj.answer == "Stanley" and traj.finish_reason == "answer"
    assert llm.prompts[0].endswith("<think>")  # pre-filled, not written by the model
    [step] = traj.steps  # web_search ran as our search tool
    assert step.action == "search" and step.arguments == {"query": "Van Hook Township county"}
    assert step.metadata["doc_ids"] == [next(d.id for d in docs if d.title == HITS[0])]
    obs = next(s for s in traj.segments if s.kind == "observation")
    assert obs.text.startswith("\n<tool_response>\n") and obs.text.endswith("</tool_response>\n<think>")
    atoms = OfflineRRM(plan).score(traj.completion_text)
    atr = score_trajectory(traj, atoms)
    assert [(a.tag, a.score) for a in atoms] == [("PLAN", 1.0), ("ACTION", 1.0), ("OBSERVATION", 1.0),
                                                 ("RISK_ANALYSIS", None)]
    assert atr == traj.rewards["atr"] == 1.0
    kept = [[a["tag"] for a in s.metadata.get("atoms", [])] for s in traj.segments if s.kind == "model"]
    assert kept == [["PLAN", "ACTION"], ["OBSERVATION", "RISK_ANALYSIS"]]
