"""Chain-of-Agents (AFM): its block grammar (ANCHORS.md's transition rules), its rewards worked out by hand, and the
dialect run by the agent loop over a real in-memory index (the loop's own splicing passes the grammar)."""

from __future__ import annotations

import json

import pytest

from agentic_infer.engines.dialects import check_grammar
from agentic_infer.engines.judge import EquivalenceJudge
from agentic_infer.engines.search_o1 import SearchO1
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.memory import InMemoryRetriever
from train.rewards import RewardInput, afm_answer_reward, afm_format, afm_web_reward, repeated_query

GOOD = ("<think>Two hops.</think>\n<plan>1. director of Dune 2. his birthplace</plan>\n"
        "<think>First the director.</think>\n<wiki_search>Dune film director</wiki_search>\n"
        "<observation>Dune was directed by Denis Villeneuve.</observation>\n"
        "<think>Nothing on the birthplace yet.</think>\n<reflection>Search the person, not the film.</reflection>\n"
        "<think>Search Villeneuve.</think>\n<wiki_search>Denis Villeneuve birthplace</wiki_search>\n"
        "<observation>Villeneuve was born in Gentilly, Quebec.</observation>\n"
        "<think>Done.</think>\n<answer>Gentilly|Quebec</answer>")


@pytest.mark.parametrize("text, why", [
    (GOOD, None),
    ("<plan>p</plan>", "<plan> after the start (allowed: think)"),
    ("<think>a</think><plan>p</plan><wiki_search>q</wiki_search>", "<wiki_search> after <plan> (allowed: think)"),
    ("<think>a</think><reflection>r</reflection><think>b</think><answer>x</answer>",
     "<answer> after <think> (allowed: plan, wiki_search)"),  # after a reflection: plan or search again
    ("<think>a</think><wiki_search>q</wiki_search><think>b</think>", "<think> after <wiki_search> (allowed: observation)"),
    ("<think>a</think><plan>p</plan>", "the end after <plan> (allowed: think)"),
    ("<think>a</think> so <answer>x</answer>", "text outside the blocks: 'so'"),
    ("<think>a<plan>p</plan></think><answer>x</answer>", "a block is unclosed, unopened or nested"),
])
def test_grammar_follows_afms_transition_rules(text, why):
    assert check_grammar("afm", text) == why
    assert afm_format(RewardInput(text)) == float(why is None)


def test_grammar_needs_a_dialect_with_one():
    with pytest.raises(ConfigError, match="has no grammar.*'afm'"):
        check_grammar("search_r1", "<search>q</search>")


@pytest.mark.parametrize("answer, reward", [("Gentilly|Quebec", 1.0), ("Quebec", 1.0), ("gentilly | the Quebec", 1.0),
                                            ("Gentilly|Montreal", 0.0), ("", 0.0), ("Gentilly|", 0.0)])
def test_every_part_of_the_answer_must_be_gold(answer, reward):
    text = GOOD.replace("Gentilly|Quebec", answer)
    assert afm_answer_reward(RewardInput(text, gold=["Gentilly", "Quebec", "Canada"])) == reward


def test_web_reward_is_format_judge_and_repeat_penalty():
    judge = EquivalenceJudge(FakeLLM(lambda p: json.dumps({"reason": "r", "equivalent": "Predicted answer: Gentilly" in p})))
    reward = afm_web_reward(judge)
    gold = ["Gentilly"]
    assert reward(RewardInput(GOOD, gold=gold, question="q")) == pytest.approx(0.1 + 0.9)
    loose = GOOD.replace("<think>Done.</think>\n", "")  # an answer straight after an observation
    assert reward(RewardInput(loose, gold=gold, question="q")) == pytest.approx(0.9)
    twice = GOOD.replace("Denis Villeneuve birthplace", "dune  FILM director")  # the same query, normalised
    assert repeated_query(RewardInput(twice)) and reward(RewardInput(twice, gold=gold, question="q")) == pytest.approx(0.5)
    wrong = GOOD.replace("Gentilly|Quebec", "Montreal")
    assert reward(RewardInput(wrong, gold=gold, question="q")) == pytest.approx(0.1)


async def test_afm_dialect_runs_in_the_agent_loop_and_its_output_is_grammatical():
    docs = [Document("d1", "Dune (2021 film)", "Dune is a 2021 film directed by Denis Villeneuve."),
            Document("d2", "Denis Villeneuve", "Denis Villeneuve was born in Gentilly, Quebec.")]
    llm = FakeLLM(["<think>Two hops.</think>\n<plan>director, then birthplace</plan>\n<think>Director first."
                   "</think>\n<wiki_search>Dune film director</wiki_search>",
                   "<think>Villeneuve.</think>\n<wiki_search>Denis Villeneuve born</wiki_search>",
                   "<think>Done.</think>\n<answer>Gentilly|Quebec</answer>"])
    engine = SearchO1(llm, InMemoryRetriever(docs), dialect="afm", k=1)
    traj = (await engine.run({"question": "Where was the director of Dune born?"})).trajectory
    assert traj.answer == "Gentilly|Quebec" and [s.arguments["query"] for s in traj.steps] == [
        "Dune film director", "Denis Villeneuve born"]
    assert [s.metadata["doc_ids"] for s in traj.steps] == [["d1"], ["d2"]]
    assert check_grammar("afm", traj.completion_text) is None, traj.completion_text
    inp = RewardInput(traj.completion_text, gold=["Gentilly", "Quebec"], trajectory=traj)
    assert afm_answer_reward(inp) == 1.0 and not repeated_query(inp)
